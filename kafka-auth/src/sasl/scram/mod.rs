//! SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka speaks them.
//!
//! | file          | what                                                                  |
//! | ------------- | --------------------------------------------------------------------- |
//! | `mod.rs`      | [`ScramMechanism`], [`ScramCredential`], the RFC 5802 functions        |
//! | `messages.rs` | parsing of the four SCRAM messages (no data echoed in errors)          |
//! | `server.rs`   | the broker's side: client-first -> server-first -> client-final -> v=  |
//! | `client.rs`   | our clients' side, which checks the server's signature                 |
//!
//! The functions follow Kafka's `ScramFormatter`: `SaltedPassword = Hi(password, salt, i)`
//! (PBKDF2-HMAC with the mechanism's hash), `ClientKey = HMAC(SaltedPassword, "Client Key")`,
//! `StoredKey = H(ClientKey)`, `ServerKey = HMAC(SaltedPassword, "Server Key")`. Passwords are
//! taken as their UTF-8 bytes, without SASLprep, as Kafka does.

use std::fmt;

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256, Sha512};

use super::{Mechanism, SaslError};

pub(crate) mod client;
pub(crate) mod messages;
pub(crate) mod server;

#[cfg(test)]
pub(crate) mod tests;

/// The fewest iterations Kafka accepts for either mechanism (`ScramMechanism.minIterations`):
/// a server refuses to use a credential with fewer, a client refuses a server that asks fewer.
pub const MIN_ITERATIONS: u32 = 4096;

/// The most iterations Kafka's controller accepts in AlterUserScramCredentials
/// (`ScramControlManager.MAX_ITERATIONS`; more is answered UNACCEPTABLE_CREDENTIAL).
pub const MAX_ALTER_ITERATIONS: u32 = 16384;

/// The most iterations this crate computes, and the most a client accepts from a server by
/// default: a hostile server cannot make the client spin for long (Kafka's client has no
/// upper bound).
pub const MAX_ITERATIONS: u32 = 1_000_000;

/// A SCRAM hash function, as Kafka's `ScramMechanism` (the mechanism names) and the admin
/// API's `ScramMechanism` (the type ids of DescribeUserScramCredentials and
/// AlterUserScramCredentials).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum ScramMechanism {
    /// SCRAM-SHA-256 (RFC 7677), type id 1.
    Sha256,
    /// SCRAM-SHA-512, type id 2.
    Sha512,
}

impl ScramMechanism {
    /// Both mechanisms.
    pub const ALL: [Self; 2] = [Self::Sha256, Self::Sha512];

    /// The SASL mechanism name: `SCRAM-SHA-256` or `SCRAM-SHA-512`.
    pub fn name(self) -> &'static str {
        self.mechanism().name()
    }

    /// The SASL mechanism this is.
    pub fn mechanism(self) -> Mechanism {
        match self {
            Self::Sha256 => Mechanism::ScramSha256,
            Self::Sha512 => Mechanism::ScramSha512,
        }
    }

    /// The type id Kafka's admin protocol uses (1 for SHA-256, 2 for SHA-512; 0 is UNKNOWN).
    pub fn type_id(self) -> i8 {
        match self {
            Self::Sha256 => 1,
            Self::Sha512 => 2,
        }
    }

    /// The mechanism with admin type id `id`, if it is 1 or 2.
    pub fn from_type_id(id: i8) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.type_id() == id)
    }

    /// The fewest iterations Kafka accepts ([`MIN_ITERATIONS`], the same for both).
    pub fn min_iterations(self) -> u32 {
        MIN_ITERATIONS
    }

    /// The most iterations Kafka accepts when a credential is set ([`MAX_ALTER_ITERATIONS`]).
    pub fn max_alter_iterations(self) -> u32 {
        MAX_ALTER_ITERATIONS
    }

    /// Length of the hash (and so of keys, proofs and signatures): 32 or 64 bytes.
    pub fn hash_len(self) -> usize {
        match self {
            Self::Sha256 => 32,
            Self::Sha512 => 64,
        }
    }

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

    /// Refuses an iteration count outside `MIN_ITERATIONS..=max`.
    pub(crate) fn check_iterations(self, iterations: u32, max: u32) -> Result<(), SaslError> {
        let min = self.min_iterations();
        if (min..=max).contains(&iterations) {
            Ok(())
        } else {
            Err(SaslError::IterationCount {
                iterations,
                min,
                max,
            })
        }
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

impl fmt::Display for ScramMechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl TryFrom<Mechanism> for ScramMechanism {
    type Error = SaslError;

    /// The SCRAM mechanism of a SASL mechanism (an error for PLAIN).
    fn try_from(m: Mechanism) -> Result<Self, SaslError> {
        m.scram()
            .ok_or_else(|| SaslError::UnsupportedMechanism(m.name().to_owned()))
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
) -> Result<super::Secret, SaslError> {
    mechanism
        .salted(password, salt, iterations)
        .map(super::Secret::new)
}

/// A user name as a SCRAM `saslname`: `=` becomes `=3D` and `,` becomes `=2C`
/// (Kafka's `ScramFormatter.saslName`).
pub(crate) fn escape_saslname(username: &str) -> String {
    let mut out = String::with_capacity(username.len());
    for c in username.chars() {
        match c {
            '=' => out.push_str("=3D"),
            ',' => out.push_str("=2C"),
            c => out.push(c),
        }
    }
    out
}

/// A `saslname` back to a user name: `=2C` and `=3D` are the only escapes; any other `=` is
/// malformed (RFC 5802 section 5.1, Kafka's `ScramFormatter.username`).
pub(crate) fn unescape_saslname(saslname: &str) -> Option<String> {
    let mut out = String::with_capacity(saslname.len());
    let mut rest = saslname;
    while let Some(i) = rest.find('=') {
        out.push_str(rest.get(..i)?);
        let after = rest.get(i..)?;
        if let Some(r) = after.strip_prefix("=2C") {
            out.push(',');
            rest = r;
        } else if let Some(r) = after.strip_prefix("=3D") {
            out.push('=');
            rest = r;
        } else {
            return None;
        }
    }
    out.push_str(rest);
    Some(out)
}
