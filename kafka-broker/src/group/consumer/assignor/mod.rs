//! Server-side partition assignors of KIP-848 consumer groups: the coordinator computes each
//! member's target assignment from the members' subscriptions and the topics' partitions.
//!
//! Kafka's interface (`ConsumerGroupPartitionAssignor`) kept as data: a [`GroupSpec`] (every
//! member's rack, subscribed topic ids and current target assignment, and whether every member
//! subscribes to the same topics), a [`TopicDescriber`] (partition counts and the racks of each
//! partition's replicas) in, every member's new target assignment out. Assignors are pure and
//! deterministic: the same inputs give the same assignment.
//!
//! | file | what |
//! |---|---|
//! | `mod.rs` | the interface, and the assignors by name |
//! | `uniform.rs` | `uniform`: balanced and sticky (Kafka's default) |
//! | `range.rs` | `range`: co-partitioned ranges per topic, sticky where it can be |

use std::collections::{BTreeMap, BTreeSet};

use kafka_protocol::Uuid;

/// Partitions by topic id.
pub type TopicPartitions = BTreeMap<Uuid, BTreeSet<i32>>;

/// What one member subscribes to, as the assignor sees it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemberSubscription {
    /// The member's `rack_id`, for rack-aware assignment.
    pub rack_id: Option<String>,
    /// The ids of the existing topics the member subscribes to (names and regexes resolved).
    pub subscribed_topic_ids: BTreeSet<Uuid>,
}

/// One member for the assignor: its subscription and its current target assignment (the
/// assignors keep partitions where they are when they can).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AssignmentMember {
    pub subscription: MemberSubscription,
    /// The member's target assignment before this computation.
    pub current: TopicPartitions,
}

/// Whether every member subscribes to the same topics (Kafka's `SubscriptionType`): the
/// assignors have a faster path for the homogeneous case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubscriptionType {
    Homogeneous,
    Heterogeneous,
}

/// The group as the assignor sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupSpec {
    /// Every member by member id.
    pub members: BTreeMap<String, AssignmentMember>,
    pub subscription_type: SubscriptionType,
}

impl GroupSpec {
    /// A spec of `members`, its subscription type found from them.
    pub fn new(members: BTreeMap<String, AssignmentMember>) -> Self {
        let mut subscriptions = members
            .values()
            .map(|m| &m.subscription.subscribed_topic_ids);
        let first = subscriptions.next();
        let same = first.is_none_or(|f| subscriptions.all(|s| s == f));
        Self {
            members,
            subscription_type: if same {
                SubscriptionType::Homogeneous
            } else {
                SubscriptionType::Heterogeneous
            },
        }
    }
}

/// The topics the group subscribes to, as the assignor may ask about them.
pub trait TopicDescriber {
    /// The partition count of `topic`, `None` if the topic does not exist (any more).
    fn partitions(&self, topic: Uuid) -> Option<i32>;

    /// The racks of the replicas of `topic`'s partition `partition` (empty when the brokers
    /// have no racks, or the partition is unknown).
    fn racks(&self, topic: Uuid, partition: i32) -> BTreeSet<String>;
}

/// Why an assignment could not be computed (Kafka's `PartitionAssignorException`): the
/// heartbeat that triggered it is answered with an error and the group keeps its previous
/// target assignment.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AssignorError {
    /// A member subscribes to a topic the describer does not know.
    #[error("member {member} subscribes to an unknown topic {topic}")]
    UnknownTopic { member: String, topic: Uuid },
    /// Anything else the assignor cannot do with these inputs.
    #[error("the {assignor} assignor cannot assign: {reason}")]
    Failed {
        assignor: &'static str,
        reason: String,
    },
}

/// A server-side assignor (`group.consumer.assignors`; a member picks one by name with
/// `server_assignor`).
pub trait Assignor: std::fmt::Debug + Send + Sync {
    /// Its name, as members and `group.consumer.assignors` spell it (`uniform`, `range`).
    fn name(&self) -> &'static str;

    /// Every member's new target assignment (a member without partitions maps to an empty
    /// set). Each partition of a subscribed topic goes to at most one member, and only to a
    /// member subscribed to its topic.
    fn assign(
        &self,
        group: &GroupSpec,
        topics: &dyn TopicDescriber,
    ) -> Result<BTreeMap<String, TopicPartitions>, AssignorError>;
}
