//! The broker's shared state: configuration, cluster id, topics, partition logs.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use kafka_protocol::Uuid;
use kafka_protocol::error_code::ErrorCode;

use crate::config::BrokerConfig;
use crate::error::BrokerError;
use crate::log::{FileCache, LogConfig, LogManager, TopicPartition, lock_log};
use crate::offsets_topic::{OFFSETS_TOPIC, OffsetsPartitions, OffsetsTopicSink};
use crate::producer_state::ProducerStates;
use crate::replica::{Partition, ReplicaManager};
use crate::sync::lock;
use crate::topic_config::{TopicConfig, TopicConfigs};
use crate::topics::{self, TopicMeta, TopicRegistry};
use crate::txn::TRANSACTION_STATE_TOPIC;

pub use crate::topic_config::ProduceRules;

/// Shared by every connection.
#[derive(Debug)]
pub struct Broker {
    pub config: BrokerConfig,
    pub cluster_id: String,
    topics: Mutex<TopicRegistry>,
    /// Every topic's typed config; changed only under the `topics` lock.
    topic_configs: TopicConfigs,
    /// The partition layer: every hosted partition, every append.
    pub replicas: ReplicaManager,
    logs: LogManager,
    /// Single node: the next producer id (blocks reserved in `producer.ids`).
    next_producer_id: AtomicI64,
    /// In a cluster: producer ids in blocks from the controller.
    pub producer_ids: crate::cluster::producer_ids::ProducerIdManager,
    last_full_flush: AtomicI64,
    last_hw_checkpoint: AtomicI64,
    /// When idle producers were last expired (`producer.id.expiration.check.interval.ms`).
    last_producer_expiry: AtomicI64,
    /// The group coordinator, persisted in `__consumer_offsets`.
    pub groups: crate::group::GroupCoordinator,
    /// Memory for decompressed records, shared by every produce validation
    /// (`produce.decompression.max.bytes`).
    pub decompression: crate::replica::MemoryBudget,
    /// This data directory's id (`directory.id` in `meta.properties`).
    pub directory_id: Uuid,
    /// The `__consumer_offsets` partitions the group coordinator writes to.
    offsets_log: Arc<OffsetsPartitions>,
    /// The transaction coordinator, persisted in `__transaction_state` (its I/O is
    /// `crate::txn_driver`).
    pub txn: crate::txn::TxnCoordinator,
    /// The `__transaction_state` partitions the transaction coordinator writes to: on a
    /// single node all of them once the topic exists, in a cluster those this broker leads.
    txn_log: OffsetsPartitions,
    /// In a cluster: the fetchers of the partitions this broker follows.
    pub fetchers: crate::replication::ReplicaFetchers,
    /// In a cluster: the ISR changes this broker's led partitions ask the controller for.
    pub isr: crate::replication::IsrManager,
    /// In a cluster (`process.roles` set): the metadata this node follows and its way to the
    /// controller, set once when the cluster side starts.
    cluster: std::sync::OnceLock<Arc<crate::cluster::ClusterLink>>,
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

impl Broker {
    /// Opens the data directory (creating it), loads topics and logs.
    pub fn open(config: BrokerConfig) -> Result<Self, BrokerError> {
        std::fs::create_dir_all(&config.server.data_dir).map_err(|e| {
            BrokerError::Config(format!(
                "data directory {}: {e}",
                config.server.data_dir.display()
            ))
        })?;
        // The data directory's identity (`meta.properties`): another node's or another
        // cluster's directory refuses to open. A cluster node that has not learned its cluster
        // id yet has none here (empty) until the cluster code records the quorum's.
        let meta = crate::meta_properties::open(
            &config.server.data_dir,
            config.server.node_id,
            config.server.cluster_id.as_deref(),
            config.quorum.roles.is_some(),
        )?;
        let cluster_id = meta.cluster_id.clone().unwrap_or_default();
        let directory_id = meta
            .directory_id
            .as_deref()
            .and_then(topics::uuid_from_base64)
            .unwrap_or_else(topics::random_uuid);
        // In a cluster the metadata image says which partitions this node hosts: nothing is
        // hosted from the local topic list, which may be stale (see `crate::cluster::publish`).
        let clustered = config.quorum.roles.is_some();
        let topics = TopicRegistry::load(&config.server.data_dir)?;
        // In a cluster producer ids come from the controller, not from `producer.ids`.
        let next_producer_id = if clustered {
            0
        } else {
            load_producer_id_block(&config)?
        };
        let topic_configs = TopicConfigs::new(TopicConfig::defaults(&config));
        for t in topics.all() {
            let typed = TopicConfig::lenient(&config, &t.name, &t.configs);
            topic_configs.insert(&t.name, Arc::new(typed));
        }
        let files = match config.log.open_files_max {
            Some(n) => FileCache::new(n),
            None => FileCache::with_default_capacity(config.server.max_connections),
        };
        tracing::info!(
            log_open_files_max = files.capacity(),
            descriptor_limit = crate::log::files::nofile_limit(),
            "segment files open at most"
        );
        let logs = LogManager::open_with(
            vec![config.server.data_dir.clone()],
            |tp: &TopicPartition| topic_configs.get_or_default(&tp.topic).log_config(),
            Arc::new(crate::log::StdIo),
            files,
        )?;
        if logs.recovered_at_start() {
            tracing::warn!("the last shutdown was not clean: logs were recovered");
        }
        // The offsets topic keeps its partition count once created (groups map to partitions
        // by it); `offsets.topic.num.partitions` only applies when it is created.
        let offsets_partitions = topics
            .get(OFFSETS_TOPIC)
            .map_or(config.group.offsets_topic_num_partitions, |t| t.partitions);
        if offsets_partitions != config.group.offsets_topic_num_partitions {
            tracing::warn!(
                existing = offsets_partitions,
                configured = config.group.offsets_topic_num_partitions,
                "{OFFSETS_TOPIC} exists with another partition count than offsets.topic.num.partitions; keeping it"
            );
        }
        let offsets_log = Arc::new(OffsetsPartitions::default());
        let groups = crate::group::GroupCoordinator::with_parts(
            crate::group::GroupConfig {
                offsets_topic_num_partitions: offsets_partitions,
                ..config.group.clone()
            },
            Box::new(crate::group::MemoryOffsetStore::default()),
            Box::new(OffsetsTopicSink::new(
                Arc::clone(&offsets_log),
                offsets_partitions,
            )),
        );
        let broker = Self {
            groups,
            txn: crate::txn::TxnCoordinator::new(config.txn.clone()),
            txn_log: OffsetsPartitions::default(),
            replicas: ReplicaManager::open(config.server.data_dir.clone()),
            decompression: crate::replica::MemoryBudget::new(
                config.server.produce_decompression_max_bytes,
            ),
            config,
            cluster_id,
            directory_id,
            offsets_log: Arc::clone(&offsets_log),
            fetchers: crate::replication::ReplicaFetchers::default(),
            isr: crate::replication::IsrManager::default(),
            cluster: std::sync::OnceLock::new(),
            topics: Mutex::new(topics),
            topic_configs,
            logs,
            next_producer_id: AtomicI64::new(next_producer_id),
            producer_ids: Default::default(),
            last_full_flush: AtomicI64::new(now_ms()),
            last_hw_checkpoint: AtomicI64::new(now_ms()),
            last_producer_expiry: AtomicI64::new(now_ms()),
        };
        if clustered {
            broker.replicas.roles_from_metadata();
            return Ok(broker);
        }
        for t in broker.all_topics() {
            // A partition that cannot be opened (descriptors, disk) stays offline with its
            // reason logged (KAFKA_STORAGE_ERROR, retried every `log.offline.retry.ms`); it
            // does not keep every other partition from being served.
            for p in 0..t.partitions {
                if let Err(e) = broker.host_partitions(&t.name, p, p + 1, &t.configs) {
                    let tp = TopicPartition::new(&t.name, p);
                    tracing::error!(partition = %tp, error = %e,
                        "partition offline: it could not be opened at start");
                    broker.logs.mark_offline(&tp, e.to_string(), retryable(&e));
                }
            }
        }
        // Logs of topics that no longer exist (a crash during a delete) go away.
        for tp in broker.logs.partitions() {
            if broker
                .topic(&tp.topic)
                .is_none_or(|t| tp.partition >= t.partitions)
            {
                tracing::warn!(partition = %tp, "removing the log of a partition that does not exist");
                let _ = broker.logs.delete(&tp.topic, tp.partition);
            }
        }
        broker.load_groups(offsets_partitions, &offsets_log)?;
        if broker.topic(TRANSACTION_STATE_TOPIC).is_some() {
            broker.load_transactions();
        }
        Ok(broker)
    }

