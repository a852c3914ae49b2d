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

// ---------------------------------------------------------------------------------------------
// Uniform, homogeneous: Kafka's UniformHomogeneousAssignmentBuilderTest (4.1+)

#[test]
fn uniform_homogeneous_first_assignment_two_members_two_topics() {
    // Kafka's HashSet visited topic3 before topic1.
    let (t3, t1) = (tid(1), tid(2));
    let topics = Topics::new(&[(t1, 3), (t3, 2)]);
    let g = group(vec![
        ("A", member(&[t1, t3], &[])),
        ("B", member(&[t1, t3], &[])),
    ]);
    assert_eq!(g.subscription_type, SubscriptionType::Homogeneous);
    // 5 partitions: A holds nothing, so it leaves the extra slot to B, the last member.
    let out = uniform(&g, &topics);
    assert_eq!(
        out,
        expected(&[("A", &[(t3, &[0, 1])]), ("B", &[(t1, &[0, 1, 2])])])
    );
}

#[test]
fn uniform_homogeneous_more_members_than_partitions() {
    let t3 = tid(3);
    let topics = Topics::new(&[(t3, 2)]);
    let g = group(vec![
        ("A", member(&[t3], &[])),
        ("B", member(&[t3], &[])),
        ("C", member(&[t3], &[])),
    ]);
    let out = uniform(&g, &topics);
    assert_eq!(
        out,
        expected(&[("A", &[]), ("B", &[(t3, &[0])]), ("C", &[(t3, &[1])])])
    );
}

#[test]
fn uniform_homogeneous_unbalanced_previous_assignment() {
    let (t1, t2) = (tid(1), tid(2));
    let topics = Topics::new(&[(t1, 3), (t2, 3)]);
    let g = group(vec![
        ("A", member(&[t1, t2], &[(t1, &[0, 1]), (t2, &[0, 1])])),
        ("B", member(&[t1, t2], &[(t1, &[2]), (t2, &[2])])),
    ]);
    let out = uniform(&g, &topics);
    assert_eq!(
        out,
        expected(&[
            ("A", &[(t1, &[0, 1]), (t2, &[0])]),
            ("B", &[(t1, &[2]), (t2, &[1, 2])]),
        ])
    );
    assert_eq!(moves(&g, &topics, &out), 1);
}

#[test]
fn uniform_homogeneous_partitions_added() {
    // topic1 3 -> 6 partitions, topic2 3 -> 5; Kafka's HashSet visited topic2 first.
    let (t2, t1) = (tid(1), tid(2));
    let topics = Topics::new(&[(t1, 6), (t2, 5)]);
    let g = group(vec![
        ("A", member(&[t1, t2], &[(t1, &[0, 2]), (t2, &[0])])),
        ("B", member(&[t1, t2], &[(t1, &[1]), (t2, &[1, 2])])),
    ]);
    let out = uniform(&g, &topics);
    assert_eq!(
        out,
        expected(&[
            ("A", &[(t1, &[0, 2]), (t2, &[0, 3, 4])]),
            ("B", &[(t1, &[1, 3, 4, 5]), (t2, &[1, 2])]),
        ])
    );
    assert_eq!(moves(&g, &topics, &out), 0);
}

#[test]
fn uniform_homogeneous_member_joins() {
    let (t1, t2) = (tid(1), tid(2));
    let topics = Topics::new(&[(t1, 3), (t2, 3)]);
    let g = group(vec![
        ("A", member(&[t1, t2], &[(t1, &[0, 2]), (t2, &[0])])),
        ("B", member(&[t1, t2], &[(t1, &[1]), (t2, &[1, 2])])),
        ("C", member(&[t1, t2], &[])),
    ]);
    let out = uniform(&g, &topics);
    assert_eq!(
        out,
        expected(&[
            ("A", &[(t1, &[0, 2])]),
            ("B", &[(t1, &[1]), (t2, &[1])]),
            ("C", &[(t2, &[0, 2])]),
        ])
    );
    assert_eq!(moves(&g, &topics, &out), 2);
}

#[test]
fn uniform_homogeneous_member_leaves() {
    // C (which held topic1-2 and topic2-2) left; Kafka's HashSet visited topic2 first.
    let (t2, t1) = (tid(1), tid(2));
    let topics = Topics::new(&[(t1, 3), (t2, 3)]);
    let g = group(vec![
        ("A", member(&[t1, t2], &[(t1, &[0]), (t2, &[0])])),
        ("B", member(&[t1, t2], &[(t1, &[1]), (t2, &[1])])),
    ]);
    let out = uniform(&g, &topics);
    assert_eq!(
        out,
        expected(&[
            ("A", &[(t1, &[0]), (t2, &[0, 2])]),
            ("B", &[(t1, &[1, 2]), (t2, &[1])]),
        ])
    );
    assert_eq!(moves(&g, &topics, &out), 0);
}

#[test]
fn uniform_homogeneous_subscription_removed() {
    let (t1, t2) = (tid(1), tid(2));
    let topics = Topics::new(&[(t1, 2), (t2, 2)]);
    let g = group(vec![
        ("A", member(&[t2], &[(t1, &[0]), (t2, &[0])])),
        ("B", member(&[t2], &[(t1, &[1]), (t2, &[1])])),
    ]);
    let out = uniform(&g, &topics);
    assert_eq!(out, expected(&[("A", &[(t2, &[0])]), ("B", &[(t2, &[1])])]));
}

