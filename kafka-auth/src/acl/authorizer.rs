//! The ACL store and the authorization decision, with the semantics of Kafka's
//! `StandardAuthorizer` (`StandardAuthorizerData.authorize` / `findResult`) and Kafka's
//! default `Authorizer.authorizeByResourceType`.
//!
//! ACLs are indexed by (resource type, resource name) in a `BTreeMap` whose key is the
//! resource type's code followed by the name's bytes. To find the ACLs that apply to a name
//! `N`, the index is walked downwards from `N`: every stored name that is a prefix of `N`
//! sorts at or below `N`, and when the walk meets a name that is not a prefix of `N`, sharing
//! only its first `k` bytes with it, it jumps to `N[..k]`, since every prefix of `N` longer
//! than `k` sorts above the name met (Kafka walks its reverse-sorted set the same way). The
//! wildcard `*` is one more lookup. A check costs O(log n) per jump plus the ACLs that apply,
//! and within one resource only the ACLs of the caller's principal and of `User:*` are read.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::ops::{Bound, ControlFlow};
use std::sync::Arc;

use super::error::AclError;
use super::filter::AclBindingFilter;
use super::types::{
    AclBinding, AclId, AclOperation, AclPermissionType, PatternType, ResourceType, WILDCARD,
    WILDCARD_PRINCIPAL, split_principal,
};
use super::validate::check_stored_codes;

/// The authorizer's configuration, with Kafka's keys.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthorizerConfig {
    /// `super.users`: principals (`User:admin`) allowed everything, whatever the ACLs say.
    pub super_users: Vec<String>,
    /// `allow.everyone.if.no.acl.found` (default false): the answer for a resource on which
    /// no ACL at all applies (for any principal, host or operation).
    pub allow_everyone_if_no_acl_found: bool,
}

impl AuthorizerConfig {
    /// Parses a `super.users` value as Kafka does: entries separated by `;`, each trimmed,
    /// empty ones skipped, each needing the colon of `Type:name`.
    pub fn parse_super_users(value: &str) -> Result<Vec<String>, AclError> {
        let mut users = Vec::new();
        for part in value.split(';') {
            let user = part.trim();
            if user.is_empty() {
                continue;
            }
            if split_principal(user).is_none() {
                return Err(AclError::InvalidSuperUser(user.to_string()));
            }
            users.push(user.to_string());
        }
        Ok(users)
    }

    /// Parses an `allow.everyone.if.no.acl.found` value as Java's `Boolean.parseBoolean`
    /// does after trimming: `true` in any case is true, anything else false.
    pub fn parse_allow_everyone(value: &str) -> bool {
        value.trim().eq_ignore_ascii_case("true")
    }
}

/// One thing a client wants to do: the input of [`AclAuthorizer::authorize`]. The resource is
/// always named literally (Kafka refuses other pattern types in an action).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Action<'a> {
    /// The session's principal, `Type:name` (`User:alice`; `User:ANONYMOUS` when not
    /// authenticated).
    pub principal: &'a str,
    /// The client's address as Java prints it (see [`java_host_address`](super::java_host_address)).
    pub host: &'a str,
    /// The operation; a concrete one (not ANY / UNKNOWN, which no ACL grants).
    pub operation: AclOperation,
    /// The kind of resource.
    pub resource_type: ResourceType,
    /// The resource's name (`kafka-cluster` for the cluster).
    pub resource_name: &'a str,
}

/// Why a decision went the way it did, for the audit log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecidingRule<'a> {
    /// The principal is in `super.users`.
    SuperUser,
    /// This ACL decided: a matching DENY when denied, a matching ALLOW when allowed.
    Acl {
        /// The ACL's id.
        id: AclId,
        /// The ACL.
        binding: &'a AclBinding,
    },
    /// No ACL applies to the resource: `allow.everyone.if.no.acl.found` decided.
    NoAclOnResource,
    /// ACLs apply to the resource, but none allows this principal, host and operation.
    NoMatchingAllow,
}

