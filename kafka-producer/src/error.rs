//! The producer's error type.

use std::sync::Arc;
use std::time::Duration;

use kafka_net::NetError;
use kafka_protocol::error_code::ErrorCode;

pub use crate::transaction::TransactionState;

/// What can go wrong producing records. Cheap to clone: one failed batch fails every record in
/// it with the same error.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ProducerError {
    /// A configuration key has a bad value or keys contradict each other.
    #[error("invalid producer configuration: {0}")]
    Config(String),
    /// The broker answered with a Kafka error code.
    #[error("{topic}-{partition}: broker error {code}{}", message.as_deref().map(|m| format!(": {m}")).unwrap_or_default())]
    Kafka {
        topic: String,
        partition: i32,
        code: ErrorCode,
        message: Option<String>,
    },
    /// A coordinator answered a transactional request with a Kafka error code.
    #[error("{operation}: the coordinator answered {code}")]
    Coordinator {
        operation: &'static str,
        code: ErrorCode,
    },
    /// Metadata for the topic did not arrive within `max.block.ms`.
    #[error("topic {topic} not present in metadata after {after:?} (max.block.ms)")]
    MetadataTimeout { topic: String, after: Duration },
    /// `buffer.memory` stayed exhausted for `max.block.ms`.
    #[error(
        "failed to allocate {size} bytes within {after:?} (buffer.memory exhausted, max.block.ms)"
    )]
    BufferExhausted { size: usize, after: Duration },
    /// The record was not acknowledged within `delivery.timeout.ms`.
    #[error("{topic}-{partition}: record expired after {after:?} (delivery.timeout.ms){}", reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default())]
    DeliveryTimeout {
        topic: String,
        partition: i32,
        after: Duration,
        reason: Option<String>,
    },
    /// A record (or its batch) is larger than `max.request.size` or `buffer.memory`.
    #[error("record of {size} bytes is larger than {limit} ({key})")]
    RecordTooLarge {
        size: usize,
        limit: usize,
        key: &'static str,
    },
    /// The chosen partition does not exist.
    #[error("partition {partition} of topic {topic} does not exist (topic has {count})")]
    UnknownPartition {
        topic: String,
        partition: i32,
        count: i32,
    },
    /// A serializer or the record encoder failed.
    #[error("serialization failed: {0}")]
    Serialization(String),
    /// A transport failure.
    #[error(transparent)]
    Net(Arc<NetError>),
    /// The producer was closed before the record could be delivered.
    #[error("producer closed{}", .0.as_deref().map(|r| format!(": {r}")).unwrap_or_default())]
    Closed(Option<String>),
    /// The producer hit an error it cannot recover from (an idempotent producer out of
    /// order, a transactional one refused by its coordinator, ...): only `close` is left.
    #[error("producer in a fatal state: {0}")]
    Fatal(String),
    /// A newer producer with the same `transactional.id` exists (the coordinator or a
    /// partition answered PRODUCER_FENCED, or INVALID_PRODUCER_EPOCH from the coordinator):
    /// this one can only be closed. A fatal error kept apart so callers can tell.
    #[error("producer fenced: {0}")]
    Fenced(String),
    /// A send of the current transaction failed (or an offset commit in it): the transaction
    /// can only be aborted; after `abort_transaction` the producer is usable again. The cause
    /// is inside.
    #[error("the transaction must be aborted: {0}")]
    Abortable(Box<ProducerError>),
    /// The record's transaction was aborted before the record was sent.
    #[error("transaction aborted before the record was sent{}", .0.as_deref().map(|r| format!(": {r}")).unwrap_or_default())]
    TransactionAborted(Option<String>),
    /// A transactional call in a state that does not allow it (a send outside a transaction,
    /// `begin_transaction` twice, a transactional call on a producer without
    /// `transactional.id`, ...). Nothing changed.
    #[error("{operation} is not allowed in transaction state {state:?}")]
    InvalidTransactionState {
        operation: &'static str,
        state: TransactionState,
    },
    /// A transactional call did not complete within `max.block.ms`. The operation goes on in
    /// the background; calling the same method again waits for it further.
    #[error("{operation} did not complete within {after:?} (max.block.ms)")]
    TransactionTimeout {
        operation: &'static str,
        after: Duration,
    },
}

impl From<NetError> for ProducerError {
    fn from(e: NetError) -> Self {
        Self::Net(Arc::new(e))
    }
}

impl ProducerError {
    /// The Kafka error code, when the broker sent one.
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            Self::Kafka { code, .. } | Self::Coordinator { code, .. } => Some(*code),
            Self::Abortable(cause) => cause.code(),
            _ => None,
        }
    }

    /// Whether this is the fenced error: another producer took over the `transactional.id`.
    pub fn is_fenced(&self) -> bool {
        matches!(self, Self::Fenced(_))
    }

    /// Whether the producer cannot go on after this error (fenced included): close it.
    pub fn is_fatal(&self) -> bool {
        matches!(self, Self::Fatal(_) | Self::Fenced(_))
    }

    /// Whether this error leaves the transaction only to be aborted (after which the
    /// producer is usable again).
    pub fn is_abortable(&self) -> bool {
        matches!(self, Self::Abortable(_))
    }
}
