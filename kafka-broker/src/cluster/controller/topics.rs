//! CreateTopics, CreatePartitions and DeleteTopics (Kafka's `ReplicationControlManager`).
//!
//! A new topic is a `TopicRecord`, a `ConfigRecord` per override and a `PartitionRecord` per
//! partition, all in the request's one batch. Replicas go to active brokers only (unfenced,
//! not in controlled shutdown) by [`super::placement`], unless the request assigns them; a
//! partition's ISR is its active replicas, its leader the first of them, both epochs 0. No
//! broker gets more than `max.partitions` replicas. `validate_only` checks everything and
//! writes nothing.

use std::collections::{BTreeMap, BTreeSet};

use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::create_topics_response::{
    CreatableTopicConfigs, CreatableTopicResult,
};
use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::{
    CreatePartitionsRequest, CreatePartitionsResponse, CreateTopicsRequest, CreateTopicsResponse,
    DeleteTopicsRequest, DeleteTopicsResponse,
};
use kafka_protocol::metadata::{ConfigRecord, MetadataRecord, RemoveTopicRecord, TopicRecord};
use kafka_protocol::{KStr, Uuid};

use super::placement::{Candidate, place, too_few};
use super::{Controller, Outcome, error_fields};
use crate::cluster::image::{
    MetadataImage, PartitionImage, RECOVERED, RESOURCE_TOPIC, TopicImage, partition_record,
};
use crate::config::topic::TopicConfig;
use crate::error::BrokerError;
use crate::topics::{METADATA_TOPIC_ID, is_internal, validate_topic_name};

fn refused(code: ErrorCode, message: impl Into<String>) -> BrokerError {
    BrokerError::kafka(code, message)
}

/// The active brokers, which new replicas go to.
fn candidates(image: &MetadataImage) -> Vec<Candidate> {
    image
        .brokers()
        .filter(|b| b.is_active())
        .map(|b| Candidate {
            id: b.id,
            rack: b.rack.clone(),
        })
        .collect()
}

/// Replicas per broker, to keep every broker within `max.partitions`.
struct Budget {
    max: usize,
    hosted: BTreeMap<i32, usize>,
}

impl Budget {
    fn new(image: &MetadataImage, max: usize) -> Self {
        let mut hosted = BTreeMap::new();
        for t in image.topics() {
            for p in t.partitions.values() {
                for r in &p.replicas {
                    *hosted.entry(*r).or_insert(0) += 1;
                }
            }
        }
        Self { max, hosted }
    }

    /// Refuses `count` x `rf` new replicas that cannot fit on `brokers` however they are
    /// placed (before placing them: a request for a billion partitions must not be built).
    fn room_for(&self, brokers: &[Candidate], count: usize, rf: usize) -> Result<(), BrokerError> {
        let room: usize = brokers
            .iter()
            .map(|b| {
                self.max
                    .saturating_sub(self.hosted.get(&b.id).copied().unwrap_or(0))
            })
            .sum();
        if count.saturating_mul(rf) > room {
            return Err(refused(
                ErrorCode::INVALID_PARTITIONS,
                format!(
                    "{count} partitions of {rf} replicas do not fit: the {} available brokers \
                     have room for {room} more replicas (max.partitions {} each)",
                    brokers.len(),
                    self.max
                ),
            ));
        }
        Ok(())
    }

    /// Checks placed replicas against every broker's limit, and counts them if `keep`.
    fn take(&mut self, assignment: &[Vec<i32>], keep: bool) -> Result<(), BrokerError> {
        let mut after = self.hosted.clone();
        for replicas in assignment {
            for r in replicas {
                let n = after.entry(*r).or_insert(0);
                *n += 1;
                if *n > self.max {
                    return Err(refused(
                        ErrorCode::INVALID_PARTITIONS,
                        format!(
                            "broker {r} would host more than max.partitions ({}) replicas",
                            self.max
                        ),
                    ));
                }
            }
        }
        if keep {
            self.hosted = after;
        }
        Ok(())
    }
}

