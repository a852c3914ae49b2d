//! The vocabulary of Kafka's ACLs: the four code enums (resource type, pattern type,
//! operation, permission type) with Kafka's wire codes and names, and the concrete
//! bindings (`ResourcePattern` + `AccessControlEntry` = `AclBinding`).

use std::fmt;

use super::codes;

/// Generates one of Kafka's ACL code enums: variants with Kafka's `i8` code, the name Kafka's
/// enum prints (`TRANSACTIONAL_ID`) and the Pascal-case name Kafka's tools and audit log print
/// (`TransactionalId`).
macro_rules! kafka_code_enum {
    (
        $(#[$meta:meta])*
        $name:ident {
            $( $(#[$vmeta:meta])* $variant:ident = $code:literal, $kname:literal, $pascal:literal; )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $( $(#[$vmeta])* $variant = $code, )+
        }

        impl $name {
            /// Every value, in code order.
            pub const VALUES: &'static [$name] = &[$($name::$variant),+];

            /// Kafka's wire code.
            pub const fn code(self) -> i8 {
                self as i8
            }

            /// The value for a wire code; a code Kafka does not define reads as `Unknown`, as
            /// Kafka's `fromCode` does.
            pub const fn from_code(code: i8) -> Self {
                match code {
                    $( $code => $name::$variant, )+
                    _ => $name::Unknown,
                }
            }

            /// The name Kafka's enum prints (`toString`), e.g. in `ResourcePattern(...)`.
            pub const fn name(self) -> &'static str {
                match self {
                    $( $name::$variant => $kname, )+
                }
            }

            /// The Pascal-case name Kafka's `SecurityUtils` prints in the audit log and
            /// `kafka-acls` output.
            pub const fn pascal_name(self) -> &'static str {
                match self {
                    $( $name::$variant => $pascal, )+
                }
            }

            /// Parses a name as Kafka's `fromString` and `SecurityUtils` do: the enum name or
            /// the Pascal-case name, in any ASCII case; anything else is `Unknown`.
            pub fn parse(text: &str) -> Self {
                for value in Self::VALUES {
                    if text.eq_ignore_ascii_case(value.name())
                        || text.eq_ignore_ascii_case(value.pascal_name())
                    {
                        return *value;
                    }
                }
                $name::Unknown
            }

            /// True for `Unknown` (a code this side does not understand).
            pub const fn is_unknown(self) -> bool {
                matches!(self, $name::Unknown)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

kafka_code_enum! {
    /// The kind of resource an ACL protects (Kafka's `ResourceType`).
    ResourceType {
        /// A code this side does not understand.
        Unknown = 0, "UNKNOWN", "Unknown";
        /// In a filter: any resource type.
        Any = 1, "ANY", "Any";
        /// A topic.
        Topic = 2, "TOPIC", "Topic";
        /// A consumer (or share / streams) group.
        Group = 3, "GROUP", "Group";
        /// The cluster itself; its only name is `kafka-cluster`.
        Cluster = 4, "CLUSTER", "Cluster";
        /// A transactional id.
        TransactionalId = 5, "TRANSACTIONAL_ID", "TransactionalId";
        /// A delegation token.
        DelegationToken = 6, "DELEGATION_TOKEN", "DelegationToken";
        /// A user (for delegation tokens created on behalf of others).
        User = 7, "USER", "User";
    }
}

kafka_code_enum! {
    /// How an ACL's resource name is matched (Kafka's `PatternType`, KIP-290).
    PatternType {
        /// A code this side does not understand.
        Unknown = 0, "UNKNOWN", "Unknown";
        /// In a filter: any pattern type, names compared exactly.
        Any = 1, "ANY", "Any";
        /// In a filter: every pattern that would apply to the filter's name (the literal
        /// name, the wildcard `*` and every prefix of it).
        Match = 2, "MATCH", "Match";
        /// The name is taken as is; the name `*` is the wildcard matching every resource.
        Literal = 3, "LITERAL", "Literal";
        /// The name is a prefix: the ACL applies to every resource whose name starts with it.
        Prefixed = 4, "PREFIXED", "Prefixed";
    }
}

kafka_code_enum! {
    /// What an ACL allows or denies (Kafka's `AclOperation`). Codes above 31 cannot occur:
    /// authorized operations travel as a 32-bit field.
    AclOperation {
        /// A code this side does not understand.
        Unknown = 0, "UNKNOWN", "Unknown";
        /// In a filter: any operation.
        Any = 1, "ANY", "Any";
        /// Every operation: ALLOW ALL allows everything, DENY ALL denies everything.
        All = 2, "ALL", "All";
        /// Read (fetch, join a group, commit offsets ...).
        Read = 3, "READ", "Read";
        /// Write (produce, transactional writes).
        Write = 4, "WRITE", "Write";
        /// Create (topics).
        Create = 5, "CREATE", "Create";
        /// Delete (topics, records, groups).
        Delete = 6, "DELETE", "Delete";
        /// Alter (partitions, ACLs on the cluster).
        Alter = 7, "ALTER", "Alter";
        /// Describe; an ALLOW of READ, WRITE, DELETE or ALTER implies it.
        Describe = 8, "DESCRIBE", "Describe";
        /// Broker-to-broker actions (replica fetches, controller requests).
        ClusterAction = 9, "CLUSTER_ACTION", "ClusterAction";
        /// Describe configs; an ALLOW of ALTER_CONFIGS implies it.
        DescribeConfigs = 10, "DESCRIBE_CONFIGS", "DescribeConfigs";
        /// Alter configs.
        AlterConfigs = 11, "ALTER_CONFIGS", "AlterConfigs";
        /// Idempotent produce without a transactional id (on the cluster).
        IdempotentWrite = 12, "IDEMPOTENT_WRITE", "IdempotentWrite";
        /// Create delegation tokens for a user.
        CreateTokens = 13, "CREATE_TOKENS", "CreateTokens";
        /// Describe a user's delegation tokens.
        DescribeTokens = 14, "DESCRIBE_TOKENS", "DescribeTokens";
        /// Two-phase commit on a transactional id (KIP-939, Kafka 4.1).
        TwoPhaseCommit = 15, "TWO_PHASE_COMMIT", "TwoPhaseCommit";
    }
}

kafka_code_enum! {
    /// Whether an ACL allows or denies (Kafka's `AclPermissionType`).
    AclPermissionType {
        /// A code this side does not understand.
        Unknown = 0, "UNKNOWN", "Unknown";
        /// In a filter: either permission.
        Any = 1, "ANY", "Any";
        /// The ACL denies; a matching DENY beats every ALLOW.
        Deny = 2, "DENY", "Deny";
        /// The ACL allows.
        Allow = 3, "ALLOW", "Allow";
    }
}

impl ResourceType {
    /// The error code Kafka answers when an operation on this kind of resource is refused
    /// (Kafka's `AclEntry.authorizationError`); `None` for USER, ANY and UNKNOWN, which have
    /// none of their own.
    pub const fn authorization_error_code(self) -> Option<i16> {
        match self {
            ResourceType::Topic => Some(codes::TOPIC_AUTHORIZATION_FAILED),
            ResourceType::Group => Some(codes::GROUP_AUTHORIZATION_FAILED),
            ResourceType::Cluster => Some(codes::CLUSTER_AUTHORIZATION_FAILED),
            ResourceType::TransactionalId => Some(codes::TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
            ResourceType::DelegationToken => Some(codes::DELEGATION_TOKEN_AUTHORIZATION_FAILED),
            ResourceType::User | ResourceType::Any | ResourceType::Unknown => None,
        }
    }

    /// The operations that apply to this kind of resource, as Kafka lists them
    /// (`AclEntry.supportedOperations`): the bits of `authorized_operations` in Metadata,
    /// DescribeCluster and DescribeGroups, and what `kafka-acls` accepts besides ALL. Empty
    /// for ANY and UNKNOWN.
    pub const fn supported_operations(self) -> &'static [AclOperation] {
        use AclOperation as Op;
        match self {
            ResourceType::Topic => &[
                Op::Read,
                Op::Write,
                Op::Create,
                Op::Delete,
                Op::Alter,
                Op::Describe,
                Op::DescribeConfigs,
                Op::AlterConfigs,
            ],
            ResourceType::Group => &[
                Op::Read,
                Op::Delete,
                Op::Describe,
                Op::DescribeConfigs,
                Op::AlterConfigs,
            ],
            ResourceType::Cluster => &[
                Op::Create,
                Op::Alter,
                Op::Describe,
                Op::ClusterAction,
                Op::DescribeConfigs,
                Op::AlterConfigs,
                Op::IdempotentWrite,
            ],
            ResourceType::TransactionalId => &[Op::Write, Op::Describe],
            ResourceType::DelegationToken => &[Op::Describe],
            ResourceType::User => &[Op::CreateTokens, Op::DescribeTokens],
            ResourceType::Any | ResourceType::Unknown => &[],
        }
    }
}

/// The name of the one CLUSTER resource (Kafka's `CLUSTER_NAME`).
pub const CLUSTER_NAME: &str = "kafka-cluster";

/// The resource name of a LITERAL pattern that matches every resource of its type, and the
/// host of an entry that matches every host.
pub const WILDCARD: &str = "*";

/// The principal of an entry that matches every principal (only the `User` type is a
/// wildcard, as in Kafka).
pub const WILDCARD_PRINCIPAL: &str = "User:*";

/// A resource pattern: the resources an ACL applies to (Kafka's `ResourcePattern`).
///
/// A binding stored by the authorizer has a concrete resource type (not ANY / UNKNOWN) and a
/// LITERAL or PREFIXED pattern; [`validate_new_binding`](super::validate_new_binding) checks
/// that for CreateAcls.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ResourcePattern {
    /// The kind of resource.
    pub resource_type: ResourceType,
    /// The resource name, the prefix for PREFIXED, or `*` (LITERAL) for every resource.
    pub name: String,
    /// How `name` is matched.
    pub pattern_type: PatternType,
}

impl ResourcePattern {
    /// A pattern from its three parts.
    pub fn new(
        resource_type: ResourceType,
        name: impl Into<String>,
        pattern_type: PatternType,
    ) -> Self {
        ResourcePattern {
            resource_type,
            name: name.into(),
            pattern_type,
        }
    }

    /// A LITERAL pattern on one resource (or every resource when `name` is `*`).
    pub fn literal(resource_type: ResourceType, name: impl Into<String>) -> Self {
        Self::new(resource_type, name, PatternType::Literal)
    }

    /// A PREFIXED pattern on every resource whose name starts with `prefix`.
    pub fn prefixed(resource_type: ResourceType, prefix: impl Into<String>) -> Self {
        Self::new(resource_type, prefix, PatternType::Prefixed)
    }

    /// True when the resource type or pattern type is UNKNOWN.
    pub fn is_unknown(&self) -> bool {
        self.resource_type.is_unknown() || self.pattern_type.is_unknown()
    }
}

impl fmt::Display for ResourcePattern {
    /// Kafka's text: `ResourcePattern(resourceType=TOPIC, name=foo, patternType=LITERAL)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ResourcePattern(resourceType={}, name={}, patternType={})",
            self.resource_type, self.name, self.pattern_type
        )
    }
}

/// Who may (or may not) do what from where (Kafka's `AccessControlEntry`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AccessControlEntry {
    /// The principal as `Type:name` (`User:alice`); `User:*` is every principal.
    pub principal: String,
    /// The client's IP address as text, exactly as the broker formats it (see
    /// [`java_host_address`](super::java_host_address)), or `*` for every host.
    pub host: String,
    /// The operation.
    pub operation: AclOperation,
    /// ALLOW or DENY.
    pub permission_type: AclPermissionType,
}

impl AccessControlEntry {
    /// An entry from its four parts.
    pub fn new(
        principal: impl Into<String>,
        host: impl Into<String>,
        operation: AclOperation,
        permission_type: AclPermissionType,
    ) -> Self {
        AccessControlEntry {
            principal: principal.into(),
            host: host.into(),
            operation,
            permission_type,
        }
    }

    /// True when the operation or permission type is UNKNOWN.
    pub fn is_unknown(&self) -> bool {
        self.operation.is_unknown() || self.permission_type.is_unknown()
    }
}

impl fmt::Display for AccessControlEntry {
    /// Kafka's text: `(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "(principal={}, host={}, operation={}, permissionType={})",
            self.principal, self.host, self.operation, self.permission_type
        )
    }
}