    /// On a single node: creates `__transaction_state` the first time a transactional
    /// client comes (as Kafka creates it on the first FindCoordinator or InitProducerId of a
    /// transactional id): `transaction.state.log.num.partitions` partitions, compacted,
    /// `transaction.state.log.segment.bytes`, `min.insync.replicas` from
    /// `transaction.state.log.min.isr` (capped at the one replica there is). Its partitions
    /// are then coordinated here. An error is the code to answer the client with.
    pub fn ensure_transaction_topic(&self) -> Result<(), ErrorCode> {
        if self.cluster().is_some() {
            return Ok(());
        }
        if self.topic(TRANSACTION_STATE_TOPIC).is_none() {
            let txn = &self.config.txn;
            let configs = BTreeMap::from([
                ("cleanup.policy".to_owned(), "compact".to_owned()),
                ("segment.bytes".to_owned(), txn.segment_bytes.to_string()),
                ("min.insync.replicas".to_owned(), "1".to_owned()),
            ]);
            match self.create_topic(TRANSACTION_STATE_TOPIC, txn.num_partitions, configs, false) {
                Ok(_) => {}
                Err(e) if e.error_code() == ErrorCode::TOPIC_ALREADY_EXISTS => {}
                Err(e) => {
                    tracing::error!(error = %e, "cannot create {TRANSACTION_STATE_TOPIC}");
                    return Err(ErrorCode::COORDINATOR_NOT_AVAILABLE);
                }
            }
        }
        self.load_transactions();
        Ok(())
    }

