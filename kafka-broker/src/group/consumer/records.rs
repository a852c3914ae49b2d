//! The `__consumer_offsets` records of KIP-848 groups, in Kafka's format (key versions 3-8,
//! value version 0, the generated types of `kafka_protocol::coordinator`):
//!
//! | key version | record | value |
//! |---|---|---|
//! | 3 | ConsumerGroupMetadata (group) | the group epoch |
//! | 4 | ConsumerGroupPartitionMetadata (group) | the subscribed topics: id, name, partitions, racks |
//! | 5 | ConsumerGroupMemberMetadata (group, member) | the member's subscription |
//! | 6 | ConsumerGroupTargetAssignmentMetadata (group) | the target assignment epoch |
//! | 7 | ConsumerGroupTargetAssignmentMember (group, member) | the member's target partitions |
//! | 8 | ConsumerGroupCurrentMemberAssignment (group, member) | epochs, state, assigned and pending-revocation partitions |
//!
//! A record without a value (a tombstone) deletes its key. Racks are written per partition
//! only when some partition has racks (Kafka's rule; Kafka 4 stopped writing them at all).

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use kafka_protocol::coordinator::{
    ConsumerGroupCurrentMemberAssignmentKey, ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey, ConsumerGroupMemberMetadataValue, ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue, ConsumerGroupPartitionMetadataKey,
    ConsumerGroupPartitionMetadataValue, ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue, ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue, GroupCoordinatorKey, GroupCoordinatorValue,
};
use kafka_protocol::coordinator::{
    consumer_group_current_member_assignment_value as current_value,
    consumer_group_partition_metadata_value as partition_value,
    consumer_group_target_assignment_member_value as target_value,
};
use kafka_protocol::{DecodeError, EncodeError, KStr, UnknownTags, Uuid};

use super::member::ConsumerGroupMember;
use super::types::{MemberState, TopicPartitions};

/// The value version written for every KIP-848 record.
pub const VALUE_VERSION: i16 = 0;

/// What went wrong reading or writing a record.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("malformed consumer group record: {0}")]
    Malformed(#[from] DecodeError),
    #[error("consumer group record cannot be written: {0}")]
    Encode(#[from] EncodeError),
    #[error("unknown {what} version {version}")]
    UnknownVersion { what: &'static str, version: i16 },
}

/// One subscribed topic as the group records it (Kafka's `TopicMetadata`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicMetadata {
    pub id: Uuid,
    pub name: String,
    pub num_partitions: i32,
    /// The racks of the partitions that have some (partitions without racks left out).
    pub racks: BTreeMap<i32, BTreeSet<String>>,
}

/// The subscribed topics of a group, by name.
pub type SubscriptionMetadata = BTreeMap<String, TopicMetadata>;

/// A member's subscription as its metadata record holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberSubscription {
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub subscribed_topic_names: BTreeSet<String>,
    pub subscribed_topic_regex: String,
    pub rebalance_timeout_ms: i32,
    pub server_assignor: Option<String>,
}

impl MemberSubscription {
    /// The subscription fields of `m`.
    pub fn of(m: &ConsumerGroupMember) -> Self {
        Self {
            instance_id: m.instance_id.clone(),
            rack_id: m.rack_id.clone(),
            client_id: m.client_id.clone(),
            client_host: m.client_host.clone(),
            subscribed_topic_names: m.subscribed_topic_names.clone(),
            subscribed_topic_regex: m.subscribed_topic_regex.clone(),
            rebalance_timeout_ms: m.rebalance_timeout_ms,
            server_assignor: m.server_assignor.clone(),
        }
    }

    /// Sets these fields on `m`.
    pub fn apply_to(&self, m: &mut ConsumerGroupMember) {
        m.instance_id = self.instance_id.clone();
        m.rack_id = self.rack_id.clone();
        m.client_id = self.client_id.clone();
        m.client_host = self.client_host.clone();
        m.subscribed_topic_names = self.subscribed_topic_names.clone();
        m.subscribed_topic_regex = self.subscribed_topic_regex.clone();
        m.rebalance_timeout_ms = self.rebalance_timeout_ms;
        m.server_assignor = self.server_assignor.clone();
    }
}

/// A member's current assignment as its record holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CurrentAssignment {
    pub member_epoch: i32,
    pub previous_member_epoch: i32,
    pub state: MemberState,
    pub assigned: TopicPartitions,
    pub pending_revocation: TopicPartitions,
}

