//! Rewriting a v2 batch with some of its records left out, as log compaction does.
//!
//! The rewritten batch keeps what identifies the original: base offset, last offset delta (so
//! the batch still ends where it ended, which producer state and offset lookups rely on),
//! partition leader epoch, producer id, epoch and base sequence, attributes and codec, and base
//! timestamp. Each kept record is copied byte for byte (its offset and timestamp deltas are
//! relative to the unchanged base), so only the record count, the length, the max timestamp
//! (under create time) and the CRC change. A batch that keeps no record becomes Kafka's empty
//! batch: the header alone, uncompressed, both timestamps the original max timestamp.

use std::ops::Range;

use bytes::{BufMut, Bytes, BytesMut};

use super::batch::{
    ATTRIBUTES, BASE_TIMESTAMP, BATCH_LENGTH, CRC, LOG_OVERHEAD, MAX_TIMESTAMP,
    RECORD_BATCH_OVERHEAD, RECORDS_COUNT, RecordBatch, TimestampType,
};
use super::compression::{self, Compression};
use super::records::Record;
use crate::error::{DecodeError, EncodeError};

/// Which records of a batch to keep: see [`select_records`].
#[derive(Debug, Clone)]
pub struct Selection {
    /// The batch's record bytes (decompressed).
    data: Bytes,
    /// Byte ranges of the kept records in `data`, in order.
    kept: Vec<Range<usize>>,
    /// Largest timestamp of the kept records.
    max_timestamp: i64,
    total: usize,
}

/// Decodes every record of `batch` and asks `keep(record, offset)` about each.
pub fn select_records(
    batch: &RecordBatch,
    max_decompressed: usize,
    mut keep: impl FnMut(&Record, i64) -> bool,
) -> Result<Selection, DecodeError> {
    let mut records = batch.records(max_decompressed)?;
    let data = records.data().clone();
    let (mut kept, mut total, mut max_timestamp) = (Vec::new(), 0, i64::MIN);
    loop {
        let start = records.position();
        let Some(record) = records.next() else { break };
        let record = record?;
        total += 1;
        if keep(&record, record.offset(batch)) {
            kept.push(start..records.position());
            max_timestamp = max_timestamp.max(record.timestamp(batch));
        }
    }
    Ok(Selection {
        data,
        kept,
        max_timestamp,
        total,
    })
}

impl Selection {
    /// Number of records kept.
    pub fn kept(&self) -> usize {
        self.kept.len()
    }

    /// Number of records the batch holds.
    pub fn total(&self) -> usize {
        self.total
    }

    /// Whether every record is kept (the batch can stay as it is).
    pub fn keeps_all(&self) -> bool {
        self.kept.len() == self.total
    }

