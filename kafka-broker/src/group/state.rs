//! One group's state machine: states, members, protocol selection, the rebalance (prepare,
//! wait for members, complete into a new generation). JoinGroup lives in `join.rs`;
//! SyncGroup, Heartbeat and LeaveGroup in `membership.rs`; timers in `timers.rs`.
//!
//! Time is milliseconds on the driver's clock, passed in as `now`. A deadline is due when
//! `now >= deadline`.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use bytes::Bytes;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::frame::decode_subscription;

use super::config::GroupConfig;
use super::member::Member;
use super::records::OffsetsRecord;
use super::types::{
    GroupState, JoinResponse, JoinedMember, Output, RequestId, SyncResponse, TxnBatch,
};
use super::{CONSUMER_PROTOCOL_TYPE, MemberIdGen};

/// What a rebalance in PreparingRebalance waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum JoinTimer {
    /// `group.initial.rebalance.delay.ms` of a rebalance out of Empty: completes only at the
    /// deadline, which moves on by up to `delay_ms` (within `remaining_ms`, the rest of the
    /// rebalance timeout) each time new members arrived meanwhile.
    Initial {
        deadline: i64,
        delay_ms: i64,
        remaining_ms: i64,
    },
    /// Completes once every member has rejoined, or at the deadline.
    Rebalance { deadline: i64 },
}

impl JoinTimer {
    pub(super) fn deadline(self) -> i64 {
        match self {
            Self::Initial { deadline, .. } | Self::Rebalance { deadline } => deadline,
        }
    }
}

/// What operations produce besides their direct answers.
#[derive(Debug, Default)]
pub(super) struct Effects {
    pub(super) outputs: VecDeque<Output>,
    pub(super) records: Vec<OffsetsRecord>,
    /// Transactional offset commits' records, one batch per TxnOffsetCommit.
    pub(super) txn_batches: Vec<TxnBatch>,
}

/// Everything a group operation needs from outside the group.
pub(super) struct Cx<'a> {
    pub(super) now: i64,
    pub(super) config: &'a GroupConfig,
    pub(super) ids: &'a mut MemberIdGen,
    pub(super) fx: &'a mut Effects,
}

impl Cx<'_> {
    pub(super) fn reply_join(&mut self, request: RequestId, response: JoinResponse) {
        self.fx
            .outputs
            .push_back(Output::Join { request, response });
    }

    pub(super) fn reply_sync(&mut self, request: RequestId, response: SyncResponse) {
        self.fx
            .outputs
            .push_back(Output::Sync { request, response });
    }
}

/// One consumer group.
#[derive(Debug, Clone)]
pub struct Group {
    pub(super) id: String,
    pub(super) state: GroupState,
    pub(super) generation: i32,
    pub(super) protocol_type: Option<String>,
    pub(super) protocol_name: Option<String>,
    pub(super) leader: Option<String>,
    /// In join order; the first is the leader's successor.
    pub(super) members: Vec<Member>,
    /// Ids handed out with MEMBER_ID_REQUIRED, with when they lapse (the session timeout).
    pub(super) pending_members: BTreeMap<String, i64>,
    /// Members of the new generation that have not sent SyncGroup yet.
    pub(super) pending_sync: BTreeSet<String>,
    /// When members still in `pending_sync` are removed.
    pub(super) sync_deadline: Option<i64>,
    pub(super) join_timer: Option<JoinTimer>,
    /// A new member joined during the initial delay of the group's first rebalance.
    pub(super) new_member_added: bool,
    /// When the group entered its current generation.
    pub(super) state_timestamp: i64,
    /// Topics the members subscribe to (consumer protocol only; `None` if unknown).
    pub(super) subscribed_topics: Option<BTreeSet<String>>,
}

