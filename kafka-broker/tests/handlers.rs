//! Every advertised (api, version) is answered with a response that encodes and decodes at
//! that version, for random but schema-valid requests: no handler sets a field its version
//! cannot carry, and none panics.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use arbitrary::Unstructured;
use bytes::Bytes;
use kafka_broker::handler::{self, Reply, SUPPORTED};
use kafka_broker::{Broker, BrokerConfig};
use kafka_net::server::IncomingRequest;
use kafka_protocol::messages::*;
use kafka_protocol::{KStr, frame};

fn noise(seed: u64) -> Vec<u8> {
    let mut s = seed | 1;
    (0..4096)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s as u8
        })
        .collect()
}

fn incoming(key: ApiKey, version: i16, body: &RequestBody, corr: i32) -> IncomingRequest {
    let header = RequestHeader {
        request_api_key: key as i16,
        request_api_version: version,
        correlation_id: corr,
        client_id: Some(KStr::from_static("handler-test")),
        ..Default::default()
    };
    let bytes = frame::encode_request(&header, body).unwrap().into_bytes();
    IncomingRequest {
        prefix: frame::peek_request(&bytes).unwrap(),
        request: frame::decode_request(&bytes),
        frame: bytes,
    }
}

fn response(reply: Reply, key: ApiKey, version: i16) -> Option<Response> {
    match reply {
        Reply::Chunks(chunks) => {
            let all: Vec<u8> = chunks.iter().flat_map(|c| c.iter().copied()).collect();
            let size = i32::from_be_bytes([all[0], all[1], all[2], all[3]]) as usize;
            assert_eq!(size, all.len() - 4);
            Some(frame::decode_response(&Bytes::copy_from_slice(&all[4..]), key, version).unwrap())
        }
        Reply::Files(chunks) => {
            let chunks = kafka_broker::sendfile::materialize(&chunks).unwrap();
            response(Reply::Chunks(chunks), key, version)
        }
        Reply::Nothing => None,
        Reply::Close(why) => panic!("{key:?} v{version}: connection closed: {why}"),
    }
}

use kafka_protocol::Response;

#[tokio::test]
async fn every_supported_version_answers_random_requests() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = BrokerConfig {
        data_dir: dir.path().to_path_buf(),
        // Random fetches ask to wait up to 30 s for data that never comes.
        fetch_max_wait_cap_ms: 10,
        ..Default::default()
    };
    let broker = Arc::new(Broker::open(cfg).unwrap());
    let mut corr = 0;
    for &(key, lo, hi) in SUPPORTED {
        for version in lo..=hi {
            for case in 0..8u64 {
                let data = noise((key as u64) << 20 | (version as u64) << 8 | case);
                let mut u = Unstructured::new(&data);
                let body = RequestBody::arbitrary(key, &mut u, version).unwrap();
                corr += 1;
                let reply = handler::handle(&broker, incoming(key, version, &body, corr)).await;
                if let Some(resp) = response(reply, key, version) {
                    assert_eq!(resp.header.correlation_id, corr);
                    assert_eq!(resp.body.api_key(), key);
                }
            }
        }
    }
}

#[tokio::test]
async fn unsupported_api_versions_version_gets_a_v0_error_answer() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = BrokerConfig {
        data_dir: dir.path().to_path_buf(),
        ..Default::default()
    };
    let broker = Arc::new(Broker::open(cfg).unwrap());
    // ApiVersions v9: header v2 (flexible), body unknown.
    let bytes = Bytes::from_static(&[0, 18, 0, 9, 0, 0, 0, 5, 0, 1, b'c', 0, 0, 0]);
    let inc = IncomingRequest {
        prefix: frame::peek_request(&bytes).unwrap(),
        request: frame::decode_request(&bytes),
        frame: bytes,
    };
    let resp = response(handler::handle(&broker, inc).await, ApiKey::ApiVersions, 0).unwrap();
    let ResponseBody::ApiVersions(av) = resp.body else {
        panic!()
    };
    assert_eq!(av.error_code, 35);
    assert_eq!(av.api_keys.len(), 1);
    assert_eq!(
        (av.api_keys[0].api_key, av.api_keys[0].max_version),
        (18, 4)
    );
    assert_eq!(resp.header.correlation_id, 5);
}