    /// On a single node: every `__transaction_state` partition not yet coordinated here is
    /// loaded into the transaction coordinator (idempotent).
    fn load_transactions(&self) {
        let Some(meta) = self.topic(TRANSACTION_STATE_TOPIC) else {
            return;
        };
        for index in 0..meta.partitions {
            if self.txn_log.has(index) {
                continue;
            }
            match self.partition(TRANSACTION_STATE_TOPIC, index) {
                Some(part) => self.load_txn_partition(index, part),
                None => tracing::error!(
                    partition = index,
                    "{TRANSACTION_STATE_TOPIC} partition offline: its transactional ids are not loaded"
                ),
            }
        }
    }

    /// Loads one `__transaction_state` partition into the coordinator, at its leader epoch
    /// (the coordinator epoch its markers carry), and writes there from now on.
    fn load_txn_partition(&self, index: i32, part: Arc<Partition>) {
        let started = std::time::Instant::now();
        self.txn.begin_load(index);
        let records = crate::txn_driver::read_partition(&part);
        let loaded = records.len();
        let epoch = part.leader_epoch();
        self.txn_log.set_one(index, Some(part));
        self.txn.load_partition(index, epoch, records);
        tracing::debug!(
            partition = index,
            records = loaded,
            coordinator_epoch = epoch,
            ms = started.elapsed().as_millis() as u64,
            "loaded the transactional ids of {TRANSACTION_STATE_TOPIC}-{index}"
        );
    }

    /// The `__transaction_state` partition `index` if the coordinator writes there.
    pub(crate) fn txn_partition(&self, index: i32) -> Option<Arc<Partition>> {
        self.txn_log.partition(index)
    }

    /// In a cluster: this broker leads `__transaction_state` partition `index`; its
    /// transactional ids are loaded and coordinated here. Once per leadership.
    pub(crate) fn lead_txn_partition(&self, index: i32) {
        if self.txn_log.has(index) {
            return;
        }
        if let Some(part) = self.partition(TRANSACTION_STATE_TOPIC, index) {
            self.load_txn_partition(index, part);
            tracing::info!(
                partition = index,
                "this broker coordinates the transactions of {TRANSACTION_STATE_TOPIC}-{index}"
            );
        }
    }

    /// In a cluster: this broker no longer leads `__transaction_state` partition `index`.
    pub(crate) fn follow_txn_partition(&self, index: i32) {
        if self.txn_log.has(index) {
            self.txn_log.set_one(index, None);
            let ids = self.txn.resign(index);
            tracing::info!(
                partition = index,
                ids,
                "no longer coordinating the transactions of {TRANSACTION_STATE_TOPIC}-{index}"
            );
        }
    }

    /// Creates `__consumer_offsets` if needed, hands its partitions to the coordinator's sink
    /// and replays it into the coordinator (before anything is served).
    fn load_groups(
        &self,
        num_partitions: i32,
        offsets_log: &OffsetsPartitions,
    ) -> Result<(), BrokerError> {
        if self.topic(OFFSETS_TOPIC).is_none() {
            let configs = BTreeMap::from([
                ("cleanup.policy".to_owned(), "compact".to_owned()),
                (
                    "segment.bytes".to_owned(),
                    self.config.group.offsets_topic_segment_bytes.to_string(),
                ),
            ]);
            self.create_topic(OFFSETS_TOPIC, num_partitions, configs, false)?;
        }
        let partitions: Vec<Option<Arc<Partition>>> = (0..num_partitions)
            .map(|p| self.partition(OFFSETS_TOPIC, p))
            .collect();
        offsets_log.set(partitions.clone());
        let started = std::time::Instant::now();
        let mut records = Vec::new();
        for (p, part) in partitions.iter().enumerate() {
            match part {
                Some(part) => records.extend(crate::offsets_topic::read_partition(part)),
                None => tracing::error!(
                    topic = OFFSETS_TOPIC,
                    partition = p,
                    "offsets partition offline: its groups and offsets are not loaded"
                ),
            }
        }
        let loaded = records.len();
        self.groups.replay(records);
        tracing::info!(
            records = loaded,
            ms = started.elapsed().as_millis() as u64,
            "loaded consumer groups from {OFFSETS_TOPIC}"
        );
        Ok(())
    }

    /// Opens (creating if needed) the logs of partitions `from..to` of a topic.
    fn host_partitions(
        &self,
        topic: &str,
        from: i32,
        to: i32,
        configs: &BTreeMap<String, String>,
    ) -> Result<(), BrokerError> {
        for p in from..to {
            let log =
                match self
                    .logs
                    .get_or_create(topic, p, log_config(&self.config, Some(configs)))
                {
                    Ok(log) => log,
                    // A damaged log stays offline (KAFKA_STORAGE_ERROR) while the rest serve.
                    Err(e @ crate::log::LogError::Offline { .. })
                    | Err(e @ crate::log::LogError::Corrupt { .. }) => {
                        tracing::error!(topic, partition = p, error = %e, "partition offline");
                        continue;
                    }
                    Err(e) => return Err(e.into()),
                };
            let producers = load_producer_state(&log, self.config.log.producer_id_expiration_ms);
            self.replicas.host(topic, p, log, producers)?;
        }
        Ok(())
    }

