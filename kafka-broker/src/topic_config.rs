//! One typed configuration per topic: the broker's defaults ([`BrokerConfig`]) with the
//! topic's overrides (the strings kept in `topics.meta`) applied on top, parsed and checked
//! once by [`TopicConfig::new`].
//!
//! Everything that reads a topic setting goes through this module: CreateTopics validates with
//! it, AlterConfigs and IncrementalAlterConfigs build the new overrides and parse them here
//! before anything is stored, DescribeConfigs lists values, sources, types and synonyms from
//! it, start-up builds every topic's config with it, the partition logs get their
//! [`LogConfig`] from [`TopicConfig::log_config`] and the Produce path its [`ProduceRules`]
//! from [`TopicConfigs::produce_rules`], a lookup of the topic's current `Arc<TopicConfig>`
//! (swapped whole on a change, never parsed on a request).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock};

use kafka_protocol::error_code::ErrorCode;

use crate::config::{BrokerConfig, TimestampType};
use crate::error::BrokerError;
use crate::log::LogConfig;

/// DescribeConfigs `config_source`: a topic override.
pub const SOURCE_DYNAMIC_TOPIC: i8 = 1;
/// DescribeConfigs `config_source`: set in the broker's configuration (file or `--set`).
pub const SOURCE_STATIC_BROKER: i8 = 4;
/// DescribeConfigs `config_source`: the built-in default.
pub const SOURCE_DEFAULT: i8 = 5;

/// Kafka's config types as DescribeConfigs v3+ reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i8)]
pub enum ConfigType {
    Boolean = 1,
    String = 2,
    Int = 3,
    Long = 5,
    Double = 6,
    List = 7,
    /// A class name (`replica.selector.class`).
    Class = 8,
}

/// One topic-level key: its type and the broker key its default comes from.
#[derive(Debug, Clone, Copy)]
pub struct KeySpec {
    pub name: &'static str,
    pub config_type: ConfigType,
    /// The broker setting that supplies the default (Kafka's synonym), if the key has one.
    pub broker_key: Option<&'static str>,
}

const fn key(
    name: &'static str,
    config_type: ConfigType,
    broker_key: Option<&'static str>,
) -> KeySpec {
    KeySpec {
        name,
        config_type,
        broker_key,
    }
}

/// Every topic key this broker knows, in the order DescribeConfigs lists them.
pub const KEYS: &[KeySpec] = &[
    key(
        "cleanup.policy",
        ConfigType::List,
        Some("log.cleanup.policy"),
    ),
    key(
        "compression.type",
        ConfigType::String,
        Some("compression.type"),
    ),
    key(
        "delete.retention.ms",
        ConfigType::Long,
        Some("log.cleaner.delete.retention.ms"),
    ),
    key(
        "flush.messages",
        ConfigType::Long,
        Some("log.flush.interval.messages"),
    ),
    key("flush.ms", ConfigType::Long, Some("log.flush.interval.ms")),
    key(
        "index.interval.bytes",
        ConfigType::Int,
        Some("log.index.interval.bytes"),
    ),
    key(
        "max.message.bytes",
        ConfigType::Int,
        Some("message.max.bytes"),
    ),
    key(
        "message.timestamp.after.max.ms",
        ConfigType::Long,
        Some("log.message.timestamp.after.max.ms"),
    ),
    key(
        "message.timestamp.before.max.ms",
        ConfigType::Long,
        Some("log.message.timestamp.before.max.ms"),
    ),
    key(
        "message.timestamp.difference.max.ms",
        ConfigType::Long,
        Some("log.message.timestamp.difference.max.ms"),
    ),
    key(
        "message.timestamp.type",
        ConfigType::String,
        Some("log.message.timestamp.type"),
    ),
    key(
        "max.compaction.lag.ms",
        ConfigType::Long,
        Some("log.cleaner.max.compaction.lag.ms"),
    ),
    key(
        "min.cleanable.dirty.ratio",
        ConfigType::Double,
        Some("log.cleaner.min.cleanable.ratio"),
    ),
    key(
        "min.compaction.lag.ms",
        ConfigType::Long,
        Some("log.cleaner.min.compaction.lag.ms"),
    ),
    key(
        "min.insync.replicas",
        ConfigType::Int,
        Some("min.insync.replicas"),
    ),
    key(
        "retention.bytes",
        ConfigType::Long,
        Some("log.retention.bytes"),
    ),
    key("retention.ms", ConfigType::Long, Some("log.retention.ms")),
    key("segment.bytes", ConfigType::Int, Some("log.segment.bytes")),
    key(
        "segment.index.bytes",
        ConfigType::Int,
        Some("log.index.size.max.bytes"),
    ),
    key("segment.ms", ConfigType::Long, Some("log.roll.ms")),
    key(
        "unclean.leader.election.enable",
        ConfigType::Boolean,
        Some("unclean.leader.election.enable"),
    ),
];

