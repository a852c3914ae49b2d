//! Tests of the server-side assignors: the expected assignments of Kafka's own unit tests
//! (UniformHomogeneousAssignmentBuilderTest, UniformHeterogeneousAssignmentBuilderTest,
//! RangeAssignorTest, CommonAssignorTests in group-coordinator), restated; invariants on seeded
//! random groups; hostile inputs; one large group.
//!
//! Kafka walks some maps in hash order where ours walk ids in ascending order; where a Kafka
//! answer depends on the order it visited two topics in, the topic ids below are chosen so that
//! ascending order is the order Kafka's test visited them in (said at each such test).

#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use kafka_protocol::Uuid;

use super::{
    AssignmentMember, Assignor, AssignorError, GroupSpec, MemberSubscription, RangeAssignor,
    SubscriptionType, TopicDescriber, TopicPartitions, UniformAssignor, by_names,
    default_assignors,
};

// ---------------------------------------------------------------------------------------------
// Helpers

/// A topic id whose order among others is `n`'s.
fn tid(n: u8) -> Uuid {
    let mut b = [0u8; 16];
    b[0] = n;
    b[15] = 0x5a;
    Uuid(b)
}

#[derive(Debug, Clone, Default)]
struct Topics {
    partitions: BTreeMap<Uuid, i32>,
    racks: BTreeMap<(Uuid, i32), BTreeSet<String>>,
}

impl Topics {
    fn new(list: &[(Uuid, i32)]) -> Self {
        Self {
            partitions: list.iter().copied().collect(),
            racks: BTreeMap::new(),
        }
    }

    /// Every partition's replicas on two of three racks, varying by partition.
    fn with_racks(mut self) -> Self {
        for (&t, &n) in &self.partitions {
            for p in 0..n {
                let racks = [p % 3, (p + 1) % 3]
                    .iter()
                    .map(|r| format!("rack{r}"))
                    .collect();
                self.racks.insert((t, p), racks);
            }
        }
        self
    }
}

impl TopicDescriber for Topics {
    fn partitions(&self, topic: Uuid) -> Option<i32> {
        self.partitions.get(&topic).copied()
    }

    fn racks(&self, topic: Uuid, partition: i32) -> BTreeSet<String> {
        self.racks
            .get(&(topic, partition))
            .cloned()
            .unwrap_or_default()
    }
}

fn tp(list: &[(Uuid, &[i32])]) -> TopicPartitions {
    list.iter()
        .filter(|(_, ps)| !ps.is_empty())
        .map(|(t, ps)| (*t, ps.iter().copied().collect()))
        .collect()
}

fn member(subs: &[Uuid], current: &[(Uuid, &[i32])]) -> AssignmentMember {
    AssignmentMember {
        subscription: MemberSubscription {
            rack_id: None,
            subscribed_topic_ids: subs.iter().copied().collect(),
        },
        current: tp(current),
    }
}

fn group(members: Vec<(&str, AssignmentMember)>) -> GroupSpec {
    GroupSpec::new(
        members
            .into_iter()
            .map(|(id, m)| (id.to_owned(), m))
            .collect(),
    )
}

/// A spec that says heterogeneous whatever the subscriptions (as Kafka's heterogeneous builder
/// tests force it).
fn hetero(members: Vec<(&str, AssignmentMember)>) -> GroupSpec {
    let mut g = group(members);
    g.subscription_type = SubscriptionType::Heterogeneous;
    g
}

