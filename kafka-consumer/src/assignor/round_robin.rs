//! The `roundrobin` assignor.

use std::collections::{BTreeMap, BTreeSet};

use super::{
    Assignor, ConsumerError, GroupAssignment, MemberSubscription, RebalanceProtocol,
    TopicPartition, check_input, empty_assignment, members_in_java_order,
};

/// All partitions of all subscribed topics, in (topic, partition) order, are dealt to the
/// members in turn (Java's member order, static members first); a member not subscribed to a
/// partition's topic is skipped. Balanced (counts differ by at most one) when every member
/// has the same subscription.
///
/// Two members `C0`, `C1`, topics `t0` and `t1` with 3 partitions each:
/// `C0: t0-0 t0-2 t1-1`, `C1: t0-1 t1-0 t1-2`.
#[derive(Debug, Clone, Copy, Default)]
pub struct RoundRobinAssignor;

impl Assignor for RoundRobinAssignor {
    fn name(&self) -> &'static str {
        "roundrobin"
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
        let ordered = members_in_java_order(members);
        let subscriptions: Vec<BTreeSet<&str>> = ordered
            .iter()
            .map(|m| m.topics.iter().map(String::as_str).collect())
            .collect();
        // Topic names are restricted to [a-zA-Z0-9._-], where byte order is Java's order.
        let topics: BTreeSet<&str> = subscriptions.iter().flatten().copied().collect();

        let mut next = 0;
        for topic in topics {
            let Some(&count) = partitions_per_topic.get(topic) else {
                continue;
            };
            for p in 0..count.max(0) {
                // Some member subscribes to `topic` (that is where it came from), so this
                // finds one within one turn.
                let Some(turn) = (0..ordered.len())
                    .map(|k| (next + k) % ordered.len())
                    .find(|&i| subscriptions[i].contains(topic))
                else {
                    break;
                };
                if let Some(list) = assignment.get_mut(&ordered[turn].member_id) {
                    list.push(TopicPartition::new(topic, p));
                }
                next = (turn + 1) % ordered.len();
            }
        }
        Ok(assignment)
    }
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
        let got = RoundRobinAssignor
            .assign(&counts(&[("t0", 3), ("t1", 3)]), &members)
            .unwrap();
        assert_eq!(got["C0"], tps(&[("t0", 0), ("t0", 2), ("t1", 1)]));
        assert_eq!(got["C1"], tps(&[("t0", 1), ("t1", 0), ("t1", 2)]));
    }

    #[test]
    fn javas_documented_example_with_different_subscriptions() {
        let members = [
            MemberSubscription::new("C0", &["t0"]),
            MemberSubscription::new("C1", &["t0", "t1"]),
            MemberSubscription::new("C2", &["t0", "t1", "t2"]),
        ];
        let got = RoundRobinAssignor
            .assign(&counts(&[("t0", 1), ("t1", 2), ("t2", 3)]), &members)
            .unwrap();
        assert_eq!(got["C0"], tps(&[("t0", 0)]));
        assert_eq!(got["C1"], tps(&[("t1", 0)]));
        assert_eq!(
            got["C2"],
            tps(&[("t1", 1), ("t2", 0), ("t2", 1), ("t2", 2)])
        );
    }

    #[test]
    fn more_members_than_partitions() {
        let members: Vec<_> = (0..3)
            .map(|i| MemberSubscription::new(format!("C{i}"), &["a", "b"]))
            .collect();
        let got = RoundRobinAssignor
            .assign(&counts(&[("a", 1), ("b", 1)]), &members)
            .unwrap();
        assert_eq!(got["C0"], tps(&[("a", 0)]));
        assert_eq!(got["C1"], tps(&[("b", 0)]));
        assert!(got["C2"].is_empty());
    }

    #[test]
    fn static_members_keep_their_slots_across_member_id_changes() {
        // Java's example: instance ids I0..I2 keep the same partitions whatever member ids
        // the coordinator hands out after a bounce.
        let run = |ids: [&str; 3]| {
            let members: Vec<MemberSubscription> = ids
                .iter()
                .enumerate()
                .map(|(i, id)| MemberSubscription {
                    group_instance_id: Some(format!("I{i}")),
                    ..MemberSubscription::new(*id, &["t0", "t1"])
                })
                .collect();
            let got = RoundRobinAssignor
                .assign(&counts(&[("t0", 3), ("t1", 3)]), &members)
                .unwrap();
            ids.iter().map(|id| got[*id].clone()).collect::<Vec<_>>()
        };
        let before = run(["C0", "C1", "C2"]);
        assert_eq!(before[0], tps(&[("t0", 0), ("t1", 0)]));
        assert_eq!(before[1], tps(&[("t0", 1), ("t1", 1)]));
        assert_eq!(before[2], tps(&[("t0", 2), ("t1", 2)]));
        assert_eq!(run(["C5", "C3", "C4"]), before);
    }

    #[test]
    fn unknown_topics_are_skipped() {
        let members = [MemberSubscription::new("C0", &["gone", "t"])];
        let got = RoundRobinAssignor
            .assign(&counts(&[("t", 2)]), &members)
            .unwrap();
        assert_eq!(got["C0"], tps(&[("t", 0), ("t", 1)]));
    }
}
