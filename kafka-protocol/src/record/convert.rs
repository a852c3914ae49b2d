//! Conversion between the legacy message formats (magic 0 and 1) and v2 record batches, for
//! clients that predate magic 2: Produce v0-2 may carry magic 0/1 message sets, which are
//! up-converted to one v2 batch before they are appended; Fetch v0-1 answers magic 0 and
//! Fetch v2-3 magic 1, down-converted from the stored v2 batches. Pure functions over bytes.
//!
//! What Kafka 3.x does, and what is done here:
//! - Up-conversion keeps every message's key, value and (magic 1) timestamp; magic 0 messages
//!   get no timestamp (-1). Compressed wrappers are decompressed (bounded) and their messages
//!   re-compressed into the v2 batch with the producer's codec (`compression.type=producer`).
//!   Producer-given offsets are ignored (the log assigns them).
//! - Down-conversion writes, per v2 batch, plain messages at their absolute offsets when the
//!   batch is uncompressed, or one compressed wrapper with the same codec when it is
//!   compressed (magic 1: inner offsets relative to the first, the wrapper at the last
//!   absolute offset; magic 0: absolute inner offsets). Headers are dropped, control batches
//!   skipped, magic 0 drops timestamps, log-append time stays log-append time in magic 1.
//!   zstd cannot be expressed before magic 2 and is refused ([`ConvertError::Zstd`]).
//!   One difference: Kafka writes magic 0 LZ4 frames with its old, wrong header checksum
//!   (KAFKA-3160), which sarama (configured for 0.8/0.9, its long-time default) refuses
//!   ("lz4: invalid header checksum"); the frames here are standard, which sarama,
//!   kafka-python and librdkafka read in magic 0 (tested in kafka-broker's legacy_clients).
//!   The Java clients from 0.10 on are said to ignore that byte in magic 0 (not tested here);
//!   the 0.8/0.9 Java consumers, which check the wrong value, cannot read them.
//! - Bounds: down-conversion stops at a byte limit (a partial answer), but always converts
//!   the first entry so a consumer makes progress; one entry's converted messages are capped
//!   too. Records before the fetch offset are left out (Kafka leaves them in compressed
//!   batches for the client to skip); that also lets a batch too large to convert at once be
//!   served in parts.

use bytes::{Bytes, BytesMut};

use super::batch::{LOG_OVERHEAD, MAGIC_V2, NO_TIMESTAMP, TimestampType};
use super::builder::RecordBatchBuilder;
use super::compression::{self, Compression};
use super::legacy::{
    LEGACY_TIMESTAMP_TYPE_BIT, LegacyEntries, LegacyMessage, MAGIC_V0, MAGIC_V1,
    MESSAGE_OVERHEAD_V0, MESSAGE_OVERHEAD_V1, put_message,
};
use super::{RecordSet, RecordSetEntry};
use crate::error::{DecodeError, EncodeError};

/// Why a conversion failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConvertError {
    /// zstd-compressed data to or from a message format before magic 2.
    #[error("zstd compression cannot be used with message format magic {magic}")]
    Zstd { magic: i8 },
    /// A zstd-compressed batch for a client whose request version predates zstd.
    #[error("zstd-compressed batches need Fetch v10 or Produce v7")]
    ZstdTooOld,
    /// The input could not be read (CRC, sizes, codec, records).
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// The output could not be written.
    #[error(transparent)]
    Encode(#[from] EncodeError),
}

/// A legacy message set converted to one v2 batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpConverted {
    /// The batch: base offset 0, no producer state, create time.
    pub batch: Bytes,
    /// Messages it holds.
    pub records: usize,
    /// Its codec (that of the last compressed wrapper, or none).
    pub compression: Compression,
}

/// The zstd codec id in a legacy message's attribute bits 0-2.
fn is_zstd_attributes(attributes: i8) -> bool {
    (attributes & 0x07) as u8 == Compression::Zstd.id()
}

