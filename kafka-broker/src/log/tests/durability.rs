//! Disk faults on append, fsync failures, flush policies and group commit.
#![allow(clippy::unwrap_used)]

use std::sync::Mutex;
use std::time::Duration;

use kafka_protocol::error_code::ErrorCode;

use super::super::{FileKind, LogError};
use super::*;

fn durable(segment_bytes: u64) -> LogConfig {
    LogConfig {
        flush_interval_messages: Some(1),
        ..small(segment_bytes, 4096)
    }
}

fn log_size(dir: &Path) -> u64 {
    log_files(dir)
        .iter()
        .map(|f| std::fs::metadata(f).unwrap().len())
        .sum()
}

#[test]
fn enospc_on_append_leaves_no_partial_batch_and_clears() {
    let dir = tempfile::tempdir().unwrap();
    let (mut log, faults) = open_faulty(dir.path(), small(100_000, 4096), false);
    fill(&mut log, 5, 2, 100);
    let (leo, size) = (log.log_end_offset(), log_size(dir.path()));
    faults.fail_writes(FileKind::Log, 0, 100); // 100 bytes reach the file, then ENOSPC
    for _ in 0..2 {
        let err = log.append(batch(2, 0, "lost", 100), 0, 0).unwrap_err();
        assert!(
            matches!(&err, LogError::Io { source, .. }
            if source.raw_os_error() == Some(libc::ENOSPC)),
            "{err:?}"
        );
        assert_eq!(err.error_code(), ErrorCode::KAFKA_STORAGE_ERROR);
        assert_eq!(log_size(dir.path()), size, "the partial write was cut back");
        assert_eq!(log.log_end_offset(), leo);
        assert_eq!(read_all(&log, 0).len() as i64, leo, "reads keep working");
    }
    faults.clear();
    let info = log.append(batch(2, 0, "after", 100), 0, 0).unwrap();
    assert_eq!(info.base_offset, leo);
    let all = read_all(&log, 0);
    assert!(all.iter().enumerate().all(|(i, r)| r.0 == i as i64));
    assert_eq!(all.last().unwrap().1, "after-1");
    drop(log);
    let log = Log::open(dir.path(), small(100_000, 4096), true).unwrap();
    assert_eq!(log.open_report().truncated_bytes, 0, "nothing torn on disk");
    assert_eq!(log.log_end_offset(), leo + 2);
}

#[test]
fn a_failed_write_that_cannot_be_cut_back_stays_invisible() {
    let dir = tempfile::tempdir().unwrap();
    let (mut log, faults) = open_faulty(dir.path(), small(100_000, 4096), false);
    fill(&mut log, 3, 2, 50);
    let leo = log.log_end_offset();
    let size = log_size(dir.path());
    faults.fail_writes(FileKind::Log, 0, 90);
    faults.fail_set_len();
    assert!(log.append(batch(2, 0, "lost", 100), 0, 0).is_err());
    assert_eq!(log_size(dir.path()), size + 90, "garbage past the log end");
    assert_eq!(read_all(&log, 0).len() as i64, leo, "but never read");
    assert!(log.read(leo, 1 << 20, i64::MAX).unwrap().is_empty());
    // A crash now: recovery drops the garbage.
    drop(log);
    let mut log = Log::open(dir.path(), small(100_000, 4096), true).unwrap();
    assert_eq!(log.log_end_offset(), leo);
    assert_eq!(log_size(dir.path()), size);
    assert_eq!(
        log.append(batch(1, 0, "ok", 0), 0, 0).unwrap().base_offset,
        leo
    );
    // Same fault, then a clean close: closing cuts the garbage, so a clean start works.
    drop(log);
    let (mut log, faults) = open_faulty(dir.path(), small(100_000, 4096), false);
    let (leo, size) = (log.log_end_offset(), log_size(dir.path()));
    faults.fail_writes(FileKind::Log, 0, 90);
    faults.fail_set_len();
    assert!(log.append(batch(2, 0, "lost", 100), 0, 0).is_err());
    assert_eq!(log_size(dir.path()), size + 90);
    faults.clear();
    log.close().unwrap();
    drop(log);
    assert_eq!(log_size(dir.path()), size);
    let log = open(dir.path(), small(100_000, 4096));
    assert_eq!(log.log_end_offset(), leo);
}

