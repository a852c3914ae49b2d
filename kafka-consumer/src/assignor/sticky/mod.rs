//! The `sticky` and `cooperative-sticky` assignors (Java's `AbstractStickyAssignor` family).
//!
//! Both aim, in this order, for (1) a balanced assignment: partition counts differ by at most
//! one when every member has the same subscription, and otherwise no partition could move to a
//! member with two fewer; and (2) keeping as many partitions where they are as (1) allows.
//! They differ only in where they learn who owns what and in the cooperative adjustment.
//!
//! Shared steps ([`sticky_assign`]):
//! 1. Previous ownership per member comes from [`MemberData`] (user data for `sticky`, the
//!    subscription's owned partitions for `cooperative-sticky`). Claims on partitions of topics
//!    that no longer exist (or nobody subscribes to, or beyond the partition count) are dropped.
//!    A partition claimed by several members goes to the claimant with the highest generation;
//!    a tie at the highest generation means nobody owns it.
//! 2. If every member subscribes to the same topics, the quota algorithm of
//!    [`constrained`] runs; otherwise the general balancing algorithm of [`general`].
//!
//! Deterministic: wherever Java's result depends on hash-map iteration order we go by member id
//! (then topic and partition) order, so the same input always gives the same output.

mod constrained;
mod general;
mod user_data;

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;

pub use user_data::StickyAssignorUserData;

use super::{
    Assignor, ConsumerError, GroupAssignment, MemberSubscription, RebalanceProtocol,
    TopicPartition, check_input, java_cmp,
};

/// Java's `AbstractStickyAssignor.DEFAULT_GENERATION`: the generation of a member that does not
/// say.
const DEFAULT_GENERATION: i32 = -1;

/// What a member says it owned, and since which generation.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct MemberData {
    pub(crate) partitions: Vec<TopicPartition>,
    pub(crate) generation: Option<i32>,
}

/// The eager sticky assignor (`sticky`). Members carry their previous assignment and its
/// generation in the subscription's user data ([`StickyAssignorUserData`] v1), since under the
/// eager protocol they have given everything up before joining.
#[derive(Debug, Clone, Copy, Default)]
pub struct StickyAssignor;

impl StickyAssignor {
    /// Java's `StickyAssignor.memberData`: no or empty user data -> nothing owned, no
    /// generation; user data that does not parse -> nothing owned, generation -1.
    pub(crate) fn member_data(m: &MemberSubscription) -> MemberData {
        match &m.user_data {
            None => MemberData::default(),
            Some(b) if b.is_empty() => MemberData::default(),
            Some(b) => match StickyAssignorUserData::decode(b) {
                Ok(d) => MemberData {
                    partitions: d.previous_assignment,
                    generation: d.generation,
                },
                Err(e) => {
                    tracing::warn!(
                        member = %m.member_id,
                        error = %e,
                        "ignoring the sticky assignor user data of a member"
                    );
                    MemberData {
                        partitions: Vec::new(),
                        generation: Some(DEFAULT_GENERATION),
                    }
                }
            },
        }
    }
}

impl Assignor for StickyAssignor {
    fn name(&self) -> &'static str {
        "sticky"
    }

    fn supported_protocols(&self) -> &[RebalanceProtocol] {
        &[RebalanceProtocol::Eager]
    }

    /// The previous assignment and its generation (v1 layout); nothing before the member's
    /// first assignment, as Java does.
    fn subscription_user_data(
        &self,
        _topics: &[String],
        owned: &[TopicPartition],
        generation: i32,
    ) -> Option<Bytes> {
        if owned.is_empty() && generation < 0 {
            return None;
        }
        let data = StickyAssignorUserData {
            previous_assignment: owned.to_vec(),
            generation: Some(generation),
        };
        match data.encode() {
            Ok(b) => Some(b),
            Err(e) => {
                tracing::warn!(error = %e, "cannot encode the sticky assignor user data");
                None
            }
        }
    }

    fn assign(
        &self,
        partitions_per_topic: &BTreeMap<String, i32>,
        members: &[MemberSubscription],
    ) -> Result<GroupAssignment, ConsumerError> {
        let data: Vec<MemberData> = members.iter().map(Self::member_data).collect();
        Ok(sticky_assign(self.name(), partitions_per_topic, members, &data)?.assignment)
    }
}

