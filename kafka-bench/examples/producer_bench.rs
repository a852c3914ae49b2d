//! Our producer (`kafka-producer`) against librdkafka (the `rdkafka` crate) on the same broker,
//! with the same settings, in one run: records/s, MB/s, client CPU per million records, peak
//! RSS and send-to-ack latency per case and client, and their ratio.
//!
//! The broker (`--broker PATH`, a release build of `kafka-broker`) runs as a child process on
//! 127.0.0.1 with a fresh data directory under `/dev/shm` when there is one, else the temp dir
//! (or `--dir`): the clients are measured here, not the disk. Every phase (one client, one
//! case, one round) runs in a child process of its own (this binary with `--phase ...`), so
//! its CPU time (`/proc/self/stat`, all threads, over the timed part only) and peak RSS
//! (`VmHWM`) are that client's alone. A phase creates nothing itself: the parent creates a
//! fresh topic with the case's partition count before it and deletes it after it. The phase
//! connects, learns the topic's metadata and waits for the acknowledgement of one warm-up
//! record; then the clock starts and it sends a fixed number of records (for at most
//! `MAX_PHASE`) the way a fast application would: ours with `send_with_opaque(...).await` in
//! a loop on a multi-threaded tokio runtime (it waits only when `buffer.memory` is full) and
//! a producer-wide delivery handler, librdkafka with `ThreadedProducer::send` and a delivery
//! callback in its context (served by the crate's polling thread), sleeping 0.5 ms when its
//! queue is full; on both the per-record opaque is the send time, so no report allocates. The clock stops when every record
//! is acknowledged. Latency runs from just before the send call to the delivery callback, for
//! every record, kept in a fixed-size log-linear histogram (1/64 relative precision). The last
//! case is paced (10,000 records/s) to show latency below saturation.
//!
//! The transactional cases (`txns of N`: 100 and 10,000 records of 100 bytes per transaction,
//! one topic of 8 partitions, acks=all, idempotent) give each phase its own `transactional.id`
//! (the topic's name and `-txn`); the phase calls `init_transactions` and commits one warm-up
//! transaction of one record before the clock starts, then runs a fixed number of
//! transactions (beginning no new one after `MAX_PHASE`): begin, N records placed round-robin
//! over the partitions by index (so every transaction spans all 8 on both clients; the
//! record's partition is given, no partitioner runs), commit. Ours awaits
//! `commit_transaction` (which flushes and then sends EndTxn); librdkafka waits, as in
//! `rd_flush`, until every record of the transaction is acknowledged, then calls
//! `commit_transaction`. Called directly, the crate's `commit_transaction` first runs the
//! crate's `flush`, which polls in steps of up to 100 ms beside the producer's polling thread:
//! about 10 commits/s whatever the transaction's size. Waiting first has its own cost:
//! librdkafka bypasses `linger.ms` only while a flush call is running (its C
//! `rd_kafka_commit_transaction` flushes with the whole timeout), so here the last batches of
//! every transaction wait out `linger.ms` (5 ms) first, while ours (as the Java client's
//! `commitTransaction`) sends them at once; with 100-record transactions that bounds
//! librdkafka near 1000/5 ms = 200 commits/s less round trips. Nothing better is reachable
//! without unsafe code; `PRODUCER_BENCH_RDKAFKA_SET=linger.ms=0` shows the difference. The
//! clock stops after the last commit; commits/s counts the committed transactions.
//!
//! Settings, both clients: `acks` as the case says, `linger.ms=5`, `batch.size=16384`,
//! `compression.type=none`, `max.in.flight.requests.per.connection=5`, `enable.idempotence`
//! true with acks=all and false with acks=1 (librdkafka's idempotence needs acks=all), keyed
//! records placed by murmur2 (librdkafka `partitioner=murmur2_random`, the Java client's
//! choice and ours), 32 MiB of queued records at most (ours `buffer.memory=33554432`,
//! librdkafka `queue.buffering.max.kbytes=32768` with `queue.buffering.max.messages=1000000`
//! so that the byte bound is the one that binds). Everything else is each client's default
//! (librdkafka sticks unkeyed records to a partition for `sticky.partitioning.linger.ms`, 10
//! ms here, ours for `batch.size` bytes). librdkafka also gets `statistics.interval.ms=500`,
//! to count its Produce requests.
//!
//! With `--rounds N` every case runs N times, the two clients alternating who goes first, and
//! each client's best round is reported (other work on a shared machine only slows a phase
//! down); each phase also reports how many cores everything else kept busy meanwhile.
//!
//! ```text
//! cargo run --release -p kafka-bench --features rdkafka --example producer_bench -- \
//!     --broker target/release/kafka-broker [--quick|--full] [--rounds N] [--json] \
//!     [--out PATH] [--dir PATH] [--only TEXT]
//! ```
//!
//! `--only TEXT` runs only the cases whose name contains TEXT (e.g. `txns`).
//!
//! With `--json` the last line printed is the whole result as one JSON object; `--out` writes
//! the same object to a file. For experiments: `PRODUCER_BENCH_RUNTIME=current` runs our
//! producer on a current-thread runtime instead, `PRODUCER_BENCH_RDKAFKA_SET=key=value,...`
//! sets more (or other) settings on librdkafka.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_bench::harness::{
    Error, TempDir, cpu_since, extra_settings, num, run_self, start_broker, topics,
};
use kafka_bench::{cpu_time_of, peak_rss_kib_of};
use kafka_producer::{
    DeliveryHandler, Producer, ProducerConfig, ProducerError, ProducerRecord, RecordMetadata,
};
use rdkafka::client::ClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{
    BaseRecord, DeliveryResult, Producer as _, ProducerContext, ThreadedProducer,
};
use rdkafka::statistics::Statistics;

