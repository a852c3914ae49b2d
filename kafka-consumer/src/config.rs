//! Consumer settings, with the Java client's key names and defaults.
//!
//! Two ways in: key/value pairs as in a Java `consumer.properties`
//! ([`ConsumerConfig::from_pairs`], [`ConsumerConfigBuilder::set`]), or the typed builder
//! methods. Both end in [`ConsumerConfigBuilder::build`], which checks values and the
//! combinations that cannot work, naming the keys involved. Unknown keys are logged and
//! ignored, as the Java client does.
//!
//! One key is ours: `fetch.buffer.max.bytes` (default 64 MiB) caps the record bytes fetched
//! ahead of the application. When the application stops polling, fetching stops once this
//! much is buffered. (A broker may answer with one batch larger than the space left, as
//! KIP-74 allows, so the cap can be passed by at most one batch.)

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use kafka_net::{ClientSecurity, ClusterConfig, ConnectionConfig, SecurityKeys};
use kafka_protocol::KStr;

use crate::error::ConsumerError;
use crate::types::{IsolationLevel, OffsetReset};

/// The key of our buffered-bytes cap (not a Java key).
pub const FETCH_BUFFER_MAX_BYTES: &str = "fetch.buffer.max.bytes";

/// The partition assignors `partition.assignment.strategy` may name (short names; the Java
/// class names map to them).
pub const ASSIGNORS: [&str; 4] = ["range", "roundrobin", "sticky", "cooperative-sticky"];

/// Validated consumer settings. Build one with [`ConsumerConfig::builder`] or
/// [`ConsumerConfig::from_pairs`]; `Consumer::new` checks them again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerConfig {
    /// `bootstrap.servers` (required).
    pub bootstrap_servers: Vec<String>,
    /// `group.id` (default none): needed for committed offsets and group membership.
    pub group_id: Option<String>,
    /// `client.id` (default `consumer-<group>-<n>`).
    pub client_id: String,
    /// `group.instance.id` (default none): static membership.
    pub group_instance_id: Option<String>,
    /// `auto.offset.reset` (default latest).
    pub auto_offset_reset: OffsetReset,
    /// `enable.auto.commit` (default true; off without `group.id`, see
    /// [`ConsumerConfig::auto_commit`]).
    pub enable_auto_commit: bool,
    /// `auto.commit.interval.ms` (default 5000).
    pub auto_commit_interval: Duration,
    /// `fetch.min.bytes` (default 1).
    pub fetch_min_bytes: i32,
    /// `fetch.max.bytes` (default 52428800): the most one Fetch response should carry.
    pub fetch_max_bytes: i32,
    /// `fetch.max.wait.ms` (default 500): how long the broker may wait for `fetch.min.bytes`.
    pub fetch_max_wait: Duration,
    /// `max.partition.fetch.bytes` (default 1048576).
    pub max_partition_fetch_bytes: i32,
    /// `fetch.buffer.max.bytes` (ours, default 67108864): record bytes fetched ahead.
    pub fetch_buffer_max_bytes: usize,
    /// `max.poll.records` (default 500).
    pub max_poll_records: usize,
    /// `max.poll.interval.ms` (default 300000).
    pub max_poll_interval: Duration,
    /// `session.timeout.ms` (default 45000).
    pub session_timeout: Duration,
    /// `heartbeat.interval.ms` (default 3000).
    pub heartbeat_interval: Duration,
    /// `partition.assignment.strategy` (default range, cooperative-sticky), short names.
    pub partition_assignment_strategy: Vec<String>,
    /// `isolation.level` (default read_uncommitted).
    pub isolation_level: IsolationLevel,
    /// `check.crcs` (default true).
    pub check_crcs: bool,
    /// `request.timeout.ms` (default 30000).
    pub request_timeout: Duration,
    /// `default.api.timeout.ms` (default 60000): the limit of calls that take no timeout.
    pub default_api_timeout: Duration,
    /// `retry.backoff.ms` (default 100).
    pub retry_backoff: Duration,
    /// `retry.backoff.max.ms` (default 1000).
    pub retry_backoff_max: Duration,
    /// `reconnect.backoff.ms` (default 50).
    pub reconnect_backoff: Duration,
    /// `reconnect.backoff.max.ms` (default 1000).
    pub reconnect_backoff_max: Duration,
    /// `metadata.max.age.ms` (default 300000).
    pub metadata_max_age: Duration,
    /// `allow.auto.create.topics` (default true).
    pub allow_auto_create_topics: bool,
    /// `client.rack` (default empty): sent in Fetch so the broker can pick a nearby replica.
    pub client_rack: String,
    /// `connections.max.idle.ms` (default 540000).
    pub connections_max_idle: Duration,
    /// `socket.connection.setup.timeout.ms` (default 10000).
    pub connection_setup_timeout: Duration,
    /// `send.buffer.bytes` (default 131072; -1: the OS default).
    pub send_buffer: Option<u32>,
    /// `receive.buffer.bytes` (default 65536; -1: the OS default).
    pub receive_buffer: Option<u32>,
    /// `security.protocol` and the `ssl.*` keys, built (files read) by
    /// [`ConsumerConfigBuilder::build`].
    pub security: ClientSecurity,
}

