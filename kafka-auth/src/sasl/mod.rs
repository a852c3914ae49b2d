//! SASL mechanisms as Kafka speaks them, as state machines without I/O or clock: the broker
//! drives a [`ServerExchange`] and our clients a [`ClientExchange`] over SaslHandshake and
//! SaslAuthenticate, one message in, one message out.
//!
//! | file        | what                                                                 |
//! | ----------- | -------------------------------------------------------------------- |
//! | `mod.rs`    | [`Mechanism`], [`SaslError`], [`CredentialStore`], the two exchanges  |
//! | `secret.rs` | [`Secret`]: passwords, proofs and keys that print as `[hidden]`       |
//! | `plain.rs`  | PLAIN (RFC 4616, Kafka's `PlainSaslServer`)                           |
//! | `scram/`    | SCRAM-SHA-256/512 (RFC 5802, RFC 7677, Kafka's `ScramSaslServer`)     |
//!
//! The one rule the broker relies on: an exchange is authenticated only when
//! [`ServerExchange::step`] returns [`ServerStep::Done`]. A wrong password or proof is an
//! error, and every step after an error or after `Done` is an error
//! ([`SaslError::ExchangeFinished`]).

use std::collections::BTreeMap;
use std::fmt;

mod plain;
pub mod scram;
mod secret;

#[cfg(feature = "fuzzing")]
pub mod fuzzing;

#[cfg(test)]
mod tests;

pub use scram::{ScramCredential, ScramMechanism, salted_password};
pub use secret::Secret;

use scram::client::{ScramClient, ScramClientStep};
use scram::server::{ScramServer, ScramServerStep};

/// Kafka error code SASL_AUTHENTICATION_FAILED: bad credentials or a bad SASL message.
pub const SASL_AUTHENTICATION_FAILED: i16 = 58;
/// Kafka error code ILLEGAL_SASL_STATE: a SASL message where none is expected.
pub const ILLEGAL_SASL_STATE: i16 = 34;
/// Kafka error code UNSUPPORTED_SASL_MECHANISM: a mechanism the listener does not enable.
pub const UNSUPPORTED_SASL_MECHANISM: i16 = 33;
/// Kafka error code UNKNOWN_SERVER_ERROR: a failure on our side, not the client's.
pub const UNKNOWN_SERVER_ERROR: i16 = -1;

/// A SASL mechanism, by the name Kafka's SaslHandshake carries. OAUTHBEARER comes later.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Mechanism {
    /// `PLAIN`: user name and password in clear (so only over TLS in production).
    Plain,
    /// `SCRAM-SHA-256`.
    ScramSha256,
    /// `SCRAM-SHA-512`.
    ScramSha512,
}

impl Mechanism {
    /// Every mechanism this crate implements.
    pub const ALL: [Self; 3] = [Self::Plain, Self::ScramSha256, Self::ScramSha512];

    /// Kafka's name for the mechanism.
    pub fn name(self) -> &'static str {
        match self {
            Self::Plain => "PLAIN",
            Self::ScramSha256 => "SCRAM-SHA-256",
            Self::ScramSha512 => "SCRAM-SHA-512",
        }
    }

    /// The mechanism called `name`, compared exactly as Kafka's broker does (case matters).
    /// Anything else is [`SaslError::UnsupportedMechanism`] (UNSUPPORTED_SASL_MECHANISM).
    pub fn from_name(name: &str) -> Result<Self, SaslError> {
        Self::ALL
            .into_iter()
            .find(|m| m.name() == name)
            .ok_or_else(|| SaslError::UnsupportedMechanism(shown(name)))
    }

    /// The SCRAM hash of a SCRAM mechanism.
    pub fn scram(self) -> Option<ScramMechanism> {
        match self {
            Self::Plain => None,
            Self::ScramSha256 => Some(ScramMechanism::Sha256),
            Self::ScramSha512 => Some(ScramMechanism::Sha512),
        }
    }
}

impl fmt::Display for Mechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A peer-supplied name made safe to show: printable ASCII, at most 64 characters.
fn shown(name: &str) -> String {
    name.chars()
        .filter(|c| c.is_ascii_graphic())
        .take(64)
        .collect()
}

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

/// Where the broker finds credentials (it implements this over its JAAS config and the
/// SCRAM credentials of its metadata log).
pub trait CredentialStore {
    /// The PLAIN password of `user` (from the JAAS `user_NAME` options), if the user exists.
    fn plain_password(&self, user: &str) -> Option<Secret>;
    /// The SCRAM credential of `user` for `mechanism`, if one is set.
    fn scram_credential(&self, mechanism: ScramMechanism, user: &str) -> Option<ScramCredential>;
}

