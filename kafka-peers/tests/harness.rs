//! The harness itself against the real thing: an Apache Kafka node started from the fetched
//! jars answers Kafka's own `kafka-topics` tool, and a node killed with SIGKILL comes back.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

use kafka_peers::{ApacheKafka, Jvm, KafkaOptions, require};

const TOOL_TIMEOUT: Duration = Duration::from_secs(120);

fn topics(jvm: &Jvm, kafka: &ApacheKafka, args: &[&str]) -> String {
    let bootstrap = kafka.bootstrap();
    let mut all = vec!["--bootstrap-server", bootstrap.as_str()];
    all.extend_from_slice(args);
    jvm.run(
        "org.apache.kafka.tools.TopicCommand",
        &all,
        None,
        TOOL_TIMEOUT,
    )
    .unwrap()
    .stdout
}

#[test]
fn an_apache_kafka_node_serves_kafka_topics_and_survives_sigkill() {
    let Some(jvm) = require(Jvm::find()) else {
        return;
    };
    let mut kafka = ApacheKafka::start(&jvm, &KafkaOptions::default()).unwrap();
    topics(
        &jvm,
        &kafka,
        &["--create", "--topic", "harness", "--partitions", "3"],
    );
    let described = topics(&jvm, &kafka, &["--describe", "--topic", "harness"]);
    assert!(described.contains("PartitionCount: 3"), "{described}");

    kafka.restart(0).unwrap();
    let listed = topics(&jvm, &kafka, &["--list"]);
    assert!(listed.lines().any(|l| l.trim() == "harness"), "{listed}");
}

#[test]
fn our_java_programs_compile_against_the_pinned_kafka_clients() {
    let Some(jvm) = require(Jvm::find()) else {
        return;
    };
    let jvm = jvm.with_programs().unwrap();
    let out = jvm
        .run("peers.Version", &[], None, TOOL_TIMEOUT)
        .unwrap()
        .stdout;
    assert_eq!(out.trim(), kafka_peers::java::KAFKA_VERSION);
}
