//! [`LogManager`]: every partition log of the broker's data directories. Imports the log
//! (`local_log`) and the layers under it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use super::checkpoint::sync_dir;
use super::config::LogConfig;
use super::error::LogError;
use super::files::FileCache;
use super::io::{FileKind, LogIo, OpenMode, StdIo};
use super::local_log::Log;

/// Written in each data directory by a clean shutdown, removed at start (Kafka's name).
pub const CLEAN_SHUTDOWN_FILE: &str = ".kafka_cleanshutdown";
/// Suffix of a directory being deleted.
const DELETE_SUFFIX: &str = "-delete";
/// Kafka's longest topic name.
const MAX_TOPIC_LEN: usize = 249;

/// A partition log behind the lock the broker takes to use it.
pub type SharedLog = Arc<Mutex<Log>>;

/// Locks a log, ignoring poisoning (a panic elsewhere leaves the log itself consistent: every
/// method updates memory only after the disk).
pub fn lock_log(log: &SharedLog) -> MutexGuard<'_, Log> {
    crate::sync::lock(log)
}

/// A topic and partition (kafka-protocol's, shared with the clients); its log directory is
/// `<topic>-<partition>` ([`LogDirName`]).
pub use kafka_protocol::TopicPartition;

/// What the log layer adds to [`TopicPartition`]: its log directory name.
pub(crate) trait LogDirName: Sized {
    /// `<topic>-<partition>`.
    fn dir_name(&self) -> String;

    /// Reads a log directory name: the partition follows the *last* `-` (topic names may
    /// contain `-` and `.`).
    fn from_dir_name(name: &str) -> Option<Self>;
}

impl LogDirName for TopicPartition {
    fn dir_name(&self) -> String {
        format!("{}-{}", self.topic, self.partition)
    }

    fn from_dir_name(name: &str) -> Option<Self> {
        let (topic, digits) = name.rsplit_once('-')?;
        let partition: i32 = digits.parse().ok().filter(|p| *p >= 0)?;
        (is_valid_topic(topic) && digits == partition.to_string())
            .then(|| Self::new(topic, partition))
    }
}

/// Kafka's rule: 1 to 249 of `[a-zA-Z0-9._-]`, and not `.` or `..`.
pub fn is_valid_topic(topic: &str) -> bool {
    !topic.is_empty()
        && topic.len() <= MAX_TOPIC_LEN
        && topic != "."
        && topic != ".."
        && topic
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
}

#[derive(Debug)]
struct Hosted {
    dir: PathBuf,
    log: SharedLog,
}

/// A partition found (or expected) on disk that is not served: its directory, why, and
/// whether reopening it may work once the cause is gone (descriptors freed, space returned).
#[derive(Debug)]
struct Offline {
    dir: PathBuf,
    reason: String,
    retry: bool,
}

/// The partition logs of one broker. Internally synchronized; each log has its own mutex.
/// Starts no tasks: the broker calls [`Self::apply_retention`] and [`Self::flush_due`] on its
/// timers and [`Self::close`] at shutdown.
#[derive(Debug)]
pub struct LogManager {
    dirs: Vec<PathBuf>,
    io: Arc<dyn LogIo>,
    files: Arc<FileCache>,
    logs: RwLock<BTreeMap<TopicPartition, Hosted>>,
    offline: RwLock<BTreeMap<TopicPartition, Offline>>,
    recovered: bool,
    deletions: AtomicU64,
}

impl LogManager {
    /// Opens every partition log in `dirs` with `config_for` its configuration. A directory
    /// with logs but without the clean-shutdown marker means the last run did not end
    /// cleanly: its logs are recovered (a directory without logs is new, not unclean). A log
    /// that fails to open is kept offline (see [`Self::offline`]) while the others serve.
    pub fn open(
        dirs: Vec<PathBuf>,
        config_for: impl Fn(&TopicPartition) -> LogConfig,
    ) -> Result<Self, LogError> {
        Self::open_with_io(dirs, config_for, Arc::new(StdIo))
    }

