//! Validation of a producer's record set before the leader appends it, as Kafka's
//! `LogValidator`: whole magic-2 batches with a valid CRC and well-formed records, no larger
//! than `max.message.bytes`, no control or (yet) transactional batches, create times inside the
//! topic's window, keys on compacted topics. Every record refused is named (the Produce
//! answer's `record_errors`).

use bytes::Bytes;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::record::RecordBatches;
use kafka_protocol::record::batch::MAGIC_V2;

use super::partition::BatchSummary;
use crate::error::BrokerError;
use crate::topic_config::ProduceRules;

/// Largest decompressed size accepted while validating one batch.
const MAX_DECOMPRESSED: usize = 256 << 20;

/// Checks a record set as a producer sent it. Every batch must be a whole magic-2 batch with a
/// valid CRC and well-formed records, no larger than `max_batch` bytes. With `keys_required`
/// (a compacted topic, named for the message), records without a key are collected into
/// `keyless` in the same pass (the caller refuses the set if there are any).
pub fn validate(
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
pub struct BadRecord {
    /// Index of the record in its batch (what ProduceResponse v8+ calls the batch index).
    pub index: i32,
    pub message: String,
}

/// Checks every record's timestamp against `now` and the window; all bad records are
/// reported (Kafka rejects the whole batch and names each record).
pub fn check_timestamps(records: &Bytes, now: i64, (before, after): (i64, i64)) -> Vec<BadRecord> {
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

/// Why a produce to a partition was refused: the error, and the records it names.
#[derive(Debug)]
pub struct Refused {
    pub error: BrokerError,
    pub records: Vec<BadRecord>,
}

impl From<BrokerError> for Refused {
    fn from(error: BrokerError) -> Self {
        Self {
            error,
            records: Vec::new(),
        }
    }
}

/// Checks `records` for `topic`-`partition` against its rules at broker time `now`; the
/// summaries of its batches for the append.
pub fn check(
    records: &Bytes,
    rules: &ProduceRules,
    (topic, partition): (&str, i32),
    now: i64,
) -> Result<Vec<BatchSummary>, Refused> {
    if crate::topics::is_internal(topic) {
        // Kafka's words; only the broker's coordinators append there.
        return Err(BrokerError::kafka(
            ErrorCode::INVALID_TOPIC_EXCEPTION,
            format!("Cannot append to internal topic {topic}"),
        )
        .into());
    }
    let keys_required = rules.compacted.then_some((topic, partition));
    let mut keyless = Vec::new();
    let batches = validate(
        records,
        rules.max_message_bytes,
        keys_required,
        &mut keyless,
    )?;
    if let Some(window) = rules.timestamp_window {
        let bad = check_timestamps(records, now, window);
        if let Some(first) = bad.first() {
            return Err(Refused {
                error: BrokerError::kafka(ErrorCode::INVALID_TIMESTAMP, first.message.clone()),
                records: bad,
            });
        }
    }
    if let Some(first) = keyless.first() {
        return Err(Refused {
            error: BrokerError::kafka(ErrorCode::INVALID_RECORD, first.message.clone()),
            records: keyless,
        });
    }
    Ok(batches)
}
