//! Registration, heartbeats, session expiry, failover and controlled shutdown.

use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::BrokerHeartbeatRequest;
use kafka_protocol::metadata::{MetadataRecord, UnregisterBrokerRecord};

use super::*;
use crate::cluster::image::{NO_LEADER, RECOVERING, RESOURCE_TOPIC};

#[test]
fn a_new_broker_registers_fenced_with_its_listeners_and_rack() {
    let mut h = H::new();
    let epoch = h.register(1, Some("rack-a"));
    assert!(epoch > 0);
    let at = h.image.offset();
    let b = h.image.broker(1).unwrap();
    assert_eq!(b.epoch, epoch);
    assert!(b.fenced);
    assert!(!b.in_controlled_shutdown);
    assert_eq!(b.registered_at, at);
    assert_eq!(b.rack.as_deref(), Some("rack-a"));
    assert_eq!(b.incarnation_id, incarnation(1, 0));
    assert_eq!(b.endpoints.len(), 1);
    assert_eq!(b.endpoints[0].name, "PLAINTEXT");
    assert_eq!(b.endpoints[0].host, "broker1.test");
    assert_eq!(b.endpoints[0].port, 9001);
    assert!(matches!(
        h.last_batch(),
        [MetadataRecord::RegisterBroker(_)]
    ));
}

#[test]
fn registering_again_with_the_same_incarnation_is_idempotent() {
    let mut h = H::new();
    let epoch = h.register(1, None);
    let before = h.image.clone();
    let out = h.peek(|c, image, now| c.register_broker(image, &registration(1, 0, None), 4, now));
    assert!(out.records.is_empty());
    assert_eq!(out.response.error_code, 0);
    assert_eq!(out.response.broker_epoch, epoch);
    assert_eq!(h.image, before);
}

#[test]
fn a_second_incarnation_is_refused_while_the_first_has_a_live_session() {
    let mut h = H::new();
    h.brokers(&[1]);
    let first = h.image.broker(1).unwrap().epoch;
    let out = h.peek(|c, image, now| c.register_broker(image, &registration(1, 1, None), 4, now));
    assert_eq!(
        code(out.response.error_code),
        ErrorCode::DUPLICATE_BROKER_REGISTRATION
    );
    assert!(out.records.is_empty());
    // Once the first incarnation's session has expired (and it was fenced), the new one
    // registers with a higher epoch.
    h.advance(SESSION + 1_000, &[]);
    assert!(h.image.broker(1).unwrap().fenced);
    let r = h.register_req(&registration(1, 1, None));
    assert_eq!(r.error_code, 0);
    assert!(r.broker_epoch > first);
    assert_eq!(h.image.broker(1).unwrap().incarnation_id, incarnation(1, 1));
}

#[test]
fn a_second_incarnation_of_a_fenced_broker_registers_at_once() {
    let mut h = H::new();
    let first = h.register(1, None);
    let r = h.register_req(&registration(1, 1, None));
    assert_eq!(r.error_code, 0);
    assert!(r.broker_epoch > first);
}

#[test]
fn a_new_incarnation_of_an_expired_but_unfenced_broker_takes_its_leadership_away() {
    let mut h = H::new();
    h.brokers(&[1, 2]);
    h.assigned("t", &[&[1, 2]]);
    // 1's session runs out, but the timer has not fenced it yet when it comes back.
    h.now += SESSION + 1;
    h.heartbeat(2, false, false);
    let r = h.register_req(&registration(1, 1, None));
    assert_eq!(r.error_code, 0);
    let p = h.partition("t", 0);
    assert_eq!((p.leader, p.isr.clone()), (2, vec![2]));
    assert!(h.image.broker(1).unwrap().fenced);
}

#[test]
fn a_registration_with_another_cluster_id_is_refused() {
    let mut h = H::new();
    let mut req = registration(1, 0, None);
    req.cluster_id = KStr::from("other-cluster");
    let out = h.peek(|c, image, now| c.register_broker(image, &req, 4, now));
    assert_eq!(
        code(out.response.error_code),
        ErrorCode::INCONSISTENT_CLUSTER_ID
    );
    assert_eq!(out.response.broker_epoch, -1);
    assert!(out.records.is_empty());
}