/// The spec of a topic key, `None` for a key this broker does not know.
pub fn spec(name: &str) -> Option<&'static KeySpec> {
    KEYS.iter().find(|k| k.name == name)
}

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

/// Why a value is refused; the callers name the key and value.
type Reason = &'static str;

/// A refused topic config value: INVALID_CONFIG naming the key and value.
fn refused(key: &str, value: &str, reason: Reason) -> BrokerError {
    BrokerError::kafka(
        ErrorCode::INVALID_CONFIG,
        format!("{key}={value}: {reason}"),
    )
}

fn long(value: &str, min: i64, reason: Reason) -> Result<i64, Reason> {
    match value.trim().parse::<i64>() {
        Ok(v) if v >= min => Ok(v),
        Ok(_) => Err(reason),
        Err(_) => Err("not a 64-bit integer"),
    }
}

fn int(value: &str, min: i32, reason: Reason) -> Result<i32, Reason> {
    match value.trim().parse::<i32>() {
        Ok(v) if v >= min => Ok(v),
        Ok(_) => Err(reason),
        Err(_) => Err("not a 32-bit integer"),
    }
}

/// `cleanup.policy`: (compact, delete).
fn cleanup_policy(value: &str) -> Result<(bool, bool), Reason> {
    let (mut compact, mut delete) = (false, false);
    for p in value.split(',').map(str::trim) {
        match p {
            "compact" => compact = true,
            "delete" => delete = true,
            _ => return Err("expected delete, compact or both"),
        }
    }
    Ok((compact, delete))
}

/// The items of a list value (`cleanup.policy`), trimmed, without empty ones.
fn list_items(value: &str) -> impl Iterator<Item = &str> {
    value.split(',').map(str::trim).filter(|s| !s.is_empty())
}

/// A flush interval: Kafka writes "never" as `Long.MAX_VALUE`.
fn interval(value: &str) -> Result<Option<i64>, Reason> {
    match long(value, 1, "must be at least 1")? {
        i64::MAX => Ok(None),
        v => Ok(Some(v)),
    }
}

