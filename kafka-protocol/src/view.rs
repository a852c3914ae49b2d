//! Borrowing views of request frames: no allocation, no reference count, everything validated
//! up front.
//!
//! [`frame::decode_request`](crate::frame::decode_request) returns owned messages: every string
//! and record set in them is a reference-counted slice of the frame and every array a `Vec`.
//! That is what a caller that keeps the message wants, but a server reading a Produce request
//! keeps little of it: it looks up the topic by name, checks the partition index, and keeps the
//! record sets. A view borrows from the frame instead: strings are `&str`, record sets `&[u8]`,
//! arrays are walked lazily by iterators. Parsing allocates nothing and touches no reference
//! count; the caller takes a reference count only for what it keeps past the frame's lifetime
//! ([`PartitionView::records_bytes`], or [`share`] for any slice of the frame), or converts the
//! whole view into the owned message ([`ProduceRequestView::to_message`]).
//!
//! [`ProduceRequestView::parse`] validates the whole frame in one pass before it returns:
//! every length and count is checked against the bytes left before it is used, strings are
//! checked to be UTF-8, tagged-field sections must be well formed (tags in increasing order,
//! each value inside the frame). It accepts exactly the frames `decode_request` accepts as a
//! Produce request, with the same errors; the values are the same too (the tests and the
//! `produce_view` fuzz target check both). The arrays are kept as their raw bytes and a count,
//! and the iterators walk them again, which cannot fail on validated bytes. Should it fail all
//! the same, an iterator ends early (and a debug build panics): it never yields a wrong value.
//!
//! Use a view on a hot path that reads a request once and keeps only parts of it (a broker's
//! Produce handler); use `decode_request` for everything else (it covers every api, and its
//! messages can be kept, changed and re-encoded).

use std::iter::FusedIterator;

use bytes::Bytes;

use crate::codec::{
    KStr, Message, RawTaggedField, UnknownTags, Uuid, invalid, null_not_allowed, too_large,
    truncated,
};
use crate::error::DecodeError;
use crate::frame::request_header_version;
use crate::messages::produce_request::{PartitionProduceData, TopicProduceData};
use crate::messages::{ApiKey, ProduceRequest, RequestHeader};

// The view follows ProduceRequest's schema as the generated code knows it (versions 0-13:
// topics by name up to v12, by id from v13). A schema update that adds versions must update
// the view too: this stops the build until it does.
const _: () = assert!(
    <ProduceRequest as Message>::VERSIONS.min == 0
        && <ProduceRequest as Message>::VERSIONS.max == 13
        && matches!(<ProduceRequest as Message>::FLEXIBLE_MIN, Some(9)),
    "ProduceRequest's schema changed: update kafka-protocol/src/view.rs"
);

/// What `Reader` reports for a varint longer than 5 bytes or over `u32::MAX`.
const VARINT_TOO_LONG: &str = "varint is longer than its type allows";

/// The first version of ProduceRequest with a transactional id.
const TRANSACTIONAL_ID_MIN: i16 = 3;

/// The first version of ProduceRequest naming topics by id (`TopicId`) instead of by name.
const TOPIC_ID_MIN: i16 = 13;

// Field names, as the generated decoder reports them.
const API_KEY: &str = "RequestHeader.RequestApiKey";
const API_VERSION: &str = "RequestHeader.RequestApiVersion";
const CORRELATION_ID: &str = "RequestHeader.CorrelationId";
const CLIENT_ID: &str = "RequestHeader.ClientId";
const HEADER_TAGS: &str = "RequestHeader._tagged_fields";
const TRANSACTIONAL_ID: &str = "ProduceRequest.TransactionalId";
const ACKS: &str = "ProduceRequest.Acks";
const TIMEOUT_MS: &str = "ProduceRequest.TimeoutMs";
const TOPIC_DATA: &str = "ProduceRequest.TopicData";
const REQUEST_TAGS: &str = "ProduceRequest._tagged_fields";
const TOPIC_NAME: &str = "TopicProduceData.Name";
const TOPIC_ID: &str = "TopicProduceData.TopicId";
const PARTITION_DATA: &str = "TopicProduceData.PartitionData";
const TOPIC_TAGS: &str = "TopicProduceData._tagged_fields";
const PARTITION_INDEX: &str = "PartitionProduceData.Index";
const RECORDS: &str = "PartitionProduceData.Records";
const PARTITION_TAGS: &str = "PartitionProduceData._tagged_fields";

