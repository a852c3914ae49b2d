//! ACLs on the broker (Kafka's StandardAuthorizer semantics, `kafka-auth`): CreateAcls,
//! DescribeAcls and DeleteAcls with Kafka's rules, and the ACLs surviving a restart.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/in_process.rs"]
#[allow(dead_code)]
mod in_process;
#[path = "common/secured.rs"]
#[allow(dead_code)]
mod secured;

use kafka_auth::acl::{AclOperation, AclPermissionType, PatternType, ResourceType};
use kafka_net::Connection;
use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
use kafka_protocol::messages::{
    CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest, RequestBody, ResponseBody,
};
use secured::{Acl, allow, connect_as, create_acls, secured_broker};

async fn describe_all(c: &Connection) -> (i16, Vec<(String, String, i8, i8)>) {
    let body = c
        .request(RequestBody::DescribeAcls(DescribeAclsRequest {
            // The generated defaults are Kafka's: empty strings, not null (any).
            resource_name_filter: None,
            principal_filter: None,
            host_filter: None,
            resource_type_filter: ResourceType::Any.code(),
            pattern_type_filter: PatternType::Any.code(),
            operation: AclOperation::Any.code(),
            permission_type: AclPermissionType::Any.code(),
            ..Default::default()
        }))
        .await
        .unwrap();
    let ResponseBody::DescribeAcls(r) = body else {
        panic!()
    };
    let mut out = Vec::new();
    for res in &r.resources {
        for a in &res.acls {
            out.push((
                res.resource_name.to_string(),
                a.principal.to_string(),
                a.operation,
                res.pattern_type,
            ));
        }
    }
    out.sort();
    (r.error_code, out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn create_describe_delete_and_restart() {
    let broker = secured_broker(&[]);
    let b = broker.bootstrap();
    create_acls(
        &b,
        &[
            allow(
                "User:alice",
                AclOperation::Write,
                ResourceType::Topic,
                "orders",
            ),
            Acl {
                resource_type: ResourceType::Topic,
                name: "logs-",
                pattern: PatternType::Prefixed,
                principal: "User:alice",
                op: AclOperation::Read,
                permission: AclPermissionType::Allow,
            },
            allow("User:bob", AclOperation::Read, ResourceType::Group, "g1"),
        ],
    )
    .await;
    let admin = connect_as(&b, "admin").await;
    let (code, acls) = describe_all(&admin).await;
    assert_eq!(code, 0);
    assert_eq!(
        acls,
        [
            (
                "g1".into(),
                "User:bob".into(),
                AclOperation::Read.code(),
                PatternType::Literal.code()
            ),
            (
                "logs-".into(),
                "User:alice".into(),
                AclOperation::Read.code(),
                PatternType::Prefixed.code()
            ),
            (
                "orders".into(),
                "User:alice".into(),
                AclOperation::Write.code(),
                PatternType::Literal.code()
            ),
        ]
    );
    // alice may not read or change ACLs: CLUSTER_AUTHORIZATION_FAILED.
    let alice = connect_as(&b, "alice").await;
    assert_eq!(
        ErrorCode(describe_all(&alice).await.0),
        ErrorCode::CLUSTER_AUTHORIZATION_FAILED
    );
    let body = alice
        .request(RequestBody::CreateAcls(CreateAclsRequest {
            creations: vec![AclCreation {
                resource_type: ResourceType::Cluster.code(),
                resource_name: KStr::from_static("kafka-cluster"),
                resource_pattern_type: PatternType::Literal.code(),
                principal: KStr::from_static("User:alice"),
                host: KStr::from_static("*"),
                operation: AclOperation::All.code(),
                permission_type: AclPermissionType::Allow.code(),
                ..Default::default()
            }],
            ..Default::default()
        }))
        .await
        .unwrap();
    let ResponseBody::CreateAcls(r) = body else {
        panic!()
    };
    assert_eq!(
        ErrorCode(r.results[0].error_code),
        ErrorCode::CLUSTER_AUTHORIZATION_FAILED
    );
    // A creation Kafka refuses (a cluster resource not named kafka-cluster) fails alone.
    let body = admin
        .request(RequestBody::CreateAcls(CreateAclsRequest {
            creations: vec![
                AclCreation {
                    resource_type: ResourceType::Cluster.code(),
                    resource_name: KStr::from_static("my-cluster"),
                    resource_pattern_type: PatternType::Literal.code(),
                    principal: KStr::from_static("User:bob"),
                    host: KStr::from_static("*"),
                    operation: AclOperation::Alter.code(),
                    permission_type: AclPermissionType::Allow.code(),
                    ..Default::default()
                },
                AclCreation {
                    resource_type: ResourceType::Topic.code(),
                    resource_name: KStr::from_static("t"),
                    resource_pattern_type: PatternType::Literal.code(),
                    principal: KStr::from_static("User:bob"),
                    host: KStr::from_static("*"),
                    operation: AclOperation::Describe.code(),
                    permission_type: AclPermissionType::Deny.code(),
                    ..Default::default()
                },
            ],
            ..Default::default()
        }))
        .await
        .unwrap();
    let ResponseBody::CreateAcls(r) = body else {
        panic!()
    };
    assert_ne!(r.results[0].error_code, 0, "{r:?}");
    assert_eq!(r.results[1].error_code, 0, "{r:?}");
    // Delete alice's prefixed ACL with a filter.
    let body = admin
        .request(RequestBody::DeleteAcls(DeleteAclsRequest {
            filters: vec![DeleteAclsFilter {
                resource_type_filter: ResourceType::Topic.code(),
                resource_name_filter: Some(KStr::from_static("logs-")),
                pattern_type_filter: PatternType::Prefixed.code(),
                principal_filter: None,
                host_filter: None,
                operation: AclOperation::Any.code(),
                permission_type: AclPermissionType::Any.code(),
                ..Default::default()
            }],
            ..Default::default()
        }))
        .await
        .unwrap();
    let ResponseBody::DeleteAcls(r) = body else {
        panic!()
    };
    assert_eq!(r.filter_results[0].error_code, 0);
    assert_eq!(r.filter_results[0].matching_acls.len(), 1);
    drop(alice);
    drop(admin);
    // Restart: the ACLs are back.
    let dir = broker.stop();
    let broker = in_process::InProcessBroker::start_in(dir, &secured_settings());
    let admin = connect_as(&broker.bootstrap(), "admin").await;
    let (_, acls) = describe_all(&admin).await;
    let names: Vec<&str> = acls.iter().map(|a| a.0.as_str()).collect();
    assert_eq!(names, ["g1", "orders", "t"]);
}

fn secured_settings() -> Vec<(&'static str, &'static str)> {
    vec![
        ("listeners", "SASL_PLAINTEXT://127.0.0.1:9092"),
        ("sasl.enabled.mechanisms", "PLAIN"),
        (
            "listener.name.sasl_plaintext.plain.sasl.jaas.config",
            secured::JAAS,
        ),
        (
            "authorizer.class.name",
            "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        ),
        ("super.users", "User:admin"),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_authorizer_acl_requests_are_security_disabled() {
    let broker = in_process::InProcessBroker::start(&[]);
    let c = Connection::connect(&broker.bootstrap(), Default::default())
        .await
        .unwrap();
    assert_eq!(
        ErrorCode(describe_all(&c).await.0),
        ErrorCode::SECURITY_DISABLED
    );
}

#[path = "common/peers.rs"]
#[allow(dead_code)]
mod peers;

/// confluent-kafka and kafka-python with ACLs made by confluent-kafka's AdminClient
/// (tests/security/acl_peers.py).
#[test]
fn python_peers_with_acls() {
    let broker = secured_broker(&[]);
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/security/acl_peers.py")
        .display()
        .to_string();
    let bootstrap = broker.bootstrap();
    let Some(text) = peers::run("python3", &[&script, "--bootstrap", &bootstrap]) else {
        return;
    };
    for check in [
        "confluent-kafka acls created and described ok",
        "confluent-kafka without WRITE: TOPIC_AUTHORIZATION_FAILED ok",
        "confluent-kafka prefixed ACL allows logs-a ok",
        "confluent-kafka prefixed ACL allows logs-b ok",
        "confluent-kafka DENY beats the prefixed ALLOW ok",
        "confluent-kafka consumer without group READ: GROUP_AUTHORIZATION_FAILED ok",
        "confluent-kafka consumer with group and topic READ reads ok",
        "confluent-kafka DeleteTopics without DELETE refused ok",
        "kafka-python without WRITE: TopicAuthorizationFailedError ok",
        "kafka-python prefixed ACL allows logs-b ok",
    ] {
        assert!(text.contains(check), "missing {check:?}:\n{text}");
    }
}
