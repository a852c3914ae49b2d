//! Group commit: making appended data durable outside the partition lock, with one fsync for
//! every append that is waiting.
//!
//! [`Log::append`](super::Log::append) writes into the page cache and tells the log's
//! [`Flusher`] how far the log now reaches and which file it wrote. When the append's
//! [`AppendInfo::sync_to`](super::AppendInfo::sync_to) is set (always in durable mode,
//! `flush.messages=1`; every N messages or `flush.ms` otherwise), the caller releases the
//! partition lock and calls [`Flusher::sync_to`] (blocking) or [`Flusher::sync_to_async`]
//! before acknowledging. The first caller to find no fsync running becomes the leader: it
//! takes everything appended so far as its target and fsyncs the written files; callers that
//! arrive meanwhile wait, and when the fsync ends every caller whose offset it covers returns.
//! The next leader's fsync then covers all of those who arrived during the previous one, so
//! with N concurrent producers there are about two fsyncs per "round", not N.
//!
//! How the broker handles a Produce (acks 1 or all) with it:
//!
//! ```text
//! let (info, flusher) = {
//!     let mut log = lock_log(&shared);               // the partition lock
//!     (log.append(records, leader_epoch, now_ms)?, log.flusher())
//! };                                                 // lock released
//! if let Some(offset) = info.sync_to {
//!     flusher.sync_to_async(offset).await?;          // shared fsync; error -> KAFKA_STORAGE_ERROR
//! }
//! // Consumers must not see what is not durable: in durable mode the high watermark follows
//! // the durable offset, otherwise the log end.
//! let mut log = lock_log(&shared);
//! let end = if log.config().is_durable() { flusher.durable_offset() } else { log.log_end_offset() };
//! let hw = log.high_watermark().max(end);
//! log.set_high_watermark(hw);
//! ```
//!
//! Besides, on timers: [`LogManager::flush_due`](super::LogManager::flush_due) for `flush.ms`,
//! [`LogManager::flush_all`](super::LogManager::flush_all) every minute or so (moves the
//! recovery points, which keeps recovery short), and
//! [`LogManager::close`](super::LogManager::close) at shutdown.
//!
//! A failed fsync poisons the flusher: after `EIO` on fsync the kernel may have dropped the
//! dirty pages, so a later successful fsync proves nothing. Every later `sync_to` beyond the
//! durable offset fails with [`LogError::SyncPoisoned`] until the log is reopened (and
//! recovered).

use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use super::checkpoint::sync_dir;
use super::error::LogError;
use super::files::FileHandle;
use super::io::{FileKind, LogIo};

#[derive(Debug)]
struct State {
    /// The log end offset as of the last append.
    appended: i64,
    /// Every offset below this is on disk.
    durable: i64,
    /// Segment files written since their last fsync (handles: the cache may have closed
    /// them since, and the sync opens them again; the kernel reports a writeback error to
    /// the first fsync after it even through a new descriptor).
    dirty: Vec<Arc<FileHandle>>,
    /// A segment file was created since the directory's last fsync.
    dir_dirty: bool,
    syncing: bool,
    /// Bumped when the log is truncated: a sync started before cannot vouch for offsets that
    /// were rewritten after it.
    generation: u64,
    poisoned: Option<String>,
    syncs: u64,
}

/// The durability side of one partition log, shared between the log (under the partition
/// lock) and the tasks waiting for fsync (outside it). See the module docs.
#[derive(Debug)]
pub struct Flusher {
    dir: PathBuf,
    io: Arc<dyn LogIo>,
    state: Mutex<State>,
    cond: Condvar,
    completions: tokio::sync::watch::Sender<u64>,
}

enum Step {
    Done(i64),
    Wait,
    Lead(SyncJob),
}

enum Outcome {
    Synced,
    Failed(String),
    Abandoned,
}

/// One fsync round, run by the leader without any lock held.
struct SyncJob {
    flusher: Arc<Flusher>,
    target: i64,
    files: Vec<Arc<FileHandle>>,
    dir: bool,
    generation: u64,
    finished: bool,
}

impl SyncJob {
    fn run(mut self) {
        let flusher = Arc::clone(&self.flusher);
        let mut result = Ok(());
        for f in &self.files {
            result = match f.get() {
                Ok(file) => flusher.io.sync(FileKind::Log, &file),
                // Deleted since (retention, truncation): nothing of it to make durable.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                Err(e) => Err(e),
            }
            .map_err(|e| e.to_string());
            if result.is_err() {
                break;
            }
        }
        if result.is_ok() && self.dir {
            result = sync_dir(flusher.io.as_ref(), &flusher.dir).map_err(|e| e.to_string());
        }
        self.finished = true;
        let outcome = match result {
            Ok(()) => Outcome::Synced,
            Err(e) => Outcome::Failed(e),
        };
        flusher.finish(&mut self, outcome);
    }
}

impl Drop for SyncJob {
    fn drop(&mut self) {
        if !self.finished {
            // The leader went away (its task was dropped before the fsync ran): let another
            // caller take over.
            let flusher = Arc::clone(&self.flusher);
            flusher.finish(self, Outcome::Abandoned);
        }
    }
}

