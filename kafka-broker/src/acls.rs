//! The ACLs of a node and its authorizer (Kafka's StandardAuthorizer, from `kafka-auth`).
//!
//! Authorization is on when `authorizer.class.name` names Kafka's authorizer
//! (`org.apache.kafka.metadata.authorizer.StandardAuthorizer`, or the ZooKeeper-era
//! `kafka.security.authorizer.AclAuthorizer`), as in Kafka; without it every request is
//! allowed and CreateAcls / DescribeAcls / DeleteAcls answer SECURITY_DISABLED. `super.users`
//! and `allow.everyone.if.no.acl.found` are read at start.
//!
//! The bindings are AccessControlEntryRecords (each with its id) in `acls.records` in the data
//! directory ([`crate::record_file`]), written before a change takes effect and read back at
//! start.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::RwLock;
use std::sync::atomic::{AtomicU64, Ordering};

use kafka_auth::acl::{
    AccessControlEntry, AccessControlEntryFilter, AclAuthorizer, AclBinding, AclBindingFilter,
    AclError, AclId, AclOperation, AclPermissionType, Action, AuthorizerConfig, PatternType,
    ResourcePattern, ResourcePatternFilter, ResourceType,
};
use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
use kafka_protocol::messages::delete_acls_response::DeleteAclsMatchingAcl;
use kafka_protocol::metadata::{AccessControlEntryRecord, MetadataRecord};
use kafka_protocol::{KStr, Uuid};

use crate::config::SecurityConfig;
use crate::error::BrokerError;
use crate::sync::{read, write};

/// The file of a node's ACLs.
pub const FILE: &str = "acls.records";

/// The authorizer class names that turn authorization on.
pub const AUTHORIZER_CLASSES: [&str; 2] = [
    "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "kafka.security.authorizer.AclAuthorizer",
];

/// A node's ACLs.
#[derive(Debug)]
pub struct Acls {
    enabled: bool,
    path: Option<PathBuf>,
    authorizer: RwLock<AclAuthorizer>,
    /// In a cluster: the offset of the metadata image the ACLs were last taken from.
    image_offset: AtomicU64,
}

/// What one principal asks to do, for [`Acls::allowed`].
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub principal: &'a str,
    pub host: &'a str,
}

impl Acls {
    /// No authorization (everything allowed), nothing stored: tests and callers in process.
    pub fn disabled() -> Self {
        Self {
            enabled: false,
            path: None,
            authorizer: RwLock::new(AclAuthorizer::new(AuthorizerConfig::default())),
            image_offset: AtomicU64::new(0),
        }
    }

    /// The ACLs of data directory `dir` with the authorizer keys of `security`.
    pub fn open(dir: &Path, security: &SecurityConfig) -> Result<Self, BrokerError> {
        Self::with(Some(dir), security)
    }

    /// The ACLs of a node of a cluster: none until the metadata image brings them
    /// ([`Self::follow_image`]); no file is read or written (the metadata log keeps them).
    pub fn clustered(security: &SecurityConfig) -> Result<Self, BrokerError> {
        Self::with(None, security)
    }

    fn with(dir: Option<&Path>, security: &SecurityConfig) -> Result<Self, BrokerError> {
        let cfg = |m: String| BrokerError::Config(m);
        let enabled = match security.get("authorizer.class.name").map(str::trim) {
            None | Some("") => false,
            Some(c) if AUTHORIZER_CLASSES.contains(&c) => true,
            Some(other) => {
                return Err(cfg(format!(
                    "authorizer.class.name: {other} is not available (use {})",
                    AUTHORIZER_CLASSES[0]
                )));
            }
        };
        let super_users = match security.get("super.users") {
            Some(v) => AuthorizerConfig::parse_super_users(v)
                .map_err(|e| cfg(format!("super.users: {e}")))?,
            None => Vec::new(),
        };
        let allow_everyone_if_no_acl_found = security
            .get("allow.everyone.if.no.acl.found")
            .is_some_and(AuthorizerConfig::parse_allow_everyone);
        let mut authorizer = AclAuthorizer::new(AuthorizerConfig {
            super_users,
            allow_everyone_if_no_acl_found,
        });
        let path = dir.map(|d| d.join(FILE));
        if let Some(path) = &path {
            for record in crate::record_file::read(path)? {
                if let MetadataRecord::AccessControlEntry(r) = record {
                    let id = AclId(r.id.0);
                    let binding = from_record(&r);
                    authorizer
                        .add(id, binding)
                        .map_err(|e| cfg(format!("{}: {e}", path.display())))?;
                }
            }
        }
        Ok(Self {
            enabled,
            path,
            authorizer: RwLock::new(authorizer),
            image_offset: AtomicU64::new(0),
        })
    }

