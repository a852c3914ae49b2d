//! What recovery reports it found and did ([`LogRecovery`], one [`RecoveryOutcome`] per
//! segment), and that I/O errors met while recovering are returned as such: nothing is cut or
//! deleted because the disk could not be read.
#![allow(clippy::unwrap_used)]

use super::super::checkpoint::{RECOVERY_POINT_FILE, TXN_REBUILD_FILE};
use super::super::recovery::{SegmentCheck as Check, recover_segment};
use super::super::swap::STAGING_DIR;
use super::super::{
    CleanerLimits, EpochEntry, FileCache, FileKind, IoOp, LogError, LogRecovery, RecoveryOutcome,
    StdIo, Truncation, TxnRebuild, TxnRebuildCause,
};
use super::*;

const SEGMENT: u64 = 2_000;

fn config() -> LogConfig {
    small(SEGMENT, 256)
}

/// A log of 3-record batches over a few segments, flushed up to `flushed` batches and left
/// without `close` (a crash). Returns the log end offset.
fn crashed_log(dir: &Path, flushed: usize, unflushed: usize) -> i64 {
    let mut log = open(dir, config());
    fill(&mut log, flushed, 3, 40);
    log.flush().unwrap();
    fill(&mut log, unflushed, 3, 40);
    log.log_end_offset()
}

fn size(p: &Path) -> u64 {
    std::fs::metadata(p).unwrap().len()
}

fn faulty(dir: &Path, recover: bool, arm: impl FnOnce(&FaultInjector)) -> Result<Log, LogError> {
    let faults = Arc::new(FaultInjector::new());
    arm(&faults);
    let io: Arc<dyn LogIo> = faults;
    Log::open_with_io(dir, config(), recover, io)
}

#[test]
fn a_clean_open_trusts_the_indexes_and_reports_nothing_done() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), config());
    fill(&mut log, 30, 3, 40);
    let bases = log.segment_base_offsets();
    log.close().unwrap();
    drop(log);
    let log = Log::open(dir.path(), config(), false).unwrap();
    let r: &LogRecovery = log.recovery();
    assert!(!r.unclean && !r.repaired(), "{r:?}");
    assert_eq!(r.scan_from, None);
    assert_eq!(r.txn_rebuild, None);
    let seen: Vec<i64> = r.segments.iter().map(|o| o.base_offset).collect();
    assert_eq!(seen, bases);
    for (o, next) in r.segments.iter().zip(bases.iter().skip(1)) {
        assert_eq!(o.check, Check::Indexes);
        assert_eq!(o.batches_validated, 0, "{o:?}");
        assert_eq!(
            (o.truncated.as_ref(), o.indexes_rebuilt.as_ref()),
            (None, None)
        );
        assert_eq!(o.next_offset, *next, "a segment ends where the next starts");
    }
    assert_eq!(r.segments.last().unwrap().next_offset, log.log_end_offset());
}

