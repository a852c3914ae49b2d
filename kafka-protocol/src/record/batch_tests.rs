//! Tests of v2 batches: builder, parser, CRC, codecs, zero copy, stamping, malformed input.

use bytes::{Bytes, BytesMut};

use super::*;
use crate::error::DecodeError;
use crate::record::batch::RECORD_BATCH_OVERHEAD;

const ALL_CODECS: [Compression; 5] = [
    Compression::None,
    Compression::Gzip,
    Compression::Snappy,
    Compression::Lz4,
    Compression::Zstd,
];

type Owned = (
    i64,
    Option<Vec<u8>>,
    Option<Vec<u8>>,
    Vec<(String, Option<Vec<u8>>)>,
);

fn sample_records() -> Vec<Owned> {
    vec![
        (
            1_000,
            Some(b"k1".to_vec()),
            Some(b"value one".to_vec()),
            vec![("a".into(), Some(b"x".to_vec())), ("b".into(), None)],
        ),
        (990, None, Some(b"earlier".to_vec()), vec![]),
        (1_500, Some(b"k3".to_vec()), None, vec![]),
        (
            1_200,
            Some(Vec::new()),
            Some(Vec::new()),
            vec![(String::new(), Some(Vec::new()))],
        ),
        (
            1_300,
            None,
            None,
            vec![("h\u{e9}".into(), Some(vec![0xff; 300]))],
        ),
    ]
}

fn append_all(b: &mut RecordBatchBuilder, recs: &[Owned]) {
    for (ts, k, v, h) in recs {
        let headers: Vec<HeaderRef<'_>> =
            h.iter().map(|(k, v)| (k.as_str(), v.as_deref())).collect();
        b.append(*ts, k.as_deref(), v.as_deref(), &headers).unwrap();
    }
}

fn check_records(batch: &RecordBatch, recs: &[Owned]) {
    let got: Vec<Record> = batch
        .records(1 << 20)
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(got.len(), recs.len());
    let base_ts = recs[0].0;
    for (i, (rec, (ts, k, v, h))) in got.iter().zip(recs).enumerate() {
        assert_eq!(rec.attributes, 0);
        assert_eq!(rec.offset_delta, i as i32);
        assert_eq!(rec.offset(batch), batch.base_offset() + i as i64);
        assert_eq!(rec.timestamp_delta, ts - base_ts);
        assert_eq!(rec.timestamp(batch), *ts);
        assert_eq!(rec.key.as_deref(), k.as_deref());
        assert_eq!(rec.value.as_deref(), v.as_deref());
        assert_eq!(rec.headers.len(), h.len());
        for (got, (hk, hv)) in rec.headers.iter().zip(h) {
            assert_eq!(got.key, hk.as_str());
            assert_eq!(got.value.as_deref(), hv.as_deref());
        }
    }
}

fn sample_batch(codec: Compression) -> Bytes {
    let mut b = RecordBatchBuilder::new()
        .base_offset(1_000)
        .partition_leader_epoch(7)
        .producer(99, 2, 40)
        .transactional(true)
        .compression(codec);
    append_all(&mut b, &sample_records());
    b.build().unwrap()
}

#[test]
fn builder_output_parses_back_field_by_field() {
    let bytes = sample_batch(Compression::None);
    let (batch, rest) = RecordBatch::parse(&bytes).unwrap();
    assert!(rest.is_empty());
    assert_eq!(batch.size(), bytes.len());
    assert_eq!(batch.base_offset(), 1_000);
    assert_eq!(batch.batch_length() as usize, bytes.len() - 12);
    assert_eq!(batch.partition_leader_epoch(), 7);
    assert_eq!(batch.magic(), 2);
    assert_eq!(bytes[16], 2);
    assert_eq!(batch.attributes(), 0x10);
    assert_eq!(batch.compression().unwrap(), Compression::None);
    assert_eq!(batch.timestamp_type(), TimestampType::CreateTime);
    assert!(batch.is_transactional());
    assert!(!batch.is_control());
    assert_eq!(batch.delete_horizon_ms(), None);
    assert_eq!(batch.last_offset_delta(), 4);
    assert_eq!(batch.last_offset(), 1_004);
    assert_eq!(batch.next_offset(), 1_005);
    assert_eq!(batch.base_timestamp(), 1_000);
    assert_eq!(batch.max_timestamp(), 1_500);
    assert_eq!(batch.producer_id(), 99);
    assert_eq!(batch.producer_epoch(), 2);
    assert_eq!(batch.base_sequence(), 40);
    assert_eq!(batch.last_sequence(), 44);
    assert_eq!(batch.records_count(), 5);
    assert_eq!(batch.crc(), crc32c::crc32c(&bytes[21..]));
    batch.verify_crc().unwrap();
    batch.validate(1 << 20).unwrap();
    check_records(&batch, &sample_records());
    assert!(format!("{batch:?}").contains("base_offset: 1000"));
}

