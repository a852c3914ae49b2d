//! The sticky algorithm when members subscribe to different topics (Java's
//! `GeneralAssignmentBuilder`), without rack awareness.
//!
//! 1. Every member keeps what it owns of topics it still subscribes to.
//! 2. Each unowned partition (topics with the fewest potential consumers first) goes to the
//!    member with the fewest partitions among those subscribed to its topic.
//! 3. While the assignment is not balanced (some partition could move to a subscriber with at
//!    least two fewer), partitions move: back to their previous owner (an older generation's)
//!    when that helps, else to the least loaded subscriber. Movements are tracked per topic so
//!    that a partition moving back along a pair that was just used undoes that move instead of
//!    adding another.
//! 4. If the group was not empty to begin with and all that moving did not lower the balance
//!    score (the sum of count differences over all member pairs), the assignment before step 3
//!    stands.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::assignor::TopicPartition;

/// Inputs, members indexed in member id order.
pub(super) struct Input<'a> {
    /// Topics that exist, with their partition counts.
    pub(super) topics: &'a BTreeMap<&'a str, i32>,
    /// Each member's subscription.
    pub(super) subscriptions: &'a [BTreeSet<&'a str>],
    /// Each member's owned partitions (existing topics, conflicts settled).
    pub(super) owned: Vec<Vec<TopicPartition>>,
    /// Partition -> its owner in an older generation.
    pub(super) previous: BTreeMap<TopicPartition, usize>,
}

pub(super) fn assign(input: &Input<'_>) -> Vec<Vec<TopicPartition>> {
    let mut b = Builder::new(input);
    b.balance(input);
    b.current
}

struct Builder<'a> {
    topics: &'a BTreeMap<&'a str, i32>,
    /// Topic -> members subscribed to it (member id order).
    consumers_of: BTreeMap<&'a str, Vec<usize>>,
    /// Member -> the existing topics it subscribes to.
    topics_of: Vec<Vec<&'a str>>,
    /// Member -> how many partitions it could have at most.
    max_size: Vec<usize>,
    current: Vec<Vec<TopicPartition>>,
    owner: HashMap<TopicPartition, usize>,
    /// Members taking part in balancing, ordered by (partition count, member).
    by_load: BTreeSet<(usize, usize)>,
    active: Vec<bool>,
    movements: Movements,
    /// Some member holds partitions of a topic it no longer subscribes to.
    revocation_required: bool,
}

impl<'a> Builder<'a> {
    fn new(input: &'a Input<'a>) -> Self {
        let n = input.subscriptions.len();
        let mut consumers_of: BTreeMap<&str, Vec<usize>> =
            input.topics.keys().map(|t| (*t, Vec::new())).collect();
        let mut topics_of = vec![Vec::new(); n];
        for (i, subscription) in input.subscriptions.iter().enumerate() {
            for &t in subscription {
                if let Some(list) = consumers_of.get_mut(t) {
                    list.push(i);
                    topics_of[i].push(t);
                }
            }
        }
        let max_size = topics_of
            .iter()
            .map(|ts| ts.iter().map(|t| count(input.topics, t)).sum())
            .collect();

        let mut revocation_required = false;
        let mut current = input.owned.clone();
        let mut owner = HashMap::new();
        for (i, list) in current.iter_mut().enumerate() {
            list.retain(|tp| {
                let keep = input.subscriptions[i].contains(&*tp.topic);
                revocation_required |= !keep;
                keep
            });
            for tp in list.iter() {
                owner.insert(tp.clone(), i);
            }
        }
        Self {
            topics: input.topics,
            consumers_of,
            topics_of,
            max_size,
            current,
            owner,
            by_load: BTreeSet::new(),
            active: vec![true; n],
            movements: Movements::default(),
            revocation_required,
        }
    }

