//! Produce: each partition's record set (up-converted for old clients) handed to the partition
//! layer, which validates and appends it; the answers once their acknowledgement condition holds.
//! A partition this broker of a cluster does not lead is refused before its records are read,
//! with NOT_LEADER_OR_FOLLOWER and, from v10, the current leader (see [`super::leader_hints`]).

use bytes::Bytes;
use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::produce_response::{
    BatchIndexAndErrorMessage, LeaderIdAndEpoch, NodeEndpoint, PartitionProduceResponse,
    TopicProduceResponse,
};
use kafka_protocol::messages::{ProduceResponse, ResponseBody};
use kafka_protocol::view::{self, ProduceRequestView};

use super::leader_hints::LeaderHints;
use super::message;
use crate::broker::Broker;
use crate::error::BrokerError;
use crate::replica::{Acks, delayed};

/// Handles a produce request read through the borrowing view of `frame`, which came in on
/// `listener`; `None` for acks=0 (no response is sent).
pub(super) async fn handle(
    broker: &Broker,
    frame: &Bytes,
    req: &ProduceRequestView<'_>,
    listener: &str,
) -> Option<ResponseBody> {
    let acks = req.acks();
    let acks_ok = (-1..=1).contains(&acks);
    let now = crate::broker::now_ms();
    let deadline = tokio::time::Instant::now()
        + std::time::Duration::from_millis(u64::try_from(req.timeout_ms()).unwrap_or(0));
    // Appends still waiting for their acknowledgement condition, with where their answer is
    // (topic, partition position in the response).
    let mut pending = Vec::new();
    let mut pending_at = Vec::new();
    // Capacities capped: the counts come from the client (bounded by the frame's size, but a
    // response entry is larger than the bytes that ask for it).
    let mut responses = Vec::with_capacity(req.topics().len().min(1024));
    let budget = &broker.decompression;
    for topic in req.topics() {
        let name = topic.name();
        let rules = broker.produce_rules(name);
        let mut partition_responses = Vec::with_capacity(topic.partitions().len().min(1024));
        for p in topic.partitions() {
            let index = p.index();
            let result = async {
                let plain = |e: BrokerError| (e, Vec::new());
                if !acks_ok {
                    return Err(plain(BrokerError::kafka(
                        ErrorCode::INVALID_REQUIRED_ACKS,
                        format!("acks must be -1, 0 or 1, got {acks}"),
                    )));
                }
                // Only the leader takes records (in a cluster a follower's replica refuses).
                let part = broker
                    .led_partition(name, index)
                    .ok_or_else(|| plain(broker.partition_error(name, index)))?;
                // acks=all: refused before anything is written while the ISR is too small.
                if acks == -1 {
                    part.check_min_insync(rules.min_insync_replicas)
                        .map_err(plain)?;
                }
                let records = p.records_bytes(frame).unwrap_or_default();
                // Old clients' magic 0/1 sets become a v2 batch; zstd only from v7.
                let records = crate::convert::produced(records, req.version(), budget)
                    .await
                    .map_err(plain)?;
                // The partition layer validates (decompressing within the broker's budget)
                // and appends.
                part.append_records(&records, &rules, now, budget)
                    .await
                    .map_err(|r| (r.error, r.records))
            }
            .await;
            let resp = match result {
                Ok((a, wait)) => {
                    pending.push(wait.with_min_insync(rules.min_insync_replicas));
                    pending_at.push((responses.len(), partition_responses.len()));
                    PartitionProduceResponse {
                        index,
                        base_offset: a.base_offset,
                        log_append_time_ms: a.log_append_time,
                        log_start_offset: a.log_start_offset,
                        ..Default::default()
                    }
                }
                Err((e, bad)) => {
                    tracing::debug!(topic = name, partition = index, error = %e, "produce rejected");
                    PartitionProduceResponse {
                        index,
                        error_code: e.error_code().code(),
                        base_offset: -1,
                        log_append_time_ms: -1,
                        log_start_offset: -1,
                        error_message: message(&e),
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
            };
            partition_responses.push(resp);
        }
        responses.push(TopicProduceResponse {
            name: KStr::from_utf8(view::share(frame, name.as_bytes()))
                .unwrap_or_else(|_| KStr::from(name.to_owned())),
            partition_responses,
            ..Default::default()
        });
    }
    // The partition layer decides when each append may be acknowledged (a group-commit
    // fsync in durable mode, the in-sync replicas for acks=all).
    let results = delayed::complete_appends(pending, Acks::from_wire(acks), deadline).await;
    for (result, (t, p)) in results.into_iter().zip(pending_at) {
        if let Err(e) = result
            && let Some(p) = responses
                .get_mut(t)
                .and_then(|t: &mut TopicProduceResponse| t.partition_responses.get_mut(p))
        {
            p.error_code = e.error_code().code();
            p.error_message = message(&e);
            p.base_offset = -1;
            p.log_append_time_ms = -1;
            p.log_start_offset = -1;
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
            port: e.port,
            rack: e.rack.map(KStr::from),
            ..Default::default()
        })
        .collect()
}
