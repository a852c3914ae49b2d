//! A segment's `.txnindex`: the aborted transactions whose ABORT marker is in that segment, in
//! Kafka's layout, so that read_committed fetches can name them and consumers drop their
//! records.
//!
//! Each entry is 34 bytes, big-endian: version (i16, 0), producer id (i64), first offset
//! (i64, the transaction's first batch), last offset (i64, its marker) and the last stable
//! offset once it was aborted (i64). Entries are appended in marker order. The file is
//! created with its first entry (a segment without aborted transactions has none, and a
//! missing file means exactly that), written through the page cache as the marker is, and
//! fsynced with the segment. The entries are also kept in memory: aborts are rare, and every
//! read_committed fetch looks them up.
//!
//! A file whose size is not a whole number of entries, or with an entry of another version,
//! is reported ([`TxnIndex::load`]) and rebuilt by the partition layer from the batches.
//!
//! Every file access goes through [`LogIo`]. Imports only `io` and `error`.

use std::fs::File;
use std::path::{Path, PathBuf};

use super::error::LogError;
use super::io::{FileKind, LogIo, OpenMode};

pub(crate) const TXN_INDEX_SUFFIX: &str = "txnindex";
/// Bytes per entry.
pub const ENTRY_SIZE: usize = 34;
const VERSION: i16 = 0;

/// One aborted transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbortedTxn {
    pub producer_id: i64,
    /// Offset of the transaction's first batch.
    pub first_offset: i64,
    /// Offset of its ABORT marker.
    pub last_offset: i64,
    /// The last stable offset right after the abort (Kafka's `lastStableOffset`).
    pub last_stable_offset: i64,
}

impl AbortedTxn {
    /// The entry's 34 bytes.
    pub fn encode(&self) -> [u8; ENTRY_SIZE] {
        let mut out = [0u8; ENTRY_SIZE];
        out[0..2].copy_from_slice(&VERSION.to_be_bytes());
        out[2..10].copy_from_slice(&self.producer_id.to_be_bytes());
        out[10..18].copy_from_slice(&self.first_offset.to_be_bytes());
        out[18..26].copy_from_slice(&self.last_offset.to_be_bytes());
        out[26..34].copy_from_slice(&self.last_stable_offset.to_be_bytes());
        out
    }

    /// Reads one entry; `None` unless `b` holds a whole version-0 entry.
    pub fn decode(b: &[u8]) -> Option<Self> {
        let b: &[u8; ENTRY_SIZE] = b.get(..ENTRY_SIZE)?.try_into().ok()?;
        let i64_at = |at: usize| {
            let mut x = [0u8; 8];
            x.copy_from_slice(&b[at..at + 8]);
            i64::from_be_bytes(x)
        };
        (i16::from_be_bytes([b[0], b[1]]) == VERSION).then(|| Self {
            producer_id: i64_at(2),
            first_offset: i64_at(10),
            last_offset: i64_at(18),
            last_stable_offset: i64_at(26),
        })
    }
}

/// The `.txnindex` of one segment.
#[derive(Debug)]
pub(crate) struct TxnIndex {
    path: PathBuf,
    entries: Vec<AbortedTxn>,
    /// Written since the last fsync.
    unsynced: bool,
    /// The file does not hold exactly `entries` (a failed write): rewritten whole at the
    /// next flush.
    rewrite: bool,
}

impl TxnIndex {
    /// An empty index at `path`; a file left there is removed.
    pub(crate) fn create(io: &dyn LogIo, path: PathBuf) -> Result<Self, LogError> {
        remove_if_exists(io, &path)?;
        Ok(Self::empty(path))
    }

    fn empty(path: PathBuf) -> Self {
        Self {
            path,
            entries: Vec::new(),
            unsynced: false,
            rewrite: false,
        }
    }

