//! The server side of a connection, for brokers: frames in, decoded requests out, responses
//! written back as chunk lists (record sets are not copied) in the order the caller gives, or
//! encoded with external record sets left for the caller to send (from files, say).

use std::io::IoSlice;

use bytes::Bytes;
use futures::StreamExt;
use kafka_protocol::Writer;
use kafka_protocol::codec::Chunk;
use kafka_protocol::frame::{self, RequestPrefix};
use kafka_protocol::messages::{ResponseBody, ResponseHeader};
use kafka_protocol::{DecodeError, Request};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio_util::codec::FramedRead;

use crate::codec::{KafkaCodec, size_prefix};
use crate::error::NetError;

/// One request frame as read off the socket.
#[derive(Debug)]
pub struct IncomingRequest {
    /// The raw frame (size prefix removed).
    pub frame: Bytes,
    /// Api key, version and correlation id, readable even when the rest is not.
    pub prefix: RequestPrefix,
    /// The decoded request, or why it could not be decoded (unknown key, unsupported
    /// version, malformed body): the caller decides how to answer.
    pub request: Result<Request, DecodeError>,
}

/// Reads request frames from `R`.
#[derive(Debug)]
pub struct RequestReader<R> {
    inner: FramedRead<R, KafkaCodec>,
}

impl<R: AsyncRead + Unpin> RequestReader<R> {
    /// A reader refusing frames over `max_frame` bytes (`socket.request.max.bytes`).
    pub fn new(read: R, max_frame: usize) -> Self {
        Self {
            inner: FramedRead::new(read, KafkaCodec::new(max_frame)),
        }
    }

    /// The reader underneath (to ask a socket whether its peer has shut down, say).
    pub fn get_ref(&self) -> &R {
        self.inner.get_ref()
    }

    /// The next request; `Ok(None)` at a clean end of stream. A framing error (negative or
    /// oversized size, a frame too short for a header, i/o) is an `Err`: close the connection.
    pub async fn next(&mut self) -> Result<Option<IncomingRequest>, NetError> {
        let Some((frame, prefix)) = self.next_frame().await? else {
            return Ok(None);
        };
        let request = frame::decode_request(&frame);
        Ok(Some(IncomingRequest {
            frame,
            prefix,
            request,
        }))
    }

    /// As [`next`](Self::next), without decoding: the frame and its prefix, for a caller
    /// that reads some requests its own way (a broker's Produce path through
    /// `kafka_protocol::view`).
    /// The next frame as it is, its size prefix removed (a SASL token after a SaslHandshake v0
    /// has no request header); `Ok(None)` at a clean end of stream.
    pub async fn next_bytes(&mut self) -> Result<Option<Bytes>, NetError> {
        self.inner.next().await.transpose()
    }

    pub async fn next_frame(&mut self) -> Result<Option<(Bytes, RequestPrefix)>, NetError> {
        let Some(frame) = self.inner.next().await.transpose()? else {
            return Ok(None);
        };
        let prefix = frame::peek_request(&frame)
            .map_err(|e| NetError::Closed(Some(format!("request frame without a header: {e}"))))?;
        Ok(Some((frame, prefix)))
    }
}

/// Encodes a response as chunks ready to write: size prefix, header and body (large record
/// sets stay the caller's `Bytes`).
pub fn response_chunks(
    correlation_id: i32,
    body: &ResponseBody,
    version: i16,
) -> Result<Vec<Bytes>, NetError> {
    let header = ResponseHeader {
        correlation_id,
        ..Default::default()
    };
    let w = frame::encode_response(&header, body, version)?;
    let mut chunks = w.into_chunks();
    let len = chunks.iter().map(Bytes::len).sum();
    chunks.insert(0, size_prefix(len)?);
    Ok(chunks)
}

/// As [`response_chunks`], with record sets the caller sends by other means (a broker sends
/// file regions with `sendfile`): each of `externals` is a stand-in that a records field of
/// `body` holds ([`kafka_protocol::codec::stand_in`]) and the true length of its data. The
/// size prefix counts that length, and [`Chunk::External`] with the external's index in
/// `externals` marks where its data goes. Fails when a stand-in is not in a records field of
/// `body` exactly once.
pub fn response_chunks_with_externals(
    correlation_id: i32,
    body: &ResponseBody,
    version: i16,
    externals: &[(Bytes, usize)],
) -> Result<Vec<Chunk>, NetError> {
    let header = ResponseHeader {
        correlation_id,
        ..Default::default()
    };
    let mut w = Writer::new();
    for (stand_in, len) in externals {
        w.register_external(stand_in.clone(), *len)?;
    }
    let w = frame::encode_response_into(w, &header, body, version)?;
    let prefix = size_prefix(w.len())?;
    let mut chunks = w.into_external_chunks()?;
    chunks.insert(0, Chunk::Bytes(prefix));
    Ok(chunks)
}