#[test]
fn uniform_homogeneous_topic_deleted() {
    // topic2 was deleted: the subscriptions no longer resolve to it and the describer no
    // longer knows it; its partitions disappear from the assignment without an error.
    let (t1, t2) = (tid(1), tid(2));
    let topics = Topics::new(&[(t1, 4)]);
    let g = group(vec![
        ("A", member(&[t1], &[(t1, &[0, 1]), (t2, &[0, 1])])),
        ("B", member(&[t1], &[(t1, &[2, 3]), (t2, &[2])])),
    ]);
    let out = uniform(&g, &topics);
    assert_eq!(
        out,
        expected(&[("A", &[(t1, &[0, 1])]), ("B", &[(t1, &[2, 3])])])
    );
}

#[test]
fn uniform_homogeneous_balanced_assignment_is_kept_whatever_the_member_order() {
    // Kafka's CommonAssignorTests.testReassignmentStickiness: 14 partitions on 3 members; the
    // two members holding 5 come last in member order. Before Kafka 4.1 the extra slots went to
    // the first members in order and this assignment was reshuffled.
    let (t1, t2, t3) = (tid(1), tid(2), tid(3));
    let topics = Topics::new(&[(t1, 2), (t2, 5), (t3, 7)]);
    let subs = [t1, t2, t3];
    let g = group(vec![
        ("A", member(&subs, &[(t2, &[0, 1]), (t3, &[0, 1])])),
        (
            "B",
            member(&subs, &[(t1, &[0]), (t2, &[2, 3]), (t3, &[2, 3])]),
        ),
        (
            "C",
            member(&subs, &[(t1, &[1]), (t2, &[4]), (t3, &[4, 5, 6])]),
        ),
    ]);
    let out = uniform(&g, &topics);
    for (id, m) in &g.members {
        assert_eq!(out[id], m.current, "{id}");
    }
}

#[test]
fn uniform_homogeneous_nonexistent_topic_is_an_error() {
    let (t1, t2) = (tid(1), tid(2));
    let topics = Topics::new(&[(t1, 3)]);
    let g = group(vec![("A", member(&[t2], &[]))]);
    assert_eq!(
        UniformAssignor.assign(&g, &topics),
        Err(AssignorError::UnknownTopic {
            member: "A".to_owned(),
            topic: t2,
        })
    );
}

// ---------------------------------------------------------------------------------------------
// Uniform, heterogeneous: Kafka's UniformHeterogeneousAssignmentBuilderTest

#[test]
fn uniform_heterogeneous_two_members_without_subscriptions() {
    let t1 = tid(1);
    let topics = Topics::new(&[(t1, 3)]);
    let g = hetero(vec![("A", member(&[], &[])), ("B", member(&[], &[]))]);
    assert_eq!(uniform(&g, &topics), expected(&[("A", &[]), ("B", &[])]));
}

#[test]
fn uniform_heterogeneous_nonexistent_topics_are_an_error() {
    let (t1, t2, t3) = (tid(1), tid(2), tid(3));
    let topics = Topics::new(&[(t1, 3)]);
    let g = hetero(vec![("A", member(&[t3], &[])), ("B", member(&[t2], &[]))]);
    assert_eq!(
        UniformAssignor.assign(&g, &topics),
        Err(AssignorError::UnknownTopic {
            member: "A".to_owned(),
            topic: t3,
        })
    );
}

#[test]
fn uniform_heterogeneous_first_assignment() {
    let (t1, t3) = (tid(1), tid(3));
    let topics = Topics::new(&[(t1, 3), (t3, 6)]);
    let g = group(vec![
        ("A", member(&[t1, t3], &[])),
        ("B", member(&[t3], &[])),
    ]);
    assert_eq!(g.subscription_type, SubscriptionType::Heterogeneous);
    assert_eq!(
        uniform(&g, &topics),
        expected(&[
            ("A", &[(t1, &[0, 1, 2]), (t3, &[4])]),
            ("B", &[(t3, &[0, 1, 2, 3, 5])]),
        ])
    );
}

#[test]
fn uniform_heterogeneous_more_members_than_partitions() {
    let (t1, t3) = (tid(1), tid(3));
    let topics = Topics::new(&[(t3, 1), (t1, 2)]);
    let g = group(vec![
        ("A", member(&[t3], &[])),
        ("B", member(&[t3], &[])),
        ("C", member(&[t1], &[])),
    ]);
    assert_eq!(
        uniform(&g, &topics),
        expected(&[("A", &[(t3, &[0])]), ("B", &[]), ("C", &[(t1, &[0, 1])])])
    );
}

#[test]
fn uniform_heterogeneous_unbalanced_previous_assignment() {
    let (t1, t2, t3) = (tid(1), tid(2), tid(3));
    let topics = Topics::new(&[(t1, 6), (t2, 4), (t3, 4)]);
    let g = group(vec![
        ("A", member(&[t1], &[(t1, &[0, 1, 2])])),
        ("B", member(&[t1, t2], &[(t1, &[3]), (t2, &[0])])),
        (
            "C",
            member(
                &[t1, t2, t3],
                &[(t1, &[4, 5]), (t2, &[1, 2, 3]), (t3, &[0, 1, 2, 3])],
            ),
        ),
    ]);
    let out = uniform(&g, &topics);
    assert_eq!(
        out,
        expected(&[
            ("A", &[(t1, &[0, 1, 2, 5])]),
            ("B", &[(t1, &[3]), (t2, &[0, 1, 2, 3])]),
            ("C", &[(t1, &[4]), (t3, &[0, 1, 2, 3])]),
        ])
    );
    assert_eq!(moves(&g, &topics, &out), 4);
}

