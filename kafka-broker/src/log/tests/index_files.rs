//! Index files (checked byte by byte against the log files), lookups by timestamp, index
//! rebuilds on a clean start.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use kafka_protocol::record::RecordBatches;

use super::*;

/// Index entries computed independently from a `.log` file with Kafka's rule: before a batch,
/// if more than `interval` bytes went by since the last entry, add (batch last offset - base,
/// batch position) and, if the segment's max timestamp grew since the last time entry,
/// (max timestamp, relative last offset of the batch that reached it).
fn expected_entries(log_file: &Path, base: i64, interval: u64) -> (Vec<u8>, Vec<u8>) {
    let bytes = Bytes::from(std::fs::read(log_file).unwrap());
    let (mut offsets, mut times) = (Vec::new(), Vec::new());
    let (mut since, mut pos) = (0u64, 0u64);
    let (mut max_ts, mut max_off, mut last_time) = (-1i64, base, -1i64);
    for b in RecordBatches::new(bytes) {
        let b = b.unwrap();
        if b.max_timestamp() > max_ts {
            max_ts = b.max_timestamp();
            max_off = b.last_offset();
        }
        if since > interval {
            offsets.extend_from_slice(&((b.last_offset() - base) as u32).to_be_bytes());
            offsets.extend_from_slice(&(pos as u32).to_be_bytes());
            if max_ts > last_time {
                times.extend_from_slice(&max_ts.to_be_bytes());
                times.extend_from_slice(&((max_off - base) as u32).to_be_bytes());
                last_time = max_ts;
            }
            since = 0;
        }
        since += b.size() as u64;
        pos += b.size() as u64;
    }
    // Sealing or closing a segment records its final maximum.
    if max_ts > last_time {
        times.extend_from_slice(&max_ts.to_be_bytes());
        times.extend_from_slice(&((max_off - base) as u32).to_be_bytes());
    }
    (offsets, times)
}

fn with_ext(log_file: &Path, ext: &str) -> PathBuf {
    log_file.with_extension(ext)
}

#[test]
fn index_files_have_kafka_layout_and_an_entry_per_interval() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), small(8_000, 300));
    fill(&mut log, 150, 2, 60);
    log.close().unwrap();
    let files = log_files(dir.path());
    assert!(files.len() >= 3);
    let mut total_entries = 0;
    for (file, base) in files.iter().zip(log.segment_base_offsets()) {
        let (offsets, times) = expected_entries(file, base, 300);
        let index = std::fs::read(with_ext(file, "index")).unwrap();
        let time_index = std::fs::read(with_ext(file, "timeindex")).unwrap();
        assert_eq!(index, offsets, "offset index of {}", file.display());
        assert_eq!(time_index, times, "time index of {}", file.display());
        assert_eq!(index.len() % 8, 0);
        assert_eq!(time_index.len() % 12, 0);
        // Roughly one entry per 300 bytes of log data.
        let size = std::fs::metadata(file).unwrap().len() as usize;
        let entries = index.len() / 8;
        assert!(
            entries + 2 >= size / 400 && entries <= size / 300,
            "{entries} for {size}"
        );
        total_entries += entries;
        // Entries point at batch starts: the position's batch has the entry's last offset.
        for e in index.chunks(8) {
            let rel = u32::from_be_bytes(e[..4].try_into().unwrap());
            let pos = u32::from_be_bytes(e[4..].try_into().unwrap()) as usize;
            let data = std::fs::read(file).unwrap();
            let b = RecordBatches::new(Bytes::from(data).slice(pos..))
                .next()
                .unwrap()
                .unwrap();
            assert_eq!(b.last_offset(), base + i64::from(rel));
        }
    }
    assert!(total_entries > 10);
}

#[test]
fn indexes_are_written_on_flush_and_identical_after_a_restart() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut straight = open(a.path(), small(20_000, 200));
    fill(&mut straight, 40, 1, 50);
    straight.flush().unwrap();
    let index = with_ext(&log_files(a.path())[0], "index");
    assert!(
        std::fs::metadata(&index).unwrap().len() > 0,
        "flush writes index entries"
    );
    straight.close().unwrap();

    let mut restarted = open(b.path(), small(20_000, 200));
    fill(&mut restarted, 20, 1, 50);
    restarted.close().unwrap();
    drop(restarted);
    let mut restarted = open(b.path(), small(20_000, 200));
    assert_eq!(restarted.open_report().indexes_rebuilt, 0);
    for i in 20..40 {
        let ts = 1_000 + i;
        restarted
            .append(batch(1, ts, &format!("b{i}"), 50), 0, ts)
            .unwrap();
    }
    restarted.close().unwrap();
    for ext in ["log", "index"] {
        let name = format!("{:020}.{ext}", 0);
        assert_eq!(
            std::fs::read(a.path().join(&name)).unwrap(),
            std::fs::read(b.path().join(&name)).unwrap(),
            "{name} differs after a restart"
        );
    }
}

