//! IncrementalAlterConfigs and AlterConfigs (Kafka's `ConfigurationControlManager`).
//!
//! Topic configs (resource type 2) are checked whole with [`TopicConfig::new`] (INVALID_CONFIG
//! naming the key); an internal topic must stay compacted. Broker configs (resource type 4,
//! name a broker id or `""` for the cluster-wide default) take the broker keys that are topic
//! defaults (`log.retention.ms`, `unclean.leader.election.enable`, ...), each checked by its
//! topic key's parser. A change is the `ConfigRecord`s of the keys that differ: a new or
//! changed value, or a null value that deletes the key.

use std::collections::{BTreeMap, BTreeSet};

use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::{
    AlterConfigsRequest, AlterConfigsResponse, IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse, alter_configs_response, incremental_alter_configs_response,
};
use kafka_protocol::metadata::{ConfigRecord, MetadataRecord};

use super::{Controller, Outcome, error_fields};
use crate::cluster::image::{MetadataImage, RESOURCE_BROKER, RESOURCE_TOPIC};
use crate::config::BrokerConfig;
use crate::config::describe::ConfigType;
use crate::config::topic::{self as topic_config, AlterOp, TopicConfig};
use crate::error::BrokerError;
use crate::topics::is_internal;

/// A resource's overrides, before and after.
type Overrides = BTreeMap<String, String>;

fn refused(code: ErrorCode, message: impl Into<String>) -> BrokerError {
    BrokerError::kafka(code, message)
}

/// The topic key a dynamic broker key sets the default of.
fn broker_key_spec(key: &str) -> Option<&'static topic_config::KeySpec> {
    topic_config::KEYS
        .iter()
        .find(|k| k.broker_key == Some(key))
}

/// Checks one broker-level value through its topic key's parser.
fn check_broker_value(key: &str, value: &str) -> Result<(), BrokerError> {
    let Some(spec) = broker_key_spec(key) else {
        return Err(refused(
            ErrorCode::INVALID_CONFIG,
            format!(
                "broker config {key} cannot be altered: only the topic defaults can (such as \
                 log.retention.ms or unclean.leader.election.enable)"
            ),
        ));
    };
    topic_config::parse_broker_default(key, spec.name, value).map(|_| ())
}

/// The `ConfigRecord`s that turn `old` into `new`.
fn diff(
    resource_type: i8,
    resource: &KStr,
    old: &Overrides,
    new: &Overrides,
) -> Vec<MetadataRecord> {
    let record = |name: &str, value: Option<&String>| {
        MetadataRecord::Config(ConfigRecord {
            resource_type,
            resource_name: resource.clone(),
            name: KStr::from(name.to_owned()),
            value: value.map(|v| KStr::from(v.clone())),
            ..Default::default()
        })
    };
    let removed = old
        .keys()
        .filter(|k| !new.contains_key(*k))
        .map(|k| record(k, None));
    let set = new
        .iter()
        .filter(|(k, v)| old.get(*k) != Some(*v))
        .map(|(k, v)| record(k, Some(v)));
    removed.chain(set).collect()
}

/// How to turn a resource's overrides into new ones (the broker config, the resource type, the
/// current overrides).
type Change<'a> = dyn FnOnce(&BrokerConfig, i8, &Overrides) -> Result<Overrides, BrokerError> + 'a;

/// Marks every resource named more than once (Kafka refuses them all).
fn duplicates<'a>(resources: impl Iterator<Item = (i8, &'a str)>) -> BTreeSet<(i8, &'a str)> {
    let mut seen = BTreeSet::new();
    let mut twice = BTreeSet::new();
    for r in resources {
        if !seen.insert(r) {
            twice.insert(r);
        }
    }
    twice
}

impl Controller {
    /// The records for one resource's change, after checking it.
    fn alter_resource(
        &self,
        image: &MetadataImage,
        resource_type: i8,
        resource: &KStr,
        change: Box<Change<'_>>,
    ) -> Result<Vec<MetadataRecord>, BrokerError> {
        let name = resource.as_str();
        let broker = &self.config.broker;
        match resource_type {
            RESOURCE_TOPIC => {
                if image.topic(name).is_none() {
                    return Err(refused(
                        ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                        format!("no topic {name}"),
                    ));
                }
            }
            RESOURCE_BROKER => {
                if !name.is_empty() && name.parse::<i32>().map_or(true, |id| id < 0) {
                    return Err(refused(
                        ErrorCode::INVALID_REQUEST,
                        format!(
                            "broker resource {name:?} is not a broker id (nor \"\" for the cluster default)"
                        ),
                    ));
                }
            }
            other => {
                return Err(refused(
                    ErrorCode::INVALID_REQUEST,
                    format!("configs of resource type {other} cannot be altered here"),
                ));
            }
        }
        let old = image
            .configs(resource_type, name)
            .cloned()
            .unwrap_or_default();
        let new = change(broker, resource_type, &old)?;
        if resource_type == RESOURCE_TOPIC {
            let typed = TopicConfig::new(broker, &new)?;
            if is_internal(name) && !typed.produce_rules().compacted {
                return Err(refused(
                    ErrorCode::INVALID_CONFIG,
                    format!("{name} is an internal topic: its cleanup.policy must include compact"),
                ));
            }
        } else {
            for (k, v) in &new {
                if old.get(k) != Some(v) {
                    check_broker_value(k, v)?;
                }
            }
        }
        Ok(diff(resource_type, resource, &old, &new))
    }

