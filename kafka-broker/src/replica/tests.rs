//! Tests of the partition layer on real log files, with delayed operations on virtual time
//! (tokio's paused clock: a deadline passes only when every task waits).
#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::BytesMut;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::record::{RecordBatchBuilder, RecordBatches};
use tokio::time::Instant;

use super::delayed::{self, Acks};
use super::producer_state::ProducerStates;
use super::*;
use crate::log::SharedLog;
use crate::log::{Log, LogConfig};

fn batch(n: usize, tag: &str) -> (BytesMut, BatchSummary) {
    let mut b = RecordBatchBuilder::new();
    for i in 0..n {
        let v = format!("{tag}-{i}");
        b.append(1_000 + i as i64, Some(b"k"), Some(v.as_bytes()), &[])
            .unwrap();
    }
    let summary = BatchSummary {
        producer_id: -1,
        producer_epoch: -1,
        base_sequence: -1,
        records: n as i32,
        max_timestamp: 1_000 + n as i64,
        transactional: false,
    };
    (b.build_mut().unwrap(), summary)
}

fn open_log(dir: &Path, config: LogConfig) -> SharedLog {
    Arc::new(Mutex::new(Log::open(dir, config, false).unwrap()))
}

/// A partition over a log in `dir/<name>`, led here with no followers.
fn leader(dir: &Path, name: &str, config: LogConfig) -> Arc<Partition> {
    let p = Arc::new(Partition::new(
        name,
        0,
        open_log(&dir.join(name), config),
        ProducerStates::default(),
        None,
        rules(),
    ));
    p.become_leader(0, &[], &[], 0).unwrap();
    p
}

fn append(p: &Arc<Partition>, n: usize, tag: &str) -> (Appended, PendingAck) {
    append_with(p, n, tag, Acks::Leader)
}

/// An acks=all append.
fn append_all(p: &Arc<Partition>, n: usize, tag: &str) -> (Appended, PendingAck) {
    append_with(p, n, tag, Acks::All)
}

fn append_with(p: &Arc<Partition>, n: usize, tag: &str, acks: Acks) -> (Appended, PendingAck) {
    let (records, summary) = batch(n, tag);
    p.append_as_leader(records, &[summary], acks, 5_000)
        .unwrap()
}

/// The produce rules of a topic with the broker's defaults.
pub(super) fn rules() -> crate::config::topic::ProduceRules {
    crate::config::topic::TopicConfig::defaults(&crate::config::BrokerConfig::default())
        .produce_rules()
}

/// Those rules with `min.insync.replicas` set to `n`.
fn min_insync(n: usize) -> crate::config::topic::ProduceRules {
    crate::config::topic::ProduceRules {
        min_insync_replicas: n,
        ..rules()
    }
}

