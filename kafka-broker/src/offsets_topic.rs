//! The internal `__consumer_offsets` topic as the group coordinator's storage: a
//! [`RecordSink`] appending the coordinator's records to the topic's partitions, and the
//! start-up read of those partitions that the coordinator replays.
//!
//! Lock order: the sink runs under the coordinator's lock and takes partition (and log)
//! locks; nothing takes the coordinator's lock while holding a partition lock (partition
//! locks are private to [`Partition`], whose methods never call the coordinator).

use std::sync::{Arc, RwLock};

use bytes::BytesMut;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::record::{
    ControlRecordType, RecordBatch, RecordBatchBuilder, RecordBatches, batch::NO_SEQUENCE,
    parse_end_txn_marker,
};

use crate::error::BrokerError;
use crate::group::{DurableWait, LogEntry, OffsetsRecord, RecordSink, TxnBatch};
use crate::replica::{Acks, BatchSummary, Partition, PendingAck, delayed};

/// The internal topic holding committed offsets and group metadata.
pub const OFFSETS_TOPIC: &str = "__consumer_offsets";

/// Largest decompressed size accepted for one batch read back at start-up.
const MAX_BATCH_BYTES: usize = 64 << 20;

/// The partitions of `__consumer_offsets` the group coordinator writes to: on a single node
/// every partition once hosted; in a cluster those this broker leads.
#[derive(Debug, Default)]
pub struct OffsetsPartitions {
    partitions: RwLock<Vec<Option<Arc<Partition>>>>,
}

impl OffsetsPartitions {
    /// Sets the partitions (index = partition; `None` for one that is offline).
    pub fn set(&self, partitions: Vec<Option<Arc<Partition>>>) {
        *crate::sync::write(&self.partitions) = partitions;
    }

    /// Sets one partition (`None`: not written here).
    pub fn set_one(&self, index: i32, partition: Option<Arc<Partition>>) {
        let Ok(i) = usize::try_from(index) else {
            return;
        };
        let mut all = crate::sync::write(&self.partitions);
        if all.len() <= i {
            all.resize(i + 1, None);
        }
        all[i] = partition;
    }

    /// Whether partition `index` is written here.
    pub fn has(&self, index: i32) -> bool {
        self.partition(index).is_some()
    }

    pub(crate) fn partition(&self, index: i32) -> Option<Arc<Partition>> {
        let i = usize::try_from(index).ok()?;
        crate::sync::read(&self.partitions).get(i)?.clone()
    }
}

/// A [`RecordSink`] writing to `__consumer_offsets` through the partition layer: each call
/// appends one v2 batch per partition touched (a page-cache write, under the coordinator's
/// lock) and hands back what the acknowledgement waits for (the group-commit fsync under
/// `flush.messages=1`), which the coordinator awaits with its lock released.
#[derive(Debug)]
pub struct OffsetsTopicSink {
    partitions: Arc<OffsetsPartitions>,
    num_partitions: i32,
}

impl OffsetsTopicSink {
    pub fn new(partitions: Arc<OffsetsPartitions>, num_partitions: i32) -> Self {
        Self {
            partitions,
            num_partitions: num_partitions.max(1),
        }
    }

    /// Appends one batch to partition `index` through the partition layer (transactional for
    /// `txn`'s producer: its id and epoch, no sequence); what the answer must still wait for,
    /// if anything.
    fn append_to(
        &self,
        index: i32,
        records: &[OffsetsRecord],
        txn: Option<(i64, i16)>,
    ) -> Result<Option<PendingAck>, BrokerError> {
        let Some(partition) = self.partitions.partition(index) else {
            return Err(BrokerError::kafka(
                ErrorCode::NOT_COORDINATOR,
                format!("{OFFSETS_TOPIC}-{index} is not hosted (offline or not yet open)"),
            ));
        };
        let now = crate::broker::now_ms();
        let (batch, count) = encode_batch(records, now, txn)?;
        let (producer_id, producer_epoch) = txn.unwrap_or((-1, -1));
        let summary = BatchSummary {
            producer_id,
            producer_epoch,
            base_sequence: NO_SEQUENCE,
            records: count,
            max_timestamp: now,
            transactional: txn.is_some(),
        };
        let (_, pending) = partition.append_as_leader(batch, &[summary], now)?;
        Ok((!pending.is_acknowledged()).then_some(pending))
    }
}

