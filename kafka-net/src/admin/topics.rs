//! Topics, partitions, the cluster description and offsets.

use std::collections::BTreeMap;

use futures::future::BoxFuture;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::{
    ApiKey, CreatePartitionsRequest, CreateTopicsRequest, DeleteTopicsRequest,
    DescribeClusterRequest, ListOffsetsRequest, RequestBody, create_partitions_request,
    create_topics_request, create_topics_response, delete_topics_request, list_offsets_request,
    list_offsets_response,
};
use kafka_protocol::{KStr, Uuid};

use super::{
    ANY, Admin, ConfigEntry, Replies, Retry, Routes, check_code, duplicate, duplicates, expect_body,
};
use crate::error::NetError;
use crate::metadata::{BrokerInfo, MetadataSnapshot};

/// A topic to create.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewTopic {
    pub name: String,
    /// -1: the broker's default (`num.partitions`; needs CreateTopics v4+).
    pub partitions: i32,
    /// -1: the broker's default (`default.replication.factor`; needs CreateTopics v4+).
    pub replication_factor: i16,
    /// Topic configs (`cleanup.policy`, `retention.ms`, ...).
    pub configs: Vec<(String, String)>,
}

impl NewTopic {
    pub fn new(name: impl Into<String>, partitions: i32, replication_factor: i16) -> Self {
        Self {
            name: name.into(),
            partitions,
            replication_factor,
            configs: Vec::new(),
        }
    }

    /// Adds a topic config.
    #[must_use]
    pub fn config(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.configs.push((key.into(), value.into()));
        self
    }
}

/// A topic the broker created (or, with `validate_only`, would create).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreatedTopic {
    pub name: String,
    /// The topic id (CreateTopics v7+).
    pub topic_id: Option<Uuid>,
    /// What the broker chose (CreateTopics v5+).
    pub partitions: Option<i32>,
    pub replication_factor: Option<i16>,
    /// The topic's configs as created (CreateTopics v5+; empty before).
    pub configs: Vec<ConfigEntry>,
}

/// The cluster as one broker sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterDescription {
    pub cluster_id: Option<String>,
    /// -1 when unknown.
    pub controller_id: i32,
    /// Sorted by node id.
    pub brokers: Vec<BrokerInfo>,
}

/// Which offset of a partition to look up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetSpec {
    /// The log start offset.
    Earliest,
    /// The log end offset (the high watermark for read-uncommitted).
    Latest,
    /// The offset of the record with the highest timestamp (ListOffsets v7+).
    MaxTimestamp,
    /// The first offset whose timestamp is at or after this many ms since the epoch.
    Timestamp(i64),
}

impl OffsetSpec {
    fn timestamp(self) -> i64 {
        match self {
            Self::Earliest => -2,
            Self::Latest => -1,
            Self::MaxTimestamp => -3,
            Self::Timestamp(t) => t,
        }
    }
}

/// One partition's offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedOffset {
    pub topic: String,
    pub partition: i32,
    /// -1 when there is none (a timestamp after the last record).
    pub offset: i64,
    /// The record's timestamp, when the lookup has one (v1+).
    pub timestamp: Option<i64>,
    /// The leader epoch of that offset (v4+).
    pub leader_epoch: Option<i32>,
}

