//! AlterPartition: every refusal and the successful ISR changes.

use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::alter_partition_request::{BrokerState, PartitionData, TopicData};
use kafka_protocol::messages::alter_partition_response;
use kafka_protocol::messages::{AlterPartitionRequest, AlterPartitionResponse};
use kafka_protocol::metadata::MetadataRecord;

use super::*;
use crate::cluster::image::{RECOVERED, RECOVERING};

/// Brokers 1-3, topic "t" with one partition on [1, 2, 3] led by 1.
fn setup() -> H {
    let mut h = H::new();
    h.brokers(&[1, 2, 3]);
    h.assigned("t", &[&[1, 2, 3]]);
    h
}

/// A request from `broker` for partition 0 of "t" with the current epochs and `isr`.
fn request(h: &H, broker: i32, isr: &[i32], version: i16) -> AlterPartitionRequest {
    let p = h.partition("t", 0);
    let topic = h.image.topic("t").unwrap();
    AlterPartitionRequest {
        broker_id: broker,
        broker_epoch: h.image.broker(broker).map_or(-1, |b| b.epoch),
        topics: vec![TopicData {
            topic_name: if version < 2 {
                KStr::from("t")
            } else {
                KStr::default()
            },
            topic_id: if version >= 2 { topic.id } else { Uuid::ZERO },
            partitions: vec![PartitionData {
                partition_index: 0,
                leader_epoch: p.leader_epoch,
                new_isr: if version < 3 {
                    isr.to_vec()
                } else {
                    Vec::new()
                },
                new_isr_with_epochs: if version >= 3 {
                    isr.iter()
                        .map(|id| BrokerState {
                            broker_id: *id,
                            broker_epoch: h.image.broker(*id).map_or(-1, |b| b.epoch),
                            ..Default::default()
                        })
                        .collect()
                } else {
                    Vec::new()
                },
                leader_recovery_state: RECOVERED,
                partition_epoch: p.partition_epoch,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn send(h: &mut H, req: &AlterPartitionRequest, version: i16) -> AlterPartitionResponse {
    h.run(|c, image, _| c.alter_partition(image, req, version))
}

/// The one partition answer, checking that a refusal wrote nothing.
fn refusal(h: &mut H, req: &AlterPartitionRequest, version: i16) -> ErrorCode {
    let before = h.image.clone();
    let out = h.peek(|c, image, _| c.alter_partition(image, req, version));
    assert!(out.records.is_empty());
    assert_eq!(h.image, before);
    assert_eq!(out.response.error_code, 0);
    code(out.response.topics[0].partitions[0].error_code)
}

fn only(r: &AlterPartitionResponse) -> &alter_partition_response::PartitionData {
    &r.topics[0].partitions[0]
}

#[test]
fn the_leader_shrinks_and_expands_its_isr() {
    for version in 0..=3 {
        let mut h = setup();
        let before = h.partition("t", 0);
        let req = request(&h, 1, &[1, 3], version);
        let r = send(&mut h, &req, version);
        let p = only(&r);
        assert_eq!(p.error_code, 0, "v{version}");
        let after = h.partition("t", 0);
        assert_eq!(after.isr, vec![1, 3]);
        assert_eq!(after.partition_epoch, before.partition_epoch + 1);
        assert_eq!(after.leader_epoch, before.leader_epoch);
        // The answer is the partition as committed.
        assert_eq!(
            (
                p.leader_id,
                p.leader_epoch,
                p.isr.clone(),
                p.partition_epoch,
                p.leader_recovery_state
            ),
            (
                after.leader,
                after.leader_epoch,
                after.isr.clone(),
                after.partition_epoch,
                after.leader_recovery_state
            ),
            "v{version}"
        );
        assert!(matches!(
            h.last_batch(),
            [MetadataRecord::PartitionChange(c)] if c.isr == Some(vec![1, 3]) && c.leader == -2 && c.replicas.is_none()
        ));
        if version >= 2 {
            assert_eq!(r.topics[0].topic_id, h.image.topic("t").unwrap().id);
        } else {
            assert_eq!(r.topics[0].topic_name.as_str(), "t");
        }
        let req = request(&h, 1, &[1, 2, 3], version);
        let r = send(&mut h, &req, version);
        assert_eq!(only(&r).error_code, 0);
        assert_eq!(h.partition("t", 0).isr, vec![1, 2, 3]);
    }
}

#[test]
fn the_same_isr_changes_nothing() {
    let mut h = setup();
    let req = request(&h, 1, &[1, 2, 3], 2);
    let out = h.peek(|c, image, _| c.alter_partition(image, &req, 2));
    assert!(out.records.is_empty());
    let p = only(&out.response);
    assert_eq!(
        (p.error_code, p.isr.clone(), p.partition_epoch),
        (0, vec![1, 2, 3], 0)
    );
}

#[test]
fn a_stale_or_unknown_broker_epoch_refuses_the_whole_request() {
    let mut h = setup();
    let mut req = request(&h, 1, &[1, 2], 2);
    req.broker_epoch -= 1;
    let out = h.peek(|c, image, _| c.alter_partition(image, &req, 2));
    assert_eq!(code(out.response.error_code), ErrorCode::STALE_BROKER_EPOCH);
    assert!(out.response.topics.is_empty() && out.records.is_empty());
    req.broker_id = 42;
    let out = h.peek(|c, image, _| c.alter_partition(image, &req, 2));
    assert_eq!(code(out.response.error_code), ErrorCode::STALE_BROKER_EPOCH);
}

#[test]
fn only_the_leader_may_change_the_isr() {
    let mut h = setup();
    let req = request(&h, 2, &[1, 2], 2);
    assert_eq!(refusal(&mut h, &req, 2), ErrorCode::INVALID_REQUEST);
}

#[test]
fn epochs_must_be_the_current_ones() {
    let mut h = setup();
    // Move leadership once so that the leader epoch is 1.
    h.heartbeat(1, false, true);
    assert_eq!(h.partition("t", 0).leader, 2);
    let mut req = request(&h, 2, &[2, 3], 2);
    req.topics[0].partitions[0].leader_epoch -= 1;
    assert_eq!(refusal(&mut h, &req, 2), ErrorCode::FENCED_LEADER_EPOCH);
    let mut req = request(&h, 2, &[2, 3], 2);
    req.topics[0].partitions[0].partition_epoch -= 1;
    assert_eq!(refusal(&mut h, &req, 2), ErrorCode::INVALID_UPDATE_VERSION);
    let mut req = request(&h, 2, &[2, 3], 2);
    req.topics[0].partitions[0].leader_epoch += 1;
    assert_eq!(refusal(&mut h, &req, 2), ErrorCode::NOT_CONTROLLER);
    let mut req = request(&h, 2, &[2, 3], 2);
    req.topics[0].partitions[0].partition_epoch += 1;
    assert_eq!(refusal(&mut h, &req, 2), ErrorCode::NOT_CONTROLLER);
}

#[test]
fn the_isr_must_be_replicas_and_contain_the_leader() {
    let mut h = setup();
    h.brokers(&[4]);
    for isr in [&[1, 4][..], &[2, 3], &[1, 1, 2], &[]] {
        let req = request(&h, 1, isr, 2);
        assert_eq!(
            refusal(&mut h, &req, 2),
            ErrorCode::INVALID_REQUEST,
            "{isr:?}"
        );
    }
}

#[test]
fn every_new_member_must_be_eligible() {
    let mut h = setup();
    // 3 fenced by asking: out of the ISR; 1 may not take it back.
    h.heartbeat(3, true, false);
    assert_eq!(h.partition("t", 0).isr, vec![1, 2]);
    let req = request(&h, 1, &[1, 2, 3], 2);
    assert_eq!(refusal(&mut h, &req, 2), ErrorCode::INELIGIBLE_REPLICA);
    let req = request(&h, 1, &[1, 2, 3], 0);
    assert_eq!(refusal(&mut h, &req, 0), ErrorCode::OPERATION_NOT_ATTEMPTED);
    // 3 back; then v3's broker epochs must match.
    h.heartbeat(3, false, false);
    let mut req = request(&h, 1, &[1, 2, 3], 3);
    req.topics[0].partitions[0].new_isr_with_epochs[2].broker_epoch -= 1;
    assert_eq!(refusal(&mut h, &req, 3), ErrorCode::INELIGIBLE_REPLICA);
    req.topics[0].partitions[0].new_isr_with_epochs[2].broker_epoch = -1;
    let r = send(&mut h, &req, 3);
    assert_eq!(only(&r).error_code, 0);
    // A broker in controlled shutdown (3 leads "u", so it does not stop at once) may not
    // join.
    h.assigned("u", &[&[3, 1]]);
    h.heartbeat(3, false, true);
    assert!(h.image.broker(3).unwrap().in_controlled_shutdown);
    assert_eq!(h.partition("t", 0).isr, vec![1, 2]);
    let req = request(&h, 1, &[1, 2, 3], 2);
    assert_eq!(refusal(&mut h, &req, 2), ErrorCode::INELIGIBLE_REPLICA);
}

#[test]
fn unknown_topics_and_partitions_are_refused_by_version() {
    let mut h = setup();
    let mut req = request(&h, 1, &[1, 2], 1);
    req.topics[0].topic_name = KStr::from("nope");
    assert_eq!(
        refusal(&mut h, &req, 1),
        ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
    );
    let mut req = request(&h, 1, &[1, 2], 2);
    req.topics[0].topic_id = topic_id(200);
    assert_eq!(refusal(&mut h, &req, 2), ErrorCode::UNKNOWN_TOPIC_ID);
    let mut req = request(&h, 1, &[1, 2], 2);
    req.topics[0].partitions[0].partition_index = 7;
    assert_eq!(
        refusal(&mut h, &req, 2),
        ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
    );
}

#[test]
fn a_leader_elected_uncleanly_reports_its_recovery() {
    let mut cfg = config();
    cfg.unclean_leader_election = true;
    let mut h = H::with(cfg);
    h.brokers(&[1, 2]);
    h.assigned("t", &[&[1, 2]]);
    h.advance(SESSION + 1_000, &[1]);
    h.heartbeat(2, false, false);
    h.advance(SESSION + 1_000, &[2]);
    let p = h.partition("t", 0);
    assert_eq!((p.leader, p.leader_recovery_state), (2, RECOVERING));
    // Recovering with more than itself in the ISR is refused; back to RECOVERED alone is fine.
    h.heartbeat(1, false, false);
    let mut req = request(&h, 2, &[2, 1], 1);
    req.topics[0].partitions[0].leader_recovery_state = RECOVERING;
    assert_eq!(refusal(&mut h, &req, 1), ErrorCode::INVALID_REQUEST);
    let req = request(&h, 2, &[2], 1);
    let r = send(&mut h, &req, 1);
    assert_eq!(
        (only(&r).error_code, only(&r).leader_recovery_state),
        (0, RECOVERED)
    );
    assert_eq!(h.partition("t", 0).leader_recovery_state, RECOVERED);
    // Going back to RECOVERING is refused.
    let mut req = request(&h, 2, &[2], 1);
    req.topics[0].partitions[0].leader_recovery_state = RECOVERING;
    assert_eq!(refusal(&mut h, &req, 1), ErrorCode::INVALID_REQUEST);
}