    fn balance(&mut self, input: &Input<'_>) {
        // All partitions, topics with fewer potential consumers first, then by name.
        let mut sorted_topics: Vec<&str> = self.topics.keys().copied().collect();
        sorted_topics.sort_by_key(|t| (self.consumers_of.get(t).map_or(0, Vec::len), *t));
        let all: Vec<TopicPartition> = sorted_topics
            .iter()
            .flat_map(|t| (0..self.topics[t]).map(|p| TopicPartition::new(*t, p)))
            .collect();
        let unassigned: Vec<TopicPartition> = all
            .iter()
            .filter(|tp| !self.owner.contains_key(*tp))
            .cloned()
            .collect();

        self.by_load = (0..self.current.len())
            .map(|i| (self.current[i].len(), i))
            .collect();
        let initializing = self.by_load.last().is_none_or(|&(len, _)| len == 0);

        for tp in &unassigned {
            if let Some(m) = self.least_loaded_subscriber(&tp.topic) {
                self.place(tp.clone(), m);
            }
        }

        // Partitions of topics with a single potential consumer cannot move; nor can members
        // that have all they could get, all of such topics.
        let movable =
            |tp: &TopicPartition, b: &Self| b.consumers_of.get(&*tp.topic).map_or(0, Vec::len) >= 2;
        let all: Vec<TopicPartition> = all.into_iter().filter(|tp| movable(tp, self)).collect();
        let unassigned: Vec<TopicPartition> = unassigned
            .into_iter()
            .filter(|tp| movable(tp, self))
            .collect();
        for i in 0..self.current.len() {
            let can_move = self.current[i].len() < self.max_size[i]
                || self.current[i].iter().any(|tp| movable(tp, self));
            if !can_move {
                self.active[i] = false;
                self.by_load.remove(&(self.current[i].len(), i));
            }
        }

        let before = self.current.clone();
        let before_owner = self.owner.clone();
        if !self.revocation_required {
            self.reassign_while_unbalanced(&unassigned, &input.previous);
        }
        let moved = self.reassign_while_unbalanced(&all, &input.previous);
        if !initializing && moved && self.score(&self.current) >= self.score(&before) {
            self.current = before;
            self.owner = before_owner;
        }
    }

    /// Java's `performReassignments`: passes over `partitions` while one moves.
    fn reassign_while_unbalanced(
        &mut self,
        partitions: &[TopicPartition],
        previous: &BTreeMap<TopicPartition, usize>,
    ) -> bool {
        let mut moved = false;
        loop {
            let mut modified = false;
            for tp in partitions {
                if self.is_balanced() {
                    break;
                }
                let Some(&holder) = self.owner.get(tp) else {
                    continue;
                };
                let load = self.current[holder].len();
                let back_home = previous.get(tp).copied().filter(|&prev| {
                    prev != holder
                        && self.active.get(prev) == Some(&true)
                        && self.topics_of[prev].contains(&&*tp.topic)
                        && load > self.current[prev].len() + 1
                });
                if let Some(prev) = back_home {
                    self.reassign(tp, prev);
                    moved = true;
                    modified = true;
                    continue;
                }
                let lighter_exists = self.consumers_of.get(&*tp.topic).is_some_and(|cs| {
                    cs.iter()
                        .any(|&c| self.active[c] && load > self.current[c].len() + 1)
                });
                let to = if lighter_exists {
                    self.least_loaded_subscriber(&tp.topic)
                } else {
                    None
                };
                if let Some(to) = to {
                    self.reassign(tp, to);
                    moved = true;
                    modified = true;
                }
            }
            if !modified {
                return moved;
            }
        }
    }

