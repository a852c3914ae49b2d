//! Records of the compacted `__consumer_offsets` topic, in Kafka's format, so that a log
//! written here can be read by Kafka's tools and the other way round.
//!
//! Keys and values are a big-endian `i16` version followed by the fields:
//!
//! | key version | key | value |
//! |---|---|---|
//! | 0, 1 | OffsetCommitKey: group, topic, partition (i32) | OffsetCommitValue v0-4: offset, leader epoch (v3+), metadata, commit timestamp, expire timestamp (v1 only) |
//! | 2 | GroupMetadataKey: group | GroupMetadataValue v0-4: protocol type, generation, protocol, leader, state timestamp (v2+), members |
//!
//! Values from v4 on are flexible (compact strings, tagged fields). A record without a value
//! (a tombstone) deletes its key. Written versions are what current Kafka writes: key 1 and
//! value 3 for offsets (value 1 when the commit carried an expire timestamp), key 2 and value
//! 3 for groups. Keys 3-8 are the KIP-848 consumer groups' records
//! ([`crate::group::consumer::records`], carried here as [`RecordKey::Consumer`]); keys of
//! other versions belong to group types this broker does not serve (share, streams groups)
//! and are skipped.

use bytes::Bytes;
use kafka_protocol::record::{ControlRecordType, RecordBatch, parse_end_txn_marker};
use kafka_protocol::{DecodeError, EncodeError, Reader, UnknownTags, Writer};

use super::consumer::{self, ConsumerGroupRecord};
use super::offset_store::OffsetAndMetadata;
use crate::coordinator::{OFFSETS_TOPIC, for_each_keyed_record};

/// Key version of offset commits written here.
pub const OFFSET_COMMIT_KEY_VERSION: i16 = 1;
/// Key version of group metadata.
pub const GROUP_METADATA_KEY_VERSION: i16 = 2;
const OFFSET_VALUE_VERSION: i16 = 3;
const OFFSET_VALUE_VERSION_WITH_EXPIRY: i16 = 1;
const GROUP_VALUE_VERSION: i16 = 3;
const MAX_VALUE_VERSION: i16 = 4;

/// What went wrong reading a record.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("malformed __consumer_offsets record: {0}")]
    Malformed(#[from] DecodeError),
    #[error("unknown {what} version {version}")]
    UnknownVersion { what: &'static str, version: i16 },
    #[error(transparent)]
    Consumer(#[from] consumer::RecordError),
}

/// A `__consumer_offsets` key.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RecordKey {
    OffsetCommit {
        group: String,
        topic: String,
        partition: i32,
    },
    GroupMetadata {
        group: String,
    },
    /// A KIP-848 consumer group's record (key versions 3-8).
    Consumer(consumer::RecordKey),
}

/// A member in a group metadata value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberMetadataValue {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout: i32,
    pub session_timeout: i32,
    /// The member's metadata for the group's protocol.
    pub subscription: Bytes,
    pub assignment: Bytes,
}

/// A group metadata value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMetadataValue {
    /// Empty when the group has none.
    pub protocol_type: String,
    pub generation: i32,
    pub protocol: Option<String>,
    pub leader: Option<String>,
    /// -1 when unknown (value versions before 2).
    pub current_state_timestamp: i64,
    pub members: Vec<MemberMetadataValue>,
}

/// A `__consumer_offsets` value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordValue {
    OffsetCommit(OffsetAndMetadata),
    GroupMetadata(GroupMetadataValue),
    /// The value of a [`RecordKey::Consumer`] key.
    Consumer(consumer::RecordValue),
}

/// One record: a key and its value, or a tombstone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetsRecord {
    pub key: RecordKey,
    pub value: Option<RecordValue>,
}

/// One entry of a `__consumer_offsets` partition as the coordinator replays it: a record of
/// an ordinary batch, a record of a transactional batch (a TxnOffsetCommit, pending until its
/// producer's marker), or a COMMIT/ABORT marker (a control batch) of one producer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogEntry {
    Record(OffsetsRecord),
    Transactional {
        producer_id: i64,
        record: OffsetsRecord,
    },
    Marker {
        /// The `__consumer_offsets` partition the marker is in: it ends the producer's
        /// transaction for the groups of that partition only.
        offsets_partition: i32,
        producer_id: i64,
        commit: bool,
    },
}

