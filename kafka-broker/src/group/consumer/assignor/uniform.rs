//! The `uniform` assignor, Kafka's default server-side assignor (`UniformAssignor`): every
//! member gets about as many partitions as every other, and a partition stays with its current
//! owner unless balance needs it elsewhere.
//!
//! Two builders, picked by the group's subscription type as Kafka picks them:
//! - every member subscribes to the same topics (Kafka's `UniformHomogeneousAssignmentBuilder`):
//!   member counts differ by at most one, and the fewest partitions move. Each member keeps its
//!   current partitions up to its quota (`total / members`, plus one for `total % members` of
//!   them). The one-more quotas are handed out in member order as Kafka does since 4.1
//!   (KAFKA-18688): a member that holds more than the minimum takes one while any are left; a
//!   member that does not leaves it to a later member, unless every member left must take one.
//!   So a balanced assignment is kept whatever the member order, and the members that must lose
//!   partitions are exactly those above their quota. The partitions nobody keeps (never held,
//!   then revoked) are handed out in topic and partition order to the members below quota, in
//!   member order. Time and memory linear in partitions + members.
//! - subscriptions differ (Kafka's `UniformHeterogeneousAssignmentBuilder`): every member keeps
//!   all its current partitions of topics it still subscribes to; the partitions nobody holds go,
//!   topic by topic, to the topic's least loaded subscribers; then, for each topic with two or
//!   more subscribers, partitions move from its most loaded subscribers to its least loaded ones
//!   until their counts differ by at most one, repeating over the topics until a whole pass moves
//!   nothing (at most 16 passes, Kafka's limit). Topics are taken by partitions per subscriber,
//!   descending, then subscriber count, then topic id (compared as Java's `Uuid.compareTo` does:
//!   two signed 64-bit halves). With overlapping subscriptions the result is balanced per topic
//!   (no partition can go to another subscriber of its topic with two fewer partitions), not
//!   always across the group (Kafka's documented limit). Time about passes × (partitions ×
//!   log partitions + subscribers × log subscribers) per topic; no members × partitions loop.
//!
//! Racks are not used: Kafka's uniform assignor has not been rack-aware since 3.8.

use std::collections::{BTreeMap, HashMap};

use kafka_protocol::Uuid;

use super::{
    Assignor, AssignorError, GroupSpec, TopicDescriber, TopicPartitions, empty_assignment,
    is_homogeneous, partition_count,
};

/// The name members and `group.consumer.assignors` use for this assignor.
pub const UNIFORM_ASSIGNOR_NAME: &str = "uniform";

/// Kafka's class name for this assignor, accepted in `group.consumer.assignors`.
pub const KAFKA_CLASS_NAME: &str = "org.apache.kafka.coordinator.group.assignor.UniformAssignor";

/// Kafka's limit on the balancing passes over the topics of a heterogeneous group.
const MAX_BALANCE_PASSES: usize = 16;

/// No owner yet.
const NONE: usize = usize::MAX;

/// Kafka's `uniform` assignor: balanced, then sticky (see the module doc).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UniformAssignor;

impl Assignor for UniformAssignor {
    fn name(&self) -> &'static str {
        UNIFORM_ASSIGNOR_NAME
    }

    fn assign(
        &self,
        group: &GroupSpec,
        topics: &dyn TopicDescriber,
    ) -> Result<BTreeMap<String, TopicPartitions>, AssignorError> {
        if group.members.is_empty() {
            return Ok(BTreeMap::new());
        }
        if is_homogeneous(group) {
            homogeneous(group, topics)
        } else {
            Heterogeneous::new(group, topics)?.build()
        }
    }
}

/// One topic as the builders see it.
struct Topic {
    id: Uuid,
    count: usize,
}

/// Turns per-topic owner tables into every member's assignment.
fn collect(
    group: &GroupSpec,
    topics: &[Topic],
    owners: &[Vec<usize>],
) -> BTreeMap<String, TopicPartitions> {
    let mut per_member: Vec<TopicPartitions> = vec![TopicPartitions::new(); group.members.len()];
    for (topic, owners) in topics.iter().zip(owners) {
        for (partition, &owner) in owners.iter().enumerate() {
            let (Some(assignment), Ok(partition)) =
                (per_member.get_mut(owner), i32::try_from(partition))
            else {
                continue;
            };
            assignment.entry(topic.id).or_default().insert(partition);
        }
    }
    group.members.keys().cloned().zip(per_member).collect()
}