/// How long a commit waits for its records' acknowledgement (Kafka's
/// `offsets.commit.timeout.ms` default).
const COMMIT_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(5_000);

impl RecordSink for OffsetsTopicSink {
    fn append(&self, records: Vec<OffsetsRecord>) -> Result<Option<DurableWait>, ErrorCode> {
        // One batch per partition, records in their original order within it.
        let mut by_partition: Vec<(i32, Vec<OffsetsRecord>)> = Vec::new();
        for record in records {
            let p = crate::group::partition_for(record.key.group(), self.num_partitions);
            match by_partition.iter_mut().find(|(i, _)| *i == p) {
                Some((_, list)) => list.push(record),
                None => by_partition.push((p, vec![record])),
            }
        }
        let mut result = Ok(());
        let mut waits = Vec::new();
        for (p, list) in by_partition {
            match self.append_to(p, &list, None) {
                Ok(Some(pending)) => waits.push(pending),
                Ok(None) => {}
                Err(e) => {
                    tracing::error!(
                        topic = OFFSETS_TOPIC,
                        partition = p,
                        records = list.len(),
                        error = %e,
                        "cannot write group coordinator records"
                    );
                    // Kafka answers a commit whose records could not be written with
                    // NOT_COORDINATOR (storage errors): the client finds the coordinator
                    // again and retries.
                    result = Err(ErrorCode::NOT_COORDINATOR);
                }
            }
        }
        result?;
        Ok(acknowledged(waits, |_| ErrorCode::NOT_COORDINATOR))
    }

    fn append_transactional(&self, batch: TxnBatch) -> Result<Option<DurableWait>, ErrorCode> {
        let Some(first) = batch.records.first() else {
            return Ok(None);
        };
        // A TxnOffsetCommit names one group: one partition, one batch.
        let p = crate::group::partition_for(first.key.group(), self.num_partitions);
        let txn = Some((batch.producer_id, batch.producer_epoch));
        match self.append_to(p, &batch.records, txn) {
            Ok(pending) => Ok(acknowledged(pending.into_iter().collect(), txn_error)),
            Err(e) => {
                tracing::warn!(
                    topic = OFFSETS_TOPIC,
                    partition = p,
                    producer_id = batch.producer_id,
                    producer_epoch = batch.producer_epoch,
                    error = %e,
                    "cannot write transactional offset commit"
                );
                Err(txn_error(&e))
            }
        }
    }
}

/// What a failed transactional offset commit is answered with (Kafka's mapping of the append
/// error): replication trouble is COORDINATOR_NOT_AVAILABLE, a lost leadership or storage
/// NOT_COORDINATOR, an oversized batch INVALID_COMMIT_OFFSET_SIZE; the producer's own errors
/// (a fenced epoch, a transaction in the wrong state) go back as they are.
fn txn_error(e: &BrokerError) -> ErrorCode {
    match e {
        BrokerError::Kafka { code, .. } => match *code {
            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
            | ErrorCode::NOT_ENOUGH_REPLICAS
            | ErrorCode::NOT_ENOUGH_REPLICAS_AFTER_APPEND
            | ErrorCode::REQUEST_TIMED_OUT => ErrorCode::COORDINATOR_NOT_AVAILABLE,
            ErrorCode::NOT_LEADER_OR_FOLLOWER | ErrorCode::KAFKA_STORAGE_ERROR => {
                ErrorCode::NOT_COORDINATOR
            }
            ErrorCode::MESSAGE_TOO_LARGE
            | ErrorCode::RECORD_LIST_TOO_LARGE
            | ErrorCode::INVALID_FETCH_SIZE => ErrorCode::INVALID_COMMIT_OFFSET_SIZE,
            other => other,
        },
        // Storage and other local failures.
        _ => ErrorCode::NOT_COORDINATOR,
    }
}