impl From<OffsetsRecord> for LogEntry {
    fn from(record: OffsetsRecord) -> Self {
        Self::Record(record)
    }
}

/// The entries of one batch of `__consumer_offsets` partition `partition`, in log order,
/// appended to `out`: its records (those of a transactional batch marked with their
/// producer), or the COMMIT or ABORT marker of a control batch. Undecodable records and
/// batches are skipped with a warning.
pub fn decode_batch(partition: i32, batch: &RecordBatch, out: &mut Vec<LogEntry>) {
    if batch.is_control() {
        match parse_end_txn_marker(batch) {
            Ok(Some((kind, _))) => out.push(LogEntry::Marker {
                offsets_partition: partition,
                producer_id: batch.producer_id(),
                commit: kind == ControlRecordType::Commit,
            }),
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(topic = OFFSETS_TOPIC, partition, offset = batch.base_offset(),
                    error = %e, "undecodable control batch skipped");
            }
        }
        return;
    }
    let producer =
        (batch.is_transactional() && batch.producer_id() >= 0).then(|| batch.producer_id());
    for_each_keyed_record(OFFSETS_TOPIC, partition, batch, |key, value, offset| {
        match OffsetsRecord::decode(key, value) {
            Ok(Some(record)) => out.push(match producer {
                Some(producer_id) => LogEntry::Transactional {
                    producer_id,
                    record,
                },
                None => LogEntry::Record(record),
            }),
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(topic = OFFSETS_TOPIC, partition, offset, error = %e,
                    "undecodable record skipped");
            }
        }
    });
}

impl RecordKey {
    /// The group the key belongs to (which decides its partition).
    pub fn group(&self) -> &str {
        match self {
            Self::OffsetCommit { group, .. } | Self::GroupMetadata { group } => group,
            Self::Consumer(k) => k.group_id(),
        }
    }

    /// The key's bytes.
    pub fn encode(&self) -> Result<Bytes, EncodeError> {
        let mut w = Writer::new();
        match self {
            Self::OffsetCommit {
                group,
                topic,
                partition,
            } => {
                w.i16(OFFSET_COMMIT_KEY_VERSION);
                w.string("OffsetCommitKey.group", false, &group.clone().into())?;
                w.string("OffsetCommitKey.topic", false, &topic.clone().into())?;
                w.i32(*partition);
            }
            Self::GroupMetadata { group } => {
                w.i16(GROUP_METADATA_KEY_VERSION);
                w.string("GroupMetadataKey.group", false, &group.clone().into())?;
            }
            Self::Consumer(k) => {
                let record = ConsumerGroupRecord {
                    key: k.clone(),
                    value: None,
                };
                return consumer_encoded(&record).map(|(key, _)| key);
            }
        }
        Ok(w.into_bytes())
    }

    /// Reads a classic key; `None` for key versions of other group types (the consumer
    /// groups' keys are read by [`OffsetsRecord::decode`]).
    pub fn decode(bytes: &Bytes) -> Result<Option<Self>, RecordError> {
        let mut r = Reader::new(bytes);
        let version = r.i16("key version")?;
        let key = match version {
            0 | 1 => Self::OffsetCommit {
                group: string(&mut r, "OffsetCommitKey.group", false, version)?,
                topic: string(&mut r, "OffsetCommitKey.topic", false, version)?,
                partition: r.i32("OffsetCommitKey.partition")?,
            },
            2 => Self::GroupMetadata {
                group: string(&mut r, "GroupMetadataKey.group", false, version)?,
            },
            _ => return Ok(None),
        };
        Ok(Some(key))
    }
}

fn string(
    r: &mut Reader<'_>,
    field: &'static str,
    flex: bool,
    v: i16,
) -> Result<String, DecodeError> {
    Ok(r.string(field, flex, v)?.as_str().to_owned())
}

