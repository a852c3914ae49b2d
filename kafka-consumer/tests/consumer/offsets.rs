//! Committed offsets: commit_sync / commit_async, auto-commit, resuming in a new consumer,
//! closing when the broker is gone.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kafka_consumer::{Consumer, ConsumerError, OffsetAndMetadata};
use kafka_protocol::record::Compression;

use crate::support::*;

#[tokio::test]
async fn commit_sync_then_a_new_consumer_resumes_there() {
    let broker = TestBroker::start();
    let topic = "resume";
    broker.create_topic(topic, 2).await;
    let conn = broker.connection().await;
    for p in 0..2 {
        produce(&conn, topic, p, 0, 4, 25, Compression::Gzip).await;
    }
    let parts = [tp(topic, 0), tp(topic, 1)];
    let cfg = || {
        broker
            .config()
            .group_id("g-resume")
            .enable_auto_commit(false)
            .max_poll_records(30)
            .build()
            .unwrap()
    };
    let c = Consumer::new(cfg()).await.unwrap();
    // Nothing committed yet.
    let none = c.committed(&parts).await.unwrap();
    assert!(none.values().all(Option::is_none), "{none:?}");
    c.assign(parts.clone()).unwrap();
    let got = poll_n(&c, 50, Duration::from_secs(10)).await;
    let mut next: BTreeMap<i32, i64> = BTreeMap::new();
    for r in &got {
        next.insert(r.partition, r.offset + 1);
    }
    c.commit_sync().await.unwrap();
    let committed = c.committed(&parts).await.unwrap();
    for (i, t) in parts.iter().enumerate() {
        // Positions count even where nothing was read yet (then at the log start, 0).
        let want = next.get(&(i as i32)).copied().unwrap_or(0);
        assert_eq!(committed[t].as_ref().map(|o| o.offset), Some(want), "{t}");
        if want > 0 {
            assert!(committed[t].as_ref().unwrap().leader_epoch.is_some());
        }
    }
    c.close(Duration::from_secs(5)).await.unwrap();

    let c = Consumer::new(cfg()).await.unwrap();
    c.assign(parts.clone()).unwrap();
    for (i, t) in parts.iter().enumerate() {
        let want = next.get(&(i as i32)).copied().unwrap_or(0);
        assert_eq!(c.position(t).await.unwrap(), want, "{t}");
    }
    let rest = poll_n(&c, 200 - got.len(), Duration::from_secs(10)).await;
    assert_eq!(rest.len() + got.len(), 200);
    // Explicit offsets with metadata, read back.
    let explicit: BTreeMap<_, _> = [(
        parts[0].clone(),
        OffsetAndMetadata::new(7).with_metadata("note"),
    )]
    .into_iter()
    .collect();
    c.commit_offsets_sync(explicit).await.unwrap();
    let back = c.committed(&parts[..1]).await.unwrap();
    let om = back[&parts[0]].clone().unwrap();
    assert_eq!((om.offset, om.metadata.as_str()), (7, "note"));
    // Async commits run in order and report back.
    let seen = Arc::new(Mutex::new(Vec::new()));
    for o in [8, 9, 10] {
        let seen = seen.clone();
        let offsets: BTreeMap<_, _> = [(parts[0].clone(), OffsetAndMetadata::new(o))]
            .into_iter()
            .collect();
        c.commit_offsets_async(offsets, move |r| {
            seen.lock()
                .unwrap()
                .push(r.map(|m| m.values().next().unwrap().offset));
        });
    }
    // A sync commit waits for the async ones queued before it.
    c.commit_offsets_sync(
        [(parts[1].clone(), OffsetAndMetadata::new(3))]
            .into_iter()
            .collect(),
    )
    .await
    .unwrap();
    let seen: Vec<i64> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|r| *r.as_ref().unwrap())
        .collect();
    assert_eq!(seen, vec![8, 9, 10]);
    assert_eq!(
        c.committed(&parts[..1]).await.unwrap()[&parts[0]]
            .as_ref()
            .unwrap()
            .offset,
        10
    );
    assert!(c.metrics().commits >= 5);
    c.close(Duration::from_secs(5)).await.unwrap();

    // Without a group there is nothing to commit to.
    let c = Consumer::new(broker.config().build().unwrap())
        .await
        .unwrap();
    assert!(matches!(
        c.commit_sync().await,
        Err(ConsumerError::NoGroupId(_))
    ));
    assert!(matches!(
        c.committed(&parts).await,
        Err(ConsumerError::NoGroupId(_))
    ));
}

