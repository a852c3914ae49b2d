//! Producer settings, with the Java client's key names and Kafka 4's defaults.
//!
//! Two ways in: key/value pairs as in a Java `producer.properties`
//! ([`ProducerConfig::from_pairs`], [`ProducerConfigBuilder::set`]), or the typed builder
//! methods. Both end in [`ProducerConfigBuilder::build`], which checks values and the
//! combinations Kafka refuses, naming the keys involved.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use kafka_net::{ClientSecurity, ClusterConfig, ConnectionConfig, SecurityKeys};
use kafka_protocol::KStr;
use kafka_protocol::record::Compression;

use crate::delivery::DeliveryHandler;
use crate::error::ProducerError;
use crate::interceptor::{Interceptors, ProducerInterceptor};
use crate::partitioner::{self, Partitioner};

/// `acks`: how many replicas must have a record before it counts as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acks {
    /// `acks=0`: no answer; a record counts as sent once written to the socket.
    None,
    /// `acks=1`: the leader appended it.
    Leader,
    /// `acks=all` (or -1): every in-sync replica has it.
    All,
}

impl Acks {
    /// The value of ProduceRequest's `acks` field.
    pub fn wire(self) -> i16 {
        match self {
            Self::None => 0,
            Self::Leader => 1,
            Self::All => -1,
        }
    }
}

/// Validated producer settings. Build one with [`ProducerConfig::builder`] or
/// [`ProducerConfig::from_pairs`].
#[derive(Clone)]
pub struct ProducerConfig {
    /// `bootstrap.servers`.
    pub bootstrap_servers: Vec<String>,
    /// `client.id` (default: `producer-N`).
    pub client_id: String,
    /// `acks` (default all).
    pub acks: Acks,
    /// `linger.ms` (default 5).
    pub linger: Duration,
    /// `batch.size` (default 16384): the size of a batch buffer, uncompressed.
    pub batch_size: usize,
    /// `buffer.memory` (default 32 MiB): all batch memory together.
    pub buffer_memory: usize,
    /// `max.block.ms` (default 60000): how long `send` waits for metadata or memory.
    pub max_block: Duration,
    /// `max.request.size` (default 1 MiB): the largest ProduceRequest, and record.
    pub max_request_size: usize,
    /// `compression.type` (default none).
    pub compression: Compression,
    /// `compression.gzip.level`, `compression.zstd.level` (`None`: the codec's default).
    pub compression_level: Option<i32>,
    /// `retries` (default 2147483647).
    pub retries: u32,
    /// `retry.backoff.ms` (default 100).
    pub retry_backoff: Duration,
    /// `retry.backoff.max.ms` (default 1000): retries back off exponentially up to this.
    pub retry_backoff_max: Duration,
    /// `delivery.timeout.ms` (default 120000).
    pub delivery_timeout: Duration,
    /// `request.timeout.ms` (default 30000).
    pub request_timeout: Duration,
    /// `max.in.flight.requests.per.connection` (default 5).
    pub max_in_flight: usize,
    /// `enable.idempotence` (default true).
    pub enable_idempotence: bool,
    /// `transactional.id`.
    pub transactional_id: Option<String>,
    /// `transaction.timeout.ms` (default 60000).
    pub transaction_timeout: Duration,
    /// `partitioner.class` resolved (default: the built-in one).
    pub partitioner: Arc<dyn Partitioner>,
    /// `partitioner.ignore.keys` (default false).
    pub partitioner_ignore_keys: bool,
    /// `partitioner.adaptive.partitioning.enable` (default true): records without a key go
    /// more often to partitions with shorter queues (KIP-794).
    pub partitioner_adaptive: bool,
    /// `partitioner.availability.timeout.ms` (default 0 = off): a broker that has had
    /// records waiting without taking any for this long gets no new records without a key.
    pub partitioner_availability_timeout: Duration,
    /// `send.buffer.bytes` (default 131072; -1 = OS default).
    pub send_buffer: Option<u32>,
    /// `receive.buffer.bytes` (default 32768; -1 = OS default).
    pub receive_buffer: Option<u32>,
    /// `metadata.max.age.ms` (default 300000).
    pub metadata_max_age: Duration,
    /// `reconnect.backoff.ms` (default 50).
    pub reconnect_backoff: Duration,
    /// `reconnect.backoff.max.ms` (default 1000).
    pub reconnect_backoff_max: Duration,
    /// `connections.max.idle.ms` (default 540000).
    pub connections_max_idle: Duration,
    /// `socket.connection.setup.timeout.ms` (default 10000).
    pub connection_setup_timeout: Duration,
    /// `allow.auto.create.topics` (default true): metadata requests may create topics.
    pub allow_auto_create_topics: bool,
    /// `interceptor.classes`, as objects.
    pub interceptors: Interceptors,
    /// Receives the results of records sent with `send_with_opaque` (librdkafka's
    /// `dr_msg_cb`); no Java key.
    pub delivery_handler: Option<Arc<dyn DeliveryHandler>>,
    /// `security.protocol` and the `ssl.*` keys, built (files read) by
    /// [`ProducerConfigBuilder::build`].
    pub security: ClientSecurity,
}

