//! Metadata: this broker leads every partition; unknown topics are created when allowed.
//!
//! Authorization, as Kafka's `handleTopicMetadataRequest`:
//! - DESCRIBE on a topic to see it. Asked for all topics, the others are left out; asked by
//!   name, each is answered TOPIC_AUTHORIZATION_FAILED without its id, whether it exists or
//!   not (so a caller cannot learn which topics exist); asked by id, TOPIC_AUTHORIZATION_FAILED
//!   with the id and no name (ids are not secret), UNKNOWN_TOPIC_ID for an unknown id.
//! - Auto-creation of a topic the caller may describe needs CREATE on the cluster or on the
//!   topic, else TOPIC_AUTHORIZATION_FAILED.
//! - `topic_authorized_operations` (v8+, when asked) are the caller's on each topic answered
//!   without an authorization error; `cluster_authorized_operations` (v8-v10, when asked) the
//!   caller's on the cluster, 0 without DESCRIBE on it.

use std::collections::BTreeMap;

use kafka_auth::acl::{AclOperation, ResourceType};
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{MetadataRequest, MetadataResponse, ResponseBody};
use kafka_protocol::{KStr, Uuid};

use super::authorized;
use super::authz::{Authz, CLUSTER};
use super::context::RequestContext;
use crate::node::Broker;
use crate::topics::TopicMeta;

/// Metadata; this broker's endpoint is the one on the listener of `ctx`, `authz` says which
/// topics the caller may see and create.
pub(super) fn handle(
    broker: &Broker,
    ctx: &RequestContext<'_>,
    authz: &Authz<'_>,
    req: MetadataRequest,
    version: i16,
) -> ResponseBody {
    let node = broker.config.server.node_id;
    let (host, port) = broker.advertised_host_port_on(ctx.listener());
    // Before v4 a Metadata request always allowed auto-creation.
    let auto_create =
        broker.config.topics.auto_create && (version < 4 || req.allow_auto_topic_creation);
    // CREATE on the cluster allows every auto-creation; asked once, when needed.
    let mut create_on_cluster: Option<bool> = None;
    let mut may_create = |name: &str| {
        *create_on_cluster.get_or_insert_with(|| authz.cluster(AclOperation::Create))
            || authz.topic(AclOperation::Create, name)
    };
    // With each answer, whether it was refused authorization (no operations are given then).
    let topics: Vec<(MetadataResponseTopic, bool)> = match req.topics {
        // v0: an empty list means all topics; v1+: null means all topics.
        None => all(broker, authz),
        Some(t) if t.is_empty() && version == 0 => all(broker, authz),
        Some(list) => list
            .into_iter()
            .map(|t| match t.name {
                // By name, unless the name is empty and a topic id is given: the Java client
                // asks by id with the name left empty ('') rather than null.
                Some(name) if t.topic_id == Uuid::ZERO || !name.is_empty() => {
                    if !authz.topic(AclOperation::Describe, &name) {
                        return (refused(Some(name), Uuid::ZERO, false), true);
                    }
                    lookup(broker, &name, auto_create, &mut may_create)
                }
                _ => match broker.topic_by_id(&t.topic_id) {
                    Some(meta) if authz.topic(AclOperation::Describe, &meta.name) => {
                        (describe(broker, &meta), false)
                    }
                    // The name becomes nullable in v12 responses only.
                    Some(meta) => (
                        refused(
                            (version < 12).then(|| KStr::from_static("")),
                            meta.id,
                            false,
                        ),
                        true,
                    ),
                    None => (
                        MetadataResponseTopic {
                            error_code: ErrorCode::UNKNOWN_TOPIC_ID.code(),
                            name: (version < 12).then(|| KStr::from_static("")),
                            topic_id: t.topic_id,
                            ..Default::default()
                        },
                        true,
                    ),
                },
            })
            .collect(),
    };
    // v8+: asked for, each topic's operations (v8+) and the cluster's (v8-v10).
    let topic_ops = version >= 8 && req.include_topic_authorized_operations;
    let topics = topics
        .into_iter()
        .map(|(mut t, refused)| {
            if topic_ops && !refused {
                let name = t.name.as_deref().unwrap_or("");
                t.topic_authorized_operations = authz.operations(ResourceType::Topic, name);
            }
            t
        })
        .collect();
    let cluster_authorized_operations =
        if (8..=10).contains(&version) && req.include_cluster_authorized_operations {
            if authz.cluster(AclOperation::Describe) {
                authz.operations(ResourceType::Cluster, CLUSTER)
            } else {
                0
            }
        } else {
            authorized::NOT_ASKED
        };
    ResponseBody::Metadata(MetadataResponse {
        cluster_authorized_operations,
        brokers: vec![MetadataResponseBroker {
            node_id: node,
            host: KStr::from(host),
            port,
            rack: None,
            ..Default::default()
        }],
        cluster_id: Some(KStr::from(broker.cluster_id.clone())),
        controller_id: node,
        topics,
        ..Default::default()
    })
}

