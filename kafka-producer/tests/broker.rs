//! The producer against our broker, read back by independent implementations (loopback only).
//!
//! - `a_million_records_read_back_by_kcat_and_kafka_python`: 1,000,000 records of 100 bytes
//!   (half keyed with 1000 keys, half without) to 8 partitions with the default settings
//!   (acks=all, idempotence); every future resolves. kcat (checking CRCs) and kafka-python
//!   read the whole topic: every record must be where its future said, once, with its key
//!   and value, offsets contiguous, each partition in send order, keyed records on
//!   `partition_for_key(key, 8)`. librdkafka (`murmur2_random`, through confluent-kafka)
//!   produces the same keys to another topic and must choose the same partition for each.
//! - `every_codec_and_acks_setting_reads_back_in_kafka_python`: none, gzip, snappy, lz4 and
//!   zstd (level 10) times acks 0, 1 and all, 3000 records each, read by kafka-python with
//!   CRC checks and compared the same way; the broker's segment files must hold batches of
//!   that codec only.
//! - `delivery_handler_reports_every_record_once_as_kafka_python_reads_it`: 20,000 records sent
//!   with `send_with_opaque` (the opaque is the record's index); the producer's delivery
//!   handler hears of each exactly once, and kafka-python finds each where the handler was told
//!   it went. Without a handler, `send_with_opaque` refuses records.
//! - `batches_larger_than_the_topic_allows_are_split_and_delivered_in_order`: topics with
//!   `max.message.bytes=3000` and 16 KiB batches: the broker refuses them with
//!   MESSAGE_TOO_LARGE, the producer halves them until they fit (idempotent with 5 in flight,
//!   acks=1, and lz4), every record is delivered once and in order, as kafka-python reads it.
//! - `back_pressure_bounds_memory_while_the_broker_is_stopped`: the `kafka-broker` binary as
//!   a child process, stopped with SIGSTOP. With `buffer.memory` = 1 MiB and
//!   `max.block.ms` = 2000, `enqueue` succeeds until the memory is taken, then waits (seen in
//!   the metrics) and fails with `BufferExhausted`; 100 MiB more offered do not grow the
//!   process; after SIGCONT every appended record is delivered in order, and 100 MiB go
//!   through the 1 MiB producer without growing it.
//! - `close_with_a_stopped_broker_fails_pending_records_in_bounded_time`: `close(1 s)` with
//!   the broker stopped returns in seconds and every pending future fails with `Closed`.
//! - `a_dropped_enqueue_stops_waiting_for_memory`: a send dropped while it waits for memory
//!   stops counting as waiting (else linger would be ignored from then on).
//! - `the_produce_example_writes_what_it_documents`: the `produce` example binary (built with
//!   this test's profile and target directory) against our broker, read back with kcat.
//! - `idempotent_producer_survives_a_broker_restart`: 50,000 records with acks=all; midway
//!   the broker stops (orderly), the second half is enqueued with no broker running, and a
//!   new broker starts on the same data directory and port: every record acknowledged, no
//!   duplicate, no gap, send order kept.
//!
//! Peers: kcat, python3 with kafka-python and confluent-kafka (scripts in `tests/peers/`). A
//! missing peer skips its part with a NOTICE, unless `KAFKA_RS_REQUIRE_PEERS=1`, where it
//! fails. The tests of this file run one at a time (they measure time and memory).
#![allow(clippy::unwrap_used)]

#[path = "broker/brokers.rs"]
mod brokers;
#[path = "broker/peers.rs"]
mod peers;
#[path = "broker/records.rs"]
mod records;

use std::collections::HashMap;
use std::fs::File;
use std::future::Future;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_producer::partitioner::partition_for_key;
use kafka_producer::{
    Acks, DeliveryFuture, DeliveryHandler, Producer, ProducerConfig, ProducerError, ProducerRecord,
    RecordMetadata,
};

use brokers::{ChildBroker, InProcessBroker, cargo_build, codecs_on_disk, rss_bytes};
use peers::{
    SCRIPT_TIMEOUT_SECS, STEP_TIMEOUT, kafka_python_dump, kcat, kcat_dump, run_script, skip, tail,
    wait_bounded,
};
use records::{Expected, Problems, Scheme, assert_dump, check_dump, check_placed, index_of};

/// Partitions of every auto-created topic of the in-process broker.
const PARTITIONS: i32 = 8;
/// Value size of the generated records.
const VALUE_SIZE: usize = 100;

// ---------------------------------------------------------------------------------------------
// Running tests: one at a time, each on its own runtime
// ---------------------------------------------------------------------------------------------

static SERIAL: Mutex<()> = Mutex::new(());

/// Held for the whole of a test: no other test of this file runs meanwhile.
fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Runs `f` on a runtime of 2 threads.
fn run<F: Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(f)
}

/// Enqueues records `0..count` of `scheme` in order, then awaits every future; their
/// partitions and offsets.
async fn produce_all(
    producer: &Producer,
    topic: &str,
    scheme: Scheme,
    count: u64,
) -> Vec<(i32, i64)> {
    let mut futures: Vec<DeliveryFuture> = Vec::with_capacity(usize::try_from(count).unwrap());
    for i in 0..count {
        let f = producer
            .enqueue(scheme.record(topic, i))
            .await
            .unwrap_or_else(|e| panic!("enqueue of record {i}: {e}"));
        futures.push(f);
    }
    let mut placed = Vec::with_capacity(futures.len());
    for (i, f) in futures.into_iter().enumerate() {
        let md = tokio::time::timeout(Duration::from_secs(120), f)
            .await
            .unwrap_or_else(|_| panic!("record {i}: no answer in 120 s"))
            .unwrap_or_else(|e| panic!("record {i}: {e}"));
        assert_eq!(&*md.topic, topic);
        placed.push((md.partition, md.offset));
    }
    placed
}

