//! The `range` assignor (Kafka's server-side `RangeAssignor`): for each topic, its subscribers
//! in member order get consecutive ranges of its partitions, the first `partitions %
//! subscribers` of them one partition more than the others. Topics with the same partition
//! count and the same subscribers (co-partitioned topics) give each member the same partition
//! numbers, which is what joins need.
//!
//! Members are ordered as Kafka orders them: static members first, by `group.instance.id`, then
//! dynamic members by member id. The assignment is recomputed from that order every time: since
//! Kafka 3.9 (KAFKA-16944, "Rewrite Range Assignor") the server-side range assignor keeps no
//! partition because its member held it before (stickiness and co-partitioning could not both be
//! had); its only stability is that the same members, subscriptions and partition counts give
//! the same assignment, and a static member that rejoins under a new member id gets its old
//! ranges back. Homogeneous groups take a shorter path (every topic has every member as a
//! subscriber); heterogeneous ones count each topic's subscribers. Racks are not used (Kafka's
//! has not been rack-aware since 3.8). Time linear in members × subscribed topics + partitions.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use kafka_protocol::Uuid;

use super::{
    AssignmentMember, Assignor, AssignorError, GroupSpec, TopicDescriber, TopicPartitions,
    empty_assignment, is_homogeneous, partition_count,
};

/// The name members and `group.consumer.assignors` use for this assignor.
pub const RANGE_ASSIGNOR_NAME: &str = "range";

/// Kafka's class name for this assignor, accepted in `group.consumer.assignors`.
pub const KAFKA_CLASS_NAME: &str = "org.apache.kafka.coordinator.group.assignor.RangeAssignor";

/// Kafka's server-side `range` assignor (see the module doc).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RangeAssignor;

impl Assignor for RangeAssignor {
    fn name(&self) -> &'static str {
        RANGE_ASSIGNOR_NAME
    }

    /// The assignment with every member taken as dynamic (no `group.instance.id`): members in
    /// member id order. See [`RangeAssignor::assign_with_instance_ids`].
    fn assign(
        &self,
        group: &GroupSpec,
        topics: &dyn TopicDescriber,
    ) -> Result<BTreeMap<String, TopicPartitions>, AssignorError> {
        self.assign_with_instance_ids(group, topics, &BTreeMap::new())
    }
}

/// A topic's ranges as they are handed out.
struct TopicRanges {
    id: Uuid,
    count: usize,
    subscribers: usize,
    min_quota: usize,
    extra: usize,
    next: usize,
}

impl TopicRanges {
    fn new(id: Uuid, count: usize, subscribers: usize) -> Self {
        Self {
            id,
            count,
            subscribers,
            min_quota: 0,
            extra: 0,
            next: 0,
        }
    }

    /// Fixes the quotas once the subscribers are counted.
    fn start(&mut self) {
        if let (Some(min_quota), Some(extra)) = (
            self.count.checked_div(self.subscribers),
            self.count.checked_rem(self.subscribers),
        ) {
            self.min_quota = min_quota;
            self.extra = extra;
        }
    }

    /// The next subscriber's range.
    fn next_range(&mut self) -> std::ops::Range<usize> {
        let mut quota = self.min_quota;
        if self.extra > 0 {
            quota += 1;
            self.extra -= 1;
        }
        let start = self.next;
        let end = start.saturating_add(quota).min(self.count);
        self.next = end;
        start..end
    }
}

impl RangeAssignor {
    /// The assignment, with the static members' `group.instance.id`s (`instance_ids`, by member
    /// id; members missing from it are dynamic) deciding the member order as in Kafka: static
    /// members first by instance id, then dynamic members by member id.
    pub fn assign_with_instance_ids(
        &self,
        group: &GroupSpec,
        describer: &dyn TopicDescriber,
        instance_ids: &BTreeMap<String, String>,
    ) -> Result<BTreeMap<String, TopicPartitions>, AssignorError> {
        if group.members.is_empty() {
            return Ok(BTreeMap::new());
        }
        let mut order: Vec<(&String, &AssignmentMember)> = group.members.iter().collect();
        // Static members (Some) first by instance id, then dynamic members by member id (the
        // map's order, kept by the stable sort).
        order.sort_by(
            |(a, _), (b, _)| match (instance_ids.get(*a), instance_ids.get(*b)) {
                (Some(x), Some(y)) => x.cmp(y),
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (None, None) => std::cmp::Ordering::Equal,
            },
        );

        let mut topics: Vec<TopicRanges> = Vec::new();
        let mut topic_index: HashMap<Uuid, usize> = HashMap::new();
        if is_homogeneous(group) {
            let Some((first_id, first)) = order.first() else {
                return Ok(empty_assignment(group));
            };
            for &id in &first.subscription.subscribed_topic_ids {
                let count = partition_count(RANGE_ASSIGNOR_NAME, describer, first_id, id)?;
                topic_index.insert(id, topics.len());
                topics.push(TopicRanges::new(id, count, order.len()));
            }
        } else {
            for (member_id, member) in &order {
                for &id in &member.subscription.subscribed_topic_ids {
                    let t = match topic_index.get(&id) {
                        Some(&t) => t,
                        None => {
                            let count =
                                partition_count(RANGE_ASSIGNOR_NAME, describer, member_id, id)?;
                            topic_index.insert(id, topics.len());
                            topics.push(TopicRanges::new(id, count, 0));
                            topics.len() - 1
                        }
                    };
                    if let Some(topic) = topics.get_mut(t) {
                        topic.subscribers += 1;
                    }
                }
            }
        }

        topics.iter_mut().for_each(TopicRanges::start);

        let mut out = BTreeMap::new();
        for (member_id, member) in order {
            let mut assignment = TopicPartitions::new();
            for id in &member.subscription.subscribed_topic_ids {
                let Some(topic) = topic_index.get(id).and_then(|&t| topics.get_mut(t)) else {
                    continue;
                };
                let range = topic.next_range();
                let partitions: BTreeSet<i32> =
                    range.filter_map(|p| i32::try_from(p).ok()).collect();
                if !partitions.is_empty() {
                    assignment.insert(topic.id, partitions);
                }
            }
            out.insert(member_id.clone(), assignment);
        }
        Ok(out)
    }
}
