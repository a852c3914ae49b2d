//! SASL listeners (SASL_PLAINTEXT, SASL_SSL) with PLAIN and SCRAM-SHA-256/512: our producer
//! and consumer, kcat, kafka-python and confluent-kafka authenticate; a wrong password is
//! refused with SASL_AUTHENTICATION_FAILED and the connection closed; SCRAM credentials are
//! managed with AlterUserScramCredentials / DescribeUserScramCredentials; and the pitfalls
//! peers hit: requests before authentication, SaslAuthenticate before SaslHandshake, an
//! unknown mechanism, re-authentication (KIP-368) on the same connection, and the session
//! lifetime answered.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/in_process.rs"]
#[allow(dead_code)]
mod in_process;
#[path = "common/peers.rs"]
#[allow(dead_code)]
mod peers;
#[path = "common/round_trip.rs"]
mod round_trip;

use std::path::Path;
use std::time::{Duration, Instant};

use bytes::Bytes;
use in_process::InProcessBroker;
use kafka_auth::sasl::{ClientExchange, ClientStep, Mechanism, ScramMechanism, salted_password};
use kafka_net::{Connection, ConnectionConfig, NetError};
use kafka_peers::certs::TestCa;
use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::alter_user_scram_credentials_request::ScramCredentialUpsertion;
use kafka_protocol::messages::{
    AlterUserScramCredentialsRequest, DescribeUserScramCredentialsRequest, MetadataRequest,
    RequestBody, ResponseBody, SaslAuthenticateRequest, SaslHandshakeRequest,
};

const JAAS: &str = "org.apache.kafka.common.security.plain.PlainLoginModule required \
    username=\"admin\" password=\"admin-secret\" user_admin=\"admin-secret\" user_alice=\"alice-secret\";";