/// The answer of [`AclAuthorizer::authorize`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision<'a> {
    /// Whether the action is allowed.
    pub allowed: bool,
    /// What decided.
    pub rule: DecidingRule<'a>,
}

impl fmt::Display for Decision<'_> {
    /// The deciding rule as Kafka's audit log names it: `SuperUser`, `MatchingAcl(...)` (here
    /// with the ACL's id and binding), `DefaultAllow` or `DefaultDeny`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.rule {
            DecidingRule::SuperUser => f.write_str("SuperUser"),
            DecidingRule::Acl { id, binding } => write!(f, "MatchingAcl(id={id}, acl={binding})"),
            DecidingRule::NoAclOnResource | DecidingRule::NoMatchingAllow if self.allowed => {
                f.write_str("DefaultAllow")
            }
            DecidingRule::NoAclOnResource | DecidingRule::NoMatchingAllow => {
                f.write_str("DefaultDeny")
            }
        }
    }
}

/// One stored ACL in the index.
#[derive(Debug, Clone)]
struct IndexedAcl {
    id: AclId,
    binding: Arc<AclBinding>,
}

/// The ACLs of one resource pattern, by principal.
#[derive(Debug, Default, Clone)]
struct Bucket {
    by_principal: BTreeMap<String, Vec<IndexedAcl>>,
}

impl Bucket {
    fn is_empty(&self) -> bool {
        self.by_principal.is_empty()
    }

    /// The ACLs of `principal` and of the wildcard principal.
    fn for_principal<'s>(&'s self, principal: &str) -> impl Iterator<Item = &'s IndexedAcl> + 's {
        let own = self.by_principal.get(principal);
        let wildcard = if principal == WILDCARD_PRINCIPAL {
            None
        } else {
            self.by_principal.get(WILDCARD_PRINCIPAL)
        };
        own.into_iter().chain(wildcard).flatten()
    }

    fn iter(&self) -> impl Iterator<Item = &IndexedAcl> {
        self.by_principal.values().flatten()
    }
}

/// The LITERAL and the PREFIXED ACLs of one (resource type, name).
#[derive(Debug, Default, Clone)]
struct Slot {
    literal: Bucket,
    prefixed: Bucket,
}

impl Slot {
    fn bucket(&self, pattern_type: PatternType) -> &Bucket {
        match pattern_type {
            PatternType::Prefixed => &self.prefixed,
            _ => &self.literal,
        }
    }

    fn bucket_mut(&mut self, pattern_type: PatternType) -> &mut Bucket {
        match pattern_type {
            PatternType::Prefixed => &mut self.prefixed,
            _ => &mut self.literal,
        }
    }

    fn is_empty(&self) -> bool {
        self.literal.is_empty() && self.prefixed.is_empty()
    }
}

/// The index key of a resource: its type's code, then its name's bytes.
fn index_key(resource_type: ResourceType, name: &str) -> Vec<u8> {
    let mut key = Vec::with_capacity(1 + name.len());
    key.push(resource_type.code().to_be_bytes()[0]);
    key.extend_from_slice(name.as_bytes());
    key
}

