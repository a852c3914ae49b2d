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

// ---------------------------------------------------------------------------------------------
// Producer
// ---------------------------------------------------------------------------------------------

async fn producer_idempotent_acks_all(ctx: Shared) -> CheckResult {
    let topic = "p-idem";
    create_topic(&ctx, topic, 3).await?;
    let cfg = producer_config(&ctx, &[]);
    ensure!(
        cfg.enable_idempotence && cfg.acks == kafka_producer::Acks::All,
        "defaults are not idempotent acks=all"
    );
    let p = Producer::new(cfg).await.map_err(|e| e.to_string())?;
    let mut sent = Vec::new();
    for i in 0..300u32 {
        let mut r = ProducerRecord::new(topic, Bytes::from(format!("idem-{i}")))
            .header("idx", Some(Bytes::from(i.to_string())));
        if i % 2 == 0 {
            r = r.key(Bytes::from(format!("k{}", i % 20)));
        }
        sent.push(r);
    }
    let placed = send_all(&p, sent.clone()).await?;
    p.close(Duration::from_secs(10)).await;
    let read = java_read(&ctx, &[topic], "read_uncommitted", 300).await?;
    ensure!(
        read.len() == 300,
        "the Java consumer read {} of 300",
        read.len()
    );
    let at: BTreeMap<(i32, i64), &JavaRecord> =
        read.iter().map(|r| ((r.partition, r.offset), r)).collect();
    for (i, (r, (p, o))) in sent.iter().zip(&placed).enumerate() {
        let Some(j) = at.get(&(*p, *o)) else {
            return Err(format!("record {i}: nothing at {p}/{o}"));
        };
        ensure!(
            j.value.as_deref() == r.value.as_deref() && j.key.as_deref() == r.key.as_deref(),
            "record {i} at {p}/{o}: Java read {j:?}"
        );
        ensure!(
            j.headers == vec![("idx".to_owned(), Some(i.to_string().into_bytes()))],
            "record {i}: headers {:?}",
            j.headers
        );
        if let Some(k) = &r.key {
            ensure!(
                *p == partition_for_key(k, 3),
                "record {i}: key on partition {p}, murmur2 says {}",
                partition_for_key(k, 3)
            );
        }
    }
    for partition in 0..3 {
        let offsets: Vec<i64> = placed
            .iter()
            .filter(|(p, _)| *p == partition)
            .map(|(_, o)| *o)
            .collect();
        let want: Vec<i64> = (0..i64::try_from(offsets.len()).unwrap()).collect();
        ensure!(
            offsets == want,
            "partition {partition}: offsets not 0.. in send order: {offsets:?}"
        );
    }
    Ok(())
}

const CODECS: [&str; 5] = ["none", "gzip", "snappy", "lz4", "zstd"];

async fn producer_codecs(ctx: Shared) -> CheckResult {
    let mut expected: BTreeMap<(String, i64), (Vec<u8>, Vec<u8>)> = BTreeMap::new();
    for codec in CODECS {
        let topic = format!("p-codec-{codec}");
        create_topic(&ctx, &topic, 1).await?;
        let p = Producer::new(producer_config(&ctx, &[("compression.type", codec)]))
            .await
            .map_err(|e| e.to_string())?;
        let records: Vec<ProducerRecord> = (0..300)
            .map(|i| {
                ProducerRecord::new(
                    topic.clone(),
                    Bytes::from(format!("{codec} record {i} ").repeat(3)),
                )
                .key(Bytes::from(format!("key-{i}")))
                .header("codec", Some(Bytes::from(codec)))
                .header("none", None)
            })
            .collect();
        let placed = send_all(&p, records.clone()).await?;
        p.close(Duration::from_secs(10)).await;
        for (r, (_, o)) in records.iter().zip(placed) {
            expected.insert(
                (topic.clone(), o),
                (
                    r.key.clone().unwrap().to_vec(),
                    r.value.clone().unwrap().to_vec(),
                ),
            );
        }
    }
    let topics: Vec<String> = CODECS.iter().map(|c| format!("p-codec-{c}")).collect();
    let names: Vec<&str> = topics.iter().map(String::as_str).collect();
    let read = java_read(&ctx, &names, "read_uncommitted", expected.len()).await?;
    ensure!(
        read.len() == expected.len(),
        "the Java consumer read {} of {}",
        read.len(),
        expected.len()
    );
    for r in &read {
        let codec = r.topic.trim_start_matches("p-codec-");
        let want = expected.get(&(r.topic.clone(), r.offset));
        ensure!(
            want.is_some_and(|(k, v)| r.key.as_ref() == Some(k) && r.value.as_ref() == Some(v)),
            "{}/{}: read {r:?}, sent {want:?}",
            r.topic,
            r.offset
        );
        ensure!(
            r.headers
                == vec![
                    ("codec".to_owned(), Some(codec.as_bytes().to_vec())),
                    ("none".to_owned(), None)
                ],
            "{}/{}: headers {:?}",
            r.topic,
            r.offset,
            r.headers
        );
    }
    let data = ctx.kafka.lock().unwrap().data_dir(0).unwrap();
    for (id, codec) in CODECS.iter().enumerate() {
        let seg = data.join(format!("p-codec-{codec}-0/00000000000000000000.log"));
        let on_disk = codecs_in_segment(&seg);
        ensure!(
            !on_disk.is_empty() && on_disk.iter().all(|c| usize::from(*c) == id),
            "{}: batch codecs {on_disk:?}, want all {id}",
            seg.display()
        );
    }
    Ok(())
}