impl fmt::Debug for ProducerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProducerConfig")
            .field("bootstrap_servers", &self.bootstrap_servers)
            .field("client_id", &self.client_id)
            .field("acks", &self.acks)
            .field("linger", &self.linger)
            .field("batch_size", &self.batch_size)
            .field("buffer_memory", &self.buffer_memory)
            .field("compression", &self.compression)
            .field("enable_idempotence", &self.enable_idempotence)
            .field("max_in_flight", &self.max_in_flight)
            .field("partitioner", &self.partitioner)
            .finish_non_exhaustive()
    }
}

impl ProducerConfig {
    /// A builder holding Kafka's defaults.
    pub fn builder() -> ProducerConfigBuilder {
        ProducerConfigBuilder::default()
    }

    /// Settings from `key=value` pairs with Kafka's key names.
    pub fn from_pairs<K: AsRef<str>, V: AsRef<str>>(
        pairs: impl IntoIterator<Item = (K, V)>,
    ) -> Result<Self, ProducerError> {
        let mut b = Self::builder();
        for (k, v) in pairs {
            b = b.set(k.as_ref(), v.as_ref())?;
        }
        b.build()
    }

    /// Settings of the cluster client underneath.
    pub fn cluster_config(&self) -> ClusterConfig {
        let mut connection = ConnectionConfig::default();
        connection.conn.client_id = Some(KStr::from(self.client_id.clone()));
        connection.conn.max_in_flight = self.max_in_flight;
        connection.conn.request_timeout = self.request_timeout;
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
            retries: self.retries.min(10),
            max_block: self.max_block,
            allow_auto_topic_creation: self.allow_auto_create_topics,
        }
    }
}

/// Builds a [`ProducerConfig`]; every setter has the Kafka key it stands for in its doc.
#[derive(Clone)]
pub struct ProducerConfigBuilder {
    cfg: ProducerConfig,
    /// `enable.idempotence` as given (`None`: not set, so conflicting settings turn it off
    /// instead of failing, as the Java client does).
    idempotence: Option<bool>,
    /// `delivery.timeout.ms` given explicitly.
    delivery_timeout_set: bool,
    partitioner_name: Option<String>,
    security_keys: SecurityKeys,
}

static CLIENT_SEQ: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1);

impl Default for ProducerConfigBuilder {
    fn default() -> Self {
        Self {
            cfg: ProducerConfig {
                bootstrap_servers: Vec::new(),
                client_id: String::new(),
                acks: Acks::All,
                linger: Duration::from_millis(5),
                batch_size: 16384,
                buffer_memory: 32 * 1024 * 1024,
                max_block: Duration::from_secs(60),
                max_request_size: 1024 * 1024,
                compression: Compression::None,
                compression_level: None,
                retries: i32::MAX as u32,
                retry_backoff: Duration::from_millis(100),
                retry_backoff_max: Duration::from_millis(1000),
                delivery_timeout: Duration::from_secs(120),
                request_timeout: Duration::from_secs(30),
                max_in_flight: 5,
                enable_idempotence: true,
                transactional_id: None,
                transaction_timeout: Duration::from_secs(60),
                partitioner: Arc::new(partitioner::DefaultPartitioner::default()),
                partitioner_ignore_keys: false,
                partitioner_adaptive: true,
                partitioner_availability_timeout: Duration::ZERO,
                send_buffer: Some(131_072),
                receive_buffer: Some(32_768),
                metadata_max_age: Duration::from_secs(300),
                reconnect_backoff: Duration::from_millis(50),
                reconnect_backoff_max: Duration::from_millis(1000),
                connections_max_idle: Duration::from_secs(540),
                connection_setup_timeout: Duration::from_secs(10),
                allow_auto_create_topics: true,
                interceptors: Interceptors::new(),
                delivery_handler: None,
                security: ClientSecurity::default(),
            },
            security_keys: SecurityKeys::default(),
            idempotence: None,
            delivery_timeout_set: false,
            partitioner_name: None,
        }
    }
}