/// Every topic the caller may describe (the others are left out, as Kafka does).
fn all(broker: &Broker, authz: &Authz<'_>) -> Vec<(MetadataResponseTopic, bool)> {
    broker
        .all_topics()
        .iter()
        .filter(|t| authz.topic(AclOperation::Describe, &t.name))
        .map(|t| (describe(broker, t), false))
        .collect()
}

/// A topic the caller may not see (or create): no id unless asked by it, no partitions;
/// `is_internal` only for a refused creation (Kafka tells nothing of a topic it hides).
pub(super) fn refused(
    name: Option<KStr>,
    topic_id: Uuid,
    is_internal: bool,
) -> MetadataResponseTopic {
    MetadataResponseTopic {
        error_code: ErrorCode::TOPIC_AUTHORIZATION_FAILED.code(),
        is_internal,
        name,
        topic_id,
        ..Default::default()
    }
}

/// A topic asked for by a name the caller may describe; with whether it was refused
/// authorization (to create it).
fn lookup(
    broker: &Broker,
    name: &KStr,
    auto_create: bool,
    may_create: &mut impl FnMut(&str) -> bool,
) -> (MetadataResponseTopic, bool) {
    if let Some(meta) = broker.topic(name) {
        return (describe(broker, &meta), false);
    }
    let unknown = |code: ErrorCode| MetadataResponseTopic {
        error_code: code.code(),
        name: Some(name.clone()),
        topic_id: Uuid::ZERO,
        ..Default::default()
    };
    if !auto_create {
        return (unknown(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION), false);
    }
    if !may_create(name) {
        let internal = crate::topics::is_internal(name);
        return (refused(Some(name.clone()), Uuid::ZERO, internal), true);
    }
    let answer = match broker.create_topic(
        name,
        broker.config.topics.num_partitions,
        BTreeMap::new(),
        false,
    ) {
        Ok(meta) => describe(broker, &meta),
        // Created by a concurrent request meanwhile.
        Err(_) if broker.topic(name).is_some() => broker
            .topic(name)
            .map(|m| describe(broker, &m))
            .unwrap_or_else(|| unknown(ErrorCode::LEADER_NOT_AVAILABLE)),
        Err(e) => unknown(e.error_code()),
    };
    (answer, false)
}

fn describe(broker: &Broker, meta: &TopicMeta) -> MetadataResponseTopic {
    let node = broker.config.server.node_id;
    MetadataResponseTopic {
        error_code: 0,
        name: Some(KStr::from(meta.name.clone())),
        topic_id: meta.id,
        is_internal: meta.is_internal(),
        partitions: (0..meta.partitions)
            .map(|p| {
                // A partition not served here is listed with its error (KAFKA_STORAGE_ERROR
                // for an offline log) and this node as its offline replica.
                let error = match broker.partition(&meta.name, p) {
                    Some(_) => None,
                    None => Some(broker.partition_error(&meta.name, p).error_code())
                        .filter(|e| *e == ErrorCode::KAFKA_STORAGE_ERROR),
                };
                MetadataResponsePartition {
                    error_code: error.map_or(0, |e| e.code()),
                    partition_index: p,
                    leader_id: node,
                    leader_epoch: broker.leader_epoch(&meta.name, p),
                    replica_nodes: vec![node],
                    isr_nodes: if error.is_some() {
                        Vec::new()
                    } else {
                        vec![node]
                    },
                    offline_replicas: if error.is_some() {
                        vec![node]
                    } else {
                        Vec::new()
                    },
                    ..Default::default()
                }
            })
            .collect(),
        ..Default::default()
    }
}
