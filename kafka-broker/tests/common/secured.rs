//! A broker with SASL PLAIN users and Kafka's authorizer on, for the ACL tests: `admin` is a
//! super user, `alice` and `bob` have only the ACLs a test gives them. Connections as any of
//! them (kafka-net, SASL PLAIN), and ACLs made through CreateAcls as `admin`.

use kafka_auth::acl::{AclOperation, AclPermissionType, PatternType, ResourceType};
use kafka_net::{Connection, ConnectionConfig, SecurityKeys};
use kafka_protocol::KStr;
use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::{CreateAclsRequest, RequestBody, ResponseBody};

use super::in_process::InProcessBroker;

pub(crate) const JAAS: &str = "org.apache.kafka.common.security.plain.PlainLoginModule required \
    user_admin=\"admin-secret\" user_alice=\"alice-secret\" user_bob=\"bob-secret\";";

/// A SASL_PLAINTEXT broker with the authorizer on and `admin` as the super user; `extra`
/// settings on top (e.g. `allow.everyone.if.no.acl.found`).
pub(crate) fn secured_broker(extra: &[(&str, &str)]) -> InProcessBroker {
    let mut settings: Vec<(&str, &str)> = vec![
        ("listeners", "SASL_PLAINTEXT://127.0.0.1:9092"),
        ("sasl.enabled.mechanisms", "PLAIN"),
        ("listener.name.sasl_plaintext.plain.sasl.jaas.config", JAAS),
        (
            "authorizer.class.name",
            "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        ),
        ("super.users", "User:admin"),
    ];
    settings.extend_from_slice(extra);
    InProcessBroker::start(&settings)
}

/// The client settings of `user` (password `USER-secret`), for our producer and consumer.
pub(crate) fn login(user: &str) -> Vec<(String, String)> {
    vec![
        ("security.protocol".into(), "SASL_PLAINTEXT".into()),
        ("sasl.mechanism".into(), "PLAIN".into()),
        ("sasl.username".into(), user.into()),
        ("sasl.password".into(), format!("{user}-secret")),
    ]
}

/// A connection authenticated as `user`, versions negotiated.
pub(crate) async fn connect_as(bootstrap: &str, user: &str) -> Connection {
    let mut keys = SecurityKeys::default();
    for (k, v) in login(user) {
        keys.set(&k, &v).unwrap();
    }
    let cfg = ConnectionConfig {
        security: keys.build().unwrap(),
        ..ConnectionConfig::default()
    };
    Connection::connect(bootstrap, cfg).await.unwrap()
}

/// One ACL: ALLOW (or DENY) `principal` (`User:alice`) to do `op` on a resource, any host.
pub(crate) struct Acl<'a> {
    pub(crate) resource_type: ResourceType,
    pub(crate) name: &'a str,
    pub(crate) pattern: PatternType,
    pub(crate) principal: &'a str,
    pub(crate) op: AclOperation,
    pub(crate) permission: AclPermissionType,
}

/// ALLOW `principal` to do `op` on the LITERAL resource.
pub(crate) fn allow<'a>(
    principal: &'a str,
    op: AclOperation,
    resource_type: ResourceType,
    name: &'a str,
) -> Acl<'a> {
    Acl {
        resource_type,
        name,
        pattern: PatternType::Literal,
        principal,
        op,
        permission: AclPermissionType::Allow,
    }
}

/// Creates ACLs as `admin`; every creation must succeed.
pub(crate) async fn create_acls(bootstrap: &str, acls: &[Acl<'_>]) {
    let admin = connect_as(bootstrap, "admin").await;
    let creations = acls
        .iter()
        .map(|a| AclCreation {
            resource_type: a.resource_type.code(),
            resource_name: KStr::from(a.name.to_owned()),
            resource_pattern_type: a.pattern.code(),
            principal: KStr::from(a.principal.to_owned()),
            host: KStr::from_static("*"),
            operation: a.op.code(),
            permission_type: a.permission.code(),
            ..Default::default()
        })
        .collect();
    let body = admin
        .request(RequestBody::CreateAcls(CreateAclsRequest {
            creations,
            ..Default::default()
        }))
        .await
        .unwrap();
    let ResponseBody::CreateAcls(r) = body else {
        panic!("CreateAcls answered {body:?}")
    };
    assert_eq!(
        r.results.len(),
        acls.len(),
        "one result per creation: {r:?}"
    );
    for res in &r.results {
        assert_eq!(res.error_code, 0, "CreateAcls: {res:?}");
    }
}
