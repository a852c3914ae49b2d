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

use std::path::{Path, PathBuf};
use std::sync::RwLock;

use kafka_auth::acl::{
    AccessControlEntry, AclAuthorizer, AclBinding, AclBindingFilter, AclError, AclId, AclOperation,
    AclPermissionType, Action, AuthorizerConfig, PatternType, ResourcePattern, ResourceType,
};
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
        }
    }

    /// The ACLs of data directory `dir` with the authorizer keys of `security`.
    pub fn open(dir: &Path, security: &SecurityConfig) -> Result<Self, BrokerError> {
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
        let path = dir.join(FILE);
        for record in crate::record_file::read(&path)? {
            if let MetadataRecord::AccessControlEntry(r) = record {
                let id = AclId(r.id.0);
                let binding = from_record(&r);
                authorizer
                    .add(id, binding)
                    .map_err(|e| cfg(format!("{}: {e}", path.display())))?;
            }
        }
        Ok(Self {
            enabled,
            path: Some(path),
            authorizer: RwLock::new(authorizer),
        })
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

    /// Adds bindings (already validated); each gets a new id. The file is written first.
    pub fn create(&self, bindings: Vec<AclBinding>) -> Result<(), BrokerError> {
        let mut authorizer = write(&self.authorizer);
        let mut next = authorizer.clone();
        for b in bindings {
            let id = AclId(crate::topics::random_uuid().0);
            next.add(id, b)
                .map_err(|e| BrokerError::Config(format!("adding an ACL: {e}")))?;
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

/// The error a refused binding is answered with.
pub fn refusal(e: &AclError) -> (i16, String) {
    (e.error_code(), e.to_string())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use kafka_auth::acl::{AccessControlEntryFilter, ResourcePatternFilter};

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
}
