//! Failover and metadata timings of a cluster of three combined `kafka-broker` nodes
//! (`process.roles=broker,controller`), each a child process on 127.0.0.1:
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
//! too). A restarted node is not put back into the ISRs of existing
//! partitions (no replication yet), so every step works on a topic created after the last
//! restart; the round's topics are deleted at its end (and gone from every broker before the
//! next round starts), which also keeps the brokers' memory bounded. The peak RSS (`VmHWM`) of
//! each node, the highest over its processes, is reported at the end.
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

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use kafka_bench::harness::{Error, TempDir, num};
use kafka_bench::peak_rss_kib_of;
use kafka_net::{Connection, ConnectionConfig};
use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{
    CreateTopicsRequest, DeleteTopicsRequest, DescribeQuorumRequest, MetadataRequest,
    MetadataResponse, RequestBody, ResponseBody, describe_quorum_request,
};

/// Node ids `1..=NODES`, every one combined (broker and controller).
const NODES: i32 = 3;
/// The longest a round may take with the default session timeout.
const ROUND_LIMIT: Duration = Duration::from_secs(60);
/// Partitions of the broker-failover topic (replication factor 3).
const FAILOVER_PARTITIONS: i32 = 6;
/// Partitions of the big topic (replication factor 3).
const BIG_PARTITIONS: i32 = 1000;
/// Poll interval of the failover measurements.
const FAILOVER_POLL: Duration = Duration::from_millis(15);
/// Poll interval of the other waits.
const POLL: Duration = Duration::from_millis(20);
/// `broker.heartbeat.interval.ms` (at most a third of the session timeout).
const HEARTBEAT_MS: u64 = 500;
/// Lines of each node's log printed when a round fails.
const LOG_TAIL: usize = 40;