impl Default for ConsumerConfig {
    fn default() -> Self {
        Self {
            bootstrap_servers: Vec::new(),
            group_id: None,
            client_id: String::new(),
            group_instance_id: None,
            auto_offset_reset: OffsetReset::Latest,
            enable_auto_commit: true,
            auto_commit_interval: Duration::from_millis(5000),
            fetch_min_bytes: 1,
            fetch_max_bytes: 52_428_800,
            fetch_max_wait: Duration::from_millis(500),
            max_partition_fetch_bytes: 1_048_576,
            fetch_buffer_max_bytes: 64 * 1024 * 1024,
            max_poll_records: 500,
            max_poll_interval: Duration::from_millis(300_000),
            session_timeout: Duration::from_millis(45_000),
            heartbeat_interval: Duration::from_millis(3000),
            partition_assignment_strategy: vec!["range".into(), "cooperative-sticky".into()],
            isolation_level: IsolationLevel::ReadUncommitted,
            check_crcs: true,
            request_timeout: Duration::from_millis(30_000),
            default_api_timeout: Duration::from_millis(60_000),
            retry_backoff: Duration::from_millis(100),
            retry_backoff_max: Duration::from_millis(1000),
            reconnect_backoff: Duration::from_millis(50),
            reconnect_backoff_max: Duration::from_millis(1000),
            metadata_max_age: Duration::from_millis(300_000),
            allow_auto_create_topics: true,
            client_rack: String::new(),
            connections_max_idle: Duration::from_millis(540_000),
            connection_setup_timeout: Duration::from_millis(10_000),
            send_buffer: Some(131_072),
            receive_buffer: Some(65_536),
            security: ClientSecurity::default(),
        }
    }
}

/// Java keys we accept and do not use (records are handed out as bytes).
const IGNORED_KEYS: &[&str] = &[
    "key.deserializer",
    "value.deserializer",
    "interceptor.classes",
    "client.dns.lookup",
    "exclude.internal.topics",
    "internal.leave.group.on.close",
    "metric.reporters",
    "metrics.num.samples",
    "metrics.recording.level",
    "metrics.sample.window.ms",
    "auto.include.jmx.reporter",
    "enable.metrics.push",
    "socket.connection.setup.timeout.max.ms",
];

static CLIENT_IDS: AtomicU64 = AtomicU64::new(1);

impl ConsumerConfig {
    /// A builder holding Kafka's defaults.
    pub fn builder() -> ConsumerConfigBuilder {
        ConsumerConfigBuilder::default()
    }

