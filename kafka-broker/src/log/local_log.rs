//! [`Log`]: one partition's log, the segments of one directory. Opening (recovery is
//! [`super::recovery`]'s), appending and reading; the upkeep (flush, retention, truncation)
//! is in `maintain.rs`, compaction in `cleaner.rs` (both add methods to [`Log`]).
//!
//! Imports the lower files of `log/` (recovery, segment, checkpoint, flusher, files, io); the
//! cleaner and the manager import it, never the other way.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::BytesMut;
use kafka_protocol::record::layout::HeaderView;
use kafka_protocol::record::{RecordBatchMut, TimestampType};

use super::checkpoint::{
    self, CLEANER_CHECKPOINT_FILE, LOG_START_FILE, LeaderEpochCache, TXN_REBUILD_FILE,
};
use super::config::LogConfig;
use super::error::LogError;
use super::files::FileCache;
use super::flusher::Flusher;
use super::io::{FileKind, LogIo, StdIo};
use super::recovery::{self, LogRecovery};
use super::segment::{AppendedBatch, Segment};
use super::txn_index::AbortedTxn;
use super::{AppendInfo, EpochEntry, ReadInfo};

/// What [`Log::open`] did, for logs and tests (a summary of [`Log::recovery`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OpenReport {
    /// Recovery was requested (unclean shutdown).
    pub recovery: bool,
    pub segments: usize,
    /// Segments whose batches were all checked (those past the recovery point).
    pub segments_scanned: usize,
    pub batches_checked: u64,
    /// Bytes cut from the end of the log by recovery.
    pub truncated_bytes: u64,
    /// Segments after a truncation point that recovery deleted.
    pub segments_deleted: usize,
    /// Segments whose indexes were rebuilt on a clean start.
    pub indexes_rebuilt: usize,
}

/// One partition's log. See the module docs of `log` for the file layout and the corruption
/// policy, and [`super::flusher`] for durability.
#[derive(Debug)]
pub struct Log {
    pub(crate) dir: PathBuf,
    pub(crate) config: LogConfig,
    pub(crate) io: Arc<dyn LogIo>,
    /// The broker's open segment files (see [`super::files`]).
    pub(crate) files: Arc<FileCache>,
    pub(crate) segments: BTreeMap<i64, Segment>,
    pub(crate) log_start_offset: i64,
    pub(crate) high_watermark: i64,
    pub(crate) recovery_point: i64,
    pub(crate) epochs: LeaderEpochCache,
    pub(crate) flusher: Arc<Flusher>,
    pub(crate) unflushed_messages: u64,
    pub(crate) last_flush_ms: Option<i64>,
    pub(crate) report: OpenReport,
    /// What recovery found and did when the log was opened.
    pub(crate) recovery: LogRecovery,
    pub(crate) deleted: bool,
    /// Where the part of the log not cleaned yet starts (compacted logs; see `cleaner`).
    pub(crate) cleaner_checkpoint: i64,
    /// The segments from this base offset on need their `.txnindex` rebuilt from the
    /// batches (see [`Self::txn_index_rebuild_from`]).
    pub(crate) txn_rebuild_from: Option<i64>,
}

