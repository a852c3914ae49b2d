//! Our clients against Apache Kafka's broker with security on (issue 25): the PLAINTEXT
//! listener of the harness mapped to SASL_PLAINTEXT with PLAIN and SCRAM-SHA-256/512, the
//! SCRAM users made with our own AlterUserScramCredentials request; our producer and consumer
//! with the same settings as against our broker; a wrong password refused the same way; and
//! kcat's SCRAM, as a reference for what our broker does with the same client.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::time::{Duration, Instant};

use kafka_auth::sasl::{ScramMechanism, salted_password};
use kafka_consumer::{Consumer, ConsumerConfig, TopicPartition};
use kafka_net::{Connection, ConnectionConfig, SecurityKeys};
use kafka_peers::{ApacheKafka, Jvm, KafkaOptions, require};
use kafka_producer::{Producer, ProducerConfig, ProducerRecord};
use kafka_protocol::messages::alter_user_scram_credentials_request::ScramCredentialUpsertion;
use kafka_protocol::messages::{AlterUserScramCredentialsRequest, RequestBody, ResponseBody};
use kafka_protocol::{Bytes, KStr};

const JAAS: &str = "org.apache.kafka.common.security.plain.PlainLoginModule required \
    username=\"admin\" password=\"admin-secret\" user_admin=\"admin-secret\" user_alice=\"alice-secret\";";

