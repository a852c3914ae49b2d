//! Metadata: this broker leads every partition; unknown topics are created when allowed.

use std::collections::BTreeMap;

use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{MetadataRequest, MetadataResponse, ResponseBody};
use kafka_protocol::{KStr, Uuid};

use super::authorized;
use super::context::RequestContext;
use crate::node::Broker;
use crate::topics::TopicMeta;

/// Metadata; this broker's endpoint is the one on the listener of `ctx`.
pub(super) fn handle(
    broker: &Broker,
    ctx: &RequestContext<'_>,
    req: MetadataRequest,
    version: i16,
) -> ResponseBody {
    let node = broker.config.server.node_id;
    let (host, port) = broker.advertised_host_port_on(ctx.listener());
    // Before v4 a Metadata request always allowed auto-creation.
    let auto_create =
        broker.config.topics.auto_create && (version < 4 || req.allow_auto_topic_creation);
    let mut topics = match req.topics {
        // v0: an empty list means all topics; v1+: null means all topics.
        None => all(broker),
        Some(t) if t.is_empty() && version == 0 => all(broker),
        Some(list) => list
            .into_iter()
            .map(|t| match t.name {
                // By name, unless the name is empty and a topic id is given: the Java client
                // asks by id with the name left empty ('') rather than null.
                Some(name) if t.topic_id == Uuid::ZERO || !name.is_empty() => {
                    lookup(broker, &name, auto_create)
                }
                _ => match broker.topic_by_id(&t.topic_id) {
                    Some(meta) => describe(broker, &meta),
                    None => MetadataResponseTopic {
                        error_code: ErrorCode::UNKNOWN_TOPIC_ID.code(),
                        // The name becomes nullable in v12 responses only.
                        name: (version < 12).then(|| KStr::from_static("")),
                        topic_id: t.topic_id,
                        ..Default::default()
                    },
                },
            })
            .collect(),
    };
    // v8+: asked for, each topic's operations (v8+) and the cluster's (v8-v10).
    let topic_ops = authorized::answer(
        version >= 8 && req.include_topic_authorized_operations,
        authorized::TOPIC,
    );
    for t in &mut topics {
        t.topic_authorized_operations = topic_ops;
    }
    let cluster_authorized_operations = authorized::answer(
        (8..=10).contains(&version) && req.include_cluster_authorized_operations,
        authorized::CLUSTER,
    );
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

fn all(broker: &Broker) -> Vec<MetadataResponseTopic> {
    broker
        .all_topics()
        .iter()
        .map(|t| describe(broker, t))
        .collect()
}

fn lookup(broker: &Broker, name: &KStr, auto_create: bool) -> MetadataResponseTopic {
    if let Some(meta) = broker.topic(name) {
        return describe(broker, &meta);
    }
    let unknown = |code: ErrorCode| MetadataResponseTopic {
        error_code: code.code(),
        name: Some(name.clone()),
        topic_id: Uuid::ZERO,
        ..Default::default()
    };
    if !auto_create {
        return unknown(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION);
    }
    match broker.create_topic(
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
    }
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