/// Reads fields of the header of `batch` (a whole batch, checked by `RecordBatchMut`).
fn header_fields<T>(batch: &[u8], read: impl FnOnce(HeaderView<'_>) -> T) -> Result<T, LogError> {
    HeaderView::new(batch)
        .map(read)
        .map_err(|e| LogError::InvalidRecords(e.to_string()))
}

/// How [`Log::append_batches`] treats the batches' offsets and epochs.
#[derive(Debug, Clone, Copy)]
enum Stamp {
    /// A leader's append: offsets from the log end, this leader epoch, log-append time if
    /// the topic uses it.
    Leader(i32),
    /// A follower's append: everything as the leader wrote it.
    Keep,
}

impl Log {
    /// Opens (or creates) the log in `dir`. With `recover` (after an unclean shutdown) every
    /// batch past the recovery point is checked and the log cut at the first invalid byte;
    /// see the module docs of `log`.
    pub fn open(dir: impl AsRef<Path>, config: LogConfig, recover: bool) -> Result<Self, LogError> {
        Self::open_with_io(dir, config, recover, Arc::new(StdIo))
    }

    /// [`Self::open`] with writes and fsyncs going through `io`, and a file cache of its own
    /// sized for the process's descriptor limit.
    pub fn open_with_io(
        dir: impl AsRef<Path>,
        config: LogConfig,
        recover: bool,
        io: Arc<dyn LogIo>,
    ) -> Result<Self, LogError> {
        let files = FileCache::with_default_capacity(usize::MAX);
        Self::open_with(dir, config, recover, io, files)
    }

    /// [`Self::open_with_io`], its segment files opened through `files` (the broker's cache).
    pub fn open_with(
        dir: impl AsRef<Path>,
        config: LogConfig,
        recover: bool,
        io: Arc<dyn LogIo>,
        files: Arc<FileCache>,
    ) -> Result<Self, LogError> {
        config.validate()?;
        let dir = dir.as_ref().to_owned();
        io.create_dir_all(&dir)
            .map_err(|e| LogError::io("create directory", &dir, e))?;
        // Read before recovery changes anything: an unreadable log start offset is refused
        // (guessing could expose deleted records).
        let checkpointed_start = checkpoint::read_offset(io.as_ref(), &dir, LOG_START_FILE)?;
        let mut epochs = LeaderEpochCache::load(io.as_ref(), &dir)?;
        let interval = config.index_interval_bytes;
        let recovery::Recovered {
            mut segments,
            outcome,
        } = recovery::recover_log(&files, &io, &dir, interval, recover)?;
        for entry in outcome.segments.iter().flat_map(|o| &o.leader_epochs) {
            epochs.assign(entry.epoch, entry.start_offset);
        }
        if segments.is_empty() {
            let base = checkpointed_start.unwrap_or(0).max(0);
            segments.insert(base, Segment::create(&files, &io, &dir, base, interval)?);
        }
        let first_base = segments.keys().next().copied().unwrap_or(0);
        let leo = segments
            .values()
            .next_back()
            .map_or(0, Segment::next_offset);
        let log_start_offset = checkpointed_start
            .unwrap_or(first_base)
            .max(first_base)
            .min(leo);
        // An epoch that starts at the log end is kept: a leader starts its epoch there before
        // it has appended anything, and the epoch must survive a restart.
        epochs.truncate_from_end(leo.saturating_add(1));
        epochs.truncate_from_start(log_start_offset);
        let report = OpenReport {
            recovery: recover,
            segments: segments.len(),
            segments_scanned: outcome.segments_scanned(),
            batches_checked: outcome.batches_scanned(),
            truncated_bytes: outcome.truncated_bytes(),
            segments_deleted: outcome.segments_deleted.len(),
            indexes_rebuilt: outcome.trusted_indexes_rebuilt(),
        };
        // Routine recovery is logged at debug (a broker recovering thousands of logs says so
        // once, in the manager); a repair at info, with what was done.
        macro_rules! log_recovery {
            ($level:ident) => {
                tracing::$level!(
                    dir = %dir.display(),
                    unclean = recover,
                    segments = report.segments,
                    scan_from = ?outcome.scan_from,
                    segments_scanned = report.segments_scanned,
                    batches_validated = report.batches_checked,
                    truncated_bytes = report.truncated_bytes,
                    segments_deleted = report.segments_deleted,
                    indexes_rebuilt = report.indexes_rebuilt,
                    leftovers_removed = outcome.leftovers_removed.len(),
                    swaps_finished = outcome.swaps.swaps_finished.len(),
                    txn_index_rebuild_from = ?outcome.txn_rebuild.as_ref().map(|r| r.from),
                    "log recovery"
                )
            };
        }
        if outcome.repaired() {
            log_recovery!(info);
        } else if recover {
            log_recovery!(debug);
        }
        let cleaner_checkpoint =
            match checkpoint::read_offset(io.as_ref(), &dir, CLEANER_CHECKPOINT_FILE) {
                Err(e) if e.is_io() => return Err(e),
                // A malformed cleaner checkpoint only costs cleaning the log again.
                other => other.ok().flatten().unwrap_or(0).min(leo),
            };
        let flusher = Arc::new(Flusher::new(dir.clone(), Arc::clone(&io), leo));
        let txn_rebuild_from = outcome.txn_rebuild.as_ref().map(|r| r.from);
        let mut log = Self {
            dir,
            config,
            io,
            files,
            segments,
            log_start_offset,
            high_watermark: leo,
            recovery_point: match outcome.scan_from {
                Some(from) if recover => from.clamp(0, leo),
                _ => leo,
            },
            epochs,
            flusher,
            unflushed_messages: 0,
            last_flush_ms: None,
            report,
            recovery: outcome,
            deleted: false,
            cleaner_checkpoint,
            txn_rebuild_from,
        };
        if recover {
            log.flush()?;
        } else if log.epochs.dirty {
            log.epochs.persist(log.io.as_ref(), &log.dir)?;
        }
        tracing::debug!(dir = %log.dir.display(), log_start_offset, log_end_offset = leo,
            report = ?log.report, "log opened");
        Ok(log)
    }

    pub(crate) fn active(&self) -> Result<&Segment, LogError> {
        self.segments
            .values()
            .next_back()
            .ok_or_else(|| self.no_segment())
    }

    pub(crate) fn active_mut(&mut self) -> Result<&mut Segment, LogError> {
        let dir = self.dir.clone();
        self.segments
            .values_mut()
            .next_back()
            .ok_or_else(|| LogError::corrupt(dir, 0, "log has no segment"))
    }

    fn no_segment(&self) -> LogError {
        LogError::corrupt(&self.dir, 0, "log has no segment")
    }

    /// Appends `records`, one or more whole v2 batches the caller has validated (CRC, sizes,
    /// timestamps). Offsets are assigned by stamping each batch's base offset in place, with
    /// `leader_epoch` as partition leader epoch and, under `LogAppendTime`, `now_ms` as max
    /// timestamp (CRC recomputed). The bytes are written with one write; on an I/O error
    /// nothing of them stays visible and the log is unchanged. Rolls the active segment first
    /// when the records would make it exceed `segment.bytes` or it is older than `segment.ms`.
    ///
    /// When [`AppendInfo::sync_to`] is set, the caller must sync before acknowledging.
    pub fn append(
        &mut self,
        records: BytesMut,
        leader_epoch: i32,
        now_ms: i64,
    ) -> Result<AppendInfo, LogError> {
        self.append_batches(records, Stamp::Leader(leader_epoch), now_ms)
    }

    /// Appends batches exactly as a leader wrote them (a follower's append): offsets, leader
    /// epochs and timestamps are kept, not stamped. The first batch must start at or after the
    /// log end ([`LogError::UnexpectedOffset`] otherwise), and each batch after the one before
    /// it (a compacted leader's log may have gaps). Each batch whose partition leader epoch is
    /// newer than the latest one known starts that epoch in the leader epoch cache.
    pub fn append_as_follower(
        &mut self,
        records: BytesMut,
        now_ms: i64,
    ) -> Result<AppendInfo, LogError> {
        self.append_batches(records, Stamp::Keep, now_ms)
    }

    fn append_batches(
        &mut self,
        mut records: BytesMut,
        stamp: Stamp,
        now_ms: i64,
    ) -> Result<AppendInfo, LogError> {
        if self.deleted {
            return Err(LogError::Deleted {
                dir: self.dir.clone(),
            });
        }
        if self.flusher.is_poisoned() {
            return Err(LogError::SyncPoisoned {
                dir: self.dir.clone(),
                reason: "an earlier fsync failed".into(),
            });
        }
        if records.is_empty() {
            return Err(LogError::InvalidRecords("no record batch".into()));
        }
        if records.len() as u64 > self.config.segment_bytes {
            return Err(LogError::RecordsTooLarge {
                size: records.len(),
                max: self.config.segment_bytes,
            });
        }
        let log_end = self.log_end_offset();
        let log_append_time = matches!(stamp, Stamp::Leader(_))
            && self.config.message_timestamp_type == TimestampType::LogAppendTime;
        let mut batches = Vec::new();
        let mut new_epochs = Vec::new();
        let (mut next, mut pos) = (log_end, 0usize);
        let mut base_offset = None;
        let (mut max_timestamp, mut count) = (-1i64, 0u64);
        while pos < records.len() {
            let rest = records.get_mut(pos..).unwrap_or_default();
            let mut batch =
                RecordBatchMut::new(rest).map_err(|e| LogError::InvalidRecords(e.to_string()))?;
            let (delta, at, epoch) = header_fields(batch.as_slice(), |h| {
                (
                    h.last_offset_delta(),
                    h.base_offset(),
                    h.partition_leader_epoch(),
                )
            })?;
            if delta < 0 {
                return Err(LogError::InvalidRecords(
                    "negative last offset delta".into(),
                ));
            }
            match stamp {
                Stamp::Leader(leader_epoch) => {
                    batch.set_base_offset(next);
                    batch.set_partition_leader_epoch(leader_epoch);
                    if log_append_time {
                        batch.set_log_append_time(now_ms);
                    }
                }
                Stamp::Keep => {
                    if at < next {
                        return Err(LogError::UnexpectedOffset {
                            offset: at,
                            expected: next,
                        });
                    }
                    next = at;
                    let newest = new_epochs
                        .last()
                        .map(|&(e, _)| e)
                        .or_else(|| self.latest_epoch());
                    if epoch >= 0 && newest.is_none_or(|n| epoch > n) {
                        new_epochs.push((epoch, at));
                    }
                }
            }
            base_offset.get_or_insert(next);
            let batch_max = header_fields(batch.as_slice(), |h| h.max_timestamp())?;
            let last_offset = next + i64::from(delta);
            batches.push(AppendedBatch {
                position: pos,
                size: batch.size(),
                last_offset,
                max_timestamp: batch_max,
            });
            max_timestamp = max_timestamp.max(batch_max);
            count += u64::from(delta.unsigned_abs()) + 1;
            pos += batch.size();
            next = last_offset + 1;
        }
        let base_offset = base_offset.unwrap_or(log_end);
        let last_offset = next - 1;
        if last_offset - base_offset > i64::from(i32::MAX) {
            return Err(LogError::InvalidRecords(
                "the batches span more offsets than a segment can index".into(),
            ));
        }
        self.maybe_roll(records.len() as u64, last_offset, now_ms)?;
        let io = Arc::clone(&self.io);
        let active = self.active_mut()?;
        active.append(io.as_ref(), &records, &batches, now_ms)?;
        let file = Arc::clone(active.handle());
        self.flusher.note_append(next, &file);
        let mut assigned = false;
        match stamp {
            Stamp::Leader(epoch) => assigned |= self.epochs.assign(epoch, base_offset),
            Stamp::Keep => {
                for (epoch, start) in new_epochs {
                    assigned |= self.epochs.assign(epoch, start);
                }
            }
        }
        if assigned && let Err(e) = self.epochs.persist(self.io.as_ref(), &self.dir) {
            tracing::warn!(error = %e, "leader epoch checkpoint not written; will retry");
        }
        Ok(AppendInfo {
            base_offset,
            last_offset,
            log_append_time: if log_append_time { now_ms } else { -1 },
            max_timestamp,
            log_start_offset: self.log_start_offset,
            record_count: count,
            sync_to: self.sync_due(count, next, now_ms),
        })
    }

    /// Whether the flush thresholds ask for an fsync up to `log_end_offset` now.
    fn sync_due(&mut self, appended: u64, log_end_offset: i64, now_ms: i64) -> Option<i64> {
        self.unflushed_messages += appended;
        let last = *self.last_flush_ms.get_or_insert(now_ms);
        let by_count = self
            .config
            .flush_interval_messages
            .is_some_and(|n| self.unflushed_messages >= n);
        let by_time = self
            .config
            .flush_interval_ms
            .is_some_and(|ms| now_ms.saturating_sub(last) >= ms);
        (by_count || by_time).then(|| {
            self.unflushed_messages = 0;
            self.last_flush_ms = Some(now_ms);
            log_end_offset
        })
    }

    fn maybe_roll(&mut self, len: u64, last_offset: i64, now_ms: i64) -> Result<(), LogError> {
        let config = &self.config;
        let active = self.active()?;
        let full = active.size() + len > config.segment_bytes;
        let old = active
            .created_ms
            .is_some_and(|c| now_ms.saturating_sub(c) > config.segment_ms);
        let far = last_offset - active.base_offset() > i64::from(i32::MAX);
        if active.is_empty() || !(full || old || far) {
            return Ok(());
        }
        let new_base = active.next_offset();
        let io = Arc::clone(&self.io);
        self.active_mut()?.seal(io.as_ref())?;
        let seg = Segment::create(
            &self.files,
            &self.io,
            &self.dir,
            new_base,
            self.config.index_interval_bytes,
        )?;
        tracing::debug!(segment = %seg.path().display(), full, old, "rolled a new segment");
        self.segments.insert(new_base, seg);
        self.flusher.note_new_segment();
        Ok(())
    }

    /// Reads whole batches from the one containing `offset`: up to `max_bytes`, but at least
    /// the first batch even if larger (as Kafka does for the first partition of a fetch), and
    /// only batches that end below `upper_bound` (the high watermark or last stable offset).
    /// An offset below the log start or above the log end is [`LogError::OffsetOutOfRange`].
    pub fn read(
        &self,
        offset: i64,
        max_bytes: usize,
        upper_bound: i64,
    ) -> Result<ReadInfo, LogError> {
        self.read_with(offset, max_bytes, upper_bound, true)
    }

    /// [`Self::read`], choosing whether a first batch larger than `max_bytes` is returned.
    pub fn read_with(
        &self,
        offset: i64,
        max_bytes: usize,
        upper_bound: i64,
        min_one_batch: bool,
    ) -> Result<ReadInfo, LogError> {
        let leo = self.log_end_offset();
        if offset < self.log_start_offset || offset > leo {
            return Err(LogError::OffsetOutOfRange {
                offset,
                log_start_offset: self.log_start_offset,
                log_end_offset: leo,
            });
        }
        let mut info = ReadInfo {
            slices: Vec::new(),
            bytes: 0,
            next_offset: offset,
            log_start_offset: self.log_start_offset,
            high_watermark: self.high_watermark,
            log_end_offset: leo,
        };
        let bound = upper_bound.min(leo);
        if offset >= bound {
            return Ok(info);
        }
        let from = self
            .segments
            .range(..=offset)
            .next_back()
            .map_or(i64::MIN, |(&base, _)| base);
        for seg in self.segments.range(from..).map(|(_, s)| s) {
            let budget = max_bytes.saturating_sub(info.bytes);
            let r = seg.read(offset, budget, bound, min_one_batch && info.bytes == 0)?;
            if let Some(slice) = r.slice {
                info.bytes += slice.len;
                info.slices.push(slice);
            }
            if let Some(next) = r.next_offset {
                info.next_offset = next;
            }
            if r.limited || info.bytes >= max_bytes {
                break;
            }
        }
        Ok(info)
    }

    /// The first record whose timestamp is at least `timestamp` (`>= 0`): `(offset,
    /// timestamp)`, found through the time index of the first segment whose largest timestamp
    /// reaches it, then a scan. `None` if no record is that recent. (ListOffsets' special
    /// values -1 latest and -2 earliest are [`Self::log_end_offset`] and
    /// [`Self::log_start_offset`]; -3 is [`Self::max_timestamp_offset`].)
    pub fn offset_for_timestamp(&self, timestamp: i64) -> Result<Option<(i64, i64)>, LogError> {
        for seg in self.segments.values() {
            if seg.next_offset() <= self.log_start_offset || seg.max_timestamp().0 < timestamp {
                continue;
            }
            if let Some(found) = seg.find_timestamp(timestamp, self.log_start_offset)? {
                return Ok(Some(found));
            }
        }
        Ok(None)
    }

    /// The record with the largest timestamp (the first such, if several): `(offset,
    /// timestamp)`, for ListOffsets MAX_TIMESTAMP. `None` if the log has no timestamps.
    pub fn max_timestamp_offset(&self) -> Result<Option<(i64, i64)>, LogError> {
        let mut best: Option<&Segment> = None;
        for seg in self.segments.values() {
            if seg.next_offset() > self.log_start_offset
                && best.is_none_or(|b| seg.max_timestamp().0 > b.max_timestamp().0)
            {
                best = Some(seg);
            }
        }
        let Some(seg) = best else { return Ok(None) };
        let (timestamp, batch_last_offset) = seg.max_timestamp();
        if timestamp < 0 {
            return Ok(None);
        }
        let Some(h) = seg.find_batch(batch_last_offset)? else {
            return Ok(Some((batch_last_offset, timestamp)));
        };
        let exact = seg.record_at_or_after(&h, |_, ts| ts == timestamp)?;
        Ok(Some(exact.unwrap_or((batch_last_offset, timestamp))))
    }

    /// Records an aborted transaction in the `.txnindex` of the segment holding its marker
    /// (`entry.last_offset`, normally just appended to the active segment).
    pub fn add_aborted_txn(&mut self, entry: AbortedTxn) -> Result<(), LogError> {
        let io = Arc::clone(&self.io);
        let dir = self.dir.clone();
        let seg = self
            .segments
            .range_mut(..=entry.last_offset)
            .next_back()
            .map(|(_, s)| s)
            .ok_or_else(|| LogError::corrupt(dir, 0, "no segment holds the marker"))?;
        seg.add_aborted_txn(io.as_ref(), entry)
    }

    /// The aborted transactions that overlap `[from, upper)`: marker at or after `from`, first
    /// offset before `upper` (what a read_committed fetch of that range lists). An entry sits
    /// with its marker, which follows the transaction's data, so only the segments from the
    /// one holding `from` are looked at.
    pub fn aborted_txns(&self, from: i64, upper: i64) -> Vec<AbortedTxn> {
        let start = self
            .segments
            .range(..=from)
            .next_back()
            .map_or(i64::MIN, |(&b, _)| b);
        self.segments
            .range(start..)
            .flat_map(|(_, s)| s.aborted_txns())
            .filter(|e| e.last_offset >= from && e.first_offset < upper)
            .copied()
            .collect()
    }

    /// Every aborted transaction the log's `.txnindex` files hold, in marker order.
    pub fn all_aborted_txns(&self) -> Vec<AbortedTxn> {
        self.segments
            .values()
            .flat_map(|s| s.aborted_txns())
            .copied()
            .collect()
    }

    /// The base offset of the first segment whose `.txnindex` must be rebuilt from the
    /// batches (after recovery, or a damaged file): the partition layer walks the log, adds
    /// the entries of the aborts it finds from there ([`Self::add_aborted_txn`]) and calls
    /// [`Self::finish_txn_index_rebuild`].
    pub fn txn_index_rebuild_from(&self) -> Option<i64> {
        self.txn_rebuild_from
    }

    /// The rebuilt `.txnindex` files are fsynced and the rebuild is done.
    pub fn finish_txn_index_rebuild(&mut self) -> Result<(), LogError> {
        let Some(from) = self.txn_rebuild_from else {
            return Ok(());
        };
        let io = Arc::clone(&self.io);
        for seg in self.segments.range_mut(from..).map(|(_, s)| s) {
            seg.flush_txn_index(io.as_ref())?;
        }
        let path = self.dir.join(TXN_REBUILD_FILE);
        match io.remove_file(FileKind::Checkpoint, &path) {
            Ok(()) => checkpoint::sync_dir(io.as_ref(), &self.dir)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(LogError::io("remove checkpoint", path, e)),
        }
        self.txn_rebuild_from = None;
        Ok(())
    }

    /// The offset after the last record (the next offset to assign).
    pub fn log_end_offset(&self) -> i64 {
        self.segments
            .values()
            .next_back()
            .map_or(self.log_start_offset, Segment::next_offset)
    }

    /// The first offset that may be read.
    pub fn log_start_offset(&self) -> i64 {
        self.log_start_offset
    }

    /// The high watermark: the end of what consumers may read. Kept apart from the log end
    /// (they are equal on one node once appends are acknowledged).
    pub fn high_watermark(&self) -> i64 {
        self.high_watermark
    }

    /// Sets the high watermark, kept within `[log start, log end]`.
    pub fn set_high_watermark(&mut self, offset: i64) {
        self.high_watermark = offset.clamp(self.log_start_offset, self.log_end_offset());
    }

    /// OffsetForLeaderEpoch: `(epoch, end offset)` of the requested epoch; `(-1, -1)` when it
    /// is unknown (newer than every known epoch, or no epoch recorded).
    pub fn end_offset_for_epoch(&self, epoch: i32) -> (i32, i64) {
        self.epochs.end_offset_for(epoch, self.log_end_offset())
    }

    /// The latest leader epoch appended, if any.
    pub fn latest_epoch(&self) -> Option<i32> {
        self.epochs.latest_epoch()
    }

    /// Starts leader epoch `epoch` at the log end (a replica becoming leader, as Kafka's
    /// `maybeAssignEpochStartOffset`), persisted before it returns. Nothing happens when the
    /// epoch is not newer than the latest one.
    pub fn assign_epoch_at_end(&mut self, epoch: i32) -> Result<(), LogError> {
        let end = self.log_end_offset();
        if self.epochs.assign(epoch, end) {
            self.epochs.persist(self.io.as_ref(), &self.dir)?;
        }
        Ok(())
    }

    /// The leader epoch cache: each epoch and the offset where it began.
    pub fn leader_epochs(&self) -> &[EpochEntry] {
        self.epochs.entries()
    }

    /// The log's group commit handle (see [`super::flusher`]).
    pub fn flusher(&self) -> Arc<Flusher> {
        Arc::clone(&self.flusher)
    }

    /// Offsets below this were fsynced with their indexes, and are not checked by recovery.
    pub fn recovery_point(&self) -> i64 {
        self.recovery_point
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn config(&self) -> &LogConfig {
        &self.config
    }

    /// Replaces the configuration (a topic config change). Each setting is read where it is
    /// used, so it applies at once: `segment.bytes`, `segment.ms`, the timestamp type and the
    /// flush thresholds from the next append, retention and the cleaner (policy, ratios,
    /// lags) from their next round, `index.interval.bytes` to segments created from now on
    /// (an existing segment keeps the interval it was opened with). An invalid config is
    /// refused and the old one kept.
    pub fn set_config(&mut self, config: LogConfig) -> Result<(), LogError> {
        config.validate()?;
        self.config = config;
        Ok(())
    }

    /// What opening the log did (recovery statistics).
    pub fn open_report(&self) -> &OpenReport {
        &self.report
    }

    /// What recovery found and did, segment by segment, when the log was opened.
    pub fn recovery(&self) -> &LogRecovery {
        &self.recovery
    }

    /// Total bytes of the segment files.
    pub fn size_in_bytes(&self) -> u64 {
        self.segments.values().map(Segment::size).sum()
    }

    /// Base offsets of the segments, oldest first.
    pub fn segment_base_offsets(&self) -> Vec<i64> {
        self.segments.keys().copied().collect()
    }
}
