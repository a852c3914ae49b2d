//! The plain data of KIP-848 groups: ConsumerGroupHeartbeat's request and answer as the
//! coordinator sees them (not the generated wire messages), group and member states, the
//! errors with their Kafka codes, what ConsumerGroupDescribe and ListGroups show, and the
//! topic metadata the coordinator reads ([`TopicsImage`]).

use std::collections::{BTreeMap, BTreeSet};

use kafka_protocol::Uuid;
use kafka_protocol::error_code::ErrorCode;

use super::assignor::AssignorError;
pub use super::assignor::TopicPartitions;

/// The member epoch of a member joining (or rejoining) a group.
pub const JOIN_GROUP_MEMBER_EPOCH: i32 = 0;
/// The member epoch of a member leaving its group for good.
pub const LEAVE_GROUP_MEMBER_EPOCH: i32 = -1;
/// The member epoch of a static member leaving for a while: its instance id keeps its
/// partitions for a replacement until the session timeout.
pub const LEAVE_GROUP_STATIC_MEMBER_EPOCH: i32 = -2;

/// A ConsumerGroupHeartbeat (v0-1), with the client's id and host from the request header.
/// Every `Option` (and `rebalance_timeout_ms` -1) is "unchanged since the last heartbeat",
/// as Kafka reads a null field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeartbeatRequest {
    /// The request's version: from v1 on the client generates its member id (a UUID).
    pub version: i16,
    pub group_id: String,
    /// Empty when a v0 member joins: the coordinator generates one.
    pub member_id: String,
    /// 0 to join, -1 to leave, -2 for a static member to leave for a while, else the
    /// member's current epoch.
    pub member_epoch: i32,
    /// `group.instance.id`: the member is static.
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    /// -1 when unchanged; required when joining.
    pub rebalance_timeout_ms: i32,
    pub subscribed_topic_names: Option<Vec<String>>,
    /// v1: a regular expression (RE2/J syntax) the topic names must match entirely.
    pub subscribed_topic_regex: Option<String>,
    /// The server-side assignor the member asks for (`uniform`, `range`).
    pub server_assignor: Option<String>,
    /// The partitions the member owns now, by topic id (`None`: not sent).
    pub topic_partitions: Option<TopicPartitions>,
    /// From the request header.
    pub client_id: String,
    /// The client's address, as DescribeGroups shows it.
    pub client_host: String,
}

impl HeartbeatRequest {
    /// A v1 heartbeat of `member_id` at `member_epoch`, every optional field unchanged.
    pub fn new(group_id: &str, member_id: &str, member_epoch: i32) -> Self {
        Self {
            version: 1,
            group_id: group_id.to_owned(),
            member_id: member_id.to_owned(),
            member_epoch,
            instance_id: None,
            rack_id: None,
            rebalance_timeout_ms: -1,
            subscribed_topic_names: None,
            subscribed_topic_regex: None,
            server_assignor: None,
            topic_partitions: None,
            client_id: String::new(),
            client_host: String::new(),
        }
    }
}

/// A successful ConsumerGroupHeartbeat answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeartbeatResponse {
    pub member_id: String,
    /// The member's new epoch (-1 or -2 after a leave).
    pub member_epoch: i32,
    /// `group.consumer.heartbeat.interval.ms` (0 after a leave).
    pub heartbeat_interval_ms: i32,
    /// The partitions the member may own now: sent when it joins, sends a full request, or
    /// when they changed since its last heartbeat (Kafka leaves it null otherwise).
    pub assignment: Option<TopicPartitions>,
}

/// A group's state as ConsumerGroupDescribe and ListGroups show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConsumerGroupState {
    /// No members.
    Empty,
    /// The group epoch moved past the target assignment's: a new one is to be computed.
    Assigning,
    /// Some member has not reached the target assignment yet.
    Reconciling,
    /// Every member owns its target assignment at the target epoch.
    Stable,
    /// The group does not exist (any more).
    Dead,
}

impl ConsumerGroupState {
    /// Kafka's name (`Empty`, `Assigning`, `Reconciling`, `Stable`, `Dead`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Empty => "Empty",
            Self::Assigning => "Assigning",
            Self::Reconciling => "Reconciling",
            Self::Stable => "Stable",
            Self::Dead => "Dead",
        }
    }
}

/// A member's reconciliation state (Kafka's `MemberState`, kept as its byte in records).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum MemberState {
    /// The member owns what it should at its epoch.
    #[default]
    Stable,
    /// The member must give up partitions (pending revocation) before it moves on.
    UnrevokedPartitions,
    /// The member waits for partitions other members have not released yet.
    UnreleasedPartitions,
    /// A state this coordinator does not know (a record of a newer Kafka): the member must
    /// rejoin without partitions.
    Unknown,
}

