//! Describing and altering topic and broker configs.

use std::collections::BTreeMap;

use futures::future::BoxFuture;
use kafka_protocol::KStr;
use kafka_protocol::messages::{
    AlterConfigsRequest, ApiKey, DescribeConfigsRequest, IncrementalAlterConfigsRequest,
    RequestBody, alter_configs_request, describe_configs_request, describe_configs_response,
    incremental_alter_configs_request,
};

use super::{ANY, Admin, Replies, Retry, Routes, check_code, duplicate, duplicates, expect_body};
use crate::connection::Connection;
use crate::error::NetError;

/// The kinds of config resources this client handles (Kafka's `ConfigResource.Type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ConfigResourceType {
    Topic,
    /// A broker by id; the empty name is the cluster-wide default.
    Broker,
    BrokerLogger,
}

impl ConfigResourceType {
    fn code(self) -> i8 {
        match self {
            Self::Topic => 2,
            Self::Broker => 4,
            Self::BrokerLogger => 8,
        }
    }
}

/// A topic or broker whose configs to read or change.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ConfigResource {
    pub kind: ConfigResourceType,
    pub name: String,
}

impl ConfigResource {
    pub fn topic(name: impl Into<String>) -> Self {
        Self {
            kind: ConfigResourceType::Topic,
            name: name.into(),
        }
    }

    pub fn broker(id: i32) -> Self {
        Self {
            kind: ConfigResourceType::Broker,
            name: id.to_string(),
        }
    }

    /// The cluster-wide default of broker configs.
    pub fn broker_default() -> Self {
        Self {
            kind: ConfigResourceType::Broker,
            name: String::new(),
        }
    }

    /// Broker resources go to that broker; the rest to any broker.
    fn target(&self) -> i32 {
        match self.kind {
            ConfigResourceType::Topic => ANY,
            _ => self.name.parse().unwrap_or(ANY),
        }
    }

    fn key(&self) -> (i8, &str) {
        (self.kind.code(), &self.name)
    }
}

/// Where a config value comes from (DescribeConfigs v1+; v0 only says default or not).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigSource {
    Unknown,
    DynamicTopic,
    DynamicBroker,
    DynamicDefaultBroker,
    StaticBroker,
    Default,
    DynamicBrokerLogger,
    Other(i8),
}

impl ConfigSource {
    fn from_code(code: i8) -> Self {
        match code {
            -1 | 0 => Self::Unknown,
            1 => Self::DynamicTopic,
            2 => Self::DynamicBroker,
            3 => Self::DynamicDefaultBroker,
            4 => Self::StaticBroker,
            5 => Self::Default,
            6 => Self::DynamicBrokerLogger,
            other => Self::Other(other),
        }
    }
}

/// One config of a resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigEntry {
    pub name: String,
    /// `None` for sensitive values (and for unset ones).
    pub value: Option<String>,
    pub read_only: bool,
    pub is_default: bool,
    pub source: ConfigSource,
    pub is_sensitive: bool,
}

impl ConfigEntry {
    /// From wire fields; `is_default` is only on the wire in DescribeConfigs v0 (else it is
    /// derived from the source).
    pub(super) fn new(
        name: &KStr,
        value: Option<&KStr>,
        read_only: bool,
        is_default: Option<bool>,
        source: i8,
        is_sensitive: bool,
    ) -> Self {
        let source = match is_default {
            Some(true) => ConfigSource::Default,
            Some(false) => ConfigSource::Unknown,
            None => ConfigSource::from_code(source),
        };
        Self {
            name: name.to_string(),
            value: value.map(ToString::to_string),
            read_only,
            is_default: is_default.unwrap_or(source == ConfigSource::Default),
            source,
            is_sensitive,
        }
    }

