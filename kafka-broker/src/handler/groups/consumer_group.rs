//! ConsumerGroupHeartbeat and ConsumerGroupDescribe (KIP-848), as Kafka 4's `KafkaApis`
//! answers them:
//!
//! - both answer UNSUPPORTED_VERSION while `group.version` 1 is not finalized (a node created
//!   before it, until `kafka-features upgrade --feature group.version=1`); ApiVersions does
//!   not list them then either;
//! - ConsumerGroupHeartbeat needs READ on the group (GROUP_AUTHORIZATION_FAILED), and
//!   DESCRIBE on every subscribed topic name (TOPIC_AUTHORIZATION_FAILED otherwise); a
//!   regular expression only matches the topics the member may DESCRIBE;
//! - ConsumerGroupDescribe needs DESCRIBE on each group, answers the group's authorized
//!   operations when asked, and refuses a group whose members' topics the client may not
//!   DESCRIBE (TOPIC_AUTHORIZATION_FAILED, no members shown).
//!
//! The topics are `image` (the broker's, handed in by the dispatcher).

use std::collections::BTreeSet;

use kafka_auth::acl::{AclOperation, ResourceType};
use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::consumer_group_describe_response::{
    self as describe, DescribedGroup,
};
use kafka_protocol::messages::consumer_group_heartbeat_response::{
    Assignment, TopicPartitions as AssignedTopic,
};
use kafka_protocol::messages::{
    ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse, ResponseBody,
};

use super::super::authorized::NOT_ASKED;
use super::super::context::RequestContext;
use super::{GROUP_REFUSED, Permits, s, text};
use crate::group::GroupCoordinator;
use crate::group::consumer::{
    DescribedTopicPartitions, HeartbeatRequest, TopicPartitions, TopicsImage, TopicsSnapshot,
};

/// Kafka's message when ConsumerGroupDescribe refuses a group for its topics.
const TOPICS_REFUSED: &str =
    "The described group uses topics that the client is not authorized to describe.";

/// The member type ConsumerGroupDescribe v1 reports for a member of the consumer protocol.
const MEMBER_TYPE_CONSUMER: i8 = 1;

fn heartbeat_error(code: ErrorCode, message: Option<String>) -> ResponseBody {
    ResponseBody::ConsumerGroupHeartbeat(ConsumerGroupHeartbeatResponse {
        error_code: code.0,
        error_message: message.map(s),
        ..Default::default()
    })
}

