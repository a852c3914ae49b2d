//! OffsetForLeaderEpoch: the end offset of a leader epoch (for truncation detection, KIP-320).
//!
//! Authorization, as Kafka's `handleOffsetForLeaderEpochRequest`: CLUSTER_ACTION on the
//! cluster (a follower) allows every topic; otherwise (a consumer, KIP-320) DESCRIBE on each
//! topic, else its partitions are answered TOPIC_AUTHORIZATION_FAILED.

use kafka_auth::acl::AclOperation;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::offset_for_leader_epoch_response::{
    EpochEndOffset, OffsetForLeaderTopicResult,
};
use kafka_protocol::messages::{
    OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse, ResponseBody,
};

use super::authz::Authz;
use crate::node::Broker;

pub(super) fn handle(
    broker: &Broker,
    authz: &Authz<'_>,
    req: OffsetForLeaderEpochRequest,
) -> ResponseBody {
    // Either allows; DESCRIBE is asked first and CLUSTER_ACTION once, only when needed, so a
    // consumer's requests do not log a cluster denial each time (Kafka asks that one quietly).
    let mut replica: Option<bool> = None;
    let topics = req
        .topics
        .into_iter()
        .map(|t| {
            let described = authz.topic(AclOperation::Describe, &t.topic)
                || *replica.get_or_insert_with(|| authz.cluster(AclOperation::ClusterAction));
            (described, t)
        })
        .map(|(described, t)| OffsetForLeaderTopicResult {
            partitions: t
                .partitions
                .iter()
                .map(|p| {
                    let fail = |code: ErrorCode| EpochEndOffset {
                        error_code: code.code(),
                        partition: p.partition,
                        leader_epoch: -1,
                        end_offset: -1,
                        ..Default::default()
                    };
                    if !described {
                        return fail(ErrorCode::TOPIC_AUTHORIZATION_FAILED);
                    }
                    let Some(part) = broker.partition(&t.topic, p.partition) else {
                        return fail(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION);
                    };
                    if let Err(code) = part.check_leader_epoch(p.current_leader_epoch) {
                        return fail(code);
                    }
                    let (epoch, end) = part.end_offset_for_epoch(p.leader_epoch);
                    EpochEndOffset {
                        partition: p.partition,
                        leader_epoch: epoch,
                        end_offset: end,
                        ..Default::default()
                    }
                })
                .collect(),
            topic: t.topic,
            ..Default::default()
        })
        .collect();
    ResponseBody::OffsetForLeaderEpoch(OffsetForLeaderEpochResponse {
        topics,
        ..Default::default()
    })
}
