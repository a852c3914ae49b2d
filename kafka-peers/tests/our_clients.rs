//! Our clients (kafka-producer, kafka-consumer, kafka-net's admin) against Apache Kafka 4.4's
//! own broker: one single-node KRaft broker, 3 partitions per auto-created topic, every check
//! in sequence on it. What our clients wrote is read back independently by the Java client
//! (`peers.OurClientsPeer read`), and what Kafka wrote to disk is checked batch by batch.
//!
//! Checks (each named; `apache_kafka.allow` lists the known differences, one per line with the
//! reason; a listed check may fail without failing the test, any other failure fails it):
//! - `producer_idempotent_acks_all`: 300 records (half keyed, each with a header), acks=all and
//!   idempotence (the defaults), over 3 partitions: the Java consumer finds each record where
//!   its future said, with its key, value and header, offsets contiguous per partition, keyed
//!   records on `partition_for_key`.
//! - `producer_codecs`: none, gzip, snappy, lz4, zstd (300 records each, keys, two headers, one
//!   with a null value): the Java consumer reads each back; Kafka's segment files hold batches
//!   of that codec only.
//! - `producer_transactions`: committed, aborted, committed: the Java consumer at
//!   read_committed sees exactly the committed records, at read_uncommitted all of them, our
//!   consumer at read_committed the committed ones; a transaction left open stays invisible
//!   until it commits.
//! - `consumer_group_rebalance`: two members of one group (classic protocol, range): the
//!   second's arrival splits the 3 partitions between them, both read, every record is read,
//!   the group's committed offsets end at the end offsets.
//! - `consumer_offsets_survive_restart`: the Apache Kafka node restarted; a new member of the
//!   group starts at the committed offsets and reads exactly the records written after.
//! - `consumer_seek_and_offsets_for_times`: timestamps to offsets, beginning and end offsets,
//!   seek and seek_to_beginning.
//! - `admin_topics`, `admin_configs`, `admin_list_offsets`, `admin_describe_cluster`,
//!   `admin_groups`: our admin client's calls.
//!
//! A second test, `our_producer_acks_all_on_a_three_node_cluster` (check
//! `producer_acks_all_three_nodes`), starts a 3-node cluster: acks=all with
//! min.insync.replicas=2 goes on with a node killed, min.insync.replicas=3 refuses with
//! NOT_ENOUGH_REPLICAS until the node is back. The two tests run one after the other (about
//! 70 s together on a quiet 2-core machine).
#![allow(clippy::unwrap_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use kafka_consumer::{Consumer, ConsumerConfig, IsolationLevel, OffsetReset, TopicPartition};
use kafka_net::admin::{AlterConfigOp, ConfigResource, ConfigSource, NewTopic, OffsetSpec};
use kafka_net::{Admin, ClusterConfig};
use kafka_peers::{ApacheKafka, Jvm, KafkaOptions, require};
use kafka_producer::partitioner::partition_for_key;
use kafka_producer::{Producer, ProducerConfig, ProducerRecord};
use kafka_protocol::Bytes;
use kafka_protocol::error_code::ErrorCode;

type CheckResult = Result<(), String>;

macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err(format!($($fmt)+));
        }
    };
}

/// What every check gets.
struct Ctx {
    bootstrap: String,
    jvm: Jvm,
    kafka: Mutex<ApacheKafka>,
}

type Shared = Arc<Ctx>;

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// One record as the Java client read it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct JavaRecord {
    topic: String,
    partition: i32,
    offset: i64,
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
    headers: Vec<(String, Option<Vec<u8>>)>,
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    match s {
        "-" => None,
        "~" => Some(Vec::new()),
        _ => Some(
            (0..s.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
                .collect(),
        ),
    }
}

