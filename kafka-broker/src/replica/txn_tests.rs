//! Tests of transactions in the partition layer, on real log files: open transactions,
//! markers and their fencing, the last stable offset with replication, `.txnindex` entries on
//! the leader and the follower, truncation, recovery rebuilding the index, and compaction.
#![allow(clippy::unwrap_used)]

use std::collections::HashSet;
use std::path::Path;
use std::sync::{Arc, Mutex};

use bytes::{Bytes, BytesMut};
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::record::control::{ControlRecordType, parse_end_txn_marker};
use kafka_protocol::record::{RecordBatchBuilder, RecordBatches};

use super::producer_state::ProducerStates;
use super::*;
use crate::log::SharedLog;
use crate::log::{CleanerLimits, Log, LogConfig};

/// A batch of producer `pid` (epoch 0) with sequence `seq`: `n` records `tag-i` keyed `k-i`.
fn producer_batch(pid: i64, seq: i32, n: usize, tag: &str, txn: bool) -> (BytesMut, BatchSummary) {
    let mut b = RecordBatchBuilder::new()
        .producer(pid, 0, seq)
        .transactional(txn);
    for i in 0..n {
        let (k, v) = (format!("k-{i}"), format!("{tag}-{i}"));
        b.append(
            1_000 + i as i64,
            Some(k.as_bytes()),
            Some(v.as_bytes()),
            &[],
        )
        .unwrap();
    }
    let summary = BatchSummary {
        producer_id: pid,
        producer_epoch: 0,
        base_sequence: seq,
        records: n as i32,
        max_timestamp: 1_000 + n as i64 - 1,
        transactional: txn,
    };
    (b.build_mut().unwrap(), summary)
}

fn open_log(dir: &Path, config: LogConfig, recover: bool) -> Log {
    Log::open(dir, config, recover).unwrap()
}

fn partition_over(name: &str, log: Log, producers: ProducerStates) -> Arc<Partition> {
    Arc::new(Partition::new(
        name,
        0,
        Arc::new(Mutex::new(log)),
        producers,
        None,
        super::tests::rules(),
    ))
}

fn leader(dir: &Path, config: LogConfig) -> Arc<Partition> {
    leader_with_log(dir, config).0
}

/// A leader over the log in `dir`, and that log.
fn leader_with_log(dir: &Path, config: LogConfig) -> (Arc<Partition>, SharedLog) {
    let log: SharedLog = Arc::new(Mutex::new(open_log(dir, config, false)));
    let p = Arc::new(Partition::new(
        "t",
        0,
        Arc::clone(&log),
        ProducerStates::default(),
        None,
        super::tests::rules(),
    ));
    p.become_leader(0, &[], &[], 0).unwrap();
    (p, log)
}

fn produce(p: &Arc<Partition>, pid: i64, seq: i32, n: usize, tag: &str, txn: bool) -> Appended {
    let (records, summary) = producer_batch(pid, seq, n, tag, txn);
    p.append_as_leader(records, &[summary], Acks::Leader, 5_000)
        .unwrap()
        .0
}

/// The values a read_committed consumer gets from `p` (up to its last stable offset, dropping
/// the aborted transactions the partition lists, as a Java consumer does), and those a
/// read_uncommitted one gets (up to the high watermark, markers skipped).
fn consume(p: &Partition) -> (Vec<String>, Vec<String>) {
    let o = p.offsets();
    let read = |upper: i64| {
        if upper <= o.log_start {
            return Bytes::new();
        }
        p.read(o.log_start, usize::MAX >> 1, upper).unwrap()
    };
    let mut aborted = p.aborted_transactions(o.log_start, o.last_stable);
    aborted.sort_by_key(|&(_, first)| first);
    let mut pending = aborted.into_iter().peekable();
    let mut aborting: HashSet<i64> = HashSet::new();
    let mut committed = Vec::new();
    for batch in RecordBatches::new(read(o.last_stable)).flatten() {
        while let Some(&(pid, _)) = pending.peek().filter(|&&(_, f)| f <= batch.last_offset()) {
            aborting.insert(pid);
            pending.next();
        }
        if batch.is_control() {
            if let Ok(Some((ControlRecordType::Abort, _))) = parse_end_txn_marker(&batch) {
                aborting.remove(&batch.producer_id());
            }
            continue;
        }
        if batch.is_transactional() && aborting.contains(&batch.producer_id()) {
            continue;
        }
        committed.extend(values(&batch));
    }
    let all = RecordBatches::new(read(o.high_watermark))
        .flatten()
        .filter(|b| !b.is_control())
        .flat_map(|b| values(&b))
        .collect();
    (committed, all)
}

