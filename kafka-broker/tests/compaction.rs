//! Log compaction against real clients, on the real broker process.
//!
//! confluent-kafka creates a topic with `cleanup.policy=compact` and small segments and writes
//! 3,000 keyed records (50 keys, the last five records tombstones); a record without a key is
//! refused with INVALID_RECORD. The cleaner runs every 100 ms while the records arrive. Once it
//! has cleaned everything up to the active segment (its checkpoint file says so), kcat and kafka-python each read the partition from the
//! beginning and must see a consistent view: offsets increasing, every record the one written
//! at its offset, the latest value of every key (tombstones included) present, and far fewer
//! records than were written. The same holds after a SIGKILL and a restart.
//!
//! The scripts are in `tests/compaction/`. A missing peer skips the test with a notice, unless
//! `KAFKA_RS_REQUIRE_PEERS=1`.
#![allow(clippy::unwrap_used)]

#[path = "crash/broker.rs"]
#[allow(dead_code)]
mod broker;
#[path = "common/peers.rs"]
mod peers;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use broker::Node;
use peers::run;

const TOPIC: &str = "compacted";
const COUNT: i64 = 3_000;
const KEYS: i64 = 50;
const TOMBSTONES: i64 = 5;
/// How long the cleaner may take to run after the last write.
const CLEAN_TIMEOUT: Duration = Duration::from_secs(30);

fn script() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/compaction/clients.py")
        .display()
        .to_string()
}

fn python(command: &str, addr: &str, extra: &[&str]) -> Option<String> {
    let script = script();
    let mut args = vec![
        script.as_str(),
        command,
        "--bootstrap",
        addr,
        "--topic",
        TOPIC,
    ];
    args.extend_from_slice(extra);
    run("python3", &args)
}

fn kcat_read(addr: &str) -> Option<String> {
    run(
        "kcat",
        &[
            "-C",
            "-b",
            addr,
            "-t",
            TOPIC,
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
    )
}

/// The latest value of each key as written (`None`: a tombstone).
fn expected_latest() -> BTreeMap<String, Option<String>> {
    let first_tombstone = COUNT - TOMBSTONES;
    let mut latest = BTreeMap::new();
    for i in 0..COUNT {
        if i < first_tombstone {
            latest.insert(format!("key-{}", i % KEYS), Some(format!("v{i}")));
        } else {
            latest.insert(format!("key-{}", i - first_tombstone), None);
        }
    }
    latest
}

/// Checks one reader's view (lines `offset\tkey\tvalue-or-NULL`); returns the record count.
fn check_view(who: &str, text: &str) -> usize {
    let first_tombstone = COUNT - TOMBSTONES;
    let mut latest = BTreeMap::new();
    let mut last_offset = -1;
    let mut count = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let mut fields = line.split('\t');
        let (Some(offset), Some(key), Some(value)) = (fields.next(), fields.next(), fields.next())
        else {
            panic!("{who}: unexpected line {line:?}");
        };
        let offset: i64 = offset.parse().unwrap_or_else(|_| panic!("{who}: {line:?}"));
        assert!(offset > last_offset, "{who}: offsets go back at {line:?}");
        last_offset = offset;
        let value = (value != "NULL").then(|| value.to_owned());
        let written = if offset < first_tombstone {
            (format!("key-{}", offset % KEYS), Some(format!("v{offset}")))
        } else {
            (format!("key-{}", offset - first_tombstone), None)
        };
        assert_eq!(
            (key.to_owned(), value.clone()),
            written,
            "{who}: offset {offset} holds another record than was written there"
        );
        latest.insert(key.to_owned(), value);
        count += 1;
    }
    assert_eq!(last_offset, COUNT - 1, "{who}: the last record is missing");
    assert_eq!(latest, expected_latest(), "{who}: latest values differ");
    count
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compacted_topic_keeps_the_latest_value_of_each_key_for_every_client() {
    let tmp = tempfile::tempdir().unwrap();
    let mut node = Node::new(
        tmp.path().join("data"),
        tmp.path().join("logs"),
        &[
            "log.cleaner.backoff.ms=100",
            "offsets.topic.num.partitions=1",
        ],
    );
    let mut broker = node.start(&[]).await;
    let addr = broker.addr.clone();
    let configs = [
        "--config",
        "cleanup.policy=compact",
        "--config",
        "segment.bytes=8192",
        "--config",
        "min.cleanable.dirty.ratio=0.01",
    ];
    if python("create", &addr, &configs).is_none() {
        return;
    }
    let (count, keys, tombstones) = (COUNT.to_string(), KEYS.to_string(), TOMBSTONES.to_string());
    let produced = python(
        "produce",
        &addr,
        &[
            "--count",
            &count,
            "--keys",
            &keys,
            "--tombstones",
            &tombstones,
        ],
    );
    let Some(produced) = produced else { return };
    assert!(
        produced.contains(&format!("produced {COUNT}")),
        "{produced}"
    );

    let log_dir = tmp.path().join("data").join(format!("{TOPIC}-0"));
    broker.wait_until_cleaned(&log_dir, CLEAN_TIMEOUT).await;
    let mut counts = Vec::new();
    if let Some(view) = kcat_read(&addr) {
        counts.push(check_view("kcat", &view));
    }
    if let Some(view) = python("read", &addr, &[]) {
        counts.push(check_view("kafka-python", &view));
    }
    eprintln!("records left after compaction: {counts:?} of {COUNT}");
    for &n in &counts {
        assert!(
            n < (COUNT / 5) as usize,
            "{n} of {COUNT} records left: compaction did not happen"
        );
    }

    // A crash and a restart change nothing a reader sees.
    broker.kill();
    let broker = node.start(&[]).await;
    let addr = broker.addr.clone();
    if let Some(view) = kcat_read(&addr) {
        check_view("kcat after a restart", &view);
    }
    if let Some(view) = python("read", &addr, &[]) {
        check_view("kafka-python after a restart", &view);
    }
    assert!(
        broker::cleaned_up_to_active(&log_dir),
        "the cleaner checkpoint is kept"
    );
}
