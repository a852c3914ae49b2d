//! What replication costs on a cluster of three combined `kafka-broker` nodes, each a child
//! process on 127.0.0.1 (started, killed and restarted by `kafka_bench::cluster`), measured
//! with our own clients (`kafka-producer`, `kafka-consumer`):
//!
//! 1. **Produce throughput, acks=all, replication factor 3 against 1**: in each round one
//!    phase per case, in alternating order (RF1 then RF3, then RF3 then RF1, ...; the machine
//!    is noisy, so the cases are compared round by round), each on a fresh topic of
//!    `PARTITIONS` partitions (the RF3 one with `min.insync.replicas=2`) deleted after its
//!    phase. A phase sends a fixed count of fixed-size records (linger.ms=5, batch.size 16
//!    KiB, no compression, idempotent) as fast as the producer takes them, after one
//!    acknowledged record per partition (connections and producer id before the clock), and
//!    ends when the last is acknowledged. Reported per case: records/s, MB/s (record values)
//!    and broker CPU per record (utime + stime of the three broker processes from
//!    `/proc/PID/stat` over the phase, divided by the records), each as median / min / max
//!    over the rounds, and the ratio RF3/RF1 of each round.
//! 2. **End-to-end latency at a fixed rate**, acks=all, RF3 (`min.insync.replicas=2`), one
//!    partition: 100-byte records at `RATE` per second (linger.ms=0), each carrying its send
//!    time; our consumer, assigned the partition and fetching before the first record is
//!    sent, notes when each arrives (a consumer sees a record only once the high watermark
//!    covers it, so once the followers have it). p50 / p99 / p99.9 / max, and the producer's
//!    send-to-acknowledgement latency beside it.
//! 3. **Time to a new leader after SIGKILL**: each round creates a topic (RF3,
//!    `min.insync.replicas=2`, 3 partitions), picks a partition led by a node that is not the
//!    active controller (so the controller does not move too), has a producer (acks=all,
//!    linger.ms=0) get one record acknowledged there, SIGKILLs that leader, and times from
//!    the kill until a record sent to that partition is acknowledged (the producer retries on
//!    its own: retry.backoff.ms=20, retry.backoff.max.ms=100, reconnect.backoff.ms=20,
//!    reconnect.backoff.max.ms=100) and, polled at the same time every 15 ms, until a
//!    surviving broker's Metadata names a live leader for it. The controller moves the
//!    leadership once the dead broker's session expires, so both are mostly
//!    `broker.session.timeout.ms` (`--session-timeout-ms`, default 3000; heartbeats every
//!    500 ms or a third of it). The killed node is restarted once fenced and the next round
//!    waits until it is back in the cluster; every round works on a topic created after
//!    the last restart (whether a restarted replica rejoins the ISR is not this benchmark's
//!    business). min / median / max over the rounds.
//!
//! `--rounds N` (default 5, `--quick` 3) sets the rounds of phases 1 and 3; `--quick` also
//! sends fewer records (`RECORDS_QUICK` instead of `RECORDS` per phase) and runs phase 2 for
//! 3 s instead of 10. Everything is bounded: a phase sends for at most `MAX_SEND` and waits
//! `FLUSH_LIMIT` for the acknowledgements; a failover round has 60 s (plus twice the session
//! timeout above 3 s). A phase that fails stops the run with the tail of every node's log.
//! Each node's peak RSS (`VmHWM`, the highest over its processes) is reported at the end.
//! The nodes' data goes to a fresh directory under the temp dir (or `--dir`, on disk: the
//! followers' writes are part of the cost), removed at the end; the nodes are SIGKILLed on
//! every way out.
//!
//! ```text
//! cargo run --release -p kafka-bench --example replication_bench -- \
//!     --broker target/release/kafka-broker [--quick] [--rounds N] [--session-timeout-ms MS] \
//!     [--json] [--out PATH] [--dir PATH]
//! ```
//!
//! With `--json` the last line printed is the whole result as one JSON object; `--out` writes
//! the same object to a file.

