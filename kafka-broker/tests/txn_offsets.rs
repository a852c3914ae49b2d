//! Transactional offset commits over a real socket, with a broker served in-process (so the
//! test can stand in for the transaction coordinator: it appends the COMMIT/ABORT marker to
//! the group's `__consumer_offsets` partition and calls `complete_transaction`, as the lead's
//! wiring does after EndTxn):
//!
//! - InitProducerId (no transactional id) gives a producer id; TxnOffsetCommit v0 and v3 are
//!   accepted; while the transaction is open OffsetFetch shows the previous offsets, and with
//!   `require_stable` (v7 single group, v8 groups) answers UNSTABLE_OFFSET_COMMIT;
//! - after the COMMIT marker kafka-python's `list_group_offsets` (3.x; older versions'
//!   `list_consumer_group_offsets`) and confluent-kafka's `list_consumer_group_offsets`
//!   (`require_stable=True`) see the transaction's offsets; after an ABORT marker they do not;
//!   while a transaction is open confluent-kafka gets UNSTABLE_OFFSET_COMMIT for its partition;
//! - a transaction left open across a broker restart is pending again after the replay and
//!   commits when its marker comes; its offsets survive a second restart.
#![allow(clippy::unwrap_used)]

#[path = "common/peers.rs"]
#[allow(dead_code)]
mod peers;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use kafka_broker::offsets_topic::OFFSETS_TOPIC;
use kafka_broker::replica::BatchSummary;
use kafka_broker::{Broker, BrokerConfig};
use kafka_net::{Connection, ConnectionConfig};
use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::txn_offset_commit_request::{
    TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
};
use kafka_protocol::messages::{
    InitProducerIdRequest, OffsetFetchRequest, RequestBody, ResponseBody, TxnOffsetCommitRequest,
};
use kafka_protocol::record::{ControlRecordType, end_txn_marker_batch};

const TOPIC: &str = "src";
const GROUP: &str = "txn-group";
const OFFSETS_PARTITIONS: i32 = 5;
const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);

