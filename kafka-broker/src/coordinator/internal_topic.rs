//! [`InternalTopic`]: one coordinator's internal topic (`__consumer_offsets` for groups,
//! `__transaction_state` for transactions) as the broker keeps it, through the partition
//! layer:
//!
//! - which of its partitions this broker writes: every hosted one on a single node, those it
//!   leads in a cluster ([`InternalTopic::lead`] reads a partition back into its coordinator
//!   and starts writing there, [`InternalTopic::resign`] stops and has the coordinator forget
//!   it);
//! - the [`RecordLog`] the coordinator's shell appends to: one batch per call, appended with
//!   acks=all through the partition layer, which holds the contract: the topic's
//!   `min.insync.replicas` checked before the append (NOT_ENOUGH_REPLICAS, nothing written)
//!   and again once the records are replicated (NOT_ENOUGH_REPLICAS_AFTER_APPEND), within one
//!   timeout per topic (REQUEST_TIMED_OUT);
//! - [`read_partition`]: a partition's batches from its log start to its log end, decoded by
//!   the coordinator.
//!
//! Lock order: appends run under the coordinator's lock and take this topic's partition
//! list and the partition's locks; nothing here calls back into a coordinator while holding
//! a lock of its own.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::record::{RecordBatch, RecordBatchBuilder, RecordBatches, batch::NO_SEQUENCE};

use super::machine::{KeyValue, Producer};
use super::record_log::{AckWait, PartitionOwner, RecordLog};
use crate::clock::Clock;
use crate::error::BrokerError;
use crate::replica::{Acks, BatchSummary, Partition, delayed};

/// How much of a partition one read of [`read_partition`] takes.
const READ_BYTES: usize = 1 << 20;

/// One coordinator's internal topic, as this broker writes and reads it.
pub struct InternalTopic {
    topic: &'static str,
    /// The partitions written here (index = partition; `None`: not written here).
    partitions: RwLock<Vec<Option<Arc<Partition>>>>,
    clock: Clock,
    /// How long an append waits for the in-sync replicas' acknowledgement.
    timeout: Duration,
}

impl std::fmt::Debug for InternalTopic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InternalTopic")
            .field("topic", &self.topic)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl InternalTopic {
    /// `topic`, written nowhere yet; batches are stamped with `clock`'s time, and appends
    /// wait `timeout` at most for their acknowledgement.
    pub fn new(topic: &'static str, clock: Clock, timeout: Duration) -> Self {
        Self {
            topic,
            partitions: RwLock::new(Vec::new()),
            clock,
            timeout,
        }
    }

    pub fn topic(&self) -> &'static str {
        self.topic
    }

    /// Whether partition `index` is written here (its coordinator has it loaded).
    pub fn leads(&self, index: i32) -> bool {
        self.partition(index).is_some()
    }

    fn partition(&self, index: i32) -> Option<Arc<Partition>> {
        let i = usize::try_from(index).ok()?;
        crate::sync::read(&self.partitions).get(i)?.clone()
    }

    fn set(&self, index: i32, partition: Option<Arc<Partition>>) {
        let Ok(i) = usize::try_from(index) else {
            return;
        };
        let mut all = crate::sync::write(&self.partitions);
        if all.len() <= i {
            all.resize(i + 1, None);
        }
        all[i] = partition;
    }

    /// This broker coordinates partition `index` (hosted here as `partition`, which it leads):
    /// the partition is read back into `owner` (its keys answer
    /// COORDINATOR_LOAD_IN_PROGRESS meanwhile, where the coordinator has that state), at the
    /// partition's leader epoch, and written from then on. Appends the coordinator makes
    /// between the load and the start of writing are refused (NOT_COORDINATOR, and the
    /// client retries). Once per leadership: `false` if the partition is written here
    /// already.
    pub fn lead<O: PartitionOwner>(
        &self,
        owner: &O,
        index: i32,
        partition: Arc<Partition>,
    ) -> bool {
        let started = std::time::Instant::now();
        let Some(entries) = self.load(owner, index, partition) else {
            return false;
        };
        tracing::info!(
            topic = self.topic,
            partition = index,
            entries,
            ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            "coordinator partition loaded: this broker coordinates its keys"
        );
        true
    }

    /// [`InternalTopic::lead`] without the log line; how many entries were loaded.
    fn load<O: PartitionOwner>(
        &self,
        owner: &O,
        index: i32,
        partition: Arc<Partition>,
    ) -> Option<usize> {
        if self.leads(index) {
            return None;
        }
        owner.begin_load(index);
        let entries = read_partition(owner, self.topic, &partition);
        let loaded = entries.len();
        owner.load(index, partition.leader_epoch(), entries);
        self.set(index, Some(partition));
        tracing::debug!(
            topic = self.topic,
            partition = index,
            entries = loaded,
            "coordinator partition loaded"
        );
        Some(loaded)
    }

    /// Leads every partition of `partitions` that is hosted (`Some`) and not written here
    /// yet (a single node at start, or when the topic comes into existence); an offline one
    /// stays unloaded (logged). Returns how many partitions and entries were loaded.
    pub fn lead_all<O: PartitionOwner>(
        &self,
        owner: &O,
        partitions: impl IntoIterator<Item = (i32, Option<Arc<Partition>>)>,
    ) -> (usize, usize) {
        let (mut loaded, mut entries) = (0, 0);
        for (index, partition) in partitions {
            match partition {
                Some(p) => {
                    if let Some(n) = self.load(owner, index, p) {
                        loaded += 1;
                        entries += n;
                    }
                }
                None if !self.leads(index) => tracing::error!(
                    topic = self.topic,
                    partition = index,
                    "coordinator partition offline: its keys are not loaded"
                ),
                None => {}
            }
        }
        (loaded, entries)
    }

    /// This broker no longer coordinates partition `index` (another broker leads it): no
    /// more writes there, and `owner` forgets its keys (their requests get NOT_COORDINATOR
    /// and clients find the new coordinator). Returns how many keys went, `None` if the
    /// partition was not written here.
    pub fn resign<O: PartitionOwner>(&self, owner: &O, index: i32) -> Option<usize> {
        if !self.leads(index) {
            return None;
        }
        self.set(index, None);
        let gone = owner.unload(index);
        tracing::info!(
            topic = self.topic,
            partition = index,
            keys = gone,
            "coordinator partition given up"
        );
        Some(gone)
    }
}

