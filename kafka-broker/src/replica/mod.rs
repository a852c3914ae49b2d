//! The partition layer, Kafka's `ReplicaManager` and `Partition`: every append to a partition
//! goes through here, whoever makes it (a client's Produce, the group coordinator's records in
//! `__consumer_offsets`, later transaction markers and a follower's fetched batches), and this
//! layer alone decides durability, the high watermark and whom to wake.
//!
//! - [`ReplicaManager`] holds the partitions hosted here and the high-watermark checkpoint.
//! - [`Partition`] is one of them: leader append (producer-state check, offsets and epoch
//!   stamped), follower append (kept as the leader wrote it), truncation, the high watermark
//!   over the in-sync replicas, the leader epoch and its fence check.
//! - [`selector`] picks the replica a consumer should read from (KIP-392).
//! - [`delayed`] holds the delayed operations: a produce waiting for its acks condition, a
//!   fetch waiting for data, each woken only by the partitions it names.
//!
//! A Produce, read as data flowing through here: the handler turns the request into one call
//! per partition, [`Partition::append_records`] validates the records ([`validate`], Kafka's
//! `LogValidator`) and appends them under the partition lock, handing back a [`PendingAck`], and [`delayed::complete_appends`]
//! waits with every lock released for the group-commit fsync the log asks for (durable mode,
//! `flush.messages=1`, or a due flush) and, for acks=all, for the high watermark to cover the
//! batch. The high watermark moves when the fsync ends (durable mode) or at once (otherwise),
//! and each move wakes the waiters of that partition only.

pub mod budget;
pub mod checkpoint;
pub mod delayed;
pub mod isr;
pub mod partition;
pub mod producer_state;
pub mod selector;
pub mod validate;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, RwLock};

pub use budget::MemoryBudget;
pub use delayed::Acks;
pub use isr::{Follower, IsrChange, Leadership, Role};
pub use partition::{Appended, Isolation, Offsets, Partition, PendingAck, ReadRange, SyncNeeded};
pub use validate::{BadRecord, BatchSummary, Refused};

use crate::error::BrokerError;
use crate::log::{LogIo, SharedLog, StdIo, TopicPartition};
use crate::topic_config::ProduceRules;
use producer_state::ProducerStates;

/// The partitions hosted here.
#[derive(Debug)]
pub struct ReplicaManager {
    data_dir: PathBuf,
    io: Arc<dyn LogIo>,
    /// By topic, then index (looked up by `&str`, without a copy).
    partitions: RwLock<HashMap<String, HashMap<i32, Arc<Partition>>>>,
    /// The high watermarks read from the checkpoint at start, taken by the partitions as they
    /// are hosted.
    checkpointed: Mutex<HashMap<TopicPartition, i64>>,
    /// A hosted partition starts led here with no followers (a single node); in a cluster
    /// it waits for the role the metadata gives it.
    lead_on_host: std::sync::atomic::AtomicBool,
}

impl ReplicaManager {
    /// A manager for the partitions of `data_dir`, with the high watermarks checkpointed there.
    pub fn open(data_dir: PathBuf) -> Self {
        let checkpointed = checkpoint::read(&data_dir).unwrap_or_else(|e| {
            tracing::warn!(error = %e, "unreadable high-watermark checkpoint; high watermarks \
                start from the logs");
            HashMap::new()
        });
        Self {
            data_dir,
            io: Arc::new(StdIo),
            partitions: RwLock::new(HashMap::new()),
            checkpointed: Mutex::new(checkpointed),
            lead_on_host: std::sync::atomic::AtomicBool::new(true),
        }
    }

    /// In a cluster: partitions hosted from now on take no role until the metadata gives
    /// them one (a replica that led itself for a moment could acknowledge a write nobody
    /// else has).
    pub fn roles_from_metadata(&self) {
        self.lead_on_host
            .store(false, std::sync::atomic::Ordering::Release);
    }

