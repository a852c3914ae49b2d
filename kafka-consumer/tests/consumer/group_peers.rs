//! Groups shared with third-party clients: our members and confluent-kafka (librdkafka)
//! members in one group with the same assignor get disjoint partitions and together read
//! everything, whoever leads; offsets committed by our members are where `kcat -G` starts,
//! and the other way round.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kafka_consumer::Consumer;
use kafka_protocol::record::Compression;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::task::JoinHandle;

use crate::group::{Running, group_broker, member_config, partitioned, wait_until};
use crate::peers::{have, kcat, run};
use crate::support::*;

fn confluent_kafka() -> bool {
    std::process::Command::new("python3")
        .args(["-c", "import confluent_kafka"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[derive(Default)]
struct PeerState {
    assigned: BTreeSet<i32>,
    records: Vec<(i32, i64)>,
    log: Vec<String>,
    closed: bool,
}

/// A confluent-kafka member (tests/consumer/confluent_member.py).
struct Peer {
    child: Child,
    stdin: Option<ChildStdin>,
    state: Arc<Mutex<PeerState>>,
    reader: JoinHandle<()>,
}

fn partitions(list: &str) -> impl Iterator<Item = i32> + '_ {
    list.split(',').filter_map(|p| p.trim().parse().ok())
}

impl Peer {
    fn start(bootstrap: &str, group: &str, topic: &str, strategy: &str, name: &str) -> Self {
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/consumer/confluent_member.py"
        );
        let mut child = Command::new("python3")
            .args([script, bootstrap, group, topic, strategy, name])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let state = Arc::new(Mutex::new(PeerState::default()));
        let reader = {
            let state = state.clone();
            tokio::spawn(async move {
                let mut lines = BufReader::new(stdout).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    let mut s = state.lock().unwrap();
                    let (word, rest) = line.split_once(' ').unwrap_or((line.as_str(), ""));
                    match word {
                        "assign" => s.assigned.extend(partitions(rest)),
                        "revoke" | "lost" => {
                            for p in partitions(rest) {
                                s.assigned.remove(&p);
                            }
                        }
                        "record" => {
                            let mut it = rest.split(' ').filter_map(|x| x.parse::<i64>().ok());
                            if let (Some(p), Some(o)) = (it.next(), it.next()) {
                                s.records.push((p as i32, o));
                            }
                        }
                        "closed" => s.closed = true,
                        _ => {}
                    }
                    if word != "record" {
                        s.log.push(line.clone());
                    }
                }
            })
        };
        Self {
            child,
            stdin,
            state,
            reader,
        }
    }

    fn assignment(&self) -> BTreeSet<i32> {
        self.state.lock().unwrap().assigned.clone()
    }

    fn records(&self) -> Vec<(i32, i64)> {
        self.state.lock().unwrap().records.clone()
    }

    fn log(&self) -> Vec<String> {
        self.state.lock().unwrap().log.clone()
    }

    /// Closes stdin: the member closes (commits, leaves) and exits.
    async fn close(mut self) -> Vec<String> {
        drop(self.stdin.take());
        let status = tokio::time::timeout(Duration::from_secs(30), self.child.wait())
            .await
            .expect("the confluent member did not exit")
            .unwrap();
        let _ = (&mut self.reader).await;
        let log = self.log();
        assert!(status.success(), "confluent member failed: {log:?}");
        assert!(self.state.lock().unwrap().closed, "{log:?}");
        log
    }
}

