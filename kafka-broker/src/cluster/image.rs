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
//! Records for what this image does not model (ACLs, SCRAM credentials, quotas, delegation
//! tokens, metadata transactions, controller registrations, ZK migration, reassignments in
//! progress) are refused ([`ImageError::Unsupported`]) rather than silently dropped.
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
use kafka_protocol::metadata::register_broker_record::{BrokerEndpoint, BrokerFeature};
use kafka_protocol::metadata::{
    BrokerRegistrationChangeRecord, ConfigRecord, FeatureLevelRecord, FenceBrokerRecord,
    MetadataRecord, PartitionChangeRecord, PartitionRecord, ProducerIdsRecord,
    RegisterBrokerRecord, RemoveTopicRecord, TopicRecord, UnfenceBrokerRecord,
    UnregisterBrokerRecord,
};
use kafka_protocol::{KStr, RawTaggedField, UnknownTags, Uuid};
use thiserror::Error;

#[cfg(test)]
mod tests;

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
}

/// How to take back one change of a batch that failed.
enum Undo {
    Broker(i32, Option<BrokerImage>),
    TopicAdded(String, Uuid),
    TopicRemoved(TopicImage, Option<BTreeMap<String, String>>),
    Partition(String, i32, Option<PartitionImage>),
    Config(i8, String, String, Option<String>),
    Feature(String, Option<i16>),
    ProducerIds(Option<ProducerIdsImage>),
}

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
        out
    }

    fn roll_back(&mut self, undo: Vec<Undo>) {
        for u in undo.into_iter().rev() {
            match u {
                Undo::Broker(id, prev) => match prev {
                    Some(b) => {
                        self.brokers.insert(id, b);
                    }
                    None => {
                        self.brokers.remove(&id);
                    }
                },
                Undo::TopicAdded(name, id) => {
                    self.topics.remove(&name);
                    self.topic_names.remove(&id);
                }
                Undo::TopicRemoved(topic, configs) => {
                    if let Some(c) = configs {
                        self.configs.insert((RESOURCE_TOPIC, topic.name.clone()), c);
                    }
                    self.topic_names.insert(topic.id, topic.name.clone());
                    self.topics.insert(topic.name.clone(), topic);
                }
                Undo::Partition(topic, index, prev) => {
                    if let Some(t) = self.topics.get_mut(&topic) {
                        match prev {
                            Some(p) => {
                                t.partitions.insert(index, p);
                            }
                            None => {
                                t.partitions.remove(&index);
                            }
                        }
                    }
                }
                Undo::Config(resource_type, resource, key, prev) => {
                    let entries = self.configs.entry((resource_type, resource)).or_default();
                    match prev {
                        Some(v) => {
                            entries.insert(key, v);
                        }
                        None => {
                            entries.remove(&key);
                        }
                    }
                    self.configs.retain(|_, e| !e.is_empty());
                }
                Undo::Feature(name, prev) => match prev {
                    Some(l) => {
                        self.features.insert(name, l);
                    }
                    None => {
                        self.features.remove(&name);
                    }
                },
                Undo::ProducerIds(prev) => self.producer_ids = prev,
            }
        }
    }

    /// Applies one record, or changes nothing and says why not.
    fn apply(
        &mut self,
        offset: u64,
        record: &MetadataRecord,
        undo: &mut Vec<Undo>,
    ) -> Result<(), ImageError> {
        match record {
            MetadataRecord::RegisterBroker(r) => self.register_broker(offset, r, undo),
            MetadataRecord::UnregisterBroker(r) => self.unregister_broker(r, undo),
            MetadataRecord::FenceBroker(r) => {
                self.change_broker("FenceBrokerRecord", r.id, r.epoch, undo, |b| {
                    b.fenced = true;
                })
            }
            MetadataRecord::UnfenceBroker(r) => {
                self.change_broker("UnfenceBrokerRecord", r.id, r.epoch, undo, |b| {
                    b.fenced = false;
                })
            }
            MetadataRecord::BrokerRegistrationChange(r) => self.registration_change(r, undo),
            MetadataRecord::Topic(r) => self.add_topic(r, undo),
            MetadataRecord::Partition(r) => self.put_partition(r, undo),
            MetadataRecord::PartitionChange(r) => self.change_partition(r, undo),
            MetadataRecord::RemoveTopic(r) => self.remove_topic(r, undo),
            MetadataRecord::Config(r) => self.put_config(r, undo),
            MetadataRecord::FeatureLevel(r) => {
                let name = r.name.to_string();
                if name.is_empty() {
                    return Err(invalid("FeatureLevelRecord", "empty feature name"));
                }
                let prev = if r.feature_level == 0 {
                    self.features.remove(&name)
                } else {
                    self.features.insert(name.clone(), r.feature_level)
                };
                undo.push(Undo::Feature(name, prev));
                Ok(())
            }
            MetadataRecord::ProducerIds(r) => {
                let current = self.producer_ids.map_or(0, |p| p.next_producer_id);
                if r.next_producer_id < current {
                    return Err(invalid(
                        "ProducerIdsRecord",
                        format!(
                            "next producer id {} is below the current {current}",
                            r.next_producer_id
                        ),
                    ));
                }
                let prev = self.producer_ids.replace(ProducerIdsImage {
                    broker_id: r.broker_id,
                    broker_epoch: r.broker_epoch,
                    next_producer_id: r.next_producer_id,
                });
                undo.push(Undo::ProducerIds(prev));
                Ok(())
            }
            MetadataRecord::NoOp(_) => Ok(()),
            other => Err(ImageError::Unsupported {
                record: other.name(),
            }),
        }
    }

    fn register_broker(
        &mut self,
        offset: u64,
        r: &RegisterBrokerRecord,
        undo: &mut Vec<Undo>,
    ) -> Result<(), ImageError> {
        const RECORD: &str = "RegisterBrokerRecord";
        if r.broker_id < 0 {
            return Err(invalid(
                RECORD,
                format!("broker id {} is negative", r.broker_id),
            ));
        }
        if let Some(old) = self.brokers.get(&r.broker_id) {
            if r.broker_epoch <= old.epoch {
                return Err(invalid(
                    RECORD,
                    format!(
                        "broker {} re-registers with epoch {}, not above its epoch {}",
                        r.broker_id, r.broker_epoch, old.epoch
                    ),
                ));
            }
        }
        let mut registered_at = offset;
        for field in r.unknown_tagged_fields.iter() {
            if field.tag == REGISTERED_AT_TAG {
                let bytes: [u8; 8] =
                    field.data.as_ref().try_into().map_err(|_| {
                        invalid(RECORD, "the registration offset tag is not 8 bytes")
                    })?;
                registered_at = u64::from_be_bytes(bytes).min(offset);
            }
        }
        let broker = BrokerImage {
            id: r.broker_id,
            epoch: r.broker_epoch,
            incarnation_id: r.incarnation_id,
            endpoints: r
                .end_points
                .iter()
                .map(|e| Endpoint {
                    name: e.name.to_string(),
                    host: e.host.to_string(),
                    port: e.port,
                    security_protocol: e.security_protocol,
                })
                .collect(),
            rack: r.rack.as_ref().map(|r| r.to_string()),
            fenced: r.fenced,
            in_controlled_shutdown: r.in_controlled_shutdown,
            registered_at,
            features: r
                .features
                .iter()
                .map(|f| {
                    let range = FeatureRange {
                        min: f.min_supported_version,
                        max: f.max_supported_version,
                    };
                    (f.name.to_string(), range)
                })
                .collect(),
            log_dirs: r.log_dirs.clone(),
        };
        let prev = self.brokers.insert(r.broker_id, broker);
        undo.push(Undo::Broker(r.broker_id, prev));
        Ok(())
    }

    fn unregister_broker(
        &mut self,
        r: &UnregisterBrokerRecord,
        undo: &mut Vec<Undo>,
    ) -> Result<(), ImageError> {
        self.checked_broker("UnregisterBrokerRecord", r.broker_id, r.broker_epoch)?;
        let prev = self.brokers.remove(&r.broker_id);
        undo.push(Undo::Broker(r.broker_id, prev));
        Ok(())
    }

    fn checked_broker(
        &self,
        record: &'static str,
        id: i32,
        epoch: i64,
    ) -> Result<&BrokerImage, ImageError> {
        let b = self.brokers.get(&id).ok_or(ImageError::UnknownBroker {
            record,
            broker_id: id,
        })?;
        if b.epoch != epoch {
            return Err(ImageError::BrokerEpochMismatch {
                record,
                broker_id: id,
                epoch,
                current: b.epoch,
            });
        }
        Ok(b)
    }

    fn change_broker(
        &mut self,
        record: &'static str,
        id: i32,
        epoch: i64,
        undo: &mut Vec<Undo>,
        change: impl FnOnce(&mut BrokerImage),
    ) -> Result<(), ImageError> {
        let mut b = self.checked_broker(record, id, epoch)?.clone();
        change(&mut b);
        let prev = self.brokers.insert(id, b);
        undo.push(Undo::Broker(id, prev));
        Ok(())
    }

    fn registration_change(
        &mut self,
        r: &BrokerRegistrationChangeRecord,
        undo: &mut Vec<Undo>,
    ) -> Result<(), ImageError> {
        const RECORD: &str = "BrokerRegistrationChangeRecord";
        let fenced = match r.fenced {
            -1 => Some(false),
            0 => None,
            1 => Some(true),
            other => {
                return Err(invalid(
                    RECORD,
                    format!("Fenced is {other}, not -1, 0 or 1"),
                ));
            }
        };
        let shutting_down = match r.in_controlled_shutdown {
            0 => None,
            1 => Some(true),
            other => {
                return Err(invalid(
                    RECORD,
                    format!("InControlledShutdown is {other}, not 0 or 1"),
                ));
            }
        };
        self.change_broker(RECORD, r.broker_id, r.broker_epoch, undo, |b| {
            if let Some(f) = fenced {
                b.fenced = f;
            }
            if let Some(s) = shutting_down {
                b.in_controlled_shutdown = s;
            }
            if !r.log_dirs.is_empty() {
                b.log_dirs = r.log_dirs.clone();
            }
        })
    }

    fn add_topic(&mut self, r: &TopicRecord, undo: &mut Vec<Undo>) -> Result<(), ImageError> {
        let name = r.name.to_string();
        if name.is_empty() {
            return Err(invalid("TopicRecord", "empty topic name"));
        }
        if r.topic_id.is_zero() {
            return Err(invalid(
                "TopicRecord",
                format!("topic {name} has the zero id"),
            ));
        }
        if self.topics.contains_key(&name) {
            return Err(ImageError::TopicExists { name });
        }
        if let Some(other) = self.topic_names.get(&r.topic_id) {
            return Err(ImageError::TopicIdInUse {
                topic_id: r.topic_id,
                name: other.clone(),
            });
        }
        self.topic_names.insert(r.topic_id, name.clone());
        self.topics.insert(
            name.clone(),
            TopicImage {
                name: name.clone(),
                id: r.topic_id,
                partitions: BTreeMap::new(),
            },
        );
        undo.push(Undo::TopicAdded(name, r.topic_id));
        Ok(())
    }

    fn topic_name(&self, record: &'static str, id: &Uuid) -> Result<String, ImageError> {
        self.topic_names
            .get(id)
            .cloned()
            .ok_or(ImageError::UnknownTopicId {
                record,
                topic_id: *id,
            })
    }

    fn put_partition(
        &mut self,
        r: &PartitionRecord,
        undo: &mut Vec<Undo>,
    ) -> Result<(), ImageError> {
        const RECORD: &str = "PartitionRecord";
        let name = self.topic_name(RECORD, &r.topic_id)?;
        if r.partition_id < 0 {
            return Err(invalid(
                RECORD,
                format!("partition id {} is negative", r.partition_id),
            ));
        }
        if !r.adding_replicas.is_empty() || !r.removing_replicas.is_empty() {
            return Err(invalid(
                RECORD,
                "reassignments in progress are not supported",
            ));
        }
        if !matches!(r.leader_recovery_state, RECOVERED | RECOVERING) {
            return Err(invalid(
                RECORD,
                format!(
                    "LeaderRecoveryState {} is not 0 or 1",
                    r.leader_recovery_state
                ),
            ));
        }
        let p = PartitionImage {
            replicas: r.replicas.clone(),
            isr: r.isr.clone(),
            leader: r.leader,
            leader_epoch: r.leader_epoch,
            partition_epoch: r.partition_epoch,
            leader_recovery_state: r.leader_recovery_state,
        };
        check_partition(RECORD, &p)?;
        let topic = self
            .topics
            .get_mut(&name)
            .ok_or(ImageError::UnknownTopicId {
                record: RECORD,
                topic_id: r.topic_id,
            })?;
        let prev = topic.partitions.insert(r.partition_id, p);
        undo.push(Undo::Partition(name, r.partition_id, prev));
        Ok(())
    }

    fn change_partition(
        &mut self,
        r: &PartitionChangeRecord,
        undo: &mut Vec<Undo>,
    ) -> Result<(), ImageError> {
        const RECORD: &str = "PartitionChangeRecord";
        let name = self.topic_name(RECORD, &r.topic_id)?;
        let unknown = ImageError::UnknownPartition {
            record: RECORD,
            topic_id: r.topic_id,
            partition: r.partition_id,
        };
        let current = self
            .topics
            .get(&name)
            .and_then(|t| t.partitions.get(&r.partition_id))
            .ok_or(unknown)?;
        if r.adding_replicas.as_ref().is_some_and(|a| !a.is_empty())
            || r.removing_replicas.as_ref().is_some_and(|a| !a.is_empty())
        {
            return Err(invalid(
                RECORD,
                "reassignments in progress are not supported",
            ));
        }
        let next = merged(current, r)?;
        check_partition(RECORD, &next)?;
        let prev = self
            .topics
            .get_mut(&name)
            .and_then(|t| t.partitions.insert(r.partition_id, next));
        undo.push(Undo::Partition(name, r.partition_id, prev));
        Ok(())
    }

    fn remove_topic(
        &mut self,
        r: &RemoveTopicRecord,
        undo: &mut Vec<Undo>,
    ) -> Result<(), ImageError> {
        let name = self.topic_name("RemoveTopicRecord", &r.topic_id)?;
        self.topic_names.remove(&r.topic_id);
        let configs = self.configs.remove(&(RESOURCE_TOPIC, name.clone()));
        if let Some(topic) = self.topics.remove(&name) {
            undo.push(Undo::TopicRemoved(topic, configs));
        }
        Ok(())
    }

    fn put_config(&mut self, r: &ConfigRecord, undo: &mut Vec<Undo>) -> Result<(), ImageError> {
        if r.name.is_empty() {
            return Err(invalid("ConfigRecord", "empty config name"));
        }
        let key = (r.resource_type, r.resource_name.to_string());
        let name = r.name.to_string();
        let prev = match &r.value {
            Some(v) => self
                .configs
                .entry(key.clone())
                .or_default()
                .insert(name.clone(), v.to_string()),
            None => {
                let prev = self.configs.get_mut(&key).and_then(|e| e.remove(&name));
                if self.configs.get(&key).is_some_and(BTreeMap::is_empty) {
                    self.configs.remove(&key);
                }
                prev
            }
        };
        undo.push(Undo::Config(key.0, key.1, name, prev));
        Ok(())
    }
}

