//! The broker key table: every key of the broker's configuration, in one place. Each entry
//! is Kafka's key name, its type, how a value is parsed and stored ([`BrokerKey::set`], with
//! the shared parsers of [`super::parse`]), how the value in force is written back
//! ([`BrokerKey::get`], which is also the default on a [`BrokerConfig::default`]), and how
//! DescribeConfigs shows it. Another name of a setting (`broker.id`, `log.retention.hours`)
//! is an entry of its own that names the key it stands for.
//!
//! [`BrokerConfig::apply`] looks keys up here; the topic keys take their broker defaults from
//! here (`segment.bytes` from `log.segment.bytes`); DescribeConfigs lists from here.

use std::path::Path;

use super::cluster::{self, ListenerConfig, Voter};
use super::parse::{self, Why};
use super::{BrokerConfig, ReplicaSelectorClass};
use crate::error::BrokerError;

/// Kafka's config types as DescribeConfigs v3+ reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(i8)]
pub enum ConfigType {
    Boolean = 1,
    String = 2,
    Int = 3,
    Short = 4,
    Long = 5,
    Double = 6,
    List = 7,
    /// A class name (`replica.selector.class`).
    Class = 8,
    Password = 9,
}

/// One broker key.
#[derive(Debug, Clone, Copy)]
pub struct BrokerKey {
    /// Kafka's name of the key.
    pub name: &'static str,
    /// Its type, as DescribeConfigs v3+ reports it.
    pub config_type: ConfigType,
    /// For another name of a setting: the key it stands for (`broker.id` for `node.id`).
    pub synonym_of: Option<&'static str>,
    /// Parses a value (trimmed) and stores it. Errors name the key as it was given (the
    /// second argument), with the value.
    pub set: fn(&mut BrokerConfig, &str, &str) -> Result<(), BrokerError>,
    /// The value in force as Kafka writes it (one that [`BrokerKey::set`] parses back);
    /// `None`: not set, and no default (Kafka's null).
    pub get: fn(&BrokerConfig) -> Option<String>,
    /// Whether DescribeConfigs of a broker lists the key.
    pub listed: bool,
    /// A secret: DescribeConfigs shows no value.
    pub sensitive: bool,
}

impl BrokerKey {
    const fn new(
        name: &'static str,
        config_type: ConfigType,
        set: fn(&mut BrokerConfig, &str, &str) -> Result<(), BrokerError>,
        get: fn(&BrokerConfig) -> Option<String>,
    ) -> Self {
        Self {
            name,
            config_type,
            synonym_of: None,
            set,
            get,
            listed: false,
            sensitive: false,
        }
    }

    /// DescribeConfigs of a broker lists this key.
    const fn listed(self) -> Self {
        Self {
            listed: true,
            ..self
        }
    }

    /// This key is another name of `key`.
    const fn synonym_of(self, key: &'static str) -> Self {
        Self {
            synonym_of: Some(key),
            ..self
        }
    }

    /// A key Kafka brokers know that this broker accepts and ignores without a warning (it has
    /// no effect here, or is about a feature not built yet).
    const fn ignored(name: &'static str) -> Self {
        Self::new(name, ConfigType::String, |_, _, _| Ok(()), |_| None)
    }
}

/// A refused value: the key, the value and why.
pub(super) fn refused(key: &str, value: &str, why: Why) -> BrokerError {
    BrokerError::Config(format!("{key}={value}: {why}"))
}

/// A key stored in one field: parsed by `$parse` (`fn(&str) -> Result<T, Why>`), written
/// back with `to_string`.
macro_rules! field {
    ($name:literal, $ty:ident, c.$($f:ident).+, $parse:expr) => {
        BrokerKey::new(
            $name,
            ConfigType::$ty,
            |c, k, v| {
                c.$($f).+ = ($parse)(v).map_err(|why| refused(k, v, why))?;
                Ok(())
            },
            |c| Some(c.$($f).+.to_string()),
        )
    };
}

