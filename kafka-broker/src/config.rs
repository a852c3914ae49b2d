//! Broker configuration with Kafka's key names: defaults, a `server.properties`-style file and
//! `key=value` overrides. Unknown keys warn; invalid values are errors naming the key, and
//! invalid combinations are found by [`BrokerConfig::validate`] (call it once every key is
//! applied).
//!
//! This is the base of the broker: it imports nothing of the broker but its error type (and
//! kafka-protocol's types), and every layer is handed its part of it.
//!
//! | file | what |
//! |---|---|
//! | `config/keys.rs` | the broker key table: every key, its type, parser, value and listing |
//! | `config/parse.rs` | the value parsers shared by broker and topic keys |
//! | `config/cluster.rs` | listeners, roles and the quorum; checks of key combinations |
//! | `config/group.rs`, `txn.rs`, `replication.rs` | the coordinators' and replication's parts |
//! | `config/topic.rs` (`topic/`) | typed topic configs: the topic key table, alter, describe |
//! | `config/describe.rs` | DescribeConfigs' types and sources; the broker keys as listed |

use std::collections::BTreeMap;
use std::path::PathBuf;

pub mod cluster;
pub mod describe;
mod group;
pub mod keys;
pub mod parse;
mod replication;
pub mod topic;
mod txn;

pub use cluster::{ListenerConfig, Roles, SecurityProtocol, Voter};

/// Timestamp type stamped into appended batches (kafka-protocol's; `message.timestamp.type`
/// takes `CreateTime` or `LogAppendTime`).
pub use kafka_protocol::record::TimestampType;

pub use group::GroupConfig;
pub use keys::{Applied, BROKER_KEYS, BrokerKey, broker_key};
pub use replication::{ReplicaSelectorClass, ReplicationConfig};
pub use txn::TxnConfig;

/// The smallest `segment.bytes` (and `*.segment.bytes`) Kafka accepts.
pub const MIN_SEGMENT_BYTES: u64 = 14;
/// The largest: segment positions are 32-bit.
pub const MAX_SEGMENT_BYTES: u64 = i32::MAX as u64;
/// `produce.decompression.max.bytes` by default: 256 MiB.
pub const DEFAULT_DECOMPRESSION_BYTES: usize = 256 << 20;

/// Everything the broker reads from its configuration.
#[derive(Debug, Clone, PartialEq)]
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
    /// (`crate::log::files::default_open_files`).
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
    pub group: GroupConfig,
    /// Transaction coordinator settings (`transaction.*`, `transactional.id.expiration.ms`).
    pub txn: TxnConfig,
    /// Replication settings (`replica.lag.time.max.ms`, `replica.fetch.*`,
    /// `num.replica.fetchers`).
    pub replication: ReplicationConfig,
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
            produce_decompression_max_bytes: DEFAULT_DECOMPRESSION_BYTES,
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
            group: GroupConfig::default(),
            txn: TxnConfig::default(),
            replication: ReplicationConfig::default(),
        }
    }
}

impl BrokerConfig {
    /// The `host:port` clients should use.
    pub fn advertised_addr(&self) -> &str {
        self.advertised.as_deref().unwrap_or(&self.listen)
    }
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
