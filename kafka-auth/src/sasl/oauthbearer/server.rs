//! The broker's side of one OAUTHBEARER exchange, as Kafka's `OAuthBearerSaslServer`:
//!
//! 1. the client's initial response is read ([`ClientInitialResponse`]); a malformed one
//!    fails the exchange at once;
//! 2. its token goes to the [`TokenValidator`]. Refused: the server answers the error
//!    challenge (`{"status":"invalid_token"}`, [`ServerErrorResponse`]) and waits for the
//!    client's 0x01, after which the exchange fails (Kafka: `SaslAuthenticationException`
//!    with the JSON as message). Anything but 0x01 there fails it too (Kafka would read it
//!    as a new initial response; RFC 7628 3.2.3 allows only 0x01);
//! 3. accepted: an authorization id, if given, must equal the token's principal; the SASL
//!    extensions are all kept (Kafka's validator handlers accept every extension). Done,
//!    with an empty last message.
//!
//! [`session_lifetime_ms`] is Kafka's rule for the `session_lifetime_ms` the broker answers
//! (KIP-368) from the token's expiry and `connections.max.reauth.ms`.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::error::OAuthBearerError;
use super::messages::{ClientInitialResponse, ERROR_ACKNOWLEDGEMENT, ServerErrorResponse};
use super::validator::{OAuthBearerToken, TokenValidator};
use crate::sasl::SaslError;

const FIRST: &str = "OAUTHBEARER client first message";

/// What an authenticated OAUTHBEARER exchange established.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthBearerSession {
    /// The validated token (principal, scopes, expiry).
    pub token: OAuthBearerToken,
    /// The client's SASL extensions (every key of its initial response but `auth`).
    pub extensions: BTreeMap<String, String>,
}

impl OAuthBearerSession {
    /// The principal name.
    pub fn principal(&self) -> &str {
        self.token.principal()
    }

    /// When the credential expires, in ms since the epoch (the token's `exp`).
    pub fn expiry_ms(&self) -> i64 {
        self.token.lifetime_ms()
    }
}

/// A server step that did not fail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OAuthBearerServerStep {
    /// The error challenge: send it; the client's 0x01 then ends the exchange as a failure.
    Challenge(Vec<u8>),
    /// Authenticated; the last server message is empty.
    Done(Box<OAuthBearerSession>),
}

#[derive(Debug)]
enum State {
    Initial,
    /// The error challenge was sent; waiting for 0x01.
    Refused,
    Finished,
}

/// The broker's OAUTHBEARER state machine.
#[derive(Debug)]
pub struct OAuthBearerServer {
    validator: Arc<dyn TokenValidator>,
    now_ms: i64,
    state: State,
    rejection: Option<OAuthBearerError>,
}

impl OAuthBearerServer {
    /// A new exchange checking tokens with `validator` at `now_ms` (the time of the
    /// handshake; [`Self::set_now_ms`] moves it).
    pub fn new(validator: Arc<dyn TokenValidator>, now_ms: i64) -> Self {
        Self {
            validator,
            now_ms,
            state: State::Initial,
            rejection: None,
        }
    }

    /// The time the next token is checked at.
    pub fn set_now_ms(&mut self, now_ms: i64) {
        self.now_ms = now_ms;
    }

    /// Why the validator refused the token, once it has (for the broker's log: the reason
    /// is not sent to the client, only the status).
    pub fn rejection(&self) -> Option<&OAuthBearerError> {
        self.rejection.as_ref()
    }

    /// Takes the client's next message. After `Done` or an error every call is
    /// [`SaslError::ExchangeFinished`].
    pub fn step(&mut self, message: &[u8]) -> Result<OAuthBearerServerStep, SaslError> {
        match std::mem::replace(&mut self.state, State::Finished) {
            State::Finished => Err(SaslError::ExchangeFinished),
            State::Refused if message == ERROR_ACKNOWLEDGEMENT => {
                Err(SaslError::AuthenticationFailed)
            }
            State::Refused => Err(SaslError::Malformed {
                message: "OAUTHBEARER client message after the error challenge",
                reason: "expected the single byte 0x01",
            }),
            State::Initial => {
                let response = ClientInitialResponse::parse(message).map_err(|e| match e {
                    OAuthBearerError::InitialResponse(reason) => SaslError::Malformed {
                        message: FIRST,
                        reason,
                    },
                    _ => SaslError::Malformed {
                        message: FIRST,
                        reason: "invalid SASL extension",
                    },
                })?;
                match self.validator.validate(response.token(), self.now_ms) {
                    Err(e) => {
                        let challenge = ServerErrorResponse::for_error(&e).to_bytes();
                        self.rejection = Some(e);
                        self.state = State::Refused;
                        Ok(OAuthBearerServerStep::Challenge(challenge))
                    }
                    Ok(token) => {
                        let authzid = response.authorization_id();
                        if !authzid.is_empty() && authzid != token.principal() {
                            return Err(SaslError::AuthorizationIdMismatch);
                        }
                        Ok(OAuthBearerServerStep::Done(Box::new(OAuthBearerSession {
                            token,
                            extensions: response.extensions().clone(),
                        })))
                    }
                }
            }
        }
    }
}

/// Kafka's `session_lifetime_ms` for a SaslAuthenticate answer (KIP-368, the broker's
/// `SaslServerAuthenticator`): with neither a credential expiry nor a positive
/// `connections.max.reauth.ms`, 0 (no re-authentication); otherwise the smaller of the time
/// left until the credential expires and `connections.max.reauth.ms` (each when present),
/// never below 0.
pub fn session_lifetime_ms(
    credential_expiry_ms: Option<i64>,
    connections_max_reauth_ms: Option<i64>,
    now_ms: i64,
) -> i64 {
    let reauth = connections_max_reauth_ms.filter(|&m| m > 0);
    let left = credential_expiry_ms.map(|e| e.saturating_sub(now_ms));
    let lifetime = match (left, reauth) {
        (None, None) => 0,
        (None, Some(r)) => r,
        (Some(l), None) => l,
        (Some(l), Some(r)) => l.min(r),
    };
    lifetime.max(0)
}
