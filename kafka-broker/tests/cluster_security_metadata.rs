//! ACLs, SCRAM credentials and client quotas through a cluster's metadata log, on 3 combined
//! `kafka-broker` processes (tests/cluster/harness.rs) whose client listener is
//! SASL_PLAINTEXT with PLAIN users (`admin`, a super user, and `alice`) and Kafka's
//! StandardAuthorizer:
//!
//! - an ACL created through node 1 lets alice produce through node 3, a DENY created through
//!   node 2 refuses her on node 1, DeleteAcls through node 3 removes them on every node;
//! - a SCRAM user created through node 2 logs in on nodes 1 and 3;
//! - a quota set through node 1 is described by node 3;
//! - all three survive a SIGKILL and restart of every node, then the loss of the active
//!   controller, and stay changeable;
//! - CreateTopics and DeleteTopics by alice without ACLs are refused by the broker she asks,
//!   which forwards nothing.
//!
//! The brokers' links to each other and to the controllers stay PLAINTEXT here (another part
//! of issue 25 secures them): on those listeners every connection is `User:ANONYMOUS`, which
//! is therefore a super user too, as are the harness's own plaintext admin connections.
#![allow(clippy::unwrap_used)]

#[path = "cluster/harness.rs"]
#[allow(dead_code)]
mod harness;

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use harness::{Cluster, Role, active_controller, metadata, partitions, until_brokers};
use kafka_auth::acl::{AclOperation, AclPermissionType, PatternType, ResourceType};
use kafka_auth::sasl::{ScramMechanism, salted_password};
use kafka_net::{Connection, ConnectionConfig, SecurityKeys};
use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::alter_client_quotas_request::{EntityData, EntryData, OpData};
use kafka_protocol::messages::alter_user_scram_credentials_request::ScramCredentialUpsertion;
use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::describe_client_quotas_request::ComponentData;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    AlterClientQuotasRequest, AlterUserScramCredentialsRequest, CreateAclsRequest,
    CreateTopicsRequest, DeleteAclsRequest, DeleteTopicsRequest, DescribeAclsRequest,
    DescribeClientQuotasRequest, ProduceRequest, RequestBody, ResponseBody,
};
use kafka_protocol::record::RecordBatchBuilder;

const JAAS: &str = "org.apache.kafka.common.security.plain.PlainLoginModule required \
    user_admin=\"admin-secret\" user_alice=\"alice-secret\";";

const TOPIC: &str = "orders";
const WAIT: Duration = Duration::from_secs(20);

/// The cluster, and each node's SASL_PLAINTEXT address.
fn cluster() -> (Cluster, BTreeMap<i32, String>) {
    let jaas = format!("listener.name.sasl_plaintext.plain.sasl.jaas.config={JAAS}");
    let extra = [
        "broker.heartbeat.interval.ms=500",
        "broker.session.timeout.ms=3000",
        "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        jaas.as_str(),
        "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        // ANONYMOUS: the brokers' own PLAINTEXT links (and the harness's checks) until the
        // cluster's listeners are secured.
        "super.users=User:admin;User:ANONYMOUS",
    ];
    let mut c = Cluster::new(&[Role::Combined; 3], &extra);
    let mut sasl = BTreeMap::new();
    for id in 1..=3 {
        let port = harness::free_port();
        let n = c.node(id);
        let plain = n.port.unwrap();
        let ctrl = n.controller_port.unwrap();
        n.settings = vec![
            format!(
                "listeners=SASL_PLAINTEXT://127.0.0.1:{port},PLAINTEXT://127.0.0.1:{plain},\
                 CONTROLLER://127.0.0.1:{ctrl}"
            ),
            format!(
                "advertised.listeners=SASL_PLAINTEXT://127.0.0.1:{port},\
                 PLAINTEXT://127.0.0.1:{plain}"
            ),
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,\
             SASL_PLAINTEXT:SASL_PLAINTEXT"
                .to_owned(),
        ];
        sasl.insert(id, format!("127.0.0.1:{port}"));
    }
    (c, sasl)
}

/// A connection to `addr` logged in as `user` with `mechanism`.
async fn login(addr: &str, mechanism: &str, user: &str, password: &str) -> Option<Connection> {
    let mut keys = SecurityKeys::default();
    for (k, v) in [
        ("security.protocol", "SASL_PLAINTEXT"),
        ("sasl.mechanism", mechanism),
        ("sasl.username", user),
        ("sasl.password", password),
    ] {
        keys.set(k, v).unwrap();
    }
    let cfg = ConnectionConfig {
        security: keys.build().unwrap(),
        connect_timeout: Duration::from_secs(3),
        ..ConnectionConfig::default()
    };
    tokio::time::timeout(Duration::from_secs(10), Connection::connect(addr, cfg))
        .await
        .ok()?
        .ok()
}

