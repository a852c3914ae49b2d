//! Appends: a producer's records, a coordinator's batch, a transaction marker, a follower's
//! copy of its leader's batches. A leader's append checks the leadership and, for acks=all,
//! `min.insync.replicas` before it writes anything, then the producer state, then writes under
//! the log lock and moves the high watermark; what the answer still waits for (an fsync in
//! durable mode, the in-sync replicas for acks=all, `min.insync.replicas` once replicated) is
//! the returned [`PendingAck`], waited for with every lock released
//! ([`super::super::delayed::complete_append`]).

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use kafka_protocol::error_code::ErrorCode;

use super::super::producer_state::{BatchMeta, Check, Marker, last_seq};
use super::super::validate::{self, Allowance, BatchSummary, Failed, Refused};
use super::super::{MemoryBudget, producer_state::ProducerStates};
use super::producers::{index_abort, record_producers};
use super::{Moved, Partition};
use crate::error::BrokerError;
use crate::log::{AppendInfo, Flusher, Log};
use crate::sync::lock;

/// What a produce request's acks ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acks {
    /// acks=0 or acks=1: the leader's own log (and the fsync when one is due).
    Leader,
    /// acks=all: every in-sync replica has the batch (the high watermark reached it).
    All,
}

impl Acks {
    /// From the request's `acks` field (-1, 0 or 1; the caller refused anything else).
    pub fn from_wire(acks: i16) -> Self {
        if acks == -1 { Self::All } else { Self::Leader }
    }
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

/// After an append that must be durable before it is acknowledged: sync this flusher up to
/// this offset, outside every lock.
pub type SyncNeeded = Option<(Arc<Flusher>, i64)>;

/// What a leader's append still needs before it may be acknowledged: an fsync (group commit)
/// and, for acks=all, a high watermark at or past `required` with the in-sync replicas still
/// at least `min_insync`. Waited for by [`super::super::delayed::complete_append`].
#[derive(Debug)]
pub struct PendingAck {
    pub(crate) partition: Arc<Partition>,
    /// The offset after the appended batches.
    pub(crate) required: i64,
    pub(crate) sync: SyncNeeded,
    pub(crate) acks: Acks,
    /// acks=all: the ISR must still hold this many replicas once the batch is replicated
    /// (`min.insync.replicas`; else NOT_ENOUGH_REPLICAS_AFTER_APPEND). 0: not checked.
    pub(crate) min_insync: usize,
}

impl PendingAck {
    /// Whether nothing is left to wait for (no fsync due, and for acks=all the high
    /// watermark covers it).
    pub fn is_acknowledged(&self) -> bool {
        self.sync.is_none()
            && (self.acks == Acks::Leader || self.partition.high_watermark() >= self.required)
    }
}

impl Partition {
    /// Reports an append that failed on the disk, rate-limited.
    fn append_failed(&self, error: &crate::log::LogError) {
        let now = std::time::Instant::now();
        if let Some(failures) = lock(&self.append_failures).hit(now) {
            tracing::warn!(
                topic = %self.topic,
                partition = self.index,
                %error,
                failures,
                "appends failing on the disk: {failures} since the last report (one report \
                 per partition every {} s)",
                super::APPEND_FAILURE_LOG_INTERVAL.as_secs()
            );
        }
    }

    /// Writes `records` at the log end with the current leader epoch.
    fn write(
        &self,
        log: &mut Log,
        records: BytesMut,
        epoch: i32,
        now_ms: i64,
    ) -> Result<AppendInfo, BrokerError> {
        log.append(records, epoch, now_ms).map_err(|e| {
            if e.is_io() {
                self.append_failed(&e);
            }
            BrokerError::from(e)
        })
    }