use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_bench::cluster::{
    BenchOptions, Cluster, NODES, Stat, left, ms, partitions, print_stats, progress_flush, run_main,
};
use kafka_bench::harness::{Error, num};
use kafka_consumer::{Consumer, ConsumerConfig, TopicPartition};
use kafka_producer::{
    DeliveryHandler, Producer, ProducerConfig, ProducerError, ProducerRecord, RecordMetadata,
};

/// Partitions of the throughput topics.
const PARTITIONS: i32 = 3;
/// Value size of the throughput records.
const RECORD_BYTES: usize = 1024;
/// Records per throughput phase.
const RECORDS: u64 = 500_000;
/// Records per throughput phase with `--quick`.
const RECORDS_QUICK: u64 = 200_000;
/// The longest a throughput phase sends; what was acknowledged by then is what it measured.
const MAX_SEND: Duration = Duration::from_secs(60);
/// The longest a phase waits for its acknowledgements after the last send.
const FLUSH_LIMIT: Duration = Duration::from_secs(60);
/// Topic creation, deletion and the other waits around a phase.
const ADMIN_LIMIT: Duration = Duration::from_secs(60);
/// The latency phase: records per second, value size, seconds (`--quick`: 3).
const RATE: u64 = 2_000;
const LATENCY_BYTES: usize = 100;
const LATENCY_SECONDS: u64 = 10;
/// How long the latency consumer waits for the last record after the last send.
const LATENCY_DRAIN: Duration = Duration::from_secs(20);
/// The longest a failover round may take with the default session timeout.
const ROUND_LIMIT: Duration = Duration::from_secs(60);
/// Partitions of each failover round's topic.
const FAILOVER_PARTITIONS: i32 = 3;
/// Poll interval of the failover Metadata.
const FAILOVER_POLL: Duration = Duration::from_millis(15);
/// The RF3 topics' `min.insync.replicas`.
const MIN_ISR: &str = "2";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // Two workers: the producer's sender task and the application's loop (and the latency
    // consumer) run side by side, as in an application.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build();
    run_main(rt, bench(&args))
}

/// Records per throughput phase.
fn records(opts: &BenchOptions) -> u64 {
    if opts.quick { RECORDS_QUICK } else { RECORDS }
}

/// Seconds of the latency phase.
fn latency_seconds(opts: &BenchOptions) -> u64 {
    if opts.quick { 3 } else { LATENCY_SECONDS }
}

