//! Our admin client's security calls against Apache Kafka (issue 25): one Kafka with the
//! StandardAuthorizer, `super.users=User:admin` and SASL_PLAINTEXT (PLAIN users admin and
//! alice, SCRAM-SHA-256/512 enabled), driven by `kafka_net::Admin` as admin:
//! - ACLs: created (literal and prefixed, allow and deny), described back through several
//!   filters, deleted by filter; alice's DescribeConfigs refused, allowed by an ACL, refused
//!   again by a DENY.
//! - SCRAM: credentials upserted (the client salts the password), described, used to log in,
//!   deleted (the login then fails); an unknown user answers RESOURCE_NOT_FOUND.
//! - Client quotas: set for a user, the default client id and a user + client id; described
//!   with exact, default and specified filters, strict or not; removed; `validate_only`
//!   changes nothing; an unknown key gets Kafka's INVALID_REQUEST.
//!
//! The controller listener stays PLAINTEXT: the broker reaches its controller as
//! `User:ANONYMOUS`, which must therefore be a super user too (the KRaft rule).
#![allow(clippy::unwrap_used, clippy::panic)]

use std::collections::BTreeSet;
use std::future::Future;
use std::time::{Duration, Instant};

use kafka_auth::acl::{
    AccessControlEntry, AccessControlEntryFilter, AclBinding, AclBindingFilter, AclOperation,
    AclPermissionType, PatternType, ResourcePattern, ResourcePatternFilter, ResourceType,
};
use kafka_auth::sasl::ScramMechanism;
use kafka_net::admin::{
    CLIENT_ID, ConfigResource, NewTopic, QuotaAlteration, QuotaEntity, QuotaEntry, QuotaFilter,
    QuotaFilterComponent, QuotaOp, ScramAlteration, USER,
};
use kafka_net::{Admin, ClusterConfig, Connection, ConnectionConfig, NetError, SecurityKeys};
use kafka_peers::{ApacheKafka, Jvm, KafkaOptions, require};
use kafka_protocol::error_code::ErrorCode;

const JAAS: &str = "org.apache.kafka.common.security.plain.PlainLoginModule required \
    username=\"admin\" password=\"admin-secret\" user_admin=\"admin-secret\" user_alice=\"alice-secret\";";

fn options() -> KafkaOptions {
    let scram = "org.apache.kafka.common.security.scram.ScramLoginModule required;";
    KafkaOptions {
        extra: vec![
            (
                "listener.security.protocol.map".into(),
                "PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT".into(),
            ),
            (
                "sasl.enabled.mechanisms".into(),
                "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512".into(),
            ),
            (
                "sasl.mechanism.inter.broker.protocol".into(),
                "PLAIN".into(),
            ),
            (
                "listener.name.plaintext.plain.sasl.jaas.config".into(),
                JAAS.into(),
            ),
            (
                "listener.name.plaintext.scram-sha-256.sasl.jaas.config".into(),
                scram.into(),
            ),
            (
                "listener.name.plaintext.scram-sha-512.sasl.jaas.config".into(),
                scram.into(),
            ),
            (
                "authorizer.class.name".into(),
                "org.apache.kafka.metadata.authorizer.StandardAuthorizer".into(),
            ),
            ("super.users".into(), "User:admin;User:ANONYMOUS".into()),
        ],
        ..KafkaOptions::default()
    }
}

/// A cluster config logging in with `mechanism` as `user`.
fn config(bootstrap: &str, mechanism: &str, user: &str, password: &str) -> ClusterConfig {
    let mut keys = SecurityKeys::default();
    for (k, v) in [
        ("security.protocol", "SASL_PLAINTEXT"),
        ("sasl.mechanism", mechanism),
        ("sasl.username", user),
        ("sasl.password", password),
    ] {
        keys.set(k, v).unwrap();
    }
    ClusterConfig {
        bootstrap: bootstrap.split(',').map(str::to_owned).collect(),
        connection: ConnectionConfig {
            security: keys.build().unwrap(),
            ..ConnectionConfig::default()
        },
        retries: 2,
        ..ClusterConfig::default()
    }
}

