//! Sparse indexes of a segment, in Kafka's file formats.
//!
//! - `.index`: 8-byte entries, relative offset (u32) then file position (u32), big-endian. An
//!   entry maps the *last* offset of a batch to the position where that batch starts.
//! - `.timeindex`: 12-byte entries, timestamp (i64) then relative offset (u32): the largest
//!   timestamp seen so far in the segment and the last offset of the batch that first reached
//!   it.
//!
//! Entries are added (by `IndexTracker`) once more than `index.interval.bytes` of log data
//! went by since the last one. Index files are not preallocated: new entries are kept in
//! memory and written at the end of the file on flush, roll and close, so a sealed segment's
//! index lives on disk only (lookups binary-search it with `pread`) and memory stays bounded by
//! the active segment. Indexes are derived data: recovery rebuilds them from the `.log` file.
//!
//! Imports `files`, `io`, `error`.

use std::io;
use std::path::Path;
use std::sync::Arc;

use super::error::LogError;
use super::files::{FileCache, FileHandle};
use super::io::{FileKind, LogIo};

/// A fixed-size index entry.
pub(crate) trait IndexEntry: Copy + std::fmt::Debug {
    const SIZE: usize;
    const KIND: FileKind;
    /// Decodes `SIZE` bytes (shorter input reads as zeros; callers pass whole entries).
    fn decode(b: &[u8]) -> Self;
    fn encode(&self, out: &mut Vec<u8>);
}

fn be<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    b.get(at..at + N)
        .and_then(|s| s.try_into().ok())
        .unwrap_or([0; N])
}

/// An offset index entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetEntry {
    pub relative_offset: u32,
    pub position: u32,
}

impl IndexEntry for OffsetEntry {
    const SIZE: usize = 8;
    const KIND: FileKind = FileKind::OffsetIndex;
    fn decode(b: &[u8]) -> Self {
        Self {
            relative_offset: u32::from_be_bytes(be(b, 0)),
            position: u32::from_be_bytes(be(b, 4)),
        }
    }
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.relative_offset.to_be_bytes());
        out.extend_from_slice(&self.position.to_be_bytes());
    }
}

/// A time index entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeEntry {
    pub timestamp: i64,
    pub relative_offset: u32,
}

impl IndexEntry for TimeEntry {
    const SIZE: usize = 12;
    const KIND: FileKind = FileKind::TimeIndex;
    fn decode(b: &[u8]) -> Self {
        Self {
            timestamp: i64::from_be_bytes(be(b, 0)),
            relative_offset: u32::from_be_bytes(be(b, 8)),
        }
    }
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.timestamp.to_be_bytes());
        out.extend_from_slice(&self.relative_offset.to_be_bytes());
    }
}

/// One index file: entries on disk, then entries not written yet.
#[derive(Debug)]
pub(crate) struct Index<E> {
    /// Opened on use through the broker's [`FileCache`]: an index is read by lookups and
    /// written at flush, roll and close only.
    file: Arc<FileHandle>,
    on_disk: u64,
    pending: Vec<E>,
    last: Option<E>,
}