fn all_bytes(p: &Partition) -> bytes::Bytes {
    let o = p.offsets();
    p.read(o.log_start, usize::MAX >> 1, o.log_end).unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_fetch_wakes_only_for_the_partitions_it_names() {
    let dir = tempfile::tempdir().unwrap();
    let busy = leader(dir.path(), "busy", LogConfig::default());
    let idle: Vec<Arc<Partition>> = (0..100)
        .map(|i| leader(dir.path(), &format!("idle{i}"), LogConfig::default()))
        .collect();
    let max_wait = Duration::from_secs(30);
    let started = Instant::now();
    // 100 long polls, each on one idle partition, counting how often they look at their data.
    let attempts: Arc<Vec<AtomicUsize>> = Arc::new((0..100).map(|_| AtomicUsize::new(0)).collect());
    let mut sleepers = Vec::new();
    for (i, p) in idle.iter().enumerate() {
        let (p, attempts) = (Arc::clone(p), Arc::clone(&attempts));
        sleepers.push(tokio::spawn(async move {
            let watched = [Arc::clone(&p)];
            delayed::fetch_until(
                &watched,
                delayed::Watch::Visible,
                started + max_wait,
                || {
                    attempts[i].fetch_add(1, Ordering::SeqCst);
                    ((), p.high_watermark() > 0)
                },
            )
            .await;
            Instant::now()
        }));
    }
    // One long poll on the busy partition, wanting 3 records.
    let woken = Arc::new(AtomicUsize::new(0));
    let fetcher = {
        let (p, woken) = (Arc::clone(&busy), Arc::clone(&woken));
        tokio::spawn(async move {
            let watched = [Arc::clone(&p)];
            delayed::fetch_until(
                &watched,
                delayed::Watch::Visible,
                started + max_wait,
                || {
                    woken.fetch_add(1, Ordering::SeqCst);
                    let hw = p.high_watermark();
                    (hw, hw >= 3)
                },
            )
            .await
        })
    };
    // Let every poll register and make its first attempt.
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert!(attempts.iter().all(|a| a.load(Ordering::SeqCst) == 1));
    assert_eq!(woken.load(Ordering::SeqCst), 1);
    for i in 0..3 {
        let (_, pending) = append(&busy, 1, &format!("r{i}"));
        delayed::complete_append(pending, Instant::now() + max_wait)
            .await
            .unwrap();
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
    }
    // The busy partition's poll woke once per append and finished without waiting out its
    // time; no idle poll looked again.
    assert_eq!(fetcher.await.unwrap(), 3);
    assert_eq!(woken.load(Ordering::SeqCst), 4);
    assert_eq!(Instant::now(), started, "no virtual time passed");
    assert!(
        attempts.iter().all(|a| a.load(Ordering::SeqCst) == 1),
        "appends to another partition woke idle fetches"
    );
    // The idle polls expire at their deadline, each once, with one last look.
    for s in sleepers {
        assert_eq!(s.await.unwrap(), started + max_wait);
    }
    assert!(attempts.iter().all(|a| a.load(Ordering::SeqCst) == 2));
}

#[tokio::test(start_paused = true)]
async fn a_fetch_with_nothing_hosted_answers_at_once() {
    let answer = delayed::fetch_until(
        &[],
        delayed::Watch::Visible,
        Instant::now() + Duration::from_secs(10),
        || (7, false),
    )
    .await;
    assert_eq!(answer, 7);
}

#[tokio::test(start_paused = true)]
async fn acks_all_waits_for_the_in_sync_followers_or_expires_once() {
    let dir = tempfile::tempdir().unwrap();
    let p = leader(dir.path(), "t", LogConfig::default());
    p.become_leader(1, &[2, 3], &[2, 3], 0).unwrap();
    let (a, pending) = append_all(&p, 5, "a");
    assert_eq!((a.base_offset, a.last_offset), (0, 4));
    assert_eq!(p.high_watermark(), 0, "followers have not fetched");
    let started = Instant::now();
    let waiter = tokio::spawn(delayed::complete_append(
        pending,
        started + Duration::from_secs(30),
    ));
    tokio::task::yield_now().await;
    p.follower_fetched(2, -1, 5, -1, 0).unwrap();
    assert_eq!(p.high_watermark(), 0, "one follower is not enough");
    tokio::task::yield_now().await;
    assert!(!waiter.is_finished());
    assert_eq!(
        p.follower_fetched(3, -1, 5, -1, 0),
        Ok(None),
        "in sync already"
    );
    assert_eq!(p.high_watermark(), 5);
    waiter.await.unwrap().unwrap();
    assert_eq!(
        Instant::now(),
        started,
        "completed without waiting out its time"
    );
    assert_eq!(p.high_watermark(), 5);

    // Nobody fetches: the produce expires at its deadline with REQUEST_TIMED_OUT.
    let (_, pending) = append_all(&p, 1, "b");
    let deadline = Instant::now() + Duration::from_millis(1_500);
    let err = delayed::complete_append(pending, deadline)
        .await
        .unwrap_err();
    assert_eq!(err.error_code(), ErrorCode::REQUEST_TIMED_OUT);
    assert_eq!(Instant::now(), deadline);

    // acks=1 does not wait for followers.
    let (_, pending) = append(&p, 1, "c");
    let at = Instant::now();
    delayed::complete_append(pending, at + Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(Instant::now(), at);

    // A follower leaving the in-sync set completes what waited for it.
    let (_, pending) = append_all(&p, 1, "d");
    let waiter = tokio::spawn(delayed::complete_append(
        pending,
        Instant::now() + Duration::from_secs(30),
    ));
    tokio::task::yield_now().await;
    p.follower_fetched(2, -1, 8, -1, 0).unwrap();
    tokio::task::yield_now().await;
    assert!(!waiter.is_finished());
    p.set_in_sync(3, false);
    waiter.await.unwrap().unwrap();
    assert_eq!(p.high_watermark(), 8);

    // Losing the leadership fails a waiting produce at once.
    let (_, pending) = append_all(&p, 1, "e");
    let waiter = tokio::spawn(delayed::complete_append(
        pending,
        Instant::now() + Duration::from_secs(30),
    ));
    tokio::task::yield_now().await;
    let at = Instant::now();
    p.become_follower(2).unwrap();
    let err = waiter.await.unwrap().unwrap_err();
    assert_eq!(err.error_code(), ErrorCode::NOT_LEADER_OR_FOLLOWER);
    assert_eq!(Instant::now(), at);
    // And a follower takes no client appends.
    let (records, summary) = batch(1, "f");
    let err = p
        .append_as_leader(records, &[summary], Acks::Leader, 0)
        .unwrap_err();
    assert_eq!(err.error_code(), ErrorCode::NOT_LEADER_OR_FOLLOWER);
}

#[tokio::test(start_paused = true)]
async fn in_durable_mode_the_high_watermark_waits_for_the_fsync() {
    let dir = tempfile::tempdir().unwrap();
    let durable = LogConfig {
        flush_interval_messages: Some(1),
        ..LogConfig::default()
    };
    let p = leader(dir.path(), "d", durable);
    let (_, pending) = append(&p, 4, "a");
    assert!(pending.sync.is_some());
    assert_eq!(p.high_watermark(), 0, "visible before it is on disk");
    delayed::complete_append(pending, Instant::now())
        .await
        .unwrap();
    assert_eq!(p.high_watermark(), 4);

    // Not durable: visible at once, nothing to sync.
    let q = leader(dir.path(), "n", LogConfig::default());
    let (_, pending) = append(&q, 4, "a");
    assert!(pending.sync.is_none());
    assert_eq!(q.high_watermark(), 4);
}

#[test]
fn leader_epochs_are_persisted_stamped_and_fenced() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("e");
    {
        let p = leader(dir.path(), "e", LogConfig::default());
        assert_eq!(p.leader_epoch(), 0);
        append(&p, 2, "a");
        p.become_leader(3, &[], &[], 0).unwrap();
        append(&p, 2, "b");
        let epochs: Vec<i32> = RecordBatches::new(all_bytes(&p))
            .map(|b| b.unwrap().partition_leader_epoch())
            .collect();
        assert_eq!(epochs, [0, 3]);
        assert_eq!(p.check_leader_epoch(-1), Ok(()));
        assert_eq!(p.check_leader_epoch(3), Ok(()));
        assert_eq!(p.check_leader_epoch(2), Err(ErrorCode::FENCED_LEADER_EPOCH));
        assert_eq!(
            p.check_leader_epoch(4),
            Err(ErrorCode::UNKNOWN_LEADER_EPOCH)
        );
        let err = p.become_leader(2, &[], &[], 0).unwrap_err();
        assert_eq!(err.error_code(), ErrorCode::FENCED_LEADER_EPOCH);
        // OffsetForLeaderEpoch reads the cache: epoch 0 ended where 3 began.
        assert_eq!(p.end_offset_for_epoch(0), (0, 2));
        assert_eq!(p.end_offset_for_epoch(3), (3, 4));
        // A new epoch with no records yet is known at once (started at the log end).
        p.become_leader(5, &[], &[], 0).unwrap();
        assert_eq!(p.end_offset_for_epoch(3), (3, 4));
        assert_eq!(p.end_offset_for_epoch(5), (5, 4));
    }
    // Reopened (a restart): the epoch is the persisted one.
    let p = Partition::new(
        "e",
        0,
        open_log(&path, LogConfig::default()),
        ProducerStates::default(),
        None,
        rules(),
    );
    assert_eq!(p.leader_epoch(), 5);
    let text = std::fs::read_to_string(path.join("leader-epoch-checkpoint")).unwrap();
    assert_eq!(text, "0\n3\n0 0\n3 2\n5 4\n");
}

#[test]
fn a_follower_keeps_the_leaders_offsets_epochs_and_bytes_and_truncates() {
    let dir = tempfile::tempdir().unwrap();
    let l = leader(dir.path(), "lead", LogConfig::default());
    append(&l, 3, "a");
    l.become_leader(2, &[], &[], 0).unwrap();
    append(&l, 2, "b");
    append(&l, 4, "c");
    let leader_bytes = all_bytes(&l);

    let f = Arc::new(Partition::new(
        "follow",
        0,
        open_log(&dir.path().join("follow"), LogConfig::default()),
        ProducerStates::default(),
        None,
        rules(),
    ));
    f.become_follower(2).unwrap();
    let info = f
        .append_as_follower(BytesMut::from(&leader_bytes[..]), 9_999)
        .unwrap();
    assert_eq!((info.base_offset, info.last_offset), (0, 8));
    assert_eq!(all_bytes(&f), leader_bytes, "the follower's log differs");
    let leader_dir = dir.path().join("lead");
    let follower_dir = dir.path().join("follow");
    for file in ["00000000000000000000.log", "leader-epoch-checkpoint"] {
        assert_eq!(
            std::fs::read(leader_dir.join(file)).unwrap(),
            std::fs::read(follower_dir.join(file)).unwrap(),
            "{file} differs"
        );
    }
    assert_eq!(f.end_offset_for_epoch(0), (0, 3));
    // The high watermark is the leader's, not the follower's log end.
    assert_eq!(f.high_watermark(), 0);
    f.set_high_watermark_from_leader(5);
    assert_eq!(f.high_watermark(), 5);
    f.set_high_watermark_from_leader(50);
    assert_eq!(f.high_watermark(), 9, "capped at the log end");

    // The same batches again overlap the log: refused, log unchanged.
    let err = f
        .append_as_follower(BytesMut::from(&leader_bytes[..]), 9_999)
        .unwrap_err();
    assert_eq!(err.error_code(), ErrorCode::OFFSET_OUT_OF_RANGE);
    assert_eq!(f.offsets().log_end, 9);

    // Truncate to the start of epoch 2 (offset 3) and fetch the rest again.
    f.truncate_to(3, 0).unwrap();
    let o = f.offsets();
    assert_eq!((o.log_end, o.high_watermark), (3, 3));
    assert_eq!(
        f.end_offset_for_epoch(2),
        (-1, -1),
        "epoch 2 went with its records"
    );
    let tail = l.read(3, usize::MAX >> 1, 9).unwrap();
    f.append_as_follower(BytesMut::from(&tail[..]), 9_999)
        .unwrap();
    assert_eq!(all_bytes(&f), leader_bytes);
    assert_eq!(f.end_offset_for_epoch(0), (0, 3));
    assert_eq!(f.end_offset_for_epoch(2), (2, 9));
}

#[test]
fn the_follower_side_keeps_idempotent_producer_state() {
    let dir = tempfile::tempdir().unwrap();
    let l = leader(dir.path(), "lead", LogConfig::default());
    let mut b = RecordBatchBuilder::new().producer(77, 0, 0);
    for i in 0..3 {
        b.append(i, None, Some(b"v"), &[]).unwrap();
    }
    let summary = BatchSummary {
        producer_id: 77,
        producer_epoch: 0,
        base_sequence: 0,
        records: 3,
        max_timestamp: 2,
        transactional: false,
    };
    l.append_as_leader(b.build_mut().unwrap(), &[summary], Acks::Leader, 0)
        .unwrap();
    let f = Arc::new(Partition::new(
        "follow",
        0,
        open_log(&dir.path().join("follow"), LogConfig::default()),
        ProducerStates::default(),
        None,
        rules(),
    ));
    f.append_as_follower(BytesMut::from(&all_bytes(&l)[..]), 0)
        .unwrap();
    // Promoted, the follower recognises the producer's retry as a duplicate.
    f.become_leader(1, &[], &[], 0).unwrap();
    let mut retry = RecordBatchBuilder::new().producer(77, 0, 0);
    for i in 0..3 {
        retry.append(i, None, Some(b"v"), &[]).unwrap();
    }
    let (a, _) = f
        .append_as_leader(retry.build_mut().unwrap(), &[summary], Acks::Leader, 0)
        .unwrap();
    assert!(a.duplicate);
    assert_eq!((a.base_offset, a.last_offset), (0, 2));
    assert_eq!(f.offsets().log_end, 3);
}

#[test]
fn the_manager_checkpoints_high_watermarks_and_a_restarted_follower_starts_from_them() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_path_buf();
    let manager = || {
        ReplicaManager::open(
            data.clone(),
            |_| LogConfig::default(),
            crate::log::FileCache::new(64),
            ReplicaSettings {
                producer_id_expiration_ms: i64::MAX,
                producer_id_expiration_check_interval_ms: i64::MAX,
                cleaner_dedupe_buffer_size: 1 << 20,
            },
            Roles::LeadOnHost,
            crate::clock::Clock::manual(0),
        )
        .unwrap()
    };
    let config =
        crate::config::topic::TopicConfig::defaults(&crate::config::BrokerConfig::default());
    {
        let m = manager();
        let p = m.host("t", 0, &config).unwrap();
        append(&p, 6, "a");
        p.become_leader(1, &[9], &[9], 0).unwrap();
        append(&p, 4, "b");
        p.follower_fetched(9, -1, 6, -1, 0).unwrap();
        assert_eq!(p.high_watermark(), 6);
        m.checkpoint_high_watermarks().unwrap();
        assert_eq!(
            std::fs::read_to_string(data.join(checkpoint::HIGH_WATERMARK_FILE)).unwrap(),
            "0\n1\nt 0 6\n"
        );
        drop(p);
        m.close();
    }
    // Restarted as a follower: the checkpointed value, not the log end (10).
    let m = manager();
    let hw = m
        .checkpointed
        .lock()
        .unwrap()
        .remove(&crate::log::TopicPartition::new("t", 0));
    drop(m);
    let f = Partition::new(
        "t",
        0,
        open_log(&data.join("t-0"), LogConfig::default()),
        ProducerStates::default(),
        hw,
        rules(),
    );
    f.become_follower(2).unwrap();
    let o = f.offsets();
    assert_eq!((o.log_end, o.high_watermark), (10, 6));
    drop(f);
    // Without a checkpoint a follower starts from its log start.
    let g = Partition::new(
        "t",
        0,
        open_log(&data.join("t-0"), LogConfig::default()),
        ProducerStates::default(),
        None,
        rules(),
    );
    assert_eq!(g.high_watermark(), 0);
}

