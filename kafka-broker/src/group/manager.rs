//! Every group of this coordinator: request routing and the checks Kafka makes before a
//! group sees a request, DescribeGroups/ListGroups/DeleteGroups, timers, and unloading a
//! partition's groups. Offsets are `offsets.rs` and `txn_offsets.rs`, rebuilding the state
//! from `__consumer_offsets` records `replay.rs`.

use std::collections::{BTreeMap, BTreeSet, btree_map::Entry};

use kafka_protocol::error_code::ErrorCode;

use super::MemberIdGen;
use super::config::GroupConfig;
use super::consumer::{ConsumerGroupConfig, ConsumerGroups, assignor};
use super::offset_store::{MemoryOffsetStore, OffsetStore, PendingTxnOffsets};
use super::records::OffsetsRecord;
use super::state::{Cx, Effects, Group};
use super::types::{
    CLASSIC_GROUP_TYPE, DescribedMember, GroupDescription, GroupListing, GroupState,
    HeartbeatRequest, JoinRequest, JoinResponse, LeaveResponse, LeavingMember, Output, RequestId,
    SyncRequest, SyncResponse,
};

/// The pure group coordinator: every group and every committed offset, driven by requests
/// and `now`.
///
/// JoinGroup and SyncGroup answers come out of [`GroupManager::poll_output`] (right away or
/// later); everything else answers directly. After any call, drain `poll_output`,
/// [`GroupManager::take_records`] and [`GroupManager::take_txn_batches`], and call
/// [`GroupManager::handle_timeout`] once [`GroupManager::poll_timeout`] is due.
#[derive(Debug)]
pub struct GroupManager {
    pub(super) config: GroupConfig,
    pub(super) groups: BTreeMap<String, Group>,
    pub(super) offsets: Box<dyn OffsetStore>,
    pub(super) ids: MemberIdGen,
    pub(super) fx: Effects,
    /// Transactional offsets not yet committed or aborted (see `txn_offsets.rs`).
    pub(super) pending_txn: PendingTxnOffsets,
    /// The count behind [`OffsetAndMetadata::log_order`](super::OffsetAndMetadata).
    pub(super) log_order: u64,
    /// The `__consumer_offsets` partitions whose groups this coordinator serves (loaded).
    owned: BTreeSet<i32>,
    /// Those being read back: their groups answer COORDINATOR_LOAD_IN_PROGRESS.
    loading: BTreeSet<i32>,
    /// The KIP-848 consumer groups (see `kip848.rs`): their ids are not classic groups'.
    pub(super) consumer: ConsumerGroups,
}

impl GroupManager {
    /// A coordinator with in-memory offsets; `ids` makes the member ids.
    pub fn new(config: GroupConfig, ids: MemberIdGen) -> Self {
        Self::with_store(config, ids, Box::new(MemoryOffsetStore::default()))
    }

    /// A coordinator keeping offsets in `offsets`.
    pub fn with_store(
        config: GroupConfig,
        ids: MemberIdGen,
        offsets: Box<dyn OffsetStore>,
    ) -> Self {
        let mut ids = ids;
        let consumer_config = config.consumer_config().unwrap_or_else(|e| {
            // Checked when the broker starts: only a coordinator built by hand gets here.
            tracing::warn!(error = %e, "group.consumer settings refused; Kafka's defaults used");
            let mut c = ConsumerGroupConfig::new(assignor::default_assignors());
            c.offsets_topic_num_partitions = config.offsets_topic_num_partitions;
            c
        });
        let consumer = ConsumerGroups::new(consumer_config, MemberIdGen::new(ids.next_u64()));
        Self {
            config,
            groups: BTreeMap::new(),
            offsets,
            ids,
            fx: Effects::default(),
            pending_txn: PendingTxnOffsets::default(),
            log_order: 0,
            owned: BTreeSet::new(),
            loading: BTreeSet::new(),
            consumer,
        }
    }

    /// Serves the groups of every `__consumer_offsets` partition at once, with nothing to
    /// load (a coordinator without a log: tests).
    #[must_use]
    pub fn owning_every_partition(mut self) -> Self {
        self.owned = (0..self.config.offsets_topic_num_partitions).collect();
        self
    }

