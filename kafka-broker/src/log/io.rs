//! Every file-system call of the log, behind one trait, so that tests (and the broker's own
//! fault tests) can count the calls and make them fail: a full disk, a failing fsync, a
//! directory that cannot be listed.
//!
//! [`LogIo`]'s default methods do the real thing with `std::fs` and nothing more; [`StdIo`] is
//! those defaults. [`super::FaultInjector`] overrides them to count and fail calls.
//! Every call names the [`FileKind`] it touches, so a fault can aim at one kind of file.
//!
//! Outside this trait the log touches files only through descriptors handed out by it: the
//! [`super::FileSlice`]s of a read, which the caller sends with `sendfile` or reads with
//! [`super::FileSlice::read_bytes`]. This module imports nothing from the rest of `log/`.

use std::ffi::OsString;
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::SystemTime;

/// Which kind of file an operation touches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileKind {
    /// A segment's `.log` file.
    Log,
    /// A segment's `.index` file.
    OffsetIndex,
    /// A segment's `.timeindex` file.
    TimeIndex,
    /// A checkpoint file (recovery point, log start offset, leader epochs, the cleaner's and
    /// the transaction index rebuild's), and the clean-shutdown marker.
    Checkpoint,
    /// A directory: a data directory, a partition directory, the cleaner's staging
    /// directory (created, listed, removed, fsynced after entries change).
    Dir,
    /// A segment's `.txnindex` file (aborted transactions).
    TxnIndex,
    /// A file the log did not write and removes (temporary files, leftovers of a crash).
    Leftover,
}

impl FileKind {
    pub(crate) const ALL: usize = 7;

    pub(crate) fn slot(self) -> usize {
        match self {
            Self::Log => 0,
            Self::OffsetIndex => 1,
            Self::TimeIndex => 2,
            Self::Checkpoint => 3,
            Self::Dir => 4,
            Self::TxnIndex => 5,
            Self::Leftover => 6,
        }
    }
}

/// How [`LogIo::open`] opens a file. Every mode but [`OpenMode::Read`] opens for reading and
/// writing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OpenMode {
    /// Read only (a directory to fsync it, a file to read it).
    Read,
    /// An existing file; fails with `NotFound` if there is none.
    Existing,
    /// The file, created empty if missing; its contents are kept.
    CreateOrOpen,
    /// A new, empty file: created, or emptied if it exists.
    Truncate,
}

/// One entry of a directory listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    pub name: OsString,
    /// Whether the entry is a directory (symbolic links are not followed).
    pub is_dir: bool,
}

/// The log's file-system calls. The default methods do the real thing; an implementation
/// overrides those it wants to observe or fail.
pub trait LogIo: Send + Sync + fmt::Debug {
    /// Opens the file (or directory, with [`OpenMode::Read`]) at `path`.
    fn open(&self, kind: FileKind, path: &Path, mode: OpenMode) -> io::Result<File> {
        let _ = kind;
        let mut opts = OpenOptions::new();
        opts.read(true);
        match mode {
            OpenMode::Read => {}
            OpenMode::Existing => {
                opts.write(true);
            }
            OpenMode::CreateOrOpen => {
                opts.write(true).create(true).truncate(false);
            }
            OpenMode::Truncate => {
                opts.write(true).create(true).truncate(true);
            }
        }
        opts.open(path)
    }

    /// Reads exactly `buf.len()` bytes at `position` (`UnexpectedEof` past the end).
    fn read_exact_at(
        &self,
        kind: FileKind,
        file: &File,
        buf: &mut [u8],
        position: u64,
    ) -> io::Result<()> {
        let _ = kind;
        file.read_exact_at(buf, position)
    }

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

    /// Makes the file's data (and the metadata needed to read it back) durable; for a
    /// directory, its entries.
    fn sync(&self, kind: FileKind, file: &File) -> io::Result<()> {
        let _ = kind;
        file.sync_data()
    }

    /// Sets the file's length (truncation after a failed write, recovery, `truncate_to`).
    fn set_len(&self, kind: FileKind, file: &File, len: u64) -> io::Result<()> {
        let _ = kind;
        file.set_len(len)
    }

    /// The file's length.
    fn file_len(&self, kind: FileKind, file: &File) -> io::Result<u64> {
        let _ = kind;
        Ok(file.metadata()?.len())
    }

    /// The last modification time of the file at `path`.
    fn modified(&self, kind: FileKind, path: &Path) -> io::Result<SystemTime> {
        let _ = kind;
        std::fs::metadata(path)?.modified()
    }

    /// Whether something exists at `path` (`Err` when that cannot be told).
    fn exists(&self, kind: FileKind, path: &Path) -> io::Result<bool> {
        let _ = kind;
        path.try_exists()
    }

    /// The whole file at `path` (small files only: checkpoints, transaction indexes).
    fn read_file(&self, kind: FileKind, path: &Path) -> io::Result<Vec<u8>> {
        let _ = kind;
        std::fs::read(path)
    }

    /// Removes the file at `path`.
    fn remove_file(&self, kind: FileKind, path: &Path) -> io::Result<()> {
        let _ = kind;
        std::fs::remove_file(path)
    }

    /// Renames `from` to `to`, replacing `to` if it exists.
    fn rename(&self, kind: FileKind, from: &Path, to: &Path) -> io::Result<()> {
        let _ = kind;
        std::fs::rename(from, to)
    }

    /// Creates the directory `path`; its parent must exist.
    fn create_dir(&self, path: &Path) -> io::Result<()> {
        std::fs::create_dir(path)
    }

    /// Creates the directory `path` and any missing parents.
    fn create_dir_all(&self, path: &Path) -> io::Result<()> {
        std::fs::create_dir_all(path)
    }

    /// Removes the directory `path` and everything in it.
    fn remove_dir_all(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_dir_all(path)
    }

    /// The entries of the directory `path`, in no particular order.
    fn list_dir(&self, path: &Path) -> io::Result<Vec<DirEntry>> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(path)? {
            let entry = entry?;
            out.push(DirEntry {
                name: entry.file_name(),
                is_dir: entry.file_type().is_ok_and(|t| t.is_dir()),
            });
        }
        Ok(out)
    }
}

/// The names of the entries of the directory `dir` that are UTF-8 (the log names every file
/// it writes in ASCII; other entries are not its own).
pub(crate) fn file_names(io: &dyn LogIo, dir: &Path) -> io::Result<Vec<String>> {
    Ok(io
        .list_dir(dir)?
        .into_iter()
        .filter_map(|e| e.name.into_string().ok())
        .collect())
}

/// The real file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct StdIo;

impl LogIo for StdIo {}