async fn as_user(addr: &str, user: &str) -> Connection {
    login(addr, "PLAIN", user, &format!("{user}-secret"))
        .await
        .unwrap_or_else(|| panic!("{user} logs in at {addr}"))
}

async fn call(c: &Connection, body: RequestBody) -> ResponseBody {
    tokio::time::timeout(Duration::from_secs(40), c.request(body))
        .await
        .expect("answered in time")
        .expect("answered")
}

fn s(v: &str) -> KStr {
    KStr::from(v.to_owned())
}

fn acl(principal: &str, op: AclOperation, permission: AclPermissionType) -> AclCreation {
    AclCreation {
        resource_type: ResourceType::Topic.code(),
        resource_name: s(TOPIC),
        resource_pattern_type: PatternType::Literal.code(),
        principal: s(principal),
        host: s("*"),
        operation: op.code(),
        permission_type: permission.code(),
        ..Default::default()
    }
}

async fn create_acls(addr: &str, creations: Vec<AclCreation>) {
    let admin = as_user(addr, "admin").await;
    let ResponseBody::CreateAcls(r) = call(
        &admin,
        RequestBody::CreateAcls(CreateAclsRequest {
            creations,
            ..Default::default()
        }),
    )
    .await
    else {
        panic!()
    };
    assert!(r.results.iter().all(|x| x.error_code == 0), "{r:?}");
}

/// alice's ACLs on the topic as `addr` describes them: (operation, permission).
async fn described_acls(addr: &str) -> Vec<(i8, i8)> {
    let admin = as_user(addr, "admin").await;
    let ResponseBody::DescribeAcls(r) = call(
        &admin,
        RequestBody::DescribeAcls(DescribeAclsRequest {
            // The generated defaults are Kafka's empty strings, not null (any).
            resource_name_filter: None,
            principal_filter: None,
            host_filter: None,
            resource_type_filter: ResourceType::Any.code(),
            pattern_type_filter: PatternType::Any.code(),
            operation: AclOperation::Any.code(),
            permission_type: AclPermissionType::Any.code(),
            ..Default::default()
        }),
    )
    .await
    else {
        panic!()
    };
    assert_eq!(r.error_code, 0, "{r:?}");
    let mut out: Vec<(i8, i8)> = r
        .resources
        .iter()
        .flat_map(|res| &res.acls)
        .map(|a| (a.operation, a.permission_type))
        .collect();
    out.sort();
    out
}

