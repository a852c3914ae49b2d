//! SASL/OAUTHBEARER on the broker and in our clients (issue 25): signed JWTs checked against a
//! JWKS file with Kafka's OIDC validator settings (audience, issuer, expiry), the keys rotated
//! without a restart; Kafka's unsecured development tokens; with librdkafka's `oauth_cb`
//! (tests/security/oauth_peers.py), the Java client's OAuthBearerLoginModule, and our own
//! clients (a token file, the unsecured login). A token's principal is the connection's: ACLs
//! and `super.users` apply to it.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/in_process.rs"]
#[allow(dead_code)]
mod in_process;
#[path = "common/peers.rs"]
#[allow(dead_code)]
mod peers;

use std::path::Path;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use in_process::InProcessBroker;
use kafka_net::{Connection, ConnectionConfig, NetError, SecurityKeys};
use kafka_protocol::messages::{MetadataRequest, RequestBody, ResponseBody};
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};

/// An ES256 signing key with its JWKS entry, as an identity provider has.
struct Signer {
    key: EcdsaKeyPair,
    kid: &'static str,
    rng: SystemRandom,
}

impl Signer {
    fn new(kid: &'static str) -> Self {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .unwrap();
        Self { key, kid, rng }
    }

    fn jwk(&self) -> String {
        // The public key is the uncompressed point 0x04 || x || y.
        let point = self.key.public_key().as_ref();
        let (x, y) = point[1..].split_at(32);
        format!(
            r#"{{"kty":"EC","crv":"P-256","use":"sig","alg":"ES256","kid":"{}","x":"{}","y":"{}"}}"#,
            self.kid,
            URL_SAFE_NO_PAD.encode(x),
            URL_SAFE_NO_PAD.encode(y)
        )
    }

    /// A compact JWS of `claims` (JSON).
    fn sign(&self, claims: &str) -> String {
        let header = format!(r#"{{"alg":"ES256","typ":"JWT","kid":"{}"}}"#, self.kid);
        let input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header),
            URL_SAFE_NO_PAD.encode(claims)
        );
        let signature = self.key.sign(&self.rng, input.as_bytes()).unwrap();
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature.as_ref()))
    }
}

