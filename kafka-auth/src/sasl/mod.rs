//! SASL mechanisms as Kafka speaks them, as state machines without I/O or clock: the broker
//! drives a [`ServerExchange`] and our clients a [`ClientExchange`] over SaslHandshake and
//! SaslAuthenticate, one message in, one message out.
//!
//! | file             | what |
//! | ---------------- | ---- |
//! | `mod.rs`         | the two exchanges: [`ServerExchange`] / [`ServerStep`], [`ClientExchange`] / [`ClientStep`] |
//! | `credentials.rs` | [`CredentialStore`] (the broker implements it), [`StaticCredentials`] |
//! | `plain.rs`       | PLAIN (RFC 4616, Kafka's `PlainSaslServer`) |
//! | `scram/`         | SCRAM-SHA-256/512 (RFC 5802, RFC 7677, Kafka's `ScramSaslServer`): [`ScramCredential`], [`salted_password`] |
//! | `mechanism.rs`   | [`Mechanism`], [`ScramMechanism`]: names, admin type ids, iteration bounds |
//! | `secret.rs`      | [`Secret`]: passwords, proofs and keys that print as `[hidden]` |
//! | `error.rs`       | [`SaslError`] and Kafka's codes [`SASL_AUTHENTICATION_FAILED`], [`ILLEGAL_SASL_STATE`], [`UNSUPPORTED_SASL_MECHANISM`], [`UNKNOWN_SERVER_ERROR`] |
//!
//! Each file imports only files below it in this table (`fuzzing.rs`, feature `fuzzing`,
//! sits on top): `error.rs` and `secret.rs` nothing, `mechanism.rs` the error, `scram/` and
//! `plain.rs` the leaves (PLAIN borrows `scram/messages.rs`'s text check), `credentials.rs`
//! the SCRAM credential. The mechanisms never see a [`CredentialStore`]: the exchanges here
//! hand each one a lookup closure, so the store and the exchanges stay on top.
//!
//! The one rule the broker relies on: an exchange is authenticated only when
//! [`ServerExchange::step`] returns [`ServerStep::Done`]. A wrong password or proof is an
//! error, and every step after an error or after `Done` is an error
//! ([`SaslError::ExchangeFinished`]).

mod credentials;
mod error;
mod mechanism;
mod plain;
pub mod scram;
mod secret;

#[cfg(feature = "fuzzing")]
pub mod fuzzing;

#[cfg(test)]
mod tests;

pub use credentials::{CredentialStore, StaticCredentials};
pub use error::{
    ILLEGAL_SASL_STATE, SASL_AUTHENTICATION_FAILED, SaslError, UNKNOWN_SERVER_ERROR,
    UNSUPPORTED_SASL_MECHANISM,
};
pub use mechanism::{Mechanism, ScramMechanism};
pub use scram::{ScramCredential, salted_password};
pub use secret::Secret;

use scram::client::{ScramClient, ScramClientStep};
use scram::messages::random_nonce;
use scram::server::{ScramServer, ScramServerStep};

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
                plain::server_step(client_message, &|user| creds.plain_password(user)).map(
                    |authorization_id| ServerStep::Done {
                        response: Vec::new(),
                        authorization_id,
                    },
                )
            }
            ServerState::Scram(s) => match s.step(client_message, &|mechanism, user| {
                creds.scram_credential(mechanism, user)
            })? {
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
