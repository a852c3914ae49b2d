//! Broker configuration with Kafka's key names: defaults, a `server.properties`-style file and
//! `key=value` overrides. Unknown keys warn; invalid values are errors naming the key, and
//! invalid combinations are found by [`BrokerConfig::validate`] (call it once every key is
//! applied). The cluster keys (listeners, roles, quorum) are in [`cluster`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::error::BrokerError;

pub mod cluster;

pub use cluster::{ListenerConfig, Roles, SecurityProtocol, Voter};

/// Timestamp type stamped into appended batches (kafka-protocol's; `message.timestamp.type`
/// takes `CreateTime` or `LogAppendTime`).
pub use kafka_protocol::record::TimestampType;

/// The replica selectors `replica.selector.class` can name (Kafka's class names; a broker
/// cannot load classes, so only the ones Kafka ships are known).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplicaSelectorClass {
    /// `org.apache.kafka.common.replica.RackAwareReplicaSelector`: a consumer that names its
    /// rack (`client.rack`) reads from an in-sync replica in that rack, the leader if it is
    /// there (see [`crate::replica::selector`]).
    RackAware,
}

impl ReplicaSelectorClass {
    /// Kafka's class name of the rack-aware selector.
    pub const RACK_AWARE: &'static str = "org.apache.kafka.common.replica.RackAwareReplicaSelector";

    /// The selector a `replica.selector.class` value names; empty is none (the leader only).
    pub fn parse(key: &str, v: &str) -> Result<Option<Self>, BrokerError> {
        match v.trim() {
            "" => Ok(None),
            Self::RACK_AWARE => Ok(Some(Self::RackAware)),
            other => Err(BrokerError::Config(format!(
                "{key}={other}: unknown replica selector; the one known is {} (empty for \
                 reads from the leader only)",
                Self::RACK_AWARE
            ))),
        }
    }

    /// The class name, as DescribeConfigs shows it.
    pub fn class_name(self) -> &'static str {
        match self {
            Self::RackAware => Self::RACK_AWARE,
        }
    }
}