/// Reads `topics` from the beginning with the Java consumer at `isolation` until `expect`
/// records came (or 60 s passed), plus whatever shows in a last half second.
async fn java_read(
    ctx: &Shared,
    topics: &[&str],
    isolation: &str,
    expect: usize,
) -> Result<Vec<JavaRecord>, String> {
    let (jvm, bootstrap) = (ctx.jvm.clone(), ctx.bootstrap.clone());
    let args: Vec<String> = vec![
        "read".into(),
        bootstrap,
        topics.join(","),
        isolation.into(),
        expect.to_string(),
        "60000".into(),
    ];
    let out = tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        jvm.run(
            "peers.OurClientsPeer",
            &args,
            None,
            Duration::from_secs(120),
        )
    })
    .await
    .map_err(|e| e.to_string())?
    .map_err(|e| e.to_string())?;
    let mut records = Vec::new();
    for line in out.stdout.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        if f.first() != Some(&"REC") || f.len() < 6 {
            continue;
        }
        let headers = f[6..]
            .iter()
            .map(|h| {
                let (k, v) = h.split_once('=').unwrap();
                (k.to_owned(), unhex(v))
            })
            .collect();
        records.push(JavaRecord {
            topic: f[1].to_owned(),
            partition: f[2].parse().unwrap(),
            offset: f[3].parse().unwrap(),
            key: unhex(f[4]),
            value: unhex(f[5]),
            headers,
        });
    }
    Ok(records)
}

fn producer_config(ctx: &Shared, extra: &[(&str, &str)]) -> ProducerConfig {
    let mut pairs = vec![
        ("bootstrap.servers", ctx.bootstrap.as_str()),
        ("linger.ms", "5"),
        ("max.block.ms", "30000"),
    ];
    pairs.extend_from_slice(extra);
    ProducerConfig::from_pairs(pairs).unwrap()
}

fn consumer_config(ctx: &Shared) -> kafka_consumer::ConsumerConfigBuilder {
    ConsumerConfig::builder()
        .bootstrap_servers(ctx.bootstrap.split(','))
        .auto_offset_reset(OffsetReset::Earliest)
        .fetch_max_wait(Duration::from_millis(100))
        .default_api_timeout(Duration::from_secs(30))
}

async fn admin(ctx: &Shared) -> Admin {
    Admin::connect(ClusterConfig {
        bootstrap: ctx.bootstrap.split(',').map(str::to_owned).collect(),
        ..Default::default()
    })
    .await
    .unwrap()
}

async fn create_topic(ctx: &Shared, name: &str, partitions: i32) -> CheckResult {
    for r in admin(ctx)
        .await
        .create_topics(&[NewTopic::new(name, partitions, 1)], false)
        .await
    {
        r.map_err(|e| format!("creating {name}: {e}"))?;
    }
    Ok(())
}

