//! Authorization of the group and transaction apis on a broker with Kafka's authorizer on
//! (`admin` a super user, `alice` and `bob` with only the ACLs each test creates): raw
//! requests through kafka-net get the error codes Kafka's `KafkaApis` answers, and our own
//! consumer without READ on its group stops with GROUP_AUTHORIZATION_FAILED.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/in_process.rs"]
#[allow(dead_code)]
mod in_process;
#[path = "common/secured.rs"]
#[allow(dead_code)]
mod secured;

use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_auth::acl::{AclOperation as Op, AclPermissionType, PatternType, ResourceType as Rt};
use kafka_consumer::{Consumer, ConsumerConfig};
use kafka_net::Connection;
use kafka_producer::{Producer, ProducerConfig, ProducerRecord};
use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::add_partitions_to_txn_request::{
    AddPartitionsToTxnTopic, AddPartitionsToTxnTransaction,
};
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_delete_request::{
    OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::txn_offset_commit_request::{
    TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
};
use kafka_protocol::messages::write_txn_markers_request::{
    WritableTxnMarker, WritableTxnMarkerTopic,
};
use kafka_protocol::messages::{
    AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, CreateTopicsRequest, DeleteGroupsRequest,
    DescribeGroupsRequest, DescribeTransactionsRequest, EndTxnRequest, FindCoordinatorRequest,
    HeartbeatRequest, InitProducerIdRequest, JoinGroupRequest, LeaveGroupRequest,
    ListGroupsRequest, ListTransactionsRequest, MetadataRequest, OffsetCommitRequest,
    OffsetDeleteRequest, OffsetFetchRequest, RequestBody, ResponseBody, SyncGroupRequest,
    TxnOffsetCommitRequest, WriteTxnMarkersRequest,
};
use secured::{Acl, allow, connect_as, create_acls, login, secured_broker};

const TIMEOUT: Duration = Duration::from_secs(15);

/// `body` at `version`, answered within [`TIMEOUT`].
async fn call(c: &Connection, body: RequestBody, version: i16) -> ResponseBody {
    let api = body.api_key();
    tokio::time::timeout(TIMEOUT, c.request_at(body, version))
        .await
        .unwrap_or_else(|_| panic!("{api:?} v{version}: no answer"))
        .unwrap_or_else(|e| panic!("{api:?} v{version}: {e}"))
}

fn deny<'a>(principal: &'a str, op: Op, resource_type: Rt, name: &'a str) -> Acl<'a> {
    Acl {
        permission: AclPermissionType::Deny,
        ..allow(principal, op, resource_type, name)
    }
}

fn prefixed<'a>(principal: &'a str, op: Op, resource_type: Rt, name: &'a str) -> Acl<'a> {
    Acl {
        pattern: PatternType::Prefixed,
        ..allow(principal, op, resource_type, name)
    }
}

async fn create_topics(admin: &Connection, names: &[&str]) {
    let body = RequestBody::CreateTopics(CreateTopicsRequest {
        topics: names
            .iter()
            .map(|n| CreatableTopic {
                name: KStr::from(n.to_string()),
                num_partitions: 1,
                replication_factor: 1,
                ..Default::default()
            })
            .collect(),
        timeout_ms: 10_000,
        ..Default::default()
    });
    let ResponseBody::CreateTopics(r) = call(admin, body, 5).await else {
        panic!()
    };
    for t in &r.topics {
        assert_eq!(t.error_code, 0, "{t:?}");
    }
}

/// Every topic's name, as Metadata lists them.
async fn topic_names(c: &Connection) -> Vec<String> {
    let body = RequestBody::Metadata(MetadataRequest {
        topics: None,
        allow_auto_topic_creation: false,
        ..Default::default()
    });
    let ResponseBody::Metadata(r) = call(c, body, 9).await else {
        panic!()
    };
    r.topics
        .iter()
        .filter_map(|t| t.name.as_ref().map(ToString::to_string))
        .collect()
}

fn e(code: i16) -> ErrorCode {
    ErrorCode(code)
}

const GROUP_REFUSED: ErrorCode = ErrorCode::GROUP_AUTHORIZATION_FAILED;
const TOPIC_REFUSED: ErrorCode = ErrorCode::TOPIC_AUTHORIZATION_FAILED;
const TXN_REFUSED: ErrorCode = ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
const CLUSTER_REFUSED: ErrorCode = ErrorCode::CLUSTER_AUTHORIZATION_FAILED;

async fn find_coordinators(c: &Connection, key_type: i8, keys: &[&str]) -> Vec<ErrorCode> {
    let body = RequestBody::FindCoordinator(FindCoordinatorRequest {
        key_type,
        coordinator_keys: keys.iter().map(|k| KStr::from(k.to_string())).collect(),
        ..Default::default()
    });
    let ResponseBody::FindCoordinator(r) = call(c, body, 4).await else {
        panic!()
    };
    r.coordinators.iter().map(|k| e(k.error_code)).collect()
}

/// JoinGroup v3 (no member id round trip); (error, member id, generation).
async fn join(c: &Connection, group: &str) -> (ErrorCode, String, i32) {
    let body = RequestBody::JoinGroup(Box::new(JoinGroupRequest {
        group_id: KStr::from(group.to_owned()),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 10_000,
        member_id: KStr::default(),
        group_instance_id: None,
        protocol_type: KStr::from_static("consumer"),
        protocols: vec![JoinGroupRequestProtocol {
            name: KStr::from_static("range"),
            metadata: Bytes::from_static(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
            ..Default::default()
        }],
        ..Default::default()
    }));
    let ResponseBody::JoinGroup(r) = call(c, body, 3).await else {
        panic!()
    };
    (e(r.error_code), r.member_id.to_string(), r.generation_id)
}

/// Sync, heartbeat and leave of `member`: their three errors.
async fn sync_heartbeat_leave(
    c: &Connection,
    group: &str,
    member: &str,
    generation: i32,
) -> [ErrorCode; 3] {
    let group_id = KStr::from(group.to_owned());
    let member_id = KStr::from(member.to_owned());
    let sync = RequestBody::SyncGroup(Box::new(SyncGroupRequest {
        group_id: group_id.clone(),
        generation_id: generation,
        member_id: member_id.clone(),
        group_instance_id: None,
        ..Default::default()
    }));
    let ResponseBody::SyncGroup(s) = call(c, sync, 3).await else {
        panic!()
    };
    let hb = RequestBody::Heartbeat(HeartbeatRequest {
        group_id: group_id.clone(),
        generation_id: generation,
        member_id: member_id.clone(),
        group_instance_id: None,
        ..Default::default()
    });
    let ResponseBody::Heartbeat(h) = call(c, hb, 3).await else {
        panic!()
    };
    let leave = RequestBody::LeaveGroup(LeaveGroupRequest {
        group_id,
        member_id,
        ..Default::default()
    });
    let ResponseBody::LeaveGroup(l) = call(c, leave, 2).await else {
        panic!()
    };
    [e(s.error_code), e(h.error_code), e(l.error_code)]
}

/// OffsetCommit v2 (a simple commit) of offset 7 for partition 0 of each topic: the errors.
async fn commit(c: &Connection, group: &str, topics: &[&str]) -> Vec<ErrorCode> {
    let body = RequestBody::OffsetCommit(Box::new(OffsetCommitRequest {
        group_id: KStr::from(group.to_owned()),
        generation_id_or_member_epoch: -1,
        member_id: KStr::default(),
        retention_time_ms: -1,
        topics: topics
            .iter()
            .map(|t| OffsetCommitRequestTopic {
                name: KStr::from(t.to_string()),
                partitions: vec![OffsetCommitRequestPartition {
                    partition_index: 0,
                    committed_offset: 7,
                    committed_metadata: None,
                    ..Default::default()
                }],
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }));
    let ResponseBody::OffsetCommit(r) = call(c, body, 2).await else {
        panic!()
    };
    r.topics
        .iter()
        .flat_map(|t| t.partitions.iter().map(|p| e(p.error_code)))
        .collect()
}

/// DescribeGroups v5 with authorized operations: (group, error, operations) in answer order.
async fn describe_groups(c: &Connection, groups: &[&str]) -> Vec<(String, ErrorCode, i32)> {
    let body = RequestBody::DescribeGroups(DescribeGroupsRequest {
        groups: groups.iter().map(|g| KStr::from(g.to_string())).collect(),
        include_authorized_operations: true,
        ..Default::default()
    });
    let ResponseBody::DescribeGroups(r) = call(c, body, 5).await else {
        panic!()
    };
    r.groups
        .iter()
        .map(|g| {
            (
                g.group_id.to_string(),
                e(g.error_code),
                g.authorized_operations,
            )
        })
        .collect()
}

async fn list_groups(c: &Connection) -> Vec<String> {
    let body = RequestBody::ListGroups(ListGroupsRequest::default());
    let ResponseBody::ListGroups(r) = call(c, body, 4).await else {
        panic!()
    };
    let mut ids: Vec<String> = r.groups.iter().map(|g| g.group_id.to_string()).collect();
    ids.sort();
    ids
}

/// A fetched offset: (topic, offset, error).
type Offset = (String, i64, ErrorCode);

fn bits(ops: &[Op]) -> i32 {
    ops.iter().fold(0, |b, op| b | (1 << op.code()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_apis_answer_as_kafka() {
    let broker = secured_broker(&[]);
    let b = broker.bootstrap();
    let admin = connect_as(&b, "admin").await;
    create_topics(&admin, &["t", "u"]).await;
    create_acls(
        &b,
        &[
            allow("User:alice", Op::Read, Rt::Group, "g"),
            allow("User:alice", Op::Read, Rt::Topic, "t"),
            // A family of groups, one of them denied: DENY beats the prefixed ALLOW.
            prefixed("User:alice", Op::Read, Rt::Group, "team-"),
            deny("User:alice", Op::Read, Rt::Group, "team-secret"),
            allow("User:bob", Op::Delete, Rt::Group, "g"),
        ],
    )
    .await;
    let alice = connect_as(&b, "alice").await;
    let bob = connect_as(&b, "bob").await;

    // FindCoordinator: DESCRIBE per key (READ implies it; a DENY of READ does not deny
    // DESCRIBE). v0-3 answer the one key.
    assert_eq!(
        find_coordinators(&alice, 0, &["g", "team-a", "team-secret", "h"]).await,
        [
            ErrorCode::NONE,
            ErrorCode::NONE,
            ErrorCode::NONE,
            GROUP_REFUSED
        ]
    );
    assert_eq!(find_coordinators(&alice, 1, &["tx"]).await, [TXN_REFUSED]);
    // A refused lookup does not create the transaction state topic (Kafka creates it after
    // the check).
    assert!(
        !topic_names(&admin)
            .await
            .contains(&"__transaction_state".to_owned())
    );
    let body = RequestBody::FindCoordinator(FindCoordinatorRequest {
        key: KStr::from_static("h"),
        ..Default::default()
    });
    let ResponseBody::FindCoordinator(r) = call(&alice, body, 3).await else {
        panic!()
    };
    assert_eq!((e(r.error_code), r.node_id), (GROUP_REFUSED, -1));
    assert_eq!(
        find_coordinators(&admin, 0, &["h"]).await,
        [ErrorCode::NONE]
    );

    // Membership: READ on the group.
    let (code, member, generation) = join(&alice, "g").await;
    assert_eq!(code, ErrorCode::NONE);
    assert_eq!(join(&alice, "team-a").await.0, ErrorCode::NONE);
    assert_eq!(join(&alice, "team-secret").await.0, GROUP_REFUSED);
    assert_eq!(join(&bob, "g").await.0, GROUP_REFUSED);
    assert_eq!(
        sync_heartbeat_leave(&bob, "g", &member, generation).await,
        [GROUP_REFUSED; 3]
    );
    assert_eq!(
        sync_heartbeat_leave(&alice, "g", &member, generation).await,
        [ErrorCode::NONE; 3]
    );

    // OffsetCommit: READ on the group, then READ per topic ahead of existence ("nope" does
    // not exist: alice cannot tell).
    assert_eq!(
        commit(&alice, "g", &["t", "u", "nope"]).await,
        [ErrorCode::NONE, TOPIC_REFUSED, TOPIC_REFUSED]
    );
    assert_eq!(commit(&bob, "g", &["t"]).await, [GROUP_REFUSED]);
    assert_eq!(
        commit(&admin, "g", &["t", "u", "nope"]).await,
        [
            ErrorCode::NONE,
            ErrorCode::NONE,
            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
        ]
    );

    // OffsetFetch v8: DESCRIBE per group; all offsets without the topics alice may not
    // describe; named ones refused.
    let group = |id: &str, topics: Option<Vec<&str>>| OffsetFetchRequestGroup {
        group_id: KStr::from(id.to_owned()),
        topics: topics.map(|ts| {
            ts.into_iter()
                .map(|t| OffsetFetchRequestTopics {
                    name: KStr::from(t.to_owned()),
                    partition_indexes: vec![0],
                    ..Default::default()
                })
                .collect()
        }),
        ..Default::default()
    };
    let body = RequestBody::OffsetFetch(OffsetFetchRequest {
        groups: vec![
            group("g", None),
            group("g", Some(vec!["t", "u"])),
            group("h", None),
        ],
        ..Default::default()
    });
    let ResponseBody::OffsetFetch(r) = call(&alice, body, 8).await else {
        panic!()
    };
    let seen: Vec<(ErrorCode, Vec<Offset>)> = r
        .groups
        .iter()
        .map(|g| {
            let parts = g
                .topics
                .iter()
                .flat_map(|t| {
                    t.partitions
                        .iter()
                        .map(|p| (t.name.to_string(), p.committed_offset, e(p.error_code)))
                })
                .collect();
            (e(g.error_code), parts)
        })
        .collect();
    assert_eq!(
        seen,
        [
            (ErrorCode::NONE, vec![("t".into(), 7, ErrorCode::NONE)]),
            (
                ErrorCode::NONE,
                vec![
                    ("t".into(), 7, ErrorCode::NONE),
                    ("u".into(), -1, TOPIC_REFUSED)
                ]
            ),
            (GROUP_REFUSED, vec![]),
        ]
    );

    // OffsetDelete: DELETE on the group (bob has it), then READ per topic.
    let delete = |group: &str| {
        RequestBody::OffsetDelete(OffsetDeleteRequest {
            group_id: KStr::from(group.to_owned()),
            topics: ["t", "u"]
                .into_iter()
                .map(|t| OffsetDeleteRequestTopic {
                    name: KStr::from_static(t),
                    partitions: vec![OffsetDeleteRequestPartition { partition_index: 0 }],
                })
                .collect(),
        })
    };
    let ResponseBody::OffsetDelete(r) = call(&alice, delete("g"), 0).await else {
        panic!()
    };
    assert_eq!(e(r.error_code), GROUP_REFUSED);
    let ResponseBody::OffsetDelete(r) = call(&bob, delete("g"), 0).await else {
        panic!()
    };
    let codes: Vec<ErrorCode> = r
        .topics
        .iter()
        .map(|t| e(t.partitions[0].error_code))
        .collect();
    assert_eq!(
        (e(r.error_code), codes),
        (ErrorCode::NONE, vec![TOPIC_REFUSED, TOPIC_REFUSED])
    );

    // DescribeGroups: DESCRIBE per group, refused ones first; operations from the ACLs.
    let read_describe = bits(&[Op::Read, Op::Describe]);
    assert_eq!(
        describe_groups(&alice, &["g", "h"]).await,
        [
            ("h".into(), GROUP_REFUSED, i32::MIN),
            ("g".into(), ErrorCode::NONE, read_describe)
        ]
    );
    let every_op = bits(&[
        Op::Read,
        Op::Delete,
        Op::Describe,
        Op::DescribeConfigs,
        Op::AlterConfigs,
    ]);
    assert_eq!(
        describe_groups(&admin, &["g"]).await,
        [("g".into(), ErrorCode::NONE, every_op)]
    );

    // ListGroups: the groups alice may describe; bob's DELETE implies DESCRIBE; every
    // group for a super user.
    assert_eq!(list_groups(&alice).await, ["g", "team-a"]);
    assert_eq!(list_groups(&bob).await, ["g"]);
    assert_eq!(list_groups(&admin).await, ["g", "team-a"]);

    // DeleteGroups: DELETE per group.
    let body = RequestBody::DeleteGroups(DeleteGroupsRequest {
        groups_names: vec![KStr::from_static("g"), KStr::from_static("team-a")],
        ..Default::default()
    });
    let ResponseBody::DeleteGroups(r) = call(&bob, body, 2).await else {
        panic!()
    };
    let got: Vec<(String, ErrorCode)> = r
        .results
        .iter()
        .map(|g| (g.group_id.to_string(), e(g.error_code)))
        .collect();
    assert_eq!(
        got,
        [
            ("g".into(), ErrorCode::NONE),
            ("team-a".into(), GROUP_REFUSED)
        ]
    );
    assert_eq!(list_groups(&admin).await, ["team-a"]);
}

/// InitProducerId with `transactional_id` (`None`: idempotent): (error, id, epoch).
async fn init_producer_id(c: &Connection, transactional_id: Option<&str>) -> (ErrorCode, i64, i16) {
    let body = RequestBody::InitProducerId(InitProducerIdRequest {
        transactional_id: transactional_id.map(|t| KStr::from(t.to_owned())),
        transaction_timeout_ms: 60_000,
        producer_id: -1,
        producer_epoch: -1,
        ..Default::default()
    });
    let ResponseBody::InitProducerId(r) = call(c, body, 4).await else {
        panic!()
    };
    (e(r.error_code), r.producer_id, r.producer_epoch)
}

/// AddPartitionsToTxn v3 of partition 0 of each topic: the errors, sorted by topic.
async fn add_partitions(
    c: &Connection,
    transactional_id: &str,
    (producer_id, epoch): (i64, i16),
    topics: &[&str],
) -> Vec<(String, ErrorCode)> {
    let body = RequestBody::AddPartitionsToTxn(AddPartitionsToTxnRequest {
        v3_and_below_transactional_id: KStr::from(transactional_id.to_owned()),
        v3_and_below_producer_id: producer_id,
        v3_and_below_producer_epoch: epoch,
        v3_and_below_topics: topics
            .iter()
            .map(|t| AddPartitionsToTxnTopic {
                name: KStr::from(t.to_string()),
                partitions: vec![0],
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    });
    let ResponseBody::AddPartitionsToTxn(r) = call(c, body, 3).await else {
        panic!()
    };
    let mut out: Vec<(String, ErrorCode)> = r
        .results_by_topic_v3_and_below
        .iter()
        .map(|t| {
            (
                t.name.to_string(),
                e(t.results_by_partition[0].partition_error_code),
            )
        })
        .collect();
    out.sort();
    out
}

async fn add_offsets(
    c: &Connection,
    transactional_id: &str,
    (producer_id, epoch): (i64, i16),
    group: &str,
) -> ErrorCode {
    let body = RequestBody::AddOffsetsToTxn(AddOffsetsToTxnRequest {
        transactional_id: KStr::from(transactional_id.to_owned()),
        producer_id,
        producer_epoch: epoch,
        group_id: KStr::from(group.to_owned()),
        ..Default::default()
    });
    let ResponseBody::AddOffsetsToTxn(r) = call(c, body, 3).await else {
        panic!()
    };
    e(r.error_code)
}

async fn txn_commit(
    c: &Connection,
    transactional_id: &str,
    (producer_id, epoch): (i64, i16),
    group: &str,
    topics: &[&str],
) -> Vec<ErrorCode> {
    let body = RequestBody::TxnOffsetCommit(Box::new(TxnOffsetCommitRequest {
        transactional_id: KStr::from(transactional_id.to_owned()),
        group_id: KStr::from(group.to_owned()),
        producer_id,
        producer_epoch: epoch,
        generation_id_or_member_epoch: -1,
        member_id: KStr::default(),
        group_instance_id: None,
        topics: topics
            .iter()
            .map(|t| TxnOffsetCommitRequestTopic {
                name: KStr::from(t.to_string()),
                partitions: vec![TxnOffsetCommitRequestPartition {
                    partition_index: 0,
                    committed_offset: 3,
                    committed_metadata: None,
                    ..Default::default()
                }],
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }));
    let ResponseBody::TxnOffsetCommit(r) = call(c, body, 3).await else {
        panic!()
    };
    r.topics
        .iter()
        .map(|t| e(t.partitions[0].error_code))
        .collect()
}

async fn end_txn(
    c: &Connection,
    transactional_id: &str,
    (producer_id, epoch): (i64, i16),
) -> ErrorCode {
    let body = RequestBody::EndTxn(EndTxnRequest {
        transactional_id: KStr::from(transactional_id.to_owned()),
        producer_id,
        producer_epoch: epoch,
        committed: true,
        ..Default::default()
    });
    let ResponseBody::EndTxn(r) = call(c, body, 3).await else {
        panic!()
    };
    e(r.error_code)
}

/// DescribeTransactions: (id, error, topics) per id.
async fn describe_transactions(
    c: &Connection,
    ids: &[&str],
) -> Vec<(String, ErrorCode, Vec<String>)> {
    let body = RequestBody::DescribeTransactions(DescribeTransactionsRequest {
        transactional_ids: ids.iter().map(|t| KStr::from(t.to_string())).collect(),
        ..Default::default()
    });
    let ResponseBody::DescribeTransactions(r) = call(c, body, 0).await else {
        panic!()
    };
    r.transaction_states
        .iter()
        .map(|s| {
            let mut topics: Vec<String> = s.topics.iter().map(|t| t.topic.to_string()).collect();
            topics.sort();
            (s.transactional_id.to_string(), e(s.error_code), topics)
        })
        .collect()
}

async fn list_transactions(c: &Connection) -> Vec<String> {
    let body = RequestBody::ListTransactions(ListTransactionsRequest::default());
    let ResponseBody::ListTransactions(r) = call(c, body, 1).await else {
        panic!()
    };
    let mut ids: Vec<String> = r
        .transaction_states
        .iter()
        .map(|s| s.transactional_id.to_string())
        .collect();
    ids.sort();
    ids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transaction_apis_answer_as_kafka() {
    let broker = secured_broker(&[]);
    let b = broker.bootstrap();
    let admin = connect_as(&b, "admin").await;
    create_topics(&admin, &["t", "u"]).await;
    let alice = connect_as(&b, "alice").await;
    let bob = connect_as(&b, "bob").await;

    // An idempotent producer needs IDEMPOTENT_WRITE on the cluster or WRITE on some topic.
    assert_eq!(init_producer_id(&bob, None).await.0, CLUSTER_REFUSED);
    create_acls(
        &b,
        &[
            allow("User:bob", Op::Write, Rt::Topic, "u"),
            allow(
                "User:alice",
                Op::IdempotentWrite,
                Rt::Cluster,
                "kafka-cluster",
            ),
            prefixed("User:alice", Op::Write, Rt::TransactionalId, "tx"),
            allow("User:alice", Op::Write, Rt::Topic, "t"),
            allow("User:alice", Op::Read, Rt::Group, "g"),
        ],
    )
    .await;
    assert_eq!(init_producer_id(&bob, None).await.0, ErrorCode::NONE);
    assert_eq!(init_producer_id(&alice, None).await.0, ErrorCode::NONE);

    // Transactions: WRITE on the transactional id (alice's is prefixed).
    assert_eq!(init_producer_id(&bob, Some("tx")).await.0, TXN_REFUSED);
    let (code, producer_id, epoch) = init_producer_id(&alice, Some("tx")).await;
    assert_eq!(code, ErrorCode::NONE);
    assert!(
        topic_names(&admin)
            .await
            .contains(&"__transaction_state".to_owned())
    );
    let ids = (producer_id, epoch);

    // AddPartitionsToTxn: a topic without WRITE (or an internal one) fails the request, the
    // others not attempted; bob may not use the transactional id at all.
    assert_eq!(
        add_partitions(&alice, "tx", ids, &["t", "u", "__consumer_offsets"]).await,
        [
            ("__consumer_offsets".into(), TOPIC_REFUSED),
            ("t".into(), ErrorCode::OPERATION_NOT_ATTEMPTED),
            ("u".into(), TOPIC_REFUSED)
        ]
    );
    assert_eq!(
        add_partitions(&bob, "tx", ids, &["u"]).await,
        [("u".into(), TXN_REFUSED)]
    );
    assert_eq!(
        add_partitions(&alice, "tx", ids, &["t"]).await,
        [("t".into(), ErrorCode::NONE)]
    );
    // v4+ comes from brokers only: CLUSTER_ACTION.
    let body = RequestBody::AddPartitionsToTxn(AddPartitionsToTxnRequest {
        transactions: vec![AddPartitionsToTxnTransaction {
            transactional_id: KStr::from_static("tx"),
            producer_id,
            producer_epoch: epoch,
            verify_only: true,
            topics: vec![AddPartitionsToTxnTopic {
                name: KStr::from_static("t"),
                partitions: vec![0],
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    });
    let ResponseBody::AddPartitionsToTxn(r) = call(&alice, body, 4).await else {
        panic!()
    };
    assert_eq!(e(r.error_code), CLUSTER_REFUSED);
    assert!(r.results_by_transaction.is_empty());

    // AddOffsetsToTxn: the transactional id first, then READ on the group.
    assert_eq!(add_offsets(&bob, "tx", ids, "g").await, TXN_REFUSED);
    assert_eq!(add_offsets(&alice, "tx", ids, "h").await, GROUP_REFUSED);
    assert_eq!(add_offsets(&alice, "tx", ids, "g").await, ErrorCode::NONE);

    // TxnOffsetCommit: the transactional id, the group, then READ per topic.
    assert_eq!(
        txn_commit(&bob, "tx", ids, "g", &["t"]).await,
        [TXN_REFUSED]
    );
    assert_eq!(
        txn_commit(&alice, "tx", ids, "h", &["t"]).await,
        [GROUP_REFUSED]
    );
    // alice has WRITE on t but not READ.
    assert_eq!(
        txn_commit(&alice, "tx", ids, "g", &["t"]).await,
        [TOPIC_REFUSED]
    );
    create_acls(&b, &[allow("User:alice", Op::Read, Rt::Topic, "t")]).await;
    assert_eq!(
        txn_commit(&alice, "tx", ids, "g", &["t", "u"]).await,
        [ErrorCode::NONE, TOPIC_REFUSED]
    );

    // DescribeTransactions / ListTransactions: DESCRIBE per transactional id (WRITE
    // implies it); the topics shown are those alice may describe. admin's "tx-admin"
    // spans t and u; alice sees it (prefix) without u.
    let admin_ids = {
        let (code, id, epoch) = init_producer_id(&admin, Some("tx-admin")).await;
        assert_eq!(code, ErrorCode::NONE);
        (id, epoch)
    };
    assert_eq!(
        add_partitions(&admin, "tx-admin", admin_ids, &["t", "u"]).await,
        [("t".into(), ErrorCode::NONE), ("u".into(), ErrorCode::NONE)]
    );
    let _ = init_producer_id(&admin, Some("other")).await;
    assert_eq!(
        describe_transactions(&alice, &["tx-admin", "other"]).await,
        [
            ("tx-admin".into(), ErrorCode::NONE, vec!["t".into()]),
            ("other".into(), TXN_REFUSED, vec![])
        ]
    );
    assert_eq!(
        describe_transactions(&admin, &["tx-admin"]).await[0].2,
        ["t", "u"]
    );
    assert_eq!(list_transactions(&alice).await, ["tx", "tx-admin"]);
    assert!(list_transactions(&bob).await.is_empty());
    assert_eq!(list_transactions(&admin).await, ["other", "tx", "tx-admin"]);

    // EndTxn: WRITE on the transactional id.
    assert_eq!(end_txn(&bob, "tx", ids).await, TXN_REFUSED);
    assert_eq!(end_txn(&alice, "tx", ids).await, ErrorCode::NONE);

    // WriteTxnMarkers: brokers only (CLUSTER_ACTION or ALTER on the cluster).
    let markers = || {
        RequestBody::WriteTxnMarkers(WriteTxnMarkersRequest {
            markers: vec![WritableTxnMarker {
                producer_id: admin_ids.0,
                producer_epoch: admin_ids.1,
                transaction_result: false,
                coordinator_epoch: 0,
                topics: vec![WritableTxnMarkerTopic {
                    name: KStr::from_static("u"),
                    partition_indexes: vec![0],
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        })
    };
    let ResponseBody::WriteTxnMarkers(r) = call(&alice, markers(), 1).await else {
        panic!()
    };
    assert_eq!(
        e(r.markers[0].topics[0].partitions[0].error_code),
        CLUSTER_REFUSED
    );
    let ResponseBody::WriteTxnMarkers(r) = call(&admin, markers(), 1).await else {
        panic!()
    };
    assert_ne!(
        e(r.markers[0].topics[0].partitions[0].error_code),
        CLUSTER_REFUSED
    );
}

/// The settings of our clients for `user`.
fn client(bootstrap: &str, user: &str, extra: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut pairs = vec![("bootstrap.servers".to_owned(), bootstrap.to_owned())];
    pairs.extend(login(user));
    pairs.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    pairs
}

/// Polls `c` until `n` records came or an error; `Err` with the error's code.
async fn consume(c: &Consumer, n: usize, within: Duration) -> Result<usize, Option<ErrorCode>> {
    let deadline = Instant::now() + within;
    let mut got = 0;
    while got < n && Instant::now() < deadline {
        got += c
            .poll(Duration::from_millis(200))
            .await
            .map_err(|e| e.error_code())?
            .len();
    }
    Ok(got)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_consumer_without_group_read_stops_with_the_group_error() {
    let broker = secured_broker(&[]);
    let b = broker.bootstrap();
    let admin = connect_as(&b, "admin").await;
    create_topics(&admin, &["t"]).await;
    let producer = Producer::new(
        ProducerConfig::from_pairs(client(&b, "admin", &[("linger.ms", "0")])).unwrap(),
    )
    .await
    .unwrap();
    for i in 0..3 {
        let record = ProducerRecord::new("t", Bytes::from(format!("r{i}"))).partition(0);
        producer.send(record).await.unwrap();
    }
    producer.close(Duration::from_secs(5)).await;
    create_acls(
        &b,
        &[
            allow("User:bob", Op::Read, Rt::Topic, "t"),
            allow("User:alice", Op::Read, Rt::Topic, "t"),
            allow("User:alice", Op::Read, Rt::Group, "g"),
            allow("User:bob", Op::Describe, Rt::Group, "g2"),
        ],
    )
    .await;
    let settings = [
        ("group.id", "g"),
        ("auto.offset.reset", "earliest"),
        ("fetch.max.wait.ms", "100"),
        ("default.api.timeout.ms", "10000"),
    ];
    // bob may read the topic but not the group: poll ends with the group's error.
    let bob = Consumer::new(ConsumerConfig::from_pairs(client(&b, "bob", &settings)).unwrap())
        .await
        .unwrap();
    bob.subscribe(["t"]).unwrap();
    assert_eq!(
        consume(&bob, 1, Duration::from_secs(20)).await,
        Err(Some(GROUP_REFUSED))
    );
    // With DESCRIBE on its group bob finds the coordinator, and cannot join.
    let mut settings2 = settings;
    settings2[0] = ("group.id", "g2");
    let bob = Consumer::new(ConsumerConfig::from_pairs(client(&b, "bob", &settings2)).unwrap())
        .await
        .unwrap();
    bob.subscribe(["t"]).unwrap();
    assert_eq!(
        consume(&bob, 1, Duration::from_secs(20)).await,
        Err(Some(GROUP_REFUSED))
    );
    // alice may read both: she reads the three records.
    let alice = Consumer::new(ConsumerConfig::from_pairs(client(&b, "alice", &settings)).unwrap())
        .await
        .unwrap();
    alice.subscribe(["t"]).unwrap();
    assert_eq!(consume(&alice, 3, Duration::from_secs(20)).await, Ok(3));
}
