//! Applying one record to the image, with the undo log that takes a failed batch back.

use std::collections::BTreeMap;

use kafka_auth::acl::{AclBinding, validate_new_binding};
use kafka_auth::sasl::{ScramCredential, ScramMechanism};
use kafka_protocol::Uuid;
use kafka_protocol::metadata::{
    AccessControlEntryRecord, BrokerRegistrationChangeRecord, ClientQuotaRecord, ConfigRecord,
    MetadataRecord, PartitionChangeRecord, PartitionRecord, RegisterBrokerRecord,
    RemoveAccessControlEntryRecord, RemoveTopicRecord, RemoveUserScramCredentialRecord,
    TopicRecord, UnregisterBrokerRecord, UserScramCredentialRecord,
};

use crate::quota::QuotaChange;

use super::{
    BrokerImage, Endpoint, FeatureRange, ImageError, MetadataImage, NO_LEADER, NO_LEADER_CHANGE,
    PartitionImage, ProducerIdsImage, RECOVERED, RECOVERING, REGISTERED_AT_TAG, RESOURCE_TOPIC,
    TopicImage, invalid,
};

/// How to take back one change of a batch that failed.
pub(super) enum Undo {
    Broker(i32, Option<BrokerImage>),
    TopicAdded(String, Uuid),
    TopicRemoved(TopicImage, Option<BTreeMap<String, String>>),
    Partition(String, i32, Option<PartitionImage>),
    Config(i8, String, String, Option<String>),
    Feature(String, Option<i16>),
    ProducerIds(Option<ProducerIdsImage>),
    /// The ACL an id held before (none: the id was free).
    Acl(Uuid, Option<AclBinding>),
    Scram((ScramMechanism, String), Option<ScramCredential>),
    /// The change that puts a quota back as it was.
    Quota(QuotaChange),
}

impl MetadataImage {
    pub(super) fn roll_back(&mut self, undo: Vec<Undo>) {
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
                Undo::Acl(id, prev) => {
                    if let Some(now) = self.acls.remove(&id) {
                        self.acl_ids.remove(&now);
                    }
                    if let Some(b) = prev {
                        self.acl_ids.insert(b.clone(), id);
                        self.acls.insert(id, b);
                    }
                }
                Undo::Scram(key, prev) => match prev {
                    Some(c) => {
                        self.scram.insert(key, c);
                    }
                    None => {
                        self.scram.remove(&key);
                    }
                },
                Undo::Quota(change) => {
                    self.quotas.apply(&change);
                }
            }
        }
    }

    /// Applies one record, or changes nothing and says why not.
    pub(super) fn apply(
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
            MetadataRecord::AccessControlEntry(r) => self.add_acl(r, undo),
            MetadataRecord::RemoveAccessControlEntry(r) => self.remove_acl(r, undo),
            MetadataRecord::UserScramCredential(r) => self.put_scram(r, undo),
            MetadataRecord::RemoveUserScramCredential(r) => self.remove_scram(r, undo),
            MetadataRecord::ClientQuota(r) => self.put_quota(r, undo),
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

impl MetadataImage {
    fn add_acl(
        &mut self,
        r: &AccessControlEntryRecord,
        undo: &mut Vec<Undo>,
    ) -> Result<(), ImageError> {
        const RECORD: &str = "AccessControlEntryRecord";
        if r.id.is_zero() {
            return Err(invalid(RECORD, "the ACL has the zero id"));
        }
        if self.acls.contains_key(&r.id) {
            return Err(invalid(RECORD, format!("an ACL with id {} exists", r.id)));
        }
        let binding = crate::acls::from_record(r);
        validate_new_binding(&binding).map_err(|e| invalid(RECORD, e.to_string()))?;
        if let Some(other) = self.acl_ids.get(&binding) {
            return Err(invalid(
                RECORD,
                format!("ACL {} has the same binding as ACL {other}", r.id),
            ));
        }
        self.acl_ids.insert(binding.clone(), r.id);
        self.acls.insert(r.id, binding);
        undo.push(Undo::Acl(r.id, None));
        Ok(())
    }

    fn remove_acl(
        &mut self,
        r: &RemoveAccessControlEntryRecord,
        undo: &mut Vec<Undo>,
    ) -> Result<(), ImageError> {
        let Some(binding) = self.acls.remove(&r.id) else {
            return Err(invalid(
                "RemoveAccessControlEntryRecord",
                format!("no ACL has id {}", r.id),
            ));
        };
        self.acl_ids.remove(&binding);
        undo.push(Undo::Acl(r.id, Some(binding)));
        Ok(())
    }

    fn put_scram(
        &mut self,
        r: &UserScramCredentialRecord,
        undo: &mut Vec<Undo>,
    ) -> Result<(), ImageError> {
        const RECORD: &str = "UserScramCredentialRecord";
        let mechanism = scram_mechanism(RECORD, r.mechanism)?;
        if r.name.is_empty() {
            return Err(invalid(RECORD, "empty user name"));
        }
        let iterations = u32::try_from(r.iterations)
            .ok()
            .filter(|&i| i > 0)
            .ok_or_else(|| invalid(RECORD, format!("{} iterations", r.iterations)))?;
        let cred = ScramCredential {
            salt: r.salt.to_vec(),
            stored_key: r.stored_key.to_vec(),
            server_key: r.server_key.to_vec(),
            iterations,
        };
        let key = (mechanism, r.name.to_string());
        let prev = self.scram.insert(key.clone(), cred);
        undo.push(Undo::Scram(key, prev));
        Ok(())
    }

    fn remove_scram(
        &mut self,
        r: &RemoveUserScramCredentialRecord,
        undo: &mut Vec<Undo>,
    ) -> Result<(), ImageError> {
        const RECORD: &str = "RemoveUserScramCredentialRecord";
        let mechanism = scram_mechanism(RECORD, r.mechanism)?;
        let key = (mechanism, r.name.to_string());
        let Some(prev) = self.scram.remove(&key) else {
            return Err(invalid(
                RECORD,
                format!("user {} has no {mechanism:?} credential", r.name.as_str()),
            ));
        };
        undo.push(Undo::Scram(key, Some(prev)));
        Ok(())
    }

    fn put_quota(&mut self, r: &ClientQuotaRecord, undo: &mut Vec<Undo>) -> Result<(), ImageError> {
        let change = QuotaChange::from_record(r)
            .map_err(|e| invalid("ClientQuotaRecord", e.message().to_owned()))?;
        if let Some(v) = change.value
            && !v.is_finite()
        {
            return Err(invalid("ClientQuotaRecord", format!("value {v}")));
        }
        let back = QuotaChange {
            value: self.quotas.value(&change.entity, change.key),
            ..change.clone()
        };
        self.quotas.apply(&change);
        undo.push(Undo::Quota(back));
        Ok(())
    }
}

fn scram_mechanism(record: &'static str, id: i8) -> Result<ScramMechanism, ImageError> {
    ScramMechanism::from_type_id(id)
        .ok_or_else(|| invalid(record, format!("unknown SCRAM mechanism {id}")))
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
