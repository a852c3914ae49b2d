//! Legacy message sets, magic 0 and 1, for reading (and writing) data from old clients and logs.
//!
//! Each entry is offset (i64), message size (i32), then the message: crc (u32, CRC-32 IEEE of
//! magic..end), magic (i8), attributes (i8: bits 0-2 codec, bit 3 log-append time in v1),
//! timestamp (i64, v1 only), key and value (i32 length, -1 = null).
//!
//! A compressed message is a wrapper whose value is a compressed inner message set. In v0 the
//! inner offsets are absolute; in v1 they are relative (0, 1, ...) and the wrapper carries the
//! absolute offset of the last inner message.

use bytes::{BufMut, Bytes, BytesMut};

use super::batch::{LOG_OVERHEAD, TimestampType, entry_size};
use super::compression::{self, Compression};
use crate::codec::Reader;
use crate::error::{DecodeError, EncodeError};

pub const MAGIC_V0: i8 = 0;
pub const MAGIC_V1: i8 = 1;
/// Smallest v0 message: crc, magic, attributes, key length, value length.
pub const MESSAGE_OVERHEAD_V0: usize = 14;
/// Smallest v1 message: v0 plus the timestamp.
pub const MESSAGE_OVERHEAD_V1: usize = 22;
/// Attribute bit 3 of a v1 message: the timestamp is log-append time.
pub const LEGACY_TIMESTAMP_TYPE_BIT: i8 = 0x08;

/// One decoded legacy message; key and value are slices of the input (or of the decompressed
/// wrapper value for inner messages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LegacyMessage {
    /// Absolute offset (after deep iteration; raw inner offsets of v1 are relative).
    pub offset: i64,
    /// The stored CRC.
    pub crc: u32,
    pub magic: i8,
    pub attributes: i8,
    /// `None` for magic 0.
    pub timestamp: Option<i64>,
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
    /// The CRC-covered bytes: magic to end.
    body: Bytes,
}

impl LegacyMessage {
    /// Splits the first entry off `input`: the message and the bytes after it. Checks sizes
    /// and magic, not the CRC.
    pub fn parse(input: &Bytes) -> Result<(Self, Bytes), DecodeError> {
        let field = "Message.messageSize";
        let size = match entry_size(input, field, MESSAGE_OVERHEAD_V0 as i32) {
            None => {
                return Err(DecodeError::Truncated {
                    field,
                    need: LOG_OVERHEAD,
                    have: input.len(),
                });
            }
            Some(size) => size?,
        };
        if size > input.len() {
            return Err(DecodeError::Truncated {
                field: "Message",
                need: size,
                have: input.len(),
            });
        }
        let entry = input.slice(..size);
        let mut r = Reader::new(&entry);
        let offset = r.i64("Message.offset")?;
        r.i32(field)?;
        let crc = r.u32("Message.crc")?;
        let body = r.rest();
        let magic = r.i8("Message.magic")?;
        if !(MAGIC_V0..=MAGIC_V1).contains(&magic) {
            return Err(DecodeError::Invalid {
                field: "Message.magic",
                reason: "not a legacy message (magic is not 0 or 1)",
            });
        }
        let attributes = r.i8("Message.attributes")?;
        let timestamp = if magic == MAGIC_V1 {
            Some(r.i64("Message.timestamp")?)
        } else {
            None
        };
        let key = r.nullable_bytes("Message.key", false)?;
        let value = r.nullable_bytes("Message.value", false)?;
        if r.remaining() != 0 {
            return Err(DecodeError::Invalid {
                field,
                reason: "message size is larger than its fields",
            });
        }
        let msg = Self {
            offset,
            crc,
            magic,
            attributes,
            timestamp,
            key,
            value,
            body,
        };
        Ok((msg, input.slice(size..)))
    }

    /// The codec of the message (zstd does not exist before magic 2).
    pub fn compression(&self) -> Result<Compression, DecodeError> {
        match Compression::from_id((self.attributes & 0x07) as u8)? {
            Compression::Zstd => Err(DecodeError::Invalid {
                field: "Message.attributes",
                reason: "zstd compression needs magic 2",
            }),
            codec => Ok(codec),
        }
    }

    /// Whether this is a wrapper of a compressed inner message set.
    pub fn is_compressed(&self) -> bool {
        self.attributes & 0x07 != 0
    }

    /// The timestamp type; `NoTimestampType` for magic 0, which has no timestamps.
    pub fn timestamp_type(&self) -> TimestampType {
        match self.magic {
            MAGIC_V0 => TimestampType::NoTimestampType,
            _ if self.attributes & LEGACY_TIMESTAMP_TYPE_BIT != 0 => TimestampType::LogAppendTime,
            _ => TimestampType::CreateTime,
        }
    }

