//! A coordinator's records: where they are written ([`RecordLog`], implemented by the
//! broker's [`InternalTopic`](super::InternalTopic), or [`DiscardRecords`] for a coordinator
//! that keeps nothing), and how a coordinator reads them back when it takes a partition over
//! ([`PartitionOwner`]).

use std::future::Future;
use std::pin::Pin;

use bytes::Bytes;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::record::RecordBatch;

use super::machine::{KeyValue, Producer};

/// Largest decompressed size accepted for one batch read back.
const MAX_BATCH_BYTES: usize = 64 << 20;

/// Where a coordinator's records go.
pub trait RecordLog: Send + Sync + std::fmt::Debug {
    /// Appends `records` as one batch to partition `partition` of the coordinator's topic
    /// (transactional for `producer`, without a sequence). Called under the coordinator's
    /// lock: it writes to the page cache and never waits for I/O or calls back into the
    /// coordinator. An error is the partition layer's code, nothing written; else what the
    /// acknowledgement (acks=all) waits for, awaited with the lock released.
    fn append(
        &self,
        partition: i32,
        records: Vec<KeyValue>,
        producer: Option<Producer>,
    ) -> Result<AckWait, ErrorCode>;
}

type AckFuture = Pin<Box<dyn Future<Output = Result<(), ErrorCode>> + Send + 'static>>;

/// What an append's acknowledgement waits for: nothing (acknowledged already), or a future
/// that resolves once the in-sync replicas have the records (an error is the partition
/// layer's code).
pub struct AckWait(Option<AckFuture>);

impl AckWait {
    /// Acknowledged already.
    pub fn done() -> Self {
        Self(None)
    }

    /// Acknowledged once `wait` resolves.
    pub fn pending(wait: impl Future<Output = Result<(), ErrorCode>> + Send + 'static) -> Self {
        Self(Some(Box::pin(wait)))
    }

    /// Whether nothing is left to wait for.
    pub fn is_done(&self) -> bool {
        self.0.is_none()
    }

    /// Waits for the acknowledgement.
    pub async fn wait(self) -> Result<(), ErrorCode> {
        match self.0 {
            None => Ok(()),
            Some(f) => f.await,
        }
    }
}

impl std::fmt::Debug for AckWait {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.is_done() {
            "AckWait(done)"
        } else {
            "AckWait(pending)"
        })
    }
}

/// A [`RecordLog`] that keeps nothing: every append is acknowledged at once (a coordinator
/// whose state lives in memory only, as in tests).
#[derive(Debug, Default, Clone, Copy)]
pub struct DiscardRecords;

impl RecordLog for DiscardRecords {
    fn append(
        &self,
        _partition: i32,
        _records: Vec<KeyValue>,
        _producer: Option<Producer>,
    ) -> Result<AckWait, ErrorCode> {
        Ok(AckWait::done())
    }
}

/// A coordinator as the owner of its topic's partitions: it reads a partition back when it
/// takes it over, and forgets it when it gives it up (see
/// [`InternalTopic::lead`](super::InternalTopic::lead)).
pub trait PartitionOwner {
    /// One entry of a partition's log as the coordinator replays it.
    type Entry;

    /// The entries of one batch of partition `partition` (control batches included), in log
    /// order, appended to `out`. Undecodable records are skipped with a warning.
    fn decode(&self, partition: i32, batch: &RecordBatch, out: &mut Vec<Self::Entry>);

    /// Before the partition is read: its keys answer COORDINATOR_LOAD_IN_PROGRESS until
    /// [`PartitionOwner::load`] (if the coordinator has such a state).
    fn begin_load(&self, _partition: i32) {}

    /// Takes the partition over at `epoch` (its leader epoch: the transaction coordinator's
    /// epoch) with its entries in log order.
    fn load(&self, partition: i32, epoch: i32, entries: Vec<Self::Entry>);

    /// Gives the partition up (another broker leads it): its keys are forgotten and requests
    /// waiting on them answered NOT_COORDINATOR. Returns how many keys (groups, ids) went.
    fn unload(&self, partition: i32) -> usize;
}

/// The records of one non-control batch of `topic`'s partition `partition` that have a key,
/// as (key, value, offset). An undecodable batch or record ends the batch, a record without a
/// key is skipped; each with a warning.
pub fn for_each_keyed_record(
    topic: &str,
    partition: i32,
    batch: &RecordBatch,
    mut on_record: impl FnMut(&Bytes, Option<&Bytes>, i64),
) {
    let records = match batch.records(MAX_BATCH_BYTES) {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!(topic, partition, offset = batch.base_offset(), error = %e,
                "undecodable batch skipped");
            return;
        }
    };
    for record in records {
        let record = match record {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(topic, partition, offset = batch.base_offset(), error = %e,
                    "undecodable record skipped");
                return;
            }
        };
        let Some(key) = record.key.as_ref() else {
            tracing::warn!(topic, partition, "record without a key skipped");
            continue;
        };
        on_record(key, record.value.as_ref(), record.offset(batch));
    }
}