/// Checks an explicit assignment: replicas non-empty, distinct, registered brokers, and
/// `rf` of them if given.
fn check_assignment(
    image: &MetadataImage,
    partition: i32,
    replicas: &[i32],
    rf: Option<usize>,
) -> Result<(), BrokerError> {
    let bad = |why: String| Err(refused(ErrorCode::INVALID_REPLICA_ASSIGNMENT, why));
    if replicas.is_empty() {
        return bad(format!("partition {partition} is assigned no replicas"));
    }
    if let Some(rf) = rf.filter(|rf| *rf != replicas.len()) {
        return bad(format!(
            "partition {partition} is assigned {} replicas; the topic's other partitions have {rf}",
            replicas.len()
        ));
    }
    for (i, r) in replicas.iter().enumerate() {
        if replicas[..i].contains(r) {
            return bad(format!(
                "partition {partition} is assigned broker {r} more than once"
            ));
        }
        if image.broker(*r).is_none() {
            return bad(format!(
                "partition {partition} is assigned broker {r}, which is not registered"
            ));
        }
    }
    Ok(())
}

/// New partitions from their replicas: the ISR is the active replicas, led by the first.
fn new_partitions(
    image: &MetadataImage,
    first_index: i32,
    assignment: Vec<Vec<i32>>,
) -> Result<Vec<(i32, PartitionImage)>, BrokerError> {
    let mut out = Vec::with_capacity(assignment.len());
    for (index, replicas) in (first_index..).zip(assignment) {
        let isr: Vec<i32> = replicas
            .iter()
            .copied()
            .filter(|r| image.broker(*r).is_some_and(|b| b.is_active()))
            .collect();
        let Some(&leader) = isr.first() else {
            return Err(refused(
                ErrorCode::INVALID_REPLICA_ASSIGNMENT,
                format!(
                    "partition {index}: none of its brokers {replicas:?} is available (they are \
                     fenced or shutting down)"
                ),
            ));
        };
        out.push((
            index,
            PartitionImage {
                replicas,
                isr,
                leader,
                leader_epoch: 0,
                partition_epoch: 0,
                leader_recovery_state: RECOVERED,
            },
        ));
    }
    Ok(out)
}

/// What one topic of a CreateTopics becomes.
struct NewTopic {
    id: Uuid,
    partitions: Vec<(i32, PartitionImage)>,
    replication_factor: i16,
    config: TopicConfig,
}

impl Controller {
    /// CreateTopics.
    pub fn create_topics(
        &mut self,
        image: &MetadataImage,
        req: &CreateTopicsRequest,
        version: i16,
        rng_start: u64,
    ) -> Outcome<CreateTopicsResponse> {
        let mut seen = BTreeMap::new();
        for t in &req.topics {
            *seen.entry(t.name.as_str()).or_insert(0) += 1;
        }
        let mut budget = Budget::new(image, self.config.broker.topics.max_partitions);
        let mut created: Vec<TopicImage> = Vec::new();
        let mut records = Vec::new();
        let mut start = rng_start;
        let mut topics = Vec::with_capacity(req.topics.len());
        for t in &req.topics {
            let outcome = if seen.get(t.name.as_str()).is_some_and(|n| *n > 1) {
                Err(refused(
                    ErrorCode::INVALID_REQUEST,
                    format!("topic {} is named more than once", t.name),
                ))
            } else {
                self.new_topic(image, t, &created, &mut budget, start, req.validate_only)
            };
            let result = match outcome {
                Ok(new) => {
                    start = start.wrapping_add(new.partitions.len() as u64);
                    let result = created_result(t, &new, version, &self.config.broker);
                    if !req.validate_only {
                        records.extend(topic_records(t, &new));
                        created.push(TopicImage {
                            name: t.name.to_string(),
                            id: new.id,
                            partitions: BTreeMap::new(),
                        });
                        tracing::info!(topic = %t.name, partitions = new.partitions.len(), "creating topic");
                    }
                    result
                }
                Err(e) => {
                    let (error_code, error_message) = error_fields(&e);
                    CreatableTopicResult {
                        name: t.name.clone(),
                        error_code,
                        error_message,
                        num_partitions: -1,
                        replication_factor: -1,
                        ..Default::default()
                    }
                }
            };
            topics.push(result);
        }
        Outcome::new(
            records,
            CreateTopicsResponse {
                topics,
                ..Default::default()
            },
        )
    }