/// The partitions of `member`'s current assignment that it may keep: topics in `topic_index`,
/// partitions in range and not already claimed (by an earlier member), in topic id then
/// partition order. Claimed partitions are marked in `owners` with `member_index`.
fn claim_current(
    current: &TopicPartitions,
    member_index: usize,
    topic_index: &HashMap<Uuid, usize>,
    subscribed: impl Fn(&Uuid) -> bool,
    owners: &mut [Vec<usize>],
    mut claimed: impl FnMut(usize, usize),
) {
    for (topic, partitions) in current {
        if !subscribed(topic) {
            continue;
        }
        let Some(&t) = topic_index.get(topic) else {
            continue;
        };
        let Some(topic_owners) = owners.get_mut(t) else {
            continue;
        };
        for &p in partitions {
            let Ok(p) = usize::try_from(p) else {
                continue;
            };
            if let Some(owner) = topic_owners.get_mut(p)
                && *owner == NONE
            {
                *owner = member_index;
                claimed(t, p);
            }
        }
    }
}

/// The homogeneous builder (every member subscribes to the same topics).
fn homogeneous(
    group: &GroupSpec,
    describer: &dyn TopicDescriber,
) -> Result<BTreeMap<String, TopicPartitions>, AssignorError> {
    let Some((first_id, first)) = group.members.iter().next() else {
        return Ok(BTreeMap::new());
    };
    let subscribed = &first.subscription.subscribed_topic_ids;
    if subscribed.is_empty() {
        return Ok(empty_assignment(group));
    }
    let mut topics = Vec::with_capacity(subscribed.len());
    let mut topic_index = HashMap::with_capacity(subscribed.len());
    let mut total: usize = 0;
    for &id in subscribed {
        let count = partition_count(UNIFORM_ASSIGNOR_NAME, describer, first_id, id)?;
        total = total.saturating_add(count);
        topic_index.insert(id, topics.len());
        topics.push(Topic { id, count });
    }
    let mut owners: Vec<Vec<usize>> = topics.iter().map(|t| vec![NONE; t.count]).collect();

    // Each member's partitions it may keep, in topic then partition order.
    let member_count = group.members.len();
    let mut kept: Vec<Vec<(usize, usize)>> = Vec::with_capacity(member_count);
    for (i, member) in group.members.values().enumerate() {
        let mut mine = Vec::new();
        claim_current(
            &member.current,
            i,
            &topic_index,
            |t| subscribed.contains(t),
            &mut owners,
            |t, p| mine.push((t, p)),
        );
        kept.push(mine);
    }

    // Partitions nobody holds, in topic then partition order; revoked ones follow.
    let mut unassigned: Vec<(usize, usize)> = Vec::new();
    for (t, topic_owners) in owners.iter().enumerate() {
        unassigned.extend(
            topic_owners
                .iter()
                .enumerate()
                .filter(|&(_, &o)| o == NONE)
                .map(|(p, _)| (t, p)),
        );
    }

    // Quotas (Kafka 4.1): a member may take one of the `extra` slots; one that would not fill
    // it with its own partitions leaves it to a later member, unless every member left must
    // take one.
    let min_quota = total / member_count;
    let mut extra = total % member_count;
    let mut unfilled: Vec<(usize, usize)> = Vec::new();
    for (i, mine) in kept.iter_mut().enumerate() {
        let mut quota = min_quota;
        let mut takes_extra = false;
        if extra > 0 {
            quota += 1;
            takes_extra = true;
        }
        let mut remaining = quota.saturating_sub(mine.len());
        if mine.len() > quota {
            for &(t, p) in mine.get(quota..).unwrap_or_default() {
                if let Some(owner) = owners.get_mut(t).and_then(|o| o.get_mut(p)) {
                    *owner = NONE;
                }
                unassigned.push((t, p));
            }
            mine.truncate(quota);
        }
        if remaining > 0 && takes_extra && member_count - i > extra {
            remaining -= 1;
            takes_extra = false;
        }
        if remaining > 0 {
            unfilled.push((i, remaining));
        }
        if takes_extra {
            extra -= 1;
        }
    }

    let mut next = unassigned.iter();
    for (member, remaining) in unfilled {
        for &(t, p) in next.by_ref().take(remaining) {
            if let Some(owner) = owners.get_mut(t).and_then(|o| o.get_mut(p)) {
                *owner = member;
            }
        }
    }
    if next.next().is_some() {
        return Err(AssignorError::Failed {
            assignor: UNIFORM_ASSIGNOR_NAME,
            reason: "partitions were left unassigned".to_owned(),
        });
    }
    Ok(collect(group, &topics, &owners))
}

