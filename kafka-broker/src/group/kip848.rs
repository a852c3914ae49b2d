//! KIP-848 consumer groups next to the classic ones on the [`GroupManager`]: one group-id
//! space, as Kafka keeps both types in one map.
//!
//! - A ConsumerGroupHeartbeat joining (epoch 0) a group id held by an empty classic group
//!   (state Empty, no members: a group known only by its offsets, or one whose members all
//!   left) turns it into a consumer group, as Kafka 3.7+ does: the classic group goes (a
//!   GroupMetadata tombstone), its offsets stay. A classic group with members answers
//!   GROUP_ID_NOT_FOUND ("Group X is not a consumer group."); online migration is not done.
//! - A JoinGroup for a consumer group answers INCONSISTENT_GROUP_PROTOCOL
//!   (`join_refused`), whatever its members; DeleteGroups removes an empty one.
//! - Offsets are shared: OffsetCommit, TxnOffsetCommit and OffsetFetch of a consumer group
//!   are checked with the member epoch (`ConsumerGroups::validate_offset_commit`/`_fetch`).

use bytes::Bytes;
use kafka_protocol::KStr;
use kafka_protocol::codec::Message;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::frame::encode_versioned;
use kafka_protocol::messages::{
    ConsumerProtocolAssignment, ConsumerProtocolSubscription, consumer_protocol_assignment,
};

use super::consumer::{
    ConsumerGroupDescription, ConsumerGroupError, ConsumerGroupRecord, ConsumerGroups,
    HeartbeatRequest, HeartbeatResponse, TopicsImage,
};
use super::manager::GroupManager;
use super::records::OffsetsRecord;
use super::types::{CLASSIC_GROUP_TYPE, DescribedMember, GroupDescription, GroupState};

/// The group type ListGroups v5+ reports for a KIP-848 group.
pub const CONSUMER_GROUP_TYPE: &str = "consumer";

/// A refused KIP-848 operation: Kafka's code and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub code: ErrorCode,
    pub message: Option<String>,
}

impl Refusal {
    fn code(code: ErrorCode) -> Self {
        Self {
            code,
            message: None,
        }
    }

    fn not_consumer(group_id: &str) -> Self {
        Self {
            code: ErrorCode::GROUP_ID_NOT_FOUND,
            message: Some(format!("Group {group_id} is not a consumer group.")),
        }
    }
}

impl From<ConsumerGroupError> for Refusal {
    fn from(e: ConsumerGroupError) -> Self {
        Self {
            code: e.code(),
            message: Some(e.to_string()),
        }
    }
}

/// A group as ListGroups shows it, of either type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedGroup {
    pub group_id: String,
    pub protocol_type: String,
    /// The state's name as Kafka spells it for the group's type.
    pub state: String,
    /// `classic` or `consumer`.
    pub group_type: &'static str,
}

impl GroupManager {
    /// The KIP-848 groups.
    pub fn consumer_groups(&self) -> &ConsumerGroups {
        &self.consumer
    }

    /// ConsumerGroupHeartbeat: the coordinator's checks (NOT_COORDINATOR and the like), the
    /// group-id space shared with classic groups, then the consumer groups. Its records
    /// (those of a classic group replaced first) are in `take_records` and the consumer
    /// groups' `take_records`.
    pub fn consumer_heartbeat(
        &mut self,
        req: &HeartbeatRequest,
        image: &dyn TopicsImage,
        now: i64,
    ) -> Result<HeartbeatResponse, Refusal> {
        if req.group_id.is_empty() {
            return Err(Refusal {
                code: ErrorCode::INVALID_REQUEST,
                message: Some("GroupId can't be empty.".to_owned()),
            });
        }
        self.check_group(&req.group_id).map_err(Refusal::code)?;
        let mut replaced = None;
        if let Some(classic) = self.groups.get(&req.group_id) {
            let empty = classic.state == GroupState::Empty
                && classic.members.is_empty()
                && classic.pending_members.is_empty();
            if !empty || req.member_epoch != 0 {
                return Err(Refusal::not_consumer(&req.group_id));
            }
            replaced = self.groups.remove(&req.group_id);
        }
        match self.consumer.heartbeat(req, image, now) {
            Ok(answer) => {
                if replaced.is_some() {
                    tracing::info!(group = %req.group_id,
                        "empty classic group converted to a consumer group");
                    self.fx
                        .records
                        .push(OffsetsRecord::group_tombstone(&req.group_id));
                }
                Ok(answer)
            }
            Err(e) => {
                if let Some(group) = replaced {
                    self.groups.insert(req.group_id.clone(), group);
                }
                Err(e.into())
            }
        }
    }

