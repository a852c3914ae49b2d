//! One segment: a `.log` file of record batches and its two indexes (and its `.txnindex`).
//! The mechanisms to load, check, scan and rebuild a segment are here; when to use which
//! after a shutdown is [`super::recovery`]'s decision. Imports `index`, `txn_index`, `scan`,
//! `files`, `io`, `error`.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use kafka_protocol::record::RecordBatch;

use super::FileSlice;
use super::error::LogError;
use super::files::{FileCache, FileHandle};
use super::index::{Index, IndexTracker, OffsetEntry, TimeEntry};
use super::io::{FileKind, LogIo};
use super::scan::{BatchHeader, ScanError, Scanner, read_batch};
use super::txn_index::{AbortedTxn, TXN_INDEX_SUFFIX, TxnIndex};

/// Largest decompressed payload decoded to find a record by timestamp.
const MAX_DECOMPRESSED: usize = 256 * 1024 * 1024;

pub(crate) const LOG_SUFFIX: &str = "log";
pub(crate) const INDEX_SUFFIX: &str = "index";
pub(crate) const TIME_INDEX_SUFFIX: &str = "timeindex";

/// `<dir>/<20-digit base offset>.<suffix>`.
pub(crate) fn segment_path(dir: &Path, base_offset: i64, suffix: &str) -> PathBuf {
    dir.join(format!("{base_offset:020}.{suffix}"))
}

/// A batch of an append: where it sits in the appended buffer and what it holds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AppendedBatch {
    pub(crate) position: usize,
    pub(crate) size: usize,
    pub(crate) last_offset: i64,
    pub(crate) max_timestamp: i64,
}

/// What a full scan of a segment found.
#[derive(Debug, Default)]
pub(crate) struct ScanReport {
    pub(crate) batches: u64,
    /// Where the valid data ends and why, when it ends before the file does.
    pub(crate) invalid: Option<(u64, String)>,
    pub(crate) truncated_bytes: u64,
    /// `(epoch, base offset)` of each batch whose leader epoch is above all before it.
    pub(crate) epochs: Vec<(i32, i64)>,
}

/// Whether a full scan may cut the file at the first invalid batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OnInvalid {
    Truncate,
    Fail,
}

/// What a segment read returned.
#[derive(Debug)]
pub(crate) struct SegmentRead {
    pub(crate) slice: Option<FileSlice>,
    /// Offset after the last batch returned.
    pub(crate) next_offset: Option<i64>,
    /// The read stopped at a limit (size or upper bound), not at the end of the segment.
    pub(crate) limited: bool,
}

#[derive(Debug)]
pub(crate) struct Segment {
    base_offset: i64,
    path: PathBuf,
    /// The `.log` file, opened on use through the broker's [`FileCache`].
    log: Arc<FileHandle>,
    size: u64,
    offset_index: Index<OffsetEntry>,
    time_index: Index<TimeEntry>,
    tracker: IndexTracker,
    next_offset: i64,
    /// When the segment got its first append (for `segment.ms`); unknown after a reopen
    /// until the next append.
    pub(crate) created_ms: Option<i64>,
    /// The aborted transactions whose marker is here (see [`super::txn_index`]).
    txn_index: TxnIndex,
    /// Why the `.txnindex` found at open could not be used (it must be rebuilt).
    pub(crate) txn_index_problem: Option<String>,
}

fn scan_err(path: &Path, e: ScanError) -> LogError {
    match e {
        ScanError::Io(e) => LogError::io("read segment", path, e),
        ScanError::Invalid { position, reason } => LogError::corrupt(path, position, reason),
    }
}

