//! The broker's error type. Every failure that reaches a client maps to a Kafka error code in
//! one place: [`BrokerError::error_code`].

use kafka_protocol::error_code::ErrorCode;
use thiserror::Error;

#[derive(Debug, Error)]
#[non_exhaustive]
pub enum BrokerError {
    /// Bad configuration (refuses to start).
    #[error("configuration: {0}")]
    Config(String),
    /// A socket or file operation failed.
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
    /// The transport failed.
    #[error(transparent)]
    Net(#[from] kafka_net::NetError),
    /// The log layer failed; its own mapping says which code a client sees (an offset out of
    /// range is not a storage failure).
    #[error(transparent)]
    Log(#[from] crate::log::LogError),
    /// A metadata record batch does not fit the metadata image (it is not applied).
    #[error(transparent)]
    Image(#[from] crate::cluster::image::ImageError),
    /// A record the broker writes itself could not be encoded.
    #[error("encoding: {0}")]
    Encode(#[from] kafka_protocol::EncodeError),
    /// Broker metadata on disk (the topic registry, ...) is unreadable.
    #[error("storage: {0}")]
    Storage(String),
    /// A request was understood but cannot be served; the code says why.
    #[error("{code}: {message}")]
    Kafka { code: ErrorCode, message: String },
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
            Self::Log(e) => e.error_code(),
            Self::Io(_) | Self::Storage(_) => ErrorCode::KAFKA_STORAGE_ERROR,
            Self::Config(_) => ErrorCode::INVALID_CONFIG,
            Self::Encode(_) | Self::Image(_) => ErrorCode::UNKNOWN_SERVER_ERROR,
            Self::Net(_) => ErrorCode::NETWORK_EXCEPTION,
        }
    }
}
