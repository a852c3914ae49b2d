//! Records of the compacted `__transaction_state` topic, in Kafka's format (the generated
//! `TransactionLogKey` and `TransactionLogValue` of `kafka_protocol::coordinator`).
//!
//! | part | layout |
//! |---|---|
//! | key | `i16` version 0, then TransactionLogKey: the transactional id (`i16`-length string) |
//! | value v0 | `i16` 0, producer id, epoch, timeout, state byte, partitions by topic (null in Empty), last update and start timestamps |
//! | value v1 | the same, flexible (compact strings and arrays, tagged fields): previous producer id (tag 0), next producer id (tag 1), client transaction version (tag 2) |
//!
//! A record without a value (a tombstone) removes an expired id. Written values are v0, as
//! Kafka writes them without transaction version 2, unless a field only v1 carries is set;
//! both versions are read. Keys of other versions are not transaction records and are
//! skipped.

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use kafka_protocol::coordinator::transaction_log_value::PartitionsSchema;
use kafka_protocol::coordinator::{
    TransactionCoordinatorKey, TransactionCoordinatorValue, TransactionLogKey, TransactionLogValue,
};
use kafka_protocol::record::RecordBatch;
use kafka_protocol::{DecodeError, EncodeError, Reader};

use super::state::{NO_PRODUCER_ID, TxnState, TxnTransit};
pub use crate::coordinator::TRANSACTION_STATE_TOPIC;
use crate::coordinator::for_each_keyed_record;
use crate::log::TopicPartition;
/// The key version written (the only one).
pub const KEY_VERSION: i16 = 0;

/// What went wrong reading a record.
#[derive(Debug, thiserror::Error)]
pub enum TxnRecordError {
    #[error("malformed __transaction_state record: {0}")]
    Malformed(#[from] DecodeError),
    #[error("unknown __transaction_state value version {0}")]
    UnknownVersion(i16),
    #[error("unknown transaction state byte {0}")]
    UnknownState(i8),
}

/// A `__transaction_state` value: one transactional id's metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnLogValue {
    pub producer_id: i64,
    /// v1 only (tag 0): the producer id of the last committed transaction (TV2); -1 if none.
    pub previous_producer_id: i64,
    /// v1 only (tag 1): the producer id handed out for the next transaction (TV2); -1 if none.
    pub next_producer_id: i64,
    pub producer_epoch: i16,
    pub timeout_ms: i32,
    pub state: TxnState,
    /// The transaction's partitions by topic (empty in Empty, written as null then).
    pub partitions: BTreeMap<String, BTreeSet<i32>>,
    pub last_update_ms: i64,
    pub start_ms: i64,
    /// v1 only (tag 2): the client's transaction version (0 = TV1 semantics here).
    pub client_transaction_version: i16,
}

/// One record: a transactional id and its metadata, or a tombstone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnRecord {
    pub transactional_id: String,
    pub value: Option<TxnLogValue>,
}

impl TxnLogValue {
    /// The value a transition writes.
    pub fn from_transit(t: &TxnTransit) -> Self {
        let mut partitions: BTreeMap<String, BTreeSet<i32>> = BTreeMap::new();
        if t.state != TxnState::Empty {
            for tp in &t.partitions {
                partitions
                    .entry(tp.topic.to_string())
                    .or_default()
                    .insert(tp.partition);
            }
        }
        Self {
            producer_id: t.producer_id,
            previous_producer_id: NO_PRODUCER_ID,
            next_producer_id: NO_PRODUCER_ID,
            producer_epoch: t.producer_epoch,
            timeout_ms: t.timeout_ms,
            state: t.state,
            partitions,
            last_update_ms: t.last_update_ms,
            start_ms: t.start_ms,
            client_transaction_version: 0,
        }
    }

    /// The partitions as a set.
    pub fn topic_partitions(&self) -> BTreeSet<TopicPartition> {
        self.partitions
            .iter()
            .flat_map(|(t, ps)| ps.iter().map(move |p| TopicPartition::new(t.clone(), *p)))
            .collect()
    }

    /// The version this value is written in: 0 unless a field only v1 has is set.
    pub fn version(&self) -> i16 {
        if self.previous_producer_id != NO_PRODUCER_ID
            || self.next_producer_id != NO_PRODUCER_ID
            || self.client_transaction_version != 0
        {
            1
        } else {
            0
        }
    }

    /// The value's bytes (version prefix included).
    pub fn encode(&self) -> Result<Bytes, EncodeError> {
        let partitions = (self.state != TxnState::Empty).then(|| {
            self.partitions
                .iter()
                .map(|(topic, ids)| PartitionsSchema {
                    topic: topic.clone().into(),
                    partition_ids: ids.iter().copied().collect(),
                    ..PartitionsSchema::default()
                })
                .collect()
        });
        let value = TransactionLogValue {
            producer_id: self.producer_id,
            previous_producer_id: self.previous_producer_id,
            next_producer_id: self.next_producer_id,
            producer_epoch: self.producer_epoch,
            transaction_timeout_ms: self.timeout_ms,
            transaction_status: self.state.id(),
            transaction_partitions: partitions,
            transaction_last_update_timestamp_ms: self.last_update_ms,
            transaction_start_timestamp_ms: self.start_ms,
            client_transaction_version: self.client_transaction_version,
            ..TransactionLogValue::default()
        };
        TransactionCoordinatorValue::TransactionLog(value).encode(self.version())
    }

