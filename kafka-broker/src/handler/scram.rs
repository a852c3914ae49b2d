//! DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554), over the node's
//! [`crate::credentials::ScramCredentials`], with Kafka's checks and error codes: a user named
//! twice in one request is DUPLICATE_RESOURCE, an unknown mechanism
//! UNSUPPORTED_SASL_MECHANISM, iterations outside 4096..=16384 or an empty user or salt
//! UNACCEPTABLE_CREDENTIAL, deleting or describing a credential that does not exist
//! RESOURCE_NOT_FOUND. A user's alterations take effect together or not at all.
//!
//! Authorization, as Kafka's: describing needs DESCRIBE on the cluster, else the answer's
//! error is CLUSTER_AUTHORIZATION_FAILED (and each user asked for gets it too); altering needs
//! ALTER on the cluster, else every user named (once, sorted) is answered
//! CLUSTER_AUTHORIZATION_FAILED and nothing changes.

use std::collections::{BTreeMap, BTreeSet};

use kafka_auth::acl::AclOperation;
use kafka_auth::sasl::{ScramCredential, ScramMechanism};
use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::alter_user_scram_credentials_response::AlterUserScramCredentialsResult;
use kafka_protocol::messages::describe_user_scram_credentials_response::{
    CredentialInfo, DescribeUserScramCredentialsResult,
};
use kafka_protocol::messages::{
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse,
    DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse, ResponseBody,
};

use super::authz::Authz;
use crate::node::Broker;

const CLUSTER_REFUSED: &str = "Cluster authorization failed.";

