//! Server-side partition assignors of KIP-848 consumer groups: the coordinator computes each
//! member's target assignment from the members' subscriptions and the topics' partitions.
//!
//! Kafka's interface (`ConsumerGroupPartitionAssignor`) kept as data: a [`GroupSpec`] (every
//! member's rack, subscribed topic ids and current target assignment, and whether every member
//! subscribes to the same topics), a [`TopicDescriber`] (partition counts and the racks of each
//! partition's replicas) in, every member's new target assignment out. Assignors are pure and
//! deterministic: the same inputs give the same assignment.
//!
//! Neither assignor is rack-aware, as in Kafka: Kafka took the rack-aware code out of its
//! server-side assignors in 3.8 (KAFKA-16694) and has not put it back (KAFKA-19909 is still an
//! open proposal), so a member's `rack_id` and the replicas' racks do not change an assignment.
//!
//! Where Kafka walks a `HashMap`/`HashSet` (members, topics), these assignors walk member ids
//! and topic ids in ascending order, so an assignment is a function of the inputs alone.
//!
//! | file | what |
//! |---|---|
//! | `mod.rs` | the interface, the assignors by name ([`default_assignors`], [`by_names`]) |
//! | `uniform.rs` | `uniform`: balanced and sticky (Kafka's default) |
//! | `range.rs` | `range`: co-partitioned ranges per topic, recomputed from the member order |
//! | `tests.rs` | Kafka's known answers, seeded random invariants, hostile inputs, a large group |

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kafka_protocol::Uuid;

pub mod range;
pub mod uniform;

#[cfg(test)]
mod tests;

pub use range::RangeAssignor;
pub use uniform::UniformAssignor;

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

/// The value of `group.consumer.assignors` when it is not set: `uniform` then `range`, Kafka's
/// default order (the first one is used by members that name no `server_assignor`).
pub fn default_assignors() -> Vec<Arc<dyn Assignor>> {
    vec![Arc::new(UniformAssignor), Arc::new(RangeAssignor)]
}

/// The assignors of a `group.consumer.assignors` list, in its order. Each entry is an
/// assignor's name (`uniform`, `range`) or, as Kafka 3.7-3.9 configurations spell them, the
/// class name of Kafka's built-in one (`org.apache.kafka.coordinator.group.assignor.UniformAssignor`
/// and `...RangeAssignor`); surrounding blanks are ignored. An unknown entry, an empty list and a
/// name given twice are errors naming what is wrong.
pub fn by_names(names: &[String]) -> Result<Vec<Arc<dyn Assignor>>, AssignorError> {
    const CONFIG: &str = "group.consumer.assignors";
    if names.is_empty() {
        return Err(AssignorError::Failed {
            assignor: CONFIG,
            reason: "the list names no assignor (known: uniform, range)".to_owned(),
        });
    }
    let mut out: Vec<Arc<dyn Assignor>> = Vec::with_capacity(names.len());
    for raw in names {
        let name = raw.trim();
        let assignor: Arc<dyn Assignor> = match name {
            uniform::UNIFORM_ASSIGNOR_NAME | uniform::KAFKA_CLASS_NAME => Arc::new(UniformAssignor),
            range::RANGE_ASSIGNOR_NAME | range::KAFKA_CLASS_NAME => Arc::new(RangeAssignor),
            _ => {
                return Err(AssignorError::Failed {
                    assignor: CONFIG,
                    reason: format!("unknown assignor {name:?} (known: uniform, range)"),
                });
            }
        };
        if out.iter().any(|a| a.name() == assignor.name()) {
            return Err(AssignorError::Failed {
                assignor: CONFIG,
                reason: format!("assignor {:?} is listed twice", assignor.name()),
            });
        }
        out.push(assignor);
    }
    Ok(out)
}

/// The partition count of `topic`, which `member` subscribes to: Kafka's
/// `PartitionAssignorException` when the topic is unknown (a member subscribed to a topic that
/// was deleted: the coordinator keeps the previous target assignment until the subscription is
/// resolved again), and an error for a negative count.
fn partition_count(
    assignor: &'static str,
    topics: &dyn TopicDescriber,
    member: &str,
    topic: Uuid,
) -> Result<usize, AssignorError> {
    let Some(count) = topics.partitions(topic) else {
        return Err(AssignorError::UnknownTopic {
            member: member.to_owned(),
            topic,
        });
    };
    usize::try_from(count).map_err(|_| AssignorError::Failed {
        assignor,
        reason: format!("topic {topic} has a negative partition count ({count})"),
    })
}

/// Every member of `group` with an empty assignment.
fn empty_assignment(group: &GroupSpec) -> BTreeMap<String, TopicPartitions> {
    group
        .members
        .keys()
        .map(|id| (id.clone(), TopicPartitions::new()))
        .collect()
}

/// Whether every member really subscribes to the same topics: a spec that says
/// [`SubscriptionType::Homogeneous`] wrongly is assigned by the heterogeneous path, so that a
/// partition never goes to a member that does not subscribe to its topic.
fn is_homogeneous(group: &GroupSpec) -> bool {
    if group.subscription_type != SubscriptionType::Homogeneous {
        return false;
    }
    let mut subscriptions = group
        .members
        .values()
        .map(|m| &m.subscription.subscribed_topic_ids);
    let first = subscriptions.next();
    first.is_none_or(|f| subscriptions.all(|s| s == f))
}