/// A duration in milliseconds given in a larger unit (`log.retention.hours`): stored in the
/// millisecond field, written back when it is a whole number of units.
macro_rules! scaled {
    ($name:literal, c.$($f:ident).+, $parse:path, $unit:expr) => {
        BrokerKey::new(
            $name,
            ConfigType::Int,
            |c, k, v| {
                c.$($f).+ = $parse(v, $unit).map_err(|why| refused(k, v, why))?;
                Ok(())
            },
            |c| {
                let ms = c.$($f).+;
                (ms % $unit == 0).then(|| (ms / $unit).to_string())
            },
        )
    };
}

const HOUR_MS: i64 = 3_600_000;
const MINUTE_MS: i64 = 60_000;

fn join<T: ToString>(items: &[T]) -> String {
    items
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

fn listeners_value(list: &[ListenerConfig]) -> String {
    join(list)
}

fn voters_value(list: &[Voter]) -> String {
    join(list)
}

// Setters of the keys whose value is not one field.

fn set_listeners(c: &mut BrokerConfig, _: &str, v: &str) -> Result<(), BrokerError> {
    c.network.listeners = cluster::parse_listeners("listeners", v, false)?;
    c.network.sync_addresses();
    Ok(())
}

fn set_advertised_listeners(c: &mut BrokerConfig, _: &str, v: &str) -> Result<(), BrokerError> {
    c.network.advertised_listeners =
        Some(cluster::parse_listeners("advertised.listeners", v, true)?);
    c.network.sync_addresses();
    Ok(())
}

fn set_data_dir(c: &mut BrokerConfig, k: &str, v: &str) -> Result<(), BrokerError> {
    let first = v.split(',').next().unwrap_or(v).trim();
    if first.is_empty() {
        return Err(BrokerError::Config(format!("{k} is empty")));
    }
    c.server.data_dir = first.into();
    Ok(())
}

fn set_node_id(c: &mut BrokerConfig, k: &str, v: &str) -> Result<(), BrokerError> {
    c.server.node_id = parse::integer(v).map_err(|why| refused(k, v, why))?;
    Ok(())
}

fn set_timestamp_difference(c: &mut BrokerConfig, k: &str, v: &str) -> Result<(), BrokerError> {
    // Deprecated by Kafka 3.6 in favour of the before/after keys; sets both.
    let n: i64 = parse::positive(v).map_err(|why| refused(k, v, why))?;
    c.log.message_timestamp_before_max_ms = n;
    c.log.message_timestamp_after_max_ms = n;
    Ok(())
}

/// Every broker key, by the part of the configuration it belongs to. DescribeConfigs of a
/// broker lists the `listed` ones in this order.
pub static BROKER_KEYS: &[BrokerKey] = &[
    // The node and its limits.
    BrokerKey::new("node.id", ConfigType::Int, set_node_id, |c| {
        Some(c.server.node_id.to_string())
    })
    .listed(),
    BrokerKey::new("broker.id", ConfigType::Int, set_node_id, |c| {
        Some(c.server.node_id.to_string())
    })
    .synonym_of("node.id")
    .listed(),
    BrokerKey::new("log.dirs", ConfigType::List, set_data_dir, |c| {
        Some(c.server.data_dir.display().to_string())
    })
    .listed(),
    BrokerKey::new("log.dir", ConfigType::String, set_data_dir, |c| {
        Some(c.server.data_dir.display().to_string())
    })
    .synonym_of("log.dirs"),
    BrokerKey::new(
        "cluster.id",
        ConfigType::String,
        |c, k, v| {
            c.server.cluster_id = Some(parse::cluster_id(v).map_err(|why| refused(k, v, why))?);
            Ok(())
        },
        |c| c.server.cluster_id.clone(),
    ),
    field!(
        "socket.request.max.bytes",
        Int,
        c.server.socket_request_max_bytes,
        parse::positive
    )
    .listed(),
    field!(
        "max.connections",
        Int,
        c.server.max_connections,
        parse::positive
    )
    .listed(),
    field!(
        "max.connections.per.ip",
        Int,
        c.server.max_connections_per_ip,
        parse::positive
    ),
    BrokerKey::new(
        "max.connections.per.ip.overrides",
        ConfigType::String,
        |c, k, v| {
            c.server.max_connections_per_ip_overrides =
                parse::host_counts(v).map_err(|why| refused(k, v, why))?;
            Ok(())
        },
        |c| {
            let entries: Vec<String> = c
                .server
                .max_connections_per_ip_overrides
                .iter()
                .map(|(ip, n)| match ip {
                    std::net::IpAddr::V4(a) => format!("{a}:{n}"),
                    std::net::IpAddr::V6(a) => format!("[{a}]:{n}"),
                })
                .collect();
            Some(entries.join(","))
        },
    ),
    field!(
        "connections.max.idle.ms",
        Long,
        c.server.connections_max_idle_ms,
        parse::positive
    ),
    field!(
        "queued.max.requests",
        Int,
        c.server.max_pipelined_requests,
        parse::positive
    ),
    field!(
        "connection.read.ahead.max.bytes",
        Long,
        c.server.connection_read_ahead_max_bytes,
        parse::positive
    ),
    BrokerKey::new(
        "queued.max.request.bytes",
        ConfigType::Long,
        |c, k, v| {
            // Kafka's -1 (no bound) keeps ours: every bound here is finite.
            if v != "-1" {
                c.server.queued_max_request_bytes =
                    parse::positive(v).map_err(|why| refused(k, v, why))?;
            }
            Ok(())
        },
        |c| Some(c.server.queued_max_request_bytes.to_string()),
    ),
    field!(
        "fetch.max.bytes",
        Int,
        c.server.fetch_max_bytes,
        parse::positive
    ),
    field!(
        "produce.decompression.max.bytes",
        Long,
        c.server.produce_decompression_max_bytes,
        |v| parse::between(v, 1, u32::MAX as usize)
    ),
    field!(
        "socket.sendfile.enable",
        Boolean,
        c.server.sendfile,
        parse::boolean
    ),
    field!(
        "max.partitions",
        Int,
        c.topics.max_partitions,
        parse::positive
    ),
    // Topics: creation and deletion.
    field!(
        "num.partitions",
        Int,
        c.topics.num_partitions,
        parse::positive
    )
    .listed(),
    field!(
        "default.replication.factor",
        Int,
        c.topics.default_replication_factor,
        parse::positive
    )
    .listed(),
    field!(
        "auto.create.topics.enable",
        Boolean,
        c.topics.auto_create,
        parse::boolean
    )
    .listed(),
    field!(
        "delete.topic.enable",
        Boolean,
        c.topics.delete_enable,
        parse::boolean
    )
    .listed(),
    // The log: the defaults of the topic keys, and the upkeep of partitions.
    field!("log.segment.bytes", Int, c.log.segment_bytes, |v| {
        parse::at_least(v, 14)
    })
    .listed(),
    field!("log.roll.ms", Long, c.log.roll_ms, parse::positive).listed(),
    scaled!(
        "log.roll.hours",
        c.log.roll_ms,
        parse::positive_scaled,
        HOUR_MS
    )
    .synonym_of("log.roll.ms"),
    field!("log.retention.ms", Long, c.log.retention_ms, parse::integer).listed(),
    scaled!(
        "log.retention.minutes",
        c.log.retention_ms,
        parse::scaled,
        MINUTE_MS
    )
    .synonym_of("log.retention.ms"),
    scaled!(
        "log.retention.hours",
        c.log.retention_ms,
        parse::scaled,
        HOUR_MS
    )
    .synonym_of("log.retention.ms"),
    field!(
        "log.retention.bytes",
        Long,
        c.log.retention_bytes,
        parse::integer
    )
    .listed(),
    field!(
        "log.retention.check.interval.ms",
        Long,
        c.log.retention_check_interval_ms,
        parse::positive
    )
    .listed(),
    BrokerKey::new(
        "log.flush.interval.messages",
        ConfigType::Long,
        |c, k, v| {
            c.log.flush_interval_messages = parse::interval(v).map_err(|why| refused(k, v, why))?;
            Ok(())
        },
        |c| Some(parse::show_interval(c.log.flush_interval_messages)),
    )
    .listed(),
    BrokerKey::new(
        "log.flush.interval.ms",
        ConfigType::Long,
        |c, k, v| {
            c.log.flush_interval_ms = parse::interval(v).map_err(|why| refused(k, v, why))?;
            Ok(())
        },
        |c| Some(parse::show_interval(c.log.flush_interval_ms)),
    )
    .listed(),
    field!(
        "log.index.interval.bytes",
        Int,
        c.log.index_interval_bytes,
        parse::positive
    )
    .listed(),
    field!(
        "message.max.bytes",
        Int,
        c.log.message_max_bytes,
        parse::positive
    )
    .listed(),
    BrokerKey::new(
        "log.message.timestamp.type",
        ConfigType::String,
        |c, k, v| {
            c.log.message_timestamp_type =
                parse::timestamp_type(v).map_err(|why| refused(k, v, why))?;
            Ok(())
        },
        |c| Some(parse::show_timestamp_type(c.log.message_timestamp_type)),
    ),
    field!(
        "log.message.timestamp.before.max.ms",
        Long,
        c.log.message_timestamp_before_max_ms,
        parse::positive
    )
    .listed(),
    field!(
        "log.message.timestamp.after.max.ms",
        Long,
        c.log.message_timestamp_after_max_ms,
        parse::positive
    )
    .listed(),
    BrokerKey::new(
        "log.message.timestamp.difference.max.ms",
        ConfigType::Long,
        set_timestamp_difference,
        |c| {
            Some(
                c.log
                    .message_timestamp_before_max_ms
                    .max(c.log.message_timestamp_after_max_ms)
                    .to_string(),
            )
        },
    ),
    field!(
        "min.insync.replicas",
        Int,
        c.log.min_insync_replicas,
        parse::positive
    ),
    field!(
        "unclean.leader.election.enable",
        Boolean,
        c.log.unclean_leader_election_enable,
        parse::boolean
    ),
    field!(
        "log.cleanup.policy",
        List,
        c.log.cleanup_policy,
        parse::cleanup_policy_text
    ),
    field!(
        "log.cleaner.enable",
        Boolean,
        c.log.cleaner_enable,
        parse::boolean
    ),
    field!(
        "log.cleaner.backoff.ms",
        Long,
        c.log.cleaner_backoff_ms,
        parse::positive
    ),
    field!(
        "log.cleaner.dedupe.buffer.size",
        Long,
        c.log.cleaner_dedupe_buffer_size,
        parse::positive
    ),
    field!(
        "log.cleaner.delete.retention.ms",
        Long,
        c.log.cleaner_delete_retention_ms,
        |v| parse::at_least(v, 0)
    ),
    field!(
        "log.cleaner.min.cleanable.ratio",
        Double,
        c.log.cleaner_min_cleanable_ratio,
        parse::ratio
    ),
    field!(
        "log.cleaner.min.compaction.lag.ms",
        Long,
        c.log.cleaner_min_compaction_lag_ms,
        |v| parse::at_least(v, 0)
    ),
    field!(
        "log.cleaner.max.compaction.lag.ms",
        Long,
        c.log.cleaner_max_compaction_lag_ms,
        |v| parse::at_least(v, 1)
    ),
    BrokerKey::new(
        "log.open.files.max",
        ConfigType::Int,
        |c, k, v| {
            c.log.open_files_max = Some(parse::positive(v).map_err(|why| refused(k, v, why))?);
            Ok(())
        },
        |c| c.log.open_files_max.map(|n| n.to_string()),
    ),
    field!(
        "log.offline.retry.ms",
        Long,
        c.log.offline_retry_ms,
        parse::positive
    ),
    field!(
        "producer.id.expiration.ms",
        Int,
        c.log.producer_id_expiration_ms,
        parse::positive
    ),
    field!(
        "producer.id.expiration.check.interval.ms",
        Int,
        c.log.producer_id_expiration_check_interval_ms,
        parse::positive
    ),
    // Listeners.
    BrokerKey::new("listeners", ConfigType::List, set_listeners, |c| {
        Some(listeners_value(&c.network.listeners))
    }),
    BrokerKey::new("listen", ConfigType::List, set_listeners, |c| {
        Some(listeners_value(&c.network.listeners))
    })
    .synonym_of("listeners"),
    BrokerKey::new(
        "advertised.listeners",
        ConfigType::List,
        set_advertised_listeners,
        |c| {
            c.network
                .advertised_listeners
                .as_deref()
                .map(listeners_value)
        },
    ),
    BrokerKey::new(
        "advertised.listener",
        ConfigType::List,
        set_advertised_listeners,
        |c| {
            c.network
                .advertised_listeners
                .as_deref()
                .map(listeners_value)
        },
    )
    .synonym_of("advertised.listeners"),
    BrokerKey::new(
        "listener.security.protocol.map",
        ConfigType::List,
        |c, k, v| {
            c.network.listener_security_protocol_map = Some(cluster::parse_protocol_map(k, v)?);
            Ok(())
        },
        |c| {
            c.network.listener_security_protocol_map.as_ref().map(|m| {
                let entries: Vec<String> = m.iter().map(|(n, p)| format!("{n}:{p}")).collect();
                entries.join(",")
            })
        },
    ),
    BrokerKey::new(
        "inter.broker.listener.name",
        ConfigType::String,
        |c, k, v| {
            c.network.inter_broker_listener_name = if v.is_empty() {
                None
            } else {
                Some(cluster::listener_name(k, v)?)
            };
            c.network.sync_addresses();
            Ok(())
        },
        |c| c.network.inter_broker_listener_name.clone(),
    ),
    BrokerKey::new(
        "controller.listener.names",
        ConfigType::String,
        |c, k, v| {
            c.network.controller_listener_names = cluster::parse_listener_names(k, v)?;
            c.network.sync_addresses();
            Ok(())
        },
        |c| Some(c.network.controller_listener_names.join(",")),
    ),
    BrokerKey::new(
        "broker.rack",
        ConfigType::String,
        |c, _, v| {
            c.network.rack = (!v.is_empty()).then(|| v.to_owned());
            Ok(())
        },
        |c| c.network.rack.clone(),
    )
    .listed(),
    // The controller quorum.
    BrokerKey::new(
        "process.roles",
        ConfigType::List,
        |c, k, v| {
            c.quorum.roles = cluster::parse_roles(k, v)?;
            c.network.sync_addresses();
            Ok(())
        },
        |c| c.quorum.roles.map(|r| r.to_string()),
    ),
    BrokerKey::new(
        "controller.quorum.voters",
        ConfigType::List,
        |c, k, v| {
            c.quorum.voters = cluster::parse_voters(k, v)?;
            Ok(())
        },
        |c| Some(voters_value(&c.quorum.voters)),
    ),
    field!(
        "broker.heartbeat.interval.ms",
        Int,
        c.quorum.broker_heartbeat_interval_ms,
        parse::positive
    ),
    field!(
        "broker.session.timeout.ms",
        Int,
        c.quorum.broker_session_timeout_ms,
        parse::positive
    ),
    field!(
        "controller.quorum.election.timeout.ms",
        Int,
        c.quorum.election_timeout_ms,
        parse::positive
    ),
    field!(
        "controller.quorum.fetch.timeout.ms",
        Int,
        c.quorum.fetch_timeout_ms,
        parse::positive
    ),
    // Replication.
    field!(
        "replica.lag.time.max.ms",
        Long,
        c.replication.lag_time_max_ms,
        |v| { parse::at_least(v, 1) }
    ),
    field!(
        "num.replica.fetchers",
        Int,
        c.replication.num_fetchers,
        |v| { parse::at_least(v, 1) }
    ),
    field!(
        "replica.fetch.max.bytes",
        Int,
        c.replication.fetch_max_bytes,
        |v| { parse::at_least(v, 0) }
    ),
    field!(
        "replica.fetch.response.max.bytes",
        Int,
        c.replication.fetch_response_max_bytes,
        |v| parse::at_least(v, 0)
    ),
    field!(
        "replica.fetch.wait.max.ms",
        Int,
        c.replication.fetch_wait_max_ms,
        |v| { parse::at_least(v, 0) }
    ),
    field!(
        "replica.fetch.min.bytes",
        Int,
        c.replication.fetch_min_bytes,
        |v| { parse::at_least(v, 1) }
    ),
    field!(
        "replica.fetch.backoff.ms",
        Int,
        c.replication.fetch_backoff_ms,
        parse::integer
    ),
    BrokerKey::new(
        "replica.selector.class",
        ConfigType::Class,
        |c, k, v| {
            c.replication.replica_selector =
                ReplicaSelectorClass::parse(v).map_err(|why| refused(k, v, why))?;
            Ok(())
        },
        |c| {
            c.replication
                .replica_selector
                .map(|s| s.class_name().to_owned())
        },
    )
    .listed(),
    // The group coordinator and `__consumer_offsets`.
    field!(
        "offsets.topic.num.partitions",
        Int,
        c.group.offsets_topic_num_partitions,
        parse::positive
    )
    .listed(),
    field!(
        "offsets.topic.replication.factor",
        Short,
        c.group.offsets_topic_replication_factor,
        parse::positive
    ),
    field!(
        "offsets.topic.segment.bytes",
        Int,
        c.group.offsets_topic_segment_bytes,
        |v| parse::between(v, super::MIN_SEGMENT_BYTES, super::MAX_SEGMENT_BYTES)
    ),
    field!(
        "group.min.session.timeout.ms",
        Int,
        c.group.min_session_timeout_ms,
        |v| parse::at_least(v, 0)
    ),
    field!(
        "group.max.session.timeout.ms",
        Int,
        c.group.max_session_timeout_ms,
        |v| parse::at_least(v, 0)
    ),
    field!(
        "group.initial.rebalance.delay.ms",
        Int,
        c.group.initial_rebalance_delay_ms,
        |v| parse::at_least(v, 0)
    ),
    field!(
        "group.max.size",
        Int,
        c.group.max_size,
        |v| parse::at_least(v, 1)
    ),
    field!(
        "group.consumer.heartbeat.interval.ms",
        Int,
        c.group.consumer_heartbeat_interval_ms,
        |v| parse::at_least(v, 1)
    ),
    field!(
        "group.consumer.min.heartbeat.interval.ms",
        Int,
        c.group.consumer_min_heartbeat_interval_ms,
        |v| parse::at_least(v, 1)
    ),
    field!(
        "group.consumer.max.heartbeat.interval.ms",
        Int,
        c.group.consumer_max_heartbeat_interval_ms,
        |v| parse::at_least(v, 1)
    ),
    field!(
        "group.consumer.session.timeout.ms",
        Int,
        c.group.consumer_session_timeout_ms,
        |v| parse::at_least(v, 1)
    ),
    field!(
        "group.consumer.min.session.timeout.ms",
        Int,
        c.group.consumer_min_session_timeout_ms,
        |v| parse::at_least(v, 1)
    ),
    field!(
        "group.consumer.max.session.timeout.ms",
        Int,
        c.group.consumer_max_session_timeout_ms,
        |v| parse::at_least(v, 1)
    ),
    field!(
        "group.consumer.max.size",
        Int,
        c.group.consumer_max_size,
        |v| parse::at_least(v, 1)
    ),
    field!(
        "group.consumer.assignors",
        List,
        c.group.consumer_assignors,
        parse::text
    ),
    field!(
        "offset.metadata.max.bytes",
        Int,
        c.group.offset_metadata_max_bytes,
        parse::integer
    ),
    scaled!(
        "offsets.retention.minutes",
        c.group.offsets_retention_ms,
        parse::positive_scaled,
        MINUTE_MS
    ),
    field!(
        "offsets.retention.check.interval.ms",
        Long,
        c.group.offsets_retention_check_interval_ms,
        |v| parse::at_least(v, 1)
    ),
    // The transaction coordinator and `__transaction_state`.
    field!(
        "transaction.max.timeout.ms",
        Int,
        c.txn.max_timeout_ms,
        |v| { parse::at_least(v, 1) }
    ),
    field!(
        "transactional.id.expiration.ms",
        Int,
        c.txn.transactional_id_expiration_ms,
        |v| parse::at_least(v, 1)
    ),
    field!(
        "transaction.state.log.num.partitions",
        Int,
        c.txn.num_partitions,
        |v| parse::at_least(v, 1)
    ),
    field!(
        "transaction.state.log.replication.factor",
        Short,
        c.txn.replication_factor,
        |v| parse::at_least(v, 1)
    ),
    field!("transaction.state.log.min.isr", Int, c.txn.min_isr, |v| {
        parse::at_least(v, 1)
    }),
    field!(
        "transaction.state.log.segment.bytes",
        Int,
        c.txn.segment_bytes,
        |v| parse::between(v, super::MIN_SEGMENT_BYTES, super::MAX_SEGMENT_BYTES)
    ),
    field!(
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        Int,
        c.txn.abort_timed_out_interval_ms,
        |v| parse::at_least(v, 1)
    ),
    field!(
        "transaction.remove.expired.transaction.cleanup.interval.ms",
        Int,
        c.txn.remove_expired_interval_ms,
        |v| parse::at_least(v, 1)
    ),
    // Client quotas and connection-creation rates.
    field!("quota.window.num", Int, c.quota.window_num, |v| {
        parse::between(v, 1, super::MAX_QUOTA_WINDOW_NUM)
    }),
    field!(
        "quota.window.size.seconds",
        Int,
        c.quota.window_size_seconds,
        |v| parse::between(v, 1, i32::MAX as u32)
    ),
    field!(
        "max.connection.creation.rate",
        Int,
        c.quota.max_connection_creation_rate,
        |v| parse::between(v, 0, i32::MAX as u32)
    ),
    field!(
        "quota.sensors.max",
        Int,
        c.quota.sensors_max,
        parse::positive
    ),
    // Known to Kafka, no effect here.
    BrokerKey::ignored("num.network.threads"),
    BrokerKey::ignored("num.io.threads"),
    BrokerKey::ignored("socket.send.buffer.bytes"),
    BrokerKey::ignored("socket.receive.buffer.bytes"),
    BrokerKey::ignored("num.recovery.threads.per.data.dir"),
    BrokerKey::ignored("zookeeper.connect"),
];

/// The entry of a broker key, `None` for a key this broker does not know.
pub fn broker_key(name: &str) -> Option<&'static BrokerKey> {
    BROKER_KEYS.iter().find(|k| k.name == name)
}

/// Result of applying one key.
#[derive(Debug, PartialEq, Eq)]
pub enum Applied {
    Known,
    /// A key this broker does not use (warned about, ignored).
    Unknown,
}

impl BrokerConfig {
    /// Applies one `key=value`: the key's parser from the broker key table
    /// ([`BROKER_KEYS`]) stores the value, or refuses it naming the key.
    pub fn apply(&mut self, key: &str, value: &str) -> Result<Applied, BrokerError> {
        let key = key.trim();
        let Some(entry) = broker_key(key) else {
            if super::SecurityConfig::takes(key) {
                self.security.set(key, value.trim())?;
                return Ok(Applied::Known);
            }
            return Ok(Applied::Unknown);
        };
        (entry.set)(self, key, value.trim())?;
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
}

#[cfg(test)]
mod tests;