/// The heterogeneous builder's state: members by index (member id order), topics by index.
struct Heterogeneous<'a> {
    group: &'a GroupSpec,
    topics: Vec<Topic>,
    /// Each topic's subscribers, ascending member index.
    subscribers: Vec<Vec<usize>>,
    /// Each topic's partition owners (member index, or `NONE`).
    owners: Vec<Vec<usize>>,
    /// Each member's partition count in the target assignment being built.
    sizes: Vec<usize>,
}

impl<'a> Heterogeneous<'a> {
    fn new(group: &'a GroupSpec, describer: &dyn TopicDescriber) -> Result<Self, AssignorError> {
        let mut topic_index: BTreeMap<Uuid, usize> = BTreeMap::new();
        let mut topics = Vec::new();
        let mut subscribers: Vec<Vec<usize>> = Vec::new();
        for (i, (member_id, member)) in group.members.iter().enumerate() {
            for &id in &member.subscription.subscribed_topic_ids {
                let t = match topic_index.get(&id) {
                    Some(&t) => t,
                    None => {
                        let count =
                            partition_count(UNIFORM_ASSIGNOR_NAME, describer, member_id, id)?;
                        topic_index.insert(id, topics.len());
                        topics.push(Topic { id, count });
                        subscribers.push(Vec::new());
                        topics.len() - 1
                    }
                };
                if let Some(s) = subscribers.get_mut(t) {
                    s.push(i);
                }
            }
        }
        let owners = topics.iter().map(|t| vec![NONE; t.count]).collect();
        Ok(Self {
            group,
            topics,
            subscribers,
            owners,
            sizes: vec![0; group.members.len()],
        })
    }

    fn build(mut self) -> Result<BTreeMap<String, TopicPartitions>, AssignorError> {
        if self.topics.is_empty() {
            return Ok(empty_assignment(self.group));
        }
        self.keep_current();
        self.assign_unassigned();
        self.balance();
        if self.owners.iter().flatten().any(|&o| o == NONE) {
            return Err(AssignorError::Failed {
                assignor: UNIFORM_ASSIGNOR_NAME,
                reason: "partitions were left unassigned".to_owned(),
            });
        }
        Ok(collect(self.group, &self.topics, &self.owners))
    }

    /// Every member keeps its current partitions of the topics it still subscribes to.
    fn keep_current(&mut self) {
        let topic_index: HashMap<Uuid, usize> = self
            .topics
            .iter()
            .enumerate()
            .map(|(t, topic)| (topic.id, t))
            .collect();
        for (i, member) in self.group.members.values().enumerate() {
            let subscribed = &member.subscription.subscribed_topic_ids;
            let mut claimed = 0;
            claim_current(
                &member.current,
                i,
                &topic_index,
                |t| subscribed.contains(t),
                &mut self.owners,
                |_, _| claimed += 1,
            );
            if let Some(size) = self.sizes.get_mut(i) {
                *size += claimed;
            }
        }
    }

    /// Topic indices in Kafka's order: partitions per subscriber descending, then subscriber
    /// count ascending, then topic id ascending.
    fn sorted_topics(&self, mut indices: Vec<usize>) -> Vec<usize> {
        let key = |t: usize| {
            let count = self.topics.get(t).map_or(0, |x| x.count) as u128;
            let subs = self.subscribers.get(t).map_or(0, Vec::len) as u128;
            let id = self.topics.get(t).map(|x| java_order(x.id));
            (count, subs, id)
        };
        indices.sort_by(|&a, &b| {
            let (ca, sa, ia) = key(a);
            let (cb, sb, ib) = key(b);
            // ca / sa > cb / sb first, without division.
            (cb * sa)
                .cmp(&(ca * sb))
                .then(sa.cmp(&sb))
                .then(ia.cmp(&ib))
        });
        indices
    }

    fn move_partition(&mut self, t: usize, p: usize, to: usize) {
        let Some(owner) = self.owners.get_mut(t).and_then(|o| o.get_mut(p)) else {
            return;
        };
        if let Some(size) = self.sizes.get_mut(*owner) {
            *size -= 1;
        }
        *owner = to;
        if let Some(size) = self.sizes.get_mut(to) {
            *size += 1;
        }
    }

