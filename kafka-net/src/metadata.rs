//! The cluster metadata cache: brokers, topics, partitions, leaders, epochs, topic ids.

use std::collections::BTreeMap;
use std::time::Instant;

use kafka_protocol::Uuid;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::MetadataResponse;

/// One broker of the cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerInfo {
    pub node_id: i32,
    pub host: String,
    pub port: i32,
    pub rack: Option<String>,
}

impl BrokerInfo {
    /// `host:port`.
    pub fn addr(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// One partition of a topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartitionInfo {
    pub partition: i32,
    /// -1 when there is no leader.
    pub leader: i32,
    pub leader_epoch: i32,
    pub replicas: Vec<i32>,
    pub isr: Vec<i32>,
    pub offline: Vec<i32>,
    pub error: ErrorCode,
}

/// One topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicInfo {
    pub name: String,
    pub topic_id: Uuid,
    pub is_internal: bool,
    pub partitions: Vec<PartitionInfo>,
    pub error: ErrorCode,
}

impl TopicInfo {
    /// Whether the topic exists and every partition has a leader.
    pub fn is_ready(&self) -> bool {
        self.error.is_ok()
            && !self.partitions.is_empty()
            && self.partitions.iter().all(|p| p.leader >= 0)
    }

    /// A partition by number.
    pub fn partition(&self, p: i32) -> Option<&PartitionInfo> {
        self.partitions.iter().find(|x| x.partition == p)
    }
}

/// What the client knows of the cluster at one moment. Each refresh makes a new snapshot with
/// a higher `version`.
#[derive(Debug, Clone)]
pub struct MetadataSnapshot {
    pub version: u64,
    pub fetched_at: Option<Instant>,
    pub cluster_id: Option<String>,
    pub controller_id: i32,
    pub brokers: BTreeMap<i32, BrokerInfo>,
    pub topics: BTreeMap<String, TopicInfo>,
}

impl Default for MetadataSnapshot {
    fn default() -> Self {
        Self {
            version: 0,
            fetched_at: None,
            cluster_id: None,
            controller_id: -1,
            brokers: BTreeMap::new(),
            topics: BTreeMap::new(),
        }
    }
}

impl MetadataSnapshot {
    /// A snapshot from a Metadata response. Topics not in the response are kept from
    /// `previous` unless the response listed all topics (`all_topics`).
    pub fn from_response(
        resp: &MetadataResponse,
        previous: &Self,
        all_topics: bool,
        now: Instant,
    ) -> Self {
        let brokers = resp
            .brokers
            .iter()
            .map(|b| {
                (
                    b.node_id,
                    BrokerInfo {
                        node_id: b.node_id,
                        host: b.host.to_string(),
                        port: b.port,
                        rack: b.rack.as_ref().map(ToString::to_string),
                    },
                )
            })
            .collect();
        let mut topics = if all_topics {
            BTreeMap::new()
        } else {
            previous.topics.clone()
        };
        for t in &resp.topics {
            let Some(name) = t.name.as_ref().map(ToString::to_string) else {
                continue;
            };
            let mut partitions: Vec<PartitionInfo> = t
                .partitions
                .iter()
                .map(|p| PartitionInfo {
                    partition: p.partition_index,
                    leader: p.leader_id,
                    leader_epoch: p.leader_epoch,
                    replicas: p.replica_nodes.clone(),
                    isr: p.isr_nodes.clone(),
                    offline: p.offline_replicas.clone(),
                    error: ErrorCode(p.error_code),
                })
                .collect();
            partitions.sort_by_key(|p| p.partition);
            topics.insert(
                name.clone(),
                TopicInfo {
                    name,
                    topic_id: t.topic_id,
                    is_internal: t.is_internal,
                    partitions,
                    error: ErrorCode(t.error_code),
                },
            );
        }
        Self {
            version: previous.version + 1,
            fetched_at: Some(now),
            cluster_id: resp.cluster_id.as_ref().map(ToString::to_string),
            controller_id: resp.controller_id,
            brokers,
            topics,
        }
    }

    /// The broker leading `topic`/`partition`, if known.
    pub fn leader_for(&self, topic: &str, partition: i32) -> Option<&BrokerInfo> {
        let p = self.topics.get(topic)?.partition(partition)?;
        self.brokers.get(&p.leader)
    }

    /// A topic by name.
    pub fn topic(&self, name: &str) -> Option<&TopicInfo> {
        self.topics.get(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::KStr;
    use kafka_protocol::messages::metadata_response::*;

    fn response(topics: &[(&'static str, i32)]) -> MetadataResponse {
        MetadataResponse {
            brokers: vec![MetadataResponseBroker {
                node_id: 1,
                host: KStr::from_static("h1"),
                port: 9092,
                ..Default::default()
            }],
            controller_id: 1,
            topics: topics
                .iter()
                .map(|(name, leader)| MetadataResponseTopic {
                    name: Some(KStr::from_static(name)),
                    partitions: vec![MetadataResponsePartition {
                        partition_index: 0,
                        leader_id: *leader,
                        ..Default::default()
                    }],
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn partial_refresh_keeps_other_topics_and_full_refresh_replaces() {
        let now = Instant::now();
        let s1 = MetadataSnapshot::from_response(
            &response(&[("a", 1)]),
            &MetadataSnapshot::default(),
            true,
            now,
        );
        assert_eq!(s1.version, 1);
        assert_eq!(
            s1.leader_for("a", 0).map(BrokerInfo::addr).as_deref(),
            Some("h1:9092")
        );
        let s2 = MetadataSnapshot::from_response(&response(&[("b", -1)]), &s1, false, now);
        assert!(s2.topic("a").is_some());
        assert!(!s2.topic("b").is_some_and(TopicInfo::is_ready));
        let s3 = MetadataSnapshot::from_response(&response(&[("b", 1)]), &s2, true, now);
        assert!(s3.topic("a").is_none());
        assert!(s3.topic("b").is_some_and(TopicInfo::is_ready));
        assert_eq!(s3.version, 3);
    }
}