/// Opens an index, or creates an empty one noting in `problem` why the old one is unusable.
fn open_index<E: super::index::IndexEntry>(
    files: &Arc<FileCache>,
    io: &Arc<dyn LogIo>,
    dir: &Path,
    base_offset: i64,
    suffix: &str,
    log_size: u64,
    problem: &mut Option<String>,
) -> Result<Index<E>, LogError> {
    let p = segment_path(dir, base_offset, suffix);
    let exists = io
        .exists(E::KIND, &p)
        .map_err(|e| LogError::io("stat index", &p, e))?;
    if !exists && log_size > 0 {
        *problem = Some(format!("{suffix} file missing"));
    }
    match Index::open(files, io, &p).map_err(|e| LogError::io("open index", &p, e))? {
        Some(index) => Ok(index),
        None => {
            *problem = Some(format!(
                "{suffix} file size is not a whole number of entries"
            ));
            Index::create(files, io, &p).map_err(|e| LogError::io("create index", &p, e))
        }
    }
}

impl Segment {
    /// Creates a new, empty segment.
    pub(crate) fn create(
        files: &Arc<FileCache>,
        io: &Arc<dyn LogIo>,
        dir: &Path,
        base_offset: i64,
        interval: u64,
    ) -> Result<Self, LogError> {
        let path = segment_path(dir, base_offset, LOG_SUFFIX);
        let log = files.handle(path.clone(), FileKind::Log, io);
        log.create()
            .map_err(|e| LogError::io("create segment", &path, e))?;
        let index_path = segment_path(dir, base_offset, INDEX_SUFFIX);
        let time_path = segment_path(dir, base_offset, TIME_INDEX_SUFFIX);
        let offset_index = Index::create(files, io, &index_path)
            .map_err(|e| LogError::io("create index", &index_path, e))?;
        let time_index = Index::create(files, io, &time_path)
            .map_err(|e| LogError::io("create index", &time_path, e))?;
        let txn_index = TxnIndex::create(
            io.as_ref(),
            segment_path(dir, base_offset, TXN_INDEX_SUFFIX),
        )?;
        Ok(Self {
            base_offset,
            path,
            log,
            size: 0,
            offset_index,
            time_index,
            tracker: IndexTracker::new(base_offset, interval),
            next_offset: base_offset,
            created_ms: None,
            txn_index,
            txn_index_problem: None,
        })
    }

    /// Opens a segment's files without checking them; also reports an index file that is
    /// missing or not a whole number of entries (it is then empty).
    pub(crate) fn load(
        files: &Arc<FileCache>,
        io: &Arc<dyn LogIo>,
        dir: &Path,
        base_offset: i64,
        interval: u64,
    ) -> Result<(Self, Option<String>), LogError> {
        let path = segment_path(dir, base_offset, LOG_SUFFIX);
        let log = files.handle(path.clone(), FileKind::Log, io);
        let size = log
            .file_len()
            .map_err(|e| LogError::io("open segment", &path, e))?;
        let mut problem = None;
        let offset_index = open_index(
            files,
            io,
            dir,
            base_offset,
            INDEX_SUFFIX,
            size,
            &mut problem,
        )?;
        let time_index = open_index(
            files,
            io,
            dir,
            base_offset,
            TIME_INDEX_SUFFIX,
            size,
            &mut problem,
        )?;
        let (txn_index, txn_index_problem) = TxnIndex::load(
            io.as_ref(),
            segment_path(dir, base_offset, TXN_INDEX_SUFFIX),
        )?;
        let seg = Self {
            base_offset,
            path,
            log,
            size,
            offset_index,
            time_index,
            tracker: IndexTracker::new(base_offset, interval),
            next_offset: base_offset,
            created_ms: None,
            txn_index,
            txn_index_problem,
        };
        Ok((seg, problem))
    }

    /// Checks the offset index against the log file's size: `Ok(Err(why))` if it is unusable.
    pub(crate) fn check_offset_index(&self) -> Result<Result<(), String>, LogError> {
        let size = self.size;
        let checked = self.offset_index.check(|prev, e| {
            if u64::from(e.position) >= size {
                return Err("position past the end of the log file");
            }
            match prev {
                Some(p) if e.relative_offset <= p.relative_offset || e.position <= p.position => {
                    Err("entries are not increasing")
                }
                _ => Ok(()),
            }
        });
        checked.map_err(|e| LogError::io("read index", self.offset_index.path(), e))
    }

