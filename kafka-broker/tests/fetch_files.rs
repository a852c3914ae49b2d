//! Fetch answers sent with `sendfile(2)` from the segment files: byte for byte the answer the
//! same broker gives when it reads the data into memory first (`socket.sendfile.enable=false`),
//! across segment boundaries, from the start and from the middle of the log, with record sets
//! large enough to be sent from files and small ones that are copied.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use bytes::Bytes;
use kafka_broker::BrokerConfig;
use kafka_net::{Connection, ConnectionConfig};
use kafka_protocol::KStr;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    FetchRequest, MetadataRequest, ProduceRequest, RequestBody, ResponseBody,
    metadata_request::MetadataRequestTopic,
};
use kafka_protocol::record::{RecordBatch, RecordBatchBuilder, RecordBatches};

/// Starts a broker with `settings`; returns its address, a stop handle and its directory.
async fn start(
    settings: &[(&str, &str)],
) -> (
    String,
    tokio::sync::oneshot::Sender<()>,
    tokio::task::JoinHandle<()>,
    tempfile::TempDir,
) {
    let dir = tempfile::tempdir().unwrap();
    let mut config = BrokerConfig {
        server: kafka_broker::config::ServerConfig {
            data_dir: dir.path().to_path_buf(),
            ..Default::default()
        },
        ..Default::default()
    };
    for (k, v) in settings {
        config.apply(k, v).unwrap();
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        kafka_broker::run(listener, config, async {
            let _ = stopped.await;
        })
        .await
        .unwrap();
    });
    (addr, stop, task, dir)
}

/// Writes 200 batches of 1-40 records (deterministic) to topic `t`, partition 0.
async fn fill(conn: &Connection) {
    conn.request(RequestBody::Metadata(MetadataRequest {
        topics: Some(vec![MetadataRequestTopic {
            name: Some(KStr::from_static("t")),
            ..Default::default()
        }]),
        allow_auto_topic_creation: true,
        ..Default::default()
    }))
    .await
    .unwrap();
    for b in 0..200u64 {
        let mut builder = RecordBatchBuilder::new();
        for r in 0..(1 + (b * 7) % 40) {
            let value = format!(
                "batch {b} record {r} {}",
                "x".repeat((b as usize * 13) % 300)
            );
            builder
                .append(
                    1_700_000_000_000 + b as i64,
                    None,
                    Some(value.as_bytes()),
                    &[],
                )
                .unwrap();
        }
        let req = ProduceRequest {
            acks: 1,
            timeout_ms: 5000,
            topic_data: vec![TopicProduceData {
                name: KStr::from_static("t"),
                partition_data: vec![PartitionProduceData {
                    index: 0,
                    records: Some(builder.build().unwrap()),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        let ResponseBody::Produce(p) = conn.request(RequestBody::Produce(req)).await.unwrap()
        else {
            panic!("not a produce answer")
        };
        assert_eq!(p.responses[0].partition_responses[0].error_code, 0);
    }
}

/// The raw records of a fetch from `offset` with these limits (fetch v4: by name).
async fn fetch(conn: &Connection, offset: i64, partition_max: i32, max: i32) -> Bytes {
    let req = FetchRequest {
        replica_id: -1,
        max_wait_ms: 0,
        min_bytes: 0,
        max_bytes: max,
        topics: vec![FetchTopic {
            topic: KStr::from_static("t"),
            partitions: vec![FetchPartition {
                partition: 0,
                fetch_offset: offset,
                partition_max_bytes: partition_max,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let ResponseBody::Fetch(f) = conn.request_at(RequestBody::from(req), 4).await.unwrap() else {
        panic!("not a fetch answer")
    };
    let p = &f.responses[0].partitions[0];
    assert_eq!(p.error_code, 0, "{p:?}");
    p.records.clone().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sendfile_answers_equal_in_memory_answers() {
    // Small segments, so that fetches span several files.
    let settings = [("log.segment.bytes", "65536")];
    let (a_addr, a_stop, a_task, _a_dir) = start(&settings).await;
    let (b_addr, b_stop, b_task, _b_dir) =
        start(&[settings[0], ("socket.sendfile.enable", "false")]).await;
    let a = Connection::connect(&a_addr, ConnectionConfig::default())
        .await
        .unwrap();
    let b = Connection::connect(&b_addr, ConnectionConfig::default())
        .await
        .unwrap();
    fill(&a).await;
    fill(&b).await;
    let mut checked = 0;
    for (offset, partition_max, max) in [
        (0, 1 << 20, 50 << 20),
        (0, 300_000, 50 << 20),
        (1234, 1 << 20, 50 << 20),
        (2000, 100, 50 << 20),
        (3000, 1 << 20, 5000),
        (3500, 10 << 20, 10 << 20),
    ] {
        let from_files = fetch(&a, offset, partition_max, max).await;
        let from_memory = fetch(&b, offset, partition_max, max).await;
        assert_eq!(from_files, from_memory, "fetch from {offset}");
        // And the data is the log's: whole valid batches, the first holding `offset`.
        let batches: Vec<RecordBatch> = RecordBatches::new(from_files.clone())
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(!batches.is_empty(), "fetch from {offset} returned nothing");
        for batch in &batches {
            batch.verify_crc().unwrap();
        }
        assert!(batches[0].base_offset() <= offset && batches[0].last_offset() >= offset);
        checked += from_files.len();
    }
    assert!(checked > 300_000, "only {checked} bytes compared");
    drop((a, b));
    let _ = a_stop.send(());
    let _ = b_stop.send(());
    for t in [a_task, b_task] {
        tokio::time::timeout(Duration::from_secs(35), t)
            .await
            .unwrap()
            .unwrap();
    }
}
