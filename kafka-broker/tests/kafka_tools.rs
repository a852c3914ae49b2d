//! Apache Kafka's own command-line tools (run as their main classes from the Kafka 4.x jars
//! `kafka-peers/fetch` resolves) against our broker started in this process: kafka-topics,
//! kafka-configs, kafka-get-offsets, kafka-delete-records, kafka-log-dirs,
//! kafka-broker-api-versions, kafka-features, kafka-metadata-quorum, the console producer and
//! consumer, kafka-consumer-groups, kafka-transactions and the two perf tests. Every check
//! reads the tool's output (tables split by their headers) and compares it with what the test
//! wrote. Differences from Apache Kafka: `tests/kafka_tools/FINDINGS.md` and
//! [`support::KNOWN_GAPS`].
//!
//! Missing jars skip with a notice, or fail under `KAFKA_RS_REQUIRE_PEERS=1`.
#![allow(clippy::unwrap_used, clippy::panic)]

#[path = "kafka_tools/support.rs"]
mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use kafka_broker::handler::SUPPORTED;
use support::{TestBroker, Tools, fields, gap, offsets, partition_of, table, txn_steps};

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// `kN\tvN` lines for the console producer with `parse.key=true`.
fn keyed_lines(range: std::ops::Range<usize>) -> String {
    range.map(|i| format!("k{i}\tv{i}\n")).collect()
}

/// Records per partition that `keys` land in (Kafka's default partitioner).
fn per_partition(keys: impl Iterator<Item = String>, partitions: i32) -> BTreeMap<i32, i64> {
    let mut counts: BTreeMap<i32, i64> = (0..partitions).map(|p| (p, 0)).collect();
    for k in keys {
        *counts
            .get_mut(&partition_of(k.as_bytes(), partitions))
            .unwrap() += 1;
    }
    counts
}

fn produce_keyed(tools: &Tools, topic: &str, lines: &str) {
    tools.run(
        "ConsoleProducer",
        &[
            "--bootstrap-server",
            &tools.bootstrap,
            "--topic",
            topic,
            "--reader-property",
            "parse.key=true",
            "--command-property",
            "acks=all",
        ],
        Some(lines),
    );
}

