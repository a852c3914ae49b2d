//! Describing and altering users' SCRAM credentials (DescribeUserScramCredentials and
//! AlterUserScramCredentials v0, KIP-554), as Kafka's Java `Admin` does it.
//!
//! An upsertion carries the password only as far as this client: it picks a random salt,
//! computes `SaltedPassword = Hi(password, salt, iterations)` (Kafka's
//! `ScramFormatter.saltedPassword`, here [`salted_password`]) and sends the salt, the
//! iteration count and the salted password. Both requests go to any broker; in KRaft the
//! broker forwards the alteration to the controller, which keeps the credential as a
//! UserScramCredentialRecord.

use std::collections::BTreeMap;

use bytes::Bytes;
use futures::future::BoxFuture;
use kafka_auth::sasl::scram::{MAX_ALTER_ITERATIONS, MIN_ITERATIONS};
use kafka_auth::sasl::{ScramMechanism, Secret, salted_password};
use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::{
    AlterUserScramCredentialsRequest, ApiKey, DescribeUserScramCredentialsRequest, RequestBody,
    alter_user_scram_credentials_request, describe_user_scram_credentials_request,
};

use super::{ANY, Admin, Replies, Retry, Routes, check_code, expect_body};
use crate::error::NetError;

/// Bytes of random salt per upsertion (Kafka's client uses about 130 random bits).
const SALT_LEN: usize = 24;

/// One change to a user's SCRAM credentials (Kafka's `UserScramCredentialAlteration`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScramAlteration {
    /// Sets (or replaces) the user's credential for `mechanism`. The password is salted on
    /// the client and never sent; `iterations` must be within Kafka's
    /// 4096..=16384 ([`MIN_ITERATIONS`], [`MAX_ALTER_ITERATIONS`]).
    Upsert {
        /// The user name (the principal `User:<name>` a SCRAM login gets).
        user: String,
        /// SCRAM-SHA-256 or SCRAM-SHA-512.
        mechanism: ScramMechanism,
        /// The PBKDF2 iteration count.
        iterations: u32,
        /// The password; it prints as `[hidden]`.
        password: Secret,
    },
    /// Removes the user's credential for `mechanism`.
    Delete {
        /// The user name.
        user: String,
        /// The mechanism whose credential goes.
        mechanism: ScramMechanism,
    },
}

impl ScramAlteration {
    /// An upsertion of `password` for `user` with `mechanism` and `iterations`.
    pub fn upsert(
        user: impl Into<String>,
        mechanism: ScramMechanism,
        iterations: u32,
        password: impl Into<Secret>,
    ) -> Self {
        Self::Upsert {
            user: user.into(),
            mechanism,
            iterations,
            password: password.into(),
        }
    }

    /// A deletion of `user`'s credential for `mechanism`.
    pub fn delete(user: impl Into<String>, mechanism: ScramMechanism) -> Self {
        Self::Delete {
            user: user.into(),
            mechanism,
        }
    }

    /// The user the alteration is about.
    pub fn user(&self) -> &str {
        match self {
            Self::Upsert { user, .. } | Self::Delete { user, .. } => user,
        }
    }
}

/// The credentials one user has: `(mechanism, iterations)` per mechanism, or the broker's
/// error for that user (RESOURCE_NOT_FOUND for a user without credentials).
pub type UserScramCredentials = (String, Result<Vec<(ScramMechanism, u32)>, NetError>);

fn kstr(s: &str) -> KStr {
    KStr::from(s.to_owned())
}

/// What the Java client refuses before sending, or the controller would answer: an empty
/// user name or password, an iteration count outside Kafka's bounds.
fn check_alteration(a: &ScramAlteration) -> Result<(), NetError> {
    let refuse = |code: ErrorCode, why: String| {
        Err(NetError::Kafka {
            code,
            context: format!("AlterUserScramCredentials {:?}: {why}", a.user()),
        })
    };
    if a.user().is_empty() {
        return refuse(
            ErrorCode::UNACCEPTABLE_CREDENTIAL,
            "Username must not be empty".into(),
        );
    }
    if let ScramAlteration::Upsert {
        iterations,
        password,
        ..
    } = a
    {
        if password.is_empty() {
            return refuse(
                ErrorCode::UNACCEPTABLE_CREDENTIAL,
                "Password must not be empty".into(),
            );
        }
        if !(MIN_ITERATIONS..=MAX_ALTER_ITERATIONS).contains(iterations) {
            return refuse(
                ErrorCode::UNACCEPTABLE_CREDENTIAL,
                format!(
                    "{iterations} iterations is outside the accepted \
                     {MIN_ITERATIONS}..={MAX_ALTER_ITERATIONS}"
                ),
            );
        }
    }
    Ok(())
}

