//! Committed offsets and group metadata survive a restart of the real broker process: they
//! are records in `__consumer_offsets`, appended before the commit is answered and replayed
//! at start-up.
//!
//! - Simple commits (generation -1, no member) with metadata strings: read back after a
//!   SIGKILL and after a clean SIGTERM restart; a later commit overwrites and also survives.
//! - A group joined by one member (JoinGroup + SyncGroup), in durable mode
//!   (`log.flush.interval.messages=1`): its offsets survive a SIGKILL, and so does its metadata
//!   (the member may commit with its generation after the restart; a stranger may not).
//! - `__consumer_offsets` is compacted: after thousands of commits its log shrinks to about
//!   one record per partition and group, and the latest commits survive a SIGKILL.
//! - confluent-kafka (when python3 has it; required under `KAFKA_RS_REQUIRE_PEERS=1`): a
//!   subscribed consumer commits, the broker is SIGKILLed and restarted, and a new consumer in
//!   the same group sees the committed offset and resumes there.
//! - confluent-kafka: a group member's host is the connection's address as Kafka writes it
//!   (`/127.0.0.1`) in DescribeGroups, and again after a SIGKILL and restart (the member is
//!   gone by then, so the host can only come from the group metadata record).
#![allow(clippy::unwrap_used)]

#[path = "crash/broker.rs"]
#[allow(dead_code)]
mod broker;

use std::process::{Command, Stdio};
use std::time::Duration;

use bytes::Bytes;
use kafka_net::{Connection, ConnectionConfig};
use kafka_protocol::KStr;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
use kafka_protocol::messages::{
    CreateTopicsRequest, JoinGroupRequest, OffsetCommitRequest, OffsetFetchRequest, RequestBody,
    ResponseBody, SyncGroupRequest,
};

use broker::Node;

const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);
const SETTINGS: &[&str] = &["group.initial.rebalance.delay.ms=0"];

async fn connect(addr: &str) -> Connection {
    Connection::connect(addr, ConnectionConfig::default())
        .await
        .unwrap_or_else(|e| panic!("cannot connect to the broker at {addr}: {e}"))
}

async fn request(conn: &Connection, body: RequestBody, version: i16) -> ResponseBody {
    let api = body.api_key();
    tokio::time::timeout(REQUEST_TIMEOUT, conn.request_at(body, version))
        .await
        .unwrap_or_else(|_| panic!("{api:?} got no answer within {REQUEST_TIMEOUT:?}"))
        .unwrap_or_else(|e| panic!("{api:?} failed: {e}"))
}

async fn create_topic(conn: &Connection, name: &str, partitions: i32) {
    let body = RequestBody::CreateTopics(CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: KStr::from(name.to_owned()),
            num_partitions: partitions,
            replication_factor: 1,
            ..Default::default()
        }],
        timeout_ms: 10_000,
        ..Default::default()
    });
    let ResponseBody::CreateTopics(resp) = request(conn, body, 5).await else {
        panic!("CreateTopics answered with another body");
    };
    assert_eq!(resp.topics[0].error_code, 0, "{:?}", resp.topics[0]);
}

/// Commits `(partition, offset, metadata)` for `topic`; every partition must succeed.
async fn commit(
    conn: &Connection,
    group: &str,
    generation: i32,
    member: &str,
    topic: &str,
    offsets: &[(i32, i64, &str)],
) -> Vec<i16> {
    let body = RequestBody::from(OffsetCommitRequest {
        group_id: KStr::from(group.to_owned()),
        generation_id_or_member_epoch: generation,
        member_id: KStr::from(member.to_owned()),
        retention_time_ms: -1,
        topics: vec![OffsetCommitRequestTopic {
            name: KStr::from(topic.to_owned()),
            partitions: offsets
                .iter()
                .map(|&(p, o, m)| OffsetCommitRequestPartition {
                    partition_index: p,
                    committed_offset: o,
                    committed_leader_epoch: -1,
                    commit_timestamp: -1,
                    committed_metadata: Some(KStr::from(m.to_owned())),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }],
        ..Default::default()
    });
    let ResponseBody::OffsetCommit(resp) = request(conn, body, 8).await else {
        panic!("OffsetCommit answered with another body");
    };
    resp.topics
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| p.error_code))
        .collect()
}

