//! The topic registry: names, ids, partition counts and per-topic configs, persisted in the
//! data directory (`topics.meta`, rewritten atomically on every change).
//!
//! File format, one record per line: `topic <name> <id as 32 hex digits> <partitions>` and
//! `config <name> <key>=<value>`. Topic names cannot contain spaces, so this is unambiguous.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use kafka_protocol::Uuid;
use kafka_protocol::error_code::ErrorCode;

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
        is_internal(&self.name)
    }
}

/// Whether `topic` is one of Kafka's internal topics, which only the broker writes.
pub fn is_internal(topic: &str) -> bool {
    topic == "__consumer_offsets" || topic == "__transaction_state"
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
    fn names_are_validated() {
        assert!(validate_topic_name("a.b_c-1").is_ok());
        assert!(validate_topic_name("").is_err());
        assert!(validate_topic_name("..").is_err());
        assert!(validate_topic_name("has space").is_err());
        assert!(validate_topic_name(&"x".repeat(250)).is_err());
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
