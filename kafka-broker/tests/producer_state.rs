//! Idempotent-producer state survives a broker restart, clean (snapshot) or not (rebuilt from
//! the log): a retried batch is recognised as a duplicate and sequence gaps are refused.
#![allow(clippy::unwrap_used)]

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
    let Reply::Chunks(chunks) = handler::handle(broker, inc).await else {
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
    let cfg = BrokerConfig {
        data_dir: dir.to_path_buf(),
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