impl MemberState {
    /// The byte Kafka writes in ConsumerGroupCurrentMemberAssignmentValue.State.
    pub fn value(self) -> i8 {
        match self {
            Self::Stable => 0,
            Self::UnrevokedPartitions => 1,
            Self::UnreleasedPartitions => 2,
            Self::Unknown => 127,
        }
    }

    /// The state of a record's byte; unknown bytes are [`MemberState::Unknown`].
    pub fn from_value(value: i8) -> Self {
        match value {
            0 => Self::Stable,
            1 => Self::UnrevokedPartitions,
            2 => Self::UnreleasedPartitions,
            _ => Self::Unknown,
        }
    }
}

/// Why a KIP-848 group operation was refused; [`ConsumerGroupError::code`] is the error code
/// Kafka answers with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConsumerGroupError {
    /// A field combination Kafka refuses (INVALID_REQUEST).
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// `server_assignor` names no configured assignor (UNSUPPORTED_ASSIGNOR).
    #[error("server assignor {name} is not supported, supported assignors: {supported}")]
    UnsupportedAssignor { name: String, supported: String },
    /// The subscription regex does not compile (INVALID_REGULAR_EXPRESSION).
    #[error("invalid regular expression {regex:?}: {reason}")]
    InvalidRegularExpression { regex: String, reason: String },
    /// No consumer group of that id (GROUP_ID_NOT_FOUND).
    #[error("consumer group {0} not found")]
    GroupIdNotFound(String),
    /// The member (or the static member of an instance id) is not in the group
    /// (UNKNOWN_MEMBER_ID).
    #[error("member {0} is not a member of the group")]
    UnknownMemberId(String),
    /// The member's epoch is neither the current one nor the tolerated previous one
    /// (FENCED_MEMBER_EPOCH): it must give up its partitions and rejoin.
    #[error(
        "member epoch {received} does not match the coordinator's {expected}; the member must rejoin"
    )]
    FencedMemberEpoch { received: i32, expected: i32 },
    /// Another member holds the instance id (FENCED_INSTANCE_ID).
    #[error(
        "static member {member_id} with instance id {instance_id} was fenced by member {owner}"
    )]
    FencedInstanceId {
        member_id: String,
        instance_id: String,
        owner: String,
    },
    /// A static member joins with an instance id its previous member has not released by
    /// leaving with epoch -2 (UNRELEASED_INSTANCE_ID).
    #[error("instance id {instance_id} is still owned by member {owner}")]
    UnreleasedInstanceId { instance_id: String, owner: String },
    /// `group.consumer.max.size` members already (GROUP_MAX_SIZE_REACHED).
    #[error("the consumer group has reached its maximum capacity of {0} members")]
    GroupMaxSizeReached(u32),
    /// The assignor failed; the group keeps its previous target assignment
    /// (UNKNOWN_SERVER_ERROR, as Kafka answers it).
    #[error("failed to compute a new target assignment for epoch {epoch}: {source}")]
    AssignorFailed { epoch: i32, source: AssignorError },
    /// An offset commit or fetch at another epoch than the member's (STALE_MEMBER_EPOCH).
    #[error("member epoch {received} does not match the expected member epoch {expected}")]
    StaleMemberEpoch { received: i32, expected: i32 },
    /// Only an empty group can be deleted (NON_EMPTY_GROUP).
    #[error("consumer group {0} still has members")]
    NonEmptyGroup(String),
    /// A consumer-protocol member committed with OffsetCommit below v9 (UNSUPPORTED_VERSION).
    #[error("OffsetCommit version 9 or above must be used by members of the consumer protocol")]
    UnsupportedOffsetCommitVersion,
}

impl ConsumerGroupError {
    /// The error code Kafka answers with.
    pub fn code(&self) -> ErrorCode {
        match self {
            Self::InvalidRequest(_) => ErrorCode::INVALID_REQUEST,
            Self::UnsupportedAssignor { .. } => ErrorCode::UNSUPPORTED_ASSIGNOR,
            Self::InvalidRegularExpression { .. } => ErrorCode::INVALID_REGULAR_EXPRESSION,
            Self::GroupIdNotFound(_) => ErrorCode::GROUP_ID_NOT_FOUND,
            Self::UnknownMemberId(_) => ErrorCode::UNKNOWN_MEMBER_ID,
            Self::FencedMemberEpoch { .. } => ErrorCode::FENCED_MEMBER_EPOCH,
            Self::FencedInstanceId { .. } => ErrorCode::FENCED_INSTANCE_ID,
            Self::UnreleasedInstanceId { .. } => ErrorCode::UNRELEASED_INSTANCE_ID,
            Self::GroupMaxSizeReached(_) => ErrorCode::GROUP_MAX_SIZE_REACHED,
            Self::AssignorFailed { .. } => ErrorCode::UNKNOWN_SERVER_ERROR,
            Self::StaleMemberEpoch { .. } => ErrorCode::STALE_MEMBER_EPOCH,
            Self::NonEmptyGroup(_) => ErrorCode::NON_EMPTY_GROUP,
            Self::UnsupportedOffsetCommitVersion => ErrorCode::UNSUPPORTED_VERSION,
        }
    }
}

