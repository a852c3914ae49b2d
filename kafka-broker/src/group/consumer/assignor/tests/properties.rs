//! Hostile inputs, seeded random groups and one large group: invariants only.

use super::*;

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
