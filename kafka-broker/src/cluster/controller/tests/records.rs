//! What the controller writes is valid Kafka bytes, and a controller-built image survives a
//! snapshot.

use std::collections::BTreeSet;

use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kafka_protocol::messages::{DeleteTopicsRequest, IncrementalAlterConfigsRequest};
use kafka_protocol::metadata::MetadataRecord;

use super::*;
use crate::cluster::image::{MetadataImage, RESOURCE_BROKER};

/// A scenario that writes every record type the controller writes; returns the harness.
fn busy_cluster() -> H {
    let mut h = H::new();
    h.racked(&[(1, "a"), (2, "b"), (3, "a")]);
    h.create(
        &with_config(create_req("orders", 6, 3), "retention.ms", "60000"),
        2,
    );
    h.topic("gone", 2, 2);
    let del = DeleteTopicsRequest {
        topic_names: vec![KStr::from("gone")],
        ..Default::default()
    };
    h.run(|c, image, _| c.delete_topics(image, &del, 5));
    h.heartbeat(2, false, true); // controlled shutdown: a registration change
    h.heartbeat(1, false, false);
    h.heartbeat(3, false, false);
    h.heartbeat(2, false, true); // stops: fenced
    h.advance(SESSION + 1_000, &[1]); // 3 expires: fenced, ISRs shrink
    let req = IncrementalAlterConfigsRequest {
        resources: vec![AlterConfigsResource {
            resource_type: RESOURCE_BROKER,
            resource_name: KStr::from(""),
            configs: vec![AlterableConfig {
                name: KStr::from("log.retention.ms"),
                config_operation: 0,
                value: Some(KStr::from("1000")),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    h.run(|c, image, _| c.incremental_alter_configs(image, &req, 1));
    h
}

/// (partition, replicas) of the partition records of a batch.
fn placed(records: &[MetadataRecord]) -> Vec<(i32, Vec<i32>)> {
    records
        .iter()
        .filter_map(|r| match r {
            MetadataRecord::Partition(p) => Some((p.partition_id, p.replicas.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn every_record_type_the_controller_writes_round_trips_at_its_highest_version() {
    // The harness encodes and decodes every committed record; check that the scenario wrote
    // every type.
    let h = busy_cluster();
    let written: BTreeSet<&str> = h
        .log
        .iter()
        .flat_map(|(_, b)| b.iter().map(MetadataRecord::name))
        .collect();
    for name in [
        "RegisterBrokerRecord",
        "UnfenceBrokerRecord",
        "FenceBrokerRecord",
        "BrokerRegistrationChangeRecord",
        "TopicRecord",
        "PartitionRecord",
        "PartitionChangeRecord",
        "ConfigRecord",
        "RemoveTopicRecord",
    ] {
        assert!(written.contains(name), "{name} not written: {written:?}");
    }
}

#[test]
fn the_log_replayed_and_the_snapshot_give_the_same_image() {
    let h = busy_cluster();
    // Replaying the committed log from scratch.
    let mut replayed = MetadataImage::new();
    for (offset, batch) in &h.log {
        replayed.apply_batch(*offset, batch).unwrap();
    }
    assert_eq!(replayed, h.image);
    // A snapshot, through its bytes.
    let snapshot: Vec<MetadataRecord> = h
        .image
        .to_records()
        .iter()
        .map(|r| {
            MetadataRecord::decode(&r.encode(r.versions().max).unwrap())
                .unwrap()
                .0
        })
        .collect();
    let mut restored = MetadataImage::new();
    restored.apply_batch(h.image.offset(), &snapshot).unwrap();
    assert_eq!(restored, h.image);
    // A controller on the restored image decides as the old one did.
    let mut a = Controller::new(config(), &h.image, h.now);
    let mut b = Controller::new(config(), &restored, h.now);
    let req = create_req("new", 4, 1);
    let x = a.create_topics(&h.image, &req, 7, 9);
    let y = b.create_topics(&restored, &req, 7, 9);
    assert_eq!(
        x.response.topics[0].error_code,
        y.response.topics[0].error_code
    );
    assert_eq!(placed(&x.records).len(), 4);
    assert_eq!(placed(&x.records), placed(&y.records));
}
