//! A broker-wide bound on open segment files: every `.log`, `.index` and `.timeindex` file is
//! reached through a [`FileHandle`], and at most `log.open.files.max` handles hold an open
//! descriptor at a time ([`FileCache`]).
//!
//! A handle opens its file on first use and keeps the descriptor until the cache evicts it to
//! make room for another file; the next use opens it again. Eviction is CLOCK (second chance),
//! an approximation of least recently used: a use marks the handle, and the sweep that looks
//! for a victim clears marks and takes the first unmarked handle. A use of an open file (the
//! common case: an append to an active segment, a fetch of a recent one) takes the handle's own
//! lock and sets its mark, with no system call and no broker-wide lock; only opening a file
//! takes the cache's lock.
//!
//! Uses get an `Arc<File>`: a descriptor handed out for a fetch answer (`sendfile`), a flush
//! or the cleaner stays valid while it is held, even if the cache evicted its handle meanwhile
//! (it is closed when the last holder drops it). So the descriptors of segment files are at
//! most `log.open.files.max` plus those held by answers being sent and fsyncs running.
//!
//! A handle is never reopened once its file is deleted ([`FileHandle::retire`]); opening
//! never creates a file (creation is explicit, [`FileHandle::create`]), so a handle cannot
//! bring back a file that retention or truncation removed.
//!
//! A handle opens its file through the log's [`LogIo`] (given when the handle is made), so a
//! test's fault injector sees the opens and reads of segment files as any other call.
//!
//! Imports only [`super::io`] and the base layer's lock helper.

use crate::sync::lock;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use super::io::{FileKind, LogIo, OpenMode};

/// Descriptors kept for everything that is not a segment file or a connection (listener,
/// epoll, the metrics port, standard streams, checkpoint files being written, directories
/// being fsynced).
pub const RESERVED_DESCRIPTORS: u64 = 128;
/// The smallest default of `log.open.files.max`.
pub const MIN_OPEN_FILES: usize = 64;

/// The default of `log.open.files.max` for a process allowed `nofile` descriptors (its soft
/// `RLIMIT_NOFILE`) and `max_connections` connections: what is left after
/// [`RESERVED_DESCRIPTORS`] and the connections, the connections taking at most half of it;
/// never below [`MIN_OPEN_FILES`].
pub fn default_open_files(nofile: u64, max_connections: usize) -> usize {
    let usable = nofile.saturating_sub(RESERVED_DESCRIPTORS);
    let sockets = (max_connections as u64).min(usable / 2);
    usize::try_from(usable - sockets)
        .unwrap_or(usize::MAX)
        .max(MIN_OPEN_FILES)
}

/// The soft `RLIMIT_NOFILE` of this process, read from `/proc/self/limits`; `None` if that
/// cannot be read or says "unlimited". (The kernel's file about this process, not a file of
/// the log: read directly, not through [`LogIo`].)
pub fn nofile_limit() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = text.lines().find(|l| l.starts_with("Max open files"))?;
    line.strip_prefix("Max open files")?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

#[derive(Debug)]
struct Slot {
    file: Option<Arc<File>>,
    retired: bool,
}

/// One segment file, opened on demand. See the module docs.
#[derive(Debug)]
pub struct FileHandle {
    path: PathBuf,
    kind: FileKind,
    io: Arc<dyn LogIo>,
    cache: Arc<FileCache>,
    slot: Mutex<Slot>,
    /// Used since the last sweep passed it (CLOCK's reference bit).
    used: AtomicBool,
}

/// The broker-wide set of open segment files, at most `capacity` of them. See the module docs.
#[derive(Debug)]
pub struct FileCache {
    capacity: usize,
    ring: Mutex<Ring>,
    opens: AtomicU64,
    evictions: AtomicU64,
}

#[derive(Debug, Default)]
struct Ring {
    /// Every handle holding a descriptor (and handles retired since the last sweep).
    open: Vec<Weak<FileHandle>>,
    hand: usize,
}

fn is_out_of_descriptors(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE))
}

impl FileCache {
    /// A cache keeping at most `capacity` (at least 1) files open.
    pub fn new(capacity: usize) -> Arc<Self> {
        Arc::new(Self {
            capacity: capacity.max(1),
            ring: Mutex::new(Ring::default()),
            opens: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
        })
    }