    /// Checks one topic of a CreateTopics and decides its partitions.
    fn new_topic(
        &mut self,
        image: &MetadataImage,
        t: &CreatableTopic,
        created: &[TopicImage],
        budget: &mut Budget,
        start: u64,
        validate_only: bool,
    ) -> Result<NewTopic, BrokerError> {
        let name = t.name.as_str();
        validate_topic_name(name)?;
        if image.topic(name).is_some() || created.iter().any(|c| c.name == name) {
            return Err(refused(
                ErrorCode::TOPIC_ALREADY_EXISTS,
                format!("topic {name} already exists"),
            ));
        }
        // Kafka refuses names that differ only in '.' versus '_' (their metric names collide).
        let folded = name.replace('.', "_");
        let existing = image.topics().map(|t| t.name.as_str());
        if let Some(other) = existing
            .chain(created.iter().map(|c| c.name.as_str()))
            .find(|other| other.replace('.', "_") == folded)
        {
            return Err(refused(
                ErrorCode::INVALID_TOPIC_EXCEPTION,
                format!(
                    "topic {name} collides with existing topic {other} ('.' and '_' are the same in metric names)"
                ),
            ));
        }
        let mut overrides = BTreeMap::new();
        for c in &t.configs {
            let Some(value) = &c.value else {
                return Err(refused(
                    ErrorCode::INVALID_CONFIG,
                    format!("config {} has a null value", c.name),
                ));
            };
            if overrides
                .insert(c.name.to_string(), value.to_string())
                .is_some()
            {
                return Err(refused(
                    ErrorCode::INVALID_REQUEST,
                    format!("config {} is given more than once", c.name),
                ));
            }
        }
        let config = TopicConfig::new(&self.config.broker, &overrides)?;
        let (assignment, rf) = if t.assignments.is_empty() {
            let count = if t.num_partitions == -1 {
                self.config.default_num_partitions
            } else {
                t.num_partitions
            };
            if count <= 0 {
                return Err(refused(
                    ErrorCode::INVALID_PARTITIONS,
                    format!(
                        "number of partitions must be positive (or -1 for the default), got {count}"
                    ),
                ));
            }
            let rf = if t.replication_factor == -1 {
                self.config.default_replication_factor
            } else {
                t.replication_factor
            };
            if rf <= 0 {
                return Err(refused(
                    ErrorCode::INVALID_REPLICATION_FACTOR,
                    format!(
                        "replication factor must be positive (or -1 for the default), got {rf}"
                    ),
                ));
            }
            let brokers = candidates(image);
            let (count, rf_n) = (count.unsigned_abs() as usize, rf.unsigned_abs() as usize);
            if rf_n > brokers.len() {
                return Err(too_few(rf_n, brokers.len()));
            }
            budget.room_for(&brokers, count, rf_n)?;
            (place(&brokers, start, count, rf_n)?, rf)
        } else {
            if t.num_partitions != -1 || t.replication_factor != -1 {
                return Err(refused(
                    ErrorCode::INVALID_REQUEST,
                    "with assignments, the number of partitions and the replication factor must be -1",
                ));
            }
            let mut by_index = BTreeMap::new();
            for a in &t.assignments {
                if by_index.insert(a.partition_index, &a.broker_ids).is_some() {
                    return Err(refused(
                        ErrorCode::INVALID_REPLICA_ASSIGNMENT,
                        format!("partition {} is assigned more than once", a.partition_index),
                    ));
                }
            }
            let rf = t.assignments.first().map_or(0, |a| a.broker_ids.len());
            let mut assignment = Vec::with_capacity(by_index.len());
            for (expected, (index, replicas)) in (0..).zip(&by_index) {
                if *index != expected {
                    return Err(refused(
                        ErrorCode::INVALID_REPLICA_ASSIGNMENT,
                        format!(
                            "partitions must be numbered from 0 without gaps; partition {expected} is missing"
                        ),
                    ));
                }
                check_assignment(image, *index, replicas, Some(rf))?;
                assignment.push((*replicas).clone());
            }
            (assignment, i16::try_from(rf).unwrap_or(i16::MAX))
        };
        budget.take(&assignment, !validate_only)?;
        let partitions = new_partitions(image, 0, assignment)?;
        let id = if validate_only {
            Uuid::ZERO
        } else {
            self.new_topic_id(image, created)?
        };
        Ok(NewTopic {
            id,
            partitions,
            replication_factor: rf,
            config,
        })
    }

