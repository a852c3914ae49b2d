//! Fetch responses that send record data straight from the segment files with `sendfile(2)`:
//! the bytes go from the page cache to the socket without being read into this process.
//!
//! A response to write is a list of [`Chunk`]s, each either bytes in memory or file regions.
//! To get there, the fetch handler puts in each large record set's place a stand-in (a tiny
//! `Bytes` of its own) from [`Regions::stand_in`], which remembers the set's file regions and
//! length. [`Regions::encode`] registers the stand-ins with the encoder as external record
//! sets: the encoder writes each one's true length and leaves an external chunk where its data
//! goes, which becomes the file regions. Unless every stand-in was written exactly once, in a
//! records field, the answer is refused (the connection closes and the client fetches again)
//! rather than sent with a stand-in's byte in place of the data.
//!
//! This is the broker's only `unsafe` code: the `sendfile` call itself.

use std::io;
use std::os::fd::AsRawFd;

use bytes::Bytes;
use kafka_net::server::response_chunks_with_externals;
use kafka_protocol::codec::{CHAIN_THRESHOLD, Chunk as Encoded};
use kafka_protocol::messages::ResponseBody;
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

/// The most file regions one response sends from files; the data of further partitions is
/// read into memory. Each region holds its segment file's descriptor until the answer is
/// written, even if the broker's file cache closed it meanwhile, so this bounds what one
/// answer adds to `log.open.files.max`.
pub const MAX_FILE_REGIONS: usize = 32;

/// The record sets of one response that are sent from files: for each, the stand-in the
/// answer holds in its place, its length, and its file regions in order.
#[derive(Debug, Default)]
pub struct Regions {
    entries: Vec<(Bytes, usize, Vec<FileSlice>)>,
    used: usize,
    regions: usize,
}

