//! The file operations the log performs that change data on disk, behind a trait so tests (and
//! the broker's own crash tests) can count them and inject faults such as a full disk.
//!
//! Reads go straight to [`std::fs::File`] (`pread`): a failed read changes nothing.

use std::fmt;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Which kind of file an operation touches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileKind {
    /// A segment's `.log` file.
    Log,
    /// A segment's `.index` file.
    OffsetIndex,
    /// A segment's `.timeindex` file.
    TimeIndex,
    /// A checkpoint file (recovery point, log start offset, leader epochs).
    Checkpoint,
    /// A partition directory (fsync after creating or removing files).
    Dir,
    /// A segment's `.txnindex` file (aborted transactions).
    TxnIndex,
}

impl FileKind {
    const ALL: usize = 6;

    fn slot(self) -> usize {
        match self {
            Self::Log => 0,
            Self::OffsetIndex => 1,
            Self::TimeIndex => 2,
            Self::Checkpoint => 3,
            Self::Dir => 4,
            Self::TxnIndex => 5,
        }
    }
}

/// Writes, fsyncs and truncations of log files. The default methods do the real thing.
pub trait LogIo: Send + Sync + fmt::Debug {
    /// Writes all of `buf` at `position`. On error, part of `buf` may have been written.
    fn write_all_at(
        &self,
        kind: FileKind,
        file: &File,
        buf: &[u8],
        position: u64,
    ) -> io::Result<()> {
        let _ = kind;
        file.write_all_at(buf, position)
    }

    /// Makes the file's data (and the metadata needed to read it back) durable.
    fn sync(&self, kind: FileKind, file: &File) -> io::Result<()> {
        let _ = kind;
        file.sync_data()
    }

    /// Sets the file's length (truncation after a failed write, recovery, `truncate_to`).
    fn set_len(&self, kind: FileKind, file: &File, len: u64) -> io::Result<()> {
        let _ = kind;
        file.set_len(len)
    }
}

/// The real file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct StdIo;

impl LogIo for StdIo {}

/// A write failure armed in a [`FaultInjector`].
#[derive(Debug, Clone, Copy)]
struct WriteFault {
    kind: FileKind,
    /// Matching writes that still succeed before the failures start.
    skip: u64,
    /// Bytes of the failing write that reach the file before the error.
    partial: usize,
    errno: i32,
}

#[derive(Debug, Default)]
struct FaultState {
    write: Option<WriteFault>,
    sync_errno: Option<i32>,
    set_len_errno: Option<i32>,
    sync_delay: Duration,
}

/// A [`LogIo`] over the real file system that counts operations per [`FileKind`] and fails
/// them on request: the `ENOSPC` of a full disk after a short write, a failing fsync, a slow
/// fsync (to let group commit gather appenders).
#[derive(Debug, Default)]
pub struct FaultInjector {
    state: Mutex<FaultState>,
    writes: [AtomicU64; FileKind::ALL],
    syncs: [AtomicU64; FileKind::ALL],
}

impl FaultInjector {
    pub fn new() -> Self {
        Self::default()
    }

    fn with_state<R>(&self, f: impl FnOnce(&mut FaultState) -> R) -> R {
        let mut guard = crate::sync::lock(&self.state);
        f(&mut guard)
    }

    /// From now on, after `skip` more successful writes to files of `kind`, every write to such
    /// a file writes its first `partial` bytes and then fails with `ENOSPC`, until
    /// [`Self::clear`].
    pub fn fail_writes(&self, kind: FileKind, skip: u64, partial: usize) {
        self.with_state(|s| {
            s.write = Some(WriteFault {
                kind,
                skip,
                partial,
                errno: libc::ENOSPC,
            });
        });
    }

    /// Every fsync fails with `EIO` until [`Self::clear`].
    pub fn fail_syncs(&self) {
        self.with_state(|s| s.sync_errno = Some(libc::EIO));
    }

    /// Every truncation fails with `EIO` until [`Self::clear`].
    pub fn fail_set_len(&self) {
        self.with_state(|s| s.set_len_errno = Some(libc::EIO));
    }

    /// Each fsync sleeps this long first (a slow disk).
    pub fn set_sync_delay(&self, delay: Duration) {
        self.with_state(|s| s.sync_delay = delay);
    }

    /// Disarms every fault (the delay stays).
    pub fn clear(&self) {
        self.with_state(|s| {
            s.write = None;
            s.sync_errno = None;
            s.set_len_errno = None;
        });
    }

    /// Writes attempted on files of `kind` so far.
    pub fn writes(&self, kind: FileKind) -> u64 {
        self.writes
            .get(kind.slot())
            .map_or(0, |c| c.load(Ordering::SeqCst))
    }

    /// Fsyncs attempted on files of `kind` so far.
    pub fn syncs(&self, kind: FileKind) -> u64 {
        self.syncs
            .get(kind.slot())
            .map_or(0, |c| c.load(Ordering::SeqCst))
    }

    fn count(counters: &[AtomicU64; FileKind::ALL], kind: FileKind) {
        if let Some(c) = counters.get(kind.slot()) {
            c.fetch_add(1, Ordering::SeqCst);
        }
    }
}

impl LogIo for FaultInjector {
    fn write_all_at(
        &self,
        kind: FileKind,
        file: &File,
        buf: &[u8],
        position: u64,
    ) -> io::Result<()> {
        Self::count(&self.writes, kind);
        let fault = self.with_state(|s| match &mut s.write {
            Some(f) if f.kind == kind && f.skip > 0 => {
                f.skip -= 1;
                None
            }
            Some(f) if f.kind == kind => Some(*f),
            _ => None,
        });
        match fault {
            None => file.write_all_at(buf, position),
            Some(f) => {
                let part = buf.get(..f.partial.min(buf.len())).unwrap_or_default();
                file.write_all_at(part, position)?;
                Err(io::Error::from_raw_os_error(f.errno))
            }
        }
    }

    fn sync(&self, kind: FileKind, file: &File) -> io::Result<()> {
        Self::count(&self.syncs, kind);
        let (errno, delay) = self.with_state(|s| (s.sync_errno, s.sync_delay));
        if !delay.is_zero() {
            std::thread::sleep(delay);
        }
        match errno {
            Some(e) => Err(io::Error::from_raw_os_error(e)),
            None => file.sync_data(),
        }
    }

    fn set_len(&self, kind: FileKind, file: &File, len: u64) -> io::Result<()> {
        let _ = kind;
        match self.with_state(|s| s.set_len_errno) {
            Some(e) => Err(io::Error::from_raw_os_error(e)),
            None => file.set_len(len),
        }
    }
}
