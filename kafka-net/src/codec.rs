//! Framing: a 4-byte big-endian size, then the frame. Kafka's rules: a negative size is its own
//! error, and a size above the maximum is refused before any buffer grows for it. A size the
//! peer announces reserves at most [`RESERVE_AHEAD`] ahead of what has arrived, so
//! a peer that claims 100 MiB and sends nothing holds 1 MiB, not 100 MiB of address space.
//! Encoding uses tokio-util's `LengthDelimitedCodec`.

use bytes::{Buf, Bytes, BytesMut};
use tokio_util::codec::{Decoder, Encoder, LengthDelimitedCodec};

use crate::error::NetError;

/// Kafka's default `socket.request.max.bytes` (100 MiB).
pub const DEFAULT_MAX_FRAME: usize = 100 * 1024 * 1024;

/// The most a frame's announced size reserves before its bytes arrive: frames up to this size
/// are read into one allocation; a larger one grows with what has arrived (doubling).
pub const RESERVE_AHEAD: usize = 1 << 20;

/// Decodes size-prefixed frames into `Bytes` (no copy) and encodes `Bytes` with their size.
#[derive(Debug)]
pub struct KafkaCodec {
    inner: LengthDelimitedCodec,
    max: usize,
    /// The size of the frame whose prefix was consumed and whose bytes are awaited.
    pending: Option<usize>,
}

impl KafkaCodec {
    /// A codec refusing frames larger than `max` bytes.
    pub fn new(max: usize) -> Self {
        Self {
            inner: LengthDelimitedCodec::builder()
                .big_endian()
                .length_field_length(4)
                .max_frame_length(max)
                .new_codec(),
            max,
            pending: None,
        }
    }

    /// The maximum frame size.
    pub fn max_frame(&self) -> usize {
        self.max
    }

    /// Whether a frame has begun (its size prefix was read) and not yet ended.
    pub fn in_frame(&self) -> bool {
        self.pending.is_some()
    }
}

impl Default for KafkaCodec {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_FRAME)
    }
}

impl Decoder for KafkaCodec {
    type Item = Bytes;
    type Error = NetError;

    fn decode(&mut self, src: &mut BytesMut) -> Result<Option<Bytes>, NetError> {
        let len = match self.pending {
            Some(len) => len,
            None => {
                let Some(head) = src.get(..4) else {
                    return Ok(None);
                };
                let size = i32::from_be_bytes([head[0], head[1], head[2], head[3]]);
                if size < 0 {
                    return Err(NetError::NegativeLength(size));
                }
                let len = size as usize;
                if len > self.max {
                    return Err(NetError::FrameTooLarge { len, max: self.max });
                }
                src.advance(4);
                self.pending = Some(len);
                len
            }
        };
        if src.len() < len {
            let missing = len - src.len();
            // Room for the next reads only; a growing buffer doubles as it fills.
            src.reserve(missing.min(RESERVE_AHEAD));
            return Ok(None);
        }
        self.pending = None;
        Ok(Some(src.split_to(len).freeze()))
    }
}

impl Encoder<Bytes> for KafkaCodec {
    type Error = NetError;

    fn encode(&mut self, item: Bytes, dst: &mut BytesMut) -> Result<(), NetError> {
        if item.len() > self.max {
            return Err(NetError::FrameTooLarge {
                len: item.len(),
                max: self.max,
            });
        }
        self.inner.encode(item, dst).map_err(NetError::from)
    }
}

/// The 4-byte size prefix for a frame of `len` bytes.
pub fn size_prefix(len: usize) -> Result<Bytes, NetError> {
    let n = i32::try_from(len).map_err(|_| NetError::FrameTooLarge {
        len,
        max: i32::MAX as usize,
    })?;
    Ok(Bytes::copy_from_slice(&n.to_be_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_announced_size_reserves_at_most_what_arrives() {
        let mut c = KafkaCodec::new(DEFAULT_MAX_FRAME);
        let mut buf = BytesMut::new();
        buf.extend_from_slice(&(100_000_000i32).to_be_bytes());
        buf.extend_from_slice(b"0123456789");
        assert!(c.decode(&mut buf).unwrap().is_none());
        assert!(c.in_frame());
        assert!(
            buf.capacity() <= RESERVE_AHEAD + 64,
            "a 100 MB prefix reserved {} bytes",
            buf.capacity()
        );
        // As bytes arrive the buffer grows with them, and the frame comes out whole.
        let chunk = vec![b'x'; 3 << 20];
        let mut fed = 10usize;
        while fed < 100_000_000 {
            let n = chunk.len().min(100_000_000 - fed);
            buf.extend_from_slice(&chunk[..n]);
            fed += n;
            match c.decode(&mut buf).unwrap() {
                Some(frame) => {
                    assert_eq!(frame.len(), 100_000_000);
                    assert_eq!(&frame[..10], b"0123456789");
                    assert!(!c.in_frame());
                    return;
                }
                // Proportional to what arrived (within the allocator's doubling).
                None => assert!(buf.capacity() <= 2 * (buf.len() + RESERVE_AHEAD)),
            }
        }
        panic!("the frame never came out");
    }

    #[test]
    fn frames_split_across_reads() {
        let mut c = KafkaCodec::new(64);
        let mut buf = BytesMut::new();
        let mut wire = BytesMut::new();
        c.encode(Bytes::from_static(b"hello"), &mut wire).unwrap();
        c.encode(Bytes::from_static(b"kafka!"), &mut wire).unwrap();
        let mut out = Vec::new();
        for b in wire.iter() {
            buf.extend_from_slice(&[*b]);
            while let Some(f) = c.decode(&mut buf).unwrap() {
                out.push(f);
            }
        }
        assert_eq!(
            out,
            [Bytes::from_static(b"hello"), Bytes::from_static(b"kafka!")]
        );
    }

    #[test]
    fn negative_and_oversized_sizes_refused_before_allocating() {
        let mut c = KafkaCodec::new(1024);
        let mut buf = BytesMut::from(&[0xff, 0xff, 0xff, 0xfe][..]);
        assert!(matches!(
            c.decode(&mut buf),
            Err(NetError::NegativeLength(-2))
        ));
        let mut c = KafkaCodec::new(1024);
        let mut buf = BytesMut::from(&[0x7f, 0xff, 0xff, 0xff][..]);
        let cap = buf.capacity();
        assert!(matches!(
            c.decode(&mut buf),
            Err(NetError::FrameTooLarge {
                len: 0x7fff_ffff,
                max: 1024
            })
        ));
        assert_eq!(buf.capacity(), cap, "no buffer growth for a refused frame");
    }

    #[test]
    fn a_frame_body_starting_like_a_negative_size_is_fine() {
        let mut c = KafkaCodec::new(64);
        let mut buf = BytesMut::from(&[0, 0, 0, 4][..]);
        assert!(c.decode(&mut buf).unwrap().is_none());
        buf.extend_from_slice(&[0xff, 0xff, 0xff, 0xff]);
        assert_eq!(c.decode(&mut buf).unwrap().unwrap().as_ref(), &[0xff; 4]);
    }
}