    /// Reads the index at `path` (none: no aborted transactions). The second value says why
    /// the file cannot be trusted (its entries are then dropped).
    pub(crate) fn load(io: &dyn LogIo, path: PathBuf) -> Result<(Self, Option<String>), LogError> {
        let bytes = match io.read_file(FileKind::TxnIndex, &path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok((Self::empty(path), None));
            }
            Err(e) => return Err(LogError::io("read transaction index", &path, e)),
        };
        if bytes.len() % ENTRY_SIZE != 0 {
            let problem = format!(
                "{TXN_INDEX_SUFFIX} size {} is not a whole number of entries",
                bytes.len()
            );
            return Ok((Self::empty(path), Some(problem)));
        }
        let mut entries = Vec::with_capacity(bytes.len() / ENTRY_SIZE);
        for chunk in bytes.chunks_exact(ENTRY_SIZE) {
            match AbortedTxn::decode(chunk) {
                Some(e) => entries.push(e),
                None => {
                    let problem = format!("{TXN_INDEX_SUFFIX} entry of an unknown version");
                    return Ok((Self::empty(path), Some(problem)));
                }
            }
        }
        let mut index = Self::empty(path);
        index.entries = entries;
        Ok((index, None))
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn entries(&self) -> &[AbortedTxn] {
        &self.entries
    }

    /// Appends an entry: kept in memory at once, written to the file (created if needed).
    /// A failed write is reported and the file rewritten at the next flush.
    pub(crate) fn append(&mut self, io: &dyn LogIo, entry: AbortedTxn) -> Result<(), LogError> {
        self.entries.push(entry);
        self.unsynced = true;
        if self.rewrite {
            return self.write_all(io);
        }
        let position = ((self.entries.len() - 1) * ENTRY_SIZE) as u64;
        let written = open(io, &self.path, true)
            .and_then(|f| io.write_all_at(FileKind::TxnIndex, &f, &entry.encode(), position));
        written.map_err(|e| {
            self.rewrite = true;
            LogError::io("append to transaction index", &self.path, e)
        })
    }

    /// Writes the whole file from the entries (or removes it when there are none).
    fn write_all(&mut self, io: &dyn LogIo) -> Result<(), LogError> {
        if self.entries.is_empty() {
            remove_if_exists(io, &self.path)?;
            self.rewrite = false;
            return Ok(());
        }
        let mut buf = Vec::with_capacity(self.entries.len() * ENTRY_SIZE);
        for e in &self.entries {
            buf.extend_from_slice(&e.encode());
        }
        let done = open(io, &self.path, true).and_then(|f| {
            io.set_len(FileKind::TxnIndex, &f, 0)?;
            io.write_all_at(FileKind::TxnIndex, &f, &buf, 0)
        });
        done.map_err(|e| LogError::io("write transaction index", &self.path, e))?;
        self.rewrite = false;
        self.unsynced = true;
        Ok(())
    }

    /// Drops the entries of transactions whose marker is at or past `offset` (Kafka's
    /// `TransactionIndex.truncateTo`).
    pub(crate) fn truncate_to(&mut self, io: &dyn LogIo, offset: i64) -> Result<(), LogError> {
        let before = self.entries.len();
        self.entries.retain(|e| e.last_offset < offset);
        if self.entries.len() != before || self.rewrite {
            self.write_all(io)?;
        }
        Ok(())
    }

    /// Drops every entry (the segment's entries are about to be rebuilt).
    pub(crate) fn clear(&mut self, io: &dyn LogIo) -> Result<(), LogError> {
        self.entries.clear();
        self.write_all(io)
    }

    /// Makes the file durable (rewriting it first after a failed write).
    pub(crate) fn flush(&mut self, io: &dyn LogIo) -> Result<(), LogError> {
        if self.rewrite {
            self.write_all(io)?;
        }
        if !self.unsynced {
            return Ok(());
        }
        if !self.entries.is_empty() {
            let f = open(io, &self.path, false)
                .map_err(|e| LogError::io("open transaction index", &self.path, e))?;
            io.sync(FileKind::TxnIndex, &f)
                .map_err(|e| LogError::io("fsync transaction index", &self.path, e))?;
        }
        self.unsynced = false;
        Ok(())
    }
}

