//! [`FaultInjector`]: a [`LogIo`] over the real file system that counts every call per
//! operation and [`FileKind`], and fails the calls a test arms: the `ENOSPC` of a full disk
//! after a short write, a failing or slow fsync, a directory that cannot be listed, a file
//! that cannot be opened, renamed or removed.
//!
//! Imports only [`super::io`].

use std::fs::File;
use std::io;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use super::io::{DirEntry, FileKind, LogIo, OpenMode, StdIo};

/// A [`LogIo`] operation, as [`FaultInjector`] counts and fails them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IoOp {
    Open,
    Read,
    Write,
    Sync,
    SetLen,
    /// `file_len`, `modified` and `exists`.
    Stat,
    ReadFile,
    Remove,
    Rename,
    CreateDir,
    RemoveDir,
    ListDir,
}

impl IoOp {
    const ALL: usize = 12;

    fn slot(self) -> usize {
        match self {
            Self::Open => 0,
            Self::Read => 1,
            Self::Write => 2,
            Self::Sync => 3,
            Self::SetLen => 4,
            Self::Stat => 5,
            Self::ReadFile => 6,
            Self::Remove => 7,
            Self::Rename => 8,
            Self::CreateDir => 9,
            Self::RemoveDir => 10,
            Self::ListDir => 11,
        }
    }
}

/// A failure armed in a [`FaultInjector`].
#[derive(Debug, Clone, Copy)]
struct Fault {
    op: IoOp,
    /// `None`: files of every kind.
    kind: Option<FileKind>,
    /// Matching calls that still succeed before the failures start.
    skip: u64,
    /// For writes: bytes of the failing write that reach the file before the error.
    partial: usize,
    errno: i32,
}

impl Fault {
    fn matches(&self, op: IoOp, kind: FileKind) -> bool {
        self.op == op && self.kind.is_none_or(|k| k == kind)
    }
}

#[derive(Debug, Default)]
struct FaultState {
    faults: Vec<Fault>,
    sync_delay: Duration,
}

/// See the module docs.
#[derive(Debug, Default)]
pub struct FaultInjector {
    state: Mutex<FaultState>,
    calls: [[AtomicU64; FileKind::ALL]; IoOp::ALL],
}

impl FaultInjector {
    pub fn new() -> Self {
        Self::default()
    }

    fn with_state<R>(&self, f: impl FnOnce(&mut FaultState) -> R) -> R {
        let mut guard = crate::sync::lock(&self.state);
        f(&mut guard)
    }

    fn arm(&self, fault: Fault) {
        self.with_state(|s| {
            s.faults
                .retain(|f| !(f.op == fault.op && f.kind == fault.kind));
            s.faults.push(fault);
        });
    }

    /// From now on, after `skip` more successful calls of `op` on files of `kind` (every kind
    /// when `None`), every such call fails with `errno`, until [`Self::clear`]. Arming the
    /// same operation and kind again replaces the earlier fault.
    pub fn fail_after(&self, op: IoOp, kind: Option<FileKind>, skip: u64, errno: i32) {
        self.arm(Fault {
            op,
            kind,
            skip,
            partial: 0,
            errno,
        });
    }

    /// Every call of `op` on files of `kind` (every kind when `None`) fails with `errno`,
    /// until [`Self::clear`].
    pub fn fail(&self, op: IoOp, kind: Option<FileKind>, errno: i32) {
        self.fail_after(op, kind, 0, errno);
    }

    /// From now on, after `skip` more successful writes to files of `kind`, every write to such
    /// a file writes its first `partial` bytes and then fails with `ENOSPC`, until
    /// [`Self::clear`].
    pub fn fail_writes(&self, kind: FileKind, skip: u64, partial: usize) {
        self.arm(Fault {
            op: IoOp::Write,
            kind: Some(kind),
            skip,
            partial,
            errno: libc::ENOSPC,
        });
    }

    /// Every fsync fails with `EIO` until [`Self::clear`].
    pub fn fail_syncs(&self) {
        self.fail(IoOp::Sync, None, libc::EIO);
    }

    /// Every truncation fails with `EIO` until [`Self::clear`].
    pub fn fail_set_len(&self) {
        self.fail(IoOp::SetLen, None, libc::EIO);
    }

    /// Each fsync sleeps this long first (a slow disk).
    pub fn set_sync_delay(&self, delay: Duration) {
        self.with_state(|s| s.sync_delay = delay);
    }

    /// Disarms every fault (the delay stays).
    pub fn clear(&self) {
        self.with_state(|s| s.faults.clear());
    }

    /// Calls of `op` on files of `kind` so far (failed ones included).
    pub fn calls(&self, op: IoOp, kind: FileKind) -> u64 {
        self.calls
            .get(op.slot())
            .and_then(|per_kind| per_kind.get(kind.slot()))
            .map_or(0, |c| c.load(Ordering::SeqCst))
    }

