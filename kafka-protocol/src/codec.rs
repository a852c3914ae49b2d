//! The runtime the generated message code is written against: a zero-copy [`Reader`] over a
//! `Bytes` frame, a [`Writer`] (in `codec/writer.rs`) that can chain large payloads instead of
//! copying them and leave registered record sets out as external chunks, the value types both
//! use, and the [`Codec`] / [`Message`] traits.

use bytes::Bytes;
use nom::IResult;

use crate::error::{DecodeError, EncodeError};
use crate::primitives;

mod writer;
pub use writer::{CHAIN_THRESHOLD, Chunk, Writer, stand_in};

/// A UTF-8 string that is a slice of a decoded frame (no copy).
#[derive(Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KStr(Bytes);

impl KStr {
    /// Wraps bytes already known to be valid UTF-8.
    pub fn from_utf8(bytes: Bytes) -> Result<Self, std::str::Utf8Error> {
        std::str::from_utf8(&bytes)?;
        Ok(Self(bytes))
    }

    /// A string from a static literal, without allocating.
    pub const fn from_static(s: &'static str) -> Self {
        Self(Bytes::from_static(s.as_bytes()))
    }

    /// The string.
    pub fn as_str(&self) -> &str {
        // The constructors only accept valid UTF-8; fall back to "" rather than panic.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }

    /// The underlying bytes (a slice of the frame it was decoded from).
    pub fn as_bytes(&self) -> &Bytes {
        &self.0
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the string is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::ops::Deref for KStr {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl std::fmt::Debug for KStr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

impl std::fmt::Display for KStr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<&'static str> for KStr {
    fn from(s: &'static str) -> Self {
        Self::from_static(s)
    }
}

impl From<String> for KStr {
    fn from(s: String) -> Self {
        Self(Bytes::from(s))
    }
}

impl PartialEq<str> for KStr {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for KStr {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// A 128-bit UUID as Kafka sends it (topic ids, directory ids), 16 big-endian bytes.
#[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Uuid(pub [u8; 16]);

impl Uuid {
    /// The all-zero id Kafka uses for "none".
    pub const ZERO: Self = Self([0; 16]);

    /// Whether this is the all-zero id.
    pub fn is_zero(&self) -> bool {
        self.0 == [0; 16]
    }
}

impl std::fmt::Debug for Uuid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, b) in self.0.iter().enumerate() {
            if matches!(i, 4 | 6 | 8 | 10) {
                f.write_str("-")?;
            }
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl std::fmt::Display for Uuid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self, f)
    }
}

/// A tagged field this code does not know, kept so that it can be written back unchanged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawTaggedField {
    pub tag: u32,
    pub data: Bytes,
}

/// The unknown tagged fields of a struct: nearly always none, so this is one word (no
/// allocation, nothing to drop) until a field arrives.
#[derive(Clone, Default, PartialEq, Eq)]
// A boxed `Vec` on purpose: one word in every generated struct instead of three.
#[allow(clippy::box_collection)]
pub struct UnknownTags(Option<Box<Vec<RawTaggedField>>>);

impl UnknownTags {
    /// No fields.
    pub const fn new() -> Self {
        Self(None)
    }

    /// Adds a field at the end.
    pub fn push(&mut self, field: RawTaggedField) {
        self.0.get_or_insert_with(Box::default).push(field);
    }

