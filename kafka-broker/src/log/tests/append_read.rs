//! Appends and reads: offsets, stamping, rolls, fetch limits.
#![allow(clippy::unwrap_used)]

use kafka_protocol::record::{RecordBatch, RecordBatches, TimestampType};

use super::super::{LogConfig, LogError};
use super::*;

#[test]
fn append_assigns_offsets_and_round_trips_across_rolls() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), small(1024, 128));
    let bases = fill(&mut log, 40, 3, 40);
    assert_eq!(bases, (0..40).map(|i| i * 3).collect::<Vec<i64>>());
    assert_eq!(log.log_end_offset(), 120);
    let segments = log.segment_base_offsets();
    assert!(segments.len() > 5, "small segments roll: {segments:?}");
    // Every segment file is named by its base offset and stays within segment.bytes.
    for (file, base) in log_files(dir.path()).iter().zip(&segments) {
        assert_eq!(
            file.file_name().unwrap().to_str().unwrap(),
            format!("{base:020}.log")
        );
        assert!(std::fs::metadata(file).unwrap().len() <= 1024);
    }
    let all = read_all(&log, 0);
    assert_eq!(all.len(), 120);
    for (i, (offset, value)) in all.iter().enumerate() {
        assert_eq!(*offset, i as i64);
        assert_eq!(value, &format!("b{}-{}", i / 3, i % 3));
    }
    // The stored batches carry their offsets and the leader epoch; CRCs stay valid.
    let info = log.read(0, usize::MAX, i64::MAX).unwrap();
    for b in RecordBatches::new(info.read_bytes().unwrap()) {
        let b = b.unwrap();
        assert_eq!(b.partition_leader_epoch(), 0);
        assert_eq!(b.base_offset() % 3, 0);
        b.verify_crc().unwrap();
    }
}

#[test]
fn several_batches_in_one_append_and_append_info() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), LogConfig::default());
    log.append(batch(2, 10, "a", 0), 5, 99).unwrap();
    let mut records = batch(3, 500, "b", 0);
    records.extend_from_slice(&batch(4, 300, "c", 0));
    let info = log.append(records, 5, 1_000).unwrap();
    assert_eq!((info.base_offset, info.last_offset), (2, 8));
    assert_eq!(info.record_count, 7);
    assert_eq!(info.max_timestamp, 502);
    assert_eq!(info.log_append_time, -1);
    assert_eq!(info.log_start_offset, 0);
    assert_eq!(info.sync_to, None, "no flush policy by default");
    let all = read_all(&log, 0);
    assert_eq!(
        all.iter().map(|r| r.0).collect::<Vec<_>>(),
        (0..9).collect::<Vec<_>>()
    );
    assert_eq!(all[4].1, "b-2");
    assert_eq!(all[5].1, "c-0");
}

#[test]
fn log_append_time_is_stamped_in_place_with_a_valid_crc() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        message_timestamp_type: TimestampType::LogAppendTime,
        ..LogConfig::default()
    };
    let mut log = open(dir.path(), config);
    let info = log.append(batch(3, 5, "x", 0), 7, 123_456).unwrap();
    assert_eq!(info.log_append_time, 123_456);
    assert_eq!(info.max_timestamp, 123_456);
    let bytes = log
        .read(0, 1 << 20, i64::MAX)
        .unwrap()
        .read_bytes()
        .unwrap();
    let b = RecordBatch::from_bytes(bytes).unwrap();
    b.verify_crc().unwrap();
    assert_eq!(b.timestamp_type(), TimestampType::LogAppendTime);
    assert_eq!(b.max_timestamp(), 123_456);
    assert_eq!(b.partition_leader_epoch(), 7);
    for r in b.records(1 << 20).unwrap() {
        assert_eq!(r.unwrap().timestamp(&b), 123_456);
    }
}

#[test]
fn read_from_inside_a_batch_returns_the_whole_batch() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), small(4096, 64));
    fill(&mut log, 10, 5, 10);
    let info = log.read(13, usize::MAX, i64::MAX).unwrap();
    let got = records_of(info.read_bytes().unwrap());
    assert_eq!(
        got.first().unwrap().0,
        10,
        "starts at the batch containing 13"
    );
    assert_eq!(got.last().unwrap().0, 49);
    assert_eq!(info.next_offset, 50);
    // Offsets on a batch's last record and first record.
    assert_eq!(
        records_of(log.read(14, 1, i64::MAX).unwrap().read_bytes().unwrap())[0].0,
        10
    );
    assert_eq!(
        records_of(log.read(15, 1, i64::MAX).unwrap().read_bytes().unwrap())[0].0,
        15
    );
}