fn values(batch: &kafka_protocol::record::RecordBatch) -> Vec<String> {
    batch
        .records(1 << 20)
        .unwrap()
        .map(|r| String::from_utf8(r.unwrap().value.unwrap().to_vec()).unwrap())
        .collect()
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn transactions_open_complete_and_move_the_last_stable_offset() {
    let dir = tempfile::tempdir().unwrap();
    let p = leader(dir.path(), LogConfig::default());
    produce(&p, -1, -1, 1, "plain", false);
    // Producer 1 opens a transaction at offset 1, producer 2 one at offset 3.
    assert_eq!(produce(&p, 1, 0, 2, "a", true).base_offset, 1);
    assert_eq!(p.offsets().last_stable, 1);
    produce(&p, 2, 0, 1, "b", true);
    produce(&p, 1, 2, 1, "a2", true);
    let o = p.offsets();
    assert_eq!((o.high_watermark, o.last_stable), (5, 1));
    let views = p.producer_views();
    assert_eq!(views.len(), 2);
    assert_eq!(views[0].current_txn_start_offset, 1);
    assert_eq!(views[0].last_sequence, 2);
    assert_eq!(views[1].current_txn_start_offset, 3);
    // A non-transactional batch while the transaction is open: refused, nothing written.
    let (records, summary) = producer_batch(1, 3, 1, "x", false);
    let e = p
        .append_as_leader(records, &[summary], Acks::Leader, 0)
        .unwrap_err();
    assert_eq!(e.error_code(), ErrorCode::INVALID_TXN_STATE);
    assert_eq!(p.offsets().log_end, 5);
    // Producer 1 commits: the LSO moves to producer 2's open transaction.
    let (m, _) = p.write_txn_marker(1, 0, 0, true, 6_000).unwrap();
    assert_eq!(m.base_offset, 5);
    assert_eq!(p.offsets().last_stable, 3);
    assert_eq!(p.producer_views()[0].current_txn_start_offset, -1);
    assert_eq!(p.producer_views()[0].coordinator_epoch, 0);
    // Producer 2 aborts: everything is stable, and the abort is listed.
    p.write_txn_marker(2, 0, 0, false, 6_000).unwrap();
    let o = p.offsets();
    assert_eq!((o.high_watermark, o.last_stable), (7, 7));
    assert_eq!(p.aborted_transactions(0, 7), vec![(2, 3)]);
    assert_eq!(
        p.aborted_transactions(0, 3),
        vec![],
        "starts at the range's end"
    );
    assert_eq!(
        p.aborted_transactions(7, 8),
        vec![],
        "ends before the range"
    );
    let (committed, all) = consume(&p);
    assert_eq!(committed, strings(&["plain-0", "a-0", "a-1", "a2-0"]));
    assert_eq!(all, strings(&["plain-0", "a-0", "a-1", "b-0", "a2-0"]));
    // Producer 1 may write plain batches again.
    produce(&p, 1, 3, 1, "after", false);
}

#[test]
fn markers_are_fenced_by_producer_and_coordinator_epochs() {
    let dir = tempfile::tempdir().unwrap();
    let p = leader(dir.path(), LogConfig::default());
    produce(&p, 1, 0, 1, "a", true);
    p.write_txn_marker(1, 0, 5, false, 0).unwrap();
    // An older coordinator epoch is fenced; an older producer epoch too once bumped.
    let e = p.write_txn_marker(1, 0, 4, true, 0).unwrap_err();
    assert_eq!(e.error_code(), ErrorCode::TRANSACTION_COORDINATOR_FENCED);
    // A marker with a bumped epoch (the coordinator fencing the producer) moves the epoch,
    // and, with no transaction open, is written and completes nothing.
    let (m, _) = p.write_txn_marker(1, 1, 5, false, 0).unwrap();
    assert_eq!(m.base_offset, 2);
    assert_eq!(p.producer_views()[0].epoch, 1);
    assert_eq!(p.aborted_transactions(0, 10), vec![(1, 0)]);
    let e = p.write_txn_marker(1, 0, 6, true, 0).unwrap_err();
    assert_eq!(e.error_code(), ErrorCode::INVALID_PRODUCER_EPOCH);
    // So is the producer's data at the old epoch.
    let (records, summary) = producer_batch(1, 1, 1, "old", true);
    let e = p
        .append_as_leader(records, &[summary], Acks::Leader, 0)
        .unwrap_err();
    assert_eq!(e.error_code(), ErrorCode::INVALID_PRODUCER_EPOCH);
    // A follower refuses to write markers.
    p.become_follower(1).unwrap();
    let e = p.write_txn_marker(1, 1, 6, true, 0).unwrap_err();
    assert_eq!(e.error_code(), ErrorCode::NOT_LEADER_OR_FOLLOWER);
}

#[test]
fn a_coordinator_batch_without_sequence_opens_a_transaction_too() {
    let dir = tempfile::tempdir().unwrap();
    let p = leader(dir.path(), LogConfig::default());
    let (records, summary) = producer_batch(9, -1, 1, "offsets", true);
    p.append_as_leader(records, &[summary], Acks::Leader, 0)
        .unwrap();
    assert_eq!(p.offsets().last_stable, 0);
    p.write_txn_marker(9, 0, 0, true, 0).unwrap();
    assert_eq!(p.offsets().last_stable, 2);
}

#[test]
fn with_a_follower_a_transaction_is_stable_only_once_its_marker_is_replicated() {
    let dir = tempfile::tempdir().unwrap();
    let l = partition_over(
        "lead",
        open_log(&dir.path().join("lead"), LogConfig::default(), false),
        ProducerStates::default(),
    );
    l.become_leader(0, &[2], &[2], 0).unwrap();
    produce(&l, 1, 0, 3, "a", true);
    l.follower_fetched(2, -1, 3, 0, 0).unwrap();
    assert_eq!(
        (l.offsets().high_watermark, l.offsets().last_stable),
        (3, 0)
    );
    l.write_txn_marker(1, 0, 0, true, 0).unwrap();
    // The marker is at 3: not replicated, the transaction still holds the LSO.
    assert_eq!(l.offsets().last_stable, 0);
    l.follower_fetched(2, -1, 4, 0, 0).unwrap();
    let o = l.offsets();
    assert_eq!((o.high_watermark, o.last_stable), (4, 4));

    // The follower copies the leader's batches and tracks the same.
    produce(&l, 1, 3, 2, "b", true);
    l.write_txn_marker(1, 0, 0, false, 0).unwrap();
    let f = partition_over(
        "follow",
        open_log(&dir.path().join("follow"), LogConfig::default(), false),
        ProducerStates::default(),
    );
    f.become_follower(0).unwrap();
    let bytes = l.read(0, usize::MAX >> 1, 7).unwrap();
    f.append_as_follower(BytesMut::from(&bytes[..]), 0).unwrap();
    f.set_high_watermark_from_leader(6);
    assert_eq!(
        f.offsets().last_stable,
        4,
        "the abort marker at 6 is not below the HW"
    );
    f.set_high_watermark_from_leader(7);
    assert_eq!(f.offsets().last_stable, 7);
    assert_eq!(f.aborted_transactions(0, 7), vec![(1, 4)]);
    assert_eq!(
        std::fs::metadata(dir.path().join("follow/00000000000000000000.txnindex"))
            .unwrap()
            .len(),
        34
    );
    assert_eq!(f.producer_views(), l.producer_views());
    // Truncated below the abort marker, the follower forgets it and the transaction is open.
    f.truncate_to(6, 0).unwrap();
    assert_eq!(f.aborted_transactions(0, 7), vec![]);
    assert_eq!(f.producer_views()[0].current_txn_start_offset, 4);
    assert_eq!(
        std::fs::metadata(dir.path().join("follow/00000000000000000000.txnindex"))
            .ok()
            .map(|m| m.len()),
        None
    );
    assert_eq!(f.offsets().last_stable, 4);
}

/// Writes, into `dir`, a log of small segments holding committed, aborted and open
/// transactions; returns what read_committed and read_uncommitted consumers see.
fn write_transactions(dir: &Path, config: &LogConfig) -> (Vec<String>, Vec<String>) {
    let (p, log) = leader_with_log(dir, config.clone());
    for round in 0..4 {
        let seq = round * 2;
        produce(&p, 1, seq, 2, &format!("c{round}"), true);
        produce(&p, 2, seq, 2, &format!("x{round}"), true);
        p.write_txn_marker(1, 0, 0, true, 0).unwrap();
        p.write_txn_marker(2, 0, 0, false, 0).unwrap();
    }
    // Producer 3's transaction stays open.
    produce(&p, 3, 0, 1, "open", true);
    let seen = consume(&p);
    assert_eq!(p.aborted_transactions(0, i64::MAX).len(), 4);
    assert!(seen.0.iter().all(|v| v.starts_with('c')), "{seen:?}");
    assert_eq!(seen.0.len(), 8);
    p.write_producer_snapshot().unwrap();
    crate::log::lock_log(&log).flush().unwrap();
    seen
}

fn small_segments() -> LogConfig {
    LogConfig {
        segment_bytes: 300,
        ..LogConfig::default()
    }
}

fn reopen(dir: &Path, config: &LogConfig, recover: bool) -> (Arc<Partition>, SharedLog) {
    let mut log = open_log(dir, config.clone(), recover);
    let states = partition::load_producer_state(&mut log, 1_700_000_000_000, i64::MAX);
    let hw = log.log_end_offset();
    let log: SharedLog = Arc::new(Mutex::new(log));
    let p = Arc::new(Partition::new(
        "t",
        0,
        Arc::clone(&log),
        states,
        Some(hw),
        super::tests::rules(),
    ));
    p.become_leader(1, &[], &[], 0).unwrap();
    (p, log)
}

fn txn_index_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".txnindex"))
        .collect();
    names.sort();
    names
}

