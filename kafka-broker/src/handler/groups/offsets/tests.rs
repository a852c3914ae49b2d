//! OffsetCommit, TxnOffsetCommit and OffsetFetch at every version they support.
#![allow(clippy::unwrap_used)]

use kafka_protocol::KStr;
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics,
};

use super::super::test_support::{
    AllowAll, Granted, commit_request, coordinator, roundtrip, topics,
};
use super::*;

#[test]
fn offset_commit_and_fetch_every_version() {
    let c = coordinator();
    for v in 0..=9i16 {
        let group = format!("simple-{v}");
        let body = futures::executor::block_on(offset_commit(
            &c,
            &AllowAll,
            &topics,
            commit_request(v, &group, 100 + i64::from(v)),
            v,
        ));
        let ResponseBody::OffsetCommit(r) = roundtrip(&body, v) else {
            panic!()
        };
        let codes: Vec<Vec<i16>> = r
            .topics
            .iter()
            .map(|t| t.partitions.iter().map(|p| p.error_code).collect())
            .collect();
        let unknown = ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.0;
        assert_eq!(codes, vec![vec![0, unknown], vec![unknown]], "v{v}");
    }
    for v in 0..=9i16 {
        for committed_by in [0i16, 6, 9] {
            let group = format!("simple-{committed_by}");
            let offset = 100 + i64::from(committed_by);
            let req = if v >= 8 {
                OffsetFetchRequest {
                    groups: vec![
                        OffsetFetchRequestGroup {
                            group_id: KStr::from(group.clone()),
                            topics: Some(vec![OffsetFetchRequestTopics {
                                name: KStr::from("orders"),
                                partition_indexes: vec![0, 2],
                                ..Default::default()
                            }]),
                            ..Default::default()
                        },
                        OffsetFetchRequestGroup {
                            group_id: KStr::from(group.clone()),
                            topics: None,
                            ..Default::default()
                        },
                    ],
                    require_stable: true,
                    ..Default::default()
                }
            } else {
                OffsetFetchRequest {
                    group_id: KStr::from(group.clone()),
                    topics: Some(vec![OffsetFetchRequestTopic {
                        name: KStr::from("orders"),
                        partition_indexes: vec![0, 2],
                        ..Default::default()
                    }]),
                    require_stable: v >= 7,
                    ..Default::default()
                }
            };
            let ResponseBody::OffsetFetch(r) = roundtrip(&offset_fetch(&c, &AllowAll, req, v), v)
            else {
                panic!()
            };
            let parts: Vec<(i32, i64, i32, Option<String>)> = if v >= 8 {
                assert_eq!(r.groups.len(), 2);
                // The second group asked for everything: just the one committed partition.
                let all = &r.groups[1].topics;
                assert_eq!(all.len(), 1);
                assert_eq!(all[0].partitions.len(), 1);
                assert_eq!(all[0].partitions[0].committed_offset, offset);
                r.groups[0].topics[0]
                    .partitions
                    .iter()
                    .map(|p| {
                        let m = p.metadata.as_ref().map(|m| m.to_string());
                        (
                            p.partition_index,
                            p.committed_offset,
                            p.committed_leader_epoch,
                            m,
                        )
                    })
                    .collect()
            } else {
                r.topics[0]
                    .partitions
                    .iter()
                    .map(|p| {
                        let m = p.metadata.as_ref().map(|m| m.to_string());
                        (
                            p.partition_index,
                            p.committed_offset,
                            p.committed_leader_epoch,
                            m,
                        )
                    })
                    .collect()
            };
            let epoch = if v >= 5 && committed_by >= 6 { 4 } else { -1 };
            assert_eq!(
                parts,
                vec![
                    (0, offset, epoch, Some("checkpoint".to_owned())),
                    (2, -1, -1, Some(String::new())),
                ],
                "fetch v{v} of a v{committed_by} commit"
            );
        }
    }
    // v2+: null topics means every committed partition.
    for v in 2..=7i16 {
        let req = OffsetFetchRequest {
            group_id: KStr::from("simple-3"),
            topics: None,
            ..Default::default()
        };
        let ResponseBody::OffsetFetch(r) = roundtrip(&offset_fetch(&c, &AllowAll, req, v), v)
        else {
            panic!()
        };
        assert_eq!(r.topics.len(), 1);
        assert_eq!(r.topics[0].partitions[0].committed_offset, 103);
    }
}