async fn login(bootstrap: &str, mechanism: &str, user: &str, password: &str) -> Admin {
    Admin::connect(config(bootstrap, mechanism, user, password))
        .await
        .unwrap_or_else(|e| panic!("{mechanism} login as {user}: {e}"))
}

/// Polls `probe` until it returns `Some` (Kafka applies admin changes through its metadata
/// log, so a broker sees them a moment after the answer); panics after 15 s with `what`.
async fn eventually<T, F, Fut>(what: &str, mut probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if let Some(v) = probe().await {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Kafka's `kafka-configs` (ConfigCommand) as admin: what it prints.
fn kafka_configs(jvm: &Jvm, kafka: &ApacheKafka, args: &[&str]) -> String {
    let props = kafka.dir().join("admin-client.properties");
    std::fs::write(
        &props,
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config=\
         org.apache.kafka.common.security.plain.PlainLoginModule required \
         username=\"admin\" password=\"admin-secret\";\n",
    )
    .unwrap();
    let bootstrap = kafka.bootstrap();
    let props = props.display().to_string();
    let mut all = vec![
        "--bootstrap-server",
        bootstrap.as_str(),
        "--command-config",
        props.as_str(),
    ];
    all.extend_from_slice(args);
    jvm.run(
        "org.apache.kafka.tools.ConfigCommand",
        &all,
        None,
        Duration::from_secs(120),
    )
    .unwrap_or_else(|e| panic!("{e}"))
    .stdout
}

fn code(e: &NetError) -> Option<i16> {
    e.error_code().map(|c| c.0)
}

#[test]
fn admin_security_calls_against_apache_kafka() {
    let Some(jvm) = require(Jvm::find()) else {
        return;
    };
    let Some(kafka) = require(ApacheKafka::start(&jvm, &options())) else {
        return;
    };
    let bootstrap = kafka.bootstrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let admin = login(&bootstrap, "PLAIN", "admin", "admin-secret").await;
        acls(&bootstrap, &admin).await;
        scram(&bootstrap, &admin).await;
        quotas(&admin).await;
        kafka_tool_cross_check(&jvm, &kafka, &admin).await;
    });
}

fn acl(
    pattern: ResourcePattern,
    principal: &str,
    op: AclOperation,
    perm: AclPermissionType,
) -> AclBinding {
    AclBinding::new(pattern, AccessControlEntry::new(principal, "*", op, perm))
}

fn topic_filter(name: Option<&str>, pattern_type: PatternType) -> AclBindingFilter {
    AclBindingFilter::new(
        ResourcePatternFilter::new(ResourceType::Topic, name.map(Into::into), pattern_type),
        AccessControlEntryFilter::any(),
    )
}

async fn described(admin: &Admin, filter: &AclBindingFilter) -> BTreeSet<AclBinding> {
    admin
        .describe_acls(filter)
        .await
        .unwrap_or_else(|e| panic!("describe_acls: {e}"))
        .into_iter()
        .collect()
}

/// alice's DescribeConfigs of `topic`: `Ok` or the error code.
async fn alice_describes(alice: &Admin, topic: &str) -> Result<(), Option<i16>> {
    let mut r = alice
        .describe_configs(&[ConfigResource::topic(topic)])
        .await;
    match r.pop() {
        Some(Ok(_)) => Ok(()),
        Some(Err(e)) => Err(code(&e)),
        None => Err(None),
    }
}