/// Converts a magic 0/1 message set (a Produce v0-2 partition's records) into one v2 batch.
/// Every message's CRC is checked; compressed wrappers are decompressed with at most
/// `max_decompressed` bytes in total. Fails on an empty set, a partial trailing message or an
/// entry that is not a legacy message.
pub fn up_convert(
    message_set: &Bytes,
    max_decompressed: usize,
) -> Result<UpConverted, ConvertError> {
    let mut entries = LegacyEntries::new(message_set.clone());
    let mut builder = RecordBatchBuilder::new();
    let mut codec = Compression::None;
    let mut budget = max_decompressed;
    for entry in entries.by_ref() {
        let m = entry?;
        m.verify_crc()?;
        if !m.is_compressed() {
            append_legacy(&mut builder, &m)?;
            continue;
        }
        if is_zstd_attributes(m.attributes) {
            return Err(ConvertError::Zstd { magic: m.magic });
        }
        codec = m.compression()?;
        let inner = m.inner_messages(budget)?;
        let used: usize = inner.iter().map(LegacyMessage::size).sum();
        budget = budget.saturating_sub(used);
        for i in &inner {
            append_legacy(&mut builder, i)?;
        }
    }
    if !entries.remainder().is_empty() {
        return Err(DecodeError::Invalid {
            field: "MessageSet",
            reason: "partial message at the end of the message set",
        }
        .into());
    }
    if builder.is_empty() {
        return Err(DecodeError::Invalid {
            field: "MessageSet",
            reason: "no messages",
        }
        .into());
    }
    let records = builder.len();
    let batch = builder.compression(codec).build()?;
    Ok(UpConverted {
        batch,
        records,
        compression: codec,
    })
}

fn append_legacy(builder: &mut RecordBatchBuilder, m: &LegacyMessage) -> Result<(), EncodeError> {
    let timestamp = match m.magic {
        MAGIC_V0 => NO_TIMESTAMP,
        _ => m.timestamp.unwrap_or(NO_TIMESTAMP),
    };
    builder.append(timestamp, m.key.as_deref(), m.value.as_deref(), &[])?;
    Ok(())
}

/// Limits of one down-conversion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DownConvertLimits {
    /// No entry after the first one starts once the output reaches this size, and no
    /// uncompressed message after the first goes past it.
    pub max_bytes: usize,
    /// At most this many bytes of messages (before compression) from one entry; at least one
    /// message is always written. This bounds the first entry, which is written whatever
    /// `max_bytes` says.
    pub max_entry: usize,
    /// Largest decompressed payload of one batch.
    pub max_decompressed: usize,
}

/// What a down-conversion wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DownConverted {
    /// The legacy message set.
    pub records: Bytes,
    /// Messages written (a converted compressed wrapper counts its inner messages, a legacy
    /// entry copied as it is counts one).
    pub messages: usize,
    /// The offset after the last message written (`fetch_offset` if none).
    pub next_offset: i64,
    /// False when the conversion stopped before the end of the input: at a limit, at a zstd
    /// batch, or at an entry it could not read (after the first).
    pub complete: bool,
}

/// One message to write.
#[derive(Debug)]
struct Message {
    offset: i64,
    timestamp: i64,
    key: Option<Bytes>,
    value: Option<Bytes>,
}

impl Message {
    fn size(&self, magic: i8) -> usize {
        let overhead = if magic == MAGIC_V0 {
            MESSAGE_OVERHEAD_V0
        } else {
            MESSAGE_OVERHEAD_V1
        };
        LOG_OVERHEAD
            + overhead
            + self.key.as_ref().map_or(0, Bytes::len)
            + self.value.as_ref().map_or(0, Bytes::len)
    }
}

/// What one input entry becomes.
enum Plan {
    /// Nothing (a control batch, or no records at or after the fetch offset).
    Skip,
    /// The entry as it is (a legacy message already at or below the target magic).
    Verbatim(Bytes),
    Convert {
        codec: Compression,
        /// The log-append time, when the entry's timestamps are log-append time.
        log_append_time: Option<i64>,
        messages: Vec<Message>,
    },
}

