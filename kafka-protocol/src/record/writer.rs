//! Writing a v2 record batch in place, the way a producer fills its batch buffers: the header
//! space is reserved up front, records are encoded straight into the buffer as they are
//! appended, and [`BatchWriter::finish`] fills in the header (and compresses) at the end.
//!
//! Unlike [`super::RecordBatchBuilder`], an uncompressed batch is never copied: the buffer that
//! took the records is the batch that goes on the wire.

use bytes::{BufMut, BytesMut};

use super::batch::{
    CRC, LOG_OVERHEAD, MAGIC_V2, NO_PARTITION_LEADER_EPOCH, NO_TIMESTAMP, RECORD_BATCH_OVERHEAD,
    TRANSACTIONAL_BIT,
};
use super::builder::HeaderRef;
use super::compression::{self, Compression};
use super::records::{encode_record, encoded_record_size};
use crate::error::EncodeError;

/// Producer fields of a batch header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerFields {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub transactional: bool,
}

impl Default for ProducerFields {
    /// No producer id: a non-idempotent producer.
    fn default() -> Self {
        Self {
            producer_id: -1,
            producer_epoch: -1,
            base_sequence: -1,
            transactional: false,
        }
    }
}

/// A v2 batch being filled in place.
#[derive(Debug)]
pub struct BatchWriter {
    buf: BytesMut,
    compression: Compression,
    level: Option<i32>,
    count: i32,
    base_timestamp: i64,
    max_timestamp: i64,
}

impl BatchWriter {
    /// Starts a batch in `buf` (cleared first; its capacity is kept).
    pub fn new(mut buf: BytesMut, compression: Compression) -> Self {
        buf.clear();
        buf.put_bytes(0, RECORD_BATCH_OVERHEAD);
        Self {
            buf,
            compression,
            level: None,
            count: 0,
            base_timestamp: NO_TIMESTAMP,
            max_timestamp: NO_TIMESTAMP,
        }
    }

    /// Compresses at this level (see [`compression::compress_level`]).
    #[must_use]
    pub fn level(mut self, level: Option<i32>) -> Self {
        self.level = level;
        self
    }

    /// Number of records appended.
    pub fn len(&self) -> usize {
        self.count as usize
    }

    /// Whether no record was appended.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Bytes written so far, header included (the uncompressed size of the batch).
    pub fn size(&self) -> usize {
        self.buf.len()
    }

    /// Capacity of the buffer.
    pub fn capacity(&self) -> usize {
        self.buf.capacity()
    }

    /// The base timestamp (the first record's), or -1 when empty.
    pub fn base_timestamp(&self) -> i64 {
        self.base_timestamp
    }

