//! Small text files kept in a partition directory, in Kafka's checkpoint format: a version line
//! (`0`), a count line, then one entry per line.
//!
//! - `leader-epoch-checkpoint`: entries `<epoch> <start offset>` (Kafka's file, same format).
//! - `recovery-point-checkpoint` and `log-start-offset-checkpoint`: one entry, the offset.
//!   Kafka keeps these two per data directory; here they live per partition so a partition
//!   directory is self-contained.
//!
//! - `cleaner-offset-checkpoint`: one entry, the first offset the cleaner has not cleaned.
//! - `txn-index-rebuild-checkpoint`: one entry, the first segment whose `.txnindex` is being
//!   rebuilt (present only while a rebuild is unfinished).
//!
//! Files are replaced atomically: written to `<name>.tmp`, fsynced, renamed, and the directory
//! fsynced. Every file access goes through [`LogIo`]. Imports only `io` and `error`.

use std::path::Path;

use super::error::LogError;
use super::io::{FileKind, LogIo, OpenMode, StdIo};

pub(crate) const LEADER_EPOCH_FILE: &str = "leader-epoch-checkpoint";
pub(crate) const RECOVERY_POINT_FILE: &str = "recovery-point-checkpoint";
pub(crate) const LOG_START_FILE: &str = "log-start-offset-checkpoint";
/// Per-partition file holding the first dirty offset (the end of the cleaned part).
pub(crate) const CLEANER_CHECKPOINT_FILE: &str = "cleaner-offset-checkpoint";
/// Per-partition file naming the first segment whose `.txnindex` must be rebuilt from the
/// batches (written when recovery or a damaged file calls for it, removed once rebuilt and
/// fsynced), so that a crash in between rebuilds again.
pub(crate) const TXN_REBUILD_FILE: &str = "txn-index-rebuild-checkpoint";
const VERSION: &str = "0";

/// Fsyncs a directory (after creating, renaming or removing entries in it).
pub(crate) fn sync_dir(io: &dyn LogIo, dir: &Path) -> Result<(), LogError> {
    let f = io
        .open(FileKind::Dir, dir, OpenMode::Read)
        .map_err(|e| LogError::io("open directory", dir, e))?;
    io.sync(FileKind::Dir, &f)
        .map_err(|e| LogError::io("fsync directory", dir, e))
}

/// Writes a checkpoint file with `entries` atomically.
pub(crate) fn write(
    io: &dyn LogIo,
    dir: &Path,
    name: &str,
    entries: &[String],
) -> Result<(), LogError> {
    let mut text = format!("{VERSION}\n{}\n", entries.len());
    for e in entries {
        text.push_str(e);
        text.push('\n');
    }
    let tmp = dir.join(format!("{name}.tmp"));
    let file = io
        .open(FileKind::Checkpoint, &tmp, OpenMode::Truncate)
        .map_err(|e| LogError::io("create checkpoint", &tmp, e))?;
    io.write_all_at(FileKind::Checkpoint, &file, text.as_bytes(), 0)
        .map_err(|e| LogError::io("write checkpoint", &tmp, e))?;
    io.sync(FileKind::Checkpoint, &file)
        .map_err(|e| LogError::io("fsync checkpoint", &tmp, e))?;
    let path = dir.join(name);
    io.rename(FileKind::Checkpoint, &tmp, &path)
        .map_err(|e| LogError::io("rename checkpoint", &path, e))?;
    sync_dir(io, dir)
}

/// [`read_with`] on the real file system, for callers that hold no [`LogIo`] (the replica
/// layer's high-watermark file).
pub(crate) fn read(dir: &Path, name: &str) -> Result<Option<Vec<String>>, LogError> {
    read_with(&StdIo, dir, name)
}

/// Reads a checkpoint file's entries: `Ok(None)` if the file does not exist, an error naming
/// the file if it is malformed.
pub(crate) fn read_with(
    io: &dyn LogIo,
    dir: &Path,
    name: &str,
) -> Result<Option<Vec<String>>, LogError> {
    let path = dir.join(name);
    let bytes = match io.read_file(FileKind::Checkpoint, &path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(LogError::io("read checkpoint", &path, e)),
    };
    let text =
        String::from_utf8(bytes).map_err(|_| LogError::corrupt(&path, 0, "not UTF-8 text"))?;
    let bad = |reason: &str| LogError::corrupt(&path, 0, reason);
    let mut lines = text.lines();
    if lines.next().map(str::trim) != Some(VERSION) {
        return Err(bad("unknown checkpoint version"));
    }
    let count: usize = lines
        .next()
        .and_then(|l| l.trim().parse().ok())
        .ok_or_else(|| bad("bad entry count"))?;
    let entries: Vec<String> = lines
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect();
    if entries.len() != count {
        return Err(bad("entry count does not match the entries"));
    }
    Ok(Some(entries))
}

/// Reads a one-offset checkpoint.
pub(crate) fn read_offset(io: &dyn LogIo, dir: &Path, name: &str) -> Result<Option<i64>, LogError> {
    let Some(entries) = read_with(io, dir, name)? else {
        return Ok(None);
    };
    match entries.as_slice() {
        [one] => one
            .parse()
            .map(Some)
            .map_err(|_| LogError::corrupt(dir.join(name), 0, "offset is not an integer")),
        _ => Err(LogError::corrupt(dir.join(name), 0, "expected one offset")),
    }
}