async fn bench(args: &[String]) -> Result<(), Error> {
    let opts = BenchOptions::parse(args, 5, 3, 100)?;
    let round_limit = opts.round_limit(ROUND_LIMIT);
    let mut cluster = Cluster::for_bench(&opts, "kafka-replication-bench")?;
    println!(
        "replication bench: {NODES} combined nodes, {} round(s), {} x {RECORD_BYTES} B per \
         produce phase, broker.session.timeout.ms={} broker.heartbeat.interval.ms={}, \
         working in {}",
        opts.rounds,
        records(&opts),
        opts.session_timeout_ms,
        opts.heartbeat_ms(),
        cluster.dir().display()
    );
    cluster.start_all(Instant::now() + ADMIN_LIMIT).await?;

    // 1. Throughput, RF1 and RF3 interleaved.
    let mut produce = Vec::new();
    for r in 0..opts.rounds {
        let order: [i16; 2] = if r % 2 == 0 { [1, 3] } else { [3, 1] };
        let mut round = [None, None];
        for rf in order {
            let tag = format!("produce round {}/{} RF{rf}", r + 1, opts.rounds);
            let phase = throughput(&mut cluster, r, rf, records(&opts))
                .await
                .map_err(|e| format!("{tag} failed: {e}\n{}", cluster.log_tails()))?;
            println!(
                "  {tag}: {} records in {:.2} s: {:.0} records/s, {:.1} MB/s, broker CPU \
                 {:.2} s ({:.2} µs/record){}",
                phase.acked,
                phase.seconds,
                phase.per_sec(),
                phase.mb_per_sec(),
                phase.broker_cpu_s,
                phase.cpu_us_per_record(),
                if phase.failed > 0 || phase.acked < phase.sent {
                    format!(" ({} sent, {} failed)", phase.sent, phase.failed)
                } else {
                    String::new()
                }
            );
            progress_flush();
            round[usize::from(rf == 3)] = Some(phase);
        }
        let [Some(rf1), Some(rf3)] = round else {
            return Err("a produce round lost a case".into());
        };
        println!(
            "  produce round {}/{}: RF3/RF1 records/s {:.2}, broker CPU/record {:.2}",
            r + 1,
            opts.rounds,
            rf3.per_sec() / rf1.per_sec(),
            rf3.cpu_us_per_record() / rf1.cpu_us_per_record()
        );
        produce.push((rf1, rf3));
    }

    // 2. End-to-end latency at a fixed rate.
    let seconds = latency_seconds(&opts);
    print!(
        "  latency: {LATENCY_BYTES} B, acks=all, RF3, min.insync.replicas={MIN_ISR}, {RATE} \
         records/s for {seconds} s ... "
    );
    progress_flush();
    let latency = latency(&mut cluster, seconds)
        .await
        .map_err(|e| format!("the latency phase failed: {e}\n{}", cluster.log_tails()))?;
    println!(
        "{}/{} received: p50 {:.2} ms, p99 {:.2} ms, p99.9 {:.2} ms, max {:.2} ms \
         (acknowledged: p50 {:.2} ms, p99 {:.2} ms)",
        latency.received,
        latency.sent,
        latency.end_to_end[0],
        latency.end_to_end[1],
        latency.end_to_end[2],
        latency.end_to_end[3],
        latency.ack[0],
        latency.ack[1]
    );
    progress_flush();

    // 3. Leader failover.
    let mut failovers = Vec::new();
    for r in 0..opts.rounds {
        let deadline = Instant::now() + round_limit;
        let res = failover(
            &mut cluster,
            r,
            opts.rounds,
            opts.session_timeout_ms,
            deadline,
        )
        .await
        .map_err(|e| {
            format!(
                "failover round {}/{} failed (limit {} s): {e}\n{}",
                r + 1,
                opts.rounds,
                round_limit.as_secs(),
                cluster.log_tails()
            )
        })?;
        failovers.push(res);
    }
    cluster.check_running()?;

    let summary = Summary::new(&produce, &failovers);
    summary.print(&latency, &cluster, &opts);
    opts.emit(
        "replication bench",
        &summary.to_json(&latency, &cluster, &opts),
    )
}

// ----- 1. throughput -----

/// What one produce phase measured.
struct Phase {
    sent: u64,
    acked: u64,
    failed: u64,
    seconds: f64,
    broker_cpu_s: f64,
}

impl Phase {
    fn per_sec(&self) -> f64 {
        self.acked as f64 / self.seconds.max(1e-9)
    }
    fn mb_per_sec(&self) -> f64 {
        (self.acked * RECORD_BYTES as u64) as f64 / 1e6 / self.seconds.max(1e-9)
    }
    fn cpu_us_per_record(&self) -> f64 {
        self.broker_cpu_s * 1e6 / self.acked.max(1) as f64
    }
}

/// Counts acknowledgements and failures; with `latencies`, also notes each record's
/// send-to-acknowledgement time (the opaque is its send time in ns after `epoch`).
struct Acks {
    ok: AtomicU64,
    failed: AtomicU64,
    epoch: Instant,
    latencies: Option<Mutex<Vec<u64>>>,
}

impl Acks {
    fn new(epoch: Instant, with_latencies: bool) -> Arc<Self> {
        Arc::new(Self {
            ok: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            epoch,
            latencies: with_latencies.then(|| Mutex::new(Vec::new())),
        })
    }

    fn done(&self) -> u64 {
        self.ok.load(Ordering::Relaxed) + self.failed.load(Ordering::Relaxed)
    }
}

impl DeliveryHandler for Acks {
    fn on_delivery(&self, sent_ns: u64, result: Result<&RecordMetadata, &ProducerError>) {
        if result.is_err() {
            self.failed.fetch_add(1, Ordering::Relaxed);
            return;
        }
        self.ok.fetch_add(1, Ordering::Relaxed);
        if let Some(l) = &self.latencies {
            let now = self.epoch.elapsed().as_nanos() as u64;
            l.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(now.saturating_sub(sent_ns));
        }
    }
}

