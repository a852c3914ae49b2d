//! Consumer group apis: FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
//! OffsetCommit, TxnOffsetCommit, OffsetFetch, DescribeGroups, ListGroups, DeleteGroups,
//! OffsetDelete.
//!
//! Each handler turns the request into the coordinator's terms and its answer into the
//! response of the request's version, setting only fields that version carries. This broker
//! is the coordinator of every group.

// Until `handle` dispatches to these handlers only the tests use them. Remove when wired.

use std::collections::BTreeMap;

use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
use kafka_protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;
use kafka_protocol::messages::leave_group_response::MemberResponse;
use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::offset_delete_response::{
    OffsetDeleteResponsePartition, OffsetDeleteResponseTopic,
};
use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use kafka_protocol::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use kafka_protocol::messages::{
    DeleteGroupsRequest, DeleteGroupsResponse, DescribeGroupsRequest, DescribeGroupsResponse,
    FindCoordinatorRequest, FindCoordinatorResponse, HeartbeatRequest, HeartbeatResponse,
    JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest, LeaveGroupResponse, ListGroupsRequest,
    ListGroupsResponse, OffsetCommitRequest, OffsetCommitResponse, OffsetDeleteRequest,
    OffsetDeleteResponse, OffsetFetchRequest, OffsetFetchResponse, ResponseBody, SyncGroupRequest,
    SyncGroupResponse, TxnOffsetCommitRequest, TxnOffsetCommitResponse,
};

use crate::group::{self, CLASSIC_GROUP_TYPE, FetchedOffset, GroupCoordinator};
use crate::node::Broker;

/// Where clients find the coordinator: this broker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CoordinatorNode {
    pub(crate) node_id: i32,
    pub(crate) host: String,
    pub(crate) port: i32,
}

impl CoordinatorNode {
    pub(crate) fn of(broker: &Broker, listener: &str) -> Self {
        let (host, port) = broker.advertised_host_port_on(listener);
        Self {
            node_id: broker.config.server.node_id,
            host,
            port,
        }
    }
}

/// Who sent a JoinGroup (kept per member, shown by DescribeGroups).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ClientInfo<'a> {
    /// The request header's client id.
    pub(crate) client_id: &'a str,
    /// The client's address as Kafka shows it (`/127.0.0.1`), or empty if unknown.
    pub(crate) client_host: &'a str,
}

/// Partition count of a topic, `None` if it does not exist.
pub(crate) type TopicPartitions<'a> = &'a dyn Fn(&str) -> Option<i32>;

/// Key types of FindCoordinator.
pub(crate) const KEY_TYPE_GROUP: i8 = 0;
pub(crate) const KEY_TYPE_TRANSACTION: i8 = 1;

/// The operations DescribeGroups v3+ reports when asked (no authorizer: all of a group's:
/// READ, DELETE, DESCRIBE).
const GROUP_AUTHORIZED_OPERATIONS: i32 = super::authorized::GROUP;

fn s(v: impl Into<String>) -> KStr {
    KStr::from(v.into())
}

fn text(k: &KStr) -> String {
    k.as_str().to_owned()
}

pub(crate) fn find_coordinator(
    node: &CoordinatorNode,
    req: FindCoordinatorRequest,
    version: i16,
) -> ResponseBody {
    find_coordinator_with(
        &|key, key_type| group_key(key, key_type).map(|()| node.clone()),
        req,
        version,
    )
}

/// Whether a FindCoordinator key is of a kind there is a coordinator for: a group's or a
/// transactional id's.
pub(crate) fn group_key(_key: &KStr, key_type: i8) -> Result<(), (ErrorCode, String)> {
    match key_type {
        KEY_TYPE_GROUP | KEY_TYPE_TRANSACTION => Ok(()),
        other => Err((
            ErrorCode::INVALID_REQUEST,
            format!("unknown coordinator key type {other}"),
        )),
    }
}

/// Where a coordinator key (`key`, of `key_type`) is coordinated, or why it is not.
pub(crate) type Locate<'a> = &'a dyn Fn(&KStr, i8) -> Result<CoordinatorNode, (ErrorCode, String)>;