    /// Writes attempted on files of `kind` so far.
    pub fn writes(&self, kind: FileKind) -> u64 {
        self.calls(IoOp::Write, kind)
    }

    /// Fsyncs attempted on files of `kind` so far.
    pub fn syncs(&self, kind: FileKind) -> u64 {
        self.calls(IoOp::Sync, kind)
    }

    /// Counts the call and returns the fault it meets, if any.
    fn enter(&self, op: IoOp, kind: FileKind) -> Option<Fault> {
        if let Some(c) = self
            .calls
            .get(op.slot())
            .and_then(|per_kind| per_kind.get(kind.slot()))
        {
            c.fetch_add(1, Ordering::SeqCst);
        }
        self.with_state(|s| {
            let f = s.faults.iter_mut().find(|f| f.matches(op, kind))?;
            if f.skip > 0 {
                f.skip -= 1;
                return None;
            }
            Some(*f)
        })
    }

    /// Counts the call; `Err` if a fault is armed for it.
    fn check(&self, op: IoOp, kind: FileKind) -> io::Result<()> {
        match self.enter(op, kind) {
            Some(f) => Err(io::Error::from_raw_os_error(f.errno)),
            None => Ok(()),
        }
    }
}

impl LogIo for FaultInjector {
    fn open(&self, kind: FileKind, path: &Path, mode: OpenMode) -> io::Result<File> {
        self.check(IoOp::Open, kind)?;
        StdIo.open(kind, path, mode)
    }

    fn read_exact_at(
        &self,
        kind: FileKind,
        file: &File,
        buf: &mut [u8],
        position: u64,
    ) -> io::Result<()> {
        self.check(IoOp::Read, kind)?;
        StdIo.read_exact_at(kind, file, buf, position)
    }

    fn write_all_at(
        &self,
        kind: FileKind,
        file: &File,
        buf: &[u8],
        position: u64,
    ) -> io::Result<()> {
        match self.enter(IoOp::Write, kind) {
            None => StdIo.write_all_at(kind, file, buf, position),
            Some(f) => {
                let part = buf.get(..f.partial.min(buf.len())).unwrap_or_default();
                StdIo.write_all_at(kind, file, part, position)?;
                Err(io::Error::from_raw_os_error(f.errno))
            }
        }
    }

    fn sync(&self, kind: FileKind, file: &File) -> io::Result<()> {
        let fault = self.enter(IoOp::Sync, kind);
        let delay = self.with_state(|s| s.sync_delay);
        if !delay.is_zero() {
            std::thread::sleep(delay);
        }
        match fault {
            Some(f) => Err(io::Error::from_raw_os_error(f.errno)),
            None => StdIo.sync(kind, file),
        }
    }

    fn set_len(&self, kind: FileKind, file: &File, len: u64) -> io::Result<()> {
        self.check(IoOp::SetLen, kind)?;
        StdIo.set_len(kind, file, len)
    }

    fn file_len(&self, kind: FileKind, file: &File) -> io::Result<u64> {
        self.check(IoOp::Stat, kind)?;
        StdIo.file_len(kind, file)
    }

    fn modified(&self, kind: FileKind, path: &Path) -> io::Result<SystemTime> {
        self.check(IoOp::Stat, kind)?;
        StdIo.modified(kind, path)
    }

    fn exists(&self, kind: FileKind, path: &Path) -> io::Result<bool> {
        self.check(IoOp::Stat, kind)?;
        StdIo.exists(kind, path)
    }

    fn read_file(&self, kind: FileKind, path: &Path) -> io::Result<Vec<u8>> {
        self.check(IoOp::ReadFile, kind)?;
        StdIo.read_file(kind, path)
    }

    fn remove_file(&self, kind: FileKind, path: &Path) -> io::Result<()> {
        self.check(IoOp::Remove, kind)?;
        StdIo.remove_file(kind, path)
    }

    fn rename(&self, kind: FileKind, from: &Path, to: &Path) -> io::Result<()> {
        self.check(IoOp::Rename, kind)?;
        StdIo.rename(kind, from, to)
    }

    fn create_dir(&self, path: &Path) -> io::Result<()> {
        self.check(IoOp::CreateDir, FileKind::Dir)?;
        StdIo.create_dir(path)
    }

    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        self.check(IoOp::CreateDir, FileKind::Dir)?;
        StdIo.create_dir_all(path)
    }

    fn remove_dir_all(&self, path: &Path) -> io::Result<()> {
        self.check(IoOp::RemoveDir, FileKind::Dir)?;
        StdIo.remove_dir_all(path)
    }

    fn list_dir(&self, path: &Path) -> io::Result<Vec<DirEntry>> {
        self.check(IoOp::ListDir, FileKind::Dir)?;
        StdIo.list_dir(path)
    }
}
