//! Kafka's ACLs: the types the admin client and the broker share, the checks Kafka makes on
//! CreateAcls / DeleteAcls input, and an authorizer with the semantics of Kafka's
//! `StandardAuthorizer` (the KRaft authorizer). Pure code: the broker keeps the ACLs as the
//! metadata records AccessControlEntryRecord (with a `Uuid` id, here [`AclId`]) and
//! RemoveAccessControlEntryRecord, replays them into an [`AclAuthorizer`] and asks it about
//! every request.
//!
//! | file | what |
//! |---|---|
//! | `types.rs` | [`ResourceType`], [`PatternType`], [`AclOperation`], [`AclPermissionType`] with Kafka's codes and names; [`ResourcePattern`], [`AccessControlEntry`], [`AclBinding`], [`AclId`] |
//! | `filter.rs` | [`ResourcePatternFilter`], [`AccessControlEntryFilter`], [`AclBindingFilter`]: DescribeAcls / DeleteAcls matching |
//! | `validate.rs` | [`validate_new_binding`] (CreateAcls), [`validate_filter`] (DeleteAcls), [`check_operation_supported`] (the `kafka-acls` rule) |
//! | `authorizer.rs` | [`AclAuthorizer`]: add / remove / bindings, [`authorize`](AclAuthorizer::authorize), [`authorize_by_resource_type`](AclAuthorizer::authorize_by_resource_type), [`authorized_operations`](AclAuthorizer::authorized_operations) |
//! | `host.rs` | [`java_host_address`]: the client address as Kafka compares it with an ACL's host |
//! | `error.rs` | [`AclError`], with the Kafka error code each variant answers |
//! | `codes.rs` | the Kafka error codes as numbers: [`INVALID_REQUEST`], [`INVALID_CONFIG`], [`UNKNOWN_SERVER_ERROR`], and the authorization failures such as [`TOPIC_AUTHORIZATION_FAILED`] |
//!
//! Files import only downwards: `codes.rs` nothing; `types.rs` the codes; `error.rs` the
//! codes and types; `filter.rs` the types; `validate.rs` types, filters and errors;
//! `authorizer.rs` those and `validate.rs`; `host.rs` nothing.
//!
//! Not here: the authorizer's "not ready" state before the first metadata load (Kafka answers
//! AUTHORIZER_NOT_READY / closes such requests; the broker holds that state), the audit log
//! line (the [`Decision`] carries what it needs), the mapping of APIs to
//! (operation, resource) pairs.

mod authorizer;
mod codes;
mod error;
mod filter;
mod host;
mod types;
mod validate;

pub use authorizer::{AclAuthorizer, Action, AuthorizerConfig, DecidingRule, Decision};
pub use codes::{
    CLUSTER_AUTHORIZATION_FAILED, DELEGATION_TOKEN_AUTHORIZATION_FAILED,
    GROUP_AUTHORIZATION_FAILED, INVALID_CONFIG, INVALID_REQUEST, TOPIC_AUTHORIZATION_FAILED,
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED, UNKNOWN_SERVER_ERROR,
};
pub use error::AclError;
pub use filter::{AccessControlEntryFilter, AclBindingFilter, ResourcePatternFilter};
pub use host::java_host_address;
pub use types::{
    AccessControlEntry, AclBinding, AclId, AclOperation, AclPermissionType, CLUSTER_NAME,
    PatternType, ResourcePattern, ResourceType, WILDCARD, WILDCARD_PRINCIPAL, split_principal,
};
pub use validate::{check_operation_supported, validate_filter, validate_new_binding};
