//! The encoding half of [`crate::codec`]: the [`Writer`] generated encoders write into. It
//! copies small values into a growing buffer and chains large payloads (the caller's `Bytes`)
//! instead of copying them. A caller that sends some record sets by other means (a broker
//! sending file regions with `sendfile`) registers each as an external before encoding: the
//! writer then writes its true length and leaves a [`Chunk::External`] where its bytes go.
//!
//! Imports the value types of [`crate::codec`] (its parent), the crate's errors and
//! primitives; nothing imports this module but through the parent's re-exports.

use bytes::{BufMut, Bytes, BytesMut};

use super::{KStr, RawTaggedField, Uuid};
use crate::error::EncodeError;
use crate::primitives;

/// Payloads at least this long are chained into the output instead of copied (so a caller
/// can recognise its own `Bytes` among the chunks of [`Writer::into_chunks`]).
pub const CHAIN_THRESHOLD: usize = 4096;

/// A fresh stand-in for an external record set: one byte in an allocation of its own, to put
/// in a records field in place of the data and register with [`Writer::register_external`].
/// It is recognised by identity (this allocation, this length), never by its content.
pub fn stand_in() -> Bytes {
    Bytes::from(vec![0u8])
}

/// One piece of an encoded message, from [`Writer::into_external_chunks`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Chunk {
    /// Bytes of the message.
    Bytes(Bytes),
    /// The record set registered as external number `n` (numbered from 0 in registration
    /// order): its length prefix ends the bytes before; its data is the caller's to send here.
    External(usize),
}

/// A record set registered with [`Writer::register_external`].
#[derive(Debug)]
struct External {
    stand_in: Bytes,
    /// The true length of the record set.
    len: usize,
    /// How many times a records field wrote it (exactly once is right).
    written: usize,
}

/// Encoding output: a growing buffer plus, for large byte fields and record sets, the
/// caller's `Bytes` chained in place (no copy), and the places of external record sets, if
/// any were registered.
#[derive(Debug, Default)]
pub struct Writer {
    buf: BytesMut,
    chunks: Vec<Bytes>,
    chunked_len: usize,
    /// Registered external record sets, by number; empty for nearly every writer.
    externals: Vec<External>,
    /// Where external record sets were written, in order: (the index in `chunks` they come
    /// before, their number).
    external_at: Vec<(usize, usize)>,
}

impl Writer {
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes written so far (external record sets counted at their true length).
    pub fn len(&self) -> usize {
        self.chunked_len + self.buf.len()
    }

    /// Whether nothing was written.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The output as a list of chunks, in order (for vectored writes). External record sets
    /// are not in it: a writer with registrations is finished with
    /// [`into_external_chunks`](Self::into_external_chunks).
    pub fn into_chunks(mut self) -> Vec<Bytes> {
        if !self.buf.is_empty() {
            self.chunks.push(self.buf.freeze());
        }
        self.chunks
    }

    /// Registers a record set that the caller sends itself, `len` bytes long, for which
    /// `stand_in` stands in the message's value (see [`stand_in`]). When a records field holds
    /// that stand-in (the same allocation and length: a clone of it, not equal bytes held
    /// elsewhere), the writer writes `len` as the field's length and leaves
    /// [`Chunk::External`] with the returned number in the output instead of any bytes.
    ///
    /// Refused: an empty stand-in (it has no allocation of its own to recognise) and one
    /// already registered. The writer holds the stand-in, so no other `Bytes` can come to
    /// share its address while it is registered.
    pub fn register_external(&mut self, stand_in: Bytes, len: usize) -> Result<usize, EncodeError> {
        if stand_in.is_empty() {
            return Err(EncodeError::ExternalRefused {
                reason: "an empty stand-in cannot be told apart from other empty values",
            });
        }
        if self.external_number(&stand_in).is_some() {
            return Err(EncodeError::ExternalRefused {
                reason: "this stand-in is already registered",
            });
        }
        self.externals.push(External {
            stand_in,
            len,
            written: 0,
        });
        Ok(self.externals.len() - 1)
    }

    /// The number of the external whose stand-in `b` is, if any.
    fn external_number(&self, b: &Bytes) -> Option<usize> {
        self.externals.iter().position(|e| {
            e.stand_in.len() == b.len() && std::ptr::eq(e.stand_in.as_ptr(), b.as_ptr())
        })
    }