    /// Checks the time index against the next offset (call after [`Self::load_tail`]).
    pub(crate) fn check_time_index(&self) -> Result<Result<(), String>, LogError> {
        let last_relative = self.next_offset - 1 - self.base_offset;
        let checked = self.time_index.check(|prev, e| {
            if i64::from(e.relative_offset) > last_relative.max(0) {
                return Err("offset past the end of the log");
            }
            match prev {
                Some(p) if e.timestamp <= p.timestamp || e.relative_offset < p.relative_offset => {
                    Err("entries are not increasing")
                }
                _ => Ok(()),
            }
        });
        checked.map_err(|e| LogError::io("read index", self.time_index.path(), e))
    }

    /// Walks the batches from the last offset index entry to the end (headers only): sets the
    /// next offset and the index tracker, adding any index entries the tail should have.
    pub(crate) fn load_tail(&mut self) -> Result<(), LogError> {
        let start = self
            .offset_index
            .last()
            .map_or(0, |e| u64::from(e.position));
        self.tracker = IndexTracker::resume(
            self.base_offset,
            self.tracker_interval(),
            0,
            self.time_index.last(),
        );
        self.next_offset = match self.offset_index.last() {
            Some(e) => self.base_offset + i64::from(e.relative_offset),
            None => self.base_offset,
        };
        let log = self.file()?;
        let handle = Arc::clone(&self.log);
        let mut scanner = Scanner::new(handle.io(), &log, start, self.size, false);
        while let Some(h) = scanner.next_batch().map_err(|e| scan_err(&self.path, e))? {
            self.observe(&h);
        }
        Ok(())
    }

    fn tracker_interval(&self) -> u64 {
        self.tracker.interval
    }

    fn observe(&mut self, h: &BatchHeader) {
        let (o, t) = self
            .tracker
            .observe(h.position, h.size, h.last_offset, h.max_timestamp);
        if let Some(o) = o {
            self.offset_index.push(o);
        }
        if let Some(t) = t {
            self.time_index.push(t);
        }
        self.next_offset = h.next_offset();
    }

    /// Reads every batch from the start, checking length, magic, CRC-32C and that offsets
    /// increase from `min_offset`, and rebuilds both indexes. At the first invalid batch it
    /// either cuts the file there ([`OnInvalid::Truncate`]) or fails with
    /// [`LogError::Corrupt`] without changing anything ([`OnInvalid::Fail`]).
    pub(crate) fn scan_and_rebuild(
        &mut self,
        io: &dyn LogIo,
        min_offset: i64,
        on_invalid: OnInvalid,
    ) -> Result<ScanReport, LogError> {
        let mut report = ScanReport::default();
        let mut tracker = IndexTracker::new(self.base_offset, self.tracker_interval());
        let (mut offsets, mut times) = (Vec::new(), Vec::new());
        let mut expected = min_offset.max(self.base_offset);
        let mut valid_end = 0;
        let log = self.file()?;
        let mut scanner = Scanner::new(io, &log, 0, self.size, true);
        loop {
            let h = match scanner.next_batch() {
                Ok(Some(h)) => h,
                Ok(None) => break,
                Err(ScanError::Io(e)) => return Err(LogError::io("read segment", &self.path, e)),
                Err(ScanError::Invalid { position, reason }) => {
                    report.invalid = Some((position, reason.to_owned()));
                    break;
                }
            };
            let reason = if h.base_offset < expected {
                Some("offsets are not increasing")
            } else if h.last_offset - self.base_offset > i64::from(i32::MAX) {
                Some("offset too far from the segment's base offset")
            } else {
                None
            };
            if let Some(reason) = reason {
                report.invalid = Some((h.position, reason.to_owned()));
                break;
            }
            if report
                .epochs
                .last()
                .is_none_or(|&(e, _)| h.leader_epoch > e)
            {
                report.epochs.push((h.leader_epoch, h.base_offset));
            }
            let (o, t) = tracker.observe(h.position, h.size, h.last_offset, h.max_timestamp);
            offsets.extend(o);
            times.extend(t);
            expected = h.next_offset();
            valid_end = h.end();
            report.batches += 1;
        }
        if let Some((position, reason)) = &report.invalid {
            if on_invalid == OnInvalid::Fail {
                return Err(LogError::corrupt(&self.path, *position, reason));
            }
            tracing::warn!(
                segment = %self.path.display(),
                position,
                %reason,
                valid_bytes = valid_end,
                dropped_bytes = self.size - valid_end,
                "truncating segment at the first invalid batch"
            );
            io.set_len(FileKind::Log, &log, valid_end)
                .map_err(|e| LogError::io("truncate segment", &self.path, e))?;
            report.truncated_bytes = self.size - valid_end;
            self.size = valid_end;
        }
        // Like a sealed segment, a recovered one records its final maximum.
        times.extend(tracker.time_entry());
        self.offset_index.truncate_entries(0, io)?;
        self.time_index.truncate_entries(0, io)?;
        offsets.into_iter().for_each(|e| self.offset_index.push(e));
        times.into_iter().for_each(|e| self.time_index.push(e));
        self.offset_index.persist(io)?;
        self.time_index.persist(io)?;
        self.tracker = tracker;
        self.next_offset = expected.max(self.base_offset);
        if self.size == 0 {
            self.next_offset = self.base_offset;
        }
        Ok(report)
    }

