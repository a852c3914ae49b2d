//! OffsetCommit, OffsetFetch, OffsetDelete and offset expiry.

use super::*;

fn commit(group: &str, generation: i32, member: &str, parts: &[(&str, i32, i64)]) -> CommitRequest {
    CommitRequest {
        group_id: group.into(),
        generation_id: generation,
        member_id: member.into(),
        group_instance_id: None,
        retention_ms: None,
        partitions: parts
            .iter()
            .map(|(t, p, o)| CommitPartition {
                topic: (*t).into(),
                partition: *p,
                offset: *o,
                leader_epoch: -1,
                metadata: Some(format!("at {o}")),
                commit_timestamp: None,
            })
            .collect(),
    }
}

fn fetch_one(h: &H, group: &str, topic: &str, partition: i32) -> FetchedOffset {
    let asked = [(topic.to_owned(), vec![partition])];
    h.m.fetch_offsets(group, Some(&asked), false).remove(0)
}

#[test]
fn simple_commits_need_no_group_membership() {
    let mut h = H::new();
    let errors = h.m.commit_offsets(
        &commit("assigner", -1, "", &[("t", 0, 42), ("t", 1, 7)]),
        h.now,
    );
    assert_eq!(errors, [ErrorCode::NONE, ErrorCode::NONE]);
    let g = h.group("assigner");
    assert_eq!((g.state(), g.protocol_type()), (GroupState::Empty, None));
    let f = fetch_one(&h, "assigner", "t", 0);
    assert_eq!(
        (f.offset, f.metadata.as_str(), f.error),
        (42, "at 42", ErrorCode::NONE)
    );
    let stored = h.m.offsets().get("assigner", "t", 0).unwrap();
    assert_eq!(stored.commit_timestamp, h.now);
    assert_eq!(stored.expire_timestamp, None);
    // Null metadata is kept as "".
    let mut req = commit("assigner", -1, "", &[("t", 0, 43)]);
    req.partitions[0].metadata = None;
    h.m.commit_offsets(&req, h.now);
    assert_eq!(fetch_one(&h, "assigner", "t", 0).metadata, "");
    // A generation for a group that does not exist: a member of a group that is gone.
    let errors =
        h.m.commit_offsets(&commit("gone", 3, "m", &[("t", 0, 1)]), h.now);
    assert_eq!(errors, [ErrorCode::ILLEGAL_GENERATION]);
    assert!(h.m.group("gone").is_none());
}

#[test]
fn group_commits_are_checked_against_membership_and_generation() {
    let mut h = H::new();
    let parts = topics(&[("t", 2)]);
    let old = h.stable_group("g", &["a", "b"], &parts);
    let a = old[0].member_id.as_str();
    let ok =
        h.m.commit_offsets(&commit("g", 1, a, &[("t", 0, 10)]), h.now);
    assert_eq!(ok, [ErrorCode::NONE]);
    for (generation, member, error) in [
        (0, a, ErrorCode::ILLEGAL_GENERATION),
        (1, "stranger", ErrorCode::UNKNOWN_MEMBER_ID),
        // A simple commit into a group that has members.
        (-1, "", ErrorCode::UNKNOWN_MEMBER_ID),
    ] {
        let e =
            h.m.commit_offsets(&commit("g", generation, member, &[("t", 0, 99)]), h.now);
        assert_eq!(e, [error], "generation {generation} member {member:?}");
    }
    assert_eq!(fetch_one(&h, "g", "t", 0).offset, 10);

    // Commits are accepted while preparing a rebalance...
    h.join_new("g", "c", &["t"]);
    let e =
        h.m.commit_offsets(&commit("g", 1, a, &[("t", 1, 11)]), h.now);
    assert_eq!(e, [ErrorCode::NONE]);
    // ...but not between the join answer and the assignment.
    let ra = h.join(rejoin("g", &old[0], "a", &["t"]));
    h.join(rejoin("g", &old[1], "b", &["t"]));
    let ja = h.join_answer(ra);
    assert_eq!(h.group("g").state(), GroupState::CompletingRebalance);
    let e =
        h.m.commit_offsets(&commit("g", ja.generation_id, a, &[("t", 1, 12)]), h.now);
    assert_eq!(e, [ErrorCode::REBALANCE_IN_PROGRESS]);
}

