//! Filters over ACL bindings, as DescribeAcls and DeleteAcls carry them, with Kafka's
//! matching rules (`ResourcePatternFilter`, `AccessControlEntryFilter`, `AclBindingFilter`).

use std::fmt;

use super::types::{
    AccessControlEntry, AclBinding, AclOperation, AclPermissionType, PatternType, ResourcePattern,
    ResourceType, WILDCARD,
};

/// Selects resource patterns (Kafka's `ResourcePatternFilter`).
///
/// - `resource_type` ANY matches every type, any other value only itself.
/// - `name` `None` matches every name.
/// - `pattern_type` ANY matches every pattern type with the name compared exactly; MATCH
///   matches every pattern that applies to `name`: LITERAL `name`, LITERAL `*` and PREFIXED
///   patterns that `name` starts with; any other value matches only itself, name compared
///   exactly.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ResourcePatternFilter {
    /// The resource type to match, or ANY.
    pub resource_type: ResourceType,
    /// The name to match, or `None` for any name.
    pub name: Option<String>,
    /// The pattern type to match, ANY, or MATCH.
    pub pattern_type: PatternType,
}

impl ResourcePatternFilter {
    /// The filter that matches every pattern.
    pub fn any() -> Self {
        ResourcePatternFilter {
            resource_type: ResourceType::Any,
            name: None,
            pattern_type: PatternType::Any,
        }
    }

    /// A filter from its three parts.
    pub fn new(
        resource_type: ResourceType,
        name: Option<String>,
        pattern_type: PatternType,
    ) -> Self {
        ResourcePatternFilter {
            resource_type,
            name,
            pattern_type,
        }
    }

    /// True when the resource type or pattern type is UNKNOWN.
    pub fn is_unknown(&self) -> bool {
        self.resource_type.is_unknown() || self.pattern_type.is_unknown()
    }

    /// Whether the filter selects `pattern`, by Kafka's rules (see the type's doc). A MATCH
    /// filter never selects a stored pattern whose own type is not LITERAL or PREFIXED
    /// (where Kafka throws).
    pub fn matches(&self, pattern: &ResourcePattern) -> bool {
        if self.resource_type != ResourceType::Any && self.resource_type != pattern.resource_type {
            return false;
        }
        if !matches!(self.pattern_type, PatternType::Any | PatternType::Match)
            && self.pattern_type != pattern.pattern_type
        {
            return false;
        }
        let Some(name) = &self.name else {
            return true;
        };
        if self.pattern_type == PatternType::Any || self.pattern_type == pattern.pattern_type {
            return *name == pattern.name;
        }
        // MATCH: every pattern that would apply to `name`.
        match pattern.pattern_type {
            PatternType::Literal => *name == pattern.name || pattern.name == WILDCARD,
            PatternType::Prefixed => name.starts_with(pattern.name.as_str()),
            _ => false,
        }
    }

    /// True when the filter can select at most one pattern: no ANY / UNKNOWN field, a name,
    /// and not MATCH (Kafka's `matchesAtMostOne`).
    pub fn matches_at_most_one(&self) -> bool {
        self.find_indefinite_field().is_none()
    }

    /// Kafka's description of the first field that keeps the filter from being definite, or
    /// `None`. Kafka does not count a pattern type of ANY as indefinite.
    pub fn find_indefinite_field(&self) -> Option<&'static str> {
        match (self.resource_type, &self.name, self.pattern_type) {
            (ResourceType::Any, _, _) => Some("Resource type is ANY."),
            (ResourceType::Unknown, _, _) => Some("Resource type is UNKNOWN."),
            (_, None, _) => Some("Resource name is NULL."),
            (_, _, PatternType::Match) => Some("Resource pattern type is MATCH."),
            (_, _, PatternType::Unknown) => Some("Resource pattern type is UNKNOWN."),
            _ => None,
        }
    }
}

impl From<&ResourcePattern> for ResourcePatternFilter {
    /// The filter that selects exactly this pattern (Kafka's `toFilter`).
    fn from(pattern: &ResourcePattern) -> Self {
        ResourcePatternFilter::new(
            pattern.resource_type,
            Some(pattern.name.clone()),
            pattern.pattern_type,
        )
    }
}

impl fmt::Display for ResourcePatternFilter {
    /// Kafka's text, with `<any>` for a missing name.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ResourcePattern(resourceType={}, name={}, patternType={})",
            self.resource_type,
            self.name.as_deref().unwrap_or("<any>"),
            self.pattern_type
        )
    }
}

