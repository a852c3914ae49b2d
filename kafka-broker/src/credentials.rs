//! SCRAM credentials (`SCRAM-SHA-256`, `SCRAM-SHA-512`) of a node, kept as Kafka's metadata
//! records: the node's credentials are UserScramCredentialRecords in
//! `scram-credentials.records` in the data directory ([`crate::record_file`]: rewritten
//! atomically on every change) and read back at start.
//!
//! Salted passwords come from the client (AlterUserScramCredentials); the stored and server
//! keys are computed here ([`ScramCredential::from_salted_password`]); neither the password
//! nor the salted password is kept.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::RwLock;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use kafka_auth::sasl::{ScramCredential, ScramMechanism};
use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::alter_user_scram_credentials_response::AlterUserScramCredentialsResult;
use kafka_protocol::messages::{
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse,
};
use kafka_protocol::metadata::{MetadataRecord, UserScramCredentialRecord};

use crate::error::BrokerError;
use crate::sync::{read, write};

/// SCRAM credentials by (mechanism, user): what a node checks logins against, and what a
/// cluster's metadata image keeps.
pub type ScramMap = BTreeMap<(ScramMechanism, String), ScramCredential>;

/// The file of a node's SCRAM credentials.
pub const FILE: &str = "scram-credentials.records";

/// The SCRAM credentials of a node, by (mechanism, user).
#[derive(Debug)]
pub struct ScramCredentials {
    path: Option<PathBuf>,
    map: RwLock<BTreeMap<(ScramMechanism, String), ScramCredential>>,
    /// In a cluster: the offset of the metadata image the credentials were last taken from.
    image_offset: AtomicU64,
}

impl ScramCredentials {
    /// Credentials kept only in memory (tests).
    pub fn in_memory() -> Self {
        Self {
            path: None,
            map: RwLock::new(BTreeMap::new()),
            image_offset: AtomicU64::new(0),
        }
    }

    /// The credentials of a node of a cluster: none until the metadata image brings them
    /// ([`Self::follow_image`]); no file is read or written (the metadata log keeps them).
    pub fn clustered() -> Self {
        Self::in_memory()
    }

    /// Takes the credentials of the metadata image at `offset` (a node of a cluster): they
    /// replace every credential held. An image older than the last one taken changes nothing.
    pub fn follow_image(&self, offset: u64, credentials: &ScramMap) {
        let mut map = write(&self.map);
        if self.image_offset.load(Ordering::Acquire) > offset {
            return;
        }
        self.image_offset.store(offset, Ordering::Release);
        if *map != *credentials {
            map.clone_from(credentials);
        }
    }

    /// The credentials of the data directory `dir` (none when the file does not exist).
    pub fn open(dir: &Path) -> Result<Self, BrokerError> {
        let path = dir.join(FILE);
        let mut map = BTreeMap::new();
        for record in crate::record_file::read(&path)? {
            if let MetadataRecord::UserScramCredential(r) = record {
                let Some(mech) = ScramMechanism::from_type_id(r.mechanism) else {
                    continue;
                };
                let cred = ScramCredential {
                    salt: r.salt.to_vec(),
                    stored_key: r.stored_key.to_vec(),
                    server_key: r.server_key.to_vec(),
                    iterations: u32::try_from(r.iterations).unwrap_or(0),
                };
                map.insert((mech, r.name.to_string()), cred);
            }
        }
        Ok(Self {
            path: Some(path),
            map: RwLock::new(map),
            image_offset: AtomicU64::new(0),
        })
    }

    /// The credential of `user` for `mechanism`.
    pub fn get(&self, mechanism: ScramMechanism, user: &str) -> Option<ScramCredential> {
        read(&self.map).get(&(mechanism, user.to_owned())).cloned()
    }

    /// Every user with a credential, and their (mechanism, iterations).
    pub fn describe(&self) -> BTreeMap<String, Vec<(ScramMechanism, u32)>> {
        let mut out: BTreeMap<String, Vec<(ScramMechanism, u32)>> = BTreeMap::new();
        for ((mech, user), cred) in read(&self.map).iter() {
            out.entry(user.clone())
                .or_default()
                .push((*mech, cred.iterations));
        }
        out
    }

    /// Applies deletions and upsertions together, written to disk before they take effect.
    pub fn alter(
        &self,
        deletions: &[(ScramMechanism, String)],
        upsertions: Vec<((ScramMechanism, String), ScramCredential)>,
    ) -> Result<(), BrokerError> {
        let mut map = write(&self.map);
        let mut next = map.clone();
        for key in deletions {
            next.remove(key);
        }
        for (key, cred) in upsertions {
            next.insert(key, cred);
        }
        if let Some(path) = &self.path {
            save(path, &next)?;
        }
        *map = next;
        Ok(())
    }
}

