//! One record inside a v2 batch, and the lazy iterator over a batch's records.
//!
//! Record layout (all integers zigzag varints unless noted): length, attributes (i8),
//! timestampDelta (varlong), offsetDelta, key length (-1 = null) and bytes, value length and
//! bytes, header count, then per header a key length and UTF-8 key, a value length (-1 = null)
//! and bytes.

use bytes::{BufMut, Bytes, BytesMut};

use crate::codec::{KStr, Reader};
use crate::error::{DecodeError, EncodeError};
use crate::primitives::{put_varint, put_varlong, varint_len, varlong_len};

/// A record header: a UTF-8 key and optional bytes, both slices of the batch buffer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordHeader {
    pub key: KStr,
    pub value: Option<Bytes>,
}

/// A decoded record. Key, value and header values are slices of the buffer the record was read
/// from: the batch itself when uncompressed, the decompressed buffer otherwise.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Unused by Kafka so far; kept as read.
    pub attributes: i8,
    /// Timestamp relative to the batch's base timestamp.
    pub timestamp_delta: i64,
    /// Offset relative to the batch's base offset.
    pub offset_delta: i32,
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
    pub headers: Vec<RecordHeader>,
}

impl Record {
    // `offset` and `timestamp`, which need the record's batch, are in `batch.rs`.

    /// Reads one record (length prefix included) from `r`.
    pub fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        let len = r.varint("Record.length")?;
        let len = usize::try_from(len).map_err(|_| DecodeError::Invalid {
            field: "Record.length",
            reason: "negative length",
        })?;
        let body = r.take("Record", len)?;
        let mut b = Reader::new(&body);
        let attributes = b.i8("Record.attributes")?;
        let timestamp_delta = b.varlong("Record.timestampDelta")?;
        let offset_delta = b.varint("Record.offsetDelta")?;
        let key = var_bytes(&mut b, "Record.key")?;
        let value = var_bytes(&mut b, "Record.value")?;
        let count = b.varint("Record.headers")?;
        let count = usize::try_from(count).map_err(|_| DecodeError::Invalid {
            field: "Record.headers",
            reason: "negative header count",
        })?;
        // Each header takes at least two bytes, so this bounds the allocation by the input.
        if count > b.remaining() / 2 {
            return Err(DecodeError::TooLarge {
                field: "Record.headers",
                len: count as u64,
                max: (b.remaining() / 2) as u64,
            });
        }
        let mut headers = Vec::with_capacity(
            count.min(crate::codec::MAX_PREALLOC_BYTES / std::mem::size_of::<RecordHeader>()),
        );
        for _ in 0..count {
            let key = var_bytes(&mut b, "RecordHeader.key")?.ok_or(DecodeError::Invalid {
                field: "RecordHeader.key",
                reason: "null header key",
            })?;
            let key = KStr::from_utf8(key).map_err(|_| DecodeError::Invalid {
                field: "RecordHeader.key",
                reason: "string is not valid UTF-8",
            })?;
            let value = var_bytes(&mut b, "RecordHeader.value")?;
            headers.push(RecordHeader { key, value });
        }
        if b.remaining() != 0 {
            return Err(DecodeError::Invalid {
                field: "Record.length",
                reason: "record length is larger than its fields",
            });
        }
        Ok(Self {
            attributes,
            timestamp_delta,
            offset_delta,
            key,
            value,
            headers,
        })
    }
}

/// Varint-length-prefixed bytes, -1 for null.
fn var_bytes(r: &mut Reader<'_>, field: &'static str) -> Result<Option<Bytes>, DecodeError> {
    let len = r.varint(field)?;
    if len == -1 {
        return Ok(None);
    }
    let len = usize::try_from(len).map_err(|_| DecodeError::Invalid {
        field,
        reason: "negative length",
    })?;
    r.take(field, len).map(Some)
}

/// Lazy iterator over the records of one batch. Yields an error (and then stops) on a
/// malformed record, or when bytes remain after the declared number of records.
#[derive(Debug, Clone)]
pub struct Records {
    data: Bytes,
    pos: usize,
    left: u32,
    done: bool,
}

