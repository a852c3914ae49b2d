//! A broker in a thread of its own on 127.0.0.1:0 with a temporary data directory, and
//! helpers that create topics and write record batches straight through kafka-net.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use kafka_broker::BrokerConfig;
use kafka_consumer::{ConsumerConfig, ConsumerConfigBuilder, OffsetReset, TopicPartition};
use kafka_net::admin::NewTopic;
use kafka_net::{Admin, ClusterConfig, Connection, ConnectionConfig};
use kafka_protocol::KStr;
use kafka_protocol::messages::delete_records_request::{
    DeleteRecordsPartition, DeleteRecordsTopic,
};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{DeleteRecordsRequest, ProduceRequest, RequestBody, ResponseBody};
use kafka_protocol::record::{Compression, RecordBatchBuilder};

pub(crate) struct TestBroker {
    pub(crate) addr: SocketAddr,
    config: BrokerConfig,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
    _dir: tempfile::TempDir,
}

impl TestBroker {
    pub(crate) fn start() -> Self {
        Self::start_with(|_| {})
    }

    pub(crate) fn start_with(tune: impl FnOnce(&mut BrokerConfig)) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut config = BrokerConfig {
            server: kafka_broker::config::ServerConfig {
                data_dir: dir.path().to_path_buf(),
                ..Default::default()
            },
            topics: kafka_broker::config::TopicsConfig {
                num_partitions: 1,
                ..Default::default()
            },
            ..Default::default()
        };
        config
            .apply("group.initial.rebalance.delay.ms", "0")
            .unwrap();
        tune(&mut config);
        let mut broker = Self {
            addr: "127.0.0.1:0".parse().unwrap(),
            config,
            stop: None,
            thread: None,
            _dir: dir,
        };
        broker.launch();
        broker
    }

    /// Runs the broker on `self.addr` (port 0 the first time, the same port after).
    fn launch(&mut self) {
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (config, addr) = (self.config.clone(), self.addr);
        let thread = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
                addr_tx.send(listener.local_addr().unwrap()).unwrap();
                kafka_broker::run(listener, config, async {
                    let _ = stop_rx.await;
                })
                .await
                .unwrap();
            });
        });
        self.addr = addr_rx.recv_timeout(Duration::from_secs(30)).unwrap();
        self.stop = Some(stop_tx);
        self.thread = Some(thread);
    }

    /// Starts the broker again on the same address and data (after [`Self::stop`]).
    pub(crate) fn restart(&mut self) {
        self.stop();
        self.launch();
    }

    pub(crate) fn bootstrap(&self) -> String {
        self.addr.to_string()
    }

    /// Stops the broker and waits for it to be gone.
    pub(crate) fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }

    /// A consumer configuration for this broker: earliest, short waits.
    pub(crate) fn config(&self) -> ConsumerConfigBuilder {
        ConsumerConfig::builder()
            .bootstrap_servers([self.bootstrap()])
            .auto_offset_reset(OffsetReset::Earliest)
            .fetch_max_wait(Duration::from_millis(100))
            .default_api_timeout(Duration::from_secs(20))
    }

    pub(crate) async fn admin(&self) -> Admin {
        Admin::connect(ClusterConfig {
            bootstrap: vec![self.bootstrap()],
            ..Default::default()
        })
        .await
        .unwrap()
    }

    pub(crate) async fn create_topic(&self, name: &str, partitions: i32) {
        let admin = self.admin().await;
        for r in admin
            .create_topics(&[NewTopic::new(name, partitions, 1)], false)
            .await
        {
            r.unwrap();
        }
    }

    pub(crate) async fn connection(&self) -> Connection {
        Connection::connect(&self.bootstrap(), ConnectionConfig::default())
            .await
            .unwrap()
    }
}

