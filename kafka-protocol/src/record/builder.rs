//! Encoding v2 record batches.

use bytes::{BufMut, Bytes, BytesMut};

use super::batch::{
    CONTROL_BIT, CRC, LOG_OVERHEAD, MAGIC_V2, NO_PARTITION_LEADER_EPOCH, NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID, NO_SEQUENCE, NO_TIMESTAMP, RECORD_BATCH_OVERHEAD, TIMESTAMP_TYPE_BIT,
    TRANSACTIONAL_BIT,
};
use super::compression::{self, Compression};
use super::records::encode_record;
use crate::error::EncodeError;

/// A record header to encode: key and optional value.
pub type HeaderRef<'a> = (&'a str, Option<&'a [u8]>);

/// Builds one v2 record batch: appends encode records right away (as Kafka's producer does),
/// and [`RecordBatchBuilder::build`] compresses them and writes the header and CRC.
///
/// Offset deltas are 0, 1, 2, ... in append order; the base timestamp is the first record's
/// and the max timestamp the largest one (or the log-append time, if set).
#[derive(Debug, Clone)]
pub struct RecordBatchBuilder {
    base_offset: i64,
    partition_leader_epoch: i32,
    producer_id: i64,
    producer_epoch: i16,
    base_sequence: i32,
    transactional: bool,
    control: bool,
    compression: Compression,
    log_append_time: Option<i64>,
    base_timestamp: Option<i64>,
    max_timestamp: i64,
    count: i32,
    records: BytesMut,
}

impl Default for RecordBatchBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl RecordBatchBuilder {
    /// An empty, uncompressed, non-transactional batch at base offset 0, with no producer
    /// state and no leader epoch.
    pub fn new() -> Self {
        Self {
            base_offset: 0,
            partition_leader_epoch: NO_PARTITION_LEADER_EPOCH,
            producer_id: NO_PRODUCER_ID,
            producer_epoch: NO_PRODUCER_EPOCH,
            base_sequence: NO_SEQUENCE,
            transactional: false,
            control: false,
            compression: Compression::None,
            log_append_time: None,
            base_timestamp: None,
            max_timestamp: NO_TIMESTAMP,
            count: 0,
            records: BytesMut::new(),
        }
    }

    #[must_use]
    pub fn base_offset(mut self, base_offset: i64) -> Self {
        self.base_offset = base_offset;
        self
    }

    #[must_use]
    pub fn partition_leader_epoch(mut self, epoch: i32) -> Self {
        self.partition_leader_epoch = epoch;
        self
    }

    /// Producer id, epoch and the first record's sequence number (idempotent producers).
    #[must_use]
    pub fn producer(mut self, producer_id: i64, producer_epoch: i16, base_sequence: i32) -> Self {
        self.producer_id = producer_id;
        self.producer_epoch = producer_epoch;
        self.base_sequence = base_sequence;
        self
    }

    #[must_use]
    pub fn transactional(mut self, transactional: bool) -> Self {
        self.transactional = transactional;
        self
    }

    /// Marks the batch as holding control records (see [`super::control`]).
    #[must_use]
    pub fn control(mut self, control: bool) -> Self {
        self.control = control;
        self
    }

    #[must_use]
    pub fn compression(mut self, compression: Compression) -> Self {
        self.compression = compression;
        self
    }

    /// Log-append time: sets the timestamp type bit and `now` as the max timestamp.
    #[must_use]
    pub fn log_append_time(mut self, now: i64) -> Self {
        self.log_append_time = Some(now);
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

    /// Size the batch would have uncompressed (header plus encoded records).
    pub fn uncompressed_size(&self) -> usize {
        RECORD_BATCH_OVERHEAD + self.records.len()
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
        let base = *self.base_timestamp.get_or_insert(timestamp);
        encode_record(
            &mut self.records,
            offset_delta,
            timestamp.wrapping_sub(base),
            key,
            value,
            headers,
        )?;
        self.max_timestamp = self.max_timestamp.max(timestamp);
        self.count += 1;
        Ok(offset_delta)
    }

    /// Encodes the batch.
    pub fn build(self) -> Result<Bytes, EncodeError> {
        self.build_mut().map(BytesMut::freeze)
    }

    /// Encodes the batch into a mutable buffer (for later stamping with
    /// [`super::RecordBatchMut`]).
    pub fn build_mut(self) -> Result<BytesMut, EncodeError> {
        let body = match self.compression {
            Compression::None => self.records.freeze(),
            codec => compression::compress(codec, &self.records)?,
        };
        let size = RECORD_BATCH_OVERHEAD + body.len();
        let batch_length =
            i32::try_from(size - LOG_OVERHEAD).map_err(|_| EncodeError::TooLarge {
                field: "RecordBatch.batchLength",
                len: size,
            })?;
        let mut attributes = self.compression.attribute_bits();
        if self.log_append_time.is_some() {
            attributes |= TIMESTAMP_TYPE_BIT;
        }
        if self.transactional {
            attributes |= TRANSACTIONAL_BIT;
        }
        if self.control {
            attributes |= CONTROL_BIT;
        }
        let mut out = BytesMut::with_capacity(size);
        out.put_i64(self.base_offset);
        out.put_i32(batch_length);
        out.put_i32(self.partition_leader_epoch);
        out.put_i8(MAGIC_V2);
        out.put_u32(0); // CRC, filled in below.
        out.put_i16(attributes);
        out.put_i32((self.count - 1).max(0));
        out.put_i64(self.base_timestamp.unwrap_or(NO_TIMESTAMP));
        out.put_i64(self.log_append_time.unwrap_or(self.max_timestamp));
        out.put_i64(self.producer_id);
        out.put_i16(self.producer_epoch);
        out.put_i32(self.base_sequence);
        out.put_i32(self.count);
        out.put_slice(&body);
        let crc = crc32c::crc32c(out.get(CRC + 4..).unwrap_or_default());
        if let Some(slot) = out.get_mut(CRC..CRC + 4) {
            slot.copy_from_slice(&crc.to_be_bytes());
        }
        Ok(out)
    }
}
