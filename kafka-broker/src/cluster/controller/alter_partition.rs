//! AlterPartition: a partition leader asks to change its ISR (Kafka's
//! `ReplicationControlManager.alterPartition`). Versions 0-1 name topics, 2+ give topic ids,
//! 3 gives each new ISR member's broker epoch (-1: not checked).
//!
//! The request's broker must be registered with the request's epoch (STALE_BROKER_EPOCH for
//! the whole request). Then per partition, in Kafka's order: unknown partition
//! (UNKNOWN_TOPIC_OR_PARTITION); epochs above the controller's (NOT_CONTROLLER: this
//! controller is behind); not the leader (INVALID_REQUEST); older leader epoch
//! (FENCED_LEADER_EPOCH); other partition epoch (INVALID_UPDATE_VERSION); an ISR that is not a
//! set of the replicas or lacks the leader, or a recovery state that goes back
//! (INVALID_REQUEST); a member that is not registered, fenced, shutting down or of another
//! epoch (INELIGIBLE_REPLICA, OPERATION_NOT_ATTEMPTED in v0). Otherwise a
//! `PartitionChangeRecord` with the new ISR (and recovery state), and the answer carries the
//! partition as it will be once committed.

use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::alter_partition_request::PartitionData;
use kafka_protocol::messages::alter_partition_response::{self, TopicData};
use kafka_protocol::messages::{AlterPartitionRequest, AlterPartitionResponse};
use kafka_protocol::metadata::{MetadataRecord, PartitionChangeRecord};

use super::{Controller, Outcome};
use crate::cluster::image::{MetadataImage, PartitionImage, RECOVERED, RECOVERING, TopicImage};

impl Controller {
    /// AlterPartition.
    pub fn alter_partition(
        &mut self,
        image: &MetadataImage,
        req: &AlterPartitionRequest,
        version: i16,
    ) -> Outcome<AlterPartitionResponse> {
        let registered = image
            .broker(req.broker_id)
            .is_some_and(|b| b.epoch == req.broker_epoch);
        if !registered {
            return Outcome::answer(AlterPartitionResponse {
                error_code: ErrorCode::STALE_BROKER_EPOCH.code(),
                ..Default::default()
            });
        }
        let mut records = Vec::new();
        let mut topics = Vec::with_capacity(req.topics.len());
        for t in &req.topics {
            let topic = if version >= 2 {
                image.topic_by_id(&t.topic_id)
            } else {
                image.topic(&t.topic_name)
            };
            let mut answer = TopicData {
                topic_name: if version < 2 {
                    t.topic_name.clone()
                } else {
                    Default::default()
                },
                topic_id: if version >= 2 {
                    t.topic_id
                } else {
                    Default::default()
                },
                partitions: Vec::with_capacity(t.partitions.len()),
                ..Default::default()
            };
            for p in &t.partitions {
                let result = match topic {
                    None if version >= 2 => Err(ErrorCode::UNKNOWN_TOPIC_ID),
                    None => Err(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION),
                    Some(topic) => decide(image, req.broker_id, topic, p, version),
                };
                answer.partitions.push(match result {
                    Ok((partition, change)) => {
                        if let Some(change) = change {
                            records.push(MetadataRecord::PartitionChange(change));
                        }
                        alter_partition_response::PartitionData {
                            partition_index: p.partition_index,
                            leader_id: partition.leader,
                            leader_epoch: partition.leader_epoch,
                            isr: partition.isr,
                            leader_recovery_state: partition.leader_recovery_state,
                            partition_epoch: partition.partition_epoch,
                            ..Default::default()
                        }
                    }
                    Err(code) => alter_partition_response::PartitionData {
                        partition_index: p.partition_index,
                        error_code: code.code(),
                        ..Default::default()
                    },
                });
            }
            topics.push(answer);
        }
        Outcome::new(
            records,
            AlterPartitionResponse {
                topics,
                ..Default::default()
            },
        )
    }
}

/// The new ISR's members and their broker epochs (-1: not checked).
fn new_isr(p: &PartitionData, version: i16) -> Vec<(i32, i64)> {
    if version >= 3 {
        p.new_isr_with_epochs
            .iter()
            .map(|b| (b.broker_id, b.broker_epoch))
            .collect()
    } else {
        p.new_isr.iter().map(|id| (*id, -1)).collect()
    }
}

/// One partition's check, and the partition as it will be with its change (if any).
fn decide(
    image: &MetadataImage,
    leader: i32,
    topic: &TopicImage,
    p: &PartitionData,
    version: i16,
) -> Result<(PartitionImage, Option<PartitionChangeRecord>), ErrorCode> {
    let current = topic
        .partitions
        .get(&p.partition_index)
        .ok_or(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION)?;
    if p.leader_epoch > current.leader_epoch || p.partition_epoch > current.partition_epoch {
        return Err(ErrorCode::NOT_CONTROLLER);
    }
    if leader != current.leader {
        return Err(ErrorCode::INVALID_REQUEST);
    }
    if p.leader_epoch != current.leader_epoch {
        return Err(ErrorCode::FENCED_LEADER_EPOCH);
    }
    if p.partition_epoch != current.partition_epoch {
        return Err(ErrorCode::INVALID_UPDATE_VERSION);
    }
    let members = new_isr(p, version);
    let isr: Vec<i32> = members.iter().map(|(id, _)| *id).collect();
    let is_set = isr
        .iter()
        .enumerate()
        .all(|(i, r)| current.replicas.contains(r) && !isr[..i].contains(r));
    if !is_set || !isr.contains(&current.leader) {
        return Err(ErrorCode::INVALID_REQUEST);
    }
    let recovery = if version >= 1 {
        p.leader_recovery_state
    } else {
        RECOVERED
    };
    if !matches!(recovery, RECOVERED | RECOVERING)
        || (recovery == RECOVERING && isr.len() > 1)
        || (current.leader_recovery_state == RECOVERED && recovery == RECOVERING)
    {
        return Err(ErrorCode::INVALID_REQUEST);
    }
    let eligible = members.iter().all(|(id, epoch)| {
        image
            .broker(*id)
            .is_some_and(|b| b.is_active() && (*epoch == -1 || *epoch == b.epoch))
    });
    if !eligible {
        return Err(if version >= 1 {
            ErrorCode::INELIGIBLE_REPLICA
        } else {
            ErrorCode::OPERATION_NOT_ATTEMPTED
        });
    }
    let mut change = PartitionChangeRecord {
        partition_id: p.partition_index,
        topic_id: topic.id,
        ..Default::default()
    };
    if isr != current.isr {
        change.isr = Some(isr);
    }
    if recovery != current.leader_recovery_state {
        change.leader_recovery_state = recovery;
    }
    if change.isr.is_none() && change.leader_recovery_state == -1 {
        return Ok((current.clone(), None));
    }
    let next = crate::cluster::image::merged(current, &change).unwrap_or_else(|_| current.clone());
    Ok((next, Some(change)))
}
