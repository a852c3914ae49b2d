//! Group membership against our broker: members coming, leaving and crashing, with every
//! record consumed, no partition owned twice in a generation and new owners starting at
//! the committed offsets; static members; patterns; close without a broker.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kafka_consumer::{
    Consumer, ConsumerConfigBuilder, ConsumerError, ListenerFuture, RebalanceListener,
    TopicPartition,
};
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::record::Compression;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::support::*;

/// A broker whose coordinator accepts short sessions.
pub(crate) fn group_broker() -> TestBroker {
    TestBroker::start_with(|c| {
        c.apply("group.min.session.timeout.ms", "500").unwrap();
    })
}

/// Member settings: short session and heartbeats, auto-commit every 100 ms.
pub(crate) fn member_config(
    broker: &TestBroker,
    group: &str,
    strategy: &str,
    name: &str,
) -> ConsumerConfigBuilder {
    broker
        .config()
        .group_id(group)
        .client_id(name)
        .partition_assignment_strategy([strategy])
        .session_timeout(Duration::from_millis(1500))
        .heartbeat_interval(Duration::from_millis(150))
        .max_poll_interval(Duration::from_secs(10))
        .auto_commit_interval(Duration::from_millis(100))
}

/// What one member saw.
#[derive(Default)]
pub(crate) struct Seen {
    /// (generation, the whole assignment) after each rebalance.
    pub(crate) assignments: Vec<(i32, BTreeSet<TopicPartition>)>,
    /// The committed offset each newly assigned partition must start at.
    pub(crate) expected_start: BTreeMap<TopicPartition, i64>,
    pub(crate) records: Vec<(i32, i64)>,
    pub(crate) violations: Vec<String>,
    pub(crate) revoked: Vec<BTreeSet<TopicPartition>>,
    pub(crate) lost: Vec<BTreeSet<TopicPartition>>,
    pub(crate) errors: Vec<String>,
}

/// A listener that records what happens, and awaits the consumer's own `committed` for
/// the partitions it gets (a listener may call the consumer).
pub(crate) struct Recorder {
    pub(crate) name: String,
    pub(crate) seen: Mutex<Seen>,
}

impl Recorder {
    pub(crate) fn new(name: &str) -> Arc<Self> {
        Arc::new(Self {
            name: name.to_owned(),
            seen: Mutex::new(Seen::default()),
        })
    }

    fn record(&self, topic: &str, r: &kafka_consumer::ConsumerRecord) {
        let mut s = self.seen.lock().unwrap();
        let tp = TopicPartition::new(topic, r.partition);
        if let Some(start) = s.expected_start.remove(&tp) {
            if r.offset != start {
                s.violations.push(format!(
                    "{}: first record of {tp} at {}, committed offset was {start}",
                    self.name, r.offset
                ));
            }
        }
        s.records.push((r.partition, r.offset));
    }

    pub(crate) fn records(&self) -> Vec<(i32, i64)> {
        self.seen.lock().unwrap().records.clone()
    }
}

impl RebalanceListener for Recorder {
    fn on_partitions_assigned<'a>(
        &'a self,
        consumer: &'a Consumer,
        partitions: &'a BTreeSet<TopicPartition>,
    ) -> ListenerFuture<'a> {
        Box::pin(async move {
            let generation = consumer.group_metadata().unwrap().generation_id;
            let all = consumer.assignment();
            let list: Vec<TopicPartition> = partitions.iter().cloned().collect();
            let committed = match consumer.committed(&list).await {
                Ok(c) => c,
                Err(e) => {
                    self.seen
                        .lock()
                        .unwrap()
                        .errors
                        .push(format!("committed: {e}"));
                    return;
                }
            };
            let mut s = self.seen.lock().unwrap();
            s.assignments.push((generation, all));
            for (tp, om) in committed {
                s.expected_start.insert(tp, om.map_or(0, |o| o.offset));
            }
        })
    }

    fn on_partitions_revoked<'a>(
        &'a self,
        _consumer: &'a Consumer,
        partitions: &'a BTreeSet<TopicPartition>,
    ) -> ListenerFuture<'a> {
        Box::pin(async move {
            let mut s = self.seen.lock().unwrap();
            s.revoked.push(partitions.clone());
            for tp in partitions {
                s.expected_start.remove(tp);
            }
        })
    }

    fn on_partitions_lost<'a>(
        &'a self,
        _consumer: &'a Consumer,
        partitions: &'a BTreeSet<TopicPartition>,
    ) -> ListenerFuture<'a> {
        Box::pin(async move {
            let mut s = self.seen.lock().unwrap();
            s.lost.push(partitions.clone());
            for tp in partitions {
                s.expected_start.remove(tp);
            }
        })
    }
}

