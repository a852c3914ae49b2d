//! Round trips for every api key, every version, requests and responses, with random values
//! that each version can carry: decode(encode(x)) == x and encode(decode(bytes)) == bytes.
#![allow(clippy::unwrap_used)]

use arbitrary::Unstructured;
use bytes::Bytes;
use kafka_protocol::messages::*;
use kafka_protocol::{Codec, KStr, Message, Reader, Writer, frame};

/// Deterministic pseudo-random bytes (splitmix64), so failures reproduce.
fn random_bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut s = seed;
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        out.extend_from_slice(&z.to_le_bytes());
    }
    out.truncate(len);
    out
}

const CASES: u64 = 24;

#[test]
fn every_request_and_response_round_trips() {
    let mut checked = 0;
    for &key in ApiKey::ALL {
        let range = key.versions();
        for version in range.min..=range.max {
            for case in 0..CASES {
                let seed = (key as u64) << 32 | (version as u64) << 16 | case;
                let data = random_bytes(seed, 4096);
                let mut u = Unstructured::new(&data);
                let req = RequestBody::arbitrary(key, &mut u, version)
                    .unwrap_or_else(|e| panic!("{key:?} v{version} case {case}: {e}"));
                // Bytes of its own for the response, and more of them: the deeply nested
                // Streams group answers (Kafka 4.x) use up 4 KiB.
                let data = random_bytes(!seed, 16384);
                let mut u = Unstructured::new(&data);
                let resp = ResponseBody::arbitrary(key, &mut u, version)
                    .unwrap_or_else(|e| panic!("{key:?} v{version} case {case}: {e}"));

                let client_id = if case % 3 == 0 {
                    None
                } else {
                    Some(KStr::from_static("rt-client"))
                };
                let header = RequestHeader {
                    request_api_key: key as i16,
                    request_api_version: version,
                    correlation_id: case as i32,
                    client_id: if frame::request_header_version(key, version) == 0 {
                        None
                    } else {
                        client_id
                    },
                    ..Default::default()
                };
                let bytes = frame::encode_request(&header, &req)
                    .unwrap_or_else(|e| panic!("{key:?} v{version} case {case}: {e}"))
                    .into_bytes();
                let back = frame::decode_request(&bytes)
                    .unwrap_or_else(|e| panic!("{key:?} v{version} case {case}: {e}"));
                assert_eq!(back.body, req, "{key:?} v{version} request case {case}");
                assert_eq!(back.header.correlation_id, case as i32);
                assert!(back.trailing.is_empty());
                let again = frame::encode_request(&back.header, &back.body)
                    .unwrap()
                    .into_bytes();
                assert_eq!(again, bytes, "{key:?} v{version} request bytes case {case}");

                let rh = ResponseHeader {
                    correlation_id: case as i32,
                    ..Default::default()
                };
                let bytes = frame::encode_response(&rh, &resp, version)
                    .unwrap_or_else(|e| panic!("{key:?} v{version} case {case}: {e}"))
                    .into_bytes();
                let back = frame::decode_response(&bytes, key, version)
                    .unwrap_or_else(|e| panic!("{key:?} v{version} response case {case}: {e}"));
                assert_eq!(back.body, resp, "{key:?} v{version} response case {case}");
                let again = frame::encode_response(&back.header, &back.body, version)
                    .unwrap()
                    .into_bytes();
                assert_eq!(
                    again, bytes,
                    "{key:?} v{version} response bytes case {case}"
                );
                checked += 1;
            }
        }
    }
    // 95 api keys (Kafka 4.4's and the ones 4.0 removed); make sure the loop really ran over
    // all of them.
    assert_eq!(ApiKey::ALL.len(), 95);
    assert!(checked > 95 * CASES as usize);
}

fn data_round_trip<M: Message + std::fmt::Debug + PartialEq>() {
    for version in M::VERSIONS.min..=M::VERSIONS.max {
        for case in 0..CASES {
            let data = random_bytes(case * 7919 + version as u64, 2048);
            let mut u = Unstructured::new(&data);
            let m = M::arbitrary(&mut u, version).unwrap();
            let bytes = m.encode_to_bytes(version).unwrap();
            let back = M::decode_from(&bytes, version).unwrap();
            assert_eq!(back, m, "{} v{version}", M::NAME);
            assert_eq!(back.encode_to_bytes(version).unwrap(), bytes);
        }
    }
}

