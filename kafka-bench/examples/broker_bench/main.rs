//! Produce and consume throughput of our broker driven by librdkafka (the `rdkafka` crate),
//! end-to-end latency at a fixed rate, broker CPU time and peak RSS, and the sequential write
//! speed of the disk the broker writes to.
//!
//! The broker (`--broker PATH`, a release build of `kafka-broker`) runs as a child process on
//! 127.0.0.1 with a fresh data directory under the temp dir (or `--dir`). Each case creates
//! its own topic, produces records with a `BaseProducer` (linger.ms=5, compression none) for
//! at most `MAX_PHASE` and a fixed count, then reads them all back with a `BaseConsumer`
//! (assigned, from the beginning). Everything stays on loopback and is bounded in count and
//! time.
//!
//! With `--baseline PATH` a second broker binary (a build of an earlier commit, say) runs the
//! same cases in interleaved rounds with the one under test (`--rounds N`, default 3 then):
//! each round runs every case, and the latency, on a fresh broker of each binary in a fresh
//! data directory, alternating which binary goes first. The summary (`compare.rs`) gives per
//! case and binary the median produce and consume throughput over the rounds, the ratio
//! ours/baseline, and the broker's CPU time (user + system) per record written and read; per
//! binary the peak RSS and the latency. `--rounds N` without a baseline runs ours N times
//! with the same summary.
//!
//! With `--apache-kafka` the second broker is Apache Kafka itself (the jars
//! `kafka-peers/fetch` caches, one KRaft node with the JVM settings of Kafka's own
//! `kafka-server-start`: 1 GiB heap, G1), in the same interleaved rounds: the ratios are then
//! ours / Apache Kafka. Its CPU time and peak RSS are the JVM process's.
//!
//! With `--tls` the broker under test gets a second listener, `SSL` (a certificate made for
//! the run, a PEM keystore), and the same cases run over plaintext and over TLS in
//! interleaved rounds (default 3), each round on a fresh broker per mode, alternating which
//! mode goes first; librdkafka connects with `security.protocol=ssl` and the run's CA as
//! `ssl.ca.location`. The summary gives per case the medians of each mode and the ratios
//! TLS/plaintext of produce and consume records/s and of broker CPU per record, and says which
//! path the broker's TLS fetches take here (`TLS fetch: copied (no kTLS)` when the kernel
//! offers no kernel TLS: `tls` missing from `/proc/sys/net/ipv4/tcp_available_ulp`).
//!
//! Each run ends with Kafka's own `kafka-producer-perf-test` (the Java producer with its
//! defaults, 100 B records as fast as it goes) as a second load generator, when the jars
//! `kafka-peers/fetch` caches are there.
//!
//! ```text
//! cargo run --release -p kafka-bench --features rdkafka --example broker_bench -- \
//!     --broker target/release/kafka-broker [--baseline PATH | --apache-kafka | --tls] \
//!     [--rounds N] \
//!     [--quick] \
//!     [--json PATH] [--dir PATH]
//! ```

mod compare;

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use kafka_bench::harness::{start_apache_kafka, start_broker_with};
use kafka_bench::tls::{BrokerTls, Security, tls_fetch_path};
use kafka_bench::{cpu_time_of, peak_rss_kib_of};
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::{ClientContext, DefaultClientContext};
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::Message;
use rdkafka::producer::{BaseProducer, BaseRecord, DeliveryResult, Producer, ProducerContext};
use rdkafka::{Offset, TopicPartitionList};

type Error = Box<dyn std::error::Error + Send + Sync>;

/// Longest a produce or consume phase may run.
const MAX_PHASE: Duration = Duration::from_secs(10);
/// Size of the sequential disk write.
const DISK_BYTES: usize = 256 << 20;
/// Distinct keys of the keyed cases.
const KEYS: usize = 1024;

