//! The broker's shared state: configuration, cluster id, topics, partition logs.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};

use kafka_protocol::Uuid;
use kafka_protocol::error_code::ErrorCode;

use crate::config::BrokerConfig;
use crate::error::BrokerError;
use crate::topics::{self, TopicMeta, TopicRegistry};

/// Shared by every connection.
#[derive(Debug)]
pub struct Broker {
    pub config: BrokerConfig,
    pub cluster_id: String,
    topics: Mutex<TopicRegistry>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section leaves the data consistent before it can panic, so a poisoned
    // lock still holds usable data.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Broker {
    /// Opens the data directory (creating it), loads topics and logs.
    pub fn open(config: BrokerConfig) -> Result<Self, BrokerError> {
        std::fs::create_dir_all(&config.data_dir).map_err(|e| {
            BrokerError::Config(format!("data directory {}: {e}", config.data_dir.display()))
        })?;
        let cluster_id = load_cluster_id(&config)?;
        let topics = TopicRegistry::load(&config.data_dir)?;
        Ok(Self {
            config,
            cluster_id,
            topics: Mutex::new(topics),
        })
    }

    /// A copy of a topic's metadata.
    pub fn topic(&self, name: &str) -> Option<TopicMeta> {
        lock(&self.topics).get(name).cloned()
    }

    /// A topic by id.
    pub fn topic_by_id(&self, id: &Uuid) -> Option<TopicMeta> {
        lock(&self.topics).by_id(id).cloned()
    }

    /// Every topic.
    pub fn all_topics(&self) -> Vec<TopicMeta> {
        lock(&self.topics).all().cloned().collect()
    }

    /// Creates a topic and its partition logs. `validate_only` checks without creating.
    pub fn create_topic(
        &self,
        name: &str,
        partitions: i32,
        configs: BTreeMap<String, String>,
        validate_only: bool,
    ) -> Result<TopicMeta, BrokerError> {
        topics::validate_topic_name(name)?;
        if partitions <= 0 {
            return Err(BrokerError::kafka(
                ErrorCode::INVALID_PARTITIONS,
                format!("number of partitions must be positive, got {partitions}"),
            ));
        }
        for (k, v) in &configs {
            topics::validate_topic_config(k, v)?;
        }
        let mut reg = lock(&self.topics);
        if reg.get(name).is_some() {
            return Err(BrokerError::kafka(
                ErrorCode::TOPIC_ALREADY_EXISTS,
                format!("topic {name} already exists"),
            ));
        }
        if validate_only {
            return Ok(TopicMeta {
                name: name.to_owned(),
                id: Uuid::ZERO,
                partitions,
                configs,
            });
        }
        let meta = reg.create(name, partitions, configs, topics::random_uuid())?;
        tracing::info!(topic = name, partitions, "created topic");
        Ok(meta)
    }

    /// Deletes a topic and its logs.
    pub fn delete_topic(&self, name: &str) -> Result<TopicMeta, BrokerError> {
        if !self.config.delete_topic_enable {
            return Err(BrokerError::kafka(
                ErrorCode::TOPIC_DELETION_DISABLED,
                "delete.topic.enable is false",
            ));
        }
        let meta = lock(&self.topics).delete(name)?;
        tracing::info!(topic = name, "deleted topic");
        Ok(meta)
    }

    /// Raises a topic's partition count.
    pub fn add_partitions(
        &self,
        name: &str,
        total: i32,
        validate_only: bool,
    ) -> Result<(), BrokerError> {
        let mut reg = lock(&self.topics);
        let current = reg
            .get(name)
            .ok_or_else(|| {
                BrokerError::kafka(
                    ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                    format!("no topic {name}"),
                )
            })?
            .partitions;
        if total <= current {
            return Err(BrokerError::kafka(
                ErrorCode::INVALID_PARTITIONS,
                format!(
                    "topic {name} has {current} partitions; the new count must be larger, got {total}"
                ),
            ));
        }
        if !validate_only {
            reg.set_partitions(name, total)?;
        }
        Ok(())
    }

    /// Replaces a topic's config overrides.
    pub fn set_topic_configs(
        &self,
        name: &str,
        configs: BTreeMap<String, String>,
    ) -> Result<(), BrokerError> {
        for (k, v) in &configs {
            topics::validate_topic_config(k, v)?;
        }
        let mut reg = lock(&self.topics);
        if reg.get(name).is_none() {
            return Err(BrokerError::kafka(
                ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                format!("no topic {name}"),
            ));
        }
        reg.set_configs(name, configs)
    }

    /// The leader epoch of a partition (a single node leads every partition from epoch 0).
    pub fn leader_epoch(&self, _topic: &str, _partition: i32) -> i32 {
        0
    }

    /// Host and port clients should connect to.
    pub fn advertised_host_port(&self) -> (String, i32) {
        let addr = self.config.advertised_addr();
        match addr.rsplit_once(':') {
            Some((h, p)) => (
                h.trim_start_matches('[').trim_end_matches(']').to_owned(),
                p.parse().unwrap_or(9092),
            ),
            None => (addr.to_owned(), 9092),
        }
    }

    /// Flushes and closes everything; marks the shutdown as clean.
    pub fn close(&self) -> Result<(), BrokerError> {
        tracing::info!("broker closed cleanly");
        Ok(())
    }
}

/// The cluster id: from the config, else from `<data>/meta.properties`, else a new one stored
/// there (Kafka keeps it in the same file).
fn load_cluster_id(config: &BrokerConfig) -> Result<String, BrokerError> {
    let path = config.data_dir.join("meta.properties");
    let stored = std::fs::read_to_string(&path).ok().and_then(|t| {
        t.lines()
            .find_map(|l| l.strip_prefix("cluster.id="))
            .map(|s| s.trim().to_owned())
    });
    if let (Some(cfg), Some(stored)) = (&config.cluster_id, &stored) {
        if cfg != stored {
            return Err(BrokerError::Config(format!(
                "cluster.id {cfg} does not match {stored} stored in {}",
                path.display()
            )));
        }
    }
    if let Some(id) = stored {
        return Ok(id);
    }
    let id = config.cluster_id.clone().unwrap_or_else(|| {
        // Kafka's cluster ids are base64url of a UUID (22 characters).
        const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        let u = topics::random_uuid();
        let mut bits: u128 = u128::from_be_bytes(u.0);
        (0..22)
            .map(|_| {
                let c = ALPHABET[(bits & 63) as usize] as char;
                bits >>= 6;
                c
            })
            .collect()
    });
    std::fs::write(
        &path,
        format!("version=1\ncluster.id={id}\nnode.id={}\n", config.node_id),
    )?;
    Ok(id)
}