    /// The output as chunks, in order, with [`Chunk::External`] where each registered record
    /// set goes. Fails when a registered stand-in was not written by a records field exactly
    /// once (the message has no records field for it, put it in another kind of field, or
    /// holds it twice): the caller must not send such a message.
    pub fn into_external_chunks(mut self) -> Result<Vec<Chunk>, EncodeError> {
        if let Some((number, e)) = self
            .externals
            .iter()
            .enumerate()
            .find(|(_, e)| e.written != 1)
        {
            return Err(EncodeError::ExternalNotOnce {
                number,
                written: e.written,
            });
        }
        if !self.buf.is_empty() {
            self.chunks.push(self.buf.freeze());
        }
        let mut out = Vec::with_capacity(self.chunks.len() + self.external_at.len());
        let mut at = self.external_at.into_iter().peekable();
        for (i, c) in self.chunks.into_iter().enumerate() {
            while let Some((_, n)) = at.next_if(|(before, _)| *before == i) {
                out.push(Chunk::External(n));
            }
            out.push(Chunk::Bytes(c));
        }
        out.extend(at.map(|(_, n)| Chunk::External(n)));
        Ok(out)
    }

    /// The output as one contiguous buffer (copies chained chunks, if any).
    pub fn into_bytes(self) -> Bytes {
        if self.chunks.is_empty() {
            return self.buf.freeze();
        }
        let mut out = BytesMut::with_capacity(self.len());
        for c in self.into_chunks() {
            out.extend_from_slice(&c);
        }
        out.freeze()
    }

    pub fn bool(&mut self, v: bool) {
        self.buf.put_u8(u8::from(v));
    }
    pub fn i8(&mut self, v: i8) {
        self.buf.put_i8(v);
    }
    pub fn i16(&mut self, v: i16) {
        self.buf.put_i16(v);
    }
    pub fn u16(&mut self, v: u16) {
        self.buf.put_u16(v);
    }
    pub fn i32(&mut self, v: i32) {
        self.buf.put_i32(v);
    }
    pub fn u32(&mut self, v: u32) {
        self.buf.put_u32(v);
    }
    pub fn i64(&mut self, v: i64) {
        self.buf.put_i64(v);
    }
    pub fn f64(&mut self, v: f64) {
        self.buf.put_f64(v);
    }
    pub fn uuid(&mut self, v: &Uuid) {
        self.buf.put_slice(&v.0);
    }
    pub fn uvarint(&mut self, v: u32) {
        primitives::put_uvarint(&mut self.buf, v);
    }
    pub fn varint(&mut self, v: i32) {
        primitives::put_varint(&mut self.buf, v);
    }
    pub fn varlong(&mut self, v: i64) {
        primitives::put_varlong(&mut self.buf, v);
    }

    /// Raw bytes, copied (small) or chained (large).
    pub fn raw(&mut self, b: &Bytes) {
        if b.len() >= CHAIN_THRESHOLD {
            self.end_chunk();
            self.chunked_len += b.len();
            self.chunks.push(b.clone());
        } else {
            self.buf.put_slice(b);
        }
    }

    /// Moves what the buffer holds into a chunk of its own.
    fn end_chunk(&mut self) {
        if !self.buf.is_empty() {
            let head = self.buf.split().freeze();
            self.chunked_len += head.len();
            self.chunks.push(head);
        }
    }

    fn length(
        &mut self,
        field: &'static str,
        flexible: bool,
        wide: bool,
        len: Option<usize>,
    ) -> Result<(), EncodeError> {
        match (flexible, len) {
            (true, None) => self.uvarint(0),
            (true, Some(n)) => {
                let n = u32::try_from(n)
                    .ok()
                    .filter(|n| *n < u32::MAX && (!wide || *n <= i32::MAX as u32))
                    .ok_or(EncodeError::TooLarge { field, len: n })?;
                self.uvarint(n + 1);
            }
            (false, None) if wide => self.i32(-1),
            (false, None) => self.i16(-1),
            (false, Some(n)) if wide => {
                self.i32(i32::try_from(n).map_err(|_| EncodeError::TooLarge { field, len: n })?)
            }
            (false, Some(n)) => {
                self.i16(i16::try_from(n).map_err(|_| EncodeError::TooLarge { field, len: n })?)
            }
        }
        Ok(())
    }

    pub fn nullable_string(
        &mut self,
        field: &'static str,
        flexible: bool,
        v: Option<&KStr>,
    ) -> Result<(), EncodeError> {
        self.length(field, flexible, false, v.map(KStr::len))?;
        if let Some(s) = v {
            self.buf.put_slice(s.as_bytes());
        }
        Ok(())
    }

    pub fn string(
        &mut self,
        field: &'static str,
        flexible: bool,
        v: &KStr,
    ) -> Result<(), EncodeError> {
        self.nullable_string(field, flexible, Some(v))
    }

