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
//! | `oauthbearer/`   | OAUTHBEARER (RFC 7628, KIP-255, KIP-768): messages, JWT/JWKS verification, Kafka's validators, token making for the clients |
//! | `mechanism.rs`   | [`Mechanism`], [`ScramMechanism`]: names, admin type ids, iteration bounds |
//! | `secret.rs`      | [`Secret`]: passwords, proofs and keys that print as `[hidden]` |
//! | `error.rs`       | [`SaslError`] and Kafka's codes [`SASL_AUTHENTICATION_FAILED`], [`ILLEGAL_SASL_STATE`], [`UNSUPPORTED_SASL_MECHANISM`], [`UNKNOWN_SERVER_ERROR`] |
//!
//! Each file imports only files below it in this table (`fuzzing.rs`, feature `fuzzing`,
//! sits on top): `error.rs` and `secret.rs` nothing, `mechanism.rs` the error, `scram/` and
//! `plain.rs` the leaves (PLAIN borrows `scram/messages.rs`'s text check), `oauthbearer/`
//! the error and the secret, `credentials.rs` the SCRAM credential. The mechanisms never see a [`CredentialStore`]: the exchanges here
//! hand each one a lookup closure, so the store and the exchanges stay on top.
//!
//! The one rule the broker relies on: an exchange is authenticated only when
//! [`ServerExchange::step`] returns [`ServerStep::Done`]. A wrong password or proof is an
//! error, and every step after an error or after `Done` is an error
//! ([`SaslError::ExchangeFinished`]).

mod credentials;
mod error;
mod mechanism;
pub mod oauthbearer;
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

use std::sync::Arc;

use oauthbearer::{
    ClientInitialResponse, OAuthBearerClient, OAuthBearerClientStep, OAuthBearerError,
    OAuthBearerServer, OAuthBearerServerStep, OAuthBearerSession, ServerErrorResponse,
    TokenValidator,
};
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
    /// OAUTHBEARER: what the exchange established, once `Done`.
    session: Option<OAuthBearerSession>,
    /// OAUTHBEARER: why the token was refused, once it was.
    rejection: Option<OAuthBearerError>,
}

#[derive(Debug)]
enum ServerState {
    Plain,
    Scram(ScramServer),
    OAuthBearer(OAuthBearerServer),
    /// OAUTHBEARER made with [`ServerExchange::new`]: no validator, so every token fails.
    OAuthBearerWithoutValidator,
    Finished,
}

impl ServerExchange {
    /// A new exchange for `mechanism`, waiting for the client's first message. OAUTHBEARER
    /// needs a validator: made here, its first step fails with [`SaslError::Internal`] (use
    /// [`Self::oauthbearer`]).
    pub fn new(mechanism: Mechanism) -> Self {
        Self::make(mechanism, None)
    }

    /// A SCRAM exchange whose server nonce is `nonce` instead of random bytes.
    #[cfg(any(test, feature = "fuzzing"))]
    pub(crate) fn with_nonce(mechanism: Mechanism, nonce: &str) -> Self {
        Self::make(mechanism, Some(nonce.to_owned()))
    }

    /// An OAUTHBEARER exchange checking the client's token with `validator` at `now_ms` (the
    /// time of the SaslHandshake; [`Self::set_now_ms`] moves it). `Done` carries the token's
    /// principal as `authorization_id`; [`Self::oauthbearer_session`] and
    /// [`Self::credential_expiry_ms`] give the rest.
    pub fn oauthbearer(validator: Arc<dyn TokenValidator>, now_ms: i64) -> Self {
        Self {
            mechanism: Mechanism::OAuthBearer,
            state: ServerState::OAuthBearer(OAuthBearerServer::new(validator, now_ms)),
            session: None,
            rejection: None,
        }
    }

    fn make(mechanism: Mechanism, nonce: Option<String>) -> Self {
        let state = match (mechanism, mechanism.scram()) {
            (Mechanism::OAuthBearer, _) => ServerState::OAuthBearerWithoutValidator,
            (_, None) => ServerState::Plain,
            (_, Some(m)) => ServerState::Scram(ScramServer::new(m, nonce)),
        };
        Self {
            mechanism,
            state,
            session: None,
            rejection: None,
        }
    }

