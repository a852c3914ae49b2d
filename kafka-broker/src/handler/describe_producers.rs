//! DescribeProducers (v0): the active producers of each partition this broker leads, from the
//! partition's producer state (producer id, epoch, last sequence and timestamp, the coordinator
//! epoch of its last marker, and where its open transaction starts, -1 for none). A partition
//! that is not served here answers as Kafka's `ReplicaManager.activeProducerState` does:
//! NOT_LEADER_OR_FOLLOWER on a follower of a cluster, UNKNOWN_TOPIC_OR_PARTITION when unknown,
//! KAFKA_STORAGE_ERROR when its log is offline.

use kafka_protocol::KStr;
use kafka_protocol::messages::describe_producers_response::{
    PartitionResponse, ProducerState, TopicResponse,
};
use kafka_protocol::messages::{DescribeProducersRequest, DescribeProducersResponse, ResponseBody};

use crate::node::Broker;

pub(super) fn handle(broker: &Broker, req: DescribeProducersRequest) -> ResponseBody {
    let topics = req
        .topics
        .into_iter()
        .map(|t| TopicResponse {
            partitions: t
                .partition_indexes
                .iter()
                .map(|&index| partition(broker, &t.name, index))
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

fn partition(broker: &Broker, topic: &str, index: i32) -> PartitionResponse {
    let Some(part) = broker.led_partition(topic, index) else {
        let e = broker.partition_error(topic, index);
        return PartitionResponse {
            partition_index: index,
            error_code: e.error_code().code(),
            error_message: Some(KStr::from(e.to_string())),
            ..Default::default()
        };
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
