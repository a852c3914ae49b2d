//! Apache Kafka's own tools against our broker with security on (issue 25), as an operator
//! runs them with `--command-config`: kafka-acls adds, lists and removes ACLs; kafka-configs
//! makes a SCRAM user and sets a client quota; the console producer and consumer then log in
//! as that SCRAM user and are allowed exactly what the ACLs say. The admin logs in with PLAIN
//! as the super user.
#![allow(clippy::unwrap_used, clippy::panic)]

#[path = "kafka_tools/support.rs"]
mod support;

use std::path::Path;

use support::{TestBroker, Tools};

const JAAS: &str = "org.apache.kafka.common.security.plain.PlainLoginModule required \
    user_admin=\"admin-secret\";";

/// A client properties file logging in as `user` with `mechanism`.
fn login_file(
    dir: &Path,
    name: &str,
    mechanism: &str,
    module: &str,
    user: &str,
    pw: &str,
) -> String {
    let path = dir.join(name);
    std::fs::write(
        &path,
        format!(
            "security.protocol=SASL_PLAINTEXT\nsasl.mechanism={mechanism}\n\
             sasl.jaas.config=org.apache.kafka.common.security.{module} required \
             username=\"{user}\" password=\"{pw}\";\n"
        ),
    )
    .unwrap();
    path.display().to_string()
}

#[test]
fn acls_scram_users_and_quotas_with_kafka_tools() {
    let broker = TestBroker::start(&[
        ("listeners", "SASL_PLAINTEXT://127.0.0.1:9092"),
        ("sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-512"),
        ("listener.name.sasl_plaintext.plain.sasl.jaas.config", JAAS),
        (
            "authorizer.class.name",
            "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        ),
        ("super.users", "User:admin"),
    ]);
    let Some(tools) = Tools::find(&broker.bootstrap()) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let admin = login_file(
        dir.path(),
        "admin.properties",
        "PLAIN",
        "plain.PlainLoginModule",
        "admin",
        "admin-secret",
    );
    let erin = login_file(
        dir.path(),
        "erin.properties",
        "SCRAM-SHA-512",
        "scram.ScramLoginModule",
        "erin",
        "erin-secret",
    );
    let as_admin = |main: &str, args: &[&str]| {
        let mut all = vec!["--command-config", admin.as_str()];
        all.extend_from_slice(args);
        tools.admin(main, &all)
    };
    as_admin(
        "TopicCommand",
        &[
            "--create",
            "--topic",
            "orders",
            "--partitions",
            "1",
            "--replication-factor",
            "1",
        ],
    );

    // kafka-configs: a SCRAM-SHA-512 user, described without its secret.
    as_admin(
        "ConfigCommand",
        &[
            "--alter",
            "--add-config",
            "SCRAM-SHA-512=[iterations=4096,password=erin-secret]",
            "--entity-type",
            "users",
            "--entity-name",
            "erin",
        ],
    );
    let described = as_admin(
        "ConfigCommand",
        &[
            "--describe",
            "--entity-type",
            "users",
            "--entity-name",
            "erin",
        ],
    );
    assert!(
        described.contains("SCRAM-SHA-512=iterations=4096"),
        "{described}"
    );
    assert!(!described.contains("erin-secret"), "{described}");

    // kafka-configs: a client quota, described back.
    as_admin(
        "ConfigCommand",
        &[
            "--alter",
            "--add-config",
            "producer_byte_rate=1048576,consumer_byte_rate=2097152",
            "--entity-type",
            "clients",
            "--entity-name",
            "erin-app",
        ],
    );
    let quotas = as_admin(
        "ConfigCommand",
        &[
            "--describe",
            "--entity-type",
            "clients",
            "--entity-name",
            "erin-app",
        ],
    );
    assert!(quotas.contains("producer_byte_rate=1048576.0"), "{quotas}");
    assert!(quotas.contains("consumer_byte_rate=2097152.0"), "{quotas}");

    // Without an ACL, erin (authenticated with SCRAM) may not write.
    let produce = |line: &str| {
        let mut cmd = tools.jvm.command("org.apache.kafka.tools.ConsoleProducer");
        cmd.args([
            "--bootstrap-server",
            &tools.bootstrap,
            "--topic",
            "orders",
            "--producer.config",
            &erin,
            "--command-property",
            "client.id=erin-app",
            "--command-property",
            "max.block.ms=10000",
        ]);
        kafka_peers::run(
            cmd,
            Some(format!("{line}\n").as_bytes()),
            support::TOOL_TIMEOUT,
        )
        .unwrap()
    };
    let refused = produce("refused");
    assert!(
        refused.stderr.contains("TopicAuthorizationException")
            || refused.stdout.contains("TopicAuthorizationException"),
        "{}",
        refused.stderr
    );

    // kafka-acls: WRITE and DESCRIBE on the topic, READ on it and a group for erin.
    for (op, extra) in [
        ("Write", vec!["--topic", "orders"]),
        ("Read", vec!["--topic", "orders", "--group", "erin-readers"]),
    ] {
        let mut args = vec!["--add", "--allow-principal", "User:erin", "--operation", op];
        args.extend(extra);
        as_admin("AclCommand", &args);
    }
    let listed = as_admin("AclCommand", &["--list", "--topic", "orders"]);
    assert!(listed.contains("principal=User:erin"), "{listed}");
    assert!(listed.contains("operation=WRITE"), "{listed}");
    assert!(listed.contains("operation=READ"), "{listed}");

    let ok = produce("hello from erin");
    assert!(ok.success(), "{}\n{}", ok.stdout, ok.stderr);
    let consumed = tools.run(
        "consumer.ConsoleConsumer",
        &[
            "--bootstrap-server",
            &tools.bootstrap,
            "--topic",
            "orders",
            "--group",
            "erin-readers",
            "--from-beginning",
            "--max-messages",
            "1",
            "--command-config",
            &erin,
            "--timeout-ms",
            "20000",
        ],
        None,
    );
    assert_eq!(
        consumed.stdout.trim(),
        "hello from erin",
        "{}",
        consumed.stderr
    );

    // kafka-acls --remove: erin may not write any more.
    as_admin(
        "AclCommand",
        &[
            "--remove",
            "--force",
            "--allow-principal",
            "User:erin",
            "--operation",
            "Write",
            "--topic",
            "orders",
        ],
    );
    let listed = as_admin("AclCommand", &["--list", "--topic", "orders"]);
    assert!(!listed.contains("operation=WRITE"), "{listed}");
    // READ still lets her see the topic, so the refusal comes earlier now, as from Apache
    // Kafka: her idempotent producer's InitProducerId needs WRITE on some topic (KIP-679).
    let refused = produce("refused again");
    assert!(
        refused.stderr.contains("ClusterAuthorizationException"),
        "{}",
        refused.stderr
    );
}