    /// The consumer groups' records since the last call, as `__consumer_offsets` records.
    pub fn take_consumer_records(&mut self) -> Vec<OffsetsRecord> {
        self.consumer
            .take_records()
            .into_iter()
            .map(OffsetsRecord::consumer)
            .collect()
    }

    /// Whether `group_id` is a consumer group (JoinGroup, SyncGroup, Heartbeat, LeaveGroup
    /// of the classic protocol answer INCONSISTENT_GROUP_PROTOCOL for it).
    pub fn is_consumer_group(&self, group_id: &str) -> bool {
        self.consumer.contains(group_id)
    }

    /// ConsumerGroupDescribe of one group: a classic group of that id is "not a consumer
    /// group" (GROUP_ID_NOT_FOUND), as is an unknown id.
    pub fn consumer_describe(
        &self,
        group_id: &str,
        image: &dyn TopicsImage,
    ) -> Result<ConsumerGroupDescription, Refusal> {
        self.check_group(group_id).map_err(Refusal::code)?;
        if self.groups.contains_key(group_id) {
            return Err(Refusal::not_consumer(group_id));
        }
        self.consumer
            .describe(group_id, image)
            .map_err(|e| match e {
                ConsumerGroupError::GroupIdNotFound(_) => Refusal {
                    code: ErrorCode::GROUP_ID_NOT_FOUND,
                    message: Some(format!("Group {group_id} not found.")),
                },
                e => e.into(),
            })
    }

    /// DescribeGroups of either type. A consumer group is shown as Kafka 4 shows it to the
    /// classic api: protocol type `consumer`, protocol data the default assignor's name, its
    /// state's name, and each member's subscribed topic names and assigned partitions as the
    /// consumer protocol's Subscription and Assignment (version 0 and 0).
    pub fn describe_group(&self, group_id: &str, image: &dyn TopicsImage) -> GroupDescription {
        let Ok(d) = self.consumer.describe(group_id, image) else {
            return self.describe(group_id);
        };
        let default_assignor = self
            .consumer
            .config()
            .default_assignor()
            .map(|a| a.name().to_owned())
            .unwrap_or_default();
        GroupDescription {
            group_id: d.group_id,
            state: GroupState::Stable,
            state_name: Some(d.state.as_str().to_owned()),
            protocol_type: CONSUMER_GROUP_TYPE.to_owned(),
            protocol_data: default_assignor,
            members: d
                .members
                .into_iter()
                .map(|m| DescribedMember {
                    member_id: m.member_id,
                    group_instance_id: m.instance_id,
                    client_id: m.client_id,
                    client_host: m.client_host,
                    metadata: subscription_bytes(&m.subscribed_topic_names),
                    assignment: assignment_bytes(&m.assignment),
                })
                .collect(),
        }
    }

    /// ListGroups of both types: groups in one of `states` and of one of `types` (any if
    /// empty), compared case-insensitively.
    pub fn list_groups(&self, states: &[&str], types: &[&str]) -> Vec<ListedGroup> {
        let wanted = |t: &str| types.is_empty() || types.iter().any(|w| w.eq_ignore_ascii_case(t));
        let in_state =
            |s: &str| states.is_empty() || states.iter().any(|w| w.eq_ignore_ascii_case(s));
        let mut out: Vec<ListedGroup> = Vec::new();
        if wanted(CLASSIC_GROUP_TYPE) {
            out.extend(self.list(states, &[]).into_iter().map(|g| ListedGroup {
                group_id: g.group_id,
                protocol_type: g.protocol_type,
                state: g.state.as_str().to_owned(),
                group_type: CLASSIC_GROUP_TYPE,
            }));
        }
        if wanted(CONSUMER_GROUP_TYPE) {
            out.extend(
                self.consumer
                    .list()
                    .into_iter()
                    .filter(|g| in_state(g.state.as_str()))
                    .map(|g| ListedGroup {
                        group_id: g.group_id,
                        protocol_type: CONSUMER_GROUP_TYPE.to_owned(),
                        state: g.state.as_str().to_owned(),
                        group_type: CONSUMER_GROUP_TYPE,
                    }),
            );
        }
        out
    }