    /// Takes the ACLs of the metadata image at `offset` (a node of a cluster): afterwards the
    /// authorizer holds exactly `acls`, under their ids. An image older than the last one
    /// taken changes nothing (two callers may race: the publisher and a forwarded request's
    /// catch-up).
    pub fn follow_image(&self, offset: u64, acls: &BTreeMap<Uuid, AclBinding>) {
        let mut authorizer = write(&self.authorizer);
        if self.image_offset.load(Ordering::Acquire) > offset {
            return;
        }
        self.image_offset.store(offset, Ordering::Release);
        let held: Vec<AclId> = authorizer
            .bindings(&AclBindingFilter::any())
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        for id in held {
            if !acls.contains_key(&Uuid(id.0)) {
                authorizer.remove(&id);
            }
        }
        for (id, binding) in acls {
            let id = AclId(id.0);
            if authorizer.get(&id).is_some() {
                continue;
            }
            if let Err(e) = authorizer.add(id, binding.clone()) {
                tracing::error!(error = %e, "an ACL of the metadata image was not taken");
            }
        }
    }

    /// Whether authorization is on (`authorizer.class.name`).
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Whether `who` may do `operation` on a resource (always when authorization is off).
    pub fn allowed(
        &self,
        who: Request<'_>,
        operation: AclOperation,
        resource_type: ResourceType,
        resource_name: &str,
    ) -> bool {
        if !self.enabled {
            return true;
        }
        let authorizer = read(&self.authorizer);
        let decision = authorizer.authorize(&Action {
            principal: who.principal,
            host: who.host,
            operation,
            resource_type,
            resource_name,
        });
        if !decision.allowed {
            // Kafka's authorizer logger line (denials at INFO).
            tracing::info!(target: "kafka.authorizer.logger",
                "Principal = {} is Denied operation = {} from host = {} on resource = {}:LITERAL:{} for request ({})",
                who.principal, operation, who.host, resource_type.pascal_name(), resource_name, decision);
        }
        decision.allowed
    }

    /// Kafka's `authorizeByResourceType`: whether `who` may do `operation` on some resource of
    /// the type (KIP-679: an idempotent producer that may write to some topic).
    pub fn allowed_on_any(
        &self,
        who: Request<'_>,
        operation: AclOperation,
        resource_type: ResourceType,
    ) -> bool {
        if !self.enabled {
            return true;
        }
        read(&self.authorizer)
            .authorize_by_resource_type(who.principal, who.host, operation, resource_type)
            .unwrap_or(false)
    }

    /// The `authorized_operations` bits of a resource for `who` (every operation the type
    /// supports when authorization is off).
    pub fn authorized_operations(
        &self,
        who: Request<'_>,
        resource_type: ResourceType,
        resource_name: &str,
    ) -> i32 {
        if !self.enabled {
            return resource_type
                .supported_operations()
                .iter()
                .fold(0, |bits, op| bits | (1 << op.code()));
        }
        read(&self.authorizer).authorized_operations(
            who.principal,
            who.host,
            resource_type,
            resource_name,
        )
    }

    /// Adds bindings (already validated); each gets a new id, one already held is skipped.
    /// The file is written first.
    pub fn create(&self, bindings: Vec<AclBinding>) -> Result<(), BrokerError> {
        let mut authorizer = write(&self.authorizer);
        let mut next = authorizer.clone();
        for b in bindings {
            let id = AclId(crate::topics::random_uuid().0);
            match next.add(id, b) {
                // Creating an ACL that exists succeeds and changes nothing, as in Kafka.
                Ok(()) | Err(AclError::DuplicateAcl { .. }) => {}
                Err(e) => return Err(BrokerError::Config(format!("adding an ACL: {e}"))),
            }
        }
        self.save(&next)?;
        *authorizer = next;
        Ok(())
    }

    /// The bindings matching `filter`.
    pub fn describe(&self, filter: &AclBindingFilter) -> Vec<AclBinding> {
        read(&self.authorizer)
            .bindings(filter)
            .into_iter()
            .map(|(_, b)| b.clone())
            .collect()
    }

    /// Removes the bindings matching each filter; per filter, those removed.
    pub fn delete(
        &self,
        filters: &[AclBindingFilter],
    ) -> Result<Vec<Vec<AclBinding>>, BrokerError> {
        let mut authorizer = write(&self.authorizer);
        let mut next = authorizer.clone();
        let mut out = Vec::with_capacity(filters.len());
        for f in filters {
            let ids: Vec<AclId> = next.bindings(f).into_iter().map(|(id, _)| id).collect();
            let removed = ids.iter().filter_map(|id| next.remove(id)).collect();
            out.push(removed);
        }
        self.save(&next)?;
        *authorizer = next;
        Ok(out)
    }

