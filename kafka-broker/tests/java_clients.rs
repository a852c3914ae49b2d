//! Apache Kafka's Java clients (kafka-clients 4.4.0) against our broker, started in-process on
//! 127.0.0.1:0 with a temporary data directory. The Java programs live in
//! `kafka-peers/java/src/peers/clients/`; each runs one area's scenarios in sequence, asserts
//! inside Java (a failed check exits non-zero with its message) and prints `CHECK name value`
//! lines that are checked again here.
//!
//! - `ProducerChecks`: idempotent acks=all producer with every compression codec and headers,
//!   `max.in.flight.requests.per.connection=5` ordering over several partitions, transactions
//!   (commit and abort, read_committed vs read_uncommitted, sendOffsetsToTransaction).
//! - `ConsumerChecks`: classic groups with the range and cooperative-sticky assignors (a
//!   rebalance when a second member joins and when one leaves, committed offsets carried over),
//!   static membership, `offsetsForTimes`, `seek`, `pause`/`resume`, `committed()`.
//! - `AdminChecks`: every AdminClient call Kafka's tools use, each answer checked.
//!
//! Differences from Apache Kafka are in `tests/java_clients/FINDINGS.md`.
//! A missing JVM or jars skips with a notice unless `KAFKA_RS_REQUIRE_PEERS=1`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/in_process.rs"]
#[allow(dead_code)]
mod in_process;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

use in_process::InProcessBroker;
use kafka_peers::Jvm;

/// Settings of every broker here: groups form at once, few internal partitions.
const SETTINGS: &[(&str, &str)] = &[
    ("group.initial.rebalance.delay.ms", "0"),
    ("offsets.topic.num.partitions", "3"),
    ("transaction.state.log.num.partitions", "3"),
];

/// The JVM with our programs compiled, or `None` when it is missing (and that is allowed).
fn jvm() -> Option<Jvm> {
    kafka_peers::require(Jvm::find().and_then(Jvm::with_programs))
}

/// `CHECK name value...` lines of a program's output, by name (a name printed twice fails).
fn checks(stdout: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for line in stdout.lines() {
        if let Some(rest) = line.strip_prefix("CHECK ") {
            let (name, value) = rest.split_once(' ').unwrap_or((rest, ""));
            let old = out.insert(name.to_owned(), value.to_owned());
            assert!(old.is_none(), "CHECK {name} printed twice:\n{stdout}");
        }
    }
    out
}

/// Runs `peers.clients.<main>` with `scenarios` against a fresh broker; its checks, and the
/// broker's data directory (still there: the broker is returned too).
fn run_program(
    main: &str,
    scenarios: &[&str],
) -> Option<(BTreeMap<String, String>, InProcessBroker)> {
    let jvm = jvm()?;
    let broker = InProcessBroker::start(SETTINGS);
    let bootstrap = broker.addr.to_string();
    let mut args = vec![bootstrap.as_str()];
    args.extend_from_slice(scenarios);
    let started = Instant::now();
    let out = jvm
        .run(
            &format!("peers.clients.{main}"),
            &args,
            None,
            Duration::from_secs(150),
        )
        .unwrap_or_else(|e| panic!("{e}"));
    eprintln!(
        "{main}: {:.1} s\n{}",
        started.elapsed().as_secs_f64(),
        out.stderr
    );
    Some((checks(&out.stdout), broker))
}

/// Asserts `expected` (name, value) pairs against the checks, all reported at once.
fn assert_checks(got: &BTreeMap<String, String>, expected: &[(&str, &str)]) {
    let wrong: Vec<String> = expected
        .iter()
        .filter(|(k, v)| got.get(*k).map(String::as_str) != Some(*v))
        .map(|(k, v)| format!("{k}: expected {v:?}, got {:?}", got.get(*k)))
        .collect();
    assert!(
        wrong.is_empty(),
        "{}\nall checks: {got:#?}",
        wrong.join("\n")
    );
}

/// The compression codec of every data batch (control batches left out) of a segment file.
fn batch_codecs(segment: &Path) -> BTreeSet<u8> {
    let bytes = std::fs::read(segment).unwrap();
    let mut codecs = BTreeSet::new();
    let mut pos = 0;
    while pos + 61 <= bytes.len() {
        let length = i32::from_be_bytes(bytes[pos + 8..pos + 12].try_into().unwrap());
        let magic = bytes[pos + 16];
        assert_eq!(
            magic,
            2,
            "magic of the batch at byte {pos} of {}",
            segment.display()
        );
        let attributes = i16::from_be_bytes(bytes[pos + 21..pos + 23].try_into().unwrap());
        if attributes & 0x20 == 0 {
            codecs.insert((attributes & 7) as u8);
        }
        pos += 12 + usize::try_from(length).unwrap();
    }
    codecs
}