impl<E: IndexEntry> Index<E> {
    /// Opens (creating if missing) the index at `path`. The file's size must be a multiple of
    /// the entry size, else it reports `None` (the caller rebuilds it).
    pub(crate) fn open(
        files: &Arc<FileCache>,
        io: &Arc<dyn LogIo>,
        path: &Path,
    ) -> io::Result<Option<Self>> {
        let file = files.handle(path.to_owned(), E::KIND, io);
        let len = match file.get() {
            Ok(f) => io.file_len(E::KIND, &f)?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                io.file_len(E::KIND, &*file.create()?)?
            }
            Err(e) => return Err(e),
        };
        if len % E::SIZE as u64 != 0 {
            file.retire();
            return Ok(None);
        }
        let mut index = Self {
            file,
            on_disk: len / E::SIZE as u64,
            pending: Vec::new(),
            last: None,
        };
        index.last = match index.on_disk {
            0 => None,
            n => Some(index.get(n - 1)?),
        };
        Ok(Some(index))
    }

    /// Creates an empty index at `path`, replacing any file there.
    pub(crate) fn create(
        files: &Arc<FileCache>,
        io: &Arc<dyn LogIo>,
        path: &Path,
    ) -> io::Result<Self> {
        let file = files.handle(path.to_owned(), E::KIND, io);
        file.create()?;
        Ok(Self {
            file,
            on_disk: 0,
            pending: Vec::new(),
            last: None,
        })
    }

    pub(crate) fn path(&self) -> &Path {
        self.file.path()
    }

    /// The file was deleted: closes its descriptor.
    pub(crate) fn retire(&self) {
        self.file.retire();
    }

    pub(crate) fn len(&self) -> u64 {
        self.on_disk + self.pending.len() as u64
    }

    pub(crate) fn last(&self) -> Option<E> {
        self.last
    }

    /// Entry `i` (from memory or with one `pread`).
    pub(crate) fn get(&self, i: u64) -> io::Result<E> {
        if i >= self.on_disk {
            let at = usize::try_from(i - self.on_disk).unwrap_or(usize::MAX);
            return self.pending.get(at).copied().ok_or_else(|| {
                io::Error::new(io::ErrorKind::InvalidInput, "index entry out of range")
            });
        }
        let mut b = [0u8; 16];
        let buf = b.get_mut(..E::SIZE).unwrap_or_default();
        self.file.read_exact_at(buf, i * E::SIZE as u64)?;
        Ok(E::decode(buf))
    }

    /// The last entry for which `below(entry)` holds, given that `below` holds for a prefix of
    /// the entries (binary search).
    pub(crate) fn floor(&self, below: impl Fn(&E) -> bool) -> io::Result<Option<E>> {
        let (mut lo, mut hi) = (0u64, self.len());
        let mut found = None;
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let e = self.get(mid)?;
            if below(&e) {
                found = Some(e);
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Ok(found)
    }

    /// Adds an entry in memory; [`Self::persist`] writes it.
    pub(crate) fn push(&mut self, e: E) {
        self.pending.push(e);
        self.last = Some(e);
    }

    /// Writes the entries kept in memory at the end of the file. On failure the file is cut
    /// back and the entries stay in memory for the next try.
    pub(crate) fn persist(&mut self, io: &dyn LogIo) -> Result<(), LogError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let mut buf = Vec::with_capacity(self.pending.len() * E::SIZE);
        for e in &self.pending {
            e.encode(&mut buf);
        }
        let at = self.on_disk * E::SIZE as u64;
        let file = self.open_file()?;
        if let Err(e) = io.write_all_at(E::KIND, &file, &buf, at) {
            let _ = io.set_len(E::KIND, &file, at);
            return Err(LogError::io("write index", self.path(), e));
        }
        self.on_disk += self.pending.len() as u64;
        self.pending.clear();
        Ok(())
    }

    /// Writes pending entries and fsyncs the file.
    pub(crate) fn sync(&mut self, io: &dyn LogIo) -> Result<(), LogError> {
        self.persist(io)?;
        io.sync(E::KIND, &*self.open_file()?)
            .map_err(|e| LogError::io("fsync index", self.path(), e))
    }

    fn open_file(&self) -> Result<Arc<std::fs::File>, LogError> {
        self.file
            .get()
            .map_err(|e| LogError::io("open index", self.path(), e))
    }

    /// Keeps the first `n` entries.
    pub(crate) fn truncate_entries(&mut self, n: u64, io: &dyn LogIo) -> Result<(), LogError> {
        if n < self.on_disk {
            io.set_len(E::KIND, &*self.open_file()?, n * E::SIZE as u64)
                .map_err(|e| LogError::io("truncate index", self.path(), e))?;
            self.on_disk = n;
            self.pending.clear();
        } else {
            let keep = usize::try_from(n - self.on_disk).unwrap_or(usize::MAX);
            self.pending.truncate(keep);
        }
        self.last = match self.len() {
            0 => None,
            len => Some(
                self.get(len - 1)
                    .map_err(|e| LogError::io("read index", self.path(), e))?,
            ),
        };
        Ok(())
    }

    /// Keeps the entries for which `keep` holds (a prefix).
    pub(crate) fn truncate_where(
        &mut self,
        keep: impl Fn(&E) -> bool,
        io: &dyn LogIo,
    ) -> Result<(), LogError> {
        let (mut lo, mut hi) = (0u64, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let e = self
                .get(mid)
                .map_err(|e| LogError::io("read index", self.path(), e))?;
            if keep(&e) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        self.truncate_entries(lo, io)
    }

    /// Reads every entry on disk in order and checks each against the previous one with
    /// `check(prev, entry)`; returns the first complaint.
    pub(crate) fn check(
        &self,
        mut check: impl FnMut(Option<&E>, &E) -> Result<(), &'static str>,
    ) -> io::Result<Result<(), String>> {
        const CHUNK_ENTRIES: u64 = 4096;
        let mut prev: Option<E> = None;
        let mut i = 0;
        let mut buf = Vec::new();
        let file = if self.on_disk > 0 {
            Some(self.file.get()?)
        } else {
            None
        };
        while let Some(file) = file.as_ref().filter(|_| i < self.on_disk) {
            let n = CHUNK_ENTRIES.min(self.on_disk - i);
            buf.resize(n as usize * E::SIZE, 0);
            self.file
                .io()
                .read_exact_at(E::KIND, file, &mut buf, i * E::SIZE as u64)?;
            for (k, raw) in buf.chunks_exact(E::SIZE).enumerate() {
                let e = E::decode(raw);
                if let Err(reason) = check(prev.as_ref(), &e) {
                    return Ok(Err(format!("entry {}: {reason}", i + k as u64)));
                }
                prev = Some(e);
            }
            i += n;
        }
        Ok(Ok(()))
    }
}