impl TopicConfig {
    /// The broker's defaults: a topic without overrides.
    pub fn defaults(cfg: &BrokerConfig) -> Self {
        let (compact, delete) = cleanup_policy(&cfg.cleanup_policy).unwrap_or_else(|reason| {
            tracing::warn!(
                value = %cfg.cleanup_policy,
                reason,
                "invalid log.cleanup.policy; using delete"
            );
            (false, true)
        });
        Self {
            compact,
            delete,
            compression: Compression::Producer,
            delete_retention_ms: cfg.cleaner_delete_retention_ms,
            flush_messages: cfg.flush_interval_messages,
            flush_ms: cfg
                .flush_interval_ms
                .and_then(|v| i64::try_from(v).ok())
                .filter(|v| *v >= 1),
            index_interval_bytes: cfg.index_interval_bytes,
            max_message_bytes: cfg.message_max_bytes,
            message_timestamp_type: cfg.message_timestamp_type,
            message_timestamp_before_max_ms: cfg.message_timestamp_before_max_ms,
            message_timestamp_after_max_ms: cfg.message_timestamp_after_max_ms,
            max_compaction_lag_ms: cfg.cleaner_max_compaction_lag_ms,
            min_cleanable_dirty_ratio: cfg.cleaner_min_cleanable_ratio,
            min_compaction_lag_ms: cfg.cleaner_min_compaction_lag_ms,
            min_insync_replicas: cfg.min_insync_replicas,
            retention_bytes: cfg.retention_bytes,
            retention_ms: cfg.retention_ms,
            segment_bytes: cfg
                .segment_bytes
                .clamp(crate::log::MIN_SEGMENT_BYTES, crate::log::MAX_SEGMENT_BYTES),
            segment_index_bytes: 10 * 1024 * 1024,
            segment_ms: cfg.roll_ms,
            unclean_leader_election_enable: cfg.unclean_leader_election_enable,
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
            c.apply(k, v).map_err(|reason| refused(k, v, reason))?;
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
                    reason,
                    "ignoring an invalid stored topic config"
                ),
            }
        }
        c.overrides = kept;
        c
    }

    /// Parses one override into its field.
    fn apply(&mut self, key: &str, value: &str) -> Result<(), Reason> {
        let v = value.trim();
        match key {
            "cleanup.policy" => (self.compact, self.delete) = cleanup_policy(value)?,
            "compression.type" => {
                self.compression = match v {
                    "producer" => Compression::Producer,
                    "uncompressed" => Compression::Uncompressed,
                    "gzip" => Compression::Gzip,
                    "snappy" => Compression::Snappy,
                    "lz4" => Compression::Lz4,
                    "zstd" => Compression::Zstd,
                    _ => {
                        return Err("expected producer, uncompressed, gzip, snappy, lz4 or zstd");
                    }
                }
            }
            "delete.retention.ms" => {
                self.delete_retention_ms = long(value, 0, "must not be negative")?
            }
            "flush.messages" => self.flush_messages = interval(value)?.map(|n| n as u64),
            "flush.ms" => self.flush_ms = interval(value)?,
            "index.interval.bytes" => {
                self.index_interval_bytes = int(value, 0, "must not be negative")? as u32
            }
            "max.message.bytes" => {
                self.max_message_bytes = int(value, 0, "must not be negative")? as usize
            }
            "message.timestamp.after.max.ms" => {
                self.message_timestamp_after_max_ms = long(value, 0, "must not be negative")?
            }
            "message.timestamp.before.max.ms" => {
                self.message_timestamp_before_max_ms = long(value, 0, "must not be negative")?
            }
            // Deprecated since Kafka 3.6 for the two above; it sets both (they win when given).
            "message.timestamp.difference.max.ms" => {
                let n = long(value, 0, "must not be negative")?;
                self.message_timestamp_before_max_ms = n;
                self.message_timestamp_after_max_ms = n;
            }
            "message.timestamp.type" => {
                self.message_timestamp_type = match v {
                    "CreateTime" => TimestampType::CreateTime,
                    "LogAppendTime" => TimestampType::LogAppendTime,
                    _ => return Err("expected CreateTime or LogAppendTime"),
                }
            }
            "max.compaction.lag.ms" => {
                self.max_compaction_lag_ms = long(value, 1, "must be at least 1")?
            }
            "min.cleanable.dirty.ratio" => {
                self.min_cleanable_dirty_ratio = v
                    .parse::<f64>()
                    .ok()
                    .filter(|r| (0.0..=1.0).contains(r))
                    .ok_or("expected a number between 0 and 1")?
            }
            "min.compaction.lag.ms" => {
                self.min_compaction_lag_ms = long(value, 0, "must not be negative")?
            }
            "min.insync.replicas" => {
                self.min_insync_replicas = int(value, 1, "must be at least 1")?
            }
            "retention.bytes" => {
                self.retention_bytes = long(value, -1, "must be -1 (no limit) or more")?
            }
            "retention.ms" => self.retention_ms = long(value, -1, "must be -1 (forever) or more")?,
            "segment.bytes" => {
                self.segment_bytes = int(value, 14, "must be at least 14")? as u64;
            }
            "segment.index.bytes" => {
                self.segment_index_bytes = int(value, 4, "must be at least 4")?
            }
            "segment.ms" => self.segment_ms = long(value, 1, "must be at least 1")?,
            "unclean.leader.election.enable" => {
                self.unclean_leader_election_enable = match v {
                    "true" => true,
                    "false" => false,
                    _ => return Err("expected true or false"),
                }
            }
            _ => return Err("unknown topic config"),
        }
        Ok(())
    }

    /// The overrides these values came from.
    pub fn overrides(&self) -> &BTreeMap<String, String> {
        &self.overrides
    }

    /// The settings of the topic's partition logs.
    pub fn log_config(&self) -> LogConfig {
        // A compacted topic without `delete` in its policy is not trimmed by time or size:
        // compaction bounds it.
        let (retention_ms, retention_bytes) = if self.delete {
            (self.retention_ms, self.retention_bytes)
        } else {
            (-1, -1)
        };
        LogConfig {
            segment_bytes: self.segment_bytes,
            segment_ms: self.segment_ms,
            index_interval_bytes: u64::from(self.index_interval_bytes),
            retention_ms,
            retention_bytes,
            flush_interval_messages: self.flush_messages,
            flush_interval_ms: self.flush_ms,
            message_timestamp_type: self.message_timestamp_type,
            compact: self.compact,
            delete: self.delete,
            delete_retention_ms: self.delete_retention_ms,
            min_cleanable_dirty_ratio: self.min_cleanable_dirty_ratio,
            min_compaction_lag_ms: self.min_compaction_lag_ms,
            max_compaction_lag_ms: self.max_compaction_lag_ms,
        }
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

    /// Every key with its value, source, type and synonyms, in Kafka's order of precedence:
    /// the topic override (DYNAMIC_TOPIC_CONFIG), the broker's setting when its configuration
    /// changed it (STATIC_BROKER_CONFIG), the built-in default (DEFAULT_CONFIG). For
    /// DescribeConfigs and CreateTopics v5+.
    pub fn describe(&self, cfg: &BrokerConfig) -> Vec<DescribedConfig> {
        let built_in = BrokerConfig::default();
        KEYS.iter()
            .map(|k| {
                let broker_key = k.broker_key.unwrap_or(k.name);
                let configured = broker_default(cfg, k.name);
                let default = broker_default(&built_in, k.name);
                let mut synonyms = Vec::new();
                if let Some(v) = self.overrides.get(k.name) {
                    synonyms.push(Synonym {
                        name: k.name,
                        value: v.clone(),
                        source: SOURCE_DYNAMIC_TOPIC,
                    });
                }
                if configured != default {
                    synonyms.push(Synonym {
                        name: broker_key,
                        value: configured,
                        source: SOURCE_STATIC_BROKER,
                    });
                }
                synonyms.push(Synonym {
                    name: broker_key,
                    value: default,
                    source: SOURCE_DEFAULT,
                });
                // The first synonym is the one in force.
                let (value, source) = synonyms
                    .first()
                    .map(|s| (s.value.clone(), s.source))
                    .unwrap_or_default();
                DescribedConfig {
                    name: k.name,
                    value,
                    source,
                    config_type: k.config_type,
                    synonyms,
                }
            })
            .collect()
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

/// One value of a broker or topic setting that DescribeConfigs lists after a config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Synonym {
    pub name: &'static str,
    pub value: String,
    pub source: i8,
}

/// One topic config as DescribeConfigs reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribedConfig {
    pub name: &'static str,
    pub value: String,
    pub source: i8,
    pub config_type: ConfigType,
    pub synonyms: Vec<Synonym>,
}

