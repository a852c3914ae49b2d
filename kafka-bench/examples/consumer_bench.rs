//! Our consumer (`kafka-consumer`) against librdkafka (the `rdkafka` crate) reading the same
//! pre-filled topics from the same broker, with the same settings, in one run: records/s,
//! MB/s, client CPU per million records and peak RSS per case and client, and their ratio.
//!
//! The broker (`--broker PATH`, a release build of `kafka-broker`) runs as a child process on
//! 127.0.0.1 with a fresh data directory under `/dev/shm` when there is one, else the temp dir
//! (or `--dir`). Each topic is created and filled once, before the timed phases that read it,
//! by our producer in a child process (acks=1, `linger.ms=5`, `batch.size=16384`, no
//! idempotence, 100 consecutive records per partition in turn, so partitions are even); the
//! parent checks the log end offsets add up to the count, and deletes the topic after its
//! last case. Every value starts with a byte that depends on the record's index and ends with
//! fixed filler.
//!
//! Every phase (one client, one case, one round) runs in a child process of its own (this
//! binary with `--phase ...`), so its CPU time (`/proc/self/stat`, all threads, over the timed
//! part only) and peak RSS (`VmHWM`) are that client's alone. The phase connects and learns
//! the topic's partitions; then the clock starts, it assigns every partition from the
//! beginning and reads until it has the topic's known record count (for at most
//! `MAX_PHASE`). For every record it counts the value bytes and adds the value's first and
//! last byte to a checksum, so neither client can skip the data; the parent checks count and
//! checksum against what was written. Ours is driven by `poll(100 ms)` in a loop on a
//! multi-threaded tokio runtime (up to `max.poll.records`, 500 by default, per call),
//! librdkafka by `BaseConsumer::poll(100 ms)` (one message per call, the crate's way).
//!
//! Settings, both clients: `fetch.min.bytes=1`, `fetch.max.wait.ms=500` (librdkafka
//! `fetch.wait.max.ms`), `max.partition.fetch.bytes=1048576`, `fetch.max.bytes=52428800`,
//! `check.crcs=false` (librdkafka's default; `--check-crcs` or the `crc` cases of `--full`: true
//! on both), 64 MiB fetched ahead at most (ours `fetch.buffer.max.bytes=67108864`, librdkafka
//! `queued.max.messages.kbytes=65536`), the socket receive buffer left to the OS (ours
//! `receive.buffer.bytes=-1`, librdkafka `socket.receive.buffer.bytes=0`; ours defaults to
//! Java's 64 KiB, which costs it a third more CPU per 1 KiB record on one partition, as
//! it costs librdkafka when set there), `auto.offset.reset=earliest`, no commits. librdkafka
//! needs a `group.id` to assign (we give one and never commit), ours has none. librdkafka
//! also gets `fetch.queue.backoff.ms=10`: with its default of 1000 it stops fetching for a
//! second whenever its queue holds `queued.min.messages` (100,000) records, which caps it at
//! about 0.4 M records/s with 100-byte records here (its documentation says to lower it in
//! that case); ours fetches again as soon as the application frees space. Everything else is
//! each client's default (`queued.min.messages` stays 100,000: raising it to let the byte
//! bound bind did not make librdkafka faster and took its RSS to about 300 MiB). librdkafka
//! also gets `statistics.interval.ms=500`, to count its Fetch requests.
//!
//! The `read_committed` case reads a topic filled with transactions instead: our
//! transactional producer (acks=all, idempotent, its own `transactional.id`) writes 1,000
//! records per transaction, the same placement, and aborts every tenth transaction after its
//! records are acknowledged (so they are in the log: their values start with byte 255, which
//! no committed value does); the parent checks the log end offsets add up to the committed and
//! aborted records plus one marker per partition per transaction. Both clients read it with
//! `isolation.level=read_committed` until they have the committed count, then (untimed) poll
//! for half a second more; a phase that reads any other count, or other values, fails the
//! run. (The other cases leave `isolation.level` to each client's default: ours
//! read_uncommitted, librdkafka read_committed; without transactions both read the same.)
//!
//! With `--rounds N` (default 5) every case runs N times, the two clients alternating who goes
//! first, and each client's best round is reported (other work on a shared machine only slows
//! a phase down); each phase also reports how many cores everything else kept busy meanwhile.
//!
//! ```text
//! cargo run --release -p kafka-bench --features rdkafka --example consumer_bench -- \
//!     --broker target/release/kafka-broker [--quick|--full] [--rounds N] [--check-crcs] \
//!     [--json] [--out PATH] [--dir PATH] [--only TEXT]
//! ```
//!
//! `--only TEXT` runs only the cases whose name contains TEXT (e.g. `read_committed`).
//!
//! With `--json` the last line printed is the whole result as one JSON object; `--out` writes
//! the same object to a file. For experiments: `CONSUMER_BENCH_OURS_SET=key=value,...` adds
//! settings to ours (e.g. `max.poll.records=5000`), `CONSUMER_BENCH_RUNTIME=current` runs ours
//! on a current-thread runtime.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use kafka_bench::harness::{
    Error, TempDir, cpu_since, extra_settings, num, run_self, start_broker, topics,
};
use kafka_bench::{cpu_time_of, peak_rss_kib_of};
use kafka_consumer::{Consumer, ConsumerConfig};
use kafka_producer::{Producer, ProducerConfig, ProducerRecord};
use rdkafka::Offset;
use rdkafka::TopicPartitionList;
use rdkafka::client::ClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer as _, ConsumerContext};
use rdkafka::message::Message as _;
use rdkafka::statistics::Statistics;

