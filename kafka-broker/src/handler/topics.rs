//! CreateTopics, DeleteTopics, CreatePartitions.
//!
//! Authorization, as Kafka's controller answers them (`ControllerApis` and
//! `ReplicationControlManager`):
//! - CreateTopics: CREATE on the cluster allows every topic, else CREATE on each topic, else
//!   TOPIC_AUTHORIZATION_FAILED for it. A topic created for a caller without DESCRIBE_CONFIGS
//!   on it is answered without its configs, partition count and replication factor, with
//!   `topic_config_error_code` TOPIC_AUTHORIZATION_FAILED (v5+).
//! - DeleteTopics: DELETE on the cluster allows every topic. Else, by name: a topic the caller
//!   may not DESCRIBE is TOPIC_AUTHORIZATION_FAILED before it is looked up (so its existence is
//!   not told), an unknown one UNKNOWN_TOPIC_OR_PARTITION, one without DELETE
//!   TOPIC_AUTHORIZATION_FAILED; by id: an unknown id is UNKNOWN_TOPIC_ID, a topic without
//!   DELETE TOPIC_AUTHORIZATION_FAILED, its name left out unless the caller may DESCRIBE it.
//! - CreatePartitions: ALTER on each topic, else TOPIC_AUTHORIZATION_FAILED.

use std::collections::BTreeMap;

use kafka_auth::acl::AclOperation;
use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kafka_protocol::messages::create_topics_response::{
    CreatableTopicConfigs, CreatableTopicResult,
};
use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::{
    CreatePartitionsRequest, CreatePartitionsResponse, CreateTopicsRequest, CreateTopicsResponse,
    DeleteTopicsRequest, DeleteTopicsResponse, ResponseBody,
};

use super::authz::Authz;
use super::configs::topic_entries;
use super::message;
use crate::error::BrokerError;
use crate::node::Broker;

fn refused(what: &str, topic: &str) -> BrokerError {
    BrokerError::kafka(
        ErrorCode::TOPIC_AUTHORIZATION_FAILED,
        format!("not authorized to {what} topic {topic}"),
    )
}

