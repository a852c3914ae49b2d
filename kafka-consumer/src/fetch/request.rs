//! Fetch requests as plans (which partitions, from which offsets, how many bytes) and the
//! mapping of a Fetch answer back onto the plan. Pure.

use std::collections::HashMap;

use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::fetch_response::PartitionData;
use kafka_protocol::messages::{FetchRequest, FetchResponse};
use kafka_protocol::{KStr, Uuid};

use crate::error::ConsumerError;
use crate::types::{IsolationLevel, TopicPartition};

/// Fetch settings from the configuration.
#[derive(Debug, Clone)]
pub struct FetchSettings {
    pub max_wait_ms: i32,
    pub min_bytes: i32,
    pub isolation: IsolationLevel,
    pub rack: String,
}

/// One partition of a planned fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedPartition {
    pub tp: TopicPartition,
    /// The partition's position token when planned: answers for another token are stale.
    pub token: u64,
    pub topic_id: Uuid,
    pub fetch_offset: i64,
    pub current_leader_epoch: Option<i32>,
    pub max_bytes: i32,
}

/// One Fetch request to one broker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchPlan {
    pub node: i32,
    /// The response limit (also the bytes reserved in the buffer while it is out).
    pub max_bytes: i32,
    pub partitions: Vec<PlannedPartition>,
}

impl FetchPlan {
    /// The highest Fetch version the plan can use: from v13 topics go by id, so only when
    /// every topic has one.
    pub fn max_version(&self) -> i16 {
        if self.partitions.iter().all(|p| !p.topic_id.is_zero()) {
            i16::MAX
        } else {
            12
        }
    }

    /// The request at `version` (full fetch: no session).
    pub fn request(&self, s: &FetchSettings, version: i16) -> FetchRequest {
        let by_id = version >= 13;
        // Partitions grouped by topic, topics in order of first appearance.
        let mut groups: Vec<(&str, FetchTopic)> = Vec::new();
        for p in &self.partitions {
            let i = match groups.iter().position(|(name, _)| *name == &*p.tp.topic) {
                Some(i) => i,
                None => {
                    groups.push((
                        &p.tp.topic,
                        FetchTopic {
                            topic: if by_id {
                                KStr::default()
                            } else {
                                KStr::from(p.tp.topic.to_string())
                            },
                            topic_id: if by_id { p.topic_id } else { Uuid::ZERO },
                            ..Default::default()
                        },
                    ));
                    groups.len() - 1
                }
            };
            if let Some((_, t)) = groups.get_mut(i) {
                t.partitions.push(FetchPartition {
                    partition: p.tp.partition,
                    current_leader_epoch: if version >= 9 {
                        p.current_leader_epoch.unwrap_or(-1)
                    } else {
                        -1
                    },
                    fetch_offset: p.fetch_offset,
                    last_fetched_epoch: -1,
                    log_start_offset: -1,
                    partition_max_bytes: p.max_bytes,
                    ..Default::default()
                });
            }
        }
        let topics = groups.into_iter().map(|(_, t)| t).collect();
        FetchRequest {
            replica_id: -1,
            max_wait_ms: s.max_wait_ms,
            min_bytes: s.min_bytes,
            max_bytes: if version >= 3 {
                self.max_bytes
            } else {
                i32::MAX
            },
            isolation_level: if version >= 4 { s.isolation.code() } else { 0 },
            session_id: 0,
            session_epoch: -1,
            topics,
            rack_id: if version >= 11 {
                KStr::from(s.rack.clone())
            } else {
                KStr::default()
            },
            ..Default::default()
        }
    }