    /// Brings offline partitions back (called every `log.offline.retry.ms`): first takes
    /// offline every hosted partition whose log failed an fsync (it accepts nothing more
    /// until reopened), then reopens each offline partition through the recovery a restart
    /// runs and hosts it again with the high watermark, leader epoch and producer state a
    /// restart would give it. `__consumer_offsets` and `__transaction_state` partitions are not
    /// reopened: their coordinators load them only at start, so one that was offline stays
    /// offline (KAFKA_STORAGE_ERROR, its groups or transactional ids NOT_COORDINATOR) until a
    /// restart. Returns the partitions that came back (in a cluster they take their role
    /// from the metadata next: [`crate::cluster::publish::retake`]).
    pub fn retry_offline(&self) -> Vec<TopicPartition> {
        for part in self.partitions() {
            if topics::is_internal(&part.topic) || !part.log_failed() {
                continue;
            }
            let tp = TopicPartition::new(&part.topic, part.index);
            tracing::error!(partition = %tp, "partition offline: its log failed an fsync; \
                it is reopened (and recovered) every log.offline.retry.ms until that works");
            self.replicas.take_offline(&part.topic, part.index);
            self.logs.mark_offline(
                &tp,
                "an fsync failed; reopening through recovery".into(),
                true,
            );
        }
        let mut back = Vec::new();
        for tp in self.logs.retryable_offline() {
            if topics::is_internal(&tp.topic) {
                continue;
            }
            let Some(meta) = self
                .topic(&tp.topic)
                .filter(|t| tp.partition < t.partitions)
            else {
                continue;
            };
            let config = log_config(&self.config, Some(&meta.configs));
            let hosted = self
                .logs
                .reopen(&tp, config)
                .map_err(BrokerError::from)
                .and_then(|log| {
                    let producers =
                        load_producer_state(&log, self.config.log.producer_id_expiration_ms);
                    self.replicas.host(&tp.topic, tp.partition, log, producers)
                });
            match hosted {
                Ok(part) => {
                    self.push_log_configs(&tp.topic);
                    tracing::info!(partition = %tp, log_end_offset = part.log_end_offset(),
                        high_watermark = part.high_watermark(), leader_epoch = part.leader_epoch(),
                        "offline partition reopened and served again");
                    back.push(tp);
                }
                Err(e) => {
                    tracing::debug!(partition = %tp, error = %e, "offline partition still cannot be opened");
                    self.logs.mark_offline(&tp, e.to_string(), retryable(&e));
                }
            }
        }
        back
    }

    /// Applies retention and due flushes (called on the broker's timer).
    pub fn maintain(&self) {
        let now = now_ms();
        let deleted = self.logs.apply_retention(now);
        if deleted > 0 {
            tracing::info!(segments = deleted, "retention deleted segments");
        }
        self.logs.flush_due(now);
        let interval = self.config.log.producer_id_expiration_check_interval_ms as i64;
        if now - self.last_producer_expiry.load(Ordering::Relaxed) >= interval {
            self.last_producer_expiry.store(now, Ordering::Relaxed);
            let expiration = self.config.log.producer_id_expiration_ms;
            let expired: usize = self
                .partitions()
                .iter()
                .map(|p| p.expire_producers(now, expiration))
                .sum();
            if expired > 0 {
                tracing::info!(expired, "expired idle producers");
            }
        }
        // Move the recovery points now and then, so recovery after a crash scans little.
        let last = self.last_full_flush.load(Ordering::Relaxed);
        if now - last >= 60_000 {
            self.last_full_flush.store(now, Ordering::Relaxed);
            if let Err(e) = self.logs.flush_all() {
                tracing::warn!(error = %e, "periodic flush failed");
            }
        }
        let last = self.last_hw_checkpoint.load(Ordering::Relaxed);
        if now - last >= HW_CHECKPOINT_INTERVAL_MS {
            self.last_hw_checkpoint.store(now, Ordering::Relaxed);
            if let Err(e) = self.replicas.checkpoint_high_watermarks() {
                tracing::warn!(error = %e, "high-watermark checkpoint not written");
            }
        }
    }