/// `part` as `Bytes`: a slice of `frame` (one reference count, no copy) when `part` lies inside
/// `frame`'s memory, as everything a view returns does when `frame` holds the bytes the view
/// was parsed from; a copy otherwise (never a panic).
pub fn share(frame: &Bytes, part: &[u8]) -> Bytes {
    if part.is_empty() {
        return Bytes::new();
    }
    // Addresses only, compared as numbers: no pointer is dereferenced.
    let start = (part.as_ptr() as usize).wrapping_sub(frame.as_ptr() as usize);
    match start.checked_add(part.len()) {
        Some(end) if end <= frame.len() => frame.slice(start..end),
        _ => Bytes::copy_from_slice(part),
    }
}

/// A string of the frame as a [`KStr`] sharing `frame` (see [`share`]).
fn share_str(frame: &Bytes, s: &str) -> KStr {
    KStr::from_utf8(share(frame, s.as_bytes())).unwrap_or_else(|_| KStr::from(s.to_owned()))
}

/// The bytes read between two states of a cursor (`now` is a suffix of `start`).
fn consumed<'a>(start: &'a [u8], now: &'a [u8]) -> &'a [u8] {
    start
        .get(..start.len().saturating_sub(now.len()))
        .unwrap_or_default()
}

/// A cursor over the unread input. Its readers return the same errors as
/// [`Reader`](crate::codec::Reader)'s for the same input.
#[derive(Debug, Clone, Copy)]
struct Cursor<'a> {
    input: &'a [u8],
}

