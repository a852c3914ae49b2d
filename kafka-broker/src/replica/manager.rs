//! The replica manager, Kafka's `ReplicaManager`: every partition this broker hosts, and the
//! one owner of their logs' life. Hosting a partition opens (or creates) its log through the
//! log layer, loads its producer state and takes its checkpointed high watermark; a partition
//! whose log cannot be opened, or failed an fsync, is offline and retried; removing a
//! partition deletes its log. Nothing else opens, deletes or retries a log, so the log layer's
//! list of logs and this layer's partitions cannot drift apart.
//!
//! Upkeep runs here too, on the node's timers: retention, due flushes and the periodic full
//! flush, idle producers' expiry, the high-watermark checkpoint, compaction, and the clean
//! close at shutdown. Leaders' ISR changes go to the [`IsrSink`] the node installs (the
//! replication layer sends them to the controller); without one they fail at once, as on a
//! single node, which has no followers.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use kafka_protocol::error_code::ErrorCode;

use super::checkpoint;
use super::isr::IsrChange;
use super::partition::{Partition, load_producer_state};
use crate::clock::Clock;
use crate::config::topic::TopicConfig;
use crate::error::BrokerError;
use crate::log::{
    CleanerLimits, FileCache, LogConfig, LogError, LogIo, LogManager, SharedLog, StdIo,
    TopicPartition, lock_log,
};
use crate::sync::{lock, read, write};

/// Where a leader's ISR changes go: the replication layer implements it (AlterPartition to the
/// active controller) and answers each partition with [`Partition::isr_changed`] or
/// [`Partition::isr_change_failed`].
pub trait IsrSink: Send + Sync + std::fmt::Debug {
    fn propose(&self, partition: &Arc<Partition>, change: IsrChange);
}

/// Who gives a hosted partition its role.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Roles {
    /// A single node: every partition is led here from the moment it is hosted, with no
    /// followers.
    LeadOnHost,
    /// A node of a cluster: a partition takes no role until the metadata gives it one (a
    /// replica that led itself for a moment could acknowledge a write nobody else has).
    FromMetadata,
}

/// The replica manager's settings (the broker keys it reads).
#[derive(Debug, Clone)]
pub struct ReplicaSettings {
    /// `producer.id.expiration.ms`.
    pub producer_id_expiration_ms: i64,
    /// `producer.id.expiration.check.interval.ms`.
    pub producer_id_expiration_check_interval_ms: i64,
    /// `log.cleaner.dedupe.buffer.size`.
    pub cleaner_dedupe_buffer_size: usize,
}

/// How often the high watermarks are checkpointed (Kafka's
/// `replica.high.watermark.checkpoint.interval.ms` default).
const HW_CHECKPOINT_INTERVAL_MS: i64 = 5_000;
/// How often every log is flushed, so that recovery after a crash scans little.
const FULL_FLUSH_INTERVAL_MS: i64 = 60_000;

/// The partitions hosted here.
#[derive(Debug)]
pub struct ReplicaManager {
    data_dir: PathBuf,
    io: Arc<dyn LogIo>,
    logs: LogManager,
    clock: Clock,
    settings: ReplicaSettings,
    roles: Roles,
    /// By topic, then index (looked up by `&str`, without a copy).
    partitions: RwLock<HashMap<String, HashMap<i32, Arc<Partition>>>>,
    /// The high watermarks of partitions not hosted now: read from the checkpoint at start
    /// (taken by the partitions as they are hosted), and those of partitions gone offline.
    pub(super) checkpointed: Mutex<HashMap<TopicPartition, i64>>,
    isr_sink: OnceLock<Arc<dyn IsrSink>>,
    last_full_flush: AtomicI64,
    last_hw_checkpoint: AtomicI64,
    last_producer_expiry: AtomicI64,
}

impl ReplicaManager {
    /// Opens the logs of `data_dir` (each with `config_for` its configuration; see
    /// [`LogManager::open_with`]) and the high-watermark checkpoint there. No partition is
    /// hosted yet: see [`Self::host`].
    pub fn open(
        data_dir: PathBuf,
        config_for: impl Fn(&TopicPartition) -> LogConfig,
        files: Arc<FileCache>,
        settings: ReplicaSettings,
        roles: Roles,
        clock: Clock,
    ) -> Result<Self, BrokerError> {
        let io: Arc<dyn LogIo> = Arc::new(StdIo);
        let logs =
            LogManager::open_with(vec![data_dir.clone()], config_for, Arc::clone(&io), files)?;
        if logs.recovered_at_start() {
            tracing::warn!("the last shutdown was not clean: logs were recovered");
        }
        Ok(Self::with_logs(data_dir, io, logs, settings, roles, clock))
    }

