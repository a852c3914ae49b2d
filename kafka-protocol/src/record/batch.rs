//! Record batches, magic 2: a zero-copy view over one batch, an iterator over the batches of a
//! record set, and in-place stamping of offsets, leader epochs and log-append time.
//!
//! The header's layout (byte offsets and lengths of its fields) is stated once, in
//! [`super::layout`]; the constants here are its offsets under their historical names.

use bytes::Bytes;

use super::compression::{self, Compression};
use super::layout;
use super::records::{Record, Records};
use crate::error::DecodeError;

/// baseOffset and batchLength: the bytes before what `batchLength` counts.
pub const LOG_OVERHEAD: usize = layout::LOG_OVERHEAD;
/// Where the magic byte sits, for batches and legacy messages alike.
pub const MAGIC_OFFSET: usize = layout::MAGIC.offset;
/// Size of a batch header, up to the first record.
pub const RECORD_BATCH_OVERHEAD: usize = layout::HEADER_LEN;
/// The magic value of record batches.
pub const MAGIC_V2: i8 = 2;
/// Producer id, epoch and sequence of a batch from a non-idempotent producer.
pub const NO_PRODUCER_ID: i64 = -1;
pub const NO_PRODUCER_EPOCH: i16 = -1;
pub const NO_SEQUENCE: i32 = -1;
/// Leader epoch of a batch the broker has not stamped yet.
pub const NO_PARTITION_LEADER_EPOCH: i32 = -1;
/// Timestamp of a batch without records (and of magic 0 messages).
pub const NO_TIMESTAMP: i64 = -1;

pub(crate) const BASE_OFFSET: usize = layout::BASE_OFFSET.offset;
pub(crate) const BATCH_LENGTH: usize = layout::BATCH_LENGTH.offset;
pub(crate) const PARTITION_LEADER_EPOCH: usize = layout::PARTITION_LEADER_EPOCH.offset;
pub(crate) const CRC: usize = layout::CRC.offset;
pub(crate) const ATTRIBUTES: usize = layout::ATTRIBUTES.offset;
pub(crate) const LAST_OFFSET_DELTA: usize = layout::LAST_OFFSET_DELTA.offset;
pub(crate) const BASE_TIMESTAMP: usize = layout::BASE_TIMESTAMP.offset;
pub(crate) const MAX_TIMESTAMP: usize = layout::MAX_TIMESTAMP.offset;
pub(crate) const PRODUCER_ID: usize = layout::PRODUCER_ID.offset;
pub(crate) const PRODUCER_EPOCH: usize = layout::PRODUCER_EPOCH.offset;
pub(crate) const BASE_SEQUENCE: usize = layout::BASE_SEQUENCE.offset;
pub(crate) const RECORDS_COUNT: usize = layout::RECORDS_COUNT.offset;

/// Attribute bit 3: timestamps are log-append time.
pub const TIMESTAMP_TYPE_BIT: i16 = 0x08;
/// Attribute bit 4: the batch belongs to a transaction.
pub const TRANSACTIONAL_BIT: i16 = 0x10;
/// Attribute bit 5: the batch holds control records.
pub const CONTROL_BIT: i16 = 0x20;
/// Attribute bit 6: the base timestamp is the delete horizon (set by compaction).
pub const DELETE_HORIZON_BIT: i16 = 0x40;

/// Whose clock the timestamps are from (defined in [`super::timestamp`]).
pub use super::timestamp::TimestampType;

/// `N` big-endian bytes at `at`; zeros if out of range (callers check lengths first).
fn get<const N: usize>(buf: &[u8], at: usize) -> [u8; N] {
    buf.get(at..at + N)
        .and_then(|s| s.try_into().ok())
        .unwrap_or([0; N])
}

fn put(buf: &mut [u8], at: usize, v: &[u8]) {
    if let Some(dst) = buf.get_mut(at..at + v.len()) {
        dst.copy_from_slice(v);
    }
}