/// Fresh random salt.
fn random_salt() -> Result<Vec<u8>, NetError> {
    let mut salt = vec![0u8; SALT_LEN];
    getrandom::fill(&mut salt)
        .map_err(|e| NetError::Config(format!("no random bytes for a SCRAM salt: {e}")))?;
    Ok(salt)
}

/// The wire upsertion for one alteration, salted with `salt`.
fn upsertion(
    user: &str,
    mechanism: ScramMechanism,
    iterations: u32,
    password: &Secret,
    salt: Vec<u8>,
) -> Result<alter_user_scram_credentials_request::ScramCredentialUpsertion, NetError> {
    let salted = salted_password(mechanism, password.expose(), &salt, iterations).map_err(|e| {
        NetError::Kafka {
            code: ErrorCode::UNACCEPTABLE_CREDENTIAL,
            context: format!("AlterUserScramCredentials {user:?}: {e}"),
        }
    })?;
    Ok(
        alter_user_scram_credentials_request::ScramCredentialUpsertion {
            name: kstr(user),
            mechanism: mechanism.type_id(),
            iterations: i32::try_from(iterations).unwrap_or(i32::MAX),
            salt: Bytes::from(salt),
            salted_password: Bytes::copy_from_slice(salted.expose()),
            ..Default::default()
        },
    )
}

/// The request for the alterations of the given users (each user's alterations, in order),
/// with `salt` giving each upsertion its salt. A user whose alteration cannot be built fails
/// on its own and sends nothing.
fn alter_request(
    users: &[(String, Vec<&ScramAlteration>)],
    idx: &[usize],
    mut salt: impl FnMut() -> Result<Vec<u8>, NetError>,
) -> (
    AlterUserScramCredentialsRequest,
    Vec<usize>,
    Vec<(usize, NetError)>,
) {
    let mut req = AlterUserScramCredentialsRequest::default();
    let mut sent = Vec::new();
    let mut refused = Vec::new();
    'users: for &i in idx {
        let Some((user, alterations)) = users.get(i) else {
            continue;
        };
        let mut deletions = Vec::new();
        let mut upsertions = Vec::new();
        for a in alterations {
            let built = check_alteration(a).and_then(|()| match a {
                ScramAlteration::Delete { mechanism, .. } => {
                    deletions.push(
                        alter_user_scram_credentials_request::ScramCredentialDeletion {
                            name: kstr(user),
                            mechanism: mechanism.type_id(),
                            ..Default::default()
                        },
                    );
                    Ok(())
                }
                ScramAlteration::Upsert {
                    mechanism,
                    iterations,
                    password,
                    ..
                } => {
                    upsertions.push(upsertion(user, *mechanism, *iterations, password, salt()?)?);
                    Ok(())
                }
            });
            if let Err(e) = built {
                refused.push((i, e));
                continue 'users;
            }
        }
        sent.push(i);
        req.deletions.extend(deletions);
        req.upsertions.extend(upsertions);
    }
    (req, sent, refused)
}

/// The alterations grouped by user, users in order of first appearance.
fn by_user(alterations: &[ScramAlteration]) -> Vec<(String, Vec<&ScramAlteration>)> {
    let mut order: Vec<(String, Vec<&ScramAlteration>)> = Vec::new();
    let mut pos: BTreeMap<&str, usize> = BTreeMap::new();
    for a in alterations {
        match pos.get(a.user()) {
            Some(&p) => {
                if let Some(entry) = order.get_mut(p) {
                    entry.1.push(a);
                }
            }
            None => {
                pos.insert(a.user(), order.len());
                order.push((a.user().to_owned(), vec![a]));
            }
        }
    }
    order
}