/// The cooperative sticky assignor (`cooperative-sticky`; supports both protocols, prefers
/// cooperative). Ownership comes from the subscription's owned partitions, the generation from
/// the subscription (v2+) or else from the user data (a big-endian i32, Java's
/// `CooperativeStickyAssignor` user data).
///
/// A partition that the balanced assignment moves from one member to another is not given to
/// its new owner in this round: it is only taken away from the old one, which revokes it and
/// rejoins; the next rebalance assigns it. Under the eager protocol members own nothing when
/// they join, so this never holds anything back there.
#[derive(Debug, Clone, Copy, Default)]
pub struct CooperativeStickyAssignor;

impl CooperativeStickyAssignor {
    /// Java's `CooperativeStickyAssignor.memberData`, except that user data which is not
    /// exactly 4 bytes is tried as [`StickyAssignorUserData`] (what librdkafka before 2.x puts
    /// there with a v1 subscription) before giving up with generation -1; Java reads the first 4
    /// bytes, which for that layout is the topic count.
    pub(crate) fn member_data(m: &MemberSubscription) -> MemberData {
        let generation = match (m.generation_id, &m.user_data) {
            (Some(g), _) => Some(g),
            (None, None) => None,
            (None, Some(b)) => Some(
                <[u8; 4]>::try_from(b.as_ref())
                    .map(i32::from_be_bytes)
                    .ok()
                    .or_else(|| {
                        StickyAssignorUserData::decode(b)
                            .ok()
                            .and_then(|d| d.generation)
                    })
                    .unwrap_or(DEFAULT_GENERATION),
            ),
        };
        MemberData {
            partitions: m.owned_partitions.clone(),
            generation,
        }
    }
}

impl Assignor for CooperativeStickyAssignor {
    fn name(&self) -> &'static str {
        "cooperative-sticky"
    }

    fn supported_protocols(&self) -> &[RebalanceProtocol] {
        &[RebalanceProtocol::Cooperative, RebalanceProtocol::Eager]
    }

    /// The generation as a big-endian i32 (Java writes it even before the first assignment,
    /// as -1).
    fn subscription_user_data(
        &self,
        _topics: &[String],
        _owned: &[TopicPartition],
        generation: i32,
    ) -> Option<Bytes> {
        Some(Bytes::copy_from_slice(&generation.to_be_bytes()))
    }

    fn assign(
        &self,
        partitions_per_topic: &BTreeMap<String, i32>,
        members: &[MemberSubscription],
    ) -> Result<GroupAssignment, ConsumerError> {
        let data: Vec<MemberData> = members.iter().map(Self::member_data).collect();
        let StickyOutcome {
            mut assignment,
            contested,
        } = sticky_assign(self.name(), partitions_per_topic, members, &data)?;
        hold_back_moving_partitions(&mut assignment, members, &contested);
        Ok(assignment)
    }
}

/// The cooperative adjustment (Java's `adjustAssignment`): a partition assigned to a member
/// that does not own it, while another member does, is left out of this round; so is one that
/// several members claimed in the same, highest, generation. The owners are not assigned it
/// (it went elsewhere), so they revoke it and the next rebalance hands it over.
fn hold_back_moving_partitions(
    assignment: &mut GroupAssignment,
    members: &[MemberSubscription],
    contested: &BTreeSet<TopicPartition>,
) {
    let mut claimants: BTreeMap<&TopicPartition, BTreeSet<&str>> = BTreeMap::new();
    for m in members {
        for tp in &m.owned_partitions {
            claimants.entry(tp).or_default().insert(&m.member_id);
        }
    }
    for (member, list) in assignment.iter_mut() {
        list.retain(|tp| {
            let held_back = contested.contains(tp)
                || claimants
                    .get(tp)
                    .is_some_and(|c| !c.contains(member.as_str()));
            if held_back {
                tracing::debug!(%tp, %member, "partition held back until its owner revokes it");
            }
            !held_back
        });
    }
}

/// The sticky algorithm's result: the assignment, and the partitions nobody owns because
/// several members claimed them in the same highest generation.
pub(crate) struct StickyOutcome {
    pub(crate) assignment: GroupAssignment,
    pub(crate) contested: BTreeSet<TopicPartition>,
}

