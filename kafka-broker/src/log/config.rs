//! Per-log configuration, with Kafka's defaults, taken from a topic's typed config
//! ([`LogConfig::from`] a [`TopicConfig`]; the keys are parsed by `crate::config::topic`).

use kafka_protocol::record::TimestampType;

use super::error::LogError;
use crate::config::topic::TopicConfig;

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

impl From<&TopicConfig> for LogConfig {
    /// The settings of a topic's partition logs.
    fn from(t: &TopicConfig) -> Self {
        // A compacted topic without `delete` in its policy is not trimmed by time or size:
        // compaction bounds it.
        let (retention_ms, retention_bytes) = if t.delete {
            (t.retention_ms, t.retention_bytes)
        } else {
            (-1, -1)
        };
        LogConfig {
            segment_bytes: t.segment_bytes,
            segment_ms: t.segment_ms,
            index_interval_bytes: u64::from(t.index_interval_bytes),
            retention_ms,
            retention_bytes,
            flush_interval_messages: t.flush_messages,
            flush_interval_ms: t.flush_ms,
            message_timestamp_type: t.message_timestamp_type,
            compact: t.compact,
            delete: t.delete,
            delete_retention_ms: t.delete_retention_ms,
            min_cleanable_dirty_ratio: t.min_cleanable_dirty_ratio,
            min_compaction_lag_ms: t.min_compaction_lag_ms,
            max_compaction_lag_ms: t.max_compaction_lag_ms,
        }
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

#[cfg(test)]
mod topic_tests {
    #![allow(clippy::unwrap_used)]
    use std::collections::BTreeMap;

    use super::*;
    use crate::config::BrokerConfig;

    fn overrides(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn every_log_setting_comes_from_the_topic_config() {
        let c = TopicConfig::new(
            &BrokerConfig::default(),
            &overrides(&[
                ("cleanup.policy", "compact, delete"),
                ("delete.retention.ms", "5"),
                ("flush.messages", "3"),
                ("flush.ms", "7"),
                ("index.interval.bytes", "100"),
                ("message.timestamp.type", "LogAppendTime"),
                ("max.compaction.lag.ms", "13"),
                ("min.cleanable.dirty.ratio", "0.25"),
                ("min.compaction.lag.ms", "14"),
                ("retention.bytes", "15"),
                ("retention.ms", "16"),
                ("segment.bytes", "4096"),
                ("segment.ms", "17"),
            ]),
        )
        .unwrap();
        let l = LogConfig::from(&c);
        assert_eq!((l.segment_bytes, l.segment_ms), (4096, 17));
        assert_eq!((l.retention_ms, l.retention_bytes), (16, 15));
        assert_eq!(l.index_interval_bytes, 100);
        assert_eq!(
            (l.flush_interval_messages, l.flush_interval_ms),
            (Some(3), Some(7))
        );
        assert_eq!(
            l.message_timestamp_type,
            crate::log::TimestampType::LogAppendTime
        );
        assert!(l.compact && l.delete);
        assert_eq!(l.delete_retention_ms, 5);
        assert_eq!(l.min_cleanable_dirty_ratio, 0.25);
        assert_eq!((l.min_compaction_lag_ms, l.max_compaction_lag_ms), (14, 13));
        l.validate().unwrap();
    }

    #[test]
    fn compacted_only_logs_are_not_trimmed_by_time_or_size() {
        let mut cfg = BrokerConfig::default();
        cfg.apply("log.retention.ms", "1000").unwrap();
        cfg.apply("log.cleanup.policy", "compact").unwrap();
        let d = TopicConfig::defaults(&cfg);
        assert_eq!(
            (
                LogConfig::from(&d).retention_ms,
                LogConfig::from(&d).retention_bytes
            ),
            (-1, -1)
        );
        let c = TopicConfig::new(
            &cfg,
            &overrides(&[("retention.ms", "7"), ("cleanup.policy", "delete")]),
        )
        .unwrap();
        assert_eq!(LogConfig::from(&c).retention_ms, 7);
    }
}
