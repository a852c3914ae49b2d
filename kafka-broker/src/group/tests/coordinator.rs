//! The group coordinator in its shell, with record logs the tests control: a commit counts
//! only once its records are written and acknowledged, never goes back to an older value,
//! and a transactional commit is undone when its batch is not written.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use super::*;
use crate::clock::Clock;
use crate::coordinator::{AckWait, KeyValue, PartitionOwner, Producer, RecordLog};

/// A coordinator that has loaded no partition yet.
fn unloaded(log: impl RecordLog + 'static) -> GroupCoordinator {
    GroupCoordinator::with_ids(
        GroupConfig::default(),
        Clock::manual(1_700_000_000_000),
        Arc::new(log),
        MemberIdGen::new(1),
    )
}

/// A coordinator that has loaded every (empty) `__consumer_offsets` partition.
fn coordinator(log: impl RecordLog + 'static) -> GroupCoordinator {
    let c = unloaded(log);
    for p in 0..c.config().offsets_topic_num_partitions {
        PartitionOwner::begin_load(&c, p);
        PartitionOwner::load(&c, p, 0, Vec::new());
    }
    c
}

/// A log that refuses records while `fail` is set, and counts what it took.
#[derive(Debug, Default)]
struct FlakyLog {
    fail: Arc<AtomicBool>,
    taken: Arc<Mutex<Vec<KeyValue>>>,
}

impl RecordLog for FlakyLog {
    fn append(
        &self,
        _partition: i32,
        records: Vec<KeyValue>,
        _producer: Option<Producer>,
    ) -> Result<AckWait, ErrorCode> {
        if self.fail.load(Ordering::SeqCst) {
            return Err(ErrorCode::NOT_COORDINATOR);
        }
        crate::sync::lock(&self.taken).extend(records);
        Ok(AckWait::done())
    }
}

fn commit(offsets: &[(i32, i64)]) -> CommitRequest {
    CommitRequest {
        group_id: "g".into(),
        generation_id: -1,
        member_id: String::new(),
        group_instance_id: None,
        retention_ms: None,
        partitions: offsets
            .iter()
            .map(|&(partition, offset)| CommitPartition {
                topic: "t".into(),
                partition,
                offset,
                leader_epoch: -1,
                metadata: None,
                commit_timestamp: None,
            })
            .collect(),
    }
}

fn fetched(c: &GroupCoordinator) -> Vec<i64> {
    let asked = [("t".to_owned(), vec![0, 1])];
    c.fetch_offsets("g", Some(&asked), false)
        .into_iter()
        .map(|f| f.offset)
        .collect()
}

#[test]
fn a_commit_whose_records_cannot_be_written_fails_and_changes_nothing() {
    let log = FlakyLog::default();
    let (fail, taken) = (log.fail.clone(), log.taken.clone());
    let c = coordinator(log);
    assert_eq!(
        futures::executor::block_on(c.commit_offsets(&commit(&[(0, 10)]))),
        vec![ErrorCode::NONE]
    );
    assert_eq!(fetched(&c), vec![10, -1]);
    fail.store(true, Ordering::SeqCst);
    let codes = futures::executor::block_on(c.commit_offsets(&commit(&[(0, 20), (1, 5)])));
    assert_eq!(codes, vec![ErrorCode::NOT_COORDINATOR; 2]);
    // The earlier offset stays, the new partition has none: memory matches the log.
    assert_eq!(fetched(&c), vec![10, -1]);
    fail.store(false, Ordering::SeqCst);
    assert_eq!(
        futures::executor::block_on(c.commit_offsets(&commit(&[(0, 20), (1, 5)]))),
        vec![ErrorCode::NONE; 2]
    );
    assert_eq!(fetched(&c), vec![20, 5]);
    let written = crate::sync::lock(&taken).len();
    assert_eq!(
        written, 3,
        "only the successful commits' records were written"
    );
}

type Ack = oneshot::Sender<Result<(), ErrorCode>>;

fn held(acks: &Arc<Mutex<Vec<Ack>>>) -> AckWait {
    let (tx, rx) = oneshot::channel();
    crate::sync::lock(acks).push(tx);
    AckWait::pending(async move { rx.await.unwrap_or(Err(ErrorCode::NOT_COORDINATOR)) })
}

/// A log whose acknowledgements the test gives, one oneshot per append.
#[derive(Debug, Default)]
struct HeldLog {
    acks: Arc<Mutex<Vec<Ack>>>,
}

impl RecordLog for HeldLog {
    fn append(
        &self,
        _partition: i32,
        _records: Vec<KeyValue>,
        _producer: Option<Producer>,
    ) -> Result<AckWait, ErrorCode> {
        Ok(held(&self.acks))
    }
}

