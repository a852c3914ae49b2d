//! The partition layer of transactions over a real socket, read by independent consumers.
//!
//! The transaction coordinator is not wired here: a broker runs in-process on a temp dir and
//! serves a loopback port; the test gets producer ids with InitProducerId (no transactional
//! id), produces transactional batches over the socket, and writes the COMMIT and ABORT
//! markers itself with `Partition::write_txn_marker`, as the coordinator will. Then
//! kafka-python and confluent-kafka consumers read with `read_committed` (committed records
//! only, nothing of an open transaction until its marker) and `read_uncommitted` (all), and
//! ListOffsets latest under read_committed answers the last stable offset. The broker is
//! reopened on the same directory, cleanly and without a close (the `.txnindex` deleted, so
//! that recovery must rebuild it), and the aborted records stay filtered.
#![allow(clippy::unwrap_used)]

#[path = "common/peers.rs"]
#[allow(dead_code)]
mod peers;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kafka_broker::replica::delayed;
use kafka_broker::{Broker, BrokerConfig};
use kafka_net::connection::{Connection, ConnectionConfig};
use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::*;
use kafka_protocol::record::RecordBatchBuilder;

const TOPIC: &str = "txn";

/// A broker serving 127.0.0.1:<some port> in this process.
struct Running {
    broker: Arc<Broker>,
    addr: String,
    stop: tokio::sync::oneshot::Sender<()>,
    serving: tokio::task::JoinHandle<()>,
}

