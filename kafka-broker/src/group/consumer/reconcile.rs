//! Moving one member from its current assignment towards its target (Kafka's
//! `CurrentAssignmentBuilder`): partitions it keeps, partitions it must revoke first, and
//! partitions it gets once their previous owner has released them.
//!
//! The rules, per member state:
//! - STABLE at another epoch than the target's: compute the next assignment.
//! - UNREVOKED_PARTITIONS: wait while the heartbeat's owned partitions still hold any
//!   partition pending revocation (or the heartbeat does not say what it owns); once they
//!   are gone, compute the next assignment at the member's epoch + 1.
//! - UNRELEASED_PARTITIONS: compute the next assignment (it picks up released partitions).
//! - UNKNOWN: fenced unless the member reports that it owns nothing; then start over.
//!
//! The next assignment: kept = assigned ∩ target; to revoke = assigned − kept; to assign =
//! target − kept, less the partitions another member still holds (unreleased). With
//! something to revoke that the member still owns, it stays at its epoch in
//! UNREVOKED_PARTITIONS with only the kept partitions assigned; otherwise it moves to the
//! target epoch with kept + assignable, UNRELEASED_PARTITIONS when some were held back, else
//! STABLE.

use kafka_protocol::Uuid;

use super::member::ConsumerGroupMember;
use super::types::{ConsumerGroupError, MemberState, TopicPartitions};

/// What a reconciliation looks at besides the member.
pub(super) struct Reconcile<'a> {
    /// The group's target assignment epoch.
    pub target_epoch: i32,
    /// The member's target assignment.
    pub target: &'a TopicPartitions,
    /// The partitions the member said it owns in this heartbeat (`None`: not sent).
    pub owned: Option<&'a TopicPartitions>,
    /// The epoch of the member owning a partition now, -1 when it is free.
    pub partition_epoch: &'a dyn Fn(Uuid, i32) -> i32,
}

impl Reconcile<'_> {
    /// The member after this reconciliation step.
    pub(super) fn apply(
        &self,
        member: &ConsumerGroupMember,
    ) -> Result<ConsumerGroupMember, ConsumerGroupError> {
        match member.state {
            MemberState::Stable => {
                if member.member_epoch != self.target_epoch {
                    Ok(self.next(member, member.member_epoch))
                } else {
                    Ok(member.clone())
                }
            }
            MemberState::UnrevokedPartitions => {
                if self.owns_any(&member.pending_revocation) {
                    Ok(member.clone())
                } else {
                    Ok(self.next(member, member.member_epoch.saturating_add(1)))
                }
            }
            MemberState::UnreleasedPartitions => Ok(self.next(member, member.member_epoch)),
            MemberState::Unknown => {
                if self.owned.is_none_or(|o| o.values().any(|p| !p.is_empty())) {
                    return Err(ConsumerGroupError::FencedMemberEpoch {
                        received: member.member_epoch,
                        expected: member.member_epoch,
                    });
                }
                Ok(self.next(member, self.target_epoch))
            }
        }
    }

    /// Whether the member still owns any of `partitions` (it does when it did not say).
    fn owns_any(&self, partitions: &TopicPartitions) -> bool {
        let Some(owned) = self.owned else {
            return true;
        };
        owned.iter().any(|(topic, ps)| {
            partitions
                .get(topic)
                .is_some_and(|pending| ps.iter().any(|p| pending.contains(p)))
        })
    }

    /// The next assignment of `member`, staying at `epoch` while it has to revoke.
    fn next(&self, member: &ConsumerGroupMember, epoch: i32) -> ConsumerGroupMember {
        let mut assigned = TopicPartitions::new();
        let mut revoke = TopicPartitions::new();
        let mut to_assign = TopicPartitions::new();
        let mut unreleased = false;
        let topics = self.target.keys().chain(member.assigned.keys());
        let topics: std::collections::BTreeSet<&Uuid> = topics.collect();
        let empty = Default::default();
        for topic in topics {
            let target = self.target.get(topic).unwrap_or(&empty);
            let current = member.assigned.get(topic).unwrap_or(&empty);
            let kept: std::collections::BTreeSet<i32> =
                current.intersection(target).copied().collect();
            let revoked: std::collections::BTreeSet<i32> =
                current.difference(&kept).copied().collect();
            let own_pending = member.pending_revocation.get(topic);
            let mut assignable = std::collections::BTreeSet::new();
            for &p in target.difference(&kept) {
                let held = (self.partition_epoch)(*topic, p) != -1
                    && !own_pending.is_some_and(|s| s.contains(&p));
                if held {
                    unreleased = true;
                } else {
                    assignable.insert(p);
                }
            }
            if !kept.is_empty() {
                assigned.insert(*topic, kept);
            }
            if !revoked.is_empty() {
                revoke.insert(*topic, revoked);
            }
            if !assignable.is_empty() {
                to_assign.insert(*topic, assignable);
            }
        }

        let mut next = member.clone();
        if !revoke.is_empty() && self.owns_any(&revoke) {
            next.state = MemberState::UnrevokedPartitions;
            set_epoch(&mut next, epoch);
            next.assigned = assigned;
            next.pending_revocation = revoke;
            return next;
        }
        for (topic, ps) in to_assign {
            assigned.entry(topic).or_default().extend(ps);
        }
        next.state = if unreleased {
            MemberState::UnreleasedPartitions
        } else {
            MemberState::Stable
        };
        set_epoch(&mut next, self.target_epoch);
        next.assigned = assigned;
        next.pending_revocation = TopicPartitions::new();
        next
    }
}

/// Kafka's `updateMemberEpoch`: the previous epoch becomes the current one, even when the
/// epoch does not change.
fn set_epoch(member: &mut ConsumerGroupMember, epoch: i32) {
    member.previous_member_epoch = member.member_epoch;
    member.member_epoch = epoch;
}