impl<'a> Cursor<'a> {
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn fixed<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], DecodeError> {
        match self.input.split_first_chunk::<N>() {
            Some((b, rest)) => {
                self.input = rest;
                Ok(*b)
            }
            None => Err(truncated(field, N, self.input.len())),
        }
    }

    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn i16(&mut self, field: &'static str) -> Result<i16, DecodeError> {
        self.fixed::<2>(field).map(i16::from_be_bytes)
    }

    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn i32(&mut self, field: &'static str) -> Result<i32, DecodeError> {
        self.fixed::<4>(field).map(i32::from_be_bytes)
    }

    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn uvarint(&mut self, field: &'static str) -> Result<u32, DecodeError> {
        match self.input.split_first() {
            Some((&b, rest)) if b < 0x80 => {
                self.input = rest;
                Ok(u32::from(b))
            }
            _ => self.uvarint_slow(field),
        }
    }

    /// A varint of two bytes or more: `primitives::uvarint` written out (its nom form costs
    /// more on the record-set lengths of every partition), with the errors `Reader` makes of
    /// its failures.
    #[inline(never)]
    fn uvarint_slow(&mut self, field: &'static str) -> Result<u32, DecodeError> {
        let input = self.input;
        let mut value: u64 = 0;
        for (i, &b) in input.iter().enumerate() {
            if i >= 5 {
                return Err(invalid(field, VARINT_TOO_LONG));
            }
            value |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                let Ok(v) = u32::try_from(value) else {
                    return Err(invalid(field, VARINT_TOO_LONG));
                };
                self.input = input.get(i + 1..).unwrap_or_default();
                return Ok(v);
            }
        }
        Err(truncated(field, input.len() + 1, input.len()))
    }

    /// The next `n` bytes, consumed.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn take(&mut self, field: &'static str, n: usize) -> Result<&'a [u8], DecodeError> {
        match self.input.split_at_checked(n) {
            Some((b, rest)) => {
                self.input = rest;
                Ok(b)
            }
            None => Err(truncated(field, n, self.input.len())),
        }
    }

    /// A length prefix, as `Reader::length`: `None` for null, checked against the input left.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn length(
        &mut self,
        field: &'static str,
        flexible: bool,
        wide: bool,
    ) -> Result<Option<usize>, DecodeError> {
        let len: i64 = if flexible {
            i64::from(self.uvarint(field)?) - 1
        } else if wide {
            i64::from(self.i32(field)?)
        } else {
            i64::from(self.i16(field)?)
        };
        if len < -1 {
            return Err(invalid(field, "negative length"));
        }
        if len == -1 {
            return Ok(None);
        }
        let len = len as u64;
        if len > self.input.len() as u64 {
            return Err(too_large(field, len, self.input.len()));
        }
        Ok(Some(len as usize))
    }

    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn str_of(&mut self, field: &'static str, n: usize) -> Result<&'a str, DecodeError> {
        let b = self.take(field, n)?;
        std::str::from_utf8(b).map_err(|_| invalid(field, "string is not valid UTF-8"))
    }

    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn nullable_string(
        &mut self,
        field: &'static str,
        flexible: bool,
    ) -> Result<Option<&'a str>, DecodeError> {
        match self.length(field, flexible, false)? {
            None => Ok(None),
            Some(n) => self.str_of(field, n).map(Some),
        }
    }

    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn string(
        &mut self,
        field: &'static str,
        flexible: bool,
        version: i16,
    ) -> Result<&'a str, DecodeError> {
        match self.length(field, flexible, false)? {
            None => Err(null_not_allowed(field, version)),
            Some(n) => self.str_of(field, n),
        }
    }

    /// A string that must not be null, checked but not returned: the validating pass over
    /// arrays, which keeps nothing, skips building the `&str` (ASCII, nearly every name, is
    /// checked without a call).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn check_string(
        &mut self,
        field: &'static str,
        flexible: bool,
        version: i16,
    ) -> Result<(), DecodeError> {
        match self.length(field, flexible, false)? {
            None => Err(null_not_allowed(field, version)),
            Some(n) => {
                let b = self.take(field, n)?;
                if b.is_ascii() || std::str::from_utf8(b).is_ok() {
                    Ok(())
                } else {
                    Err(invalid(field, "string is not valid UTF-8"))
                }
            }
        }
    }

    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn nullable_bytes(
        &mut self,
        field: &'static str,
        flexible: bool,
    ) -> Result<Option<&'a [u8]>, DecodeError> {
        match self.length(field, flexible, true)? {
            None => Ok(None),
            Some(n) => self.take(field, n).map(Some),
        }
    }

    /// A non-null array: the count (checked against the input left, as `Reader` does), then
    /// `count` elements validated by `elem`. Returns the elements' bytes and the count.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn array(
        &mut self,
        field: &'static str,
        flexible: bool,
        version: i16,
        mut elem: impl FnMut(&mut Self) -> Result<(), DecodeError>,
    ) -> Result<(&'a [u8], usize), DecodeError> {
        let count: i64 = if flexible {
            i64::from(self.uvarint(field)?) - 1
        } else {
            i64::from(self.i32(field)?)
        };
        if count < -1 {
            return Err(invalid(field, "negative array count"));
        }
        if count == -1 {
            return Err(null_not_allowed(field, version));
        }
        if count as u64 > self.input.len() as u64 {
            return Err(too_large(field, count as u64, self.input.len()));
        }
        let start = self.input;
        for _ in 0..count {
            elem(self)?;
        }
        Ok((consumed(start, self.input), count as usize))
    }

    /// A tagged-field section, validated as `Reader::tagged_fields` does (no tag is known to
    /// these structs, so every field is kept raw).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn tagged_fields(&mut self, field: &'static str) -> Result<TaggedFields<'a>, DecodeError> {
        // Nearly every section is empty: one zero byte.
        match self.input.split_first() {
            Some((0, rest)) => {
                self.input = rest;
                Ok(TaggedFields::EMPTY)
            }
            _ => self.tagged_fields_slow(field),
        }
    }

    #[inline(never)]
    fn tagged_fields_slow(&mut self, field: &'static str) -> Result<TaggedFields<'a>, DecodeError> {
        let count = self.uvarint(field)?;
        if count as usize > self.input.len() {
            return Err(too_large(field, u64::from(count), self.input.len()));
        }
        let start = self.input;
        let mut last: Option<u32> = None;
        for _ in 0..count {
            let tag = self.uvarint(field)?;
            if last.is_some_and(|l| tag <= l) {
                return Err(invalid(field, "tagged fields out of order or repeated"));
            }
            last = Some(tag);
            let size = self.uvarint(field)? as usize;
            if size > self.input.len() {
                return Err(too_large(field, size as u64, self.input.len()));
            }
            self.take(field, size)?;
        }
        Ok(TaggedFields {
            raw: consumed(start, self.input),
            count,
        })
    }
}