impl Admin {
    /// Creates topics (on the controller). One result per topic, in order.
    pub async fn create_topics(
        &self,
        topics: &[NewTopic],
        validate_only: bool,
    ) -> Vec<Result<CreatedTopic, NetError>> {
        let dup = &duplicates(topics.iter().map(|t| t.name.as_str()));
        let send = |node: i32, items: Vec<usize>| -> BoxFuture<'_, Replies<CreatedTopic>> {
            Box::pin(async move {
                let conn = self.conn_for(node).await?;
                let version = conn.version_for(ApiKey::CreateTopics)?;
                if validate_only && version < 1 {
                    return Err(unsupported(ApiKey::CreateTopics, "validate_only needs v1+"));
                }
                let mut out = Vec::new();
                let mut asked = BTreeMap::new();
                let mut req = CreateTopicsRequest {
                    timeout_ms: self.timeout_ms(),
                    ..Default::default()
                };
                if version >= 1 {
                    req.validate_only = validate_only;
                }
                for i in items {
                    let t = &topics[i];
                    if dup[i] {
                        out.push((i, Err(duplicate("topic", &t.name))));
                    } else if version < 4 && (t.partitions < 0 || t.replication_factor < 0) {
                        let why = "broker-default partitions or replication need v4+";
                        out.push((i, Err(unsupported(ApiKey::CreateTopics, why))));
                    } else {
                        asked.insert(t.name.as_str(), i);
                        req.topics.push(creatable(t));
                    }
                }
                if req.topics.is_empty() {
                    return Ok(out);
                }
                let body = conn
                    .request_at(RequestBody::CreateTopics(req), version)
                    .await?;
                let resp = expect_body!(body, CreateTopics);
                for r in resp.topics {
                    if let Some(i) = asked.get(r.name.as_str()) {
                        out.push((*i, created(r, version)));
                    }
                }
                Ok(out)
            })
        };
        self.fan_out(
            "CreateTopics",
            Retry::Controller,
            topics.len(),
            controller_route(self),
            send,
        )
        .await
    }

    /// Deletes topics by name (on the controller). One `(name, result)` per topic, in order.
    pub async fn delete_topics(&self, names: &[&str]) -> Vec<(String, Result<(), NetError>)> {
        let dup = &duplicates(names.iter());
        let send = |node: i32, items: Vec<usize>| -> BoxFuture<'_, Replies<()>> {
            Box::pin(async move {
                let conn = self.conn_for(node).await?;
                let version = conn.version_for(ApiKey::DeleteTopics)?;
                let mut out = Vec::new();
                let mut asked = BTreeMap::new();
                let mut req = DeleteTopicsRequest {
                    timeout_ms: self.timeout_ms(),
                    ..Default::default()
                };
                for i in items {
                    let name = names[i];
                    if dup[i] {
                        out.push((i, Err(duplicate("topic", name))));
                        continue;
                    }
                    asked.insert(name, i);
                    let kname = KStr::from(name.to_owned());
                    if version >= 6 {
                        req.topics.push(delete_topics_request::DeleteTopicState {
                            name: Some(kname),
                            topic_id: Uuid::ZERO,
                            ..Default::default()
                        });
                    } else {
                        req.topic_names.push(kname);
                    }
                }
                if asked.is_empty() {
                    return Ok(out);
                }
                let body = conn
                    .request_at(RequestBody::DeleteTopics(req), version)
                    .await?;
                let resp = expect_body!(body, DeleteTopics);
                for r in resp.responses {
                    let name = r.name.as_deref().unwrap_or_default();
                    if let Some(i) = asked.get(name) {
                        let res = check_code(r.error_code, r.error_message.as_ref(), || {
                            format!("DeleteTopics {name}")
                        });
                        out.push((*i, res));
                    }
                }
                Ok(out)
            })
        };
        let results = self
            .fan_out(
                "DeleteTopics",
                Retry::Controller,
                names.len(),
                controller_route(self),
                send,
            )
            .await;
        names.iter().map(|n| (*n).to_owned()).zip(results).collect()
    }

    /// Grows `topic` to `new_total` partitions (on the controller).
    pub async fn create_partitions(&self, topic: &str, new_total: i32) -> Result<(), NetError> {
        let send = |node: i32, items: Vec<usize>| -> BoxFuture<'_, Replies<()>> {
            Box::pin(async move {
                let conn = self.conn_for(node).await?;
                let version = conn.version_for(ApiKey::CreatePartitions)?;
                let req = CreatePartitionsRequest {
                    topics: vec![create_partitions_request::CreatePartitionsTopic {
                        name: KStr::from(topic.to_owned()),
                        count: new_total,
                        assignments: None,
                        ..Default::default()
                    }],
                    timeout_ms: self.timeout_ms(),
                    validate_only: false,
                    ..Default::default()
                };
                let body = conn
                    .request_at(RequestBody::CreatePartitions(req), version)
                    .await?;
                let resp = expect_body!(body, CreatePartitions);
                let mut out = Vec::new();
                for r in resp.results.iter().filter(|r| r.name == topic) {
                    let res = check_code(r.error_code, r.error_message.as_ref(), || {
                        format!("CreatePartitions {topic} to {new_total}")
                    });
                    out.extend(items.iter().map(|i| (*i, res.clone())));
                }
                Ok(out)
            })
        };
        let mut results = self
            .fan_out(
                "CreatePartitions",
                Retry::Controller,
                1,
                controller_route(self),
                send,
            )
            .await;
        results
            .pop()
            .unwrap_or_else(|| Err(NetError::BadResponse("CreatePartitions: no result".into())))
    }

    /// Describes the cluster: with DescribeCluster when the broker has it, else from a
    /// Metadata request.
    pub async fn describe_cluster(&self) -> Result<ClusterDescription, NetError> {
        self.cluster.retry(|| self.describe_cluster_once()).await
    }

    async fn describe_cluster_once(&self) -> Result<ClusterDescription, NetError> {
        let conn = self.cluster.least_loaded().await?;
        let Ok(version) = conn.version_for(ApiKey::DescribeCluster) else {
            let snap = self.cluster.fetch_topics(&[]).await?;
            return Ok(ClusterDescription {
                cluster_id: snap.cluster_id.clone(),
                controller_id: snap.controller_id,
                brokers: snap.brokers.values().cloned().collect(),
            });
        };
        let req = DescribeClusterRequest::default();
        let body = conn
            .request_at(RequestBody::DescribeCluster(req), version)
            .await?;
        let resp = expect_body!(body, DescribeCluster);
        check_code(resp.error_code, resp.error_message.as_ref(), || {
            "DescribeCluster".to_owned()
        })?;
        let mut brokers: Vec<BrokerInfo> = resp
            .brokers
            .iter()
            .map(|b| BrokerInfo {
                node_id: b.broker_id,
                host: b.host.to_string(),
                port: b.port,
                rack: b.rack.as_ref().map(ToString::to_string),
            })
            .collect();
        brokers.sort_by_key(|b| b.node_id);
        Ok(ClusterDescription {
            cluster_id: Some(resp.cluster_id.to_string()).filter(|c| !c.is_empty()),
            controller_id: resp.controller_id,
            brokers,
        })
    }

    /// Looks up offsets, one request per partition leader. One result per item, in order.
    pub async fn list_offsets(
        &self,
        items: &[(&str, i32, OffsetSpec)],
    ) -> Vec<Result<ListedOffset, NetError>> {
        let dup = &duplicates(items.iter().map(|(t, p, _)| (*t, *p)));
        let route = |_round: u32, pending: Vec<usize>| -> BoxFuture<'_, Routes> {
            Box::pin(async move {
                let mut topics: Vec<&str> = pending.iter().map(|i| items[*i].0).collect();
                topics.sort_unstable();
                topics.dedup();
                match self.cluster.fetch_topics(&topics).await {
                    Ok(meta) => pending
                        .into_iter()
                        .map(|i| (i, leader_of(&meta, items[i].0, items[i].1)))
                        .collect(),
                    Err(e) => pending.into_iter().map(|i| (i, Err(e.clone()))).collect(),
                }
            })
        };
        let send = |node: i32, idx: Vec<usize>| -> BoxFuture<'_, Replies<ListedOffset>> {
            Box::pin(async move {
                let conn = self.conn_for(node).await?;
                let version = conn.version_for(ApiKey::ListOffsets)?;
                let meta = self.cluster.metadata();
                let mut out = Vec::new();
                let mut asked = BTreeMap::new();
                let mut by_topic: BTreeMap<&str, Vec<list_offsets_request::ListOffsetsPartition>> =
                    BTreeMap::new();
                for i in idx {
                    let (topic, partition, spec) = items[i];
                    if dup[i] {
                        out.push((
                            i,
                            Err(duplicate("partition", &format!("{topic}-{partition}"))),
                        ));
                        continue;
                    }
                    if spec == OffsetSpec::MaxTimestamp && version < 7 {
                        let why = "OffsetSpec::MaxTimestamp needs v7+";
                        out.push((i, Err(unsupported(ApiKey::ListOffsets, why))));
                        continue;
                    }
                    let mut p = list_offsets_request::ListOffsetsPartition {
                        partition_index: partition,
                        timestamp: spec.timestamp(),
                        ..Default::default()
                    };
                    if version >= 4 {
                        p.current_leader_epoch = meta
                            .topic(topic)
                            .and_then(|t| t.partition(partition))
                            .map_or(-1, |p| p.leader_epoch);
                    }
                    by_topic.entry(topic).or_default().push(p);
                    asked.insert((topic, partition), i);
                }
                if asked.is_empty() {
                    return Ok(out);
                }
                let req = ListOffsetsRequest {
                    replica_id: -1,
                    topics: by_topic
                        .into_iter()
                        .map(
                            |(name, partitions)| list_offsets_request::ListOffsetsTopic {
                                name: KStr::from(name.to_owned()),
                                partitions,
                                ..Default::default()
                            },
                        )
                        .collect(),
                    ..Default::default()
                };
                let body = conn
                    .request_at(RequestBody::ListOffsets(req), version)
                    .await?;
                let resp = expect_body!(body, ListOffsets);
                for t in &resp.topics {
                    for p in &t.partitions {
                        if let Some(i) = asked.get(&(t.name.as_str(), p.partition_index)) {
                            out.push((*i, listed(&t.name, p, version)));
                        }
                    }
                }
                Ok(out)
            })
        };
        self.fan_out("ListOffsets", Retry::Retriable, items.len(), route, send)
            .await
    }
}