fn common_prefix_len(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Whether an ACL with `acl_operation` and `permission` applies to `requested`, by Kafka's
/// `findResult`: ALL applies to everything (both ALLOW and DENY); an ALLOW of READ, WRITE,
/// DELETE or ALTER also allows DESCRIBE, an ALLOW of ALTER_CONFIGS also allows
/// DESCRIBE_CONFIGS; a DENY applies only to its own operation (a DENY of READ does not deny
/// DESCRIBE).
fn operation_applies(
    acl_operation: AclOperation,
    permission: AclPermissionType,
    requested: AclOperation,
) -> bool {
    use AclOperation as Op;
    if acl_operation == Op::All {
        return true;
    }
    if permission != AclPermissionType::Allow {
        return acl_operation == requested;
    }
    match requested {
        Op::Describe => matches!(
            acl_operation,
            Op::Describe | Op::Read | Op::Write | Op::Delete | Op::Alter
        ),
        Op::DescribeConfigs => matches!(acl_operation, Op::DescribeConfigs | Op::AlterConfigs),
        _ => acl_operation == requested,
    }
}

/// Appends the ACLs of `bucket` that `filter` selects.
fn collect_matching<'s>(
    filter: &AclBindingFilter,
    bucket: &'s Bucket,
    found: &mut Vec<(AclId, &'s AclBinding)>,
) {
    for acl in bucket.iter() {
        if filter.matches(&acl.binding) {
            found.push((acl.id, &*acl.binding));
        }
    }
}

fn host_applies(acl_host: &str, host: &str) -> bool {
    acl_host == WILDCARD || acl_host == host
}

/// Kafka's ACL authorizer: the set of ACLs (added and removed by id, as the metadata
/// records AccessControlEntryRecord / RemoveAccessControlEntryRecord carry them) and the
/// decision for each request.
///
/// The rules, each Kafka's:
/// - a principal in `super.users` is allowed everything;
/// - the ACLs that apply to a resource are those of its type that are LITERAL with its name,
///   LITERAL `*`, or PREFIXED with a prefix of its name;
/// - among those, an ACL matches when its principal is the caller's or `User:*`, its host is
///   the caller's or `*`, and its operation applies (see ALL and the implied operations on
///   [`AclOperation`]);
/// - a matching DENY denies, whatever ALLOWs match; otherwise a matching ALLOW allows;
/// - when no ACL at all applies to the resource (for any principal, host or operation),
///   `allow.everyone.if.no.acl.found` decides; otherwise the answer is deny.
///
/// One difference: Kafka's walk skips the LITERAL `*` ACLs for a resource whose own name
/// starts with `*` (other than `*` itself), a slip of its prefix scan; here the wildcard
/// applies to every name.
#[derive(Debug, Default, Clone)]
pub struct AclAuthorizer {
    super_users: HashSet<String>,
    allow_everyone_if_no_acl_found: bool,
    by_id: HashMap<AclId, Arc<AclBinding>>,
    index: BTreeMap<Box<[u8]>, Slot>,
}

impl AclAuthorizer {
    /// An authorizer with no ACLs.
    pub fn new(config: AuthorizerConfig) -> Self {
        let mut authorizer = AclAuthorizer::default();
        authorizer.reconfigure(config);
        authorizer
    }

    /// Takes a new configuration (a dynamic change of `super.users` or
    /// `allow.everyone.if.no.acl.found`), keeping the ACLs.
    pub fn reconfigure(&mut self, config: AuthorizerConfig) {
        self.super_users = config.super_users.into_iter().collect();
        self.allow_everyone_if_no_acl_found = config.allow_everyone_if_no_acl_found;
    }

    /// The number of ACLs held.
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// True when no ACL is held.
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// The ACL with this id.
    pub fn get(&self, id: &AclId) -> Option<&AclBinding> {
        self.by_id.get(id).map(|binding| &**binding)
    }

    /// Adds an ACL (the replay of an AccessControlEntryRecord). Refused, as Kafka's ACL
    /// cache refuses them: an id already held, a binding already held under another id. Also
    /// refused: a binding with UNKNOWN / ANY / MATCH codes, which could never be created (the
    /// broker logs it and goes on).
    pub fn add(&mut self, id: AclId, binding: AclBinding) -> Result<(), AclError> {
        check_stored_codes(&binding)?;
        if self.by_id.contains_key(&id) {
            return Err(AclError::DuplicateId(id));
        }
        let key = index_key(binding.pattern.resource_type, &binding.pattern.name);
        if let Some(existing) = self
            .index
            .get(key.as_slice())
            .and_then(|slot| {
                slot.bucket(binding.pattern.pattern_type)
                    .by_principal
                    .get(binding.entry.principal.as_str())
            })
            .and_then(|acls| acls.iter().find(|acl| acl.binding.entry == binding.entry))
        {
            return Err(AclError::DuplicateAcl {
                existing: existing.id,
                new: id,
            });
        }
        let binding = Arc::new(binding);
        self.index
            .entry(key.into_boxed_slice())
            .or_default()
            .bucket_mut(binding.pattern.pattern_type)
            .by_principal
            .entry(binding.entry.principal.clone())
            .or_default()
            .push(IndexedAcl {
                id,
                binding: Arc::clone(&binding),
            });
        self.by_id.insert(id, binding);
        Ok(())
    }

    /// Removes the ACL with this id (the replay of a RemoveAccessControlEntryRecord) and
    /// returns it; `None` when no ACL has this id.
    pub fn remove(&mut self, id: &AclId) -> Option<AclBinding> {
        let binding = self.by_id.remove(id)?;
        let key = index_key(binding.pattern.resource_type, &binding.pattern.name);
        if let Some(slot) = self.index.get_mut(key.as_slice()) {
            let bucket = slot.bucket_mut(binding.pattern.pattern_type);
            let principal = binding.entry.principal.as_str();
            if let Some(acls) = bucket.by_principal.get_mut(principal) {
                acls.retain(|acl| acl.id != *id);
                if acls.is_empty() {
                    bucket.by_principal.remove(principal);
                }
            }
            if slot.is_empty() {
                self.index.remove(key.as_slice());
            }
        }
        Some(Arc::try_unwrap(binding).unwrap_or_else(|shared| (*shared).clone()))
    }

    /// The ACLs `filter` selects, with their ids (DescribeAcls, and DeleteAcls to find the
    /// ids to remove), ordered by resource type and name (LITERAL before PREFIXED, then by
    /// principal) except for a MATCH filter, whose candidates come from the same walk as an
    /// authorization. A filter naming one resource reads only its candidates.
    pub fn bindings(&self, filter: &AclBindingFilter) -> Vec<(AclId, &AclBinding)> {
        let mut found = Vec::new();
        let pattern = &filter.pattern;
        let concrete = !matches!(
            pattern.resource_type,
            ResourceType::Any | ResourceType::Unknown
        );
        match (&pattern.name, pattern.pattern_type) {
            (Some(name), PatternType::Literal | PatternType::Prefixed | PatternType::Any)
                if concrete =>
            {
                if let Some(slot) = self
                    .index
                    .get(index_key(pattern.resource_type, name).as_slice())
                {
                    collect_matching(filter, &slot.literal, &mut found);
                    collect_matching(filter, &slot.prefixed, &mut found);
                }
            }
            (Some(name), PatternType::Match) if concrete => {
                let _: Option<()> = self.walk(pattern.resource_type, name, &mut |bucket| {
                    collect_matching(filter, bucket, &mut found);
                    ControlFlow::Continue(())
                });
            }
            _ => {
                for slot in self.index.values() {
                    collect_matching(filter, &slot.literal, &mut found);
                    collect_matching(filter, &slot.prefixed, &mut found);
                }
            }
        }
        found
    }

    /// Calls `visit` with every bucket of ACLs that applies to (resource type, name): the
    /// LITERAL ACLs of the name, the PREFIXED ACLs of every prefix of it (the name included),
    /// and the LITERAL wildcard ACLs. Stops at the first `Break`.
    fn walk<'s, B>(
        &'s self,
        resource_type: ResourceType,
        name: &str,
        visit: &mut impl FnMut(&'s Bucket) -> ControlFlow<B>,
    ) -> Option<B> {
        let key = index_key(resource_type, name);
        let name_bytes = name.as_bytes();
        let lowest = &key[..1];
        // The walk covers stored names <= key[1..upper]; each jump shortens `upper`.
        let mut upper = key.len();
        'walk: loop {
            let range = self
                .index
                .range::<[u8], _>((Bound::Included(lowest), Bound::Included(&key[..upper])))
                .rev();
            for (stored, slot) in range {
                let stored_name = stored.get(1..).unwrap_or_default();
                let common = common_prefix_len(stored_name, name_bytes);
                if common < stored_name.len() {
                    // Not a prefix of the name: every longer prefix was above it, so go on
                    // from the part it shares with the name.
                    upper = 1 + common;
                    continue 'walk;
                }
                if stored_name.len() == name_bytes.len() {
                    if let ControlFlow::Break(found) = visit(&slot.literal) {
                        return Some(found);
                    }
                }
                if let ControlFlow::Break(found) = visit(&slot.prefixed) {
                    return Some(found);
                }
            }
            break;
        }
        if name != WILDCARD {
            if let Some(slot) = self
                .index
                .get(index_key(resource_type, WILDCARD).as_slice())
            {
                if let ControlFlow::Break(found) = visit(&slot.literal) {
                    return Some(found);
                }
            }
        }
        None
    }

    /// Decides one action (see the type's doc for the rules).
    pub fn authorize(&self, action: &Action<'_>) -> Decision<'_> {
        if self.super_users.contains(action.principal) {
            return Decision {
                allowed: true,
                rule: DecidingRule::SuperUser,
            };
        }
        let mut any_acl_on_resource = false;
        let mut first_allow: Option<&IndexedAcl> = None;
        let first_deny = self.walk(action.resource_type, action.resource_name, &mut |bucket| {
            if bucket.is_empty() {
                return ControlFlow::Continue(());
            }
            any_acl_on_resource = true;
            for acl in bucket.for_principal(action.principal) {
                let entry = &acl.binding.entry;
                if !host_applies(&entry.host, action.host)
                    || !operation_applies(entry.operation, entry.permission_type, action.operation)
                {
                    continue;
                }
                if entry.permission_type == AclPermissionType::Allow {
                    first_allow.get_or_insert(acl);
                } else {
                    return ControlFlow::Break(acl);
                }
            }
            ControlFlow::Continue(())
        });
        match (first_deny, first_allow) {
            (Some(acl), _) => Decision {
                allowed: false,
                rule: DecidingRule::Acl {
                    id: acl.id,
                    binding: &acl.binding,
                },
            },
            (None, Some(acl)) => Decision {
                allowed: true,
                rule: DecidingRule::Acl {
                    id: acl.id,
                    binding: &acl.binding,
                },
            },
            (None, None) if !any_acl_on_resource => Decision {
                allowed: self.allow_everyone_if_no_acl_found,
                rule: DecidingRule::NoAclOnResource,
            },
            (None, None) => Decision {
                allowed: false,
                rule: DecidingRule::NoMatchingAllow,
            },
        }
    }

    /// Whether the principal may do `operation` on at least one resource of the type,
    /// Kafka's `Authorizer.authorizeByResourceType` (its default, which StandardAuthorizer
    /// keeps). The broker uses it for KIP-679: an idempotent producer without
    /// IDEMPOTENT_WRITE on the cluster is allowed when it may WRITE to some topic.
    ///
    /// Kafka's steps, kept here: first an ordinary check on a LITERAL resource named
    /// `hardcode` (so super users, and `allow.everyone.if.no.acl.found` when no ACL applies
    /// to that name, are allowed); then, over the ACLs of the type whose principal (or
    /// `User:*`) and host match and whose operation is exactly `operation` or ALL (no implied
    /// operations here): a DENY on the LITERAL wildcard denies; an ALLOW on the wildcard
    /// allows; otherwise allowed when some LITERAL ALLOW has no LITERAL DENY of the same name
    /// and no PREFIXED DENY on a prefix of its name, or some PREFIXED ALLOW has no PREFIXED
    /// DENY on a prefix of its prefix.
    ///
    /// Errors, with Kafka's text, for a resource type or operation that is ANY or UNKNOWN.
    pub fn authorize_by_resource_type(
        &self,
        principal: &str,
        host: &str,
        operation: AclOperation,
        resource_type: ResourceType,
    ) -> Result<bool, AclError> {
        let bad = match (resource_type, operation) {
            (ResourceType::Any, _) => {
                Some("Must specify a non-filter resource type for authorizeByResourceType")
            }
            (ResourceType::Unknown, _) => Some("Unknown resource type"),
            (_, AclOperation::Any) => {
                Some("Must specify a non-filter operation type for authorizeByResourceType")
            }
            (_, AclOperation::Unknown) => Some("Unknown operation type"),
            _ => None,
        };
        if let Some(message) = bad {
            return Err(AclError::InvalidByResourceTypeArgument(message));
        }
        let probe = Action {
            principal,
            host,
            operation,
            resource_type,
            resource_name: "hardcode",
        };
        if self.authorize(&probe).allowed {
            return Ok(true);
        }

        let mut deny_literal: HashSet<&str> = HashSet::new();
        let mut deny_prefixed: HashSet<&str> = HashSet::new();
        let mut allow_literal: Vec<&str> = Vec::new();
        let mut allow_prefixed: Vec<&str> = Vec::new();
        let mut wildcard_allow = false;
        // Every key of the type starts with its code byte: [code] <= key < [code + 1].
        let type_byte = index_key(resource_type, "");
        let next_type: Option<[u8; 1]> = type_byte
            .first()
            .and_then(|b| b.checked_add(1))
            .map(|b| [b]);
        let upper = match &next_type {
            Some(next) => Bound::Excluded(next.as_slice()),
            None => Bound::Unbounded,
        };
        for slot in self
            .index
            .range::<[u8], _>((Bound::Included(type_byte.as_slice()), upper))
            .map(|(_, slot)| slot)
        {
            for bucket in [&slot.literal, &slot.prefixed] {
                for acl in bucket.for_principal(principal) {
                    let entry = &acl.binding.entry;
                    if !host_applies(&entry.host, host)
                        || (entry.operation != operation && entry.operation != AclOperation::All)
                    {
                        continue;
                    }
                    let name = acl.binding.pattern.name.as_str();
                    let literal = acl.binding.pattern.pattern_type == PatternType::Literal;
                    match (entry.permission_type, literal) {
                        (AclPermissionType::Deny, true) if name == WILDCARD => return Ok(false),
                        (AclPermissionType::Deny, true) => {
                            deny_literal.insert(name);
                        }
                        (AclPermissionType::Deny, false) => {
                            deny_prefixed.insert(name);
                        }
                        (AclPermissionType::Allow, true) if name == WILDCARD => {
                            wildcard_allow = true
                        }
                        (AclPermissionType::Allow, true) => allow_literal.push(name),
                        (AclPermissionType::Allow, false) => allow_prefixed.push(name),
                        _ => {}
                    }
                }
            }
        }
        if wildcard_allow {
            return Ok(true);
        }
        let dominated = |name: &str| {
            name.char_indices().any(|(at, c)| {
                name.get(..at + c.len_utf8())
                    .is_some_and(|prefix| deny_prefixed.contains(prefix))
            })
        };
        let literal_ok = allow_literal
            .iter()
            .any(|name| !deny_literal.contains(name) && !dominated(name));
        let prefixed_ok = allow_prefixed.iter().any(|name| !dominated(name));
        Ok(literal_ok || prefixed_ok)
    }

    /// The operations the principal may do on one resource, as the `authorized_operations`
    /// field of Metadata (topics, cluster), DescribeCluster and DescribeGroups carries them:
    /// bit `code` set for each allowed operation among those that apply to the type
    /// ([`ResourceType::supported_operations`]), each decided by [`authorize`](Self::authorize).
    /// (A client that did not ask for them gets Kafka's `i32::MIN` instead, the handler's
    /// business.)
    pub fn authorized_operations(
        &self,
        principal: &str,
        host: &str,
        resource_type: ResourceType,
        resource_name: &str,
    ) -> i32 {
        let mut bits = 0i32;
        for &operation in resource_type.supported_operations() {
            let action = Action {
                principal,
                host,
                operation,
                resource_type,
                resource_name,
            };
            if self.authorize(&action).allowed {
                bits |= 1i32 << operation.code();
            }
        }
        bits
    }
}

#[cfg(test)]
#[path = "authorizer_tests.rs"]
mod tests;
