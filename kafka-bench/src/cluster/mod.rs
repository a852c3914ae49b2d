//! Three combined `kafka-broker` nodes (`process.roles=broker,controller`) as child processes
//! on 127.0.0.1, for the cluster benchmarks (`cluster_bench`, `replication_bench`).
//!
//! [`Cluster`] starts each node with `--set` keys (free loopback ports for its client and
//! controller listeners, its own data directory, its output in a file per start), SIGKILLs
//! and restarts nodes, keeps one `kafka-net` connection per node's client listener for the
//! admin requests the benchmarks time (Metadata, DescribeQuorum, CreateTopics, DeleteTopics)
//! and waits for what they wait on: an active controller, a killed node fenced, every node
//! back in the cluster, a topic's partitions on every broker. Every wait takes a deadline and
//! says, when it passes, what it last saw; [`Cluster::log_tails`] gives the nodes' logs for
//! the error. Every node still running is SIGKILLed when the `Cluster` is dropped, so a
//! benchmark leaves no process behind on any way out (and the data directory of
//! [`Cluster::for_bench`] goes after them). Each node's peak RSS (`VmHWM`) is the highest over
//! its processes, the killed ones included. [`BenchOptions`], [`run_main`] and [`Stat`] (in
//! `run.rs`) are what the benchmarks share besides the cluster.

mod run;

use std::collections::BTreeMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kafka_net::{Connection, ConnectionConfig};
use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{
    CreateTopicsRequest, DeleteTopicsRequest, DescribeQuorumRequest, MetadataRequest,
    MetadataResponse, RequestBody, ResponseBody, describe_quorum_request,
};

use crate::cpu_time_of;
use crate::harness::{Error, TempDir};
use crate::peak_rss_kib_of;

pub use run::{BenchOptions, Stat, ms, print_stats, progress_flush, run_main};

/// Node ids `1..=NODES`, every one combined (broker and controller).
pub const NODES: i32 = 3;
/// Poll interval of the waits.
const POLL: Duration = Duration::from_millis(20);
/// Lines of each node's log in [`Cluster::log_tails`].
const LOG_TAIL: usize = 40;

// The versions spoken to the brokers.
const METADATA_V: i16 = 12;
const CREATE_TOPICS_V: i16 = 7;
const DELETE_TOPICS_V: i16 = 6;
const DESCRIBE_QUORUM_V: i16 = 2;

/// Time left before `deadline`, at most `cap` (and at least 1 ms: whoever waits checks the
/// deadline afterwards and says what did not happen).
pub fn left(deadline: Instant, cap: Duration) -> Duration {
    deadline
        .saturating_duration_since(Instant::now())
        .clamp(Duration::from_millis(1), cap.max(Duration::from_millis(1)))
}

/// One node: its ports and directories, and its process when running.
#[derive(Debug)]
pub struct Node {
    pub id: i32,
    pub port: u16,
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
    /// The running process's id.
    pub fn pid(&self) -> Option<String> {
        self.child.as_ref().map(|c| c.id().to_string())
    }

    /// The highest peak RSS of this node's processes, the running one included.
    pub fn peak_rss_kib(&self) -> u64 {
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
pub struct Cluster {
    /// Where the nodes' data and logs are.
    root: PathBuf,
    /// The data directory of [`Cluster::for_bench`], removed (after the kills) on drop.
    tmp: Option<TempDir>,
    broker: PathBuf,
    voters: String,
    extra: Vec<String>,
    pub nodes: BTreeMap<i32, Node>,
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
    /// [`NODES`] nodes of the broker binary `broker`, their data and logs under `dir`, each
    /// started with `extra` (`key=value`) after the keys that make the cluster. None runs
    /// yet: see [`Cluster::start_all`].
    pub fn new(broker: &Path, dir: &Path, extra: &[String]) -> Result<Self, Error> {
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
            root: dir.to_path_buf(),
            tmp: None,
            broker: broker.to_path_buf(),
            voters,
            extra: extra.to_vec(),
            nodes,
            conns: BTreeMap::new(),
        })
    }

    /// The nodes of a benchmark run with `opts` (the broker binary, the session timeout and
    /// heartbeat interval), their data in a fresh directory `<name>-<pid>` under `--dir` or
    /// the temp dir (on disk, not in memory: the metadata log's and the followers' writes
    /// are part of what is measured), removed when the cluster is dropped.
    pub fn for_bench(opts: &BenchOptions, name: &str) -> Result<Self, Error> {
        let tmp = TempDir::new(
            Some(opts.dir.clone().unwrap_or_else(std::env::temp_dir)),
            name,
        )?;
        let mut c = Self::new(
            &opts.broker,
            &tmp.0,
            &[
                format!("broker.heartbeat.interval.ms={}", opts.heartbeat_ms()),
                format!("broker.session.timeout.ms={}", opts.session_timeout_ms),
            ],
        )?;
        c.tmp = Some(tmp);
        Ok(c)
    }

    /// Where the nodes' data and logs are.
    pub fn dir(&self) -> &Path {
        &self.root
    }

    fn node(&mut self, id: i32) -> Result<&mut Node, Error> {
        self.nodes
            .get_mut(&id)
            .ok_or_else(|| format!("no node {id}").into())
    }

    /// Node `id`'s client listener, `127.0.0.1:PORT`.
    pub fn addr(&self, id: i32) -> String {
        format!("127.0.0.1:{}", self.nodes.get(&id).map_or(0, |n| n.port))
    }

