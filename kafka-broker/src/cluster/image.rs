//! The metadata image: what every node knows of the cluster, built by applying the committed
//! batches of Kafka's KRaft metadata records in log order.
//!
//! A batch applies whole or not at all: each record is checked against the image as the
//! batch's earlier records left it, and a record that does not fit (a partition of an unknown
//! topic id, a change to an unknown partition, a fence with a stale broker epoch, ...) undoes
//! the batch's earlier records and returns an [`ImageError`]. The undo log holds only what the
//! batch touched, so a batch that changes one partition of a 10,000-partition image copies one
//! partition.
//!
//! The records mean what they mean in Kafka's `MetadataImage` / `ClusterControlManager` /
//! `ReplicationControlManager` replay:
//!
//! - `PartitionChangeRecord`: a null `Isr`/`Replicas` is "unchanged", `Leader` -2 is
//!   "unchanged" and -1 "no leader", `LeaderRecoveryState` -1 is "unchanged". Any leader value
//!   other than -2 bumps the leader epoch (a record naming the same leader is how Kafka bumps
//!   it); every record bumps the partition epoch.
//! - `FenceBrokerRecord` / `UnfenceBrokerRecord` / `BrokerRegistrationChangeRecord` only change
//!   the broker's registration; taking the broker out of ISRs is the controller's separate
//!   `PartitionChangeRecord`s (the schema's "it will be removed from all ISRs" is history).
//!   `BrokerRegistrationChangeRecord.Fenced` is -1 unfence, 0 no change, 1 fence;
//!   `InControlledShutdown` is 0 no change, 1 entering controlled shutdown.
//! - `RemoveTopicRecord` also drops the topic's configs, as Kafka's replay does.
//! - `FeatureLevelRecord` with level 0 removes the feature; `NoOpRecord` changes nothing.
//!
//! - `AccessControlEntryRecord` adds an ACL under its id (Kafka's `AclControlManager` replay):
//!   refused for the zero id, an id already held, a binding already held under another id, or
//!   a binding no CreateAcls could make. `RemoveAccessControlEntryRecord` removes the ACL with
//!   its id (refused when there is none).
//! - `UserScramCredentialRecord` sets a user's credential for one mechanism (Kafka's
//!   `ScramControlManager` replay); `RemoveUserScramCredentialRecord` removes it (refused when
//!   there is none, as Kafka's replay refuses it). An unknown mechanism, an empty user name
//!   or iterations below 1 are refused.
//! - `ClientQuotaRecord` sets or (`Remove`) removes one quota of one entity (Kafka's
//!   `ClientQuotaControlManager` replay), the entity and key checked as the quota store
//!   checks them ([`crate::quota::QuotaChange::from_record`]).
//!
//! Records for what this image does not model (delegation tokens, metadata transactions,
//! controller registrations, ZK migration, reassignments in progress) are refused
//! ([`ImageError::Unsupported`]) rather than silently dropped.
//!
//! # Snapshots
//!
//! [`MetadataImage::to_records`] lists the image as records; applying them as one batch at the
//! same offset gives an equal image. One thing a Kafka record cannot say is the offset a broker
//! registered at ([`BrokerImage::registered_at`], which a heartbeat must reach before the
//! broker is unfenced), so a snapshot's `RegisterBrokerRecord` carries it in a tagged field
//! Kafka does not define ([`REGISTERED_AT_TAG`], 8 bytes big-endian). Kafka's readers keep
//! unknown tags and ignore them; a record without it registers the broker at the batch's
//! offset.

use std::collections::BTreeMap;

use bytes::Bytes;
use kafka_auth::acl::AclBinding;
use kafka_auth::sasl::{ScramCredential, ScramMechanism};
use kafka_protocol::metadata::register_broker_record::{BrokerEndpoint, BrokerFeature};
use kafka_protocol::metadata::{
    ConfigRecord, FeatureLevelRecord, FenceBrokerRecord, MetadataRecord, PartitionRecord,
    ProducerIdsRecord, RegisterBrokerRecord, TopicRecord, UnfenceBrokerRecord,
    UserScramCredentialRecord,
};
use kafka_protocol::{KStr, RawTaggedField, UnknownTags, Uuid};
use thiserror::Error;

mod apply;
#[cfg(test)]
mod tests;

