//! Our clients' side of a SCRAM exchange (Kafka's `ScramSaslClient`).
//!
//! ```text
//! new        -> client-first  n,,n=user,r=cnonce
//! step(sf)   -> check nonce and iteration count, compute the proof -> client-final (Send)
//! step(sfin) -> e=: the server's refusal; v=: check the server's signature  -> Done
//! ```
//!
//! The salted password is computed once, at the server-first message, and only the expected
//! server signature is kept after that.

use super::messages::{ServerFinal, ServerFirst, encode64, escape_saslname};
use super::{MAX_ITERATIONS, ScramMechanism, salted_password};
use crate::sasl::error::SaslError;
use crate::sasl::secret::Secret;

/// The gs2 header our client sends: no channel binding, no authorization id.
const GS2_HEADER: &str = "n,,";

/// Where a SCRAM client exchange stands.
#[cfg_attr(test, derive(Clone))]
#[derive(Debug)]
pub(crate) enum ScramClient {
    /// Client-first made; waiting for the server-first message.
    AwaitFirst {
        mechanism: ScramMechanism,
        password: Secret,
        client_first_bare: String,
        client_nonce: String,
        max_iterations: u32,
    },
    /// Client-final sent; waiting for the server-final message.
    AwaitFinal {
        /// `HMAC(ServerKey, AuthMessage)`: what `v=` must be.
        server_signature: Secret,
    },
}

/// The result of a step that did not fail.
#[derive(Debug)]
pub(crate) enum ScramClientStep {
    /// Send this client-final message and wait in this state.
    Send(ScramClient, Vec<u8>),
    /// The server proved it knows the credential.
    Done,
}

impl ScramClient {
    /// The state after the client-first message, and that message. `username` must not be
    /// empty nor hold NUL (checked by the caller).
    pub(crate) fn new(
        mechanism: ScramMechanism,
        username: &str,
        password: Secret,
        client_nonce: String,
        max_iterations: u32,
    ) -> (Self, Vec<u8>) {
        let client_first_bare = format!("n={},r={client_nonce}", escape_saslname(username));
        let first = format!("{GS2_HEADER}{client_first_bare}").into_bytes();
        (
            Self::AwaitFirst {
                mechanism,
                password,
                client_first_bare,
                client_nonce,
                max_iterations,
            },
            first,
        )
    }

    /// One step. Consumes the state: a caller keeps the returned state only on `Send`.
    pub(crate) fn step(self, message: &[u8]) -> Result<ScramClientStep, SaslError> {
        match self {
            Self::AwaitFirst {
                mechanism,
                password,
                client_first_bare,
                client_nonce,
                max_iterations,
            } => {
                let first = ServerFirst::parse(message)?;
                // The server appends its own nonce to ours (RFC 5802 section 5.1); one that
                // only echoes ours is refused too.
                if !first.nonce.starts_with(&client_nonce) || first.nonce == client_nonce {
                    return Err(SaslError::NonceMismatch);
                }
                mechanism.check_iterations(first.iterations, max_iterations.min(MAX_ITERATIONS))?;
                let salted =
                    salted_password(mechanism, password.expose(), &first.salt, first.iterations)?;
                let (client_key, server_key) = mechanism.keys(salted.expose())?;
                let stored_key = mechanism.hash(&client_key);
                let without_proof =
                    format!("c={},r={}", encode64(GS2_HEADER.as_bytes()), first.nonce);
                let auth_message = [
                    client_first_bare.as_bytes(),
                    b",",
                    first.raw.as_bytes(),
                    b",",
                    without_proof.as_bytes(),
                ];
                let client_signature = mechanism.hmac(&stored_key, &auth_message)?;
                let proof: Vec<u8> = client_key
                    .iter()
                    .zip(&client_signature)
                    .map(|(a, b)| a ^ b)
                    .collect();
                let server_signature = Secret::new(mechanism.hmac(&server_key, &auth_message)?);
                let message = format!("{without_proof},p={}", encode64(&proof)).into_bytes();
                Ok(ScramClientStep::Send(
                    Self::AwaitFinal { server_signature },
                    message,
                ))
            }
            Self::AwaitFinal { server_signature } => match ServerFinal::parse(message)? {
                ServerFinal::Error(e) => Err(SaslError::ServerError(e)),
                ServerFinal::Verifier(v) if server_signature.ct_eq(&v) => Ok(ScramClientStep::Done),
                ServerFinal::Verifier(_) => Err(SaslError::ServerSignatureMismatch),
            },
        }
    }
}
