//! The topic registry: names, ids, partition counts and per-topic configs, persisted in the
//! data directory (`topics.meta`, rewritten atomically on every change).
//!
//! File format, one record per line: `topic <name> <id as 32 hex digits> <partitions>` and
//! `config <name> <key>=<value>`. Topic names cannot contain spaces, so this is unambiguous.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kafka_protocol::Uuid;
use kafka_protocol::error_code::ErrorCode;

use crate::config::{BrokerConfig, TimestampType};
use crate::error::BrokerError;

/// One topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicMeta {
    pub name: String,
    pub id: Uuid,
    pub partitions: i32,
    /// Topic-level overrides of broker defaults (Kafka topic config names).
    pub configs: BTreeMap<String, String>,
}

impl TopicMeta {
    /// Whether the topic is internal (`__consumer_offsets`, `__transaction_state`).
    pub fn is_internal(&self) -> bool {
        self.name == "__consumer_offsets" || self.name == "__transaction_state"
    }
}

/// Topic config keys this broker knows, with the broker setting each defaults to.
pub fn topic_default(cfg: &BrokerConfig, key: &str) -> Option<String> {
    Some(match key {
        "cleanup.policy" => cfg.cleanup_policy.clone(),
        "retention.ms" => cfg.retention_ms.to_string(),
        "retention.bytes" => cfg.retention_bytes.to_string(),
        "segment.bytes" => cfg.segment_bytes.to_string(),
        "segment.ms" => cfg.roll_ms.to_string(),
        "segment.index.bytes" => "10485760".into(),
        "index.interval.bytes" => cfg.index_interval_bytes.to_string(),
        "max.message.bytes" => cfg.message_max_bytes.to_string(),
        "message.timestamp.type" => match cfg.message_timestamp_type {
            TimestampType::CreateTime => "CreateTime".into(),
            TimestampType::LogAppendTime => "LogAppendTime".into(),
        },
        "message.timestamp.before.max.ms" => cfg.message_timestamp_before_max_ms.to_string(),
        "message.timestamp.after.max.ms" => cfg.message_timestamp_after_max_ms.to_string(),
        "message.timestamp.difference.max.ms" => cfg
            .message_timestamp_before_max_ms
            .max(cfg.message_timestamp_after_max_ms)
            .to_string(),
        "flush.messages" => cfg
            .flush_interval_messages
            .map_or_else(|| i64::MAX.to_string(), |n| n.to_string()),
        "flush.ms" => cfg
            .flush_interval_ms
            .map_or_else(|| i64::MAX.to_string(), |n| n.to_string()),
        "min.insync.replicas" => "1".into(),
        "compression.type" => "producer".into(),
        "delete.retention.ms" => cfg.cleaner_delete_retention_ms.to_string(),
        "min.compaction.lag.ms" => cfg.cleaner_min_compaction_lag_ms.to_string(),
        "max.compaction.lag.ms" => cfg.cleaner_max_compaction_lag_ms.to_string(),
        "min.cleanable.dirty.ratio" => cfg.cleaner_min_cleanable_ratio.to_string(),
        "unclean.leader.election.enable" => "false".into(),
        _ => return None,
    })
}

/// Every topic config key, in a stable order.
pub const TOPIC_CONFIG_KEYS: &[&str] = &[
    "cleanup.policy",
    "compression.type",
    "delete.retention.ms",
    "flush.messages",
    "flush.ms",
    "index.interval.bytes",
    "max.message.bytes",
    "message.timestamp.after.max.ms",
    "message.timestamp.before.max.ms",
    "message.timestamp.difference.max.ms",
    "message.timestamp.type",
    "max.compaction.lag.ms",
    "min.cleanable.dirty.ratio",
    "min.compaction.lag.ms",
    "min.insync.replicas",
    "retention.bytes",
    "retention.ms",
    "segment.bytes",
    "segment.index.bytes",
    "segment.ms",
    "unclean.leader.election.enable",
];

