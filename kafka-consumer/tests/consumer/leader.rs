//! Leader moves on a scripted two-broker cluster: the consumer follows the new leader and
//! detects, with OffsetForLeaderEpoch, that the new leader's log lost records it had read
//! (KIP-320); a refusal that names the new leader (KIP-951) moves it there while the
//! metadata still names the old one.

use std::time::Duration;

use kafka_consumer::{Consumer, ConsumerConfig, ConsumerError, OffsetReset, TopicPartition};
use kafka_protocol::messages::RequestBody;

use crate::fake::{FakeCluster, TOPIC, epoch_batch};
use crate::support::poll_n;

fn config(bootstrap: &str, reset: OffsetReset) -> ConsumerConfig {
    ConsumerConfig::builder()
        .bootstrap_servers([bootstrap])
        .auto_offset_reset(reset)
        .fetch_max_wait(Duration::from_millis(100))
        .retry_backoff(Duration::from_millis(20))
        .default_api_timeout(Duration::from_secs(10))
        .build()
        .unwrap()
}

/// Node 1 led epoch 0 and holds 0..10; node 2 only got 0..7 of epoch 0, then led epoch 1
/// and wrote 7..13.
async fn diverged_cluster() -> FakeCluster {
    FakeCluster::start([
        vec![epoch_batch(0, 10, 0)],
        vec![epoch_batch(0, 7, 0), epoch_batch(7, 6, 1)],
    ])
    .await
}

#[tokio::test]
async fn follows_a_new_leader_and_detects_the_truncated_log() {
    let cluster = diverged_cluster().await;
    let t0 = TopicPartition::new(TOPIC, 0);
    let c = Consumer::new(config(&cluster.bootstrap, OffsetReset::Earliest))
        .await
        .unwrap();
    c.assign([t0.clone()]).unwrap();
    let first = poll_n(&c, 10, Duration::from_secs(10)).await;
    assert_eq!(
        first.iter().map(|r| r.offset).collect::<Vec<_>>(),
        (0..10).collect::<Vec<_>>()
    );
    assert!(first.iter().all(|r| r.leader_epoch == Some(0)));

    // Unclean election: node 2 leads epoch 1 without records 7..10 of epoch 0.
    cluster.elect(2, 1);
    let after = poll_n(&c, 6, Duration::from_secs(10)).await;
    let got: Vec<(i64, String)> = after
        .iter()
        .map(|r| {
            let v = String::from_utf8(r.value.clone().unwrap().to_vec()).unwrap();
            (r.offset, v)
        })
        .collect();
    let want: Vec<(i64, String)> = (7..13).map(|o| (o, format!("e1-{o}"))).collect();
    assert_eq!(
        got, want,
        "read from the new leader at the divergence point"
    );
    let m = c.metrics();
    assert_eq!(m.log_truncations, 1, "{m:?}");

    let seen = cluster.seen();
    // Node 1 turned the consumer away; the position was checked on node 2 with the epoch of
    // the last record read (0) and the new leader epoch (1); fetching resumed at 7.
    assert!(seen.iter().any(|s| s.node == 1
        && matches!(&s.body, RequestBody::Fetch(f) if f.topics[0].partitions[0].fetch_offset == 10)));
    let validation = seen
        .iter()
        .find_map(|s| match &s.body {
            RequestBody::OffsetForLeaderEpoch(r) => {
                Some((s.node, r.topics[0].partitions[0].clone()))
            }
            _ => None,
        })
        .expect("no OffsetForLeaderEpoch request");
    assert_eq!(validation.0, 2);
    assert_eq!(
        (validation.1.leader_epoch, validation.1.current_leader_epoch),
        (0, 1)
    );
    assert!(seen.iter().any(|s| s.node == 2
        && matches!(&s.body, RequestBody::Fetch(f)
            if f.topics[0].partitions[0].fetch_offset == 7
                && f.topics[0].partitions[0].current_leader_epoch == 1)));
    c.close(Duration::from_secs(2)).await.unwrap();
}

#[tokio::test]
async fn truncation_without_a_reset_policy_is_reported() {
    let cluster = diverged_cluster().await;
    let t0 = TopicPartition::new(TOPIC, 0);
    let c = Consumer::new(config(&cluster.bootstrap, OffsetReset::None))
        .await
        .unwrap();
    c.assign([t0.clone()]).unwrap();
    c.seek(&t0, 0).unwrap();
    assert_eq!(poll_n(&c, 10, Duration::from_secs(10)).await.len(), 10);
    cluster.elect(2, 1);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let err = loop {
        match c.poll(Duration::from_millis(100)).await {
            Err(e) => break e,
            Ok(r) => assert!(r.is_empty(), "records before the truncation was resolved"),
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no truncation reported"
        );
    };
    assert!(
        matches!(
            &err,
            ConsumerError::LogTruncation {
                offset: 10,
                epoch: Some(0),
                end_offset: Some(7),
                ..
            }
        ),
        "{err}"
    );
    // The application decides: here, read the new leader's records from the divergence.
    c.seek(&t0, 7).unwrap();
    let recs = poll_n(&c, 6, Duration::from_secs(10)).await;
    assert_eq!(recs.first().map(|r| r.offset), Some(7));
    assert_eq!(recs.len(), 6);
    c.close(Duration::from_secs(2)).await.unwrap();
}

/// Both nodes hold 0..10 of epoch 0; node 2 then leads epoch 1 and writes 10..16. Metadata
/// keeps naming node 1: only the refusal's leader hint can send the consumer to node 2.
#[tokio::test]
async fn a_refusal_naming_the_new_leader_moves_the_consumer_there() {
    let cluster = FakeCluster::start_with_hints([
        vec![epoch_batch(0, 10, 0)],
        vec![epoch_batch(0, 10, 0), epoch_batch(10, 6, 1)],
    ])
    .await;
    let t0 = TopicPartition::new(TOPIC, 0);
    let c = Consumer::new(config(&cluster.bootstrap, OffsetReset::Earliest))
        .await
        .unwrap();
    c.assign([t0.clone()]).unwrap();
    assert_eq!(poll_n(&c, 10, Duration::from_secs(10)).await.len(), 10);
    cluster.elect(2, 1);
    let after = poll_n(&c, 6, Duration::from_secs(10)).await;
    let got: Vec<(i64, Option<i32>)> = after.iter().map(|r| (r.offset, r.leader_epoch)).collect();
    let want: Vec<(i64, Option<i32>)> = (10..16).map(|o| (o, Some(1))).collect();
    assert_eq!(got, want, "read from the leader the refusal named");
    let m = c.metrics();
    assert_eq!(m.leader_hints_taken, 1, "{m:?}");
    assert_eq!(m.log_truncations, 0, "{m:?}");
    let seen = cluster.seen();
    // Node 2 was asked with the hinted epoch (validated first, then fetched from 10).
    assert!(seen.iter().any(|s| s.node == 2
        && matches!(&s.body, RequestBody::Fetch(f)
            if f.topics[0].partitions[0].fetch_offset == 10
                && f.topics[0].partitions[0].current_leader_epoch == 1)));
    c.close(Duration::from_secs(2)).await.unwrap();
}
