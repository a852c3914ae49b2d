//! DescribeConfigs, AlterConfigs, IncrementalAlterConfigs for topics (and reading broker
//! configs; broker configs are static here). What is listed, with which type, source and
//! synonyms, comes from the configuration's key tables ([`crate::config::describe`]); this
//! file turns it into the answers.
//!
//! Authorization, per resource as Kafka's `ConfigHelper` and controller check it: describing
//! needs DESCRIBE_CONFIGS, altering (both APIs) ALTER_CONFIGS, on the topic for a topic
//! (else TOPIC_AUTHORIZATION_FAILED), on the cluster for a broker, broker logger or client
//! metrics resource (else CLUSTER_AUTHORIZATION_FAILED), on the group for a group (else
//! GROUP_AUTHORIZATION_FAILED); a refused resource is answered with that error alone, before
//! any other check (an unknown topic is not told apart).

use std::collections::BTreeMap;

use kafka_auth::acl::AclOperation;
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

use super::authz::Authz;
use super::message;
use crate::config::describe::{DescribedConfig, SOURCE_DEFAULT};
use crate::config::topic::{AlterOp, TopicConfig, no_duplicates};
use crate::error::BrokerError;
use crate::node::Broker;
use crate::topics::TopicMeta;

const RESOURCE_TOPIC: i8 = 2;
const RESOURCE_BROKER: i8 = 4;
const RESOURCE_BROKER_LOGGER: i8 = 8;
const RESOURCE_CLIENT_METRICS: i8 = 16;
const RESOURCE_GROUP: i8 = 32;

/// Kafka's authorization of `op` on a config resource: its error when refused. A resource
/// type Kafka does not know is not checked here (it is answered with its own error). Also
/// what a broker of a cluster checks before forwarding an alteration (`cluster/screen.rs`).
pub(super) fn refused(
    authz: &(impl super::groups::Permits + ?Sized),
    op: AclOperation,
    resource_type: i8,
    name: &str,
) -> Option<BrokerError> {
    let (allowed, code) = match resource_type {
        RESOURCE_BROKER | RESOURCE_BROKER_LOGGER | RESOURCE_CLIENT_METRICS => {
            (authz.cluster(op), ErrorCode::CLUSTER_AUTHORIZATION_FAILED)
        }
        RESOURCE_TOPIC => (authz.topic(op, name), ErrorCode::TOPIC_AUTHORIZATION_FAILED),
        RESOURCE_GROUP => (authz.group(op, name), ErrorCode::GROUP_AUTHORIZATION_FAILED),
        _ => return None,
    };
    (!allowed).then(|| BrokerError::kafka(code, code.message()))
}

/// Every config of a topic (CreateTopics v5+ lists them): its overrides, else the broker's
/// defaults.
pub(crate) fn topic_entries(broker: &Broker, meta: &TopicMeta) -> Vec<DescribedConfig> {
    let typed = broker
        .topic_config(&meta.name)
        .filter(|t| t.overrides() == &meta.configs)
        .map_or_else(
            || TopicConfig::lenient(&broker.config, &meta.name, &meta.configs),
            |t| (*t).clone(),
        );
    typed.describe(&broker.config)
}

/// One entry of a DescribeConfigs answer.
fn described(
    e: DescribedConfig,
    read_only: bool,
    with_synonyms: bool,
    version: i16,
) -> DescribeConfigsResourceResult {
    DescribeConfigsResourceResult {
        synonyms: if version >= 1 && with_synonyms {
            e.synonyms
                .into_iter()
                .map(|s| DescribeConfigsSynonym {
                    name: KStr::from(s.name.into_owned()),
                    value: (!e.sensitive).then(|| KStr::from(s.value)),
                    source: s.source,
                    ..Default::default()
                })
                .collect()
        } else {
            Vec::new()
        },
        config_type: if version >= 3 { e.config_type as i8 } else { 0 },
        name: KStr::from(e.name.into_owned()),
        value: (!e.sensitive).then(|| KStr::from(e.value)),
        read_only,
        is_default: version == 0 && e.source == SOURCE_DEFAULT,
        config_source: if version >= 1 { e.source } else { -1 },
        is_sensitive: e.sensitive,
        ..Default::default()
    }
}