/// Converts a record set as read from the log (v2 batches, possibly legacy entries) into a
/// magic 0 or 1 message set, starting at `fetch_offset`. A trailing partial entry is ignored
/// (as a fetch ignores it). Fails only when the first entry cannot be converted: zstd
/// ([`ConvertError::Zstd`]) or unreadable; later such entries end the output there.
pub fn down_convert(
    record_set: &Bytes,
    magic: i8,
    fetch_offset: i64,
    limits: DownConvertLimits,
) -> Result<DownConverted, ConvertError> {
    if !(MAGIC_V0..=MAGIC_V1).contains(&magic) {
        return Err(EncodeError::UnsupportedVersion {
            message: "Message",
            version: i16::from(magic),
        }
        .into());
    }
    let mut out = BytesMut::new();
    let mut messages = 0usize;
    let mut next_offset = fetch_offset;
    let mut complete = true;
    let mut pos = 0usize;
    for entry in RecordSet::new(record_set.clone()) {
        let first = out.is_empty();
        let planned = entry.map_err(ConvertError::from).and_then(|e| {
            let size = e.size();
            let raw =
                record_set.slice(pos.min(record_set.len())..(pos + size).min(record_set.len()));
            pos += size;
            plan(e, raw, magic, fetch_offset, limits.max_decompressed)
        });
        let plan = match planned {
            Ok(p) => p,
            Err(e) if first => return Err(e),
            Err(_) => {
                complete = false;
                break;
            }
        };
        if !first && out.len() >= limits.max_bytes {
            complete = false;
            break;
        }
        let written = match plan {
            Plan::Skip => continue,
            Plan::Verbatim(raw) => {
                if !first && out.len() + raw.len() > limits.max_bytes {
                    complete = false;
                    break;
                }
                out.extend_from_slice(&raw);
                let (m, _) = LegacyMessage::parse(&raw)?;
                next_offset = m.offset.wrapping_add(1);
                // A verbatim compressed wrapper counts as one message here.
                Written {
                    messages: 1,
                    whole: true,
                }
            }
            Plan::Convert {
                codec: Compression::None,
                log_append_time,
                messages: msgs,
            } => write_plain(
                &mut out,
                magic,
                log_append_time,
                &msgs,
                first,
                limits,
                &mut next_offset,
            )?,
            Plan::Convert {
                codec,
                log_append_time,
                messages: msgs,
            } => {
                let w = write_wrapper(
                    &mut out,
                    magic,
                    codec,
                    log_append_time,
                    &msgs,
                    first,
                    limits,
                    &mut next_offset,
                )?;
                match w {
                    Some(w) => w,
                    None => {
                        complete = false;
                        break;
                    }
                }
            }
        };
        messages += written.messages;
        if !written.whole {
            complete = false;
            break;
        }
    }
    Ok(DownConverted {
        records: out.freeze(),
        messages,
        next_offset,
        complete,
    })
}

/// How much of one entry was written.
struct Written {
    messages: usize,
    /// All of the entry's messages.
    whole: bool,
}

fn plan(
    entry: RecordSetEntry,
    raw: Bytes,
    magic: i8,
    fetch_offset: i64,
    max_decompressed: usize,
) -> Result<Plan, ConvertError> {
    let mut messages = Vec::new();
    let (codec, log_append_time) = match entry {
        RecordSetEntry::Batch(b) => {
            if b.is_control() {
                return Ok(Plan::Skip);
            }
            let codec = b.compression()?;
            if codec == Compression::Zstd {
                return Err(ConvertError::Zstd { magic });
            }
            for r in b.records(max_decompressed)? {
                let r = r?;
                let offset = r.offset(&b);
                if offset < fetch_offset {
                    continue;
                }
                messages.push(Message {
                    offset,
                    timestamp: r.timestamp(&b),
                    key: r.key,
                    value: r.value,
                });
            }
            let lat =
                (b.timestamp_type() == TimestampType::LogAppendTime).then(|| b.max_timestamp());
            (codec, lat)
        }
        RecordSetEntry::Legacy(m) if m.magic <= magic => {
            m.verify_crc()?;
            return Ok(Plan::Verbatim(raw));
        }
        RecordSetEntry::Legacy(m) => {
            m.verify_crc()?;
            if is_zstd_attributes(m.attributes) {
                return Err(ConvertError::Zstd { magic });
            }
            let codec = m.compression()?;
            let lat = (m.timestamp_type() == TimestampType::LogAppendTime)
                .then_some(m.timestamp)
                .flatten();
            let inner = if m.is_compressed() {
                m.inner_messages(max_decompressed)?
            } else {
                vec![m]
            };
            for i in inner {
                if i.offset < fetch_offset {
                    continue;
                }
                messages.push(Message {
                    offset: i.offset,
                    timestamp: i.timestamp.unwrap_or(NO_TIMESTAMP),
                    key: i.key,
                    value: i.value,
                });
            }
            (codec, lat)
        }
    };
    if messages.is_empty() {
        return Ok(Plan::Skip);
    }
    Ok(Plan::Convert {
        codec,
        log_append_time,
        messages,
    })
}