/// FindCoordinator with `locate` answering each key (v4+ asks for several at once).
pub(crate) fn find_coordinator_with(
    locate: Locate<'_>,
    req: FindCoordinatorRequest,
    version: i16,
) -> ResponseBody {
    let key_type = if version >= 1 {
        req.key_type
    } else {
        KEY_TYPE_GROUP
    };
    let response = if version >= 4 {
        FindCoordinatorResponse {
            coordinators: req
                .coordinator_keys
                .iter()
                .map(|key| match locate(key, key_type) {
                    Ok(node) => Coordinator {
                        key: key.clone(),
                        node_id: node.node_id,
                        host: s(node.host.clone()),
                        port: node.port,
                        ..Default::default()
                    },
                    Err((e, msg)) => Coordinator {
                        key: key.clone(),
                        node_id: -1,
                        host: KStr::default(),
                        port: -1,
                        error_code: e.0,
                        error_message: Some(s(msg)),
                        ..Default::default()
                    },
                })
                .collect(),
            ..Default::default()
        }
    } else {
        match locate(&req.key, key_type) {
            Ok(node) => FindCoordinatorResponse {
                node_id: node.node_id,
                host: s(node.host.clone()),
                port: node.port,
                ..Default::default()
            },
            Err((e, msg)) => FindCoordinatorResponse {
                error_code: e.0,
                error_message: (version >= 1).then(|| s(msg)),
                node_id: -1,
                host: KStr::default(),
                port: -1,
                ..Default::default()
            },
        }
    };
    ResponseBody::FindCoordinator(response)
}

pub(crate) async fn join_group(
    coordinator: &GroupCoordinator,
    client: ClientInfo<'_>,
    req: JoinGroupRequest,
    version: i16,
) -> ResponseBody {
    let request = group::JoinRequest {
        group_id: text(&req.group_id),
        member_id: text(&req.member_id),
        group_instance_id: req.group_instance_id.as_ref().map(text),
        client_id: client.client_id.to_owned(),
        client_host: client.client_host.to_owned(),
        session_timeout_ms: req.session_timeout_ms,
        // v0 has no rebalance timeout: Kafka uses the session timeout.
        rebalance_timeout_ms: if version >= 1 {
            req.rebalance_timeout_ms
        } else {
            req.session_timeout_ms
        },
        protocol_type: text(&req.protocol_type),
        protocols: req
            .protocols
            .iter()
            .map(|p| group::Protocol {
                name: text(&p.name),
                metadata: p.metadata.clone(),
            })
            .collect(),
        require_known_member_id: version >= 4,
        supports_skip_assignment: version >= 9,
        reason: req.reason.as_ref().map(text),
    };
    let answer = coordinator.join(request).await;
    ResponseBody::JoinGroup(Box::new(join_response(answer, version)))
}

