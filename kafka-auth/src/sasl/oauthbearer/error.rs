//! [`OAuthBearerError`], the one error type of `oauthbearer/`: why a message, a token, a key
//! set, a configuration or a token endpoint answer was refused. The lowest file of the folder.
//!
//! The texts never hold a token, a signature or a client secret. Names and values taken from
//! a peer are cut to printable ASCII and 64 characters ([`shown`]).

/// Why OAUTHBEARER refused something.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OAuthBearerError {
    /// The client's initial response breaks RFC 7628's grammar as Kafka's
    /// `OAuthBearerClientInitialResponse` checks it.
    #[error("invalid OAUTHBEARER client first message: {0}")]
    InitialResponse(&'static str),
    /// The server's error challenge is not the JSON object RFC 7628 3.2.2 describes.
    #[error("invalid OAUTHBEARER server message: {0}")]
    ServerMessage(&'static str),
    /// A SASL extension whose name is not letters only, is the reserved `auth`, or whose value
    /// holds characters outside `%x21-7E`, space, tab, CR and LF.
    #[error("SASL extension {name:?} is invalid: {reason}")]
    Extension {
        /// The extension's name (cut to what can be shown).
        name: String,
        /// Which rule it breaks.
        reason: &'static str,
    },
    /// The token is not a compact JWS (three base64url parts of JSON objects).
    #[error("malformed token: {0}")]
    MalformedToken(&'static str),
    /// The header's `alg` is refused here: `none` for the signed validator, a signed
    /// algorithm for the unsecured one, or an algorithm this crate does not verify.
    #[error("the token's algorithm {alg:?} is not accepted: {reason}")]
    Algorithm {
        /// The header's `alg` value.
        alg: String,
        /// Why.
        reason: &'static str,
    },
    /// The header names critical extensions (`crit`), none of which we understand.
    #[error("the token's header names critical extensions (crit), which are not supported")]
    CriticalHeader,
    /// The header's `kid` names no key of the key set.
    #[error("no key with id {0:?} in the JSON Web Key Set")]
    UnknownKeyId(String),
    /// No key of the set (with the header's `kid`, if any) can verify this algorithm: a key
    /// of another type or curve, or a key for encryption (`use` other than `sig`).
    #[error("no key of the JSON Web Key Set fits algorithm {alg} (key id {kid:?}): {reason}")]
    NoSuitableKey {
        /// The token's algorithm.
        alg: &'static str,
        /// The header's `kid`, if any.
        kid: Option<String>,
        /// Why the keys do not fit.
        reason: &'static str,
    },
    /// The keys that fit are bound (by their `alg` member) to another algorithm than the
    /// token's header names: an algorithm swapped in the header.
    #[error("the key is bound to algorithm {key_alg:?} but the token names {alg}")]
    KeyAlgorithmMismatch {
        /// The token's algorithm.
        alg: &'static str,
        /// The key's `alg` member.
        key_alg: String,
    },
    /// The signature does not verify with any fitting key.
    #[error("the token's signature is invalid")]
    InvalidSignature,
    /// A JSON Web Key Set document or one of its keys Kafka's validator would not take.
    #[error("invalid JSON Web Key Set: {0}")]
    KeySet(String),
    /// A required claim is absent.
    #[error("required claim missing: {0}")]
    MissingClaim(String),
    /// A claim of the wrong JSON type or value (a string where a number belongs, a blank
    /// subject, duplicate scopes, a negative time).
    #[error("the {claim:?} claim is invalid: {reason}")]
    InvalidClaim {
        /// The claim's name.
        claim: String,
        /// Why.
        reason: &'static str,
    },
    /// Expired: the check time minus the allowed clock skew is on or after `exp`.
    #[error(
        "the token expired: the time ({now_ms} ms) minus the allowed clock skew ({skew_ms} ms) is on or after its expiration time ({exp_ms} ms)"
    )]
    Expired {
        /// The check time.
        now_ms: i64,
        /// The allowed skew.
        skew_ms: i64,
        /// The token's `exp`, in ms.
        exp_ms: i64,
    },
    /// Not yet valid: the check time plus the allowed clock skew is before `nbf`.
    #[error(
        "the token is not valid yet: the time ({now_ms} ms) plus the allowed clock skew ({skew_ms} ms) is before its not-before time ({nbf_ms} ms)"
    )]
    NotYetValid {
        /// The check time.
        now_ms: i64,
        /// The allowed skew.
        skew_ms: i64,
        /// The token's `nbf`, in ms.
        nbf_ms: i64,
    },
    /// The unsecured validator's rule: `iat` after the check time plus the allowed skew.
    #[error(
        "the token's issued-at time ({iat_ms} ms) is after the time ({now_ms} ms) plus the allowed clock skew ({skew_ms} ms)"
    )]
    IssuedInFuture {
        /// The check time.
        now_ms: i64,
        /// The allowed skew.
        skew_ms: i64,
        /// The token's `iat`, in ms.
        iat_ms: i64,
    },
    /// The unsecured validator's rule: `exp` must be after `iat`.
    #[error("the token's expiration time is not after its issued-at time")]
    ExpiresBeforeIssued,
    /// The token's audience matches none of `sasl.oauthbearer.expected.audience`, has no
    /// `aud` although one is expected, or has an `aud` although none is configured (as
    /// jose4j, under Kafka's validator, refuses it).
    #[error("audience check failed: {0}")]
    Audience(&'static str),
    /// `iss` is absent or differs from `sasl.oauthbearer.expected.issuer`.
    #[error("issuer check failed: the token's issuer is {found:?}")]
    Issuer {
        /// The token's `iss` (cut to what can be shown), if any.
        found: Option<String>,
    },
    /// The unsecured validator's `unsecuredValidatorRequiredScope`: a scope the token lacks.
    /// Answered to the client with status `insufficient_scope`.
    #[error("the token's scope lacks the required scope {missing:?} (all required: {required})")]
    InsufficientScope {
        /// The first required scope missing.
        missing: String,
        /// Every required scope, space-separated (sent back as the error's `scope`).
        required: String,
    },
    /// A configuration value (JAAS option or `sasl.oauthbearer.*` key) Kafka would refuse.
    #[error("OAUTHBEARER configuration: {0}")]
    Config(String),
    /// The token endpoint refused the request (RFC 6749 5.2 error answer, or any answer with
    /// an HTTP status outside 2xx).
    #[error("the token endpoint answered HTTP {status}: {error}{}", description.as_ref().map(|d| format!(" ({d})")).unwrap_or_default())]
    TokenEndpoint {
        /// The HTTP status.
        status: u16,
        /// RFC 6749's `error` code (or a summary of the body), cut to what can be shown.
        error: String,
        /// `error_description`, if given, cut to what can be shown.
        description: Option<String>,
    },
    /// A 2xx token endpoint answer without a usable `access_token`.
    #[error("the token endpoint's answer is invalid: {0}")]
    TokenResponse(&'static str),
}

impl OAuthBearerError {
    /// The RFC 6750 error code the broker puts in its error challenge's `status`:
    /// `insufficient_scope` for a missing required scope, `invalid_token` for everything
    /// else (as Kafka's validator callback handlers set it).
    pub fn status(&self) -> &'static str {
        match self {
            Self::InsufficientScope { .. } => "insufficient_scope",
            _ => "invalid_token",
        }
    }

    /// The `scope` of the error challenge: the required scope, for `insufficient_scope`.
    pub fn scope(&self) -> Option<&str> {
        match self {
            Self::InsufficientScope { required, .. } => Some(required),
            _ => None,
        }
    }
}

/// A peer-supplied text made safe to show in an error or a log: printable ASCII and spaces,
/// at most 64 characters.
pub(crate) fn shown(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_ascii_graphic() || *c == ' ')
        .take(64)
        .collect()
}
