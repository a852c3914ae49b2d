//! CreateTopics, CreatePartitions, DeleteTopics.

use std::collections::BTreeSet;

use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::create_partitions_request::{
    CreatePartitionsAssignment, CreatePartitionsTopic,
};
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::{
    CreatePartitionsRequest, CreatePartitionsResponse, DeleteTopicsRequest, DeleteTopicsResponse,
};
use kafka_protocol::metadata::MetadataRecord;

use super::*;
use crate::cluster::image::RESOURCE_TOPIC;

#[test]
fn a_created_topic_is_its_topic_config_and_partition_records() {
    let mut h = H::new();
    h.brokers(&[1, 2, 3]);
    let req = with_config(create_req("orders", 3, 2), "retention.ms", "60000");
    let r = h.create(&req, 0);
    assert_eq!(r[0].error_code, 0, "{:?}", r[0].error_message);
    assert_eq!(r[0].topic_id, topic_id(1));
    assert_eq!((r[0].num_partitions, r[0].replication_factor), (3, 2));
    let configs = r[0].configs.as_ref().unwrap();
    let retention = configs
        .iter()
        .find(|c| c.name.as_str() == "retention.ms")
        .unwrap();
    assert_eq!(retention.value.as_ref().unwrap().as_str(), "60000");
    let batch = h.last_batch();
    assert!(
        matches!(&batch[0], MetadataRecord::Topic(t) if t.name.as_str() == "orders" && t.topic_id == topic_id(1))
    );
    assert!(
        matches!(&batch[1], MetadataRecord::Config(c) if c.resource_type == RESOURCE_TOPIC && c.name.as_str() == "retention.ms")
    );
    assert_eq!(
        batch
            .iter()
            .filter(|r| matches!(r, MetadataRecord::Partition(_)))
            .count(),
        3
    );
    let t = h.image.topic("orders").unwrap();
    assert_eq!(t.id, topic_id(1));
    assert_eq!(t.partitions.len(), 3);
    assert_eq!(h.image.topic_by_id(&topic_id(1)).unwrap().name, "orders");
    assert_eq!(
        h.image.config(RESOURCE_TOPIC, "orders", "retention.ms"),
        Some("60000")
    );
}

#[test]
fn the_response_shape_follows_the_version() {
    let mut h = H::new();
    h.brokers(&[1]);
    let out = h.peek(|c, image, _| c.create_topics(image, &create_req("a", 1, 1), 4, 0));
    let t = &out.response.topics[0];
    assert_eq!(
        (t.error_code, t.topic_id.is_zero(), t.configs.is_none()),
        (0, true, true)
    );
    let out = h.peek(|c, image, _| c.create_topics(image, &create_req("b", 1, 1), 6, 0));
    let t = &out.response.topics[0];
    assert!(t.topic_id.is_zero() && t.configs.is_some());
}

#[test]
fn validate_only_checks_and_writes_nothing() {
    let mut h = H::new();
    h.brokers(&[1, 2]);
    let mut req = create_req("t", 4, 2);
    req.validate_only = true;
    let out = h.peek(|c, image, _| c.create_topics(image, &req, 7, 0));
    assert_eq!(out.response.topics[0].error_code, 0);
    assert_eq!(out.response.topics[0].num_partitions, 4);
    assert!(out.records.is_empty());
    req.topics[0].replication_factor = 3;
    let out = h.peek(|c, image, _| c.create_topics(image, &req, 7, 0));
    assert_eq!(
        code(out.response.topics[0].error_code),
        ErrorCode::INVALID_REPLICATION_FACTOR
    );
}

#[test]
fn defaults_apply_and_bad_counts_are_refused() {
    let mut cfg = config();
    cfg.default_num_partitions = 4;
    cfg.default_replication_factor = 2;
    let mut h = H::with(cfg);
    h.brokers(&[1, 2, 3]);
    h.topic("d", -1, -1);
    let t = h.image.topic("d").unwrap();
    assert_eq!(t.partitions.len(), 4);
    assert!(t.partitions.values().all(|p| p.replicas.len() == 2));
    for (req, expected) in [
        (create_req("x", 0, 1), ErrorCode::INVALID_PARTITIONS),
        (create_req("x", -5, 1), ErrorCode::INVALID_PARTITIONS),
        (create_req("x", 1, 0), ErrorCode::INVALID_REPLICATION_FACTOR),
        (
            create_req("x", 1, -2),
            ErrorCode::INVALID_REPLICATION_FACTOR,
        ),
        (create_req("d", 1, 1), ErrorCode::TOPIC_ALREADY_EXISTS),
        (
            create_req("has space", 1, 1),
            ErrorCode::INVALID_TOPIC_EXCEPTION,
        ),
        (create_req("d.x", 1, 1), ErrorCode::NONE),
        (
            with_config(create_req("x", 1, 1), "retention.ms", "soon"),
            ErrorCode::INVALID_CONFIG,
        ),
        (
            with_config(create_req("x", 1, 1), "no.such.key", "1"),
            ErrorCode::INVALID_CONFIG,
        ),
    ] {
        let out = h.peek(|c, image, _| c.create_topics(image, &req, 7, 0));
        let t = &out.response.topics[0];
        assert_eq!(
            code(t.error_code),
            expected,
            "{}: {:?}",
            req.topics[0].name,
            t.error_message
        );
        if expected != ErrorCode::NONE {
            assert!(out.records.is_empty());
            assert!(t.error_message.is_some());
            assert_eq!((t.num_partitions, t.replication_factor), (-1, -1));
        }
    }
    // The invalid config's message names the key.
    let out = h.peek(|c, image, _| {
        c.create_topics(
            image,
            &with_config(create_req("x", 1, 1), "retention.ms", "soon"),
            7,
            0,
        )
    });
    assert!(
        out.response.topics[0]
            .error_message
            .as_ref()
            .unwrap()
            .contains("retention.ms")
    );
}

