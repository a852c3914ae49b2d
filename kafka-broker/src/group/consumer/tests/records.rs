//! The records' bytes (known answers from the schemas), and decoding back.

use bytes::Bytes;

use super::*;
use crate::group::consumer::records as cgr;

fn rec(key: RecordKey, value: Option<RecordValue>) -> ConsumerGroupRecord {
    ConsumerGroupRecord { key, value }
}

#[test]
fn group_epoch_record_bytes_follow_the_schema() {
    let r = rec(
        RecordKey::GroupMetadata {
            group_id: "g".into(),
        },
        Some(RecordValue::GroupMetadata { epoch: 5 }),
    );
    let (key, value) = r.encode().unwrap();
    // Key: version 3 (the type), GroupId as an int16-length string (keys are not flexible).
    assert_eq!(&key[..], &[0, 3, 0, 1, b'g']);
    // Value: version 0, Epoch, no tagged fields (flexible).
    assert_eq!(&value.unwrap()[..], &[0, 0, 0, 0, 0, 5, 0]);
}

#[test]
fn current_assignment_record_bytes_follow_the_schema() {
    let r = rec(
        RecordKey::CurrentMemberAssignment {
            group_id: "g".into(),
            member_id: "m".into(),
        },
        Some(RecordValue::CurrentMemberAssignment(
            cgr::CurrentAssignment {
                member_epoch: 2,
                previous_member_epoch: 1,
                state: MemberState::UnrevokedPartitions,
                assigned: tp(&[(FOO, &[0])]),
                pending_revocation: TopicPartitions::new(),
            },
        )),
    );
    let (key, value) = r.encode().unwrap();
    assert_eq!(&key[..], &[0, 8, 0, 1, b'g', 0, 1, b'm']);
    let mut want = vec![0, 0, 0, 0, 0, 2, 0, 0, 0, 1, 1];
    want.push(2); // one topic (compact array: n + 1)
    want.extend([1u8; 16]);
    want.extend([2, 0, 0, 0, 0, 0]); // one partition (0), no tags
    want.extend([1, 0]); // no pending revocation, no tags
    assert_eq!(&value.unwrap()[..], &want[..]);
}

#[test]
fn every_record_type_round_trips_and_tombstones_have_no_value() {
    let member = |id: &str| {
        let mut m = ConsumerGroupMember::new(id);
        m.instance_id = Some("i".into());
        m.rack_id = Some("r".into());
        m.client_id = "c".into();
        m.client_host = "/h".into();
        m.subscribed_topic_names = BTreeSet::from(["foo".to_owned(), "bar".to_owned()]);
        m.subscribed_topic_regex = "x.*".into();
        m.rebalance_timeout_ms = 9;
        m.server_assignor = Some("range".into());
        m
    };
    let meta = cgr::TopicMetadata {
        id: FOO,
        name: "foo".into(),
        num_partitions: 3,
        racks: BTreeMap::from([(1, BTreeSet::from(["r1".to_owned(), "r2".to_owned()]))]),
    };
    let g = || "g".to_owned();
    let all = [
        rec(
            RecordKey::GroupMetadata { group_id: g() },
            Some(RecordValue::GroupMetadata { epoch: 3 }),
        ),
        rec(
            RecordKey::PartitionMetadata { group_id: g() },
            Some(RecordValue::PartitionMetadata(BTreeMap::from([(
                "foo".to_owned(),
                meta,
            )]))),
        ),
        rec(
            RecordKey::MemberMetadata {
                group_id: g(),
                member_id: "m".into(),
            },
            Some(RecordValue::MemberMetadata(cgr::MemberSubscription::of(
                &member("m"),
            ))),
        ),
        rec(
            RecordKey::TargetAssignmentMetadata { group_id: g() },
            Some(RecordValue::TargetAssignmentMetadata {
                assignment_epoch: 3,
            }),
        ),
        rec(
            RecordKey::TargetAssignmentMember {
                group_id: g(),
                member_id: "m".into(),
            },
            Some(RecordValue::TargetAssignmentMember(tp(&[
                (FOO, &[0, 2]),
                (BAR, &[1]),
            ]))),
        ),
        rec(
            RecordKey::CurrentMemberAssignment {
                group_id: g(),
                member_id: "m".into(),
            },
            Some(RecordValue::CurrentMemberAssignment(
                cgr::CurrentAssignment {
                    member_epoch: 3,
                    previous_member_epoch: 2,
                    state: MemberState::UnreleasedPartitions,
                    assigned: tp(&[(FOO, &[0])]),
                    pending_revocation: tp(&[(BAR, &[1, 2])]),
                },
            )),
        ),
    ];
    for r in all {
        let (key, value) = r.encode().unwrap();
        assert_eq!(i16::from_be_bytes([key[0], key[1]]), r.key.version());
        let value = value.unwrap();
        assert_eq!(&value[..2], &[0, 0]);
        assert_eq!(
            ConsumerGroupRecord::decode(&key, Some(&value))
                .unwrap()
                .unwrap(),
            r
        );
        let tomb = ConsumerGroupRecord::decode(&key, None).unwrap().unwrap();
        assert_eq!(tomb, rec(r.key.clone(), None));
        assert_eq!(tomb.encode().unwrap().1, None);
    }
}

