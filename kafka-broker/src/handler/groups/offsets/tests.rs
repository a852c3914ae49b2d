//! OffsetCommit, TxnOffsetCommit and OffsetFetch at every version they support.
#![allow(clippy::unwrap_used)]

use kafka_protocol::KStr;
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopic, OffsetFetchRequestTopics,
};

use super::super::test_support::{commit_request, coordinator, roundtrip, topics};
use super::*;

#[test]
fn offset_commit_and_fetch_every_version() {
    let c = coordinator();
    for v in 0..=9i16 {
        let group = format!("simple-{v}");
        let body = futures::executor::block_on(offset_commit(
            &c,
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
            let ResponseBody::OffsetFetch(r) = roundtrip(&offset_fetch(&c, req, v), v) else {
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
        let ResponseBody::OffsetFetch(r) = roundtrip(&offset_fetch(&c, req, v), v) else {
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
        let body = futures::executor::block_on(txn_offset_commit(&c, &topics, req, version));
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