/// Everything the broker reads from its configuration.
#[derive(Debug, Clone)]
pub struct BrokerConfig {
    /// `node.id` (also `broker.id`).
    pub node_id: i32,
    /// The client (broker) listener's `host:port` (see [`BrokerConfig::client_listener`]),
    /// which the broker binds; kept in step with `listeners` when keys are applied.
    pub listen: String,
    /// The client listener's advertised `host:port` (its entry in `advertised.listeners`);
    /// `None` (no `advertised.listeners`): `listen`.
    pub advertised: Option<String>,
    /// `listeners`: `NAME://host:port,...` (a bare `host:port` is `PLAINTEXT`).
    pub listeners: Vec<ListenerConfig>,
    /// `advertised.listeners`; `None`: the listeners that are not controller listeners
    /// ([`BrokerConfig::effective_advertised_listeners`]).
    pub advertised_listeners: Option<Vec<ListenerConfig>>,
    /// `process.roles`; `None` (not set or empty): a single-node broker, as before clusters.
    pub roles: Option<Roles>,
    /// `controller.quorum.voters`: the static controller quorum.
    pub quorum_voters: Vec<Voter>,
    /// `controller.listener.names` (upper case; the first is the one used).
    pub controller_listener_names: Vec<String>,
    /// `listener.security.protocol.map`; `None`: Kafka's default
    /// ([`BrokerConfig::effective_listener_security_protocol_map`]).
    pub listener_security_protocol_map: Option<BTreeMap<String, SecurityProtocol>>,
    /// `inter.broker.listener.name`; `None`: the first listener that is not a controller
    /// listener ([`BrokerConfig::effective_inter_broker_listener_name`]).
    pub inter_broker_listener_name: Option<String>,
    /// `broker.heartbeat.interval.ms`: how often a broker heartbeats to the controller.
    pub broker_heartbeat_interval_ms: u64,
    /// `broker.session.timeout.ms`: a broker that has not heartbeated for this long is fenced.
    pub broker_session_timeout_ms: u64,
    /// `controller.quorum.election.timeout.ms`.
    pub quorum_election_timeout_ms: u64,
    /// `controller.quorum.fetch.timeout.ms`.
    pub quorum_fetch_timeout_ms: u64,
    /// `broker.rack`.
    pub broker_rack: Option<String>,
    /// `replica.selector.class`: how a partition leader picks the replica a consumer should
    /// read from (KIP-392); `None` (Kafka's default): the leader itself, always.
    pub replica_selector: Option<ReplicaSelectorClass>,
    /// `min.insync.replicas`: the broker default of the topic key.
    pub min_insync_replicas: i32,
    /// `offsets.topic.replication.factor` (Kafka's default 3; the controller clamps it to the
    /// live brokers).
    pub offsets_topic_replication_factor: i16,
    /// `unclean.leader.election.enable`: the broker default of the topic key.
    pub unclean_leader_election_enable: bool,
    /// `log.dirs` (also `log.dir`): the data directory.
    pub data_dir: PathBuf,
    /// `cluster.id` (generated and stored in the data directory when not set).
    pub cluster_id: Option<String>,
    /// `num.partitions` for auto-created topics.
    pub num_partitions: i32,
    /// `default.replication.factor`.
    pub default_replication_factor: i16,
    /// `auto.create.topics.enable`.
    pub auto_create_topics: bool,
    /// `delete.topic.enable`.
    pub delete_topic_enable: bool,
    /// `log.segment.bytes`.
    pub segment_bytes: u64,
    /// `log.roll.ms` (`log.roll.hours`).
    pub roll_ms: i64,
    /// `log.retention.ms` (`log.retention.minutes`, `log.retention.hours`); -1 keeps forever.
    pub retention_ms: i64,
    /// `log.retention.bytes`; -1 for no limit.
    pub retention_bytes: i64,
    /// `log.retention.check.interval.ms`.
    pub retention_check_interval_ms: u64,
    /// `log.flush.interval.messages`; `None` leaves flushing to the OS.
    pub flush_interval_messages: Option<u64>,
    /// `log.flush.interval.ms`.
    pub flush_interval_ms: Option<u64>,
    /// `log.index.interval.bytes`.
    pub index_interval_bytes: u32,
    /// `message.max.bytes`: the largest record batch accepted.
    pub message_max_bytes: usize,
    /// `log.message.timestamp.type`.
    pub message_timestamp_type: TimestampType,
    /// `log.message.timestamp.before.max.ms`: how far in the past a CreateTime record may be
    /// (`i64::MAX`: no limit).
    pub message_timestamp_before_max_ms: i64,
    /// `log.message.timestamp.after.max.ms`: how far in the future it may be.
    pub message_timestamp_after_max_ms: i64,
    /// Fetch answers send record data from the segment files with `sendfile(2)`
    /// (`socket.sendfile.enable`, ours; default true). Off: the data is read into memory
    /// first.
    pub sendfile: bool,
    /// `socket.request.max.bytes`: the largest request frame.
    pub socket_request_max_bytes: usize,
    /// `max.connections`.
    pub max_connections: usize,
    /// `log.open.files.max` (ours): the most segment files (`.log`, `.index`, `.timeindex`)
    /// open at a time over every partition; the least recently used are closed and reopened
    /// on use. `None`: derived from the process's descriptor limit at start
    /// ([`crate::log::files::default_open_files`]).
    pub log_open_files_max: Option<usize>,
    /// `max.partitions` (ours): the most partitions this broker hosts, every topic together;
    /// CreateTopics and CreatePartitions beyond it are refused before anything is created.
    pub max_partitions: usize,
    /// `log.offline.retry.ms` (ours): how often an offline partition (its log could not be
    /// opened at start, or failed an fsync) is reopened through recovery, so it comes back
    /// once the cause is gone (space freed, descriptors freed) without a restart.
    pub log_offline_retry_ms: u64,
    /// `max.connections.per.ip`: connections one peer address may hold.
    pub max_connections_per_ip: usize,
    /// `max.connections.per.ip.overrides` (`host:count,...`; host names are resolved when the
    /// configuration is read).
    pub max_connections_per_ip_overrides: Vec<(std::net::IpAddr, usize)>,
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
    /// `offsets.topic.num.partitions`.
    pub offsets_topic_num_partitions: i32,
    /// `fetch.max.bytes`: the most record data one Fetch answer carries, whatever it asks
    /// (55 MiB; the first batch of the first partition with data may exceed it, KIP-74).
    pub fetch_max_bytes: usize,
    /// `replica.fetch.wait.max.ms`-like cap on a Fetch's `max_wait_ms`.
    pub fetch_max_wait_cap_ms: u64,
    /// `produce.decompression.max.bytes` (ours): the memory for decompressed records that all
    /// produce validations hold at once (they wait for it), which is also the most one batch
    /// may decompress to (256 MiB).
    pub produce_decompression_max_bytes: usize,
    /// `log.cleanup.policy`: the default `cleanup.policy` of topics.
    pub cleanup_policy: String,
    /// `log.cleaner.enable`: run the log cleaner (compaction of `compact` topics).
    pub cleaner_enable: bool,
    /// `log.cleaner.backoff.ms`: pause between cleaner rounds.
    pub cleaner_backoff_ms: u64,
    /// `log.cleaner.dedupe.buffer.size`: memory for one pass's key map.
    pub cleaner_dedupe_buffer_size: usize,
    /// `log.cleaner.delete.retention.ms`: default `delete.retention.ms`.
    pub cleaner_delete_retention_ms: i64,
    /// `log.cleaner.min.cleanable.ratio`: default `min.cleanable.dirty.ratio`.
    pub cleaner_min_cleanable_ratio: f64,
    /// `log.cleaner.min.compaction.lag.ms`: default `min.compaction.lag.ms`.
    pub cleaner_min_compaction_lag_ms: i64,
    /// `log.cleaner.max.compaction.lag.ms`: default `max.compaction.lag.ms`.
    pub cleaner_max_compaction_lag_ms: i64,
    /// `offsets.topic.segment.bytes`: `segment.bytes` of `__consumer_offsets` when it is
    /// created.
    pub offsets_topic_segment_bytes: u64,
    /// `producer.id.expiration.ms`: an idempotent producer that has not appended for this
    /// long is forgotten by each partition.
    pub producer_id_expiration_ms: i64,
    /// `producer.id.expiration.check.interval.ms`: how often the partitions look for them.
    pub producer_id_expiration_check_interval_ms: u64,
    /// Group coordinator settings (`group.*`, `offsets.retention.*`, `offset.metadata.max.bytes`).
    pub group: crate::group::GroupConfig,
    /// Transaction coordinator settings (`transaction.*`, `transactional.id.expiration.ms`).
    pub txn: crate::txn::TxnConfig,
    /// Replication settings (`replica.lag.time.max.ms`, `replica.fetch.*`,
    /// `num.replica.fetchers`).
    pub replication: crate::replication::ReplicationConfig,
}

