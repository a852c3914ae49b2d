//! Partition assignors (range, roundrobin, sticky, cooperative-sticky).
//!
//! The group leader runs one of these over every member's subscription and sends each member
//! its share. They follow the Java client's assignors (same protocol names, same results for
//! range and roundrobin, the same sticky algorithm and user-data formats), so a group can mix
//! our consumers with Java, librdkafka and kafka-python ones whoever is leader.
//!
//! - [`RangeAssignor`] (`range`): per topic, partitions in order split into contiguous ranges
//!   over the members that subscribe to it; the first members get one extra.
//! - [`RoundRobinAssignor`] (`roundrobin`): every topic-partition in (topic, partition) order
//!   dealt to the members in turn, skipping members not subscribed to its topic.
//! - [`StickyAssignor`] (`sticky`, eager): balanced, and keeps as many previously owned
//!   partitions as it can; ownership travels in the subscription's user data.
//! - [`CooperativeStickyAssignor`] (`cooperative-sticky`): the same algorithm on the
//!   subscription's owned partitions, and, for the cooperative protocol, a partition that moves
//!   between members is first only revoked (the next rebalance gives it to its new owner).
//!
//! Members are ordered as Java orders them: static members (with a `group.instance.id`) first,
//! by instance id, then dynamic members by member id, comparing strings as Java does (UTF-16
//! code units).
//!
//! Wire formats (the JoinGroup member metadata, the SyncGroup assignment, the sticky assignors'
//! user data) are in [`protocol`].
//!
//! Not done: rack-aware assignment (KIP-881). Java uses it only when consumers and partition
//! replicas both carry racks; [`Assignor::assign`] gets partition counts without replica racks,
//! so every assignor here behaves as Java does without rack information.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

use bytes::Bytes;

pub mod protocol;
mod range;
mod round_robin;
mod sticky;

use crate::error::ConsumerError;
pub use crate::types::TopicPartition;
pub use protocol::{
    ASSIGNMENT_VERSION, ConsumerAssignment, ConsumerSubscription, SUBSCRIPTION_VERSION,
};
pub use range::RangeAssignor;
pub use round_robin::RoundRobinAssignor;
pub use sticky::{CooperativeStickyAssignor, StickyAssignor, StickyAssignorUserData};

/// How a group rebalances (KIP-429). Ordered as Java numbers them: `Eager` (0) <
/// `Cooperative` (1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RebalanceProtocol {
    /// Every member gives up all its partitions before rejoining.
    Eager,
    /// Members keep their partitions across a rebalance and give up only those that move.
    Cooperative,
}

impl RebalanceProtocol {
    /// Java's `RebalanceProtocol.id()`.
    pub fn id(self) -> u8 {
        match self {
            Self::Eager => 0,
            Self::Cooperative => 1,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Eager => "EAGER",
            Self::Cooperative => "COOPERATIVE",
        }
    }
}

impl fmt::Display for RebalanceProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One member of the group as the leader sees it in the JoinGroup response: its ids and its
/// decoded subscription (see [`MemberSubscription::from_metadata`]).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MemberSubscription {
    pub member_id: String,
    /// `group.instance.id` of a static member.
    pub group_instance_id: Option<String>,
    /// Subscribed topics.
    pub topics: Vec<String>,
    /// The assignor's own data (the sticky assignors' previous assignment and generation).
    pub user_data: Option<Bytes>,
    /// Partitions the member owns now (subscription v1+; empty under the eager protocol, where
    /// members give up everything before joining).
    pub owned_partitions: Vec<TopicPartition>,
    /// The generation in which the member got `owned_partitions` (subscription v2+; `None`
    /// when unknown, which the wire carries as -1).
    pub generation_id: Option<i32>,
    /// `client.rack` (subscription v3+).
    pub rack_id: Option<String>,
}

impl MemberSubscription {
    /// A dynamic member subscribed to `topics`, owning nothing.
    pub fn new(member_id: impl Into<String>, topics: &[&str]) -> Self {
        Self {
            member_id: member_id.into(),
            topics: topics.iter().map(|t| (*t).to_owned()).collect(),
            ..Self::default()
        }
    }