    /// The batch holding only the kept records (the empty batch if none is kept).
    pub fn rebuild(&self, batch: &RecordBatch) -> Result<BytesMut, EncodeError> {
        let original = batch.as_bytes();
        let header = original
            .get(..RECORD_BATCH_OVERHEAD)
            .ok_or(EncodeError::TooLarge {
                field: "RecordBatch",
                len: original.len(),
            })?;
        let mut records = BytesMut::new();
        for r in &self.kept {
            records.extend_from_slice(self.data.get(r.clone()).unwrap_or_default());
        }
        let codec = batch.compression().unwrap_or(Compression::None);
        let body = match codec {
            _ if self.kept.is_empty() => Bytes::new(),
            Compression::None => records.freeze(),
            codec => compression::compress(codec, &records)?,
        };
        let size = RECORD_BATCH_OVERHEAD + body.len();
        let length = i32::try_from(size - LOG_OVERHEAD).map_err(|_| EncodeError::TooLarge {
            field: "RecordBatch.batchLength",
            len: size,
        })?;
        let mut out = BytesMut::with_capacity(size);
        out.put_slice(header);
        out.put_slice(&body);
        let mut put = |at: usize, bytes: &[u8]| {
            if let Some(slot) = out.get_mut(at..at + bytes.len()) {
                slot.copy_from_slice(bytes);
            }
        };
        put(BATCH_LENGTH, &length.to_be_bytes());
        put(RECORDS_COUNT, &(self.kept.len() as i32).to_be_bytes());
        if self.kept.is_empty() {
            let attributes = batch.attributes() & !compression::COMPRESSION_MASK;
            put(ATTRIBUTES, &attributes.to_be_bytes());
            put(BASE_TIMESTAMP, &batch.max_timestamp().to_be_bytes());
        } else if batch.timestamp_type() == TimestampType::CreateTime {
            put(MAX_TIMESTAMP, &self.max_timestamp.to_be_bytes());
        }
        let crc = crc32c::crc32c(out.get(CRC + 4..).unwrap_or_default());
        if let Some(slot) = out.get_mut(CRC..CRC + 4) {
            slot.copy_from_slice(&crc.to_be_bytes());
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::record::RecordBatchBuilder;

    fn batch(codec: Compression) -> RecordBatch {
        let mut b = RecordBatchBuilder::new()
            .base_offset(100)
            .producer(7, 2, 40)
            .compression(codec);
        for i in 0..6u8 {
            let bytes = [i; 3];
            let value = (i != 4).then_some(&bytes[..]);
            b.append(
                1_000 + i64::from(i),
                Some(&[b'k', i % 3]),
                value,
                &[("h", Some(b"v"))],
            )
            .unwrap();
        }
        RecordBatch::from_bytes(b.build().unwrap()).unwrap()
    }

    fn summary(b: &RecordBatch) -> Vec<(i64, i64, Option<Bytes>, usize)> {
        b.records(1 << 20)
            .unwrap()
            .map(|r| {
                let r = r.unwrap();
                (r.offset(b), r.timestamp(b), r.value, r.headers.len())
            })
            .collect()
    }

    #[test]
    fn kept_records_are_copied_with_their_offsets_and_the_batch_keeps_its_identity() {
        for codec in [
            Compression::None,
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            let b = batch(codec);
            let sel = select_records(&b, 1 << 20, |_, off| off % 2 == 1).unwrap();
            assert_eq!((sel.kept(), sel.total(), sel.keeps_all()), (3, 6, false));
            let out = RecordBatch::from_bytes(sel.rebuild(&b).unwrap().freeze()).unwrap();
            out.validate(1 << 20).unwrap();
            assert_eq!(out.base_offset(), 100);
            assert_eq!(
                out.last_offset(),
                105,
                "the batch still ends where it ended"
            );
            assert_eq!(out.records_count(), 3);
            assert_eq!(out.compression().unwrap(), codec);
            assert_eq!(
                (out.producer_id(), out.producer_epoch(), out.base_sequence()),
                (7, 2, 40)
            );
            assert_eq!(out.base_timestamp(), 1_000);
            assert_eq!(out.max_timestamp(), 1_005);
            let expected: Vec<_> = summary(&b)
                .into_iter()
                .filter(|(off, ..)| off % 2 == 1)
                .collect();
            assert_eq!(summary(&out), expected, "{codec:?}");
        }
    }

    #[test]
    fn the_max_timestamp_follows_the_kept_records() {
        let b = batch(Compression::None);
        let sel = select_records(&b, 1 << 20, |_, off| off <= 102).unwrap();
        let out = RecordBatch::from_bytes(sel.rebuild(&b).unwrap().freeze()).unwrap();
        assert_eq!(out.max_timestamp(), 1_002);
    }

    #[test]
    fn keeping_nothing_gives_the_empty_batch_and_keeping_all_is_reported() {
        let b = batch(Compression::Zstd);
        let all = select_records(&b, 1 << 20, |_, _| true).unwrap();
        assert!(all.keeps_all());
        let none = select_records(&b, 1 << 20, |_, _| false).unwrap();
        let out = RecordBatch::from_bytes(none.rebuild(&b).unwrap().freeze()).unwrap();
        out.validate(1 << 20).unwrap();
        assert_eq!(out.records_count(), 0);
        assert_eq!(out.size(), RECORD_BATCH_OVERHEAD);
        assert_eq!(out.compression().unwrap(), Compression::None);
        assert_eq!((out.base_offset(), out.last_offset()), (100, 105));
        assert_eq!((out.base_timestamp(), out.max_timestamp()), (1_005, 1_005));
        assert_eq!(out.producer_id(), 7);
        assert_eq!(out.records(1 << 20).unwrap().count(), 0);
    }

    #[test]
    fn a_damaged_record_is_an_error() {
        let b = batch(Compression::None);
        let mut bytes = BytesMut::from(&b.as_bytes()[..]);
        let last = bytes.len() - 1;
        bytes.truncate(last);
        let len = (bytes.len() - LOG_OVERHEAD) as i32;
        bytes[BATCH_LENGTH..BATCH_LENGTH + 4].copy_from_slice(&len.to_be_bytes());
        let cut = RecordBatch::from_bytes(bytes.freeze()).unwrap();
        assert!(select_records(&cut, 1 << 20, |_, _| true).is_err());
    }
}