    /// The fields, in the order they were read or pushed.
    pub fn as_slice(&self) -> &[RawTaggedField] {
        self.0.as_deref().map_or(&[], Vec::as_slice)
    }
}

impl std::ops::Deref for UnknownTags {
    type Target = [RawTaggedField];
    fn deref(&self) -> &[RawTaggedField] {
        self.as_slice()
    }
}

impl std::fmt::Debug for UnknownTags {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl From<Vec<RawTaggedField>> for UnknownTags {
    fn from(v: Vec<RawTaggedField>) -> Self {
        Self((!v.is_empty()).then(|| Box::new(v)))
    }
}

impl FromIterator<RawTaggedField> for UnknownTags {
    fn from_iter<I: IntoIterator<Item = RawTaggedField>>(iter: I) -> Self {
        Self::from(iter.into_iter().collect::<Vec<_>>())
    }
}

/// An inclusive range of versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VersionRange {
    pub min: i16,
    pub max: i16,
}

impl VersionRange {
    /// Whether `v` is in the range.
    pub const fn contains(&self, v: i16) -> bool {
        v >= self.min && v <= self.max
    }
}

/// A struct of a message schema: decodes from and encodes to a given version.
pub trait Codec: Sized {
    /// Reads the struct as laid out in `version`.
    fn decode(r: &mut Reader<'_>, version: i16) -> Result<Self, DecodeError>;
    /// Writes the struct as laid out in `version`.
    fn encode(&self, w: &mut Writer, version: i16) -> Result<(), EncodeError>;
    /// A random value that `version` can carry (every field valid in that version).
    #[cfg(feature = "arbitrary")]
    fn arbitrary(u: &mut arbitrary::Unstructured<'_>, version: i16) -> arbitrary::Result<Self>;
}

/// Decodes a `T` laid out in `version`, which must be one of `T`'s (`api_key` is for the
/// error); errors carry the message and version.
pub(crate) fn decode_checked<T: Message>(
    r: &mut Reader<'_>,
    version: i16,
    api_key: i16,
) -> Result<T, DecodeError> {
    if !T::VERSIONS.contains(version) {
        return Err(DecodeError::UnsupportedVersion {
            message: T::NAME,
            api_key,
            version,
        });
    }
    T::decode(r, version).map_err(|e| e.in_message(T::NAME, version))
}

/// Encodes `m` laid out in `version`, which must be one of `T`'s.
pub(crate) fn encode_checked<T: Message>(
    m: &T,
    w: &mut Writer,
    version: i16,
) -> Result<(), EncodeError> {
    if !T::VERSIONS.contains(version) {
        return Err(EncodeError::UnsupportedVersion {
            message: T::NAME,
            version,
        });
    }
    m.encode(w, version)
        .map_err(|e| e.in_message(T::NAME, version))
}

/// A top-level message (request, response, header or data schema).
pub trait Message: Codec + Default {
    /// The schema's name, e.g. `"FetchRequest"`.
    const NAME: &'static str;
    /// Versions the schema defines.
    const VERSIONS: VersionRange;
    /// First flexible version (compact encodings and tagged fields), if any.
    const FLEXIBLE_MIN: Option<i16>;

    /// Decodes a whole message from `bytes`, which must hold nothing else.
    fn decode_from(bytes: &Bytes, version: i16) -> Result<Self, DecodeError> {
        if !Self::VERSIONS.contains(version) {
            return Err(DecodeError::UnsupportedVersion {
                message: Self::NAME,
                api_key: -1,
                version,
            });
        }
        let mut r = Reader::new(bytes);
        let v = Self::decode(&mut r, version).map_err(|e| e.in_message(Self::NAME, version))?;
        if r.remaining() != 0 {
            return Err(DecodeError::Invalid {
                field: Self::NAME,
                reason: "bytes left after the last field",
            }
            .in_message(Self::NAME, version));
        }
        Ok(v)
    }

    /// Encodes the message alone into contiguous bytes.
    fn encode_to_bytes(&self, version: i16) -> Result<Bytes, EncodeError> {
        if !Self::VERSIONS.contains(version) {
            return Err(EncodeError::UnsupportedVersion {
                message: Self::NAME,
                version,
            });
        }
        let mut w = Writer::new();
        self.encode(&mut w, version)
            .map_err(|e| e.in_message(Self::NAME, version))?;
        Ok(w.into_bytes())
    }
}

/// Maps a nom failure on `input` to a typed error for `field`.
fn nom_err(
    field: &'static str,
    need: usize,
    have: usize,
    e: nom::Err<nom::error::Error<&[u8]>>,
) -> DecodeError {
    match e {
        nom::Err::Error(inner) | nom::Err::Failure(inner)
            if inner.code == nom::error::ErrorKind::TooLarge =>
        {
            DecodeError::Invalid {
                field,
                reason: "varint is longer than its type allows",
            }
        }
        _ => DecodeError::Truncated { field, need, have },
    }
}

// The error constructors are out of line and cold, so that the readers' success paths stay
// small enough to inline into the generated code. `view` builds the same errors.

#[cold]
#[inline(never)]
pub(crate) fn truncated(field: &'static str, need: usize, have: usize) -> DecodeError {
    DecodeError::Truncated { field, need, have }
}

#[cold]
#[inline(never)]
pub(crate) fn invalid(field: &'static str, reason: &'static str) -> DecodeError {
    DecodeError::Invalid { field, reason }
}

#[cold]
#[inline(never)]
pub(crate) fn too_large(field: &'static str, len: u64, max: usize) -> DecodeError {
    DecodeError::TooLarge {
        field,
        len,
        max: max as u64,
    }
}

#[cold]
#[inline(never)]
pub(crate) fn null_not_allowed(field: &'static str, version: i16) -> DecodeError {
    DecodeError::NullNotAllowed { field, version }
}

/// Whether `b` is UTF-8, with a fast path for ASCII (nearly every string on the wire).
#[inline]
fn is_utf8(b: &[u8]) -> bool {
    b.is_ascii() || std::str::from_utf8(b).is_ok()
}

/// The most an array decode reserves up front, in bytes; a longer array grows as its elements
/// actually decode.
pub const MAX_PREALLOC_BYTES: usize = 1 << 20;

/// A cursor over a complete frame. Everything it hands out that is not a number is a slice of
/// the frame (`Bytes::slice`), so decoding copies no payload.
///
/// The small readers are always inlined in optimised builds (each generated `decode` is a
/// straight line of them; a call per field costs more than the field), and only hinted in
/// debug builds, which keeps the generated code quick to compile.
///
/// Invariant: `pos <= end <= buf.len()`.
#[derive(Debug)]
pub struct Reader<'a> {
    buf: &'a Bytes,
    pos: usize,
    end: usize,
}

impl<'a> Reader<'a> {
    /// A reader over all of `buf`.
    pub fn new(buf: &'a Bytes) -> Self {
        Self {
            buf,
            pos: 0,
            end: buf.len(),
        }
    }

