//! Log compaction (`cleanup.policy=compact`): keep the latest record of each key.
//!
//! A pass over one log has three steps, so that the partition lock is held only to look and
//! to swap, never while segments are read or written:
//!
//! 1. [`Log::clean_plan`] (under the lock) decides whether the log is due and what may be
//!    cleaned: every sealed segment wholly below the *first uncleanable offset* (the active
//!    segment's base, the high watermark, and the first segment younger than
//!    `min.compaction.lag.ms`). The *dirty* part starts at the cleaner checkpoint (file
//!    `cleaner-offset-checkpoint`): the log is due when the dirty share of the cleanable bytes
//!    reaches `min.cleanable.dirty.ratio`, or its oldest dirty segment is older than
//!    `max.compaction.lag.ms`.
//! 2. [`CleanPlan::run`] (no lock) maps each key of the dirty part to its latest offset (whole
//!    segments, until the map outgrows `log.cleaner.dedupe.buffer.size`; at least one), then
//!    rewrites the segments up to the end of the mapped part, consecutive ones grouped up to
//!    `segment.bytes`, into new segments in a staging directory. A record is kept when it is
//!    the latest of its key (or its key is newer than the map); records without a key are
//!    dropped; a tombstone (null value) is dropped once its segment is older than the newest
//!    already-cleaned segment by `delete.retention.ms`, so it survives at least its first
//!    cleaning. Transactions (Kafka's rules): only the part below the last stable offset is
//!    cleanable; the batches of aborted transactions (from the `.txnindex` files) are
//!    dropped and their keys never enter the map; committed transactional batches are
//!    cleaned as any other; control batches (the markers) are kept whole, also once the data
//!    of their transaction is gone (Kafka removes such markers after `delete.retention.ms`;
//!    we keep them, which costs one small batch per transaction). Offsets never
//!    change: a rewritten batch keeps its base offset and last offset delta
//!    ([`kafka_protocol::record::select_records`]); a batch left with no record is dropped,
//!    unless it is its producer's last batch, which stays as an empty batch so the producer's
//!    sequence survives a restart.
//! 3. [`Log::finish_clean`] (under the lock) swaps each new segment in for the segments it
//!    replaces, if they are still there unchanged, and moves the checkpoint to the end of the
//!    mapped part.
//!
//! Crash safety of the swap: the new segment's file is fsynced in the staging directory, then
//! renamed to `<base>-<end>.log.swap` in the log directory (the commit point: it names the
//! offsets it replaces), the replaced segments are deleted, and the swap file is renamed to
//! `<base>.log`. Opening a log finishes an interrupted swap (deletes the segments in
//! `[base, end)`, renames the swap file) and removes an unfinished staging directory; see
//! [`super::swap`], which holds the names both sides use. Readers holding a replaced
//! segment's file keep reading it: deleting an open file leaves its data readable.
//!
//! Imports the log (`local_log`) and the layers under it; nothing imports the cleaner but the
//! module root.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use kafka_protocol::record::layout::HeaderView;
use kafka_protocol::record::{RecordBatch, select_records};

use super::checkpoint::{self, CLEANER_CHECKPOINT_FILE, sync_dir};
use super::config::LogConfig;
use super::error::LogError;
use super::files::{FileCache, FileHandle};
use super::io::{FileKind, LogIo};
use super::local_log::Log;
use super::recovery::{SegmentCheck, recover_segment};
use super::scan::{ScanError, Scanner};
use super::segment::{
    AppendedBatch, INDEX_SUFFIX, LOG_SUFFIX, Segment, TIME_INDEX_SUFFIX, segment_path,
};
use super::swap::{STAGING_DIR, swap_name};
use super::txn_index::{AbortedTxn, TXN_INDEX_SUFFIX};
/// Largest decompressed batch the cleaner reads.
const MAX_DECOMPRESSED: usize = 256 * 1024 * 1024;
/// Bytes gathered before one write into a new segment.
const WRITE_CHUNK: usize = 1024 * 1024;
/// Bookkeeping bytes counted per key in the offset map, on top of the key itself.
const MAP_ENTRY_OVERHEAD: usize = 48;