fn sasl_broker(protocol: &str, extra: &[(&str, &str)]) -> InProcessBroker {
    let listeners = format!("{protocol}://127.0.0.1:9092");
    let jaas_key = format!(
        "listener.name.{}.plain.sasl.jaas.config",
        protocol.to_lowercase()
    );
    let mut settings: Vec<(&str, &str)> = vec![
        ("listeners", &listeners),
        (
            "sasl.enabled.mechanisms",
            "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        ),
        (&jaas_key, JAAS),
    ];
    settings.extend_from_slice(extra);
    InProcessBroker::start(&settings)
}

fn login(protocol: &str, mechanism: &str, user: &str, password: &str) -> Vec<(String, String)> {
    vec![
        ("security.protocol".into(), protocol.into()),
        ("sasl.mechanism".into(), mechanism.into()),
        ("sasl.username".into(), user.into()),
        ("sasl.password".into(), password.into()),
    ]
}

async fn round_trip(
    bootstrap: &str,
    settings: &[(String, String)],
    topic: &str,
    n: usize,
) -> Result<Vec<String>, String> {
    round_trip::round_trip_with("sasl", bootstrap, settings, topic, n).await
}

fn expected(n: usize) -> Vec<String> {
    round_trip::values("sasl", n)
}

/// A connection that has only negotiated versions (no SASL).
async fn raw(bootstrap: &str) -> Connection {
    Connection::connect(bootstrap, ConnectionConfig::default())
        .await
        .unwrap()
}

async fn handshake(c: &Connection, mechanism: &'static str) -> (i16, Vec<String>) {
    let body = c
        .request_at(
            RequestBody::SaslHandshake(SaslHandshakeRequest {
                mechanism: KStr::from_static(mechanism),
            }),
            1,
        )
        .await
        .unwrap();
    let ResponseBody::SaslHandshake(r) = body else {
        panic!()
    };
    (
        r.error_code,
        r.mechanisms.iter().map(ToString::to_string).collect(),
    )
}

/// Runs a whole exchange on `c` after a successful handshake; the last answer's error code
/// and session lifetime.
async fn exchange(
    c: &Connection,
    m: Mechanism,
    user: &str,
    pw: &str,
) -> Result<(i16, i64), NetError> {
    let mut ex = ClientExchange::new(m, user, pw).unwrap();
    let mut msg = ex.initial();
    loop {
        let body = c
            .request_at(
                RequestBody::SaslAuthenticate(SaslAuthenticateRequest {
                    auth_bytes: Bytes::from(std::mem::take(&mut msg)),
                    ..Default::default()
                }),
                2,
            )
            .await?;
        let ResponseBody::SaslAuthenticate(r) = body else {
            panic!()
        };
        if r.error_code != 0 {
            return Ok((r.error_code, r.session_lifetime_ms));
        }
        match ex.step(&r.auth_bytes).unwrap() {
            ClientStep::Send(next) => msg = next,
            ClientStep::Done => return Ok((0, r.session_lifetime_ms)),
        }
    }
}

/// A PLAIN handshake and exchange on `c` that must succeed.
async fn plain_login(c: &Connection, user: &str, password: &str) {
    assert_eq!(handshake(c, "PLAIN").await.0, 0);
    assert_eq!(
        exchange(c, Mechanism::Plain, user, password)
            .await
            .unwrap()
            .0,
        0
    );
}

async fn metadata(c: &Connection) -> Result<ResponseBody, NetError> {
    c.request_at(RequestBody::Metadata(MetadataRequest::default()), 9)
        .await
}

/// The upsertion of `user`'s credential for `m`.
fn upsertion(m: ScramMechanism, user: &str, password: &str) -> ScramCredentialUpsertion {
    let salt = format!("salt-{user}-{}", m.type_id()).into_bytes();
    let salted = salted_password(m, password.as_bytes(), &salt, 4096).unwrap();
    ScramCredentialUpsertion {
        name: KStr::from(user.to_owned()),
        mechanism: m.type_id(),
        iterations: 4096,
        salt: Bytes::from(salt),
        salted_password: Bytes::copy_from_slice(salted.expose()),
        ..Default::default()
    }
}

/// AlterUserScramCredentials with `upsertions`: each result's (user, error code).
async fn alter_scram(
    c: &Connection,
    upsertions: Vec<ScramCredentialUpsertion>,
) -> Vec<(String, i16)> {
    let body = c
        .request_at(
            RequestBody::AlterUserScramCredentials(AlterUserScramCredentialsRequest {
                upsertions,
                ..Default::default()
            }),
            0,
        )
        .await
        .unwrap();
    let ResponseBody::AlterUserScramCredentials(r) = body else {
        panic!()
    };
    r.results
        .iter()
        .map(|r| (r.user.to_string(), r.error_code))
        .collect()
}

/// Makes SCRAM credentials for `user` (both mechanisms, one request each as `kafka-configs`
/// must: Kafka refuses a user twice in one request) through an authenticated admin.
async fn add_scram_user(bootstrap: &str, user: &str, password: &str) {
    let c = raw(bootstrap).await;
    plain_login(&c, "admin", "admin-secret").await;
    for m in ScramMechanism::ALL {
        assert_eq!(
            alter_scram(&c, vec![upsertion(m, user, password)]).await,
            [(user.to_owned(), 0)]
        );
    }
}

/// Two mechanisms of one user in one request: DUPLICATE_RESOURCE for that user, nothing
/// stored (Apache Kafka answers the same, kafka-peers/tests/security_apache.rs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_user_twice_in_one_request_is_a_duplicate() {
    let broker = sasl_broker("SASL_PLAINTEXT", &[]);
    let c = raw(&broker.bootstrap()).await;
    plain_login(&c, "admin", "admin-secret").await;
    let results = alter_scram(
        &c,
        vec![
            upsertion(ScramMechanism::Sha256, "zed", "pw"),
            upsertion(ScramMechanism::Sha512, "zed", "pw"),
            upsertion(ScramMechanism::Sha512, "yan", "pw"),
        ],
    )
    .await;
    let mut results = results;
    results.sort();
    assert_eq!(
        results,
        [
            ("yan".to_owned(), 0),
            ("zed".to_owned(), ErrorCode::DUPLICATE_RESOURCE.0)
        ]
    );
    let c2 = raw(&broker.bootstrap()).await;
    assert_eq!(handshake(&c2, "SCRAM-SHA-256").await.0, 0);
    let (code, _) = exchange(&c2, Mechanism::ScramSha256, "zed", "pw")
        .await
        .unwrap();
    assert_eq!(
        ErrorCode(code),
        ErrorCode::SASL_AUTHENTICATION_FAILED,
        "nothing stored for zed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_and_scram_with_our_clients() {
    let broker = sasl_broker("SASL_PLAINTEXT", &[]);
    let b = broker.bootstrap();
    let got = round_trip(
        &b,
        &login("SASL_PLAINTEXT", "PLAIN", "alice", "alice-secret"),
        "sasl-plain",
        50,
    )
    .await
    .unwrap();
    assert_eq!(got, expected(50));
    // The Java client's form of the same login.
    let mut jaas = vec![
        ("security.protocol".to_owned(), "SASL_PLAINTEXT".to_owned()),
        ("sasl.mechanism".to_owned(), "PLAIN".to_owned()),
    ];
    jaas.push((
        "sasl.jaas.config".into(),
        "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"alice\" password=\"alice-secret\";".into(),
    ));
    assert_eq!(
        round_trip(&b, &jaas, "sasl-jaas", 3).await.unwrap(),
        expected(3)
    );

    // A wrong password fails fast with the broker's reason.
    let started = Instant::now();
    let err = round_trip(
        &b,
        &login("SASL_PLAINTEXT", "PLAIN", "alice", "nope"),
        "sasl-bad",
        1,
    )
    .await
    .unwrap_err();
    assert!(
        err.contains("SASL") && err.contains("SASL_AUTHENTICATION_FAILED"),
        "{err}"
    );
    assert!(!err.contains("nope"), "the password is not echoed: {err}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );

    // SCRAM users made with AlterUserScramCredentials, then used by our clients.
    add_scram_user(&b, "carol", "carol-secret").await;
    for mech in ["SCRAM-SHA-256", "SCRAM-SHA-512"] {
        let topic = format!("sasl-{}", mech.to_lowercase());
        let got = round_trip(
            &b,
            &login("SASL_PLAINTEXT", mech, "carol", "carol-secret"),
            &topic,
            20,
        )
        .await
        .unwrap();
        assert_eq!(got, expected(20), "{mech}");
        let err = round_trip(
            &b,
            &login("SASL_PLAINTEXT", mech, "carol", "wrong"),
            &topic,
            1,
        )
        .await
        .unwrap_err();
        assert!(err.contains("SASL_AUTHENTICATION_FAILED"), "{mech}: {err}");
    }
    // Describe shows the user's mechanisms and iterations, never a key.
    let c = raw(&b).await;
    assert_eq!(handshake(&c, "SCRAM-SHA-512").await.0, 0);
    assert_eq!(
        exchange(&c, Mechanism::ScramSha512, "carol", "carol-secret")
            .await
            .unwrap()
            .0,
        0
    );
    let body = c
        .request_at(
            RequestBody::DescribeUserScramCredentials(
                DescribeUserScramCredentialsRequest::default(),
            ),
            0,
        )
        .await
        .unwrap();
    let ResponseBody::DescribeUserScramCredentials(r) = body else {
        panic!()
    };
    let carol = r
        .results
        .iter()
        .find(|u| &*u.user == "carol")
        .expect("carol");
    let mut infos: Vec<(i8, i32)> = carol
        .credential_infos
        .iter()
        .map(|i| (i.mechanism, i.iterations))
        .collect();
    infos.sort();
    assert_eq!(infos, [(1, 4096), (2, 4096)]);
    // The credentials are on disk for the next start.
    assert!(
        broker
            .data_dir()
            .join(kafka_broker::credentials::FILE)
            .exists()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pitfalls() {
    let broker = sasl_broker("SASL_PLAINTEXT", &[]);
    let b = broker.bootstrap();

    // Only ApiVersions and the SASL requests before authentication: Metadata closes.
    let c = raw(&b).await;
    assert!(
        metadata(&c).await.is_err(),
        "Metadata before authentication is not answered"
    );

    // SaslAuthenticate before SaslHandshake: ILLEGAL_SASL_STATE, then closed.
    let c = raw(&b).await;
    let (code, _) = exchange(&c, Mechanism::Plain, "alice", "alice-secret")
        .await
        .unwrap();
    assert_eq!(ErrorCode(code), ErrorCode::ILLEGAL_SASL_STATE);
    assert!(metadata(&c).await.is_err());

    // An unknown mechanism: UNSUPPORTED_SASL_MECHANISM with the enabled ones.
    let c = raw(&b).await;
    let (code, enabled) = handshake(&c, "GSSAPI").await;
    assert_eq!(ErrorCode(code), ErrorCode::UNSUPPORTED_SASL_MECHANISM);
    assert_eq!(enabled, ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]);

    // A wrong SCRAM proof ends unauthenticated even though the exchange reached its last step.
    add_scram_user(&b, "dave", "dave-secret").await;
    let c = raw(&b).await;
    assert_eq!(handshake(&c, "SCRAM-SHA-256").await.0, 0);
    let (code, _) = exchange(&c, Mechanism::ScramSha256, "dave", "not-dave")
        .await
        .unwrap();
    assert_eq!(ErrorCode(code), ErrorCode::SASL_AUTHENTICATION_FAILED);
    assert!(metadata(&c).await.is_err(), "closed after the failure");

    // Authenticated: served; session lifetime 0 without connections.max.reauth.ms.
    let c = raw(&b).await;
    assert_eq!(handshake(&c, "PLAIN").await.0, 0);
    assert_eq!(
        exchange(&c, Mechanism::Plain, "alice", "alice-secret")
            .await
            .unwrap(),
        (0, 0)
    );
    metadata(&c).await.unwrap();
    // Re-authentication on the same connection (KIP-368): a fresh exchange, same principal.
    assert_eq!(handshake(&c, "SCRAM-SHA-512").await.0, 0);
    let (code, _) = exchange(&c, Mechanism::ScramSha512, "dave", "dave-secret")
        .await
        .unwrap();
    assert_eq!(
        ErrorCode(code),
        ErrorCode::SASL_AUTHENTICATION_FAILED,
        "another principal is refused"
    );
    assert!(metadata(&c).await.is_err());
    let c = raw(&b).await;
    plain_login(&c, "alice", "alice-secret").await;
    plain_login(&c, "alice", "alice-secret").await;
    metadata(&c).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_lifetime_and_expiry() {
    let broker = sasl_broker("SASL_PLAINTEXT", &[("connections.max.reauth.ms", "1500")]);
    let c = raw(&broker.bootstrap()).await;
    assert_eq!(handshake(&c, "PLAIN").await.0, 0);
    assert_eq!(
        exchange(&c, Mechanism::Plain, "alice", "alice-secret")
            .await
            .unwrap(),
        (0, 1500)
    );
    metadata(&c).await.unwrap();
    // Re-authenticated before expiry: served on.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    plain_login(&c, "alice", "alice-secret").await;
    tokio::time::sleep(Duration::from_millis(1000)).await;
    metadata(&c).await.unwrap();
    // Not re-authenticated: the next request after expiry closes the connection.
    tokio::time::sleep(Duration::from_millis(1700)).await;
    assert!(metadata(&c).await.is_err());
}

#[test]
fn python_peers_and_kcat_over_sasl() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new(dir.path(), "ca");
    let server = ca.server("broker", &["localhost", "127.0.0.1"]);
    let keystore = server.keystore.display().to_string();
    // SASL_SSL: PLAIN and SCRAM over TLS.
    let broker = sasl_broker(
        "SASL_SSL",
        &[
            ("ssl.keystore.type", "PEM"),
            ("ssl.keystore.location", &keystore),
        ],
    );
    let rt = tokio::runtime::Runtime::new().unwrap();
    let tls = vec![(
        "ssl.truststore.location".to_owned(),
        ca.ca_file().display().to_string(),
    )];
    // Our own clients first, SCRAM over TLS.
    let mut ours = login("SASL_SSL", "PLAIN", "alice", "alice-secret");
    ours.extend(tls.clone());
    assert_eq!(
        rt.block_on(round_trip(&broker.bootstrap(), &ours, "sasl-ssl-ours", 5))
            .unwrap(),
        expected(5)
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/security/sasl_peers.py");
    let (bootstrap, ca_file) = (broker.bootstrap(), ca.ca_file().display().to_string());
    let script = script.display().to_string();
    let Some(text) = peers::run(
        "python3",
        &[&script, "--bootstrap", &bootstrap, "--ca", &ca_file],
    ) else {
        return;
    };
    for check in [
        "kcat PLAIN ok",
        "kcat wrong password refused",
        "kafka-python PLAIN ok",
        "kafka-python SCRAM-SHA-512 ok",
        "kafka-python wrong password refused",
        "confluent-kafka scram user created",
        "confluent-kafka PLAIN ok",
        "confluent-kafka SCRAM-SHA-256 ok",
        "confluent-kafka SCRAM-SHA-512 ok",
        "confluent-kafka wrong password refused",
    ] {
        assert!(text.contains(check), "missing {check:?}:\n{text}");
    }
}

/// Our client re-authenticates on the same connection before the session the broker gave
/// ends (KIP-368): one connection, used for several lifetimes, keeps being served (without
/// re-authentication the broker closes it at the first request after expiry, see
/// `session_lifetime_and_expiry`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_reauthenticates_before_expiry() {
    let broker = sasl_broker("SASL_PLAINTEXT", &[("connections.max.reauth.ms", "1000")]);
    let mut keys = kafka_net::SecurityKeys::default();
    for (k, v) in login("SASL_PLAINTEXT", "PLAIN", "alice", "alice-secret") {
        keys.set(&k, &v).unwrap();
    }
    let cfg = ConnectionConfig {
        security: keys.build().unwrap(),
        ..ConnectionConfig::default()
    };
    let c = Connection::connect(&broker.bootstrap(), cfg).await.unwrap();
    let started = Instant::now();
    let mut served = 0;
    while started.elapsed() < Duration::from_millis(4500) {
        metadata(&c)
            .await
            .unwrap_or_else(|e| panic!("request {served} after {:?}: {e}", started.elapsed()));
        served += 1;
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    assert!(served > 20, "{served}");
}

/// A connection from `local` (a loopback address of its own) to the broker, versions not
/// negotiated (the SASL requests go at explicit versions).
async fn raw_from(local: &str, broker: &str) -> Connection {
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind(format!("{local}:0").parse().unwrap()).unwrap();
    let stream = socket.connect(broker.parse().unwrap()).await.unwrap();
    Connection::from_stream(stream, broker, &ConnectionConfig::default())
}

/// 1,000 failed logins from one address are held to its rate
/// (`connection.failed.authentication.max.rate.per.ip`), while another address logs in at
/// once, again and again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_logins_are_rate_limited_per_address() {
    let broker = sasl_broker(
        "SASL_PLAINTEXT",
        &[
            ("connection.failed.authentication.delay.ms", "0"),
            ("connection.failed.authentication.max.rate.per.ip", "100"),
        ],
    );
    let b = broker.bootstrap();
    let started = Instant::now();
    let attacker = {
        let b = b.clone();
        tokio::spawn(async move {
            let mut tasks = Vec::new();
            for _ in 0..50 {
                let b = b.clone();
                tasks.push(tokio::spawn(async move {
                    for _ in 0..20 {
                        let c = raw_from("127.0.0.1", &b).await;
                        assert_eq!(handshake(&c, "PLAIN").await.0, 0);
                        let (code, _) = exchange(&c, Mechanism::Plain, "alice", "guess")
                            .await
                            .unwrap();
                        assert_eq!(ErrorCode(code), ErrorCode::SASL_AUTHENTICATION_FAILED);
                    }
                }));
            }
            for t in tasks {
                t.await.unwrap();
            }
        })
    };
    // Meanwhile alice logs in from 127.0.0.2, each time at once.
    let mut slowest = Duration::ZERO;
    for _ in 0..20 {
        let t = Instant::now();
        let c = raw_from("127.0.0.2", &b).await;
        plain_login(&c, "alice", "alice-secret").await;
        slowest = slowest.max(t.elapsed());
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    attacker.await.unwrap();
    let took = started.elapsed();
    // 1,000 failures at 100 per second after a bucket of 100: at least 9 s.
    assert!(
        took >= Duration::from_secs(8),
        "1,000 failures took only {took:?}"
    );
    assert!(
        slowest < Duration::from_secs(1),
        "the other address waited {slowest:?}"
    );
}

/// DescribeConfigs of the broker lists the security keys set, the secrets (the JAAS config
/// with its passwords) with no value and `is_sensitive`, as Kafka answers them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn describe_configs_hides_secrets() {
    use kafka_protocol::messages::DescribeConfigsRequest;
    use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
    let broker = sasl_broker("SASL_PLAINTEXT", &[("connections.max.reauth.ms", "60000")]);
    let c = raw(&broker.bootstrap()).await;
    plain_login(&c, "admin", "admin-secret").await;
    let body = c
        .request_at(
            RequestBody::DescribeConfigs(DescribeConfigsRequest {
                resources: vec![DescribeConfigsResource {
                    resource_type: 4,
                    resource_name: KStr::from(broker.node_id.to_string()),
                    configuration_keys: None,
                    ..Default::default()
                }],
                ..Default::default()
            }),
            4,
        )
        .await
        .unwrap();
    let ResponseBody::DescribeConfigs(r) = body else {
        panic!()
    };
    let configs = &r.results[0].configs;
    let find = |name: &str| configs.iter().find(|c| &*c.name == name);
    let jaas = find("listener.name.sasl_plaintext.plain.sasl.jaas.config").expect("listed");
    assert!(jaas.is_sensitive && jaas.value.is_none(), "{jaas:?}");
    let mechs = find("sasl.enabled.mechanisms").expect("listed");
    assert_eq!(
        mechs.value.as_deref(),
        Some("PLAIN,SCRAM-SHA-256,SCRAM-SHA-512")
    );
    assert!(!mechs.is_sensitive);
    let text = format!("{r:?}");
    assert!(
        !text.contains("admin-secret") && !text.contains("alice-secret"),
        "no secret anywhere"
    );
}

/// Our producer keeps sending (pipelined, up to 5 requests in flight) through several 1 s
/// sessions: its requests wait for re-authentications and never deadlock with them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_producer_pipelines_through_reauthentication() {
    let broker = sasl_broker("SASL_PLAINTEXT", &[("connections.max.reauth.ms", "1000")]);
    let mut pairs = vec![
        ("bootstrap.servers".to_owned(), broker.bootstrap()),
        ("linger.ms".to_owned(), "0".to_owned()),
        ("batch.size".to_owned(), "200".to_owned()),
        ("request.timeout.ms".to_owned(), "10000".to_owned()),
        ("delivery.timeout.ms".to_owned(), "20000".to_owned()),
    ];
    pairs.extend(login("SASL_PLAINTEXT", "PLAIN", "alice", "alice-secret"));
    let p =
        kafka_producer::Producer::new(kafka_producer::ProducerConfig::from_pairs(pairs).unwrap())
            .await
            .unwrap();
    let started = Instant::now();
    let mut sent = 0;
    while started.elapsed() < Duration::from_millis(3500) {
        let mut futures = Vec::new();
        for _ in 0..50 {
            let r = kafka_producer::ProducerRecord::new(
                "reauth-pipeline",
                Bytes::from(format!("r{sent}")),
            )
            .partition(0);
            futures.push(p.enqueue(r).await.unwrap());
            sent += 1;
        }
        for f in futures {
            tokio::time::timeout(Duration::from_secs(10), f)
                .await
                .expect("acknowledged within 10 s")
                .unwrap();
        }
    }
    p.close(Duration::from_secs(5)).await;
    assert!(sent >= 500, "{sent}");
}
