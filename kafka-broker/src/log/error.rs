//! The storage error type and its mapping to Kafka error codes.

use std::io;
use std::path::PathBuf;

use kafka_protocol::error_code::ErrorCode;
use thiserror::Error;

/// Everything that can go wrong in `log/`. [`LogError::error_code`] is the one place that maps
/// a storage failure to the code a client sees.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum LogError {
    /// A read, write, fsync or metadata call failed. Appends that fail this way leave no
    /// partial batch behind.
    #[error("I/O error ({op}) on {}: {source}", path.display())]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// The requested offset is below the log start offset or above the log end offset.
    #[error("offset {offset} is out of range [{log_start_offset}, {log_end_offset}]")]
    OffsetOutOfRange {
        offset: i64,
        log_start_offset: i64,
        log_end_offset: i64,
    },
    /// Bytes on disk are not valid where they must be (a sealed segment below the recovery
    /// point, or a batch header met while serving a read).
    #[error("corrupt segment {} at position {position}: {reason}", file.display())]
    Corrupt {
        file: PathBuf,
        position: u64,
        reason: String,
    },
    /// The records handed to `append` are not a sequence of whole v2 batches.
    #[error("invalid records to append: {0}")]
    InvalidRecords(String),
    /// A follower's append starts below the log end (or a batch overlaps the one before it):
    /// the follower must truncate first.
    #[error("batch at offset {offset} is below the expected next offset {expected}")]
    UnexpectedOffset { offset: i64, expected: i64 },
    /// The records handed to `append` do not fit in one segment.
    #[error("record set of {size} bytes is larger than the segment size {max}")]
    RecordsTooLarge { size: usize, max: u64 },
    /// A configuration value is out of range or unparsable.
    #[error("invalid log config {key}={value}: {reason}")]
    InvalidConfig {
        key: String,
        value: String,
        reason: &'static str,
    },
    /// A topic name that cannot be a Kafka topic (or would escape the data directory).
    #[error("invalid topic name {0:?}")]
    InvalidTopic(String),
    /// The log was deleted (its topic was deleted) while a caller still held it.
    #[error("log {} was deleted", dir.display())]
    Deleted { dir: PathBuf },
    /// The partition is hosted here but its log could not be opened at start.
    #[error("log {} is offline: {reason}", dir.display())]
    Offline { dir: PathBuf, reason: String },
    /// An earlier fsync failed: data written since the last good fsync may be lost, so nothing
    /// after it can be declared durable until the log is reopened (and recovered).
    #[error("log {} failed an fsync earlier ({reason}); reopen it", dir.display())]
    SyncPoisoned { dir: PathBuf, reason: String },
}

impl LogError {
    pub(crate) fn io(op: &'static str, path: impl Into<PathBuf>, source: io::Error) -> Self {
        Self::Io {
            op,
            path: path.into(),
            source,
        }
    }

    pub(crate) fn corrupt(file: impl Into<PathBuf>, position: u64, reason: impl ToString) -> Self {
        Self::Corrupt {
            file: file.into(),
            position,
            reason: reason.to_string(),
        }
    }

    /// The Kafka error code a client gets for this error.
    pub fn error_code(&self) -> ErrorCode {
        match self {
            Self::Io { .. }
            | Self::Corrupt { .. }
            | Self::Offline { .. }
            | Self::SyncPoisoned { .. } => ErrorCode::KAFKA_STORAGE_ERROR,
            Self::OffsetOutOfRange { .. } => ErrorCode::OFFSET_OUT_OF_RANGE,
            Self::InvalidRecords(_) => ErrorCode::CORRUPT_MESSAGE,
            Self::UnexpectedOffset { .. } => ErrorCode::OFFSET_OUT_OF_RANGE,
            Self::RecordsTooLarge { .. } => ErrorCode::RECORD_LIST_TOO_LARGE,
            Self::InvalidConfig { .. } => ErrorCode::INVALID_CONFIG,
            Self::InvalidTopic(_) => ErrorCode::INVALID_TOPIC_EXCEPTION,
            Self::Deleted { .. } => ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
        }
    }

    /// Whether this is an I/O failure (as opposed to a caller or data problem).
    pub fn is_io(&self) -> bool {
        matches!(self, Self::Io { .. } | Self::SyncPoisoned { .. })
    }
}

impl crate::error::LayerError for LogError {
    fn error_code(&self) -> ErrorCode {
        LogError::error_code(self)
    }

    fn is_io(&self) -> bool {
        LogError::is_io(self)
    }
}

impl From<LogError> for crate::error::BrokerError {
    fn from(e: LogError) -> Self {
        Self::Layer(Box::new(e))
    }
}