fn open(io: &dyn LogIo, path: &Path, create: bool) -> std::io::Result<File> {
    let mode = if create {
        OpenMode::CreateOrOpen
    } else {
        OpenMode::Existing
    };
    io.open(FileKind::TxnIndex, path, mode)
}

fn remove_if_exists(io: &dyn LogIo, path: &Path) -> Result<(), LogError> {
    match io.remove_file(FileKind::TxnIndex, path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(LogError::io("delete transaction index", path, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::StdIo;

    fn entry(pid: i64, first: i64, last: i64) -> AbortedTxn {
        AbortedTxn {
            producer_id: pid,
            first_offset: first,
            last_offset: last,
            last_stable_offset: last + 1,
        }
    }

    #[test]
    fn entries_encode_as_kafka_lays_them_out() {
        let e = entry(0x0102, 7, 9);
        let b = e.encode();
        assert_eq!(b.len(), 34);
        assert_eq!(&b[0..2], &[0, 0]);
        assert_eq!(&b[2..10], &0x0102i64.to_be_bytes());
        assert_eq!(&b[10..18], &7i64.to_be_bytes());
        assert_eq!(&b[18..26], &9i64.to_be_bytes());
        assert_eq!(&b[26..34], &10i64.to_be_bytes());
        assert_eq!(AbortedTxn::decode(&b), Some(e));
        assert_eq!(AbortedTxn::decode(&b[..33]), None);
        let mut v1 = b;
        v1[1] = 1;
        assert_eq!(AbortedTxn::decode(&v1), None);
    }

    #[test]
    fn append_load_truncate_and_delete_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("00000000000000000000.txnindex");
        let io = StdIo;
        let mut idx = TxnIndex::create(&io, path.clone()).unwrap();
        assert!(!path.exists(), "created lazily");
        for (i, e) in [entry(1, 0, 4), entry(2, 1, 6), entry(1, 7, 9)]
            .into_iter()
            .enumerate()
        {
            idx.append(&io, e).unwrap();
            assert_eq!(
                std::fs::metadata(&path).unwrap().len(),
                ((i + 1) * 34) as u64
            );
        }
        idx.flush(&io).unwrap();
        let (back, problem) = TxnIndex::load(&io, path.clone()).unwrap();
        assert_eq!(problem, None);
        assert_eq!(back.entries(), idx.entries());
        // Markers at or past 6 go.
        idx.truncate_to(&io, 6).unwrap();
        assert_eq!(idx.entries(), &[entry(1, 0, 4)]);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 34);
        let (back, _) = TxnIndex::load(&io, path.clone()).unwrap();
        assert_eq!(back.entries(), &[entry(1, 0, 4)]);
        idx.truncate_to(&io, 0).unwrap();
        assert!(!path.exists());
    }

    #[test]
    fn a_torn_or_foreign_file_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.txnindex");
        let mut bytes = entry(1, 0, 4).encode().to_vec();
        bytes.extend_from_slice(&[0; 10]);
        std::fs::write(&path, &bytes).unwrap();
        let (idx, problem) = TxnIndex::load(&StdIo, path.clone()).unwrap();
        assert!(problem.is_some() && idx.entries().is_empty());
        let mut v5 = entry(1, 0, 4).encode();
        v5[1] = 5;
        std::fs::write(&path, v5).unwrap();
        assert!(TxnIndex::load(&StdIo, path.clone()).unwrap().1.is_some());
        std::fs::remove_file(&path).unwrap();
        let (idx, problem) = TxnIndex::load(&StdIo, path).unwrap();
        assert!(problem.is_none() && idx.entries().is_empty());
    }
}
