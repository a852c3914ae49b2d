//! What the group leader does between JoinGroup and SyncGroup: decode every member's
//! subscription, run the chosen assignor over the partition counts of all subscribed topics,
//! check the result under the cooperative protocol, and encode each member's share.
//! Pure: the coordinator task fetches the metadata and sends the result.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use bytes::Bytes;

use super::wire::JoinedMember;
use crate::assignor::{
    ASSIGNMENT_VERSION, Assignor, ConsumerAssignment, MemberSubscription,
    validate_cooperative_assignment,
};
use crate::error::ConsumerError;

/// The leader's work for one generation.
#[derive(Debug, Clone)]
pub struct LeaderTask {
    pub assignor: Arc<dyn Assignor>,
    /// The group runs the cooperative protocol.
    pub cooperative: bool,
    /// Every member with its subscription bytes (JoinGroup answer).
    pub members: Vec<JoinedMember>,
    /// v9+: a static leader rejoined a stable group; it must not reassign.
    pub skip_assignment: bool,
}

impl LeaderTask {
    /// The members' subscriptions. A member whose metadata cannot be read is taken as
    /// subscribed to nothing (logged): one bad peer must not stop the group.
    pub fn subscriptions(&self) -> Vec<MemberSubscription> {
        self.members
            .iter()
            .map(|m| {
                MemberSubscription::from_metadata(
                    m.member_id.clone(),
                    m.group_instance_id.clone(),
                    &m.metadata,
                )
                .unwrap_or_else(|e| {
                    tracing::warn!(member = %m.member_id, error = %e, "unreadable member subscription");
                    MemberSubscription {
                        member_id: m.member_id.clone(),
                        group_instance_id: m.group_instance_id.clone(),
                        ..MemberSubscription::default()
                    }
                })
            })
            .collect()
    }

    /// Every topic some member subscribes to (the metadata the leader needs).
    pub fn topics(&self) -> BTreeSet<String> {
        self.subscriptions()
            .into_iter()
            .flat_map(|m| m.topics)
            .collect()
    }

    /// The assignment of every member, encoded for SyncGroup. `counts` holds the partition
    /// count of each subscribed topic that exists (missing or negative: not assigned).
    pub fn assign(
        &self,
        counts: &BTreeMap<String, i32>,
    ) -> Result<Vec<(String, Bytes)>, ConsumerError> {
        if self.skip_assignment {
            return Ok(Vec::new());
        }
        let members = self.subscriptions();
        let wanted: BTreeSet<&str> = members
            .iter()
            .flat_map(|m| m.topics.iter().map(String::as_str))
            .collect();
        let partitions_per_topic: BTreeMap<String, i32> = counts
            .iter()
            .filter(|(t, n)| **n >= 0 && wanted.contains(t.as_str()))
            .map(|(t, n)| (t.clone(), *n))
            .collect();
        let assignment = self.assignor.assign(&partitions_per_topic, &members)?;
        if self.cooperative && self.assignor.name() != "cooperative-sticky" {
            validate_cooperative_assignment(&members, &assignment)?;
        }
        members
            .iter()
            .map(|m| {
                let parts = assignment.get(&m.member_id).cloned().unwrap_or_default();
                let bytes = ConsumerAssignment::new(parts).encode(ASSIGNMENT_VERSION)?;
                Ok((m.member_id.clone(), bytes))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::assignor::{ConsumerSubscription, RangeAssignor, SUBSCRIPTION_VERSION};
    use crate::types::TopicPartition;

    fn member(id: &str, topics: &[&str]) -> JoinedMember {
        let s = ConsumerSubscription {
            topics: topics.iter().map(|t| (*t).to_owned()).collect(),
            ..Default::default()
        };
        JoinedMember {
            member_id: id.into(),
            group_instance_id: None,
            metadata: s.encode(SUBSCRIPTION_VERSION).unwrap(),
        }
    }

    #[test]
    fn range_over_all_members_with_a_bad_one() {
        let task = LeaderTask {
            assignor: Arc::new(RangeAssignor),
            cooperative: false,
            members: vec![
                member("a", &["t"]),
                member("b", &["t", "u"]),
                JoinedMember {
                    member_id: "c".into(),
                    group_instance_id: None,
                    metadata: Bytes::from_static(b"\xff"),
                },
            ],
            skip_assignment: false,
        };
        assert_eq!(
            task.topics().into_iter().collect::<Vec<_>>(),
            ["t".to_owned(), "u".to_owned()]
        );
        let counts = BTreeMap::from([
            ("t".to_owned(), 4),
            ("u".to_owned(), 1),
            ("v".to_owned(), 9),
        ]);
        let out = task.assign(&counts).unwrap();
        assert_eq!(out.len(), 3);
        let decoded: BTreeMap<String, Vec<TopicPartition>> = out
            .iter()
            .map(|(m, b)| {
                (
                    m.clone(),
                    ConsumerAssignment::decode(b).unwrap().1.partitions,
                )
            })
            .collect();
        assert_eq!(
            decoded["a"],
            [TopicPartition::new("t", 0), TopicPartition::new("t", 1)]
        );
        assert_eq!(
            decoded["b"],
            [
                TopicPartition::new("t", 2),
                TopicPartition::new("t", 3),
                TopicPartition::new("u", 0)
            ]
        );
        assert!(decoded["c"].is_empty());
        let skip = LeaderTask {
            skip_assignment: true,
            ..task
        };
        assert!(skip.assign(&counts).unwrap().is_empty());
    }
}
