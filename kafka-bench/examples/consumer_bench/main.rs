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
//!     --broker target/release/kafka-broker [--apache-kafka | --tls] [--quick|--full] [--rounds N] \
//!     [--check-crcs] \
//!     [--json] [--out PATH] [--dir PATH] [--only TEXT]
//! ```
//!
//! `--apache-kafka` runs every case against Apache Kafka's own broker (one KRaft node with
//! Kafka's server JVM settings, from the jars `kafka-peers/fetch` caches) instead of ours, so
//! that the client ratios are also measured on the reference broker.
//!
//! `--only TEXT` runs only the cases whose name contains TEXT (e.g. `read_committed`).
//!
//! `--tls` gives the broker a second listener, `SSL` (a certificate made for the run, a PEM
//! keystore), and runs every read phase over plaintext and over TLS: ours with
//! `security.protocol=SSL` and the run's CA as a PEM truststore, librdkafka with
//! `security.protocol=ssl` and `ssl.ca.location`, every other setting the same (topics are
//! filled over plaintext). Within a round the two securities alternate which goes first, and
//! within each the two clients as above; the table gives the TLS rows (each client's best
//! round) next to the plaintext ones, with ours/librdkafka over TLS and TLS/plaintext per
//! client. The run says which path the broker's TLS fetches take on this kernel (`TLS fetch:
//! copied (no kTLS)` when `/proc/sys/net/ipv4/tcp_available_ulp` has no `tls`).
//!
//! With `--json` the last line printed is the whole result as one JSON object; `--out` writes
//! the same object to a file. For experiments: `CONSUMER_BENCH_OURS_SET=key=value,...` adds
//! settings to ours (e.g. `max.poll.records=5000`), `CONSUMER_BENCH_RUNTIME=current` runs ours
//! on a current-thread runtime.
//!
//! Files: `cases.rs` (the cases), `phase.rs` (one measured phase, a child process),
//! `fill.rs` (filling a topic, a child process), `report.rs` (the table and the JSON); this
//! one: the arguments, the constants and the run (the parent).

mod cases;
mod fill;
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
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer as _};

use cases::{Case, Client, Mode, cases};
use fill::fill_main;
use phase::{PhaseResult, PhaseSpec, phase_main};
use report::{print_table, to_json};

/// Longest a read phase may run (`--quick`: half).
pub(crate) const MAX_PHASE: Duration = Duration::from_secs(60);
/// A phase child still running after this is killed.
pub(crate) const CHILD_DEADLINE: Duration = Duration::from_secs(150);
/// A fill child still running after this is killed.
pub(crate) const FILL_DEADLINE: Duration = Duration::from_secs(600);
/// librdkafka's `statistics.interval.ms` (to count its Fetch requests).
pub(crate) const STATS_INTERVAL: Duration = Duration::from_millis(500);
/// Bytes fetched ahead of the application, both clients.
pub(crate) const BUFFER_BYTES: usize = 64 * 1024 * 1024;
/// Consecutive records per partition when filling.
pub(crate) const FILL_CHUNK: u64 = 100;
/// librdkafka's `fetch.queue.backoff.ms`: how soon it fetches again after its queue was
/// full (ours fetches as soon as the application frees space).
pub(crate) const FETCH_QUEUE_BACKOFF_MS: u32 = 10;
/// The poll timeout of both clients.
pub(crate) const POLL: Duration = Duration::from_millis(100);
/// Records per transaction when filling the read_committed case's topic.
pub(crate) const FILL_TXN: u64 = 1000;
/// Every this many transactions of that fill, one is aborted.
pub(crate) const ABORT_EVERY: u64 = 10;
/// The first byte of every aborted value (committed ones start with 0 to 250).
pub(crate) const ABORTED_MARK: u8 = 255;
/// How long a read_committed phase polls on, untimed, after the committed count.
pub(crate) const DRAIN: Duration = Duration::from_millis(500);

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

