//! Apache Kafka's own broker in KRaft mode on loopback: one combined broker+controller node, or
//! a cluster of them, each a JVM with a bounded heap, its storage formatted with Kafka's
//! `StorageTool`, its log in `<dir>/node-<id>.log`. Dropping the value kills every node and
//! removes the folder.

use std::fmt::Write as _;
use std::fs::File;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crate::java::Jvm;
use crate::{PeerError, free_port};

/// The JVM options Kafka's `kafka-server-start` and `kafka-run-class` give a broker.
const SERVER_JVM: &[&str] = &[
    "-Xmx1G",
    "-Xms1G",
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-Djava.awt.headless=true",
];

/// How long a node may take to start (a JVM on a loaded 2-core machine).
const START_TIMEOUT: Duration = Duration::from_secs(120);

/// Settings of a cluster to start.
#[derive(Debug, Clone)]
pub struct KafkaOptions {
    /// Number of nodes, each a broker and a controller.
    pub nodes: usize,
    /// Partitions of an auto-created topic (`num.partitions`).
    pub partitions: u32,
    /// Extra `server.properties` lines, `key=value`, for every node.
    pub extra: Vec<(String, String)>,
    /// Run each node with the JVM settings of Kafka's own `kafka-server-start` (1 GiB heap,
    /// G1, the optimizing compiler) instead of the tests' small quick-starting JVM: for
    /// benchmarks.
    pub server_jvm: bool,
    /// The folder to create the cluster's folder in (default: the temp dir).
    pub base_dir: Option<PathBuf>,
}

impl Default for KafkaOptions {
    fn default() -> Self {
        KafkaOptions {
            nodes: 1,
            partitions: 1,
            extra: Vec::new(),
            server_jvm: false,
            base_dir: None,
        }
    }
}

/// One node's process and addresses.
#[derive(Debug)]
struct Node {
    id: u32,
    port: u16,
    config: PathBuf,
    log: PathBuf,
    child: Option<Child>,
}

/// A running Apache Kafka cluster.
#[derive(Debug)]
pub struct ApacheKafka {
    jvm: Jvm,
    server_jvm: bool,
    dir: PathBuf,
    nodes: Vec<Node>,
}

impl ApacheKafka {
    /// Formats and starts `options.nodes` nodes and waits until each serves requests.
    pub fn start(jvm: &Jvm, options: &KafkaOptions) -> Result<ApacheKafka, PeerError> {
        let dir =
            std::env::temp_dir().join(format!("apache-kafka-{}-{}", std::process::id(), unique()));
        std::fs::create_dir_all(&dir)
            .map_err(PeerError::io(format!("creating {}", dir.display())))?;
        let n = options.nodes.max(1);
        let mut ports = Vec::with_capacity(n);
        for _ in 0..n {
            ports.push((free_port()?, free_port()?));
        }
        let voters: Vec<String> = ports
            .iter()
            .enumerate()
            .map(|(i, (_, c))| format!("{}@127.0.0.1:{c}", i + 1))
            .collect();
        let voters = voters.join(",");
        let rf = n.min(3);
        let cluster_id = cluster_id();
        let mut kafka = ApacheKafka {
            jvm: jvm.clone(),
            server_jvm: options.server_jvm,
            dir: dir.clone(),
            nodes: Vec::with_capacity(n),
        };
        for (i, (port, controller_port)) in ports.iter().enumerate() {
            let id = u32::try_from(i + 1).unwrap_or(u32::MAX);
            let mut props = String::new();
            let _ = write!(
                props,
                "process.roles=broker,controller\n\
                 node.id={id}\n\
                 controller.quorum.voters={voters}\n\
                 listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}\n\
                 advertised.listeners=PLAINTEXT://127.0.0.1:{port}\n\
                 controller.listener.names=CONTROLLER\n\
                 inter.broker.listener.name=PLAINTEXT\n\
                 listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT\n\
                 log.dirs={}\n\
                 num.partitions={}\n\
                 offsets.topic.replication.factor={rf}\n\
                 offsets.topic.num.partitions=5\n\
                 transaction.state.log.replication.factor={rf}\n\
                 transaction.state.log.min.isr=1\n\
                 transaction.state.log.num.partitions=5\n\
                 group.initial.rebalance.delay.ms=0\n\
                 share.coordinator.state.topic.replication.factor={rf}\n\
                 share.coordinator.state.topic.min.isr=1\n",
                dir.join(format!("data-{id}")).display(),
                options.partitions,
            );
            for (k, v) in &options.extra {
                let _ = writeln!(props, "{k}={v}");
            }
            let config = dir.join(format!("node-{id}.properties"));
            std::fs::write(&config, props)
                .map_err(PeerError::io(format!("writing {}", config.display())))?;
            jvm.run(
                "kafka.tools.StorageTool",
                &[
                    "format",
                    "--cluster-id",
                    &cluster_id,
                    "--config",
                    &config.display().to_string(),
                    "--ignore-formatted",
                ],
                None,
                Duration::from_secs(120),
            )?;
            kafka.nodes.push(Node {
                id,
                port: *port,
                log: dir.join(format!("node-{id}.log")),
                config,
                child: None,
            });
        }
        for i in 0..kafka.nodes.len() {
            kafka.spawn(i)?;
        }
        for i in 0..kafka.nodes.len() {
            kafka.wait_ready(i)?;
        }
        Ok(kafka)
    }

    /// `host:port` of every node, comma-separated, as clients take `bootstrap.servers`.
    pub fn bootstrap(&self) -> String {
        let all: Vec<String> = self
            .nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        all.join(",")
    }