/// A [`CredentialStore`] held in memory: PLAIN users from a JAAS config, SCRAM credentials
/// added one by one (tests, a single node's static users).
#[derive(Debug, Clone, Default)]
pub struct StaticCredentials {
    plain: BTreeMap<String, Secret>,
    scram: BTreeMap<(ScramMechanism, String), ScramCredential>,
}

impl StaticCredentials {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// A store with these PLAIN users (e.g. [`crate::jaas::LoginModule::plain_users`]).
    pub fn with_plain_users(users: BTreeMap<String, Secret>) -> Self {
        Self {
            plain: users,
            scram: BTreeMap::new(),
        }
    }

    /// Adds (or replaces) a PLAIN user.
    pub fn add_plain(&mut self, user: impl Into<String>, password: impl Into<Secret>) -> &mut Self {
        self.plain.insert(user.into(), password.into());
        self
    }

    /// Adds (or replaces) a SCRAM credential.
    pub fn add_scram(
        &mut self,
        mechanism: ScramMechanism,
        user: impl Into<String>,
        credential: ScramCredential,
    ) -> &mut Self {
        self.scram.insert((mechanism, user.into()), credential);
        self
    }
}

impl CredentialStore for StaticCredentials {
    fn plain_password(&self, user: &str) -> Option<Secret> {
        self.plain.get(user).cloned()
    }

    fn scram_credential(&self, mechanism: ScramMechanism, user: &str) -> Option<ScramCredential> {
        self.scram.get(&(mechanism, user.to_owned())).cloned()
    }
}

/// A fresh nonce: 24 random bytes from the OS, in base64 (32 printable characters, no `,`).
pub(crate) fn random_nonce() -> Result<String, SaslError> {
    let mut bytes = [0u8; 24];
    getrandom::fill(&mut bytes).map_err(|_| SaslError::Internal("no random bytes from the OS"))?;
    Ok(scram::messages::encode64(&bytes))
}

/// What the broker does after a step that did not fail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerStep {
    /// Send these bytes to the client and wait for its next message.
    Challenge(Vec<u8>),
    /// Authenticated. Send `response` as the last server message (SCRAM's `v=...`, empty for
    /// PLAIN); `authorization_id` is the user name the principal is made from.
    Done {
        /// The last server message.
        response: Vec<u8>,
        /// The authenticated user.
        authorization_id: String,
    },
}

/// The broker's side of one SASL exchange (one per SaslHandshake, so a KIP-368
/// re-authentication starts a new one).
#[derive(Debug)]
pub struct ServerExchange {
    mechanism: Mechanism,
    state: ServerState,
}

#[derive(Debug)]
enum ServerState {
    Plain,
    Scram(ScramServer),
    Finished,
}

impl ServerExchange {
    /// A new exchange for `mechanism`, waiting for the client's first message.
    pub fn new(mechanism: Mechanism) -> Self {
        Self::make(mechanism, None)
    }

    /// A SCRAM exchange whose server nonce is `nonce` instead of random bytes.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn with_nonce(mechanism: Mechanism, nonce: &str) -> Self {
        Self::make(mechanism, Some(nonce.to_owned()))
    }

    fn make(mechanism: Mechanism, nonce: Option<String>) -> Self {
        let state = match mechanism.scram() {
            None => ServerState::Plain,
            Some(m) => ServerState::Scram(ScramServer::new(m, nonce)),
        };
        Self { mechanism, state }
    }

    /// The exchange's mechanism.
    pub fn mechanism(&self) -> Mechanism {
        self.mechanism
    }

    /// Takes the client's next message. `Challenge`: send it and call again with the answer;
    /// `Done`: authenticated; an error: authentication failed (answer
    /// [`SaslError::kafka_error_code`] and close). After `Done` or an error, every call is
    /// [`SaslError::ExchangeFinished`].
    pub fn step(
        &mut self,
        client_message: &[u8],
        creds: &dyn CredentialStore,
    ) -> Result<ServerStep, SaslError> {
        // The state is taken out: unless this step leads to another challenge, the exchange
        // stays finished, whatever happened.
        match std::mem::replace(&mut self.state, ServerState::Finished) {
            ServerState::Finished => Err(SaslError::ExchangeFinished),
            ServerState::Plain => {
                plain::server_step(client_message, creds).map(|authorization_id| ServerStep::Done {
                    response: Vec::new(),
                    authorization_id,
                })
            }
            ServerState::Scram(s) => match s.step(client_message, creds)? {
                ScramServerStep::Challenge(next, challenge) => {
                    self.state = ServerState::Scram(next);
                    Ok(ServerStep::Challenge(challenge))
                }
                ScramServerStep::Done {
                    response,
                    authorization_id,
                } => Ok(ServerStep::Done {
                    response,
                    authorization_id,
                }),
            },
        }
    }
}

