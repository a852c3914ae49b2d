//! The crate's error type.

use std::time::Duration;

use kafka_net::NetError;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::{DecodeError, EncodeError};
use thiserror::Error;

use crate::types::TopicPartition;

/// Everything that can go wrong consuming. Cheap to clone: an error found by the background
/// fetcher is kept and handed to every `poll` until the application deals with it.
#[derive(Debug, Clone, Error)]
#[non_exhaustive]
pub enum ConsumerError {
    /// A configuration key has a value that cannot be used.
    #[error("invalid value {value:?} for {key}: {reason}")]
    Config {
        key: String,
        value: String,
        reason: String,
    },
    /// Settings that contradict each other (the message names the keys).
    #[error("invalid consumer configuration: {0}")]
    InvalidConfig(String),
    /// A transport failure (connection lost, request timed out, broker unreachable).
    #[error(transparent)]
    Net(#[from] NetError),
    /// The broker answered with a Kafka error code.
    #[error("{context}: {code}")]
    Kafka { code: ErrorCode, context: String },
    /// The partition has no committed offset (or no group) and `auto.offset.reset=none`.
    #[error("no committed offset for {0} and auto.offset.reset=none: seek first")]
    NoOffsetForPartition(TopicPartition),
    /// The fetch position is outside the log and `auto.offset.reset=none`.
    #[error("offset {offset} is out of range for {tp} and auto.offset.reset=none: seek first")]
    OffsetOutOfRange { tp: TopicPartition, offset: i64 },
    /// The leader's log ends below our position for the epoch we read last (KIP-320), and
    /// `auto.offset.reset=none`: records we returned are gone from the log.
    #[error(
        "log truncation detected for {tp}: position {offset} (epoch {epoch:?}) is past the end \
         of that epoch on the leader ({}): seek first",
        .end_offset.map_or_else(|| "end unknown".to_owned(), |o| format!("end offset {o}"))
    )]
    LogTruncation {
        tp: TopicPartition,
        offset: i64,
        epoch: Option<i32>,
        /// Where the logs diverge (`None` when the leader does not know the epoch at all).
        end_offset: Option<i64>,
    },
    /// A record batch failed its CRC check or could not be decoded. The position stays at
    /// the batch: seek past it to go on.
    #[error("corrupt record data in {tp} at offset {offset}: {source}")]
    CorruptRecord {
        tp: TopicPartition,
        offset: i64,
        source: DecodeError,
    },
    /// The next batch is larger than the bytes a fetch may return (a broker older than
    /// KIP-74 keeps answering with a partial batch).
    #[error(
        "the batch at offset {offset} of {tp} is larger than the {max} bytes a fetch may \
         return: raise max.partition.fetch.bytes / fetch.max.bytes"
    )]
    RecordTooLarge {
        tp: TopicPartition,
        offset: i64,
        max: usize,
    },
    /// The call names a partition this consumer is not assigned.
    #[error("{0} is not assigned to this consumer")]
    NotAssigned(TopicPartition),
    /// The call needs `group.id`.
    #[error("{0} needs group.id to be set")]
    NoGroupId(&'static str),
    /// The operation did not finish in time.
    #[error("{what} timed out after {after:?}{}", .last.as_deref().map(|l| format!(" (last error: {l})")).unwrap_or_default())]
    Timeout {
        what: String,
        after: Duration,
        last: Option<String>,
    },
    /// Too many `commit_async` calls waiting for the coordinator.
    #[error("{0} offset commits are already queued")]
    CommitQueueFull(usize),
    /// The broker's answer does not fit the request.
    #[error("unexpected response: {0}")]
    BadResponse(String),
    /// The consumer was closed.
    #[error("the consumer is closed")]
    Closed,
    /// The call is not allowed in the consumer's current mode (e.g. `assign` while
    /// subscribed to topics: the two are exclusive, as in the Java client).
    #[error("{0}")]
    Misuse(String),
    /// Bytes from a peer (group member metadata, an assignment, assignor user data) are
    /// malformed.
    #[error("malformed {what}: {source}")]
    Malformed {
        what: &'static str,
        #[source]
        source: DecodeError,
    },
    /// A value cannot be written in the requested format or version.
    #[error("cannot encode {what}: {source}")]
    Encode {
        what: &'static str,
        #[source]
        source: EncodeError,
    },
    /// Metadata gave a topic a negative partition count (assignors refuse it).
    #[error("topic {topic} has a negative partition count ({count})")]
    InvalidPartitionCount { topic: String, count: i32 },
    /// The same member id appears twice in the group (assignors refuse it).
    #[error("member {member_id} appears more than once in the group")]
    DuplicateMember { member_id: String },
    /// Under the cooperative protocol an assignment gives partitions straight to a new owner
    /// while another member still owns them.
    #[error(
        "the cooperative protocol forbids reassigning partitions still owned by another member: {partitions:?}"
    )]
    CooperativeViolation { partitions: Vec<TopicPartition> },
    /// An assignor broke one of its own invariants (a bug, reported instead of a panic).
    #[error("{assignor} assignor bug: {detail}")]
    AssignorBug {
        assignor: &'static str,
        detail: String,
    },
}

impl ConsumerError {
    /// The Kafka error code, for errors that carry one.
    pub fn error_code(&self) -> Option<ErrorCode> {
        match self {
            Self::Kafka { code, .. } => Some(*code),
            Self::Net(e) => e.error_code(),
            _ => None,
        }
    }

    /// Whether trying again later may succeed.
    pub fn is_retriable(&self) -> bool {
        match self {
            Self::Kafka { code, .. } => code.is_retriable(),
            Self::Net(e) => e.is_retriable(),
            Self::Timeout { .. } | Self::CommitQueueFull(_) => true,
            _ => false,
        }
    }

    pub(crate) fn kafka(code: ErrorCode, context: impl Into<String>) -> Self {
        Self::Kafka {
            code,
            context: context.into(),
        }
    }
}

/// Result alias of the crate.
pub type Result<T, E = ConsumerError> = std::result::Result<T, E>;
