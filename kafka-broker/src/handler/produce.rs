//! Produce: validate every batch (magic, size, CRC, records), append, answer per partition.

use bytes::{Bytes, BytesMut};
use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::produce_response::{
    BatchIndexAndErrorMessage, PartitionProduceResponse, TopicProduceResponse,
};
use kafka_protocol::messages::{ProduceResponse, ResponseBody};
use kafka_protocol::record::RecordBatches;
use kafka_protocol::record::batch::MAGIC_V2;
use kafka_protocol::view::{self, ProduceRequestView};

use super::message;
use crate::broker::Broker;
use crate::error::BrokerError;
use crate::replica::{Acks, BatchSummary, delayed};

/// Largest decompressed size accepted while validating one batch.
const MAX_DECOMPRESSED: usize = 256 << 20;

/// Checks a record set as a producer sent it. Every batch must be a whole magic-2 batch with a
/// valid CRC and well-formed records, no larger than `max_batch` bytes. With `keys_required`
/// (a compacted topic, named for the message), records without a key are collected into
/// `keyless` in the same pass (the caller refuses the set if there are any).
pub(crate) fn validate(
    records: &Bytes,
    max_batch: usize,
    keys_required: Option<(&str, i32)>,
    keyless: &mut Vec<BadRecord>,
) -> Result<Vec<BatchSummary>, BrokerError> {
    let corrupt = |m: String| BrokerError::kafka(ErrorCode::CORRUPT_MESSAGE, m);
    let mut out = Vec::new();
    let mut batches = RecordBatches::new(records.clone());
    for b in batches.by_ref() {
        let b = b.map_err(|e| corrupt(e.to_string()))?;
        if b.magic() != MAGIC_V2 {
            return Err(BrokerError::kafka(
                ErrorCode::UNSUPPORTED_FOR_MESSAGE_FORMAT,
                format!(
                    "record batch magic {} (only magic 2 is accepted)",
                    b.magic()
                ),
            ));
        }
        if b.size() > max_batch {
            return Err(BrokerError::kafka(
                ErrorCode::MESSAGE_TOO_LARGE,
                format!(
                    "record batch of {} bytes exceeds max.message.bytes {max_batch}",
                    b.size()
                ),
            ));
        }
        b.verify_crc().map_err(|e| corrupt(e.to_string()))?;
        if b.is_control() {
            return Err(BrokerError::kafka(
                ErrorCode::INVALID_RECORD,
                "producers may not write control batches",
            ));
        }
        if b.is_transactional() {
            return Err(BrokerError::kafka(
                ErrorCode::INVALID_TXN_STATE,
                "transactions are not supported by this broker yet",
            ));
        }
        // The CRC was checked above; one pass over the records validates them and, for a
        // compacted topic, finds those without a key.
        b.validate_records(MAX_DECOMPRESSED, |i, r| {
            if let Some((topic, partition)) = keys_required {
                if r.key.is_none() {
                    keyless.push(keyless_record(i, topic, partition));
                }
            }
        })
        .map_err(|e| {
            BrokerError::kafka(ErrorCode::INVALID_RECORD, format!("invalid records: {e}"))
        })?;
        out.push(BatchSummary {
            producer_id: b.producer_id(),
            producer_epoch: b.producer_epoch(),
            base_sequence: b.base_sequence(),
            records: b.records_count(),
            max_timestamp: b.max_timestamp(),
        });
    }
    if !batches.remainder().is_empty() {
        return Err(corrupt(format!(
            "{} bytes after the last whole batch",
            batches.remainder().len()
        )));
    }
    if out.is_empty() {
        return Err(corrupt("empty record set".into()));
    }
    Ok(out)
}

/// A record refused: its create time lies outside the topic's window
/// (`message.timestamp.before.max.ms` / `message.timestamp.after.max.ms`), or it has no key
/// and the topic is compacted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BadRecord {
    /// Index of the record in its batch (what ProduceResponse v8+ calls the batch index).
    pub index: i32,
    pub message: String,
}