    /// True when counts differ by at most one, or no member lacking partitions could take one
    /// from a member with at least two more.
    fn is_balanced(&self) -> bool {
        let (Some(&(min, _)), Some(&(max, _))) = (self.by_load.first(), self.by_load.last()) else {
            return true;
        };
        if min + 1 >= max {
            return true;
        }
        for &(load, member) in &self.by_load {
            if load == self.max_size[member] {
                continue;
            }
            for &topic in &self.topics_of[member] {
                for p in 0..count(self.topics, topic) {
                    let tp = TopicPartition::new(topic, i32::try_from(p).unwrap_or(i32::MAX));
                    let heavier = self.owner.get(&tp).is_some_and(|&other| {
                        other != member
                            && self.active[other]
                            && load + 1 < self.current[other].len()
                    });
                    if heavier {
                        return false;
                    }
                }
            }
        }
        true
    }

    /// The active member with the fewest partitions (then lowest id) subscribed to `topic`.
    fn least_loaded_subscriber(&self, topic: &str) -> Option<usize> {
        self.by_load
            .iter()
            .map(|&(_, m)| m)
            .find(|&m| self.topics_of[m].contains(&topic))
    }

    /// Gives an unowned partition to `member`.
    fn place(&mut self, tp: TopicPartition, member: usize) {
        self.by_load.remove(&(self.current[member].len(), member));
        self.current[member].push(tp.clone());
        self.owner.insert(tp, member);
        self.by_load.insert((self.current[member].len(), member));
    }

    /// Moves `tp` (or, to undo an earlier move, another partition of its topic) to `to`.
    fn reassign(&mut self, tp: &TopicPartition, to: usize) {
        let Some(&from) = self.owner.get(tp) else {
            return;
        };
        let tp = self.movements.partition_to_move(tp, from, to);
        let Some(&from) = self.owner.get(&tp) else {
            return;
        };
        if from == to {
            return;
        }
        self.by_load.remove(&(self.current[from].len(), from));
        self.by_load.remove(&(self.current[to].len(), to));
        self.movements.record(&tp, from, to);
        self.current[from].retain(|x| *x != tp);
        self.current[to].push(tp.clone());
        self.owner.insert(tp, to);
        self.by_load.insert((self.current[from].len(), from));
        self.by_load.insert((self.current[to].len(), to));
    }

    /// Sum of count differences over all pairs of active members (0 = perfectly even).
    fn score(&self, assignment: &[Vec<TopicPartition>]) -> usize {
        let sizes: Vec<usize> = assignment
            .iter()
            .enumerate()
            .filter(|(i, _)| self.active[*i])
            .map(|(_, l)| l.len())
            .collect();
        let mut score = 0;
        for (i, a) in sizes.iter().enumerate() {
            for b in &sizes[i + 1..] {
                score += a.abs_diff(*b);
            }
        }
        score
    }
}

fn count(topics: &BTreeMap<&str, i32>, topic: &str) -> usize {
    topics
        .get(topic)
        .map_or(0, |&n| usize::try_from(n).unwrap_or(0))
}

/// Partition moves made during balancing: partition -> (first source, current destination),
/// and per topic, per (source, destination) pair, the partitions that moved that way.
#[derive(Default)]
struct Movements {
    by_partition: HashMap<TopicPartition, (usize, usize)>,
    by_topic: BTreeMap<String, BTreeMap<(usize, usize), BTreeSet<TopicPartition>>>,
}

impl Movements {
    /// Moving a partition of a topic from `from` to `to` when another partition of that topic
    /// already moved from `to` to `from` (counting from where `tp` originally was): move that
    /// one back instead, so no pair of members swaps partitions of one topic.
    fn partition_to_move(&self, tp: &TopicPartition, from: usize, to: usize) -> TopicPartition {
        let Some(pairs) = self.by_topic.get(&*tp.topic) else {
            return tp.clone();
        };
        let from = self.by_partition.get(tp).map_or(from, |&(src, _)| src);
        pairs
            .get(&(to, from))
            .and_then(|set| set.first())
            .unwrap_or(tp)
            .clone()
    }

