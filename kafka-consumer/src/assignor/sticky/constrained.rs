//! The sticky algorithm when every member subscribes to the same topics (Java's
//! `ConstrainedAssignmentBuilder`), without rack awareness.
//!
//! With `T` partitions and `N` members, everyone ends with `min = T / N` or `max = ceil(T / N)`
//! partitions, exactly `T % N` of them with `max`:
//! 1. Each member (by member id) keeps what it owns, up to its quota: all of it if that is under
//!    `min`; `max` of it if it has at least `max` and members with `max` are still wanted; else
//!    `min` of it. It keeps the lowest partition numbers first (Java sorts owned partitions by
//!    partition, then topic). The rest is left for others.
//! 2. The remaining partitions, in (topic, partition) order, go round robin to the members under
//!    `min`, and once they are all at `min`, one each to members at `min` until `T % N` members
//!    have `max`.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use crate::assignor::{ConsumerError, TopicPartition};

/// `owned[i]` is member `i`'s (conflict-free, existing) partitions; members are indexed in
/// member id order. Returns each member's assignment.
pub(super) fn assign(
    assignor: &'static str,
    topics: &BTreeMap<&str, i32>,
    owned: Vec<Vec<TopicPartition>>,
) -> Result<Vec<Vec<TopicPartition>>, ConsumerError> {
    let n = owned.len();
    if n == 0 {
        return Ok(Vec::new());
    }
    let total: usize = topics
        .values()
        .map(|&c| usize::try_from(c).unwrap_or(0))
        .sum();
    let min_quota = total / n;
    let max_quota = total.div_ceil(n);
    let expected_over_min = total % n;
    let mut over_min = 0;

    let mut assignment: Vec<Vec<TopicPartition>> = vec![Vec::new(); n];
    let mut assigned: BTreeSet<TopicPartition> = BTreeSet::new();
    // Members that can still take partitions: under `min`, and exactly at `min` (each of which
    // may take one more while fewer than `expected_over_min` members are over `min`).
    let mut under_min: Vec<usize> = Vec::new();
    let mut at_min: VecDeque<usize> = VecDeque::new();

    for (i, mut mine) in owned.into_iter().enumerate() {
        mine.sort_by(|a, b| {
            a.partition
                .cmp(&b.partition)
                .then_with(|| a.topic.cmp(&b.topic))
        });
        let keep = if mine.len() < min_quota {
            under_min.push(i);
            mine.len()
        } else if mine.len() >= max_quota && over_min < expected_over_min {
            over_min += 1;
            if over_min == expected_over_min {
                at_min.clear();
            }
            max_quota
        } else {
            if over_min < expected_over_min {
                at_min.push_back(i);
            }
            min_quota
        };
        mine.truncate(keep);
        assigned.extend(mine.iter().cloned());
        assignment[i] = mine;
    }

    let unassigned = topics.iter().flat_map(|(topic, &count)| {
        (0..count)
            .map(|p| TopicPartition::new(*topic, p))
            .filter(|tp| !assigned.contains(tp))
    });

    // Round robin over `under_min` (a cursor; members leave it when they reach `min`), then
    // over `at_min`.
    let mut cursor = 0;
    for tp in unassigned {
        let (member, from_under) = if cursor < under_min.len() {
            cursor += 1;
            (under_min[cursor - 1], true)
        } else if let Some(&first) = under_min.first() {
            cursor = 1;
            (first, true)
        } else if let Some(m) = at_min.pop_front() {
            (m, false)
        } else {
            return Err(ConsumerError::AssignorBug {
                assignor,
                detail: format!("no member left to take {tp}"),
            });
        };
        assignment[member].push(tp);
        let count = assignment[member].len();
        if count == min_quota {
            if from_under {
                cursor -= 1;
                under_min.remove(cursor);
            }
            at_min.push_back(member);
        } else if count == max_quota {
            over_min += 1;
        }
    }

    // Members still under `min` mean the quotas did not add up.
    if let Some(&i) = under_min
        .iter()
        .find(|&&i| assignment[i].len() != min_quota || over_min != expected_over_min)
    {
        return Err(ConsumerError::AssignorBug {
            assignor,
            detail: format!(
                "member #{i} ends with {} partitions, quota {min_quota}..={max_quota}",
                assignment[i].len()
            ),
        });
    }
    Ok(assignment)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(t: &str, p: i32) -> TopicPartition {
        TopicPartition::new(t, p)
    }

    #[test]
    fn fresh_group_deals_round_robin() {
        let topics = BTreeMap::from([("a", 3), ("b", 2)]);
        let got = assign("test", &topics, vec![Vec::new(); 2]).unwrap();
        assert_eq!(got[0], [tp("a", 0), tp("a", 2), tp("b", 1)]);
        assert_eq!(got[1], [tp("a", 1), tp("b", 0)]);
    }

    #[test]
    fn keeps_owned_up_to_quota_lowest_partition_numbers_first() {
        let topics = BTreeMap::from([("a", 2), ("b", 2)]);
        let owned = vec![
            vec![tp("a", 0), tp("a", 1), tp("b", 0), tp("b", 1)],
            Vec::new(),
        ];
        let got = assign("test", &topics, owned).unwrap();
        // Sorted by (partition, topic): a-0, b-0, a-1, b-1; the first two stay.
        assert_eq!(got[0], [tp("a", 0), tp("b", 0)]);
        assert_eq!(got[1], [tp("a", 1), tp("b", 1)]);
    }

    #[test]
    fn one_member_with_the_extra_partition() {
        let topics = BTreeMap::from([("t", 5)]);
        let owned = vec![
            vec![tp("t", 0), tp("t", 1), tp("t", 2)],
            vec![tp("t", 3), tp("t", 4)],
            Vec::new(),
        ];
        let got = assign("test", &topics, owned).unwrap();
        assert_eq!(got[0], [tp("t", 0), tp("t", 1)]);
        assert_eq!(got[1], [tp("t", 3), tp("t", 4)]);
        assert_eq!(got[2], [tp("t", 2)]);
    }
}