/// Checks every record's timestamp against `now` and the window; all bad records are
/// reported (Kafka rejects the whole batch and names each record).
pub(crate) fn check_timestamps(
    records: &Bytes,
    now: i64,
    (before, after): (i64, i64),
) -> Vec<BadRecord> {
    let mut bad = Vec::new();
    for b in RecordBatches::new(records.clone()).flatten() {
        // The batch header bounds the newest record: most batches need no record scan.
        let future_ok = b.max_timestamp() <= now.saturating_add(after);
        if future_ok && before == i64::MAX {
            continue;
        }
        let Ok(recs) = b.records(MAX_DECOMPRESSED) else {
            continue;
        };
        for (i, r) in recs.flatten().enumerate() {
            let ts = r.timestamp(&b);
            // No timestamp (magic 0 up-converted): nothing to check, as in Kafka.
            let message = if ts == kafka_protocol::record::batch::NO_TIMESTAMP {
                continue;
            } else if ts > now.saturating_add(after) {
                format!(
                    "timestamp {ts} of record {i} is more than {after} ms ahead of the broker's time {now} (message.timestamp.after.max.ms)"
                )
            } else if ts < now.saturating_sub(before) {
                format!(
                    "timestamp {ts} of record {i} is more than {before} ms behind the broker's time {now} (message.timestamp.before.max.ms)"
                )
            } else {
                continue;
            };
            bad.push(BadRecord {
                index: i32::try_from(i).unwrap_or(i32::MAX),
                message,
            });
        }
    }
    bad
}

/// A record without a key, which a compacted topic refuses (as Kafka does, with its words).
fn keyless_record(index: usize, topic: &str, partition: i32) -> BadRecord {
    BadRecord {
        index: i32::try_from(index).unwrap_or(i32::MAX),
        message: format!(
            "Compacted topic cannot accept message without key in topic partition {topic}-{partition}."
        ),
    }
}

/// Handles a produce request read through the borrowing view of `frame`; `None` for acks=0
/// (no response is sent).
pub(super) async fn handle(
    broker: &Broker,
    frame: &Bytes,
    req: &ProduceRequestView<'_>,
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
    for topic in req.topics() {
        let name = topic.name();
        let rules = broker.produce_rules(name);
        let mut partition_responses = Vec::with_capacity(topic.partitions().len().min(1024));
        for p in topic.partitions() {
            let index = p.index();
            let result = (|| {
                let plain = |e: BrokerError| (e, Vec::new());
                if !acks_ok {
                    return Err(plain(BrokerError::kafka(
                        ErrorCode::INVALID_REQUIRED_ACKS,
                        format!("acks must be -1, 0 or 1, got {acks}"),
                    )));
                }
                let part = broker
                    .partition(name, index)
                    .ok_or_else(|| plain(broker.partition_error(name, index)))?;
                let records = p.records_bytes(frame).unwrap_or_default();
                // Old clients' magic 0/1 sets become a v2 batch; zstd only from v7.
                let records = crate::convert::produced(records, req.version()).map_err(plain)?;
                let max = rules.max_message_bytes;
                let keys_required = rules.compacted.then_some((name, index));
                let mut keyless = Vec::new();
                let batches =
                    validate(&records, max, keys_required, &mut keyless).map_err(plain)?;
                if let Some(window) = rules.timestamp_window {
                    let bad = check_timestamps(&records, now, window);
                    if let Some(first) = bad.first() {
                        return Err((
                            BrokerError::kafka(ErrorCode::INVALID_TIMESTAMP, first.message.clone()),
                            bad,
                        ));
                    }
                }
                if let Some(first) = keyless.first() {
                    return Err((
                        BrokerError::kafka(ErrorCode::INVALID_RECORD, first.message.clone()),
                        keyless,
                    ));
                }
                let buf = BytesMut::from(records.as_ref());
                part.append_as_leader(buf, &batches, now).map_err(plain)
            })();
            let resp = match result {
                Ok((a, wait)) => {
                    pending.push(wait);
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
    Some(ResponseBody::Produce(ProduceResponse {
        responses,
        ..Default::default()
    }))
}