#[test]
fn offset_for_timestamp_finds_the_first_record_at_or_after() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), small(2_000, 100));
    // Batch i holds 4 records with timestamps 1000 + 10 i + j.
    for i in 0..30 {
        log.append(batch(4, 1_000 + 10 * i, "t", 20), 0, 0).unwrap();
    }
    assert!(log.segment_base_offsets().len() > 2);
    assert_eq!(log.offset_for_timestamp(0).unwrap(), Some((0, 1_000)));
    assert_eq!(log.offset_for_timestamp(1_000).unwrap(), Some((0, 1_000)));
    // Inside batch 17 (offsets 68..72, timestamps 1170..1173): exact record.
    assert_eq!(log.offset_for_timestamp(1_172).unwrap(), Some((70, 1_172)));
    // Between batches: first record of the next batch.
    assert_eq!(log.offset_for_timestamp(1_175).unwrap(), Some((72, 1_180)));
    assert_eq!(log.offset_for_timestamp(1_293).unwrap(), Some((119, 1_293)));
    assert_eq!(log.offset_for_timestamp(1_294).unwrap(), None);
}

#[test]
fn timestamps_out_of_order_and_max_timestamp() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), small(10_000, 50));
    let mut b = kafka_protocol::record::RecordBatchBuilder::new();
    for ts in [100, 400, 120] {
        b.append(ts, None, Some(b"x"), &[]).unwrap();
    }
    log.append(b.build_mut().unwrap(), 0, 0).unwrap(); // offsets 0..3, max 400 at 1
    log.append(batch(2, 50, "old", 0), 0, 0).unwrap(); // offsets 3..5
    log.append(batch(1, 300, "new", 0), 0, 0).unwrap(); // offset 5
    // First batch whose max reaches the target, then the first record in it that does.
    assert_eq!(log.offset_for_timestamp(60).unwrap(), Some((0, 100)));
    assert_eq!(log.offset_for_timestamp(110).unwrap(), Some((1, 400)));
    assert_eq!(log.offset_for_timestamp(401).unwrap(), None);
    assert_eq!(log.max_timestamp_offset().unwrap(), Some((1, 400)));
    // After a restart the max comes from the time index.
    log.close().unwrap();
    drop(log);
    let log = open(dir.path(), small(10_000, 50));
    assert_eq!(log.max_timestamp_offset().unwrap(), Some((1, 400)));
    let empty_dir = tempfile::tempdir().unwrap();
    assert_eq!(
        open(empty_dir.path(), LogConfig::default())
            .max_timestamp_offset()
            .unwrap(),
        None
    );
}

fn closed_log(dir: &Path) -> Vec<i64> {
    let mut log = open(dir, small(3_000, 200));
    fill(&mut log, 30, 2, 50);
    log.close().unwrap();
    log.segment_base_offsets()
}

/// A way to damage an index file.
type Corruption = (&'static str, fn(&Path));

#[test]
fn corrupt_or_missing_indexes_are_rebuilt_on_a_clean_start() {
    let corruptions: [Corruption; 5] = [
        ("missing", |p| std::fs::remove_file(p).unwrap()),
        ("odd size", |p| {
            let mut v = std::fs::read(p).unwrap();
            v.push(0);
            std::fs::write(p, v).unwrap();
        }),
        ("not increasing", |p| {
            let mut v = std::fs::read(p).unwrap();
            let (first, rest) = v.split_at_mut(8);
            rest[..8].copy_from_slice(first);
            std::fs::write(p, v).unwrap();
        }),
        ("past the end", |p| {
            let mut v = std::fs::read(p).unwrap();
            let n = v.len();
            v[n - 4..].copy_from_slice(&u32::MAX.to_be_bytes());
            std::fs::write(p, v).unwrap();
        }),
        ("garbage", |p| std::fs::write(p, [0xff; 16]).unwrap()),
    ];
    for (what, corrupt) in corruptions {
        let dir = tempfile::tempdir().unwrap();
        let bases = closed_log(dir.path());
        let index = dir.path().join(format!("{:020}.index", bases[0]));
        let good = std::fs::read(&index).unwrap();
        assert!(good.len() >= 16, "needs a few entries");
        corrupt(&index);
        let log = open(dir.path(), small(3_000, 200));
        assert_eq!(log.open_report().indexes_rebuilt, 1, "{what}");
        assert_eq!(
            std::fs::read(&index).unwrap(),
            good,
            "{what}: rebuilt as before"
        );
        assert_eq!(read_all(&log, 0).len(), 60, "{what}");
    }
    // A time index pointing past the log is rebuilt too.
    let dir = tempfile::tempdir().unwrap();
    let bases = closed_log(dir.path());
    let time_index = dir.path().join(format!("{:020}.timeindex", bases[1]));
    let good = std::fs::read(&time_index).unwrap();
    let mut bad = good.clone();
    let n = bad.len();
    bad[n - 4..].copy_from_slice(&1_000_000u32.to_be_bytes());
    std::fs::write(&time_index, bad).unwrap();
    let log = open(dir.path(), small(3_000, 200));
    assert_eq!(log.open_report().indexes_rebuilt, 1);
    assert_eq!(std::fs::read(&time_index).unwrap(), good);
    assert_eq!(log.offset_for_timestamp(1_030).unwrap(), Some((30, 1_030)));
}