    /// A producer's record set: validated against the topic's rules ([`validate`]),
    /// decompressing within memory reserved from `budget` (waiting for it), then appended as
    /// [`Self::append_as_leader`] does.
    pub async fn append_records(
        self: &Arc<Self>,
        records: &Bytes,
        acks: Acks,
        now_ms: i64,
        budget: &MemoryBudget,
    ) -> Result<(Appended, PendingAck), Refused> {
        let rules = self.rules();
        let cap = budget.total();
        let mut wanted = validate::memory_estimate(records, rules.max_message_bytes, cap);
        let batches = loop {
            let reserved = budget.reserve(wanted).await;
            let allowance = Allowance {
                granted: reserved.bytes(),
                cap,
            };
            let tp = (self.topic.as_str(), self.index);
            match validate::check(records, &rules, tp, now_ms, allowance) {
                Ok(batches) => break batches,
                Err(Failed::Refused(r)) => return Err(r),
                // Given back before asking for more, so that checks never wait on each other.
                Err(Failed::NeedsMemory(n)) if n > reserved.bytes() => wanted = n,
                Err(Failed::NeedsMemory(n)) => {
                    return Err(BrokerError::kafka(
                        ErrorCode::INVALID_RECORD,
                        format!("records need {n} bytes to decompress, more than granted"),
                    )
                    .into());
                }
            }
        };
        Ok(self.append_as_leader(BytesMut::from(records.as_ref()), &batches, acks, now_ms)?)
    }