fn invalid(key: &str, value: &str, why: &str) -> ProducerError {
    ProducerError::Config(format!("{key}={value}: {why}"))
}

fn parse_u64(key: &str, value: &str) -> Result<u64, ProducerError> {
    value
        .trim()
        .parse::<u64>()
        .map_err(|_| invalid(key, value, "expected a non-negative integer"))
}

fn parse_ms(key: &str, value: &str) -> Result<Duration, ProducerError> {
    parse_u64(key, value).map(Duration::from_millis)
}

fn parse_usize(key: &str, value: &str) -> Result<usize, ProducerError> {
    usize::try_from(parse_u64(key, value)?).map_err(|_| invalid(key, value, "too large"))
}

fn parse_bool(key: &str, value: &str) -> Result<bool, ProducerError> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(invalid(key, value, "expected true or false")),
    }
}

fn parse_buffer(key: &str, value: &str) -> Result<Option<u32>, ProducerError> {
    match value.trim() {
        "-1" => Ok(None),
        v => v
            .parse::<u32>()
            .map(Some)
            .map_err(|_| invalid(key, value, "expected -1 or a byte count")),
    }
}

/// Keys of the Java producer that we accept and ignore (they concern features this client
/// handles differently or not at all), so a Java properties file loads with a warning at most.
const IGNORED_KEYS: &[&str] = &[
    "key.serializer",
    "value.serializer",
    "metrics.num.samples",
    "metrics.recording.level",
    "metrics.sample.window.ms",
    "metric.reporters",
    "metadata.max.idle.ms",
    "client.dns.lookup",
    "auto.include.jmx.reporter",
    "enable.metrics.push",
];

