//! OffsetCommit, TxnOffsetCommit, OffsetFetch, OffsetDelete: a group's committed offsets.
//! Partitions of topics that do not exist are answered UNKNOWN_TOPIC_OR_PARTITION without
//! asking the coordinator.
//!
//! Authorization as Kafka's `KafkaApis`: OffsetCommit needs READ on the group (else every
//! partition GROUP_AUTHORIZATION_FAILED) and READ on each topic; TxnOffsetCommit WRITE on the
//! transactional id first, then the same; OffsetDelete DELETE on the group (the answer's
//! error) and READ on each topic; OffsetFetch DESCRIBE on each group and leaves out the
//! topics the request may not DESCRIBE when it asked for all of them, answering them
//! TOPIC_AUTHORIZATION_FAILED when it named them. A topic refused is refused before it is
//! looked up, so a refusal never tells whether the topic exists.

use std::collections::BTreeMap;

use kafka_auth::acl::AclOperation;
use kafka_protocol::error_code::ErrorCode;
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
    OffsetCommitRequest, OffsetCommitResponse, OffsetDeleteRequest, OffsetDeleteResponse,
    OffsetFetchRequest, OffsetFetchResponse, ResponseBody, TxnOffsetCommitRequest,
    TxnOffsetCommitResponse,
};

use super::{Permits, s, text};
use crate::group::{self, FetchedOffset, GroupCoordinator};

/// Partition count of a topic, `None` if it does not exist.
pub(crate) type TopicPartitions<'a> = &'a dyn Fn(&str) -> Option<i32>;

/// Whether the request may do `op` on a topic and whether a partition of it exists, asking
/// once per topic.
struct TopicCache<'a> {
    lookup: TopicPartitions<'a>,
    authz: &'a dyn Permits,
    op: AclOperation,
    /// Per topic: `None` if refused, else its partition count (`None` if it does not exist).
    seen: BTreeMap<String, Option<Option<i32>>>,
}

impl<'a> TopicCache<'a> {
    fn new(lookup: TopicPartitions<'a>, authz: &'a dyn Permits, op: AclOperation) -> Self {
        Self {
            lookup,
            authz,
            op,
            seen: BTreeMap::new(),
        }
    }

    /// TOPIC_AUTHORIZATION_FAILED for a topic the request may not `op`, then
    /// UNKNOWN_TOPIC_OR_PARTITION for a partition that does not exist, else NONE (Kafka's
    /// order).
    fn check(&mut self, topic: &str, partition: i32) -> ErrorCode {
        let (lookup, authz, op) = (self.lookup, self.authz, self.op);
        let known = *self
            .seen
            .entry(topic.to_owned())
            .or_insert_with(|| authz.topic(op, topic).then(|| lookup(topic)));
        match known {
            None => ErrorCode::TOPIC_AUTHORIZATION_FAILED,
            Some(count) if count.is_some_and(|n| (0..n).contains(&partition)) => ErrorCode::NONE,
            Some(_) => ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
        }
    }
}