    pub fn nullable_bytes(
        &mut self,
        field: &'static str,
        flexible: bool,
        v: Option<&Bytes>,
    ) -> Result<(), EncodeError> {
        self.length(field, flexible, true, v.map(Bytes::len))?;
        if let Some(b) = v {
            self.raw(b);
        }
        Ok(())
    }

    pub fn bytes(
        &mut self,
        field: &'static str,
        flexible: bool,
        v: &Bytes,
    ) -> Result<(), EncodeError> {
        self.nullable_bytes(field, flexible, Some(v))
    }

    /// A records field (schema type `records`). A registered external's stand-in is written
    /// as its true length followed by [`Chunk::External`]; any other value as
    /// [`nullable_bytes`](Self::nullable_bytes) writes it.
    #[inline]
    pub fn records(
        &mut self,
        field: &'static str,
        flexible: bool,
        v: Option<&Bytes>,
    ) -> Result<(), EncodeError> {
        if !self.externals.is_empty() {
            if let Some(n) = v.and_then(|b| self.external_number(b)) {
                return self.external(field, flexible, n);
            }
        }
        self.nullable_bytes(field, flexible, v)
    }

    /// Writes external `n`: its true length, then its place in the output.
    fn external(
        &mut self,
        field: &'static str,
        flexible: bool,
        n: usize,
    ) -> Result<(), EncodeError> {
        let Some(e) = self.externals.get_mut(n) else {
            return Err(EncodeError::ExternalRefused {
                reason: "no external record set has this number",
            });
        };
        e.written += 1;
        let len = e.len;
        self.length(field, flexible, true, Some(len))?;
        self.end_chunk();
        self.chunked_len += len;
        self.external_at.push((self.chunks.len(), n));
        Ok(())
    }

    /// An array header (count or null); the caller writes the elements.
    pub fn array_len(
        &mut self,
        field: &'static str,
        flexible: bool,
        len: Option<usize>,
    ) -> Result<(), EncodeError> {
        match (flexible, len) {
            (true, None) => self.uvarint(0),
            (true, Some(n)) => {
                let n = u32::try_from(n)
                    .ok()
                    .filter(|n| *n <= i32::MAX as u32)
                    .ok_or(EncodeError::TooLarge { field, len: n })?;
                self.uvarint(n + 1);
            }
            (false, None) => self.i32(-1),
            (false, Some(n)) => {
                self.i32(i32::try_from(n).map_err(|_| EncodeError::TooLarge { field, len: n })?)
            }
        }
        Ok(())
    }

    /// Writes a nullable array with `elem` for each element.
    pub fn nullable_array<T>(
        &mut self,
        field: &'static str,
        flexible: bool,
        v: Option<&[T]>,
        mut elem: impl FnMut(&mut Self, &T) -> Result<(), EncodeError>,
    ) -> Result<(), EncodeError> {
        self.array_len(field, flexible, v.map(<[T]>::len))?;
        for x in v.unwrap_or_default() {
            elem(self, x)?;
        }
        Ok(())
    }

    /// Writes an array with `elem` for each element.
    pub fn array<T>(
        &mut self,
        field: &'static str,
        flexible: bool,
        v: &[T],
        elem: impl FnMut(&mut Self, &T) -> Result<(), EncodeError>,
    ) -> Result<(), EncodeError> {
        self.nullable_array(field, flexible, Some(v), elem)
    }

    /// Writes a tagged-field section: the known fields already encoded in `known` (by tag), and
    /// the preserved unknown ones, merged in tag order.
    pub fn tagged_fields(&mut self, known: Vec<(u32, Bytes)>, unknown: &[RawTaggedField]) {
        if known.is_empty() && unknown.is_empty() {
            self.uvarint(0);
            return;
        }
        let mut all = known;
        all.extend(unknown.iter().map(|f| (f.tag, f.data.clone())));
        all.sort_by_key(|(tag, _)| *tag);
        self.uvarint(all.len() as u32);
        for (tag, data) in all {
            self.uvarint(tag);
            self.uvarint(data.len() as u32);
            self.raw(&data);
        }
    }

