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
//! | `config/server.rs` | the parts `server` (node, data, request bounds) and `topics` |
//! | `config/log_defaults.rs` | the part `log`: topic key defaults, partition upkeep |
//! | `config/cluster.rs` | the parts `network` (listeners, rack) and `quorum` (roles, voters) |
//! | `config/group.rs`, `txn.rs`, `replication.rs` | the coordinators' and replication's parts |
//! | `config/security.rs` | TLS, SASL and authorization keys, per listener |
//! | `config/quota.rs` | the part `quota`: quota windows, connection-creation rate |
//! | `config/validate.rs` | the checks of key combinations, once every key is applied |
//! | `config/topic.rs` (`topic/`) | typed topic configs: the topic key table, alter, describe |
//! | `config/describe.rs` | DescribeConfigs' types and sources; the broker keys as listed |

pub mod cluster;
pub mod describe;
mod group;
pub mod keys;
mod log_defaults;
pub mod parse;
mod quota;
mod replication;
pub mod security;
mod server;
pub mod topic;
mod txn;
mod validate;

pub use cluster::{ListenerConfig, NetworkConfig, QuorumConfig, Roles, SecurityProtocol, Voter};

/// Timestamp type stamped into appended batches (`NoTimestampType` is never configured).
pub use kafka_protocol::record::TimestampType;

pub use group::GroupConfig;
pub use keys::{Applied, BROKER_KEYS, BrokerKey, broker_key};
pub use log_defaults::LogDefaults;
pub use quota::{MAX_QUOTA_WINDOW_NUM, QuotaConfig};
pub use replication::{ReplicaSelectorClass, ReplicationConfig};
pub use security::SecurityConfig;
pub use server::{DEFAULT_DECOMPRESSION_BYTES, ServerConfig, TopicsConfig};
pub use txn::TxnConfig;

/// The smallest `segment.bytes` (and `*.segment.bytes`) Kafka accepts.
pub const MIN_SEGMENT_BYTES: u64 = 14;
/// The largest: segment positions are 32-bit.
pub const MAX_SEGMENT_BYTES: u64 = i32::MAX as u64;

/// Everything the broker reads from its configuration, in parts by who uses them: each layer
/// is handed its part (the group coordinator [`GroupConfig`], the replica fetchers
/// [`ReplicationConfig`], ...).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BrokerConfig {
    /// The node, its data directory, and the bounds on connections and requests.
    pub server: ServerConfig,
    /// How topics are created and deleted, and how many partitions the node hosts.
    pub topics: TopicsConfig,
    /// The defaults of the topic keys and the upkeep of the partitions.
    pub log: LogDefaults,
    /// Listeners, advertised addresses, security protocols, rack.
    pub network: NetworkConfig,
    /// KRaft roles and the controller quorum.
    pub quorum: QuorumConfig,
    /// Replication settings (`replica.*`, `num.replica.fetchers`).
    pub replication: ReplicationConfig,
    /// Group coordinator settings (`group.*`, `offsets.*`, `offset.metadata.max.bytes`).
    pub group: GroupConfig,
    /// Transaction coordinator settings (`transaction.*`, `transactional.id.expiration.ms`).
    pub txn: TxnConfig,
    /// TLS, SASL and authorization keys, broker-wide and per listener (`ssl.*`, `sasl.*`,
    /// `listener.name.NAME.*`, `super.users`, ...).
    pub security: SecurityConfig,
    /// Client quota measurement and connection-creation rates (`quota.window.*`,
    /// `max.connection.creation.rate`).
    pub quota: QuotaConfig,
}

impl BrokerConfig {
    /// The security protocol of a listener name, as `listener.security.protocol.map` is read
    /// on this node ([`NetworkConfig::effective_listener_security_protocol_map`]).
    pub fn security_protocol(&self, name: &str) -> Option<SecurityProtocol> {
        self.network
            .effective_listener_security_protocol_map(self.quorum.roles.is_some())
            .get(name)
            .copied()
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

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
        assert_eq!(c.server.node_id, 3);
        assert_eq!(c.network.listen, "127.0.0.1:19092");
        assert_eq!(c.server.data_dir, PathBuf::from("/tmp/a"));
        assert_eq!(c.topics.num_partitions, 6);
        assert_eq!(c.log.retention_ms, 3_600_000);
        assert_eq!(c.log.flush_interval_messages, Some(1));
        assert_eq!(c.log.message_timestamp_type, TimestampType::LogAppendTime);
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
        assert_eq!(c.server.max_connections_per_ip, 5);
        let o = &c.server.max_connections_per_ip_overrides;
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
        assert_eq!(c.server.connections_max_idle_ms, 1000);
    }

    #[test]
    fn replica_selector_class() {
        let mut c = BrokerConfig::default();
        assert_eq!(c.replication.replica_selector, None);
        c.apply("replica.selector.class", ReplicaSelectorClass::RACK_AWARE)
            .unwrap();
        assert_eq!(
            c.replication.replica_selector,
            Some(ReplicaSelectorClass::RackAware)
        );
        assert_eq!(
            c.replication
                .replica_selector
                .map(ReplicaSelectorClass::class_name),
            Some("org.apache.kafka.common.replica.RackAwareReplicaSelector")
        );
        c.apply("replica.selector.class", " ").unwrap();
        assert_eq!(c.replication.replica_selector, None);
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