/// Partitions of one topic, with its name, as ConsumerGroupDescribe shows them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribedTopicPartitions {
    pub topic_id: Uuid,
    pub topic_name: String,
    pub partitions: Vec<i32>,
}

/// A member as ConsumerGroupDescribe shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribedMember {
    pub member_id: String,
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub member_epoch: i32,
    pub client_id: String,
    pub client_host: String,
    pub subscribed_topic_names: Vec<String>,
    /// Empty when the member subscribes by names only.
    pub subscribed_topic_regex: String,
    /// What the member owns now (topics deleted since are left out, as Kafka does).
    pub assignment: Vec<DescribedTopicPartitions>,
    /// What it is to own.
    pub target_assignment: Vec<DescribedTopicPartitions>,
}

/// A group as ConsumerGroupDescribe shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerGroupDescription {
    pub group_id: String,
    pub state: ConsumerGroupState,
    pub group_epoch: i32,
    pub assignment_epoch: i32,
    /// The assignor the group uses now: the members' most asked-for, else the default.
    pub assignor_name: String,
    pub members: Vec<DescribedMember>,
}

/// A group as ListGroups shows it (type `consumer`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerGroupListing {
    pub group_id: String,
    pub state: ConsumerGroupState,
}

/// Kafka's internal topics: a regex subscription never matches them.
pub const INTERNAL_TOPICS: [&str; 3] = [
    "__consumer_offsets",
    "__transaction_state",
    "__share_group_state",
];

/// The cluster's topics as the coordinator needs them (the broker's metadata image).
pub trait TopicsImage {
    /// The id of the topic named `name`.
    fn topic_id(&self, name: &str) -> Option<Uuid>;

    /// The name of the topic of id `id`.
    fn topic_name(&self, id: Uuid) -> Option<&str>;

    /// The partition count of topic `id`.
    fn partition_count(&self, id: Uuid) -> Option<i32>;

    /// The racks of the replicas of partition `partition` of topic `id` (empty without racks).
    fn partition_racks(&self, id: Uuid, partition: i32) -> BTreeSet<String>;

    /// Every topic's name (regex subscriptions are matched against them).
    fn topic_names(&self) -> Vec<String>;

    /// Whether `name` is an internal topic, which a regex never matches.
    fn is_internal(&self, name: &str) -> bool {
        INTERNAL_TOPICS.contains(&name)
    }
}

/// One topic of a [`TopicsSnapshot`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotTopic {
    pub id: Uuid,
    /// The racks of each partition's replicas, by partition index; its length is the
    /// partition count.
    pub partition_racks: Vec<BTreeSet<String>>,
}

/// A [`TopicsImage`] held in memory: tests, and a broker that copies its image.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopicsSnapshot {
    topics: BTreeMap<String, SnapshotTopic>,
    names: BTreeMap<Uuid, String>,
}

impl TopicsSnapshot {
    /// Adds (or replaces) topic `name` of id `id` with `partitions` partitions, no racks.
    pub fn add(&mut self, name: &str, id: Uuid, partitions: i32) {
        let count = usize::try_from(partitions).unwrap_or(0);
        self.add_with_racks(name, id, vec![BTreeSet::new(); count]);
    }

    /// Adds (or replaces) topic `name` with the racks of each partition.
    pub fn add_with_racks(&mut self, name: &str, id: Uuid, partition_racks: Vec<BTreeSet<String>>) {
        self.remove(name);
        self.names.insert(id, name.to_owned());
        self.topics.insert(
            name.to_owned(),
            SnapshotTopic {
                id,
                partition_racks,
            },
        );
    }

    /// Deletes topic `name`.
    pub fn remove(&mut self, name: &str) {
        if let Some(old) = self.topics.remove(name) {
            self.names.remove(&old.id);
        }
    }
}

impl TopicsImage for TopicsSnapshot {
    fn topic_id(&self, name: &str) -> Option<Uuid> {
        self.topics.get(name).map(|t| t.id)
    }

    fn topic_name(&self, id: Uuid) -> Option<&str> {
        self.names.get(&id).map(String::as_str)
    }

    fn partition_count(&self, id: Uuid) -> Option<i32> {
        let name = self.names.get(&id)?;
        let topic = self.topics.get(name)?;
        i32::try_from(topic.partition_racks.len()).ok()
    }

    fn partition_racks(&self, id: Uuid, partition: i32) -> BTreeSet<String> {
        let topic = self.names.get(&id).and_then(|n| self.topics.get(n));
        let index = usize::try_from(partition).ok();
        topic
            .zip(index)
            .and_then(|(t, i)| t.partition_racks.get(i).cloned())
            .unwrap_or_default()
    }

    fn topic_names(&self) -> Vec<String> {
        self.topics.keys().cloned().collect()
    }
}
