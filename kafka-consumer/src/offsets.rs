//! Offset requests: ListOffsets (resets, beginning/end offsets, offsets for times),
//! OffsetForLeaderEpoch (KIP-320 validation), OffsetFetch and OffsetCommit (on the group
//! coordinator). Each has a pure builder for the negotiated version and a pure parser; the
//! async functions only route and send, and retry retriable failures until a deadline.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use kafka_net::{Cluster, CoordinatorType, NetError};
use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::{
    ApiKey, ListOffsetsRequest, ListOffsetsResponse, OffsetCommitRequest, OffsetCommitResponse,
    OffsetFetchRequest, OffsetFetchResponse, OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse, RequestBody, ResponseBody, list_offsets_request,
    offset_commit_request, offset_fetch_request, offset_for_leader_epoch_request,
};
use tokio::time::Instant;

use crate::error::ConsumerError;
use crate::types::{IsolationLevel, OffsetAndMetadata, TopicPartition};

/// One partition's answer to ListOffsets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ListedOffset {
    /// -1 when there is none (a timestamp after the last record).
    pub offset: i64,
    pub timestamp: Option<i64>,
    pub leader_epoch: Option<i32>,
}

/// Who commits: a simple consumer (generation -1, no member id) until group membership
/// hands out a generation and member id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitIdentity {
    pub generation: i32,
    pub member_id: String,
    pub group_instance_id: Option<String>,
}

impl Default for CommitIdentity {
    fn default() -> Self {
        Self {
            generation: -1,
            member_id: String::new(),
            group_instance_id: None,
        }
    }
}

fn by_topic<T>(
    items: impl IntoIterator<Item = (TopicPartition, T)>,
) -> BTreeMap<String, Vec<(i32, T)>> {
    let mut out: BTreeMap<String, Vec<(i32, T)>> = BTreeMap::new();
    for (tp, v) in items {
        out.entry(tp.topic.to_string())
            .or_default()
            .push((tp.partition, v));
    }
    out
}

fn code_error(code: i16, context: impl FnOnce() -> String) -> Result<(), ConsumerError> {
    let code = ErrorCode(code);
    if code.is_ok() {
        Ok(())
    } else {
        Err(ConsumerError::kafka(code, context()))
    }
}

// ---------------------------------------------------------------------------------------
// ListOffsets