    /// Whether the value is set on `resource` itself (what AlterConfigs replaces).
    fn set_on(&self, resource: &ConfigResource) -> bool {
        match (resource.kind, self.source) {
            (ConfigResourceType::Topic, ConfigSource::DynamicTopic) => true,
            // DescribeConfigs v0 predates dynamic broker configs: a non-default topic value
            // is a topic override.
            (ConfigResourceType::Topic, ConfigSource::Unknown) => !self.is_default,
            (ConfigResourceType::Broker, ConfigSource::DynamicBroker) => !resource.name.is_empty(),
            (ConfigResourceType::Broker, ConfigSource::DynamicDefaultBroker) => {
                resource.name.is_empty()
            }
            (ConfigResourceType::BrokerLogger, ConfigSource::DynamicBrokerLogger) => true,
            _ => false,
        }
    }
}

/// The configs of one resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigResourceResult {
    pub resource: ConfigResource,
    pub entries: Vec<ConfigEntry>,
}

impl ConfigResourceResult {
    /// An entry by name.
    pub fn get(&self, name: &str) -> Option<&ConfigEntry> {
        self.entries.iter().find(|e| e.name == name)
    }
}

/// What an incremental alteration does to one config.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpType {
    Set = 0,
    /// Back to the default.
    Delete = 1,
    /// Add items to a list config.
    Append = 2,
    /// Remove items from a list config.
    Subtract = 3,
}

/// One change of an IncrementalAlterConfigs call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterConfigOp {
    pub name: String,
    pub op: OpType,
    /// The value (for a list, comma-separated items); `None` for `Delete`.
    pub value: Option<String>,
}

impl AlterConfigOp {
    pub fn set(name: impl Into<String>, value: impl Into<String>) -> Self {
        Self::with(name, OpType::Set, Some(value.into()))
    }

    pub fn delete(name: impl Into<String>) -> Self {
        Self::with(name, OpType::Delete, None)
    }

    pub fn append(name: impl Into<String>, items: impl Into<String>) -> Self {
        Self::with(name, OpType::Append, Some(items.into()))
    }

    pub fn subtract(name: impl Into<String>, items: impl Into<String>) -> Self {
        Self::with(name, OpType::Subtract, Some(items.into()))
    }

    fn with(name: impl Into<String>, op: OpType, value: Option<String>) -> Self {
        Self {
            name: name.into(),
            op,
            value,
        }
    }
}

fn kstr(s: &str) -> KStr {
    KStr::from(s.to_owned())
}

fn resource_route<'a>(
    resources: Vec<&ConfigResource>,
) -> impl Fn(u32, Vec<usize>) -> BoxFuture<'a, Routes> {
    let targets: Vec<i32> = resources.iter().map(|r| r.target()).collect();
    move |_round, pending| {
        let routes = pending
            .into_iter()
            .map(|i| (i, Ok(targets.get(i).copied().unwrap_or(ANY))))
            .collect();
        Box::pin(std::future::ready(routes))
    }
}

