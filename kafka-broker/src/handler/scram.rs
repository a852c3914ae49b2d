//! DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554), over the node's
//! [`crate::credentials::ScramCredentials`], with Kafka's checks and error codes: a user named
//! twice in one request (whatever the mechanisms) is DUPLICATE_RESOURCE, an unknown mechanism
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
    let existing = broker.scram_credentials.describe();
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
        let exists = existing
            .get(&user)
            .is_some_and(|c| c.iter().any(|(m, _)| *m == mech));
        if !exists {
            errors.push((
                user,
                ErrorCode::RESOURCE_NOT_FOUND,
                "Attempt to delete a user credential that does not exist".into(),
            ));
            continue;
        }
        deletions.push((user, mech));
    }
    for u in r.upsertions {
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
    let del: Vec<(ScramMechanism, String)> =
        deletions.iter().map(|(u, m)| (*m, u.clone())).collect();
    let ups: Vec<Upsertion> = upsertions.iter().map(|(_, x)| x.clone()).collect();
    let stored = if del.is_empty() && ups.is_empty() {
        Ok(())
    } else {
        broker.scram_credentials.alter(&del, ups)
    };
    // Kafka's order: the deletions done, the upsertions done, then the refusals.
    let done = deletions
        .iter()
        .map(|(u, _)| u.clone())
        .chain(upsertions.iter().map(|(u, _)| u.clone()));
    let mut results: Vec<AlterUserScramCredentialsResult> = done
        .map(|user| {
            let (code, message) = match &stored {
                Ok(()) => (ErrorCode::NONE, None),
                Err(e) => (ErrorCode::UNKNOWN_SERVER_ERROR, Some(e.to_string())),
            };
            AlterUserScramCredentialsResult {
                user: KStr::from(user),
                error_code: code.0,
                error_message: message.map(KStr::from),
                ..Default::default()
            }
        })
        .collect();
    results.extend(errors.into_iter().map(|(user, code, message)| {
        AlterUserScramCredentialsResult {
            user: KStr::from(user),
            error_code: code.0,
            error_message: Some(KStr::from(message)),
            ..Default::default()
        }
    }));
    ResponseBody::AlterUserScramCredentials(AlterUserScramCredentialsResponse {
        results,
        ..Default::default()
    })
}