#[test]
fn a_failed_roll_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let (mut log, faults) = open_faulty(dir.path(), small(1_000, 100), false);
    fill(&mut log, 3, 2, 100);
    let (leo, segments) = (log.log_end_offset(), log.segment_base_offsets());
    faults.fail_writes(FileKind::OffsetIndex, 0, 0);
    let mut failed = false;
    for i in 0..10 {
        match log.append(batch(2, 0, &format!("r{i}"), 100), 0, 0) {
            Ok(_) => assert_eq!(log.segment_base_offsets(), segments, "no roll succeeded"),
            Err(e) => {
                assert!(e.is_io());
                failed = true;
                break;
            }
        }
    }
    assert!(failed, "sealing the segment writes its index and fails");
    let leo_at_failure = log.log_end_offset();
    assert!(leo_at_failure >= leo);
    assert_eq!(read_all(&log, 0).len() as i64, leo_at_failure);
    faults.clear();
    let info = log.append(batch(2, 0, "later", 100), 0, 0).unwrap();
    assert_eq!(info.base_offset, leo_at_failure);
    assert!(
        log.segment_base_offsets().len() > segments.len(),
        "now it rolls"
    );
    log.close().unwrap();
    drop(log);
    assert_eq!(
        open(dir.path(), small(1_000, 100))
            .open_report()
            .indexes_rebuilt,
        0
    );
}

#[test]
fn a_failed_fsync_poisons_the_log_until_it_is_reopened() {
    let dir = tempfile::tempdir().unwrap();
    let (mut log, faults) = open_faulty(dir.path(), durable(100_000), false);
    let flusher = log.flusher();
    let info = log.append(batch(1, 0, "a", 0), 0, 0).unwrap();
    assert_eq!(
        info.sync_to,
        Some(1),
        "durable mode asks for a sync on every append"
    );
    assert_eq!(flusher.sync_to(1).unwrap(), 1);
    faults.fail_syncs();
    let info = log.append(batch(1, 0, "b", 0), 0, 0).unwrap();
    let err = flusher.sync_to(info.sync_to.unwrap()).unwrap_err();
    assert!(matches!(err, LogError::SyncPoisoned { .. }));
    assert_eq!(err.error_code(), ErrorCode::KAFKA_STORAGE_ERROR);
    faults.clear();
    assert!(flusher.sync_to(2).is_err(), "a later fsync proves nothing");
    assert!(log.append(batch(1, 0, "c", 0), 0, 0).is_err());
    assert!(log.flush().is_err());
    assert_eq!(flusher.durable_offset(), 1);
    drop(log);
    let log = Log::open(dir.path(), durable(100_000), true).unwrap();
    assert_eq!(log.log_end_offset(), 2);
    assert!(!log.flusher().is_poisoned());
}

#[test]
fn flush_policies_ask_for_syncs_when_due() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        flush_interval_messages: Some(5),
        flush_interval_ms: Some(1_000),
        ..LogConfig::default()
    };
    let mut log = open(dir.path(), config);
    let due: Vec<Option<i64>> = (0..6)
        .map(|i| log.append(batch(2, 0, "m", 0), 0, 10 + i).unwrap().sync_to)
        .collect();
    // 2, 4, 6 messages: the third append reaches 5; then 2, 4, 6 again.
    assert_eq!(due, vec![None, None, Some(6), None, None, Some(12)]);
    let late = log.append(batch(1, 0, "late", 0), 0, 2_000).unwrap();
    assert_eq!(
        late.sync_to,
        Some(13),
        "flush.ms passed since the last sync"
    );
    // The timer path: flush_if_due fsyncs under the lock and moves the recovery point.
    log.append(batch(1, 0, "x", 0), 0, 2_100).unwrap();
    assert!(!log.flush_if_due(2_500).unwrap());
    assert!(log.flush_if_due(3_100).unwrap());
    assert_eq!(log.recovery_point(), 14);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("recovery-point-checkpoint")).unwrap(),
        "0\n1\n14\n"
    );
    assert_eq!(log.flusher().durable_offset(), 14);
    assert!(!log.flush_if_due(9_000).unwrap(), "nothing new to flush");
}