    /// A member from its ids and a decoded subscription.
    pub fn from_subscription(
        member_id: impl Into<String>,
        group_instance_id: Option<String>,
        s: ConsumerSubscription,
    ) -> Self {
        Self {
            member_id: member_id.into(),
            group_instance_id,
            topics: s.topics,
            user_data: s.user_data,
            owned_partitions: s.owned_partitions,
            generation_id: s.generation_id,
            rack_id: s.rack_id,
        }
    }

    /// A member from a JoinGroup response entry: member id, group instance id and the
    /// protocol metadata bytes (a versioned `ConsumerProtocolSubscription`).
    pub fn from_metadata(
        member_id: impl Into<String>,
        group_instance_id: Option<String>,
        metadata: &Bytes,
    ) -> Result<Self, ConsumerError> {
        let (_version, s) = ConsumerSubscription::decode(metadata)?;
        Ok(Self::from_subscription(member_id, group_instance_id, s))
    }
}

/// The leader's result: member id -> the partitions it gets (sorted). Every member passed to
/// [`Assignor::assign`] has an entry, possibly empty.
pub type GroupAssignment = BTreeMap<String, Vec<TopicPartition>>;

/// A partition assignment strategy, named in the JoinGroup protocols.
pub trait Assignor: Send + Sync + fmt::Debug {
    /// The protocol name in JoinGroup (`range`, `roundrobin`, `sticky`, `cooperative-sticky`).
    fn name(&self) -> &'static str;

    /// The rebalance protocols this assignor can work under, in no particular order.
    fn supported_protocols(&self) -> &[RebalanceProtocol];

    /// The user data this member puts in its subscription: `topics` it subscribes to, `owned`
    /// the partitions of its last assignment and `generation` the generation of that
    /// assignment (-1 before the first).
    fn subscription_user_data(
        &self,
        topics: &[String],
        owned: &[TopicPartition],
        generation: i32,
    ) -> Option<Bytes> {
        let _ = (topics, owned, generation);
        None
    }

    /// Assigns the partitions of `partitions_per_topic` (topic -> partition count, from
    /// metadata; topics missing from it are not assigned) to `members`.
    fn assign(
        &self,
        partitions_per_topic: &BTreeMap<String, i32>,
        members: &[MemberSubscription],
    ) -> Result<GroupAssignment, ConsumerError>;
}

/// Java's class names of the built-in assignors, accepted by [`by_name`].
const JAVA_PACKAGE: &str = "org.apache.kafka.clients.consumer.";

/// The built-in assignor with this protocol name (`range`, `roundrobin`, `sticky`,
/// `cooperative-sticky`) or Java class name (`org.apache.kafka.clients.consumer.RangeAssignor`
/// and so on, as `partition.assignment.strategy` lists them).
pub fn by_name(name: &str) -> Option<Arc<dyn Assignor>> {
    let name = name.trim();
    let short = name.strip_prefix(JAVA_PACKAGE).map(|class| match class {
        "RangeAssignor" => "range",
        "RoundRobinAssignor" => "roundrobin",
        "StickyAssignor" => "sticky",
        "CooperativeStickyAssignor" => "cooperative-sticky",
        _ => "",
    });
    match short.unwrap_or(name) {
        "range" => Some(Arc::new(RangeAssignor)),
        "roundrobin" => Some(Arc::new(RoundRobinAssignor)),
        "sticky" => Some(Arc::new(StickyAssignor)),
        "cooperative-sticky" => Some(Arc::new(CooperativeStickyAssignor)),
        _ => None,
    }
}

/// The protocol a consumer with these assignors uses, as Java chooses it: the highest one every
/// assignor supports. `None` when they have none in common (Java refuses such a config).
pub fn common_protocol(assignors: &[Arc<dyn Assignor>]) -> Option<RebalanceProtocol> {
    let (first, rest) = assignors.split_first()?;
    first
        .supported_protocols()
        .iter()
        .copied()
        .filter(|p| rest.iter().all(|a| a.supported_protocols().contains(p)))
        .max()
}

