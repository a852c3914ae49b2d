//! Creating, describing and deleting ACLs (CreateAcls, DescribeAcls, DeleteAcls v0-3), with
//! `kafka-auth`'s ACL types, as Kafka's Java `Admin` does it.
//!
//! The three requests go to any broker (the least loaded one); in KRaft the broker forwards
//! CreateAcls and DeleteAcls to the controller. Version 0 of each predates KIP-290's pattern
//! types and knows only LITERAL patterns: a PREFIXED binding, or a filter asking for PREFIXED
//! or MATCH, is refused on the client with [`NetError::UnsupportedApi`] (Java's
//! `UnsupportedVersionException`), while a filter's ANY pattern type is sent as LITERAL,
//! which on those brokers selects the same bindings. Bindings and filters with an UNKNOWN
//! field are refused before anything is sent (INVALID_REQUEST), as the Java client does.

use futures::future::BoxFuture;
use kafka_auth::acl::{
    AccessControlEntry, AclBinding, AclBindingFilter, AclOperation, AclPermissionType, PatternType,
    ResourcePattern, ResourceType,
};
use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::{
    ApiKey, CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest, RequestBody,
    create_acls_request, delete_acls_request,
};

use super::{ANY, Admin, Replies, Retry, Routes, check_code, expect_body};
use crate::error::NetError;

fn kstr(s: &str) -> KStr {
    KStr::from(s.to_owned())
}

/// The error of a binding or filter the Java client refuses before sending: INVALID_REQUEST.
fn invalid(context: String) -> NetError {
    NetError::Kafka {
        code: ErrorCode::INVALID_REQUEST,
        context,
    }
}

/// The error for a pattern type version 0 of `api` cannot carry.
fn v0_pattern(api: ApiKey, pattern_type: PatternType) -> NetError {
    NetError::UnsupportedApi {
        api,
        detail: Some(format!(
            "version 0 only supports LITERAL resource patterns, not {pattern_type}"
        )),
    }
}

/// Checks one binding for CreateAcls at `version`.
fn check_binding(binding: &AclBinding, version: i16) -> Result<(), NetError> {
    if binding.is_unknown() {
        return Err(invalid(format!(
            "CreateAcls {binding}: a binding with UNKNOWN elements cannot be created"
        )));
    }
    if version == 0 && binding.pattern.pattern_type != PatternType::Literal {
        return Err(v0_pattern(ApiKey::CreateAcls, binding.pattern.pattern_type));
    }
    Ok(())
}

/// The pattern type a filter is sent with at `version`: ANY becomes LITERAL on version 0
/// (every binding such a broker holds is literal); PREFIXED and MATCH cannot be sent there.
fn filter_pattern_type(
    api: ApiKey,
    filter: &AclBindingFilter,
    version: i16,
) -> Result<i8, NetError> {
    if filter.pattern.is_unknown() || filter.entry.is_unknown() {
        return Err(invalid(format!(
            "{api:?} {}: a filter with UNKNOWN elements cannot be sent",
            filter.pattern
        )));
    }
    let pattern_type = filter.pattern.pattern_type;
    if version > 0 {
        return Ok(pattern_type.code());
    }
    match pattern_type {
        PatternType::Any | PatternType::Literal => Ok(PatternType::Literal.code()),
        other => Err(v0_pattern(api, other)),
    }
}

/// The CreateAcls request for the bindings `idx` of `bindings` at `version`: the items that
/// go into it (in request order) and the items refused on the client.
fn create_request(
    bindings: &[AclBinding],
    idx: &[usize],
    version: i16,
) -> (CreateAclsRequest, Vec<usize>, Vec<(usize, NetError)>) {
    let mut sent = Vec::new();
    let mut refused = Vec::new();
    let mut creations = Vec::new();
    for &i in idx {
        let Some(b) = bindings.get(i) else { continue };
        if let Err(e) = check_binding(b, version) {
            refused.push((i, e));
            continue;
        }
        sent.push(i);
        creations.push(create_acls_request::AclCreation {
            resource_type: b.pattern.resource_type.code(),
            resource_name: kstr(&b.pattern.name),
            resource_pattern_type: b.pattern.pattern_type.code(),
            principal: kstr(&b.entry.principal),
            host: kstr(&b.entry.host),
            operation: b.entry.operation.code(),
            permission_type: b.entry.permission_type.code(),
            ..Default::default()
        });
    }
    let req = CreateAclsRequest {
        creations,
        ..Default::default()
    };
    (req, sent, refused)
}

