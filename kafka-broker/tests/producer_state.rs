//! Idempotent-producer state survives a broker restart, clean (snapshot) or not (rebuilt from
//! the log): a retried batch is recognised as a duplicate and sequence gaps are refused.
//! Producers idle for `producer.id.expiration.ms` are forgotten, on the maintenance timer and
//! at load: their next batch is taken as a new producer's (current Kafka accepts any sequence
//! then); confluent-kafka's idempotent producer keeps producing across such an expiry.
#![allow(clippy::unwrap_used)]

#[path = "crash/broker.rs"]
#[allow(dead_code)]
mod broker;

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use kafka_broker::handler::{self, Reply};
use kafka_broker::{Broker, BrokerConfig};
use kafka_net::server::IncomingRequest;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::*;
use kafka_protocol::record::RecordBatchBuilder;
use kafka_protocol::{KStr, frame};

const TOPIC: &str = "idem";

fn batch(pid: i64, epoch: i16, first_seq: i32, count: i32) -> Bytes {
    let mut b = RecordBatchBuilder::new().producer(pid, epoch, first_seq);
    for i in 0..count {
        b.append(
            1_000 + i64::from(i),
            None,
            Some(format!("v{}", first_seq + i).as_bytes()),
            &[],
        )
        .unwrap();
    }
    b.build().unwrap()
}

