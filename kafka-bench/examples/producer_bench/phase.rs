//! One measured phase, in a child process of its own (this binary with `--phase ...`): what
//! it is asked to do, what it measured (one `RESULT` line), and the delivery counts both
//! clients report into.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use kafka_bench::harness::Error;
use kafka_bench::tls::Security;
use kafka_bench::{cpu_time_of, peak_rss_kib_of};

use crate::KEYS;
use crate::cases::{Case, Client};
use crate::histogram::{BUCKETS, Histogram};
use crate::librdkafka::librdkafka;
use crate::ours::ours;

/// What a phase child is asked to do.
pub(crate) struct PhaseSpec {
    pub(crate) client: Client,
    pub(crate) addr: String,
    pub(crate) topic: String,
    pub(crate) case: Case,
    pub(crate) max_phase: Duration,
    /// Plaintext, or TLS to the broker's `SSL` listener (`addr` is then that listener's).
    pub(crate) security: Security,
}

impl PhaseSpec {
    pub(crate) fn to_args(&self) -> Vec<String> {
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
            self.security.to_arg(),
        ]
    }

    pub(crate) fn from_args(args: &[String]) -> Result<Self, Error> {
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
            security,
        ] = args
        else {
            return Err("--phase: expected 12 arguments".into());
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
            security: Security::parse_arg(security)?,
        })
    }

    /// The settings both clients share, by Kafka's key names.
    pub(crate) fn common_settings(&self) -> Vec<(&'static str, String)> {
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
    pub(crate) fn txn_partition(&self, j: u64) -> i32 {
        (j % self.case.partitions.max(1) as u64) as i32
    }
}

/// What a phase measured.
#[derive(Clone, Debug, Default)]
pub(crate) struct PhaseResult {
    pub(crate) sent: u64,
    pub(crate) acked: u64,
    pub(crate) failed: u64,
    /// From the first send to the last acknowledgement.
    pub(crate) seconds: f64,
    /// CPU time of the client process (all threads) over `seconds`.
    pub(crate) cpu_s: f64,
    pub(crate) rss_kib: u64,
    pub(crate) p50_ms: f64,
    pub(crate) p99_ms: f64,
    pub(crate) p999_ms: f64,
    pub(crate) max_ms: f64,
    /// Produce requests sent (librdkafka: from its statistics, to within a request or two).
    pub(crate) requests: u64,
    /// Ours only: records per batch.
    pub(crate) records_per_batch: f64,
    /// Set by the parent: broker CPU over the phase child's whole life.
    pub(crate) broker_cpu_s: f64,
    /// CPU time of the client process over its whole life.
    pub(crate) cpu_total_s: f64,
    /// Set by the parent: cores kept busy by everything else on the machine (neither this
    /// client nor the broker) over the phase child's life; a noise indicator.
    pub(crate) other_cores: f64,
    /// Transactions committed (transactional cases).
    pub(crate) commits: u64,
}

impl PhaseResult {
    pub(crate) const FIELDS: usize = 16;

    pub(crate) fn to_line(&self) -> String {
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

    pub(crate) fn per_sec(&self) -> f64 {
        self.acked as f64 / self.seconds.max(1e-9)
    }

    pub(crate) fn commits_per_sec(&self) -> f64 {
        self.commits as f64 / self.seconds.max(1e-9)
    }

    pub(crate) fn mb_per_sec(&self, size: usize) -> f64 {
        self.per_sec() * size as f64 / 1e6
    }

    /// Client CPU seconds per million records.
    pub(crate) fn cpu_per_m(&self) -> f64 {
        self.cpu_s * 1e6 / self.acked.max(1) as f64
    }

    pub(crate) fn records_per_request(&self) -> f64 {
        self.acked as f64 / self.requests.max(1) as f64
    }

    pub(crate) fn broker_us_per_record(&self) -> f64 {
        self.broker_cpu_s * 1e6 / self.acked.max(1) as f64
    }
}

pub(crate) static LATENCY: Histogram = Histogram {
    counts: [const { AtomicU64::new(0) }; BUCKETS],
};
pub(crate) static ACKED: AtomicU64 = AtomicU64::new(0);
pub(crate) static FAILED: AtomicU64 = AtomicU64::new(0);

/// A record's delivery report: `sent_ns` is when it was handed to the client, in ns after
/// `epoch`.
pub(crate) fn delivered(epoch: Instant, sent_ns: u64, ok: bool) {
    if ok {
        ACKED.fetch_add(1, Ordering::Relaxed);
        let now = epoch.elapsed().as_nanos() as u64;
        LATENCY.record(now.saturating_sub(sent_ns));
    } else {
        FAILED.fetch_add(1, Ordering::Relaxed);
    }
}

pub(crate) fn reset_counts() {
    ACKED.store(0, Ordering::Relaxed);
    FAILED.store(0, Ordering::Relaxed);
    LATENCY.reset();
}

pub(crate) fn phase_main(args: &[String]) -> Result<(), Error> {
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

pub(crate) fn keys() -> Vec<String> {
    (0..KEYS).map(|k| format!("key-{k:06}")).collect()
}

/// Records due by now at `rate` per second.
pub(crate) fn due(rate: u64, started: Instant) -> u64 {
    (started.elapsed().as_nanos() * u128::from(rate) / 1_000_000_000) as u64
}
