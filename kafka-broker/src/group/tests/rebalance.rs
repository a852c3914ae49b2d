//! Dynamic membership: joins, rebalances, timeouts, leaders, SyncGroup, Heartbeat,
//! LeaveGroup, and group administration.

use super::*;

const G: &str = "g";

#[test]
fn initial_delay_gathers_members_and_extends_for_late_joiners() {
    let mut h = H::new();
    let a = h.join_new(G, "a", &["t"]);
    assert_eq!(h.group(G).state(), GroupState::PreparingRebalance);
    h.advance(60);
    let b = h.join_new(G, "b", &["t"]);
    h.advance(40);
    // A new member arrived during the delay: it is extended once more.
    assert!(h.joined(a).is_none());
    h.advance(99);
    assert!(h.joined(a).is_none());
    h.advance(1);
    let (ja, jb) = (h.join_answer(a), h.join_answer(b));
    assert_eq!((ja.error, jb.error), (ErrorCode::NONE, ErrorCode::NONE));
    assert_eq!((ja.generation_id, jb.generation_id), (1, 1));
    assert_eq!(ja.leader, ja.member_id, "the first joiner leads");
    assert_eq!(jb.leader, ja.member_id);
    assert_eq!(ja.members.len(), 2, "the leader sees every member");
    assert!(jb.members.is_empty());
    assert!(ja.member_id.starts_with("a-") && jb.member_id.starts_with("b-"));
    assert_eq!(ja.protocol_name.as_deref(), Some("range"));
    assert_eq!(ja.protocol_type.as_deref(), Some("consumer"));
    assert_eq!(h.group(G).state(), GroupState::CompletingRebalance);
}

#[test]
fn member_id_required_then_join_with_it() {
    let mut h = H::new();
    let mut req = join_req(G, "", "rdkafka", &[("range", &["t"])]);
    req.require_known_member_id = true;
    let first = h.join(req.clone());
    let r = h.join_answer(first);
    assert_eq!(r.error, ErrorCode::MEMBER_ID_REQUIRED);
    assert!(r.member_id.starts_with("rdkafka-"));
    assert_eq!(r.generation_id, -1);
    assert_eq!(h.group(G).members().len(), 0);
    assert_eq!(h.group(G).pending_members().count(), 1);

    req.member_id = r.member_id.clone();
    let second = h.join(req);
    h.advance(100);
    let r2 = h.join_answer(second);
    assert_eq!(r2.error, ErrorCode::NONE);
    assert_eq!(r2.member_id, r.member_id);
    assert_eq!(h.group(G).pending_members().count(), 0);
}

#[test]
fn pending_member_id_lapses_after_the_session_timeout() {
    let mut h = H::new();
    let mut req = join_req(G, "", "c", &[("range", &["t"])]);
    req.require_known_member_id = true;
    let id = h.join(req.clone());
    let given = h.join_answer(id).member_id;
    h.advance(i64::from(SESSION));
    assert!(
        h.m.group(G)
            .is_none_or(|g| g.pending_members().count() == 0)
    );
    req.member_id = given;
    let late = h.join(req);
    assert_eq!(h.join_answer(late).error, ErrorCode::UNKNOWN_MEMBER_ID);
}

#[test]
fn session_timeout_bounds_and_group_id() {
    let mut h = H::new();
    for (timeout, error) in [
        (999, ErrorCode::INVALID_SESSION_TIMEOUT),
        (60_001, ErrorCode::INVALID_SESSION_TIMEOUT),
        (1_000, ErrorCode::NONE),
    ] {
        let mut req = join_req(G, "", "c", &[("range", &["t"])]);
        req.session_timeout_ms = timeout;
        let id = h.join(req);
        h.advance(100);
        assert_eq!(h.join_answer(id).error, error, "session timeout {timeout}");
    }
    let id = h.join(join_req("", "", "c", &[("range", &["t"])]));
    assert_eq!(h.join_answer(id).error, ErrorCode::INVALID_GROUP_ID);
    assert_eq!(h.heartbeat("", "m", 1), ErrorCode::INVALID_GROUP_ID);
}