/// Cleaner settings that are not per log.
#[derive(Debug, Clone, Copy)]
pub struct CleanerLimits {
    /// `log.cleaner.dedupe.buffer.size`: memory for the key -> offset map of one pass.
    pub dedupe_buffer_size: usize,
}

impl Default for CleanerLimits {
    fn default() -> Self {
        Self {
            dedupe_buffer_size: 128 * 1024 * 1024,
        }
    }
}

/// What one pass did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CleanStats {
    pub segments_before: usize,
    pub segments_after: usize,
    pub bytes_before: u64,
    pub bytes_after: u64,
    pub records_read: u64,
    pub records_removed: u64,
    pub tombstones_removed: u64,
    /// Groups not swapped in because their segments changed during the pass.
    pub groups_skipped: usize,
    /// The cleaner checkpoint after the pass.
    pub first_dirty_offset: i64,
}

/// A sealed segment as the plan saw it.
#[derive(Debug, Clone)]
struct SegmentRef {
    base: i64,
    /// Opened when the pass reads it, so a plan holds no descriptor.
    file: Arc<FileHandle>,
    size: u64,
    next_offset: i64,
    largest_timestamp: i64,
}

/// A cleaning pass of one log, planned under the partition lock and run without it.
#[derive(Debug)]
pub struct CleanPlan {
    dir: PathBuf,
    io: Arc<dyn LogIo>,
    files: Arc<FileCache>,
    config: LogConfig,
    /// Every sealed segment below the first uncleanable offset, oldest first.
    segments: Vec<SegmentRef>,
    first_dirty: i64,
    /// Tombstones in segments whose largest timestamp is at most this are dropped.
    delete_horizon_ms: i64,
    /// Producer id -> last offset of its last batch: that batch is never dropped whole.
    producer_last_offsets: HashMap<i64, i64>,
    /// Producer id -> (first offset, marker offset) of its aborted transactions.
    aborted: HashMap<i64, Vec<(i64, i64)>>,
    /// Every aborted transaction of the log (copied into the cleaned segments holding their
    /// markers).
    aborted_entries: Vec<AbortedTxn>,
}

/// New segments written by [`CleanPlan::run`], waiting for [`Log::finish_clean`].
#[derive(Debug)]
pub struct CleanedLog {
    staging: PathBuf,
    groups: Vec<CleanedGroup>,
    /// The end of the mapped part: the next pass starts there.
    first_dirty: i64,
    stats: CleanStats,
}

#[derive(Debug)]
struct CleanedGroup {
    base: i64,
    /// The offset after the last replaced segment.
    end: i64,
    /// `(base, size)` of each replaced segment, as the plan saw it.
    replaced: Vec<(i64, u64)>,
}

impl Log {
    /// The cleaner checkpoint: where the part of the log not yet cleaned starts.
    pub fn first_dirty_offset(&self) -> i64 {
        self.cleaner_checkpoint.max(self.log_start_offset)
    }

    /// A cleaning pass if the log is compacted and due (see the module docs), else `None`.
    pub fn clean_plan(&self, now_ms: i64) -> Option<CleanPlan> {
        self.clean_plan_below(now_ms, i64::MAX)
    }

