//! JoinGroup for one group: new dynamic members (MEMBER_ID_REQUIRED on v4+), known members,
//! and static members (`group.instance.id`), whose restart replaces the old member id
//! without a rebalance when the group is stable and its protocol would not change.

use kafka_protocol::error_code::ErrorCode;

use super::member::Member;
use super::state::{Cx, Group};
use super::types::{GroupState, JoinRequest, JoinResponse, RequestId};

impl Group {
    /// Handles a JoinGroup (group id and session timeout already checked). The answer comes
    /// out as an [`super::Output`], now or when the rebalance completes.
    pub(super) fn join(&mut self, request: RequestId, req: JoinRequest, cx: &mut Cx<'_>) {
        if !self.accepts_joining_member(&req.member_id, cx.config.max_size) {
            cx.reply_join(
                request,
                JoinResponse::error("", ErrorCode::GROUP_MAX_SIZE_REACHED),
            );
        } else if req.member_id.is_empty() {
            self.join_new_member(request, req, cx);
        } else {
            self.join_known_member(request, req, cx);
        }
        if self.state == GroupState::PreparingRebalance {
            self.try_complete_join(cx);
        }
    }

    fn join_new_member(&mut self, request: RequestId, req: JoinRequest, cx: &mut Cx<'_>) {
        if self.state == GroupState::Dead {
            cx.reply_join(
                request,
                JoinResponse::error("", ErrorCode::COORDINATOR_NOT_AVAILABLE),
            );
            return;
        }
        if !self.supports_protocols(&req.protocol_type, &req.protocols) {
            cx.reply_join(
                request,
                JoinResponse::error("", ErrorCode::INCONSISTENT_GROUP_PROTOCOL),
            );
            return;
        }
        let new_id = format!("{}-{}", req.client_id, cx.ids.next_uuid());
        if let Some(instance) = req.group_instance_id.clone() {
            match self.static_member(&instance).map(str::to_owned) {
                Some(old_id) => self.replace_static_member(&old_id, new_id, request, req, cx),
                None => self.add_member_and_rebalance(new_id, request, req, cx),
            }
        } else if req.require_known_member_id {
            // The client has to come back with this id; until then it counts as expected in
            // a rebalance, for at most its session timeout.
            let lapse = cx.now.saturating_add(i64::from(req.session_timeout_ms));
            self.pending_members.insert(new_id.clone(), lapse);
            cx.reply_join(
                request,
                JoinResponse::error(new_id, ErrorCode::MEMBER_ID_REQUIRED),
            );
        } else {
            self.add_member_and_rebalance(new_id, request, req, cx);
        }
    }

    fn join_known_member(&mut self, request: RequestId, req: JoinRequest, cx: &mut Cx<'_>) {
        let id = req.member_id.clone();
        if self.state == GroupState::Dead {
            cx.reply_join(
                request,
                JoinResponse::error(id, ErrorCode::COORDINATOR_NOT_AVAILABLE),
            );
            return;
        }
        if !self.supports_protocols(&req.protocol_type, &req.protocols) {
            cx.reply_join(
                request,
                JoinResponse::error(id, ErrorCode::INCONSISTENT_GROUP_PROTOCOL),
            );
            return;
        }
        if req.group_instance_id.is_none() && self.pending_members.contains_key(&id) {
            self.add_member_and_rebalance(id, request, req, cx);
            return;
        }
        let instance = req.group_instance_id.as_deref();
        if self.is_fenced(instance, &id) {
            cx.reply_join(
                request,
                JoinResponse::error(id, ErrorCode::FENCED_INSTANCE_ID),
            );
            return;
        }
        let instance_unknown = instance.is_some_and(|i| self.static_member(i).is_none());
        let Some(idx) = self.index_of(&id).filter(|_| !instance_unknown) else {
            cx.reply_join(
                request,
                JoinResponse::error(id, ErrorCode::UNKNOWN_MEMBER_ID),
            );
            return;
        };
        let (is_leader, same_protocols) = match self.members.get(idx) {
            Some(m) => (self.is_leader(&m.id), m.matches(&req.protocols)),
            None => (false, false),
        };
        match self.state {
            GroupState::PreparingRebalance => {
                self.update_member_and_rebalance(idx, request, req, cx)
            }
            GroupState::CompletingRebalance if same_protocols => {
                // Probably lost the first answer: repeat it for the current generation.
                let members = if is_leader {
                    self.current_member_metadata()
                } else {
                    Vec::new()
                };
                let response = self.join_answer(&id, members);
                cx.reply_join(request, response);
            }
            GroupState::Stable if !is_leader && same_protocols => {
                // Nothing changed for a follower: it can go on to SyncGroup.
                let response = self.join_answer(&id, Vec::new());
                cx.reply_join(request, response);
            }
            // A leader rejoining a stable group asks for a rebalance (e.g. topic metadata
            // changed); anyone with new metadata forces one.
            GroupState::CompletingRebalance | GroupState::Stable => {
                self.update_member_and_rebalance(idx, request, req, cx)
            }
            GroupState::Empty | GroupState::Dead => {
                cx.reply_join(
                    request,
                    JoinResponse::error(id, ErrorCode::UNKNOWN_MEMBER_ID),
                );
            }
        }
    }

