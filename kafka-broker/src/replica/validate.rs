//! Validation of a producer's record set before the leader appends it, as Kafka's
//! `LogValidator`: whole magic-2 batches with a valid CRC and well-formed records, no larger
//! than `max.message.bytes` (each batch as sent, and each record once decompressed), no control
//! batches (only coordinators write markers), producer fields as a client may send them (a
//! producer id comes with a sequence, a transactional batch with a producer id), create times
//! inside the topic's window, keys on compacted topics. Every record refused is named (the Produce answer's `record_errors`).
//!
//! Decompressed records take memory from the broker's [`super::budget::MemoryBudget`]: a check
//! runs within an [`Allowance`] reserved for it, and a batch that needs more answers
//! [`Failed::NeedsMemory`] so that the caller reserves more and checks again. No batch may
//! decompress beyond what its records may take (`records × max.message.bytes`: more proves a
//! record too large), nor beyond the whole budget.

use bytes::Bytes;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::record::batch::{MAGIC_V2, NO_TIMESTAMP};
use kafka_protocol::record::{RecordBatch, RecordBatches, compression};

use crate::config::topic::ProduceRules;
use crate::error::BrokerError;

/// The facts of one validated batch that the partition needs.
#[derive(Debug, Clone, Copy)]
pub struct BatchSummary {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub records: i32,
    pub max_timestamp: i64,
    /// The batch's transactional attribute: its records belong to the producer's open
    /// transaction and stay invisible to read_committed until its marker.
    pub transactional: bool,
}

/// Decompressed-record memory a check may use: `granted` now (reserved from the budget), and
/// `cap`, the most any batch may ever take (the whole budget).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Allowance {
    pub granted: usize,
    pub cap: usize,
}

/// Why a check did not pass: the records are refused, or a batch needs more decompression
/// memory than was granted (at most the cap); the caller reserves that much and checks again.
#[derive(Debug)]
pub enum Failed {
    Refused(Refused),
    NeedsMemory(usize),
}

impl<T: Into<Refused>> From<T> for Failed {
    fn from(r: T) -> Self {
        Self::Refused(r.into())
    }
}

/// The most `batch`'s records may take decompressed: `max_record` bytes each (so that more
/// proves a record too large), and never more than `cap`.
fn batch_limit(batch: &RecordBatch, max_record: usize, cap: usize) -> usize {
    let count = usize::try_from(batch.records_count()).unwrap_or(0).max(1);
    count.saturating_mul(max_record).min(cap)
}

/// The decompression memory to reserve before checking `records`: per compressed batch, the
/// size its payload declares, or 32 times its compressed size (64 KiB at least), within
/// [`batch_limit`]; the largest of those, as batches are checked one at a time. Nothing for
/// uncompressed batches (their records are read in place).
pub fn memory_estimate(records: &Bytes, max_record: usize, cap: usize) -> usize {
    RecordBatches::new(records.clone())
        .map_while(Result::ok)
        .filter(|b| {
            b.compression()
                .is_ok_and(|c| c != compression::Compression::None)
        })
        .map(|b| {
            let guess = b
                .decompressed_size_hint()
                .unwrap_or_else(|| b.size().saturating_mul(32).max(64 << 10));
            guess.min(batch_limit(&b, max_record, cap))
        })
        .max()
        .unwrap_or(0)
}

/// What [`validate`] checks besides the batches themselves.
struct Rules<'a> {
    max_batch: usize,
    /// Compacted topic (named for the message): records need keys.
    keys_required: Option<(&'a str, i32)>,
    /// Broker time and the topic's create-time window (before, after), if it has one.
    timestamps: Option<(i64, (i64, i64))>,
}

/// Records refused one by one, by reason (each becomes a `record_errors` entry).
#[derive(Default)]
struct BadRecords {
    too_large: Vec<BadRecord>,
    timestamps: Vec<BadRecord>,
    keyless: Vec<BadRecord>,
}

