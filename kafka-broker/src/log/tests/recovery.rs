//! Opening after clean and unclean shutdowns: no scan when clean, torn tails cut, damage below
//! the recovery point refused.
#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

use kafka_protocol::record::RecordBatches;

use super::super::{LogError, OpenReport};
use super::*;

/// (position, size, base offset, last offset) of each batch of a segment file.
fn batches_in(file: &Path) -> Vec<(usize, usize, i64, i64)> {
    let bytes = Bytes::from(std::fs::read(file).unwrap());
    let mut pos = 0;
    RecordBatches::new(bytes)
        .map(|b| {
            let b = b.unwrap();
            let at = pos;
            pos += b.size();
            (at, b.size(), b.base_offset(), b.last_offset())
        })
        .collect()
}

fn edit(file: &Path, f: impl FnOnce(&mut Vec<u8>)) {
    let mut data = std::fs::read(file).unwrap();
    f(&mut data);
    std::fs::write(file, data).unwrap();
}

/// A log of 3-record batches over a few segments, left without `close` (a crash).
fn crashed_log(dir: &Path) -> i64 {
    let mut log = open(dir, small(2_000, 256));
    fill(&mut log, 30, 3, 40);
    assert!(log.segment_base_offsets().len() >= 3);
    log.log_end_offset()
}

/// Captures what the log module writes with `tracing` while `f` runs.
fn capture_logs<R>(f: impl FnOnce() -> R) -> (R, String) {
    #[derive(Clone, Default)]
    struct Sink(Arc<Mutex<Vec<u8>>>);
    impl Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let sink = Sink::default();
    let writer = sink.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let out = tracing::subscriber::with_default(subscriber, f);
    let text = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
    (out, text)
}

#[test]
fn clean_restart_does_no_recovery_scan() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), small(2_000, 256));
    fill(&mut log, 30, 3, 40);
    let leo = log.log_end_offset();
    log.close().unwrap();
    drop(log);
    // Damage the last record of the closed log: only a CRC check can see it.
    let last = log_files(dir.path()).pop().unwrap();
    let size = std::fs::metadata(&last).unwrap().len();
    edit(&last, |d| {
        let n = d.len();
        d[n - 3] ^= 0x55;
    });
    let log = Log::open(dir.path(), small(2_000, 256), false).unwrap();
    let report = log.open_report();
    assert_eq!(
        (
            report.segments_scanned,
            report.batches_checked,
            report.truncated_bytes
        ),
        (0, 0, 0),
        "a clean start checks no batch"
    );
    assert!(report.segments >= 3);
    assert_eq!(log.log_end_offset(), leo);
    assert_eq!(
        std::fs::metadata(&last).unwrap().len(),
        size,
        "not truncated"
    );
    drop(log);
    // The same bytes after an unclean shutdown: the damaged batch is cut.
    let log = Log::open(dir.path(), small(2_000, 256), true).unwrap();
    assert_eq!(
        log.open_report().segments_scanned,
        1,
        "only past the recovery point"
    );
    assert_eq!(log.log_end_offset(), leo - 3);
    assert!(std::fs::metadata(&last).unwrap().len() < size);
}

type Tear = fn(&mut Vec<u8>, usize, usize);

#[test]
fn torn_tails_are_cut_to_the_last_valid_batch() {
    let tears: [(&str, Tear, bool); 6] = [
        (
            "cut inside a batch header",
            |d, pos, _| d.truncate(pos + 30),
            true,
        ),
        (
            "cut inside the records",
            |d, pos, size| d.truncate(pos + size - 7),
            true,
        ),
        (
            "flipped byte",
            |d, pos, size| d[pos + size - 20] ^= 0x01,
            true,
        ),
        (
            "zero-filled tail",
            |d, _, _| d.extend_from_slice(&[0; 4096]),
            false,
        ),
        (
            "zeroed last batch",
            |d, pos, size| d[pos..pos + size].fill(0),
            true,
        ),
        (
            "length past the end of the file",
            |d, pos, _| {
                d[pos + 8..pos + 12].copy_from_slice(&1_000_000i32.to_be_bytes());
            },
            true,
        ),
    ];
    for (what, tear, loses_last) in tears {
        let dir = tempfile::tempdir().unwrap();
        let leo = crashed_log(dir.path());
        let last = log_files(dir.path()).pop().unwrap();
        let &(pos, size, base, _) = batches_in(&last).last().unwrap();
        edit(&last, |d| tear(d, pos, size));
        let (log, logs) = capture_logs(|| Log::open(dir.path(), small(2_000, 256), true));
        let mut log = log.unwrap();
        let expected_leo = if loses_last { base } else { leo };
        assert_eq!(log.log_end_offset(), expected_leo, "{what}");
        let valid = if loses_last { pos } else { pos + size };
        assert_eq!(
            std::fs::metadata(&last).unwrap().len(),
            valid as u64,
            "{what}"
        );
        assert!(log.open_report().truncated_bytes > 0, "{what}");
        let name = last.file_name().unwrap().to_str().unwrap();
        assert!(
            logs.contains("truncating segment") && logs.contains(name),
            "{what}: warning names the file: {logs}"
        );
        assert!(
            logs.contains(&format!("position={valid}")),
            "{what}: and the position: {logs}"
        );
        // Appends continue right after the last valid batch.
        let info = log.append(batch(2, 9_999, "after", 0), 0, 9_999).unwrap();
        assert_eq!(info.base_offset, expected_leo, "{what}");
        let all = read_all(&log, 0);
        assert_eq!(all.len() as i64, expected_leo + 2, "{what}");
        assert!(
            all.iter().enumerate().all(|(i, r)| r.0 == i as i64),
            "{what}: no gaps"
        );
        assert_eq!(all.last().unwrap().1, "after-1");
        // And the recovered log reopens cleanly.
        log.close().unwrap();
        drop(log);
        let log = open(dir.path(), small(2_000, 256));
        assert_eq!(log.log_end_offset(), expected_leo + 2, "{what}");
    }
}