/// A partition after a change record, as Kafka's `PartitionRegistration.merge` makes it.
pub(crate) fn merged(
    p: &PartitionImage,
    r: &PartitionChangeRecord,
) -> Result<PartitionImage, ImageError> {
    let mut next = p.clone();
    if let Some(replicas) = &r.replicas {
        next.replicas = replicas.clone();
    }
    if let Some(isr) = &r.isr {
        next.isr = isr.clone();
    }
    if r.leader != NO_LEADER_CHANGE {
        if r.leader < NO_LEADER {
            return Err(invalid(
                "PartitionChangeRecord",
                format!("Leader {} is not a broker id, -1 or -2", r.leader),
            ));
        }
        next.leader = r.leader;
        next.leader_epoch = p.leader_epoch.saturating_add(1);
    }
    match r.leader_recovery_state {
        -1 => {}
        s @ (RECOVERED | RECOVERING) => next.leader_recovery_state = s,
        other => {
            return Err(invalid(
                "PartitionChangeRecord",
                format!("LeaderRecoveryState {other} is not -1, 0 or 1"),
            ));
        }
    }
    next.partition_epoch = p.partition_epoch.saturating_add(1);
    Ok(next)
}

/// What must hold of every partition: distinct replicas, an ISR among them, a leader among
/// them or none.
fn check_partition(record: &'static str, p: &PartitionImage) -> Result<(), ImageError> {
    if p.replicas.is_empty() {
        return Err(invalid(record, "no replicas"));
    }
    for (i, r) in p.replicas.iter().enumerate() {
        if *r < 0 || p.replicas[..i].contains(r) {
            return Err(invalid(
                record,
                format!("replicas {:?} are not distinct broker ids", p.replicas),
            ));
        }
    }
    for (i, r) in p.isr.iter().enumerate() {
        if !p.replicas.contains(r) || p.isr[..i].contains(r) {
            return Err(invalid(
                record,
                format!(
                    "ISR {:?} is not a set of the replicas {:?}",
                    p.isr, p.replicas
                ),
            ));
        }
    }
    if p.leader != NO_LEADER && !p.replicas.contains(&p.leader) {
        return Err(invalid(
            record,
            format!(
                "leader {} is not one of the replicas {:?}",
                p.leader, p.replicas
            ),
        ));
    }
    Ok(())
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