impl Drop for TestBroker {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The value of record `i` of a test partition: recognisable and of varying length.
pub(crate) fn value(partition: i32, i: i64) -> Vec<u8> {
    let len = 10 + (i % 7) as usize * 5;
    let mut v = format!("p{partition}-r{i}-").into_bytes();
    v.resize(len.max(v.len()), b'.');
    v
}

pub(crate) fn key(i: i64) -> Vec<u8> {
    format!("k{i}").into_bytes()
}

/// One batch of records `first..first+n` (keys, values, one header), with timestamps
/// `ts0 + i`.
pub(crate) fn batch(partition: i32, first: i64, n: i64, ts0: i64, codec: Compression) -> Bytes {
    let mut b = RecordBatchBuilder::new().compression(codec);
    for i in first..first + n {
        let (k, v) = (key(i), value(partition, i));
        b.append(
            ts0 + i,
            Some(&k),
            Some(&v),
            &[("i", Some(i.to_string().as_bytes()))],
        )
        .unwrap();
    }
    b.build().unwrap()
}

/// Writes one record set to a partition; returns the base offset.
pub(crate) async fn produce_raw(
    conn: &Connection,
    topic: &str,
    partition: i32,
    records: Bytes,
) -> i64 {
    let req = ProduceRequest {
        acks: -1,
        timeout_ms: 10_000,
        topic_data: vec![TopicProduceData {
            name: KStr::from(topic.to_owned()),
            partition_data: vec![PartitionProduceData {
                index: partition,
                records: Some(records),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let ResponseBody::Produce(resp) = conn.request(RequestBody::Produce(req)).await.unwrap() else {
        panic!("Produce answered with another body");
    };
    let p = &resp.responses[0].partition_responses[0];
    assert_eq!(p.error_code, 0, "produce to {topic}-{partition}: {p:?}");
    p.base_offset
}

/// Writes `batches` batches of `per_batch` records to a partition, numbering records from
/// what the partition holds (`first`).
pub(crate) async fn produce(
    conn: &Connection,
    topic: &str,
    partition: i32,
    first: i64,
    batches: i64,
    per_batch: i64,
    codec: Compression,
) {
    for b in 0..batches {
        let start = first + b * per_batch;
        let base = produce_raw(
            conn,
            topic,
            partition,
            batch(partition, start, per_batch, 1_000_000, codec),
        )
        .await;
        assert_eq!(base, start);
    }
}

/// Moves the log start offset of a partition (DeleteRecords).
pub(crate) async fn delete_records(conn: &Connection, topic: &str, partition: i32, before: i64) {
    let req = DeleteRecordsRequest {
        topics: vec![DeleteRecordsTopic {
            name: KStr::from(topic.to_owned()),
            partitions: vec![DeleteRecordsPartition {
                partition_index: partition,
                offset: before,
                ..Default::default()
            }],
            ..Default::default()
        }],
        timeout_ms: 10_000,
        ..Default::default()
    };
    let ResponseBody::DeleteRecords(resp) =
        conn.request(RequestBody::DeleteRecords(req)).await.unwrap()
    else {
        panic!("DeleteRecords answered with another body");
    };
    let p = &resp.topics[0].partitions[0];
    assert_eq!(p.error_code, 0, "{p:?}");
    assert_eq!(p.low_watermark, before);
}

pub(crate) fn tp(topic: &str, partition: i32) -> TopicPartition {
    TopicPartition::new(topic, partition)
}

/// Polls until `n` records came or `limit` passed.
pub(crate) async fn poll_n(
    c: &kafka_consumer::Consumer,
    n: usize,
    limit: Duration,
) -> Vec<kafka_consumer::ConsumerRecord> {
    let deadline = tokio::time::Instant::now() + limit;
    let mut out = Vec::new();
    while out.len() < n && tokio::time::Instant::now() < deadline {
        out.extend(c.poll(Duration::from_millis(200)).await.unwrap());
    }
    out
}

pub(crate) fn peers_required() -> bool {
    std::env::var("KAFKA_RS_REQUIRE_PEERS").is_ok_and(|v| v == "1")
}
