//! Storage: log manager, partition logs, segments, indexes, recovery.
//!
//! The files are Kafka's: a partition is a directory `<topic>-<partition>` of segments named by
//! their 20-digit base offset, each a `.log` file of v2 record batches exactly as stored, a
//! `.index` and a `.timeindex` (see [`index`]), a `.txnindex` of aborted transactions when it
//! has any ([`txn_index`]), plus `leader-epoch-checkpoint` and two
//! per-partition checkpoints (recovery point, log start offset; see [`checkpoint`]).
//!
//! - [`LogManager`] finds and opens every partition log of the data directories, runs
//!   recovery after an unclean shutdown (no `.kafka_cleanshutdown` marker) and creates and
//!   deletes logs. It starts no tasks: the broker drives retention and flushing on its timers.
//! - [`Log`] (`local_log.rs`) is one partition's log: append, read, offsets by timestamp,
//!   retention, truncation, leader epochs. It is not synchronized: the broker keeps it behind
//!   a mutex ([`SharedLog`]). Nothing reads the clock; methods that need time take `now_ms`.
//! - Recovery (`recovery.rs`) opens a log directory as the last run left it and returns what
//!   it found and did, segment by segment ([`LogRecovery`], [`RecoveryOutcome`]).
//! - [`Flusher`] is a log's group commit: fsync outside the partition lock, one fsync for
//!   every append waiting (see [`flusher`]).
//! - [`LogIo`] is every file-system call of the log (open, read, write, fsync, truncate,
//!   stat, list, create, rename, remove), so [`FaultInjector`] can count them and fail them.
//!
//! Inside `log/`, imports point down (no circle):
//! - `manager`, `maintain`, `cleaner`: what uses a log (hosting, upkeep, compaction);
//! - `local_log`: the log;
//! - `recovery`, then `swap`: opening a log directory as the last run left it;
//! - `segment`, then `index`, `txn_index`, `scan`: one segment and its files;
//! - `flusher`, `checkpoint`, `files`, `config`: durability, small files, descriptors;
//! - `io` (and `fault`, which implements it for tests), `error`: the file system, errors.
//!
//! The log knows nothing of requests, replicas or the broker: it imports only the base layer
//! (`sync`) and kafka-protocol (the record batch layout).
//!
//! Corruption policy. After an unclean shutdown every batch past the recovery point is checked
//! (length, magic, CRC-32C, increasing offsets) and the log is cut at the first invalid byte,
//! with a warning naming the file and position. Below the recovery point data was fsynced
//! before the point was recorded, so invalid bytes there are damage, not a torn write: such a
//! segment is never cut; opening the log fails with [`LogError::Corrupt`] naming the file and
//! position, and [`LogManager`] keeps the partition offline (KAFKA_STORAGE_ERROR) while the
//! other partitions serve. Indexes are derived data: a missing or invalid one is rebuilt.
//!
//! Cost of a clean open: every index file is read once to check it (about half a percent of
//! the log's size) and the batch headers after each segment's last index entry are walked; no
//! record data is read.
//!
//! Zero copy: reads return [`FileSlice`]s of the segment files. Fetch answers send them to
//! the socket with `sendfile(2)` ([`crate::sendfile`]); [`FileSlice::read_bytes`] reads one
//! with `pread` where the data must be in memory.

pub mod checkpoint;
mod cleaner;
mod config;
mod error;
mod fault;
pub mod files;
pub mod flusher;
pub mod index;
mod io;
mod local_log;
mod maintain;
mod manager;
mod recovery;
mod scan;
mod segment;
mod swap;
pub mod txn_index;

#[cfg(test)]
mod tests;

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};

pub use checkpoint::EpochEntry;
pub use cleaner::{CleanPlan, CleanStats, CleanedLog, CleanerLimits};
pub use config::{LogConfig, MAX_SEGMENT_BYTES, MIN_SEGMENT_BYTES};
pub use error::LogError;
pub use fault::{FaultInjector, IoOp};
pub use files::{FileCache, FileHandle};
pub use flusher::Flusher;
pub use io::{DirEntry, FileKind, LogIo, OpenMode, StdIo};
pub use kafka_protocol::record::TimestampType;
pub use local_log::{Log, OpenReport};
pub use manager::{
    CLEAN_SHUTDOWN_FILE, LogManager, SharedLog, TopicPartition, is_valid_topic, lock_log,
};
pub use recovery::{
    LogRecovery, RecoveryOutcome, SegmentCheck, Truncation, TxnRebuild, TxnRebuildCause,
};
pub use swap::SwapRecovery;
pub use txn_index::AbortedTxn;

/// What an append did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendInfo {
    /// The first offset assigned.
    pub base_offset: i64,
    /// The last offset assigned.
    pub last_offset: i64,
    /// The broker time stamped on the batches under `LogAppendTime`, else -1.
    pub log_append_time: i64,
    /// The largest batch max timestamp appended.
    pub max_timestamp: i64,
    /// The log start offset after the append.
    pub log_start_offset: i64,
    /// Number of records appended.
    pub record_count: u64,
    /// When set, the caller must make every offset below this durable before it acknowledges
    /// the append: release the partition lock, then call [`Flusher::sync_to`] (or
    /// [`Flusher::sync_to_async`]) on [`Log::flusher`]. Set on every append in durable mode
    /// (`flush.messages=1`), and when `flush.messages` or `flush.ms` is due otherwise.
    pub sync_to: Option<i64>,
}

/// A region of a segment file holding whole batches.
#[derive(Debug, Clone)]
pub struct FileSlice {
    pub file: Arc<File>,
    pub position: u64,
    pub len: usize,
}

impl FileSlice {
    /// Reads the region with `pread`. Fails if the segment was truncated or deleted and
    /// truncated since the read was planned.
    pub fn read_bytes(&self) -> std::io::Result<Bytes> {
        let mut buf = BytesMut::zeroed(self.len);
        self.file.read_exact_at(&mut buf, self.position)?;
        Ok(buf.freeze())
    }
}

/// What a read found: file regions to send, in offset order, and the log's offsets then.
#[derive(Debug, Clone)]
pub struct ReadInfo {
    /// Whole batches, starting with the batch that contains the requested offset.
    pub slices: Vec<FileSlice>,
    /// Total bytes of `slices`.
    pub bytes: usize,
    /// The offset after the last batch returned (the requested offset if none).
    pub next_offset: i64,
    pub log_start_offset: i64,
    pub high_watermark: i64,
    pub log_end_offset: i64,
}

impl ReadInfo {
    pub fn is_empty(&self) -> bool {
        self.slices.is_empty()
    }

    /// All slices read into one buffer.
    pub fn read_bytes(&self) -> std::io::Result<Bytes> {
        match self.slices.as_slice() {
            [one] => one.read_bytes(),
            slices => {
                let mut out = BytesMut::with_capacity(self.bytes);
                for s in slices {
                    out.extend_from_slice(&s.read_bytes()?);
                }
                Ok(out.freeze())
            }
        }
    }
}