/// Our producer on every node, acks=all, with `extra` settings after the common ones and
/// `acks` as its delivery handler.
async fn producer(
    bootstrap: &str,
    extra: &[(&str, &str)],
    acks: Arc<Acks>,
) -> Result<Producer, Error> {
    let mut builder = ProducerConfig::builder();
    for (k, v) in [
        ("bootstrap.servers", bootstrap),
        ("client.id", "replication-bench"),
        ("acks", "all"),
        ("compression.type", "none"),
        ("batch.size", "16384"),
        ("buffer.memory", "33554432"),
        ("max.in.flight.requests.per.connection", "5"),
        ("enable.idempotence", "true"),
    ]
    .iter()
    .chain(extra)
    {
        builder = builder.set(k, v)?;
    }
    Ok(Producer::new(builder.delivery_handler(acks).build()?).await?)
}

/// Creates `topic` (RF3 with `min.insync.replicas`) through a node and waits until every
/// broker shows its partitions with leaders and full ISRs.
async fn create_topic(
    c: &mut Cluster,
    topic: &str,
    partitions: i32,
    rf: i16,
    deadline: Instant,
) -> Result<(), Error> {
    let configs: &[(&str, &str)] = if rf > 1 {
        &[("min.insync.replicas", MIN_ISR)]
    } else {
        &[]
    };
    c.create_until_ok(1, topic, partitions, rf, configs, deadline)
        .await?;
    c.wait_everywhere(topic, partitions, rf as usize, deadline)
        .await
}

async fn throughput(c: &mut Cluster, r: usize, rf: i16, records: u64) -> Result<Phase, Error> {
    let topic = format!("produce-rf{rf}-{r}");
    create_topic(c, &topic, PARTITIONS, rf, Instant::now() + ADMIN_LIMIT).await?;
    let acks = Acks::new(Instant::now(), false);
    let producer = producer(&c.bootstrap(), &[("linger.ms", "5")], acks.clone()).await?;
    let payload = kafka_bench::records(RECORD_BYTES);
    let name: Arc<str> = topic.as_str().into();
    // One acknowledged record per partition: connections to every leader and the producer
    // id before the clock starts.
    for p in 0..PARTITIONS {
        tokio::time::timeout(
            ADMIN_LIMIT,
            producer.send(ProducerRecord::new(name.clone(), payload.clone()).partition(p)),
        )
        .await
        .map_err(|_| format!("warm-up record to {topic}-{p} not acknowledged in time"))??;
    }

    let cpu0 = c.cpu_time();
    let started = Instant::now();
    let mut sent = 0;
    while sent < records {
        if sent % 1024 == 0 && started.elapsed() > MAX_SEND {
            break;
        }
        producer
            .send_with_opaque(ProducerRecord::new(name.clone(), payload.clone()), 0)
            .await?;
        sent += 1;
    }
    tokio::time::timeout(FLUSH_LIMIT, producer.flush())
        .await
        .map_err(|_| format!("{sent} records sent; not all acknowledged within 60 s"))?;
    let seconds = started.elapsed().as_secs_f64();
    let broker_cpu_s = c
        .cpu_time()
        .zip(cpu0)
        .map_or(f64::NAN, |(b, a)| b.saturating_sub(a).as_secs_f64());
    producer.close(Duration::from_secs(10)).await;
    if acks.done() < sent {
        return Err(format!(
            "{} of {sent} records completed after the flush",
            acks.done()
        )
        .into());
    }
    c.delete(1, &[&topic], Instant::now() + ADMIN_LIMIT).await?;
    Ok(Phase {
        sent,
        acked: acks.ok.load(Ordering::Relaxed),
        failed: acks.failed.load(Ordering::Relaxed),
        seconds,
        broker_cpu_s,
    })
}

// ----- 2. latency -----

struct Latency {
    sent: u64,
    received: u64,
    /// p50, p99, p99.9, max, ms.
    end_to_end: [f64; 4],
    /// The same of send-to-acknowledgement.
    ack: [f64; 4],
}