pub(crate) use apply::merged;

/// `ConfigRecord.ResourceType` of a topic (Kafka's `ConfigResource.Type.TOPIC`).
pub const RESOURCE_TOPIC: i8 = 2;
/// `ConfigRecord.ResourceType` of a broker; resource name `""` is the cluster-wide default.
pub const RESOURCE_BROKER: i8 = 4;
/// A partition's leader when it has none.
pub const NO_LEADER: i32 = -1;
/// `PartitionChangeRecord.Leader` when the leader does not change.
pub const NO_LEADER_CHANGE: i32 = -2;
/// `LeaderRecoveryState` of a partition whose leader was elected from the ISR.
pub const RECOVERED: i8 = 0;
/// `LeaderRecoveryState` after an unclean election, until the leader reports it recovered.
pub const RECOVERING: i8 = 1;
/// The tagged field of a snapshot's `RegisterBrokerRecord` that keeps
/// [`BrokerImage::registered_at`]; a tag Kafka does not define (see the module docs).
pub const REGISTERED_AT_TAG: u32 = 10_000;

/// A record or batch that does not fit the image. The batch it came in is not applied.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ImageError {
    /// A batch at or before the offset already applied.
    #[error("batch at offset {offset} does not follow the image's offset {current}")]
    OffsetNotAfter { offset: u64, current: u64 },
    /// A record names a topic id the image does not have.
    #[error("{record}: no topic has id {topic_id}")]
    UnknownTopicId {
        record: &'static str,
        topic_id: Uuid,
    },
    /// A record changes a partition the topic does not have.
    #[error("{record}: topic {topic_id} has no partition {partition}")]
    UnknownPartition {
        record: &'static str,
        topic_id: Uuid,
        partition: i32,
    },
    /// A record names a broker that is not registered.
    #[error("{record}: broker {broker_id} is not registered")]
    UnknownBroker {
        record: &'static str,
        broker_id: i32,
    },
    /// A record is for another registration (epoch) of the broker.
    #[error("{record}: broker {broker_id} has epoch {current}, the record is for epoch {epoch}")]
    BrokerEpochMismatch {
        record: &'static str,
        broker_id: i32,
        epoch: i64,
        current: i64,
    },
    /// A `TopicRecord` for a name that exists.
    #[error("TopicRecord: topic {name} already exists")]
    TopicExists { name: String },
    /// A `TopicRecord` whose id another topic has.
    #[error("TopicRecord: topic id {topic_id} is already topic {name}'s")]
    TopicIdInUse { topic_id: Uuid, name: String },
    /// A record whose fields are impossible.
    #[error("{record}: {reason}")]
    Invalid {
        record: &'static str,
        reason: String,
    },
    /// A record type this image does not model.
    #[error("{record} is not supported by this metadata image")]
    Unsupported { record: &'static str },
}

impl From<ImageError> for crate::error::BrokerError {
    fn from(e: ImageError) -> Self {
        Self::Internal(format!("metadata image: {e}"))
    }
}

fn invalid(record: &'static str, reason: impl Into<String>) -> ImageError {
    ImageError::Invalid {
        record,
        reason: reason.into(),
    }
}

/// One listener of a broker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub name: String,
    pub host: String,
    pub port: u16,
    pub security_protocol: i16,
}

/// Where a live broker is reached on one listener (see [`MetadataImage::endpoint`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveEndpoint {
    pub node_id: i32,
    pub host: String,
    pub port: u16,
    pub rack: Option<String>,
}

impl LiveEndpoint {
    /// `host:port` to connect to (an IPv6 host in brackets).
    pub fn addr(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// The versions of a feature a broker supports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FeatureRange {
    pub min: i16,
    pub max: i16,
}

/// A registered broker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerImage {
    pub id: i32,
    /// The epoch the controller gave this registration.
    pub epoch: i64,
    /// Which process registered (a new one at every start).
    pub incarnation_id: Uuid,
    pub endpoints: Vec<Endpoint>,
    pub rack: Option<String>,
    pub fenced: bool,
    pub in_controlled_shutdown: bool,
    /// The offset of the batch with its `RegisterBrokerRecord`.
    pub registered_at: u64,
    /// The features the broker supports, by name.
    pub features: BTreeMap<String, FeatureRange>,
    /// Its log directories (`LogDirs`, empty if it did not say).
    pub log_dirs: Vec<Uuid>,
}