    /// [`Self::clean_plan`], cleaning nothing at or past `last_stable` (the partition's last
    /// stable offset: open transactions are not cleaned).
    pub fn clean_plan_below(&self, now_ms: i64, last_stable: i64) -> Option<CleanPlan> {
        let config = &self.config;
        if !config.compact || self.deleted {
            return None;
        }
        let sealed = self.segments.len().saturating_sub(1);
        let mut first_uncleanable = self.high_watermark.min(last_stable);
        if let Some(active) = self.segments.values().next_back() {
            first_uncleanable = first_uncleanable.min(active.base_offset());
        }
        let mut segments = Vec::new();
        for seg in self.segments.values().take(sealed) {
            let young = config.min_compaction_lag_ms > 0
                && now_ms.saturating_sub(seg.largest_timestamp()) < config.min_compaction_lag_ms;
            if young || seg.next_offset() > first_uncleanable {
                break;
            }
            segments.push(SegmentRef {
                base: seg.base_offset(),
                file: Arc::clone(seg.handle()),
                size: seg.size(),
                next_offset: seg.next_offset(),
                largest_timestamp: seg.largest_timestamp(),
            });
        }
        let first_dirty = self.first_dirty_offset();
        let (clean, dirty): (Vec<&SegmentRef>, Vec<&SegmentRef>) =
            segments.iter().partition(|s| s.next_offset <= first_dirty);
        let dirty_bytes: u64 = dirty.iter().map(|s| s.size).sum();
        let clean_bytes: u64 = clean.iter().map(|s| s.size).sum();
        if dirty.is_empty() {
            return None;
        }
        let ratio = dirty_bytes as f64 / (dirty_bytes + clean_bytes).max(1) as f64;
        let overdue = dirty.first().is_some_and(|s| {
            now_ms.saturating_sub(s.largest_timestamp) > config.max_compaction_lag_ms
        });
        if ratio < config.min_cleanable_dirty_ratio && !overdue {
            return None;
        }
        let delete_horizon_ms = clean.last().map_or(i64::MIN, |s| {
            s.largest_timestamp
                .saturating_sub(config.delete_retention_ms)
        });
        let aborted_entries = self.all_aborted_txns();
        let mut aborted: HashMap<i64, Vec<(i64, i64)>> = HashMap::new();
        for a in &aborted_entries {
            aborted
                .entry(a.producer_id)
                .or_default()
                .push((a.first_offset, a.last_offset));
        }
        Some(CleanPlan {
            dir: self.dir.clone(),
            io: Arc::clone(&self.io),
            files: Arc::clone(&self.files),
            config: config.clone(),
            segments,
            first_dirty,
            delete_horizon_ms,
            producer_last_offsets: HashMap::new(),
            aborted,
            aborted_entries,
        })
    }

    /// Swaps in the segments of a pass (those whose replaced segments are unchanged) and
    /// moves the cleaner checkpoint. See the module docs for the crash-safe order.
    pub fn finish_clean(&mut self, cleaned: CleanedLog) -> Result<CleanStats, LogError> {
        let CleanedLog {
            staging,
            groups,
            first_dirty,
            mut stats,
        } = cleaned;
        let result = self.swap_groups(&staging, groups, &mut stats);
        if let Err(e) = self.io.remove_dir_all(&staging)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(dir = %staging.display(), error = %e, "cannot remove the cleaner's staging directory");
        }
        result?;
        if stats.groups_skipped == 0 && first_dirty > self.cleaner_checkpoint {
            checkpoint::write_offset(
                self.io.as_ref(),
                &self.dir,
                CLEANER_CHECKPOINT_FILE,
                first_dirty,
            )?;
            self.cleaner_checkpoint = first_dirty;
        }
        stats.first_dirty_offset = self.first_dirty_offset();
        Ok(stats)
    }

    fn swap_groups(
        &mut self,
        staging: &Path,
        groups: Vec<CleanedGroup>,
        stats: &mut CleanStats,
    ) -> Result<(), LogError> {
        let active_base = self.segments.keys().next_back().copied();
        for group in groups {
            let unchanged = group.replaced.iter().all(|&(base, size)| {
                Some(base) != active_base
                    && self.segments.get(&base).is_some_and(|s| s.size() == size)
            });
            if !self.deleted && unchanged {
                self.swap_in(staging, &group)?;
            } else {
                stats.groups_skipped += 1;
            }
        }
        Ok(())
    }

    fn swap_in(&mut self, staging: &Path, group: &CleanedGroup) -> Result<(), LogError> {
        let io = Arc::clone(&self.io);
        let dir = self.dir.clone();
        let swap = dir.join(swap_name(group.base, group.end));
        let rename = |kind: FileKind, from: &Path, to: &Path| {
            io.rename(kind, from, to)
                .map_err(|e| LogError::io("rename cleaned segment", from, e))
        };
        rename(
            FileKind::Log,
            &segment_path(staging, group.base, LOG_SUFFIX),
            &swap,
        )?;
        sync_dir(io.as_ref(), &dir)?;
        for &(base, _) in &group.replaced {
            if let Some(seg) = self.segments.remove(&base) {
                seg.delete_files(io.as_ref())?;
            }
        }
        for (kind, suffix) in [
            (FileKind::OffsetIndex, INDEX_SUFFIX),
            (FileKind::TimeIndex, TIME_INDEX_SUFFIX),
        ] {
            rename(
                kind,
                &segment_path(staging, group.base, suffix),
                &segment_path(&dir, group.base, suffix),
            )?;
        }
        // A new segment without aborted transactions has no `.txnindex`.
        let txn_index = segment_path(staging, group.base, TXN_INDEX_SUFFIX);
        match io.rename(
            FileKind::TxnIndex,
            &txn_index,
            &segment_path(&dir, group.base, TXN_INDEX_SUFFIX),
        ) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(LogError::io("rename cleaned segment", &txn_index, e));
            }
            _ => {}
        }
        rename(
            FileKind::Log,
            &swap,
            &segment_path(&dir, group.base, LOG_SUFFIX),
        )?;
        sync_dir(io.as_ref(), &dir)?;
        let (seg, outcome) = recover_segment(
            &self.files,
            &io,
            &dir,
            group.base,
            self.config.index_interval_bytes,
            SegmentCheck::Indexes,
        )?;
        if let Some(reason) = outcome.indexes_rebuilt {
            tracing::warn!(segment = group.base, %reason, "a cleaned segment's indexes were rebuilt");
        }
        self.segments.insert(group.base, seg);
        Ok(())
    }
}

