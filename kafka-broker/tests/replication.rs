//! Replication under failures, with real broker processes (three combined KRaft nodes) and
//! real clients, checked against Kafka's guarantees rather than against what a broker
//! happens to do:
//!
//! - Leader kills: a topic with replication factor 3 and `min.insync.replicas=2` takes
//!   idempotent acks=all writes from confluent-kafka (one test) or our producer (another)
//!   while, 20 times at random moments, a partition's leader is SIGKILLed and restarted. Every
//!   acknowledged record is read back exactly once, at the offset it was acknowledged with, in
//!   order per partition (kcat and kafka-python, or our consumer and kcat), no record fails,
//!   and the replicas end byte-identical.
//! - Divergent logs: a leader takes acks=1 writes its followers never fetch (they are
//!   SIGSTOPped), dies, and comes back as a follower of the new leader: it truncates them and
//!   its log is the new leader's byte for byte; the new leader gave the next records the
//!   offsets the lost ones had.
//! - Network partitions, on network namespaces of this machine (`replication/netns.rs`): a
//!   leader cut off from its replicas but not from the clients acknowledges no acks=all
//!   write; then a leader isolated from everybody. The majority elects another leader, writes
//!   go on, and once healed the old leader truncates what it took alone. No acknowledged write
//!   is lost, and every leader epoch in the final log was led by one broker only.
//! - A consumer group keeps consuming while its coordinator's broker is SIGKILLed: its
//!   commits survive, no record is skipped, and what is read twice was never committed.
//!
//! A missing peer (kcat, a python module) or network namespaces that cannot be made skip that
//! part with a notice, unless `KAFKA_RS_REQUIRE_PEERS=1` (as CI runs it). Each run prints the
//! random seed it used (`KAFKA_RS_TEST_SEED` repeats a run's choices).
#![allow(clippy::unwrap_used)]

#[path = "cluster/harness.rs"]
#[allow(dead_code)]
mod harness;
#[path = "replication/netns.rs"]
mod netns;
#[path = "common/peers.rs"]
#[allow(dead_code)]
mod peers;
#[path = "replication/support.rs"]
mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use harness::{
    Cluster, Role, admin, agreed_partitions, segment_files, until_brokers, until_same_bytes,
};
use kafka_net::admin::NewTopic;
use kafka_protocol::error_code::ErrorCode;
use support::{
    Background, Load, Rng, check_read, disk_batches, disk_log_end, leaders_by_epoch,
    parse_produced, partition_state, python_client, read_kafka_python, read_kcat, read_ours,
    until_isr_full, until_partition,
};

/// Fast failure detection: heartbeats every 250 ms, a broker fenced after 2 s of silence, a
/// follower out of the ISR after 2 s behind, a failed replica fetch retried after 100 ms.
const SETTINGS: &[&str] = &[
    "broker.heartbeat.interval.ms=250",
    "broker.session.timeout.ms=2000",
    "replica.lag.time.max.ms=2000",
    "replica.fetch.backoff.ms=100",
];

const ALL: [i32; 3] = [1, 2, 3];

/// Creates `topic` with replication factor 3 and this `min.insync.replicas`, and waits until
/// every broker knows it.
async fn create_topic(c: &mut Cluster, topic: &str, partitions: i32, min_insync: u8) {
    let a = admin(&c.bootstrap()).await;
    let r = a
        .create_topics(
            &[NewTopic::new(topic, partitions, 3)
                .config("min.insync.replicas", min_insync.to_string())],
            false,
        )
        .await;
    assert!(r[0].is_ok(), "creating {topic}: {r:?}\n{}", c.logs());
    agreed_partitions(c, topic, partitions as usize).await;
}

/// The bytes of a replica's log (its segment files one after the other).
fn log_bytes(dir: &std::path::Path, topic: &str, partition: i32) -> Vec<u8> {
    segment_files(dir, topic, partition)
        .into_values()
        .flatten()
        .collect()
}

/// Waits, while writes go on, until every replica of `topic`-`partition` is a prefix of the
/// longest one (a healed old leader cut what it took alone) and holds at least `at_least`
/// bytes (it caught up with what the leader had when the partition healed).
async fn until_converged(c: &mut Cluster, topic: &str, partition: i32, at_least: usize) {
    let dirs: Vec<PathBuf> = ALL.iter().map(|id| c.nodes[id].data_dir.clone()).collect();
    c.eventually(
        &format!(
            "{topic}-{partition}: every replica a prefix of the longest, {at_least} bytes or more"
        ),
        Duration::from_secs(30),
        || {
            let logs: Vec<Vec<u8>> = dirs
                .iter()
                .map(|d| log_bytes(d, topic, partition))
                .collect();
            let longest = logs
                .iter()
                .max_by_key(|l| l.len())
                .cloned()
                .unwrap_or_default();
            let ok = logs
                .iter()
                .all(|l| l.len() >= at_least && longest.starts_with(l));
            async move { ok.then_some(()) }
        },
    )
    .await;
}

/// One Produce of `values` (one batch, no producer id) to `topic`-`partition` at `addr`:
/// `Ok(base offset)`, or `Err` with the error code's name or why there was no answer within
/// `timeout`.
async fn produce_raw(
    addr: &str,
    topic: &str,
    partition: i32,
    acks: i16,
    values: &[String],
    timeout: Duration,
) -> Result<i64, String> {
    let values: Vec<&str> = values.iter().map(String::as_str).collect();
    match harness::produce(addr, topic, partition, acks, &values, timeout).await? {
        (0, base) => Ok(base),
        (code, _) => Err(format!(
            "{:?}",
            kafka_protocol::error_code::ErrorCode::from(code)
        )),
    }
}