#[test]
fn names_that_collide_or_repeat_are_refused() {
    let mut h = H::new();
    h.brokers(&[1]);
    h.topic("a.b", 1, 1);
    let out = h.peek(|c, image, _| c.create_topics(image, &create_req("a_b", 1, 1), 7, 0));
    assert_eq!(
        code(out.response.topics[0].error_code),
        ErrorCode::INVALID_TOPIC_EXCEPTION
    );
    let mut twice = create_req("x", 1, 1);
    twice.topics.push(twice.topics[0].clone());
    twice.topics.push(create_req("y", 1, 1).topics[0].clone());
    let out = h.peek(|c, image, _| c.create_topics(image, &twice, 7, 0));
    let codes: Vec<ErrorCode> = out
        .response
        .topics
        .iter()
        .map(|t| code(t.error_code))
        .collect();
    assert_eq!(
        codes,
        vec![
            ErrorCode::INVALID_REQUEST,
            ErrorCode::INVALID_REQUEST,
            ErrorCode::NONE
        ]
    );
    // Only y is created.
    h.commit(out.records);
    assert!(h.image.topic("x").is_none());
    assert!(h.image.topic("y").is_some());
}

#[test]
fn topics_of_one_request_get_their_own_ids_and_rotate_leaders() {
    let mut h = H::new();
    h.brokers(&[1, 2, 3]);
    let mut req = create_req("a", 1, 1);
    req.topics.push(create_req("b", 1, 1).topics[0].clone());
    req.topics.push(create_req("c", 1, 1).topics[0].clone());
    let r = h.create(&req, 0);
    let ids: BTreeSet<Uuid> = r.iter().map(|t| t.topic_id).collect();
    assert_eq!(ids.len(), 3);
    let leaders: BTreeSet<i32> = ["a", "b", "c"]
        .iter()
        .map(|t| h.partition(t, 0).leader)
        .collect();
    assert_eq!(leaders, BTreeSet::from([1, 2, 3]));
}

#[test]
fn no_broker_gets_more_than_max_partitions_replicas() {
    let mut cfg = config();
    cfg.broker.topics.max_partitions = 10;
    let mut h = H::with(cfg);
    h.brokers(&[1, 2]);
    h.topic("a", 8, 2);
    let out = h.peek(|c, image, _| c.create_topics(image, &create_req("b", 3, 2), 7, 0));
    assert_eq!(
        code(out.response.topics[0].error_code),
        ErrorCode::INVALID_PARTITIONS
    );
    // A huge count is refused before anything is placed.
    let out = h.peek(|c, image, _| c.create_topics(image, &create_req("c", i32::MAX, 2), 7, 0));
    assert_eq!(
        code(out.response.topics[0].error_code),
        ErrorCode::INVALID_PARTITIONS
    );
    h.topic("b", 2, 2);
}

fn delete_by_name(h: &mut H, names: &[&str], version: i16) -> DeleteTopicsResponse {
    let req = DeleteTopicsRequest {
        topic_names: names.iter().map(|n| KStr::from((*n).to_owned())).collect(),
        ..Default::default()
    };
    h.run(|c, image, _| c.delete_topics(image, &req, version))
}

#[test]
fn topics_are_deleted_by_name_or_id_with_their_configs() {
    let mut h = H::new();
    h.brokers(&[1]);
    h.create(
        &with_config(create_req("a", 1, 1), "retention.ms", "1000"),
        0,
    );
    h.topic("b", 1, 1);
    let r = delete_by_name(&mut h, &["a", "nope"], 5);
    assert_eq!(r.responses[0].error_code, 0);
    assert_eq!(
        code(r.responses[1].error_code),
        ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
    );
    assert!(r.responses[1].error_message.is_some());
    assert!(h.image.topic("a").is_none());
    assert!(h.image.configs(RESOURCE_TOPIC, "a").is_none());
    let b = h.image.topic("b").unwrap().id;
    let req = DeleteTopicsRequest {
        topics: vec![
            DeleteTopicState {
                name: None,
                topic_id: b,
                ..Default::default()
            },
            DeleteTopicState {
                name: None,
                topic_id: topic_id(99),
                ..Default::default()
            },
            DeleteTopicState {
                name: Some(KStr::from("b")),
                topic_id: b,
                ..Default::default()
            },
        ],
        ..Default::default()
    };
    let r = h.run(|c, image, _| c.delete_topics(image, &req, 6));
    let codes: Vec<ErrorCode> = r.responses.iter().map(|t| code(t.error_code)).collect();
    assert_eq!(
        codes,
        vec![
            ErrorCode::NONE,
            ErrorCode::UNKNOWN_TOPIC_ID,
            ErrorCode::INVALID_REQUEST
        ]
    );
    assert_eq!(r.responses[0].name.as_ref().unwrap().as_str(), "b");
    assert_eq!(r.responses[0].topic_id, b);
    assert!(h.image.topic("b").is_none());
    // A new topic of the same name is a new topic.
    h.topic("a", 1, 1);
    assert!(h.image.configs(RESOURCE_TOPIC, "a").is_none());
}

