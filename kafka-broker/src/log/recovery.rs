//! Recovery: opening a log directory as the last run left it, checking what must be checked,
//! repairing what may be repaired, and saying what was found and done.
//!
//! [`recover_log`] runs when a log is opened (by [`super::Log::open_with`], which logs the
//! outcome and keeps it, [`super::Log::recovery`]):
//!
//! 1. finishes the cleaner's interrupted swaps and removes its unfinished staging directory
//!    ([`super::swap`]);
//! 2. lists the segments and removes leftovers (temporary files, indexes without a `.log`);
//! 3. after an unclean shutdown, finds where checking batch by batch starts: the last segment
//!    starting at or below the checkpointed recovery point (every segment when there is no
//!    checkpoint: the log was never flushed; or when it is malformed);
//! 4. opens each segment with [`recover_segment`]: below that point its indexes are checked
//!    ([`SegmentCheck::Indexes`]; a failing index is rebuilt from a CRC-checked scan, and
//!    invalid bytes found then are damage: the open fails with [`LogError::Corrupt`], nothing
//!    is cut); from it on every batch is validated (length, magic, CRC-32C, increasing offsets)
//!    and the segment is cut at the first invalid byte ([`SegmentCheck::Batches`]); the
//!    segments after a cut are deleted;
//! 5. decides which segments' `.txnindex` must be rebuilt from their batches (those checked
//!    batch by batch, a damaged file, a rebuild a crash interrupted), empties them and records
//!    the rebuild in its checkpoint file; the partition layer does the rebuild
//!    ([`super::Log::txn_index_rebuild_from`]).
//!
//! An I/O error (a read, a stat, a removal that fails) is always returned as such, never taken
//! for corruption: nothing is cut or deleted because the disk could not be read.
//!
//! Imports the segment, swap, checkpoint and file layers of `log/`; not the log (`local_log`)
//! nor the cleaner.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use super::checkpoint::{self, EpochEntry, RECOVERY_POINT_FILE, TXN_REBUILD_FILE};
use super::error::LogError;
use super::files::FileCache;
use super::io::{FileKind, LogIo, file_names};
use super::segment::{
    INDEX_SUFFIX, LOG_SUFFIX, OnInvalid, Segment, TIME_INDEX_SUFFIX, segment_path,
};
use super::swap::{self, SwapRecovery};
use super::txn_index::TXN_INDEX_SUFFIX;

/// How [`recover_segment`] opens a segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SegmentCheck {
    /// The data is known to be on disk (a clean shutdown, or below the recovery point): the
    /// indexes are checked, and the batches after the last offset index entry walked (headers
    /// only). Indexes that fail their checks are rebuilt from a CRC-checked scan; an invalid
    /// batch met on the way is damage ([`LogError::Corrupt`]), never cut.
    Indexes,
    /// The data may be torn (past the recovery point after an unclean shutdown): every batch
    /// is validated, its offsets at or after `min_offset` and increasing, the indexes rebuilt,
    /// and the file cut at the first invalid byte.
    Batches { min_offset: i64 },
}

/// Where recovery cut a segment, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Truncation {
    /// Where the first invalid batch started: the segment's size after the cut.
    pub position: u64,
    /// Bytes cut off.
    pub bytes: u64,
    pub reason: String,
}

/// What [`recover_segment`] found in one segment and did to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecoveryOutcome {
    pub base_offset: i64,
    pub check: SegmentCheck,
    /// Batches validated whole (CRC included): every batch of a segment checked batch by
    /// batch, or of one whose indexes were rebuilt; 0 when the indexes were trusted.
    pub batches_validated: u64,
    /// The cut, if the segment ended in invalid bytes ([`SegmentCheck::Batches`] only).
    pub truncated: Option<Truncation>,
    /// Why the offset and time indexes were rebuilt from the batches, if they were (a
    /// segment checked batch by batch always has them rebuilt).
    pub indexes_rebuilt: Option<String>,
    /// Why the segment's `.txnindex` could not be used (its entries were dropped, to be
    /// rebuilt from the batches).
    pub txn_index_problem: Option<String>,
    /// The segment's size and next offset once opened.
    pub size: u64,
    pub next_offset: i64,
    /// Each leader epoch found stamped in the batches validated, newer than every one before
    /// it, with the base offset of its first batch ([`SegmentCheck::Batches`] only).
    pub leader_epochs: Vec<EpochEntry>,
}