/// A credential to store, by (mechanism, user).
pub type Upsertion = ((ScramMechanism, String), ScramCredential);

/// Bounds Kafka puts on an upsertion's iterations.
const MIN_ITERATIONS: i32 = 4096;
const MAX_ITERATIONS: i32 = 16384;

/// What an AlterUserScramCredentials request comes to, checked as Kafka's controller checks
/// it (`ScramControlManager.alterCredentials`) against the credentials that exist: the
/// deletions and upsertions to make, and the users refused with their code and message. The
/// single node applies it to its store ([`ScramAlteration::apply_to`]); a cluster's
/// controller turns it into records.
#[derive(Debug, Clone, Default)]
pub struct ScramAlteration {
    /// (user, mechanism) to delete.
    pub deletions: Vec<(String, ScramMechanism)>,
    /// (user, credential to store).
    pub upsertions: Vec<(String, Upsertion)>,
    /// (user, error, message).
    pub errors: Vec<(String, ErrorCode, String)>,
}

/// Checks an AlterUserScramCredentials request (authorization aside) with `exists` telling
/// whether a user has a credential for a mechanism. Kafka's rules: a user named twice in one
/// request (whatever the mechanisms) is DUPLICATE_RESOURCE, an unknown mechanism
/// UNSUPPORTED_SASL_MECHANISM, iterations outside 4096..=16384 or an empty user, salt or
/// salted password UNACCEPTABLE_CREDENTIAL, deleting a credential that does not exist
/// RESOURCE_NOT_FOUND.
pub fn plan_alteration(
    exists: impl Fn(ScramMechanism, &str) -> bool,
    r: &AlterUserScramCredentialsRequest,
) -> ScramAlteration {
    // As Kafka's controller (ScramControlManager.alterCredentials): changes are keyed by the
    // user name alone, so a user named twice in one request (two mechanisms, or a deletion
    // and an upsertion) is DUPLICATE_RESOURCE; `kafka-configs` sends one change per request.
    let mut deletions: Vec<(String, ScramMechanism)> = Vec::new();
    let mut upsertions: Vec<(String, Upsertion)> = Vec::new();
    let mut errors: Vec<(String, ErrorCode, String)> = Vec::new();
    let failed = |errors: &[(String, ErrorCode, String)], user: &str| {
        errors.iter().any(|(u, _, _)| u == user)
    };
    const TWICE: &str = "A user credential cannot be altered twice in the same request";
    for d in &r.deletions {
        let user = d.name.to_string();
        if failed(&errors, &user) {
            continue;
        }
        if let Some(i) = deletions.iter().position(|(u, _)| *u == user) {
            deletions.remove(i);
            errors.push((user, ErrorCode::DUPLICATE_RESOURCE, TWICE.into()));
            continue;
        }
        let Some(mech) = ScramMechanism::from_type_id(d.mechanism) else {
            errors.push((
                user,
                ErrorCode::UNSUPPORTED_SASL_MECHANISM,
                "Unknown SCRAM mechanism".into(),
            ));
            continue;
        };
        if !exists(mech, &user) {
            errors.push((
                user,
                ErrorCode::RESOURCE_NOT_FOUND,
                "Attempt to delete a user credential that does not exist".into(),
            ));
            continue;
        }
        deletions.push((user, mech));
    }
    for u in &r.upsertions {
        let user = u.name.to_string();
        if failed(&errors, &user) {
            continue;
        }
        let deleted = deletions.iter().position(|(x, _)| *x == user);
        let upserted = upsertions.iter().position(|(x, _)| *x == user);
        if deleted.is_some() || upserted.is_some() {
            if let Some(i) = deleted {
                deletions.remove(i);
            }
            if let Some(i) = upserted {
                upsertions.remove(i);
            }
            errors.push((user, ErrorCode::DUPLICATE_RESOURCE, TWICE.into()));
            continue;
        }
        let Some(mech) = ScramMechanism::from_type_id(u.mechanism) else {
            errors.push((
                user,
                ErrorCode::UNSUPPORTED_SASL_MECHANISM,
                "Unknown SCRAM mechanism".into(),
            ));
            continue;
        };
        if user.is_empty() {
            errors.push((
                user,
                ErrorCode::UNACCEPTABLE_CREDENTIAL,
                "Username must not be empty".into(),
            ));
            continue;
        }
        if u.iterations < MIN_ITERATIONS {
            errors.push((
                user,
                ErrorCode::UNACCEPTABLE_CREDENTIAL,
                "Too few iterations".into(),
            ));
            continue;
        }
        if u.iterations > MAX_ITERATIONS {
            errors.push((
                user,
                ErrorCode::UNACCEPTABLE_CREDENTIAL,
                "Too many iterations".into(),
            ));
            continue;
        }
        if u.salt.is_empty() || u.salted_password.is_empty() {
            errors.push((
                user,
                ErrorCode::UNACCEPTABLE_CREDENTIAL,
                "Salt and salted password must not be empty".into(),
            ));
            continue;
        }
        match ScramCredential::from_salted_password(
            mech,
            &u.salted_password,
            &u.salt,
            u.iterations.unsigned_abs(),
        ) {
            Ok(cred) => upsertions.push((user.clone(), ((mech, user), cred))),
            Err(e) => errors.push((user, ErrorCode::UNACCEPTABLE_CREDENTIAL, e.to_string())),
        }
    }
    ScramAlteration {
        deletions,
        upsertions,
        errors,
    }
}