fn jwks(keys: &[&Signer]) -> String {
    let keys: Vec<String> = keys.iter().map(|k| k.jwk()).collect();
    format!(r#"{{"keys":[{}]}}"#, keys.join(","))
}

fn now_s() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

const ISSUER: &str = "https://idp.test";
const AUDIENCE: &str = "kafka";

/// Claims of a token for `sub`, issued now and expiring in `ttl` seconds.
fn claims(sub: &str, aud: &str, iss: &str, ttl: i64) -> String {
    let now = now_s();
    format!(
        r#"{{"sub":"{sub}","aud":"{aud}","iss":"{iss}","iat":{now},"exp":{},"scope":"kafka"}}"#,
        now + ttl
    )
}

/// A SASL_PLAINTEXT broker validating signed tokens with the keys of `jwks_file`; `alice` is
/// its super user, so that a token's principal is what makes requests pass.
fn signed_broker(jwks_file: &Path) -> InProcessBroker {
    let url = format!("file://{}", jwks_file.display());
    InProcessBroker::start(&[
        ("listeners", "SASL_PLAINTEXT://127.0.0.1:9092"),
        ("sasl.enabled.mechanisms", "OAUTHBEARER"),
        (
            "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class",
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
        ),
        (
            "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config",
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;",
        ),
        ("sasl.oauthbearer.jwks.endpoint.url", &url),
        ("sasl.oauthbearer.expected.audience", AUDIENCE),
        ("sasl.oauthbearer.expected.issuer", ISSUER),
        (
            "authorizer.class.name",
            "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        ),
        ("super.users", "User:alice"),
    ])
}

/// Our connection reading its token from `token_file` (`sasl.oauthbearer.token.endpoint.url`
/// with a `file:` URL).
async fn connect_with_token_file(
    bootstrap: &str,
    token_file: &Path,
) -> Result<Connection, NetError> {
    let mut keys = SecurityKeys::default();
    for (k, v) in [
        ("security.protocol", "SASL_PLAINTEXT".to_owned()),
        ("sasl.mechanism", "OAUTHBEARER".to_owned()),
        (
            "sasl.oauthbearer.token.endpoint.url",
            format!("file://{}", token_file.display()),
        ),
    ] {
        keys.set(k, &v).unwrap();
    }
    let cfg = ConnectionConfig {
        security: keys.build().unwrap(),
        ..ConnectionConfig::default()
    };
    Connection::connect(bootstrap, cfg).await
}

/// Whether the connection may see the cluster's topics (alice, the super user, sees the
/// topic; anyone else is authenticated but sees nothing).
async fn sees_topic(c: &Connection, topic: &str) -> bool {
    let body = c
        .request(RequestBody::Metadata(MetadataRequest {
            topics: None,
            ..Default::default()
        }))
        .await
        .unwrap();
    let ResponseBody::Metadata(m) = body else {
        panic!("{body:?}")
    };
    m.topics.iter().any(|t| t.name.as_deref() == Some(topic))
}

#[test]
fn signed_tokens_from_librdkafka_and_our_client() {
    let dir = tempfile::tempdir().unwrap();
    let jwks_file = dir.path().join("jwks.json");
    let first = Signer::new("k1");
    std::fs::write(&jwks_file, jwks(&[&first])).unwrap();
    let broker = signed_broker(&jwks_file);
    let bootstrap = broker.bootstrap();
    let token_file = dir.path().join("token.jwt");
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        // alice's token: authenticated as User:alice, a super user, so she may create topics.
        std::fs::write(
            &token_file,
            first.sign(&claims("alice", AUDIENCE, ISSUER, 600)),
        )
        .unwrap();
        let alice = connect_with_token_file(&bootstrap, &token_file)
            .await
            .unwrap();
        let admin = kafka_net::Admin::new(
            kafka_net::Cluster::connect(kafka_net::ClusterConfig {
                bootstrap: vec![bootstrap.clone()],
                connection: alice_config(&token_file),
                ..Default::default()
            })
            .await
            .unwrap(),
        );
        for r in admin
            .create_topics(&[kafka_net::admin::NewTopic::new("jwt-topic", 1, 1)], false)
            .await
        {
            r.unwrap();
        }
        assert!(sees_topic(&alice, "jwt-topic").await);
        // bob's token is valid: authenticated, but not a super user and no ACL: sees nothing.
        std::fs::write(
            &token_file,
            first.sign(&claims("bob", AUDIENCE, ISSUER, 600)),
        )
        .unwrap();
        let bob = connect_with_token_file(&bootstrap, &token_file)
            .await
            .unwrap();
        assert!(!sees_topic(&bob, "jwt-topic").await, "bob is not alice");
        // Refused: expired (beyond the 30 s skew), another audience, another issuer, signed
        // by a key the JWKS does not have, unsigned.
        let stranger = Signer::new("k-unknown");
        for (what, token) in [
            (
                "expired",
                first.sign(&claims("alice", AUDIENCE, ISSUER, -120)),
            ),
            (
                "audience",
                first.sign(&claims("alice", "other", ISSUER, 600)),
            ),
            (
                "issuer",
                first.sign(&claims("alice", AUDIENCE, "https://evil", 600)),
            ),
            (
                "unknown key",
                stranger.sign(&claims("alice", AUDIENCE, ISSUER, 600)),
            ),
            (
                "unsigned",
                format!(
                    "{}.{}.",
                    URL_SAFE_NO_PAD.encode(r#"{"alg":"none"}"#),
                    URL_SAFE_NO_PAD.encode(claims("alice", AUDIENCE, ISSUER, 600))
                ),
            ),
        ] {
            std::fs::write(&token_file, token).unwrap();
            match connect_with_token_file(&bootstrap, &token_file).await {
                Err(NetError::Authentication { reason, .. }) => {
                    assert!(
                        reason.contains("SASL_AUTHENTICATION_FAILED"),
                        "{what}: {reason}"
                    );
                    assert!(reason.contains("invalid_token"), "{what}: {reason}");
                }
                other => panic!("{what}: {other:?}"),
            }
        }
        // The identity provider rotates its keys: the new key is taken from the file without
        // a restart, the old one is gone.
        let second = Signer::new("k2");
        std::fs::write(&jwks_file, jwks(&[&second])).unwrap();
        std::fs::write(
            &token_file,
            second.sign(&claims("alice", AUDIENCE, ISSUER, 600)),
        )
        .unwrap();
        let rotated = connect_with_token_file(&bootstrap, &token_file)
            .await
            .unwrap();
        assert!(sees_topic(&rotated, "jwt-topic").await);
        std::fs::write(
            &token_file,
            first.sign(&claims("alice", AUDIENCE, ISSUER, 600)),
        )
        .unwrap();
        assert!(
            connect_with_token_file(&bootstrap, &token_file)
                .await
                .is_err()
        );
    });
    // librdkafka with the same kind of tokens, through its oauth_cb.
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/security/oauth_peers.py")
        .display()
        .to_string();
    let second = Signer::new("k3");
    std::fs::write(&jwks_file, jwks(&[&second])).unwrap();
    let good = second.sign(&claims("alice", AUDIENCE, ISSUER, 600));
    let bad = second.sign(&claims("alice", "other", ISSUER, 600));
    let Some(text) = peers::run(
        "python3",
        &[
            &script,
            "--bootstrap",
            &bootstrap,
            "--topic",
            "jwt-topic",
            "--token",
            &good,
            "--bad-token",
            &bad,
        ],
    ) else {
        return;
    };
    for check in [
        "confluent-kafka produces with a signed token ok",
        "confluent-kafka consumes with a signed token ok",
        "no error with the signed token ok",
        "confluent-kafka with a bad token: authentication error ok",
    ] {
        assert!(text.contains(check), "missing {check:?}:\n{text}");
    }
}

fn alice_config(token_file: &Path) -> ConnectionConfig {
    let mut keys = SecurityKeys::default();
    keys.set("security.protocol", "SASL_PLAINTEXT").unwrap();
    keys.set("sasl.mechanism", "OAUTHBEARER").unwrap();
    keys.set(
        "sasl.oauthbearer.token.endpoint.url",
        &format!("file://{}", token_file.display()),
    )
    .unwrap();
    ConnectionConfig {
        security: keys.build().unwrap(),
        ..ConnectionConfig::default()
    }
}

/// Kafka's unsecured development tokens (the default validator when no handler class is set):
/// the Java producer and consumer with OAuthBearerLoginModule's `unsecuredLoginStringClaim_sub`
/// and our client with the same JAAS config, both as the super user `alice`; a token whose
/// principal claim is missing is refused.
#[test]
fn unsecured_tokens_from_the_java_client_and_ours() {
    let broker = InProcessBroker::start(&[
        ("listeners", "SASL_PLAINTEXT://127.0.0.1:9092"),
        ("sasl.enabled.mechanisms", "OAUTHBEARER"),
        (
            "authorizer.class.name",
            "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        ),
        ("super.users", "User:alice"),
        ("auto.create.topics.enable", "true"),
    ]);
    let bootstrap = broker.bootstrap();
    let jaas = |sub: &str| {
        format!(
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required \
             unsecuredLoginStringClaim_sub=\"{sub}\";"
        )
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let connect = |jaas: String| {
            let bootstrap = bootstrap.clone();
            async move {
                let mut keys = SecurityKeys::default();
                keys.set("security.protocol", "SASL_PLAINTEXT").unwrap();
                keys.set("sasl.mechanism", "OAUTHBEARER").unwrap();
                keys.set("sasl.jaas.config", &jaas).unwrap();
                let cfg = ConnectionConfig {
                    security: keys.build().unwrap(),
                    ..ConnectionConfig::default()
                };
                Connection::connect(&bootstrap, cfg).await
            }
        };
        let alice = connect(jaas("alice")).await.unwrap();
        assert!(!sees_topic(&alice, "none-yet").await);
        // No principal claim: Kafka's unsecured validator refuses it.
        let no_sub = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule \
                      required unsecuredLoginStringClaim_name=\"x\";";
        assert!(connect(no_sub.to_owned()).await.is_err());
    });
    let Some(jvm) = peers_jvm() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let props = dir.path().join("client.properties");
    std::fs::write(
        &props,
        format!(
            "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=OAUTHBEARER\nsasl.jaas.config={}\n",
            jaas("alice")
        ),
    )
    .unwrap();
    let props_arg = format!("--client-properties={}", props.display());
    let out = jvm
        .run(
            "peers.clients.ProducerChecks",
            &[&bootstrap, &props_arg, "ordering"],
            None,
            Duration::from_secs(150),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        out.stdout.contains("CHECK scenario.ordering ok"),
        "{}\n{}",
        out.stdout,
        out.stderr
    );
}

/// The JVM with the peers' Java programs, unless peers are missing and allowed to be.
fn peers_jvm() -> Option<kafka_peers::Jvm> {
    kafka_peers::require(kafka_peers::Jvm::find().and_then(kafka_peers::Jvm::with_programs))
}

/// The identity provider (tests/security/idp.py), killed when dropped: its HTTPS and HTTP ports.
struct IdentityProvider {
    child: std::process::Child,
    https: u16,
    http: u16,
}

impl Drop for IdentityProvider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn identity_provider(
    dir: &Path,
    ca: &kafka_peers::certs::TestCa,
    jwks_file: &Path,
    clients: &[(&str, &str, &Path)],
) -> IdentityProvider {
    let server = ca.server("idp", &["127.0.0.1"]);
    let port_file = dir.join("idp.ports");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/security/idp.py");
    let mut cmd = std::process::Command::new("python3");
    cmd.arg(script)
        .arg("--port-file")
        .arg(&port_file)
        .arg("--jwks")
        .arg(jwks_file)
        .arg("--cert")
        .arg(&server.cert)
        .arg("--key")
        .arg(&server.key);
    for (id, secret, token) in clients {
        cmd.arg("--client")
            .arg(format!("{id}:{secret}:{}", token.display()));
    }
    // Owned at once: dropped (killed and waited for) on every way out, a failure included.
    let mut idp = IdentityProvider {
        child: cmd.spawn().expect("python3 runs the identity provider"),
        https: 0,
        http: 0,
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(text) = std::fs::read_to_string(&port_file) {
            let ports: Vec<u16> = text
                .split_whitespace()
                .map(|p| p.parse().unwrap())
                .collect();
            (idp.https, idp.http) = (ports[0], ports[1]);
            return idp;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the identity provider did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// An identity provider over HTTPS: the broker takes its keys from the JWKS endpoint (and
/// fetches again when a token names a new key), our client gets its token with the
/// client-credentials grant (a wrong secret fails with the endpoint's answer), and the Java
/// client does the same with Kafka's own OAuthBearerLoginCallbackHandler (over HTTP).
#[test]
fn an_identity_provider_over_https_for_the_broker_ours_and_java() {
    let dir = tempfile::tempdir().unwrap();
    let ca = kafka_peers::certs::TestCa::new(dir.path(), "ca");
    let jwks_file = dir.path().join("jwks.json");
    let first = Signer::new("idp-1");
    std::fs::write(&jwks_file, jwks(&[&first])).unwrap();
    let app_token = dir.path().join("app.jwt");
    std::fs::write(
        &app_token,
        first.sign(&claims("alice", AUDIENCE, ISSUER, 600)),
    )
    .unwrap();
    let idp = identity_provider(
        dir.path(),
        &ca,
        &jwks_file,
        &[("app", "app-secret", &app_token)],
    );
    let ca_file = ca.ca_file().display().to_string();
    let jwks_url = format!("https://127.0.0.1:{}/jwks", idp.https);
    let broker = InProcessBroker::start(&[
        ("listeners", "SASL_PLAINTEXT://127.0.0.1:9092"),
        ("sasl.enabled.mechanisms", "OAUTHBEARER"),
        (
            "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class",
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
        ),
        ("sasl.oauthbearer.jwks.endpoint.url", &jwks_url),
        ("listener.name.sasl_plaintext.ssl.truststore.type", "PEM"),
        (
            "listener.name.sasl_plaintext.ssl.truststore.location",
            &ca_file,
        ),
        ("sasl.oauthbearer.expected.audience", AUDIENCE),
        ("sasl.oauthbearer.expected.issuer", ISSUER),
        (
            "authorizer.class.name",
            "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        ),
        ("super.users", "User:alice"),
        ("auto.create.topics.enable", "true"),
    ]);
    let bootstrap = broker.bootstrap();
    let token_url = format!("https://127.0.0.1:{}/token", idp.https);
    let ours = |secret: &str| {
        let mut keys = SecurityKeys::default();
        for (k, v) in [
            ("security.protocol", "SASL_PLAINTEXT".to_owned()),
            ("sasl.mechanism", "OAUTHBEARER".to_owned()),
            ("sasl.oauthbearer.token.endpoint.url", token_url.clone()),
            ("ssl.truststore.type", "PEM".to_owned()),
            ("ssl.truststore.location", ca_file.clone()),
            (
                "sasl.jaas.config",
                format!(
                    "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required \
                     clientId=\"app\" clientSecret=\"{secret}\" scope=\"kafka\";"
                ),
            ),
        ] {
            keys.set(k, &v).unwrap();
        }
        ConnectionConfig {
            security: keys.build().unwrap(),
            ..ConnectionConfig::default()
        }
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let c = Connection::connect(&bootstrap, ours("app-secret"))
            .await
            .unwrap();
        assert!(!sees_topic(&c, "none").await);
        match Connection::connect(&bootstrap, ours("wrong")).await {
            Err(NetError::Authentication { reason, .. }) => {
                assert!(reason.contains("invalid_client"), "{reason}");
            }
            other => panic!("a wrong client secret: {other:?}"),
        }
        // The provider adds a key and signs with it: the broker's first check names an unknown
        // key and fetches the set again, so a login soon passes.
        let second = Signer::new("idp-2");
        std::fs::write(&jwks_file, jwks(&[&first, &second])).unwrap();
        std::fs::write(
            &app_token,
            second.sign(&claims("alice", AUDIENCE, ISSUER, 600)),
        )
        .unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            // A fresh client: the first one keeps its token for 80 % of its life.
            match Connection::connect(&bootstrap, ours("app-secret")).await {
                Ok(_) => break,
                Err(e) => assert!(std::time::Instant::now() < deadline, "{e}"),
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    });
    let Some(jvm) = peers_jvm() else {
        return;
    };
    let http_token_url = format!("http://127.0.0.1:{}/token", idp.http);
    let props = dir.path().join("client.properties");
    std::fs::write(
        &props,
        format!(
            "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=OAUTHBEARER\n\
             sasl.login.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler\n\
             sasl.oauthbearer.token.endpoint.url={http_token_url}\n\
             sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required clientId=\"app\" clientSecret=\"app-secret\" scope=\"kafka\";\n"
        ),
    )
    .unwrap();
    let allowed = format!("-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls={http_token_url}");
    let props_arg = format!("--client-properties={}", props.display());
    let mut cmd = jvm.command_with(&[&allowed], "peers.clients.ProducerChecks");
    cmd.args([bootstrap.as_str(), props_arg.as_str(), "ordering"]);
    let out = kafka_peers::run(cmd, None, Duration::from_secs(150)).unwrap();
    assert!(
        out.stdout.contains("CHECK scenario.ordering ok"),
        "{}\n{}",
        out.stdout,
        out.stderr
    );
}