    fn save(&self, authorizer: &AclAuthorizer) -> Result<(), BrokerError> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let records: Vec<MetadataRecord> = authorizer
            .bindings(&AclBindingFilter::any())
            .into_iter()
            .map(|(id, b)| MetadataRecord::AccessControlEntry(to_record(Uuid(id.0), b)))
            .collect();
        crate::record_file::write(path, &records)
    }
}

/// The `AccessControlEntryRecord` of an ACL (the file's records, the metadata log's).
pub(crate) fn to_record(id: Uuid, b: &AclBinding) -> AccessControlEntryRecord {
    AccessControlEntryRecord {
        id,
        resource_type: b.pattern.resource_type.code(),
        resource_name: KStr::from(b.pattern.name.clone()),
        pattern_type: b.pattern.pattern_type.code(),
        principal: KStr::from(b.entry.principal.clone()),
        host: KStr::from(b.entry.host.clone()),
        operation: b.entry.operation.code(),
        permission_type: b.entry.permission_type.code(),
        ..Default::default()
    }
}

/// The binding an `AccessControlEntryRecord` holds.
pub(crate) fn from_record(r: &AccessControlEntryRecord) -> AclBinding {
    AclBinding {
        pattern: ResourcePattern {
            resource_type: ResourceType::from_code(r.resource_type),
            name: r.resource_name.to_string(),
            pattern_type: PatternType::from_code(r.pattern_type),
        },
        entry: AccessControlEntry {
            principal: r.principal.to_string(),
            host: r.host.to_string(),
            operation: AclOperation::from_code(r.operation),
            permission_type: AclPermissionType::from_code(r.permission_type),
        },
    }
}

/// The binding a CreateAcls creation asks for (codes taken as they come: validate it with
/// [`validate_new_binding`]).
pub fn creation_binding(c: &AclCreation) -> AclBinding {
    AclBinding {
        pattern: ResourcePattern {
            resource_type: ResourceType::from_code(c.resource_type),
            name: c.resource_name.to_string(),
            pattern_type: PatternType::from_code(c.resource_pattern_type),
        },
        entry: AccessControlEntry {
            principal: c.principal.to_string(),
            host: c.host.to_string(),
            operation: AclOperation::from_code(c.operation),
            permission_type: AclPermissionType::from_code(c.permission_type),
        },
    }
}

/// The filter of a DescribeAcls request or a DeleteAcls filter, from its fields (validate it
/// with [`kafka_auth::acl::validate_filter`]).
#[allow(clippy::too_many_arguments)]
pub fn request_filter(
    resource_type: i8,
    name: Option<&KStr>,
    pattern_type: i8,
    principal: Option<&KStr>,
    host: Option<&KStr>,
    operation: i8,
    permission_type: i8,
) -> AclBindingFilter {
    AclBindingFilter {
        pattern: ResourcePatternFilter {
            resource_type: ResourceType::from_code(resource_type),
            name: name.map(ToString::to_string),
            pattern_type: PatternType::from_code(pattern_type),
        },
        entry: AccessControlEntryFilter {
            principal: principal.map(ToString::to_string),
            host: host.map(ToString::to_string),
            operation: AclOperation::from_code(operation),
            permission_type: AclPermissionType::from_code(permission_type),
        },
    }
}

/// The filter of one DeleteAcls filter.
pub fn delete_filter(f: &DeleteAclsFilter) -> AclBindingFilter {
    request_filter(
        f.resource_type_filter,
        f.resource_name_filter.as_ref(),
        f.pattern_type_filter,
        f.principal_filter.as_ref(),
        f.host_filter.as_ref(),
        f.operation,
        f.permission_type,
    )
}

/// How DeleteAcls answers a binding it removed.
pub fn matching_acl(b: &AclBinding) -> DeleteAclsMatchingAcl {
    DeleteAclsMatchingAcl {
        resource_type: b.pattern.resource_type.code(),
        resource_name: KStr::from(b.pattern.name.clone()),
        pattern_type: b.pattern.pattern_type.code(),
        principal: KStr::from(b.entry.principal.clone()),
        host: KStr::from(b.entry.host.clone()),
        operation: b.entry.operation.code(),
        permission_type: b.entry.permission_type.code(),
        ..Default::default()
    }
}

