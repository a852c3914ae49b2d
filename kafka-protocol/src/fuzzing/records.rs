//! Record batches, legacy message sets and their conversions under fuzz input.

use super::*;

/// Reads `data` as a record set (what Produce and Fetch carry): every entry, every record,
/// bounded decompression, in-place batch edits; rebuilds decoded batches and legacy messages
/// and checks they read back the same.
pub fn record_batch(data: &[u8]) {
    let input = Bytes::copy_from_slice(data);

    // The iterators account for every byte: entries yielded plus the remainder.
    let mut used = 0;
    let mut set = RecordSet::new(input.clone());
    for entry in set.by_ref() {
        let Ok(entry) = entry else { break };
        assert!(entry.magic() >= 0 && entry.magic() <= 2, "entry magic");
        used += entry.size();
        match entry {
            RecordSetEntry::Batch(batch) => check_batch(&batch),
            RecordSetEntry::Legacy(_) => {}
        }
    }
    assert_eq!(
        used + set.remainder().len(),
        input.len(),
        "RecordSet lost bytes"
    );

    let mut used = 0;
    let mut batches = RecordBatches::new(input.clone());
    for b in batches.by_ref() {
        let Ok(b) = b else { break };
        used += b.size();
    }
    assert_eq!(batches.position(), used, "RecordBatches position");
    assert_eq!(
        used + batches.remainder().len(),
        input.len(),
        "RecordBatches lost bytes"
    );

    let mut used = 0;
    let mut entries = LegacyEntries::new(input.clone());
    for m in entries.by_ref() {
        let Ok(m) = m else { break };
        used += m.size();
        check_legacy(&m);
    }
    assert_eq!(
        used + entries.remainder().len(),
        input.len(),
        "LegacyEntries lost bytes"
    );
    for m in LegacyRecords::new(input.clone(), MAX_DECOMPRESSED) {
        if m.is_err() {
            break;
        }
    }

    check_conversions(&input);

    // The decompressors on the raw input, where no header has to be right first.
    if data.len() <= 64 * 1024 {
        for codec in [
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            // The zstd decoder allocates a large context before it looks at the input: only
            // worth it for input that starts like a zstd frame (plain or skippable).
            let zstd_like = data.starts_with(&[0x28, 0xb5, 0x2f, 0xfd])
                || (data.len() >= 4 && data[0] & 0xf0 == 0x50 && data[1..4] == [0x2a, 0x4d, 0x18]);
            if codec == Compression::Zstd && !zstd_like {
                continue;
            }
            for max in DIRECT_LIMITS {
                bounded_decompress(codec, data, max);
            }
        }
    }
}

/// Up- and down-conversion (old clients' formats) on any input: never a panic; what they
/// write reads back, within the limits, and converts back with the same message count.
pub(super) fn check_conversions(input: &Bytes) {
    if let Ok(up) = up_convert(input, MAX_DECOMPRESSED) {
        let batch =
            RecordBatch::from_bytes(up.batch.clone()).expect("an up-converted batch parses");
        batch
            .validate(4 * MAX_DECOMPRESSED)
            .expect("an up-converted batch validates");
        assert_eq!(
            batch.records_count() as usize,
            up.records,
            "up-converted count"
        );
    }
    for magic in [0, 1] {
        for max_bytes in [1, 4096] {
            let limits = DownConvertLimits {
                max_bytes,
                max_entry: 64 * 1024,
                max_decompressed: MAX_DECOMPRESSED,
            };
            let Ok(down) = down_convert(input, magic, 0, limits) else {
                continue;
            };
            let mut count = 0;
            for m in LegacyRecords::new(down.records.clone(), 4 * MAX_DECOMPRESSED) {
                let m = m.expect("down-converted messages read back");
                assert!(m.magic <= magic, "down-converted magic");
                count += 1;
            }
            if down.records.len() > max_bytes.max(limits.max_entry) {
                // Past both limits only with a single oversized message or wrapper.
                assert!(
                    LegacyEntries::new(down.records.clone()).count() == 1,
                    "down-conversion past its limit after the first entry"
                );
            }
            // Messages copied verbatim (already old) count once per wrapper.
            assert!(count >= down.messages, "down-converted count");
        }
    }
}

/// Decompresses and checks the output respects `max`.
pub(super) fn bounded_decompress(codec: Compression, data: &[u8], max: usize) -> Option<Bytes> {
    let out = decompress(codec, data, max).ok()?;
    assert!(
        out.len() <= max,
        "{codec} decompressed {} bytes, over the limit of {max}",
        out.len()
    );
    Some(out)
}

/// A decoded record, owned, for comparing a batch with its rebuild.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Rec {
    timestamp: i64,
    key: Option<Bytes>,
    value: Option<Bytes>,
    headers: Vec<(KStr, Option<Bytes>)>,
}

/// Every record of `batch`, if all decode.
pub(super) fn batch_records(batch: &RecordBatch) -> Option<Vec<Rec>> {
    let mut out = Vec::new();
    let records = batch.records(MAX_DECOMPRESSED).ok()?;
    for r in records {
        let r = r.ok()?;
        out.push(Rec {
            timestamp: r.timestamp(batch),
            key: r.key,
            value: r.value,
            headers: r.headers.into_iter().map(|h| (h.key, h.value)).collect(),
        });
    }
    Some(out)
}