/// Decides when a segment gets index entries, the same way while appending and while
/// rebuilding an index from the log file.
#[derive(Debug, Clone)]
pub(crate) struct IndexTracker {
    base_offset: i64,
    pub(crate) interval: u64,
    bytes_since_entry: u64,
    /// Largest batch max timestamp so far, and the last offset of the batch that reached it.
    pub(crate) max_timestamp: i64,
    pub(crate) offset_of_max_timestamp: i64,
    last_time_entry: i64,
}

impl IndexTracker {
    pub(crate) fn new(base_offset: i64, interval: u64) -> Self {
        Self {
            base_offset,
            interval,
            bytes_since_entry: 0,
            max_timestamp: -1,
            offset_of_max_timestamp: base_offset,
            last_time_entry: -1,
        }
    }

    /// Continues tracking a segment loaded from disk.
    pub(crate) fn resume(
        base_offset: i64,
        interval: u64,
        bytes_since_entry: u64,
        last_time_entry: Option<TimeEntry>,
    ) -> Self {
        let mut t = Self::new(base_offset, interval);
        t.bytes_since_entry = bytes_since_entry;
        if let Some(e) = last_time_entry {
            t.max_timestamp = e.timestamp;
            t.offset_of_max_timestamp = base_offset + i64::from(e.relative_offset);
            t.last_time_entry = e.timestamp;
        }
        t
    }

    fn relative(&self, offset: i64) -> u32 {
        u32::try_from(offset - self.base_offset).unwrap_or(u32::MAX)
    }

    /// Accounts for a batch at `position` and returns the index entries it causes.
    pub(crate) fn observe(
        &mut self,
        position: u64,
        size: u64,
        last_offset: i64,
        max_timestamp: i64,
    ) -> (Option<OffsetEntry>, Option<TimeEntry>) {
        if max_timestamp > self.max_timestamp {
            self.max_timestamp = max_timestamp;
            self.offset_of_max_timestamp = last_offset;
        }
        let mut out = (None, None);
        if self.bytes_since_entry > self.interval {
            out.0 = Some(OffsetEntry {
                relative_offset: self.relative(last_offset),
                position: u32::try_from(position).unwrap_or(u32::MAX),
            });
            out.1 = self.time_entry();
            self.bytes_since_entry = 0;
        }
        self.bytes_since_entry += size;
        out
    }

    /// The time entry recording the current maximum, if it is not in the index yet (also used
    /// when the segment is sealed or closed).
    pub(crate) fn time_entry(&mut self) -> Option<TimeEntry> {
        if self.max_timestamp <= self.last_time_entry {
            return None;
        }
        self.last_time_entry = self.max_timestamp;
        Some(TimeEntry {
            timestamp: self.max_timestamp,
            relative_offset: self.relative(self.offset_of_max_timestamp),
        })
    }
}