impl RecoveryOutcome {
    /// Whether the segment's `.txnindex` must be rebuilt from its batches: it was unusable,
    /// or the segment was checked batch by batch (its entries may miss aborts, or name
    /// markers past a cut).
    pub fn needs_txn_index_rebuild(&self) -> bool {
        self.txn_index_problem.is_some() || matches!(self.check, SegmentCheck::Batches { .. })
    }
}

/// Why a `.txnindex` rebuild was decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TxnRebuildCause {
    /// A rebuild from this offset was under way when the last run stopped (its checkpoint
    /// file was found; `i64::MIN` when that file was malformed).
    Interrupted { from: i64 },
    /// The segment was checked batch by batch: its entries may miss aborts or name markers
    /// past a cut.
    Scanned { segment: i64 },
    /// The segment's `.txnindex` could not be used.
    Damaged { segment: i64, problem: String },
}

/// The `.txnindex` files that must be rebuilt from the batches: those of every segment from
/// `from` on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnRebuild {
    pub from: i64,
    pub causes: Vec<TxnRebuildCause>,
}

/// What [`recover_log`] found in a log directory and did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogRecovery {
    /// The last run did not shut down cleanly: recovery was asked for.
    pub unclean: bool,
    /// The cleaner's interrupted work finished or removed.
    pub swaps: SwapRecovery,
    /// Names of the leftover files removed (temporary files, indexes without a log file).
    pub leftovers_removed: Vec<String>,
    /// Why the recovery point checkpoint could not be used, if it could not (every segment
    /// was then checked batch by batch).
    pub recovery_point_problem: Option<String>,
    /// The base offset of the first segment checked batch by batch, if any was.
    pub scan_from: Option<i64>,
    /// One outcome per segment opened, oldest first.
    pub segments: Vec<RecoveryOutcome>,
    /// Base offsets of the segments after a cut, deleted.
    pub segments_deleted: Vec<i64>,
    /// The `.txnindex` rebuild decided, if any.
    pub txn_rebuild: Option<TxnRebuild>,
}

impl LogRecovery {
    /// Segments checked batch by batch.
    pub fn segments_scanned(&self) -> usize {
        self.scanned().count()
    }

    /// Batches validated in the segments checked batch by batch.
    pub fn batches_scanned(&self) -> u64 {
        self.scanned().map(|o| o.batches_validated).sum()
    }

    /// Bytes cut from the log.
    pub fn truncated_bytes(&self) -> u64 {
        self.segments
            .iter()
            .filter_map(|o| o.truncated.as_ref())
            .map(|t| t.bytes)
            .sum()
    }

    /// Segments opened on their indexes whose indexes had to be rebuilt.
    pub fn trusted_indexes_rebuilt(&self) -> usize {
        self.segments
            .iter()
            .filter(|o| o.check == SegmentCheck::Indexes && o.indexes_rebuilt.is_some())
            .count()
    }

    /// Whether recovery found something wrong or left over and repaired it: a torn tail cut,
    /// segments deleted after a cut, the indexes of a trusted segment rebuilt, a damaged
    /// `.txnindex` or recovery point, leftover files, the cleaner's interrupted work. (The
    /// routine work of an unclean shutdown, checking the segments past the recovery point
    /// and rebuilding their indexes, is not counted.)
    pub fn repaired(&self) -> bool {
        self.swaps != SwapRecovery::default()
            || !self.leftovers_removed.is_empty()
            || self.recovery_point_problem.is_some()
            || !self.segments_deleted.is_empty()
            || self.segments.iter().any(|o| {
                o.truncated.is_some()
                    || o.txn_index_problem.is_some()
                    || (o.check == SegmentCheck::Indexes && o.indexes_rebuilt.is_some())
            })
    }

    fn scanned(&self) -> impl Iterator<Item = &RecoveryOutcome> {
        self.segments
            .iter()
            .filter(|o| matches!(o.check, SegmentCheck::Batches { .. }))
    }
}

/// The segments [`recover_log`] opened, and what it did.
#[derive(Debug)]
pub(crate) struct Recovered {
    pub(crate) segments: BTreeMap<i64, Segment>,
    pub(crate) outcome: LogRecovery,
}