    /// A cache sized by [`default_open_files`] for this process's descriptor limit.
    pub fn with_default_capacity(max_connections: usize) -> Arc<Self> {
        let nofile = nofile_limit().unwrap_or(1 << 20);
        Self::new(default_open_files(nofile, max_connections))
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Handles holding a descriptor now (an upper bound: retired handles count until the
    /// next sweep).
    pub fn open_files(&self) -> usize {
        lock(&self.ring).open.len()
    }

    /// Files opened (first opens and reopens after eviction) since the cache was made.
    pub fn opens(&self) -> u64 {
        self.opens.load(Ordering::Relaxed)
    }

    /// Descriptors closed to make room since the cache was made.
    pub fn evictions(&self) -> u64 {
        self.evictions.load(Ordering::Relaxed)
    }

    /// A handle of the existing file at `path`, a file of `kind`, not opened yet; `io` opens
    /// it.
    pub fn handle(
        self: &Arc<Self>,
        path: PathBuf,
        kind: FileKind,
        io: &Arc<dyn LogIo>,
    ) -> Arc<FileHandle> {
        Arc::new(FileHandle {
            path,
            kind,
            io: Arc::clone(io),
            cache: Arc::clone(self),
            slot: Mutex::new(Slot {
                file: None,
                retired: false,
            }),
            used: AtomicBool::new(false),
        })
    }

    /// Takes `handle`'s descriptor into the ring, evicting others while the ring is over
    /// capacity. The evicted descriptors are returned so the caller closes them after the
    /// lock is released.
    fn admit(&self, handle: &Arc<FileHandle>) -> Vec<Arc<File>> {
        let mut ring = lock(&self.ring);
        ring.open.push(Arc::downgrade(handle));
        let mut closed = Vec::new();
        self.sweep(&mut ring, self.capacity, &mut closed);
        closed
    }

    /// Evicts until at most `keep` handles hold descriptors. A handle in use right now (its
    /// lock taken) gets a second chance; after two full turns without a victim the ring stays
    /// over capacity until the next admission.
    fn sweep(&self, ring: &mut Ring, keep: usize, closed: &mut Vec<Arc<File>>) {
        let mut looked = 0;
        while ring.open.len() > keep && looked < 2 * ring.open.len() + 2 {
            if ring.hand >= ring.open.len() {
                ring.hand = 0;
            }
            let at = ring.hand;
            let Some(h) = ring.open.get(at).and_then(Weak::upgrade) else {
                ring.open.swap_remove(at);
                continue;
            };
            let Ok(mut slot) = h.slot.try_lock() else {
                ring.hand += 1;
                looked += 1;
                continue;
            };
            if slot.file.is_none() {
                // Retired since it was admitted.
                drop(slot);
                ring.open.swap_remove(at);
                continue;
            }
            if h.used.swap(false, Ordering::Relaxed) {
                drop(slot);
                ring.hand += 1;
                looked += 1;
                continue;
            }
            closed.extend(slot.file.take());
            drop(slot);
            ring.open.swap_remove(at);
            self.evictions.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Closes about a quarter of the open files (at least one), for a process out of
    /// descriptors.
    fn shed(&self) {
        let closed = {
            let mut ring = lock(&self.ring);
            let n = ring.open.len();
            let mut closed = Vec::new();
            self.sweep(&mut ring, n - n.div_ceil(4).min(n), &mut closed);
            closed
        };
        drop(closed);
    }
}

impl FileHandle {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file-system calls the handle opens its file with (and its users read it with).
    pub fn io(&self) -> &dyn LogIo {
        self.io.as_ref()
    }

    /// Reads exactly `buf.len()` bytes at `position` through the handle's [`LogIo`].
    pub fn read_exact_at(self: &Arc<Self>, buf: &mut [u8], position: u64) -> io::Result<()> {
        self.io
            .read_exact_at(self.kind, &*self.get()?, buf, position)
    }

    /// The file's length.
    pub fn file_len(self: &Arc<Self>) -> io::Result<u64> {
        self.io.file_len(self.kind, &*self.get()?)
    }

    fn open(&self, mode: OpenMode) -> io::Result<File> {
        self.io.open(self.kind, &self.path, mode)
    }

    /// The open file, opening it if the cache closed it (or it was never opened). Fails if the
    /// file was deleted ([`Self::retire`]) or cannot be opened. When the process is out of
    /// descriptors the cache closes some of its files and tries once more.
    pub fn get(self: &Arc<Self>) -> io::Result<Arc<File>> {
        let mut slot = lock(&self.slot);
        if let Some(f) = &slot.file {
            self.used.store(true, Ordering::Relaxed);
            return Ok(Arc::clone(f));
        }
        if slot.retired {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                "segment file was deleted",
            ));
        }
        let file = match self.open(OpenMode::Existing) {
            Err(e) if is_out_of_descriptors(&e) => {
                self.cache.shed();
                self.open(OpenMode::Existing)?
            }
            other => other?,
        };
        Ok(self.install(&mut slot, file))
    }

    /// Creates (or empties) the file and keeps it open.
    pub fn create(self: &Arc<Self>) -> io::Result<Arc<File>> {
        let mut slot = lock(&self.slot);
        let file = match self.open(OpenMode::Truncate) {
            Err(e) if is_out_of_descriptors(&e) => {
                self.cache.shed();
                self.open(OpenMode::Truncate)?
            }
            other => other?,
        };
        slot.retired = false;
        if slot.file.is_some() {
            let file = Arc::new(file);
            slot.file = Some(Arc::clone(&file));
            return Ok(file);
        }
        Ok(self.install(&mut slot, file))
    }

    fn install(self: &Arc<Self>, slot: &mut MutexGuard<'_, Slot>, file: File) -> Arc<File> {
        let file = Arc::new(file);
        slot.file = Some(Arc::clone(&file));
        self.used.store(true, Ordering::Relaxed);
        self.cache.opens.fetch_add(1, Ordering::Relaxed);
        // The cache's lock is taken with this handle's lock held; a sweep only try-locks
        // handles, so the two cannot wait for each other.
        let closed = self.cache.admit(self);
        drop(closed);
        file
    }

    /// The file was deleted: close the descriptor now (holders keep theirs) and never reopen.
    pub fn retire(&self) {
        let mut slot = lock(&self.slot);
        slot.retired = true;
        slot.file = None;
    }

    /// Whether the handle holds a descriptor now.
    pub fn is_open(&self) -> bool {
        lock(&self.slot).file.is_some()
    }
}
