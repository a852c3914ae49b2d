//! Produce: each partition's record set (up-converted for old clients) handed to the partition
//! layer's append, in request order, then every acknowledgement waited for at once; the
//! partition layer holds the whole acks contract (the leadership, `min.insync.replicas` before
//! and after, the fsync, the in-sync replicas, the deadline). A partition this broker of a
//! cluster does not lead is refused before its records are read, with NOT_LEADER_OR_FOLLOWER
//! and, from v10, the current leader (see [`super::leader_hints`]).
//!
//! Authorization, as Kafka's `handleProduceRequest`: a request whose records hold a
//! transactional batch (the first batch of some partition has the transactional bit) needs
//! a transactional id and WRITE on it, else every partition is answered
//! TRANSACTIONAL_ID_AUTHORIZATION_FAILED and nothing is appended (without authorization a
//! missing id is let through, unlike Kafka); then each topic needs WRITE,
//! else its partitions are answered TOPIC_AUTHORIZATION_FAILED (before any other check, so an
//! unknown topic is not told apart) while the others are appended.

use std::collections::HashMap;

use bytes::Bytes;
use kafka_auth::acl::AclOperation;
use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::produce_response::{
    BatchIndexAndErrorMessage, LeaderIdAndEpoch, NodeEndpoint, PartitionProduceResponse,
    TopicProduceResponse,
};
use kafka_protocol::messages::{ProduceResponse, ResponseBody};
use kafka_protocol::record::HeaderView;
use kafka_protocol::record::batch::{MAGIC_V2, TRANSACTIONAL_BIT};
use kafka_protocol::view::{self, PartitionView, ProduceRequestView};
use tokio::time::Instant;

use super::authz::Authz;
use super::context::RequestContext;
use super::leader_hints::LeaderHints;
use super::message;
use crate::error::BrokerError;
use crate::node::Broker;
use crate::replica::{Acks, Appended, BadRecord, PendingAck, delayed};

/// One partition of the request after its append: answered, or waiting for its
/// acknowledgement.
enum Stage {
    Answered(PartitionProduceResponse),
    Waiting(i32, Appended, PendingAck),
}

/// Handles a produce request read through the borrowing view of `frame`; leader hints name
/// endpoints on the listener of `ctx`, `authz` says what the caller may write. `None` for
/// acks=0 (no response is sent).
pub(super) async fn handle(
    broker: &Broker,
    ctx: &RequestContext<'_>,
    authz: &Authz<'_>,
    frame: &Bytes,
    req: &ProduceRequestView<'_>,
) -> Option<ResponseBody> {
    let listener = ctx.listener();
    let acks = req.acks();
    // Kafka refuses a transactional batch without a transactional id even with no
    // authorizer; here only with authorization on (tests write such batches directly).
    let transactional_ok = || match req.transactional_id() {
        Some(id) => authz.transactional_id(AclOperation::Write, id),
        None => !broker.acls.enabled(),
    };
    if has_transactional_batch(req) && !transactional_ok() {
        return (acks != 0).then(|| refuse_all(frame, req));
    }
    // One decision per topic name (a topic may be named more than once).
    let mut writable: HashMap<&str, bool> = HashMap::new();
    let now = broker.now_ms();
    let deadline = Instant::now()
        + std::time::Duration::from_millis(u64::try_from(req.timeout_ms()).unwrap_or(0));
    // Appends in request order, each partition's answer in its topic's (capacities capped:
    // the counts come from the client, bounded by the frame's size, but an answer is larger
    // than the bytes that ask for it). An append whose acknowledgement is already given (an
    // acks=1 write to the page cache) is answered at once; the others wait below.
    let mut responses: Vec<TopicProduceResponse> = Vec::with_capacity(req.topics().len().min(1024));
    let mut waiting = Vec::new();
    for topic in req.topics() {
        let name = topic.name();
        let mut partition_responses = Vec::with_capacity(topic.partitions().len().min(1024));
        let may_write = *writable
            .entry(name)
            .or_insert_with(|| authz.topic(AclOperation::Write, name));
        for p in topic.partitions() {
            if !may_write {
                partition_responses.push(refused(p.index(), &topic_refused(name), Vec::new()));
                continue;
            }
            match append(broker, frame, req.version(), name, &p, acks, now).await {
                Stage::Waiting(index, appended, pending) if !pending.is_acknowledged() => {
                    waiting.push((
                        responses.len(),
                        partition_responses.len(),
                        index,
                        appended,
                        pending,
                    ));
                    // Its place, answered once the wait is over.
                    partition_responses.push(accepted(index, &appended));
                }
                Stage::Waiting(index, appended, _) => {
                    partition_responses.push(accepted(index, &appended));
                }
                Stage::Answered(r) => partition_responses.push(r),
            }
        }
        responses.push(TopicProduceResponse {
            name: KStr::from_utf8(view::share(frame, name.as_bytes()))
                .unwrap_or_else(|_| KStr::from(name.to_owned())),
            partition_responses,
            ..Default::default()
        });
    }
    // The partition layer decides when each waiting append may be acknowledged.
    if !waiting.is_empty() {
        let waits = waiting
            .into_iter()
            .map(|(t, p, index, appended, pending)| async move {
                let answer = match delayed::complete_append(pending, deadline).await {
                    Ok(()) => accepted(index, &appended),
                    Err(e) => refused(index, &e, Vec::new()),
                };
                (t, p, answer)
            });
        let started = Instant::now();
        let answers = futures::future::join_all(waits).await;
        ctx.waited(started.elapsed());
        for (t, p, answer) in answers {
            if let Some(slot) = responses
                .get_mut(t)
                .and_then(|topic| topic.partition_responses.get_mut(p))
            {
                *slot = answer;
            }
        }
    }
    if acks == 0 {
        return None;
    }
    let node_endpoints = if req.version() >= 10 {
        name_leaders(broker, listener, &mut responses)
    } else {
        Vec::new()
    };
    Some(ResponseBody::Produce(ProduceResponse {
        responses,
        node_endpoints,
        ..Default::default()
    }))
}

