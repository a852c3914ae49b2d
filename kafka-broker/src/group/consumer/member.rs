//! One member of a KIP-848 group: its subscription (what ConsumerGroupMemberMetadata
//! records) and its current assignment (what ConsumerGroupCurrentMemberAssignment records).

use std::collections::BTreeSet;

use super::types::{HeartbeatRequest, MemberState, TopicPartitions};

/// A member of a consumer group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerGroupMember {
    pub member_id: String,
    /// Set for a static member (`group.instance.id`).
    pub instance_id: Option<String>,
    pub rack_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub subscribed_topic_names: BTreeSet<String>,
    /// Empty when the member subscribes by names only (as Kafka keeps it).
    pub subscribed_topic_regex: String,
    /// -1 until the member sends it (it must when joining).
    pub rebalance_timeout_ms: i32,
    pub server_assignor: Option<String>,
    /// The epoch the member is at; -2 while a static member is away.
    pub member_epoch: i32,
    /// The epoch before the last bump: a heartbeat at it is tolerated when its owned
    /// partitions are a subset of the assigned ones (the bump's answer may have been lost).
    pub previous_member_epoch: i32,
    pub state: MemberState,
    /// What the member owns (or may own) now.
    pub assigned: TopicPartitions,
    /// What it must give up before moving on.
    pub pending_revocation: TopicPartitions,
}

impl ConsumerGroupMember {
    /// A new member as Kafka creates it: epoch 0, previous epoch -1, stable, nothing.
    pub fn new(member_id: &str) -> Self {
        Self {
            member_id: member_id.to_owned(),
            instance_id: None,
            rack_id: None,
            client_id: String::new(),
            client_host: String::new(),
            subscribed_topic_names: BTreeSet::new(),
            subscribed_topic_regex: String::new(),
            rebalance_timeout_ms: -1,
            server_assignor: None,
            member_epoch: 0,
            previous_member_epoch: -1,
            state: MemberState::Stable,
            assigned: TopicPartitions::new(),
            pending_revocation: TopicPartitions::new(),
        }
    }

    /// Whether the member owns its target assignment at `epoch`.
    pub fn is_reconciled_to(&self, epoch: i32) -> bool {
        self.state == MemberState::Stable && self.member_epoch == epoch
    }

    /// The member with the fields `req` sets (its null fields leave them as they are), and
    /// its client id and host, as Kafka updates a member on each heartbeat.
    pub(super) fn updated_with(&self, req: &HeartbeatRequest) -> Self {
        let mut m = self.clone();
        if let Some(v) = &req.instance_id {
            m.instance_id = Some(v.clone());
        }
        if let Some(v) = &req.rack_id {
            m.rack_id = Some(v.clone());
        }
        if req.rebalance_timeout_ms != -1 {
            m.rebalance_timeout_ms = req.rebalance_timeout_ms;
        }
        if let Some(v) = &req.server_assignor {
            m.server_assignor = Some(v.clone());
        }
        if let Some(v) = &req.subscribed_topic_names {
            m.subscribed_topic_names = v.iter().cloned().collect();
        }
        if let Some(v) = &req.subscribed_topic_regex {
            m.subscribed_topic_regex = v.clone();
        }
        m.client_id = req.client_id.clone();
        m.client_host = req.client_host.clone();
        m
    }

    /// Whether the member's subscription fields (what its metadata record holds) differ.
    pub(super) fn metadata_differs(&self, other: &Self) -> bool {
        self.instance_id != other.instance_id
            || self.rack_id != other.rack_id
            || self.client_id != other.client_id
            || self.client_host != other.client_host
            || self.subscribed_topic_names != other.subscribed_topic_names
            || self.subscribed_topic_regex != other.subscribed_topic_regex
            || self.rebalance_timeout_ms != other.rebalance_timeout_ms
            || self.server_assignor != other.server_assignor
    }

    /// Whether the assignment fields (what its current-assignment record holds) differ.
    pub(super) fn assignment_differs(&self, other: &Self) -> bool {
        self.member_epoch != other.member_epoch
            || self.previous_member_epoch != other.previous_member_epoch
            || self.state != other.state
            || self.assigned != other.assigned
            || self.pending_revocation != other.pending_revocation
    }

    /// Whether the member subscribes by regex.
    pub fn has_regex(&self) -> bool {
        !self.subscribed_topic_regex.is_empty()
    }
}
