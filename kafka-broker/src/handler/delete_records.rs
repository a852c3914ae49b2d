//! DeleteRecords: moves a partition's log start offset forward.
//!
//! Authorization, as Kafka's `handleDeleteRecordsRequest`: DELETE on each topic, else its
//! partitions are answered TOPIC_AUTHORIZATION_FAILED (before UNKNOWN_TOPIC_OR_PARTITION).

use kafka_auth::acl::AclOperation;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::delete_records_response::{
    DeleteRecordsPartitionResult, DeleteRecordsTopicResult,
};
use kafka_protocol::messages::{DeleteRecordsRequest, DeleteRecordsResponse, ResponseBody};

use super::authz::Authz;
use crate::error::BrokerError;
use crate::node::Broker;

pub(super) fn handle(
    broker: &Broker,
    authz: &Authz<'_>,
    req: DeleteRecordsRequest,
) -> ResponseBody {
    let topics = req
        .topics
        .into_iter()
        .map(|t| (authz.topic(AclOperation::Delete, &t.name), t))
        .map(|(deletable, t)| DeleteRecordsTopicResult {
            partitions: t
                .partitions
                .iter()
                .map(|p| {
                    let r = (|| {
                        if !deletable {
                            return Err(BrokerError::kafka(
                                ErrorCode::TOPIC_AUTHORIZATION_FAILED,
                                format!("not authorized to delete records of topic {}", t.name),
                            ));
                        }
                        let part =
                            broker
                                .partition(&t.name, p.partition_index)
                                .ok_or_else(|| {
                                    BrokerError::kafka(
                                        ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                                        format!("{}-{}", t.name, p.partition_index),
                                    )
                                })?;
                        part.delete_records(p.offset)
                    })();
                    match r {
                        Ok(low) => DeleteRecordsPartitionResult {
                            partition_index: p.partition_index,
                            low_watermark: low,
                            ..Default::default()
                        },
                        Err(e) => DeleteRecordsPartitionResult {
                            partition_index: p.partition_index,
                            low_watermark: -1,
                            error_code: e.error_code().code(),
                            ..Default::default()
                        },
                    }
                })
                .collect(),
            name: t.name,
            ..Default::default()
        })
        .collect();
    ResponseBody::DeleteRecords(DeleteRecordsResponse {
        topics,
        ..Default::default()
    })
}
