//! Session expiry, rebalance timeouts and static members.

use kafka_protocol::error_code::ErrorCode;

use super::*;

#[test]
fn a_member_not_heard_from_for_the_session_timeout_is_removed() {
    let mut env = Env::new();
    let a = env.join("a", &["foo"]).assignment.unwrap();
    assert_eq!(env.cg.poll_timeout(), Some(env.now + SESSION_MS));
    env.advance(20_000);
    env.join("b", &["foo"]);
    env.take();
    // a heartbeats (revoking) and keeps doing so; b stops.
    env.beat("a", 1, a).unwrap();
    env.beat("a", 1, tp(&[(FOO, &[0, 2, 4])])).unwrap();
    env.advance(SESSION_MS - 1);
    assert!(env.group().member("b").is_some());
    env.beat("a", 2, tp(&[(FOO, &[0, 2, 4])])).unwrap();
    env.take();
    env.advance(1);
    assert!(env.group().member("b").is_none());
    assert_eq!(
        kinds(&env.take()),
        ["-Current(b)", "-Target(b)", "-Member(b)", "Epoch"]
    );
    assert_eq!(env.group().group_epoch(), 3);
    let r = env.beat("a", 2, tp(&[(FOO, &[0, 2, 4])])).unwrap();
    assert_eq!(r.member_epoch, 3);
    assert_eq!(r.assignment, Some(tp(&[(FOO, &[0, 1, 2, 3, 4, 5])])));
    // b comes back: unknown.
    let err = env.beat("b", 2, TopicPartitions::new()).unwrap_err();
    assert_eq!(err.code(), ErrorCode::UNKNOWN_MEMBER_ID);
    env.check_replay();
}

#[test]
fn a_member_that_does_not_revoke_within_its_rebalance_timeout_is_fenced() {
    let mut env = Env::new();
    let a = env.join("a", &["foo"]).assignment.unwrap();
    env.join("b", &["foo"]);
    env.beat("a", 1, a.clone()).unwrap();
    assert_eq!(env.member("a").state, MemberState::UnrevokedPartitions);
    // a keeps heartbeating (its session stays alive) but never revokes.
    for _ in 0..5 {
        env.advance(5_000);
        env.beat("a", 1, a.clone()).unwrap();
        env.beat("b", 2, TopicPartitions::new()).unwrap();
    }
    assert!(env.group().member("a").is_some());
    env.advance(i64::from(REBALANCE_MS) - 25_000);
    assert!(env.group().member("a").is_none());
    let err = env.beat("a", 1, a).unwrap_err();
    assert_eq!(err.code(), ErrorCode::UNKNOWN_MEMBER_ID);
    // b gets everything.
    let r = env.beat("b", 2, TopicPartitions::new()).unwrap();
    assert_eq!(r.assignment, Some(tp(&[(FOO, &[0, 1, 2, 3, 4, 5])])));
    env.check_replay();
}

#[test]
fn a_member_that_revokes_in_time_is_not_fenced_later() {
    let mut env = Env::new();
    let a = env.join("a", &["foo"]).assignment.unwrap();
    env.join("b", &["foo"]);
    env.beat("a", 1, a).unwrap();
    env.advance(10_000);
    env.beat("a", 1, tp(&[(FOO, &[0, 2, 4])])).unwrap();
    for _ in 0..8 {
        env.advance(5_000);
        env.beat("a", 2, tp(&[(FOO, &[0, 2, 4])])).unwrap();
        env.beat("b", 2, TopicPartitions::new()).ok();
    }
    assert!(env.group().member("a").is_some());
}

fn static_join(member: &str, instance: &str) -> HeartbeatRequest {
    let mut req = Env::join_req(member, &["foo"]);
    req.instance_id = Some(instance.into());
    req
}

#[test]
fn a_static_member_leaving_with_minus_two_keeps_its_partitions_for_its_replacement() {
    let mut env = Env::new();
    let a = env
        .hb(static_join("a1", "i-a"))
        .unwrap()
        .assignment
        .unwrap();
    env.join("b", &["foo"]);
    env.beat("a1", 1, a).unwrap();
    env.beat("a1", 1, tp(&[(FOO, &[0, 2, 4])])).unwrap();
    env.beat("b", 2, TopicPartitions::new()).unwrap();
    env.take();

    // a1 leaves for a while: one record, epoch -2, nothing else changes.
    let mut leave = HeartbeatRequest::new(GROUP, "a1", -2);
    leave.instance_id = Some("i-a".into());
    let r = env.hb(leave).unwrap();
    assert_eq!((r.member_id.as_str(), r.member_epoch), ("a1", -2));
    assert_eq!(kinds(&env.take()), ["Current(a1)"]);
    assert_eq!(env.group().group_epoch(), 2);
    assert_eq!(env.group().partition_epoch(FOO, 0), -2);
    // b cannot get a1's partitions meanwhile.
    env.beat("b", 2, tp(&[(FOO, &[1, 3, 5])])).unwrap();
    assert_eq!(env.member("b").assigned, tp(&[(FOO, &[1, 3, 5])]));

    // Its replacement (a new member id) takes its place and its partitions at once.
    env.advance(10_000);
    let r = env.hb(static_join("a2", "i-a")).unwrap();
    assert_eq!(r.member_id, "a2");
    assert_eq!(r.member_epoch, 2);
    assert_eq!(r.assignment, Some(tp(&[(FOO, &[0, 2, 4])])));
    assert_eq!(
        kinds(&env.take()),
        [
            "-Current(a1)",
            "-Target(a1)",
            "-Member(a1)",
            "Member(a2)",
            "Target(a2)",
            "Current(a2)",
            "Current(a2)"
        ]
    );
    assert!(env.group().member("a1").is_none());
    assert_eq!(env.group().static_member("i-a").unwrap().member_id, "a2");
    assert_eq!(env.group().group_epoch(), 2);
    // The old member's session timer went with it: a2 and b live on.
    for _ in 0..12 {
        env.advance(5_000);
        env.beat("a2", 2, tp(&[(FOO, &[0, 2, 4])])).unwrap();
        env.beat("b", 2, tp(&[(FOO, &[1, 3, 5])])).unwrap();
    }
    assert_eq!(env.group().members().len(), 2);
    env.check_replay();
}