impl Admin {
    /// Describes the configs of topics and brokers (broker resources are asked of that
    /// broker). One result per resource, in order.
    pub async fn describe_configs(
        &self,
        resources: &[ConfigResource],
    ) -> Vec<Result<ConfigResourceResult, NetError>> {
        let dup = &duplicates(resources.iter());
        let send = |node: i32, idx: Vec<usize>| -> BoxFuture<'_, Replies<ConfigResourceResult>> {
            Box::pin(async move {
                let conn = self.conn_for(node).await?;
                let (dups, ok): (Vec<usize>, Vec<usize>) = idx.into_iter().partition(|i| dup[*i]);
                let mut out: Vec<_> = dups
                    .into_iter()
                    .map(|i| (i, Err(duplicate("resource", &resources[i].name))))
                    .collect();
                let asked: Vec<(usize, &ConfigResource)> =
                    ok.into_iter().map(|i| (i, &resources[i])).collect();
                out.extend(describe_on(&conn, &asked).await?);
                Ok(out)
            })
        };
        let route = resource_route(resources.iter().collect());
        self.fan_out(
            "DescribeConfigs",
            Retry::Transport,
            resources.len(),
            route,
            send,
        )
        .await
    }

    /// Changes configs one by one (set, delete, append, subtract), leaving the others as
    /// they are. A broker without IncrementalAlterConfigs gets AlterConfigs instead, with
    /// the resource's current settings (read first) and the changes merged in; that fails
    /// for a resource with a sensitive setting the change does not replace, whose value
    /// cannot be read back. One `(resource, result)` per resource, in order.
    pub async fn incremental_alter_configs(
        &self,
        changes: &[(ConfigResource, Vec<AlterConfigOp>)],
        validate_only: bool,
    ) -> Vec<(ConfigResource, Result<(), NetError>)> {
        let dup = &duplicates(changes.iter().map(|(r, _)| r));
        let send = |node: i32, idx: Vec<usize>| -> BoxFuture<'_, Replies<()>> {
            Box::pin(async move {
                let conn = self.conn_for(node).await?;
                let (dups, ok): (Vec<usize>, Vec<usize>) = idx.into_iter().partition(|i| dup[*i]);
                let mut out: Vec<_> = dups
                    .into_iter()
                    .map(|i| (i, Err(duplicate("resource", &changes[i].0.name))))
                    .collect();
                let reply = match conn.version_for(ApiKey::IncrementalAlterConfigs) {
                    Ok(v) => incremental(&conn, v, changes, &ok, validate_only).await?,
                    Err(_) => legacy_alter(&conn, changes, &ok, validate_only).await?,
                };
                out.extend(reply);
                Ok(out)
            })
        };
        let route = resource_route(changes.iter().map(|(r, _)| r).collect());
        let results = self
            .fan_out(
                "IncrementalAlterConfigs",
                Retry::Transport,
                changes.len(),
                route,
                send,
            )
            .await;
        changes
            .iter()
            .map(|(r, _)| r.clone())
            .zip(results)
            .collect()
    }
}