fn nullable_string(
    r: &mut Reader<'_>,
    field: &'static str,
    flex: bool,
) -> Result<Option<String>, DecodeError> {
    Ok(r.nullable_string(field, flex)?
        .map(|s| s.as_str().to_owned()))
}

fn skip_tags(r: &mut Reader<'_>, field: &'static str) -> Result<(), DecodeError> {
    let mut unknown = UnknownTags::new();
    r.tagged_fields(field, &mut unknown, |_, _| Ok(false))
}

fn check_version(what: &'static str, version: i16) -> Result<(), RecordError> {
    if (0..=MAX_VALUE_VERSION).contains(&version) {
        Ok(())
    } else {
        Err(RecordError::UnknownVersion { what, version })
    }
}

impl OffsetAndMetadata {
    fn encode_value(&self) -> Result<Bytes, EncodeError> {
        let mut w = Writer::new();
        match self.expire_timestamp {
            Some(expire) => {
                w.i16(OFFSET_VALUE_VERSION_WITH_EXPIRY);
                w.i64(self.offset);
                w.string(
                    "OffsetCommitValue.metadata",
                    false,
                    &self.metadata.clone().into(),
                )?;
                w.i64(self.commit_timestamp);
                w.i64(expire);
            }
            None => {
                w.i16(OFFSET_VALUE_VERSION);
                w.i64(self.offset);
                w.i32(self.leader_epoch);
                w.string(
                    "OffsetCommitValue.metadata",
                    false,
                    &self.metadata.clone().into(),
                )?;
                w.i64(self.commit_timestamp);
            }
        }
        Ok(w.into_bytes())
    }

    fn decode_value(bytes: &Bytes) -> Result<Self, RecordError> {
        let mut r = Reader::new(bytes);
        let v = r.i16("OffsetCommitValue version")?;
        check_version("OffsetCommitValue", v)?;
        let flex = v >= 4;
        let offset = r.i64("OffsetCommitValue.offset")?;
        let leader_epoch = if v >= 3 {
            r.i32("OffsetCommitValue.leaderEpoch")?
        } else {
            -1
        };
        let metadata = string(&mut r, "OffsetCommitValue.metadata", flex, v)?;
        let commit_timestamp = r.i64("OffsetCommitValue.commitTimestamp")?;
        let expire_timestamp = if v == 1 {
            Some(r.i64("OffsetCommitValue.expireTimestamp")?).filter(|t| *t >= 0)
        } else {
            None
        };
        if flex {
            skip_tags(&mut r, "OffsetCommitValue._tagged_fields")?;
        }
        Ok(Self {
            offset,
            leader_epoch,
            metadata,
            commit_timestamp,
            expire_timestamp,
            log_order: 0,
        })
    }
}

impl GroupMetadataValue {
    fn encode_value(&self) -> Result<Bytes, EncodeError> {
        let mut w = Writer::new();
        w.i16(GROUP_VALUE_VERSION);
        w.string(
            "GroupMetadataValue.protocolType",
            false,
            &self.protocol_type.clone().into(),
        )?;
        w.i32(self.generation);
        let protocol = self.protocol.clone().map(Into::into);
        w.nullable_string("GroupMetadataValue.protocol", false, protocol.as_ref())?;
        let leader = self.leader.clone().map(Into::into);
        w.nullable_string("GroupMetadataValue.leader", false, leader.as_ref())?;
        w.i64(self.current_state_timestamp);
        w.array(
            "GroupMetadataValue.members",
            false,
            &self.members,
            |w, m| {
                w.string(
                    "MemberMetadata.memberId",
                    false,
                    &m.member_id.clone().into(),
                )?;
                let instance = m.group_instance_id.clone().map(Into::into);
                w.nullable_string("MemberMetadata.groupInstanceId", false, instance.as_ref())?;
                w.string(
                    "MemberMetadata.clientId",
                    false,
                    &m.client_id.clone().into(),
                )?;
                w.string(
                    "MemberMetadata.clientHost",
                    false,
                    &m.client_host.clone().into(),
                )?;
                w.i32(m.rebalance_timeout);
                w.i32(m.session_timeout);
                w.bytes("MemberMetadata.subscription", false, &m.subscription)?;
                w.bytes("MemberMetadata.assignment", false, &m.assignment)
            },
        )?;
        Ok(w.into_bytes())
    }