/// A broker served on a loopback port until `stop` is sent.
struct Served {
    broker: Arc<Broker>,
    addr: String,
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

async fn serve(dir: &std::path::Path) -> Served {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let mut config = BrokerConfig {
        server: kafka_broker::config::ServerConfig {
            data_dir: dir.to_path_buf(),
            ..Default::default()
        },
        group: kafka_broker::config::GroupConfig {
            offsets_topic_num_partitions: OFFSETS_PARTITIONS,
            ..Default::default()
        },
        ..Default::default()
    };
    config.network.set_client_listener(&addr).unwrap();
    config.validate().unwrap();
    let broker = Arc::new(Broker::open(config).unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let b = broker.clone();
    let task = tokio::spawn(async move {
        kafka_broker::server::serve(listener, b, async {
            let _ = stopped.await;
        })
        .await
        .unwrap();
    });
    Served {
        broker,
        addr,
        stop,
        task,
    }
}

impl Served {
    /// A clean stop (the server closes the broker).
    async fn stop(self) {
        let _ = self.stop.send(());
        tokio::time::timeout(Duration::from_secs(30), self.task)
            .await
            .expect("the broker stops")
            .unwrap();
    }

    /// Appends producer `pid`'s COMMIT or ABORT marker to the group's offsets partition and
    /// tells the group coordinator, as the transaction coordinator does.
    fn end_transaction(&self, pid: i64, epoch: i16, commit: bool) {
        let index = self.broker.groups.partition_for(GROUP);
        let part = self.broker.partition(OFFSETS_TOPIC, index).unwrap();
        let kind = if commit {
            ControlRecordType::Commit
        } else {
            ControlRecordType::Abort
        };
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64;
        let batch = end_txn_marker_batch(kind, pid, epoch, 0, now).unwrap();
        let summary = BatchSummary {
            producer_id: pid,
            producer_epoch: epoch,
            base_sequence: -1,
            records: 1,
            max_timestamp: now,
            transactional: true,
        };
        part.append_as_leader(BytesMut::from(&batch[..]), &[summary], now)
            .unwrap();
        self.broker.groups.complete_transaction(index, pid, commit);
    }
}

async fn connect(addr: &str) -> Connection {
    Connection::connect(addr, ConnectionConfig::default())
        .await
        .unwrap_or_else(|e| panic!("cannot connect to {addr}: {e}"))
}

async fn request(conn: &Connection, body: RequestBody, version: i16) -> ResponseBody {
    let api = body.api_key();
    tokio::time::timeout(REQUEST_TIMEOUT, conn.request_at(body, version))
        .await
        .unwrap_or_else(|_| panic!("{api:?} got no answer within {REQUEST_TIMEOUT:?}"))
        .unwrap_or_else(|e| panic!("{api:?} failed: {e}"))
}

async fn init_producer_id(conn: &Connection) -> (i64, i16) {
    let body = RequestBody::InitProducerId(InitProducerIdRequest {
        transactional_id: None,
        transaction_timeout_ms: 60_000,
        producer_id: -1,
        producer_epoch: -1,
        ..Default::default()
    });
    let ResponseBody::InitProducerId(r) = request(conn, body, 4).await else {
        panic!("not an InitProducerId answer")
    };
    assert_eq!(ErrorCode(r.error_code), ErrorCode::NONE);
    (r.producer_id, r.producer_epoch)
}

/// One TxnOffsetCommit of `version`; the per-partition errors, in order.
async fn txn_commit(
    conn: &Connection,
    version: i16,
    (pid, epoch): (i64, i16),
    offsets: &[(i32, i64)],
) -> Vec<ErrorCode> {
    let body = RequestBody::TxnOffsetCommit(Box::new(TxnOffsetCommitRequest {
        transactional_id: KStr::from_static("txn-offsets-test"),
        group_id: KStr::from_static(GROUP),
        producer_id: pid,
        producer_epoch: epoch,
        topics: vec![TxnOffsetCommitRequestTopic {
            name: KStr::from_static(TOPIC),
            partitions: offsets
                .iter()
                .map(|&(p, o)| TxnOffsetCommitRequestPartition {
                    partition_index: p,
                    committed_offset: o,
                    committed_metadata: Some(KStr::from(format!("txn-{o}"))),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }],
        ..Default::default()
    }));
    let ResponseBody::TxnOffsetCommit(r) = request(conn, body, version).await else {
        panic!("not a TxnOffsetCommit answer")
    };
    r.topics
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| ErrorCode(p.error_code)))
        .collect()
}

/// OffsetFetch of partitions 0 and 1: (offset, error) each. v8+ asks in the groups form.
async fn fetch(conn: &Connection, version: i16, require_stable: bool) -> Vec<(i64, ErrorCode)> {
    let partitions = vec![0, 1];
    let req = if version >= 8 {
        OffsetFetchRequest {
            groups: vec![OffsetFetchRequestGroup {
                group_id: KStr::from_static(GROUP),
                topics: Some(vec![OffsetFetchRequestTopics {
                    name: KStr::from_static(TOPIC),
                    partition_indexes: partitions,
                    ..Default::default()
                }]),
                ..Default::default()
            }],
            require_stable,
            ..Default::default()
        }
    } else {
        OffsetFetchRequest {
            group_id: KStr::from_static(GROUP),
            topics: Some(vec![OffsetFetchRequestTopic {
                name: KStr::from_static(TOPIC),
                partition_indexes: partitions,
                ..Default::default()
            }]),
            require_stable,
            ..Default::default()
        }
    };
    let ResponseBody::OffsetFetch(r) = request(conn, RequestBody::OffsetFetch(req), version).await
    else {
        panic!("not an OffsetFetch answer")
    };
    if version >= 8 {
        r.groups[0].topics[0]
            .partitions
            .iter()
            .map(|p| (p.committed_offset, ErrorCode(p.error_code)))
            .collect()
    } else {
        r.topics[0]
            .partitions
            .iter()
            .map(|p| (p.committed_offset, ErrorCode(p.error_code)))
            .collect()
    }
}

const UNSTABLE: (i64, ErrorCode) = (-1, ErrorCode::UNSTABLE_OFFSET_COMMIT);

fn ok(offset: i64) -> (i64, ErrorCode) {
    (offset, ErrorCode::NONE)
}

const PY_KAFKA_PYTHON: &str = r#"
import json, sys
try:
    from kafka import KafkaAdminClient
except ImportError:
    print("kafka-python is not installed")
    sys.exit(3)
addr, group = sys.argv[1], sys.argv[2]
admin = KafkaAdminClient(bootstrap_servers=addr, request_timeout_ms=10000)
if hasattr(admin, "list_group_offsets"):
    # kafka-python 3: OffsetFetch v8 for a dict of groups (None: every committed offset).
    offsets = admin.list_group_offsets({group: None})[group]
else:
    offsets = admin.list_consumer_group_offsets(group)
admin.close()
print(json.dumps({"%s-%d" % (tp.topic, tp.partition): om.offset for tp, om in offsets.items()}))
"#;

const PY_CONFLUENT: &str = r#"
import json, sys
try:
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient
except ImportError:
    print("confluent-kafka is not installed")
    sys.exit(3)
addr, group, topic = sys.argv[1], sys.argv[2], sys.argv[3]
admin = AdminClient({"bootstrap.servers": addr, "broker.address.family": "v4"})
asked = [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0), TopicPartition(topic, 1)])]
futures = admin.list_consumer_group_offsets(asked, require_stable=True, request_timeout=10)
result = futures[group].result(timeout=20)
out = {}
for tp in result.topic_partitions:
    out["%s-%d" % (tp.topic, tp.partition)] = tp.error.name() if tp.error else tp.offset
