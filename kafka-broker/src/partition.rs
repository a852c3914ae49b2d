//! One partition hosted here: its log and its idempotent-producer state behind one lock, so
//! that the sequence check and the append are atomic.

use std::sync::{Arc, Mutex, MutexGuard};

use bytes::{Bytes, BytesMut};
use kafka_protocol::error_code::ErrorCode;

use crate::error::BrokerError;
use crate::log::{CleanStats, CleanerLimits, Flusher, Log, LogError, SharedLog, lock_log};
use crate::producer_state::{BatchMeta, Check, ProducerStates, last_seq};

/// The facts of one validated batch that the partition needs.
#[derive(Debug, Clone, Copy)]
pub struct BatchSummary {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub records: i32,
    pub max_timestamp: i64,
}

/// Result of a produce to this partition.
#[derive(Debug, Clone, Copy)]
pub struct Appended {
    pub base_offset: i64,
    pub last_offset: i64,
    /// -1 unless the topic uses LogAppendTime.
    pub log_append_time: i64,
    pub log_start_offset: i64,
    /// The batch was a retry of one already written; nothing was appended.
    pub duplicate: bool,
}

/// Offsets of a partition at one moment.
#[derive(Debug, Clone, Copy)]
pub struct Offsets {
    pub log_start: i64,
    pub log_end: i64,
    pub high_watermark: i64,
    /// Last stable offset (equals the high watermark while there are no transactions).
    pub last_stable: i64,
}

pub struct Partition {
    pub topic: String,
    pub index: i32,
    log: SharedLog,
    /// Locked before the log when both are needed.
    producers: Mutex<ProducerStates>,
}

impl std::fmt::Debug for Partition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Partition({}-{})", self.topic, self.index)
    }
}

impl From<LogError> for BrokerError {
    fn from(e: LogError) -> Self {
        BrokerError::kafka(e.error_code(), e.to_string())
    }
}

/// After an append that must be durable before it is acknowledged: sync this flusher up to
/// this offset, outside every lock.
pub type SyncNeeded = Option<(Arc<Flusher>, i64)>;

impl Partition {
    /// One compaction pass if the log is compacted and due (see `log::cleaner`): planned and
    /// swapped in under the log lock, run without it. `None` when there was nothing to do.
    pub fn clean(
        &self,
        limits: &CleanerLimits,
        now_ms: i64,
    ) -> Result<Option<CleanStats>, BrokerError> {
        let Some(plan) = lock_log(&self.log).clean_plan(now_ms) else {
            return Ok(None);
        };
        let last = self.producers().last_offsets();
        let cleaned = plan.with_producer_last_offsets(last).run(limits, now_ms)?;
        let stats = lock_log(&self.log).finish_clean(cleaned)?;
        Ok(Some(stats))
    }

    pub fn new(topic: &str, index: i32, log: SharedLog, producers: ProducerStates) -> Self {
        Self {
            topic: topic.to_owned(),
            index,
            log,
            producers: Mutex::new(producers),
        }
    }