    /// Settings from key/value pairs (Kafka's key names), checked.
    pub fn from_pairs<K: AsRef<str>, V: AsRef<str>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Result<Self, ConsumerError> {
        let mut b = Self::builder();
        for (k, v) in pairs {
            b = b.set(k.as_ref(), v.as_ref())?;
        }
        b.build()
    }

    /// Checks values and combinations; the message names the keys.
    pub fn validate(&self) -> Result<(), ConsumerError> {
        let bad = |m: String| Err(ConsumerError::InvalidConfig(m));
        if self.bootstrap_servers.is_empty() {
            return bad("bootstrap.servers is empty".into());
        }
        if self.fetch_max_bytes < 1 {
            return bad(format!(
                "fetch.max.bytes must be at least 1 (is {})",
                self.fetch_max_bytes
            ));
        }
        if self.max_partition_fetch_bytes < 1 {
            return bad(format!(
                "max.partition.fetch.bytes must be at least 1 (is {})",
                self.max_partition_fetch_bytes
            ));
        }
        if self.fetch_min_bytes < 0 {
            return bad(format!(
                "fetch.min.bytes must not be negative (is {})",
                self.fetch_min_bytes
            ));
        }
        if self.fetch_buffer_max_bytes < 1 {
            return bad(format!("{FETCH_BUFFER_MAX_BYTES} must be at least 1"));
        }
        if self.max_poll_records < 1 {
            return bad("max.poll.records must be at least 1".into());
        }
        if self.max_poll_interval.is_zero() {
            return bad("max.poll.interval.ms must be at least 1".into());
        }
        if self.session_timeout.is_zero() {
            return bad("session.timeout.ms must be at least 1".into());
        }
        if self.heartbeat_interval >= self.session_timeout {
            return bad(format!(
                "heartbeat.interval.ms ({}) must be lower than session.timeout.ms ({})",
                self.heartbeat_interval.as_millis(),
                self.session_timeout.as_millis()
            ));
        }
        if self.request_timeout.is_zero() {
            return bad("request.timeout.ms must be at least 1".into());
        }
        if self.fetch_max_wait >= self.request_timeout {
            return bad(format!(
                "fetch.max.wait.ms ({}) must be lower than request.timeout.ms ({}): every \
                 fetch would time out",
                self.fetch_max_wait.as_millis(),
                self.request_timeout.as_millis()
            ));
        }
        if self.retry_backoff > self.retry_backoff_max && !self.retry_backoff_max.is_zero() {
            return bad("retry.backoff.ms must not exceed retry.backoff.max.ms".into());
        }
        if self.group_id.is_none() && self.group_instance_id.is_some() {
            return bad("group.instance.id needs group.id".into());
        }
        if self.group_instance_id.as_deref().is_some_and(str::is_empty) {
            return bad("group.instance.id must not be empty".into());
        }
        if self.partition_assignment_strategy.is_empty() {
            return bad("partition.assignment.strategy is empty".into());
        }
        for s in &self.partition_assignment_strategy {
            if crate::assignor::by_name(s).is_none() {
                return bad(format!(
                    "partition.assignment.strategy: unknown assignor {s:?} (known: {})",
                    ASSIGNORS.join(", ")
                ));
            }
        }
        i32::try_from(self.fetch_max_wait.as_millis())
            .map_err(|_| ConsumerError::InvalidConfig("fetch.max.wait.ms is too large".into()))?;
        Ok(())
    }