    /// A manager over logs already open (tests), with the high watermarks checkpointed in
    /// `data_dir`.
    pub fn with_logs(
        data_dir: PathBuf,
        io: Arc<dyn LogIo>,
        logs: LogManager,
        settings: ReplicaSettings,
        roles: Roles,
        clock: Clock,
    ) -> Self {
        let checkpointed = checkpoint::read(&data_dir).unwrap_or_else(|e| {
            tracing::warn!(error = %e, "unreadable high-watermark checkpoint; high watermarks \
                start from the logs");
            HashMap::new()
        });
        let now = clock.now_ms();
        Self {
            data_dir,
            io,
            logs,
            clock,
            settings,
            roles,
            partitions: RwLock::new(HashMap::new()),
            checkpointed: Mutex::new(checkpointed),
            isr_sink: OnceLock::new(),
            last_full_flush: AtomicI64::new(now),
            last_hw_checkpoint: AtomicI64::new(now),
            last_producer_expiry: AtomicI64::new(now),
        }
    }

    /// Who gives hosted partitions their roles.
    pub fn roles(&self) -> Roles {
        self.roles
    }

    /// Installs where ISR changes go (once; later calls are ignored).
    pub fn set_isr_sink(&self, sink: Arc<dyn IsrSink>) {
        let _ = self.isr_sink.set(sink);
    }

    fn propose(&self, partition: &Arc<Partition>, change: IsrChange) {
        match self.isr_sink.get() {
            Some(sink) => sink.propose(partition, change),
            None => partition.isr_change_failed(self.clock.now_ms()),
        }
    }

    // ----- hosting -----