/// The broker's default for a topic key, written as Kafka writes it.
fn broker_default(cfg: &BrokerConfig, key: &str) -> String {
    let never = |v: Option<u64>| v.map_or_else(|| i64::MAX.to_string(), |n| n.to_string());
    match key {
        "cleanup.policy" => cfg.cleanup_policy.clone(),
        "compression.type" => "producer".into(),
        "delete.retention.ms" => cfg.cleaner_delete_retention_ms.to_string(),
        "flush.messages" => never(cfg.flush_interval_messages),
        "flush.ms" => never(cfg.flush_interval_ms),
        "index.interval.bytes" => cfg.index_interval_bytes.to_string(),
        "max.message.bytes" => cfg.message_max_bytes.to_string(),
        "message.timestamp.after.max.ms" => cfg.message_timestamp_after_max_ms.to_string(),
        "message.timestamp.before.max.ms" => cfg.message_timestamp_before_max_ms.to_string(),
        "message.timestamp.difference.max.ms" => cfg
            .message_timestamp_before_max_ms
            .max(cfg.message_timestamp_after_max_ms)
            .to_string(),
        "message.timestamp.type" => cfg.message_timestamp_type.name().into(),
        "max.compaction.lag.ms" => cfg.cleaner_max_compaction_lag_ms.to_string(),
        "min.cleanable.dirty.ratio" => cfg.cleaner_min_cleanable_ratio.to_string(),
        "min.compaction.lag.ms" => cfg.cleaner_min_compaction_lag_ms.to_string(),
        "min.insync.replicas" => cfg.min_insync_replicas.to_string(),
        "retention.bytes" => cfg.retention_bytes.to_string(),
        "retention.ms" => cfg.retention_ms.to_string(),
        "segment.bytes" => cfg.segment_bytes.to_string(),
        "segment.index.bytes" => "10485760".into(),
        "segment.ms" => cfg.roll_ms.to_string(),
        "unclean.leader.election.enable" => cfg.unclean_leader_election_enable.to_string(),
        _ => String::new(),
    }
}

/// Parses one broker-level default through the topic key's parser (`log.cleanup.policy` is
/// checked as `cleanup.policy`), for [`BrokerConfig::apply`]. Returns the defaults with that
/// one value applied.
pub fn parse_broker_default(
    broker_key: &str,
    topic_key: &str,
    value: &str,
) -> Result<TopicConfig, BrokerError> {
    let mut c = TopicConfig::defaults(&BrokerConfig::default());
    c.apply(topic_key, value)
        .map_err(|reason| BrokerError::Config(format!("{broker_key}={value}: {reason}")))?;
    Ok(c)
}