/// A ListOffsets request for `(partition, timestamp, current leader epoch)` items.
pub fn list_offsets_request(
    items: &[(TopicPartition, i64, Option<i32>)],
    isolation: IsolationLevel,
    version: i16,
) -> ListOffsetsRequest {
    let topics = by_topic(items.iter().map(|(tp, ts, e)| (tp.clone(), (*ts, *e))));
    ListOffsetsRequest {
        replica_id: -1,
        isolation_level: if version >= 2 { isolation.code() } else { 0 },
        topics: topics
            .into_iter()
            .map(|(name, parts)| list_offsets_request::ListOffsetsTopic {
                name: KStr::from(name),
                partitions: parts
                    .into_iter()
                    .map(
                        |(p, (ts, epoch))| list_offsets_request::ListOffsetsPartition {
                            partition_index: p,
                            current_leader_epoch: if version >= 4 {
                                epoch.unwrap_or(-1)
                            } else {
                                -1
                            },
                            timestamp: ts,
                            ..Default::default()
                        },
                    )
                    .collect(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// Per-partition results of a ListOffsets answer.
pub fn parse_list_offsets(
    resp: &ListOffsetsResponse,
    version: i16,
) -> BTreeMap<TopicPartition, Result<ListedOffset, ConsumerError>> {
    let mut out = BTreeMap::new();
    for t in &resp.topics {
        for p in &t.partitions {
            let tp = TopicPartition::new(t.name.as_str(), p.partition_index);
            let r = code_error(p.error_code, || format!("ListOffsets {tp}")).map(|()| {
                if version == 0 {
                    ListedOffset {
                        offset: p.old_style_offsets.first().copied().unwrap_or(-1),
                        timestamp: None,
                        leader_epoch: None,
                    }
                } else {
                    ListedOffset {
                        offset: p.offset,
                        timestamp: Some(p.timestamp).filter(|t| *t >= 0),
                        leader_epoch: Some(p.leader_epoch).filter(|e| version >= 4 && *e >= 0),
                    }
                }
            });
            out.insert(tp, r);
        }
    }
    out
}

/// One ListOffsets request to broker `node`.
pub async fn list_offsets_on(
    cluster: &Cluster,
    node: i32,
    items: &[(TopicPartition, i64, Option<i32>)],
    isolation: IsolationLevel,
) -> Result<BTreeMap<TopicPartition, Result<ListedOffset, ConsumerError>>, ConsumerError> {
    let conn = cluster.connection(node).await?;
    let version = conn.version_for(ApiKey::ListOffsets)?;
    let req = list_offsets_request(items, isolation, version);
    let body = conn
        .request_at(RequestBody::ListOffsets(req), version)
        .await?;
    let ResponseBody::ListOffsets(resp) = body else {
        return Err(ConsumerError::BadResponse(format!(
            "ListOffsets answered with {}",
            body.message_name()
        )));
    };
    let mut out = parse_list_offsets(&resp, version);
    for (tp, _, _) in items {
        out.entry(tp.clone()).or_insert_with(|| {
            Err(ConsumerError::BadResponse(format!(
                "ListOffsets: no answer for {tp}"
            )))
        });
    }
    Ok(out)
}

/// Looks up offsets, routing each partition to its leader and retrying retriable failures
/// (refreshing metadata) until `deadline`.
pub async fn list_offsets(
    cluster: &Cluster,
    items: &[(TopicPartition, i64)],
    isolation: IsolationLevel,
    retry_backoff: Duration,
    deadline: Instant,
) -> Result<BTreeMap<TopicPartition, ListedOffset>, ConsumerError> {
    let mut done = BTreeMap::new();
    let mut pending: Vec<(TopicPartition, i64)> = items.to_vec();
    let started = Instant::now();
    let mut last: Option<ConsumerError> = None;
    let mut topics: Vec<String> = items.iter().map(|(tp, _)| tp.topic.to_string()).collect();
    topics.sort_unstable();
    topics.dedup();
    cluster.add_interest(topics.iter().cloned());
    loop {
        let meta = cluster.metadata();
        let mut by_node: BTreeMap<i32, Vec<(TopicPartition, i64, Option<i32>)>> = BTreeMap::new();
        let mut retry = Vec::new();
        for (tp, ts) in pending.drain(..) {
            match meta
                .topic(&tp.topic)
                .and_then(|t| t.partition(tp.partition))
            {
                Some(p) if p.leader >= 0 => by_node.entry(p.leader).or_default().push((
                    tp,
                    ts,
                    Some(p.leader_epoch).filter(|e| *e >= 0),
                )),
                _ => {
                    last = Some(ConsumerError::kafka(
                        ErrorCode::LEADER_NOT_AVAILABLE,
                        format!("no known leader for {tp}"),
                    ));
                    retry.push((tp, ts));
                }
            }
        }
        let calls = by_node.into_iter().map(|(node, parts)| async move {
            let r = list_offsets_on(cluster, node, &parts, isolation).await;
            (parts, r)
        });
        let answers = tokio::time::timeout_at(deadline, futures::future::join_all(calls))
            .await
            .map_err(|_| timeout("ListOffsets", started, last.as_ref()))?;
        for (parts, r) in answers {
            match r {
                Ok(mut results) => {
                    for (tp, ts, _) in parts {
                        match results.remove(&tp) {
                            Some(Ok(o)) => {
                                done.insert(tp, o);
                            }
                            Some(Err(e)) if retriable(&e) => {
                                last = Some(e);
                                retry.push((tp, ts));
                            }
                            Some(Err(e)) => return Err(e),
                            None => retry.push((tp, ts)),
                        }
                    }
                }
                Err(e) if retriable(&e) => {
                    last = Some(e);
                    retry.extend(parts.into_iter().map(|(tp, ts, _)| (tp, ts)));
                }
                Err(e) => return Err(e),
            }
        }
        if retry.is_empty() {
            return Ok(done);
        }
        pending = retry;
        backoff_and_refresh(
            cluster,
            retry_backoff,
            deadline,
            started,
            last.as_ref(),
            &topics,
        )
        .await?;
    }
}

// ---------------------------------------------------------------------------------------
// OffsetForLeaderEpoch

/// An OffsetForLeaderEpoch request for `(partition, current leader epoch, epoch to look up)`.
pub fn offset_for_leader_epoch_request(
    items: &[(TopicPartition, Option<i32>, i32)],
    version: i16,
) -> OffsetForLeaderEpochRequest {
    let topics = by_topic(items.iter().map(|(tp, cur, e)| (tp.clone(), (*cur, *e))));
    OffsetForLeaderEpochRequest {
        // A consumer, not a replica (v3+; before, the request meant a follower).
        replica_id: if version >= 3 { -1 } else { -2 },
        topics: topics
            .into_iter()
            .map(
                |(name, parts)| offset_for_leader_epoch_request::OffsetForLeaderTopic {
                    topic: KStr::from(name),
                    partitions: parts
                        .into_iter()
                        .map(|(p, (current, epoch))| {
                            offset_for_leader_epoch_request::OffsetForLeaderPartition {
                                partition: p,
                                current_leader_epoch: if version >= 2 {
                                    current.unwrap_or(-1)
                                } else {
                                    -1
                                },
                                leader_epoch: epoch,
                                ..Default::default()
                            }
                        })
                        .collect(),
                    ..Default::default()
                },
            )
            .collect(),
        ..Default::default()
    }
}

/// End offset and epoch per partition (`None`: the leader does not know the epoch).
pub type EpochEnds = BTreeMap<TopicPartition, Result<Option<(i64, i32)>, ConsumerError>>;

/// Per-partition results of an OffsetForLeaderEpoch answer.
pub fn parse_offset_for_leader_epoch(resp: &OffsetForLeaderEpochResponse) -> EpochEnds {
    let mut out = BTreeMap::new();
    for t in &resp.topics {
        for p in &t.partitions {
            let tp = TopicPartition::new(t.topic.as_str(), p.partition);
            let r = code_error(p.error_code, || format!("OffsetForLeaderEpoch {tp}")).map(|()| {
                (p.end_offset >= 0 && p.leader_epoch >= 0).then_some((p.end_offset, p.leader_epoch))
            });
            out.insert(tp, r);
        }
    }
    out
}

/// One OffsetForLeaderEpoch request to broker `node`. Brokers before v3 cannot answer a
/// consumer: that is [`NetError::UnsupportedApi`].
pub async fn offset_for_leader_epoch_on(
    cluster: &Cluster,
    node: i32,
    items: &[(TopicPartition, Option<i32>, i32)],
) -> Result<EpochEnds, ConsumerError> {
    let conn = cluster.connection(node).await?;
    let version = conn.version_for(ApiKey::OffsetForLeaderEpoch)?;
    if version < 3 {
        return Err(NetError::UnsupportedApi {
            api: ApiKey::OffsetForLeaderEpoch,
            detail: Some("consumers need v3+".into()),
        }
        .into());
    }
    let req = offset_for_leader_epoch_request(items, version);
    let body = conn
        .request_at(RequestBody::OffsetForLeaderEpoch(req), version)
        .await?;
    let ResponseBody::OffsetForLeaderEpoch(resp) = body else {
        return Err(ConsumerError::BadResponse(format!(
            "OffsetForLeaderEpoch answered with {}",
            body.message_name()
        )));
    };
    let mut out = parse_offset_for_leader_epoch(&resp);
    for (tp, _, _) in items {
        out.entry(tp.clone()).or_insert_with(|| {
            Err(ConsumerError::BadResponse(format!(
                "OffsetForLeaderEpoch: no answer for {tp}"
            )))
        });
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------
// OffsetFetch and OffsetCommit (group coordinator)

/// An OffsetFetch request for `partitions` of `group`.
pub fn offset_fetch_request(
    group: &str,
    partitions: &[TopicPartition],
    require_stable: bool,
    version: i16,
) -> OffsetFetchRequest {
    let topics = by_topic(partitions.iter().map(|tp| (tp.clone(), ())));
    if version >= 8 {
        OffsetFetchRequest {
            groups: vec![offset_fetch_request::OffsetFetchRequestGroup {
                group_id: KStr::from(group.to_owned()),
                topics: Some(
                    topics
                        .into_iter()
                        .map(
                            |(name, parts)| offset_fetch_request::OffsetFetchRequestTopics {
                                name: KStr::from(name),
                                partition_indexes: parts.into_iter().map(|(p, ())| p).collect(),
                                ..Default::default()
                            },
                        )
                        .collect(),
                ),
                ..Default::default()
            }],
            require_stable,
            ..Default::default()
        }
    } else {
        OffsetFetchRequest {
            group_id: KStr::from(group.to_owned()),
            topics: Some(
                topics
                    .into_iter()
                    .map(
                        |(name, parts)| offset_fetch_request::OffsetFetchRequestTopic {
                            name: KStr::from(name),
                            partition_indexes: parts.into_iter().map(|(p, ())| p).collect(),
                            ..Default::default()
                        },
                    )
                    .collect(),
            ),
            require_stable: version >= 7 && require_stable,
            ..Default::default()
        }
    }
}

/// Committed offsets per partition (`None`: nothing committed), or the group's error.
pub type Committed = BTreeMap<TopicPartition, Result<Option<OffsetAndMetadata>, ConsumerError>>;

fn committed_value(offset: i64, epoch: i32, metadata: Option<&KStr>) -> Option<OffsetAndMetadata> {
    (offset >= 0).then(|| OffsetAndMetadata {
        offset,
        leader_epoch: Some(epoch).filter(|e| *e >= 0),
        metadata: metadata.map(ToString::to_string).unwrap_or_default(),
    })
}

/// Parses an OffsetFetch answer.
pub fn parse_offset_fetch(
    resp: &OffsetFetchResponse,
    group: &str,
    version: i16,
) -> Result<Committed, ConsumerError> {
    let mut out = BTreeMap::new();
    if version >= 8 {
        let g = resp
            .groups
            .iter()
            .find(|g| g.group_id.as_str() == group)
            .ok_or_else(|| {
                ConsumerError::BadResponse(format!("OffsetFetch: no answer for {group}"))
            })?;
        code_error(g.error_code, || format!("OffsetFetch for group {group}"))?;
        for t in &g.topics {
            for p in &t.partitions {
                let tp = TopicPartition::new(t.name.as_str(), p.partition_index);
                let r = code_error(p.error_code, || format!("OffsetFetch {tp}")).map(|()| {
                    committed_value(
                        p.committed_offset,
                        p.committed_leader_epoch,
                        p.metadata.as_ref(),
                    )
                });
                out.insert(tp, r);
            }
        }
    } else {
        if version >= 2 {
            code_error(resp.error_code, || format!("OffsetFetch for group {group}"))?;
        }
        for t in &resp.topics {
            for p in &t.partitions {
                let tp = TopicPartition::new(t.name.as_str(), p.partition_index);
                let r = code_error(p.error_code, || format!("OffsetFetch {tp}")).map(|()| {
                    committed_value(
                        p.committed_offset,
                        p.committed_leader_epoch,
                        p.metadata.as_ref(),
                    )
                });
                out.insert(tp, r);
            }
        }
    }
    Ok(out)
}

/// An OffsetCommit request.
pub fn offset_commit_request(
    group: &str,
    who: &CommitIdentity,
    offsets: &BTreeMap<TopicPartition, OffsetAndMetadata>,
    version: i16,
) -> OffsetCommitRequest {
    let topics = by_topic(offsets.iter().map(|(tp, om)| (tp.clone(), om.clone())));
    OffsetCommitRequest {
        group_id: KStr::from(group.to_owned()),
        generation_id_or_member_epoch: if version >= 1 { who.generation } else { -1 },
        member_id: if version >= 1 {
            KStr::from(who.member_id.clone())
        } else {
            KStr::default()
        },
        group_instance_id: if version >= 7 {
            who.group_instance_id.clone().map(KStr::from)
        } else {
            None
        },
        retention_time_ms: -1,
        topics: topics
            .into_iter()
            .map(
                |(name, parts)| offset_commit_request::OffsetCommitRequestTopic {
                    name: KStr::from(name),
                    partitions: parts
                        .into_iter()
                        .map(
                            |(p, om)| offset_commit_request::OffsetCommitRequestPartition {
                                partition_index: p,
                                committed_offset: om.offset,
                                committed_leader_epoch: if version >= 6 {
                                    om.leader_epoch.unwrap_or(-1)
                                } else {
                                    -1
                                },
                                commit_timestamp: -1,
                                committed_metadata: Some(KStr::from(om.metadata)),
                                ..Default::default()
                            },
                        )
                        .collect(),
                    ..Default::default()
                },
            )
            .collect(),
        ..Default::default()
    }
}

/// The first partition error of an OffsetCommit answer, if any; partitions left out of
/// the answer count as failed.
pub fn parse_offset_commit(
    resp: &OffsetCommitResponse,
    offsets: &BTreeMap<TopicPartition, OffsetAndMetadata>,
) -> Result<(), ConsumerError> {
    let mut answered = 0usize;
    for t in &resp.topics {
        for p in &t.partitions {
            answered += 1;
            code_error(p.error_code, || {
                format!("OffsetCommit {}-{}", t.name, p.partition_index)
            })?;
        }
    }
    if answered < offsets.len() {
        return Err(ConsumerError::BadResponse(format!(
            "OffsetCommit answered {answered} of {} partitions",
            offsets.len()
        )));
    }
    Ok(())
}

fn coordinator_error(code: ErrorCode) -> bool {
    matches!(
        code,
        ErrorCode::NOT_COORDINATOR | ErrorCode::COORDINATOR_NOT_AVAILABLE
    )
}

/// Sends a request to the group coordinator at the negotiated version (`build` gets the
/// version). Connection failures and coordinator errors forget the cached coordinator.
pub async fn coordinator_call(
    cluster: &Cluster,
    group: &str,
    api: ApiKey,
    build: impl FnOnce(i16) -> RequestBody,
) -> Result<ResponseBody, ConsumerError> {
    let forget = |e: &NetError| {
        if e.is_retriable() || e.error_code().is_some_and(coordinator_error) {
            cluster.invalidate_coordinator(CoordinatorType::Group, group);
        }
    };
    let node = cluster
        .coordinator(CoordinatorType::Group, group)
        .await
        .inspect_err(forget)?;
    let conn = cluster.connection(node).await.inspect_err(forget)?;
    let version = conn.version_for(api)?;
    Ok(conn
        .request_at(build(version), version)
        .await
        .inspect_err(forget)?)
}

/// Reads committed offsets once (one request to the coordinator).
pub async fn fetch_committed_once(
    cluster: &Cluster,
    group: &str,
    partitions: &[TopicPartition],
    require_stable: bool,
) -> Result<Committed, ConsumerError> {
    let mut version = 0;
    let body = coordinator_call(cluster, group, ApiKey::OffsetFetch, |v| {
        version = v;
        RequestBody::OffsetFetch(offset_fetch_request(group, partitions, require_stable, v))
    })
    .await?;
    let ResponseBody::OffsetFetch(resp) = body else {
        return Err(ConsumerError::BadResponse(format!(
            "OffsetFetch answered with {}",
            body.message_name()
        )));
    };
    let out = parse_offset_fetch(&resp, group, version);
    if let Err(e) = &out {
        if e.error_code().is_some_and(coordinator_error) {
            cluster.invalidate_coordinator(CoordinatorType::Group, group);
        }
    }
    out
}

/// Commits once (one request to the coordinator).
pub async fn commit_once(
    cluster: &Cluster,
    group: &str,
    who: &CommitIdentity,
    offsets: &BTreeMap<TopicPartition, OffsetAndMetadata>,
) -> Result<(), ConsumerError> {
    let body = coordinator_call(cluster, group, ApiKey::OffsetCommit, |v| {
        RequestBody::from(offset_commit_request(group, who, offsets, v))
    })
    .await?;
    let ResponseBody::OffsetCommit(resp) = body else {
        return Err(ConsumerError::BadResponse(format!(
            "OffsetCommit answered with {}",
            body.message_name()
        )));
    };
    let out = parse_offset_commit(&resp, offsets);
    if let Err(e) = &out {
        if e.error_code().is_some_and(coordinator_error) {
            cluster.invalidate_coordinator(CoordinatorType::Group, group);
        }
    }
    out
}

/// Whether a failure may go away by trying again (a broker coming back counts).
pub fn retriable(e: &ConsumerError) -> bool {
    match e {
        ConsumerError::Net(NetError::NoBrokers(_) | NetError::MetadataTimeout { .. }) => true,
        ConsumerError::Kafka { code, .. } => {
            code.is_retriable() || *code == ErrorCode::COORDINATOR_LOAD_IN_PROGRESS
        }
        other => other.is_retriable(),
    }
}

fn timeout(what: &str, started: Instant, last: Option<&ConsumerError>) -> ConsumerError {
    ConsumerError::Timeout {
        what: what.to_owned(),
        after: started.elapsed(),
        last: last.map(ToString::to_string),
    }
}

async fn backoff_and_refresh(
    cluster: &Cluster,
    backoff: Duration,
    deadline: Instant,
    started: Instant,
    last: Option<&ConsumerError>,
    topics: &[String],
) -> Result<(), ConsumerError> {
    if Instant::now() + backoff >= deadline {
        return Err(timeout("ListOffsets", started, last));
    }
    tokio::time::sleep(backoff).await;
    let names: Vec<&str> = topics.iter().map(String::as_str).collect();
    if let Ok(Err(e)) = tokio::time::timeout_at(deadline, cluster.fetch_topics(&names)).await {
        tracing::debug!(error = %e, "metadata refresh before retry failed");
    }
    Ok(())
}

/// Runs `op` until it succeeds, fails for good, or `deadline` passes (then a timeout
/// naming `what` and the last failure), waiting `backoff` between attempts.
pub async fn retry_until<T, F, Fut>(
    what: &str,
    backoff: Duration,
    deadline: Instant,
    mut op: F,
) -> Result<T, ConsumerError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ConsumerError>>,
{
    let started = Instant::now();
    let mut last = None;
    loop {
        match tokio::time::timeout_at(deadline, op()).await {
            Err(_) => return Err(timeout(what, started, last.as_ref())),
            Ok(Ok(v)) => return Ok(v),
            Ok(Err(e)) if retriable(&e) => {
                tracing::debug!(what, error = %e, "retrying");
                last = Some(e);
                if Instant::now() + backoff >= deadline {
                    return Err(timeout(what, started, last.as_ref()));
                }
                tokio::time::sleep(backoff).await;
            }
            Ok(Err(e)) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::{offset_commit_response, offset_fetch_response};
    use kafka_protocol::{RequestHeader, encode_request};

    fn tps() -> Vec<TopicPartition> {
        vec![
            TopicPartition::new("a", 0),
            TopicPartition::new("a", 1),
            TopicPartition::new("b", 0),
        ]
    }

    fn encodes(body: RequestBody, version: i16) {
        let header = RequestHeader {
            request_api_key: body.api_key() as i16,
            request_api_version: version,
            ..Default::default()
        };
        if let Err(e) = encode_request(&header, &body) {
            panic!("{:?} v{version}: {e}", body.api_key());
        }
    }

    #[test]
    fn requests_encode_at_every_version() {
        let offsets: BTreeMap<_, _> = tps()
            .into_iter()
            .map(|tp| {
                (
                    tp,
                    OffsetAndMetadata::new(5)
                        .with_leader_epoch(Some(2))
                        .with_metadata("m"),
                )
            })
            .collect();
        let who = CommitIdentity::default();
        for v in 0..=9 {
            encodes(
                RequestBody::from(offset_commit_request("g", &who, &offsets, v)),
                v,
            );
            encodes(
                RequestBody::OffsetFetch(offset_fetch_request("g", &tps(), true, v)),
                v,
            );
        }
        let items: Vec<_> = tps().into_iter().map(|tp| (tp, -1, Some(3))).collect();
        for v in 0..=9 {
            encodes(
                RequestBody::ListOffsets(list_offsets_request(
                    &items,
                    IsolationLevel::ReadCommitted,
                    v,
                )),
                v,
            );
        }
        let items: Vec<_> = tps().into_iter().map(|tp| (tp, Some(3), 2)).collect();
        for v in 0..=4 {
            encodes(
                RequestBody::OffsetForLeaderEpoch(offset_for_leader_epoch_request(&items, v)),
                v,
            );
        }
        let r = offset_commit_request("g", &who, &offsets, 8);
        assert_eq!(r.generation_id_or_member_epoch, -1);
        assert!(r.member_id.is_empty());
        assert_eq!(r.topics.len(), 2);
        assert_eq!(r.topics[0].partitions[0].committed_leader_epoch, 2);
        let r = offset_fetch_request("g", &tps(), true, 8);
        assert_eq!(r.groups[0].topics.as_ref().unwrap().len(), 2);
        assert!(r.group_id.is_empty());
    }

    #[test]
    fn offset_fetch_answers() {
        let resp = OffsetFetchResponse {
            topics: vec![offset_fetch_response::OffsetFetchResponseTopic {
                name: KStr::from_static("a"),
                partitions: vec![
                    offset_fetch_response::OffsetFetchResponsePartition {
                        partition_index: 0,
                        committed_offset: 12,
                        committed_leader_epoch: 1,
                        metadata: Some(KStr::from_static("m")),
                        ..Default::default()
                    },
                    offset_fetch_response::OffsetFetchResponsePartition {
                        partition_index: 1,
                        committed_offset: -1,
                        committed_leader_epoch: -1,
                        ..Default::default()
                    },
                ],
                ..Default::default()
            }],
            ..Default::default()
        };
        let got = parse_offset_fetch(&resp, "g", 7).unwrap();
        let a0 = got[&TopicPartition::new("a", 0)]
            .as_ref()
            .unwrap()
            .as_ref()
            .unwrap();
        assert_eq!(
            (a0.offset, a0.leader_epoch, a0.metadata.as_str()),
            (12, Some(1), "m")
        );
        assert!(
            got[&TopicPartition::new("a", 1)]
                .as_ref()
                .unwrap()
                .is_none()
        );
        let err = OffsetFetchResponse {
            error_code: ErrorCode::NOT_COORDINATOR.code(),
            ..Default::default()
        };
        let e = parse_offset_fetch(&err, "g", 7).unwrap_err();
        assert!(retriable(&e), "{e}");
    }

    #[test]
    fn offset_commit_answers() {
        let offsets: BTreeMap<_, _> = [(TopicPartition::new("a", 0), OffsetAndMetadata::new(1))]
            .into_iter()
            .collect();
        let resp = |code: ErrorCode| OffsetCommitResponse {
            topics: vec![offset_commit_response::OffsetCommitResponseTopic {
                name: KStr::from_static("a"),
                partitions: vec![offset_commit_response::OffsetCommitResponsePartition {
                    partition_index: 0,
                    error_code: code.code(),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        parse_offset_commit(&resp(ErrorCode::NONE), &offsets).unwrap();
        let e = parse_offset_commit(&resp(ErrorCode::ILLEGAL_GENERATION), &offsets).unwrap_err();
        assert_eq!(e.error_code(), Some(ErrorCode::ILLEGAL_GENERATION));
        assert!(!retriable(&e));
        assert!(parse_offset_commit(&OffsetCommitResponse::default(), &offsets).is_err());
    }
}