    /// IncrementalAlterConfigs: SET, DELETE, APPEND and SUBTRACT (list keys) per key.
    pub fn incremental_alter_configs(
        &mut self,
        image: &MetadataImage,
        req: &IncrementalAlterConfigsRequest,
        _version: i16,
    ) -> Outcome<IncrementalAlterConfigsResponse> {
        let twice = duplicates(
            req.resources
                .iter()
                .map(|r| (r.resource_type, r.resource_name.as_str())),
        );
        let mut records = Vec::new();
        let mut responses = Vec::with_capacity(req.resources.len());
        for r in &req.resources {
            let result = if twice.contains(&(r.resource_type, r.resource_name.as_str())) {
                Err(refused(
                    ErrorCode::INVALID_REQUEST,
                    "the resource is named more than once",
                ))
            } else {
                let resource_name = r.resource_name.as_str();
                let change = move |broker: &BrokerConfig, resource_type: i8, old: &Overrides| {
                    let ops = AlterOp::from_request(&r.configs)?;
                    if resource_type == RESOURCE_TOPIC {
                        TopicConfig::lenient(broker, resource_name, old).altered(broker, &ops)
                    } else {
                        broker_altered(broker, old, &ops)
                    }
                };
                self.alter_resource(image, r.resource_type, &r.resource_name, Box::new(change))
            };
            let (error_code, error_message) = match result {
                Ok(changes) => {
                    if !req.validate_only {
                        records.extend(changes);
                    }
                    (0, None)
                }
                Err(e) => error_fields(&e),
            };
            responses.push(
                incremental_alter_configs_response::AlterConfigsResourceResponse {
                    error_code,
                    error_message,
                    resource_type: r.resource_type,
                    resource_name: r.resource_name.clone(),
                    ..Default::default()
                },
            );
        }
        Outcome::new(
            records,
            IncrementalAlterConfigsResponse {
                responses,
                ..Default::default()
            },
        )
    }

    /// AlterConfigs: each resource's overrides become exactly the ones given (a null value
    /// leaves the key at its default).
    pub fn alter_configs(
        &mut self,
        image: &MetadataImage,
        req: &AlterConfigsRequest,
        _version: i16,
    ) -> Outcome<AlterConfigsResponse> {
        let twice = duplicates(
            req.resources
                .iter()
                .map(|r| (r.resource_type, r.resource_name.as_str())),
        );
        let mut records = Vec::new();
        let mut responses = Vec::with_capacity(req.resources.len());
        for r in &req.resources {
            let result = if twice.contains(&(r.resource_type, r.resource_name.as_str())) {
                Err(refused(
                    ErrorCode::INVALID_REQUEST,
                    "the resource is named more than once",
                ))
            } else {
                let change = move |_: &BrokerConfig, _: i8, _: &Overrides| {
                    crate::config::topic::no_duplicates(r.configs.iter().map(|e| e.name.as_str()))?;
                    Ok(r.configs
                        .iter()
                        .filter_map(|e| Some((e.name.to_string(), e.value.as_ref()?.to_string())))
                        .collect())
                };
                self.alter_resource(image, r.resource_type, &r.resource_name, Box::new(change))
            };
            let (error_code, error_message) = match result {
                Ok(changes) => {
                    if !req.validate_only {
                        records.extend(changes);
                    }
                    (0, None)
                }
                Err(e) => error_fields(&e),
            };
            responses.push(alter_configs_response::AlterConfigsResourceResponse {
                error_code,
                error_message,
                resource_type: r.resource_type,
                resource_name: r.resource_name.clone(),
                ..Default::default()
            });
        }
        Outcome::new(
            records,
            AlterConfigsResponse {
                responses,
                ..Default::default()
            },
        )
    }
}

/// A broker resource's overrides after `ops`. APPEND and SUBTRACT work on list keys, from the
/// current override or else the broker's own setting (through the topic key's list logic).
fn broker_altered(
    broker: &BrokerConfig,
    old: &Overrides,
    ops: &[AlterOp<'_>],
) -> Result<Overrides, BrokerError> {
    let mut out = old.clone();
    for op in ops {
        match *op {
            AlterOp::Set(k, v) => {
                out.insert(k.to_owned(), v.to_owned());
            }
            AlterOp::Delete(k) => {
                out.remove(k);
            }
            AlterOp::Append(k, v) | AlterOp::Subtract(k, v) => {
                let spec = broker_key_spec(k)
                    .filter(|s| s.config_type == ConfigType::List)
                    .ok_or_else(|| {
                        refused(
                            ErrorCode::INVALID_CONFIG,
                            format!("APPEND and SUBTRACT need a list config, not {k}"),
                        )
                    })?;
                let mut base = BTreeMap::new();
                if let Some(current) = out.get(k) {
                    base.insert(spec.name.to_owned(), current.clone());
                }
                let topic_op = match op {
                    AlterOp::Append(..) => AlterOp::Append(spec.name, v),
                    _ => AlterOp::Subtract(spec.name, v),
                };
                let altered =
                    TopicConfig::lenient(broker, "", &base).altered(broker, &[topic_op])?;
                if let Some(value) = altered.get(spec.name) {
                    out.insert(k.to_owned(), value.clone());
                }
            }
        }
    }
    Ok(out)
}