// The versions spoken to the brokers.
const METADATA_V: i16 = 12;
const CREATE_TOPICS_V: i16 = 7;
const DELETE_TOPICS_V: i16 = 6;
const DESCRIBE_QUORUM_V: i16 = 2;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    // Everything (the nodes, the data directory) is dropped inside `bench`, before the exit.
    match rt.block_on(bench(&args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

struct Options {
    broker: PathBuf,
    rounds: usize,
    session_timeout_ms: u64,
    json: bool,
    out: Option<PathBuf>,
    dir: Option<PathBuf>,
}

fn parse(args: &[String]) -> Result<Options, Error> {
    let mut quick = false;
    let mut rounds = None;
    let mut broker = None;
    let mut session_timeout_ms = 3000;
    let mut json = false;
    let mut out = None;
    let mut dir = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--quick" => quick = true,
            "--json" => json = true,
            "--rounds" => {
                let n: usize = it.next().ok_or("--rounds needs a number")?.parse()?;
                if !(1..=1000).contains(&n) {
                    return Err("--rounds: 1 to 1000".into());
                }
                rounds = Some(n);
            }
            "--session-timeout-ms" => {
                let ms: u64 = it
                    .next()
                    .ok_or("--session-timeout-ms needs a number")?
                    .parse()?;
                if !(300..=120_000).contains(&ms) {
                    return Err("--session-timeout-ms: 300 to 120000".into());
                }
                session_timeout_ms = ms;
            }
            "--broker" => broker = Some(PathBuf::from(it.next().ok_or("--broker needs a path")?)),
            "--out" => out = Some(PathBuf::from(it.next().ok_or("--out needs a path")?)),
            "--dir" => dir = Some(PathBuf::from(it.next().ok_or("--dir needs a path")?)),
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    Ok(Options {
        broker: broker.ok_or("say where the broker binary is: --broker PATH")?,
        rounds: rounds.unwrap_or(if quick { 3 } else { 10 }),
        session_timeout_ms,
        json,
        out,
        dir,
    })
}

async fn bench(args: &[String]) -> Result<(), Error> {
    let opts = parse(args)?;
    let heartbeat_ms = HEARTBEAT_MS.min(opts.session_timeout_ms / 3);
    let round_limit =
        ROUND_LIMIT + 2 * Duration::from_millis(opts.session_timeout_ms.saturating_sub(3000));
    // On disk (the temp dir), not in memory: the metadata log's writes are part of what a
    // controller does.
    let tmp = TempDir::new(
        Some(opts.dir.clone().unwrap_or_else(std::env::temp_dir)),
        "kafka-cluster-bench",
    )?;
    println!(
        "cluster bench: {NODES} combined nodes, {} round(s), broker.session.timeout.ms={} \
         broker.heartbeat.interval.ms={heartbeat_ms}, working in {}",
        opts.rounds,
        opts.session_timeout_ms,
        tmp.0.display()
    );
    // Declared after `tmp`, so dropped (the nodes killed) before the directory is removed.
    let mut cluster = Cluster::new(
        &opts.broker,
        &tmp.0,
        &[
            format!("broker.heartbeat.interval.ms={heartbeat_ms}"),
            format!("broker.session.timeout.ms={}", opts.session_timeout_ms),
        ],
    )?;
    let started = Instant::now();
    let ids: Vec<i32> = cluster.nodes.keys().copied().collect();
    for id in ids {
        cluster.start(id)?;
    }
    if let Err(e) = cluster.wait_rejoined(started + ROUND_LIMIT).await {
        return Err(format!("starting the cluster: {e}\n{}", cluster.log_tails()).into());
    }
    println!(
        "  the nodes (pids {}) formed a cluster in {:.0} ms",
        cluster.pids(),
        ms(started.elapsed())
    );
    progress_flush();

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
    let rss: Vec<(i32, u64)> = cluster
        .nodes
        .values()
        .map(|n| (n.id, n.peak_rss_kib()))
        .collect();

    let stats = summarize(&rounds);
    print_table(
        &stats,
        &rss,
        opts.session_timeout_ms,
        heartbeat_ms,
        opts.rounds,
    );
    let json = to_json(&stats, &rss, &opts, heartbeat_ms);
    if let Some(out) = &opts.out {
        std::fs::write(out, &json)?;
        println!("cluster bench: JSON in {}", out.display());
    }
    if opts.json {
        println!("{json}");
    }
    Ok(())
}

fn progress_flush() {
    let _ = std::io::stdout().flush();
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
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
        .create_until_ok(via, &controller_topic, 1, 2, deadline)
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
    c.create_until_ok(via, &broker_topic, FAILOVER_PARTITIONS, 3, deadline)
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
    let topics = [&controller_topic, &broker_topic, &big_topic];
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

/// Time left before `deadline`, at most `cap` (and at least 1 ms: whoever waits checks the
/// deadline afterwards and says what did not happen).
fn left(deadline: Instant, cap: Duration) -> Duration {
    deadline
        .saturating_duration_since(Instant::now())
        .clamp(Duration::from_millis(1), cap.max(Duration::from_millis(1)))
}

// ----- the cluster -----

struct Node {
    id: i32,
    port: u16,
    controller_port: u16,
    data_dir: PathBuf,
    logs: PathBuf,
    starts: u32,
    log_path: PathBuf,
    child: Option<Child>,
    /// The highest peak RSS (KiB) of this node's processes that have been killed.
    killed_peak_kib: u64,
}

impl Node {
    fn pid(&self) -> Option<String> {
        self.child.as_ref().map(|c| c.id().to_string())
    }

    /// The highest peak RSS of this node's processes, the running one included.
    fn peak_rss_kib(&self) -> u64 {
        let now = self
            .pid()
            .and_then(|p| peak_rss_kib_of(&p))
            .unwrap_or_default();
        now.max(self.killed_peak_kib)
    }

    /// The last `lines` lines of the running (or last) process's output.
    fn log_tail(&self, lines: usize) -> String {
        let log = std::fs::read_to_string(&self.log_path).unwrap_or_default();
        let all: Vec<&str> = log.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }
}

/// The nodes; every running one is SIGKILLed on drop.
struct Cluster {
    broker: PathBuf,
    voters: String,
    extra: Vec<String>,
    nodes: BTreeMap<i32, Node>,
    /// One connection per node's client listener, reopened after a failure.
    conns: BTreeMap<i32, Connection>,
}

fn free_port() -> Result<u16, Error> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for n in self.nodes.values_mut() {
            if let Some(mut c) = n.child.take() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
}

impl Cluster {
    fn new(broker: &Path, dir: &Path, extra: &[String]) -> Result<Self, Error> {
        let mut nodes = BTreeMap::new();
        for id in 1..=NODES {
            nodes.insert(
                id,
                Node {
                    id,
                    port: free_port()?,
                    controller_port: free_port()?,
                    data_dir: dir.join(format!("node{id}")),
                    logs: dir.join(format!("logs{id}")),
                    starts: 0,
                    log_path: PathBuf::new(),
                    child: None,
                    killed_peak_kib: 0,
                },
            );
        }
        let voters = nodes
            .values()
            .map(|n| format!("{}@127.0.0.1:{}", n.id, n.controller_port))
            .collect::<Vec<_>>()
            .join(",");
        Ok(Self {
            broker: broker.to_path_buf(),
            voters,
            extra: extra.to_vec(),
            nodes,
            conns: BTreeMap::new(),
        })
    }

    fn node(&mut self, id: i32) -> Result<&mut Node, Error> {
        self.nodes
            .get_mut(&id)
            .ok_or_else(|| format!("no node {id}").into())
    }

    fn addr(&self, id: i32) -> String {
        format!("127.0.0.1:{}", self.nodes.get(&id).map_or(0, |n| n.port))
    }

    fn pids(&self) -> String {
        self.nodes
            .values()
            .filter_map(Node::pid)
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Starts node `id` (again, on its data directory), its output in a file per start.
    fn start(&mut self, id: i32) -> Result<(), Error> {
        let voters = self.voters.clone();
        let mut settings = vec![
            "process.roles=broker,controller".to_owned(),
            format!("node.id={id}"),
            format!("controller.quorum.voters={voters}"),
        ];
        let broker = self.broker.clone();
        let extra = self.extra.clone();
        let node = self.node(id)?;
        if node.child.is_some() {
            return Err(format!("node {id} is running").into());
        }
        settings.extend([
            format!(
                "listeners=PLAINTEXT://127.0.0.1:{},CONTROLLER://127.0.0.1:{}",
                node.port, node.controller_port
            ),
            format!("advertised.listeners=PLAINTEXT://127.0.0.1:{}", node.port),
            "controller.listener.names=CONTROLLER".to_owned(),
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT".to_owned(),
            "inter.broker.listener.name=PLAINTEXT".to_owned(),
            format!("log.dirs={}", node.data_dir.display()),
        ]);
        settings.extend(extra);
        std::fs::create_dir_all(&node.logs)?;
        node.starts += 1;
        node.log_path = node.logs.join(format!("node-{}.log", node.starts));
        let out = File::create(&node.log_path)?;
        let mut cmd = Command::new(&broker);
        for kv in &settings {
            cmd.arg("--set").arg(kv);
        }
        cmd.env("RUST_LOG", "info,raft=warn")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out);
        node.child = Some(
            cmd.spawn()
                .map_err(|e| format!("starting {}: {e}", broker.display()))?,
        );
        Ok(())
    }

    /// SIGKILLs node `id` (noting its peak RSS first) and returns the moment of the kill; the
    /// process is reaped right after.
    fn kill(&mut self, id: i32) -> Result<Instant, Error> {
        self.conns.remove(&id);
        let node = self.node(id)?;
        let mut child = node.child.take().ok_or("the node is not running")?;
        if let Some(status) = child.try_wait()? {
            return Err(format!("node {id} had exited on its own ({status})").into());
        }
        let peak = peak_rss_kib_of(&child.id().to_string()).unwrap_or_default();
        node.killed_peak_kib = node.killed_peak_kib.max(peak);
        child.kill()?;
        let at = Instant::now();
        child.wait()?;
        Ok(at)
    }

    /// An error naming every node that exited on its own.
    fn check_running(&mut self) -> Result<(), Error> {
        let mut dead = Vec::new();
        for n in self.nodes.values_mut() {
            if let Some(c) = n.child.as_mut() {
                if let Some(status) = c.try_wait()? {
                    dead.push(format!("node {} exited on its own: {status}", n.id));
                }
            }
        }
        if dead.is_empty() {
            Ok(())
        } else {
            Err(dead.join("; ").into())
        }
    }

    fn log_tails(&self) -> String {
        self.nodes
            .values()
            .map(|n| {
                format!(
                    "===== node {} (start {}, {}), last {LOG_TAIL} lines =====\n{}",
                    n.id,
                    n.starts,
                    n.log_path.display(),
                    n.log_tail(LOG_TAIL)
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn running(&self) -> Vec<i32> {
        self.nodes
            .values()
            .filter(|n| n.child.is_some())
            .map(|n| n.id)
            .collect()
    }

    /// One request to node `id`'s client listener, answered within `limit`.
    async fn call(
        &mut self,
        id: i32,
        body: RequestBody,
        version: i16,
        limit: Duration,
    ) -> Result<ResponseBody, Error> {
        let conn = match self.conns.get(&id) {
            Some(c) if !c.is_closed() => c.clone(),
            _ => {
                let cfg = ConnectionConfig {
                    connect_timeout: limit.min(Duration::from_secs(2)),
                    handshake: false,
                    ..Default::default()
                };
                let c = Connection::connect(&self.addr(id), cfg).await?;
                self.conns.insert(id, c.clone());
                c
            }
        };
        match tokio::time::timeout(limit, conn.request_at(body, version)).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(e)) => {
                self.conns.remove(&id);
                Err(format!("node {id}: {e}").into())
            }
            Err(_) => {
                self.conns.remove(&id);
                Err(format!("node {id}: no answer within {limit:?}").into())
            }
        }
    }

    async fn metadata(
        &mut self,
        id: i32,
        topics: Option<&[&str]>,
        limit: Duration,
    ) -> Result<MetadataResponse, Error> {
        let req = MetadataRequest {
            topics: topics.map(|t| {
                t.iter()
                    .map(|n| MetadataRequestTopic {
                        name: Some(KStr::from((*n).to_owned())),
                        ..Default::default()
                    })
                    .collect()
            }),
            allow_auto_topic_creation: false,
            ..Default::default()
        };
        match self
            .call(id, RequestBody::Metadata(req), METADATA_V, limit)
            .await?
        {
            ResponseBody::Metadata(m) => Ok(m),
            other => Err(format!("node {id}: Metadata answered with {:?}", other.api_key()).into()),
        }
    }

    /// The active controller, from DescribeQuorum through a broker: `(leader, whether every
    /// voter has caught up with the commit index)`.
    async fn describe_quorum(&mut self, via: i32, limit: Duration) -> Result<(i32, bool), Error> {
        let req = DescribeQuorumRequest {
            topics: vec![describe_quorum_request::TopicData {
                topic_name: KStr::from_static("__cluster_metadata"),
                partitions: vec![describe_quorum_request::PartitionData {
                    partition_index: 0,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        let answer = self
            .call(
                via,
                RequestBody::DescribeQuorum(req),
                DESCRIBE_QUORUM_V,
                limit,
            )
            .await?;
        let ResponseBody::DescribeQuorum(q) = answer else {
            return Err(format!("DescribeQuorum answered with {:?}", answer.api_key()).into());
        };
        if q.error_code != 0 {
            return Err(format!("DescribeQuorum: {:?}", ErrorCode::from(q.error_code)).into());
        }
        let p = q
            .topics
            .first()
            .and_then(|t| t.partitions.first())
            .ok_or("DescribeQuorum without a partition")?;
        if p.error_code != 0 {
            return Err(format!("DescribeQuorum: {:?}", ErrorCode::from(p.error_code)).into());
        }
        let caught_up = p.current_voters.len() == NODES as usize
            && p.current_voters
                .iter()
                .all(|v| v.last_caught_up_timestamp >= 0);
        Ok((p.leader_id, caught_up))
    }

    /// The active controller (a running node), asked through the running brokers in turn.
    async fn active_controller(&mut self, deadline: Instant) -> Result<i32, Error> {
        let mut last = String::new();
        loop {
            for via in self.running() {
                let limit = left(deadline, Duration::from_secs(5));
                match self.describe_quorum(via, limit).await {
                    Ok((leader, _)) if self.running().contains(&leader) => return Ok(leader),
                    Ok((leader, _)) => last = format!("node {via} names {leader}"),
                    Err(e) => last = e.to_string(),
                }
            }
            if Instant::now() >= deadline {
                return Err(format!("no active controller named ({last})").into());
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Waits until no running broker lists node `id` (the controller has fenced it).
    async fn wait_fenced(&mut self, id: i32, deadline: Instant) -> Result<(), Error> {
        let mut last = String::new();
        loop {
            let mut fenced = true;
            for via in self.running() {
                match self
                    .metadata(via, Some(&[]), left(deadline, Duration::from_secs(2)))
                    .await
                {
                    Ok(m) if m.brokers.iter().any(|b| b.node_id == id) => {
                        last = format!("node {via} still lists it");
                        fenced = false;
                    }
                    Ok(_) => {}
                    Err(e) => {
                        last = e.to_string();
                        fenced = false;
                    }
                }
            }
            if fenced {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(format!("node {id} was not fenced: {last}").into());
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Waits until every node runs, every broker lists all the brokers and every voter has
    /// caught up with the metadata log.
    async fn wait_rejoined(&mut self, deadline: Instant) -> Result<(), Error> {
        let all: Vec<i32> = (1..=NODES).collect();
        let mut last = String::new();
        loop {
            self.check_running()?;
            let mut ok = true;
            for id in all.clone() {
                let limit = left(deadline, Duration::from_secs(2));
                match self.metadata(id, Some(&[]), limit).await {
                    Ok(m) => {
                        let mut ids: Vec<i32> = m.brokers.iter().map(|b| b.node_id).collect();
                        ids.sort_unstable();
                        if ids != all {
                            last = format!("node {id} lists the brokers {ids:?}");
                            ok = false;
                            break;
                        }
                    }
                    Err(e) => {
                        last = e.to_string();
                        ok = false;
                        break;
                    }
                }
            }
            if ok {
                let limit = left(deadline, Duration::from_secs(5));
                match self.describe_quorum(1, limit).await {
                    Ok((_, true)) => return Ok(()),
                    Ok((_, false)) => last = "a voter has not caught up".into(),
                    Err(e) => last = e.to_string(),
                }
            }
            if Instant::now() >= deadline {
                return Err(format!("the nodes did not (re)join the cluster: {last}").into());
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// One CreateTopics request through node `via`: `name` with `partitions` partitions and
    /// replication factor `rf`. TOPIC_ALREADY_EXISTS counts as created: every name is used
    /// once, so the topic is there from an earlier attempt whose answer was lost.
    async fn create(
        &mut self,
        via: i32,
        name: &str,
        partitions: i32,
        rf: i16,
        limit: Duration,
    ) -> Result<(), Error> {
        let req = CreateTopicsRequest {
            topics: vec![CreatableTopic {
                name: KStr::from(name.to_owned()),
                num_partitions: partitions,
                replication_factor: rf,
                ..Default::default()
            }],
            timeout_ms: i32::try_from(limit.as_millis()).unwrap_or(i32::MAX),
            validate_only: false,
            ..Default::default()
        };
        let answer = self
            .call(via, RequestBody::CreateTopics(req), CREATE_TOPICS_V, limit)
            .await?;
        let ResponseBody::CreateTopics(r) = answer else {
            return Err(format!("CreateTopics answered with {:?}", answer.api_key()).into());
        };
        let t = r
            .topics
            .iter()
            .find(|t| t.name.as_str() == name)
            .ok_or("CreateTopics: the topic is not in the answer")?;
        let code = ErrorCode::from(t.error_code);
        if code.0 == 0 || code == ErrorCode::TOPIC_ALREADY_EXISTS {
            Ok(())
        } else {
            Err(format!(
                "CreateTopics {name}: {code:?} {}",
                t.error_message.as_deref().unwrap_or("")
            )
            .into())
        }
    }

    /// [`Cluster::create`] retried (every 10 ms, each attempt at most 15 s) until it succeeds
    /// or the deadline passes; the number of attempts.
    async fn create_until_ok(
        &mut self,
        via: i32,
        name: &str,
        partitions: i32,
        rf: i16,
        deadline: Instant,
    ) -> Result<u32, Error> {
        let mut attempts = 0;
        loop {
            attempts += 1;
            let limit = left(deadline, Duration::from_secs(15));
            match self.create(via, name, partitions, rf, limit).await {
                Ok(()) => return Ok(attempts),
                Err(e) if Instant::now() >= deadline => {
                    return Err(format!(
                        "creating {name} through node {via}: {attempts} attempts, the last: {e}"
                    )
                    .into());
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        }
    }

    /// Waits until every broker shows `count` partitions of `topic`, each with a leader and
    /// at least `min_isr` replicas in sync.
    async fn wait_everywhere(
        &mut self,
        topic: &str,
        count: i32,
        min_isr: usize,
        deadline: Instant,
    ) -> Result<(), Error> {
        let mut pending: Vec<i32> = (1..=NODES).collect();
        let mut last = String::new();
        while !pending.is_empty() {
            let mut still = Vec::new();
            for id in pending {
                let limit = left(deadline, Duration::from_secs(5));
                match self.metadata(id, Some(&[topic]), limit).await {
                    Ok(m) => {
                        let ready = m
                            .topics
                            .iter()
                            .find(|t| t.name.as_deref() == Some(topic) && t.error_code == 0)
                            .is_some_and(|t| {
                                t.partitions.len() == count as usize
                                    && t.partitions
                                        .iter()
                                        .all(|p| p.leader_id >= 0 && p.isr_nodes.len() >= min_isr)
                            });
                        if !ready {
                            last = format!("node {id} does not show it all yet");
                            still.push(id);
                        }
                    }
                    Err(e) => {
                        last = e.to_string();
                        still.push(id);
                    }
                }
            }
            pending = still;
            if pending.is_empty() {
                break;
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "{topic}: not every broker shows {count} partitions with leaders ({last})"
                )
                .into());
            }
            tokio::time::sleep(POLL).await;
        }
        Ok(())
    }

    /// Deletes `topics` through node `via` and waits until no broker lists them.
    async fn delete(
        &mut self,
        via: i32,
        topics: &[&String],
        deadline: Instant,
    ) -> Result<(), Error> {
        let req = DeleteTopicsRequest {
            topics: topics
                .iter()
                .map(|n| DeleteTopicState {
                    name: Some(KStr::from((*n).clone())),
                    ..Default::default()
                })
                .collect(),
            timeout_ms: 30_000,
            ..Default::default()
        };
        let limit = left(deadline, Duration::from_secs(30));
        let answer = self
            .call(via, RequestBody::DeleteTopics(req), DELETE_TOPICS_V, limit)
            .await?;
        let ResponseBody::DeleteTopics(r) = answer else {
            return Err(format!("DeleteTopics answered with {:?}", answer.api_key()).into());
        };
        if let Some(t) = r.responses.iter().find(|t| t.error_code != 0) {
            return Err(format!(
                "DeleteTopics {}: {:?}",
                t.name.as_deref().unwrap_or("?"),
                ErrorCode::from(t.error_code)
            )
            .into());
        }
        let names: Vec<&str> = topics.iter().map(|t| t.as_str()).collect();
        let mut pending: Vec<i32> = (1..=NODES).collect();
        while let Some(&id) = pending.first() {
            let limit = left(deadline, Duration::from_secs(5));
            let gone = self
                .metadata(id, Some(&names), limit)
                .await
                .is_ok_and(|m| m.topics.iter().all(|t| t.error_code != 0));
            if gone {
                pending.remove(0);
            } else {
                if Instant::now() >= deadline {
                    return Err(format!("node {id} still lists the deleted topics").into());
                }
                tokio::time::sleep(POLL).await;
            }
        }
        Ok(())
    }
}

/// A topic's partitions as (leader, isr), by index, if the answer has the topic.
fn partitions(m: &MetadataResponse, topic: &str) -> Option<Vec<(i32, Vec<i32>)>> {
    let t = m
        .topics
        .iter()
        .find(|t| t.name.as_deref() == Some(topic) && t.error_code == 0)?;
    let mut parts: Vec<_> = t
        .partitions
        .iter()
        .map(|p| (p.partition_index, p.leader_id, p.isr_nodes.clone()))
        .collect();
    parts.sort();
    Some(parts.into_iter().map(|(_, l, isr)| (l, isr)).collect())
}

// ----- the summary -----

struct Stat {
    key: &'static str,
    label: &'static str,
    samples: Vec<f64>,
}

impl Stat {
    fn sorted(&self) -> Vec<f64> {
        let mut s = self.samples.clone();
        s.sort_by(f64::total_cmp);
        s
    }
    fn min(&self) -> f64 {
        self.sorted().first().copied().unwrap_or(f64::NAN)
    }
    fn max(&self) -> f64 {
        self.sorted().last().copied().unwrap_or(f64::NAN)
    }
    fn median(&self) -> f64 {
        let s = self.sorted();
        match s.len() {
            0 => f64::NAN,
            n if n % 2 == 1 => s[n / 2],
            n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
        }
    }
}

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

fn print_table(stats: &[Stat], rss: &[(i32, u64)], session_ms: u64, heartbeat_ms: u64, n: usize) {
    println!(
        "\ncluster bench: {NODES} combined nodes, {n} round(s), \
         broker.session.timeout.ms={session_ms}, broker.heartbeat.interval.ms={heartbeat_ms}"
    );
    println!(
        "{:<46} {:>10} {:>10} {:>10}",
        "measurement (ms)", "min", "median", "max"
    );
    for s in stats {
        let note = if s.key == "broker_failover_ms" {
            format!("  (session timeout {session_ms} ms)")
        } else {
            String::new()
        };
        println!(
            "{:<46} {:>10.1} {:>10.1} {:>10.1}{note}",
            s.label,
            s.min(),
            s.median(),
            s.max()
        );
    }
    let rss: Vec<String> = rss
        .iter()
        .map(|(id, kib)| format!("node {id} {:.1} MiB", *kib as f64 / 1024.0))
        .collect();
    println!(
        "peak RSS (VmHWM, highest over each node's processes): {}",
        rss.join(", ")
    );
}

fn to_json(stats: &[Stat], rss: &[(i32, u64)], opts: &Options, heartbeat_ms: u64) -> String {
    let results: Vec<String> = stats
        .iter()
        .map(|s| {
            let samples: Vec<String> = s.samples.iter().map(|x| num(*x, 1)).collect();
            format!(
                "\"{}\":{{\"min\":{},\"median\":{},\"max\":{},\"samples\":[{}]}}",
                s.key,
                num(s.min(), 1),
                num(s.median(), 1),
                num(s.max(), 1),
                samples.join(",")
            )
        })
        .collect();
    let rss: Vec<String> = rss
        .iter()
        .map(|(id, kib)| format!("\"{id}\":{kib}"))
        .collect();
    format!(
        "{{\"bench\":\"cluster\",\"nodes\":{NODES},\"rounds\":{},\
         \"broker_session_timeout_ms\":{},\"broker_heartbeat_interval_ms\":{heartbeat_ms},\
         \"failover_partitions\":{FAILOVER_PARTITIONS},\"create_partitions\":{BIG_PARTITIONS},\
         \"results\":{{{}}},\"peak_rss_kib\":{{{}}}}}",
        opts.rounds,
        opts.session_timeout_ms,
        results.join(","),
        rss.join(",")
    )
}