/// ConsumerGroupHeartbeat; `enabled` is whether `group.version` >= 1 is finalized.
pub(crate) async fn consumer_group_heartbeat(
    coordinator: &GroupCoordinator,
    authz: &dyn Permits,
    ctx: &RequestContext<'_>,
    image: &TopicsSnapshot,
    enabled: bool,
    req: ConsumerGroupHeartbeatRequest,
    version: i16,
) -> ResponseBody {
    if !enabled {
        return heartbeat_error(
            ErrorCode::UNSUPPORTED_VERSION,
            Some("The new consumer group protocol is not enabled (group.version < 1).".into()),
        );
    }
    if !authz.group(AclOperation::Read, &req.group_id) {
        return heartbeat_error(
            ErrorCode::GROUP_AUTHORIZATION_FAILED,
            Some(GROUP_REFUSED.into()),
        );
    }
    if let Some(names) = &req.subscribed_topic_names {
        if names
            .iter()
            .any(|t| !authz.topic(AclOperation::Describe, t))
        {
            return heartbeat_error(ErrorCode::TOPIC_AUTHORIZATION_FAILED, None);
        }
    }
    // A regex matches only the topics the member may see.
    let visible;
    let image: &dyn TopicsImage = if req.subscribed_topic_regex.is_some() {
        visible = describable(image, authz);
        &visible
    } else {
        image
    };
    let request = HeartbeatRequest {
        version,
        group_id: text(&req.group_id),
        member_id: text(&req.member_id),
        member_epoch: req.member_epoch,
        instance_id: req.instance_id.as_ref().map(text),
        rack_id: req.rack_id.as_ref().map(text),
        rebalance_timeout_ms: req.rebalance_timeout_ms,
        subscribed_topic_names: req
            .subscribed_topic_names
            .as_ref()
            .map(|names| names.iter().map(text).collect()),
        subscribed_topic_regex: req.subscribed_topic_regex.as_ref().map(text),
        server_assignor: req.server_assignor.as_ref().map(text),
        topic_partitions: req.topic_partitions.as_ref().map(|tps| {
            let mut owned = TopicPartitions::new();
            for tp in tps {
                owned
                    .entry(tp.topic_id)
                    .or_default()
                    .extend(tp.partitions.iter().copied());
            }
            owned
        }),
        client_id: ctx.client_id().unwrap_or("").to_owned(),
        client_host: ctx.client_host(),
    };
    match coordinator.consumer_heartbeat(request, image).await {
        Ok(answer) => ResponseBody::ConsumerGroupHeartbeat(ConsumerGroupHeartbeatResponse {
            member_id: Some(s(answer.member_id)),
            member_epoch: answer.member_epoch,
            heartbeat_interval_ms: answer.heartbeat_interval_ms,
            assignment: answer.assignment.map(|tps| Assignment {
                topic_partitions: tps
                    .into_iter()
                    .map(|(topic_id, ps)| AssignedTopic {
                        topic_id,
                        partitions: ps.into_iter().collect(),
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }),
            ..Default::default()
        }),
        Err(refusal) => heartbeat_error(refusal.code, refusal.message),
    }
}

/// The topics of `image` the request may DESCRIBE.
fn describable(image: &TopicsSnapshot, authz: &dyn Permits) -> TopicsSnapshot {
    let mut out = TopicsSnapshot::default();
    for name in image.topic_names() {
        if !authz.topic(AclOperation::Describe, &name) {
            continue;
        }
        let Some(id) = image.topic_id(&name) else {
            continue;
        };
        let count = image.partition_count(id).unwrap_or(0);
        let racks: Vec<BTreeSet<String>> =
            (0..count).map(|p| image.partition_racks(id, p)).collect();
        out.add_with_racks(&name, id, racks);
    }
    out
}

/// ConsumerGroupDescribe; `enabled` is whether `group.version` >= 1 is finalized.
pub(crate) fn consumer_group_describe(
    coordinator: &GroupCoordinator,
    authz: &dyn Permits,
    image: &TopicsSnapshot,
    enabled: bool,
    req: ConsumerGroupDescribeRequest,
    version: i16,
) -> ResponseBody {
    let failed = |id: &KStr, code: ErrorCode, message: Option<String>| DescribedGroup {
        error_code: code.0,
        error_message: message.map(s),
        group_id: id.clone(),
        authorized_operations: NOT_ASKED,
        ..Default::default()
    };
    let groups = req
        .group_ids
        .iter()
        .map(|id| {
            if !enabled {
                return failed(id, ErrorCode::UNSUPPORTED_VERSION, None);
            }
            if !authz.group(AclOperation::Describe, id) {
                return failed(
                    id,
                    ErrorCode::GROUP_AUTHORIZATION_FAILED,
                    Some(GROUP_REFUSED.into()),
                );
            }
            let d = match coordinator.consumer_describe(id.as_str(), image) {
                Ok(d) => d,
                Err(r) => return failed(id, r.code, r.message),
            };
            let topics: BTreeSet<&str> = d
                .members
                .iter()
                .flat_map(|m| m.assignment.iter().chain(&m.target_assignment))
                .map(|t| t.topic_name.as_str())
                .collect();
            if topics
                .iter()
                .any(|t| !authz.topic(AclOperation::Describe, t))
            {
                return failed(
                    id,
                    ErrorCode::TOPIC_AUTHORIZATION_FAILED,
                    Some(TOPICS_REFUSED.into()),
                );
            }
            let assignment = |tps: Vec<DescribedTopicPartitions>| describe::Assignment {
                topic_partitions: tps
                    .into_iter()
                    .map(|t| describe::TopicPartitions {
                        topic_id: t.topic_id,
                        topic_name: s(t.topic_name),
                        partitions: t.partitions,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            };
            DescribedGroup {
                error_code: ErrorCode::NONE.0,
                group_id: id.clone(),
                group_state: KStr::from_static(d.state.as_str()),
                group_epoch: d.group_epoch,
                assignment_epoch: d.assignment_epoch,
                assignor_name: s(d.assignor_name),
                members: d
                    .members
                    .into_iter()
                    .map(|m| describe::Member {
                        member_id: s(m.member_id),
                        instance_id: m.instance_id.map(s),
                        rack_id: m.rack_id.map(s),
                        member_epoch: m.member_epoch,
                        client_id: s(m.client_id),
                        client_host: s(m.client_host),
                        subscribed_topic_names: m
                            .subscribed_topic_names
                            .into_iter()
                            .map(s)
                            .collect(),
                        subscribed_topic_regex: (!m.subscribed_topic_regex.is_empty())
                            .then(|| s(m.subscribed_topic_regex)),
                        assignment: assignment(m.assignment),
                        target_assignment: assignment(m.target_assignment),
                        member_type: if version >= 1 {
                            MEMBER_TYPE_CONSUMER
                        } else {
                            -1
                        },
                        ..Default::default()
                    })
                    .collect(),
                authorized_operations: if req.include_authorized_operations {
                    authz.operations(ResourceType::Group, id)
                } else {
                    NOT_ASKED
                },
                ..Default::default()
            }
        })
        .collect();
    ResponseBody::ConsumerGroupDescribe(ConsumerGroupDescribeResponse {
        groups,
        ..Default::default()
    })
}
