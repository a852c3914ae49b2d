//! Authorization of the admin APIs (issue 25), against a SASL_PLAINTEXT broker with Kafka's
//! authorizer on, as in `authz_data.rs`: CreateTopics, DeleteTopics and CreatePartitions,
//! DescribeConfigs / AlterConfigs / IncrementalAlterConfigs per resource, and the cluster
//! APIs (DescribeCluster, DescribeLogDirs, the SCRAM credential calls), each allowed with the
//! right ACL and refused without it with the error codes Kafka's `KafkaApis` /
//! `ControllerApis` give.
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

use authz::*;
use kafka_auth::acl::{AclOperation, AclPermissionType, PatternType, ResourceType};
use kafka_net::Connection;
use kafka_protocol::Uuid;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::alter_configs_request::{self, AlterConfigsResource};
use kafka_protocol::messages::alter_user_scram_credentials_request::ScramCredentialDeletion;
use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::describe_user_scram_credentials_request::UserName;
use kafka_protocol::messages::incremental_alter_configs_request;
use kafka_protocol::messages::*;
use secured::{allow, connect_as, create_acls, secured_broker};

async fn delete_topics(
    c: &Connection,
    topics: Vec<DeleteTopicState>,
) -> Vec<(Option<String>, ErrorCode)> {
    let body = call(
        c,
        RequestBody::DeleteTopics(DeleteTopicsRequest {
            topics,
            timeout_ms: 10_000,
            ..Default::default()
        }),
    )
    .await;
    let ResponseBody::DeleteTopics(r) = body else {
        panic!("DeleteTopics answered {body:?}")
    };
    r.responses
        .iter()
        .map(|t| {
            (
                t.name.as_ref().map(ToString::to_string),
                ErrorCode(t.error_code),
            )
        })
        .collect()
}

fn by_name(name: &str) -> DeleteTopicState {
    DeleteTopicState {
        name: Some(s(name)),
        topic_id: Uuid::ZERO,
        ..Default::default()
    }
}