#[test]
fn any_flipped_byte_in_the_crc_range_fails_the_crc() {
    let bytes = sample_batch(Compression::None);
    for i in 17..bytes.len() {
        let mut v = bytes.to_vec();
        v[i] ^= 0x01;
        let batch = RecordBatch::from_bytes(Bytes::from(v)).unwrap();
        let err = batch.verify_crc().unwrap_err();
        assert!(
            matches!(
                err,
                DecodeError::Crc {
                    what: "record batch",
                    ..
                }
            ),
            "byte {i}: {err:?}"
        );
        assert!(batch.validate(1 << 20).is_err());
    }
    // Base offset and leader epoch are outside the CRC.
    for i in (0..8).chain(12..16) {
        let mut v = bytes.to_vec();
        v[i] ^= 0x40;
        RecordBatch::from_bytes(Bytes::from(v))
            .unwrap()
            .verify_crc()
            .unwrap();
    }
}

#[test]
fn known_answer_single_record_batch() {
    let mut want: Vec<u8> = Vec::new();
    want.extend_from_slice(&5i64.to_be_bytes()); // baseOffset
    want.extend_from_slice(&58i32.to_be_bytes()); // batchLength: 49 header bytes + 9 record bytes
    want.extend_from_slice(&3i32.to_be_bytes()); // partitionLeaderEpoch
    want.push(2); // magic
    want.extend_from_slice(&[0; 4]); // crc, below
    want.extend_from_slice(&0i16.to_be_bytes()); // attributes
    want.extend_from_slice(&0i32.to_be_bytes()); // lastOffsetDelta
    want.extend_from_slice(&1_000i64.to_be_bytes()); // baseTimestamp
    want.extend_from_slice(&1_000i64.to_be_bytes()); // maxTimestamp
    want.extend_from_slice(&(-1i64).to_be_bytes()); // producerId
    want.extend_from_slice(&(-1i16).to_be_bytes()); // producerEpoch
    want.extend_from_slice(&(-1i32).to_be_bytes()); // baseSequence
    want.extend_from_slice(&1i32.to_be_bytes()); // records count
    // Record: length 8 (zigzag 16), attributes, timestampDelta 0, offsetDelta 0, key length 1
    // (zigzag 2), "k", value length 1, "v", no headers.
    want.extend_from_slice(&[0x10, 0, 0, 0, 2, b'k', 2, b'v', 0]);
    assert_eq!(want.len(), 70);
    let crc = crc32c::crc32c(&want[21..]);
    want[17..21].copy_from_slice(&crc.to_be_bytes());

    let mut b = RecordBatchBuilder::new()
        .base_offset(5)
        .partition_leader_epoch(3);
    b.append(1_000, Some(b"k"), Some(b"v"), &[]).unwrap();
    let got = b.build().unwrap();
    assert_eq!(&got[..], &want[..]);
    assert_eq!(RecordBatch::from_bytes(got).unwrap().crc(), crc);
}