/// Reads `topics` (name, where each record's future said it went) back with kafka-python
/// (CRCs checked, `codecs` installed) and checks every record is there, once, where it was
/// placed; skips (or fails, with required peers) when kafka-python is missing.
fn kafka_python_confirms(
    addr: &str,
    dir: &Path,
    scheme: Scheme,
    count: u64,
    codecs: &str,
    topics: &[(&str, &[(i32, i64)])],
    what: &str,
) {
    let out_dir = dir.join("kafka-python");
    std::fs::create_dir_all(&out_dir).unwrap();
    let names: Vec<(String, u64)> = topics
        .iter()
        .map(|(t, _)| ((*t).to_owned(), count))
        .collect();
    match kafka_python_dump(addr, &names, codecs, true, &out_dir) {
        Ok(_) => {
            for &(topic, placed) in topics {
                let exp = Expected {
                    topic,
                    scheme,
                    count,
                    placed: Some(placed),
                };
                let path = out_dir.join(format!("{topic}.dump"));
                assert_eq!(assert_dump("kafka-python", &path, &exp), count);
            }
        }
        Err(why) => skip(what, &why),
    }
}

// ---------------------------------------------------------------------------------------------
// 1. A million records, read back by kcat and kafka-python; placement against librdkafka
// ---------------------------------------------------------------------------------------------

const MILLION: u64 = 1_000_000;

#[test]
fn a_million_records_read_back_by_kcat_and_kafka_python() {
    let _serial = serial();
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let broker = InProcessBroker::start(&dir.path().join("data"), "127.0.0.1:0".parse().unwrap());
    let addr = broker.addr.to_string();
    let topic = "million";
    let scheme = Scheme::Mixed { keys: 1000 };
    let placed = run(async {
        let cfg = ProducerConfig::from_pairs([("bootstrap.servers", addr.as_str())]).unwrap();
        assert_eq!(cfg.acks, Acks::All);
        assert!(cfg.enable_idempotence);
        let producer = Producer::new(cfg).await.unwrap();
        let placed = produce_all(&producer, topic, scheme, MILLION).await;
        producer.close(Duration::from_secs(30)).await;
        let m = producer.metrics();
        assert_eq!(m.records_sent, MILLION, "{m:?}");
        assert_eq!(m.records_errored, 0, "{m:?}");
        eprintln!(
            "produced {MILLION} records in {:.1} s: {} requests, {:.1} records/batch, {} retried",
            started.elapsed().as_secs_f64(),
            m.requests,
            m.records_per_batch_avg,
            m.records_retried
        );
        placed
    });
    let by_key = check_placed(scheme, &placed, 0);
    assert_eq!(by_key.len(), 1000);
    // Records without a key are spread over every partition (sticky, switching per batch).
    let mut unkeyed = [0u64; PARTITIONS as usize];
    for (i, &(p, _)) in placed.iter().enumerate() {
        if scheme.key(i as u64).is_none() {
            unkeyed[usize::try_from(p).unwrap()] += 1;
        }
    }
    let fair = MILLION / 2 / PARTITIONS as u64;
    assert!(
        unkeyed.iter().all(|&n| n > fair / 4),
        "records without a key per partition: {unkeyed:?}"
    );
    let produced = started.elapsed();

    // The three peers at once: kcat and kafka-python read everything, librdkafka places keys.
    let keys_file = dir.path().join("keys.hex");
    let mut keys: Vec<&Vec<u8>> = by_key.keys().collect();
    keys.sort();
    std::fs::write(
        &keys_file,
        keys.iter()
            .map(|k| k.iter().map(|b| format!("{b:02x}")).collect::<String>() + "\n")
            .collect::<String>(),
    )
    .unwrap();
    let exp = Expected {
        topic,
        scheme,
        count: MILLION,
        placed: Some(&placed),
    };
    let timings = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        s.spawn(|| {
            let t = Instant::now();
            match kcat() {
                Ok(kcat) => {
                    let out = dir.path().join("kcat.dump");
                    kcat_dump(&kcat, &addr, topic, &out);
                    let read = t.elapsed();
                    assert_eq!(assert_dump("kcat", &out, &exp), MILLION);
                    std::fs::remove_file(&out).unwrap();
                    timings.lock().unwrap().push(format!(
                        "kcat read {:.1} s + check {:.1} s",
                        read.as_secs_f64(),
                        (t.elapsed() - read).as_secs_f64()
                    ));
                }
                Err(why) => skip("the kcat read-back", &why),
            }
        });
        s.spawn(|| {
            let t = Instant::now();
            let out_dir = dir.path().join("kafka-python");
            std::fs::create_dir_all(&out_dir).unwrap();
            // kcat checks the CRCs here; kafka-python's pure python CRC-32C would add 10-15 s
            // (it checks them in the codec test).
            match kafka_python_dump(&addr, &[(topic.into(), MILLION)], "", false, &out_dir) {
                Ok(_) => {
                    let read = t.elapsed();
                    let out = out_dir.join(format!("{topic}.dump"));
                    assert_eq!(assert_dump("kafka-python", &out, &exp), MILLION);
                    std::fs::remove_file(&out).unwrap();
                    timings.lock().unwrap().push(format!(
                        "kafka-python read {:.1} s + check {:.1} s",
                        read.as_secs_f64(),
                        (t.elapsed() - read).as_secs_f64()
                    ));
                }
                Err(why) => skip("the kafka-python read-back", &why),
            }
        });
        s.spawn(|| {
            let t = Instant::now();
            let args: Vec<String> = [
                "--bootstrap",
                &addr,
                "--topic",
                "million-placement",
                "--partitions",
                &PARTITIONS.to_string(),
                "--keys",
                &keys_file.display().to_string(),
                "--timeout",
                &SCRIPT_TIMEOUT_SECS.to_string(),
            ]
            .iter()
            .map(|s| (*s).to_owned())
            .collect();
            match run_script("place_keys.py", &args, &dir.path().join("place_keys.log")) {
                Ok(output) => {
                    let mut problems = Problems::default();
                    let mut placed_by_peer = 0;
                    for line in output.lines() {
                        let Some(rest) = line.strip_prefix("PLACED ") else {
                            continue;
                        };
                        let (hex, p) = rest.split_once(' ').unwrap();
                        let key: Vec<u8> = (0..hex.len())
                            .step_by(2)
                            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                            .collect();
                        let p: i32 = p.parse().unwrap();
                        placed_by_peer += 1;
                        if by_key.get(&key) != Some(&p) {
                            problems.add(format!(
                                "key {:?}: librdkafka chose {p}, we chose {:?}",
                                String::from_utf8_lossy(&key),
                                by_key.get(&key)
                            ));
                        }
                    }
                    assert_eq!(placed_by_peer, by_key.len(), "{output}");
                    problems.assert_none("librdkafka murmur2_random against our placement");
                    timings.lock().unwrap().push(format!(
                        "librdkafka placed {placed_by_peer} keys in {:.1} s",
                        t.elapsed().as_secs_f64()
                    ));
                }
                Err(why) => skip("the librdkafka placement check", &why),
            }
        });
    });
    drop(broker);
    eprintln!(
        "{MILLION} records (without a key per partition: {unkeyed:?}): produced and checked in {:.1} s, peers done at {:.1} s ({})",
        produced.as_secs_f64(),
        started.elapsed().as_secs_f64(),
        timings.lock().unwrap().join("; ")
    );
}

