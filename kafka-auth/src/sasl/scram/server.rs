//! The broker's side of a SCRAM exchange (Kafka's `ScramSaslServer`).
//!
//! ```text
//! client-first  -> lookup credential, check authzid   -> server-first  (Challenge)
//! client-final  -> check c=, nonce, proof              -> server-final  (Done) or error
//! ```
//!
//! The machine is consumed by each step: there is no state in which a wrong proof could be
//! followed by anything but an error (the pitfall a Rust broker once fell into: reaching the
//! last state is not being authenticated).

use super::messages::{ClientFinal, ClientFirst, encode64, random_nonce};
use super::{ScramCredential, ScramMechanism};
use crate::sasl::error::SaslError;
use crate::sasl::secret::Secret;

/// How the server finds a user's credential: the SCRAM credential of the user for the
/// mechanism, if one is set. The exchange in `sasl/mod.rs` passes its `CredentialStore`'s
/// `scram_credential`, so this file needs no store.
pub(crate) type CredentialLookup<'a> = &'a dyn Fn(ScramMechanism, &str) -> Option<ScramCredential>;

/// Where a SCRAM server exchange stands.
#[derive(Debug)]
pub(crate) enum ScramServer {
    /// Waiting for the client-first message.
    AwaitFirst {
        mechanism: ScramMechanism,
        /// A fixed server nonce (tests, fuzzing); random when `None`.
        fixed_nonce: Option<String>,
    },
    /// Server-first sent; waiting for the client-final message.
    AwaitFinal(Box<AwaitFinal>),
}

/// What the server remembers between its two steps.
#[derive(Debug)]
pub(crate) struct AwaitFinal {
    mechanism: ScramMechanism,
    username: String,
    gs2_header: String,
    client_first_bare: String,
    server_first: String,
    nonce: String,
    stored_key: Secret,
    server_key: Secret,
}

/// The result of a step that did not fail.
#[derive(Debug)]
pub(crate) enum ScramServerStep {
    /// Send this server-first message and wait in this state.
    Challenge(ScramServer, Vec<u8>),
    /// Authenticated as this user; send this server-final message.
    Done {
        response: Vec<u8>,
        authorization_id: String,
    },
}

impl ScramServer {
    pub(crate) fn new(mechanism: ScramMechanism, fixed_nonce: Option<String>) -> Self {
        Self::AwaitFirst {
            mechanism,
            fixed_nonce,
        }
    }

    /// One step. Consumes the state: a caller keeps the returned state only on `Challenge`.
    /// `lookup` is asked (once) only at the client-first message.
    pub(crate) fn step(
        self,
        message: &[u8],
        lookup: CredentialLookup<'_>,
    ) -> Result<ScramServerStep, SaslError> {
        match self {
            Self::AwaitFirst {
                mechanism,
                fixed_nonce,
            } => client_first(mechanism, fixed_nonce, message, lookup),
            Self::AwaitFinal(state) => state.client_final(message),
        }
    }
}

fn client_first(
    mechanism: ScramMechanism,
    fixed_nonce: Option<String>,
    message: &[u8],
    lookup: CredentialLookup<'_>,
) -> Result<ScramServerStep, SaslError> {
    let first = ClientFirst::parse(message)?;
    if first.token_auth {
        // Kafka looks the name up as a delegation token id; we have no delegation tokens.
        return Err(SaslError::DelegationTokenUnsupported);
    }
    // As Kafka: an unknown user fails here, at the first message, with the same words as a
    // wrong password (no fake salt is made up).
    let ScramCredential {
        salt,
        stored_key,
        server_key,
        iterations,
    } = lookup(mechanism, &first.username).ok_or(SaslError::AuthenticationFailed)?;
    if first.authzid.as_ref().is_some_and(|a| *a != first.username) {
        return Err(SaslError::AuthorizationIdMismatch);
    }
    // A credential stored with too few iterations is not used (Kafka: "Iterations ... is less
    // than the minimum").
    mechanism.check_iterations(iterations, u32::MAX)?;
    let server_nonce = match fixed_nonce {
        Some(n) => n,
        None => random_nonce()?,
    };
    let nonce = format!("{}{server_nonce}", first.nonce);
    let server_first = format!("r={nonce},s={},i={iterations}", encode64(&salt));
    let response = server_first.as_bytes().to_vec();
    let state = AwaitFinal {
        mechanism,
        username: first.username,
        gs2_header: first.gs2_header.to_owned(),
        client_first_bare: first.bare.to_owned(),
        server_first,
        nonce,
        stored_key: Secret::new(stored_key),
        server_key: Secret::new(server_key),
    };
    Ok(ScramServerStep::Challenge(
        ScramServer::AwaitFinal(Box::new(state)),
        response,
    ))
}

impl AwaitFinal {
    fn client_final(self, message: &[u8]) -> Result<ScramServerStep, SaslError> {
        let m = self.mechanism;
        let last = ClientFinal::parse(message)?;
        if last.channel_binding != self.gs2_header.as_bytes() {
            return Err(SaslError::ChannelBindingMismatch);
        }
        if last.nonce != self.nonce {
            return Err(SaslError::NonceMismatch);
        }
        if last.proof.len() != m.hash_len() {
            return Err(SaslError::Malformed {
                message: "SCRAM client-final message",
                reason: "the proof has the wrong length for the mechanism",
            });
        }
        let auth_message = [
            self.client_first_bare.as_bytes(),
            b",",
            self.server_first.as_bytes(),
            b",",
            last.without_proof.as_bytes(),
        ];
        // ClientKey = proof XOR HMAC(StoredKey, AuthMessage); it is right iff H(ClientKey) is
        // the stored key (compared in constant time).
        let client_signature = m.hmac(self.stored_key.expose(), &auth_message)?;
        let client_key: Vec<u8> = last
            .proof
            .iter()
            .zip(&client_signature)
            .map(|(a, b)| a ^ b)
            .collect();
        if !self.stored_key.ct_eq(&m.hash(&client_key)) {
            return Err(SaslError::AuthenticationFailed);
        }
        let server_signature = m.hmac(self.server_key.expose(), &auth_message)?;
        Ok(ScramServerStep::Done {
            response: format!("v={}", encode64(&server_signature)).into_bytes(),
            authorization_id: self.username,
        })
    }
}
