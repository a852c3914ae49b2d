//! A group member.

use bytes::Bytes;

use super::types::{JoinRequest, Protocol, RequestId};

/// A member of a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub(super) id: String,
    pub(super) instance_id: Option<String>,
    pub(super) client_id: String,
    pub(super) client_host: String,
    pub(super) session_timeout_ms: i32,
    pub(super) rebalance_timeout_ms: i32,
    pub(super) protocol_type: String,
    pub(super) protocols: Vec<Protocol>,
    pub(super) assignment: Bytes,
    /// A JoinGroup waiting for the rebalance to complete.
    pub(super) awaiting_join: Option<RequestId>,
    /// A SyncGroup waiting for the leader's assignment.
    pub(super) awaiting_sync: Option<RequestId>,
    /// Joined during the current rebalance and has not had a join answer yet.
    pub(super) is_new: bool,
    /// When the session expires; `None` while the member waits for a join or sync answer
    /// (the rebalance and sync timeouts cover it then; answering it restarts the session).
    pub(super) session_deadline: Option<i64>,
}

impl Member {
    /// A member from its first JoinGroup.
    pub(super) fn new(id: String, req: JoinRequest) -> Self {
        Self {
            id,
            instance_id: req.group_instance_id,
            client_id: req.client_id,
            client_host: req.client_host,
            session_timeout_ms: req.session_timeout_ms,
            rebalance_timeout_ms: req.rebalance_timeout_ms,
            protocol_type: req.protocol_type,
            protocols: req.protocols,
            assignment: Bytes::new(),
            awaiting_join: None,
            awaiting_sync: None,
            is_new: false,
            session_deadline: None,
        }
    }

    /// The member id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// `group.instance.id`, for a static member.
    pub fn instance_id(&self) -> Option<&str> {
        self.instance_id.as_deref()
    }

    pub fn client_id(&self) -> &str {
        &self.client_id
    }

    pub fn client_host(&self) -> &str {
        &self.client_host
    }

    pub fn session_timeout_ms(&self) -> i32 {
        self.session_timeout_ms
    }

    pub fn rebalance_timeout_ms(&self) -> i32 {
        self.rebalance_timeout_ms
    }

    /// Supported protocols in order of preference.
    pub fn protocols(&self) -> &[Protocol] {
        &self.protocols
    }

    /// The assignment the leader gave this member in the current generation.
    pub fn assignment(&self) -> &Bytes {
        &self.assignment
    }

    /// Whether a JoinGroup of this member waits for the rebalance.
    pub fn is_awaiting_join(&self) -> bool {
        self.awaiting_join.is_some()
    }

    /// Whether a SyncGroup of this member waits for the leader.
    pub fn is_awaiting_sync(&self) -> bool {
        self.awaiting_sync.is_some()
    }

    /// When the session expires, if it is running.
    pub fn session_deadline(&self) -> Option<i64> {
        self.session_deadline
    }

    /// Whether the member supports `protocol`.
    pub fn supports(&self, protocol: &str) -> bool {
        self.protocols.iter().any(|p| p.name == protocol)
    }

    /// The member's metadata for `protocol` (empty if it does not support it).
    pub fn metadata(&self, protocol: &str) -> Bytes {
        self.protocols
            .iter()
            .find(|p| p.name == protocol)
            .map(|p| p.metadata.clone())
            .unwrap_or_default()
    }

    /// Whether `protocols` are exactly the member's (names, metadata and order).
    pub fn matches(&self, protocols: &[Protocol]) -> bool {
        self.protocols == protocols
    }

    /// Restarts the session.
    pub(super) fn touch(&mut self, now: i64) {
        self.session_deadline = Some(now.saturating_add(i64::from(self.session_timeout_ms)));
    }
}