/// OffsetCommit. The answer is a future (with nothing borrowed) that resolves once the
/// coordinator acknowledged the commit's records.
pub(crate) fn offset_commit(
    coordinator: &GroupCoordinator,
    authz: &dyn Permits,
    topics: TopicPartitions<'_>,
    req: OffsetCommitRequest,
    version: i16,
) -> impl std::future::Future<Output = ResponseBody> + Send + use<> {
    // Refused for the group: every partition answered so, nothing committed.
    let refused = (!authz.group(AclOperation::Read, &req.group_id))
        .then_some(ErrorCode::GROUP_AUTHORIZATION_FAILED);
    let mut cache = TopicCache::new(topics, authz, AclOperation::Read);
    // (topic index, partition index) of each partition handed to the coordinator.
    let mut slots = Vec::new();
    let mut partitions = Vec::new();
    let mut out: Vec<OffsetCommitResponseTopic> = Vec::with_capacity(req.topics.len());
    for (ti, t) in req.topics.iter().enumerate() {
        let mut results = Vec::with_capacity(t.partitions.len());
        for (pi, p) in t.partitions.iter().enumerate() {
            let error = refused.unwrap_or_else(|| cache.check(&t.name, p.partition_index));
            if error == ErrorCode::NONE {
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
            }
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
        coordinator.commit_offsets_at(&request, version)
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
    authz: &dyn Permits,
    topics: TopicPartitions<'_>,
    req: TxnOffsetCommitRequest,
    version: i16,
) -> impl std::future::Future<Output = ResponseBody> + Send + use<> {
    // WRITE on the transactional id, then READ on the group (Kafka's order); refused, every
    // partition is answered so and nothing is committed.
    let refused = if !authz.transactional_id(AclOperation::Write, &req.transactional_id) {
        Some(ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    } else if !authz.group(AclOperation::Read, &req.group_id) {
        Some(ErrorCode::GROUP_AUTHORIZATION_FAILED)
    } else {
        None
    };
    let mut cache = TopicCache::new(topics, authz, AclOperation::Read);
    let mut slots = Vec::new();
    let mut partitions = Vec::new();
    let mut out: Vec<TxnOffsetCommitResponseTopic> = Vec::with_capacity(req.topics.len());
    for (ti, t) in req.topics.iter().enumerate() {
        let mut results = Vec::with_capacity(t.partitions.len());
        for (pi, p) in t.partitions.iter().enumerate() {
            let error = refused.unwrap_or_else(|| cache.check(&t.name, p.partition_index));
            if error == ErrorCode::NONE {
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
            }
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
            generation_id: if v3 {
                req.generation_id_or_member_epoch
            } else {
                -1
            },
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

/// One group's offsets as the request may see them (Kafka's `fetchOffsetsForGroup` /
/// `fetchAllOffsetsForGroup`): GROUP_AUTHORIZATION_FAILED without DESCRIBE on the group; all
/// offsets (`topics` `None`) without the topics the request may not DESCRIBE; named topics it
/// may not DESCRIBE answered TOPIC_AUTHORIZATION_FAILED after the others, not looked up.
fn fetch_group(
    coordinator: &GroupCoordinator,
    authz: &dyn Permits,
    group_id: &str,
    topics: Option<Vec<(String, Vec<i32>)>>,
    require_stable: bool,
    member: Option<(Option<&str>, i32)>,
) -> Result<Vec<FetchedOffset>, ErrorCode> {
    if !authz.group(AclOperation::Describe, group_id) {
        return Err(ErrorCode::GROUP_AUTHORIZATION_FAILED);
    }
    coordinator.check_group(group_id)?;
    if let Some((member_id, member_epoch)) = member {
        // v9+: a consumer group's member fetches at its epoch (STALE_MEMBER_EPOCH).
        coordinator.check_consumer_fetch(group_id, member_id, member_epoch)?;
    }
    let may_describe = |topic: &str| authz.topic(AclOperation::Describe, topic);
    let Some(topics) = topics else {
        let mut all = coordinator.fetch_offsets(group_id, None, require_stable);
        let mut seen: BTreeMap<String, bool> = BTreeMap::new();
        all.retain(|f| {
            *seen
                .entry(f.topic.clone())
                .or_insert_with(|| may_describe(&f.topic))
        });
        return Ok(all);
    };
    let (allowed, refused): (Vec<_>, Vec<_>) = topics
        .into_iter()
        .partition(|(topic, _)| may_describe(topic));
    let mut fetched = coordinator.fetch_offsets(group_id, Some(&allowed), require_stable);
    for (topic, partitions) in refused {
        fetched.extend(partitions.into_iter().map(|partition| FetchedOffset {
            topic: topic.clone(),
            partition,
            offset: -1,
            leader_epoch: -1,
            metadata: String::new(),
            error: ErrorCode::TOPIC_AUTHORIZATION_FAILED,
        }));
    }
    Ok(fetched)
}

pub(crate) fn offset_fetch(
    coordinator: &GroupCoordinator,
    authz: &dyn Permits,
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
                let fetched = match fetch_group(
                    coordinator,
                    authz,
                    g.group_id.as_str(),
                    topics,
                    req.require_stable,
                    (version >= 9).then_some((g.member_id.as_deref(), g.member_epoch)),
                ) {
                    Ok(fetched) => fetched,
                    Err(e) => {
                        return OffsetFetchResponseGroup {
                            group_id: g.group_id.clone(),
                            error_code: e.0,
                            ..Default::default()
                        };
                    }
                };
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
        let (error, fetched) = match fetch_group(
            coordinator,
            authz,
            req.group_id.as_str(),
            topics.clone(),
            req.require_stable,
            None,
        ) {
            Ok(fetched) => (ErrorCode::NONE, fetched),
            // Before v2 there is no group error: each partition asked for carries it, as
            // Kafka's error answer of those versions does.
            Err(e) if version < 2 => {
                let each = topics
                    .unwrap_or_default()
                    .into_iter()
                    .flat_map(|(topic, ps)| {
                        ps.into_iter().map(move |partition| FetchedOffset {
                            topic: topic.clone(),
                            partition,
                            offset: -1,
                            leader_epoch: -1,
                            metadata: String::new(),
                            error: e,
                        })
                    });
                (ErrorCode::NONE, each.collect())
            }
            Err(e) => (e, Vec::new()),
        };
        OffsetFetchResponse {
            error_code: error.0,
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

pub(crate) fn offset_delete(
    coordinator: &GroupCoordinator,
    authz: &dyn Permits,
    topics: TopicPartitions<'_>,
    req: OffsetDeleteRequest,
    _version: i16,
) -> ResponseBody {
    if !authz.group(AclOperation::Delete, &req.group_id) {
        return ResponseBody::OffsetDelete(OffsetDeleteResponse {
            error_code: ErrorCode::GROUP_AUTHORIZATION_FAILED.0,
            ..Default::default()
        });
    }
    if req.group_id.is_empty() {
        return ResponseBody::OffsetDelete(OffsetDeleteResponse {
            error_code: ErrorCode::INVALID_GROUP_ID.0,
            ..Default::default()
        });
    }
    let mut cache = TopicCache::new(topics, authz, AclOperation::Read);
    let mut slots = Vec::new();
    let mut partitions = Vec::new();
    let mut out: Vec<OffsetDeleteResponseTopic> = Vec::with_capacity(req.topics.len());
    for (ti, t) in req.topics.iter().enumerate() {
        let mut results = Vec::with_capacity(t.partitions.len());
        for (pi, p) in t.partitions.iter().enumerate() {
            let error = cache.check(&t.name, p.partition_index);
            if error == ErrorCode::NONE {
                slots.push((ti, pi));
                partitions.push((text(&t.name), p.partition_index));
            }
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
