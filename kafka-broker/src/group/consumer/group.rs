//! One KIP-848 group: what its records hold (group epoch, subscription metadata, members,
//! target assignment and its epoch) and what follows from them (static members by instance
//! id, the epoch each owned partition is held at, the state), changed only by replaying
//! records ([`ConsumerGroup::replay`]) so that a group read back from the log is the group
//! that wrote it.

use std::collections::{BTreeMap, BTreeSet};

use kafka_protocol::Uuid;

use super::assignor::{TopicDescriber, TopicPartitions};
use super::member::ConsumerGroupMember;
use super::records::{RecordKey, RecordValue, SubscriptionMetadata, TopicMetadata};
use super::types::{ConsumerGroupState, LEAVE_GROUP_MEMBER_EPOCH};

/// A consumer group of the KIP-848 protocol.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerGroup {
    pub(super) group_id: String,
    pub(super) group_epoch: i32,
    /// The epoch of the target assignment (-1 once deleted).
    pub(super) assignment_epoch: i32,
    pub(super) subscription_metadata: SubscriptionMetadata,
    pub(super) members: BTreeMap<String, ConsumerGroupMember>,
    /// Every member's target assignment, by member id.
    pub(super) target: BTreeMap<String, TopicPartitions>,
    /// Member id by instance id, for static members.
    pub(super) static_members: BTreeMap<String, String>,
    /// The epoch of the member owning each partition (assigned or pending revocation).
    pub(super) partition_epochs: BTreeMap<(Uuid, i32), i32>,
    /// Each subscription regex's topics, resolved against the latest image (not recorded:
    /// resolved again when the group is loaded).
    pub(super) resolved_regexes: BTreeMap<String, BTreeSet<String>>,
}

impl ConsumerGroup {
    /// An empty group, as it is before its first record.
    pub fn new(group_id: &str) -> Self {
        Self {
            group_id: group_id.to_owned(),
            group_epoch: 0,
            assignment_epoch: 0,
            subscription_metadata: SubscriptionMetadata::new(),
            members: BTreeMap::new(),
            target: BTreeMap::new(),
            static_members: BTreeMap::new(),
            partition_epochs: BTreeMap::new(),
            resolved_regexes: BTreeMap::new(),
        }
    }

    pub fn group_id(&self) -> &str {
        &self.group_id
    }

    /// The group epoch: bumped by every change of membership, subscriptions or subscribed
    /// topics.
    pub fn group_epoch(&self) -> i32 {
        self.group_epoch
    }

    /// The epoch of the current target assignment.
    pub fn assignment_epoch(&self) -> i32 {
        self.assignment_epoch
    }

    /// Members by id.
    pub fn members(&self) -> &BTreeMap<String, ConsumerGroupMember> {
        &self.members
    }

    /// A member.
    pub fn member(&self, member_id: &str) -> Option<&ConsumerGroupMember> {
        self.members.get(member_id)
    }

    /// The subscribed topics' metadata, by name.
    pub fn subscription_metadata(&self) -> &SubscriptionMetadata {
        &self.subscription_metadata
    }

    /// Target assignments by member id.
    pub fn target_assignment(&self) -> &BTreeMap<String, TopicPartitions> {
        &self.target
    }

    /// The member holding `instance_id`.
    pub fn static_member(&self, instance_id: &str) -> Option<&ConsumerGroupMember> {
        self.static_members
            .get(instance_id)
            .and_then(|id| self.members.get(id))
    }

    /// The target of `member_id`, or for a static member the target of the member holding
    /// its instance id (Kafka's `targetAssignment(memberId, instanceId)`).
    pub(super) fn target_of(&self, member_id: &str, instance_id: Option<&str>) -> TopicPartitions {
        let id = match instance_id {
            None => Some(member_id),
            Some(i) => self.static_members.get(i).map(String::as_str),
        };
        id.and_then(|id| self.target.get(id))
            .cloned()
            .unwrap_or_default()
    }

    /// The epoch `topic`'s partition `partition` is held at, -1 when no member holds it.
    pub fn partition_epoch(&self, topic: Uuid, partition: i32) -> i32 {
        self.partition_epochs
            .get(&(topic, partition))
            .copied()
            .unwrap_or(-1)
    }

    /// The group's state, as Kafka derives it.
    pub fn state(&self) -> ConsumerGroupState {
        if self.members.is_empty() {
            ConsumerGroupState::Empty
        } else if self.group_epoch > self.assignment_epoch {
            ConsumerGroupState::Assigning
        } else if self
            .members
            .values()
            .any(|m| !m.is_reconciled_to(self.assignment_epoch))
        {
            ConsumerGroupState::Reconciling
        } else {
            ConsumerGroupState::Stable
        }
    }

    /// The regexes the members use.
    pub(super) fn regexes(&self) -> BTreeSet<String> {
        self.members
            .values()
            .filter(|m| m.has_regex())
            .map(|m| m.subscribed_topic_regex.clone())
            .collect()
    }

    /// Whether the group has no members.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// The record keys of every member and of the group: what deleting it tombstones, in
    /// Kafka's order.
    pub(super) fn tombstone_keys(&self) -> Vec<RecordKey> {
        let g = || self.group_id.clone();
        let mut keys = Vec::new();
        for id in self.members.keys() {
            keys.push(RecordKey::CurrentMemberAssignment {
                group_id: g(),
                member_id: id.clone(),
            });
        }
        for id in self.members.keys() {
            keys.push(RecordKey::TargetAssignmentMember {
                group_id: g(),
                member_id: id.clone(),
            });
        }
        keys.push(RecordKey::TargetAssignmentMetadata { group_id: g() });
        for id in self.members.keys() {
            keys.push(RecordKey::MemberMetadata {
                group_id: g(),
                member_id: id.clone(),
            });
        }
        keys.push(RecordKey::PartitionMetadata { group_id: g() });
        keys.push(RecordKey::GroupMetadata { group_id: g() });
        keys
    }