/// The sticky algorithm shared by both assignors; `data[i]` is what `members[i]` owned.
pub(crate) fn sticky_assign(
    assignor: &'static str,
    partitions_per_topic: &BTreeMap<String, i32>,
    members: &[MemberSubscription],
    data: &[MemberData],
) -> Result<StickyOutcome, ConsumerError> {
    check_input(partitions_per_topic, members)?;
    // Members by id (Java's tie-breaker in the sticky algorithm); index = position here.
    let mut order: Vec<usize> = (0..members.len()).collect();
    order.sort_by(|&a, &b| java_cmp(&members[a].member_id, &members[b].member_id));
    let subscriptions: Vec<BTreeSet<&str>> = order
        .iter()
        .map(|&i| members[i].topics.iter().map(String::as_str).collect())
        .collect();
    // Topics that exist, have partitions and somebody subscribes to.
    let topics: BTreeMap<&str, i32> = partitions_per_topic
        .iter()
        .filter(|(t, n)| **n > 0 && subscriptions.iter().any(|s| s.contains(t.as_str())))
        .map(|(t, n)| (t.as_str(), *n))
        .collect();
    let generations: Vec<i32> = order
        .iter()
        .map(|&i| {
            data.get(i)
                .and_then(|d| d.generation)
                .unwrap_or(DEFAULT_GENERATION)
        })
        .collect();
    let (owned, contested) = resolve_ownership(&topics, &order, data, &generations, members);

    let all_equal = subscriptions.windows(2).all(|w| w[0] == w[1]);
    let lists = if all_equal {
        constrained::assign(assignor, &topics, owned)?
    } else {
        let previous = previous_owners(&order, data);
        general::assign(&general::Input {
            topics: &topics,
            subscriptions: &subscriptions,
            owned,
            previous,
        })
    };

    let mut assignment = GroupAssignment::new();
    for (idx, mut list) in lists.into_iter().enumerate() {
        list.sort();
        if let Some(&i) = order.get(idx) {
            assignment.insert(members[i].member_id.clone(), list);
        }
    }
    Ok(StickyOutcome {
        assignment,
        contested,
    })
}

/// Per member (sorted index): the valid partitions it owns after settling conflicting
/// claims; and the partitions claimed by several members in the same highest generation.
fn resolve_ownership(
    topics: &BTreeMap<&str, i32>,
    order: &[usize],
    data: &[MemberData],
    generations: &[i32],
    members: &[MemberSubscription],
) -> (Vec<Vec<TopicPartition>>, BTreeSet<TopicPartition>) {
    let mut claims: BTreeMap<&TopicPartition, Vec<usize>> = BTreeMap::new();
    for (idx, &i) in order.iter().enumerate() {
        let Some(d) = data.get(i) else { continue };
        let mut mine: BTreeSet<&TopicPartition> = BTreeSet::new();
        for tp in &d.partitions {
            let exists = topics
                .get(&*tp.topic)
                .is_some_and(|&n| (0..n).contains(&tp.partition));
            if exists && mine.insert(tp) {
                claims.entry(tp).or_default().push(idx);
            }
        }
    }
    let mut owned = vec![Vec::new(); order.len()];
    let mut contested = BTreeSet::new();
    for (tp, claimants) in claims {
        let best = claimants
            .iter()
            .map(|&idx| generations[idx])
            .max()
            .unwrap_or(DEFAULT_GENERATION);
        let winners: Vec<usize> = claimants
            .iter()
            .copied()
            .filter(|&idx| generations[idx] == best)
            .collect();
        if claimants.len() > 1 {
            let names: Vec<&str> = claimants
                .iter()
                .map(|&idx| members[order[idx]].member_id.as_str())
                .collect();
            tracing::warn!(%tp, claimants = ?names, generation = best, "partition claimed by several members");
        }
        match winners.as_slice() {
            [one] => owned[*one].push(tp.clone()),
            _ => {
                contested.insert(tp.clone());
            }
        }
    }
    (owned, contested)
}

/// Java's `prevAssignment`: for members older than the newest generation in the group, what
/// they owned (kept per partition for the highest of those generations; members that give no
/// generation count as -1, and only when some member does give one). The general algorithm
/// prefers moving a partition back to that previous owner.
fn previous_owners(order: &[usize], data: &[MemberData]) -> BTreeMap<TopicPartition, usize> {
    let max_generation = order
        .iter()
        .filter_map(|&i| data.get(i).and_then(|d| d.generation))
        .fold(DEFAULT_GENERATION, i32::max);
    let mut previous: BTreeMap<TopicPartition, (usize, i32)> = BTreeMap::new();
    for (idx, &i) in order.iter().enumerate() {
        let Some(d) = data.get(i) else { continue };
        let generation = match d.generation {
            Some(g) if g < max_generation => g,
            None if max_generation > DEFAULT_GENERATION => DEFAULT_GENERATION,
            _ => continue,
        };
        for tp in &d.partitions {
            match previous.get(tp) {
                Some(&(_, g)) if g >= generation => {}
                _ => {
                    previous.insert(tp.clone(), (idx, generation));
                }
            }
        }
    }
    previous
        .into_iter()
        .map(|(tp, (idx, _))| (tp, idx))
        .collect()
}

#[cfg(test)]
mod tests;
