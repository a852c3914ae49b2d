//! Retention, DeleteRecords, truncation, leader epochs.
#![allow(clippy::unwrap_used)]

use super::super::{EpochEntry, LogError};
use super::*;

fn segment_sizes(dir: &Path) -> Vec<u64> {
    log_files(dir)
        .iter()
        .map(|f| std::fs::metadata(f).unwrap().len())
        .collect()
}

fn checkpoint(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap()
}

#[test]
fn retention_by_size_deletes_the_oldest_segments() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), small(1_500, 4096));
    fill(&mut log, 40, 2, 100);
    let sizes = segment_sizes(dir.path());
    assert!(sizes.len() >= 6);
    let total: u64 = sizes.iter().sum();
    let limit = total / 2;
    let mut config = log.config().clone();
    config.retention_bytes = limit as i64;
    log.set_config(config).unwrap();
    // Kafka's rule: drop the oldest while what remains is still at least a segment over.
    let mut excess = total - limit;
    let expected = sizes[..sizes.len() - 1]
        .iter()
        .take_while(|&&s| {
            let go = excess >= s;
            excess = excess.saturating_sub(if go { s } else { 0 });
            go
        })
        .count();
    assert!(expected >= 2);
    let bases = log.segment_base_offsets();
    assert_eq!(log.apply_retention(0).unwrap(), expected);
    assert!(log.size_in_bytes() >= limit && log.size_in_bytes() < limit + sizes[expected]);
    assert_eq!(log.log_start_offset(), bases[expected]);
    assert_eq!(log_files(dir.path()).len(), sizes.len() - expected);
    assert!(matches!(
        log.read(0, 100, i64::MAX),
        Err(LogError::OffsetOutOfRange { .. })
    ));
    assert_eq!(
        read_all(&log, bases[expected]).len() as i64,
        80 - bases[expected]
    );
    assert_eq!(
        checkpoint(dir.path(), "log-start-offset-checkpoint"),
        format!("0\n1\n{}\n", bases[expected])
    );
    assert_eq!(log.apply_retention(0).unwrap(), 0, "nothing more to do");
}

#[test]
fn retention_by_time_never_deletes_the_active_segment() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = small(1_000, 4096);
    config.retention_ms = 10_000;
    let mut log = open(dir.path(), config);
    // Segment timestamps grow by 1000 per batch; several batches per segment.
    for i in 0..30 {
        log.append(batch(2, 1_000 * i, "t", 100), 0, 0).unwrap();
    }
    let bases = log.segment_base_offsets();
    assert!(bases.len() >= 4);
    // At now = 20_500 every segment whose largest timestamp is below 10_500 goes.
    let first = log
        .read(0, usize::MAX, bases[1])
        .unwrap()
        .read_bytes()
        .unwrap();
    let max_ts_of_first = kafka_protocol::record::RecordBatches::new(first)
        .map(|b| b.unwrap().max_timestamp())
        .max()
        .unwrap();
    assert!(max_ts_of_first < 10_500);
    let deleted = log.apply_retention(20_500).unwrap();
    assert!(deleted >= 1);
    let kept = log
        .read(log.log_start_offset(), usize::MAX, i64::MAX)
        .unwrap();
    let kept = kept.read_bytes().unwrap();
    let oldest_kept_max = kafka_protocol::record::RecordBatches::new(kept)
        .take_while(|b| b.as_ref().unwrap().base_offset() < log.segment_base_offsets()[1])
        .map(|b| b.unwrap().max_timestamp())
        .max()
        .unwrap();
    assert!(
        oldest_kept_max >= 10_500,
        "the oldest kept segment is recent enough"
    );
    assert_eq!(log.segment_base_offsets()[0], bases[deleted]);
    // Far in the future every sealed segment is old, the active one stays.
    let n = log.segment_base_offsets().len();
    assert_eq!(log.apply_retention(10_000_000).unwrap(), n - 1);
    assert_eq!(log.segment_base_offsets(), vec![*bases.last().unwrap()]);
    assert_eq!(log.log_start_offset(), *bases.last().unwrap());
    // retention.ms = -1 keeps everything.
    let dir = tempfile::tempdir().unwrap();
    let mut config = small(1_000, 4096);
    config.retention_ms = -1;
    let mut log = open(dir.path(), config);
    fill(&mut log, 30, 2, 100);
    assert_eq!(log.apply_retention(i64::MAX).unwrap(), 0);
}