    /// Hosts partitions `from..to` of `topic` with the topic's `config`, opening or creating
    /// their logs. A log that is damaged stays offline (KAFKA_STORAGE_ERROR, logged) while the
    /// others are hosted; any other failure stops and is returned (the caller undoes what it
    /// asked for, see [`Self::remove_partitions`]).
    pub fn host_range(
        &self,
        topic: &str,
        from: i32,
        to: i32,
        config: &TopicConfig,
    ) -> Result<(), BrokerError> {
        for p in from..to {
            let log = match self.logs.get_or_create(topic, p, LogConfig::from(config)) {
                Ok(log) => log,
                // A damaged log stays offline (KAFKA_STORAGE_ERROR) while the rest serve.
                Err(e @ LogError::Offline { .. }) | Err(e @ LogError::Corrupt { .. }) => {
                    tracing::error!(topic, partition = p, error = %e, "partition offline");
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            self.host_log(topic, p, log, config)?;
        }
        Ok(())
    }

    /// Hosts one partition (opening or creating its log), or returns it if hosted.
    pub fn host(
        &self,
        topic: &str,
        index: i32,
        config: &TopicConfig,
    ) -> Result<Arc<Partition>, BrokerError> {
        if let Some(p) = self.get(topic, index) {
            return Ok(p);
        }
        self.host_range(topic, index, index + 1, config)?;
        self.get(topic, index)
            .ok_or_else(|| self.unhosted_error(topic, index, true))
    }

    /// Hosts a partition over its open log: its producer state loaded (see
    /// [`load_producer_state`]), its high watermark the checkpointed one, led here at once
    /// on a single node.
    fn host_log(
        &self,
        topic: &str,
        index: i32,
        log: SharedLog,
        config: &TopicConfig,
    ) -> Result<Arc<Partition>, BrokerError> {
        let now = self.clock.now_ms();
        let producers = {
            let mut l = lock_log(&log);
            load_producer_state(&mut l, now, self.settings.producer_id_expiration_ms)
        };
        let hw = lock(&self.checkpointed).remove(&TopicPartition::new(topic, index));
        let partition = Arc::new(Partition::new(
            topic,
            index,
            log,
            producers,
            hw,
            config.produce_rules(),
        ));
        if self.roles == Roles::LeadOnHost {
            partition.become_leader(partition.leader_epoch(), &[], &[], now)?;
        }
        write(&self.partitions)
            .entry(topic.to_owned())
            .or_default()
            .insert(index, Arc::clone(&partition));
        Ok(partition)
    }

    /// A partition hosted here.
    pub fn get(&self, topic: &str, index: i32) -> Option<Arc<Partition>> {
        read(&self.partitions).get(topic)?.get(&index).cloned()
    }

    /// A partition hosted here that clients may write to and read from: on a single node any
    /// hosted partition, in a cluster only one this node leads.
    pub fn leader(&self, topic: &str, index: i32) -> Option<Arc<Partition>> {
        self.get(topic, index)
            .filter(|p| self.roles == Roles::LeadOnHost || p.is_leader())
    }

    /// Every hosted partition.
    pub fn all(&self) -> Vec<Arc<Partition>> {
        read(&self.partitions)
            .values()
            .flat_map(|by_index| by_index.values().cloned())
            .collect()
    }

    /// The partitions whose logs are on disk, hosted or offline.
    pub fn log_partitions(&self) -> Vec<TopicPartition> {
        self.logs.partitions()
    }

    /// The error for a partition that is not served. `known`: the topic and partition exist.
    /// In a cluster a known partition whose log is not offline is NOT_LEADER_OR_FOLLOWER:
    /// another broker leads it, or this one is taking the leadership the metadata just gave
    /// it (the client refreshes its metadata and tries again). Otherwise KAFKA_STORAGE_ERROR
    /// when its log is offline, or open again and about to be hosted (an offline partition
    /// coming back); UNKNOWN_TOPIC_OR_PARTITION when there is no such partition here.
    pub fn unhosted_error(&self, topic: &str, index: i32, known: bool) -> BrokerError {
        let log = self.logs.get(topic, index);
        if self.roles == Roles::FromMetadata && known && log.is_ok() {
            return BrokerError::kafka(
                ErrorCode::NOT_LEADER_OR_FOLLOWER,
                format!("{topic}-{index} is not led by this broker"),
            );
        }
        match log {
            Err(e) => BrokerError::kafka(ErrorCode::KAFKA_STORAGE_ERROR, e.to_string()),
            Ok(Some(_)) if known => BrokerError::kafka(
                ErrorCode::KAFKA_STORAGE_ERROR,
                format!("{topic}-{index} is being reopened after its log was offline"),
            ),
            Ok(_) => BrokerError::kafka(
                ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
                format!("{topic}-{index} is not hosted here"),
            ),
        }
    }

    /// Keeps a partition that could not be hosted offline with its reason
    /// (KAFKA_STORAGE_ERROR), retried every `log.offline.retry.ms` when the disk was at fault.
    pub fn mark_offline(&self, topic: &str, index: i32, error: &BrokerError) {
        let tp = TopicPartition::new(topic, index);
        self.logs
            .mark_offline(&tp, error.to_string(), error.is_io());
    }

    /// Stops hosting a partition whose log went offline: its waiters are woken and find it
    /// gone, and its high watermark is kept for when it is hosted again (and in the
    /// checkpoint meanwhile), as a restart would find it.
    fn take_offline(&self, topic: &str, index: i32) -> Option<Arc<Partition>> {
        let part = {
            let mut all = write(&self.partitions);
            let by_index = all.get_mut(topic)?;
            let part = by_index.remove(&index)?;
            if by_index.is_empty() {
                all.remove(topic);
            }
            part
        };
        lock(&self.checkpointed).insert(TopicPartition::new(topic, index), part.high_watermark());
        part.wake_all();
        Some(part)
    }

    /// Forgets the checkpointed high watermarks of a topic's partitions `from..` (`to` when
    /// given): the partitions are gone.
    fn forget_checkpointed(&self, topic: &str, from: i32, to: Option<i32>) {
        lock(&self.checkpointed).retain(|tp, _| {
            &*tp.topic != topic || tp.partition < from || to.is_some_and(|t| tp.partition >= t)
        });
    }

    /// Stops hosting a topic's partitions and deletes every log of it (the topic was
    /// deleted); waiters are woken and find the partitions gone.
    pub fn remove_topic(&self, topic: &str) {
        self.forget_checkpointed(topic, 0, None);
        let removed: Vec<Arc<Partition>> = write(&self.partitions)
            .remove(topic)
            .map(|m| m.into_values().collect())
            .unwrap_or_default();
        for p in &removed {
            p.wake_all();
        }
        for tp in self
            .logs
            .partitions()
            .into_iter()
            .filter(|tp| &*tp.topic == topic)
        {
            self.delete_log(topic, tp.partition);
        }
    }

    /// Stops hosting partitions `from..to` of a topic and deletes their logs (a creation
    /// undone, a log of a partition that does not exist).
    pub fn remove_partitions(&self, topic: &str, from: i32, to: i32) {
        self.forget_checkpointed(topic, from, Some(to));
        {
            let mut all = write(&self.partitions);
            if let Some(by_index) = all.get_mut(topic) {
                for p in from..to {
                    if let Some(part) = by_index.remove(&p) {
                        part.wake_all();
                    }
                }
                if by_index.is_empty() {
                    all.remove(topic);
                }
            }
        }
        for p in from..to {
            self.delete_log(topic, p);
        }
    }

    fn delete_log(&self, topic: &str, partition: i32) {
        if let Err(e) = self.logs.delete(topic, partition) {
            tracing::warn!(topic, partition, error = %e, "deleting the log failed");
        }
    }

    /// Applies a topic's new config to its hosted partitions (their logs and produce rules).
    pub fn set_topic_config(&self, topic: &str, config: &TopicConfig) {
        let log_config = LogConfig::from(config);
        let rules = config.produce_rules();
        let hosted: Vec<Arc<Partition>> = read(&self.partitions)
            .get(topic)
            .map(|m| m.values().cloned().collect())
            .unwrap_or_default();
        for part in hosted {
            if let Err(e) = part.set_config(log_config.clone(), rules) {
                // Cannot happen for a parsed config; the log keeps its old settings.
                tracing::error!(topic, partition = part.index, error = %e,
                    "the new topic config was not applied to the log");
            }
        }
    }

    /// Brings offline partitions back (called every `log.offline.retry.ms`): first takes
    /// offline every hosted partition whose log failed an fsync (it accepts nothing more
    /// until reopened), then reopens each offline partition through the recovery a restart
    /// runs and hosts it again with the high watermark, leader epoch and producer state a
    /// restart would give it. `config_of` gives a partition's topic config, `None` when the
    /// partition no longer exists. `__consumer_offsets` and `__transaction_state` partitions
    /// are not reopened: their coordinators load them only at start, so one that was offline
    /// stays offline (KAFKA_STORAGE_ERROR, its groups or transactional ids NOT_COORDINATOR)
    /// until a restart. Returns the partitions that came back (in a cluster they take their
    /// role from the metadata next).
    pub fn retry_offline(
        &self,
        config_of: impl Fn(&str, i32) -> Option<Arc<TopicConfig>>,
    ) -> Vec<TopicPartition> {
        for part in self.all() {
            if crate::topics::is_internal(&part.topic) || !part.log_failed() {
                continue;
            }
            let tp = TopicPartition::new(part.topic.as_str(), part.index);
            tracing::error!(partition = %tp, "partition offline: its log failed an fsync; \
                it is reopened (and recovered) every log.offline.retry.ms until that works");
            self.take_offline(&part.topic, part.index);
            self.logs.mark_offline(
                &tp,
                "an fsync failed; reopening through recovery".into(),
                true,
            );
        }
        let mut back = Vec::new();
        for tp in self.logs.retryable_offline() {
            if crate::topics::is_internal(&tp.topic) {
                continue;
            }
            let Some(config) = config_of(&tp.topic, tp.partition) else {
                continue;
            };
            let hosted = self
                .logs
                .reopen(&tp, LogConfig::from(&*config))
                .map_err(BrokerError::from)
                .and_then(|log| self.host_log(&tp.topic, tp.partition, log, &config));
            match hosted {
                Ok(part) => {
                    tracing::info!(partition = %tp, log_end_offset = part.log_end_offset(),
                        high_watermark = part.high_watermark(), leader_epoch = part.leader_epoch(),
                        "offline partition reopened and served again");
                    back.push(tp);
                }
                Err(e) => {
                    tracing::debug!(partition = %tp, error = %e, "offline partition still cannot be opened");
                    self.logs.mark_offline(&tp, e.to_string(), e.is_io());
                }
            }
        }
        back
    }

    // ----- the leader side of replication -----

    /// A follower's fetch reached a partition led here (see [`Partition::follower_fetched`]);
    /// an ISR expansion it allows goes to the ISR sink.
    pub fn follower_fetched(
        &self,
        partition: &Arc<Partition>,
        replica_id: i32,
        fetch_epoch: i32,
        fetch_offset: i64,
        log_start_offset: i64,
    ) -> Result<(), ErrorCode> {
        let now = self.clock.now_ms();
        if let Some(change) = partition.follower_fetched(
            replica_id,
            fetch_epoch,
            fetch_offset,
            log_start_offset,
            now,
        )? {
            self.propose(partition, change);
        }
        Ok(())
    }

    /// Every led partition's followers that fell behind for `max_lag_ms` leave its ISR
    /// (called every half `replica.lag.time.max.ms`).
    pub fn shrink_isrs(&self, max_lag_ms: i64) {
        let now = self.clock.now_ms();
        for part in self.all() {
            if let Some(change) = part.isr_shrink(now, max_lag_ms) {
                self.propose(&part, change);
            }
        }
    }

    // ----- upkeep -----

    /// Retention, due flushes, idle producers' expiry, the periodic full flush and the
    /// high-watermark checkpoint (called on the node's timer; file work, so off the async
    /// threads).
    pub fn maintain(&self) {
        let now = self.clock.now_ms();
        let mut deleted = 0;
        for part in self.all() {
            match part.apply_retention(now) {
                Ok(n) => deleted += n,
                Err(e) => tracing::warn!(topic = %part.topic, partition = part.index,
                    error = %e, "retention failed"),
            }
        }
        if deleted > 0 {
            tracing::info!(segments = deleted, "retention deleted segments");
        }
        self.logs.flush_due(now);
        let interval = self.settings.producer_id_expiration_check_interval_ms;
        if now - self.last_producer_expiry.load(Ordering::Relaxed) >= interval {
            self.last_producer_expiry.store(now, Ordering::Relaxed);
            let expiration = self.settings.producer_id_expiration_ms;
            let expired: usize = self
                .all()
                .iter()
                .map(|p| p.expire_producers(now, expiration))
                .sum();
            if expired > 0 {
                tracing::info!(expired, "expired idle producers");
            }
        }
        if now - self.last_full_flush.load(Ordering::Relaxed) >= FULL_FLUSH_INTERVAL_MS {
            self.last_full_flush.store(now, Ordering::Relaxed);
            if let Err(e) = self.logs.flush_all() {
                tracing::warn!(error = %e, "periodic flush failed");
            }
        }
        if now - self.last_hw_checkpoint.load(Ordering::Relaxed) >= HW_CHECKPOINT_INTERVAL_MS {
            self.last_hw_checkpoint.store(now, Ordering::Relaxed);
            if let Err(e) = self.checkpoint_high_watermarks() {
                tracing::warn!(error = %e, "high-watermark checkpoint not written");
            }
        }
    }

    /// One round of the log cleaner: a compaction pass on every compacted partition that is
    /// due. Returns how many partitions were cleaned; failures are logged and leave the log
    /// as it was.
    pub fn clean(&self) -> usize {
        let limits = CleanerLimits {
            dedupe_buffer_size: self.settings.cleaner_dedupe_buffer_size,
        };
        let mut cleaned = 0;
        for part in self.all() {
            let started = std::time::Instant::now();
            match part.clean(&limits, self.clock.now_ms()) {
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

    /// Writes every hosted partition's high watermark to the checkpoint file, and those of
    /// partitions not hosted now (offline) as they were last known, so a restart does not
    /// lose them.
    pub fn checkpoint_high_watermarks(&self) -> Result<(), BrokerError> {
        let mut entries: Vec<(TopicPartition, i64)> = self
            .all()
            .iter()
            .map(|p| {
                (
                    TopicPartition::new(p.topic.as_str(), p.index),
                    p.high_watermark(),
                )
            })
            .collect();
        entries.extend(
            lock(&self.checkpointed)
                .iter()
                .map(|(tp, hw)| (tp.clone(), *hw)),
        );
        entries.sort();
        entries.dedup_by(|a, b| a.0 == b.0);
        checkpoint::write(self.io.as_ref(), &self.data_dir, &entries)?;
        Ok(())
    }

    /// Flushes and closes everything and marks the shutdown as clean where it is. On a full
    /// or failing disk it writes what it can and warns naming what it could not (each of
    /// those is only a shortcut for the next start: without them it recovers the logs,
    /// rebuilds producer state from the batches and takes high watermarks from the logs;
    /// every acknowledged record is in the segment files already). Never fails.
    pub fn close(&self) {
        let mut not_written = Vec::new();
        if let Err(e) = self.checkpoint_high_watermarks() {
            tracing::warn!(error = %e, "high-watermark checkpoint not written at shutdown");
            not_written.push(format!("the high-watermark checkpoint ({e})"));
        }
        for part in self.all() {
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
    }
}
