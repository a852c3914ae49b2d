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
//!     --broker target/release/kafka-broker [--apache-kafka | --tls] [--quick|--full] [--rounds N] \
//!     [--json] [--out PATH] [--dir PATH] [--only TEXT]
//! ```
//!
//! `--apache-kafka` runs every case against Apache Kafka's own broker (one KRaft node with
//! Kafka's server JVM settings, from the jars `kafka-peers/fetch` caches) instead of ours, so
//! that the client ratios are also measured on the reference broker.
//!
//! `--only TEXT` runs only the cases whose name contains TEXT (e.g. `txns`).
//!
//! `--tls` gives the broker a second listener, `SSL` (a certificate made for the run, a PEM
//! keystore), and runs every phase over plaintext and over TLS: ours with
//! `security.protocol=SSL` and the run's CA as a PEM truststore, librdkafka with
//! `security.protocol=ssl` and `ssl.ca.location`, every other setting the same. Within a round
//! the two securities alternate which goes first, and within each the two clients as above;
//! the table gives the TLS rows (each client's best round) next to the plaintext ones, with
//! ours/librdkafka over TLS and TLS/plaintext per client.
//!
//! With `--json` the last line printed is the whole result as one JSON object; `--out` writes
//! the same object to a file. For experiments: `PRODUCER_BENCH_RUNTIME=current` runs our
//! producer on a current-thread runtime instead, `PRODUCER_BENCH_RDKAFKA_SET=key=value,...`
//! sets more (or other) settings on librdkafka.
//!
//! Files: `cases.rs` (the cases), `phase.rs` (one measured phase, a child process, and the
//! delivery counts), `ours.rs` and `librdkafka.rs` (the phase of each client),
//! `histogram.rs` (the latency histogram), `report.rs` (the table and the JSON); this one:
//! the arguments, the constants and the run (the parent).

mod cases;
mod histogram;
mod librdkafka;
mod ours;
mod phase;
mod report;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use kafka_bench::harness::{
    Error, TempDir, run_self, start_apache_kafka, start_broker_with, topics,
};
use kafka_bench::tls::{BrokerTls, Security, tls_fetch_path};

use cases::{Case, Client, Mode, cases};
use phase::{PhaseResult, PhaseSpec, phase_main};
use report::{print_table, to_json};

/// Longest the sending part of a throughput phase may run (`--quick`: half).
pub(crate) const MAX_PHASE: Duration = Duration::from_secs(10);
/// Longest a phase may wait for its last acknowledgements.
pub(crate) const FLUSH_TIMEOUT: Duration = Duration::from_secs(60);
/// A phase child still running after this is killed.
pub(crate) const CHILD_DEADLINE: Duration = Duration::from_secs(150);
/// librdkafka's `statistics.interval.ms` (to count its Produce requests).
pub(crate) const STATS_INTERVAL: Duration = Duration::from_millis(500);
/// Distinct keys of the keyed cases.
pub(crate) const KEYS: usize = 1024;

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

/// One case over one security: each client's best round, and every round's records/s.
pub(crate) struct Pair {
    pub(crate) ours: PhaseResult,
    pub(crate) librdkafka: PhaseResult,
    /// records/s of every round, ours and librdkafka.
    pub(crate) rounds: Vec<(f64, f64)>,
}

impl Pair {
    /// ours/librdkafka records/s.
    pub(crate) fn ratio(&self) -> f64 {
        self.ours.per_sec() / self.librdkafka.per_sec().max(1e-9)
    }

    /// ours/librdkafka CPU per record.
    pub(crate) fn cpu_ratio(&self) -> f64 {
        self.ours.cpu_per_m() / self.librdkafka.cpu_per_m().max(1e-9)
    }
}

pub(crate) struct Row {
    pub(crate) case: Case,
    pub(crate) ours: PhaseResult,
    pub(crate) librdkafka: PhaseResult,
    /// records/s of every round, ours and librdkafka.
    pub(crate) rounds: Vec<(f64, f64)>,
    /// `--tls`: the same case over TLS, in the same rounds.
    pub(crate) tls: Option<Pair>,
}

impl Row {
    pub(crate) fn ratio(&self) -> f64 {
        self.ours.per_sec() / self.librdkafka.per_sec().max(1e-9)
    }
}

/// `a / b` of records/s (the TLS/plaintext ratio of one client).
pub(crate) fn speed_ratio(a: &PhaseResult, b: &PhaseResult) -> f64 {
    a.per_sec() / b.per_sec().max(1e-9)
}