#[test]
fn uniform_heterogeneous_partitions_added() {
    // topic1 4 -> 6, topic2 3 -> 5, topic3 2 -> 3 partitions.
    let (t1, t2, t3, t4) = (tid(1), tid(2), tid(3), tid(4));
    let topics = Topics::new(&[(t1, 6), (t2, 5), (t3, 3), (t4, 3)]);
    let g = group(vec![
        (
            "A",
            member(&[t1, t3], &[(t1, &[0, 1, 2, 3]), (t3, &[0, 1])]),
        ),
        (
            "B",
            member(&[t1, t2, t3, t4], &[(t2, &[0, 1, 2]), (t4, &[0, 1, 2])]),
        ),
    ]);
    let out = uniform(&g, &topics);
    assert_eq!(
        out,
        expected(&[
            ("A", &[(t1, &[0, 1, 2, 3, 4, 5]), (t3, &[0, 1, 2])]),
            ("B", &[(t2, &[0, 1, 2, 3, 4]), (t4, &[0, 1, 2])]),
        ])
    );
    assert_eq!(moves(&g, &topics, &out), 0);
}

#[test]
fn uniform_heterogeneous_member_joins_and_partitions_added() {
    // topic1 and topic2 had 3 partitions each; A unsubscribed from topic2.
    let (t1, t2) = (tid(1), tid(2));
    let topics = Topics::new(&[(t1, 6), (t2, 7)]);
    let g = group(vec![
        ("A", member(&[t1], &[(t1, &[0, 2]), (t2, &[0])])),
        ("B", member(&[t1, t2], &[(t1, &[1]), (t2, &[1, 2])])),
        ("C", member(&[t1, t2], &[])),
    ]);
    assert_eq!(
        uniform(&g, &topics),
        expected(&[
            ("A", &[(t1, &[0, 2, 3, 4, 5])]),
            ("B", &[(t1, &[1]), (t2, &[1, 2, 6])]),
            ("C", &[(t2, &[0, 3, 4, 5])]),
        ])
    );
}

#[test]
fn uniform_heterogeneous_member_leaves() {
    let (t1, t2, t3) = (tid(1), tid(2), tid(3));
    let topics = Topics::new(&[(t1, 3), (t2, 8), (t3, 3)]);
    let g = group(vec![
        ("A", member(&[t1, t3], &[(t1, &[0, 1, 2]), (t3, &[0, 1])])),
        ("B", member(&[t2], &[(t2, &[3, 4, 5, 6])])),
    ]);
    assert_eq!(
        uniform(&g, &topics),
        expected(&[
            ("A", &[(t1, &[0, 1, 2]), (t3, &[0, 1, 2])]),
            ("B", &[(t2, &[0, 1, 2, 3, 4, 5, 6, 7])]),
        ])
    );
}

#[test]
fn uniform_heterogeneous_subscription_removed() {
    let (t1, t2) = (tid(1), tid(2));
    let topics = Topics::new(&[(t1, 3), (t2, 5)]);
    let g = group(vec![
        ("A", member(&[t1], &[(t1, &[0, 2]), (t2, &[1, 3])])),
        ("B", member(&[t1, t2], &[(t1, &[1]), (t2, &[0, 2, 4])])),
    ]);
    assert_eq!(
        uniform(&g, &topics),
        expected(&[("A", &[(t1, &[0, 1, 2])]), ("B", &[(t2, &[0, 1, 2, 3, 4])])])
    );
}

#[test]
fn uniform_heterogeneous_topic_partitions_run_out_before_balance() {
    // Kafka's edge case: the least loaded subscriber starts with none of the topic's
    // partitions and the topic runs out of partitions to move.
    let (t1, t2, t3) = (tid(1), tid(2), tid(3));
    let topics = Topics::new(&[(t1, 2), (t2, 2), (t3, 2)]);
    let g = hetero(vec![
        (
            "A",
            member(
                &[t1, t2, t3],
                &[(t1, &[0, 1]), (t2, &[0, 1]), (t3, &[0, 1])],
            ),
        ),
        ("B", member(&[t1, t2, t3], &[])),
    ]);
    assert_eq!(
        uniform(&g, &topics),
        expected(&[
            ("A", &[(t2, &[0]), (t3, &[0, 1])]),
            ("B", &[(t1, &[0, 1]), (t2, &[1])]),
        ])
    );
}

#[test]
fn uniform_heterogeneous_member_without_subscriptions() {
    let t1 = tid(1);
    let topics = Topics::new(&[(t1, 3)]);
    let g = group(vec![("A", member(&[t1], &[])), ("B", member(&[], &[]))]);
    assert_eq!(
        uniform(&g, &topics),
        expected(&[("A", &[(t1, &[0, 1, 2])]), ("B", &[])])
    );
}

#[test]
fn uniform_heterogeneous_topic_deleted() {
    let (t1, t2, t3) = (tid(1), tid(2), tid(3));
    let topics = Topics::new(&[(t1, 2), (t3, 2)]);
    let g = group(vec![
        ("A", member(&[t1], &[(t1, &[0, 1]), (t2, &[0])])),
        ("B", member(&[t1, t3], &[(t2, &[1]), (t3, &[0, 1])])),
    ]);
    assert_eq!(
        uniform(&g, &topics),
        expected(&[("A", &[(t1, &[0, 1])]), ("B", &[(t3, &[0, 1])])])
    );
}

#[test]
fn uniform_heterogeneous_topic_ties_follow_javas_uuid_order() {
    // Equal partitions per subscriber and subscriber counts: Kafka breaks the tie with
    // Uuid.compareTo, which compares signed halves, so an id with its top bit set comes first.
    let mut high = [0u8; 16];
    high[0] = 0x80;
    let (t_high, t_low, t_c) = (Uuid(high), tid(1), tid(2));
    let topics = Topics::new(&[(t_high, 1), (t_low, 1), (t_c, 1)]);
    let g = group(vec![
        ("A", member(&[t_high, t_low], &[])),
        ("B", member(&[t_high, t_low], &[])),
        ("C", member(&[t_c], &[])),
    ]);
    assert_eq!(
        uniform(&g, &topics),
        expected(&[
            ("A", &[(t_high, &[0])]),
            ("B", &[(t_low, &[0])]),
            ("C", &[(t_c, &[0])])
        ])
    );
}

