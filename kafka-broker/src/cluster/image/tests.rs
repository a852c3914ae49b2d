//! The metadata image: record meanings, all-or-nothing batches, snapshots.
#![allow(clippy::unwrap_used)]

use kafka_protocol::metadata::register_broker_record::BrokerEndpoint;
use kafka_protocol::metadata::{
    AccessControlEntryRecord, BrokerRegistrationChangeRecord, NoOpRecord, PartitionChangeRecord,
    RemoveTopicRecord, UnfenceBrokerRecord, UnregisterBrokerRecord,
};

use super::*;

fn id(n: u8) -> Uuid {
    let mut b = [0u8; 16];
    b[0] = 0x11;
    b[15] = n;
    Uuid(b)
}

fn broker(broker_id: i32, epoch: i64, rack: Option<&str>) -> MetadataRecord {
    MetadataRecord::RegisterBroker(RegisterBrokerRecord {
        broker_id,
        incarnation_id: id(u8::try_from(broker_id).unwrap() + 100),
        broker_epoch: epoch,
        end_points: vec![BrokerEndpoint {
            name: KStr::from("PLAINTEXT"),
            host: KStr::from(format!("h{broker_id}")),
            port: 9092,
            security_protocol: 0,
            ..Default::default()
        }],
        rack: rack.map(|r| KStr::from(r.to_owned())),
        fenced: true,
        ..Default::default()
    })
}

fn topic(name: &str, n: u8) -> MetadataRecord {
    MetadataRecord::Topic(TopicRecord {
        name: KStr::from(name.to_owned()),
        topic_id: id(n),
        ..Default::default()
    })
}

fn partition(topic: u8, index: i32, replicas: &[i32]) -> MetadataRecord {
    MetadataRecord::Partition(PartitionRecord {
        partition_id: index,
        topic_id: id(topic),
        replicas: replicas.to_vec(),
        isr: replicas.to_vec(),
        leader: replicas[0],
        leader_epoch: 0,
        partition_epoch: 0,
        ..Default::default()
    })
}

fn change(topic: u8, index: i32) -> PartitionChangeRecord {
    PartitionChangeRecord {
        partition_id: index,
        topic_id: id(topic),
        ..Default::default()
    }
}

fn config(resource_type: i8, resource: &str, key: &str, value: Option<&str>) -> MetadataRecord {
    MetadataRecord::Config(ConfigRecord {
        resource_type,
        resource_name: KStr::from(resource.to_owned()),
        name: KStr::from(key.to_owned()),
        value: value.map(|v| KStr::from(v.to_owned())),
        ..Default::default()
    })
}

/// Brokers 1-3, topic "t" (id 1) with partitions [1,2,3] and [2,3,1], at offset 1.
fn image() -> MetadataImage {
    let mut m = MetadataImage::new();
    m.apply_batch(
        1,
        &[
            broker(1, 1, Some("a")),
            broker(2, 2, Some("b")),
            broker(3, 3, None),
            topic("t", 1),
            partition(1, 0, &[1, 2, 3]),
            partition(1, 1, &[2, 3, 1]),
        ],
    )
    .unwrap();
    m
}

#[test]
fn a_batch_builds_brokers_topics_and_partitions() {
    let m = image();
    assert_eq!(m.offset(), 1);
    assert_eq!(m.brokers().map(|b| b.id).collect::<Vec<_>>(), vec![1, 2, 3]);
    let b = m.broker(2).unwrap();
    assert_eq!(
        (b.epoch, b.fenced, b.registered_at, b.rack.as_deref()),
        (2, true, 1, Some("b"))
    );
    assert_eq!(b.endpoints[0].host, "h2");
    let t = m.topic("t").unwrap();
    assert_eq!(t.id, id(1));
    assert_eq!(m.topic_by_id(&id(1)).unwrap().name, "t");
    assert_eq!(t.partitions[&1].replicas, vec![2, 3, 1]);
    assert_eq!(
        m.partitions_of(1)
            .iter()
            .map(|(t, i, _)| (*t, *i))
            .collect::<Vec<_>>(),
        vec![("t", 0), ("t", 1)]
    );
    assert!(m.partitions_of(4).is_empty());
}

