//! The v2 record batch header, byte by byte: where each field sits and how long it is, and
//! [`HeaderView`], a borrowing view that reads the fields from any byte slice holding a whole
//! header (a received batch, a buffer read from a segment file).
//!
//! Layout (big-endian, Kafka's `DefaultRecordBatch`):
//!
//! ```text
//! offset  len  field
//!      0    8  baseOffset
//!      8    4  batchLength          (bytes after this field)
//!     12    4  partitionLeaderEpoch
//!     16    1  magic                (2)
//!     17    4  crc                  (CRC-32C of attributes .. end of batch)
//!     21    2  attributes
//!     23    4  lastOffsetDelta
//!     27    8  baseTimestamp
//!     35    8  maxTimestamp
//!     43    8  producerId
//!     51    2  producerEpoch
//!     53    4  baseSequence
//!     57    4  recordsCount
//!     61       records
//! ```
//!
//! This module is the one place that states these numbers: [`super::batch`] and the broker's
//! log read them from here. It imports nothing but the crate's error type.

use std::ops::Range;

use crate::error::DecodeError;

/// One fixed-size field of the header: its byte offset from the start of the batch and its
/// length in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    pub offset: usize,
    pub len: usize,
}

impl Field {
    const fn new(offset: usize, len: usize) -> Self {
        Self { offset, len }
    }

    /// The offset just past the field.
    pub const fn end(self) -> usize {
        self.offset + self.len
    }

    /// The field's bytes within a batch.
    pub const fn range(self) -> Range<usize> {
        self.offset..self.end()
    }
}

pub const BASE_OFFSET: Field = Field::new(0, 8);
pub const BATCH_LENGTH: Field = Field::new(8, 4);
pub const PARTITION_LEADER_EPOCH: Field = Field::new(12, 4);
pub const MAGIC: Field = Field::new(16, 1);
pub const CRC: Field = Field::new(17, 4);
pub const ATTRIBUTES: Field = Field::new(21, 2);
pub const LAST_OFFSET_DELTA: Field = Field::new(23, 4);
pub const BASE_TIMESTAMP: Field = Field::new(27, 8);
pub const MAX_TIMESTAMP: Field = Field::new(35, 8);
pub const PRODUCER_ID: Field = Field::new(43, 8);
pub const PRODUCER_EPOCH: Field = Field::new(51, 2);
pub const BASE_SEQUENCE: Field = Field::new(53, 4);
pub const RECORDS_COUNT: Field = Field::new(57, 4);

/// The fields in the order they follow each other.
pub const FIELDS: [Field; 13] = [
    BASE_OFFSET,
    BATCH_LENGTH,
    PARTITION_LEADER_EPOCH,
    MAGIC,
    CRC,
    ATTRIBUTES,
    LAST_OFFSET_DELTA,
    BASE_TIMESTAMP,
    MAX_TIMESTAMP,
    PRODUCER_ID,
    PRODUCER_EPOCH,
    BASE_SEQUENCE,
    RECORDS_COUNT,
];

/// Bytes of the header, up to the first record (Kafka's `RECORD_BATCH_OVERHEAD`).
pub const HEADER_LEN: usize = RECORDS_COUNT.end();
/// Bytes before what `batchLength` counts: base offset and batch length (Kafka's
/// `LOG_OVERHEAD`). A batch's total size is `batchLength + LOG_OVERHEAD`.
pub const LOG_OVERHEAD: usize = BATCH_LENGTH.end();
/// The smallest valid `batchLength`: a header without records.
pub const MIN_BATCH_LENGTH: i32 = (HEADER_LEN - LOG_OVERHEAD) as i32;
/// Where the bytes the CRC covers start (they run to the end of the batch).
pub const CRC_COVERS_FROM: usize = ATTRIBUTES.offset;

// The fields tile the header without gaps or overlaps.
const _: () = {
    let mut i = 1;
    while i < FIELDS.len() {
        assert!(FIELDS[i - 1].end() == FIELDS[i].offset);
        i += 1;
    }
    assert!(FIELDS[0].offset == 0);
    assert!(FIELDS[FIELDS.len() - 1].end() == HEADER_LEN);
    assert!(HEADER_LEN == 61 && LOG_OVERHEAD == 12 && MAGIC.offset == 16);
};

