//! DescribeProducers (v0): the active producers of each partition this broker leads, from the
//! partition's producer state (producer id, epoch, last sequence and timestamp, the coordinator
//! epoch of its last marker, and where its open transaction starts, -1 for none). A partition
//! that is not served here answers as Kafka's `ReplicaManager.activeProducerState` does:
//! NOT_LEADER_OR_FOLLOWER on a follower of a cluster, UNKNOWN_TOPIC_OR_PARTITION when unknown,
//! KAFKA_STORAGE_ERROR when its log is offline.
//!
//! Checks in Kafka's order (`handleDescribeProducersRequest`): a topic name that is not valid
//! is INVALID_TOPIC_EXCEPTION, then READ on the topic is needed, else its partitions are
//! answered TOPIC_AUTHORIZATION_FAILED (before UNKNOWN_TOPIC_OR_PARTITION).

use kafka_auth::acl::AclOperation;
use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::describe_producers_response::{
    PartitionResponse, ProducerState, TopicResponse,
};
use kafka_protocol::messages::{DescribeProducersRequest, DescribeProducersResponse, ResponseBody};

use super::authz::Authz;
use crate::error::BrokerError;
use crate::node::Broker;

pub(super) fn handle(
    broker: &Broker,
    authz: &Authz<'_>,
    req: DescribeProducersRequest,
) -> ResponseBody {
    let topics = req
        .topics
        .into_iter()
        .map(|t| {
            let refused = crate::topics::validate_topic_name(&t.name)
                .err()
                .or_else(|| {
                    (!authz.topic(AclOperation::Read, &t.name)).then(|| {
                        BrokerError::kafka(
                            ErrorCode::TOPIC_AUTHORIZATION_FAILED,
                            format!("not authorized to read topic {}", t.name),
                        )
                    })
                });
            (refused, t)
        })
        .map(|(refused, t)| TopicResponse {
            partitions: t
                .partition_indexes
                .iter()
                .map(|&index| match &refused {
                    Some(e) => failed(index, e),
                    None => partition(broker, &t.name, index),
                })
                .collect(),
            name: t.name,
            ..Default::default()
        })
        .collect();
    ResponseBody::DescribeProducers(DescribeProducersResponse {
        topics,
        ..Default::default()
    })
}

fn failed(index: i32, e: &BrokerError) -> PartitionResponse {
    PartitionResponse {
        partition_index: index,
        error_code: e.error_code().code(),
        error_message: Some(KStr::from(e.to_string())),
        ..Default::default()
    }
}

fn partition(broker: &Broker, topic: &str, index: i32) -> PartitionResponse {
    let Some(part) = broker.led_partition(topic, index) else {
        return failed(index, &broker.partition_error(topic, index));
    };
    PartitionResponse {
        partition_index: index,
        active_producers: part
            .producer_views()
            .into_iter()
            .map(|p| ProducerState {
                producer_id: p.producer_id,
                producer_epoch: i32::from(p.epoch),
                last_sequence: p.last_sequence,
                last_timestamp: p.last_timestamp,
                coordinator_epoch: p.coordinator_epoch,
                current_txn_start_offset: p.current_txn_start_offset,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}