/// Routes everything to the controller named by the metadata (any broker when none is
/// named), refreshing the metadata before each retry.
fn controller_route<'a>(admin: &'a Admin) -> impl Fn(u32, Vec<usize>) -> BoxFuture<'a, Routes> {
    move |round, pending| {
        Box::pin(async move {
            if round > 0 {
                if let Err(e) = admin.cluster.fetch_topics(&[]).await {
                    tracing::debug!(error = %e, "metadata refresh before retry failed");
                }
            }
            let controller = admin.cluster.metadata().controller_id;
            let node = if controller >= 0 { controller } else { ANY };
            pending.into_iter().map(|i| (i, Ok(node))).collect()
        })
    }
}

fn leader_of(meta: &MetadataSnapshot, topic: &str, partition: i32) -> Result<i32, NetError> {
    let err = |code| NetError::Kafka {
        code,
        context: format!("metadata for {topic}-{partition}"),
    };
    let t = meta
        .topic(topic)
        .ok_or_else(|| err(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION))?;
    if !t.error.is_ok() {
        return Err(err(t.error));
    }
    let p = t
        .partition(partition)
        .ok_or_else(|| err(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION))?;
    if p.leader < 0 {
        return Err(err(if p.error.is_ok() {
            ErrorCode::LEADER_NOT_AVAILABLE
        } else {
            p.error
        }));
    }
    Ok(p.leader)
}