#[test]
fn every_codec_round_trips_through_builder_and_parser() {
    let mut recs = sample_records();
    for i in 0..200 {
        let v = format!("value {i} {}", "padding ".repeat(i % 7)).into_bytes();
        recs.push((
            2_000 + i as i64,
            Some(format!("key{}", i % 5).into_bytes()),
            Some(v),
            vec![],
        ));
    }
    let plain_len = {
        let mut b = RecordBatchBuilder::new();
        append_all(&mut b, &recs);
        b.build().unwrap().len()
    };
    for codec in ALL_CODECS {
        let mut b = RecordBatchBuilder::new().base_offset(77).compression(codec);
        append_all(&mut b, &recs);
        let bytes = b.build().unwrap();
        let batch = RecordBatch::from_bytes(bytes.clone()).unwrap();
        assert_eq!(batch.compression().unwrap(), codec);
        assert_eq!(batch.attributes() & 7, i16::from(codec.id()));
        assert_eq!(batch.records_count(), recs.len() as i32);
        batch.verify_crc().unwrap();
        batch.validate(1 << 20).unwrap();
        check_records(&batch, &recs);
        // The records-only pass hands over every record, in order, with its index.
        let (mut seen, mut sizes) = (Vec::new(), 0);
        batch
            .validate_records(1 << 20, |i, size, r| {
                seen.push((i, r.key.clone()));
                sizes += size;
            })
            .unwrap();
        // The sizes handed over are the records' whole encodings: together, the uncompressed
        // payload after the batch header.
        assert_eq!(sizes, plain_len - RECORD_BATCH_OVERHEAD, "{codec}");
        if codec != Compression::None && codec != Compression::Lz4 {
            // Only lz4_flex's frames leave out the content size.
            assert_eq!(
                batch.decompressed_size_hint(),
                Some(plain_len - RECORD_BATCH_OVERHEAD),
                "{codec}"
            );
        }
        let want: Vec<_> = recs
            .iter()
            .enumerate()
            .map(|(i, r)| (i, r.1.clone().map(Bytes::from)))
            .collect();
        assert_eq!(seen, want, "{codec}");
        if codec != Compression::None {
            assert!(
                bytes.len() < plain_len / 2,
                "{codec}: {} vs {plain_len}",
                bytes.len()
            );
            // The bound applies to the decompressed records.
            assert!(batch.records(plain_len / 2).is_err());
        }
    }
}

#[test]
fn compressed_batch_bomb_is_refused() {
    let zeros = vec![0u8; 1 << 20];
    for codec in ALL_CODECS.into_iter().skip(1) {
        let mut b = RecordBatchBuilder::new().compression(codec);
        b.append(0, None, Some(&zeros), &[]).unwrap();
        let bytes = b.build().unwrap();
        assert!(bytes.len() < 64 * 1024);
        let batch = RecordBatch::from_bytes(bytes).unwrap();
        let err = batch.records(64 * 1024).unwrap_err();
        assert!(
            matches!(
                err,
                DecodeError::TooLarge { .. } | DecodeError::Decompression { .. }
            ),
            "{codec}: {err:?}"
        );
    }
}

#[test]
fn uncompressed_records_are_slices_of_the_input() {
    let first = sample_batch(Compression::None);
    let set = Bytes::from([&first[..], &first[..]].concat());
    let range = set.as_ptr() as usize..set.as_ptr() as usize + set.len();
    let inside = |b: &Bytes| {
        let p = b.as_ptr() as usize;
        range.contains(&p) && p + b.len() <= range.end
    };
    let mut n = 0;
    for batch in RecordBatches::new(set.clone()) {
        let batch = batch.unwrap();
        assert!(inside(batch.as_bytes()));
        for rec in batch.records(0).unwrap() {
            let rec = rec.unwrap();
            for b in rec.key.iter().chain(&rec.value) {
                if !b.is_empty() {
                    assert!(inside(b));
                }
            }
            for h in &rec.headers {
                assert!(h.key.is_empty() || inside(h.key.as_bytes()));
                assert!(h.value.as_ref().is_none_or(|v| v.is_empty() || inside(v)));
            }
            n += 1;
        }
    }
    assert_eq!(n, 10);
}

#[test]
fn stamping_offset_and_epoch_keeps_the_crc() {
    let mut buf = BytesMut::from(&sample_batch(Compression::Lz4)[..]);
    let crc_before = RecordBatch::from_bytes(Bytes::copy_from_slice(&buf))
        .unwrap()
        .crc();
    let mut m = RecordBatchMut::new(&mut buf).unwrap();
    m.set_base_offset(123_456_789);
    m.set_partition_leader_epoch(42);
    let batch = RecordBatch::from_bytes(buf.freeze()).unwrap();
    assert_eq!(batch.base_offset(), 123_456_789);
    assert_eq!(batch.partition_leader_epoch(), 42);
    assert_eq!(batch.crc(), crc_before);
    batch.verify_crc().unwrap();
    let offsets: Vec<i64> = batch
        .records(1 << 20)
        .unwrap()
        .map(|r| r.unwrap().offset(&batch))
        .collect();
    assert_eq!(offsets, (123_456_789..123_456_794).collect::<Vec<_>>());
}

