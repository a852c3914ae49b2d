#![allow(clippy::unwrap_used)]
//! Seeded randomized scenarios for the sticky assignors: groups that change over several
//! rebalances (members join and leave, subscriptions change, topics grow or disappear), and
//! after every rebalance the invariants:
//! - every partition of every subscribed, existing topic is assigned exactly once, only to a
//!   subscriber, and every member has an entry;
//! - balance: counts differ by at most one when subscriptions are equal; otherwise no
//!   partition could move to a subscriber with at least two fewer;
//! - stickiness: with equal subscriptions, after members leave the survivors keep everything
//!   they had, and after members join everyone keeps as much as the new quota allows;
//! - cooperative-sticky: no partition goes to a new owner while another member still owns it,
//!   and the follow-up rebalance completes a balanced assignment without revoking anything.

use std::collections::{BTreeMap, BTreeSet};

use kafka_consumer::assignor::{
    Assignor, CooperativeStickyAssignor, GroupAssignment, MemberSubscription, StickyAssignor,
    TopicPartition, validate_cooperative_assignment,
};

/// Scenarios per test.
const SCENARIOS: u64 = 250;
/// Group changes per scenario.
const ROUNDS: usize = 5;

/// splitmix64: tiny, seedable, good enough to pick scenarios.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

const TOPICS: [&str; 5] = ["alpha", "beta", "gamma", "delta", "epsilon"];

/// A group: topic partition counts, and each member's subscription and current ownership.
#[derive(Debug, Clone)]
struct Group {
    topics: BTreeMap<String, i32>,
    members: BTreeMap<String, Member>,
    next_id: usize,
    generation: i32,
}

#[derive(Debug, Clone)]
struct Member {
    topics: Vec<String>,
    instance: Option<String>,
    owned: Vec<TopicPartition>,
    generation: i32,
}

impl Group {
    fn random(rng: &mut Rng, equal: bool) -> Self {
        let mut topics = BTreeMap::new();
        for t in TOPICS.iter().take(1 + rng.below(TOPICS.len())) {
            // Mostly non-empty; now and then a topic without partitions.
            let n = if rng.chance(10) {
                0
            } else {
                1 + rng.below(9) as i32
            };
            topics.insert((*t).to_owned(), n);
        }
        let mut g = Group {
            topics,
            members: BTreeMap::new(),
            next_id: 0,
            generation: 0,
        };
        let shared = g.random_subscription(rng);
        for _ in 0..1 + rng.below(6) {
            let subs = if equal {
                shared.clone()
            } else {
                g.random_subscription(rng)
            };
            g.add_member(rng, subs);
        }
        g
    }

    /// A non-empty subset of the topics, sometimes with a topic that does not exist.
    fn random_subscription(&self, rng: &mut Rng) -> Vec<String> {
        let names: Vec<&String> = self.topics.keys().collect();
        let mut subs: Vec<String> = names
            .iter()
            .filter(|_| rng.chance(60))
            .map(|t| (*t).clone())
            .collect();
        if subs.is_empty() {
            subs.push(names[rng.below(names.len())].clone());
        }
        if rng.chance(10) {
            subs.push("missing".to_owned());
        }
        subs
    }

    fn add_member(&mut self, rng: &mut Rng, topics: Vec<String>) {
        // Ids whose order differs from join order; some members are static.
        let id = format!("consumer-{:04x}-{}", rng.next() & 0xffff, self.next_id);
        let instance = rng.chance(25).then(|| format!("instance-{}", self.next_id));
        self.next_id += 1;
        self.members.insert(
            id,
            Member {
                topics,
                instance,
                owned: Vec::new(),
                generation: -1,
            },
        );
    }

    fn equal_subscriptions(&self) -> bool {
        let sets: Vec<BTreeSet<&String>> = self
            .members
            .values()
            .map(|m| m.topics.iter().collect())
            .collect();
        sets.windows(2).all(|w| w[0] == w[1])
    }

    /// What `sticky` members send: ownership in user data.
    fn eager_subscriptions(&self) -> Vec<MemberSubscription> {
        self.members
            .iter()
            .map(|(id, m)| MemberSubscription {
                member_id: id.clone(),
                group_instance_id: m.instance.clone(),
                topics: m.topics.clone(),
                user_data: StickyAssignor.subscription_user_data(&m.topics, &m.owned, m.generation),
                ..MemberSubscription::default()
            })
            .collect()
    }

    /// What `cooperative-sticky` members send: owned partitions and generation.
    fn cooperative_subscriptions(&self) -> Vec<MemberSubscription> {
        self.members
            .iter()
            .map(|(id, m)| MemberSubscription {
                member_id: id.clone(),
                group_instance_id: m.instance.clone(),
                topics: m.topics.clone(),
                user_data: CooperativeStickyAssignor.subscription_user_data(
                    &m.topics,
                    &m.owned,
                    m.generation,
                ),
                owned_partitions: m.owned.clone(),
                generation_id: (m.generation >= 0).then_some(m.generation),
                rack_id: None,
            })
            .collect()
    }

