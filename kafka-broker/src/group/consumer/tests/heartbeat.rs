//! Joining, reconciling, leaving, epochs, request checks, size and assignors.

use kafka_protocol::error_code::ErrorCode;

use super::*;

#[test]
fn first_member_joins_and_gets_every_partition_in_one_heartbeat() {
    let mut env = Env::new();
    let r = env.join("a", &["foo"]);
    assert_eq!(r.member_id, "a");
    assert_eq!(r.member_epoch, 1);
    assert_eq!(r.heartbeat_interval_ms, 5_000);
    assert_eq!(r.assignment, Some(tp(&[(FOO, &[0, 1, 2, 3, 4, 5])])));
    // Kafka's order: member, subscription metadata, group epoch, target, target epoch,
    // current assignment.
    assert_eq!(
        kinds(&env.take()),
        [
            "Member(a)",
            "PartitionMetadata",
            "Epoch",
            "Target(a)",
            "TargetEpoch",
            "Current(a)"
        ]
    );
    let g = env.group();
    assert_eq!((g.group_epoch(), g.assignment_epoch()), (1, 1));
    assert_eq!(g.state(), ConsumerGroupState::Stable);
    let m = env.member("a");
    assert_eq!((m.member_epoch, m.previous_member_epoch), (1, 0));
    assert_eq!(m.rebalance_timeout_ms, REBALANCE_MS);
    // A plain heartbeat changes nothing and carries no assignment.
    let r = env.beat("a", 1, r.assignment.unwrap()).unwrap();
    assert_eq!((r.member_epoch, r.assignment), (1, None));
    assert!(env.take().is_empty());
    env.check_replay();
}

#[test]
fn v0_member_gets_an_id_from_the_coordinator() {
    let mut env = Env::new();
    let mut req = Env::join_req("", &["foo"]);
    req.version = 0;
    let r = env.hb(req).unwrap();
    assert_eq!(r.member_id.len(), 36, "a UUID: {}", r.member_id);
    assert!(env.group().member(&r.member_id).is_some());
    // v1 requires the client's own id.
    let err = env.hb(Env::join_req("", &["foo"])).unwrap_err();
    assert_eq!(err.code(), ErrorCode::INVALID_REQUEST);
}

/// A second member: the first must revoke before the second gets anything.
#[test]
fn second_member_gets_partitions_only_once_the_first_revoked_them() {
    let mut env = Env::new();
    let a = env.join("a", &["foo"]).assignment.unwrap();
    let b = env.join("b", &["foo"]);
    // Round-robin target: a 0,2,4, b 1,3,5; all held by a at epoch 1.
    assert_eq!(b.member_epoch, 2);
    assert_eq!(b.assignment, Some(TopicPartitions::new()));
    assert_eq!(env.member("b").state, MemberState::UnreleasedPartitions);
    assert_eq!(env.group().state(), ConsumerGroupState::Reconciling);

    // a is asked to revoke 1,3,5 and stays at epoch 1.
    let r = env.beat("a", 1, a.clone()).unwrap();
    assert_eq!(r.member_epoch, 1);
    assert_eq!(r.assignment, Some(tp(&[(FOO, &[0, 2, 4])])));
    let m = env.member("a");
    assert_eq!(m.state, MemberState::UnrevokedPartitions);
    assert_eq!(m.pending_revocation, tp(&[(FOO, &[1, 3, 5])]));

    // Still owned: b waits, a waits.
    let r = env.beat("b", 2, TopicPartitions::new()).unwrap();
    assert_eq!((r.member_epoch, r.assignment), (2, None));
    let r = env.beat("a", 1, a).unwrap();
    assert_eq!((r.member_epoch, r.assignment), (1, None));

    // a acknowledges: epoch 2, stable; then b gets the released partitions.
    let r = env.beat("a", 1, tp(&[(FOO, &[0, 2, 4])])).unwrap();
    assert_eq!((r.member_epoch, r.assignment), (2, None));
    assert_eq!(env.member("a").state, MemberState::Stable);
    let r = env.beat("b", 2, TopicPartitions::new()).unwrap();
    assert_eq!(r.assignment, Some(tp(&[(FOO, &[1, 3, 5])])));
    assert_eq!(env.group().state(), ConsumerGroupState::Stable);
    env.check_replay();
}

