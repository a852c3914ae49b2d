//! What goes into and comes out of the coordinator, independent of wire versions: the
//! handlers convert from and to the protocol messages.

use bytes::Bytes;
use kafka_protocol::error_code::ErrorCode;

use super::records::OffsetsRecord;

/// Names a request whose answer may come later (as an [`Output`]). Chosen by the driver;
/// must be unique among the requests still waiting.
pub use crate::coordinator::RequestId;

/// Kafka's group states (classic protocol).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GroupState {
    /// No members (offsets may still be committed by simple consumers).
    Empty,
    /// Waiting for members to (re)join.
    PreparingRebalance,
    /// Joined; waiting for the leader's assignment.
    CompletingRebalance,
    /// Every member has its assignment.
    Stable,
    /// Removed.
    Dead,
}

impl GroupState {
    /// Kafka's name, as DescribeGroups and ListGroups report it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Empty => "Empty",
            Self::PreparingRebalance => "PreparingRebalance",
            Self::CompletingRebalance => "CompletingRebalance",
            Self::Stable => "Stable",
            Self::Dead => "Dead",
        }
    }

    /// Every state.
    pub const ALL: [GroupState; 5] = [
        Self::Empty,
        Self::PreparingRebalance,
        Self::CompletingRebalance,
        Self::Stable,
        Self::Dead,
    ];
}

impl std::fmt::Display for GroupState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One protocol a member supports (e.g. `range` with its subscription bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Protocol {
    pub name: String,
    pub metadata: Bytes,
}

/// A JoinGroup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinRequest {
    pub group_id: String,
    /// Empty for a member that has no id yet.
    pub member_id: String,
    /// `group.instance.id` of a static member.
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub session_timeout_ms: i32,
    /// For JoinGroup v0 (which has none), the session timeout.
    pub rebalance_timeout_ms: i32,
    pub protocol_type: String,
    /// In the member's order of preference.
    pub protocols: Vec<Protocol>,
    /// JoinGroup v4+: a dynamic member without an id first gets MEMBER_ID_REQUIRED and an id.
    pub require_known_member_id: bool,
    /// JoinGroup v9+: a static leader rejoining a stable group is told to skip assignment.
    pub supports_skip_assignment: bool,
    pub reason: Option<String>,
}

/// A member in the leader's JoinGroup answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinedMember {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    /// The member's metadata for the selected protocol.
    pub metadata: Bytes,
}

/// The answer to a JoinGroup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JoinResponse {
    pub error: ErrorCode,
    pub generation_id: i32,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    /// Empty when there is none.
    pub leader: String,
    pub skip_assignment: bool,
    pub member_id: String,
    /// Every member, for the leader; empty for the others.
    pub members: Vec<JoinedMember>,
}

impl JoinResponse {
    /// An error answer (generation -1, no protocol, no leader).
    pub fn error(member_id: impl Into<String>, error: ErrorCode) -> Self {
        Self {
            error,
            generation_id: -1,
            protocol_type: None,
            protocol_name: None,
            leader: String::new(),
            skip_assignment: false,
            member_id: member_id.into(),
            members: Vec::new(),
        }
    }
}

/// A SyncGroup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncRequest {
    pub group_id: String,
    pub generation_id: i32,
    pub member_id: String,
    pub group_instance_id: Option<String>,
    /// v5+: checked against the group's when present.
    pub protocol_type: Option<String>,
    /// v5+: checked against the group's when present.
    pub protocol_name: Option<String>,
    /// The leader's assignment, by member id (others send none).
    pub assignments: Vec<(String, Bytes)>,
}

/// The answer to a SyncGroup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyncResponse {
    pub error: ErrorCode,
    pub protocol_type: Option<String>,
    pub protocol_name: Option<String>,
    pub assignment: Bytes,
}

impl SyncResponse {
    /// An error answer.
    pub fn error(error: ErrorCode) -> Self {
        Self {
            error,
            protocol_type: None,
            protocol_name: None,
            assignment: Bytes::new(),
        }
    }
}

/// A Heartbeat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeartbeatRequest {
    pub group_id: String,
    pub generation_id: i32,
    pub member_id: String,
    pub group_instance_id: Option<String>,
}

/// One member of a LeaveGroup (v0-2 carry exactly one, without an instance id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeavingMember {
    /// Empty to remove a static member by its instance id.
    pub member_id: String,
    pub group_instance_id: Option<String>,
}

/// The answer to a LeaveGroup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaveResponse {
    /// A group-level error; members are then empty.
    pub error: ErrorCode,
    /// One per leaving member, in request order.
    pub members: Vec<(LeavingMember, ErrorCode)>,
}

/// An answer released later.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    Join {
        request: RequestId,
        response: JoinResponse,
    },
    Sync {
        request: RequestId,
        response: SyncResponse,
    },
}

/// An OffsetCommit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitRequest {
    pub group_id: String,
    /// -1 (with an empty member id) for a simple commit by a consumer that assigns its own
    /// partitions.
    pub generation_id: i32,
    pub member_id: String,
    pub group_instance_id: Option<String>,
    /// v2-4 `retention_time_ms` when not -1: the offsets expire that long after the commit.
    pub retention_ms: Option<i64>,
    pub partitions: Vec<CommitPartition>,
}

/// One partition of an OffsetCommit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitPartition {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    /// -1 for none.
    pub leader_epoch: i32,
    /// `None` is stored as the empty string, as Kafka does.
    pub metadata: Option<String>,
    /// v1's explicit commit timestamp; `None` for "now".
    pub commit_timestamp: Option<i64>,
}

/// A TxnOffsetCommit: offsets committed as part of a producer's transaction, pending until
/// the transaction ends ([`super::GroupManager::complete_transaction`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnCommitRequest {
    pub transactional_id: String,
    pub group_id: String,
    pub producer_id: i64,
    pub producer_epoch: i16,
    /// v3+ (KIP-447); -1 (with an empty member id and no instance id) when not given, and then
    /// not checked.
    pub generation_id: i32,
    pub member_id: String,
    pub group_instance_id: Option<String>,
    /// Only offset, leader epoch and metadata are used.
    pub partitions: Vec<CommitPartition>,
}

/// The records of one TxnOffsetCommit, to be written as one transactional batch of the
/// producer (producer id and epoch, no sequence) to the group's `__consumer_offsets` partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnBatch {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub records: Vec<OffsetsRecord>,
}

/// One partition of an OffsetFetch answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchedOffset {
    pub topic: String,
    pub partition: i32,
    /// -1 when nothing is committed.
    pub offset: i64,
    /// -1 for none.
    pub leader_epoch: i32,
    pub metadata: String,
    pub error: ErrorCode,
}

/// A member in DescribeGroups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribedMember {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    /// Metadata for the selected protocol (Stable groups only, else empty).
    pub metadata: Bytes,
    /// Assignment (Stable groups only, else empty).
    pub assignment: Bytes,
}

/// DescribeGroups' view of a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupDescription {
    pub group_id: String,
    pub state: GroupState,
    /// The state's name when the group is a KIP-848 consumer group (`state` is then
    /// meaningless), `None` for a classic group.
    pub state_name: Option<String>,
    pub protocol_type: String,
    /// The selected protocol when Stable, else empty.
    pub protocol_data: String,
    pub members: Vec<DescribedMember>,
}

/// ListGroups' view of a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupListing {
    pub group_id: String,
    pub protocol_type: String,
    pub state: GroupState,
}

/// The group type ListGroups v5+ reports: every group here speaks the classic protocol.
pub const CLASSIC_GROUP_TYPE: &str = "classic";
