//! The crate's error type.

use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::{ApiKey, DecodeError, EncodeError};
use thiserror::Error;

/// Everything that can go wrong talking to a broker.
#[derive(Debug, Clone, Error)]
#[non_exhaustive]
pub enum NetError {
    /// The socket failed.
    #[error("i/o error: {0}")]
    Io(Arc<std::io::Error>),
    /// A frame's size prefix is negative.
    #[error("frame size prefix is negative ({0})")]
    NegativeLength(i32),
    /// A frame's size prefix is larger than allowed; refused before allocating.
    #[error("frame of {len} bytes exceeds the maximum of {max}")]
    FrameTooLarge { len: usize, max: usize },
    /// The bytes of a response could not be decoded.
    #[error("{api:?} v{version} response: {source}")]
    Decode {
        api: ApiKey,
        version: i16,
        source: DecodeError,
    },
    /// A request could not be encoded.
    #[error("encoding: {0}")]
    Encode(#[from] EncodeError),
    /// A response carried another correlation id than the oldest request in flight.
    #[error(
        "response correlation id {got} does not match the oldest request in flight ({expected})"
    )]
    CorrelationMismatch { expected: i32, got: i32 },
    /// A response arrived while no request was in flight.
    #[error("unexpected response with correlation id {0} (nothing in flight)")]
    UnexpectedResponse(i32),
    /// A request got no answer within `request.timeout.ms`.
    #[error("{api:?} request (correlation id {correlation_id}) timed out after {after:?}")]
    Timeout {
        api: ApiKey,
        correlation_id: i32,
        after: Duration,
    },
    /// Connecting took longer than the setup timeout.
    #[error("connecting to {addr} timed out after {after:?}")]
    ConnectTimeout { addr: String, after: Duration },
    /// The connection is closed (by us, by the peer, or after an earlier failure).
    #[error("connection closed{}", .0.as_deref().map(|r| format!(": {r}")).unwrap_or_default())]
    Closed(Option<String>),
    /// The connection failed earlier; every request on it fails with that error.
    #[error("connection failed earlier: {0}")]
    Poisoned(Arc<NetError>),
    /// The broker does not support the api, or no version both sides know.
    #[error("broker does not support {api:?}{}", .detail.as_deref().map(|d| format!(" ({d})")).unwrap_or_default())]
    UnsupportedApi { api: ApiKey, detail: Option<String> },
    /// The broker answered with a Kafka error code.
    #[error("{context}: {code}")]
    Kafka { code: ErrorCode, context: String },
    /// Metadata for a topic did not become available within `max.block.ms`.
    #[error("topic {topic} not available after {after:?}{}", .last.map(|c| format!(" (last error {c})")).unwrap_or_default())]
    MetadataTimeout {
        topic: String,
        after: Duration,
        last: Option<ErrorCode>,
    },
    /// The broker's answer does not fit the request (another api, a result left out).
    #[error("unexpected response: {0}")]
    BadResponse(String),
    /// No broker could be reached.
    #[error("no broker reachable ({0})")]
    NoBrokers(String),
    /// The TLS handshake or session failed: an untrusted or misnamed certificate, no
    /// protocol or cipher suite in common, a bad record. Not retried: the same settings fail
    /// the same way.
    #[error("TLS with {addr} failed: {reason}")]
    Tls { addr: String, reason: String },
    /// SASL authentication failed: wrong credentials, a mechanism the broker does not enable,
    /// or a broker that could not prove it knows the password (SCRAM). Not retried.
    #[error("SASL authentication with {addr} failed: {reason}")]
    Authentication { addr: String, reason: String },
    /// Bad configuration or arguments.
    #[error("invalid configuration: {0}")]
    Config(String),
}

impl From<std::io::Error> for NetError {
    fn from(e: std::io::Error) -> Self {
        Self::Io(Arc::new(e))
    }
}

impl NetError {
    /// Whether retrying the request (maybe on a new connection) may succeed.
    pub fn is_retriable(&self) -> bool {
        match self {
            Self::Io(_) | Self::Timeout { .. } | Self::ConnectTimeout { .. } | Self::Closed(_) => {
                true
            }
            Self::Poisoned(inner) => inner.is_retriable(),
            Self::Kafka { code, .. } => code.is_retriable(),
            _ => false,
        }
    }

    /// The Kafka error code, for errors that carry one.
    pub fn error_code(&self) -> Option<ErrorCode> {
        match self {
            Self::Kafka { code, .. } => Some(*code),
            _ => None,
        }
    }
}

/// Checks a top-level error code of a response, turning it into an error with context.
pub fn check(code: i16, context: &str) -> Result<(), NetError> {
    let code = ErrorCode(code);
    if code.is_ok() {
        Ok(())
    } else {
        Err(NetError::Kafka {
            code,
            context: context.to_owned(),
        })
    }
}