fn lead(p: &Partition, epoch: i32, partition_epoch: i32, isr: &[i32], now_ms: i64) {
    p.lead(
        &Leadership {
            leader_epoch: epoch,
            partition_epoch,
            local_id: 1,
            followers: &[2, 3],
            isr,
        },
        now_ms,
    )
    .unwrap();
}

#[tokio::test(start_paused = true)]
async fn the_isr_shrinks_for_lagging_followers_and_grows_back_when_they_catch_up() {
    const LAG: i64 = 30_000;
    let dir = tempfile::tempdir().unwrap();
    let p = leader(dir.path(), "t", LogConfig::default());
    lead(&p, 1, 0, &[1, 2, 3], 1_000);
    assert_eq!(p.isr(), (vec![1, 2, 3], 0));
    append(&p, 5, "a");
    assert_eq!(p.follower_fetched(2, -1, 5, -1, 1_500), Ok(None));
    // Follower 3 never fetches: within the lag it stays, after it it is asked out; follower 2
    // has the log end and stays.
    assert_eq!(p.isr_shrink(1_000 + LAG, LAG), None);
    let shrink = p.isr_shrink(1_001 + LAG, LAG).unwrap();
    assert_eq!(
        shrink,
        IsrChange {
            leader_epoch: 1,
            partition_epoch: 0,
            isr: vec![1, 2],
        }
    );
    assert_eq!(p.isr_shrink(1_002 + LAG, LAG), None, "one change at a time");
    // Until the controller commits the shrink, follower 3 still holds the high watermark back
    // and counts for min.insync.replicas.
    assert_eq!(p.high_watermark(), 0);
    assert_eq!(p.in_sync_count(), 3);
    p.set_config(LogConfig::default(), min_insync(3)).unwrap();
    p.check_min_insync().unwrap();
    let (_, pending) = append_all(&p, 1, "b");
    let waiter = tokio::spawn(delayed::complete_append(
        pending,
        Instant::now() + Duration::from_secs(30),
    ));
    tokio::task::yield_now().await;
    p.follower_fetched(2, -1, 6, -1, 32_000).unwrap();
    tokio::task::yield_now().await;
    assert!(!waiter.is_finished(), "follower 3 is still in the ISR");
    p.isr_changed(1, 1, &[1, 2]);
    assert_eq!(p.isr(), (vec![1, 2], 1));
    assert_eq!(p.high_watermark(), 6);
    // Replicated, but by fewer than min.insync.replicas once the ISR shrank.
    let err = waiter.await.unwrap().unwrap_err();
    assert_eq!(
        err.error_code(),
        ErrorCode::NOT_ENOUGH_REPLICAS_AFTER_APPEND
    );
    // Before an append the committed ISR is checked.
    let err = p.check_min_insync().unwrap_err();
    assert_eq!(err.error_code(), ErrorCode::NOT_ENOUGH_REPLICAS);
    let (records, summary) = batch(1, "refused");
    let err = p
        .append_as_leader(records, &[summary], Acks::All, 35_000)
        .unwrap_err();
    assert_eq!(
        err.error_code(),
        ErrorCode::NOT_ENOUGH_REPLICAS,
        "nothing written"
    );
    assert_eq!(p.log_end_offset(), 6);
    p.set_config(LogConfig::default(), min_insync(2)).unwrap();
    p.check_min_insync().unwrap();

    // Follower 3 comes back: behind the high watermark it stays out; at it, it is asked in,
    // and counts for the high watermark at once (the maximal ISR).
    assert_eq!(p.follower_fetched(3, -1, 2, -1, 40_000), Ok(None));
    let grow = p.follower_fetched(3, -1, 6, -1, 40_100).unwrap().unwrap();
    assert_eq!(grow.isr, vec![1, 2, 3]);
    assert_eq!(grow.partition_epoch, 1);
    assert_eq!(p.maximal_isr_count(), 3);
    assert_eq!(p.in_sync_count(), 2);
    // Refused: it no longer counts, and is asked again only after a pause.
    p.isr_change_failed(40_200);
    assert_eq!(p.maximal_isr_count(), 2);
    assert_eq!(p.follower_fetched(3, -1, 6, -1, 40_300), Ok(None));
    let grow = p
        .follower_fetched(3, -1, 6, -1, 40_200 + super::isr::ISR_CHANGE_RETRY_MS)
        .unwrap()
        .unwrap();
    assert_eq!(grow.isr, vec![1, 2, 3]);
    p.isr_changed(1, 2, &[1, 2, 3]);
    assert_eq!(p.isr(), (vec![1, 2, 3], 2));

    // Metadata older than the AlterPartition answer is not taken; newer is, and the
    // followers keep what they fetched.
    lead(&p, 1, 1, &[1, 2], 41_000);
    assert_eq!(p.isr(), (vec![1, 2, 3], 2));
    lead(&p, 1, 3, &[1, 3], 41_000);
    assert_eq!(p.isr(), (vec![1, 3], 3));
    let f2 = p
        .followers()
        .into_iter()
        .find(|f| f.replica_id == 2)
        .unwrap();
    assert_eq!(f2.log_end_offset, 6);

    // A new leader epoch: a follower joins only with everything written since it started,
    // even where the high watermark is further back (a tail the last epoch did not commit).
    append(&p, 1, "c");
    assert_eq!((p.high_watermark(), p.log_end_offset()), (6, 7));
    lead(&p, 2, 4, &[1, 3], 50_000);
    assert_eq!(
        p.follower_fetched(2, -1, 6, -1, 50_100),
        Ok(None),
        "before the epoch's start"
    );
    assert_eq!(p.follower_fetched(3, -1, 7, -1, 50_100), Ok(None));
    assert_eq!(p.high_watermark(), 7);
    let grow = p.follower_fetched(2, -1, 7, -1, 50_200).unwrap().unwrap();
    assert_eq!((grow.leader_epoch, grow.partition_epoch), (2, 4));
    assert_eq!(grow.isr, vec![1, 2, 3]);
}

#[test]
fn a_follower_that_keeps_up_with_a_busy_leader_stays_in_sync() {
    const LAG: i64 = 10_000;
    let dir = tempfile::tempdir().unwrap();
    let p = leader(dir.path(), "t", LogConfig::default());
    lead(&p, 1, 0, &[1, 2, 3], 0);
    // The leader takes a batch before every fetch, so no fetch ever reaches its log end;
    // each fetch reaches the log end of the previous one, which counts as caught up then.
    let mut now = 0;
    for _ in 0..30 {
        append(&p, 1, "x");
        let end = p.log_end_offset();
        p.follower_fetched(2, -1, end - 1, -1, now).unwrap();
        p.follower_fetched(3, -1, end - 1, -1, now).unwrap();
        now += 1_000;
    }
    assert_eq!(p.isr_shrink(now, LAG), None);
    // Follower 3 stops fetching: it is out once the lag passes.
    for _ in 0..11 {
        append(&p, 1, "y");
        let end = p.log_end_offset();
        p.follower_fetched(2, -1, end - 1, -1, now).unwrap();
        now += 1_000;
    }
    assert_eq!(p.isr_shrink(now, LAG).unwrap().isr, vec![1, 2]);
}