    /// [`Self::open`] with writes and fsyncs going through `io`.
    pub fn open_with_io(
        dirs: Vec<PathBuf>,
        config_for: impl Fn(&TopicPartition) -> LogConfig,
        io: Arc<dyn LogIo>,
    ) -> Result<Self, LogError> {
        Self::open_with(
            dirs,
            config_for,
            io,
            FileCache::with_default_capacity(usize::MAX),
        )
    }

    /// [`Self::open_with_io`], every log's segment files opened through `files` (so the
    /// broker's descriptors for them are bounded by its capacity, `log.open.files.max`).
    pub fn open_with(
        dirs: Vec<PathBuf>,
        config_for: impl Fn(&TopicPartition) -> LogConfig,
        io: Arc<dyn LogIo>,
        files: Arc<FileCache>,
    ) -> Result<Self, LogError> {
        if dirs.is_empty() {
            return Err(LogError::InvalidConfig {
                key: "log.dirs".into(),
                value: String::new(),
                reason: "no data directory",
            });
        }
        let mut logs = BTreeMap::new();
        let mut offline = BTreeMap::new();
        let mut recovered = false;
        for dir in &dirs {
            io.create_dir_all(dir)
                .map_err(|e| LogError::io("create directory", dir, e))?;
            let marker = dir.join(CLEAN_SHUTDOWN_FILE);
            // When that cannot be told, the logs are recovered: the safe side.
            let clean = io.exists(FileKind::Checkpoint, &marker).unwrap_or(false);
            let parts = partition_dirs(io.as_ref(), dir)?;
            if clean {
                io.remove_file(FileKind::Checkpoint, &marker)
                    .map_err(|e| LogError::io("remove marker", &marker, e))?;
                sync_dir(io.as_ref(), dir)?;
            } else if parts.is_empty() {
                // A new (or empty) directory: no run ended here, cleanly or not.
                tracing::debug!(dir = %dir.display(), "no logs and no clean shutdown marker: a new data directory");
            } else {
                recovered = true;
                tracing::warn!(dir = %dir.display(), logs = parts.len(), "no clean shutdown marker: recovering logs");
            }
            for (tp, path) in parts {
                if logs.contains_key(&tp) {
                    let reason = format!("{tp} is in more than one data directory");
                    tracing::error!(dir = %path.display(), %reason, "log not opened");
                    // Not retried: which copy is the log is for an operator to say.
                    let entry = Offline {
                        dir: path,
                        reason,
                        retry: false,
                    };
                    offline.insert(tp, entry);
                    continue;
                }
                let opened = Log::open_with(
                    &path,
                    config_for(&tp),
                    !clean,
                    Arc::clone(&io),
                    Arc::clone(&files),
                );
                match opened {
                    Ok(log) => {
                        let log = Arc::new(Mutex::new(log));
                        logs.insert(tp, Hosted { dir: path, log });
                    }
                    Err(e) => {
                        tracing::error!(partition = %tp, error = %e, "log is offline");
                        // Retried when the disk was at fault (it may come back: space,
                        // descriptors); damage (a corrupt segment below the recovery point)
                        // stays offline, reported and untouched.
                        let entry = Offline {
                            dir: path,
                            reason: e.to_string(),
                            retry: e.is_io(),
                        };
                        offline.insert(tp, entry);
                    }
                }
            }
        }
        Ok(Self {
            dirs,
            io,
            files,
            logs: RwLock::new(logs),
            offline: RwLock::new(offline),
            recovered,
            deletions: AtomicU64::new(0),
        })
    }

