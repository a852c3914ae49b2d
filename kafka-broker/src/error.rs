//! The broker's error type, sorted by whose fault a failure is, in the base layer: it names
//! no type of a layer above it. Every failure that reaches a client maps to a Kafka error code
//! in one place: [`BrokerError::error_code`].
//!
//! - the operator's: [`BrokerError::Config`] (the broker refuses to start);
//! - the request's: [`BrokerError::Kafka`] (understood, but it cannot be served as asked:
//!   the code says why, be it the client's mistake or the state of a partition or
//!   coordinator);
//! - the machine's: [`BrokerError::Io`] (an operating-system call failed), [`BrokerError::Net`]
//!   (a peer or the network), [`BrokerError::Storage`] (data on disk cannot be read);
//! - a layer's own error that knows its code ([`BrokerError::Layer`], e.g. the log layer's:
//!   an offset out of range is not a storage failure), converted where that layer defines it;
//! - ours: [`BrokerError::Internal`] (a record the broker built cannot be encoded, a metadata
//!   batch its image refuses).

use kafka_protocol::error_code::ErrorCode;
use thiserror::Error;

/// A lower layer's error that says which code a client sees and whether the disk itself
/// failed (so that what failed is worth trying again).
pub trait LayerError: std::error::Error + Send + Sync + 'static {
    fn error_code(&self) -> ErrorCode;
    /// The operating system or the disk failed, not the data.
    fn is_io(&self) -> bool;
}

#[derive(Debug, Error)]
#[non_exhaustive]
pub enum BrokerError {
    /// Bad configuration (refuses to start).
    #[error("configuration: {0}")]
    Config(String),
    /// A request was understood but cannot be served; the code says why.
    #[error("{code}: {message}")]
    Kafka { code: ErrorCode, message: String },
    /// A socket or file operation failed.
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    /// The transport failed.
    #[error(transparent)]
    Net(#[from] kafka_net::NetError),
    /// Broker data on disk (the topic registry, the metadata log, ...) is unreadable.
    #[error("storage: {0}")]
    Storage(String),
    /// A lower layer failed; its own mapping says which code a client sees.
    #[error("{0}")]
    Layer(Box<dyn LayerError>),
    /// A record the broker writes itself could not be encoded.
    #[error("encoding: {0}")]
    Encode(#[from] kafka_protocol::EncodeError),
    /// The broker's own state is inconsistent (a metadata batch the image refuses).
    #[error("internal: {0}")]
    Internal(String),
}

impl BrokerError {
    /// A Kafka error with a message.
    pub fn kafka(code: ErrorCode, message: impl Into<String>) -> Self {
        Self::Kafka {
            code,
            message: message.into(),
        }
    }

    /// The Kafka error code a client sees for this error.
    pub fn error_code(&self) -> ErrorCode {
        match self {
            Self::Kafka { code, .. } => *code,
            Self::Layer(e) => e.error_code(),
            Self::Io(_) | Self::Storage(_) => ErrorCode::KAFKA_STORAGE_ERROR,
            Self::Config(_) => ErrorCode::INVALID_CONFIG,
            Self::Encode(_) | Self::Internal(_) => ErrorCode::UNKNOWN_SERVER_ERROR,
            Self::Net(_) => ErrorCode::NETWORK_EXCEPTION,
        }
    }

    /// Whether what failed is worth trying again later: the machine was at fault (space,
    /// descriptors, an I/O error), not the data.
    pub fn is_io(&self) -> bool {
        match self {
            Self::Layer(e) => e.is_io(),
            Self::Io(_) | Self::Storage(_) => true,
            _ => false,
        }
    }
}
