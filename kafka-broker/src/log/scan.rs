//! Walking the batches of a segment file: header checks for reads and offset lookups, full
//! checks (CRC-32C, offsets) for recovery and index rebuilds.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

use kafka_protocol::record::batch::{LOG_OVERHEAD, MAGIC_OFFSET, MAGIC_V2, RECORD_BATCH_OVERHEAD};

const CRC_AT: usize = 17;
const ATTRIBUTES_AT: usize = 21;
pub(crate) const LAST_OFFSET_DELTA_AT: usize = 23;
pub(crate) const MAX_TIMESTAMP_AT: usize = 35;
pub(crate) const PARTITION_LEADER_EPOCH_AT: usize = 12;
pub(crate) const BASE_OFFSET_AT: usize = 0;
/// Bytes read at a time when walking headers only (reads, lookups, clean opens).
const HEADER_CHUNK: usize = 4 * 1024;
/// Bytes read at a time when checking whole batches (recovery, index rebuilds).
const VERIFY_CHUNK: usize = 1024 * 1024;

pub(crate) fn be<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    b.get(at..at + N)
        .and_then(|s| s.try_into().ok())
        .unwrap_or([0; N])
}

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

    /// Parses the header in `b` (at least [`RECORD_BATCH_OVERHEAD`] bytes) of the batch at
    /// `position`, which must end by `limit`.
    fn parse(b: &[u8], position: u64, limit: u64) -> Result<Self, &'static str> {
        if b.len() < RECORD_BATCH_OVERHEAD {
            return Err("batch header is cut short by the end of the file");
        }
        let length = i32::from_be_bytes(be(b, 8));
        if length < (RECORD_BATCH_OVERHEAD - LOG_OVERHEAD) as i32 {
            return Err("batch length is smaller than a batch header");
        }
        let size = LOG_OVERHEAD as u64 + length as u64;
        if position + size > limit {
            return Err("batch length runs past the end of the file");
        }
        if b.get(MAGIC_OFFSET).map(|&m| m as i8) != Some(MAGIC_V2) {
            return Err("magic is not 2");
        }
        let delta = i32::from_be_bytes(be(b, LAST_OFFSET_DELTA_AT));
        if delta < 0 {
            return Err("negative last offset delta");
        }
        let base_offset = i64::from_be_bytes(be(b, 0));
        if base_offset < 0 {
            return Err("negative base offset");
        }
        Ok(Self {
            position,
            size,
            base_offset,
            last_offset: base_offset.saturating_add(i64::from(delta)),
            max_timestamp: i64::from_be_bytes(be(b, MAX_TIMESTAMP_AT)),
            leader_epoch: i32::from_be_bytes(be(b, PARTITION_LEADER_EPOCH_AT)),
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
    file: &'a File,
    pos: u64,
    end: u64,
    buf: Vec<u8>,
    buf_start: u64,
    /// Check each batch's CRC (reads whole batches, not just headers).
    verify_crc: bool,
}

impl<'a> Scanner<'a> {
    /// Batches from `start` up to `end` (the segment's size).
    pub(crate) fn new(file: &'a File, start: u64, end: u64, verify_crc: bool) -> Self {
        Self {
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
            self.file.read_exact_at(&mut self.buf, at)?;
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
        let head = self.window(pos, RECORD_BATCH_OVERHEAD)?;
        let header = BatchHeader::parse(head, pos, end).map_err(|reason| ScanError::Invalid {
            position: pos,
            reason,
        })?;
        if self.verify_crc {
            let size = usize::try_from(header.size).unwrap_or(usize::MAX);
            let batch = self.window(pos, size)?;
            let stored = u32::from_be_bytes(be(batch, CRC_AT));
            let computed = crc32c::crc32c(batch.get(ATTRIBUTES_AT..).unwrap_or_default());
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

/// Reads the whole batch described by `header` from `file`.
pub(crate) fn read_batch(file: &File, header: &BatchHeader) -> io::Result<bytes::Bytes> {
    let len = usize::try_from(header.size)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "batch too large"))?;
    let mut buf = vec![0u8; len];
    file.read_exact_at(&mut buf, header.position)?;
    Ok(bytes::Bytes::from(buf))
}
