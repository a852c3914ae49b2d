//! Every KIP-848 group of this coordinator ([`ConsumerGroups`]): heartbeats and leaves,
//! session and rebalance timers, topic metadata changes, describe/list/delete, offset-commit
//! checks, and rebuilding from records. Every change is a record, replayed on the groups as
//! it is emitted, so the groups are always what their records say.

use std::collections::{BTreeMap, BTreeSet};

use crate::group::MemberIdGen;

use super::config::ConsumerGroupConfig;
use super::group::ConsumerGroup;
use super::heartbeat::{self, Resolutions};
use super::records::ConsumerGroupRecord;
use super::regex;
use super::types::{
    ConsumerGroupDescription, ConsumerGroupError, ConsumerGroupListing, DescribedMember,
    DescribedTopicPartitions, HeartbeatRequest, HeartbeatResponse, LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH, MemberState, TopicPartitions, TopicsImage,
};

/// A member's timer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum TimerKind {
    /// `group.consumer.session.timeout.ms` since the last heartbeat.
    Session,
    /// The member's rebalance timeout since it was asked to revoke partitions.
    Rebalance,
}

type TimerKey = (String, String, TimerKind);

/// The members' deadlines, in order.
#[derive(Debug, Default)]
struct Timers {
    queue: BTreeSet<(i64, TimerKey)>,
    /// The deadline of each armed timer, and the member epoch it was armed at.
    armed: BTreeMap<TimerKey, (i64, i32)>,
}

impl Timers {
    fn arm(&mut self, key: TimerKey, deadline: i64, epoch: i32) {
        self.cancel(&key);
        self.queue.insert((deadline, key.clone()));
        self.armed.insert(key, (deadline, epoch));
    }

    fn cancel(&mut self, key: &TimerKey) {
        if let Some((deadline, _)) = self.armed.remove(key) {
            self.queue.remove(&(deadline, key.clone()));
        }
    }

    fn cancel_member(&mut self, group_id: &str, member_id: &str) {
        for kind in [TimerKind::Session, TimerKind::Rebalance] {
            self.cancel(&(group_id.to_owned(), member_id.to_owned(), kind));
        }
    }

    fn cancel_group(&mut self, group_id: &str) {
        let keys: Vec<TimerKey> = self
            .armed
            .keys()
            .filter(|(g, _, _)| g == group_id)
            .cloned()
            .collect();
        for key in keys {
            self.cancel(&key);
        }
    }

    fn next(&self) -> Option<i64> {
        self.queue.first().map(|(d, _)| *d)
    }

    /// The next timer due at `now`, disarmed.
    fn pop_due(&mut self, now: i64) -> Option<(TimerKey, i32)> {
        let (deadline, _) = self.queue.first()?;
        if *deadline > now {
            return None;
        }
        let (_, key) = self.queue.pop_first()?;
        let (_, epoch) = self.armed.remove(&key)?;
        Some((key, epoch))
    }
}

/// The pure coordinator of KIP-848 groups, driven by requests, topic metadata and `now`
/// (milliseconds on the driver's clock).
///
/// After any call, drain [`ConsumerGroups::take_records`] (to be appended to
/// `__consumer_offsets` before the answer goes out), and call
/// [`ConsumerGroups::handle_timeout`] once [`ConsumerGroups::poll_timeout`] is due.
#[derive(Debug)]
pub struct ConsumerGroups {
    config: ConsumerGroupConfig,
    groups: BTreeMap<String, ConsumerGroup>,
    ids: MemberIdGen,
    records: Vec<ConsumerGroupRecord>,
    timers: Timers,
}

impl ConsumerGroups {
    /// A coordinator with no groups; `ids` makes the member ids of v0 members.
    pub fn new(config: ConsumerGroupConfig, ids: MemberIdGen) -> Self {
        Self {
            config,
            groups: BTreeMap::new(),
            ids,
            records: Vec::new(),
            timers: Timers::default(),
        }
    }

    /// The settings.
    pub fn config(&self) -> &ConsumerGroupConfig {
        &self.config
    }

    /// A group, if it exists.
    pub fn group(&self, group_id: &str) -> Option<&ConsumerGroup> {
        self.groups.get(group_id)
    }

    /// Every group, by id.
    pub fn groups(&self) -> impl Iterator<Item = &ConsumerGroup> {
        self.groups.values()
    }

    /// The records for what happened since the last call, in Kafka's order.
    #[must_use]
    pub fn take_records(&mut self) -> Vec<ConsumerGroupRecord> {
        std::mem::take(&mut self.records)
    }