    /// DeleteGroups of a consumer group: only an empty one goes (NON_EMPTY_GROUP otherwise),
    /// with its offsets. `None` when `group_id` is no consumer group.
    pub(super) fn delete_consumer_group(&mut self, group_id: &str) -> Option<ErrorCode> {
        if !self.consumer.contains(group_id) {
            return None;
        }
        if let Err(e) = self.consumer.delete(group_id) {
            return Some(e.code());
        }
        for (topic, partition) in self.offsets.remove_group(group_id) {
            let r = OffsetsRecord::offset_tombstone(group_id, &topic, partition);
            self.fx.records.push(r);
        }
        tracing::info!(group = %group_id, "consumer group deleted");
        Some(ErrorCode::NONE)
    }

    /// OffsetCommit (`transactional` false) or TxnOffsetCommit into a consumer group:
    /// `None` when `group_id` is no consumer group, else Kafka's check of the member and its
    /// epoch (`generation` carries the member epoch).
    pub(super) fn check_consumer_commit(
        &self,
        group_id: &str,
        member_id: &str,
        generation: i32,
        transactional: bool,
        api_version: i16,
    ) -> Option<Result<(), ErrorCode>> {
        if !self.consumer.contains(group_id) {
            return None;
        }
        Some(
            self.consumer
                .validate_offset_commit(group_id, member_id, generation, transactional, api_version)
                .map_err(|e| e.code()),
        )
    }

    /// OffsetFetch v9+ of a consumer group: the member must exist at that epoch unless the
    /// fetch names no member and a negative epoch. Anything else passes.
    pub fn check_consumer_fetch(
        &self,
        group_id: &str,
        member_id: Option<&str>,
        member_epoch: i32,
    ) -> Result<(), ErrorCode> {
        if !self.consumer.contains(group_id) {
            return Ok(());
        }
        self.consumer
            .validate_offset_fetch(group_id, member_id, member_epoch)
            .map_err(|e| e.code())
    }

    /// Replays one consumer group's record read back from `__consumer_offsets`.
    pub(super) fn replay_consumer(&mut self, record: ConsumerGroupRecord) {
        self.consumer.replay(&record);
    }
}

/// A consumer protocol Subscription (version 0) of `topics`.
fn subscription_bytes(topics: &[String]) -> Bytes {
    let s = ConsumerProtocolSubscription {
        topics: topics.iter().map(|t| KStr::from(t.clone())).collect(),
        ..Default::default()
    };
    versioned(&s, 0)
}

/// A consumer protocol Assignment (version 0) of `partitions`.
fn assignment_bytes(partitions: &[super::consumer::DescribedTopicPartitions]) -> Bytes {
    let a = ConsumerProtocolAssignment {
        assigned_partitions: partitions
            .iter()
            .map(|t| consumer_protocol_assignment::TopicPartition {
                topic: KStr::from(t.topic_name.clone()),
                partitions: t.partitions.clone(),
            })
            .collect(),
        ..Default::default()
    };
    versioned(&a, 0)
}

/// `msg` at `version`, after its version (empty if it cannot be written, which the
/// consumer protocol's version 0 always can).
fn versioned<T: Message>(msg: &T, version: i16) -> Bytes {
    encode_versioned(msg, version).unwrap_or_else(|e| {
        tracing::warn!(error = %e, "consumer protocol metadata not encodable");
        Bytes::new()
    })
}