/// What an append's answer waits for: nothing, or every in-sync replica's acknowledgement
/// (as Kafka acknowledges offset commits; on a single node: once durable, in durable mode),
/// waited for outside every lock; a failure is answered with `error`'s code for it.
fn acknowledged(
    waits: Vec<PendingAck>,
    error: fn(&BrokerError) -> ErrorCode,
) -> Option<DurableWait> {
    if waits.is_empty() {
        return None;
    }
    Some(Box::pin(async move {
        let deadline = tokio::time::Instant::now() + COMMIT_TIMEOUT;
        for r in delayed::complete_appends(waits, Acks::All, deadline).await {
            if let Err(e) = r {
                tracing::error!(topic = OFFSETS_TOPIC, error = %e,
                    "group coordinator records not acknowledged");
                return Err(error(&e));
            }
        }
        Ok(())
    }))
}

/// One uncompressed v2 batch of `records` (a tombstone has a null value); transactional for
/// `txn`'s producer (id, epoch) without a sequence.
fn encode_batch(
    records: &[OffsetsRecord],
    now: i64,
    txn: Option<(i64, i16)>,
) -> Result<(BytesMut, i32), BrokerError> {
    let mut b = RecordBatchBuilder::new();
    if let Some((producer_id, producer_epoch)) = txn {
        b = b
            .producer(producer_id, producer_epoch, NO_SEQUENCE)
            .transactional(true);
    }
    let mut count = 0i32;
    for r in records {
        let (key, value) = r.encode()?;
        b.append(now, Some(&key), value.as_deref(), &[])?;
        count = count.saturating_add(1);
    }
    Ok((b.build_mut()?, count))
}

/// Every entry of one `__consumer_offsets` partition, from the log start to the log end, in
/// log order: records (of transactional batches marked with their producer) and the COMMIT
/// and ABORT markers of control batches. Undecodable records are skipped with a warning; a
/// read error stops the partition there (with an error logged).
pub fn read_partition(partition: &Partition) -> Vec<LogEntry> {
    let mut out = Vec::new();
    for_each_batch(partition, OFFSETS_TOPIC, |batch| {
        if batch.is_control() {
            match parse_end_txn_marker(batch) {
                Ok(Some((kind, _))) => out.push(LogEntry::Marker {
                    offsets_partition: partition.index,
                    producer_id: batch.producer_id(),
                    commit: kind == ControlRecordType::Commit,
                }),
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(topic = OFFSETS_TOPIC, partition = partition.index,
                        offset = batch.base_offset(), error = %e, "undecodable control batch skipped");
                }
            }
            return;
        }
        let producer =
            (batch.is_transactional() && batch.producer_id() >= 0).then(|| batch.producer_id());
        for_each_keyed_record(partition, OFFSETS_TOPIC, batch, |key, value, offset| {
            match OffsetsRecord::decode(key, value) {
                Ok(Some(r)) => out.push(match producer {
                    Some(producer_id) => LogEntry::Transactional {
                        producer_id,
                        record: r,
                    },
                    None => LogEntry::Record(r),
                }),
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(topic = OFFSETS_TOPIC, partition = partition.index,
                        offset, error = %e, "undecodable record skipped");
                }
            }
        });
    });
    out
}