#[test]
fn txn_offset_commit_answers_every_version_and_stays_pending() {
    use kafka_protocol::messages::txn_offset_commit_request::{
        TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
    };
    let c = coordinator();
    let topics = |t: &str| (t == "t").then_some(2);
    for version in 0..=4i16 {
        let req = TxnOffsetCommitRequest {
            transactional_id: KStr::from_static("tx"),
            group_id: KStr::from_static("g"),
            producer_id: 9,
            producer_epoch: 0,
            topics: vec![
                TxnOffsetCommitRequestTopic {
                    name: KStr::from_static("t"),
                    partitions: vec![TxnOffsetCommitRequestPartition {
                        partition_index: 1,
                        committed_offset: 100 + i64::from(version),
                        committed_leader_epoch: 3,
                        ..Default::default()
                    }],
                    ..Default::default()
                },
                TxnOffsetCommitRequestTopic {
                    name: KStr::from_static("missing"),
                    partitions: vec![TxnOffsetCommitRequestPartition::default()],
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        let body =
            futures::executor::block_on(txn_offset_commit(&c, &AllowAll, &topics, req, version));
        let ResponseBody::TxnOffsetCommit(r) = roundtrip(&body, version) else {
            panic!("v{version}")
        };
        let errors: Vec<ErrorCode> = r
            .topics
            .iter()
            .map(|t| ErrorCode(t.partitions[0].error_code))
            .collect();
        assert_eq!(
            errors,
            [ErrorCode::NONE, ErrorCode::UNKNOWN_TOPIC_OR_PARTITION],
            "v{version}"
        );
        // Pending: not shown; the leader epoch only from v2 on.
        let pending = c.inspect(|m| m.pending_txn_offset("g", 9, "t", 1).cloned());
        let pending = pending.unwrap();
        assert_eq!(pending.offset, 100 + i64::from(version));
        assert_eq!(pending.leader_epoch, if version >= 2 { 3 } else { -1 });
        let fetched = c.fetch_offsets("g", Some(&[("t".to_owned(), vec![1])]), false);
        assert_eq!(fetched[0].offset, -1);
    }
    // Old versions get the errors they know.
    for (e, version, sent) in [
        (
            ErrorCode::PRODUCER_FENCED,
            1,
            ErrorCode::INVALID_PRODUCER_EPOCH,
        ),
        (ErrorCode::PRODUCER_FENCED, 2, ErrorCode::PRODUCER_FENCED),
        (
            ErrorCode::COORDINATOR_LOAD_IN_PROGRESS,
            1,
            ErrorCode::COORDINATOR_NOT_AVAILABLE,
        ),
        (
            ErrorCode::COORDINATOR_LOAD_IN_PROGRESS,
            2,
            ErrorCode::COORDINATOR_LOAD_IN_PROGRESS,
        ),
    ] {
        assert_eq!(
            txn_offset_commit_error(e, version),
            sent,
            "{e:?} v{version}"
        );
    }
}

/// READ on group "g" and topic "orders" only: `commit_request`'s topics are "orders"
/// (partitions 0 and 7) and "missing".
fn reader() -> Granted {
    use kafka_auth::acl::{AclOperation as Op, ResourceType as Rt};
    Granted(vec![
        (Rt::Group, "g", Op::Read),
        (Rt::Group, "g", Op::Describe),
        (Rt::Topic, "orders", Op::Read),
        (Rt::Topic, "orders", Op::Describe),
    ])
}

fn commit_codes(body: &ResponseBody, v: i16) -> Vec<Vec<ErrorCode>> {
    let ResponseBody::OffsetCommit(r) = roundtrip(body, v) else {
        panic!()
    };
    r.topics
        .iter()
        .map(|t| {
            t.partitions
                .iter()
                .map(|p| ErrorCode(p.error_code))
                .collect()
        })
        .collect()
}

#[test]
fn offset_commit_refusals_as_kafka_answers_them() {
    let c = coordinator();
    for v in [0i16, 2, 9] {
        // No READ on the group: every partition refused, nothing committed.
        let body = futures::executor::block_on(offset_commit(
            &c,
            &reader(),
            &topics,
            commit_request(v, "other", 5),
            v,
        ));
        let g = ErrorCode::GROUP_AUTHORIZATION_FAILED;
        assert_eq!(commit_codes(&body, v), [vec![g, g], vec![g]], "v{v}");
        assert!(c.fetch_offsets("other", None, false).is_empty());
        // READ on the group: "missing" (no READ) is refused before it is looked up, so the
        // answer does not tell that it does not exist; "orders" is committed.
        let body = futures::executor::block_on(offset_commit(
            &c,
            &reader(),
            &topics,
            commit_request(v, "g", 5),
            v,
        ));
        assert_eq!(
            commit_codes(&body, v),
            [
                vec![ErrorCode::NONE, ErrorCode::UNKNOWN_TOPIC_OR_PARTITION],
                vec![ErrorCode::TOPIC_AUTHORIZATION_FAILED]
            ],
            "v{v}"
        );
    }
    assert_eq!(c.fetch_offsets("g", None, false).len(), 1);
}

#[test]
fn offset_fetch_hides_what_the_request_may_not_describe() {
    let c = coordinator();
    // "g" has offsets for "orders" and "payments"; the reader may describe only "orders".
    let mut req = commit_request(2, "g", 40);
    req.topics[1].name = KStr::from("payments");
    futures::executor::block_on(offset_commit(&c, &AllowAll, &topics, req, 2));
    let named = || {
        vec![
            ("orders".to_owned(), vec![0]),
            ("payments".to_owned(), vec![0]),
        ]
    };
    // v8: one group refused, one asking for all (payments left out), one naming topics
    // (payments refused, after the others, offset -1).
    let group = |id: &str, topics: Option<Vec<(String, Vec<i32>)>>| OffsetFetchRequestGroup {
        group_id: KStr::from(id.to_owned()),
        topics: topics.map(|ts| {
            ts.into_iter()
                .map(|(name, partition_indexes)| OffsetFetchRequestTopics {
                    name: KStr::from(name),
                    partition_indexes,
                    ..Default::default()
                })
                .collect()
        }),
        ..Default::default()
    };
    let req = OffsetFetchRequest {
        groups: vec![
            group("hidden", Some(named())),
            group("g", None),
            group("g", Some(named())),
        ],
        ..Default::default()
    };
    let ResponseBody::OffsetFetch(r) = roundtrip(&offset_fetch(&c, &reader(), req, 8), 8) else {
        panic!()
    };
    assert_eq!(
        r.groups[0].error_code,
        ErrorCode::GROUP_AUTHORIZATION_FAILED.0
    );
    assert!(r.groups[0].topics.is_empty());
    let seen = |g: usize| -> Vec<(String, i64, i16)> {
        r.groups[g]
            .topics
            .iter()
            .flat_map(|t| {
                t.partitions
                    .iter()
                    .map(|p| (t.name.to_string(), p.committed_offset, p.error_code))
            })
            .collect()
    };
    assert_eq!(seen(1), [("orders".to_owned(), 40, 0)]);
    let refused = ErrorCode::TOPIC_AUTHORIZATION_FAILED.0;
    assert_eq!(
        seen(2),
        [
            ("orders".to_owned(), 40, 0),
            ("payments".to_owned(), -1, refused)
        ]
    );
    // v0-7: the group refused is the answer's error from v2 on, each partition's before.
    for v in 0..=7i16 {
        let req = OffsetFetchRequest {
            group_id: KStr::from("hidden"),
            topics: Some(vec![OffsetFetchRequestTopic {
                name: KStr::from("orders"),
                partition_indexes: vec![0, 1],
                ..Default::default()
            }]),
            ..Default::default()
        };
        let ResponseBody::OffsetFetch(r) = roundtrip(&offset_fetch(&c, &reader(), req, v), v)
        else {
            panic!()
        };
        let g = ErrorCode::GROUP_AUTHORIZATION_FAILED.0;
        if v >= 2 {
            assert_eq!(r.error_code, g, "v{v}");
            assert!(r.topics.is_empty(), "v{v}");
        } else {
            let codes: Vec<(i32, i64, i16)> = r.topics[0]
                .partitions
                .iter()
                .map(|p| (p.partition_index, p.committed_offset, p.error_code))
                .collect();
            assert_eq!(codes, [(0, -1, g), (1, -1, g)], "v{v}");
        }
    }
    // v2-7 asking for all: payments left out.
    let req = OffsetFetchRequest {
        group_id: KStr::from("g"),
        topics: None,
        ..Default::default()
    };
    let ResponseBody::OffsetFetch(r) = roundtrip(&offset_fetch(&c, &reader(), req, 7), 7) else {
        panic!()
    };
    let names: Vec<&str> = r.topics.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["orders"]);
}

#[test]
fn txn_offset_commit_checks_the_transactional_id_then_the_group_then_topics() {
    use kafka_auth::acl::{AclOperation as Op, ResourceType as Rt};
    use kafka_protocol::messages::txn_offset_commit_request::{
        TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
    };
    let c = coordinator();
    let req = |group: &'static str| TxnOffsetCommitRequest {
        transactional_id: KStr::from_static("tx"),
        group_id: KStr::from_static(group),
        producer_id: 9,
        producer_epoch: 0,
        topics: ["orders", "missing"]
            .into_iter()
            .map(|name| TxnOffsetCommitRequestTopic {
                name: KStr::from_static(name),
                partitions: vec![TxnOffsetCommitRequestPartition {
                    partition_index: 0,
                    committed_offset: 8,
                    ..Default::default()
                }],
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    let codes = |authz: &Granted, group| {
        let body =
            futures::executor::block_on(txn_offset_commit(&c, authz, &topics, req(group), 3));
        let ResponseBody::TxnOffsetCommit(r) = roundtrip(&body, 3) else {
            panic!()
        };
        r.topics
            .iter()
            .map(|t| ErrorCode(t.partitions[0].error_code))
            .collect::<Vec<_>>()
    };
    // No WRITE on the transactional id: refused whatever else is allowed.
    let tx = ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
    assert_eq!(codes(&reader(), "g"), [tx, tx]);
    let mut writer = reader();
    writer.0.push((Rt::TransactionalId, "tx", Op::Write));
    let g = ErrorCode::GROUP_AUTHORIZATION_FAILED;
    assert_eq!(codes(&writer, "other"), [g, g]);
    assert_eq!(
        codes(&writer, "g"),
        [ErrorCode::NONE, ErrorCode::TOPIC_AUTHORIZATION_FAILED]
    );
}
