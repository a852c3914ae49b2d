//! A group as a `__consumer_offsets` group metadata record, and back (at load time).

use super::member::Member;
use super::records::{GroupMetadataValue, MemberMetadataValue, OffsetsRecord};
use super::state::Group;
use super::types::{GroupState, Protocol};

impl Group {
    /// The group metadata record Kafka would write now (members with their current
    /// assignments).
    pub(super) fn metadata_record(&self) -> OffsetsRecord {
        OffsetsRecord::group_metadata(&self.id, self.to_value())
    }

    pub(super) fn to_value(&self) -> GroupMetadataValue {
        let protocol = self.protocol_name.as_deref().unwrap_or("");
        GroupMetadataValue {
            protocol_type: self.protocol_type.clone().unwrap_or_default(),
            generation: self.generation,
            protocol: self.protocol_name.clone(),
            leader: self.leader.clone(),
            current_state_timestamp: self.state_timestamp,
            members: self
                .members
                .iter()
                .map(|m| MemberMetadataValue {
                    member_id: m.id.clone(),
                    group_instance_id: m.instance_id.clone(),
                    client_id: m.client_id.clone(),
                    client_host: m.client_host.clone(),
                    rebalance_timeout: m.rebalance_timeout_ms,
                    session_timeout: m.session_timeout_ms,
                    subscription: m.metadata(protocol),
                    assignment: m.assignment.clone(),
                })
                .collect(),
        }
    }

    /// A group rebuilt from its last metadata record (at load time): Empty without members,
    /// else Stable with every member's session started at `now`.
    pub(super) fn from_value(id: String, value: GroupMetadataValue, now: i64) -> Self {
        let mut group = Self::new(id, now);
        group.generation = value.generation;
        group.protocol_type = Some(value.protocol_type).filter(|t| !t.is_empty());
        group.protocol_name = value.protocol;
        group.leader = value.leader;
        group.state_timestamp = if value.current_state_timestamp >= 0 {
            value.current_state_timestamp
        } else {
            now
        };
        let protocol = group.protocol_name.clone().unwrap_or_default();
        let protocol_type = group.protocol_type.clone().unwrap_or_default();
        for v in value.members {
            let mut m = Member {
                id: v.member_id,
                instance_id: v.group_instance_id,
                client_id: v.client_id,
                client_host: v.client_host,
                session_timeout_ms: v.session_timeout,
                rebalance_timeout_ms: v.rebalance_timeout,
                protocol_type: protocol_type.clone(),
                protocols: vec![Protocol {
                    name: protocol.clone(),
                    metadata: v.subscription,
                }],
                assignment: v.assignment,
                awaiting_join: None,
                awaiting_sync: None,
                is_new: false,
                session_deadline: None,
            };
            m.touch(now);
            group.members.push(m);
        }
        if group.members.is_empty() {
            group.state = GroupState::Empty;
            group.leader = None;
        } else {
            group.state = GroupState::Stable;
            if group.leader.as_deref().is_none_or(|l| !group.has_member(l)) {
                group.leader = group.members.first().map(|m| m.id.clone());
            }
        }
        group.subscribed_topics = group.compute_subscribed_topics();
        group
    }
}
