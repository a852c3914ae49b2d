//! KIP-848 consumer groups with a real peer: confluent-kafka (librdkafka 2.16) consumers with
//! `group.protocol=consumer` against a broker started in this process (the script and its
//! checks: `tests/consumer_protocol/confluent_consumer_protocol.py`, one scenario and one
//! broker per test: `share`, three members sharing a topic; `regex`, a subscription by regular
//! expression that picks up a topic created later), and the Java consumer 4.4 with the same
//! protocol (`kafka-peers/java/src/peers/clients/ConsumerProtocolChecks.java`); in a cluster
//! of 3 real broker processes, the group's coordinator SIGKILLed under two confluent-kafka
//! members (`failover`).
//!
//! A missing peer (python3, confluent-kafka, a JVM with Kafka's jars) skips the test with a notice, unless
//! `KAFKA_RS_REQUIRE_PEERS=1`, where it fails.
#![allow(clippy::unwrap_used)]

#[path = "cluster/harness.rs"]
#[allow(dead_code)]
mod harness;
#[path = "common/in_process.rs"]
#[allow(dead_code)]
mod in_process;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use harness::{Cluster, Role};
use in_process::InProcessBroker;
use kafka_peers::Jvm;
use kafka_protocol::KStr;
use kafka_protocol::messages::consumer_group_describe_response::Assignment;
use kafka_protocol::messages::{ConsumerGroupDescribeRequest, RequestBody, ResponseBody};

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

/// A group as ConsumerGroupDescribe shows it: state, group epoch, assignment epoch, and per
/// member id its epoch, assignment and target assignment (topic, partitions sorted).
type GroupSummary = (
    String,
    i32,
    i32,
    BTreeMap<String, (i32, Vec<(String, i32)>, Vec<(String, i32)>)>,
);

fn partitions_of(a: &Assignment) -> Vec<(String, i32)> {
    let mut out: Vec<(String, i32)> = a
        .topic_partitions
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| (t.topic_name.to_string(), *p)))
        .collect();
    out.sort();
    out
}

/// ConsumerGroupDescribe v0 of `group` at `addr`: `None` unless the broker answers without
/// error (it is not the coordinator, it is still loading the group, it is down).
async fn describe_group(addr: &str, group: &str) -> Option<GroupSummary> {
    let body = RequestBody::ConsumerGroupDescribe(ConsumerGroupDescribeRequest {
        group_ids: vec![KStr::from(group.to_owned())],
        ..Default::default()
    });
    let Some(ResponseBody::ConsumerGroupDescribe(r)) = harness::request(addr, body, 0).await else {
        return None;
    };
    let g = r.groups.first()?;
    if g.error_code != 0 {
        return None;
    }
    let members = g
        .members
        .iter()
        .map(|m| {
            (
                m.member_id.to_string(),
                (
                    m.member_epoch,
                    partitions_of(&m.assignment),
                    partitions_of(&m.target_assignment),
                ),
            )
        })
        .collect();
    Some((
        g.group_state.to_string(),
        g.group_epoch,
        g.assignment_epoch,
        members,
    ))
}

/// Three combined nodes; two confluent-kafka members of a consumer group read a topic
/// replicated 3 times and commit; the group's coordinator is SIGKILLed. The leader of the
/// group's `__consumer_offsets` partition moves to another node, which resumes the group from
/// its records: ConsumerGroupDescribe there shows the same members with the same member
/// epochs, group epoch and assignment as the old coordinator did before the kill, and the
/// members (same member ids, same partitions) go on reading without reading a committed
/// record again (checked in the script).
#[test]
fn confluent_group_resumes_on_a_new_coordinator_after_a_sigkill() {
    const GROUP: &str = "kip848-failover";
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut c = Cluster::new(
        &[Role::Combined; 3],
        &[
            "broker.heartbeat.interval.ms=500",
            "broker.session.timeout.ms=3000",
            "offsets.topic.replication.factor=3",
            "offsets.topic.num.partitions=3",
            "group.initial.rebalance.delay.ms=0",
            "group.consumer.min.heartbeat.interval.ms=100",
            "group.consumer.heartbeat.interval.ms=500",
        ],
    );
    c.start_all();
    rt.block_on(harness::until_brokers(&mut c, &[1, 2, 3]));
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/consumer_protocol/confluent_consumer_protocol.py");
    let child = Command::new("python3")
        .arg(&script)
        .args(["--bootstrap", &c.bootstrap()])
        .args(["--timeout", &SCRIPT_TIMEOUT_SECS.to_string()])
        .args(["--scenario", "failover"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => return skip(&format!("python3 cannot be run: {e}")),
    };
    let mut stdin = child.stdin.take().unwrap();
    let mut out = String::new();
    let mut killed = None;
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        out.push_str(&line);
        out.push('\n');
        let Some(id) = line.strip_prefix("KILL ") else {
            continue;
        };
        let id: i32 = id.parse().unwrap();
        let before = rt
            .block_on(describe_group(&c.addr(id), GROUP))
            .unwrap_or_else(|| panic!("no description of the group at its coordinator {id}"));
        assert_eq!(before.0, "Stable", "before the kill: {before:?}");
        assert_eq!(before.3.len(), 2, "before the kill: {before:?}");
        c.kill(id);
        let survivors: Vec<String> = c
            .brokers()
            .iter()
            .filter(|b| **b != id)
            .map(|b| c.addr(*b))
            .collect();
        let after = rt.block_on(c.eventually(
            "the group described by a new coordinator",
            Duration::from_secs(60),
            || {
                let survivors = survivors.clone();
                async move {
                    for addr in &survivors {
                        if let Some(g) = describe_group(addr, GROUP).await {
                            return Some(g);
                        }
                    }
                    None
                }
            },
        ));
        assert_eq!(
            after, before,
            "the group on the new coordinator, against the old one before the kill"
        );
        eprintln!("coordinator {id} killed; the group resumed as {after:?}");
        killed = Some(id);
        writeln!(stdin, "killed").unwrap();
        stdin.flush().unwrap();
    }
    let status = child.wait().unwrap();
    if status.code() == Some(EXIT_MISSING_PEER) {
        return skip(out.trim());
    }
    assert!(status.success(), "script failed ({status}):\n{out}");
    assert!(
        killed.is_some(),
        "the script never asked for the kill:\n{out}"
    );
    assert!(out.contains("OK"), "{out}");
    eprintln!("{out}");
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