fn login(mechanism: &str, user: &str, password: &str) -> Vec<(String, String)> {
    vec![
        ("security.protocol".into(), "SASL_PLAINTEXT".into()),
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
    let mut pairs = vec![
        ("bootstrap.servers".to_owned(), bootstrap.to_owned()),
        ("linger.ms".to_owned(), "0".to_owned()),
        ("max.block.ms".to_owned(), "15000".to_owned()),
        ("delivery.timeout.ms".to_owned(), "20000".to_owned()),
        ("request.timeout.ms".to_owned(), "10000".to_owned()),
    ];
    pairs.extend(settings.iter().cloned());
    let p = Producer::new(ProducerConfig::from_pairs(pairs).map_err(|e| e.to_string())?)
        .await
        .map_err(|e| format!("producer: {e}"))?;
    let mut futures = Vec::new();
    for i in 0..n {
        let r = ProducerRecord::new(topic, Bytes::from(format!("v-{i}"))).partition(0);
        futures.push(p.enqueue(r).await.map_err(|e| format!("enqueue: {e}"))?);
    }
    for f in futures {
        f.await.map_err(|e| format!("send: {e}"))?;
    }
    p.close(Duration::from_secs(5)).await;
    let mut pairs = vec![
        ("bootstrap.servers".to_owned(), bootstrap.to_owned()),
        ("auto.offset.reset".to_owned(), "earliest".to_owned()),
        ("default.api.timeout.ms".to_owned(), "15000".to_owned()),
    ];
    pairs.extend(settings.iter().cloned());
    let c = Consumer::new(ConsumerConfig::from_pairs(pairs).map_err(|e| e.to_string())?)
        .await
        .map_err(|e| format!("consumer: {e}"))?;
    c.assign([TopicPartition::new(topic, 0)])
        .map_err(|e| e.to_string())?;
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(30);
    while got.len() < n && Instant::now() < deadline {
        for r in c
            .poll(Duration::from_millis(300))
            .await
            .map_err(|e| e.to_string())?
        {
            got.push(String::from_utf8_lossy(r.value.as_deref().unwrap_or_default()).into_owned());
        }
    }
    Ok(got)
}

#[test]
fn our_clients_with_sasl_against_apache_kafka() {
    let Some(jvm) = require(Jvm::find()) else {
        return;
    };
    let options = KafkaOptions {
        extra: vec![
            (
                "listener.security.protocol.map".into(),
                "PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT".into(),
            ),
            (
                "sasl.enabled.mechanisms".into(),
                "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER".into(),
            ),
            (
                "sasl.mechanism.inter.broker.protocol".into(),
                "PLAIN".into(),
            ),
            (
                "listener.name.plaintext.plain.sasl.jaas.config".into(),
                JAAS.into(),
            ),
            // OAUTHBEARER with Kafka's default validator: unsecured development tokens.
            (
                "listener.name.plaintext.oauthbearer.sasl.jaas.config".into(),
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"
                    .into(),
            ),
            // SCRAM needs a login module on the listener too (Kafka's ScramLoginModule).
            (
                "listener.name.plaintext.scram-sha-256.sasl.jaas.config".into(),
                "org.apache.kafka.common.security.scram.ScramLoginModule required;".into(),
            ),
            (
                "listener.name.plaintext.scram-sha-512.sasl.jaas.config".into(),
                "org.apache.kafka.common.security.scram.ScramLoginModule required;".into(),
            ),
        ],
        ..KafkaOptions::default()
    };
    let Some(kafka) = require(ApacheKafka::start(&jvm, &options)) else {
        return;
    };
    let bootstrap = kafka.bootstrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        // SCRAM users through our own request, as admin over PLAIN.
        let mut keys = SecurityKeys::default();
        for (k, v) in login("PLAIN", "admin", "admin-secret") {
            keys.set(&k, &v).unwrap();
        }
        let cfg = ConnectionConfig {
            security: keys.build().unwrap(),
            ..ConnectionConfig::default()
        };
        let admin = Connection::connect(&bootstrap, cfg).await.unwrap();
        let upsertion = |m: ScramMechanism, user: &'static str| {
            let salt = b"0123456789abcdef".to_vec();
            let salted = salted_password(m, b"erin-secret", &salt, 4096).unwrap();
            ScramCredentialUpsertion {
                name: KStr::from_static(user),
                mechanism: m.type_id(),
                iterations: 4096,
                salt: Bytes::from(salt),
                salted_password: Bytes::copy_from_slice(salted.expose()),
                ..Default::default()
            }
        };
        let alter = |upsertions: Vec<ScramCredentialUpsertion>| {
            let admin = &admin;
            async move {
                let body = admin
                    .request(RequestBody::AlterUserScramCredentials(
                        AlterUserScramCredentialsRequest {
                            upsertions,
                            ..Default::default()
                        },
                    ))
                    .await
                    .unwrap();
                let ResponseBody::AlterUserScramCredentials(r) = body else {
                    panic!()
                };
                let mut out: Vec<(String, i16)> = r
                    .results
                    .iter()
                    .map(|r| (r.user.to_string(), r.error_code))
                    .collect();
                out.sort();
                out
            }
        };
        // Kafka refuses one user twice in a request, whatever the mechanisms (our broker
        // answers the same: kafka-broker/tests/sasl.rs).
        let twice = alter(vec![
            upsertion(ScramMechanism::Sha256, "zed"),
            upsertion(ScramMechanism::Sha512, "zed"),
        ])
        .await;
        assert_eq!(twice, [("zed".to_owned(), 92)], "DUPLICATE_RESOURCE");
        for m in ScramMechanism::ALL {
            assert_eq!(
                alter(vec![upsertion(m, "erin")]).await,
                [("erin".to_owned(), 0)]
            );
        }
        // Kafka propagates credentials through its metadata log: give it a moment.
        tokio::time::sleep(Duration::from_millis(500)).await;
        for (mech, user, pw) in [
            ("PLAIN", "alice", "alice-secret"),
            ("SCRAM-SHA-256", "erin", "erin-secret"),
            ("SCRAM-SHA-512", "erin", "erin-secret"),
        ] {
            let topic = format!("sec-{}", mech.to_lowercase());
            let got = round_trip(&bootstrap, &login(mech, user, pw), &topic, 20)
                .await
                .unwrap();
            let want: Vec<String> = (0..20).map(|i| format!("v-{i}")).collect();
            assert_eq!(got, want, "{mech} against Apache Kafka");
            let err = round_trip(&bootstrap, &login(mech, user, "wrong"), &topic, 1)
                .await
                .unwrap_err();
            assert!(err.contains("SASL_AUTHENTICATION_FAILED"), "{mech}: {err}");
        }
        // OAUTHBEARER: our client's unsecured login (OAuthBearerLoginModule's
        // unsecuredLoginStringClaim_sub), as against our broker (kafka-broker/tests/oauthbearer.rs).
        let oauth = |sub: &str| {
            vec![
                ("security.protocol".to_owned(), "SASL_PLAINTEXT".to_owned()),
                ("sasl.mechanism".to_owned(), "OAUTHBEARER".to_owned()),
                (
                    "sasl.jaas.config".to_owned(),
                    format!(
                        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule \
                         required unsecuredLoginStringClaim_sub=\"{sub}\";"
                    ),
                ),
            ]
        };
        let got = round_trip(&bootstrap, &oauth("erin"), "sec-oauthbearer", 20)
            .await
            .unwrap();
        let want: Vec<String> = (0..20).map(|i| format!("v-{i}")).collect();
        assert_eq!(got, want, "OAUTHBEARER against Apache Kafka");
    });
    // kcat (Debian's librdkafka 2.0.2) with SCRAM against Apache Kafka: for each mechanism,
    // whether Apache Kafka lets it in. Our broker must answer the same
    // (kafka-broker/tests/security/sasl_peers.py): librdkafka 2.0.2's SCRAM-SHA-512 is refused
    // by Apache Kafka 4.4 as "invalid credentials" for a user our own client and librdkafka
    // 2.16 log in as, so it is that client's fault, not the broker's.
    let Some(code) = kcat_scram(&bootstrap, "SCRAM-SHA-512") else {
        return;
    };
    eprintln!("kcat SCRAM-SHA-512 against Apache Kafka: exit {code:?}");
    assert_ne!(
        code,
        Some(0),
        "if this changes, our broker's answer to kcat must be re-checked"
    );
}

/// kcat's metadata call as erin with `mechanism`: its exit code (`None`: no kcat).
fn kcat_scram(bootstrap: &str, mechanism: &str) -> Option<Option<i32>> {
    let out = std::process::Command::new("kcat")
        .args([
            "-b",
            bootstrap,
            "-X",
            "security.protocol=sasl_plaintext",
            "-X",
            &format!("sasl.mechanism={mechanism}"),
            "-X",
            "sasl.username=erin",
            "-X",
            "sasl.password=erin-secret",
            "-L",
            "-m",
            "10",
        ])
        .output()
        .ok()?;
    Some(out.status.code())
}