    /// One round of the log cleaner: a compaction pass on every compacted partition that is
    /// due. Returns how many partitions were cleaned; failures are logged and leave the log
    /// as it was.
    pub fn clean_logs(&self) -> usize {
        let limits = crate::log::CleanerLimits {
            dedupe_buffer_size: self.config.log.cleaner_dedupe_buffer_size,
        };
        let mut cleaned = 0;
        for part in self.partitions() {
            let started = std::time::Instant::now();
            match part.clean(&limits, now_ms()) {
                Ok(Some(stats)) => {
                    cleaned += 1;
                    tracing::info!(
                        topic = %part.topic,
                        partition = part.index,
                        ms = started.elapsed().as_millis() as u64,
                        ?stats,
                        "log cleaned"
                    );
                }
                Ok(None) => {}
                Err(e) => tracing::warn!(
                    topic = %part.topic,
                    partition = part.index,
                    error = %e,
                    "log cleaning failed; the log is unchanged"
                ),
            }
        }
        cleaned
    }

    /// The cluster side, when this node is part of a cluster.
    pub fn cluster(&self) -> Option<&Arc<crate::cluster::ClusterLink>> {
        self.cluster.get()
    }

    /// Sets the cluster side (once; later calls are ignored).
    pub fn set_cluster(&self, link: Arc<crate::cluster::ClusterLink>) {
        let _ = self.cluster.set(link);
    }

    /// In a cluster: makes the local topic list and typed config of a topic what the metadata
    /// image says (no partition is hosted by this).
    pub(crate) fn sync_topic(
        &self,
        name: &str,
        id: Uuid,
        partitions: i32,
        configs: BTreeMap<String, String>,
    ) -> Result<(), BrokerError> {
        let mut reg = lock(&self.topics);
        let typed = Arc::new(TopicConfig::lenient(&self.config, name, &configs));
        match reg
            .get(name)
            .map(|t| (t.id, t.partitions, t.configs == configs))
        {
            Some((known, count, same_configs)) if known == id => {
                if count != partitions {
                    reg.set_partitions(name, partitions)?;
                }
                if !same_configs {
                    reg.set_configs(name, configs)?;
                }
            }
            Some(_) => {
                // A topic of this name was deleted and created anew while this node was away.
                reg.delete(name)?;
                reg.create(name, partitions, configs, id)?;
            }
            None => {
                reg.create(name, partitions, configs, id)?;
            }
        }
        self.topic_configs.insert(name, Arc::clone(&typed));
        self.apply_log_config(name, &typed);
        Ok(())
    }

    /// In a cluster: hosts a partition this node is a replica of (opening or creating its
    /// log), or returns it if hosted.
    pub(crate) fn host_replica(
        &self,
        topic: &str,
        index: i32,
    ) -> Result<Arc<Partition>, BrokerError> {
        if let Some(p) = self.partition(topic, index) {
            return Ok(p);
        }
        let configs = self.topic(topic).map(|t| t.configs).unwrap_or_default();
        self.host_partitions(topic, index, index + 1, &configs)?;
        self.partition(topic, index)
            .ok_or_else(|| self.partition_error(topic, index))
    }

    /// In a cluster: this broker leads `__consumer_offsets` partition `index` (hosted): its
    /// groups and offsets are loaded into the group coordinator, and the coordinator writes
    /// there. Once per leadership.
    pub(crate) fn lead_offsets_partition(&self, index: i32) {
        if self.offsets_log.has(index) {
            return;
        }
        let Some(part) = self.partition(OFFSETS_TOPIC, index) else {
            return;
        };
        let started = std::time::Instant::now();
        let records = crate::offsets_topic::read_partition(&part);
        let loaded = records.len();
        self.groups.replay(records);
        self.offsets_log.set_one(index, Some(part));
        tracing::info!(
            partition = index,
            records = loaded,
            ms = started.elapsed().as_millis() as u64,
            "loaded the groups of {OFFSETS_TOPIC}-{index}: this broker coordinates them"
        );
    }

    /// In a cluster: this broker no longer leads `__consumer_offsets` partition `index`; the
    /// coordinator stops writing there (its commits answer NOT_COORDINATOR, and clients find
    /// the new coordinator).
    pub(crate) fn follow_offsets_partition(&self, index: i32) {
        if self.offsets_log.has(index) {
            self.offsets_log.set_one(index, None);
            let groups = self.groups.unload(index);
            tracing::info!(
                partition = index,
                groups,
                "no longer coordinating the groups of {OFFSETS_TOPIC}-{index}"
            );
        }
    }

    /// In a cluster: forgets a topic the controller deleted (its logs too).
    pub(crate) fn forget_topic(&self, name: &str) {
        let meta = {
            let mut reg = lock(&self.topics);
            self.topic_configs.remove(name);
            reg.delete(name).ok()
        };
        self.replicas.remove_topic(name);
        for tp in self
            .logs
            .partitions()
            .into_iter()
            .filter(|tp| tp.topic == name)
        {
            if let Err(e) = self.logs.delete(name, tp.partition) {
                tracing::warn!(topic = name, partition = tp.partition, error = %e, "deleting the log failed");
            }
        }
        if meta.is_some() {
            tracing::info!(topic = name, "deleted topic (the controller deleted it)");
        }
    }

    /// Every hosted partition.
    pub fn partitions(&self) -> Vec<Arc<Partition>> {
        self.replicas.all()
    }