impl CurrentAssignment {
    /// The assignment fields of `m`.
    pub fn of(m: &ConsumerGroupMember) -> Self {
        Self {
            member_epoch: m.member_epoch,
            previous_member_epoch: m.previous_member_epoch,
            state: m.state,
            assigned: m.assigned.clone(),
            pending_revocation: m.pending_revocation.clone(),
        }
    }

    /// Sets these fields on `m`.
    pub fn apply_to(&self, m: &mut ConsumerGroupMember) {
        m.member_epoch = self.member_epoch;
        m.previous_member_epoch = self.previous_member_epoch;
        m.state = self.state;
        m.assigned = self.assigned.clone();
        m.pending_revocation = self.pending_revocation.clone();
    }
}

/// The key of a KIP-848 record.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RecordKey {
    /// ConsumerGroupMetadataKey (3).
    GroupMetadata { group_id: String },
    /// ConsumerGroupPartitionMetadataKey (4).
    PartitionMetadata { group_id: String },
    /// ConsumerGroupMemberMetadataKey (5).
    MemberMetadata { group_id: String, member_id: String },
    /// ConsumerGroupTargetAssignmentMetadataKey (6).
    TargetAssignmentMetadata { group_id: String },
    /// ConsumerGroupTargetAssignmentMemberKey (7).
    TargetAssignmentMember { group_id: String, member_id: String },
    /// ConsumerGroupCurrentMemberAssignmentKey (8).
    CurrentMemberAssignment { group_id: String, member_id: String },
}

impl RecordKey {
    /// The group the key belongs to (which decides its partition).
    pub fn group_id(&self) -> &str {
        match self {
            Self::GroupMetadata { group_id }
            | Self::PartitionMetadata { group_id }
            | Self::MemberMetadata { group_id, .. }
            | Self::TargetAssignmentMetadata { group_id }
            | Self::TargetAssignmentMember { group_id, .. }
            | Self::CurrentMemberAssignment { group_id, .. } => group_id,
        }
    }

    /// The key's version, which is its type.
    pub fn version(&self) -> i16 {
        match self {
            Self::GroupMetadata { .. } => 3,
            Self::PartitionMetadata { .. } => 4,
            Self::MemberMetadata { .. } => 5,
            Self::TargetAssignmentMetadata { .. } => 6,
            Self::TargetAssignmentMember { .. } => 7,
            Self::CurrentMemberAssignment { .. } => 8,
        }
    }
}

/// The value of a KIP-848 record, of the type its key says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordValue {
    /// The group epoch.
    GroupMetadata {
        epoch: i32,
    },
    PartitionMetadata(SubscriptionMetadata),
    MemberMetadata(MemberSubscription),
    /// The target assignment epoch.
    TargetAssignmentMetadata {
        assignment_epoch: i32,
    },
    TargetAssignmentMember(TopicPartitions),
    CurrentMemberAssignment(CurrentAssignment),
}

/// One KIP-848 record: a key and its value, or a tombstone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerGroupRecord {
    pub key: RecordKey,
    pub value: Option<RecordValue>,
}

fn kstr(s: &str) -> KStr {
    KStr::from(s.to_owned())
}

fn opt_kstr(s: &Option<String>) -> Option<KStr> {
    s.as_deref().map(kstr)
}

fn string(s: &KStr) -> String {
    s.as_str().to_owned()
}

fn opt_string(s: &Option<KStr>) -> Option<String> {
    s.as_ref().map(string)
}

fn partitions_of(entries: impl Iterator<Item = (Uuid, Vec<i32>)>) -> TopicPartitions {
    let mut out = TopicPartitions::new();
    for (topic, ps) in entries {
        if !ps.is_empty() {
            out.entry(topic).or_default().extend(ps);
        }
    }
    out
}

impl ConsumerGroupRecord {
    /// The record's key and value bytes (`None` for a tombstone), at Kafka's versions.
    pub fn encode(&self) -> Result<(Bytes, Option<Bytes>), RecordError> {
        let key = self.encode_key()?;
        let value = match &self.value {
            None => None,
            Some(v) => Some(Self::encode_value(v)?),
        };
        Ok((key, value))
    }

