//! Static membership (`group.instance.id`): restarts without a rebalance, fencing, static
//! members kept through a rebalance they miss.

use super::*;

const G: &str = "static";

fn static_join(member: &str, instance: &str, protocols: &[(&str, &[&str])]) -> JoinRequest {
    let mut req = join_req(G, member, instance, protocols);
    req.group_instance_id = Some(instance.into());
    req
}

fn hb(h: &mut H, member: &str, instance: &str, generation: i32) -> ErrorCode {
    let req = HeartbeatRequest {
        group_id: G.into(),
        generation_id: generation,
        member_id: member.into(),
        group_instance_id: Some(instance.into()),
    };
    h.m.heartbeat(&req, h.now)
}

/// A stable group of static members `pod-0..n` over `parts`.
fn stable(h: &mut H, n: usize, parts: &BTreeMap<String, i32>) -> Vec<JoinResponse> {
    let ids: Vec<RequestId> = (0..n)
        .map(|i| h.join(static_join("", &format!("pod-{i}"), &[("range", &["t"])])))
        .collect();
    let answers = h.answers(&ids);
    h.sync_all(G, &answers, parts);
    assert_eq!(h.group(G).state(), GroupState::Stable);
    answers
}

#[test]
fn restart_within_the_session_timeout_causes_no_rebalance() {
    let mut h = H::new();
    let parts = topics(&[("t", 4)]);
    let old = stable(&mut h, 2, &parts);
    let before = h.group(G).members()[0].assignment().clone();
    h.records.clear();

    h.advance(3_000);
    let id = h.join(static_join("", "pod-0", &[("range", &["t"])]));
    let r = h.join_answer(id);
    assert_eq!((r.error, r.generation_id), (ErrorCode::NONE, 1));
    assert_ne!(r.member_id, old[0].member_id);
    // Told the previous leader id, so it does not run an assignment.
    assert_eq!(r.leader, old[0].member_id);
    assert!(r.members.is_empty() && !r.skip_assignment);
    assert_eq!(h.group(G).state(), GroupState::Stable);
    assert_eq!(h.group(G).generation(), 1);
    assert_eq!(
        h.group(G).leader(),
        Some(r.member_id.as_str()),
        "leadership moves along"
    );
    // The new member id is what Kafka would persist.
    assert!(matches!(
        h.records.last().and_then(|rec| rec.value.as_ref()),
        Some(RecordValue::GroupMetadata(v)) if v.members.iter().any(|m| m.member_id == r.member_id)
    ));

    // The old incarnation is fenced everywhere.
    assert_eq!(
        hb(&mut h, &old[0].member_id, "pod-0", 1),
        ErrorCode::FENCED_INSTANCE_ID
    );
    let id = h.join(static_join(
        &old[0].member_id,
        "pod-0",
        &[("range", &["t"])],
    ));
    assert_eq!(h.join_answer(id).error, ErrorCode::FENCED_INSTANCE_ID);
    let id = h.sync(SyncRequest {
        group_id: G.into(),
        generation_id: 1,
        member_id: old[0].member_id.clone(),
        group_instance_id: Some("pod-0".into()),
        protocol_type: None,
        protocol_name: None,
        assignments: Vec::new(),
    });
    assert_eq!(h.sync_answer(id).error, ErrorCode::FENCED_INSTANCE_ID);

    // The new one carries on with the old assignment.
    assert_eq!(hb(&mut h, &r.member_id, "pod-0", 1), ErrorCode::NONE);
    let id = h.sync(SyncRequest {
        group_id: G.into(),
        generation_id: 1,
        member_id: r.member_id.clone(),
        group_instance_id: Some("pod-0".into()),
        protocol_type: Some("consumer".into()),
        protocol_name: Some("range".into()),
        assignments: Vec::new(),
    });
    let s = h.sync_answer(id);
    assert_eq!(s.error, ErrorCode::NONE);
    assert_eq!(s.assignment, before);
    assert_eq!(hb(&mut h, &old[1].member_id, "pod-1", 1), ErrorCode::NONE);
}

#[test]
fn restarted_static_leader_is_told_to_skip_assignment_on_v9() {
    let mut h = H::new();
    let parts = topics(&[("t", 2)]);
    stable(&mut h, 2, &parts);
    let mut req = static_join("", "pod-0", &[("range", &["t"])]);
    req.supports_skip_assignment = true;
    let id = h.join(req);
    let r = h.join_answer(id);
    assert!(r.skip_assignment);
    assert_eq!(r.leader, r.member_id);
    assert_eq!(r.members.len(), 2);
    assert_eq!(h.group(G).generation(), 1);
    // A follower restarting on v9 is not the leader: nothing to skip.
    let mut req = static_join("", "pod-1", &[("range", &["t"])]);
    req.supports_skip_assignment = true;
    let id = h.join(req);
    let r = h.join_answer(id);
    assert!(!r.skip_assignment && r.members.is_empty());
}