const ROUNDS: usize = 20;

/// Who writes in [`leader_kills`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Writer {
    /// confluent-kafka (`clients.py produce`), read back by kcat and kafka-python.
    Confluent,
    /// Our producer, read back by our consumer and kcat.
    Ours,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confluent_kafkas_acknowledged_writes_survive_twenty_leader_kills() {
    leader_kills(Writer::Confluent).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_producers_acknowledged_writes_survive_twenty_leader_kills() {
    leader_kills(Writer::Ours).await;
}

/// Three brokers, a topic of two partitions with replication factor 3 and
/// `min.insync.replicas=2`, an idempotent acks=all producer writing all along; 20 times, after
/// a random pause, the leader of a random partition is SIGKILLed, a survivor takes over, the
/// victim restarts and every replica is back in the ISR. Then every acknowledged record is read
/// back once at its offset, in order; no record failed; the replicas hold the same bytes.
async fn leader_kills(writer: Writer) {
    const TOPIC: &str = "leader-kills";
    if writer == Writer::Confluent && python_client("confluent").is_none() {
        return;
    }
    let started = Instant::now();
    let mut rng = Rng::from_env(&format!("leader kills ({writer:?})"));
    let mut c = Cluster::new(&[Role::Combined; 3], SETTINGS);
    c.start_all();
    until_brokers(&mut c, &ALL).await;
    create_topic(&mut c, TOPIC, 2, 2).await;
    let bootstrap = c.bootstrap();
    let dir = tempfile::tempdir().unwrap();
    let stop = dir.path().join("stop");
    let (mut confluent, mut ours) = match writer {
        Writer::Confluent => {
            let mut b = Background::python(
                &[
                    "produce",
                    "--bootstrap",
                    &bootstrap,
                    "--topic",
                    TOPIC,
                    "--partitions",
                    "2",
                    "--stop-file",
                    stop.to_str().unwrap(),
                ],
                &dir.path().join("confluent-produce.out"),
            );
            b.until(
                &mut c,
                "confluent-kafka's producer has acknowledgements",
                Duration::from_secs(30),
                |out| out.lines().any(|l| l.starts_with("ack ")),
            )
            .await;
            (Some(b), None)
        }
        Writer::Ours => {
            let load = Load::start(&bootstrap, TOPIC, 2, Duration::from_millis(20), "ours").await;
            wait_for_acks(&mut c, &load, 1, "before the first kill").await;
            (None, Some(load))
        }
    };
    for round in 0..ROUNDS {
        tokio::time::sleep(Duration::from_millis(200 + rng.below(1300))).await;
        let partition = rng.below(2) as i32;
        let before = until_partition(
            &mut c,
            &format!("round {round}: {TOPIC}-{partition} has a leader"),
            TOPIC,
            partition,
            Duration::from_secs(20),
            |s| s.leader >= 0,
        )
        .await;
        let victim = before.leader;
        c.kill(victim);
        let after = until_partition(
            &mut c,
            &format!("round {round}: {TOPIC}-{partition} led by a survivor of node {victim}"),
            TOPIC,
            partition,
            Duration::from_secs(20),
            |s| s.leader >= 0 && s.leader != victim && s.leader_epoch > before.leader_epoch,
        )
        .await;
        c.start(victim);
        until_isr_full(&mut c, &[(TOPIC, 2)], &ALL, Duration::from_secs(30)).await;
        if let Some(b) = confluent.as_mut() {
            b.assert_running();
        }
        let acked = match (&confluent, &ours) {
            (Some(b), _) => b.output().lines().filter(|l| l.starts_with("ack ")).count(),
            (_, Some(l)) => l.acked(),
            _ => 0,
        };
        eprintln!(
            "round {round} ({:.0?}): node {victim} (leader of {TOPIC}-{partition}, epoch {}) \
             killed; node {} led at epoch {}; restarted, back in every ISR; {acked} acknowledged",
            started.elapsed(),
            before.leader_epoch,
            after.leader,
            after.leader_epoch,
        );
    }
    std::fs::write(&stop, b"").unwrap();
    let produced = match (confluent.take(), ours.take()) {
        (Some(b), _) => parse_produced(&b.finish(Duration::from_secs(150)).await),
        (_, Some(l)) => l.finish().await,
        _ => unreachable!("one writer runs"),
    };
    eprintln!(
        "{writer:?}: {} sent, {} acknowledged, {} failed",
        produced.sent,
        produced.acked.len(),
        produced.failed.len()
    );
    let mut reads = Vec::new();
    if writer == Writer::Confluent {
        reads.push(("kafka-python", read_kafka_python(&bootstrap, TOPIC, 2)));
    } else {
        reads.push(("our consumer", Some(read_ours(&bootstrap, TOPIC, 2).await)));
    }
    reads.push(("kcat", read_kcat(&bootstrap, TOPIC)));
    for (reader, read) in reads {
        if let Some(read) = read {
            eprintln!("{}", check_read(reader, &produced, &read));
        }
    }
    // Idempotence with unbounded retries: nothing gives up while the cluster recovers.
    produced.assert_none_failed(&format!("{writer:?}"), || c.logs());
    for p in 0..2 {
        until_same_bytes(&mut c, TOPIC, p, &ALL, Duration::from_secs(30)).await;
    }
    c.assert_running();
    eprintln!("{ROUNDS} leader kills in {:.0?}", started.elapsed());
}

/// The divergent-log case of leader election (Kafka's KIP-101 truncation by leader epoch).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_that_died_with_unreplicated_writes_truncates_them() {
    const TOPIC: &str = "divergent";
    let mut c = Cluster::new(&[Role::Combined; 3], SETTINGS);
    c.start_all();
    until_brokers(&mut c, &ALL).await;
    create_topic(&mut c, TOPIC, 1, 2).await;
    let first = until_partition(
        &mut c,
        "the partition has a leader and a full ISR",
        TOPIC,
        0,
        Duration::from_secs(20),
        |s| s.leader >= 0 && s.isr == ALL,
    )
    .await;
    let old = first.leader;
    let followers: Vec<i32> = ALL.iter().copied().filter(|&i| i != old).collect();
    let old_addr = c.addr(old);
    let values = |prefix: &str, n: usize| -> Vec<String> {
        (0..n).map(|i| format!("{prefix}{i}")).collect()
    };
    let replicated = values("a", 10);
    // The metadata named the leader; the leader itself may apply that image a moment later
    // (NOT_LEADER_OR_FOLLOWER until then).
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    let base = loop {
        match produce_raw(
            &old_addr,
            TOPIC,
            0,
            -1,
            &replicated,
            Duration::from_secs(10),
        )
        .await
        {
            Err(e)
                if e.starts_with("NOT_LEADER_OR_FOLLOWER")
                    && std::time::Instant::now() < deadline =>
            {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            r => break r,
        }
    }
    .unwrap_or_else(|e| panic!("acks=all to the leader: {e}\n{}", c.logs()));
    assert_eq!(base, 0);
    until_same_bytes(&mut c, TOPIC, 0, &ALL, Duration::from_secs(30)).await;

    // The followers stop; the leader takes acks=1 writes alone. The first may still reach
    // the followers (their pending long polls are answered into their sockets); after a
    // pause, no later one can.
    for &f in &followers {
        c.signal(f, "STOP");
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let maybe = values("b", 1);
    assert_eq!(
        produce_raw(&old_addr, TOPIC, 0, 1, &maybe, Duration::from_secs(5)).await,
        Ok(10)
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut lost = Vec::new();
    for k in 0..5 {
        let batch = values(&format!("lost{k}-"), 4);
        let at = produce_raw(&old_addr, TOPIC, 0, 1, &batch, Duration::from_secs(5)).await;
        assert_eq!(at, Ok(11 + 4 * k as i64), "acks=1 to the lone leader");
        lost.extend(batch);
    }
    let old_dir = c.nodes[&old].data_dir.clone();
    assert_eq!(
        disk_log_end(&old_dir, TOPIC, 0),
        31,
        "the old leader wrote them"
    );
    c.kill(old);
    for &f in &followers {
        c.signal(f, "CONT");
    }
    let elected = until_partition(
        &mut c,
        &format!("a follower leads after node {old} died"),
        TOPIC,
        0,
        Duration::from_secs(30),
        |s| followers.contains(&s.leader) && s.leader_epoch > first.leader_epoch,
    )
    .await;
    let new = elected.leader;
    let new_dir = c.nodes[&new].data_dir.clone();
    let kept = disk_log_end(&new_dir, TOPIC, 0);
    assert!(
        kept == 10 || kept == 11,
        "the new leader has the replicated records and at most the first acks=1 one: {kept}"
    );
    // The new leader assigns the next offsets from its own log end: the offsets the lost
    // records had on the old leader.
    let after = values("c", 8);
    let at = produce_raw(&c.addr(new), TOPIC, 0, -1, &after, Duration::from_secs(10))
        .await
        .unwrap_or_else(|e| panic!("acks=all to the new leader: {e}\n{}", c.logs()));
    assert_eq!(at, kept, "the new leader's offsets follow its own log");

    // The old leader comes back as a follower: it cuts what it took alone and fetches.
    c.start(old);
    until_same_bytes(&mut c, TOPIC, 0, &ALL, Duration::from_secs(30)).await;
    let batches = disk_batches(&old_dir, TOPIC, 0);
    let on_disk: Vec<(i64, String)> = batches
        .iter()
        .flat_map(|b| {
            b.values
                .iter()
                .enumerate()
                .map(move |(i, v)| (b.base_offset + i as i64, v.clone()))
        })
        .collect();
    let mut expected: Vec<String> = replicated.clone();
    if kept == 11 {
        expected.extend(maybe.clone());
    }
    expected.extend(after.clone());
    let expected: Vec<(i64, String)> = expected
        .into_iter()
        .enumerate()
        .map(|(i, v)| (i as i64, v))
        .collect();
    assert_eq!(on_disk, expected, "the old leader's log after it rejoined");
    let tail_epochs: BTreeSet<i32> = batches
        .iter()
        .filter(|b| b.base_offset >= kept)
        .map(|b| b.leader_epoch)
        .collect();
    assert_eq!(
        tail_epochs,
        BTreeSet::from([elected.leader_epoch]),
        "the records after the divergence point are the new leader's"
    );
    if let Some(read) = read_kcat(&c.bootstrap(), TOPIC) {
        let read: Vec<(i64, String)> = read.get(&0).cloned().unwrap_or_default();
        assert_eq!(read, expected, "kcat reads what the logs hold");
    }
    assert!(
        !lost.iter().any(|v| on_disk.iter().any(|(_, d)| d == v)),
        "the unreplicated acks=1 records are gone"
    );
    eprintln!(
        "node {old} took acks=1 writes up to offset 31 alone and died; node {new} led at epoch \
         {} from offset {kept}; node {old} rejoined with the same bytes, {} records",
        elected.leader_epoch,
        on_disk.len()
    );
    c.assert_running();
}

/// Runs `body` on a thread inside the clients' namespace of `net` (with its own runtime),
/// so that every socket it opens and every process it starts is on that network.
fn in_client_namespace<F, Fut>(net: &netns::Net, body: F)
where
    F: FnOnce() -> Fut + Send,
    Fut: std::future::Future<Output = ()>,
{
    std::thread::scope(|s| {
        s.spawn(|| {
            net.enter_client().unwrap();
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap()
                .block_on(body());
        });
    });
}

/// The namespaces for three nodes, or `None` (skip) where they cannot be made, which fails
/// the test under `KAFKA_RS_REQUIRE_PEERS=1`.
fn namespaces() -> Option<netns::Net> {
    match netns::Net::create(&ALL) {
        Ok(net) => Some(net),
        Err(e) if !peers::peers_required() => {
            eprintln!("SKIPPED: network namespaces cannot be made here: {e}");
            None
        }
        Err(e) => panic!("network namespaces cannot be made (KAFKA_RS_REQUIRE_PEERS=1): {e}"),
    }
}

#[test]
fn a_partitioned_leader_loses_no_acknowledged_write() {
    let Some(net) = namespaces() else { return };
    in_client_namespace(&net, || partitions(&net));
}

async fn partitions(net: &netns::Net) {
    const TOPIC: &str = "partitioned";
    let started = Instant::now();
    let places: Vec<harness::Place> = ALL.iter().map(|&id| net.place(id)).collect();
    let mut c = Cluster::placed(&[Role::Combined; 3], SETTINGS, &places);
    c.start_all();
    until_brokers(&mut c, &ALL).await;
    // min.insync.replicas=1: NOT_ENOUGH_REPLICAS cannot hide a leader that would shrink its
    // ISR to itself without the controller; acks=all still means "every ISR member".
    create_topic(&mut c, TOPIC, 1, 1).await;
    // Two producers: one that knows every broker (it may keep talking to a cut-off leader
    // that still says it leads), one bootstrapped on the brokers that stay together.
    let everyone = Load::start(&c.bootstrap(), TOPIC, 1, Duration::from_millis(40), "all").await;
    let mut refused = Vec::new();

    // 1. The leader loses its replicas but not its clients.
    let s0 = until_partition(
        &mut c,
        "a leader and a full ISR",
        TOPIC,
        0,
        Duration::from_secs(20),
        |s| s.leader >= 0 && s.isr == ALL,
    )
    .await;
    wait_for_acks(&mut c, &everyone, 1, "before the partition").await;
    let cut = s0.leader;
    let majority: Vec<String> = ALL
        .iter()
        .filter(|&&i| i != cut)
        .map(|&i| c.addr(i))
        .collect();
    let load = Load::start(
        &majority.join(","),
        TOPIC,
        1,
        Duration::from_millis(40),
        "maj",
    )
    .await;
    wait_for_acks(&mut c, &load, 1, "before the partition").await;
    net.cut_from_peers(cut).unwrap();
    let cut_addr = c.addr(cut);
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut k = 0;
    let s1 = loop {
        // acks=all straight to the cut-off leader: never acknowledged.
        let v = vec![format!("cut-{k}")];
        k += 1;
        match produce_raw(&cut_addr, TOPIC, 0, -1, &v, Duration::from_millis(1500)).await {
            Ok(offset) => panic!(
                "node {cut}, cut off from its replicas, acknowledged an acks=all write at \
                 offset {offset}\n{}",
                c.logs()
            ),
            Err(e) => refused.push(e),
        }
        if let Some(s) = elected_among(&majority, TOPIC, cut, s0.leader_epoch).await {
            break s;
        }
        assert!(
            Instant::now() < deadline,
            "no leader among the majority within 30 s of cutting node {cut} off\n{}",
            c.logs()
        );
    };
    // The new leader takes acks=all writes meanwhile (straight to it: a client may keep
    // asking the cut-off leader for metadata, which still names itself).
    let (maj_at_cut, all_at_cut) = (load.acked(), everyone.acked());
    let leader_addr = c.addr(s1.leader);
    let mut direct = direct_writes(&mut c, &leader_addr, TOPIC, "new1", 20).await;
    let during = (load.acked() - maj_at_cut, everyone.acked() - all_at_cut);
    // What the cut-off leader took alone starts where the new leader's epoch starts.
    let cut_end = disk_log_end(&c.nodes[&cut].data_dir, TOPIC, 0);
    let new_start = disk_batches(&c.nodes[&s1.leader].data_dir, TOPIC, 0)
        .iter()
        .find(|b| b.leader_epoch >= s1.leader_epoch)
        .map_or_else(
            || disk_log_end(&c.nodes[&s1.leader].data_dir, TOPIC, 0),
            |b| b.base_offset,
        );
    assert!(
        cut_end > new_start,
        "the cut-off leader appended the acks=all writes it could not replicate (its log ends \
         at {cut_end}, the new leader's epoch starts at {new_start})"
    );
    let leader_bytes = log_bytes(&c.nodes[&s1.leader].data_dir, TOPIC, 0).len();
    net.heal_peers(cut).unwrap();
    until_isr_full(&mut c, &[(TOPIC, 1)], &ALL, Duration::from_secs(30)).await;
    until_converged(&mut c, TOPIC, 0, leader_bytes).await;
    eprintln!(
        "({:.0?}) node {cut} cut off at epoch {}: {} acks=all writes to it refused ({:?}); \
         node {} led at epoch {} from offset {new_start} and took 20 acks=all writes (our \
         producers had {} and {} acknowledged meanwhile); healed, node {cut} cut its log from \
         {cut_end} and the logs agree",
        started.elapsed(),
        s0.leader_epoch,
        refused.len(),
        refused.iter().collect::<BTreeSet<_>>(),
        s1.leader,
        s1.leader_epoch,
        during.0,
        during.1
    );

    // 2. The new leader loses everybody.
    let s2 = until_partition(
        &mut c,
        "a leader and a full ISR after healing",
        TOPIC,
        0,
        Duration::from_secs(20),
        |s| s.leader >= 0 && s.isr == ALL,
    )
    .await;
    let lone = s2.leader;
    net.isolate(lone).unwrap();
    let majority: Vec<String> = ALL
        .iter()
        .filter(|&&i| i != lone)
        .map(|&i| c.addr(i))
        .collect();
    let e2 = s2.leader_epoch;
    let s3 = {
        let majority = majority.clone();
        c.eventually(
            &format!("a leader among the others after isolating node {lone}"),
            Duration::from_secs(30),
            || {
                let majority = majority.clone();
                async move { elected_among(&majority, TOPIC, lone, e2).await }
            },
        )
        .await
    };
    let leader_addr = c.addr(s3.leader);
    direct.extend(direct_writes(&mut c, &leader_addr, TOPIC, "new2", 20).await);
    let leader_bytes = log_bytes(&c.nodes[&s3.leader].data_dir, TOPIC, 0).len();
    net.reconnect(lone).unwrap();
    until_isr_full(&mut c, &[(TOPIC, 1)], &ALL, Duration::from_secs(30)).await;
    until_converged(&mut c, TOPIC, 0, leader_bytes).await;
    eprintln!(
        "({:.0?}) node {lone} isolated at epoch {}; node {} led at epoch {}; reconnected, the logs agree",
        started.elapsed(),
        s2.leader_epoch,
        s3.leader,
        s3.leader_epoch
    );

    let produced = load
        .finish()
        .await
        .merge(everyone.finish().await)
        .merge(support::Produced {
            sent: direct.len() as u64,
            acked: direct,
            failed: Vec::new(),
        });
    produced.assert_none_failed("our producers", || c.logs());
    until_same_bytes(&mut c, TOPIC, 0, &ALL, Duration::from_secs(30)).await;
    let batches = disk_batches(&c.nodes[&1].data_dir, TOPIC, 0);
    let took_alone: Vec<&String> = batches
        .iter()
        .flat_map(|b| &b.values)
        .filter(|v| v.starts_with("cut-"))
        .collect();
    assert!(
        took_alone.is_empty(),
        "writes the cut-off leader took alone are in the final log: {took_alone:?}"
    );
    let read = read_ours(&c.bootstrap(), TOPIC, 1).await;
    eprintln!("{}", check_read("our consumer", &produced, &read));
    if let Some(read) = read_kcat(&c.bootstrap(), TOPIC) {
        eprintln!("{}", check_read("kcat", &produced, &read));
    }
    // One leader per epoch, and each epoch in the log was led by one broker.
    let led = leaders_by_epoch(&c, TOPIC, 0);
    for (epoch, nodes) in &led {
        assert_eq!(nodes.len(), 1, "epoch {epoch} led by {nodes:?}");
    }
    // Acknowledged records by epoch and producer ("all": bootstrapped on every broker,
    // "maj": on the majority of the first partition).
    let mut acked_by_epoch: BTreeMap<(i32, &str), usize> = BTreeMap::new();
    for b in &batches {
        let leader = led.get(&b.leader_epoch);
        assert!(
            leader.is_some(),
            "a batch at {} of epoch {}, which no broker says it led: {led:?}",
            b.base_offset,
            b.leader_epoch
        );
        for a in produced
            .acked
            .iter()
            .filter(|a| (b.base_offset..=b.last_offset).contains(&a.offset))
        {
            let tag = a.value.rsplit(':').next().unwrap_or("");
            *acked_by_epoch.entry((b.leader_epoch, tag)).or_default() += 1;
        }
    }
    for (epoch, who) in [
        (s0.leader_epoch, cut),
        (s1.leader_epoch, s1.leader),
        (s3.leader_epoch, s3.leader),
    ] {
        assert_eq!(
            led.get(&epoch),
            Some(&BTreeSet::from([who])),
            "epoch {epoch}"
        );
    }
    eprintln!(
        "({:.0?}) acknowledged records by (leader epoch, producer): {:?}; leaders: {led:?}",
        started.elapsed(),
        acked_by_epoch
    );
    c.assert_running();
}

/// The partition's state as every broker of `majority` says, once they agree on a leader
/// other than `not` at an epoch after `after`.
async fn elected_among(
    majority: &[String],
    topic: &str,
    not: i32,
    after: i32,
) -> Option<support::PartitionState> {
    let mut seen = None;
    for a in majority {
        let s = partition_state(a, topic, 0).await?;
        if s.leader < 0 || s.leader == not || s.leader_epoch <= after {
            return None;
        }
        if seen.as_ref().is_some_and(|x| *x != s) {
            return None;
        }
        seen = Some(s);
    }
    seen
}

/// Writes of one record each, acks=all, to `topic`-0 straight to the broker at `addr` until
/// `n` are acknowledged (30 s at most), values `0:<attempt>:<tag>` (a failed attempt may be
/// written all the same: it is not retried with the same value).
async fn direct_writes(
    c: &mut Cluster,
    addr: &str,
    topic: &str,
    tag: &str,
    n: usize,
) -> Vec<support::Acked> {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut acked = Vec::new();
    let mut last_error = String::new();
    let mut attempt = 0;
    while acked.len() < n {
        assert!(
            Instant::now() < deadline,
            "{} of {n} acks=all writes to {addr} acknowledged within 30 s; last error: \
             {last_error}\n{}",
            acked.len(),
            c.logs()
        );
        let value = format!("0:{attempt}:{tag}");
        attempt += 1;
        match produce_raw(
            addr,
            topic,
            0,
            -1,
            std::slice::from_ref(&value),
            Duration::from_secs(2),
        )
        .await
        {
            Ok(offset) => acked.push(support::Acked {
                partition: 0,
                offset,
                value,
            }),
            Err(e) => {
                last_error = e;
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
    acked
}

/// Waits until `load` has at least `n` acknowledgements (30 s at most).
async fn wait_for_acks(c: &mut Cluster, load: &Load, n: usize, when: &str) {
    c.eventually(
        &format!("{n} acknowledgements to our producer {when}"),
        Duration::from_secs(30),
        || {
            let ok = load.acked() >= n;
            async move { ok.then_some(()) }
        },
    )
    .await;
}

/// A group consumer's events (`clients.py group`).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Event {
    Record(i32, i64),
    Commit(bool, BTreeMap<i32, i64>),
    Other,
}

fn events(out: &str) -> Vec<Event> {
    out.lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            match v["e"].as_str() {
                Some("rec") => {
                    Event::Record(v["p"].as_i64().unwrap() as i32, v["o"].as_i64().unwrap())
                }
                Some("commit") => Event::Commit(
                    v["ok"].as_bool().unwrap(),
                    v["offsets"]
                        .as_object()
                        .unwrap()
                        .iter()
                        .map(|(p, o)| (p.parse().unwrap(), o.as_i64().unwrap()))
                        .collect(),
                ),
                _ => Event::Other,
            }
        })
        .collect()
}

/// Records read per partition, commits acknowledged and failed.
fn summary(events: &[Event]) -> String {
    let mut read: BTreeMap<i32, usize> = BTreeMap::new();
    let (mut ok, mut failed) = (0, 0);
    for e in events {
        match e {
            Event::Record(p, _) => *read.entry(*p).or_default() += 1,
            Event::Commit(true, _) => ok += 1,
            Event::Commit(false, _) => failed += 1,
            Event::Other => {}
        }
    }
    format!("records read per partition {read:?}; {ok} commits acknowledged, {failed} failed")
}

/// The offsets of the last acknowledged commit of each partition in `events`.
fn last_commits(events: &[Event]) -> BTreeMap<i32, i64> {
    let mut out = BTreeMap::new();
    for e in events {
        if let Event::Commit(true, offsets) = e {
            out.extend(offsets.iter().map(|(p, o)| (*p, *o)));
        }
    }
    out
}

/// Checks one consumer's reads: per partition each record follows the previous one, or the
/// position moved back (a rebalance) to no earlier than the last commit acknowledged before
/// (`floor` to start with). Returns the first offset read per partition.
fn check_consumer(name: &str, events: &[Event], floor: &BTreeMap<i32, i64>) -> BTreeMap<i32, i64> {
    let mut committed = floor.clone();
    let mut next: BTreeMap<i32, i64> = BTreeMap::new();
    let mut first = BTreeMap::new();
    for e in events {
        match e {
            Event::Record(p, o) => {
                let lowest = committed.get(p).copied().unwrap_or(0);
                match next.get(p) {
                    Some(n) if o == n => {}
                    _ => assert!(
                        *o >= lowest && next.get(p).is_none_or(|n| o <= n),
                        "{name}: partition {p} read from {o}, expected {:?} or a committed \
                         offset at least {lowest}",
                        next.get(p)
                    ),
                }
                first.entry(*p).or_insert(*o);
                next.insert(*p, o + 1);
            }
            Event::Commit(true, offsets) => committed.extend(offsets),
            _ => {}
        }
    }
    first
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_keeps_its_commits_when_the_coordinator_dies() {
    const TOPIC: &str = "grouped";
    const GROUP: &str = "g-failover";
    const PER_PARTITION: i64 = 400;
    if python_client("confluent").is_none() {
        return;
    }
    let settings: Vec<&str> = SETTINGS
        .iter()
        .copied()
        .chain([
            "offsets.topic.replication.factor=3",
            "offsets.topic.num.partitions=3",
            "group.initial.rebalance.delay.ms=0",
            "group.min.session.timeout.ms=1000",
        ])
        .collect();
    let mut c = Cluster::new(&[Role::Combined; 3], &settings);
    c.start_all();
    until_brokers(&mut c, &ALL).await;
    create_topic(&mut c, TOPIC, 3, 2).await;
    let bootstrap = c.bootstrap();
    let load = Load::start(&bootstrap, TOPIC, 3, Duration::from_millis(1), "g")
        .await
        .limit(PER_PARTITION as u64);
    let produced = load.finish().await;
    assert!(produced.failed.is_empty(), "{:?}", produced.failed);
    assert_eq!(produced.acked.len(), 3 * PER_PARTITION as usize);
    let ends = (0..3)
        .map(|p| format!("{p}:{PER_PARTITION}"))
        .collect::<Vec<_>>()
        .join(",");
    let dir = tempfile::tempdir().unwrap();
    let group_args = |client: &'static str, pace: &'static str| {
        vec![
            "group",
            "--client",
            client,
            "--bootstrap",
            &bootstrap,
            "--topic",
            TOPIC,
            "--group",
            GROUP,
            "--ends",
            &ends,
            "--commit-every",
            "20",
            "--pace-ms",
            pace,
        ]
    };
    let a_out = dir.path().join("a.out");
    let mut a = Background::python(&group_args("confluent", "10"), &a_out);
    let commits = |out: &str| {
        events(out)
            .iter()
            .filter(|e| matches!(e, Event::Commit(true, _)))
            .count()
    };
    a.until(
        &mut c,
        "the first consumer commits three times",
        Duration::from_secs(30),
        |out| commits(out) >= 3,
    )
    .await;
    let cluster = kafka_net::cluster::Cluster::connect(kafka_net::cluster::ClusterConfig {
        bootstrap: bootstrap.split(',').map(str::to_owned).collect(),
        ..Default::default()
    })
    .await
    .unwrap();
    let coordinator = cluster
        .coordinator(kafka_net::cluster::CoordinatorType::Group, GROUP)
        .await
        .unwrap();
    let before = events(&a.output());
    let committed_before = last_commits(&before);
    c.kill(coordinator);
    let survivors: String = ALL
        .iter()
        .filter(|&&i| i != coordinator)
        .map(|&i| c.addr(i))
        .collect::<Vec<_>>()
        .join(",");
    let n = commits(&a.output());
    a.until(
        &mut c,
        &format!("the consumer commits twice more after node {coordinator} died"),
        Duration::from_secs(40),
        |out| commits(out) >= n + 2,
    )
    .await;
    a.assert_running();
    // What was committed before the coordinator died is still there (or more).
    let now = committed_offsets(&survivors, GROUP, TOPIC).await;
    for (p, o) in &committed_before {
        assert!(
            now.get(p).is_some_and(|n| n >= o),
            "partition {p}: committed {o} before node {coordinator} died, now {:?}",
            now.get(p)
        );
    }
    c.start(coordinator);
    // The first consumer dies with progress it did not commit; a second one (kafka-python
    // when it is there) goes on from the group's commits.
    a.kill();
    let a_events = events(&std::fs::read_to_string(&a_out).unwrap());
    check_consumer("first consumer", &a_events, &BTreeMap::new());
    eprintln!("first consumer: {}", summary(&a_events));
    let a_committed = last_commits(&a_events);
    let second = if python_client("kafka-python").is_some() {
        "kafka-python"
    } else {
        "confluent"
    };
    let b = Background::python(&group_args(second, "0"), &dir.path().join("b.out"));
    let b_events = events(&b.finish(Duration::from_secs(60)).await);
    let b_first = check_consumer("second consumer", &b_events, &a_committed);
    eprintln!("second consumer ({second}): {}", summary(&b_events));
    let mut read: BTreeMap<i32, BTreeMap<i64, usize>> = BTreeMap::new();
    for e in a_events.iter().chain(&b_events) {
        if let Event::Record(p, o) = e {
            *read.entry(*p).or_default().entry(*o).or_default() += 1;
        }
    }
    for p in 0..3 {
        let counts = read.get(&p).cloned().unwrap_or_default();
        let missing: Vec<i64> = (0..PER_PARTITION)
            .filter(|o| !counts.contains_key(o))
            .collect();
        assert!(missing.is_empty(), "partition {p}: never read {missing:?}");
        let twice = counts.values().filter(|n| **n > 1).count();
        eprintln!(
            "partition {p}: the second consumer started at {:?} (committed {:?}); {twice} read twice",
            b_first.get(&p),
            a_committed.get(&p),
        );
    }
    let last = committed_offsets(&bootstrap, GROUP, TOPIC).await;
    assert_eq!(
        last,
        (0..3)
            .map(|p| (p, PER_PARTITION))
            .collect::<BTreeMap<_, _>>(),
        "the group's commits at the end"
    );
    c.assert_running();
}

/// The group's committed offsets of `topic`'s three partitions (OffsetFetch through our
/// consumer, no membership).
async fn committed_offsets(bootstrap: &str, group: &str, topic: &str) -> BTreeMap<i32, i64> {
    let cfg = kafka_consumer::ConsumerConfig::builder()
        .bootstrap_servers(bootstrap.split(','))
        .group_id(group)
        .build()
        .unwrap();
    let consumer = kafka_consumer::Consumer::new(cfg).await.unwrap();
    let tps: Vec<kafka_consumer::TopicPartition> = (0..3)
        .map(|p| kafka_consumer::TopicPartition::new(topic, p))
        .collect();
    let got = consumer.committed(&tps).await.unwrap();
    consumer.close(Duration::from_secs(5)).await.unwrap();
    got.into_iter()
        .filter_map(|(tp, o)| Some((tp.partition, o?.offset)))
        .collect()
}

/// A follower's fetch that names another leader epoch than the leader's moves nothing at the
/// leader: not the follower's log end, not the ISR, not the high watermark. One follower is
/// SIGSTOPped (with failure detection slow enough that it stays registered and in the ISR),
/// so the high watermark waits for it; a fetch forged in its name, at the leader's log end but
/// for the next epoch, is answered UNKNOWN_LEADER_EPOCH and leaves the high watermark where
/// the stopped follower holds it; the same fetch for the leader's epoch moves it (so the
/// forged fetch is one the leader would otherwise count).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_fetch_for_another_leader_epoch_moves_no_replica_state() {
    const TOPIC: &str = "fenced-fetch";
    let settings = [
        "broker.heartbeat.interval.ms=250",
        "broker.session.timeout.ms=60000",
        "replica.lag.time.max.ms=60000",
        "replica.fetch.backoff.ms=100",
    ];
    let mut c = Cluster::new(&[Role::Combined; 3], &settings);
    c.start_all();
    until_brokers(&mut c, &ALL).await;
    create_topic(&mut c, TOPIC, 1, 1).await;
    let s = until_partition(
        &mut c,
        "the partition has a leader and a full ISR",
        TOPIC,
        0,
        Duration::from_secs(20),
        |s| s.leader >= 0 && s.isr == ALL,
    )
    .await;
    let (leader, epoch) = (s.leader, s.leader_epoch);
    let stopped = ALL.iter().copied().find(|&i| i != leader).unwrap();
    let addr = c.addr(leader);
    let values = |prefix: &str| -> Vec<String> { (0..5).map(|i| format!("{prefix}{i}")).collect() };
    // Five records every replica has (the leader may apply its image a moment after the
    // metadata names it).
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        match produce_raw(&addr, TOPIC, 0, -1, &values("a"), Duration::from_secs(10)).await {
            Err(e) if e.starts_with("NOT_LEADER_OR_FOLLOWER") && Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            r => {
                r.unwrap_or_else(|e| panic!("acks=all: {e}\n{}", c.logs()));
                break;
            }
        }
    }
    assert_eq!(high_watermark_at(&addr, TOPIC).await, 5);
    c.signal(stopped, "STOP");
    produce_raw(&addr, TOPIC, 0, 1, &values("b"), Duration::from_secs(10))
        .await
        .unwrap_or_else(|e| panic!("acks=1: {e}\n{}", c.logs()));
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        high_watermark_at(&addr, TOPIC).await,
        5,
        "the stopped follower holds the high watermark"
    );
    // In the stopped follower's name, everything the leader has, for the next epoch.
    let code = fetch_as_follower(&addr, TOPIC, stopped, epoch + 1, 10).await;
    assert_eq!(code, ErrorCode::UNKNOWN_LEADER_EPOCH);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        high_watermark_at(&addr, TOPIC).await,
        5,
        "a fetch for another epoch moved the follower's log end and the high watermark"
    );
    // For the leader's epoch the same fetch counts.
    let code = fetch_as_follower(&addr, TOPIC, stopped, epoch, 10).await;
    assert_eq!(code, ErrorCode::NONE);
    assert_eq!(high_watermark_at(&addr, TOPIC).await, 10);
    c.signal(stopped, "CONT");
    c.assert_running();
}