    /// When [`ConsumerGroups::handle_timeout`] should next be called.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<i64> {
        self.timers.next()
    }

    /// Replays `record` and keeps it for [`ConsumerGroups::take_records`].
    fn emit(&mut self, record: ConsumerGroupRecord) {
        self.replay(&record);
        self.records.push(record);
    }

    /// Applies a record read back from `__consumer_offsets` (or just emitted). Tombstones of
    /// unknown groups or members are ignored, as Kafka does.
    pub fn replay(&mut self, record: &ConsumerGroupRecord) {
        let group_id = record.key.group_id();
        let dropped = match self.groups.get_mut(group_id) {
            Some(group) => group.replay(&record.key, record.value.as_ref()),
            None if record.value.is_some() => {
                let mut group = ConsumerGroup::new(group_id);
                let dropped = group.replay(&record.key, record.value.as_ref());
                self.groups.insert(group_id.to_owned(), group);
                dropped
            }
            None => false,
        };
        if dropped {
            self.groups.remove(group_id);
            self.timers.cancel_group(group_id);
        }
    }

    /// The groups of `__consumer_offsets` partition `partition` are loaded (their records
    /// replayed): every member's session starts now, a member asked to revoke gets its
    /// rebalance timeout again, and the regexes are resolved against `image` (Kafka's
    /// `onLoaded`). `None` for every group.
    pub fn on_loaded(&mut self, partition: Option<i32>, image: &dyn TopicsImage, now: i64) {
        let n = self.config.offsets_topic_num_partitions;
        let session = i64::from(self.config.session_timeout_ms);
        let limit = self.config.regex_size_limit;
        for (group_id, group) in &mut self.groups {
            if partition.is_some_and(|p| crate::coordinator::partition_for(group_id, n) != p) {
                continue;
            }
            group.resolved_regexes = resolve_all(group, image, limit);
            arm_members(&mut self.timers, group, session, now);
        }
    }

    /// Puts group `group_id` back as it was (`None`: it did not exist), its timers armed
    /// anew from `now` as at load: a write of its records failed, and the state must be what
    /// the log holds. Records not yet taken are dropped.
    pub fn restore(&mut self, group_id: &str, group: Option<ConsumerGroup>, now: i64) {
        self.timers.cancel_group(group_id);
        self.records.retain(|r| r.key.group_id() != group_id);
        match group {
            Some(group) => {
                let session = i64::from(self.config.session_timeout_ms);
                arm_members(&mut self.timers, &group, session, now);
                self.groups.insert(group_id.to_owned(), group);
            }
            None => {
                self.groups.remove(group_id);
            }
        }
    }

    /// Forgets the groups of `__consumer_offsets` partition `partition` (another broker
    /// leads it now) and their timers.
    pub fn unload(&mut self, partition: i32) {
        let n = self.config.offsets_topic_num_partitions;
        let gone: Vec<String> = self
            .groups
            .keys()
            .filter(|g| crate::coordinator::partition_for(g, n) == partition)
            .cloned()
            .collect();
        for group_id in gone {
            self.groups.remove(&group_id);
            self.timers.cancel_group(&group_id);
        }
    }

    /// ConsumerGroupHeartbeat: joins, heartbeats and leaves (epochs -1 and -2).
    pub fn heartbeat(
        &mut self,
        req: &HeartbeatRequest,
        image: &dyn TopicsImage,
        now: i64,
    ) -> Result<HeartbeatResponse, ConsumerGroupError> {
        heartbeat::validate(req, &self.config)?;
        if req.member_epoch == LEAVE_GROUP_MEMBER_EPOCH
            || req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH
        {
            return self.leave(req);
        }
        let fresh;
        let group = match self.groups.get(&req.group_id) {
            Some(g) => g,
            None if req.member_epoch == 0 => {
                fresh = ConsumerGroup::new(&req.group_id);
                &fresh
            }
            None => return Err(ConsumerGroupError::GroupIdNotFound(req.group_id.clone())),
        };
        let size = u32::try_from(group.members.len()).unwrap_or(u32::MAX);
        if size >= self.config.max_size
            && (req.member_id.is_empty() || !group.members.contains_key(&req.member_id))
        {
            return Err(ConsumerGroupError::GroupMaxSizeReached(
                self.config.max_size,
            ));
        }
        let generated;
        let member_id = if req.member_id.is_empty() {
            generated = self.ids.next_uuid();
            generated.as_str()
        } else {
            req.member_id.as_str()
        };
        let plan = heartbeat::plan(group, &self.config, req, member_id, image)?;
        for record in plan.records {
            self.emit(record);
        }
        let group_id = req.group_id.clone();
        if let Some(group) = self.groups.get_mut(&group_id) {
            group.resolved_regexes.extend(plan.resolutions);
            let used = group.regexes();
            group.resolved_regexes.retain(|r, _| used.contains(r));
        }
        if let Some(old) = &plan.replaced {
            self.timers.cancel_member(&group_id, old);
        }
        let member_id = plan.response.member_id.clone();
        let key = |kind| (group_id.clone(), member_id.clone(), kind);
        let session = now.saturating_add(i64::from(self.config.session_timeout_ms));
        self.timers
            .arm(key(TimerKind::Session), session, plan.response.member_epoch);
        match plan.rebalance {
            Some(Some((epoch, timeout))) => {
                let deadline = now.saturating_add(i64::from(timeout.max(0)));
                self.timers.arm(key(TimerKind::Rebalance), deadline, epoch);
            }
            Some(None) => self.timers.cancel(&key(TimerKind::Rebalance)),
            None => {}
        }
        Ok(plan.response)
    }

    /// A heartbeat with epoch -1 (leave) or -2 (a static member leaving for a while).
    fn leave(&mut self, req: &HeartbeatRequest) -> Result<HeartbeatResponse, ConsumerGroupError> {
        let group = self
            .groups
            .get(&req.group_id)
            .ok_or_else(|| ConsumerGroupError::GroupIdNotFound(req.group_id.clone()))?;
        let mut response = HeartbeatResponse {
            member_id: req.member_id.clone(),
            member_epoch: req.member_epoch,
            heartbeat_interval_ms: 0,
            assignment: None,
        };
        let member = match &req.instance_id {
            None => group
                .members
                .get(&req.member_id)
                .ok_or_else(|| ConsumerGroupError::UnknownMemberId(req.member_id.clone()))?,
            Some(instance) => {
                let m = group.static_member(instance).ok_or_else(|| {
                    ConsumerGroupError::UnknownMemberId(format!("instance id {instance}"))
                })?;
                if m.member_id != req.member_id {
                    return Err(ConsumerGroupError::FencedInstanceId {
                        member_id: req.member_id.clone(),
                        instance_id: instance.clone(),
                        owner: m.member_id.clone(),
                    });
                }
                m
            }
        };
        let group_id = req.group_id.clone();
        let member_id = member.member_id.clone();
        if req.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH {
            let mut away = member.clone();
            away.member_epoch = LEAVE_GROUP_STATIC_MEMBER_EPOCH;
            away.pending_revocation = TopicPartitions::new();
            self.emit(heartbeat::assignment_record(&group_id, &away));
            self.timers
                .cancel(&(group_id, member_id.clone(), TimerKind::Rebalance));
            response.member_id = member_id;
            return Ok(response);
        }
        self.fence(&group_id, &member_id);
        Ok(response)
    }

    /// Removes a member (it left, its session expired, or it did not revoke in time): its
    /// tombstones, the subscription metadata without it, a new group epoch (Kafka's
    /// `consumerGroupFenceMember`). The next heartbeat computes the new target assignment.
    fn fence(&mut self, group_id: &str, member_id: &str) {
        let Some(group) = self.groups.get(group_id) else {
            return;
        };
        if !group.members.contains_key(member_id) {
            return;
        }
        let view = heartbeat::members_view(group, Some(member_id), None);
        let topics = heartbeat::subscribed_topics(view.values().copied(), &group.resolved_regexes);
        let metadata: super::records::SubscriptionMetadata = group
            .subscription_metadata
            .iter()
            .filter(|(name, _)| topics.contains(*name))
            .map(|(name, t)| (name.clone(), t.clone()))
            .collect();
        let changed = metadata != group.subscription_metadata;
        let epoch = group.group_epoch.saturating_add(1);
        for record in heartbeat::member_tombstones(group_id, member_id) {
            self.emit(record);
        }
        if changed {
            self.emit(heartbeat::metadata_record(group_id, &metadata));
        }
        self.emit(heartbeat::epoch_record(group_id, epoch));
        self.timers.cancel_member(group_id, member_id);
        if let Some(group) = self.groups.get_mut(group_id) {
            let used = group.regexes();
            group.resolved_regexes.retain(|r, _| used.contains(r));
        }
    }

    /// Fires the timers due at `now`: a member whose session expired is removed, and so is
    /// one that did not revoke its partitions within its rebalance timeout.
    pub fn handle_timeout(&mut self, now: i64) {
        while let Some(((group_id, member_id, kind), epoch)) = self.timers.pop_due(now) {
            let Some(member) = self
                .groups
                .get(&group_id)
                .and_then(|g| g.member(&member_id))
            else {
                continue;
            };
            match kind {
                TimerKind::Session => {
                    tracing::info!(group = %group_id, member = %member_id,
                        "consumer group member fenced: its session expired");
                    self.fence(&group_id, &member_id);
                }
                TimerKind::Rebalance if member.member_epoch == epoch => {
                    tracing::info!(group = %group_id, member = %member_id, epoch,
                        "consumer group member fenced: it did not revoke its partitions in time");
                    self.fence(&group_id, &member_id);
                }
                TimerKind::Rebalance => {}
            }
        }
    }

    /// Topics were created, deleted or changed their partitions: every group whose
    /// subscribed topics (regexes resolved again) look different now gets new subscription
    /// metadata, a new group epoch and a new target assignment, without any member rejoining.
    /// An assignor failure keeps the previous target (the next heartbeat tries again).
    pub fn on_metadata(&mut self, image: &dyn TopicsImage, _now: i64) {
        let ids: Vec<String> = self.groups.keys().cloned().collect();
        for group_id in ids {
            let Some(group) = self.groups.get(&group_id) else {
                continue;
            };
            if group.members.is_empty() {
                continue;
            }
            let resolutions = resolve_all(group, image, self.config.regex_size_limit);
            let regexes_changed = resolutions != group.resolved_regexes;
            let topics = heartbeat::subscribed_topics(group.members.values(), &resolutions);
            let metadata = heartbeat::compute_metadata(&topics, image);
            let metadata_changed = metadata != group.subscription_metadata;
            if !metadata_changed && !regexes_changed {
                continue;
            }
            let epoch = group.group_epoch.saturating_add(1);
            let members: BTreeMap<&str, _> = group
                .members
                .iter()
                .map(|(id, m)| {
                    let current = group.target.get(id).cloned().unwrap_or_default();
                    (id.as_str(), (m, current))
                })
                .collect();
            let target = heartbeat::compute_target(
                group,
                &self.config,
                epoch,
                &metadata,
                &resolutions,
                &members,
            );
            let mut records = Vec::new();
            if metadata_changed {
                records.push(heartbeat::metadata_record(&group_id, &metadata));
            }
            records.push(heartbeat::epoch_record(&group_id, epoch));
            match target {
                Ok((recs, _)) => records.extend(recs),
                Err(e) => tracing::warn!(group = %group_id, error = %e,
                    "target assignment not computed after a metadata change"),
            }
            for record in records {
                self.emit(record);
            }
            if let Some(group) = self.groups.get_mut(&group_id) {
                group.resolved_regexes = resolutions;
            }
        }
    }

    /// ConsumerGroupDescribe's content for `group_id` (topic names from `image`).
    pub fn describe(
        &self,
        group_id: &str,
        image: &dyn TopicsImage,
    ) -> Result<ConsumerGroupDescription, ConsumerGroupError> {
        let group = self
            .groups
            .get(group_id)
            .ok_or_else(|| ConsumerGroupError::GroupIdNotFound(group_id.to_owned()))?;
        let named = |tps: &TopicPartitions| {
            tps.iter()
                .filter_map(|(id, ps)| {
                    Some(DescribedTopicPartitions {
                        topic_id: *id,
                        topic_name: image.topic_name(*id)?.to_owned(),
                        partitions: ps.iter().copied().collect(),
                    })
                })
                .collect()
        };
        let assignor_name = heartbeat::preferred_assignor(group.members.values(), &self.config)
            .map(str::to_owned)
            .or_else(|| self.config.default_assignor().map(|a| a.name().to_owned()))
            .unwrap_or_default();
        Ok(ConsumerGroupDescription {
            group_id: group_id.to_owned(),
            state: group.state(),
            group_epoch: group.group_epoch,
            assignment_epoch: group.assignment_epoch,
            assignor_name,
            members: group
                .members
                .values()
                .map(|m| DescribedMember {
                    member_id: m.member_id.clone(),
                    instance_id: m.instance_id.clone(),
                    rack_id: m.rack_id.clone(),
                    member_epoch: m.member_epoch,
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    subscribed_topic_names: m.subscribed_topic_names.iter().cloned().collect(),
                    subscribed_topic_regex: m.subscribed_topic_regex.clone(),
                    assignment: named(&m.assigned),
                    target_assignment: named(
                        &group.target.get(&m.member_id).cloned().unwrap_or_default(),
                    ),
                })
                .collect(),
        })
    }

    /// Every group with its state (ListGroups, type `consumer`).
    pub fn list(&self) -> Vec<ConsumerGroupListing> {
        self.groups
            .values()
            .map(|g| ConsumerGroupListing {
                group_id: g.group_id.clone(),
                state: g.state(),
            })
            .collect()
    }

    /// Whether `group_id` is a consumer group here (group ids are shared with classic groups).
    pub fn contains(&self, group_id: &str) -> bool {
        self.groups.contains_key(group_id)
    }

    /// Kafka's `ConsumerGroup.validateOffsetCommit`: a commit with a negative epoch is
    /// accepted while the group is empty (admin tools, consumers without group management);
    /// otherwise the member must exist (UNKNOWN_MEMBER_ID), a non-transactional commit must
    /// use OffsetCommit v9 or above (UNSUPPORTED_VERSION), and the epoch must be the
    /// member's (STALE_MEMBER_EPOCH).
    pub fn validate_offset_commit(
        &self,
        group_id: &str,
        member_id: &str,
        member_epoch: i32,
        transactional: bool,
        api_version: i16,
    ) -> Result<(), ConsumerGroupError> {
        let group = self
            .groups
            .get(group_id)
            .ok_or_else(|| ConsumerGroupError::GroupIdNotFound(group_id.to_owned()))?;
        if member_epoch < 0 && group.members.is_empty() {
            return Ok(());
        }
        let member = group
            .member(member_id)
            .ok_or_else(|| ConsumerGroupError::UnknownMemberId(member_id.to_owned()))?;
        if !transactional && api_version < 9 {
            return Err(ConsumerGroupError::UnsupportedOffsetCommitVersion);
        }
        if member_epoch != member.member_epoch {
            return Err(ConsumerGroupError::StaleMemberEpoch {
                received: member_epoch,
                expected: member.member_epoch,
            });
        }
        Ok(())
    }

    /// Kafka's `ConsumerGroup.validateOffsetFetch`: without a member id and with a negative
    /// epoch anyone may fetch; otherwise the member must exist at that epoch.
    pub fn validate_offset_fetch(
        &self,
        group_id: &str,
        member_id: Option<&str>,
        member_epoch: i32,
    ) -> Result<(), ConsumerGroupError> {
        let group = self
            .groups
            .get(group_id)
            .ok_or_else(|| ConsumerGroupError::GroupIdNotFound(group_id.to_owned()))?;
        let Some(member_id) = member_id else {
            if member_epoch < 0 {
                return Ok(());
            }
            return Err(ConsumerGroupError::UnknownMemberId(String::new()));
        };
        let member = group
            .member(member_id)
            .ok_or_else(|| ConsumerGroupError::UnknownMemberId(member_id.to_owned()))?;
        if member_epoch != member.member_epoch {
            return Err(ConsumerGroupError::StaleMemberEpoch {
                received: member_epoch,
                expected: member.member_epoch,
            });
        }
        Ok(())
    }

    /// DeleteGroups: only an empty group is deleted (NON_EMPTY_GROUP otherwise); its
    /// tombstones come out in Kafka's order. Its offsets are the caller's.
    pub fn delete(&mut self, group_id: &str) -> Result<(), ConsumerGroupError> {
        let group = self
            .groups
            .get(group_id)
            .ok_or_else(|| ConsumerGroupError::GroupIdNotFound(group_id.to_owned()))?;
        if !group.is_empty() {
            return Err(ConsumerGroupError::NonEmptyGroup(group_id.to_owned()));
        }
        for key in group.tombstone_keys() {
            self.emit(ConsumerGroupRecord { key, value: None });
        }
        Ok(())
    }
}

/// Arms every member's session timer (and the rebalance timer of those asked to revoke)
/// from `now`.
fn arm_members(timers: &mut Timers, group: &ConsumerGroup, session: i64, now: i64) {
    for m in group.members.values() {
        let key = |kind| (group.group_id.clone(), m.member_id.clone(), kind);
        timers.arm(
            key(TimerKind::Session),
            now.saturating_add(session),
            m.member_epoch,
        );
        if m.state == MemberState::UnrevokedPartitions {
            let deadline = now.saturating_add(i64::from(m.rebalance_timeout_ms.max(0)));
            timers.arm(key(TimerKind::Rebalance), deadline, m.member_epoch);
        }
    }
}

/// The group's regexes resolved against `image` (an invalid one, which only a log written
/// elsewhere could hold, resolves to nothing).
fn resolve_all(group: &ConsumerGroup, image: &dyn TopicsImage, limit: usize) -> Resolutions {
    group
        .regexes()
        .into_iter()
        .map(|r| {
            let topics = regex::resolve(&r, image, limit).unwrap_or_else(|e| {
                tracing::warn!(group = %group.group_id, error = %e, "subscription regex ignored");
                BTreeSet::new()
            });
            (r, topics)
        })
        .collect()
}