/// Selects access control entries (Kafka's `AccessControlEntryFilter`): `None` principal or
/// host and ANY operation or permission match everything; other values are compared exactly
/// (`User:*` and `*` are not wildcards here).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AccessControlEntryFilter {
    /// The principal to match, or `None` for any.
    pub principal: Option<String>,
    /// The host to match, or `None` for any.
    pub host: Option<String>,
    /// The operation to match, or ANY.
    pub operation: AclOperation,
    /// The permission type to match, or ANY.
    pub permission_type: AclPermissionType,
}

impl AccessControlEntryFilter {
    /// The filter that matches every entry.
    pub fn any() -> Self {
        AccessControlEntryFilter {
            principal: None,
            host: None,
            operation: AclOperation::Any,
            permission_type: AclPermissionType::Any,
        }
    }

    /// A filter from its four parts.
    pub fn new(
        principal: Option<String>,
        host: Option<String>,
        operation: AclOperation,
        permission_type: AclPermissionType,
    ) -> Self {
        AccessControlEntryFilter {
            principal,
            host,
            operation,
            permission_type,
        }
    }

    /// True when the operation or permission type is UNKNOWN.
    pub fn is_unknown(&self) -> bool {
        self.operation.is_unknown() || self.permission_type.is_unknown()
    }

    /// Whether the filter selects `entry`.
    pub fn matches(&self, entry: &AccessControlEntry) -> bool {
        if self
            .principal
            .as_ref()
            .is_some_and(|p| *p != entry.principal)
        {
            return false;
        }
        if self.host.as_ref().is_some_and(|h| *h != entry.host) {
            return false;
        }
        if self.operation != AclOperation::Any && self.operation != entry.operation {
            return false;
        }
        self.permission_type == AclPermissionType::Any
            || self.permission_type == entry.permission_type
    }

    /// True when the filter can select at most one entry: no `None`, ANY or UNKNOWN field.
    pub fn matches_at_most_one(&self) -> bool {
        self.find_indefinite_field().is_none()
    }

    /// Kafka's description of the first indefinite field, or `None`.
    pub fn find_indefinite_field(&self) -> Option<&'static str> {
        if self.principal.is_none() {
            return Some("Principal is NULL");
        }
        if self.host.is_none() {
            return Some("Host is NULL");
        }
        match (self.operation, self.permission_type) {
            (AclOperation::Any, _) => Some("Operation is ANY"),
            (AclOperation::Unknown, _) => Some("Operation is UNKNOWN"),
            (_, AclPermissionType::Any) => Some("Permission type is ANY"),
            (_, AclPermissionType::Unknown) => Some("Permission type is UNKNOWN"),
            _ => None,
        }
    }
}

impl From<&AccessControlEntry> for AccessControlEntryFilter {
    /// The filter that selects exactly this entry.
    fn from(entry: &AccessControlEntry) -> Self {
        AccessControlEntryFilter::new(
            Some(entry.principal.clone()),
            Some(entry.host.clone()),
            entry.operation,
            entry.permission_type,
        )
    }
}

impl fmt::Display for AccessControlEntryFilter {
    /// Kafka's text, with `<any>` for a missing principal or host.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "(principal={}, host={}, operation={}, permissionType={})",
            self.principal.as_deref().unwrap_or("<any>"),
            self.host.as_deref().unwrap_or("<any>"),
            self.operation,
            self.permission_type
        )
    }
}

/// Selects ACL bindings: both the pattern filter and the entry filter must match (Kafka's
/// `AclBindingFilter`). DescribeAcls carries one, DeleteAcls a list.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AclBindingFilter {
    /// The filter on the resource pattern.
    pub pattern: ResourcePatternFilter,
    /// The filter on the entry.
    pub entry: AccessControlEntryFilter,
}

impl AclBindingFilter {
    /// The filter that matches every binding.
    pub fn any() -> Self {
        AclBindingFilter {
            pattern: ResourcePatternFilter::any(),
            entry: AccessControlEntryFilter::any(),
        }
    }

    /// A filter from its two halves.
    pub fn new(pattern: ResourcePatternFilter, entry: AccessControlEntryFilter) -> Self {
        AclBindingFilter { pattern, entry }
    }

    /// True when either half has an UNKNOWN field.
    pub fn is_unknown(&self) -> bool {
        self.pattern.is_unknown() || self.entry.is_unknown()
    }

