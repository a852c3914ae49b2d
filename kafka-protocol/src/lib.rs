//! Zero-copy codec for the Kafka wire protocol: every API key and version (generated from
//! Kafka's message schemas), request and response headers, record batches and compression;
//! a borrowing, allocation-free view of the Produce request ([`view`]); and the records of
//! Kafka's own logs, generated from its internal schemas: KRaft metadata records ([`metadata`])
//! and the coordinators' keys and values ([`coordinator`]). It also owns the value types the
//! clients and the broker share: [`TopicPartition`] and [`record::TimestampType`].
//!
//! The crate is pure: no I/O, no async runtime, no clock.
#![forbid(unsafe_code)]

pub mod codec;
pub mod coordinator;
pub mod error;
pub mod error_code;
pub mod frame;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod metadata;
pub mod primitives;
pub mod record;
pub mod topic_partition;
pub mod view;

pub use bytes::Bytes;
pub use codec::{
    Codec, KStr, Message, RawTaggedField, Reader, UnknownTags, Uuid, VersionRange, Writer,
};
pub use error::{DecodeError, EncodeError};
pub use frame::{
    Request, Response, decode_request, decode_response, encode_request, encode_response,
};
pub use messages::{ApiKey, RequestBody, RequestHeader, ResponseBody, ResponseHeader};
pub use topic_partition::TopicPartition;
pub mod messages;