impl Admin {
    /// Describes users' SCRAM credentials (Kafka's `Admin.describeUserScramCredentials`):
    /// the mechanisms and iteration counts, never the salts or keys. `None` (or an empty
    /// list) describes every user that has credentials. One entry per user the broker
    /// answers for, in its order; a user without credentials carries RESOURCE_NOT_FOUND, a
    /// user named twice DUPLICATE_RESOURCE. A mechanism id this client does not know is left
    /// out. An error of the whole request (e.g. CLUSTER_AUTHORIZATION_FAILED) is the outer
    /// error.
    pub async fn describe_user_scram_credentials(
        &self,
        users: Option<&[&str]>,
    ) -> Result<Vec<UserScramCredentials>, NetError> {
        self.cluster
            .retry(|| self.describe_user_scram_credentials_once(users))
            .await
    }

    async fn describe_user_scram_credentials_once(
        &self,
        users: Option<&[&str]>,
    ) -> Result<Vec<UserScramCredentials>, NetError> {
        let conn = self.cluster.least_loaded().await?;
        let version = conn.version_for(ApiKey::DescribeUserScramCredentials)?;
        let req = DescribeUserScramCredentialsRequest {
            users: users.filter(|u| !u.is_empty()).map(|u| {
                u.iter()
                    .map(|name| describe_user_scram_credentials_request::UserName {
                        name: kstr(name),
                        ..Default::default()
                    })
                    .collect()
            }),
            ..Default::default()
        };
        let body = conn
            .request_at(RequestBody::DescribeUserScramCredentials(req), version)
            .await?;
        let resp = expect_body!(body, DescribeUserScramCredentials);
        check_code(resp.error_code, resp.error_message.as_ref(), || {
            "DescribeUserScramCredentials".to_owned()
        })?;
        Ok(resp
            .results
            .iter()
            .map(|r| {
                let user = r.user.to_string();
                let res = check_code(r.error_code, r.error_message.as_ref(), || {
                    format!("DescribeUserScramCredentials {user:?}")
                })
                .map(|()| {
                    r.credential_infos
                        .iter()
                        .filter_map(|c| {
                            Some((
                                ScramMechanism::from_type_id(c.mechanism)?,
                                u32::try_from(c.iterations).unwrap_or(0),
                            ))
                        })
                        .collect()
                });
                (user, res)
            })
            .collect())
    }