async fn acls(bootstrap: &str, admin: &Admin) {
    use AclOperation as Op;
    use AclPermissionType as Perm;
    let topic = "acl-t";
    for r in admin
        .create_topics(&[NewTopic::new(topic, 1, 1)], false)
        .await
    {
        r.unwrap();
    }
    let alice = login(bootstrap, "PLAIN", "alice", "alice-secret").await;
    // No ACL: alice may not read the topic's configs.
    assert_eq!(
        alice_describes(&alice, topic).await,
        Err(Some(ErrorCode::TOPIC_AUTHORIZATION_FAILED.0))
    );

    let literal = acl(
        ResourcePattern::literal(ResourceType::Topic, topic),
        "User:alice",
        Op::DescribeConfigs,
        Perm::Allow,
    );
    let prefixed = acl(
        ResourcePattern::prefixed(ResourceType::Topic, "acl-"),
        "User:alice",
        Op::Read,
        Perm::Allow,
    );
    let wildcard_deny = acl(
        ResourcePattern::literal(ResourceType::Topic, "*"),
        "User:bob",
        Op::Write,
        Perm::Deny,
    );
    let group_deny = acl(
        ResourcePattern::prefixed(ResourceType::Group, "grp-"),
        "User:alice",
        Op::Read,
        Perm::Deny,
    );
    // Kafka refuses a CLUSTER binding not named kafka-cluster, alone.
    let bad_cluster = acl(
        ResourcePattern::literal(ResourceType::Cluster, "not-the-cluster"),
        "User:alice",
        Op::Alter,
        Perm::Allow,
    );
    let created = admin
        .create_acls(&[
            literal.clone(),
            prefixed.clone(),
            bad_cluster,
            wildcard_deny.clone(),
            group_deny.clone(),
        ])
        .await;
    assert_eq!(created.len(), 5);
    for (i, r) in created.iter().enumerate() {
        if i == 2 {
            let e = r.as_ref().unwrap_err();
            assert_eq!(code(e), Some(ErrorCode::INVALID_REQUEST.0), "{e}");
            assert!(e.to_string().contains("kafka-cluster"), "{e}");
        } else {
            assert!(r.is_ok(), "binding {i}: {r:?}");
        }
    }
    let all: BTreeSet<AclBinding> = [&literal, &prefixed, &wildcard_deny, &group_deny]
        .into_iter()
        .cloned()
        .collect();
    let any = AclBindingFilter::any();
    eventually("the four ACLs described", || async {
        (described(admin, &any).await == all).then_some(())
    })
    .await;
    // Creating an existing binding again succeeds and stores no second copy.
    assert!(admin.create_acls(std::slice::from_ref(&literal)).await[0].is_ok());

    // By principal.
    let alice_filter = AclBindingFilter::new(
        ResourcePatternFilter::any(),
        AccessControlEntryFilter::new(Some("User:alice".into()), None, Op::Any, Perm::Any),
    );
    let want: BTreeSet<_> = [&literal, &prefixed, &group_deny]
        .into_iter()
        .cloned()
        .collect();
    assert_eq!(described(admin, &alice_filter).await, want);
    // MATCH: every pattern that applies to the topic: its literal, the prefix, the wildcard.
    let want: BTreeSet<_> = [&literal, &prefixed, &wildcard_deny]
        .into_iter()
        .cloned()
        .collect();
    assert_eq!(
        described(admin, &topic_filter(Some(topic), PatternType::Match)).await,
        want
    );
    // MATCH with another name of the family: the prefix and the wildcard only.
    let want: BTreeSet<_> = [&prefixed, &wildcard_deny].into_iter().cloned().collect();
    assert_eq!(
        described(admin, &topic_filter(Some("acl-other"), PatternType::Match)).await,
        want
    );
    // LITERAL `*` is the wildcard binding itself; ANY with a name compares names exactly.
    let want: BTreeSet<_> = [wildcard_deny.clone()].into();
    assert_eq!(
        described(admin, &topic_filter(Some("*"), PatternType::Literal)).await,
        want
    );
    let want: BTreeSet<_> = [prefixed.clone()].into();
    assert_eq!(
        described(admin, &topic_filter(Some("acl-"), PatternType::Any)).await,
        want
    );
    // PREFIXED topics with any name, and every group binding.
    assert_eq!(
        described(admin, &topic_filter(None, PatternType::Prefixed)).await,
        [prefixed.clone()].into()
    );
    let groups = AclBindingFilter::new(
        ResourcePatternFilter::new(ResourceType::Group, None, PatternType::Any),
        AccessControlEntryFilter::any(),
    );
    assert_eq!(described(admin, &groups).await, [group_deny.clone()].into());

    // The ALLOW lets alice in; a DENY of the same operation beats it.
    eventually("alice allowed by the ACL", || async {
        alice_describes(&alice, topic).await.ok()
    })
    .await;
    let deny = acl(
        ResourcePattern::literal(ResourceType::Topic, topic),
        "User:alice",
        Op::DescribeConfigs,
        Perm::Deny,
    );
    assert!(admin.create_acls(std::slice::from_ref(&deny)).await[0].is_ok());
    eventually("alice refused by the DENY", || async {
        (alice_describes(&alice, topic).await == Err(Some(ErrorCode::TOPIC_AUTHORIZATION_FAILED.0)))
            .then_some(())
    })
    .await;

    // Delete alice's DENY bindings (any resource): exactly those two go.
    let alice_denies = AclBindingFilter::new(
        ResourcePatternFilter::any(),
        AccessControlEntryFilter::new(Some("User:alice".into()), None, Op::Any, Perm::Deny),
    );
    let nothing = topic_filter(Some("no-such-topic"), PatternType::Literal);
    let deleted = admin.delete_acls(&[alice_denies, nothing]).await;
    assert_eq!(deleted.len(), 2);
    let removed: BTreeSet<AclBinding> = deleted[0].clone().unwrap().into_iter().collect();
    assert_eq!(removed, [deny.clone(), group_deny.clone()].into());
    assert_eq!(deleted[1].as_ref().unwrap(), &Vec::<AclBinding>::new());
    let left: BTreeSet<_> = [&literal, &prefixed, &wildcard_deny]
        .into_iter()
        .cloned()
        .collect();
    eventually("the DENY bindings gone", || async {
        (described(admin, &any).await == left).then_some(())
    })
    .await;
    eventually("alice allowed again", || async {
        alice_describes(&alice, topic).await.ok()
    })
    .await;

    // alice herself may not manage ACLs (ALTER on the cluster) nor list them.
    let refused = alice.create_acls(&[deny]).await;
    assert_eq!(
        refused[0].as_ref().err().and_then(code),
        Some(ErrorCode::CLUSTER_AUTHORIZATION_FAILED.0),
        "{refused:?}"
    );
    let refused = alice.describe_acls(&any).await.unwrap_err();
    assert_eq!(
        code(&refused),
        Some(ErrorCode::CLUSTER_AUTHORIZATION_FAILED.0),
        "{refused}"
    );

    // Clean up the rest for the later sections.
    let gone = admin.delete_acls(std::slice::from_ref(&any)).await;
    assert_eq!(gone[0].as_ref().unwrap().len(), 3);
}