    /// A partition hosted here.
    pub fn partition(&self, topic: &str, index: i32) -> Option<Arc<Partition>> {
        self.replicas.get(topic, index)
    }

    /// A partition hosted here that clients may read: in a cluster only where this node
    /// leads it (a follower's answer is [`Self::partition_error`]'s NOT_LEADER_OR_FOLLOWER).
    pub fn led_partition(&self, topic: &str, index: i32) -> Option<Arc<Partition>> {
        self.partition(topic, index)
            .filter(|p| self.cluster().is_none() || p.is_leader())
    }

    /// The error for a partition that is not served: KAFKA_STORAGE_ERROR when its log is
    /// offline (damaged), UNKNOWN_TOPIC_OR_PARTITION otherwise.
    pub fn partition_error(&self, topic: &str, index: i32) -> BrokerError {
        // In a cluster a known partition that this node hosts as a follower, or does not host,
        // is led elsewhere: the client refreshes its metadata and goes there.
        if self.cluster().is_some()
            && self
                .topic(topic)
                .is_some_and(|t| index >= 0 && index < t.partitions)
            && self.partition(topic, index).is_none_or(|p| !p.is_leader())
            && self.logs.get(topic, index).is_ok()
        {
            return BrokerError::kafka(
                ErrorCode::NOT_LEADER_OR_FOLLOWER,
                format!("{topic}-{index} is not led by this broker"),
            );
        }
        match self.logs.get(topic, index) {
            Err(e) => BrokerError::kafka(ErrorCode::KAFKA_STORAGE_ERROR, e.to_string()),
            // An offline partition coming back: its log is open again and the partition layer
            // is about to host it (`retry_offline`); still the storage outage to a client.
            Ok(Some(_)) if self.topic(topic).is_some_and(|t| index < t.partitions) => {
                BrokerError::kafka(
                    ErrorCode::KAFKA_STORAGE_ERROR,
                    format!("{topic}-{index} is being reopened after its log was offline"),
                )
            }
            Ok(_) => BrokerError::kafka(
                ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                format!("{topic}-{index} is not hosted here"),
            ),
        }
    }

    /// What a Produce request to `topic` is checked against: a lookup of the topic's
    /// precomputed rules (see `topic_config`), nothing parsed per request.
    pub fn produce_rules(&self, topic: &str) -> ProduceRules {
        self.topic_configs.produce_rules(topic)
    }

    /// A topic's typed config, `None` for an unknown topic.
    pub fn topic_config(&self, topic: &str) -> Option<Arc<TopicConfig>> {
        self.topic_configs.get(topic)
    }

    /// A new producer id. On a single node ids are handed out from blocks reserved in
    /// `producer.ids` so that a restarted broker never reuses one; in a cluster from blocks
    /// the controller hands out (see [`crate::cluster::producer_ids`]):
    /// COORDINATOR_LOAD_IN_PROGRESS while none is here.
    pub fn next_producer_id(&self) -> Result<i64, BrokerError> {
        if self.config.quorum.roles.is_some() {
            return self.producer_ids.next();
        }
        let id = self.next_producer_id.fetch_add(1, Ordering::SeqCst);
        if id % PRODUCER_ID_BLOCK == 0 {
            std::fs::write(
                self.config.server.data_dir.join("producer.ids"),
                format!("{}\n", id + PRODUCER_ID_BLOCK),
            )?;
        }
        Ok(id)
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
        let typed = TopicConfig::new(&self.config, &configs)?;
        let mut reg = lock(&self.topics);
        if reg.get(name).is_some() {
            return Err(BrokerError::kafka(
                ErrorCode::TOPIC_ALREADY_EXISTS,
                format!("topic {name} already exists"),
            ));
        }
        self.check_partition_budget(&reg, partitions)?;
        if validate_only {
            return Ok(TopicMeta {
                name: name.to_owned(),
                id: Uuid::ZERO,
                partitions,
                configs,
            });
        }
        let meta = reg.create(name, partitions, configs, topics::random_uuid())?;
        self.topic_configs.insert(name, Arc::new(typed));
        drop(reg);
        if let Err(e) = self.host_partitions(name, 0, partitions, &meta.configs) {
            // All or nothing: no registry entry, no directories left behind.
            self.undo_hosting(name, 0, partitions);
            let _ = lock(&self.topics).delete(name);
            self.topic_configs.remove(name);
            tracing::warn!(topic = name, partitions, error = %e, "topic creation failed and was undone");
            return Err(e);
        }
        // An alter may have come in between the registration and the hosting.
        self.push_log_configs(name);
        tracing::info!(topic = name, partitions, "created topic");
        Ok(meta)
    }

