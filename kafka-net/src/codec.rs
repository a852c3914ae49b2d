//! Framing: a 4-byte big-endian size, then the frame. Built on tokio-util's
//! `LengthDelimitedCodec`, with Kafka's rules on top: a negative size is its own error, and a
//! size above the maximum is refused before any buffer grows for it.

use bytes::{Bytes, BytesMut};
use tokio_util::codec::{Decoder, Encoder, LengthDelimitedCodec};

use crate::error::NetError;

/// Kafka's default `socket.request.max.bytes` (100 MiB).
pub const DEFAULT_MAX_FRAME: usize = 100 * 1024 * 1024;

/// Decodes size-prefixed frames into `Bytes` (no copy) and encodes `Bytes` with their size.
#[derive(Debug)]
pub struct KafkaCodec {
    inner: LengthDelimitedCodec,
    max: usize,
    /// Whether the inner codec has consumed a size prefix and waits for the frame's bytes.
    in_frame: bool,
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
            in_frame: false,
        }
    }

    /// The maximum frame size.
    pub fn max_frame(&self) -> usize {
        self.max
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
        let had_head = !self.in_frame && src.len() >= 4;
        if had_head {
            let size = i32::from_be_bytes([src[0], src[1], src[2], src[3]]);
            if size < 0 {
                return Err(NetError::NegativeLength(size));
            }
            if size as usize > self.max {
                return Err(NetError::FrameTooLarge {
                    len: size as usize,
                    max: self.max,
                });
            }
        }
        match self.inner.decode(src)? {
            Some(frame) => {
                self.in_frame = false;
                Ok(Some(frame.freeze()))
            }
            None => {
                self.in_frame |= had_head;
                Ok(None)
            }
        }
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
