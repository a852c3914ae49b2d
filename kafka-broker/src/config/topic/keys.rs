//! The topic key table: every topic-level key this broker knows, with its type, its parser
//! (the shared ones of [`crate::config::parse`]) and where its default comes from: the broker
//! key of the broker key table that supplies it (`segment.bytes` from `log.segment.bytes`),
//! or for the two keys the broker has no setting of, a fixed value shown under Kafka's broker
//! key name.

use super::{Compression, TopicConfig};
use crate::config::BrokerConfig;
use crate::config::keys::ConfigType;
use crate::config::keys::broker_key;
use crate::config::parse::{self, Why};
use crate::error::BrokerError;

/// `segment.index.bytes` (Kafka's `log.index.size.max.bytes` default): stored and described;
/// index files are sized by the log.
pub const SEGMENT_INDEX_BYTES: i32 = 10 * 1024 * 1024;

/// One topic-level key.
#[derive(Debug, Clone, Copy)]
pub struct TopicKey {
    pub name: &'static str,
    pub config_type: ConfigType,
    /// The broker setting that supplies the default (Kafka's synonym), if the key has one.
    pub broker_key: Option<&'static str>,
    /// The default when this broker has no such broker setting (`compression.type`,
    /// `segment.index.bytes`); `None`: [`TopicKey::broker_key`]'s value in the broker key
    /// table.
    pub fixed_default: Option<&'static str>,
    /// Parses a value into its field (the caller names the key and value in a refusal).
    pub set: fn(&mut TopicConfig, &str) -> Result<(), Why>,
}

/// The old name of [`TopicKey`].
pub type KeySpec = TopicKey;

const fn key(
    name: &'static str,
    config_type: ConfigType,
    broker_key: &'static str,
    set: fn(&mut TopicConfig, &str) -> Result<(), Why>,
) -> TopicKey {
    TopicKey {
        name,
        config_type,
        broker_key: Some(broker_key),
        fixed_default: None,
        set,
    }
}

impl TopicKey {
    /// The default is `value`, shown as the broker key `broker_key` (which this broker does
    /// not configure).
    const fn fixed(self, value: &'static str) -> Self {
        Self {
            fixed_default: Some(value),
            ..self
        }
    }
}

fn compression(v: &str) -> Result<Compression, Why> {
    Ok(match v.trim() {
        "producer" => Compression::Producer,
        "uncompressed" => Compression::Uncompressed,
        "gzip" => Compression::Gzip,
        "snappy" => Compression::Snappy,
        "lz4" => Compression::Lz4,
        "zstd" => Compression::Zstd,
        _ => return Err("expected producer, uncompressed, gzip, snappy, lz4 or zstd".into()),
    })
}

