//! The cluster metadata cache: brokers, topics, partitions, leaders, epochs, topic ids.
//!
//! Besides Metadata answers, the cache takes leader hints (KIP-951): a Produce or Fetch
//! answer that refuses a partition for leadership names its current leader and epoch, and
//! the leader's endpoint. A hint moves the partition's leader at once when its epoch is newer
//! than the cached one and its broker is known (cached, or among the answer's endpoints), as
//! Kafka's `Metadata.updatePartitionLeadership` does; anything else is left to the next
//! Metadata refresh.

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

/// A partition's leader as a broker's answer named it (KIP-951's `CurrentLeader`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaderHint {
    pub topic: String,
    pub partition: i32,
    pub leader_id: i32,
    pub leader_epoch: i32,
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
            // Kafka's clients (KIP-320): an answer naming an older leader epoch than the one
            // known (a broker that has not caught up, or an old leader cut off from the
            // cluster) does not move the partition back; the rest of the answer is taken.
            // Only for the same topic id: a topic deleted and made again starts its epochs
            // anew, and without ids that cannot be told.
            if let Some(before) = previous
                .topics
                .get(&name)
                .filter(|b| !t.topic_id.is_zero() && b.topic_id == t.topic_id)
            {
                for p in &mut partitions {
                    if let Some(old) = before.partition(p.partition) {
                        if p.leader_epoch >= 0 && old.leader_epoch > p.leader_epoch {
                            *p = old.clone();
                        }
                    }
                }
            }
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

    /// The snapshot with the leaders of `hints` taken in (see the module docs): `None` when
    /// no hint is newer than what is cached. `endpoints` are the brokers the answer listed;
    /// those that lead a taken partition are added to (or replace in) the broker list. The
    /// new snapshot has the next version and keeps `fetched_at` (the next periodic refresh is
    /// not put off).
    pub fn with_leader_hints(
        &self,
        hints: &[LeaderHint],
        endpoints: &[BrokerInfo],
    ) -> Option<Self> {
        let mut next: Option<Self> = None;
        for h in hints {
            if h.leader_id < 0 || h.leader_epoch < 0 {
                continue;
            }
            let current = next.as_ref().unwrap_or(self);
            let Some(p) = current
                .topics
                .get(&h.topic)
                .and_then(|t| t.partition(h.partition))
            else {
                continue;
            };
            if p.leader_epoch >= 0 && h.leader_epoch <= p.leader_epoch {
                continue;
            }
            let endpoint = endpoints.iter().find(|b| b.node_id == h.leader_id);
            if endpoint.is_none() && !current.brokers.contains_key(&h.leader_id) {
                continue;
            }
            let snap = next.get_or_insert_with(|| Self {
                version: self.version + 1,
                ..self.clone()
            });
            if let Some(b) = endpoint {
                snap.brokers.insert(b.node_id, b.clone());
            }
            if let Some(p) = snap
                .topics
                .get_mut(&h.topic)
                .and_then(|t| t.partitions.iter_mut().find(|p| p.partition == h.partition))
            {
                p.leader = h.leader_id;
                p.leader_epoch = h.leader_epoch;
                p.error = ErrorCode::NONE;
            }
        }
        next
    }

    /// Whether the cached leader of the hint's partition is at least as new as the hint.
    pub fn knows_leader(&self, hint: &LeaderHint) -> bool {
        self.topics
            .get(&hint.topic)
            .and_then(|t| t.partition(hint.partition))
            .is_some_and(|p| {
                p.leader >= 0
                    && p.leader_epoch >= hint.leader_epoch
                    && self.brokers.contains_key(&p.leader)
            })
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

    fn hint(topic: &str, partition: i32, leader_id: i32, leader_epoch: i32) -> LeaderHint {
        LeaderHint {
            topic: topic.into(),
            partition,
            leader_id,
            leader_epoch,
        }
    }

    fn broker(node_id: i32, host: &str) -> BrokerInfo {
        BrokerInfo {
            node_id,
            host: host.into(),
            port: 9092,
            rack: Some("r".into()),
        }
    }

    #[test]
    fn an_answer_with_an_older_leader_epoch_does_not_move_the_leader_back() {
        let now = Instant::now();
        let answer = |leader: i32, epoch: i32| {
            let mut r = response(&[("a", leader)]);
            r.topics[0].partitions[0].leader_epoch = epoch;
            r.topics[0].topic_id = kafka_protocol::Uuid([7; 16]);
            r
        };
        let s1 =
            MetadataSnapshot::from_response(&answer(1, 5), &MetadataSnapshot::default(), true, now);
        let leader = |s: &MetadataSnapshot| {
            let p = &s.topic("a").unwrap().partitions[0];
            (p.leader, p.leader_epoch)
        };
        // A broker behind (or an old leader cut off) still names itself at epoch 4.
        let s2 = MetadataSnapshot::from_response(&answer(2, 4), &s1, true, now);
        assert_eq!(leader(&s2), (1, 5));
        assert_eq!(
            s2.version,
            s1.version + 1,
            "the rest of the answer is taken"
        );
        // A newer epoch moves it; an answer without epochs (old versions) too.
        let s3 = MetadataSnapshot::from_response(&answer(2, 6), &s2, true, now);
        assert_eq!(leader(&s3), (2, 6));
        let s4 = MetadataSnapshot::from_response(&answer(3, -1), &s3, true, now);
        assert_eq!(leader(&s4), (3, -1));
        // Without topic ids an older epoch may be a topic made again: taken.
        let s5 = MetadataSnapshot::from_response(&answer(1, 9), &s4, true, now);
        let mut no_id = answer(2, 0);
        no_id.topics[0].topic_id = kafka_protocol::Uuid::ZERO;
        let s6 = MetadataSnapshot::from_response(&no_id, &s5, true, now);
        assert_eq!(leader(&s6), (2, 0));
    }

    #[test]
    fn a_newer_leader_hint_moves_the_leader_at_once() {
        let mut resp = response(&[("a", 1)]);
        resp.topics[0].partitions[0].leader_epoch = 3;
        let s1 = MetadataSnapshot::from_response(
            &resp,
            &MetadataSnapshot::default(),
            true,
            Instant::now(),
        );
        // Broker 2 is not cached: taken with the answer's endpoint.
        let s2 = s1
            .with_leader_hints(&[hint("a", 0, 2, 4)], &[broker(2, "h2")])
            .unwrap();
        assert_eq!(s2.version, s1.version + 1);
        assert_eq!(s2.fetched_at, s1.fetched_at);
        assert_eq!(
            s2.leader_for("a", 0).map(BrokerInfo::addr).as_deref(),
            Some("h2:9092")
        );
        assert_eq!(s2.topic("a").unwrap().partitions[0].leader_epoch, 4);
        assert!(s2.knows_leader(&hint("a", 0, 2, 4)));
        assert!(!s1.knows_leader(&hint("a", 0, 2, 4)));
        // A cached broker needs no endpoint.
        let s3 = s2.with_leader_hints(&[hint("a", 0, 1, 5)], &[]).unwrap();
        assert_eq!(s3.leader_for("a", 0).map(|b| b.node_id), Some(1));
    }

    #[test]
    fn stale_or_unusable_hints_change_nothing() {
        let mut resp = response(&[("a", 1)]);
        resp.topics[0].partitions[0].leader_epoch = 3;
        let s1 = MetadataSnapshot::from_response(
            &resp,
            &MetadataSnapshot::default(),
            true,
            Instant::now(),
        );
        for h in [
            hint("a", 0, 1, 3),  // same epoch
            hint("a", 0, 1, 2),  // older
            hint("a", 0, -1, 7), // no leader
            hint("a", 0, 1, -1), // no epoch
            hint("a", 0, 9, 4),  // unknown broker, no endpoint
            hint("a", 5, 1, 4),  // unknown partition
            hint("b", 0, 1, 4),  // unknown topic
        ] {
            assert!(
                s1.with_leader_hints(std::slice::from_ref(&h), &[broker(2, "h2")])
                    .is_none(),
                "{h:?}"
            );
        }
        // An endpoint of a broker that leads nothing hinted is not added.
        let s2 = s1
            .with_leader_hints(&[hint("a", 0, 1, 4)], &[broker(7, "h7")])
            .unwrap();
        assert!(!s2.brokers.contains_key(&7));
    }
}