#[test]
fn an_instance_id_still_held_is_unreleased_and_a_stranger_with_it_is_fenced() {
    let mut env = Env::new();
    env.hb(static_join("a1", "i-a")).unwrap();
    env.take();
    let err = env.hb(static_join("a2", "i-a")).unwrap_err();
    assert_eq!(err.code(), ErrorCode::UNRELEASED_INSTANCE_ID);
    assert!(env.take().is_empty());
    // A heartbeat of another member id with the instance id: fenced instance.
    let mut req = HeartbeatRequest::new(GROUP, "a2", 1);
    req.instance_id = Some("i-a".into());
    assert_eq!(
        env.hb(req).unwrap_err().code(),
        ErrorCode::FENCED_INSTANCE_ID
    );
    let mut leave = HeartbeatRequest::new(GROUP, "a2", -2);
    leave.instance_id = Some("i-a".into());
    assert_eq!(
        env.hb(leave).unwrap_err().code(),
        ErrorCode::FENCED_INSTANCE_ID
    );
    let mut leave = HeartbeatRequest::new(GROUP, "a1", -2);
    leave.instance_id = Some("i-other".into());
    assert_eq!(
        env.hb(leave).unwrap_err().code(),
        ErrorCode::UNKNOWN_MEMBER_ID
    );
    // Leaving for good with -1 frees the instance id at once.
    let mut leave = HeartbeatRequest::new(GROUP, "a1", -1);
    leave.instance_id = Some("i-a".into());
    env.hb(leave).unwrap();
    assert!(env.group().static_member("i-a").is_none());
    let r = env.hb(static_join("a2", "i-a")).unwrap();
    assert_eq!(r.member_epoch, 3);
}

#[test]
fn a_static_member_not_replaced_within_the_session_timeout_is_removed() {
    let mut env = Env::new();
    env.hb(static_join("a1", "i-a")).unwrap();
    env.advance(5_000);
    env.beat("a1", 1, tp(&[(FOO, &[0, 1, 2, 3, 4, 5])]))
        .unwrap();
    let mut leave = HeartbeatRequest::new(GROUP, "a1", -2);
    leave.instance_id = Some("i-a".into());
    env.hb(leave).unwrap();
    // The session counts from the last heartbeat (the leave does not restart it).
    env.advance(SESSION_MS - 1);
    assert!(env.group().member("a1").is_some());
    env.advance(1);
    assert!(env.group().member("a1").is_none());
    assert_eq!(env.group().state(), ConsumerGroupState::Empty);
    // The replacement is a new member now.
    let r = env.hb(static_join("a2", "i-a")).unwrap();
    assert_eq!(r.member_epoch, 3);
    env.check_replay();
}

#[test]
fn loading_restarts_sessions_and_rebalance_timeouts() {
    let mut env = Env::new();
    let a = env.join("a", &["foo"]).assignment.unwrap();
    env.join("b", &["foo"]);
    env.beat("a", 1, a).unwrap();
    let mut rebuilt = ConsumerGroups::new(env.cg.config().clone(), MemberIdGen::new(1));
    for r in &env.log {
        rebuilt.replay(r);
    }
    assert_eq!(rebuilt.poll_timeout(), None);
    let now = env.now + 100_000;
    // Another partition's load leaves these groups alone.
    let other = (crate::coordinator::partition_for(GROUP, 50) + 1) % 50;
    rebuilt.on_loaded(Some(other), &env.image, now);
    assert_eq!(rebuilt.poll_timeout(), None);
    rebuilt.on_loaded(
        Some(crate::coordinator::partition_for(GROUP, 50)),
        &env.image,
        now,
    );
    assert_eq!(rebuilt.poll_timeout(), Some(now + i64::from(REBALANCE_MS)));
    rebuilt.handle_timeout(now + i64::from(REBALANCE_MS));
    assert!(rebuilt.group(GROUP).unwrap().member("a").is_none());
    // Unloading forgets the group and its timers.
    rebuilt.unload(crate::coordinator::partition_for(GROUP, 50));
    assert!(rebuilt.group(GROUP).is_none());
    assert_eq!(rebuilt.poll_timeout(), None);
}