/// Java's check of an assignment under the cooperative protocol (`ConsumerCoordinator`, run
/// for every assignor but cooperative-sticky): no partition may go to a member while another
/// member still owns it; it must first be revoked.
pub fn validate_cooperative_assignment(
    members: &[MemberSubscription],
    assignment: &GroupAssignment,
) -> Result<(), ConsumerError> {
    let mut added = BTreeSet::new();
    let mut revoked = BTreeSet::new();
    for m in members {
        let owned: BTreeSet<&TopicPartition> = m.owned_partitions.iter().collect();
        let assigned: BTreeSet<&TopicPartition> = assignment
            .get(&m.member_id)
            .map(|v| v.iter().collect())
            .unwrap_or_default();
        added.extend(assigned.difference(&owned).copied());
        revoked.extend(owned.difference(&assigned).copied());
    }
    let moved: Vec<TopicPartition> = added
        .intersection(&revoked)
        .map(|tp| (*tp).clone())
        .collect();
    if moved.is_empty() {
        Ok(())
    } else {
        Err(ConsumerError::CooperativeViolation { partitions: moved })
    }
}

/// Compares strings as Java's `String.compareTo` does: by UTF-16 code units. (It differs from
/// Rust's byte order only between characters above U+FFFF and those in U+E000..=U+FFFF.)
pub(crate) fn java_cmp(a: &str, b: &str) -> Ordering {
    a.encode_utf16().cmp(b.encode_utf16())
}

/// Java's `MemberInfo` order: members with a group instance id first, by instance id; then the
/// others by member id. (Equal instance ids, which the coordinator does not allow, fall back
/// to the member id so the order is total.)
pub(crate) fn member_cmp(a: &MemberSubscription, b: &MemberSubscription) -> Ordering {
    match (&a.group_instance_id, &b.group_instance_id) {
        (Some(x), Some(y)) => java_cmp(x, y).then_with(|| java_cmp(&a.member_id, &b.member_id)),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => java_cmp(&a.member_id, &b.member_id),
    }
}

/// `members` in [`member_cmp`] order.
pub(crate) fn members_in_java_order(members: &[MemberSubscription]) -> Vec<&MemberSubscription> {
    let mut v: Vec<&MemberSubscription> = members.iter().collect();
    v.sort_by(|a, b| member_cmp(a, b));
    v
}

/// Refuses what no metadata or JoinGroup response can carry: a member listed twice or a
/// negative partition count.
pub(crate) fn check_input(
    partitions_per_topic: &BTreeMap<String, i32>,
    members: &[MemberSubscription],
) -> Result<(), ConsumerError> {
    if let Some((topic, &count)) = partitions_per_topic.iter().find(|(_, n)| **n < 0) {
        return Err(ConsumerError::InvalidPartitionCount {
            topic: topic.clone(),
            count,
        });
    }
    let mut seen = BTreeSet::new();
    for m in members {
        if !seen.insert(m.member_id.as_str()) {
            return Err(ConsumerError::DuplicateMember {
                member_id: m.member_id.clone(),
            });
        }
    }
    Ok(())
}