#[test]
fn broker_epochs_only_grow_even_after_a_broker_is_unregistered() {
    let mut h = H::new();
    let e1 = h.register(1, None);
    let e2 = h.register(2, None);
    assert!(e2 > e1);
    // The newest broker goes away; its epoch must not be handed out again.
    let offset = h.image.offset() + 1;
    let unregister = MetadataRecord::UnregisterBroker(UnregisterBrokerRecord {
        broker_id: 2,
        broker_epoch: e2,
        ..Default::default()
    });
    h.image.apply_batch(offset, &[unregister]).unwrap();
    let e3 = h.register(3, None);
    assert!(e3 > e2, "{e3} after {e2}");
}

#[test]
fn a_heartbeat_unfences_once_the_broker_caught_up_with_its_registration() {
    let mut h = H::new();
    let epoch = h.register(1, None);
    let registered = h.image.broker(1).unwrap().registered_at;
    let behind = BrokerHeartbeatRequest {
        broker_id: 1,
        broker_epoch: epoch,
        current_metadata_offset: i64::try_from(registered).unwrap() - 1,
        ..Default::default()
    };
    let r = h.heartbeat_req(&behind);
    assert!(r.is_fenced && !r.is_caught_up && !r.should_shut_down);
    assert!(h.image.broker(1).unwrap().fenced);
    // Caught up but asking to stay fenced.
    let r = h.heartbeat(1, true, false);
    assert!(r.is_fenced && r.is_caught_up);
    assert!(h.image.broker(1).unwrap().fenced);
    let r = h.heartbeat(1, false, false);
    assert!(!r.is_fenced && r.is_caught_up);
    assert!(
        matches!(h.last_batch(), [MetadataRecord::UnfenceBroker(u)] if u.id == 1 && u.epoch == epoch)
    );
    assert!(!h.image.broker(1).unwrap().fenced);
    // Staying unfenced writes nothing.
    let before = h.log.len();
    assert!(!h.heartbeat(1, false, false).is_fenced);
    assert_eq!(h.log.len(), before);
}

#[test]
fn heartbeats_with_an_unknown_broker_or_a_stale_epoch_are_refused() {
    let mut h = H::new();
    let epoch = h.register(1, None);
    for (id, e) in [(7, epoch), (1, epoch - 1), (1, epoch + 1)] {
        let req = BrokerHeartbeatRequest {
            broker_id: id,
            broker_epoch: e,
            current_metadata_offset: 100,
            ..Default::default()
        };
        let out = h.peek(|c, image, now| c.heartbeat(image, &req, 1, now));
        assert_eq!(
            code(out.response.error_code),
            ErrorCode::STALE_BROKER_EPOCH,
            "{id} {e}"
        );
        assert!(out.records.is_empty());
    }
    assert!(h.image.broker(1).unwrap().fenced);
}

#[test]
fn an_expired_session_fences_the_broker_and_leaders_fail_over_in_preferred_order() {
    let mut h = H::new();
    h.brokers(&[1, 2, 3]);
    h.assigned("t", &[&[1, 2, 3], &[1, 3, 2], &[3, 1, 2], &[2, 3, 1]]);
    let before: Vec<PartitionImage> = (0..4).map(|i| h.partition("t", i)).collect();
    // 2 and 3 keep heartbeating, 1 stops.
    h.advance(SESSION - 1_000, &[2, 3]);
    assert!(
        !h.image.broker(1).unwrap().fenced,
        "fenced before its session ran out"
    );
    h.advance(2_000, &[2, 3]);
    assert!(h.image.broker(1).unwrap().fenced);
    let after: Vec<PartitionImage> = (0..4).map(|i| h.partition("t", i)).collect();
    // Led by 1: the first replica in the ISR that is alive, in replica order.
    assert_eq!((after[0].leader, after[0].isr.clone()), (2, vec![2, 3]));
    assert_eq!((after[1].leader, after[1].isr.clone()), (3, vec![3, 2]));
    // Not led by 1: leader kept, 1 out of the ISR.
    assert_eq!((after[2].leader, after[2].isr.clone()), (3, vec![3, 2]));
    assert_eq!((after[3].leader, after[3].isr.clone()), (2, vec![2, 3]));
    for (b, a) in before.iter().zip(&after) {
        assert_eq!(a.partition_epoch, b.partition_epoch + 1);
        let expected = if b.leader == 1 {
            b.leader_epoch + 1
        } else {
            b.leader_epoch
        };
        assert_eq!(a.leader_epoch, expected);
    }
    // The fence record comes after the partition changes, in one batch.
    let batch = h
        .log
        .iter()
        .find(|(_, r)| {
            r.iter()
                .any(|x| matches!(x, MetadataRecord::FenceBroker(_)))
        })
        .unwrap();
    assert!(matches!(batch.1.last(), Some(MetadataRecord::FenceBroker(f)) if f.id == 1));
    assert_eq!(batch.1.len(), 5);
}

