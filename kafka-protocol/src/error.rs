//! The crate's error types: one for decoding bytes, one for encoding values.

use thiserror::Error;

/// Why bytes could not be decoded.
///
/// `field` names are `"Struct.Field"` as in Kafka's message schemas, so an error points at the
/// exact place in the message; [`DecodeError::InMessage`] adds the message name and version.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The input ended before the field was complete.
    #[error("truncated input reading {field}: need {need} bytes, {have} left")]
    Truncated {
        field: &'static str,
        need: usize,
        have: usize,
    },
    /// A value that cannot be valid (bad varint, bad UTF-8, negative length, ...).
    #[error("invalid {field}: {reason}")]
    Invalid {
        field: &'static str,
        reason: &'static str,
    },
    /// A length or count read from the wire is larger than what remains or than a limit.
    #[error("{field}: length {len} exceeds the limit of {max} bytes")]
    TooLarge {
        field: &'static str,
        len: u64,
        max: u64,
    },
    /// A null where the version does not allow one.
    #[error("{field} is null, which version {version} does not allow")]
    NullNotAllowed { field: &'static str, version: i16 },
    /// The api key is not one Kafka defines (or this crate knows).
    #[error("unknown api key {api_key}")]
    UnknownApiKey { api_key: i16 },
    /// A record (in one of Kafka's internal logs) of a type this crate does not know.
    #[error("unknown {what} type {record_type}")]
    UnknownRecordType {
        what: &'static str,
        record_type: i16,
    },
    /// A reader of one api (such as [`crate::view::ProduceRequestView`]) was given a request of
    /// another, known api.
    #[error(
        "api key {api_key} (version {version}) where {expected} (api key {expected_api_key}) was expected"
    )]
    UnexpectedApiKey {
        expected: &'static str,
        expected_api_key: i16,
        api_key: i16,
        version: i16,
    },
    /// The version is outside the message's valid versions.
    #[error("{message} (api key {api_key}) has no version {version}")]
    UnsupportedVersion {
        message: &'static str,
        api_key: i16,
        version: i16,
    },
    /// A checksum did not match.
    #[error("{what} checksum mismatch: stored {stored:#010x}, computed {computed:#010x}")]
    Crc {
        what: &'static str,
        stored: u32,
        computed: u32,
    },
    /// A record batch or message uses a compression codec we do not know.
    #[error("unknown compression codec {codec}")]
    UnknownCompression { codec: u8 },
    /// Decompression failed or its output went past the allowed maximum.
    #[error("{codec} decompression failed: {reason}")]
    Decompression { codec: &'static str, reason: String },
    /// Context: the message and version being decoded when `source` happened.
    #[error("decoding {message} v{version}: {source}")]
    InMessage {
        message: &'static str,
        version: i16,
        source: Box<DecodeError>,
    },
}

impl DecodeError {
    /// The innermost error, without the message context.
    pub fn root(&self) -> &Self {
        match self {
            Self::InMessage { source, .. } => source.root(),
            other => other,
        }
    }

    /// Wraps the error with the message and version it happened in.
    pub fn in_message(self, message: &'static str, version: i16) -> Self {
        Self::InMessage {
            message,
            version,
            source: Box::new(self),
        }
    }
}

/// Why a value could not be encoded.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum EncodeError {
    /// The field holds a non-default value and the version has no place for it.
    #[error("{field} has a non-default value but version {version} cannot carry it")]
    FieldNotAvailable { field: &'static str, version: i16 },
    /// A null in a field that is not nullable in this version.
    #[error("{field} is null, which version {version} does not allow")]
    NullNotAllowed { field: &'static str, version: i16 },
    /// A string, byte field or array longer than the wire format can say.
    #[error("{field}: length {len} is too large for the wire format")]
    TooLarge { field: &'static str, len: usize },
    /// The version is outside the message's valid versions.
    #[error("{message} has no version {version}")]
    UnsupportedVersion { message: &'static str, version: i16 },
    /// Compression failed.
    #[error("{codec} compression failed: {reason}")]
    Compression { codec: &'static str, reason: String },
    /// A stand-in for an external record set that the writer cannot take (see
    /// [`crate::codec::Writer::register_external`]).
    #[error("external record set refused: {reason}")]
    ExternalRefused { reason: &'static str },
    /// A registered external record set was not written by a records field exactly once.
    #[error("external record set {number} was written {written} times, not once")]
    ExternalNotOnce { number: usize, written: usize },
    /// Context: the message and version being encoded when `source` happened.
    #[error("encoding {message} v{version}: {source}")]
    InMessage {
        message: &'static str,
        version: i16,
        source: Box<EncodeError>,
    },
}

impl EncodeError {
    /// Wraps the error with the message and version it happened in.
    pub fn in_message(self, message: &'static str, version: i16) -> Self {
        Self::InMessage {
            message,
            version,
            source: Box::new(self),
        }
    }
}