/// The DescribeAcls request for `filter` at `version`.
fn describe_request(
    filter: &AclBindingFilter,
    version: i16,
) -> Result<DescribeAclsRequest, NetError> {
    let pattern_type_filter = filter_pattern_type(ApiKey::DescribeAcls, filter, version)?;
    Ok(DescribeAclsRequest {
        resource_type_filter: filter.pattern.resource_type.code(),
        resource_name_filter: filter.pattern.name.as_deref().map(kstr),
        pattern_type_filter,
        principal_filter: filter.entry.principal.as_deref().map(kstr),
        host_filter: filter.entry.host.as_deref().map(kstr),
        operation: filter.entry.operation.code(),
        permission_type: filter.entry.permission_type.code(),
        ..Default::default()
    })
}

/// The DeleteAcls filter for `filter` at `version`.
fn delete_filter(
    filter: &AclBindingFilter,
    version: i16,
) -> Result<delete_acls_request::DeleteAclsFilter, NetError> {
    let pattern_type_filter = filter_pattern_type(ApiKey::DeleteAcls, filter, version)?;
    Ok(delete_acls_request::DeleteAclsFilter {
        resource_type_filter: filter.pattern.resource_type.code(),
        resource_name_filter: filter.pattern.name.as_deref().map(kstr),
        pattern_type_filter,
        principal_filter: filter.entry.principal.as_deref().map(kstr),
        host_filter: filter.entry.host.as_deref().map(kstr),
        operation: filter.entry.operation.code(),
        permission_type: filter.entry.permission_type.code(),
        ..Default::default()
    })
}

/// A binding from the wire codes of an answer (codes this side does not know read as
/// UNKNOWN, as Kafka's `fromCode` does).
#[allow(clippy::too_many_arguments)]
fn binding_from_wire(
    resource_type: i8,
    name: &KStr,
    pattern_type: i8,
    principal: &KStr,
    host: &KStr,
    operation: i8,
    permission_type: i8,
) -> AclBinding {
    AclBinding::new(
        ResourcePattern::new(
            ResourceType::from_code(resource_type),
            name.as_str(),
            PatternType::from_code(pattern_type),
        ),
        AccessControlEntry::new(
            principal.as_str(),
            host.as_str(),
            AclOperation::from_code(operation),
            AclPermissionType::from_code(permission_type),
        ),
    )
}

/// Every item to any broker.
fn to_any<'a>() -> impl Fn(u32, Vec<usize>) -> BoxFuture<'a, Routes> {
    |_round, pending| {
        Box::pin(std::future::ready(
            pending.into_iter().map(|i| (i, Ok(ANY))).collect(),
        ))
    }
}

