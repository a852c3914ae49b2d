//! A cluster of real `kafka-broker` processes: each node started with Kafka's keys through
//! `--set` (`process.roles`, `node.id`, `controller.quorum.voters`, `listeners`, ...), its
//! output in a file per start, SIGKILLed, stopped and continued, restarted on its data
//! directory. On 127.0.0.1, ports are picked free by binding port 0 and letting go (the
//! quorum's voters must be named before any node starts); a node may instead live in a network
//! namespace of its own ([`Cluster::placed`]), started through `ip netns exec` and listening on
//! that namespace's address.

use std::collections::BTreeMap;
use std::fs::File;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use kafka_net::cluster::ClusterConfig;
use kafka_net::connection::{Connection, ConnectionConfig};
use kafka_net::{Admin, ClientSecurity};
use kafka_protocol::KStr;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    DescribeQuorumRequest, DescribeQuorumResponse, MetadataRequest, MetadataResponse,
    ProduceRequest, RequestBody, ResponseBody, describe_quorum_request,
};
use kafka_protocol::record::RecordBatchBuilder;

/// The security every client connection of this file's helpers uses (plaintext until a test
/// of a secured cluster sets it with [`use_client_security`]; one per test process).
static CLIENT_SECURITY: std::sync::RwLock<Option<ClientSecurity>> = std::sync::RwLock::new(None);

/// Makes the helpers of this file connect with `security` from now on (tests of one process
/// that need different ones must not run at the same time).
pub(crate) fn use_client_security(security: ClientSecurity) {
    *CLIENT_SECURITY
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(security);
}

fn client_security() -> ClientSecurity {
    CLIENT_SECURITY
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone()
        .unwrap_or_default()
}

/// A node's roles.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    Combined,
    Controller,
    Broker,
}

/// Where a node runs: its network namespace (`None`: this one) and the address it listens on.
#[derive(Debug, Clone)]
pub(crate) struct Place {
    pub(crate) netns: Option<String>,
    pub(crate) host: String,
}

/// The lines of a node's output a failure message shows.
const LOG_TAIL_LINES: usize = 80;

pub(crate) struct Node {
    pub(crate) id: i32,
    pub(crate) role: Role,
    pub(crate) place: Place,
    /// The client listener (brokers).
    pub(crate) port: Option<u16>,
    /// The controller listener (controllers).
    pub(crate) controller_port: Option<u16>,
    pub(crate) data_dir: PathBuf,
    logs: PathBuf,
    starts: u32,
    child: Option<Child>,
    log_path: PathBuf,
    /// More `key=value` settings of this node alone.
    pub(crate) settings: Vec<String>,
}

pub(crate) struct Cluster {
    _dir: tempfile::TempDir,
    pub(crate) nodes: BTreeMap<i32, Node>,
    voters: String,
    extra: Vec<String>,
}

/// A port free now and not handed out before by this test process (the kernel may give the
/// same free port to two binds in a row once the first lets go, and two listeners of one
/// cluster must not get the same one).
pub(crate) fn free_port() -> u16 {
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let mut given = GIVEN
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    loop {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        if !given.contains(&port) {
            given.push(port);
            return port;
        }
    }
}

impl Cluster {
    /// Nodes `1..` with these roles; `extra` are more `key=value` settings for every node.
    pub(crate) fn new(roles: &[Role], extra: &[&str]) -> Self {
        let loopback = Place {
            netns: None,
            host: "127.0.0.1".to_owned(),
        };
        Self::build(roles, extra, |_| {
            (loopback.clone(), free_port(), free_port())
        })
    }

    /// Nodes `1..` with these roles, node `i + 1` in `places[i]` (its own namespace and
    /// address: the ports are Kafka's usual 9092 for clients and 9093 for the controller).
    pub(crate) fn placed(roles: &[Role], extra: &[&str], places: &[Place]) -> Self {
        assert_eq!(roles.len(), places.len(), "one place per node");
        Self::build(roles, extra, |i| (places[i].clone(), 9092, 9093))
    }

