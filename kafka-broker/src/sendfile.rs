//! Fetch responses that send record data straight from the segment files with `sendfile(2)`:
//! the bytes go from the page cache to the socket without being read into this process.
//!
//! A response to write is a list of [`Chunk`]s, each either bytes in memory or file regions.
//! To get there, the fetch handler encodes the response as usual with each large record set
//! standing in as a placeholder: a slice, of the right length, of a static zero region that is
//! never written, whose file regions [`Regions`] remembers. [`Regions::into_chunks`] then turns
//! the encoder's output into chunks, replacing each placeholder by its file regions, and checks
//! that every placeholder was found exactly once, whole: had the encoder copied a record set
//! instead of chaining it, the response would be refused (and the caller answers from memory)
//! rather than send zeros. The placeholder is never seen past this module.
//!
//! This is the broker's only `unsafe` code: the `sendfile` call itself.

use std::io;
use std::os::fd::AsRawFd;

use bytes::Bytes;
use kafka_protocol::codec::CHAIN_THRESHOLD;
use tokio::io::{AsyncWriteExt, BufWriter, Interest};
use tokio::net::TcpStream;
use tokio::net::tcp::OwnedWriteHalf;

use crate::log::FileSlice;

/// One piece of a response to write.
#[derive(Debug, Clone)]
pub enum Chunk {
    /// Bytes in memory.
    Mem(Bytes),
    /// Regions of segment files, in order, sent with `sendfile`.
    File(Vec<FileSlice>),
}

