use super::*;

fn tp(t: &str, p: i32) -> TopicPartition {
    TopicPartition::new(t, p)
}

fn counts(list: &[(&str, i32)]) -> BTreeMap<String, i32> {
    list.iter().map(|(t, n)| ((*t).to_owned(), *n)).collect()
}

/// A `sticky` member that owned `owned` in `generation`.
fn eager(
    id: &str,
    topics: &[&str],
    owned: &[TopicPartition],
    generation: i32,
) -> MemberSubscription {
    MemberSubscription {
        user_data: StickyAssignor.subscription_user_data(&[], owned, generation),
        ..MemberSubscription::new(id, topics)
    }
}

/// A `cooperative-sticky` member that owns `owned` since `generation`.
fn coop(
    id: &str,
    topics: &[&str],
    owned: &[TopicPartition],
    generation: i32,
) -> MemberSubscription {
    MemberSubscription {
        owned_partitions: owned.to_vec(),
        generation_id: (generation >= 0).then_some(generation),
        ..MemberSubscription::new(id, topics)
    }
}

#[test]
fn javas_documented_example_and_stickiness_after_a_member_leaves() {
    // StickyAssignor's doc: three members on t0..t3 with 2 partitions each.
    let topics = counts(&[("t0", 2), ("t1", 2), ("t2", 2), ("t3", 2)]);
    let all = ["t0", "t1", "t2", "t3"];
    let fresh: Vec<_> = ["C0", "C1", "C2"]
        .iter()
        .map(|id| MemberSubscription::new(*id, &all))
        .collect();
    let first = StickyAssignor.assign(&topics, &fresh).unwrap();
    assert_eq!(first["C0"], [tp("t0", 0), tp("t1", 1), tp("t3", 0)]);
    assert_eq!(first["C1"], [tp("t0", 1), tp("t2", 0), tp("t3", 1)]);
    assert_eq!(first["C2"], [tp("t1", 0), tp("t2", 1)]);

    // C1 leaves: C0 and C2 keep everything and split C1's three.
    let survivors = [
        eager("C0", &all, &first["C0"], 1),
        eager("C2", &all, &first["C2"], 1),
    ];
    let second = StickyAssignor.assign(&topics, &survivors).unwrap();
    assert_eq!(second["C0"].len(), 4);
    assert_eq!(second["C2"].len(), 4);
    for id in ["C0", "C2"] {
        assert!(first[id].iter().all(|p| second[id].contains(p)), "{id}");
    }
}

#[test]
fn a_joining_member_takes_only_the_surplus() {
    let topics = counts(&[("t", 6)]);
    let owned: Vec<_> = (0..6).map(|p| tp("t", p)).collect();
    let members = [
        eager("a", &["t"], &owned[..3], 4),
        eager("b", &["t"], &owned[3..], 4),
        eager("c", &["t"], &[], -1),
    ];
    let got = StickyAssignor.assign(&topics, &members).unwrap();
    assert_eq!(got["a"], [tp("t", 0), tp("t", 1)]);
    assert_eq!(got["b"], [tp("t", 3), tp("t", 4)]);
    assert_eq!(got["c"], [tp("t", 2), tp("t", 5)]);
}

#[test]
fn conflicting_claims_go_to_the_highest_generation() {
    let topics = counts(&[("t", 2)]);
    let members = [
        eager("old", &["t"], &[tp("t", 0)], 3),
        eager("new", &["t"], &[tp("t", 0)], 5),
    ];
    let got = StickyAssignor.assign(&topics, &members).unwrap();
    assert_eq!(got["new"], [tp("t", 0)]);
    assert_eq!(got["old"], [tp("t", 1)]);
}

#[test]
fn equal_generation_claims_are_void() {
    let topics = counts(&[("t", 4)]);
    let members = [
        coop("a", &["t"], &[tp("t", 0), tp("t", 1)], 2),
        coop("b", &["t"], &[tp("t", 1), tp("t", 2)], 2),
    ];
    let data: Vec<_> = members
        .iter()
        .map(CooperativeStickyAssignor::member_data)
        .collect();
    let out = sticky_assign("test", &topics, &members, &data).unwrap();
    assert_eq!(out.contested, BTreeSet::from([tp("t", 1)]));
    // t-1 is nobody's: it goes to whoever has room; both keep their undisputed partition.
    assert!(out.assignment["a"].contains(&tp("t", 0)));
    assert!(out.assignment["b"].contains(&tp("t", 2)));
    // Cooperative: nobody gets t-1 this round, both claimants give it up.
    let got = CooperativeStickyAssignor.assign(&topics, &members).unwrap();
    assert!(got.values().all(|l| !l.contains(&tp("t", 1))));
}

