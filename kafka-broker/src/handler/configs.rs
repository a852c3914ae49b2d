//! DescribeConfigs, AlterConfigs, IncrementalAlterConfigs for topics (and reading broker
//! configs; broker configs are static here).

use std::collections::BTreeMap;

use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym,
};
use kafka_protocol::messages::{
    AlterConfigsRequest, AlterConfigsResponse, DescribeConfigsRequest, DescribeConfigsResponse,
    IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse, ResponseBody,
    alter_configs_response, incremental_alter_configs_response,
};

use super::message;
use crate::broker::Broker;
use crate::error::BrokerError;
use crate::topics::{TOPIC_CONFIG_KEYS, TopicMeta, topic_default};

const RESOURCE_TOPIC: i8 = 2;
const RESOURCE_BROKER: i8 = 4;
const SOURCE_DYNAMIC_TOPIC: i8 = 1;
const SOURCE_STATIC_BROKER: i8 = 4;
const SOURCE_DEFAULT: i8 = 5;

/// One config value and where it comes from.
pub(crate) struct Entry {
    pub(crate) name: String,
    pub(crate) value: String,
    pub(crate) source: i8,
}

/// Kafka's config types (DescribeConfigs v3+): BOOLEAN 1, STRING 2, INT 3, LONG 5, DOUBLE 6,
/// LIST 7.
fn config_type(name: &str) -> i8 {
    match name {
        "unclean.leader.election.enable" | "auto.create.topics.enable" | "delete.topic.enable" => 1,
        "cleanup.policy" | "log.dirs" => 7,
        "compression.type" | "message.timestamp.type" => 2,
        "min.cleanable.dirty.ratio" | "log.cleaner.min.cleanable.ratio" => 6,
        "retention.ms"
        | "retention.bytes"
        | "segment.ms"
        | "flush.messages"
        | "flush.ms"
        | "delete.retention.ms"
        | "min.compaction.lag.ms"
        | "max.compaction.lag.ms"
        | "log.cleaner.delete.retention.ms"
        | "log.cleaner.min.compaction.lag.ms"
        | "log.cleaner.max.compaction.lag.ms"
        | "log.retention.ms"
        | "log.roll.ms"
        | "log.retention.bytes"
        | "log.retention.check.interval.ms"
        | "log.flush.interval.messages"
        | "log.flush.interval.ms"
        | "message.timestamp.before.max.ms"
        | "message.timestamp.after.max.ms"
        | "message.timestamp.difference.max.ms"
        | "log.message.timestamp.before.max.ms"
        | "log.message.timestamp.after.max.ms" => 5,
        _ => 3,
    }
}

/// The broker setting a topic config defaults to.
fn broker_synonym(topic_key: &str) -> Option<&'static str> {
    Some(match topic_key {
        "retention.ms" => "log.retention.ms",
        "retention.bytes" => "log.retention.bytes",
        "segment.bytes" => "log.segment.bytes",
        "segment.ms" => "log.roll.ms",
        "index.interval.bytes" => "log.index.interval.bytes",
        "max.message.bytes" => "message.max.bytes",
        "message.timestamp.type" => "log.message.timestamp.type",
        "message.timestamp.before.max.ms" => "log.message.timestamp.before.max.ms",
        "message.timestamp.after.max.ms" => "log.message.timestamp.after.max.ms",
        "message.timestamp.difference.max.ms" => "log.message.timestamp.difference.max.ms",
        "flush.messages" => "log.flush.interval.messages",
        "flush.ms" => "log.flush.interval.ms",
        "cleanup.policy" => "log.cleanup.policy",
        "delete.retention.ms" => "log.cleaner.delete.retention.ms",
        "min.compaction.lag.ms" => "log.cleaner.min.compaction.lag.ms",
        "max.compaction.lag.ms" => "log.cleaner.max.compaction.lag.ms",
        "min.cleanable.dirty.ratio" => "log.cleaner.min.cleanable.ratio",
        "min.insync.replicas" => "min.insync.replicas",
        "compression.type" => "compression.type",
        _ => return None,
    })
}

/// Synonyms in Kafka's order of precedence: the topic override, then the broker default.
fn synonyms(broker: &Broker, e: &Entry) -> Vec<DescribeConfigsSynonym> {
    let mut out = Vec::new();
    if e.source == SOURCE_DYNAMIC_TOPIC {
        out.push(DescribeConfigsSynonym {
            name: KStr::from(e.name.clone()),
            value: Some(KStr::from(e.value.clone())),
            source: SOURCE_DYNAMIC_TOPIC,
            ..Default::default()
        });
    }
    if let (Some(syn), Some(default)) = (
        broker_synonym(&e.name),
        topic_default(&broker.config, &e.name),
    ) {
        out.push(DescribeConfigsSynonym {
            name: KStr::from_static(syn),
            value: Some(KStr::from(default)),
            source: SOURCE_DEFAULT,
            ..Default::default()
        });
    } else if e.source != SOURCE_DYNAMIC_TOPIC {
        out.push(DescribeConfigsSynonym {
            name: KStr::from(e.name.clone()),
            value: Some(KStr::from(e.value.clone())),
            source: e.source,
            ..Default::default()
        });
    }
    out
}