/// The committed `(partition, offset, metadata)` of `topic`'s `partitions` for `group`.
async fn fetch(
    conn: &Connection,
    group: &str,
    topic: &str,
    partitions: &[i32],
) -> Vec<(i32, i64, String)> {
    let body = RequestBody::OffsetFetch(OffsetFetchRequest {
        group_id: KStr::from(group.to_owned()),
        topics: Some(vec![OffsetFetchRequestTopic {
            name: KStr::from(topic.to_owned()),
            partition_indexes: partitions.to_vec(),
            ..Default::default()
        }]),
        ..Default::default()
    });
    let ResponseBody::OffsetFetch(resp) = request(conn, body, 7).await else {
        panic!("OffsetFetch answered with another body");
    };
    assert_eq!(resp.error_code, 0, "OffsetFetch: {resp:?}");
    let mut out: Vec<(i32, i64, String)> = resp
        .topics
        .iter()
        .flat_map(|t| t.partitions.iter())
        .map(|p| {
            assert_eq!(p.error_code, 0, "{p:?}");
            (
                p.partition_index,
                p.committed_offset,
                p.metadata
                    .as_ref()
                    .map(|m| m.as_str().to_owned())
                    .unwrap_or_default(),
            )
        })
        .collect();
    out.sort();
    out
}

fn expected(offsets: &[(i32, i64, &str)]) -> Vec<(i32, i64, String)> {
    let mut v: Vec<_> = offsets
        .iter()
        .map(|&(p, o, m)| (p, o, m.to_owned()))
        .collect();
    v.sort();
    v
}

fn node(dir: &tempfile::TempDir) -> Node {
    Node::new(dir.path().join("data"), dir.path().join("logs"), SETTINGS)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn simple_commits_survive_sigkill_and_clean_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut node = node(&dir);
    let mut b = node.start(&[]).await;
    let conn = connect(&b.addr).await;
    create_topic(&conn, "orders", 3).await;
    let first = [
        (0, 42, "meta-0"),
        (1, 7, ""),
        (2, 1_000_000, "m2 with spaces"),
    ];
    assert_eq!(
        commit(&conn, "simple", -1, "", "orders", &first).await,
        vec![0; 3]
    );
    // A second group on another partition of __consumer_offsets.
    assert_eq!(
        commit(&conn, "other-group", -1, "", "orders", &[(0, 3, "x")]).await,
        vec![0]
    );
    drop(conn);

    // kill -9 right after the answers: nothing acknowledged may be lost.
    b.kill();
    let mut b = node.start(&[]).await;
    let conn = connect(&b.addr).await;
    assert_eq!(
        fetch(&conn, "simple", "orders", &[0, 1, 2]).await,
        expected(&first),
        "after SIGKILL; broker log:\n{}",
        b.log()
    );
    assert_eq!(
        fetch(&conn, "other-group", "orders", &[0]).await,
        expected(&[(0, 3, "x")])
    );

    // Overwrite one partition, then a clean stop.
    assert_eq!(
        commit(&conn, "simple", -1, "", "orders", &[(1, 99, "newer")]).await,
        vec![0]
    );
    drop(conn);
    let status = b.terminate().await;
    assert!(status.success(), "clean stop failed: {status}");
    let mut b = node.start(&[]).await;
    let conn = connect(&b.addr).await;
    assert_eq!(
        fetch(&conn, "simple", "orders", &[0, 1, 2]).await,
        expected(&[
            (0, 42, "meta-0"),
            (1, 99, "newer"),
            (2, 1_000_000, "m2 with spaces")
        ]),
        "after SIGTERM; broker log:\n{}",
        b.log()
    );
    // And once more after a second SIGKILL (the replayed log is read again, plus new records).
    drop(conn);
    b.kill();
    let b = node.start(&[]).await;
    let conn = connect(&b.addr).await;
    assert_eq!(
        fetch(&conn, "simple", "orders", &[0, 1, 2]).await,
        expected(&[
            (0, 42, "meta-0"),
            (1, 99, "newer"),
            (2, 1_000_000, "m2 with spaces")
        ]),
    );
    assert!(
        b.log().contains("loaded consumer groups"),
        "no load line in:\n{}",
        b.log()
    );
}