/// Whether the first batch of some partition is transactional: Kafka's
/// `RequestUtils.hasTransactionalRecords`, which looks at each partition's first batch only.
fn has_transactional_batch(req: &ProduceRequestView<'_>) -> bool {
    req.topics().into_iter().any(|t| {
        t.partitions().into_iter().any(|p| {
            p.records()
                .and_then(|r| HeaderView::new(r).ok())
                .is_some_and(|h| h.magic() == MAGIC_V2 && h.attributes() & TRANSACTIONAL_BIT != 0)
        })
    })
}

fn topic_refused(topic: &str) -> BrokerError {
    BrokerError::kafka(
        ErrorCode::TOPIC_AUTHORIZATION_FAILED,
        format!("not authorized to write to topic {topic}"),
    )
}

/// Every partition of the request refused with TRANSACTIONAL_ID_AUTHORIZATION_FAILED, as
/// Kafka's `ProduceRequest.getErrorResponse` answers.
fn refuse_all(frame: &Bytes, req: &ProduceRequestView<'_>) -> ResponseBody {
    let e = BrokerError::kafka(
        ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        "not authorized to write with this transactional id",
    );
    let responses = req
        .topics()
        .into_iter()
        .map(|t| TopicProduceResponse {
            name: KStr::from_utf8(view::share(frame, t.name().as_bytes()))
                .unwrap_or_else(|_| KStr::from(t.name().to_owned())),
            partition_responses: t
                .partitions()
                .into_iter()
                .map(|p| refused(p.index(), &e, Vec::new()))
                .collect(),
            ..Default::default()
        })
        .collect();
    ResponseBody::Produce(ProduceResponse {
        responses,
        ..Default::default()
    })
}

/// One partition's append: refused, or appended and waiting for its acknowledgement.
async fn append(
    broker: &Broker,
    frame: &Bytes,
    version: i16,
    topic: &str,
    p: &PartitionView<'_>,
    acks: i16,
    now: i64,
) -> Stage {
    let index = p.index();
    let result = async {
        let plain = |e: BrokerError| (e, Vec::new());
        if !(-1..=1).contains(&acks) {
            return Err(plain(BrokerError::kafka(
                ErrorCode::INVALID_REQUIRED_ACKS,
                format!("acks must be -1, 0 or 1, got {acks}"),
            )));
        }
        // Only the leader takes records (in a cluster a follower's replica refuses).
        let part = broker
            .led_partition(topic, index)
            .ok_or_else(|| plain(broker.partition_error(topic, index)))?;
        let budget = &broker.decompression;
        // Old clients' magic 0/1 sets become a v2 batch; zstd only from v7.
        let records = p.records_bytes(frame).unwrap_or_default();
        let records = crate::convert::produced(records, version, budget)
            .await
            .map_err(plain)?;
        part.append_records(&records, Acks::from_wire(acks), now, budget)
            .await
            .map_err(|r| (r.error, r.records))
    }
    .await;
    match result {
        Ok((appended, pending)) => Stage::Waiting(index, appended, pending),
        Err((e, bad)) => {
            tracing::debug!(topic, partition = index, error = %e, "produce rejected");
            Stage::Answered(refused(index, &e, bad))
        }
    }
}

fn accepted(index: i32, a: &Appended) -> PartitionProduceResponse {
    PartitionProduceResponse {
        index,
        base_offset: a.base_offset,
        log_append_time_ms: a.log_append_time,
        log_start_offset: a.log_start_offset,
        ..Default::default()
    }
}

fn refused(index: i32, e: &BrokerError, bad: Vec<BadRecord>) -> PartitionProduceResponse {
    PartitionProduceResponse {
        index,
        error_code: e.error_code().code(),
        base_offset: -1,
        log_append_time_ms: -1,
        log_start_offset: -1,
        error_message: message(e),
        record_errors: bad
            .into_iter()
            .map(|b| BatchIndexAndErrorMessage {
                batch_index: b.index,
                batch_index_error_message: Some(b.message.into()),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// KIP-951: every partition refused with NOT_LEADER_OR_FOLLOWER names its current leader;
/// returns those leaders' endpoints (none on a single node).
fn name_leaders(
    broker: &Broker,
    listener: &str,
    responses: &mut [TopicProduceResponse],
) -> Vec<NodeEndpoint> {
    let mut hints = LeaderHints::new(broker, listener);
    for t in responses.iter_mut() {
        for p in &mut t.partition_responses {
            if p.error_code != ErrorCode::NOT_LEADER_OR_FOLLOWER.code() {
                continue;
            }
            if let Some((leader_id, leader_epoch)) = hints.leader_of(&t.name, p.index) {
                p.current_leader = LeaderIdAndEpoch {
                    leader_id,
                    leader_epoch,
                    ..Default::default()
                };
            }
        }
    }
    hints
        .endpoints()
        .map(|e| NodeEndpoint {
            node_id: e.node_id,
            host: KStr::from(e.host),
            port: i32::from(e.port),
            rack: e.rack.map(KStr::from),
            ..Default::default()
        })
        .collect()
}