#[test]
fn a_partition_change_applies_only_what_it_carries() {
    let mut m = image();
    let before = m.topic("t").unwrap().partitions[&0].clone();
    // Nothing but the partition epoch: null ISR and replicas, leader -2, recovery -1.
    m.apply_batch(2, &[MetadataRecord::PartitionChange(change(1, 0))])
        .unwrap();
    let p = m.topic("t").unwrap().partitions[&0].clone();
    assert_eq!(
        (p.replicas.clone(), p.isr.clone(), p.leader),
        (before.replicas.clone(), before.isr.clone(), before.leader)
    );
    assert_eq!(
        (p.leader_epoch, p.partition_epoch, p.leader_recovery_state),
        (0, 1, 0)
    );
    // A new ISR.
    m.apply_batch(
        3,
        &[MetadataRecord::PartitionChange(PartitionChangeRecord {
            isr: Some(vec![1, 2]),
            ..change(1, 0)
        })],
    )
    .unwrap();
    let p = m.topic("t").unwrap().partitions[&0].clone();
    assert_eq!(
        (p.isr.clone(), p.leader_epoch, p.partition_epoch),
        (vec![1, 2], 0, 2)
    );
    // No leader: the leader epoch moves too.
    m.apply_batch(
        4,
        &[MetadataRecord::PartitionChange(PartitionChangeRecord {
            leader: NO_LEADER,
            ..change(1, 0)
        })],
    )
    .unwrap();
    let p = m.topic("t").unwrap().partitions[&0].clone();
    assert_eq!(
        (p.leader, p.leader_epoch, p.partition_epoch),
        (NO_LEADER, 1, 3)
    );
    // Naming a leader, even one it had, bumps the leader epoch; recovery state set.
    for (offset, leader) in [(5, 2), (6, 2)] {
        let r = PartitionChangeRecord {
            leader,
            leader_recovery_state: RECOVERING,
            ..change(1, 0)
        };
        m.apply_batch(offset, &[MetadataRecord::PartitionChange(r)])
            .unwrap();
    }
    let p = m.topic("t").unwrap().partitions[&0].clone();
    assert_eq!(
        (
            p.leader,
            p.leader_epoch,
            p.partition_epoch,
            p.leader_recovery_state
        ),
        (2, 3, 5, RECOVERING)
    );
    // The other partition is untouched.
    assert_eq!(m.topic("t").unwrap().partitions[&1].partition_epoch, 0);
}

#[test]
fn broker_records_change_the_registration() {
    let mut m = image();
    m.apply_batch(2, &[unfence_record(m.broker(1).unwrap())])
        .unwrap();
    assert!(!m.broker(1).unwrap().fenced);
    let shut = MetadataRecord::BrokerRegistrationChange(BrokerRegistrationChangeRecord {
        broker_id: 1,
        broker_epoch: 1,
        in_controlled_shutdown: 1,
        ..Default::default()
    });
    m.apply_batch(3, &[shut]).unwrap();
    let b = m.broker(1).unwrap();
    assert!(b.in_controlled_shutdown && !b.fenced && !b.is_active());
    let fence = MetadataRecord::BrokerRegistrationChange(BrokerRegistrationChangeRecord {
        broker_id: 1,
        broker_epoch: 1,
        fenced: 1,
        ..Default::default()
    });
    m.apply_batch(4, &[fence]).unwrap();
    assert!(m.broker(1).unwrap().fenced);
    let unfence = MetadataRecord::BrokerRegistrationChange(BrokerRegistrationChangeRecord {
        broker_id: 2,
        broker_epoch: 2,
        fenced: -1,
        ..Default::default()
    });
    m.apply_batch(5, &[unfence]).unwrap();
    assert!(m.broker(2).unwrap().is_active());
    // A re-registration replaces the registration, at its own offset.
    m.apply_batch(6, &[broker(2, 9, None)]).unwrap();
    let b = m.broker(2).unwrap();
    assert_eq!(
        (b.epoch, b.fenced, b.registered_at, b.rack.clone()),
        (9, true, 6, None)
    );
    assert_eq!(m.max_broker_epoch(), 9);
    m.apply_batch(
        7,
        &[MetadataRecord::UnregisterBroker(UnregisterBrokerRecord {
            broker_id: 3,
            broker_epoch: 3,
            ..Default::default()
        })],
    )
    .unwrap();
    assert!(m.broker(3).is_none());
}