#[test]
fn headers_and_data_schemas_round_trip() {
    data_round_trip::<RequestHeader>();
    data_round_trip::<ResponseHeader>();
    data_round_trip::<ConsumerProtocolSubscription>();
    data_round_trip::<ConsumerProtocolAssignment>();
    data_round_trip::<LeaderChangeMessage>();
    data_round_trip::<SnapshotHeaderRecord>();
    data_round_trip::<SnapshotFooterRecord>();
    data_round_trip::<KRaftVersionRecord>();
    data_round_trip::<VotersRecord>();
    data_round_trip::<DefaultPrincipalData>();
}

#[test]
fn consumer_protocol_bytes_carry_a_version_prefix() {
    let sub = ConsumerProtocolSubscription {
        topics: vec![KStr::from_static("orders"), KStr::from_static("payments")],
        user_data: Some(Bytes::from_static(b"ud")),
        generation_id: 7,
        rack_id: Some(KStr::from_static("rack-a")),
        ..Default::default()
    };
    let bytes = frame::encode_versioned(&sub, 3).unwrap();
    assert_eq!(&bytes[..2], &[0, 3]);
    let (v, back) = frame::decode_subscription(&bytes).unwrap();
    assert_eq!((v, back), (3, sub.clone()));
    // Version 0 has no generation id; the field is ignorable, so it is left out (as Kafka does)
    // and reads back as its default.
    let v0 = frame::encode_versioned(&sub, 0).unwrap();
    assert_eq!(frame::decode_subscription(&v0).unwrap().1.generation_id, -1);
    // A newer version than we know is read with the newest layout.
    let mut newer = bytes.to_vec();
    newer[1] = 9;
    let (v, back) = frame::decode_subscription(&Bytes::from(newer)).unwrap();
    assert_eq!(v, 9);
    assert_eq!(back.topics, sub.topics);
}

#[test]
fn non_default_field_in_a_version_without_it_is_an_error() {
    // ProduceRequest.TransactionalId is new in v3 and not ignorable.
    let req = ProduceRequest {
        transactional_id: Some(KStr::from_static("tx")),
        ..Default::default()
    };
    let err = req.encode_to_bytes(2).unwrap_err();
    assert!(
        err.to_string().contains("ProduceRequest.TransactionalId"),
        "{err}"
    );
    assert!(req.encode_to_bytes(3).is_ok());
    // Ignorable fields (FetchRequest.RackId, v11+) are left out of older versions.
    let req = FetchRequest {
        rack_id: KStr::from_static("r1"),
        ..Default::default()
    };
    assert!(req.encode_to_bytes(10).is_ok());
    let resp = ApiVersionsResponse {
        throttle_time_ms: 5,
        ..Default::default()
    };
    assert!(resp.encode_to_bytes(0).is_ok());
}

#[test]
fn tagged_fields_equal_to_default_are_not_written() {
    // ApiVersionsResponse v3: FinalizedFeaturesEpoch (tag 1) defaults to -1.
    let resp = ApiVersionsResponse::default();
    let bytes = resp.encode_to_bytes(3).unwrap();
    // error_code(2) + api_keys compact len(1) + throttle(4) + empty tag section(1)
    assert_eq!(bytes.as_ref(), &[0, 0, 1, 0, 0, 0, 0, 0]);
    let with_epoch = ApiVersionsResponse {
        finalized_features_epoch: 5,
        ..Default::default()
    };
    let bytes = with_epoch.encode_to_bytes(3).unwrap();
    // tag section: count 1, tag 1, size 8, i64 5
    assert_eq!(&bytes[7..], &[1, 1, 8, 0, 0, 0, 0, 0, 0, 0, 5]);
    assert_eq!(
        ApiVersionsResponse::decode_from(&bytes, 3).unwrap(),
        with_epoch
    );
}

#[test]
fn unknown_tagged_fields_are_kept_and_written_back() {
    // A v3 ApiVersionsRequest with an unknown tag 7 carrying 3 bytes.
    let body: &[u8] = &[2, b'r', 4, b'1', b'.', b'0', 1, 7, 3, 0xaa, 0xbb, 0xcc];
    let bytes = Bytes::copy_from_slice(body);
    let req = ApiVersionsRequest::decode_from(&bytes, 3).unwrap();
    assert_eq!(req.client_software_name, "r");
    assert_eq!(req.unknown_tagged_fields.len(), 1);
    assert_eq!(req.unknown_tagged_fields[0].tag, 7);
    assert_eq!(req.encode_to_bytes(3).unwrap(), bytes);
}