/// Attribute bits of a message written with the timestamp type.
fn timestamp_bits(magic: i8, log_append_time: Option<i64>) -> i8 {
    if magic == MAGIC_V1 && log_append_time.is_some() {
        LEGACY_TIMESTAMP_TYPE_BIT
    } else {
        0
    }
}

/// Uncompressed messages at absolute offsets, until the limit.
fn write_plain(
    out: &mut BytesMut,
    magic: i8,
    log_append_time: Option<i64>,
    msgs: &[Message],
    first: bool,
    limits: DownConvertLimits,
    next_offset: &mut i64,
) -> Result<Written, ConvertError> {
    let limit = if first {
        limits.max_entry.max(limits.max_bytes)
    } else {
        limits.max_bytes
    };
    let attributes = timestamp_bits(magic, log_append_time);
    let mut n = 0;
    for m in msgs {
        if !out.is_empty() && out.len() + m.size(magic) > limit {
            break;
        }
        put_message(
            out,
            m.offset,
            magic,
            attributes,
            log_append_time.unwrap_or(m.timestamp),
            m.key.as_deref(),
            m.value.as_deref(),
        )?;
        *next_offset = m.offset.wrapping_add(1);
        n += 1;
    }
    Ok(Written {
        messages: n,
        whole: n == msgs.len(),
    })
}

/// One compressed wrapper holding the messages (as many as `max_entry` allows, at least one);
/// `None` when it is not the first entry and would go past `max_bytes`.
#[allow(clippy::too_many_arguments)]
fn write_wrapper(
    out: &mut BytesMut,
    magic: i8,
    codec: Compression,
    log_append_time: Option<i64>,
    msgs: &[Message],
    first: bool,
    limits: DownConvertLimits,
    next_offset: &mut i64,
) -> Result<Option<Written>, ConvertError> {
    let attributes = timestamp_bits(magic, log_append_time);
    let Some(base) = msgs.first().map(|m| m.offset) else {
        return Ok(Some(Written {
            messages: 0,
            whole: true,
        }));
    };
    let mut inner = BytesMut::new();
    let mut n = 0;
    let mut last = base;
    let mut max_timestamp = NO_TIMESTAMP;
    for m in msgs {
        if n > 0 && inner.len() + m.size(magic) > limits.max_entry {
            break;
        }
        let offset = if magic == MAGIC_V1 {
            m.offset.wrapping_sub(base)
        } else {
            m.offset
        };
        let timestamp = log_append_time.unwrap_or(m.timestamp);
        put_message(
            &mut inner,
            offset,
            magic,
            attributes,
            timestamp,
            m.key.as_deref(),
            m.value.as_deref(),
        )?;
        max_timestamp = max_timestamp.max(timestamp);
        last = m.offset;
        n += 1;
    }
    let value = compression::compress(codec, &inner)?;
    drop(inner);
    let overhead = if magic == MAGIC_V0 {
        MESSAGE_OVERHEAD_V0
    } else {
        MESSAGE_OVERHEAD_V1
    };
    if !first && out.len() + LOG_OVERHEAD + overhead + value.len() > limits.max_bytes {
        return Ok(None);
    }
    put_message(
        out,
        last,
        magic,
        codec.id() as i8 | attributes,
        log_append_time.unwrap_or(max_timestamp),
        None,
        Some(&value),
    )?;
    *next_offset = last.wrapping_add(1);
    Ok(Some(Written {
        messages: n,
        whole: n == msgs.len(),
    }))
}

/// Whether a record set's first entry is a legacy (magic 0 or 1) message.
pub fn starts_with_legacy(record_set: &[u8]) -> bool {
    record_set
        .get(super::batch::MAGIC_OFFSET)
        .is_some_and(|&m| (m as i8) < MAGIC_V2)
}

/// The bytes of `record_set` before its first zstd-compressed v2 batch: `Err` when the first
/// batch is one (for clients whose Fetch version predates zstd). Reads batch headers only.
pub fn cut_before_zstd(record_set: &Bytes) -> Result<Bytes, ConvertError> {
    let mut batches = super::RecordBatches::new(record_set.clone());
    let mut end = 0usize;
    for b in batches.by_ref() {
        let Ok(b) = b else { break };
        if b.compression().ok() == Some(Compression::Zstd) {
            if end == 0 {
                return Err(ConvertError::ZstdTooOld);
            }
            return Ok(record_set.slice(..end));
        }
        end += b.size();
    }
    Ok(record_set.clone())
}
