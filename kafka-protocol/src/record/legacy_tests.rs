//! Tests of legacy (magic 0 and 1) message sets and of mixed record sets.

use bytes::Bytes;

use super::legacy::{LEGACY_TIMESTAMP_TYPE_BIT, MAGIC_V0, MAGIC_V1};
use super::*;
use crate::error::DecodeError;

type Msg = (i64, Option<&'static [u8]>, Option<&'static [u8]>);

const MSGS: [Msg; 4] = [
    (1_000, Some(b"k0"), Some(b"v0")),
    (1_005, None, Some(b"value 1")),
    (999, Some(b"k2"), None),
    (1_010, Some(b""), Some(b"")),
];

fn build(magic: i8, codec: Compression, base: i64) -> Bytes {
    let mut b = LegacyMessageSetBuilder::new(magic, codec, base).unwrap();
    for (ts, k, v) in MSGS {
        b.append(ts, k, v).unwrap();
    }
    b.build().unwrap()
}

fn check(magic: i8, msgs: &[LegacyMessage], base: i64) {
    assert_eq!(msgs.len(), MSGS.len());
    for (i, (m, (ts, k, v))) in msgs.iter().zip(MSGS).enumerate() {
        assert_eq!(m.offset, base + i as i64);
        assert_eq!(m.magic, magic);
        assert_eq!(m.key.as_deref(), k);
        assert_eq!(m.value.as_deref(), v);
        assert_eq!(m.timestamp, (magic == 1).then_some(ts));
        m.verify_crc().unwrap();
    }
}

#[test]
fn known_answer_v0_message() {
    let got = build(MAGIC_V0, Compression::None, 7);
    let mut body = vec![0u8, 0]; // magic 0, attributes 0
    body.extend_from_slice(&2i32.to_be_bytes());
    body.extend_from_slice(b"k0");
    body.extend_from_slice(&2i32.to_be_bytes());
    body.extend_from_slice(b"v0");
    let mut want = 7i64.to_be_bytes().to_vec();
    want.extend_from_slice(&(4 + body.len() as i32).to_be_bytes());
    want.extend_from_slice(&crc32fast::hash(&body).to_be_bytes());
    want.extend_from_slice(&body);
    assert_eq!(&got[..want.len()], &want[..]);
}

#[test]
fn v0_and_v1_uncompressed_round_trip() {
    for magic in [MAGIC_V0, MAGIC_V1] {
        let set = build(magic, Compression::None, 40);
        let shallow: Vec<LegacyMessage> = LegacyEntries::new(set.clone())
            .map(Result::unwrap)
            .collect();
        check(magic, &shallow, 40);
        let deep: Vec<LegacyMessage> = LegacyRecords::new(set.clone(), 0)
            .map(Result::unwrap)
            .collect();
        assert_eq!(deep, shallow);
        let m = &shallow[0];
        assert_eq!(m.compression().unwrap(), Compression::None);
        assert!(!m.is_compressed());
        let overhead = if magic == 0 { 14 } else { 22 };
        assert_eq!(m.size(), 12 + overhead + 4);
        let expected = if magic == 1 {
            TimestampType::CreateTime
        } else {
            TimestampType::NoTimestampType
        };
        assert_eq!(m.timestamp_type(), expected);
        // Zero copy: values are slices of the set.
        let p = m.value.as_ref().unwrap().as_ptr() as usize;
        assert!((set.as_ptr() as usize..set.as_ptr() as usize + set.len()).contains(&p));
    }
}

#[test]
fn gzip_wrapped_v1_uses_relative_inner_offsets() {
    let set = build(MAGIC_V1, Compression::Gzip, 100);
    let wrappers: Vec<LegacyMessage> = LegacyEntries::new(set.clone())
        .map(Result::unwrap)
        .collect();
    assert_eq!(wrappers.len(), 1);
    let w = &wrappers[0];
    assert!(w.is_compressed());
    assert_eq!(w.compression().unwrap(), Compression::Gzip);
    // The wrapper carries the last inner offset and the max timestamp; no key.
    assert_eq!(w.offset, 103);
    assert_eq!(w.timestamp, Some(1_010));
    assert_eq!(w.key, None);
    w.verify_crc().unwrap();
    // Inside, offsets are 0..n.
    let inner = decompress(Compression::Gzip, w.value.as_ref().unwrap(), 1 << 20).unwrap();
    let raw: Vec<i64> = LegacyEntries::new(inner)
        .map(|m| m.unwrap().offset)
        .collect();
    assert_eq!(raw, [0, 1, 2, 3]);
    // Deep iteration makes them absolute.
    let deep: Vec<LegacyMessage> = LegacyRecords::new(set, 1 << 20)
        .map(Result::unwrap)
        .collect();
    check(MAGIC_V1, &deep, 100);
}

