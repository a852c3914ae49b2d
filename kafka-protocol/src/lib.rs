//! Zero-copy codec for the Kafka wire protocol: every API key and version (generated from
//! Kafka's message schemas), request and response headers, record batches and compression;
//! and a borrowing, allocation-free view of the Produce request ([`view`]).
//!
//! The crate is pure: no I/O, no async runtime, no clock.
#![forbid(unsafe_code)]

pub mod codec;
pub mod error;
pub mod error_code;
pub mod frame;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
pub mod primitives;
pub mod record;
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
pub mod messages;
