//! CreateAcls, DescribeAcls and DeleteAcls (v0-3) over the node's [`crate::acls::Acls`], with
//! Kafka's rules: SECURITY_DISABLED when no authorizer is configured; CLUSTER ALTER to create
//! or delete and CLUSTER DESCRIBE to describe (CLUSTER_AUTHORIZATION_FAILED otherwise); each
//! creation validated as Kafka's controller validates it (its error on that creation alone);
//! a filter with an unknown or indefinite field refused with INVALID_REQUEST.

use kafka_auth::acl::{AclBindingFilter, AclOperation, validate_filter, validate_new_binding};
use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::create_acls_response::AclCreationResult;
use kafka_protocol::messages::delete_acls_response::DeleteAclsFilterResult;
use kafka_protocol::messages::describe_acls_response::{AclDescription, DescribeAclsResource};
use kafka_protocol::messages::{
    CreateAclsRequest, CreateAclsResponse, DeleteAclsRequest, DeleteAclsResponse,
    DescribeAclsRequest, DescribeAclsResponse, ResponseBody,
};

use super::authz::Authz;
use crate::node::Broker;

const DISABLED: &str = "No Authorizer is configured on the broker";

fn text(s: &str) -> Option<KStr> {
    Some(KStr::from(s.to_owned()))
}

