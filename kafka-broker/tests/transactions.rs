//! Transactions end to end against the real `kafka-broker` process (loopback only), driven by
//! third-party clients: confluent-kafka (librdkafka), kafka-python and kafkajs, scripts in
//! `tests/transactions/`. Each script prints what its client saw as JSON; the checks are here.
//!
//! - commit, abort, commit: a read_committed consumer gets exactly the committed records, a
//!   read_uncommitted one all of them; ListOffsets latest read_committed is the last stable
//!   offset; the same after a SIGKILL and restart of the broker (the aborted transactions
//!   come back from the `.txnindex` files).
//! - an open transaction stays invisible to read_committed (and holds the last stable offset
//!   back) until it commits;
//! - a second producer with the same `transactional.id` fences the first, whose open
//!   transaction is aborted;
//! - a transaction left open by a SIGKILLed producer is aborted by the coordinator after its
//!   `transaction.timeout.ms`, and the last stable offset moves on;
//! - `send_offsets_to_transaction`: the group's offsets commit with the transaction, not when
//!   it aborts;
//! - kafka-python's and kafkajs's transactional producers, read back read_committed by
//!   another client;
//! - a broker killed between EndTxn and the markers (markers held back by
//!   `min.insync.replicas`): after the restart both a commit and an abort complete as decided;
//! - a cluster of 3: transactions over partitions led by every broker (markers sent to the
//!   other leaders with WriteTxnMarkers); the coordinator SIGKILLed, its successor (the new
//!   leader of the `__transaction_state` partition) serves the id.
//!
//! A missing peer skips with a notice unless `KAFKA_RS_REQUIRE_PEERS=1` (CI).
#![allow(clippy::unwrap_used)]

#[path = "crash/broker.rs"]
#[allow(dead_code)] // The harness of the crash tests; not all of it is used here.
mod broker;
#[path = "cluster/harness.rs"]
#[allow(dead_code)] // The cluster tests' harness; one test here uses it.
mod harness;
#[path = "common/peers.rs"]
#[allow(dead_code)]
mod peers;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use broker::Node;

/// Settings of every broker here: a small transaction log, timed-out transactions looked
/// for every half second.
const SETTINGS: &[&str] = &[
    "transaction.state.log.num.partitions=5",
    "offsets.topic.num.partitions=5",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms=500",
    "auto.create.topics.enable=false",
];

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/transactions")
        .join(name)
}

/// Runs a script to its end and returns the JSON of its last line; `None` when its peer is
/// missing (and that is allowed).
fn run(program: &str, script_name: &str, args: &[&str]) -> Option<Value> {
    let path = script(script_name);
    let mut all = vec![path.to_str().unwrap()];
    all.extend_from_slice(args);
    let out = peers::run(program, &all)?;
    Some(last_json(&out))
}

fn last_json(out: &str) -> Value {
    let line = out
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'))
        .unwrap_or_else(|| panic!("no JSON line in the script's output:\n{out}"));
    serde_json::from_str(line).unwrap_or_else(|e| panic!("bad JSON {line:?}: {e}"))
}

fn ck(args: &[&str]) -> Option<Value> {
    run("python3", "confluent_txn.py", args)
}

