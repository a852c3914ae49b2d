//! Authorization of the data APIs (issue 25; the admin APIs are in `authz_admin.rs`), against a SASL_PLAINTEXT broker with
//! Kafka's authorizer on: raw requests as `alice` and `bob` (only the ACLs each test gives
//! them) and `admin` (a super user), each answer checked against the error codes Kafka's
//! `KafkaApis` / `ControllerApis` give: allowed with the right ACL, refused without it
//! (TOPIC_AUTHORIZATION_FAILED before UNKNOWN_TOPIC_OR_PARTITION, so a caller cannot learn
//! which topics exist), prefixed ACLs, DENY beating ALLOW. Then our own producer without
//! WRITE: a TOPIC_AUTHORIZATION_FAILED error, not retries until its timeout.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/authz.rs"]
#[allow(dead_code)]
mod authz;
#[path = "common/in_process.rs"]
#[allow(dead_code)]
mod in_process;
#[path = "common/secured.rs"]
#[allow(dead_code)]
mod secured;

use std::time::{Duration, Instant};

use authz::*;
use bytes::Bytes;
use kafka_auth::acl::{AclOperation, AclPermissionType, PatternType, ResourceType};
use kafka_net::{Connection, NetError};
use kafka_producer::{Producer, ProducerConfig, ProducerError, ProducerRecord};
use kafka_protocol::Uuid;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::delete_records_request::{
    DeleteRecordsPartition, DeleteRecordsTopic,
};
use kafka_protocol::messages::describe_producers_request::TopicRequest;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic, ReplicaState};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::offset_for_leader_epoch_request::{
    OffsetForLeaderPartition, OffsetForLeaderTopic,
};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::record::RecordBatchBuilder;
use secured::{allow, connect_as, create_acls, login, secured_broker};

fn records(transactional: bool) -> Bytes {
    let mut b = RecordBatchBuilder::new();
    if transactional {
        b = b.producer(1000, 0, 0).transactional(true);
    }
    b.append(1_700_000_000_000, None, Some(b"value"), &[])
        .unwrap();
    b.build().unwrap()
}

