//! ACLs, SCRAM credentials and client quotas in the image: apply, refusal with undo, snapshot.

use kafka_auth::acl::{
    AccessControlEntry, AclOperation, AclPermissionType, PatternType, ResourcePattern, ResourceType,
};
use kafka_protocol::metadata::client_quota_record::EntityData;
use kafka_protocol::metadata::{
    ClientQuotaRecord, RemoveAccessControlEntryRecord, RemoveUserScramCredentialRecord,
};

use super::*;

fn acl_record(n: u8, topic: &str, principal: &str, op: AclOperation) -> AccessControlEntryRecord {
    AccessControlEntryRecord {
        id: id(n),
        resource_type: ResourceType::Topic.code(),
        resource_name: KStr::from(topic.to_owned()),
        pattern_type: PatternType::Literal.code(),
        principal: KStr::from(principal.to_owned()),
        host: KStr::from_static("*"),
        operation: op.code(),
        permission_type: AclPermissionType::Allow.code(),
        ..Default::default()
    }
}

fn acl(n: u8, topic: &str, principal: &str, op: AclOperation) -> MetadataRecord {
    MetadataRecord::AccessControlEntry(acl_record(n, topic, principal, op))
}

fn remove_acl(n: u8) -> MetadataRecord {
    MetadataRecord::RemoveAccessControlEntry(RemoveAccessControlEntryRecord {
        id: id(n),
        ..Default::default()
    })
}

fn scram(user: &str, mechanism: i8, iterations: i32, salt: &[u8]) -> MetadataRecord {
    MetadataRecord::UserScramCredential(UserScramCredentialRecord {
        name: KStr::from(user.to_owned()),
        mechanism,
        salt: Bytes::copy_from_slice(salt),
        stored_key: Bytes::from_static(b"stored"),
        server_key: Bytes::from_static(b"server"),
        iterations,
        ..Default::default()
    })
}

fn remove_scram(user: &str, mechanism: i8) -> MetadataRecord {
    MetadataRecord::RemoveUserScramCredential(RemoveUserScramCredentialRecord {
        name: KStr::from(user.to_owned()),
        mechanism,
        ..Default::default()
    })
}

fn quota(user: Option<&str>, key: &str, value: Option<f64>) -> MetadataRecord {
    MetadataRecord::ClientQuota(ClientQuotaRecord {
        entity: vec![EntityData {
            entity_type: KStr::from_static("user"),
            entity_name: user.map(|u| KStr::from(u.to_owned())),
            ..Default::default()
        }],
        key: KStr::from(key.to_owned()),
        value: value.unwrap_or(0.0),
        remove: value.is_none(),
        ..Default::default()
    })
}

fn user_entity(user: &str) -> crate::quota::QuotaEntity {
    crate::quota::QuotaEntity::from_entries([("user", Some(user))]).unwrap()
}

#[test]
fn acls_are_added_and_removed_by_id() {
    let mut m = MetadataImage::new();
    m.apply_batch(
        1,
        &[
            acl(1, "orders", "User:alice", AclOperation::Write),
            acl(2, "orders", "User:bob", AclOperation::Read),
        ],
    )
    .unwrap();
    assert_eq!(m.acls().len(), 2);
    let binding = ResourcePattern {
        resource_type: ResourceType::Topic,
        name: "orders".into(),
        pattern_type: PatternType::Literal,
    };
    let alice = AclBinding {
        pattern: binding,
        entry: AccessControlEntry {
            principal: "User:alice".into(),
            host: "*".into(),
            operation: AclOperation::Write,
            permission_type: AclPermissionType::Allow,
        },
    };
    assert_eq!(m.acls().get(&id(1)), Some(&alice));
    assert_eq!(m.acl_id(&alice), Some(id(1)));
    m.apply_batch(2, &[remove_acl(1)]).unwrap();
    assert_eq!(m.acls().keys().copied().collect::<Vec<_>>(), [id(2)]);
    assert_eq!(m.acl_id(&alice), None, "the binding's index goes with it");
    // The same binding may come back under a new id.
    m.apply_batch(3, &[acl(3, "orders", "User:alice", AclOperation::Write)])
        .unwrap();
    assert_eq!(m.acl_id(&alice), Some(id(3)));
}

#[test]
fn impossible_acl_records_are_refused_and_the_batch_undone() {
    let mut base = MetadataImage::new();
    base.apply_batch(1, &[acl(1, "orders", "User:alice", AclOperation::Write)])
        .unwrap();
    let mut any_op = acl_record(5, "x", "User:bob", AclOperation::Read);
    any_op.operation = AclOperation::Any.code();
    let cases: Vec<(Vec<MetadataRecord>, &str)> = vec![
        // An id already held.
        (
            vec![acl(1, "other", "User:bob", AclOperation::Read)],
            "exists",
        ),
        // The same binding under another id.
        (
            vec![acl(2, "orders", "User:alice", AclOperation::Write)],
            "same binding",
        ),
        // A binding no CreateAcls could make.
        (vec![MetadataRecord::AccessControlEntry(any_op)], "ANY"),
        // Removing an id no ACL has, after a change the batch must take back.
        (
            vec![
                remove_acl(1),
                acl(4, "t", "User:carol", AclOperation::Read),
                remove_acl(9),
            ],
            "no ACL",
        ),
    ];
    for (batch, why) in cases {
        let mut m = base.clone();
        let e = m.apply_batch(2, &batch).unwrap_err();
        assert!(matches!(e, ImageError::Invalid { .. }), "{why}: {e}");
        assert!(
            e.to_string().to_lowercase().contains(&why.to_lowercase()),
            "{why}: {e}"
        );
        assert_eq!(m, base, "{why}: a refused batch changes nothing");
    }
}

