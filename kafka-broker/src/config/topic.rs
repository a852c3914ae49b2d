//! One typed configuration per topic: the broker's defaults ([`BrokerConfig`]) with the
//! topic's overrides (the strings kept in `topics.meta`) applied on top, parsed and checked
//! once by [`TopicConfig::new`].
//!
//! Everything that reads a topic setting goes through this module: CreateTopics validates with
//! it, AlterConfigs and IncrementalAlterConfigs build the new overrides ([`alter`]) and parse
//! them here before anything is stored, DescribeConfigs lists values, sources, types and
//! synonyms from it ([`describe`]), start-up builds every topic's config with it, and the
//! Produce path reads its [`ProduceRules`]. The partition logs get their settings from it in
//! `crate::topic_config`, which also keeps every topic's current config.
//!
//! | file | what |
//! |---|---|
//! | `topic/keys.rs` | the topic key table: name, type, parser, broker default |
//! | `topic/alter.rs` | IncrementalAlterConfigs operations on a topic's overrides |
//! | `topic/describe.rs` | a topic's keys as DescribeConfigs lists them |

use std::collections::BTreeMap;

use kafka_protocol::error_code::ErrorCode;

use super::parse::Why;
use super::{BrokerConfig, MAX_SEGMENT_BYTES, MIN_SEGMENT_BYTES, TimestampType};
use crate::error::BrokerError;

pub mod alter;
pub mod describe;
pub mod keys;

#[cfg(test)]
mod tests;

pub use alter::{AlterOp, no_duplicates};
pub use keys::{KEYS, KeySpec, TopicKey, parse_broker_default, spec};

/// `compression.type` of a topic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    /// Keep what the producer sent.
    Producer,
    Uncompressed,
    Gzip,
    Snappy,
    Lz4,
    Zstd,
}

/// A topic's settings that a Produce request is checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProduceRules {
    /// `max.message.bytes`: the largest record batch.
    pub max_message_bytes: usize,
    /// (`message.timestamp.before.max.ms`, `message.timestamp.after.max.ms`), or `None`
    /// when the topic stamps log-append time.
    pub timestamp_window: Option<(i64, i64)>,
    /// `cleanup.policy` includes `compact`: records must have keys.
    pub compacted: bool,
    /// `min.insync.replicas`: the ISR an acks=all produce needs.
    pub min_insync_replicas: usize,
}

/// Every topic-level setting, typed. Built only by [`TopicConfig::defaults`] and
/// [`TopicConfig::new`] (or [`TopicConfig::lenient`]), so its values are always valid.
#[derive(Debug, Clone, PartialEq)]
pub struct TopicConfig {
    /// `cleanup.policy` holds `compact`.
    pub compact: bool,
    /// `cleanup.policy` holds `delete`.
    pub delete: bool,
    pub compression: Compression,
    pub delete_retention_ms: i64,
    /// `flush.messages`; `None` is Kafka's `Long.MAX_VALUE` (never forced).
    pub flush_messages: Option<u64>,
    /// `flush.ms`; `None` is Kafka's `Long.MAX_VALUE`.
    pub flush_ms: Option<i64>,
    pub index_interval_bytes: u32,
    pub max_message_bytes: usize,
    pub message_timestamp_type: TimestampType,
    pub message_timestamp_before_max_ms: i64,
    pub message_timestamp_after_max_ms: i64,
    pub max_compaction_lag_ms: i64,
    pub min_cleanable_dirty_ratio: f64,
    pub min_compaction_lag_ms: i64,
    /// Stored and described; a single node has no replicas to count.
    pub min_insync_replicas: i32,
    /// -1: no size limit.
    pub retention_bytes: i64,
    /// -1: kept forever.
    pub retention_ms: i64,
    pub segment_bytes: u64,
    /// Stored and described; index files are sized by the log.
    pub segment_index_bytes: i32,
    pub segment_ms: i64,
    /// Stored and described; a single node never elects another leader.
    pub unclean_leader_election_enable: bool,
    /// The overrides these values came from, as the client wrote them.
    overrides: BTreeMap<String, String>,
}

/// A refused topic config value: INVALID_CONFIG naming the key and value.
fn refused(key: &str, value: &str, why: Why) -> BrokerError {
    BrokerError::kafka(ErrorCode::INVALID_CONFIG, format!("{key}={value}: {why}"))
}