/// The next element of an iterator that re-reads validated bytes, counting it off `left`.
/// Parsing validated those bytes, so `read` is never an error; if it were (the view and its
/// iterators disagreeing), the iterator ends instead of yielding a wrong value, and a debug
/// build stops here.
#[inline]
fn rewalked<T, L>(read: Result<T, DecodeError>, left: &mut L) -> Option<T>
where
    L: Copy + From<u8> + std::ops::SubAssign,
{
    debug_assert!(
        read.is_ok(),
        "re-reading validated bytes failed: {:?} (the view and its iterators disagree)",
        read.as_ref().err()
    );
    match read {
        Ok(item) => {
            *left -= L::from(1);
            Some(item)
        }
        Err(_) => {
            *left = L::from(0);
            None
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Tagged fields

/// A validated tagged-field section: the fields this crate does not know (none is known in
/// the Produce request or the request header), in wire order, as `(tag, value)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaggedFields<'a> {
    /// The fields' bytes, after the count.
    raw: &'a [u8],
    count: u32,
}

impl<'a> TaggedFields<'a> {
    const EMPTY: Self = Self { raw: &[], count: 0 };

    /// How many fields.
    #[inline]
    pub fn len(&self) -> usize {
        self.count as usize
    }

    /// Whether there are none (always so in non-flexible versions).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The fields, in wire order (tags increasing).
    #[inline]
    pub fn iter(&self) -> TaggedFieldIter<'a> {
        TaggedFieldIter {
            rest: Cursor { input: self.raw },
            left: self.count,
        }
    }

    /// The fields as the owned messages keep them, sharing `frame` (see [`share`]).
    pub fn to_unknown_tags(&self, frame: &Bytes) -> UnknownTags {
        self.iter()
            .map(|(tag, data)| RawTaggedField {
                tag,
                data: share(frame, data),
            })
            .collect()
    }
}

impl<'a> IntoIterator for TaggedFields<'a> {
    type Item = (u32, &'a [u8]);
    type IntoIter = TaggedFieldIter<'a>;
    #[inline]
    fn into_iter(self) -> TaggedFieldIter<'a> {
        self.iter()
    }
}

/// The fields of a [`TaggedFields`] section, as `(tag, value)`.
#[derive(Debug, Clone)]
pub struct TaggedFieldIter<'a> {
    rest: Cursor<'a>,
    left: u32,
}

impl<'a> Iterator for TaggedFieldIter<'a> {
    type Item = (u32, &'a [u8]);

    #[inline]
    fn next(&mut self) -> Option<(u32, &'a [u8])> {
        if self.left == 0 {
            return None;
        }
        let field = "tagged fields";
        let c = &mut self.rest;
        let read = c.uvarint(field).and_then(|tag| {
            let size = c.uvarint(field)? as usize;
            Ok((tag, c.take(field, size)?))
        });
        rewalked(read, &mut self.left)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left as usize, Some(self.left as usize))
    }
}

impl FusedIterator for TaggedFieldIter<'_> {}

// ---------------------------------------------------------------------------------------------
// Request header

/// The request header of a frame, borrowed from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestHeaderView<'a> {
    api_key: i16,
    api_version: i16,
    correlation_id: i32,
    client_id: Option<&'a str>,
    header_version: i16,
    tagged: TaggedFields<'a>,
}

impl<'a> RequestHeaderView<'a> {
    /// Reads a header in version `hv` (0-2).
    fn parse(c: &mut Cursor<'a>, hv: i16) -> Result<Self, DecodeError> {
        let api_key = c.i16(API_KEY)?;
        let api_version = c.i16(API_VERSION)?;
        let correlation_id = c.i32(CORRELATION_ID)?;
        // The client id keeps its classic (i16) length even in flexible headers.
        let client_id = if hv >= 1 {
            c.nullable_string(CLIENT_ID, false)?
        } else {
            Some("")
        };
        let tagged = if hv >= 2 {
            c.tagged_fields(HEADER_TAGS)?
        } else {
            TaggedFields::EMPTY
        };
        Ok(Self {
            api_key,
            api_version,
            correlation_id,
            client_id,
            header_version: hv,
            tagged,
        })
    }