const CODECS: [(&str, u8); 5] = [
    ("none", 0),
    ("gzip", 1),
    ("snappy", 2),
    ("lz4", 3),
    ("zstd", 4),
];

/// The idempotent producer with every codec and headers, max.in.flight=5 ordering,
/// transactions; each codec's batches are stored compressed with that codec.
#[test]
fn java_producer() {
    let Some((c, broker)) = run_program("ProducerChecks", &["all"]) else {
        return;
    };
    let mut expected = vec![
        ("scenario.codecs", "ok"),
        ("scenario.ordering", "ok"),
        ("scenario.transactions", "ok"),
        ("ordering.records", "20000"),
        ("ordering.duplicates", "0"),
        ("ordering.out_of_order", "0"),
        ("txn.read_committed.committed", "16"),
        ("txn.read_committed.aborted", "0"),
        ("txn.read_committed.end_offsets", "16,16"),
        ("txn.read_uncommitted.committed", "16"),
        ("txn.read_uncommitted.aborted", "10"),
        ("txn.read_uncommitted.end_offsets", "16,16"),
        ("txn.group_offset", "5 txn"),
    ];
    let names: Vec<(String, String)> = CODECS
        .iter()
        .map(|(codec, _)| {
            (
                format!("codec.{codec}.records"),
                format!("codec.{codec}.headers"),
            )
        })
        .collect();
    for (records, headers) in &names {
        expected.push((records, "600"));
        expected.push((headers, "600"));
    }
    assert_checks(&c, &expected);
    for (codec, id) in CODECS {
        for p in 0..3 {
            let segment = broker
                .data_dir()
                .join(format!("codec-{codec}-{p}/00000000000000000000.log"));
            assert_eq!(
                batch_codecs(&segment),
                BTreeSet::from([id]),
                "codecs of the batches in {}",
                segment.display()
            );
        }
    }
}

/// Classic groups (range, cooperative-sticky), static membership, offsetsForTimes, seek,
/// pause/resume, committed().
#[test]
fn java_consumer() {
    let Some((c, _broker)) = run_program("ConsumerChecks", &["all"]) else {
        return;
    };
    let mut expected = vec![
        ("scenario.range", "ok"),
        ("scenario.cooperative", "ok"),
        ("scenario.static", "ok"),
        ("scenario.offsets", "ok"),
        // Eager (range): the first member gives up all 4 partitions when the second joins;
        // cooperative: only the 2 that move.
        ("range.join.revoked_from_first", "4"),
        ("cooperative.join.revoked_from_first", "2"),
        ("static.same_partitions", "true"),
        ("static.other_rebalanced", "0"),
        ("static.generation_kept", "true"),
        ("offsets.for_times", "6 6000 null"),
        ("offsets.seek", "13"),
        ("offsets.pause", "0 20 20"),
        ("offsets.committed", "7 meta-7 20"),
        ("offsets.restart_position", "7 20"),
    ];
    for label in ["range", "cooperative"] {
        for (k, v) in [
            ("join.owned", "2,2"),
            ("leave.owned", "4"),
            ("records", "600"),
            ("duplicates", "0"),
            ("committed", "[150, 150, 150, 150]"),
        ] {
            expected.push((Box::leak(format!("{label}.{k}").into_boxed_str()), v));
        }
    }
    assert_checks(&c, &expected);
}

/// Calls our broker does not serve although Apache Kafka does (FINDINGS.md): they fail fast
/// with UnsupportedVersionException in the Java client (checked in Java: within 5 s).
const KNOWN_GAPS: &[&str] = &["describeMetadataQuorum"];

/// Calls of features our broker does not have (reassignments, leader election, delegation
/// tokens): UnsupportedVersionException, fast.
const NOT_SERVED: &[&str] = &[
    "listPartitionReassignments",
    "electLeaders",
    "describeDelegationToken",
];

