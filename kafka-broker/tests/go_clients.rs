//! The current Go clients against our broker: franz-go (idempotent producer with every codec,
//! group consumer and commits, transactions with read_committed, the kadm admin client),
//! segmentio/kafka-go (hash-balanced Writer with acks=all, group Reader) and IBM/sarama
//! (idempotent SyncProducer, consumer group), all behind `kafka-peers-go`
//! (kafka-peers/go, modules pinned in its go.mod). Each scenario checks what it read back
//! against what it wrote and prints `CHECK name value` lines, asserted on here.
#![allow(clippy::unwrap_used)]

#[path = "common/in_process.rs"]
#[allow(dead_code)]
mod in_process;

use std::collections::BTreeMap;
use std::time::Duration;

use in_process::InProcessBroker;
use kafka_peers::{PeerError, go, require};

const SCENARIO_TIMEOUT: Duration = Duration::from_secs(90);
const RECORDS: usize = 2000;

/// Runs one scenario and returns its CHECK lines as a map.
fn scenario(
    broker: &InProcessBroker,
    name: &str,
    topic: &str,
    extra: &[&str],
) -> Result<BTreeMap<String, String>, PeerError> {
    let bootstrap = broker.bootstrap();
    let n = RECORDS.to_string();
    let mut args = vec![
        "-brokers",
        bootstrap.as_str(),
        "-scenario",
        name,
        "-topic",
        topic,
        "-n",
        n.as_str(),
        "-timeout",
        "80s",
    ];
    args.extend_from_slice(extra);
    let run = go::run_program(&args, SCENARIO_TIMEOUT)?;
    Ok(run
        .stdout
        .lines()
        .filter_map(|l| l.strip_prefix("CHECK "))
        .filter_map(|l| l.split_once(' '))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect())
}

fn get<'a>(checks: &'a BTreeMap<String, String>, key: &str) -> &'a str {
    checks
        .get(key)
        .map(String::as_str)
        .unwrap_or_else(|| panic!("no CHECK {key} in {checks:?}"))
}

/// The program builds (or is missing, and the test skips).
fn go_available() -> bool {
    require(go::program()).is_some()
}

fn assert_roundtrip(checks: &BTreeMap<String, String>, what: &str) {
    let n = RECORDS.to_string();
    assert_eq!(get(checks, "produced"), n, "{what}");
    assert_eq!(get(checks, "consumed"), n, "{what}");
    // Every partition's committed offset is its end offset, and the ends add up to what was
    // written (one record per offset: no transaction markers here).
    assert_eq!(get(checks, "committed_total"), n, "{what}");
    assert_eq!(get(checks, "end_total"), n, "{what}");
}

#[test]
fn franz_go_produces_with_every_codec_and_a_group_reads_it_all_once() {
    if !go_available() {
        return;
    }
    let broker = InProcessBroker::start(&[("group.initial.rebalance.delay.ms", "0")]);
    for codec in ["none", "gzip", "snappy", "lz4", "zstd"] {
        let topic = format!("franz-{codec}");
        let checks = scenario(&broker, "franz-roundtrip", &topic, &["-codec", codec]).unwrap();
        assert_roundtrip(&checks, &topic);
    }
    broker.stop();
}

#[test]
fn franz_go_transactions_read_committed_sees_only_committed_records() {
    if !go_available() {
        return;
    }
    let broker = InProcessBroker::start(&[
        ("group.initial.rebalance.delay.ms", "0"),
        ("transaction.state.log.replication.factor", "1"),
        ("transaction.state.log.min.isr", "1"),
    ]);
    let checks = scenario(&broker, "franz-transactions", "franz-txn", &[]).unwrap();
    // Three transactions: RECORDS committed, RECORDS aborted, RECORDS/2 committed.
    let committed = RECORDS + RECORDS / 2;
    assert_eq!(get(&checks, "committed_written"), committed.to_string());
    assert_eq!(get(&checks, "read_committed"), committed.to_string());
    assert_eq!(
        get(&checks, "written"),
        (2 * RECORDS + RECORDS / 2).to_string()
    );
    assert_eq!(
        get(&checks, "read_uncommitted"),
        (2 * RECORDS + RECORDS / 2).to_string()
    );
    broker.stop();
}

#[test]
fn franz_go_admin_client_manages_topics_configs_and_records() {
    if !go_available() {
        return;
    }
    let broker = InProcessBroker::start(&[]);
    let checks = scenario(&broker, "franz-admin", "franz-admin", &[]).unwrap();
    assert_eq!(get(&checks, "brokers"), "1");
    assert_eq!(get(&checks, "partitions"), "2");
    assert_eq!(get(&checks, "retention.ms"), "123456789");
    assert_eq!(get(&checks, "partitions_after"), "3");
    // Ten records in partition 0, everything below offset 4 deleted.
    assert_eq!(get(&checks, "start_offset"), "4");
    assert_eq!(get(&checks, "end_offset"), "10");
    assert_eq!(get(&checks, "exists_after_delete"), "false");
    broker.stop();
}

#[test]
fn kafka_go_writer_and_group_reader_round_trip() {
    if !go_available() {
        return;
    }
    let broker = InProcessBroker::start(&[("group.initial.rebalance.delay.ms", "0")]);
    for codec in ["none", "zstd"] {
        let topic = format!("kafkago-{codec}");
        let checks = scenario(&broker, "kafkago-roundtrip", &topic, &["-codec", codec]).unwrap();
        assert_roundtrip(&checks, &topic);
    }
    broker.stop();
}

#[test]
fn sarama_idempotent_producer_and_consumer_group_round_trip() {
    if !go_available() {
        return;
    }
    let broker = InProcessBroker::start(&[("group.initial.rebalance.delay.ms", "0")]);
    for codec in ["gzip", "lz4"] {
        let topic = format!("sarama-{codec}");
        let checks = scenario(&broker, "sarama-roundtrip", &topic, &["-codec", codec]).unwrap();
        assert_roundtrip(&checks, &topic);
    }
    broker.stop();
}

/// sarama over SASL_PLAINTEXT with PLAIN, with both handshakes: SaslHandshake v1 then
/// SaslAuthenticate, and v0 then the bare tokens as frames (sarama's `SASLHandshakeV0`, Kafka's
/// framing before 1.0). A wrong password fails either way.
#[test]
fn sarama_over_sasl_plain_with_handshake_v0_and_v1() {
    if !go_available() {
        return;
    }
    let jaas = "org.apache.kafka.common.security.plain.PlainLoginModule required \
                user_gopher=\"gopher-secret\";";
    let broker = InProcessBroker::start(&[
        ("listeners", "SASL_PLAINTEXT://127.0.0.1:9092"),
        ("sasl.enabled.mechanisms", "PLAIN"),
        ("listener.name.sasl_plaintext.plain.sasl.jaas.config", jaas),
    ]);
    for version in ["0", "1"] {
        let topic = format!("sarama-sasl-v{version}");
        let login = [
            "-sasl-user",
            "gopher",
            "-sasl-password",
            "gopher-secret",
            "-sasl-handshake",
            version,
        ];
        let checks = scenario(&broker, "sarama-roundtrip", &topic, &login).unwrap();
        assert_roundtrip(&checks, &topic);
        let wrong = [
            "-sasl-user",
            "gopher",
            "-sasl-password",
            "wrong",
            "-sasl-handshake",
            version,
            "-timeout",
            "15s",
        ];
        let refused = scenario(&broker, "sarama-roundtrip", &format!("{topic}-x"), &wrong);
        assert!(refused.is_err(), "v{version}: a wrong password got in");
    }
    broker.stop();
}