    /// Encodes one tagged field's value on its own, for [`Writer::tagged_fields`].
    pub fn tagged_value(
        known: &mut Vec<(u32, Bytes)>,
        tag: u32,
        f: impl FnOnce(&mut Self) -> Result<(), EncodeError>,
    ) -> Result<(), EncodeError> {
        let mut w = Self::new();
        f(&mut w)?;
        known.push((tag, w.into_bytes()));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn big(n: usize, b: u8) -> Bytes {
        Bytes::from(vec![b; n])
    }

    #[test]
    fn without_registrations_records_are_bytes() {
        let data = big(5000, b'r');
        let mut a = Writer::new();
        a.records("f", false, Some(&data)).unwrap();
        a.records("f", true, None).unwrap();
        let mut b = Writer::new();
        b.nullable_bytes("f", false, Some(&data)).unwrap();
        b.nullable_bytes("f", true, None).unwrap();
        assert_eq!(a.len(), b.len());
        assert_eq!(a.into_chunks(), b.into_chunks());
    }

    #[test]
    fn a_registered_stand_in_becomes_an_external_chunk_with_its_true_length() {
        let (s0, s1) = (stand_in(), stand_in());
        let mut w = Writer::new();
        assert_eq!(w.register_external(s0.clone(), 300).unwrap(), 0);
        assert_eq!(w.register_external(s1.clone(), 70_000).unwrap(), 1);
        w.i8(7);
        w.records("f", false, Some(&s0)).unwrap();
        // Two in a row, the second in the compact form (3-byte varint for 70,001).
        w.records("f", true, Some(&s1.clone())).unwrap();
        w.records("f", false, Some(&Bytes::from_static(b"xy")))
            .unwrap();
        assert_eq!(w.len(), 1 + 4 + 300 + 3 + 70_000 + 4 + 2);
        let chunks = w.into_external_chunks().unwrap();
        let mut expect_head = vec![7u8];
        expect_head.extend_from_slice(&300i32.to_be_bytes());
        let mut expect_mid = Vec::new();
        primitives::put_uvarint(&mut expect_mid, 70_001);
        assert_eq!(expect_mid.len(), 3);
        let mut expect_tail = 2i32.to_be_bytes().to_vec();
        expect_tail.extend_from_slice(b"xy");
        assert_eq!(
            chunks,
            vec![
                Chunk::Bytes(Bytes::from(expect_head)),
                Chunk::External(0),
                Chunk::Bytes(Bytes::from(expect_mid)),
                Chunk::External(1),
                Chunk::Bytes(Bytes::from(expect_tail)),
            ]
        );
    }

    #[test]
    fn externals_at_the_start_and_end_and_next_to_each_other() {
        let (s0, s1) = (stand_in(), stand_in());
        let mut w = Writer::new();
        w.register_external(s0.clone(), 10).unwrap();
        w.register_external(s1.clone(), 20).unwrap();
        w.records("f", true, Some(&s0)).unwrap();
        w.records("f", true, Some(&s1)).unwrap();
        let chunks = w.into_external_chunks().unwrap();
        assert_eq!(
            chunks,
            vec![
                Chunk::Bytes(Bytes::from_static(&[11])),
                Chunk::External(0),
                Chunk::Bytes(Bytes::from_static(&[21])),
                Chunk::External(1),
            ]
        );
    }

    #[test]
    fn stand_ins_are_known_by_identity_only() {
        let s = stand_in();
        let mut w = Writer::new();
        w.register_external(s.clone(), 5000).unwrap();
        // Equal bytes in another allocation, or the stand-in in a bytes field: plain bytes.
        w.records("f", false, Some(&Bytes::copy_from_slice(&s)))
            .unwrap();
        w.nullable_bytes("f", false, Some(&s)).unwrap();
        assert_eq!(w.len(), 2 * (4 + 1));
        assert_eq!(
            w.into_external_chunks(),
            Err(EncodeError::ExternalNotOnce {
                number: 0,
                written: 0
            })
        );
    }

    #[test]
    fn a_stand_in_missing_or_repeated_is_refused() {
        let s = stand_in();
        let mut w = Writer::new();
        w.register_external(s.clone(), 5000).unwrap();
        w.records("f", false, Some(&s)).unwrap();
        w.records("f", false, Some(&s)).unwrap();
        assert_eq!(
            w.into_external_chunks(),
            Err(EncodeError::ExternalNotOnce {
                number: 0,
                written: 2
            })
        );
        let mut w = Writer::new();
        w.register_external(stand_in(), 5000).unwrap();
        assert!(w.into_external_chunks().is_err());
    }

    #[test]
    fn empty_or_duplicate_stand_ins_are_refused() {
        let mut w = Writer::new();
        assert!(w.register_external(Bytes::new(), 10).is_err());
        let s = stand_in();
        w.register_external(s.clone(), 10).unwrap();
        assert!(w.register_external(s, 10).is_err());
        // An empty records value is not mistaken for anything registered.
        w.records("f", false, Some(&Bytes::new())).unwrap();
        assert_eq!(w.len(), 4);
    }

    #[test]
    fn a_length_the_wire_cannot_carry_is_refused() {
        let s = stand_in();
        let mut w = Writer::new();
        w.register_external(s.clone(), i32::MAX as usize + 1)
            .unwrap();
        assert!(matches!(
            w.records("f", false, Some(&s)),
            Err(EncodeError::TooLarge { .. })
        ));
    }
}
