//! The checks Kafka makes on ACLs sent by clients: CreateAcls bindings (the broker's
//! `AclApis` checks, then the controller's `AclControlManager.validateNewAcl`), DeleteAcls
//! filters (`validateFilter`), and the operation-per-resource rule that only Kafka's
//! `kafka-acls` tool applies.

use super::error::AclError;
use super::filter::AclBindingFilter;
use super::types::{
    AclBinding, AclOperation, AclPermissionType, CLUSTER_NAME, PatternType, ResourceType,
    split_principal,
};

/// Checks one CreateAcls binding; an error answers that creation with
/// [`AclError::error_code`] (INVALID_REQUEST) and the error's text as message, while the
/// other creations of the request go on.
///
/// In Kafka's order: a CLUSTER resource must be named `kafka-cluster`, the resource name must
/// not be empty (both checked by the broker), then the controller's checks: the resource type
/// is neither UNKNOWN nor ANY, the pattern type is LITERAL or PREFIXED, the operation is
/// neither UNKNOWN nor ANY, the permission is ALLOW or DENY. Two checks are ours: the
/// principal must have the form `Type:name` (Kafka's KRaft controller stores one without a
/// colon, and its authorizer then fails on every request touching that resource), and the
/// host must not be empty (Kafka stores it; it can never match).
///
/// Kafka refuses some of these earlier and more bluntly: UNKNOWN codes fail the parsing of
/// the whole request, ANY / MATCH fail building the binding (the whole request answers
/// UNKNOWN_SERVER_ERROR). The broker may keep that for exactness; answering per creation
/// is what clients cope with best. A CreateAcls v0 request may only carry LITERAL patterns
/// (UNSUPPORTED_VERSION), a check on the request, not here.
///
/// Kafka does not check that the operation applies to the resource type (only `kafka-acls`
/// does, see [`check_operation_supported`]).
pub fn validate_new_binding(binding: &AclBinding) -> Result<(), AclError> {
    let pattern = &binding.pattern;
    let entry = &binding.entry;
    if pattern.resource_type == ResourceType::Cluster && pattern.name != CLUSTER_NAME {
        return Err(AclError::InvalidClusterName(pattern.name.clone()));
    }
    if pattern.name.is_empty() {
        return Err(AclError::EmptyResourceName);
    }
    check_stored_codes(binding)?;
    if split_principal(&entry.principal).is_none() {
        return Err(AclError::InvalidPrincipal(entry.principal.clone()));
    }
    if entry.host.is_empty() {
        return Err(AclError::EmptyHost);
    }
    Ok(())
}

/// The checks every stored binding passes (the controller's, without the name check): a
/// concrete resource type, LITERAL or PREFIXED, a concrete operation, ALLOW or DENY.
pub(super) fn check_stored_codes(binding: &AclBinding) -> Result<(), AclError> {
    let pattern = &binding.pattern;
    let entry = &binding.entry;
    if matches!(
        pattern.resource_type,
        ResourceType::Unknown | ResourceType::Any
    ) {
        return Err(AclError::InvalidResourceType(pattern.resource_type));
    }
    if !matches!(
        pattern.pattern_type,
        PatternType::Literal | PatternType::Prefixed
    ) {
        return Err(AclError::InvalidPatternType(pattern.pattern_type));
    }
    if matches!(entry.operation, AclOperation::Unknown | AclOperation::Any) {
        return Err(AclError::InvalidOperation(entry.operation));
    }
    if !matches!(
        entry.permission_type,
        AclPermissionType::Allow | AclPermissionType::Deny
    ) {
        return Err(AclError::InvalidPermissionType(entry.permission_type));
    }
    Ok(())
}

/// Checks one DeleteAcls filter as Kafka's controller does: no UNKNOWN resource type or
/// pattern type, no UNKNOWN operation or permission type (INVALID_REQUEST for that filter).
pub fn validate_filter(filter: &AclBindingFilter) -> Result<(), AclError> {
    if filter.pattern.is_unknown() {
        return Err(AclError::UnknownPatternFilter);
    }
    if filter.entry.is_unknown() {
        return Err(AclError::UnknownEntryFilter);
    }
    Ok(())
}