fn bench(args: &[String]) -> Result<(), Error> {
    let mut mode = Mode::Default;
    let mut json = false;
    let mut out_path = None;
    let mut broker_path = None;
    let mut apache_kafka = false;
    let mut dir = None;
    let mut rounds = 1usize;
    let mut only = None;
    let mut tls = false;
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
            "--apache-kafka" => apache_kafka = true,
            "--tls" => tls = true,
            "--dir" => dir = Some(PathBuf::from(it.next().ok_or("--dir needs a path")?)),
            "--only" => only = Some(it.next().ok_or("--only needs a text")?.clone()),
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    let broker_path = broker_path.ok_or("say where the broker binary is: --broker PATH")?;
    if tls && apache_kafka {
        return Err("--tls runs against our broker only, not --apache-kafka".into());
    }
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
    let tls = if tls {
        Some(BrokerTls::new(&tmp.0)?)
    } else {
        None
    };
    // `--apache-kafka`: the same cases against Apache Kafka's own broker instead of ours.
    let broker = if apache_kafka {
        start_apache_kafka(&tmp.0)?
    } else {
        start_broker_with(&broker_path, &tmp.0, tls.as_ref())?
    };
    println!("  broker pid {} on {}", broker.pid, broker.addr);
    // Each security with the address its clients bootstrap from.
    let mut securities = vec![(Security::Plaintext, broker.addr.clone())];
    if let (Some(files), Some(addr)) = (&tls, &broker.tls_addr) {
        println!(
            "  TLS listener on {addr} (certificate for localhost and 127.0.0.1); TLS fetch: {}",
            tls_fetch_path()
        );
        securities.push((files.security(), addr.clone()));
    }

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
        // runs[s]: the rounds over securities[s].
        let mut runs: Vec<Vec<(PhaseResult, PhaseResult)>> =
            securities.iter().map(|_| Vec::new()).collect();
        for round in 0..rounds {
            // With --tls, alternate which security goes first too.
            let mut sec_order: Vec<usize> = (0..securities.len()).collect();
            if round % 2 == 1 {
                sec_order.reverse();
            }
            for s in sec_order {
                let (security, addr) = &securities[s];
                let pair = run_pair(&RoundSpec {
                    broker_pid: &broker.pid,
                    admin_addr: &broker.addr,
                    addr,
                    security,
                    case,
                    i,
                    round,
                    max_phase,
                    named: securities.len() > 1,
                })?;
                runs[s].push(pair);
            }
        }
        let mut pairs = runs.into_iter().map(best_pair);
        let plain = pairs.next().ok_or("no rounds")??;
        let over_tls = pairs.next().transpose()?;
        println!(
            "      ours/librdkafka: {:.2}x records/s, {:.2}x CPU per record",
            plain.ratio(),
            plain.cpu_ratio()
        );
        if let Some(t) = &over_tls {
            println!(
                "      over TLS: ours/librdkafka {:.2}x records/s, {:.2}x CPU per record; \
                 TLS/plaintext records/s: ours {:.2}x, librdkafka {:.2}x",
                t.ratio(),
                t.cpu_ratio(),
                speed_ratio(&t.ours, &plain.ours),
                speed_ratio(&t.librdkafka, &plain.librdkafka)
            );
        }
        rows.push(Row {
            case: *case,
            ours: plain.ours,
            librdkafka: plain.librdkafka,
            rounds: plain.rounds,
            tls: over_tls,
        });
    }
    drop(broker);

    print_table(&rows);
    let tls_fetch = tls.as_ref().map(|_| tls_fetch_path());
    if let Some(path) = tls_fetch {
        println!("TLS fetch: {path}");
    }
    let obj = to_json(&rows, mode, rounds, tls_fetch);
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

/// One round of one case over one security: both clients, alternating who goes first.
struct RoundSpec<'a> {
    broker_pid: &'a str,
    /// The plaintext listener, for creating and deleting topics.
    admin_addr: &'a str,
    /// The listener the clients bootstrap from.
    addr: &'a str,
    security: &'a Security,
    case: &'a Case,
    /// The case's index.
    i: usize,
    round: usize,
    max_phase: Duration,
    /// Name the security in topics and progress lines (`--tls`).
    named: bool,
}

/// Runs both clients' phases of one round (ours, librdkafka).
fn run_pair(r: &RoundSpec<'_>) -> Result<(PhaseResult, PhaseResult), Error> {
    // Alternate who goes first, so neither always meets a warmer broker.
    let order = if (r.i + r.round) % 2 == 0 {
        [Client::Ours, Client::Librdkafka]
    } else {
        [Client::Librdkafka, Client::Ours]
    };
    let mut pair = (PhaseResult::default(), PhaseResult::default());
    for client in order {
        let (topic, label) = if r.named {
            (
                format!(
                    "pb-{}-{}-{}-{}",
                    r.i,
                    r.round,
                    client.name(),
                    r.security.name()
                ),
                format!("{} {}", client.name(), r.security.name()),
            )
        } else {
            (
                format!("pb-{}-{}-{}", r.i, r.round, client.name()),
                client.name().to_owned(),
            )
        };
        topics::create(r.admin_addr, &topic, r.case.partitions)?;
        print!("      {label:<20} ");
        std::io::stdout().flush()?;
        let spec = PhaseSpec {
            client,
            addr: r.addr.to_owned(),
            topic,
            case: *r.case,
            max_phase: r.max_phase,
            security: r.security.clone(),
        };
        let res = run_phase(&spec, r.broker_pid)?;
        // Give the space back (a default run writes a few GB in all).
        topics::delete(r.admin_addr, &spec.topic)?;
        let case = r.case;
        println!(
            "{:>9.0} rec/s {:>7.1} MB/s{}, CPU {:.2} s/M records, RSS {:.1} MiB, \
             ack p50 {:.2} ms p99 {:.2} ms; other load {:.1} cores{}",
            res.per_sec(),
            res.mb_per_sec(case.size),
            if case.txn > 0 {
                format!(", {:.0} commits/s", res.commits_per_sec())
            } else {
                String::new()
            },
            res.cpu_per_m(),
            res.rss_kib as f64 / 1024.0,
            res.p50_ms,
            res.p99_ms,
            res.other_cores,
            problems(&res, case)
        );
        match client {
            Client::Ours => pair.0 = res,
            Client::Librdkafka => pair.1 = res,
        }
    }
    Ok(pair)
}

/// Each client's best round (highest records/s): on a shared machine other work only ever
/// slows a phase down.
fn best_pair(runs: Vec<(PhaseResult, PhaseResult)>) -> Result<Pair, Error> {
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
    Ok(Pair {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::histogram::{BUCKETS, Histogram};

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
            security: Security::Ssl {
                ca_file: "/tmp/ca.pem".into(),
            },
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
