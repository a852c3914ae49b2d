//! The producer's error type.

use std::sync::Arc;
use std::time::Duration;

use kafka_net::NetError;
use kafka_protocol::error_code::ErrorCode;

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
    /// The idempotent producer hit an error it cannot recover from (fenced, out of order, ...).
    #[error("producer fenced or in a fatal state: {0}")]
    Fatal(String),
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
            Self::Kafka { code, .. } => Some(*code),
            _ => None,
        }
    }
}
