//! Third-party peers against our broker and our consumer: records written by kcat read back
//! identically, and committed offsets shared both ways with kafka-python and kcat (-G).
//!
//! A missing peer skips its test with a notice, unless `KAFKA_RS_REQUIRE_PEERS=1`, where it
//! fails.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::Duration;

use kafka_consumer::{Consumer, OffsetAndMetadata, TimestampType};
use kafka_protocol::record::Compression;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

use crate::support::*;

const STEP: Duration = Duration::from_secs(60);

pub(crate) fn kcat() -> Option<&'static str> {
    ["kcat", "kafkacat"].into_iter().find(|k| {
        std::process::Command::new(k)
            .arg("-V")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok()
    })
}

fn kafka_python() -> bool {
    std::process::Command::new("python3")
        .args(["-c", "import kafka"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Whether to run a test needing `what`: skips with a notice, or fails under
/// `KAFKA_RS_REQUIRE_PEERS=1`.
pub(crate) fn have(present: bool, what: &str) -> bool {
    if !present {
        assert!(
            !peers_required(),
            "KAFKA_RS_REQUIRE_PEERS=1 but {what} is missing"
        );
        eprintln!("NOTICE: skipping: {what} is missing");
    }
    present
}

/// Runs a command to completion (stdin given), within the step limit; returns stdout.
pub(crate) async fn run(cmd: &mut Command, stdin: &[u8]) -> String {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin).await.unwrap();
    drop(input);
    let out = tokio::time::timeout(STEP, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("{cmd:?} did not finish within {STEP:?}"))
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{cmd:?} failed: {stderr}");
    String::from_utf8(out.stdout).unwrap()
}

#[tokio::test]
async fn records_written_by_kcat_read_back_identically() {
    let Some(kcat) = kcat() else {
        have(false, "kcat");
        return;
    };
    let broker = TestBroker::start();
    let topic = "from-kcat";
    let codecs = ["none", "gzip", "snappy", "lz4", "zstd"];
    broker.create_topic(topic, codecs.len() as i32).await;
    let mut want: BTreeMap<i32, Vec<(String, String)>> = BTreeMap::new();
    for (p, codec) in codecs.iter().enumerate() {
        let lines: Vec<(String, String)> = (0..40)
            .map(|i| {
                (
                    format!("key-{i}"),
                    format!("{codec} value {i} {}", "x".repeat(i * 3)),
                )
            })
            .collect();
        let input: String = lines.iter().map(|(k, v)| format!("{k}\t{v}\n")).collect();
        run(
            Command::new(kcat).args([
                "-P",
                "-b",
                &broker.bootstrap(),
                "-t",
                topic,
                "-p",
                &p.to_string(),
                "-K",
                "\t",
                "-z",
                codec,
                "-H",
                "origin=kcat",
                "-X",
                "linger.ms=5",
            ]),
            input.as_bytes(),
        )
        .await;
        want.insert(p as i32, lines);
    }
    let c = Consumer::new(broker.config().build().unwrap())
        .await
        .unwrap();
    c.assign((0..codecs.len() as i32).map(|p| tp(topic, p)))
        .unwrap();
    let got = poll_n(&c, 200, Duration::from_secs(20)).await;
    assert_eq!(got.len(), 200);
    let mut by_partition: BTreeMap<i32, Vec<(String, String)>> = BTreeMap::new();
    for r in &got {
        assert_eq!(r.timestamp_type, TimestampType::CreateTime);
        assert!(r.timestamp > 0);
        assert_eq!(r.headers.len(), 1);
        assert_eq!(r.headers[0].key.as_str(), "origin");
        assert_eq!(r.headers[0].value.as_deref(), Some(&b"kcat"[..]));
        let list = by_partition.entry(r.partition).or_default();
        assert_eq!(r.offset, list.len() as i64);
        list.push((
            String::from_utf8(r.key.clone().unwrap().to_vec()).unwrap(),
            String::from_utf8(r.value.clone().unwrap().to_vec()).unwrap(),
        ));
    }
    assert_eq!(by_partition, want);
    c.close(Duration::from_secs(5)).await.unwrap();
}

/// kafka-python: reads a group's committed offset of partition 0 (`offset metadata`, or
/// `none`), or commits one as a simple consumer (no group membership).
const PY: &str = r#"
import sys
from kafka import KafkaConsumer, TopicPartition
from kafka.structs import OffsetAndMetadata
bootstrap, group, topic, action = sys.argv[1:5]
c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                  request_timeout_ms=15000)
tp = TopicPartition(topic, 0)
if action == "read":
    om = c.committed(tp, metadata=True)
    print("none" if om is None else f"{om.offset} {om.metadata}")
else:
    c.assign([tp])
    c.commit({tp: OffsetAndMetadata(int(action), "from-python", -1)})
    print("ok")
c.close()
"#;

async fn python(broker: &TestBroker, group: &str, topic: &str, action: &str) -> String {
    let out = run(
        Command::new("python3").args(["-c", PY, &broker.bootstrap(), group, topic, action]),
        b"",
    )
    .await;
    out.trim().to_owned()
}

#[tokio::test]
async fn committed_offsets_are_shared_with_kafka_python() {
    if !have(kafka_python(), "python3 with kafka-python") {
        return;
    }
    let broker = TestBroker::start();
    let topic = "shared-py";
    broker.create_topic(topic, 1).await;
    let conn = broker.connection().await;
    produce(&conn, topic, 0, 0, 5, 10, Compression::None).await;
    let t0 = tp(topic, 0);

    // Ours commits, kafka-python reads it.
    let cfg = |g: &str| {
        broker
            .config()
            .group_id(g)
            .enable_auto_commit(false)
            .build()
            .unwrap()
    };
    let c = Consumer::new(cfg("g-rust")).await.unwrap();
    c.assign([t0.clone()]).unwrap();
    c.seek(&t0, 30).unwrap();
    assert_eq!(poll_n(&c, 1, Duration::from_secs(10)).await[0].offset, 30);
    let pos = c.position(&t0).await.unwrap();
    let offsets = [(
        t0.clone(),
        OffsetAndMetadata::new(pos).with_metadata("from-rust"),
    )];
    c.commit_offsets_sync(offsets.into_iter().collect())
        .await
        .unwrap();
    c.close(Duration::from_secs(5)).await.unwrap();
    assert_eq!(
        python(&broker, "g-rust", topic, "read").await,
        format!("{pos} from-rust")
    );

    // kafka-python commits, ours reads it and resumes there.
    assert_eq!(python(&broker, "g-py", topic, "read").await, "none");
    assert_eq!(python(&broker, "g-py", topic, "17").await, "ok");
    let c = Consumer::new(cfg("g-py")).await.unwrap();
    let got = c.committed(std::slice::from_ref(&t0)).await.unwrap();
    let om = got[&t0].clone().unwrap();
    assert_eq!((om.offset, om.metadata.as_str()), (17, "from-python"));
    c.assign([t0.clone()]).unwrap();
    assert_eq!(poll_n(&c, 1, Duration::from_secs(10)).await[0].offset, 17);
    c.close(Duration::from_secs(5)).await.unwrap();
}

#[tokio::test]
async fn offsets_committed_by_kcat_group_are_read_by_ours() {
    let Some(kcat) = kcat() else {
        have(false, "kcat");
        return;
    };
    let broker = TestBroker::start();
    let topic = "shared-kcat";
    broker.create_topic(topic, 2).await;
    let conn = broker.connection().await;
    produce(&conn, topic, 0, 0, 2, 10, Compression::None).await;
    produce(&conn, topic, 1, 0, 3, 10, Compression::Lz4).await;
    // A balanced kcat consumer reads to the end and commits as it leaves.
    let out = run(
        Command::new(kcat).args([
            "-b",
            &broker.bootstrap(),
            "-G",
            "g-kcat",
            topic,
            "-X",
            "auto.offset.reset=earliest",
            "-X",
            "session.timeout.ms=6000",
            "-X",
            "heartbeat.interval.ms=500",
            "-e",
            "-q",
        ]),
        b"",
    )
    .await;
    assert_eq!(out.lines().count(), 50, "kcat read: {out}");
    let parts = [tp(topic, 0), tp(topic, 1)];
    let c = Consumer::new(
        broker
            .config()
            .group_id("g-kcat")
            .enable_auto_commit(false)
            .build()
            .unwrap(),
    )
    .await
    .unwrap();
    let got = c.committed(&parts).await.unwrap();
    let offsets: Vec<Option<i64>> = parts
        .iter()
        .map(|t| got[t].as_ref().map(|o| o.offset))
        .collect();
    assert_eq!(offsets, vec![Some(20), Some(30)]);
    // And a consumer of that group starts at the end.
    c.assign(parts.clone()).unwrap();
    assert_eq!(c.position(&parts[0]).await.unwrap(), 20);
    assert_eq!(c.position(&parts[1]).await.unwrap(), 30);
    c.close(Duration::from_secs(5)).await.unwrap();
}