impl ProducerConfigBuilder {
    /// Sets one setting by its Kafka key name.
    pub fn set(mut self, key: &str, value: &str) -> Result<Self, ProducerError> {
        if self
            .security_keys
            .set(key, value)
            .map_err(|e| ProducerError::Config(e.to_string()))?
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
            "client.id" => c.client_id = value.to_owned(),
            "acks" => {
                c.acks = match value.trim() {
                    "0" => Acks::None,
                    "1" => Acks::Leader,
                    "all" | "-1" => Acks::All,
                    _ => return Err(invalid(key, value, "expected all, -1, 0 or 1")),
                }
            }
            "linger.ms" => c.linger = parse_ms(key, value)?,
            "batch.size" => c.batch_size = parse_usize(key, value)?,
            "buffer.memory" => c.buffer_memory = parse_usize(key, value)?,
            "max.block.ms" => c.max_block = parse_ms(key, value)?,
            "max.request.size" => c.max_request_size = parse_usize(key, value)?,
            "compression.type" => {
                c.compression = Compression::from_name(value.trim()).ok_or_else(|| {
                    invalid(key, value, "expected none, gzip, snappy, lz4 or zstd")
                })?;
            }
            "compression.gzip.level" | "compression.zstd.level" | "compression.lz4.level" => {
                let level: i32 = value
                    .trim()
                    .parse()
                    .map_err(|_| invalid(key, value, "expected an integer"))?;
                let ok = match key {
                    "compression.gzip.level" => level == -1 || (1..=9).contains(&level),
                    "compression.zstd.level" => (-131_072..=22).contains(&level),
                    _ => (1..=17).contains(&level),
                };
                if !ok {
                    return Err(invalid(key, value, "level out of range"));
                }
                let applies = matches!(
                    (key, c.compression),
                    ("compression.gzip.level", Compression::Gzip)
                        | ("compression.zstd.level", Compression::Zstd)
                );
                // Keep the level of the codec in use; a level for another codec is
                // remembered only if no codec is chosen yet.
                if applies || c.compression_level.is_none() {
                    c.compression_level = (level != -1).then_some(level);
                }
            }
            "retries" => {
                let v: i64 = value
                    .trim()
                    .parse()
                    .map_err(|_| invalid(key, value, "expected an integer"))?;
                c.retries = u32::try_from(v.max(0)).unwrap_or(u32::MAX);
            }
            "retry.backoff.ms" => c.retry_backoff = parse_ms(key, value)?,
            "retry.backoff.max.ms" => c.retry_backoff_max = parse_ms(key, value)?,
            "delivery.timeout.ms" => {
                c.delivery_timeout = parse_ms(key, value)?;
                self.delivery_timeout_set = true;
            }
            "request.timeout.ms" => c.request_timeout = parse_ms(key, value)?,
            "max.in.flight.requests.per.connection" => {
                c.max_in_flight = parse_usize(key, value)?;
            }
            "enable.idempotence" => self.idempotence = Some(parse_bool(key, value)?),
            "transactional.id" => {
                c.transactional_id = (!value.is_empty()).then(|| value.to_owned());
            }
            "transaction.timeout.ms" => c.transaction_timeout = parse_ms(key, value)?,
            "partitioner.class" | "partitioner" => self.partitioner_name = Some(value.to_owned()),
            "partitioner.ignore.keys" => c.partitioner_ignore_keys = parse_bool(key, value)?,
            "partitioner.adaptive.partitioning.enable" => {
                c.partitioner_adaptive = parse_bool(key, value)?;
            }
            "partitioner.availability.timeout.ms" => {
                c.partitioner_availability_timeout = parse_ms(key, value)?;
            }
            "send.buffer.bytes" => c.send_buffer = parse_buffer(key, value)?,
            "receive.buffer.bytes" => c.receive_buffer = parse_buffer(key, value)?,
            "metadata.max.age.ms" => c.metadata_max_age = parse_ms(key, value)?,
            "reconnect.backoff.ms" => c.reconnect_backoff = parse_ms(key, value)?,
            "reconnect.backoff.max.ms" => c.reconnect_backoff_max = parse_ms(key, value)?,
            "connections.max.idle.ms" => c.connections_max_idle = parse_ms(key, value)?,
            "socket.connection.setup.timeout.ms" => {
                c.connection_setup_timeout = parse_ms(key, value)?;
            }
            "allow.auto.create.topics" => c.allow_auto_create_topics = parse_bool(key, value)?,
            k if IGNORED_KEYS.contains(&k) => {
                tracing::debug!(key = k, "producer setting accepted and ignored");
            }
            k => tracing::warn!(key = k, "unknown producer setting ignored"),
        }
        Ok(self)
    }

    /// `bootstrap.servers`.
    pub fn bootstrap_servers(mut self, servers: impl Into<String>) -> Self {
        self.cfg.bootstrap_servers = servers
            .into()
            .split(',')
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .collect();
        self
    }

    /// `client.id`.
    pub fn client_id(mut self, id: impl Into<String>) -> Self {
        self.cfg.client_id = id.into();
        self
    }

    /// `acks`.
    pub fn acks(mut self, acks: Acks) -> Self {
        self.cfg.acks = acks;
        self
    }

    /// `linger.ms`.
    pub fn linger(mut self, linger: Duration) -> Self {
        self.cfg.linger = linger;
        self
    }

    /// `partitioner.adaptive.partitioning.enable`.
    pub fn adaptive_partitioning(mut self, on: bool) -> Self {
        self.cfg.partitioner_adaptive = on;
        self
    }

    /// `partitioner.availability.timeout.ms` (zero: off).
    pub fn partition_availability_timeout(mut self, timeout: Duration) -> Self {
        self.cfg.partitioner_availability_timeout = timeout;
        self
    }

    /// `batch.size`.
    pub fn batch_size(mut self, bytes: usize) -> Self {
        self.cfg.batch_size = bytes;
        self
    }

    /// `buffer.memory`.
    pub fn buffer_memory(mut self, bytes: usize) -> Self {
        self.cfg.buffer_memory = bytes;
        self
    }

    /// `max.block.ms`.
    pub fn max_block(mut self, d: Duration) -> Self {
        self.cfg.max_block = d;
        self
    }

    /// `max.request.size`.
    pub fn max_request_size(mut self, bytes: usize) -> Self {
        self.cfg.max_request_size = bytes;
        self
    }

    /// `compression.type`, with `compression.<codec>.level`.
    pub fn compression(mut self, codec: Compression, level: Option<i32>) -> Self {
        self.cfg.compression = codec;
        self.cfg.compression_level = level;
        self
    }

    /// `retries`.
    pub fn retries(mut self, retries: u32) -> Self {
        self.cfg.retries = retries;
        self
    }

    /// `retry.backoff.ms`.
    pub fn retry_backoff(mut self, d: Duration) -> Self {
        self.cfg.retry_backoff = d;
        self
    }

    /// `delivery.timeout.ms`.
    pub fn delivery_timeout(mut self, d: Duration) -> Self {
        self.cfg.delivery_timeout = d;
        self.delivery_timeout_set = true;
        self
    }

    /// `request.timeout.ms`.
    pub fn request_timeout(mut self, d: Duration) -> Self {
        self.cfg.request_timeout = d;
        self
    }

    /// `max.in.flight.requests.per.connection`.
    pub fn max_in_flight(mut self, n: usize) -> Self {
        self.cfg.max_in_flight = n;
        self
    }

    /// `enable.idempotence`.
    pub fn enable_idempotence(mut self, on: bool) -> Self {
        self.idempotence = Some(on);
        self
    }

    /// A partitioner object (instead of `partitioner.class`).
    pub fn partitioner(mut self, p: Arc<dyn Partitioner>) -> Self {
        self.cfg.partitioner = p;
        self.partitioner_name = None;
        self
    }

    /// Adds an interceptor (`interceptor.classes`).
    pub fn interceptor(mut self, i: Arc<dyn ProducerInterceptor>) -> Self {
        self.cfg.interceptors.push(i);
        self
    }

    /// The handler of records sent with
    /// [`Producer::send_with_opaque`](crate::Producer::send_with_opaque).
    pub fn delivery_handler(mut self, h: Arc<dyn DeliveryHandler>) -> Self {
        self.cfg.delivery_handler = Some(h);
        self
    }

    /// `send.buffer.bytes` (`None` = OS default).
    pub fn send_buffer(mut self, bytes: Option<u32>) -> Self {
        self.cfg.send_buffer = bytes;
        self
    }

    /// Checks the settings and their combinations.
    pub fn build(self) -> Result<ProducerConfig, ProducerError> {
        let mut c = self.cfg;
        c.security = self
            .security_keys
            .build()
            .map_err(|e| ProducerError::Config(e.to_string()))?;
        if c.bootstrap_servers.is_empty() {
            return Err(ProducerError::Config(
                "bootstrap.servers must name at least one host:port".into(),
            ));
        }
        if c.client_id.is_empty() {
            let n = CLIENT_SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            c.client_id = format!("producer-{n}");
        }
        if let Some(name) = &self.partitioner_name {
            c.partitioner = partitioner::by_name(name).ok_or_else(|| {
                ProducerError::Config(format!("partitioner.class={name}: unknown partitioner"))
            })?;
        }
        if c.partitioner_ignore_keys {
            c.partitioner = Arc::new(partitioner::DefaultPartitioner::new().with_ignore_keys(true));
        }
        if c.max_in_flight == 0 {
            return Err(ProducerError::Config(
                "max.in.flight.requests.per.connection must be at least 1".into(),
            ));
        }
        if c.max_request_size == 0 || c.buffer_memory == 0 {
            return Err(ProducerError::Config(
                "max.request.size and buffer.memory must be positive".into(),
            ));
        }
        if c.buffer_memory > u32::MAX as usize {
            return Err(ProducerError::Config(format!(
                "buffer.memory={} is larger than the supported maximum {}",
                c.buffer_memory,
                u32::MAX
            )));
        }
        // Idempotence: an explicit `true` that conflicts is an error; the default `true`
        // quietly gives way, as in the Java client.
        let conflicts = [
            (c.max_in_flight > 5).then_some(
                "max.in.flight.requests.per.connection must be at most 5 when enable.idempotence=true",
            ),
            (c.acks != Acks::All)
                .then_some("acks must be all (-1) when enable.idempotence=true"),
            (c.retries == 0).then_some("retries must be greater than 0 when enable.idempotence=true"),
        ];
        let conflict = conflicts.iter().flatten().next();
        c.enable_idempotence = match (self.idempotence, conflict) {
            (Some(true), Some(msg)) => return Err(ProducerError::Config((*msg).into())),
            (Some(on), _) => on,
            (None, Some(_)) => false,
            (None, None) => true,
        };
        if c.transactional_id.is_some() && !c.enable_idempotence {
            return Err(ProducerError::Config(
                "transactional.id requires enable.idempotence=true".into(),
            ));
        }
        let floor = c.linger + c.request_timeout;
        if c.delivery_timeout < floor {
            if self.delivery_timeout_set {
                return Err(ProducerError::Config(format!(
                    "delivery.timeout.ms ({} ms) must be at least linger.ms + request.timeout.ms ({} ms)",
                    c.delivery_timeout.as_millis(),
                    floor.as_millis()
                )));
            }
            c.delivery_timeout = floor;
        }
        if c.compression == Compression::None {
            c.compression_level = None;
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> ProducerConfigBuilder {
        ProducerConfig::builder().bootstrap_servers("127.0.0.1:9092")
    }

    #[test]
    fn defaults_are_kafka_4s() {
        let c = base().build().unwrap();
        assert_eq!(c.acks, Acks::All);
        assert!(c.enable_idempotence);
        assert_eq!(c.linger, Duration::from_millis(5));
        assert_eq!(c.batch_size, 16384);
        assert_eq!(c.buffer_memory, 33_554_432);
        assert_eq!(c.max_request_size, 1_048_576);
        assert_eq!(c.delivery_timeout, Duration::from_secs(120));
        assert_eq!(c.max_in_flight, 5);
        assert!(c.client_id.starts_with("producer-"));
    }

    #[test]
    fn explicit_idempotence_conflicts_name_the_keys() {
        let e = ProducerConfig::from_pairs([
            ("bootstrap.servers", "h:1"),
            ("enable.idempotence", "true"),
            ("max.in.flight.requests.per.connection", "6"),
        ])
        .unwrap_err()
        .to_string();
        assert!(e.contains("max.in.flight.requests.per.connection"), "{e}");
        assert!(e.contains("enable.idempotence"), "{e}");
        let e = ProducerConfig::from_pairs([
            ("bootstrap.servers", "h:1"),
            ("enable.idempotence", "true"),
            ("acks", "1"),
        ])
        .unwrap_err()
        .to_string();
        assert!(e.contains("acks"), "{e}");
    }

    #[test]
    fn default_idempotence_gives_way() {
        let c = ProducerConfig::from_pairs([("bootstrap.servers", "h:1"), ("acks", "1")]).unwrap();
        assert!(!c.enable_idempotence);
        assert_eq!(c.acks, Acks::Leader);
        let c = ProducerConfig::from_pairs([
            ("bootstrap.servers", "h:1"),
            ("max.in.flight.requests.per.connection", "10"),
        ])
        .unwrap();
        assert!(!c.enable_idempotence);
    }

    #[test]
    fn delivery_timeout_floor() {
        let e = ProducerConfig::from_pairs([
            ("bootstrap.servers", "h:1"),
            ("delivery.timeout.ms", "1000"),
            ("request.timeout.ms", "5000"),
        ])
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("delivery.timeout.ms") && e.contains("request.timeout.ms"),
            "{e}"
        );
        let c = ProducerConfig::from_pairs([
            ("bootstrap.servers", "h:1"),
            ("request.timeout.ms", "200000"),
        ])
        .unwrap();
        assert_eq!(c.delivery_timeout, Duration::from_millis(200_005));
    }

    #[test]
    fn bad_values_name_the_key() {
        for (k, v) in [
            ("acks", "2"),
            ("linger.ms", "-1"),
            ("compression.type", "brotli"),
            ("enable.idempotence", "yes"),
            ("compression.zstd.level", "99"),
        ] {
            let e = ProducerConfig::from_pairs([("bootstrap.servers", "h:1"), (k, v)])
                .unwrap_err()
                .to_string();
            assert!(e.contains(k), "{k}: {e}");
        }
        assert!(ProducerConfig::from_pairs([("acks", "1")]).is_err());
    }

    #[test]
    fn compression_and_levels() {
        let c = ProducerConfig::from_pairs([
            ("bootstrap.servers", "h:1"),
            ("compression.type", "zstd"),
            ("compression.zstd.level", "7"),
        ])
        .unwrap();
        assert_eq!(c.compression, Compression::Zstd);
        assert_eq!(c.compression_level, Some(7));
        let c = ProducerConfig::from_pairs([
            ("bootstrap.servers", "h:1"),
            ("compression.zstd.level", "7"),
        ])
        .unwrap();
        assert_eq!(c.compression_level, None);
    }
}