async fn send_txn(
    p: &Producer,
    topic: &str,
    prefix: &str,
    count: usize,
) -> Result<Vec<String>, String> {
    let mut values = Vec::new();
    let mut records = Vec::new();
    for i in 0..count {
        let v = format!("{prefix}-{i:04}");
        records.push(ProducerRecord::new(topic, Bytes::from(v.clone())).partition((i % 3) as i32));
        values.push(v);
    }
    send_all(p, records).await?;
    Ok(values)
}

fn values(read: &[JavaRecord]) -> Vec<String> {
    let mut v: Vec<String> = read
        .iter()
        .map(|r| String::from_utf8(r.value.clone().unwrap_or_default()).unwrap())
        .collect();
    v.sort();
    v
}

async fn producer_transactions(ctx: Shared) -> CheckResult {
    let topic = "p-txn";
    create_topic(&ctx, topic, 3).await?;
    let txn = |id: &str| producer_config(&ctx, &[("transactional.id", id)]);
    let p = Producer::new(txn("ours-txn-1"))
        .await
        .map_err(|e| e.to_string())?;
    let e = |e: kafka_producer::ProducerError| e.to_string();
    p.init_transactions().await.map_err(e)?;
    p.begin_transaction().map_err(e)?;
    let mut committed = send_txn(&p, topic, "c1", 60).await?;
    p.commit_transaction().await.map_err(e)?;
    p.begin_transaction().map_err(e)?;
    let aborted = send_txn(&p, topic, "ab", 30).await?;
    p.abort_transaction().await.map_err(e)?;
    p.begin_transaction().map_err(e)?;
    committed.extend(send_txn(&p, topic, "c3", 60).await?);
    p.commit_transaction().await.map_err(e)?;
    p.close(Duration::from_secs(10)).await;
    committed.sort();
    let mut all = committed.clone();
    all.extend(aborted);
    all.sort();

    let rc = java_read(&ctx, &[topic], "read_committed", committed.len()).await?;
    ensure!(
        values(&rc) == committed,
        "Java read_committed: {:?}",
        values(&rc)
    );
    let ru = java_read(&ctx, &[topic], "read_uncommitted", all.len()).await?;
    ensure!(
        values(&ru) == all,
        "Java read_uncommitted: {:?}",
        values(&ru)
    );

    // Ours at read_committed.
    let c = Consumer::new(
        consumer_config(&ctx)
            .isolation_level(IsolationLevel::ReadCommitted)
            .build()
            .map_err(|e| e.to_string())?,
    )
    .await
    .map_err(|e| e.to_string())?;
    c.assign((0..3).map(|p| TopicPartition::new(topic, p)))
        .map_err(|e| e.to_string())?;
    let mut got = poll_until(&c, committed.len(), Duration::from_secs(30)).await?;
    got.extend(
        c.poll(Duration::from_millis(500))
            .await
            .map_err(|e| e.to_string())?,
    );
    let mut ours: Vec<String> = got
        .iter()
        .map(|r| String::from_utf8(r.value.clone().unwrap_or_default().to_vec()).unwrap())
        .collect();
    ours.sort();
    ensure!(ours == committed, "our read_committed consumer: {ours:?}");
    let _ = c.close(Duration::from_secs(5)).await;

    // An open transaction is invisible until it commits.
    let p = Producer::new(txn("ours-txn-2"))
        .await
        .map_err(|e| e.to_string())?;
    p.init_transactions().await.map_err(e)?;
    p.begin_transaction().map_err(e)?;
    let open = send_txn(&p, topic, "open", 9).await?;
    let rc = java_read(&ctx, &[topic], "read_committed", committed.len()).await?;
    ensure!(
        values(&rc) == committed,
        "an open transaction showed at read_committed: {:?}",
        values(&rc)
    );
    p.commit_transaction().await.map_err(e)?;
    p.close(Duration::from_secs(10)).await;
    committed.extend(open);
    committed.sort();
    let rc = java_read(&ctx, &[topic], "read_committed", committed.len()).await?;
    ensure!(
        values(&rc) == committed,
        "after the commit: {:?}",
        values(&rc)
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Consumer
// ---------------------------------------------------------------------------------------------

const GROUP: &str = "ours-group";
const GROUP_TOPIC: &str = "c-grp";

fn member(ctx: &Shared, name: &str) -> Result<ConsumerConfig, String> {
    consumer_config(ctx)
        .group_id(GROUP)
        .client_id(name)
        .enable_auto_commit(false)
        .session_timeout(Duration::from_secs(10))
        .heartbeat_interval(Duration::from_millis(500))
        .build()
        .map_err(|e| e.to_string())
}

async fn produce_spread(ctx: &Shared, topic: &str, from: i64, count: i64) -> CheckResult {
    let p = Producer::new(producer_config(ctx, &[]))
        .await
        .map_err(|e| e.to_string())?;
    let records = (from..from + count)
        .map(|i| {
            ProducerRecord::new(topic, Bytes::from(format!("g-{i}")))
                .partition(i32::try_from(i % 3).unwrap())
        })
        .collect();
    send_all(&p, records).await?;
    p.close(Duration::from_secs(10)).await;
    Ok(())
}

async fn consumer_group_rebalance(ctx: Shared) -> CheckResult {
    create_topic(&ctx, GROUP_TOPIC, 3).await?;
    produce_spread(&ctx, GROUP_TOPIC, 0, 300).await?;
    let a = Arc::new(
        Consumer::new(member(&ctx, "member-a")?)
            .await
            .map_err(|e| e.to_string())?,
    );
    a.subscribe([GROUP_TOPIC]).map_err(|e| e.to_string())?;
    let mut seen: BTreeSet<(i32, i64)> = BTreeSet::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while (a.assignment().len() < 3 || seen.len() < 30) && Instant::now() < deadline {
        for r in a
            .poll(Duration::from_millis(200))
            .await
            .map_err(|e| e.to_string())?
        {
            seen.insert((r.partition, r.offset));
        }
    }
    ensure!(
        a.assignment().len() == 3,
        "member a alone owns {:?}",
        a.assignment()
    );
    a.commit_sync().await.map_err(|e| e.to_string())?;

    let b = Arc::new(
        Consumer::new(member(&ctx, "member-b")?)
            .await
            .map_err(|e| e.to_string())?,
    );
    b.subscribe([GROUP_TOPIC]).map_err(|e| e.to_string())?;
    let seen = Arc::new(Mutex::new(seen));
    let split = Arc::new(Mutex::new(
        None::<(BTreeSet<TopicPartition>, BTreeSet<TopicPartition>)>,
    ));
    let poller = |c: Arc<Consumer>, other: Arc<Consumer>, first: bool| {
        let (seen, split) = (seen.clone(), split.clone());
        tokio::spawn(async move {
            let deadline = Instant::now() + Duration::from_secs(90);
            loop {
                let got = c
                    .poll(Duration::from_millis(200))
                    .await
                    .map_err(|e| e.to_string())?;
                let mut s = seen.lock().unwrap();
                for r in got {
                    s.insert((r.partition, r.offset));
                }
                let (mine, theirs) = (c.assignment(), other.assignment());
                if !mine.is_empty() && !theirs.is_empty() && mine.is_disjoint(&theirs) {
                    let mut sp = split.lock().unwrap();
                    if sp.is_none() {
                        *sp = Some(if first {
                            (mine, theirs)
                        } else {
                            (theirs, mine)
                        });
                    }
                }
                if s.len() >= 300 && split.lock().unwrap().is_some() {
                    break;
                }
                if Instant::now() > deadline {
                    return Err(format!("only {} of 300 records read", s.len()));
                }
            }
            c.commit_sync().await.map_err(|e| e.to_string())
        })
    };
    let ta = poller(a.clone(), b.clone(), true);
    let tb = poller(b.clone(), a.clone(), false);
    ta.await.map_err(|e| e.to_string())??;
    tb.await.map_err(|e| e.to_string())??;
    let (sa, sb) = split.lock().unwrap().clone().unwrap();
    let union: BTreeSet<TopicPartition> = sa.union(&sb).cloned().collect();
    ensure!(
        union.len() == 3 && (sa.len(), sb.len()) != (0, 0),
        "after the rebalance: a {sa:?}, b {sb:?}"
    );
    ensure!(
        seen.lock().unwrap().len() == 300,
        "records read: {}",
        seen.lock().unwrap().len()
    );
    // Both commit what they own now; the group's offsets are the ends.
    a.commit_sync().await.map_err(|e| e.to_string())?;
    b.commit_sync().await.map_err(|e| e.to_string())?;
    let tps: Vec<TopicPartition> = (0..3)
        .map(|p| TopicPartition::new(GROUP_TOPIC, p))
        .collect();
    let committed = a.committed(&tps).await.map_err(|e| e.to_string())?;
    for tp in &tps {
        let o = committed.get(tp).and_then(|o| o.as_ref()).map(|o| o.offset);
        ensure!(o == Some(100), "{tp}: committed {o:?}, want 100");
    }
    for c in [a, b] {
        let c = Arc::try_unwrap(c).map_err(|_| "a consumer is still shared".to_owned())?;
        c.close(Duration::from_secs(10))
            .await
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

async fn consumer_offsets_survive_restart(ctx: Shared) -> CheckResult {
    let ctx2 = ctx.clone();
    tokio::task::spawn_blocking(move || ctx2.kafka.lock().unwrap().restart(0))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("restarting Apache Kafka: {e}"))?;
    let c = Consumer::new(member(&ctx, "member-c")?)
        .await
        .map_err(|e| e.to_string())?;
    let tps: Vec<TopicPartition> = (0..3)
        .map(|p| TopicPartition::new(GROUP_TOPIC, p))
        .collect();
    let committed = c.committed(&tps).await.map_err(|e| e.to_string())?;
    for tp in &tps {
        let o = committed.get(tp).and_then(|o| o.as_ref()).map(|o| o.offset);
        ensure!(
            o == Some(100),
            "after the restart, {tp}: committed {o:?}, want 100"
        );
    }
    produce_spread(&ctx, GROUP_TOPIC, 300, 30).await?;
    c.subscribe([GROUP_TOPIC]).map_err(|e| e.to_string())?;
    let mut got = poll_until(&c, 30, Duration::from_secs(60)).await?;
    got.extend(
        c.poll(Duration::from_millis(500))
            .await
            .map_err(|e| e.to_string())?,
    );
    let mut offsets: Vec<(i32, i64)> = got.iter().map(|r| (r.partition, r.offset)).collect();
    offsets.sort_unstable();
    let want: Vec<(i32, i64)> = (0..3)
        .flat_map(|p| (100..110).map(move |o| (p, o)))
        .collect();
    ensure!(offsets == want, "the new member read {offsets:?}");
    c.commit_sync().await.map_err(|e| e.to_string())?;
    c.close(Duration::from_secs(10))
        .await
        .map_err(|e| e.to_string())?;
    Ok(())
}

const TIMES_TOPIC: &str = "c-times";

async fn consumer_seek_and_offsets_for_times(ctx: Shared) -> CheckResult {
    create_topic(&ctx, TIMES_TOPIC, 1).await?;
    let base = now_ms() - 3_600_000;
    let p = Producer::new(producer_config(&ctx, &[]))
        .await
        .map_err(|e| e.to_string())?;
    let records = (0..20)
        .map(|i| {
            ProducerRecord::new(TIMES_TOPIC, Bytes::from(format!("t-{i}")))
                .partition(0)
                .timestamp(base + i * 1000)
        })
        .collect();
    send_all(&p, records).await?;
    p.close(Duration::from_secs(10)).await;
    let c = Consumer::new(consumer_config(&ctx).build().map_err(|e| e.to_string())?)
        .await
        .map_err(|e| e.to_string())?;
    let tp = TopicPartition::new(TIMES_TOPIC, 0);
    let found = c
        .offsets_for_times(&BTreeMap::from([(tp.clone(), base + 5500)]))
        .await
        .map_err(|e| e.to_string())?;
    let hit = found.get(&tp).cloned().flatten();
    ensure!(
        hit.as_ref().map(|h| (h.offset, h.timestamp)) == Some((6, base + 6000)),
        "offsets_for_times(base + 5.5 s): {hit:?}"
    );
    let later = c
        .offsets_for_times(&BTreeMap::from([(tp.clone(), base + 60_000)]))
        .await
        .map_err(|e| e.to_string())?;
    ensure!(
        later.get(&tp).cloned().flatten().is_none(),
        "a time after every record: {later:?}"
    );
    let begin = c
        .beginning_offsets(std::slice::from_ref(&tp))
        .await
        .map_err(|e| e.to_string())?;
    let end = c
        .end_offsets(std::slice::from_ref(&tp))
        .await
        .map_err(|e| e.to_string())?;
    ensure!(
        begin.get(&tp) == Some(&0) && end.get(&tp) == Some(&20),
        "beginning {begin:?}, end {end:?}"
    );
    c.assign([tp.clone()]).map_err(|e| e.to_string())?;
    c.seek(&tp, 6).map_err(|e| e.to_string())?;
    let got = poll_until(&c, 1, Duration::from_secs(20)).await?;
    ensure!(
        got.first().map(|r| (r.offset, r.timestamp)) == Some((6, base + 6000)),
        "after seek(6): {:?}",
        got.first().map(|r| r.offset)
    );
    c.seek_to_beginning(std::slice::from_ref(&tp))
        .map_err(|e| e.to_string())?;
    let got = poll_until(&c, 1, Duration::from_secs(20)).await?;
    ensure!(
        got.first().map(|r| r.offset) == Some(0),
        "after seek_to_beginning: {:?}",
        got.first().map(|r| r.offset)
    );
    c.close(Duration::from_secs(5))
        .await
        .map_err(|e| e.to_string())?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Admin
// ---------------------------------------------------------------------------------------------

async fn admin_topics(ctx: Shared) -> CheckResult {
    let a = admin(&ctx).await;
    let created = a
        .create_topics(
            &[NewTopic::new("a-topic", 2, 1).config("retention.ms", "3600000")],
            false,
        )
        .await;
    let t = created
        .into_iter()
        .next()
        .unwrap()
        .map_err(|e| e.to_string())?;
    ensure!(
        t.partitions == Some(2) && t.replication_factor == Some(1),
        "created: {t:?}"
    );
    let again = a
        .create_topics(&[NewTopic::new("a-topic", 2, 1)], false)
        .await;
    let code = again[0]
        .as_ref()
        .err()
        .and_then(kafka_net::NetError::error_code);
    ensure!(
        code == Some(ErrorCode::TOPIC_ALREADY_EXISTS),
        "creating it again: {:?}",
        again[0]
    );
    let checked = a
        .create_topics(&[NewTopic::new("a-validate", 1, 1)], true)
        .await;
    ensure!(checked[0].is_ok(), "validate_only: {:?}", checked[0]);
    a.create_partitions("a-topic", 4)
        .await
        .map_err(|e| format!("create_partitions: {e}"))?;
    let fewer = a.create_partitions("a-topic", 3).await;
    ensure!(
        fewer
            .as_ref()
            .err()
            .and_then(kafka_net::NetError::error_code)
            == Some(ErrorCode::INVALID_PARTITIONS),
        "shrinking: {fewer:?}"
    );
    // Four partitions, as a consumer's metadata sees them.
    wait_for_partitions(&ctx, "a-topic", 4).await?;
    let deleted = a.delete_topics(&["a-topic"]).await;
    ensure!(deleted[0].1.is_ok(), "delete: {deleted:?}");
    let gone = a.delete_topics(&["a-topic", "a-validate"]).await;
    for (name, r) in &gone {
        ensure!(
            r.as_ref().err().and_then(kafka_net::NetError::error_code)
                == Some(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION),
            "deleting {name} (gone or never created): {r:?}"
        );
    }
    Ok(())
}

async fn admin_configs(ctx: Shared) -> CheckResult {
    let a = admin(&ctx).await;
    let topic = "a-configs";
    let created = a
        .create_topics(
            &[NewTopic::new(topic, 1, 1).config("retention.ms", "3600000")],
            false,
        )
        .await;
    created
        .into_iter()
        .next()
        .unwrap()
        .map_err(|e| e.to_string())?;
    // CreateTopics answers once the controller has the topic; the broker that answers
    // DescribeConfigs knows it a moment later (the Java AdminClient does not retry either).
    wait_for_partitions(&ctx, topic, 1).await?;
    let res = ConfigResource::topic(topic);
    let describe = |a: &Admin| {
        let res = res.clone();
        let a = a.clone();
        async move {
            a.describe_configs(&[res])
                .await
                .into_iter()
                .next()
                .unwrap()
                .map_err(|e| e.to_string())
        }
    };
    let d = describe(&a).await?;
    let r = d.get("retention.ms").cloned();
    ensure!(
        r.as_ref().map(|e| (e.value.as_deref(), e.source))
            == Some((Some("3600000"), ConfigSource::DynamicTopic)),
        "retention.ms as created: {r:?}"
    );
    let c = d.get("cleanup.policy").cloned();
    ensure!(
        c.as_ref().map(|e| (e.value.as_deref(), e.is_default)) == Some((Some("delete"), true)),
        "cleanup.policy by default: {c:?}"
    );
    let altered = a
        .incremental_alter_configs(
            &[(
                res.clone(),
                vec![
                    AlterConfigOp::set("retention.ms", "7200000"),
                    AlterConfigOp::set("max.message.bytes", "65536"),
                ],
            )],
            false,
        )
        .await;
    ensure!(altered[0].1.is_ok(), "alter: {altered:?}");
    let d = describe(&a).await?;
    let got = (
        d.get("retention.ms").and_then(|e| e.value.clone()),
        d.get("max.message.bytes").and_then(|e| e.value.clone()),
    );
    ensure!(
        got == (Some("7200000".into()), Some("65536".into())),
        "after the alteration: {got:?}"
    );
    let altered = a
        .incremental_alter_configs(
            &[(res.clone(), vec![AlterConfigOp::delete("retention.ms")])],
            false,
        )
        .await;
    ensure!(altered[0].1.is_ok(), "delete op: {altered:?}");
    let d = describe(&a).await?;
    let r = d.get("retention.ms").cloned();
    ensure!(
        r.as_ref().map(|e| (e.value.as_deref(), e.is_default)) == Some((Some("604800000"), true)),
        "retention.ms back to the default: {r:?}"
    );
    let bad = a
        .incremental_alter_configs(
            &[(res.clone(), vec![AlterConfigOp::set("no.such.config", "1")])],
            false,
        )
        .await;
    ensure!(
        bad[0]
            .1
            .as_ref()
            .err()
            .and_then(kafka_net::NetError::error_code)
            == Some(ErrorCode::INVALID_CONFIG),
        "an unknown config: {bad:?}"
    );
    let broker = a
        .describe_configs(&[ConfigResource::broker(1)])
        .await
        .into_iter()
        .next()
        .unwrap()
        .map_err(|e| e.to_string())?;
    let n = broker.get("num.partitions").cloned();
    ensure!(
        n.as_ref().map(|e| (e.value.as_deref(), e.source))
            == Some((Some("3"), ConfigSource::StaticBroker)),
        "broker 1's num.partitions: {n:?}"
    );
    Ok(())
}

async fn admin_list_offsets(ctx: Shared) -> CheckResult {
    // After consumer_seek_and_offsets_for_times: 20 records a second apart.
    let a = admin(&ctx).await;
    let c = Consumer::new(consumer_config(&ctx).build().map_err(|e| e.to_string())?)
        .await
        .map_err(|e| e.to_string())?;
    let tp = TopicPartition::new(TIMES_TOPIC, 0);
    let first_ts = {
        c.assign([tp.clone()]).map_err(|e| e.to_string())?;
        let got = poll_until(&c, 1, Duration::from_secs(20)).await?;
        got.first()
            .map(|r| r.timestamp)
            .ok_or("no record in c-times")?
    };
    let _ = c.close(Duration::from_secs(5)).await;
    // One call per spec: a call names each partition once.
    let mut listed = Vec::new();
    for spec in [
        OffsetSpec::Earliest,
        OffsetSpec::Latest,
        OffsetSpec::MaxTimestamp,
        OffsetSpec::Timestamp(first_ts + 5500),
        OffsetSpec::Timestamp(first_ts + 600_000),
    ] {
        listed.extend(a.list_offsets(&[(TIMES_TOPIC, 0, spec)]).await);
    }
    let got: Vec<Option<(i64, Option<i64>)>> = listed
        .iter()
        .map(|r| r.as_ref().ok().map(|o| (o.offset, o.timestamp)))
        .collect();
    let want = vec![Some(0), Some(20), Some(19), Some(6), Some(-1)];
    let offsets: Vec<Option<i64>> = got.iter().map(|g| g.map(|(o, _)| o)).collect();
    ensure!(offsets == want, "listed {listed:?}");
    ensure!(
        got[2].and_then(|(_, t)| t) == Some(first_ts + 19_000)
            && got[3].and_then(|(_, t)| t) == Some(first_ts + 6000),
        "timestamps of the lookups: {got:?}"
    );
    let missing = a
        .list_offsets(&[("no-such-topic-here", 0, OffsetSpec::Latest)])
        .await;
    ensure!(missing[0].is_err(), "a missing topic: {missing:?}");
    Ok(())
}

async fn admin_describe_cluster(ctx: Shared) -> CheckResult {
    let a = admin(&ctx).await;
    let d = a.describe_cluster().await.map_err(|e| e.to_string())?;
    let port: i32 = ctx.bootstrap.rsplit(':').next().unwrap().parse().unwrap();
    ensure!(
        d.cluster_id.as_ref().is_some_and(|id| id.len() == 22),
        "cluster id {:?}",
        d.cluster_id
    );
    ensure!(
        d.brokers.len() == 1 && d.brokers[0].node_id == 1 && d.brokers[0].port == port,
        "brokers {:?}",
        d.brokers
    );
    ensure!(d.controller_id == 1, "controller {}", d.controller_id);
    Ok(())
}

async fn admin_groups(ctx: Shared) -> CheckResult {
    // After the consumer checks: GROUP is empty, with committed offsets.
    let a = admin(&ctx).await;
    let listed = a.list_groups().await.map_err(|e| e.to_string())?;
    let g = listed.iter().find(|g| g.group_id == GROUP);
    ensure!(
        g.is_some_and(|g| g.protocol_type == "consumer" && g.coordinator == 1),
        "{GROUP} in {listed:?}"
    );
    let d = a.describe_groups(&[GROUP, "never-seen-group"]).await;
    let d0 = d[0].as_ref().map_err(|e| e.to_string())?;
    ensure!(
        d0.state == "Empty" && d0.protocol_type == "consumer" && d0.members.is_empty(),
        "described: {d0:?}"
    );
    let unknown = d[1].as_ref().map(|g| g.state.clone());
    ensure!(
        matches!(unknown.as_deref(), Ok("Dead")),
        "an unknown group: {:?}",
        d[1]
    );
    let deleted = a.delete_groups(&[GROUP]).await;
    ensure!(deleted[0].1.is_ok(), "delete: {deleted:?}");
    let listed = a.list_groups().await.map_err(|e| e.to_string())?;
    ensure!(
        listed.iter().all(|g| g.group_id != GROUP),
        "still listed after the delete: {listed:?}"
    );
    let again = a.delete_groups(&[GROUP]).await;
    ensure!(
        again[0]
            .1
            .as_ref()
            .err()
            .and_then(kafka_net::NetError::error_code)
            == Some(ErrorCode::GROUP_ID_NOT_FOUND),
        "deleting it again: {again:?}"
    );
    Ok(())
}

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