#[test]
fn a_heartbeat_without_owned_partitions_does_not_acknowledge_a_revocation() {
    let mut env = Env::new();
    let a = env.join("a", &["foo"]).assignment.unwrap();
    env.join("b", &["foo"]);
    env.beat("a", 1, a).unwrap();
    let r = env.hb(HeartbeatRequest::new(GROUP, "a", 1)).unwrap();
    assert_eq!(r.member_epoch, 1);
    assert_eq!(env.member("a").state, MemberState::UnrevokedPartitions);
}

#[test]
fn leave_removes_the_member_and_the_next_heartbeat_reassigns() {
    let mut env = Env::new();
    let a = env.join("a", &["foo"]).assignment.unwrap();
    env.join("b", &["foo"]);
    env.beat("a", 1, a).unwrap();
    env.beat("a", 1, tp(&[(FOO, &[0, 2, 4])])).unwrap();
    env.beat("b", 2, TopicPartitions::new()).unwrap();
    env.take();

    let r = env.hb(HeartbeatRequest::new(GROUP, "a", -1)).unwrap();
    assert_eq!(
        (r.member_id.as_str(), r.member_epoch, r.assignment),
        ("a", -1, None)
    );
    assert_eq!(
        kinds(&env.take()),
        ["-Current(a)", "-Target(a)", "-Member(a)", "Epoch"]
    );
    assert_eq!(env.group().group_epoch(), 3);
    assert_eq!(env.group().state(), ConsumerGroupState::Assigning);
    let r = env.beat("b", 2, tp(&[(FOO, &[1, 3, 5])])).unwrap();
    assert_eq!(r.member_epoch, 3);
    assert_eq!(r.assignment, Some(tp(&[(FOO, &[0, 1, 2, 3, 4, 5])])));
    // Leaving again: unknown.
    let err = env.hb(HeartbeatRequest::new(GROUP, "a", -1)).unwrap_err();
    assert_eq!(err.code(), ErrorCode::UNKNOWN_MEMBER_ID);
    // The last member leaves: the group is empty, and deletable.
    assert_eq!(
        env.cg.delete(GROUP).unwrap_err().code(),
        ErrorCode::NON_EMPTY_GROUP
    );
    env.hb(HeartbeatRequest::new(GROUP, "b", -1)).unwrap();
    assert_eq!(env.group().state(), ConsumerGroupState::Empty);
    env.check_replay();
    env.take();
    env.cg.delete(GROUP).unwrap();
    env.collect();
    assert_eq!(
        kinds(&env.take()),
        ["-TargetEpoch", "-PartitionMetadata", "-Epoch"]
    );
    assert!(env.cg.group(GROUP).is_none());
    assert_eq!(
        env.cg.delete(GROUP).unwrap_err().code(),
        ErrorCode::GROUP_ID_NOT_FOUND
    );
    env.check_replay();
}

