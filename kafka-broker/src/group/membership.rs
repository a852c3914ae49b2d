//! SyncGroup, Heartbeat and LeaveGroup for one group.

use kafka_protocol::error_code::ErrorCode;

use super::state::{Cx, Group};
use super::types::{
    GroupState, HeartbeatRequest, LeaveResponse, LeavingMember, RequestId, SyncRequest,
    SyncResponse,
};

impl Group {
    /// Handles a SyncGroup. The answer comes out as an [`super::Output`]: at once, or for a
    /// member waiting for the leader, when the leader's assignment arrives (or the
    /// rebalance restarts).
    pub(super) fn sync(&mut self, request: RequestId, req: SyncRequest, cx: &mut Cx<'_>) {
        if let Err(error) = self.validate_sync(&req) {
            cx.reply_sync(request, SyncResponse::error(error));
            return;
        }
        let Some(idx) = self.index_of(&req.member_id) else {
            cx.reply_sync(request, SyncResponse::error(ErrorCode::UNKNOWN_MEMBER_ID));
            return;
        };
        match self.state {
            GroupState::Empty => {
                cx.reply_sync(request, SyncResponse::error(ErrorCode::UNKNOWN_MEMBER_ID))
            }
            GroupState::PreparingRebalance => cx.reply_sync(
                request,
                SyncResponse::error(ErrorCode::REBALANCE_IN_PROGRESS),
            ),
            GroupState::Dead => cx.reply_sync(
                request,
                SyncResponse::error(ErrorCode::COORDINATOR_NOT_AVAILABLE),
            ),
            GroupState::CompletingRebalance => {
                if let Some(m) = self.members.get_mut(idx) {
                    if let Some(old) = m.awaiting_sync.replace(request) {
                        cx.reply_sync(old, SyncResponse::error(ErrorCode::REBALANCE_IN_PROGRESS));
                    }
                }
                self.pending_sync.remove(&req.member_id);
                if self.is_leader(&req.member_id) {
                    for m in &mut self.members {
                        // Members the leader left out get an empty assignment; unknown ids
                        // in its list are ignored; a repeated id counts once, the last time.
                        m.assignment = req
                            .assignments
                            .iter()
                            .rev()
                            .find(|(id, _)| *id == m.id)
                            .map(|(_, a)| a.clone())
                            .unwrap_or_default();
                    }
                    let record = self.metadata_record();
                    cx.fx.records.push(record);
                    self.propagate_assignment(cx);
                    self.state = GroupState::Stable;
                    tracing::debug!(group = %self.id, generation = self.generation, "group stable");
                }
            }
            GroupState::Stable => {
                self.pending_sync.remove(&req.member_id);
                let response = SyncResponse {
                    error: ErrorCode::NONE,
                    protocol_type: self.protocol_type.clone(),
                    protocol_name: self.protocol_name.clone(),
                    assignment: self
                        .members
                        .get(idx)
                        .map(|m| m.assignment.clone())
                        .unwrap_or_default(),
                };
                if let Some(m) = self.members.get_mut(idx) {
                    m.touch(cx.now);
                }
                cx.reply_sync(request, response);
            }
        }
    }

    fn validate_sync(&self, req: &SyncRequest) -> Result<(), ErrorCode> {
        if self.state == GroupState::Dead {
            return Err(ErrorCode::COORDINATOR_NOT_AVAILABLE);
        }
        self.validate_member(&req.member_id, req.group_instance_id.as_deref())?;
        if req.generation_id != self.generation {
            return Err(ErrorCode::ILLEGAL_GENERATION);
        }
        let mismatch = |ours: &Option<String>, theirs: &Option<String>| {
            theirs.as_ref().is_some_and(|t| ours.as_ref() != Some(t))
        };
        if mismatch(&self.protocol_type, &req.protocol_type)
            || mismatch(&self.protocol_name, &req.protocol_name)
        {
            return Err(ErrorCode::INCONSISTENT_GROUP_PROTOCOL);
        }
        Ok(())
    }

    /// Handles a Heartbeat: restarts the member's session, and tells it whether to rejoin.
    pub(super) fn heartbeat(&mut self, req: &HeartbeatRequest, cx: &mut Cx<'_>) -> ErrorCode {
        if self.state == GroupState::Dead {
            return ErrorCode::COORDINATOR_NOT_AVAILABLE;
        }
        if let Err(e) = self.validate_member(&req.member_id, req.group_instance_id.as_deref()) {
            return e;
        }
        if req.generation_id != self.generation {
            return ErrorCode::ILLEGAL_GENERATION;
        }
        let answer = match self.state {
            GroupState::Empty | GroupState::Dead => return ErrorCode::UNKNOWN_MEMBER_ID,
            GroupState::PreparingRebalance => ErrorCode::REBALANCE_IN_PROGRESS,
            // Clients heartbeat between their join answer and SyncGroup too.
            GroupState::CompletingRebalance | GroupState::Stable => ErrorCode::NONE,
        };
        if let Some(m) = self.member_mut(&req.member_id) {
            m.touch(cx.now);
        }
        answer
    }

    /// Handles a LeaveGroup (v0-2 one member, v3+ a batch with an error each).
    pub(super) fn leave(&mut self, members: &[LeavingMember], cx: &mut Cx<'_>) -> LeaveResponse {
        if self.state == GroupState::Dead {
            return LeaveResponse {
                error: ErrorCode::COORDINATOR_NOT_AVAILABLE,
                members: Vec::new(),
            };
        }
        let mut answers = Vec::with_capacity(members.len());
        for leaving in members {
            let instance = leaving.group_instance_id.as_deref();
            let error = if leaving.member_id.is_empty() {
                // An administrator removing a static member by its instance id.
                match instance
                    .and_then(|i| self.static_member(i))
                    .map(str::to_owned)
                {
                    Some(current) => {
                        self.remove_member_and_update(&current, cx);
                        ErrorCode::NONE
                    }
                    None => ErrorCode::UNKNOWN_MEMBER_ID,
                }
            } else if self.pending_members.remove(&leaving.member_id).is_some() {
                self.try_complete_join(cx);
                ErrorCode::NONE
            } else {
                match self.validate_member(&leaving.member_id, instance) {
                    Ok(()) => {
                        tracing::info!(group = %self.id, member = %leaving.member_id, "member left");
                        self.remove_member_and_update(&leaving.member_id, cx);
                        ErrorCode::NONE
                    }
                    Err(e) => e,
                }
            };
            answers.push((leaving.clone(), error));
        }
        LeaveResponse {
            error: ErrorCode::NONE,
            members: answers,
        }
    }
}