pub(super) fn describe(
    broker: &Broker,
    authz: &Authz<'_>,
    r: DescribeUserScramCredentialsRequest,
) -> ResponseBody {
    if !authz.cluster(AclOperation::Describe) {
        let code = ErrorCode::CLUSTER_AUTHORIZATION_FAILED.0;
        return ResponseBody::DescribeUserScramCredentials(DescribeUserScramCredentialsResponse {
            error_code: code,
            error_message: Some(KStr::from_static(CLUSTER_REFUSED)),
            results: r
                .users
                .unwrap_or_default()
                .into_iter()
                .map(|u| DescribeUserScramCredentialsResult {
                    user: u.name,
                    error_code: code,
                    error_message: Some(KStr::from_static(CLUSTER_REFUSED)),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        });
    }
    let all = broker.scram_credentials.describe();
    let info = |creds: &Vec<(ScramMechanism, u32)>| -> Vec<CredentialInfo> {
        creds
            .iter()
            .map(|(m, i)| CredentialInfo {
                mechanism: m.type_id(),
                iterations: i32::try_from(*i).unwrap_or(i32::MAX),
                ..Default::default()
            })
            .collect()
    };
    let results = match r.users.filter(|u| !u.is_empty()) {
        None => all
            .iter()
            .map(|(user, creds)| DescribeUserScramCredentialsResult {
                user: KStr::from(user.clone()),
                credential_infos: info(creds),
                ..Default::default()
            })
            .collect(),
        Some(users) => {
            let mut seen = BTreeMap::new();
            for u in &users {
                *seen.entry(u.name.to_string()).or_insert(0) += 1;
            }
            let mut done = BTreeSet::new();
            let mut out = Vec::new();
            for u in users {
                let name = u.name.to_string();
                if !done.insert(name.clone()) {
                    continue;
                }
                let (code, message, infos) = if seen[&name] > 1 {
                    (
                        ErrorCode::DUPLICATE_RESOURCE,
                        Some(format!(
                            "Cannot describe SCRAM credentials for the same user twice in a single request: {name}"
                        )),
                        Vec::new(),
                    )
                } else {
                    match all.get(&name) {
                        Some(creds) => (ErrorCode::NONE, None, info(creds)),
                        None => (
                            ErrorCode::RESOURCE_NOT_FOUND,
                            Some(format!(
                                "Attempt to describe a user credential that does not exist: {name}"
                            )),
                            Vec::new(),
                        ),
                    }
                };
                out.push(DescribeUserScramCredentialsResult {
                    user: u.name,
                    error_code: code.0,
                    error_message: message.map(KStr::from),
                    credential_infos: infos,
                    ..Default::default()
                });
            }
            out
        }
    };
    ResponseBody::DescribeUserScramCredentials(DescribeUserScramCredentialsResponse {
        results,
        ..Default::default()
    })
}

/// A credential to store, by (mechanism, user).
type Upsertion = ((ScramMechanism, String), ScramCredential);

/// Bounds Kafka puts on an upsertion's iterations.
const MIN_ITERATIONS: i32 = 4096;
const MAX_ITERATIONS: i32 = 16384;

pub(super) fn alter(
    broker: &Broker,
    authz: &Authz<'_>,
    r: AlterUserScramCredentialsRequest,
) -> ResponseBody {
    if !authz.cluster(AclOperation::Alter) {
        let users: BTreeSet<&KStr> = r
            .deletions
            .iter()
            .map(|d| &d.name)
            .chain(r.upsertions.iter().map(|u| &u.name))
            .collect();
        return ResponseBody::AlterUserScramCredentials(AlterUserScramCredentialsResponse {
            results: users
                .into_iter()
                .map(|user| AlterUserScramCredentialsResult {
                    user: user.clone(),
                    error_code: ErrorCode::CLUSTER_AUTHORIZATION_FAILED.0,
                    error_message: Some(KStr::from_static(CLUSTER_REFUSED)),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        });
    }
    // Every user of the request, in order of first appearance, with the first error found.
    let mut users: Vec<String> = Vec::new();
    let mut errors: BTreeMap<String, (ErrorCode, String)> = BTreeMap::new();
    let fail =
        |errors: &mut BTreeMap<String, (ErrorCode, String)>, user: &str, code, msg: String| {
            errors.entry(user.to_owned()).or_insert((code, msg));
        };
    let mut keys: BTreeMap<(String, i8), usize> = BTreeMap::new();
    for (user, mech) in r
        .deletions
        .iter()
        .map(|d| (d.name.to_string(), d.mechanism))
        .chain(
            r.upsertions
                .iter()
                .map(|u| (u.name.to_string(), u.mechanism)),
        )
    {
        if !users.contains(&user) {
            users.push(user.clone());
        }
        *keys.entry((user, mech)).or_insert(0) += 1;
    }
    for ((user, mech), n) in &keys {
        if *n > 1 {
            fail(
                &mut errors,
                user,
                ErrorCode::DUPLICATE_RESOURCE,
                format!(
                    "A user credential cannot be altered twice in the same request: {user}, mechanism {mech}"
                ),
            );
        }
    }
    let existing = broker.scram_credentials.describe();
    let mut deletions: BTreeMap<String, Vec<(ScramMechanism, String)>> = BTreeMap::new();
    for d in &r.deletions {
        let user = d.name.to_string();
        let Some(mech) = ScramMechanism::from_type_id(d.mechanism) else {
            fail(
                &mut errors,
                &user,
                ErrorCode::UNSUPPORTED_SASL_MECHANISM,
                format!("Unknown SCRAM mechanism: {}", d.mechanism),
            );
            continue;
        };
        if user.is_empty() {
            fail(
                &mut errors,
                &user,
                ErrorCode::UNACCEPTABLE_CREDENTIAL,
                "Username must not be empty".into(),
            );
            continue;
        }
        let exists = existing
            .get(&user)
            .is_some_and(|c| c.iter().any(|(m, _)| *m == mech));
        if !exists {
            fail(
                &mut errors,
                &user,
                ErrorCode::RESOURCE_NOT_FOUND,
                format!("Attempt to delete a user credential that does not exist: {user}"),
            );
            continue;
        }
        deletions
            .entry(user.clone())
            .or_default()
            .push((mech, user));
    }
    let mut upsertions: BTreeMap<String, Vec<Upsertion>> = BTreeMap::new();
    for u in r.upsertions {
        let user = u.name.to_string();
        let Some(mech) = ScramMechanism::from_type_id(u.mechanism) else {
            fail(
                &mut errors,
                &user,
                ErrorCode::UNSUPPORTED_SASL_MECHANISM,
                format!("Unknown SCRAM mechanism: {}", u.mechanism),
            );
            continue;
        };
        if user.is_empty() {
            fail(
                &mut errors,
                &user,
                ErrorCode::UNACCEPTABLE_CREDENTIAL,
                "Username must not be empty".into(),
            );
            continue;
        }
        if !(MIN_ITERATIONS..=MAX_ITERATIONS).contains(&u.iterations) {
            let msg = if u.iterations < MIN_ITERATIONS {
                format!(
                    "Too few iterations: {} (at least {MIN_ITERATIONS})",
                    u.iterations
                )
            } else {
                format!(
                    "Too many iterations: {} (at most {MAX_ITERATIONS})",
                    u.iterations
                )
            };
            fail(&mut errors, &user, ErrorCode::UNACCEPTABLE_CREDENTIAL, msg);
            continue;
        }
        if u.salt.is_empty() || u.salted_password.is_empty() {
            fail(
                &mut errors,
                &user,
                ErrorCode::UNACCEPTABLE_CREDENTIAL,
                "Salt and salted password must not be empty".into(),
            );
            continue;
        }
        match ScramCredential::from_salted_password(
            mech,
            &u.salted_password,
            &u.salt,
            u.iterations.unsigned_abs(),
        ) {
            Ok(cred) => upsertions
                .entry(user.clone())
                .or_default()
                .push(((mech, user), cred)),
            Err(e) => fail(
                &mut errors,
                &user,
                ErrorCode::UNACCEPTABLE_CREDENTIAL,
                e.to_string(),
            ),
        }
    }
    let mut del_all = Vec::new();
    let mut ups_all = Vec::new();
    for user in &users {
        if errors.contains_key(user) {
            continue;
        }
        del_all.extend(deletions.remove(user).unwrap_or_default());
        ups_all.extend(upsertions.remove(user).unwrap_or_default());
    }
    let stored = if del_all.is_empty() && ups_all.is_empty() {
        Ok(())
    } else {
        broker.scram_credentials.alter(&del_all, ups_all)
    };
    let results = users
        .into_iter()
        .map(|user| {
            let (code, message) = match (errors.get(&user), &stored) {
                (Some((code, msg)), _) => (*code, Some(msg.clone())),
                (None, Ok(())) => (ErrorCode::NONE, None),
                (None, Err(e)) => (ErrorCode::UNKNOWN_SERVER_ERROR, Some(e.to_string())),
            };
            AlterUserScramCredentialsResult {
                user: KStr::from(user),
                error_code: code.0,
                error_message: message.map(KStr::from),
                ..Default::default()
            }
        })
        .collect();
    ResponseBody::AlterUserScramCredentials(AlterUserScramCredentialsResponse {
        results,
        ..Default::default()
    })
}