    /// Hosts a partition over its open log, led by this broker with no followers (a single
    /// node leads every partition; in a cluster, see [`Self::roles_from_metadata`], it takes
    /// no role here). A new log starts leader epoch 0 in its leader epoch cache.
    pub fn host(
        &self,
        topic: &str,
        index: i32,
        log: SharedLog,
        producers: ProducerStates,
        rules: ProduceRules,
        now_ms: i64,
    ) -> Result<Arc<Partition>, BrokerError> {
        let hw = crate::sync::lock(&self.checkpointed).remove(&TopicPartition::new(topic, index));
        let partition = Arc::new(Partition::new(topic, index, log, producers, hw, rules));
        if self.lead_on_host.load(std::sync::atomic::Ordering::Acquire) {
            partition.become_leader(partition.leader_epoch(), &[], &[], now_ms)?;
        }
        crate::sync::write(&self.partitions)
            .entry(topic.to_owned())
            .or_default()
            .insert(index, Arc::clone(&partition));
        Ok(partition)
    }

    /// A partition hosted here.
    pub fn get(&self, topic: &str, index: i32) -> Option<Arc<Partition>> {
        crate::sync::read(&self.partitions)
            .get(topic)?
            .get(&index)
            .cloned()
    }

    /// Every hosted partition.
    pub fn all(&self) -> Vec<Arc<Partition>> {
        crate::sync::read(&self.partitions)
            .values()
            .flat_map(|by_index| by_index.values().cloned())
            .collect()
    }

    /// Stops hosting a partition whose log went offline: its waiters are woken and find it
    /// gone, and its high watermark is kept for when it is hosted again (and in the
    /// checkpoint meanwhile), as a restart would find it.
    pub fn take_offline(&self, topic: &str, index: i32) -> Option<Arc<Partition>> {
        let part = {
            let mut all = crate::sync::write(&self.partitions);
            let by_index = all.get_mut(topic)?;
            let part = by_index.remove(&index)?;
            if by_index.is_empty() {
                all.remove(topic);
            }
            part
        };
        crate::sync::lock(&self.checkpointed)
            .insert(TopicPartition::new(topic, index), part.high_watermark());
        part.wake_all();
        Some(part)
    }

    /// Forgets the checkpointed high watermarks of a topic's partitions `from..` (`to` when
    /// given): the partitions are gone.
    fn forget_checkpointed(&self, topic: &str, from: i32, to: Option<i32>) {
        crate::sync::lock(&self.checkpointed).retain(|tp, _| {
            tp.topic != topic || tp.partition < from || to.is_some_and(|t| tp.partition >= t)
        });
    }

    /// Stops hosting a topic's partitions (it was deleted); their waiters are woken and find
    /// them gone.
    pub fn remove_topic(&self, topic: &str) -> Vec<Arc<Partition>> {
        self.forget_checkpointed(topic, 0, None);
        let removed: Vec<Arc<Partition>> = crate::sync::write(&self.partitions)
            .remove(topic)
            .map(|m| m.into_values().collect())
            .unwrap_or_default();
        for p in &removed {
            p.wake_all();
        }
        removed
    }

    /// Stops hosting partitions `from..to` of a topic (a creation undone).
    pub fn remove_partitions(&self, topic: &str, from: i32, to: i32) {
        self.forget_checkpointed(topic, from, Some(to));
        let mut all = crate::sync::write(&self.partitions);
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

    /// Writes every hosted partition's high watermark to the checkpoint file, and those of
    /// partitions not hosted now (offline) as they were last known, so a restart does not
    /// lose them.
    pub fn checkpoint_high_watermarks(&self) -> Result<(), BrokerError> {
        let mut entries: Vec<(TopicPartition, i64)> = self
            .all()
            .iter()
            .map(|p| (TopicPartition::new(&p.topic, p.index), p.high_watermark()))
            .collect();
        entries.extend(
            crate::sync::lock(&self.checkpointed)
                .iter()
                .map(|(tp, hw)| (tp.clone(), *hw)),
        );
        entries.sort();
        entries.dedup_by(|a, b| a.0 == b.0);
        checkpoint::write(self.io.as_ref(), &self.data_dir, &entries)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod txn_tests;