    /// A leader's append of validated batches. Refused with NOT_LEADER_OR_FOLLOWER on a
    /// follower and, for acks=all, NOT_ENOUGH_REPLICAS while the ISR is smaller than the
    /// topic's `min.insync.replicas` (nothing written). Idempotent batches are checked against
    /// the producer state (a retried batch is answered with its original offsets and not
    /// written again); offsets are assigned from the log end and the batches stamped with the
    /// leader epoch. The answer waits for what [`PendingAck`] names.
    pub fn append_as_leader(
        self: &Arc<Self>,
        records: BytesMut,
        batches: &[BatchSummary],
        acks: Acks,
        now_ms: i64,
    ) -> Result<(Appended, PendingAck), BrokerError> {
        let mut producers = self.producers();
        let (epoch, min_insync) = {
            let state = self.state();
            self.require_leader(&state)?;
            (state.leader_epoch(), self.min_insync_for(&state, acks)?)
        };
        // Transactions first (Kafka checks the epoch, then the transaction state, then the
        // sequence): a coordinator's own batches (no sequence) are checked here too.
        for b in batches.iter().filter(|b| b.producer_id >= 0) {
            producers
                .check_txn(b.producer_id, b.producer_epoch, b.transactional)
                .map_err(|code| {
                    BrokerError::kafka(
                        code,
                        format!(
                            "producer {} epoch {}{}",
                            b.producer_id,
                            b.producer_epoch,
                            if code == ErrorCode::INVALID_TXN_STATE {
                                ": a non-transactional batch while its transaction is open"
                            } else {
                                ""
                            }
                        ),
                    )
                })?;
        }
        // A batch with a producer id but no sequence is a coordinator's own (the group
        // coordinator's transactional offset commits): not checked for order or duplicates.
        let idempotent = batches
            .iter()
            .find(|b| b.producer_id >= 0 && b.base_sequence >= 0);
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
                let appended = Appended {
                    base_offset: meta.first_offset,
                    last_offset: meta.last_offset,
                    log_append_time: -1,
                    log_start_offset: self.offsets().log_start,
                    duplicate: true,
                };
                // The original append's acknowledgement condition applies to the retry.
                let pending = PendingAck {
                    partition: Arc::clone(self),
                    required: meta.last_offset + 1,
                    sync: None,
                    acks,
                    min_insync,
                };
                return Ok((appended, pending));
            }
        }
        let mut log = self.log();
        let info = self.write(&mut log, records, epoch, now_ms)?;
        // Each batch's offsets follow from the records before it (the leader assigned them
        // from the log end, one per record).
        let mut at = info.base_offset;
        for b in batches {
            if b.producer_id >= 0 && b.transactional {
                producers.begin_txn(b.producer_id, b.producer_epoch, at, now_ms);
            }
            at += i64::from(b.records.max(1));
        }
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
                now_ms,
            );
        }
        Ok(self.finish_append(log, producers, &info, acks, min_insync))
    }

    /// The answer to a leader's append, with the log and producer state still locked: moves
    /// the high watermark, publishes, releases the locks and wakes whoever waits for what
    /// moved.
    fn finish_append(
        self: &Arc<Self>,
        mut log: std::sync::MutexGuard<'_, Log>,
        mut producers: std::sync::MutexGuard<'_, ProducerStates>,
        info: &AppendInfo,
        acks: Acks,
        min_insync: usize,
    ) -> (Appended, PendingAck) {
        let sync = info.sync_to.map(|o| (log.flusher(), o));
        self.advance_high_watermark(&mut log);
        let moved: Moved = self.publish(&log, &mut producers);
        drop(log);
        drop(producers);
        self.wake(moved);
        (
            Appended {
                base_offset: info.base_offset,
                last_offset: info.last_offset,
                log_append_time: info.log_append_time,
                log_start_offset: info.log_start_offset,
                duplicate: false,
            },
            PendingAck {
                partition: Arc::clone(self),
                required: info.last_offset + 1,
                sync,
                acks,
                min_insync,
            },
        )
    }

    /// Writes a transaction marker of producer `producer_id` (a control batch: COMMIT when
    /// `commit`, else ABORT, with `coordinator_epoch`), as the transaction coordinator does
    /// at the end of a transaction; leader only, acks=all (so under `min.insync.replicas` as
    /// a produce: NOT_ENOUGH_REPLICAS before anything is written). Refused as Kafka's
    /// `ProducerAppendInfo` refuses it: an epoch older than the producer's is
    /// INVALID_PRODUCER_EPOCH, a coordinator epoch older than the producer's last marker's
    /// TRANSACTION_COORDINATOR_FENCED. A newer epoch becomes the producer's (the coordinator
    /// fences the producer with it). The producer's open transaction ends at the marker (an
    /// abort goes into the `.txnindex`); a marker without one is written all the same and
    /// completes nothing.
    pub fn write_txn_marker(
        self: &Arc<Self>,
        producer_id: i64,
        producer_epoch: i16,
        coordinator_epoch: i32,
        commit: bool,
        now_ms: i64,
    ) -> Result<(Appended, PendingAck), BrokerError> {
        use kafka_protocol::record::control::{ControlRecordType, end_txn_marker_batch};
        let kind = if commit {
            ControlRecordType::Commit
        } else {
            ControlRecordType::Abort
        };
        let batch =
            end_txn_marker_batch(kind, producer_id, producer_epoch, coordinator_epoch, now_ms)
                .map_err(|e| BrokerError::kafka(ErrorCode::UNKNOWN_SERVER_ERROR, e.to_string()))?;
        let mut producers = self.producers();
        let (epoch, min_insync) = {
            let state = self.state();
            self.require_leader(&state)?;
            (
                state.leader_epoch(),
                self.min_insync_for(&state, Acks::All)?,
            )
        };
        producers
            .check_marker(producer_id, producer_epoch, coordinator_epoch)
            .map_err(|code| {
                BrokerError::kafka(
                    code,
                    format!(
                        "marker of producer {producer_id} epoch {producer_epoch} coordinator \
                         epoch {coordinator_epoch}"
                    ),
                )
            })?;
        let mut log = self.log();
        let info = self.write(&mut log, BytesMut::from(batch.as_ref()), epoch, now_ms)?;
        let marker = Marker {
            epoch: producer_epoch,
            coordinator_epoch,
            offset: info.base_offset,
            commit,
            timestamp: now_ms,
        };
        let completed = producers.complete_txn(producer_id, marker, now_ms);
        if let Some(txn) = completed.filter(|t| t.aborted) {
            if let Err(e) = index_abort(&mut log, &producers, &txn) {
                // The entry is kept in memory and the file rewritten at the next flush.
                tracing::warn!(topic = %self.topic, partition = self.index, error = %e,
                    "transaction index not written");
            }
        }
        tracing::debug!(topic = %self.topic, partition = self.index, producer_id,
            producer_epoch, commit, offset = info.base_offset, ?completed, "transaction marker");
        Ok(self.finish_append(log, producers, &info, Acks::All, min_insync))
    }

    /// A follower's append of batches fetched from its leader, kept as the leader wrote them
    /// (offsets, epochs, timestamps, producer fields). The producer state follows the batch
    /// headers. The high watermark is not moved: the leader's comes with the fetch answer
    /// ([`Self::set_high_watermark_from_leader`]).
    pub fn append_as_follower(
        &self,
        records: BytesMut,
        now_ms: i64,
    ) -> Result<AppendInfo, BrokerError> {
        let frozen = records.clone().freeze();
        let mut producers = self.producers();
        let mut log = self.log();
        let info = log.append_as_follower(records, now_ms)?;
        for txn in record_producers(&mut producers, frozen, now_ms) {
            if let Err(e) = index_abort(&mut log, &producers, &txn) {
                tracing::warn!(topic = %self.topic, partition = self.index, error = %e,
                    "transaction index not written");
            }
        }
        let moved = self.publish(&log, &mut producers);
        drop(log);
        drop(producers);
        self.wake(moved);
        Ok(info)
    }
}