/// A member polling in a task of its own.
pub(crate) struct Running {
    pub(crate) consumer: Arc<Consumer>,
    pub(crate) rec: Arc<Recorder>,
    stop: Arc<AtomicBool>,
    task: JoinHandle<()>,
}

impl Running {
    pub(crate) async fn start(
        config: kafka_consumer::ConsumerConfig,
        topic: &str,
        name: &str,
    ) -> Self {
        let consumer = Arc::new(Consumer::new(config).await.unwrap());
        let rec = Recorder::new(name);
        consumer
            .subscribe_with_listener([topic], rec.clone())
            .unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let task = {
            let (c, rec, stop, topic) = (
                consumer.clone(),
                rec.clone(),
                stop.clone(),
                topic.to_owned(),
            );
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    match c.poll(Duration::from_millis(100)).await {
                        Ok(batch) => {
                            for r in &batch {
                                rec.record(&topic, r);
                            }
                        }
                        Err(e) => {
                            rec.seen.lock().unwrap().errors.push(e.to_string());
                            tokio::time::sleep(Duration::from_millis(50)).await;
                        }
                    }
                }
            })
        };
        Self {
            consumer,
            rec,
            stop,
            task,
        }
    }

    pub(crate) fn assignment(&self) -> BTreeSet<i32> {
        self.consumer
            .assignment()
            .into_iter()
            .map(|tp| tp.partition)
            .collect()
    }

    /// Stops polling and closes (commit, revoke, LeaveGroup).
    pub(crate) async fn close(self) -> Arc<Recorder> {
        self.stop.store(true, Ordering::Relaxed);
        self.task.await.unwrap();
        let consumer = Arc::try_unwrap(self.consumer).unwrap();
        consumer.close(Duration::from_secs(10)).await.unwrap();
        self.rec
    }

    /// Dies: tasks aborted, no commit, no LeaveGroup.
    pub(crate) async fn crash(self) -> Arc<Recorder> {
        self.task.abort();
        let _ = self.task.await;
        drop(self.consumer);
        self.rec
    }
}