#[test]
fn uniform_ignores_racks_as_kafka_does() {
    let (t1, t2) = (tid(1), tid(2));
    let plain = Topics::new(&[(t1, 7), (t2, 5)]);
    let racked = plain.clone().with_racks();
    for shape in [&[t1, t2][..], &[t1][..]] {
        let mut g = group(vec![
            ("A", member(&[t1, t2], &[(t1, &[0, 1, 2])])),
            ("B", member(shape, &[(t2, &[4])])),
            ("C", member(&[t1, t2], &[])),
        ]);
        let without = uniform(&g, &plain);
        for (i, m) in g.members.values_mut().enumerate() {
            m.subscription.rack_id = Some(format!("rack{i}"));
        }
        assert_eq!(uniform(&g, &racked), without);
    }
}

// ---------------------------------------------------------------------------------------------
// Range: Kafka's RangeAssignorTest (3.9+, recomputed ranges)

#[test]
fn range_one_member_no_topic() {
    let t1 = tid(1);
    let topics = Topics::new(&[(t1, 3)]);
    let g = group(vec![("A", member(&[], &[]))]);
    assert_eq!(range(&g, &topics), expected(&[("A", &[])]));
}

#[test]
fn range_nonexistent_topic_is_an_error() {
    let (t1, t2) = (tid(1), tid(2));
    let topics = Topics::new(&[(t1, 3)]);
    let g = group(vec![("A", member(&[t2], &[]))]);
    assert_eq!(
        RangeAssignor.assign(&g, &topics),
        Err(AssignorError::UnknownTopic {
            member: "A".to_owned(),
            topic: t2,
        })
    );
    let g = group(vec![
        ("A", member(&[t1], &[])),
        ("B", member(&[t1, t2], &[])),
    ]);
    assert_eq!(
        RangeAssignor.assign(&g, &topics),
        Err(AssignorError::UnknownTopic {
            member: "B".to_owned(),
            topic: t2,
        })
    );
}

#[test]
fn range_first_assignment_same_subscriptions() {
    let (t1, t3) = (tid(1), tid(3));
    let topics = Topics::new(&[(t1, 3), (t3, 2)]);
    let g = group(vec![
        ("A", member(&[t1, t3], &[])),
        ("B", member(&[t1, t3], &[])),
    ]);
    assert_eq!(
        range(&g, &topics),
        expected(&[
            ("A", &[(t1, &[0, 1]), (t3, &[0])]),
            ("B", &[(t1, &[2]), (t3, &[1])]),
        ])
    );
}

#[test]
fn range_first_assignment_different_subscriptions() {
    let (t1, t2, t3) = (tid(1), tid(2), tid(3));
    let topics = Topics::new(&[(t1, 3), (t2, 3), (t3, 2)]);
    let g = group(vec![
        ("A", member(&[t1, t2], &[])),
        ("B", member(&[t3], &[])),
        ("C", member(&[t2, t3], &[])),
    ]);
    assert_eq!(
        range(&g, &topics),
        expected(&[
            ("A", &[(t1, &[0, 1, 2]), (t2, &[0, 1])]),
            ("B", &[(t3, &[0])]),
            ("C", &[(t2, &[2]), (t3, &[1])]),
        ])
    );
}

#[test]
fn range_more_members_than_partitions() {
    let (t1, t3) = (tid(1), tid(3));
    let topics = Topics::new(&[(t1, 3), (t3, 2)]);
    let subs = [t1, t3];
    let g = group(vec![
        ("A", member(&subs, &[])),
        ("B", member(&subs, &[])),
        ("C", member(&subs, &[])),
    ]);
    assert_eq!(
        range(&g, &topics),
        expected(&[
            ("A", &[(t1, &[0]), (t3, &[0])]),
            ("B", &[(t1, &[1]), (t3, &[1])]),
            ("C", &[(t1, &[2])]),
        ])
    );
}

#[test]
fn range_static_member_rejoining_with_a_new_member_id_keeps_its_ranges() {
    let t1 = tid(1);
    let topics = Topics::new(&[(t1, 3)]);
    let ids = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(m, i)| ((*m).to_owned(), (*i).to_owned()))
            .collect()
    };
    let g = group(vec![("A", member(&[t1], &[])), ("B", member(&[t1], &[]))]);
    let first = RangeAssignor
        .assign_with_instance_ids(&g, &topics, &ids(&[("A", "instanceA"), ("B", "instanceB")]))
        .unwrap();
    assert_eq!(
        first,
        expected(&[("A", &[(t1, &[0, 1])]), ("B", &[(t1, &[2])])])
    );
    // A rejoins as "memberA1", which sorts after "B": the instance id keeps it first.
    let g = group(vec![
        ("memberA1", member(&[t1], &[])),
        ("B", member(&[t1], &[])),
    ]);
    let again = RangeAssignor
        .assign_with_instance_ids(
            &g,
            &topics,
            &ids(&[("memberA1", "instanceA"), ("B", "instanceB")]),
        )
        .unwrap();
    assert_eq!(again["memberA1"], first["A"]);
    assert_eq!(again["B"], first["B"]);
}

