//! Keyed record placement against independent implementations: librdkafka (through
//! confluent-kafka) and kafka-python produce a fixed set of keys to an 8-partition topic of
//! our broker (in this process, 127.0.0.1:0, temporary data directory), and every partition
//! they report must be the one our partitioners compute for that key.
//!
//! - librdkafka `murmur2_random` (the Java-compatible partitioner) and kafka-python's default
//!   (murmur2, as Java's): [`partition_for_key`] and [`DefaultPartitioner`], for about 2000
//!   keys each (text, binary of every length up to 64, empty, non-ASCII).
//! - librdkafka `murmur2`, `consistent` (CRC-32) and `fnv1a`, for a subset of the keys and for
//!   null keys: the partitioners [`by_name`] gives for those names.
//!
//! The script is `tests/peers/partitioner_peers.py`. A missing peer (python3, a python
//! module) skips its part with a notice, unless `KAFKA_RS_REQUIRE_PEERS=1`, where it fails.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use kafka_broker::BrokerConfig;
use kafka_producer::partitioner::{
    DefaultPartitioner, Partitioner, TopicPartitions, by_name, partition_for_key,
};

const PARTITIONS: i32 = 8;
/// Records with distinct keys each full run produces.
const KEYS: usize = 2000;
/// Time limit of one script run.
const STEP_TIMEOUT: Duration = Duration::from_secs(60);
/// The script's own deadline, below the step limit so that it reports instead of being killed.
const SCRIPT_TIMEOUT_SECS: u32 = 30;
/// Exit code of the script when its client library is missing.
const EXIT_MISSING_PEER: i32 = 3;

fn peers_required() -> bool {
    std::env::var("KAFKA_RS_REQUIRE_PEERS").is_ok_and(|v| v == "1")
}

/// The python interpreter itself (`python3` may be a slow wrapper script, e.g. pyenv's shim).
fn python() -> Option<PathBuf> {
    let out = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .ok()?;
    let path = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    (out.status.success() && !path.is_empty()).then(|| PathBuf::from(path))
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/peers/partitioner_peers.py")
}

/// A broker on 127.0.0.1:0 in a thread of its own, auto-creating topics with
/// [`PARTITIONS`] partitions; stops when dropped.
struct TestBroker {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    _dir: tempfile::TempDir,
}

impl TestBroker {
    fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let config = BrokerConfig {
            server: kafka_broker::config::ServerConfig {
                data_dir: dir.path().to_path_buf(),
                ..Default::default()
            },
            topics: kafka_broker::config::TopicsConfig {
                num_partitions: PARTITIONS,
                ..Default::default()
            },
            ..Default::default()
        };
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                addr_tx.send(listener.local_addr().unwrap()).unwrap();
                kafka_broker::run(listener, config, async {
                    let _ = stop_rx.await;
                })
                .await
                .unwrap();
            });
        });
        let addr = addr_rx.recv_timeout(Duration::from_secs(30)).unwrap();
        Self {
            addr,
            stop: Some(stop_tx),
            thread: Some(thread),
            _dir: dir,
        }
    }
}

impl Drop for TestBroker {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A peer client the script drives, and the partitioners it must report with at least how
/// many records each.
struct Client {
    name: &'static str,
    expected: &'static [(&'static str, usize)],
}

/// How one script run ended.
enum Run {
    /// Exit 0, with its output.
    Done(String),
    /// The client library (or python itself) is missing.
    MissingPeer(String),
}

