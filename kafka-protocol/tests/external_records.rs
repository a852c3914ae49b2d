//! External record sets (`Writer::register_external`): a Fetch answer encoded with stand-ins
//! registered as externals, with the real record bytes spliced in where the writer left
//! `Chunk::External`, is byte for byte the answer encoded with the real bytes in place, for
//! every version of FetchResponse (non-flexible i32 length prefixes up to v11, compact varint
//! ones from v12) and record sets of every size class.
#![allow(clippy::unwrap_used)]

use bytes::{Bytes, BytesMut};
use kafka_protocol::codec::{Chunk, stand_in};
use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::{FetchResponse, ResponseBody, ResponseHeader};
use kafka_protocol::{EncodeError, KStr, Message, Uuid, Writer, frame};

fn data(len: usize, seed: u8) -> Bytes {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31) ^ seed)
        .collect()
}

/// A Fetch answer over two topics whose partitions hold `records` in order.
fn answer(version: i16, records: &[Option<Bytes>]) -> ResponseBody {
    let part = |i: usize, r: &Option<Bytes>| PartitionData {
        partition_index: i as i32,
        high_watermark: 1000 + i as i64,
        last_stable_offset: if version >= 4 { 900 } else { -1 },
        records: r.clone(),
        ..Default::default()
    };
    let topic = |n: usize, parts: Vec<PartitionData>| FetchableTopicResponse {
        topic: if version < 13 {
            KStr::from(format!("topic-{n}"))
        } else {
            KStr::default()
        },
        topic_id: if version >= 13 {
            Uuid([n as u8 + 1; 16])
        } else {
            Uuid::ZERO
        },
        partitions: parts,
        ..Default::default()
    };
    let (a, b) = records.split_at(records.len() / 2);
    ResponseBody::Fetch(FetchResponse {
        responses: vec![
            topic(0, a.iter().enumerate().map(|(i, r)| part(i, r)).collect()),
            topic(1, b.iter().enumerate().map(|(i, r)| part(i, r)).collect()),
        ],
        ..Default::default()
    })
}

/// The real record sets of the test, and which of them go as externals.
fn record_sets() -> Vec<(Option<Bytes>, bool)> {
    vec![
        (Some(data(6000, 1)), false),   // chained by the encoder
        (Some(data(5000, 2)), true),    // external, 2-byte compact length
        (Some(data(100, 3)), false),    // copied
        (None, false),                  // null
        (Some(data(200_000, 4)), true), // external, 3-byte compact length
        (Some(data(4096, 5)), true),    // external, next to the one before in the output
        (Some(Bytes::new()), false),    // empty
        (Some(data(9000, 6)), true),    // external, last field but the tags
    ]
}

fn header() -> ResponseHeader {
    ResponseHeader {
        correlation_id: 77,
        ..Default::default()
    }
}

#[test]
fn splicing_externals_gives_the_plain_encoding_in_every_version() {
    let sets = record_sets();
    let real: Vec<Option<Bytes>> = sets.iter().map(|(r, _)| r.clone()).collect();
    for version in FetchResponse::VERSIONS.min..=FetchResponse::VERSIONS.max {
        let plain = frame::encode_response(&header(), &answer(version, &real), version)
            .unwrap()
            .into_bytes();

        let mut w = Writer::new();
        let mut externals = Vec::new();
        let with_stand_ins: Vec<Option<Bytes>> = sets
            .iter()
            .map(|(r, external)| match (r, external) {
                (Some(r), true) => {
                    let s = stand_in();
                    let n = w.register_external(s.clone(), r.len()).unwrap();
                    assert_eq!(n, externals.len());
                    externals.push(r.clone());
                    Some(s)
                }
                _ => r.clone(),
            })
            .collect();
        let w =
            frame::encode_response_into(w, &header(), &answer(version, &with_stand_ins), version)
                .unwrap();
        assert_eq!(w.len(), plain.len(), "v{version}: length with externals");
        let chunks = w.into_external_chunks().unwrap();
        let externals_seen = chunks
            .iter()
            .filter(|c| matches!(c, Chunk::External(_)))
            .count();
        assert_eq!(externals_seen, externals.len(), "v{version}");
        let mut spliced = BytesMut::new();
        for c in &chunks {
            match c {
                Chunk::Bytes(b) => spliced.extend_from_slice(b),
                Chunk::External(n) => spliced.extend_from_slice(&externals[*n]),
            }
        }
        assert!(spliced == plain, "v{version}: spliced differs from plain");

        // And it decodes to the real record sets.
        let resp =
            frame::decode_response(&spliced.freeze(), kafka_protocol::ApiKey::Fetch, version)
                .unwrap();
        let ResponseBody::Fetch(f) = resp.body else {
            panic!("not a fetch answer")
        };
        let got: Vec<Option<Bytes>> = f
            .responses
            .iter()
            .flat_map(|t| t.partitions.iter().map(|p| p.records.clone()))
            .collect();
        assert_eq!(got, real, "v{version}");
    }
}

#[test]
fn a_stand_in_left_out_of_the_answer_is_refused() {
    let version = 12;
    let mut w = Writer::new();
    w.register_external(stand_in(), 5000).unwrap();
    let w = frame::encode_response_into(w, &header(), &answer(version, &[None, None]), version)
        .unwrap();
    assert!(matches!(
        w.into_external_chunks(),
        Err(EncodeError::ExternalNotOnce {
            number: 0,
            written: 0
        })
    ));
}

#[test]
fn a_stand_in_in_two_partitions_is_refused() {
    let version = 11;
    let s = stand_in();
    let mut w = Writer::new();
    w.register_external(s.clone(), 5000).unwrap();
    let body = answer(version, &[Some(s.clone()), Some(s)]);
    let w = frame::encode_response_into(w, &header(), &body, version).unwrap();
    assert!(matches!(
        w.into_external_chunks(),
        Err(EncodeError::ExternalNotOnce {
            number: 0,
            written: 2
        })
    ));
}