    /// `__consumer_offsets` partition `partition` is being read back: its groups answer
    /// COORDINATOR_LOAD_IN_PROGRESS until [`GroupManager::finish_load`].
    pub fn begin_load(&mut self, partition: i32) {
        self.loading.insert(partition);
    }

    /// Partition `partition` is loaded (its records replayed): its groups are served here.
    pub fn finish_load(&mut self, partition: i32) {
        self.loading.remove(&partition);
        self.owned.insert(partition);
    }

    /// Whether this coordinator serves `group_id` now (Kafka's order of checks): its
    /// partition being loaded is COORDINATOR_LOAD_IN_PROGRESS, not loaded here at all (another
    /// broker leads it, or this one has not caught up yet) NOT_COORDINATOR. Nothing about a
    /// group is answered, let alone created, for a partition another broker may be writing.
    pub fn check_group(&self, group_id: &str) -> Result<(), ErrorCode> {
        let partition = self.config.partition_for(group_id);
        if self.loading.contains(&partition) {
            Err(ErrorCode::COORDINATOR_LOAD_IN_PROGRESS)
        } else if self.owned.contains(&partition) {
            Ok(())
        } else {
            Err(ErrorCode::NOT_COORDINATOR)
        }
    }

    pub fn config(&self) -> &GroupConfig {
        &self.config
    }

    /// A group, if it exists.
    pub fn group(&self, id: &str) -> Option<&Group> {
        self.groups.get(id)
    }

    /// Every group, by id.
    pub fn groups(&self) -> impl Iterator<Item = &Group> {
        self.groups.values()
    }

    /// The offset store.
    pub fn offsets(&self) -> &dyn OffsetStore {
        self.offsets.as_ref()
    }

    /// The next position in the log for an offset record appended or replayed now.
    pub(super) fn next_log_order(&mut self) -> u64 {
        self.log_order = self.log_order.wrapping_add(1);
        self.log_order
    }

    /// The next answer released (for JoinGroup and SyncGroup).
    #[must_use]
    pub fn poll_output(&mut self) -> Option<Output> {
        self.fx.outputs.pop_front()
    }

    /// The records Kafka would append to `__consumer_offsets` for what happened since the
    /// last call, in order.
    #[must_use]
    pub fn take_records(&mut self) -> Vec<OffsetsRecord> {
        std::mem::take(&mut self.fx.records)
    }