fn by_id(id: Uuid) -> DeleteTopicState {
    DeleteTopicState {
        name: None,
        topic_id: id,
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_delete_and_grow_topics() {
    let broker = secured_broker(&[]);
    let b = broker.bootstrap();
    admin_topics(&b, &["keep", "drop-me", "seen-only", "grow"]).await;
    create_acls(
        &b,
        &[
            allow(
                "User:alice",
                AclOperation::Create,
                ResourceType::Topic,
                "new-a",
            ),
            allow(
                "User:alice",
                AclOperation::Delete,
                ResourceType::Topic,
                "drop-me",
            ),
            allow(
                "User:alice",
                AclOperation::Describe,
                ResourceType::Topic,
                "seen-only",
            ),
            allow(
                "User:alice",
                AclOperation::Describe,
                ResourceType::Topic,
                "gone",
            ),
            allow(
                "User:alice",
                AclOperation::Alter,
                ResourceType::Topic,
                "grow",
            ),
            allow(
                "User:bob",
                AclOperation::Create,
                ResourceType::Cluster,
                "kafka-cluster",
            ),
            acl(
                "User:bob",
                AclOperation::DescribeConfigs,
                ResourceType::Topic,
                "new-",
                PatternType::Prefixed,
                AclPermissionType::Allow,
            ),
        ],
    )
    .await;
    let alice = connect_as(&b, "alice").await;
    // CreateTopics: CREATE on the topic; the configs of the answer need DESCRIBE_CONFIGS.
    let got = create_topics(&alice, &["new-a", "new-b"]).await;
    assert_eq!(ErrorCode(got[0].error_code), OK, "{got:?}");
    assert_eq!(ErrorCode(got[0].topic_config_error_code), TOPIC_AUTH);
    assert_eq!(got[0].num_partitions, -1);
    assert_eq!(got[0].configs.as_deref().map(<[_]>::len), Some(0));
    assert_ne!(got[0].topic_id, Uuid::ZERO);
    assert_eq!(ErrorCode(got[1].error_code), TOPIC_AUTH, "{got:?}");
    // bob: CREATE on the cluster creates anything; his DESCRIBE_CONFIGS on new-* shows them.
    let bob = connect_as(&b, "bob").await;
    let got = create_topics(&bob, &["new-b", "other"]).await;
    assert_eq!(ErrorCode(got[0].error_code), OK, "{got:?}");
    assert_eq!(got[0].topic_config_error_code, 0);
    assert_eq!(got[0].num_partitions, 1);
    assert!(!got[0].configs.as_deref().unwrap_or_default().is_empty());
    assert_eq!(ErrorCode(got[1].error_code), OK);
    assert_eq!(ErrorCode(got[1].topic_config_error_code), TOPIC_AUTH);
    // DeleteTopics by name: not describable is refused before it is looked up; describable
    // but unknown is UNKNOWN_TOPIC_OR_PARTITION; describable without DELETE is refused.
    assert_eq!(
        delete_topics(
            &alice,
            vec![
                by_name("keep"),
                by_name("ghost"),
                by_name("gone"),
                by_name("seen-only")
            ]
        )
        .await,
        [
            (Some("keep".to_owned()), TOPIC_AUTH),
            (Some("ghost".to_owned()), TOPIC_AUTH),
            (
                Some("gone".to_owned()),
                ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
            ),
            (Some("seen-only".to_owned()), TOPIC_AUTH),
        ]
    );
    // By id: a topic she may not describe is refused without its name; one she may describe
    // keeps it.
    let admin = connect_as(&b, "admin").await;
    let keep = topic_id(&admin, "keep").await;
    let seen = topic_id(&admin, "seen-only").await;
    assert_eq!(
        delete_topics(&alice, vec![by_id(keep), by_id(seen)]).await,
        [
            (None, TOPIC_AUTH),
            (Some("seen-only".to_owned()), TOPIC_AUTH)
        ]
    );
    // With DELETE: deleted.
    assert_eq!(
        delete_topics(&alice, vec![by_name("drop-me")]).await,
        [(Some("drop-me".to_owned()), OK)]
    );
    let left = metadata(&admin, Some(&["drop-me", "keep"]), false, false, 12).await;
    assert_eq!(
        names(&left.topics),
        errors(&[
            ("drop-me", ErrorCode::UNKNOWN_TOPIC_OR_PARTITION),
            ("keep", OK)
        ])
    );
    // CreatePartitions: ALTER on the topic.
    let body = call(
        &alice,
        RequestBody::CreatePartitions(CreatePartitionsRequest {
            topics: ["grow", "keep"]
                .iter()
                .map(|t| CreatePartitionsTopic {
                    name: s(t),
                    count: 3,
                    assignments: None,
                    ..Default::default()
                })
                .collect(),
            timeout_ms: 10_000,
            ..Default::default()
        }),
    )
    .await;
    let ResponseBody::CreatePartitions(r) = body else {
        panic!()
    };
    let got: Vec<ErrorCode> = r.results.iter().map(|t| ErrorCode(t.error_code)).collect();
    assert_eq!(got, [OK, TOPIC_AUTH], "{r:?}");
    let grown = metadata(&admin, Some(&["grow", "keep"]), false, false, 12).await;
    let counts: Vec<usize> = grown.topics.iter().map(|t| t.partitions.len()).collect();
    assert_eq!(counts, [3, 1]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configs_per_resource() {
    let broker = secured_broker(&[]);
    let b = broker.bootstrap();
    admin_topics(&b, &["tuned", "locked"]).await;
    create_acls(
        &b,
        &[
            // ALTER_CONFIGS implies DESCRIBE_CONFIGS.
            allow(
                "User:alice",
                AclOperation::AlterConfigs,
                ResourceType::Topic,
                "tuned",
            ),
            allow(
                "User:alice",
                AclOperation::DescribeConfigs,
                ResourceType::Topic,
                "locked",
            ),
            allow(
                "User:bob",
                AclOperation::DescribeConfigs,
                ResourceType::Cluster,
                "kafka-cluster",
            ),
        ],
    )
    .await;
    let describe = |resources: &[(i8, &str)]| {
        RequestBody::DescribeConfigs(DescribeConfigsRequest {
            resources: resources
                .iter()
                .map(|(rt, name)| DescribeConfigsResource {
                    resource_type: *rt,
                    resource_name: s(name),
                    configuration_keys: None,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        })
    };
    let described = |body: ResponseBody| -> Vec<(ErrorCode, usize)> {
        let ResponseBody::DescribeConfigs(r) = body else {
            panic!("DescribeConfigs answered {body:?}")
        };
        r.results
            .iter()
            .map(|r| (ErrorCode(r.error_code), r.configs.len()))
            .collect()
    };
    let alice = connect_as(&b, "alice").await;
    let node = broker.node_id.to_string();
    let wanted = [
        (TOPIC_RESOURCE, "tuned"),
        (TOPIC_RESOURCE, "locked"),
        (TOPIC_RESOURCE, "ghost"),
        (BROKER_RESOURCE, node.as_str()),
        (GROUP_RESOURCE, "g"),
    ];
    let got = described(call(&alice, describe(&wanted)).await);
    assert_eq!(got[0].0, OK);
    assert!(got[0].1 > 0);
    assert_eq!(got[1].0, OK);
    assert_eq!(got[2], (TOPIC_AUTH, 0), "not UNKNOWN_TOPIC_OR_PARTITION");
    assert_eq!(got[3], (CLUSTER_AUTH, 0));
    assert_eq!(got[4], (ErrorCode::GROUP_AUTHORIZATION_FAILED, 0));
    // DESCRIBE_CONFIGS on the cluster shows the broker's.
    let bob = connect_as(&b, "bob").await;
    let got = described(call(&bob, describe(&[(BROKER_RESOURCE, node.as_str())])).await);
    assert_eq!(got[0].0, OK);
    assert!(got[0].1 > 0);
    // AlterConfigs and IncrementalAlterConfigs: ALTER_CONFIGS, answered per resource.
    let retention = |topic: &str| AlterConfigsResource {
        resource_type: TOPIC_RESOURCE,
        resource_name: s(topic),
        configs: vec![alter_configs_request::AlterableConfig {
            name: s("retention.ms"),
            value: Some(s("60000")),
            ..Default::default()
        }],
        ..Default::default()
    };
    let mut broker_resource = retention("x");
    broker_resource.resource_type = BROKER_RESOURCE;
    broker_resource.resource_name = s(&node);
    let body = call(
        &alice,
        RequestBody::AlterConfigs(AlterConfigsRequest {
            resources: vec![retention("tuned"), retention("locked"), broker_resource],
            ..Default::default()
        }),
    )
    .await;
    let ResponseBody::AlterConfigs(r) = body else {
        panic!()
    };
    let got: Vec<ErrorCode> = r
        .responses
        .iter()
        .map(|r| ErrorCode(r.error_code))
        .collect();
    assert_eq!(got, [OK, TOPIC_AUTH, CLUSTER_AUTH], "{r:?}");
    let incremental =
        |rt: i8, name: &str| incremental_alter_configs_request::AlterConfigsResource {
            resource_type: rt,
            resource_name: s(name),
            configs: vec![incremental_alter_configs_request::AlterableConfig {
                name: s("retention.ms"),
                config_operation: 0,
                value: Some(s("120000")),
                ..Default::default()
            }],
            ..Default::default()
        };
    let body = call(
        &alice,
        RequestBody::IncrementalAlterConfigs(IncrementalAlterConfigsRequest {
            resources: vec![
                incremental(TOPIC_RESOURCE, "tuned"),
                incremental(TOPIC_RESOURCE, "ghost"),
                incremental(BROKER_RESOURCE, &node),
                incremental(GROUP_RESOURCE, "g"),
            ],
            ..Default::default()
        }),
    )
    .await;
    let ResponseBody::IncrementalAlterConfigs(r) = body else {
        panic!()
    };
    let got: Vec<ErrorCode> = r
        .responses
        .iter()
        .map(|r| ErrorCode(r.error_code))
        .collect();
    assert_eq!(
        got,
        [
            OK,
            TOPIC_AUTH,
            CLUSTER_AUTH,
            ErrorCode::GROUP_AUTHORIZATION_FAILED
        ],
        "{r:?}"
    );
    // The change she was allowed took effect, the refused one did not.
    let admin = connect_as(&b, "admin").await;
    let body = call(
        &admin,
        RequestBody::DescribeConfigs(DescribeConfigsRequest {
            resources: ["tuned", "locked"]
                .iter()
                .map(|t| DescribeConfigsResource {
                    resource_type: TOPIC_RESOURCE,
                    resource_name: s(t),
                    configuration_keys: Some(vec![s("retention.ms")]),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }),
    )
    .await;
    let ResponseBody::DescribeConfigs(r) = body else {
        panic!()
    };
    let values: Vec<Option<String>> = r
        .results
        .iter()
        .map(|r| r.configs[0].value.as_ref().map(ToString::to_string))
        .collect();
    assert_eq!(
        values,
        [Some("120000".to_owned()), Some("604800000".to_owned())]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_apis_need_cluster_acls() {
    let broker = secured_broker(&[]);
    let b = broker.bootstrap();
    admin_topics(&b, &["t"]).await;
    create_acls(
        &b,
        &[
            allow(
                "User:bob",
                AclOperation::Describe,
                ResourceType::Cluster,
                "kafka-cluster",
            ),
            allow(
                "User:bob",
                AclOperation::Alter,
                ResourceType::Cluster,
                "kafka-cluster",
            ),
        ],
    )
    .await;
    let alice = connect_as(&b, "alice").await;
    let bob = connect_as(&b, "bob").await;
    let admin = connect_as(&b, "admin").await;
    // DescribeCluster is answered to anyone; its operations come from the ACLs (0 without
    // DESCRIBE; ALTER implies DESCRIBE, so bob has both).
    let cluster_ops = |c: &Connection, asked: bool| {
        let c = c.clone();
        async move {
            let body = call(
                &c,
                RequestBody::DescribeCluster(DescribeClusterRequest {
                    include_cluster_authorized_operations: asked,
                    ..Default::default()
                }),
            )
            .await;
            let ResponseBody::DescribeCluster(r) = body else {
                panic!()
            };
            assert_eq!(r.error_code, 0);
            assert_eq!(r.brokers.len(), 1);
            r.cluster_authorized_operations
        }
    };
    assert_eq!(cluster_ops(&alice, true).await, 0);
    assert_eq!(
        cluster_ops(&bob, true).await,
        bit(AclOperation::Describe) | bit(AclOperation::Alter)
    );
    assert_eq!(cluster_ops(&admin, true).await, 8096);
    assert_eq!(cluster_ops(&alice, false).await, i32::MIN);
    // DescribeLogDirs: DESCRIBE on the cluster, else the answer's error.
    let log_dirs = |c: &Connection| {
        let c = c.clone();
        async move {
            let body = call(
                &c,
                RequestBody::DescribeLogDirs(DescribeLogDirsRequest {
                    topics: None,
                    ..Default::default()
                }),
            )
            .await;
            let ResponseBody::DescribeLogDirs(r) = body else {
                panic!()
            };
            (ErrorCode(r.error_code), r.results.len())
        }
    };
    assert_eq!(log_dirs(&alice).await, (CLUSTER_AUTH, 0));
    assert_eq!(log_dirs(&bob).await, (OK, 1));
    // SCRAM credentials: DESCRIBE / ALTER on the cluster.
    let describe_scram = |c: &Connection| {
        let c = c.clone();
        async move {
            let body = call(
                &c,
                RequestBody::DescribeUserScramCredentials(DescribeUserScramCredentialsRequest {
                    users: Some(vec![UserName {
                        name: s("carol"),
                        ..Default::default()
                    }]),
                    ..Default::default()
                }),
            )
            .await;
            let ResponseBody::DescribeUserScramCredentials(r) = body else {
                panic!()
            };
            (ErrorCode(r.error_code), ErrorCode(r.results[0].error_code))
        }
    };
    assert_eq!(describe_scram(&alice).await, (CLUSTER_AUTH, CLUSTER_AUTH));
    assert_eq!(
        describe_scram(&bob).await,
        (OK, ErrorCode::RESOURCE_NOT_FOUND)
    );
    let alter_scram = |c: &Connection| {
        let c = c.clone();
        async move {
            let body = call(
                &c,
                RequestBody::AlterUserScramCredentials(AlterUserScramCredentialsRequest {
                    deletions: ["erin", "dave", "erin"]
                        .iter()
                        .enumerate()
                        .map(|(i, n)| ScramCredentialDeletion {
                            name: s(n),
                            mechanism: if i == 2 { 2 } else { 1 },
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                }),
            )
            .await;
            let ResponseBody::AlterUserScramCredentials(r) = body else {
                panic!()
            };
            r.results
                .iter()
                .map(|r| (r.user.to_string(), ErrorCode(r.error_code)))
                .collect::<Vec<_>>()
        }
    };
    // Refused: each user once, sorted (Kafka's getErrorResponse).
    assert_eq!(
        alter_scram(&alice).await,
        errors(&[("dave", CLUSTER_AUTH), ("erin", CLUSTER_AUTH)])
    );
    // Allowed: on to the credential checks (nothing to delete).
    let got = alter_scram(&bob).await;
    assert!(
        got.iter().all(|(_, e)| *e == ErrorCode::RESOURCE_NOT_FOUND),
        "{got:?}"
    );
}