/// CreateAcls refused whole before its creations are looked at: SECURITY_DISABLED without an
/// authorizer, CLUSTER_AUTHORIZATION_FAILED without ALTER on the cluster (each creation
/// answered with it). `None`: go on (here, or at the controller of a cluster).
pub(super) fn refuse_create(
    broker: &Broker,
    authz: &Authz<'_>,
    r: &CreateAclsRequest,
) -> Option<ResponseBody> {
    let all = |code: ErrorCode, message: &str| {
        ResponseBody::CreateAcls(CreateAclsResponse {
            results: r
                .creations
                .iter()
                .map(|_| AclCreationResult {
                    error_code: code.0,
                    error_message: text(message),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        })
    };
    if !broker.acls.enabled() {
        return Some(all(ErrorCode::SECURITY_DISABLED, DISABLED));
    }
    if !authz.cluster(AclOperation::Alter) {
        return Some(all(
            ErrorCode::CLUSTER_AUTHORIZATION_FAILED,
            "Cluster authorization failed.",
        ));
    }
    None
}

pub(super) fn create(broker: &Broker, authz: &Authz<'_>, r: CreateAclsRequest) -> ResponseBody {
    if let Some(refused) = refuse_create(broker, authz, &r) {
        return refused;
    }
    let mut results = Vec::with_capacity(r.creations.len());
    let mut accepted = Vec::new();
    for c in &r.creations {
        let binding = crate::acls::creation_binding(c);
        match validate_new_binding(&binding) {
            Ok(()) => {
                results.push(None);
                accepted.push(binding);
            }
            Err(e) => results.push(Some((e.error_code(), e.to_string()))),
        }
    }
    let stored = broker.acls.create(accepted);
    let results = results
        .into_iter()
        .map(|refused| {
            let (code, message) = match (refused, &stored) {
                (Some((code, message)), _) => (code, Some(message)),
                (None, Ok(())) => (0, None),
                (None, Err(e)) => (ErrorCode::UNKNOWN_SERVER_ERROR.0, Some(e.to_string())),
            };
            AclCreationResult {
                error_code: code,
                error_message: message.map(KStr::from),
                ..Default::default()
            }
        })
        .collect();
    ResponseBody::CreateAcls(CreateAclsResponse {
        results,
        ..Default::default()
    })
}

pub(super) fn describe(broker: &Broker, authz: &Authz<'_>, r: DescribeAclsRequest) -> ResponseBody {
    let answer = |code: ErrorCode, message: Option<String>, resources| {
        ResponseBody::DescribeAcls(DescribeAclsResponse {
            error_code: code.0,
            error_message: message.map(KStr::from),
            resources,
            ..Default::default()
        })
    };
    if !broker.acls.enabled() {
        return answer(
            ErrorCode::SECURITY_DISABLED,
            Some(DISABLED.into()),
            Vec::new(),
        );
    }
    if !authz.cluster(AclOperation::Describe) {
        return answer(
            ErrorCode::CLUSTER_AUTHORIZATION_FAILED,
            Some("Cluster authorization failed.".into()),
            Vec::new(),
        );
    }
    let f = crate::acls::request_filter(
        r.resource_type_filter,
        r.resource_name_filter.as_ref(),
        r.pattern_type_filter,
        r.principal_filter.as_ref(),
        r.host_filter.as_ref(),
        r.operation,
        r.permission_type,
    );
    if let Err(e) = validate_filter(&f) {
        return answer(ErrorCode(e.error_code()), Some(e.to_string()), Vec::new());
    }
    // Grouped by resource pattern, as Kafka answers.
    let mut resources: Vec<DescribeAclsResource> = Vec::new();
    for b in broker.acls.describe(&f) {
        let desc = AclDescription {
            principal: KStr::from(b.entry.principal.clone()),
            host: KStr::from(b.entry.host.clone()),
            operation: b.entry.operation.code(),
            permission_type: b.entry.permission_type.code(),
            ..Default::default()
        };
        let same = |res: &DescribeAclsResource| {
            res.resource_type == b.pattern.resource_type.code()
                && *res.resource_name == *b.pattern.name
                && res.pattern_type == b.pattern.pattern_type.code()
        };
        match resources.iter_mut().find(|res| same(res)) {
            Some(res) => res.acls.push(desc),
            None => resources.push(DescribeAclsResource {
                resource_type: b.pattern.resource_type.code(),
                resource_name: KStr::from(b.pattern.name.clone()),
                pattern_type: b.pattern.pattern_type.code(),
                acls: vec![desc],
                ..Default::default()
            }),
        }
    }
    answer(ErrorCode::NONE, None, resources)
}

/// DeleteAcls refused whole before its filters are looked at (as [`refuse_create`]).
pub(super) fn refuse_delete(
    broker: &Broker,
    authz: &Authz<'_>,
    r: &DeleteAclsRequest,
) -> Option<ResponseBody> {
    let all = |code: ErrorCode, message: &str| {
        ResponseBody::DeleteAcls(DeleteAclsResponse {
            filter_results: r
                .filters
                .iter()
                .map(|_| DeleteAclsFilterResult {
                    error_code: code.0,
                    error_message: text(message),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        })
    };
    if !broker.acls.enabled() {
        return Some(all(ErrorCode::SECURITY_DISABLED, DISABLED));
    }
    if !authz.cluster(AclOperation::Alter) {
        return Some(all(
            ErrorCode::CLUSTER_AUTHORIZATION_FAILED,
            "Cluster authorization failed.",
        ));
    }
    None
}

pub(super) fn delete(broker: &Broker, authz: &Authz<'_>, r: DeleteAclsRequest) -> ResponseBody {
    if let Some(refused) = refuse_delete(broker, authz, &r) {
        return refused;
    }
    let filters: Vec<AclBindingFilter> = r.filters.iter().map(crate::acls::delete_filter).collect();
    let invalid: Vec<Option<(i16, String)>> = filters
        .iter()
        .map(|f| {
            validate_filter(f)
                .err()
                .map(|e| (e.error_code(), e.to_string()))
        })
        .collect();
    let valid: Vec<AclBindingFilter> = filters
        .iter()
        .zip(&invalid)
        .filter(|(_, bad)| bad.is_none())
        .map(|(f, _)| f.clone())
        .collect();
    let removed = broker.acls.delete(&valid);
    let mut removed_iter = match &removed {
        Ok(r) => r.clone().into_iter(),
        Err(_) => Vec::new().into_iter(),
    };
    let filter_results = invalid
        .into_iter()
        .map(|bad| match (bad, &removed) {
            (Some((code, message)), _) => DeleteAclsFilterResult {
                error_code: code,
                error_message: Some(KStr::from(message)),
                ..Default::default()
            },
            (None, Err(e)) => DeleteAclsFilterResult {
                error_code: ErrorCode::UNKNOWN_SERVER_ERROR.0,
                error_message: Some(KStr::from(e.to_string())),
                ..Default::default()
            },
            (None, Ok(_)) => DeleteAclsFilterResult {
                matching_acls: removed_iter
                    .next()
                    .unwrap_or_default()
                    .iter()
                    .map(crate::acls::matching_acl)
                    .collect(),
                ..Default::default()
            },
        })
        .collect();
    ResponseBody::DeleteAcls(DeleteAclsResponse {
        filter_results,
        ..Default::default()
    })
}
