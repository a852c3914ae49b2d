//! Tests of up- and down-conversion between legacy message sets and v2 batches.

use bytes::{Bytes, BytesMut};

use super::convert::{
    ConvertError, DownConvertLimits, cut_before_zstd, down_convert, starts_with_legacy, up_convert,
};
use super::legacy::{LEGACY_TIMESTAMP_TYPE_BIT, MAGIC_V0, MAGIC_V1, put_message};
use super::*;
use crate::error::DecodeError;

type Msg = (i64, Option<&'static [u8]>, Option<&'static [u8]>);

const MSGS: [Msg; 4] = [
    (1_000, Some(b"k0"), Some(b"v0")),
    (1_005, None, Some(b"value 1")),
    (999, Some(b"k2"), None),
    (1_010, Some(b""), Some(b"")),
];

const CODECS: [Compression; 4] = [
    Compression::None,
    Compression::Gzip,
    Compression::Snappy,
    Compression::Lz4,
];

const BIG: DownConvertLimits = DownConvertLimits {
    max_bytes: 1 << 20,
    max_entry: 1 << 20,
    max_decompressed: 1 << 20,
};

fn legacy_set(magic: i8, codec: Compression, base: i64) -> Bytes {
    let mut b = LegacyMessageSetBuilder::new(magic, codec, base).unwrap();
    for (ts, k, v) in MSGS {
        b.append(ts, k, v).unwrap();
    }
    b.build().unwrap()
}

/// A v2 batch of `MSGS` at `base`, each record with a header (which down-conversion drops).
fn v2_batch(codec: Compression, base: i64) -> Bytes {
    let mut b = RecordBatchBuilder::new()
        .base_offset(base)
        .compression(codec);
    for (ts, k, v) in MSGS {
        b.append(ts, k, v, &[("h", Some(b"x"))]).unwrap();
    }
    b.build().unwrap()
}

/// (offset, timestamp, key, value) of every record of every v2 batch.
type Flat = Vec<(i64, i64, Option<Bytes>, Option<Bytes>)>;

fn v2_records(set: &Bytes) -> Flat {
    let mut out = Vec::new();
    for b in RecordBatches::new(set.clone()) {
        let b = b.unwrap();
        b.validate(1 << 20).unwrap();
        for r in b.records(1 << 20).unwrap() {
            let r = r.unwrap();
            out.push((r.offset(&b), r.timestamp(&b), r.key, r.value));
        }
    }
    out
}

fn legacy_records(set: &Bytes) -> Vec<LegacyMessage> {
    LegacyRecords::new(set.clone(), 1 << 20)
        .map(Result::unwrap)
        .collect()
}

fn expected(base: i64, timestamps: bool) -> Flat {
    MSGS.iter()
        .enumerate()
        .map(|(i, (ts, k, v))| {
            (
                base + i as i64,
                if timestamps { *ts } else { -1 },
                k.map(Bytes::from_static),
                v.map(Bytes::from_static),
            )
        })
        .collect()
}

#[test]
fn up_conversion_keeps_keys_values_timestamps_and_the_codec() {
    for magic in [MAGIC_V0, MAGIC_V1] {
        for codec in CODECS {
            let set = legacy_set(magic, codec, 77);
            assert!(starts_with_legacy(&set));
            let up = up_convert(&set, 1 << 20).unwrap();
            assert_eq!(up.records, MSGS.len());
            assert_eq!(up.compression, codec);
            assert!(!starts_with_legacy(&up.batch));
            let b = RecordBatch::from_bytes(up.batch.clone()).unwrap();
            assert_eq!(b.compression().unwrap(), codec, "magic {magic} {codec}");
            assert_eq!(b.base_offset(), 0);
            assert_eq!(b.producer_id(), -1);
            assert_eq!(b.timestamp_type(), TimestampType::CreateTime);
            // Offsets restart at 0 (the log assigns them); magic 0 has no timestamps.
            assert_eq!(v2_records(&up.batch), expected(0, magic == MAGIC_V1));
        }
    }
}

