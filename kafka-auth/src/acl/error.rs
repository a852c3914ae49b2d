//! The one error type of the ACL module, with the Kafka error code each variant answers (the
//! codes are in `codes.rs`).

use super::codes::{INVALID_CONFIG, INVALID_REQUEST, UNKNOWN_SERVER_ERROR};
use super::types::{AclId, AclOperation, AclPermissionType, PatternType, ResourceType};

/// What went wrong with an ACL, a filter or the authorizer's input. The text of the
/// validation variants is Kafka's message, for the `error_message` of CreateAcls and
/// DeleteAcls answers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AclError {
    /// A CLUSTER binding not named `kafka-cluster` (the name is kept).
    #[error("The only valid name for the CLUSTER resource is kafka-cluster")]
    InvalidClusterName(String),
    /// A binding with an empty resource name.
    #[error("Invalid empty resource name")]
    EmptyResourceName,
    /// A binding whose resource type is UNKNOWN or ANY.
    #[error("Invalid resourceType {0}")]
    InvalidResourceType(ResourceType),
    /// A binding whose pattern type is not LITERAL or PREFIXED.
    #[error("Invalid patternType {0}")]
    InvalidPatternType(PatternType),
    /// A binding whose operation is UNKNOWN or ANY.
    #[error("Invalid operation {0}")]
    InvalidOperation(AclOperation),
    /// A binding whose permission type is not ALLOW or DENY.
    #[error("Invalid permissionType {0}")]
    InvalidPermissionType(AclPermissionType),
    /// A binding's principal without the colon of `Type:name`.
    #[error("expected a string in format principalType:principalName but got {0}")]
    InvalidPrincipal(String),
    /// A `super.users` entry without the colon of `Type:name`.
    #[error("super.users: expected a string in format principalType:principalName but got {0}")]
    InvalidSuperUser(String),
    /// A binding with an empty host.
    #[error("Invalid empty host")]
    EmptyHost,
    /// An operation that does not apply to the resource type (the `kafka-acls` rule).
    #[error("ResourceType {resource_type} only supports operations {supported}")]
    UnsupportedOperation {
        /// The binding's resource type.
        resource_type: ResourceType,
        /// The refused operation.
        operation: AclOperation,
        /// The operations that apply, Pascal-case names joined by `, `.
        supported: String,
    },
    /// A DeleteAcls / DescribeAcls pattern filter with an UNKNOWN field.
    #[error("Unknown patternFilter.")]
    UnknownPatternFilter,
    /// A DeleteAcls / DescribeAcls entry filter with an UNKNOWN field.
    #[error("Unknown entryFilter.")]
    UnknownEntryFilter,
    /// `add` with an id the authorizer already holds.
    #[error("An ACL with ID {0} already exists.")]
    DuplicateId(AclId),
    /// `add` of a binding the authorizer already holds under another id (the controller
    /// never writes two records for one ACL).
    #[error("ACL {new} is already stored with ID {existing}")]
    DuplicateAcl {
        /// The id of the stored copy.
        existing: AclId,
        /// The id that was being added.
        new: AclId,
    },
    /// `authorize_by_resource_type` called with a filter value or UNKNOWN (Kafka's text).
    #[error("{0}")]
    InvalidByResourceTypeArgument(&'static str),
}

impl AclError {
    /// The Kafka error code this error answers: INVALID_REQUEST for what a client sent,
    /// INVALID_CONFIG for a bad `super.users`, UNKNOWN_SERVER_ERROR for the authorizer's own
    /// inconsistencies.
    pub fn error_code(&self) -> i16 {
        match self {
            AclError::InvalidPrincipal(_)
            | AclError::InvalidClusterName(_)
            | AclError::EmptyResourceName
            | AclError::InvalidResourceType(_)
            | AclError::InvalidPatternType(_)
            | AclError::InvalidOperation(_)
            | AclError::InvalidPermissionType(_)
            | AclError::EmptyHost
            | AclError::UnsupportedOperation { .. }
            | AclError::UnknownPatternFilter
            | AclError::UnknownEntryFilter
            | AclError::InvalidByResourceTypeArgument(_) => INVALID_REQUEST,
            AclError::InvalidSuperUser(_) => INVALID_CONFIG,
            AclError::DuplicateId(_) | AclError::DuplicateAcl { .. } => UNKNOWN_SERVER_ERROR,
        }
    }
}
