//! Walking the batches of a segment file: header checks for reads and offset lookups, full
//! checks (CRC-32C, offsets) for recovery and index rebuilds. The header layout is
//! kafka-protocol's ([`kafka_protocol::record::layout`]); reads go through [`LogIo`].

use std::fs::File;
use std::io;

use kafka_protocol::record::batch::MAGIC_V2;
use kafka_protocol::record::layout::{CRC_COVERS_FROM, HEADER_LEN, HeaderView};

use super::io::{FileKind, LogIo};

/// Bytes read at a time when walking headers only (reads, lookups, clean opens).
const HEADER_CHUNK: usize = 4 * 1024;
/// Bytes read at a time when checking whole batches (recovery, index rebuilds).
const VERIFY_CHUNK: usize = 1024 * 1024;

/// The fields of a batch header the log needs, and where the batch is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BatchHeader {
    pub(crate) position: u64,
    pub(crate) size: u64,
    pub(crate) base_offset: i64,
    pub(crate) last_offset: i64,
    pub(crate) max_timestamp: i64,
    pub(crate) leader_epoch: i32,
}

impl BatchHeader {
    pub(crate) fn next_offset(&self) -> i64 {
        self.last_offset.saturating_add(1)
    }

    pub(crate) fn end(&self) -> u64 {
        self.position + self.size
    }

    /// Parses the header in `b` (at least [`HEADER_LEN`] bytes) of the batch at `position`,
    /// which must end by `limit`.
    fn parse(b: &[u8], position: u64, limit: u64) -> Result<Self, &'static str> {
        let Ok(h) = HeaderView::new(b) else {
            return Err("batch header is cut short by the end of the file");
        };
        let Some(size) = h.batch_size() else {
            return Err("batch length is smaller than a batch header");
        };
        let size = size as u64;
        if position + size > limit {
            return Err("batch length runs past the end of the file");
        }
        if h.magic() != MAGIC_V2 {
            return Err("magic is not 2");
        }
        let delta = h.last_offset_delta();
        if delta < 0 {
            return Err("negative last offset delta");
        }
        let base_offset = h.base_offset();
        if base_offset < 0 {
            return Err("negative base offset");
        }
        Ok(Self {
            position,
            size,
            base_offset,
            last_offset: base_offset.saturating_add(i64::from(delta)),
            max_timestamp: h.max_timestamp(),
            leader_epoch: h.partition_leader_epoch(),
        })
    }
}

/// Why a scan stopped early.
#[derive(Debug)]
pub(crate) enum ScanError {
    /// Reading the file failed.
    Io(io::Error),
    /// The bytes at `position` are not a valid batch.
    Invalid { position: u64, reason: &'static str },
}

impl From<io::Error> for ScanError {
    fn from(e: io::Error) -> Self {
        Self::Io(e)
    }
}

/// Reads batches one after the other from a file region, through a read-ahead buffer.
pub(crate) struct Scanner<'a> {
    io: &'a dyn LogIo,
    file: &'a File,
    pos: u64,
    end: u64,
    buf: Vec<u8>,
    buf_start: u64,
    /// Check each batch's CRC (reads whole batches, not just headers).
    verify_crc: bool,
}

impl<'a> Scanner<'a> {
    /// Batches of the segment file `file` from `start` up to `end` (the segment's size), read
    /// through `io`.
    pub(crate) fn new(
        io: &'a dyn LogIo,
        file: &'a File,
        start: u64,
        end: u64,
        verify_crc: bool,
    ) -> Self {
        Self {
            io,
            file,
            pos: start,
            end,
            buf: Vec::new(),
            buf_start: start,
            verify_crc,
        }
    }

    /// Makes `[at, at + len)` (clamped to the end) available in the buffer; returns it.
    fn window(&mut self, at: u64, len: usize) -> io::Result<&[u8]> {
        let want = (self.end.saturating_sub(at)).min(len as u64) as usize;
        let have_from = at.checked_sub(self.buf_start).map(|d| d as usize);
        let hit = have_from.is_some_and(|from| from + want <= self.buf.len());
        if !hit {
            let chunk = if self.verify_crc {
                VERIFY_CHUNK
            } else {
                HEADER_CHUNK
            };
            let read = (self.end.saturating_sub(at)).min(want.max(chunk) as u64) as usize;
            self.buf.resize(read, 0);
            self.io
                .read_exact_at(FileKind::Log, self.file, &mut self.buf, at)?;
            self.buf_start = at;
        }
        let from = (at - self.buf_start) as usize;
        Ok(self.buf.get(from..from + want).unwrap_or_default())
    }

    /// The next batch, `Ok(None)` at the end of the region.
    pub(crate) fn next_batch(&mut self) -> Result<Option<BatchHeader>, ScanError> {
        if self.pos >= self.end {
            return Ok(None);
        }
        let (pos, end) = (self.pos, self.end);
        let head = self.window(pos, HEADER_LEN)?;
        let header = BatchHeader::parse(head, pos, end).map_err(|reason| ScanError::Invalid {
            position: pos,
            reason,
        })?;
        if self.verify_crc {
            let size = usize::try_from(header.size).unwrap_or(usize::MAX);
            let batch = self.window(pos, size)?;
            let stored = HeaderView::new(batch).map_or(0, |h| h.crc());
            let computed = crc32c::crc32c(batch.get(CRC_COVERS_FROM..).unwrap_or_default());
            if stored != computed {
                return Err(ScanError::Invalid {
                    position: pos,
                    reason: "CRC-32C mismatch",
                });
            }
        }
        self.pos = header.end();
        Ok(Some(header))
    }
}

impl Scanner<'_> {
    /// The next batch with its bytes, CRC checked (reads in large chunks; for walks that
    /// need every batch's content, such as compaction).
    pub(crate) fn next_batch_bytes(
        &mut self,
    ) -> Result<Option<(BatchHeader, bytes::Bytes)>, ScanError> {
        self.verify_crc = true;
        let Some(header) = self.next_batch()? else {
            return Ok(None);
        };
        let size = usize::try_from(header.size).unwrap_or(usize::MAX);
        let bytes = bytes::Bytes::copy_from_slice(self.window(header.position, size)?);
        Ok(Some((header, bytes)))
    }
}

/// Reads the whole batch described by `header` from the segment file `file`.
pub(crate) fn read_batch(
    io: &dyn LogIo,
    file: &File,
    header: &BatchHeader,
) -> io::Result<bytes::Bytes> {
    let len = usize::try_from(header.size)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "batch too large"))?;
    let mut buf = vec![0u8; len];
    io.read_exact_at(FileKind::Log, file, &mut buf, header.position)?;
    Ok(bytes::Bytes::from(buf))
}
