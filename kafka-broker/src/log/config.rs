//! Per-log configuration, with Kafka's defaults. Topic and broker keys are parsed into it by
//! `crate::topic_config`.

use kafka_protocol::record::TimestampType;

use super::error::LogError;

const HOUR_MS: i64 = 60 * 60 * 1000;
const WEEK_MS: i64 = 7 * 24 * HOUR_MS;
/// Kafka's smallest `segment.bytes` (the size of a v0 message header).
pub const MIN_SEGMENT_BYTES: u64 = 14;
/// Index positions are 4 bytes, and Kafka's `segment.bytes` is an int.
pub const MAX_SEGMENT_BYTES: u64 = i32::MAX as u64;

/// The settings of one partition log. Each field names its topic key and broker key; the
/// broker's values are the defaults of a topic's.
#[derive(Debug, Clone, PartialEq)]
pub struct LogConfig {
    /// `segment.bytes` / `log.segment.bytes`: roll when the active segment would exceed it.
    pub segment_bytes: u64,
    /// `segment.ms` / `log.roll.ms` (`log.roll.hours`): roll when the active segment is older.
    pub segment_ms: i64,
    /// `index.interval.bytes` / `log.index.interval.bytes`: log bytes between index entries.
    pub index_interval_bytes: u64,
    /// `retention.ms` / `log.retention.ms` (`.minutes`, `.hours`); -1 keeps data forever.
    pub retention_ms: i64,
    /// `retention.bytes` / `log.retention.bytes`; -1 means no size limit.
    pub retention_bytes: i64,
    /// `flush.messages` / `log.flush.interval.messages`: ask for an fsync after this many
    /// messages. `None` (Kafka's `Long.MAX_VALUE`) leaves flushing to the OS; `Some(1)` is the
    /// durable mode (every acknowledged append is fsynced, with group commit).
    pub flush_interval_messages: Option<u64>,
    /// `flush.ms` / `log.flush.interval.ms`: ask for an fsync when the last one is older.
    pub flush_interval_ms: Option<i64>,
    /// `message.timestamp.type` / `log.message.timestamp.type`.
    pub message_timestamp_type: TimestampType,
    /// `cleanup.policy` / `log.cleanup.policy` holds `compact`: the cleaner keeps the latest
    /// record of each key (see `cleaner`).
    pub compact: bool,
    /// `cleanup.policy` holds `delete`: retention by time and size applies.
    pub delete: bool,
    /// `delete.retention.ms` / `log.cleaner.delete.retention.ms`: how long tombstones stay
    /// after their part of the log was cleaned (measured in record time, as Kafka does).
    pub delete_retention_ms: i64,
    /// `min.cleanable.dirty.ratio` / `log.cleaner.min.cleanable.ratio`: clean when the
    /// uncleaned share of the cleanable bytes reaches this.
    pub min_cleanable_dirty_ratio: f64,
    /// `min.compaction.lag.ms` / `log.cleaner.min.compaction.lag.ms`: records younger than
    /// this are not compacted.
    pub min_compaction_lag_ms: i64,
    /// `max.compaction.lag.ms` / `log.cleaner.max.compaction.lag.ms`: a log with dirty data
    /// older than this is cleaned whatever its dirty ratio.
    pub max_compaction_lag_ms: i64,
}

impl Default for LogConfig {
    fn default() -> Self {
        Self {
            segment_bytes: 1 << 30,
            segment_ms: WEEK_MS,
            index_interval_bytes: 4096,
            retention_ms: WEEK_MS,
            retention_bytes: -1,
            flush_interval_messages: None,
            flush_interval_ms: None,
            message_timestamp_type: TimestampType::CreateTime,
            compact: false,
            delete: true,
            delete_retention_ms: 24 * HOUR_MS,
            min_cleanable_dirty_ratio: 0.5,
            min_compaction_lag_ms: 0,
            max_compaction_lag_ms: i64::MAX,
        }
    }
}

fn invalid(key: &str, value: &str, reason: &'static str) -> LogError {
    LogError::InvalidConfig {
        key: key.to_owned(),
        value: value.to_owned(),
        reason,
    }
}

impl LogConfig {
    /// The durable mode: every append is fsynced before it is acknowledged.
    pub fn is_durable(&self) -> bool {
        self.flush_interval_messages == Some(1)
    }

    /// Checks the invariants the log relies on (useful after building the struct by hand).
    pub fn validate(&self) -> Result<(), LogError> {
        let fail = |key: &str, value: String, reason| Err(invalid(key, &value, reason));
        if !(MIN_SEGMENT_BYTES..=MAX_SEGMENT_BYTES).contains(&self.segment_bytes) {
            return fail(
                "segment.bytes",
                self.segment_bytes.to_string(),
                "must be between 14 and 2^31-1",
            );
        }
        if self.segment_ms < 1 {
            return fail(
                "segment.ms",
                self.segment_ms.to_string(),
                "must be positive",
            );
        }
        if self.flush_interval_messages == Some(0) {
            return fail("flush.messages", "0".into(), "must be at least 1");
        }
        if self.flush_interval_ms.is_some_and(|v| v < 1) {
            return fail(
                "flush.ms",
                format!("{:?}", self.flush_interval_ms),
                "must be at least 1",
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn defaults_are_kafkas_and_valid() {
        let c = LogConfig::default();
        assert_eq!(c.segment_bytes, 1 << 30);
        assert_eq!(c.retention_ms, 7 * 24 * 3600 * 1000);
        assert!((c.compact, c.delete) == (false, true));
        assert!(!c.is_durable());
        c.validate().unwrap();
    }

    #[test]
    fn validate_refuses_what_the_log_cannot_use() {
        for bad in [
            LogConfig {
                segment_bytes: 3,
                ..LogConfig::default()
            },
            LogConfig {
                segment_ms: 0,
                ..LogConfig::default()
            },
            LogConfig {
                flush_interval_messages: Some(0),
                ..LogConfig::default()
            },
            LogConfig {
                flush_interval_ms: Some(0),
                ..LogConfig::default()
            },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
    }
}