fn main() -> ExitCode {
    match bench(&std::env::args().skip(1).collect::<Vec<_>>()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

#[derive(Clone, Copy)]
struct Case {
    size: usize,
    acks_all: bool,
    keyed: bool,
    partitions: i32,
    records: u64,
}

impl Case {
    fn name(&self) -> String {
        format!(
            "{} acks={} {} {}p",
            if self.size >= 1024 {
                format!("{} KiB", self.size / 1024)
            } else {
                format!("{} B", self.size)
            },
            if self.acks_all { "all" } else { "1" },
            if self.keyed { "keyed" } else { "unkeyed" },
            self.partitions
        )
    }
}

fn cases(quick: bool) -> Vec<Case> {
    let records = |size: usize| match (quick, size) {
        (true, 100) => 200_000,
        (true, _) => 50_000,
        (false, 100) => 1_000_000,
        (false, _) => 250_000,
    };
    let mut out = Vec::new();
    for size in [100, 1024] {
        for acks_all in [false, true] {
            for keyed in [false, true] {
                for partitions in [1, 8] {
                    // The quick run: acks=1 unkeyed on one partition, acks=all keyed on eight.
                    if quick && (acks_all != keyed || (partitions == 8) != keyed) {
                        continue;
                    }
                    out.push(Case {
                        size,
                        acks_all,
                        keyed,
                        partitions,
                        records: records(size),
                    });
                }
            }
        }
    }
    out
}

struct Phase {
    records: u64,
    bytes: u64,
    elapsed: Duration,
    broker_cpu: Duration,
    errors: u64,
    /// Consume only: from creating the consumer to its first record (not in `elapsed`).
    first_record: Duration,
}

impl Phase {
    fn per_sec(&self) -> f64 {
        self.records as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
    fn mb_per_sec(&self) -> f64 {
        self.bytes as f64 / 1e6 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

struct Row {
    case: Case,
    produce: Phase,
    consume: Phase,
}

struct Latency {
    rate: u64,
    sent: u64,
    received: u64,
    p50_ms: f64,
    p99_ms: f64,
    p999_ms: f64,
    max_ms: f64,
}

/// Removes the benchmark's directory on drop.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A broker a run measures.
struct Binary {
    /// "ours", "baseline" or "kafka".
    name: &'static str,
    /// The binary, or for Apache Kafka the folder of its jars.
    path: PathBuf,
    /// Whether this is Apache Kafka (its jars were found when the run began).
    apache_kafka: bool,
    /// `--tls`: the broker also gets an `SSL` listener with these files, and every client of
    /// the run connects to that one.
    tls: Option<BrokerTls>,
}

/// Where the clients of a run connect: a listener's address and its security.
#[derive(Clone)]
struct Endpoint {
    addr: String,
    security: Security,
}

impl Endpoint {
    /// A librdkafka configuration bootstrapping from this listener.
    fn config(&self) -> ClientConfig {
        let mut cfg = ClientConfig::new();
        cfg.set("bootstrap.servers", &self.addr);
        for (k, v) in self.security.rdkafka_settings() {
            cfg.set(k, v);
        }
        cfg
    }
}

/// One run of every case, and the latency, on a fresh broker.
struct Run {
    rows: Vec<Row>,
    latency: Latency,
    /// Kafka's own `kafka-producer-perf-test` (the Java producer) against the broker: records/s
    /// and its average latency in ms; `None` without the Java peer.
    perf_test: Option<(f64, f64)>,
    /// The broker's CPU time over the whole run.
    broker_cpu: Option<Duration>,
    broker_rss: Option<u64>,
}

fn bench(args: &[String]) -> Result<(), Error> {
    let mut quick = false;
    let mut json_path = None;
    let mut broker_path = None;
    let mut baseline = None;
    let mut rounds = None;
    let mut dir = None;
    let mut apache_kafka = false;
    let mut tls = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--quick" => quick = true,
            "--json" => json_path = Some(it.next().ok_or("--json needs a path")?.clone()),
            "--broker" => {
                broker_path = Some(PathBuf::from(it.next().ok_or("--broker needs a path")?))
            }
            "--baseline" => {
                baseline = Some(PathBuf::from(it.next().ok_or("--baseline needs a path")?))
            }
            "--rounds" => {
                let n: usize = it.next().ok_or("--rounds needs a number")?.parse()?;
                if !(1..=9).contains(&n) {
                    return Err("--rounds: 1 to 9".into());
                }
                rounds = Some(n);
            }
            "--dir" => dir = Some(PathBuf::from(it.next().ok_or("--dir needs a path")?)),
            "--apache-kafka" => apache_kafka = true,
            "--tls" => tls = true,
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    let broker_path = broker_path.ok_or("say where the broker binary is: --broker PATH")?;
    if apache_kafka && baseline.is_some() {
        return Err("--baseline and --apache-kafka: one second broker at a time".into());
    }
    if tls && (apache_kafka || baseline.is_some()) {
        return Err(
            "--tls compares our broker over TLS with itself over plaintext: \
                    not with --baseline or --apache-kafka"
                .into(),
        );
    }
    let rounds = rounds.unwrap_or_else(|| {
        if baseline.is_some() || apache_kafka || tls {
            3
        } else {
            1
        }
    });
    let base = dir.unwrap_or_else(std::env::temp_dir);
    let tmp = TempDir(base.join(format!("kafka-broker-bench-{}", std::process::id())));
    std::fs::create_dir_all(&tmp.0)?;

    println!("broker bench: working in {}", tmp.0.display());
    print!("  disk: writing {} MiB with fsync ... ", DISK_BYTES >> 20);
    std::io::stdout().flush()?;
    let disk_mb_s = disk_write(&tmp.0)?;
    println!("{disk_mb_s:.0} MB/s");

    let cases = cases(quick);
    let ours = Binary {
        name: "ours",
        path: broker_path,
        apache_kafka: false,
        tls: None,
    };
    if baseline.is_none() && !apache_kafka && !tls && rounds == 1 {
        let run = run_once(&ours, &tmp.0, &cases, quick)?;
        print_table(
            &run.rows,
            disk_mb_s,
            &run.latency,
            run.broker_cpu,
            run.broker_rss,
        );
        let json = to_json(
            &run.rows,
            disk_mb_s,
            &run.latency,
            run.broker_cpu,
            run.broker_rss,
            quick,
        );
        return emit(&json, json_path.as_deref());
    }

    let tls_fetch = tls.then(tls_fetch_path);
    let mut binaries = Vec::new();
    if tls {
        // The TLS mode first: the ratios are TLS / plaintext.
        let files = BrokerTls::new(&tmp.0)?;
        println!(
            "  TLS: broker certificate for localhost and 127.0.0.1 signed by {}",
            files.ca_file.display()
        );
        binaries.push(Binary {
            name: "tls",
            path: ours.path.clone(),
            apache_kafka: false,
            tls: Some(files),
        });
        binaries.push(Binary {
            name: "plain",
            ..ours
        });
    } else {
        binaries.push(ours);
    }
    if let Some(path) = baseline {
        binaries.push(Binary {
            name: "baseline",
            path,
            apache_kafka: false,
            tls: None,
        });
    }
    if apache_kafka {
        // Fail now, not in the first round, when the jars are missing.
        kafka_peers::Jvm::find().map_err(|e| format!("--apache-kafka: {e}"))?;
        binaries.push(Binary {
            name: "kafka",
            path: kafka_peers::java::libs_dir(),
            apache_kafka: true,
            tls: None,
        });
    }
    // runs[b][round]: binary b's run in that round.
    let mut runs: Vec<Vec<Run>> = binaries.iter().map(|_| Vec::new()).collect();
    for round in 0..rounds {
        // Alternate which binary goes first, so neither always meets a warmer machine.
        for k in 0..binaries.len() {
            let b = (k + round) % binaries.len();
            let bin = &binaries[b];
            println!(
                "  round {}/{rounds}: {} ({})",
                round + 1,
                bin.name,
                bin.path.display()
            );
            let dir = tmp.0.join(format!("round-{}-{}", round + 1, bin.name));
            std::fs::create_dir_all(&dir)?;
            let run = run_once(bin, &dir, &cases, quick);
            let _ = std::fs::remove_dir_all(&dir);
            runs[b].push(run?);
        }
    }
    compare::print_summary(&cases, &binaries, &runs, disk_mb_s);
    if let Some(path) = tls_fetch {
        println!("TLS fetch: {path}");
    }
    let json = compare::to_json(&cases, &binaries, &runs, disk_mb_s, quick, tls_fetch);
    emit(&json, json_path.as_deref())
}

/// Prints the JSON and writes it to `path`, if given.
fn emit(json: &str, path: Option<&str>) -> Result<(), Error> {
    println!("\n{json}");
    if let Some(p) = path {
        std::fs::write(p, format!("{json}\n"))?;
        println!("JSON written to {p}");
    }
    Ok(())
}

/// Starts the broker `bin` with its data and log in `dir`, runs every case and the latency
/// against it, and stops it.
fn run_once(bin: &Binary, dir: &Path, cases: &[Case], quick: bool) -> Result<Run, Error> {
    let broker = if bin.apache_kafka {
        start_apache_kafka(dir)?
    } else {
        start_broker_with(&bin.path, dir, bin.tls.as_ref())?
    };
    let ep = match (&bin.tls, &broker.tls_addr) {
        (Some(files), Some(addr)) => Endpoint {
            addr: addr.clone(),
            security: files.security(),
        },
        _ => Endpoint {
            addr: broker.addr.clone(),
            security: Security::Plaintext,
        },
    };
    println!(
        "  broker pid {} on {} (clients: {} on {})",
        broker.pid,
        broker.addr,
        ep.security.name(),
        ep.addr
    );
    let cpu_start = cpu_time_of(&broker.pid);

    let mut rows = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let topic = format!("bench-{i}");
        print!(
            "  [{}/{}] {}: creating topic ... ",
            i + 1,
            cases.len(),
            case.name()
        );
        std::io::stdout().flush()?;
        create_topic(&ep, &topic, case.partitions)?;
        print!("producing {} ... ", case.records);
        std::io::stdout().flush()?;
        let produce = produce(&ep, &broker.pid, &topic, case)?;
        print!(
            "{:.0} rec/s {:.1} MB/s; consuming ... ",
            produce.per_sec(),
            produce.mb_per_sec()
        );
        std::io::stdout().flush()?;
        let consume = consume(&ep, &broker.pid, &topic, case.partitions, produce.records)?;
        println!(
            "{:.0} rec/s {:.1} MB/s",
            consume.per_sec(),
            consume.mb_per_sec()
        );
        rows.push(Row {
            case: *case,
            produce,
            consume,
        });
    }

    let (rate, seconds) = (2_000, if quick { 2 } else { 3 });
    print!("  latency: 100 B, acks=all, 1 partition, {rate} msgs/s for {seconds} s ... ");
    std::io::stdout().flush()?;
    create_topic(&ep, "bench-latency", 1)?;
    let latency = latency(&ep, "bench-latency", rate, seconds)?;
    println!(
        "p50 {:.2} ms, p99 {:.2} ms, p99.9 {:.2} ms",
        latency.p50_ms, latency.p99_ms, latency.p999_ms
    );

    let perf_test = match kafka_peers::Jvm::find() {
        Ok(jvm) => {
            let records = if quick { 200_000 } else { 1_000_000 };
            print!("  kafka-producer-perf-test: {records} records of 100 B, 4 partitions ... ");
            std::io::stdout().flush()?;
            create_topic(&ep, "bench-perf-test", 4)?;
            let got = perf_test(&jvm, &ep, "bench-perf-test", records)?;
            println!("{:.0} rec/s, average latency {:.1} ms", got.0, got.1);
            Some(got)
        }
        Err(e) => {
            println!("  kafka-producer-perf-test skipped: {e}");
            None
        }
    };

    let broker_cpu = cpu_time_of(&broker.pid)
        .zip(cpu_start)
        .map(|(b, a)| b.saturating_sub(a));
    let broker_rss = peak_rss_kib_of(&broker.pid);
    drop(broker);
    Ok(Run {
        rows,
        latency,
        perf_test,
        broker_cpu,
        broker_rss,
    })
}

/// Writes `DISK_BYTES` sequentially in 1 MiB chunks, fsyncs, and returns MB/s (10^6 bytes)
/// over the whole, fsync included.
fn disk_write(dir: &Path) -> Result<f64, Error> {
    let path = dir.join("dd.bin");
    let chunk = kafka_bench::records(1 << 20);
    let started = Instant::now();
    let mut f = File::create(&path)?;
    for _ in 0..DISK_BYTES / chunk.len() {
        f.write_all(&chunk)?;
    }
    f.sync_all()?;
    let elapsed = started.elapsed();
    drop(f);
    std::fs::remove_file(&path)?;
    Ok(DISK_BYTES as f64 / 1e6 / elapsed.as_secs_f64())
}

/// Runs Kafka's `kafka-producer-perf-test` (ProducerPerformance, the Java producer with its
/// defaults: acks=all, idempotent) as fast as it goes and returns its records/s and average
/// latency in ms from its closing line ("N records sent, R records/sec (M MB/sec), L ms avg
/// latency, ...").
fn perf_test(
    jvm: &kafka_peers::Jvm,
    ep: &Endpoint,
    topic: &str,
    records: u64,
) -> Result<(f64, f64), Error> {
    let records = records.to_string();
    let bootstrap = format!("bootstrap.servers={}", ep.addr);
    // A full JVM (the optimizing compiler, the default collector), not the tests' quick one:
    // the client must not be what limits the rate.
    let mut cmd = jvm.command_bare(
        &["-Xmx1G", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn"],
        "org.apache.kafka.tools.ProducerPerformance",
    );
    cmd.args([
        "--topic",
        topic,
        "--num-records",
        &records,
        "--record-size",
        "100",
        "--throughput",
        "-1",
        "--producer-props",
        &bootstrap,
    ]);
    // Over TLS: the run's CA as a PEM truststore (more key=value pairs of --producer-props).
    cmd.args(ep.security.java_settings());
    let out = kafka_peers::run(cmd, None, Duration::from_secs(300))?;
    if !out.success() {
        return Err(format!("kafka-producer-perf-test failed: {}", out.describe()).into());
    }
    let last = out
        .stdout
        .lines()
        .rev()
        .find(|l| l.contains("records sent,"))
        .ok_or("kafka-producer-perf-test printed no summary")?;
    let number_before = |unit: &str| -> Option<f64> {
        let end = last.find(unit)?;
        last[..end]
            .trim_end()
            .rsplit([' ', '('])
            .next()?
            .parse()
            .ok()
    };
    match (
        number_before("records/sec"),
        number_before("ms avg latency"),
    ) {
        (Some(rate), Some(latency)) => Ok((rate, latency)),
        _ => Err(format!("cannot read kafka-producer-perf-test's summary: {last}").into()),
    }
}

fn create_topic(ep: &Endpoint, topic: &str, partitions: i32) -> Result<(), Error> {
    let admin: AdminClient<DefaultClientContext> = ep.config().create()?;
    let new = NewTopic::new(topic, partitions, TopicReplication::Fixed(1));
    let opts = AdminOptions::new().operation_timeout(Some(Duration::from_secs(10)));
    let results = futures::executor::block_on(admin.create_topics([&new], &opts))?;
    for r in results {
        if let Err((t, e)) = r {
            return Err(format!("creating topic {t}: {e}").into());
        }
    }
    Ok(())
}

/// Counts delivery reports.
#[derive(Default)]
struct Deliveries {
    ok: AtomicU64,
    failed: AtomicU64,
}

impl ClientContext for Deliveries {}

impl ProducerContext for Deliveries {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        match result {
            Ok(_) => self.ok.fetch_add(1, Ordering::Relaxed),
            Err(_) => self.failed.fetch_add(1, Ordering::Relaxed),
        };
    }
}

fn producer(ep: &Endpoint, acks: &str, linger_ms: &str) -> Result<BaseProducer<Deliveries>, Error> {
    Ok(ep
        .config()
        .set("acks", acks)
        .set("linger.ms", linger_ms)
        .set("compression.type", "none")
        .create_with_context(Deliveries::default())?)
}

/// Sends `record`, polling for delivery reports while librdkafka's queue is full.
fn send(
    producer: &BaseProducer<Deliveries>,
    mut record: BaseRecord<'_, [u8], [u8]>,
) -> Result<(), Error> {
    loop {
        match producer.send(record) {
            Ok(()) => return Ok(()),
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), r)) => {
                record = r;
                producer.poll(Duration::from_millis(1));
            }
            Err((e, _)) => return Err(e.into()),
        }
    }
}

fn produce(ep: &Endpoint, broker_pid: &str, topic: &str, case: &Case) -> Result<Phase, Error> {
    let producer = producer(ep, if case.acks_all { "all" } else { "1" }, "5")?;
    // Connect and learn the topic's leaders before the clock starts.
    producer
        .client()
        .fetch_metadata(Some(topic), Duration::from_secs(10))?;
    let payload = kafka_bench::records(case.size);
    let keys: Vec<String> = (0..KEYS).map(|k| format!("key-{k:06}")).collect();

    let cpu0 = cpu_time_of(broker_pid);
    let started = Instant::now();
    let mut sent = 0u64;
    while sent < case.records {
        if sent % 1024 == 0 {
            if started.elapsed() > MAX_PHASE {
                break;
            }
            producer.poll(Duration::ZERO);
        }
        let mut record = BaseRecord::to(topic).payload(&payload[..]);
        if case.keyed {
            record = record.key(keys[sent as usize % KEYS].as_bytes());
        }
        send(&producer, record)?;
        sent += 1;
    }
    producer.flush(Duration::from_secs(30))?;
    let elapsed = started.elapsed();
    let broker_cpu = cpu_time_of(broker_pid)
        .zip(cpu0)
        .map(|(b, a)| b.saturating_sub(a));
    let ctx = producer.context();
    let ok = ctx.ok.load(Ordering::Relaxed);
    Ok(Phase {
        records: ok,
        bytes: ok * case.size as u64,
        elapsed,
        broker_cpu: broker_cpu.unwrap_or_default(),
        errors: sent
            .saturating_sub(ok)
            .max(ctx.failed.load(Ordering::Relaxed)),
        first_record: Duration::ZERO,
    })
}

/// librdkafka's consumer for the consume phases and the latency, fetching as soon as the
/// application frees space: with its defaults (`fetch.queue.backoff.ms` 1000 once 100,000
/// records are queued) the rate of 100 B records measured librdkafka's back-off, about 413k or
/// 684k records/s per round whatever the broker did, not the broker.
fn consumer(
    ep: &Endpoint,
    topic: &str,
    partitions: i32,
    from: Offset,
) -> Result<BaseConsumer, Error> {
    let consumer: BaseConsumer = ep
        .config()
        .set("group.id", "broker-bench")
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("fetch.queue.backoff.ms", "10")
        .set("queued.max.messages.kbytes", "65536")
        .create()?;
    let mut tpl = TopicPartitionList::new();
    for p in 0..partitions {
        tpl.add_partition_offset(topic, p, from)?;
    }
    consumer.assign(&tpl)?;
    Ok(consumer)
}

fn consume(
    ep: &Endpoint,
    broker_pid: &str,
    topic: &str,
    partitions: i32,
    expect: u64,
) -> Result<Phase, Error> {
    let consumer = consumer(ep, topic, partitions, Offset::Beginning)?;
    let cpu0 = cpu_time_of(broker_pid);
    let created = Instant::now();
    // The clock starts at the first record, after connecting, the group coordinator lookup
    // and the first fetch (reported apart as `first_record`).
    let mut started = None;
    let (mut records, mut bytes, mut errors) = (0u64, 0u64, 0u64);
    while records < expect && started.unwrap_or(created).elapsed() < MAX_PHASE {
        match consumer.poll(Duration::from_millis(100)) {
            Some(Ok(m)) => {
                started.get_or_insert_with(Instant::now);
                records += 1;
                bytes += m.payload_len() as u64;
            }
            Some(Err(_)) => errors += 1,
            None => {}
        }
    }
    let started = started.unwrap_or(created);
    let first_record = started - created;
    let elapsed = started.elapsed();
    let broker_cpu = cpu_time_of(broker_pid)
        .zip(cpu0)
        .map(|(b, a)| b.saturating_sub(a));
    Ok(Phase {
        records,
        bytes,
        elapsed,
        broker_cpu: broker_cpu.unwrap_or_default(),
        errors: errors + expect.saturating_sub(records),
        first_record,
    })
}

/// Sends 100-byte records at `rate` per second for `seconds` (acks=all, linger.ms=0), each
/// carrying its send time; a consumer thread notes when each arrives.
fn latency(ep: &Endpoint, topic: &str, rate: u64, seconds: u64) -> Result<Latency, Error> {
    let total = rate * seconds;
    let epoch = Instant::now();
    let (ready_tx, ready_rx) = mpsc::channel();
    let reader = {
        let ep = ep.clone();
        let topic = topic.to_owned();
        std::thread::spawn(move || -> Result<Vec<u64>, Error> {
            let consumer = consumer(&ep, &topic, 1, Offset::Beginning)?;
            // Let it connect and start fetching before the first record goes out.
            let warm = Instant::now();
            while warm.elapsed() < Duration::from_secs(1) {
                let _ = consumer.poll(Duration::from_millis(50));
            }
            let _ = ready_tx.send(());
            let mut lat = Vec::with_capacity(total as usize);
            let deadline = Instant::now() + Duration::from_secs(seconds + 10);
            while (lat.len() as u64) < total && Instant::now() < deadline {
                if let Some(Ok(m)) = consumer.poll(Duration::from_millis(100)) {
                    let now = epoch.elapsed().as_nanos() as u64;
                    if let Some(sent) = m
                        .payload()
                        .and_then(|p| p.get(..8))
                        .and_then(|b| <[u8; 8]>::try_from(b).ok())
                    {
                        lat.push(now.saturating_sub(u64::from_le_bytes(sent)));
                    }
                }
            }
            Ok(lat)
        })
    };
    let producer = producer(ep, "all", "0")?;
    producer
        .client()
        .fetch_metadata(Some(topic), Duration::from_secs(10))?;
    let _ = ready_rx.recv_timeout(Duration::from_secs(15));

    let mut payload = kafka_bench::records(100).to_vec();
    let started = Instant::now();
    for i in 0..total {
        let due = started + Duration::from_nanos(i * 1_000_000_000 / rate);
        loop {
            let now = Instant::now();
            if now >= due {
                break;
            }
            producer.poll((due - now).min(Duration::from_millis(1)));
        }
        let t = epoch.elapsed().as_nanos() as u64;
        payload[..8].copy_from_slice(&t.to_le_bytes());
        send(&producer, BaseRecord::to(topic).payload(&payload[..]))?;
        producer.poll(Duration::ZERO);
    }
    producer.flush(Duration::from_secs(30))?;
    let mut lat = reader.join().map_err(|_| "latency reader panicked")??;
    lat.sort_unstable();
    let pct = |p: f64| {
        let i = ((lat.len() as f64 - 1.0) * p).round() as usize;
        lat.get(i).map_or(f64::NAN, |ns| *ns as f64 / 1e6)
    };
    Ok(Latency {
        rate,
        sent: total,
        received: lat.len() as u64,
        p50_ms: pct(0.5),
        p99_ms: pct(0.99),
        p999_ms: pct(0.999),
        max_ms: pct(1.0),
    })
}

fn kib(k: Option<u64>) -> String {
    k.map_or_else(|| "?".into(), |k| format!("{:.1} MiB", k as f64 / 1024.0))
}

fn print_table(
    rows: &[Row],
    disk_mb_s: f64,
    latency: &Latency,
    broker_cpu: Option<Duration>,
    broker_rss: Option<u64>,
) {
    println!(
        "\n| {:<26} | {:>8} | {:>12} | {:>11} | {:>12} | {:>11} | {:>13} | {:>9} |",
        "case",
        "records",
        "produce rec/s",
        "produce MB/s",
        "consume rec/s",
        "consume MB/s",
        "broker CPU/rec",
        "prod/disk"
    );
    println!(
        "|{:-<28}|{:-<10}|{:-<15}|{:-<14}|{:-<15}|{:-<14}|{:-<16}|{:-<11}|",
        "", "", "", "", "", "", "", ""
    );
    for r in rows {
        let cpu = (r.produce.broker_cpu + r.consume.broker_cpu).as_secs_f64() * 1e6
            / r.produce.records.max(1) as f64;
        let errs = r.produce.errors + r.consume.errors;
        println!(
            "| {:<26} | {:>8} | {:>13.0} | {:>12.1} | {:>13.0} | {:>12.1} | {:>11.2} µs | {:>9.2} |{}",
            r.case.name(),
            r.produce.records,
            r.produce.per_sec(),
            r.produce.mb_per_sec(),
            r.consume.per_sec(),
            r.consume.mb_per_sec(),
            cpu,
            r.produce.mb_per_sec() / disk_mb_s,
            if errs > 0 {
                format!(" {errs} errors/missing")
            } else {
                String::new()
            }
        );
    }
    println!("\ndisk sequential write (256 MiB + fsync): {disk_mb_s:.0} MB/s");
    println!(
        "end-to-end latency (100 B, acks=all, linger.ms=0, {} msgs/s, {}/{} received): \
         p50 {:.2} ms, p99 {:.2} ms, p99.9 {:.2} ms, max {:.2} ms",
        latency.rate,
        latency.received,
        latency.sent,
        latency.p50_ms,
        latency.p99_ms,
        latency.p999_ms,
        latency.max_ms
    );
    println!(
        "broker: CPU {} for the whole run, peak RSS {}",
        broker_cpu.map_or_else(|| "?".into(), |d| format!("{:.2} s", d.as_secs_f64())),
        kib(broker_rss)
    );
}

fn to_json(
    rows: &[Row],
    disk_mb_s: f64,
    latency: &Latency,
    broker_cpu: Option<Duration>,
    broker_rss: Option<u64>,
    quick: bool,
) -> String {
    let phase = |p: &Phase| {
        format!(
            "{{\"records\": {}, \"bytes\": {}, \"seconds\": {:.3}, \"records_per_sec\": {:.0}, \
             \"mb_per_sec\": {:.2}, \"broker_cpu_s\": {:.2}, \"errors\": {}, \
             \"first_record_ms\": {:.1}}}",
            p.records,
            p.bytes,
            p.elapsed.as_secs_f64(),
            p.per_sec(),
            p.mb_per_sec(),
            p.broker_cpu.as_secs_f64(),
            p.errors,
            p.first_record.as_secs_f64() * 1e3
        )
    };
    let cases: Vec<String> = rows
        .iter()
        .map(|r| {
            format!(
                "    {{\"case\": \"{}\", \"record_bytes\": {}, \"acks\": \"{}\", \"keyed\": {}, \
                 \"partitions\": {},\n     \"produce\": {},\n     \"consume\": {},\n     \
                 \"produce_to_disk_ratio\": {:.3}}}",
                r.case.name(),
                r.case.size,
                if r.case.acks_all { "all" } else { "1" },
                r.case.keyed,
                r.case.partitions,
                phase(&r.produce),
                phase(&r.consume),
                r.produce.mb_per_sec() / disk_mb_s
            )
        })
        .collect();
    let num = |x: f64| {
        if x.is_finite() {
            format!("{x:.3}")
        } else {
            "null".into()
        }
    };
    let best = rows
        .iter()
        .map(|r| r.produce.mb_per_sec())
        .fold(0.0, f64::max);
    format!(
        "{{\n  \"bench\": \"broker\",\n  \"client\": \"librdkafka {}\",\n  \"quick\": {quick},\n  \
         \"producer\": \"BaseProducer, linger.ms=5, compression none\",\n  \
         \"disk_write_mb_per_sec\": {disk_mb_s:.1},\n  \"best_produce_to_disk_ratio\": {:.3},\n  \
         \"broker_cpu_s\": {},\n  \"broker_peak_rss_kib\": {},\n  \
         \"latency\": {{\"record_bytes\": 100, \"acks\": \"all\", \"linger_ms\": 0, \
         \"rate_per_sec\": {}, \"sent\": {}, \"received\": {}, \"p50_ms\": {}, \"p99_ms\": {}, \
         \"p999_ms\": {}, \"max_ms\": {}}},\n  \"cases\": [\n{}\n  ]\n}}",
        rdkafka::util::get_rdkafka_version().1,
        best / disk_mb_s,
        broker_cpu.map_or_else(|| "null".into(), |d| format!("{:.2}", d.as_secs_f64())),
        broker_rss.map_or_else(|| "null".into(), |k| k.to_string()),
        latency.rate,
        latency.sent,
        latency.received,
        num(latency.p50_ms),
        num(latency.p99_ms),
        num(latency.p999_ms),
        num(latency.max_ms),
        cases.join(",\n")
    )
}
