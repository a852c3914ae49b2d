#![allow(clippy::unwrap_used)]

use kafka_auth::acl::{AclOperation, ResourceType};
use kafka_protocol::messages::alter_configs_request::AlterConfigsResource;
use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::create_topics_response::CreatableTopicConfigs;
use kafka_protocol::messages::incremental_alter_configs_request::AlterConfigsResource as IncResource;
use kafka_protocol::messages::{DescribeQuorumRequest, create_partitions_response};
use kafka_protocol::metadata::{MetadataRecord, PartitionRecord, TopicRecord};

use super::*;

/// Only what is listed is allowed (no implied operations).
struct Allowed(Vec<(ResourceType, &'static str, AclOperation)>);

impl Permits for Allowed {
    fn cluster(&self, op: AclOperation) -> bool {
        self.0
            .contains(&(ResourceType::Cluster, "kafka-cluster", op))
    }
    fn topic(&self, op: AclOperation, topic: &str) -> bool {
        self.0
            .iter()
            .any(|(r, n, o)| *r == ResourceType::Topic && *n == topic && *o == op)
    }
    fn group(&self, op: AclOperation, group: &str) -> bool {
        self.0
            .iter()
            .any(|(r, n, o)| *r == ResourceType::Group && *n == group && *o == op)
    }
    fn transactional_id(&self, _: AclOperation, _: &str) -> bool {
        false
    }
    fn operations(&self, _: ResourceType, _: &str) -> i32 {
        0
    }
}

const TOPIC_AUTH: i16 = ErrorCode::TOPIC_AUTHORIZATION_FAILED.0;

fn topic(name: &str) -> CreatableTopic {
    CreatableTopic {
        name: KStr::from(name.to_owned()),
        num_partitions: 1,
        replication_factor: 1,
        ..Default::default()
    }
}

fn id(n: u8) -> Uuid {
    Uuid([n; 16])
}

/// An image with topics `kept` (id 1) and `secret` (id 2).
fn image() -> MetadataImage {
    let mut image = MetadataImage::new();
    let mut records = Vec::new();
    for (name, n) in [("kept", 1), ("secret", 2)] {
        records.push(MetadataRecord::Topic(TopicRecord {
            name: KStr::from(name.to_owned()),
            topic_id: id(n),
            ..Default::default()
        }));
        records.push(MetadataRecord::Partition(PartitionRecord {
            partition_id: 0,
            topic_id: id(n),
            replicas: vec![1],
            isr: vec![1],
            leader: 1,
            ..Default::default()
        }));
    }
    image.apply_batch(1, &records).unwrap();
    image
}

fn forwarded(s: Screened) -> (RequestBody, Refused) {
    match s {
        Screened::Forward { body, refused } => (body, refused),
        Screened::Answer(a) => panic!("answered here: {a:?}"),
    }
}

#[test]
fn create_topics_forwards_only_the_allowed_and_merges_in_request_order() {
    let p = Allowed(vec![
        (ResourceType::Topic, "b", AclOperation::Create),
        (ResourceType::Topic, "b", AclOperation::DescribeConfigs),
        (ResourceType::Topic, "c", AclOperation::Create),
    ]);
    let req = CreateTopicsRequest {
        topics: vec![topic("a"), topic("b"), topic("c")],
        ..Default::default()
    };
    let (body, refused) = forwarded(screen(&p, &image(), RequestBody::CreateTopics(req), 7));
    let RequestBody::CreateTopics(sent) = &body else {
        panic!()
    };
    let names: Vec<&str> = sent.topics.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["b", "c"], "a is not forwarded");
    // The controller answers c before b, both created with their configs.
    let created = |name: &str| CreatableTopicResult {
        name: KStr::from(name.to_owned()),
        num_partitions: 1,
        replication_factor: 1,
        configs: Some(vec![CreatableTopicConfigs {
            name: KStr::from_static("cleanup.policy"),
            value: Some(KStr::from_static("delete")),
            ..Default::default()
        }]),
        ..Default::default()
    };
    let answer = ResponseBody::CreateTopics(CreateTopicsResponse {
        topics: vec![created("c"), created("b")],
        ..Default::default()
    });
    let ResponseBody::CreateTopics(merged) = merge(&p, refused, answer, 7) else {
        panic!()
    };
    let got: Vec<(&str, i16, i16, i32)> = merged
        .topics
        .iter()
        .map(|t| {
            (
                t.name.as_str(),
                t.error_code,
                t.topic_config_error_code,
                t.num_partitions,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("a", TOPIC_AUTH, 0, -1),
            ("b", 0, 0, 1),
            // Created, but c's configs are not for a caller without DESCRIBE_CONFIGS.
            ("c", 0, TOPIC_AUTH, -1),
        ]
    );
    assert_eq!(merged.topics[2].configs, Some(Vec::new()));
    assert_eq!(merged.topics[1].configs.as_ref().unwrap().len(), 1);
}

#[test]
fn cluster_create_allows_every_topic_and_an_all_refused_request_is_answered_here() {
    let p = Allowed(vec![(
        ResourceType::Cluster,
        "kafka-cluster",
        AclOperation::Create,
    )]);
    let req = CreateTopicsRequest {
        topics: vec![topic("a"), topic("b")],
        ..Default::default()
    };
    let (body, _) = forwarded(screen(
        &p,
        &image(),
        RequestBody::CreateTopics(req.clone()),
        7,
    ));
    let RequestBody::CreateTopics(sent) = body else {
        panic!()
    };
    assert_eq!(sent.topics.len(), 2);

    let nobody = Allowed(Vec::new());
    let Screened::Answer(ResponseBody::CreateTopics(r)) =
        screen(&nobody, &image(), RequestBody::CreateTopics(req), 7)
    else {
        panic!("nothing to forward")
    };
    assert_eq!(r.topics.len(), 2);
    assert!(r.topics.iter().all(|t| t.error_code == TOPIC_AUTH));
}

#[test]
fn delete_topics_by_name_and_id_follow_kafkas_rules() {
    // May describe and delete "kept"; may describe "secret" but not delete it; nothing on
    // "ghost" (unknown) but DESCRIBE.
    let p = Allowed(vec![
        (ResourceType::Topic, "kept", AclOperation::Describe),
        (ResourceType::Topic, "kept", AclOperation::Delete),
        (ResourceType::Topic, "secret", AclOperation::Describe),
        (ResourceType::Topic, "ghost", AclOperation::Describe),
    ]);
    let by_name = |n: &str| DeleteTopicState {
        name: Some(KStr::from(n.to_owned())),
        ..Default::default()
    };
    let by_id = |n: u8| DeleteTopicState {
        topic_id: id(n),
        ..Default::default()
    };
    let req = DeleteTopicsRequest {
        topics: vec![
            by_name("secret"),
            by_name("ghost"),
            by_name("hidden"),
            by_id(2),
            by_id(9),
            by_name("kept"),
        ],
        ..Default::default()
    };
    let (body, refused) = forwarded(screen(&p, &image(), RequestBody::DeleteTopics(req), 6));
    let RequestBody::DeleteTopics(sent) = body else {
        panic!()
    };
    assert_eq!(sent.topics.len(), 1);
    assert_eq!(sent.topics[0].name.as_deref(), Some("kept"));
    let answer = ResponseBody::DeleteTopics(DeleteTopicsResponse {
        responses: vec![DeletableTopicResult {
            name: Some(KStr::from_static("kept")),
            topic_id: id(1),
            ..Default::default()
        }],
        ..Default::default()
    });
    let ResponseBody::DeleteTopics(merged) = merge(&p, refused, answer, 6) else {
        panic!()
    };
    let got: Vec<(Option<&str>, i16)> = merged
        .responses
        .iter()
        .map(|t| (t.name.as_deref(), t.error_code))
        .collect();
    assert_eq!(
        got,
        [
            (Some("secret"), TOPIC_AUTH),
            (Some("ghost"), ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.0),
            (Some("hidden"), TOPIC_AUTH),
            // By id: "secret" may be described, so its name is told.
            (Some("secret"), TOPIC_AUTH),
            (None, ErrorCode::UNKNOWN_TOPIC_ID.0),
            (Some("kept"), 0),
        ]
    );

    // Without DESCRIBE the name of a topic refused by id is not told.
    let blind = Allowed(Vec::new());
    let req = DeleteTopicsRequest {
        topics: vec![by_id(2)],
        ..Default::default()
    };
    let Screened::Answer(ResponseBody::DeleteTopics(r)) =
        screen(&blind, &image(), RequestBody::DeleteTopics(req), 6)
    else {
        panic!()
    };
    assert_eq!(
        (r.responses[0].name.clone(), r.responses[0].error_code),
        (None, TOPIC_AUTH)
    );
}

#[test]
fn delete_topics_v5_by_names_and_cluster_delete() {
    let p = Allowed(vec![(
        ResourceType::Cluster,
        "kafka-cluster",
        AclOperation::Delete,
    )]);
    let req = DeleteTopicsRequest {
        topic_names: vec![KStr::from_static("secret"), KStr::from_static("x")],
        ..Default::default()
    };
    let (body, _) = forwarded(screen(
        &p,
        &image(),
        RequestBody::DeleteTopics(req.clone()),
        5,
    ));
    let RequestBody::DeleteTopics(sent) = body else {
        panic!()
    };
    assert_eq!(
        sent.topic_names.len(),
        2,
        "DELETE on the cluster allows every topic"
    );
    assert!(sent.topics.is_empty());

    let p = Allowed(vec![
        (ResourceType::Topic, "x", AclOperation::Describe),
        (ResourceType::Topic, "x", AclOperation::Delete),
    ]);
    let (body, _) = forwarded(screen(&p, &image(), RequestBody::DeleteTopics(req), 5));
    let RequestBody::DeleteTopics(sent) = body else {
        panic!()
    };
    assert_eq!(sent.topic_names, [KStr::from_static("x")]);
}

#[test]
fn create_partitions_needs_alter_on_each_topic() {
    let p = Allowed(vec![(ResourceType::Topic, "kept", AclOperation::Alter)]);
    let t = |n: &str| CreatePartitionsTopic {
        name: KStr::from(n.to_owned()),
        count: 3,
        ..Default::default()
    };
    let req = CreatePartitionsRequest {
        topics: vec![t("secret"), t("kept")],
        ..Default::default()
    };
    let (body, refused) = forwarded(screen(&p, &image(), RequestBody::CreatePartitions(req), 3));
    let RequestBody::CreatePartitions(sent) = body else {
        panic!()
    };
    assert_eq!(sent.topics.len(), 1);
    let answer = ResponseBody::CreatePartitions(CreatePartitionsResponse {
        results: vec![create_partitions_response::CreatePartitionsTopicResult {
            name: KStr::from_static("kept"),
            ..Default::default()
        }],
        ..Default::default()
    });
    let ResponseBody::CreatePartitions(r) = merge(&p, refused, answer, 3) else {
        panic!()
    };
    let got: Vec<(&str, i16)> = r
        .results
        .iter()
        .map(|t| (t.name.as_str(), t.error_code))
        .collect();
    assert_eq!(got, [("secret", TOPIC_AUTH), ("kept", 0)]);
}

#[test]
fn config_alterations_are_refused_per_resource_with_its_own_code() {
    let p = Allowed(vec![(
        ResourceType::Topic,
        "kept",
        AclOperation::AlterConfigs,
    )]);
    let res = |t: i8, n: &str| AlterConfigsResource {
        resource_type: t,
        resource_name: KStr::from(n.to_owned()),
        ..Default::default()
    };
    let req = AlterConfigsRequest {
        resources: vec![res(4, "1"), res(2, "kept"), res(32, "g"), res(2, "secret")],
        ..Default::default()
    };
    let (body, refused) = forwarded(screen(&p, &image(), RequestBody::AlterConfigs(req), 2));
    let RequestBody::AlterConfigs(sent) = body else {
        panic!()
    };
    assert_eq!(sent.resources.len(), 1);
    assert_eq!(sent.resources[0].resource_name, "kept");
    let answer = ResponseBody::AlterConfigs(AlterConfigsResponse {
        responses: vec![alter_configs_response::AlterConfigsResourceResponse {
            resource_type: 2,
            resource_name: KStr::from_static("kept"),
            ..Default::default()
        }],
        ..Default::default()
    });
    let ResponseBody::AlterConfigs(r) = merge(&p, refused, answer, 2) else {
        panic!()
    };
    let got: Vec<(i8, &str, i16)> = r
        .responses
        .iter()
        .map(|x| (x.resource_type, x.resource_name.as_str(), x.error_code))
        .collect();
    assert_eq!(
        got,
        [
            (4, "1", ErrorCode::CLUSTER_AUTHORIZATION_FAILED.0),
            (2, "kept", 0),
            (32, "g", ErrorCode::GROUP_AUTHORIZATION_FAILED.0),
            (2, "secret", TOPIC_AUTH),
        ]
    );

    let inc = IncrementalAlterConfigsRequest {
        resources: vec![IncResource {
            resource_type: 2,
            resource_name: KStr::from_static("secret"),
            ..Default::default()
        }],
        ..Default::default()
    };
    let Screened::Answer(ResponseBody::IncrementalAlterConfigs(r)) =
        screen(&p, &image(), RequestBody::IncrementalAlterConfigs(inc), 1)
    else {
        panic!("every resource refused: answered here")
    };
    assert_eq!(r.responses[0].error_code, TOPIC_AUTH);
}

#[test]
fn describe_quorum_needs_cluster_describe() {
    let body = || RequestBody::DescribeQuorum(DescribeQuorumRequest::default());
    let Screened::Answer(ResponseBody::DescribeQuorum(r)) =
        screen(&Allowed(Vec::new()), &image(), body(), 2)
    else {
        panic!()
    };
    assert_eq!(r.error_code, ErrorCode::CLUSTER_AUTHORIZATION_FAILED.0);
    let p = Allowed(vec![(
        ResourceType::Cluster,
        "kafka-cluster",
        AclOperation::Describe,
    )]);
    assert!(matches!(
        screen(&p, &image(), body(), 2),
        Screened::Forward { .. }
    ));
}