/// p50, p99, p99.9 and max of `ns`, in ms (NaN when empty).
fn quantiles(mut ns: Vec<u64>) -> [f64; 4] {
    ns.sort_unstable();
    [0.5, 0.99, 0.999, 1.0].map(|p| {
        let i = ((ns.len() as f64 - 1.0) * p).round() as usize;
        ns.get(i).map_or(f64::NAN, |v| *v as f64 / 1e6)
    })
}

async fn latency(c: &mut Cluster, seconds: u64) -> Result<Latency, Error> {
    let topic = "latency";
    create_topic(c, topic, 1, 3, Instant::now() + ADMIN_LIMIT).await?;
    let total = RATE * seconds;
    let epoch = Instant::now();

    let consumer = Consumer::new(ConsumerConfig::from_pairs([
        ("bootstrap.servers", c.bootstrap().as_str()),
        ("client.id", "replication-bench-latency"),
        ("auto.offset.reset", "earliest"),
        ("fetch.min.bytes", "1"),
        ("fetch.max.wait.ms", "500"),
    ])?)
    .await?;
    consumer.assign([TopicPartition::new(topic, 0)])?;
    // Fetching (a long poll waiting on the leader) before the first record goes out.
    let warm = Instant::now();
    while warm.elapsed() < Duration::from_secs(1) {
        consumer.poll(Duration::from_millis(100)).await?;
    }
    let reader = tokio::spawn(async move {
        let mut lat = Vec::with_capacity(total as usize);
        let deadline = Instant::now() + Duration::from_secs(seconds) + LATENCY_DRAIN;
        while (lat.len() as u64) < total && Instant::now() < deadline {
            for r in consumer.poll(Duration::from_millis(100)).await? {
                let now = epoch.elapsed().as_nanos() as u64;
                // The warm-up record (the only one with a key) does not count.
                if r.key.is_some() {
                    continue;
                }
                if let Some(sent) = r
                    .value
                    .as_deref()
                    .and_then(|v| v.get(..8))
                    .and_then(|b| <[u8; 8]>::try_from(b).ok())
                {
                    lat.push(now.saturating_sub(u64::from_le_bytes(sent)));
                }
            }
        }
        consumer.close(Duration::from_secs(5)).await?;
        Ok::<_, Error>(lat)
    });

    let acks = Acks::new(epoch, true);
    let producer = producer(&c.bootstrap(), &[("linger.ms", "0")], acks.clone()).await?;
    let filler = kafka_bench::records(LATENCY_BYTES);
    tokio::time::timeout(
        ADMIN_LIMIT,
        producer.send(ProducerRecord::new(topic, filler.clone()).key(&b"warm-up"[..])),
    )
    .await
    .map_err(|_| "warm-up record not acknowledged in time")??;
    if let Some(l) = &acks.latencies {
        l.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clear();
    }
    let started = Instant::now();
    let mut sent = 0;
    while sent < total {
        let due = started + Duration::from_nanos(sent * 1_000_000_000 / RATE);
        let now = Instant::now();
        if now < due {
            tokio::time::sleep(due - now).await;
            continue;
        }
        let t = epoch.elapsed().as_nanos() as u64;
        let mut value = filler.to_vec();
        value[..8].copy_from_slice(&t.to_le_bytes());
        producer
            .send_with_opaque(ProducerRecord::new(topic, Bytes::from(value)), t)
            .await?;
        sent += 1;
    }
    tokio::time::timeout(FLUSH_LIMIT, producer.flush())
        .await
        .map_err(|_| "the latency records were not all acknowledged within 60 s")?;
    producer.close(Duration::from_secs(10)).await;
    let lat = reader
        .await
        .map_err(|e| format!("the consumer task: {e}"))??;
    let ack = acks
        .latencies
        .as_ref()
        .map(|l| std::mem::take(&mut *l.lock().unwrap_or_else(std::sync::PoisonError::into_inner)))
        .unwrap_or_default();
    c.delete(1, &[topic], Instant::now() + ADMIN_LIMIT).await?;
    Ok(Latency {
        sent,
        received: lat.len() as u64,
        end_to_end: quantiles(lat),
        ack: quantiles(ack),
    })
}