#[test]
fn refused_first_join_leaves_no_group_behind() {
    let mut h = H::new();
    let mut req = join_req(G, "", "c", &[("range", &["t"])]);
    req.protocol_type = String::new();
    let id = h.join(req);
    assert_eq!(
        h.join_answer(id).error,
        ErrorCode::INCONSISTENT_GROUP_PROTOCOL
    );
    assert!(h.m.group(G).is_none());
    let id = h.join(join_req(G, "ghost", "c", &[("range", &["t"])]));
    assert_eq!(h.join_answer(id).error, ErrorCode::UNKNOWN_MEMBER_ID);
    assert!(h.m.group(G).is_none());
}

#[test]
fn protocol_type_and_protocols_must_fit_the_group() {
    let mut h = H::new();
    let parts = topics(&[("t", 2)]);
    h.stable_group(G, &["a"], &parts);
    let mut other_type = join_req(G, "", "b", &[("range", &["t"])]);
    other_type.protocol_type = "connect".into();
    let id = h.join(other_type);
    assert_eq!(
        h.join_answer(id).error,
        ErrorCode::INCONSISTENT_GROUP_PROTOCOL
    );
    let id = h.join(join_req(G, "", "b", &[("sticky", &["t"])]));
    assert_eq!(
        h.join_answer(id).error,
        ErrorCode::INCONSISTENT_GROUP_PROTOCOL
    );
    assert_eq!(h.group(G).state(), GroupState::Stable);
}

#[test]
fn protocol_selected_by_votes() {
    let cases: [(&[&[&str]], &str); 3] = [
        // Only roundrobin is supported by everyone.
        (
            &[
                &["range", "roundrobin"],
                &["roundrobin", "range"],
                &["roundrobin"],
            ],
            "roundrobin",
        ),
        // Two of three prefer range.
        (
            &[
                &["range", "roundrobin"],
                &["roundrobin", "range"],
                &["range", "roundrobin"],
            ],
            "range",
        ),
        // A tie goes to the leader's preference.
        (
            &[&["roundrobin", "range"], &["range", "roundrobin"]],
            "roundrobin",
        ),
    ];
    for (members, expected) in cases {
        let mut h = H::new();
        let ids: Vec<RequestId> = members
            .iter()
            .enumerate()
            .map(|(i, names)| {
                let protocols: Vec<(&str, &[&str])> =
                    names.iter().map(|n| (*n, &["t"][..])).collect();
                h.join(join_req(G, "", &format!("c{i}"), &protocols))
            })
            .collect();
        for r in h.answers(&ids) {
            assert_eq!(r.protocol_name.as_deref(), Some(expected));
        }
    }
}

#[test]
fn follower_sync_waits_for_the_leader() {
    let mut h = H::new();
    let parts = topics(&[("t", 4)]);
    let (a, b) = (h.join_new(G, "a", &["t"]), h.join_new(G, "b", &["t"]));
    let [ja, jb] = <[JoinResponse; 2]>::try_from(h.answers(&[a, b])).unwrap();
    let follower = h.sync_member(G, &jb, Vec::new());
    assert!(h.synced(follower).is_none(), "waits for the leader");
    // The follower keeps heartbeating meanwhile.
    assert_eq!(h.heartbeat(G, &jb.member_id, 1), ErrorCode::NONE);
    let leader = h.sync_member(G, &ja, range_assign(&ja.members, &parts));
    let (sa, sb) = (h.sync_answer(leader), h.sync_answer(follower));
    assert_eq!((sa.error, sb.error), (ErrorCode::NONE, ErrorCode::NONE));
    let both: BTreeSet<_> = owned(&sa.assignment)
        .union(&owned(&sb.assignment))
        .cloned()
        .collect();
    assert_eq!(both.len(), 4);
    assert!(owned(&sa.assignment).is_disjoint(&owned(&sb.assignment)));
    assert_eq!(sa.protocol_name.as_deref(), Some("range"));
    assert_exact_cover(h.group(G), &parts);
    // A late SyncGroup in Stable gets the stored assignment at once.
    let again = h.sync_member(G, &jb, Vec::new());
    assert_eq!(h.sync_answer(again).assignment, sb.assignment);
    // The leader's assignment is what Kafka would persist.
    assert!(h.records.iter().any(|r| matches!(
        &r.value,
        Some(RecordValue::GroupMetadata(v)) if v.generation == 1 && v.members.len() == 2
    )));
}