fn creatable(t: &super::NewTopic) -> create_topics_request::CreatableTopic {
    create_topics_request::CreatableTopic {
        name: KStr::from(t.name.clone()),
        num_partitions: t.partitions,
        replication_factor: t.replication_factor,
        configs: t
            .configs
            .iter()
            .map(|(k, v)| create_topics_request::CreatableTopicConfig {
                name: KStr::from(k.clone()),
                value: Some(KStr::from(v.clone())),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

fn created(
    r: create_topics_response::CreatableTopicResult,
    version: i16,
) -> Result<CreatedTopic, NetError> {
    check_code(r.error_code, r.error_message.as_ref(), || {
        format!("CreateTopics {}", r.name)
    })?;
    let configs = r
        .configs
        .unwrap_or_default()
        .into_iter()
        .map(|c| {
            ConfigEntry::new(
                &c.name,
                c.value.as_ref(),
                c.read_only,
                None,
                c.config_source,
                c.is_sensitive,
            )
        })
        .collect();
    Ok(CreatedTopic {
        name: r.name.to_string(),
        topic_id: Some(r.topic_id).filter(|id| version >= 7 && !id.is_zero()),
        partitions: Some(r.num_partitions).filter(|n| version >= 5 && *n >= 0),
        replication_factor: Some(r.replication_factor).filter(|n| version >= 5 && *n >= 0),
        configs,
    })
}

fn listed(
    topic: &KStr,
    p: &list_offsets_response::ListOffsetsPartitionResponse,
    version: i16,
) -> Result<ListedOffset, NetError> {
    check_code(p.error_code, None, || {
        format!("ListOffsets {topic}-{}", p.partition_index)
    })?;
    let (offset, timestamp) = if version == 0 {
        (p.old_style_offsets.first().copied().unwrap_or(-1), None)
    } else {
        (p.offset, Some(p.timestamp).filter(|t| *t >= 0))
    };
    Ok(ListedOffset {
        topic: topic.to_string(),
        partition: p.partition_index,
        offset,
        timestamp,
        leader_epoch: Some(p.leader_epoch).filter(|e| version >= 4 && *e >= 0),
    })
}

fn unsupported(api: ApiKey, why: &str) -> NetError {
    NetError::UnsupportedApi {
        api,
        detail: Some(why.to_owned()),
    }
}
