//! A Kafka Streams application (Apache Kafka 4.4.0) with exactly-once v2 against a cluster of
//! three `kafka-broker` processes, one of them SIGKILLed and restarted while it runs.
//!
//! The application (kafka-peers/java/src/peers/streams/WordCount.java) counts words: it
//! regroups lines by word through a repartition topic and counts into a state store backed by
//! a changelog topic, writing every new count to the output topic, all in transactions. Half
//! the input is written before it starts; the rest arrives while a broker is SIGKILLed and
//! restarted and then the application itself is SIGKILLed mid-transaction and replaced by a
//! new instance with an empty state directory (restored from the changelog). Read with
//! read_committed, the output must hold, for every word, exactly one update per occurrence
//! in the input, ending at the word's total: nothing lost, nothing counted twice, no update
//! of an aborted transaction visible.
#![allow(clippy::unwrap_used)]

#[path = "cluster/harness.rs"]
#[allow(dead_code)]
mod harness;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use harness::{Cluster, Role, until_brokers};
use kafka_peers::{Jvm, require};

const FAST: &[&str] = &[
    "broker.heartbeat.interval.ms=500",
    "broker.session.timeout.ms=3000",
    "group.initial.rebalance.delay.ms=0",
    "transaction.state.log.replication.factor=3",
    "transaction.state.log.min.isr=2",
    "offsets.topic.replication.factor=3",
];
const LINES: u64 = 6000;
const STEP_TIMEOUT: Duration = Duration::from_secs(120);

/// Line i of the input, as WordCount.line builds it.
fn words(i: u64) -> [String; 3] {
    [
        format!("a{}", i % 7),
        format!("b{}", i % 11),
        format!("c{}", i % 13),
    ]
}

/// The application, running: its output lines arrive on a channel.
struct App {
    child: Child,
    lines: mpsc::Receiver<String>,
}

impl App {
    fn start(jvm: &Jvm, args: &[&str]) -> App {
        let mut child = jvm
            .command("peers.streams.WordCount")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                eprintln!("streams: {line}");
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        App { child, lines }
    }

    /// Waits for a line starting with `prefix`.
    fn until(&self, prefix: &str, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match self.lines.recv_timeout(left) {
                Ok(line) if line.starts_with(prefix) => return,
                Ok(_) => {}
                Err(_) => break,
            }
        }
        panic!("the Streams application did not print {prefix:?} within {timeout:?}");
    }

    /// Closes its stdin (it closes the application) and waits for it to exit. (Dropping it
    /// instead kills it with SIGKILL.)
    fn stop(mut self) {
        drop(self.child.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = self.child.try_wait() {
                assert!(
                    status.success(),
                    "the Streams application exited with {status}"
                );
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        panic!("the Streams application did not stop within 60 s");
    }
}

impl Drop for App {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Reads the output (read_committed) once: word -> (last count, number of updates), and any
/// count that went down. How many more updates read_uncommitted sees (those of aborted
/// transactions) is printed: whether the kill caught a transaction with output in it is a
/// matter of timing.
fn read_counts(jvm: &Jvm, bootstrap: &str) -> (BTreeMap<String, (u64, u64)>, Vec<String>) {
    let out = jvm
        .run(
            "peers.streams.WordCount",
            &["read", bootstrap, "counts", "3000"],
            None,
            STEP_TIMEOUT,
        )
        .unwrap()
        .stdout;
    let mut counts = BTreeMap::new();
    let mut regressions = Vec::new();
    for line in out.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        match fields.as_slice() {
            ["COUNT", word, last, updates] => {
                counts.insert(
                    (*word).to_owned(),
                    (last.parse().unwrap(), updates.parse().unwrap()),
                );
            }
            ["REGRESSION", ..] => regressions.push(line.to_owned()),
            ["UNCOMMITTED_EXTRA", n] => eprintln!("updates of aborted transactions: {n}"),
            _ => {}
        }
    }
    (counts, regressions)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exactly_once_word_count_survives_a_broker_and_an_application_sigkill() {
    let Some(jvm) = require(Jvm::find()) else {
        return;
    };
    let jvm = jvm.with_programs().unwrap();
    let mut c = Cluster::new(&[Role::Combined; 3], FAST);
    c.start_all();
    until_brokers(&mut c, &[1, 2, 3]).await;
    let bootstrap = c.bootstrap();
    let state = tempfile::tempdir().unwrap();
    let main = "peers.streams.WordCount";

    jvm.run(
        main,
        &["setup", &bootstrap, "lines", "counts", "6", "3"],
        None,
        STEP_TIMEOUT,
    )
    .unwrap();
    let half = (LINES / 2).to_string();
    jvm.run(
        main,
        &["produce", &bootstrap, "lines", "0", &half],
        None,
        STEP_TIMEOUT,
    )
    .unwrap();

    let run_args = |state: &Path| -> Vec<String> {
        ["run", &bootstrap, "wordcount", "lines", "counts"]
            .iter()
            .map(|s| (*s).to_owned())
            .chain([state.display().to_string()])
            .collect()
    };
    let start_app = |state: &Path| {
        let args = run_args(state);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let app = App::start(&jvm, &args);
        app.until("STATE RUNNING", STEP_TIMEOUT);
        app
    };
    let app = start_app(state.path());
    // The second half arrives at a steady pace (about 10 s) while the application works
    // through it: a broker is SIGKILLed and restarted in the middle, then the application
    // itself is SIGKILLed mid-transaction and replaced by a new instance with an empty state
    // directory (its store restored from the changelog; the open transactions of the killed
    // one aborted when the new one takes over its transactional ids).
    let second = {
        let (jvm, bootstrap, half) = (jvm.clone(), bootstrap.clone(), half.clone());
        std::thread::spawn(move || {
            jvm.run(
                "peers.streams.WordCount",
                &["produce", &bootstrap, "lines", &half, &half, "300"],
                None,
                STEP_TIMEOUT,
            )
        })
    };
    tokio::time::sleep(Duration::from_secs(2)).await;
    c.kill(2);
    tokio::time::sleep(Duration::from_secs(3)).await;
    c.start(2);
    until_brokers(&mut c, &[1, 2, 3]).await;
    drop(app);
    let fresh_state = tempfile::tempdir().unwrap();
    let app = start_app(fresh_state.path());
    second.join().unwrap().unwrap();

    let mut expected: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for i in 0..LINES {
        for w in words(i) {
            let e = expected.entry(w).or_default();
            e.0 += 1;
            e.1 += 1;
        }
    }
    // The application catches up in its own time: read until the counts are complete.
    let deadline = Instant::now() + Duration::from_secs(120);
    let (mut counts, mut regressions) = read_counts(&jvm, &bootstrap);
    while counts != expected && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_secs(2)).await;
        (counts, regressions) = read_counts(&jvm, &bootstrap);
    }
    app.stop();
    assert!(regressions.is_empty(), "{regressions:?}");
    assert_eq!(
        counts, expected,
        "word -> (last count, updates) read_committed from the output"
    );
}