    fn producers(&self) -> MutexGuard<'_, ProducerStates> {
        self.producers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn log(&self) -> MutexGuard<'_, Log> {
        lock_log(&self.log)
    }

    /// Appends validated batches. Idempotent batches are checked against the producer state
    /// first: a retried batch is answered with its original offsets and not written again.
    pub fn append(
        &self,
        records: BytesMut,
        batches: &[BatchSummary],
        now_ms: i64,
    ) -> Result<(Appended, SyncNeeded), BrokerError> {
        let mut producers = self.producers();
        let idempotent = batches.iter().find(|b| b.producer_id >= 0);
        if let Some(b) = idempotent {
            if batches.len() != 1 {
                return Err(BrokerError::kafka(
                    ErrorCode::INVALID_RECORD,
                    "an idempotent producer must send one batch per partition",
                ));
            }
            let last = last_seq(b.base_sequence, b.records);
            let check = producers
                .check(b.producer_id, b.producer_epoch, b.base_sequence, last)
                .map_err(|code| {
                    BrokerError::kafka(
                        code,
                        format!(
                            "producer {} epoch {} sequence {}",
                            b.producer_id, b.producer_epoch, b.base_sequence
                        ),
                    )
                })?;
            if let Check::Duplicate(meta) = check {
                return Ok((
                    Appended {
                        base_offset: meta.first_offset,
                        last_offset: meta.last_offset,
                        log_append_time: -1,
                        log_start_offset: self.log().log_start_offset(),
                        duplicate: true,
                    },
                    None,
                ));
            }
        }
        let mut log = self.log();
        let epoch = log.latest_epoch().unwrap_or(0).max(0);
        let info = log.append(records, epoch, now_ms)?;
        // A single node: the high watermark follows the log end, except in durable mode, where
        // it waits for the fsync (consumers never see what is not on disk yet).
        if !log.config().is_durable() {
            let leo = log.log_end_offset();
            log.set_high_watermark(leo);
        }
        let sync = info.sync_to.map(|o| (log.flusher(), o));
        drop(log);
        if let Some(b) = idempotent {
            producers.record(
                b.producer_id,
                b.producer_epoch,
                BatchMeta {
                    first_seq: b.base_sequence,
                    last_seq: last_seq(b.base_sequence, b.records),
                    first_offset: info.base_offset,
                    last_offset: info.last_offset,
                    timestamp: b.max_timestamp,
                },
            );
        }
        Ok((
            Appended {
                base_offset: info.base_offset,
                last_offset: info.last_offset,
                log_append_time: info.log_append_time,
                log_start_offset: info.log_start_offset,
                duplicate: false,
            },
            sync,
        ))
    }

    pub fn offsets(&self) -> Offsets {
        let log = self.log();
        let hw = log.high_watermark();
        Offsets {
            log_start: log.log_start_offset(),
            log_end: log.log_end_offset(),
            high_watermark: hw,
            last_stable: hw,
        }
    }

    /// Reads whole batches from `offset`, up to `max_bytes` (at least one batch), not past
    /// `upper` (the high watermark or last stable offset). File reads run outside the lock.
    pub fn read(&self, offset: i64, max_bytes: usize, upper: i64) -> Result<Bytes, BrokerError> {
        let info = self.log().read(offset, max_bytes, upper)?;
        Ok(info.read_bytes()?)
    }

    /// The file regions [`Self::read`] would read (for sending with `sendfile`).
    pub fn read_slices(
        &self,
        offset: i64,
        max_bytes: usize,
        upper: i64,
    ) -> Result<crate::log::ReadInfo, BrokerError> {
        Ok(self.log().read(offset, max_bytes, upper)?)
    }

    /// The first offset whose timestamp is at or after `ts`, with that timestamp.
    pub fn offset_for_timestamp(&self, ts: i64) -> Result<Option<(i64, i64)>, BrokerError> {
        Ok(self.log().offset_for_timestamp(ts)?)
    }

    /// The offset and timestamp of the record with the largest timestamp.
    pub fn max_timestamp(&self) -> Result<Option<(i64, i64)>, BrokerError> {
        Ok(self.log().max_timestamp_offset()?)
    }

    /// Moves the log start offset (DeleteRecords); returns the new low watermark.
    pub fn delete_records_before(&self, offset: i64) -> Result<i64, BrokerError> {
        let mut log = self.log();
        log.delete_records_before(offset)?;
        Ok(log.log_start_offset())
    }

    /// The largest epoch <= `epoch` and the end offset of that epoch.
    pub fn end_offset_for_epoch(&self, epoch: i32) -> (i32, i64) {
        self.log().end_offset_for_epoch(epoch)
    }

    /// The leader epoch (a single node leads from epoch 0 and never changes it).
    pub fn leader_epoch(&self) -> i32 {
        0
    }

    /// Raises the high watermark to `offset` (after an fsync in durable mode).
    pub fn advance_high_watermark(&self, offset: i64) {
        let mut log = self.log();
        if offset > log.high_watermark() {
            let capped = offset.min(log.log_end_offset());
            log.set_high_watermark(capped);
        }
    }

    /// The producer-state snapshot text.
    pub fn producer_snapshot(&self) -> String {
        self.producers().to_snapshot()
    }

    /// Applies a new configuration to the log.
    pub fn set_config(&self, config: crate::log::LogConfig) -> Result<(), BrokerError> {
        Ok(self.log().set_config(config)?)
    }
}