    /// Applies one record of this group. Returns whether the group is to be dropped (its
    /// ConsumerGroupMetadata tombstone).
    pub(super) fn replay(&mut self, key: &RecordKey, value: Option<&RecordValue>) -> bool {
        match (key, value) {
            (RecordKey::GroupMetadata { .. }, Some(RecordValue::GroupMetadata { epoch })) => {
                self.group_epoch = *epoch;
            }
            (RecordKey::GroupMetadata { .. }, None) => {
                if !self.members.is_empty() || !self.target.is_empty() {
                    tracing::warn!(group = %self.group_id,
                        "group tombstone while the group still has members; dropped anyway");
                }
                return true;
            }
            (RecordKey::PartitionMetadata { .. }, v) => {
                self.subscription_metadata = match v {
                    Some(RecordValue::PartitionMetadata(m)) => m.clone(),
                    _ => SubscriptionMetadata::new(),
                };
            }
            (RecordKey::MemberMetadata { member_id, .. }, Some(RecordValue::MemberMetadata(s))) => {
                let mut m = self
                    .members
                    .get(member_id)
                    .cloned()
                    .unwrap_or_else(|| ConsumerGroupMember::new(member_id));
                s.apply_to(&mut m);
                self.put_member(m);
            }
            (RecordKey::MemberMetadata { member_id, .. }, None) => {
                self.remove_member(member_id);
            }
            (
                RecordKey::TargetAssignmentMetadata { .. },
                Some(RecordValue::TargetAssignmentMetadata { assignment_epoch }),
            ) => self.assignment_epoch = *assignment_epoch,
            (RecordKey::TargetAssignmentMetadata { .. }, None) => self.assignment_epoch = -1,
            (
                RecordKey::TargetAssignmentMember { member_id, .. },
                Some(RecordValue::TargetAssignmentMember(tps)),
            ) => {
                self.target.insert(member_id.clone(), tps.clone());
            }
            (RecordKey::TargetAssignmentMember { member_id, .. }, None) => {
                self.target.remove(member_id);
            }
            (
                RecordKey::CurrentMemberAssignment { member_id, .. },
                Some(RecordValue::CurrentMemberAssignment(a)),
            ) => {
                let mut m = self
                    .members
                    .get(member_id)
                    .cloned()
                    .unwrap_or_else(|| ConsumerGroupMember::new(member_id));
                a.apply_to(&mut m);
                self.put_member(m);
            }
            (RecordKey::CurrentMemberAssignment { member_id, .. }, None) => {
                if let Some(old) = self.members.get(member_id) {
                    let mut m = old.clone();
                    m.member_epoch = LEAVE_GROUP_MEMBER_EPOCH;
                    m.previous_member_epoch = LEAVE_GROUP_MEMBER_EPOCH;
                    m.assigned.clear();
                    m.pending_revocation.clear();
                    self.put_member(m);
                }
            }
            (key, Some(value)) => {
                tracing::warn!(group = %self.group_id, ?key, ?value,
                    "consumer group record whose value does not match its key skipped");
            }
        }
        false
    }

    /// Puts `m` in place of its namesake, keeping the derived maps true.
    fn put_member(&mut self, m: ConsumerGroupMember) {
        if let Some(old) = self.members.remove(&m.member_id) {
            self.forget(&old);
        }
        for (topic, ps) in m.assigned.iter().chain(m.pending_revocation.iter()) {
            for &p in ps {
                if let Some(prev) = self.partition_epochs.insert((*topic, p), m.member_epoch) {
                    tracing::warn!(group = %self.group_id, member = %m.member_id, %topic,
                        partition = p, epoch = prev,
                        "partition given to a member while another still holds it");
                }
            }
        }
        if let Some(instance) = &m.instance_id {
            self.static_members
                .insert(instance.clone(), m.member_id.clone());
        }
        self.members.insert(m.member_id.clone(), m);
    }

    /// Removes member `member_id` and what derives from it.
    fn remove_member(&mut self, member_id: &str) {
        if let Some(old) = self.members.remove(member_id) {
            self.forget(&old);
        }
    }

    fn forget(&mut self, old: &ConsumerGroupMember) {
        for (topic, ps) in old.assigned.iter().chain(old.pending_revocation.iter()) {
            for p in ps {
                self.partition_epochs.remove(&(*topic, *p));
            }
        }
        if let Some(instance) = &old.instance_id {
            if self.static_members.get(instance) == Some(&old.member_id) {
                self.static_members.remove(instance);
            }
        }
    }
}

/// The subscribed topics of a group as an assignor reads them.
pub(super) struct MetadataDescriber<'a> {
    by_id: BTreeMap<Uuid, &'a TopicMetadata>,
}

impl<'a> MetadataDescriber<'a> {
    pub(super) fn new(metadata: &'a SubscriptionMetadata) -> Self {
        Self {
            by_id: metadata.values().map(|t| (t.id, t)).collect(),
        }
    }
}

impl TopicDescriber for MetadataDescriber<'_> {
    fn partitions(&self, topic: Uuid) -> Option<i32> {
        self.by_id.get(&topic).map(|t| t.num_partitions)
    }

    fn racks(&self, topic: Uuid, partition: i32) -> BTreeSet<String> {
        self.by_id
            .get(&topic)
            .and_then(|t| t.racks.get(&partition).cloned())
            .unwrap_or_default()
    }
}