pub(crate) async fn wait_until(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Whether the members' assignments are disjoint and cover `0..n`.
pub(crate) fn partitioned(sets: &[BTreeSet<i32>], n: i32) -> bool {
    let total: usize = sets.iter().map(BTreeSet::len).sum();
    let union: BTreeSet<i32> = sets.iter().flatten().copied().collect();
    total == n as usize && union == (0..n).collect()
}

/// Writes `per` records to each of `n` partitions; `next` holds each partition's end.
async fn produce_round(broker: &TestBroker, topic: &str, next: &mut BTreeMap<i32, i64>, per: i64) {
    let conn = broker.connection().await;
    for (p, end) in next.iter_mut() {
        produce(&conn, topic, *p, *end, 1, per, Compression::None).await;
        *end += per;
    }
}

fn all_records(next: &BTreeMap<i32, i64>) -> BTreeSet<(i32, i64)> {
    next.iter()
        .flat_map(|(p, end)| (0..*end).map(move |o| (*p, o)))
        .collect()
}

fn consumed(recs: &[&Arc<Recorder>]) -> BTreeSet<(i32, i64)> {
    recs.iter().flat_map(|r| r.records()).collect()
}

/// 3 members on 6 partitions; one closes, one crashes; the last one ends with everything.
async fn members_come_leave_and_crash(strategy: &str) {
    let broker = group_broker();
    let topic = format!("three-{strategy}");
    let group = format!("g-three-{strategy}");
    broker.create_topic(&topic, 6).await;
    let mut next: BTreeMap<i32, i64> = (0..6).map(|p| (p, 0)).collect();
    let cfg = |name: &str| {
        member_config(&broker, &group, strategy, name)
            .build()
            .unwrap()
    };
    let a = Running::start(cfg("a"), &topic, "a").await;
    let b = Running::start(cfg("b"), &topic, "b").await;
    let c = Running::start(cfg("c"), &topic, "c").await;
    wait_until(
        "3 members with 2 partitions each",
        Duration::from_secs(20),
        || {
            let sets = [a.assignment(), b.assignment(), c.assignment()];
            partitioned(&sets, 6) && sets.iter().all(|s| s.len() == 2)
        },
    )
    .await;
    produce_round(&broker, &topic, &mut next, 40).await;
    let want = all_records(&next);
    wait_until("phase 1 consumed", Duration::from_secs(20), || {
        consumed(&[&a.rec, &b.rec, &c.rec]).is_superset(&want)
    })
    .await;

    // a leaves cleanly: b and c take its partitions from its committed offsets.
    let a_rec = a.close().await;
    wait_until("b and c own everything", Duration::from_secs(20), || {
        partitioned(&[b.assignment(), c.assignment()], 6)
    })
    .await;
    produce_round(&broker, &topic, &mut next, 40).await;
    let want = all_records(&next);
    wait_until("phase 2 consumed", Duration::from_secs(20), || {
        consumed(&[&a_rec, &b.rec, &c.rec]).is_superset(&want)
    })
    .await;

    // c reads a little more, then dies without committing or leaving.
    produce_round(&broker, &topic, &mut next, 10).await;
    let c_parts = c.assignment();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let c_rec = c.crash().await;
    wait_until(
        "b owns everything after c's session",
        Duration::from_secs(20),
        || b.assignment().len() == 6,
    )
    .await;
    produce_round(&broker, &topic, &mut next, 20).await;
    let want = all_records(&next);
    wait_until("phase 3 consumed", Duration::from_secs(20), || {
        consumed(&[&a_rec, &b.rec, &c_rec]).is_superset(&want)
    })
    .await;
    let b_rec = b.close().await;

    // Nobody owned a partition another member owned in the same generation.
    let mut by_generation: BTreeMap<i32, Vec<(&str, &BTreeSet<TopicPartition>)>> = BTreeMap::new();
    let seen: Vec<(&str, std::sync::MutexGuard<'_, Seen>)> = [&a_rec, &b_rec, &c_rec]
        .iter()
        .map(|r| (r.name.as_str(), r.seen.lock().unwrap()))
        .collect();
    for (name, s) in &seen {
        assert!(s.violations.is_empty(), "{name}: {:?}", s.violations);
        assert!(s.errors.is_empty(), "{name}: {:?}", s.errors);
        for (g, set) in &s.assignments {
            by_generation.entry(*g).or_default().push((name, set));
        }
    }
    for (g, owners) in &by_generation {
        for (i, (n1, s1)) in owners.iter().enumerate() {
            for (n2, s2) in &owners[i + 1..] {
                assert!(
                    s1.is_disjoint(s2),
                    "generation {g}: {n1} {s1:?} and {n2} {s2:?} overlap"
                );
            }
        }
    }
    // Joining (maybe in one rebalance), a leaving, c expiring.
    assert!(by_generation.len() >= 3, "generations {by_generation:?}");
    // The crashed member's partitions were re-read from their committed offsets: it had
    // read past them (at-least-once), the others started exactly there.
    let b_seen = &seen[1].1;
    for p in &c_parts {
        assert!(
            b_seen.records.iter().any(|(q, _)| q == p),
            "b never read c's partition {p}"
        );
    }
    drop(seen);
    // b's close committed what it read.
    let check = Consumer::new(broker.config().group_id(&group).build().unwrap())
        .await
        .unwrap();
    let parts: Vec<TopicPartition> = (0..6).map(|p| tp(&topic, p)).collect();
    let committed = check.committed(&parts).await.unwrap();
    for (tp, om) in committed {
        assert_eq!(
            om.map(|o| o.offset),
            next.get(&tp.partition).copied(),
            "{tp}"
        );
    }
    check.close(Duration::from_secs(5)).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eager_members_come_leave_and_crash() {
    members_come_leave_and_crash("range").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cooperative_members_come_leave_and_crash() {
    members_come_leave_and_crash("cooperative-sticky").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn static_member_restarts_without_a_rebalance_and_fences_the_old_one() {
    let broker = group_broker();
    let topic = "static";
    broker.create_topic(topic, 4).await;
    let cfg = |name: &str| {
        member_config(&broker, "g-static", "range", name)
            .group_instance_id(format!("instance-{name}"))
            .build()
            .unwrap()
    };
    let a = Running::start(cfg("a"), topic, "a").await;
    let b = Running::start(cfg("b"), topic, "b").await;
    wait_until("2 static members", Duration::from_secs(20), || {
        let sets = [a.assignment(), b.assignment()];
        partitioned(&sets, 4) && sets.iter().all(|s| s.len() == 2)
    })
    .await;
    let a_parts = a.assignment();
    let b_generation = b.consumer.group_metadata().unwrap().generation_id;
    let a_meta = a.consumer.group_metadata().unwrap();
    assert_eq!(a_meta.group_instance_id.as_deref(), Some("instance-a"));
    // A second incarnation of a (same instance id) while the first still runs.
    let a2 = Running::start(cfg("a"), topic, "a2").await;
    wait_until("a2 takes a's place", Duration::from_secs(20), || {
        a2.assignment() == a_parts
    })
    .await;
    wait_until("a is fenced", Duration::from_secs(10), || {
        a.rec
            .seen
            .lock()
            .unwrap()
            .errors
            .iter()
            .any(|e| e.contains("FENCED_INSTANCE_ID"))
    })
    .await;
    // No rebalance for b.
    assert_eq!(
        b.consumer.group_metadata().unwrap().generation_id,
        b_generation
    );
    {
        let s = b.rec.seen.lock().unwrap();
        assert!(
            s.assignments.iter().all(|(g, _)| *g <= b_generation),
            "{:?}",
            s.assignments
        );
    }
    let e = a.consumer.poll(Duration::ZERO).await.unwrap_err();
    assert_eq!(e.error_code(), Some(ErrorCode::FENCED_INSTANCE_ID));
    assert!(!a.rec.seen.lock().unwrap().lost.is_empty());
    a.crash().await;
    // A static member's close sends no LeaveGroup: b keeps its partitions.
    a2.close().await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(b.assignment().len(), 2);
    assert_eq!(
        b.consumer.group_metadata().unwrap().generation_id,
        b_generation
    );
    b.close().await;
}

#[tokio::test]
async fn a_pattern_picks_up_new_topics() {
    let broker = group_broker();
    broker.create_topic("pat-a", 1).await;
    broker.create_topic("other", 1).await;
    let conn = broker.connection().await;
    produce(&conn, "pat-a", 0, 0, 1, 5, Compression::None).await;
    produce(&conn, "other", 0, 0, 1, 5, Compression::None).await;
    let c = Consumer::new(
        member_config(&broker, "g-pattern", "range", "p")
            .metadata_max_age(Duration::from_millis(300))
            .build()
            .unwrap(),
    )
    .await
    .unwrap();
    c.subscribe_pattern("pat-.*").unwrap();
    assert!(c.assign([tp("pat-a", 0)]).is_err());
    let got = poll_n(&c, 5, Duration::from_secs(20)).await;
    assert!(got.iter().all(|r| &*r.topic == "pat-a"), "{got:?}");
    broker.create_topic("pat-b", 2).await;
    produce(&conn, "pat-b", 1, 0, 1, 7, Compression::None).await;
    let got = poll_n(&c, 7, Duration::from_secs(20)).await;
    assert_eq!(got.len(), 7);
    assert!(got.iter().all(|r| &*r.topic == "pat-b"));
    assert_eq!(
        c.subscription(),
        ["pat-a".to_owned(), "pat-b".to_owned()]
            .into_iter()
            .collect()
    );
    assert_eq!(c.assignment().len(), 3);
    c.unsubscribe().await.unwrap();
    assert!(c.assignment().is_empty());
    assert!(c.subscription().is_empty());
    c.assign([tp("other", 0)]).unwrap();
    assert_eq!(poll_n(&c, 5, Duration::from_secs(10)).await.len(), 5);
    c.close(Duration::from_secs(5)).await.unwrap();
}

#[tokio::test]
async fn a_member_that_stops_polling_leaves_and_loses_its_partitions() {
    let broker = group_broker();
    let topic = "slow";
    broker.create_topic(topic, 2).await;
    let cfg = |name: &str| {
        member_config(&broker, "g-slow", "range", name)
            .max_poll_interval(Duration::from_millis(1500))
            .build()
            .unwrap()
    };
    let rec = Recorder::new("slow");
    let slow = Consumer::new(cfg("slow")).await.unwrap();
    slow.subscribe_with_listener([topic], rec.clone()).unwrap();
    let other = Running::start(cfg("other"), topic, "other").await;
    // `slow` takes part in rebalances only through its polls, so it polls until each member
    // owns one partition (had it joined first and then stopped polling while `other` joined,
    // it would have been dropped for exceeding max.poll.interval.ms before the split).
    let deadline = Instant::now() + Duration::from_secs(20);
    while (slow.assignment().len() != 1 || other.assignment().len() != 1)
        && Instant::now() < deadline
    {
        slow.poll(Duration::from_millis(100)).await.unwrap();
    }
    assert_eq!(other.assignment().len(), 1, "both members");
    assert_eq!(slow.assignment().len(), 1);
    // Busy for longer than max.poll.interval.ms: it leaves, the other takes over.
    wait_until(
        "the other member owns both",
        Duration::from_secs(20),
        || other.assignment().len() == 2,
    )
    .await;
    // The next poll reports the partition lost and rejoins.
    let deadline = Instant::now() + Duration::from_secs(10);
    while rec.seen.lock().unwrap().lost.is_empty() && Instant::now() < deadline {
        slow.poll(Duration::from_millis(100)).await.unwrap();
    }
    assert_eq!(rec.seen.lock().unwrap().lost.len(), 1);
    let deadline = Instant::now() + Duration::from_secs(10);
    while slow.assignment().len() != 1 && Instant::now() < deadline {
        slow.poll(Duration::from_millis(100)).await.unwrap();
    }
    assert_eq!(slow.assignment().len(), 1);
    slow.close(Duration::from_secs(5)).await.unwrap();
    other.close().await;
}

#[tokio::test]
async fn close_returns_in_time_when_the_broker_is_gone() {
    let mut broker = group_broker();
    let topic = "gone";
    broker.create_topic(topic, 1).await;
    let conn = broker.connection().await;
    produce(&conn, topic, 0, 0, 1, 3, Compression::None).await;
    let c = Consumer::new(
        member_config(&broker, "g-gone", "range", "gone")
            .request_timeout(Duration::from_secs(5))
            .build()
            .unwrap(),
    )
    .await
    .unwrap();
    c.subscribe([topic]).unwrap();
    assert_eq!(poll_n(&c, 3, Duration::from_secs(20)).await.len(), 3);
    broker.stop();
    let started = Instant::now();
    let r = c.close(Duration::from_secs(2)).await;
    let took = started.elapsed();
    assert!(took < Duration::from_secs(4), "close took {took:?}");
    // The final commit could not be made.
    assert!(r.is_err());
}

#[tokio::test]
async fn subscribe_and_assign_are_exclusive() {
    let broker = group_broker();
    broker.create_topic("ex", 1).await;
    let c = Consumer::new(broker.config().group_id("g-ex").build().unwrap())
        .await
        .unwrap();
    c.assign([tp("ex", 0)]).unwrap();
    assert!(matches!(c.subscribe(["ex"]), Err(ConsumerError::Misuse(_))));
    c.unassign().unwrap();
    c.subscribe(["ex"]).unwrap();
    assert!(matches!(
        c.assign([tp("ex", 0)]),
        Err(ConsumerError::Misuse(_))
    ));
    assert!(matches!(c.unassign(), Err(ConsumerError::Misuse(_))));
    c.close(Duration::from_secs(5)).await.unwrap();
    let plain = Consumer::new(broker.config().build().unwrap())
        .await
        .unwrap();
    assert!(matches!(
        plain.subscribe(["ex"]),
        Err(ConsumerError::NoGroupId(_))
    ));
    assert!(plain.group_metadata().is_none());
}

/// Seeks and commits from inside the listener (on the polling task): no deadlock.
struct SeekToThree;

impl RebalanceListener for SeekToThree {
    fn on_partitions_assigned<'a>(
        &'a self,
        consumer: &'a Consumer,
        partitions: &'a BTreeSet<TopicPartition>,
    ) -> ListenerFuture<'a> {
        Box::pin(async move {
            for tp in partitions {
                consumer.seek(tp, 3).unwrap();
                assert_eq!(consumer.position(tp).await.unwrap(), 3);
            }
            consumer.commit_sync().await.unwrap();
        })
    }

    fn on_partitions_revoked<'a>(
        &'a self,
        consumer: &'a Consumer,
        _partitions: &'a BTreeSet<TopicPartition>,
    ) -> ListenerFuture<'a> {
        Box::pin(async move {
            consumer.commit_sync().await.unwrap();
            // A poll from inside the listener neither runs the rebalance again nor blocks.
            consumer.poll(Duration::ZERO).await.unwrap();
        })
    }
}

#[tokio::test]
async fn a_listener_may_await_the_consumer() {
    let broker = group_broker();
    let topic = "listener";
    broker.create_topic(topic, 1).await;
    let conn = broker.connection().await;
    produce(&conn, topic, 0, 0, 1, 10, Compression::None).await;
    let c = Consumer::new(
        member_config(&broker, "g-listener", "range", "l")
            .enable_auto_commit(false)
            .build()
            .unwrap(),
    )
    .await
    .unwrap();
    c.subscribe_with_listener([topic], Arc::new(SeekToThree))
        .unwrap();
    let got = poll_n(&c, 7, Duration::from_secs(20)).await;
    assert_eq!(got.first().map(|r| r.offset), Some(3));
    assert_eq!(got.len(), 7);
    let committed = c.committed(&[tp(topic, 0)]).await.unwrap();
    assert_eq!(committed[&tp(topic, 0)].as_ref().map(|o| o.offset), Some(3));
    // A rebalance asked for by the application: revoke (commit inside), rejoin.
    c.enforce_rebalance("test").unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while c.metrics().rebalances < 2 && Instant::now() < deadline {
        c.poll(Duration::from_millis(100)).await.unwrap();
    }
    assert_eq!(c.metrics().rebalances, 2);
    let committed = c.committed(&[tp(topic, 0)]).await.unwrap();
    assert_eq!(committed[&tp(topic, 0)].as_ref().map(|o| o.offset), Some(3));
    c.close(Duration::from_secs(5)).await.unwrap();
}