    fn decode_value(bytes: &Bytes) -> Result<Self, RecordError> {
        let mut r = Reader::new(bytes);
        let v = r.i16("GroupMetadataValue version")?;
        check_version("GroupMetadataValue", v)?;
        let flex = v >= 4;
        let protocol_type = string(&mut r, "GroupMetadataValue.protocolType", flex, v)?;
        let generation = r.i32("GroupMetadataValue.generation")?;
        let protocol = nullable_string(&mut r, "GroupMetadataValue.protocol", flex)?;
        let leader = nullable_string(&mut r, "GroupMetadataValue.leader", flex)?;
        let current_state_timestamp = if v >= 2 {
            r.i64("GroupMetadataValue.currentStateTimestamp")?
        } else {
            -1
        };
        let members = r.array("GroupMetadataValue.members", flex, v, |r| {
            let member_id = string(r, "MemberMetadata.memberId", flex, v)?;
            let group_instance_id = if v >= 3 {
                nullable_string(r, "MemberMetadata.groupInstanceId", flex)?
            } else {
                None
            };
            let client_id = string(r, "MemberMetadata.clientId", flex, v)?;
            let client_host = string(r, "MemberMetadata.clientHost", flex, v)?;
            let rebalance_timeout = if v >= 1 {
                Some(r.i32("MemberMetadata.rebalanceTimeout")?)
            } else {
                None
            };
            let session_timeout = r.i32("MemberMetadata.sessionTimeout")?;
            let subscription = r.bytes("MemberMetadata.subscription", flex, v)?;
            let assignment = r.bytes("MemberMetadata.assignment", flex, v)?;
            if flex {
                skip_tags(r, "MemberMetadata._tagged_fields")?;
            }
            Ok(MemberMetadataValue {
                member_id,
                group_instance_id,
                client_id,
                client_host,
                // v0 had no rebalance timeout: Kafka used the session timeout.
                rebalance_timeout: rebalance_timeout.unwrap_or(session_timeout),
                session_timeout,
                subscription,
                assignment,
            })
        })?;
        if flex {
            skip_tags(&mut r, "GroupMetadataValue._tagged_fields")?;
        }
        Ok(Self {
            protocol_type,
            generation,
            protocol,
            leader,
            current_state_timestamp,
            members,
        })
    }
}

impl OffsetsRecord {
    /// A committed offset.
    pub fn offset_commit(
        group: &str,
        topic: &str,
        partition: i32,
        value: OffsetAndMetadata,
    ) -> Self {
        Self {
            key: RecordKey::OffsetCommit {
                group: group.to_owned(),
                topic: topic.to_owned(),
                partition,
            },
            value: Some(RecordValue::OffsetCommit(value)),
        }
    }

    /// A deleted offset.
    pub fn offset_tombstone(group: &str, topic: &str, partition: i32) -> Self {
        Self {
            key: RecordKey::OffsetCommit {
                group: group.to_owned(),
                topic: topic.to_owned(),
                partition,
            },
            value: None,
        }
    }

    /// A group's metadata.
    pub fn group_metadata(group: &str, value: GroupMetadataValue) -> Self {
        Self {
            key: RecordKey::GroupMetadata {
                group: group.to_owned(),
            },
            value: Some(RecordValue::GroupMetadata(value)),
        }
    }

    /// A deleted group.
    pub fn group_tombstone(group: &str) -> Self {
        Self {
            key: RecordKey::GroupMetadata {
                group: group.to_owned(),
            },
            value: None,
        }
    }

    /// The key and value bytes (no value for a tombstone).
    pub fn encode(&self) -> Result<(Bytes, Option<Bytes>), EncodeError> {
        if let RecordKey::Consumer(key) = &self.key {
            let value = match &self.value {
                None => None,
                Some(RecordValue::Consumer(v)) => Some(v.clone()),
                Some(_) => return Err(mismatched()),
            };
            return consumer_encoded(&ConsumerGroupRecord {
                key: key.clone(),
                value,
            });
        }
        let key = self.key.encode()?;
        let value = match &self.value {
            None => None,
            Some(RecordValue::OffsetCommit(v)) => Some(v.encode_value()?),
            Some(RecordValue::GroupMetadata(v)) => Some(v.encode_value()?),
            Some(RecordValue::Consumer(_)) => return Err(mismatched()),
        };
        Ok((key, value))
    }