    /// Pairs each planned partition with its data in the answer (`None`: left out).
    pub fn match_response(
        &self,
        resp: FetchResponse,
        version: i16,
    ) -> Result<Vec<(PlannedPartition, Option<PartitionData>)>, ConsumerError> {
        let code = kafka_protocol::error_code::ErrorCode(resp.error_code);
        if !code.is_ok() {
            return Err(ConsumerError::kafka(
                code,
                format!("Fetch from broker {}", self.node),
            ));
        }
        let by_id = version >= 13;
        let mut answered: HashMap<(Vec<u8>, i32), PartitionData> = HashMap::new();
        for t in resp.responses {
            let key = if by_id {
                t.topic_id.0.to_vec()
            } else {
                t.topic.as_bytes().to_vec()
            };
            for p in t.partitions {
                answered.insert((key.clone(), p.partition_index), p);
            }
        }
        Ok(self
            .partitions
            .iter()
            .map(|p| {
                let key = if by_id {
                    p.topic_id.0.to_vec()
                } else {
                    p.tp.topic.as_bytes().to_vec()
                };
                (p.clone(), answered.remove(&(key, p.tp.partition)))
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::fetch_response::FetchableTopicResponse;

    fn plan(ids: bool) -> FetchPlan {
        let id = |n: u8| if ids { Uuid([n; 16]) } else { Uuid::ZERO };
        FetchPlan {
            node: 1,
            max_bytes: 1000,
            partitions: vec![
                PlannedPartition {
                    tp: TopicPartition::new("a", 0),
                    token: 1,
                    topic_id: id(1),
                    fetch_offset: 10,
                    current_leader_epoch: Some(4),
                    max_bytes: 500,
                },
                PlannedPartition {
                    tp: TopicPartition::new("a", 1),
                    token: 2,
                    topic_id: id(1),
                    fetch_offset: 20,
                    current_leader_epoch: None,
                    max_bytes: 500,
                },
                PlannedPartition {
                    tp: TopicPartition::new("b", 0),
                    token: 3,
                    topic_id: id(2),
                    fetch_offset: 30,
                    current_leader_epoch: Some(1),
                    max_bytes: 500,
                },
            ],
        }
    }

    fn settings() -> FetchSettings {
        FetchSettings {
            max_wait_ms: 500,
            min_bytes: 1,
            isolation: IsolationLevel::ReadCommitted,
            rack: "r1".into(),
        }
    }

    #[test]
    fn request_by_name_and_by_id() {
        assert_eq!(plan(false).max_version(), 12);
        assert_eq!(plan(true).max_version(), i16::MAX);
        let r = plan(false).request(&settings(), 12);
        assert_eq!(r.topics.len(), 2);
        assert_eq!(r.topics[0].topic.as_str(), "a");
        assert_eq!(r.topics[0].partitions.len(), 2);
        assert_eq!(r.topics[0].partitions[0].current_leader_epoch, 4);
        assert_eq!(r.topics[0].partitions[1].current_leader_epoch, -1);
        assert_eq!(r.isolation_level, 1);
        assert_eq!(r.max_bytes, 1000);
        assert_eq!(r.rack_id.as_str(), "r1");
        let r = plan(true).request(&settings(), 13);
        assert_eq!(r.topics.len(), 2);
        assert!(r.topics.iter().all(|t| t.topic.is_empty()));
        assert_eq!(r.topics[1].topic_id, Uuid([2; 16]));
        // Old versions get only what they carry.
        let r = plan(false).request(&settings(), 3);
        assert_eq!(r.isolation_level, 0);
        assert_eq!(r.topics[0].partitions[0].current_leader_epoch, -1);
        assert!(r.rack_id.is_empty());
        for v in [0, 4, 7, 11, 12] {
            let body = kafka_protocol::RequestBody::from(plan(false).request(&settings(), v));
            let header = kafka_protocol::RequestHeader {
                request_api_key: 1,
                request_api_version: v,
                ..Default::default()
            };
            kafka_protocol::encode_request(&header, &body).unwrap();
        }
    }

    #[test]
    fn answers_map_back_by_name_or_id() {
        let resp = |by_id: bool| FetchResponse {
            responses: vec![FetchableTopicResponse {
                topic: if by_id {
                    KStr::default()
                } else {
                    KStr::from_static("a")
                },
                topic_id: if by_id { Uuid([1; 16]) } else { Uuid::ZERO },
                partitions: vec![PartitionData {
                    partition_index: 1,
                    high_watermark: 99,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        let m = plan(false).match_response(resp(false), 12).unwrap();
        assert_eq!(m.len(), 3);
        assert!(m[0].1.is_none());
        assert_eq!(m[1].1.as_ref().unwrap().high_watermark, 99);
        assert!(m[2].1.is_none());
        let m = plan(true).match_response(resp(true), 13).unwrap();
        assert_eq!(m[1].1.as_ref().unwrap().high_watermark, 99);
        let err = FetchResponse {
            error_code: 70,
            ..Default::default()
        };
        assert!(plan(false).match_response(err, 12).is_err());
    }
}