    /// Whether the filter selects `binding`.
    pub fn matches(&self, binding: &AclBinding) -> bool {
        self.pattern.matches(&binding.pattern) && self.entry.matches(&binding.entry)
    }

    /// True when both halves can select at most one value.
    pub fn matches_at_most_one(&self) -> bool {
        self.pattern.matches_at_most_one() && self.entry.matches_at_most_one()
    }

    /// The first indefinite field (pattern half first), in Kafka's words, or `None`.
    pub fn find_indefinite_field(&self) -> Option<&'static str> {
        self.pattern
            .find_indefinite_field()
            .or_else(|| self.entry.find_indefinite_field())
    }
}

impl From<&AclBinding> for AclBindingFilter {
    /// The filter that selects exactly this binding.
    fn from(binding: &AclBinding) -> Self {
        AclBindingFilter::new((&binding.pattern).into(), (&binding.entry).into())
    }
}

impl fmt::Display for AclBindingFilter {
    /// Kafka's text: `(patternFilter=..., entryFilter=...)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "(patternFilter={}, entryFilter={})",
            self.pattern, self.entry
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(rt: ResourceType, name: &str, pt: PatternType) -> ResourcePattern {
        ResourcePattern::new(rt, name, pt)
    }

    fn filter(rt: ResourceType, name: Option<&str>, pt: PatternType) -> ResourcePatternFilter {
        ResourcePatternFilter::new(rt, name.map(String::from), pt)
    }

    use PatternType::{Any, Literal, Match, Prefixed};
    use ResourceType::{Group, Topic};

    #[test]
    fn any_filter_matches_everything() {
        let f = ResourcePatternFilter::any();
        assert!(f.matches(&pattern(Topic, "a", Literal)));
        assert!(f.matches(&pattern(Group, "*", Literal)));
        assert!(f.matches(&pattern(Topic, "p", Prefixed)));
        assert!(AclBindingFilter::any().matches(&AclBinding::new(
            pattern(Topic, "a", Literal),
            AccessControlEntry::new("User:a", "*", AclOperation::Read, AclPermissionType::Deny)
        )));
    }

    #[test]
    fn resource_type_must_match_unless_any() {
        let f = filter(Topic, None, Any);
        assert!(f.matches(&pattern(Topic, "x", Literal)));
        assert!(!f.matches(&pattern(Group, "x", Literal)));
    }

    #[test]
    fn specific_pattern_type_compares_names_exactly() {
        let f = filter(Topic, Some("foo"), Literal);
        assert!(f.matches(&pattern(Topic, "foo", Literal)));
        assert!(!f.matches(&pattern(Topic, "foo", Prefixed)));
        // The wildcard is an ordinary name for a LITERAL filter.
        assert!(!f.matches(&pattern(Topic, "*", Literal)));
        let f = filter(Topic, Some("fo"), Prefixed);
        assert!(f.matches(&pattern(Topic, "fo", Prefixed)));
        assert!(!f.matches(&pattern(Topic, "f", Prefixed)));
    }

    #[test]
    fn any_pattern_type_compares_names_exactly_over_all_types() {
        let f = filter(Topic, Some("foo"), Any);
        assert!(f.matches(&pattern(Topic, "foo", Literal)));
        assert!(f.matches(&pattern(Topic, "foo", Prefixed)));
        assert!(!f.matches(&pattern(Topic, "*", Literal)));
        assert!(!f.matches(&pattern(Topic, "fo", Prefixed)));
    }

    #[test]
    fn match_filter_finds_every_pattern_that_applies() {
        let f = filter(Topic, Some("foobar"), Match);
        assert!(f.matches(&pattern(Topic, "foobar", Literal)));
        assert!(f.matches(&pattern(Topic, "*", Literal)));
        assert!(f.matches(&pattern(Topic, "foo", Prefixed)));
        assert!(f.matches(&pattern(Topic, "foobar", Prefixed)));
        assert!(!f.matches(&pattern(Topic, "foo", Literal)));
        assert!(!f.matches(&pattern(Topic, "foobarbaz", Prefixed)));
        assert!(!f.matches(&pattern(Topic, "bar", Prefixed)));
        assert!(!f.matches(&pattern(Group, "foobar", Literal)));
        // A stored pattern of unknown type is never matched by MATCH (Kafka throws).
        assert!(!f.matches(&pattern(Topic, "foobar", PatternType::Unknown)));
        // A MATCH filter without a name matches every pattern of the type.
        assert!(filter(Topic, None, Match).matches(&pattern(Topic, "zzz", Prefixed)));
    }