/// A read-only view of the header at the start of a byte slice. Made only from at least
/// [`HEADER_LEN`] bytes, so every getter reads inside the slice and none can fail or panic.
/// It checks nothing else: the magic, the length and the CRC are the caller's to check.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct HeaderView<'a> {
    bytes: &'a [u8; HEADER_LEN],
}

impl<'a> HeaderView<'a> {
    /// The header at the start of `bytes` (which may hold more after it: records, other
    /// batches). [`DecodeError::Truncated`] when `bytes` is shorter than a header.
    pub fn new(bytes: &'a [u8]) -> Result<Self, DecodeError> {
        bytes
            .get(..HEADER_LEN)
            .and_then(|b| <&[u8; HEADER_LEN]>::try_from(b).ok())
            .map(|bytes| Self { bytes })
            .ok_or(DecodeError::Truncated {
                field: "RecordBatch header",
                need: HEADER_LEN,
                have: bytes.len(),
            })
    }

    /// The header's bytes.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The `N` bytes of `field` (whose length is `N` by construction of the getters below).
    fn get<const N: usize>(&self, field: Field) -> [u8; N] {
        self.bytes
            .get(field.offset..field.offset + N)
            .and_then(|s| <[u8; N]>::try_from(s).ok())
            .unwrap_or([0; N])
    }

    pub fn base_offset(&self) -> i64 {
        i64::from_be_bytes(self.get(BASE_OFFSET))
    }
    /// The bytes after the length field; the batch takes `batch_length + LOG_OVERHEAD`.
    pub fn batch_length(&self) -> i32 {
        i32::from_be_bytes(self.get(BATCH_LENGTH))
    }
    pub fn partition_leader_epoch(&self) -> i32 {
        i32::from_be_bytes(self.get(PARTITION_LEADER_EPOCH))
    }
    pub fn magic(&self) -> i8 {
        i8::from_be_bytes(self.get(MAGIC))
    }
    /// The CRC stored in the header.
    pub fn crc(&self) -> u32 {
        u32::from_be_bytes(self.get(CRC))
    }
    pub fn attributes(&self) -> i16 {
        i16::from_be_bytes(self.get(ATTRIBUTES))
    }
    pub fn last_offset_delta(&self) -> i32 {
        i32::from_be_bytes(self.get(LAST_OFFSET_DELTA))
    }
    pub fn base_timestamp(&self) -> i64 {
        i64::from_be_bytes(self.get(BASE_TIMESTAMP))
    }
    pub fn max_timestamp(&self) -> i64 {
        i64::from_be_bytes(self.get(MAX_TIMESTAMP))
    }
    pub fn producer_id(&self) -> i64 {
        i64::from_be_bytes(self.get(PRODUCER_ID))
    }
    pub fn producer_epoch(&self) -> i16 {
        i16::from_be_bytes(self.get(PRODUCER_EPOCH))
    }
    pub fn base_sequence(&self) -> i32 {
        i32::from_be_bytes(self.get(BASE_SEQUENCE))
    }
    pub fn records_count(&self) -> i32 {
        i32::from_be_bytes(self.get(RECORDS_COUNT))
    }

    /// The whole batch's size in bytes from its length field, `None` when the length is
    /// smaller than a header without records.
    pub fn batch_size(&self) -> Option<usize> {
        let len = self.batch_length();
        (len >= MIN_BATCH_LENGTH)
            .then(|| usize::try_from(len).ok())
            .flatten()
            .map(|len| len + LOG_OVERHEAD)
    }
}