    /// The partitions nobody holds go, topic by topic, to the topic's least loaded subscribers.
    fn assign_unassigned(&mut self) {
        let with_unassigned: Vec<usize> = (0..self.topics.len())
            .filter(|&t| self.owners.get(t).is_some_and(|o| o.contains(&NONE)))
            .collect();
        let mut balancer = Balancer::default();
        for t in self.sorted_topics(with_unassigned) {
            let subscribers = self.subscribers.get(t).cloned().unwrap_or_default();
            if subscribers.is_empty() {
                continue;
            }
            balancer.init(&subscribers, &self.sizes);
            let free: Vec<usize> = self.owners.get(t).map_or_else(Vec::new, |o| {
                o.iter()
                    .enumerate()
                    .filter(|&(_, &x)| x == NONE)
                    .map(|(p, _)| p)
                    .collect()
            });
            for p in free {
                let Some(m) = balancer.next_least_loaded(&self.sizes) else {
                    break;
                };
                self.move_partition(t, p, m);
            }
        }
    }

    /// Kafka's balancing passes over the topics with two or more subscribers.
    fn balance(&mut self) {
        let movable: Vec<usize> = (0..self.topics.len())
            .filter(|&t| self.subscribers.get(t).is_some_and(|s| s.len() >= 2))
            .collect();
        if movable.is_empty() {
            return;
        }
        let sorted = self.sorted_topics(movable);
        let mut balancer = Balancer::default();
        let mut scratch = Scratch::default();
        let mut last_moved: Option<usize> = None;
        for _ in 0..MAX_BALANCE_PASSES {
            for (index, &t) in sorted.iter().enumerate() {
                if last_moved == Some(index) {
                    // A whole pass since the last move: nothing more to do.
                    return;
                }
                let moved = self.balance_topic(t, &mut balancer, &mut scratch);
                if moved > 0 || last_moved.is_none() {
                    last_moved = Some(index);
                }
            }
        }
    }

    /// Moves partitions of topic `t` from its most loaded subscribers to its least loaded ones
    /// until their counts differ by at most one; returns how many moved.
    fn balance_topic(&mut self, t: usize, balancer: &mut Balancer, scratch: &mut Scratch) -> usize {
        let Some(subscribers) = self.subscribers.get(t) else {
            return 0;
        };
        if balancer.init(subscribers, &self.sizes) <= 1 {
            return 0;
        }
        let Some(owners) = self.owners.get(t) else {
            return 0;
        };
        // The topic's partitions grouped by owner, so that each owner's are a range.
        scratch.partitions.clear();
        scratch.partitions.extend(0..owners.len());
        scratch
            .partitions
            .sort_by_key(|&p| (owners.get(p).copied().unwrap_or(NONE), p));
        scratch.ranges.clear();
        for (i, &p) in scratch.partitions.iter().enumerate() {
            let owner = owners.get(p).copied().unwrap_or(NONE);
            scratch.ranges.entry(owner).or_insert((i, i)).1 = i + 1;
        }

        let mut moved = 0;
        while !balancer.is_balanced() {
            // The next most loaded subscriber that still has a partition of this topic.
            let mut giver = None;
            while let Some(m) = balancer.next_most_loaded(&self.sizes) {
                match scratch.ranges.get(&m) {
                    Some(&(start, end)) if end > start => {
                        giver = Some(m);
                        break;
                    }
                    _ => balancer.exclude_most_loaded(),
                }
            }
            let Some(giver) = giver else {
                break;
            };
            let Some(range) = scratch.ranges.get_mut(&giver) else {
                break;
            };
            range.1 -= 1;
            let Some(&p) = scratch.partitions.get(range.1) else {
                break;
            };
            let Some(taker) = balancer.next_least_loaded(&self.sizes) else {
                break;
            };
            if balancer.is_balanced() {
                break;
            }
            self.move_partition(t, p, taker);
            moved += 1;
        }
        moved
    }
}

/// A topic id as Java's `Uuid.compareTo` orders it: most then least significant 64 bits, each
/// signed.
fn java_order(id: Uuid) -> (i64, i64) {
    let [
        a0,
        a1,
        a2,
        a3,
        a4,
        a5,
        a6,
        a7,
        b0,
        b1,
        b2,
        b3,
        b4,
        b5,
        b6,
        b7,
    ] = id.0;
    (
        i64::from_be_bytes([a0, a1, a2, a3, a4, a5, a6, a7]),
        i64::from_be_bytes([b0, b1, b2, b3, b4, b5, b6, b7]),
    )
}

