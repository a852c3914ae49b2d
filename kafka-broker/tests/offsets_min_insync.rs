//! Offset commits obey `min.insync.replicas` of `__consumer_offsets`, as Kafka's do (and as
//! the transaction log's records and the markers here do), over a real socket against a
//! broker served in-process. The test stands in for the cluster: it sets the topic's
//! `min.insync.replicas` to 2 and gives the offsets partition's leader a follower (replica 2)
//! that is or is not in the ISR.
//!
//! - ISR below the minimum: OffsetCommit is refused with COORDINATOR_NOT_AVAILABLE (Kafka's
//!   answer for the append's NOT_ENOUGH_REPLICAS), nothing is appended to the partition, and
//!   OffsetFetch (ours, and kafka-python's and confluent-kafka's when they are installed)
//!   still shows the offset committed before;
//! - the ISR shrinking below the minimum while a commit waits for its replication: the commit
//!   fails the same way (NOT_ENOUGH_REPLICAS_AFTER_APPEND) and its offset never shows;
//! - the minimum met again: commits work and show.
#![allow(clippy::unwrap_used)]

#[path = "common/peers.rs"]
#[allow(dead_code)]
mod peers;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kafka_broker::{Broker, BrokerConfig};
use kafka_net::{Connection, ConnectionConfig};
use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::{
    OffsetCommitRequest, OffsetFetchRequest, RequestBody, ResponseBody,
};

const OFFSETS_TOPIC: &str = "__consumer_offsets";
const TOPIC: &str = "src";
const GROUP: &str = "insync-group";
const REQUEST_TIMEOUT: Duration = Duration::from_secs(20);

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
            offsets_topic_num_partitions: 1,
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
    async fn stop(self) {
        let _ = self.stop.send(());
        tokio::time::timeout(Duration::from_secs(30), self.task)
            .await
            .expect("the broker stops")
            .unwrap();
    }

    /// Sets `min.insync.replicas` of `__consumer_offsets`, keeping its other overrides.
    fn set_min_insync(&self, n: usize) {
        let mut configs = self.broker.topic(OFFSETS_TOPIC).unwrap().configs;
        configs.insert("min.insync.replicas".to_owned(), n.to_string());
        self.broker
            .set_topic_configs(OFFSETS_TOPIC, configs)
            .unwrap();
    }

    /// The offsets partition's leader gets follower 2, in the ISR or not (same leader epoch:
    /// a new ISR, as the controller's AlterPartition answer gives).
    fn follower_in_sync(&self, in_sync: bool) {
        let part = self.broker.partition(OFFSETS_TOPIC, 0).unwrap();
        let isr: &[i32] = if in_sync { &[2] } else { &[] };
        part.become_leader(part.leader_epoch(), &[2], isr, self.broker.now_ms())
            .unwrap();
    }

    fn log_end(&self) -> i64 {
        self.broker
            .partition(OFFSETS_TOPIC, 0)
            .unwrap()
            .log_end_offset()
    }
}

async fn request(conn: &Connection, body: RequestBody, version: i16) -> ResponseBody {
    let api = body.api_key();
    tokio::time::timeout(REQUEST_TIMEOUT, conn.request_at(body, version))
        .await
        .unwrap_or_else(|_| panic!("{api:?} got no answer within {REQUEST_TIMEOUT:?}"))
        .unwrap_or_else(|e| panic!("{api:?} failed: {e}"))
}