// ----- 3. failover -----

/// What one failover round measured, in ms.
struct Failover {
    to_produce: f64,
    to_metadata: f64,
    rejoin: f64,
}

async fn failover(
    c: &mut Cluster,
    r: usize,
    rounds: usize,
    session_timeout_ms: u64,
    deadline: Instant,
) -> Result<Failover, Error> {
    let tag = format!("failover round {}/{rounds}", r + 1);
    let topic = format!("failover-{r}");
    create_topic(c, &topic, FAILOVER_PARTITIONS, 3, deadline).await?;
    let controller = c.active_controller(deadline).await?;
    let m = c
        .metadata(controller, Some(&[&topic]), left(deadline, ADMIN_LIMIT))
        .await?;
    let parts = partitions(&m, &topic).ok_or("the failover topic vanished")?;
    let candidates: Vec<(i32, i32)> = parts
        .iter()
        .enumerate()
        .filter(|(_, (leader, _))| *leader != controller && *leader >= 0)
        .map(|(p, (leader, _))| (p as i32, *leader))
        .collect();
    let Some(&(partition, victim)) = candidates.get(r % candidates.len().max(1)) else {
        return Err(format!(
            "no node but the controller ({controller}) leads a partition of {topic}: {parts:?}"
        )
        .into());
    };
    let survivors: Vec<i32> = (1..=NODES).filter(|&i| i != victim).collect();

    let acks = Acks::new(Instant::now(), false);
    let producer = producer(
        &c.bootstrap(),
        &[
            ("linger.ms", "0"),
            ("retry.backoff.ms", "20"),
            ("retry.backoff.max.ms", "100"),
            ("reconnect.backoff.ms", "20"),
            ("reconnect.backoff.max.ms", "100"),
        ],
        acks,
    )
    .await?;
    let record = ProducerRecord::new(topic.as_str(), kafka_bench::records(LATENCY_BYTES))
        .partition(partition);
    tokio::time::timeout(left(deadline, ADMIN_LIMIT), producer.send(record.clone()))
        .await
        .map_err(|_| "the record before the kill was not acknowledged in time")??;

    let killed = c.kill(victim)?;
    // Until a record to the partition is acknowledged (a new send after each failure the
    // producer gives up on), and, at the same time, until Metadata names a live leader.
    let produced = async {
        let mut attempts = 0u32;
        loop {
            attempts += 1;
            match tokio::time::timeout(left(deadline, ADMIN_LIMIT), producer.send(record.clone()))
                .await
            {
                Ok(Ok(_)) => return Ok::<_, Error>((killed.elapsed(), attempts)),
                Ok(Err(e)) if Instant::now() >= deadline => {
                    return Err(
                        format!("no acks=all produce succeeded; the last error: {e}").into(),
                    );
                }
                Ok(Err(_)) => tokio::time::sleep(Duration::from_millis(10)).await,
                Err(_) => return Err("no acks=all produce succeeded in time".into()),
            }
        }
    };
    let seen = async {
        loop {
            for &s in &survivors {
                let limit = left(deadline, Duration::from_secs(2));
                if let Ok(m) = c.metadata(s, Some(&[&topic]), limit).await {
                    let leader = partitions(&m, &topic)
                        .and_then(|p| p.get(partition as usize).map(|(l, _)| *l));
                    if let Some(l) = leader.filter(|l| survivors.contains(l)) {
                        return Ok::<_, Error>((killed.elapsed(), s, l));
                    }
                }
            }
            if Instant::now() >= deadline {
                return Err(format!("{topic}-{partition} got no live leader").into());
            }
            tokio::time::sleep(FAILOVER_POLL).await;
        }
    };
    let (produced, seen) = tokio::join!(produced, seen);
    let ((to_produce, attempts), (to_metadata, seen_by, leader)) = (produced?, seen?);
    producer.close(Duration::from_secs(5)).await;
    println!(
        "  {tag}: killed node {victim} (leader of {topic}-{partition}); node {seen_by} names \
         node {leader} the leader {:.0} ms after the kill, an acks=all record was acknowledged \
         after {:.0} ms ({attempts} send(s); broker.session.timeout.ms={session_timeout_ms})",
        ms(to_metadata),
        ms(to_produce)
    );
    progress_flush();

    // Restarted only once fenced, so that the node is listed again only when its new process
    // has registered (not on the dead one's session).
    c.wait_fenced(victim, deadline).await?;
    let restarted = Instant::now();
    c.start(victim)?;
    c.wait_rejoined(deadline).await?;
    let rejoin = ms(restarted.elapsed());
    c.delete(1, &[&topic], deadline).await?;
    println!("  {tag}: node {victim} restarted and rejoined in {rejoin:.0} ms");
    progress_flush();
    Ok(Failover {
        to_produce: ms(to_produce),
        to_metadata: ms(to_metadata),
        rejoin,
    })
}