/// Reads the length field of the entry starting `buf` and returns the entry's total size,
/// `None` if `buf` does not hold the length field yet.
pub(crate) fn entry_size(
    buf: &[u8],
    field: &'static str,
    min_len: i32,
) -> Option<Result<usize, DecodeError>> {
    if buf.len() < LOG_OVERHEAD {
        return None;
    }
    let len = i32::from_be_bytes(get(buf, BATCH_LENGTH));
    if len < min_len {
        return Some(Err(DecodeError::Invalid {
            field,
            reason: "length is smaller than the smallest entry",
        }));
    }
    Some(Ok(LOG_OVERHEAD + len as usize))
}

/// Checks that `buf` starts with a whole v2 batch and returns its size.
fn check_batch(buf: &[u8]) -> Result<usize, DecodeError> {
    let size = match entry_size(buf, "RecordBatch.batchLength", layout::MIN_BATCH_LENGTH) {
        None => {
            return Err(DecodeError::Truncated {
                field: "RecordBatch.batchLength",
                need: LOG_OVERHEAD,
                have: buf.len(),
            });
        }
        Some(size) => size?,
    };
    if size > buf.len() {
        return Err(DecodeError::Truncated {
            field: "RecordBatch",
            need: size,
            have: buf.len(),
        });
    }
    let magic = get::<1>(buf, MAGIC_OFFSET)[0] as i8;
    if magic != MAGIC_V2 {
        return Err(DecodeError::Invalid {
            field: "RecordBatch.magic",
            reason: "not a v2 record batch (magic is not 2)",
        });
    }
    Ok(size)
}

/// CRC-32C of a batch's attributes..end (the batch must have been checked).
fn batch_crc(batch: &[u8]) -> u32 {
    crc32c::crc32c(batch.get(layout::CRC_COVERS_FROM..).unwrap_or_default())
}

/// A zero-copy view over exactly one v2 record batch. Header accessors read the bytes in
/// place; records are decoded only when iterated.
#[derive(Clone, PartialEq, Eq)]
pub struct RecordBatch {
    buf: Bytes,
}

impl RecordBatch {
    /// Splits the first batch off `input`: returns it and the bytes after it (slices, no
    /// copy). Checks the length field and the magic, not the CRC.
    pub fn parse(input: &Bytes) -> Result<(Self, Bytes), DecodeError> {
        let size = check_batch(input)?;
        Ok((
            Self {
                buf: input.slice(..size),
            },
            input.slice(size..),
        ))
    }

    /// A view over `buf`, which must hold exactly one batch.
    pub fn from_bytes(buf: Bytes) -> Result<Self, DecodeError> {
        let size = check_batch(&buf)?;
        if size != buf.len() {
            return Err(DecodeError::Invalid {
                field: "RecordBatch.batchLength",
                reason: "bytes remain after the batch",
            });
        }
        Ok(Self { buf })
    }

    /// The batch's bytes, exactly as on the wire.
    pub fn as_bytes(&self) -> &Bytes {
        &self.buf
    }

    /// The batch's bytes, exactly as on the wire.
    pub fn into_bytes(self) -> Bytes {
        self.buf
    }

    /// Size of the whole batch in bytes (`batchLength` + 12).
    pub fn size(&self) -> usize {
        self.buf.len()
    }

    fn i16_at(&self, at: usize) -> i16 {
        i16::from_be_bytes(get(&self.buf, at))
    }
    fn i32_at(&self, at: usize) -> i32 {
        i32::from_be_bytes(get(&self.buf, at))
    }
    fn i64_at(&self, at: usize) -> i64 {
        i64::from_be_bytes(get(&self.buf, at))
    }