async fn connect(addr: &str) -> kafka_net::connection::Connection {
    kafka_net::connection::Connection::connect(addr, Default::default())
        .await
        .unwrap()
}

/// One Fetch v12 of `topic`-0 from `offset`, answered at once: the partition's answer.
async fn fetch_once(
    addr: &str,
    topic: &str,
    replica_id: i32,
    leader_epoch: i32,
    offset: i64,
) -> kafka_protocol::messages::fetch_response::PartitionData {
    use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
    use kafka_protocol::messages::{FetchRequest, RequestBody, ResponseBody};
    let req = FetchRequest {
        replica_id,
        max_wait_ms: 0,
        min_bytes: 0,
        max_bytes: 1 << 20,
        topics: vec![FetchTopic {
            topic: kafka_protocol::KStr::from(topic.to_owned()),
            partitions: vec![FetchPartition {
                partition: 0,
                current_leader_epoch: leader_epoch,
                fetch_offset: offset,
                last_fetched_epoch: -1,
                log_start_offset: 0,
                partition_max_bytes: 1 << 20,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let answer = connect(addr)
        .await
        .request_at(RequestBody::Fetch(Box::new(req)), 12)
        .await
        .unwrap();
    let ResponseBody::Fetch(mut r) = answer else {
        panic!("not a fetch answer: {answer:?}")
    };
    r.responses.remove(0).partitions.remove(0)
}

/// A fetch in the name of follower `replica_id`, naming `leader_epoch`: its error code.
async fn fetch_as_follower(
    addr: &str,
    topic: &str,
    replica_id: i32,
    leader_epoch: i32,
    offset: i64,
) -> ErrorCode {
    ErrorCode::from(
        fetch_once(addr, topic, replica_id, leader_epoch, offset)
            .await
            .error_code,
    )
}

/// The high watermark a consumer's fetch is told.
async fn high_watermark_at(addr: &str, topic: &str) -> i64 {
    fetch_once(addr, topic, -1, -1, 0).await.high_watermark
}