    fn encode_key(&self) -> Result<Bytes, EncodeError> {
        let key: GroupCoordinatorKey = match &self.key {
            RecordKey::GroupMetadata { group_id } => ConsumerGroupMetadataKey {
                group_id: kstr(group_id),
            }
            .into(),
            RecordKey::PartitionMetadata { group_id } => ConsumerGroupPartitionMetadataKey {
                group_id: kstr(group_id),
            }
            .into(),
            RecordKey::MemberMetadata {
                group_id,
                member_id,
            } => ConsumerGroupMemberMetadataKey {
                group_id: kstr(group_id),
                member_id: kstr(member_id),
            }
            .into(),
            RecordKey::TargetAssignmentMetadata { group_id } => {
                ConsumerGroupTargetAssignmentMetadataKey {
                    group_id: kstr(group_id),
                }
                .into()
            }
            RecordKey::TargetAssignmentMember {
                group_id,
                member_id,
            } => ConsumerGroupTargetAssignmentMemberKey {
                group_id: kstr(group_id),
                member_id: kstr(member_id),
            }
            .into(),
            RecordKey::CurrentMemberAssignment {
                group_id,
                member_id,
            } => ConsumerGroupCurrentMemberAssignmentKey {
                group_id: kstr(group_id),
                member_id: kstr(member_id),
            }
            .into(),
        };
        key.encode(self.key.version())
    }

    fn encode_value(value: &RecordValue) -> Result<Bytes, EncodeError> {
        let v: GroupCoordinatorValue = match value {
            RecordValue::GroupMetadata { epoch } => ConsumerGroupMetadataValue {
                epoch: *epoch,
                unknown_tagged_fields: UnknownTags::new(),
            }
            .into(),
            RecordValue::PartitionMetadata(topics) => ConsumerGroupPartitionMetadataValue {
                topics: topics
                    .values()
                    .map(|t| partition_value::TopicMetadata {
                        topic_id: t.id,
                        topic_name: kstr(&t.name),
                        num_partitions: t.num_partitions,
                        partition_metadata: if t.racks.is_empty() {
                            Vec::new()
                        } else {
                            (0..t.num_partitions)
                                .map(|p| partition_value::PartitionMetadata {
                                    partition: p,
                                    racks: t
                                        .racks
                                        .get(&p)
                                        .map(|r| r.iter().map(|s| kstr(s)).collect())
                                        .unwrap_or_default(),
                                    unknown_tagged_fields: UnknownTags::new(),
                                })
                                .collect()
                        },
                        unknown_tagged_fields: UnknownTags::new(),
                    })
                    .collect(),
                unknown_tagged_fields: UnknownTags::new(),
            }
            .into(),
            RecordValue::MemberMetadata(m) => ConsumerGroupMemberMetadataValue {
                instance_id: opt_kstr(&m.instance_id),
                rack_id: opt_kstr(&m.rack_id),
                client_id: kstr(&m.client_id),
                client_host: kstr(&m.client_host),
                subscribed_topic_names: m.subscribed_topic_names.iter().map(|s| kstr(s)).collect(),
                subscribed_topic_regex: Some(kstr(&m.subscribed_topic_regex)),
                rebalance_timeout_ms: m.rebalance_timeout_ms,
                server_assignor: opt_kstr(&m.server_assignor),
                classic_member_metadata: None,
                unknown_tagged_fields: UnknownTags::new(),
            }
            .into(),
            RecordValue::TargetAssignmentMetadata { assignment_epoch } => {
                ConsumerGroupTargetAssignmentMetadataValue {
                    assignment_epoch: *assignment_epoch,
                    unknown_tagged_fields: UnknownTags::new(),
                }
                .into()
            }
            RecordValue::TargetAssignmentMember(tps) => ConsumerGroupTargetAssignmentMemberValue {
                topic_partitions: tps
                    .iter()
                    .map(|(t, ps)| target_value::TopicPartition {
                        topic_id: *t,
                        partitions: ps.iter().copied().collect(),
                        unknown_tagged_fields: UnknownTags::new(),
                    })
                    .collect(),
                unknown_tagged_fields: UnknownTags::new(),
            }
            .into(),
            RecordValue::CurrentMemberAssignment(a) => {
                let list = |tps: &TopicPartitions| {
                    tps.iter()
                        .map(|(t, ps)| current_value::TopicPartitions {
                            topic_id: *t,
                            partitions: ps.iter().copied().collect(),
                            unknown_tagged_fields: UnknownTags::new(),
                        })
                        .collect()
                };
                ConsumerGroupCurrentMemberAssignmentValue {
                    member_epoch: a.member_epoch,
                    previous_member_epoch: a.previous_member_epoch,
                    state: a.state.value(),
                    assigned_partitions: list(&a.assigned),
                    partitions_pending_revocation: list(&a.pending_revocation),
                    unknown_tagged_fields: UnknownTags::new(),
                }
                .into()
            }
        };
        v.encode(VALUE_VERSION)
    }