#[test]
fn recovery_scans_only_past_the_recovery_point_and_rebuilds_indexes() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), small(2_000, 256));
    fill(&mut log, 20, 3, 40);
    log.flush().unwrap();
    let point = log.recovery_point();
    assert_eq!(point, log.log_end_offset());
    let sealed = log.segment_base_offsets().len();
    fill(&mut log, 20, 3, 40);
    let all = log.segment_base_offsets();
    let leo = log.log_end_offset();
    drop(log); // crash: the newer segments' indexes were never written
    let past_point = all.iter().filter(|&&b| b >= all[sealed - 1]).count();
    let index = dir.path().join(format!("{:020}.index", all[all.len() - 2]));
    std::fs::remove_file(&index).unwrap();
    let log = Log::open(dir.path(), small(2_000, 256), true).unwrap();
    let report: &OpenReport = log.open_report();
    assert_eq!(report.segments_scanned, past_point);
    assert_eq!(report.truncated_bytes, 0);
    assert_eq!(log.log_end_offset(), leo);
    assert!(
        std::fs::metadata(&index).unwrap().len() > 0,
        "index rebuilt"
    );
    assert_eq!(log.recovery_point(), leo, "recovered data is flushed");
    assert_eq!(read_all(&log, 0).len() as i64, leo);
}

#[test]
fn a_bad_batch_in_an_earlier_recovered_segment_drops_the_later_segments() {
    let dir = tempfile::tempdir().unwrap();
    let leo = crashed_log(dir.path());
    std::fs::remove_file(dir.path().join("recovery-point-checkpoint")).ok();
    std::fs::write(dir.path().join("recovery-point-checkpoint"), "0\n1\n0\n").unwrap();
    let files = log_files(dir.path());
    let victim = &files[1];
    let &(pos, size, base, _) = &batches_in(victim)[2];
    edit(victim, |d| d[pos + size / 2] ^= 0xff);
    let log = Log::open(dir.path(), small(2_000, 256), true).unwrap();
    assert_eq!(log.log_end_offset(), base);
    assert!(base < leo);
    assert_eq!(
        log_files(dir.path()).len(),
        2,
        "segments after the cut are deleted"
    );
    assert_eq!(log.open_report().segments_deleted, files.len() - 2);
}

#[test]
fn damage_below_the_recovery_point_is_refused_not_cut() {
    for recover in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let mut log = open(dir.path(), small(2_000, 256));
        fill(&mut log, 30, 3, 40);
        log.close().unwrap();
        drop(log);
        let first = log_files(dir.path()).remove(0);
        let &(pos, _, _, _) = batches_in(&first).last().unwrap();
        let size = std::fs::metadata(&first).unwrap().len();
        edit(&first, |d| d[pos + 16] = 7); // magic of the last batch
        let err = Log::open(dir.path(), small(2_000, 256), recover).unwrap_err();
        match &err {
            LogError::Corrupt { file, position, .. } => {
                assert_eq!(file, &first);
                assert_eq!(*position, pos as u64);
            }
            other => panic!("expected Corrupt, got {other:?}"),
        }
        assert_eq!(
            err.error_code(),
            kafka_protocol::error_code::ErrorCode::KAFKA_STORAGE_ERROR
        );
        assert_eq!(
            std::fs::metadata(&first).unwrap().len(),
            size,
            "nothing discarded"
        );
    }
    // A bad CRC in a sealed segment is found when its index must be rebuilt, and refused too.
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), small(2_000, 256));
    fill(&mut log, 30, 3, 40);
    log.close().unwrap();
    drop(log);
    let first = log_files(dir.path()).remove(0);
    let &(pos, size, _, _) = &batches_in(&first)[1];
    edit(&first, |d| d[pos + size - 5] ^= 1);
    std::fs::remove_file(first.with_extension("index")).unwrap();
    let err = Log::open(dir.path(), small(2_000, 256), false).unwrap_err();
    assert!(
        matches!(&err, LogError::Corrupt { file, position, .. } if file == &first && *position == pos as u64),
        "{err:?}"
    );
}

#[test]
fn damaged_checkpoints() {
    // An unreadable recovery point makes recovery check every segment.
    let dir = tempfile::tempdir().unwrap();
    let leo = crashed_log(dir.path());
    let segments = log_files(dir.path()).len();
    std::fs::write(
        dir.path().join("recovery-point-checkpoint"),
        "0\n1\nbanana\n",
    )
    .unwrap();
    let log = Log::open(dir.path(), small(2_000, 256), true).unwrap();
    assert_eq!(log.open_report().segments_scanned, segments);
    assert_eq!(log.log_end_offset(), leo);
    drop(log);
    // An unreadable log start offset is refused: guessing could expose deleted records.
    std::fs::write(dir.path().join("log-start-offset-checkpoint"), "7\n").unwrap();
    let err = Log::open(dir.path(), small(2_000, 256), false).unwrap_err();
    assert!(
        matches!(&err, LogError::Corrupt { file, .. } if file.ends_with("log-start-offset-checkpoint")),
        "{err:?}"
    );
}
