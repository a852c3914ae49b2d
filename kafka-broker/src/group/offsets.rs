//! OffsetCommit, OffsetFetch, OffsetDelete and offset expiry on the [`GroupManager`] (the
//! offsets themselves live in an [`OffsetStore`](super::OffsetStore)).

use std::collections::BTreeSet;

use kafka_protocol::error_code::ErrorCode;

use super::CONSUMER_PROTOCOL_TYPE;
use super::manager::GroupManager;
use super::offset_store::OffsetAndMetadata;
use super::records::OffsetsRecord;
use super::state::Group;
use super::types::{CommitRequest, FetchedOffset, GroupState};

/// Kafka's rule for who may commit: members of the current generation, or anyone with
/// generation -1, no member id and no instance id while the group has no members.
fn validate_commit(group: &Group, req: &CommitRequest) -> Result<(), ErrorCode> {
    if group.state == GroupState::Dead {
        return Err(ErrorCode::COORDINATOR_NOT_AVAILABLE);
    }
    if req.generation_id >= 0 || !req.member_id.is_empty() || req.group_instance_id.is_some() {
        group.validate_member(&req.member_id, req.group_instance_id.as_deref())?;
        if req.generation_id != group.generation {
            return Err(ErrorCode::ILLEGAL_GENERATION);
        }
        Ok(())
    } else if group.state != GroupState::Empty {
        // A simple commit into a group that has members.
        Err(ErrorCode::UNKNOWN_MEMBER_ID)
    } else {
        Ok(())
    }
}

impl GroupManager {
    /// OffsetCommit: one error per partition, in request order. Topic existence is the
    /// caller's to check; `now` is the commit timestamp unless the request (v1) gives one.
    pub fn commit_offsets(&mut self, req: &CommitRequest, now: i64) -> Vec<ErrorCode> {
        self.commit_offsets_at(req, i16::MAX, now)
    }

    /// [`GroupManager::commit_offsets`] by OffsetCommit `api_version` (a consumer group's
    /// member must use v9 or above).
    pub fn commit_offsets_at(
        &mut self,
        req: &CommitRequest,
        api_version: i16,
        now: i64,
    ) -> Vec<ErrorCode> {
        let all = |e: ErrorCode| vec![e; req.partitions.len()];
        if let Err(e) = self.check_group(&req.group_id) {
            return all(e);
        }
        let consumer = self.check_consumer_commit(
            &req.group_id,
            &req.member_id,
            req.generation_id,
            false,
            api_version,
        );
        match consumer {
            Some(Err(e)) => return all(e),
            Some(Ok(())) => return self.store_commit(req, now),
            None => {}
        }
        if !self.groups.contains_key(&req.group_id) {
            if req.generation_id >= 0 {
                // From an older generation of a group that is gone.
                return all(ErrorCode::ILLEGAL_GENERATION);
            }
            // A consumer using Kafka only to store offsets.
            self.groups
                .insert(req.group_id.clone(), Group::new(req.group_id.clone(), now));
        }
        let Some(group) = self.groups.get_mut(&req.group_id) else {
            return all(ErrorCode::COORDINATOR_NOT_AVAILABLE);
        };
        if let Err(e) = validate_commit(group, req) {
            return all(e);
        }
        match group.state {
            GroupState::Empty => {}
            GroupState::Stable | GroupState::PreparingRebalance => {
                // Commits during a rebalance are fine; the heartbeat tells the member to rejoin.
                if let Some(m) = group.member_mut(&req.member_id) {
                    m.touch(now);
                }
            }
            // The member has its join answer but no assignment yet.
            GroupState::CompletingRebalance => return all(ErrorCode::REBALANCE_IN_PROGRESS),
            GroupState::Dead => return all(ErrorCode::COORDINATOR_NOT_AVAILABLE),
        }
        self.store_commit(req, now)
    }

