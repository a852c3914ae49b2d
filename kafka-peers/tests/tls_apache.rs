//! Our producer and consumer over TLS against Apache Kafka, with the settings they use against
//! our broker (kafka-broker/tests/tls.rs): Kafka's SSL listener with a PEM keystore made by the
//! test's CA, our clients trusting that CA with hostname verification on; then mutual TLS
//! (`ssl.client.auth=required`) with our client's certificate; an untrusted server certificate
//! and a missing client certificate fail fast with a TLS error, as against our broker.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::time::Duration;

use kafka_net::{Connection, ConnectionConfig, NetError, SecurityKeys};
use kafka_peers::certs::TestCa;
use kafka_peers::{ApacheKafka, Jvm, KafkaOptions, require};
use kafka_producer::{Producer, ProducerConfig, ProducerRecord};
use kafka_protocol::Bytes;

fn keys(pairs: &[(&str, String)]) -> ConnectionConfig {
    let mut keys = SecurityKeys::default();
    for (k, v) in pairs {
        keys.set(k, v).unwrap();
    }
    ConnectionConfig {
        security: keys.build().unwrap(),
        ..ConnectionConfig::default()
    }
}

async fn produce(bootstrap: &str, settings: &[(&str, String)], topic: &str) -> Result<(), String> {
    let mut pairs = vec![
        ("bootstrap.servers".to_owned(), bootstrap.to_owned()),
        ("max.block.ms".to_owned(), "15000".to_owned()),
        ("delivery.timeout.ms".to_owned(), "20000".to_owned()),
        ("request.timeout.ms".to_owned(), "10000".to_owned()),
    ];
    pairs.extend(settings.iter().map(|(k, v)| ((*k).to_owned(), v.clone())));
    let p = Producer::new(ProducerConfig::from_pairs(pairs).map_err(|e| e.to_string())?)
        .await
        .map_err(|e| e.to_string())?;
    for i in 0..10 {
        p.enqueue(ProducerRecord::new(topic, Bytes::from(format!("tls-{i}"))).partition(0))
            .await
            .map_err(|e| e.to_string())?
            .await
            .map_err(|e| e.to_string())?;
    }
    p.close(Duration::from_secs(5)).await;
    Ok(())
}

#[test]
fn our_clients_over_tls_and_mutual_tls_against_apache_kafka() {
    let Some(jvm) = require(Jvm::find()) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new(dir.path(), "ca");
    let server = ca.server("kafka", &["localhost", "127.0.0.1"]);
    let client = ca.client("client", &[(rcgen::DnType::CommonName, "our-client")]);
    let ca_file = ca.ca_file().display().to_string();
    for mutual in [false, true] {
        let mut extra = vec![
            (
                "listener.security.protocol.map".to_owned(),
                "PLAINTEXT:SSL,CONTROLLER:PLAINTEXT".to_owned(),
            ),
            ("ssl.keystore.type".into(), "PEM".into()),
            (
                "ssl.keystore.location".into(),
                server.keystore.display().to_string(),
            ),
            // The broker's own connections to its SSL listener trust the same CA.
            ("ssl.truststore.type".into(), "PEM".into()),
            ("ssl.truststore.location".into(), ca_file.clone()),
        ];
        if mutual {
            extra.push(("ssl.client.auth".into(), "required".into()));
            // The broker is its own client on the inter-broker listener: it shows its
            // certificate too.
        }
        let options = KafkaOptions {
            extra,
            ..KafkaOptions::default()
        };
        let Some(kafka) = require(ApacheKafka::start(&jvm, &options)) else {
            return;
        };
        let bootstrap = kafka.bootstrap();
        let mut ours = vec![
            ("security.protocol", "SSL".to_owned()),
            ("ssl.truststore.type", "PEM".to_owned()),
            ("ssl.truststore.location", ca_file.clone()),
        ];
        if mutual {
            ours.push(("ssl.keystore.type", "PEM".to_owned()));
            ours.push((
                "ssl.keystore.location",
                client.keystore.display().to_string(),
            ));
        }
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(async {
            let topic = if mutual { "tls-mutual" } else { "tls-one-way" };
            produce(&bootstrap, &ours, topic)
                .await
                .unwrap_or_else(|e| panic!("mutual={mutual}: {e}"));
            // A CA that did not sign Kafka's certificate: a TLS error at once.
            let other = TestCa::new(dir.path(), "other");
            let untrusted = keys(&[
                ("security.protocol", "SSL".to_owned()),
                ("ssl.truststore.type", "PEM".to_owned()),
                (
                    "ssl.truststore.location",
                    other.ca_file().display().to_string(),
                ),
            ]);
            match Connection::connect(&bootstrap, untrusted).await {
                Err(NetError::Tls { .. }) => {}
                other => panic!("mutual={mutual}: an untrusted server: {other:?}"),
            }
            if mutual {
                // No client certificate: Kafka ends the handshake.
                let anonymous = keys(&ours[..3]);
                let outcome = Connection::connect(&bootstrap, anonymous).await;
                assert!(outcome.is_err(), "no client certificate got in");
            }
        });
    }
}