#[test]
fn a_torn_tail_is_reported_where_it_was_cut_and_why() {
    let dir = tempfile::tempdir().unwrap();
    let leo = crashed_log(dir.path(), 20, 20);
    let bases: Vec<i64> = log_files(dir.path())
        .iter()
        .map(|f| f.file_stem().unwrap().to_str().unwrap().parse().unwrap())
        .collect();
    let last = log_files(dir.path()).pop().unwrap();
    let torn_size = size(&last) - 7;
    let f = std::fs::OpenOptions::new().write(true).open(&last).unwrap();
    f.set_len(torn_size).unwrap();
    drop(f);
    let log = Log::open(dir.path(), config(), true).unwrap();
    let r = log.recovery();
    assert!(r.unclean && r.repaired());
    let scan_from = r.scan_from.unwrap();
    let recovery_point: i64 = std::fs::read_to_string(dir.path().join(RECOVERY_POINT_FILE))
        .unwrap()
        .lines()
        .nth(2)
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(
        recovery_point,
        log.log_end_offset(),
        "recovered data is flushed"
    );
    for o in &r.segments {
        let scanned = o.base_offset >= scan_from;
        assert_eq!(matches!(o.check, Check::Batches { .. }), scanned, "{o:?}");
        assert_eq!(o.batches_validated > 0, scanned, "{o:?}");
        assert_eq!(o.needs_txn_index_rebuild(), scanned, "{o:?}");
    }
    let tail: &RecoveryOutcome = r.segments.last().unwrap();
    let cut: &Truncation = tail.truncated.as_ref().unwrap();
    assert_eq!(cut.reason, "batch length runs past the end of the file");
    assert_eq!(
        cut.position,
        size(&last),
        "the file now ends where the bad batch began"
    );
    assert_eq!(cut.bytes, torn_size - cut.position);
    assert_eq!(tail.size, cut.position);
    assert_eq!(tail.next_offset, log.log_end_offset());
    assert!(log.log_end_offset() < leo);
    assert_eq!(r.truncated_bytes(), cut.bytes);
    assert_eq!(log.open_report().truncated_bytes, cut.bytes);
    assert_eq!(log.open_report().segments_scanned, r.segments_scanned());
    assert!(r.segments_deleted.is_empty());
    // The scanned segments' transaction indexes are rebuilt, from the first one scanned.
    let TxnRebuild { from, causes } = r.txn_rebuild.clone().unwrap();
    assert_eq!(from, scan_from);
    assert_eq!(log.txn_index_rebuild_from(), Some(scan_from));
    assert!(scan_from > 0, "the flushed segments were trusted");
    let scanned: Vec<i64> = bases.iter().copied().filter(|&b| b >= scan_from).collect();
    let expected: Vec<TxnRebuildCause> = scanned
        .iter()
        .map(|&segment| TxnRebuildCause::Scanned { segment })
        .collect();
    assert_eq!(causes, expected);
    assert!(dir.path().join(TXN_REBUILD_FILE).exists());
}

#[test]
fn a_cut_in_an_earlier_segment_deletes_the_later_ones_and_says_which() {
    let dir = tempfile::tempdir().unwrap();
    crashed_log(dir.path(), 0, 30);
    let files = log_files(dir.path());
    let bases: Vec<i64> = files
        .iter()
        .map(|f| f.file_stem().unwrap().to_str().unwrap().parse().unwrap())
        .collect();
    // Flip a byte in the records of the second segment's first batch.
    let mut data = std::fs::read(&files[1]).unwrap();
    data[70] ^= 0xff;
    std::fs::write(&files[1], data).unwrap();
    let log = Log::open(dir.path(), config(), true).unwrap();
    let r = log.recovery();
    assert_eq!(r.scan_from, Some(0), "flushed at 0: everything is checked");
    assert_eq!(r.segments.len(), 2);
    let cut = r.segments[1].truncated.as_ref().unwrap();
    assert_eq!((cut.position, cut.reason.as_str()), (0, "CRC-32C mismatch"));
    assert_eq!(r.segments_deleted, bases[2..].to_vec());
    assert_eq!(log.open_report().segments_deleted, bases.len() - 2);
    assert_eq!(log.log_end_offset(), bases[1]);
}

#[test]
fn leader_epochs_found_in_the_batches_are_reported_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), config());
    for (i, epoch) in [(0, 3), (1, 3), (2, 5), (3, 5), (4, 8)] {
        log.append(batch(2, 1_000 + i, "e", 10), epoch, 1_000 + i)
            .unwrap();
    }
    drop(log);
    std::fs::remove_file(dir.path().join("leader-epoch-checkpoint")).unwrap();
    let log = Log::open(dir.path(), config(), true).unwrap();
    let found: Vec<EpochEntry> = log
        .recovery()
        .segments
        .iter()
        .flat_map(|o| o.leader_epochs.clone())
        .collect();
    let entry = |epoch, start_offset| EpochEntry {
        epoch,
        start_offset,
    };
    assert_eq!(found, vec![entry(3, 0), entry(5, 4), entry(8, 8)]);
    assert_eq!(log.leader_epochs(), found.as_slice());
}