    /// Reads a record from its key and value bytes (`None`: a tombstone). `Ok(None)` for
    /// the keys of other record types (offsets, classic groups, share groups), which the
    /// caller handles elsewhere.
    pub fn decode(key: &Bytes, value: Option<&Bytes>) -> Result<Option<Self>, RecordError> {
        let (raw_key, _) = GroupCoordinatorKey::decode(key)?;
        let s = string;
        let key = match &raw_key {
            GroupCoordinatorKey::ConsumerGroupMetadata(k) => RecordKey::GroupMetadata {
                group_id: s(&k.group_id),
            },
            GroupCoordinatorKey::ConsumerGroupPartitionMetadata(k) => {
                RecordKey::PartitionMetadata {
                    group_id: s(&k.group_id),
                }
            }
            GroupCoordinatorKey::ConsumerGroupMemberMetadata(k) => RecordKey::MemberMetadata {
                group_id: s(&k.group_id),
                member_id: s(&k.member_id),
            },
            GroupCoordinatorKey::ConsumerGroupTargetAssignmentMetadata(k) => {
                RecordKey::TargetAssignmentMetadata {
                    group_id: s(&k.group_id),
                }
            }
            GroupCoordinatorKey::ConsumerGroupTargetAssignmentMember(k) => {
                RecordKey::TargetAssignmentMember {
                    group_id: s(&k.group_id),
                    member_id: s(&k.member_id),
                }
            }
            GroupCoordinatorKey::ConsumerGroupCurrentMemberAssignment(k) => {
                RecordKey::CurrentMemberAssignment {
                    group_id: s(&k.group_id),
                    member_id: s(&k.member_id),
                }
            }
            _ => return Ok(None),
        };
        let Some(bytes) = value else {
            return Ok(Some(Self { key, value: None }));
        };
        let (raw, version) = GroupCoordinatorValue::decode(&raw_key, bytes)?;
        if version != VALUE_VERSION {
            return Err(RecordError::UnknownVersion {
                what: "consumer group value",
                version,
            });
        }
        let value = match raw {
            GroupCoordinatorValue::ConsumerGroupMetadata(v) => {
                RecordValue::GroupMetadata { epoch: v.epoch }
            }
            GroupCoordinatorValue::ConsumerGroupPartitionMetadata(v) => {
                RecordValue::PartitionMetadata(
                    v.topics
                        .iter()
                        .map(|t| {
                            let racks = t
                                .partition_metadata
                                .iter()
                                .filter(|p| !p.racks.is_empty())
                                .map(|p| (p.partition, p.racks.iter().map(string).collect()))
                                .collect();
                            let meta = TopicMetadata {
                                id: t.topic_id,
                                name: s(&t.topic_name),
                                num_partitions: t.num_partitions,
                                racks,
                            };
                            (meta.name.clone(), meta)
                        })
                        .collect(),
                )
            }
            GroupCoordinatorValue::ConsumerGroupMemberMetadata(v) => {
                RecordValue::MemberMetadata(MemberSubscription {
                    instance_id: opt_string(&v.instance_id),
                    rack_id: opt_string(&v.rack_id),
                    client_id: s(&v.client_id),
                    client_host: s(&v.client_host),
                    subscribed_topic_names: v.subscribed_topic_names.iter().map(string).collect(),
                    subscribed_topic_regex: opt_string(&v.subscribed_topic_regex)
                        .unwrap_or_default(),
                    rebalance_timeout_ms: v.rebalance_timeout_ms,
                    server_assignor: opt_string(&v.server_assignor),
                })
            }
            GroupCoordinatorValue::ConsumerGroupTargetAssignmentMetadata(v) => {
                RecordValue::TargetAssignmentMetadata {
                    assignment_epoch: v.assignment_epoch,
                }
            }
            GroupCoordinatorValue::ConsumerGroupTargetAssignmentMember(v) => {
                RecordValue::TargetAssignmentMember(partitions_of(
                    v.topic_partitions
                        .into_iter()
                        .map(|tp| (tp.topic_id, tp.partitions)),
                ))
            }
            GroupCoordinatorValue::ConsumerGroupCurrentMemberAssignment(v) => {
                RecordValue::CurrentMemberAssignment(CurrentAssignment {
                    member_epoch: v.member_epoch,
                    previous_member_epoch: v.previous_member_epoch,
                    state: MemberState::from_value(v.state),
                    assigned: partitions_of(
                        v.assigned_partitions
                            .into_iter()
                            .map(|tp| (tp.topic_id, tp.partitions)),
                    ),
                    pending_revocation: partitions_of(
                        v.partitions_pending_revocation
                            .into_iter()
                            .map(|tp| (tp.topic_id, tp.partitions)),
                    ),
                })
            }
            _ => return Ok(None),
        };
        Ok(Some(Self {
            key,
            value: Some(value),
        }))
    }
}