    /// When [`GroupManager::handle_timeout`] should next be called.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<i64> {
        let classic = self.groups.values().filter_map(Group::next_deadline).min();
        match (classic, self.consumer.poll_timeout()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Fires the timers due at `now`: lapsed member ids, expired sessions (a rebalance),
    /// rebalance and sync timeouts.
    pub fn handle_timeout(&mut self, now: i64) {
        if self.consumer.poll_timeout().is_some_and(|d| d <= now) {
            self.consumer.handle_timeout(now);
        }
        let mut cx = Cx {
            now,
            config: &self.config,
            ids: &mut self.ids,
            fx: &mut self.fx,
        };
        for group in self.groups.values_mut() {
            if group.next_deadline().is_some_and(|d| d <= now) {
                group.handle_timeout(&mut cx);
            }
        }
    }

    /// JoinGroup; the answer comes out of [`GroupManager::poll_output`] under `request`.
    pub fn join(&mut self, request: RequestId, req: JoinRequest, now: i64) {
        let served = self.check_group(&req.group_id);
        let mut cx = Cx {
            now,
            config: &self.config,
            ids: &mut self.ids,
            fx: &mut self.fx,
        };
        if req.group_id.is_empty() {
            cx.reply_join(
                request,
                JoinResponse::error(req.member_id, ErrorCode::INVALID_GROUP_ID),
            );
            return;
        }
        if let Err(e) = served {
            cx.reply_join(request, JoinResponse::error(req.member_id, e));
            return;
        }
        if self.consumer.contains(&req.group_id) {
            // A KIP-848 group: its members speak ConsumerGroupHeartbeat (no online migration).
            let e = ErrorCode::INCONSISTENT_GROUP_PROTOCOL;
            cx.reply_join(request, JoinResponse::error(req.member_id, e));
            return;
        }
        if req.session_timeout_ms < cx.config.min_session_timeout_ms
            || req.session_timeout_ms > cx.config.max_session_timeout_ms
        {
            let e = ErrorCode::INVALID_SESSION_TIMEOUT;
            cx.reply_join(request, JoinResponse::error(req.member_id, e));
            return;
        }
        let group_id = req.group_id.clone();
        let (group, created) = match self.groups.entry(group_id.clone()) {
            Entry::Occupied(e) => (e.into_mut(), false),
            // Only a member without an id creates a group.
            Entry::Vacant(_) if !req.member_id.is_empty() => {
                let e = ErrorCode::UNKNOWN_MEMBER_ID;
                cx.reply_join(request, JoinResponse::error(req.member_id, e));
                return;
            }
            Entry::Vacant(e) => (e.insert(Group::new(group_id.clone(), now)), true),
        };
        group.join(request, req, &mut cx);
        if created && group.is_vacant() {
            // Refused: do not keep an empty shell around.
            self.groups.remove(&group_id);
        }
    }

    /// SyncGroup; the answer comes out of [`GroupManager::poll_output`] under `request`.
    pub fn sync(&mut self, request: RequestId, req: SyncRequest, now: i64) {
        let served = self.check_group(&req.group_id);
        let mut cx = Cx {
            now,
            config: &self.config,
            ids: &mut self.ids,
            fx: &mut self.fx,
        };
        if req.group_id.is_empty() {
            cx.reply_sync(request, SyncResponse::error(ErrorCode::INVALID_GROUP_ID));
            return;
        }
        if let Err(e) = served {
            cx.reply_sync(request, SyncResponse::error(e));
            return;
        }
        match self.groups.get_mut(&req.group_id) {
            Some(group) => group.sync(request, req, &mut cx),
            None => cx.reply_sync(request, SyncResponse::error(ErrorCode::UNKNOWN_MEMBER_ID)),
        }
    }

    /// Heartbeat.
    pub fn heartbeat(&mut self, req: &HeartbeatRequest, now: i64) -> ErrorCode {
        if req.group_id.is_empty() {
            return ErrorCode::INVALID_GROUP_ID;
        }
        if let Err(e) = self.check_group(&req.group_id) {
            return e;
        }
        let mut cx = Cx {
            now,
            config: &self.config,
            ids: &mut self.ids,
            fx: &mut self.fx,
        };
        match self.groups.get_mut(&req.group_id) {
            Some(group) => group.heartbeat(req, &mut cx),
            None => ErrorCode::UNKNOWN_MEMBER_ID,
        }
    }

    /// LeaveGroup.
    pub fn leave(&mut self, group_id: &str, members: &[LeavingMember], now: i64) -> LeaveResponse {
        if group_id.is_empty() {
            return LeaveResponse {
                error: ErrorCode::INVALID_GROUP_ID,
                members: Vec::new(),
            };
        }
        if let Err(error) = self.check_group(group_id) {
            return LeaveResponse {
                error,
                members: Vec::new(),
            };
        }
        let mut cx = Cx {
            now,
            config: &self.config,
            ids: &mut self.ids,
            fx: &mut self.fx,
        };
        match self.groups.get_mut(group_id) {
            Some(group) => group.leave(members, &mut cx),
            None => LeaveResponse {
                error: ErrorCode::NONE,
                members: members
                    .iter()
                    .map(|m| (m.clone(), ErrorCode::UNKNOWN_MEMBER_ID))
                    .collect(),
            },
        }
    }

    /// DescribeGroups for one group (an unknown group is reported Dead, as Kafka does).
    pub fn describe(&self, group_id: &str) -> GroupDescription {
        let Some(group) = self.groups.get(group_id) else {
            return GroupDescription {
                group_id: group_id.to_owned(),
                state: GroupState::Dead,
                state_name: None,
                protocol_type: String::new(),
                protocol_data: String::new(),
                members: Vec::new(),
            };
        };
        let stable = group.state == GroupState::Stable;
        let protocol = group.protocol_name.clone().unwrap_or_default();
        GroupDescription {
            group_id: group_id.to_owned(),
            state: group.state,
            state_name: None,
            protocol_type: group.protocol_type.clone().unwrap_or_default(),
            protocol_data: if stable {
                protocol.clone()
            } else {
                String::new()
            },
            members: group
                .members
                .iter()
                .map(|m| DescribedMember {
                    member_id: m.id.clone(),
                    group_instance_id: m.instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    metadata: if stable {
                        m.metadata(&protocol)
                    } else {
                        Default::default()
                    },
                    assignment: if stable {
                        m.assignment.clone()
                    } else {
                        Default::default()
                    },
                })
                .collect(),
        }
    }

    /// ListGroups: groups in one of `states` (any if empty) and of one of `types` (any if
    /// empty; every group here is "classic"), compared case-insensitively.
    pub fn list(&self, states: &[&str], types: &[&str]) -> Vec<GroupListing> {
        let type_ok = types.is_empty()
            || types
                .iter()
                .any(|t| t.eq_ignore_ascii_case(CLASSIC_GROUP_TYPE));
        if !type_ok {
            return Vec::new();
        }
        self.groups
            .values()
            .filter(|g| {
                states.is_empty()
                    || states
                        .iter()
                        .any(|s| s.eq_ignore_ascii_case(g.state.as_str()))
            })
            .map(|g| GroupListing {
                group_id: g.id.clone(),
                protocol_type: g.protocol_type.clone().unwrap_or_default(),
                state: g.state,
            })
            .collect()
    }

    /// DeleteGroups: only empty groups go (with their offsets, pending transactional ones
    /// included); one error per id.
    pub fn delete_groups(&mut self, ids: &[String]) -> Vec<ErrorCode> {
        ids.iter()
            .map(|id| {
                if let Err(e) = self.check_group(id) {
                    return e;
                }
                if let Some(code) = self.delete_consumer_group(id) {
                    return code;
                }
                let state = self.groups.get(id).map(|g| g.state);
                match state {
                    None | Some(GroupState::Dead) => ErrorCode::GROUP_ID_NOT_FOUND,
                    Some(GroupState::Empty) => {
                        self.groups.remove(id);
                        let committed = self.offsets.remove_group(id);
                        // Pending transactional offsets go too: a tombstone for each of their
                        // partitions that has no committed offset (Kafka's rule), so that
                        // replay drops them as well.
                        let pending: Vec<(String, i32)> = self
                            .pending_txn
                            .drop_group(id)
                            .into_iter()
                            .filter(|k| !committed.contains(k))
                            .collect();
                        for (topic, partition) in committed.into_iter().chain(pending) {
                            let r = OffsetsRecord::offset_tombstone(id, &topic, partition);
                            self.fx.records.push(r);
                        }
                        self.fx.records.push(OffsetsRecord::group_tombstone(id));
                        tracing::info!(group = %id, "group deleted");
                        ErrorCode::NONE
                    }
                    Some(_) => ErrorCode::NON_EMPTY_GROUP,
                }
            })
            .collect()
    }

    /// Forgets the groups (and their offsets and timers) of `__consumer_offsets` partition
    /// `partition`: this broker no longer coordinates them, and loads them anew from the log
    /// if it leads the partition again. Returns how many groups went.
    pub fn unload(&mut self, partition: i32) -> usize {
        self.owned.remove(&partition);
        self.loading.remove(&partition);
        let config = &self.config;
        let before = self.groups.len();
        self.groups
            .retain(|id, _| config.partition_for(id) != partition);
        let gone = before - self.groups.len();
        for group in self.offsets.groups() {
            if config.partition_for(&group) == partition {
                self.offsets.remove_group(&group);
            }
        }
        self.pending_txn
            .retain_groups(|group| config.partition_for(group) != partition);
        let consumer_before = self.consumer.groups().count();
        self.consumer.unload(partition);
        gone + (consumer_before - self.consumer.groups().count())
    }
}