#[test]
fn range_static_members_come_before_dynamic_ones() {
    let t1 = tid(1);
    let topics = Topics::new(&[(t1, 5)]);
    let ids = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(m, i)| ((*m).to_owned(), (*i).to_owned()))
            .collect()
    };
    let g = group(vec![
        ("A", member(&[t1], &[])),
        ("B", member(&[t1], &[])),
        ("C", member(&[t1], &[])),
    ]);
    let first = RangeAssignor
        .assign_with_instance_ids(&g, &topics, &ids(&[("A", "instanceA"), ("C", "instanceC")]))
        .unwrap();
    // Order A, C (static), then B (dynamic).
    assert_eq!(
        first,
        expected(&[
            ("A", &[(t1, &[0, 1])]),
            ("B", &[(t1, &[4])]),
            ("C", &[(t1, &[2, 3])])
        ])
    );
    let g = group(vec![
        ("memberA1", member(&[t1], &[])),
        ("B", member(&[t1], &[])),
        ("C", member(&[t1], &[])),
    ]);
    let again = RangeAssignor
        .assign_with_instance_ids(
            &g,
            &topics,
            &ids(&[("memberA1", "instanceA"), ("C", "instanceC")]),
        )
        .unwrap();
    assert_eq!(again["memberA1"], first["A"]);
    assert_eq!(again["B"], first["B"]);
    assert_eq!(again["C"], first["C"]);
}

#[test]
fn range_member_joins_when_members_outnumber_partitions() {
    let (t1, t2) = (tid(1), tid(2));
    let topics = Topics::new(&[(t1, 2), (t2, 2)]);
    let subs = [t1, t2];
    let g = group(vec![
        ("A", member(&subs, &[(t1, &[0]), (t2, &[0])])),
        ("B", member(&subs, &[(t1, &[1]), (t2, &[1])])),
        ("C", member(&subs, &[])),
    ]);
    assert_eq!(
        range(&g, &topics),
        expected(&[
            ("A", &[(t1, &[0]), (t2, &[0])]),
            ("B", &[(t1, &[1]), (t2, &[1])]),
            ("C", &[]),
        ])
    );
}

#[test]
fn range_partition_added() {
    let (t1, t2) = (tid(1), tid(2));
    let topics = Topics::new(&[(t1, 4), (t2, 4)]);
    let subs = [t1, t2];
    let g = group(vec![
        ("A", member(&subs, &[(t1, &[0, 1]), (t2, &[0, 1])])),
        ("B", member(&subs, &[(t1, &[2]), (t2, &[2])])),
    ]);
    assert_eq!(
        range(&g, &topics),
        expected(&[
            ("A", &[(t1, &[0, 1]), (t2, &[0, 1])]),
            ("B", &[(t1, &[2, 3]), (t2, &[2, 3])]),
        ])
    );
}

#[test]
fn range_member_joins_and_ranges_shift() {
    // Not sticky since Kafka 3.9: A gives up partition 1, which B takes while giving 2 to C.
    let (t1, t2) = (tid(1), tid(2));
    let topics = Topics::new(&[(t1, 3), (t2, 3)]);
    let subs = [t1, t2];
    let g = group(vec![
        ("A", member(&subs, &[(t1, &[0, 1]), (t2, &[0, 1])])),
        ("B", member(&subs, &[(t1, &[2]), (t2, &[2])])),
        ("C", member(&subs, &[])),
    ]);
    assert_eq!(
        range(&g, &topics),
        expected(&[
            ("A", &[(t1, &[0]), (t2, &[0])]),
            ("B", &[(t1, &[1]), (t2, &[1])]),
            ("C", &[(t1, &[2]), (t2, &[2])]),
        ])
    );
}

#[test]
fn range_member_joins_with_a_partition_added() {
    let (t1, t2) = (tid(1), tid(2));
    let topics = Topics::new(&[(t1, 4), (t2, 3)]);
    let g = group(vec![
        ("A", member(&[t1, t2], &[(t1, &[0, 1]), (t2, &[0, 1])])),
        ("B", member(&[t1, t2], &[(t1, &[2]), (t2, &[2])])),
        ("C", member(&[t1], &[])),
    ]);
    assert_eq!(
        range(&g, &topics),
        expected(&[
            ("A", &[(t1, &[0, 1]), (t2, &[0, 1])]),
            ("B", &[(t1, &[2]), (t2, &[2])]),
            ("C", &[(t1, &[3])]),
        ])
    );
}

#[test]
fn range_member_leaves() {
    let (t1, t2) = (tid(1), tid(2));
    let topics = Topics::new(&[(t1, 3), (t2, 3)]);
    let g = group(vec![("B", member(&[t1, t2], &[(t1, &[2]), (t2, &[2])]))]);
    assert_eq!(
        range(&g, &topics),
        expected(&[("B", &[(t1, &[0, 1, 2]), (t2, &[0, 1, 2])])])
    );
}

#[test]
fn range_subscriptions_changed() {
    // Before: A -> t1, t2; B -> t2; C -> t2, t3. After: A -> t1; B -> t1, t2, t3; C -> t2.
    let (t1, t2, t3) = (tid(1), tid(2), tid(3));
    let topics = Topics::new(&[(t1, 3), (t2, 3), (t3, 2)]);
    let g = group(vec![
        ("A", member(&[t1], &[(t1, &[0, 1, 2]), (t2, &[0])])),
        ("B", member(&[t1, t2, t3], &[(t2, &[1])])),
        ("C", member(&[t2], &[(t2, &[2]), (t3, &[0, 1])])),
    ]);
    assert_eq!(
        range(&g, &topics),
        expected(&[
            ("A", &[(t1, &[0, 1])]),
            ("B", &[(t1, &[2]), (t2, &[0, 1]), (t3, &[0, 1])]),
            ("C", &[(t2, &[2])]),
        ])
    );
}

#[test]
fn range_topic_deleted() {
    let (t1, t2) = (tid(1), tid(2));
    let topics = Topics::new(&[(t1, 3)]);
    let g = group(vec![
        ("A", member(&[t1], &[(t1, &[0, 1]), (t2, &[0])])),
        ("B", member(&[t1], &[(t1, &[2]), (t2, &[1])])),
    ]);
    assert_eq!(
        range(&g, &topics),
        expected(&[("A", &[(t1, &[0, 1])]), ("B", &[(t1, &[2])])])
    );
}