#[test]
fn up_conversion_merges_several_wrappers_and_plain_messages() {
    let mut set = BytesMut::new();
    set.extend_from_slice(&legacy_set(MAGIC_V1, Compression::None, 0));
    set.extend_from_slice(&legacy_set(MAGIC_V1, Compression::Snappy, 4));
    set.extend_from_slice(&legacy_set(MAGIC_V1, Compression::Gzip, 8));
    let up = up_convert(&set.freeze(), 1 << 20).unwrap();
    assert_eq!(up.records, 12);
    assert_eq!(up.compression, Compression::Gzip);
    let got = v2_records(&up.batch);
    assert_eq!(got.len(), 12);
    assert_eq!(got[5].3.as_deref(), Some(&b"value 1"[..]));
    assert_eq!(got[11].0, 11);
}

#[test]
fn up_conversion_refuses_bad_input() {
    // A flipped byte of the first value ("v0") breaks the CRC.
    let good = legacy_set(MAGIC_V1, Compression::None, 0);
    let mut bad = good.to_vec();
    bad[12 + 4 + 1 + 1 + 8 + 4 + 2 + 4] ^= 1;
    match up_convert(&Bytes::from(bad), 1 << 20) {
        Err(ConvertError::Decode(DecodeError::Crc { .. })) => {}
        other => panic!("{other:?}"),
    }
    // A partial trailing message.
    let cut = good.slice(..good.len() - 3);
    assert!(matches!(
        up_convert(&cut, 1 << 20),
        Err(ConvertError::Decode(_))
    ));
    // Empty, and a v2 batch where a legacy message is expected.
    assert!(up_convert(&Bytes::new(), 1 << 20).is_err());
    assert!(up_convert(&v2_batch(Compression::None, 0), 1 << 20).is_err());
    // Decompression is bounded.
    let gz = legacy_set(MAGIC_V1, Compression::Gzip, 0);
    assert!(matches!(
        up_convert(&gz, 16),
        Err(ConvertError::Decode(DecodeError::TooLarge { .. }))
    ));
}

/// A legacy wrapper whose attributes say zstd (codec 4).
fn zstd_wrapper(magic: i8) -> Bytes {
    let inner = legacy_set(magic, Compression::None, 0);
    let value = compress(Compression::Zstd, &inner).unwrap();
    let mut out = BytesMut::new();
    put_message(&mut out, 3, magic, 4, 0, None, Some(&value)).unwrap();
    out.freeze()
}

#[test]
fn up_conversion_refuses_zstd() {
    for magic in [MAGIC_V0, MAGIC_V1] {
        assert_eq!(
            up_convert(&zstd_wrapper(magic), 1 << 20),
            Err(ConvertError::Zstd { magic })
        );
    }
}

#[test]
fn down_conversion_writes_absolute_offsets_and_drops_headers() {
    for magic in [MAGIC_V0, MAGIC_V1] {
        for codec in CODECS {
            let set = v2_batch(codec, 500);
            let down = down_convert(&set, magic, 500, BIG).unwrap();
            assert!(down.complete);
            assert_eq!(down.messages, 4);
            assert_eq!(down.next_offset, 504);
            let shallow: Vec<LegacyMessage> = LegacyEntries::new(down.records.clone())
                .map(Result::unwrap)
                .collect();
            if codec == Compression::None {
                assert_eq!(shallow.len(), 4);
            } else {
                // One wrapper, same codec, at the last offset, with the max timestamp.
                assert_eq!(shallow.len(), 1);
                let w = &shallow[0];
                assert_eq!(w.compression().unwrap(), codec);
                assert_eq!(w.offset, 503);
                assert_eq!(w.key, None);
                assert_eq!(w.timestamp, (magic == MAGIC_V1).then_some(1_010));
            }
            let deep = legacy_records(&down.records);
            let got: Flat = deep
                .iter()
                .map(|m| {
                    assert_eq!(m.magic, magic);
                    (
                        m.offset,
                        m.timestamp.unwrap_or(-1),
                        m.key.clone(),
                        m.value.clone(),
                    )
                })
                .collect();
            assert_eq!(
                got,
                expected(500, magic == MAGIC_V1),
                "magic {magic} {codec}"
            );
        }
    }
}