    pub fn base_offset(&self) -> i64 {
        self.i64_at(BASE_OFFSET)
    }
    pub fn batch_length(&self) -> i32 {
        self.i32_at(BATCH_LENGTH)
    }
    pub fn partition_leader_epoch(&self) -> i32 {
        self.i32_at(PARTITION_LEADER_EPOCH)
    }
    pub fn magic(&self) -> i8 {
        MAGIC_V2
    }
    /// The CRC stored in the batch.
    pub fn crc(&self) -> u32 {
        u32::from_be_bytes(get(&self.buf, CRC))
    }
    pub fn attributes(&self) -> i16 {
        self.i16_at(ATTRIBUTES)
    }
    pub fn last_offset_delta(&self) -> i32 {
        self.i32_at(LAST_OFFSET_DELTA)
    }
    /// The first record's timestamp, or the delete horizon when [`Self::delete_horizon_ms`]
    /// is set.
    pub fn base_timestamp(&self) -> i64 {
        self.i64_at(BASE_TIMESTAMP)
    }
    pub fn max_timestamp(&self) -> i64 {
        self.i64_at(MAX_TIMESTAMP)
    }
    pub fn producer_id(&self) -> i64 {
        self.i64_at(PRODUCER_ID)
    }
    pub fn producer_epoch(&self) -> i16 {
        self.i16_at(PRODUCER_EPOCH)
    }
    pub fn base_sequence(&self) -> i32 {
        self.i32_at(BASE_SEQUENCE)
    }
    /// The number of records the header declares.
    pub fn records_count(&self) -> i32 {
        self.i32_at(RECORDS_COUNT)
    }

    /// Offset of the last record (`baseOffset + lastOffsetDelta`).
    pub fn last_offset(&self) -> i64 {
        self.base_offset()
            .wrapping_add(i64::from(self.last_offset_delta()))
    }

    /// Offset just after this batch.
    pub fn next_offset(&self) -> i64 {
        self.last_offset().wrapping_add(1)
    }

    /// Sequence number of the last record, wrapping past `i32::MAX` to 0 as Kafka does; -1
    /// when the batch has no sequence.
    pub fn last_sequence(&self) -> i32 {
        let base = self.base_sequence();
        if base == NO_SEQUENCE {
            return NO_SEQUENCE;
        }
        let next = i64::from(base) + i64::from(self.last_offset_delta());
        if next > i64::from(i32::MAX) {
            (next - i64::from(i32::MAX) - 1) as i32
        } else {
            next as i32
        }
    }

    /// The compression codec (attribute bits 0-2).
    pub fn compression(&self) -> Result<Compression, DecodeError> {
        Compression::from_attributes(self.attributes())
    }

    pub fn timestamp_type(&self) -> TimestampType {
        if self.attributes() & TIMESTAMP_TYPE_BIT != 0 {
            TimestampType::LogAppendTime
        } else {
            TimestampType::CreateTime
        }
    }

    pub fn is_transactional(&self) -> bool {
        self.attributes() & TRANSACTIONAL_BIT != 0
    }

    pub fn is_control(&self) -> bool {
        self.attributes() & CONTROL_BIT != 0
    }

    /// The delete horizon set by log compaction, if any (stored as the base timestamp).
    pub fn delete_horizon_ms(&self) -> Option<i64> {
        (self.attributes() & DELETE_HORIZON_BIT != 0).then(|| self.base_timestamp())
    }

    /// The CRC-32C of the batch's attributes..end, as it should be stored.
    pub fn computed_crc(&self) -> u32 {
        batch_crc(&self.buf)
    }

    /// Checks the stored CRC against the batch's bytes.
    pub fn verify_crc(&self) -> Result<(), DecodeError> {
        let (stored, computed) = (self.crc(), self.computed_crc());
        if stored != computed {
            return Err(DecodeError::Crc {
                what: "record batch",
                stored,
                computed,
            });
        }
        Ok(())
    }

    /// The encoded records: slices of the batch, or of the decompressed payload, which may be
    /// at most `max_decompressed` bytes. Decompresses once, here; records decode lazily.
    pub fn records(&self, max_decompressed: usize) -> Result<Records, DecodeError> {
        let count = u32::try_from(self.records_count()).map_err(|_| DecodeError::Invalid {
            field: "RecordBatch.recordsCount",
            reason: "negative record count",
        })?;
        let payload = self.buf.slice(RECORD_BATCH_OVERHEAD.min(self.buf.len())..);
        match self.compression()? {
            Compression::None => Ok(Records::new(payload, count)),
            _ if count == 0 => Ok(Records::empty()),
            codec => {
                let data = compression::decompress(codec, &payload, max_decompressed)?;
                Ok(Records::new(data, count))
            }
        }
    }

    /// What the batch's records take decompressed, where its compressed payload records that
    /// ([`compression::size_hint`]); the stored size for an uncompressed batch. A hint only.
    pub fn decompressed_size_hint(&self) -> Option<usize> {
        let payload = self.buf.get(RECORD_BATCH_OVERHEAD.min(self.buf.len())..)?;
        compression::size_hint(self.compression().ok()?, payload)
    }