#[test]
fn static_member_commits_are_fenced_after_a_restart() {
    let mut h = H::new();
    let mut first = join_req("g", "", "pod-0", &[("range", &["t"])]);
    first.group_instance_id = Some("pod-0".into());
    let id = h.join(first.clone());
    h.advance(100);
    let old = h.join_answer(id);
    h.sync_all("g", std::slice::from_ref(&old), &topics(&[("t", 1)]));
    let id = h.join(first);
    let new = h.join_answer(id);
    let mut req = commit("g", 1, &old.member_id, &[("t", 0, 5)]);
    req.group_instance_id = Some("pod-0".into());
    assert_eq!(
        h.m.commit_offsets(&req, h.now),
        [ErrorCode::FENCED_INSTANCE_ID]
    );
    req.member_id = new.member_id;
    assert_eq!(h.m.commit_offsets(&req, h.now), [ErrorCode::NONE]);
}

#[test]
fn metadata_size_limit_and_commit_details() {
    let mut config = config();
    config.offset_metadata_max_bytes = 8;
    let mut h = H::with(config);
    let mut req = commit("s", -1, "", &[("t", 0, 1), ("t", 1, 2)]);
    req.partitions[0].metadata = Some("123456789".into());
    req.partitions[1].leader_epoch = 5;
    req.partitions[1].commit_timestamp = Some(1234);
    req.retention_ms = Some(60_000);
    let e = h.m.commit_offsets(&req, h.now);
    assert_eq!(e, [ErrorCode::OFFSET_METADATA_TOO_LARGE, ErrorCode::NONE]);
    assert_eq!(fetch_one(&h, "s", "t", 0).offset, -1);
    let stored = h.m.offsets().get("s", "t", 1).unwrap();
    assert_eq!(stored.leader_epoch, 5);
    assert_eq!(stored.commit_timestamp, 1234);
    assert_eq!(stored.expire_timestamp, Some(h.now + 60_000));
    assert_eq!(fetch_one(&h, "s", "t", 1).leader_epoch, 5);
}

#[test]
fn fetching_unknown_partitions_and_groups() {
    let mut h = H::new();
    h.m.commit_offsets(&commit("s", -1, "", &[("t", 0, 5), ("u", 3, 9)]), h.now);
    let f = fetch_one(&h, "s", "t", 1);
    assert_eq!(
        (f.offset, f.leader_epoch, f.metadata.as_str(), f.error),
        (-1, -1, "", ErrorCode::NONE)
    );
    let f = fetch_one(&h, "never-heard-of", "t", 0);
    assert_eq!((f.offset, f.error), (-1, ErrorCode::NONE));
    // All committed partitions, sorted.
    let all: Vec<(String, i32, i64)> =
        h.m.fetch_offsets("s", None, true)
            .into_iter()
            .map(|f| (f.topic, f.partition, f.offset))
            .collect();
    assert_eq!(all, [("t".to_owned(), 0, 5), ("u".to_owned(), 3, 9)]);
    assert!(h.m.fetch_offsets("never-heard-of", None, false).is_empty());
}

#[test]
fn offset_delete_refuses_topics_a_stable_group_consumes() {
    let mut h = H::new();
    let parts = topics(&[("t", 2)]);
    let old = h.stable_group("g", &["a"], &parts);
    let a = old[0].member_id.as_str();
    h.m.commit_offsets(
        &commit("g", 1, a, &[("t", 0, 1), ("old-topic", 0, 2)]),
        h.now,
    );
    let _ = h.m.take_records();
    let asked = [
        ("t".to_owned(), 0),
        ("old-topic".to_owned(), 0),
        ("never".to_owned(), 0),
    ];
    let errors = h.m.delete_offsets("g", &asked).unwrap();
    assert_eq!(
        errors,
        [
            ErrorCode::GROUP_SUBSCRIBED_TO_TOPIC,
            ErrorCode::NONE,
            ErrorCode::NONE
        ]
    );
    assert_eq!(fetch_one(&h, "g", "old-topic", 0).offset, -1);
    assert_eq!(fetch_one(&h, "g", "t", 0).offset, 1);
    assert_eq!(
        h.m.take_records(),
        [OffsetsRecord::offset_tombstone("g", "old-topic", 0)]
    );
    // Once the group is empty, anything goes.
    h.leave("g", a);
    assert_eq!(
        h.m.delete_offsets("g", &asked[..1]).unwrap(),
        [ErrorCode::NONE]
    );
    assert_eq!(fetch_one(&h, "g", "t", 0).offset, -1);
    assert_eq!(
        h.m.delete_offsets("nope", &asked),
        Err(ErrorCode::GROUP_ID_NOT_FOUND)
    );
}

