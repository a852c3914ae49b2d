//! The transactional producer against our broker (in this process, loopback only), read back
//! by librdkafka (confluent-kafka, `tests/peers/txn_read.py`) at both isolation levels.
//!
//! - `commit_abort_commit_read_back_read_committed`: three transactions (committed, aborted
//!   after every record was acknowledged, committed) over 4 partitions: a read_committed
//!   reader gets exactly the committed records, once each, a read_uncommitted one all of them;
//!   then a transaction left open stays invisible to read_committed (its end is the last
//!   stable offset) until it commits.
//! - `a_second_producer_with_the_same_id_fences_the_first`: the first producer's transaction
//!   is aborted by the second's `init_transactions`; the first one's next calls fail fenced
//!   (a send may first fail abortable: the partition sees an old epoch, KIP-588) and it ends in
//!   FatalError; the second commits, and read_committed sees only the second's record.
//! - `the_exactly_once_example_runs_end_to_end`: the `exactly_once` example binary (built with
//!   this test's profile and target directory) turns 600 input records into 600 output
//!   records, aborting every 4th transaction on purpose: read_committed sees each output once,
//!   and the group's committed offsets are the input's end offsets.
//!
//! A missing confluent-kafka skips the read-backs with a NOTICE, unless
//! `KAFKA_RS_REQUIRE_PEERS=1`. The tests of this file run one at a time.
#![allow(clippy::unwrap_used)]

#[allow(dead_code)]
#[path = "broker/brokers.rs"]
mod brokers;
#[allow(dead_code)]
#[path = "broker/peers.rs"]
mod peers;

use std::collections::BTreeMap;
use std::future::Future;
use std::process::{Command, Stdio};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use kafka_producer::{Producer, ProducerConfig, ProducerRecord, TransactionState};
use kafka_protocol::error_code::ErrorCode;

use brokers::{InProcessBroker, cargo_build};
use peers::{run_script, skip, tail, wait_bounded};

/// Partitions of every auto-created topic.
const PARTITIONS: i32 = 4;

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
}

fn run<F: Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            tokio::time::timeout(Duration::from_secs(300), f)
                .await
                .expect("the test did not finish in 300 s")
        })
}

fn transactional(addr: &str, id: &str) -> ProducerConfig {
    ProducerConfig::from_pairs([
        ("bootstrap.servers", addr),
        ("transactional.id", id),
        ("linger.ms", "5"),
        ("max.block.ms", "30000"),
    ])
    .unwrap()
}

/// What librdkafka read: (partition, value) per record, and the group's committed offsets.
struct Read {
    records: Vec<(i32, String)>,
    committed: BTreeMap<i32, i64>,
}

/// Reads `topic` with confluent-kafka at `isolation`, waiting for at least `expect` records;
/// `None` when the peer is missing (skipped).
fn read(
    addr: &str,
    dir: &std::path::Path,
    topic: &str,
    isolation: &str,
    expect: usize,
    group: Option<(&str, &str)>,
) -> Option<Read> {
    let mut args = vec![
        "--bootstrap".to_owned(),
        addr.to_owned(),
        "--topic".to_owned(),
        topic.to_owned(),
        "--isolation".to_owned(),
        isolation.to_owned(),
        "--expect".to_owned(),
        expect.to_string(),
        "--timeout".to_owned(),
        "60".to_owned(),
    ];
    if let Some((g, t)) = group {
        args.extend(["--committed-group".to_owned(), g.to_owned()]);
        args.extend(["--committed-topic".to_owned(), t.to_owned()]);
    }
    let log = dir.join(format!("read-{topic}-{isolation}.log"));
    let out = match run_script("txn_read.py", &args, &log) {
        Ok(o) => o,
        Err(why) => {
            skip("the confluent-kafka read-back", &why);
            return None;
        }
    };
    let mut records = Vec::new();
    let mut committed = BTreeMap::new();
    for line in out.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        match f.as_slice() {
            ["REC", p, _offset, hex] => {
                let bytes: Vec<u8> = (0..hex.len())
                    .step_by(2)
                    .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                    .collect();
                records.push((p.parse().unwrap(), String::from_utf8(bytes).unwrap()));
            }
            ["COMMITTED", p, o] => {
                committed.insert(p.parse().unwrap(), o.parse().unwrap());
            }
            _ => {}
        }
    }
    Some(Read { records, committed })
}