/// What our client does after a step that did not fail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientStep {
    /// Send these bytes to the server and wait for its answer.
    Send(Vec<u8>),
    /// Authenticated (for SCRAM: the server proved it knows the credential).
    Done,
}

/// Our clients' side of one SASL exchange. No authorization id is sent (the user acts as
/// itself, as Kafka's clients do).
#[derive(Debug)]
pub struct ClientExchange {
    mechanism: Mechanism,
    first: Secret,
    started: bool,
    state: ClientState,
}

#[derive(Debug)]
enum ClientState {
    /// PLAIN: the message is sent, the server's (empty) answer is awaited.
    Plain,
    Scram(ScramClient),
    Finished,
}

impl ClientExchange {
    /// A new exchange for `mechanism` as `username` with `password`. Refuses credentials
    /// the mechanism cannot carry (empty user name, NUL in PLAIN fields).
    pub fn new(
        mechanism: Mechanism,
        username: &str,
        password: impl Into<Secret>,
    ) -> Result<Self, SaslError> {
        Self::make(
            mechanism,
            username,
            password.into(),
            None,
            scram::MAX_ITERATIONS,
        )
    }

    /// A SCRAM exchange with a fixed client nonce and iteration bound (tests, fuzzing).
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn with_nonce(
        mechanism: Mechanism,
        username: &str,
        password: impl Into<Secret>,
        nonce: &str,
        max_iterations: u32,
    ) -> Result<Self, SaslError> {
        Self::make(
            mechanism,
            username,
            password.into(),
            Some(nonce.to_owned()),
            max_iterations,
        )
    }

    fn make(
        mechanism: Mechanism,
        username: &str,
        password: Secret,
        nonce: Option<String>,
        max_iterations: u32,
    ) -> Result<Self, SaslError> {
        let (first, state) = match mechanism.scram() {
            None => (
                plain::client_message(username, &password)?,
                ClientState::Plain,
            ),
            Some(m) => {
                if username.is_empty() || username.contains('\0') {
                    return Err(SaslError::InvalidClientCredentials(
                        "SCRAM needs a non-empty user name without NUL",
                    ));
                }
                let nonce = match nonce {
                    Some(n) => n,
                    None => random_nonce()?,
                };
                let (client, first) =
                    ScramClient::new(m, username, password, nonce, max_iterations);
                (first, ClientState::Scram(client))
            }
        };
        Ok(Self {
            mechanism,
            first: Secret::new(first),
            started: false,
            state,
        })
    }

    /// The exchange's mechanism.
    pub fn mechanism(&self) -> Mechanism {
        self.mechanism
    }

    /// The client's first message (SCRAM's client-first, or the PLAIN message), to send in
    /// the first SaslAuthenticate request. Taking it again gives the same bytes.
    pub fn initial(&mut self) -> Vec<u8> {
        self.started = true;
        self.first.expose().to_vec()
    }

    /// Takes the server's answer. `Send`: send it and call again with the next answer;
    /// `Done`: authenticated (PLAIN: on the server's empty answer; SCRAM: after checking the
    /// server's signature); an error: authentication failed, and every later call is
    /// [`SaslError::ExchangeFinished`].
    pub fn step(&mut self, server_message: &[u8]) -> Result<ClientStep, SaslError> {
        if !self.started {
            return Err(SaslError::NotStarted);
        }
        match std::mem::replace(&mut self.state, ClientState::Finished) {
            ClientState::Finished => Err(SaslError::ExchangeFinished),
            ClientState::Plain if server_message.is_empty() => Ok(ClientStep::Done),
            ClientState::Plain => Err(SaslError::Malformed {
                message: "PLAIN server answer",
                reason: "expected an empty answer",
            }),
            ClientState::Scram(c) => match c.step(server_message)? {
                ScramClientStep::Send(next, message) => {
                    self.state = ClientState::Scram(next);
                    Ok(ClientStep::Send(message))
                }
                ScramClientStep::Done => Ok(ClientStep::Done),
            },
        }
    }
}