/// Writes chunks in order, with vectored writes where the writer supports them (one syscall
/// for prefix, header and body instead of one each: separate small writes would also meet
/// Nagle's algorithm and the peer's delayed ACK on a socket without TCP_NODELAY).
pub async fn write_chunks<W: AsyncWrite + Unpin>(
    w: &mut W,
    chunks: &[Bytes],
) -> Result<(), NetError> {
    /// At most this many chunks per vectored write.
    const MAX_IOV: usize = 64;
    let mut first = 0;
    let mut offset = 0;
    while first < chunks.len() {
        let rest = chunks.get(first..).unwrap_or_default();
        let slices: Vec<IoSlice<'_>> = rest
            .iter()
            .take(MAX_IOV)
            .enumerate()
            .map(|(i, c)| {
                IoSlice::new(if i == 0 {
                    c.get(offset..).unwrap_or_default()
                } else {
                    c
                })
            })
            .collect();
        let mut n = w.write_vectored(&slices).await?;
        if n == 0 && slices.iter().any(|s| !s.is_empty()) {
            return Err(std::io::Error::from(std::io::ErrorKind::WriteZero).into());
        }
        // Step over what was written.
        while let Some(c) = chunks.get(first) {
            let left = c.len().saturating_sub(offset);
            if n < left {
                offset += n;
                break;
            }
            n -= left;
            first += 1;
            offset = 0;
        }
    }
    w.flush().await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::pin::Pin;
    use std::task::{Context, Poll};

    use super::*;

    /// Takes at most `max` bytes per call, vectored or not, and counts the calls.
    struct Trickle {
        out: Vec<u8>,
        max: usize,
        calls: usize,
    }

    impl AsyncWrite for Trickle {
        fn poll_write(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<std::io::Result<usize>> {
            self.calls += 1;
            let n = buf.len().min(self.max);
            self.out.extend_from_slice(&buf[..n]);
            Poll::Ready(Ok(n))
        }

        fn poll_write_vectored(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            bufs: &[IoSlice<'_>],
        ) -> Poll<std::io::Result<usize>> {
            self.calls += 1;
            let mut n = 0;
            for b in bufs {
                let take = b.len().min(self.max - n);
                self.out.extend_from_slice(&b[..take]);
                n += take;
            }
            Poll::Ready(Ok(n))
        }

        fn is_write_vectored(&self) -> bool {
            true
        }

        fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Poll::Ready(Ok(()))
        }

        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    #[test]
    fn externals_leave_their_place_and_count_in_the_size_prefix() {
        use kafka_protocol::messages::FetchResponse;
        use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};

        let real = Bytes::from(vec![b'r'; 5000]);
        let body = |records: &Bytes| {
            ResponseBody::Fetch(FetchResponse {
                responses: vec![FetchableTopicResponse {
                    topic: "t".into(),
                    partitions: vec![PartitionData {
                        records: Some(records.clone()),
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
                ..Default::default()
            })
        };
        let plain: Vec<u8> = response_chunks(9, &body(&real), 11).unwrap().concat();
        let s = kafka_protocol::codec::stand_in();
        let chunks =
            response_chunks_with_externals(9, &body(&s), 11, &[(s.clone(), real.len())]).unwrap();
        assert_eq!(
            chunks
                .iter()
                .filter(|c| matches!(c, Chunk::External(0)))
                .count(),
            1
        );
        let spliced: Vec<u8> = chunks
            .iter()
            .flat_map(|c| match c {
                Chunk::Bytes(b) => b.to_vec(),
                Chunk::External(_) => real.to_vec(),
            })
            .collect();
        assert_eq!(spliced, plain);
        // A stand-in the body does not hold is refused.
        let other = kafka_protocol::codec::stand_in();
        assert!(response_chunks_with_externals(9, &body(&real), 11, &[(other, 5000)]).is_err());
    }

    #[tokio::test]
    async fn chunks_go_out_whole_and_in_order_through_partial_vectored_writes() {
        let chunks = [
            Bytes::from_static(b"\0\0\0\x07"),
            Bytes::new(),
            Bytes::from_static(b"abc"),
            Bytes::from_static(b"defg"),
        ];
        let expected: Vec<u8> = chunks.iter().flat_map(|c| c.to_vec()).collect();
        for max in [1, 2, 3, 5, 100] {
            let mut w = Trickle {
                out: Vec::new(),
                max,
                calls: 0,
            };
            write_chunks(&mut w, &chunks).await.unwrap();
            assert_eq!(w.out, expected, "max {max}");
            assert_eq!(w.calls, expected.len().div_ceil(max), "max {max}");
        }
    }
}