/// Opens one segment, checking it as `check` says; returns it with what was found and done.
/// I/O errors are returned as [`LogError::Io`]; damage found under
/// [`SegmentCheck::Indexes`] as [`LogError::Corrupt`].
pub(crate) fn recover_segment(
    files: &Arc<FileCache>,
    io: &Arc<dyn LogIo>,
    dir: &Path,
    base_offset: i64,
    interval: u64,
    check: SegmentCheck,
) -> Result<(Segment, RecoveryOutcome), LogError> {
    let (mut seg, mut problem) = Segment::load(files, io, dir, base_offset, interval)?;
    let mut outcome = RecoveryOutcome {
        base_offset,
        check,
        batches_validated: 0,
        truncated: None,
        indexes_rebuilt: None,
        txn_index_problem: seg.txn_index_problem.clone(),
        size: 0,
        next_offset: base_offset,
        leader_epochs: Vec::new(),
    };
    match check {
        SegmentCheck::Indexes => {
            if problem.is_none() {
                problem = seg.check_offset_index()?.err();
            }
            if problem.is_none() {
                seg.load_tail()?;
                problem = seg.check_time_index()?.err();
            }
            if let Some(reason) = &problem {
                tracing::warn!(segment = %seg.path().display(), %reason, "rebuilding indexes");
                let scan = seg.scan_and_rebuild(io.as_ref(), base_offset, OnInvalid::Fail)?;
                outcome.batches_validated = scan.batches;
            }
            outcome.indexes_rebuilt = problem;
        }
        SegmentCheck::Batches { min_offset } => {
            let scan = seg.scan_and_rebuild(io.as_ref(), min_offset, OnInvalid::Truncate)?;
            outcome.batches_validated = scan.batches;
            outcome.truncated = scan.invalid.map(|(position, reason)| Truncation {
                position,
                bytes: scan.truncated_bytes,
                reason,
            });
            outcome.indexes_rebuilt = Some("checked batch by batch".into());
            outcome.leader_epochs = scan
                .epochs
                .into_iter()
                .map(|(epoch, start_offset)| EpochEntry {
                    epoch,
                    start_offset,
                })
                .collect();
        }
    }
    outcome.size = seg.size();
    outcome.next_offset = seg.next_offset();
    Ok((seg, outcome))
}

/// Recovers the log in `dir` (which exists): see the module docs. With `unclean`, the
/// segments past the recovery point are checked batch by batch.
pub(crate) fn recover_log(
    files: &Arc<FileCache>,
    io: &Arc<dyn LogIo>,
    dir: &Path,
    interval: u64,
    unclean: bool,
) -> Result<Recovered, LogError> {
    let mut outcome = LogRecovery {
        unclean,
        swaps: swap::finish_interrupted_swaps(io.as_ref(), dir)?,
        ..LogRecovery::default()
    };
    let bases = list_segments(io.as_ref(), dir, &mut outcome.leftovers_removed)?;
    let scan_from = if unclean && !bases.is_empty() {
        // No checkpoint: the log was never flushed (a new log's recovery point is 0), so no
        // segment is known to be on disk: check them all, as Kafka does.
        let point = match checkpoint::read_offset(io.as_ref(), dir, RECOVERY_POINT_FILE) {
            Ok(point) => point.unwrap_or(i64::MIN),
            Err(e) if e.is_io() => return Err(e),
            // A malformed recovery point only costs a longer recovery: check everything.
            Err(e) => {
                tracing::warn!(error = %e, "recovery point unreadable; recovery checks all");
                outcome.recovery_point_problem = Some(e.to_string());
                i64::MIN
            }
        };
        let from = bases.iter().rev().find(|&&b| b <= point).copied();
        Some(from.unwrap_or(i64::MIN))
    } else {
        None
    };
    let mut segments = BTreeMap::new();
    let mut prev_next = 0;
    for (i, &base) in bases.iter().enumerate() {
        let check = match scan_from {
            Some(from) if base >= from => SegmentCheck::Batches {
                min_offset: prev_next,
            },
            _ => SegmentCheck::Indexes,
        };
        let (seg, seg_outcome) = recover_segment(files, io, dir, base, interval, check)?;
        if outcome.scan_from.is_none() && check != SegmentCheck::Indexes {
            outcome.scan_from = Some(base);
        }
        prev_next = seg.next_offset();
        segments.insert(base, seg);
        let cut = seg_outcome.truncated.is_some();
        outcome.segments.push(seg_outcome);
        if cut {
            let later = bases.get(i + 1..).unwrap_or_default();
            delete_segments(io.as_ref(), dir, later)?;
            outcome.segments_deleted = later.to_vec();
            break;
        }
    }
    outcome.txn_rebuild = plan_txn_rebuild(io.as_ref(), dir, &outcome)?;
    if let Some(rebuild) = &outcome.txn_rebuild {
        for seg in segments.range_mut(rebuild.from..).map(|(_, s)| s) {
            seg.clear_aborted_txns(io.as_ref())?;
        }
        checkpoint::write_offset(io.as_ref(), dir, TXN_REBUILD_FILE, rebuild.from.max(0))?;
    }
    Ok(Recovered { segments, outcome })
}