impl Default for BrokerConfig {
    fn default() -> Self {
        Self {
            node_id: 1,
            listen: "127.0.0.1:9092".into(),
            advertised: None,
            listeners: vec![ListenerConfig {
                name: "PLAINTEXT".into(),
                host: "127.0.0.1".into(),
                port: 9092,
            }],
            advertised_listeners: None,
            roles: None,
            quorum_voters: Vec::new(),
            controller_listener_names: Vec::new(),
            listener_security_protocol_map: None,
            inter_broker_listener_name: None,
            broker_heartbeat_interval_ms: 2_000,
            broker_session_timeout_ms: 9_000,
            quorum_election_timeout_ms: 1_000,
            quorum_fetch_timeout_ms: 2_000,
            broker_rack: None,
            replica_selector: None,
            min_insync_replicas: 1,
            offsets_topic_replication_factor: 3,
            unclean_leader_election_enable: false,
            data_dir: PathBuf::from("./data"),
            cluster_id: None,
            num_partitions: 1,
            default_replication_factor: 1,
            auto_create_topics: true,
            delete_topic_enable: true,
            segment_bytes: 1 << 30,
            roll_ms: 7 * 24 * 3_600_000,
            retention_ms: 7 * 24 * 3_600_000,
            retention_bytes: -1,
            retention_check_interval_ms: 300_000,
            flush_interval_messages: None,
            flush_interval_ms: None,
            index_interval_bytes: 4096,
            message_max_bytes: 1_048_588,
            message_timestamp_type: TimestampType::CreateTime,
            message_timestamp_before_max_ms: i64::MAX,
            message_timestamp_after_max_ms: i64::MAX,
            sendfile: true,
            socket_request_max_bytes: 104_857_600,
            max_connections: 10_000,
            max_partitions: 10_000,
            log_offline_retry_ms: 5_000,
            log_open_files_max: None,
            max_connections_per_ip: i32::MAX as usize,
            max_connections_per_ip_overrides: Vec::new(),
            connections_max_idle_ms: 600_000,
            max_pipelined_requests: 16,
            connection_read_ahead_max_bytes: 4 << 20,
            queued_max_request_bytes: 512 << 20,
            offsets_topic_num_partitions: 50,
            fetch_max_wait_cap_ms: 30_000,
            fetch_max_bytes: 57_671_680,
            produce_decompression_max_bytes: crate::replica::budget::DEFAULT_BYTES,
            cleanup_policy: "delete".into(),
            cleaner_enable: true,
            cleaner_backoff_ms: 15_000,
            cleaner_dedupe_buffer_size: 128 * 1024 * 1024,
            cleaner_delete_retention_ms: 86_400_000,
            cleaner_min_cleanable_ratio: 0.5,
            cleaner_min_compaction_lag_ms: 0,
            cleaner_max_compaction_lag_ms: i64::MAX,
            offsets_topic_segment_bytes: 100 * 1024 * 1024,
            producer_id_expiration_ms: 86_400_000,
            producer_id_expiration_check_interval_ms: 600_000,
            group: crate::group::GroupConfig::default(),
            txn: crate::txn::TxnConfig::default(),
            replication: crate::replication::ReplicationConfig::default(),
        }
    }
}