    fn build(roles: &[Role], extra: &[&str], place: impl Fn(usize) -> (Place, u16, u16)) -> Self {
        let mut dir = tempfile::tempdir().unwrap();
        // KAFKA_RS_KEEP_CLUSTER=1 leaves the data and logs behind for a look after the test.
        if std::env::var_os("KAFKA_RS_KEEP_CLUSTER").is_some() {
            dir.disable_cleanup(true);
            eprintln!("cluster files kept in {}", dir.path().display());
        }
        let mut nodes = BTreeMap::new();
        for (i, role) in roles.iter().enumerate() {
            let id = i as i32 + 1;
            let (place, client, controller) = place(i);
            let port = (*role != Role::Controller).then_some(client);
            let controller_port = (*role != Role::Broker).then_some(controller);
            nodes.insert(
                id,
                Node {
                    id,
                    role: *role,
                    place,
                    port,
                    controller_port,
                    data_dir: dir.path().join(format!("node{id}")),
                    logs: dir.path().join(format!("logs{id}")),
                    starts: 0,
                    child: None,
                    log_path: PathBuf::new(),
                    settings: Vec::new(),
                },
            );
        }
        let voters = nodes
            .values()
            .filter_map(|n| {
                n.controller_port
                    .map(|p| format!("{}@{}:{p}", n.id, n.place.host))
            })
            .collect::<Vec<_>>()
            .join(",");
        Self {
            _dir: dir,
            nodes,
            voters,
            extra: extra.iter().map(|s| (*s).to_owned()).collect(),
        }
    }

    pub(crate) fn node(&mut self, id: i32) -> &mut Node {
        self.nodes.get_mut(&id).unwrap()
    }

    /// `host:port` of every broker's client listener.
    pub(crate) fn bootstrap(&self) -> String {
        self.brokers()
            .iter()
            .map(|id| self.addr(*id))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Ids of the nodes with the broker role.
    pub(crate) fn brokers(&self) -> Vec<i32> {
        self.nodes
            .values()
            .filter(|n| n.role != Role::Controller)
            .map(|n| n.id)
            .collect()
    }

    pub(crate) fn addr(&self, id: i32) -> String {
        let n = &self.nodes[&id];
        format!("{}:{}", n.place.host, n.port.unwrap())
    }

    /// The client listeners of the running brokers.
    pub(crate) fn running_addrs(&self) -> Vec<String> {
        self.brokers()
            .into_iter()
            .filter(|id| self.nodes[id].is_running())
            .map(|id| self.addr(id))
            .collect()
    }

    pub(crate) fn start_all(&mut self) {
        let ids: Vec<i32> = self.nodes.keys().copied().collect();
        for id in ids {
            self.start(id);
        }
    }

    /// Starts node `id` (again, on its data directory).
    pub(crate) fn start(&mut self, id: i32) {
        let voters = self.voters.clone();
        let extra = self.extra.clone();
        let node = self.node(id);
        assert!(node.child.is_none(), "node {id} is running");
        std::fs::create_dir_all(&node.logs).unwrap();
        node.starts += 1;
        node.log_path = node.logs.join(format!("node-{}.log", node.starts));
        let out = File::create(&node.log_path).unwrap();
        let err = out.try_clone().unwrap();
        let host = node.place.host.clone();
        let plain = node.port.map(|p| format!("PLAINTEXT://{host}:{p}"));
        let controller = node
            .controller_port
            .map(|p| format!("CONTROLLER://{host}:{p}"));
        let (roles, listeners, advertised) = match node.role {
            Role::Combined => (
                "broker,controller",
                format!("{},{}", plain.clone().unwrap(), controller.unwrap()),
                plain,
            ),
            Role::Controller => ("controller", controller.unwrap(), None),
            Role::Broker => ("broker", plain.clone().unwrap(), plain),
        };
        let mut settings = vec![
            format!("process.roles={roles}"),
            format!("node.id={id}"),
            format!("controller.quorum.voters={voters}"),
            format!("listeners={listeners}"),
            "controller.listener.names=CONTROLLER".to_owned(),
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT".to_owned(),
            format!("log.dirs={}", node.data_dir.display()),
        ];
        if node.role != Role::Controller {
            settings.push("inter.broker.listener.name=PLAINTEXT".to_owned());
        }
        if let Some(a) = advertised {
            settings.push(format!("advertised.listeners={a}"));
        }
        settings.extend(extra);
        settings.extend(node.settings.iter().cloned());
        let bin = env!("CARGO_BIN_EXE_kafka-broker");
        // `ip netns exec` execs the broker: the child's pid is the broker's.
        let mut cmd = match &node.place.netns {
            Some(ns) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", ns, bin]);
                c
            }
            None => Command::new(bin),
        };
        for kv in &settings {
            cmd.arg("--set").arg(kv);
        }
        cmd.env("RUST_LOG", "info,raft=warn")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        node.child = Some(cmd.spawn().unwrap());
    }