fn values(v: &Value) -> Vec<String> {
    v["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect()
}

fn strings(s: &[&str]) -> Vec<String> {
    s.iter().map(|s| (*s).to_owned()).collect()
}

struct Setup {
    _dir: tempfile::TempDir,
    node: Node,
    broker: broker::Broker,
}

impl Setup {
    async fn start(topics: &[&str], extra: &[&str]) -> Option<Self> {
        let dir = tempfile::tempdir().unwrap();
        let mut settings = SETTINGS.to_vec();
        settings.extend_from_slice(extra);
        let mut node = Node::new(dir.path().join("data"), dir.path().join("logs"), &settings);
        let broker = node.start(&[]).await;
        let mut args = vec!["create", broker.addr.as_str()];
        args.extend_from_slice(topics);
        ck(&args)?;
        Some(Self {
            _dir: dir,
            node,
            broker,
        })
    }

    fn bs(&self) -> String {
        self.broker.addr.clone()
    }

    async fn kill_and_restart(&mut self) {
        self.broker.kill();
        self.broker = self.node.start(&[]).await;
    }
}

/// A script that keeps running while the test goes on: started, its output read line by line.
struct Running {
    child: Child,
    lines: std::sync::mpsc::Receiver<String>,
}

impl Running {
    fn start(program: &str, script_name: &str, args: &[&str]) -> Self {
        let mut child = Command::new(program)
            .arg(script(script_name))
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
        let out = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Self { child, lines }
    }

    /// Waits for a line equal to `want`; panics naming what came instead.
    fn expect_line(&mut self, want: &str, within: Duration) -> Vec<String> {
        let deadline = Instant::now() + within;
        let mut seen = Vec::new();
        while Instant::now() < deadline {
            match self.lines.recv_timeout(Duration::from_millis(100)) {
                Ok(l) if l.trim() == want => return seen,
                Ok(l) => seen.push(l),
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
            }
        }
        panic!("no line {want:?} within {within:?}; output: {seen:?}");
    }

    fn say(&mut self, line: &str) {
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    fn finish(mut self, within: Duration) -> Value {
        let deadline = Instant::now() + within;
        let mut seen = Vec::new();
        loop {
            match self.lines.recv_timeout(Duration::from_millis(100)) {
                Ok(l) => seen.push(l),
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    assert!(Instant::now() < deadline, "script did not end: {seen:?}");
                }
            }
        }
        let status = self.child.wait().unwrap();
        assert!(status.success(), "script failed ({status}): {seen:?}");
        last_json(&seen.join("\n"))
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn confluent_available() -> bool {
    let ok = Command::new("python3")
        .args(["-c", "import confluent_kafka"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok || !peers::peers_required(),
        "confluent-kafka is required (KAFKA_RS_REQUIRE_PEERS=1) but cannot be imported"
    );
    if !ok {
        eprintln!("SKIPPED: confluent-kafka is not installed");
    }
    ok
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_committed_sees_only_committed_records_also_after_a_crash() {
    let Some(mut s) = Setup::start(&["t"], &[]).await else {
        return;
    };
    let bs = s.bs();
    ck(&["produce-txns", &bs, "t", "tid-basic"]).unwrap();
    let committed = strings(&["c1", "c2", "c3", "c4"]);
    let all = strings(&["c1", "c2", "c3", "a1", "a2", "c4"]);
    for round in ["before", "after a SIGKILL and restart"] {
        let bs = s.bs();
        let rc = ck(&["consume", &bs, "t", "read_committed", "4"]).unwrap();
        assert_eq!(values(&rc), committed, "read_committed {round}");
        let ru = ck(&["consume", &bs, "t", "read_uncommitted", "6"]).unwrap();
        assert_eq!(values(&ru), all, "read_uncommitted {round}");
        // 6 records and 3 markers: every transaction is over, the last stable offset is the
        // log end.
        let offsets = ck(&["list-offsets", &bs, "t"]).unwrap();
        assert_eq!(offsets["read_committed"], 9, "{round}: {offsets}");
        assert_eq!(offsets["read_uncommitted"], 9, "{round}: {offsets}");
        if round == "before" {
            s.kill_and_restart().await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_transaction_is_invisible_to_read_committed_until_it_commits() {
    let Some(s) = Setup::start(&["t"], &[]).await else {
        return;
    };
    let bs = s.bs();
    ck(&["produce-txns", &bs, "t", "tid-before"]).unwrap();
    let mut open = Running::start(
        "python3",
        "confluent_txn.py",
        &["open-txn", &bs, "t", "tid-open"],
    );
    open.expect_line("open", Duration::from_secs(30));
    let rc = ck(&["consume", &bs, "t", "read_committed", "4"]).unwrap();
    assert_eq!(values(&rc), strings(&["c1", "c2", "c3", "c4"]));
    let ru = ck(&["consume", &bs, "t", "read_uncommitted", "8"]).unwrap();
    assert_eq!(values(&ru).len(), 8, "{ru}");
    // The open transaction starts at offset 9: the last stable offset stays there.
    let offsets = ck(&["list-offsets", &bs, "t"]).unwrap();
    assert_eq!(offsets["read_committed"], 9, "{offsets}");
    assert_eq!(offsets["read_uncommitted"], 11, "{offsets}");
    open.say("commit");
    let done = open.finish(Duration::from_secs(30));
    assert_eq!(done["committed"], true);
    let rc = ck(&["consume", &bs, "t", "read_committed", "6"]).unwrap();
    assert_eq!(values(&rc), strings(&["c1", "c2", "c3", "c4", "o1", "o2"]));
    let offsets = ck(&["list-offsets", &bs, "t"]).unwrap();
    assert_eq!(offsets["read_committed"], 12, "{offsets}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_producer_of_the_transactional_id_fences_the_first() {
    let Some(s) = Setup::start(&["t"], &[]).await else {
        return;
    };
    let bs = s.bs();
    let out = ck(&["fence", &bs, "t", "tid-fence"]).unwrap();
    assert_eq!(out["second"], "committed", "{out}");
    let first = &out["first"];
    assert_eq!(
        first["fatal"], true,
        "the fenced producer's error is fatal: {out}"
    );
    let name = first["name"].as_str().unwrap();
    assert!(
        matches!(
            name,
            "_FENCED" | "PRODUCER_FENCED" | "INVALID_PRODUCER_EPOCH"
        ),
        "fenced error expected, got {name}"
    );
    // The fenced producer's open transaction (f1) was aborted; only s1 is committed.
    let rc = ck(&["consume", &bs, "t", "read_committed", "1"]).unwrap();
    assert_eq!(values(&rc), strings(&["s1"]));
    let ru = ck(&["consume", &bs, "t", "read_uncommitted", "2"]).unwrap();
    assert_eq!(values(&ru), strings(&["f1", "s1"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_producers_transaction_is_aborted_after_its_timeout() {
    let Some(s) = Setup::start(&["t"], &[]).await else {
        return;
    };
    let bs = s.bs();
    let mut hang = Running::start(
        "python3",
        "confluent_txn.py",
        &["hang", &bs, "t", "tid-hang", "2000"],
    );
    hang.expect_line("produced", Duration::from_secs(30));
    hang.child.kill().unwrap();
    let _ = hang.child.wait();
    // h1 at offset 0 is open: read_committed ends at 0 until the coordinator aborts it
    // (timeout 2 s, checked every 0.5 s), then at the log end past the abort marker.
    let deadline = Instant::now() + Duration::from_secs(30);
    let offsets = loop {
        let offsets = ck(&["list-offsets", &bs, "t"]).unwrap();
        if offsets["read_committed"] == 2 || Instant::now() > deadline {
            break offsets;
        }
        assert_eq!(offsets["read_committed"], 0, "{offsets}");
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    assert_eq!(
        offsets["read_committed"], 2,
        "not aborted in time: {offsets}"
    );
    assert_eq!(offsets["read_uncommitted"], 2, "{offsets}");
    // Another transaction after it is visible; the aborted h1 is not.
    ck(&["produce-txns", &bs, "t", "tid-after"]).unwrap();
    let rc = ck(&["consume", &bs, "t", "read_committed", "4"]).unwrap();
    assert_eq!(values(&rc), strings(&["c1", "c2", "c3", "c4"]));
    assert!(
        s.broker.log().contains("tid-hang"),
        "the broker says which transaction it aborted"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offsets_sent_to_a_transaction_commit_with_it_and_not_when_it_aborts() {
    let Some(s) = Setup::start(&["in", "out"], &[]).await else {
        return;
    };
    let bs = s.bs();
    ck(&["produce-plain", &bs, "in", "6"]).unwrap();
    let out = ck(&["send-offsets", &bs, "in", "out", "eos-group"]).unwrap();
    assert_eq!(
        out["commit"]["consumed"],
        serde_json::json!(["v0", "v1", "v2"]),
        "{out}"
    );
    assert_eq!(out["commit"]["committed"], 3, "{out}");
    assert_eq!(
        out["abort"]["consumed"],
        serde_json::json!(["v3", "v4", "v5"]),
        "{out}"
    );
    assert_eq!(
        out["abort"]["committed"], 3,
        "aborted offsets were committed: {out}"
    );
    let rc = ck(&["consume", &bs, "out", "read_committed", "3"]).unwrap();
    assert_eq!(values(&rc), strings(&["v0-out", "v1-out", "v2-out"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafka_python_transactions_read_back_by_librdkafka() {
    if !confluent_available() {
        return;
    }
    let Some(s) = Setup::start(&["t"], &[]).await else {
        return;
    };
    let bs = s.bs();
    let Some(done) = run(
        "python3",
        "kafka_python_txn.py",
        &["produce-txns", &bs, "t", "tid-kp"],
    ) else {
        return;
    };
    assert_eq!(done["done"], true);
    let rc = ck(&["consume", &bs, "t", "read_committed", "4"]).unwrap();
    assert_eq!(values(&rc), strings(&["c1", "c2", "c3", "c4"]));
    let kp = run(
        "python3",
        "kafka_python_txn.py",
        &["consume", &bs, "t", "read_committed", "4"],
    )
    .unwrap();
    assert_eq!(values(&kp), strings(&["c1", "c2", "c3", "c4"]));
    let kp = run(
        "python3",
        "kafka_python_txn.py",
        &["consume", &bs, "t", "read_uncommitted", "6"],
    )
    .unwrap();
    assert_eq!(values(&kp), strings(&["c1", "c2", "c3", "a1", "a2", "c4"]));
}

/// Where kafkajs is installed (`.ci/run` puts it in `target/peers/kafkajs`), for `NODE_PATH`.
fn kafkajs_path() -> Option<String> {
    let path = std::env::var("KAFKA_RS_KAFKAJS_PATH").ok();
    let found = path
        .as_ref()
        .is_some_and(|p| Path::new(p).join("kafkajs").is_dir());
    assert!(
        found || !peers::peers_required(),
        "kafkajs is required (KAFKA_RS_REQUIRE_PEERS=1): set KAFKA_RS_KAFKAJS_PATH to the \
         node_modules directory holding it (now {path:?})"
    );
    if !found {
        eprintln!("SKIPPED: kafkajs not found (KAFKA_RS_KAFKAJS_PATH={path:?})");
    }
    found.then(|| path.unwrap_or_default())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafkajs_transactions_read_back_by_kafkajs_and_librdkafka() {
    let Some(node_path) = kafkajs_path() else {
        return;
    };
    if !confluent_available() {
        return;
    }
    let Some(s) = Setup::start(&["t"], &[]).await else {
        return;
    };
    let bs = s.bs();
    let js = |args: &[&str]| -> Value {
        let out = Command::new("node")
            .arg(script("kafkajs_txn.js"))
            .args(args)
            .env("NODE_PATH", &node_path)
            .env("KAFKAJS_NO_PARTITIONER_WARNING", "1")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "kafkajs {args:?} failed ({}):\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        last_json(&stdout)
    };
    let done = js(&["produce-txns", &bs, "t", "tid-js"]);
    assert_eq!(done["done"], true);
    let rc = js(&["consume", &bs, "t", "4"]);
    assert_eq!(values(&rc), strings(&["c1", "c2", "c3", "c4"]));
    let rc = ck(&["consume", &bs, "t", "read_committed", "4"]).unwrap();
    assert_eq!(values(&rc), strings(&["c1", "c2", "c3", "c4"]));
    let ru = ck(&["consume", &bs, "t", "read_uncommitted", "6"]).unwrap();
    assert_eq!(values(&ru), strings(&["c1", "c2", "c3", "a1", "a2", "c4"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_killed_between_end_txn_and_the_markers_completes_both_ends_after_restart() {
    let Some(mut s) = Setup::start(&["t"], &[]).await else {
        return;
    };
    let bs = s.bs();
    let mut commit = Running::start(
        "python3",
        "confluent_txn.py",
        &["prepare", &bs, "t", "tid-commit", "commit"],
    );
    commit.expect_line("produced", Duration::from_secs(30));
    let mut abort = Running::start(
        "python3",
        "confluent_txn.py",
        &["prepare", &bs, "t", "tid-abort", "abort"],
    );
    abort.expect_line("produced", Duration::from_secs(30));
    // With one replica and min.insync.replicas=2 no marker can be written to t (markers go
    // with acks=all): both ends are decided and recorded, their markers keep failing.
    ck(&["set-config", &bs, "t", "min.insync.replicas", "2"]).unwrap();
    commit.say("end");
    commit.expect_line("ended", Duration::from_secs(30));
    abort.say("end");
    abort.expect_line("ended", Duration::from_secs(30));
    let offsets = ck(&["list-offsets", &bs, "t"]).unwrap();
    assert_eq!(
        offsets["read_committed"], 0,
        "a marker was written: {offsets}"
    );
    assert_eq!(offsets["read_uncommitted"], 4, "{offsets}");
    drop(commit);
    drop(abort);
    s.kill_and_restart().await;
    let bs = s.bs();
    let offsets = ck(&["list-offsets", &bs, "t"]).unwrap();
    assert_eq!(offsets["read_committed"], 0, "{offsets}");
    // Once markers can be written, the restarted coordinator writes the ones it had decided
    // (from PrepareCommit / PrepareAbort in __transaction_state).
    ck(&["set-config", &bs, "t", "min.insync.replicas", "1"]).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let offsets = loop {
        let offsets = ck(&["list-offsets", &bs, "t"]).unwrap();
        if offsets["read_committed"] == 6 || Instant::now() > deadline {
            break offsets;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
    };
    assert_eq!(
        offsets["read_committed"], 6,
        "markers not written: {offsets}"
    );
    let rc = ck(&["consume", &bs, "t", "read_committed", "2"]).unwrap();
    assert_eq!(values(&rc), strings(&["p1", "p2"]));
    let ru = ck(&["consume", &bs, "t", "read_uncommitted", "4"]).unwrap();
    let mut all = values(&ru);
    all.sort();
    assert_eq!(all, strings(&["p1", "p2", "q1", "q2"]));
}

/// The coordinator of a transactional id, by FindCoordinator through `addr`.
async fn transaction_coordinator(addr: &str, tid: &str) -> Option<i32> {
    use kafka_protocol::messages::{FindCoordinatorRequest, RequestBody, ResponseBody};
    let conn = kafka_net::Connection::connect(addr, Default::default())
        .await
        .ok()?;
    let req = FindCoordinatorRequest {
        key: kafka_protocol::KStr::from(tid.to_owned()),
        key_type: 1,
        ..Default::default()
    };
    match conn.request_at(RequestBody::FindCoordinator(req), 3).await {
        Ok(ResponseBody::FindCoordinator(r)) if r.error_code == 0 => Some(r.node_id),
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transactions_across_a_cluster_survive_the_coordinators_death() {
    use harness::{Cluster, Role};
    if !confluent_available() {
        return;
    }
    let mut c = Cluster::new(
        &[Role::Combined; 3],
        &[
            "broker.heartbeat.interval.ms=500",
            "broker.session.timeout.ms=3000",
            "transaction.state.log.num.partitions=3",
            "offsets.topic.num.partitions=3",
        ],
    );
    c.start_all();
    harness::until_brokers(&mut c, &[1, 2, 3]).await;
    let bs = c.bootstrap();
    ck(&["create-spread", &bs, "ct", "3", "3"]).unwrap();
    let want = |runs: usize| {
        let mut v: Vec<String> = (0..6)
            .map(|i| format!("s{i}"))
            .chain((0..3).map(|i| format!("d{i}")))
            .collect();
        v = v.iter().cycle().take(v.len() * runs).cloned().collect();
        v.sort();
        v
    };
    ck(&["produce-spread", &bs, "ct", "tid-cluster", "3"]).unwrap();
    let rc = ck(&["consume-all", &bs, "ct", "read_committed", "9"]).unwrap();
    assert_eq!(values(&rc), want(1));
    // The coordinator dies; the new leader of its __transaction_state partition loads the
    // id and serves the next producer of it.
    let addr = c.addr(1);
    let coordinator = c
        .eventually(
            "the coordinator of tid-cluster",
            Duration::from_secs(10),
            || {
                let addr = addr.clone();
                async move { transaction_coordinator(&addr, "tid-cluster").await }
            },
        )
        .await;
    c.kill(coordinator);
    let survivor = [1, 2, 3].into_iter().find(|&i| i != coordinator).unwrap();
    let bs = c.addr(survivor);
    ck(&["produce-spread", &bs, "ct", "tid-cluster", "3"]).unwrap();
    let rc = ck(&["consume-all", &bs, "ct", "read_committed", "18"]).unwrap();
    assert_eq!(values(&rc), want(2));
    let ru = ck(&["consume-all", &bs, "ct", "read_uncommitted", "24"]).unwrap();
    assert_eq!(values(&ru).len(), 24, "{ru}");
    c.start(coordinator);
}
