//! ListOffsets: earliest (-2), latest (-1), max timestamp (-3), earliest local (-4), latest
//! tiered (-5, none here), or the first offset at or after a timestamp (time index).
//!
//! Authorization, as Kafka's `handleListOffsetRequest`: DESCRIBE on each topic, else its
//! partitions are answered TOPIC_AUTHORIZATION_FAILED (whether the topic exists or not).

use kafka_auth::acl::AclOperation;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::{ListOffsetsRequest, ListOffsetsResponse, ResponseBody};

use super::authz::Authz;
use crate::error::BrokerError;
use crate::node::Broker;
use crate::replica::Isolation;

const LATEST: i64 = -1;
const EARLIEST: i64 = -2;
const MAX_TIMESTAMP: i64 = -3;
const EARLIEST_LOCAL: i64 = -4;
/// KIP-1005: without tiered storage there is no tiered offset (-1).
const LATEST_TIERED: i64 = -5;

/// How far a lookup may answer, as Kafka decides it from the request's isolation level:
/// v0 has none (the log end offset), v1 reads up to the high watermark, v2+ read_uncommitted
/// (0) too, read_committed (1) up to the last stable offset. The bound itself is the
/// partition layer's ([`Isolation::bound`]).
fn isolation(version: i16, isolation_level: i8) -> Isolation {
    match version {
        0 => Isolation::LogEnd,
        1 => Isolation::HighWatermark,
        _ if isolation_level == 1 => Isolation::Committed,
        _ => Isolation::HighWatermark,
    }
}

pub(super) fn handle(
    broker: &Broker,
    authz: &Authz<'_>,
    req: ListOffsetsRequest,
    version: i16,
) -> ResponseBody {
    let isolation = isolation(version, req.isolation_level);
    let topics = req
        .topics
        .into_iter()
        .map(|t| (authz.topic(AclOperation::Describe, &t.name), t))
        .map(|(described, t)| ListOffsetsTopicResponse {
            partitions: t
                .partitions
                .iter()
                .map(|p| {
                    let r = if described {
                        lookup(
                            broker,
                            &t.name,
                            p.partition_index,
                            p.timestamp,
                            p.current_leader_epoch,
                            isolation,
                        )
                    } else {
                        Err(BrokerError::kafka(
                            ErrorCode::TOPIC_AUTHORIZATION_FAILED,
                            format!("not authorized to describe topic {}", t.name),
                        ))
                    };
                    match r {
                        Ok((offset, timestamp, epoch)) => ListOffsetsPartitionResponse {
                            partition_index: p.partition_index,
                            old_style_offsets: if version == 0 {
                                (offset >= 0 && p.max_num_offsets > 0)
                                    .then_some(offset)
                                    .into_iter()
                                    .collect()
                            } else {
                                Vec::new()
                            },
                            timestamp: if version >= 1 { timestamp } else { -1 },
                            offset: if version >= 1 { offset } else { -1 },
                            leader_epoch: if version >= 4 { epoch } else { -1 },
                            ..Default::default()
                        },
                        Err(e) => ListOffsetsPartitionResponse {
                            partition_index: p.partition_index,
                            error_code: e.error_code().code(),
                            timestamp: -1,
                            offset: -1,
                            leader_epoch: -1,
                            ..Default::default()
                        },
                    }
                })
                .collect(),
            name: t.name,
            ..Default::default()
        })
        .collect();
    ResponseBody::ListOffsets(ListOffsetsResponse {
        topics,
        ..Default::default()
    })
}

/// (offset, timestamp, leader epoch); offset -1 when no record has a timestamp that late.
fn lookup(
    broker: &Broker,
    topic: &str,
    partition: i32,
    timestamp: i64,
    current_leader_epoch: i32,
    isolation: Isolation,
) -> Result<(i64, i64, i32), BrokerError> {
    let part = broker
        .led_partition(topic, partition)
        .ok_or_else(|| broker.partition_error(topic, partition))?;
    let epoch = part.leader_epoch();
    part.check_leader_epoch(current_leader_epoch)
        .map_err(|code| {
            BrokerError::kafka(
                code,
                format!("leader epoch {current_leader_epoch}, ours {epoch}"),
            )
        })?;
    let o = part.offsets();
    let bound = isolation.bound(&o);
    Ok(match timestamp {
        LATEST => (bound, -1, epoch),
        EARLIEST | EARLIEST_LOCAL => (o.log_start, -1, epoch),
        LATEST_TIERED => (-1, -1, -1),
        MAX_TIMESTAMP => match part.max_timestamp()? {
            Some((offset, ts)) if offset < bound => (offset, ts, epoch),
            _ => (-1, -1, -1),
        },
        ts if ts < 0 => {
            return Err(BrokerError::kafka(
                ErrorCode::INVALID_REQUEST,
                format!("timestamp {ts} is not a known spec"),
            ));
        }
        ts => match part.offset_for_timestamp(ts)? {
            Some((offset, found)) if offset < bound => (offset, found, epoch),
            _ => (-1, -1, -1),
        },
    })
}