/// Checks a record set as a producer sent it, decompressing within `allowance`: every batch a
/// whole magic-2 batch with a valid CRC and well-formed records, no larger than
/// `rules.max_batch` bytes as sent, no record larger than that decompressed. Records refused
/// one by one (too large, out of the time window, without a key on a compacted topic) are
/// collected in `bad` in the same pass.
fn validate(
    records: &Bytes,
    rules: &Rules<'_>,
    allowance: Allowance,
    bad: &mut BadRecords,
) -> Result<Vec<BatchSummary>, Failed> {
    let corrupt = |m: String| BrokerError::kafka(ErrorCode::CORRUPT_MESSAGE, m);
    let max_batch = rules.max_batch;
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
            )
            .into());
        }
        if b.size() > max_batch {
            return Err(BrokerError::kafka(
                ErrorCode::MESSAGE_TOO_LARGE,
                format!(
                    "record batch of {} bytes exceeds max.message.bytes {max_batch}",
                    b.size()
                ),
            )
            .into());
        }
        b.verify_crc().map_err(|e| corrupt(e.to_string()))?;
        if b.is_control() {
            return Err(BrokerError::kafka(
                ErrorCode::INVALID_RECORD,
                "producers may not write control batches",
            )
            .into());
        }
        if b.is_transactional() && b.producer_id() < 0 {
            return Err(BrokerError::kafka(
                ErrorCode::INVALID_RECORD,
                "a transactional batch must carry a producer id",
            )
            .into());
        }
        if b.producer_id() >= 0 && b.base_sequence() < 0 {
            // Only the broker's coordinators write batches without a sequence.
            return Err(BrokerError::kafka(
                ErrorCode::INVALID_RECORD,
                format!(
                    "a batch of producer {} has no sequence ({})",
                    b.producer_id(),
                    b.base_sequence()
                ),
            )
            .into());
        }
        let limit = batch_limit(&b, max_batch, allowance.cap);
        let too_large = || {
            BrokerError::kafka(
                ErrorCode::MESSAGE_TOO_LARGE,
                format!(
                    "the {} records of a batch decompress to more than {limit} bytes: at least \
                     one is larger than max.message.bytes {max_batch}",
                    b.records_count()
                ),
            )
        };
        let hint = b.decompressed_size_hint();
        if hint.is_some_and(|h| h > limit) && limit < allowance.cap {
            // The payload declares more than its records may take: refused undecompressed.
            return Err(too_large().into());
        }
        // The batch header bounds the newest record: most batches need no timestamp scan.
        let window = rules.timestamps.filter(|&(now, (before, after))| {
            b.max_timestamp() > now.saturating_add(after) || before != i64::MAX
        });
        let max_out = limit.min(allowance.granted);
        // The CRC was checked above; one pass over the records validates them and makes the
        // per-record checks.
        let checked = b.validate_records(max_out, |i, size, r| {
            if size > max_batch {
                bad.too_large.push(BadRecord {
                    index: index(i),
                    message: format!(
                        "record {i} is {size} bytes decompressed, more than max.message.bytes \
                         {max_batch}"
                    ),
                });
            }
            if let Some((now, (before, after))) = window {
                let ts = r.timestamp(&b);
                // No timestamp (magic 0 up-converted): nothing to check, as in Kafka.
                if ts != NO_TIMESTAMP && ts > now.saturating_add(after) {
                    bad.timestamps.push(BadRecord {
                        index: index(i),
                        message: format!(
                            "timestamp {ts} of record {i} is more than {after} ms ahead of the broker's time {now} (message.timestamp.after.max.ms)"
                        ),
                    });
                } else if ts != NO_TIMESTAMP && ts < now.saturating_sub(before) {
                    bad.timestamps.push(BadRecord {
                        index: index(i),
                        message: format!(
                            "timestamp {ts} of record {i} is more than {before} ms behind the broker's time {now} (message.timestamp.before.max.ms)"
                        ),
                    });
                }
            }
            if let Some((topic, partition)) = rules.keys_required {
                if r.key.is_none() {
                    bad.keyless.push(keyless_record(i, topic, partition));
                }
            }
        });
        match checked {
            Ok(()) => {}
            Err(e) if compression::is_output_limit(&e) && max_out < limit => {
                // More than was granted, within what the batch may take: grow geometrically
                // (or to the declared size) and check again.
                let want = max_out
                    .saturating_mul(2)
                    .max(hint.unwrap_or(0))
                    .max(64 << 10);
                return Err(Failed::NeedsMemory(want.min(limit)));
            }
            Err(e) if compression::is_output_limit(&e) && limit < allowance.cap => {
                return Err(too_large().into());
            }
            Err(e) => {
                return Err(BrokerError::kafka(
                    ErrorCode::INVALID_RECORD,
                    format!("invalid records: {e}"),
                )
                .into());
            }
        }
        out.push(BatchSummary {
            producer_id: b.producer_id(),
            producer_epoch: b.producer_epoch(),
            base_sequence: b.base_sequence(),
            records: b.records_count(),
            max_timestamp: b.max_timestamp(),
            transactional: b.is_transactional(),
        });
    }
    if !batches.remainder().is_empty() {
        return Err(corrupt(format!(
            "{} bytes after the last whole batch",
            batches.remainder().len()
        ))
        .into());
    }
    if out.is_empty() {
        return Err(corrupt("empty record set".into()).into());
    }
    Ok(out)
}