    /// Reads a value (v0 or v1).
    pub fn decode(bytes: &Bytes) -> Result<Self, TxnRecordError> {
        let key = TransactionCoordinatorKey::TransactionLog(TransactionLogKey::default());
        let version = Reader::new(bytes).i16("TransactionLogValue.version")?;
        if !(0..=1).contains(&version) {
            return Err(TxnRecordError::UnknownVersion(version));
        }
        let (TransactionCoordinatorValue::TransactionLog(v), _) =
            TransactionCoordinatorValue::decode(&key, bytes)?;
        let state = TxnState::from_id(v.transaction_status)
            .ok_or(TxnRecordError::UnknownState(v.transaction_status))?;
        let mut partitions: BTreeMap<String, BTreeSet<i32>> = BTreeMap::new();
        if state != TxnState::Empty {
            for p in v.transaction_partitions.unwrap_or_default() {
                partitions
                    .entry(p.topic.as_str().to_owned())
                    .or_default()
                    .extend(p.partition_ids);
            }
        }
        Ok(Self {
            producer_id: v.producer_id,
            previous_producer_id: v.previous_producer_id,
            next_producer_id: v.next_producer_id,
            producer_epoch: v.producer_epoch,
            timeout_ms: v.transaction_timeout_ms,
            state,
            partitions,
            last_update_ms: v.transaction_last_update_timestamp_ms,
            start_ms: v.transaction_start_timestamp_ms,
            client_transaction_version: v.client_transaction_version,
        })
    }
}

/// The key bytes of a transactional id.
pub fn encode_key(transactional_id: &str) -> Result<Bytes, EncodeError> {
    TransactionCoordinatorKey::TransactionLog(TransactionLogKey {
        transactional_id: transactional_id.to_owned().into(),
    })
    .encode(KEY_VERSION)
}

/// The transactional id of key bytes; `None` for keys of other versions (not transaction
/// records, skipped as Kafka does).
pub fn decode_key(bytes: &Bytes) -> Result<Option<String>, TxnRecordError> {
    let version = Reader::new(bytes).i16("TransactionLogKey.version")?;
    if version != KEY_VERSION {
        return Ok(None);
    }
    let (TransactionCoordinatorKey::TransactionLog(k), _) =
        TransactionCoordinatorKey::decode(bytes)?;
    Ok(Some(k.transactional_id.as_str().to_owned()))
}

impl TxnRecord {
    /// The record a transition of `transactional_id` writes (a tombstone for Dead).
    pub fn from_transit(transactional_id: &str, t: &TxnTransit) -> Self {
        Self {
            transactional_id: transactional_id.to_owned(),
            value: (t.state != TxnState::Dead).then(|| TxnLogValue::from_transit(t)),
        }
    }

    /// A tombstone for `transactional_id`.
    pub fn tombstone(transactional_id: &str) -> Self {
        Self {
            transactional_id: transactional_id.to_owned(),
            value: None,
        }
    }

    /// Key and value bytes (no value for a tombstone).
    pub fn encode(&self) -> Result<(Bytes, Option<Bytes>), EncodeError> {
        let key = encode_key(&self.transactional_id)?;
        let value = self.value.as_ref().map(TxnLogValue::encode).transpose()?;
        Ok((key, value))
    }

    /// Reads a record from its key and value bytes; `None` when the key is not a
    /// transaction record.
    pub fn decode(key: &Bytes, value: Option<&Bytes>) -> Result<Option<Self>, TxnRecordError> {
        let Some(transactional_id) = decode_key(key)? else {
            return Ok(None);
        };
        let value = value.map(TxnLogValue::decode).transpose()?;
        Ok(Some(Self {
            transactional_id,
            value,
        }))
    }
}

/// The records of one batch of `__transaction_state` partition `partition`, in log order,
/// appended to `out` (control batches have none). Undecodable records are skipped with a
/// warning.
pub fn decode_batch(partition: i32, batch: &RecordBatch, out: &mut Vec<TxnRecord>) {
    if batch.is_control() {
        return;
    }
    for_each_keyed_record(
        TRANSACTION_STATE_TOPIC,
        partition,
        batch,
        |key, value, offset| match TxnRecord::decode(key, value) {
            Ok(Some(r)) => out.push(r),
            Ok(None) => {}
            Err(e) => tracing::warn!(topic = TRANSACTION_STATE_TOPIC, partition, offset,
                error = %e, "undecodable record skipped"),
        },
    );
}
