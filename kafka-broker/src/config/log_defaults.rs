//! The log part of the broker's configuration ([`LogDefaults`]): the defaults of the topic
//! keys (`log.segment.bytes` for `segment.bytes`, ...; a topic's own config is built from
//! them in `topic.rs`), and the upkeep of the partitions on this broker (retention checks,
//! the cleaner, open files, offline retries, idle producers).

use super::TimestampType;

/// The log defaults and the partitions' upkeep.
#[derive(Debug, Clone, PartialEq)]
pub struct LogDefaults {
    /// `log.segment.bytes`.
    pub segment_bytes: u64,
    /// `log.roll.ms` (`log.roll.hours`).
    pub roll_ms: i64,
    /// `log.retention.ms` (`log.retention.minutes`, `log.retention.hours`); -1 keeps forever.
    pub retention_ms: i64,
    /// `log.retention.bytes`; -1 for no limit.
    pub retention_bytes: i64,
    /// `log.retention.check.interval.ms`.
    pub retention_check_interval_ms: u64,
    /// `log.flush.interval.messages`; `None` leaves flushing to the OS.
    pub flush_interval_messages: Option<u64>,
    /// `log.flush.interval.ms`.
    pub flush_interval_ms: Option<u64>,
    /// `log.index.interval.bytes`.
    pub index_interval_bytes: u32,
    /// `message.max.bytes`: the largest record batch accepted.
    pub message_max_bytes: usize,
    /// `log.message.timestamp.type`.
    pub message_timestamp_type: TimestampType,
    /// `log.message.timestamp.before.max.ms`: how far in the past a CreateTime record may be
    /// (`i64::MAX`: no limit).
    pub message_timestamp_before_max_ms: i64,
    /// `log.message.timestamp.after.max.ms`: how far in the future it may be.
    pub message_timestamp_after_max_ms: i64,
    /// `min.insync.replicas`: the broker default of the topic key.
    pub min_insync_replicas: i32,
    /// `unclean.leader.election.enable`: the broker default of the topic key.
    pub unclean_leader_election_enable: bool,
    /// `log.cleanup.policy`: the default `cleanup.policy` of topics.
    pub cleanup_policy: String,
    /// `log.cleaner.enable`: run the log cleaner (compaction of `compact` topics).
    pub cleaner_enable: bool,
    /// `log.cleaner.backoff.ms`: pause between cleaner rounds.
    pub cleaner_backoff_ms: u64,
    /// `log.cleaner.dedupe.buffer.size`: memory for one pass's key map.
    pub cleaner_dedupe_buffer_size: usize,
    /// `log.cleaner.delete.retention.ms`: default `delete.retention.ms`.
    pub cleaner_delete_retention_ms: i64,
    /// `log.cleaner.min.cleanable.ratio`: default `min.cleanable.dirty.ratio`.
    pub cleaner_min_cleanable_ratio: f64,
    /// `log.cleaner.min.compaction.lag.ms`: default `min.compaction.lag.ms`.
    pub cleaner_min_compaction_lag_ms: i64,
    /// `log.cleaner.max.compaction.lag.ms`: default `max.compaction.lag.ms`.
    pub cleaner_max_compaction_lag_ms: i64,
    /// `log.open.files.max` (ours): the most segment files (`.log`, `.index`, `.timeindex`)
    /// open at a time over every partition; the least recently used are closed and reopened
    /// on use. `None`: derived from the process's descriptor limit at start
    /// (`crate::log::files::default_open_files`).
    pub open_files_max: Option<usize>,
    /// `log.offline.retry.ms` (ours): how often an offline partition (its log could not be
    /// opened at start, or failed an fsync) is reopened through recovery, so it comes back
    /// once the cause is gone (space freed, descriptors freed) without a restart.
    pub offline_retry_ms: u64,
    /// `producer.id.expiration.ms`: an idempotent producer that has not appended for this
    /// long is forgotten by each partition.
    pub producer_id_expiration_ms: i64,
    /// `producer.id.expiration.check.interval.ms`: how often the partitions look for them.
    pub producer_id_expiration_check_interval_ms: u64,
}

impl Default for LogDefaults {
    fn default() -> Self {
        Self {
            segment_bytes: 1 << 30,
            roll_ms: 7 * 24 * 3_600_000,
            retention_ms: 7 * 24 * 3_600_000,
            retention_bytes: -1,
            retention_check_interval_ms: 300_000,
            flush_interval_messages: None,
            flush_interval_ms: None,
            index_interval_bytes: 4096,
            message_max_bytes: 1_048_588,
            message_timestamp_type: TimestampType::CreateTime,
            message_timestamp_before_max_ms: i64::MAX,
            message_timestamp_after_max_ms: i64::MAX,
            min_insync_replicas: 1,
            unclean_leader_election_enable: false,
            cleanup_policy: "delete".into(),
            cleaner_enable: true,
            cleaner_backoff_ms: 15_000,
            cleaner_dedupe_buffer_size: 128 * 1024 * 1024,
            cleaner_delete_retention_ms: 86_400_000,
            cleaner_min_cleanable_ratio: 0.5,
            cleaner_min_compaction_lag_ms: 0,
            cleaner_max_compaction_lag_ms: i64::MAX,
            open_files_max: None,
            offline_retry_ms: 5_000,
            producer_id_expiration_ms: 86_400_000,
            producer_id_expiration_check_interval_ms: 600_000,
        }
    }
}