/// A filled topic: its name and the checksum of what was written.
struct Filled {
    topic: String,
    checksum: u64,
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

/// `a / b` of records/s (the TLS/plaintext ratio of one client).
pub(crate) fn speed_ratio(a: &PhaseResult, b: &PhaseResult) -> f64 {
    a.per_sec() / b.per_sec().max(1e-9)
}

pub(crate) struct Row {
    pub(crate) case: Case,
    pub(crate) ours: PhaseResult,
    pub(crate) librdkafka: PhaseResult,
    /// records/s of every round, ours and librdkafka.
    pub(crate) rounds: Vec<(f64, f64)>,
    /// Every phase read exactly what was written.
    pub(crate) verified: bool,
    /// `--tls`: the same case over TLS, in the same rounds.
    pub(crate) tls: Option<Pair>,
}

impl Row {
    pub(crate) fn ratio(&self) -> f64 {
        self.ours.per_sec() / self.librdkafka.per_sec().max(1e-9)
    }

    pub(crate) fn cpu_ratio(&self) -> f64 {
        self.ours.cpu_per_m() / self.librdkafka.cpu_per_m().max(1e-9)
    }
}

fn bench(args: &[String]) -> Result<(), Error> {
    let mut mode = Mode::Default;
    let mut json = false;
    let mut check_crcs = false;
    let mut out_path = None;
    let mut broker_path = None;
    let mut apache_kafka = false;
    let mut dir = None;
    let mut rounds = 5usize;
    let mut only = None;
    let mut tls = false;
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
    let tls_fetch = tls.as_ref().map(|_| tls_fetch_path());
    if let (Some(files), Some(addr)) = (&tls, &broker.tls_addr) {
        println!(
            "  TLS listener on {addr} (certificate for localhost and 127.0.0.1); TLS fetch: {}",
            tls_fetch.unwrap_or("?")
        );
        securities.push((files.security(), addr.clone()));
    }

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
        // runs[s]: the rounds over securities[s].
        let mut runs: Vec<Vec<(PhaseResult, PhaseResult)>> =
            securities.iter().map(|_| Vec::new()).collect();
        let mut verified = true;
        for round in 0..rounds {
            // With --tls, alternate which security goes first too.
            let mut sec_order: Vec<usize> = (0..securities.len()).collect();
            if round % 2 == 1 {
                sec_order.reverse();
            }
            for s in sec_order {
                let (security, addr) = &securities[s];
                // Alternate who goes first, so neither always meets a warmer broker.
                let order = if (i + round) % 2 == 0 {
                    [Client::Ours, Client::Librdkafka]
                } else {
                    [Client::Librdkafka, Client::Ours]
                };
                let mut pair = (PhaseResult::default(), PhaseResult::default());
                for client in order {
                    let label = if securities.len() > 1 {
                        format!("{} {}", client.name(), security.name())
                    } else {
                        client.name().to_owned()
                    };
                    print!("      {label:<20} ");
                    std::io::stdout().flush()?;
                    let spec = PhaseSpec {
                        client,
                        addr: addr.clone(),
                        topic: topic.topic.clone(),
                        partitions: case.partitions,
                        records: case.records,
                        check_crcs: case.check_crcs,
                        read_committed: case.read_committed,
                        max_phase,
                        security: security.clone(),
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
                            "{label} did not read exactly the {} committed records with \
                             read_committed{problems}",
                            case.records
                        )
                        .into());
                    }
                    match client {
                        Client::Ours => pair.0 = r,
                        Client::Librdkafka => pair.1 = r,
                    }
                }
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
            verified,
            tls: over_tls,
        });
    }
    if let Some((_, old)) = filled.take() {
        topics::delete(&broker.addr, &old.topic)?;
    }
    drop(broker);

    print_table(&rows);
    if rows.iter().any(|r| !r.verified) {
        println!("\nWARNING: some phases did not read exactly what was written (see above).");
    }
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
    use crate::phase::touch;

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
    fn phase_spec_roundtrips_with_its_security() {
        for security in [
            Security::Plaintext,
            Security::Ssl {
                ca_file: "/tmp/run/tls/bench-ca.pem".into(),
            },
        ] {
            let spec = PhaseSpec {
                client: Client::Ours,
                addr: "127.0.0.1:9093".into(),
                topic: "t".into(),
                partitions: 8,
                records: 1000,
                check_crcs: false,
                read_committed: true,
                max_phase: Duration::from_millis(30_000),
                security: security.clone(),
            };
            let args = spec.to_args();
            let back = PhaseSpec::from_args(&args[1..]).unwrap();
            assert_eq!(back.to_args(), args);
            assert_eq!(back.security, security);
        }
        // A phase without its security argument is refused.
        let spec = PhaseSpec::from_args(&["ours".into(), "a".into()]);
        assert!(spec.is_err());
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