    /// Deletes a topic and its logs.
    pub fn delete_topic(&self, name: &str) -> Result<TopicMeta, BrokerError> {
        if topics::is_internal(name) {
            return Err(BrokerError::kafka(
                ErrorCode::INVALID_REQUEST,
                format!("{name} is an internal topic and cannot be deleted"),
            ));
        }
        if !self.config.topics.delete_enable {
            return Err(BrokerError::kafka(
                ErrorCode::TOPIC_DELETION_DISABLED,
                "delete.topic.enable is false",
            ));
        }
        let meta = {
            let mut reg = lock(&self.topics);
            let meta = reg.delete(name)?;
            self.topic_configs.remove(name);
            meta
        };
        self.replicas.remove_topic(name);
        for p in 0..meta.partitions {
            if let Err(e) = self.logs.delete(name, p) {
                tracing::warn!(topic = name, partition = p, error = %e, "deleting the log failed");
            }
        }
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
        self.check_partition_budget(&reg, total - current)?;
        if !validate_only {
            reg.set_partitions(name, total)?;
            let configs = reg.get(name).map(|t| t.configs.clone()).unwrap_or_default();
            drop(reg);
            if let Err(e) = self.host_partitions(name, current, total, &configs) {
                self.undo_hosting(name, current, total);
                let _ = lock(&self.topics).set_partitions(name, current);
                tracing::warn!(topic = name, total, error = %e, "adding partitions failed and was undone");
                return Err(e);
            }
            self.push_log_configs(name);
        }
        Ok(())
    }

    /// Refuses `adding` more partitions when the broker would host more than
    /// `max.partitions` (every partition holds descriptors and memory; a request for a
    /// million must fail before anything is created).
    fn check_partition_budget(&self, reg: &TopicRegistry, adding: i32) -> Result<(), BrokerError> {
        let hosted: i64 = reg.all().map(|t| i64::from(t.partitions)).sum();
        let after = hosted + i64::from(adding.max(0));
        let max = i64::try_from(self.config.topics.max_partitions).unwrap_or(i64::MAX);
        if after > max {
            return Err(BrokerError::kafka(
                ErrorCode::INVALID_PARTITIONS,
                format!(
                    "{adding} more partitions would make {after} on this broker, more than max.partitions ({max})"
                ),
            ));
        }
        Ok(())
    }

    /// Stops hosting partitions `from..to` of a topic and deletes their logs (a creation that
    /// failed half way).
    fn undo_hosting(&self, name: &str, from: i32, to: i32) {
        self.replicas.remove_partitions(name, from, to);
        for p in from..to {
            if let Err(e) = self.logs.delete(name, p) {
                tracing::warn!(topic = name, partition = p, error = %e, "deleting the log failed");
            }
        }
    }

    /// Replaces a topic's config overrides (see [`Self::alter_topic_configs`]).
    pub fn set_topic_configs(
        &self,
        name: &str,
        configs: BTreeMap<String, String>,
    ) -> Result<(), BrokerError> {
        self.alter_topic_configs(name, false, |_| Ok(configs))
    }

    /// Changes a topic's config overrides: `change` turns the current config into the new
    /// overrides, under the registry lock so that concurrent alters cannot lose each other's
    /// changes. The result is parsed and checked whole (INVALID_CONFIG naming the key, nothing
    /// changed); then, unless `validate_only`, stored in `topics.meta`, swapped in for the
    /// Produce path and pushed to every open log of the topic, so retention, segment rolling
    /// and the cleaner use the new values from their next round on. `change` must not call
    /// back into the broker's topic methods (the registry lock is held).
    pub fn alter_topic_configs(
        &self,
        name: &str,
        validate_only: bool,
        change: impl FnOnce(&TopicConfig) -> Result<BTreeMap<String, String>, BrokerError>,
    ) -> Result<(), BrokerError> {
        let mut reg = lock(&self.topics);
        let current = reg
            .get(name)
            .and_then(|_| self.topic_configs.get(name))
            .ok_or_else(|| {
                BrokerError::kafka(
                    ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                    format!("no topic {name}"),
                )
            })?;
        let overrides = change(&current)?;
        let typed = Arc::new(TopicConfig::new(&self.config, &overrides)?);
        if topics::is_internal(name) && !typed.produce_rules().compacted {
            // Retention by time or size would delete committed offsets and group state.
            return Err(BrokerError::kafka(
                ErrorCode::INVALID_CONFIG,
                format!("{name} is an internal topic: its cleanup.policy must include compact"),
            ));
        }
        if validate_only {
            return Ok(());
        }
        reg.set_configs(name, overrides)?;
        self.topic_configs.insert(name, Arc::clone(&typed));
        self.apply_log_config(name, &typed);
        drop(reg);
        tracing::info!(topic = name, overrides = ?typed.overrides(), "topic config changed");
        Ok(())
    }

    /// Pushes a topic's current config to its hosted partitions (under the registry lock,
    /// so it cannot overtake a concurrent change).
    fn push_log_configs(&self, name: &str) {
        let reg = lock(&self.topics);
        if let Some(typed) = self.topic_configs.get(name) {
            self.apply_log_config(name, &typed);
        }
        drop(reg);
    }

