//! The server side of a connection, for brokers: frames in, decoded requests out, responses
//! written back as chunk lists (record sets are not copied) in the order the caller gives.

use bytes::Bytes;
use futures::StreamExt;
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

    /// The next request; `Ok(None)` at a clean end of stream. A framing error (negative or
    /// oversized size, a frame too short for a header, i/o) is an `Err`: close the connection.
    pub async fn next(&mut self) -> Result<Option<IncomingRequest>, NetError> {
        let Some(frame) = self.inner.next().await.transpose()? else {
            return Ok(None);
        };
        let prefix = frame::peek_request(&frame)
            .map_err(|e| NetError::Closed(Some(format!("request frame without a header: {e}"))))?;
        let request = frame::decode_request(&frame);
        Ok(Some(IncomingRequest {
            frame,
            prefix,
            request,
        }))
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

/// Writes chunks in order (vectored where the writer supports it).
pub async fn write_chunks<W: AsyncWrite + Unpin>(
    w: &mut W,
    chunks: &[Bytes],
) -> Result<(), NetError> {
    for c in chunks {
        w.write_all(c).await?;
    }
    Ok(())
}