#[test]
fn indexes_rebuilt_on_a_clean_open_say_why() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), config());
    fill(&mut log, 30, 3, 40);
    log.close().unwrap();
    drop(log);
    let first = log_files(dir.path()).remove(0);
    std::fs::remove_file(first.with_extension("index")).unwrap();
    std::fs::write(first.with_extension("timeindex"), [1u8; 5]).unwrap();
    let log = Log::open(dir.path(), config(), false).unwrap();
    let r = log.recovery();
    let o = &r.segments[0];
    assert_eq!(o.check, Check::Indexes);
    // Both are reported at load; the last problem found is the one named.
    assert_eq!(
        o.indexes_rebuilt.as_deref(),
        Some("timeindex file size is not a whole number of entries")
    );
    assert!(o.batches_validated > 0, "rebuilt from a CRC-checked scan");
    assert_eq!(r.trusted_indexes_rebuilt(), 1);
    assert_eq!(log.open_report().indexes_rebuilt, 1);
    assert!(r.segments[1..].iter().all(|o| o.indexes_rebuilt.is_none()));
}

#[test]
fn leftovers_staging_damaged_checkpoints_and_txn_indexes_are_named() {
    let dir = tempfile::tempdir().unwrap();
    crashed_log(dir.path(), 20, 5);
    let first = log_files(dir.path()).remove(0);
    // A torn `.txnindex` on the first segment, and leftovers of a crash.
    std::fs::write(first.with_extension("txnindex"), [0u8; 10]).unwrap();
    std::fs::write(dir.path().join("recovery-point-checkpoint.tmp"), "0\n").unwrap();
    std::fs::write(dir.path().join("00000000000000099999.index"), []).unwrap();
    std::fs::create_dir(dir.path().join(STAGING_DIR)).unwrap();
    std::fs::write(dir.path().join(RECOVERY_POINT_FILE), "0\n1\nbanana\n").unwrap();
    let log = Log::open(dir.path(), config(), true).unwrap();
    let r = log.recovery();
    assert!(r.swaps.staging_removed && r.swaps.swaps_finished.is_empty());
    let mut leftovers = r.leftovers_removed.clone();
    leftovers.sort();
    assert_eq!(
        leftovers,
        [
            "00000000000000099999.index",
            "recovery-point-checkpoint.tmp"
        ]
    );
    assert!(r.recovery_point_problem.is_some());
    assert_eq!(r.segments_scanned(), r.segments.len(), "all checked");
    let o = &r.segments[0];
    assert!(
        o.txn_index_problem
            .as_deref()
            .unwrap()
            .contains("whole number")
    );
    let rebuild = r.txn_rebuild.as_ref().unwrap();
    assert_eq!(rebuild.from, 0);
    assert_eq!(
        rebuild.causes.first(),
        Some(&TxnRebuildCause::Damaged {
            segment: 0,
            problem: o.txn_index_problem.clone().unwrap()
        })
    );
    drop(log);
    // The rebuild was not finished: the next (clean) open says it was interrupted.
    let log = Log::open(dir.path(), config(), false).unwrap();
    let r = log.recovery();
    assert_eq!(
        r.txn_rebuild,
        Some(TxnRebuild {
            from: 0,
            causes: vec![TxnRebuildCause::Interrupted { from: 0 }]
        })
    );
}

#[test]
fn recover_segment_alone_checks_as_told() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), config());
    fill(&mut log, 10, 3, 40);
    let base = log.segment_base_offsets()[1];
    log.close().unwrap();
    drop(log);
    let files = FileCache::new(16);
    let io: Arc<dyn LogIo> = Arc::new(StdIo);
    let (seg, o) = recover_segment(&files, &io, dir.path(), base, 256, Check::Indexes).unwrap();
    assert_eq!((o.base_offset, o.batches_validated), (base, 0));
    assert_eq!(o.next_offset, seg.next_offset());
    drop(seg);
    // Offsets must start at `min_offset`: a segment checked as if it followed later data
    // is cut at its first batch.
    let check = Check::Batches {
        min_offset: base + 1,
    };
    let (_, o) = recover_segment(&files, &io, dir.path(), base, 256, check).unwrap();
    let cut = o.truncated.unwrap();
    assert_eq!(
        (cut.position, cut.reason.as_str()),
        (0, "offsets are not increasing")
    );
    assert_eq!(o.next_offset, base);
}

/// Faults to arm before an open.
type Arm = fn(&FaultInjector);