    /// `RequestApiKey`.
    #[inline]
    pub fn api_key(&self) -> i16 {
        self.api_key
    }

    /// `RequestApiVersion`: the version of the request body.
    #[inline]
    pub fn api_version(&self) -> i16 {
        self.api_version
    }

    /// `CorrelationId`.
    #[inline]
    pub fn correlation_id(&self) -> i32 {
        self.correlation_id
    }

    /// `ClientId` (null is `None`).
    #[inline]
    pub fn client_id(&self) -> Option<&'a str> {
        self.client_id
    }

    /// The header's own version (1, or 2 for flexible request versions; see
    /// [`request_header_version`]).
    #[inline]
    pub fn header_version(&self) -> i16 {
        self.header_version
    }

    /// The header's tagged fields (header version 2), none of which this crate knows.
    #[inline]
    pub fn tagged_fields(&self) -> TaggedFields<'a> {
        self.tagged
    }

    /// The owned header, equal to what [`decode_request`](crate::frame::decode_request)
    /// returns; its strings share `frame`, the bytes this view was parsed from (see [`share`]).
    pub fn to_message(&self, frame: &Bytes) -> RequestHeader {
        RequestHeader {
            request_api_key: self.api_key,
            request_api_version: self.api_version,
            correlation_id: self.correlation_id,
            client_id: self.client_id.map(|s| share_str(frame, s)),
            unknown_tagged_fields: self.tagged.to_unknown_tags(frame),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Produce request

/// A Produce request (api key 0, every version the codec supports: 0-13), borrowed from its
/// frame; see the [module documentation](self).
///
/// ```
/// use kafka_protocol::view::ProduceRequestView;
/// # fn visit(frame: &[u8]) -> Result<(), kafka_protocol::DecodeError> {
/// let (header, produce) = ProduceRequestView::parse(frame)?;
/// for topic in produce.topics() {
///     for partition in topic.partitions() {
///         let _ = (header.correlation_id(), topic.name(), partition.index(), partition.records());
///     }
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProduceRequestView<'a> {
    version: i16,
    transactional_id: Option<&'a str>,
    acks: i16,
    timeout_ms: i32,
    topics: Topics<'a>,
    tagged: TaggedFields<'a>,
    trailing: &'a [u8],
}

impl<'a> ProduceRequestView<'a> {
    /// Parses and validates a whole request frame (header and body, without the 4-byte size
    /// prefix, as [`decode_request`](crate::frame::decode_request) takes it). Nothing is
    /// allocated when it succeeds (an error carries its context boxed, as `decode_request`'s
    /// do). Errors are those of `decode_request`, plus [`DecodeError::UnexpectedApiKey`] for a
    /// request of another (known) api.
    pub fn parse(frame: &'a [u8]) -> Result<(RequestHeaderView<'a>, Self), DecodeError> {
        // As `frame::peek_request`: the fixed prefix first, its errors without context.
        let mut c = Cursor { input: frame };
        let api_key = c.i16(API_KEY)?;
        let version = c.i16(API_VERSION)?;
        c.i32(CORRELATION_ID)?;
        if api_key != ApiKey::Produce as i16 {
            return Err(match ApiKey::from_i16(api_key) {
                None => DecodeError::UnknownApiKey { api_key },
                Some(_) => DecodeError::UnexpectedApiKey {
                    expected: ApiKey::Produce.name(),
                    expected_api_key: ApiKey::Produce as i16,
                    api_key,
                    version,
                },
            });
        }
        Self::check_version(version)?;
        let hv = request_header_version(ApiKey::Produce, version);
        let mut c = Cursor { input: frame };
        let header =
            RequestHeaderView::parse(&mut c, hv).map_err(|e| e.in_message("RequestHeader", hv))?;
        let body = Self::parse_fields(&mut c, version)
            .map_err(|e| e.in_message(ApiKey::Produce.name(), version))?;
        Ok((header, body))
    }

    /// Parses and validates a request body of `version` (the bytes after the request header),
    /// for a caller that has read the header itself. Bytes after the last field are
    /// [`trailing`](Self::trailing).
    pub fn parse_body(body: &'a [u8], version: i16) -> Result<Self, DecodeError> {
        Self::check_version(version)?;
        Self::parse_fields(&mut Cursor { input: body }, version)
            .map_err(|e| e.in_message(ApiKey::Produce.name(), version))
    }

    fn check_version(version: i16) -> Result<(), DecodeError> {
        if ApiKey::Produce.versions().contains(version) {
            Ok(())
        } else {
            Err(DecodeError::UnsupportedVersion {
                message: ApiKey::Produce.name(),
                api_key: ApiKey::Produce as i16,
                version,
            })
        }
    }

    /// The body, every byte of it validated.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn parse_fields(c: &mut Cursor<'a>, v: i16) -> Result<Self, DecodeError> {
        let flex = is_flexible(v);
        let transactional_id = if v >= TRANSACTIONAL_ID_MIN {
            c.nullable_string(TRANSACTIONAL_ID, flex)?
        } else {
            None
        };
        let acks = c.i16(ACKS)?;
        let timeout_ms = c.i32(TIMEOUT_MS)?;
        let (raw, count) = c.array(TOPIC_DATA, flex, v, |c| TopicView::check(c, v))?;
        let tagged = if flex {
            c.tagged_fields(REQUEST_TAGS)?
        } else {
            TaggedFields::EMPTY
        };
        Ok(Self {
            version: v,
            transactional_id,
            acks,
            timeout_ms,
            topics: Topics::new(raw, count, v),
            tagged,
            trailing: c.input,
        })
    }

    /// The request version.
    #[inline]
    pub fn version(&self) -> i16 {
        self.version
    }

    /// `TransactionalId` (versions 3+; `None` before, and when null).
    #[inline]
    pub fn transactional_id(&self) -> Option<&'a str> {
        self.transactional_id
    }

    /// `Acks`.
    #[inline]
    pub fn acks(&self) -> i16 {
        self.acks
    }

    /// `TimeoutMs`.
    #[inline]
    pub fn timeout_ms(&self) -> i32 {
        self.timeout_ms
    }

    /// `TopicData`: each topic to produce to.
    #[inline]
    pub fn topics(&self) -> Topics<'a> {
        self.topics
    }

    /// The body's tagged fields (flexible versions), none of which this crate knows.
    #[inline]
    pub fn tagged_fields(&self) -> TaggedFields<'a> {
        self.tagged
    }

    /// The bytes after the body's last field. Kafka ignores them, and so does the view (as
    /// `decode_request`, which returns them as `Request::trailing`); some clients send a few.
    #[inline]
    pub fn trailing(&self) -> &'a [u8] {
        self.trailing
    }

    /// The owned message, equal to the body [`decode_request`](crate::frame::decode_request)
    /// returns; its strings and record sets share `frame`, the bytes this view was parsed from
    /// (see [`share`]). Allocates as the owned decode does.
    pub fn to_message(&self, frame: &Bytes) -> ProduceRequest {
        ProduceRequest {
            transactional_id: self.transactional_id.map(|s| share_str(frame, s)),
            acks: self.acks,
            timeout_ms: self.timeout_ms,
            topic_data: self.topics.iter().map(|t| t.to_message(frame)).collect(),
            unknown_tagged_fields: self.tagged.to_unknown_tags(frame),
        }
    }
}