/// Result of applying one key.
#[derive(Debug, PartialEq, Eq)]
pub enum Applied {
    Known,
    /// A key this broker does not use (warned about, ignored).
    Unknown,
}

fn parse<T: std::str::FromStr>(key: &str, value: &str) -> Result<T, BrokerError>
where
    T::Err: std::fmt::Display,
{
    value
        .trim()
        .parse()
        .map_err(|e| BrokerError::Config(format!("{key}={value}: {e}")))
}

fn positive<T: PartialOrd + Default + std::fmt::Display>(
    key: &str,
    v: T,
) -> Result<T, BrokerError> {
    if v > T::default() {
        Ok(v)
    } else {
        Err(BrokerError::Config(format!(
            "{key} must be positive, got {v}"
        )))
    }
}

/// Keys Kafka brokers know that this broker accepts and ignores without a warning (they have
/// no effect on a single node or are about features not built yet).
const IGNORED_KNOWN: &[&str] = &[
    "num.network.threads",
    "num.io.threads",
    "socket.send.buffer.bytes",
    "socket.receive.buffer.bytes",
    "num.recovery.threads.per.data.dir",
    "zookeeper.connect",
];

impl BrokerConfig {
    /// Applies one `key=value`.
    pub fn apply(&mut self, key: &str, value: &str) -> Result<Applied, BrokerError> {
        let key = key.trim();
        let v = value.trim();
        match key {
            "node.id" | "broker.id" => self.node_id = parse(key, v)?,
            "listeners" | "listen" => {
                self.listeners = cluster::parse_listeners("listeners", v, false)?;
                self.sync_addresses();
            }
            "advertised.listeners" | "advertised.listener" => {
                self.advertised_listeners =
                    Some(cluster::parse_listeners("advertised.listeners", v, true)?);
                self.sync_addresses();
            }
            "process.roles" => {
                self.roles = cluster::parse_roles(key, v)?;
                self.sync_addresses();
            }
            "controller.quorum.voters" => self.quorum_voters = cluster::parse_voters(key, v)?,
            "controller.listener.names" => {
                self.controller_listener_names = cluster::parse_listener_names(key, v)?;
                self.sync_addresses();
            }
            "listener.security.protocol.map" => {
                self.listener_security_protocol_map = Some(cluster::parse_protocol_map(key, v)?)
            }
            "inter.broker.listener.name" => {
                self.inter_broker_listener_name = if v.is_empty() {
                    None
                } else {
                    Some(cluster::listener_name(key, v)?)
                };
                self.sync_addresses();
            }
            "broker.heartbeat.interval.ms" => {
                self.broker_heartbeat_interval_ms = positive(key, parse(key, v)?)?
            }
            "broker.session.timeout.ms" => {
                self.broker_session_timeout_ms = positive(key, parse(key, v)?)?
            }
            "controller.quorum.election.timeout.ms" => {
                self.quorum_election_timeout_ms = positive(key, parse(key, v)?)?
            }
            "controller.quorum.fetch.timeout.ms" => {
                self.quorum_fetch_timeout_ms = positive(key, parse(key, v)?)?
            }
            "broker.rack" => self.broker_rack = (!v.is_empty()).then(|| v.to_owned()),
            "replica.selector.class" => {
                self.replica_selector = ReplicaSelectorClass::parse(key, v)?
            }
            "min.insync.replicas" => self.min_insync_replicas = positive(key, parse(key, v)?)?,
            "offsets.topic.replication.factor" => {
                self.offsets_topic_replication_factor = positive(key, parse(key, v)?)?
            }
            "unclean.leader.election.enable" => {
                self.unclean_leader_election_enable = parse(key, v)?
            }
            "log.dirs" | "log.dir" => {
                let first = v.split(',').next().unwrap_or(v).trim();
                if first.is_empty() {
                    return Err(BrokerError::Config(format!("{key} is empty")));
                }
                self.data_dir = PathBuf::from(first);
            }
            "cluster.id" => {
                crate::meta_properties::check_cluster_id(key, v)?;
                self.cluster_id = Some(v.to_owned());
            }
            "num.partitions" => self.num_partitions = positive(key, parse(key, v)?)?,
            "default.replication.factor" => {
                self.default_replication_factor = positive(key, parse(key, v)?)?
            }
            "auto.create.topics.enable" => self.auto_create_topics = parse(key, v)?,
            "delete.topic.enable" => self.delete_topic_enable = parse(key, v)?,
            "log.segment.bytes" => {
                let n: u64 = positive(key, parse(key, v)?)?;
                if n < 14 {
                    return Err(BrokerError::Config(format!(
                        "{key} must be at least 14, got {n}"
                    )));
                }
                self.segment_bytes = n;
            }
            "log.roll.ms" => self.roll_ms = positive(key, parse(key, v)?)?,
            "log.roll.hours" => self.roll_ms = positive::<i64>(key, parse(key, v)?)? * 3_600_000,
            "log.retention.ms" => self.retention_ms = parse(key, v)?,
            "producer.id.expiration.ms" => {
                self.producer_id_expiration_ms = positive(key, parse(key, v)?)?
            }
            "producer.id.expiration.check.interval.ms" => {
                self.producer_id_expiration_check_interval_ms = positive(key, parse(key, v)?)?
            }
            "log.retention.minutes" => {
                self.retention_ms = parse::<i64>(key, v)?.saturating_mul(60_000)
            }
            "log.retention.hours" => {
                self.retention_ms = parse::<i64>(key, v)?.saturating_mul(3_600_000)
            }
            "log.retention.bytes" => self.retention_bytes = parse(key, v)?,
            "log.retention.check.interval.ms" => {
                self.retention_check_interval_ms = positive(key, parse(key, v)?)?
            }
            "log.flush.interval.messages" => {
                let n: u64 = positive(key, parse(key, v)?)?;
                // Kafka's default is Long.MAX_VALUE: "never force".
                self.flush_interval_messages = (n < i64::MAX as u64).then_some(n);
            }
            "log.flush.interval.ms" => {
                let n: u64 = positive(key, parse(key, v)?)?;
                self.flush_interval_ms = (n < i64::MAX as u64).then_some(n);
            }
            "log.index.interval.bytes" => {
                self.index_interval_bytes = positive(key, parse(key, v)?)?
            }
            "message.max.bytes" => self.message_max_bytes = positive(key, parse(key, v)?)?,
            "log.message.timestamp.type" => {
                self.message_timestamp_type = match v {
                    "CreateTime" => TimestampType::CreateTime,
                    "LogAppendTime" => TimestampType::LogAppendTime,
                    _ => {
                        return Err(BrokerError::Config(format!(
                            "{key}={v}: expected CreateTime or LogAppendTime"
                        )));
                    }
                }
            }
            "log.message.timestamp.before.max.ms" => {
                self.message_timestamp_before_max_ms = positive(key, parse(key, v)?)?
            }
            "log.message.timestamp.after.max.ms" => {
                self.message_timestamp_after_max_ms = positive(key, parse(key, v)?)?
            }
            // Deprecated by Kafka 3.6 in favour of the two above; sets both.
            "log.message.timestamp.difference.max.ms" => {
                let n: i64 = positive(key, parse(key, v)?)?;
                self.message_timestamp_before_max_ms = n;
                self.message_timestamp_after_max_ms = n;
            }
            "socket.sendfile.enable" => {
                self.sendfile = match v {
                    "true" => true,
                    "false" => false,
                    _ => {
                        return Err(BrokerError::Config(format!(
                            "{key}={v}: expected true or false"
                        )));
                    }
                }
            }
            "socket.request.max.bytes" => {
                self.socket_request_max_bytes = positive(key, parse(key, v)?)?
            }
            "max.connections" => self.max_connections = positive(key, parse(key, v)?)?,
            "max.partitions" => self.max_partitions = positive(key, parse(key, v)?)?,
            "log.offline.retry.ms" => self.log_offline_retry_ms = positive(key, parse(key, v)?)?,
            "log.open.files.max" => self.log_open_files_max = Some(positive(key, parse(key, v)?)?),
            "max.connections.per.ip" => {
                self.max_connections_per_ip = positive(key, parse(key, v)?)?
            }
            "max.connections.per.ip.overrides" => {
                self.max_connections_per_ip_overrides = per_ip_overrides(key, v)?
            }
            "fetch.max.bytes" => self.fetch_max_bytes = positive(key, parse(key, v)?)?,
            "produce.decompression.max.bytes" => {
                let n: usize = positive(key, parse(key, v)?)?;
                if n > u32::MAX as usize {
                    return Err(BrokerError::Config(format!(
                        "{key}={v}: at most 4294967295 (4 GiB - 1)"
                    )));
                }
                self.produce_decompression_max_bytes = n;
            }
            "connections.max.idle.ms" => {
                self.connections_max_idle_ms = positive(key, parse(key, v)?)?
            }
            "queued.max.requests" => self.max_pipelined_requests = positive(key, parse(key, v)?)?,
            "connection.read.ahead.max.bytes" => {
                self.connection_read_ahead_max_bytes = positive(key, parse(key, v)?)?
            }
            // Kafka's -1 (no bound) keeps ours: every bound here is finite.
            "queued.max.request.bytes" if v.trim() == "-1" => {}
            "queued.max.request.bytes" => {
                self.queued_max_request_bytes = positive(key, parse(key, v)?)?
            }
            "offsets.topic.num.partitions" => {
                self.offsets_topic_num_partitions = positive(key, parse(key, v)?)?
            }
            // Topic defaults: checked by the topic key's own parser.
            "log.cleanup.policy" => {
                crate::topic_config::parse_broker_default(key, "cleanup.policy", v)?;
                self.cleanup_policy = v.to_owned();
            }
            "log.cleaner.delete.retention.ms" => {
                self.cleaner_delete_retention_ms =
                    crate::topic_config::parse_broker_default(key, "delete.retention.ms", v)?
                        .delete_retention_ms
            }
            "log.cleaner.min.cleanable.ratio" => {
                self.cleaner_min_cleanable_ratio =
                    crate::topic_config::parse_broker_default(key, "min.cleanable.dirty.ratio", v)?
                        .min_cleanable_dirty_ratio
            }
            "log.cleaner.min.compaction.lag.ms" => {
                self.cleaner_min_compaction_lag_ms =
                    crate::topic_config::parse_broker_default(key, "min.compaction.lag.ms", v)?
                        .min_compaction_lag_ms
            }
            "log.cleaner.max.compaction.lag.ms" => {
                self.cleaner_max_compaction_lag_ms =
                    crate::topic_config::parse_broker_default(key, "max.compaction.lag.ms", v)?
                        .max_compaction_lag_ms
            }
            "log.cleaner.enable" => self.cleaner_enable = parse(key, v)?,
            "log.cleaner.backoff.ms" => self.cleaner_backoff_ms = positive(key, parse(key, v)?)?,
            "log.cleaner.dedupe.buffer.size" => {
                self.cleaner_dedupe_buffer_size = positive(key, parse(key, v)?)?
            }
            "offsets.topic.segment.bytes" => {
                let n: u64 = positive(key, parse(key, v)?)?;
                if !(crate::log::MIN_SEGMENT_BYTES..=crate::log::MAX_SEGMENT_BYTES).contains(&n) {
                    return Err(BrokerError::Config(format!(
                        "{key}={v}: must be between 14 and 2^31-1"
                    )));
                }
                self.offsets_topic_segment_bytes = n;
            }
            k if k == "num.replica.fetchers"
                || k.starts_with("replica.lag.")
                || k.starts_with("replica.fetch.") =>
            {
                if !self
                    .replication
                    .apply(k, v)
                    .map_err(|e| BrokerError::Config(format!("{k}={v}: {e}")))?
                {
                    return Ok(Applied::Unknown);
                }
            }
            k if k.starts_with("group.")
                || k.starts_with("offsets.retention.")
                || k == "offset.metadata.max.bytes" =>
            {
                if !self
                    .group
                    .apply(k, v)
                    .map_err(|e| BrokerError::Config(format!("{k}={v}: {e}")))?
                {
                    return Ok(Applied::Unknown);
                }
            }
            k if k.starts_with("transaction.") || k == "transactional.id.expiration.ms" => {
                if !self
                    .txn
                    .apply(k, v)
                    .map_err(|e| BrokerError::Config(format!("{k}={v}: {e}")))?
                {
                    return Ok(Applied::Unknown);
                }
            }
            _ if IGNORED_KNOWN.contains(&key) => {}
            _ => return Ok(Applied::Unknown),
        }
        Ok(Applied::Known)
    }

