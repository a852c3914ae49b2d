//! Two parts of the broker's configuration: the node itself ([`ServerConfig`]: its id, data
//! directory, cluster id, and the bounds of connections and requests the server and the
//! handlers hold to) and what it does with topics ([`TopicsConfig`]: creation defaults,
//! deletion, the most partitions it hosts).

use std::net::IpAddr;
use std::path::PathBuf;

/// `produce.decompression.max.bytes` by default: 256 MiB.
pub const DEFAULT_DECOMPRESSION_BYTES: usize = 256 << 20;

/// The node, its data directory and the bounds on connections and requests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerConfig {
    /// `node.id` (also `broker.id`).
    pub node_id: i32,
    /// `log.dirs` (also `log.dir`): the data directory.
    pub data_dir: PathBuf,
    /// `cluster.id` (generated and stored in the data directory when not set).
    pub cluster_id: Option<String>,
    /// `socket.request.max.bytes`: the largest request frame.
    pub socket_request_max_bytes: usize,
    /// `max.connections`.
    pub max_connections: usize,
    /// `max.connections.per.ip`: connections one peer address may hold.
    pub max_connections_per_ip: usize,
    /// `max.connections.per.ip.overrides` (`host:count,...`; host names are resolved when the
    /// configuration is read).
    pub max_connections_per_ip_overrides: Vec<(IpAddr, usize)>,
    /// `connections.max.idle.ms`: a connection that sends no whole request and is sent no
    /// answer for this long is closed (a partial frame does not count as activity).
    pub connections_max_idle_ms: u64,
    /// `queued.max.requests` per connection read-ahead (clients pipeline up to 5).
    pub max_pipelined_requests: usize,
    /// `connection.read.ahead.max.bytes` (ours): a connection reads no further request while
    /// the requests it has read and not answered hold this many bytes (a larger request is
    /// read when nothing else is queued).
    pub connection_read_ahead_max_bytes: usize,
    /// `queued.max.request.bytes`: the same bound over every connection of the broker
    /// (Kafka's default is unbounded; ours 512 MiB).
    pub queued_max_request_bytes: usize,
    /// `fetch.max.bytes`: the most record data one Fetch answer carries, whatever it asks
    /// (55 MiB; the first batch of the first partition with data may exceed it, KIP-74).
    pub fetch_max_bytes: usize,
    /// A cap on a Fetch's `max_wait_ms` (no key; 30 s).
    pub fetch_max_wait_cap_ms: u64,
    /// `produce.decompression.max.bytes` (ours): the memory for decompressed records that all
    /// produce validations hold at once (they wait for it), which is also the most one batch
    /// may decompress to (256 MiB).
    pub produce_decompression_max_bytes: usize,
    /// Fetch answers send record data from the segment files with `sendfile(2)`
    /// (`socket.sendfile.enable`, ours; default true). Off: the data is read into memory
    /// first.
    pub sendfile: bool,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            node_id: 1,
            data_dir: PathBuf::from("./data"),
            cluster_id: None,
            socket_request_max_bytes: 104_857_600,
            max_connections: 10_000,
            max_connections_per_ip: i32::MAX as usize,
            max_connections_per_ip_overrides: Vec::new(),
            connections_max_idle_ms: 600_000,
            max_pipelined_requests: 16,
            connection_read_ahead_max_bytes: 4 << 20,
            queued_max_request_bytes: 512 << 20,
            fetch_max_bytes: 57_671_680,
            fetch_max_wait_cap_ms: 30_000,
            produce_decompression_max_bytes: DEFAULT_DECOMPRESSION_BYTES,
            sendfile: true,
        }
    }
}

/// What the broker does with topics: how they are created and deleted, and how many
/// partitions it hosts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicsConfig {
    /// `num.partitions` for auto-created topics (and CreateTopics asking for -1).
    pub num_partitions: i32,
    /// `default.replication.factor`.
    pub default_replication_factor: i16,
    /// `auto.create.topics.enable`.
    pub auto_create: bool,
    /// `delete.topic.enable`.
    pub delete_enable: bool,
    /// `max.partitions` (ours): the most partitions this broker hosts, every topic together;
    /// CreateTopics and CreatePartitions beyond it are refused before anything is created.
    pub max_partitions: usize,
}

impl Default for TopicsConfig {
    fn default() -> Self {
        Self {
            num_partitions: 1,
            default_replication_factor: 1,
            auto_create: true,
            delete_enable: true,
            max_partitions: 10_000,
        }
    }
}