#[test]
fn other_keys_are_left_to_the_caller_and_garbage_is_an_error() {
    // An OffsetCommitKey (version 1) and a classic GroupMetadataKey (version 2).
    let offset_key = Bytes::from_static(&[0, 1, 0, 1, b'g', 0, 1, b't', 0, 0, 0, 0]);
    assert!(
        ConsumerGroupRecord::decode(&offset_key, None)
            .unwrap()
            .is_none()
    );
    let classic = Bytes::from_static(&[0, 2, 0, 1, b'g']);
    assert!(
        ConsumerGroupRecord::decode(&classic, None)
            .unwrap()
            .is_none()
    );
    for bad in [
        &[][..],
        &[0, 3],
        &[0, 3, 0, 9, b'g'],
        &[0, 99, 0, 1, b'g'],
        &[0, 3, 0, 1, b'g', 0],
    ] {
        assert!(
            ConsumerGroupRecord::decode(&Bytes::copy_from_slice(bad), None).is_err(),
            "{bad:?}"
        );
    }
    let key = Bytes::from_static(&[0, 3, 0, 1, b'g']);
    for bad in [
        &[0, 0, 0][..],
        &[0, 1, 0, 0, 0, 5, 0],
        &[0, 0, 0, 0, 0, 5, 0, 7],
    ] {
        assert!(
            ConsumerGroupRecord::decode(&key, Some(&Bytes::copy_from_slice(bad))).is_err(),
            "{bad:?}"
        );
    }
}

#[test]
fn an_unknown_member_state_byte_is_unknown_and_such_a_member_must_rejoin_empty() {
    assert_eq!(MemberState::from_value(9), MemberState::Unknown);
    let mut env = Env::new();
    let a = env.join("a", &["foo"]).assignment.unwrap();
    // A record of a newer coordinator put a in a state this one does not know.
    let mut current = cgr::CurrentAssignment::of(env.member("a"));
    current.state = MemberState::Unknown;
    env.cg.replay(&rec(
        RecordKey::CurrentMemberAssignment {
            group_id: GROUP.into(),
            member_id: "a".into(),
        },
        Some(RecordValue::CurrentMemberAssignment(current)),
    ));
    let err = env.beat("a", 1, a).unwrap_err();
    assert_eq!(
        err.code(),
        kafka_protocol::error_code::ErrorCode::FENCED_MEMBER_EPOCH
    );
    let r = env.beat("a", 1, TopicPartitions::new()).unwrap();
    assert_eq!(r.member_epoch, 1);
    assert_eq!(env.member("a").state, MemberState::Stable);
}

#[test]
fn replaying_tombstones_of_unknown_groups_and_members_is_harmless() {
    let mut cg = ConsumerGroups::new(Env::new().cg.config().clone(), MemberIdGen::new(1));
    cg.replay(&rec(
        RecordKey::GroupMetadata {
            group_id: "x".into(),
        },
        None,
    ));
    cg.replay(&rec(
        RecordKey::MemberMetadata {
            group_id: "x".into(),
            member_id: "m".into(),
        },
        None,
    ));
    assert!(cg.group("x").is_none());
    cg.replay(&rec(
        RecordKey::GroupMetadata {
            group_id: "x".into(),
        },
        Some(RecordValue::GroupMetadata { epoch: 4 }),
    ));
    cg.replay(&rec(
        RecordKey::CurrentMemberAssignment {
            group_id: "x".into(),
            member_id: "m".into(),
        },
        None,
    ));
    assert_eq!(cg.group("x").unwrap().group_epoch(), 4);
    assert!(cg.group("x").unwrap().members().is_empty());
}