/// Every config of a topic: its overrides, else the broker's defaults.
pub(crate) fn topic_entries(broker: &Broker, meta: &TopicMeta) -> Vec<Entry> {
    TOPIC_CONFIG_KEYS
        .iter()
        .filter_map(|k| {
            let (value, source) = match meta.configs.get(*k) {
                Some(v) => (v.clone(), SOURCE_DYNAMIC_TOPIC),
                None => (topic_default(&broker.config, k)?, SOURCE_DEFAULT),
            };
            Some(Entry {
                name: (*k).to_owned(),
                value,
                source,
            })
        })
        .collect()
}

fn broker_entries(broker: &Broker) -> Vec<Entry> {
    let c = &broker.config;
    let opt = |v: Option<u64>| v.map_or_else(|| i64::MAX.to_string(), |n| n.to_string());
    [
        ("node.id", c.node_id.to_string()),
        ("broker.id", c.node_id.to_string()),
        ("log.dirs", c.data_dir.display().to_string()),
        ("num.partitions", c.num_partitions.to_string()),
        (
            "default.replication.factor",
            c.default_replication_factor.to_string(),
        ),
        (
            "auto.create.topics.enable",
            c.auto_create_topics.to_string(),
        ),
        ("delete.topic.enable", c.delete_topic_enable.to_string()),
        ("log.segment.bytes", c.segment_bytes.to_string()),
        ("log.roll.ms", c.roll_ms.to_string()),
        ("log.retention.ms", c.retention_ms.to_string()),
        ("log.retention.bytes", c.retention_bytes.to_string()),
        (
            "log.retention.check.interval.ms",
            c.retention_check_interval_ms.to_string(),
        ),
        (
            "log.flush.interval.messages",
            opt(c.flush_interval_messages),
        ),
        ("log.flush.interval.ms", opt(c.flush_interval_ms)),
        (
            "log.index.interval.bytes",
            c.index_interval_bytes.to_string(),
        ),
        ("message.max.bytes", c.message_max_bytes.to_string()),
        (
            "log.message.timestamp.before.max.ms",
            c.message_timestamp_before_max_ms.to_string(),
        ),
        (
            "log.message.timestamp.after.max.ms",
            c.message_timestamp_after_max_ms.to_string(),
        ),
        (
            "socket.request.max.bytes",
            c.socket_request_max_bytes.to_string(),
        ),
        ("max.connections", c.max_connections.to_string()),
        (
            "offsets.topic.num.partitions",
            c.offsets_topic_num_partitions.to_string(),
        ),
    ]
    .into_iter()
    .map(|(k, v)| Entry {
        name: k.to_owned(),
        value: v,
        source: SOURCE_STATIC_BROKER,
    })
    .collect()
}