    /// Sets the log config of every hosted partition of a topic.
    fn apply_log_config(&self, name: &str, typed: &TopicConfig) {
        let log_config = typed.log_config();
        for part in self.partitions().into_iter().filter(|p| p.topic == name) {
            if let Err(e) = part.set_config(log_config.clone()) {
                // Cannot happen for a parsed config; the log keeps its old settings.
                tracing::error!(topic = name, partition = part.index, error = %e,
                    "the new topic config was not applied to the log");
            }
        }
    }

    /// The leader epoch of a partition hosted here (-1 when it is not).
    pub fn leader_epoch(&self, topic: &str, partition: i32) -> i32 {
        self.partition(topic, partition)
            .map_or(-1, |p| p.leader_epoch())
    }

    /// The name of the listener clients are given by default (the client listener).
    pub fn client_listener_name(&self) -> String {
        self.config
            .network
            .client_listener()
            .map_or_else(|| "PLAINTEXT".to_owned(), |l| l.name.clone())
    }

    /// Host and port clients of `listener` should connect to: that listener's advertised
    /// address, or the client listener's.
    pub fn advertised_host_port_on(&self, listener: &str) -> (String, i32) {
        if listener != self.client_listener_name() {
            if let Some(l) = self.config.network.advertised_listener(listener) {
                return (l.host, i32::from(l.port));
            }
        }
        self.advertised_host_port()
    }

    /// Host and port clients should connect to.
    pub fn advertised_host_port(&self) -> (String, i32) {
        let addr = self.config.network.advertised_addr();
        match addr.rsplit_once(':') {
            Some((h, p)) => (
                h.trim_start_matches('[').trim_end_matches(']').to_owned(),
                p.parse().unwrap_or(9092),
            ),
            None => (addr.to_owned(), 9092),
        }
    }

    /// Flushes and closes everything and marks the shutdown as clean where it is. On a full
    /// or failing disk it writes what it can and warns naming what it could not (each of
    /// those is only a shortcut for the next start: without them it recovers the logs,
    /// rebuilds producer state from the batches and takes high watermarks from the logs;
    /// every acknowledged record is in the segment files already). Never fails.
    pub fn close(&self) -> Result<(), BrokerError> {
        let mut not_written = Vec::new();
        if let Err(e) = self.replicas.checkpoint_high_watermarks() {
            tracing::warn!(error = %e, "high-watermark checkpoint not written at shutdown");
            not_written.push(format!("the high-watermark checkpoint ({e})"));
        }
        for part in self.partitions() {
            if let Err(e) = part.write_producer_snapshot() {
                tracing::warn!(partition = ?part, error = %e, "cannot write the producer state snapshot");
                not_written.push(format!(
                    "the producer state snapshot of {}-{}",
                    part.topic, part.index
                ));
            }
        }
        if let Err(logs) = self.logs.close() {
            not_written.extend(logs);
        }
        if not_written.is_empty() {
            tracing::info!("broker closed cleanly");
        } else {
            tracing::warn!(
                not_written = not_written.len(),
                "broker closed, but the disk refused some writes (the next start recovers \
                 instead): not written: {}",
                not_written.join("; ")
            );
        }
        Ok(())
    }
}

/// Whether a partition that failed to open with `e` is worth reopening later: the disk was
/// at fault (space, descriptors, an I/O error), not the data (a corrupt segment stays offline,
/// reported and untouched).
fn retryable(e: &BrokerError) -> bool {
    match e {
        BrokerError::Log(e) => e.is_io(),
        BrokerError::Io(_) | BrokerError::Storage(_) => true,
        _ => false,
    }
}

const PRODUCER_ID_BLOCK: i64 = 1000;
/// How often the high watermarks are checkpointed (Kafka's
/// `replica.high.watermark.checkpoint.interval.ms` default).
const HW_CHECKPOINT_INTERVAL_MS: i64 = 5_000;

/// A partition's log configuration: the broker's defaults, then the topic's overrides (an
/// invalid stored override is logged and skipped).
pub fn log_config(cfg: &BrokerConfig, topic: Option<&BTreeMap<String, String>>) -> LogConfig {
    match topic {
        Some(overrides) => TopicConfig::lenient(cfg, "", overrides).log_config(),
        None => TopicConfig::defaults(cfg).log_config(),
    }
}

/// The producer state of a log: the clean-shutdown snapshot if it is sound and current, else
/// rebuilt from the batch headers of the log (see [`crate::producer_state::load`]); idle
/// producers expired.
fn load_producer_state(log: &crate::log::SharedLog, expiration_ms: i64) -> ProducerStates {
    let mut l = lock_log(log);
    crate::replica::partition::load_producer_state(&mut l, now_ms(), expiration_ms)
}

/// The first producer id of a new block: the stored next block start (or 0), so ids never repeat
/// across restarts.
fn load_producer_id_block(config: &BrokerConfig) -> Result<i64, BrokerError> {
    let path = config.server.data_dir.join("producer.ids");
    let start = std::fs::read_to_string(&path)
        .ok()
        .and_then(|t| t.trim().parse::<i64>().ok())
        .unwrap_or(0);
    std::fs::write(&path, format!("{}\n", start + PRODUCER_ID_BLOCK))?;
    Ok(start)
}
