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

use bytes::Bytes;
use kafka_auth::sasl::{ScramCredential, ScramMechanism};
use kafka_protocol::KStr;
use kafka_protocol::metadata::{MetadataRecord, UserScramCredentialRecord};

use crate::error::BrokerError;
use crate::sync::{read, write};

/// The file of a node's SCRAM credentials.
pub const FILE: &str = "scram-credentials.records";

/// The SCRAM credentials of a node, by (mechanism, user).
#[derive(Debug)]
pub struct ScramCredentials {
    path: Option<PathBuf>,
    map: RwLock<BTreeMap<(ScramMechanism, String), ScramCredential>>,
}

impl ScramCredentials {
    /// Credentials kept only in memory (tests).
    pub fn in_memory() -> Self {
        Self {
            path: None,
            map: RwLock::new(BTreeMap::new()),
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