pub(super) fn describe(broker: &Broker, req: DescribeConfigsRequest, version: i16) -> ResponseBody {
    let results = req
        .resources
        .into_iter()
        .map(|r| {
            let (entries, read_only) = match r.resource_type {
                RESOURCE_TOPIC => match broker.topic(&r.resource_name) {
                    Some(meta) => (Ok(topic_entries(broker, &meta)), false),
                    None => (
                        Err(BrokerError::kafka(
                            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                            format!("no topic {}", r.resource_name),
                        )),
                        false,
                    ),
                },
                RESOURCE_BROKER
                    if r.resource_name.is_empty()
                        || r.resource_name.as_str() == broker.config.node_id.to_string() =>
                {
                    (Ok(broker_entries(broker)), true)
                }
                RESOURCE_BROKER => (
                    Err(BrokerError::kafka(
                        ErrorCode::INVALID_REQUEST,
                        format!("unknown broker {}", r.resource_name),
                    )),
                    true,
                ),
                other => (
                    Err(BrokerError::kafka(
                        ErrorCode::INVALID_REQUEST,
                        format!("unsupported resource type {other}"),
                    )),
                    true,
                ),
            };
            match entries {
                Ok(entries) => DescribeConfigsResult {
                    resource_type: r.resource_type,
                    resource_name: r.resource_name,
                    configs: entries
                        .into_iter()
                        .filter(|e| {
                            r.configuration_keys
                                .as_ref()
                                .is_none_or(|keys| keys.iter().any(|k| k.as_str() == e.name))
                        })
                        .map(|e| DescribeConfigsResourceResult {
                            synonyms: if version >= 1 && req.include_synonyms {
                                synonyms(broker, &e)
                            } else {
                                Vec::new()
                            },
                            config_type: if version >= 3 {
                                config_type(&e.name)
                            } else {
                                0
                            },
                            name: KStr::from(e.name),
                            value: Some(KStr::from(e.value)),
                            read_only,
                            is_default: version == 0 && e.source == SOURCE_DEFAULT,
                            config_source: if version >= 1 { e.source } else { -1 },
                            is_sensitive: false,
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                },
                Err(e) => DescribeConfigsResult {
                    error_code: e.error_code().code(),
                    error_message: message(&e),
                    resource_type: r.resource_type,
                    resource_name: r.resource_name,
                    ..Default::default()
                },
            }
        })
        .collect();
    ResponseBody::DescribeConfigs(DescribeConfigsResponse {
        results,
        ..Default::default()
    })
}

/// Applies new overrides to a topic resource (`validate_only` checks only).
fn apply_topic(
    broker: &Broker,
    resource_type: i8,
    name: &str,
    validate_only: bool,
    change: impl FnOnce(&mut BTreeMap<String, String>) -> Result<(), BrokerError>,
) -> Result<(), BrokerError> {
    if resource_type != RESOURCE_TOPIC {
        return Err(BrokerError::kafka(
            ErrorCode::INVALID_REQUEST,
            "only topic configs can be altered on this broker",
        ));
    }
    let meta = broker.topic(name).ok_or_else(|| {
        BrokerError::kafka(
            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
            format!("no topic {name}"),
        )
    })?;
    let mut configs = meta.configs.clone();
    change(&mut configs)?;
    for (k, v) in &configs {
        crate::topics::validate_topic_config(k, v)?;
    }
    if validate_only {
        return Ok(());
    }
    broker.set_topic_configs(name, configs)
}

pub(super) fn alter(broker: &Broker, req: AlterConfigsRequest) -> ResponseBody {
    let responses = req
        .resources
        .into_iter()
        .map(|r| {
            // AlterConfigs replaces the whole set of overrides.
            let result = apply_topic(
                broker,
                r.resource_type,
                &r.resource_name,
                req.validate_only,
                |c| {
                    c.clear();
                    for e in &r.configs {
                        if let Some(v) = &e.value {
                            c.insert(e.name.to_string(), v.to_string());
                        }
                    }
                    Ok(())
                },
            );
            let (error_code, error_message) = match &result {
                Ok(()) => (0, None),
                Err(e) => (e.error_code().code(), message(e)),
            };
            alter_configs_response::AlterConfigsResourceResponse {
                error_code,
                error_message,
                resource_type: r.resource_type,
                resource_name: r.resource_name,
                ..Default::default()
            }
        })
        .collect();
    ResponseBody::AlterConfigs(AlterConfigsResponse {
        responses,
        ..Default::default()
    })
}

pub(super) fn incremental_alter(
    broker: &Broker,
    req: IncrementalAlterConfigsRequest,
) -> ResponseBody {
    let responses = req
        .resources
        .into_iter()
        .map(|r| {
            let result = apply_topic(
                broker,
                r.resource_type,
                &r.resource_name,
                req.validate_only,
                |c| {
                    for e in &r.configs {
                        let name = e.name.to_string();
                        let value = e
                            .value
                            .as_ref()
                            .map(ToString::to_string)
                            .unwrap_or_default();
                        match e.config_operation {
                            0 => {
                                c.insert(name, value);
                            }
                            1 => {
                                c.remove(&name);
                            }
                            2 | 3 => {
                                // APPEND / SUBTRACT on list-valued configs (cleanup.policy).
                                let mut items: Vec<String> = c
                                    .get(&name)
                                    .cloned()
                                    .or_else(|| topic_default(&broker.config, &name))
                                    .map(|v| {
                                        v.split(',')
                                            .map(|s| s.trim().to_owned())
                                            .filter(|s| !s.is_empty())
                                            .collect()
                                    })
                                    .unwrap_or_default();
                                for v in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                                    if e.config_operation == 2 {
                                        if !items.iter().any(|i| i == v) {
                                            items.push(v.to_owned());
                                        }
                                    } else {
                                        items.retain(|i| i != v);
                                    }
                                }
                                c.insert(name, items.join(","));
                            }
                            other => {
                                return Err(BrokerError::kafka(
                                    ErrorCode::INVALID_REQUEST,
                                    format!("unknown config operation {other}"),
                                ));
                            }
                        }
                    }
                    Ok(())
                },
            );
            let (error_code, error_message) = match &result {
                Ok(()) => (0, None),
                Err(e) => (e.error_code().code(), message(e)),
            };
            incremental_alter_configs_response::AlterConfigsResourceResponse {
                error_code,
                error_message,
                resource_type: r.resource_type,
                resource_name: r.resource_name,
                ..Default::default()
            }
        })
        .collect();
    ResponseBody::IncrementalAlterConfigs(IncrementalAlterConfigsResponse {
        responses,
        ..Default::default()
    })
}
