//! [`SaslError`], the one error type of the SASL mechanisms, and the Kafka error codes its
//! variants answer. The lowest file of `sasl/`: it imports nothing from the crate.

/// Kafka error code SASL_AUTHENTICATION_FAILED: bad credentials or a bad SASL message.
pub const SASL_AUTHENTICATION_FAILED: i16 = 58;
/// Kafka error code ILLEGAL_SASL_STATE: a SASL message where none is expected.
pub const ILLEGAL_SASL_STATE: i16 = 34;
/// Kafka error code UNSUPPORTED_SASL_MECHANISM: a mechanism the listener does not enable.
pub const UNSUPPORTED_SASL_MECHANISM: i16 = 33;
/// Kafka error code UNKNOWN_SERVER_ERROR: a failure on our side, not the client's.
pub const UNKNOWN_SERVER_ERROR: i16 = -1;

/// Why a SASL exchange failed. The texts never hold a password, proof or key, and
/// authentication failures do not say which part of the credentials was wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SaslError {
    /// A message that does not follow the mechanism's syntax (which message, which rule).
    #[error("malformed {message}: {reason}")]
    Malformed {
        /// Which message.
        message: &'static str,
        /// Which rule it breaks.
        reason: &'static str,
    },
    /// Unknown user, wrong password or wrong proof (deliberately not told apart).
    #[error("authentication failed: invalid credentials")]
    AuthenticationFailed,
    /// The client asked to act as another user than the one it authenticated as (Kafka only
    /// allows an empty authorization id or the user name itself).
    #[error("authentication failed: the authorization id differs from the user name")]
    AuthorizationIdMismatch,
    /// A mechanism this crate (or the listener) does not offer.
    #[error("unsupported SASL mechanism {0:?}")]
    UnsupportedMechanism(String),
    /// Kafka's SCRAM extension `tokenauth=true` (delegation tokens), which we do not support.
    #[error("delegation token authentication (SCRAM extension tokenauth) is not supported")]
    DelegationTokenUnsupported,
    /// RFC 5802's reserved `m=` attribute (a mandatory extension nobody defines).
    #[error("SCRAM mandatory extensions (m=) are not supported")]
    MandatoryExtension,
    /// The client asked for channel binding (gs2 flag `p=`); Kafka offers no -PLUS mechanism.
    #[error("SCRAM channel binding is not supported")]
    ChannelBindingUnsupported,
    /// The client-final `c=` is not the base64 of the client-first's gs2 header.
    #[error("SCRAM channel binding data does not match the gs2 header")]
    ChannelBindingMismatch,
    /// A nonce that does not continue the exchange (server nonce not starting with the
    /// client's, or a client-final nonce other than the combined one).
    #[error("SCRAM nonce does not match the exchange")]
    NonceMismatch,
    /// An iteration count outside the accepted bounds.
    #[error("SCRAM iteration count {iterations} is outside {min}..={max}")]
    IterationCount {
        /// The count offered.
        iterations: u32,
        /// The fewest accepted.
        min: u32,
        /// The most accepted.
        max: u32,
    },
    /// The server-final signature is wrong: the server does not know the credential.
    #[error(
        "SCRAM server signature is invalid: the server could not prove it knows the credential"
    )]
    ServerSignatureMismatch,
    /// The server refused the authentication with a SCRAM `e=` value (letters, digits and
    /// `-` kept).
    #[error("the server refused the authentication: {0}")]
    ServerError(String),
    /// Our own client was configured with credentials the mechanism cannot carry.
    #[error("invalid client credentials: {0}")]
    InvalidClientCredentials(&'static str),
    /// A step after the exchange ended (after `Done` or after an error).
    #[error("the SASL exchange is already over")]
    ExchangeFinished,
    /// A step before the client's initial message was taken.
    #[error("the SASL exchange has not started: take the initial message first")]
    NotStarted,
    /// A failure on our side (no randomness from the OS, ...).
    #[error("internal SASL error: {0}")]
    Internal(&'static str),
}

impl SaslError {
    /// The Kafka error code a broker answers (and a client reports) for this error:
    /// UNSUPPORTED_SASL_MECHANISM (33), ILLEGAL_SASL_STATE (34), UNKNOWN_SERVER_ERROR (-1)
    /// for our own failures, and SASL_AUTHENTICATION_FAILED (58) for everything else, as
    /// Kafka's `SaslServerAuthenticator` answers any `SaslException`.
    pub fn kafka_error_code(&self) -> i16 {
        match self {
            Self::UnsupportedMechanism(_) => UNSUPPORTED_SASL_MECHANISM,
            Self::ExchangeFinished | Self::NotStarted => ILLEGAL_SASL_STATE,
            Self::Internal(_) => UNKNOWN_SERVER_ERROR,
            _ => SASL_AUTHENTICATION_FAILED,
        }
    }
}