/// Checks a topic config value; the error says what is wrong.
pub fn validate_topic_config(key: &str, value: &str) -> Result<(), BrokerError> {
    let bad =
        |why: &str| BrokerError::kafka(ErrorCode::INVALID_CONFIG, format!("{key}={value}: {why}"));
    match key {
        "cleanup.policy" => {
            if value
                .split(',')
                .all(|p| matches!(p.trim(), "delete" | "compact"))
            {
                Ok(())
            } else {
                Err(bad("expected delete, compact or both"))
            }
        }
        "min.cleanable.dirty.ratio" => value
            .parse::<f64>()
            .ok()
            .filter(|r| (0.0..=1.0).contains(r))
            .map(|_| ())
            .ok_or_else(|| bad("expected a number between 0 and 1")),
        "max.compaction.lag.ms" => value
            .parse::<i64>()
            .ok()
            .filter(|v| *v >= 1)
            .map(|_| ())
            .ok_or_else(|| bad("expected a number >= 1")),
        "message.timestamp.type" => match value {
            "CreateTime" | "LogAppendTime" => Ok(()),
            _ => Err(bad("expected CreateTime or LogAppendTime")),
        },
        "compression.type" => match value {
            "producer" | "uncompressed" | "gzip" | "snappy" | "lz4" | "zstd" => Ok(()),
            _ => Err(bad("unknown compression type")),
        },
        "unclean.leader.election.enable" => value
            .parse::<bool>()
            .map(|_| ())
            .map_err(|_| bad("expected true or false")),
        "retention.ms" | "retention.bytes" => value
            .parse::<i64>()
            .ok()
            .filter(|v| *v >= -1)
            .map(|_| ())
            .ok_or_else(|| bad("expected a number >= -1")),
        k if topic_default(&BrokerConfig::default(), k).is_some() => value
            .parse::<i64>()
            .ok()
            .filter(|v| *v >= 0)
            .map(|_| ())
            .ok_or_else(|| bad("expected a non-negative number")),
        _ => Err(BrokerError::kafka(
            ErrorCode::INVALID_CONFIG,
            format!("unknown topic config {key}"),
        )),
    }
}

/// Kafka's legal topic names: 1-249 characters of `[a-zA-Z0-9._-]`, not `.` or `..`.
pub fn validate_topic_name(name: &str) -> Result<(), BrokerError> {
    let ok = !name.is_empty()
        && name.len() <= 249
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(BrokerError::kafka(
            ErrorCode::INVALID_TOPIC_EXCEPTION,
            format!("invalid topic name {name:?}"),
        ))
    }
}

/// All topics, persisted.
#[derive(Debug)]
pub struct TopicRegistry {
    path: PathBuf,
    topics: BTreeMap<String, TopicMeta>,
}

impl TopicRegistry {
    /// Loads `<data_dir>/topics.meta` (empty if absent).
    pub fn load(data_dir: &Path) -> Result<Self, BrokerError> {
        let path = data_dir.join("topics.meta");
        let mut topics: BTreeMap<String, TopicMeta> = BTreeMap::new();
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(e.into()),
        };
        for (n, line) in text.lines().enumerate() {
            let bad =
                || BrokerError::Storage(format!("{}: line {} is malformed", path.display(), n + 1));
            let mut parts = line.splitn(4, ' ');
            match parts.next() {
                Some("topic") => {
                    let name = parts.next().ok_or_else(bad)?.to_owned();
                    let id = parse_uuid(parts.next().ok_or_else(bad)?).ok_or_else(bad)?;
                    let partitions = parts.next().and_then(|p| p.parse().ok()).ok_or_else(bad)?;
                    topics.insert(
                        name.clone(),
                        TopicMeta {
                            name,
                            id,
                            partitions,
                            configs: BTreeMap::new(),
                        },
                    );
                }
                Some("config") => {
                    let name = parts.next().ok_or_else(bad)?;
                    let rest = line.splitn(3, ' ').nth(2).ok_or_else(bad)?;
                    let (k, v) = rest.split_once('=').ok_or_else(bad)?;
                    topics
                        .get_mut(name)
                        .ok_or_else(bad)?
                        .configs
                        .insert(k.to_owned(), v.to_owned());
                }
                Some("") | None => {}
                Some(_) => return Err(bad()),
            }
        }
        Ok(Self { path, topics })
    }

    fn save(&self) -> Result<(), BrokerError> {
        let mut out = String::new();
        for t in self.topics.values() {
            out.push_str(&format!(
                "topic {} {} {}\n",
                t.name,
                uuid_hex(&t.id),
                t.partitions
            ));
            for (k, v) in &t.configs {
                out.push_str(&format!("config {} {k}={v}\n", t.name));
            }
        }
        let tmp = self.path.with_extension("meta.tmp");
        std::fs::write(&tmp, out)?;
        std::fs::File::open(&tmp)?.sync_all()?;
        std::fs::rename(&tmp, &self.path)?;
        Ok(())
    }

    pub fn get(&self, name: &str) -> Option<&TopicMeta> {
        self.topics.get(name)
    }

    pub fn by_id(&self, id: &Uuid) -> Option<&TopicMeta> {
        self.topics.values().find(|t| &t.id == id)
    }

    pub fn all(&self) -> impl Iterator<Item = &TopicMeta> {
        self.topics.values()
    }

    /// Adds a topic (the caller validated name, count and configs).
    pub fn create(
        &mut self,
        name: &str,
        partitions: i32,
        configs: BTreeMap<String, String>,
        id: Uuid,
    ) -> Result<TopicMeta, BrokerError> {
        if self.topics.contains_key(name) {
            return Err(BrokerError::kafka(
                ErrorCode::TOPIC_ALREADY_EXISTS,
                format!("topic {name} already exists"),
            ));
        }
        let meta = TopicMeta {
            name: name.to_owned(),
            id,
            partitions,
            configs,
        };
        self.topics.insert(name.to_owned(), meta.clone());
        self.save()?;
        Ok(meta)
    }

    pub fn delete(&mut self, name: &str) -> Result<TopicMeta, BrokerError> {
        let meta = self.topics.remove(name).ok_or_else(|| {
            BrokerError::kafka(
                ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                format!("no topic {name}"),
            )
        })?;
        self.save()?;
        Ok(meta)
    }

    pub fn set_partitions(&mut self, name: &str, count: i32) -> Result<(), BrokerError> {
        if let Some(t) = self.topics.get_mut(name) {
            t.partitions = count;
        }
        self.save()
    }

    pub fn set_configs(
        &mut self,
        name: &str,
        configs: BTreeMap<String, String>,
    ) -> Result<(), BrokerError> {
        if let Some(t) = self.topics.get_mut(name) {
            t.configs = configs;
        }
        self.save()
    }
}