/// Buffers reused across [`Heterogeneous::balance_topic`] calls.
#[derive(Default)]
struct Scratch {
    partitions: Vec<usize>,
    /// Each owner's range in `partitions` (start, end exclusive).
    ranges: HashMap<usize, (usize, usize)>,
}

/// Kafka's `MemberAssignmentBalancer`: a topic's subscribers sorted by partition count, with a
/// range of least loaded members that grows rightwards as they are given partitions and a range
/// of most loaded members that grows leftwards as partitions are taken from them. The counts
/// themselves live in the builder's `sizes`, which moves update.
#[derive(Debug, Default)]
struct Balancer {
    /// The members, by (count, index) ascending at `init`.
    sorted: Vec<usize>,
    /// `sorted[..least_end]` is the least loaded range.
    least_end: usize,
    /// The count of the least loaded range before its members get the next partition.
    least_level: i64,
    /// The position in `sorted` of the next member to give a partition to.
    next_least: usize,
    /// `sorted[most_start..most_end]` is the most loaded range (members with nothing left to
    /// give are swapped past `most_end`).
    most_start: usize,
    most_end: usize,
    /// The count of the most loaded range before the next partition is taken from them.
    most_level: i64,
    /// The position in `sorted` of the next member to take a partition from, plus one (zero:
    /// none left).
    next_most: usize,
}

fn level(sizes: &[usize], member: Option<&usize>) -> i64 {
    member
        .and_then(|&m| sizes.get(m))
        .map_or(0, |&s| i64::try_from(s).unwrap_or(i64::MAX))
}

impl Balancer {
    /// Resets the balancer for `members`; returns the difference between the most and least
    /// loaded member's counts.
    fn init(&mut self, members: &[usize], sizes: &[usize]) -> i64 {
        self.sorted.clear();
        self.sorted.extend_from_slice(members);
        self.sorted
            .sort_by_key(|&m| (sizes.get(m).copied().unwrap_or(0), m));
        let min = level(sizes, self.sorted.first());
        let max = level(sizes, self.sorted.last());
        self.least_end = 0;
        self.least_level = min - 1;
        self.next_least = 0;
        self.most_start = self.sorted.len();
        self.most_end = self.sorted.len();
        self.most_level = max + 1;
        self.next_most = self.sorted.len();
        max - min
    }

    /// The member to give the next partition to (it is assumed to get it).
    fn next_least_loaded(&mut self, sizes: &[usize]) -> Option<usize> {
        if self.next_least >= self.least_end {
            // Everyone in the range got one: raise its level and take in the members at it.
            self.least_level += 1;
            while self.least_end < self.sorted.len()
                && level(sizes, self.sorted.get(self.least_end)) == self.least_level
            {
                self.least_end += 1;
            }
            self.next_least = 0;
        }
        let member = self.sorted.get(self.next_least).copied();
        self.next_least += 1;
        member
    }

    /// The member to take the next partition from (it is assumed to lose it), `None` when no
    /// member is left.
    fn next_most_loaded(&mut self, sizes: &[usize]) -> Option<usize> {
        if self.next_most <= self.most_start {
            if self.most_end <= self.most_start && self.most_start > 0 {
                // The range was emptied by exclusions: restart from the next member down.
                self.most_level = level(sizes, self.sorted.get(self.most_start - 1));
            } else {
                self.most_level -= 1;
            }
            while self.most_start > 0
                && level(sizes, self.sorted.get(self.most_start - 1)) == self.most_level
            {
                self.most_start -= 1;
            }
            self.next_most = self.most_end;
        }
        if self.next_most == 0 {
            return None;
        }
        self.next_most -= 1;
        self.sorted.get(self.next_most).copied()
    }

    /// Drops the member last returned by [`Self::next_most_loaded`] from the most loaded
    /// range: it has no partition of the topic left to give.
    fn exclude_most_loaded(&mut self) {
        if self.most_end == 0 {
            return;
        }
        self.sorted.swap(self.next_most, self.most_end - 1);
        self.most_end -= 1;
    }

    /// Whether the two ranges' counts differ by at most one.
    fn is_balanced(&self) -> bool {
        self.most_level - self.least_level <= 1
    }
}