print(json.dumps(out))
"#;

fn python(script: &str, args: &[&str]) -> Option<serde_json::Value> {
    let mut all = vec!["-c", script];
    all.extend_from_slice(args);
    let out = peers::run("python3", &all)?;
    let line = out.lines().rev().find(|l| l.starts_with('{'))?;
    Some(serde_json::from_str(line).unwrap())
}

/// Checks what kafka-python sees for partitions 0 and 1 (`None`: no committed offset, which
/// it does not list).
async fn kafka_python_sees(addr: &str, expected: [Option<i64>; 2]) {
    let a = addr.to_owned();
    let seen = tokio::task::spawn_blocking(move || python(PY_KAFKA_PYTHON, &[&a, GROUP]))
        .await
        .unwrap();
    if let Some(v) = seen {
        for (p, want) in expected.iter().enumerate() {
            let got = v
                .get(format!("{TOPIC}-{p}"))
                .and_then(serde_json::Value::as_i64);
            assert_eq!(got, *want, "kafka-python, partition {p}: {v}");
        }
    }
}

/// What confluent-kafka (require_stable) answers for partitions 0 and 1: an offset, or the
/// name of the partition's error.
async fn confluent(addr: &str) -> Option<serde_json::Value> {
    let a = addr.to_owned();
    tokio::task::spawn_blocking(move || python(PY_CONFLUENT, &[&a, GROUP, TOPIC]))
        .await
        .unwrap()
}

