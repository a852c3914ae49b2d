//! Topic config changes at runtime, against the real broker process with real clients: an
//! alter acts on the open logs at once, without a restart, and survives one.
//!
//! - `retention.ms` lowered with kafka-python's legacy AlterConfigs: the old segments'
//!   files leave the data directory and ListOffsets earliest moves up.
//! - `cleanup.policy` switched from `delete` to `compact` with confluent-kafka's
//!   IncrementalAlterConfigs (APPEND, then SUBTRACT): the cleaner compacts the partition
//!   (kcat reads the latest value of every key and far fewer records) and keyless records
//!   are refused from then on.
//! - `max.message.bytes` raised with IncrementalAlterConfigs SET: a record refused with
//!   MESSAGE_TOO_LARGE is accepted afterwards (an invalid value is refused with
//!   INVALID_CONFIG naming the key, and validate_only changes nothing).
//!
//! After each alter kafka-python's DescribeConfigs shows the new value with source
//! DYNAMIC_TOPIC_CONFIG, and again after a restart (a default set in the broker's
//! configuration shows as STATIC_BROKER_CONFIG, a built-in one as DEFAULT_CONFIG). The scripts are in
//! `tests/topic_configs/`; a missing peer skips with a notice, unless
//! `KAFKA_RS_REQUIRE_PEERS=1`.
#![allow(clippy::unwrap_used)]

#[path = "crash/broker.rs"]
#[allow(dead_code)]
mod broker;
#[path = "common/peers.rs"]
mod peers;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use broker::Node;
use peers::run;

/// How long a change may take to show in the data directory.
const ACT_TIMEOUT: Duration = Duration::from_secs(30);

fn script() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/topic_configs/clients.py")
        .display()
        .to_string()
}

fn python(command: &str, addr: &str, topic: &str, extra: &[&str]) -> Option<String> {
    let script = script();
    let mut args = vec![
        script.as_str(),
        command,
        "--bootstrap",
        addr,
        "--topic",
        topic,
    ];
    args.extend_from_slice(extra);
    run("python3", &args).map(|s| s.trim().to_owned())
}

/// kafka-python's DescribeConfigs: key -> (value, source).
fn describe(addr: &str, topic: &str) -> Option<BTreeMap<String, (String, String)>> {
    let out = python("describe", addr, topic, &[])?;
    Some(
        out.lines()
            .filter_map(|l| {
                let mut f = l.split('\t');
                let (k, v, s) = (f.next()?, f.next()?, f.next()?);
                Some((k.to_owned(), (v.to_owned(), s.to_owned())))
            })
            .collect(),
    )
}

/// Asserts that DescribeConfigs shows `key=value` as a topic override.
fn assert_override(addr: &str, topic: &str, key: &str, value: &str, when: &str) {
    let Some(configs) = describe(addr, topic) else {
        return;
    };
    assert_eq!(
        configs.get(key),
        Some(&(value.to_owned(), "DYNAMIC_TOPIC_CONFIG".to_owned())),
        "{when}: {key} as described: {configs:?}"
    );
}

/// ListOffsets earliest and latest of partition 0 (kafka-python).
fn offsets(addr: &str, topic: &str) -> Option<(i64, i64)> {
    let out = python("offsets", addr, topic, &[])?;
    let (a, b) = out.split_once(' ').unwrap();
    Some((a.parse().unwrap(), b.parse().unwrap()))
}

/// Base offsets of the segment files of partition 0.
fn segments(data: &Path, topic: &str) -> Vec<i64> {
    let mut bases: Vec<i64> = std::fs::read_dir(data.join(format!("{topic}-0")))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter_map(|n| n.strip_suffix(".log")?.parse().ok())
        .collect();
    bases.sort_unstable();
    bases
}

/// kcat reads partition 0 from the beginning to the end: (offset, key, value) per record.
fn kcat_read(addr: &str, topic: &str) -> Option<Vec<(i64, String, String)>> {
    let out = run(
        "kcat",
        &[
            "-C",
            "-b",
            addr,
            "-t",
            topic,
            "-p",
            "0",
            "-o",
            "beginning",
            "-e",
            "-q",
            "-Z",
            "-f",
            "%o\t%k\t%s\n",
        ],
    )?;
    Some(
        out.lines()
            .filter(|l| !l.is_empty())
            .map(|l| {
                let mut f = l.splitn(3, '\t');
                let offset = f.next().unwrap().parse().unwrap();
                let key = f.next().unwrap_or_default().to_owned();
                let value = f.next().unwrap_or_default().to_owned();
                (offset, key, value)
            })
            .collect(),
    )
}