#[test]
fn delete_records_moves_the_log_start_and_survives_restart() {
    for crash in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let mut log = open(dir.path(), small(1_200, 4096));
        fill(&mut log, 30, 2, 100);
        let bases = log.segment_base_offsets();
        let target = bases[2] + 3;
        assert!(
            matches!(
                log.delete_records_before(target),
                Err(LogError::OffsetOutOfRange { .. })
            ),
            "beyond the high watermark"
        );
        log.set_high_watermark(log.log_end_offset());
        assert_eq!(log.delete_records_before(target).unwrap(), target);
        assert_eq!(
            log.segment_base_offsets()[0],
            bases[2],
            "whole segments below go"
        );
        assert_eq!(log_files(dir.path()).len(), bases.len() - 2);
        assert!(log.read(target - 1, 10, i64::MAX).is_err());
        // Reading at the log start returns the batch containing it.
        let got = records_of(log.read(target, 1, i64::MAX).unwrap().read_bytes().unwrap());
        assert_eq!(got[0].0, target - 1);
        assert_eq!(
            log.delete_records_before(2).unwrap(),
            target,
            "never moves back"
        );
        if !crash {
            log.close().unwrap();
        }
        drop(log);
        let log = Log::open(dir.path(), small(1_200, 4096), crash).unwrap();
        assert_eq!(log.log_start_offset(), target, "crash={crash}");
        assert!(log.read(target - 1, 10, i64::MAX).is_err());
        assert_eq!(log.log_end_offset(), 60);
    }
}

#[test]
fn truncate_to_removes_later_batches_and_segments() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), small(1_200, 200));
    fill(&mut log, 30, 2, 100);
    log.set_high_watermark(60);
    let bases = log.segment_base_offsets();
    let target = bases[2] + 4; // a batch boundary inside the third segment
    log.truncate_to(target).unwrap();
    assert_eq!(log.log_end_offset(), target);
    assert_eq!(log.high_watermark(), target);
    assert_eq!(log.segment_base_offsets(), bases[..3].to_vec());
    assert_eq!(read_all(&log, 0).len() as i64, target);
    let info = log.append(batch(2, 5, "new", 0), 1, 5).unwrap();
    assert_eq!(info.base_offset, target);
    // Inside a batch: the whole batch goes.
    log.truncate_to(target + 1).unwrap();
    assert_eq!(log.log_end_offset(), target);
    log.truncate_to(1_000).unwrap();
    assert_eq!(log.log_end_offset(), target, "past the end: no-op");
    // The truncated log reopens with consistent indexes, cleanly and after a crash.
    log.close().unwrap();
    drop(log);
    let log = open(dir.path(), small(1_200, 200));
    assert_eq!(log.open_report().indexes_rebuilt, 0);
    assert_eq!(log.log_end_offset(), target);
    drop(log);
    let mut log = Log::open(dir.path(), small(1_200, 200), true).unwrap();
    assert_eq!(log.log_end_offset(), target);
    assert_eq!(log.open_report().truncated_bytes, 0);
    // Below the first segment: start over there.
    log.delete_records_before(bases[1]).unwrap();
    log.truncate_to(bases[1] - 2).unwrap();
    assert_eq!(log.log_start_offset(), bases[1] - 2);
    assert_eq!(log.log_end_offset(), bases[1] - 2);
    assert_eq!(
        log.append(batch(1, 0, "z", 0), 2, 0).unwrap().base_offset,
        bases[1] - 2
    );
}

