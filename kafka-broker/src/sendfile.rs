//! Fetch responses that send record data straight from the segment files with `sendfile(2)`:
//! the bytes go from the page cache to the socket without being read into this process.
//!
//! The response is encoded as usual, except that each large record set is a placeholder: a
//! slice, of the right length, of a static zero region that is never written. [`Regions`]
//! remembers which file regions each placeholder stands for; [`write_response`] writes the
//! encoded chunks and, on meeting a placeholder, sends its file regions instead. Placeholders
//! are told apart by their address inside the zero region, so one response can hold many.
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

/// Bytes of record data one response can send from files (more is read into memory).
pub const MAX_SENDFILE_BYTES: usize = 128 << 20;

/// The zero region placeholders are cut from: in `.bss`, never written, so it costs no memory.
static ZEROS: [u8; MAX_SENDFILE_BYTES] = [0; MAX_SENDFILE_BYTES];

/// The file regions behind the placeholders of one response.
#[derive(Debug, Default)]
pub struct Regions {
    /// (start in `ZEROS`, length, regions in order)
    entries: Vec<(usize, usize, Vec<FileSlice>)>,
    used: usize,
}

impl Regions {
    /// A placeholder for `slices` (whose lengths add up to `len`), or `None` when the data is
    /// too small to be chained by the encoder or the response has no room left.
    pub fn placeholder(&mut self, slices: Vec<FileSlice>, len: usize) -> Option<Bytes> {
        if len < CHAIN_THRESHOLD || self.used + len > MAX_SENDFILE_BYTES {
            return None;
        }
        let start = self.used;
        let bytes = Bytes::from_static(ZEROS.get(start..start + len)?);
        self.used += len;
        self.entries.push((start, len, slices));
        Some(bytes)
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The file regions a chunk stands for, if it is one of our placeholders.
    fn lookup(&self, chunk: &Bytes) -> Option<&[FileSlice]> {
        let base = ZEROS.as_ptr() as usize;
        let at = (chunk.as_ptr() as usize).checked_sub(base)?;
        if at >= MAX_SENDFILE_BYTES {
            return None;
        }
        self.entries
            .iter()
            .find(|(start, len, _)| *start == at && *len == chunk.len())
            .map(|(_, _, s)| s.as_slice())
    }

    /// The chunks with every placeholder replaced by its data read from the files (for
    /// writers that are not sockets, and for tests).
    pub fn materialize(&self, chunks: &[Bytes]) -> io::Result<Vec<Bytes>> {
        chunks
            .iter()
            .map(|c| match self.lookup(c) {
                None => Ok(c.clone()),
                Some(slices) => {
                    let mut out = bytes::BytesMut::with_capacity(c.len());
                    for s in slices {
                        out.extend_from_slice(&s.read_bytes()?);
                    }
                    Ok(out.freeze())
                }
            })
            .collect()
    }
}

/// Writes a response: ordinary chunks through the buffered writer, placeholders with
/// `sendfile` from their files straight to the socket under it. A file region that shrank
/// (its segment was truncated or deleted meanwhile) is an error: the connection must close,
/// since the response's length was already promised.
pub async fn write_response(
    wr: &mut BufWriter<OwnedWriteHalf>,
    chunks: &[Bytes],
    regions: &Regions,
) -> io::Result<()> {
    for c in chunks {
        match regions.lookup(c) {
            None => wr.write_all(c).await?,
            Some(slices) => {
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