    /// A consumer group's record, as one of `__consumer_offsets`.
    pub fn consumer(record: ConsumerGroupRecord) -> Self {
        Self {
            key: RecordKey::Consumer(record.key),
            value: record.value.map(RecordValue::Consumer),
        }
    }

    /// Reads a record from its key and value bytes. `Ok(None)` for keys of other group types,
    /// which a loader skips.
    pub fn decode(key: &Bytes, value: Option<&Bytes>) -> Result<Option<Self>, RecordError> {
        let version = match key.as_ref() {
            [a, b, ..] => i16::from_be_bytes([*a, *b]),
            _ => -1,
        };
        if (3..=8).contains(&version) {
            return Ok(ConsumerGroupRecord::decode(key, value)?.map(Self::consumer));
        }
        let Some(key) = RecordKey::decode(key)? else {
            return Ok(None);
        };
        let value = match (&key, value) {
            (_, None) => None,
            (RecordKey::OffsetCommit { .. }, Some(v)) => Some(RecordValue::OffsetCommit(
                OffsetAndMetadata::decode_value(v)?,
            )),
            (RecordKey::GroupMetadata { .. }, Some(v)) => Some(RecordValue::GroupMetadata(
                GroupMetadataValue::decode_value(v)?,
            )),
            // Read above.
            (RecordKey::Consumer(_), Some(_)) => return Ok(None),
        };
        Ok(Some(Self { key, value }))
    }
}

/// The bytes of a consumer group's record; its errors as the encoder's.
fn consumer_encoded(record: &ConsumerGroupRecord) -> Result<(Bytes, Option<Bytes>), EncodeError> {
    record.encode().map_err(|e| match e {
        consumer::RecordError::Encode(e) => e,
        _ => mismatched(),
    })
}

/// A record whose value is not of its key's type: never built here.
fn mismatched() -> EncodeError {
    EncodeError::FieldNotAvailable {
        field: "__consumer_offsets value of another type than its key",
        version: 0,
    }
}

/// Checks the hand-written codec above against the one generated from Kafka's schemas
/// (`kafka_protocol::coordinator`), both ways.
#[cfg(test)]
mod tests {
    use kafka_protocol::KStr;
    use kafka_protocol::coordinator::{
        GroupCoordinatorKey as Key, GroupCoordinatorValue as Value, GroupMetadataKey,
        OffsetCommitKey, OffsetCommitValue, group_metadata_value,
    };

    use super::*;

    fn offset(expire: Option<i64>) -> OffsetAndMetadata {
        OffsetAndMetadata {
            offset: 42,
            leader_epoch: if expire.is_some() { -1 } else { 7 },
            metadata: "meta".into(),
            commit_timestamp: 1_700_000_000_000,
            expire_timestamp: expire,
            log_order: 0,
        }
    }

    fn group() -> GroupMetadataValue {
        GroupMetadataValue {
            protocol_type: "consumer".into(),
            generation: 3,
            protocol: Some("range".into()),
            leader: Some("m-1".into()),
            current_state_timestamp: 1_700_000_000_001,
            members: vec![
                MemberMetadataValue {
                    member_id: "m-1".into(),
                    group_instance_id: Some("static-1".into()),
                    client_id: "c".into(),
                    client_host: "/127.0.0.1".into(),
                    rebalance_timeout: 300_000,
                    session_timeout: 45_000,
                    subscription: Bytes::from_static(b"\x00\x01sub"),
                    assignment: Bytes::from_static(b"\x00\x01assign"),
                },
                MemberMetadataValue {
                    member_id: "m-2".into(),
                    group_instance_id: None,
                    client_id: "c2".into(),
                    client_host: "/10.0.0.2".into(),
                    rebalance_timeout: 60_000,
                    session_timeout: 10_000,
                    subscription: Bytes::new(),
                    assignment: Bytes::new(),
                },
            ],
        }
    }