#[test]
fn the_txnindex_survives_a_clean_reopen_and_is_rebuilt_by_recovery() {
    let dir = tempfile::tempdir().unwrap();
    let config = small_segments();
    let seen = write_transactions(dir.path(), &config);
    let files = txn_index_files(dir.path());
    assert!(files.len() >= 2, "aborts in several segments: {files:?}");
    // A clean reopen reads the files (and the snapshot keeps the open transaction).
    let (p, _) = reopen(dir.path(), &config, false);
    assert_eq!(consume(&p), seen);
    assert_eq!(
        p.producer_views()[2].current_txn_start_offset,
        p.offsets().last_stable
    );
    drop(p);
    // Unclean: the files are gone and the last segment ends with a torn batch. Recovery cuts
    // it and the partition layer rebuilds every entry from the batches.
    for f in &files {
        std::fs::remove_file(dir.path().join(f)).unwrap();
    }
    let last = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".log"))
        .max()
        .unwrap();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(dir.path().join(&last))
        .unwrap();
    std::io::Write::write_all(&mut f, &[0, 0, 0, 0, 0, 0, 0, 99, 0, 0, 1, 0, 7]).unwrap();
    drop(f);
    std::fs::remove_file(dir.path().join("recovery-point-checkpoint")).ok();
    let (p, log) = reopen(dir.path(), &config, true);
    assert!(crate::log::lock_log(&log).open_report().truncated_bytes > 0);
    assert_eq!(txn_index_files(dir.path()), files);
    assert_eq!(consume(&p), seen);
    assert!(!dir.path().join("txn-index-rebuild-checkpoint").exists());
    // A damaged file on a clean open is rebuilt too.
    drop((p, log));
    std::fs::write(dir.path().join(&files[0]), [0u8; 5]).unwrap();
    let (p, _) = reopen(dir.path(), &config, false);
    assert_eq!(consume(&p), seen);
    assert_eq!(
        std::fs::metadata(dir.path().join(&files[0])).unwrap().len() % 34,
        0
    );
}