/// One IncrementalAlterConfigs operation on a topic's overrides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlterOp<'a> {
    Set(&'a str, &'a str),
    Delete(&'a str),
    /// Adds list items that are not there yet (list keys only).
    Append(&'a str, &'a str),
    /// Removes list items (list keys only).
    Subtract(&'a str, &'a str),
}

impl<'a> AlterOp<'a> {
    /// The operations of one IncrementalAlterConfigs resource (0 SET, 1 DELETE, 2 APPEND,
    /// 3 SUBTRACT), checked as Kafka checks them: a key named twice, or an unknown
    /// operation, is INVALID_REQUEST.
    pub fn from_request(
        configs: &'a [kafka_protocol::messages::incremental_alter_configs_request::AlterableConfig],
    ) -> Result<Vec<Self>, BrokerError> {
        no_duplicates(configs.iter().map(|e| e.name.as_str()))?;
        configs
            .iter()
            .map(|e| {
                let name = e.name.as_str();
                let value = e.value.as_ref().map_or("", |v| v.as_str());
                Ok(match e.config_operation {
                    0 => Self::Set(name, value),
                    1 => Self::Delete(name),
                    2 => Self::Append(name, value),
                    3 => Self::Subtract(name, value),
                    other => {
                        return Err(BrokerError::kafka(
                            ErrorCode::INVALID_REQUEST,
                            format!("unknown config operation {other} for {name}"),
                        ));
                    }
                })
            })
            .collect()
    }
}

/// Kafka refuses a resource that names a key twice (INVALID_REQUEST).
pub fn no_duplicates<'a>(names: impl Iterator<Item = &'a str>) -> Result<(), BrokerError> {
    let mut seen = std::collections::BTreeSet::new();
    for n in names {
        if !seen.insert(n) {
            return Err(BrokerError::kafka(
                ErrorCode::INVALID_REQUEST,
                format!("config {n} is given more than once"),
            ));
        }
    }
    Ok(())
}

impl TopicConfig {
    /// The overrides after `ops`, applied in order (APPEND and SUBTRACT start from the
    /// current value, the default if not overridden). Only the key and operation are checked
    /// here; [`TopicConfig::new`] checks the values.
    pub fn altered(
        &self,
        cfg: &BrokerConfig,
        ops: &[AlterOp<'_>],
    ) -> Result<BTreeMap<String, String>, BrokerError> {
        let mut out = self.overrides.clone();
        for op in ops {
            match *op {
                AlterOp::Set(k, v) => {
                    out.insert(k.to_owned(), v.to_owned());
                }
                AlterOp::Delete(k) => {
                    out.remove(k);
                }
                AlterOp::Append(k, v) | AlterOp::Subtract(k, v) => {
                    let what = if matches!(op, AlterOp::Append(..)) {
                        "APPEND"
                    } else {
                        "SUBTRACT"
                    };
                    match spec(k) {
                        Some(s) if s.config_type == ConfigType::List => {}
                        Some(_) => {
                            return Err(BrokerError::kafka(
                                ErrorCode::INVALID_CONFIG,
                                format!("{what} is only allowed on list configs, not on {k}"),
                            ));
                        }
                        None => {
                            return Err(BrokerError::kafka(
                                ErrorCode::INVALID_CONFIG,
                                format!("unknown topic config {k}"),
                            ));
                        }
                    }
                    let current = out
                        .get(k)
                        .cloned()
                        .unwrap_or_else(|| broker_default(cfg, k));
                    let mut items: Vec<&str> = list_items(&current).collect();
                    for item in list_items(v) {
                        if matches!(op, AlterOp::Append(..)) {
                            if !items.contains(&item) {
                                items.push(item);
                            }
                        } else {
                            items.retain(|i| *i != item);
                        }
                    }
                    let joined = items.join(",");
                    out.insert(k.to_owned(), joined);
                }
            }
        }
        Ok(out)
    }
}

/// Every topic's current config, each swapped whole when the topic's overrides change.
#[derive(Debug)]
pub struct TopicConfigs {
    defaults: Arc<TopicConfig>,
    by_topic: RwLock<HashMap<String, Arc<TopicConfig>>>,
}

impl TopicConfigs {
    /// `defaults` applies to topics not (or not yet) registered.
    pub fn new(defaults: TopicConfig) -> Self {
        Self {
            defaults: Arc::new(defaults),
            by_topic: RwLock::new(HashMap::new()),
        }
    }

