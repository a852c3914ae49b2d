//! Every answer the controller builds, success or refusal, encodes in every version of its
//! API (a field an old version lacks must be ignorable or left at its default) and decodes
//! back.

use kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kafka_protocol::messages::{
    AlterConfigsRequest, AlterPartitionRequest, CreatePartitionsRequest, DeleteTopicsRequest,
    IncrementalAlterConfigsRequest, alter_configs_request, alter_partition_request,
};
use kafka_protocol::{Message, Writer};

use super::*;
use crate::cluster::image::RESOURCE_TOPIC;

fn wire<M: Message>(m: &M, version: i16) {
    let mut w = Writer::new();
    m.encode(&mut w, version)
        .unwrap_or_else(|e| panic!("{} v{version}: {e}", M::NAME));
    M::decode_from(&w.into_bytes(), version)
        .unwrap_or_else(|e| panic!("{} v{version}: {e}", M::NAME));
}

fn every_version<M: Message>(m: &M) {
    for v in M::VERSIONS.min..=M::VERSIONS.max {
        wire(m, v);
    }
}

#[test]
fn broker_answers_encode_in_every_version() {
    let mut h = H::new();
    let ok = h.peek(|c, image, now| c.register_broker(image, &registration(1, 0, None), 4, now));
    every_version(&ok.response);
    let mut bad = registration(1, 0, None);
    bad.cluster_id = KStr::from("other");
    every_version(
        &h.peek(|c, image, now| c.register_broker(image, &bad, 4, now))
            .response,
    );
    h.brokers(&[1]);
    let req = BrokerHeartbeatRequest {
        broker_id: 1,
        broker_epoch: 99,
        ..Default::default()
    };
    every_version(
        &h.peek(|c, image, now| c.heartbeat(image, &req, 1, now))
            .response,
    );
    every_version(&h.heartbeat(1, false, false));
}

#[test]
fn topic_answers_encode_in_every_version() {
    let mut h = H::new();
    h.brokers(&[1, 2]);
    h.topic("t", 1, 1);
    for v in 0..=7 {
        let mut req = create_req("new", 2, 2);
        req.topics.push(create_req("t", 1, 1).topics[0].clone());
        req.topics.push(create_req("bad", 1, 5).topics[0].clone());
        let out = h.peek(|c, image, _| c.create_topics(image, &req, v, 0));
        wire(&out.response, v);
    }
    let req = CreatePartitionsRequest {
        topics: vec![
            CreatePartitionsTopic {
                name: KStr::from("t"),
                count: 3,
                ..Default::default()
            },
            CreatePartitionsTopic {
                name: KStr::from("nope"),
                count: 3,
                ..Default::default()
            },
        ],
        ..Default::default()
    };
    for v in 0..=3 {
        wire(
            &h.peek(|c, image, _| c.create_partitions(image, &req, v, 0))
                .response,
            v,
        );
    }
    for v in 0..=6 {
        let req = if v >= 6 {
            DeleteTopicsRequest {
                topics: vec![
                    DeleteTopicState {
                        name: Some(KStr::from("t")),
                        ..Default::default()
                    },
                    DeleteTopicState {
                        name: None,
                        topic_id: topic_id(77),
                        ..Default::default()
                    },
                ],
                ..Default::default()
            }
        } else {
            DeleteTopicsRequest {
                topic_names: vec![KStr::from("t"), KStr::from("nope")],
                ..Default::default()
            }
        };
        wire(
            &h.peek(|c, image, _| c.delete_topics(image, &req, v))
                .response,
            v,
        );
    }
}

#[test]
fn config_and_isr_answers_encode_in_every_version() {
    let mut h = H::new();
    h.brokers(&[1, 2]);
    h.assigned("t", &[&[1, 2]]);
    let incremental = IncrementalAlterConfigsRequest {
        resources: vec![AlterConfigsResource {
            resource_type: RESOURCE_TOPIC,
            resource_name: KStr::from("t"),
            configs: vec![AlterableConfig {
                name: KStr::from("retention.ms"),
                config_operation: 0,
                value: Some(KStr::from("oops")),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    every_version(
        &h.peek(|c, image, _| c.incremental_alter_configs(image, &incremental, 1))
            .response,
    );
    let alter = AlterConfigsRequest {
        resources: vec![alter_configs_request::AlterConfigsResource {
            resource_type: RESOURCE_TOPIC,
            resource_name: KStr::from("t"),
            ..Default::default()
        }],
        ..Default::default()
    };
    every_version(
        &h.peek(|c, image, _| c.alter_configs(image, &alter, 2))
            .response,
    );
    let topic = h.image.topic("t").unwrap().id;
    for v in 0..=3 {
        let req = AlterPartitionRequest {
            broker_id: 1,
            broker_epoch: h.image.broker(1).unwrap().epoch,
            topics: vec![alter_partition_request::TopicData {
                topic_name: if v < 2 {
                    KStr::from("t")
                } else {
                    KStr::default()
                },
                topic_id: if v >= 2 { topic } else { Uuid::ZERO },
                partitions: vec![
                    alter_partition_request::PartitionData {
                        partition_index: 0,
                        new_isr: if v < 3 { vec![1] } else { Vec::new() },
                        new_isr_with_epochs: if v >= 3 {
                            vec![alter_partition_request::BrokerState {
                                broker_id: 1,
                                broker_epoch: -1,
                                ..Default::default()
                            }]
                        } else {
                            Vec::new()
                        },
                        ..Default::default()
                    },
                    alter_partition_request::PartitionData {
                        partition_index: 4,
                        ..Default::default()
                    },
                ],
                ..Default::default()
            }],
            ..Default::default()
        };
        let out = h.peek(|c, image, _| c.alter_partition(image, &req, v));
        assert_eq!(out.response.topics[0].partitions[0].error_code, 0, "v{v}");
        wire(&out.response, v);
    }
}