pub fn uuid_hex(id: &Uuid) -> String {
    id.0.iter().map(|b| format!("{b:02x}")).collect()
}

fn parse_uuid(s: &str) -> Option<Uuid> {
    if s.len() != 32 {
        return None;
    }
    let mut out = [0u8; 16];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(Uuid(out))
}

/// A random version-4 UUID that is neither all zeros nor Kafka's reserved "metadata topic" id.
pub fn random_uuid() -> Uuid {
    use std::hash::{BuildHasher, Hasher};
    let mut out = [0u8; 16];
    for chunk in out.chunks_mut(8) {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or_default(),
        );
        chunk.copy_from_slice(&h.finish().to_be_bytes());
    }
    out[6] = (out[6] & 0x0f) | 0x40;
    out[8] = (out[8] & 0x3f) | 0x80;
    Uuid(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registry_survives_reload() {
        let dir = tempfile::tempdir().unwrap();
        let mut r = TopicRegistry::load(dir.path()).unwrap();
        let mut cfg = BTreeMap::new();
        cfg.insert("cleanup.policy".to_string(), "compact".to_string());
        let id = random_uuid();
        r.create("orders.v1-x", 3, cfg, id).unwrap();
        assert!(r.create("orders.v1-x", 1, BTreeMap::new(), id).is_err());
        let r2 = TopicRegistry::load(dir.path()).unwrap();
        let t = r2.get("orders.v1-x").unwrap();
        assert_eq!((t.partitions, t.id), (3, id));
        assert_eq!(t.configs["cleanup.policy"], "compact");
        assert_eq!(r2.by_id(&id).unwrap().name, "orders.v1-x");
    }

    #[test]
    fn names_and_configs_are_validated() {
        assert!(validate_topic_name("a.b_c-1").is_ok());
        assert!(validate_topic_name("").is_err());
        assert!(validate_topic_name("..").is_err());
        assert!(validate_topic_name("has space").is_err());
        assert!(validate_topic_name(&"x".repeat(250)).is_err());
        assert!(validate_topic_config("cleanup.policy", "compact,delete").is_ok());
        assert!(validate_topic_config("cleanup.policy", "keep").is_err());
        assert!(validate_topic_config("retention.ms", "-1").is_ok());
        assert!(validate_topic_config("segment.bytes", "-1").is_err());
        assert!(validate_topic_config("no.such.key", "1").is_err());
    }

    #[test]
    fn uuids_are_random_and_versioned() {
        let a = random_uuid();
        let b = random_uuid();
        assert_ne!(a, b);
        assert_eq!(a.0[6] >> 4, 4);
        assert_eq!(parse_uuid(&uuid_hex(&a)), Some(a));
    }
}