/// The error a refused binding is answered with.
pub fn refusal(e: &AclError) -> (i16, String) {
    (e.error_code(), e.to_string())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn binding(name: &str, principal: &str, op: AclOperation) -> AclBinding {
        AclBinding {
            pattern: ResourcePattern {
                resource_type: ResourceType::Topic,
                name: name.into(),
                pattern_type: PatternType::Literal,
            },
            entry: AccessControlEntry {
                principal: principal.into(),
                host: "*".into(),
                operation: op,
                permission_type: AclPermissionType::Allow,
            },
        }
    }

    #[test]
    fn created_acls_are_described_deleted_and_reloaded() {
        let dir = tempfile::tempdir().unwrap();
        let mut sec = SecurityConfig::default();
        sec.set("authorizer.class.name", AUTHORIZER_CLASSES[0])
            .unwrap();
        let acls = Acls::open(dir.path(), &sec).unwrap();
        acls.create(vec![
            binding("orders", "User:alice", AclOperation::Write),
            binding("logs", "User:bob", AclOperation::Read),
        ])
        .unwrap();
        let any = AclBindingFilter {
            pattern: ResourcePatternFilter {
                resource_type: ResourceType::Any,
                name: None,
                pattern_type: PatternType::Any,
            },
            entry: AccessControlEntryFilter {
                principal: None,
                host: None,
                operation: AclOperation::Any,
                permission_type: AclPermissionType::Any,
            },
        };
        assert_eq!(acls.describe(&any).len(), 2);
        let who = Request {
            principal: "User:alice",
            host: "127.0.0.1",
        };
        assert!(acls.allowed(who, AclOperation::Write, ResourceType::Topic, "orders"));
        assert!(acls.allowed(who, AclOperation::Describe, ResourceType::Topic, "orders"));
        assert!(!acls.allowed(who, AclOperation::Read, ResourceType::Topic, "logs"));
        let again = Acls::open(dir.path(), &sec).unwrap();
        assert_eq!(again.describe(&any).len(), 2);
        let removed = again
            .delete(&[AclBindingFilter {
                pattern: ResourcePatternFilter {
                    resource_type: ResourceType::Topic,
                    name: Some("logs".into()),
                    pattern_type: PatternType::Literal,
                },
                ..any.clone()
            }])
            .unwrap();
        assert_eq!(removed[0].len(), 1);
        assert_eq!(
            Acls::open(dir.path(), &sec).unwrap().describe(&any).len(),
            1
        );
    }

    #[test]
    fn a_clustered_node_follows_the_image_and_ignores_older_ones() {
        let mut sec = SecurityConfig::default();
        sec.set("authorizer.class.name", AUTHORIZER_CLASSES[0])
            .unwrap();
        let acls = Acls::clustered(&sec).unwrap();
        let who = Request {
            principal: "User:alice",
            host: "127.0.0.1",
        };
        let write = binding("orders", "User:alice", AclOperation::Write);
        let read = binding("logs", "User:alice", AclOperation::Read);
        let id = |n: u8| Uuid([n; 16]);
        let image = |list: &[(u8, &AclBinding)]| -> BTreeMap<Uuid, AclBinding> {
            list.iter().map(|(n, b)| (id(*n), (*b).clone())).collect()
        };
        acls.follow_image(5, &image(&[(1, &write), (2, &read)]));
        assert!(acls.allowed(who, AclOperation::Write, ResourceType::Topic, "orders"));
        assert!(acls.allowed(who, AclOperation::Read, ResourceType::Topic, "logs"));
        acls.follow_image(6, &image(&[(2, &read)]));
        assert!(!acls.allowed(who, AclOperation::Write, ResourceType::Topic, "orders"));
        // An older image (a late publisher) changes nothing.
        acls.follow_image(5, &image(&[(1, &write), (2, &read)]));
        assert!(!acls.allowed(who, AclOperation::Write, ResourceType::Topic, "orders"));
        assert_eq!(acls.describe(&AclBindingFilter::any()), vec![read]);
    }

    #[test]
    fn creating_an_acl_that_exists_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let mut sec = SecurityConfig::default();
        sec.set("authorizer.class.name", AUTHORIZER_CLASSES[0])
            .unwrap();
        let acls = Acls::open(dir.path(), &sec).unwrap();
        let write = binding("orders", "User:alice", AclOperation::Write);
        acls.create(vec![write.clone()]).unwrap();
        acls.create(vec![write.clone(), write.clone()]).unwrap();
        assert_eq!(acls.describe(&AclBindingFilter::any()), vec![write]);
    }
}