fn sorted_values(r: &Read) -> Vec<String> {
    let mut v: Vec<String> = r.records.iter().map(|(_, v)| v.clone()).collect();
    v.sort();
    v
}

async fn send_txn(p: &Producer, topic: &str, prefix: &str, count: usize) -> Vec<String> {
    let mut futs = Vec::new();
    let mut values = Vec::new();
    for i in 0..count {
        let v = format!("{prefix}-{i:04}");
        let rec = ProducerRecord::new(topic.to_owned(), Bytes::from(v.clone()))
            .partition((i % PARTITIONS as usize) as i32);
        futs.push(p.enqueue(rec).await.unwrap());
        values.push(v);
    }
    for f in futs {
        f.await.unwrap();
    }
    values
}

fn start_broker(dir: &std::path::Path) -> InProcessBroker {
    InProcessBroker::start(&dir.join("data"), "127.0.0.1:0".parse().unwrap())
}

#[test]
fn commit_abort_commit_read_back_read_committed() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let broker = start_broker(dir.path());
    let addr = broker.addr.to_string();
    let topic = "txn-rw";
    // The reads block a worker thread; the producers' tasks go on on the other.
    let read = |isolation: &str, expect: usize| {
        tokio::task::block_in_place(|| read(&addr, dir.path(), topic, isolation, expect, None))
    };
    run(async {
        let p = Producer::new(transactional(&addr, "rw-1")).await.unwrap();
        p.init_transactions().await.unwrap();
        p.begin_transaction().unwrap();
        let mut committed = send_txn(&p, topic, "c1", 100).await;
        p.commit_transaction().await.unwrap();
        p.begin_transaction().unwrap();
        let aborted = send_txn(&p, topic, "ab", 50).await;
        p.abort_transaction().await.unwrap();
        p.begin_transaction().unwrap();
        committed.extend(send_txn(&p, topic, "c3", 100).await);
        p.commit_transaction().await.unwrap();
        p.close(Duration::from_secs(10)).await;
        let mut all = committed.clone();
        all.extend(aborted);
        committed.sort();
        all.sort();
        if let Some(r) = read("read_committed", committed.len()) {
            assert_eq!(
                sorted_values(&r),
                committed,
                "read_committed: the committed records once each"
            );
        }
        if let Some(r) = read("read_uncommitted", all.len()) {
            assert_eq!(sorted_values(&r), all, "read_uncommitted: every record");
        }
        // A transaction left open is invisible to read_committed until it commits.
        let p = Producer::new(transactional(&addr, "rw-2")).await.unwrap();
        p.init_transactions().await.unwrap();
        p.begin_transaction().unwrap();
        send_txn(&p, topic, "open", 20).await;
        if let Some(r) = read("read_committed", committed.len()) {
            assert_eq!(
                sorted_values(&r),
                committed,
                "an open transaction stays invisible"
            );
        }
        p.commit_transaction().await.unwrap();
        p.close(Duration::from_secs(10)).await;
        if let Some(r) = read("read_committed", committed.len() + 20) {
            let opened = r
                .records
                .iter()
                .filter(|(_, v)| v.starts_with("open-"))
                .count();
            assert_eq!(opened, 20, "committed, the open transaction's records show");
            assert_eq!(r.records.len(), committed.len() + 20);
        }
    });
    broker.stop();
}