fn is_flexible(version: i16) -> bool {
    <ProduceRequest as Message>::FLEXIBLE_MIN.is_some_and(|min| version >= min)
}

/// An array of a view: its elements' raw bytes (validated when the view was parsed) and
/// their count, read again element by element by its iterator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArrayView<'a, E> {
    /// The elements' bytes, after the count.
    raw: &'a [u8],
    count: usize,
    /// The request version the elements are read in.
    version: i16,
    element: std::marker::PhantomData<E>,
}

/// The `TopicData` array of a Produce request.
pub type Topics<'a> = ArrayView<'a, TopicView<'a>>;
/// The `PartitionData` array of a topic.
pub type Partitions<'a> = ArrayView<'a, PartitionView<'a>>;
/// The topics of a [`Topics`] array.
pub type TopicIter<'a> = ArrayIter<'a, TopicView<'a>>;
/// The partitions of a [`Partitions`] array.
pub type PartitionIter<'a> = ArrayIter<'a, PartitionView<'a>>;

mod element {
    /// An element of an [`ArrayView`](super::ArrayView): read from validated bytes.
    pub trait Element<'a>: Sized {
        #[doc(hidden)]
        fn read(input: &mut &'a [u8], version: i16) -> Result<Self, crate::DecodeError>;
    }
}
use element::Element;