fn produce_request(
    transactional_id: Option<&str>,
    topics: &[&str],
    transactional: bool,
) -> RequestBody {
    RequestBody::Produce(ProduceRequest {
        transactional_id: transactional_id.map(s),
        acks: -1,
        timeout_ms: 10_000,
        topic_data: topics
            .iter()
            .map(|t| TopicProduceData {
                name: s(t),
                partition_data: vec![PartitionProduceData {
                    index: 0,
                    records: Some(records(transactional)),
                    ..Default::default()
                }],
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    })
}

/// Each topic's first partition's error, by topic, in request order.
async fn produce(c: &Connection, body: RequestBody) -> Vec<(String, ErrorCode)> {
    let body = call(c, body).await;
    let ResponseBody::Produce(r) = body else {
        panic!("Produce answered {body:?}")
    };
    r.responses
        .iter()
        .map(|t| {
            (
                t.name.to_string(),
                ErrorCode(t.partition_responses[0].error_code),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn produce_needs_write_and_the_transactional_id() {
    let broker = secured_broker(&[]);
    let b = broker.bootstrap();
    admin_topics(&b, &["orders", "audit", "logs-a", "logs-b"]).await;
    create_acls(
        &b,
        &[
            allow(
                "User:alice",
                AclOperation::Write,
                ResourceType::Topic,
                "orders",
            ),
            // bob: WRITE on the logs- family, but a DENY on logs-b beats it.
            acl(
                "User:bob",
                AclOperation::Write,
                ResourceType::Topic,
                "logs-",
                PatternType::Prefixed,
                AclPermissionType::Allow,
            ),
            acl(
                "User:bob",
                AclOperation::Write,
                ResourceType::Topic,
                "logs-b",
                PatternType::Literal,
                AclPermissionType::Deny,
            ),
        ],
    )
    .await;
    let alice = connect_as(&b, "alice").await;
    // The topic she may write to is appended; the others are refused, an unknown topic too
    // (not UNKNOWN_TOPIC_OR_PARTITION: she may not learn that it does not exist).
    assert_eq!(
        produce(
            &alice,
            produce_request(None, &["orders", "audit", "ghost"], false)
        )
        .await,
        errors(&[("orders", OK), ("audit", TOPIC_AUTH), ("ghost", TOPIC_AUTH)])
    );
    // A transactional batch needs WRITE on the transactional id: the whole request is
    // refused, the topic she may write to too.
    let refused = ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED;
    assert_eq!(
        produce(
            &alice,
            produce_request(Some("tx-1"), &["orders", "audit"], true)
        )
        .await,
        errors(&[("orders", refused), ("audit", refused)])
    );
    // ... and a transactional batch without a transactional id is refused the same way.
    assert_eq!(
        produce(&alice, produce_request(None, &["orders"], true)).await,
        errors(&[("orders", refused)])
    );
    create_acls(
        &b,
        &[allow(
            "User:alice",
            AclOperation::Write,
            ResourceType::TransactionalId,
            "tx-1",
        )],
    )
    .await;
    // With it, the request goes on to the topic checks (the transaction layer may then
    // refuse the batch for its own reasons, never for authorization of the id).
    let got = produce(
        &alice,
        produce_request(Some("tx-1"), &["orders", "audit"], true),
    )
    .await;
    assert_ne!(got[0].1, refused, "{got:?}");
    assert_ne!(got[0].1, TOPIC_AUTH, "{got:?}");
    assert_eq!(got[1], ("audit".to_owned(), TOPIC_AUTH));
    // Prefixed ALLOW, literal DENY: the DENY wins.
    let bob = connect_as(&b, "bob").await;
    assert_eq!(
        produce(
            &bob,
            produce_request(None, &["logs-a", "logs-b", "orders"], false)
        )
        .await,
        errors(&[
            ("logs-a", OK),
            ("logs-b", TOPIC_AUTH),
            ("orders", TOPIC_AUTH)
        ])
    );
    // The super user writes anywhere.
    let admin = connect_as(&b, "admin").await;
    assert_eq!(
        produce(&admin, produce_request(None, &["audit", "logs-b"], false)).await,
        errors(&[("audit", OK), ("logs-b", OK)])
    );
}

fn fetch_topic(name: &str, id: Uuid) -> FetchTopic {
    FetchTopic {
        topic: s(name),
        topic_id: id,
        partitions: vec![FetchPartition {
            partition: 0,
            current_leader_epoch: -1,
            fetch_offset: 0,
            log_start_offset: -1,
            partition_max_bytes: 1 << 20,
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// (error, record bytes) per partition, in answer order.
fn fetched(body: ResponseBody) -> Vec<(ErrorCode, usize)> {
    let ResponseBody::Fetch(r) = body else {
        panic!("Fetch answered {body:?}")
    };
    assert_eq!(r.error_code, 0, "{r:?}");
    r.responses
        .iter()
        .flat_map(|t| t.partitions.iter())
        .map(|p| {
            (
                ErrorCode(p.error_code),
                p.records.as_ref().map_or(0, Bytes::len),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetch_needs_read_and_a_replica_needs_cluster_action() {
    let broker = secured_broker(&[]);
    let b = broker.bootstrap();
    admin_topics(&b, &["clicks", "payroll"]).await;
    let admin = connect_as(&b, "admin").await;
    produce(&admin, produce_request(None, &["clicks", "payroll"], false)).await;
    create_acls(
        &b,
        &[allow(
            "User:alice",
            AclOperation::Read,
            ResourceType::Topic,
            "clicks",
        )],
    )
    .await;
    let alice = connect_as(&b, "alice").await;
    let consumer = |topics: Vec<FetchTopic>| {
        RequestBody::Fetch(Box::new(FetchRequest {
            max_wait_ms: 100,
            topics,
            ..Default::default()
        }))
    };
    let got = fetched(
        call_at(
            &alice,
            consumer(vec![
                fetch_topic("clicks", Uuid::ZERO),
                fetch_topic("payroll", Uuid::ZERO),
                fetch_topic("ghost", Uuid::ZERO),
            ]),
            12,
        )
        .await,
    );
    assert_eq!(got[0].0, OK);
    assert!(got[0].1 > 0, "records of clicks: {got:?}");
    assert_eq!(got[1], (TOPIC_AUTH, 0));
    assert_eq!(got[2], (TOPIC_AUTH, 0));
    // A client naming a replica id must have CLUSTER_ACTION: every partition refused, nothing
    // read, answered at once (not after max_wait_ms), the topic she may read included.
    let as_replica = |version_15: bool, topics: Vec<FetchTopic>| {
        let mut r = FetchRequest {
            max_wait_ms: 10_000,
            min_bytes: 1 << 20,
            topics,
            ..Default::default()
        };
        if version_15 {
            r.replica_state = ReplicaState {
                replica_id: 2,
                replica_epoch: -1,
                ..Default::default()
            };
        } else {
            r.replica_id = 2;
        }
        RequestBody::Fetch(Box::new(r))
    };
    let started = Instant::now();
    let got = fetched(
        call_at(
            &alice,
            as_replica(
                false,
                vec![
                    fetch_topic("clicks", Uuid::ZERO),
                    fetch_topic("payroll", Uuid::ZERO),
                ],
            ),
            12,
        )
        .await,
    );
    assert_eq!(got, [(TOPIC_AUTH, 0), (TOPIC_AUTH, 0)]);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    // The same in v15+, where the replica id is in ReplicaState, with topic ids.
    let clicks = topic_id(&admin, "clicks").await;
    let got = fetched(call_at(&alice, as_replica(true, vec![fetch_topic("", clicks)]), 15).await);
    assert_eq!(got, [(TOPIC_AUTH, 0)]);
    // By topic id as a consumer: READ checked on the topic's name; an unknown id stays
    // UNKNOWN_TOPIC_ID (ids are not secret).
    let payroll = topic_id(&admin, "payroll").await;
    let got = fetched(
        call_at(
            &alice,
            consumer(vec![
                fetch_topic("", clicks),
                fetch_topic("", payroll),
                fetch_topic("", Uuid([7; 16])),
            ]),
            13,
        )
        .await,
    );
    assert_eq!(got[0].0, OK);
    assert!(got[0].1 > 0);
    assert_eq!(got[1], (TOPIC_AUTH, 0));
    assert_eq!(got[2].0, ErrorCode::UNKNOWN_TOPIC_ID);
    // With CLUSTER_ACTION (bob), a replica's fetch is served.
    create_acls(
        &b,
        &[allow(
            "User:bob",
            AclOperation::ClusterAction,
            ResourceType::Cluster,
            "kafka-cluster",
        )],
    )
    .await;
    let bob = connect_as(&b, "bob").await;
    let mut r = FetchRequest {
        replica_id: 2,
        max_wait_ms: 100,
        topics: vec![fetch_topic("payroll", Uuid::ZERO)],
        ..Default::default()
    };
    r.min_bytes = 0;
    let got = fetched(call_at(&bob, RequestBody::Fetch(Box::new(r)), 12).await);
    assert_eq!(got[0].0, OK, "{got:?}");
    assert!(got[0].1 > 0, "{got:?}");
}

async fn list_offsets(c: &Connection, topics: &[&str]) -> Vec<ErrorCode> {
    let body = call(
        c,
        RequestBody::ListOffsets(ListOffsetsRequest {
            replica_id: -1,
            topics: topics
                .iter()
                .map(|t| ListOffsetsTopic {
                    name: s(t),
                    partitions: vec![ListOffsetsPartition {
                        partition_index: 0,
                        current_leader_epoch: -1,
                        timestamp: -1,
                        ..Default::default()
                    }],
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }),
    )
    .await;
    let ResponseBody::ListOffsets(r) = body else {
        panic!("ListOffsets answered {body:?}")
    };
    let got: Vec<String> = r.topics.iter().map(|t| t.name.to_string()).collect();
    assert_eq!(got, topics, "one answer per topic, in order");
    r.topics
        .iter()
        .map(|t| ErrorCode(t.partitions[0].error_code))
        .collect()
}

async fn offset_for_leader_epoch(c: &Connection, topics: &[&str]) -> Vec<ErrorCode> {
    let body = call(
        c,
        RequestBody::OffsetForLeaderEpoch(OffsetForLeaderEpochRequest {
            replica_id: -1,
            topics: topics
                .iter()
                .map(|t| OffsetForLeaderTopic {
                    topic: s(t),
                    partitions: vec![OffsetForLeaderPartition {
                        partition: 0,
                        current_leader_epoch: -1,
                        leader_epoch: 0,
                        ..Default::default()
                    }],
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }),
    )
    .await;
    let ResponseBody::OffsetForLeaderEpoch(r) = body else {
        panic!("OffsetForLeaderEpoch answered {body:?}")
    };
    r.topics
        .iter()
        .map(|t| ErrorCode(t.partitions[0].error_code))
        .collect()
}

async fn delete_records(c: &Connection, topics: &[&str]) -> Vec<(ErrorCode, i64)> {
    let body = call(
        c,
        RequestBody::DeleteRecords(DeleteRecordsRequest {
            topics: topics
                .iter()
                .map(|t| DeleteRecordsTopic {
                    name: s(t),
                    partitions: vec![DeleteRecordsPartition {
                        partition_index: 0,
                        offset: 1,
                        ..Default::default()
                    }],
                    ..Default::default()
                })
                .collect(),
            timeout_ms: 10_000,
            ..Default::default()
        }),
    )
    .await;
    let ResponseBody::DeleteRecords(r) = body else {
        panic!("DeleteRecords answered {body:?}")
    };
    r.topics
        .iter()
        .map(|t| {
            (
                ErrorCode(t.partitions[0].error_code),
                t.partitions[0].low_watermark,
            )
        })
        .collect()
}

async fn describe_producers(c: &Connection, topics: &[&str]) -> Vec<ErrorCode> {
    let body = call(
        c,
        RequestBody::DescribeProducers(DescribeProducersRequest {
            topics: topics
                .iter()
                .map(|t| TopicRequest {
                    name: s(t),
                    partition_indexes: vec![0],
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }),
    )
    .await;
    let ResponseBody::DescribeProducers(r) = body else {
        panic!("DescribeProducers answered {body:?}")
    };
    r.topics
        .iter()
        .map(|t| ErrorCode(t.partitions[0].error_code))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offsets_deletions_and_producers_per_topic() {
    let broker = secured_broker(&[]);
    let b = broker.bootstrap();
    admin_topics(&b, &["seen", "hidden", "purge"]).await;
    let admin = connect_as(&b, "admin").await;
    produce(
        &admin,
        produce_request(None, &["seen", "hidden", "purge"], false),
    )
    .await;
    produce(&admin, produce_request(None, &["purge"], false)).await;
    create_acls(
        &b,
        &[
            allow(
                "User:alice",
                AclOperation::Describe,
                ResourceType::Topic,
                "seen",
            ),
            allow(
                "User:alice",
                AclOperation::Delete,
                ResourceType::Topic,
                "purge",
            ),
            allow(
                "User:alice",
                AclOperation::Read,
                ResourceType::Topic,
                "seen",
            ),
            // DESCRIBE on a topic that does not exist: now she may learn that.
            allow(
                "User:alice",
                AclOperation::Describe,
                ResourceType::Topic,
                "ghost-seen",
            ),
        ],
    )
    .await;
    let alice = connect_as(&b, "alice").await;
    // ListOffsets: DESCRIBE (DELETE implies it on purge); refused before unknown.
    assert_eq!(
        list_offsets(&alice, &["seen", "hidden", "ghost", "ghost-seen", "purge"]).await,
        [
            OK,
            TOPIC_AUTH,
            TOPIC_AUTH,
            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
            OK
        ]
    );
    // OffsetForLeaderEpoch: the same for a consumer...
    assert_eq!(
        offset_for_leader_epoch(&alice, &["seen", "hidden", "ghost"]).await,
        [OK, TOPIC_AUTH, TOPIC_AUTH]
    );
    // ... and CLUSTER_ACTION (a follower) allows every topic.
    create_acls(
        &b,
        &[allow(
            "User:bob",
            AclOperation::ClusterAction,
            ResourceType::Cluster,
            "kafka-cluster",
        )],
    )
    .await;
    let bob = connect_as(&b, "bob").await;
    assert_eq!(
        offset_for_leader_epoch(&bob, &["seen", "hidden", "ghost"]).await,
        [OK, OK, ErrorCode::UNKNOWN_TOPIC_OR_PARTITION]
    );
    // DeleteRecords: DELETE; READ or DESCRIBE are not enough.
    assert_eq!(
        delete_records(&alice, &["purge", "seen", "ghost"]).await,
        [(OK, 1), (TOPIC_AUTH, -1), (TOPIC_AUTH, -1)]
    );
    assert_eq!(delete_records(&admin, &["seen"]).await, [(OK, 1)]);
    // DescribeProducers: READ; a name that is not a topic name is INVALID_TOPIC_EXCEPTION
    // first, as in Kafka.
    assert_eq!(
        describe_producers(&alice, &["seen", "purge", "ghost", "no/such"]).await,
        [
            OK,
            TOPIC_AUTH,
            TOPIC_AUTH,
            ErrorCode::INVALID_TOPIC_EXCEPTION
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_hides_refuses_and_creates_with_create() {
    let broker = secured_broker(&[]);
    let b = broker.bootstrap();
    admin_topics(&b, &["shared", "private"]).await;
    create_acls(
        &b,
        &[
            allow(
                "User:alice",
                AclOperation::Write,
                ResourceType::Topic,
                "shared",
            ),
            acl(
                "User:alice",
                AclOperation::Describe,
                ResourceType::Topic,
                "auto-",
                PatternType::Prefixed,
                AclPermissionType::Allow,
            ),
            allow(
                "User:alice",
                AclOperation::Create,
                ResourceType::Topic,
                "auto-mine",
            ),
        ],
    )
    .await;
    let alice = connect_as(&b, "alice").await;
    // All topics: the ones she may not describe are left out.
    let all = metadata(&alice, None, false, false, 12).await;
    assert_eq!(names(&all.topics), errors(&[("shared", OK)]));
    // By name: refused entries, without their ids, whether the topic exists or not.
    let named = metadata(
        &alice,
        Some(&["shared", "private", "ghost"]),
        false,
        false,
        12,
    )
    .await;
    assert_eq!(
        names(&named.topics),
        errors(&[
            ("ghost", TOPIC_AUTH),
            ("private", TOPIC_AUTH),
            ("shared", OK)
        ])
    );
    for t in &named.topics {
        if t.error_code != 0 {
            assert_eq!(t.topic_id, Uuid::ZERO, "{t:?}");
            assert!(t.partitions.is_empty());
        }
    }
    // Auto-creation needs CREATE on the topic (or the cluster); without it the topic is
    // refused and not created.
    let created = metadata(&alice, Some(&["auto-mine", "auto-other"]), true, false, 12).await;
    assert_eq!(
        names(&created.topics),
        errors(&[("auto-mine", OK), ("auto-other", TOPIC_AUTH)])
    );
    let admin = connect_as(&b, "admin").await;
    let seen = metadata(&admin, Some(&["auto-mine", "auto-other"]), false, false, 12).await;
    assert_eq!(
        names(&seen.topics),
        errors(&[
            ("auto-mine", OK),
            ("auto-other", ErrorCode::UNKNOWN_TOPIC_OR_PARTITION)
        ])
    );
    // CREATE on the cluster creates any topic she may describe.
    create_acls(
        &b,
        &[allow(
            "User:alice",
            AclOperation::Create,
            ResourceType::Cluster,
            "kafka-cluster",
        )],
    )
    .await;
    let created = metadata(&alice, Some(&["auto-other"]), true, false, 12).await;
    assert_eq!(names(&created.topics), errors(&[("auto-other", OK)]));
    // Authorized operations (v10 carries the cluster's too): hers from the ACLs; WRITE
    // implies DESCRIBE. Without DESCRIBE on the cluster its operations are 0.
    let ops = metadata(&alice, Some(&["shared", "private"]), false, true, 10).await;
    let shared = ops
        .topics
        .iter()
        .find(|t| t.name.as_deref() == Some("shared"))
        .unwrap();
    assert_eq!(
        shared.topic_authorized_operations,
        bit(AclOperation::Write) | bit(AclOperation::Describe)
    );
    let private = ops
        .topics
        .iter()
        .find(|t| t.name.as_deref() == Some("private"))
        .unwrap();
    assert_eq!(
        private.topic_authorized_operations,
        i32::MIN,
        "not given when refused"
    );
    assert_eq!(ops.cluster_authorized_operations, 0);
    // The super user: everything.
    let ops = metadata(&admin, Some(&["shared"]), false, true, 10).await;
    assert_eq!(ops.topics[0].topic_authorized_operations, 3576);
    assert_eq!(ops.cluster_authorized_operations, 8096);
    // Not asked: INT32_MIN.
    let ops = metadata(&admin, Some(&["shared"]), false, false, 10).await;
    assert_eq!(ops.topics[0].topic_authorized_operations, i32::MIN);
    assert_eq!(ops.cluster_authorized_operations, i32::MIN);
    // By id: refused with the id and no name; an unknown id is UNKNOWN_TOPIC_ID.
    let private_id = topic_id(&admin, "private").await;
    let body = call_at(
        &alice,
        RequestBody::Metadata(MetadataRequest {
            topics: Some(vec![
                MetadataRequestTopic {
                    name: None,
                    topic_id: private_id,
                    ..Default::default()
                },
                MetadataRequestTopic {
                    name: None,
                    topic_id: Uuid([9; 16]),
                    ..Default::default()
                },
            ]),
            ..Default::default()
        }),
        12,
    )
    .await;
    let ResponseBody::Metadata(r) = body else {
        panic!()
    };
    assert_eq!(ErrorCode(r.topics[0].error_code), TOPIC_AUTH);
    assert_eq!(r.topics[0].name, None);
    assert_eq!(r.topics[0].topic_id, private_id);
    assert_eq!(
        ErrorCode(r.topics[1].error_code),
        ErrorCode::UNKNOWN_TOPIC_ID
    );
}

/// The code of a producer error, from a broker's answer or from the metadata wait.
fn code_of(e: &ProducerError) -> Option<ErrorCode> {
    e.code().or(match e {
        ProducerError::Net(n) => match &**n {
            NetError::Kafka { code, .. } => Some(*code),
            _ => None,
        },
        _ => None,
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_producer_without_write_fails_fast() {
    let broker = secured_broker(&[]);
    let b = broker.bootstrap();
    admin_topics(&b, &["described", "unseen"]).await;
    create_acls(
        &b,
        &[allow(
            "User:alice",
            AclOperation::Describe,
            ResourceType::Topic,
            "described",
        )],
    )
    .await;
    let mut pairs = vec![
        ("bootstrap.servers".to_owned(), b.clone()),
        ("linger.ms".to_owned(), "0".to_owned()),
        // Without idempotence: InitProducerId's own check (IDEMPOTENT_WRITE) is not what this
        // test is about.
        ("enable.idempotence".to_owned(), "false".to_owned()),
        ("max.block.ms".to_owned(), "30000".to_owned()),
        ("delivery.timeout.ms".to_owned(), "30000".to_owned()),
        ("request.timeout.ms".to_owned(), "10000".to_owned()),
    ];
    pairs.extend(login("alice"));
    let producer = Producer::new(ProducerConfig::from_pairs(pairs).unwrap())
        .await
        .unwrap();
    // A topic she may see but not write: the Produce answer's error, at once.
    let started = Instant::now();
    let e = producer
        .send(ProducerRecord::new("described", Bytes::from_static(b"x")))
        .await
        .expect_err("no WRITE on the topic");
    assert_eq!(code_of(&e), Some(TOPIC_AUTH), "{e}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    // A topic she may not even describe: the metadata's error, at once.
    let started = Instant::now();
    let e = producer
        .send(ProducerRecord::new("unseen", Bytes::from_static(b"x")))
        .await
        .expect_err("no DESCRIBE on the topic");
    assert_eq!(code_of(&e), Some(TOPIC_AUTH), "{e}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    producer.close(Duration::from_secs(5)).await;
}