#[tokio::test]
async fn pending_commits_are_invisible_until_acknowledged_and_never_go_back() {
    let log = HeldLog::default();
    let acks = log.acks.clone();
    let c = coordinator(log);
    let take = |i: usize| crate::sync::lock(&acks).remove(i);
    // Pending: the commit waits, and the coordinator (not locked meanwhile) shows the
    // value from before.
    let first = tokio::spawn(c.commit_offsets(&commit(&[(0, 5)])));
    tokio::task::yield_now().await;
    assert!(!first.is_finished());
    assert_eq!(fetched(&c), vec![-1, -1]);
    take(0).send(Ok(())).unwrap();
    assert_eq!(first.await.unwrap(), vec![ErrorCode::NONE]);
    assert_eq!(fetched(&c), vec![5, -1]);
    // A failed acknowledgement: answered with its error, the old value stays.
    let failed = tokio::spawn(c.commit_offsets(&commit(&[(0, 9)])));
    tokio::task::yield_now().await;
    take(0).send(Err(ErrorCode::NOT_COORDINATOR)).unwrap();
    assert_eq!(failed.await.unwrap(), vec![ErrorCode::NOT_COORDINATOR]);
    assert_eq!(fetched(&c), vec![5, -1]);
    // Two commits acknowledged in the other order: the later one wins, as in the log.
    let a = tokio::spawn(c.commit_offsets(&commit(&[(0, 6), (1, 1)])));
    tokio::task::yield_now().await;
    let b = tokio::spawn(c.commit_offsets(&commit(&[(0, 7)])));
    tokio::task::yield_now().await;
    let ack_a = take(0);
    take(0).send(Ok(())).unwrap();
    assert_eq!(b.await.unwrap(), vec![ErrorCode::NONE]);
    assert_eq!(fetched(&c), vec![7, -1]);
    ack_a.send(Ok(())).unwrap();
    assert_eq!(a.await.unwrap(), vec![ErrorCode::NONE; 2]);
    assert_eq!(fetched(&c), vec![7, 1]);
}

/// A log for transactional batches: refuses them while `fail` is set, else holds each
/// acknowledgement for the test to give; keeps what it was handed (producer, records).
#[derive(Debug, Default)]
struct TxnLog {
    fail: Arc<AtomicBool>,
    batches: Arc<Mutex<Vec<(Producer, usize)>>>,
    acks: Arc<Mutex<Vec<Ack>>>,
}

impl RecordLog for TxnLog {
    fn append(
        &self,
        _partition: i32,
        records: Vec<KeyValue>,
        producer: Option<Producer>,
    ) -> Result<AckWait, ErrorCode> {
        let Some(producer) = producer else {
            return Ok(AckWait::done());
        };
        if self.fail.load(Ordering::SeqCst) {
            return Err(ErrorCode::NOT_COORDINATOR);
        }
        crate::sync::lock(&self.batches).push((producer, records.len()));
        Ok(held(&self.acks))
    }
}

fn txn_commit(offset: i64) -> TxnCommitRequest {
    TxnCommitRequest {
        transactional_id: "tx".into(),
        group_id: "g".into(),
        producer_id: 7,
        producer_epoch: 3,
        generation_id: -1,
        member_id: String::new(),
        group_instance_id: None,
        partitions: commit(&[(0, offset)]).partitions,
    }
}

fn pending(c: &GroupCoordinator) -> Option<i64> {
    c.inspect(|m| m.pending_txn_offset("g", 7, "t", 0).map(|v| v.offset))
}

#[tokio::test]
async fn a_transactional_commit_is_answered_once_written_and_undone_if_it_is_not() {
    let log = TxnLog::default();
    let (fail, batches, acks) = (log.fail.clone(), log.batches.clone(), log.acks.clone());
    let c = coordinator(log);
    let take = || crate::sync::lock(&acks).remove(0);
    // Pending at once, answered when acknowledged; one batch of the producer.
    let first = tokio::spawn(c.txn_commit_offsets(&txn_commit(10)));
    tokio::task::yield_now().await;
    assert!(!first.is_finished());
    assert_eq!(pending(&c), Some(10));
    take().send(Ok(())).unwrap();
    assert_eq!(first.await.unwrap(), vec![ErrorCode::NONE]);
    assert_eq!(
        *crate::sync::lock(&batches),
        [(Producer { id: 7, epoch: 3 }, 1)]
    );
    // Acknowledgement failed: answered with Kafka's code for the error (the record log
    // reports the partition layer's), the earlier pending offset back.
    let second = tokio::spawn(c.txn_commit_offsets(&txn_commit(20)));
    tokio::task::yield_now().await;
    assert_eq!(pending(&c), Some(20));
    take().send(Err(ErrorCode::NOT_ENOUGH_REPLICAS)).unwrap();
    assert_eq!(
        second.await.unwrap(),
        vec![ErrorCode::COORDINATOR_NOT_AVAILABLE]
    );
    assert_eq!(pending(&c), Some(10));
    // Refused by the log: the same.
    fail.store(true, Ordering::SeqCst);
    let refused = c.txn_commit_offsets(&txn_commit(30)).await;
    assert_eq!(refused, vec![ErrorCode::NOT_COORDINATOR]);
    assert_eq!(pending(&c), Some(10));
    // The marker commits what was written.
    let p = c.partition_for("g");
    assert_eq!(c.complete_transaction(p, 7, true), 1);
    assert_eq!(fetched(&c), vec![10, -1]);
    assert_eq!(pending(&c), None);
}

