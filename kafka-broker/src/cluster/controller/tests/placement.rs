//! Replica placement: spread, racks, fenced brokers, explicit assignments.

use std::collections::{BTreeMap, BTreeSet};

use kafka_protocol::error_code::ErrorCode;

use super::super::placement::{Candidate, place};
use super::*;

fn plain(ids: &[i32]) -> Vec<Candidate> {
    ids.iter()
        .map(|id| Candidate {
            id: *id,
            rack: None,
        })
        .collect()
}

fn racked(brokers: &[(i32, &str)]) -> Vec<Candidate> {
    brokers
        .iter()
        .map(|(id, rack)| Candidate {
            id: *id,
            rack: Some((*rack).to_owned()),
        })
        .collect()
}

/// (leaders per broker, replicas per broker); checks that every partition's replicas are
/// distinct and `rf` long.
fn counts(assignment: &[Vec<i32>], rf: usize) -> (BTreeMap<i32, usize>, BTreeMap<i32, usize>) {
    let mut leaders = BTreeMap::new();
    let mut replicas = BTreeMap::new();
    for a in assignment {
        assert_eq!(a.len(), rf, "{a:?}");
        let distinct: BTreeSet<i32> = a.iter().copied().collect();
        assert_eq!(distinct.len(), rf, "replicas repeat: {a:?}");
        *leaders.entry(a[0]).or_insert(0) += 1;
        for r in a {
            *replicas.entry(*r).or_insert(0) += 1;
        }
    }
    (leaders, replicas)
}

#[test]
fn three_brokers_share_leaders_and_replicas_evenly() {
    let brokers = plain(&[1, 2, 3]);
    for start in 0..3 {
        let a = place(&brokers, start, 6, 2).unwrap();
        let (leaders, replicas) = counts(&a, 2);
        assert_eq!(
            leaders,
            BTreeMap::from([(1, 2), (2, 2), (3, 2)]),
            "start {start}: {a:?}"
        );
        assert_eq!(
            replicas,
            BTreeMap::from([(1, 4), (2, 4), (3, 4)]),
            "start {start}: {a:?}"
        );
        // The first replica rotates from the start.
        let firsts: Vec<i32> = a.iter().map(|r| r[0]).collect();
        let expected: Vec<i32> = (0..6)
            .map(|i| [1, 2, 3][(start as usize + i) % 3])
            .collect();
        assert_eq!(firsts, expected);
    }
}

#[test]
fn five_brokers_share_leaders_and_replicas_evenly() {
    let brokers = plain(&[10, 11, 12, 13, 14]);
    let a = place(&brokers, 7, 10, 3).unwrap();
    let (leaders, replicas) = counts(&a, 3);
    assert!(leaders.values().all(|n| *n == 2), "{leaders:?}");
    assert!(replicas.values().all(|n| *n == 6), "{replicas:?}");
    assert_eq!(replicas.len(), 5);
    // Every partition's follower sets are not all the same.
    let sets: BTreeSet<BTreeSet<i32>> = a.iter().map(|r| r.iter().copied().collect()).collect();
    assert!(sets.len() >= 5);
}

#[test]
fn replicas_spread_over_two_racks_before_a_rack_repeats() {
    let brokers = racked(&[(1, "a"), (2, "a"), (3, "a"), (4, "b"), (5, "b"), (6, "b")]);
    let rack = |id: i32| if id <= 3 { "a" } else { "b" };
    for rf in [2, 3, 4] {
        let a = place(&brokers, 5, 12, rf).unwrap();
        let (leaders, replicas) = counts(&a, rf);
        assert!(leaders.values().all(|n| *n == 2), "rf {rf}: {leaders:?}");
        assert!(
            replicas.values().all(|n| *n == 2 * rf),
            "rf {rf}: {replicas:?}"
        );
        for r in &a {
            // Alternating: a, b, a, b...
            for (i, pair) in r.windows(2).enumerate() {
                assert_ne!(rack(pair[0]), rack(pair[1]), "rf {rf}: {r:?} at {i}");
            }
        }
    }
}

#[test]
fn an_uneven_rack_still_gets_one_replica_of_each_partition() {
    let brokers = racked(&[(1, "a"), (2, "a"), (3, "a"), (4, "b")]);
    let a = place(&brokers, 0, 8, 2).unwrap();
    counts(&a, 2);
    for r in &a {
        assert!(r.contains(&4), "{r:?} has no replica on rack b");
    }
    // Three replicas: rack b once, rack a twice.
    for r in place(&brokers, 3, 8, 3).unwrap() {
        assert_eq!(r.iter().filter(|id| **id == 4).count(), 1, "{r:?}");
    }
}

#[test]
fn a_replication_factor_above_the_brokers_is_refused() {
    let e = place(&plain(&[1, 2]), 0, 1, 3).unwrap_err();
    assert_eq!(e.error_code(), ErrorCode::INVALID_REPLICATION_FACTOR);
    assert!(place(&plain(&[1, 2]), 0, 1, 0).is_err());
}