impl RecordLog for InternalTopic {
    fn append(
        &self,
        partition: i32,
        records: Vec<KeyValue>,
        producer: Option<Producer>,
    ) -> Result<AckWait, ErrorCode> {
        if records.is_empty() {
            return Ok(AckWait::done());
        }
        let Some(part) = self.partition(partition) else {
            tracing::debug!(
                topic = self.topic,
                partition,
                "coordinator records for a partition not written here"
            );
            return Err(ErrorCode::NOT_LEADER_OR_FOLLOWER);
        };
        let deadline = tokio::time::Instant::now() + self.timeout;
        let now = self.clock.now_ms();
        append_acks_all(part, &records, producer, now, deadline).map_err(|e| {
            tracing::warn!(topic = self.topic, partition, records = records.len(), error = %e,
                "coordinator records not written");
            e.error_code()
        })
    }
}

/// The adapter's one use of the partition layer's write path: `records` as one uncompressed
/// v2 batch (transactional for `producer`, no sequence) appended as leader with acks=all, the
/// acknowledgement waited for until `deadline`.
fn append_acks_all(
    partition: Arc<Partition>,
    records: &[KeyValue],
    producer: Option<Producer>,
    now: i64,
    deadline: tokio::time::Instant,
) -> Result<AckWait, BrokerError> {
    let mut b = RecordBatchBuilder::new();
    if let Some(p) = producer {
        b = b.producer(p.id, p.epoch, NO_SEQUENCE).transactional(true);
    }
    for (key, value) in records {
        b.append(now, Some(key), value.as_deref(), &[])?;
    }
    let summary = BatchSummary {
        producer_id: producer.map_or(-1, |p| p.id),
        producer_epoch: producer.map_or(-1, |p| p.epoch),
        base_sequence: NO_SEQUENCE,
        records: i32::try_from(records.len()).unwrap_or(i32::MAX),
        max_timestamp: now,
        transactional: producer.is_some(),
    };
    let (_, pending) = partition.append_as_leader(b.build_mut()?, &[summary], Acks::All, now)?;
    if pending.is_acknowledged() {
        return Ok(AckWait::done());
    }
    let (topic, index) = (partition.topic.clone(), partition.index);
    Ok(AckWait::pending(async move {
        delayed::complete_append(pending, deadline)
            .await
            .map_err(|e| {
                tracing::warn!(%topic, partition = index, error = %e,
                    "coordinator records not acknowledged");
                e.error_code()
            })
    }))
}

/// Every entry of `topic`'s partition `partition` as `owner` decodes it, from the log start
/// to the log end, in log order. A read error or an undecodable batch ends the read there
/// (logged): what a coordinator loads is a prefix of its log, never a log with holes.
pub fn read_partition<O: PartitionOwner>(
    owner: &O,
    topic: &str,
    partition: &Partition,
) -> Vec<O::Entry> {
    let mut out = Vec::new();
    for_each_batch(partition, topic, |batch| {
        owner.decode(partition.index, batch, &mut out);
    });
    out
}

fn for_each_batch(partition: &Partition, topic: &str, mut on_batch: impl FnMut(&RecordBatch)) {
    let offsets = partition.offsets();
    let end = offsets.log_end;
    let mut offset = offsets.log_start;
    while offset < end {
        let bytes = match partition.read(offset, READ_BYTES, end) {
            Ok(b) => b,
            Err(e) => {
                tracing::error!(topic, partition = partition.index, offset, error = %e,
                    "cannot read the coordinator's records; the rest of this partition is not loaded");
                return;
            }
        };
        let mut next = offset;
        for batch in RecordBatches::new(bytes) {
            let batch = match batch {
                Ok(b) => b,
                Err(e) => {
                    tracing::warn!(topic, partition = partition.index, error = %e,
                        "undecodable batch in a coordinator's topic; stopping this read");
                    return;
                }
            };
            next = next.max(batch.next_offset());
            on_batch(&batch);
        }
        if next <= offset {
            // Nothing readable here (should not happen on a healthy log): stop rather than spin.
            tracing::warn!(
                topic,
                partition = partition.index,
                offset,
                "no progress reading a coordinator's topic; stopping"
            );
            return;
        }
        offset = next;
    }
}

#[cfg(test)]
mod tests;