#[test]
fn every_legacy_codec_round_trips_with_absolute_offsets() {
    for magic in [MAGIC_V0, MAGIC_V1] {
        for codec in [Compression::Gzip, Compression::Snappy, Compression::Lz4] {
            let set = build(magic, codec, 5_000);
            let w = LegacyEntries::new(set.clone()).next().unwrap().unwrap();
            assert_eq!(w.offset, 5_003);
            let inner = w.inner_messages(1 << 20).unwrap();
            check(magic, &inner, 5_000);
            // v0 stores absolute inner offsets.
            if magic == 0 {
                let data = decompress(codec, w.value.as_ref().unwrap(), 1 << 20).unwrap();
                let raw: Vec<i64> = LegacyEntries::new(data)
                    .map(|m| m.unwrap().offset)
                    .collect();
                assert_eq!(raw, [5_000, 5_001, 5_002, 5_003]);
            }
            // Too small a bound is refused.
            assert!(w.inner_messages(10).is_err());
        }
    }
    assert!(LegacyMessageSetBuilder::new(1, Compression::Zstd, 0).is_err());
    assert!(LegacyMessageSetBuilder::new(2, Compression::None, 0).is_err());
    assert!(
        LegacyMessageSetBuilder::new(0, Compression::Gzip, 0)
            .unwrap()
            .build()
            .unwrap()
            .is_empty()
    );
}

#[test]
fn v1_log_append_time_wrapper_sets_inner_timestamps() {
    let set = build(MAGIC_V1, Compression::Snappy, 0);
    let mut v = set.to_vec();
    // Offset 0..8, size 8..12, crc 12..16, magic 16, attributes 17, timestamp 18..26.
    v[17] |= LEGACY_TIMESTAMP_TYPE_BIT as u8;
    v[18..26].copy_from_slice(&77i64.to_be_bytes());
    let crc = crc32fast::hash(&v[16..]);
    v[12..16].copy_from_slice(&crc.to_be_bytes());
    for m in LegacyRecords::new(Bytes::from(v), 1 << 20) {
        let m = m.unwrap();
        assert_eq!(m.timestamp, Some(77));
        assert_eq!(m.timestamp_type(), TimestampType::LogAppendTime);
    }
}

#[test]
fn magic0_lz4_with_kafka_3160_header_checksum_is_readable() {
    let set = build(MAGIC_V0, Compression::None, 0);
    let frame = compress(Compression::Lz4, &set).unwrap();
    let mut broken = frame.to_vec();
    // Old Kafka hashed the magic number along with the descriptor.
    broken[6] = (xxh32_over(&broken[..6]) >> 8) as u8;
    assert_ne!(broken[6], frame[6]);
    for (magic, ok) in [(MAGIC_V0, true), (MAGIC_V1, false)] {
        let mut b = LegacyMessageSetBuilder::new(magic, Compression::None, 3).unwrap();
        b.append(0, None, Some(&broken)).unwrap();
        let mut wrapper = b.build().unwrap().to_vec();
        // Mark it lz4-compressed and fix its CRC.
        wrapper[17] |= 3;
        let crc = crc32fast::hash(&wrapper[16..]);
        wrapper[12..16].copy_from_slice(&crc.to_be_bytes());
        let deep: Vec<_> = LegacyRecords::new(Bytes::from(wrapper), 1 << 20).collect();
        if ok {
            assert_eq!(deep.len(), MSGS.len());
            assert!(deep.iter().all(Result::is_ok));
        } else {
            assert!(matches!(
                deep.last(),
                Some(Err(DecodeError::Decompression { .. }))
            ));
        }
    }
}

/// xxHash32 of a short input, for the test above (the library's version is private).
fn xxh32_over(input: &[u8]) -> u32 {
    let (p1, p2, p3, p4, p5) = (
        0x9E37_79B1u32,
        0x85EB_CA77u32,
        0xC2B2_AE3Du32,
        0x27D4_EB2Fu32,
        0x1656_67B1u32,
    );
    let mut h = p5.wrapping_add(input.len() as u32);
    let mut words = input.chunks_exact(4);
    for w in words.by_ref() {
        let v = u32::from_le_bytes(w.try_into().unwrap());
        h = h
            .wrapping_add(v.wrapping_mul(p3))
            .rotate_left(17)
            .wrapping_mul(p4);
    }
    for &b in words.remainder() {
        h = h
            .wrapping_add(u32::from(b).wrapping_mul(p5))
            .rotate_left(11)
            .wrapping_mul(p1);
    }
    h ^= h >> 15;
    h = h.wrapping_mul(p2);
    h ^= h >> 13;
    h = h.wrapping_mul(p3);
    h ^ (h >> 16)
}