    fn record(&mut self, tp: &TopicPartition, from: usize, to: usize) {
        match self.remove(tp) {
            // Moved before: it now goes from its first source to `to`, or is simply back home.
            Some((src, _)) if src == to => {}
            Some((src, _)) => self.add(tp, src, to),
            None => self.add(tp, from, to),
        }
    }

    fn remove(&mut self, tp: &TopicPartition) -> Option<(usize, usize)> {
        let pair = self.by_partition.remove(tp)?;
        if let Some(pairs) = self.by_topic.get_mut(&*tp.topic) {
            if let Some(set) = pairs.get_mut(&pair) {
                set.remove(tp);
                if set.is_empty() {
                    pairs.remove(&pair);
                }
            }
            if pairs.is_empty() {
                self.by_topic.remove(&*tp.topic);
            }
        }
        Some(pair)
    }

    fn add(&mut self, tp: &TopicPartition, from: usize, to: usize) {
        self.by_partition.insert(tp.clone(), (from, to));
        self.by_topic
            .entry(tp.topic.to_string())
            .or_default()
            .entry((from, to))
            .or_default()
            .insert(tp.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(t: &str, p: i32) -> TopicPartition {
        TopicPartition::new(t, p)
    }

    fn run(
        topics: &[(&str, i32)],
        subs: &[&[&str]],
        owned: Vec<Vec<TopicPartition>>,
    ) -> Vec<Vec<TopicPartition>> {
        let topics: BTreeMap<&str, i32> = topics.iter().copied().collect();
        let subscriptions: Vec<BTreeSet<&str>> =
            subs.iter().map(|s| s.iter().copied().collect()).collect();
        let mut out = assign(&Input {
            topics: &topics,
            subscriptions: &subscriptions,
            owned,
            previous: BTreeMap::new(),
        });
        for l in &mut out {
            l.sort();
        }
        out
    }

    #[test]
    fn javas_uneven_subscription_example() {
        // Java's StickyAssignor doc: C0 subscribes t0, C1 t0 and t1, C2 t0, t1 and t2, with
        // 1, 2 and 3 partitions. Balanced: C0 t0-0; C1 t1-0 t1-1; C2 t2-0 t2-1 t2-2.
        let got = run(
            &[("t0", 1), ("t1", 2), ("t2", 3)],
            &[&["t0"], &["t0", "t1"], &["t0", "t1", "t2"]],
            vec![Vec::new(); 3],
        );
        assert_eq!(got[0], [tp("t0", 0)]);
        assert_eq!(got[1], [tp("t1", 0), tp("t1", 1)]);
        assert_eq!(got[2], [tp("t2", 0), tp("t2", 1), tp("t2", 2)]);
    }

    #[test]
    fn javas_example_after_c0_leaves() {
        // Continuing Java's example: C0 leaves; sticky keeps C1's and C2's partitions and
        // gives t0-0 to C1 (C1 3, C2 3) instead of reshuffling.
        let got = run(
            &[("t0", 1), ("t1", 2), ("t2", 3)],
            &[&["t0", "t1"], &["t0", "t1", "t2"]],
            vec![
                vec![tp("t1", 0), tp("t1", 1)],
                vec![tp("t2", 0), tp("t2", 1), tp("t2", 2)],
            ],
        );
        assert_eq!(got[0], [tp("t0", 0), tp("t1", 0), tp("t1", 1)]);
        assert_eq!(got[1], [tp("t2", 0), tp("t2", 1), tp("t2", 2)]);
    }

    #[test]
    fn unsubscribed_topics_are_taken_away() {
        let got = run(
            &[("a", 2), ("b", 2)],
            &[&["a"], &["a", "b"]],
            vec![vec![tp("a", 0), tp("b", 0)], vec![tp("a", 1), tp("b", 1)]],
        );
        // b-0 goes to the only other subscriber of b, then a-1 moves over for balance.
        assert_eq!(got[0], [tp("a", 0), tp("a", 1)]);
        assert_eq!(got[1], [tp("b", 0), tp("b", 1)]);
    }
}