/// Sends one Produce v9 (acks=all) and returns (error code, base offset).
async fn produce(broker: &Arc<Broker>, records: Bytes) -> (ErrorCode, i64) {
    let body = RequestBody::Produce(ProduceRequest {
        acks: -1,
        timeout_ms: 1000,
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
    let header = RequestHeader {
        request_api_key: ApiKey::Produce as i16,
        request_api_version: 9,
        correlation_id: 1,
        client_id: Some(KStr::from_static("idem-test")),
        ..Default::default()
    };
    let bytes = frame::encode_request(&header, &body).unwrap().into_bytes();
    let inc = IncomingRequest {
        prefix: frame::peek_request(&bytes).unwrap(),
        request: frame::decode_request(&bytes),
        frame: bytes,
    };
    let Reply::Chunks(chunks) =
        handler::handle(broker, &handler::local_connection(broker), inc.into()).await
    else {
        panic!("no response")
    };
    let all: Vec<u8> = chunks.iter().flat_map(|c| c.iter().copied()).collect();
    let resp =
        frame::decode_response(&Bytes::copy_from_slice(&all[4..]), ApiKey::Produce, 9).unwrap();
    let ResponseBody::Produce(p) = resp.body else {
        panic!()
    };
    let part = &p.responses[0].partition_responses[0];
    (ErrorCode(part.error_code), part.base_offset)
}

fn open(dir: &std::path::Path) -> Arc<Broker> {
    open_with_expiration(dir, BrokerConfig::default().log.producer_id_expiration_ms)
}

fn open_with_expiration(dir: &std::path::Path, expiration_ms: i64) -> Arc<Broker> {
    let cfg = BrokerConfig {
        server: kafka_broker::config::ServerConfig {
            data_dir: dir.to_path_buf(),
            ..Default::default()
        },
        log: kafka_broker::config::LogDefaults {
            producer_id_expiration_ms: expiration_ms,
            producer_id_expiration_check_interval_ms: 1,
            ..Default::default()
        },
        ..Default::default()
    };
    Arc::new(Broker::open(cfg).unwrap())
}

async fn check_after_restart(clean: bool) {
    let dir = tempfile::tempdir().unwrap();
    let broker = open(dir.path());
    broker
        .create_topic(TOPIC, 1, BTreeMap::new(), false)
        .unwrap();
    assert_eq!(
        produce(&broker, batch(7, 0, 0, 5)).await,
        (ErrorCode::NONE, 0)
    );
    assert_eq!(
        produce(&broker, batch(7, 0, 5, 5)).await,
        (ErrorCode::NONE, 5)
    );
    assert_eq!(
        produce(&broker, batch(9, 0, 0, 2)).await,
        (ErrorCode::NONE, 10)
    );
    if clean {
        broker.close().unwrap();
    }
    drop(broker);

    let broker = open(dir.path());
    // A retry of an acknowledged batch gets its original offset and is not written again.
    assert_eq!(
        produce(&broker, batch(7, 0, 5, 5)).await,
        (ErrorCode::NONE, 5)
    );
    assert_eq!(
        produce(&broker, batch(9, 0, 0, 2)).await,
        (ErrorCode::NONE, 10)
    );
    assert_eq!(broker.partition(TOPIC, 0).unwrap().offsets().log_end, 12);
    // A gap is refused; the next sequence is accepted.
    assert_eq!(
        produce(&broker, batch(7, 0, 12, 1)).await.0,
        ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER
    );
    assert_eq!(
        produce(&broker, batch(7, 0, 10, 3)).await,
        (ErrorCode::NONE, 12)
    );
    // An older epoch is fenced.
    assert_eq!(
        produce(&broker, batch(9, -1, 2, 1)).await.0,
        ErrorCode::INVALID_PRODUCER_EPOCH
    );
}

#[tokio::test]
async fn producer_state_survives_a_clean_restart() {
    check_after_restart(true).await;
}

#[tokio::test]
async fn producer_state_is_rebuilt_from_the_log_after_a_crash() {
    check_after_restart(false).await;
}

const EXPIRATION_MS: i64 = 300;

#[tokio::test]
async fn idle_producers_expire_on_the_maintenance_timer() {
    let dir = tempfile::tempdir().unwrap();
    let broker = open_with_expiration(dir.path(), EXPIRATION_MS);
    broker
        .create_topic(TOPIC, 1, BTreeMap::new(), false)
        .unwrap();
    assert_eq!(
        produce(&broker, batch(7, 0, 0, 5)).await,
        (ErrorCode::NONE, 0)
    );
    // Known: a retry is a duplicate.
    assert_eq!(
        produce(&broker, batch(7, 0, 0, 5)).await,
        (ErrorCode::NONE, 0)
    );
    broker.replicas.maintain();
    assert_eq!(
        produce(&broker, batch(7, 0, 0, 5)).await,
        (ErrorCode::NONE, 0),
        "expired before producer.id.expiration.ms"
    );
    tokio::time::sleep(std::time::Duration::from_millis(EXPIRATION_MS as u64 + 100)).await;
    // Producer 9 appends just before the check: it stays.
    assert_eq!(
        produce(&broker, batch(9, 0, 0, 1)).await,
        (ErrorCode::NONE, 5)
    );
    broker.replicas.maintain();
    // Producer 7 is forgotten: its next sequence is taken as a new producer's...
    assert_eq!(
        produce(&broker, batch(7, 0, 5, 2)).await,
        (ErrorCode::NONE, 6)
    );
    // ...and an old retry is no longer recognised (Kafka has the same window).
    assert_eq!(
        produce(&broker, batch(7, 0, 0, 5)).await.0,
        ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER,
        "tracked again from sequence 5: sequence 0 is out of order"
    );
    // Producer 9 is still known.
    assert_eq!(
        produce(&broker, batch(9, 0, 0, 1)).await,
        (ErrorCode::NONE, 5)
    );
    assert_eq!(broker.partition(TOPIC, 0).unwrap().offsets().log_end, 8);
}

#[tokio::test]
async fn idle_producers_expire_when_the_snapshot_is_loaded() {
    let dir = tempfile::tempdir().unwrap();
    let broker = open_with_expiration(dir.path(), EXPIRATION_MS);
    broker
        .create_topic(TOPIC, 1, BTreeMap::new(), false)
        .unwrap();
    assert_eq!(
        produce(&broker, batch(7, 0, 0, 5)).await,
        (ErrorCode::NONE, 0)
    );
    broker.close().unwrap();
    drop(broker);
    tokio::time::sleep(std::time::Duration::from_millis(EXPIRATION_MS as u64 + 100)).await;
    let broker = open_with_expiration(dir.path(), EXPIRATION_MS);
    // Not a duplicate any more: appended as a new producer's batch.
    assert_eq!(
        produce(&broker, batch(7, 0, 0, 5)).await,
        (ErrorCode::NONE, 5)
    );
}

#[tokio::test]
async fn a_torn_snapshot_falls_back_to_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let broker = open(dir.path());
    broker
        .create_topic(TOPIC, 1, BTreeMap::new(), false)
        .unwrap();
    assert_eq!(
        produce(&broker, batch(7, 0, 0, 5)).await,
        (ErrorCode::NONE, 0)
    );
    broker.close().unwrap();
    drop(broker);
    let snapshot = dir
        .path()
        .join(format!("{TOPIC}-0/producer-state.snapshot"));
    let text = std::fs::read(&snapshot).unwrap();
    // Cut in the middle, as a crash during an in-place write would leave it.
    std::fs::write(&snapshot, &text[..text.len() / 2]).unwrap();
    let broker = open(dir.path());
    // Rebuilt from the log: the retry is still a duplicate.
    assert_eq!(
        produce(&broker, batch(7, 0, 0, 5)).await,
        (ErrorCode::NONE, 0)
    );
    assert_eq!(broker.partition(TOPIC, 0).unwrap().offsets().log_end, 5);
}

fn require_peers() -> bool {
    std::env::var("KAFKA_RS_REQUIRE_PEERS").is_ok_and(|v| v == "1")
}

/// confluent-kafka's idempotent producer: 5 records, a pause past the broker's
/// producer.id.expiration.ms, 5 more; every delivery must succeed, at offsets 0..9.
const PY_IDLE_PRODUCER: &str = r#"
import sys, time
from confluent_kafka import Producer
addr, topic, pause = sys.argv[1], sys.argv[2], float(sys.argv[3])
errors = []
def on_error(err):
    errors.append(err)
p = Producer({"bootstrap.servers": addr, "enable.idempotence": True, "linger.ms": 0,
              "broker.address.family": "v4", "error_cb": on_error})
offsets = []
def cb(err, msg):
    assert err is None, err
    offsets.append(msg.offset())
for round in range(2):
    for i in range(5):
        p.produce(topic, value=b"r%d-%d" % (round, i), partition=0, on_delivery=cb)
        assert p.flush(10) == 0
    if round == 0:
        time.sleep(pause)
fatal = [e for e in errors if e.fatal()]
assert not fatal, fatal
assert offsets == list(range(10)), offsets
print("idle producer ok", flush=True)
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confluent_kafka_idempotent_producer_outlives_its_expiry() {
    let available = std::process::Command::new("python3")
        .args(["-c", "import confluent_kafka"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
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
    let mut node = broker::Node::new(
        dir.path().join("data"),
        dir.path().join("logs"),
        &[
            "producer.id.expiration.ms=500",
            "producer.id.expiration.check.interval.ms=50",
            "num.partitions=1",
        ],
    );
    let b = node.start(&[]).await;
    let addr = b.addr.clone();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new("python3")
            .arg("-c")
            .arg(PY_IDLE_PRODUCER)
            .args([addr.as_str(), "idle", "1.5"])
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && text.contains("idle producer ok"),
        "{text}\nbroker log:\n{}",
        b.log()
    );
    // The pause did expire the producer (so the second round was a forgotten producer's).
    assert!(
        b.log().contains("expired idle producers"),
        "no expiry in the broker log:\n{}",
        b.log()
    );
}