    /// Every member takes its new assignment in a new generation.
    fn apply(&mut self, assignment: &GroupAssignment) {
        self.generation += 1;
        for (id, m) in &mut self.members {
            m.owned = assignment[id].clone();
            m.generation = self.generation;
        }
    }

    /// One random change to the group. Returns what kind of change it was.
    fn change(&mut self, rng: &mut Rng, keep_equal: bool) -> Change {
        let ids: Vec<String> = self.members.keys().cloned().collect();
        match rng.below(5) {
            0 if ids.len() > 1 => {
                let gone = ids[rng.below(ids.len())].clone();
                self.members.remove(&gone);
                Change::Leave
            }
            0 | 1 => {
                let subs = if keep_equal {
                    self.members
                        .values()
                        .next()
                        .map(|m| m.topics.clone())
                        .unwrap_or_else(|| self.random_subscription(rng))
                } else {
                    self.random_subscription(rng)
                };
                self.add_member(rng, subs);
                Change::Join
            }
            2 => {
                let t = TOPICS[rng.below(TOPICS.len())];
                *self.topics.entry(t.to_owned()).or_insert(0) += 1 + rng.below(3) as i32;
                Change::Other
            }
            3 if self.topics.len() > 1 => {
                let names: Vec<String> = self.topics.keys().cloned().collect();
                self.topics.remove(&names[rng.below(names.len())]);
                Change::Other
            }
            _ => {
                if keep_equal {
                    let subs = self.random_subscription(rng);
                    for m in self.members.values_mut() {
                        m.topics = subs.clone();
                    }
                } else {
                    let id = ids[rng.below(ids.len())].clone();
                    let subs = self.random_subscription(rng);
                    if let Some(m) = self.members.get_mut(&id) {
                        m.topics = subs;
                    }
                }
                Change::Other
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Change {
    Join,
    Leave,
    Other,
}

/// All partitions that must be assigned: existing, non-empty, subscribed topics.
fn expected_partitions(g: &Group) -> BTreeSet<TopicPartition> {
    let subscribed: BTreeSet<&String> = g.members.values().flat_map(|m| &m.topics).collect();
    g.topics
        .iter()
        .filter(|(t, _)| subscribed.contains(t))
        .flat_map(|(t, &n)| (0..n).map(move |p| TopicPartition::new(t.clone(), p)))
        .collect()
}

/// Valid (each partition at most once, only to subscribers, known members only) and, when
/// `complete`, everything assigned.
fn check_valid(g: &Group, a: &GroupAssignment, complete: bool, ctx: &str) {
    assert_eq!(
        a.keys().collect::<Vec<_>>(),
        g.members.keys().collect::<Vec<_>>(),
        "{ctx}: members"
    );
    let mut seen = BTreeSet::new();
    for (id, list) in a {
        let m = &g.members[id];
        for tp in list {
            assert!(seen.insert(tp.clone()), "{ctx}: {tp} assigned twice: {a:?}");
            assert!(
                m.topics.iter().any(|t| **t == *tp.topic),
                "{ctx}: {tp} given to {id}, not a subscriber"
            );
        }
    }
    let want = expected_partitions(g);
    assert!(seen.is_subset(&want), "{ctx}: unknown partitions assigned");
    if complete {
        assert_eq!(seen, want, "{ctx}: not everything assigned: {a:?}");
    }
}

fn check_balanced(g: &Group, a: &GroupAssignment, ctx: &str) {
    let count = |id: &String| a[id].len();
    if g.equal_subscriptions() {
        let min = a.values().map(Vec::len).min().unwrap_or(0);
        let max = a.values().map(Vec::len).max().unwrap_or(0);
        assert!(max <= min + 1, "{ctx}: unbalanced {min}..{max}: {a:?}");
        return;
    }
    let holder: BTreeMap<&TopicPartition, &String> = a
        .iter()
        .flat_map(|(id, list)| list.iter().map(move |tp| (tp, id)))
        .collect();
    for (id, m) in &g.members {
        for (tp, other) in &holder {
            if m.topics.iter().any(|t| **t == *tp.topic) && count(id) + 1 < count(other) {
                panic!(
                    "{ctx}: {tp} could move from {other} ({}) to {id} ({}): {a:?}",
                    count(other),
                    count(id)
                );
            }
        }
    }
}

/// After a leave with equal subscriptions, survivors keep all they had; after a join, each
/// keeps at least as much of it as the new minimum quota.
fn check_sticky(before: &Group, after: &Group, a: &GroupAssignment, change: Change, ctx: &str) {
    if !after.equal_subscriptions() || change == Change::Other {
        return;
    }
    let total = expected_partitions(after).len();
    let min_quota = total / after.members.len().max(1);
    for (id, m) in &after.members {
        let Some(old) = before.members.get(id) else {
            continue;
        };
        let kept = old.owned.iter().filter(|tp| a[id].contains(tp)).count();
        let want = match change {
            Change::Leave => old.owned.len(),
            _ => old.owned.len().min(min_quota),
        };
        assert!(
            kept >= want,
            "{ctx}: {id} kept {kept} of {:?}, expected {want}: {a:?}",
            m.owned
        );
    }
}

fn eager_scenarios(equal: bool) -> usize {
    let mut checks = 0;
    for seed in 0..SCENARIOS {
        let mut rng = Rng(seed * 7919 + u64::from(equal));
        let mut g = Group::random(&mut rng, equal);
        let mut change = Change::Other;
        let mut before = g.clone();
        for round in 0..ROUNDS {
            let ctx = format!("sticky seed {seed} round {round} ({change:?})");
            let a = StickyAssignor
                .assign(&g.topics, &g.eager_subscriptions())
                .unwrap_or_else(|e| panic!("{ctx}: {e}"));
            check_valid(&g, &a, true, &ctx);
            check_balanced(&g, &a, &ctx);
            check_sticky(&before, &g, &a, change, &ctx);
            checks += 1;
            g.apply(&a);
            before = g.clone();
            change = g.change(&mut rng, equal);
        }
    }
    checks
}

#[test]
fn sticky_equal_subscriptions() {
    assert_eq!(eager_scenarios(true), (SCENARIOS as usize) * ROUNDS);
}

#[test]
fn sticky_different_subscriptions() {
    assert_eq!(eager_scenarios(false), (SCENARIOS as usize) * ROUNDS);
}

/// Rebalances until nobody has anything to revoke; checks the cooperative rule each round.
/// Returns the number of rounds it took.
fn cooperative_rebalance(g: &mut Group, ctx: &str) -> usize {
    for round in 1..=6 {
        let ctx = format!("{ctx} pass {round}");
        let members = g.cooperative_subscriptions();
        let a = CooperativeStickyAssignor
            .assign(&g.topics, &members)
            .unwrap_or_else(|e| panic!("{ctx}: {e}"));
        check_valid(g, &a, false, &ctx);
        validate_cooperative_assignment(&members, &a).unwrap_or_else(|e| panic!("{ctx}: {e}"));
        for (id, list) in &a {
            for tp in list {
                for (other, m) in &g.members {
                    assert!(
                        other == id || !m.owned.contains(tp),
                        "{ctx}: {tp} given to {id} while {other} still owns it"
                    );
                }
            }
        }
        let revoked = g
            .members
            .iter()
            .any(|(id, m)| m.owned.iter().any(|tp| !a[id].contains(tp)));
        g.apply(&a);
        if !revoked {
            check_valid(g, &a, true, &ctx);
            check_balanced(g, &a, &ctx);
            return round;
        }
    }
    panic!("{ctx}: still revoking after 6 rebalances");
}

fn cooperative_scenarios(equal: bool) -> BTreeMap<usize, usize> {
    let mut rounds_needed = BTreeMap::new();
    for seed in 0..SCENARIOS {
        let mut rng = Rng(seed * 104_729 + 17 + u64::from(equal));
        let mut g = Group::random(&mut rng, equal);
        for round in 0..ROUNDS {
            let ctx = format!("cooperative seed {seed} round {round}");
            let n = cooperative_rebalance(&mut g, &ctx);
            *rounds_needed.entry(n).or_insert(0) += 1;
            if equal {
                // One revoking round at most, then the follow-up completes it.
                assert!(n <= 2, "{ctx}: took {n} rebalances");
            }
            g.change(&mut rng, equal);
        }
    }
    rounds_needed
}

#[test]
fn cooperative_equal_subscriptions() {
    let rounds = cooperative_scenarios(true);
    // Some changes must have needed the second round, or the test proves nothing.
    assert!(rounds.get(&2).copied().unwrap_or(0) > 0, "{rounds:?}");
}

#[test]
fn cooperative_different_subscriptions() {
    let rounds = cooperative_scenarios(false);
    assert!(rounds.get(&2).copied().unwrap_or(0) > 0, "{rounds:?}");
}

#[test]
fn cooperative_join_moves_nothing_directly() {
    // One member owns everything; three join. Round 1 only takes partitions away from it.
    let topics = BTreeMap::from([("t".to_owned(), 8)]);
    let all: Vec<TopicPartition> = (0..8).map(|p| TopicPartition::new("t", p)).collect();
    let mut members = vec![MemberSubscription {
        owned_partitions: all.clone(),
        generation_id: Some(3),
        ..MemberSubscription::new("a", &["t"])
    }];
    for id in ["b", "c", "d"] {
        members.push(MemberSubscription::new(id, &["t"]));
    }
    let round1 = CooperativeStickyAssignor.assign(&topics, &members).unwrap();
    assert_eq!(round1["a"].len(), 2);
    assert!(["b", "c", "d"].iter().all(|id| round1[*id].is_empty()));
    for m in &mut members {
        m.owned_partitions = round1[&m.member_id].clone();
        m.generation_id = Some(4);
    }
    let round2 = CooperativeStickyAssignor.assign(&topics, &members).unwrap();
    assert_eq!(round2["a"], round1["a"]);
    assert!(round2.values().all(|l| l.len() == 2), "{round2:?}");
}