#[test]
fn epochs_ahead_or_behind_are_fenced_but_the_previous_one_with_a_subset_is_tolerated() {
    let mut env = Env::new();
    let a = env.join("a", &["foo"]).assignment.unwrap();
    assert_eq!(
        env.beat("a", 2, a.clone()).unwrap_err().code(),
        ErrorCode::FENCED_MEMBER_EPOCH
    );
    // Epoch 1, previous 0. The join's answer lost: a joins again with the same id, owning
    // nothing, and is answered as if it had just joined.
    let r = env.hb(Env::join_req("a", &["foo"])).unwrap();
    assert_eq!((r.member_epoch, r.assignment), (1, Some(a.clone())));

    // b joins (epoch 2); a moves to 2 after revoking; then a heartbeat at 1 with a subset
    // of what it is assigned is the lost-answer case, one at 1 with more is fenced.
    env.join("b", &["foo"]);
    env.beat("a", 1, a).unwrap();
    env.beat("a", 1, tp(&[(FOO, &[0, 2, 4])])).unwrap();
    assert_eq!(env.member("a").member_epoch, 2);
    let r = env.beat("a", 1, tp(&[(FOO, &[0, 2])])).unwrap();
    assert_eq!(r.member_epoch, 2);
    let err = env.beat("a", 1, tp(&[(FOO, &[0, 1])])).unwrap_err();
    assert_eq!(err.code(), ErrorCode::FENCED_MEMBER_EPOCH);
    // ... and one at 1 not saying what it owns too.
    let err = env.hb(HeartbeatRequest::new(GROUP, "a", 1)).unwrap_err();
    assert_eq!(err.code(), ErrorCode::FENCED_MEMBER_EPOCH);
    // b is at 2, previously 0: epoch 1 is neither.
    assert_eq!(env.member("b").previous_member_epoch, 0);
    let err = env.beat("b", 1, TopicPartitions::new()).unwrap_err();
    assert_eq!(err.code(), ErrorCode::FENCED_MEMBER_EPOCH);
    // Unknown member and unknown group.
    let err = env.beat("zz", 1, TopicPartitions::new()).unwrap_err();
    assert_eq!(err.code(), ErrorCode::UNKNOWN_MEMBER_ID);
    let mut req = HeartbeatRequest::new("nope", "a", 1);
    req.topic_partitions = Some(TopicPartitions::new());
    assert_eq!(
        env.hb(req).unwrap_err().code(),
        ErrorCode::GROUP_ID_NOT_FOUND
    );
    env.check_replay();
}

#[test]
fn bad_field_combinations_are_invalid_requests_and_write_nothing() {
    let mut env = Env::new();
    let bad: Vec<(HeartbeatRequest, &str)> = vec![
        (
            {
                let mut r = Env::join_req("a", &["foo"]);
                r.rebalance_timeout_ms = -1;
                r
            },
            "RebalanceTimeoutMs",
        ),
        (
            {
                let mut r = Env::join_req("a", &["foo"]);
                r.topic_partitions = None;
                r
            },
            "TopicPartitions",
        ),
        (
            {
                let mut r = Env::join_req("a", &["foo"]);
                r.topic_partitions = Some(tp(&[(FOO, &[0])]));
                r
            },
            "TopicPartitions",
        ),
        (
            {
                let mut r = Env::join_req("a", &[]);
                r.subscribed_topic_names = None;
                r
            },
            "SubscribedTopic",
        ),
        (
            {
                let mut r = Env::join_req("a", &["foo"]);
                r.group_id = " ".into();
                r
            },
            "GroupId",
        ),
        (
            {
                let mut r = Env::join_req("a", &["foo"]);
                r.instance_id = Some(String::new());
                r
            },
            "InstanceId",
        ),
        (
            {
                let mut r = Env::join_req("a", &["foo"]);
                r.rack_id = Some(" ".into());
                r
            },
            "RackId",
        ),
        (
            HeartbeatRequest::new(GROUP, "a", -2),
            "InstanceId can't be null",
        ),
        (HeartbeatRequest::new(GROUP, "a", -3), "MemberEpoch"),
        (HeartbeatRequest::new(GROUP, "", 3), "MemberId"),
    ];
    for (req, what) in bad {
        let err = env.hb(req).unwrap_err();
        assert_eq!(err.code(), ErrorCode::INVALID_REQUEST, "{what}");
        assert!(err.to_string().contains(what), "{err} should name {what}");
    }
    assert!(env.log.is_empty());
    assert!(env.cg.group(GROUP).is_none());
    // A member joining with an empty subscription is accepted (Kafka 4), owns nothing.
    let r = env.join("a", &[]);
    assert_eq!(
        (r.member_epoch, r.assignment),
        (1, Some(TopicPartitions::new()))
    );
}