type Expected<'a> = &'a [(&'a str, &'a [(Uuid, &'a [i32])])];

fn expected(list: Expected<'_>) -> BTreeMap<String, TopicPartitions> {
    list.iter().map(|(m, a)| ((*m).to_owned(), tp(a))).collect()
}

fn uniform(g: &GroupSpec, t: &Topics) -> BTreeMap<String, TopicPartitions> {
    UniformAssignor.assign(g, t).unwrap()
}

fn range(g: &GroupSpec, t: &Topics) -> BTreeMap<String, TopicPartitions> {
    RangeAssignor.assign(g, t).unwrap()
}

/// `g` with every member's current assignment replaced by `out`'s.
fn with_current(g: &GroupSpec, out: &BTreeMap<String, TopicPartitions>) -> GroupSpec {
    let mut g = g.clone();
    for (id, m) in &mut g.members {
        m.current = out.get(id).cloned().unwrap_or_default();
    }
    g
}

fn size(a: &TopicPartitions) -> usize {
    a.values().map(BTreeSet::len).sum()
}

/// Each member's current partitions that it may keep, as the assignors count them: topic
/// subscribed and known, partition in range, not claimed by an earlier member id.
fn valid_current(g: &GroupSpec, t: &Topics) -> BTreeMap<String, BTreeSet<(Uuid, i32)>> {
    let mut claimed = BTreeSet::new();
    let mut out = BTreeMap::new();
    for (id, m) in &g.members {
        let mut mine = BTreeSet::new();
        for (topic, ps) in &m.current {
            let Some(&n) = t.partitions.get(topic) else {
                continue;
            };
            if !m.subscription.subscribed_topic_ids.contains(topic) {
                continue;
            }
            for &p in ps {
                if (0..n).contains(&p) && claimed.insert((*topic, p)) {
                    mine.insert((*topic, p));
                }
            }
        }
        out.insert(id.clone(), mine);
    }
    out
}

/// Partitions a member validly held and no longer has.
fn moves(g: &GroupSpec, t: &Topics, out: &BTreeMap<String, TopicPartitions>) -> usize {
    valid_current(g, t)
        .iter()
        .map(|(id, held)| {
            let now = out.get(id).cloned().unwrap_or_default();
            held.iter()
                .filter(|(topic, p)| !now.get(topic).is_some_and(|s| s.contains(p)))
                .count()
        })
        .sum()
}

/// The fewest moves a balanced assignment of `members` (all subscribing to the same `total`
/// partitions, holding `held` of them each) needs: each keeps at most its quota, and the
/// `total % n` larger quotas go to members holding more than the smaller one where possible.
fn fewest_moves(held: &[usize], total: usize) -> usize {
    if held.is_empty() {
        return 0;
    }
    let min = total / held.len();
    let extra = total % held.len();
    let over: Vec<usize> = held
        .iter()
        .filter(|&&c| c > min)
        .map(|&c| c - min)
        .collect();
    over.iter().sum::<usize>() - over.len().min(extra)
}

/// Validity: every member present; each partition of a topic someone subscribes to assigned
/// exactly once, to a subscriber; nothing else; no empty sets.
fn check_valid(g: &GroupSpec, t: &Topics, out: &BTreeMap<String, TopicPartitions>) {
    assert_eq!(
        out.keys().collect::<Vec<_>>(),
        g.members.keys().collect::<Vec<_>>(),
        "every member and only members"
    );
    let mut seen: BTreeMap<(Uuid, i32), &str> = BTreeMap::new();
    for (id, a) in out {
        let subs = &g.members[id].subscription.subscribed_topic_ids;
        for (topic, ps) in a {
            assert!(!ps.is_empty(), "{id}: empty set for {topic}");
            assert!(subs.contains(topic), "{id} got {topic} without subscribing");
            let n = t.partitions[topic];
            for &p in ps {
                assert!((0..n).contains(&p), "{id}: {topic}-{p} out of range");
                if let Some(other) = seen.insert((*topic, p), id) {
                    panic!("{topic}-{p} assigned to {other} and {id}");
                }
            }
        }
    }
    let subscribed: BTreeSet<Uuid> = g
        .members
        .values()
        .flat_map(|m| m.subscription.subscribed_topic_ids.iter().copied())
        .collect();
    for topic in subscribed {
        for p in 0..t.partitions[&topic] {
            assert!(seen.contains_key(&(topic, p)), "{topic}-{p} unassigned");
        }
    }
}

fn check_homogeneous_balance(out: &BTreeMap<String, TopicPartitions>) {
    let sizes: Vec<usize> = out.values().map(size).collect();
    let (min, max) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
    assert!(max - min <= 1, "unbalanced: {sizes:?}");
}

/// Kafka's balance rule for heterogeneous groups: no partition can move from its owner to
/// another subscriber of its topic that has two or more fewer partitions.
fn check_topic_balance(g: &GroupSpec, out: &BTreeMap<String, TopicPartitions>) {
    let sizes: BTreeMap<&String, usize> = out.iter().map(|(id, a)| (id, size(a))).collect();
    for (owner, a) in out {
        for topic in a.keys() {
            for (other, m) in &g.members {
                if m.subscription.subscribed_topic_ids.contains(topic) {
                    assert!(
                        sizes[owner] <= sizes[other] + 1,
                        "{owner} ({}) could give {topic} to {other} ({})",
                        sizes[owner],
                        sizes[other]
                    );
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// By name

#[test]
fn default_assignors_are_uniform_then_range() {
    let names: Vec<&str> = default_assignors().iter().map(|a| a.name()).collect();
    assert_eq!(names, ["uniform", "range"]);
}

#[test]
fn by_names_takes_names_and_kafka_class_names_in_order() {
    let list = |names: &[&str]| -> Vec<String> { names.iter().map(|s| (*s).to_owned()).collect() };
    let names = |r: Vec<std::sync::Arc<dyn Assignor>>| -> Vec<&'static str> {
        r.iter().map(|a| a.name()).collect()
    };
    assert_eq!(
        names(by_names(&list(&["range", "uniform"])).unwrap()),
        ["range", "uniform"]
    );
    assert_eq!(names(by_names(&list(&[" uniform "])).unwrap()), ["uniform"]);
    assert_eq!(
        names(
            by_names(&list(&[
                "org.apache.kafka.coordinator.group.assignor.UniformAssignor",
                "org.apache.kafka.coordinator.group.assignor.RangeAssignor",
            ]))
            .unwrap()
        ),
        ["uniform", "range"]
    );
    let err = by_names(&list(&["uniform", "sticky"])).unwrap_err();
    assert!(err.to_string().contains("\"sticky\""), "{err}");
    assert!(by_names(&[]).is_err());
    let err = by_names(&list(&["range", "range"])).unwrap_err();
    assert!(err.to_string().contains("twice"), "{err}");
    // Names are case-sensitive, as Kafka's are.
    assert!(by_names(&list(&["Uniform"])).is_err());
}

mod known;
mod properties;