impl TopicConfig {
    /// The broker's defaults: a topic without overrides.
    pub fn defaults(cfg: &BrokerConfig) -> Self {
        let (compact, delete) = super::parse::cleanup_policy(&cfg.log.cleanup_policy)
            .unwrap_or_else(|reason| {
                tracing::warn!(
                    value = %cfg.log.cleanup_policy,
                    %reason,
                    "invalid log.cleanup.policy; using delete"
                );
                (false, true)
            });
        Self {
            compact,
            delete,
            compression: Compression::Producer,
            delete_retention_ms: cfg.log.cleaner_delete_retention_ms,
            flush_messages: cfg.log.flush_interval_messages,
            flush_ms: cfg
                .log
                .flush_interval_ms
                .and_then(|v| i64::try_from(v).ok())
                .filter(|v| *v >= 1),
            index_interval_bytes: cfg.log.index_interval_bytes,
            max_message_bytes: cfg.log.message_max_bytes,
            message_timestamp_type: cfg.log.message_timestamp_type,
            message_timestamp_before_max_ms: cfg.log.message_timestamp_before_max_ms,
            message_timestamp_after_max_ms: cfg.log.message_timestamp_after_max_ms,
            max_compaction_lag_ms: cfg.log.cleaner_max_compaction_lag_ms,
            min_cleanable_dirty_ratio: cfg.log.cleaner_min_cleanable_ratio,
            min_compaction_lag_ms: cfg.log.cleaner_min_compaction_lag_ms,
            min_insync_replicas: cfg.log.min_insync_replicas,
            retention_bytes: cfg.log.retention_bytes,
            retention_ms: cfg.log.retention_ms,
            segment_bytes: cfg
                .log
                .segment_bytes
                .clamp(MIN_SEGMENT_BYTES, MAX_SEGMENT_BYTES),
            segment_index_bytes: keys::SEGMENT_INDEX_BYTES,
            segment_ms: cfg.log.roll_ms,
            unclean_leader_election_enable: cfg.log.unclean_leader_election_enable,
            overrides: BTreeMap::new(),
        }
    }

    /// The broker's defaults with a topic's overrides. Any unknown key or invalid value is
    /// refused (INVALID_CONFIG, naming the key); nothing is half applied.
    pub fn new(
        cfg: &BrokerConfig,
        overrides: &BTreeMap<String, String>,
    ) -> Result<Self, BrokerError> {
        let mut c = Self::defaults(cfg);
        for (k, v) in ordered(overrides) {
            c.apply(k, v).map_err(|why| refused(k, v, why))?;
        }
        c.overrides = overrides.clone();
        Ok(c)
    }

    /// [`Self::new`] for overrides already stored (start-up): an override that no longer
    /// parses is logged and left out instead of keeping the topic from loading.
    pub fn lenient(cfg: &BrokerConfig, topic: &str, overrides: &BTreeMap<String, String>) -> Self {
        let mut c = Self::defaults(cfg);
        let mut kept = BTreeMap::new();
        for (k, v) in ordered(overrides) {
            match c.apply(k, v) {
                Ok(()) => {
                    kept.insert(k.to_owned(), v.to_owned());
                }
                Err(reason) => tracing::warn!(
                    topic,
                    key = k,
                    value = v,
                    %reason,
                    "ignoring an invalid stored topic config"
                ),
            }
        }
        c.overrides = kept;
        c
    }

    /// Parses one override into its field, with the key's parser from the table.
    fn apply(&mut self, key: &str, value: &str) -> Result<(), Why> {
        let spec = spec(key).ok_or("unknown topic config")?;
        (spec.set)(self, value)
    }

    /// The overrides these values came from.
    pub fn overrides(&self) -> &BTreeMap<String, String> {
        &self.overrides
    }

    /// What a Produce request to the topic is checked against.
    pub fn produce_rules(&self) -> ProduceRules {
        ProduceRules {
            max_message_bytes: self.max_message_bytes,
            timestamp_window: (self.message_timestamp_type == TimestampType::CreateTime).then_some(
                (
                    self.message_timestamp_before_max_ms,
                    self.message_timestamp_after_max_ms,
                ),
            ),
            compacted: self.compact,
            min_insync_replicas: usize::try_from(self.min_insync_replicas).unwrap_or(1),
        }
    }
}

/// Applies overrides in an order where the deprecated `message.timestamp.difference.max.ms`
/// comes first, so that `message.timestamp.before/after.max.ms` win over it.
fn ordered(overrides: &BTreeMap<String, String>) -> impl Iterator<Item = (&str, &str)> {
    const DIFFERENCE: &str = "message.timestamp.difference.max.ms";
    let first = overrides.get_key_value(DIFFERENCE);
    first
        .into_iter()
        .chain(overrides.iter().filter(|(k, _)| k.as_str() != DIFFERENCE))
        .map(|(k, v)| (k.as_str(), v.as_str()))
}