#[test]
fn magic_1_wrappers_carry_relative_inner_offsets_and_magic_0_absolute() {
    for (magic, want) in [
        (MAGIC_V1, [0i64, 1, 2, 3]),
        (MAGIC_V0, [900, 901, 902, 903]),
    ] {
        let down = down_convert(&v2_batch(Compression::Gzip, 900), magic, 900, BIG).unwrap();
        let w = LegacyEntries::new(down.records).next().unwrap().unwrap();
        let inner = decompress(Compression::Gzip, w.value.as_ref().unwrap(), 1 << 20).unwrap();
        let raw: Vec<i64> = LegacyEntries::new(inner)
            .map(|m| m.unwrap().offset)
            .collect();
        assert_eq!(raw, want);
    }
}

#[test]
fn lz4_wrappers_are_standard_frames_in_both_magics() {
    // Not Kafka's broken magic 0 header checksum: a standard LZ4 reader reads both.
    for magic in [MAGIC_V0, MAGIC_V1] {
        let down = down_convert(&v2_batch(Compression::Lz4, 0), magic, 0, BIG).unwrap();
        let w = LegacyEntries::new(down.records.clone())
            .next()
            .unwrap()
            .unwrap();
        assert!(decompress(Compression::Lz4, w.value.as_ref().unwrap(), 1 << 20).is_ok());
        assert_eq!(legacy_records(&down.records).len(), 4);
    }
}

#[test]
fn down_conversion_keeps_log_append_time_in_magic_1() {
    for codec in [Compression::None, Compression::Snappy] {
        let mut b = RecordBatchBuilder::new()
            .compression(codec)
            .log_append_time(42_000);
        b.append(1, Some(b"k"), Some(b"v"), &[]).unwrap();
        b.append(2, Some(b"k"), Some(b"w"), &[]).unwrap();
        let set = b.build().unwrap();
        let down = down_convert(&set, MAGIC_V1, 0, BIG).unwrap();
        for m in LegacyEntries::new(down.records.clone()).map(Result::unwrap) {
            assert_ne!(m.attributes & LEGACY_TIMESTAMP_TYPE_BIT, 0);
            assert_eq!(m.timestamp, Some(42_000));
        }
        for m in legacy_records(&down.records) {
            assert_eq!(m.timestamp_type(), TimestampType::LogAppendTime);
            assert_eq!(m.timestamp, Some(42_000));
        }
        // Magic 0 has no timestamp type bit.
        let down = down_convert(&set, MAGIC_V0, 0, BIG).unwrap();
        for m in LegacyEntries::new(down.records).map(Result::unwrap) {
            assert_eq!(m.attributes & LEGACY_TIMESTAMP_TYPE_BIT, 0);
        }
    }
}

#[test]
fn control_batches_are_skipped_and_records_before_the_fetch_offset_left_out() {
    let marker = end_txn_marker_batch(ControlRecordType::Commit, 7, 0, 0, 5).unwrap();
    let mut marker = BytesMut::from(&marker[..]);
    RecordBatchMut::new(&mut marker).unwrap().set_base_offset(4);
    let mut set = BytesMut::new();
    set.extend_from_slice(&v2_batch(Compression::None, 0));
    set.extend_from_slice(&marker);
    set.extend_from_slice(&v2_batch(Compression::Gzip, 5));
    let set = set.freeze();
    for magic in [MAGIC_V0, MAGIC_V1] {
        let down = down_convert(&set, magic, 2, BIG).unwrap();
        assert!(down.complete);
        let offsets: Vec<i64> = legacy_records(&down.records)
            .iter()
            .map(|m| m.offset)
            .collect();
        assert_eq!(offsets, [2, 3, 5, 6, 7, 8]);
        let down = down_convert(&set, magic, 6, BIG).unwrap();
        let offsets: Vec<i64> = legacy_records(&down.records)
            .iter()
            .map(|m| m.offset)
            .collect();
        assert_eq!(offsets, [6, 7, 8]);
        assert_eq!(down.next_offset, 9);
    }
}

#[test]
fn down_conversion_refuses_zstd_first_and_stops_before_a_later_one() {
    let zstd = v2_batch(Compression::Zstd, 4);
    assert_eq!(
        down_convert(&zstd, MAGIC_V1, 4, BIG),
        Err(ConvertError::Zstd { magic: MAGIC_V1 })
    );
    let mut set = BytesMut::new();
    set.extend_from_slice(&v2_batch(Compression::None, 0));
    set.extend_from_slice(&zstd);
    let down = down_convert(&set.freeze(), MAGIC_V1, 0, BIG).unwrap();
    assert!(!down.complete);
    assert_eq!(down.messages, 4);
    assert_eq!(down.next_offset, 4);
}