/// Longest the sending part of a throughput phase may run (`--quick`: half).
const MAX_PHASE: Duration = Duration::from_secs(10);
/// Longest a phase may wait for its last acknowledgements.
const FLUSH_TIMEOUT: Duration = Duration::from_secs(60);
/// A phase child still running after this is killed.
const CHILD_DEADLINE: Duration = Duration::from_secs(150);
/// librdkafka's `statistics.interval.ms` (to count its Produce requests).
const STATS_INTERVAL: Duration = Duration::from_millis(500);
/// Distinct keys of the keyed cases.
const KEYS: usize = 1024;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.split_first() {
        Some((first, rest)) if first == "--phase" => phase_main(rest),
        _ => bench(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

// ----- cases -----

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Client {
    Ours,
    Librdkafka,
}

impl Client {
    fn name(self) -> &'static str {
        match self {
            Self::Ours => "ours",
            Self::Librdkafka => "librdkafka",
        }
    }

    fn parse(s: &str) -> Result<Self, Error> {
        match s {
            "ours" => Ok(Self::Ours),
            "librdkafka" => Ok(Self::Librdkafka),
            other => Err(format!("unknown client {other}").into()),
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Case {
    size: usize,
    acks_all: bool,
    keyed: bool,
    partitions: i32,
    records: u64,
    /// Records per second for a paced (latency) case; `None`: as fast as possible.
    rate: Option<u64>,
    /// Records per transaction for a transactional case (`transactional.id` set, each
    /// record's partition given round-robin); 0: no transactions.
    txn: u64,
}

impl Case {
    fn name(&self) -> String {
        let size = if self.size >= 1024 {
            format!("{} KiB", self.size / 1024)
        } else {
            format!("{} B", self.size)
        };
        let placement = if self.txn > 0 {
            format!("txns of {}", self.txn)
        } else if self.keyed {
            "keyed".into()
        } else {
            "unkeyed".into()
        };
        let mut s = format!(
            "{size} acks={} {placement} {}p",
            if self.acks_all { "all" } else { "1" },
            self.partitions
        );
        if let Some(r) = self.rate {
            s.push_str(&format!(" @{r}/s"));
        }
        s
    }

    fn is_headline(&self) -> bool {
        self.size == 100
            && !self.acks_all
            && !self.keyed
            && self.partitions == 8
            && self.rate.is_none()
            && self.txn == 0
    }

    /// Transactions of a transactional case (0 otherwise).
    fn transactions(&self) -> u64 {
        self.records.checked_div(self.txn).unwrap_or(0)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Quick,
    Default,
    Full,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Self::Quick => "quick",
            Self::Default => "default",
            Self::Full => "full",
        }
    }
}

fn cases(mode: Mode) -> Vec<Case> {
    let records = |size: usize| match (mode, size) {
        (Mode::Quick, 100) => 1_000_000,
        (Mode::Quick, _) => 300_000,
        (_, 100) => 3_000_000,
        (_, _) => 1_000_000,
    };
    let case = |size, acks_all, keyed, partitions| Case {
        size,
        acks_all,
        keyed,
        partitions,
        records: records(size),
        rate: None,
        txn: 0,
    };
    let mut out = match mode {
        // The headline case, and one with every dimension changed.
        Mode::Quick => vec![case(100, false, false, 8), case(1024, true, true, 1)],
        // The headline case, then each dimension varied once.
        Mode::Default => vec![
            case(100, false, false, 8),
            case(1024, false, false, 8),
            case(100, true, false, 8),
            case(100, false, false, 1),
            case(100, false, true, 8),
        ],
        Mode::Full => {
            let mut v = Vec::new();
            for size in [100, 1024] {
                for acks_all in [false, true] {
                    for keyed in [false, true] {
                        for partitions in [1, 8] {
                            v.push(case(size, acks_all, keyed, partitions));
                        }
                    }
                }
            }
            v
        }
    };
    // Transactions of 100 and of 10,000 records (a fixed count, bounded by MAX_PHASE too).
    for (txn, transactions) in [(100, 1000), (10_000, 60)] {
        let transactions = if mode == Mode::Quick {
            transactions / 5
        } else {
            transactions
        };
        out.push(Case {
            size: 100,
            acks_all: true,
            keyed: false,
            partitions: 8,
            records: txn * transactions,
            rate: None,
            txn,
        });
    }
    // Latency below saturation: a paced case.
    let (rate, seconds) = if mode == Mode::Quick {
        (10_000, 2)
    } else {
        (10_000, 3)
    };
    out.push(Case {
        size: 100,
        acks_all: true,
        keyed: false,
        partitions: 8,
        records: rate * seconds,
        rate: Some(rate),
        txn: 0,
    });
    out
}

// ----- one phase (child process) -----

/// What a phase child is asked to do.
struct PhaseSpec {
    client: Client,
    addr: String,
    topic: String,
    case: Case,
    max_phase: Duration,
}

impl PhaseSpec {
    fn to_args(&self) -> Vec<String> {
        let c = &self.case;
        vec![
            "--phase".into(),
            self.client.name().into(),
            self.addr.clone(),
            self.topic.clone(),
            c.size.to_string(),
            if c.acks_all { "all" } else { "1" }.into(),
            c.keyed.to_string(),
            c.partitions.to_string(),
            c.records.to_string(),
            c.rate.unwrap_or(0).to_string(),
            c.txn.to_string(),
            self.max_phase.as_millis().to_string(),
        ]
    }

    fn from_args(args: &[String]) -> Result<Self, Error> {
        let [
            client,
            addr,
            topic,
            size,
            acks,
            keyed,
            partitions,
            records,
            rate,
            txn,
            max_ms,
        ] = args
        else {
            return Err("--phase: expected 11 arguments".into());
        };
        let rate: u64 = rate.parse()?;
        Ok(Self {
            client: Client::parse(client)?,
            addr: addr.clone(),
            topic: topic.clone(),
            case: Case {
                size: size.parse()?,
                acks_all: acks == "all",
                keyed: keyed.parse()?,
                partitions: partitions.parse()?,
                records: records.parse()?,
                rate: (rate > 0).then_some(rate),
                txn: txn.parse()?,
            },
            max_phase: Duration::from_millis(max_ms.parse()?),
        })
    }

    /// The settings both clients share, by Kafka's key names.
    fn common_settings(&self) -> Vec<(&'static str, String)> {
        let all = self.case.acks_all;
        let mut settings = vec![
            ("bootstrap.servers", self.addr.clone()),
            ("acks", if all { "all" } else { "1" }.into()),
            ("linger.ms", "5".into()),
            ("batch.size", "16384".into()),
            ("compression.type", "none".into()),
            ("max.in.flight.requests.per.connection", "5".into()),
            ("enable.idempotence", all.to_string()),
        ];
        if self.case.txn > 0 {
            settings.push(("transactional.id", format!("{}-txn", self.topic)));
        }
        settings
    }

    /// The partition of the `j`th record of a transaction (round-robin).
    fn txn_partition(&self, j: u64) -> i32 {
        (j % self.case.partitions.max(1) as u64) as i32
    }
}

/// What a phase measured.
#[derive(Clone, Debug, Default)]
struct PhaseResult {
    sent: u64,
    acked: u64,
    failed: u64,
    /// From the first send to the last acknowledgement.
    seconds: f64,
    /// CPU time of the client process (all threads) over `seconds`.
    cpu_s: f64,
    rss_kib: u64,
    p50_ms: f64,
    p99_ms: f64,
    p999_ms: f64,
    max_ms: f64,
    /// Produce requests sent (librdkafka: from its statistics, to within a request or two).
    requests: u64,
    /// Ours only: records per batch.
    records_per_batch: f64,
    /// Set by the parent: broker CPU over the phase child's whole life.
    broker_cpu_s: f64,
    /// CPU time of the client process over its whole life.
    cpu_total_s: f64,
    /// Set by the parent: cores kept busy by everything else on the machine (neither this
    /// client nor the broker) over the phase child's life; a noise indicator.
    other_cores: f64,
    /// Transactions committed (transactional cases).
    commits: u64,
}

impl PhaseResult {
    const FIELDS: usize = 16;

    fn to_line(&self) -> String {
        format!(
            "RESULT {} {} {} {} {} {} {} {} {} {} {} {} {} {} {} {}",
            self.sent,
            self.acked,
            self.failed,
            self.seconds,
            self.cpu_s,
            self.rss_kib,
            self.p50_ms,
            self.p99_ms,
            self.p999_ms,
            self.max_ms,
            self.requests,
            self.records_per_batch,
            self.broker_cpu_s,
            self.cpu_total_s,
            self.other_cores,
            self.commits
        )
    }

    fn from_line(line: &str) -> Result<Self, Error> {
        let f: Vec<&str> = line
            .strip_prefix("RESULT ")
            .ok_or("no RESULT line")?
            .split_whitespace()
            .collect();
        if f.len() != Self::FIELDS {
            return Err(format!("bad RESULT line: {line}").into());
        }
        Ok(Self {
            sent: f[0].parse()?,
            acked: f[1].parse()?,
            failed: f[2].parse()?,
            seconds: f[3].parse()?,
            cpu_s: f[4].parse()?,
            rss_kib: f[5].parse()?,
            p50_ms: f[6].parse()?,
            p99_ms: f[7].parse()?,
            p999_ms: f[8].parse()?,
            max_ms: f[9].parse()?,
            requests: f[10].parse()?,
            records_per_batch: f[11].parse()?,
            broker_cpu_s: f[12].parse()?,
            cpu_total_s: f[13].parse()?,
            other_cores: f[14].parse()?,
            commits: f[15].parse()?,
        })
    }

    fn per_sec(&self) -> f64 {
        self.acked as f64 / self.seconds.max(1e-9)
    }

    fn commits_per_sec(&self) -> f64 {
        self.commits as f64 / self.seconds.max(1e-9)
    }

    fn mb_per_sec(&self, size: usize) -> f64 {
        self.per_sec() * size as f64 / 1e6
    }

    /// Client CPU seconds per million records.
    fn cpu_per_m(&self) -> f64 {
        self.cpu_s * 1e6 / self.acked.max(1) as f64
    }

    fn records_per_request(&self) -> f64 {
        self.acked as f64 / self.requests.max(1) as f64
    }

    fn broker_us_per_record(&self) -> f64 {
        self.broker_cpu_s * 1e6 / self.acked.max(1) as f64
    }
}

/// Log-linear histogram of nanoseconds: exact below 128, then 64 buckets per power of two.
struct Histogram {
    counts: [AtomicU64; BUCKETS],
}

const SUB_BITS: u32 = 6;
const BUCKETS: usize = (64 - SUB_BITS as usize + 1) << SUB_BITS;

impl Histogram {
    fn index(v: u64) -> usize {
        if v < 2 << SUB_BITS {
            v as usize
        } else {
            let shift = 63 - v.leading_zeros() - SUB_BITS;
            (((u64::from(shift) + 1) << SUB_BITS) + (v >> shift) - (1 << SUB_BITS)) as usize
        }
    }

    /// The middle of bucket `i`.
    fn value(i: usize) -> u64 {
        let i = i as u64;
        if i < 2 << SUB_BITS {
            i
        } else {
            let shift = (i >> SUB_BITS) - 1;
            let low = ((i & ((1 << SUB_BITS) - 1)) + (1 << SUB_BITS)) << shift;
            low + (1 << shift) / 2
        }
    }

    fn record(&self, ns: u64) {
        if let Some(c) = self.counts.get(Self::index(ns)) {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn reset(&self) {
        for c in &self.counts {
            c.store(0, Ordering::Relaxed);
        }
    }

    /// The `p` quantile in ms (NaN when empty).
    fn quantile_ms(&self, p: f64) -> f64 {
        let counts: Vec<u64> = self
            .counts
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .collect();
        let total: u64 = counts.iter().sum();
        if total == 0 {
            return f64::NAN;
        }
        let target = ((p * total as f64).ceil() as u64).clamp(1, total);
        let mut seen = 0;
        for (i, n) in counts.iter().enumerate() {
            seen += n;
            if seen >= target {
                return Self::value(i) as f64 / 1e6;
            }
        }
        f64::NAN
    }
}

static LATENCY: Histogram = Histogram {
    counts: [const { AtomicU64::new(0) }; BUCKETS],
};
static ACKED: AtomicU64 = AtomicU64::new(0);
static FAILED: AtomicU64 = AtomicU64::new(0);

/// A record's delivery report: `sent_ns` is when it was handed to the client, in ns after
/// `epoch`.
fn delivered(epoch: Instant, sent_ns: u64, ok: bool) {
    if ok {
        ACKED.fetch_add(1, Ordering::Relaxed);
        let now = epoch.elapsed().as_nanos() as u64;
        LATENCY.record(now.saturating_sub(sent_ns));
    } else {
        FAILED.fetch_add(1, Ordering::Relaxed);
    }
}

fn reset_counts() {
    ACKED.store(0, Ordering::Relaxed);
    FAILED.store(0, Ordering::Relaxed);
    LATENCY.reset();
}

fn phase_main(args: &[String]) -> Result<(), Error> {
    let spec = PhaseSpec::from_args(args)?;
    let mut r = match spec.client {
        Client::Ours => {
            // For experiments: PRODUCER_BENCH_RUNTIME=current runs the application loop and
            // the producer's sender task on one thread.
            let current = std::env::var("PRODUCER_BENCH_RUNTIME").is_ok_and(|v| v == "current");
            let mut rt = if current {
                tokio::runtime::Builder::new_current_thread()
            } else {
                tokio::runtime::Builder::new_multi_thread()
            };
            rt.enable_all().build()?.block_on(ours(&spec))?
        }
        Client::Librdkafka => librdkafka(&spec)?,
    };
    r.acked = ACKED.load(Ordering::Relaxed);
    r.failed = FAILED.load(Ordering::Relaxed);
    r.p50_ms = LATENCY.quantile_ms(0.5);
    r.p99_ms = LATENCY.quantile_ms(0.99);
    r.p999_ms = LATENCY.quantile_ms(0.999);
    r.max_ms = LATENCY.quantile_ms(1.0);
    r.rss_kib = peak_rss_kib_of("self").unwrap_or(0);
    r.cpu_total_s = cpu_time_of("self").map_or(f64::NAN, |d| d.as_secs_f64());
    println!("{}", r.to_line());
    Ok(())
}

fn keys() -> Vec<String> {
    (0..KEYS).map(|k| format!("key-{k:06}")).collect()
}

/// Records due by now at `rate` per second.
fn due(rate: u64, started: Instant) -> u64 {
    (started.elapsed().as_nanos() * u128::from(rate) / 1_000_000_000) as u64
}

/// Our delivery reports (the opaque is when the record was sent, in ns after `epoch`).
struct OurReports {
    epoch: Instant,
}

impl DeliveryHandler for OurReports {
    fn on_delivery(&self, sent_ns: u64, result: Result<&RecordMetadata, &ProducerError>) {
        delivered(self.epoch, sent_ns, result.is_ok());
    }
}

async fn ours(spec: &PhaseSpec) -> Result<PhaseResult, Error> {
    let mut settings = spec.common_settings();
    settings.push(("buffer.memory", "33554432".into()));
    let epoch = Instant::now();
    let mut builder = ProducerConfig::builder();
    for (k, v) in &settings {
        builder = builder.set(k, v)?;
    }
    let cfg = builder
        .delivery_handler(std::sync::Arc::new(OurReports { epoch }))
        .build()?;
    let producer = Producer::new(cfg).await?;
    let txn = spec.case.txn;
    if txn > 0 {
        producer.init_transactions().await?;
    }
    producer.partitions_for(&spec.topic).await?;
    let payload = kafka_bench::records(spec.case.size);
    let keys: Vec<Bytes> = keys().into_iter().map(Bytes::from).collect();
    let topic: std::sync::Arc<str> = spec.topic.as_str().into();
    // Connect to the leader (and get a producer id) before the clock starts; a transactional
    // case commits this record in a transaction of its own.
    if txn > 0 {
        producer.begin_transaction()?;
    }
    tokio::time::timeout(
        Duration::from_secs(30),
        producer.send(ProducerRecord::new(topic.clone(), payload.clone())),
    )
    .await
    .map_err(|_| "warm-up record not acknowledged within 30 s")??;
    if txn > 0 {
        producer.commit_transaction().await?;
    }
    let base = producer.metrics();
    reset_counts();

    let started = Instant::now();
    let cpu0 = cpu_time_of("self");
    let mut sent = 0u64;
    let mut commits = 0u64;
    // Transactions: begin, `txn` records round-robin over the partitions, commit.
    while txn > 0 && sent < spec.case.records && started.elapsed() <= spec.max_phase {
        producer.begin_transaction()?;
        for j in 0..txn {
            let t = epoch.elapsed().as_nanos() as u64;
            let record = ProducerRecord::new(topic.clone(), payload.clone())
                .partition(spec.txn_partition(j));
            producer.send_with_opaque(record, t).await?;
        }
        sent += txn;
        producer.commit_transaction().await?;
        commits += 1;
    }
    while txn == 0 && sent < spec.case.records {
        if let Some(rate) = spec.case.rate {
            if sent >= due(rate, started) {
                if started.elapsed() > spec.max_phase {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
                continue;
            }
        } else if sent % 1024 == 0 && started.elapsed() > spec.max_phase {
            break;
        }
        let t = epoch.elapsed().as_nanos() as u64;
        let mut record = ProducerRecord::new(topic.clone(), payload.clone());
        if spec.case.keyed {
            record = record.key(keys[sent as usize % KEYS].clone());
        }
        producer.send_with_opaque(record, t).await?;
        sent += 1;
    }
    tokio::time::timeout(FLUSH_TIMEOUT, producer.flush())
        .await
        .map_err(|_| "flush did not complete within 60 s")?;
    let seconds = started.elapsed().as_secs_f64();
    let cpu_s = cpu_since(cpu0);
    let m = producer.metrics();
    producer.close(Duration::from_secs(10)).await;
    let requests = m.requests.saturating_sub(base.requests);
    let batches = m.batches_sent.saturating_sub(base.batches_sent);
    Ok(PhaseResult {
        sent,
        seconds,
        cpu_s,
        requests,
        records_per_batch: ACKED.load(Ordering::Relaxed) as f64 / batches.max(1) as f64,
        commits,
        ..Default::default()
    })
}

/// librdkafka's delivery reports.
struct Reports {
    epoch: Instant,
}

/// librdkafka statistics: Produce requests sent (all brokers), and how many statistics
/// events arrived.
static RD_PRODUCE_REQUESTS: AtomicU64 = AtomicU64::new(0);
static RD_STATS_EVENTS: AtomicU64 = AtomicU64::new(0);

impl ClientContext for Reports {
    fn stats(&self, statistics: Statistics) {
        let produce: i64 = statistics
            .brokers
            .values()
            .filter_map(|b| b.req.get("Produce"))
            .sum();
        RD_PRODUCE_REQUESTS.store(u64::try_from(produce).unwrap_or(0), Ordering::Relaxed);
        RD_STATS_EVENTS.fetch_add(1, Ordering::Relaxed);
    }
}

/// The Produce request count of the next statistics event (at most `STATS_INTERVAL` and a
/// bit away; `None` if none came).
fn rd_next_produce_requests() -> Option<u64> {
    let seen = RD_STATS_EVENTS.load(Ordering::Relaxed);
    let deadline = Instant::now() + STATS_INTERVAL * 3;
    while Instant::now() < deadline {
        if RD_STATS_EVENTS.load(Ordering::Relaxed) > seen {
            return Some(RD_PRODUCE_REQUESTS.load(Ordering::Relaxed));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    None
}

impl ProducerContext for Reports {
    /// When the record was sent, in ns after `epoch`.
    type DeliveryOpaque = usize;

    fn delivery(&self, result: &DeliveryResult<'_>, sent_ns: usize) {
        delivered(self.epoch, sent_ns as u64, result.is_ok());
    }
}

/// Sends `record`, waiting while librdkafka's queue is full (the polling thread serves the
/// delivery reports that make room).
fn rd_send(
    producer: &ThreadedProducer<Reports>,
    mut record: BaseRecord<'_, [u8], [u8], usize>,
) -> Result<(), Error> {
    loop {
        match producer.send(record) {
            Ok(()) => return Ok(()),
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), r)) => {
                record = r;
                std::thread::sleep(Duration::from_micros(500));
            }
            Err((e, _)) => return Err(e.into()),
        }
    }
}

/// Waits until every record is acknowledged and its delivery report served. (The crate's
/// `flush` polls in steps of up to 100 ms, which would count up to 100 ms too many.)
fn rd_flush(producer: &ThreadedProducer<Reports>, timeout: Duration) -> Result<(), Error> {
    // Wakes the broker threads to send what lingers; the error says only that it is not done.
    let _ = producer.flush(Duration::ZERO);
    let deadline = Instant::now() + timeout;
    while producer.in_flight_count() > 0 {
        if Instant::now() > deadline {
            return Err(format!(
                "{} records not acknowledged within {} s",
                producer.in_flight_count(),
                timeout.as_secs()
            )
            .into());
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    Ok(())
}

fn librdkafka(spec: &PhaseSpec) -> Result<PhaseResult, Error> {
    let epoch = Instant::now();
    let mut cfg = ClientConfig::new();
    for (k, v) in spec.common_settings() {
        cfg.set(k, v);
    }
    for (k, v) in extra_settings("PRODUCER_BENCH_RDKAFKA_SET")? {
        cfg.set(k, v);
    }
    cfg.set("partitioner", "murmur2_random")
        .set("queue.buffering.max.kbytes", "32768")
        .set("queue.buffering.max.messages", "1000000")
        .set(
            "statistics.interval.ms",
            STATS_INTERVAL.as_millis().to_string(),
        );
    let producer: ThreadedProducer<Reports> = cfg.create_with_context(Reports { epoch })?;
    let txn = spec.case.txn;
    if txn > 0 {
        producer.init_transactions(Duration::from_secs(30))?;
    }
    producer
        .client()
        .fetch_metadata(Some(&spec.topic), Duration::from_secs(10))?;
    let payload = kafka_bench::records(spec.case.size);
    let keys = keys();
    // Connect to the leader (and get a producer id) before the clock starts; a transactional
    // case commits this record in a transaction of its own.
    if txn > 0 {
        producer.begin_transaction()?;
    }
    rd_send(
        &producer,
        BaseRecord::with_opaque_to(&spec.topic, 0).payload(&payload[..]),
    )?;
    rd_flush(&producer, Duration::from_secs(30))?;
    if txn > 0 {
        producer.commit_transaction(Duration::from_secs(30))?;
    }
    let requests0 = rd_next_produce_requests();
    reset_counts();

    let started = Instant::now();
    let cpu0 = cpu_time_of("self");
    let mut sent = 0u64;
    let mut commits = 0u64;
    // Transactions: begin, `txn` records round-robin over the partitions, wait for their
    // acknowledgements (as librdkafka's commit does, without the crate's 100 ms polling
    // steps), commit.
    while txn > 0 && sent < spec.case.records && started.elapsed() <= spec.max_phase {
        producer.begin_transaction()?;
        for j in 0..txn {
            let t = epoch.elapsed().as_nanos() as usize;
            let record = BaseRecord::with_opaque_to(&spec.topic, t)
                .payload(&payload[..])
                .partition(spec.txn_partition(j));
            rd_send(&producer, record)?;
        }
        sent += txn;
        rd_flush(&producer, FLUSH_TIMEOUT)?;
        producer.commit_transaction(FLUSH_TIMEOUT)?;
        commits += 1;
    }
    while txn == 0 && sent < spec.case.records {
        if let Some(rate) = spec.case.rate {
            if sent >= due(rate, started) {
                if started.elapsed() > spec.max_phase {
                    break;
                }
                std::thread::sleep(Duration::from_millis(1));
                continue;
            }
        } else if sent % 1024 == 0 && started.elapsed() > spec.max_phase {
            break;
        }
        let t = epoch.elapsed().as_nanos() as usize;
        let mut record = BaseRecord::with_opaque_to(&spec.topic, t).payload(&payload[..]);
        if spec.case.keyed {
            record = record.key(keys[sent as usize % KEYS].as_bytes());
        }
        rd_send(&producer, record)?;
        sent += 1;
    }
    rd_flush(&producer, FLUSH_TIMEOUT)?;
    let seconds = started.elapsed().as_secs_f64();
    let cpu_s = cpu_since(cpu0);
    let requests = rd_next_produce_requests()
        .zip(requests0)
        .map_or(0, |(b, a)| b.saturating_sub(a));
    Ok(PhaseResult {
        sent,
        seconds,
        cpu_s,
        requests,
        commits,
        ..Default::default()
    })
}

// ----- the run (parent) -----

struct Row {
    case: Case,
    ours: PhaseResult,
    librdkafka: PhaseResult,
    /// records/s of every round, ours and librdkafka.
    rounds: Vec<(f64, f64)>,
}

impl Row {
    fn ratio(&self) -> f64 {
        self.ours.per_sec() / self.librdkafka.per_sec().max(1e-9)
    }
}

fn bench(args: &[String]) -> Result<(), Error> {
    let mut mode = Mode::Default;
    let mut json = false;
    let mut out_path = None;
    let mut broker_path = None;
    let mut dir = None;
    let mut rounds = 1usize;
    let mut only = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--quick" => mode = Mode::Quick,
            "--full" => mode = Mode::Full,
            "--json" => json = true,
            "--out" => out_path = Some(it.next().ok_or("--out needs a path")?.clone()),
            "--rounds" => {
                rounds = it.next().ok_or("--rounds needs a number")?.parse()?;
                if !(1..=9).contains(&rounds) {
                    return Err("--rounds: 1 to 9".into());
                }
            }
            "--broker" => {
                broker_path = Some(PathBuf::from(it.next().ok_or("--broker needs a path")?))
            }
            "--dir" => dir = Some(PathBuf::from(it.next().ok_or("--dir needs a path")?)),
            "--only" => only = Some(it.next().ok_or("--only needs a text")?.clone()),
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    let broker_path = broker_path.ok_or("say where the broker binary is: --broker PATH")?;
    // The broker's data goes to memory (/dev/shm) when there is one: the clients are measured
    // here, not the disk, and a default run writes a few GB (each topic is deleted after its
    // phase, so at most one phase's records, up to about 1 GB, are held at a time).
    let tmp = TempDir::new(dir, "kafka-producer-bench")?;
    let max_phase = if mode == Mode::Quick {
        MAX_PHASE / 2
    } else {
        MAX_PHASE
    };

    println!(
        "producer bench ({} run, {rounds} round(s)): ours vs librdkafka {}, working in {}",
        mode.name(),
        rdkafka::util::get_rdkafka_version().1,
        tmp.0.display()
    );
    let broker = start_broker(&broker_path, &tmp.0)?;
    println!("  broker pid {} on {}", broker.pid, broker.addr);

    let cases: Vec<Case> = cases(mode)
        .into_iter()
        .filter(|c| only.as_ref().is_none_or(|o| c.name().contains(o.as_str())))
        .collect();
    if cases.is_empty() {
        return Err("--only: no case matches".into());
    }
    let mut rows = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        println!(
            "  [{}/{}] {} ({} records{}):",
            i + 1,
            cases.len(),
            case.name(),
            case.records,
            case.rate
                .map_or_else(String::new, |r| format!(", paced at {r}/s"))
        );
        let mut runs: Vec<(PhaseResult, PhaseResult)> = Vec::new();
        for round in 0..rounds {
            // Alternate who goes first, so neither always meets a warmer broker.
            let order = if (i + round) % 2 == 0 {
                [Client::Ours, Client::Librdkafka]
            } else {
                [Client::Librdkafka, Client::Ours]
            };
            let mut pair = (PhaseResult::default(), PhaseResult::default());
            for client in order {
                let topic = format!("pb-{i}-{round}-{}", client.name());
                topics::create(&broker.addr, &topic, case.partitions)?;
                print!("      {:<10} ", client.name());
                std::io::stdout().flush()?;
                let spec = PhaseSpec {
                    client,
                    addr: broker.addr.clone(),
                    topic,
                    case: *case,
                    max_phase,
                };
                let r = run_phase(&spec, &broker.pid)?;
                // Give the space back (a default run writes a few GB in all).
                topics::delete(&broker.addr, &spec.topic)?;
                println!(
                    "{:>9.0} rec/s {:>7.1} MB/s{}, CPU {:.2} s/M records, RSS {:.1} MiB, \
                     ack p50 {:.2} ms p99 {:.2} ms; other load {:.1} cores{}",
                    r.per_sec(),
                    r.mb_per_sec(case.size),
                    if case.txn > 0 {
                        format!(", {:.0} commits/s", r.commits_per_sec())
                    } else {
                        String::new()
                    },
                    r.cpu_per_m(),
                    r.rss_kib as f64 / 1024.0,
                    r.p50_ms,
                    r.p99_ms,
                    r.other_cores,
                    problems(&r, case)
                );
                match client {
                    Client::Ours => pair.0 = r,
                    Client::Librdkafka => pair.1 = r,
                }
            }
            runs.push(pair);
        }
        let row = best_row(*case, runs)?;
        println!(
            "      ours/librdkafka: {:.2}x records/s, {:.2}x CPU per record",
            row.ratio(),
            row.ours.cpu_per_m() / row.librdkafka.cpu_per_m().max(1e-9)
        );
        rows.push(row);
    }
    drop(broker);

    print_table(&rows);
    let obj = to_json(&rows, mode, rounds);
    if let Some(p) = &out_path {
        std::fs::write(p, format!("{obj}\n"))?;
        println!("JSON written to {p}");
    }
    if json {
        println!("{obj}");
    }
    Ok(())
}

/// Anything wrong with a phase, as a suffix for its progress line.
fn problems(r: &PhaseResult, case: &Case) -> String {
    let mut s = String::new();
    if r.failed > 0 {
        s.push_str(&format!("; {} FAILED", r.failed));
    }
    if r.sent < case.records {
        s.push_str(&format!("; stopped at {} records (time bound)", r.sent));
    }
    if case.txn > 0 && r.commits * case.txn != r.sent {
        s.push_str(&format!(
            "; {} commits for {} records sent",
            r.commits, r.sent
        ));
    }
    if r.acked + r.failed < r.sent {
        s.push_str(&format!("; {} unacknowledged", r.sent - r.acked - r.failed));
    }
    s
}

/// Each client's best round (highest records/s): on a shared machine other work only ever
/// slows a phase down.
fn best_row(case: Case, runs: Vec<(PhaseResult, PhaseResult)>) -> Result<Row, Error> {
    let rounds = runs
        .iter()
        .map(|(o, l)| (o.per_sec(), l.per_sec()))
        .collect();
    let (ours, librdkafka): (Vec<PhaseResult>, Vec<PhaseResult>) = runs.into_iter().unzip();
    let best = |v: Vec<PhaseResult>| {
        v.into_iter()
            .max_by(|a, b| a.per_sec().total_cmp(&b.per_sec()))
            .ok_or("no rounds")
    };
    Ok(Row {
        case,
        ours: best(ours)?,
        librdkafka: best(librdkafka)?,
        rounds,
    })
}

fn run_phase(spec: &PhaseSpec, broker_pid: &str) -> Result<PhaseResult, Error> {
    let run = run_self(&spec.to_args(), CHILD_DEADLINE, broker_pid)
        .map_err(|e| format!("{} phase: {e}", spec.client.name()))?;
    if !run.status.success() {
        return Err(format!("{} phase failed ({})", spec.client.name(), run.status).into());
    }
    let line = run
        .stdout
        .lines()
        .rev()
        .find(|l| l.starts_with("RESULT "))
        .ok_or_else(|| format!("{} phase printed no result", spec.client.name()))?;
    let mut r = PhaseResult::from_line(line)?;
    r.broker_cpu_s = run.watched_cpu_s;
    r.other_cores =
        ((run.machine_busy_s - run.watched_cpu_s - r.cpu_total_s) / run.wall_s.max(1e-3)).max(0.0);
    Ok(r)
}

fn print_table(rows: &[Row]) {
    println!(
        "\n| {:<34} | {:<10} | {:>9} | {:>10} | {:>7} | {:>9} | {:>11} | {:>9} | {:>8} | {:>8} | {:>7} | {:>9} | {:>8} |",
        "case",
        "client",
        "records",
        "records/s",
        "MB/s",
        "commits/s",
        "CPU s/M rec",
        "peak RSS",
        "p50 ms",
        "p99 ms",
        "rec/req",
        "broker µs",
        "ours/rdk"
    );
    println!(
        "|{:-<36}|{:-<12}|{:-<11}|{:-<12}|{:-<9}|{:-<11}|{:-<13}|{:-<11}|{:-<10}|{:-<10}|{:-<9}|{:-<11}|{:-<10}|",
        "", "", "", "", "", "", "", "", "", "", "", "", ""
    );
    for row in rows {
        for (client, r) in [("ours", &row.ours), ("librdkafka", &row.librdkafka)] {
            let ratio = if client == "ours" {
                format!("{:.2}x", row.ratio())
            } else {
                String::new()
            };
            let commits = if row.case.txn > 0 {
                format!("{:.0}", r.commits_per_sec())
            } else {
                "-".into()
            };
            println!(
                "| {:<34} | {:<10} | {:>9} | {:>10.0} | {:>7.1} | {:>9} | {:>11.2} | {:>5.1} MiB | {:>8.2} | {:>8.2} | {:>7.0} | {:>9.2} | {:>8} |",
                if client == "ours" {
                    row.case.name()
                } else {
                    String::new()
                },
                client,
                r.acked,
                r.per_sec(),
                r.mb_per_sec(row.case.size),
                commits,
                r.cpu_per_m(),
                r.rss_kib as f64 / 1024.0,
                r.p50_ms,
                r.p99_ms,
                r.records_per_request(),
                r.broker_us_per_record(),
                ratio
            );
        }
    }
    println!(
        "\nrecords/s and MB/s (record values): from the first send to the last acknowledgement \
         (transactions: to the last commit). commits/s: transactions committed per second. \
         CPU: the client process, all threads, over that time. p50/p99: send call to delivery \
         callback. rec/req: records per Produce request. broker µs: broker CPU per record \
         over the phase."
    );
}

fn phase_json(r: &PhaseResult, size: usize) -> String {
    format!(
        "{{\"sent\":{},\"acked\":{},\"failed\":{},\"seconds\":{},\"records_per_s\":{},\
         \"mb_per_s\":{},\"cpu_s\":{},\"cpu_s_per_million\":{},\"peak_rss_kib\":{},\
         \"p50_ms\":{},\"p99_ms\":{},\"p999_ms\":{},\"max_ms\":{},\"broker_cpu_s\":{},\
         \"broker_us_per_record\":{},\"requests\":{},\"records_per_request\":{},\
         \"records_per_batch\":{},\"other_load_cores\":{},\"commits\":{},\
         \"commits_per_s\":{}}}",
        r.sent,
        r.acked,
        r.failed,
        num(r.seconds, 3),
        num(r.per_sec(), 0),
        num(r.mb_per_sec(size), 2),
        num(r.cpu_s, 2),
        num(r.cpu_per_m(), 3),
        r.rss_kib,
        num(r.p50_ms, 3),
        num(r.p99_ms, 3),
        num(r.p999_ms, 3),
        num(r.max_ms, 3),
        num(r.broker_cpu_s, 2),
        num(r.broker_us_per_record(), 3),
        r.requests,
        num(r.records_per_request(), 1),
        num(r.records_per_batch, 1),
        num(r.other_cores, 2),
        r.commits,
        if r.commits > 0 {
            num(r.commits_per_sec(), 1)
        } else {
            "null".into()
        }
    )
}

/// The whole result as one line of JSON.
fn to_json(rows: &[Row], mode: Mode, rounds: usize) -> String {
    let cases: Vec<String> = rows
        .iter()
        .map(|row| {
            let c = &row.case;
            let all: Vec<String> = row
                .rounds
                .iter()
                .map(|(o, l)| format!("[{},{}]", num(*o, 0), num(*l, 0)))
                .collect();
            format!(
                "{{\"case\":\"{}\",\"record_bytes\":{},\"acks\":\"{}\",\"keyed\":{},\
                 \"partitions\":{},\"records\":{},\"rate_per_s\":{},\
                 \"records_per_transaction\":{},\"transactions\":{},\"ratio\":{},\
                 \"commits_ratio\":{},\"cpu_ratio\":{},\"rounds_records_per_s\":[{}],\
                 \"ours\":{},\"librdkafka\":{}}}",
                c.name(),
                c.size,
                if c.acks_all { "all" } else { "1" },
                c.keyed,
                c.partitions,
                c.records,
                c.rate.map_or_else(|| "null".into(), |r| r.to_string()),
                if c.txn > 0 {
                    c.txn.to_string()
                } else {
                    "null".into()
                },
                if c.txn > 0 {
                    c.transactions().to_string()
                } else {
                    "null".into()
                },
                num(row.ratio(), 3),
                if c.txn > 0 {
                    num(
                        row.ours.commits_per_sec() / row.librdkafka.commits_per_sec().max(1e-9),
                        3,
                    )
                } else {
                    "null".into()
                },
                num(
                    row.ours.cpu_per_m() / row.librdkafka.cpu_per_m().max(1e-9),
                    3
                ),
                all.join(","),
                phase_json(&row.ours, c.size),
                phase_json(&row.librdkafka, c.size)
            )
        })
        .collect();
    let head = rows.iter().find(|r| r.case.is_headline());
    let get = |f: &dyn Fn(&Row) -> f64| head.map_or_else(|| "null".into(), |r| num(f(r), 3));
    format!(
        "{{\"bench\":\"producer\",\"librdkafka\":\"{}\",\"mode\":\"{}\",\"rounds\":{rounds},\
         \"settings\":\"linger.ms=5 batch.size=16384 compression.type=none \
         max.in.flight.requests.per.connection=5 enable.idempotence=(acks==all) \
         32 MiB queue; librdkafka partitioner=murmur2_random; transactional cases: \
         transactional.id per phase, records round-robin over the partitions\",\
         \"headline\":\"100 B acks=1 unkeyed 8p\",\"ours_records_per_s\":{},\
         \"librdkafka_records_per_s\":{},\"ratio\":{},\"ours_cpu_s_per_million\":{},\
         \"librdkafka_cpu_s_per_million\":{},\"ours_p99_ms\":{},\"librdkafka_p99_ms\":{},\
         \"cases\":[{}]}}",
        rdkafka::util::get_rdkafka_version().1,
        mode.name(),
        get(&|r| r.ours.per_sec()),
        get(&|r| r.librdkafka.per_sec()),
        get(&|r| r.ratio()),
        get(&|r| r.ours.cpu_per_m()),
        get(&|r| r.librdkafka.cpu_per_m()),
        get(&|r| r.ours.p99_ms),
        get(&|r| r.librdkafka.p99_ms),
        cases.join(",")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transactional_cases_in_every_mode() {
        for mode in [Mode::Quick, Mode::Default, Mode::Full] {
            let cs = cases(mode);
            assert_eq!(cs.iter().filter(|c| c.is_headline()).count(), 1);
            let txn: Vec<&Case> = cs.iter().filter(|c| c.txn > 0).collect();
            assert_eq!(txn.iter().map(|c| c.txn).collect::<Vec<_>>(), [100, 10_000]);
            for c in txn {
                assert!(c.acks_all && c.partitions == 8 && c.size == 100 && !c.is_headline());
                assert_eq!(c.transactions() * c.txn, c.records);
                assert!(
                    c.name().contains(&format!("txns of {}", c.txn)),
                    "{}",
                    c.name()
                );
            }
        }
    }

    #[test]
    fn phase_spec_and_result_roundtrip() {
        let Some(case) = cases(Mode::Quick).into_iter().find(|c| c.txn == 100) else {
            panic!("no transactional case");
        };
        let spec = PhaseSpec {
            client: Client::Librdkafka,
            addr: "127.0.0.1:9092".into(),
            topic: "t".into(),
            case,
            max_phase: Duration::from_millis(5000),
        };
        let args = spec.to_args();
        let back = PhaseSpec::from_args(&args[1..]).unwrap();
        assert_eq!(back.to_args(), args);
        assert!(
            back.common_settings()
                .contains(&("transactional.id", "t-txn".into()))
        );
        assert_eq!(
            (0..9).map(|j| spec.txn_partition(j)).collect::<Vec<_>>(),
            [0, 1, 2, 3, 4, 5, 6, 7, 0]
        );
        let r = PhaseResult {
            sent: 200,
            acked: 200,
            seconds: 0.5,
            commits: 2,
            ..Default::default()
        };
        let back = PhaseResult::from_line(&r.to_line()).unwrap();
        assert_eq!(back.to_line(), r.to_line());
        assert_eq!(back.commits_per_sec(), 4.0);
    }

    #[test]
    fn histogram_buckets_are_contiguous_and_close() {
        let mut last = 0;
        for v in [
            0u64,
            1,
            127,
            128,
            129,
            255,
            256,
            1000,
            123_456,
            10_000_000_000,
        ] {
            let i = Histogram::index(v);
            assert!(i >= last && i < BUCKETS, "{v}");
            last = i;
            let back = Histogram::value(i) as f64;
            assert!(
                (back - v as f64).abs() <= (v as f64 / 64.0).max(1.0),
                "{v} {back}"
            );
        }
        assert_eq!(Histogram::index(u64::MAX), BUCKETS - 1);
        for i in 0..BUCKETS - 1 {
            assert_eq!(Histogram::index(Histogram::value(i)), i, "{i}");
        }
    }
}
