//! The consumer state on crafted answers: buffer cap, fetch-ahead, errors, stale answers,
//! pause, validation after a leader change.

use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::FetchResponse;
use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use kafka_protocol::record::{Compression, RecordBatchBuilder};

use super::*;
use crate::subscription::PositionState;
use crate::types::OffsetReset;

fn tp(p: i32) -> TopicPartition {
    TopicPartition::new("t", p)
}

fn settings(cap: usize, fetch_max: usize, part_max: usize) -> StateSettings {
    StateSettings {
        buffer_cap: cap,
        fetch_max_bytes: fetch_max,
        max_partition_fetch_bytes: part_max,
        read: ReadOptions {
            isolation: IsolationLevel::ReadUncommitted,
            check_crcs: true,
            max_decompressed: 1 << 20,
        },
        fetch: FetchSettings {
            max_wait_ms: 500,
            min_bytes: 1,
            isolation: IsolationLevel::ReadUncommitted,
            rack: String::new(),
        },
        retry_backoff: Duration::from_millis(100),
        preferred_replica_ttl: Duration::from_secs(300),
    }
}

/// A state with partitions `0..n` of topic "t" at position 0, partition p led by node
/// `1 + p % nodes`, epoch 0.
fn state(n: i32, nodes: i32, reset: OffsetReset, s: StateSettings) -> ConsumerState {
    let subs = SubscriptionState::new(
        reset,
        false,
        Duration::from_millis(100),
        Duration::from_secs(1),
    );
    let mut st = ConsumerState::with_settings(subs, s);
    st.assign((0..n).map(tp));
    for p in 0..n {
        st.subs.update_leader(
            &tp(p),
            LeaderInfo {
                node: 1 + p % nodes,
                epoch: Some(0),
                topic_id: kafka_protocol::Uuid::ZERO,
            },
        );
        st.seek(&tp(p), 0, None).unwrap();
    }
    st
}

fn records(first: i64, n: i64) -> Bytes {
    let mut b = RecordBatchBuilder::new()
        .base_offset(first)
        .partition_leader_epoch(0)
        .compression(Compression::None);
    for i in 0..n {
        b.append(i, None, Some(format!("v{}", first + i).as_bytes()), &[])
            .unwrap();
    }
    b.build().unwrap()
}