    fn logs(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<TopicPartition, Hosted>> {
        crate::sync::read(&self.logs)
    }

    fn logs_mut(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<TopicPartition, Hosted>> {
        crate::sync::write(&self.logs)
    }

    fn offline_error(&self, tp: &TopicPartition) -> Option<LogError> {
        let offline = crate::sync::read(&self.offline);
        offline.get(tp).map(|o| LogError::Offline {
            dir: o.dir.clone(),
            reason: o.reason.clone(),
        })
    }

    fn offline_mut(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<TopicPartition, Offline>> {
        crate::sync::write(&self.offline)
    }

    /// Takes a partition offline (its log failed at run time, or the partition layer could not
    /// host it): it is no longer served, callers get [`LogError::Offline`] with `reason`, and
    /// [`Self::reopen`] may bring it back when `retry` (the disk was at fault, not the data).
    /// Returns the log it had open, if any (its holders keep it; the caller stops using it).
    pub fn mark_offline(
        &self,
        tp: &TopicPartition,
        reason: String,
        retry: bool,
    ) -> Option<SharedLog> {
        let mut logs = self.logs_mut();
        let hosted = logs.remove(tp);
        let dir = match &hosted {
            Some(h) => h.dir.clone(),
            None => match self.offline_mut().get(tp) {
                Some(o) => o.dir.clone(),
                // Never opened: where a new log would go.
                None => self.new_log_parent(&logs).join(tp.dir_name()),
            },
        };
        drop(logs);
        self.offline_mut()
            .insert(tp.clone(), Offline { dir, reason, retry });
        hosted.map(|h| h.log)
    }

    /// The offline partitions that [`Self::reopen`] may bring back.
    pub fn retryable_offline(&self) -> Vec<TopicPartition> {
        let offline = crate::sync::read(&self.offline);
        offline
            .iter()
            .filter(|(_, o)| o.retry)
            .map(|(tp, _)| tp.clone())
            .collect()
    }

    /// Tries to open an offline partition's log again, through the same recovery a start
    /// after a crash runs (whatever state the failure left it in, the log is checked from its
    /// recovery point and cut at the first invalid byte). On success the log is hosted again
    /// and returned; on failure it stays offline with the new reason.
    pub fn reopen(&self, tp: &TopicPartition, config: LogConfig) -> Result<SharedLog, LogError> {
        let dir = match crate::sync::read(&self.offline).get(tp) {
            Some(o) if o.retry => o.dir.clone(),
            Some(o) => {
                return Err(LogError::Offline {
                    dir: o.dir.clone(),
                    reason: o.reason.clone(),
                });
            }
            None => return Err(LogError::InvalidTopic(tp.dir_name())),
        };
        let opened = Log::open_with(
            &dir,
            config,
            true,
            Arc::clone(&self.io),
            Arc::clone(&self.files),
        )
        .and_then(|log| {
            if let Some(parent) = dir.parent() {
                sync_dir(self.io.as_ref(), parent)?;
            }
            Ok(log)
        });
        // Lock order: logs, then offline (as everywhere).
        let mut logs = self.logs_mut();
        let mut offline = self.offline_mut();
        match opened {
            Ok(log) => {
                let log = Arc::new(Mutex::new(log));
                // Under the offline lock: a delete in between has removed the entry.
                if offline.remove(tp).is_none() {
                    return Err(LogError::Deleted { dir });
                }
                logs.insert(
                    tp.clone(),
                    Hosted {
                        dir,
                        log: Arc::clone(&log),
                    },
                );
                Ok(log)
            }
            Err(e) => {
                if let Some(o) = offline.get_mut(tp) {
                    o.reason = e.to_string();
                    // Damage found on the way: no more retries, the log stays as it is.
                    o.retry = e.is_io();
                }
                Err(e)
            }
        }
    }

    /// The data directory a new log goes in: the one with the fewest logs.
    fn new_log_parent(&self, logs: &BTreeMap<TopicPartition, Hosted>) -> PathBuf {
        self.dirs
            .iter()
            .min_by_key(|d| logs.values().filter(|h| h.dir.parent() == Some(d)).count())
            .cloned()
            .unwrap_or_default()
    }

    /// Whether any data directory lacked the clean-shutdown marker at start.
    pub fn recovered_at_start(&self) -> bool {
        self.recovered
    }

    /// The data directories.
    /// The open segment files of every log.
    pub fn files(&self) -> &Arc<FileCache> {
        &self.files
    }

    pub fn dirs(&self) -> &[PathBuf] {
        &self.dirs
    }

    /// The log of a partition, if hosted; an offline partition is an error.
    pub fn get(&self, topic: &str, partition: i32) -> Result<Option<SharedLog>, LogError> {
        let tp = TopicPartition::new(topic, partition);
        if let Some(h) = self.logs().get(&tp) {
            return Ok(Some(Arc::clone(&h.log)));
        }
        self.offline_error(&tp).map_or(Ok(None), Err)
    }

    /// The log of a partition, created empty (in the data directory with the fewest logs) if
    /// it does not exist.
    pub fn get_or_create(
        &self,
        topic: &str,
        partition: i32,
        config: LogConfig,
    ) -> Result<SharedLog, LogError> {
        let tp = TopicPartition::new(topic, partition);
        if let Some(h) = self.logs().get(&tp) {
            return Ok(Arc::clone(&h.log));
        }
        if !is_valid_topic(topic) || partition < 0 {
            return Err(LogError::InvalidTopic(tp.dir_name()));
        }
        if let Some(e) = self.offline_error(&tp) {
            return Err(e);
        }
        let mut logs = self.logs_mut();
        if let Some(h) = logs.get(&tp) {
            return Ok(Arc::clone(&h.log));
        }
        let parent = self.new_log_parent(&logs);
        let path = parent.join(tp.dir_name());
        let log = Log::open_with(
            &path,
            config,
            false,
            Arc::clone(&self.io),
            Arc::clone(&self.files),
        )?;
        sync_dir(self.io.as_ref(), &parent)?;
        let log = Arc::new(Mutex::new(log));
        logs.insert(
            tp,
            Hosted {
                dir: path,
                log: Arc::clone(&log),
            },
        );
        Ok(log)
    }

    /// Deletes a partition's log: marks it deleted (holders get [`LogError::Deleted`]),
    /// renames its directory to `<name>.<n>-delete` and removes it. Returns whether it existed.
    pub fn delete(&self, topic: &str, partition: i32) -> Result<bool, LogError> {
        let tp = TopicPartition::new(topic, partition);
        let offline = crate::sync::write(&self.offline).remove(&tp);
        let dir = match (self.logs_mut().remove(&tp), offline) {
            (Some(hosted), _) => {
                lock_log(&hosted.log).mark_deleted();
                hosted.dir
            }
            (None, Some(o)) => o.dir,
            (None, None) => return Ok(false),
        };
        let n = self.deletions.fetch_add(1, Ordering::Relaxed);
        let doomed = dir.with_file_name(format!("{}.{n}{DELETE_SUFFIX}", tp.dir_name()));
        self.io
            .rename(FileKind::Dir, &dir, &doomed)
            .map_err(|e| LogError::io("rename for deletion", &dir, e))?;
        if let Some(parent) = dir.parent() {
            sync_dir(self.io.as_ref(), parent)?;
        }
        self.io
            .remove_dir_all(&doomed)
            .map_err(|e| LogError::io("delete log", &doomed, e))?;
        Ok(true)
    }

    /// The hosted partitions, sorted.
    pub fn partitions(&self) -> Vec<TopicPartition> {
        self.logs().keys().cloned().collect()
    }

    /// Every hosted log, sorted by partition.
    pub fn all(&self) -> Vec<(TopicPartition, SharedLog)> {
        self.logs()
            .iter()
            .map(|(tp, h)| (tp.clone(), Arc::clone(&h.log)))
            .collect()
    }

    /// Partitions found on disk that could not be opened, with the reason.
    pub fn offline(&self) -> Vec<(TopicPartition, String)> {
        let offline = crate::sync::read(&self.offline);
        offline
            .iter()
            .map(|(tp, o)| (tp.clone(), o.reason.clone()))
            .collect()
    }

    /// Applies retention to every log; returns the number of segments deleted. Errors are
    /// logged and the other logs still get their turn.
    pub fn apply_retention(&self, now_ms: i64) -> usize {
        let mut deleted = 0;
        for (tp, log) in self.all() {
            match lock_log(&log).apply_retention(now_ms) {
                Ok(n) => deleted += n,
                Err(e) => tracing::warn!(partition = %tp, error = %e, "retention failed"),
            }
        }
        deleted
    }

    /// Flushes every log whose `flush.ms` is due; errors are logged.
    pub fn flush_due(&self, now_ms: i64) {
        for (tp, log) in self.all() {
            if let Err(e) = lock_log(&log).flush_if_due(now_ms) {
                tracing::warn!(partition = %tp, error = %e, "flush failed");
            }
        }
    }

    /// Flushes every log (moves the recovery points); returns the first error.
    pub fn flush_all(&self) -> Result<(), LogError> {
        let mut first = None;
        for (tp, log) in self.all() {
            if let Err(e) = lock_log(&log).flush() {
                tracing::warn!(partition = %tp, error = %e, "flush failed");
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    }

    /// Closes every log (final index entries, fsyncs, recovery points) and writes the
    /// clean-shutdown marker in each data directory whose logs all closed cleanly, so the next
    /// start skips their recovery. The marker says "every log here is consistent up to its
    /// end": a directory holding a log that did not close, or one that is offline (never
    /// recovered, or failed at run time), gets none, and the next start recovers its logs.
    /// Does what it can when the disk is full or failing; `Err` names what was not written
    /// (each also logged). Acknowledged records are in the segment files whatever fails here:
    /// recovery keeps every whole batch.
    pub fn close(&self) -> Result<(), Vec<String>> {
        let mut not_written = Vec::new();
        let mut unclean_dirs: Vec<PathBuf> = Vec::new();
        let hosted: Vec<(TopicPartition, PathBuf, SharedLog)> = self
            .logs()
            .iter()
            .map(|(tp, h)| (tp.clone(), h.dir.clone(), Arc::clone(&h.log)))
            .collect();
        for (tp, dir, log) in hosted {
            if let Err(e) = lock_log(&log).close() {
                tracing::warn!(partition = %tp, error = %e, "log did not close cleanly; the next start recovers it");
                not_written.push(format!("the clean close of {tp} ({e})"));
                unclean_dirs.extend(dir.parent().map(Path::to_path_buf));
            }
        }
        {
            let offline = crate::sync::read(&self.offline);
            unclean_dirs.extend(
                offline
                    .values()
                    .filter_map(|o| o.dir.parent().map(Path::to_path_buf)),
            );
        }
        for dir in &self.dirs {
            if unclean_dirs.contains(dir) {
                tracing::warn!(dir = %dir.display(), "no clean-shutdown marker written: a log here is offline or did not close cleanly");
                not_written.push(format!("the clean-shutdown marker in {}", dir.display()));
                continue;
            }
            if let Err(e) = write_marker(self.io.as_ref(), dir) {
                tracing::warn!(dir = %dir.display(), error = %e, "clean-shutdown marker not written");
                not_written.push(format!(
                    "the clean-shutdown marker in {} ({e})",
                    dir.display()
                ));
            }
        }
        if not_written.is_empty() {
            Ok(())
        } else {
            Err(not_written)
        }
    }
}

fn write_marker(io: &dyn LogIo, dir: &Path) -> Result<(), LogError> {
    let path = dir.join(CLEAN_SHUTDOWN_FILE);
    let file = io
        .open(FileKind::Checkpoint, &path, OpenMode::Truncate)
        .map_err(|e| LogError::io("write marker", &path, e))?;
    io.sync(FileKind::Checkpoint, &file)
        .map_err(|e| LogError::io("fsync marker", &path, e))?;
    sync_dir(io, dir)
}

/// The partition directories of a data directory; removes directories left being deleted.
fn partition_dirs(io: &dyn LogIo, dir: &Path) -> Result<Vec<(TopicPartition, PathBuf)>, LogError> {
    let mut found = Vec::new();
    let entries = io
        .list_dir(dir)
        .map_err(|e| LogError::io("list directory", dir, e))?;
    for entry in entries {
        let path = dir.join(&entry.name);
        if !entry.is_dir {
            continue;
        }
        let Some(name) = entry.name.to_str().map(str::to_owned) else {
            tracing::warn!(dir = %path.display(), "skipping a directory with a non-UTF-8 name");
            continue;
        };
        if name.ends_with(DELETE_SUFFIX) {
            tracing::info!(dir = %path.display(), "finishing the deletion of a log");
            io.remove_dir_all(&path)
                .map_err(|e| LogError::io("delete log", &path, e))?;
            continue;
        }
        match TopicPartition::from_dir_name(&name) {
            Some(tp) => found.push((tp, path)),
            None => tracing::warn!(dir = %path.display(), "not a partition directory; skipped"),
        }
    }
    found.sort();
    Ok(found)
}