    /// Every node's client listener, comma-separated (`bootstrap.servers`).
    pub fn bootstrap(&self) -> String {
        self.nodes
            .keys()
            .map(|&id| self.addr(id))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The running processes' ids, comma-separated.
    pub fn pids(&self) -> String {
        self.nodes
            .values()
            .filter_map(Node::pid)
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// CPU time (user + system) the running nodes' processes have used so far, summed;
    /// `None` if one cannot be read.
    pub fn cpu_time(&self) -> Option<Duration> {
        self.nodes
            .values()
            .filter_map(Node::pid)
            .map(|p| cpu_time_of(&p))
            .sum()
    }

    /// Each node's peak RSS in KiB (see [`Node::peak_rss_kib`]), by id.
    pub fn peak_rss_kib(&self) -> Vec<(i32, u64)> {
        self.nodes
            .values()
            .map(|n| (n.id, n.peak_rss_kib()))
            .collect()
    }

    /// The summary line of [`Cluster::peak_rss_kib`].
    pub fn peak_rss_line(&self) -> String {
        let rss: Vec<String> = self
            .peak_rss_kib()
            .iter()
            .map(|(id, kib)| format!("node {id} {:.1} MiB", *kib as f64 / 1024.0))
            .collect();
        format!(
            "peak RSS (VmHWM, highest over each node's processes): {}",
            rss.join(", ")
        )
    }

    /// [`Cluster::peak_rss_kib`] as a JSON object, KiB by node id.
    pub fn peak_rss_json(&self) -> String {
        let rss: Vec<String> = self
            .peak_rss_kib()
            .iter()
            .map(|(id, kib)| format!("\"{id}\":{kib}"))
            .collect();
        format!("{{{}}}", rss.join(","))
    }

    /// Starts every node and waits (until `deadline`) until they form the cluster, then
    /// prints how long that took; the error carries the nodes' log tails.
    pub async fn start_all(&mut self, deadline: Instant) -> Result<(), Error> {
        let started = Instant::now();
        let ids: Vec<i32> = self.nodes.keys().copied().collect();
        for id in ids {
            self.start(id)?;
        }
        if let Err(e) = self.wait_rejoined(deadline).await {
            return Err(format!("starting the cluster: {e}\n{}", self.log_tails()).into());
        }
        println!(
            "  the nodes (pids {}) formed a cluster in {:.0} ms",
            self.pids(),
            ms(started.elapsed())
        );
        progress_flush();
        Ok(())
    }

    /// Starts node `id` (again, on its data directory), its output in a file per start.
    pub fn start(&mut self, id: i32) -> Result<(), Error> {
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
    pub fn kill(&mut self, id: i32) -> Result<Instant, Error> {
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
    pub fn check_running(&mut self) -> Result<(), Error> {
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

    /// The last lines of every node's log, headed by the node and the file.
    pub fn log_tails(&self) -> String {
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

    /// The ids of the nodes that run.
    pub fn running(&self) -> Vec<i32> {
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

    /// Metadata (v12) from node `id`: of `topics` (`None`: every topic; `Some(&[])`: only
    /// the brokers), never creating one.
    pub async fn metadata(
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
    pub async fn active_controller(&mut self, deadline: Instant) -> Result<i32, Error> {
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
    pub async fn wait_fenced(&mut self, id: i32, deadline: Instant) -> Result<(), Error> {
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
    pub async fn wait_rejoined(&mut self, deadline: Instant) -> Result<(), Error> {
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

    /// One CreateTopics request through node `via`: `name` with `partitions` partitions,
    /// replication factor `rf` and the topic configs `configs`. TOPIC_ALREADY_EXISTS counts
    /// as created: every name is used once, so the topic is there from an earlier attempt
    /// whose answer was lost.
    pub async fn create(
        &mut self,
        via: i32,
        name: &str,
        partitions: i32,
        rf: i16,
        configs: &[(&str, &str)],
        limit: Duration,
    ) -> Result<(), Error> {
        let req = CreateTopicsRequest {
            topics: vec![CreatableTopic {
                name: KStr::from(name.to_owned()),
                num_partitions: partitions,
                replication_factor: rf,
                configs: configs
                    .iter()
                    .map(|(k, v)| CreatableTopicConfig {
                        name: KStr::from((*k).to_owned()),
                        value: Some(KStr::from((*v).to_owned())),
                        ..Default::default()
                    })
                    .collect(),
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
    pub async fn create_until_ok(
        &mut self,
        via: i32,
        name: &str,
        partitions: i32,
        rf: i16,
        configs: &[(&str, &str)],
        deadline: Instant,
    ) -> Result<u32, Error> {
        let mut attempts = 0;
        loop {
            attempts += 1;
            let limit = left(deadline, Duration::from_secs(15));
            match self.create(via, name, partitions, rf, configs, limit).await {
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
    pub async fn wait_everywhere(
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
                        let ready = partitions(&m, topic).is_some_and(|p| {
                            p.len() == count as usize
                                && p.iter()
                                    .all(|(leader, isr)| *leader >= 0 && isr.len() >= min_isr)
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
    pub async fn delete(
        &mut self,
        via: i32,
        topics: &[&str],
        deadline: Instant,
    ) -> Result<(), Error> {
        let req = DeleteTopicsRequest {
            topics: topics
                .iter()
                .map(|n| DeleteTopicState {
                    name: Some(KStr::from((*n).to_owned())),
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
        let mut pending: Vec<i32> = (1..=NODES).collect();
        while let Some(&id) = pending.first() {
            let limit = left(deadline, Duration::from_secs(5));
            let gone = self
                .metadata(id, Some(topics), limit)
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
pub fn partitions(m: &MetadataResponse, topic: &str) -> Option<Vec<(i32, Vec<i32>)>> {
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