#[test]
fn crc_errors_and_malformed_wrappers() {
    let set = build(MAGIC_V1, Compression::None, 0);
    let mut v = set.to_vec();
    v[30] ^= 1;
    let mut it = LegacyRecords::new(Bytes::from(v), 1 << 20);
    assert!(matches!(
        it.next(),
        Some(Err(DecodeError::Crc {
            what: "message",
            ..
        }))
    ));
    assert!(it.next().is_none());

    // A wrapper holding a compressed message (nested compression) is refused.
    let inner = build(MAGIC_V1, Compression::Gzip, 0);
    let wrapped = {
        let z = compress(Compression::Gzip, &inner).unwrap();
        let mut b = LegacyMessageSetBuilder::new(MAGIC_V1, Compression::None, 0).unwrap();
        b.append(0, None, Some(&z)).unwrap();
        let mut w = b.build().unwrap().to_vec();
        w[17] |= 1;
        let crc = crc32fast::hash(&w[16..]);
        w[12..16].copy_from_slice(&crc.to_be_bytes());
        Bytes::from(w)
    };
    let err = LegacyRecords::new(wrapped, 1 << 20)
        .next()
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(
            err,
            DecodeError::Invalid {
                reason: "nested compressed message",
                ..
            }
        ),
        "{err:?}"
    );

    // Magic 0 inside a magic 1 wrapper is refused.
    let v0 = build(MAGIC_V0, Compression::None, 0);
    let z = compress(Compression::Snappy, &v0).unwrap();
    let mut b = LegacyMessageSetBuilder::new(MAGIC_V1, Compression::None, 0).unwrap();
    b.append(0, None, Some(&z)).unwrap();
    let mut w = b.build().unwrap().to_vec();
    w[17] |= 2;
    let crc = crc32fast::hash(&w[16..]);
    w[12..16].copy_from_slice(&crc.to_be_bytes());
    assert!(
        LegacyEntries::new(Bytes::from(w))
            .next()
            .unwrap()
            .unwrap()
            .inner_messages(1 << 20)
            .is_err()
    );
}

#[test]
fn truncation_at_every_byte() {
    for (magic, codec) in [(MAGIC_V0, Compression::None), (MAGIC_V1, Compression::Gzip)] {
        let set = build(magic, codec, 0);
        let sizes: Vec<usize> = LegacyEntries::new(set.clone())
            .map(|m| m.unwrap().size())
            .collect();
        let ends: Vec<usize> = sizes
            .iter()
            .scan(0, |acc, s| {
                *acc += s;
                Some(*acc)
            })
            .collect();
        let first = sizes[0];
        for cut in 0..set.len() {
            let part = set.slice(..cut);
            let mut it = LegacyRecords::new(part.clone(), 1 << 20);
            let n = it.by_ref().map(Result::unwrap).count();
            let whole = ends.iter().filter(|&&e| e <= cut).count();
            let per_entry = if codec == Compression::None {
                1
            } else {
                MSGS.len()
            };
            assert_eq!(n, whole * per_entry, "cut {cut}");
            assert_eq!(
                it.remainder().is_empty(),
                cut == 0 || ends.contains(&cut),
                "cut {cut}"
            );
            if cut < first {
                assert!(matches!(
                    LegacyMessage::parse(&part),
                    Err(DecodeError::Truncated { .. })
                ));
            }
        }
    }
}

#[test]
fn record_set_mixes_magic_values() {
    let v0 = build(MAGIC_V0, Compression::None, 0);
    let v1 = build(MAGIC_V1, Compression::Lz4, 4);
    let mut b = RecordBatchBuilder::new().base_offset(5);
    b.append(1, Some(b"k"), Some(b"v"), &[]).unwrap();
    let v2 = b.build().unwrap();
    let mut all = [&v0[..], &v1[..], &v2[..]].concat();
    all.extend_from_slice(&v2[..20]);
    let mut set = RecordSet::new(Bytes::from(all));
    let magics: Vec<i8> = set.by_ref().map(|e| e.unwrap().magic()).collect();
    assert_eq!(magics, [0, 0, 0, 0, 1, 2]);
    assert_eq!(set.remainder().len(), 20);

    let mut bad = v2.to_vec();
    bad[16] = 7;
    let mut set = RecordSet::new(Bytes::from(bad));
    assert!(matches!(set.next(), Some(Err(DecodeError::Invalid { .. }))));
    assert!(set.next().is_none());
}