#[test]
fn sync_errors_as_kafka_returns_them() {
    let mut h = H::new();
    let parts = topics(&[("t", 2)]);
    let answers = h.stable_group(G, &["a", "b"], &parts);
    let a = answers[0].clone();
    let mut req = SyncRequest {
        group_id: G.into(),
        generation_id: 7,
        member_id: a.member_id.clone(),
        group_instance_id: None,
        protocol_type: None,
        protocol_name: None,
        assignments: Vec::new(),
    };
    let id = h.sync(req.clone());
    assert_eq!(h.sync_answer(id).error, ErrorCode::ILLEGAL_GENERATION);
    req.generation_id = 1;
    req.protocol_name = Some("roundrobin".into());
    let id = h.sync(req.clone());
    assert_eq!(
        h.sync_answer(id).error,
        ErrorCode::INCONSISTENT_GROUP_PROTOCOL
    );
    req.protocol_name = Some("range".into());
    req.protocol_type = Some("connect".into());
    let id = h.sync(req.clone());
    assert_eq!(
        h.sync_answer(id).error,
        ErrorCode::INCONSISTENT_GROUP_PROTOCOL
    );
    req.protocol_type = Some("consumer".into());
    req.member_id = "stranger".into();
    let id = h.sync(req.clone());
    assert_eq!(h.sync_answer(id).error, ErrorCode::UNKNOWN_MEMBER_ID);
    let mut unknown_group = req.clone();
    unknown_group.group_id = "nope".into();
    let id = h.sync(unknown_group);
    assert_eq!(h.sync_answer(id).error, ErrorCode::UNKNOWN_MEMBER_ID);
    // During a rebalance.
    h.join_new(G, "c", &["t"]);
    req.member_id = a.member_id.clone();
    let id = h.sync(req);
    assert_eq!(h.sync_answer(id).error, ErrorCode::REBALANCE_IN_PROGRESS);
}

#[test]
fn joins_during_a_rebalance_are_answered_when_it_completes() {
    let mut h = H::new();
    let parts = topics(&[("t", 6)]);
    let old = h.stable_group(G, &["a", "b"], &parts);
    let c = h.join_new(G, "c", &["t"]);
    assert_eq!(h.group(G).state(), GroupState::PreparingRebalance);
    assert_eq!(
        h.heartbeat(G, &old[0].member_id, 1),
        ErrorCode::REBALANCE_IN_PROGRESS
    );
    let a = h.join(rejoin(G, &old[0], "a", &["t"]));
    h.advance(10);
    assert!(
        h.joined(a).is_none() && h.joined(c).is_none(),
        "b has not rejoined yet"
    );
    let b = h.join(rejoin(G, &old[1], "b", &["t"]));
    // Everyone is in: completes at once.
    let answers = vec![h.join_answer(a), h.join_answer(b), h.join_answer(c)];
    for r in &answers {
        assert_eq!((r.error, r.generation_id), (ErrorCode::NONE, 2));
        assert_eq!(r.leader, old[0].member_id, "the leader stays the leader");
    }
    assert_eq!(answers[0].members.len(), 3);
    h.sync_all(G, &answers, &parts);
    assert_exact_cover(h.group(G), &parts);
}