#[test]
fn leader_epoch_checkpoint_and_end_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), small(1_000, 4096));
    for (epoch, n) in [(2, 3), (2, 2), (4, 4), (4, 1), (7, 2)] {
        log.append(batch(n, 0, "e", 50), epoch, 0).unwrap();
    }
    // Epoch 2 from 0, 4 from 5, 7 from 10; log end 12.
    assert_eq!(
        checkpoint(dir.path(), "leader-epoch-checkpoint"),
        "0\n3\n2 0\n4 5\n7 10\n"
    );
    assert_eq!(log.end_offset_for_epoch(2), (2, 5));
    assert_eq!(
        log.end_offset_for_epoch(3),
        (2, 5),
        "unknown epoch: the one before"
    );
    assert_eq!(log.end_offset_for_epoch(4), (4, 10));
    assert_eq!(
        log.end_offset_for_epoch(7),
        (7, 12),
        "latest epoch ends at the log end"
    );
    assert_eq!(log.end_offset_for_epoch(1), (1, 0), "older than all known");
    assert_eq!(
        log.end_offset_for_epoch(8),
        (-1, -1),
        "newer than all known"
    );
    assert_eq!(log.end_offset_for_epoch(-1), (-1, -1));
    log.append(batch(1, 0, "stale", 0), 3, 0).unwrap();
    assert_eq!(
        log.latest_epoch(),
        Some(7),
        "an older epoch is not recorded"
    );
    // Truncation forgets epochs that start past the new end.
    log.truncate_to(10).unwrap();
    assert_eq!(
        log.leader_epochs(),
        &[
            EpochEntry {
                epoch: 2,
                start_offset: 0
            },
            EpochEntry {
                epoch: 4,
                start_offset: 5
            }
        ]
    );
    assert_eq!(log.end_offset_for_epoch(4), (4, 10));
    assert_eq!(
        checkpoint(dir.path(), "leader-epoch-checkpoint"),
        "0\n2\n2 0\n4 5\n"
    );
    // Moving the log start moves the first epoch's start.
    log.set_high_watermark(10);
    log.delete_records_before(6).unwrap();
    assert_eq!(
        checkpoint(dir.path(), "leader-epoch-checkpoint"),
        "0\n1\n4 6\n"
    );
    log.close().unwrap();
    drop(log);
    let log = open(dir.path(), small(1_000, 4096));
    assert_eq!(
        log.leader_epochs(),
        &[EpochEntry {
            epoch: 4,
            start_offset: 6
        }]
    );
}

#[test]
fn recovery_rebuilds_leader_epochs_from_batches() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), small(100_000, 4096));
    log.append(batch(2, 0, "a", 0), 1, 0).unwrap();
    log.append(batch(2, 0, "b", 0), 3, 0).unwrap();
    drop(log);
    std::fs::remove_file(dir.path().join("leader-epoch-checkpoint")).unwrap();
    let log = Log::open(dir.path(), small(100_000, 4096), true).unwrap();
    assert_eq!(log.end_offset_for_epoch(1), (1, 2));
    assert_eq!(log.end_offset_for_epoch(3), (3, 4));
    assert_eq!(
        checkpoint(dir.path(), "leader-epoch-checkpoint"),
        "0\n2\n1 0\n3 2\n"
    );
}

/// A topic config change reaches an open log: segment size and index interval from the next
/// roll, retention and the cleaner from their next round; an invalid config changes nothing.
#[test]
fn a_new_config_applies_to_the_open_log() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), small(1 << 20, 4096));
    fill(&mut log, 10, 2, 100);
    assert_eq!(log.segment_base_offsets().len(), 1);
    assert_eq!(log.apply_retention(1_000_000).unwrap(), 0);
    assert!(log.clean_plan(1_000_000).is_none(), "not compacted");

    let mut config = log.config().clone();
    config.segment_bytes = 600;
    config.index_interval_bytes = 1;
    log.set_config(config.clone()).unwrap();
    fill(&mut log, 10, 2, 100);
    let bases = log.segment_base_offsets();
    assert!(
        bases.len() >= 4,
        "smaller segments from the next append: {bases:?}"
    );
    // The first segment (4 KiB interval) has no index entry, the new ones (1 byte) have.
    let index_len = |base: i64| {
        let path = dir.path().join(format!("{base:020}.index"));
        std::fs::metadata(path).unwrap().len()
    };
    assert_eq!(index_len(bases[0]), 0);
    assert!(index_len(bases[bases.len() - 2]) >= 8);

    let leo = log.log_end_offset();
    log.set_high_watermark(leo);
    config.compact = true;
    config.min_cleanable_dirty_ratio = 0.0;
    log.set_config(config.clone()).unwrap();
    assert!(log.clean_plan(1_000_000).is_some(), "compacted now");

    config.retention_ms = 10;
    log.set_config(config.clone()).unwrap();
    let deleted = log.apply_retention(1_000_000).unwrap();
    assert_eq!(
        deleted,
        bases.len() - 1,
        "every sealed segment is past retention"
    );
    assert_eq!(log.log_start_offset(), bases[bases.len() - 1]);

    let bad = LogConfig {
        segment_bytes: 3,
        ..config.clone()
    };
    assert!(log.set_config(bad).is_err());
    assert_eq!(log.config(), &config);
}