    /// Applies a properties text (`key=value` lines, `#`/`!` comments). Returns unknown keys.
    pub fn apply_properties(&mut self, text: &str) -> Result<Vec<String>, BrokerError> {
        let mut unknown = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') || line.starts_with('!') {
                continue;
            }
            let Some((k, v)) = line.split_once('=').or_else(|| line.split_once(':')) else {
                return Err(BrokerError::Config(format!(
                    "line {}: expected key=value, got {line:?}",
                    n + 1
                )));
            };
            if self.apply(k, v)? == Applied::Unknown {
                unknown.push(k.trim().to_owned());
            }
        }
        Ok(unknown)
    }

    /// Reads a properties file.
    pub fn apply_file(&mut self, path: &Path) -> Result<Vec<String>, BrokerError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| BrokerError::Config(format!("reading {}: {e}", path.display())))?;
        self.apply_properties(&text)
    }

    /// The `host:port` clients should use.
    pub fn advertised_addr(&self) -> &str {
        self.advertised.as_deref().unwrap_or(&self.listen)
    }
}

/// `max.connections.per.ip.overrides`: `host:count` pairs separated by commas; a host name
/// stands for every address it resolves to.
fn per_ip_overrides(key: &str, v: &str) -> Result<Vec<(std::net::IpAddr, usize)>, BrokerError> {
    use std::net::ToSocketAddrs;
    let mut out = Vec::new();
    for entry in v.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let bad = |why: &str| BrokerError::Config(format!("{key}: entry {entry:?}: {why}"));
        let (host, count) = entry
            .rsplit_once(':')
            .ok_or_else(|| bad("expected host:count"))?;
        let count: usize = count
            .trim()
            .parse()
            .map_err(|_| bad("the count is not a non-negative integer"))?;
        let host = host.trim().trim_start_matches('[').trim_end_matches(']');
        match host.parse::<std::net::IpAddr>() {
            Ok(ip) => out.push((ip, count)),
            Err(_) => {
                let addrs = (host, 0)
                    .to_socket_addrs()
                    .map_err(|e| bad(&format!("cannot resolve the host: {e}")))?;
                out.extend(addrs.map(|a| (a.ip(), count)));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn properties_with_kafka_keys() {
        let mut c = BrokerConfig::default();
        let unknown = c
            .apply_properties(
                "# comment\nnode.id=3\nlisteners=PLAINTEXT://127.0.0.1:19092\nlog.dirs=/tmp/a,/tmp/b\n\
                 num.partitions = 6\nlog.retention.hours=1\nlog.flush.interval.messages=1\nfoo.bar=1\n\
                 log.message.timestamp.type=LogAppendTime\n",
            )
            .unwrap();
        assert_eq!(unknown, ["foo.bar"]);
        assert_eq!(c.node_id, 3);
        assert_eq!(c.listen, "127.0.0.1:19092");
        assert_eq!(c.data_dir, PathBuf::from("/tmp/a"));
        assert_eq!(c.num_partitions, 6);
        assert_eq!(c.retention_ms, 3_600_000);
        assert_eq!(c.flush_interval_messages, Some(1));
        assert_eq!(c.message_timestamp_type, TimestampType::LogAppendTime);
    }

    #[test]
    fn connection_limits_per_ip() {
        let mut c = BrokerConfig::default();
        c.apply("max.connections.per.ip", "5").unwrap();
        c.apply(
            "max.connections.per.ip.overrides",
            "127.0.0.2:12, [::1]:0,localhost:3",
        )
        .unwrap();
        assert_eq!(c.max_connections_per_ip, 5);
        let o = &c.max_connections_per_ip_overrides;
        assert!(o.contains(&("127.0.0.2".parse().unwrap(), 12)));
        assert!(o.contains(&("::1".parse().unwrap(), 0)));
        assert!(o.iter().any(|&(ip, n)| ip.is_loopback() && n == 3), "{o:?}");
        for bad in ["127.0.0.1", "127.0.0.1:-1", "127.0.0.1:x"] {
            let e = c
                .apply("max.connections.per.ip.overrides", bad)
                .unwrap_err()
                .to_string();
            assert!(e.contains("max.connections.per.ip.overrides"), "{e}");
        }
        c.apply("connections.max.idle.ms", "1000").unwrap();
        assert_eq!(c.connections_max_idle_ms, 1000);
    }

    #[test]
    fn replica_selector_class() {
        let mut c = BrokerConfig::default();
        assert_eq!(c.replica_selector, None);
        c.apply("replica.selector.class", ReplicaSelectorClass::RACK_AWARE)
            .unwrap();
        assert_eq!(c.replica_selector, Some(ReplicaSelectorClass::RackAware));
        assert_eq!(
            c.replica_selector.map(ReplicaSelectorClass::class_name),
            Some("org.apache.kafka.common.replica.RackAwareReplicaSelector")
        );
        c.apply("replica.selector.class", " ").unwrap();
        assert_eq!(c.replica_selector, None);
        let e = c
            .apply("replica.selector.class", "com.example.MySelector")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("replica.selector.class=com.example.MySelector"),
            "{e}"
        );
        assert!(e.contains("RackAwareReplicaSelector"), "{e}");
    }

    #[test]
    fn invalid_values_name_the_key() {
        let mut c = BrokerConfig::default();
        let e = c.apply("num.partitions", "zero").unwrap_err().to_string();
        assert!(e.contains("num.partitions=zero"), "{e}");
        let e = c.apply("num.partitions", "0").unwrap_err().to_string();
        assert!(e.contains("must be positive"), "{e}");
        assert!(c.apply_properties("no equals sign").is_err());
        assert!(c.apply("log.message.timestamp.type", "Sometimes").is_err());
    }
}