async fn start(dir: &Path) -> Running {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let mut config = BrokerConfig {
        server: kafka_broker::config::ServerConfig {
            data_dir: dir.to_path_buf(),
            ..Default::default()
        },
        topics: kafka_broker::config::TopicsConfig {
            num_partitions: 1,
            ..Default::default()
        },
        ..Default::default()
    };
    config.network.set_client_listener(&addr).unwrap();
    config.validate().unwrap();
    let broker = Arc::new(Broker::open(config).unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let b = Arc::clone(&broker);
    let serving = tokio::spawn(async move {
        kafka_broker::server::serve(listener, b, async {
            let _ = stopped.await;
        })
        .await
        .unwrap();
    });
    Running {
        broker,
        addr,
        stop,
        serving,
    }
}

impl Running {
    /// Stops serving and closes the broker (a clean shutdown).
    async fn stop(self) {
        let _ = self.stop.send(());
        self.serving.await.unwrap();
    }

    /// Stops serving without closing the broker: the next open recovers.
    async fn kill(self) {
        self.serving.abort();
        let _ = self.serving.await;
        drop(self.broker);
    }

    async fn connect(&self) -> Connection {
        Connection::connect(&self.addr, ConnectionConfig::default())
            .await
            .unwrap()
    }

    /// Writes a marker as the coordinator does and waits for its acknowledgement.
    async fn marker(&self, pid: i64, commit: bool) {
        let part = self.broker.partition(TOPIC, 0).unwrap();
        let now = self.broker.now_ms();
        let (_, pending) = part.write_txn_marker(pid, 0, 0, commit, now).unwrap();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        delayed::complete_append(pending, deadline).await.unwrap();
    }
}

async fn producer_id(conn: &Connection) -> i64 {
    let body = RequestBody::InitProducerId(InitProducerIdRequest {
        transactional_id: None,
        transaction_timeout_ms: 60_000,
        ..Default::default()
    });
    let ResponseBody::InitProducerId(r) = conn.request_at(body, 4).await.unwrap() else {
        panic!("not an InitProducerId answer")
    };
    assert_eq!(r.error_code, 0);
    assert_eq!(r.producer_epoch, 0);
    r.producer_id
}

/// Produces one batch of `values` (transactional when `txn`) of producer `pid` (-1: none).
async fn produce(conn: &Connection, pid: i64, seq: i32, values: &[&str], txn: bool) -> ErrorCode {
    let mut b = RecordBatchBuilder::new().transactional(txn);
    if pid >= 0 {
        b = b.producer(pid, 0, seq);
    }
    for (i, v) in values.iter().enumerate() {
        let key = format!("key-{i}");
        b.append(
            kafka_broker::clock::Clock::system().now_ms(),
            Some(key.as_bytes()),
            Some(v.as_bytes()),
            &[],
        )
        .unwrap();
    }
    let body = RequestBody::Produce(ProduceRequest {
        transactional_id: None,
        acks: -1,
        timeout_ms: 10_000,
        topic_data: vec![produce_request::TopicProduceData {
            name: KStr::from_static(TOPIC),
            partition_data: vec![produce_request::PartitionProduceData {
                index: 0,
                records: Some(b.build().unwrap()),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    });
    let ResponseBody::Produce(r) = conn.request_at(body, 9).await.unwrap() else {
        panic!("not a Produce answer")
    };
    ErrorCode(r.responses[0].partition_responses[0].error_code)
}

/// ListOffsets latest (v4) under `isolation` (0 read_uncommitted, 1 read_committed).
async fn latest(conn: &Connection, isolation: i8) -> i64 {
    let body = RequestBody::ListOffsets(ListOffsetsRequest {
        replica_id: -1,
        isolation_level: isolation,
        topics: vec![list_offsets_request::ListOffsetsTopic {
            name: KStr::from_static(TOPIC),
            partitions: vec![list_offsets_request::ListOffsetsPartition {
                partition_index: 0,
                current_leader_epoch: -1,
                timestamp: -1,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    });
    let ResponseBody::ListOffsets(r) = conn.request_at(body, 4).await.unwrap() else {
        panic!("not a ListOffsets answer")
    };
    let p = &r.topics[0].partitions[0];
    assert_eq!(p.error_code, 0);
    p.offset
}

/// What a Fetch v11 of partition 0 from `offset` answered: its records' values, last stable
/// offset, high watermark and aborted transactions (`None`: null).
struct Fetched {
    values: Vec<String>,
    last_stable: i64,
    high_watermark: i64,
    aborted: Option<Vec<(i64, i64)>>,
}

async fn fetch(
    conn: &Connection,
    offset: i64,
    isolation: i8,
    min_bytes: i32,
    max_wait_ms: i32,
) -> Fetched {
    let body = RequestBody::Fetch(Box::new(FetchRequest {
        replica_id: -1,
        max_wait_ms,
        min_bytes,
        max_bytes: 1 << 20,
        isolation_level: isolation,
        topics: vec![fetch_request::FetchTopic {
            topic: KStr::from_static(TOPIC),
            partitions: vec![fetch_request::FetchPartition {
                partition: 0,
                current_leader_epoch: -1,
                fetch_offset: offset,
                log_start_offset: -1,
                partition_max_bytes: 1 << 20,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }));
    let ResponseBody::Fetch(r) = conn.request_at(body, 11).await.unwrap() else {
        panic!("not a Fetch answer")
    };
    let p = &r.responses[0].partitions[0];
    assert_eq!(p.error_code, 0);
    let records = p.records.clone().unwrap_or_default();
    let values = kafka_protocol::record::RecordBatches::new(records)
        .flatten()
        .filter(|b| !b.is_control())
        .flat_map(|b| {
            b.records(1 << 20)
                .unwrap()
                .map(|r| String::from_utf8(r.unwrap().value.unwrap().to_vec()).unwrap())
                .collect::<Vec<_>>()
        })
        .collect();
    Fetched {
        values,
        last_stable: p.last_stable_offset,
        high_watermark: p.high_watermark,
        aborted: p
            .aborted_transactions
            .as_ref()
            .map(|a| a.iter().map(|t| (t.producer_id, t.first_offset)).collect()),
    }
}

/// A consumer of partition 0 from the beginning until its position reaches `end` (or 30 s
/// pass): prints `VALUES <json list>` and `POSITION <n>`. kafka-python (`kp`) or
/// confluent-kafka (`ck`).
const PY_CONSUMER: &str = r#"
import json, sys, time
lib, addr, topic, isolation, end = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
values = []
deadline = time.time() + 30
if lib == "kp":
    try:
        from kafka import KafkaConsumer, TopicPartition
    except ImportError:
        print("kafka-python is not installed"); sys.exit(3)
    tp = TopicPartition(topic, 0)
    c = KafkaConsumer(bootstrap_servers=addr, isolation_level=isolation, group_id=None,
                      enable_auto_commit=False, auto_offset_reset="earliest")
    c.assign([tp])
    c.seek_to_beginning(tp)
    while c.position(tp) < end and time.time() < deadline:
        for recs in c.poll(timeout_ms=200).values():
            values.extend(r.value.decode() for r in recs)
    position = c.position(tp)
    print("END_OFFSET", c.end_offsets([tp])[tp])
else:
    try:
        from confluent_kafka import Consumer, TopicPartition, OFFSET_BEGINNING
    except ImportError:
        print("confluent-kafka is not installed"); sys.exit(3)
    c = Consumer({"bootstrap.servers": addr, "group.id": "txn-reader", "isolation.level": isolation,
                  "enable.auto.commit": False, "broker.address.family": "v4"})
    c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    position = -1
    while position < end and time.time() < deadline:
        m = c.poll(0.2)
        if m is not None and m.error() is None:
            values.append(m.value().decode())
        p = c.position([TopicPartition(topic, 0)])[0].offset
        position = max(position, p)
print("VALUES", json.dumps(values))
print("POSITION", position)
c.close()
"#;

/// The values a peer consumer reads up to `end`; `None` when the peer is missing.
async fn consume(lib: &str, addr: &str, isolation: &str, end: i64) -> Option<(Vec<String>, i64)> {
    let args: Vec<String> = vec![
        "-c".into(),
        PY_CONSUMER.into(),
        lib.into(),
        addr.into(),
        TOPIC.into(),
        isolation.into(),
        end.to_string(),
    ];
    let out = tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        peers::run("python3", &args)
    })
    .await
    .unwrap()?;
    let line = |tag: &str| {
        out.lines()
            .find_map(|l| l.strip_prefix(tag))
            .unwrap_or_else(|| panic!("no {tag} in {out}"))
            .trim()
            .to_owned()
    };
    let values: Vec<String> = serde_json_lite(&line("VALUES "));
    let position: i64 = line("POSITION ").parse().unwrap();
    if lib == "kp" {
        // kafka-python's own ListOffsets under its isolation level.
        let end_offset: i64 = line("END_OFFSET ").parse().unwrap();
        assert_eq!(end_offset, end, "kafka-python end_offsets ({isolation})");
    }
    Some((values, position))
}

/// Parses a JSON list of plain strings (the values here have no quotes or escapes).
fn serde_json_lite(s: &str) -> Vec<String> {
    let inner = s.trim().trim_start_matches('[').trim_end_matches(']');
    inner
        .split(',')
        .map(|v| v.trim().trim_matches('"').to_owned())
        .filter(|v| !v.is_empty())
        .collect()
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

/// Both peers, both isolation levels: read_committed sees `committed` up to `lso`,
/// read_uncommitted sees `all` up to `hw`. Returns whether any peer ran.
async fn check_peers(addr: &str, committed: &[&str], lso: i64, all: &[&str], hw: i64) -> bool {
    let mut ran = false;
    for lib in ["kp", "ck"] {
        if let Some((values, position)) = consume(lib, addr, "read_committed", lso).await {
            assert_eq!(values, strings(committed), "{lib} read_committed");
            assert_eq!(position, lso, "{lib} read_committed stops at the LSO");
            ran = true;
        }
        if let Some((values, position)) = consume(lib, addr, "read_uncommitted", hw).await {
            assert_eq!(values, strings(all), "{lib} read_uncommitted");
            assert_eq!(position, hw, "{lib} read_uncommitted reads to the HW");
        }
    }
    ran
}

const COMMITTED: [&str; 4] = ["c-0", "c-1", "c-2", "plain"];
const ALL_FIRST: [&str; 9] = [
    "c-0", "c-1", "c-2", "x-0", "x-1", "x-2", "plain", "o-0", "o-1",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_committed_peers_see_committed_records_only_across_restarts() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    let dir = tempfile::tempdir().unwrap();
    let run = start(dir.path()).await;
    run.broker
        .create_topic(TOPIC, 1, BTreeMap::new(), false)
        .unwrap();
    let conn = run.connect().await;
    let (a, b, c) = (
        producer_id(&conn).await,
        producer_id(&conn).await,
        producer_id(&conn).await,
    );
    // Offsets: a's committed transaction 0-2 and its marker 3; b's aborted one 4-6 and 7;
    // a plain record 8; c's transaction 9-10, open.
    assert_eq!(
        produce(&conn, a, 0, &["c-0", "c-1", "c-2"], true).await,
        ErrorCode::NONE
    );
    run.marker(a, true).await;
    assert_eq!(
        produce(&conn, b, 0, &["x-0", "x-1", "x-2"], true).await,
        ErrorCode::NONE
    );
    run.marker(b, false).await;
    assert_eq!(
        produce(&conn, -1, -1, &["plain"], false).await,
        ErrorCode::NONE
    );
    assert_eq!(
        produce(&conn, c, 0, &["o-0", "o-1"], true).await,
        ErrorCode::NONE
    );
    // Clients may not write markers, nor sequence-less batches of a producer, nor plain
    // batches inside their open transaction.
    let marker = kafka_protocol::record::control::end_txn_marker_batch(
        kafka_protocol::record::control::ControlRecordType::Commit,
        c,
        0,
        0,
        0,
    )
    .unwrap();
    assert_eq!(produce_raw(&conn, marker).await, ErrorCode::INVALID_RECORD);
    assert_eq!(
        produce(&conn, c, -1, &["z"], true).await,
        ErrorCode::INVALID_RECORD
    );
    assert_eq!(
        produce(&conn, c, 2, &["z"], false).await,
        ErrorCode::INVALID_TXN_STATE
    );

    assert_eq!(latest(&conn, 1).await, 9, "read_committed latest = LSO");
    assert_eq!(latest(&conn, 0).await, 11, "read_uncommitted latest = HW");
    let ran = check_peers(&run.addr, &COMMITTED, 9, &ALL_FIRST, 11).await;

    // Our own Fetch: read_committed stops at the LSO and names b's aborted transaction;
    // read_uncommitted reads to the HW and names none (null).
    let f = fetch(&conn, 0, 1, 0, 0).await;
    assert_eq!((f.last_stable, f.high_watermark), (9, 11));
    assert_eq!(f.aborted, Some(vec![(b, 4)]));
    assert_eq!(
        f.values,
        strings(&ALL_FIRST[..7]),
        "up to the LSO, aborted ones included"
    );
    let f = fetch(&conn, 0, 0, 0, 0).await;
    assert_eq!((f.aborted, f.values), (None, strings(&ALL_FIRST)));
    assert_eq!(fetch(&conn, 5, 1, 0, 0).await.aborted, Some(vec![(b, 4)]));
    assert_eq!(
        fetch(&conn, 8, 1, 0, 0).await.aborted,
        Some(vec![]),
        "after the abort"
    );
    // A long poll at the LSO waits for it: nothing within a short wait, and c's commit
    // (which moves the LSO) answers a long one with c's records.
    let f = fetch(&conn, 9, 1, 1, 200).await;
    assert!(f.values.is_empty(), "{:?}", f.values);
    let poll = {
        let conn = conn.clone();
        tokio::spawn(async move { fetch(&conn, 9, 1, 1, 30_000).await })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    // c commits: its records become visible to read_committed.
    run.marker(c, true).await;
    let f = poll.await.unwrap();
    assert_eq!(
        f.values,
        strings(&["o-0", "o-1"]),
        "the long poll was answered"
    );
    assert_eq!(f.last_stable, 12);
    assert_eq!(latest(&conn, 1).await, 12);
    let committed_all = ["c-0", "c-1", "c-2", "plain", "o-0", "o-1"];
    check_peers(&run.addr, &committed_all, 12, &ALL_FIRST, 12).await;
    let txnindex = dir
        .path()
        .join(format!("{TOPIC}-0/00000000000000000000.txnindex"));
    assert_eq!(std::fs::metadata(&txnindex).unwrap().len(), 34);
    drop(conn);

    // A clean restart: the `.txnindex` is read back.
    run.stop().await;
    let run = start(dir.path()).await;
    let conn = run.connect().await;
    assert_eq!(latest(&conn, 1).await, 12);
    check_peers(&run.addr, &committed_all, 12, &ALL_FIRST, 12).await;
    // A transaction open across the restart: b's next one, left open.
    assert_eq!(produce(&conn, b, 3, &["y-0"], true).await, ErrorCode::NONE);
    assert_eq!(latest(&conn, 1).await, 12);
    drop(conn);

    // Killed (no close) and the index file gone: recovery rebuilds it from the batches, and
    // the open transaction is known again from the log.
    run.kill().await;
    std::fs::remove_file(&txnindex).unwrap();
    let run = start(dir.path()).await;
    assert_eq!(std::fs::metadata(&txnindex).unwrap().len(), 34, "rebuilt");
    let conn = run.connect().await;
    assert_eq!(
        latest(&conn, 1).await,
        12,
        "b's open transaction holds the LSO"
    );
    let mut all = ALL_FIRST.to_vec();
    all.push("y-0");
    check_peers(&run.addr, &committed_all, 12, &all, 13).await;
    run.marker(b, false).await;
    assert_eq!(latest(&conn, 1).await, 14);
    check_peers(&run.addr, &committed_all, 14, &all, 14).await;
    // DescribeProducers names the three producers, none with a transaction open.
    let body = RequestBody::DescribeProducers(DescribeProducersRequest {
        topics: vec![describe_producers_request::TopicRequest {
            name: KStr::from_static(TOPIC),
            partition_indexes: vec![0, 7],
            ..Default::default()
        }],
        ..Default::default()
    });
    let ResponseBody::DescribeProducers(r) = conn.request_at(body, 0).await.unwrap() else {
        panic!("not a DescribeProducers answer")
    };
    let parts = &r.topics[0].partitions;
    assert_eq!(parts[0].error_code, 0);
    let mut pids: Vec<(i64, i64)> = parts[0]
        .active_producers
        .iter()
        .map(|p| (p.producer_id, p.current_txn_start_offset))
        .collect();
    pids.sort_unstable();
    assert_eq!(pids, vec![(a, -1), (b, -1), (c, -1)]);
    assert_eq!(
        parts[1].error_code,
        ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.code()
    );
    drop(conn);
    run.stop().await;
    if !ran {
        eprintln!("NOTICE: no python peer ran; checked over our own socket requests only");
    }
}

async fn produce_raw(conn: &Connection, records: Bytes) -> ErrorCode {
    let body = RequestBody::Produce(ProduceRequest {
        transactional_id: None,
        acks: -1,
        timeout_ms: 10_000,
        topic_data: vec![produce_request::TopicProduceData {
            name: KStr::from_static(TOPIC),
            partition_data: vec![produce_request::PartitionProduceData {
                index: 0,
                records: Some(records),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    });
    let ResponseBody::Produce(r) = conn.request_at(body, 9).await.unwrap() else {
        panic!("not a Produce answer")
    };
    ErrorCode(r.responses[0].partition_responses[0].error_code)
}