#[test]
fn max_bytes_and_upper_bound_limit_reads_to_whole_batches() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), small(100_000, 4096));
    fill(&mut log, 10, 2, 100);
    let one = log.read(0, 1, i64::MAX).unwrap();
    let size = one.bytes;
    assert_eq!(one.slices.len(), 1);
    assert_eq!(
        records_of(one.read_bytes().unwrap()).len(),
        2,
        "at least one whole batch"
    );
    assert_eq!(one.next_offset, 2);
    let none = log.read_with(0, size - 1, i64::MAX, false).unwrap();
    assert!(
        none.is_empty(),
        "without min_one_batch a too-large batch is not returned"
    );
    let three = log.read(0, 3 * size + size / 2, i64::MAX).unwrap();
    assert_eq!(three.bytes, 3 * size, "only whole batches within max_bytes");
    assert_eq!(three.next_offset, 6);
    // Upper bound (high watermark): nothing at or past it.
    let bounded = log.read(0, usize::MAX, 8).unwrap();
    assert_eq!(
        records_of(bounded.read_bytes().unwrap()).last().unwrap().0,
        7
    );
    assert!(log.read(8, usize::MAX, 8).unwrap().is_empty());
    // A bound inside a batch excludes that batch.
    assert_eq!(
        records_of(log.read(0, usize::MAX, 5).unwrap().read_bytes().unwrap()).len(),
        4
    );
}

#[test]
fn reads_span_segments_within_max_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), small(600, 4096));
    fill(&mut log, 12, 2, 100);
    assert!(log.segment_base_offsets().len() >= 4);
    let info = log.read(0, usize::MAX, i64::MAX).unwrap();
    assert_eq!(info.slices.len(), log.segment_base_offsets().len());
    assert_eq!(records_of(info.read_bytes().unwrap()).len(), 24);
}

#[test]
fn offsets_out_of_range_are_a_distinct_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), LogConfig::default());
    fill(&mut log, 2, 2, 0);
    let err = log.read(5, 100, i64::MAX).unwrap_err();
    assert!(matches!(
        err,
        LogError::OffsetOutOfRange {
            offset: 5,
            log_end_offset: 4,
            ..
        }
    ));
    assert_eq!(
        err.error_code(),
        kafka_protocol::error_code::ErrorCode::OFFSET_OUT_OF_RANGE
    );
    assert!(log.read(-1, 100, i64::MAX).is_err());
    let at_end = log.read(4, 100, i64::MAX).unwrap();
    assert!(
        at_end.is_empty(),
        "the log end itself is a valid, empty read"
    );
    assert_eq!(at_end.log_end_offset, 4);
}

#[test]
fn segment_rolls_by_age_and_refuses_oversized_appends() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        segment_ms: 1_000,
        segment_bytes: 10_000,
        ..LogConfig::default()
    };
    let mut log = open(dir.path(), config);
    log.append(batch(1, 0, "a", 0), 0, 10_000).unwrap();
    log.append(batch(1, 0, "b", 0), 0, 10_900).unwrap();
    assert_eq!(log.segment_base_offsets(), vec![0]);
    log.append(batch(1, 0, "c", 0), 0, 11_001).unwrap();
    assert_eq!(log.segment_base_offsets(), vec![0, 2]);
    let err = log
        .append(batch(1, 0, "big", 20_000), 0, 11_002)
        .unwrap_err();
    assert!(matches!(err, LogError::RecordsTooLarge { .. }));
    assert_eq!(
        err.error_code(),
        kafka_protocol::error_code::ErrorCode::RECORD_LIST_TOO_LARGE
    );
    let err = log
        .append(BytesMut::from(&b"not a batch"[..]), 0, 11_003)
        .unwrap_err();
    assert_eq!(
        err.error_code(),
        kafka_protocol::error_code::ErrorCode::CORRUPT_MESSAGE
    );
    assert_eq!(log.log_end_offset(), 3);
}

#[test]
fn high_watermark_is_its_own_value() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = open(dir.path(), LogConfig::default());
    fill(&mut log, 3, 1, 0);
    assert_eq!(
        log.high_watermark(),
        0,
        "appends do not move the high watermark"
    );
    log.set_high_watermark(2);
    assert_eq!(log.high_watermark(), 2);
    log.set_high_watermark(50);
    assert_eq!(log.high_watermark(), 3, "clamped to the log end");
    let info = log.read(0, usize::MAX, log.high_watermark()).unwrap();
    assert_eq!(info.high_watermark, 3);
}