    /// A topic's config, `None` if the topic is unknown.
    pub fn get(&self, topic: &str) -> Option<Arc<TopicConfig>> {
        crate::sync::read(&self.by_topic).get(topic).cloned()
    }

    /// A topic's config, the broker's defaults if the topic is unknown.
    pub fn get_or_default(&self, topic: &str) -> Arc<TopicConfig> {
        self.get(topic)
            .unwrap_or_else(|| Arc::clone(&self.defaults))
    }

    /// A topic's produce rules (the defaults' if the topic is unknown): a read lock and a
    /// copy of three precomputed values, nothing parsed.
    pub fn produce_rules(&self, topic: &str) -> ProduceRules {
        let map = crate::sync::read(&self.by_topic);
        map.get(topic).unwrap_or(&self.defaults).produce_rules()
    }

    /// Installs (or replaces) a topic's config.
    pub fn insert(&self, topic: &str, config: Arc<TopicConfig>) {
        crate::sync::write(&self.by_topic).insert(topic.to_owned(), config);
    }

    pub fn remove(&self, topic: &str) {
        crate::sync::write(&self.by_topic).remove(topic);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn overrides(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn parse(pairs: &[(&str, &str)]) -> Result<TopicConfig, BrokerError> {
        TopicConfig::new(&BrokerConfig::default(), &overrides(pairs))
    }

    /// A valid non-default value for every key, and what it must set.
    #[test]
    fn every_key_parses_into_its_field() {
        let c = parse(&[
            ("cleanup.policy", "compact, delete"),
            ("compression.type", "zstd"),
            ("delete.retention.ms", "5"),
            ("flush.messages", "3"),
            ("flush.ms", "7"),
            ("index.interval.bytes", "100"),
            ("max.message.bytes", "2048"),
            ("message.timestamp.after.max.ms", "11"),
            ("message.timestamp.before.max.ms", "12"),
            ("message.timestamp.type", "LogAppendTime"),
            ("max.compaction.lag.ms", "13"),
            ("min.cleanable.dirty.ratio", "0.25"),
            ("min.compaction.lag.ms", "14"),
            ("min.insync.replicas", "2"),
            ("retention.bytes", "15"),
            ("retention.ms", "16"),
            ("segment.bytes", "4096"),
            ("segment.index.bytes", "8192"),
            ("segment.ms", "17"),
            ("unclean.leader.election.enable", "true"),
        ])
        .unwrap();
        assert!(c.compact && c.delete);
        assert_eq!(c.compression, Compression::Zstd);
        assert_eq!(c.delete_retention_ms, 5);
        assert_eq!((c.flush_messages, c.flush_ms), (Some(3), Some(7)));
        assert_eq!(c.index_interval_bytes, 100);
        assert_eq!(c.max_message_bytes, 2048);
        assert_eq!(
            (
                c.message_timestamp_before_max_ms,
                c.message_timestamp_after_max_ms
            ),
            (12, 11)
        );
        assert_eq!(c.message_timestamp_type, TimestampType::LogAppendTime);
        assert_eq!((c.min_compaction_lag_ms, c.max_compaction_lag_ms), (14, 13));
        assert_eq!(c.min_cleanable_dirty_ratio, 0.25);
        assert_eq!(c.min_insync_replicas, 2);
        assert_eq!((c.retention_bytes, c.retention_ms), (15, 16));
        assert_eq!((c.segment_bytes, c.segment_index_bytes), (4096, 8192));
        assert_eq!(c.segment_ms, 17);
        assert!(c.unclean_leader_election_enable);
        // Every key of the table was exercised except the deprecated difference key (below).
        assert_eq!(c.overrides().len(), KEYS.len() - 1);

        let l = c.log_config();
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
        assert_eq!(
            c.produce_rules(),
            ProduceRules {
                max_message_bytes: 2048,
                timestamp_window: None,
                compacted: true,
                min_insync_replicas: 2,
            }
        );
    }

    #[test]
    fn invalid_values_are_refused_naming_the_key() {
        let cases: &[(&str, &str)] = &[
            ("cleanup.policy", "keep"),
            ("cleanup.policy", ""),
            ("cleanup.policy", "compact,,delete"),
            ("compression.type", "brotli"),
            ("delete.retention.ms", "-1"),
            ("flush.messages", "0"),
            ("flush.ms", "0"),
            ("index.interval.bytes", "-1"),
            ("index.interval.bytes", "4294967296"),
            ("max.message.bytes", "2147483648"),
            ("max.message.bytes", "big"),
            ("message.timestamp.after.max.ms", "-5"),
            ("message.timestamp.before.max.ms", "1.5"),
            ("message.timestamp.difference.max.ms", "-1"),
            ("message.timestamp.type", "Now"),
            ("max.compaction.lag.ms", "0"),
            ("min.cleanable.dirty.ratio", "1.5"),
            ("min.cleanable.dirty.ratio", "NaN"),
            ("min.compaction.lag.ms", "-1"),
            ("min.insync.replicas", "0"),
            ("retention.bytes", "-2"),
            ("retention.ms", "-2"),
            ("retention.ms", ""),
            ("segment.bytes", "13"),
            ("segment.bytes", "2147483648"),
            ("segment.index.bytes", "3"),
            ("segment.ms", "0"),
            ("unclean.leader.election.enable", "yes"),
            ("no.such.key", "1"),
        ];
        for (k, v) in cases {
            let e = parse(&[("retention.ms", "5"), (k, v)]).unwrap_err();
            assert_eq!(e.error_code(), ErrorCode::INVALID_CONFIG, "{k}={v}");
            assert!(e.to_string().contains(&format!("{k}={v}")), "{k}={v}: {e}");
        }
        // Every key of the table has at least one refused value above.
        for k in KEYS {
            assert!(cases.iter().any(|(c, _)| c == &k.name), "{}", k.name);
        }
        // Kafka's "never" for flush intervals, -1 for retention.
        let c = parse(&[
            ("flush.messages", "9223372036854775807"),
            ("flush.ms", "9223372036854775807"),
            ("retention.ms", "-1"),
            ("retention.bytes", "-1"),
        ])
        .unwrap();
        assert_eq!((c.flush_messages, c.flush_ms), (None, None));
        assert_eq!((c.retention_ms, c.retention_bytes), (-1, -1));
    }

    #[test]
    fn defaults_come_from_the_broker_and_overrides_win() {
        let mut cfg = BrokerConfig::default();
        cfg.apply("log.retention.ms", "1000").unwrap();
        cfg.apply("log.segment.bytes", "100000").unwrap();
        cfg.apply("message.max.bytes", "5000").unwrap();
        cfg.apply("log.cleanup.policy", "compact").unwrap();
        cfg.apply("log.message.timestamp.before.max.ms", "60000")
            .unwrap();
        let d = TopicConfig::defaults(&cfg);
        assert_eq!(
            (d.retention_ms, d.segment_bytes, d.max_message_bytes),
            (1000, 100000, 5000)
        );
        assert!(d.compact && !d.delete);
        // Compacted only: the log is not trimmed by time or size.
        assert_eq!(
            (d.log_config().retention_ms, d.log_config().retention_bytes),
            (-1, -1)
        );
        assert_eq!(d.produce_rules().timestamp_window, Some((60000, i64::MAX)));
        let c = TopicConfig::new(
            &cfg,
            &overrides(&[("retention.ms", "7"), ("cleanup.policy", "delete")]),
        )
        .unwrap();
        assert_eq!((c.retention_ms, c.segment_bytes), (7, 100000));
        assert_eq!(c.log_config().retention_ms, 7);
        assert!(!c.produce_rules().compacted);
    }

    #[test]
    fn the_deprecated_timestamp_difference_loses_to_the_new_keys() {
        let c = parse(&[
            ("message.timestamp.difference.max.ms", "100"),
            ("message.timestamp.after.max.ms", "5"),
        ])
        .unwrap();
        assert_eq!(c.produce_rules().timestamp_window, Some((100, 5)));
    }

    #[test]
    fn describe_lists_sources_types_and_synonyms() {
        let mut cfg = BrokerConfig::default();
        cfg.apply("log.retention.ms", "1000").unwrap();
        let c = TopicConfig::new(&cfg, &overrides(&[("segment.bytes", "4096")])).unwrap();
        let d = c.describe(&cfg);
        assert_eq!(d.len(), KEYS.len());
        let get = |n: &str| d.iter().find(|e| e.name == n).unwrap();
        let seg = get("segment.bytes");
        assert_eq!(
            (seg.value.as_str(), seg.source),
            ("4096", SOURCE_DYNAMIC_TOPIC)
        );
        assert_eq!(seg.config_type, ConfigType::Int);
        let names: Vec<(&str, &str, i8)> = seg
            .synonyms
            .iter()
            .map(|s| (s.name, s.value.as_str(), s.source))
            .collect();
        assert_eq!(
            names,
            [
                ("segment.bytes", "4096", SOURCE_DYNAMIC_TOPIC),
                ("log.segment.bytes", "1073741824", SOURCE_DEFAULT)
            ]
        );
        // Set in the broker's configuration: STATIC_BROKER_CONFIG, then the built-in default.
        let ret = get("retention.ms");
        assert_eq!(
            (ret.value.as_str(), ret.source),
            ("1000", SOURCE_STATIC_BROKER)
        );
        let names: Vec<(&str, &str, i8)> = ret
            .synonyms
            .iter()
            .map(|s| (s.name, s.value.as_str(), s.source))
            .collect();
        assert_eq!(
            names,
            [
                ("log.retention.ms", "1000", SOURCE_STATIC_BROKER),
                ("log.retention.ms", "604800000", SOURCE_DEFAULT)
            ]
        );
        let seg_ms = get("segment.ms");
        assert_eq!(
            (seg_ms.value.as_str(), seg_ms.source),
            ("604800000", SOURCE_DEFAULT)
        );
        assert_eq!(seg_ms.synonyms.len(), 1);
        assert_eq!(seg_ms.synonyms[0].name, "log.roll.ms");
        assert_eq!(get("cleanup.policy").config_type, ConfigType::List);
        assert_eq!(
            get("min.cleanable.dirty.ratio").config_type,
            ConfigType::Double
        );
        // The default of every key parses with the key's own parser.
        for e in &d {
            parse(&[(e.name, e.value.as_str())]).unwrap();
        }
    }

    #[test]
    fn incremental_operations() {
        let cfg = BrokerConfig::default();
        let c = TopicConfig::new(&cfg, &overrides(&[("retention.ms", "5")])).unwrap();
        let out = c
            .altered(
                &cfg,
                &[
                    AlterOp::Append("cleanup.policy", "compact"),
                    AlterOp::Set("segment.bytes", "1000"),
                    AlterOp::Delete("retention.ms"),
                ],
            )
            .unwrap();
        assert_eq!(
            out,
            overrides(&[
                ("cleanup.policy", "delete,compact"),
                ("segment.bytes", "1000")
            ])
        );
        let c = TopicConfig::new(&cfg, &out).unwrap();
        let out = c
            .altered(
                &cfg,
                &[
                    AlterOp::Subtract("cleanup.policy", "delete"),
                    AlterOp::Append("cleanup.policy", "compact"),
                ],
            )
            .unwrap();
        assert_eq!(out["cleanup.policy"], "compact");
        for bad in [
            AlterOp::Append("retention.ms", "5"),
            AlterOp::Subtract("no.such.key", "x"),
        ] {
            let e = c.altered(&cfg, &[bad]).unwrap_err();
            assert_eq!(e.error_code(), ErrorCode::INVALID_CONFIG, "{bad:?}");
        }
        // Subtracting every item leaves an empty policy, which the parser refuses.
        let empty = c
            .altered(
                &cfg,
                &[AlterOp::Subtract("cleanup.policy", "delete,compact")],
            )
            .unwrap();
        assert!(TopicConfig::new(&cfg, &empty).is_err());
    }

    #[test]
    fn stored_invalid_overrides_are_skipped_at_start() {
        let c = TopicConfig::lenient(
            &BrokerConfig::default(),
            "t",
            &overrides(&[("retention.ms", "x"), ("segment.bytes", "4096")]),
        );
        assert_eq!(c.segment_bytes, 4096);
        assert_eq!(c.retention_ms, BrokerConfig::default().retention_ms);
        assert_eq!(c.overrides(), &overrides(&[("segment.bytes", "4096")]));
    }

    #[test]
    fn configs_are_swapped_whole() {
        let cfg = BrokerConfig::default();
        let all = TopicConfigs::new(TopicConfig::defaults(&cfg));
        assert_eq!(
            all.produce_rules("t").max_message_bytes,
            cfg.message_max_bytes
        );
        let c = TopicConfig::new(&cfg, &overrides(&[("max.message.bytes", "10")])).unwrap();
        all.insert("t", Arc::new(c));
        assert_eq!(all.produce_rules("t").max_message_bytes, 10);
        assert_eq!(all.get("t").unwrap().overrides().len(), 1);
        all.remove("t");
        assert!(all.get("t").is_none());
        assert_eq!(
            all.get_or_default("t").max_message_bytes,
            cfg.message_max_bytes
        );
    }
}