impl Chunk {
    /// The chunk's length in bytes.
    pub fn len(&self) -> usize {
        match self {
            Self::Mem(b) => b.len(),
            Self::File(slices) => slices.iter().map(|s| s.len).sum(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The chunks read into memory (for writers that are not sockets, and for tests).
pub fn materialize(chunks: &[Chunk]) -> io::Result<Vec<Bytes>> {
    chunks
        .iter()
        .map(|c| match c {
            Chunk::Mem(b) => Ok(b.clone()),
            Chunk::File(slices) => {
                let mut out = bytes::BytesMut::with_capacity(c.len());
                for s in slices {
                    out.extend_from_slice(&s.read_bytes()?);
                }
                Ok(out.freeze())
            }
        })
        .collect()
}

/// Bytes of record data one response can send from files (more is read into memory).
pub const MAX_SENDFILE_BYTES: usize = 128 << 20;

/// The zero region placeholders are cut from: in `.bss`, never written, so it costs no memory.
static ZEROS: [u8; MAX_SENDFILE_BYTES] = [0; MAX_SENDFILE_BYTES];

/// The most file regions one response sends from files; the data of further partitions is
/// read into memory. Each region holds its segment file's descriptor until the answer is
/// written, even if the broker's file cache closed it meanwhile, so this bounds what one
/// answer adds to `log.open.files.max`.
pub const MAX_FILE_REGIONS: usize = 32;

/// The file regions behind the placeholders of one response.
#[derive(Debug, Default)]
pub struct Regions {
    /// (start in `ZEROS`, length, regions in order)
    entries: Vec<(usize, usize, Vec<FileSlice>)>,
    used: usize,
    regions: usize,
}

impl Regions {
    /// A placeholder for `slices` (whose lengths add up to `len`), or `None` when the data is
    /// too small to be chained by the encoder or the response has no room left (in bytes, or
    /// in regions: [`MAX_FILE_REGIONS`]).
    pub fn placeholder(&mut self, slices: Vec<FileSlice>, len: usize) -> Option<Bytes> {
        if len < CHAIN_THRESHOLD
            || self.used + len > MAX_SENDFILE_BYTES
            || self.regions + slices.len() > MAX_FILE_REGIONS
        {
            return None;
        }
        self.regions += slices.len();
        let start = self.used;
        let bytes = Bytes::from_static(ZEROS.get(start..start + len)?);
        self.used += len;
        self.entries.push((start, len, slices));
        Some(bytes)
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The encoder's output as chunks to write: each placeholder replaced by its file regions.
    /// Fails when a placeholder is not among `encoded` exactly once, whole (the encoder copied,
    /// split or repeated it): then nothing may be sent from files.
    pub fn into_chunks(self, encoded: Vec<Bytes>) -> io::Result<Vec<Chunk>> {
        let mut entries: Vec<(usize, usize, Option<Vec<FileSlice>>)> = self
            .entries
            .into_iter()
            .map(|(start, len, slices)| (start, len, Some(slices)))
            .collect();
        let mut out = Vec::with_capacity(encoded.len());
        for c in encoded {
            let Some(at) = placeholder_offset(&c) else {
                out.push(Chunk::Mem(c));
                continue;
            };
            let slices = entries
                .iter_mut()
                .find(|(start, len, _)| *start == at && *len == c.len())
                .and_then(|e| e.2.take())
                .ok_or_else(|| {
                    io::Error::other(
                        "a record set placeholder was split or repeated by the encoder",
                    )
                })?;
            out.push(Chunk::File(slices));
        }
        if entries.iter().any(|e| e.2.is_some()) {
            return Err(io::Error::other(
                "a record set placeholder is missing from the encoded response (it was copied)",
            ));
        }
        Ok(out)
    }
}

/// Where a chunk starts in the zero region, if it is a (part of a) placeholder.
fn placeholder_offset(chunk: &Bytes) -> Option<usize> {
    if chunk.is_empty() {
        return None;
    }
    let at = (chunk.as_ptr() as usize).checked_sub(ZEROS.as_ptr() as usize)?;
    (at < MAX_SENDFILE_BYTES).then_some(at)
}

/// Writes a response: in-memory chunks through the buffered writer, file chunks with
/// `sendfile` from their files straight to the socket under it. A file region that shrank
/// (its segment was truncated or deleted meanwhile) is an error: the connection must close,
/// since the response's length was already promised.
pub async fn write_response(
    wr: &mut BufWriter<OwnedWriteHalf>,
    chunks: &[Chunk],
) -> io::Result<()> {
    for c in chunks {
        match c {
            Chunk::Mem(b) => wr.write_all(b).await?,
            Chunk::File(slices) => {
                wr.flush().await?;
                let sock: &TcpStream = wr.get_ref().as_ref();
                for s in slices {
                    send_file(sock, s).await?;
                }
            }
        }
    }
    Ok(())
}

async fn send_file(sock: &TcpStream, slice: &FileSlice) -> io::Result<()> {
    let out_fd = sock.as_raw_fd();
    let in_fd = slice.file.as_raw_fd();
    let mut offset = i64::try_from(slice.position)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "file position too large"))?;
    let mut left = slice.len;
    while left > 0 {
        sock.writable().await?;
        let sent = sock.try_io(Interest::WRITABLE, || {
            // SAFETY: both descriptors are open for the duration of the call (`sock` and the
            // `Arc<File>` in `slice` are borrowed), `offset` is a valid, exclusively borrowed
            // `off_t` that the kernel updates, and `left` bounds the count. sendfile(2) does
            // not touch our memory otherwise.
            #[allow(unsafe_code)]
            let n = unsafe { libc::sendfile(out_fd, in_fd, &mut offset, left) };
            if n < 0 {
                Err(io::Error::last_os_error())
            } else {
                Ok(n as usize)
            }
        });
        match sent {
            Ok(0) => {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "segment file ended before the region planned for a fetch",
                ));
            }
            Ok(n) => left -= n.min(left),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::io::Write;
    use std::sync::Arc;

    use kafka_protocol::codec::Writer;

    use super::*;

    fn slice(len: usize) -> (tempfile::NamedTempFile, FileSlice) {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(&vec![b'r'; len + 10]).unwrap();
        let file = Arc::new(f.reopen().unwrap());
        let s = FileSlice {
            file,
            position: 10,
            len,
        };
        (f, s)
    }

    #[test]
    fn placeholders_chained_by_the_encoder_become_file_chunks() {
        let (_f, s) = slice(5000);
        let mut regions = Regions::default();
        let p = regions.placeholder(vec![s], 5000).unwrap();
        let mut w = Writer::new();
        w.raw(&Bytes::from_static(b"head"));
        w.raw(&p);
        w.raw(&Bytes::from_static(b"tail"));
        let chunks = regions.into_chunks(w.into_chunks()).unwrap();
        assert!(matches!(
            chunks.as_slice(),
            [Chunk::Mem(_), Chunk::File(_), Chunk::Mem(_)]
        ));
        let bytes: Vec<u8> = materialize(&chunks).unwrap().concat();
        assert_eq!(bytes.len(), 5008);
        assert!(
            bytes[4..5004].iter().all(|&b| b == b'r'),
            "file data, not zeros"
        );
        // Small record sets get no placeholder (the encoder would copy them).
        let (_g, small) = slice(100);
        assert!(Regions::default().placeholder(vec![small], 100).is_none());
    }

    #[test]
    fn a_placeholder_copied_split_or_repeated_is_refused() {
        let (_f, s) = slice(5000);
        let make = || {
            let mut r = Regions::default();
            let p = r.placeholder(vec![s.clone()], 5000).unwrap();
            (r, p)
        };
        // Copied into another buffer: missing.
        let (r, p) = make();
        assert!(r.into_chunks(vec![Bytes::copy_from_slice(&p)]).is_err());
        // Split in two chunks.
        let (r, p) = make();
        assert!(r.into_chunks(vec![p.slice(..100), p.slice(100..)]).is_err());
        // Repeated.
        let (r, p) = make();
        assert!(r.into_chunks(vec![p.clone(), p]).is_err());
    }
}
