//! Bad input gets a typed error, never a panic or an allocation sized by the wire.
#![allow(clippy::unwrap_used)]

use arbitrary::Unstructured;
use bytes::Bytes;
use kafka_protocol::messages::*;
use kafka_protocol::{DecodeError, KStr, frame};

fn request_frame(key: ApiKey, version: i16, body: RequestBody) -> Bytes {
    let header = RequestHeader {
        request_api_key: key as i16,
        request_api_version: version,
        correlation_id: 42,
        client_id: Some(KStr::from_static("malformed")),
        ..Default::default()
    };
    frame::encode_request(&header, &body).unwrap().into_bytes()
}

#[test]
fn every_truncation_of_every_api_is_an_error() {
    let noise: Vec<u8> = (0..8192u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let mut frames = 0;
    for &key in ApiKey::ALL {
        let r = key.versions();
        // The oldest, newest and first flexible version of each api.
        let mut versions = vec![r.min, r.max];
        versions.extend(key.request_flexible_min().filter(|v| r.contains(*v)));
        for v in versions {
            let mut u = Unstructured::new(&noise);
            let body = RequestBody::arbitrary(key, &mut u, v).unwrap();
            let full = request_frame(key, v, body);
            assert!(frame::decode_request(&full).is_ok());
            for cut in 0..full.len() {
                let part = full.slice(..cut);
                match frame::decode_request(&part) {
                    Err(_) => {}
                    Ok(req) => panic!("{key:?} v{v} cut at {cut}/{} decoded: {req:?}", full.len()),
                }
            }
            frames += 1;
        }
        let mut u = Unstructured::new(&noise);
        let resp = ResponseBody::arbitrary(key, &mut u, r.max).unwrap();
        let bytes = frame::encode_response(&ResponseHeader::default(), &resp, r.max)
            .unwrap()
            .into_bytes();
        for cut in 0..bytes.len() {
            assert!(frame::decode_response(&bytes.slice(..cut), key, r.max).is_err());
        }
    }
    assert!(frames >= 88 * 2);
}

/// A Metadata v1 request whose topic array claims `count` entries.
fn metadata_with_count(count: i32) -> Bytes {
    let mut b = vec![0, 3, 0, 1, 0, 0, 0, 7, 0, 1, b'c'];
    b.extend_from_slice(&count.to_be_bytes());
    b.extend_from_slice(&[0, 1, b't']);
    Bytes::from(b)
}

#[test]
fn huge_array_count_is_refused_before_allocating() {
    let err = frame::decode_request(&metadata_with_count(i32::MAX)).unwrap_err();
    assert!(
        matches!(err.root(), DecodeError::TooLarge { field: "MetadataRequest.Topics", len, .. } if *len == i32::MAX as u64),
        "{err}"
    );
    let err = frame::decode_request(&metadata_with_count(-2)).unwrap_err();
    assert!(
        matches!(
            err.root(),
            DecodeError::Invalid {
                reason: "negative array count",
                ..
            }
        ),
        "{err}"
    );
    // Null (-1) is allowed for Metadata v1 topics (all topics) and decodes.
    let ok = frame::decode_request(&Bytes::from(vec![
        0, 3, 0, 1, 0, 0, 0, 7, 0, 1, b'c', 0xff, 0xff, 0xff, 0xff,
    ]));
    let RequestBody::Metadata(m) = ok.unwrap().body else {
        panic!()
    };
    assert!(m.topics.is_none());
    // ...but not for v0, where the array is not nullable.
    let err = frame::decode_request(&Bytes::from(vec![
        0, 3, 0, 0, 0, 0, 0, 7, 0, 1, b'c', 0xff, 0xff, 0xff, 0xff,
    ]))
    .unwrap_err();
    assert!(
        matches!(err.root(), DecodeError::NullNotAllowed { .. }),
        "{err}"
    );
}

#[test]
fn string_lengths_and_contents_are_checked() {
    // Client id claims 300 bytes but the frame has 1.
    let err = frame::decode_request(&Bytes::from(vec![0, 18, 0, 0, 0, 0, 0, 1, 1, 44, b'c']))
        .unwrap_err();
    assert!(
        matches!(
            err.root(),
            DecodeError::TooLarge {
                field: "RequestHeader.ClientId",
                len: 300,
                ..
            }
        ),
        "{err}"
    );
    // Length -5.
    let err =
        frame::decode_request(&Bytes::from(vec![0, 18, 0, 0, 0, 0, 0, 1, 0xff, 0xfb])).unwrap_err();
    assert!(
        matches!(
            err.root(),
            DecodeError::Invalid {
                reason: "negative length",
                ..
            }
        ),
        "{err}"
    );
    // Invalid UTF-8 in a compact string (ApiVersions v3 ClientSoftwareName).
    let bytes = Bytes::from(vec![
        0, 18, 0, 3, 0, 0, 0, 1, 0, 1, b'c', 0, 3, 0xff, 0xfe, 2, b'1', 0,
    ]);
    let err = frame::decode_request(&bytes).unwrap_err();
    assert!(
        matches!(
            err.root(),
            DecodeError::Invalid {
                field: "ApiVersionsRequest.ClientSoftwareName",
                reason: "string is not valid UTF-8"
            }
        ),
        "{err}"
    );
    // The error names the message and version too.
    assert!(err.to_string().contains("ApiVersions v3"), "{err}");
}

#[test]
fn bad_varints_are_errors() {
    // Compact string length with six continuation bytes.
    let bytes = Bytes::from(vec![
        0, 18, 0, 3, 0, 0, 0, 1, 0, 1, b'c', 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01,
    ]);
    let err = frame::decode_request(&bytes).unwrap_err();
    assert!(
        matches!(
            err.root(),
            DecodeError::Invalid {
                reason: "varint is longer than its type allows",
                ..
            }
        ),
        "{err}"
    );
    // Tag section claiming a value larger than the frame.
    let bytes = Bytes::from(vec![0, 18, 0, 3, 0, 0, 0, 1, 0, 1, b'c', 1, 5, 0xff, 0x7f]);
    assert!(matches!(
        frame::decode_request(&bytes).unwrap_err().root(),
        DecodeError::TooLarge { .. }
    ));
}

#[test]
fn unknown_keys_and_versions_are_typed() {
    let err = frame::decode_request(&Bytes::from(vec![0x03, 0xe7, 0, 0, 0, 0, 0, 1])).unwrap_err();
    assert_eq!(err, DecodeError::UnknownApiKey { api_key: 999 });
    let err = frame::decode_request(&Bytes::from(vec![0, 18, 0, 99, 0, 0, 0, 1])).unwrap_err();
    assert!(
        matches!(
            err,
            DecodeError::UnsupportedVersion {
                api_key: 18,
                version: 99,
                ..
            }
        ),
        "{err}"
    );
    // The prefix is still readable, so a server can answer with the right correlation id.
    let p = frame::peek_request(&Bytes::from(vec![0, 18, 0, 99, 0, 0, 0, 1])).unwrap();
    assert_eq!((p.api_key, p.api_version, p.correlation_id), (18, 99, 1));
    assert!(frame::peek_request(&Bytes::from_static(&[0, 1, 2])).is_err());
}

#[test]
fn random_garbage_never_panics() {
    let mut s: u64 = 0x1234_5678;
    for i in 0..20_000u32 {
        let len = (i % 96) as usize;
        let mut buf = Vec::with_capacity(len);
        for _ in 0..len {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            buf.push(s as u8);
        }
        // Steer the first bytes to real api keys and versions half of the time.
        if len >= 4 && i % 2 == 0 {
            buf[0] = 0;
            buf[1] = (i % 88) as u8;
            buf[2] = 0;
            buf[3] = (i % 13) as u8;
        }
        let b = Bytes::from(buf);
        let _ = frame::decode_request(&b);
        if let Some(key) = ApiKey::from_i16((i % 88) as i16) {
            let _ = frame::decode_response(&b, key, key.versions().max);
        }
    }
}