#[test]
fn range_ignores_racks_and_current_assignments() {
    let (t1, t2) = (tid(1), tid(2));
    let plain = Topics::new(&[(t1, 7), (t2, 7)]);
    let racked = plain.clone().with_racks();
    let mut g = group(vec![
        ("A", member(&[t1, t2], &[(t1, &[5, 6])])),
        ("B", member(&[t1, t2], &[(t2, &[0, 1, 2])])),
        ("C", member(&[t1], &[])),
    ]);
    let out = range(&g, &plain);
    let cleared = with_current(&g, &BTreeMap::new());
    assert_eq!(range(&cleared, &plain), out);
    for (i, m) in g.members.values_mut().enumerate() {
        m.subscription.rack_id = Some(format!("rack{i}"));
    }
    assert_eq!(range(&g, &racked), out);
}

// ---------------------------------------------------------------------------------------------
// Hostile inputs

#[test]
fn no_members_give_an_empty_assignment() {
    let topics = Topics::new(&[(tid(1), 3)]);
    let g = group(vec![]);
    for a in default_assignors() {
        assert_eq!(
            a.assign(&g, &topics).unwrap(),
            BTreeMap::new(),
            "{}",
            a.name()
        );
    }
}

#[test]
fn empty_subscriptions_give_every_member_nothing() {
    let t1 = tid(1);
    let topics = Topics::new(&[(t1, 3)]);
    for g in [
        group(vec![
            ("A", member(&[], &[(t1, &[0])])),
            ("B", member(&[], &[])),
        ]),
        hetero(vec![
            ("A", member(&[], &[(t1, &[0])])),
            ("B", member(&[], &[])),
        ]),
    ] {
        for a in default_assignors() {
            assert_eq!(
                a.assign(&g, &topics).unwrap(),
                expected(&[("A", &[]), ("B", &[])]),
                "{}",
                a.name()
            );
        }
    }
}

#[test]
fn zero_partition_topics_are_assigned_nothing() {
    let (t1, t2) = (tid(1), tid(2));
    let topics = Topics::new(&[(t1, 0), (t2, 3)]);
    for g in [
        group(vec![
            ("A", member(&[t1, t2], &[])),
            ("B", member(&[t1, t2], &[])),
        ]),
        group(vec![
            ("A", member(&[t1], &[])),
            ("B", member(&[t1, t2], &[])),
        ]),
    ] {
        for a in default_assignors() {
            let out = a.assign(&g, &topics).unwrap();
            check_valid(&g, &topics, &out);
            assert!(out.values().all(|m| !m.contains_key(&t1)), "{}", a.name());
        }
    }
}

#[test]
fn a_negative_partition_count_is_an_error() {
    let t1 = tid(1);
    let topics = Topics::new(&[(t1, -4)]);
    for g in [
        group(vec![("A", member(&[t1], &[]))]),
        hetero(vec![("A", member(&[t1], &[]))]),
    ] {
        for a in default_assignors() {
            let err = a.assign(&g, &topics).unwrap_err();
            assert!(matches!(err, AssignorError::Failed { .. }), "{err}");
        }
    }
}

#[test]
fn garbage_current_assignments_are_ignored_and_duplicates_kept_once() {
    let (t1, t2, gone) = (tid(1), tid(2), tid(9));
    let topics = Topics::new(&[(t1, 4), (t2, 2)]);
    let current: &[(Uuid, &[i32])] = &[
        (t1, &[-1, 0, 1, 4, i32::MAX, i32::MIN]),
        (t2, &[0, 7]),
        (gone, &[0, 1]),
    ];
    for (a_subs, b_subs) in [(&[t1, t2][..], &[t1, t2][..]), (&[t1, t2][..], &[t1][..])] {
        let g = group(vec![
            ("A", member(a_subs, current)),
            ("B", member(b_subs, current)),
            ("C", member(&[t1, t2], &[])),
        ]);
        let out = uniform(&g, &topics);
        check_valid(&g, &topics, &out);
        if g.subscription_type == SubscriptionType::Homogeneous {
            // A, first in member order, holds the partitions both claim: its valid ones are
            // topic1-0, topic1-1 and topic2-0, and it keeps the first two (quota 2 of 6).
            assert_eq!(out["A"], tp(&[(t1, &[0, 1])]), "{out:?}");
        }
        assert_eq!(moves(&g, &topics, &out), 1, "{out:?}");
        let out = range(&g, &topics);
        check_valid(&g, &topics, &out);
    }
}

#[test]
fn a_spec_wrongly_saying_homogeneous_still_assigns_only_subscribers() {
    let (t1, t2) = (tid(1), tid(2));
    let topics = Topics::new(&[(t1, 4), (t2, 4)]);
    let mut g = group(vec![("A", member(&[t1], &[])), ("B", member(&[t2], &[]))]);
    g.subscription_type = SubscriptionType::Homogeneous;
    for a in default_assignors() {
        let out = a.assign(&g, &topics).unwrap();
        check_valid(&g, &topics, &out);
    }
}

// ---------------------------------------------------------------------------------------------
// Seeded random groups

