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
use kafka_auth::sasl::ScramMechanism;
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

/// AlterUserScramCredentials refused whole: without ALTER on the cluster every user named
/// (once, sorted) is answered CLUSTER_AUTHORIZATION_FAILED. `None`: go on (here, or at the
/// controller of a cluster).
pub(super) fn refuse_alter(
    authz: &Authz<'_>,
    r: &AlterUserScramCredentialsRequest,
) -> Option<ResponseBody> {
    if !authz.cluster(AclOperation::Alter) {
        let users: BTreeSet<&KStr> = r
            .deletions
            .iter()
            .map(|d| &d.name)
            .chain(r.upsertions.iter().map(|u| &u.name))
            .collect();
        return Some(ResponseBody::AlterUserScramCredentials(
            AlterUserScramCredentialsResponse {
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
            },
        ));
    }
    None
}

pub(super) fn alter(
    broker: &Broker,
    authz: &Authz<'_>,
    r: AlterUserScramCredentialsRequest,
) -> ResponseBody {
    if let Some(refused) = refuse_alter(authz, &r) {
        return refused;
    }
    let plan = crate::credentials::plan_alteration(
        |mechanism, user| broker.scram_credentials.get(mechanism, user).is_some(),
        &r,
    );
    let stored = plan.apply_to(&broker.scram_credentials);
    ResponseBody::AlterUserScramCredentials(plan.response(stored.map_err(|e| e.to_string())))
}
