//! CreateAcls, DeleteAcls, AlterUserScramCredentials and AlterClientQuotas at the controller:
//! the single node's validation and codes, the records committed, nothing committed for what
//! changes nothing.

use bytes::Bytes;
use kafka_auth::acl::{AclOperation, AclPermissionType, PatternType, ResourceType};
use kafka_auth::sasl::{ScramCredential, ScramMechanism};
use kafka_protocol::messages::alter_client_quotas_request::{EntityData, EntryData, OpData};
use kafka_protocol::messages::alter_user_scram_credentials_request::{
    ScramCredentialDeletion, ScramCredentialUpsertion,
};
use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
use kafka_protocol::messages::{
    AlterClientQuotasRequest, AlterUserScramCredentialsRequest, CreateAclsRequest,
    DeleteAclsRequest,
};
use kafka_protocol::metadata::{RemoveAccessControlEntryRecord, RemoveUserScramCredentialRecord};

use super::*;

fn creation(
    resource_type: ResourceType,
    name: &str,
    principal: &str,
    op: AclOperation,
) -> AclCreation {
    AclCreation {
        resource_type: resource_type.code(),
        resource_name: KStr::from(name.to_owned()),
        resource_pattern_type: PatternType::Literal.code(),
        principal: KStr::from(principal.to_owned()),
        host: KStr::from_static("*"),
        operation: op.code(),
        permission_type: AclPermissionType::Allow.code(),
        ..Default::default()
    }
}

fn create_acls(h: &mut H, creations: Vec<AclCreation>) -> Vec<i16> {
    let req = CreateAclsRequest {
        creations,
        ..Default::default()
    };
    h.run(|c, image, _| c.create_acls(image, &req))
        .results
        .iter()
        .map(|r| r.error_code)
        .collect()
}

#[test]
fn created_acls_get_one_record_each_and_duplicates_none() {
    let mut h = H::new();
    let alice = creation(
        ResourceType::Topic,
        "orders",
        "User:alice",
        AclOperation::Write,
    );
    let codes = create_acls(
        &mut h,
        vec![
            alice.clone(),
            // A cluster resource must be named kafka-cluster.
            creation(
                ResourceType::Cluster,
                "other",
                "User:bob",
                AclOperation::Alter,
            ),
            // Asked twice in one request: one record.
            alice.clone(),
        ],
    );
    assert_eq!(codes, [0, ErrorCode::INVALID_REQUEST.0, 0]);
    assert_eq!(h.log.len(), 1);
    let [MetadataRecord::AccessControlEntry(r)] = h.last_batch() else {
        panic!("{:?}", h.last_batch())
    };
    assert_eq!(
        (r.id, r.resource_name.as_str(), r.principal.as_str()),
        (topic_id(1), "orders", "User:alice")
    );
    assert_eq!(h.image.acls().len(), 1);

    // Creating it again succeeds and commits nothing.
    let req = CreateAclsRequest {
        creations: vec![alice],
        ..Default::default()
    };
    let out = h.peek(|c, image, _| c.create_acls(image, &req));
    assert!(out.records.is_empty());
    assert_eq!(out.response.results[0].error_code, 0);
}