impl ScramAlteration {
    /// Whether nothing is to change.
    pub fn is_empty(&self) -> bool {
        self.deletions.is_empty() && self.upsertions.is_empty()
    }

    /// Makes the changes in `store` (a single node), together.
    pub fn apply_to(&self, store: &ScramCredentials) -> Result<(), BrokerError> {
        if self.is_empty() {
            return Ok(());
        }
        let del: Vec<(ScramMechanism, String)> = self
            .deletions
            .iter()
            .map(|(u, m)| (*m, u.clone()))
            .collect();
        let ups: Vec<Upsertion> = self.upsertions.iter().map(|(_, x)| x.clone()).collect();
        store.alter(&del, ups)
    }

    /// The answer once the changes are stored (`Err`: storing failed, UNKNOWN_SERVER_ERROR for
    /// each user changed). Kafka's order: the deletions, the upsertions, then the refusals.
    pub fn response(&self, stored: Result<(), String>) -> AlterUserScramCredentialsResponse {
        let done = self
            .deletions
            .iter()
            .map(|(u, _)| u.clone())
            .chain(self.upsertions.iter().map(|(u, _)| u.clone()));
        let mut results: Vec<AlterUserScramCredentialsResult> = done
            .map(|user| {
                let (code, message) = match &stored {
                    Ok(()) => (ErrorCode::NONE, None),
                    Err(e) => (ErrorCode::UNKNOWN_SERVER_ERROR, Some(e.clone())),
                };
                AlterUserScramCredentialsResult {
                    user: KStr::from(user),
                    error_code: code.0,
                    error_message: message.map(KStr::from),
                    ..Default::default()
                }
            })
            .collect();
        results.extend(self.errors.iter().map(|(user, code, message)| {
            AlterUserScramCredentialsResult {
                user: KStr::from(user.clone()),
                error_code: code.0,
                error_message: Some(KStr::from(message.clone())),
                ..Default::default()
            }
        }));
        AlterUserScramCredentialsResponse {
            results,
            ..Default::default()
        }
    }
}

fn save(
    path: &Path,
    map: &BTreeMap<(ScramMechanism, String), ScramCredential>,
) -> Result<(), BrokerError> {
    let records: Vec<MetadataRecord> = map
        .iter()
        .map(|((mech, user), cred)| {
            MetadataRecord::UserScramCredential(UserScramCredentialRecord {
                name: KStr::from(user.clone()),
                mechanism: mech.type_id(),
                salt: Bytes::from(cred.salt.clone()),
                stored_key: Bytes::from(cred.stored_key.clone()),
                server_key: Bytes::from(cred.server_key.clone()),
                iterations: i32::try_from(cred.iterations).unwrap_or(i32::MAX),
                ..Default::default()
            })
        })
        .collect();
    crate::record_file::write(path, &records)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn credentials_survive_a_reopen_and_damage_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = ScramCredentials::open(dir.path()).unwrap();
        let cred =
            ScramCredential::from_password(ScramMechanism::Sha256, b"pw", b"salt", 4096).unwrap();
        store
            .alter(
                &[],
                vec![((ScramMechanism::Sha256, "alice".into()), cred.clone())],
            )
            .unwrap();
        store
            .alter(
                &[],
                vec![((ScramMechanism::Sha512, "bob".into()), {
                    ScramCredential::from_password(ScramMechanism::Sha512, b"pw2", b"s2", 8192)
                        .unwrap()
                })],
            )
            .unwrap();
        store
            .alter(&[(ScramMechanism::Sha512, "bob".into())], vec![])
            .unwrap();
        let again = ScramCredentials::open(dir.path()).unwrap();
        assert_eq!(again.get(ScramMechanism::Sha256, "alice"), Some(cred));
        assert_eq!(again.get(ScramMechanism::Sha512, "bob"), None);
        assert_eq!(again.describe().len(), 1);
        let path = dir.path().join(FILE);
        let mut bytes = std::fs::read(&path).unwrap();
        let last = bytes.len() - 6;
        bytes[last] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        assert!(ScramCredentials::open(dir.path()).is_err());
    }
}