#[test]
fn a_second_producer_with_the_same_id_fences_the_first() {
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let broker = start_broker(dir.path());
    let addr = broker.addr.to_string();
    let topic = "txn-fence";
    run(async {
        let first = Producer::new(transactional(&addr, "fence-1"))
            .await
            .unwrap();
        first.init_transactions().await.unwrap();
        first.begin_transaction().unwrap();
        send_txn(&first, topic, "first", 4).await;
        let second = Producer::new(transactional(&addr, "fence-1"))
            .await
            .unwrap();
        second.init_transactions().await.unwrap();
        // The first producer's next send: the partition has a newer epoch (abortable,
        // KIP-588) or it is already known fenced.
        let e = first
            .send(ProducerRecord::new(topic, Bytes::from_static(b"first-late")).partition(0))
            .await
            .unwrap_err();
        // The record itself fails with the partition's answer; the transaction is then
        // abortable (or already fenced).
        assert!(
            e.is_fenced() || e.code() == Some(ErrorCode::INVALID_PRODUCER_EPOCH),
            "{e}"
        );
        assert!(matches!(
            first.transaction_state(),
            Some(TransactionState::AbortableError | TransactionState::FatalError)
        ));
        let e = first.commit_transaction().await.unwrap_err();
        let e = if e.is_abortable() {
            first.abort_transaction().await.unwrap_err()
        } else {
            e
        };
        assert!(e.is_fenced(), "the first producer learns it is fenced: {e}");
        assert_eq!(
            first.transaction_state(),
            Some(TransactionState::FatalError)
        );
        let e = first.begin_transaction().unwrap_err();
        assert!(e.is_fenced(), "{e}");
        second.begin_transaction().unwrap();
        send_txn(&second, topic, "second", 1).await;
        second.commit_transaction().await.unwrap();
        first.close(Duration::from_secs(5)).await;
        second.close(Duration::from_secs(5)).await;
    });
    if let Some(r) = read(&addr, dir.path(), topic, "read_committed", 1, None) {
        assert_eq!(sorted_values(&r), vec!["second-0000".to_owned()]);
    }
    broker.stop();
}

#[test]
fn the_exactly_once_example_runs_end_to_end() {
    const COUNT: usize = 600;
    let _serial = serial();
    let example = cargo_build(
        &["-p", "kafka-producer", "--example", "exactly_once"],
        "examples/exactly_once",
    );
    let dir = tempfile::tempdir().unwrap();
    let broker = start_broker(dir.path());
    let addr = broker.addr.to_string();
    let inputs = run(async {
        let p = Producer::new(
            ProducerConfig::from_pairs([("bootstrap.servers", addr.as_str())]).unwrap(),
        )
        .await
        .unwrap();
        let mut values = Vec::new();
        let mut futs = Vec::new();
        for i in 0..COUNT {
            let v = format!("record-{i:05}");
            let rec = ProducerRecord::new("eos-in", Bytes::from(v.clone()))
                .key(Bytes::from(format!("k{}", i % 13)));
            futs.push(p.enqueue(rec).await.unwrap());
            values.push(v);
        }
        let mut ends: BTreeMap<i32, i64> = BTreeMap::new();
        for f in futs {
            let md = f.await.unwrap();
            let e = ends.entry(md.partition).or_default();
            *e = (*e).max(md.offset + 1);
        }
        p.close(Duration::from_secs(10)).await;
        (values, ends)
    });
    let (values, ends) = inputs;
    let log_path = dir.path().join("exactly_once.log");
    let log = std::fs::File::create(&log_path).unwrap();
    let mut child = Command::new(&example)
        .args([
            "--bootstrap",
            &addr,
            "--input",
            "eos-in",
            "--output",
            "eos-out",
        ])
        .args(["--group", "eos", "--transactional-id", "eos-1"])
        .args([
            "--count",
            &COUNT.to_string(),
            "--abort-every",
            "4",
            "--idle-ms",
            "20000",
        ])
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap();
    let status = wait_bounded(&mut child, Duration::from_secs(180));
    let output = std::fs::read_to_string(&log_path).unwrap_or_default();
    assert!(
        status.is_some_and(|s| s.success()),
        "the example failed ({status:?}):\n{}",
        tail(&output, 30)
    );
    let line = output
        .lines()
        .find_map(|l| l.strip_prefix("committed "))
        .unwrap_or_else(|| panic!("no summary line:\n{}", tail(&output, 30)));
    let committed: usize = line.split(' ').next().unwrap().parse().unwrap();
    assert_eq!(committed, COUNT, "{line}");
    if let Some(r) = read(
        &addr,
        dir.path(),
        "eos-out",
        "read_committed",
        COUNT,
        Some(("eos", "eos-in")),
    ) {
        let mut want: Vec<String> = values.iter().map(|v| v.to_ascii_uppercase()).collect();
        want.sort();
        assert_eq!(
            sorted_values(&r),
            want,
            "each input once, transformed, no aborted output"
        );
        for (p, end) in &ends {
            assert_eq!(
                r.committed.get(p),
                Some(end),
                "group eos's committed offset of eos-in-{p}"
            );
        }
    }
    broker.stop();
}
