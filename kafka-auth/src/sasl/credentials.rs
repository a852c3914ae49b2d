//! Where the broker's SASL exchanges find credentials: the [`CredentialStore`] trait the
//! broker implements, and [`StaticCredentials`], one held in memory. Imports the secret,
//! mechanism and SCRAM credential types only; the mechanisms themselves (`plain.rs`,
//! `scram/server.rs`) never see a store, they are given one lookup function each by the
//! exchange in `mod.rs`.

use std::collections::BTreeMap;

use super::mechanism::ScramMechanism;
use super::scram::ScramCredential;
use super::secret::Secret;

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