    /// Full validation, as a broker does for produced batches: CRC, codec, every record
    /// decodes, as many records as declared and no bytes after them, offset deltas strictly
    /// increasing and none above `lastOffsetDelta`.
    pub fn validate(&self, max_decompressed: usize) -> Result<(), DecodeError> {
        self.verify_crc()?;
        self.validate_records(max_decompressed, |_, _, _| {})
    }

    /// [`validate`](Self::validate) without the CRC check (for a caller that checked it
    /// already), handing every record to `each` with its index and its encoded size (length
    /// prefix included) as it goes, so that one pass also serves the caller's own per-record
    /// checks.
    pub fn validate_records(
        &self,
        max_decompressed: usize,
        mut each: impl FnMut(usize, usize, &Record),
    ) -> Result<(), DecodeError> {
        let last = self.last_offset_delta();
        let mut prev: Option<i32> = None;
        let mut records = self.records(max_decompressed)?;
        let mut i = 0;
        loop {
            let at = records.position();
            let Some(rec) = records.next() else {
                break;
            };
            let rec = rec?;
            let size = records.position() - at;
            let delta = rec.offset_delta;
            if prev.is_some_and(|p| delta <= p) || delta < 0 || delta > last {
                return Err(DecodeError::Invalid {
                    field: "Record.offsetDelta",
                    reason: "offset deltas are not increasing within lastOffsetDelta",
                });
            }
            prev = Some(delta);
            each(i, size, &rec);
            i += 1;
        }
        Ok(())
    }
}

impl std::fmt::Debug for RecordBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecordBatch")
            .field("base_offset", &self.base_offset())
            .field("batch_length", &self.batch_length())
            .field("partition_leader_epoch", &self.partition_leader_epoch())
            .field("crc", &format_args!("{:#010x}", self.crc()))
            .field("attributes", &format_args!("{:#06x}", self.attributes()))
            .field("last_offset_delta", &self.last_offset_delta())
            .field("base_timestamp", &self.base_timestamp())
            .field("max_timestamp", &self.max_timestamp())
            .field("producer_id", &self.producer_id())
            .field("producer_epoch", &self.producer_epoch())
            .field("base_sequence", &self.base_sequence())
            .field("records_count", &self.records_count())
            .finish()
    }
}

/// Iterator over the v2 batches of a record set (the `records` field of Produce and Fetch).
///
/// A Fetch response may end with a partial batch: the iterator then stops cleanly, and
/// [`RecordBatches::remainder`] holds the incomplete bytes. A malformed batch header yields one
/// error, then the iterator stops with the remainder starting at the bad batch.
#[derive(Debug, Clone)]
pub struct RecordBatches {
    buf: Bytes,
    pos: usize,
    done: bool,
}

impl RecordBatches {
    pub fn new(record_set: Bytes) -> Self {
        Self {
            buf: record_set,
            pos: 0,
            done: false,
        }
    }

    /// Bytes not yielded as batches: after the iterator has ended, the trailing partial batch
    /// (empty if the set ended on a batch boundary) or the malformed batch and what follows.
    pub fn remainder(&self) -> Bytes {
        self.buf.slice(self.pos.min(self.buf.len())..)
    }

    /// Offset in the record set of the next batch.
    pub fn position(&self) -> usize {
        self.pos
    }
}

impl Iterator for RecordBatches {
    type Item = Result<RecordBatch, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let rest = self.remainder();
        let min = layout::MIN_BATCH_LENGTH;
        let size = match entry_size(&rest, "RecordBatch.batchLength", min) {
            None => None,
            Some(Err(e)) => Some(Err(e)),
            Some(Ok(size)) if size > rest.len() => None,
            Some(Ok(_)) => Some(RecordBatch::parse(&rest).map(|(b, _)| b)),
        };
        match &size {
            Some(Ok(batch)) => self.pos += batch.size(),
            _ => self.done = true,
        }
        size
    }
}

impl std::iter::FusedIterator for RecordBatches {}

