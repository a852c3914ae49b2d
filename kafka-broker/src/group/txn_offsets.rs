//! Transactional offset commits (TxnOffsetCommit, KIP-98/KIP-447) on the [`GroupManager`].
//!
//! A producer's TxnOffsetCommit is written to the group's `__consumer_offsets` partition as a
//! transactional batch of that producer, and its offsets are *pending* for (group, producer):
//! OffsetFetch does not show them (with `require_stable` it answers UNSTABLE_OFFSET_COMMIT for
//! the partition instead). When the transaction coordinator has appended the producer's
//! COMMIT or ABORT marker to that partition, [`GroupManager::complete_transaction`] moves the
//! producer's pending offsets of the partition's groups to the committed ones, or drops them.
//! The same happens at load time when replay meets the marker; a transaction whose marker is
//! not in the log yet stays pending.
//!
//! Kafka's rules kept here:
//! - a committed transaction's offset replaces a committed offset only if its record came
//!   later in the log (`log_order`), so that a plain commit appended after the transactional
//!   one wins, also after compaction;
//! - a tombstone of a partition (OffsetDelete, DeleteGroups) drops the pending offsets of that
//!   partition too, for every producer;
//! - expiry keeps an offset with a pending transactional offset for its partition, and never
//!   removes a group that has pending transactional offsets.

use kafka_protocol::error_code::ErrorCode;

use super::manager::GroupManager;
use super::offset_store::OffsetAndMetadata;
use super::records::OffsetsRecord;
use super::state::Group;
use super::types::{GroupState, TxnBatch, TxnCommitRequest};

/// Kafka's check of a transactional commit: the generation, member id and instance id only
/// when given (transactional commits from producers that know no group, generation -1 and no
/// member, are accepted whatever the group's state; no REBALANCE_IN_PROGRESS either).
fn validate_txn_commit(group: &Group, req: &TxnCommitRequest) -> Result<(), ErrorCode> {
    if group.state == GroupState::Dead {
        return Err(ErrorCode::COORDINATOR_NOT_AVAILABLE);
    }
    if req.generation_id >= 0 || !req.member_id.is_empty() || req.group_instance_id.is_some() {
        group.validate_member(&req.member_id, req.group_instance_id.as_deref())?;
        if req.generation_id != group.generation {
            return Err(ErrorCode::ILLEGAL_GENERATION);
        }
    }
    Ok(())
}

impl GroupManager {
    /// TxnOffsetCommit: one error per partition, in request order. Accepted offsets become
    /// pending for (group, producer) and their records come out of
    /// [`GroupManager::take_txn_batches`] as one batch. Topic existence is the caller's to
    /// check. A group that does not exist is created empty (unless the request names a
    /// generation: then it is a member of a group that is gone, ILLEGAL_GENERATION).
    pub fn txn_commit_offsets(&mut self, req: &TxnCommitRequest, now: i64) -> Vec<ErrorCode> {
        let all = |e: ErrorCode| vec![e; req.partitions.len()];
        if req.group_id.is_empty() {
            return all(ErrorCode::INVALID_GROUP_ID);
        }
        if let Err(e) = self.check_group(&req.group_id) {
            return all(e);
        }
        let consumer = self.check_consumer_commit(
            &req.group_id,
            &req.member_id,
            req.generation_id,
            true,
            i16::MAX,
        );
        if let Some(Err(e)) = consumer {
            return all(e);
        }
        if consumer.is_none() && !self.groups.contains_key(&req.group_id) {
            if req.generation_id >= 0 {
                return all(ErrorCode::ILLEGAL_GENERATION);
            }
            self.groups
                .insert(req.group_id.clone(), Group::new(req.group_id.clone(), now));
        }
        if consumer.is_none() {
            let Some(group) = self.groups.get(&req.group_id) else {
                return all(ErrorCode::COORDINATOR_NOT_AVAILABLE);
            };
            if let Err(e) = validate_txn_commit(group, req) {
                return all(e);
            }
        }
        let max_metadata = self.config.offset_metadata_max_bytes;
        let mut records = Vec::new();
        let errors = req
            .partitions
            .iter()
            .map(|p| {
                let metadata = p.metadata.clone().unwrap_or_default();
                if metadata.len() > max_metadata {
                    return ErrorCode::OFFSET_METADATA_TOO_LARGE;
                }
                let value = OffsetAndMetadata {
                    offset: p.offset,
                    leader_epoch: p.leader_epoch,
                    metadata,
                    commit_timestamp: now,
                    expire_timestamp: None,
                    log_order: self.next_log_order(),
                };
                records.push(OffsetsRecord::offset_commit(
                    &req.group_id,
                    &p.topic,
                    p.partition,
                    value.clone(),
                ));
                self.pending_txn.put(
                    &req.group_id,
                    req.producer_id,
                    &p.topic,
                    p.partition,
                    Some(value),
                );
                ErrorCode::NONE
            })
            .collect();
        if !records.is_empty() {
            tracing::debug!(group = %req.group_id, transactional_id = %req.transactional_id,
                producer_id = req.producer_id, offsets = records.len(),
                "transactional offsets pending");
            self.fx.txn_batches.push(TxnBatch {
                producer_id: req.producer_id,
                producer_epoch: req.producer_epoch,
                records,
            });
        }
        errors
    }