async fn wait_for(what: &str, broker: &broker::Broker, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + ACT_TIMEOUT;
    while !done() {
        assert!(
            Instant::now() < deadline,
            "{what} did not happen within {ACT_TIMEOUT:?}; broker output:\n{}",
            broker.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lowering_retention_ms_at_runtime_deletes_old_segments() {
    const TOPIC: &str = "retained";
    const COUNT: i64 = 400;
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let mut node = Node::new(
        data.clone(),
        tmp.path().join("logs"),
        &[
            "log.retention.check.interval.ms=100",
            "offsets.topic.num.partitions=1",
        ],
    );
    let broker = node.start(&[]).await;
    let addr = broker.addr.clone();
    if python("create", &addr, TOPIC, &["--config", "segment.bytes=4096"]).is_none() {
        return;
    }
    let count = COUNT.to_string();
    let Some(out) = python(
        "produce",
        &addr,
        TOPIC,
        &["--count", &count, "--size", "100", "--idempotent"],
    ) else {
        return;
    };
    assert_eq!(out, format!("delivered {COUNT}"));
    let before = segments(&data, TOPIC);
    assert!(before.len() >= 5, "small segments expected: {before:?}");
    // Many retention rounds with the default retention (7 days): nothing goes.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_eq!(segments(&data, TOPIC), before);
    assert_eq!(offsets(&addr, TOPIC), Some((0, COUNT)));

    // The records are a second old or more: a one-second retention makes them expire.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let Some(out) = python("alter", &addr, TOPIC, &["--config", "retention.ms=1000"]) else {
        return;
    };
    assert_eq!(out, "altered");
    wait_for("retention after the alter", &broker, || {
        segments(&data, TOPIC).len() == 1
    })
    .await;
    let left = segments(&data, TOPIC);
    assert_eq!(
        left.as_slice(),
        &before[before.len() - 1..],
        "the active segment stays"
    );
    let start = left[0];
    assert!(start > 0);
    assert_eq!(offsets(&addr, TOPIC), Some((start, COUNT)));
    if let Some(records) = kcat_read(&addr, TOPIC) {
        assert_eq!(
            records.first().map(|r| r.0),
            Some(start),
            "kcat starts at the log start"
        );
        assert_eq!(records.last().map(|r| r.0), Some(COUNT - 1));
    }
    assert_override(&addr, TOPIC, "retention.ms", "1000", "after the alter");
    // The legacy AlterConfigs replaces the whole set: kafka-python sent the other override.
    assert_override(&addr, TOPIC, "segment.bytes", "4096", "after the alter");

    // After a restart the override is still there, and so is the log start.
    drop(broker);
    let broker = node.start(&[]).await;
    let addr = broker.addr.clone();
    assert_override(&addr, TOPIC, "retention.ms", "1000", "after a restart");
    assert_override(&addr, TOPIC, "segment.bytes", "4096", "after a restart");
    assert_eq!(offsets(&addr, TOPIC), Some((start, COUNT)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn switching_a_topic_to_compact_at_runtime_compacts_it() {
    const TOPIC: &str = "switched";
    const COUNT: i64 = 2_000;
    const KEYS: i64 = 20;
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let mut node = Node::new(
        data.clone(),
        tmp.path().join("logs"),
        &[
            "log.cleaner.backoff.ms=100",
            "offsets.topic.num.partitions=1",
        ],
    );
    let broker = node.start(&[]).await;
    let addr = broker.addr.clone();
    let created = python(
        "create",
        &addr,
        TOPIC,
        &[
            "--config",
            "cleanup.policy=delete",
            "--config",
            "segment.bytes=2048",
            "--config",
            "min.cleanable.dirty.ratio=0.01",
        ],
    );
    if created.is_none() {
        return;
    }
    let (count, keys) = (COUNT.to_string(), KEYS.to_string());
    let Some(out) = python(
        "produce",
        &addr,
        TOPIC,
        &["--count", &count, "--keys", &keys, "--idempotent"],
    ) else {
        return;
    };
    assert_eq!(out, format!("delivered {COUNT}"));
    let log_dir = data.join(format!("{TOPIC}-0"));
    // Cleaner rounds run, but the topic is not compacted.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert!(!log_dir.join("cleaner-offset-checkpoint").exists());
    if let Some(records) = kcat_read(&addr, TOPIC) {
        assert_eq!(records.len() as i64, COUNT, "nothing compacted yet");
    }

    let Some(out) = python(
        "incremental",
        &addr,
        TOPIC,
        &["--op", "APPEND:cleanup.policy=compact"],
    ) else {
        return;
    };
    assert_eq!(out, "altered");
    assert_override(
        &addr,
        TOPIC,
        "cleanup.policy",
        "delete,compact",
        "after APPEND",
    );
    broker.wait_until_cleaned(&log_dir, ACT_TIMEOUT).await;
    let check = |who: &str, records: &[(i64, String, String)]| {
        let mut last = -1;
        let mut latest = BTreeMap::new();
        for (offset, key, value) in records {
            assert!(*offset > last, "{who}: offsets go back at {offset}");
            last = *offset;
            assert_eq!(
                (key.as_str(), value.as_str()),
                (
                    format!("key-{}", offset % KEYS).as_str(),
                    format!("v{offset}").as_str()
                ),
                "{who}: offset {offset} holds another record than was written"
            );
            latest.insert(key.clone(), *offset);
        }
        let expected: BTreeMap<String, i64> = (COUNT - KEYS..COUNT)
            .map(|o| (format!("key-{}", o % KEYS), o))
            .collect();
        assert_eq!(latest, expected, "{who}: the latest value of each key");
        assert!(
            (records.len() as i64) < COUNT / 5,
            "{who}: {} of {COUNT} records left: not compacted",
            records.len()
        );
    };
    if let Some(records) = kcat_read(&addr, TOPIC) {
        check("kcat", &records);
    }

    // Compact only, and keys are required from now on.
    let Some(out) = python(
        "incremental",
        &addr,
        TOPIC,
        &["--op", "SUBTRACT:cleanup.policy=delete"],
    ) else {
        return;
    };
    assert_eq!(out, "altered");
    assert_override(&addr, TOPIC, "cleanup.policy", "compact", "after SUBTRACT");
    let keyless = python("produce", &addr, TOPIC, &["--keyless"]);
    assert_eq!(keyless.as_deref(), Some("error INVALID_RECORD"));

    drop(broker);
    let broker = node.start(&[]).await;
    let addr = broker.addr.clone();
    assert_override(&addr, TOPIC, "cleanup.policy", "compact", "after a restart");
    if let Some(records) = kcat_read(&addr, TOPIC) {
        check("kcat after a restart", &records);
    }
    let keyless = python("produce", &addr, TOPIC, &["--keyless"]);
    assert_eq!(keyless.as_deref(), Some("error INVALID_RECORD"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raising_max_message_bytes_at_runtime_accepts_a_larger_batch() {
    const TOPIC: &str = "sized";
    let tmp = tempfile::tempdir().unwrap();
    let mut node = Node::new(
        tmp.path().join("data"),
        tmp.path().join("logs"),
        &["offsets.topic.num.partitions=1", "log.roll.ms=3600000"],
    );
    let broker = node.start(&[]).await;
    let addr = broker.addr.clone();
    if python(
        "create",
        &addr,
        TOPIC,
        &["--config", "max.message.bytes=1000"],
    )
    .is_none()
    {
        return;
    }
    // Defaults: set in the broker's configuration, or built in.
    if let Some(configs) = describe(&addr, TOPIC) {
        let source = |k: &str| configs.get(k).cloned().unwrap_or_default();
        assert_eq!(
            source("segment.ms"),
            ("3600000".to_owned(), "STATIC_BROKER_CONFIG".to_owned())
        );
        assert_eq!(
            source("segment.bytes"),
            ("1073741824".to_owned(), "DEFAULT_CONFIG".to_owned())
        );
    }
    let big = ["--size", "4000"];
    let refused = python("produce", &addr, TOPIC, &big);
    assert_eq!(refused.as_deref(), Some("error MSG_SIZE_TOO_LARGE"));

    // An invalid value is refused, naming the key, and changes nothing.
    let Some(out) = python(
        "incremental",
        &addr,
        TOPIC,
        &["--op", "SET:max.message.bytes=-5"],
    ) else {
        return;
    };
    assert!(
        out.starts_with("error INVALID_CONFIG") && out.contains("max.message.bytes=-5"),
        "{out}"
    );
    assert_override(
        &addr,
        TOPIC,
        "max.message.bytes",
        "1000",
        "after a refused alter",
    );
    // validate_only checks and changes nothing.
    let Some(out) = python(
        "incremental",
        &addr,
        TOPIC,
        &["--op", "SET:max.message.bytes=100000", "--validate-only"],
    ) else {
        return;
    };
    assert_eq!(out, "altered");
    assert_override(
        &addr,
        TOPIC,
        "max.message.bytes",
        "1000",
        "after validate_only",
    );
    let refused = python("produce", &addr, TOPIC, &big);
    assert_eq!(refused.as_deref(), Some("error MSG_SIZE_TOO_LARGE"));

    let Some(out) = python(
        "incremental",
        &addr,
        TOPIC,
        &["--op", "SET:max.message.bytes=100000"],
    ) else {
        return;
    };
    assert_eq!(out, "altered");
    assert_override(&addr, TOPIC, "max.message.bytes", "100000", "after SET");
    let accepted = python("produce", &addr, TOPIC, &big);
    assert_eq!(accepted.as_deref(), Some("delivered 1"));
    if let Some(records) = kcat_read(&addr, TOPIC) {
        assert_eq!(records.len(), 1);
        assert_eq!(records[0].2, "x".repeat(4000));
    }

    drop(broker);
    let broker = node.start(&[]).await;
    let addr = broker.addr.clone();
    assert_override(
        &addr,
        TOPIC,
        "max.message.bytes",
        "100000",
        "after a restart",
    );
    let accepted = python("produce", &addr, TOPIC, &big);
    assert_eq!(accepted.as_deref(), Some("delivered 1"));
    assert_eq!(offsets(&addr, TOPIC), Some((0, 2)));
}