#[test]
fn stamping_log_append_time_recomputes_the_crc() {
    let mut b = RecordBatchBuilder::new().compression(Compression::None);
    append_all(&mut b, &sample_records());
    let mut buf = b.build_mut().unwrap();
    let mut m = RecordBatchMut::new(&mut buf).unwrap();
    m.set_log_append_time(1_700_000_000_123);
    let crc = m.recompute_crc();
    let batch = RecordBatch::from_bytes(buf.clone().freeze()).unwrap();
    assert_eq!(batch.timestamp_type(), TimestampType::LogAppendTime);
    assert_eq!(batch.attributes() & 0x08, 0x08);
    assert_eq!(batch.max_timestamp(), 1_700_000_000_123);
    assert_eq!(batch.base_timestamp(), 1_000);
    assert_eq!(batch.crc(), crc);
    assert_eq!(batch.crc(), crc32c::crc32c(&buf[21..]));
    batch.verify_crc().unwrap();
    for rec in batch.records(1 << 20).unwrap() {
        assert_eq!(rec.unwrap().timestamp(&batch), 1_700_000_000_123);
    }
    // Back to create time, then producer state: the CRC follows each edit.
    let mut m = RecordBatchMut::new(&mut buf).unwrap();
    m.set_max_timestamp(TimestampType::CreateTime, 1_500);
    m.set_producer_state(5, 6, 7);
    let batch = RecordBatch::from_bytes(buf.freeze()).unwrap();
    batch.verify_crc().unwrap();
    assert_eq!(batch.timestamp_type(), TimestampType::CreateTime);
    assert_eq!(
        (
            batch.producer_id(),
            batch.producer_epoch(),
            batch.base_sequence()
        ),
        (5, 6, 7)
    );
    check_records(&batch, &sample_records());
}

#[test]
fn builder_log_append_time_and_flags() {
    let mut b = RecordBatchBuilder::new()
        .log_append_time(9_999)
        .control(true);
    b.append(5, None, None, &[]).unwrap();
    let batch = RecordBatch::from_bytes(b.build().unwrap()).unwrap();
    assert_eq!(batch.attributes(), 0x28);
    assert_eq!(batch.max_timestamp(), 9_999);
    assert_eq!(batch.base_timestamp(), 5);
    batch.verify_crc().unwrap();
}

#[test]
fn sequence_wraps_and_empty_batches() {
    let mut b = RecordBatchBuilder::new().producer(1, 0, i32::MAX - 1);
    for _ in 0..3 {
        b.append(0, None, Some(b"v"), &[]).unwrap();
    }
    assert_eq!(b.len(), 3);
    let batch = RecordBatch::from_bytes(b.build().unwrap()).unwrap();
    assert_eq!(batch.last_sequence(), 0);

    for codec in ALL_CODECS {
        let b = RecordBatchBuilder::new().compression(codec);
        assert!(b.is_empty());
        let batch = RecordBatch::from_bytes(b.build().unwrap()).unwrap();
        assert_eq!(batch.records_count(), 0);
        assert_eq!(batch.base_timestamp(), -1);
        assert_eq!(batch.max_timestamp(), -1);
        assert_eq!(batch.records(0).unwrap().count(), 0);
        batch.validate(0).unwrap();
    }
}

#[test]
fn delete_horizon_attribute() {
    let mut buf = BytesMut::from(&sample_batch(Compression::None)[..]);
    buf[22] |= 0x40;
    RecordBatchMut::new(&mut buf).unwrap().recompute_crc();
    let batch = RecordBatch::from_bytes(buf.freeze()).unwrap();
    assert_eq!(batch.delete_horizon_ms(), Some(1_000));
    batch.verify_crc().unwrap();
}

#[test]
fn batches_iterator_stops_at_a_partial_tail() {
    let one = sample_batch(Compression::Gzip);
    let two = sample_batch(Compression::None);
    let mut set = [&one[..], &two[..], &one[..]].concat();
    set.extend_from_slice(&two[..30]);
    let mut it = RecordBatches::new(Bytes::from(set));
    let sizes: Vec<usize> = it.by_ref().map(|b| b.unwrap().size()).collect();
    assert_eq!(sizes, [one.len(), two.len(), one.len()]);
    assert_eq!(&it.remainder()[..], &two[..30]);
    assert_eq!(it.position(), 2 * one.len() + two.len());

    // A bad length is an error, after which the iterator stops at the bad batch.
    let mut bad = one.to_vec();
    bad.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 1, 2, 3]);
    let mut it = RecordBatches::new(Bytes::from(bad));
    assert!(it.next().unwrap().is_ok());
    assert!(matches!(it.next(), Some(Err(DecodeError::Invalid { .. }))));
    assert!(it.next().is_none());
    assert_eq!(it.remainder().len(), 15);

    // A legacy message in a v2-only set is an error.
    let mut legacy = two.to_vec();
    legacy[16] = 1;
    assert!(
        RecordBatches::new(Bytes::from(legacy))
            .next()
            .unwrap()
            .is_err()
    );
}