/// kafka-topics, kafka-configs, kafka-get-offsets, kafka-delete-records and the tools that
/// only ask the broker what it is.
#[test]
fn topics_configs_offsets() {
    let broker = TestBroker::start(&[]);
    let Some(tools) = Tools::find(&broker.bootstrap()) else {
        return;
    };
    let started = Instant::now();
    let node = broker.node_id.to_string();

    // kafka-topics: create, list, describe, alter, delete.
    let out = tools.admin(
        "TopicCommand",
        &[
            "--create",
            "--topic",
            "tools-a",
            "--partitions",
            "3",
            "--replication-factor",
            "1",
            "--config",
            "retention.ms=123456",
            "--config",
            "max.message.bytes=200000",
        ],
    );
    assert!(out.contains("Created topic tools-a."), "{out}");
    tools.admin(
        "TopicCommand",
        &["--create", "--topic", "tools-b", "--partitions", "2"],
    );
    let list: BTreeSet<String> = tools
        .admin("TopicCommand", &["--list"])
        .lines()
        .map(str::to_owned)
        .collect();
    assert!(
        list.contains("tools-a") && list.contains("tools-b"),
        "{list:?}"
    );
    let describe = |topic: &str| -> (BTreeMap<String, String>, Vec<BTreeMap<String, String>>) {
        let out = tools.admin("TopicCommand", &["--describe", "--topic", topic]);
        let mut head = None;
        let mut parts = Vec::new();
        for line in out.lines() {
            let f = fields(line);
            if f.contains_key("PartitionCount") {
                head = Some(f);
            } else if f.contains_key("Partition") {
                parts.push(f);
            }
        }
        (
            head.unwrap_or_else(|| panic!("no topic line: {out}")),
            parts,
        )
    };
    let check_partitions = |parts: &[BTreeMap<String, String>], n: usize| {
        let ids: Vec<String> = parts.iter().map(|p| p["Partition"].clone()).collect();
        let want: Vec<String> = (0..n).map(|p| p.to_string()).collect();
        assert_eq!(ids, want);
        for p in parts {
            assert_eq!(p["Topic"], "tools-a");
            assert_eq!(p["Leader"], node, "{p:?}");
            assert_eq!(p["Replicas"], node, "{p:?}");
            assert_eq!(p["Isr"], node, "{p:?}");
        }
    };
    let (head, parts) = describe("tools-a");
    assert_eq!(head["PartitionCount"], "3");
    assert_eq!(head["ReplicationFactor"], "1");
    let configs: BTreeSet<&str> = head["Configs"].split(',').collect();
    assert!(
        configs.contains("retention.ms=123456") && configs.contains("max.message.bytes=200000"),
        "{head:?}"
    );
    check_partitions(&parts, 3);
    tools.admin(
        "TopicCommand",
        &["--alter", "--topic", "tools-a", "--partitions", "5"],
    );
    let (head, parts) = describe("tools-a");
    assert_eq!(head["PartitionCount"], "5");
    check_partitions(&parts, 5);
    tools.admin("TopicCommand", &["--delete", "--topic", "tools-b"]);
    let list = tools.admin("TopicCommand", &["--list"]);
    assert!(!list.lines().any(|l| l == "tools-b"), "{list}");
    assert!(list.lines().any(|l| l == "tools-a"), "{list}");

    // kafka-configs on a topic: describe, add, delete.
    let topic_configs = || -> BTreeMap<String, String> {
        let out = tools.admin(
            "ConfigCommand",
            &[
                "--describe",
                "--entity-type",
                "topics",
                "--entity-name",
                "tools-a",
            ],
        );
        assert!(
            out.contains("Dynamic configs for topic tools-a are:"),
            "{out}"
        );
        out.lines()
            .filter_map(|l| l.split_whitespace().next()?.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect()
    };
    let c = topic_configs();
    assert_eq!(c.get("retention.ms").map(String::as_str), Some("123456"));
    assert_eq!(
        c.get("max.message.bytes").map(String::as_str),
        Some("200000")
    );
    tools.admin(
        "ConfigCommand",
        &[
            "--alter",
            "--entity-type",
            "topics",
            "--entity-name",
            "tools-a",
            "--add-config",
            "retention.ms=7777,cleanup.policy=compact",
        ],
    );
    let c = topic_configs();
    assert_eq!(c.get("retention.ms").map(String::as_str), Some("7777"));
    assert_eq!(c.get("cleanup.policy").map(String::as_str), Some("compact"));
    tools.admin(
        "ConfigCommand",
        &[
            "--alter",
            "--entity-type",
            "topics",
            "--entity-name",
            "tools-a",
            "--delete-config",
            "retention.ms",
        ],
    );
    let c = topic_configs();
    assert_eq!(c.get("retention.ms"), None, "{c:?}");
    assert_eq!(c.get("cleanup.policy").map(String::as_str), Some("compact"));
    // Every config (--all) of the topic: the deleted key is back at the broker's default.
    let all = tools.admin(
        "ConfigCommand",
        &[
            "--describe",
            "--all",
            "--entity-type",
            "topics",
            "--entity-name",
            "tools-a",
        ],
    );
    assert!(
        all.lines()
            .any(|l| l.trim().starts_with("retention.ms=604800000 ")),
        "{all}"
    );

    // kafka-configs on the broker: describe by id (--all) and the cluster default.
    let out = tools.admin(
        "ConfigCommand",
        &[
            "--describe",
            "--all",
            "--entity-type",
            "brokers",
            "--entity-name",
            &node,
        ],
    );
    assert!(
        out.contains(&format!("All configs for broker {node} are:")),
        "{out}"
    );
    assert!(
        out.lines()
            .any(|l| l.trim().starts_with(&format!("broker.id={node} "))),
        "{out}"
    );
    let out = tools.admin(
        "ConfigCommand",
        &["--describe", "--entity-type", "brokers", "--entity-default"],
    );
    assert!(
        out.contains("Default configs for brokers in the cluster are:"),
        "{out}"
    );
    // Altering a broker's config (dynamic broker configs): Kafka takes it, ours refuses.
    let alter = tools.try_run(
        "ConfigCommand",
        &[
            "--bootstrap-server",
            &tools.bootstrap,
            "--alter",
            "--entity-type",
            "brokers",
            "--entity-default",
            "--add-config",
            "log.cleaner.threads=2",
        ],
    );
    gap(
        "configs.broker-alter",
        if alter.success() {
            let out = tools.admin(
                "ConfigCommand",
                &["--describe", "--entity-type", "brokers", "--entity-default"],
            );
            if out.contains("log.cleaner.threads=2") {
                Ok(())
            } else {
                Err(format!("altered but not described: {out}"))
            }
        } else {
            Err(alter.stderr.clone())
        },
    );

    // kafka-get-offsets: two rounds of keyed records with a timestamp between them.
    let parts = 3;
    tools.admin(
        "TopicCommand",
        &[
            "--create",
            "--topic",
            "tools-offsets",
            "--partitions",
            &parts.to_string(),
        ],
    );
    produce_keyed(&tools, "tools-offsets", &keyed_lines(0..30));
    std::thread::sleep(Duration::from_millis(20));
    let between = now_ms();
    std::thread::sleep(Duration::from_millis(20));
    produce_keyed(&tools, "tools-offsets", &keyed_lines(30..50));
    let first = per_partition((0..30).map(|i| format!("k{i}")), parts);
    let all = per_partition((0..50).map(|i| format!("k{i}")), parts);
    let get = |time: &str| {
        offsets(
            &tools.admin(
                "GetOffsetShell",
                &["--topic", "tools-offsets", "--time", time],
            ),
            "tools-offsets",
        )
    };
    let zeros: BTreeMap<i32, i64> = (0..parts).map(|p| (p, 0)).collect();
    assert_eq!(get("-1"), all, "latest");
    assert_eq!(get("latest"), all, "latest");
    assert_eq!(get("-2"), zeros, "earliest");
    assert_eq!(get("earliest"), zeros, "earliest");
    assert_eq!(get(&between.to_string()), first, "by timestamp {between}");
    assert_eq!(get("0"), zeros, "by timestamp 0");
    // A timestamp after every record: no offset (Kafka prints no line for the partition).
    let later = (now_ms() + 3_600_000).to_string();
    assert_eq!(get(&later), BTreeMap::new(), "by a future timestamp");

    // kafka-delete-records: partition 0 up to offset 2, then the earliest offset is 2.
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("delete.json");
    std::fs::write(
        &json,
        r#"{"version":1,"partitions":[{"topic":"tools-offsets","partition":0,"offset":2}]}"#,
    )
    .unwrap();
    let out = tools.admin(
        "DeleteRecordsCommand",
        &["--offset-json-file", json.to_str().unwrap()],
    );
    let line = out
        .lines()
        .find(|l| l.starts_with("partition: tools-offsets-0"))
        .unwrap_or_else(|| panic!("{out}"));
    assert_eq!(fields(line)["low_watermark"], "2", "{out}");
    let mut want = zeros.clone();
    want.insert(0, 2);
    assert_eq!(get("-2"), want, "earliest after delete-records");

    // kafka-broker-api-versions: every api we advertise, with our version range.
    let out = tools.admin("BrokerApiVersionsCommand", &[]);
    let shown: BTreeMap<i16, (i16, i16)> = out
        .lines()
        .filter_map(|l| {
            let l = l.trim().trim_end_matches(',');
            let (name, rest) = l.split_once("): ")?;
            let key = name.rsplit_once('(')?.1.parse().ok()?;
            // "0 to 11 [usable: 11]", or "0 [usable: 0]" for a single version.
            let words: Vec<&str> = rest.split_whitespace().collect();
            let min = words.first()?.parse().ok()?;
            let max = match words.get(1) {
                Some(&"to") => words.get(2)?.parse().ok()?,
                _ => min,
            };
            Some((key, (min, max)))
        })
        .collect();
    for (api, min, max) in SUPPORTED {
        assert_eq!(
            shown.get(&(*api as i16)),
            Some(&(*min, *max)),
            "{api:?} in kafka-broker-api-versions:\n{out}"
        );
    }
    assert!(out.contains(&format!("(id: {node} rack: null")), "{out}");

    // kafka-features: ApiVersions v3+ lists the features this build supports and the levels
    // finalized (metadata.version 3.9-IV0, group.version 1; the others at 0 until they are
    // implemented);
    // UpdateFeatures takes what Kafka's controller takes and refuses the rest with its
    // messages.
    let features = |args: &[&str]| {
        let mut all = vec!["--bootstrap-server", tools.bootstrap.as_str()];
        all.extend_from_slice(args);
        tools.try_run("FeatureCommand", &all)
    };
    let run = features(&["describe"]);
    assert!(run.success(), "{}", run.describe());
    let described: BTreeMap<String, BTreeMap<String, String>> = run
        .stdout
        .lines()
        .map(support::words)
        .filter_map(|f| Some((f.get("Feature")?.clone(), f)))
        .collect();
    let level = |name: &str, key: &str| described[name][key].clone();
    assert_eq!(level("metadata.version", "SupportedMinVersion"), "3.3-IV3");
    assert_eq!(level("metadata.version", "SupportedMaxVersion"), "3.9-IV0");
    assert_eq!(
        level("metadata.version", "FinalizedVersionLevel"),
        "3.9-IV0"
    );
    for name in ["kraft.version", "transaction.version"] {
        assert_eq!(level(name, "SupportedMaxVersion"), "0", "{name}");
        assert_eq!(level(name, "FinalizedVersionLevel"), "0", "{name}");
    }
    assert_eq!(level("group.version", "SupportedMaxVersion"), "1");
    assert_eq!(level("group.version", "FinalizedVersionLevel"), "1");
    let epoch: i64 = level("metadata.version", "Epoch").parse().unwrap();
    let run = features(&["upgrade", "--feature", "kraft.version=1"]);
    assert!(!run.success());
    assert!(
        run.stdout.contains(
            "Invalid update version 1 for feature kraft.version. Local controller \
             ${node} does not support this feature."
                .replace("${node}", &node)
                .as_str()
        ),
        "{}",
        run.describe()
    );
    let run = features(&["downgrade", "--metadata", "3.8"]);
    assert!(!run.success());
    assert!(
        run.stdout
            .contains("Refusing to perform the requested downgrade"),
        "{}",
        run.describe()
    );
    let run = features(&["upgrade", "--metadata", "3.9", "--dry-run"]);
    assert!(
        run.stdout
            .contains("metadata.version can be upgraded to 21."),
        "{}",
        run.describe()
    );
    let run = features(&["disable", "--feature", "group.version"]);
    assert!(
        run.stdout.contains("group.version was disabled."),
        "{}",
        run.describe()
    );
    // A change moves the finalized features' epoch on (a dry run did not).
    let run = features(&["describe"]);
    let after: i64 = run
        .stdout
        .lines()
        .map(support::words)
        .find(|f| f.get("Feature").is_some_and(|n| n == "metadata.version"))
        .and_then(|f| f.get("Epoch")?.parse().ok())
        .unwrap();
    assert_eq!(after, epoch + 1, "{}", run.describe());

    // kafka-log-dirs: DescribeLogDirs (v0-4).
    let run = tools.try_run(
        "LogDirsCommand",
        &[
            "--bootstrap-server",
            &tools.bootstrap,
            "--describe",
            "--topic-list",
            "tools-offsets",
        ],
    );
    // Its JSON names our data directory and every partition of the topic asked for.
    assert!(run.success(), "{}", run.describe());
    let data_dir = broker.data_dir().display().to_string();
    assert!(
        run.stdout.contains(&format!("\"logDir\":\"{data_dir}\"")),
        "{data_dir} not in {}",
        run.stdout
    );
    for p in 0..3 {
        assert!(
            run.stdout
                .contains(&format!("\"partition\":\"tools-offsets-{p}\"")),
            "tools-offsets-{p} not in {}",
            run.stdout
        );
    }

    // kafka-metadata-quorum: we do not serve DescribeQuorum to clients; the tool must fail
    // at once with Kafka's UNSUPPORTED_VERSION, not hang.
    let t = Instant::now();
    let run = tools.try_run(
        "MetadataQuorumCommand",
        &[
            "--bootstrap-server",
            &tools.bootstrap,
            "describe",
            "--status",
        ],
    );
    assert!(!run.success());
    assert!(
        run.stderr.contains("UnsupportedVersionException")
            && run.stderr.contains("DESCRIBE_QUORUM"),
        "{}",
        run.describe()
    );
    assert!(t.elapsed() < Duration::from_secs(30), "{:?}", t.elapsed());

    eprintln!("topics_configs_offsets: {:?}", started.elapsed());
}

/// The console producer and consumer (keys, headers, partitions, offsets) and
/// kafka-consumer-groups (describe, reset, delete).
#[test]
fn console_and_groups() {
    let broker = TestBroker::start(&[]);
    let Some(tools) = Tools::find(&broker.bootstrap()) else {
        return;
    };
    let started = Instant::now();
    let b = tools.bootstrap.clone();

    // Console producer: key, headers and value on each line.
    let parts = 3;
    tools.admin(
        "TopicCommand",
        &["--create", "--topic", "console", "--partitions", "3"],
    );
    let records: Vec<(String, String, String)> = (0..8)
        .map(|i| {
            // One header on some records, two on the others.
            let headers = if i % 3 == 0 {
                format!("h{i}:x{i}")
            } else {
                format!("h{i}:x{i},trace:t{i}")
            };
            (headers, format!("key-{i}"), format!("value {i}"))
        })
        .collect();
    let input: String = records
        .iter()
        .map(|(h, k, v)| format!("{h}\t{k}\t{v}\n"))
        .collect();
    tools.run(
        "ConsoleProducer",
        &[
            "--bootstrap-server",
            &b,
            "--topic",
            "console",
            "--reader-property",
            "parse.key=true",
            "--reader-property",
            "parse.headers=true",
            "--command-property",
            "acks=all",
        ],
        Some(&input),
    );
    let out = tools
        .run(
            "consumer.ConsoleConsumer",
            &[
                "--bootstrap-server",
                &b,
                "--topic",
                "console",
                "--from-beginning",
                "--max-messages",
                &records.len().to_string(),
                "--timeout-ms",
                "30000",
                "--formatter-property",
                "print.key=true",
                "--formatter-property",
                "print.headers=true",
                "--formatter-property",
                "print.offset=true",
                "--formatter-property",
                "print.partition=true",
            ],
            None,
        )
        .stdout;
    // Partition:P \t Offset:O \t headers \t key \t value
    let mut seen = Vec::new();
    let mut next_offset: BTreeMap<i32, i64> = BTreeMap::new();
    for line in out.lines().filter(|l| l.starts_with("Partition:")) {
        let cells: Vec<&str> = line.split('\t').collect();
        assert_eq!(cells.len(), 5, "{line}");
        let p: i32 = cells[0]["Partition:".len()..].parse().unwrap();
        let o: i64 = cells[1]["Offset:".len()..].parse().unwrap();
        let key = cells[3].to_owned();
        assert_eq!(p, partition_of(key.as_bytes(), parts), "{line}");
        // Offsets within a partition run from 0 without gaps, in the order produced.
        let want = next_offset.entry(p).or_insert(0);
        assert_eq!(o, *want, "{line}");
        *want += 1;
        seen.push((cells[2].to_owned(), key, cells[4].to_owned()));
    }
    let mut want = records.clone();
    want.sort();
    seen.sort();
    assert_eq!(seen, want, "{out}");

    // kafka-consumer-groups: a group that read everything and committed.
    tools.admin(
        "TopicCommand",
        &["--create", "--topic", "grp", "--partitions", "2"],
    );
    produce_keyed(&tools, "grp", &keyed_lines(0..40));
    let leo = per_partition((0..40).map(|i| format!("k{i}")), 2);
    tools.run(
        "consumer.ConsoleConsumer",
        &[
            "--bootstrap-server",
            &b,
            "--topic",
            "grp",
            "--group",
            "g-tools",
            "--from-beginning",
            "--max-messages",
            "40",
            "--timeout-ms",
            "30000",
        ],
        None,
    );
    let groups = |args: &[&str]| tools.admin("consumer.group.ConsumerGroupCommand", args);
    let list = groups(&["--list"]);
    assert!(list.lines().any(|l| l.trim() == "g-tools"), "{list}");
    // CURRENT-OFFSET, LOG-END-OFFSET and LAG per partition.
    let describe = || -> BTreeMap<i32, (i64, i64, i64)> {
        let out = groups(&["--describe", "--group", "g-tools"]);
        table(&out, "GROUP")
            .into_iter()
            .map(|r| {
                assert_eq!(r["GROUP"], "g-tools");
                assert_eq!(r["TOPIC"], "grp");
                let n = |k: &str| r[k].parse::<i64>().unwrap();
                (
                    r["PARTITION"].parse().unwrap(),
                    (n("CURRENT-OFFSET"), n("LOG-END-OFFSET"), n("LAG")),
                )
            })
            .collect()
    };
    let expect = |current: &[i64]| -> BTreeMap<i32, (i64, i64, i64)> {
        leo.iter()
            .map(|(p, end)| {
                let c = current[*p as usize];
                (*p, (c, *end, end - c))
            })
            .collect()
    };
    let (l0, l1) = (leo[&0], leo[&1]);
    assert_eq!(describe(), expect(&[l0, l1]), "after reading everything");
    let state = groups(&["--describe", "--group", "g-tools", "--state"]);
    let rows = table(&state, "GROUP");
    assert_eq!(rows.len(), 1, "{state}");
    assert_eq!(rows[0]["STATE"], "Empty", "{state}");
    assert_eq!(rows[0]["#MEMBERS"], "0", "{state}");

    // --reset-offsets: each prints the new offsets, then --describe shows them.
    let reset = |args: &[&str]| -> BTreeMap<i32, i64> {
        let mut all = vec!["--reset-offsets", "--group", "g-tools", "--execute"];
        all.extend_from_slice(args);
        table(&groups(&all), "GROUP")
            .into_iter()
            .map(|r| {
                (
                    r["PARTITION"].parse().unwrap(),
                    r["NEW-OFFSET"].parse().unwrap(),
                )
            })
            .collect()
    };
    assert_eq!(
        reset(&["--topic", "grp", "--to-earliest"]),
        BTreeMap::from([(0, 0), (1, 0)])
    );
    assert_eq!(describe(), expect(&[0, 0]), "after --to-earliest");
    assert_eq!(
        reset(&["--topic", "grp:0", "--to-offset", "3"]),
        BTreeMap::from([(0, 3)])
    );
    assert_eq!(describe(), expect(&[3, 0]), "after --to-offset 3 on grp:0");
    assert_eq!(
        reset(&["--topic", "grp", "--shift-by", "2"]),
        BTreeMap::from([(0, 5), (1, 2)])
    );
    assert_eq!(describe(), expect(&[5, 2]), "after --shift-by 2");
    // Shifting past the end stops at the log end offset.
    assert_eq!(
        reset(&["--topic", "grp", "--shift-by", "1000"]),
        BTreeMap::from([(0, l0), (1, l1)])
    );
    assert_eq!(
        reset(&["--topic", "grp", "--to-latest"]),
        BTreeMap::from([(0, l0), (1, l1)])
    );

    // --delete.
    let out = groups(&["--delete", "--group", "g-tools"]);
    assert!(
        out.contains("Deletion of requested consumer groups ('g-tools') was successful."),
        "{out}"
    );
    let list = groups(&["--list"]);
    assert!(!list.lines().any(|l| l.trim() == "g-tools"), "{list}");

    eprintln!("console_and_groups: {:?}", started.elapsed());
}

/// kafka-transactions (list, describe, describe-producers, find-hanging, abort) and the
/// producer and consumer perf tests, plain and transactional.
#[test]
fn transactions_and_perf() {
    let broker = TestBroker::start(&[]);
    let Some(tools) = Tools::find(&broker.bootstrap()) else {
        return;
    };
    let started = Instant::now();
    let b = tools.bootstrap.clone();
    let node = broker.node_id.to_string();

    // The perf tests on their own topics, next to the transactions below.
    let perf = {
        let tools = tools.clone();
        std::thread::spawn(move || perf_tests(&tools))
    };

    tools.admin(
        "TopicCommand",
        &["--create", "--topic", "txn", "--partitions", "1"],
    );
    let txns = |id: &str, codec: &str, plan: &str| {
        txn_steps(
            &tools
                .run("peers.tools.Txns", &[&b, "txn", id, codec, plan], None)
                .stdout,
        )
    };
    let mixed = txns("t-mixed", "gzip", "c:5,a:3,c:4");
    assert_eq!(
        mixed,
        vec![("c".into(), 0, 4), ("a".into(), 6, 8), ("c".into(), 10, 13)]
    );
    let hang = txns("t-hang", "lz4", "c:2,h:3");
    assert_eq!(hang, vec![("c".into(), 15, 16), ("h".into(), 18, 20)]);

    let tx = |args: &[&str]| tools.admin("TransactionsCommand", args);
    // list: both ids, the first complete, the second still open.
    let listed: BTreeMap<String, BTreeMap<String, String>> =
        table(&tx(&["list"]), "TransactionalId")
            .into_iter()
            .map(|r| (r["TransactionalId"].clone(), r))
            .collect();
    assert_eq!(listed["t-mixed"]["TransactionState"], "CompleteCommit");
    assert_eq!(listed["t-hang"]["TransactionState"], "Ongoing");
    for r in listed.values() {
        assert_eq!(r["Coordinator"], node);
    }
    let pid_mixed = listed["t-mixed"]["ProducerId"].clone();
    let pid_hang = listed["t-hang"]["ProducerId"].clone();
    assert_ne!(pid_mixed, pid_hang);

    // describe: the open transaction holds txn-0.
    let d = table(
        &tx(&["describe", "--transactional-id", "t-hang"]),
        "CoordinatorId",
    );
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0]["ProducerId"], pid_hang);
    assert_eq!(d[0]["TransactionState"], "Ongoing");
    assert_eq!(d[0]["TopicPartitions"], "txn-0");
    assert_eq!(d[0]["TransactionTimeoutMs"], "60000");
    let d = table(
        &tx(&["describe", "--transactional-id", "t-mixed"]),
        "CoordinatorId",
    );
    assert_eq!(d[0]["TransactionState"], "CompleteCommit");
    assert_eq!(d[0]["TopicPartitions"], "");

    // describe-producers: both producers of txn-0, the open transaction's first offset.
    let producers = || -> BTreeMap<String, BTreeMap<String, String>> {
        table(
            &tx(&["describe-producers", "--topic", "txn", "--partition", "0"]),
            "ProducerId",
        )
        .into_iter()
        .map(|r| (r["ProducerId"].clone(), r))
        .collect()
    };
    let p = producers();
    assert_eq!(p.len(), 2, "{p:?}");
    // Sequences: 12 records from t-mixed (0..=11), 5 from t-hang (0..=4).
    assert_eq!(p[&pid_mixed]["LastSequence"], "11");
    assert_eq!(p[&pid_mixed]["CurrentTransactionStartOffset"], "None");
    assert_eq!(p[&pid_hang]["LastSequence"], "4");
    assert_eq!(p[&pid_hang]["CurrentTransactionStartOffset"], "18");

    // find-hanging: the open transaction is younger than the 15-minute default and its
    // coordinator knows it, so nothing hangs.
    let out = tx(&["find-hanging", "--broker-id", &node]);
    assert!(out.starts_with("Topic"), "{out}");
    assert_eq!(table(&out, "Topic"), vec![], "{out}");

    // abort: the tool writes the abort marker for the open transaction.
    tx(&[
        "abort",
        "--topic",
        "txn",
        "--partition",
        "0",
        "--start-offset",
        "18",
    ]);
    let p = producers();
    assert_eq!(p[&pid_hang]["CurrentTransactionStartOffset"], "None");
    let end = offsets(
        &tools.admin("GetOffsetShell", &["--topic", "txn", "--time", "-1"]),
        "txn",
    );
    assert_eq!(
        end,
        BTreeMap::from([(0, 22)]),
        "records 0..=20 and the marker"
    );
    // read_committed: the committed records only, up to the end.
    let out = tools
        .run(
            "consumer.ConsoleConsumer",
            &[
                "--bootstrap-server",
                &b,
                "--topic",
                "txn",
                "--from-beginning",
                "--isolation-level",
                "read_committed",
                "--max-messages",
                "11",
                "--timeout-ms",
                "30000",
                "--formatter-property",
                "print.offset=true",
            ],
            None,
        )
        .stdout;
    let read: Vec<String> = out
        .lines()
        .filter(|l| l.starts_with("Offset:"))
        .map(str::to_owned)
        .collect();
    let want: Vec<String> = [
        (0, "v0"),
        (1, "v1"),
        (2, "v2"),
        (3, "v3"),
        (4, "v4"),
        (10, "v8"),
        (11, "v9"),
        (12, "v10"),
        (13, "v11"),
        (15, "v0"),
        (16, "v1"),
    ]
    .iter()
    .map(|(o, v)| format!("Offset:{o}\t{v}"))
    .collect();
    assert_eq!(read, want, "{out}");

    perf.join().unwrap();
    eprintln!("transactions_and_perf: {:?}", started.elapsed());
}

