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

/// Kafka's `Uuid.METADATA_TOPIC_ID` (also `ONE_UUID`): the id of `__cluster_metadata` in KRaft
/// mode, reserved, never a topic's.
pub const METADATA_TOPIC_ID: Uuid = Uuid([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);

/// A random version-4 UUID from the OS's randomness (the `uuid` crate), unique across nodes.
/// Like Kafka's `Uuid.randomUuid`, never one of its reserved ids (all zeros, which means "no
/// id", and [`METADATA_TOPIC_ID`]) nor one whose text form ([`uuid_base64`]) starts with `-`
/// (which command lines would take for an option).
pub fn random_uuid() -> Uuid {
    loop {
        let id = Uuid(uuid::Uuid::new_v4().into_bytes());
        if !id.is_zero() && id != METADATA_TOPIC_ID && !uuid_base64(&id).starts_with('-') {
            return id;
        }
    }
}

/// Kafka's text form of a UUID (`Uuid.toString`, used for cluster and topic ids): the 16
/// bytes in URL-safe base64 without padding, 22 characters.
/// A UUID from Kafka's text form ([`uuid_base64`]); `None` when it is not one.
pub fn uuid_from_base64(text: &str) -> Option<Uuid> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    if text.len() != 22 {
        return None;
    }
    let mut bits: u128 = 0;
    for (i, c) in text.bytes().enumerate() {
        let v = ALPHABET.iter().position(|&a| a == c)? as u128;
        bits = if i < 21 {
            bits << 6 | v
        } else {
            // The last character carries 2 bits and 4 zero bits of padding.
            if v & 0xf != 0 {
                return None;
            }
            bits << 2 | v >> 4
        };
    }
    Some(Uuid(bits.to_be_bytes()))
}

pub fn uuid_base64(id: &Uuid) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    // 128 bits, shifted left by 4 so that they fill 22 six-bit groups exactly (the last group
    // ends with the 4 zero bits base64 pads with).
    let bits = u128::from_be_bytes(id.0);
    (0..22)
        .map(|i| {
            let group = if i < 21 {
                (bits >> (122 - 6 * i)) & 63
            } else {
                (bits & 3) << 4
            };
            char::from(ALPHABET[group as usize])
        })
        .collect()
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
        let ids: Vec<Uuid> = (0..10_000).map(|_| random_uuid()).collect();
        let distinct: std::collections::BTreeSet<[u8; 16]> = ids.iter().map(|u| u.0).collect();
        assert_eq!(distinct.len(), ids.len());
        for id in &ids {
            // Version 4 (high nibble of byte 6), variant RFC 4122 (top bits 10 of byte 8).
            assert_eq!(id.0[6] >> 4, 4, "{id:?}");
            assert_eq!(id.0[8] >> 6, 0b10, "{id:?}");
            assert!(!id.is_zero());
            assert_ne!(*id, METADATA_TOPIC_ID);
            let text = uuid_base64(id);
            assert_eq!(text.len(), 22);
            assert!(!text.starts_with('-'));
            assert_eq!(parse_uuid(&uuid_hex(id)), Some(*id));
        }
        // Bytes spread over the whole range: every value of the first byte shows up but the
        // four (f8-fb) whose text starts with `-`.
        let first: std::collections::BTreeSet<u8> = ids.iter().map(|u| u.0[0]).collect();
        assert_eq!(first.len(), 252);
        assert!(first.iter().all(|b| !(0xf8..=0xfb).contains(b)));
    }

    #[test]
    fn base64_text_form_reads_back() {
        for _ in 0..100 {
            let id = random_uuid();
            assert_eq!(uuid_from_base64(&uuid_base64(&id)), Some(id));
        }
        assert_eq!(
            uuid_from_base64("AAAAAAAAAAAAAAAAAAAAAQ"),
            Some(METADATA_TOPIC_ID)
        );
        assert_eq!(uuid_from_base64("AAAAAAAAAAAAAAAAAAAAAB"), None);
        assert_eq!(uuid_from_base64("short"), None);
        assert_eq!(uuid_from_base64("AAAAAAAAAAAAAAAAAAAA*Q"), None);
    }

    #[test]
    fn base64_text_form_is_kafkas() {
        // Kafka's Uuid.toString of these ids (URL-safe base64 of the 16 bytes, no padding).
        assert_eq!(uuid_base64(&Uuid::ZERO), "AAAAAAAAAAAAAAAAAAAAAA");
        assert_eq!(uuid_base64(&METADATA_TOPIC_ID), "AAAAAAAAAAAAAAAAAAAAAQ");
        assert_eq!(uuid_base64(&Uuid([0xff; 16])), "_____________________w");
        // 00 01 .. 0f: "AAECAwQFBgcICQoLDA0ODw" in standard base64 (no + or / here).
        let counting = Uuid(std::array::from_fn(|i| i as u8));
        assert_eq!(uuid_base64(&counting), "AAECAwQFBgcICQoLDA0ODw");
        // 0xfb 0xff ..: the characters base64url changes (+ -> -, / -> _).
        let mut b = [0u8; 16];
        b[0] = 0xfb;
        b[1] = 0xff;
        assert_eq!(&uuid_base64(&Uuid(b))[..4], "-_8A");
    }
}