/// A connection to the first broker logging in with `mechanism`: `Ok` or the error.
async fn connect_as(
    bootstrap: &str,
    mechanism: &str,
    user: &str,
    password: &str,
) -> Result<(), NetError> {
    let cfg = config(bootstrap, mechanism, user, password);
    let addr = bootstrap.split(',').next().unwrap_or_default();
    Connection::connect(addr, cfg.connection).await.map(drop)
}

async fn scram(bootstrap: &str, admin: &Admin) {
    use ScramMechanism::{Sha256, Sha512};
    let not_found = Some(ErrorCode::RESOURCE_NOT_FOUND.0);
    let user = "frank";
    let described = |users: Option<Vec<&'static str>>| async move {
        admin
            .describe_user_scram_credentials(users.as_deref())
            .await
            .unwrap_or_else(|e| panic!("describe_user_scram_credentials: {e}"))
    };
    // A user without credentials: RESOURCE_NOT_FOUND for that user, not for the call.
    let r = described(Some(vec!["nobody"])).await;
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].0, "nobody");
    assert_eq!(r[0].1.as_ref().err().and_then(code), not_found, "{r:?}");

    // Kafka takes one alteration per user per request: both mechanisms at once are refused.
    let both = admin
        .alter_user_scram_credentials(&[
            ScramAlteration::upsert(user, Sha256, 4096, "frank-secret"),
            ScramAlteration::upsert(user, Sha512, 8192, "frank-secret"),
        ])
        .await;
    assert_eq!(both.len(), 1);
    assert_eq!(
        both[0].1.as_ref().err().and_then(code),
        Some(ErrorCode::DUPLICATE_RESOURCE.0),
        "{both:?}"
    );
    // Too many iterations: refused here, as Kafka's controller would.
    let many = admin
        .alter_user_scram_credentials(&[ScramAlteration::upsert(
            user,
            Sha256,
            16385,
            "frank-secret",
        )])
        .await;
    assert_eq!(
        many[0].1.as_ref().err().and_then(code),
        Some(ErrorCode::UNACCEPTABLE_CREDENTIAL.0)
    );
    for (m, iterations) in [(Sha256, 4096), (Sha512, 8192)] {
        let r = admin
            .alter_user_scram_credentials(&[ScramAlteration::upsert(
                user,
                m,
                iterations,
                "frank-secret",
            )])
            .await;
        assert_eq!(r.len(), 1);
        assert!(r[0].1.is_ok(), "{m:?}: {r:?}");
    }
    let want = vec![(Sha256, 4096), (Sha512, 8192)];
    eventually("frank's two credentials described", || async {
        let r = described(Some(vec![user])).await;
        let got = r.first().and_then(|(_, c)| c.as_ref().ok()).cloned();
        got.map(|mut g| {
            g.sort();
            g
        })
        .filter(|g| *g == want)
    })
    .await;
    // Every user: frank is among them.
    let all = described(None).await;
    assert!(all.iter().any(|(u, c)| u == user && c.is_ok()), "{all:?}");

    for mech in ["SCRAM-SHA-256", "SCRAM-SHA-512"] {
        eventually("frank's SCRAM login", || async {
            connect_as(bootstrap, mech, user, "frank-secret").await.ok()
        })
        .await;
        let e = connect_as(bootstrap, mech, user, "wrong")
            .await
            .unwrap_err();
        assert!(matches!(e, NetError::Authentication { .. }), "{mech}: {e}");
    }

    // alice may not alter credentials (ALTER on the cluster).
    let alice = login(bootstrap, "PLAIN", "alice", "alice-secret").await;
    let r = alice
        .alter_user_scram_credentials(&[ScramAlteration::delete(user, Sha256)])
        .await;
    assert_eq!(
        r[0].1.as_ref().err().and_then(code),
        Some(ErrorCode::CLUSTER_AUTHORIZATION_FAILED.0),
        "{r:?}"
    );

    // Delete SHA-256: its login fails, SHA-512 still works.
    let r = admin
        .alter_user_scram_credentials(&[ScramAlteration::delete(user, Sha256)])
        .await;
    assert!(r[0].1.is_ok(), "{r:?}");
    eventually("SHA-256 gone", || async {
        connect_as(bootstrap, "SCRAM-SHA-256", user, "frank-secret")
            .await
            .err()
    })
    .await;
    connect_as(bootstrap, "SCRAM-SHA-512", user, "frank-secret")
        .await
        .unwrap();
    let r = described(Some(vec![user])).await;
    assert_eq!(r[0].1.as_ref().unwrap(), &vec![(Sha512, 8192)]);
    // Deleting a credential that is not there: RESOURCE_NOT_FOUND.
    let r = admin
        .alter_user_scram_credentials(&[ScramAlteration::delete(user, Sha256)])
        .await;
    assert_eq!(r[0].1.as_ref().err().and_then(code), not_found, "{r:?}");
    // The last one: frank has no credentials left.
    let r = admin
        .alter_user_scram_credentials(&[ScramAlteration::delete(user, Sha512)])
        .await;
    assert!(r[0].1.is_ok(), "{r:?}");
    eventually("frank unknown again", || async {
        let r = described(Some(vec![user])).await;
        (r[0].1.as_ref().err().and_then(code) == not_found).then_some(())
    })
    .await;
    let e = connect_as(bootstrap, "SCRAM-SHA-512", user, "frank-secret")
        .await
        .unwrap_err();
    assert!(matches!(e, NetError::Authentication { .. }), "{e}");
}