// ---------------------------------------------------------------------------------------------
// 2. Every codec and acks setting, read back by kafka-python
// ---------------------------------------------------------------------------------------------

#[test]
fn every_codec_and_acks_setting_reads_back_in_kafka_python() {
    const COUNT: u64 = 3000;
    let _serial = serial();
    // Codec name, its id in batch attributes, extra settings.
    type Codec = (&'static str, u8, &'static [(&'static str, &'static str)]);
    let codecs: [Codec; 5] = [
        ("none", 0, &[]),
        ("gzip", 1, &[]),
        ("snappy", 2, &[]),
        ("lz4", 3, &[]),
        ("zstd", 4, &[("compression.zstd.level", "10")]),
    ];
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let broker = InProcessBroker::start(&data, "127.0.0.1:0".parse().unwrap());
    let addr = broker.addr.to_string();
    let scheme = Scheme::Mixed { keys: 100 };
    let mut runs = Vec::new();
    for (codec, id, extra) in codecs {
        for acks in ["0", "1", "all"] {
            runs.push((format!("codec-{codec}-acks-{acks}"), codec, id, extra, acks));
        }
    }
    let placed: Vec<Vec<(i32, i64)>> = run(async {
        let mut all = Vec::new();
        for (topic, codec, _, extra, acks) in &runs {
            let mut pairs = vec![
                ("bootstrap.servers", addr.as_str()),
                ("acks", *acks),
                ("compression.type", *codec),
            ];
            pairs.extend_from_slice(extra);
            let producer = Producer::new(ProducerConfig::from_pairs(pairs).unwrap())
                .await
                .unwrap();
            let placed = produce_all(&producer, topic, scheme, COUNT).await;
            producer.close(Duration::from_secs(30)).await;
            if *acks == "0" {
                assert!(
                    placed.iter().all(|&(_, o)| o == -1),
                    "{topic}: acks=0 offsets"
                );
            } else {
                check_placed(scheme, &placed, 0);
            }
            all.push(placed);
        }
        all
    });
    let produced = started.elapsed();
    let topics: Vec<(&str, &[(i32, i64)])> = runs
        .iter()
        .zip(&placed)
        .map(|(r, p)| (r.0.as_str(), p.as_slice()))
        .collect();
    kafka_python_confirms(
        &addr,
        dir.path(),
        scheme,
        COUNT,
        "gzip,snappy,lz4,zstd",
        &topics,
        "the kafka-python read-back of every codec",
    );
    // The batches really are compressed with the codec asked for.
    for (topic, codec, id, ..) in &runs {
        let found = codecs_on_disk(&data, topic);
        assert!(
            found.len() == 1 && found.contains_key(id),
            "{topic}: batches by codec id on disk {found:?}, all {id} ({codec}) expected"
        );
    }
    drop(broker);
    eprintln!(
        "{} runs of {COUNT} records: produced in {:.1} s, all done in {:.1} s",
        runs.len(),
        produced.as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
}

/// A record's report: its partition and offset, or the error's text.
type Report = Result<(i32, i64), String>;

/// Where each record went by its opaque (the record's index), as the delivery handler heard.
struct Placements {
    slots: Mutex<Vec<Option<Report>>>,
    reports: AtomicU64,
}

impl DeliveryHandler for Placements {
    fn on_delivery(&self, opaque: u64, result: Result<&RecordMetadata, &ProducerError>) {
        self.reports.fetch_add(1, Ordering::Relaxed);
        let r = result
            .map(|md| (md.partition, md.offset))
            .map_err(ToString::to_string);
        let mut slots = self.slots.lock().unwrap();
        let slot = &mut slots[usize::try_from(opaque).unwrap()];
        assert!(slot.is_none(), "record {opaque} reported twice");
        *slot = Some(r);
    }
}

#[test]
fn delivery_handler_reports_every_record_once_as_kafka_python_reads_it() {
    const COUNT: u64 = 20_000;
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let broker = InProcessBroker::start(&dir.path().join("data"), "127.0.0.1:0".parse().unwrap());
    let addr = broker.addr.to_string();
    let topic = "opaque-reports";
    let scheme = Scheme::Mixed { keys: 100 };
    let handler = Arc::new(Placements {
        slots: Mutex::new(vec![None; usize::try_from(COUNT).unwrap()]),
        reports: AtomicU64::new(0),
    });
    let placed: Vec<(i32, i64)> = run(async {
        // Without a handler, records are refused up front.
        let plain =
            Producer::new(ProducerConfig::from_pairs([("bootstrap.servers", &*addr)]).unwrap())
                .await
                .unwrap();
        let refused = plain
            .send_with_opaque(scheme.record(topic, 0), 0)
            .await
            .unwrap_err();
        assert!(matches!(refused, ProducerError::Config(_)), "{refused}");
        plain.close(Duration::from_secs(10)).await;

        let cfg = ProducerConfig::builder()
            .bootstrap_servers(addr.as_str())
            .acks(Acks::All)
            .delivery_handler(handler.clone())
            .build()
            .unwrap();
        let producer = Producer::new(cfg).await.unwrap();
        for i in 0..COUNT {
            producer
                .send_with_opaque(scheme.record(topic, i), i)
                .await
                .unwrap_or_else(|e| panic!("record {i}: {e}"));
        }
        tokio::time::timeout(Duration::from_secs(120), producer.flush())
            .await
            .expect("flush within 120 s");
        producer.close(Duration::from_secs(10)).await;
        handler
            .slots
            .lock()
            .unwrap()
            .iter()
            .enumerate()
            .map(|(i, s)| match s {
                Some(Ok(p)) => *p,
                Some(Err(e)) => panic!("record {i} failed: {e}"),
                None => panic!("record {i} never reported"),
            })
            .collect()
    });
    assert_eq!(handler.reports.load(Ordering::Relaxed), COUNT);
    check_placed(scheme, &placed, 0);
    kafka_python_confirms(
        &addr,
        dir.path(),
        scheme,
        COUNT,
        "",
        &[(topic, &placed)],
        "the kafka-python read-back of handler-reported records",
    );
}

#[test]
fn batches_larger_than_the_topic_allows_are_split_and_delivered_in_order() {
    const COUNT: u64 = 6000;
    let _serial = serial();
    let dir = tempfile::tempdir().unwrap();
    let broker = InProcessBroker::start(&dir.path().join("data"), "127.0.0.1:0".parse().unwrap());
    let addr = broker.addr.to_string();
    let scheme = Scheme::Mixed { keys: 100 };
    // Batches fill to 16 KiB (long linger), the topics take 3000 bytes at most: every batch
    // is refused and halved, up to three times, before it fits. Idempotent (acks=all, 5 in
    // flight) and not (acks=1 with one request in flight, which is what keeps order without
    // idempotence), compressed and not.
    let cases = [
        ("split-idempotent", "all", "none", "5"),
        ("split-acks1", "1", "none", "1"),
        ("split-idempotent-lz4", "all", "lz4", "5"),
    ];
    let placed: Vec<Vec<(i32, i64)>> = run(async {
        let admin = kafka_net::Admin::connect(kafka_net::ClusterConfig {
            bootstrap: vec![addr.clone()],
            ..Default::default()
        })
        .await
        .unwrap();
        let topics: Vec<_> = cases
            .iter()
            .map(|(t, ..)| {
                kafka_net::admin::NewTopic::new(*t, PARTITIONS, 1)
                    .config("max.message.bytes", "3000")
            })
            .collect();
        for r in admin.create_topics(&topics, false).await {
            r.unwrap();
        }
        let mut all = Vec::new();
        for (topic, acks, codec, in_flight) in cases {
            let producer = Producer::new(
                ProducerConfig::from_pairs([
                    ("bootstrap.servers", addr.as_str()),
                    ("acks", acks),
                    ("compression.type", codec),
                    ("linger.ms", "200"),
                    ("max.in.flight.requests.per.connection", in_flight),
                ])
                .unwrap(),
            )
            .await
            .unwrap();
            let placed = produce_all(&producer, topic, scheme, COUNT).await;
            let m = producer.metrics();
            producer.close(Duration::from_secs(30)).await;
            check_placed(scheme, &placed, 0);
            assert!(m.batches_split > 0, "{topic}: no batch was split: {m:?}");
            assert_eq!(m.records_errored, 0, "{topic}: {m:?}");
            eprintln!(
                "{topic}: {} splits, {} batches sent",
                m.batches_split, m.batches_sent
            );
            all.push(placed);
        }
        all
    });
    let topics: Vec<(&str, &[(i32, i64)])> = cases
        .iter()
        .zip(&placed)
        .map(|(c, p)| (c.0, p.as_slice()))
        .collect();
    kafka_python_confirms(
        &addr,
        dir.path(),
        scheme,
        COUNT,
        "lz4",
        &topics,
        "the kafka-python read-back of split batches",
    );
}

// ---------------------------------------------------------------------------------------------
// 3. Back-pressure and close with a stopped broker (the broker binary, SIGSTOP)
// ---------------------------------------------------------------------------------------------

const MIB: usize = 1024 * 1024;

/// A producer with the back-pressure settings that has metadata, a producer id and a
/// connection (one record acknowledged) for `topic`.
async fn ready_producer(addr: &str, topic: &str) -> Producer {
    let cfg = ProducerConfig::from_pairs([
        ("bootstrap.servers", addr),
        ("buffer.memory", &MIB.to_string()),
        ("max.block.ms", "2000"),
    ])
    .unwrap();
    let producer = Producer::new(cfg).await.unwrap();
    producer
        .send(ProducerRecord::new(topic, &b"first"[..]))
        .await
        .unwrap();
    producer
}

#[test]
fn back_pressure_bounds_memory_while_the_broker_is_stopped() {
    let _serial = serial();
    let started = Instant::now();
    let bin = cargo_build(
        &["-p", "kafka-broker", "--bin", "kafka-broker"],
        "kafka-broker",
    );
    let built = started.elapsed();
    let dir = tempfile::tempdir().unwrap();
    let mut broker = ChildBroker::start(&bin, dir.path(), &["num.partitions=1"]);
    let addr = broker.addr.clone();
    let topic = "pressure";
    // Values are slices of one buffer: the records themselves cost the test nothing, only
    // the producer's copies count.
    let pattern: Bytes = (0..4 * MIB)
        .map(|i| (i * 7 % 251) as u8)
        .collect::<Vec<u8>>()
        .into();
    run(async {
        let producer = ready_producer(&addr, topic).await;
        broker.pause();

        // Enqueue 1 KiB records until the memory is taken; the last one waits and fails.
        let filler = {
            let producer = producer.clone();
            let pattern = pattern.clone();
            tokio::spawn(async move {
                let mut futures = Vec::new();
                loop {
                    let value = pattern.slice(futures.len() % 1000..futures.len() % 1000 + 1024);
                    let t = Instant::now();
                    match producer.enqueue(ProducerRecord::new(topic, value)).await {
                        Ok(f) => futures.push(f),
                        Err(e) => break (futures, e, t.elapsed()),
                    }
                    assert!(
                        futures.len() < 10_000,
                        "1 MiB of memory took 10 MB of records"
                    );
                }
            })
        };
        let mut saw_waiting = false;
        while !filler.is_finished() {
            let m = producer.metrics();
            assert_eq!(m.buffer_total_bytes, MIB);
            assert!(m.buffer_available_bytes <= MIB, "{m:?}");
            if m.waiting_for_memory > 0 {
                assert_eq!(m.waiting_for_memory, 1, "{m:?}");
                assert!(
                    m.buffer_available_bytes < 16384,
                    "waits with memory free: {m:?}"
                );
                saw_waiting = true;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let (futures, err, waited) = filler.await.unwrap();
        assert!(
            matches!(err, ProducerError::BufferExhausted { .. }),
            "expected BufferExhausted, got {err:?}"
        );
        assert!(
            waited >= Duration::from_millis(1500),
            "gave up after {waited:?}, before max.block.ms"
        );
        assert!(
            saw_waiting,
            "waiting_for_memory never showed the waiting send"
        );
        let accepted = futures.len() * 1024;
        assert!(
            (MIB * 3 / 4..=MIB).contains(&accepted),
            "{} records of 1 KiB accepted with buffer.memory = 1 MiB",
            futures.len()
        );
        assert_eq!(producer.metrics().waiting_for_memory, 0);
        eprintln!(
            "{} records of 1 KiB appended with buffer.memory = 1 MiB; the next one failed after {waited:?}: {err}",
            futures.len()
        );

        // Offer 100 MiB more (200 records of 512 KiB at once): all wait and fail, the
        // process does not grow.
        let rss_before = rss_bytes();
        let offers: Vec<_> = (0..200)
            .map(|i| {
                let producer = producer.clone();
                let value = pattern.slice(i * 1000..i * 1000 + MIB / 2);
                tokio::spawn(
                    async move { producer.enqueue(ProducerRecord::new(topic, value)).await },
                )
            })
            .collect();
        let mut most_waiting = 0;
        while offers.iter().any(|o| !o.is_finished()) {
            let m = producer.metrics();
            assert!(m.buffer_available_bytes <= MIB, "{m:?}");
            most_waiting = most_waiting.max(m.waiting_for_memory);
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        for o in offers {
            let r = o.await.unwrap();
            assert!(
                matches!(r, Err(ProducerError::BufferExhausted { .. })),
                "a 512 KiB record with the memory taken: {r:?}"
            );
        }
        let rss_after = rss_bytes();
        let growth = rss_after.saturating_sub(rss_before);
        eprintln!(
            "100 MiB offered to a full producer: {most_waiting} waiting at most, RSS {} -> {} MiB",
            rss_before / MIB as u64,
            rss_after / MIB as u64
        );
        assert!(most_waiting > 1, "the offers never waited together");
        assert!(growth < 30 * MIB as u64, "RSS grew by {growth} bytes");

        // The broker comes back: everything appended is delivered, in order.
        let t = Instant::now();
        broker.resume();
        // Offsets from 1: the first record is at 0.
        for (next, (i, f)) in (1..).zip(futures.into_iter().enumerate()) {
            let md = tokio::time::timeout(Duration::from_secs(60), f)
                .await
                .unwrap_or_else(|_| panic!("record {i}: no answer 60 s after SIGCONT"))
                .unwrap_or_else(|e| panic!("record {i}: {e}"));
            assert_eq!((md.partition, md.offset), (0, next), "record {i}");
        }
        eprintln!(
            "delivered {accepted} bytes of values {:?} after SIGCONT",
            t.elapsed()
        );

        // 100 MiB through the live broker: memory stays bounded.
        let t = Instant::now();
        let rss_before = rss_bytes();
        let acked = Arc::new(AtomicU64::new(0));
        let failed = Arc::new(AtomicU64::new(0));
        let count = 100 * MIB / 4096;
        for i in 0..count {
            let value = pattern.slice(i % 1000..i % 1000 + 4096);
            let (acked, failed) = (acked.clone(), failed.clone());
            producer
                .send_with_callback(ProducerRecord::new(topic, value), move |r| {
                    let c = if r.is_ok() { acked } else { failed };
                    c.fetch_add(1, Ordering::Relaxed);
                })
                .await
                .unwrap();
        }
        producer.flush().await;
        let rss_after = rss_bytes();
        assert_eq!(failed.load(Ordering::Relaxed), 0);
        assert_eq!(acked.load(Ordering::Relaxed), count as u64);
        let growth = rss_after.saturating_sub(rss_before);
        eprintln!(
            "100 MiB through a 1 MiB producer in {:?}: RSS {} -> {} MiB",
            t.elapsed(),
            rss_before / MIB as u64,
            rss_after / MIB as u64
        );
        assert!(growth < 30 * MIB as u64, "RSS grew by {growth} bytes");
        let t = Instant::now();
        producer.close(Duration::from_secs(10)).await;
        assert!(t.elapsed() < Duration::from_secs(10));
        let m = producer.metrics();
        assert_eq!(m.buffer_available_bytes, MIB, "memory not returned: {m:?}");
    });
    assert!(
        !broker.log().contains("ERROR"),
        "broker log:\n{}",
        tail(&broker.log(), 30)
    );
    eprintln!(
        "back-pressure test: {:.1} s ({:.1} s of it building the broker binary)",
        started.elapsed().as_secs_f64(),
        built.as_secs_f64()
    );
}

#[test]
fn close_with_a_stopped_broker_fails_pending_records_in_bounded_time() {
    let _serial = serial();
    let started = Instant::now();
    let bin = cargo_build(
        &["-p", "kafka-broker", "--bin", "kafka-broker"],
        "kafka-broker",
    );
    let dir = tempfile::tempdir().unwrap();
    let mut broker = ChildBroker::start(&bin, dir.path(), &["num.partitions=2"]);
    let addr = broker.addr.clone();
    run(async {
        let producer = ready_producer(&addr, "closing").await;
        broker.pause();
        let mut futures = Vec::new();
        for i in 0..300u32 {
            let rec = ProducerRecord::new("closing", i.to_string().into_bytes());
            futures.push(producer.enqueue(rec).await.unwrap());
        }
        let t = Instant::now();
        tokio::time::timeout(
            Duration::from_secs(20),
            producer.close(Duration::from_secs(1)),
        )
        .await
        .expect("close(1 s) did not return within 20 s");
        let took = t.elapsed();
        assert!(
            took < Duration::from_secs(7),
            "close(1 s) took {took:?} with the broker stopped"
        );
        for (i, f) in futures.into_iter().enumerate() {
            let r = tokio::time::timeout(Duration::from_secs(5), f)
                .await
                .unwrap_or_else(|_| panic!("record {i}: still pending 5 s after close"));
            assert!(
                matches!(r, Err(ProducerError::Closed(_))),
                "record {i} after close with the broker stopped: {r:?}"
            );
        }
        let r = producer
            .enqueue(ProducerRecord::new("closing", &b"late"[..]))
            .await;
        assert!(matches!(r, Err(ProducerError::Closed(_))), "{r:?}");
        eprintln!("close(1 s) with the broker stopped returned in {took:?}");
    });
    broker.resume();
    eprintln!("close test: {:.1} s", started.elapsed().as_secs_f64());
}

/// An `enqueue` that waits for memory and is dropped (a timeout, a `select!`) must stop
/// counting as a waiter.
#[test]
fn a_dropped_enqueue_stops_waiting_for_memory() {
    let _serial = serial();
    let bin = cargo_build(
        &["-p", "kafka-broker", "--bin", "kafka-broker"],
        "kafka-broker",
    );
    let dir = tempfile::tempdir().unwrap();
    let mut broker = ChildBroker::start(&bin, dir.path(), &["num.partitions=1"]);
    let addr = broker.addr.clone();
    run(async {
        let producer = ready_producer(&addr, "dropped").await;
        broker.pause();
        let value = Bytes::from(vec![7u8; 1024]);
        let mut futures = Vec::new();
        loop {
            let rec = ProducerRecord::new("dropped", value.clone());
            match tokio::time::timeout(Duration::from_millis(200), producer.enqueue(rec)).await {
                Ok(Ok(f)) => futures.push(f),
                Ok(Err(e)) => panic!("{e}"),
                // The memory is taken: this enqueue waited and was dropped.
                Err(_) => break,
            }
        }
        assert_eq!(
            producer.metrics().waiting_for_memory,
            0,
            "a dropped enqueue still counts as waiting"
        );
        broker.resume();
        for f in futures {
            tokio::time::timeout(Duration::from_secs(60), f)
                .await
                .unwrap()
                .unwrap();
        }
        producer.close(Duration::from_secs(10)).await;
    });
}

// ---------------------------------------------------------------------------------------------
// 4. The produce example
// ---------------------------------------------------------------------------------------------

#[test]
fn the_produce_example_writes_what_it_documents() {
    const COUNT: u64 = 20_000;
    const KEYS: u64 = 16;
    let _serial = serial();
    let started = Instant::now();
    let example = cargo_build(
        &["-p", "kafka-producer", "--example", "produce"],
        "examples/produce",
    );
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let broker = InProcessBroker::start(&data, "127.0.0.1:0".parse().unwrap());
    let addr = broker.addr.to_string();
    let log = dir.path().join("produce.log");
    let mut child = Command::new(&example)
        .args(["--bootstrap", &addr, "--topic", "example"])
        .args(["--count", &COUNT.to_string(), "--keys", &KEYS.to_string()])
        .args(["--acks", "1", "--compression", "lz4"])
        .stdin(Stdio::null())
        .stdout(File::create(&log).unwrap())
        .stderr(File::create(dir.path().join("produce.err")).unwrap())
        .spawn()
        .unwrap();
    let status = wait_bounded(&mut child, STEP_TIMEOUT);
    let stdout = std::fs::read_to_string(&log).unwrap();
    let stderr = std::fs::read_to_string(dir.path().join("produce.err")).unwrap();
    assert!(
        status.is_some_and(|s| s.success()),
        "the example: {status:?}\nstdout: {stdout}\nstderr: {}",
        tail(&stderr, 30)
    );
    assert!(
        stdout.contains(&format!("acknowledged {COUNT} of {COUNT} records"))
            && stdout.contains(", 0 failed;"),
        "the example printed: {stdout}"
    );
    let found = codecs_on_disk(&data, "example");
    assert!(
        found.len() == 1 && found.contains_key(&3),
        "batches by codec id {found:?}, lz4 (3) expected"
    );
    match kcat() {
        Ok(kcat) => {
            let out = dir.path().join("example.dump");
            kcat_dump(&kcat, &addr, "example", &out);
            let exp = Expected {
                topic: "example",
                scheme: Scheme::Example {
                    size: VALUE_SIZE,
                    keys: KEYS,
                },
                count: COUNT,
                placed: None,
            };
            assert_eq!(assert_dump("kcat", &out, &exp), COUNT);
        }
        Err(why) => skip("the kcat read-back of the example's topic", &why),
    }
    drop(broker);
    eprintln!(
        "example: {} ({:.1} s in all)",
        stdout.trim(),
        started.elapsed().as_secs_f64()
    );
}

// ---------------------------------------------------------------------------------------------
// 5. Idempotence across a broker restart
// ---------------------------------------------------------------------------------------------

#[test]
fn idempotent_producer_survives_a_broker_restart() {
    const COUNT: u64 = 50_000;
    let _serial = serial();
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let broker = InProcessBroker::start(&data, "127.0.0.1:0".parse().unwrap());
    let bind = broker.addr;
    let addr = bind.to_string();
    let topic = "restart";
    let scheme = Scheme::Mixed { keys: 1000 };
    type Results = Vec<Option<Result<(i32, i64), ProducerError>>>;
    let results: Arc<Mutex<Results>> = Arc::new(Mutex::new(vec![None; COUNT as usize]));
    let acked = Arc::new(AtomicU64::new(0));
    let broker = run(async {
        let cfg = ProducerConfig::from_pairs([("bootstrap.servers", addr.as_str())]).unwrap();
        assert!(cfg.enable_idempotence && cfg.acks == Acks::All);
        let producer = Producer::new(cfg).await.unwrap();
        let mut broker = Some(broker);
        for i in 0..COUNT {
            if i == COUNT / 2 {
                // Midway, with the first half queued and in flight: an orderly stop
                // (requests read are answered, connections closed); the second half is
                // enqueued while no broker runs; then a new one on the same data and port.
                let old = broker.take().unwrap();
                let t = Instant::now();
                tokio::task::spawn_blocking(move || old.stop())
                    .await
                    .unwrap();
                eprintln!(
                    "restart: broker stopped in {:?}, {} records acknowledged by then",
                    t.elapsed(),
                    acked.load(Ordering::Relaxed)
                );
            }
            let (results, acked) = (results.clone(), acked.clone());
            let idx = usize::try_from(i).unwrap();
            producer
                .send_with_callback(scheme.record(topic, i), move |r| {
                    results.lock().unwrap()[idx] = Some(r.map(|md| (md.partition, md.offset)));
                    acked.fetch_add(1, Ordering::Relaxed);
                })
                .await
                .unwrap_or_else(|e| panic!("enqueue of record {i}: {e}"));
        }
        let before_restart = acked.load(Ordering::Relaxed);
        tokio::time::sleep(Duration::from_millis(500)).await;
        let data = data.clone();
        let new = tokio::task::spawn_blocking(move || InProcessBroker::start(&data, bind))
            .await
            .unwrap();
        tokio::time::timeout(Duration::from_secs(120), producer.flush())
            .await
            .expect("records still pending 120 s after the restart");
        producer.close(Duration::from_secs(30)).await;
        let m = producer.metrics();
        eprintln!(
            "restart: {before_restart} records acknowledged before the new broker started; {} requests, {} records retried",
            m.requests, m.records_retried
        );
        assert!(
            before_restart < COUNT,
            "nothing was left for the new broker"
        );
        assert_eq!(m.records_sent, COUNT, "{m:?}");
        assert_eq!(m.records_errored, 0, "{m:?}");
        new
    });
    let results = std::mem::take(&mut *results.lock().unwrap());
    let placed: Vec<(i32, i64)> = results
        .into_iter()
        .enumerate()
        .map(|(i, r)| match r {
            Some(Ok(p)) => p,
            Some(Err(e)) => panic!("record {i}: {e}"),
            None => panic!("record {i}: its callback never ran"),
        })
        .collect();
    check_placed(scheme, &placed, 0);
    match kcat() {
        Ok(kcat) => {
            let out = dir.path().join("restart.dump");
            kcat_dump(&kcat, &addr, topic, &out);
            let exp = Expected {
                topic,
                scheme,
                count: COUNT,
                placed: Some(&placed),
            };
            assert_eq!(assert_dump("kcat", &out, &exp), COUNT);
        }
        Err(why) => skip("the kcat read-back after the restart", &why),
    }
    drop(broker);
    eprintln!("restart test: {:.1} s", started.elapsed().as_secs_f64());
}

// ---------------------------------------------------------------------------------------------
// The checks themselves
// ---------------------------------------------------------------------------------------------

/// Partition, offset, key, value.
type Line<'a> = (i32, i64, Option<&'a [u8]>, &'a [u8]);

fn write_dump(path: &Path, records: &[Line<'_>]) {
    let mut out = Vec::new();
    for (p, o, k, v) in records {
        let klen = k.map_or(-1, |k| k.len() as i64);
        out.extend_from_slice(format!("{p} {o} {klen} {}:", v.len()).as_bytes());
        out.extend_from_slice(k.unwrap_or_default());
        out.extend_from_slice(v);
        out.push(b'\n');
    }
    std::fs::write(path, out).unwrap();
}

#[test]
fn the_dump_check_finds_gaps_repeats_and_misplaced_records() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.dump");
    let scheme = Scheme::Mixed { keys: 10 };
    let rec = |i: u64| (scheme.key(i), scheme.value(i));
    let (k0, v0) = rec(0);
    let (_, v1) = rec(1);
    let (k2, v2) = rec(2);
    let p0 = partition_for_key(k0.as_deref().unwrap(), PARTITIONS);
    let p2 = partition_for_key(k2.as_deref().unwrap(), PARTITIONS);
    let other = (p0 + 1) % PARTITIONS;
    // Offsets as the broker would give them: per partition in order from 0.
    let mut next: HashMap<i32, i64> = HashMap::new();
    let mut at = |p: i32| {
        let o = next.entry(p).or_default();
        *o += 1;
        (p, *o - 1)
    };
    let placed = [at(p0), at(other), at(p2)];
    let good = vec![
        (p0, placed[0].1, k0.as_deref(), &v0[..]),
        (other, placed[1].1, None, &v1[..]),
        (p2, placed[2].1, k2.as_deref(), &v2[..]),
    ];
    let exp = Expected {
        topic: "t",
        scheme,
        count: 3,
        placed: Some(&placed),
    };
    write_dump(&path, &good);
    assert_eq!(check_dump("test", &path, &exp), Ok(3));
    // A record missing, one twice, a wrong value, a wrong offset: each is reported.
    let bad: [Vec<Line<'_>>; 4] = [
        good[..2].to_vec(),
        vec![good[0], good[1], good[1], good[2]],
        vec![good[0], (other, 0, None, &v0[..]), good[2]],
        vec![
            (p0, placed[0].1 + 1, k0.as_deref(), &v0[..]),
            good[1],
            good[2],
        ],
    ];
    for records in bad {
        write_dump(&path, &records);
        let found = check_dump("test", &path, &exp);
        assert!(found.is_err(), "not caught: {records:?}");
    }
    // index_of reads both schemes.
    assert_eq!(index_of(&scheme.value(123)), Some(123));
    let example = Scheme::Example { size: 100, keys: 4 };
    assert_eq!(index_of(&example.value(77)), Some(77));
    assert_eq!(example.key(77).as_deref(), Some(&b"1"[..]));
    assert_eq!(example.value(5).len(), 100);
}