#[test]
fn configs_are_set_and_deleted_and_go_with_their_topic() {
    let mut m = image();
    m.apply_batch(
        2,
        &[
            config(RESOURCE_TOPIC, "t", "retention.ms", Some("1")),
            config(RESOURCE_TOPIC, "t", "segment.ms", Some("2")),
            config(RESOURCE_BROKER, "", "log.retention.ms", Some("3")),
        ],
    )
    .unwrap();
    assert_eq!(m.configs(RESOURCE_TOPIC, "t").unwrap().len(), 2);
    assert_eq!(m.config(RESOURCE_BROKER, "", "log.retention.ms"), Some("3"));
    m.apply_batch(3, &[config(RESOURCE_TOPIC, "t", "retention.ms", None)])
        .unwrap();
    assert_eq!(
        m.configs(RESOURCE_TOPIC, "t")
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        vec!["segment.ms"]
    );
    m.apply_batch(4, &[config(RESOURCE_BROKER, "", "log.retention.ms", None)])
        .unwrap();
    assert!(m.configs(RESOURCE_BROKER, "").is_none());
    m.apply_batch(
        5,
        &[MetadataRecord::RemoveTopic(RemoveTopicRecord {
            topic_id: id(1),
            ..Default::default()
        })],
    )
    .unwrap();
    assert!(m.topic("t").is_none());
    assert!(m.topic_by_id(&id(1)).is_none());
    assert!(m.configs(RESOURCE_TOPIC, "t").is_none());
}

/// What a refused batch's error must be.
type Expected = fn(&ImageError) -> bool;

#[test]
fn an_inconsistent_batch_is_refused_whole() {
    let base = {
        let mut m = image();
        m.apply_batch(2, &[config(RESOURCE_TOPIC, "t", "retention.ms", Some("1"))])
            .unwrap();
        m
    };
    let cases: Vec<(Vec<MetadataRecord>, Expected)> = vec![
        (
            vec![topic("u", 2), partition(2, 0, &[1]), partition(9, 0, &[1])],
            |e| matches!(e, ImageError::UnknownTopicId { topic_id, .. } if *topic_id == id(9)),
        ),
        (
            vec![
                MetadataRecord::PartitionChange(PartitionChangeRecord {
                    isr: Some(vec![1]),
                    ..change(1, 0)
                }),
                MetadataRecord::PartitionChange(change(1, 5)),
            ],
            |e| matches!(e, ImageError::UnknownPartition { partition: 5, .. }),
        ),
        (
            vec![
                MetadataRecord::RemoveTopic(RemoveTopicRecord {
                    topic_id: id(1),
                    ..Default::default()
                }),
                MetadataRecord::FenceBroker(FenceBrokerRecord {
                    id: 1,
                    epoch: 7,
                    ..Default::default()
                }),
            ],
            |e| {
                matches!(
                    e,
                    ImageError::BrokerEpochMismatch {
                        broker_id: 1,
                        epoch: 7,
                        current: 1,
                        ..
                    }
                )
            },
        ),
        (
            vec![
                unfence_record(base.broker(2).unwrap()),
                MetadataRecord::UnfenceBroker(UnfenceBrokerRecord {
                    id: 8,
                    epoch: 1,
                    ..Default::default()
                }),
            ],
            |e| matches!(e, ImageError::UnknownBroker { broker_id: 8, .. }),
        ),
        (
            vec![
                config(RESOURCE_TOPIC, "t", "retention.ms", None),
                topic("t", 3),
            ],
            |e| matches!(e, ImageError::TopicExists { .. }),
        ),
        (vec![topic("v", 1)], |e| {
            matches!(e, ImageError::TopicIdInUse { .. })
        }),
        (
            vec![MetadataRecord::PartitionChange(PartitionChangeRecord {
                isr: Some(vec![1, 9]),
                ..change(1, 0)
            })],
            |e| matches!(e, ImageError::Invalid { .. }),
        ),
        (
            vec![MetadataRecord::PartitionChange(PartitionChangeRecord {
                leader: 9,
                ..change(1, 0)
            })],
            |e| matches!(e, ImageError::Invalid { .. }),
        ),
        (vec![broker(1, 1, None)], |e| {
            matches!(e, ImageError::Invalid { .. })
        }),
        (
            vec![MetadataRecord::AccessControlEntry(
                AccessControlEntryRecord::default(),
            )],
            |e| {
                matches!(
                    e,
                    ImageError::Invalid {
                        record: "AccessControlEntryRecord",
                        ..
                    }
                )
            },
        ),
        (
            vec![MetadataRecord::DelegationToken(Default::default())],
            |e| {
                matches!(
                    e,
                    ImageError::Unsupported {
                        record: "DelegationTokenRecord"
                    }
                )
            },
        ),
    ];
    for (batch, expected) in cases {
        let mut m = base.clone();
        let e = m.apply_batch(3, &batch).unwrap_err();
        assert!(expected(&e), "{e}");
        assert_eq!(
            m,
            base,
            "changed by a refused batch ending in {:?}",
            batch.last()
        );
    }
}

#[test]
fn offsets_must_grow() {
    let mut m = image();
    assert!(matches!(
        m.apply_batch(1, &[]),
        Err(ImageError::OffsetNotAfter {
            offset: 1,
            current: 1
        })
    ));
    m.apply_batch(5, &[MetadataRecord::NoOp(NoOpRecord::default())])
        .unwrap();
    assert_eq!(m.offset(), 5);
    m.apply_batch(6, &[]).unwrap();
    assert_eq!(m.offset(), 6);
}