impl std::fmt::Debug for HeaderView<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeaderView")
            .field("base_offset", &self.base_offset())
            .field("batch_length", &self.batch_length())
            .field("partition_leader_epoch", &self.partition_leader_epoch())
            .field("magic", &self.magic())
            .field("crc", &format_args!("{:#010x}", self.crc()))
            .field("attributes", &format_args!("{:#06x}", self.attributes()))
            .field("last_offset_delta", &self.last_offset_delta())
            .field("max_timestamp", &self.max_timestamp())
            .field("producer_id", &self.producer_id())
            .field("records_count", &self.records_count())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::record::{Compression, RecordBatch, RecordBatchBuilder, RecordBatchMut};

    fn sample() -> bytes::Bytes {
        let mut b = RecordBatchBuilder::new()
            .compression(Compression::Lz4)
            .producer(77, 3, 41);
        b.append(1_000, Some(b"k"), Some(b"v1"), &[]).unwrap();
        b.append(1_007, Some(b"k"), Some(b"v2"), &[]).unwrap();
        let mut buf = b.build_mut().unwrap();
        let mut m = RecordBatchMut::new(&mut buf).unwrap();
        m.set_base_offset(1234);
        m.set_partition_leader_epoch(9);
        buf.freeze()
    }

    #[test]
    fn the_view_reads_what_the_batch_reads() {
        let bytes = sample();
        let batch = RecordBatch::from_bytes(bytes.clone()).unwrap();
        let h = HeaderView::new(&bytes).unwrap();
        assert_eq!(h.base_offset(), 1234);
        assert_eq!(h.base_offset(), batch.base_offset());
        assert_eq!(h.batch_length(), batch.batch_length());
        assert_eq!(h.partition_leader_epoch(), 9);
        assert_eq!(h.magic(), 2);
        assert_eq!(h.crc(), batch.crc());
        assert_eq!(h.crc(), crc32c::crc32c(&bytes[CRC_COVERS_FROM..]));
        assert_eq!(h.attributes(), batch.attributes());
        assert_eq!(h.last_offset_delta(), 1);
        assert_eq!(h.base_timestamp(), 1_000);
        assert_eq!(h.max_timestamp(), 1_007);
        assert_eq!(h.producer_id(), 77);
        assert_eq!(h.producer_epoch(), 3);
        assert_eq!(h.base_sequence(), 41);
        assert_eq!(h.records_count(), 2);
        assert_eq!(h.batch_size(), Some(bytes.len()));
        assert_eq!(h.as_bytes(), &bytes[..HEADER_LEN]);
    }

    #[test]
    fn fields_are_where_kafka_puts_them() {
        let bytes = sample();
        let at = |f: Field| &bytes[f.range()];
        assert_eq!(at(BASE_OFFSET), 1234i64.to_be_bytes());
        assert_eq!(at(PARTITION_LEADER_EPOCH), 9i32.to_be_bytes());
        assert_eq!(at(MAGIC), [2]);
        assert_eq!(at(PRODUCER_ID), 77i64.to_be_bytes());
        assert_eq!(at(RECORDS_COUNT), 2i32.to_be_bytes());
        let len = i32::try_from(bytes.len() - LOG_OVERHEAD).unwrap();
        assert_eq!(at(BATCH_LENGTH), len.to_be_bytes());
    }

    #[test]
    fn short_slices_are_refused_and_nothing_panics() {
        let bytes = sample();
        for n in 0..HEADER_LEN {
            let err = HeaderView::new(&bytes[..n]).unwrap_err();
            assert!(
                matches!(err, DecodeError::Truncated { need: HEADER_LEN, have, .. } if have == n),
                "{err:?}"
            );
        }
        // A whole header of anything reads, whatever the values.
        let junk = [0xffu8; HEADER_LEN];
        let h = HeaderView::new(&junk).unwrap();
        assert_eq!(h.base_offset(), -1);
        assert_eq!(h.batch_size(), None, "negative length");
        let mut small = [0u8; HEADER_LEN];
        small[BATCH_LENGTH.range()].copy_from_slice(&(MIN_BATCH_LENGTH - 1).to_be_bytes());
        assert_eq!(HeaderView::new(&small).unwrap().batch_size(), None);
        small[BATCH_LENGTH.range()].copy_from_slice(&MIN_BATCH_LENGTH.to_be_bytes());
        assert_eq!(
            HeaderView::new(&small).unwrap().batch_size(),
            Some(HEADER_LEN)
        );
    }
}