#[test]
fn create_topics_places_on_active_brokers_only() {
    let mut h = H::new();
    h.brokers(&[1, 2, 3, 4]);
    h.register(5, None); // registered, never unfenced
    h.heartbeat(4, false, true); // shutting down: leads nothing, so it stops at once
    assert!(h.image.broker(4).unwrap().fenced);
    let r = h.create(&create_req("t", 9, 2), 1);
    assert_eq!(r[0].error_code, 0, "{:?}", r[0].error_message);
    let mut replicas = BTreeMap::new();
    for p in h.image.topic("t").unwrap().partitions.values() {
        assert_eq!(p.leader, p.replicas[0]);
        assert_eq!(p.isr, p.replicas);
        assert_eq!((p.leader_epoch, p.partition_epoch), (0, 0));
        for r in &p.replicas {
            *replicas.entry(*r).or_insert(0) += 1;
        }
    }
    assert_eq!(replicas, BTreeMap::from([(1, 6), (2, 6), (3, 6)]));
}

#[test]
fn a_replication_factor_above_the_live_brokers_is_refused_naming_both() {
    let mut h = H::new();
    h.brokers(&[1, 2]);
    h.register(3, None); // fenced: does not count
    let out = h.peek(|c, image, _| c.create_topics(image, &create_req("t", 1, 3), 7, 0));
    let t = &out.response.topics[0];
    assert_eq!(code(t.error_code), ErrorCode::INVALID_REPLICATION_FACTOR);
    let message = t.error_message.as_ref().unwrap().to_string();
    assert!(message.contains('3') && message.contains('2'), "{message}");
    assert!(out.records.is_empty());
    assert!(h.image.topic("t").is_none());
}

#[test]
fn racks_of_registered_brokers_are_used() {
    let mut h = H::new();
    h.racked(&[(1, "east"), (2, "east"), (3, "west"), (4, "west")]);
    h.topic("t", 8, 2);
    for p in h.image.topic("t").unwrap().partitions.values() {
        let racks: BTreeSet<String> = p
            .replicas
            .iter()
            .map(|r| h.image.broker(*r).unwrap().rack.clone().unwrap())
            .collect();
        assert_eq!(racks.len(), 2, "{:?}", p.replicas);
    }
}

#[test]
fn explicit_assignments_are_honoured_with_fenced_replicas_out_of_the_isr() {
    let mut h = H::new();
    h.brokers(&[1, 2, 3]);
    h.register(4, None); // fenced
    h.assigned("t", &[&[3, 1], &[4, 2]]);
    let p0 = h.partition("t", 0);
    assert_eq!(
        (p0.replicas.clone(), p0.isr.clone(), p0.leader),
        (vec![3, 1], vec![3, 1], 3)
    );
    let p1 = h.partition("t", 1);
    assert_eq!(
        (p1.replicas.clone(), p1.isr.clone(), p1.leader),
        (vec![4, 2], vec![2], 2)
    );
}

#[test]
fn bad_explicit_assignments_are_refused() {
    let mut h = H::new();
    h.brokers(&[1, 2, 3]);
    h.register(4, None);
    let cases: Vec<(CreateTopicsRequest, ErrorCode)> = vec![
        (
            assigned_req("t", &[&[1, 1]]),
            ErrorCode::INVALID_REPLICA_ASSIGNMENT,
        ),
        (
            assigned_req("t", &[&[1, 9]]),
            ErrorCode::INVALID_REPLICA_ASSIGNMENT,
        ),
        (
            assigned_req("t", &[&[1, 2], &[3]]),
            ErrorCode::INVALID_REPLICA_ASSIGNMENT,
        ),
        (
            assigned_req("t", &[&[]]),
            ErrorCode::INVALID_REPLICA_ASSIGNMENT,
        ),
        (
            assigned_req("t", &[&[4]]),
            ErrorCode::INVALID_REPLICA_ASSIGNMENT,
        ),
        (
            {
                let mut r = assigned_req("t", &[&[1], &[2]]);
                r.topics[0].assignments[1].partition_index = 5;
                r
            },
            ErrorCode::INVALID_REPLICA_ASSIGNMENT,
        ),
        (
            {
                let mut r = assigned_req("t", &[&[1]]);
                r.topics[0].num_partitions = 1;
                r
            },
            ErrorCode::INVALID_REQUEST,
        ),
    ];
    for (req, expected) in cases {
        let out = h.peek(|c, image, _| c.create_topics(image, &req, 7, 0));
        let t = &out.response.topics[0];
        assert_eq!(
            code(t.error_code),
            expected,
            "{:?}: {:?}",
            req.topics[0].assignments,
            t.error_message
        );
        assert!(t.error_message.is_some());
        assert!(out.records.is_empty());
    }
}