#[test]
fn features_and_producer_ids_are_kept() {
    let mut m = image();
    let feature = |level| {
        MetadataRecord::FeatureLevel(FeatureLevelRecord {
            name: KStr::from("metadata.version"),
            feature_level: level,
            ..Default::default()
        })
    };
    let ids = |next| {
        MetadataRecord::ProducerIds(ProducerIdsRecord {
            broker_id: 1,
            broker_epoch: 1,
            next_producer_id: next,
            ..Default::default()
        })
    };
    m.apply_batch(2, &[feature(21), ids(1000)]).unwrap();
    assert_eq!(
        m.features().collect::<Vec<_>>(),
        vec![("metadata.version", 21)]
    );
    assert_eq!(m.producer_ids().unwrap().next_producer_id, 1000);
    assert!(m.apply_batch(3, &[ids(999)]).is_err());
    m.apply_batch(3, &[feature(0)]).unwrap();
    assert_eq!(m.features().count(), 0);
}

#[test]
fn to_records_rebuilds_an_equal_image_through_kafka_bytes() {
    let mut m = image();
    m.apply_batch(
        4,
        &[
            unfence_record(m.broker(1).unwrap()),
            MetadataRecord::BrokerRegistrationChange(BrokerRegistrationChangeRecord {
                broker_id: 2,
                broker_epoch: 2,
                fenced: -1,
                in_controlled_shutdown: 1,
                ..Default::default()
            }),
            MetadataRecord::PartitionChange(PartitionChangeRecord {
                isr: Some(vec![1]),
                leader: 1,
                leader_recovery_state: RECOVERING,
                ..change(1, 1)
            }),
            config(RESOURCE_TOPIC, "t", "retention.ms", Some("1")),
            config(RESOURCE_BROKER, "2", "log.retention.ms", Some("5")),
            MetadataRecord::FeatureLevel(FeatureLevelRecord {
                name: KStr::from("metadata.version"),
                feature_level: 21,
                ..Default::default()
            }),
            MetadataRecord::ProducerIds(ProducerIdsRecord {
                broker_id: 1,
                broker_epoch: 1,
                next_producer_id: 5000,
                ..Default::default()
            }),
        ],
    )
    .unwrap();
    m.apply_batch(9, &[broker(3, 8, Some("c"))]).unwrap();
    let records = m.to_records();
    let decoded: Vec<MetadataRecord> = records
        .iter()
        .map(|r| {
            let bytes = r.encode(r.versions().max).unwrap();
            MetadataRecord::decode(&bytes).unwrap().0
        })
        .collect();
    assert_eq!(decoded, records);
    let mut back = MetadataImage::new();
    back.apply_batch(m.offset(), &decoded).unwrap();
    assert_eq!(back, m);
    // Registration offsets survive (1 for brokers 1 and 2, 9 for broker 3's new registration).
    let at: Vec<u64> = back.brokers().map(|b| b.registered_at).collect();
    assert_eq!(at, vec![1, 1, 9]);
    // Without the tag, a registration counts from the batch's offset.
    let stripped: Vec<MetadataRecord> = records
        .into_iter()
        .map(|r| match r {
            MetadataRecord::RegisterBroker(mut b) => {
                b.unknown_tagged_fields = UnknownTags::new();
                MetadataRecord::RegisterBroker(b)
            }
            other => other,
        })
        .collect();
    let mut plain = MetadataImage::new();
    plain.apply_batch(20, &stripped).unwrap();
    assert!(plain.brokers().all(|b| b.registered_at == 20));
}

#[path = "security_tests.rs"]
mod security;

#[test]
fn one_change_among_ten_thousand_partitions_applies() {
    let mut m = image();
    let mut batch = vec![topic("big", 2)];
    batch.extend((0..10_000).map(|i| partition(2, i, &[1, 2, 3])));
    m.apply_batch(2, &batch).unwrap();
    assert_eq!(m.topic("big").unwrap().partitions.len(), 10_000);
    let before = m.clone();
    let bad = [
        MetadataRecord::PartitionChange(PartitionChangeRecord {
            isr: Some(vec![1]),
            ..change(2, 9_999)
        }),
        MetadataRecord::PartitionChange(change(2, 10_000)),
    ];
    assert!(m.apply_batch(3, &bad).is_err());
    assert_eq!(m, before);
    m.apply_batch(3, &bad[..1]).unwrap();
    assert_eq!(m.topic("big").unwrap().partitions[&9_999].isr, vec![1]);
}