#[test]
fn offset_delete_in_a_non_consumer_group_needs_it_empty() {
    let mut h = H::new();
    let mut req = join_req("connect", "", "w", &[("default", &[])]);
    req.protocol_type = "connect".into();
    h.join(req);
    h.advance(100);
    let asked = [("t".to_owned(), 0)];
    assert_eq!(
        h.m.delete_offsets("connect", &asked),
        Err(ErrorCode::NON_EMPTY_GROUP)
    );
}

#[test]
fn deleting_a_group_deletes_its_offsets() {
    let mut h = H::new();
    h.m.commit_offsets(&commit("s", -1, "", &[("t", 0, 5), ("t", 1, 6)]), h.now);
    let _ = h.m.take_records();
    assert_eq!(h.m.delete_groups(&["s".to_owned()]), [ErrorCode::NONE]);
    assert!(h.m.fetch_offsets("s", None, false).is_empty());
    assert_eq!(
        h.m.take_records(),
        [
            OffsetsRecord::offset_tombstone("s", "t", 0),
            OffsetsRecord::offset_tombstone("s", "t", 1),
            OffsetsRecord::group_tombstone("s"),
        ]
    );
}

#[test]
fn offsets_expire_by_kafkas_rules() {
    let mut config = config();
    config.offsets_retention_ms = 100_000;
    let mut h = H::with(config);
    let parts = topics(&[("t", 1)]);
    // A simple consumer: counted from each commit.
    h.m.commit_offsets(&commit("simple", -1, "", &[("t", 0, 1)]), h.now);
    // A stable consumer group: only topics it no longer subscribes to expire.
    let old = h.stable_group("live", &["a"], &parts);
    let a = old[0].member_id.clone();
    h.m.commit_offsets(
        &commit("live", 1, &a, &[("t", 0, 1), ("gone", 0, 1)]),
        h.now,
    );
    // A group that became empty: counted from when it did.
    let e = h.stable_group("emptied", &["b"], &parts);
    let b = e[0].member_id.clone();
    h.m.commit_offsets(&commit("emptied", 1, &b, &[("t", 0, 1)]), h.now);
    for i in 0..100 {
        h.advance(1_000);
        assert_eq!(h.heartbeat("live", &a, 1), ErrorCode::NONE);
        if i < 50 {
            h.heartbeat("emptied", &b, 1);
        } else if i == 50 {
            h.leave("emptied", &b);
        }
    }
    assert_eq!(h.m.expire_offsets(h.now), 2, "simple t-0 and live gone-0");
    assert!(
        h.m.group("simple").is_none(),
        "empty and without offsets: removed"
    );
    assert_eq!(fetch_one(&h, "live", "t", 0).offset, 1);
    assert_eq!(fetch_one(&h, "live", "gone", 0).offset, -1);
    assert_eq!(
        fetch_one(&h, "emptied", "t", 0).offset,
        1,
        "empty for 49 s only"
    );
    // live's member stops too; its group has been empty for less than the retention.
    h.advance(52_000);
    assert_eq!(h.m.expire_offsets(h.now), 1);
    assert!(h.m.group("emptied").is_none());
    assert_eq!(fetch_one(&h, "live", "t", 0).offset, 1);
    let mut records = std::mem::take(&mut h.records);
    records.extend(h.m.take_records());
    assert!(records.contains(&OffsetsRecord::group_tombstone("simple")));
    assert!(records.contains(&OffsetsRecord::group_tombstone("emptied")));
    assert!(records.contains(&OffsetsRecord::offset_tombstone("live", "gone", 0)));
}
