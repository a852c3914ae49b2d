//! Failover and metadata timings of a cluster of three combined `kafka-broker` nodes
//! (`process.roles=broker,controller`), each a child process on 127.0.0.1 (started, killed
//! and restarted by `kafka_bench::cluster`):
//!
//! 1. **Controller failover**: the active controller (named by DescribeQuorum, sent through a
//!    broker, which forwards it) is SIGKILLed; timed from the kill until a CreateTopics of a
//!    new 1-partition topic with replication factor 2, sent through a surviving broker and
//!    retried until it succeeds, succeeds.
//! 2. **Broker failover**: a topic of 6 partitions with replication factor 3 is created for the
//!    round; a node that leads some of them and is not the active controller is SIGKILLed;
//!    timed from the kill until a surviving broker's Metadata (v12, polled every 15 ms) shows
//!    every partition of the topic led by a live broker. The controller moves leaders only once
//!    the dead broker's session expires, so this is mostly `broker.session.timeout.ms`
//!    (`--session-timeout-ms`, default 3000; heartbeats every 500 ms).
//! 3. **CreateTopics of 1,000 partitions** (replication factor 3, one request, a new topic per
//!    round): timed until the response, and until every broker's Metadata shows all 1,000
//!    partitions with a leader.
//!
//! After each kill, once no surviving broker lists the killed node any more (the controller
//! fenced it; so that a node listed again is one whose new process registered), the node is
//! restarted on its data directory, and the next step waits until every broker lists the three
//! brokers again and DescribeQuorum shows every voter caught up (restart to rejoin is reported
//! too). Every step works on a topic created after the last restart (with every replica in
//! sync, whether or not the restarted node is back in the ISRs of older ones yet); the round's
//! topics are deleted at its end (and gone from every broker before the next round starts),
//! which also keeps the brokers' memory bounded. The peak RSS (`VmHWM`) of each node, the
//! highest over its processes, is reported at the end.
//!
//! `--rounds N` rounds (default 10, `--quick` 3), each doing the three steps in turn; each
//! measurement is reported as min / median / max over the rounds. A round that takes more than
//! 60 s (plus twice the session timeout above 3 s) fails the run, printing the tail of every
//! node's log. The nodes' data goes to a fresh directory under the temp dir (or `--dir`),
//! removed at the end; the nodes are SIGKILLed on every way out.
//!
//! ```text
//! cargo run --release -p kafka-bench --example cluster_bench -- \
//!     --broker target/release/kafka-broker [--quick] [--rounds N] [--session-timeout-ms MS] \
//!     [--json] [--out PATH] [--dir PATH]
//! ```
//!
//! With `--json` the last line printed is the whole result as one JSON object; `--out` writes
//! the same object to a file.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use kafka_bench::cluster::{
    BenchOptions, Cluster, NODES, Stat, left, ms, partitions, print_stats, progress_flush, run_main,
};
use kafka_bench::harness::Error;

/// The longest a round may take with the default session timeout.
const ROUND_LIMIT: Duration = Duration::from_secs(60);
/// Partitions of the broker-failover topic (replication factor 3).
const FAILOVER_PARTITIONS: i32 = 6;
/// Partitions of the big topic (replication factor 3).
const BIG_PARTITIONS: i32 = 1000;
/// Poll interval of the failover measurements.
const FAILOVER_POLL: Duration = Duration::from_millis(15);

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    run_main(rt, bench(&args))
}

async fn bench(args: &[String]) -> Result<(), Error> {
    let opts = BenchOptions::parse(args, 10, 3, 1000)?;
    let round_limit = opts.round_limit(ROUND_LIMIT);
    let mut cluster = Cluster::for_bench(&opts, "kafka-cluster-bench")?;
    println!(
        "cluster bench: {NODES} combined nodes, {} round(s), broker.session.timeout.ms={} \
         broker.heartbeat.interval.ms={}, working in {}",
        opts.rounds,
        opts.session_timeout_ms,
        opts.heartbeat_ms(),
        cluster.dir().display()
    );
    cluster.start_all(Instant::now() + ROUND_LIMIT).await?;

    let mut rounds = Vec::new();
    for r in 0..opts.rounds {
        let deadline = Instant::now() + round_limit;
        match round(
            &mut cluster,
            r,
            opts.rounds,
            opts.session_timeout_ms,
            deadline,
        )
        .await
        {
            Ok(res) => rounds.push(res),
            Err(e) => {
                return Err(format!(
                    "round {}/{} failed (limit {} s): {e}\n{}",
                    r + 1,
                    opts.rounds,
                    round_limit.as_secs(),
                    cluster.log_tails()
                )
                .into());
            }
        }
    }
    cluster.check_running()?;

    let stats = summarize(&rounds);
    print_table(&stats, &cluster, &opts);
    opts.emit("cluster bench", &to_json(&stats, &cluster, &opts))
}