impl<'a, E> ArrayView<'a, E> {
    fn new(raw: &'a [u8], count: usize, version: i16) -> Self {
        Self {
            raw,
            count,
            version,
            element: std::marker::PhantomData,
        }
    }

    /// How many elements.
    #[inline]
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether there are none.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The elements, in wire order.
    #[inline]
    pub fn iter(&self) -> ArrayIter<'a, E> {
        ArrayIter {
            rest: self.raw,
            left: self.count,
            version: self.version,
            element: std::marker::PhantomData,
        }
    }
}

impl<'a, E: Element<'a>> IntoIterator for ArrayView<'a, E> {
    type Item = E;
    type IntoIter = ArrayIter<'a, E>;
    #[inline]
    fn into_iter(self) -> ArrayIter<'a, E> {
        self.iter()
    }
}

/// The elements of an [`ArrayView`].
#[derive(Debug, Clone)]
pub struct ArrayIter<'a, E> {
    rest: &'a [u8],
    left: usize,
    version: i16,
    element: std::marker::PhantomData<E>,
}

impl<'a, E: Element<'a>> Iterator for ArrayIter<'a, E> {
    type Item = E;

    #[inline]
    fn next(&mut self) -> Option<E> {
        if self.left == 0 {
            return None;
        }
        rewalked(E::read(&mut self.rest, self.version), &mut self.left)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

impl<'a, E: Element<'a>> FusedIterator for ArrayIter<'a, E> {}

impl<'a> Element<'a> for TopicView<'a> {
    #[inline]
    fn read(input: &mut &'a [u8], version: i16) -> Result<Self, DecodeError> {
        let mut c = Cursor { input };
        let topic = TopicView::parse(&mut c, version);
        *input = c.input;
        topic
    }
}

impl<'a> Element<'a> for PartitionView<'a> {
    #[inline]
    fn read(input: &mut &'a [u8], version: i16) -> Result<Self, DecodeError> {
        let mut c = Cursor { input };
        let partition = PartitionView::parse(&mut c, is_flexible(version));
        *input = c.input;
        partition
    }
}

/// One topic of a Produce request (`TopicProduceData`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopicView<'a> {
    name: &'a str,
    topic_id: Uuid,
    partitions: Partitions<'a>,
    tagged: TaggedFields<'a>,
}

impl<'a> TopicView<'a> {
    /// Validates one topic, its partitions included, as [`Self::parse`] reads it: the same
    /// reads and errors, without building the view.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn check(c: &mut Cursor<'a>, v: i16) -> Result<(), DecodeError> {
        let flex = is_flexible(v);
        if v < TOPIC_ID_MIN {
            c.check_string(TOPIC_NAME, flex, v)?;
        } else {
            c.fixed::<16>(TOPIC_ID)?;
        }
        c.array(PARTITION_DATA, flex, v, |c| {
            PartitionView::parse(c, flex).map(drop)
        })?;
        if flex {
            c.tagged_fields(TOPIC_TAGS)?;
        }
        Ok(())
    }

    /// Reads and validates one topic, its partitions included.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn parse(c: &mut Cursor<'a>, v: i16) -> Result<Self, DecodeError> {
        let flex = is_flexible(v);
        let (name, topic_id) = if v < TOPIC_ID_MIN {
            (c.string(TOPIC_NAME, flex, v)?, Uuid::ZERO)
        } else {
            ("", Uuid(c.fixed::<16>(TOPIC_ID)?))
        };
        let (raw, count) = c.array(PARTITION_DATA, flex, v, |c| {
            PartitionView::parse(c, flex).map(drop)
        })?;
        let tagged = if flex {
            c.tagged_fields(TOPIC_TAGS)?
        } else {
            TaggedFields::EMPTY
        };
        Ok(Self {
            name,
            topic_id,
            partitions: Partitions::new(raw, count, v),
            tagged,
        })
    }

    /// `Name`: the topic name (versions 0-12; empty from v13, which names the topic by id).
    #[inline]
    pub fn name(&self) -> &'a str {
        self.name
    }

    /// `TopicId`: the topic id (versions 13+; [`Uuid::ZERO`] before).
    #[inline]
    pub fn topic_id(&self) -> Uuid {
        self.topic_id
    }

    /// `PartitionData`: each partition to produce to.
    #[inline]
    pub fn partitions(&self) -> Partitions<'a> {
        self.partitions
    }

    /// The topic's tagged fields (flexible versions), none of which this crate knows.
    #[inline]
    pub fn tagged_fields(&self) -> TaggedFields<'a> {
        self.tagged
    }

    /// The owned topic, sharing `frame` (see [`ProduceRequestView::to_message`]).
    pub fn to_message(&self, frame: &Bytes) -> TopicProduceData {
        TopicProduceData {
            name: share_str(frame, self.name),
            topic_id: self.topic_id,
            partition_data: self
                .partitions
                .iter()
                .map(|p| p.to_message(frame))
                .collect(),
            unknown_tagged_fields: self.tagged.to_unknown_tags(frame),
        }
    }
}