impl CleanPlan {
    /// Tells the pass the last offset of each producer's last batch (from the partition's
    /// producer state), so those batches are kept even when emptied.
    pub fn with_producer_last_offsets(mut self, last: HashMap<i64, i64>) -> Self {
        self.producer_last_offsets = last;
        self
    }

    /// The first offset of the part not cleaned yet.
    pub fn first_dirty_offset(&self) -> i64 {
        self.first_dirty
    }

    /// Maps the dirty part and writes the new segments (see the module docs). Touches no
    /// file the log uses; [`Log::finish_clean`] swaps the result in.
    pub fn run(self, limits: &CleanerLimits, now_ms: i64) -> Result<CleanedLog, LogError> {
        let (map, mapped_end) = self.build_offset_map(limits)?;
        let staging = self.dir.join(STAGING_DIR);
        match self.io.remove_dir_all(&staging) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(LogError::io("remove staging directory", &staging, e));
            }
            _ => {}
        }
        // Not `create_dir_all`: if the log's directory went away (the topic was deleted), the
        // pass fails instead of leaving a directory behind.
        self.io
            .create_dir(&staging)
            .map_err(|e| LogError::io("create staging directory", &staging, e))?;
        let mut stats = CleanStats::default();
        let mut groups = Vec::new();
        for group in self.groups(mapped_end) {
            groups.push(self.clean_group(&staging, group, &map, &mut stats, now_ms)?);
        }
        Ok(CleanedLog {
            staging,
            groups,
            first_dirty: mapped_end,
            stats,
        })
    }

    /// Key -> latest offset over the dirty segments, and the offset where mapping stopped.
    fn build_offset_map(
        &self,
        limits: &CleanerLimits,
    ) -> Result<(HashMap<Bytes, i64>, i64), LogError> {
        let mut map: HashMap<Bytes, i64> = HashMap::new();
        let mut used = 0usize;
        let mut end = self.first_dirty;
        for seg in self
            .segments
            .iter()
            .filter(|s| s.next_offset > self.first_dirty)
        {
            if used > limits.dedupe_buffer_size && end > self.first_dirty {
                break;
            }
            self.each_batch(seg, |batch| {
                if batch.is_control() || self.is_aborted(batch) {
                    return Ok(());
                }
                for record in batch.records(MAX_DECOMPRESSED)? {
                    let record = record?;
                    let Some(key) = record.key.as_ref() else {
                        continue;
                    };
                    let offset = record.offset(batch);
                    if offset < self.first_dirty {
                        continue;
                    }
                    if let Some(latest) = map.get_mut(key.as_ref()) {
                        *latest = offset;
                    } else {
                        used += key.len() + MAP_ENTRY_OVERHEAD;
                        map.insert(Bytes::copy_from_slice(key), offset);
                    }
                }
                Ok(())
            })?;
            end = seg.next_offset;
        }
        Ok((map, end))
    }

    /// The segments to rewrite (all from the first, up to `end`), in groups that fit one
    /// segment.
    fn groups(&self, end: i64) -> Vec<Vec<&SegmentRef>> {
        let mut groups: Vec<Vec<&SegmentRef>> = Vec::new();
        let mut size = 0u64;
        for seg in self.segments.iter().filter(|s| s.next_offset <= end) {
            let fits = groups.last().and_then(|g| g.first()).is_some_and(|first| {
                size + seg.size <= self.config.segment_bytes
                    && seg.next_offset - first.base <= i64::from(i32::MAX)
            });
            match groups.last_mut() {
                Some(group) if fits => {
                    group.push(seg);
                    size += seg.size;
                }
                _ => {
                    groups.push(vec![seg]);
                    size = seg.size;
                }
            }
        }
        groups
    }

    fn clean_group(
        &self,
        staging: &Path,
        group: Vec<&SegmentRef>,
        map: &HashMap<Bytes, i64>,
        stats: &mut CleanStats,
        now_ms: i64,
    ) -> Result<CleanedGroup, LogError> {
        let base = group.first().map_or(0, |s| s.base);
        let end = group.last().map_or(base, |s| s.next_offset);
        let io = self.io.as_ref();
        let mut out = Segment::create(
            &self.files,
            &self.io,
            staging,
            base,
            self.config.index_interval_bytes,
        )?;
        let mut pending = PendingWrite::default();
        for seg in &group {
            stats.segments_before += 1;
            stats.bytes_before += seg.size;
            let retain_tombstones = seg.largest_timestamp > self.delete_horizon_ms;
            self.each_batch(seg, |batch| {
                let kept = self.clean_batch(batch, map, retain_tombstones, stats)?;
                if let Some(bytes) = kept {
                    pending.push(&bytes, batch);
                    if pending.buf.len() >= WRITE_CHUNK {
                        pending.write(&mut out, io, now_ms)?;
                    }
                }
                Ok(())
            })?;
        }
        pending.write(&mut out, io, now_ms)?;
        // The markers stay, and with them the entries of the aborts among them.
        for a in self
            .aborted_entries
            .iter()
            .filter(|a| (base..end).contains(&a.last_offset))
        {
            out.add_aborted_txn(io, *a)?;
        }
        out.seal(io)?;
        out.flush(io)?;
        stats.segments_after += 1;
        stats.bytes_after += out.size();
        Ok(CleanedGroup {
            base,
            end,
            replaced: group.iter().map(|s| (s.base, s.size)).collect(),
        })
    }

    /// What stays of one batch: `None` to drop it, else its bytes (the original, or the
    /// rewritten batch).
    fn clean_batch(
        &self,
        batch: &RecordBatch,
        map: &HashMap<Bytes, i64>,
        retain_tombstones: bool,
        stats: &mut CleanStats,
    ) -> Result<Option<Bytes>, CleanError> {
        if batch.is_control() {
            return Ok(Some(batch.as_bytes().clone()));
        }
        let producers_last = batch.producer_id() >= 0
            && self.producer_last_offsets.get(&batch.producer_id()) == Some(&batch.last_offset());
        if self.is_aborted(batch) {
            let none = select_records(batch, MAX_DECOMPRESSED, |_, _| false)?;
            stats.records_read += none.total() as u64;
            stats.records_removed += none.total() as u64;
            // A producer's last batch stays, emptied, for its sequence (as Kafka keeps it).
            return if producers_last {
                Ok(Some(none.rebuild(batch)?.freeze()))
            } else {
                Ok(None)
            };
        }
        let mut tombstones = 0;
        let selection = select_records(batch, MAX_DECOMPRESSED, |record, offset| {
            let latest = match &record.key {
                Some(key) => map.get(key.as_ref()).is_none_or(|&o| offset >= o),
                None => false,
            };
            let expired_tombstone = record.value.is_none() && !retain_tombstones;
            tombstones += u64::from(latest && expired_tombstone);
            latest && !expired_tombstone
        })?;
        stats.records_read += selection.total() as u64;
        stats.records_removed += (selection.total() - selection.kept()) as u64;
        stats.tombstones_removed += tombstones;
        if selection.keeps_all() {
            return Ok(Some(batch.as_bytes().clone()));
        }
        if selection.kept() == 0 && !producers_last {
            return Ok(None);
        }
        Ok(Some(selection.rebuild(batch)?.freeze()))
    }

    /// Whether `batch` belongs to an aborted transaction (its producer aborted a transaction
    /// whose range holds the batch).
    fn is_aborted(&self, batch: &RecordBatch) -> bool {
        batch.is_transactional()
            && !batch.is_control()
            && self.aborted.get(&batch.producer_id()).is_some_and(|txns| {
                let at = batch.base_offset();
                txns.iter().any(|&(first, last)| first <= at && at <= last)
            })
    }

    /// Calls `f` with every batch of `seg` (CRC checked).
    fn each_batch(
        &self,
        seg: &SegmentRef,
        mut f: impl FnMut(&RecordBatch) -> Result<(), CleanError>,
    ) -> Result<(), LogError> {
        let path = segment_path(&self.dir, seg.base, LOG_SUFFIX);
        let file = seg
            .file
            .get()
            .map_err(|e| LogError::io("open segment", &path, e))?;
        let mut scanner = Scanner::new(self.io.as_ref(), &file, 0, seg.size, true);
        loop {
            let (header, bytes) = match scanner.next_batch_bytes() {
                Ok(Some(found)) => found,
                Ok(None) => return Ok(()),
                Err(ScanError::Io(e)) => return Err(LogError::io("read segment", &path, e)),
                Err(ScanError::Invalid { position, reason }) => {
                    return Err(LogError::corrupt(&path, position, reason));
                }
            };
            let corrupt = |e: &dyn std::fmt::Display| LogError::corrupt(&path, header.position, e);
            let batch = RecordBatch::from_bytes(bytes).map_err(|e| corrupt(&e))?;
            f(&batch).map_err(|e| match e {
                CleanError::Log(e) => e,
                CleanError::Decode(e) => corrupt(&e),
                CleanError::Encode(e) => corrupt(&e),
            })?;
        }
    }
}