#[test]
fn the_group_max_size_refuses_new_members_only() {
    let mut env = Env::with_config(|c| c.max_size = 2);
    env.join("a", &["foo"]);
    env.join("b", &["foo"]);
    let err = env.hb(Env::join_req("c", &["foo"])).unwrap_err();
    assert_eq!(err.code(), ErrorCode::GROUP_MAX_SIZE_REACHED);
    // A member already in the group still heartbeats (and rejoins).
    env.beat("b", 2, TopicPartitions::new()).unwrap();
    assert_eq!(env.group().members().len(), 2);
}

#[test]
fn unknown_server_assignor_is_refused_and_the_most_asked_for_one_is_used() {
    let other = TestAssignor::new("other");
    let mock = TestAssignor::new("mock");
    let mut env = Env::with_config(|c| {
        c.assignors = vec![mock.clone(), other.clone()];
    });
    let mut req = Env::join_req("a", &["foo"]);
    req.server_assignor = Some("sticky".into());
    let err = env.hb(req).unwrap_err();
    assert_eq!(err.code(), ErrorCode::UNSUPPORTED_ASSIGNOR);
    assert!(err.to_string().contains("mock, other"), "{err}");

    // No preference: the first configured.
    env.join("a", &["foo"]);
    assert_eq!((mock.calls(), other.calls()), (1, 0));
    // b asks for `other`: it is the only one asked for, so it is used.
    let mut req = Env::join_req("b", &["foo"]);
    req.server_assignor = Some("other".into());
    env.hb(req).unwrap();
    assert_eq!((mock.calls(), other.calls()), (1, 1));
    let d = env.cg.describe(GROUP, &env.image).unwrap();
    assert_eq!(d.assignor_name, "other");
}

#[test]
fn an_assignor_failure_answers_an_error_and_changes_nothing() {
    let mut env = Env::new();
    env.join("a", &["foo"]);
    env.take();
    let before = env.group().clone();
    env.assignor.prepare(Err(assignor::AssignorError::Failed {
        assignor: "mock",
        reason: "broken".into(),
    }));
    let err = env.hb(Env::join_req("b", &["foo"])).unwrap_err();
    assert_eq!(err.code(), ErrorCode::UNKNOWN_SERVER_ERROR);
    assert!(err.to_string().contains("broken"));
    assert!(env.take().is_empty());
    assert_eq!(env.group(), &before);
    // The next attempt works.
    assert_eq!(env.join("b", &["foo"]).member_epoch, 2);
}

#[test]
fn the_assignor_sees_racks_subscriptions_and_current_targets() {
    let mut env = Env::new();
    let racks = |r: &str| BTreeSet::from([r.to_owned()]);
    env.image
        .add_with_racks("foo", FOO, vec![racks("r1"), racks("r2"), racks("r1")]);
    let mut req = Env::join_req("a", &["foo", "bar", "missing"]);
    req.rack_id = Some("r1".into());
    env.hb(req).unwrap();
    env.join("b", &["bar"]);
    let specs = env.assignor.specs.lock().unwrap();
    let last = specs.last().unwrap();
    let a = &last.members["a"];
    assert_eq!(a.subscription.rack_id.as_deref(), Some("r1"));
    assert_eq!(
        a.subscription.subscribed_topic_ids,
        BTreeSet::from([FOO, BAR])
    );
    assert_eq!(a.current, tp(&[(FOO, &[0, 1, 2]), (BAR, &[0, 1, 2])]));
    assert_eq!(last.members["b"].current, TopicPartitions::new());
    assert_eq!(
        last.subscription_type,
        assignor::SubscriptionType::Heterogeneous
    );
    drop(specs);
    let meta = &env.group().subscription_metadata()["foo"];
    assert_eq!(meta.racks[&1], racks("r2"));
    assert_eq!(meta.num_partitions, 3);
    env.check_replay();
}

