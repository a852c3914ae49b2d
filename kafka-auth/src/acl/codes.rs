//! The Kafka error codes the ACL module answers: those of [`AclError`](super::AclError) and
//! the per-resource-type authorization failures of
//! [`ResourceType::authorization_error_code`](super::ResourceType::authorization_error_code).
//! Plain numbers, imported by `error.rs` and `types.rs` (this file imports nothing).

/// Kafka's INVALID_REQUEST, the code of every CreateAcls / DeleteAcls validation error.
pub const INVALID_REQUEST: i16 = 42;
/// Kafka's UNKNOWN_SERVER_ERROR.
pub const UNKNOWN_SERVER_ERROR: i16 = -1;
/// Kafka's INVALID_CONFIG.
pub const INVALID_CONFIG: i16 = 40;
/// Kafka's TOPIC_AUTHORIZATION_FAILED.
pub const TOPIC_AUTHORIZATION_FAILED: i16 = 29;
/// Kafka's GROUP_AUTHORIZATION_FAILED.
pub const GROUP_AUTHORIZATION_FAILED: i16 = 30;
/// Kafka's CLUSTER_AUTHORIZATION_FAILED.
pub const CLUSTER_AUTHORIZATION_FAILED: i16 = 31;
/// Kafka's TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
pub const TRANSACTIONAL_ID_AUTHORIZATION_FAILED: i16 = 53;
/// Kafka's DELEGATION_TOKEN_AUTHORIZATION_FAILED.
pub const DELEGATION_TOKEN_AUTHORIZATION_FAILED: i16 = 65;