/// A simple consumer's OffsetCommit (v8) of partition 0; its error.
async fn commit(conn: &Connection, offset: i64) -> ErrorCode {
    let body = RequestBody::OffsetCommit(Box::new(OffsetCommitRequest {
        group_id: KStr::from_static(GROUP),
        topics: vec![OffsetCommitRequestTopic {
            name: KStr::from_static(TOPIC),
            partitions: vec![OffsetCommitRequestPartition {
                partition_index: 0,
                committed_offset: offset,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }));
    let ResponseBody::OffsetCommit(r) = request(conn, body, 8).await else {
        panic!("not an OffsetCommit answer")
    };
    ErrorCode(r.topics[0].partitions[0].error_code)
}

/// The committed offset of partition 0 (OffsetFetch v6).
async fn committed(conn: &Connection) -> i64 {
    let body = RequestBody::OffsetFetch(OffsetFetchRequest {
        group_id: KStr::from_static(GROUP),
        topics: Some(vec![OffsetFetchRequestTopic {
            name: KStr::from_static(TOPIC),
            partition_indexes: vec![0],
            ..Default::default()
        }]),
        ..Default::default()
    });
    let ResponseBody::OffsetFetch(r) = request(conn, body, 6).await else {
        panic!("not an OffsetFetch answer")
    };
    let p = &r.topics[0].partitions[0];
    assert_eq!(ErrorCode(p.error_code), ErrorCode::NONE);
    p.committed_offset
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
asked = [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0)])]
result = admin.list_consumer_group_offsets(asked, request_timeout=10)[group].result(timeout=20)
print(json.dumps({"%s-%d" % (tp.topic, tp.partition): tp.offset for tp in result.topic_partitions}))
"#;

fn python(script: &str, args: &[&str]) -> Option<serde_json::Value> {
    let mut all = vec!["-c", script];
    all.extend_from_slice(args);
    let out = peers::run("python3", &all)?;
    let line = out.lines().rev().find(|l| l.starts_with('{'))?;
    Some(serde_json::from_str(line).unwrap())
}

/// What every way of reading committed offsets sees for partition 0: ours, and the python
/// clients' where installed.
async fn everyone_sees(served: &Served, conn: &Connection, offset: i64) {
    assert_eq!(committed(conn).await, offset, "OffsetFetch");
    let key = format!("{TOPIC}-0");
    for (name, script, args) in [
        (
            "kafka-python",
            PY_KAFKA_PYTHON,
            vec![served.addr.clone(), GROUP.to_owned()],
        ),
        (
            "confluent-kafka",
            PY_CONFLUENT,
            vec![served.addr.clone(), GROUP.to_owned(), TOPIC.to_owned()],
        ),
    ] {
        let seen = tokio::task::spawn_blocking(move || {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            python(script, &args)
        })
        .await
        .unwrap();
        if let Some(v) = seen {
            assert_eq!(v[&key].as_i64(), Some(offset), "{name}: {v}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offset_commits_obey_min_insync_replicas() {
    let dir = tempfile::tempdir().unwrap();
    let served = serve(dir.path()).await;
    served
        .broker
        .create_topic(TOPIC, 1, BTreeMap::new(), false)
        .unwrap();
    let conn = Connection::connect(&served.addr, ConnectionConfig::default())
        .await
        .unwrap();
    assert_eq!(commit(&conn, 5).await, ErrorCode::NONE);
    everyone_sees(&served, &conn, 5).await;

    // The ISR (the leader alone) below min.insync.replicas=2: refused before anything is
    // written.
    served.set_min_insync(2);
    served.follower_in_sync(false);
    let end = served.log_end();
    assert_eq!(
        commit(&conn, 10).await,
        ErrorCode::COORDINATOR_NOT_AVAILABLE
    );
    assert_eq!(served.log_end(), end, "a refused commit appended records");
    everyone_sees(&served, &conn, 5).await;

    // In sync when written, but the ISR shrinks before the follower has it: written, never
    // acknowledged, never visible. (Its own connection: a connection answers in order.)
    served.follower_in_sync(true);
    let pending = {
        let conn = Connection::connect(&served.addr, ConnectionConfig::default())
            .await
            .unwrap();
        tokio::spawn(async move { commit(&conn, 20).await })
    };
    let deadline = tokio::time::Instant::now() + REQUEST_TIMEOUT;
    while served.log_end() == end {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the commit was never appended"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(
        committed(&conn).await,
        5,
        "an unreplicated commit is visible"
    );
    served.follower_in_sync(false);
    // Answered as the ISR shrinks, well before the commit's timeout (5 s) would answer it.
    let answer = tokio::time::timeout(Duration::from_secs(3), pending)
        .await
        .expect("the shrunken ISR did not end the commit's wait");
    assert_eq!(answer.unwrap(), ErrorCode::COORDINATOR_NOT_AVAILABLE);
    everyone_sees(&served, &conn, 5).await;

    // The minimum met again.
    served.set_min_insync(1);
    assert_eq!(commit(&conn, 30).await, ErrorCode::NONE);
    everyone_sees(&served, &conn, 30).await;
    drop(conn);
    served.stop().await;
}