#[test]
fn an_assignor_breaking_its_contract_cannot_give_a_partition_twice() {
    let mut env = Env::new();
    env.join("a", &["foo"]);
    env.assignor.prepare(Ok(BTreeMap::from([
        ("a".to_owned(), tp(&[(FOO, &[0, 1, 9]), (BAR, &[0])])),
        ("b".to_owned(), tp(&[(FOO, &[1, 2])])),
    ])));
    env.join("b", &["foo"]);
    let g = env.group();
    // 9 does not exist, a does not subscribe to bar, 1 went to a first.
    assert_eq!(g.target_assignment()["a"], tp(&[(FOO, &[0, 1])]));
    assert_eq!(g.target_assignment()["b"], tp(&[(FOO, &[2])]));
}

#[test]
fn describe_list_and_offset_commit_checks() {
    let mut env = Env::new();
    let mut req = Env::join_req("a", &["foo"]);
    req.client_id = "client-a".into();
    req.client_host = "/10.0.0.1".into();
    req.instance_id = Some("i-a".into());
    req.rack_id = Some("r1".into());
    env.hb(req).unwrap();
    env.join("b", &["foo"]);
    let d = env.cg.describe(GROUP, &env.image).unwrap();
    assert_eq!((d.group_epoch, d.assignment_epoch), (2, 2));
    assert_eq!(d.state, ConsumerGroupState::Reconciling);
    assert_eq!(d.assignor_name, "mock");
    let a = &d.members[0];
    assert_eq!(a.member_id, "a");
    assert_eq!(a.client_id, "client-a");
    assert_eq!(a.client_host, "/10.0.0.1");
    assert_eq!(a.instance_id.as_deref(), Some("i-a"));
    assert_eq!(a.rack_id.as_deref(), Some("r1"));
    assert_eq!(a.subscribed_topic_names, ["foo"]);
    assert_eq!(a.assignment[0].topic_name, "foo");
    assert_eq!(a.assignment[0].partitions, [0, 1, 2, 3, 4, 5]);
    assert_eq!(a.target_assignment[0].partitions, [0, 2, 4]);
    assert_eq!(d.members[1].assignment, []);
    assert_eq!(d.members[1].target_assignment[0].partitions, [1, 3, 5]);
    let err = env.cg.describe("nope", &env.image).unwrap_err();
    assert_eq!(err.code(), ErrorCode::GROUP_ID_NOT_FOUND);
    assert_eq!(
        env.cg.list(),
        [ConsumerGroupListing {
            group_id: GROUP.into(),
            state: ConsumerGroupState::Reconciling
        }]
    );
    assert_eq!(ConsumerGroupState::Reconciling.as_str(), "Reconciling");

    let cg = &env.cg;
    cg.validate_offset_commit(GROUP, "a", 1, false, 9).unwrap();
    let code = |r: Result<(), ConsumerGroupError>| r.unwrap_err().code();
    assert_eq!(
        code(cg.validate_offset_commit(GROUP, "a", 0, false, 9)),
        ErrorCode::STALE_MEMBER_EPOCH
    );
    assert_eq!(
        code(cg.validate_offset_commit(GROUP, "a", 1, false, 8)),
        ErrorCode::UNSUPPORTED_VERSION
    );
    cg.validate_offset_commit(GROUP, "a", 1, true, 3).unwrap();
    assert_eq!(
        code(cg.validate_offset_commit(GROUP, "x", 1, false, 9)),
        ErrorCode::UNKNOWN_MEMBER_ID
    );
    assert_eq!(
        code(cg.validate_offset_commit(GROUP, "", -1, false, 9)),
        ErrorCode::UNKNOWN_MEMBER_ID
    );
    cg.validate_offset_fetch(GROUP, None, -1).unwrap();
    cg.validate_offset_fetch(GROUP, Some("b"), 2).unwrap();
    assert_eq!(
        code(cg.validate_offset_fetch(GROUP, Some("b"), 1)),
        ErrorCode::STALE_MEMBER_EPOCH
    );
    // An empty group takes commits without a member (admin tools).
    env.hb(HeartbeatRequest::new(GROUP, "b", -1)).unwrap();
    let mut leave = HeartbeatRequest::new(GROUP, "a", -1);
    leave.instance_id = Some("i-a".into());
    env.hb(leave).unwrap();
    env.cg
        .validate_offset_commit(GROUP, "", -1, false, 9)
        .unwrap();
}