#[test]
fn io_errors_while_recovering_are_returned_and_nothing_is_cut() {
    let dir = tempfile::tempdir().unwrap();
    crashed_log(dir.path(), 10, 20);
    let last = log_files(dir.path()).pop().unwrap();
    let torn = size(&last) - 7;
    std::fs::OpenOptions::new()
        .write(true)
        .open(&last)
        .unwrap()
        .set_len(torn)
        .unwrap();
    let arms: [(&str, Arm); 7] = [
        ("reading a segment", |f| {
            f.fail(IoOp::Read, Some(FileKind::Log), libc::EIO);
        }),
        ("reading a segment midway", |f| {
            f.fail_after(IoOp::Read, Some(FileKind::Log), 3, libc::EIO);
        }),
        ("opening a segment", |f| {
            f.fail(IoOp::Open, Some(FileKind::Log), libc::EMFILE);
        }),
        ("listing the directory", |f| {
            f.fail(IoOp::ListDir, None, libc::EIO);
        }),
        ("reading a checkpoint", |f| {
            f.fail(IoOp::ReadFile, Some(FileKind::Checkpoint), libc::EIO);
        }),
        ("the size of an index", |f| {
            f.fail(IoOp::Stat, Some(FileKind::OffsetIndex), libc::EIO);
        }),
        ("cutting the torn tail", |f| {
            f.fail(IoOp::SetLen, Some(FileKind::Log), libc::EIO);
        }),
    ];
    for (what, arm) in arms {
        let err = faulty(dir.path(), true, arm).unwrap_err();
        assert!(err.is_io(), "{what}: {err:?}");
        assert_eq!(size(&last), torn, "{what}: nothing cut");
    }
    // With the disk back, the same recovery cuts the torn batch.
    let log = faulty(dir.path(), true, |_| {}).unwrap();
    assert!(log.recovery().truncated_bytes() > 0);
    assert!(size(&last) < torn);
}

#[test]
fn the_fault_injector_sees_and_fails_every_kind_of_call() {
    let dir = tempfile::tempdir().unwrap();
    let (mut log, faults) = open_faulty(dir.path(), config(), false);
    fill(&mut log, 30, 3, 40);
    assert!(
        faults.calls(IoOp::Open, FileKind::Log) > 0,
        "segment files open through it"
    );
    let renames = faults.calls(IoOp::Rename, FileKind::Checkpoint);
    log.flush().unwrap();
    assert!(faults.calls(IoOp::Rename, FileKind::Checkpoint) > renames);
    // A read whose segment file cannot be read fails as an I/O error, not as corruption.
    faults.fail(IoOp::Read, Some(FileKind::Log), libc::EIO);
    let err = log.read(0, 1 << 20, i64::MAX).unwrap_err();
    assert!(err.is_io(), "{err:?}");
    faults.clear();
    assert_eq!(read_all(&log, 0).len(), 90);
    // A checkpoint that cannot be renamed into place fails the flush (no fsync failed: the
    // log is not poisoned).
    faults.fail(IoOp::Rename, Some(FileKind::Checkpoint), libc::EIO);
    fill(&mut log, 1, 3, 40);
    assert!(log.flush().unwrap_err().is_io());
    faults.clear();
    log.flush().unwrap();
    // Deleting records whose segment files cannot be removed reports it.
    log.set_high_watermark(log.log_end_offset());
    faults.fail(IoOp::Remove, Some(FileKind::Log), libc::EACCES);
    let err = log.delete_records_before(log.high_watermark()).unwrap_err();
    assert!(err.is_io(), "{err:?}");
    faults.clear();
    // The cleaner's staging directory cannot be made: the pass fails, the log is unchanged.
    let dir2 = tempfile::tempdir().unwrap();
    let compacted = LogConfig {
        compact: true,
        min_cleanable_dirty_ratio: 0.0,
        ..config()
    };
    let faults = Arc::new(FaultInjector::new());
    let io: Arc<dyn LogIo> = faults.clone();
    let mut log = Log::open_with_io(dir2.path(), compacted, false, io).unwrap();
    fill(&mut log, 30, 3, 40);
    log.set_high_watermark(log.log_end_offset());
    let plan = log.clean_plan(i64::MAX).unwrap();
    faults.fail(IoOp::CreateDir, None, libc::ENOSPC);
    let err = plan.run(&CleanerLimits::default(), 0).unwrap_err();
    assert!(err.is_io(), "{err:?}");
    assert_eq!(read_all(&log, 0).len(), 90, "nothing cleaned");
}