#[test]
fn deleted_acls_are_removed_once_and_listed_per_filter() {
    let mut h = H::new();
    create_acls(
        &mut h,
        vec![
            creation(
                ResourceType::Topic,
                "orders",
                "User:alice",
                AclOperation::Write,
            ),
            creation(
                ResourceType::Topic,
                "orders",
                "User:bob",
                AclOperation::Read,
            ),
            creation(ResourceType::Topic, "logs", "User:bob", AclOperation::Read),
        ],
    );
    let ids: Vec<Uuid> = h.image.acls().keys().copied().collect();
    let filter = |name: Option<&str>, principal: Option<&str>| DeleteAclsFilter {
        resource_type_filter: ResourceType::Topic.code(),
        resource_name_filter: name.map(|n| KStr::from(n.to_owned())),
        pattern_type_filter: PatternType::Literal.code(),
        principal_filter: principal.map(|p| KStr::from(p.to_owned())),
        host_filter: None,
        operation: AclOperation::Any.code(),
        permission_type: AclPermissionType::Any.code(),
        ..Default::default()
    };
    let req = DeleteAclsRequest {
        filters: vec![
            filter(Some("orders"), None),
            // bob's on orders again, and his on logs.
            filter(None, Some("User:bob")),
            // An unknown resource type is refused.
            DeleteAclsFilter {
                resource_type_filter: ResourceType::Unknown.code(),
                ..filter(None, None)
            },
        ],
        ..Default::default()
    };
    let r = h.run(|c, image, _| c.delete_acls(image, &req));
    let listed: Vec<(i16, usize)> = r
        .filter_results
        .iter()
        .map(|f| (f.error_code, f.matching_acls.len()))
        .collect();
    assert_eq!(listed, [(0, 2), (0, 2), (ErrorCode::INVALID_REQUEST.0, 0)]);
    let removed: Vec<Uuid> = h
        .last_batch()
        .iter()
        .map(|r| match r {
            MetadataRecord::RemoveAccessControlEntry(RemoveAccessControlEntryRecord {
                id, ..
            }) => *id,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(removed.len(), 3, "each ACL removed once");
    assert!(ids.iter().all(|id| removed.contains(id)));
    assert!(h.image.acls().is_empty());
}

fn upsertion(user: &str, mechanism: i8, iterations: i32) -> ScramCredentialUpsertion {
    ScramCredentialUpsertion {
        name: KStr::from(user.to_owned()),
        mechanism,
        iterations,
        salt: Bytes::from_static(b"NaCl"),
        salted_password: Bytes::from(vec![7u8; 32]),
        ..Default::default()
    }
}

fn deletion(user: &str, mechanism: i8) -> ScramCredentialDeletion {
    ScramCredentialDeletion {
        name: KStr::from(user.to_owned()),
        mechanism,
        ..Default::default()
    }
}

#[test]
fn scram_upsertions_and_deletions_become_records_with_kafkas_refusals() {
    let mut h = H::new();
    let req = AlterUserScramCredentialsRequest {
        deletions: vec![deletion("ghost", 1)],
        upsertions: vec![
            upsertion("alice", 1, 4096),
            upsertion("few", 1, 100),
            upsertion("odd", 9, 4096),
            upsertion("twice", 1, 4096),
            upsertion("twice", 2, 4096),
        ],
        ..Default::default()
    };
    let r = h.run(|c, image, _| c.alter_scram_credentials(image, &req));
    let got: Vec<(&str, i16)> = r
        .results
        .iter()
        .map(|x| (x.user.as_str(), x.error_code))
        .collect();
    assert_eq!(
        got,
        [
            ("alice", 0),
            ("ghost", ErrorCode::RESOURCE_NOT_FOUND.0),
            ("few", ErrorCode::UNACCEPTABLE_CREDENTIAL.0),
            ("odd", ErrorCode::UNSUPPORTED_SASL_MECHANISM.0),
            ("twice", ErrorCode::DUPLICATE_RESOURCE.0),
        ]
    );
    let [MetadataRecord::UserScramCredential(rec)] = h.last_batch() else {
        panic!("{:?}", h.last_batch())
    };
    let want =
        ScramCredential::from_salted_password(ScramMechanism::Sha256, &[7u8; 32], b"NaCl", 4096)
            .unwrap();
    assert_eq!(rec.name, "alice");
    assert_eq!(rec.stored_key.as_ref(), want.stored_key.as_slice());
    assert_eq!(rec.server_key.as_ref(), want.server_key.as_slice());
    assert_eq!((rec.salt.as_ref(), rec.iterations), (&b"NaCl"[..], 4096));
    assert_eq!(
        h.image
            .scram_credentials()
            .get(&(ScramMechanism::Sha256, "alice".to_owned())),
        Some(&want)
    );

    let req = AlterUserScramCredentialsRequest {
        deletions: vec![deletion("alice", 1)],
        ..Default::default()
    };
    let r = h.run(|c, image, _| c.alter_scram_credentials(image, &req));
    assert_eq!(r.results[0].error_code, 0);
    assert_eq!(
        h.last_batch(),
        &[MetadataRecord::RemoveUserScramCredential(
            RemoveUserScramCredentialRecord {
                name: KStr::from_static("alice"),
                mechanism: 1,
                ..Default::default()
            }
        )]
    );
    assert!(h.image.scram_credentials().is_empty());
}

fn quota_entry(user: &str, key: &str, value: Option<f64>) -> EntryData {
    EntryData {
        entity: vec![EntityData {
            entity_type: KStr::from_static("user"),
            entity_name: Some(KStr::from(user.to_owned())),
            ..Default::default()
        }],
        ops: vec![OpData {
            key: KStr::from(key.to_owned()),
            value: value.unwrap_or(0.0),
            remove: value.is_none(),
            ..Default::default()
        }],
        ..Default::default()
    }
}

#[test]
fn client_quotas_commit_only_what_changes() {
    let mut h = H::new();
    let alter = |entries: Vec<EntryData>, validate_only: bool| AlterClientQuotasRequest {
        entries,
        validate_only,
        ..Default::default()
    };
    // Validate only: answered, nothing committed.
    let req = alter(
        vec![quota_entry("alice", "producer_byte_rate", Some(1024.0))],
        true,
    );
    let out = h.peek(|c, image, _| c.alter_client_quotas(image, &req));
    assert!(out.records.is_empty());
    assert_eq!(out.response.entries[0].error_code, 0);

    let req = alter(
        vec![
            quota_entry("alice", "producer_byte_rate", Some(1024.0)),
            quota_entry("bob", "no_such_quota", Some(1.0)),
            quota_entry("carol", "consumer_byte_rate", Some(-1.0)),
        ],
        false,
    );
    let r = h.run(|c, image, _| c.alter_client_quotas(image, &req));
    let codes: Vec<i16> = r.entries.iter().map(|e| e.error_code).collect();
    assert_eq!(
        codes,
        [
            0,
            ErrorCode::INVALID_REQUEST.0,
            ErrorCode::INVALID_REQUEST.0
        ]
    );
    assert_eq!(r.entries[1].entity[0].entity_name.as_deref(), Some("bob"));
    let [MetadataRecord::ClientQuota(rec)] = h.last_batch() else {
        panic!("{:?}", h.last_batch())
    };
    assert_eq!(
        (rec.key.as_str(), rec.value, rec.remove),
        ("producer_byte_rate", 1024.0, false)
    );
    let batches = h.log.len();

    // The same value again: success, nothing to commit.
    let req = alter(
        vec![quota_entry("alice", "producer_byte_rate", Some(1024.0))],
        false,
    );
    let out = h.peek(|c, image, _| c.alter_client_quotas(image, &req));
    assert!(out.records.is_empty());
    assert_eq!(out.response.entries[0].error_code, 0);
    assert_eq!(h.log.len(), batches);

    let req = alter(
        vec![quota_entry("alice", "producer_byte_rate", None)],
        false,
    );
    h.run(|c, image, _| c.alter_client_quotas(image, &req));
    let [MetadataRecord::ClientQuota(rec)] = h.last_batch() else {
        panic!()
    };
    assert!(rec.remove);
    assert!(h.image.quotas().is_empty());
}