/// Waits (at most 20 s) until a consumer's metadata shows `topic` with `count` partitions: a
/// new consumer each time (a consumer, ours as Java's, keeps a topic's partitions until its
/// metadata ages out, and Apache Kafka's broker learns of new partitions a moment after
/// CreatePartitions answers).
async fn wait_for_partitions(ctx: &Shared, topic: &str, count: usize) -> CheckResult {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut parts = Vec::new();
    while Instant::now() < deadline {
        let c = Consumer::new(consumer_config(ctx).build().map_err(|e| e.to_string())?)
            .await
            .map_err(|e| e.to_string())?;
        parts = c.partitions_for(topic).await.unwrap_or_default();
        let _ = c.close(Duration::from_secs(5)).await;
        if parts.len() == count {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    ensure!(
        parts.len() == count,
        "{topic}: partitions {parts:?}, want {count}"
    );
    Ok(())
}

fn now_ms() -> i64 {
    i64::try_from(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis(),
    )
    .unwrap()
}

/// Sends every record, then awaits every future: (partition, offset) of each, in order.
async fn send_all(p: &Producer, records: Vec<ProducerRecord>) -> Result<Vec<(i32, i64)>, String> {
    let mut futures = Vec::with_capacity(records.len());
    for r in records {
        futures.push(p.enqueue(r).await.map_err(|e| format!("enqueue: {e}"))?);
    }
    let mut placed = Vec::with_capacity(futures.len());
    for (i, f) in futures.into_iter().enumerate() {
        let md = tokio::time::timeout(Duration::from_secs(60), f)
            .await
            .map_err(|_| format!("record {i}: no answer in 60 s"))?
            .map_err(|e| format!("record {i}: {e}"))?;
        placed.push((md.partition, md.offset));
    }
    Ok(placed)
}

/// Polls `c` until `want` records came (or `timeout`), returning what came.
async fn poll_until(
    c: &Consumer,
    want: usize,
    timeout: Duration,
) -> Result<Vec<kafka_consumer::ConsumerRecord>, String> {
    let deadline = Instant::now() + timeout;
    let mut got = Vec::new();
    while got.len() < want && Instant::now() < deadline {
        got.extend(
            c.poll(Duration::from_millis(200))
                .await
                .map_err(|e| format!("poll: {e}"))?,
        );
    }
    Ok(got)
}

/// The compression codec id of every batch in a segment file (attributes & 7).
fn codecs_in_segment(path: &std::path::Path) -> Vec<u8> {
    let data = std::fs::read(path).unwrap_or_default();
    let mut codecs = Vec::new();
    let mut at = 0;
    while at + 23 <= data.len() {
        let len = i32::from_be_bytes(data[at + 8..at + 12].try_into().unwrap());
        let Ok(len) = usize::try_from(len) else { break };
        codecs.push(data[at + 22] & 7);
        at += 12 + len;
    }
    codecs
}

#[path = "our_clients/admin.rs"]
mod admin;
#[path = "our_clients/consumer.rs"]
mod consumer;
#[path = "our_clients/producer.rs"]
mod producer;

use admin::*;
use consumer::*;
use producer::*;

// ---------------------------------------------------------------------------------------------
// The run
// ---------------------------------------------------------------------------------------------

type Check = fn(Shared) -> Pin<Box<dyn Future<Output = CheckResult> + Send>>;

macro_rules! checks {
    ($($name:ident),* $(,)?) => {
        vec![$((stringify!($name), (|c| Box::pin($name(c))) as Check)),*]
    };
}

/// The allow file: check name -> reason.
fn allowed() -> BTreeMap<String, String> {
    let path: PathBuf = kafka_peers::crate_dir().join("tests/apache_kafka.allow");
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (name, why) = l.split_once(' ').unwrap_or((l, ""));
            (name.to_owned(), why.trim().to_owned())
        })
        .collect()
}

/// The tests of this file run one at a time (each starts its own Apache Kafka).
static SERIAL: Mutex<()> = Mutex::new(());