    /// Settings of the cluster client underneath.
    pub fn cluster_config(&self) -> ClusterConfig {
        let mut connection = ConnectionConfig::default();
        connection.conn.client_id = Some(KStr::from(self.client_id.clone()));
        connection.conn.request_timeout = self.request_timeout;
        // A fetch answer may pass fetch.max.bytes by one batch (KIP-74).
        connection.conn.max_frame = connection
            .conn
            .max_frame
            .max(usize::try_from(self.fetch_max_bytes).unwrap_or(0) + 16 * 1024 * 1024);
        connection.connect_timeout = self.connection_setup_timeout;
        connection.idle_timeout = Some(self.connections_max_idle);
        connection.send_buffer = self.send_buffer;
        connection.receive_buffer = self.receive_buffer;
        connection.security = self.security.clone();
        ClusterConfig {
            bootstrap: self.bootstrap_servers.clone(),
            connection,
            metadata_max_age: self.metadata_max_age,
            reconnect_backoff: self.reconnect_backoff,
            reconnect_backoff_max: self.reconnect_backoff_max,
            retry_backoff: self.retry_backoff,
            retries: 5,
            max_block: self.default_api_timeout,
            allow_auto_topic_creation: self.allow_auto_create_topics,
        }
    }

    /// Whether offsets are committed automatically (needs a group).
    pub fn auto_commit(&self) -> bool {
        self.enable_auto_commit && self.group_id.is_some()
    }
}

/// Builds a [`ConsumerConfig`]: key/value pairs with [`Self::set`], or typed setters.
#[derive(Debug, Clone, Default)]
pub struct ConsumerConfigBuilder {
    cfg: ConsumerConfig,
    auto_commit_set: bool,
    security_keys: SecurityKeys,
}

fn invalid(key: &str, value: &str, reason: impl Into<String>) -> ConsumerError {
    ConsumerError::Config {
        key: key.to_owned(),
        value: value.to_owned(),
        reason: reason.into(),
    }
}

fn parse_i64(key: &str, value: &str) -> Result<i64, ConsumerError> {
    value
        .trim()
        .parse::<i64>()
        .map_err(|_| invalid(key, value, "expected an integer"))
}

fn parse_i32(key: &str, value: &str) -> Result<i32, ConsumerError> {
    i32::try_from(parse_i64(key, value)?)
        .map_err(|_| invalid(key, value, "out of range for a 32-bit integer"))
}

fn parse_usize(key: &str, value: &str) -> Result<usize, ConsumerError> {
    usize::try_from(parse_i64(key, value)?)
        .map_err(|_| invalid(key, value, "expected a non-negative integer"))
}

fn parse_ms(key: &str, value: &str) -> Result<Duration, ConsumerError> {
    let ms = u64::try_from(parse_i64(key, value)?)
        .map_err(|_| invalid(key, value, "expected a non-negative number of milliseconds"))?;
    Ok(Duration::from_millis(ms))
}

fn parse_bool(key: &str, value: &str) -> Result<bool, ConsumerError> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(invalid(key, value, "expected true or false")),
    }
}

fn parse_socket_buffer(key: &str, value: &str) -> Result<Option<u32>, ConsumerError> {
    match parse_i64(key, value)? {
        -1 => Ok(None),
        n => u32::try_from(n)
            .map(Some)
            .map_err(|_| invalid(key, value, "expected -1 or a byte count")),
    }
}

fn opt_string(value: &str) -> Option<String> {
    let v = value.trim();
    (!v.is_empty()).then(|| v.to_owned())
}

/// The short name of an assignor given by short name or Java class name.
fn assignor_name(key: &str, value: &str) -> Result<String, ConsumerError> {
    let short = match value.rsplit('.').next().unwrap_or(value) {
        "RangeAssignor" => "range",
        "RoundRobinAssignor" => "roundrobin",
        "StickyAssignor" => "sticky",
        "CooperativeStickyAssignor" => "cooperative-sticky",
        other => other,
    };
    if ASSIGNORS.contains(&short) {
        Ok(short.to_owned())
    } else {
        Err(invalid(
            key,
            value,
            format!("unknown assignor (known: {})", ASSIGNORS.join(", ")),
        ))
    }
}