/// Every AdminClient call Kafka's tools make, each answer checked (in Java, and its summary
/// here); what is not served fails fast with UNSUPPORTED_VERSION.
#[test]
fn java_admin() {
    let Some((c, broker)) = run_program("AdminChecks", &["all"]) else {
        return;
    };
    let dir = broker.data_dir().display().to_string();
    let mut expected = vec![
        ("scenario.topics", "ok"),
        ("scenario.offsets", "ok"),
        ("scenario.groups", "ok"),
        ("scenario.transactions", "ok"),
        ("scenario.cluster", "ok"),
        ("scenario.scram", "ok"),
        ("scenario.quotas", "ok"),
        ("scenario.unsupported", "ok"),
        // Client quotas as kafka-configs sets them (KIP-546).
        ("call.alterClientQuotas", "served"),
        (
            "quotas.all",
            "{{client-id=app, user=alice}={request_percentage=50.0}, {client-id=null}={consumer_byte_rate=4096.0}, {user=alice}={consumer_byte_rate=2048.0, producer_byte_rate=1024.0}}",
        ),
        (
            "quotas.alice",
            "{{user=alice}={consumer_byte_rate=2048.0, producer_byte_rate=1024.0}}",
        ),
        (
            "quotas.default_client",
            "{{client-id=null}={consumer_byte_rate=4096.0}}",
        ),
        (
            "quotas.any_user",
            "{{client-id=app, user=alice}={request_percentage=50.0}, {user=alice}={consumer_byte_rate=2048.0, producer_byte_rate=1024.0}}",
        ),
        (
            "quotas.after",
            "{{client-id=app, user=alice}={request_percentage=50.0}, {client-id=null}={consumer_byte_rate=4096.0}, {user=alice}={producer_byte_rate=1024.0}}",
        ),
        ("quotas.bad_key", "InvalidRequestException"),
        // SCRAM credentials as kafka-configs makes them (KIP-554).
        ("call.alterUserScramCredentials", "served"),
        ("scram.users", "[scram-alice, scram-bob]"),
        ("scram.alice", "[SCRAM_SHA_256/8192, SCRAM_SHA_512/4096]"),
        ("scram.alice.after", "[SCRAM_SHA_512/4096]"),
        ("scram.unknown", "ResourceNotFoundException"),
        ("scram.weak", "UnacceptableCredentialException"),
        ("scram.twice", "DuplicateResourceException"),
        // ACL calls are served; without an authorizer (as here) Kafka answers this.
        ("acls.describe", "SecurityDisabledException"),
        ("call.createTopics", "served"),
        ("call.listTopics", "served"),
        ("call.describeTopics", "3"),
        ("call.createPartitions", "served"),
        (
            "call.describeConfigs",
            "{cleanup.policy=delete, retention.ms=3600000}",
        ),
        (
            "call.incrementalAlterConfigs",
            "{cleanup.policy=delete, max.message.bytes=2000000, retention.ms=604800000}",
        ),
        ("call.deleteTopics", "served"),
        // earliest, latest, offset for a timestamp, max timestamp's offset and its time.
        ("call.listOffsets", "0 10 3 5 100000"),
        ("call.deleteRecords", "4"),
        ("call.describeConsumerGroups", "Stable 1 3 range"),
        ("call.listGroups", "Stable"),
        ("call.listConsumerGroupOffsets", "3"),
        ("call.alterConsumerGroupOffsets", "2"),
        ("call.deleteConsumerGroupOffsets", "2"),
        // DescribeGroups v0-5 answers a group that is gone as Dead (v6+ would say
        // GROUP_ID_NOT_FOUND).
        ("call.deleteConsumerGroups", "Dead"),
        ("call.describeProducers", "4 0"),
        ("call.listTransactions", "Ongoing"),
        ("call.describeTransactions", "Ongoing 1"),
        ("call.abortTransaction", "served"),
        ("call.describeCluster", "1 1 1"),
        ("call.describeLogDirs", "served"),
        ("call.describeReplicaLogDirs", "served"),
        ("logdirs.dir", &dir),
        ("replicalogdirs.dir", &dir),
        ("call.describeFeatures", "served"),
        ("call.listShareGroups", "served"),
        // ApiVersions' features: those implemented are finalized.
        ("features.finalized", "[group.version, metadata.version]"),
        (
            "features.supported",
            "[group.version, kraft.version, metadata.version, transaction.version]",
        ),
    ];
    for call in KNOWN_GAPS.iter().chain(NOT_SERVED) {
        expected.push((
            Box::leak(format!("call.{call}").into_boxed_str()),
            "unsupported",
        ));
    }
    assert_checks(&c, &expected);
}