/// Checks what both peers see for partitions 0 and 1 (confluent-kafka answers -1 for
/// `None`).
async fn peers_see(addr: &str, expected: [Option<i64>; 2]) {
    kafka_python_sees(addr, expected).await;
    if let Some(v) = confluent(addr).await {
        for (p, want) in expected.iter().enumerate() {
            let got = v
                .get(format!("{TOPIC}-{p}"))
                .and_then(serde_json::Value::as_i64);
            assert_eq!(
                got,
                Some(want.unwrap_or(-1)),
                "confluent-kafka, partition {p}: {v}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transactional_offsets_commit_abort_and_survive_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let served = serve(dir.path()).await;
    served
        .broker
        .create_topic(TOPIC, 2, BTreeMap::new(), false)
        .unwrap();
    let conn = connect(&served.addr).await;
    let producer = init_producer_id(&conn).await;
    assert!(producer.0 >= 0);

    // Open transaction: nothing committed shows, require_stable says unstable.
    assert_eq!(
        txn_commit(&conn, 3, producer, &[(0, 42), (1, 43)]).await,
        [ErrorCode::NONE; 2]
    );
    for v in [2, 7, 8, 9] {
        assert_eq!(fetch(&conn, v, false).await, [ok(-1), ok(-1)], "v{v}");
    }
    for v in [7, 8, 9] {
        assert_eq!(fetch(&conn, v, true).await, [UNSTABLE, UNSTABLE], "v{v}");
    }
    // A partition of a topic that does not exist is refused on its own.
    let unknown = RequestBody::TxnOffsetCommit(Box::new(TxnOffsetCommitRequest {
        transactional_id: KStr::from_static("txn-offsets-test"),
        group_id: KStr::from_static(GROUP),
        producer_id: producer.0,
        producer_epoch: producer.1,
        topics: vec![TxnOffsetCommitRequestTopic {
            name: KStr::from_static("no-such-topic"),
            partitions: vec![TxnOffsetCommitRequestPartition::default()],
            ..Default::default()
        }],
        ..Default::default()
    }));
    let ResponseBody::TxnOffsetCommit(r) = request(&conn, unknown, 0).await else {
        panic!()
    };
    assert_eq!(
        ErrorCode(r.topics[0].partitions[0].error_code),
        ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
    );

    served.end_transaction(producer.0, producer.1, true);
    assert_eq!(fetch(&conn, 8, true).await, [ok(42), ok(43)]);
    peers_see(&served.addr, [Some(42), Some(43)]).await;

    // Aborted (v0 this time): the committed offsets stay.
    assert_eq!(
        txn_commit(&conn, 0, producer, &[(0, 100)]).await,
        [ErrorCode::NONE]
    );
    assert_eq!(fetch(&conn, 8, true).await, [UNSTABLE, ok(43)]);
    assert_eq!(fetch(&conn, 6, false).await, [ok(42), ok(43)]);
    // While it is open: kafka-python (no require_stable) sees the committed offsets,
    // confluent-kafka (require_stable) is told partition 0 is unstable.
    kafka_python_sees(&served.addr, [Some(42), Some(43)]).await;
    if let Some(v) = confluent(&served.addr).await {
        assert_eq!(v[format!("{TOPIC}-0")], "UNSTABLE_OFFSET_COMMIT", "{v}");
        assert_eq!(v[format!("{TOPIC}-1")], 43, "{v}");
    }
    served.end_transaction(producer.0, producer.1, false);
    assert_eq!(fetch(&conn, 8, true).await, [ok(42), ok(43)]);
    peers_see(&served.addr, [Some(42), Some(43)]).await;

    // Left open across a restart.
    assert_eq!(
        txn_commit(&conn, 4, producer, &[(1, 200)]).await,
        [ErrorCode::NONE]
    );
    drop(conn);
    served.stop().await;
    let served = serve(dir.path()).await;
    let conn = connect(&served.addr).await;
    assert_eq!(fetch(&conn, 8, true).await, [ok(42), UNSTABLE]);
    assert_eq!(fetch(&conn, 8, false).await, [ok(42), ok(43)]);
    served.end_transaction(producer.0, producer.1, true);
    assert_eq!(fetch(&conn, 8, true).await, [ok(42), ok(200)]);
    peers_see(&served.addr, [Some(42), Some(200)]).await;

    // Replayed from the log again: the marker is there now.
    drop(conn);
    served.stop().await;
    let served = serve(dir.path()).await;
    let conn = connect(&served.addr).await;
    assert_eq!(fetch(&conn, 8, true).await, [ok(42), ok(200)]);
    drop(conn);
    served.stop().await;
}