// ----- the summary -----

struct Summary {
    /// records/s, MB/s, broker CPU µs/record: RF1 then RF3.
    cases: [[Stat; 3]; 2],
    /// RF3/RF1 of records/s and of broker CPU/record, per round.
    ratios: [Stat; 2],
    /// Records sent and not acknowledged over every round: RF1, RF3.
    lost: [u64; 2],
    failover: [Stat; 3],
}

impl Summary {
    fn new(produce: &[(Phase, Phase)], failovers: &[Failover]) -> Self {
        let stat = |key, label, samples: Vec<f64>| Stat {
            key,
            label,
            samples,
        };
        let case = |pick: fn(&(Phase, Phase)) -> &Phase| {
            [
                stat(
                    "records_per_sec",
                    "records/s",
                    produce.iter().map(|p| pick(p).per_sec()).collect(),
                ),
                stat(
                    "mb_per_sec",
                    "MB/s",
                    produce.iter().map(|p| pick(p).mb_per_sec()).collect(),
                ),
                stat(
                    "broker_cpu_us_per_record",
                    "broker CPU µs/record",
                    produce
                        .iter()
                        .map(|p| pick(p).cpu_us_per_record())
                        .collect(),
                ),
            ]
        };
        let lost = |pick: fn(&(Phase, Phase)) -> &Phase| {
            produce
                .iter()
                .map(|p| pick(p).sent.saturating_sub(pick(p).acked))
                .sum()
        };
        Self {
            cases: [case(|p| &p.0), case(|p| &p.1)],
            lost: [lost(|p| &p.0), lost(|p| &p.1)],
            ratios: [
                stat(
                    "records_per_sec",
                    "records/s",
                    produce
                        .iter()
                        .map(|(a, b)| b.per_sec() / a.per_sec())
                        .collect(),
                ),
                stat(
                    "broker_cpu_per_record",
                    "broker CPU/record",
                    produce
                        .iter()
                        .map(|(a, b)| b.cpu_us_per_record() / a.cpu_us_per_record())
                        .collect(),
                ),
            ],
            failover: [
                stat(
                    "kill_to_produce_ms",
                    "kill -> acks=all record acknowledged",
                    failovers.iter().map(|f| f.to_produce).collect(),
                ),
                stat(
                    "kill_to_metadata_ms",
                    "kill -> Metadata names a live leader",
                    failovers.iter().map(|f| f.to_metadata).collect(),
                ),
                stat(
                    "restart_to_rejoined_ms",
                    "restart -> rejoined",
                    failovers.iter().map(|f| f.rejoin).collect(),
                ),
            ],
        }
    }