/// Every batch of a coordinator's partition (`topic` names it in the logs), from the log
/// start to the log end, in log order. A read error or an undecodable batch stops the read
/// there (logged): what a coordinator loads is a prefix of its log, never a log with holes.
pub(crate) fn for_each_batch(
    partition: &Partition,
    topic: &str,
    mut on_batch: impl FnMut(&RecordBatch),
) {
    let offsets = partition.offsets();
    let end = offsets.log_end;
    let mut offset = offsets.log_start;
    while offset < end {
        let bytes = match partition.read(offset, 1 << 20, end) {
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
                    break;
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

/// The records of one (non-control) batch that have a key, as (key, value, offset);
/// undecodable batches and records, and records without a key, are skipped with a warning.
pub(crate) fn for_each_keyed_record(
    partition: &Partition,
    topic: &str,
    batch: &RecordBatch,
    mut on_record: impl FnMut(&bytes::Bytes, Option<&bytes::Bytes>, i64),
) {
    let records = match batch.records(MAX_BATCH_BYTES) {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!(topic, partition = partition.index,
                offset = batch.base_offset(), error = %e, "undecodable batch skipped");
            return;
        }
    };
    for record in records {
        let record = match record {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(topic, partition = partition.index,
                    offset = batch.base_offset(), error = %e, "undecodable record skipped");
                return;
            }
        };
        let Some(key) = record.key.as_ref() else {
            tracing::warn!(
                topic,
                partition = partition.index,
                "record without a key skipped"
            );
            continue;
        };
        on_record(key, record.value.as_ref(), record.offset(batch));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::group::{CommitPartition, CommitRequest};
    use kafka_protocol::error_code::ErrorCode;

    fn open(dir: &std::path::Path) -> crate::Broker {
        let config = crate::BrokerConfig {
            server: crate::config::ServerConfig {
                data_dir: dir.to_path_buf(),
                ..Default::default()
            },
            group: crate::config::GroupConfig {
                offsets_topic_num_partitions: 4,
                ..Default::default()
            },
            ..Default::default()
        };
        crate::Broker::open(config).unwrap()
    }

    fn commit(broker: &crate::Broker, group: &str, partition: i32, offset: i64) {
        let errors = futures::executor::block_on(broker.groups.commit_offsets(&CommitRequest {
            group_id: group.into(),
            generation_id: -1,
            member_id: String::new(),
            group_instance_id: None,
            retention_ms: None,
            partitions: vec![CommitPartition {
                topic: "t".into(),
                partition,
                offset,
                leader_epoch: -1,
                metadata: Some(format!("{group}-{offset}")),
                commit_timestamp: None,
            }],
        }));
        assert_eq!(errors, vec![ErrorCode::NONE]);
    }

    fn committed(broker: &crate::Broker, group: &str, partition: i32) -> (i64, String) {
        let f =
            broker
                .groups
                .fetch_offsets(group, Some(&[("t".to_owned(), vec![partition])]), false);
        (f[0].offset, f[0].metadata.clone())
    }

    #[test]
    fn the_offsets_topic_is_created_compacted_and_replayed_with_tombstones() {
        let dir = tempfile::tempdir().unwrap();
        {
            let broker = open(dir.path());
            let meta = broker.topic(OFFSETS_TOPIC).unwrap();
            assert_eq!(meta.partitions, 4);
            assert_eq!(meta.configs["cleanup.policy"], "compact");
            // Compacted only: never trimmed by time or size.
            let c = crate::broker::log_config(&broker.config, Some(&meta.configs));
            assert_eq!((c.retention_ms, c.retention_bytes), (-1, -1));
            assert!(broker.delete_topic(OFFSETS_TOPIC).is_err());
            for g in ["a", "b", "c", "d", "e"] {
                commit(&broker, g, 0, 5);
                commit(&broker, g, 1, 6);
            }
            commit(&broker, "a", 0, 50);
            assert_eq!(
                broker.groups.delete_groups(&["b".to_owned()]),
                vec![ErrorCode::NONE]
            );
            let deleted = broker.groups.delete_offsets("c", &[("t".to_owned(), 1)]);
            assert_eq!(deleted, Ok(vec![ErrorCode::NONE]));
            // Each group's records are in its own partition.
            let p = crate::group::partition_for("a", 4);
            let records = read_partition(&broker.partition(OFFSETS_TOPIC, p).unwrap());
            assert!(!records.is_empty());
            assert!(records.iter().all(|r| matches!(r, LogEntry::Record(r)
                    if crate::group::partition_for(r.key.group(), 4) == p)));
            // No clean close: what a kill -9 leaves.
        }
        let broker = open(dir.path());
        assert_eq!(committed(&broker, "a", 0), (50, "a-50".into()));
        assert_eq!(committed(&broker, "a", 1), (6, "a-6".into()));
        assert_eq!(committed(&broker, "b", 0).0, -1, "deleted group came back");
        assert_eq!(committed(&broker, "c", 0), (5, "c-5".into()));
        assert_eq!(committed(&broker, "c", 1).0, -1, "deleted offset came back");
        assert_eq!(committed(&broker, "e", 1), (6, "e-6".into()));
        let groups = broker.groups.list(&[], &[]);
        let mut ids: Vec<_> = groups.iter().map(|g| g.group_id.clone()).collect();
        ids.sort();
        assert_eq!(ids, ["a", "c", "d", "e"]);
    }

    fn txn_commit(broker: &crate::Broker, group: &str, pid: i64, partition: i32, offset: i64) {
        let request = crate::group::TxnCommitRequest {
            transactional_id: format!("tx-{pid}"),
            group_id: group.into(),
            producer_id: pid,
            producer_epoch: 1,
            generation_id: -1,
            member_id: String::new(),
            group_instance_id: None,
            partitions: vec![CommitPartition {
                topic: "t".into(),
                partition,
                offset,
                leader_epoch: -1,
                metadata: None,
                commit_timestamp: None,
            }],
        };
        let errors = futures::executor::block_on(broker.groups.txn_commit_offsets(&request));
        assert_eq!(errors, vec![ErrorCode::NONE]);
    }

    /// Appends a COMMIT or ABORT marker of `pid` to the group's offsets partition, as the
    /// transaction coordinator does, and tells the group coordinator.
    fn marker(broker: &crate::Broker, group: &str, pid: i64, commit: bool) {
        let index = crate::group::partition_for(group, 4);
        let part = broker.partition(OFFSETS_TOPIC, index).unwrap();
        let kind = if commit {
            ControlRecordType::Commit
        } else {
            ControlRecordType::Abort
        };
        let now = crate::broker::now_ms();
        let batch = kafka_protocol::record::end_txn_marker_batch(kind, pid, 1, 0, now).unwrap();
        let summary = BatchSummary {
            producer_id: pid,
            producer_epoch: 1,
            base_sequence: NO_SEQUENCE,
            records: 1,
            max_timestamp: now,
            transactional: true,
        };
        part.append_as_leader(BytesMut::from(&batch[..]), &[summary], now)
            .unwrap();
        broker.groups.complete_transaction(index, pid, commit);
    }

    #[test]
    fn transactional_offsets_are_written_as_the_producers_batches_and_replayed_by_marker() {
        let dir = tempfile::tempdir().unwrap();
        {
            let broker = open(dir.path());
            commit(&broker, "a", 0, 5);
            txn_commit(&broker, "a", 70, 0, 50);
            // The batch is the producer's, transactional, without a sequence.
            let p = crate::group::partition_for("a", 4);
            let part = broker.partition(OFFSETS_TOPIC, p).unwrap();
            let bytes = part.read(0, 1 << 20, part.offsets().log_end).unwrap();
            let batches: Vec<_> = RecordBatches::new(bytes).map(Result::unwrap).collect();
            let last = batches.last().unwrap();
            assert!(last.is_transactional() && !last.is_control());
            assert_eq!(
                (
                    last.producer_id(),
                    last.producer_epoch(),
                    last.base_sequence()
                ),
                (70, 1, -1)
            );
            assert!(matches!(
                read_partition(&part).last(),
                Some(LogEntry::Transactional {
                    producer_id: 70,
                    ..
                })
            ));
            assert_eq!(committed(&broker, "a", 0).0, 5);
            marker(&broker, "a", 70, true);
            assert_eq!(committed(&broker, "a", 0).0, 50);
            // Aborted: the abort marker drops it, before and after the restart.
            txn_commit(&broker, "a", 71, 1, 61);
            marker(&broker, "a", 71, false);
            // Left open: no marker before the restart.
            txn_commit(&broker, "b", 72, 0, 70);
            assert!(matches!(
                read_partition(&part).last(),
                Some(LogEntry::Marker {
                    producer_id: 71,
                    commit: false,
                    ..
                })
            ));
        }
        let broker = open(dir.path());
        assert_eq!(committed(&broker, "a", 0).0, 50);
        assert_eq!(committed(&broker, "a", 1).0, -1);
        let unstable = broker
            .groups
            .fetch_offsets("b", Some(&[("t".to_owned(), vec![0])]), true);
        assert_eq!(unstable[0].error, ErrorCode::UNSTABLE_OFFSET_COMMIT);
        // The open transaction ends after the restart.
        marker(&broker, "b", 72, true);
        assert_eq!(committed(&broker, "b", 0).0, 70);
        drop(broker);
        let broker = open(dir.path());
        assert_eq!(committed(&broker, "b", 0).0, 70);
    }
}