#[test]
fn compaction_keeps_markers_drops_aborted_records_and_stops_at_the_lso() {
    let dir = tempfile::tempdir().unwrap();
    let config = LogConfig {
        compact: true,
        delete: false,
        min_cleanable_dirty_ratio: 0.0,
        ..small_segments()
    };
    let (committed, _) = write_transactions(dir.path(), &config);
    let (p, log) = reopen(dir.path(), &config, false);
    let lso = p.offsets().last_stable;
    let markers_before = count_markers(&p);
    // Roll past the open transaction so that segments beyond the LSO are sealed.
    for i in 0..6 {
        let (records, s) = producer_batch(-1, -1, 3, &format!("tail{i}"), false);
        p.append_as_leader(records, &[s], Acks::Leader, 0).unwrap();
    }
    let stats = p
        .clean(&CleanerLimits::default(), 1_700_000_000_000)
        .unwrap()
        .unwrap();
    assert!(stats.records_removed > 0);
    // Nothing at or past the LSO was rewritten: the cleaner stopped below it.
    let cleaned_end = crate::log::lock_log(&log).first_dirty_offset();
    assert!(
        cleaned_end > 0 && cleaned_end <= lso,
        "{cleaned_end} vs LSO {lso}"
    );
    assert_eq!(count_markers(&p), markers_before, "every marker stays");
    let o = p.offsets();
    let bytes = p.read(o.log_start, usize::MAX >> 1, cleaned_end).unwrap();
    let left: Vec<String> = RecordBatches::new(bytes)
        .flatten()
        .filter(|b| b.last_offset() < cleaned_end && !b.is_control())
        .flat_map(|b| values(&b))
        .collect();
    assert!(
        left.iter().all(|v| !v.starts_with('x')),
        "aborted records dropped: {left:?}"
    );
    // Committed records are compacted as any other (one latest per key at most).
    assert!(left.iter().all(|v| committed.contains(v)), "{left:?}");
    assert!(!left.is_empty() && left.len() <= 2, "{left:?}");
    // And a read_committed consumer still sees only committed records.
    let (after, _) = consume(&p);
    assert!(after.iter().all(|v| !v.starts_with('x')), "{after:?}");
}

fn count_markers(p: &Partition) -> usize {
    let o = p.offsets();
    let bytes = p.read(o.log_start, usize::MAX >> 1, o.log_end).unwrap();
    RecordBatches::new(bytes)
        .flatten()
        .filter(|b| b.is_control())
        .count()
}
