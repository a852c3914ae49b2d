//! Kafka's own unit tests' expected assignments, restated: uniform (homogeneous and
//! heterogeneous) and range.

use super::*;

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
