//! The `range` assignor.

use std::collections::{BTreeMap, BTreeSet};

use super::{
    Assignor, ConsumerError, GroupAssignment, MemberSubscription, RebalanceProtocol,
    TopicPartition, check_input, empty_assignment, members_in_java_order,
};

/// Per topic: the partitions in numeric order are cut into contiguous ranges, one per member
/// subscribed to the topic (members in Java's order, static members first). With `n`
/// partitions and `c` members each gets `n / c`, and the first `n % c` one more.
///
/// Two members `C0`, `C1`, topics `t0` and `t1` with 3 partitions each:
/// `C0: t0-0 t0-1 t1-0 t1-1`, `C1: t0-2 t1-2`.
#[derive(Debug, Clone, Copy, Default)]
pub struct RangeAssignor;

impl Assignor for RangeAssignor {
    fn name(&self) -> &'static str {
        "range"
    }

    fn supported_protocols(&self) -> &[RebalanceProtocol] {
        &[RebalanceProtocol::Eager]
    }

    fn assign(
        &self,
        partitions_per_topic: &BTreeMap<String, i32>,
        members: &[MemberSubscription],
    ) -> Result<GroupAssignment, ConsumerError> {
        check_input(partitions_per_topic, members)?;
        let mut assignment = empty_assignment(members);

        // topic -> its subscribers, in Java's member order.
        let mut subscribers: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        for m in members_in_java_order(members) {
            let topics: BTreeSet<&str> = m.topics.iter().map(String::as_str).collect();
            for t in topics {
                subscribers.entry(t).or_default().push(&m.member_id);
            }
        }

        for (topic, consumers) in subscribers {
            let Some(&count) = partitions_per_topic.get(topic) else {
                continue;
            };
            let (Ok(n), c) = (usize::try_from(count), consumers.len()) else {
                continue;
            };
            if c == 0 {
                continue;
            }
            let (per_member, with_extra) = (n / c, n % c);
            for (i, member) in consumers.iter().enumerate() {
                let start = per_member * i + i.min(with_extra);
                let len = per_member + usize::from(i < with_extra);
                if let Some(list) = assignment.get_mut(*member) {
                    list.extend((start..start + len).map(|p| partition(topic, p)));
                }
            }
        }
        for list in assignment.values_mut() {
            list.sort();
        }
        Ok(assignment)
    }
}

/// Partition numbers come from an i32 count, so they fit.
fn partition(topic: &str, p: usize) -> TopicPartition {
    TopicPartition::new(topic, i32::try_from(p).unwrap_or(i32::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tps(list: &[(&str, i32)]) -> Vec<TopicPartition> {
        list.iter()
            .map(|(t, p)| TopicPartition::new(*t, *p))
            .collect()
    }

    fn counts(list: &[(&str, i32)]) -> BTreeMap<String, i32> {
        list.iter().map(|(t, n)| ((*t).to_owned(), *n)).collect()
    }

    #[test]
    fn javas_documented_example() {
        let members = [
            MemberSubscription::new("C0", &["t0", "t1"]),
            MemberSubscription::new("C1", &["t0", "t1"]),
        ];
        let got = RangeAssignor
            .assign(&counts(&[("t0", 3), ("t1", 3)]), &members)
            .unwrap();
        assert_eq!(
            got["C0"],
            tps(&[("t0", 0), ("t0", 1), ("t1", 0), ("t1", 1)])
        );
        assert_eq!(got["C1"], tps(&[("t0", 2), ("t1", 2)]));
    }

    #[test]
    fn different_subscriptions_split_each_topic_over_its_own_subscribers() {
        let members = [
            MemberSubscription::new("C0", &["t0"]),
            MemberSubscription::new("C1", &["t0", "t1"]),
            MemberSubscription::new("C2", &["t1"]),
        ];
        let got = RangeAssignor
            .assign(&counts(&[("t0", 3), ("t1", 2)]), &members)
            .unwrap();
        assert_eq!(got["C0"], tps(&[("t0", 0), ("t0", 1)]));
        assert_eq!(got["C1"], tps(&[("t0", 2), ("t1", 0)]));
        assert_eq!(got["C2"], tps(&[("t1", 1)]));
    }

    #[test]
    fn more_members_than_partitions() {
        let members: Vec<_> = (0..4)
            .map(|i| MemberSubscription::new(format!("C{i}"), &["t"]))
            .collect();
        let got = RangeAssignor
            .assign(&counts(&[("t", 2)]), &members)
            .unwrap();
        assert_eq!(got["C0"], tps(&[("t", 0)]));
        assert_eq!(got["C1"], tps(&[("t", 1)]));
        assert!(got["C2"].is_empty() && got["C3"].is_empty());
    }

    #[test]
    fn unknown_and_empty_topics_are_skipped_and_every_member_is_listed() {
        let members = [
            MemberSubscription::new("C0", &["gone", "empty"]),
            MemberSubscription::new("C1", &["t"]),
        ];
        let got = RangeAssignor
            .assign(&counts(&[("t", 1), ("empty", 0)]), &members)
            .unwrap();
        assert!(got["C0"].is_empty());
        assert_eq!(got["C1"], tps(&[("t", 0)]));
        assert!(RangeAssignor.assign(&counts(&[]), &[]).unwrap().is_empty());
    }

    #[test]
    fn static_members_come_first_ordered_by_instance_id() {
        // Java's example: after a rolling bounce member ids change but instance ids stay,
        // and so does the assignment.
        let with_instance = |member: &str, instance: &str| MemberSubscription {
            group_instance_id: Some(instance.to_owned()),
            ..MemberSubscription::new(member, &["t0", "t1"])
        };
        let members = [
            with_instance("C3", "I0"),
            with_instance("C2", "I1"),
            MemberSubscription::new("A-dynamic", &["t0", "t1"]),
        ];
        let got = RangeAssignor
            .assign(&counts(&[("t0", 4), ("t1", 4)]), &members)
            .unwrap();
        assert_eq!(
            got["C3"],
            tps(&[("t0", 0), ("t0", 1), ("t1", 0), ("t1", 1)])
        );
        assert_eq!(got["C2"], tps(&[("t0", 2), ("t1", 2)]));
        assert_eq!(got["A-dynamic"], tps(&[("t0", 3), ("t1", 3)]));
    }

    #[test]
    fn a_topic_listed_twice_counts_once() {
        let members = [
            MemberSubscription::new("C0", &["t", "t"]),
            MemberSubscription::new("C1", &["t"]),
        ];
        let got = RangeAssignor
            .assign(&counts(&[("t", 2)]), &members)
            .unwrap();
        assert_eq!(got["C0"], tps(&[("t", 0)]));
        assert_eq!(got["C1"], tps(&[("t", 1)]));
    }
}
