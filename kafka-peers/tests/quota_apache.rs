//! The reference for our broker's quota test (kafka-broker/tests/quotas.rs): librdkafka's
//! producer and consumer against Apache Kafka's byte-rate quotas, with the same script
//! (kafka-broker/tests/security/quota_peers.py) and the same 1 MB/s quotas on their client ids,
//! set with our admin client. Prints the rates Kafka holds them to, measured at the client,
//! and checks what must hold of any Kafka: the throttle time reaches librdkafka, and neither
//! client runs far above its quota.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::process::Command;

use kafka_net::admin::{NewTopic, QuotaAlteration, QuotaEntity, QuotaOp};
use kafka_net::{Admin, ClusterConfig};
use kafka_peers::{ApacheKafka, Jvm, KafkaOptions, require};

const RATE: f64 = 1_000_000.0;

fn figure(text: &str, prefix: &str, label: &str) -> f64 {
    let line = text
        .lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line {prefix:?} in:\n{text}"));
    let mut words = line.split_whitespace();
    words.find(|w| *w == label);
    words
        .next()
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("no {label} in {line:?}"))
}

#[test]
fn librdkafka_against_apache_kafka_quotas() {
    let Some(jvm) = require(Jvm::find()) else {
        return;
    };
    let Some(kafka) = require(ApacheKafka::start(&jvm, &KafkaOptions::default())) else {
        return;
    };
    let bootstrap = kafka.bootstrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let admin = Admin::connect(ClusterConfig {
            bootstrap: vec![bootstrap.clone()],
            ..ClusterConfig::default()
        })
        .await
        .unwrap();
        for r in admin
            .create_topics(&[NewTopic::new("quota-topic", 1, 1)], false)
            .await
        {
            r.unwrap();
        }
        for (client, key) in [
            ("quota-producer", "producer_byte_rate"),
            ("quota-consumer", "consumer_byte_rate"),
        ] {
            let entity = QuotaEntity::client_id(Some(client));
            let op = vec![QuotaOp::set(key, RATE)];
            for (_, r) in admin
                .alter_client_quotas(&[QuotaAlteration::new(entity, op)], false)
                .await
            {
                r.unwrap();
            }
        }
    });
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../kafka-broker/tests/security/quota_peers.py");
    let out = Command::new("python3")
        .arg(&script)
        .args(["--bootstrap", &bootstrap, "--topic", "quota-topic"])
        .args(["--rate", &RATE.to_string()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if out.status.code() == Some(3) && std::env::var("KAFKA_RS_REQUIRE_PEERS").as_deref() != Ok("1")
    {
        eprintln!("SKIPPED: {}", text.trim());
        return;
    }
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("Apache Kafka:\n{text}");
    for who in ["producer", "consumer"] {
        let ratio = figure(&text, &format!("{who} rate"), "ratio");
        assert!(ratio < 1.5, "{who} at {ratio:.3} of its quota:\n{text}");
        assert!(
            figure(&text, &format!("{who} throttle"), "max") > 0.0,
            "{text}"
        );
    }
}
