//! The consumer protocol's payloads inside JoinGroup and SyncGroup.
//!
//! - JoinGroup carries, per assignor, the member metadata: a `ConsumerProtocolSubscription`
//!   (topics, user data; owned partitions from v1, generation id from v2, rack id from v3).
//! - SyncGroup carries, per member, a `ConsumerProtocolAssignment` (partitions, user data).
//!
//! Both travel as bytes: a big-endian i16 version, then the struct in that version (never
//! flexible). We write version 3 of both, as the Java client 3.9 does; librdkafka writes
//! subscription v1 (2.0) or v3 (2.16) and assignment v0, kafka-python 3.0 writes v0 of both
//! (see tests/assignor/FINDINGS.md). A version newer than
//! 3 is read with the v3 layout and what follows is ignored (Kafka's rule: new versions only
//! append fields).

use bytes::Bytes;
use kafka_protocol::KStr;
use kafka_protocol::frame::{decode_versioned, encode_versioned};
use kafka_protocol::messages::consumer_protocol_assignment as wire_assignment;
use kafka_protocol::messages::consumer_protocol_subscription as wire_subscription;

use super::{ConsumerError, TopicPartition};

/// The subscription version we write (Java 3.9's `ConsumerProtocolSubscription` maximum).
pub const SUBSCRIPTION_VERSION: i16 = 3;
/// The assignment version we write (Java 3.9's `ConsumerProtocolAssignment` maximum).
pub const ASSIGNMENT_VERSION: i16 = 3;

/// A member's subscription, as carried in its JoinGroup protocol metadata.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ConsumerSubscription {
    pub topics: Vec<String>,
    pub user_data: Option<Bytes>,
    /// v1+: the partitions the member owns (flattened; written grouped by topic).
    pub owned_partitions: Vec<TopicPartition>,
    /// v2+: `None` is written as -1, and -1 (or any negative value) is read as `None`.
    pub generation_id: Option<i32>,
    /// v3+: `None` is written as null; null and "" are read as `None` (librdkafka writes ""
    /// when `client.rack` is not set).
    pub rack_id: Option<String>,
}

impl ConsumerSubscription {
    /// The version prefix and the struct in `version` (0 to 3). Fields the version cannot
    /// carry are left out, as Java does (they are ignorable). Topics are written sorted and
    /// owned partitions sorted and grouped by topic, as Java writes them.
    pub fn encode(&self, version: i16) -> Result<Bytes, ConsumerError> {
        let mut topics: Vec<&String> = self.topics.iter().collect();
        topics.sort();
        let wire = wire_subscription::ConsumerProtocolSubscription {
            topics: topics.into_iter().map(|t| KStr::from(t.clone())).collect(),
            user_data: self.user_data.clone(),
            owned_partitions: group_by_topic(&self.owned_partitions)
                .into_iter()
                .map(|(topic, partitions)| wire_subscription::TopicPartition {
                    topic: KStr::from(topic),
                    partitions,
                })
                .collect(),
            generation_id: self.generation_id.unwrap_or(-1),
            rack_id: self.rack_id.clone().map(KStr::from),
        };
        encode_versioned(&wire, version).map_err(|source| ConsumerError::Encode {
            what: "ConsumerProtocolSubscription",
            source,
        })
    }

    /// Reads version-prefixed subscription bytes; returns the version on the wire too.
    pub fn decode(bytes: &Bytes) -> Result<(i16, Self), ConsumerError> {
        let (version, wire) = decode_versioned::<wire_subscription::ConsumerProtocolSubscription>(
            bytes,
        )
        .map_err(|source| ConsumerError::Malformed {
            what: "ConsumerProtocolSubscription",
            source,
        })?;
        let owned_partitions = wire
            .owned_partitions
            .iter()
            .flat_map(|tp| {
                tp.partitions
                    .iter()
                    .map(|p| TopicPartition::new(tp.topic.as_str(), *p))
            })
            .collect();
        Ok((
            version,
            Self {
                topics: wire.topics.iter().map(|t| t.as_str().to_owned()).collect(),
                user_data: wire.user_data,
                owned_partitions,
                generation_id: (wire.generation_id >= 0).then_some(wire.generation_id),
                rack_id: wire
                    .rack_id
                    .filter(|r| !r.is_empty())
                    .map(|r| r.as_str().to_owned()),
            },
        ))
    }
}

/// One member's assignment, as the leader sends it in SyncGroup.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ConsumerAssignment {
    /// Flattened; written grouped by topic in order of first appearance.
    pub partitions: Vec<TopicPartition>,
    pub user_data: Option<Bytes>,
}

impl ConsumerAssignment {
    pub fn new(partitions: Vec<TopicPartition>) -> Self {
        Self {
            partitions,
            user_data: None,
        }
    }