/// Runs the script for one client with a time limit; panics when it fails.
fn run_client(python: &Path, addr: SocketAddr, client: &str, out_dir: &Path) -> Run {
    let log_path = out_dir.join(format!("{client}.log"));
    let log = std::fs::File::create(&log_path).unwrap();
    let spawned = Command::new(python)
        .arg(script())
        .arg(client)
        .args(["--bootstrap", &addr.to_string()])
        .args(["--topic", &format!("placement-{client}")])
        .args(["--partitions", &PARTITIONS.to_string()])
        .args(["--count", &KEYS.to_string()])
        .args(["--timeout", &SCRIPT_TIMEOUT_SECS.to_string()])
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONUNBUFFERED", "1")
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn();
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => return Run::MissingPeer(format!("cannot run python3: {e}")),
    };
    let deadline = Instant::now() + STEP_TIMEOUT;
    let code = loop {
        match child.try_wait().unwrap() {
            Some(status) => break status.code(),
            None if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            None => std::thread::sleep(Duration::from_millis(25)),
        }
    };
    let output = std::fs::read_to_string(&log_path).unwrap_or_default();
    match code {
        Some(0) => Run::Done(output),
        Some(EXIT_MISSING_PEER) => Run::MissingPeer(
            output
                .lines()
                .find_map(|l| l.strip_prefix("MISSING PEER: "))
                .unwrap_or("a peer is missing")
                .to_owned(),
        ),
        other => {
            let tail: Vec<&str> = output.lines().rev().take(30).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            panic!(
                "{client} script {} (exit {other:?}); last lines:\n{}",
                if other.is_none() {
                    "was killed after the time limit"
                } else {
                    "failed"
                },
                tail.join("\n")
            );
        }
    }
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// One record as the peer placed it.
struct Placed {
    partitioner: String,
    key: Option<Vec<u8>>,
    partition: i32,
}

/// The `PLACED` lines of a run, and the record count of each `DONE` line.
fn parse(output: &str) -> (Vec<Placed>, BTreeMap<String, usize>) {
    let mut placed = Vec::new();
    let mut done = BTreeMap::new();
    for line in output.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        match fields.as_slice() {
            ["PLACED", name, key, partition] => {
                let key = match *key {
                    "-" => None,
                    k => Some(
                        k.strip_prefix('x')
                            .and_then(unhex)
                            .unwrap_or_else(|| panic!("bad key field in {line:?}")),
                    ),
                };
                placed.push(Placed {
                    partitioner: (*name).to_owned(),
                    key,
                    partition: partition.parse().unwrap(),
                });
            }
            ["DONE", name, count] => {
                done.insert((*name).to_owned(), count.parse().unwrap());
            }
            _ => {}
        }
    }
    (placed, done)
}