    /// Takes the member's new protocols and timeouts and makes `request` its waiting join
    /// (an older one still waiting is answered REBALANCE_IN_PROGRESS: the client gave up on
    /// it).
    fn update_member(
        &mut self,
        idx: usize,
        request: RequestId,
        req: &JoinRequest,
        cx: &mut Cx<'_>,
    ) {
        let Some(m) = self.members.get_mut(idx) else {
            return;
        };
        m.protocols = req.protocols.clone();
        m.session_timeout_ms = req.session_timeout_ms;
        m.rebalance_timeout_ms = req.rebalance_timeout_ms;
        if let Some(old) = m.awaiting_join.replace(request) {
            let superseded = JoinResponse::error(m.id.clone(), ErrorCode::REBALANCE_IN_PROGRESS);
            cx.reply_join(old, superseded);
        }
    }

    fn update_member_and_rebalance(
        &mut self,
        idx: usize,
        request: RequestId,
        req: JoinRequest,
        cx: &mut Cx<'_>,
    ) {
        self.update_member(idx, request, &req, cx);
        self.maybe_prepare_rebalance(cx);
    }

    fn add_member_and_rebalance(
        &mut self,
        id: String,
        request: RequestId,
        req: JoinRequest,
        cx: &mut Cx<'_>,
    ) {
        let mut member = Member::new(id, req);
        member.is_new = true;
        member.awaiting_join = Some(request);
        // A new member cannot heartbeat before its join is answered: bound its wait instead.
        member.session_deadline = Some(cx.now.saturating_add(cx.config.new_member_join_timeout_ms));
        if self.state == GroupState::PreparingRebalance && self.generation == 0 {
            self.new_member_added = true;
        }
        self.add_member(member);
        self.maybe_prepare_rebalance(cx);
    }

    /// A static member came back without a member id: the new incarnation takes over the old
    /// one's place (the old id is fenced from now on).
    fn replace_static_member(
        &mut self,
        old_id: &str,
        new_id: String,
        request: RequestId,
        req: JoinRequest,
        cx: &mut Cx<'_>,
    ) {
        let Some(idx) = self.index_of(old_id) else {
            self.add_member_and_rebalance(new_id, request, req, cx);
            return;
        };
        let previous_leader = self.leader.clone().unwrap_or_default();
        if let Some(m) = self.members.get_mut(idx) {
            if let Some(r) = m.awaiting_join.take() {
                cx.reply_join(
                    r,
                    JoinResponse::error(old_id, ErrorCode::FENCED_INSTANCE_ID),
                );
            }
            if let Some(r) = m.awaiting_sync.take() {
                cx.reply_sync(
                    r,
                    super::types::SyncResponse::error(ErrorCode::FENCED_INSTANCE_ID),
                );
            }
            m.id = new_id.clone();
            m.touch(cx.now);
        }
        if self.is_leader(old_id) {
            self.leader = Some(new_id.clone());
        }
        if self.pending_sync.remove(old_id) {
            self.pending_sync.insert(new_id.clone());
        }
        tracing::info!(group = %self.id, old = old_id, new = %new_id, "static member replaced");
        self.update_member(idx, request, &req, cx);

        match self.state {
            GroupState::Stable => {
                if self.select_protocol() == self.protocol_name {
                    // Same protocol: no rebalance. Kafka persists the new member id first.
                    let record = self.metadata_record();
                    cx.fx.records.push(record);
                    let is_leader = self.is_leader(&new_id);
                    let skip = req.supports_skip_assignment && is_leader;
                    let mut response = self.join_answer(&new_id, Vec::new());
                    if skip {
                        // v9+: it is the leader, but must not reassign a stable group.
                        response.members = self.current_member_metadata();
                        response.skip_assignment = true;
                    } else {
                        // Older clients are told the previous leader id, so a restarted
                        // leader does not run an assignment the stable group would ignore.
                        response.leader = previous_leader;
                    }
                    self.answer_join(idx, response, cx);
                } else {
                    self.maybe_prepare_rebalance(cx);
                }
            }
            GroupState::CompletingRebalance | GroupState::Empty | GroupState::Dead => {
                self.maybe_prepare_rebalance(cx)
            }
            // Answered when the rebalance completes.
            GroupState::PreparingRebalance => {}
        }
    }
}