#[test]
fn down_conversion_stops_at_the_limit_but_always_writes_the_first_entry() {
    let mut set = BytesMut::new();
    for i in 0..10 {
        set.extend_from_slice(&v2_batch(Compression::Snappy, i * 4));
    }
    let set = set.freeze();
    // A limit below one wrapper: the first batch anyway, nothing more.
    let tiny = DownConvertLimits {
        max_bytes: 10,
        ..BIG
    };
    let down = down_convert(&set, MAGIC_V1, 0, tiny).unwrap();
    assert!(!down.complete);
    assert_eq!(down.messages, 4);
    assert_eq!(down.next_offset, 4);
    // A limit of about three wrappers.
    let one = down.records.len();
    let three = DownConvertLimits {
        max_bytes: 3 * one + one / 2,
        ..BIG
    };
    let down = down_convert(&set, MAGIC_V1, 0, three).unwrap();
    assert_eq!(down.messages, 12);
    assert!(down.records.len() <= three.max_bytes);
    // Uncompressed: message by message, never past the limit after the first message.
    let plain = v2_batch(Compression::None, 0);
    let small = DownConvertLimits {
        max_bytes: 1,
        max_entry: 1,
        ..BIG
    };
    let down = down_convert(&plain, MAGIC_V0, 0, small).unwrap();
    assert_eq!(
        (down.messages, down.next_offset, down.complete),
        (1, 1, false)
    );
    // And fetching on from there makes progress.
    let down = down_convert(&plain, MAGIC_V0, 1, small).unwrap();
    assert_eq!(down.next_offset, 2);
}

#[test]
fn one_entry_is_capped_and_served_in_parts() {
    // A compressed batch whose messages exceed `max_entry`: part of it per conversion.
    let set = v2_batch(Compression::Gzip, 10);
    let capped = DownConvertLimits {
        max_entry: 60,
        ..BIG
    };
    let mut offset = 10;
    let mut seen = Vec::new();
    while offset < 14 {
        let down = down_convert(&set, MAGIC_V1, offset, capped).unwrap();
        assert!(down.messages >= 1);
        seen.extend(legacy_records(&down.records).iter().map(|m| m.offset));
        offset = down.next_offset;
    }
    assert_eq!(seen, [10, 11, 12, 13]);
}

#[test]
fn legacy_entries_in_the_log_are_copied_or_converted() {
    let v1 = legacy_set(MAGIC_V1, Compression::Gzip, 20);
    let same = down_convert(&v1, MAGIC_V1, 20, BIG).unwrap();
    assert_eq!(same.records, v1);
    let down = down_convert(&v1, MAGIC_V0, 20, BIG).unwrap();
    let msgs = legacy_records(&down.records);
    assert_eq!(msgs.len(), 4);
    assert!(
        msgs.iter()
            .all(|m| m.magic == MAGIC_V0 && m.timestamp.is_none())
    );
    assert_eq!(
        down_convert(&zstd_wrapper(MAGIC_V1), MAGIC_V0, 0, BIG),
        Err(ConvertError::Zstd { magic: MAGIC_V0 })
    );
}

#[test]
fn down_then_up_round_trips() {
    for codec in CODECS {
        let down = down_convert(&v2_batch(codec, 0), MAGIC_V1, 0, BIG).unwrap();
        let up = up_convert(&down.records, 1 << 20).unwrap();
        assert_eq!(up.compression, codec);
        assert_eq!(v2_records(&up.batch), expected(0, true));
    }
}

#[test]
fn cut_before_zstd_reads_headers() {
    let plain = v2_batch(Compression::None, 0);
    let zstd = v2_batch(Compression::Zstd, 4);
    assert_eq!(cut_before_zstd(&plain).unwrap(), plain);
    assert_eq!(cut_before_zstd(&zstd), Err(ConvertError::ZstdTooOld));
    let mut both = BytesMut::new();
    both.extend_from_slice(&plain);
    both.extend_from_slice(&zstd);
    assert_eq!(cut_before_zstd(&both.freeze()).unwrap(), plain);
}