/// The Java producer, consumer and AdminClient over SASL_SSL with SCRAM-SHA-512 (the user made
/// with AlterUserScramCredentials by an admin logged in with PLAIN), trusting the test's CA
/// from a PEM truststore with hostname verification on: the same scenarios, secured.
#[test]
fn java_clients_over_sasl_ssl_with_scram() {
    use kafka_auth::sasl::{ScramMechanism, salted_password};
    use kafka_peers::certs::TestCa;
    use kafka_protocol::messages::alter_user_scram_credentials_request::ScramCredentialUpsertion;
    use kafka_protocol::messages::{AlterUserScramCredentialsRequest, RequestBody, ResponseBody};
    use kafka_protocol::{Bytes, KStr};

    let Some(jvm) = jvm() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new(dir.path(), "ca");
    let server = ca.server("broker", &["localhost", "127.0.0.1"]);
    let keystore = server.keystore.display().to_string();
    let jaas = "org.apache.kafka.common.security.plain.PlainLoginModule required \
                user_admin=\"admin-secret\";";
    let mut settings = SETTINGS.to_vec();
    settings.extend_from_slice(&[
        ("listeners", "SASL_SSL://127.0.0.1:9092"),
        ("sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-512"),
        ("listener.name.sasl_ssl.plain.sasl.jaas.config", jaas),
        ("ssl.keystore.type", "PEM"),
        ("ssl.keystore.location", &keystore),
    ]);
    let broker = InProcessBroker::start(&settings);
    let bootstrap = broker.bootstrap();
    // erin's SCRAM-SHA-512 credential, through our own client as admin.
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let mut keys = kafka_net::SecurityKeys::default();
        for (k, v) in [
            ("security.protocol", "SASL_SSL"),
            (
                "ssl.truststore.location",
                &ca.ca_file().display().to_string(),
            ),
            ("sasl.mechanism", "PLAIN"),
            ("sasl.username", "admin"),
            ("sasl.password", "admin-secret"),
        ] {
            keys.set(k, v).unwrap();
        }
        let cfg = kafka_net::ConnectionConfig {
            security: keys.build().unwrap(),
            ..Default::default()
        };
        let admin = kafka_net::Connection::connect(&bootstrap, cfg)
            .await
            .unwrap();
        let salt = b"java-salt".to_vec();
        let salted = salted_password(ScramMechanism::Sha512, b"erin-secret", &salt, 4096).unwrap();
        let body = admin
            .request(RequestBody::AlterUserScramCredentials(
                AlterUserScramCredentialsRequest {
                    upsertions: vec![ScramCredentialUpsertion {
                        name: KStr::from_static("erin"),
                        mechanism: ScramMechanism::Sha512.type_id(),
                        iterations: 4096,
                        salt: Bytes::from(salt),
                        salted_password: Bytes::copy_from_slice(salted.expose()),
                        ..Default::default()
                    }],
                    ..Default::default()
                },
            ))
            .await
            .unwrap();
        let ResponseBody::AlterUserScramCredentials(r) = body else {
            panic!()
        };
        assert_eq!(r.results[0].error_code, 0);
    });
    let props = dir.path().join("client.properties");
    std::fs::write(
        &props,
        format!(
            "security.protocol=SASL_SSL\n\
             ssl.truststore.type=PEM\n\
             ssl.truststore.location={}\n\
             sasl.mechanism=SCRAM-SHA-512\n\
             sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"erin\" password=\"erin-secret\";\n",
            ca.ca_file().display()
        ),
    )
    .unwrap();
    let props_arg = format!("--client-properties={}", props.display());
    for (main, scenarios, expect) in [
        (
            "ProducerChecks",
            vec!["ordering", "transactions"],
            vec![
                ("ordering.records", "20000"),
                ("ordering.duplicates", "0"),
                ("txn.read_committed.committed", "16"),
            ],
        ),
        (
            "ConsumerChecks",
            vec!["range", "offsets"],
            vec![("range.join.revoked_from_first", "4")],
        ),
    ] {
        let mut args = vec![bootstrap.as_str(), props_arg.as_str()];
        args.extend(scenarios.iter().copied());
        let out = jvm
            .run(
                &format!("peers.clients.{main}"),
                &args,
                None,
                Duration::from_secs(150),
            )
            .unwrap_or_else(|e| panic!("{e}"));
        let c = checks(&out.stdout);
        for s in &scenarios {
            assert_eq!(
                c.get(&format!("scenario.{s}")).map(String::as_str),
                Some("ok"),
                "{main} {s}:\n{}",
                out.stderr
            );
        }
        for (name, value) in expect {
            assert_eq!(
                c.get(name).map(String::as_str),
                Some(value),
                "{main} {name}"
            );
        }
    }
    // A wrong password fails the Java client with SaslAuthenticationException.
    std::fs::write(
        &props,
        std::fs::read_to_string(&props)
            .unwrap()
            .replace("erin-secret", "wrong"),
    )
    .unwrap();
    let err = jvm
        .run(
            "peers.clients.ProducerChecks",
            &[bootstrap.as_str(), props_arg.as_str(), "ordering"],
            None,
            Duration::from_secs(90),
        )
        .expect_err("a wrong password must fail the Java client")
        .to_string();
    assert!(err.contains("SaslAuthenticationException"), "{err}");
}