    /// The client address of node `index` (0-based).
    pub fn addr(&self, index: usize) -> Option<SocketAddr> {
        self.nodes
            .get(index)
            .map(|n| SocketAddr::from(([127, 0, 0, 1], n.port)))
    }

    /// The node ids, in order (1-based, as `node.id`).
    pub fn node_ids(&self) -> Vec<u32> {
        self.nodes.iter().map(|n| n.id).collect()
    }

    /// The folder holding every node's config, data and log.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The data folder (`log.dirs`) of node `index`.
    pub fn data_dir(&self, index: usize) -> Option<PathBuf> {
        self.nodes
            .get(index)
            .map(|n| self.dir.join(format!("data-{}", n.id)))
    }

    /// Kills node `index` with SIGKILL and waits for it to be gone.
    pub fn kill(&mut self, index: usize) {
        if let Some(node) = self.nodes.get_mut(index)
            && let Some(mut child) = node.child.take()
        {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts node `index` again (after [`ApacheKafka::kill`]) and waits until it serves.
    pub fn restart(&mut self, index: usize) -> Result<(), PeerError> {
        self.kill(index);
        self.spawn(index)?;
        self.wait_ready(index)
    }

    /// The process id of node `index`, while it runs.
    pub fn pid(&self, index: usize) -> Option<u32> {
        self.nodes
            .get(index)
            .and_then(|n| n.child.as_ref())
            .map(Child::id)
    }

    /// What node `index` logged so far.
    pub fn log(&self, index: usize) -> String {
        self.nodes
            .get(index)
            .and_then(|n| std::fs::read_to_string(&n.log).ok())
            .unwrap_or_default()
    }

    fn spawn(&mut self, index: usize) -> Result<(), PeerError> {
        let Some(node) = self.nodes.get_mut(index) else {
            return Err(PeerError::Failed(format!("no node {index}")));
        };
        let log = File::options()
            .create(true)
            .append(true)
            .open(&node.log)
            .map_err(PeerError::io(format!("opening {}", node.log.display())))?;
        let err = log
            .try_clone()
            .map_err(PeerError::io("duplicating a log handle"))?;
        // The line that says the node is up is an info line of KafkaRaftServer.
        let ready_line = "-Dorg.slf4j.simpleLogger.log.kafka.server.KafkaRaftServer=info";
        let mut cmd = if self.server_jvm {
            let mut options = SERVER_JVM.to_vec();
            options.push("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn");
            options.push(ready_line);
            self.jvm.command_bare(&options, "kafka.Kafka")
        } else {
            self.jvm.command_with(&[ready_line], "kafka.Kafka")
        };
        cmd.arg(&node.config)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err);
        let child = cmd
            .spawn()
            .map_err(PeerError::io("starting the Apache Kafka broker"))?;
        node.child = Some(child);
        Ok(())
    }

    /// Waits until node `index` logs that it started and accepts connections.
    fn wait_ready(&mut self, index: usize) -> Result<(), PeerError> {
        let deadline = Instant::now() + START_TIMEOUT;
        let (port, log) = match self.nodes.get(index) {
            Some(n) => (n.port, n.log.clone()),
            None => return Err(PeerError::Failed(format!("no node {index}"))),
        };
        loop {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            let started = text.contains("Kafka Server started");
            if started
                && TcpStream::connect_timeout(
                    &SocketAddr::from(([127, 0, 0, 1], port)),
                    Duration::from_secs(1),
                )
                .is_ok()
            {
                return Ok(());
            }
            let exited = self
                .nodes
                .get_mut(index)
                .and_then(|n| n.child.as_mut())
                .is_none_or(|c| !matches!(c.try_wait(), Ok(None)));
            if exited || Instant::now() > deadline {
                let why = if exited {
                    "exited"
                } else {
                    "did not start in time"
                };
                return Err(PeerError::Failed(format!(
                    "Apache Kafka node {} {why}; its log:\n{}",
                    index + 1,
                    tail_lines(&text, 60)
                )));
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for ApacheKafka {
    fn drop(&mut self) {
        for i in 0..self.nodes.len() {
            self.kill(i);
        }
        if std::env::var_os("KAFKA_RS_KEEP_PEER_DIRS").is_none() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

fn tail_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// A process-unique counter, for folder names.
fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// A cluster id as Kafka writes one: 16 random bytes in URL-safe base64 without padding, never
/// starting with '-' (as Kafka's own random ids: a command line would read it as an option).
fn cluster_id() -> String {
    loop {
        let id = random_id();
        if !id.starts_with('-') {
            return id;
        }
    }
}

fn random_id() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut bytes = [0u8; 16];
    for (i, chunk) in bytes.chunks_mut(8).enumerate() {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(unique() ^ (i as u64));
        h.write_u32(std::process::id());
        chunk.copy_from_slice(&h.finish().to_le_bytes());
    }
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::with_capacity(22);
    let mut acc: u32 = 0;
    let mut bits = 0;
    for b in bytes {
        acc = (acc << 8) | u32::from(b);
        bits += 8;
        while bits >= 6 {
            bits -= 6;
            out.push(char::from(ALPHABET[((acc >> bits) & 63) as usize]));
        }
    }
    if bits > 0 {
        out.push(char::from(ALPHABET[((acc << (6 - bits)) & 63) as usize]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_ids_are_22_url_safe_characters_and_differ() {
        let a = cluster_id();
        let b = cluster_id();
        assert_eq!(a.len(), 22, "{a}");
        assert!(
            a.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        );
        assert_ne!(a, b);
    }

    #[test]
    fn cluster_ids_never_start_with_a_dash() {
        // One random id in 64 starts with '-' (StorageTool then reads it as an option).
        for _ in 0..2000 {
            let id = cluster_id();
            assert!(!id.starts_with('-'), "{id}");
        }
    }
}