impl ConsumerConfigBuilder {
    /// Sets one key by its Kafka name. Bad values fail naming the key; unknown keys are
    /// logged and ignored.
    pub fn set(mut self, key: &str, value: &str) -> Result<Self, ConsumerError> {
        if self
            .security_keys
            .set(key, value)
            .map_err(|e| invalid(key, value, e.to_string()))?
        {
            return Ok(self);
        }
        let c = &mut self.cfg;
        match key {
            "bootstrap.servers" => {
                c.bootstrap_servers = value
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect();
            }
            "group.id" => c.group_id = opt_string(value),
            "client.id" => c.client_id = value.trim().to_owned(),
            "group.instance.id" => c.group_instance_id = opt_string(value),
            "auto.offset.reset" => {
                c.auto_offset_reset = match value.trim().to_ascii_lowercase().as_str() {
                    "latest" => OffsetReset::Latest,
                    "earliest" => OffsetReset::Earliest,
                    "none" => OffsetReset::None,
                    _ => return Err(invalid(key, value, "expected latest, earliest or none")),
                }
            }
            "enable.auto.commit" => {
                c.enable_auto_commit = parse_bool(key, value)?;
                self.auto_commit_set = true;
            }
            "auto.commit.interval.ms" => c.auto_commit_interval = parse_ms(key, value)?,
            "fetch.min.bytes" => c.fetch_min_bytes = parse_i32(key, value)?,
            "fetch.max.bytes" => c.fetch_max_bytes = parse_i32(key, value)?,
            "fetch.max.wait.ms" => c.fetch_max_wait = parse_ms(key, value)?,
            "max.partition.fetch.bytes" => c.max_partition_fetch_bytes = parse_i32(key, value)?,
            FETCH_BUFFER_MAX_BYTES => c.fetch_buffer_max_bytes = parse_usize(key, value)?,
            "max.poll.records" => c.max_poll_records = parse_usize(key, value)?,
            "max.poll.interval.ms" => c.max_poll_interval = parse_ms(key, value)?,
            "session.timeout.ms" => c.session_timeout = parse_ms(key, value)?,
            "heartbeat.interval.ms" => c.heartbeat_interval = parse_ms(key, value)?,
            "partition.assignment.strategy" => {
                c.partition_assignment_strategy = value
                    .split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(|s| assignor_name(key, s))
                    .collect::<Result<_, _>>()?;
            }
            "isolation.level" => {
                c.isolation_level = match value.trim().to_ascii_lowercase().as_str() {
                    "read_uncommitted" => IsolationLevel::ReadUncommitted,
                    "read_committed" => IsolationLevel::ReadCommitted,
                    _ => {
                        return Err(invalid(
                            key,
                            value,
                            "expected read_uncommitted or read_committed",
                        ));
                    }
                }
            }
            "check.crcs" => c.check_crcs = parse_bool(key, value)?,
            "request.timeout.ms" => c.request_timeout = parse_ms(key, value)?,
            "default.api.timeout.ms" => c.default_api_timeout = parse_ms(key, value)?,
            "retry.backoff.ms" => c.retry_backoff = parse_ms(key, value)?,
            "retry.backoff.max.ms" => c.retry_backoff_max = parse_ms(key, value)?,
            "reconnect.backoff.ms" => c.reconnect_backoff = parse_ms(key, value)?,
            "reconnect.backoff.max.ms" => c.reconnect_backoff_max = parse_ms(key, value)?,
            "metadata.max.age.ms" => c.metadata_max_age = parse_ms(key, value)?,
            "allow.auto.create.topics" => c.allow_auto_create_topics = parse_bool(key, value)?,
            "client.rack" => c.client_rack = value.trim().to_owned(),
            "connections.max.idle.ms" => c.connections_max_idle = parse_ms(key, value)?,
            "socket.connection.setup.timeout.ms" => {
                c.connection_setup_timeout = parse_ms(key, value)?;
            }
            "send.buffer.bytes" => c.send_buffer = parse_socket_buffer(key, value)?,
            "receive.buffer.bytes" => c.receive_buffer = parse_socket_buffer(key, value)?,
            "group.protocol" => {
                if !value.trim().eq_ignore_ascii_case("classic") {
                    return Err(invalid(
                        key,
                        value,
                        "only the classic group protocol is supported so far",
                    ));
                }
            }
            k if IGNORED_KEYS.contains(&k) => {
                tracing::debug!(key, "consumer setting accepted and not used");
            }
            _ => tracing::warn!(key, value, "unknown consumer setting ignored"),
        }
        Ok(self)
    }