/// Checks that `operation` applies to `resource_type`: one of
/// [`ResourceType::supported_operations`] or ALL. This is the rule of Kafka's `kafka-acls`
/// tool (for an admin tool of ours), not of the broker, which stores any operation on any
/// resource.
pub fn check_operation_supported(
    resource_type: ResourceType,
    operation: AclOperation,
) -> Result<(), AclError> {
    let supported = resource_type.supported_operations();
    if operation == AclOperation::All || supported.contains(&operation) {
        return Ok(());
    }
    let names: Vec<&str> = supported
        .iter()
        .chain(std::iter::once(&AclOperation::All))
        .map(|op| op.pascal_name())
        .collect();
    Err(AclError::UnsupportedOperation {
        resource_type,
        operation,
        supported: names.join(", "),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acl::{
        AccessControlEntry, AccessControlEntryFilter, ResourcePattern, ResourcePatternFilter,
    };

    fn good() -> AclBinding {
        AclBinding::new(
            ResourcePattern::literal(ResourceType::Topic, "orders"),
            AccessControlEntry::new(
                "User:alice",
                "*",
                AclOperation::Read,
                AclPermissionType::Allow,
            ),
        )
    }

    fn message(binding: &AclBinding) -> String {
        match validate_new_binding(binding) {
            Ok(()) => "ok".to_string(),
            Err(e) => {
                assert_eq!(e.error_code(), 42, "{e}");
                e.to_string()
            }
        }
    }

    #[test]
    fn a_well_formed_binding_passes() {
        assert_eq!(message(&good()), "ok");
        let mut cluster = good();
        cluster.pattern = ResourcePattern::literal(ResourceType::Cluster, "kafka-cluster");
        assert_eq!(message(&cluster), "ok");
        let mut prefixed = good();
        prefixed.pattern.pattern_type = PatternType::Prefixed;
        assert_eq!(message(&prefixed), "ok");
        // Kafka's principal rule only needs a colon: an empty name is accepted.
        let mut odd = good();
        odd.entry.principal = "User:".into();
        assert_eq!(message(&odd), "ok");
    }

    #[test]
    fn each_rule_refuses_with_kafkas_message() {
        let mut b = good();
        b.pattern = ResourcePattern::literal(ResourceType::Cluster, "my-cluster");
        assert_eq!(
            message(&b),
            "The only valid name for the CLUSTER resource is kafka-cluster"
        );

        let mut b = good();
        b.pattern.name.clear();
        assert_eq!(message(&b), "Invalid empty resource name");

        for rt in [ResourceType::Any, ResourceType::Unknown] {
            let mut b = good();
            b.pattern.resource_type = rt;
            assert_eq!(message(&b), format!("Invalid resourceType {rt}"));
        }
        for pt in [PatternType::Any, PatternType::Match, PatternType::Unknown] {
            let mut b = good();
            b.pattern.pattern_type = pt;
            assert_eq!(message(&b), format!("Invalid patternType {pt}"));
        }
        for op in [AclOperation::Any, AclOperation::Unknown] {
            let mut b = good();
            b.entry.operation = op;
            assert_eq!(message(&b), format!("Invalid operation {op}"));
        }
        for perm in [AclPermissionType::Any, AclPermissionType::Unknown] {
            let mut b = good();
            b.entry.permission_type = perm;
            assert_eq!(message(&b), format!("Invalid permissionType {perm}"));
        }
        let mut b = good();
        b.entry.principal = "alice".into();
        assert_eq!(
            message(&b),
            "expected a string in format principalType:principalName but got alice"
        );
        let mut b = good();
        b.entry.host.clear();
        assert_eq!(message(&b), "Invalid empty host");
    }

    #[test]
    fn cluster_name_is_checked_before_emptiness() {
        // Kafka's broker checks the CLUSTER name first, so an empty CLUSTER name gets that
        // message.
        let mut b = good();
        b.pattern = ResourcePattern::literal(ResourceType::Cluster, "");
        assert_eq!(
            message(&b),
            "The only valid name for the CLUSTER resource is kafka-cluster"
        );
    }

    #[test]
    fn operations_any_resource_accepts_but_the_tool_rule_refuses() {
        // The broker stores READ on the cluster (Kafka does); the kafka-acls rule refuses it.
        let mut b = good();
        b.pattern = ResourcePattern::literal(ResourceType::Cluster, "kafka-cluster");
        assert_eq!(message(&b), "ok");
        let err = check_operation_supported(ResourceType::Cluster, AclOperation::Read).unwrap_err();
        assert_eq!(
            err.to_string(),
            "ResourceType CLUSTER only supports operations Create, Alter, Describe, ClusterAction, \
             DescribeConfigs, AlterConfigs, IdempotentWrite, All"
        );
        assert!(check_operation_supported(ResourceType::Cluster, AclOperation::All).is_ok());
        assert!(check_operation_supported(ResourceType::Topic, AclOperation::Write).is_ok());
        assert!(check_operation_supported(ResourceType::Group, AclOperation::Write).is_err());
        assert!(
            check_operation_supported(ResourceType::TransactionalId, AclOperation::Write).is_ok()
        );
        assert!(check_operation_supported(ResourceType::User, AclOperation::CreateTokens).is_ok());
    }

    #[test]
    fn filters_with_unknown_fields_are_refused() {
        assert!(validate_filter(&AclBindingFilter::any()).is_ok());
        let mut f = AclBindingFilter::any();
        f.pattern = ResourcePatternFilter::new(ResourceType::Unknown, None, PatternType::Any);
        assert_eq!(
            validate_filter(&f).unwrap_err().to_string(),
            "Unknown patternFilter."
        );
        let mut f = AclBindingFilter::any();
        f.pattern.pattern_type = PatternType::Unknown;
        assert_eq!(
            validate_filter(&f).unwrap_err().to_string(),
            "Unknown patternFilter."
        );
        let mut f = AclBindingFilter::any();
        f.entry = AccessControlEntryFilter::new(
            None,
            None,
            AclOperation::Unknown,
            AclPermissionType::Any,
        );
        assert_eq!(
            validate_filter(&f).unwrap_err().to_string(),
            "Unknown entryFilter."
        );
        let mut f = AclBindingFilter::any();
        f.entry.permission_type = AclPermissionType::Unknown;
        assert_eq!(validate_filter(&f).unwrap_err().error_code(), 42);
    }
}