/// Encodes `records` as a new batch with `batch`'s header fields and `codec`.
pub(super) fn rebuild(batch: &RecordBatch, records: &[Rec], codec: Compression) -> Bytes {
    let mut b = RecordBatchBuilder::new()
        .base_offset(batch.base_offset())
        .partition_leader_epoch(batch.partition_leader_epoch())
        .producer(
            batch.producer_id(),
            batch.producer_epoch(),
            batch.base_sequence(),
        )
        .transactional(batch.is_transactional())
        .control(batch.is_control())
        .compression(codec);
    if batch.timestamp_type() == TimestampType::LogAppendTime {
        b = b.log_append_time(batch.max_timestamp());
    }
    for r in records {
        let headers: Vec<(&str, Option<&[u8]>)> = r
            .headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_deref()))
            .collect();
        b.append(r.timestamp, r.key.as_deref(), r.value.as_deref(), &headers)
            .expect("appending a decoded record");
    }
    b.build()
        .unwrap_or_else(|e| panic!("rebuilding a decoded batch with {codec}: {e}"))
}

pub(super) fn check_batch(batch: &RecordBatch) {
    assert_eq!(batch.size(), batch.as_bytes().len());
    assert_eq!(
        batch.size() as i64,
        i64::from(batch.batch_length()) + 12,
        "batch size and batchLength"
    );
    let again =
        RecordBatch::from_bytes(batch.as_bytes().clone()).expect("a parsed batch parses alone");
    assert_eq!(&again, batch);
    let _ = (
        batch.last_offset(),
        batch.next_offset(),
        batch.last_sequence(),
        batch.delete_horizon_ms(),
        batch.crc(),
    );
    let crc_ok = batch.verify_crc().is_ok();
    let _ = batch.validate(MAX_DECOMPRESSED);
    let _ = parse_end_txn_marker(batch);

    // Decompression of the payload is bounded, at any limit.
    if let Ok(codec) = batch.compression() {
        let payload = &batch.as_bytes()[61.min(batch.size())..];
        if codec != Compression::None {
            for max in DIRECT_LIMITS {
                bounded_decompress(codec, payload, max);
            }
        }
    }

    // In-place edits keep the batch readable and its CRC right.
    let mut buf = batch.as_bytes().to_vec();
    {
        let mut m = RecordBatchMut::new(&mut buf).expect("a parsed batch is editable");
        assert_eq!(m.size(), batch.size());
        m.set_base_offset(batch.base_offset().wrapping_add(1000));
        m.set_partition_leader_epoch(7);
        if crc_ok {
            m.set_producer_state(11, 3, 5);
            m.set_log_append_time(1_700_000_000_000);
        }
    }
    let edited = RecordBatch::from_bytes(Bytes::from(buf)).expect("an edited batch parses");
    assert_eq!(edited.base_offset(), batch.base_offset().wrapping_add(1000));
    assert_eq!(edited.partition_leader_epoch(), 7);
    if crc_ok {
        edited.verify_crc().expect("CRC after in-place edits");
        assert_eq!(edited.producer_id(), 11);
        assert_eq!(edited.timestamp_type(), TimestampType::LogAppendTime);
        assert_eq!(edited.max_timestamp(), 1_700_000_000_000);
        assert_eq!(edited.records_count(), batch.records_count());
    }

    // Rebuilding the records gives a valid batch with the same records, and rebuilding that
    // again gives the same bytes.
    let Some(records) = batch_records(batch) else {
        return;
    };
    let first = rebuild(batch, &records, Compression::None);
    let rebuilt = RecordBatch::from_bytes(first.clone()).expect("a rebuilt batch parses");
    rebuilt
        .validate(MAX_DECOMPRESSED)
        .unwrap_or_else(|e| panic!("a rebuilt batch does not validate: {e}"));
    let back = batch_records(&rebuilt).expect("a rebuilt batch's records decode");
    assert_same(&back, &records, "records after rebuilding the batch");
    assert_eq!(
        rebuild(&rebuilt, &back, Compression::None),
        first,
        "rebuilding a rebuilt batch changed its bytes"
    );
    // And through the batch's own codec.
    let codec = batch.compression().unwrap_or_default();
    if codec != Compression::None {
        let packed = rebuild(batch, &records, codec);
        let packed = RecordBatch::from_bytes(packed).expect("a compressed rebuild parses");
        packed
            .validate(MAX_DECOMPRESSED.max(first.len()))
            .unwrap_or_else(|e| panic!("a {codec} rebuild does not validate: {e}"));
        let back = batch_records(&packed).expect("a compressed rebuild's records decode");
        assert_same(&back, &records, "records after a compressed rebuild");
    }
}

pub(super) fn check_legacy(m: &crate::record::LegacyMessage) {
    let _ = (m.compression(), m.timestamp_type(), m.computed_crc());
    let crc_ok = m.verify_crc().is_ok();
    if m.is_compressed() {
        if let Ok(inner) = m.inner_messages(MAX_DECOMPRESSED) {
            for i in &inner {
                assert!(!i.is_compressed(), "an inner message is compressed");
                assert_eq!(i.magic, m.magic, "inner magic");
            }
        }
        return;
    }
    if !crc_ok {
        return;
    }
    // An uncompressed message rebuilds to one that reads back the same.
    let mut b = LegacyMessageSetBuilder::new(m.magic, Compression::None, m.offset)
        .expect("a legacy builder for a decoded magic");
    b.append(
        m.timestamp.unwrap_or(-1),
        m.key.as_deref(),
        m.value.as_deref(),
    )
    .expect("appending a decoded message");
    let bytes = b.build().expect("building a legacy message set");
    let mut it = LegacyEntries::new(bytes);
    let back = it
        .next()
        .expect("one message")
        .expect("a rebuilt message parses");
    assert!(it.next().is_none(), "one message only");
    back.verify_crc().expect("a rebuilt message's CRC");
    assert_eq!(back.offset, m.offset);
    assert_eq!(back.magic, m.magic);
    assert_eq!(back.key, m.key);
    assert_eq!(back.value, m.value);
    assert_eq!(back.timestamp, m.timestamp);
}