    /// `bootstrap.servers`.
    pub fn bootstrap_servers<S: AsRef<str>>(
        mut self,
        servers: impl IntoIterator<Item = S>,
    ) -> Self {
        self.cfg.bootstrap_servers = servers
            .into_iter()
            .map(|s| s.as_ref().trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect();
        self
    }

    /// `group.id`.
    pub fn group_id(mut self, group: impl Into<String>) -> Self {
        self.cfg.group_id = Some(group.into());
        self
    }

    /// `client.id`.
    pub fn client_id(mut self, id: impl Into<String>) -> Self {
        self.cfg.client_id = id.into();
        self
    }

    /// `group.instance.id`.
    pub fn group_instance_id(mut self, id: impl Into<String>) -> Self {
        self.cfg.group_instance_id = Some(id.into());
        self
    }

    /// `auto.offset.reset`.
    pub fn auto_offset_reset(mut self, reset: OffsetReset) -> Self {
        self.cfg.auto_offset_reset = reset;
        self
    }

    /// `enable.auto.commit`.
    pub fn enable_auto_commit(mut self, on: bool) -> Self {
        self.cfg.enable_auto_commit = on;
        self.auto_commit_set = true;
        self
    }

    /// `auto.commit.interval.ms`.
    pub fn auto_commit_interval(mut self, d: Duration) -> Self {
        self.cfg.auto_commit_interval = d;
        self
    }

    /// `fetch.min.bytes`.
    pub fn fetch_min_bytes(mut self, bytes: i32) -> Self {
        self.cfg.fetch_min_bytes = bytes;
        self
    }

    /// `fetch.max.bytes`.
    pub fn fetch_max_bytes(mut self, bytes: i32) -> Self {
        self.cfg.fetch_max_bytes = bytes;
        self
    }

    /// `fetch.max.wait.ms`.
    pub fn fetch_max_wait(mut self, d: Duration) -> Self {
        self.cfg.fetch_max_wait = d;
        self
    }

    /// `max.partition.fetch.bytes`.
    pub fn max_partition_fetch_bytes(mut self, bytes: i32) -> Self {
        self.cfg.max_partition_fetch_bytes = bytes;
        self
    }

    /// `fetch.buffer.max.bytes` (ours): record bytes fetched ahead of the application.
    pub fn fetch_buffer_max_bytes(mut self, bytes: usize) -> Self {
        self.cfg.fetch_buffer_max_bytes = bytes;
        self
    }

    /// `max.poll.records`.
    pub fn max_poll_records(mut self, n: usize) -> Self {
        self.cfg.max_poll_records = n;
        self
    }

    /// `max.poll.interval.ms`.
    pub fn max_poll_interval(mut self, d: Duration) -> Self {
        self.cfg.max_poll_interval = d;
        self
    }

    /// `session.timeout.ms`.
    pub fn session_timeout(mut self, d: Duration) -> Self {
        self.cfg.session_timeout = d;
        self
    }

    /// `heartbeat.interval.ms`.
    pub fn heartbeat_interval(mut self, d: Duration) -> Self {
        self.cfg.heartbeat_interval = d;
        self
    }

    /// `partition.assignment.strategy` (short names or Java class names).
    pub fn partition_assignment_strategy<S: AsRef<str>>(
        mut self,
        names: impl IntoIterator<Item = S>,
    ) -> Self {
        self.cfg.partition_assignment_strategy = names
            .into_iter()
            .map(|s| {
                let s = s.as_ref();
                assignor_name("partition.assignment.strategy", s).unwrap_or_else(|_| s.to_owned())
            })
            .collect();
        self
    }

    /// `isolation.level`.
    pub fn isolation_level(mut self, level: IsolationLevel) -> Self {
        self.cfg.isolation_level = level;
        self
    }

    /// `check.crcs`.
    pub fn check_crcs(mut self, on: bool) -> Self {
        self.cfg.check_crcs = on;
        self
    }

    /// `request.timeout.ms`.
    pub fn request_timeout(mut self, d: Duration) -> Self {
        self.cfg.request_timeout = d;
        self
    }

    /// `default.api.timeout.ms`.
    pub fn default_api_timeout(mut self, d: Duration) -> Self {
        self.cfg.default_api_timeout = d;
        self
    }

    /// `retry.backoff.ms`.
    pub fn retry_backoff(mut self, d: Duration) -> Self {
        self.cfg.retry_backoff = d;
        self
    }

    /// `reconnect.backoff.ms` and `reconnect.backoff.max.ms`.
    pub fn reconnect_backoff(mut self, first: Duration, max: Duration) -> Self {
        self.cfg.reconnect_backoff = first;
        self.cfg.reconnect_backoff_max = max;
        self
    }

    /// `metadata.max.age.ms`.
    pub fn metadata_max_age(mut self, d: Duration) -> Self {
        self.cfg.metadata_max_age = d;
        self
    }

    /// `allow.auto.create.topics`.
    pub fn allow_auto_create_topics(mut self, on: bool) -> Self {
        self.cfg.allow_auto_create_topics = on;
        self
    }

    /// `client.rack`.
    pub fn client_rack(mut self, rack: impl Into<String>) -> Self {
        self.cfg.client_rack = rack.into();
        self
    }

    /// Checks the settings and fills in what depends on others (`client.id`, and
    /// `enable.auto.commit`, which is off by default without `group.id`).
    pub fn build(mut self) -> Result<ConsumerConfig, ConsumerError> {
        self.cfg.security = self
            .security_keys
            .build()
            .map_err(|e| ConsumerError::InvalidConfig(e.to_string()))?;
        if self.cfg.group_id.is_none() {
            if self.auto_commit_set && self.cfg.enable_auto_commit {
                return Err(ConsumerError::InvalidConfig(
                    "enable.auto.commit=true needs group.id".into(),
                ));
            }
            self.cfg.enable_auto_commit = false;
        }
        if self.cfg.client_id.is_empty() {
            let n = CLIENT_IDS.fetch_add(1, Ordering::Relaxed);
            self.cfg.client_id = match &self.cfg.group_id {
                Some(g) => format!("consumer-{g}-{n}"),
                None => format!("consumer-{n}"),
            };
        }
        self.cfg.validate()?;
        Ok(self.cfg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> ConsumerConfigBuilder {
        ConsumerConfig::builder().bootstrap_servers(["127.0.0.1:9092"])
    }

    #[test]
    fn java_defaults() {
        let c = base().group_id("g").build().unwrap();
        assert_eq!(c.auto_offset_reset, OffsetReset::Latest);
        assert!(c.enable_auto_commit);
        assert_eq!(c.auto_commit_interval, Duration::from_millis(5000));
        assert_eq!(c.fetch_min_bytes, 1);
        assert_eq!(c.fetch_max_bytes, 52_428_800);
        assert_eq!(c.fetch_max_wait, Duration::from_millis(500));
        assert_eq!(c.max_partition_fetch_bytes, 1_048_576);
        assert_eq!(c.max_poll_records, 500);
        assert_eq!(c.max_poll_interval, Duration::from_millis(300_000));
        assert_eq!(c.session_timeout, Duration::from_millis(45_000));
        assert_eq!(c.heartbeat_interval, Duration::from_millis(3000));
        assert_eq!(c.isolation_level, IsolationLevel::ReadUncommitted);
        assert!(c.check_crcs);
        assert_eq!(c.request_timeout, Duration::from_millis(30_000));
        assert_eq!(c.default_api_timeout, Duration::from_millis(60_000));
        assert_eq!(
            c.partition_assignment_strategy,
            ["range", "cooperative-sticky"]
        );
        assert!(c.client_id.starts_with("consumer-g-"));
        // Without a group, auto-commit is off unless asked for (and then refused).
        let c = base().build().unwrap();
        assert!(!c.enable_auto_commit && !c.auto_commit());
        let e = base().enable_auto_commit(true).build().unwrap_err();
        assert!(e.to_string().contains("enable.auto.commit"), "{e}");
    }

    #[test]
    fn pairs_with_errors_naming_the_key() {
        let c = ConsumerConfig::from_pairs([
            ("bootstrap.servers", "a:1, b:2"),
            ("group.id", "g"),
            ("auto.offset.reset", "earliest"),
            ("isolation.level", "read_committed"),
            ("max.poll.records", "10"),
            ("fetch.buffer.max.bytes", "1000"),
            (
                "partition.assignment.strategy",
                "org.apache.kafka.clients.consumer.RoundRobinAssignor,range",
            ),
            ("key.deserializer", "x.Y"),
            ("no.such.key", "1"),
        ])
        .unwrap();
        assert_eq!(c.bootstrap_servers, ["a:1", "b:2"]);
        assert_eq!(c.auto_offset_reset, OffsetReset::Earliest);
        assert_eq!(c.isolation_level, IsolationLevel::ReadCommitted);
        assert_eq!(c.max_poll_records, 10);
        assert_eq!(c.fetch_buffer_max_bytes, 1000);
        assert_eq!(c.partition_assignment_strategy, ["roundrobin", "range"]);
        for (k, v) in [
            ("fetch.max.wait.ms", "-1"),
            ("auto.offset.reset", "smallest"),
            ("check.crcs", "yes"),
            ("fetch.min.bytes", "99999999999"),
            ("isolation.level", "serializable"),
            ("partition.assignment.strategy", "magic"),
            ("security.protocol", "TLS"),
            ("ssl.no.such.key", "1"),
        ] {
            let e = ConsumerConfig::builder().set(k, v).unwrap_err();
            assert!(e.to_string().contains(k), "{k}: {e}");
        }
    }

    #[test]
    fn cross_key_validation() {
        let e = base()
            .group_id("g")
            .session_timeout(Duration::from_millis(1000))
            .heartbeat_interval(Duration::from_millis(1000))
            .build()
            .unwrap_err();
        assert!(e.to_string().contains("heartbeat.interval.ms"), "{e}");
        let e = base().fetch_max_bytes(0).build().unwrap_err();
        assert!(e.to_string().contains("fetch.max.bytes"), "{e}");
        let e = base().max_poll_records(0).build().unwrap_err();
        assert!(e.to_string().contains("max.poll.records"), "{e}");
        let e = base().fetch_buffer_max_bytes(0).build().unwrap_err();
        assert!(e.to_string().contains(FETCH_BUFFER_MAX_BYTES), "{e}");
        let e = ConsumerConfig::builder().build().unwrap_err();
        assert!(e.to_string().contains("bootstrap.servers"), "{e}");
        let e = base().group_instance_id("i").build().unwrap_err();
        assert!(e.to_string().contains("group.instance.id"), "{e}");
        let e = base()
            .fetch_max_wait(Duration::from_secs(40))
            .build()
            .unwrap_err();
        assert!(e.to_string().contains("fetch.max.wait.ms"), "{e}");
    }
}