/// What one round measured, in ms.
struct RoundResult {
    controller_failover: f64,
    controller_rejoin: f64,
    broker_failover: f64,
    broker_rejoin: f64,
    big_response: f64,
    big_everywhere: f64,
}

async fn round(
    c: &mut Cluster,
    r: usize,
    rounds: usize,
    session_timeout_ms: u64,
    deadline: Instant,
) -> Result<RoundResult, Error> {
    let tag = format!("round {}/{rounds}", r + 1);
    let controller_topic = format!("controller-failover-{r}");
    let broker_topic = format!("broker-failover-{r}");
    let big_topic = format!("create-{BIG_PARTITIONS}-{r}");

    // 1. Controller failover.
    let controller = c.active_controller(deadline).await?;
    let survivors: Vec<i32> = (1..=NODES).filter(|&i| i != controller).collect();
    let via = survivors[r % survivors.len()];
    let killed = c.kill(controller)?;
    let attempts = c
        .create_until_ok(via, &controller_topic, 1, 2, &[], deadline)
        .await?;
    let controller_failover = ms(killed.elapsed());
    let new_controller = c.active_controller(deadline).await?;
    println!(
        "  {tag}: controller failover: killed node {controller} (the active controller); \
         CreateTopics through node {via} succeeded {controller_failover:.0} ms after the kill \
         ({attempts} attempt(s)); node {new_controller} is the controller now"
    );
    // Restarted only once fenced, so that the node is listed again only when its new process
    // has registered (not on the dead one's session).
    c.wait_fenced(controller, deadline).await?;
    println!(
        "  {tag}: node {controller} fenced {:.0} ms after the kill",
        ms(killed.elapsed())
    );
    let restarted = Instant::now();
    c.start(controller)?;
    c.wait_rejoined(deadline).await?;
    let controller_rejoin = ms(restarted.elapsed());
    println!("  {tag}: node {controller} restarted and rejoined in {controller_rejoin:.0} ms");
    progress_flush();

    // 2. Broker failover.
    let via = (r as i32 % NODES) + 1;
    c.create_until_ok(via, &broker_topic, FAILOVER_PARTITIONS, 3, &[], deadline)
        .await?;
    c.wait_everywhere(&broker_topic, FAILOVER_PARTITIONS, 3, deadline)
        .await?;
    let controller = c.active_controller(deadline).await?;
    let m = c
        .metadata(
            controller,
            Some(&[&broker_topic]),
            left(deadline, ROUND_LIMIT),
        )
        .await?;
    let parts = partitions(&m, &broker_topic).ok_or("the failover topic vanished")?;
    let candidates: Vec<(i32, usize)> = (1..=NODES)
        .filter(|&i| i != controller)
        .map(|i| (i, parts.iter().filter(|p| p.0 == i).count()))
        .filter(|&(_, led)| led > 0)
        .collect();
    let Some(&(victim, led)) = candidates.get(r % candidates.len().max(1)) else {
        return Err(format!(
            "no node but the controller ({controller}) leads a partition of {broker_topic}: \
             {parts:?}"
        )
        .into());
    };
    let survivors: Vec<i32> = (1..=NODES).filter(|&i| i != victim).collect();
    let killed = c.kill(victim)?;
    let seen_by = 'poll: loop {
        for &s in &survivors {
            let limit = left(deadline, Duration::from_secs(2));
            if let Ok(m) = c.metadata(s, Some(&[&broker_topic]), limit).await {
                if partitions(&m, &broker_topic).is_some_and(|p| {
                    p.len() == FAILOVER_PARTITIONS as usize
                        && p.iter().all(|(leader, _)| survivors.contains(leader))
                }) {
                    break 'poll s;
                }
            }
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "the partitions of {broker_topic} led by node {victim} got no live leader"
            )
            .into());
        }
        tokio::time::sleep(FAILOVER_POLL).await;
    };
    let broker_failover = ms(killed.elapsed());
    println!(
        "  {tag}: broker failover: killed node {victim} (leader of {led} of \
         {FAILOVER_PARTITIONS} partitions); node {seen_by} shows a live leader for every \
         partition {broker_failover:.0} ms after the kill \
         (broker.session.timeout.ms={session_timeout_ms})"
    );
    c.wait_fenced(victim, deadline).await?;
    let restarted = Instant::now();
    c.start(victim)?;
    c.wait_rejoined(deadline).await?;
    let broker_rejoin = ms(restarted.elapsed());
    println!("  {tag}: node {victim} restarted and rejoined in {broker_rejoin:.0} ms");
    progress_flush();

    // 3. CreateTopics of 1,000 partitions in one request.
    let via = ((r as i32 + 1) % NODES) + 1;
    let sent = Instant::now();
    c.create(
        via,
        &big_topic,
        BIG_PARTITIONS,
        3,
        &[],
        left(deadline, ROUND_LIMIT),
    )
    .await
    .map_err(|e| format!("CreateTopics of {BIG_PARTITIONS} partitions: {e}"))?;
    let big_response = ms(sent.elapsed());
    c.wait_everywhere(&big_topic, BIG_PARTITIONS, 1, deadline)
        .await?;
    let big_everywhere = ms(sent.elapsed());
    println!(
        "  {tag}: CreateTopics of {BIG_PARTITIONS} partitions through node {via}: answered in \
         {big_response:.0} ms, on every broker with leaders after {big_everywhere:.0} ms"
    );

    // The round's topics go, on every broker, before the next round.
    let cleaned = Instant::now();
    let topics = [&*controller_topic, &*broker_topic, &*big_topic];
    c.delete(via, &topics, deadline).await?;
    println!(
        "  {tag}: deleted the round's topics in {:.0} ms",
        ms(cleaned.elapsed())
    );
    progress_flush();
    Ok(RoundResult {
        controller_failover,
        controller_rejoin,
        broker_failover,
        broker_rejoin,
        big_response,
        big_everywhere,
    })
}