/// Total size of the `.log` files in a directory.
fn log_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".log"))
        .map(|e| e.metadata().unwrap().len())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_offsets_topic_is_compacted_and_the_latest_commits_survive() {
    const COMMITS: i64 = 1_500;
    let dir = tempfile::tempdir().unwrap();
    let mut node = Node::new(
        dir.path().join("data"),
        dir.path().join("logs"),
        &[
            "group.initial.rebalance.delay.ms=0",
            "offsets.topic.num.partitions=1",
            "offsets.topic.segment.bytes=8192",
            "log.cleaner.backoff.ms=100",
        ],
    );
    let mut b = node.start(&[]).await;
    let conn = connect(&b.addr).await;
    create_topic(&conn, "busy", 3).await;
    for i in 1..=COMMITS {
        let offsets = [(0, i, "m"), (1, 2 * i, ""), (2, 3 * i, "last")];
        assert_eq!(
            commit(&conn, "busy-group", -1, "", "busy", &offsets).await,
            vec![0; 3]
        );
    }
    let offsets_log = dir.path().join("data").join("__consumer_offsets-0");
    b.wait_until_cleaned(&offsets_log, Duration::from_secs(30))
        .await;
    // 4,500 offset records of about 80 bytes were written; the cleaned part keeps one per
    // partition, the active segment at most 8 KiB.
    let left = log_bytes(&offsets_log);
    assert!(
        left < 16 * 1024,
        "{left} bytes of offsets log left after compaction"
    );
    let latest = [
        (0, COMMITS, "m"),
        (1, 2 * COMMITS, ""),
        (2, 3 * COMMITS, "last"),
    ];
    assert_eq!(
        fetch(&conn, "busy-group", "busy", &[0, 1, 2]).await,
        expected(&latest)
    );
    drop(conn);
    b.kill();
    let b = node.start(&[]).await;
    let conn = connect(&b.addr).await;
    assert_eq!(
        fetch(&conn, "busy-group", "busy", &[0, 1, 2]).await,
        expected(&latest),
        "after compaction and a SIGKILL; broker log:\n{}",
        b.log()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn joined_group_offsets_and_metadata_survive_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    // In durable mode, so that the sink's fsync path runs too.
    let mut node = Node::new(
        dir.path().join("data"),
        dir.path().join("logs"),
        &[
            "group.initial.rebalance.delay.ms=0",
            "log.flush.interval.messages=1",
        ],
    );
    let mut b = node.start(&[]).await;
    let conn = connect(&b.addr).await;
    create_topic(&conn, "events", 2).await;

    // JoinGroup v3 (no MEMBER_ID_REQUIRED round trip), one member: it leads.
    let join = RequestBody::from(JoinGroupRequest {
        group_id: KStr::from("joined".to_owned()),
        session_timeout_ms: 30_000,
        rebalance_timeout_ms: 10_000,
        member_id: KStr::from(String::new()),
        protocol_type: KStr::from("consumer".to_owned()),
        protocols: vec![JoinGroupRequestProtocol {
            name: KStr::from("range".to_owned()),
            metadata: Bytes::from_static(b"subscription"),
            ..Default::default()
        }],
        ..Default::default()
    });
    let ResponseBody::JoinGroup(joined) = request(&conn, join, 3).await else {
        panic!("JoinGroup answered with another body");
    };
    assert_eq!(joined.error_code, 0, "{joined:?}");
    assert_eq!(joined.leader, joined.member_id);
    let member = joined.member_id.as_str().to_owned();
    let generation = joined.generation_id;

    let sync = RequestBody::from(SyncGroupRequest {
        group_id: KStr::from("joined".to_owned()),
        generation_id: generation,
        member_id: KStr::from(member.clone()),
        assignments: vec![SyncGroupRequestAssignment {
            member_id: KStr::from(member.clone()),
            assignment: Bytes::from_static(b"assignment"),
            ..Default::default()
        }],
        ..Default::default()
    });
    let ResponseBody::SyncGroup(synced) = request(&conn, sync, 3).await else {
        panic!("SyncGroup answered with another body");
    };
    assert_eq!(synced.error_code, 0, "{synced:?}");
    assert_eq!(synced.assignment, Bytes::from_static(b"assignment"));

    let offsets = [(0, 10, "a"), (1, 20, "b")];
    assert_eq!(
        commit(&conn, "joined", generation, &member, "events", &offsets).await,
        vec![0, 0]
    );
    drop(conn);
    b.kill();

    let b = node.start(&[]).await;
    let conn = connect(&b.addr).await;
    assert_eq!(
        fetch(&conn, "joined", "events", &[0, 1]).await,
        expected(&offsets),
        "broker log:\n{}",
        b.log()
    );
    // The group came back with its generation and member: that member may still commit.
    assert_eq!(
        commit(
            &conn,
            "joined",
            generation,
            &member,
            "events",
            &[(0, 11, "c")]
        )
        .await,
        vec![0],
        "the restored group did not know its member; broker log:\n{}",
        b.log()
    );
    // A stranger with the same generation may not.
    assert_ne!(
        commit(
            &conn,
            "joined",
            generation,
            "stranger",
            "events",
            &[(0, 12, "d")]
        )
        .await,
        vec![0]
    );
    assert_eq!(
        fetch(&conn, "joined", "events", &[0]).await,
        expected(&[(0, 11, "c")])
    );
}

fn require_peers() -> bool {
    std::env::var("KAFKA_RS_REQUIRE_PEERS").is_ok_and(|v| v == "1")
}

/// Runs a python3 script with `args`; panics with its output unless it exits 0.
fn python(script: &str, args: &[&str]) -> String {
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success(),
        "python failed ({}):\n{text}",
        out.status
    );
    text
}