impl Regions {
    /// A stand-in for `slices` (whose lengths add up to `len`) to put in the answer's records
    /// field, or `None` when the data is too small to be worth a `sendfile` (under
    /// [`CHAIN_THRESHOLD`], the encoder's own limit for not copying) or the response has no
    /// room left (in bytes: [`MAX_SENDFILE_BYTES`], or in regions: [`MAX_FILE_REGIONS`]).
    pub fn stand_in(&mut self, slices: Vec<FileSlice>, len: usize) -> Option<Bytes> {
        if len < CHAIN_THRESHOLD
            || self.used + len > MAX_SENDFILE_BYTES
            || self.regions + slices.len() > MAX_FILE_REGIONS
        {
            return None;
        }
        self.regions += slices.len();
        self.used += len;
        let stand_in = kafka_protocol::codec::stand_in();
        self.entries.push((stand_in.clone(), len, slices));
        Some(stand_in)
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The bytes sent from files (every stand-in's length).
    pub fn file_bytes(&self) -> usize {
        self.used
    }

    /// Encodes the answer `body` (whose records fields hold the stand-ins) as chunks to write:
    /// each stand-in's place becomes its file regions. Fails when a stand-in is not in a
    /// records field of `body` exactly once: then nothing may be sent from files.
    pub fn encode(
        self,
        correlation_id: i32,
        body: &ResponseBody,
        version: i16,
    ) -> io::Result<Vec<Chunk>> {
        let externals: Vec<(Bytes, usize)> = self
            .entries
            .iter()
            .map(|(stand_in, len, _)| (stand_in.clone(), *len))
            .collect();
        let encoded = response_chunks_with_externals(correlation_id, body, version, &externals)
            .map_err(io::Error::other)?;
        self.into_chunks(encoded)
    }

    /// The encoder's output as chunks to write: external record set `n` becomes the file
    /// regions of the `n`th stand-in. Fails unless each appears exactly once.
    fn into_chunks(self, encoded: Vec<Encoded>) -> io::Result<Vec<Chunk>> {
        let mut slices: Vec<Option<Vec<FileSlice>>> =
            self.entries.into_iter().map(|(_, _, s)| Some(s)).collect();
        let out = encoded
            .into_iter()
            .map(|c| match c {
                Encoded::Bytes(b) => Ok(Chunk::Mem(b)),
                Encoded::External(n) => slices
                    .get_mut(n)
                    .and_then(Option::take)
                    .map(Chunk::File)
                    .ok_or_else(|| {
                        io::Error::other("a record set was placed twice or is not ours")
                    }),
            })
            .collect::<io::Result<Vec<_>>>()?;
        if slices.iter().any(Option::is_some) {
            return Err(io::Error::other(
                "a record set sent from files is missing from the encoded answer",
            ));
        }
        Ok(out)
    }
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

/// Largest piece of a file region read into memory at once by [`write_copied`].
const COPY_PIECE: usize = 256 * 1024;

/// Writes a response to a writer that cannot take `sendfile` (a TLS session without kernel
/// TLS): file regions are read in pieces of at most 256 KiB and written through `wr`, so a
/// large fetch does not hold its whole size in memory.
pub async fn write_copied<W: tokio::io::AsyncWrite + Unpin>(
    wr: &mut W,
    chunks: &[Chunk],
) -> io::Result<()> {
    for c in chunks {
        match c {
            Chunk::Mem(b) => wr.write_all(b).await?,
            Chunk::File(slices) => {
                for s in slices {
                    let mut done = 0;
                    while done < s.len {
                        let n = (s.len - done).min(COPY_PIECE);
                        let piece = FileSlice {
                            file: std::sync::Arc::clone(&s.file),
                            position: s.position + done as u64,
                            len: n,
                        };
                        wr.write_all(&piece.read_bytes()?).await?;
                        done += n;
                    }
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

    use kafka_net::server::response_chunks;
    use kafka_protocol::messages::FetchResponse;
    use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};

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

    /// A Fetch answer whose partitions hold `records`.
    fn answer(records: &[Option<Bytes>]) -> ResponseBody {
        ResponseBody::Fetch(FetchResponse {
            responses: vec![FetchableTopicResponse {
                topic: "t".into(),
                partitions: records
                    .iter()
                    .enumerate()
                    .map(|(i, r)| PartitionData {
                        partition_index: i as i32,
                        records: r.clone(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }],
            ..Default::default()
        })
    }

    #[test]
    fn registered_record_sets_become_file_chunks() {
        let (_f, s) = slice(5000);
        let mut regions = Regions::default();
        let stand_in = regions.stand_in(vec![s.clone()], 5000).unwrap();
        let small = Some(Bytes::from_static(b"small"));
        let chunks = regions
            .encode(7, &answer(&[small.clone(), Some(stand_in), None]), 11)
            .unwrap();
        // Size prefix, header and answer up to the records, the file regions, the rest.
        assert!(matches!(
            chunks.as_slice(),
            [Chunk::Mem(_), Chunk::Mem(_), Chunk::File(_), Chunk::Mem(_)]
        ));
        // Byte for byte the answer with the data read into memory.
        let bytes: Vec<u8> = materialize(&chunks).unwrap().concat();
        let read = Some(s.read_bytes().unwrap());
        let plain = response_chunks(7, &answer(&[small, read, None]), 11).unwrap();
        assert_eq!(bytes, plain.concat());
        assert!(
            bytes.windows(5000).any(|w| w.iter().all(|&b| b == b'r')),
            "file data in the answer"
        );
    }

    #[test]
    fn the_limits_hold() {
        // Small record sets get no stand-in (not worth a sendfile; the encoder copies them).
        let (_g, small) = slice(100);
        assert!(Regions::default().stand_in(vec![small], 100).is_none());
        // At most MAX_FILE_REGIONS regions per answer.
        let (_f, s) = slice(CHAIN_THRESHOLD);
        let mut regions = Regions::default();
        for _ in 0..MAX_FILE_REGIONS {
            assert!(regions.stand_in(vec![s.clone()], s.len).is_some());
        }
        assert!(regions.stand_in(vec![s.clone()], s.len).is_none());
        // At most MAX_SENDFILE_BYTES per answer.
        let mut regions = Regions::default();
        let big = FileSlice {
            len: MAX_SENDFILE_BYTES - CHAIN_THRESHOLD + 1,
            ..s.clone()
        };
        assert!(regions.stand_in(vec![big.clone()], big.len).is_some());
        assert!(regions.stand_in(vec![s.clone()], s.len).is_none());
    }

    #[test]
    fn a_record_set_missing_or_repeated_is_refused() {
        let (_f, s) = slice(5000);
        let make = || {
            let mut r = Regions::default();
            let p = r.stand_in(vec![s.clone()], 5000).unwrap();
            (r, p)
        };
        // Not in the answer (left out, or copied into other bytes).
        let (r, _) = make();
        assert!(r.encode(1, &answer(&[None]), 11).is_err());
        let (r, p) = make();
        let copied = Some(Bytes::copy_from_slice(&p));
        assert!(r.encode(1, &answer(&[copied]), 11).is_err());
        // Another answer's stand-in (not registered here) is only bytes; ours is missing.
        let (r, _) = make();
        assert!(r.encode(1, &answer(&[Some(p)]), 11).is_err());
        // In two partitions.
        let (r, p) = make();
        assert!(
            r.encode(1, &answer(&[Some(p.clone()), Some(p)]), 11)
                .is_err()
        );
        // An encoder's output that does not place it once: missing, repeated, or not ours.
        let (r, _) = make();
        assert!(r.into_chunks(vec![Encoded::Bytes(Bytes::new())]).is_err());
        let (r, _) = make();
        let twice = vec![Encoded::External(0), Encoded::External(0)];
        assert!(r.into_chunks(twice).is_err());
        let (r, _) = make();
        let unknown = vec![Encoded::External(0), Encoded::External(1)];
        assert!(r.into_chunks(unknown).is_err());
    }
}
