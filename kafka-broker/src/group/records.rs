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
//! 3 for groups. Keys with other versions belong to newer group types and are skipped.

use bytes::Bytes;
use kafka_protocol::{DecodeError, EncodeError, Reader, UnknownTags, Writer};

use super::offsets::OffsetAndMetadata;

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
}

/// One record: a key and its value, or a tombstone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetsRecord {
    pub key: RecordKey,
    pub value: Option<RecordValue>,
}

impl RecordKey {
    /// The group the key belongs to (which decides its partition).
    pub fn group(&self) -> &str {
        match self {
            Self::OffsetCommit { group, .. } | Self::GroupMetadata { group } => group,
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
        }
        Ok(w.into_bytes())
    }

    /// Reads a key; `None` for key versions of other group types.
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
        let key = self.key.encode()?;
        let value = match &self.value {
            None => None,
            Some(RecordValue::OffsetCommit(v)) => Some(v.encode_value()?),
            Some(RecordValue::GroupMetadata(v)) => Some(v.encode_value()?),
        };
        Ok((key, value))
    }

    /// Reads a record from its key and value bytes. `Ok(None)` for keys of other group types,
    /// which a loader skips.
    pub fn decode(key: &Bytes, value: Option<&Bytes>) -> Result<Option<Self>, RecordError> {
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
        };
        Ok(Some(Self { key, value }))
    }
}
