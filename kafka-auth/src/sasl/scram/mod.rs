//! SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka speaks them.
//!
//! | file          | what |
//! | ------------- | ---- |
//! | `mod.rs`      | [`ScramCredential`], [`salted_password`], the RFC 5802 functions on a [`ScramMechanism`] (the type itself is in `sasl/mechanism.rs`) |
//! | `messages.rs` | the four SCRAM messages: strict parsing (no data echoed in errors), `saslname` escaping, base64, fresh nonces |
//! | `server.rs`   | the broker's side: client-first -> server-first -> client-final -> v= |
//! | `client.rs`   | our clients' side, which checks the server's signature |
//!
//! Imports go one way: `messages.rs` uses only `sasl/error.rs`; `mod.rs` the mechanism,
//! error and secret files of `sasl/`; `server.rs` and `client.rs` those and `messages.rs`.
//! Nothing here uses `sasl/mod.rs`: the server takes the credential lookup as a closure,
//! which the exchange in `sasl/mod.rs` builds from its `CredentialStore`.
//!
//! The functions follow Kafka's `ScramFormatter`: `SaltedPassword = Hi(password, salt, i)`
//! (PBKDF2-HMAC with the mechanism's hash), `ClientKey = HMAC(SaltedPassword, "Client Key")`,
//! `StoredKey = H(ClientKey)`, `ServerKey = HMAC(SaltedPassword, "Server Key")`. Passwords are
//! taken as their UTF-8 bytes, without SASLprep, as Kafka does.

use std::fmt;

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256, Sha512};

use super::error::SaslError;
use super::secret::Secret;

pub use super::mechanism::{MAX_ALTER_ITERATIONS, MIN_ITERATIONS, ScramMechanism};

pub(crate) mod client;
pub(crate) mod messages;
pub(crate) mod server;

#[cfg(test)]
pub(crate) mod tests;

/// The most iterations this crate computes, and the most a client accepts from a server by
/// default: a hostile server cannot make the client spin for long (Kafka's client has no
/// upper bound).
pub const MAX_ITERATIONS: u32 = 1_000_000;

/// The SCRAM computations (Kafka's `ScramFormatter`); the mechanism's names, ids and bounds
/// are in `sasl/mechanism.rs`.
impl ScramMechanism {
    /// `H(data)`.
    pub(crate) fn hash(self, data: &[u8]) -> Vec<u8> {
        match self {
            Self::Sha256 => Sha256::digest(data).to_vec(),
            Self::Sha512 => Sha512::digest(data).to_vec(),
        }
    }

    /// `HMAC(key, part1 || part2 || ...)`.
    pub(crate) fn hmac(self, key: &[u8], parts: &[&[u8]]) -> Result<Vec<u8>, SaslError> {
        fn run<M: Mac + hmac::digest::KeyInit>(
            key: &[u8],
            parts: &[&[u8]],
        ) -> Result<Vec<u8>, SaslError> {
            // HMAC takes keys of any length: this error cannot happen.
            let mut mac = <M as Mac>::new_from_slice(key)
                .map_err(|_| SaslError::Internal("HMAC refused its key"))?;
            for p in parts {
                mac.update(p);
            }
            Ok(mac.finalize().into_bytes().to_vec())
        }
        match self {
            Self::Sha256 => run::<Hmac<Sha256>>(key, parts),
            Self::Sha512 => run::<Hmac<Sha512>>(key, parts),
        }
    }

    /// `Hi(password, salt, iterations)`: PBKDF2-HMAC with this hash, one block.
    fn hi(self, password: &[u8], salt: &[u8], iterations: u32) -> Vec<u8> {
        let mut out = vec![0; self.hash_len()];
        match self {
            Self::Sha256 => pbkdf2::pbkdf2_hmac::<Sha256>(password, salt, iterations, &mut out),
            Self::Sha512 => pbkdf2::pbkdf2_hmac::<Sha512>(password, salt, iterations, &mut out),
        }
        out
    }