#[test]
fn member_that_never_rejoins_is_removed_at_the_rebalance_timeout() {
    let mut h = H::new();
    let parts = topics(&[("t", 4)]);
    let old = h.stable_group(G, &["a", "b"], &parts);
    let a = h.join(rejoin(G, &old[0], "a", &["t"]));
    // b keeps heartbeating (its session stays alive) but never rejoins.
    for _ in 0..4 {
        h.advance(1_000);
        assert_eq!(
            h.heartbeat(G, &old[1].member_id, 1),
            ErrorCode::REBALANCE_IN_PROGRESS
        );
    }
    assert!(h.joined(a).is_none());
    h.advance(1_000);
    let ja = h.join_answer(a);
    assert_eq!((ja.error, ja.generation_id), (ErrorCode::NONE, 2));
    assert_eq!(ja.members.len(), 1);
    assert!(h.group(G).member(&old[1].member_id).is_none());
    assert_eq!(
        h.heartbeat(G, &old[1].member_id, 1),
        ErrorCode::UNKNOWN_MEMBER_ID
    );
    h.sync_all(G, &[ja], &parts);
    assert_exact_cover(h.group(G), &parts);
}

#[test]
fn expired_session_triggers_a_rebalance() {
    let mut h = H::new();
    let parts = topics(&[("t", 3)]);
    let old = h.stable_group(G, &["a", "b"], &parts);
    // Only a heartbeats.
    for _ in 0..9 {
        h.advance(1_000);
        assert_eq!(h.heartbeat(G, &old[0].member_id, 1), ErrorCode::NONE);
    }
    h.advance(1_000);
    assert!(
        h.group(G).member(&old[1].member_id).is_none(),
        "b's session expired"
    );
    assert_eq!(h.group(G).state(), GroupState::PreparingRebalance);
    assert_eq!(
        h.heartbeat(G, &old[0].member_id, 1),
        ErrorCode::REBALANCE_IN_PROGRESS
    );
    let a = h.join(rejoin(G, &old[0], "a", &["t"]));
    let ja = h.join_answer(a);
    assert_eq!(ja.generation_id, 2);
    h.sync_all(G, &[ja], &parts);
    assert_exact_cover(h.group(G), &parts);
}

#[test]
fn the_leader_leaving_hands_leadership_on() {
    let mut h = H::new();
    let parts = topics(&[("t", 5)]);
    let old = h.stable_group(G, &["a", "b", "c"], &parts);
    assert_eq!(old[0].leader, old[0].member_id);
    let left = h.leave(G, &old[0].member_id);
    assert_eq!(left.members[0].1, ErrorCode::NONE);
    assert_eq!(h.group(G).leader(), Some(old[1].member_id.as_str()));
    let b = h.join(rejoin(G, &old[1], "b", &["t"]));
    let c = h.join(rejoin(G, &old[2], "c", &["t"]));
    let (jb, jc) = (h.join_answer(b), h.join_answer(c));
    assert_eq!(jb.leader, old[1].member_id);
    assert_eq!(jb.members.len(), 2);
    assert!(jc.members.is_empty());
    h.sync_all(G, &[jb, jc], &parts);
    assert_exact_cover(h.group(G), &parts);
    // Leaving twice: the member is gone.
    assert_eq!(
        h.leave(G, &old[0].member_id).members[0].1,
        ErrorCode::UNKNOWN_MEMBER_ID
    );
}

#[test]
fn a_leader_that_does_not_rejoin_is_replaced_by_one_that_did() {
    let mut h = H::new();
    let parts = topics(&[("t", 2)]);
    let old = h.stable_group(G, &["a", "b"], &parts);
    h.join_new(G, "c", &["t"]);
    let b = h.join(rejoin(G, &old[1], "b", &["t"]));
    h.advance(i64::from(REBALANCE));
    let jb = h.join_answer(b);
    assert_eq!(jb.leader, old[1].member_id);
    assert_eq!(jb.members.len(), 2);
}

