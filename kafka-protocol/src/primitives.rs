//! nom parsers for Kafka's primitive wire types, on complete input.
//!
//! Variable-length integers follow Kafka's (and protobuf's) base-128 layout: seven bits per
//! byte, least significant group first, high bit set on every byte but the last. Signed
//! varints are zigzag encoded. A varint longer than its type allows is an error, not a wrap.

use bytes::BufMut;
use nom::IResult;
use nom::error::{Error as NomError, ErrorKind};

/// Unsigned varint of at most 32 bits (5 bytes).
pub fn uvarint(input: &[u8]) -> IResult<&[u8], u32> {
    let (rest, v) = uvarlong_max(input, 5)?;
    if v > u64::from(u32::MAX) {
        return Err(nom::Err::Error(NomError::new(input, ErrorKind::TooLarge)));
    }
    Ok((rest, v as u32))
}

/// Unsigned varint of at most 64 bits (10 bytes).
pub fn uvarlong(input: &[u8]) -> IResult<&[u8], u64> {
    uvarlong_max(input, 10)
}

/// Zigzag-encoded signed varint (i32).
pub fn varint(input: &[u8]) -> IResult<&[u8], i32> {
    let (rest, v) = uvarint(input)?;
    Ok((rest, ((v >> 1) as i32) ^ -((v & 1) as i32)))
}

/// Zigzag-encoded signed varlong (i64).
pub fn varlong(input: &[u8]) -> IResult<&[u8], i64> {
    let (rest, v) = uvarlong(input)?;
    Ok((rest, ((v >> 1) as i64) ^ -((v & 1) as i64)))
}

fn uvarlong_max(input: &[u8], max_bytes: usize) -> IResult<&[u8], u64> {
    let mut value: u64 = 0;
    for (i, &b) in input.iter().enumerate() {
        if i >= max_bytes {
            return Err(nom::Err::Error(NomError::new(input, ErrorKind::TooLarge)));
        }
        let bits = u64::from(b & 0x7f);
        let shift = 7 * i as u32;
        if shift == 63 && bits > 1 {
            return Err(nom::Err::Error(NomError::new(input, ErrorKind::TooLarge)));
        }
        value |= bits << shift;
        if b & 0x80 == 0 {
            return Ok((&input[i + 1..], value));
        }
    }
    Err(nom::Err::Error(NomError::new(input, ErrorKind::Eof)))
}

/// Writes an unsigned varint.
pub fn put_uvarlong(buf: &mut impl BufMut, mut v: u64) {
    while v >= 0x80 {
        buf.put_u8((v as u8) | 0x80);
        v >>= 7;
    }
    buf.put_u8(v as u8);
}

/// Writes an unsigned 32-bit varint.
pub fn put_uvarint(buf: &mut impl BufMut, v: u32) {
    put_uvarlong(buf, u64::from(v));
}

/// Writes a zigzag signed varint.
pub fn put_varint(buf: &mut impl BufMut, v: i32) {
    put_uvarint(buf, ((v << 1) ^ (v >> 31)) as u32);
}

/// Writes a zigzag signed varlong.
pub fn put_varlong(buf: &mut impl BufMut, v: i64) {
    put_uvarlong(buf, ((v << 1) ^ (v >> 63)) as u64);
}

/// Bytes an unsigned varint takes.
pub fn uvarlong_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

/// Bytes a zigzag signed varint takes.
pub fn varint_len(v: i32) -> usize {
    uvarlong_len(u64::from(((v << 1) ^ (v >> 31)) as u32))
}

/// Bytes a zigzag signed varlong takes.
pub fn varlong_len(v: i64) -> usize {
    uvarlong_len(((v << 1) ^ (v >> 63)) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc_u(v: u64) -> Vec<u8> {
        let mut b = Vec::new();
        put_uvarlong(&mut b, v);
        b
    }

    #[test]
    fn unsigned_varint_known_encodings() {
        assert_eq!(enc_u(0), [0]);
        assert_eq!(enc_u(127), [0x7f]);
        assert_eq!(enc_u(128), [0x80, 0x01]);
        assert_eq!(enc_u(300), [0xac, 0x02]);
        assert_eq!(enc_u(u64::from(u32::MAX)), [0xff, 0xff, 0xff, 0xff, 0x0f]);
        assert_eq!(uvarint(&[0xac, 0x02, 9]).unwrap(), (&[9u8][..], 300));
    }

    #[test]
    fn signed_varint_zigzag() {
        for (v, wire) in [
            (0i32, vec![0u8]),
            (-1, vec![1]),
            (1, vec![2]),
            (-64, vec![0x7f]),
        ] {
            let mut b = Vec::new();
            put_varint(&mut b, v);
            assert_eq!(b, wire);
            assert_eq!(varint(&b).unwrap().1, v);
            assert_eq!(varint_len(v), b.len());
        }
        for v in [i64::MIN, -1, 0, 1, i64::MAX, 1 << 40] {
            let mut b = Vec::new();
            put_varlong(&mut b, v);
            assert_eq!(varlong(&b).unwrap().1, v);
            assert_eq!(varlong_len(v), b.len());
        }
        for v in [i32::MIN, i32::MAX] {
            let mut b = Vec::new();
            put_varint(&mut b, v);
            assert_eq!(varint(&b).unwrap().1, v);
        }
    }

    #[test]
    fn bad_varints_are_errors() {
        // Six continuation bytes: longer than a 32-bit varint may be.
        assert!(uvarint(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x01]).is_err());
        // Fits five bytes but exceeds u32.
        assert!(uvarint(&[0xff, 0xff, 0xff, 0xff, 0x1f]).is_err());
        // Truncated.
        assert!(matches!(uvarint(&[0x80]), Err(nom::Err::Error(e)) if e.code == ErrorKind::Eof));
        assert!(uvarlong(&[0xff; 11]).is_err());
        assert!(uvarlong(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02]).is_err());
    }
}