#[test]
fn decoded_payloads_are_slices_of_the_frame() {
    let records = Bytes::from(vec![7u8; 10_000]);
    let req = ProduceRequest {
        acks: -1,
        timeout_ms: 1000,
        topic_data: vec![produce_request::TopicProduceData {
            name: KStr::from_static("zero-copy"),
            partition_data: vec![produce_request::PartitionProduceData {
                index: 0,
                records: Some(records.clone()),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let header = RequestHeader {
        request_api_key: 0,
        request_api_version: 9,
        correlation_id: 1,
        client_id: Some(KStr::from_static("zc")),
        ..Default::default()
    };
    let w = frame::encode_request(&header, &RequestBody::Produce(req)).unwrap();
    // The encoder chains the record set instead of copying it.
    assert!(
        w.into_chunks()
            .iter()
            .any(|c| c.as_ptr() == records.as_ptr())
    );

    let w =
        frame::encode_request(&header, &RequestBody::Produce(ProduceRequest::default())).unwrap();
    drop(w);
    let frame_bytes = {
        let req = ProduceRequest {
            topic_data: vec![produce_request::TopicProduceData {
                name: KStr::from_static("zero-copy"),
                partition_data: vec![produce_request::PartitionProduceData {
                    records: Some(records.clone()),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        frame::encode_request(&header, &RequestBody::Produce(req))
            .unwrap()
            .into_bytes()
    };
    let decoded = frame::decode_request(&frame_bytes).unwrap();
    let RequestBody::Produce(p) = &decoded.body else {
        panic!("not a produce request")
    };
    let got = p.topic_data[0].partition_data[0].records.as_ref().unwrap();
    let frame_range =
        frame_bytes.as_ptr() as usize..frame_bytes.as_ptr() as usize + frame_bytes.len();
    assert!(frame_range.contains(&(got.as_ptr() as usize)));
    assert!(frame_range.contains(&(got.as_ptr() as usize + got.len() - 1)));
    let name = p.topic_data[0].name.as_bytes();
    assert!(frame_range.contains(&(name.as_ptr() as usize)));
}

#[test]
fn trailing_bytes_after_a_request_are_reported_not_fatal() {
    let header = RequestHeader {
        request_api_key: 18,
        request_api_version: 3,
        correlation_id: 9,
        client_id: Some(KStr::from_static("c")),
        ..Default::default()
    };
    let body = RequestBody::ApiVersions(ApiVersionsRequest {
        client_software_name: KStr::from_static("x"),
        client_software_version: KStr::from_static("1"),
        ..Default::default()
    });
    let mut bytes = frame::encode_request(&header, &body)
        .unwrap()
        .into_bytes()
        .to_vec();
    bytes.extend_from_slice(&[0, 0, 0]);
    let req = frame::decode_request(&Bytes::from(bytes)).unwrap();
    assert_eq!(req.trailing.as_ref(), &[0, 0, 0]);
    assert_eq!(req.body, body);
}

#[test]
fn struct_codec_reader_positions() {
    // A nested struct decodes through the Codec trait directly.
    let p = metadata_response::MetadataResponseBroker {
        node_id: 3,
        host: KStr::from_static("h"),
        port: 9092,
        rack: None,
        ..Default::default()
    };
    let mut w = Writer::new();
    p.encode(&mut w, 9).unwrap();
    let b = w.into_bytes();
    let mut r = Reader::new(&b);
    assert_eq!(
        metadata_response::MetadataResponseBroker::decode(&mut r, 9).unwrap(),
        p
    );
    assert_eq!(r.remaining(), 0);
}

/// The body enums stay small (the generator boxes the few much larger bodies, see `BOXED` in
/// `xtask/src/codegen/emit.rs`), so that a decoded frame is not hundreds of bytes to move.
#[cfg(target_pointer_width = "64")]
#[test]
fn body_enums_stay_small() {
    use std::mem::size_of;
    assert!(
        size_of::<RequestBody>() <= 128,
        "{}",
        size_of::<RequestBody>()
    );
    assert!(
        size_of::<ResponseBody>() <= 128,
        "{}",
        size_of::<ResponseBody>()
    );
}