#[test]
fn leader_rejoining_a_stable_group_forces_a_rebalance_follower_does_not() {
    let mut h = H::new();
    let parts = topics(&[("t", 2)]);
    let old = h.stable_group(G, &["a", "b"], &parts);
    let b = h.join(rejoin(G, &old[1], "b", &["t"]));
    let jb = h.join_answer(b);
    assert_eq!((jb.error, jb.generation_id), (ErrorCode::NONE, 1));
    assert_eq!(h.group(G).state(), GroupState::Stable);
    h.join(rejoin(G, &old[0], "a", &["t"]));
    assert_eq!(h.group(G).state(), GroupState::PreparingRebalance);
}

#[test]
fn a_waiting_sync_is_cancelled_by_a_new_rebalance() {
    let mut h = H::new();
    let (a, b) = (h.join_new(G, "a", &["t"]), h.join_new(G, "b", &["t"]));
    let [_ja, jb] = <[JoinResponse; 2]>::try_from(h.answers(&[a, b])).unwrap();
    let waiting = h.sync_member(G, &jb, Vec::new());
    h.join_new(G, "c", &["t"]);
    assert_eq!(
        h.sync_answer(waiting).error,
        ErrorCode::REBALANCE_IN_PROGRESS
    );
}

#[test]
fn a_member_that_never_syncs_is_removed() {
    let mut h = H::new();
    let parts = topics(&[("t", 2)]);
    let (a, b) = (h.join_new(G, "a", &["t"]), h.join_new(G, "b", &["t"]));
    let [ja, jb] = <[JoinResponse; 2]>::try_from(h.answers(&[a, b])).unwrap();
    let s = h.sync_member(G, &ja, range_assign(&ja.members, &parts));
    assert_eq!(h.sync_answer(s).error, ErrorCode::NONE);
    h.advance(i64::from(REBALANCE) - 1);
    assert!(h.group(G).member(&jb.member_id).is_some());
    h.advance(1);
    assert!(h.group(G).member(&jb.member_id).is_none());
    assert_eq!(h.group(G).state(), GroupState::PreparingRebalance);
}

#[test]
fn heartbeat_answers() {
    let mut h = H::new();
    let parts = topics(&[("t", 2)]);
    let old = h.stable_group(G, &["a"], &parts);
    let a = &old[0].member_id;
    assert_eq!(h.heartbeat(G, a, 1), ErrorCode::NONE);
    assert_eq!(h.heartbeat(G, a, 0), ErrorCode::ILLEGAL_GENERATION);
    assert_eq!(h.heartbeat(G, "x", 1), ErrorCode::UNKNOWN_MEMBER_ID);
    assert_eq!(h.heartbeat("other", a, 1), ErrorCode::UNKNOWN_MEMBER_ID);
    // Heartbeats keep the session alive well past one session timeout.
    for _ in 0..30 {
        h.advance(1_000);
        assert_eq!(h.heartbeat(G, a, 1), ErrorCode::NONE);
    }
    h.leave(G, a);
    assert_eq!(h.group(G).state(), GroupState::Empty);
    assert_eq!(h.group(G).generation(), 2);
    assert_eq!(h.heartbeat(G, a, 2), ErrorCode::UNKNOWN_MEMBER_ID);
}

#[test]
fn a_new_member_waiting_too_long_is_dropped() {
    let mut config = config();
    config.new_member_join_timeout_ms = 3_000;
    let mut h = H::with(config);
    let parts = topics(&[("t", 2)]);
    let old = h.stable_group(G, &["a"], &parts);
    let b = h.join_new(G, "b", &["t"]);
    // a neither rejoins nor expires (session 10 s), so the rebalance waits 5 s;
    // b's join is given up after 3 s.
    h.advance(2_000);
    assert_eq!(
        h.heartbeat(G, &old[0].member_id, 1),
        ErrorCode::REBALANCE_IN_PROGRESS
    );
    h.advance(1_000);
    let jb = h.join_answer(b);
    assert_eq!(jb.error, ErrorCode::UNKNOWN_MEMBER_ID);
}