impl Flusher {
    pub(crate) fn new(dir: PathBuf, io: Arc<dyn LogIo>, log_end_offset: i64) -> Self {
        Self {
            dir,
            io,
            state: Mutex::new(State {
                appended: log_end_offset,
                durable: log_end_offset,
                dirty: Vec::new(),
                dir_dirty: false,
                syncing: false,
                generation: 0,
                poisoned: None,
                syncs: 0,
            }),
            cond: Condvar::new(),
            completions: tokio::sync::watch::Sender::new(0),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        crate::sync::lock(&self.state)
    }

    /// Every offset below this is durable.
    pub fn durable_offset(&self) -> i64 {
        self.lock().durable
    }

    /// How many group-commit fsync rounds ran (each covers every waiting append).
    pub fn sync_rounds(&self) -> u64 {
        self.lock().syncs
    }

    /// Whether an fsync failed (see the module docs).
    pub fn is_poisoned(&self) -> bool {
        self.lock().poisoned.is_some()
    }

    /// Blocks until every offset below `offset` is durable, fsyncing as the leader of a group
    /// commit round when no round is running. Returns the durable offset, which is below
    /// `offset` only if the log was truncated below `offset` meanwhile. Blocking: from async
    /// code use [`Self::sync_to_async`] (or `spawn_blocking`).
    pub fn sync_to(self: &Arc<Self>, offset: i64) -> Result<i64, LogError> {
        let mut state = self.lock();
        loop {
            match self.step(&mut state, offset)? {
                Step::Done(durable) => return Ok(durable),
                Step::Wait => {
                    state = self
                        .cond
                        .wait(state)
                        .unwrap_or_else(PoisonError::into_inner);
                }
                Step::Lead(job) => {
                    drop(state);
                    job.run();
                    state = self.lock();
                }
            }
        }
    }

    /// [`Self::sync_to`] for async callers: waiting does not block a thread, and the leader's
    /// fsync runs on tokio's blocking pool. Must run inside a tokio runtime.
    pub async fn sync_to_async(self: &Arc<Self>, offset: i64) -> Result<i64, LogError> {
        let mut completions = self.completions.subscribe();
        loop {
            let step = {
                let mut state = self.lock();
                self.step(&mut state, offset)?
            };
            match step {
                Step::Done(durable) => return Ok(durable),
                Step::Wait => {
                    // The sender lives as long as `self`, so this cannot fail.
                    let _ = completions.changed().await;
                }
                Step::Lead(job) => {
                    // If this future is dropped the blocking task still runs and finishes the
                    // round; if the runtime refuses the task, dropping the job hands over.
                    let _ = tokio::task::spawn_blocking(move || job.run()).await;
                }
            }
        }
    }

    fn step(self: &Arc<Self>, state: &mut State, offset: i64) -> Result<Step, LogError> {
        let offset = offset.min(state.appended);
        if state.durable >= offset {
            return Ok(Step::Done(state.durable));
        }
        if let Some(reason) = &state.poisoned {
            return Err(LogError::SyncPoisoned {
                dir: self.dir.clone(),
                reason: reason.clone(),
            });
        }
        if state.syncing {
            return Ok(Step::Wait);
        }
        state.syncing = true;
        Ok(Step::Lead(SyncJob {
            flusher: Arc::clone(self),
            target: state.appended,
            files: std::mem::take(&mut state.dirty),
            dir: std::mem::take(&mut state.dir_dirty),
            generation: state.generation,
            finished: false,
        }))
    }

    fn finish(&self, job: &mut SyncJob, outcome: Outcome) {
        let mut state = self.lock();
        state.syncing = false;
        match outcome {
            Outcome::Synced => {
                state.syncs += 1;
                if job.generation == state.generation {
                    state.durable = state.durable.max(job.target);
                }
            }
            Outcome::Failed(reason) => {
                state.syncs += 1;
                tracing::error!(dir = %self.dir.display(), %reason, "fsync failed; the log \
                    accepts no more durable appends until it is reopened");
                state.poisoned = Some(reason);
            }
            Outcome::Abandoned => {
                for f in job.files.drain(..) {
                    push_unique(&mut state.dirty, f);
                }
                state.dir_dirty |= job.dir;
            }
        }
        drop(state);
        self.cond.notify_all();
        self.completions.send_modify(|n| *n += 1);
    }

    /// The log appended up to `log_end_offset` into `file`.
    pub(crate) fn note_append(&self, log_end_offset: i64, file: &Arc<FileHandle>) {
        let mut state = self.lock();
        state.appended = log_end_offset;
        push_unique(&mut state.dirty, Arc::clone(file));
    }

    /// The log created a segment file.
    pub(crate) fn note_new_segment(&self) {
        self.lock().dir_dirty = true;
    }

    /// The log fsynced everything up to `log_end_offset` itself (under its lock).
    pub(crate) fn note_flushed(&self, log_end_offset: i64) {
        let mut state = self.lock();
        state.appended = log_end_offset;
        state.durable = state.durable.max(log_end_offset);
        state.dirty.clear();
        state.dir_dirty = false;
        drop(state);
        self.cond.notify_all();
        self.completions.send_modify(|n| *n += 1);
    }

    /// An fsync done by the log itself failed.
    pub(crate) fn poison(&self, reason: String) {
        let mut state = self.lock();
        tracing::error!(dir = %self.dir.display(), %reason, "fsync failed; the log accepts no \
            more appends until it is reopened");
        state.poisoned.get_or_insert(reason);
        drop(state);
        self.cond.notify_all();
        self.completions.send_modify(|n| *n += 1);
    }

    /// The log was truncated (or restarted) at `log_end_offset`.
    pub(crate) fn note_truncated(&self, log_end_offset: i64) {
        let mut state = self.lock();
        state.appended = log_end_offset;
        state.durable = state.durable.min(log_end_offset);
        state.generation += 1;
    }
}

fn push_unique(files: &mut Vec<Arc<FileHandle>>, f: Arc<FileHandle>) {
    if !files.iter().any(|g| Arc::ptr_eq(g, &f)) {
        files.push(f);
    }
}