const PY_PHASE1: &str = r#"
import sys
from confluent_kafka import Producer, Consumer, TopicPartition
addr, topic, group = sys.argv[1:4]
p = Producer({"bootstrap.servers": addr})
for i in range(10):
    p.produce(topic, value=b"v%d" % i, partition=0)
assert p.flush(10) == 0
c = Consumer({"bootstrap.servers": addr, "group.id": group, "auto.offset.reset": "earliest",
              "enable.auto.commit": False, "session.timeout.ms": 10000})
c.subscribe([topic])
got = []
while len(got) < 4:
    m = c.poll(10)
    assert m is not None, "no message within 10 s"
    assert m.error() is None, m.error()
    got.append(m.value())
assert got == [b"v0", b"v1", b"v2", b"v3"], got
c.commit(message=m, asynchronous=False)
committed = c.committed([TopicPartition(topic, 0)], timeout=10)
assert committed[0].offset == 4, committed
c.close()
print("phase1 ok")
"#;

const PY_PHASE2: &str = r#"
import sys
from confluent_kafka import Consumer, TopicPartition
addr, topic, group = sys.argv[1:4]
c = Consumer({"bootstrap.servers": addr, "group.id": group, "auto.offset.reset": "earliest",
              "enable.auto.commit": False, "session.timeout.ms": 10000})