/// Checks every placement of a run against ours; returns the number of records checked.
fn check(client: &str, output: &str, expected_runs: &[(&str, usize)]) -> usize {
    let (placed, done) = parse(output);
    for (name, min) in expected_runs {
        let got = done.get(*name).copied().unwrap_or(0);
        assert!(
            got >= *min,
            "{client}: {got} records placed by {name}, expected at least {min}\n{output}"
        );
    }
    let counted: usize = done.values().sum();
    assert_eq!(
        counted,
        placed.len(),
        "{client}: DONE counts and PLACED lines disagree"
    );

    let all: Vec<i32> = (0..PARTITIONS).collect();
    let topic = TopicPartitions {
        topic: "placement",
        count: PARTITIONS,
        available: &all,
    };
    let default = DefaultPartitioner::new();
    let mut mismatches = Vec::new();
    let mut keyed_partitions = BTreeSet::new();
    let mut keys_seen = BTreeSet::new();
    for p in &placed {
        let key = p.key.as_deref();
        let ours = match p.partitioner.as_str() {
            // librdkafka's Java-compatible partitioner and kafka-python's default: the
            // Java producer's placement of keyed records.
            "murmur2_random" | "kafka-python-default" => {
                let key =
                    key.unwrap_or_else(|| panic!("{client}: a null key in {}", p.partitioner));
                keys_seen.insert(key.to_vec());
                keyed_partitions.insert(p.partition);
                let direct = partition_for_key(key, PARTITIONS);
                assert_eq!(
                    default.partition(&topic, Some(key), Some(b"v")),
                    Some(direct),
                    "DefaultPartitioner and partition_for_key disagree"
                );
                Some(direct)
            }
            name @ ("murmur2" | "consistent" | "fnv1a") => {
                by_name(name).unwrap().partition(&topic, key, Some(b"v"))
            }
            other => panic!("{client}: unexpected partitioner {other}"),
        };
        if ours != Some(p.partition) {
            mismatches.push(format!(
                "{} key {:?}: peer {}, ours {:?}",
                p.partitioner,
                key.map(String::from_utf8_lossy),
                p.partition,
                ours
            ));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{client}: {} of {} placements differ, first ones:\n{}",
        mismatches.len(),
        placed.len(),
        mismatches
            .iter()
            .take(10)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    // The keys spread over the whole topic, and the empty key was among them.
    assert_eq!(
        keyed_partitions.len(),
        PARTITIONS as usize,
        "{client}: {keyed_partitions:?}"
    );
    assert!(
        keys_seen.contains(&Vec::new()),
        "{client}: the empty key was not produced"
    );
    placed.len()
}

#[test]
fn keyed_placement_matches_librdkafka_and_kafka_python() {
    let Some(python) = python() else {
        assert!(
            !peers_required(),
            "KAFKA_RS_REQUIRE_PEERS=1 but python3 cannot run"
        );
        eprintln!("NOTICE: skipping the partitioner peer test: python3 cannot run");
        return;
    };
    let broker = TestBroker::start();
    let out_dir = tempfile::tempdir().unwrap();
    let clients = [
        Client {
            name: "confluent",
            expected: &[
                ("murmur2_random", KEYS),
                ("murmur2", 100),
                ("consistent", 100),
                ("fnv1a", 100),
            ],
        },
        Client {
            name: "kafka-python",
            expected: &[("kafka-python-default", KEYS)],
        },
    ];
    let started = Instant::now();
    // Both clients at once: each mostly waits on its library and the broker.
    let runs: Vec<(&Client, Run)> = std::thread::scope(|scope| {
        let handles: Vec<_> = clients
            .iter()
            .map(|client| {
                let (python, out_dir) = (&python, out_dir.path());
                let addr = broker.addr;
                scope.spawn(move || (client, run_client(python, addr, client.name, out_dir)))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut checked = 0;
    for (client, run) in runs {
        let Client {
            name: client,
            expected,
        } = *client;
        match run {
            Run::Done(output) => checked += check(client, &output, expected),
            Run::MissingPeer(why) => {
                assert!(!peers_required(), "KAFKA_RS_REQUIRE_PEERS=1 but {why}");
                eprintln!("NOTICE: skipping the {client} placement check: {why}");
            }
        }
    }
    eprintln!(
        "checked {checked} placements against the peers in {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

/// The comparison itself: a placement that differs from ours fails the test.
#[test]
#[should_panic(expected = "1 of 2 placements differ")]
fn a_wrong_placement_is_reported() {
    // 275646681 (the empty key) % 8 = 1.
    let wrong = (partition_for_key(b"foobar", PARTITIONS) + 1) % PARTITIONS;
    let output = format!(
        "PLACED murmur2_random x 1\nPLACED murmur2_random x{} {wrong}\nDONE murmur2_random 2\n",
        "foobar"
            .bytes()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    );
    check("fake", &output, &[("murmur2_random", 2)]);
}

#[test]
fn placements_are_parsed() {
    let (placed, done) = parse("noise\nPLACED murmur2 - 1\nPLACED fnv1a x00ff 3\nDONE fnv1a 1\n");
    assert_eq!(placed.len(), 2);
    assert_eq!(placed[0].key, None);
    assert_eq!(placed[1].key.as_deref(), Some(&[0x00, 0xff][..]));
    assert_eq!(placed[1].partition, 3);
    assert_eq!(done.get("fnv1a"), Some(&1));
    assert_eq!(unhex("0g"), None);
    assert_eq!(unhex("abc"), None);
}