#[test]
fn the_next_deadline_is_the_earliest_session_of_an_unfenced_broker() {
    let mut h = H::new();
    assert_eq!(h.c.next_deadline(), None);
    h.register(1, None);
    assert_eq!(
        h.c.next_deadline(),
        None,
        "a fenced broker has no session to expire"
    );
    h.heartbeat(1, false, false);
    assert_eq!(h.c.next_deadline(), Some(T0 + SESSION));
    h.register(2, None);
    h.now += 500;
    h.heartbeat(2, false, false);
    h.now += 500;
    h.heartbeat(1, false, false);
    assert_eq!(h.c.next_deadline(), Some(T0 + 500 + SESSION));
    // Nothing to do before it.
    assert!(h.c.tick(&h.image, T0 + 500 + SESSION - 1).is_empty());
    let records = h.c.tick(&h.image, T0 + 500 + SESSION);
    assert!(matches!(records.as_slice(), [MetadataRecord::FenceBroker(f)] if f.id == 2));
    assert_eq!(h.c.next_deadline(), Some(T0 + 1_000 + SESSION));
}

#[test]
fn a_new_controller_gives_every_broker_a_full_session() {
    let mut h = H::new();
    h.brokers(&[1, 2]);
    let later = h.now + SESSION - 1;
    let mut c = Controller::new(config(), &h.image, later);
    assert_eq!(c.next_deadline(), Some(later + SESSION));
    assert!(c.tick(&h.image, later + SESSION - 1).is_empty());
    assert_eq!(c.tick(&h.image, later + SESSION).len(), 2);
}

#[test]
fn the_last_isr_member_fenced_leaves_no_leader_until_it_returns() {
    let mut h = H::new();
    h.brokers(&[1, 2]);
    h.assigned("t", &[&[1, 2]]);
    // 2 dies first: the ISR shrinks to 1.
    h.advance(SESSION + 1_000, &[1]);
    assert_eq!(h.partition("t", 0).isr, vec![1]);
    let p0 = h.partition("t", 0);
    // Then 1: no one is left in the ISR; it stays the ISR, without a leader.
    h.advance(SESSION + 1_000, &[]);
    let p = h.partition("t", 0);
    assert_eq!((p.leader, p.isr.clone()), (NO_LEADER, vec![1]));
    assert_eq!(p.leader_epoch, p0.leader_epoch + 1);
    // 2 comes back: it is not in the ISR, so it cannot lead (no unclean election).
    h.heartbeat(2, false, false);
    assert!(!h.image.broker(2).unwrap().fenced);
    assert_eq!(h.partition("t", 0).leader, NO_LEADER);
    // 1 comes back and leads again.
    let r = h.heartbeat(1, false, false);
    assert!(!r.is_fenced);
    let p = h.partition("t", 0);
    assert_eq!((p.leader, p.isr.clone()), (1, vec![1]));
    assert_eq!(p.leader_epoch, p0.leader_epoch + 2);
    assert!(matches!(
        h.last_batch(),
        [MetadataRecord::UnfenceBroker(_), MetadataRecord::PartitionChange(c)] if c.leader == 1 && c.isr.is_none()
    ));
}

#[test]
fn unclean_election_picks_the_first_live_replica_when_enabled() {
    let mut cfg = config();
    cfg.unclean_leader_election = true;
    let mut h = H::with(cfg);
    h.brokers(&[1, 2, 3]);
    h.assigned("t", &[&[1, 2, 3]]);
    h.advance(SESSION + 1_000, &[1]);
    assert_eq!(h.partition("t", 0).isr, vec![1]);
    // Broker 2 and 3 return (unfenced), then 1, the only ISR member, dies.
    h.heartbeat(2, false, false);
    h.heartbeat(3, false, false);
    h.advance(SESSION + 1_000, &[2, 3]);
    let p = h.partition("t", 0);
    assert_eq!(
        (p.leader, p.isr.clone(), p.leader_recovery_state),
        (2, vec![2], RECOVERING)
    );
}

