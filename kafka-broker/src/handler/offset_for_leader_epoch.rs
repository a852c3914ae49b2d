//! OffsetForLeaderEpoch: the end offset of a leader epoch (for truncation detection, KIP-320).

use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::offset_for_leader_epoch_response::{
    EpochEndOffset, OffsetForLeaderTopicResult,
};
use kafka_protocol::messages::{
    OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse, ResponseBody,
};

use crate::node::Broker;

pub(super) fn handle(broker: &Broker, req: OffsetForLeaderEpochRequest) -> ResponseBody {
    let topics = req
        .topics
        .into_iter()
        .map(|t| OffsetForLeaderTopicResult {
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