pub(super) fn describe(
    broker: &Broker,
    authz: &Authz<'_>,
    req: DescribeConfigsRequest,
    version: i16,
) -> ResponseBody {
    let results = req
        .resources
        .into_iter()
        .map(|r| {
            let denied = refused(
                authz,
                AclOperation::DescribeConfigs,
                r.resource_type,
                &r.resource_name,
            );
            let entries: Result<Vec<(DescribedConfig, bool)>, BrokerError> = match denied {
                Some(e) => Err(e),
                None => match r.resource_type {
                    RESOURCE_TOPIC => match broker.topic_config(&r.resource_name) {
                        Some(typed) => Ok(typed
                            .describe(&broker.config)
                            .into_iter()
                            .map(|e| (e, false))
                            .collect()),
                        None => Err(BrokerError::kafka(
                            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                            format!("no topic {}", r.resource_name),
                        )),
                    },
                    RESOURCE_BROKER
                        if r.resource_name.is_empty()
                            || r.resource_name.as_str()
                                == broker.config.server.node_id.to_string() =>
                    {
                        Ok(crate::config::describe::broker(&broker.config)
                            .into_iter()
                            .map(|e| (e, true))
                            .collect())
                    }
                    RESOURCE_BROKER => Err(BrokerError::kafka(
                        ErrorCode::INVALID_REQUEST,
                        format!("unknown broker {}", r.resource_name),
                    )),
                    other => Err(BrokerError::kafka(
                        ErrorCode::INVALID_REQUEST,
                        format!("unsupported resource type {other}"),
                    )),
                },
            };
            match entries {
                Ok(entries) => DescribeConfigsResult {
                    resource_type: r.resource_type,
                    resource_name: r.resource_name,
                    configs: entries
                        .into_iter()
                        .filter(|(e, _)| {
                            r.configuration_keys
                                .as_ref()
                                .is_none_or(|keys| keys.iter().any(|k| k.as_str() == e.name))
                        })
                        .map(|(e, read_only)| {
                            described(e, read_only, req.include_synonyms, version)
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

/// Applies new overrides to a topic resource: `change` turns the topic's current config into
/// the new overrides, which are parsed and checked whole (`validate_only` stops there).
fn apply_topic(
    broker: &Broker,
    resource_type: i8,
    name: &str,
    validate_only: bool,
    change: impl FnOnce(&TopicConfig) -> Result<BTreeMap<String, String>, BrokerError>,
) -> Result<(), BrokerError> {
    if resource_type != RESOURCE_TOPIC {
        return Err(BrokerError::kafka(
            ErrorCode::INVALID_REQUEST,
            "only topic configs can be altered on this broker",
        ));
    }
    broker.alter_topic_configs(name, validate_only, change)
}

pub(super) fn alter(broker: &Broker, authz: &Authz<'_>, req: AlterConfigsRequest) -> ResponseBody {
    let responses = req
        .resources
        .into_iter()
        .map(|r| {
            let denied = refused(
                authz,
                AclOperation::AlterConfigs,
                r.resource_type,
                &r.resource_name,
            );
            // AlterConfigs replaces the whole set of overrides; a null value leaves the key
            // at its default.
            let result = match denied {
                Some(e) => Err(e),
                None => apply_topic(
                    broker,
                    r.resource_type,
                    &r.resource_name,
                    req.validate_only,
                    |_| {
                        no_duplicates(r.configs.iter().map(|e| e.name.as_str()))?;
                        Ok(r.configs
                            .iter()
                            .filter_map(|e| {
                                Some((e.name.to_string(), e.value.as_ref()?.to_string()))
                            })
                            .collect())
                    },
                ),
            };
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
    authz: &Authz<'_>,
    req: IncrementalAlterConfigsRequest,
) -> ResponseBody {
    let responses = req
        .resources
        .into_iter()
        .map(|r| {
            let denied = refused(
                authz,
                AclOperation::AlterConfigs,
                r.resource_type,
                &r.resource_name,
            );
            let result = match denied {
                Some(e) => Err(e),
                None => apply_topic(
                    broker,
                    r.resource_type,
                    &r.resource_name,
                    req.validate_only,
                    |current| {
                        let ops = AlterOp::from_request(&r.configs)?;
                        current.altered(&broker.config, &ops)
                    },
                ),
            };
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