#[test]
fn a_topic_config_can_enable_unclean_election_alone() {
    let mut h = H::new();
    h.brokers(&[1, 2]);
    h.assigned("clean", &[&[1, 2]]);
    let r = h.create(
        &with_config(
            assigned_req("dirty", &[&[1, 2]]),
            "unclean.leader.election.enable",
            "true",
        ),
        0,
    );
    assert_eq!(r[0].error_code, 0);
    assert_eq!(
        h.image
            .config(RESOURCE_TOPIC, "dirty", "unclean.leader.election.enable"),
        Some("true")
    );
    h.advance(SESSION + 1_000, &[1]);
    h.heartbeat(2, false, false);
    h.advance(SESSION + 1_000, &[2]);
    assert_eq!(h.partition("clean", 0).leader, NO_LEADER);
    assert_eq!(h.partition("dirty", 0).leader, 2);
}

#[test]
fn controlled_shutdown_moves_leadership_then_lets_the_broker_go() {
    let mut h = H::new();
    h.brokers(&[1, 2, 3]);
    h.assigned("t", &[&[1, 2, 3], &[2, 1, 3]]);
    h.assigned("solo", &[&[1]]);
    let r = h.heartbeat(1, false, true);
    assert!(!r.should_shut_down && !r.is_fenced);
    assert!(
        matches!(h.last_batch().first(), Some(MetadataRecord::BrokerRegistrationChange(c)) if c.in_controlled_shutdown == 1)
    );
    assert!(h.image.broker(1).unwrap().in_controlled_shutdown);
    let p0 = h.partition("t", 0);
    assert_eq!((p0.leader, p0.isr.clone()), (2, vec![2, 3]));
    let p1 = h.partition("t", 1);
    assert_eq!((p1.leader, p1.isr.clone()), (2, vec![2, 3]));
    // Its only replica: no one else can lead, it stays the ISR.
    let p2 = h.partition("solo", 0);
    assert_eq!((p2.leader, p2.isr.clone()), (NO_LEADER, vec![1]));
    // A broker shutting down gets no new replicas.
    h.topic("after", 6, 2);
    assert!(
        h.image
            .partitions_of(1)
            .iter()
            .all(|(t, _, _)| *t != "after")
    );
    // The others have not heartbeated since: not yet.
    let r = h.heartbeat(1, false, true);
    assert!(!r.should_shut_down);
    h.heartbeat(2, false, false);
    h.heartbeat(3, false, false);
    let r = h.heartbeat(1, false, true);
    assert!(r.should_shut_down && r.is_fenced);
    assert!(matches!(h.last_batch().last(), Some(MetadataRecord::FenceBroker(f)) if f.id == 1));
    assert!(h.image.broker(1).unwrap().fenced);
}

#[test]
fn a_broker_that_leads_nothing_shuts_down_at_once() {
    let mut h = H::new();
    h.brokers(&[1, 2]);
    h.assigned("t", &[&[2, 1]]);
    let r = h.heartbeat(1, false, true);
    assert!(r.should_shut_down && r.is_fenced);
    assert_eq!(h.partition("t", 0).isr, vec![2]);
    assert!(h.image.broker(1).unwrap().fenced);
}

#[test]
fn a_fenced_broker_may_shut_down_at_once() {
    let mut h = H::new();
    h.register(1, None);
    let out = h.peek(|c, image, now| {
        let req = BrokerHeartbeatRequest {
            broker_id: 1,
            broker_epoch: image.broker(1).unwrap().epoch,
            current_metadata_offset: 0,
            want_shut_down: true,
            ..Default::default()
        };
        c.heartbeat(image, &req, 1, now)
    });
    assert!(out.response.should_shut_down && out.response.is_fenced);
    assert!(out.records.is_empty());
}

#[test]
fn asking_to_be_fenced_takes_the_broker_out_of_isrs() {
    let mut h = H::new();
    h.brokers(&[1, 2]);
    h.assigned("t", &[&[1, 2]]);
    let r = h.heartbeat(1, true, false);
    assert!(r.is_fenced && !r.should_shut_down);
    let p = h.partition("t", 0);
    assert_eq!((p.leader, p.isr.clone()), (2, vec![2]));
}