impl BrokerImage {
    /// Unfenced and not in controlled shutdown: may lead, join ISRs and get new replicas.
    pub fn is_active(&self) -> bool {
        !self.fenced && !self.in_controlled_shutdown
    }
}

/// One partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionImage {
    /// In preferred order.
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
    /// [`NO_LEADER`] when there is none.
    pub leader: i32,
    pub leader_epoch: i32,
    pub partition_epoch: i32,
    /// [`RECOVERED`] or [`RECOVERING`].
    pub leader_recovery_state: i8,
}

/// One topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicImage {
    pub name: String,
    pub id: Uuid,
    pub partitions: BTreeMap<i32, PartitionImage>,
}

/// The last producer id block handed out (`ProducerIdsRecord`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerIdsImage {
    /// The broker the block went to, and its epoch.
    pub broker_id: i32,
    pub broker_epoch: i64,
    /// The first producer id of the next block.
    pub next_producer_id: i64,
}

/// The cluster as the metadata log says at [`MetadataImage::offset`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MetadataImage {
    /// `None` until a batch is applied.
    offset: Option<u64>,
    brokers: BTreeMap<i32, BrokerImage>,
    topics: BTreeMap<String, TopicImage>,
    topic_names: BTreeMap<Uuid, String>,
    configs: BTreeMap<(i8, String), BTreeMap<String, String>>,
    features: BTreeMap<String, i16>,
    producer_ids: Option<ProducerIdsImage>,
    /// The ACLs by id, and the id of each binding (a binding is held once).
    acls: BTreeMap<Uuid, AclBinding>,
    acl_ids: BTreeMap<AclBinding, Uuid>,
    /// SCRAM credentials by (mechanism, user).
    scram: ScramMap,
    /// Client quotas.
    quotas: crate::quota::QuotaStore,
}

pub use crate::credentials::ScramMap;

impl MetadataImage {
    /// An empty image (offset 0, nothing applied).
    pub fn new() -> Self {
        Self::default()
    }

    /// Applies one committed batch of records at log offset `offset` (a Raft index; records
    /// of one batch apply together). Offsets must increase; an empty batch only moves the
    /// offset. On an error nothing of the batch is applied.
    pub fn apply_batch(
        &mut self,
        offset: u64,
        records: &[MetadataRecord],
    ) -> Result<(), ImageError> {
        if let Some(current) = self.offset {
            if offset <= current {
                return Err(ImageError::OffsetNotAfter { offset, current });
            }
        }
        let mut undo = Vec::new();
        for record in records {
            if let Err(e) = self.apply(offset, record, &mut undo) {
                self.roll_back(undo);
                return Err(e);
            }
        }
        self.offset = Some(offset);
        Ok(())
    }

    /// The offset of the last batch applied (0 before the first).
    pub fn offset(&self) -> u64 {
        self.offset.unwrap_or(0)
    }

    /// Every registered broker, by id.
    pub fn brokers(&self) -> impl Iterator<Item = &BrokerImage> {
        self.brokers.values()
    }

    pub fn broker(&self, id: i32) -> Option<&BrokerImage> {
        self.brokers.get(&id)
    }

    /// Where broker `id` is reached on `listener`: `None` when the image does not know it,
    /// it is fenced (a broker the controller fenced is not to be sent anything: clients,
    /// followers and markers wait for the metadata that names another), or it has no such
    /// listener. Every lookup of another broker's address goes through here.
    pub fn endpoint(&self, id: i32, listener: &str) -> Option<LiveEndpoint> {
        let b = self.broker(id).filter(|b| !b.fenced)?;
        let e = b.endpoints.iter().find(|e| e.name == listener)?;
        Some(LiveEndpoint {
            node_id: b.id,
            host: e.host.clone(),
            port: e.port,
            rack: b.rack.clone(),
        })
    }

    /// The leader of `topic`-`partition` and its leader epoch, `None` when the image does not
    /// know the partition or it has no leader.
    pub fn leader(&self, topic: &str, partition: i32) -> Option<(i32, i32)> {
        let p = self.topic(topic)?.partitions.get(&partition)?;
        (p.leader >= 0).then_some((p.leader, p.leader_epoch))
    }