/// splitmix64.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }

    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    fn uuid(&mut self) -> Uuid {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&self.next().to_be_bytes());
        b[8..].copy_from_slice(&self.next().to_be_bytes());
        Uuid(b)
    }

    fn subset(&mut self, of: &[Uuid], percent: usize) -> Vec<Uuid> {
        of.iter()
            .copied()
            .filter(|_| self.chance(percent))
            .collect()
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Shape {
    /// Every member subscribes to the same topics.
    Homogeneous,
    /// Random, overlapping subscriptions.
    Heterogeneous,
    /// Members in clusters, each cluster subscribing to its own topics (the problem splits into
    /// homogeneous ones, whose fewest moves are known).
    Clustered,
}

/// A random group: a first generation assigned by `assignor` from nothing, then members leave
/// and join, subscriptions change, partitions are added, topics are deleted; the second
/// generation carries the first's assignment (with some garbage) as current.
fn random_case(rng: &mut Rng, shape: Shape, assignor: &dyn Assignor) -> (GroupSpec, Topics) {
    let topic_ids: Vec<Uuid> = (0..1 + rng.below(6)).map(|_| rng.uuid()).collect();
    let mut topics = Topics::default();
    for &t in &topic_ids {
        topics.partitions.insert(t, rng.below(13) as i32);
    }
    let clusters: Vec<Vec<Uuid>> = {
        let n = 1 + rng.below(topic_ids.len().min(3));
        let mut c = vec![Vec::new(); n];
        for (i, &t) in topic_ids.iter().enumerate() {
            c[if i < n { i } else { rng.below(n) }].push(t);
        }
        c
    };
    let common = rng.subset(&topic_ids, 60);
    let subscription = |rng: &mut Rng, cluster: usize| -> Vec<Uuid> {
        match shape {
            Shape::Homogeneous => common.clone(),
            Shape::Heterogeneous => rng.subset(&topic_ids, 50),
            Shape::Clustered => clusters[cluster % clusters.len()].clone(),
        }
    };
    let mut members = BTreeMap::new();
    for _ in 0..1 + rng.below(10) {
        let cluster = rng.below(clusters.len());
        let subs = subscription(rng, cluster);
        members.insert(
            format!("m{:04}-{cluster}", rng.below(10_000)),
            member(&subs, &[]),
        );
    }
    let first = GroupSpec::new(members.clone());
    let previous = assignor.assign(&first, &topics).unwrap();

    // The next generation.
    let mut members = with_current(&first, &previous).members;
    members.retain(|_, _| !rng.chance(20));
    for _ in 0..rng.below(4) {
        let cluster = rng.below(clusters.len());
        let subs = subscription(rng, cluster);
        members.insert(
            format!("m{:04}-{cluster}", rng.below(10_000)),
            member(&subs, &[]),
        );
    }
    if shape == Shape::Heterogeneous {
        for m in members.values_mut() {
            if rng.chance(20) {
                m.subscription.subscribed_topic_ids =
                    rng.subset(&topic_ids, 50).into_iter().collect();
            }
        }
    }
    for n in topics.partitions.values_mut() {
        if rng.chance(25) {
            *n += rng.below(5) as i32;
        }
    }
    if rng.chance(15) {
        // A topic deleted: the coordinator drops it from the resolved subscriptions.
        let gone = topic_ids[rng.below(topic_ids.len())];
        topics.partitions.remove(&gone);
        for m in members.values_mut() {
            m.subscription.subscribed_topic_ids.remove(&gone);
        }
    }
    if rng.chance(20) {
        // Garbage: out-of-range partitions, unknown topics, partitions claimed twice.
        let ids: Vec<String> = members.keys().cloned().collect();
        for id in ids {
            if rng.chance(50) {
                let t = if rng.chance(20) {
                    rng.uuid()
                } else {
                    topic_ids[rng.below(topic_ids.len())]
                };
                let p = rng.below(20) as i32 - 3;
                members
                    .get_mut(&id)
                    .unwrap()
                    .current
                    .entry(t)
                    .or_default()
                    .insert(p);
            }
        }
    }
    let mut g = GroupSpec::new(members);
    if shape == Shape::Homogeneous && rng.chance(10) {
        // Kafka's heterogeneous builder on identical subscriptions.
        g.subscription_type = SubscriptionType::Heterogeneous;
    }
    (g, topics)
}

#[test]
fn uniform_random_homogeneous_groups() {
    let mut rng = Rng(0x5eed_0001);
    for case in 0..300 {
        let (g, topics) = random_case(&mut rng, Shape::Homogeneous, &UniformAssignor);
        let out = uniform(&g, &topics);
        check_valid(&g, &topics, &out);
        assert_eq!(uniform(&g, &topics), out, "case {case}: deterministic");
        if g.subscription_type == SubscriptionType::Homogeneous {
            check_homogeneous_balance(&out);
            let held: Vec<usize> = valid_current(&g, &topics)
                .values()
                .map(BTreeSet::len)
                .collect();
            let total: usize = g
                .members
                .values()
                .next()
                .map(|m| {
                    m.subscription
                        .subscribed_topic_ids
                        .iter()
                        .map(|t| topics.partitions[t] as usize)
                        .sum()
                })
                .unwrap_or(0);
            assert_eq!(
                moves(&g, &topics, &out),
                fewest_moves(&held, total),
                "case {case}"
            );
        } else {
            check_topic_balance(&g, &out);
        }
        // A balanced assignment is kept as it is.
        assert_eq!(
            uniform(&with_current(&g, &out), &topics),
            out,
            "case {case}: stable"
        );
    }
}

#[test]
fn uniform_random_heterogeneous_groups() {
    let mut rng = Rng(0x5eed_0002);
    for case in 0..300 {
        let (g, topics) = random_case(&mut rng, Shape::Heterogeneous, &UniformAssignor);
        let out = uniform(&g, &topics);
        check_valid(&g, &topics, &out);
        check_topic_balance(&g, &out);
        assert_eq!(uniform(&g, &topics), out, "case {case}: deterministic");
        assert_eq!(
            uniform(&with_current(&g, &out), &topics),
            out,
            "case {case}: stable"
        );
    }
}

#[test]
fn uniform_random_clustered_groups_move_the_fewest_partitions() {
    let mut rng = Rng(0x5eed_0003);
    for case in 0..300 {
        let (g, topics) = random_case(&mut rng, Shape::Clustered, &UniformAssignor);
        let out = uniform(&g, &topics);
        check_valid(&g, &topics, &out);
        check_topic_balance(&g, &out);
        // Per cluster (members with the same subscription): balanced and the fewest moves.
        let valid = valid_current(&g, &topics);
        let mut clusters: BTreeMap<&BTreeSet<Uuid>, Vec<&String>> = BTreeMap::new();
        for (id, m) in &g.members {
            clusters
                .entry(&m.subscription.subscribed_topic_ids)
                .or_default()
                .push(id);
        }
        let mut fewest = 0;
        for (subs, ids) in clusters {
            let total: usize = subs.iter().map(|t| topics.partitions[t] as usize).sum();
            let held: Vec<usize> = ids.iter().map(|id| valid[*id].len()).collect();
            fewest += fewest_moves(&held, total);
            let sizes: Vec<usize> = ids.iter().map(|id| size(&out[*id])).collect();
            let (min, max) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
            assert!(max - min <= 1, "case {case}: cluster unbalanced {sizes:?}");
        }
        assert_eq!(moves(&g, &topics, &out), fewest, "case {case}");
    }
}

/// Range's rules: per topic, its subscribers in member order get consecutive ranges from
/// partition 0, the first `count % subscribers` one partition longer; co-partitioned topics
/// give each member the same partitions; current assignments change nothing.
fn check_range_rules(g: &GroupSpec, topics: &Topics, out: &BTreeMap<String, TopicPartitions>) {
    let mut by_topic: BTreeMap<Uuid, Vec<&String>> = BTreeMap::new();
    for (id, m) in &g.members {
        for t in &m.subscription.subscribed_topic_ids {
            by_topic.entry(*t).or_default().push(id);
        }
    }
    for (t, subscribers) in &by_topic {
        let n = topics.partitions[t] as usize;
        let k = subscribers.len();
        let mut next = 0;
        for (i, id) in subscribers.iter().enumerate() {
            let len = n / k + usize::from(i < n % k);
            let want: BTreeSet<i32> = (next..next + len).map(|p| p as i32).collect();
            assert_eq!(
                out[*id].get(t).cloned().unwrap_or_default(),
                want,
                "{id} {t}"
            );
            next += len;
        }
    }
    for (a, sa) in &by_topic {
        for (b, sb) in &by_topic {
            if a < b && sa == sb && topics.partitions[a] == topics.partitions[b] {
                for id in sa {
                    assert_eq!(
                        out[*id].get(a),
                        out[*id].get(b),
                        "{a} and {b} co-partitioned"
                    );
                }
            }
        }
    }
    assert_eq!(&range(&with_current(g, &BTreeMap::new()), topics), out);
}

#[test]
fn range_random_groups() {
    let mut rng = Rng(0x5eed_0004);
    for case in 0..300 {
        let shape = [Shape::Homogeneous, Shape::Heterogeneous, Shape::Clustered][case % 3];
        let (g, topics) = random_case(&mut rng, shape, &RangeAssignor);
        let out = range(&g, &topics);
        check_valid(&g, &topics, &out);
        check_range_rules(&g, &topics, &out);
        assert_eq!(range(&g, &topics), out, "case {case}: deterministic");
    }
}

// ---------------------------------------------------------------------------------------------
// A large group: 2,000 members on 10 topics of 1,000 partitions (Kafka's benchmarks go to
// 10,000 members); invariants only, the time is printed.

fn large_group(rng: &mut Rng, heterogeneous: bool) -> (GroupSpec, Topics, Vec<Uuid>) {
    let ids: Vec<Uuid> = (1..=10).map(tid).collect();
    let topics = Topics::new(&ids.iter().map(|&t| (t, 1000)).collect::<Vec<_>>());
    let members = (0..2000)
        .map(|i| {
            let subs = if heterogeneous {
                let mut s = rng.subset(&ids, 50);
                if s.is_empty() {
                    s.push(ids[i % ids.len()]);
                }
                s
            } else {
                ids.clone()
            };
            (format!("member-{i:05}"), member(&subs, &[]))
        })
        .collect();
    (GroupSpec::new(members), topics, ids)
}

#[test]
fn large_groups_are_assigned() {
    let mut rng = Rng(0x5eed_0005);
    for heterogeneous in [false, true] {
        let (g, topics, ids) = large_group(&mut rng, heterogeneous);
        let kind = if heterogeneous {
            "heterogeneous"
        } else {
            "homogeneous"
        };

        let start = Instant::now();
        let first = uniform(&g, &topics);
        let t_first = start.elapsed();
        check_valid(&g, &topics, &first);

        // One member leaves, one joins.
        let mut next = with_current(&g, &first);
        next.members.remove("member-00007");
        next.members
            .insert("member-99999".to_owned(), member(&ids, &[]));
        let next = GroupSpec::new(next.members);
        let start = Instant::now();
        let second = uniform(&next, &topics);
        let t_second = start.elapsed();
        check_valid(&next, &topics, &second);
        if heterogeneous {
            check_topic_balance(&g, &first);
            check_topic_balance(&next, &second);
        } else {
            check_homogeneous_balance(&first);
            check_homogeneous_balance(&second);
            let held: Vec<usize> = valid_current(&next, &topics)
                .values()
                .map(BTreeSet::len)
                .collect();
            assert_eq!(moves(&next, &topics, &second), fewest_moves(&held, 10_000));
        }

        let start = Instant::now();
        let ranged = range(&g, &topics);
        let t_range = start.elapsed();
        check_valid(&g, &topics, &ranged);
        eprintln!(
            "2,000 members, 10 x 1,000 partitions, {kind}: uniform first {t_first:?}, uniform \
             after a leave and a join {t_second:?}, range {t_range:?}"
        );
    }
}