#[tokio::test]
async fn auto_commit_covers_only_records_already_polled() {
    let broker = TestBroker::start();
    let topic = "auto";
    broker.create_topic(topic, 1).await;
    let conn = broker.connection().await;
    produce(&conn, topic, 0, 0, 1, 100, Compression::None).await;
    let t0 = tp(topic, 0);
    let group = "g-auto";
    let cfg = broker
        .config()
        .group_id(group)
        .auto_commit_interval(Duration::from_millis(200))
        .max_poll_records(10)
        .build()
        .unwrap();
    assert!(cfg.enable_auto_commit);
    let c = Consumer::new(cfg).await.unwrap();
    c.assign([t0.clone()]).unwrap();
    let first = poll_n(&c, 1, Duration::from_secs(10)).await;
    let polled = first.last().unwrap().offset + 1;
    assert!(polled <= 10);
    // Let everything be fetched ahead, then wait past the interval.
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(
        c.metrics().buffered_bytes > 0,
        "the rest should be buffered"
    );
    // This poll commits what the previous ones handed out, not what it returns itself
    // and not what is buffered.
    let second = c.poll(Duration::from_secs(1)).await.unwrap();
    assert!(!second.is_empty());
    let reader = Consumer::new(
        broker
            .config()
            .group_id(group)
            .enable_auto_commit(false)
            .build()
            .unwrap(),
    )
    .await
    .unwrap();
    let committed = wait_committed(&reader, &t0, polled).await;
    assert_eq!(committed, polled);
    let after_second = second.last().unwrap().offset + 1;
    // Closing commits the rest of what was handed out.
    c.close(Duration::from_secs(5)).await.unwrap();
    assert_eq!(
        wait_committed(&reader, &t0, after_second).await,
        after_second
    );
    reader.close(Duration::from_secs(5)).await.unwrap();
}

/// The committed offset, waiting a little for an asynchronous commit to land.
async fn wait_committed(c: &Consumer, t: &kafka_consumer::TopicPartition, want: i64) -> i64 {
    let mut got = -1;
    for _ in 0..50 {
        got = c.committed(std::slice::from_ref(t)).await.unwrap()[t]
            .as_ref()
            .map_or(-1, |o| o.offset);
        if got == want {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    got
}

#[tokio::test]
async fn close_returns_in_time_when_the_broker_is_gone() {
    let mut broker = TestBroker::start();
    let topic = "gone";
    broker.create_topic(topic, 1).await;
    let conn = broker.connection().await;
    produce(&conn, topic, 0, 0, 1, 10, Compression::None).await;
    let t0 = tp(topic, 0);
    let with_group = Consumer::new(broker.config().group_id("g-gone").build().unwrap())
        .await
        .unwrap();
    with_group.assign([t0.clone()]).unwrap();
    assert!(
        !poll_n(&with_group, 10, Duration::from_secs(10))
            .await
            .is_empty()
    );
    let plain = Consumer::new(broker.config().build().unwrap())
        .await
        .unwrap();
    plain.assign([t0.clone()]).unwrap();
    assert!(!poll_n(&plain, 10, Duration::from_secs(10)).await.is_empty());
    drop(conn);
    broker.stop();
    // Polls keep working (returning nothing) while the broker is away.
    assert!(
        plain
            .poll(Duration::from_millis(300))
            .await
            .unwrap()
            .is_empty()
    );
    let limit = Duration::from_secs(15);
    let started = std::time::Instant::now();
    let r = tokio::time::timeout(limit, with_group.close(Duration::from_secs(2)))
        .await
        .expect("close hung with the broker gone");
    assert!(r.is_err(), "the final commit cannot have succeeded");
    tokio::time::timeout(limit, plain.close(Duration::from_secs(2)))
        .await
        .expect("close hung with the broker gone")
        .unwrap();
    assert!(started.elapsed() < limit);
}
