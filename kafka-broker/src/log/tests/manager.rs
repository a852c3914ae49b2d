//! The log manager: directory names, clean-shutdown marker, creation, deletion, offline logs.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use kafka_protocol::error_code::ErrorCode;

use super::super::manager::LogDirName;
use super::super::{CLEAN_SHUTDOWN_FILE, LogError, LogManager, TopicPartition, lock_log};
use super::*;

fn manager(dirs: &[&Path]) -> LogManager {
    let dirs: Vec<PathBuf> = dirs.iter().map(|d| d.to_path_buf()).collect();
    LogManager::open(dirs, |_| small(1_000, 4096)).unwrap()
}

#[test]
fn directory_names_split_at_the_last_dash() {
    let tp = TopicPartition::from_dir_name("my-topic.v2-13").unwrap();
    assert_eq!((&*tp.topic, tp.partition), ("my-topic.v2", 13));
    assert_eq!(tp.dir_name(), "my-topic.v2-13");
    for bad in [
        "nodash", "topic-", "-3", "topic-x", "topic-1-", "topic-+1", "topic-01", "a/b-0",
    ] {
        assert_eq!(TopicPartition::from_dir_name(bad), None, "{bad}");
    }
}

#[test]
fn logs_are_found_again_after_a_clean_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    let m = manager(&[dir.path()]);
    assert!(
        !m.recovered_at_start(),
        "a new directory has no marker, but no run ended there uncleanly"
    );
    for (topic, partition) in [("my-topic.v2", 3), ("a-b-c", 0), ("a-b-c", 1)] {
        let log = m
            .get_or_create(topic, partition, small(1_000, 4096))
            .unwrap();
        fill(&mut lock_log(&log), 3 + partition as usize, 1, 10);
    }
    assert!(matches!(
        m.get_or_create("../escape", 0, LogConfig::default()),
        Err(LogError::InvalidTopic(_))
    ));
    std::fs::create_dir(dir.path().join("not_a_partition")).unwrap();
    std::fs::create_dir(dir.path().join("gone-0.7-delete")).unwrap();
    m.close().unwrap();
    assert!(dir.path().join(CLEAN_SHUTDOWN_FILE).exists());
    drop(m);

    let m = manager(&[dir.path()]);
    assert!(!m.recovered_at_start());
    assert!(
        !dir.path().join(CLEAN_SHUTDOWN_FILE).exists(),
        "removed while running"
    );
    assert!(
        !dir.path().join("gone-0.7-delete").exists(),
        "pending deletion finished"
    );
    let names: Vec<String> = m.partitions().iter().map(ToString::to_string).collect();
    assert_eq!(names, ["a-b-c-0", "a-b-c-1", "my-topic.v2-3"]);
    let log = m.get("my-topic.v2", 3).unwrap().unwrap();
    let log = lock_log(&log);
    assert_eq!(log.log_end_offset(), 6);
    assert_eq!(log.open_report().segments_scanned, 0, "clean: no recovery");
    assert!(m.get("a-b-c", 7).unwrap().is_none());
}

#[test]
fn a_missing_marker_recovers_every_log() {
    let dir = tempfile::tempdir().unwrap();
    let m = manager(&[dir.path()]);
    let log = m.get_or_create("t", 0, small(1_000, 4096)).unwrap();
    fill(&mut lock_log(&log), 4, 1, 10);
    drop((log, m)); // no close: a crash
    let m = manager(&[dir.path()]);
    assert!(m.recovered_at_start());
    let log = m.get("t", 0).unwrap().unwrap();
    let log = lock_log(&log);
    assert!(log.open_report().recovery);
    assert_eq!(log.open_report().batches_checked, 4);
    assert_eq!(log.log_end_offset(), 4);
}

#[test]
fn delete_removes_the_directory_and_fences_holders() {
    let dir = tempfile::tempdir().unwrap();
    let m = manager(&[dir.path()]);
    let held = m.get_or_create("doomed", 0, small(1_000, 4096)).unwrap();
    fill(&mut lock_log(&held), 2, 1, 10);
    assert!(m.delete("doomed", 0).unwrap());
    assert!(!dir.path().join("doomed-0").exists());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    let err = lock_log(&held)
        .append(batch(1, 0, "x", 0), 0, 0)
        .unwrap_err();
    assert_eq!(err.error_code(), ErrorCode::UNKNOWN_TOPIC_OR_PARTITION);
    assert!(m.get("doomed", 0).unwrap().is_none());
    assert!(!m.delete("doomed", 0).unwrap());
    let again = m.get_or_create("doomed", 0, small(1_000, 4096)).unwrap();
    assert_eq!(lock_log(&again).log_end_offset(), 0, "recreated empty");
}

#[test]
fn a_damaged_log_is_offline_while_the_others_serve() {
    let dir = tempfile::tempdir().unwrap();
    let m = manager(&[dir.path()]);
    for p in 0..2 {
        let log = m.get_or_create("t", p, small(1_000, 4096)).unwrap();
        fill(&mut lock_log(&log), 20, 2, 40);
    }
    m.close().unwrap();
    drop(m);
    // Break the magic of the last batch of partition 1's first (sealed) segment.
    let first = log_files(&dir.path().join("t-1")).remove(0);
    let mut data = std::fs::read(&first).unwrap();
    let bytes = Bytes::from(data.clone());
    let last_pos: usize = kafka_protocol::record::RecordBatches::new(bytes)
        .map(|b| b.unwrap().size())
        .collect::<Vec<_>>()
        .split_last()
        .map(|(_, before)| before.iter().sum())
        .unwrap();
    data[last_pos + 16] = 9;
    std::fs::write(&first, data).unwrap();

    let m = manager(&[dir.path()]);
    assert_eq!(
        lock_log(&m.get("t", 0).unwrap().unwrap()).log_end_offset(),
        40
    );
    let err = m.get("t", 1).unwrap_err();
    assert_eq!(err.error_code(), ErrorCode::KAFKA_STORAGE_ERROR);
    let offline = m.offline();
    assert_eq!(offline.len(), 1);
    assert!(
        offline[0].1.contains("00000000000000000000.log"),
        "{}",
        offline[0].1
    );
    assert!(m.get_or_create("t", 1, LogConfig::default()).is_err());
    assert!(m.delete("t", 1).unwrap(), "an offline log can be deleted");
    assert!(!dir.path().join("t-1").exists());
}

#[test]
fn new_logs_spread_over_data_directories_and_timers_apply() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let m = manager(&[a.path(), b.path()]);
    let mut config = small(600, 4096);
    config.retention_bytes = 0;
    for p in 0..4 {
        let log = m.get_or_create("spread", p, config.clone()).unwrap();
        fill(&mut lock_log(&log), 10, 2, 50);
    }
    let count = |d: &Path| {
        std::fs::read_dir(d)
            .unwrap()
            .filter(|e| e.as_ref().unwrap().path().is_dir())
            .count()
    };
    assert_eq!((count(a.path()), count(b.path())), (2, 2));
    let deleted = m.apply_retention(0);
    assert!(deleted >= 4, "retention ran on every log: {deleted}");
    for (_, log) in m.all() {
        assert_eq!(lock_log(&log).segment_base_offsets().len(), 1);
    }
    m.flush_all().unwrap();
    m.close().unwrap();
    assert!(
        a.path().join(CLEAN_SHUTDOWN_FILE).exists() && b.path().join(CLEAN_SHUTDOWN_FILE).exists()
    );
}