#[tokio::test]
async fn unloading_answers_waiting_requests_and_orphans_pending_commits() {
    let log = HeldLog::default();
    let acks = log.acks.clone();
    let c = coordinator(log);
    let p = c.partition_for("g");
    let waiting = tokio::spawn(c.commit_offsets(&commit(&[(0, 5)])));
    tokio::task::yield_now().await;
    assert_eq!(c.unload(p), 1);
    // Its waiter is gone: NOT_COORDINATOR, whatever the acknowledgement says later.
    assert_eq!(waiting.await.unwrap(), vec![ErrorCode::NOT_COORDINATOR]);
    crate::sync::lock(&acks).remove(0).send(Ok(())).unwrap();
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    // The acknowledged commit does not bring the unloaded group back.
    assert!(c.inspect(|m| m.group("g").is_none()));
    assert_eq!(fetched(&c), vec![-1, -1]);
}

/// Every request about a group is answered NOT_COORDINATOR unless this coordinator has loaded
/// the group's partition (COORDINATOR_LOAD_IN_PROGRESS while it reads it), and nothing is
/// created for such a group: a broker that restarted and has not caught up with the metadata
/// must not start a second copy of a group another broker coordinates.
#[tokio::test]
async fn groups_of_partitions_not_loaded_here_are_not_served() {
    let c = unloaded(HeldLog::default());
    let p = c.partition_for("g");
    let not_here = |c: &GroupCoordinator, want: ErrorCode| {
        let join = super::join_req("g", "", "client", &[("range", &["t"])]);
        let answer = futures::executor::block_on(c.join(join));
        assert_eq!(answer.error, want);
        let beat = HeartbeatRequest {
            group_id: "g".into(),
            generation_id: 1,
            member_id: "m".into(),
            group_instance_id: None,
        };
        assert_eq!(c.heartbeat(&beat), want);
        let codes = futures::executor::block_on(c.commit_offsets(&commit(&[(0, 5)])));
        assert_eq!(codes, vec![want]);
        let codes = futures::executor::block_on(c.txn_commit_offsets(&txn_commit(5)));
        assert_eq!(codes, vec![want]);
        assert_eq!(c.check_group("g"), Err(want));
        assert_eq!(c.delete_groups(&["g".to_owned()]), vec![want]);
        assert_eq!(c.delete_offsets("g", &[("t".to_owned(), 0)]), Err(want));
        assert!(c.inspect(|m| m.group("g").is_none()), "nothing created");
    };
    not_here(&c, ErrorCode::NOT_COORDINATOR);
    PartitionOwner::begin_load(&c, p);
    not_here(&c, ErrorCode::COORDINATOR_LOAD_IN_PROGRESS);
    PartitionOwner::load(&c, p, 0, Vec::new());
    assert_eq!(c.check_group("g"), Ok(()));
    let mut join = super::join_req("g", "", "client", &[("range", &["t"])]);
    join.require_known_member_id = true;
    assert_eq!(c.join(join).await.error, ErrorCode::MEMBER_ID_REQUIRED);
    // A member joins (the answer waits for the rebalance): the group exists here now.
    let join = super::join_req("g", "", "client", &[("range", &["t"])]);
    let waiting = tokio::spawn(c.join(join));
    tokio::task::yield_now().await;
    assert!(c.inspect(|m| m.group("g").is_some()));
    // Another partition's groups are still not served here.
    let other = (0..100)
        .map(|i| format!("other{i}"))
        .find(|g| c.partition_for(g) != p)
        .unwrap();
    assert_eq!(c.check_group(&other), Err(ErrorCode::NOT_COORDINATOR));
    // Given up, the partition's groups go and are not served any more.
    assert_eq!(c.unload(p), 1);
    assert_eq!(waiting.await.unwrap().error, ErrorCode::NOT_COORDINATOR);
    not_here(&c, ErrorCode::NOT_COORDINATOR);
}