#[test]
fn batched_leave_reports_each_member() {
    let mut h = H::new();
    let parts = topics(&[("t", 2)]);
    let old = h.stable_group(G, &["a", "b", "c"], &parts);
    let leaving = vec![
        LeavingMember {
            member_id: old[0].member_id.clone(),
            group_instance_id: None,
        },
        LeavingMember {
            member_id: "nobody".into(),
            group_instance_id: None,
        },
        LeavingMember {
            member_id: String::new(),
            group_instance_id: Some("no-such-instance".into()),
        },
        LeavingMember {
            member_id: old[2].member_id.clone(),
            group_instance_id: None,
        },
    ];
    let r = h.m.leave(G, &leaving, h.now);
    let codes: Vec<ErrorCode> = r.members.iter().map(|(_, e)| *e).collect();
    assert_eq!(
        codes,
        [
            ErrorCode::NONE,
            ErrorCode::UNKNOWN_MEMBER_ID,
            ErrorCode::UNKNOWN_MEMBER_ID,
            ErrorCode::NONE
        ]
    );
    assert_eq!(h.group(G).members().len(), 1);
    let r = h.m.leave("unknown-group", &leaving[..1], h.now);
    assert_eq!(r.error, ErrorCode::NONE);
    assert_eq!(r.members[0].1, ErrorCode::UNKNOWN_MEMBER_ID);
}

#[test]
fn group_max_size() {
    let mut config = config();
    config.max_size = 2;
    let mut h = H::with(config);
    let parts = topics(&[("t", 2)]);
    h.stable_group(G, &["a", "b"], &parts);
    let c = h.join_new(G, "c", &["t"]);
    assert_eq!(h.join_answer(c).error, ErrorCode::GROUP_MAX_SIZE_REACHED);
}

#[test]
fn describe_list_and_delete() {
    let mut h = H::new();
    let parts = topics(&[("t", 2)]);
    let old = h.stable_group("busy", &["a"], &parts);
    h.stable_group("done", &["b"], &parts);
    let done_member = h.group("done").members()[0].id().to_owned();
    h.leave("done", &done_member);

    let d = h.m.describe("busy");
    assert_eq!(
        (d.state, d.protocol_type.as_str(), d.protocol_data.as_str()),
        (GroupState::Stable, "consumer", "range")
    );
    assert_eq!(d.members[0].member_id, old[0].member_id);
    assert_eq!(d.members[0].client_id, "a");
    assert_eq!(owned(&d.members[0].assignment).len(), 2);
    assert_eq!(d.members[0].metadata, subscription(&["t"]));
    assert_eq!(h.m.describe("nope").state, GroupState::Dead);

    let names = |l: Vec<GroupListing>| l.into_iter().map(|g| g.group_id).collect::<Vec<_>>();
    assert_eq!(names(h.m.list(&[], &[])), ["busy", "done"]);
    assert_eq!(names(h.m.list(&["Empty"], &[])), ["done"]);
    assert_eq!(
        names(h.m.list(&["STABLE", "empty"], &["classic"])),
        ["busy", "done"]
    );
    assert!(h.m.list(&[], &["consumer"]).is_empty());

    let ids = ["busy".to_owned(), "done".to_owned(), "nope".to_owned()];
    assert_eq!(
        h.m.delete_groups(&ids),
        [
            ErrorCode::NON_EMPTY_GROUP,
            ErrorCode::NONE,
            ErrorCode::GROUP_ID_NOT_FOUND
        ]
    );
    assert!(h.m.group("done").is_none());
    let records = h.m.take_records();
    assert_eq!(
        records.last(),
        Some(&OffsetsRecord::group_tombstone("done"))
    );
}