#[test]
fn restart_that_changes_the_protocol_rebalances() {
    let mut h = H::new();
    let parts = topics(&[("t", 2)]);
    let both: &[(&str, &[&str])] = &[("range", &["t"]), ("roundrobin", &["t"])];
    let ids: Vec<RequestId> = (0..2)
        .map(|i| h.join(static_join("", &format!("pod-{i}"), both)))
        .collect();
    let answers = h.answers(&ids);
    h.sync_all(G, &answers, &parts);
    assert_eq!(h.group(G).protocol_name(), Some("range"));
    // The leader comes back preferring roundrobin: the vote ties, the leader's choice wins.
    let id = h.join(static_join(
        "",
        "pod-0",
        &[("roundrobin", &["t"]), ("range", &["t"])],
    ));
    assert!(h.joined(id).is_none());
    assert_eq!(h.group(G).state(), GroupState::PreparingRebalance);
}

#[test]
fn static_member_missing_a_rebalance_is_kept_until_it_fails_to_sync() {
    let mut h = H::new();
    let parts = topics(&[("t", 6)]);
    let old = stable(&mut h, 2, &parts);
    let c = h.join_new(G, "dynamic", &["t"]);
    let a = h.join(static_join(
        &old[0].member_id,
        "pod-0",
        &[("range", &["t"])],
    ));
    // pod-1 is silent.
    h.advance(i64::from(REBALANCE));
    let (ja, jc) = (h.join_answer(a), h.join_answer(c));
    assert_eq!(ja.generation_id, 2);
    assert!(
        h.group(G).member(&old[1].member_id).is_some(),
        "static members are not dropped"
    );
    assert_eq!(ja.members.len(), 3, "the leader assigns to it too");
    h.sync_all(G, &[ja, jc], &parts);
    assert_exact_cover(h.group(G), &parts);
    // But it never syncs: removed after the rebalance timeout, and the group rebalances.
    h.advance(i64::from(REBALANCE));
    assert!(h.group(G).member(&old[1].member_id).is_none());
    assert_eq!(h.group(G).state(), GroupState::PreparingRebalance);
}

#[test]
fn a_static_leader_that_misses_the_rebalance_loses_leadership() {
    let mut h = H::new();
    let parts = topics(&[("t", 2)]);
    let old = stable(&mut h, 2, &parts);
    assert_eq!(old[0].leader, old[0].member_id);
    let c = h.join_new(G, "dynamic", &["t"]);
    let b = h.join(static_join(
        &old[1].member_id,
        "pod-1",
        &[("range", &["t"])],
    ));
    h.advance(i64::from(REBALANCE));
    let (jb, jc) = (h.join_answer(b), h.join_answer(c));
    assert_eq!(jb.leader, old[1].member_id);
    assert_eq!(jc.leader, old[1].member_id);
    assert_eq!(jb.members.len(), 3);
}

#[test]
fn restart_during_a_rebalance_fences_the_old_join_and_answers_at_completion() {
    let mut h = H::new();
    let parts = topics(&[("t", 2)]);
    let old = stable(&mut h, 2, &parts);
    h.join_new(G, "dynamic", &["t"]);
    let stale = h.join(static_join(
        &old[0].member_id,
        "pod-0",
        &[("range", &["t"])],
    ));
    let fresh = h.join(static_join("", "pod-0", &[("range", &["t"])]));
    assert_eq!(h.join_answer(stale).error, ErrorCode::FENCED_INSTANCE_ID);
    assert!(h.joined(fresh).is_none());
    h.join(static_join(
        &old[1].member_id,
        "pod-1",
        &[("range", &["t"])],
    ));
    let r = h.join_answer(fresh);
    assert_eq!((r.error, r.generation_id), (ErrorCode::NONE, 2));
    assert_eq!(r.leader, r.member_id, "it took over the leader's place");
}

#[test]
fn leave_by_instance_id_and_unknown_instances() {
    let mut h = H::new();
    let parts = topics(&[("t", 2)]);
    let old = stable(&mut h, 2, &parts);
    let id = h.join(static_join("someone", "pod-9", &[("range", &["t"])]));
    assert_eq!(h.join_answer(id).error, ErrorCode::UNKNOWN_MEMBER_ID);
    assert_eq!(
        hb(&mut h, &old[1].member_id, "pod-9", 1),
        ErrorCode::UNKNOWN_MEMBER_ID
    );
    let r = h.m.leave(
        G,
        &[LeavingMember {
            member_id: String::new(),
            group_instance_id: Some("pod-1".into()),
        }],
        h.now,
    );
    assert_eq!(r.members[0].1, ErrorCode::NONE);
    assert!(h.group(G).member(&old[1].member_id).is_none());
    // A member id that does not match its instance id is fenced.
    let r = h.m.leave(
        G,
        &[LeavingMember {
            member_id: "impostor".into(),
            group_instance_id: Some("pod-0".into()),
        }],
        h.now,
    );
    assert_eq!(r.members[0].1, ErrorCode::FENCED_INSTANCE_ID);
}

#[test]
fn expired_static_member_is_removed_and_its_restart_rebalances() {
    let mut h = H::new();
    let parts = topics(&[("t", 2)]);
    let old = stable(&mut h, 2, &parts);
    for _ in 0..9 {
        h.advance(1_000);
        assert_eq!(hb(&mut h, &old[1].member_id, "pod-1", 1), ErrorCode::NONE);
    }
    h.advance(1_000);
    assert!(
        h.group(G).member(&old[0].member_id).is_none(),
        "session expired"
    );
    let id = h.join(static_join("", "pod-0", &[("range", &["t"])]));
    assert!(h.joined(id).is_none(), "a new member: rebalance");
    assert_eq!(h.group(G).state(), GroupState::PreparingRebalance);
}