    /// The records of the transactional offset commits since the last call, one batch per
    /// TxnOffsetCommit, in order.
    #[must_use]
    pub fn take_txn_batches(&mut self) -> Vec<TxnBatch> {
        std::mem::take(&mut self.fx.txn_batches)
    }

    /// The end of producer `producer_id`'s transaction in `__consumer_offsets` partition
    /// `offsets_partition` (its marker is appended there, or replayed): on commit its pending
    /// offsets of the groups of that partition become committed, unless a committed offset's
    /// record came later in the log; on abort they are dropped. Returns how many offsets were
    /// committed.
    pub fn complete_transaction(
        &mut self,
        offsets_partition: i32,
        producer_id: i64,
        commit: bool,
    ) -> usize {
        let config = &self.config;
        let groups = self.pending_txn.groups_of(producer_id, |g| {
            config.partition_for(g) == offsets_partition
        });
        let mut committed = 0;
        for group in groups {
            let offsets = self.pending_txn.take(&group, producer_id);
            if !commit {
                tracing::debug!(%group, producer_id, offsets = offsets.len(),
                    "transactional offsets aborted");
                continue;
            }
            for ((topic, partition), value) in offsets {
                let later = self
                    .offsets
                    .get(&group, &topic, partition)
                    .is_some_and(|c| c.log_order > value.log_order);
                if later {
                    tracing::info!(%group, %topic, partition, producer_id, offset = value.offset,
                        "committed transactional offset not applied: a later commit of the partition stands");
                } else {
                    self.offsets.put(&group, &topic, partition, value);
                    committed += 1;
                }
            }
        }
        committed
    }

    /// Whether some producer has a pending transactional offset for the partition.
    pub fn has_pending_txn_offset(&self, group: &str, topic: &str, partition: i32) -> bool {
        self.pending_txn.has_partition(group, topic, partition)
    }

    /// Whether the group has pending transactional offsets.
    pub fn has_pending_txn_offsets(&self, group: &str) -> bool {
        self.pending_txn.has_group(group)
    }

    /// The producers with pending transactional offsets in the group.
    pub fn pending_txn_producers(&self, group: &str) -> Vec<i64> {
        self.pending_txn.producers(group)
    }

    /// A producer's pending transactional offset for a partition.
    pub fn pending_txn_offset(
        &self,
        group: &str,
        producer_id: i64,
        topic: &str,
        partition: i32,
    ) -> Option<&OffsetAndMetadata> {
        self.pending_txn.get(group, producer_id, topic, partition)
    }

    /// Undoes a pending offset whose record could not be written: puts back `previous` if the
    /// pending offset is still the one at `log_order` (nothing came after it).
    pub(super) fn restore_pending(
        &mut self,
        group: &str,
        producer_id: i64,
        topic: &str,
        partition: i32,
        log_order: u64,
        previous: Option<OffsetAndMetadata>,
    ) {
        let current = self
            .pending_txn_offset(group, producer_id, topic, partition)
            .map(|v| v.log_order);
        if current == Some(log_order) {
            self.pending_txn
                .put(group, producer_id, topic, partition, previous);
        }
    }
}