/// Writes a one-offset checkpoint.
pub(crate) fn write_offset(
    io: &dyn LogIo,
    dir: &Path,
    name: &str,
    offset: i64,
) -> Result<(), LogError> {
    write(io, dir, name, &[offset.to_string()])
}

/// An entry of the leader epoch cache: `epoch` started leading at `start_offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpochEntry {
    pub epoch: i32,
    pub start_offset: i64,
}

/// Epoch or offset that is not known (Kafka's `UNDEFINED_EPOCH` and `UNDEFINED_EPOCH_OFFSET`).
pub const UNDEFINED: i64 = -1;

/// The leader epochs of a partition and the offsets at which they began.
#[derive(Debug, Clone, Default)]
pub(crate) struct LeaderEpochCache {
    entries: Vec<EpochEntry>,
    /// Changed since the file was last written.
    pub(crate) dirty: bool,
}

impl LeaderEpochCache {
    /// Loads the cache. A malformed file is reported and replaced (recovery refills it from
    /// the epochs stamped in the batches it checks); a file that cannot be read (an I/O
    /// error) fails the load.
    pub(crate) fn load(io: &dyn LogIo, dir: &Path) -> Result<Self, LogError> {
        let parsed = match read_with(io, dir, LEADER_EPOCH_FILE) {
            Ok(None) => return Ok(Self::default()),
            Ok(Some(lines)) => lines.iter().map(|l| parse_entry(l)).collect(),
            Err(e) if e.is_io() => return Err(e),
            Err(e) => {
                tracing::warn!(error = %e, "unreadable leader epoch checkpoint");
                None
            }
        };
        let increasing = |v: &Vec<EpochEntry>| {
            v.windows(2).all(|w| match w {
                [a, b] => a.epoch < b.epoch && a.start_offset <= b.start_offset,
                _ => true,
            })
        };
        Ok(match parsed.filter(increasing) {
            Some(entries) => Self {
                entries,
                dirty: false,
            },
            None => {
                tracing::warn!(dir = %dir.display(), "malformed leader epoch checkpoint replaced");
                Self {
                    entries: Vec::new(),
                    dirty: true,
                }
            }
        })
    }

    pub(crate) fn entries(&self) -> &[EpochEntry] {
        &self.entries
    }

    pub(crate) fn latest_epoch(&self) -> Option<i32> {
        self.entries.last().map(|e| e.epoch)
    }

    /// Records that `epoch` starts at `start_offset`, if it is newer than the latest epoch.
    pub(crate) fn assign(&mut self, epoch: i32, start_offset: i64) -> bool {
        if epoch < 0 || self.entries.last().is_some_and(|l| epoch <= l.epoch) {
            return false;
        }
        self.entries.push(EpochEntry {
            epoch,
            start_offset,
        });
        self.dirty = true;
        true
    }

    /// Forgets the epochs that start at or after `end_offset` (the log was truncated there).
    pub(crate) fn truncate_from_end(&mut self, end_offset: i64) {
        let before = self.entries.len();
        self.entries.retain(|e| e.start_offset < end_offset);
        self.dirty |= self.entries.len() != before;
    }

    /// The log now starts at `start_offset`: the epoch covering it starts there, older
    /// epochs are forgotten.
    pub(crate) fn truncate_from_start(&mut self, start_offset: i64) {
        let covering = self
            .entries
            .iter()
            .rposition(|e| e.start_offset <= start_offset);
        if let Some(i) = covering {
            self.entries.drain(..i);
            if let Some(first) = self.entries.first_mut()
                && first.start_offset != start_offset
            {
                first.start_offset = start_offset;
                self.dirty = true;
            }
            self.dirty |= i > 0;
        }
    }

    /// OffsetForLeaderEpoch: `(epoch, end offset)` for a requested epoch. The latest epoch
    /// ends at the log end; an older one ends where the next known epoch starts, and is
    /// answered with the largest known epoch not above it; an epoch newer than all known, or
    /// an empty cache, gives `(-1, -1)`.
    pub(crate) fn end_offset_for(&self, requested: i32, log_end_offset: i64) -> (i32, i64) {
        let undefined = (UNDEFINED as i32, UNDEFINED);
        if requested < 0 {
            return undefined;
        }
        if self.latest_epoch() == Some(requested) {
            return (requested, log_end_offset);
        }
        let Some(higher) = self.entries.iter().find(|e| e.epoch > requested) else {
            return undefined;
        };
        match self.entries.iter().rev().find(|e| e.epoch <= requested) {
            Some(floor) => (floor.epoch, higher.start_offset),
            None => (requested, higher.start_offset),
        }
    }

    /// Writes the file.
    pub(crate) fn persist(&mut self, io: &dyn LogIo, dir: &Path) -> Result<(), LogError> {
        let lines: Vec<String> = self
            .entries
            .iter()
            .map(|e| format!("{} {}", e.epoch, e.start_offset))
            .collect();
        write(io, dir, LEADER_EPOCH_FILE, &lines)?;
        self.dirty = false;
        Ok(())
    }
}

fn parse_entry(line: &str) -> Option<EpochEntry> {
    let mut parts = line.split_whitespace();
    let epoch = parts.next()?.parse().ok()?;
    let start_offset = parts.next()?.parse().ok()?;
    parts.next().is_none().then_some(EpochEntry {
        epoch,
        start_offset,
    })
}