/// One partition of a topic (`PartitionProduceData`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionView<'a> {
    index: i32,
    records: Option<&'a [u8]>,
    tagged: TaggedFields<'a>,
}

impl<'a> PartitionView<'a> {
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn parse(c: &mut Cursor<'a>, flex: bool) -> Result<Self, DecodeError> {
        let index = c.i32(PARTITION_INDEX)?;
        let records = c.nullable_bytes(RECORDS, flex)?;
        let tagged = if flex {
            c.tagged_fields(PARTITION_TAGS)?
        } else {
            TaggedFields::EMPTY
        };
        Ok(Self {
            index,
            records,
            tagged,
        })
    }

    /// `Index`: the partition index.
    #[inline]
    pub fn index(&self) -> i32 {
        self.index
    }

    /// `Records`: the record set, a slice of the frame (`None` when null). Not parsed: read
    /// it with [`crate::record`].
    #[inline]
    pub fn records(&self) -> Option<&'a [u8]> {
        self.records
    }

    /// The record set as `Bytes` sharing `frame`, the bytes this view was parsed from: one
    /// reference count, no copy (see [`share`]; a copy if `frame` does not hold them).
    #[inline]
    pub fn records_bytes(&self, frame: &Bytes) -> Option<Bytes> {
        self.records.map(|r| share(frame, r))
    }

    /// The partition's tagged fields (flexible versions), none of which this crate knows.
    #[inline]
    pub fn tagged_fields(&self) -> TaggedFields<'a> {
        self.tagged
    }

    /// The owned partition, sharing `frame` (see [`ProduceRequestView::to_message`]).
    pub fn to_message(&self, frame: &Bytes) -> PartitionProduceData {
        PartitionProduceData {
            index: self.index,
            records: self.records_bytes(frame),
            unknown_tagged_fields: self.tagged.to_unknown_tags(frame),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::Reader;

    /// `Cursor::uvarint` (its hand-written slow path included) reads what `Reader::uvarint`
    /// reads, takes as many bytes, and fails with the same error.
    #[test]
    fn cursor_varints_are_reader_varints() {
        let check = |input: &[u8]| {
            let bytes = Bytes::copy_from_slice(input);
            let mut r = Reader::new(&bytes);
            let want = r.uvarint("v").map(|v| (v, r.remaining()));
            let mut c = Cursor { input };
            let got = c.uvarint("v").map(|v| (v, c.input.len()));
            assert_eq!(got, want, "{input:02x?}");
        };
        // Every input of up to two bytes.
        check(&[]);
        for a in 0..=255u8 {
            check(&[a]);
            for b in 0..=255u8 {
                check(&[a, b]);
            }
        }
        // Longer ones around the 5-byte and 32-bit limits, and pseudo-random ones.
        let mut x = 0x1234_5678_9abc_def0u64;
        for len in 3..=8 {
            for fill in [0x80, 0xff] {
                for last in [0x00, 0x01, 0x0f, 0x10, 0x7f, 0x80] {
                    let mut v = vec![fill; len - 1];
                    v.push(last);
                    check(&v);
                    v.push(0x42);
                    check(&v);
                }
            }
            for _ in 0..2000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                check(&x.to_le_bytes()[..len]);
            }
        }
    }
}