committed = c.committed([TopicPartition(topic, 0)], timeout=10)
assert committed[0].offset == 4, "committed after restart: %r" % committed
c.subscribe([topic])
m = c.poll(10)
assert m is not None, "no message within 10 s"
assert m.error() is None, m.error()
assert m.offset() == 4 and m.value() == b"v4", (m.offset(), m.value())
c.close()
print("phase2 ok")
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confluent_kafka_consumer_resumes_after_sigkill() {
    let available = Command::new("python3")
        .args(["-c", "import confluent_kafka"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !available {
        assert!(
            !require_peers(),
            "KAFKA_RS_REQUIRE_PEERS=1 but python3 cannot import confluent_kafka"
        );
        eprintln!("NOTICE: python3 with confluent_kafka not found; scenario skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut node = node(&dir);
    let mut b = node.start(&[]).await;
    let conn = connect(&b.addr).await;
    create_topic(&conn, "resume", 1).await;
    drop(conn);
    let addr = b.addr.clone();
    let out =
        tokio::task::spawn_blocking(move || python(PY_PHASE1, &[&addr, "resume", "py-group"]))
            .await
            .unwrap();
    assert!(out.contains("phase1 ok"), "{out}");
    b.kill();

    let b = node.start(&[]).await;
    let addr = b.addr.clone();
    let out =
        tokio::task::spawn_blocking(move || python(PY_PHASE2, &[&addr, "resume", "py-group"]))
            .await
            .unwrap();
    assert!(out.contains("phase2 ok"), "{out}\nbroker log:\n{}", b.log());
}

/// Joins group `argv[3]` with one consumer, checks DescribeGroups through the AdminClient,
/// then leaves without a LeaveGroup (os._exit): the member stays until its session times out.
const PY_HOST_JOIN: &str = r#"
import os, sys, time
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient
addr, topic, group = sys.argv[1:4]
c = Consumer({"bootstrap.servers": addr, "group.id": group, "session.timeout.ms": 60000,
              "broker.address.family": "v4"})
c.subscribe([topic])
deadline = time.time() + 20
while not c.assignment() and time.time() < deadline:
    c.poll(0.2)
assert c.assignment(), "no assignment within 20 s"
admin = AdminClient({"bootstrap.servers": addr, "broker.address.family": "v4"})
desc = admin.describe_consumer_groups([group])[group].result(timeout=10)
hosts = [m.host for m in desc.members]
print("hosts", hosts, flush=True)
assert hosts == ["/127.0.0.1"], hosts
print("join ok", flush=True)
os._exit(0)
"#;

/// DescribeGroups through the AdminClient: prints and checks the members' hosts.
const PY_HOST_DESCRIBE: &str = r#"
import sys
from confluent_kafka.admin import AdminClient
addr, group = sys.argv[1:3]
admin = AdminClient({"bootstrap.servers": addr, "broker.address.family": "v4"})
desc = admin.describe_consumer_groups([group])[group].result(timeout=10)
hosts = [m.host for m in desc.members]
print("state", desc.state, "hosts", hosts, flush=True)
assert hosts == ["/127.0.0.1"], hosts
print("describe ok", flush=True)
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confluent_kafka_sees_the_member_host_before_and_after_sigkill() {
    let available = Command::new("python3")
        .args(["-c", "import confluent_kafka"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !available {
        assert!(
            !require_peers(),
            "KAFKA_RS_REQUIRE_PEERS=1 but python3 cannot import confluent_kafka"
        );
        eprintln!("NOTICE: python3 with confluent_kafka not found; scenario skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut node = node(&dir);
    let mut b = node.start(&[]).await;
    let conn = connect(&b.addr).await;
    create_topic(&conn, "hosts", 1).await;
    drop(conn);
    let addr = b.addr.clone();
    let out =
        tokio::task::spawn_blocking(move || python(PY_HOST_JOIN, &[&addr, "hosts", "host-group"]))
            .await
            .unwrap();
    assert!(out.contains("join ok"), "{out}\nbroker log:\n{}", b.log());
    b.kill();

    let b = node.start(&[]).await;
    let addr = b.addr.clone();
    let out = tokio::task::spawn_blocking(move || python(PY_HOST_DESCRIBE, &[&addr, "host-group"]))
        .await
        .unwrap();
    assert!(
        out.contains("describe ok"),
        "{out}\nbroker log:\n{}",
        b.log()
    );
}