/// One ACL: a resource pattern and an entry (Kafka's `AclBinding`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AclBinding {
    /// The resources it applies to.
    pub pattern: ResourcePattern,
    /// Who, from where, what, allow or deny.
    pub entry: AccessControlEntry,
}

impl AclBinding {
    /// A binding from a pattern and an entry.
    pub fn new(pattern: ResourcePattern, entry: AccessControlEntry) -> Self {
        AclBinding { pattern, entry }
    }

    /// True when any of the four code fields is UNKNOWN.
    pub fn is_unknown(&self) -> bool {
        self.pattern.is_unknown() || self.entry.is_unknown()
    }
}

impl fmt::Display for AclBinding {
    /// Kafka's text: `(pattern=ResourcePattern(...), entry=(principal=...))`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "(pattern={}, entry={})", self.pattern, self.entry)
    }
}

/// The id of a stored ACL: the `Uuid` of its AccessControlEntryRecord, as 16 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AclId(pub [u8; 16]);

impl fmt::Display for AclId {
    /// Kafka's text for a `Uuid`: URL-safe base64 without padding (22 characters).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use base64::Engine as _;
        f.write_str(&base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(self.0))
    }
}

/// Splits a principal `Type:name` at its first colon, as Kafka's
/// `SecurityUtils.parseKafkaPrincipal` does (either part may be empty); `None` when there is
/// no colon.
pub fn split_principal(principal: &str) -> Option<(&str, &str)> {
    principal.split_once(':')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_kafkas() {
        let rt: Vec<(i8, &str)> = ResourceType::VALUES
            .iter()
            .map(|v| (v.code(), v.name()))
            .collect();
        assert_eq!(
            rt,
            [
                (0, "UNKNOWN"),
                (1, "ANY"),
                (2, "TOPIC"),
                (3, "GROUP"),
                (4, "CLUSTER"),
                (5, "TRANSACTIONAL_ID"),
                (6, "DELEGATION_TOKEN"),
                (7, "USER")
            ]
        );
        let pt: Vec<(i8, &str)> = PatternType::VALUES
            .iter()
            .map(|v| (v.code(), v.name()))
            .collect();
        assert_eq!(
            pt,
            [
                (0, "UNKNOWN"),
                (1, "ANY"),
                (2, "MATCH"),
                (3, "LITERAL"),
                (4, "PREFIXED")
            ]
        );
        let ops: Vec<(i8, &str)> = AclOperation::VALUES
            .iter()
            .map(|v| (v.code(), v.name()))
            .collect();
        assert_eq!(
            ops,
            [
                (0, "UNKNOWN"),
                (1, "ANY"),
                (2, "ALL"),
                (3, "READ"),
                (4, "WRITE"),
                (5, "CREATE"),
                (6, "DELETE"),
                (7, "ALTER"),
                (8, "DESCRIBE"),
                (9, "CLUSTER_ACTION"),
                (10, "DESCRIBE_CONFIGS"),
                (11, "ALTER_CONFIGS"),
                (12, "IDEMPOTENT_WRITE"),
                (13, "CREATE_TOKENS"),
                (14, "DESCRIBE_TOKENS"),
                (15, "TWO_PHASE_COMMIT")
            ]
        );
        let perm: Vec<(i8, &str)> = AclPermissionType::VALUES
            .iter()
            .map(|v| (v.code(), v.name()))
            .collect();
        assert_eq!(
            perm,
            [(0, "UNKNOWN"), (1, "ANY"), (2, "DENY"), (3, "ALLOW")]
        );
    }

    #[test]
    fn from_code_round_trips_and_unknown_codes_read_as_unknown() {
        for op in AclOperation::VALUES {
            assert_eq!(AclOperation::from_code(op.code()), *op);
        }
        for rt in ResourceType::VALUES {
            assert_eq!(ResourceType::from_code(rt.code()), *rt);
        }
        assert_eq!(ResourceType::from_code(8), ResourceType::Unknown);
        assert_eq!(ResourceType::from_code(-1), ResourceType::Unknown);
        assert_eq!(PatternType::from_code(5), PatternType::Unknown);
        assert_eq!(AclOperation::from_code(16), AclOperation::Unknown);
        assert_eq!(AclOperation::from_code(i8::MIN), AclOperation::Unknown);
        assert_eq!(AclPermissionType::from_code(4), AclPermissionType::Unknown);
    }

    #[test]
    fn parse_takes_kafka_and_pascal_names_in_any_case() {
        assert_eq!(
            ResourceType::parse("transactional_id"),
            ResourceType::TransactionalId
        );
        assert_eq!(
            ResourceType::parse("TransactionalId"),
            ResourceType::TransactionalId
        );
        assert_eq!(
            ResourceType::parse("TRANSACTIONALID"),
            ResourceType::TransactionalId
        );
        assert_eq!(
            AclOperation::parse("DescribeConfigs"),
            AclOperation::DescribeConfigs
        );
        assert_eq!(AclOperation::parse("read"), AclOperation::Read);
        assert_eq!(AclPermissionType::parse("Allow"), AclPermissionType::Allow);
        assert_eq!(PatternType::parse("PREFIXED"), PatternType::Prefixed);
        assert_eq!(AclOperation::parse("frobnicate"), AclOperation::Unknown);
        assert_eq!(ResourceType::parse(""), ResourceType::Unknown);
    }

    #[test]
    fn display_matches_kafkas_to_string() {
        let binding = AclBinding::new(
            ResourcePattern::prefixed(ResourceType::Topic, "orders-"),
            AccessControlEntry::new(
                "User:alice",
                "*",
                AclOperation::Write,
                AclPermissionType::Allow,
            ),
        );
        assert_eq!(
            binding.to_string(),
            "(pattern=ResourcePattern(resourceType=TOPIC, name=orders-, patternType=PREFIXED), \
             entry=(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW))"
        );
        assert_eq!(
            AclOperation::IdempotentWrite.pascal_name(),
            "IdempotentWrite"
        );
    }

    #[test]
    fn acl_id_prints_as_kafka_uuid() {
        // Kafka prints Uuid.ZERO_UUID as "AAAAAAAAAAAAAAAAAAAAAA" and Uuid.ONE_UUID (0, 1) as
        // "AAAAAAAAAAAAAAAAAAAAAQ".
        assert_eq!(AclId([0; 16]).to_string(), "AAAAAAAAAAAAAAAAAAAAAA");
        let mut one = [0u8; 16];
        one[15] = 1;
        assert_eq!(AclId(one).to_string(), "AAAAAAAAAAAAAAAAAAAAAQ");
    }

    #[test]
    fn authorization_errors_and_supported_operations() {
        assert_eq!(ResourceType::Topic.authorization_error_code(), Some(29));
        assert_eq!(ResourceType::Group.authorization_error_code(), Some(30));
        assert_eq!(ResourceType::Cluster.authorization_error_code(), Some(31));
        assert_eq!(
            ResourceType::TransactionalId.authorization_error_code(),
            Some(53)
        );
        assert_eq!(
            ResourceType::DelegationToken.authorization_error_code(),
            Some(65)
        );
        assert_eq!(ResourceType::User.authorization_error_code(), None);
        assert_eq!(ResourceType::Topic.supported_operations().len(), 8);
        assert_eq!(ResourceType::Group.supported_operations().len(), 5);
        assert_eq!(ResourceType::Cluster.supported_operations().len(), 7);
        assert!(ResourceType::Any.supported_operations().is_empty());
        // Every supported operation fits the 32-bit authorized-operations field.
        for rt in ResourceType::VALUES {
            assert!(
                rt.supported_operations()
                    .iter()
                    .all(|op| (0..32).contains(&op.code()))
            );
        }
    }

    #[test]
    fn principal_split_at_first_colon() {
        assert_eq!(split_principal("User:alice"), Some(("User", "alice")));
        assert_eq!(split_principal("User:a:b"), Some(("User", "a:b")));
        assert_eq!(split_principal("User:"), Some(("User", "")));
        assert_eq!(split_principal("alice"), None);
    }
}