/// Longest a read phase may run (`--quick`: half).
const MAX_PHASE: Duration = Duration::from_secs(60);
/// A phase child still running after this is killed.
const CHILD_DEADLINE: Duration = Duration::from_secs(150);
/// A fill child still running after this is killed.
const FILL_DEADLINE: Duration = Duration::from_secs(600);
/// librdkafka's `statistics.interval.ms` (to count its Fetch requests).
const STATS_INTERVAL: Duration = Duration::from_millis(500);
/// Bytes fetched ahead of the application, both clients.
const BUFFER_BYTES: usize = 64 * 1024 * 1024;
/// Consecutive records per partition when filling.
const FILL_CHUNK: u64 = 100;
/// librdkafka's `fetch.queue.backoff.ms`: how soon it fetches again after its queue was
/// full (ours fetches as soon as the application frees space).
const FETCH_QUEUE_BACKOFF_MS: u32 = 10;
/// The poll timeout of both clients.
const POLL: Duration = Duration::from_millis(100);
/// Records per transaction when filling the read_committed case's topic.
const FILL_TXN: u64 = 1000;
/// Every this many transactions of that fill, one is aborted.
const ABORT_EVERY: u64 = 10;
/// The first byte of every aborted value (committed ones start with 0 to 250).
const ABORTED_MARK: u8 = 255;
/// How long a read_committed phase polls on, untimed, after the committed count.
const DRAIN: Duration = Duration::from_millis(500);

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.split_first() {
        Some((first, rest)) if first == "--phase" => phase_main(rest),
        Some((first, rest)) if first == "--fill" => fill_main(rest),
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

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Case {
    size: usize,
    partitions: i32,
    records: u64,
    /// `compression.type` of the producer that filled the topic.
    compression: &'static str,
    check_crcs: bool,
    /// The topic is filled with transactions (some aborted), read with
    /// `isolation.level=read_committed`; `records` counts the committed ones.
    read_committed: bool,
}

impl Case {
    fn name(&self) -> String {
        let size = if self.size >= 1024 {
            format!("{} KiB", self.size / 1024)
        } else {
            format!("{} B", self.size)
        };
        let mut s = format!("{size} {}p", self.partitions);
        if self.compression != "none" {
            s.push(' ');
            s.push_str(self.compression);
        }
        if self.check_crcs {
            s.push_str(" crc");
        }
        if self.read_committed {
            s.push_str(" read_committed");
        }
        s
    }

    /// Cases with the same key read the same topic.
    fn topic_key(&self) -> (usize, i32, u64, &'static str, bool) {
        (
            self.size,
            self.partitions,
            self.records,
            self.compression,
            self.read_committed,
        )
    }

    fn is_headline(&self) -> bool {
        self.size == 100
            && self.partitions == 8
            && self.compression == "none"
            && !self.read_committed
    }
}

fn codec(name: &str) -> Result<&'static str, Error> {
    match name {
        "none" => Ok("none"),
        "lz4" => Ok("lz4"),
        other => Err(format!("unknown compression {other}").into()),
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

fn cases(mode: Mode, check_crcs: bool) -> Vec<Case> {
    let records = |size: usize| match (mode, size) {
        (Mode::Quick, 100) => 2_000_000,
        (Mode::Quick, _) => 300_000,
        (_, 100) => 10_000_000,
        (_, _) => 1_000_000,
    };
    let case = |size, partitions, compression, crc| Case {
        size,
        partitions,
        records: records(size),
        compression,
        check_crcs: crc,
        read_committed: false,
    };
    // The headline case first; a CRC variant right after the case whose topic it reads.
    let mut out = Vec::new();
    for (size, partitions) in [(100, 8), (100, 1), (1024, 8), (1024, 1)] {
        out.push(case(size, partitions, "none", check_crcs));
        if mode == Mode::Full && partitions == 8 && !check_crcs {
            out.push(case(size, partitions, "none", true));
        }
    }
    if mode == Mode::Full {
        out.push(case(100, 8, "lz4", check_crcs));
    }
    // Committed transactions with aborted ones among them, read_committed.
    out.push(Case {
        records: if mode == Mode::Quick {
            1_000_000
        } else {
            5_000_000
        },
        read_committed: true,
        ..case(100, 8, "none", check_crcs)
    });
    out
}

// ----- one phase (child process) -----

/// What a phase child is asked to do.
struct PhaseSpec {
    client: Client,
    addr: String,
    topic: String,
    partitions: i32,
    records: u64,
    check_crcs: bool,
    read_committed: bool,
    max_phase: Duration,
}

impl PhaseSpec {
    fn to_args(&self) -> Vec<String> {
        vec![
            "--phase".into(),
            self.client.name().into(),
            self.addr.clone(),
            self.topic.clone(),
            self.partitions.to_string(),
            self.records.to_string(),
            self.check_crcs.to_string(),
            self.read_committed.to_string(),
            self.max_phase.as_millis().to_string(),
        ]
    }

    fn from_args(args: &[String]) -> Result<Self, Error> {
        let [
            client,
            addr,
            topic,
            partitions,
            records,
            crcs,
            committed,
            max_ms,
        ] = args
        else {
            return Err("--phase: expected 8 arguments".into());
        };
        Ok(Self {
            client: Client::parse(client)?,
            addr: addr.clone(),
            topic: topic.clone(),
            partitions: partitions.parse()?,
            records: records.parse()?,
            check_crcs: crcs.parse()?,
            read_committed: committed.parse()?,
            max_phase: Duration::from_millis(max_ms.parse()?),
        })
    }
}

/// What a phase measured.
#[derive(Clone, Debug, Default)]
struct PhaseResult {
    records: u64,
    /// Value bytes.
    bytes: u64,
    /// Sum of the first and last byte of every value.
    checksum: u64,
    /// From `assign` to the last record.
    seconds: f64,
    /// From `assign` to the first record, ms.
    first_ms: f64,
    /// CPU time of the client process (all threads) over `seconds`.
    cpu_s: f64,
    rss_kib: u64,
    /// Fetch requests answered (librdkafka: from its statistics, to within a request or two).
    fetches: u64,
    /// Ours only: the most record bytes buffered at once.
    buffered_max: u64,
    /// CPU time of the client process over its whole life.
    cpu_total_s: f64,
    /// Set by the parent: broker CPU over the phase child's whole life.
    broker_cpu_s: f64,
    /// Set by the parent: cores kept busy by everything else on the machine (neither this
    /// client nor the broker) over the phase child's life; a noise indicator.
    other_cores: f64,
    /// read_committed: records that came after the committed count (in `DRAIN`).
    extra: u64,
}

impl PhaseResult {
    const FIELDS: usize = 13;

    fn to_line(&self) -> String {
        format!(
            "RESULT {} {} {} {} {} {} {} {} {} {} {} {} {}",
            self.records,
            self.bytes,
            self.checksum,
            self.seconds,
            self.first_ms,
            self.cpu_s,
            self.rss_kib,
            self.fetches,
            self.buffered_max,
            self.cpu_total_s,
            self.broker_cpu_s,
            self.other_cores,
            self.extra
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
            records: f[0].parse()?,
            bytes: f[1].parse()?,
            checksum: f[2].parse()?,
            seconds: f[3].parse()?,
            first_ms: f[4].parse()?,
            cpu_s: f[5].parse()?,
            rss_kib: f[6].parse()?,
            fetches: f[7].parse()?,
            buffered_max: f[8].parse()?,
            cpu_total_s: f[9].parse()?,
            broker_cpu_s: f[10].parse()?,
            other_cores: f[11].parse()?,
            extra: f[12].parse()?,
        })
    }

    fn per_sec(&self) -> f64 {
        self.records as f64 / self.seconds.max(1e-9)
    }

    fn mb_per_sec(&self) -> f64 {
        self.bytes as f64 / self.seconds.max(1e-9) / 1e6
    }

    /// Client CPU seconds per million records.
    fn cpu_per_m(&self) -> f64 {
        self.cpu_s * 1e6 / self.records.max(1) as f64
    }

    fn records_per_fetch(&self) -> f64 {
        self.records as f64 / self.fetches.max(1) as f64
    }

    fn broker_us_per_record(&self) -> f64 {
        self.broker_cpu_s * 1e6 / self.records.max(1) as f64
    }
}

/// What the application does with every value: counts it and reads its first and last byte.
fn touch(v: &[u8]) -> u64 {
    match v {
        [] => 0,
        [a] => u64::from(*a),
        [a, .., b] => u64::from(*a) + u64::from(*b),
    }
}

/// Records, value bytes and checksum read so far.
#[derive(Default)]
struct Tally {
    records: u64,
    bytes: u64,
    checksum: u64,
    first: Option<Duration>,
}

impl Tally {
    #[inline]
    fn add(&mut self, value: Option<&[u8]>) {
        self.records += 1;
        if let Some(v) = value {
            self.bytes += v.len() as u64;
            self.checksum += touch(v);
        }
    }
}

fn phase_main(args: &[String]) -> Result<(), Error> {
    let spec = PhaseSpec::from_args(args)?;
    let mut r = match spec.client {
        Client::Ours => {
            // For experiments: CONSUMER_BENCH_RUNTIME=current runs the poll loop and the
            // consumer's background tasks on one thread.
            let current = std::env::var("CONSUMER_BENCH_RUNTIME").is_ok_and(|v| v == "current");
            let mut rt = if current {
                tokio::runtime::Builder::new_current_thread()
            } else {
                tokio::runtime::Builder::new_multi_thread()
            };
            rt.enable_all().build()?.block_on(ours(&spec))?
        }
        Client::Librdkafka => librdkafka(&spec)?,
    };
    r.rss_kib = peak_rss_kib_of("self").unwrap_or(0);
    r.cpu_total_s = cpu_time_of("self").map_or(f64::NAN, |d| d.as_secs_f64());
    println!("{}", r.to_line());
    Ok(())
}

async fn ours(spec: &PhaseSpec) -> Result<PhaseResult, Error> {
    let mut settings: Vec<(String, String)> = [
        ("bootstrap.servers", spec.addr.clone()),
        ("client.id", "consumer-bench-ours".into()),
        ("auto.offset.reset", "earliest".into()),
        ("fetch.min.bytes", "1".into()),
        ("fetch.max.wait.ms", "500".into()),
        ("max.partition.fetch.bytes", "1048576".into()),
        ("fetch.max.bytes", "52428800".into()),
        ("check.crcs", spec.check_crcs.to_string()),
        ("fetch.buffer.max.bytes", BUFFER_BYTES.to_string()),
        // The OS default (autotuned), as librdkafka's default; ours defaults to Java's 64 KiB.
        ("receive.buffer.bytes", "-1".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    if spec.read_committed {
        settings.push(("isolation.level".into(), "read_committed".into()));
    }
    settings.extend(extra_settings("CONSUMER_BENCH_OURS_SET")?);
    let consumer = Consumer::new(ConsumerConfig::from_pairs(settings)?).await?;
    let partitions = tokio::time::timeout(
        Duration::from_secs(30),
        consumer.partitions_for(&spec.topic),
    )
    .await
    .map_err(|_| "no metadata for the topic within 30 s")??;
    if partitions.len() != spec.partitions as usize {
        return Err(format!(
            "{} has {} partitions, expected {}",
            spec.topic,
            partitions.len(),
            spec.partitions
        )
        .into());
    }

    let cpu0 = cpu_time_of("self");
    let started = Instant::now();
    consumer.assign(partitions)?;
    let mut t = Tally::default();
    while t.records < spec.records {
        let batch = consumer.poll(POLL).await?;
        if t.first.is_none() && !batch.is_empty() {
            t.first = Some(started.elapsed());
        }
        for r in &batch {
            t.add(r.value.as_deref());
        }
        if started.elapsed() > spec.max_phase {
            break;
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let cpu_s = cpu_since(cpu0);
    let mut extra = 0;
    if spec.read_committed {
        let until = Instant::now() + DRAIN;
        while Instant::now() < until {
            extra += consumer.poll(DRAIN / 5).await?.len() as u64;
        }
    }
    let m = consumer.metrics();
    consumer.close(Duration::from_secs(5)).await?;
    Ok(PhaseResult {
        records: t.records,
        bytes: t.bytes,
        checksum: t.checksum,
        seconds,
        first_ms: t.first.map_or(f64::NAN, |d| d.as_secs_f64() * 1e3),
        cpu_s,
        fetches: m.fetch_requests,
        buffered_max: m.buffered_bytes_max as u64,
        extra,
        ..Default::default()
    })
}

/// librdkafka's statistics: Fetch requests sent (all brokers), and how many statistics
/// events arrived.
static RD_FETCH_REQUESTS: AtomicU64 = AtomicU64::new(0);
static RD_STATS_EVENTS: AtomicU64 = AtomicU64::new(0);

struct Stats;

impl ClientContext for Stats {
    fn stats(&self, statistics: Statistics) {
        let fetch: i64 = statistics
            .brokers
            .values()
            .filter_map(|b| b.req.get("Fetch"))
            .sum();
        RD_FETCH_REQUESTS.store(u64::try_from(fetch).unwrap_or(0), Ordering::Relaxed);
        RD_STATS_EVENTS.fetch_add(1, Ordering::Relaxed);
    }
}

impl ConsumerContext for Stats {}

fn librdkafka(spec: &PhaseSpec) -> Result<PhaseResult, Error> {
    let mut cfg = ClientConfig::new();
    cfg.set("bootstrap.servers", &spec.addr)
        .set("client.id", "consumer-bench-librdkafka")
        // Needed to assign; nothing is committed.
        .set("group.id", "consumer-bench")
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("auto.offset.reset", "earliest")
        .set("fetch.min.bytes", "1")
        .set("fetch.wait.max.ms", "500")
        .set("max.partition.fetch.bytes", "1048576")
        .set("fetch.max.bytes", "52428800")
        .set("check.crcs", spec.check_crcs.to_string())
        // The OS default (its default, said explicitly).
        .set("socket.receive.buffer.bytes", "0")
        .set(
            "queued.max.messages.kbytes",
            (BUFFER_BYTES / 1024).to_string(),
        )
        // Its default (1000) idles every partition for a second whenever the queue holds
        // queued.min.messages (100000) records: 0.4 M records/s at 100 bytes here.
        .set("fetch.queue.backoff.ms", FETCH_QUEUE_BACKOFF_MS.to_string())
        .set(
            "statistics.interval.ms",
            STATS_INTERVAL.as_millis().to_string(),
        );
    if spec.read_committed {
        cfg.set("isolation.level", "read_committed");
    }
    for (k, v) in extra_settings("CONSUMER_BENCH_RDKAFKA_SET")? {
        cfg.set(k, v);
    }
    let consumer: BaseConsumer<Stats> = cfg.create_with_context(Stats)?;
    let md = consumer.fetch_metadata(Some(&spec.topic), Duration::from_secs(10))?;
    let found = md
        .topics()
        .iter()
        .find(|t| t.name() == spec.topic)
        .map_or(0, |t| t.partitions().len());
    if found != spec.partitions as usize {
        return Err(format!(
            "{} has {found} partitions, expected {}",
            spec.topic, spec.partitions
        )
        .into());
    }
    let mut tpl = TopicPartitionList::new();
    for p in 0..spec.partitions {
        tpl.add_partition_offset(&spec.topic, p, Offset::Beginning)?;
    }

    let cpu0 = cpu_time_of("self");
    let started = Instant::now();
    consumer.assign(&tpl)?;
    let mut t = Tally::default();
    while t.records < spec.records {
        match consumer.poll(POLL) {
            Some(Ok(m)) => {
                if t.first.is_none() {
                    t.first = Some(started.elapsed());
                }
                t.add(m.payload());
                if t.records % 65_536 == 0 && started.elapsed() > spec.max_phase {
                    break;
                }
            }
            Some(Err(e)) => return Err(e.into()),
            None => {
                if started.elapsed() > spec.max_phase {
                    break;
                }
            }
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let cpu_s = cpu_since(cpu0);
    let mut extra = 0;
    if spec.read_committed {
        let until = Instant::now() + DRAIN;
        while Instant::now() < until {
            match consumer.poll(DRAIN / 5) {
                Some(Ok(_)) => extra += 1,
                Some(Err(e)) => return Err(e.into()),
                None => {}
            }
        }
    }
    // The Fetch count of the next statistics event (served by poll; not timed).
    let seen = RD_STATS_EVENTS.load(Ordering::Relaxed);
    let deadline = Instant::now() + STATS_INTERVAL * 3;
    while RD_STATS_EVENTS.load(Ordering::Relaxed) == seen && Instant::now() < deadline {
        let _ = consumer.poll(Duration::from_millis(50));
    }
    Ok(PhaseResult {
        records: t.records,
        bytes: t.bytes,
        checksum: t.checksum,
        seconds,
        first_ms: t.first.map_or(f64::NAN, |d| d.as_secs_f64() * 1e3),
        cpu_s,
        fetches: RD_FETCH_REQUESTS.load(Ordering::Relaxed),
        extra,
        ..Default::default()
    })
}

// ----- filling a topic (child process) -----

/// Writes `records` values of `size` bytes to `topic` with our producer and prints
/// `FILLED <acknowledged> <failed> <checksum> <seconds> <log records> <aborted>`: the
/// committed records acknowledged (all of them without transactions), those that failed, the
/// checksum of the committed values, the offsets the log should hold (committed and aborted
/// records and transaction markers) and the aborted records.
fn fill_main(args: &[String]) -> Result<(), Error> {
    let [
        addr,
        topic,
        size,
        partitions,
        records,
        compression,
        transactional,
    ] = args
    else {
        return Err("--fill: expected 7 arguments".into());
    };
    let spec = Fill {
        addr,
        topic,
        size: size.parse()?,
        partitions: partitions.parse()?,
        records: records.parse()?,
        compression: codec(compression)?,
        transactional: transactional.parse()?,
    };
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(fill(&spec))
}

/// What a fill child writes.
struct Fill<'a> {
    addr: &'a str,
    topic: &'a str,
    size: usize,
    partitions: u64,
    /// Committed records.
    records: u64,
    compression: &'a str,
    /// In transactions of `FILL_TXN` records, every `ABORT_EVERY`th aborted.
    transactional: bool,
}

async fn fill(spec: &Fill<'_>) -> Result<(), Error> {
    let txn_id = format!("{}-fill", spec.topic);
    let mut settings = vec![
        ("bootstrap.servers", spec.addr),
        ("client.id", "consumer-bench-fill"),
        ("linger.ms", "5"),
        ("batch.size", "16384"),
        ("buffer.memory", "33554432"),
        ("compression.type", spec.compression),
    ];
    if spec.transactional {
        settings.extend([
            ("acks", "all"),
            ("enable.idempotence", "true"),
            ("transactional.id", txn_id.as_str()),
        ]);
    } else {
        settings.extend([("acks", "1"), ("enable.idempotence", "false")]);
    }
    let producer = Producer::new(ProducerConfig::from_pairs(settings)?).await?;
    if spec.transactional {
        producer.init_transactions().await?;
    }
    producer.partitions_for(spec.topic).await?;
    let filler = kafka_bench::records(spec.size);
    let acked = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let aborted_acked = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut checksum = 0u64;
    // Committed records written, records written (committed or aborted), markers.
    let (mut i, mut n, mut markers) = (0u64, 0u64, 0u64);
    let per_txn = if spec.transactional {
        FILL_TXN
    } else {
        spec.records
    };
    let mut k = 0u64;
    while i < spec.records {
        let abort = spec.transactional && k % ABORT_EVERY == ABORT_EVERY - 1;
        k += 1;
        if spec.transactional {
            producer.begin_transaction()?;
        }
        let mut touched = std::collections::BTreeSet::new();
        let count = if abort {
            per_txn
        } else {
            per_txn.min(spec.records - i)
        };
        for _ in 0..count {
            let mut value = filler.to_vec();
            if let Some(b) = value.first_mut() {
                *b = if abort { ABORTED_MARK } else { (i % 251) as u8 };
            }
            if !abort {
                checksum += touch(&value);
                i += 1;
            }
            let partition = ((n / FILL_CHUNK) % spec.partitions) as i32;
            n += 1;
            touched.insert(partition);
            let (a, f) = if abort {
                (aborted_acked.clone(), failed.clone())
            } else {
                (acked.clone(), failed.clone())
            };
            producer
                .send_with_callback(
                    ProducerRecord::new(spec.topic, value).partition(partition),
                    move |r| {
                        if r.is_ok() {
                            a.fetch_add(1, Ordering::Relaxed);
                        } else {
                            f.fetch_add(1, Ordering::Relaxed);
                        }
                    },
                )
                .await?;
        }
        if spec.transactional {
            markers += touched.len() as u64;
            if abort {
                // In the log first, so a reader has aborted records to skip.
                tokio::time::timeout(Duration::from_secs(120), producer.flush())
                    .await
                    .map_err(|_| "flush did not complete within 120 s")?;
                producer.abort_transaction().await?;
            } else {
                producer.commit_transaction().await?;
            }
        }
    }
    tokio::time::timeout(Duration::from_secs(120), producer.flush())
        .await
        .map_err(|_| "flush did not complete within 120 s")?;
    let seconds = started.elapsed().as_secs_f64();
    producer.close(Duration::from_secs(10)).await;
    let aborted = aborted_acked.load(Ordering::Relaxed);
    println!(
        "FILLED {} {} {checksum} {seconds} {} {aborted}",
        acked.load(Ordering::Relaxed),
        failed.load(Ordering::Relaxed),
        i + aborted + markers,
    );
    Ok(())
}

// ----- the run (parent) -----

/// A filled topic: its name and the checksum of what was written.
struct Filled {
    topic: String,
    checksum: u64,
}

struct Row {
    case: Case,
    ours: PhaseResult,
    librdkafka: PhaseResult,
    /// records/s of every round, ours and librdkafka.
    rounds: Vec<(f64, f64)>,
    /// Every phase read exactly what was written.
    verified: bool,
}

impl Row {
    fn ratio(&self) -> f64 {
        self.ours.per_sec() / self.librdkafka.per_sec().max(1e-9)
    }

    fn cpu_ratio(&self) -> f64 {
        self.ours.cpu_per_m() / self.librdkafka.cpu_per_m().max(1e-9)
    }
}

fn bench(args: &[String]) -> Result<(), Error> {
    let mut mode = Mode::Default;
    let mut json = false;
    let mut check_crcs = false;
    let mut out_path = None;
    let mut broker_path = None;
    let mut dir = None;
    let mut rounds = 5usize;
    let mut only = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--quick" => mode = Mode::Quick,
            "--full" => mode = Mode::Full,
            "--json" => json = true,
            "--check-crcs" => check_crcs = true,
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
    // At most one topic is kept at a time (about 1.2 GB for 10M records of 100 bytes).
    let tmp = TempDir::new(dir, "kafka-consumer-bench")?;
    let max_phase = if mode == Mode::Quick {
        MAX_PHASE / 2
    } else {
        MAX_PHASE
    };
    let extra = std::env::var("CONSUMER_BENCH_OURS_SET").unwrap_or_default();
    println!(
        "consumer bench ({} run, {rounds} round(s)): ours vs librdkafka {}, working in {}{}",
        mode.name(),
        rdkafka::util::get_rdkafka_version().1,
        tmp.0.display(),
        if extra.is_empty() {
            String::new()
        } else {
            format!("; ours also with {extra}")
        }
    );
    let broker = start_broker(&broker_path, &tmp.0)?;
    println!("  broker pid {} on {}", broker.pid, broker.addr);

    let cases: Vec<Case> = cases(mode, check_crcs)
        .into_iter()
        .filter(|c| only.as_ref().is_none_or(|o| c.name().contains(o.as_str())))
        .collect();
    if cases.is_empty() {
        return Err("--only: no case matches".into());
    }
    let mut rows = Vec::new();
    let mut filled: Option<(Case, Filled)> = None;
    for (i, case) in cases.iter().enumerate() {
        // A topic is filled once for the cases that read it, and deleted after the last.
        if filled
            .as_ref()
            .is_none_or(|(c, _)| c.topic_key() != case.topic_key())
        {
            if let Some((_, old)) = filled.take() {
                topics::delete(&broker.addr, &old.topic)?;
            }
            filled = Some((*case, fill_topic(&broker.addr, &broker.pid, i, case)?));
        }
        let Some((_, topic)) = &filled else {
            return Err("no topic".into());
        };
        println!(
            "  [{}/{}] {} ({} records, check.crcs={}):",
            i + 1,
            cases.len(),
            case.name(),
            case.records,
            case.check_crcs
        );
        let mut runs: Vec<(PhaseResult, PhaseResult)> = Vec::new();
        let mut verified = true;
        for round in 0..rounds {
            // Alternate who goes first, so neither always meets a warmer broker.
            let order = if (i + round) % 2 == 0 {
                [Client::Ours, Client::Librdkafka]
            } else {
                [Client::Librdkafka, Client::Ours]
            };
            let mut pair = (PhaseResult::default(), PhaseResult::default());
            for client in order {
                print!("      {:<10} ", client.name());
                std::io::stdout().flush()?;
                let spec = PhaseSpec {
                    client,
                    addr: broker.addr.clone(),
                    topic: topic.topic.clone(),
                    partitions: case.partitions,
                    records: case.records,
                    check_crcs: case.check_crcs,
                    read_committed: case.read_committed,
                    max_phase,
                };
                let r = run_phase(&spec, &broker.pid)?;
                let problems = problems(&r, case, topic.checksum);
                verified &= problems.is_empty();
                let failed_committed = case.read_committed && !problems.is_empty();
                println!(
                    "{:>9.0} rec/s {:>7.1} MB/s, CPU {:.2} s/M records, RSS {:.1} MiB, \
                     first record {:.0} ms, {} fetches{}; other load {:.1} cores{}",
                    r.per_sec(),
                    r.mb_per_sec(),
                    r.cpu_per_m(),
                    r.rss_kib as f64 / 1024.0,
                    r.first_ms,
                    r.fetches,
                    if client == Client::Ours {
                        format!(
                            ", buffered at most {:.1} MiB",
                            r.buffered_max as f64 / 1048576.0
                        )
                    } else {
                        String::new()
                    },
                    r.other_cores,
                    problems
                );
                if failed_committed {
                    return Err(format!(
                        "{} did not read exactly the {} committed records with \
                         read_committed{problems}",
                        client.name(),
                        case.records
                    )
                    .into());
                }
                match client {
                    Client::Ours => pair.0 = r,
                    Client::Librdkafka => pair.1 = r,
                }
            }
            runs.push(pair);
        }
        let row = best_row(*case, runs, verified)?;
        println!(
            "      ours/librdkafka: {:.2}x records/s, {:.2}x CPU per record",
            row.ratio(),
            row.cpu_ratio()
        );
        rows.push(row);
    }
    if let Some((_, old)) = filled.take() {
        topics::delete(&broker.addr, &old.topic)?;
    }
    drop(broker);

    print_table(&rows);
    if rows.iter().any(|r| !r.verified) {
        println!("\nWARNING: some phases did not read exactly what was written (see above).");
    }
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

/// Creates and fills the topic of `case` (the `i`th), checking the log end offsets.
fn fill_topic(addr: &str, broker_pid: &str, i: usize, case: &Case) -> Result<Filled, Error> {
    let topic = format!("cb-{i}-{}-{}p", case.size, case.partitions);
    topics::create(addr, &topic, case.partitions)?;
    print!(
        "  filling {topic}: {} records of {} bytes, compression {}{} (our producer) ... ",
        case.records,
        case.size,
        case.compression,
        if case.read_committed {
            format!(
                ", committed in transactions of {FILL_TXN} with 1 in {ABORT_EVERY} \
                 more aborted"
            )
        } else {
            String::new()
        }
    );
    std::io::stdout().flush()?;
    let args = vec![
        "--fill".into(),
        addr.to_owned(),
        topic.clone(),
        case.size.to_string(),
        case.partitions.to_string(),
        case.records.to_string(),
        case.compression.to_owned(),
        case.read_committed.to_string(),
    ];
    let run = run_self(&args, FILL_DEADLINE, broker_pid)?;
    if !run.status.success() {
        return Err(format!("filling {topic} failed ({})", run.status).into());
    }
    let line = run
        .stdout
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("FILLED "))
        .ok_or("the fill printed no result")?;
    let f: Vec<&str> = line.split_whitespace().collect();
    let [acked, failed, checksum, seconds, expected, aborted] = f[..] else {
        return Err(format!("bad FILLED line: {line}").into());
    };
    let (acked, failed): (u64, u64) = (acked.parse()?, failed.parse()?);
    let (expected, aborted): (u64, u64) = (expected.parse()?, aborted.parse()?);
    let seconds: f64 = seconds.parse()?;
    if acked != case.records || failed != 0 {
        return Err(format!("filling {topic}: {acked} acknowledged, {failed} failed").into());
    }
    let in_log = log_records(addr, &topic, case.partitions)?;
    if in_log != expected {
        return Err(format!(
            "{topic} holds {in_log} offsets, {expected} expected ({} committed, {aborted} \
             aborted records and the markers)",
            case.records
        )
        .into());
    }
    println!(
        "{:.1} s ({:.0} records/s){}",
        seconds,
        (case.records + aborted) as f64 / seconds.max(1e-9),
        if case.read_committed {
            format!(
                "; {aborted} aborted records, {} markers",
                expected - case.records - aborted
            )
        } else {
            String::new()
        }
    );
    Ok(Filled {
        topic,
        checksum: checksum.parse()?,
    })
}

/// Records in the log of `topic` (high minus low watermark, all partitions).
fn log_records(addr: &str, topic: &str, partitions: i32) -> Result<u64, Error> {
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", addr)
        .create()?;
    let mut n = 0;
    for p in 0..partitions {
        let (low, high) = consumer.fetch_watermarks(topic, p, Duration::from_secs(10))?;
        n += u64::try_from(high - low)?;
    }
    Ok(n)
}

/// Anything wrong with a phase, as a suffix for its progress line.
fn problems(r: &PhaseResult, case: &Case, checksum: u64) -> String {
    let mut s = String::new();
    if r.records < case.records {
        s.push_str(&format!(
            "; STOPPED at {} of {} records (time bound)",
            r.records, case.records
        ));
    } else if r.records > case.records {
        s.push_str(&format!(
            "; {} records, {} written",
            r.records, case.records
        ));
    }
    if r.bytes != case.records * case.size as u64 {
        s.push_str(&format!("; {} value bytes", r.bytes));
    }
    if r.records == case.records && r.checksum != checksum {
        s.push_str(&format!(
            "; CHECKSUM {} differs from the written {checksum}",
            r.checksum
        ));
    }
    if r.extra > 0 {
        s.push_str(&format!(
            "; {} MORE records after the {} committed",
            r.extra, case.records
        ));
    }
    s
}

/// Each client's best round (highest records/s): on a shared machine other work only ever
/// slows a phase down.
fn best_row(
    case: Case,
    runs: Vec<(PhaseResult, PhaseResult)>,
    verified: bool,
) -> Result<Row, Error> {
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
        verified,
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
        "\n| {:<23} | {:<10} | {:>10} | {:>10} | {:>7} | {:>11} | {:>9} | {:>8} | {:>7} | {:>9} | {:>9} | {:>8} |",
        "case",
        "client",
        "records",
        "records/s",
        "MB/s",
        "CPU s/M rec",
        "peak RSS",
        "first ms",
        "fetches",
        "rec/fetch",
        "broker µs",
        "ours/rdk"
    );
    println!(
        "|{:-<25}|{:-<12}|{:-<12}|{:-<12}|{:-<9}|{:-<13}|{:-<11}|{:-<10}|{:-<9}|{:-<11}|{:-<11}|{:-<10}|",
        "", "", "", "", "", "", "", "", "", "", "", ""
    );
    for row in rows {
        for (client, r) in [("ours", &row.ours), ("librdkafka", &row.librdkafka)] {
            let ratio = if client == "ours" {
                format!("{:.2}x", row.ratio())
            } else {
                String::new()
            };
            println!(
                "| {:<23} | {:<10} | {:>10} | {:>10.0} | {:>7.1} | {:>11.3} | {:>5.1} MiB | {:>8.0} | {:>7} | {:>9.0} | {:>9.3} | {:>8} |",
                if client == "ours" {
                    row.case.name()
                } else {
                    String::new()
                },
                client,
                r.records,
                r.per_sec(),
                r.mb_per_sec(),
                r.cpu_per_m(),
                r.rss_kib as f64 / 1024.0,
                r.first_ms,
                r.fetches,
                r.records_per_fetch(),
                r.broker_us_per_record(),
                ratio
            );
        }
    }
    println!(
        "\nrecords/s and MB/s (record values): from assign to the last record, best round. \
         CPU: the client process, all threads, over that time. first ms: assign to the first \
         record. fetches: Fetch requests (librdkafka: from its statistics, to within a few). \
         broker µs: broker CPU per record over the phase."
    );
}

fn phase_json(r: &PhaseResult) -> String {
    format!(
        "{{\"records\":{},\"value_bytes\":{},\"checksum\":{},\"seconds\":{},\
         \"records_per_s\":{},\"mb_per_s\":{},\"first_record_ms\":{},\"cpu_s\":{},\
         \"cpu_s_per_million\":{},\"peak_rss_kib\":{},\"fetch_requests\":{},\
         \"records_per_fetch\":{},\"buffered_bytes_max\":{},\"broker_cpu_s\":{},\
         \"broker_us_per_record\":{},\"other_load_cores\":{},\"extra_records\":{}}}",
        r.records,
        r.bytes,
        r.checksum,
        num(r.seconds, 3),
        num(r.per_sec(), 0),
        num(r.mb_per_sec(), 2),
        num(r.first_ms, 1),
        num(r.cpu_s, 2),
        num(r.cpu_per_m(), 3),
        r.rss_kib,
        r.fetches,
        num(r.records_per_fetch(), 1),
        r.buffered_max,
        num(r.broker_cpu_s, 2),
        num(r.broker_us_per_record(), 3),
        num(r.other_cores, 2),
        r.extra
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
                "{{\"case\":\"{}\",\"record_bytes\":{},\"partitions\":{},\"records\":{},\
                 \"compression\":\"{}\",\"check_crcs\":{},\"read_committed\":{},\
                 \"verified\":{},\"ratio\":{},\
                 \"cpu_ratio\":{},\"rounds_records_per_s\":[{}],\"ours\":{},\"librdkafka\":{}}}",
                c.name(),
                c.size,
                c.partitions,
                c.records,
                c.compression,
                c.check_crcs,
                c.read_committed,
                row.verified,
                num(row.ratio(), 3),
                num(row.cpu_ratio(), 3),
                all.join(","),
                phase_json(&row.ours),
                phase_json(&row.librdkafka)
            )
        })
        .collect();
    let head = rows.iter().find(|r| r.case.is_headline());
    let get =
        |f: &dyn Fn(&Row) -> f64, d: usize| head.map_or_else(|| "null".into(), |r| num(f(r), d));
    format!(
        "{{\"bench\":\"consumer\",\"librdkafka\":\"{}\",\"mode\":\"{}\",\"rounds\":{rounds},\
         \"settings\":\"fetch.min.bytes=1 fetch.max.wait.ms=500 \
         max.partition.fetch.bytes=1048576 fetch.max.bytes=52428800 check.crcs as per case \
         64 MiB fetched ahead (ours fetch.buffer.max.bytes, librdkafka \
         queued.max.messages.kbytes); socket receive buffer: OS default; librdkafka fetch.queue.backoff.ms={FETCH_QUEUE_BACKOFF_MS}; \
         assign from the beginning; read_committed case: isolation.level=read_committed on \
         both, topic of committed transactions of {FILL_TXN} records and 1 in {ABORT_EVERY} \
         aborted\",\
         \"headline\":\"{}\",\"ours_records_per_s\":{},\"librdkafka_records_per_s\":{},\
         \"ratio\":{},\"ours_mb_per_s\":{},\"librdkafka_mb_per_s\":{},\
         \"ours_cpu_s_per_million\":{},\"librdkafka_cpu_s_per_million\":{},\
         \"ours_peak_rss_kib\":{},\"librdkafka_peak_rss_kib\":{},\"verified\":{},\
         \"cases\":[{}]}}",
        rdkafka::util::get_rdkafka_version().1,
        mode.name(),
        head.map_or_else(|| "100 B 8p".into(), |r| r.case.name()),
        get(&|r| r.ours.per_sec(), 0),
        get(&|r| r.librdkafka.per_sec(), 0),
        get(&|r| r.ratio(), 3),
        get(&|r| r.ours.mb_per_sec(), 2),
        get(&|r| r.librdkafka.mb_per_sec(), 2),
        get(&|r| r.ours.cpu_per_m(), 3),
        get(&|r| r.librdkafka.cpu_per_m(), 3),
        get(&|r| r.ours.rss_kib as f64, 0),
        get(&|r| r.librdkafka.rss_kib as f64, 0),
        rows.iter().all(|r| r.verified),
        cases.join(",")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn touch_reads_first_and_last_byte() {
        assert_eq!(touch(&[]), 0);
        assert_eq!(touch(&[7]), 7);
        assert_eq!(touch(&[1, 200, 3]), 4);
    }

    #[test]
    fn result_line_roundtrips() {
        let r = PhaseResult {
            records: 10,
            bytes: 1000,
            checksum: 77,
            seconds: 1.5,
            first_ms: 3.25,
            cpu_s: 0.5,
            rss_kib: 4096,
            fetches: 3,
            buffered_max: 12345,
            cpu_total_s: 0.75,
            broker_cpu_s: 0.25,
            other_cores: 0.1,
            extra: 2,
        };
        let back = PhaseResult::from_line(&r.to_line()).unwrap();
        assert_eq!(back.to_line(), r.to_line());
    }

    #[test]
    fn one_read_committed_case_of_its_own_topic() {
        for mode in [Mode::Quick, Mode::Default, Mode::Full] {
            let cs = cases(mode, false);
            let rc: Vec<&Case> = cs.iter().filter(|c| c.read_committed).collect();
            assert_eq!(rc.len(), 1);
            assert!(!rc[0].is_headline() && rc[0].name().ends_with("read_committed"));
            assert!(
                cs.iter()
                    .filter(|c| !c.read_committed)
                    .all(|c| c.topic_key() != rc[0].topic_key())
            );
        }
    }

    #[test]
    fn cases_share_topics_only_when_adjacent() {
        for mode in [Mode::Quick, Mode::Default, Mode::Full] {
            let cs = cases(mode, false);
            assert!(cs[0].is_headline());
            let mut seen = Vec::new();
            for w in cs.windows(2) {
                if w[0].topic_key() != w[1].topic_key() {
                    seen.push(w[0].topic_key());
                    assert!(!seen.contains(&w[1].topic_key()));
                }
            }
        }
    }
}
