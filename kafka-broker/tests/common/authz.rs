//! Shared pieces of the authorization tests (authz_data.rs, authz_admin.rs): error-code
//! names, ACLs with any pattern, requests with a time limit, topics made by the super user.

use std::time::Duration;

use kafka_auth::acl::{AclOperation, AclPermissionType, PatternType, ResourceType};
use kafka_net::Connection;
use kafka_protocol::KStr;
use kafka_protocol::Uuid;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::create_topics_response::CreatableTopicResult;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::metadata_response::MetadataResponseTopic;
use kafka_protocol::messages::{
    CreateTopicsRequest, MetadataRequest, MetadataResponse, RequestBody, ResponseBody,
};

use crate::secured::{Acl, connect_as};
pub(crate) const TOPIC_AUTH: ErrorCode = ErrorCode::TOPIC_AUTHORIZATION_FAILED;
pub(crate) const CLUSTER_AUTH: ErrorCode = ErrorCode::CLUSTER_AUTHORIZATION_FAILED;
pub(crate) const OK: ErrorCode = ErrorCode::NONE;
/// Config resource types (Kafka's `ConfigResource.Type`).
pub(crate) const TOPIC_RESOURCE: i8 = 2;
pub(crate) const BROKER_RESOURCE: i8 = 4;
pub(crate) const GROUP_RESOURCE: i8 = 32;
/// The `authorized_operations` bit of an operation.
pub(crate) fn bit(op: AclOperation) -> i32 {
    1 << op.code()
}

pub(crate) fn s(v: &str) -> KStr {
    KStr::from(v.to_owned())
}

/// An ACL on a resource with any pattern and permission.
pub(crate) fn acl<'a>(
    principal: &'a str,
    op: AclOperation,
    resource_type: ResourceType,
    name: &'a str,
    pattern: PatternType,
    permission: AclPermissionType,
) -> Acl<'a> {
    Acl {
        resource_type,
        name,
        pattern,
        principal,
        op,
        permission,
    }
}

pub(crate) async fn call(c: &Connection, body: RequestBody) -> ResponseBody {
    tokio::time::timeout(Duration::from_secs(20), c.request(body))
        .await
        .expect("answered in time")
        .expect("answered")
}

pub(crate) async fn call_at(c: &Connection, body: RequestBody, version: i16) -> ResponseBody {
    tokio::time::timeout(Duration::from_secs(20), c.request_at(body, version))
        .await
        .expect("answered in time")
        .expect("answered")
}

pub(crate) fn creatable(name: &str) -> CreatableTopic {
    CreatableTopic {
        name: s(name),
        num_partitions: 1,
        replication_factor: 1,
        ..Default::default()
    }
}

pub(crate) async fn create_topics(c: &Connection, names: &[&str]) -> Vec<CreatableTopicResult> {
    let body = call(
        c,
        RequestBody::CreateTopics(CreateTopicsRequest {
            topics: names.iter().map(|n| creatable(n)).collect(),
            timeout_ms: 10_000,
            ..Default::default()
        }),
    )
    .await;
    let ResponseBody::CreateTopics(r) = body else {
        panic!("CreateTopics answered {body:?}")
    };
    r.topics
}

/// Creates topics as the super user; each must be created.
pub(crate) async fn admin_topics(bootstrap: &str, names: &[&str]) {
    let admin = connect_as(bootstrap, "admin").await;
    for t in create_topics(&admin, names).await {
        assert_eq!(ErrorCode(t.error_code), OK, "creating {t:?}");
    }
}

pub(crate) async fn metadata(
    c: &Connection,
    topics: Option<&[&str]>,
    auto_create: bool,
    operations: bool,
    version: i16,
) -> MetadataResponse {
    let body = call_at(
        c,
        RequestBody::Metadata(MetadataRequest {
            topics: topics.map(|ts| {
                ts.iter()
                    .map(|t| MetadataRequestTopic {
                        name: Some(s(t)),
                        topic_id: Uuid::ZERO,
                        ..Default::default()
                    })
                    .collect()
            }),
            allow_auto_topic_creation: auto_create,
            include_cluster_authorized_operations: operations,
            include_topic_authorized_operations: operations,
            ..Default::default()
        }),
        version,
    )
    .await;
    let ResponseBody::Metadata(r) = body else {
        panic!("Metadata answered {body:?}")
    };
    r
}

pub(crate) fn names(topics: &[MetadataResponseTopic]) -> Vec<(String, ErrorCode)> {
    let mut out: Vec<_> = topics
        .iter()
        .map(|t| {
            (
                t.name.as_deref().unwrap_or("<null>").to_owned(),
                ErrorCode(t.error_code),
            )
        })
        .collect();
    out.sort();
    out
}

pub(crate) async fn topic_id(c: &Connection, name: &str) -> Uuid {
    let t = metadata(c, Some(&[name]), false, false, 12).await;
    assert_eq!(ErrorCode(t.topics[0].error_code), OK);
    t.topics[0].topic_id
}

pub(crate) fn errors(pairs: &[(&str, ErrorCode)]) -> Vec<(String, ErrorCode)> {
    pairs.iter().map(|(t, e)| ((*t).to_owned(), *e)).collect()
}