    /// Size of the entry on the wire: offset, size and message.
    pub fn size(&self) -> usize {
        LOG_OVERHEAD + 4 + self.body.len()
    }

    /// CRC-32 of the message's magic..end.
    pub fn computed_crc(&self) -> u32 {
        crc32fast::hash(&self.body)
    }

    /// Checks the stored CRC.
    pub fn verify_crc(&self) -> Result<(), DecodeError> {
        let (stored, computed) = (self.crc, self.computed_crc());
        if stored != computed {
            return Err(DecodeError::Crc {
                what: "message",
                stored,
                computed,
            });
        }
        Ok(())
    }

    /// The inner messages of a compressed wrapper, with absolute offsets (and, under
    /// log-append time, the wrapper's timestamp). Every inner CRC is checked; the wrapper's is
    /// not (see [`Self::verify_crc`]). Decompressed size is bounded by `max_decompressed`.
    pub fn inner_messages(&self, max_decompressed: usize) -> Result<Vec<Self>, DecodeError> {
        let codec = self.compression()?;
        let value = self.value.as_ref().ok_or(DecodeError::Invalid {
            field: "Message.value",
            reason: "compressed wrapper message without a value",
        })?;
        let broken_lz4 = self.magic == MAGIC_V0 && codec == Compression::Lz4;
        let data = compression::decompress_with(codec, value, max_decompressed, broken_lz4)?;
        let mut entries = LegacyEntries::new(data);
        let mut out = Vec::new();
        for m in entries.by_ref() {
            let m = m?;
            if m.magic != self.magic {
                return Err(DecodeError::Invalid {
                    field: "Message.magic",
                    reason: "inner message magic differs from its wrapper's",
                });
            }
            if m.is_compressed() {
                return Err(DecodeError::Invalid {
                    field: "Message.attributes",
                    reason: "nested compressed message",
                });
            }
            m.verify_crc()?;
            out.push(m);
        }
        if !entries.remainder().is_empty() {
            return Err(DecodeError::Invalid {
                field: "Message",
                reason: "partial message inside a compressed wrapper",
            });
        }
        if self.magic == MAGIC_V1 {
            let last = out.last().map_or(0, |m| m.offset);
            let base = self.offset.wrapping_sub(last);
            let log_append = self.timestamp_type() == TimestampType::LogAppendTime;
            for m in &mut out {
                m.offset = base.wrapping_add(m.offset);
                if log_append {
                    m.timestamp = self.timestamp;
                    m.attributes |= LEGACY_TIMESTAMP_TYPE_BIT;
                }
            }
        }
        Ok(out)
    }
}

/// Shallow iterator over the entries of a legacy message set: compressed wrappers are yielded
/// as they are. Like [`super::RecordBatches`], a trailing partial entry ends the iteration
/// cleanly and is left in [`LegacyEntries::remainder`].
#[derive(Debug, Clone)]
pub struct LegacyEntries {
    buf: Bytes,
    pos: usize,
    done: bool,
}

impl LegacyEntries {
    pub fn new(message_set: Bytes) -> Self {
        Self {
            buf: message_set,
            pos: 0,
            done: false,
        }
    }

    /// Bytes not yielded: the trailing partial entry once iteration ended, or the bad entry
    /// and what follows it after an error.
    pub fn remainder(&self) -> Bytes {
        self.buf.slice(self.pos.min(self.buf.len())..)
    }
}

impl Iterator for LegacyEntries {
    type Item = Result<LegacyMessage, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let rest = self.remainder();
        let item = match entry_size(&rest, "Message.messageSize", MESSAGE_OVERHEAD_V0 as i32) {
            None => None,
            Some(Err(e)) => Some(Err(e)),
            Some(Ok(size)) if size > rest.len() => None,
            Some(Ok(_)) => Some(LegacyMessage::parse(&rest).map(|(m, _)| m)),
        };
        match &item {
            Some(Ok(m)) => self.pos += m.size(),
            _ => self.done = true,
        }
        item
    }
}

impl std::iter::FusedIterator for LegacyEntries {}

/// Deep iterator over a legacy message set: compressed wrappers are replaced by their inner
/// messages, with absolute offsets. Every message's CRC is checked (wrappers before they are
/// decompressed). Stops after the first error.
#[derive(Debug, Clone)]
pub struct LegacyRecords {
    outer: LegacyEntries,
    inner: std::vec::IntoIter<LegacyMessage>,
    max_decompressed: usize,
    failed: bool,
}

impl LegacyRecords {
    pub fn new(message_set: Bytes, max_decompressed: usize) -> Self {
        Self {
            outer: LegacyEntries::new(message_set),
            inner: Vec::new().into_iter(),
            max_decompressed,
            failed: false,
        }
    }