/// One record produced by alice through `addr` to `partition` of the topic: the error code.
async fn produce_as_alice(addr: &str, partition: i32) -> i16 {
    let alice = as_user(addr, "alice").await;
    let mut b = RecordBatchBuilder::new();
    b.append(0, None, Some(b"hello"), &[]).unwrap();
    let req = ProduceRequest {
        acks: -1,
        timeout_ms: 10_000,
        topic_data: vec![TopicProduceData {
            name: s(TOPIC),
            partition_data: vec![PartitionProduceData {
                index: partition,
                records: Some(b.build().unwrap()),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let ResponseBody::Produce(r) = call(&alice, RequestBody::Produce(req)).await else {
        panic!()
    };
    r.responses[0].partition_responses[0].error_code
}

/// The partition of the topic node `id` leads.
async fn led_by(c: &mut Cluster, id: i32) -> i32 {
    let addr = c.addr(id);
    c.eventually(&format!("node {id} leads a partition"), WAIT, || {
        let addr = addr.clone();
        async move {
            let m = metadata(&addr, Some(&[TOPIC])).await?;
            partitions(&m, TOPIC)?
                .into_iter()
                .find(|(_, leader, _, _)| *leader == id)
                .map(|(index, _, _, _)| index)
        }
    })
    .await
}

/// Waits until alice's produce through node `id` (to the partition it leads) answers `want`.
async fn until_produce(c: &mut Cluster, sasl: &BTreeMap<i32, String>, id: i32, want: ErrorCode) {
    let partition = led_by(c, id).await;
    let addr = sasl[&id].clone();
    c.eventually(
        &format!("alice's produce through node {id} answers {want:?}"),
        WAIT,
        || {
            let addr = addr.clone();
            async move { (produce_as_alice(&addr, partition).await == want.0).then_some(()) }
        },
    )
    .await;
}

async fn until_acls(c: &mut Cluster, sasl: &BTreeMap<i32, String>, id: i32, want: &[(i8, i8)]) {
    let addr = sasl[&id].clone();
    let deadline = std::time::Instant::now() + WAIT;
    loop {
        let got = described_acls(&addr).await;
        if got == want {
            return;
        }
        if std::time::Instant::now() > deadline {
            panic!("node {id} describes {got:?}, not {want:?}\n{}", c.logs());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn scram_upsertion(user: &str, password: &str) -> ScramCredentialUpsertion {
    let m = ScramMechanism::Sha512;
    let salt = format!("salt-of-{user}").into_bytes();
    let salted = salted_password(m, password.as_bytes(), &salt, 4096).unwrap();
    ScramCredentialUpsertion {
        name: s(user),
        mechanism: m.type_id(),
        iterations: 4096,
        salt: Bytes::from(salt),
        salted_password: Bytes::copy_from_slice(salted.expose()),
        ..Default::default()
    }
}

async fn until_scram_login(c: &mut Cluster, sasl: &BTreeMap<i32, String>, id: i32, user: &str) {
    let addr = sasl[&id].clone();
    let user = user.to_owned();
    c.eventually(&format!("{user} logs in on node {id}"), WAIT, || {
        let addr = addr.clone();
        let user = user.clone();
        async move {
            login(&addr, "SCRAM-SHA-512", &user, &format!("{user}-scram"))
                .await
                .map(|_| ())
        }
    })
    .await;
}

fn quota_entry(user: &str, value: f64) -> EntryData {
    EntryData {
        entity: vec![EntityData {
            entity_type: s("user"),
            entity_name: Some(s(user)),
            ..Default::default()
        }],
        ops: vec![OpData {
            key: s("producer_byte_rate"),
            value,
            remove: false,
            ..Default::default()
        }],
        ..Default::default()
    }
}

async fn alter_quota(addr: &str, user: &str, value: f64) {
    let admin = as_user(addr, "admin").await;
    let ResponseBody::AlterClientQuotas(r) = call(
        &admin,
        RequestBody::AlterClientQuotas(AlterClientQuotasRequest {
            entries: vec![quota_entry(user, value)],
            ..Default::default()
        }),
    )
    .await
    else {
        panic!()
    };
    assert_eq!(r.entries[0].error_code, 0, "{r:?}");
}

/// `user`'s producer_byte_rate as `addr` describes it.
async fn described_quota(addr: &str, user: &str) -> Option<f64> {
    let admin = as_user(addr, "admin").await;
    let ResponseBody::DescribeClientQuotas(r) = call(
        &admin,
        RequestBody::DescribeClientQuotas(DescribeClientQuotasRequest {
            components: vec![ComponentData {
                entity_type: s("user"),
                match_type: 0,
                r#match: Some(s(user)),
                ..Default::default()
            }],
            ..Default::default()
        }),
    )
    .await
    else {
        panic!()
    };
    assert_eq!(r.error_code, 0, "{r:?}");
    r.entries?
        .iter()
        .flat_map(|e| &e.values)
        .find(|v| v.key == "producer_byte_rate")
        .map(|v| v.value)
}

async fn until_quota(
    c: &mut Cluster,
    sasl: &BTreeMap<i32, String>,
    id: i32,
    user: &str,
    want: f64,
) {
    let addr = sasl[&id].clone();
    let user = user.to_owned();
    c.eventually(
        &format!("node {id} describes {user}'s quota {want}"),
        WAIT,
        || {
            let addr = addr.clone();
            let user = user.clone();
            async move { (described_quota(&addr, &user).await == Some(want)).then_some(()) }
        },
    )
    .await;
}

const WRITE_ALLOW: (i8, i8) = (4, 3);
const WRITE_DENY: (i8, i8) = (4, 2);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acls_scram_users_and_quotas_reach_every_broker_and_survive_restarts_and_failover() {
    assert_eq!(
        (AclOperation::Write.code(), AclPermissionType::Allow.code()),
        WRITE_ALLOW
    );
    assert_eq!(AclPermissionType::Deny.code(), WRITE_DENY.1);
    let (mut c, sasl) = cluster();
    c.start_all();
    until_brokers(&mut c, &[1, 2, 3]).await;
    // The topic, made by the super user: 3 partitions on 3 replicas, one led by each node.
    let admin = as_user(&sasl[&1], "admin").await;
    let ResponseBody::CreateTopics(r) = call(
        &admin,
        RequestBody::CreateTopics(CreateTopicsRequest {
            topics: vec![CreatableTopic {
                name: s(TOPIC),
                num_partitions: 3,
                replication_factor: 3,
                ..Default::default()
            }],
            timeout_ms: 10_000,
            ..Default::default()
        }),
    )
    .await
    else {
        panic!()
    };
    assert_eq!(r.topics[0].error_code, 0, "{r:?}");

    // Item 1: without ACLs alice may neither create nor delete topics through a broker that
    // forwards them, and nothing reaches the controller.
    let alice = as_user(&sasl[&2], "alice").await;
    let ResponseBody::CreateTopics(r) = call(
        &alice,
        RequestBody::CreateTopics(CreateTopicsRequest {
            topics: vec![CreatableTopic {
                name: s("alices-topic"),
                num_partitions: 1,
                replication_factor: 1,
                ..Default::default()
            }],
            timeout_ms: 10_000,
            ..Default::default()
        }),
    )
    .await
    else {
        panic!()
    };
    assert_eq!(
        r.topics[0].error_code,
        ErrorCode::TOPIC_AUTHORIZATION_FAILED.0,
        "{r:?}"
    );
    let ResponseBody::DeleteTopics(r) = call(
        &alice,
        RequestBody::DeleteTopics(DeleteTopicsRequest {
            topics: vec![DeleteTopicState {
                name: Some(s(TOPIC)),
                ..Default::default()
            }],
            topic_names: vec![s(TOPIC)],
            timeout_ms: 10_000,
            ..Default::default()
        }),
    )
    .await
    else {
        panic!()
    };
    assert_eq!(
        r.responses[0].error_code,
        ErrorCode::TOPIC_AUTHORIZATION_FAILED.0,
        "{r:?}"
    );
    let m = metadata(&c.addr(3), None).await.unwrap();
    let names: Vec<&str> = m.topics.iter().filter_map(|t| t.name.as_deref()).collect();
    assert!(names.contains(&TOPIC), "not deleted: {names:?}");
    assert!(!names.contains(&"alices-topic"), "not created: {names:?}");
    // Without an ACL alice may not write either.
    until_produce(&mut c, &sasl, 3, ErrorCode::TOPIC_AUTHORIZATION_FAILED).await;
    // Nor see the topic: Metadata for all topics leaves it out, by name it is refused.
    for id in [1, 2, 3] {
        let seen = metadata_as_alice(&sasl[&id], None).await;
        assert!(seen.is_empty(), "node {id} showed alice {seen:?}");
        let named = metadata_as_alice(&sasl[&id], Some(TOPIC)).await;
        assert_eq!(
            named,
            [(TOPIC.to_owned(), ErrorCode::TOPIC_AUTHORIZATION_FAILED.0)],
            "node {id}"
        );
    }

    // An ALLOW through node 1 lets her produce through node 3.
    create_acls(
        &sasl[&1],
        vec![acl(
            "User:alice",
            AclOperation::Write,
            AclPermissionType::Allow,
        )],
    )
    .await;
    until_produce(&mut c, &sasl, 3, ErrorCode::NONE).await;
    // A DENY through node 2 refuses her on node 1 (deny beats allow).
    create_acls(
        &sasl[&2],
        vec![acl(
            "User:alice",
            AclOperation::Write,
            AclPermissionType::Deny,
        )],
    )
    .await;
    until_produce(&mut c, &sasl, 1, ErrorCode::TOPIC_AUTHORIZATION_FAILED).await;
    for id in 1..=3 {
        until_acls(&mut c, &sasl, id, &[WRITE_DENY, WRITE_ALLOW]).await;
    }
    // DeleteAcls of the DENY through node 3: gone everywhere, alice writes through node 1.
    let admin = as_user(&sasl[&3], "admin").await;
    let ResponseBody::DeleteAcls(r) = call(
        &admin,
        RequestBody::DeleteAcls(DeleteAclsRequest {
            filters: vec![DeleteAclsFilter {
                resource_type_filter: ResourceType::Topic.code(),
                resource_name_filter: Some(s(TOPIC)),
                pattern_type_filter: PatternType::Literal.code(),
                principal_filter: Some(s("User:alice")),
                host_filter: None,
                operation: AclOperation::Write.code(),
                permission_type: AclPermissionType::Deny.code(),
                ..Default::default()
            }],
            ..Default::default()
        }),
    )
    .await
    else {
        panic!()
    };
    assert_eq!(r.filter_results[0].matching_acls.len(), 1, "{r:?}");
    for id in 1..=3 {
        until_acls(&mut c, &sasl, id, &[WRITE_ALLOW]).await;
    }
    until_produce(&mut c, &sasl, 1, ErrorCode::NONE).await;

    // A SCRAM user created through node 2 logs in on nodes 1 and 3.
    let admin = as_user(&sasl[&2], "admin").await;
    let ResponseBody::AlterUserScramCredentials(r) = call(
        &admin,
        RequestBody::AlterUserScramCredentials(AlterUserScramCredentialsRequest {
            upsertions: vec![scram_upsertion("carol", "carol-scram")],
            ..Default::default()
        }),
    )
    .await
    else {
        panic!()
    };
    assert_eq!(r.results[0].error_code, 0, "{r:?}");
    until_scram_login(&mut c, &sasl, 1, "carol").await;
    until_scram_login(&mut c, &sasl, 3, "carol").await;
    assert!(
        login(&sasl[&3], "SCRAM-SHA-512", "carol", "wrong")
            .await
            .is_none(),
        "a wrong password is refused"
    );

    // A quota set through node 1 is described by node 3.
    alter_quota(&sasl[&1], "alice", 1_048_576.0).await;
    until_quota(&mut c, &sasl, 3, "alice", 1_048_576.0).await;

    // SIGKILL every node and start them all again: everything is still there.
    for id in 1..=3 {
        c.kill(id);
    }
    c.start_all();
    until_brokers(&mut c, &[1, 2, 3]).await;
    for id in 1..=3 {
        until_acls(&mut c, &sasl, id, &[WRITE_ALLOW]).await;
        until_scram_login(&mut c, &sasl, id, "carol").await;
        until_quota(&mut c, &sasl, id, "alice", 1_048_576.0).await;
    }
    // Leaderships are not spread again after the restart: produce through partition 0's.
    let addr = c.addr(1);
    let leader0 = c
        .eventually("partition 0 has a leader", WAIT, || {
            let addr = addr.clone();
            async move {
                let m = metadata(&addr, Some(&[TOPIC])).await?;
                partitions(&m, TOPIC)?
                    .into_iter()
                    .find(|(index, leader, _, _)| *index == 0 && *leader > 0)
                    .map(|(_, leader, _, _)| leader)
            }
        })
        .await;
    until_produce(&mut c, &sasl, leader0, ErrorCode::NONE).await;

    // The active controller dies: the others still have it all, and it still changes.
    let leader = active_controller(&mut c, &[1, 2, 3]).await;
    c.kill(leader);
    let alive: Vec<i32> = (1..=3).filter(|&id| id != leader).collect();
    for &id in &alive {
        until_acls(&mut c, &sasl, id, &[WRITE_ALLOW]).await;
        until_scram_login(&mut c, &sasl, id, "carol").await;
        until_quota(&mut c, &sasl, id, "alice", 1_048_576.0).await;
    }
    let (first, second) = (alive[0], alive[1]);
    // Changes go through once a new controller leads (the forwarding broker retries).
    create_acls(
        &sasl[&first],
        vec![acl(
            "User:alice",
            AclOperation::Read,
            AclPermissionType::Allow,
        )],
    )
    .await;
    until_acls(&mut c, &sasl, second, &[(3, 3), WRITE_ALLOW]).await;
    alter_quota(&sasl[&second], "alice", 2_097_152.0).await;
    until_quota(&mut c, &sasl, first, "alice", 2_097_152.0).await;
}

/// The topics alice's Metadata request through `addr` answers (all, or `topic` by name): each
/// name with its error code.
async fn metadata_as_alice(addr: &str, topic: Option<&str>) -> Vec<(String, i16)> {
    use kafka_protocol::messages::MetadataRequest;
    use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
    let alice = as_user(addr, "alice").await;
    let ResponseBody::Metadata(m) = call(
        &alice,
        RequestBody::Metadata(MetadataRequest {
            topics: topic.map(|t| {
                vec![MetadataRequestTopic {
                    name: Some(s(t)),
                    ..Default::default()
                }]
            }),
            allow_auto_topic_creation: false,
            ..Default::default()
        }),
    )
    .await
    else {
        panic!()
    };
    m.topics
        .iter()
        .map(|t| (t.name.as_deref().unwrap_or("").to_owned(), t.error_code))
        .collect()
}