#[test]
fn truncation_at_every_byte_is_a_typed_error_or_a_clean_stop() {
    for codec in [Compression::None, Compression::Snappy] {
        let bytes = sample_batch(codec);
        for cut in 0..bytes.len() {
            let part = bytes.slice(..cut);
            assert!(
                matches!(
                    RecordBatch::parse(&part),
                    Err(DecodeError::Truncated { .. })
                ),
                "cut {cut}"
            );
            let mut it = RecordBatches::new(part.clone());
            assert!(it.next().is_none());
            assert_eq!(it.remainder(), part);
            let mut v = part.to_vec();
            assert!(RecordBatchMut::new(&mut v).is_err());
            // Same cut, with the length patched to agree: the records run short.
            if cut >= 61 {
                let mut v = part.to_vec();
                v[8..12].copy_from_slice(&(cut as i32 - 12).to_be_bytes());
                RecordBatchMut::new(&mut v).unwrap().recompute_crc();
                let batch = RecordBatch::from_bytes(Bytes::from(v)).unwrap();
                batch.verify_crc().unwrap();
                assert!(batch.validate(1 << 20).is_err(), "cut {cut}");
                if let Ok(records) = batch.records(1 << 20) {
                    assert!(records.into_iter().any(|r| r.is_err()), "cut {cut}");
                }
            }
        }
    }
}

/// A small deterministic generator (xorshift) for garbage input.
fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

fn exercise(bytes: Bytes) {
    for batch in RecordBatches::new(bytes.clone()).flatten() {
        let _ = batch.validate(1 << 16);
        let _ = (
            batch.last_sequence(),
            batch.last_offset(),
            format!("{batch:?}"),
        );
        let _ = parse_end_txn_marker(&batch);
        if let Ok(records) = batch.records(1 << 16) {
            for rec in records.flatten() {
                let _ = (
                    rec.offset(&batch),
                    rec.timestamp(&batch),
                    ControlRecord::parse(&rec),
                );
            }
        }
    }
    for entry in RecordSet::new(bytes.clone()).flatten() {
        if let RecordSetEntry::Legacy(m) = entry {
            let _ = m.inner_messages(1 << 16);
        }
    }
    let _ = LegacyRecords::new(bytes.clone(), 1 << 16).count();
    let mut v = bytes.to_vec();
    if let Ok(mut m) = RecordBatchMut::new(&mut v) {
        m.set_log_append_time(1);
        m.set_base_offset(-1);
    }
}

#[test]
fn garbage_and_mutated_input_never_panics() {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    for len in [0usize, 1, 11, 12, 16, 17, 60, 61, 62, 100, 1_000] {
        for _ in 0..20 {
            let v: Vec<u8> = (0..len).map(|_| xorshift(&mut seed) as u8).collect();
            exercise(Bytes::from(v));
        }
    }
    // Valid framing with random bodies: set the length and magic so parsing goes deep.
    for _ in 0..300 {
        let len = 61 + (xorshift(&mut seed) % 200) as usize;
        let mut v: Vec<u8> = (0..len).map(|_| xorshift(&mut seed) as u8).collect();
        v[8..12].copy_from_slice(&(len as i32 - 12).to_be_bytes());
        v[16] = (xorshift(&mut seed) % 3) as u8;
        v[21] = 0;
        v[57..61].copy_from_slice(&((xorshift(&mut seed) % 8) as i32).to_be_bytes());
        exercise(Bytes::from(v));
    }
    // Valid batches of every codec with single bytes flipped (CRC fixed up).
    for codec in ALL_CODECS {
        let bytes = sample_batch(codec);
        for _ in 0..300 {
            let mut v = bytes.to_vec();
            let i = 21 + (xorshift(&mut seed) as usize) % (v.len() - 21);
            v[i] ^= 1 << (xorshift(&mut seed) % 8);
            RecordBatchMut::new(&mut v).unwrap().recompute_crc();
            exercise(Bytes::from(v));
        }
    }
}