    fn s(k: &KStr) -> String {
        k.as_str().to_owned()
    }

    /// What we write, read by the generated decoder: the same fields, and the generated
    /// encoder gives the same bytes back.
    #[test]
    fn generated_types_read_what_we_write() {
        for expire in [None, Some(1_700_000_500_000)] {
            let rec = OffsetsRecord::offset_commit("g", "orders", 5, offset(expire));
            let (key, value) = rec.encode().unwrap();
            let (k, kv) = Key::decode(&key).unwrap();
            assert_eq!(kv, OFFSET_COMMIT_KEY_VERSION);
            let Key::OffsetCommit(ck) = &k else {
                panic!("{k:?}")
            };
            assert_eq!(
                (s(&ck.group), s(&ck.topic), ck.partition),
                ("g".into(), "orders".into(), 5)
            );
            assert_eq!(k.encode(kv).unwrap(), key);
            let value = value.unwrap();
            let (v, vv) = Value::decode(&k, &value).unwrap();
            assert_eq!(vv, if expire.is_some() { 1 } else { 3 });
            let Value::OffsetCommit(cv) = &v else {
                panic!("{v:?}")
            };
            let o = offset(expire);
            assert_eq!(cv.offset, o.offset);
            assert_eq!(s(&cv.metadata), o.metadata);
            assert_eq!(cv.commit_timestamp, o.commit_timestamp);
            if vv == 1 {
                assert_eq!(Some(cv.expire_timestamp), expire);
            } else {
                assert_eq!(cv.leader_epoch, o.leader_epoch);
            }
            assert_eq!(v.encode(vv).unwrap(), value);
        }

        let (key, value) = OffsetsRecord::group_metadata("g", group())
            .encode()
            .unwrap();
        let (k, kv) = Key::decode(&key).unwrap();
        assert_eq!(kv, GROUP_METADATA_KEY_VERSION);
        assert!(matches!(&k, Key::GroupMetadata(g) if g.group.as_str() == "g"));
        let value = value.unwrap();
        let (v, vv) = Value::decode(&k, &value).unwrap();
        assert_eq!(vv, 3);
        let Value::GroupMetadata(cv) = &v else {
            panic!("{v:?}")
        };
        let g = group();
        assert_eq!(s(&cv.protocol_type), g.protocol_type);
        assert_eq!(cv.generation, g.generation);
        assert_eq!(cv.protocol.as_ref().map(s), g.protocol);
        assert_eq!(cv.leader.as_ref().map(s), g.leader);
        assert_eq!(cv.current_state_timestamp, g.current_state_timestamp);
        assert_eq!(cv.members.len(), 2);
        for (c, m) in cv.members.iter().zip(&g.members) {
            assert_eq!(s(&c.member_id), m.member_id);
            assert_eq!(c.group_instance_id.as_ref().map(s), m.group_instance_id);
            assert_eq!(s(&c.client_id), m.client_id);
            assert_eq!(s(&c.client_host), m.client_host);
            assert_eq!(c.rebalance_timeout, m.rebalance_timeout);
            assert_eq!(c.session_timeout, m.session_timeout);
            assert_eq!(c.subscription, m.subscription);
            assert_eq!(c.assignment, m.assignment);
        }
        assert_eq!(v.encode(vv).unwrap(), value);

        // A tombstone is a key alone.
        let (key, value) = OffsetsRecord::group_tombstone("g").encode().unwrap();
        assert!(value.is_none());
        assert!(matches!(
            Key::decode(&key).unwrap(),
            (Key::GroupMetadata(_), 2)
        ));
    }