/// `threads` appenders, each appending `per_thread` batches and waiting for durability
/// outside the lock, as the broker does. Returns (appends, fsyncs of log files).
fn run_blocking_appenders(threads: usize, per_thread: usize) -> (u64, u64) {
    let dir = tempfile::tempdir().unwrap();
    let (log, faults) = open_faulty(dir.path(), durable(64 * 1024), false);
    faults.set_sync_delay(Duration::from_millis(3));
    let flusher = log.flusher();
    let log = Arc::new(Mutex::new(log));
    std::thread::scope(|s| {
        for t in 0..threads {
            let (log, flusher) = (Arc::clone(&log), Arc::clone(&flusher));
            s.spawn(move || {
                for i in 0..per_thread {
                    let info = log
                        .lock()
                        .unwrap()
                        .append(batch(1, 0, &format!("t{t}-{i}"), 64), 0, 0)
                        .unwrap();
                    let target = info.sync_to.unwrap();
                    assert_eq!(target, info.last_offset + 1);
                    assert!(flusher.sync_to(target).unwrap() >= target);
                    assert!(flusher.durable_offset() > info.last_offset);
                }
            });
        }
    });
    let log = log.lock().unwrap();
    let appends = (threads * per_thread) as u64;
    assert_eq!(log.log_end_offset() as u64, appends);
    assert_eq!(flusher.durable_offset() as u64, appends);
    assert_eq!(read_all(&log, 0).len() as u64, appends);
    (appends, faults.syncs(FileKind::Log))
}

#[test]
fn group_commit_covers_concurrent_appends_with_fewer_fsyncs() {
    let (appends, syncs) = run_blocking_appenders(8, 25);
    assert!(syncs > 0);
    assert!(
        syncs * 2 < appends,
        "{syncs} fsyncs for {appends} durable appends: group commit should share them"
    );
}

#[test]
fn group_commit_from_async_tasks() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (log, faults) = open_faulty(dir.path(), durable(64 * 1024), false);
    faults.set_sync_delay(Duration::from_millis(3));
    let flusher = log.flusher();
    let log = Arc::new(Mutex::new(log));
    let (tasks, per_task) = (16, 10);
    runtime.block_on(async {
        let mut handles = Vec::new();
        for t in 0..tasks {
            let (log, flusher) = (Arc::clone(&log), Arc::clone(&flusher));
            handles.push(tokio::spawn(async move {
                for i in 0..per_task {
                    let info = {
                        let mut log = log.lock().unwrap();
                        log.append(batch(1, 0, &format!("a{t}-{i}"), 64), 0, 0)
                            .unwrap()
                    };
                    let durable = flusher.sync_to_async(info.sync_to.unwrap()).await.unwrap();
                    assert!(durable > info.last_offset);
                }
            }));
        }
        for h in handles {
            h.await.unwrap();
        }
    });
    let appends = (tasks * per_task) as u64;
    let syncs = faults.syncs(FileKind::Log);
    assert_eq!(flusher.durable_offset() as u64, appends);
    assert!(syncs * 2 < appends, "{syncs} fsyncs for {appends} appends");
    // A sync_to that is already covered returns at once, without an fsync.
    assert_eq!(flusher.sync_to(5).unwrap() as u64, appends);
    assert_eq!(faults.syncs(FileKind::Log), syncs);
}