#[test]
fn our_clients_against_apache_kafka() {
    let _serial = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let Some(jvm) = require(Jvm::find()) else {
        return;
    };
    let started = Instant::now();
    let jvm = jvm.with_programs().unwrap();
    let kafka = ApacheKafka::start(
        &jvm,
        &KafkaOptions {
            nodes: 1,
            partitions: 3,
            extra: vec![("auto.create.topics.enable".into(), "false".into())],
            ..Default::default()
        },
    )
    .unwrap();
    let ctx = Arc::new(Ctx {
        bootstrap: kafka.bootstrap(),
        jvm,
        kafka: Mutex::new(kafka),
    });
    eprintln!(
        "Apache Kafka up in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let allow = allowed();
    let all = checks![
        admin_describe_cluster,
        admin_topics,
        admin_configs,
        producer_idempotent_acks_all,
        producer_codecs,
        producer_transactions,
        consumer_seek_and_offsets_for_times,
        admin_list_offsets,
        consumer_group_rebalance,
        consumer_offsets_survive_restart,
        admin_groups,
    ];
    for name in allow.keys() {
        assert!(
            all.iter().any(|(n, _)| n == name) || name == "producer_acks_all_three_nodes",
            "apache_kafka.allow names {name}, which is no check here"
        );
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut failed = Vec::new();
    for (name, check) in all {
        let t = Instant::now();
        let ctx = ctx.clone();
        let result = rt.block_on(async move {
            match tokio::time::timeout(Duration::from_secs(180), tokio::spawn(check(ctx))).await {
                Err(_) => Err("no end in 180 s".to_owned()),
                Ok(Err(join)) => Err(format!("panicked: {join}")),
                Ok(Ok(r)) => r,
            }
        });
        let secs = t.elapsed().as_secs_f64();
        match (result, allow.get(name)) {
            (Ok(()), None) => eprintln!("PASS {name} ({secs:.1} s)"),
            (Ok(()), Some(_)) => {
                eprintln!("PASS {name} ({secs:.1} s), listed in apache_kafka.allow: remove it")
            }
            (Err(e), Some(why)) => eprintln!("ALLOWED {name} ({secs:.1} s): {e}\n  ({why})"),
            (Err(e), None) => {
                eprintln!("FAIL {name} ({secs:.1} s): {e}");
                failed.push(format!("{name}: {e}"));
            }
        }
    }
    eprintln!("all checks in {:.1} s", started.elapsed().as_secs_f64());
    if !failed.is_empty() {
        eprintln!(
            "{}",
            ctx.kafka
                .lock()
                .unwrap()
                .log(0)
                .lines()
                .rev()
                .take(40)
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
    assert!(
        failed.is_empty(),
        "differences from Apache Kafka:\n{}",
        failed.join("\n")
    );
}

/// acks=all on a 3-node Apache Kafka cluster, replication factor 3: with min.insync.replicas=2
/// one node down changes nothing our idempotent producer can see (every record acknowledged
/// once, in order, as the Java consumer reads them); with min.insync.replicas=3 the same loss
/// makes the partition refuse with NOT_ENOUGH_REPLICAS, which our producer retries until the
/// node is back (or, past `delivery.timeout.ms`, reports).
#[test]
fn our_producer_acks_all_on_a_three_node_cluster() {
    let _serial = SERIAL
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let Some(jvm) = require(Jvm::find()) else {
        return;
    };
    let started = Instant::now();
    let jvm = jvm.with_programs().unwrap();
    let extra = [
        ("auto.create.topics.enable", "false"),
        // A dead node leaves the ISR within seconds (fenced by the controller).
        ("broker.session.timeout.ms", "4000"),
        ("broker.heartbeat.interval.ms", "1000"),
        ("replica.lag.time.max.ms", "5000"),
    ];
    let kafka = ApacheKafka::start(
        &jvm,
        &KafkaOptions {
            nodes: 3,
            partitions: 3,
            extra: extra
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            ..Default::default()
        },
    )
    .unwrap();
    let ctx = Arc::new(Ctx {
        bootstrap: kafka.bootstrap(),
        jvm,
        kafka: Mutex::new(kafka),
    });
    eprintln!(
        "3 Apache Kafka nodes up in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let result = rt.block_on(async {
        tokio::time::timeout(
            Duration::from_secs(180),
            acks_all_with_a_node_down(ctx.clone()),
        )
        .await
    });
    eprintln!("done in {:.1} s", started.elapsed().as_secs_f64());
    let allow = allowed();
    let name = "producer_acks_all_three_nodes";
    match (result, allow.get(name)) {
        (Ok(Ok(())), _) => eprintln!("PASS {name}"),
        (Ok(Err(e)), Some(why)) => eprintln!("ALLOWED {name}: {e} ({why})"),
        (Ok(Err(e)), None) => panic!("{name}: {e}"),
        (Err(_), _) => panic!("{name}: no end in 180 s"),
    }
}

async fn acks_all_with_a_node_down(ctx: Shared) -> CheckResult {
    let a = admin(&ctx).await;
    for (topic, min_isr) in [("isr-2", "2"), ("isr-3", "3")] {
        let created = a
            .create_topics(
                &[NewTopic::new(topic, 3, 3).config("min.insync.replicas", min_isr)],
                false,
            )
            .await;
        created
            .into_iter()
            .next()
            .unwrap()
            .map_err(|e| format!("creating {topic}: {e}"))?;
        wait_for_partitions(&ctx, topic, 3).await?;
    }
    let batch = |topic: &str, from: usize| -> Vec<ProducerRecord> {
        (from..from + 150)
            .map(|i| {
                ProducerRecord::new(topic.to_owned(), Bytes::from(format!("{topic}-{i:04}")))
                    .partition(i32::try_from(i % 3).unwrap())
            })
            .collect()
    };
    let p = Producer::new(producer_config(&ctx, &[]))
        .await
        .map_err(|e| e.to_string())?;
    let mut placed = send_all(&p, batch("isr-2", 0)).await?;
    placed.extend(send_all(&p, batch("isr-3", 0)).await?);

    // Node 3 down: the cluster keeps a controller quorum (2 of 3) and every partition a leader.
    let c2 = ctx.clone();
    tokio::task::spawn_blocking(move || c2.kafka.lock().unwrap().kill(2))
        .await
        .map_err(|e| e.to_string())?;
    let more = send_all(&p, batch("isr-2", 150)).await?;
    placed.extend(more);

    // min.insync.replicas=3 with 2 replicas alive: refused, retried, expired.
    let strict = Producer::new(producer_config(
        &ctx,
        &[
            ("delivery.timeout.ms", "12000"),
            ("request.timeout.ms", "5000"),
            ("linger.ms", "0"),
        ],
    ))
    .await
    .map_err(|e| e.to_string())?;
    // Wait until the dead node has left the ISR (the leader then refuses outright).
    tokio::time::sleep(Duration::from_secs(6)).await;
    let refused = strict
        .send(ProducerRecord::new("isr-3", Bytes::from_static(b"refused")).partition(0))
        .await;
    let e = match refused {
        Ok(md) => return Err(format!("isr-3 with a node down took a record: {md:?}")),
        Err(e) => e,
    };
    let text = e.to_string();
    eprintln!("isr-3 with a node down: {text}");
    ensure!(
        e.code().is_some_and(|c| c == ErrorCode::NOT_ENOUGH_REPLICAS
            || c == ErrorCode::NOT_ENOUGH_REPLICAS_AFTER_APPEND)
            || text.contains("NOT_ENOUGH_REPLICAS"),
        "isr-3 with a node down: {text}"
    );
    strict.close(Duration::from_secs(5)).await;

    // Node 3 back: the idempotent producer's records all went in once.
    let c2 = ctx.clone();
    tokio::task::spawn_blocking(move || c2.kafka.lock().unwrap().restart(2))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("restarting node 3: {e}"))?;
    placed.extend(send_all(&p, batch("isr-2", 300)).await?);
    p.close(Duration::from_secs(10)).await;
    let read = java_read(&ctx, &["isr-2", "isr-3"], "read_uncommitted", 600).await?;
    let mut got: Vec<String> = read
        .iter()
        .map(|r| String::from_utf8(r.value.clone().unwrap_or_default()).unwrap())
        .collect();
    got.sort();
    let mut want: Vec<String> = (0..450).map(|i| format!("isr-2-{i:04}")).collect();
    want.extend((0..150).map(|i| format!("isr-3-{i:04}")));
    want.sort();
    ensure!(
        got == want,
        "the Java consumer read {} records: {:?}",
        got.len(),
        got.iter().take(5).collect::<Vec<_>>()
    );
    // In send order per partition, offsets from 0 without a gap.
    for topic in ["isr-2", "isr-3"] {
        for partition in 0..3 {
            let mut offsets: Vec<(i64, String)> = read
                .iter()
                .filter(|r| r.topic == topic && r.partition == partition)
                .map(|r| {
                    (
                        r.offset,
                        String::from_utf8(r.value.clone().unwrap_or_default()).unwrap(),
                    )
                })
                .collect();
            offsets.sort();
            let values: Vec<&String> = offsets.iter().map(|(_, v)| v).collect();
            let mut sorted = values.clone();
            sorted.sort();
            ensure!(values == sorted, "{topic}-{partition}: not in send order");
            let want: Vec<i64> = (0..i64::try_from(offsets.len()).unwrap()).collect();
            let have: Vec<i64> = offsets.iter().map(|(o, _)| *o).collect();
            ensure!(have == want, "{topic}-{partition}: offsets {have:?}");
        }
    }
    ensure!(placed.len() == 600, "futures resolved: {}", placed.len());
    Ok(())
}
