//! Per-log configuration, with Kafka's defaults and key names.

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

fn parse_i64(key: &str, value: &str) -> Result<i64, LogError> {
    value
        .trim()
        .parse()
        .map_err(|_| invalid(key, value, "not an integer"))
}

fn non_negative(key: &str, value: &str) -> Result<i64, LogError> {
    match parse_i64(key, value)? {
        v if v < 0 => Err(invalid(key, value, "must not be negative")),
        v => Ok(v),
    }
}

/// A flush interval: Kafka writes "never" as `Long.MAX_VALUE`.
fn parse_interval(key: &str, value: &str) -> Result<Option<i64>, LogError> {
    match parse_i64(key, value)? {
        i64::MAX => Ok(None),
        v if v < 1 => Err(invalid(key, value, "must be at least 1")),
        v => Ok(Some(v)),
    }
}

fn scaled(key: &str, value: &str, unit_ms: i64) -> Result<i64, LogError> {
    match parse_i64(key, value)? {
        v if v < 0 => Ok(-1),
        v => v
            .checked_mul(unit_ms)
            .ok_or_else(|| invalid(key, value, "too large")),
    }
}

impl LogConfig {
    /// The durable mode: every append is fsynced before it is acknowledged.
    pub fn is_durable(&self) -> bool {
        self.flush_interval_messages == Some(1)
    }

    /// Sets one value from a Kafka topic key (`segment.bytes`) or broker key
    /// (`log.segment.bytes`). Returns `Ok(false)` for keys that are not log settings, so the
    /// caller can try its own; an invalid value is an error.
    pub fn set(&mut self, key: &str, value: &str) -> Result<bool, LogError> {
        let key_only = key.strip_prefix("log.").unwrap_or(key);
        let key_only = key_only.strip_prefix("cleaner.").unwrap_or(key_only);
        match key_only {
            "cleanup.policy" => {
                let (mut compact, mut delete) = (false, false);
                for p in value.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                    match p {
                        "compact" => compact = true,
                        "delete" => delete = true,
                        _ => return Err(invalid(key, value, "expected delete, compact or both")),
                    }
                }
                (self.compact, self.delete) = (compact, delete);
            }
            "delete.retention.ms" => {
                self.delete_retention_ms = non_negative(key, value)?;
            }
            "min.compaction.lag.ms" => {
                self.min_compaction_lag_ms = non_negative(key, value)?;
            }
            "max.compaction.lag.ms" => {
                let v = parse_i64(key, value)?;
                if v < 1 {
                    return Err(invalid(key, value, "must be at least 1"));
                }
                self.max_compaction_lag_ms = v;
            }
            "min.cleanable.dirty.ratio" | "min.cleanable.ratio" => {
                self.min_cleanable_dirty_ratio = value
                    .trim()
                    .parse::<f64>()
                    .ok()
                    .filter(|r| (0.0..=1.0).contains(r))
                    .ok_or_else(|| invalid(key, value, "must be a number between 0 and 1"))?;
            }
            "segment.bytes" => {
                let v = parse_i64(key, value)?;
                self.segment_bytes = u64::try_from(v)
                    .ok()
                    .filter(|v| (MIN_SEGMENT_BYTES..=MAX_SEGMENT_BYTES).contains(v))
                    .ok_or_else(|| invalid(key, value, "must be between 14 and 2^31-1"))?;
            }
            "segment.ms" | "roll.ms" | "roll.hours" => {
                let v = if key_only == "roll.hours" {
                    scaled(key, value, HOUR_MS)?
                } else {
                    parse_i64(key, value)?
                };
                if v < 1 {
                    return Err(invalid(key, value, "must be at least 1"));
                }
                self.segment_ms = v;
            }
            "index.interval.bytes" => {
                let v = parse_i64(key, value)?;
                self.index_interval_bytes =
                    u64::try_from(v).map_err(|_| invalid(key, value, "must not be negative"))?;
            }
            "retention.ms" => self.retention_ms = parse_i64(key, value)?.max(-1),
            "retention.minutes" => self.retention_ms = scaled(key, value, 60_000)?,
            "retention.hours" => self.retention_ms = scaled(key, value, HOUR_MS)?,
            "retention.bytes" => self.retention_bytes = parse_i64(key, value)?.max(-1),
            "flush.messages" | "flush.interval.messages" => {
                self.flush_interval_messages = parse_interval(key, value)?.map(|v| v as u64);
            }
            "flush.ms" | "flush.interval.ms" => {
                self.flush_interval_ms = parse_interval(key, value)?;
            }
            "message.timestamp.type" => {
                self.message_timestamp_type = match value.trim() {
                    "CreateTime" => TimestampType::CreateTime,
                    "LogAppendTime" => TimestampType::LogAppendTime,
                    _ => return Err(invalid(key, value, "not CreateTime or LogAppendTime")),
                };
            }
            _ => return Ok(false),
        }
        Ok(true)
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
    fn log_config_defaults_and_keys() {
        let mut c = LogConfig::default();
        assert_eq!(c.segment_bytes, 1 << 30);
        assert_eq!(c.retention_ms, 7 * 24 * 3600 * 1000);
        assert!(c.set("log.segment.bytes", "1024").unwrap());
        assert_eq!(c.segment_bytes, 1024);
        assert!(c.set("retention.hours", "2").unwrap());
        assert_eq!(c.retention_ms, 2 * 3600 * 1000);
        assert!(c.set("log.flush.interval.messages", "1").unwrap());
        assert!(c.is_durable());
        assert!(
            c.set("flush.messages", "9223372036854775807").unwrap(),
            "Long.MAX_VALUE means never"
        );
        assert_eq!(c.flush_interval_messages, None);
        assert!(c.set("message.timestamp.type", "LogAppendTime").unwrap());
        assert_eq!(c.message_timestamp_type, TimestampType::LogAppendTime);
        assert!(!c.set("num.partitions", "3").unwrap());
        assert!(c.set("segment.bytes", "3").is_err());
        assert!(c.set("flush.ms", "0").is_err());
        assert!(c.set("message.timestamp.type", "Now").is_err());
        c.validate().unwrap();
    }

    #[test]
    fn compaction_keys_topic_and_broker_names() {
        let mut c = LogConfig::default();
        assert!((c.compact, c.delete) == (false, true));
        assert!(c.set("cleanup.policy", "compact").unwrap());
        assert!((c.compact, c.delete) == (true, false));
        assert!(c.set("log.cleanup.policy", "compact, delete").unwrap());
        assert!((c.compact, c.delete) == (true, true));
        assert!(c.set("cleanup.policy", "shred").is_err());
        assert!(c.set("log.cleaner.delete.retention.ms", "5").unwrap());
        assert_eq!(c.delete_retention_ms, 5);
        assert!(c.set("log.cleaner.min.cleanable.ratio", "0.25").unwrap());
        assert_eq!(c.min_cleanable_dirty_ratio, 0.25);
        assert!(c.set("min.cleanable.dirty.ratio", "1.5").is_err());
        assert!(c.set("min.compaction.lag.ms", "7").unwrap());
        assert!(c.set("max.compaction.lag.ms", "0").is_err());
        assert!(c.set("log.cleaner.max.compaction.lag.ms", "9").unwrap());
        assert_eq!((c.min_compaction_lag_ms, c.max_compaction_lag_ms), (7, 9));
    }
}