    /// What the generated encoder writes, at every key and value version (v4 flexible, with a
    /// tagged field we do not know), read by our decoder.
    #[test]
    fn we_read_what_the_generated_types_write() {
        for key_version in [0, 1] {
            let k = Key::OffsetCommit(OffsetCommitKey {
                group: KStr::from_static("g"),
                topic: KStr::from_static("t"),
                partition: 9,
            });
            for version in 0..=4 {
                let mut cv = OffsetCommitValue {
                    offset: 100 + i64::from(version),
                    leader_epoch: if version >= 3 { 4 } else { -1 },
                    metadata: KStr::from_static("m"),
                    commit_timestamp: 1000,
                    expire_timestamp: if version == 1 { 2000 } else { -1 },
                    ..Default::default()
                };
                if version >= 4 {
                    cv.unknown_tagged_fields
                        .push(kafka_protocol::RawTaggedField {
                            tag: 77,
                            data: Bytes::from_static(b"x"),
                        });
                }
                let key = k.encode(key_version).unwrap();
                let value = Value::OffsetCommit(cv).encode(version).unwrap();
                let rec = OffsetsRecord::decode(&key, Some(&value)).unwrap().unwrap();
                assert_eq!(
                    rec,
                    OffsetsRecord::offset_commit(
                        "g",
                        "t",
                        9,
                        OffsetAndMetadata {
                            offset: 100 + i64::from(version),
                            leader_epoch: if version >= 3 { 4 } else { -1 },
                            metadata: "m".into(),
                            commit_timestamp: 1000,
                            expire_timestamp: (version == 1).then_some(2000),
                            log_order: 0,
                        }
                    ),
                    "key v{key_version} value v{version}"
                );
            }
        }

        let k = Key::GroupMetadata(GroupMetadataKey {
            group: KStr::from_static("g"),
        });
        let key = k.encode(2).unwrap();
        for version in 0..=4i16 {
            let member = group_metadata_value::MemberMetadata {
                member_id: KStr::from_static("m-1"),
                group_instance_id: (version >= 3).then(|| KStr::from_static("i")),
                client_id: KStr::from_static("c"),
                client_host: KStr::from_static("h"),
                rebalance_timeout: if version >= 1 { 30 } else { 0 },
                session_timeout: 10,
                subscription: Bytes::from_static(b"s"),
                assignment: Bytes::from_static(b"a"),
                ..Default::default()
            };
            let cv = group_metadata_value::GroupMetadataValue {
                protocol_type: KStr::from_static("consumer"),
                generation: 8,
                protocol: Some(KStr::from_static("range")),
                leader: None,
                current_state_timestamp: if version >= 2 { 555 } else { -1 },
                members: vec![member],
                ..Default::default()
            };
            let value = Value::GroupMetadata(cv).encode(version).unwrap();
            let rec = OffsetsRecord::decode(&key, Some(&value)).unwrap().unwrap();
            let expected = GroupMetadataValue {
                protocol_type: "consumer".into(),
                generation: 8,
                protocol: Some("range".into()),
                leader: None,
                current_state_timestamp: if version >= 2 { 555 } else { -1 },
                members: vec![MemberMetadataValue {
                    member_id: "m-1".into(),
                    group_instance_id: (version >= 3).then(|| "i".into()),
                    client_id: "c".into(),
                    client_host: "h".into(),
                    // v0 has no rebalance timeout: ours takes the session timeout.
                    rebalance_timeout: if version >= 1 { 30 } else { 10 },
                    session_timeout: 10,
                    subscription: Bytes::from_static(b"s"),
                    assignment: Bytes::from_static(b"a"),
                }],
            };
            assert_eq!(
                rec,
                OffsetsRecord::group_metadata("g", expected),
                "v{version}"
            );
        }

        // A consumer group's key (version 3) is read as the consumer group's record.
        let consumer =
            Key::ConsumerGroupMetadata(kafka_protocol::coordinator::ConsumerGroupMetadataKey {
                group_id: "cg".into(),
            })
            .encode(3)
            .unwrap();
        assert_eq!(
            OffsetsRecord::decode(&consumer, None).unwrap(),
            Some(OffsetsRecord {
                key: RecordKey::Consumer(consumer::RecordKey::GroupMetadata {
                    group_id: "cg".into()
                }),
                value: None
            })
        );
        // Keys of group types not served here (key version 9 and up) are skipped.
        let mut newer = consumer.to_vec();
        newer[..2].copy_from_slice(&11i16.to_be_bytes());
        assert_eq!(
            OffsetsRecord::decode(&Bytes::from(newer), None).unwrap(),
            None
        );
    }
}