    #[test]
    fn entry_filter_fields() {
        let entry = AccessControlEntry::new(
            "User:alice",
            "10.0.0.1",
            AclOperation::Read,
            AclPermissionType::Allow,
        );
        assert!(AccessControlEntryFilter::any().matches(&entry));
        let mut f = AccessControlEntryFilter::any();
        f.principal = Some("User:bob".into());
        assert!(!f.matches(&entry));
        // `User:*` in a filter is an ordinary value, not a wildcard.
        f.principal = Some("User:*".into());
        assert!(!f.matches(&entry));
        let mut f = AccessControlEntryFilter::any();
        f.host = Some("*".into());
        assert!(!f.matches(&entry));
        f.host = Some("10.0.0.1".into());
        assert!(f.matches(&entry));
        f.operation = AclOperation::Write;
        assert!(!f.matches(&entry));
        f.operation = AclOperation::Read;
        f.permission_type = AclPermissionType::Deny;
        assert!(!f.matches(&entry));
        f.permission_type = AclPermissionType::Allow;
        assert!(f.matches(&entry));
    }

    #[test]
    fn indefinite_fields_in_kafkas_words_and_order() {
        assert_eq!(
            AclBindingFilter::any().find_indefinite_field(),
            Some("Resource type is ANY.")
        );
        let f = filter(ResourceType::Unknown, Some("a"), Literal);
        assert_eq!(f.find_indefinite_field(), Some("Resource type is UNKNOWN."));
        assert_eq!(
            filter(Topic, None, Literal).find_indefinite_field(),
            Some("Resource name is NULL.")
        );
        assert_eq!(
            filter(Topic, Some("a"), Match).find_indefinite_field(),
            Some("Resource pattern type is MATCH.")
        );
        assert_eq!(
            filter(Topic, Some("a"), PatternType::Unknown).find_indefinite_field(),
            Some("Resource pattern type is UNKNOWN.")
        );
        // Kafka does not count pattern type ANY as indefinite.
        assert_eq!(filter(Topic, Some("a"), Any).find_indefinite_field(), None);

        let definite_pattern = filter(Topic, Some("a"), Literal);
        let mut entry = AccessControlEntryFilter::new(
            Some("User:a".into()),
            Some("*".into()),
            AclOperation::Read,
            AclPermissionType::Allow,
        );
        let binding_filter = AclBindingFilter::new(definite_pattern.clone(), entry.clone());
        assert!(binding_filter.matches_at_most_one());
        assert_eq!(binding_filter.find_indefinite_field(), None);
        entry.permission_type = AclPermissionType::Unknown;
        assert_eq!(
            entry.find_indefinite_field(),
            Some("Permission type is UNKNOWN")
        );
        entry.permission_type = AclPermissionType::Any;
        assert_eq!(
            entry.find_indefinite_field(),
            Some("Permission type is ANY")
        );
        entry.operation = AclOperation::Unknown;
        assert_eq!(entry.find_indefinite_field(), Some("Operation is UNKNOWN"));
        entry.operation = AclOperation::Any;
        assert_eq!(entry.find_indefinite_field(), Some("Operation is ANY"));
        entry.host = None;
        assert_eq!(entry.find_indefinite_field(), Some("Host is NULL"));
        entry.principal = None;
        assert_eq!(entry.find_indefinite_field(), Some("Principal is NULL"));
        let binding_filter = AclBindingFilter::new(definite_pattern, entry);
        assert!(!binding_filter.matches_at_most_one());
        assert_eq!(
            binding_filter.find_indefinite_field(),
            Some("Principal is NULL")
        );
    }

    #[test]
    fn to_filter_selects_exactly_the_binding() {
        let binding = AclBinding::new(
            pattern(Topic, "orders", Prefixed),
            AccessControlEntry::new("User:a", "*", AclOperation::Write, AclPermissionType::Allow),
        );
        let f = AclBindingFilter::from(&binding);
        assert!(f.matches_at_most_one());
        assert!(f.matches(&binding));
        let mut other = binding.clone();
        other.pattern.pattern_type = Literal;
        assert!(!f.matches(&other));
        assert_eq!(
            AclBindingFilter::any().to_string(),
            "(patternFilter=ResourcePattern(resourceType=ANY, name=<any>, patternType=ANY), \
             entryFilter=(principal=<any>, host=<any>, operation=ANY, permissionType=ANY))"
        );
    }
}
