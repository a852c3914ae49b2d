//! KIP-848 consumer groups with a real peer: confluent-kafka (librdkafka 2.16) consumers with
//! `group.protocol=consumer` against a broker started in this process (the script and its
//! checks: `tests/consumer_protocol/confluent_consumer_protocol.py`, one scenario and one
//! broker per test: `share`, three members sharing a topic; `regex`, a subscription by regular
//! expression that picks up a topic created later), and the Java consumer 4.4 with the same
//! protocol (`kafka-peers/java/src/peers/clients/ConsumerProtocolChecks.java`).
//!
//! A missing peer (python3, confluent-kafka, a JVM with Kafka's jars) skips the test with a notice, unless
//! `KAFKA_RS_REQUIRE_PEERS=1`, where it fails.
#![allow(clippy::unwrap_used)]

#[path = "common/in_process.rs"]
#[allow(dead_code)]
mod in_process;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use in_process::InProcessBroker;
use kafka_peers::Jvm;

/// Exit code of a script whose peer is missing.
const EXIT_MISSING_PEER: i32 = 3;
/// The script's own deadline, and ours a little later.
const SCRIPT_TIMEOUT_SECS: u64 = 120;

fn peers_required() -> bool {
    std::env::var("KAFKA_RS_REQUIRE_PEERS").is_ok_and(|v| v == "1")
}

fn skip(why: &str) {
    assert!(
        !peers_required(),
        "peer missing and KAFKA_RS_REQUIRE_PEERS=1: {why}"
    );
    eprintln!("SKIPPED: {why}");
}

#[test]
fn confluent_consumers_share_partitions_with_the_consumer_protocol() {
    run_scenario("share");
}

#[test]
fn confluent_regex_subscription_picks_up_a_topic_created_later() {
    run_scenario("regex");
}

/// The Java consumer 4.4 with `group.protocol=consumer`: two members on 4 partitions own 2
/// each, every record is read once and committed with commitSync, the second closes and the
/// first owns all 4; the AdminClient describes the group as a CONSUMER group.
#[test]
fn java_consumers_share_partitions_with_the_consumer_protocol() {
    let Some(jvm) = kafka_peers::require(Jvm::find().and_then(Jvm::with_programs)) else {
        return;
    };
    let broker = InProcessBroker::start(&[
        ("group.consumer.min.heartbeat.interval.ms", "100"),
        ("group.consumer.heartbeat.interval.ms", "500"),
        ("offsets.topic.num.partitions", "3"),
    ]);
    let bootstrap = broker.bootstrap();
    let out = jvm
        .run(
            "peers.clients.ConsumerProtocolChecks",
            &[bootstrap.as_str(), "all"],
            None,
            Duration::from_secs(SCRIPT_TIMEOUT_SECS),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    eprintln!("{}", out.stderr);
    assert!(
        out.success(),
        "ConsumerProtocolChecks failed:\n{}\n--- stderr ---\n{}",
        out.stdout,
        out.stderr
    );
    let mut got = BTreeMap::new();
    for line in out.stdout.lines() {
        if let Some((name, value)) = line.strip_prefix("CHECK ").and_then(|l| l.split_once(' ')) {
            assert!(
                got.insert(name.to_owned(), value.to_owned()).is_none(),
                "CHECK {name} printed twice:\n{}",
                out.stdout
            );
        }
    }
    let expected = [
        ("scenario.share", "ok"),
        ("share.join.owned", "2,2"),
        // Incremental: only the 2 partitions that move are revoked from the first member.
        ("share.join.revoked_from_first", "2"),
        // The described type (GroupType's name), members, partitions assigned in all.
        ("share.describe", "Consumer 2 4"),
        ("share.leave.owned", "4"),
        ("share.records", "600"),
        ("share.duplicates", "0"),
        ("share.committed", "[150, 150, 150, 150]"),
    ];
    let wrong: Vec<String> = expected
        .iter()
        .filter(|(k, v)| got.get(*k).map(String::as_str) != Some(*v))
        .map(|(k, v)| format!("{k}: expected {v:?}, got {:?}", got.get(*k)))
        .collect();
    assert!(
        wrong.is_empty(),
        "{}\nall checks: {got:#?}",
        wrong.join("\n")
    );
}

/// Starts a broker and runs the script's `scenario` against it.
fn run_scenario(scenario: &str) {
    // Heartbeats every 500 ms so that the reconciliation steps follow each other quickly.
    let broker = InProcessBroker::start(&[
        ("group.consumer.min.heartbeat.interval.ms", "100"),
        ("group.consumer.heartbeat.interval.ms", "500"),
    ]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/consumer_protocol/confluent_consumer_protocol.py");
    let child = Command::new("python3")
        .arg(&script)
        .args(["--bootstrap", &broker.bootstrap()])
        .args(["--timeout", &SCRIPT_TIMEOUT_SECS.to_string()])
        .args(["--scenario", scenario])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => return skip(&format!("python3 cannot be run: {e}")),
    };
    let limit = Duration::from_secs(SCRIPT_TIMEOUT_SECS + 30);
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the script ran past {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let mut out = String::new();
    let mut err = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut out)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    if status.code() == Some(EXIT_MISSING_PEER) {
        return skip(out.trim());
    }
    assert!(
        status.success(),
        "script failed ({status}):\n{out}\n--- stderr ---\n{err}"
    );
    assert!(out.contains("OK"), "{out}");
    eprintln!("{out}");
}