/// Every member with an empty list.
pub(crate) fn empty_assignment(members: &[MemberSubscription]) -> GroupAssignment {
    members
        .iter()
        .map(|m| (m.member_id.clone(), Vec::new()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn static_member(id: &str, instance: &str) -> MemberSubscription {
        MemberSubscription {
            group_instance_id: Some(instance.to_owned()),
            ..MemberSubscription::new(id, &["t"])
        }
    }

    #[test]
    fn by_name_knows_protocol_and_java_class_names() {
        for (name, want) in [
            ("range", "range"),
            ("roundrobin", "roundrobin"),
            ("sticky", "sticky"),
            ("cooperative-sticky", "cooperative-sticky"),
            ("org.apache.kafka.clients.consumer.RangeAssignor", "range"),
            (
                "org.apache.kafka.clients.consumer.RoundRobinAssignor",
                "roundrobin",
            ),
            ("org.apache.kafka.clients.consumer.StickyAssignor", "sticky"),
            (
                " org.apache.kafka.clients.consumer.CooperativeStickyAssignor ",
                "cooperative-sticky",
            ),
        ] {
            assert_eq!(by_name(name).map(|a| a.name()), Some(want), "{name}");
        }
        for bad in [
            "",
            "Range",
            "org.apache.kafka.clients.consumer.range",
            "org.apache.kafka.clients.consumer.FooAssignor",
        ] {
            assert!(by_name(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn common_protocol_is_the_highest_shared_one() {
        let all = |names: &[&str]| -> Vec<Arc<dyn Assignor>> {
            names.iter().filter_map(|n| by_name(n)).collect()
        };
        assert_eq!(
            common_protocol(&all(&["cooperative-sticky"])),
            Some(RebalanceProtocol::Cooperative)
        );
        assert_eq!(
            common_protocol(&all(&["range", "cooperative-sticky"])),
            Some(RebalanceProtocol::Eager)
        );
        assert_eq!(common_protocol(&[]), None);
    }

    #[test]
    fn java_order_puts_static_members_first() {
        let members = vec![
            MemberSubscription::new("a", &["t"]),
            static_member("z", "i2"),
            MemberSubscription::new("0", &["t"]),
            static_member("b", "i1"),
        ];
        let order: Vec<&str> = members_in_java_order(&members)
            .iter()
            .map(|m| m.member_id.as_str())
            .collect();
        assert_eq!(order, ["b", "z", "0", "a"]);
    }

    #[test]
    fn java_string_order_is_utf16() {
        // U+FF21 (one UTF-16 unit 0xFF21) sorts after U+1F600 (surrogates 0xD83D 0xDE00) in
        // Java, before it in UTF-8 byte order.
        assert_eq!(java_cmp("\u{1F600}", "\u{FF21}"), Ordering::Less);
        assert_eq!("\u{1F600}".cmp("\u{FF21}"), Ordering::Greater);
        assert_eq!(java_cmp("a", "b"), Ordering::Less);
        assert_eq!(java_cmp("ab", "a"), Ordering::Greater);
    }

    #[test]
    fn input_checks() {
        let counts = BTreeMap::from([("t".to_owned(), -1)]);
        assert!(matches!(
            check_input(&counts, &[]),
            Err(ConsumerError::InvalidPartitionCount { count: -1, .. })
        ));
        let counts = BTreeMap::from([("t".to_owned(), 1)]);
        let twice = [
            MemberSubscription::new("m", &["t"]),
            MemberSubscription::new("m", &["t"]),
        ];
        assert!(matches!(
            check_input(&counts, &twice),
            Err(ConsumerError::DuplicateMember { .. })
        ));
    }

    #[test]
    fn cooperative_validation_catches_direct_moves() {
        let mut a = MemberSubscription::new("a", &["t"]);
        a.owned_partitions = vec![TopicPartition::new("t", 0), TopicPartition::new("t", 1)];
        let b = MemberSubscription::new("b", &["t"]);
        let members = [a, b];
        let ok = GroupAssignment::from([
            ("a".to_owned(), vec![TopicPartition::new("t", 0)]),
            ("b".to_owned(), vec![TopicPartition::new("t", 2)]),
        ]);
        assert!(validate_cooperative_assignment(&members, &ok).is_ok());
        let bad = GroupAssignment::from([
            ("a".to_owned(), vec![TopicPartition::new("t", 0)]),
            ("b".to_owned(), vec![TopicPartition::new("t", 1)]),
        ]);
        match validate_cooperative_assignment(&members, &bad) {
            Err(ConsumerError::CooperativeViolation { partitions }) => {
                assert_eq!(partitions, [TopicPartition::new("t", 1)]);
            }
            other => panic!("{other:?}"),
        }
    }
}