    /// Bytes not yet read.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn remaining(&self) -> usize {
        self.end - self.pos
    }

    /// Current offset in the frame.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// What is left, as a slice of the frame.
    pub fn rest(&self) -> Bytes {
        if self.pos == self.end {
            // No reference count to take for nothing.
            return Bytes::new();
        }
        self.buf.slice(self.pos..self.end)
    }

    /// The unread input (empty if the invariant were ever broken, never a panic).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn input(&self) -> &'a [u8] {
        let all: &'a [u8] = self.buf;
        all.get(self.pos..self.end).unwrap_or_default()
    }

    /// The next `N` bytes, consumed.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn fixed<const N: usize>(&mut self, field: &'static str) -> Result<[u8; N], DecodeError> {
        let input = self.input();
        match input.first_chunk::<N>() {
            Some(b) => {
                self.pos += N;
                Ok(*b)
            }
            None => Err(truncated(field, N, input.len())),
        }
    }

    /// Takes the next `n` bytes as a slice of the frame.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn take(&mut self, field: &'static str, n: usize) -> Result<Bytes, DecodeError> {
        if n > self.remaining() {
            return Err(truncated(field, n, self.remaining()));
        }
        let b = self.buf.slice(self.pos..self.pos + n);
        self.pos += n;
        Ok(b)
    }

    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn bool(&mut self, field: &'static str) -> Result<bool, DecodeError> {
        Ok(self.i8(field)? != 0)
    }
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn i8(&mut self, field: &'static str) -> Result<i8, DecodeError> {
        self.fixed::<1>(field).map(i8::from_be_bytes)
    }
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn i16(&mut self, field: &'static str) -> Result<i16, DecodeError> {
        self.fixed::<2>(field).map(i16::from_be_bytes)
    }
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn u16(&mut self, field: &'static str) -> Result<u16, DecodeError> {
        self.fixed::<2>(field).map(u16::from_be_bytes)
    }
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn i32(&mut self, field: &'static str) -> Result<i32, DecodeError> {
        self.fixed::<4>(field).map(i32::from_be_bytes)
    }
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn u32(&mut self, field: &'static str) -> Result<u32, DecodeError> {
        self.fixed::<4>(field).map(u32::from_be_bytes)
    }
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn i64(&mut self, field: &'static str) -> Result<i64, DecodeError> {
        self.fixed::<8>(field).map(i64::from_be_bytes)
    }
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn f64(&mut self, field: &'static str) -> Result<f64, DecodeError> {
        self.fixed::<8>(field).map(f64::from_be_bytes)
    }
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn uuid(&mut self, field: &'static str) -> Result<Uuid, DecodeError> {
        self.fixed::<16>(field).map(Uuid)
    }

    /// Reads a varint with `p` (the general, out-of-line path).
    #[inline(never)]
    fn varint_slow<T>(
        &mut self,
        field: &'static str,
        p: impl FnOnce(&'a [u8]) -> IResult<&'a [u8], T>,
    ) -> Result<T, DecodeError> {
        let input = self.input();
        match p(input) {
            Ok((rest, v)) => {
                self.pos = self.end - rest.len();
                Ok(v)
            }
            // A varint cut short needs at least one byte more than there is.
            Err(e) => Err(nom_err(field, input.len() + 1, input.len(), e)),
        }
    }

    /// The next byte if it is a whole varint by itself (below 0x80), consumed.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn one_byte_varint(&mut self) -> Option<u8> {
        match self.input().first() {
            Some(&b) if b < 0x80 => {
                self.pos += 1;
                Some(b)
            }
            _ => None,
        }
    }

    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn uvarint(&mut self, field: &'static str) -> Result<u32, DecodeError> {
        match self.one_byte_varint() {
            Some(b) => Ok(u32::from(b)),
            None => self.varint_slow(field, primitives::uvarint),
        }
    }
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn varint(&mut self, field: &'static str) -> Result<i32, DecodeError> {
        match self.one_byte_varint() {
            Some(b) => Ok(i32::from(b >> 1) ^ -i32::from(b & 1)),
            None => self.varint_slow(field, primitives::varint),
        }
    }
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn varlong(&mut self, field: &'static str) -> Result<i64, DecodeError> {
        match self.one_byte_varint() {
            Some(b) => Ok(i64::from(b >> 1) ^ -i64::from(b & 1)),
            None => self.varint_slow(field, primitives::varlong),
        }
    }

    /// A length prefix: i16 (`wide == false`) or i32 for classic strings/bytes, unsigned varint
    /// minus one for compact ones. `None` is the null marker (-1). The length is checked
    /// against the bytes remaining, so it can never size an allocation by itself.
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
        if len > self.remaining() as u64 {
            return Err(too_large(field, len, self.remaining()));
        }
        Ok(Some(len as usize))
    }

    /// `n` bytes (checked to be there) as a string: validated, then sliced.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn str_of(&mut self, field: &'static str, n: usize) -> Result<KStr, DecodeError> {
        let input = self.input();
        match input.get(..n) {
            Some(s) if is_utf8(s) => {}
            Some(_) => return Err(invalid(field, "string is not valid UTF-8")),
            None => return Err(truncated(field, n, input.len())),
        }
        let b = self.buf.slice(self.pos..self.pos + n);
        self.pos += n;
        Ok(KStr(b))
    }

    /// A nullable string.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn nullable_string(
        &mut self,
        field: &'static str,
        flexible: bool,
    ) -> Result<Option<KStr>, DecodeError> {
        match self.length(field, flexible, false)? {
            None => Ok(None),
            Some(n) => self.str_of(field, n).map(Some),
        }
    }

    /// A string that must not be null in this version.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn string(
        &mut self,
        field: &'static str,
        flexible: bool,
        version: i16,
    ) -> Result<KStr, DecodeError> {
        match self.length(field, flexible, false)? {
            None => Err(null_not_allowed(field, version)),
            Some(n) => self.str_of(field, n),
        }
    }

    /// Nullable bytes (also used for record sets).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn nullable_bytes(
        &mut self,
        field: &'static str,
        flexible: bool,
    ) -> Result<Option<Bytes>, DecodeError> {
        match self.length(field, flexible, true)? {
            None => Ok(None),
            Some(n) => self.take(field, n).map(Some),
        }
    }

    /// Bytes that must not be null in this version.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn bytes(
        &mut self,
        field: &'static str,
        flexible: bool,
        version: i16,
    ) -> Result<Bytes, DecodeError> {
        match self.length(field, flexible, true)? {
            None => Err(null_not_allowed(field, version)),
            Some(n) => self.take(field, n),
        }
    }

    /// An array count: `None` for null. Checked against the bytes remaining (every element
    /// takes at least one byte), so it can size an allocation.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn array_count(
        &mut self,
        field: &'static str,
        flexible: bool,
    ) -> Result<Option<usize>, DecodeError> {
        let count: i64 = if flexible {
            i64::from(self.uvarint(field)?) - 1
        } else {
            i64::from(self.i32(field)?)
        };
        if count < -1 {
            return Err(invalid(field, "negative array count"));
        }
        if count == -1 {
            return Ok(None);
        }
        if count as u64 > self.remaining() as u64 {
            return Err(too_large(field, count as u64, self.remaining()));
        }
        Ok(Some(count as usize))
    }

    /// `count` elements read by `elem`, into a vector sized once (up to
    /// [`MAX_PREALLOC_BYTES`]: a count is only checked against the bytes left, and an element
    /// in memory can be far larger than its smallest encoding, so a lying count could
    /// otherwise reserve many times the frame's size).
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    fn elements<T>(
        &mut self,
        count: usize,
        mut elem: impl FnMut(&mut Self) -> Result<T, DecodeError>,
    ) -> Result<Vec<T>, DecodeError> {
        let cap = count.min(MAX_PREALLOC_BYTES / std::mem::size_of::<T>().max(1));
        let mut out = Vec::with_capacity(cap);
        for _ in 0..count {
            out.push(elem(self)?);
        }
        Ok(out)
    }

    /// A nullable array whose elements are read by `elem`. The count is checked against the
    /// bytes remaining (every element takes at least one byte) before any allocation.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn nullable_array<T>(
        &mut self,
        field: &'static str,
        flexible: bool,
        elem: impl FnMut(&mut Self) -> Result<T, DecodeError>,
    ) -> Result<Option<Vec<T>>, DecodeError> {
        match self.array_count(field, flexible)? {
            None => Ok(None),
            Some(n) => self.elements(n, elem).map(Some),
        }
    }

    /// An array that must not be null in this version.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn array<T>(
        &mut self,
        field: &'static str,
        flexible: bool,
        version: i16,
        elem: impl FnMut(&mut Self) -> Result<T, DecodeError>,
    ) -> Result<Vec<T>, DecodeError> {
        match self.array_count(field, flexible)? {
            None => Err(null_not_allowed(field, version)),
            Some(n) => self.elements(n, elem),
        }
    }

    /// The presence marker of a nullable struct field: `false` for null.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn struct_present(&mut self, field: &'static str) -> Result<bool, DecodeError> {
        Ok(self.i8(field)? >= 0)
    }

    /// A tagged-field section. `known` is called with each tag and a reader limited to its
    /// value; it returns `false` for tags it does not know, which are kept in `unknown`.
    #[cfg_attr(debug_assertions, inline)]
    #[cfg_attr(not(debug_assertions), inline(always))]
    pub fn tagged_fields(
        &mut self,
        field: &'static str,
        unknown: &mut UnknownTags,
        known: impl FnMut(u32, &mut Reader<'a>) -> Result<bool, DecodeError>,
    ) -> Result<(), DecodeError> {
        // Nearly every section is empty: one zero byte.
        if self.input().first() == Some(&0) {
            self.pos += 1;
            return Ok(());
        }
        self.tagged_fields_slow(field, unknown, known)
    }

    #[inline(never)]
    fn tagged_fields_slow(
        &mut self,
        field: &'static str,
        unknown: &mut UnknownTags,
        mut known: impl FnMut(u32, &mut Reader<'a>) -> Result<bool, DecodeError>,
    ) -> Result<(), DecodeError> {
        let count = self.uvarint(field)?;
        if count as usize > self.remaining() {
            return Err(too_large(field, u64::from(count), self.remaining()));
        }
        let mut last: Option<u32> = None;
        for _ in 0..count {
            let tag = self.uvarint(field)?;
            if last.is_some_and(|l| tag <= l) {
                return Err(invalid(field, "tagged fields out of order or repeated"));
            }
            last = Some(tag);
            let size = self.uvarint(field)? as usize;
            if size > self.remaining() {
                return Err(too_large(field, size as u64, self.remaining()));
            }
            let mut sub = Reader {
                buf: self.buf,
                pos: self.pos,
                end: self.pos + size,
            };
            if known(tag, &mut sub)? {
                if sub.remaining() != 0 {
                    return Err(invalid(field, "tagged field value shorter than its size"));
                }
            } else {
                unknown.push(RawTaggedField {
                    tag,
                    data: self.buf.slice(self.pos..self.pos + size),
                });
            }
            self.pos += size;
        }
        Ok(())
    }
}

/// Helpers the generated `arbitrary` functions use: small, bounded, version-valid values.
#[cfg(feature = "arbitrary")]
pub mod arb {
    use super::{KStr, RawTaggedField, UnknownTags, Uuid};
    use arbitrary::{Result, Unstructured};
    use bytes::Bytes;

    pub fn string(u: &mut Unstructured<'_>) -> Result<KStr> {
        let len = u.int_in_range(0..=12)?;
        let mut s = String::with_capacity(len);
        for _ in 0..len {
            // Mostly ASCII, sometimes multi-byte characters.
            let c = if u.ratio(1, 8)? {
                u.choose(&['é', 'ß', '日', '🦀'])?.to_owned()
            } else {
                char::from(u.int_in_range(b' '..=b'~')?)
            };
            s.push(c);
        }
        Ok(KStr::from(s))
    }

    pub fn bytes(u: &mut Unstructured<'_>) -> Result<Bytes> {
        let len = u.int_in_range(0..=24)?;
        Ok(Bytes::copy_from_slice(u.bytes(len)?))
    }

    pub fn uuid(u: &mut Unstructured<'_>) -> Result<Uuid> {
        Ok(Uuid(u.arbitrary()?))
    }

    pub fn f64(u: &mut Unstructured<'_>) -> Result<f64> {
        let v: f64 = u.arbitrary()?;
        Ok(if v.is_finite() { v } else { 0.5 })
    }

    pub fn len(u: &mut Unstructured<'_>) -> Result<usize> {
        u.int_in_range(0..=3)
    }

    pub fn maybe<T>(
        u: &mut Unstructured<'_>,
        nullable: bool,
        f: impl FnOnce(&mut Unstructured<'_>) -> Result<T>,
    ) -> Result<Option<T>> {
        if nullable && u.ratio(1, 5)? {
            Ok(None)
        } else {
            f(u).map(Some)
        }
    }

    pub fn vec<T>(
        u: &mut Unstructured<'_>,
        mut f: impl FnMut(&mut Unstructured<'_>) -> Result<T>,
    ) -> Result<Vec<T>> {
        let n = len(u)?;
        (0..n).map(|_| f(u)).collect()
    }

    /// Unknown tagged fields with tags no schema uses, so they stay unknown on decode.
    pub fn unknown_tags(u: &mut Unstructured<'_>) -> Result<UnknownTags> {
        if u.ratio(3, 4)? {
            return Ok(UnknownTags::new());
        }
        let n = u.int_in_range(1..=2)?;
        (0..n)
            .map(|i| {
                Ok(RawTaggedField {
                    tag: 10_000 + i,
                    data: bytes(u)?,
                })
            })
            .collect()
    }
}