/// Two of ours and one confluent-kafka member on 6 partitions; `ours_first`: one of ours
/// joins first and leads (it computes everyone's assignment), else the confluent member
/// leads.
async fn mixed_group(strategy: &str, ours_first: bool) {
    if !have(confluent_kafka(), "python3 with confluent-kafka") {
        return;
    }
    let broker = group_broker();
    let who = if ours_first { "ours" } else { "theirs" };
    let topic = format!("mixed-{strategy}-{who}");
    let group = format!("g-mixed-{strategy}-{who}");
    broker.create_topic(&topic, 6).await;
    let cfg = |name: &str| {
        member_config(&broker, &group, strategy, name)
            .session_timeout(Duration::from_secs(6))
            .heartbeat_interval(Duration::from_millis(300))
            .build()
            .unwrap()
    };
    let (a, peer) = if ours_first {
        let a = Running::start(cfg("a"), &topic, "a").await;
        wait_until("our first member", Duration::from_secs(20), || {
            a.assignment().len() == 6
        })
        .await;
        let peer = Peer::start(&broker.bootstrap(), &group, &topic, strategy, "peer");
        (a, peer)
    } else {
        let peer = Peer::start(&broker.bootstrap(), &group, &topic, strategy, "peer");
        wait_until("the confluent member", Duration::from_secs(30), || {
            peer.assignment().len() == 6
        })
        .await;
        let a = Running::start(cfg("a"), &topic, "a").await;
        (a, peer)
    };
    let b = Running::start(cfg("b"), &topic, "b").await;
    wait_until(
        "3 members with 2 partitions each",
        Duration::from_secs(40),
        || {
            let sets = [a.assignment(), b.assignment(), peer.assignment()];
            partitioned(&sets, 6) && sets.iter().all(|s| s.len() == 2)
        },
    )
    .await;
    let owners = [a.assignment(), b.assignment(), peer.assignment()];
    let conn = broker.connection().await;
    for p in 0..6 {
        produce(&conn, &topic, p, 0, 1, 30, Compression::None).await;
    }
    let want: BTreeSet<(i32, i64)> = (0..6).flat_map(|p| (0..30).map(move |o| (p, o))).collect();
    wait_until("everything consumed", Duration::from_secs(30), || {
        let all: BTreeSet<(i32, i64)> = a
            .rec
            .records()
            .into_iter()
            .chain(b.rec.records())
            .chain(peer.records())
            .collect();
        all.is_superset(&want)
    })
    .await;
    // Each member read exactly its own partitions, each record once.
    let got = [a.rec.records(), b.rec.records(), peer.records()];
    for (recs, own) in got.iter().zip(&owners) {
        assert!(
            recs.iter().all(|(p, _)| own.contains(p)),
            "a member read outside its partitions {own:?}: {recs:?}"
        );
    }
    assert_eq!(got.iter().map(Vec::len).sum::<usize>(), want.len());
    // The confluent member's view of the group ended where ours did.
    assert_eq!(peer.assignment(), owners[2]);
    let log = peer.close().await;
    assert!(!log.iter().any(|l| l.starts_with("error")), "{log:?}");
    for r in [a, b] {
        let rec = r.close().await;
        let s = rec.seen.lock().unwrap();
        assert!(s.errors.is_empty(), "{:?}", s.errors);
        assert!(s.violations.is_empty(), "{:?}", s.violations);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mixed_group_range_led_by_confluent() {
    mixed_group("range", false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mixed_group_range_led_by_ours() {
    mixed_group("range", true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mixed_group_cooperative_sticky_led_by_ours() {
    mixed_group("cooperative-sticky", true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mixed_group_cooperative_sticky_led_by_confluent() {
    mixed_group("cooperative-sticky", false).await;
}

/// Offsets per partition from `kcat -f '%p %o\n'` output.
fn kcat_offsets(out: &str) -> BTreeMap<i32, Vec<i64>> {
    let mut m: BTreeMap<i32, Vec<i64>> = BTreeMap::new();
    for line in out.lines() {
        let mut it = line.split(' ').filter_map(|x| x.parse::<i64>().ok());
        if let (Some(p), Some(o)) = (it.next(), it.next()) {
            m.entry(p as i32).or_default().push(o);
        }
    }
    m
}

#[tokio::test]
async fn offsets_are_shared_with_kcat_balanced_consumers() {
    let Some(kcat) = kcat() else {
        have(false, "kcat");
        return;
    };
    let broker = group_broker();
    let topic = "with-kcat";
    let group = "g-with-kcat";
    broker.create_topic(topic, 2).await;
    let conn = broker.connection().await;
    for p in 0..2 {
        produce(&conn, topic, p, 0, 1, 20, Compression::None).await;
    }
    let ours = || async {
        let c = Consumer::new(
            member_config(&broker, group, "range", "ours")
                .enable_auto_commit(false)
                .build()
                .unwrap(),
        )
        .await
        .unwrap();
        c.subscribe([topic]).unwrap();
        c
    };
    // Ours reads everything and commits.
    let c = ours().await;
    let got = poll_n(&c, 40, Duration::from_secs(20)).await;
    assert_eq!(got.len(), 40);
    c.commit_sync().await.unwrap();
    c.close(Duration::from_secs(5)).await.unwrap();
    // kcat -G starts at our committed offsets and commits as it leaves.
    for p in 0..2 {
        produce(&conn, topic, p, 20, 1, 10, Compression::None).await;
    }
    let out = run(
        Command::new(kcat).args([
            "-b",
            &broker.bootstrap(),
            "-G",
            group,
            topic,
            "-X",
            "auto.offset.reset=earliest",
            "-X",
            "session.timeout.ms=6000",
            "-X",
            "heartbeat.interval.ms=500",
            "-f",
            "%p %o\\n",
            "-e",
            "-q",
        ]),
        b"",
    )
    .await;
    let read = kcat_offsets(&out);
    let want: BTreeMap<i32, Vec<i64>> = (0..2).map(|p| (p, (20..30).collect())).collect();
    assert_eq!(read, want, "kcat read: {out}");
    // Ours starts where kcat committed.
    for p in 0..2 {
        produce(&conn, topic, p, 30, 1, 5, Compression::None).await;
    }
    let c = ours().await;
    let got = poll_n(&c, 10, Duration::from_secs(20)).await;
    let mut offsets: Vec<(i32, i64)> = got.iter().map(|r| (r.partition, r.offset)).collect();
    offsets.sort_unstable();
    let want: Vec<(i32, i64)> = (0..2).flat_map(|p| (30..35).map(move |o| (p, o))).collect();
    assert_eq!(offsets, want);
    c.close(Duration::from_secs(5)).await.unwrap();
}
