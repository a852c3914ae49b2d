//! The mechanisms as names and numbers: [`Mechanism`] (what SaslHandshake names) and
//! [`ScramMechanism`] (the SCRAM hash, with the admin API's type id and Kafka's iteration
//! bounds). Plain data that every other file of `sasl/` shares; the SCRAM computations on a
//! `ScramMechanism` are in `scram/mod.rs`. Imports only `error.rs`.

use std::fmt;

use super::error::SaslError;

/// A SASL mechanism, by the name Kafka's SaslHandshake carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Mechanism {
    /// `PLAIN`: user name and password in clear (so only over TLS in production).
    Plain,
    /// `SCRAM-SHA-256`.
    ScramSha256,
    /// `SCRAM-SHA-512`.
    ScramSha512,
    /// `OAUTHBEARER` (RFC 7628): a bearer token (a JWT) instead of a password; its exchanges
    /// are made with [`crate::sasl::ServerExchange::oauthbearer`] and
    /// [`crate::sasl::ClientExchange::oauthbearer`].
    OAuthBearer,
}

impl Mechanism {
    /// The mechanisms that authenticate with a user name and password (what
    /// [`crate::sasl::ServerExchange::new`] and [`crate::sasl::ClientExchange::new`] take).
    pub const ALL: [Self; 3] = [Self::Plain, Self::ScramSha256, Self::ScramSha512];

    /// Every mechanism this crate implements: [`Self::ALL`] and OAUTHBEARER.
    pub const SUPPORTED: [Self; 4] = [
        Self::Plain,
        Self::ScramSha256,
        Self::ScramSha512,
        Self::OAuthBearer,
    ];

    /// Kafka's name for the mechanism.
    pub fn name(self) -> &'static str {
        match self {
            Self::Plain => "PLAIN",
            Self::ScramSha256 => "SCRAM-SHA-256",
            Self::ScramSha512 => "SCRAM-SHA-512",
            Self::OAuthBearer => "OAUTHBEARER",
        }
    }

    /// The mechanism called `name`, compared exactly as Kafka's broker does (case matters).
    /// Anything else is [`SaslError::UnsupportedMechanism`] (UNSUPPORTED_SASL_MECHANISM).
    pub fn from_name(name: &str) -> Result<Self, SaslError> {
        Self::SUPPORTED
            .into_iter()
            .find(|m| m.name() == name)
            .ok_or_else(|| SaslError::UnsupportedMechanism(shown(name)))
    }

    /// The SCRAM hash of a SCRAM mechanism (`None` for PLAIN and OAUTHBEARER).
    pub fn scram(self) -> Option<ScramMechanism> {
        match self {
            Self::Plain | Self::OAuthBearer => None,
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

/// The fewest iterations Kafka accepts for either mechanism (`ScramMechanism.minIterations`):
/// a server refuses to use a credential with fewer, a client refuses a server that asks fewer.
pub const MIN_ITERATIONS: u32 = 4096;

/// The most iterations Kafka's controller accepts in AlterUserScramCredentials
/// (`ScramControlManager.MAX_ITERATIONS`; more is answered UNACCEPTABLE_CREDENTIAL).
pub const MAX_ALTER_ITERATIONS: u32 = 16384;

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
}

impl fmt::Display for ScramMechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl TryFrom<Mechanism> for ScramMechanism {
    type Error = SaslError;

    /// The SCRAM mechanism of a SASL mechanism (an error for PLAIN and OAUTHBEARER).
    fn try_from(m: Mechanism) -> Result<Self, SaslError> {
        m.scram()
            .ok_or_else(|| SaslError::UnsupportedMechanism(m.name().to_owned()))
    }
}