/// Which segments' `.txnindex` must be rebuilt: those recovery checked batch by batch (their
/// entries may miss aborts or hold some past the cut), a damaged file, and a rebuild a crash
/// interrupted.
fn plan_txn_rebuild(
    io: &dyn LogIo,
    dir: &Path,
    outcome: &LogRecovery,
) -> Result<Option<TxnRebuild>, LogError> {
    let mut causes = Vec::new();
    match checkpoint::read_offset(io, dir, TXN_REBUILD_FILE) {
        Ok(None) => {}
        Ok(Some(from)) => causes.push(TxnRebuildCause::Interrupted { from }),
        Err(e) if e.is_io() => return Err(e),
        Err(_) => causes.push(TxnRebuildCause::Interrupted { from: i64::MIN }),
    }
    for o in outcome
        .segments
        .iter()
        .filter(|o| o.needs_txn_index_rebuild())
    {
        if let Some(problem) = &o.txn_index_problem {
            tracing::warn!(segment = o.base_offset, %problem,
                "transaction index unusable; rebuilding it from the log");
            causes.push(TxnRebuildCause::Damaged {
                segment: o.base_offset,
                problem: problem.clone(),
            });
        } else {
            causes.push(TxnRebuildCause::Scanned {
                segment: o.base_offset,
            });
        }
    }
    let from = causes
        .iter()
        .map(|c| match c {
            TxnRebuildCause::Interrupted { from } => *from,
            TxnRebuildCause::Scanned { segment } | TxnRebuildCause::Damaged { segment, .. } => {
                *segment
            }
        })
        .min();
    Ok(from.map(|from| TxnRebuild { from, causes }))
}

/// Lists the base offsets of the segments in `dir`, removing leftovers (temporary files,
/// indexes without a log file) and naming them in `removed`.
fn list_segments(
    io: &dyn LogIo,
    dir: &Path,
    removed: &mut Vec<String>,
) -> Result<Vec<i64>, LogError> {
    let names = file_names(io, dir).map_err(|e| LogError::io("list directory", dir, e))?;
    let base_of = |stem: &str| -> Option<i64> {
        (stem.len() == 20 && stem.bytes().all(|b| b.is_ascii_digit()))
            .then(|| stem.parse().ok())
            .flatten()
    };
    let mut bases: Vec<i64> = names
        .iter()
        .filter_map(|n| n.strip_suffix(".log").and_then(base_of))
        .collect();
    bases.sort_unstable();
    for name in names {
        let leftover = [".tmp", ".deleted", ".cleaned", ".swap"]
            .iter()
            .any(|s| name.ends_with(s));
        let orphan = [INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX]
            .iter()
            .any(|suffix| {
                name.strip_suffix(suffix)
                    .and_then(|n| n.strip_suffix('.'))
                    .and_then(base_of)
                    .is_some_and(|b| bases.binary_search(&b).is_err())
            });
        if leftover || orphan {
            let path = dir.join(&name);
            tracing::warn!(file = %path.display(), "removing leftover file");
            io.remove_file(FileKind::Leftover, &path)
                .map_err(|e| LogError::io("remove leftover", &path, e))?;
            removed.push(name);
        }
    }
    Ok(bases)
}

/// Deletes the files of the segments at `bases` (after a recovery cut).
fn delete_segments(io: &dyn LogIo, dir: &Path, bases: &[i64]) -> Result<(), LogError> {
    for &base in bases {
        let path = segment_path(dir, base, LOG_SUFFIX);
        tracing::warn!(segment = %path.display(), "deleting a segment after the recovery \
            truncation point");
        for (kind, suffix) in [
            (FileKind::Log, LOG_SUFFIX),
            (FileKind::OffsetIndex, INDEX_SUFFIX),
            (FileKind::TimeIndex, TIME_INDEX_SUFFIX),
            (FileKind::TxnIndex, TXN_INDEX_SUFFIX),
        ] {
            let p = segment_path(dir, base, suffix);
            match io.remove_file(kind, &p) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(LogError::io("delete segment", p, e)),
            }
        }
    }
    Ok(())
}