/// The entries sorted (entities, and keys within each), for comparison.
fn sorted(mut entries: Vec<QuotaEntry>) -> Vec<QuotaEntry> {
    for (_, values) in &mut entries {
        values.sort_by(|a, b| a.0.cmp(&b.0));
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    entries
}

fn entry(entity: &QuotaEntity, values: &[(&str, f64)]) -> QuotaEntry {
    (
        entity.clone(),
        values.iter().map(|(k, v)| ((*k).to_owned(), *v)).collect(),
    )
}

async fn quotas(admin: &Admin) {
    let alice = QuotaEntity::user(Some("alice"));
    let default_client = QuotaEntity::client_id(None);
    let alice_app = QuotaEntity::user(Some("alice")).with(CLIENT_ID, Some("app"));
    let describe = |filter: QuotaFilter| async move {
        sorted(
            admin
                .describe_client_quotas(&filter)
                .await
                .unwrap_or_else(|e| panic!("describe_client_quotas {filter:?}: {e}")),
        )
    };
    let r = admin
        .alter_client_quotas(
            &[
                QuotaAlteration::new(
                    alice.clone(),
                    vec![QuotaOp::set("producer_byte_rate", 1024.0)],
                ),
                QuotaAlteration::new(
                    default_client.clone(),
                    vec![QuotaOp::set("producer_byte_rate", 2048.0)],
                ),
                QuotaAlteration::new(
                    alice_app.clone(),
                    vec![
                        QuotaOp::set("producer_byte_rate", 4096.0),
                        QuotaOp::set("consumer_byte_rate", 8192.0),
                    ],
                ),
            ],
            false,
        )
        .await;
    let entities: Vec<&QuotaEntity> = r.iter().map(|(e, _)| e).collect();
    assert_eq!(entities, [&alice, &default_client, &alice_app]);
    for (e, res) in &r {
        assert!(res.is_ok(), "{e}: {res:?}");
    }
    let e_alice = entry(&alice, &[("producer_byte_rate", 1024.0)]);
    let e_default = entry(&default_client, &[("producer_byte_rate", 2048.0)]);
    let e_app = entry(
        &alice_app,
        &[
            ("consumer_byte_rate", 8192.0),
            ("producer_byte_rate", 4096.0),
        ],
    );
    let everything = sorted(vec![e_alice.clone(), e_default.clone(), e_app.clone()]);
    eventually("the three quotas described", || async {
        (describe(QuotaFilter::all()).await == everything).then_some(())
    })
    .await;

    // Exact user, not strict: every entity with that user part.
    assert_eq!(
        describe(QuotaFilter::containing(vec![QuotaFilterComponent::exact(
            USER, "alice"
        )]))
        .await,
        sorted(vec![e_alice.clone(), e_app.clone()])
    );
    // Strict: only the entity made of that part alone.
    assert_eq!(
        describe(QuotaFilter::only(vec![QuotaFilterComponent::exact(
            USER, "alice"
        )]))
        .await,
        vec![e_alice.clone()]
    );
    // The default client id.
    assert_eq!(
        describe(QuotaFilter::containing(vec![
            QuotaFilterComponent::default_entity(CLIENT_ID)
        ]))
        .await,
        vec![e_default.clone()]
    );
    // "Specified" client id: KIP-546 says any named one, but Kafka's KRaft broker answers
    // every entity with a client-id part, the default included.
    assert_eq!(
        describe(QuotaFilter::containing(vec![
            QuotaFilterComponent::specified(CLIENT_ID)
        ]))
        .await,
        sorted(vec![e_default.clone(), e_app.clone()])
    );
    // Both parts, strict.
    assert_eq!(
        describe(QuotaFilter::only(vec![
            QuotaFilterComponent::specified(USER),
            QuotaFilterComponent::exact(CLIENT_ID, "app"),
        ]))
        .await,
        vec![e_app.clone()]
    );
    // A user nobody set.
    assert!(
        describe(QuotaFilter::containing(vec![QuotaFilterComponent::exact(
            USER, "zoe"
        )]))
        .await
        .is_empty()
    );
    // A filter naming one type twice: Kafka's INVALID_REQUEST for the whole call.
    let e = admin
        .describe_client_quotas(&QuotaFilter::containing(vec![
            QuotaFilterComponent::exact(USER, "alice"),
            QuotaFilterComponent::specified(USER),
        ]))
        .await
        .unwrap_err();
    assert_eq!(code(&e), Some(ErrorCode::INVALID_REQUEST.0), "{e}");

    // validate_only: answered, nothing changes.
    let r = admin
        .alter_client_quotas(
            &[QuotaAlteration::new(
                alice.clone(),
                vec![QuotaOp::set("producer_byte_rate", 1.0)],
            )],
            true,
        )
        .await;
    assert!(r[0].1.is_ok(), "{r:?}");
    // An unknown key: INVALID_REQUEST with Kafka's message, checked even when validating.
    for validate_only in [true, false] {
        let r = admin
            .alter_client_quotas(
                &[QuotaAlteration::new(
                    alice.clone(),
                    vec![QuotaOp::set("no_such_quota", 5.0)],
                )],
                validate_only,
            )
            .await;
        let e = r[0].1.as_ref().unwrap_err();
        assert_eq!(code(e), Some(ErrorCode::INVALID_REQUEST.0), "{e}");
        assert!(e.to_string().contains("no_such_quota"), "{e}");
    }

    // Remove one key of alice+app; the rest stays.
    let r = admin
        .alter_client_quotas(
            &[QuotaAlteration::new(
                alice_app.clone(),
                vec![QuotaOp::remove("consumer_byte_rate")],
            )],
            false,
        )
        .await;
    assert!(r[0].1.is_ok(), "{r:?}");
    let after = sorted(vec![
        e_alice,
        e_default,
        entry(&alice_app, &[("producer_byte_rate", 4096.0)]),
    ]);
    eventually(
        "consumer_byte_rate removed, the validate_only change not made",
        || async { (describe(QuotaFilter::all()).await == after).then_some(()) },
    )
    .await;
}

/// Kafka's own tool reads what our client wrote, and our client reads what the tool wrote.
async fn kafka_tool_cross_check(jvm: &Jvm, kafka: &ApacheKafka, admin: &Admin) {
    let user_args = [
        "--describe",
        "--entity-type",
        "users",
        "--entity-name",
        "alice",
    ];
    let out = kafka_configs(jvm, kafka, &user_args);
    assert!(
        out.contains("Quota configs for user-principal 'alice' are producer_byte_rate=1024.0"),
        "{out}"
    );
    kafka_configs(
        jvm,
        kafka,
        &[
            "--alter",
            "--entity-type",
            "users",
            "--entity-name",
            "bob",
            "--add-config",
            "consumer_byte_rate=333",
        ],
    );
    let bob = QuotaEntity::user(Some("bob"));
    let want = vec![entry(&bob, &[("consumer_byte_rate", 333.0)])];
    eventually("bob's quota set by kafka-configs", || async {
        let got = admin
            .describe_client_quotas(&QuotaFilter::only(vec![QuotaFilterComponent::exact(
                USER, "bob",
            )]))
            .await
            .unwrap();
        (got == want).then_some(())
    })
    .await;
}