fn answer(parts: Vec<(i32, ErrorCode, Option<Bytes>)>) -> FetchResponse {
    FetchResponse {
        responses: vec![FetchableTopicResponse {
            topic: KStr::from_static("t"),
            partitions: parts
                .into_iter()
                .map(|(p, code, recs)| PartitionData {
                    partition_index: p,
                    error_code: code.code(),
                    high_watermark: 100,
                    last_stable_offset: 100,
                    log_start_offset: 0,
                    preferred_read_replica: -1,
                    records: recs,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn drain_offsets(st: &mut ConsumerState, max: usize) -> Result<Vec<(i32, i64)>, ConsumerError> {
    let mut out = Vec::new();
    st.drain(max, &mut out)?;
    Ok(out.iter().map(|r| (r.partition, r.offset)).collect())
}

#[test]
fn fetches_stay_within_the_buffer_cap() {
    let now = Instant::now();
    let mut st = state(3, 2, OffsetReset::Earliest, settings(1000, 600, 400));
    let plans = st.plan_fetches(now, |_| true);
    // Node 1 leads partitions 0 and 2, node 2 partition 1; they share the cap.
    assert_eq!(plans.len(), 2);
    assert_eq!((plans[0].node, plans[0].max_bytes), (1, 500));
    assert_eq!(plans[0].partitions.len(), 2);
    assert!(plans[0].partitions.iter().all(|p| p.max_bytes == 400));
    assert_eq!((plans[1].node, plans[1].max_bytes), (2, 500));
    assert_eq!(st.metrics().reserved_bytes, 1000);
    // Nothing more while the whole cap is reserved.
    assert!(st.plan_fetches(now, |_| true).is_empty());
    // Node 1 answers with data for partition 0.
    let data = records(0, 5);
    let size = data.len();
    let resp = answer(vec![
        (0, ErrorCode::NONE, Some(data)),
        (2, ErrorCode::NONE, None),
    ]);
    assert!(st.on_fetch(&plans[0], Ok((resp, 12)), Duration::from_millis(3), now));
    let m = st.metrics();
    assert_eq!((m.buffered_bytes, m.reserved_bytes), (size, 500));
    assert!(m.buffered_bytes + m.reserved_bytes <= m.buffer_capacity);
    // What is left (1000 - 500 - size) may or may not make a useful fetch, but the cap holds.
    for plan in st.plan_fetches(now, |_| true) {
        assert!(
            usize::try_from(plan.max_bytes).unwrap() + size + 500 <= 1000,
            "{plan:?}"
        );
    }
    // Handing the data out frees the space.
    assert_eq!(
        drain_offsets(&mut st, 100).unwrap(),
        (0..5).map(|o| (0, o)).collect::<Vec<_>>()
    );
    assert_eq!(st.buffered_bytes(), 0);
    assert_eq!(st.subs.get(&tp(0)).unwrap().position().unwrap().offset, 5);
    assert_eq!(st.lag(&tp(0)), Some(95));
    let m = st.metrics();
    assert_eq!((m.records_consumed, m.fetch_requests), (5, 1));
    assert_eq!(m.buffered_bytes_max, size);
}

#[test]
fn fetching_ahead_keeps_order_and_max_records() {
    let now = Instant::now();
    let mut st = state(
        1,
        1,
        OffsetReset::Earliest,
        settings(1 << 20, 1 << 20, 1 << 20),
    );
    let plan = st.plan_fetches(now, |_| true).remove(0);
    assert_eq!(plan.partitions[0].fetch_offset, 0);
    st.on_fetch(
        &plan,
        Ok((answer(vec![(0, ErrorCode::NONE, Some(records(0, 5)))]), 12)),
        Duration::ZERO,
        now,
    );
    // The next fetch starts where the buffered data ends, before anything is handed out.
    let plan = st.plan_fetches(now, |_| true).remove(0);
    assert_eq!(plan.partitions[0].fetch_offset, 5);
    st.on_fetch(
        &plan,
        Ok((answer(vec![(0, ErrorCode::NONE, Some(records(5, 5)))]), 12)),
        Duration::ZERO,
        now,
    );
    assert_eq!(
        drain_offsets(&mut st, 3).unwrap(),
        vec![(0, 0), (0, 1), (0, 2)]
    );
    assert_eq!(st.subs.get(&tp(0)).unwrap().position().unwrap().offset, 3);
    assert_eq!(
        drain_offsets(&mut st, 100).unwrap(),
        (3..10).map(|o| (0, o)).collect::<Vec<_>>()
    );
    assert_eq!(st.buffered_bytes(), 0);
    // A seek drops what was fetched ahead, and an answer to a fetch planned before it.
    let plan = st.plan_fetches(now, |_| true).remove(0);
    assert_eq!(plan.partitions[0].fetch_offset, 10);
    st.seek(&tp(0), 2, None).unwrap();
    assert!(!st.on_fetch(
        &plan,
        Ok((answer(vec![(0, ErrorCode::NONE, Some(records(10, 5)))]), 12)),
        Duration::ZERO,
        now
    ));
    assert_eq!(st.buffered_bytes(), 0);
    let plan = st.plan_fetches(now, |_| true).remove(0);
    assert_eq!(plan.partitions[0].fetch_offset, 2);
}

#[test]
fn paused_partitions_keep_their_data_and_are_not_fetched() {
    let now = Instant::now();
    let mut st = state(
        2,
        1,
        OffsetReset::Earliest,
        settings(1 << 20, 1 << 20, 1 << 20),
    );
    let plan = st.plan_fetches(now, |_| true).remove(0);
    let resp = answer(vec![
        (0, ErrorCode::NONE, Some(records(0, 2))),
        (1, ErrorCode::NONE, Some(records(0, 2))),
    ]);
    st.on_fetch(&plan, Ok((resp, 12)), Duration::ZERO, now);
    st.subs.pause(&tp(0)).unwrap();
    assert_eq!(drain_offsets(&mut st, 100).unwrap(), vec![(1, 0), (1, 1)]);
    let plan = st.plan_fetches(now, |_| true).remove(0);
    assert_eq!(plan.partitions.len(), 1);
    assert_eq!(plan.partitions[0].tp, tp(1));
    st.subs.resume(&tp(0)).unwrap();
    assert_eq!(drain_offsets(&mut st, 100).unwrap(), vec![(0, 0), (0, 1)]);
}

#[test]
fn partition_errors() {
    let now = Instant::now();
    let mut st = state(
        4,
        1,
        OffsetReset::Latest,
        settings(1 << 20, 1 << 20, 1 << 20),
    );
    let plan = st.plan_fetches(now, |_| true).remove(0);
    let resp = answer(vec![
        (0, ErrorCode::OFFSET_OUT_OF_RANGE, None),
        (1, ErrorCode::NOT_LEADER_OR_FOLLOWER, None),
        (2, ErrorCode::TOPIC_AUTHORIZATION_FAILED, None),
        (3, ErrorCode::FENCED_LEADER_EPOCH, None),
    ]);
    st.on_fetch(&plan, Ok((resp, 12)), Duration::ZERO, now);
    assert!(matches!(
        st.subs.get(&tp(0)).unwrap().state(),
        PositionState::AwaitingReset(ResetTarget::Latest)
    ));
    assert!(st.metadata_wanted);
    for p in [1, 2, 3] {
        assert!(
            st.subs.get(&tp(p)).unwrap().retry_at.is_some(),
            "partition {p} backs off"
        );
    }
    let e = st.take_error().unwrap();
    assert_eq!(e.error_code(), Some(ErrorCode::TOPIC_AUTHORIZATION_FAILED));
    assert!(st.take_error().is_none());
    // The reset is a lookup to the leader; nothing is fetched before the backoff.
    let lookups = st.lookups(now);
    assert_eq!(lookups.len(), 1);
    assert_eq!(
        lookups[0].kind,
        crate::subscription::LookupKind::Reset(ResetTarget::Latest)
    );
    assert!(st.plan_fetches(now, |_| true).is_empty());
    let later = now + Duration::from_millis(150);
    assert_eq!(st.plan_fetches(later, |_| true)[0].partitions.len(), 3);
    st.on_lookup(
        &lookups[0],
        LookupResult::Reset(Ok(ListedOffset {
            offset: 100,
            timestamp: None,
            leader_epoch: Some(0),
        })),
        later,
    );
    assert_eq!(st.subs.get(&tp(0)).unwrap().position().unwrap().offset, 100);
    assert_eq!(st.metrics().offset_resets, 1);
}

#[test]
fn failed_requests_back_off_the_broker() {
    let now = Instant::now();
    let mut st = state(
        1,
        1,
        OffsetReset::Earliest,
        settings(1 << 20, 1 << 20, 1 << 20),
    );
    let plan = st.plan_fetches(now, |_| true).remove(0);
    let lost = ConsumerError::Net(kafka_net::NetError::Closed(Some("test".into())));
    assert!(!st.on_fetch(&plan, Err(lost), Duration::ZERO, now));
    assert!(st.metadata_wanted);
    assert_eq!(st.metrics().fetch_errors, 1);
    assert_eq!(st.metrics().reserved_bytes, 0);
    assert!(st.plan_fetches(now, |_| true).is_empty());
    assert!(st.next_deadline(now).is_some());
    assert_eq!(
        st.plan_fetches(now + Duration::from_millis(150), |_| true)
            .len(),
        1
    );
}

#[test]
fn corrupt_data_after_good_records() {
    let now = Instant::now();
    let mut st = state(
        1,
        1,
        OffsetReset::Earliest,
        settings(1 << 20, 1 << 20, 1 << 20),
    );
    let plan = st.plan_fetches(now, |_| true).remove(0);
    let mut bad = records(3, 2).to_vec();
    let last = bad.len() - 1;
    bad[last] ^= 1;
    let data = Bytes::from([records(0, 3).to_vec(), bad].concat());
    st.on_fetch(
        &plan,
        Ok((answer(vec![(0, ErrorCode::NONE, Some(data))]), 12)),
        Duration::ZERO,
        now,
    );
    // The good records come first, the error with the next call; the position stays at
    // the bad batch and fetching starts there again.
    assert_eq!(
        drain_offsets(&mut st, 100).unwrap(),
        vec![(0, 0), (0, 1), (0, 2)]
    );
    assert!(matches!(
        st.take_error(),
        Some(ConsumerError::CorruptRecord { offset: 3, .. })
    ));
    let p = st.subs.get(&tp(0)).unwrap();
    assert_eq!((p.position().unwrap().offset, p.fetch_offset), (3, Some(3)));
    assert_eq!(st.buffered_bytes(), 0);
}

#[test]
fn leader_change_validates_the_position_and_drops_buffered_data() {
    let now = Instant::now();
    let mut st = state(
        1,
        1,
        OffsetReset::Earliest,
        settings(1 << 20, 1 << 20, 1 << 20),
    );
    let plan = st.plan_fetches(now, |_| true).remove(0);
    st.on_fetch(
        &plan,
        Ok((answer(vec![(0, ErrorCode::NONE, Some(records(0, 10)))]), 12)),
        Duration::ZERO,
        now,
    );
    assert_eq!(drain_offsets(&mut st, 8).unwrap().len(), 8);
    // Records of epoch 0 were handed out up to 7; a new leader with epoch 1 appears.
    let pos = st.subs.get(&tp(0)).unwrap().position().unwrap();
    assert_eq!((pos.offset, pos.offset_epoch), (8, Some(0)));
    let mut meta = kafka_net::MetadataSnapshot {
        version: 99,
        ..Default::default()
    };
    meta.topics.insert(
        "t".into(),
        kafka_net::TopicInfo {
            name: "t".into(),
            topic_id: kafka_protocol::Uuid::ZERO,
            is_internal: false,
            partitions: vec![kafka_net::PartitionInfo {
                partition: 0,
                leader: 2,
                leader_epoch: 1,
                replicas: vec![1, 2],
                isr: vec![2],
                offline: vec![],
                error: ErrorCode::NONE,
            }],
            error: ErrorCode::NONE,
        },
    );
    st.apply_metadata(&meta);
    assert_eq!(st.buffered_bytes(), 0);
    assert!(drain_offsets(&mut st, 100).unwrap().is_empty());
    assert!(st.plan_fetches(now, |_| true).is_empty());
    let lookups = st.lookups(now);
    assert_eq!(lookups.len(), 1);
    assert_eq!(lookups[0].node, 2);
    assert_eq!(lookups[0].leader_epoch, Some(1));
    assert_eq!(
        lookups[0].kind,
        crate::subscription::LookupKind::Validate { epoch: 0 }
    );
    // The new leader's log ends epoch 0 at 6: records 6 and 7 are gone.
    st.on_lookup(&lookups[0], LookupResult::Validated(Ok(Some((6, 0)))), now);
    assert_eq!(st.metrics().log_truncations, 1);
    let plan = st.plan_fetches(now, |_| true).remove(0);
    assert_eq!(plan.node, 2);
    assert_eq!(plan.partitions[0].fetch_offset, 6);
    assert_eq!(plan.partitions[0].current_leader_epoch, Some(1));
}

#[test]
fn auto_commit_offers_only_moved_positions() {
    let now = Instant::now();
    let mut st = state(
        2,
        1,
        OffsetReset::Earliest,
        settings(1 << 20, 1 << 20, 1 << 20),
    );
    assert_eq!(st.uncommitted_positions().len(), 2);
    for (tp, om) in st.uncommitted_positions() {
        st.last_committed.insert(tp, om);
    }
    assert!(st.uncommitted_positions().is_empty());
    let plan = st.plan_fetches(now, |_| true).remove(0);
    st.on_fetch(
        &plan,
        Ok((answer(vec![(1, ErrorCode::NONE, Some(records(0, 4)))]), 12)),
        Duration::ZERO,
        now,
    );
    // Buffered data does not count: only what was handed out.
    assert!(st.uncommitted_positions().is_empty());
    drain_offsets(&mut st, 3).unwrap();
    let moved = st.uncommitted_positions();
    assert_eq!(moved.len(), 1);
    assert_eq!(moved[&tp(1)].offset, 3);
}

fn with_preferred(mut resp: FetchResponse, replica: i32) -> FetchResponse {
    for p in &mut resp.responses[0].partitions {
        p.preferred_read_replica = replica;
    }
    resp
}

#[test]
fn the_preferred_read_replica_is_followed_until_it_fails() {
    let now = Instant::now();
    let mut st = state(
        1,
        1,
        OffsetReset::Earliest,
        settings(1 << 20, 1 << 20, 1 << 20),
    );
    let plans = st.plan_fetches(now, |_| true);
    assert_eq!(plans[0].node, 1);
    // The leader names replica 3 and sends no records.
    let resp = with_preferred(answer(vec![(0, ErrorCode::NONE, None)]), 3);
    assert!(!st.on_fetch(&plans[0], Ok((resp, 12)), Duration::ZERO, now));
    // A replica the metadata does not know is not used.
    let plans = st.plan_fetches(now, |n| n != 3);
    assert_eq!(plans[0].node, 1);
    st.on_fetch(&plans[0], Ok((answer(vec![]), 12)), Duration::ZERO, now);
    let plans = st.plan_fetches(now, |_| true);
    assert_eq!(plans[0].node, 3);
    let data = records(0, 4);
    let size = data.len() as u64;
    let resp = answer(vec![(0, ErrorCode::NONE, Some(data))]);
    assert!(st.on_fetch(&plans[0], Ok((resp, 12)), Duration::ZERO, now));
    let m = st.metrics();
    assert_eq!(m.bytes_fetched_by_node.get(&3), Some(&size));
    assert_eq!(m.bytes_fetched_by_node.get(&1), None);
    assert_eq!(drain_offsets(&mut st, 10).unwrap().len(), 4);
    // The replica is past the fetch offset's range: back to the leader, no reset.
    let plans = st.plan_fetches(now, |_| true);
    assert_eq!(plans[0].node, 3);
    let resp = answer(vec![(0, ErrorCode::OFFSET_OUT_OF_RANGE, None)]);
    st.on_fetch(&plans[0], Ok((resp, 12)), Duration::ZERO, now);
    let plans = st.plan_fetches(now, |_| true);
    assert_eq!(plans[0].node, 1);
    assert_eq!(st.metrics().offset_resets, 0);
    // Named again; then the replica fails as a whole (connection lost): back to the leader.
    let resp = with_preferred(answer(vec![(0, ErrorCode::NONE, None)]), 3);
    st.on_fetch(&plans[0], Ok((resp, 12)), Duration::ZERO, now);
    let plans = st.plan_fetches(now, |_| true);
    assert_eq!(plans[0].node, 3);
    let lost = ConsumerError::Net(kafka_net::NetError::Closed(None));
    st.on_fetch(&plans[0], Err(lost), Duration::ZERO, now);
    let later = now + Duration::from_secs(1);
    let plans = st.plan_fetches(later, |_| true);
    assert_eq!(plans[0].node, 1);
    // And the lease runs out after metadata.max.age.ms.
    let resp = with_preferred(answer(vec![(0, ErrorCode::NONE, None)]), 3);
    st.on_fetch(&plans[0], Ok((resp, 12)), Duration::ZERO, later);
    let expired = later + Duration::from_secs(301);
    let plans = st.plan_fetches(expired, |_| true);
    assert_eq!(plans[0].node, 1);
}

fn refused_with_leader(code: ErrorCode, leader_id: i32, leader_epoch: i32) -> FetchResponse {
    let mut resp = answer(vec![(0, code, None)]);
    resp.responses[0].partitions[0].current_leader =
        kafka_protocol::messages::fetch_response::LeaderIdAndEpoch {
            leader_id,
            leader_epoch,
            ..Default::default()
        };
    resp.node_endpoints = vec![kafka_protocol::messages::fetch_response::NodeEndpoint {
        node_id: leader_id,
        host: KStr::from_static("h2"),
        port: 9093,
        rack: Some(KStr::from_static("r2")),
        ..Default::default()
    }];
    resp
}

#[test]
fn a_leader_hint_moves_the_partition_at_once() {
    let now = Instant::now();
    let mut st = state(
        1,
        1,
        OffsetReset::Earliest,
        settings(1 << 20, 1 << 20, 1 << 20),
    );
    let plans = st.plan_fetches(now, |_| true);
    assert_eq!(plans[0].node, 1);
    let resp = refused_with_leader(ErrorCode::NOT_LEADER_OR_FOLLOWER, 2, 1);
    st.on_fetch(&plans[0], Ok((resp, 16)), Duration::ZERO, now);
    // No refresh, no backoff: the next fetch goes to node 2 now, with the new epoch.
    assert!(!st.metadata_wanted);
    let plans = st.plan_fetches(now, |_| true);
    assert_eq!(plans.len(), 1);
    assert_eq!(plans[0].node, 2);
    assert_eq!(plans[0].partitions[0].current_leader_epoch, Some(1));
    let (hints, endpoints) = st.take_leader_hints();
    assert_eq!(
        hints,
        [LeaderHint {
            topic: "t".into(),
            partition: 0,
            leader_id: 2,
            leader_epoch: 1,
        }]
    );
    assert_eq!(endpoints.len(), 1);
    assert_eq!(endpoints[0].addr(), "h2:9093");
    assert_eq!(st.metrics().leader_hints_taken, 1);
    assert!(st.take_leader_hints().0.is_empty());
    // Metadata from a broker that has not seen the change does not move it back.
    let mut meta = MetadataSnapshot {
        version: 7,
        ..Default::default()
    };
    meta.topics.insert(
        "t".into(),
        kafka_net::TopicInfo {
            name: "t".into(),
            topic_id: kafka_protocol::Uuid::ZERO,
            is_internal: false,
            partitions: vec![kafka_net::PartitionInfo {
                partition: 0,
                leader: 1,
                leader_epoch: 0,
                replicas: vec![1, 2],
                isr: vec![1, 2],
                offline: vec![],
                error: ErrorCode::NONE,
            }],
            error: ErrorCode::NONE,
        },
    );
    st.apply_metadata(&meta);
    st.on_fetch(&plans[0], Ok((answer(vec![]), 16)), Duration::ZERO, now);
    assert_eq!(st.plan_fetches(now, |_| true)[0].node, 2);
}

#[test]
fn a_hint_no_newer_than_the_known_leader_is_a_plain_refusal() {
    let now = Instant::now();
    let mut st = state(
        1,
        1,
        OffsetReset::Earliest,
        settings(1 << 20, 1 << 20, 1 << 20),
    );
    let plans = st.plan_fetches(now, |_| true);
    // Epoch 0 is what the consumer knows already.
    let resp = refused_with_leader(ErrorCode::FENCED_LEADER_EPOCH, 2, 0);
    st.on_fetch(&plans[0], Ok((resp, 16)), Duration::ZERO, now);
    assert!(st.metadata_wanted);
    assert!(st.plan_fetches(now, |_| true).is_empty(), "backing off");
    assert!(st.take_leader_hints().0.is_empty());
    let later = now + Duration::from_secs(1);
    assert_eq!(st.plan_fetches(later, |_| true)[0].node, 1);
}