    /// `SaltedPassword` for a password, checked iteration count.
    fn salted(self, password: &[u8], salt: &[u8], iterations: u32) -> Result<Vec<u8>, SaslError> {
        self.check_iterations(iterations, MAX_ITERATIONS)?;
        Ok(self.hi(password, salt, iterations))
    }

    /// `ClientKey` and `ServerKey` from a salted password.
    pub(crate) fn keys(self, salted: &[u8]) -> Result<(Vec<u8>, Vec<u8>), SaslError> {
        Ok((
            self.hmac(salted, &[b"Client Key"])?,
            self.hmac(salted, &[b"Server Key"])?,
        ))
    }
}

/// What a broker keeps per user and mechanism to check SCRAM logins (Kafka's
/// `ScramCredential`, the `UserScramCredentialRecord` of the metadata log). It does not hold
/// the password: a stolen credential does not log in (but allows a dictionary attack, so it
/// is kept out of logs: `Debug` shows the iteration count and the salt's length only).
#[derive(Clone, PartialEq, Eq)]
pub struct ScramCredential {
    /// The salt, random bytes chosen when the password was set.
    pub salt: Vec<u8>,
    /// `H(HMAC(SaltedPassword, "Client Key"))`: what a client's proof is checked against.
    pub stored_key: Vec<u8>,
    /// `HMAC(SaltedPassword, "Server Key")`: signs the server-final message.
    pub server_key: Vec<u8>,
    /// The PBKDF2 iteration count.
    pub iterations: u32,
}

impl ScramCredential {
    /// The credential for `password` (as Kafka's `ScramFormatter.generateCredential` with a
    /// given salt). The iteration count must be within `MIN_ITERATIONS..=MAX_ITERATIONS`.
    pub fn from_password(
        mechanism: ScramMechanism,
        password: &[u8],
        salt: &[u8],
        iterations: u32,
    ) -> Result<Self, SaslError> {
        let salted = salted_password(mechanism, password, salt, iterations)?;
        Self::from_salted_password(mechanism, salted.expose(), salt, iterations)
    }

    /// The credential from a salted password, as Kafka's controller computes it on receiving
    /// an AlterUserScramCredentials upsertion (`StoredKey = H(ClientKey)`,
    /// `ServerKey = HMAC(salted, "Server Key")`). Checks the iteration count like
    /// [`Self::from_password`]; the caller applies Kafka's stricter
    /// [`MAX_ALTER_ITERATIONS`] to the admin request itself.
    pub fn from_salted_password(
        mechanism: ScramMechanism,
        salted_password: &[u8],
        salt: &[u8],
        iterations: u32,
    ) -> Result<Self, SaslError> {
        mechanism.check_iterations(iterations, MAX_ITERATIONS)?;
        let (client_key, server_key) = mechanism.keys(salted_password)?;
        Ok(Self {
            salt: salt.to_vec(),
            stored_key: mechanism.hash(&client_key),
            server_key,
            iterations,
        })
    }
}

impl fmt::Debug for ScramCredential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScramCredential")
            .field("salt_len", &self.salt.len())
            .field("stored_key", &"[hidden]")
            .field("server_key", &"[hidden]")
            .field("iterations", &self.iterations)
            .finish()
    }
}

/// `SaltedPassword = Hi(password, salt, iterations)`: what Kafka's admin client sends in an
/// AlterUserScramCredentials upsertion (`ScramFormatter.saltedPassword`), so that the
/// password itself never leaves the client. The iteration count must be within
/// `MIN_ITERATIONS..=MAX_ITERATIONS`.
pub fn salted_password(
    mechanism: ScramMechanism,
    password: &[u8],
    salt: &[u8],
    iterations: u32,
) -> Result<Secret, SaslError> {
    mechanism
        .salted(password, salt, iterations)
        .map(Secret::new)
}
