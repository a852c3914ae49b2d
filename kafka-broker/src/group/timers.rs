//! A group's timers: member sessions, member ids handed out with MEMBER_ID_REQUIRED, the
//! rebalance (initial delay, rebalance timeout) and the SyncGroup deadline.

use kafka_protocol::error_code::ErrorCode;

use super::state::{Cx, Group, JoinTimer};
use super::types::{GroupState, JoinResponse};

impl Group {
    /// The group's earliest deadline.
    pub(super) fn next_deadline(&self) -> Option<i64> {
        let members = self.members.iter().filter_map(|m| m.session_deadline);
        let pending = self.pending_members.values().copied();
        let timers = self
            .join_timer
            .map(JoinTimer::deadline)
            .into_iter()
            .chain(self.sync_deadline);
        members.chain(pending).chain(timers).min()
    }

    /// Fires every due timer.
    pub(super) fn handle_timeout(&mut self, cx: &mut Cx<'_>) {
        let now = cx.now;
        let lapsed: Vec<String> = self
            .pending_members
            .iter()
            .filter(|(_, d)| **d <= now)
            .map(|(id, _)| id.clone())
            .collect();
        if !lapsed.is_empty() {
            for id in &lapsed {
                self.pending_members.remove(id);
            }
            self.try_complete_join(cx);
        }

        let expired: Vec<String> = self
            .members
            .iter()
            .filter(|m| m.session_deadline.is_some_and(|d| d <= now))
            .map(|m| m.id.clone())
            .collect();
        for id in expired {
            let Some(m) = self.member_mut(&id) else {
                continue;
            };
            if !m.is_new && (m.is_awaiting_join() || m.is_awaiting_sync()) {
                // Waiting for the rebalance counts as alive; answering restarts the session.
                m.session_deadline = None;
            } else {
                tracing::info!(group = %self.id, member = %id, "session expired; removing member");
                self.remove_member_and_update(&id, cx);
            }
        }

        let due_join = self.join_timer.filter(|t| t.deadline() <= now);
        if due_join.is_some() && self.state != GroupState::PreparingRebalance {
            // A leftover (cannot happen: completing the join clears it); never fire it twice.
            self.join_timer = None;
        } else if let Some(timer) = due_join {
            match timer {
                JoinTimer::Initial {
                    delay_ms,
                    remaining_ms,
                    ..
                } if self.new_member_added && remaining_ms > 0 => {
                    self.new_member_added = false;
                    let delay = delay_ms.min(remaining_ms);
                    self.join_timer = Some(JoinTimer::Initial {
                        deadline: now.saturating_add(delay),
                        delay_ms,
                        remaining_ms: (remaining_ms - delay).max(0),
                    });
                }
                _ => self.complete_join(cx),
            }
        }

        if self.sync_deadline.is_some_and(|d| d <= now) {
            self.sync_deadline = None;
            if matches!(
                self.state,
                GroupState::CompletingRebalance | GroupState::Stable
            ) && !self.pending_sync.is_empty()
            {
                let late: Vec<String> =
                    std::mem::take(&mut self.pending_sync).into_iter().collect();
                tracing::info!(group = %self.id, members = ?late, "no SyncGroup in time; removing");
                for id in late {
                    if let Some(request) = self.remove_member(&id).and_then(|m| m.awaiting_join) {
                        cx.reply_join(
                            request,
                            JoinResponse::error("", ErrorCode::UNKNOWN_MEMBER_ID),
                        );
                    }
                }
                self.prepare_rebalance(cx);
            }
        }
    }
}