// ----- the summary -----

fn summarize(rounds: &[RoundResult]) -> Vec<Stat> {
    let stat = |key, label, f: fn(&RoundResult) -> f64| Stat {
        key,
        label,
        samples: rounds.iter().map(f).collect(),
    };
    vec![
        stat(
            "controller_failover_ms",
            "controller failover: kill -> CreateTopics ok",
            |r| r.controller_failover,
        ),
        stat(
            "broker_failover_ms",
            "broker failover: kill -> every leader live",
            |r| r.broker_failover,
        ),
        stat(
            "create_1000_response_ms",
            "CreateTopics 1000 partitions: response",
            |r| r.big_response,
        ),
        stat(
            "create_1000_everywhere_ms",
            "CreateTopics 1000 partitions: every broker",
            |r| r.big_everywhere,
        ),
        stat(
            "controller_rejoin_ms",
            "restart -> rejoined (killed controller)",
            |r| r.controller_rejoin,
        ),
        stat(
            "broker_rejoin_ms",
            "restart -> rejoined (killed broker)",
            |r| r.broker_rejoin,
        ),
    ]
}

fn print_table(stats: &[Stat], cluster: &Cluster, opts: &BenchOptions) {
    let session_ms = opts.session_timeout_ms;
    println!(
        "\ncluster bench: {NODES} combined nodes, {} round(s), \
         broker.session.timeout.ms={session_ms}, broker.heartbeat.interval.ms={}",
        opts.rounds,
        opts.heartbeat_ms()
    );
    print_stats(stats, |s| {
        if s.key == "broker_failover_ms" {
            format!("  (session timeout {session_ms} ms)")
        } else {
            String::new()
        }
    });
    println!("{}", cluster.peak_rss_line());
}

fn to_json(stats: &[Stat], cluster: &Cluster, opts: &BenchOptions) -> String {
    let results: Vec<String> = stats.iter().map(|s| s.to_json(1)).collect();
    format!(
        "{{\"bench\":\"cluster\",\"nodes\":{NODES},\"rounds\":{},\
         \"broker_session_timeout_ms\":{},\"broker_heartbeat_interval_ms\":{},\
         \"failover_partitions\":{FAILOVER_PARTITIONS},\"create_partitions\":{BIG_PARTITIONS},\
         \"results\":{{{}}},\"peak_rss_kib\":{}}}",
        opts.rounds,
        opts.session_timeout_ms,
        opts.heartbeat_ms(),
        results.join(","),
        cluster.peak_rss_json()
    )
}