#[test]
fn scram_credentials_are_set_replaced_and_removed() {
    let mut m = MetadataImage::new();
    m.apply_batch(
        1,
        &[
            scram("alice", 1, 4096, b"s1"),
            scram("alice", 2, 8192, b"s2"),
        ],
    )
    .unwrap();
    assert_eq!(m.scram_credentials().len(), 2);
    m.apply_batch(2, &[scram("alice", 1, 5000, b"s3")]).unwrap();
    let cred = &m.scram_credentials()[&(ScramMechanism::Sha256, "alice".to_owned())];
    assert_eq!((cred.iterations, cred.salt.as_slice()), (5000, &b"s3"[..]));
    m.apply_batch(3, &[remove_scram("alice", 2)]).unwrap();
    assert_eq!(m.scram_credentials().len(), 1);

    let base = m.clone();
    for (batch, why) in [
        (vec![remove_scram("alice", 2)], "no SHA-512 credential left"),
        (vec![scram("bob", 3, 4096, b"s")], "unknown mechanism"),
        (vec![scram("", 1, 4096, b"s")], "empty user"),
        (vec![scram("bob", 1, 0, b"s")], "no iterations"),
        (
            vec![
                scram("alice", 1, 9000, b"s9"),
                remove_scram("alice", 1),
                remove_scram("alice", 1),
            ],
            "removed twice",
        ),
    ] {
        let mut m2 = base.clone();
        assert!(m2.apply_batch(4, &batch).is_err(), "{why}");
        assert_eq!(m2, base, "{why}: a refused batch changes nothing");
    }
}

#[test]
fn client_quotas_are_set_and_removed_and_undone() {
    let mut m = MetadataImage::new();
    m.apply_batch(
        1,
        &[
            quota(Some("alice"), "producer_byte_rate", Some(1024.0)),
            quota(None, "consumer_byte_rate", Some(2048.0)),
        ],
    )
    .unwrap();
    let alice = user_entity("alice");
    let key = crate::quota::QuotaKey::parse("producer_byte_rate").unwrap();
    assert_eq!(m.quotas().value(&alice, key), Some(1024.0));
    let base = m.clone();
    // A change then a bad key: the change is taken back to the value before.
    let mut m2 = base.clone();
    let e = m2
        .apply_batch(
            2,
            &[
                quota(Some("alice"), "producer_byte_rate", Some(1.0)),
                quota(Some("alice"), "no_such_quota", Some(1.0)),
            ],
        )
        .unwrap_err();
    assert!(
        matches!(
            e,
            ImageError::Invalid {
                record: "ClientQuotaRecord",
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(m2, base);
    assert_eq!(m2.quotas().value(&alice, key), Some(1024.0));
    // A removal undone puts the value back too.
    let mut m3 = base.clone();
    m3.apply_batch(
        2,
        &[
            quota(Some("alice"), "producer_byte_rate", None),
            quota(Some("alice"), "bogus", None),
        ],
    )
    .unwrap_err();
    assert_eq!(m3, base);
    m.apply_batch(3, &[quota(Some("alice"), "producer_byte_rate", None)])
        .unwrap();
    assert_eq!(m.quotas().value(&alice, key), None);
    assert_eq!(m.quotas().changes().len(), 1, "the default user's stays");
}

#[test]
fn acls_credentials_and_quotas_survive_a_snapshot_through_kafka_bytes() {
    let mut m = MetadataImage::new();
    m.apply_batch(
        7,
        &[
            acl(1, "orders", "User:alice", AclOperation::Write),
            acl(2, "orders", "User:bob", AclOperation::Read),
            scram("alice", 2, 4096, b"salt"),
            quota(Some("alice"), "producer_byte_rate", Some(1024.0)),
            quota(None, "request_percentage", Some(50.0)),
        ],
    )
    .unwrap();
    m.apply_batch(8, &[remove_acl(2)]).unwrap();
    let records = m.to_records();
    let decoded: Vec<MetadataRecord> = records
        .iter()
        .map(|r| {
            let bytes = r.encode(r.versions().max).unwrap();
            MetadataRecord::decode(&bytes).unwrap().0
        })
        .collect();
    assert_eq!(decoded, records);
    let kinds: Vec<&str> = decoded.iter().map(MetadataRecord::name).collect();
    assert_eq!(
        kinds,
        [
            "AccessControlEntryRecord",
            "UserScramCredentialRecord",
            "ClientQuotaRecord",
            "ClientQuotaRecord"
        ]
    );
    let mut back = MetadataImage::new();
    back.apply_batch(m.offset(), &decoded).unwrap();
    assert_eq!(back, m);
    assert_eq!(back.acls().keys().copied().collect::<Vec<_>>(), [id(1)]);
}
