//! What the group apis' tests share: a coordinator on a manual clock, a client, encoding at a
//! version and back, and the requests several tests send.
#![allow(clippy::unwrap_used)]

use std::future::Future;
use std::sync::LazyLock;

use bytes::Bytes;
use kafka_auth::acl::{AclOperation, ResourceType};
use kafka_protocol::KStr;
use kafka_protocol::frame::{decode_response, encode_response, encode_versioned};
use kafka_protocol::messages::consumer_protocol_assignment::TopicPartition;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::{
    ConsumerProtocolAssignment, ConsumerProtocolSubscription, OffsetCommitRequest, ResponseBody,
    ResponseHeader,
};

use super::super::context::{ConnectionContext, RequestContext};
use super::Permits;
use crate::group::{GroupConfig, GroupCoordinator};

pub(super) fn coordinator() -> GroupCoordinator {
    let config = GroupConfig {
        initial_rebalance_delay_ms: 0,
        ..GroupConfig::default()
    };
    GroupCoordinator::with_manual_clock(config, 1_700_000_000_000, 7)
}

/// Everything allowed: no authorizer.
pub(super) struct AllowAll;

impl Permits for AllowAll {
    fn cluster(&self, _: AclOperation) -> bool {
        true
    }
    fn topic(&self, _: AclOperation, _: &str) -> bool {
        true
    }
    fn group(&self, _: AclOperation, _: &str) -> bool {
        true
    }
    fn transactional_id(&self, _: AclOperation, _: &str) -> bool {
        true
    }
    fn operations(&self, rt: ResourceType, _: &str) -> i32 {
        Granted::bits(rt, |_| true)
    }
}

/// Only what is listed allowed, operation by operation (no implied operations).
pub(super) struct Granted(pub(super) Vec<(ResourceType, &'static str, AclOperation)>);

impl Granted {
    fn has(&self, rt: ResourceType, name: &str, op: AclOperation) -> bool {
        self.0
            .iter()
            .any(|(r, n, o)| (*r, *n, *o) == (rt, name, op))
    }

    fn bits(rt: ResourceType, allowed: impl Fn(AclOperation) -> bool) -> i32 {
        rt.supported_operations()
            .iter()
            .filter(|op| allowed(**op))
            .fold(0, |bits, op| bits | (1 << op.code()))
    }
}

impl Permits for Granted {
    fn cluster(&self, op: AclOperation) -> bool {
        self.has(ResourceType::Cluster, "kafka-cluster", op)
    }
    fn topic(&self, op: AclOperation, topic: &str) -> bool {
        self.has(ResourceType::Topic, topic, op)
    }
    fn group(&self, op: AclOperation, group: &str) -> bool {
        self.has(ResourceType::Group, group, op)
    }
    fn transactional_id(&self, op: AclOperation, id: &str) -> bool {
        self.has(ResourceType::TransactionalId, id, op)
    }
    fn operations(&self, rt: ResourceType, name: &str) -> i32 {
        Self::bits(rt, |op| self.has(rt, name, op))
    }
}

/// Encodes at `version`, decodes it back, and returns the decoded body.
pub(super) fn roundtrip(body: &ResponseBody, version: i16) -> ResponseBody {
    let header = ResponseHeader {
        correlation_id: 42,
        ..Default::default()
    };
    let bytes = encode_response(&header, body, version)
        .unwrap_or_else(|e| panic!("{:?} v{version}: {e}", body.api_key()))
        .into_bytes();
    let back = decode_response(&bytes, body.api_key(), version).unwrap();
    assert_eq!(back.header.correlation_id, 42);
    assert!(back.trailing.is_empty());
    back.body
}

/// Runs `fut` while moving the coordinator's clock 10 ms per turn, so that waiting joins
/// complete.
pub(super) async fn drive<F: Future>(c: &GroupCoordinator, fut: F) -> F::Output {
    tokio::pin!(fut);
    for _ in 0..100_000 {
        tokio::select! {
            biased;
            out = &mut fut => return out,
            () = tokio::task::yield_now() => c.advance(10),
        }
    }
    panic!("request never answered");
}

pub(super) fn subscription(topics: &[&str]) -> Bytes {
    let s = ConsumerProtocolSubscription {
        topics: topics.iter().map(|t| KStr::from(t.to_string())).collect(),
        ..Default::default()
    };
    encode_versioned(&s, 0).unwrap()
}

pub(super) fn assignment(topic: &str, partitions: Vec<i32>) -> Bytes {
    let a = ConsumerProtocolAssignment {
        assigned_partitions: vec![TopicPartition {
            topic: KStr::from(topic.to_owned()),
            partitions,
        }],
        ..Default::default()
    };
    encode_versioned(&a, 0).unwrap()
}

pub(super) fn topics(name: &str) -> Option<i32> {
    match name {
        "orders" => Some(3),
        "payments" => Some(1),
        _ => None,
    }
}

/// The connection of the test client: from 127.0.0.1 on the PLAINTEXT listener.
static CONNECTION: LazyLock<ConnectionContext> = LazyLock::new(|| {
    let peer = "127.0.0.1:50000".parse().ok();
    ConnectionContext::new(peer, "PLAINTEXT")
});

/// A request of the test client, `rdkafka` (shown as `/127.0.0.1`).
pub(super) fn client() -> RequestContext<'static> {
    CONNECTION.request(Some("rdkafka"))
}

pub(super) fn commit_request(v: i16, group: &str, offset: i64) -> OffsetCommitRequest {
    OffsetCommitRequest {
        group_id: KStr::from(group.to_owned()),
        generation_id_or_member_epoch: -1,
        member_id: KStr::default(),
        retention_time_ms: -1,
        topics: vec![
            OffsetCommitRequestTopic {
                name: KStr::from("orders"),
                partitions: vec![
                    OffsetCommitRequestPartition {
                        partition_index: 0,
                        committed_offset: offset,
                        committed_leader_epoch: if v >= 6 { 4 } else { -1 },
                        commit_timestamp: -1,
                        committed_metadata: Some(KStr::from("checkpoint")),
                        ..Default::default()
                    },
                    OffsetCommitRequestPartition {
                        partition_index: 7,
                        committed_offset: offset,
                        committed_leader_epoch: -1,
                        commit_timestamp: -1,
                        committed_metadata: None,
                        ..Default::default()
                    },
                ],
                ..Default::default()
            },
            OffsetCommitRequestTopic {
                name: KStr::from("missing"),
                partitions: vec![OffsetCommitRequestPartition {
                    partition_index: 0,
                    committed_offset: offset,
                    committed_leader_epoch: -1,
                    commit_timestamp: -1,
                    ..Default::default()
                }],
                ..Default::default()
            },
        ],
        ..Default::default()
    }
}