#[cfg(test)]
impl CleanedLog {
    /// `(base, end)` of each new segment.
    pub(crate) fn group_ranges(&self) -> Vec<(i64, i64)> {
        self.groups.iter().map(|g| (g.base, g.end)).collect()
    }

    /// The state a crash right after the commit point leaves: the new segment renamed to its
    /// swap name, the replaced segments still there.
    pub(crate) fn simulate_commit_point(self, dir: &Path, base: i64, end: i64) {
        let from = segment_path(&self.staging, base, LOG_SUFFIX);
        std::fs::rename(from, dir.join(swap_name(base, end))).unwrap_or_else(|e| panic!("{e}"));
    }
}

/// Why one batch could not be cleaned.
#[derive(Debug)]
enum CleanError {
    Log(LogError),
    Decode(kafka_protocol::DecodeError),
    Encode(kafka_protocol::EncodeError),
}

impl From<LogError> for CleanError {
    fn from(e: LogError) -> Self {
        Self::Log(e)
    }
}

impl From<kafka_protocol::DecodeError> for CleanError {
    fn from(e: kafka_protocol::DecodeError) -> Self {
        Self::Decode(e)
    }
}

impl From<kafka_protocol::EncodeError> for CleanError {
    fn from(e: kafka_protocol::EncodeError) -> Self {
        Self::Encode(e)
    }
}

/// Kept batches gathered for one write into the new segment.
#[derive(Debug, Default)]
struct PendingWrite {
    buf: BytesMut,
    batches: Vec<AppendedBatch>,
}

impl PendingWrite {
    fn push(&mut self, bytes: &[u8], original: &RecordBatch) {
        self.batches.push(AppendedBatch {
            position: self.buf.len(),
            size: bytes.len(),
            last_offset: original.last_offset(),
            // A kept batch (the original or its rewrite) is a whole batch: it has a header.
            max_timestamp: HeaderView::new(bytes).map_or(-1, |h| h.max_timestamp()),
        });
        self.buf.extend_from_slice(bytes);
    }

    fn write(&mut self, out: &mut Segment, io: &dyn LogIo, now_ms: i64) -> Result<(), LogError> {
        if self.buf.is_empty() {
            return Ok(());
        }
        out.append(io, &self.buf, &self.batches, now_ms)?;
        self.buf.clear();
        self.batches.clear();
        Ok(())
    }
}