    /// SIGKILL, reaped.
    pub(crate) fn kill(&mut self, id: i32) {
        let node = self.node(id);
        let mut child = node.child.take().expect("the node is not running");
        if let Some(status) = child.try_wait().unwrap() {
            panic!(
                "node {id} died on its own ({status}); output:\n{}",
                node.log()
            );
        }
        child.kill().unwrap();
        child.wait().unwrap();
    }

    /// Sends `signal` (`STOP`, `CONT`, ...) to a running node with kill(1).
    pub(crate) fn signal(&mut self, id: i32, signal: &str) {
        let node = self.node(id);
        let pid = node.child.as_ref().expect("the node is not running").id();
        let ok = Command::new("kill")
            .args([&format!("-{signal}"), &pid.to_string()])
            .status()
            .unwrap()
            .success();
        assert!(ok, "kill -{signal} {pid} failed");
    }

    /// The tail of every node's output (its current start), for a failure message.
    pub(crate) fn logs(&self) -> String {
        self.nodes
            .values()
            .map(|n| {
                let log = n.log();
                let lines: Vec<&str> = log.lines().collect();
                let tail = &lines[lines.len().saturating_sub(LOG_TAIL_LINES)..];
                format!(
                    "===== node {} ({:?}), last {} lines of start {} =====\n{}",
                    n.id,
                    n.role,
                    tail.len(),
                    n.starts,
                    tail.join("\n")
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Checks that no node has exited on its own.
    pub(crate) fn assert_running(&mut self) {
        let mut dead = Vec::new();
        for n in self.nodes.values_mut() {
            if let Some(c) = n.child.as_mut() {
                if let Some(status) = c.try_wait().unwrap() {
                    dead.push(format!("node {} exited: {status}", n.id));
                }
            }
        }
        assert!(dead.is_empty(), "{dead:?}\n{}", self.logs());
    }

    /// Polls `f` every 100 ms until it is `Some`, at most `timeout`; panics with the logs.
    pub(crate) async fn eventually<T, F, Fut>(
        &mut self,
        what: &str,
        timeout: Duration,
        mut f: F,
    ) -> T
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Option<T>>,
    {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(v) = f().await {
                return v;
            }
            if Instant::now() >= deadline {
                self.assert_running();
                panic!("{what}: not within {timeout:?}\n{}", self.logs());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Node {
    /// The output of the node's current (or last) start.
    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    /// The output of every start, oldest first.
    pub(crate) fn all_logs(&self) -> String {
        (1..=self.starts)
            .map(|k| {
                std::fs::read_to_string(self.logs.join(format!("node-{k}.log"))).unwrap_or_default()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    pub(crate) fn is_running(&self) -> bool {
        self.child.is_some()
    }
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

/// A topic config as one broker describes it (DescribeConfigs v4).
pub(crate) async fn topic_config(addr: &str, topic: &str, key: &str) -> Option<Option<String>> {
    use kafka_protocol::messages::DescribeConfigsRequest;
    use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
    let cfg = ConnectionConfig {
        connect_timeout: Duration::from_secs(2),
        handshake: false,
        security: client_security(),
        ..Default::default()
    };
    let conn = Connection::connect(addr, cfg).await.ok()?;
    let req = DescribeConfigsRequest {
        resources: vec![DescribeConfigsResource {
            resource_type: 2,
            resource_name: kafka_protocol::KStr::from(topic.to_owned()),
            configuration_keys: Some(vec![kafka_protocol::KStr::from(key.to_owned())]),
            ..Default::default()
        }],
        ..Default::default()
    };
    let answer = tokio::time::timeout(
        Duration::from_secs(5),
        conn.request_at(RequestBody::DescribeConfigs(req), 4),
    )
    .await
    .ok()?
    .ok()?;
    let ResponseBody::DescribeConfigs(r) = answer else {
        return None;
    };
    let result = r.results.first().filter(|r| r.error_code == 0)?;
    Some(
        result
            .configs
            .iter()
            .find(|c| c.name.as_str() == key)
            .and_then(|c| c.value.as_deref().map(str::to_owned)),
    )
}

/// The active controller among `among`, as DescribeQuorum through the first of them names
/// the quorum's leader (Metadata's controller id is the broker asked: brokers forward).
pub(crate) async fn active_controller(c: &mut Cluster, among: &[i32]) -> i32 {
    let addr = c.addr(among[0]);
    let among = among.to_vec();
    c.eventually("the quorum names a leader", Duration::from_secs(20), || {
        let addr = addr.clone();
        let among = among.clone();
        async move {
            let (leader, _, _) = describe_quorum(&addr).await?;
            among.contains(&leader).then_some(leader)
        }
    })
    .await
}

/// DescribeQuorum (v2) through one broker: (leader id, voter ids, observer ids).
pub(crate) async fn describe_quorum(addr: &str) -> Option<(i32, Vec<i32>, Vec<i32>)> {
    let r = describe_quorum_at(addr, 2).await?;
    let p = r.topics.first()?.partitions.first()?;
    if r.error_code != 0 || p.error_code != 0 {
        return None;
    }
    let mut voters: Vec<i32> = p.current_voters.iter().map(|v| v.replica_id).collect();
    let mut observers: Vec<i32> = p.observers.iter().map(|v| v.replica_id).collect();
    voters.sort_unstable();
    observers.sort_unstable();
    Some((p.leader_id, voters, observers))
}

/// One request at `version` to one broker, on a connection of its own; `None` if the broker
/// cannot be reached or does not answer within 5 s.
pub(crate) async fn request(addr: &str, body: RequestBody, version: i16) -> Option<ResponseBody> {
    let cfg = ConnectionConfig {
        connect_timeout: Duration::from_secs(2),
        handshake: false,
        security: client_security(),
        ..Default::default()
    };
    let conn = Connection::connect(addr, cfg).await.ok()?;
    tokio::time::timeout(Duration::from_secs(5), conn.request_at(body, version))
        .await
        .ok()?
        .ok()
}

/// A Metadata request (v12) to one broker: every topic, or `topics`.
pub(crate) async fn metadata(addr: &str, topics: Option<&[&str]>) -> Option<MetadataResponse> {
    let req = MetadataRequest {
        topics: topics.map(|t| {
            t.iter()
                .map(|n| MetadataRequestTopic {
                    name: Some(kafka_protocol::KStr::from((*n).to_owned())),
                    ..Default::default()
                })
                .collect()
        }),
        allow_auto_topic_creation: false,
        ..Default::default()
    };
    match request(addr, RequestBody::Metadata(req), 12).await? {
        ResponseBody::Metadata(m) => Some(m),
        _ => None,
    }
}

/// A DescribeQuorum request (for `__cluster_metadata`-0) at `version` to one broker.
pub(crate) async fn describe_quorum_at(addr: &str, version: i16) -> Option<DescribeQuorumResponse> {
    let cfg = ConnectionConfig {
        connect_timeout: Duration::from_secs(2),
        handshake: false,
        security: client_security(),
        ..Default::default()
    };
    let conn = Connection::connect(addr, cfg).await.ok()?;
    let req = DescribeQuorumRequest {
        topics: vec![describe_quorum_request::TopicData {
            topic_name: kafka_protocol::KStr::from_static("__cluster_metadata"),
            partitions: vec![describe_quorum_request::PartitionData::default()],
            ..Default::default()
        }],
        ..Default::default()
    };
    let answer = tokio::time::timeout(
        Duration::from_secs(5),
        conn.request_at(RequestBody::DescribeQuorum(req), version),
    )
    .await
    .ok()?
    .ok()?;
    match answer {
        ResponseBody::DescribeQuorum(q) => Some(q),
        _ => None,
    }
}

/// One partition as (index, leader, replicas, isr).
pub(crate) type PartitionRow = (i32, i32, Vec<i32>, Vec<i32>);

/// A topic's partitions as (index, leader, replicas, isr), sorted.
pub(crate) fn partitions(m: &MetadataResponse, topic: &str) -> Option<Vec<PartitionRow>> {
    let t = m
        .topics
        .iter()
        .find(|t| t.name.as_deref() == Some(topic) && t.error_code == 0)?;
    let mut out: Vec<_> = t
        .partitions
        .iter()
        .map(|p| {
            (
                p.partition_index,
                p.leader_id,
                p.replica_nodes.clone(),
                p.isr_nodes.clone(),
            )
        })
        .collect();
    out.sort();
    Some(out)
}

/// The broker ids a Metadata answer lists.
pub(crate) fn broker_ids(m: &MetadataResponse) -> Vec<i32> {
    let mut ids: Vec<i32> = m.brokers.iter().map(|b| b.node_id).collect();
    ids.sort_unstable();
    ids
}

/// Our admin client over `bootstrap` (`host:port,...`), 15 s per request.
pub(crate) async fn admin(bootstrap: &str) -> Admin {
    let cfg = ClusterConfig {
        bootstrap: bootstrap.split(',').map(str::to_owned).collect(),
        connection: ConnectionConfig {
            security: client_security(),
            ..Default::default()
        },
        ..Default::default()
    };
    Admin::connect(cfg)
        .await
        .unwrap()
        .with_timeout(Duration::from_secs(15))
}

/// Waits until every running broker lists exactly `expected` as brokers.
pub(crate) async fn until_brokers(c: &mut Cluster, expected: &[i32]) {
    let addrs = c.running_addrs();
    let expected = expected.to_vec();
    c.eventually(
        &format!("every broker lists the brokers {expected:?}"),
        Duration::from_secs(30),
        || {
            let addrs = addrs.clone();
            let expected = expected.clone();
            async move {
                for a in &addrs {
                    let m = metadata(a, Some(&[])).await?;
                    if broker_ids(&m) != expected {
                        return None;
                    }
                }
                Some(())
            }
        },
    )
    .await;
}

/// The partitions of `topic` as every running broker sees them, once they agree.
pub(crate) async fn agreed_partitions(
    c: &mut Cluster,
    topic: &str,
    count: usize,
) -> Vec<PartitionRow> {
    let addrs = c.running_addrs();
    let topic = topic.to_owned();
    c.eventually(
        &format!("every broker answers the same metadata for {topic}"),
        Duration::from_secs(15),
        || {
            let addrs = addrs.clone();
            let topic = topic.clone();
            async move {
                let mut seen = None;
                for a in &addrs {
                    let m = metadata(a, Some(&[&topic])).await?;
                    let p = partitions(&m, &topic)?;
                    if p.len() != count || seen.as_ref().is_some_and(|s| s != &p) {
                        return None;
                    }
                    seen = Some(p);
                }
                seen
            }
        },
    )
    .await
}

/// Waits, at most `timeout`, until the replicas of `topic`-`partition` on `nodes` hold the
/// same segment files, byte for byte (and some).
pub(crate) async fn until_same_bytes(
    c: &mut Cluster,
    topic: &str,
    partition: i32,
    nodes: &[i32],
    timeout: Duration,
) {
    let dirs: Vec<PathBuf> = nodes
        .iter()
        .map(|id| c.nodes[id].data_dir.clone())
        .collect();
    c.eventually(
        &format!("{topic}-{partition}: the replicas on {nodes:?} hold the same bytes"),
        timeout,
        || {
            let files: Vec<_> = dirs
                .iter()
                .map(|d| segment_files(d, topic, partition))
                .collect();
            let same = !files[0].is_empty() && files.iter().all(|f| f == &files[0]);
            async move { same.then_some(()) }
        },
    )
    .await;
}

/// The bytes of every segment file of `topic`-`partition` on a node, by file name.
pub(crate) fn segment_files(
    dir: &std::path::Path,
    topic: &str,
    partition: i32,
) -> BTreeMap<String, Vec<u8>> {
    let pdir = dir.join(format!("{topic}-{partition}"));
    let mut out = BTreeMap::new();
    if let Ok(entries) = std::fs::read_dir(&pdir) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.ends_with(".log") {
                out.insert(name, std::fs::read(e.path()).unwrap_or_default());
            }
        }
    }
    out
}

/// One Produce (v9) of `values` as one batch (no producer id) to `topic`-`partition`
/// straight to the broker at `addr`: the partition's error code and base offset, or why
/// there was no answer within `timeout` (the request's own timeout, plus 2 s).
pub(crate) async fn produce(
    addr: &str,
    topic: &str,
    partition: i32,
    acks: i16,
    values: &[&str],
    timeout: Duration,
) -> Result<(i16, i64), String> {
    let mut b = RecordBatchBuilder::new();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    for v in values {
        b.append(now, None, Some(v.as_bytes()), &[]).unwrap();
    }
    let req = ProduceRequest {
        acks,
        timeout_ms: i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX),
        topic_data: vec![TopicProduceData {
            name: KStr::from(topic.to_owned()),
            partition_data: vec![PartitionProduceData {
                index: partition,
                records: Some(b.build().unwrap()),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let cfg = ConnectionConfig {
        connect_timeout: Duration::from_secs(2),
        handshake: false,
        security: client_security(),
        ..Default::default()
    };
    let conn = Connection::connect(addr, cfg)
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let answer = tokio::time::timeout(
        timeout + Duration::from_secs(2),
        conn.request_at(RequestBody::Produce(req), 9),
    )
    .await
    .map_err(|_| "no answer".to_owned())?
    .map_err(|e| e.to_string())?;
    let ResponseBody::Produce(r) = answer else {
        return Err(format!("not a Produce answer: {answer:?}"));
    };
    let p = r
        .responses
        .first()
        .and_then(|t| t.partition_responses.first())
        .ok_or("an empty answer")?;
    Ok((p.error_code, p.base_offset))
}