fn index(i: usize) -> i32 {
    i32::try_from(i).unwrap_or(i32::MAX)
}

/// A record refused: larger than `max.message.bytes` decompressed, its create time outside
/// the topic's window (`message.timestamp.before.max.ms` / `message.timestamp.after.max.ms`),
/// or no key on a compacted topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadRecord {
    /// Index of the record in its batch (what ProduceResponse v8+ calls the batch index).
    pub index: i32,
    pub message: String,
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

/// Checks `records` for `topic`-`partition` against its rules at broker time `now`,
/// decompressing within `allowance`; the summaries of its batches for the append.
pub fn check(
    records: &Bytes,
    rules: &ProduceRules,
    (topic, partition): (&str, i32),
    now: i64,
    allowance: Allowance,
) -> Result<Vec<BatchSummary>, Failed> {
    if crate::topics::is_internal(topic) {
        // Kafka's words; only the broker's coordinators append there.
        return Err(BrokerError::kafka(
            ErrorCode::INVALID_TOPIC_EXCEPTION,
            format!("Cannot append to internal topic {topic}"),
        )
        .into());
    }
    let checks = Rules {
        max_batch: rules.max_message_bytes,
        keys_required: rules.compacted.then_some((topic, partition)),
        timestamps: rules.timestamp_window.map(|w| (now, w)),
    };
    let mut bad = BadRecords::default();
    let batches = validate(records, &checks, allowance, &mut bad)?;
    let refuse = |code, records: Vec<BadRecord>| {
        let message = records
            .first()
            .map(|r| r.message.clone())
            .unwrap_or_default();
        Err(Failed::Refused(Refused {
            error: BrokerError::kafka(code, message),
            records,
        }))
    };
    if !bad.too_large.is_empty() {
        return refuse(ErrorCode::MESSAGE_TOO_LARGE, bad.too_large);
    }
    if !bad.timestamps.is_empty() {
        return refuse(ErrorCode::INVALID_TIMESTAMP, bad.timestamps);
    }
    if !bad.keyless.is_empty() {
        return refuse(ErrorCode::INVALID_RECORD, bad.keyless);
    }
    Ok(batches)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use kafka_protocol::record::{Compression, RecordBatchBuilder};

    use super::*;

    const MB: usize = 1 << 20;

    fn rules(max_message_bytes: usize) -> ProduceRules {
        ProduceRules {
            max_message_bytes,
            timestamp_window: None,
            compacted: false,
            min_insync_replicas: 1,
        }
    }

    fn batch(codec: Compression, values: &[usize]) -> Bytes {
        let mut b = RecordBatchBuilder::new().compression(codec);
        for (i, &len) in values.iter().enumerate() {
            b.append(i as i64, None, Some(&vec![7u8; len]), &[])
                .unwrap();
        }
        b.build().unwrap()
    }

    fn code(f: &Failed) -> Option<ErrorCode> {
        match f {
            Failed::Refused(r) => Some(r.error.error_code()),
            Failed::NeedsMemory(_) => None,
        }
    }

    #[test]
    fn a_check_asks_for_more_memory_geometrically_up_to_what_the_batch_needs() {
        // 24 records of 500 KB: 12 MB decompressed, each record within 1 MB. lz4_flex frames
        // declare no size, so the estimate is 32 times the compressed size.
        let records = batch(Compression::Lz4, &[500_000; 24]);
        let cap = 256 * MB;
        let estimate = memory_estimate(&records, MB, cap);
        assert!(estimate < 12 * MB, "{estimate}");
        let mut granted = estimate;
        let mut asked = Vec::new();
        let batches = loop {
            let allowance = Allowance { granted, cap };
            match check(&records, &rules(MB), ("t", 0), 0, allowance) {
                Ok(b) => break b,
                Err(Failed::NeedsMemory(n)) => {
                    assert!(n >= granted * 2 || n == 24 * MB, "{n} after {granted}");
                    asked.push(n);
                    granted = n;
                }
                Err(Failed::Refused(r)) => panic!("refused: {}", r.error),
            }
        };
        assert_eq!(batches.len(), 1);
        assert_eq!(batches[0].records, 24);
        assert!(!asked.is_empty() && granted >= 12 * MB, "{asked:?}");
        // zstd declares its size: the estimate is exact and one check suffices.
        let records = batch(Compression::Zstd, &[500_000; 24]);
        let estimate = memory_estimate(&records, MB, cap);
        let plain = batch(Compression::None, &[500_000; 24]).len();
        let overhead = kafka_protocol::record::batch::RECORD_BATCH_OVERHEAD;
        assert_eq!(estimate, plain - overhead);
        let allowance = Allowance {
            granted: estimate,
            cap,
        };
        check(&records, &rules(MB), ("t", 0), 0, allowance).unwrap();
    }

    #[test]
    fn records_larger_than_max_message_bytes_decompressed_are_refused_by_index() {
        let cap = 256 * MB;
        let all = Allowance { granted: cap, cap };
        // Record 2 of 4 is 3 MB decompressed; the batch as sent is a few KB.
        for codec in [Compression::Gzip, Compression::Lz4, Compression::Zstd] {
            let records = batch(codec, &[10, 20, 3 * MB, 30]);
            assert!(records.len() < MB, "{codec}");
            match check(&records, &rules(MB), ("t", 0), 0, all) {
                Err(Failed::Refused(r)) => {
                    assert_eq!(
                        r.error.error_code(),
                        ErrorCode::MESSAGE_TOO_LARGE,
                        "{codec}"
                    );
                    assert_eq!(r.records.len(), 1, "{codec}");
                    assert_eq!(r.records[0].index, 2, "{codec}");
                    assert!(r.records[0].message.contains("max.message.bytes"));
                }
                other => panic!("{codec}: {other:?}"),
            }
        }
        // One record of 200 MB: refused having decompressed at most 1 MB (lz4), or nothing
        // (zstd declares 200 MB), whatever was granted.
        for codec in [Compression::Lz4, Compression::Zstd] {
            let records = batch(codec, &[200 * MB]);
            let small = Allowance {
                granted: 2 * MB,
                cap,
            };
            let f = check(&records, &rules(MB), ("t", 0), 0, small).unwrap_err();
            assert_eq!(
                code(&f),
                Some(ErrorCode::MESSAGE_TOO_LARGE),
                "{codec}: {f:?}"
            );
        }
        // A batch beyond the whole budget, every record within the limit: INVALID_RECORD.
        let records = batch(Compression::Zstd, &[900_000; 8]);
        let tight = Allowance {
            granted: 4 * MB,
            cap: 4 * MB,
        };
        let f = check(&records, &rules(MB), ("t", 0), 0, tight).unwrap_err();
        assert_eq!(code(&f), Some(ErrorCode::INVALID_RECORD), "{f:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn reservations_wait_for_the_budget_and_are_given_back_on_drop() {
        let budget = super::super::MemoryBudget::new(100);
        let a = budget.reserve(60).await;
        assert_eq!((a.bytes(), budget.available()), (60, 40));
        let waiting = budget.reserve(60);
        tokio::pin!(waiting);
        let timed_out = tokio::time::timeout(std::time::Duration::from_secs(5), &mut waiting)
            .await
            .is_err();
        assert!(timed_out, "a second 60 of 100 must wait for the first");
        drop(a);
        let b = waiting.await;
        assert_eq!((b.bytes(), budget.available()), (60, 40));
        // More than the whole budget is the whole budget; nothing is nothing.
        drop(b);
        assert_eq!(budget.reserve(1_000).await.bytes(), 100);
        assert_eq!(budget.reserve(0).await.bytes(), 0);
        assert_eq!(budget.available(), 100);
    }

    #[test]
    fn producer_fields_are_checked_as_kafka_checks_a_clients_batch() {
        let all = Allowance {
            granted: MB,
            cap: MB,
        };
        let build = |b: RecordBatchBuilder| {
            let mut b = b;
            b.append(0, Some(b"k"), Some(b"v"), &[]).unwrap();
            b.build().unwrap()
        };
        let refused = |records: Bytes| {
            check(&records, &rules(MB), ("t", 0), 0, all)
                .err()
                .as_ref()
                .and_then(code)
        };
        // A transactional batch of a producer: accepted, and summarised as transactional.
        let txn = build(
            RecordBatchBuilder::new()
                .producer(5, 0, 0)
                .transactional(true),
        );
        let summary = check(&txn, &rules(MB), ("t", 0), 0, all).unwrap();
        assert!(summary[0].transactional && summary[0].producer_id == 5);
        // Control batches are the coordinators' alone.
        let marker = kafka_protocol::record::control::end_txn_marker_batch(
            kafka_protocol::record::control::ControlRecordType::Commit,
            5,
            0,
            0,
            0,
        )
        .unwrap();
        assert_eq!(refused(marker), Some(ErrorCode::INVALID_RECORD));
        // A producer id without a sequence, and a transaction without a producer id.
        let no_seq = build(RecordBatchBuilder::new().producer(5, 0, -1));
        assert_eq!(refused(no_seq), Some(ErrorCode::INVALID_RECORD));
        let no_pid = build(RecordBatchBuilder::new().transactional(true));
        assert_eq!(refused(no_pid), Some(ErrorCode::INVALID_RECORD));
    }
}