impl Records {
    pub(crate) fn new(data: Bytes, count: u32) -> Self {
        Self {
            data,
            pos: 0,
            left: count,
            done: false,
        }
    }

    /// An iterator that yields nothing.
    pub(crate) fn empty() -> Self {
        Self::new(Bytes::new(), 0)
    }

    /// Records not yet yielded, as declared by the batch header.
    pub fn remaining(&self) -> u32 {
        self.left
    }

    /// Where the next record starts in [`Self::data`].
    pub(crate) fn position(&self) -> usize {
        self.pos
    }

    /// The (decompressed) record bytes the iterator walks.
    pub(crate) fn data(&self) -> &Bytes {
        &self.data
    }
}

impl Iterator for Records {
    type Item = Result<Record, DecodeError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let rest = self.data.slice(self.pos.min(self.data.len())..);
        if self.left == 0 {
            self.done = true;
            return (!rest.is_empty()).then_some(Err(DecodeError::Invalid {
                field: "RecordBatch.recordsCount",
                reason: "bytes remain after the last record",
            }));
        }
        let mut r = Reader::new(&rest);
        match Record::decode(&mut r) {
            Ok(rec) => {
                self.pos += r.position();
                self.left -= 1;
                Some(Ok(rec))
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        if self.done {
            (0, Some(0))
        } else {
            (0, Some(self.left as usize + 1))
        }
    }
}

impl std::iter::FusedIterator for Records {}

fn len_i32(field: &'static str, len: usize) -> Result<i32, EncodeError> {
    i32::try_from(len).map_err(|_| EncodeError::TooLarge { field, len })
}

fn var_bytes_len(field: &'static str, v: Option<&[u8]>) -> Result<usize, EncodeError> {
    Ok(match v {
        None => varint_len(-1),
        Some(b) => varint_len(len_i32(field, b.len())?) + b.len(),
    })
}

fn put_var_bytes(out: &mut BytesMut, v: Option<&[u8]>) {
    match v {
        None => put_varint(out, -1),
        Some(b) => {
            // Lengths were checked to fit an i32 when the size was computed.
            put_varint(out, i32::try_from(b.len()).unwrap_or(i32::MAX));
            out.put_slice(b);
        }
    }
}

/// Size of one encoded record, length prefix included (lengths over `i32::MAX` count as the
/// maximum; encoding them fails).
pub(crate) fn encoded_record_size(
    offset_delta: i32,
    timestamp_delta: i64,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
    headers: &[(&str, Option<&[u8]>)],
) -> usize {
    fn bytes_len(v: Option<&[u8]>) -> usize {
        v.map_or(1, |b| {
            varint_len(i32::try_from(b.len()).unwrap_or(i32::MAX)) + b.len()
        })
    }
    let mut body = 1 + varlong_len(timestamp_delta) + varint_len(offset_delta);
    body += bytes_len(key) + bytes_len(value);
    body += varint_len(i32::try_from(headers.len()).unwrap_or(i32::MAX));
    for (k, v) in headers {
        body += bytes_len(Some(k.as_bytes())) + bytes_len(*v);
    }
    varint_len(i32::try_from(body).unwrap_or(i32::MAX)) + body
}

/// Appends one encoded record (length prefix included) to `out`.
pub(crate) fn encode_record(
    out: &mut BytesMut,
    offset_delta: i32,
    timestamp_delta: i64,
    key: Option<&[u8]>,
    value: Option<&[u8]>,
    headers: &[(&str, Option<&[u8]>)],
) -> Result<(), EncodeError> {
    let mut body = 1 + varlong_len(timestamp_delta) + varint_len(offset_delta);
    body += var_bytes_len("Record.key", key)?;
    body += var_bytes_len("Record.value", value)?;
    body += varint_len(len_i32("Record.headers", headers.len())?);
    for (k, v) in headers {
        body += var_bytes_len("RecordHeader.key", Some(k.as_bytes()))?;
        body += var_bytes_len("RecordHeader.value", *v)?;
    }
    let body_len = len_i32("Record", body)?;
    out.reserve(varint_len(body_len) + body);
    put_varint(out, body_len);
    out.put_i8(0);
    put_varlong(out, timestamp_delta);
    put_varint(out, offset_delta);
    put_var_bytes(out, key);
    put_var_bytes(out, value);
    put_varint(out, len_i32("Record.headers", headers.len())?);
    for (k, v) in headers {
        put_var_bytes(out, Some(k.as_bytes()));
        put_var_bytes(out, *v);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded(headers: &[(&str, Option<&[u8]>)]) -> Bytes {
        let mut out = BytesMut::new();
        encode_record(&mut out, 3, -7, Some(b"key"), None, headers).unwrap();
        out.freeze()
    }

    #[test]
    fn record_round_trip_and_known_bytes() {
        let bytes = encoded(&[("h", Some(b"v")), ("n", None)]);
        // length 16 -> 32, attributes 0, timestampDelta -7 -> 13, offsetDelta 3 -> 6, key len
        // 3 -> 6, "key", value null -> 1, 2 headers -> 4, key len 1 -> 2, "h", value len 1 -> 2,
        // "v", key "n", value null.
        let want: &[u8] = &[
            32, 0, 13, 6, 6, b'k', b'e', b'y', 1, 4, 2, b'h', 2, b'v', 2, b'n', 1,
        ];
        assert_eq!(&bytes[..], want);
        let mut r = Reader::new(&bytes);
        let rec = Record::decode(&mut r).unwrap();
        assert_eq!(r.remaining(), 0);
        assert_eq!(rec.offset_delta, 3);
        assert_eq!(rec.timestamp_delta, -7);
        assert_eq!(rec.key.as_deref(), Some(&b"key"[..]));
        assert_eq!(rec.value, None);
        assert_eq!(rec.headers.len(), 2);
        assert_eq!(rec.headers[0].key, "h");
        assert_eq!(rec.headers[0].value.as_deref(), Some(&b"v"[..]));
        assert_eq!(rec.headers[1].value, None);
    }

    #[test]
    fn malformed_records_are_typed_errors() {
        let good = encoded(&[("h", Some(b"v"))]);
        for cut in 0..good.len() {
            let b = good.slice(..cut);
            assert!(
                Record::decode(&mut Reader::new(&b)).is_err(),
                "cut at {cut}"
            );
        }
        // Negative length.
        let b = Bytes::from_static(&[3]);
        assert!(matches!(
            Record::decode(&mut Reader::new(&b)),
            Err(DecodeError::Invalid { .. })
        ));
        // Length longer than the fields.
        let mut v = good.to_vec();
        v[0] += 2;
        v.push(0);
        let b = Bytes::from(v);
        assert!(matches!(
            Record::decode(&mut Reader::new(&b)),
            Err(DecodeError::Invalid { .. })
        ));
        // Header key not UTF-8.
        let mut v = good.to_vec();
        let i = v.iter().position(|&c| c == b'h').unwrap();
        v[i] = 0xff;
        let b = Bytes::from(v);
        assert!(matches!(
            Record::decode(&mut Reader::new(&b)),
            Err(DecodeError::Invalid {
                field: "RecordHeader.key",
                ..
            })
        ));
        // Huge header count.
        let mut out = BytesMut::new();
        put_varint(&mut out, 8);
        out.put_slice(&[0, 0, 0, 1, 1]);
        put_varint(&mut out, 1_000_000);
        let b = out.freeze();
        assert!(matches!(
            Record::decode(&mut Reader::new(&b)),
            Err(DecodeError::TooLarge { .. })
        ));
    }

    #[test]
    fn records_iterator_checks_count_and_trailing_bytes() {
        let one = encoded(&[]);
        let two = Bytes::from([&one[..], &one[..]].concat());
        assert_eq!(
            Records::new(two.clone(), 2).filter(Result::is_ok).count(),
            2
        );
        let mut it = Records::new(two.clone(), 1);
        assert!(it.next().unwrap().is_ok());
        assert!(it.next().unwrap().is_err());
        assert!(it.next().is_none());
        let mut it = Records::new(two, 3);
        assert!(it.by_ref().take(2).all(|r| r.is_ok()));
        assert!(matches!(
            it.next(),
            Some(Err(DecodeError::Truncated { .. }))
        ));
        assert!(it.next().is_none());
        assert_eq!(Records::empty().count(), 0);
    }
}