    /// A fresh topic id: not zero, not reserved, not any topic's.
    fn new_topic_id(
        &mut self,
        image: &MetadataImage,
        created: &[TopicImage],
    ) -> Result<Uuid, BrokerError> {
        for _ in 0..100 {
            let id = (self.topic_ids)();
            let taken = id.is_zero()
                || id == METADATA_TOPIC_ID
                || image.topic_by_id(&id).is_some()
                || created.iter().any(|c| c.id == id);
            if !taken {
                return Ok(id);
            }
        }
        Err(refused(
            ErrorCode::UNKNOWN_SERVER_ERROR,
            "no fresh topic id in 100 tries",
        ))
    }

    /// CreatePartitions.
    pub fn create_partitions(
        &mut self,
        image: &MetadataImage,
        req: &CreatePartitionsRequest,
        _version: i16,
        rng_start: u64,
    ) -> Outcome<CreatePartitionsResponse> {
        let mut seen = BTreeMap::new();
        for t in &req.topics {
            *seen.entry(t.name.as_str()).or_insert(0) += 1;
        }
        let mut budget = Budget::new(image, self.config.broker.topics.max_partitions);
        let mut records = Vec::new();
        let mut start = rng_start;
        let mut results = Vec::with_capacity(req.topics.len());
        for t in &req.topics {
            let outcome = (|| {
                if seen.get(t.name.as_str()).is_some_and(|n| *n > 1) {
                    return Err(refused(
                        ErrorCode::INVALID_REQUEST,
                        format!("topic {} is named more than once", t.name),
                    ));
                }
                let topic = image.topic(&t.name).ok_or_else(|| {
                    refused(
                        ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                        format!("no topic {}", t.name),
                    )
                })?;
                let current = i32::try_from(topic.partitions.len()).unwrap_or(i32::MAX);
                if t.count < current {
                    return Err(refused(
                        ErrorCode::INVALID_PARTITIONS,
                        format!(
                            "topic {} has {current} partitions; {} would not be an increase",
                            t.name, t.count
                        ),
                    ));
                }
                if t.count == current {
                    return Err(refused(
                        ErrorCode::INVALID_PARTITIONS,
                        format!("topic {} already has {current} partitions", t.name),
                    ));
                }
                let adding = (t.count - current).unsigned_abs() as usize;
                let rf = topic
                    .partitions
                    .values()
                    .next()
                    .map_or(1, |p| p.replicas.len());
                let assignment = match &t.assignments {
                    Some(given) => {
                        if given.len() != adding {
                            return Err(refused(
                                ErrorCode::INVALID_REPLICA_ASSIGNMENT,
                                format!(
                                    "{adding} partitions are added but {} assignments given",
                                    given.len()
                                ),
                            ));
                        }
                        for (index, a) in (current..).zip(given) {
                            check_assignment(image, index, &a.broker_ids, Some(rf))?;
                        }
                        given.iter().map(|a| a.broker_ids.clone()).collect()
                    }
                    None => {
                        let brokers = candidates(image);
                        if rf > brokers.len() {
                            return Err(too_few(rf, brokers.len()));
                        }
                        budget.room_for(&brokers, adding, rf)?;
                        place(&brokers, start, adding, rf)?
                    }
                };
                budget.take(&assignment, !req.validate_only)?;
                let partitions = new_partitions(image, current, assignment)?;
                Ok((topic.id, partitions))
            })();
            let (error_code, error_message) = match outcome {
                Ok((topic_id, partitions)) => {
                    start = start.wrapping_add(partitions.len() as u64);
                    if !req.validate_only {
                        tracing::info!(topic = %t.name, count = t.count, "adding partitions");
                        records.extend(partitions.iter().map(|(index, p)| {
                            MetadataRecord::Partition(partition_record(topic_id, *index, p))
                        }));
                    }
                    (0, None)
                }
                Err(e) => error_fields(&e),
            };
            results.push(CreatePartitionsTopicResult {
                name: t.name.clone(),
                error_code,
                error_message,
                ..Default::default()
            });
        }
        Outcome::new(
            records,
            CreatePartitionsResponse {
                results,
                ..Default::default()
            },
        )
    }

