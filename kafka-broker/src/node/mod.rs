//! The node layer: the broker node as one value ([`Broker`]) wiring the layers below it
//! (the partition layer, the coordinators, replication, the cluster runtime), applying
//! metadata images ([`publish`]) and running the background tasks under one shutdown
//! ([`tasks`], started and stopped by [`crate::run`]). It owns no storage: the partition layer does.

mod group_topics;
pub mod markers;
pub mod publish;
pub mod tasks;
pub mod topic_configs;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};

use kafka_protocol::Uuid;
use kafka_protocol::error_code::ErrorCode;

use crate::config::BrokerConfig;
use crate::config::topic::TopicConfig;
use crate::coordinator::{InternalTopic, OFFSETS_TOPIC};
use crate::error::BrokerError;
use crate::log::{FileCache, LogConfig, TopicPartition};
use crate::node::topic_configs::TopicConfigs;
use crate::replica::{Partition, ReplicaManager, ReplicaSettings, Roles};
use crate::sync::lock;
use crate::topics::{self, TopicMeta, TopicRegistry};
use crate::txn::TRANSACTION_STATE_TOPIC;

pub use crate::config::topic::ProduceRules;

/// Shared by every connection.
#[derive(Debug)]
pub struct Broker {
    pub config: BrokerConfig,
    /// The node's one clock.
    pub clock: crate::clock::Clock,
    pub cluster_id: String,
    topics: Arc<Mutex<TopicRegistry>>,
    /// Every topic's typed config; changed only under the `topics` lock.
    topic_configs: Arc<TopicConfigs>,
    /// The partition layer: every hosted partition, every append.
    pub replicas: Arc<ReplicaManager>,
    /// Single node: the next producer id (blocks reserved in `producer.ids`).
    next_producer_id: AtomicI64,
    /// In a cluster: producer ids in blocks from the controller.
    pub producer_ids: crate::cluster::producer_ids::ProducerIdManager,
    /// The group coordinator, persisted in `__consumer_offsets`.
    pub groups: crate::group::GroupCoordinator,
    /// Memory for decompressed records, shared by every produce validation
    /// (`produce.decompression.max.bytes`).
    pub decompression: crate::replica::MemoryBudget,
    /// This data directory's id (`directory.id` in `meta.properties`).
    pub directory_id: Uuid,
    /// `__consumer_offsets` as the group coordinator writes and loads it.
    offsets_log: Arc<InternalTopic>,
    /// The transaction coordinator, persisted in `__transaction_state` (its markers are
    /// `crate::node::markers`'s).
    pub txn: crate::txn::TxnCoordinator,
    /// `__transaction_state` as the transaction coordinator writes and loads it: on a single
    /// node every partition once the topic exists, in a cluster those this broker leads.
    txn_log: Arc<InternalTopic>,
    /// In a cluster: the fetchers of the partitions this broker follows.
    pub fetchers: crate::replication::ReplicaFetchers,
    /// Connections to the other brokers (replica fetchers, transaction markers).
    pub peers: Arc<crate::replication::PeerPool>,
    /// In a cluster (`process.roles` set): the metadata this node follows and its way to the
    /// controller, set once when the cluster side starts.
    cluster: std::sync::OnceLock<Arc<crate::cluster::ClusterLink>>,
    /// The SCRAM credentials SASL checks (`scram-credentials.records`).
    pub scram_credentials: crate::credentials::ScramCredentials,
    /// The ACLs and the authorizer (`acls.records`; on with `authorizer.class.name`).
    pub acls: crate::acls::Acls,
    /// Client quotas and connection-creation limits (`client-quotas.records`).
    pub quotas: crate::quotas::Quotas,
    /// The finalized feature levels (`features.records`; in a cluster the metadata image's).
    pub features: crate::features::Features,
    /// The topics as the KIP-848 groups see them (`group_topics.rs`).
    group_topics: group_topics::SharedTopics,
}

impl Broker {
    /// Whether this node is part of a cluster (`process.roles` set), decided once when it
    /// opened: partitions then take their roles from the metadata, topics come from the
    /// image, producer ids from the controller. (The link to the cluster, [`Self::cluster`],
    /// is there once the cluster side started.)
    pub fn is_clustered(&self) -> bool {
        self.replicas.roles() == Roles::FromMetadata
    }