#[test]
fn internal_topics_and_disabled_deletion_are_refused() {
    let mut cfg = config();
    cfg.delete_topic_enable = false;
    let mut h = H::with(cfg);
    h.brokers(&[1]);
    h.topic("a", 1, 1);
    let r = delete_by_name(&mut h, &["a"], 3);
    assert_eq!(
        code(r.responses[0].error_code),
        ErrorCode::TOPIC_DELETION_DISABLED
    );
    let r = delete_by_name(&mut h, &["a"], 2);
    assert_eq!(code(r.responses[0].error_code), ErrorCode::INVALID_REQUEST);
    assert!(h.image.topic("a").is_some());
    let mut h = H::new();
    h.brokers(&[1]);
    h.create(
        &with_config(
            create_req("__consumer_offsets", 1, 1),
            "cleanup.policy",
            "compact",
        ),
        0,
    );
    let r = delete_by_name(&mut h, &["__consumer_offsets"], 5);
    assert_eq!(code(r.responses[0].error_code), ErrorCode::INVALID_REQUEST);
    assert!(h.image.topic("__consumer_offsets").is_some());
}

fn add_partitions(
    h: &mut H,
    name: &str,
    count: i32,
    assignments: Option<Vec<Vec<i32>>>,
) -> CreatePartitionsResponse {
    let req = CreatePartitionsRequest {
        topics: vec![CreatePartitionsTopic {
            name: KStr::from(name.to_owned()),
            count,
            assignments: assignments.map(|a| {
                a.into_iter()
                    .map(|broker_ids| CreatePartitionsAssignment {
                        broker_ids,
                        ..Default::default()
                    })
                    .collect()
            }),
            ..Default::default()
        }],
        ..Default::default()
    };
    h.run(|c, image, _| c.create_partitions(image, &req, 3, 1))
}

#[test]
fn partitions_are_added_with_the_topics_replication_factor() {
    let mut h = H::new();
    h.brokers(&[1, 2, 3]);
    h.topic("t", 2, 2);
    let r = add_partitions(&mut h, "t", 5, None);
    assert_eq!(
        r.results[0].error_code, 0,
        "{:?}",
        r.results[0].error_message
    );
    let t = h.image.topic("t").unwrap();
    assert_eq!(
        t.partitions.keys().copied().collect::<Vec<_>>(),
        vec![0, 1, 2, 3, 4]
    );
    assert!(
        t.partitions
            .values()
            .all(|p| p.replicas.len() == 2 && p.isr == p.replicas)
    );
    let r = add_partitions(&mut h, "t", 6, Some(vec![vec![3, 1]]));
    assert_eq!(r.results[0].error_code, 0);
    assert_eq!(h.partition("t", 5).replicas, vec![3, 1]);
    for (count, assignments, expected) in [
        (6, None, ErrorCode::INVALID_PARTITIONS),
        (3, None, ErrorCode::INVALID_PARTITIONS),
        (
            8,
            Some(vec![vec![1, 2]]),
            ErrorCode::INVALID_REPLICA_ASSIGNMENT,
        ),
        (
            7,
            Some(vec![vec![1]]),
            ErrorCode::INVALID_REPLICA_ASSIGNMENT,
        ),
        (
            7,
            Some(vec![vec![1, 1]]),
            ErrorCode::INVALID_REPLICA_ASSIGNMENT,
        ),
        (
            7,
            Some(vec![vec![1, 8]]),
            ErrorCode::INVALID_REPLICA_ASSIGNMENT,
        ),
    ] {
        let before = h.image.clone();
        let r = add_partitions(&mut h, "t", count, assignments.clone());
        assert_eq!(
            code(r.results[0].error_code),
            expected,
            "{count} {assignments:?}"
        );
        assert!(r.results[0].error_message.is_some());
        assert_eq!(h.image, before);
    }
    let r = add_partitions(&mut h, "nope", 3, None);
    assert_eq!(
        code(r.results[0].error_code),
        ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
    );
}

#[test]
fn adding_partitions_needs_enough_live_brokers() {
    let mut h = H::new();
    h.brokers(&[1, 2]);
    h.topic("t", 1, 2);
    h.heartbeat(2, true, false);
    let r = add_partitions(&mut h, "t", 2, None);
    assert_eq!(
        code(r.results[0].error_code),
        ErrorCode::INVALID_REPLICATION_FACTOR
    );
}
