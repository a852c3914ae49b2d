//! One measured phase, in a child process of its own (this binary with `--phase ...`): one
//! client reading one topic to its known count, and what it measured as one `RESULT` line.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use kafka_bench::harness::{Error, cpu_since, extra_settings};
use kafka_bench::tls::Security;
use kafka_bench::{cpu_time_of, peak_rss_kib_of};
use kafka_consumer::{Consumer, ConsumerConfig};
use rdkafka::client::ClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer as _, ConsumerContext};
use rdkafka::message::Message as _;
use rdkafka::statistics::Statistics;
use rdkafka::{Offset, TopicPartitionList};

use crate::cases::Client;
use crate::{BUFFER_BYTES, DRAIN, FETCH_QUEUE_BACKOFF_MS, POLL, STATS_INTERVAL};

/// What a phase child is asked to do.
pub(crate) struct PhaseSpec {
    pub(crate) client: Client,
    pub(crate) addr: String,
    pub(crate) topic: String,
    pub(crate) partitions: i32,
    pub(crate) records: u64,
    pub(crate) check_crcs: bool,
    pub(crate) read_committed: bool,
    pub(crate) max_phase: Duration,
    /// Plaintext, or TLS to the broker's `SSL` listener (`addr` is then that listener's).
    pub(crate) security: Security,
}

impl PhaseSpec {
    pub(crate) fn to_args(&self) -> Vec<String> {
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
            self.security.to_arg(),
        ]
    }

    pub(crate) fn from_args(args: &[String]) -> Result<Self, Error> {
        let [
            client,
            addr,
            topic,
            partitions,
            records,
            crcs,
            committed,
            max_ms,
            security,
        ] = args
        else {
            return Err("--phase: expected 9 arguments".into());
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
            security: Security::parse_arg(security)?,
        })
    }
}

/// What a phase measured.
#[derive(Clone, Debug, Default)]
pub(crate) struct PhaseResult {
    pub(crate) records: u64,
    /// Value bytes.
    pub(crate) bytes: u64,
    /// Sum of the first and last byte of every value.
    pub(crate) checksum: u64,
    /// From `assign` to the last record.
    pub(crate) seconds: f64,
    /// From `assign` to the first record, ms.
    pub(crate) first_ms: f64,
    /// CPU time of the client process (all threads) over `seconds`.
    pub(crate) cpu_s: f64,
    pub(crate) rss_kib: u64,
    /// Fetch requests answered (librdkafka: from its statistics, to within a request or two).
    pub(crate) fetches: u64,
    /// Ours only: the most record bytes buffered at once.
    pub(crate) buffered_max: u64,
    /// CPU time of the client process over its whole life.
    pub(crate) cpu_total_s: f64,
    /// Set by the parent: broker CPU over the phase child's whole life.
    pub(crate) broker_cpu_s: f64,
    /// Set by the parent: cores kept busy by everything else on the machine (neither this
    /// client nor the broker) over the phase child's life; a noise indicator.
    pub(crate) other_cores: f64,
    /// read_committed: records that came after the committed count (in `DRAIN`).
    pub(crate) extra: u64,
}

impl PhaseResult {
    pub(crate) const FIELDS: usize = 13;

    pub(crate) fn to_line(&self) -> String {
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

    pub(crate) fn from_line(line: &str) -> Result<Self, Error> {
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

    pub(crate) fn per_sec(&self) -> f64 {
        self.records as f64 / self.seconds.max(1e-9)
    }

    pub(crate) fn mb_per_sec(&self) -> f64 {
        self.bytes as f64 / self.seconds.max(1e-9) / 1e6
    }

    /// Client CPU seconds per million records.
    pub(crate) fn cpu_per_m(&self) -> f64 {
        self.cpu_s * 1e6 / self.records.max(1) as f64
    }

    pub(crate) fn records_per_fetch(&self) -> f64 {
        self.records as f64 / self.fetches.max(1) as f64
    }

    pub(crate) fn broker_us_per_record(&self) -> f64 {
        self.broker_cpu_s * 1e6 / self.records.max(1) as f64
    }
}

/// What the application does with every value: counts it and reads its first and last byte.
pub(crate) fn touch(v: &[u8]) -> u64 {
    match v {
        [] => 0,
        [a] => u64::from(*a),
        [a, .., b] => u64::from(*a) + u64::from(*b),
    }
}

/// Records, value bytes and checksum read so far.
#[derive(Default)]
pub(crate) struct Tally {
    pub(crate) records: u64,
    pub(crate) bytes: u64,
    pub(crate) checksum: u64,
    pub(crate) first: Option<Duration>,
}

impl Tally {
    #[inline]
    pub(crate) fn add(&mut self, value: Option<&[u8]>) {
        self.records += 1;
        if let Some(v) = value {
            self.bytes += v.len() as u64;
            self.checksum += touch(v);
        }
    }
}

pub(crate) fn phase_main(args: &[String]) -> Result<(), Error> {
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

pub(crate) async fn ours(spec: &PhaseSpec) -> Result<PhaseResult, Error> {
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
    settings.extend(spec.security.ours_settings());
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
pub(crate) static RD_FETCH_REQUESTS: AtomicU64 = AtomicU64::new(0);
pub(crate) static RD_STATS_EVENTS: AtomicU64 = AtomicU64::new(0);

pub(crate) struct Stats;

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
    for (k, v) in spec.security.rdkafka_settings() {
        cfg.set(k, v);
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