    /// Milliseconds since the Unix epoch, on the node's clock.
    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

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
        // In a cluster ACLs, SCRAM credentials and quotas come from the metadata image
        // (`node/publish.rs`), not from their files.
        let (scram_credentials, acls, quotas, features) = if clustered {
            (
                crate::credentials::ScramCredentials::clustered(),
                crate::acls::Acls::clustered(&config.security)?,
                crate::quotas::Quotas::clustered(&config),
                crate::features::Features::clustered(),
            )
        } else {
            (
                crate::credentials::ScramCredentials::open(&config.server.data_dir)?,
                crate::acls::Acls::open(&config.server.data_dir, &config.security)?,
                crate::quotas::Quotas::open(&config.server.data_dir, &config)?,
                crate::features::Features::open(&config.server.data_dir)?,
            )
        };
        // In a cluster producer ids come from the controller, not from `producer.ids`.
        let next_producer_id = if clustered {
            0
        } else {
            load_producer_id_block(&config)?
        };
        let topic_configs = Arc::new(TopicConfigs::new(TopicConfig::defaults(&config)));
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
        let clock = crate::clock::Clock::system();
        let replicas = Arc::new(ReplicaManager::open(
            config.server.data_dir.clone(),
            |tp: &TopicPartition| LogConfig::from(&*topic_configs.get_or_default(&tp.topic)),
            files,
            ReplicaSettings {
                producer_id_expiration_ms: config.log.producer_id_expiration_ms,
                producer_id_expiration_check_interval_ms: config
                    .log
                    .producer_id_expiration_check_interval_ms
                    as i64,
                cleaner_dedupe_buffer_size: config.log.cleaner_dedupe_buffer_size,
            },
            if clustered {
                Roles::FromMetadata
            } else {
                Roles::LeadOnHost
            },
            clock.clone(),
        )?);
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
        let internal_topic = |topic: &'static str, timeout| {
            Arc::new(InternalTopic::new(topic, clock.clone(), timeout))
        };
        let offsets_log = internal_topic(OFFSETS_TOPIC, crate::group::OFFSETS_COMMIT_TIMEOUT);
        let txn_log = internal_topic(TRANSACTION_STATE_TOPIC, crate::txn::TXN_LOG_WRITE_TIMEOUT);
        // group.consumer.* (assignor names included) checked before anything is served.
        config
            .group
            .consumer_config()
            .map_err(BrokerError::Config)?;
        let groups = crate::group::GroupCoordinator::new(
            crate::group::GroupConfig {
                offsets_topic_num_partitions: offsets_partitions,
                ..config.group.clone()
            },
            clock.clone(),
            offsets_log.clone(),
        );
        let txn =
            crate::txn::TxnCoordinator::new(config.txn.clone(), clock.clone(), txn_log.clone());
        let peers = Arc::new(crate::replication::PeerPool::new(
            config.link_security(crate::config::security::NodeLink::Brokers)?,
        ));
        let fetchers = crate::replication::ReplicaFetchers::new(
            Arc::downgrade(&replicas),
            config.server.node_id,
            clock.clone(),
            config.replication.clone(),
            Arc::clone(&peers),
        );
        let broker = Self {
            clock: clock.clone(),
            groups,
            txn,
            txn_log,
            replicas,
            decompression: crate::replica::MemoryBudget::new(
                config.server.produce_decompression_max_bytes,
            ),
            config,
            cluster_id,
            directory_id,
            offsets_log,
            fetchers,
            peers,
            cluster: std::sync::OnceLock::new(),
            topics: Arc::new(Mutex::new(topics)),
            scram_credentials,
            acls,
            quotas,
            features,
            group_topics: Default::default(),
            topic_configs,
            next_producer_id: AtomicI64::new(next_producer_id),
            producer_ids: Default::default(),
        };
        group_topics::connect(&broker.groups, &broker.topics);
        broker.refresh_topics_image();
        if clustered {
            return Ok(broker);
        }
        for t in broker.all_topics() {
            // A partition that cannot be opened (descriptors, disk) stays offline with its
            // reason logged (KAFKA_STORAGE_ERROR, retried every `log.offline.retry.ms`); it
            // does not keep every other partition from being served.
            for p in 0..t.partitions {
                if let Err(e) = broker.host_partitions(&t.name, p, p + 1) {
                    let tp = TopicPartition::new(t.name.as_str(), p);
                    tracing::error!(partition = %tp, error = %e,
                        "partition offline: it could not be opened at start");
                    broker.replicas.mark_offline(&t.name, p, &e);
                }
            }
        }
        // Logs of topics that no longer exist (a crash during a delete) go away.
        for tp in broker.replicas.log_partitions() {
            if broker
                .topic(&tp.topic)
                .is_none_or(|t| tp.partition >= t.partitions)
            {
                tracing::warn!(partition = %tp, "removing the log of a partition that does not exist");
                broker
                    .replicas
                    .remove_partitions(&tp.topic, tp.partition, tp.partition + 1);
            }
        }
        broker.load_groups(offsets_partitions)?;
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
        if self.is_clustered() {
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
        let partitions =
            (0..meta.partitions).map(|p| (p, self.partition(TRANSACTION_STATE_TOPIC, p)));
        self.txn_log.lead_all(&self.txn, partitions);
    }

    /// In a cluster: this broker leads `__transaction_state` partition `index`; its
    /// transactional ids are loaded and coordinated here. Once per leadership.
    pub(crate) fn lead_txn_partition(&self, index: i32) {
        if let Some(part) = self.partition(TRANSACTION_STATE_TOPIC, index) {
            self.txn_log.lead(&self.txn, index, part);
        }
    }

    /// In a cluster: this broker no longer leads `__transaction_state` partition `index`.
    pub(crate) fn follow_txn_partition(&self, index: i32) {
        self.txn_log.resign(&self.txn, index);
    }

    /// Creates `__consumer_offsets` if needed and loads its partitions into the group
    /// coordinator, which writes there from then on (before anything is served).
    fn load_groups(&self, num_partitions: i32) -> Result<(), BrokerError> {
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
        let started = std::time::Instant::now();
        let partitions = (0..num_partitions).map(|p| (p, self.partition(OFFSETS_TOPIC, p)));
        let (loaded, records) = self.offsets_log.lead_all(&self.groups, partitions);
        tracing::info!(
            partitions = loaded,
            records,
            ms = started.elapsed().as_millis() as u64,
            "loaded consumer groups from {OFFSETS_TOPIC}"
        );
        Ok(())
    }

    /// Hosts partitions `from..to` of a topic (opening or creating their logs) with the
    /// topic's current config.
    fn host_partitions(&self, topic: &str, from: i32, to: i32) -> Result<(), BrokerError> {
        let config = self.topic_configs.get_or_default(topic);
        self.replicas.host_range(topic, from, to, &config)
    }

    /// Brings offline partitions back (see [`ReplicaManager::retry_offline`]); returns the
    /// partitions that came back (in a cluster they take their role from the metadata next:
    /// [`crate::node::publish::retake`]).
    pub fn retry_offline(&self) -> Vec<TopicPartition> {
        self.replicas.retry_offline(|topic, index| {
            self.topic(topic)
                .filter(|t| index < t.partitions)
                .map(|_| self.topic_configs.get_or_default(topic))
        })
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
        let config = self.topic_configs.get_or_default(topic);
        self.replicas.host(topic, index, &config)
    }

    /// In a cluster: this broker leads `__consumer_offsets` partition `index` (hosted): its
    /// groups and offsets are loaded into the group coordinator, and the coordinator writes
    /// there. Once per leadership.
    pub(crate) fn lead_offsets_partition(&self, index: i32) {
        if let Some(part) = self.partition(OFFSETS_TOPIC, index) {
            self.offsets_log.lead(&self.groups, index, part);
        }
    }

    /// In a cluster: this broker no longer leads `__consumer_offsets` partition `index`; the
    /// coordinator stops writing there (its commits answer NOT_COORDINATOR, and clients find
    /// the new coordinator).
    pub(crate) fn follow_offsets_partition(&self, index: i32) {
        self.offsets_log.resign(&self.groups, index);
    }

    /// In a cluster: forgets a topic the controller deleted (its logs too).
    pub(crate) fn forget_topic(&self, name: &str) {
        let meta = {
            let mut reg = lock(&self.topics);
            self.topic_configs.remove(name);
            reg.delete(name).ok()
        };
        self.replicas.remove_topic(name);
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
        self.replicas.leader(topic, index)
    }

    /// The error for a partition that is not served (see
    /// [`ReplicaManager::unhosted_error`]).
    pub fn partition_error(&self, topic: &str, index: i32) -> BrokerError {
        let known = self
            .topic(topic)
            .is_some_and(|t| index >= 0 && index < t.partitions);
        self.replicas.unhosted_error(topic, index, known)
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
        if self.is_clustered() {
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
        if let Err(e) = self.host_partitions(name, 0, partitions) {
            // All or nothing: no registry entry, no directories left behind.
            self.replicas.remove_partitions(name, 0, partitions);
            let _ = lock(&self.topics).delete(name);
            self.topic_configs.remove(name);
            tracing::warn!(topic = name, partitions, error = %e, "topic creation failed and was undone");
            return Err(e);
        }
        // An alter may have come in between the registration and the hosting.
        self.push_log_configs(name);
        tracing::info!(topic = name, partitions, "created topic");
        self.topics_changed();
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
        tracing::info!(topic = name, "deleted topic");
        self.topics_changed();
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
            drop(reg);
            if let Err(e) = self.host_partitions(name, current, total) {
                self.replicas.remove_partitions(name, current, total);
                let _ = lock(&self.topics).set_partitions(name, current);
                tracing::warn!(topic = name, total, error = %e, "adding partitions failed and was undone");
                return Err(e);
            }
            self.push_log_configs(name);
            self.topics_changed();
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
        self.replicas.set_topic_config(name, typed);
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

    /// Flushes and closes everything and marks the shutdown as clean where it is (see
    /// [`ReplicaManager::close`]). Never fails.
    pub fn close(&self) -> Result<(), BrokerError> {
        self.replicas.close();
        Ok(())
    }
}

const PRODUCER_ID_BLOCK: i64 = 1000;

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