/// One DescribeConfigs request on `conn` for `asked` (item index, resource).
async fn describe_on(
    conn: &Connection,
    asked: &[(usize, &ConfigResource)],
) -> Replies<ConfigResourceResult> {
    if asked.is_empty() {
        return Ok(Vec::new());
    }
    let version = conn.version_for(ApiKey::DescribeConfigs)?;
    let req = DescribeConfigsRequest {
        resources: asked
            .iter()
            .map(|(_, r)| describe_configs_request::DescribeConfigsResource {
                resource_type: r.kind.code(),
                resource_name: kstr(&r.name),
                configuration_keys: None,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    let body = conn
        .request_at(RequestBody::DescribeConfigs(req), version)
        .await?;
    let resp = expect_body!(body, DescribeConfigs);
    let by_key: BTreeMap<(i8, &str), (usize, &ConfigResource)> =
        asked.iter().map(|(i, r)| (r.key(), (*i, *r))).collect();
    let mut out = Vec::new();
    for r in &resp.results {
        let Some((i, resource)) = by_key.get(&(r.resource_type, r.resource_name.as_str())) else {
            continue;
        };
        let res = check_code(r.error_code, r.error_message.as_ref(), || {
            format!("DescribeConfigs {:?} {}", resource.kind, resource.name)
        })
        .map(|()| ConfigResourceResult {
            resource: (*resource).clone(),
            entries: r.configs.iter().map(|c| entry(c, version)).collect(),
        });
        out.push((*i, res));
    }
    Ok(out)
}

fn entry(
    c: &describe_configs_response::DescribeConfigsResourceResult,
    version: i16,
) -> ConfigEntry {
    let is_default = (version == 0).then_some(c.is_default);
    ConfigEntry::new(
        &c.name,
        c.value.as_ref(),
        c.read_only,
        is_default,
        c.config_source,
        c.is_sensitive,
    )
}

async fn incremental(
    conn: &Connection,
    version: i16,
    changes: &[(ConfigResource, Vec<AlterConfigOp>)],
    idx: &[usize],
    validate_only: bool,
) -> Replies<()> {
    if idx.is_empty() {
        return Ok(Vec::new());
    }
    let req = IncrementalAlterConfigsRequest {
        resources: idx
            .iter()
            .map(|i| {
                let (r, ops) = &changes[*i];
                incremental_alter_configs_request::AlterConfigsResource {
                    resource_type: r.kind.code(),
                    resource_name: kstr(&r.name),
                    configs: ops
                        .iter()
                        .map(|o| incremental_alter_configs_request::AlterableConfig {
                            name: kstr(&o.name),
                            config_operation: o.op as i8,
                            value: o.value.as_deref().map(kstr),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                }
            })
            .collect(),
        validate_only,
        ..Default::default()
    };
    let body = conn
        .request_at(RequestBody::IncrementalAlterConfigs(req), version)
        .await?;
    let resp = expect_body!(body, IncrementalAlterConfigs);
    Ok(alter_results(
        "IncrementalAlterConfigs",
        changes,
        idx,
        resp.responses.iter().map(|r| {
            (
                r.resource_type,
                &r.resource_name,
                r.error_code,
                r.error_message.as_ref(),
            )
        }),
    ))
}

/// The AlterConfigs fallback: read the current settings, merge the changes in, replace.
async fn legacy_alter(
    conn: &Connection,
    changes: &[(ConfigResource, Vec<AlterConfigOp>)],
    idx: &[usize],
    validate_only: bool,
) -> Replies<()> {
    let version = conn.version_for(ApiKey::AlterConfigs)?;
    let asked: Vec<(usize, &ConfigResource)> = idx.iter().map(|i| (*i, &changes[*i].0)).collect();
    let mut out = Vec::new();
    let mut resources = Vec::new();
    let mut sent = Vec::new();
    for (i, current) in describe_on(conn, &asked).await? {
        let (resource, ops) = &changes[i];
        match current.and_then(|c| merge(resource, &c.entries, ops)) {
            Ok(configs) => {
                sent.push(i);
                resources.push(alter_configs_request::AlterConfigsResource {
                    resource_type: resource.kind.code(),
                    resource_name: kstr(&resource.name),
                    configs: configs
                        .iter()
                        .map(|(k, v)| alter_configs_request::AlterableConfig {
                            name: kstr(k),
                            value: Some(kstr(v)),
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                });
            }
            Err(e) => out.push((i, Err(e))),
        }
    }
    if resources.is_empty() {
        return Ok(out);
    }
    let req = AlterConfigsRequest {
        resources,
        validate_only,
        ..Default::default()
    };
    let body = conn
        .request_at(RequestBody::AlterConfigs(req), version)
        .await?;
    let resp = expect_body!(body, AlterConfigs);
    out.extend(alter_results(
        "AlterConfigs",
        changes,
        &sent,
        resp.responses.iter().map(|r| {
            (
                r.resource_type,
                &r.resource_name,
                r.error_code,
                r.error_message.as_ref(),
            )
        }),
    ));
    Ok(out)
}

/// The full set of settings for `resource` after applying `ops` to its current entries.
fn merge(
    resource: &ConfigResource,
    entries: &[ConfigEntry],
    ops: &[AlterConfigOp],
) -> Result<BTreeMap<String, String>, NetError> {
    let mut set: BTreeMap<String, Option<String>> = entries
        .iter()
        .filter(|e| e.set_on(resource))
        .map(|e| (e.name.clone(), e.value.clone()))
        .collect();
    for op in ops {
        let value = op.value.clone().unwrap_or_default();
        match op.op {
            OpType::Set => {
                set.insert(op.name.clone(), Some(value));
            }
            OpType::Delete => {
                set.remove(&op.name);
            }
            OpType::Append | OpType::Subtract => {
                // As the broker does: the current value, else the default, as a list.
                let current = set
                    .get(&op.name)
                    .cloned()
                    .unwrap_or_else(|| {
                        entries
                            .iter()
                            .find(|e| e.name == op.name)
                            .and_then(|e| e.value.clone())
                    })
                    .unwrap_or_default();
                let mut list: Vec<&str> = split_list(&current);
                for item in split_list(&value) {
                    if op.op == OpType::Append && !list.contains(&item) {
                        list.push(item);
                    } else if op.op == OpType::Subtract {
                        list.retain(|x| *x != item);
                    }
                }
                set.insert(op.name.clone(), Some(list.join(",")));
            }
        }
    }
    set.into_iter()
        .map(|(k, v)| match v {
            Some(v) => Ok((k, v)),
            None => Err(NetError::Config(format!(
                "{:?} {}: the broker lacks IncrementalAlterConfigs, and AlterConfigs would \
                 drop {k}, whose value is hidden (sensitive); set it in the same call",
                resource.kind, resource.name
            ))),
        })
        .collect()
}

fn split_list(s: &str) -> Vec<&str> {
    s.split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .collect()
}

fn alter_results<'r>(
    api: &'static str,
    changes: &[(ConfigResource, Vec<AlterConfigOp>)],
    idx: &[usize],
    responses: impl Iterator<Item = (i8, &'r KStr, i16, Option<&'r KStr>)>,
) -> Vec<(usize, Result<(), NetError>)> {
    let by_key: BTreeMap<(i8, &str), usize> =
        idx.iter().map(|i| (changes[*i].0.key(), *i)).collect();
    responses
        .filter_map(|(kind, name, code, message)| {
            let i = *by_key.get(&(kind, name.as_str()))?;
            let res = check_code(code, message, || {
                let r = &changes[i].0;
                format!("{api} {:?} {}", r.kind, r.name)
            });
            Some((i, res))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &str, value: Option<&str>, source: ConfigSource) -> ConfigEntry {
        ConfigEntry {
            name: name.into(),
            value: value.map(Into::into),
            read_only: false,
            is_default: source == ConfigSource::Default,
            source,
            is_sensitive: value.is_none(),
        }
    }

    #[test]
    fn merge_applies_list_operations_like_the_broker() {
        let topic = ConfigResource::topic("t");
        let entries = [
            entry("a", Some("x, y"), ConfigSource::DynamicTopic),
            entry("b", Some("p,q"), ConfigSource::Default),
            entry("c", Some("7"), ConfigSource::DynamicBroker),
        ];
        let ops = [
            AlterConfigOp::append("a", "y,z"),
            AlterConfigOp::subtract("a", "x"),
            // Appending to a config not set on the topic starts from its current value.
            AlterConfigOp::append("b", "r"),
        ];
        let merged = merge(&topic, &entries, &ops).unwrap();
        let got: Vec<(&str, &str)> = merged
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        // `c` comes from the broker, not the topic: AlterConfigs on the topic leaves it out.
        assert_eq!(got, [("a", "y,z"), ("b", "p,q,r")]);
    }

    #[test]
    fn merge_refuses_to_drop_a_hidden_value_unless_replaced_or_deleted() {
        let broker = ConfigResource::broker(1);
        let entries = [entry("ssl.key.password", None, ConfigSource::DynamicBroker)];
        let err = merge(&broker, &entries, &[AlterConfigOp::set("x", "1")]).unwrap_err();
        assert!(err.to_string().contains("ssl.key.password"), "{err}");
        assert!(
            merge(
                &broker,
                &entries,
                &[AlterConfigOp::delete("ssl.key.password")]
            )
            .is_ok()
        );
        // The cluster-wide default resource keeps only cluster-wide dynamic values.
        let default = ConfigResource::broker_default();
        assert!(merge(&default, &entries, &[]).unwrap().is_empty());
    }
}