impl Group {
    pub(super) fn new(id: String, now: i64) -> Self {
        Self {
            id,
            state: GroupState::Empty,
            generation: 0,
            protocol_type: None,
            protocol_name: None,
            leader: None,
            members: Vec::new(),
            pending_members: BTreeMap::new(),
            pending_sync: BTreeSet::new(),
            sync_deadline: None,
            join_timer: None,
            new_member_added: false,
            state_timestamp: now,
            subscribed_topics: None,
        }
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn state(&self) -> GroupState {
        self.state
    }

    pub fn generation(&self) -> i32 {
        self.generation
    }

    pub fn protocol_type(&self) -> Option<&str> {
        self.protocol_type.as_deref()
    }

    /// The protocol selected for the current generation.
    pub fn protocol_name(&self) -> Option<&str> {
        self.protocol_name.as_deref()
    }

    pub fn leader(&self) -> Option<&str> {
        self.leader.as_deref()
    }

    /// Members in join order.
    pub fn members(&self) -> &[Member] {
        &self.members
    }

    pub fn member(&self, id: &str) -> Option<&Member> {
        self.members.iter().find(|m| m.id == id)
    }

    /// Ids handed out with MEMBER_ID_REQUIRED that have not joined yet.
    pub fn pending_members(&self) -> impl Iterator<Item = &str> {
        self.pending_members.keys().map(String::as_str)
    }

    /// Topics the members subscribe to (consumer protocol; `None` when unknown).
    pub fn subscribed_topics(&self) -> Option<&BTreeSet<String>> {
        self.subscribed_topics.as_ref()
    }

    /// When the group entered its current state's generation.
    pub fn state_timestamp(&self) -> i64 {
        self.state_timestamp
    }

    pub(super) fn index_of(&self, id: &str) -> Option<usize> {
        self.members.iter().position(|m| m.id == id)
    }

    pub(super) fn member_mut(&mut self, id: &str) -> Option<&mut Member> {
        self.members.iter_mut().find(|m| m.id == id)
    }

    pub(super) fn has_member(&self, id: &str) -> bool {
        self.index_of(id).is_some()
    }

    pub(super) fn is_leader(&self, id: &str) -> bool {
        self.leader.as_deref() == Some(id)
    }

    /// The member id currently holding `instance_id`.
    pub(super) fn static_member(&self, instance_id: &str) -> Option<&str> {
        self.members
            .iter()
            .find(|m| m.instance_id.as_deref() == Some(instance_id))
            .map(|m| m.id.as_str())
    }

    /// Whether `member_id` claims `instance_id` while another member holds it.
    pub(super) fn is_fenced(&self, instance_id: Option<&str>, member_id: &str) -> bool {
        instance_id
            .and_then(|i| self.static_member(i))
            .is_some_and(|current| current != member_id)
    }

    /// Kafka's check of a request from an existing member: a static member must be the
    /// current holder of its instance id, and the member id must be known.
    pub(super) fn validate_member(
        &self,
        member_id: &str,
        instance_id: Option<&str>,
    ) -> Result<(), ErrorCode> {
        if let Some(instance) = instance_id {
            match self.static_member(instance) {
                Some(current) if current != member_id => return Err(ErrorCode::FENCED_INSTANCE_ID),
                None => return Err(ErrorCode::UNKNOWN_MEMBER_ID),
                Some(_) => {}
            }
        }
        if self.has_member(member_id) {
            Ok(())
        } else {
            Err(ErrorCode::UNKNOWN_MEMBER_ID)
        }
    }

    /// A group just created that holds nothing worth keeping.
    pub(super) fn is_vacant(&self) -> bool {
        self.state == GroupState::Empty
            && self.generation == 0
            && self.members.is_empty()
            && self.pending_members.is_empty()
    }

    fn awaiting_join_count(&self) -> usize {
        self.members.iter().filter(|m| m.is_awaiting_join()).count()
    }

    /// `group.max.size`: whether a JoinGroup of `member_id` may be admitted.
    pub(super) fn accepts_joining_member(&self, member_id: &str, max_size: usize) -> bool {
        match self.state {
            GroupState::Empty | GroupState::Dead => true,
            GroupState::CompletingRebalance | GroupState::Stable => {
                self.has_member(member_id) || self.members.len() < max_size
            }
            GroupState::PreparingRebalance => {
                self.member(member_id).is_some_and(Member::is_awaiting_join)
                    || self.awaiting_join_count() < max_size
            }
        }
    }

    pub(super) fn add_member(&mut self, member: Member) {
        if self.members.is_empty() {
            self.protocol_type = Some(member.protocol_type.clone());
        }
        if self.leader.is_none() {
            self.leader = Some(member.id.clone());
        }
        self.pending_members.remove(&member.id);
        self.members.push(member);
    }

    /// Takes a member out of the group (its waiting requests are the caller's business).
    pub(super) fn remove_member(&mut self, id: &str) -> Option<Member> {
        let idx = self.index_of(id)?;
        let member = self.members.remove(idx);
        self.pending_sync.remove(id);
        if self.is_leader(id) {
            self.leader = self.members.first().map(|m| m.id.clone());
        }
        Some(member)
    }

    /// Whether a joining member with these protocols fits the group.
    pub(super) fn supports_protocols(
        &self,
        protocol_type: &str,
        protocols: &[super::types::Protocol],
    ) -> bool {
        if self.state == GroupState::Empty {
            !protocol_type.is_empty() && !protocols.is_empty()
        } else {
            self.protocol_type.as_deref() == Some(protocol_type)
                && protocols
                    .iter()
                    .any(|p| self.members.iter().all(|m| m.supports(&p.name)))
        }
    }

    /// Protocols every member supports, in the leader's order of preference.
    fn candidate_protocols(&self) -> Vec<&str> {
        let reference = self
            .leader
            .as_deref()
            .and_then(|l| self.member(l))
            .or_else(|| self.members.first());
        let Some(reference) = reference else {
            return Vec::new();
        };
        reference
            .protocols
            .iter()
            .map(|p| p.name.as_str())
            .filter(|name| self.members.iter().all(|m| m.supports(name)))
            .collect()
    }

    /// The protocol for the next generation: among those all members support, each member
    /// votes for its most preferred; most votes wins, ties go to the leader's preference.
    pub(super) fn select_protocol(&self) -> Option<String> {
        let candidates = self.candidate_protocols();
        let mut votes = vec![0usize; candidates.len()];
        for m in &self.members {
            let choice = m
                .protocols
                .iter()
                .find_map(|p| candidates.iter().position(|c| *c == p.name));
            if let Some(slot) = choice.and_then(|i| votes.get_mut(i)) {
                *slot += 1;
            }
        }
        let mut best: Option<(usize, usize)> = None;
        for (i, v) in votes.iter().enumerate() {
            if best.is_none_or(|(_, bv)| *v > bv) {
                best = Some((i, *v));
            }
        }
        best.and_then(|(i, _)| candidates.get(i).map(|s| (*s).to_owned()))
    }

    /// The group's rebalance timeout: the largest of its members'.
    pub(super) fn rebalance_timeout_ms(&self) -> i64 {
        self.members
            .iter()
            .map(|m| i64::from(m.rebalance_timeout_ms))
            .max()
            .unwrap_or(0)
    }

    fn all_members_joined(&self) -> bool {
        self.pending_members.is_empty() && self.members.iter().all(Member::is_awaiting_join)
    }

    /// Starts a rebalance unless one is already being prepared.
    pub(super) fn maybe_prepare_rebalance(&mut self, cx: &mut Cx<'_>) {
        if matches!(
            self.state,
            GroupState::Stable | GroupState::CompletingRebalance | GroupState::Empty
        ) {
            self.prepare_rebalance(cx);
        }
    }

    pub(super) fn prepare_rebalance(&mut self, cx: &mut Cx<'_>) {
        if self.state == GroupState::CompletingRebalance {
            self.fail_assignment(ErrorCode::REBALANCE_IN_PROGRESS, cx);
        }
        self.sync_deadline = None;
        let rebalance = self.rebalance_timeout_ms();
        self.join_timer = Some(if self.state == GroupState::Empty {
            let delay = i64::from(cx.config.initial_rebalance_delay_ms);
            JoinTimer::Initial {
                deadline: cx.now.saturating_add(delay),
                delay_ms: delay,
                remaining_ms: (rebalance - delay).max(0),
            }
        } else {
            JoinTimer::Rebalance {
                deadline: cx.now.saturating_add(rebalance),
            }
        });
        self.state = GroupState::PreparingRebalance;
        tracing::debug!(group = %self.id, generation = self.generation, "preparing rebalance");
        self.try_complete_join(cx);
    }

    /// Completes the rebalance if nobody else is expected (not during the initial delay).
    pub(super) fn try_complete_join(&mut self, cx: &mut Cx<'_>) {
        if self.state == GroupState::PreparingRebalance
            && matches!(self.join_timer, Some(JoinTimer::Rebalance { .. }))
            && self.all_members_joined()
        {
            self.complete_join(cx);
        }
    }

    /// The end of PreparingRebalance: drops dynamic members that did not rejoin, elects a
    /// leader among those that did and starts the next generation.
    pub(super) fn complete_join(&mut self, cx: &mut Cx<'_>) {
        self.join_timer = None;
        let stale: Vec<String> = self
            .members
            .iter()
            .filter(|m| !m.is_awaiting_join() && m.instance_id.is_none())
            .map(|m| m.id.clone())
            .collect();
        for id in stale {
            tracing::info!(group = %self.id, member = %id, "member did not rejoin in time; removed");
            if let Some(request) = self.remove_member(&id).and_then(|m| m.awaiting_sync) {
                cx.reply_sync(request, SyncResponse::error(ErrorCode::UNKNOWN_MEMBER_ID));
            }
        }
        if !self.elect_joined_leader() && !self.members.is_empty() {
            // Only static members that did not rejoin are left: wait for them (or for their
            // sessions to expire) for another rebalance timeout.
            self.join_timer = Some(JoinTimer::Rebalance {
                deadline: cx.now.saturating_add(self.rebalance_timeout_ms()),
            });
            return;
        }
        self.init_next_generation(cx);
        if self.state == GroupState::Empty {
            tracing::info!(group = %self.id, generation = self.generation, "group is now empty");
            let record = self.metadata_record();
            cx.fx.records.push(record);
            return;
        }
        tracing::info!(
            group = %self.id,
            generation = self.generation,
            members = self.members.len(),
            protocol = self.protocol_name.as_deref().unwrap_or(""),
            "rebalance complete"
        );
        let all = self.current_member_metadata();
        for idx in 0..self.members.len() {
            let Some(m) = self.members.get(idx) else {
                continue;
            };
            let members = if self.is_leader(&m.id) {
                all.clone()
            } else {
                Vec::new()
            };
            let response = self.join_answer(&m.id, members);
            self.answer_join(idx, response, cx);
            if let Some(m) = self.members.get_mut(idx) {
                m.is_new = false;
                m.touch(cx.now);
                self.pending_sync.insert(m.id.clone());
            }
        }
        self.sync_deadline = Some(cx.now.saturating_add(self.rebalance_timeout_ms()));
    }

    /// Makes sure the leader is a member that rejoined; `false` if none did.
    fn elect_joined_leader(&mut self) -> bool {
        let Some(leader) = self.leader.clone() else {
            return false;
        };
        if self.member(&leader).is_some_and(Member::is_awaiting_join) {
            return true;
        }
        match self.members.iter().find(|m| m.is_awaiting_join()) {
            Some(m) => {
                tracing::info!(group = %self.id, old = %leader, new = %m.id, "new group leader");
                self.leader = Some(m.id.clone());
                true
            }
            None => false,
        }
    }

    fn init_next_generation(&mut self, cx: &mut Cx<'_>) {
        self.generation = self.generation.checked_add(1).unwrap_or(1);
        if self.members.is_empty() {
            self.protocol_name = None;
            self.state = GroupState::Empty;
        } else {
            self.protocol_name = self.select_protocol();
            self.state = GroupState::CompletingRebalance;
        }
        self.subscribed_topics = self.compute_subscribed_topics();
        self.state_timestamp = cx.now;
        self.pending_sync.clear();
        self.sync_deadline = None;
    }

    pub(super) fn compute_subscribed_topics(&self) -> Option<BTreeSet<String>> {
        if self.protocol_type.as_deref() != Some(CONSUMER_PROTOCOL_TYPE) {
            return None;
        }
        if self.members.is_empty() {
            return Some(BTreeSet::new());
        }
        let protocol = self.protocol_name.as_deref()?;
        let mut topics = BTreeSet::new();
        for m in &self.members {
            let (_, subscription) = decode_subscription(&m.metadata(protocol)).ok()?;
            topics.extend(subscription.topics.iter().map(|t| t.as_str().to_owned()));
        }
        Some(topics)
    }

    /// Every member with its metadata for the selected protocol (the leader's join answer).
    pub(super) fn current_member_metadata(&self) -> Vec<JoinedMember> {
        let protocol = self.protocol_name.as_deref().unwrap_or("");
        self.members
            .iter()
            .map(|m| JoinedMember {
                member_id: m.id.clone(),
                group_instance_id: m.instance_id.clone(),
                metadata: m.metadata(protocol),
            })
            .collect()
    }

    /// A successful join answer for the current generation.
    pub(super) fn join_answer(&self, member_id: &str, members: Vec<JoinedMember>) -> JoinResponse {
        JoinResponse {
            error: ErrorCode::NONE,
            generation_id: self.generation,
            protocol_type: self.protocol_type.clone(),
            protocol_name: self.protocol_name.clone(),
            leader: self.leader.clone().unwrap_or_default(),
            skip_assignment: false,
            member_id: member_id.to_owned(),
            members,
        }
    }

    /// Answers the JoinGroup member `idx` waits with, if any, and restarts its session.
    pub(super) fn answer_join(&mut self, idx: usize, response: JoinResponse, cx: &mut Cx<'_>) {
        if let Some(m) = self.members.get_mut(idx) {
            if let Some(request) = m.awaiting_join.take() {
                m.touch(cx.now);
                cx.reply_join(request, response);
            }
        }
    }

    /// Answers the SyncGroup member `idx` waits with, if any, and restarts its session.
    pub(super) fn answer_sync(&mut self, idx: usize, response: SyncResponse, cx: &mut Cx<'_>) {
        if let Some(m) = self.members.get_mut(idx) {
            if let Some(request) = m.awaiting_sync.take() {
                m.touch(cx.now);
                cx.reply_sync(request, response);
            }
        }
    }

    /// Delivers each waiting SyncGroup its member's assignment.
    pub(super) fn propagate_assignment(&mut self, cx: &mut Cx<'_>) {
        for idx in 0..self.members.len() {
            let Some(m) = self.members.get(idx) else {
                continue;
            };
            let response = SyncResponse {
                error: ErrorCode::NONE,
                protocol_type: self.protocol_type.clone(),
                protocol_name: self.protocol_name.clone(),
                assignment: m.assignment.clone(),
            };
            self.answer_sync(idx, response, cx);
        }
    }

    /// Clears every assignment and fails the waiting SyncGroups with `error`.
    fn fail_assignment(&mut self, error: ErrorCode, cx: &mut Cx<'_>) {
        for idx in 0..self.members.len() {
            if let Some(m) = self.members.get_mut(idx) {
                m.assignment = Bytes::new();
            }
            self.answer_sync(idx, SyncResponse::error(error), cx);
        }
    }

    /// Removes a member that left or failed: answers what it waits for with
    /// UNKNOWN_MEMBER_ID, then rebalances (or lets the current rebalance complete).
    pub(super) fn remove_member_and_update(&mut self, id: &str, cx: &mut Cx<'_>) {
        let Some(mut member) = self.remove_member(id) else {
            return;
        };
        if let Some(request) = member.awaiting_join.take() {
            cx.reply_join(
                request,
                JoinResponse::error("", ErrorCode::UNKNOWN_MEMBER_ID),
            );
        }
        if let Some(request) = member.awaiting_sync.take() {
            cx.reply_sync(request, SyncResponse::error(ErrorCode::UNKNOWN_MEMBER_ID));
        }
        match self.state {
            GroupState::Dead | GroupState::Empty => {}
            GroupState::Stable | GroupState::CompletingRebalance => {
                self.maybe_prepare_rebalance(cx)
            }
            GroupState::PreparingRebalance => self.try_complete_join(cx),
        }
    }
}