    /// Upserts and deletes users' SCRAM credentials (Kafka's
    /// `Admin.alterUserScramCredentials`). Upsertions are salted here with a fresh random
    /// salt; the password does not leave the client. One `(user, result)` per user, in order
    /// of first appearance. A user with an alteration this client refuses (empty name or
    /// password, iterations outside 4096..=16384: UNACCEPTABLE_CREDENTIAL) is not sent at all.
    /// Kafka refuses a request that names a user twice with DUPLICATE_RESOURCE for that user,
    /// even for two mechanisms: change one mechanism per call.
    pub async fn alter_user_scram_credentials(
        &self,
        alterations: &[ScramAlteration],
    ) -> Vec<(String, Result<(), NetError>)> {
        let users = &by_user(alterations);
        let route = |_round: u32, pending: Vec<usize>| -> BoxFuture<'_, Routes> {
            Box::pin(std::future::ready(
                pending.into_iter().map(|i| (i, Ok(ANY))).collect(),
            ))
        };
        let send = |node: i32, idx: Vec<usize>| -> BoxFuture<'_, Replies<()>> {
            Box::pin(async move {
                let (req, sent, refused) = alter_request(users, &idx, random_salt);
                let mut out: Vec<(usize, Result<(), NetError>)> =
                    refused.into_iter().map(|(i, e)| (i, Err(e))).collect();
                if sent.is_empty() {
                    return Ok(out);
                }
                let conn = self.conn_for(node).await?;
                let version = conn.version_for(ApiKey::AlterUserScramCredentials)?;
                let body = conn
                    .request_at(RequestBody::AlterUserScramCredentials(req), version)
                    .await?;
                let resp = expect_body!(body, AlterUserScramCredentials);
                let index: BTreeMap<&str, usize> = sent
                    .iter()
                    .filter_map(|i| users.get(*i).map(|(u, _)| (u.as_str(), *i)))
                    .collect();
                for r in &resp.results {
                    if let Some(&i) = index.get(r.user.as_str()) {
                        let res = check_code(r.error_code, r.error_message.as_ref(), || {
                            format!("AlterUserScramCredentials {:?}", r.user.as_str())
                        });
                        out.push((i, res));
                    }
                }
                Ok(out)
            })
        };
        let results = self
            .fan_out(
                "AlterUserScramCredentials",
                Retry::Transport,
                users.len(),
                route,
                send,
            )
            .await;
        users.iter().map(|(u, _)| u.clone()).zip(results).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_auth::sasl::ScramCredential;

    #[test]
    fn upsertion_carries_the_salted_password_not_the_password() {
        let alterations = [ScramAlteration::upsert(
            "erin",
            ScramMechanism::Sha256,
            4096,
            "erin-secret",
        )];
        let users = by_user(&alterations);
        let (req, sent, refused) = alter_request(&users, &[0], || Ok(b"fixed-salt".to_vec()));
        assert_eq!(sent, [0]);
        assert!(refused.is_empty());
        let u = &req.upsertions[0];
        assert_eq!(
            (u.name.as_str(), u.mechanism, u.iterations),
            ("erin", 1, 4096)
        );
        assert_eq!(&u.salt[..], b"fixed-salt");
        // What the broker derives from it verifies the password: the same credential as
        // one made from the password directly.
        let from_wire = ScramCredential::from_salted_password(
            ScramMechanism::Sha256,
            &u.salted_password,
            &u.salt,
            4096,
        )
        .unwrap();
        let direct = ScramCredential::from_password(
            ScramMechanism::Sha256,
            b"erin-secret",
            b"fixed-salt",
            4096,
        )
        .unwrap();
        assert_eq!(from_wire, direct);
        assert_ne!(&u.salted_password[..], b"erin-secret");
        assert_eq!(u.salted_password.len(), 32);
    }

    #[test]
    fn salts_are_fresh_per_upsertion() {
        let a = random_salt().unwrap();
        let b = random_salt().unwrap();
        assert_eq!(a.len(), SALT_LEN);
        assert_ne!(a, b);
    }

    #[test]
    fn a_user_with_a_bad_alteration_is_refused_whole_and_others_go() {
        let alterations = [
            ScramAlteration::upsert("ann", ScramMechanism::Sha512, 8192, "pw"),
            ScramAlteration::upsert("bob", ScramMechanism::Sha256, 4096, "pw"),
            ScramAlteration::delete("ann", ScramMechanism::Sha256),
            ScramAlteration::upsert("bob", ScramMechanism::Sha512, 16385, "pw"),
            ScramAlteration::upsert("cy", ScramMechanism::Sha256, 4095, "pw"),
            ScramAlteration::upsert("dee", ScramMechanism::Sha256, 4096, ""),
            ScramAlteration::delete("", ScramMechanism::Sha256),
        ];
        let users = by_user(&alterations);
        let names: Vec<&str> = users.iter().map(|(u, _)| u.as_str()).collect();
        assert_eq!(names, ["ann", "bob", "cy", "dee", ""]);
        let (req, sent, refused) = alter_request(&users, &[0, 1, 2, 3, 4], || Ok(vec![7; 8]));
        assert_eq!(sent, [0]);
        assert_eq!(req.upsertions.len(), 1);
        assert_eq!(req.upsertions[0].mechanism, 2);
        assert_eq!(req.deletions.len(), 1);
        assert_eq!(req.deletions[0].mechanism, 1);
        let refused_users: Vec<usize> = refused.iter().map(|(i, _)| *i).collect();
        assert_eq!(refused_users, [1, 2, 3, 4]);
        for (_, e) in &refused {
            assert_eq!(
                e.error_code(),
                Some(ErrorCode::UNACCEPTABLE_CREDENTIAL),
                "{e}"
            );
        }
        assert!(refused[0].1.to_string().contains("16385"));
        // The password never shows in errors or debug output.
        assert!(!format!("{alterations:?}").contains("pw\""));
    }
}