    pub(crate) fn base_offset(&self) -> i64 {
        self.base_offset
    }
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
    pub(crate) fn size(&self) -> u64 {
        self.size
    }
    pub(crate) fn is_empty(&self) -> bool {
        self.size == 0
    }
    /// Offset after the last batch (the base offset when empty).
    pub(crate) fn next_offset(&self) -> i64 {
        self.next_offset
    }
    /// The open `.log` file (opened again if the cache closed it).
    pub(crate) fn file(&self) -> Result<Arc<File>, LogError> {
        self.log
            .get()
            .map_err(|e| LogError::io("open segment", &self.path, e))
    }
    /// The `.log` file's handle (for the flusher, which opens it when it syncs).
    pub(crate) fn handle(&self) -> &Arc<FileHandle> {
        &self.log
    }
    /// Largest batch max timestamp (-1 if none) and the last offset of its batch.
    pub(crate) fn max_timestamp(&self) -> (i64, i64) {
        (
            self.tracker.max_timestamp,
            self.tracker.offset_of_max_timestamp,
        )
    }

    /// The timestamp retention goes by: the largest record timestamp, else the file's mtime.
    pub(crate) fn largest_timestamp(&self) -> i64 {
        if self.tracker.max_timestamp >= 0 {
            return self.tracker.max_timestamp;
        }
        self.log
            .io()
            .modified(FileKind::Log, &self.path)
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(-1, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
    }

    /// Writes `buf` (whole stamped batches) at the end with one write. On failure the file is
    /// cut back to its previous size and nothing changes.
    pub(crate) fn append(
        &mut self,
        io: &dyn LogIo,
        buf: &[u8],
        batches: &[AppendedBatch],
        now_ms: i64,
    ) -> Result<(), LogError> {
        let log = self.file()?;
        if let Err(e) = io.write_all_at(FileKind::Log, &log, buf, self.size) {
            if let Err(undo) = io.set_len(FileKind::Log, &log, self.size) {
                tracing::warn!(
                    segment = %self.path.display(),
                    error = %undo,
                    "could not cut a failed write back; the bytes past the log end will be \
                     overwritten by the next append or dropped by recovery"
                );
            }
            return Err(LogError::io("append", &self.path, e));
        }
        for b in batches {
            let h = BatchHeader {
                position: self.size + b.position as u64,
                size: b.size as u64,
                base_offset: 0,
                last_offset: b.last_offset,
                max_timestamp: b.max_timestamp,
                leader_epoch: 0,
            };
            self.observe(&h);
        }
        self.created_ms.get_or_insert(now_ms);
        self.size += buf.len() as u64;
        Ok(())
    }

    /// Becomes a sealed segment (or is closed): cuts any bytes a failed write left past the
    /// end, records the final time index entry and writes the indexes.
    pub(crate) fn seal(&mut self, io: &dyn LogIo) -> Result<(), LogError> {
        let log = self.file()?;
        let len = io
            .file_len(FileKind::Log, &log)
            .map_err(|e| LogError::io("stat segment", &self.path, e))?;
        if len > self.size {
            io.set_len(FileKind::Log, &log, self.size)
                .map_err(|e| LogError::io("truncate segment", &self.path, e))?;
        }
        if let Some(t) = self.tracker.time_entry() {
            self.time_index.push(t);
        }
        self.offset_index.persist(io)?;
        self.time_index.persist(io)
    }

    /// Writes the indexes and fsyncs the files.
    pub(crate) fn flush(&mut self, io: &dyn LogIo) -> Result<(), LogError> {
        io.sync(FileKind::Log, &*self.file()?)
            .map_err(|e| LogError::io("fsync segment", &self.path, e))?;
        self.offset_index.sync(io)?;
        self.time_index.sync(io)?;
        self.txn_index.flush(io)
    }

    /// The aborted transactions whose marker is in this segment, in marker order.
    pub(crate) fn aborted_txns(&self) -> &[AbortedTxn] {
        self.txn_index.entries()
    }

    /// Records an aborted transaction whose marker is in this segment.
    pub(crate) fn add_aborted_txn(
        &mut self,
        io: &dyn LogIo,
        entry: AbortedTxn,
    ) -> Result<(), LogError> {
        self.txn_index.append(io, entry)
    }

    /// Makes the `.txnindex` durable.
    pub(crate) fn flush_txn_index(&mut self, io: &dyn LogIo) -> Result<(), LogError> {
        self.txn_index.flush(io)
    }

    /// Forgets the segment's aborted transactions (before they are rebuilt from the log).
    pub(crate) fn clear_aborted_txns(&mut self, io: &dyn LogIo) -> Result<(), LogError> {
        self.txn_index_problem = None;
        self.txn_index.clear(io)
    }

    /// Position of the batch to start a search for `offset` at (from the offset index).
    fn start_position(&self, offset: i64) -> Result<u64, LogError> {
        let rel = offset - self.base_offset;
        let entry = self
            .offset_index
            .floor(|e| i64::from(e.relative_offset) <= rel)
            .map_err(|e| LogError::io("read index", self.offset_index.path(), e))?;
        Ok(entry.map_or(0, |e| u64::from(e.position)))
    }

    /// The first batch whose last offset is at least `offset`.
    pub(crate) fn find_batch(&self, offset: i64) -> Result<Option<BatchHeader>, LogError> {
        let start = self.start_position(offset)?;
        let log = self.file()?;
        let mut scanner = Scanner::new(self.log.io(), &log, start, self.size, false);
        while let Some(h) = scanner.next_batch().map_err(|e| scan_err(&self.path, e))? {
            if h.last_offset >= offset {
                return Ok(Some(h));
            }
        }
        Ok(None)
    }

    /// Whole batches from the one containing `offset`, at most `max_bytes` of them (but the
    /// first even if larger, when `min_one`), none reaching `upper_bound`.
    pub(crate) fn read(
        &self,
        offset: i64,
        max_bytes: usize,
        upper_bound: i64,
        min_one: bool,
    ) -> Result<SegmentRead, LogError> {
        let start = self.start_position(offset)?;
        let log = self.file()?;
        let mut scanner = Scanner::new(self.log.io(), &log, start, self.size, false);
        let (mut first, mut end, mut used) = (None, 0u64, 0usize);
        let mut next_offset = None;
        let mut limited = false;
        while let Some(h) = scanner.next_batch().map_err(|e| scan_err(&self.path, e))? {
            if h.last_offset < offset {
                continue;
            }
            let size = usize::try_from(h.size).unwrap_or(usize::MAX);
            let fits = used.saturating_add(size) <= max_bytes || (first.is_none() && min_one);
            if h.last_offset >= upper_bound || !fits {
                limited = true;
                break;
            }
            first.get_or_insert(h.position);
            used += size;
            end = h.end();
            next_offset = Some(h.next_offset());
        }
        Ok(SegmentRead {
            slice: first.map(|position| FileSlice {
                file: Arc::clone(&log),
                position,
                len: (end - position) as usize,
            }),
            next_offset,
            limited,
        })
    }

    /// The first record at or after `start_offset` with a timestamp at least `timestamp`:
    /// (offset, timestamp).
    pub(crate) fn find_timestamp(
        &self,
        timestamp: i64,
        start_offset: i64,
    ) -> Result<Option<(i64, i64)>, LogError> {
        let entry = self
            .time_index
            .floor(|e| e.timestamp <= timestamp)
            .map_err(|e| LogError::io("read index", self.time_index.path(), e))?;
        let from = entry
            .map_or(self.base_offset, |e| {
                self.base_offset + i64::from(e.relative_offset)
            })
            .max(start_offset);
        let start = self.start_position(from)?;
        let log = self.file()?;
        let mut scanner = Scanner::new(self.log.io(), &log, start, self.size, false);
        while let Some(h) = scanner.next_batch().map_err(|e| scan_err(&self.path, e))? {
            if h.last_offset < start_offset || h.max_timestamp < timestamp {
                continue;
            }
            if let Some(found) =
                self.record_at_or_after(&h, |off, ts| off >= start_offset && ts >= timestamp)?
            {
                return Ok(Some(found));
            }
        }
        Ok(None)
    }

    /// The first record of the batch `h` for which `pred(offset, timestamp)` holds.
    pub(crate) fn record_at_or_after(
        &self,
        h: &BatchHeader,
        pred: impl Fn(i64, i64) -> bool,
    ) -> Result<Option<(i64, i64)>, LogError> {
        let bytes = read_batch(self.log.io(), &*self.file()?, h)
            .map_err(|e| LogError::io("read batch", &self.path, e))?;
        let corrupt = |e: kafka_protocol::DecodeError| LogError::corrupt(&self.path, h.position, e);
        let batch = RecordBatch::from_bytes(bytes).map_err(corrupt)?;
        for record in batch.records(MAX_DECOMPRESSED).map_err(corrupt)? {
            let record = record.map_err(corrupt)?;
            let (off, ts) = (record.offset(&batch), record.timestamp(&batch));
            if pred(off, ts) {
                return Ok(Some((off, ts)));
            }
        }
        Ok(None)
    }

    /// Removes every batch whose last offset is at least `offset`; returns the bytes removed.
    pub(crate) fn truncate_to(&mut self, io: &dyn LogIo, offset: i64) -> Result<u64, LogError> {
        let Some(h) = self.find_batch(offset)? else {
            return Ok(0);
        };
        let cut = h.position;
        self.offset_index
            .truncate_where(|e| u64::from(e.position) < cut, io)?;
        let rel = offset - self.base_offset;
        self.time_index
            .truncate_where(|e| i64::from(e.relative_offset) < rel, io)?;
        io.set_len(FileKind::Log, &*self.file()?, cut)
            .map_err(|e| LogError::io("truncate segment", &self.path, e))?;
        self.txn_index.truncate_to(io, offset)?;
        let removed = self.size - cut;
        self.size = cut;
        if cut == 0 {
            self.created_ms = None;
        }
        self.load_tail()?;
        self.offset_index.persist(io)?;
        self.time_index.persist(io)?;
        Ok(removed)
    }

    /// Deletes the segment's files (and closes their descriptors; holders keep theirs).
    pub(crate) fn delete_files(&self, io: &dyn LogIo) -> Result<(), LogError> {
        self.log.retire();
        self.offset_index.retire();
        self.time_index.retire();
        for (kind, p) in [
            (FileKind::Log, self.path.as_path()),
            (FileKind::OffsetIndex, self.offset_index.path()),
            (FileKind::TimeIndex, self.time_index.path()),
            (FileKind::TxnIndex, self.txn_index.path()),
        ] {
            match io.remove_file(kind, p) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(LogError::io("delete segment", p, e)),
            }
        }
        Ok(())
    }
}