    /// The version prefix and the struct in `version` (0 to 3; all have the same layout).
    pub fn encode(&self, version: i16) -> Result<Bytes, ConsumerError> {
        let wire = wire_assignment::ConsumerProtocolAssignment {
            assigned_partitions: group_in_order(&self.partitions)
                .into_iter()
                .map(|(topic, partitions)| wire_assignment::TopicPartition {
                    topic: KStr::from(topic),
                    partitions,
                })
                .collect(),
            user_data: self.user_data.clone(),
        };
        encode_versioned(&wire, version).map_err(|source| ConsumerError::Encode {
            what: "ConsumerProtocolAssignment",
            source,
        })
    }

    /// Reads version-prefixed assignment bytes; returns the version on the wire too.
    pub fn decode(bytes: &Bytes) -> Result<(i16, Self), ConsumerError> {
        let (version, wire) = decode_versioned::<wire_assignment::ConsumerProtocolAssignment>(
            bytes,
        )
        .map_err(|source| ConsumerError::Malformed {
            what: "ConsumerProtocolAssignment",
            source,
        })?;
        let partitions = wire
            .assigned_partitions
            .iter()
            .flat_map(|tp| {
                tp.partitions
                    .iter()
                    .map(|p| TopicPartition::new(tp.topic.as_str(), *p))
            })
            .collect();
        Ok((
            version,
            Self {
                partitions,
                user_data: wire.user_data,
            },
        ))
    }
}

/// Sorted by topic then partition, grouped by topic.
pub(crate) fn group_by_topic(partitions: &[TopicPartition]) -> Vec<(String, Vec<i32>)> {
    let mut sorted: Vec<&TopicPartition> = partitions.iter().collect();
    sorted.sort();
    group_in_order(sorted)
}

/// Grouped by topic in order of each topic's first appearance; partitions keep their order.
fn group_in_order<'a>(
    partitions: impl IntoIterator<Item = &'a TopicPartition>,
) -> Vec<(String, Vec<i32>)> {
    let mut out: Vec<(String, Vec<i32>)> = Vec::new();
    for tp in partitions {
        match out.iter_mut().find(|(t, _)| **t == *tp.topic) {
            Some((_, ps)) => ps.push(tp.partition),
            None => out.push((tp.topic.to_string(), vec![tp.partition])),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(t: &str, p: i32) -> TopicPartition {
        TopicPartition::new(t, p)
    }

    #[test]
    fn subscription_v3_layout_is_javas() {
        let s = ConsumerSubscription {
            topics: vec!["t1".into(), "t0".into()],
            user_data: None,
            owned_partitions: vec![tp("t1", 0), tp("t0", 2), tp("t0", 1)],
            generation_id: Some(5),
            rack_id: Some("r".into()),
        };
        let want = concat!(
            "0003", // version
            "00000002", "00027430", "00027431", // topics, sorted
            "ffffffff", // null user data
            "00000002", // owned: 2 topics
            "00027430", "00000002", "00000001", "00000002", // t0: [1, 2]
            "00027431", "00000001", "00000000", // t1: [0]
            "00000005", // generation
            "000172",   // rack "r"
        );
        assert_eq!(hex(&s.encode(3).unwrap()), want);
    }

    #[test]
    fn older_versions_drop_newer_fields() {
        let s = ConsumerSubscription {
            topics: vec!["t".into()],
            user_data: Some(Bytes::from_static(b"u")),
            owned_partitions: vec![tp("t", 0)],
            generation_id: Some(1),
            rack_id: Some("r".into()),
        };
        assert_eq!(
            hex(&s.encode(0).unwrap()),
            concat!("0000", "00000001", "000174", "00000001", "75")
        );
        let (v, back) = ConsumerSubscription::decode(&s.encode(1).unwrap()).unwrap();
        assert_eq!(v, 1);
        assert_eq!(back.owned_partitions, [tp("t", 0)]);
        assert_eq!((back.generation_id, back.rack_id), (None, None));
        assert!(s.encode(4).is_err());
        assert!(s.encode(-1).is_err());
    }

    #[test]
    fn assignment_groups_topics_in_first_appearance_order() {
        let a = ConsumerAssignment::new(vec![tp("b", 1), tp("a", 0), tp("b", 0)]);
        let want = concat!(
            "0003", "00000002", "000162", "00000002", "00000001", "00000000", "000161", "00000001",
            "00000000", "ffffffff",
        );
        assert_eq!(hex(&a.encode(3).unwrap()), want);
        let (v, back) = ConsumerAssignment::decode(&a.encode(3).unwrap()).unwrap();
        assert_eq!(v, 3);
        assert_eq!(back.partitions, [tp("b", 1), tp("b", 0), tp("a", 0)]);
    }

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }
}