/// kafka-producer-perf-test (plain and transactional) then kafka-consumer-perf-test over
/// what it wrote: the counts match.
fn perf_tests(tools: &Tools) {
    let b = tools.bootstrap.as_str();
    let n = 3000;
    let records = n.to_string();
    let produced = |topic: &str, extra: &[&str]| {
        let mut args = vec![
            "--topic",
            topic,
            "--num-records",
            &records,
            "--record-size",
            "100",
            "--throughput",
            "-1",
            "--command-property",
        ];
        // --command-property takes every producer property after it.
        let bootstrap = format!("bootstrap.servers={b}");
        args.extend_from_slice(&[&bootstrap, "acks=all"]);
        args.extend_from_slice(extra);
        let out = tools.run("ProducerPerformance", &args, None).stdout;
        // The summary: "N records sent, R records/sec (...), ...".
        let summary = out
            .lines()
            .rfind(|l| l.contains("records sent") && l.contains("99.9th"))
            .unwrap_or_else(|| panic!("{out}"));
        summary
            .split_whitespace()
            .next()
            .unwrap()
            .parse::<i64>()
            .unwrap()
    };
    assert_eq!(produced("perf", &[]), n);
    assert_eq!(
        produced(
            "perf-tx",
            &[
                "--transactional-id",
                "perf-tx",
                "--transaction-duration-ms",
                "100"
            ]
        ),
        n
    );
    // Plain: every offset is a record. Transactional: the markers take offsets too.
    let ends = |topic: &str| -> i64 {
        offsets(
            &tools.admin("GetOffsetShell", &["--topic", topic, "--time", "-1"]),
            topic,
        )
        .values()
        .sum()
    };
    assert_eq!(ends("perf"), n);
    assert!(ends("perf-tx") > n);
    for topic in ["perf", "perf-tx"] {
        let out = tools.admin(
            "ConsumerPerformance",
            &[
                "--topic",
                topic,
                "--num-records",
                &records,
                "--timeout",
                "30000",
            ],
        );
        // The header names its columns; the row carries a date and time in the first two.
        let header: Vec<&str> = out
            .lines()
            .find(|l| l.starts_with("start.time"))
            .unwrap_or_else(|| panic!("{out}"))
            .split(", ")
            .collect();
        let row: Vec<&str> = out
            .lines()
            .rfind(|l| l.matches(", ").count() == header.len() - 1 && !l.starts_with("start"))
            .unwrap_or_else(|| panic!("{out}"))
            .split(", ")
            .collect();
        let at = header
            .iter()
            .position(|h| *h == "data.consumed.in.nMsg")
            .unwrap();
        assert_eq!(row[at].parse::<i64>().unwrap(), n, "{topic}: {out}");
    }
    // kafka-transactions list: the perf test's transactional id, committed.
    let listed = table(
        &tools.admin("TransactionsCommand", &["list"]),
        "TransactionalId",
    );
    let perf_tx = listed
        .iter()
        .find(|r| r["TransactionalId"] == "perf-tx")
        .unwrap_or_else(|| panic!("{listed:?}"));
    assert_eq!(perf_tx["TransactionState"], "CompleteCommit");
}