    /// OAUTHBEARER: the time tokens are checked at from now on.
    pub fn set_now_ms(&mut self, now_ms: i64) {
        if let ServerState::OAuthBearer(s) = &mut self.state {
            s.set_now_ms(now_ms);
        }
    }

    /// OAUTHBEARER, after `Done`: the validated token and the client's SASL extensions.
    pub fn oauthbearer_session(&self) -> Option<&OAuthBearerSession> {
        self.session.as_ref()
    }

    /// When the authenticated credential expires, in ms since the epoch: the token's `exp`
    /// for OAUTHBEARER after `Done`; `None` for the password mechanisms. The broker answers
    /// `session_lifetime_ms` from it ([`oauthbearer::session_lifetime_ms`], KIP-368).
    pub fn credential_expiry_ms(&self) -> Option<i64> {
        self.session.as_ref().map(OAuthBearerSession::expiry_ms)
    }

    /// OAUTHBEARER: why the validator refused the client's token (for the broker's log; the
    /// client is only told the status).
    pub fn token_rejection(&self) -> Option<&OAuthBearerError> {
        self.rejection.as_ref()
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
            ServerState::OAuthBearerWithoutValidator => Err(SaslError::Internal(
                "OAUTHBEARER needs a token validator (ServerExchange::oauthbearer)",
            )),
            ServerState::OAuthBearer(mut s) => {
                let step = s.step(client_message);
                if let Some(e) = s.rejection() {
                    self.rejection = Some(e.clone());
                }
                match step? {
                    OAuthBearerServerStep::Challenge(challenge) => {
                        self.state = ServerState::OAuthBearer(s);
                        Ok(ServerStep::Challenge(challenge))
                    }
                    OAuthBearerServerStep::Done(session) => {
                        let authorization_id = session.principal().to_owned();
                        self.session = Some(*session);
                        Ok(ServerStep::Done {
                            response: Vec::new(),
                            authorization_id,
                        })
                    }
                }
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
    OAuthBearer(OAuthBearerClient),
    Finished,
}

impl ClientExchange {
    /// A new exchange for `mechanism` as `username` with `password`. Refuses credentials
    /// the mechanism cannot carry (empty user name, NUL in PLAIN fields), and OAUTHBEARER,
    /// which takes a token ([`Self::oauthbearer`]).
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
        if mechanism == Mechanism::OAuthBearer {
            return Err(SaslError::InvalidClientCredentials(
                "OAUTHBEARER takes a token, not a password: use ClientExchange::oauthbearer",
            ));
        }
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

    /// An OAUTHBEARER exchange sending `initial` (the token, and any authorization id and
    /// SASL extensions). An error challenge from the server is answered with 0x01
    /// ([`ClientStep::Send`]); the server's failure follows, and
    /// [`Self::oauthbearer_refusal`] tells its status.
    pub fn oauthbearer(initial: ClientInitialResponse) -> Self {
        let client = OAuthBearerClient::new(initial);
        Self {
            mechanism: Mechanism::OAuthBearer,
            first: Secret::new(client.initial()),
            started: false,
            state: ClientState::OAuthBearer(client),
        }
    }

    /// OAUTHBEARER: the server's error challenge, if one came (`status` `invalid_token` or
    /// `insufficient_scope`).
    pub fn oauthbearer_refusal(&self) -> Option<&ServerErrorResponse> {
        match &self.state {
            ClientState::OAuthBearer(c) => c.refusal(),
            _ => None,
        }
    }

    /// The exchange's mechanism.
    pub fn mechanism(&self) -> Mechanism {
        self.mechanism
    }

    /// The client's first message (SCRAM's client-first, the PLAIN message, OAUTHBEARER's
    /// initial response), to send in
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
            ClientState::OAuthBearer(mut c) => {
                let step = c.step(server_message);
                match step {
                    Ok(OAuthBearerClientStep::Send(m)) => {
                        // Kept, so that the refusal stays readable and the next step reports it.
                        self.state = ClientState::OAuthBearer(c);
                        Ok(ClientStep::Send(m))
                    }
                    Ok(OAuthBearerClientStep::Done) => Ok(ClientStep::Done),
                    Err(e) => {
                        // Finished inside: every later step is ExchangeFinished.
                        self.state = ClientState::OAuthBearer(c);
                        Err(e)
                    }
                }
            }
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