    /// The endpoint on `listener` of the leader of `topic`-`partition` (see
    /// [`Self::endpoint`]).
    pub fn leader_endpoint(
        &self,
        topic: &str,
        partition: i32,
        listener: &str,
    ) -> Option<LiveEndpoint> {
        let (leader, _) = self.leader(topic, partition)?;
        self.endpoint(leader, listener)
    }

    /// The highest epoch of a registered broker (0 if none).
    pub fn max_broker_epoch(&self) -> i64 {
        self.brokers.values().map(|b| b.epoch).max().unwrap_or(0)
    }

    /// Every topic, by name.
    pub fn topics(&self) -> impl Iterator<Item = &TopicImage> {
        self.topics.values()
    }

    pub fn topic(&self, name: &str) -> Option<&TopicImage> {
        self.topics.get(name)
    }

    pub fn topic_by_id(&self, id: &Uuid) -> Option<&TopicImage> {
        self.topic_names.get(id).and_then(|n| self.topics.get(n))
    }

    /// The configs of a resource ([`RESOURCE_TOPIC`] with a topic name, [`RESOURCE_BROKER`]
    /// with a broker id, `""` for the cluster default); `None` if it has none.
    pub fn configs(&self, resource_type: i8, name: &str) -> Option<&BTreeMap<String, String>> {
        self.configs.get(&(resource_type, name.to_owned()))
    }

    /// One config value of a resource.
    pub fn config(&self, resource_type: i8, name: &str, key: &str) -> Option<&str> {
        self.configs(resource_type, name)
            .and_then(|c| c.get(key))
            .map(String::as_str)
    }

    /// Every finalized feature and its level, by name.
    pub fn features(&self) -> impl Iterator<Item = (&str, i16)> {
        self.features.iter().map(|(n, l)| (n.as_str(), *l))
    }

    /// The last producer id block handed out.
    pub fn producer_ids(&self) -> Option<&ProducerIdsImage> {
        self.producer_ids.as_ref()
    }

    /// Every ACL, by id (`AccessControlEntryRecord.Id`).
    pub fn acls(&self) -> &BTreeMap<Uuid, AclBinding> {
        &self.acls
    }

    /// The id of an ACL held with exactly this binding.
    pub fn acl_id(&self, binding: &AclBinding) -> Option<Uuid> {
        self.acl_ids.get(binding).copied()
    }

    /// Every SCRAM credential, by (mechanism, user).
    pub fn scram_credentials(&self) -> &ScramMap {
        &self.scram
    }

    /// The client quotas.
    pub fn quotas(&self) -> &crate::quota::QuotaStore {
        &self.quotas
    }

    /// Partitions a broker is a replica of: (topic name, partition index, partition), by topic
    /// name and index.
    pub fn partitions_of(&self, broker: i32) -> Vec<(&str, i32, &PartitionImage)> {
        self.topics
            .values()
            .flat_map(|t| {
                t.partitions
                    .iter()
                    .filter(move |(_, p)| p.replicas.contains(&broker))
                    .map(move |(i, p)| (t.name.as_str(), *i, p))
            })
            .collect()
    }

    /// The image as records (for Raft snapshots): applying them to a new image, as one batch
    /// at this image's offset, gives an equal image.
    pub fn to_records(&self) -> Vec<MetadataRecord> {
        let mut out = Vec::new();
        for (name, level) in &self.features {
            out.push(MetadataRecord::FeatureLevel(FeatureLevelRecord {
                name: KStr::from(name.clone()),
                feature_level: *level,
                ..Default::default()
            }));
        }
        for b in self.brokers.values() {
            let mut record = registration_record(b);
            record.unknown_tagged_fields = UnknownTags::from(vec![RawTaggedField {
                tag: REGISTERED_AT_TAG,
                data: Bytes::copy_from_slice(&b.registered_at.to_be_bytes()),
            }]);
            out.push(MetadataRecord::RegisterBroker(record));
        }
        for t in self.topics.values() {
            out.push(MetadataRecord::Topic(TopicRecord {
                name: KStr::from(t.name.clone()),
                topic_id: t.id,
                ..Default::default()
            }));
            for (index, p) in &t.partitions {
                out.push(MetadataRecord::Partition(partition_record(t.id, *index, p)));
            }
        }
        for ((resource_type, resource_name), entries) in &self.configs {
            for (name, value) in entries {
                out.push(MetadataRecord::Config(ConfigRecord {
                    resource_type: *resource_type,
                    resource_name: KStr::from(resource_name.clone()),
                    name: KStr::from(name.clone()),
                    value: Some(KStr::from(value.clone())),
                    ..Default::default()
                }));
            }
        }
        if let Some(p) = &self.producer_ids {
            out.push(MetadataRecord::ProducerIds(ProducerIdsRecord {
                broker_id: p.broker_id,
                broker_epoch: p.broker_epoch,
                next_producer_id: p.next_producer_id,
                ..Default::default()
            }));
        }
        for (id, binding) in &self.acls {
            out.push(MetadataRecord::AccessControlEntry(crate::acls::to_record(
                *id, binding,
            )));
        }
        for ((mechanism, user), cred) in &self.scram {
            out.push(MetadataRecord::UserScramCredential(scram_record(
                *mechanism, user, cred,
            )));
        }
        for change in self.quotas.changes() {
            out.push(MetadataRecord::ClientQuota(change.to_record()));
        }
        out
    }
}