pub(super) fn create_topics(
    broker: &Broker,
    authz: &Authz<'_>,
    req: CreateTopicsRequest,
    version: i16,
) -> ResponseBody {
    let node = broker.config.server.node_id;
    let on_cluster = !req.topics.is_empty() && authz.cluster(AclOperation::Create);
    let topics = req
        .topics
        .into_iter()
        .map(|t| {
            let outcome = (|| {
                if !on_cluster && !authz.topic(AclOperation::Create, &t.name) {
                    return Err(refused("create", &t.name));
                }
                let partitions = if t.num_partitions == -1 && t.assignments.is_empty() {
                    broker.config.topics.num_partitions
                } else if !t.assignments.is_empty() {
                    if t.num_partitions != -1 || t.replication_factor != -1 {
                        return Err(BrokerError::kafka(
                            ErrorCode::INVALID_REQUEST,
                            "give either assignments or a partition count and replication factor",
                        ));
                    }
                    for a in &t.assignments {
                        if a.broker_ids != [node] {
                            return Err(BrokerError::kafka(
                                ErrorCode::INVALID_REPLICA_ASSIGNMENT,
                                format!(
                                    "partition {} assigned to {:?}; the only broker is {node}",
                                    a.partition_index, a.broker_ids
                                ),
                            ));
                        }
                    }
                    t.assignments.len() as i32
                } else {
                    t.num_partitions
                };
                let rf = if t.replication_factor == -1 {
                    broker.config.topics.default_replication_factor
                } else {
                    t.replication_factor
                };
                if rf != 1 && t.assignments.is_empty() {
                    let why = if rf < 1 {
                        format!("replication factor must be at least 1, got {rf}")
                    } else {
                        format!("replication factor {rf} is larger than the number of brokers (1)")
                    };
                    return Err(BrokerError::kafka(
                        ErrorCode::INVALID_REPLICATION_FACTOR,
                        why,
                    ));
                }
                let mut configs = BTreeMap::new();
                for c in &t.configs {
                    if let Some(v) = &c.value {
                        configs.insert(c.name.to_string(), v.to_string());
                    }
                }
                broker.create_topic(&t.name, partitions, configs, req.validate_only)
            })();
            match outcome {
                Ok(meta) if !authz.topic(AclOperation::DescribeConfigs, &t.name) => {
                    CreatableTopicResult {
                        name: t.name,
                        topic_id: meta.id,
                        topic_config_error_code: ErrorCode::TOPIC_AUTHORIZATION_FAILED.code(),
                        num_partitions: -1,
                        replication_factor: -1,
                        configs: (version >= 5).then(Vec::new),
                        ..Default::default()
                    }
                }
                Ok(meta) => CreatableTopicResult {
                    name: t.name,
                    topic_id: meta.id,
                    num_partitions: meta.partitions,
                    replication_factor: 1,
                    configs: (version >= 5).then(|| {
                        topic_entries(broker, &meta)
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
                },
                Err(e) => CreatableTopicResult {
                    name: t.name,
                    error_code: e.error_code().code(),
                    error_message: message(&e),
                    num_partitions: -1,
                    replication_factor: -1,
                    ..Default::default()
                },
            }
        })
        .collect();
    ResponseBody::CreateTopics(CreateTopicsResponse {
        topics,
        ..Default::default()
    })
}

pub(super) fn delete_topics(
    broker: &Broker,
    authz: &Authz<'_>,
    req: DeleteTopicsRequest,
    version: i16,
) -> ResponseBody {
    let targets: Vec<(Option<KStr>, kafka_protocol::Uuid)> = if version >= 6 {
        req.topics
            .into_iter()
            .map(|t| (t.name, t.topic_id))
            .collect()
    } else {
        req.topic_names
            .into_iter()
            .map(|n| (Some(n), kafka_protocol::Uuid::ZERO))
            .collect()
    };
    let on_cluster = !targets.is_empty() && authz.cluster(AclOperation::Delete);
    let responses = targets
        .into_iter()
        .map(|(name, id)| {
            let by_id = name.is_none();
            let mut name = name
                .map(|n| n.to_string())
                .or_else(|| broker.topic_by_id(&id).map(|t| t.name));
            let result = match &name {
                Some(n) => {
                    let describable = on_cluster || authz.topic(AclOperation::Describe, n);
                    let deletable = on_cluster || authz.topic(AclOperation::Delete, n);
                    if !broker.config.topics.delete_enable {
                        // TOPIC_DELETION_DISABLED before anything else, as in Kafka.
                        broker.delete_topic(n)
                    } else if by_id && !deletable {
                        if !describable {
                            name = None;
                        }
                        Err(refused("delete", "with this id"))
                    } else if !by_id && !describable {
                        Err(refused("describe", n))
                    } else if !deletable && broker.topic(n).is_some() {
                        Err(refused("delete", n))
                    } else if !deletable {
                        Err(BrokerError::kafka(
                            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                            format!("no topic {n}"),
                        ))
                    } else {
                        // An unknown topic is UNKNOWN_TOPIC_OR_PARTITION.
                        broker.delete_topic(n)
                    }
                }
                None => Err(BrokerError::kafka(
                    ErrorCode::UNKNOWN_TOPIC_ID,
                    "no topic with this id",
                )),
            };
            match result {
                Ok(meta) => DeletableTopicResult {
                    name: Some(KStr::from(meta.name)),
                    topic_id: if version >= 6 {
                        meta.id
                    } else {
                        kafka_protocol::Uuid::ZERO
                    },
                    ..Default::default()
                },
                Err(e) => DeletableTopicResult {
                    name: name.map(KStr::from),
                    topic_id: if version >= 6 {
                        id
                    } else {
                        kafka_protocol::Uuid::ZERO
                    },
                    error_code: e.error_code().code(),
                    error_message: message(&e),
                    ..Default::default()
                },
            }
        })
        .collect();
    ResponseBody::DeleteTopics(DeleteTopicsResponse {
        responses,
        ..Default::default()
    })
}

pub(super) fn create_partitions(
    broker: &Broker,
    authz: &Authz<'_>,
    req: CreatePartitionsRequest,
) -> ResponseBody {
    let node = broker.config.server.node_id;
    let results = req
        .topics
        .into_iter()
        .map(|t| {
            let bad_assignment = t
                .assignments
                .as_ref()
                .is_some_and(|a| a.iter().any(|x| x.broker_ids != [node]));
            let r = if !authz.topic(AclOperation::Alter, &t.name) {
                Err(refused("alter", &t.name))
            } else if bad_assignment {
                Err(BrokerError::kafka(
                    ErrorCode::INVALID_REPLICA_ASSIGNMENT,
                    format!("the only broker is {node}"),
                ))
            } else {
                broker.add_partitions(&t.name, t.count, req.validate_only)
            };
            match r {
                Ok(()) => CreatePartitionsTopicResult {
                    name: t.name,
                    ..Default::default()
                },
                Err(e) => CreatePartitionsTopicResult {
                    name: t.name,
                    error_code: e.error_code().code(),
                    error_message: message(&e),
                    ..Default::default()
                },
            }
        })
        .collect();
    ResponseBody::CreatePartitions(CreatePartitionsResponse {
        results,
        ..Default::default()
    })
}