    /// The offsets of an accepted OffsetCommit, stored and recorded; one error per
    /// partition.
    fn store_commit(&mut self, req: &CommitRequest, now: i64) -> Vec<ErrorCode> {
        let max_metadata = self.config.offset_metadata_max_bytes;
        req.partitions
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
                    commit_timestamp: p.commit_timestamp.unwrap_or(now),
                    expire_timestamp: req.retention_ms.map(|r| now.saturating_add(r)),
                    log_order: self.next_log_order(),
                };
                self.fx.records.push(OffsetsRecord::offset_commit(
                    &req.group_id,
                    &p.topic,
                    p.partition,
                    value.clone(),
                ));
                self.offsets
                    .put(&req.group_id, &p.topic, p.partition, value);
                ErrorCode::NONE
            })
            .collect()
    }

    /// OffsetFetch for one group: the requested partitions (`None` for every partition with
    /// a committed offset), -1 for those without one. Pending transactional offsets are never
    /// shown; with `require_stable` a partition that has one answers UNSTABLE_OFFSET_COMMIT
    /// (offset -1) instead of its committed offset, as Kafka does.
    pub fn fetch_offsets(
        &self,
        group_id: &str,
        topics: Option<&[(String, Vec<i32>)]>,
        require_stable: bool,
    ) -> Vec<FetchedOffset> {
        let found = |topic: &str, partition: i32, v: Option<OffsetAndMetadata>| {
            let unstable =
                require_stable && self.has_pending_txn_offset(group_id, topic, partition);
            match v {
                Some(v) if !unstable => FetchedOffset {
                    topic: topic.to_owned(),
                    partition,
                    offset: v.offset,
                    leader_epoch: v.leader_epoch,
                    metadata: v.metadata,
                    error: ErrorCode::NONE,
                },
                _ => FetchedOffset {
                    topic: topic.to_owned(),
                    partition,
                    offset: -1,
                    leader_epoch: -1,
                    metadata: String::new(),
                    error: if unstable {
                        ErrorCode::UNSTABLE_OFFSET_COMMIT
                    } else {
                        ErrorCode::NONE
                    },
                },
            }
        };
        match topics {
            None => self
                .offsets
                .group_offsets(group_id)
                .into_iter()
                .map(|(t, p, v)| found(&t, p, Some(v)))
                .collect(),
            Some(topics) => topics
                .iter()
                .flat_map(|(topic, partitions)| {
                    partitions
                        .iter()
                        .map(move |p| found(topic, *p, self.offsets.get(group_id, topic, *p)))
                })
                .collect(),
        }
    }

    /// OffsetDelete: a group-level error, or one error per partition in request order
    /// (GROUP_SUBSCRIBED_TO_TOPIC for topics a non-empty consumer group subscribes to).
    pub fn delete_offsets(
        &mut self,
        group_id: &str,
        partitions: &[(String, i32)],
    ) -> Result<Vec<ErrorCode>, ErrorCode> {
        self.check_group(group_id)?;
        let Some(group) = self.groups.get(group_id) else {
            return Err(ErrorCode::GROUP_ID_NOT_FOUND);
        };
        let subscribed: Option<Option<BTreeSet<String>>> = match group.state {
            GroupState::Dead => return Err(ErrorCode::GROUP_ID_NOT_FOUND),
            GroupState::Empty => None,
            _ if group.protocol_type.as_deref() == Some(CONSUMER_PROTOCOL_TYPE) => {
                Some(group.subscribed_topics.clone())
            }
            _ => return Err(ErrorCode::NON_EMPTY_GROUP),
        };
        let errors = partitions
            .iter()
            .map(|(topic, partition)| {
                let in_use = match &subscribed {
                    None => false,
                    // Unknown subscriptions: assume the topic is in use.
                    Some(None) => true,
                    Some(Some(topics)) => topics.contains(topic),
                };
                if in_use {
                    return ErrorCode::GROUP_SUBSCRIBED_TO_TOPIC;
                }
                // A pending transactional offset of the partition goes too (Kafka writes the
                // tombstone for it even without a committed offset).
                let committed = self.offsets.remove(group_id, topic, *partition);
                let pending = self.pending_txn.drop_partition(group_id, topic, *partition);
                if committed || pending {
                    self.fx
                        .records
                        .push(OffsetsRecord::offset_tombstone(group_id, topic, *partition));
                }
                ErrorCode::NONE
            })
            .collect();
        Ok(errors)
    }

    /// Removes offsets past `offsets.retention.minutes` (Kafka's rules: an empty group's
    /// offsets count from when it became empty; a stable consumer group's offsets of topics
    /// it no longer subscribes to, and a simple consumer's offsets, count from their commit;
    /// an explicit expire timestamp wins), then drops empty groups left without offsets.
    /// An offset whose partition has a pending transactional offset does not expire, and a
    /// group with pending transactional offsets is not dropped (Kafka's rules). Returns how
    /// many offsets expired.
    pub fn expire_offsets(&mut self, now: i64) -> usize {
        let retention = self.config.offsets_retention_ms;
        let mut expired = 0;
        let ids: Vec<String> = self.groups.keys().cloned().collect();
        for id in ids {
            let Some(group) = self.groups.get(&id) else {
                continue;
            };
            let empty_since = group.state_timestamp;
            let rule = match (group.protocol_type.as_deref(), group.state) {
                (Some(_), GroupState::Empty) => Some((Some(empty_since), BTreeSet::new())),
                (Some(CONSUMER_PROTOCOL_TYPE), GroupState::Stable) => {
                    group.subscribed_topics.clone().map(|topics| (None, topics))
                }
                (None, _) => Some((None, BTreeSet::new())),
                _ => None,
            };
            if let Some((base, keep)) = rule {
                for (topic, partition, v) in self.offsets.group_offsets(&id) {
                    // Not while a transaction may still commit an offset for the partition.
                    if keep.contains(&topic) || self.has_pending_txn_offset(&id, &topic, partition)
                    {
                        continue;
                    }
                    let gone = match v.expire_timestamp {
                        Some(at) => now >= at,
                        None => now.saturating_sub(base.unwrap_or(v.commit_timestamp)) >= retention,
                    };
                    if gone && self.offsets.remove(&id, &topic, partition) {
                        expired += 1;
                        self.fx
                            .records
                            .push(OffsetsRecord::offset_tombstone(&id, &topic, partition));
                    }
                }
            }
            let drop_group = self
                .groups
                .get(&id)
                .is_some_and(|g| g.state == GroupState::Empty && g.pending_members.is_empty())
                && self.offsets.group_offsets(&id).is_empty()
                && !self.has_pending_txn_offsets(&id);
            if drop_group {
                tracing::info!(group = %id, "removing empty group without offsets");
                self.groups.remove(&id);
                self.fx.records.push(OffsetsRecord::group_tombstone(&id));
            }
        }
        expired
    }
}