pub(crate) fn join_response(a: group::JoinResponse, version: i16) -> JoinGroupResponse {
    JoinGroupResponse {
        error_code: a.error.0,
        generation_id: a.generation_id,
        protocol_type: if version >= 7 {
            a.protocol_type.map(s)
        } else {
            None
        },
        // Not nullable before v7.
        protocol_name: if version >= 7 {
            a.protocol_name.map(s)
        } else {
            Some(s(a.protocol_name.unwrap_or_default()))
        },
        leader: s(a.leader),
        skip_assignment: version >= 9 && a.skip_assignment,
        member_id: s(a.member_id),
        members: a
            .members
            .into_iter()
            .map(|m| JoinGroupResponseMember {
                member_id: s(m.member_id),
                group_instance_id: if version >= 5 {
                    m.group_instance_id.map(s)
                } else {
                    None
                },
                metadata: m.metadata,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

pub(crate) async fn sync_group(
    coordinator: &GroupCoordinator,
    req: SyncGroupRequest,
    version: i16,
) -> ResponseBody {
    let request = group::SyncRequest {
        group_id: text(&req.group_id),
        generation_id: req.generation_id,
        member_id: text(&req.member_id),
        group_instance_id: req.group_instance_id.as_ref().map(text),
        protocol_type: req.protocol_type.as_ref().map(text),
        protocol_name: req.protocol_name.as_ref().map(text),
        assignments: req
            .assignments
            .iter()
            .map(|a| (text(&a.member_id), a.assignment.clone()))
            .collect(),
    };
    let a = coordinator.sync(request).await;
    let v5 = version >= 5;
    ResponseBody::SyncGroup(SyncGroupResponse {
        error_code: a.error.0,
        protocol_type: if v5 { a.protocol_type.map(s) } else { None },
        protocol_name: if v5 { a.protocol_name.map(s) } else { None },
        assignment: a.assignment,
        ..Default::default()
    })
}

pub(crate) fn heartbeat(
    coordinator: &GroupCoordinator,
    req: HeartbeatRequest,
    _version: i16,
) -> ResponseBody {
    let error = coordinator.heartbeat(&group::HeartbeatRequest {
        group_id: text(&req.group_id),
        generation_id: req.generation_id,
        member_id: text(&req.member_id),
        group_instance_id: req.group_instance_id.as_ref().map(text),
    });
    ResponseBody::Heartbeat(HeartbeatResponse {
        error_code: error.0,
        ..Default::default()
    })
}

pub(crate) fn leave_group(
    coordinator: &GroupCoordinator,
    req: LeaveGroupRequest,
    version: i16,
) -> ResponseBody {
    let members: Vec<group::LeavingMember> = if version >= 3 {
        req.members
            .iter()
            .map(|m| group::LeavingMember {
                member_id: text(&m.member_id),
                group_instance_id: m.group_instance_id.as_ref().map(text),
            })
            .collect()
    } else {
        vec![group::LeavingMember {
            member_id: text(&req.member_id),
            group_instance_id: None,
        }]
    };
    let a = coordinator.leave(req.group_id.as_str(), &members);
    let response = if version >= 3 {
        LeaveGroupResponse {
            error_code: a.error.0,
            members: a
                .members
                .into_iter()
                .map(|(m, e)| MemberResponse {
                    member_id: s(m.member_id),
                    group_instance_id: m.group_instance_id.map(s),
                    error_code: e.0,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    } else {
        // One member: its error is the answer's.
        let member_error = a
            .members
            .iter()
            .map(|(_, e)| *e)
            .find(|e| *e != ErrorCode::NONE)
            .unwrap_or(ErrorCode::NONE);
        let error = if a.error != ErrorCode::NONE {
            a.error
        } else {
            member_error
        };
        LeaveGroupResponse {
            error_code: error.0,
            ..Default::default()
        }
    };
    ResponseBody::LeaveGroup(response)
}

/// Whether `partition` of `topic` exists, looking each topic up once.
struct TopicCache<'a> {
    lookup: TopicPartitions<'a>,
    seen: BTreeMap<String, Option<i32>>,
}

impl<'a> TopicCache<'a> {
    fn new(lookup: TopicPartitions<'a>) -> Self {
        Self {
            lookup,
            seen: BTreeMap::new(),
        }
    }

    fn exists(&mut self, topic: &str, partition: i32) -> bool {
        let lookup = self.lookup;
        let count = *self
            .seen
            .entry(topic.to_owned())
            .or_insert_with(|| lookup(topic));
        count.is_some_and(|n| (0..n).contains(&partition))
    }
}

/// OffsetCommit. The answer is a future (with nothing borrowed) that resolves once the
/// coordinator acknowledged the commit's records.
pub(crate) fn offset_commit(
    coordinator: &GroupCoordinator,
    topics: TopicPartitions<'_>,
    req: OffsetCommitRequest,
    version: i16,
) -> impl std::future::Future<Output = ResponseBody> + Send + use<> {
    let mut cache = TopicCache::new(topics);
    // (topic index, partition index) of each partition handed to the coordinator.
    let mut slots = Vec::new();
    let mut partitions = Vec::new();
    let mut out: Vec<OffsetCommitResponseTopic> = Vec::with_capacity(req.topics.len());
    for (ti, t) in req.topics.iter().enumerate() {
        let mut results = Vec::with_capacity(t.partitions.len());
        for (pi, p) in t.partitions.iter().enumerate() {
            let error = if cache.exists(&t.name, p.partition_index) {
                slots.push((ti, pi));
                partitions.push(group::CommitPartition {
                    topic: text(&t.name),
                    partition: p.partition_index,
                    offset: p.committed_offset,
                    leader_epoch: if version >= 6 {
                        p.committed_leader_epoch
                    } else {
                        -1
                    },
                    metadata: p.committed_metadata.as_ref().map(text),
                    commit_timestamp: (version == 1 && p.commit_timestamp != -1)
                        .then_some(p.commit_timestamp),
                });
                ErrorCode::NONE
            } else {
                ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
            };
            results.push(OffsetCommitResponsePartition {
                partition_index: p.partition_index,
                error_code: error.0,
                ..Default::default()
            });
        }
        out.push(OffsetCommitResponseTopic {
            name: t.name.clone(),
            partitions: results,
            ..Default::default()
        });
    }
    let committed = (!partitions.is_empty()).then(|| {
        let request = group::CommitRequest {
            group_id: text(&req.group_id),
            // v0 commits carry no generation: they are simple commits.
            generation_id: if version >= 1 {
                req.generation_id_or_member_epoch
            } else {
                -1
            },
            member_id: if version >= 1 {
                text(&req.member_id)
            } else {
                String::new()
            },
            group_instance_id: req.group_instance_id.as_ref().map(text),
            retention_ms: ((2..=4).contains(&version) && req.retention_time_ms != -1)
                .then_some(req.retention_time_ms),
            partitions,
        };
        coordinator.commit_offsets(&request)
    });
    async move {
        if let Some(committed) = committed {
            let errors = committed.await;
            for ((ti, pi), e) in slots.into_iter().zip(errors) {
                if let Some(p) = out.get_mut(ti).and_then(|t| t.partitions.get_mut(pi)) {
                    p.error_code = e.0;
                }
            }
        }
        ResponseBody::OffsetCommit(OffsetCommitResponse {
            topics: out,
            ..Default::default()
        })
    }
}

/// TxnOffsetCommit: a producer's offsets for a group, pending until its transaction ends.
/// The answer is a future (with nothing borrowed) that resolves once the coordinator's
/// transactional batch is acknowledged. Errors as Kafka answers each version: PRODUCER_FENCED
/// is INVALID_PRODUCER_EPOCH before v2, COORDINATOR_LOAD_IN_PROGRESS is
/// COORDINATOR_NOT_AVAILABLE before v2 (clients before KAFKA-7296 did not expect it).
pub(crate) fn txn_offset_commit(
    coordinator: &GroupCoordinator,
    topics: TopicPartitions<'_>,
    req: TxnOffsetCommitRequest,
    version: i16,
) -> impl std::future::Future<Output = ResponseBody> + Send + use<> {
    let mut cache = TopicCache::new(topics);
    let mut slots = Vec::new();
    let mut partitions = Vec::new();
    let mut out: Vec<TxnOffsetCommitResponseTopic> = Vec::with_capacity(req.topics.len());
    for (ti, t) in req.topics.iter().enumerate() {
        let mut results = Vec::with_capacity(t.partitions.len());
        for (pi, p) in t.partitions.iter().enumerate() {
            let error = if cache.exists(&t.name, p.partition_index) {
                slots.push((ti, pi));
                partitions.push(group::CommitPartition {
                    topic: text(&t.name),
                    partition: p.partition_index,
                    offset: p.committed_offset,
                    leader_epoch: if version >= 2 {
                        p.committed_leader_epoch
                    } else {
                        -1
                    },
                    metadata: p.committed_metadata.as_ref().map(text),
                    commit_timestamp: None,
                });
                ErrorCode::NONE
            } else {
                ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
            };
            results.push(TxnOffsetCommitResponsePartition {
                partition_index: p.partition_index,
                error_code: error.0,
                ..Default::default()
            });
        }
        out.push(TxnOffsetCommitResponseTopic {
            name: t.name.clone(),
            partitions: results,
            ..Default::default()
        });
    }
    let committed = (!partitions.is_empty()).then(|| {
        let v3 = version >= 3;
        let request = group::TxnCommitRequest {
            transactional_id: text(&req.transactional_id),
            group_id: text(&req.group_id),
            producer_id: req.producer_id,
            producer_epoch: req.producer_epoch,
            generation_id: if v3 { req.generation_id } else { -1 },
            member_id: if v3 {
                text(&req.member_id)
            } else {
                String::new()
            },
            group_instance_id: if v3 {
                req.group_instance_id.as_ref().map(text)
            } else {
                None
            },
            partitions,
        };
        coordinator.txn_commit_offsets(&request)
    });
    async move {
        if let Some(committed) = committed {
            let errors = committed.await;
            for ((ti, pi), e) in slots.into_iter().zip(errors) {
                if let Some(p) = out.get_mut(ti).and_then(|t| t.partitions.get_mut(pi)) {
                    p.error_code = txn_offset_commit_error(e, version).0;
                }
            }
        }
        ResponseBody::TxnOffsetCommit(TxnOffsetCommitResponse {
            topics: out,
            ..Default::default()
        })
    }
}

/// A TxnOffsetCommit error as a client of `version` is sent it.
fn txn_offset_commit_error(e: ErrorCode, version: i16) -> ErrorCode {
    let e = crate::txn::error_for_version(crate::txn::TxnApi::TxnOffsetCommit, version, e);
    if version < 2 && e == ErrorCode::COORDINATOR_LOAD_IN_PROGRESS {
        ErrorCode::COORDINATOR_NOT_AVAILABLE
    } else {
        e
    }
}

/// Committed offsets grouped by topic, topics in first-seen order.
fn by_topic(fetched: Vec<FetchedOffset>) -> Vec<(String, Vec<FetchedOffset>)> {
    let mut out: Vec<(String, Vec<FetchedOffset>)> = Vec::new();
    for f in fetched {
        match out.iter_mut().find(|(t, _)| *t == f.topic) {
            Some((_, list)) => list.push(f),
            None => out.push((f.topic.clone(), vec![f])),
        }
    }
    out
}

pub(crate) fn offset_fetch(
    coordinator: &GroupCoordinator,
    req: OffsetFetchRequest,
    version: i16,
) -> ResponseBody {
    let response = if version >= 8 {
        let groups = req
            .groups
            .iter()
            .map(|g| {
                let topics: Option<Vec<(String, Vec<i32>)>> = g.topics.as_ref().map(|ts| {
                    ts.iter()
                        .map(|t| (text(&t.name), t.partition_indexes.clone()))
                        .collect()
                });
                let fetched = coordinator.fetch_offsets(
                    g.group_id.as_str(),
                    topics.as_deref(),
                    req.require_stable,
                );
                OffsetFetchResponseGroup {
                    group_id: g.group_id.clone(),
                    topics: by_topic(fetched)
                        .into_iter()
                        .map(|(name, parts)| OffsetFetchResponseTopics {
                            name: s(name),
                            partitions: parts
                                .into_iter()
                                .map(|p| OffsetFetchResponsePartitions {
                                    partition_index: p.partition,
                                    committed_offset: p.offset,
                                    committed_leader_epoch: p.leader_epoch,
                                    metadata: Some(s(p.metadata)),
                                    error_code: p.error.0,
                                    ..Default::default()
                                })
                                .collect(),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                }
            })
            .collect();
        OffsetFetchResponse {
            groups,
            ..Default::default()
        }
    } else {
        // v0-1 cannot ask for "all topics"; treat a missing list as an empty one there.
        let topics: Option<Vec<(String, Vec<i32>)>> = match req.topics.as_ref() {
            Some(ts) => Some(
                ts.iter()
                    .map(|t| (text(&t.name), t.partition_indexes.clone()))
                    .collect(),
            ),
            None if version < 2 => Some(Vec::new()),
            None => None,
        };
        let fetched =
            coordinator.fetch_offsets(req.group_id.as_str(), topics.as_deref(), req.require_stable);
        OffsetFetchResponse {
            topics: by_topic(fetched)
                .into_iter()
                .map(|(name, parts)| OffsetFetchResponseTopic {
                    name: s(name),
                    partitions: parts
                        .into_iter()
                        .map(|p| OffsetFetchResponsePartition {
                            partition_index: p.partition,
                            committed_offset: p.offset,
                            committed_leader_epoch: if version >= 5 { p.leader_epoch } else { -1 },
                            metadata: Some(s(p.metadata)),
                            error_code: p.error.0,
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    };
    ResponseBody::OffsetFetch(response)
}

pub(crate) fn describe_groups(
    coordinator: &GroupCoordinator,
    req: DescribeGroupsRequest,
    version: i16,
) -> ResponseBody {
    let groups = req
        .groups
        .iter()
        .map(|id| {
            let d = coordinator.describe(id.as_str());
            DescribedGroup {
                error_code: ErrorCode::NONE.0,
                group_id: id.clone(),
                group_state: KStr::from_static(d.state.as_str()),
                protocol_type: s(d.protocol_type),
                protocol_data: s(d.protocol_data),
                members: d
                    .members
                    .into_iter()
                    .map(|m| DescribedGroupMember {
                        member_id: s(m.member_id),
                        group_instance_id: if version >= 4 {
                            m.group_instance_id.map(s)
                        } else {
                            None
                        },
                        client_id: s(m.client_id),
                        client_host: s(m.client_host),
                        member_metadata: m.metadata,
                        member_assignment: m.assignment,
                        ..Default::default()
                    })
                    .collect(),
                authorized_operations: if version >= 3 && req.include_authorized_operations {
                    GROUP_AUTHORIZED_OPERATIONS
                } else {
                    i32::MIN
                },
                ..Default::default()
            }
        })
        .collect();
    ResponseBody::DescribeGroups(DescribeGroupsResponse {
        groups,
        ..Default::default()
    })
}

pub(crate) fn list_groups(
    coordinator: &GroupCoordinator,
    req: ListGroupsRequest,
    version: i16,
) -> ResponseBody {
    let states: Vec<&str> = if version >= 4 {
        req.states_filter.iter().map(|s| s.as_str()).collect()
    } else {
        Vec::new()
    };
    let types: Vec<&str> = if version >= 5 {
        req.types_filter.iter().map(|s| s.as_str()).collect()
    } else {
        Vec::new()
    };
    let groups = coordinator
        .list(&states, &types)
        .into_iter()
        .map(|g| ListedGroup {
            group_id: s(g.group_id),
            protocol_type: s(g.protocol_type),
            group_state: if version >= 4 {
                KStr::from_static(g.state.as_str())
            } else {
                KStr::default()
            },
            group_type: if version >= 5 {
                KStr::from_static(CLASSIC_GROUP_TYPE)
            } else {
                KStr::default()
            },
            ..Default::default()
        })
        .collect();
    ResponseBody::ListGroups(ListGroupsResponse {
        groups,
        ..Default::default()
    })
}

pub(crate) fn delete_groups(
    coordinator: &GroupCoordinator,
    req: DeleteGroupsRequest,
    _version: i16,
) -> ResponseBody {
    let ids: Vec<String> = req.groups_names.iter().map(text).collect();
    let errors = coordinator.delete_groups(&ids);
    let results = req
        .groups_names
        .into_iter()
        .zip(errors)
        .map(|(group_id, e)| DeletableGroupResult {
            group_id,
            error_code: e.0,
            ..Default::default()
        })
        .collect();
    ResponseBody::DeleteGroups(DeleteGroupsResponse {
        results,
        ..Default::default()
    })
}

pub(crate) fn offset_delete(
    coordinator: &GroupCoordinator,
    topics: TopicPartitions<'_>,
    req: OffsetDeleteRequest,
    _version: i16,
) -> ResponseBody {
    if req.group_id.is_empty() {
        return ResponseBody::OffsetDelete(OffsetDeleteResponse {
            error_code: ErrorCode::INVALID_GROUP_ID.0,
            ..Default::default()
        });
    }
    let mut cache = TopicCache::new(topics);
    let mut slots = Vec::new();
    let mut partitions = Vec::new();
    let mut out: Vec<OffsetDeleteResponseTopic> = Vec::with_capacity(req.topics.len());
    for (ti, t) in req.topics.iter().enumerate() {
        let mut results = Vec::with_capacity(t.partitions.len());
        for (pi, p) in t.partitions.iter().enumerate() {
            let error = if cache.exists(&t.name, p.partition_index) {
                slots.push((ti, pi));
                partitions.push((text(&t.name), p.partition_index));
                ErrorCode::NONE
            } else {
                ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
            };
            results.push(OffsetDeleteResponsePartition {
                partition_index: p.partition_index,
                error_code: error.0,
            });
        }
        out.push(OffsetDeleteResponseTopic {
            name: t.name.clone(),
            partitions: results,
        });
    }
    let response = match coordinator.delete_offsets(req.group_id.as_str(), &partitions) {
        Err(e) => OffsetDeleteResponse {
            error_code: e.0,
            ..Default::default()
        },
        Ok(errors) => {
            for ((ti, pi), e) in slots.into_iter().zip(errors) {
                if let Some(p) = out.get_mut(ti).and_then(|t| t.partitions.get_mut(pi)) {
                    p.error_code = e.0;
                }
            }
            OffsetDeleteResponse {
                topics: out,
                ..Default::default()
            }
        }
    };
    ResponseBody::OffsetDelete(response)
}

#[cfg(test)]
mod tests;