    /// The size the next record would take in this batch, length prefix included.
    pub fn record_size(
        &self,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[HeaderRef<'_>],
    ) -> usize {
        let delta = if self.count == 0 {
            0
        } else {
            timestamp.wrapping_sub(self.base_timestamp)
        };
        encoded_record_size(self.count, delta, key, value, headers)
    }

    /// The largest size a batch holding one such record can take: an upper bound usable
    /// before a batch exists.
    pub fn estimate_size_upper_bound(
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[HeaderRef<'_>],
    ) -> usize {
        // Worst-case varints for the timestamp and offset deltas.
        RECORD_BATCH_OVERHEAD + encoded_record_size(0, 0, key, value, headers) + 9 + 4
    }

    /// Appends a record; returns its offset delta.
    pub fn append(
        &mut self,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        headers: &[HeaderRef<'_>],
    ) -> Result<i32, EncodeError> {
        let offset_delta = self.count;
        if offset_delta == i32::MAX {
            return Err(EncodeError::TooLarge {
                field: "RecordBatch.recordsCount",
                len: self.len(),
            });
        }
        if self.count == 0 {
            self.base_timestamp = timestamp;
        }
        encode_record(
            &mut self.buf,
            offset_delta,
            timestamp.wrapping_sub(self.base_timestamp),
            key,
            value,
            headers,
        )?;
        self.max_timestamp = self.max_timestamp.max(timestamp);
        self.count += 1;
        Ok(offset_delta)
    }

    /// Writes the header (compressing the records first if asked) and returns the finished
    /// batch. With no compression this is the buffer records were appended to; with
    /// compression it is a new buffer and the second value is the old one, for reuse.
    pub fn finish(
        self,
        producer: ProducerFields,
    ) -> Result<(BytesMut, Option<BytesMut>), EncodeError> {
        let (mut out, spare) = match self.compression {
            Compression::None => (self.buf, None),
            codec => {
                let records = self.buf.get(RECORD_BATCH_OVERHEAD..).unwrap_or_default();
                let body = compression::compress_level(codec, records, self.level)?;
                let mut out = BytesMut::with_capacity(RECORD_BATCH_OVERHEAD + body.len());
                out.put_bytes(0, RECORD_BATCH_OVERHEAD);
                out.put_slice(&body);
                (out, Some(self.buf))
            }
        };
        let size = out.len();
        let batch_length =
            i32::try_from(size - LOG_OVERHEAD).map_err(|_| EncodeError::TooLarge {
                field: "RecordBatch.batchLength",
                len: size,
            })?;
        let mut attributes = self.compression.attribute_bits();
        if producer.transactional {
            attributes |= TRANSACTIONAL_BIT;
        }
        let mut header = [0u8; RECORD_BATCH_OVERHEAD];
        {
            let mut h = &mut header[..];
            h.put_i64(0);
            h.put_i32(batch_length);
            h.put_i32(NO_PARTITION_LEADER_EPOCH);
            h.put_i8(MAGIC_V2);
            h.put_u32(0);
            h.put_i16(attributes);
            h.put_i32((self.count - 1).max(0));
            h.put_i64(self.base_timestamp);
            h.put_i64(self.max_timestamp);
            h.put_i64(producer.producer_id);
            h.put_i16(producer.producer_epoch);
            h.put_i32(producer.base_sequence);
            h.put_i32(self.count);
        }
        if let Some(dst) = out.get_mut(..RECORD_BATCH_OVERHEAD) {
            dst.copy_from_slice(&header);
        }
        let crc = crc32c::crc32c(out.get(CRC + 4..).unwrap_or_default());
        if let Some(slot) = out.get_mut(CRC..CRC + 4) {
            slot.copy_from_slice(&crc.to_be_bytes());
        }
        Ok((out, spare))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{RecordBatch, RecordBatchBuilder};

    #[test]
    fn writer_matches_builder_for_every_codec() {
        for codec in [
            Compression::None,
            Compression::Gzip,
            Compression::Snappy,
            Compression::Lz4,
            Compression::Zstd,
        ] {
            let mut w = BatchWriter::new(BytesMut::with_capacity(1024), codec);
            let mut b = RecordBatchBuilder::new()
                .compression(codec)
                .producer(7, 2, 40);
            for i in 0..20i64 {
                let key = format!("k{i}");
                let value = vec![i as u8; i as usize * 3];
                let headers: Vec<HeaderRef<'_>> = if i % 3 == 0 {
                    vec![("h", Some(b"v".as_slice())), ("n", None)]
                } else {
                    vec![]
                };
                let ts = 1_700_000_000_000 + i * 7 - (i % 4) * 11;
                let predicted = w.record_size(ts, Some(key.as_bytes()), Some(&value), &headers);
                let before = w.size();
                assert_eq!(
                    w.append(ts, Some(key.as_bytes()), Some(&value), &headers)
                        .unwrap(),
                    i as i32
                );
                assert_eq!(w.size() - before, predicted);
                b.append(ts, Some(key.as_bytes()), Some(&value), &headers)
                    .unwrap();
            }
            let fields = ProducerFields {
                producer_id: 7,
                producer_epoch: 2,
                base_sequence: 40,
                transactional: false,
            };
            let (ours, spare) = w.finish(fields).unwrap();
            assert_eq!(spare.is_some(), codec != Compression::None);
            let theirs = b.build().unwrap();
            if codec == Compression::None || codec == Compression::Snappy {
                assert_eq!(&ours[..], &theirs[..], "{codec}");
            }
            let batch = RecordBatch::from_bytes(ours.freeze()).unwrap();
            batch.verify_crc().unwrap();
            assert_eq!(batch.records_count(), 20);
            assert_eq!(batch.base_sequence(), 40);
            assert_eq!(batch.compression().unwrap(), codec);
            let recs: Vec<_> = batch
                .records(1 << 20)
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            assert_eq!(recs.len(), 20);
            assert_eq!(recs[5].value.as_deref(), Some(&[5u8; 15][..]));
        }
    }

    #[test]
    fn empty_and_null_fields() {
        let mut w = BatchWriter::new(BytesMut::new(), Compression::None);
        assert!(w.is_empty());
        w.append(5, None, None, &[]).unwrap();
        let (out, _) = w.finish(ProducerFields::default()).unwrap();
        let batch = RecordBatch::from_bytes(out.freeze()).unwrap();
        batch.verify_crc().unwrap();
        assert_eq!(batch.producer_id(), -1);
        assert_eq!(batch.base_timestamp(), 5);
        let r = batch.records(1024).unwrap().next().unwrap().unwrap();
        assert!(r.key.is_none() && r.value.is_none());
    }

    #[test]
    fn levels_change_the_output_and_still_decode() {
        let value = b"abcdefghij".repeat(300);
        let mut sizes = Vec::new();
        for (codec, level) in [
            (Compression::Zstd, Some(1)),
            (Compression::Zstd, Some(19)),
            (Compression::Gzip, Some(1)),
            (Compression::Gzip, Some(9)),
        ] {
            let mut w = BatchWriter::new(BytesMut::new(), codec).level(level);
            for i in 0..50i64 {
                let v: Vec<u8> = value.iter().map(|b| b.wrapping_add(i as u8)).collect();
                w.append(i, None, Some(&v), &[]).unwrap();
            }
            let (out, _) = w.finish(ProducerFields::default()).unwrap();
            let batch = RecordBatch::from_bytes(out.freeze()).unwrap();
            assert_eq!(batch.records(1 << 22).unwrap().count(), 50);
            sizes.push(batch.size());
        }
        assert_ne!(
            sizes[0], sizes[1],
            "zstd levels 1 and 19 gave the same output size"
        );
        assert_ne!(
            sizes[2], sizes[3],
            "gzip levels 1 and 9 gave the same output size"
        );
    }
}