#[test]
fn partitions_of_deleted_topics_and_bad_claims_are_ignored() {
    let topics = counts(&[("t", 2)]);
    let members = [
        eager(
            "a",
            &["t", "gone"],
            &[tp("gone", 0), tp("t", 7), tp("t", -1)],
            1,
        ),
        eager("b", &["t", "gone"], &[tp("t", 0), tp("t", 0)], 1),
    ];
    let got = StickyAssignor.assign(&topics, &members).unwrap();
    assert_eq!(got["a"], [tp("t", 1)]);
    assert_eq!(got["b"], [tp("t", 0)]);
}

#[test]
fn unreadable_user_data_counts_as_nothing_owned() {
    let m = MemberSubscription {
        user_data: Some(Bytes::from_static(b"\x00\x00\x00\x09garbage")),
        ..MemberSubscription::new("m", &["t"])
    };
    assert_eq!(
        StickyAssignor::member_data(&m),
        MemberData {
            partitions: Vec::new(),
            generation: Some(-1)
        }
    );
    let empty = MemberSubscription {
        user_data: Some(Bytes::new()),
        ..MemberSubscription::new("m", &["t"])
    };
    assert_eq!(StickyAssignor::member_data(&empty), MemberData::default());
}

#[test]
fn user_data_of_each_assignor() {
    let owned = [tp("t", 1)];
    assert_eq!(StickyAssignor.subscription_user_data(&[], &[], -1), None);
    let b = StickyAssignor
        .subscription_user_data(&[], &owned, 3)
        .unwrap();
    assert_eq!(
        StickyAssignorUserData::decode(&b).unwrap(),
        StickyAssignorUserData {
            previous_assignment: owned.to_vec(),
            generation: Some(3)
        }
    );
    assert_eq!(
        CooperativeStickyAssignor
            .subscription_user_data(&[], &owned, -1)
            .unwrap()
            .as_ref(),
        b"\xff\xff\xff\xff"
    );
}

#[test]
fn cooperative_generation_from_subscription_then_user_data() {
    let mut m = coop("m", &["t"], &[tp("t", 0)], 7);
    m.user_data = Some(Bytes::from_static(b"\x00\x00\x00\x02"));
    assert_eq!(
        CooperativeStickyAssignor::member_data(&m).generation,
        Some(7)
    );
    m.generation_id = None;
    assert_eq!(
        CooperativeStickyAssignor::member_data(&m).generation,
        Some(2)
    );
    // librdkafka's older user data: the sticky layout, generation at the end.
    m.user_data = StickyAssignor.subscription_user_data(&[], &[tp("t", 0)], 9);
    assert_eq!(
        CooperativeStickyAssignor::member_data(&m).generation,
        Some(9)
    );
    m.user_data = Some(Bytes::from_static(b"\x01"));
    assert_eq!(
        CooperativeStickyAssignor::member_data(&m).generation,
        Some(-1)
    );
    m.user_data = None;
    assert_eq!(CooperativeStickyAssignor::member_data(&m).generation, None);
}

#[test]
fn cooperative_join_takes_two_rounds() {
    let topics = counts(&[("t", 4)]);
    let all: Vec<_> = (0..4).map(|p| tp("t", p)).collect();
    let round1 = CooperativeStickyAssignor
        .assign(
            &topics,
            &[coop("a", &["t"], &all, 1), coop("b", &["t"], &[], -1)],
        )
        .unwrap();
    // a gives up two partitions, b gets nothing yet.
    assert_eq!(round1["a"], [tp("t", 0), tp("t", 1)]);
    assert!(round1["b"].is_empty());
    let round2 = CooperativeStickyAssignor
        .assign(
            &topics,
            &[
                coop("a", &["t"], &round1["a"], 2),
                coop("b", &["t"], &round1["b"], 2),
            ],
        )
        .unwrap();
    assert_eq!(round2["a"], [tp("t", 0), tp("t", 1)]);
    assert_eq!(round2["b"], [tp("t", 2), tp("t", 3)]);
}

#[test]
fn cooperative_under_eager_behaves_like_sticky() {
    // Under the eager protocol nobody reports owned partitions, so nothing is held back.
    let topics = counts(&[("t", 3)]);
    let members = [
        MemberSubscription::new("a", &["t"]),
        MemberSubscription::new("b", &["t"]),
    ];
    let coop = CooperativeStickyAssignor.assign(&topics, &members).unwrap();
    let eager = StickyAssignor.assign(&topics, &members).unwrap();
    assert_eq!(coop, eager);
    assert_eq!(coop.values().map(Vec::len).sum::<usize>(), 3);
}

#[test]
fn empty_group_and_no_partitions() {
    assert!(
        StickyAssignor
            .assign(&counts(&[("t", 3)]), &[])
            .unwrap()
            .is_empty()
    );
    let got = StickyAssignor
        .assign(&counts(&[]), &[MemberSubscription::new("a", &["t"])])
        .unwrap();
    assert_eq!(got["a"], []);
}