/// The `RegisterBrokerRecord` that registers `b` as it is now.
pub(crate) fn registration_record(b: &BrokerImage) -> RegisterBrokerRecord {
    RegisterBrokerRecord {
        broker_id: b.id,
        incarnation_id: b.incarnation_id,
        broker_epoch: b.epoch,
        end_points: b
            .endpoints
            .iter()
            .map(|e| BrokerEndpoint {
                name: KStr::from(e.name.clone()),
                host: KStr::from(e.host.clone()),
                port: e.port,
                security_protocol: e.security_protocol,
                ..Default::default()
            })
            .collect(),
        features: b
            .features
            .iter()
            .map(|(name, range)| BrokerFeature {
                name: KStr::from(name.clone()),
                min_supported_version: range.min,
                max_supported_version: range.max,
                ..Default::default()
            })
            .collect(),
        rack: b.rack.clone().map(KStr::from),
        fenced: b.fenced,
        in_controlled_shutdown: b.in_controlled_shutdown,
        log_dirs: b.log_dirs.clone(),
        ..Default::default()
    }
}

/// The `PartitionRecord` of a partition as it is now. `Directories` (versions 1+) lists each
/// replica's log directory as unassigned (the zero id), as Kafka writes it before brokers
/// report their directories.
pub(crate) fn partition_record(topic_id: Uuid, index: i32, p: &PartitionImage) -> PartitionRecord {
    PartitionRecord {
        partition_id: index,
        topic_id,
        replicas: p.replicas.clone(),
        isr: p.isr.clone(),
        removing_replicas: Vec::new(),
        adding_replicas: Vec::new(),
        leader: p.leader,
        leader_recovery_state: p.leader_recovery_state,
        leader_epoch: p.leader_epoch,
        partition_epoch: p.partition_epoch,
        directories: vec![Uuid::ZERO; p.replicas.len()],
        ..Default::default()
    }
}

/// The record that fences a broker.
pub(crate) fn fence_record(b: &BrokerImage) -> MetadataRecord {
    MetadataRecord::FenceBroker(FenceBrokerRecord {
        id: b.id,
        epoch: b.epoch,
        ..Default::default()
    })
}

/// The record that unfences a broker.
pub(crate) fn unfence_record(b: &BrokerImage) -> MetadataRecord {
    MetadataRecord::UnfenceBroker(UnfenceBrokerRecord {
        id: b.id,
        epoch: b.epoch,
        ..Default::default()
    })
}

/// The `UserScramCredentialRecord` that sets `user`'s credential for `mechanism`.
pub(crate) fn scram_record(
    mechanism: ScramMechanism,
    user: &str,
    cred: &ScramCredential,
) -> UserScramCredentialRecord {
    UserScramCredentialRecord {
        name: KStr::from(user.to_owned()),
        mechanism: mechanism.type_id(),
        salt: Bytes::from(cred.salt.clone()),
        stored_key: Bytes::from(cred.stored_key.clone()),
        server_key: Bytes::from(cred.server_key.clone()),
        iterations: i32::try_from(cred.iterations).unwrap_or(i32::MAX),
        ..Default::default()
    }
}