    /// See [`LegacyEntries::remainder`].
    pub fn remainder(&self) -> Bytes {
        self.outer.remainder()
    }
}

impl Iterator for LegacyRecords {
    type Item = Result<LegacyMessage, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(m) = self.inner.next() {
                return Some(Ok(m));
            }
            if self.failed {
                return None;
            }
            let checked = self.outer.next()?.and_then(|m| {
                m.verify_crc()?;
                Ok(m)
            });
            match checked {
                Ok(m) if !m.is_compressed() => return Some(Ok(m)),
                Ok(m) => match m.inner_messages(self.max_decompressed) {
                    Ok(inner) => self.inner = inner.into_iter(),
                    Err(e) => {
                        self.failed = true;
                        return Some(Err(e));
                    }
                },
                Err(e) => {
                    self.failed = true;
                    return Some(Err(e));
                }
            }
        }
    }
}

impl std::iter::FusedIterator for LegacyRecords {}

/// Appends one entry (offset, size, message) to `out`.
pub(crate) fn put_message(
    out: &mut BytesMut,
    offset: i64,
    magic: i8,
    attributes: i8,
    timestamp: i64,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
) -> Result<(), EncodeError> {
    let overhead = if magic == MAGIC_V0 {
        MESSAGE_OVERHEAD_V0
    } else {
        MESSAGE_OVERHEAD_V1
    };
    let size = overhead + key.map_or(0, <[u8]>::len) + value.map_or(0, <[u8]>::len);
    let size_i32 = i32::try_from(size).map_err(|_| EncodeError::TooLarge {
        field: "Message.messageSize",
        len: size,
    })?;
    out.reserve(LOG_OVERHEAD + size);
    out.put_i64(offset);
    out.put_i32(size_i32);
    let crc_at = out.len();
    out.put_u32(0);
    out.put_i8(magic);
    out.put_i8(attributes);
    if magic == MAGIC_V1 {
        out.put_i64(timestamp);
    }
    for b in [key, value] {
        match b {
            None => out.put_i32(-1),
            Some(b) => {
                // Fits: the whole message size fits an i32.
                out.put_i32(b.len() as i32);
                out.put_slice(b);
            }
        }
    }
    let crc = crc32fast::hash(out.get(crc_at + 4..).unwrap_or_default());
    if let Some(slot) = out.get_mut(crc_at..crc_at + 4) {
        slot.copy_from_slice(&crc.to_be_bytes());
    }
    Ok(())
}

/// Builds a v0 or v1 message set: plain messages at consecutive offsets from the base offset,
/// or, with a codec, one wrapper message holding them compressed.
#[derive(Debug, Clone)]
pub struct LegacyMessageSetBuilder {
    magic: i8,
    compression: Compression,
    base_offset: i64,
    count: i64,
    max_timestamp: i64,
    messages: BytesMut,
}

impl LegacyMessageSetBuilder {
    /// A builder for `magic` 0 or 1 messages compressed with `compression` (not zstd), the
    /// first one at `base_offset`.
    pub fn new(magic: i8, compression: Compression, base_offset: i64) -> Result<Self, EncodeError> {
        if !(MAGIC_V0..=MAGIC_V1).contains(&magic) {
            return Err(EncodeError::UnsupportedVersion {
                message: "Message",
                version: i16::from(magic),
            });
        }
        if compression == Compression::Zstd {
            return Err(EncodeError::FieldNotAvailable {
                field: "Message.attributes (zstd)",
                version: i16::from(magic),
            });
        }
        Ok(Self {
            magic,
            compression,
            base_offset,
            count: 0,
            max_timestamp: super::batch::NO_TIMESTAMP,
            messages: BytesMut::new(),
        })
    }

    /// Appends a message (`timestamp` is dropped in magic 0).
    pub fn append(
        &mut self,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
    ) -> Result<(), EncodeError> {
        let offset = if self.compression != Compression::None && self.magic == MAGIC_V1 {
            self.count
        } else {
            self.base_offset.wrapping_add(self.count)
        };
        put_message(
            &mut self.messages,
            offset,
            self.magic,
            0,
            timestamp,
            key,
            value,
        )?;
        self.count += 1;
        self.max_timestamp = self.max_timestamp.max(timestamp);
        Ok(())
    }

    /// Encodes the set (empty if nothing was appended).
    pub fn build(self) -> Result<Bytes, EncodeError> {
        if self.compression == Compression::None || self.count == 0 {
            return Ok(self.messages.freeze());
        }
        let value = compression::compress(self.compression, &self.messages)?;
        let mut out = BytesMut::new();
        put_message(
            &mut out,
            self.base_offset.wrapping_add(self.count - 1),
            self.magic,
            self.compression.id() as i8,
            self.max_timestamp,
            None,
            Some(&value),
        )?;
        Ok(out.freeze())
    }
}