/// In-place edits of an encoded batch: what a broker stamps on append, without re-encoding the
/// records. Fields outside the CRC range are written as is; the others recompute the CRC
/// (one CRC-32C pass over the batch, no re-encoding).
#[derive(Debug)]
pub struct RecordBatchMut<'a> {
    buf: &'a mut [u8],
}

impl<'a> RecordBatchMut<'a> {
    /// A view over the batch at the start of `buf` (which may hold more after it).
    pub fn new(buf: &'a mut [u8]) -> Result<Self, DecodeError> {
        let size = check_batch(buf)?;
        let buf = buf.get_mut(..size).unwrap_or_default();
        Ok(Self { buf })
    }

    /// Size of the batch in bytes.
    pub fn size(&self) -> usize {
        self.buf.len()
    }

    /// The batch's bytes.
    pub fn as_slice(&self) -> &[u8] {
        self.buf
    }

    /// Sets the base offset (outside the CRC: the CRC stays valid).
    pub fn set_base_offset(&mut self, base_offset: i64) {
        put(self.buf, BASE_OFFSET, &base_offset.to_be_bytes());
    }

    /// Sets the partition leader epoch (outside the CRC: the CRC stays valid).
    pub fn set_partition_leader_epoch(&mut self, epoch: i32) {
        put(self.buf, PARTITION_LEADER_EPOCH, &epoch.to_be_bytes());
    }

    /// Sets the timestamp type bit and the max timestamp, then recomputes the CRC; does
    /// nothing if both already hold these values.
    pub fn set_max_timestamp(&mut self, kind: TimestampType, max_timestamp: i64) {
        let attributes = i16::from_be_bytes(get(self.buf, ATTRIBUTES));
        let new_attributes = match kind {
            // v2 has one bit: data without timestamps is written as create time (and -1).
            TimestampType::CreateTime | TimestampType::NoTimestampType => {
                attributes & !TIMESTAMP_TYPE_BIT
            }
            TimestampType::LogAppendTime => attributes | TIMESTAMP_TYPE_BIT,
        };
        let current = i64::from_be_bytes(get(self.buf, MAX_TIMESTAMP));
        if new_attributes == attributes && current == max_timestamp {
            return;
        }
        put(self.buf, ATTRIBUTES, &new_attributes.to_be_bytes());
        put(self.buf, MAX_TIMESTAMP, &max_timestamp.to_be_bytes());
        self.recompute_crc();
    }

    /// Marks the batch as log-append time `now`: what a broker does for topics with
    /// `message.timestamp.type=LogAppendTime`.
    pub fn set_log_append_time(&mut self, now: i64) {
        self.set_max_timestamp(TimestampType::LogAppendTime, now);
    }

    /// Sets the producer id, epoch and base sequence, then recomputes the CRC.
    pub fn set_producer_state(
        &mut self,
        producer_id: i64,
        producer_epoch: i16,
        base_sequence: i32,
    ) {
        put(self.buf, PRODUCER_ID, &producer_id.to_be_bytes());
        put(self.buf, PRODUCER_EPOCH, &producer_epoch.to_be_bytes());
        put(self.buf, BASE_SEQUENCE, &base_sequence.to_be_bytes());
        self.recompute_crc();
    }

    /// Recomputes and stores the CRC; returns it.
    pub fn recompute_crc(&mut self) -> u32 {
        let crc = batch_crc(self.buf);
        put(self.buf, CRC, &crc.to_be_bytes());
        crc
    }
}

/// A record's absolute offset and timestamp come from its batch, so they live here, beside
/// the batch, and `records.rs` needs nothing from this file.
impl Record {
    /// The record's absolute offset in its partition.
    pub fn offset(&self, batch: &RecordBatch) -> i64 {
        batch
            .base_offset()
            .wrapping_add(i64::from(self.offset_delta))
    }

    /// The record's timestamp: the batch's max timestamp under log-append time, else the
    /// batch's base timestamp plus the record's delta.
    pub fn timestamp(&self, batch: &RecordBatch) -> i64 {
        if batch.timestamp_type() == TimestampType::LogAppendTime {
            batch.max_timestamp()
        } else {
            batch.base_timestamp().wrapping_add(self.timestamp_delta)
        }
    }
}