/// Every topic key this broker knows, in the order DescribeConfigs lists them.
pub static KEYS: &[TopicKey] = &[
    key(
        "cleanup.policy",
        ConfigType::List,
        "log.cleanup.policy",
        |c, v| {
            (c.compact, c.delete) = parse::cleanup_policy(v)?;
            Ok(())
        },
    ),
    key(
        "compression.type",
        ConfigType::String,
        "compression.type",
        |c, v| {
            c.compression = compression(v)?;
            Ok(())
        },
    )
    .fixed("producer"),
    key(
        "delete.retention.ms",
        ConfigType::Long,
        "log.cleaner.delete.retention.ms",
        |c, v| {
            c.delete_retention_ms = parse::at_least(v, 0)?;
            Ok(())
        },
    ),
    key(
        "flush.messages",
        ConfigType::Long,
        "log.flush.interval.messages",
        |c, v| {
            c.flush_messages = parse::interval(v)?;
            Ok(())
        },
    ),
    key(
        "flush.ms",
        ConfigType::Long,
        "log.flush.interval.ms",
        |c, v| {
            c.flush_ms = parse::interval(v)?.and_then(|n| i64::try_from(n).ok());
            Ok(())
        },
    ),
    key(
        "index.interval.bytes",
        ConfigType::Int,
        "log.index.interval.bytes",
        |c, v| {
            c.index_interval_bytes = parse::at_least::<i32>(v, 0)?.unsigned_abs();
            Ok(())
        },
    ),
    key(
        "max.message.bytes",
        ConfigType::Int,
        "message.max.bytes",
        |c, v| {
            c.max_message_bytes = parse::at_least::<i32>(v, 0)?.unsigned_abs() as usize;
            Ok(())
        },
    ),
    key(
        "message.timestamp.after.max.ms",
        ConfigType::Long,
        "log.message.timestamp.after.max.ms",
        |c, v| {
            c.message_timestamp_after_max_ms = parse::at_least(v, 0)?;
            Ok(())
        },
    ),
    key(
        "message.timestamp.before.max.ms",
        ConfigType::Long,
        "log.message.timestamp.before.max.ms",
        |c, v| {
            c.message_timestamp_before_max_ms = parse::at_least(v, 0)?;
            Ok(())
        },
    ),
    // Deprecated since Kafka 3.6 for the two above; it sets both (they win when given).
    key(
        "message.timestamp.difference.max.ms",
        ConfigType::Long,
        "log.message.timestamp.difference.max.ms",
        |c, v| {
            let n = parse::at_least(v, 0)?;
            c.message_timestamp_before_max_ms = n;
            c.message_timestamp_after_max_ms = n;
            Ok(())
        },
    ),
    key(
        "message.timestamp.type",
        ConfigType::String,
        "log.message.timestamp.type",
        |c, v| {
            c.message_timestamp_type = parse::timestamp_type(v)?;
            Ok(())
        },
    ),
    key(
        "max.compaction.lag.ms",
        ConfigType::Long,
        "log.cleaner.max.compaction.lag.ms",
        |c, v| {
            c.max_compaction_lag_ms = parse::at_least(v, 1)?;
            Ok(())
        },
    ),
    key(
        "min.cleanable.dirty.ratio",
        ConfigType::Double,
        "log.cleaner.min.cleanable.ratio",
        |c, v| {
            c.min_cleanable_dirty_ratio = parse::ratio(v)?;
            Ok(())
        },
    ),
    key(
        "min.compaction.lag.ms",
        ConfigType::Long,
        "log.cleaner.min.compaction.lag.ms",
        |c, v| {
            c.min_compaction_lag_ms = parse::at_least(v, 0)?;
            Ok(())
        },
    ),
    key(
        "min.insync.replicas",
        ConfigType::Int,
        "min.insync.replicas",
        |c, v| {
            c.min_insync_replicas = parse::at_least(v, 1)?;
            Ok(())
        },
    ),
    key(
        "retention.bytes",
        ConfigType::Long,
        "log.retention.bytes",
        |c, v| {
            c.retention_bytes = parse::at_least(v, -1)?;
            Ok(())
        },
    ),
    key(
        "retention.ms",
        ConfigType::Long,
        "log.retention.ms",
        |c, v| {
            c.retention_ms = parse::at_least(v, -1)?;
            Ok(())
        },
    ),
    key(
        "segment.bytes",
        ConfigType::Int,
        "log.segment.bytes",
        |c, v| {
            c.segment_bytes = u64::from(parse::at_least::<i32>(v, 14)?.unsigned_abs());
            Ok(())
        },
    ),
    key(
        "segment.index.bytes",
        ConfigType::Int,
        "log.index.size.max.bytes",
        |c, v| {
            c.segment_index_bytes = parse::at_least(v, 4)?;
            Ok(())
        },
    )
    .fixed("10485760"),
    key("segment.ms", ConfigType::Long, "log.roll.ms", |c, v| {
        c.segment_ms = parse::at_least(v, 1)?;
        Ok(())
    }),
    key(
        "unclean.leader.election.enable",
        ConfigType::Boolean,
        "unclean.leader.election.enable",
        |c, v| {
            c.unclean_leader_election_enable = parse::boolean(v)?;
            Ok(())
        },
    ),
];

/// The spec of a topic key, `None` for a key this broker does not know.
pub fn spec(name: &str) -> Option<&'static TopicKey> {
    KEYS.iter().find(|k| k.name == name)
}

/// The broker's default for a topic key, written as Kafka writes it (empty for an unknown
/// key).
pub fn broker_default(cfg: &BrokerConfig, key: &str) -> String {
    let Some(spec) = spec(key) else {
        return String::new();
    };
    if let Some(v) = spec.fixed_default {
        return v.to_owned();
    }
    spec.broker_key
        .and_then(broker_key)
        .and_then(|k| (k.get)(cfg))
        .unwrap_or_default()
}

/// Parses one broker-level default through the topic key's parser (`log.cleanup.policy` is
/// checked as `cleanup.policy`), for broker configs altered at runtime. Returns the defaults
/// with that one value applied.
pub fn parse_broker_default(
    broker_key: &str,
    topic_key: &str,
    value: &str,
) -> Result<TopicConfig, BrokerError> {
    let mut c = TopicConfig::defaults(&BrokerConfig::default());
    c.apply(topic_key, value)
        .map_err(|why| BrokerError::Config(format!("{broker_key}={value}: {why}")))?;
    Ok(c)
}