impl Admin {
    /// Creates ACL bindings (Kafka's `Admin.createAcls`). One result per binding, in order;
    /// creating a binding that already exists succeeds (Kafka keeps one copy). A PREFIXED
    /// binding on a broker with only CreateAcls v0, or a binding with an UNKNOWN element, fails
    /// on its own without being sent.
    pub async fn create_acls(&self, bindings: &[AclBinding]) -> Vec<Result<(), NetError>> {
        let send = |node: i32, idx: Vec<usize>| -> BoxFuture<'_, Replies<()>> {
            Box::pin(async move {
                let conn = self.conn_for(node).await?;
                let version = conn.version_for(ApiKey::CreateAcls)?;
                let (req, sent, refused) = create_request(bindings, &idx, version);
                let mut out: Vec<(usize, Result<(), NetError>)> =
                    refused.into_iter().map(|(i, e)| (i, Err(e))).collect();
                if sent.is_empty() {
                    return Ok(out);
                }
                let body = conn
                    .request_at(RequestBody::CreateAcls(req), version)
                    .await?;
                let resp = expect_body!(body, CreateAcls);
                if resp.results.len() != sent.len() {
                    return Err(NetError::BadResponse(format!(
                        "CreateAcls: {} results for {} creations",
                        resp.results.len(),
                        sent.len()
                    )));
                }
                for (i, r) in sent.iter().zip(&resp.results) {
                    let res = check_code(r.error_code, r.error_message.as_ref(), || {
                        bindings
                            .get(*i)
                            .map_or_else(String::new, |b| format!("CreateAcls {b}"))
                    });
                    out.push((*i, res));
                }
                Ok(out)
            })
        };
        self.fan_out(
            "CreateAcls",
            Retry::Transport,
            bindings.len(),
            to_any(),
            send,
        )
        .await
    }

    /// The ACL bindings `filter` selects (Kafka's `Admin.describeAcls`), in the order the
    /// broker lists them. On a broker with only DescribeAcls v0, a PREFIXED or MATCH filter is
    /// refused and ANY is asked as LITERAL.
    pub async fn describe_acls(
        &self,
        filter: &AclBindingFilter,
    ) -> Result<Vec<AclBinding>, NetError> {
        self.cluster.retry(|| self.describe_acls_once(filter)).await
    }

    async fn describe_acls_once(
        &self,
        filter: &AclBindingFilter,
    ) -> Result<Vec<AclBinding>, NetError> {
        let conn = self.cluster.least_loaded().await?;
        let version = conn.version_for(ApiKey::DescribeAcls)?;
        let req = describe_request(filter, version)?;
        let body = conn
            .request_at(RequestBody::DescribeAcls(req), version)
            .await?;
        let resp = expect_body!(body, DescribeAcls);
        check_code(resp.error_code, resp.error_message.as_ref(), || {
            format!("DescribeAcls {} {}", filter.pattern, filter.entry)
        })?;
        let mut out = Vec::new();
        for r in &resp.resources {
            for a in &r.acls {
                out.push(binding_from_wire(
                    r.resource_type,
                    &r.resource_name,
                    r.pattern_type,
                    &a.principal,
                    &a.host,
                    a.operation,
                    a.permission_type,
                ));
            }
        }
        Ok(out)
    }

    /// Deletes the ACL bindings each filter selects (Kafka's `Admin.deleteAcls`). One result
    /// per filter, in order: the bindings it removed (none is not an error). A filter the
    /// broker refused fails with its error; so does a filter one of whose bindings the broker
    /// could not remove (Kafka's per-binding `FilterResult` error; the first is reported,
    /// naming the binding), as Java's `DeleteAclsResult.all()` fails.
    pub async fn delete_acls(
        &self,
        filters: &[AclBindingFilter],
    ) -> Vec<Result<Vec<AclBinding>, NetError>> {
        let send = |node: i32, idx: Vec<usize>| -> BoxFuture<'_, Replies<Vec<AclBinding>>> {
            Box::pin(async move {
                let conn = self.conn_for(node).await?;
                let version = conn.version_for(ApiKey::DeleteAcls)?;
                let mut out = Vec::new();
                let mut sent = Vec::new();
                let mut wire = Vec::new();
                for i in idx {
                    let Some(f) = filters.get(i) else { continue };
                    match delete_filter(f, version) {
                        Ok(w) => {
                            sent.push(i);
                            wire.push(w);
                        }
                        Err(e) => out.push((i, Err(e))),
                    }
                }
                if sent.is_empty() {
                    return Ok(out);
                }
                let req = DeleteAclsRequest {
                    filters: wire,
                    ..Default::default()
                };
                let body = conn
                    .request_at(RequestBody::DeleteAcls(req), version)
                    .await?;
                let resp = expect_body!(body, DeleteAcls);
                if resp.filter_results.len() != sent.len() {
                    return Err(NetError::BadResponse(format!(
                        "DeleteAcls: {} results for {} filters",
                        resp.filter_results.len(),
                        sent.len()
                    )));
                }
                for (i, r) in sent.iter().zip(&resp.filter_results) {
                    let context = || {
                        filters.get(*i).map_or_else(String::new, |f| {
                            format!("DeleteAcls {} {}", f.pattern, f.entry)
                        })
                    };
                    let res = check_code(r.error_code, r.error_message.as_ref(), context).and_then(
                        |()| {
                            r.matching_acls
                                .iter()
                                .map(|m| {
                                    let b = binding_from_wire(
                                        m.resource_type,
                                        &m.resource_name,
                                        m.pattern_type,
                                        &m.principal,
                                        &m.host,
                                        m.operation,
                                        m.permission_type,
                                    );
                                    check_code(m.error_code, m.error_message.as_ref(), || {
                                        format!("DeleteAcls of {b}")
                                    })
                                    .map(|()| b)
                                })
                                .collect::<Result<Vec<_>, _>>()
                        },
                    );
                    out.push((*i, res));
                }
                Ok(out)
            })
        };
        self.fan_out(
            "DeleteAcls",
            Retry::Transport,
            filters.len(),
            to_any(),
            send,
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_auth::acl::{AccessControlEntryFilter, ResourcePatternFilter};

    fn binding(pattern: ResourcePattern, op: AclOperation, perm: AclPermissionType) -> AclBinding {
        AclBinding::new(
            pattern,
            AccessControlEntry::new("User:alice", "*", op, perm),
        )
    }

    fn filter(pattern_type: PatternType) -> AclBindingFilter {
        AclBindingFilter::new(
            ResourcePatternFilter::new(ResourceType::Topic, Some("orders".into()), pattern_type),
            AccessControlEntryFilter::any(),
        )
    }

    #[test]
    fn create_v0_refuses_prefixed_bindings_alone() {
        let bindings = [
            binding(
                ResourcePattern::literal(ResourceType::Topic, "a"),
                AclOperation::Read,
                AclPermissionType::Allow,
            ),
            binding(
                ResourcePattern::prefixed(ResourceType::Topic, "b-"),
                AclOperation::Write,
                AclPermissionType::Deny,
            ),
        ];
        let (req, sent, refused) = create_request(&bindings, &[0, 1], 0);
        assert_eq!(sent, [0]);
        assert_eq!(req.creations.len(), 1);
        assert_eq!(req.creations[0].resource_name.as_str(), "a");
        assert_eq!(refused.len(), 1);
        assert_eq!(refused[0].0, 1);
        let err = refused[0].1.to_string();
        assert!(
            err.contains("CreateAcls") && err.contains("PREFIXED"),
            "{err}"
        );
        // The request encodes at v0 (the codec itself refuses a non-literal pattern there).
        let mut w = kafka_protocol::Writer::new();
        assert!(RequestBody::CreateAcls(req).encode(&mut w, 0).is_ok());
        // From v1 both go, with Kafka's codes.
        let (req, sent, refused) = create_request(&bindings, &[0, 1], 1);
        assert_eq!(sent, [0, 1]);
        assert!(refused.is_empty());
        let c = &req.creations[1];
        assert_eq!(
            (
                c.resource_type,
                c.resource_pattern_type,
                c.operation,
                c.permission_type
            ),
            (2, 4, 4, 2)
        );
        assert_eq!(c.principal.as_str(), "User:alice");
        assert_eq!(c.host.as_str(), "*");
    }

    #[test]
    fn unknown_elements_are_refused_before_sending() {
        let b = binding(
            ResourcePattern::literal(ResourceType::Topic, "a"),
            AclOperation::Unknown,
            AclPermissionType::Allow,
        );
        let (req, sent, refused) = create_request(&[b], &[0], 3);
        assert!(sent.is_empty() && req.creations.is_empty());
        assert_eq!(refused[0].1.error_code(), Some(ErrorCode::INVALID_REQUEST));
        let err = describe_request(&filter(PatternType::Unknown), 3).unwrap_err();
        assert_eq!(err.error_code(), Some(ErrorCode::INVALID_REQUEST));
    }

    #[test]
    fn v0_filters_send_any_as_literal_and_refuse_prefixed_and_match() {
        let r = describe_request(&filter(PatternType::Any), 0).unwrap();
        assert_eq!(r.pattern_type_filter, PatternType::Literal.code());
        let r = describe_request(&filter(PatternType::Literal), 0).unwrap();
        assert_eq!(r.pattern_type_filter, PatternType::Literal.code());
        for pt in [PatternType::Prefixed, PatternType::Match] {
            let e = describe_request(&filter(pt), 0).unwrap_err();
            assert!(
                matches!(
                    e,
                    NetError::UnsupportedApi {
                        api: ApiKey::DescribeAcls,
                        ..
                    }
                ),
                "{e}"
            );
            let e = delete_filter(&filter(pt), 0).unwrap_err();
            assert!(
                matches!(
                    e,
                    NetError::UnsupportedApi {
                        api: ApiKey::DeleteAcls,
                        ..
                    }
                ),
                "{e}"
            );
        }
        // From v1 the pattern type goes as given, MATCH included.
        let r = describe_request(&filter(PatternType::Match), 1).unwrap();
        assert_eq!(r.pattern_type_filter, PatternType::Match.code());
        let f = delete_filter(&filter(PatternType::Any), 2).unwrap();
        assert_eq!(f.pattern_type_filter, PatternType::Any.code());
    }

    #[test]
    fn filter_fields_map_to_the_wire_with_nulls_for_any() {
        let f = AclBindingFilter::new(
            ResourcePatternFilter::new(ResourceType::Any, None, PatternType::Any),
            AccessControlEntryFilter::new(
                Some("User:bob".into()),
                None,
                AclOperation::Describe,
                AclPermissionType::Any,
            ),
        );
        let r = describe_request(&f, 3).unwrap();
        assert_eq!(r.resource_type_filter, 1);
        assert_eq!(r.resource_name_filter, None);
        assert_eq!(
            r.principal_filter.as_ref().map(KStr::as_str),
            Some("User:bob")
        );
        assert_eq!(r.host_filter, None);
        assert_eq!((r.operation, r.permission_type), (8, 1));
    }

    #[test]
    fn wire_codes_beyond_kafkas_read_as_unknown() {
        let b = binding_from_wire(9, &kstr("t"), 3, &kstr("User:x"), &kstr("*"), 99, 3);
        assert_eq!(b.pattern.resource_type, ResourceType::Unknown);
        assert_eq!(b.entry.operation, AclOperation::Unknown);
        assert_eq!(b.pattern.pattern_type, PatternType::Literal);
    }
}