    /// DeleteTopics: by name (all versions) or by id (v6+). A deleted topic's configs go with
    /// it (the image drops them with the `RemoveTopicRecord`).
    pub fn delete_topics(
        &mut self,
        image: &MetadataImage,
        req: &DeleteTopicsRequest,
        version: i16,
    ) -> Outcome<DeleteTopicsResponse> {
        let targets: Vec<(Option<KStr>, Uuid)> = if version >= 6 {
            req.topics
                .iter()
                .map(|t| (t.name.clone(), t.topic_id))
                .collect()
        } else {
            req.topic_names
                .iter()
                .map(|n| (Some(n.clone()), Uuid::ZERO))
                .collect()
        };
        let mut deleting = BTreeSet::new();
        let mut records = Vec::new();
        let mut responses = Vec::with_capacity(targets.len());
        for (name, id) in targets {
            let outcome = (|| {
                if !self.config.delete_topic_enable {
                    let code = if version < 3 {
                        ErrorCode::INVALID_REQUEST
                    } else {
                        ErrorCode::TOPIC_DELETION_DISABLED
                    };
                    return Err(refused(
                        code,
                        "topic deletion is disabled (delete.topic.enable is false)",
                    ));
                }
                let topic = match &name {
                    Some(_) if !id.is_zero() => {
                        return Err(refused(
                            ErrorCode::INVALID_REQUEST,
                            "give a topic name or a topic id, not both",
                        ));
                    }
                    Some(n) => image.topic(n).ok_or_else(|| {
                        refused(
                            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                            format!("no topic {n}"),
                        )
                    })?,
                    None => image.topic_by_id(&id).ok_or_else(|| {
                        refused(ErrorCode::UNKNOWN_TOPIC_ID, format!("no topic has id {id}"))
                    })?,
                };
                if is_internal(&topic.name) {
                    return Err(refused(
                        ErrorCode::INVALID_REQUEST,
                        format!("{} is an internal topic and cannot be deleted", topic.name),
                    ));
                }
                if !deleting.insert(topic.id) {
                    return Err(refused(
                        ErrorCode::INVALID_REQUEST,
                        format!("topic {} is named more than once", topic.name),
                    ));
                }
                Ok(topic)
            })();
            let result = match outcome {
                Ok(topic) => {
                    tracing::info!(topic = %topic.name, "deleting topic");
                    records.push(MetadataRecord::RemoveTopic(RemoveTopicRecord {
                        topic_id: topic.id,
                        ..Default::default()
                    }));
                    DeletableTopicResult {
                        name: Some(KStr::from(topic.name.clone())),
                        topic_id: if version >= 6 { topic.id } else { Uuid::ZERO },
                        ..Default::default()
                    }
                }
                Err(e) => {
                    let (error_code, error_message) = error_fields(&e);
                    DeletableTopicResult {
                        name,
                        topic_id: if version >= 6 { id } else { Uuid::ZERO },
                        error_code,
                        error_message,
                        ..Default::default()
                    }
                }
            };
            responses.push(result);
        }
        Outcome::new(
            records,
            DeleteTopicsResponse {
                responses,
                ..Default::default()
            },
        )
    }
}

/// The records that create a topic.
fn topic_records(t: &CreatableTopic, new: &NewTopic) -> Vec<MetadataRecord> {
    let mut out = vec![MetadataRecord::Topic(TopicRecord {
        name: t.name.clone(),
        topic_id: new.id,
        ..Default::default()
    })];
    for (key, value) in new.config.overrides() {
        out.push(MetadataRecord::Config(ConfigRecord {
            resource_type: RESOURCE_TOPIC,
            resource_name: t.name.clone(),
            name: KStr::from(key.clone()),
            value: Some(KStr::from(value.clone())),
            ..Default::default()
        }));
    }
    out.extend(
        new.partitions
            .iter()
            .map(|(index, p)| MetadataRecord::Partition(partition_record(new.id, *index, p))),
    );
    out
}

/// A created topic's answer: its id (v7+), partitions, replication factor and configs (v5+).
fn created_result(
    t: &CreatableTopic,
    new: &NewTopic,
    version: i16,
    broker: &crate::config::BrokerConfig,
) -> CreatableTopicResult {
    CreatableTopicResult {
        name: t.name.clone(),
        topic_id: if version >= 7 { new.id } else { Uuid::ZERO },
        num_partitions: i32::try_from(new.partitions.len()).unwrap_or(i32::MAX),
        replication_factor: new.replication_factor,
        configs: (version >= 5).then(|| {
            new.config
                .describe(broker)
                .into_iter()
                .map(|e| CreatableTopicConfigs {
                    name: KStr::from(e.name.into_owned()),
                    value: Some(KStr::from(e.value)),
                    read_only: false,
                    config_source: e.source,
                    is_sensitive: false,
                    ..Default::default()
                })
                .collect()
        }),
        ..Default::default()
    }
}
