//! Client quotas and connection-creation rates, as Kafka has them.
//!
//! **What Kafka does.** Quotas are set on entities: a `user` (principal), a `client-id`, both
//! together, or an `ip` address, each by name or as the default for every name without one
//! (KIP-55, KIP-612). They live in the cluster metadata as `ClientQuotaRecord`s, are changed
//! with AlterClientQuotas and read with DescribeClientQuotas. Every broker measures each client
//! on its own (quotas are per broker): the bytes of its Produce requests against
//! `producer_byte_rate`, the bytes of its Fetch answers against `consumer_byte_rate`, the time
//! spent on its requests against `request_percentage` (KIP-124), each as a rate over
//! `quota.window.num` windows of `quota.window.size.seconds`. A request that takes a client
//! over its quota is served, and answered with `throttle_time_ms`, the time after which the
//! client's rate is back at the quota if it sends nothing more; the broker then mutes the
//! client's connection for that time (KIP-219). A throttled fetch is answered empty. New
//! connections are rate-limited broker-wide (`max.connection.creation.rate`, the acceptor
//! pauses) and per address (`connection_creation_rate`, the connection is closed after a
//! delay).
//!
//! **What we do the same.** [`QuotaStore`] keeps the entities and values with Kafka's checks
//! and error messages ([`QuotaStore::alter`] for AlterClientQuotas, [`describe()`] for
//! DescribeClientQuotas, [`QuotaChange`] for the records) and resolves the quota that applies
//! to a (user, client id) in Kafka's precedence, with the usage key Kafka measures it under
//! ([`QuotaStore::resolve`]). [`ClientQuotaManager`] measures request time with Kafka's
//! sampled rate (including its rule for a young rate: at least `quota.window.num - 1` whole
//! windows) and answers Kafka's throttle time ([`rate::throttle_time_ms`]); byte rates are
//! paced by a bucket of one window's worth instead ([`rate::TokenBucket`], ours: the same
//! long-run rate without the ten-second bursts Kafka's rate lets through). [`ConnectionRateLimiter`] is
//! Kafka's connection-rate part of `ConnectionQuotas`. Usage state is bounded (see
//! `quota.sensors.max`) and expires after an hour idle, as Kafka's sensors do.
//!
//! **What the callers do.** The handlers record produce bytes (Kafka records the request's
//! size), fetch bytes (the answer's size; un-recorded and the answer emptied when throttled),
//! and request time with [`request_percentage`] (the time the request's handling took on the
//! broker, without the waits for replication or a long poll: our stand-in for Kafka's
//! request-thread time; requests of other brokers are exempt, and a Produce with `acks=0` is
//! not throttled for request time); the answer carries the largest throttle time, and the
//! connection reads nothing more for that long. Time is always passed in (`now_ms`); nothing
//! here reads a clock.
//!
//! Not done here: the controller mutation rate (`controller_mutation_rate` is stored and
//! checked, not enforced) and Kafka's custom quota callbacks.

mod client;
mod connection;
pub mod describe;
mod entity;
pub mod rate;
mod sensors;
mod store;

#[cfg(test)]
mod tests;

use kafka_protocol::error_code::ErrorCode;
use thiserror::Error;

pub use client::{ClientQuotaManager, ClientQuotaType, request_percentage};
pub use connection::{Admission, ConnectionRateLimiter, UNLIMITED_RATE};
pub use describe::{DescribedQuotas, FilterComponent, describe};
pub use entity::{CLIENT_ID, EntityName, EntityType, IP, QuotaEntity, QuotaKey, USER, ValueKind};
pub use sensors::INACTIVE_SENSOR_EXPIRATION_MS;
pub use store::{AlterEntry, AlterOutcome, QuotaChange, QuotaStore, ResolvedQuota, UsageKey};

/// Why a quota request is refused, with the error code Kafka answers and its message.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum QuotaError {
    /// INVALID_REQUEST (42): a bad entity, key, value or filter.
    #[error("{0}")]
    InvalidRequest(String),
    /// UNSUPPORTED_VERSION (35): a DescribeClientQuotas filter on an entity type Kafka does
    /// not know.
    #[error("{0}")]
    UnsupportedVersion(String),
}

impl QuotaError {
    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self::InvalidRequest(message.into())
    }

    /// The error code a client sees.
    pub fn error_code(&self) -> ErrorCode {
        match self {
            Self::InvalidRequest(_) => ErrorCode::INVALID_REQUEST,
            Self::UnsupportedVersion(_) => ErrorCode::UNSUPPORTED_VERSION,
        }
    }

    /// The message a client sees.
    pub fn message(&self) -> &str {
        match self {
            Self::InvalidRequest(m) | Self::UnsupportedVersion(m) => m,
        }
    }
}

impl From<QuotaError> for crate::error::BrokerError {
    fn from(e: QuotaError) -> Self {
        Self::kafka(e.error_code(), e.message())
    }
}