    fn print(&self, latency: &Latency, cluster: &Cluster, opts: &BenchOptions) {
        println!(
            "\nreplication bench: {NODES} combined nodes on one machine, {} round(s); \
             median [min - max] over the rounds",
            opts.rounds
        );
        println!(
            "produce, acks=all, our producer (linger.ms=5, idempotent), {PARTITIONS} partitions, \
             {} x {RECORD_BYTES} B per phase:",
            records(opts)
        );
        println!(
            "| {:<30} | {:>26} | {:>22} | {:>22} |",
            "case", "records/s", "MB/s", "broker CPU µs/record"
        );
        println!("|{:-<32}|{:-<28}|{:-<24}|{:-<24}|", "", "", "", "");
        let cell =
            |s: &Stat, d: usize| format!("{:.d$} [{:.d$} - {:.d$}]", s.median(), s.min(), s.max());
        for ((name, c), lost) in [
            ("RF=1", &self.cases[0]),
            ("RF=3, min.insync.replicas=2", &self.cases[1]),
        ]
        .into_iter()
        .zip(self.lost)
        {
            println!(
                "| {:<30} | {:>26} | {:>22} | {:>22} |{}",
                name,
                cell(&c[0], 0),
                cell(&c[1], 1),
                cell(&c[2], 2),
                if lost > 0 {
                    format!(" {lost} records not acknowledged")
                } else {
                    String::new()
                }
            );
        }
        println!(
            "RF3/RF1, round by round: records/s {}, broker CPU/record {}",
            cell(&self.ratios[0], 2),
            cell(&self.ratios[1], 2)
        );
        println!(
            "end-to-end latency ({LATENCY_BYTES} B, acks=all, RF3, linger.ms=0, {RATE} \
             records/s for {} s, {}/{} received): p50 {:.2} ms, p99 {:.2} ms, p99.9 {:.2} ms, \
             max {:.2} ms; send to acknowledgement: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
            latency_seconds(opts),
            latency.received,
            latency.sent,
            latency.end_to_end[0],
            latency.end_to_end[1],
            latency.end_to_end[2],
            latency.end_to_end[3],
            latency.ack[0],
            latency.ack[1],
            latency.ack[3]
        );
        println!(
            "leader failover after SIGKILL (broker.session.timeout.ms={}, \
             broker.heartbeat.interval.ms={}):",
            opts.session_timeout_ms,
            opts.heartbeat_ms()
        );
        print_stats(&self.failover, |_| String::new());
        println!("{}", cluster.peak_rss_line());
    }

    fn to_json(&self, latency: &Latency, cluster: &Cluster, opts: &BenchOptions) -> String {
        let group = |stats: &[Stat], d: usize| {
            stats
                .iter()
                .map(|s| s.to_json(d))
                .collect::<Vec<_>>()
                .join(",")
        };
        let q = |v: &[f64; 4]| {
            format!(
                "{{\"p50_ms\":{},\"p99_ms\":{},\"p999_ms\":{},\"max_ms\":{}}}",
                num(v[0], 3),
                num(v[1], 3),
                num(v[2], 3),
                num(v[3], 3)
            )
        };
        format!(
            "{{\"bench\":\"replication\",\"nodes\":{NODES},\"quick\":{},\"rounds\":{},\
             \"broker_session_timeout_ms\":{},\"broker_heartbeat_interval_ms\":{},\
             \"produce\":{{\"acks\":\"all\",\"producer\":\"kafka-producer, linger.ms=5, \
             batch.size=16384, idempotent, compression none\",\"partitions\":{PARTITIONS},\
             \"record_bytes\":{RECORD_BYTES},\"records_per_phase\":{},\
             \"rf1\":{{\"not_acknowledged\":{},{}}},\
             \"rf3\":{{\"min_insync_replicas\":{MIN_ISR},\"not_acknowledged\":{},{}}},\
             \"rf3_over_rf1\":{{{}}}}},\
             \"latency\":{{\"record_bytes\":{LATENCY_BYTES},\"acks\":\"all\",\"rf\":3,\
             \"linger_ms\":0,\"rate_per_sec\":{RATE},\"seconds\":{},\"sent\":{},\"received\":{},\
             \"end_to_end\":{},\"acknowledged\":{}}},\
             \"failover\":{{\"partitions\":{FAILOVER_PARTITIONS},\"results\":{{{}}}}},\
             \"peak_rss_kib\":{}}}",
            opts.quick,
            opts.rounds,
            opts.session_timeout_ms,
            opts.heartbeat_ms(),
            records(opts),
            self.lost[0],
            group(&self.cases[0], 2),
            self.lost[1],
            group(&self.cases[1], 2),
            group(&self.ratios, 3),
            latency_seconds(opts),
            latency.sent,
            latency.received,
            q(&latency.end_to_end),
            q(&latency.ack),
            group(&self.failover, 1),
            cluster.peak_rss_json()
        )
    }
}
