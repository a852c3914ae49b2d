//! Assign mode: reading, positions, seeks, pause/resume, offsets out of range.

use std::collections::BTreeMap;
use std::time::Duration;

use kafka_consumer::{Consumer, ConsumerError, OffsetReset, TimestampType};
use kafka_protocol::record::Compression;

use crate::support::*;

const CODECS: [Compression; 5] = [
    Compression::None,
    Compression::Gzip,
    Compression::Snappy,
    Compression::Lz4,
    Compression::Zstd,
];

#[tokio::test]
async fn reads_every_partition_in_order_with_every_codec() {
    let broker = TestBroker::start();
    let topic = "orders";
    broker.create_topic(topic, 3).await;
    let conn = broker.connection().await;
    // Per partition: one batch per codec, 20 records each (the codec order differs).
    for p in 0..3 {
        for (i, codec) in CODECS.iter().cycle().skip(p as usize).take(5).enumerate() {
            let first = i as i64 * 20;
            let base = produce_raw(&conn, topic, p, batch(p, first, 20, 1_000_000, *codec)).await;
            assert_eq!(base, first);
        }
    }
    let c = Consumer::new(broker.config().max_poll_records(37).build().unwrap())
        .await
        .unwrap();
    c.assign((0..3).map(|p| tp(topic, p))).unwrap();
    assert_eq!(c.assignment().len(), 3);
    let mut seen: BTreeMap<i32, Vec<i64>> = BTreeMap::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let mut total = 0;
    while total < 300 && tokio::time::Instant::now() < deadline {
        let recs = c.poll(Duration::from_millis(500)).await.unwrap();
        assert!(recs.len() <= 37, "poll returned {} records", recs.len());
        for r in recs {
            assert_eq!(&*r.topic, topic);
            assert_eq!(r.key.as_deref(), Some(&key(r.offset)[..]));
            assert_eq!(r.value.as_deref(), Some(&value(r.partition, r.offset)[..]));
            assert_eq!(r.timestamp, 1_000_000 + r.offset);
            assert_eq!(r.timestamp_type, TimestampType::CreateTime);
            assert_eq!(r.headers.len(), 1);
            assert_eq!(r.headers[0].key.as_str(), "i");
            assert_eq!(
                r.headers[0].value.as_deref(),
                Some(r.offset.to_string().as_bytes())
            );
            assert!(r.leader_epoch.is_some_and(|e| e >= 0));
            seen.entry(r.partition).or_default().push(r.offset);
            total += 1;
        }
    }
    for p in 0..3 {
        assert_eq!(seen[&p], (0..100).collect::<Vec<_>>(), "partition {p}");
        assert_eq!(c.position(&tp(topic, p)).await.unwrap(), 100);
    }
    // Nothing more.
    assert!(c.poll(Duration::from_millis(300)).await.unwrap().is_empty());
    let m = c.metrics();
    assert_eq!(m.records_consumed, 300);
    assert!(m.fetch_requests > 0 && m.bytes_fetched > 0 && m.bytes_consumed > 0);
    assert_eq!(m.buffered_bytes, 0);
    assert_eq!(m.rebalances, 0);
    for p in 0..3 {
        assert_eq!(m.lag.get(&tp(topic, p)), Some(&0), "{m:?}");
    }
    c.close(Duration::from_secs(5)).await.unwrap();
}

#[tokio::test]
async fn seeks_and_offset_lookups() {
    let broker = TestBroker::start();
    let topic = "seeks";
    broker.create_topic(topic, 1).await;
    let conn = broker.connection().await;
    produce(&conn, topic, 0, 0, 5, 10, Compression::Lz4).await;
    let t0 = tp(topic, 0);
    let c = Consumer::new(broker.config().max_poll_records(5).build().unwrap())
        .await
        .unwrap();
    assert_eq!(c.partitions_for(topic).await.unwrap(), vec![t0.clone()]);
    assert_eq!(
        c.beginning_offsets(std::slice::from_ref(&t0))
            .await
            .unwrap()[&t0],
        0
    );
    assert_eq!(
        c.end_offsets(std::slice::from_ref(&t0)).await.unwrap()[&t0],
        50
    );
    let times = |ts: i64| [(t0.clone(), ts)].into_iter().collect::<BTreeMap<_, _>>();
    let found = c.offsets_for_times(&times(1_000_020)).await.unwrap();
    let at = found[&t0].unwrap();
    assert_eq!((at.offset, at.timestamp), (20, 1_000_020));
    assert_eq!(
        c.offsets_for_times(&times(2_000_000)).await.unwrap()[&t0],
        None
    );

    c.assign([t0.clone()]).unwrap();
    // Position of a fresh partition: auto.offset.reset=earliest.
    assert_eq!(c.position(&t0).await.unwrap(), 0);
    c.seek(&t0, 30).unwrap();
    assert_eq!(c.position(&t0).await.unwrap(), 30);
    let recs = poll_n(&c, 1, Duration::from_secs(10)).await;
    assert_eq!(recs[0].offset, 30);
    assert_eq!(recs.len(), 5);
    assert_eq!(c.position(&t0).await.unwrap(), 35);
    c.seek_to_beginning(&[]).unwrap();
    assert_eq!(c.position(&t0).await.unwrap(), 0);
    assert_eq!(poll_n(&c, 1, Duration::from_secs(10)).await[0].offset, 0);
    c.seek_to_end(std::slice::from_ref(&t0)).unwrap();
    assert_eq!(c.position(&t0).await.unwrap(), 50);
    assert!(c.poll(Duration::from_millis(300)).await.unwrap().is_empty());
    // New records after the end arrive (the fetch long-polls).
    produce(&conn, topic, 0, 50, 1, 3, Compression::None).await;
    let recs = poll_n(&c, 3, Duration::from_secs(10)).await;
    assert_eq!(
        recs.iter().map(|r| r.offset).collect::<Vec<_>>(),
        vec![50, 51, 52]
    );
    assert_eq!(c.current_lag(&t0), Some(0));
    // Seeking a partition not assigned fails.
    assert!(matches!(
        c.seek(&tp(topic, 7), 0),
        Err(ConsumerError::NotAssigned(_))
    ));
    c.close(Duration::from_secs(5)).await.unwrap();
}

#[tokio::test]
async fn pause_and_resume() {
    let broker = TestBroker::start();
    let topic = "paused";
    broker.create_topic(topic, 2).await;
    let conn = broker.connection().await;
    for p in 0..2 {
        produce(&conn, topic, p, 0, 2, 10, Compression::None).await;
    }
    let (t0, t1) = (tp(topic, 0), tp(topic, 1));
    let c = Consumer::new(broker.config().build().unwrap())
        .await
        .unwrap();
    c.assign([t0.clone(), t1.clone()]).unwrap();
    c.pause(std::slice::from_ref(&t0)).unwrap();
    assert_eq!(c.paused().into_iter().collect::<Vec<_>>(), vec![t0.clone()]);
    let recs = poll_n(&c, 20, Duration::from_secs(10)).await;
    assert_eq!(recs.len(), 20);
    assert!(recs.iter().all(|r| r.partition == 1));
    assert!(c.poll(Duration::from_millis(500)).await.unwrap().is_empty());
    c.resume(std::slice::from_ref(&t0)).unwrap();
    assert!(c.paused().is_empty());
    let recs = poll_n(&c, 20, Duration::from_secs(10)).await;
    assert_eq!(recs.len(), 20);
    assert!(recs.iter().all(|r| r.partition == 0));
    assert_eq!(recs.last().unwrap().offset, 19);
    // Pausing keeps data already fetched: pause after it arrived, resume, nothing lost.
    produce(&conn, topic, 1, 20, 1, 5, Compression::None).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    c.pause(std::slice::from_ref(&t1)).unwrap();
    assert!(c.poll(Duration::from_millis(300)).await.unwrap().is_empty());
    c.resume(std::slice::from_ref(&t1)).unwrap();
    let recs = poll_n(&c, 5, Duration::from_secs(10)).await;
    assert_eq!(
        recs.iter().map(|r| r.offset).collect::<Vec<_>>(),
        (20..25).collect::<Vec<_>>()
    );
    c.close(Duration::from_secs(5)).await.unwrap();
}

#[tokio::test]
async fn offset_out_of_range_follows_auto_offset_reset() {
    let broker = TestBroker::start();
    let topic = "trimmed";
    broker.create_topic(topic, 1).await;
    let conn = broker.connection().await;
    produce(&conn, topic, 0, 0, 10, 10, Compression::Snappy).await;
    delete_records(&conn, topic, 0, 60).await;
    let t0 = tp(topic, 0);

    // earliest: back to the new log start.
    let c = Consumer::new(broker.config().build().unwrap())
        .await
        .unwrap();
    c.assign([t0.clone()]).unwrap();
    c.seek(&t0, 10).unwrap();
    let recs = poll_n(&c, 40, Duration::from_secs(10)).await;
    assert_eq!(recs.first().map(|r| r.offset), Some(60));
    assert_eq!(recs.len(), 40);
    assert!(c.metrics().offset_resets >= 1);
    c.close(Duration::from_secs(5)).await.unwrap();

    // latest: to the end, then only new records.
    let cfg = broker
        .config()
        .auto_offset_reset(OffsetReset::Latest)
        .build()
        .unwrap();
    let c = Consumer::new(cfg).await.unwrap();
    c.assign([t0.clone()]).unwrap();
    c.seek(&t0, 10).unwrap();
    assert!(c.poll(Duration::from_millis(500)).await.unwrap().is_empty());
    assert_eq!(c.position(&t0).await.unwrap(), 100);
    produce(&conn, topic, 0, 100, 1, 5, Compression::None).await;
    let recs = poll_n(&c, 5, Duration::from_secs(10)).await;
    assert_eq!(recs.first().map(|r| r.offset), Some(100));
    c.close(Duration::from_secs(5)).await.unwrap();

    // none: every poll fails until the application seeks.
    let cfg = broker
        .config()
        .auto_offset_reset(OffsetReset::None)
        .build()
        .unwrap();
    let c = Consumer::new(cfg).await.unwrap();
    c.assign([t0.clone()]).unwrap();
    // No group, no committed offset: nowhere to start.
    assert!(matches!(
        c.poll(Duration::from_millis(100)).await,
        Err(ConsumerError::NoOffsetForPartition(_))
    ));
    c.seek(&t0, 10).unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let err = loop {
        match c.poll(Duration::from_millis(200)).await {
            Err(e) => break e,
            Ok(r) => assert!(r.is_empty(), "records from an out-of-range position"),
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no out-of-range error"
        );
    };
    assert!(
        matches!(err, ConsumerError::OffsetOutOfRange { offset: 10, .. }),
        "{err}"
    );
    assert!(c.poll(Duration::from_millis(100)).await.is_err());
    c.seek(&t0, 70).unwrap();
    let recs = poll_n(&c, 1, Duration::from_secs(10)).await;
    assert_eq!(recs[0].offset, 70);
    c.close(Duration::from_secs(5)).await.unwrap();
}

#[tokio::test]
async fn stream_yields_records_one_by_one() {
    use futures::StreamExt;
    let broker = TestBroker::start();
    let topic = "streamed";
    broker.create_topic(topic, 1).await;
    let conn = broker.connection().await;
    produce(&conn, topic, 0, 0, 3, 10, Compression::Zstd).await;
    let t0 = tp(topic, 0);
    let c = Consumer::new(broker.config().build().unwrap())
        .await
        .unwrap();
    c.assign([t0.clone()]).unwrap();
    let got: Vec<i64> = {
        let s = c.stream();
        tokio::pin!(s);
        let mut out = Vec::new();
        while out.len() < 25 {
            let r = tokio::time::timeout(Duration::from_secs(10), s.next())
                .await
                .unwrap()
                .unwrap()
                .unwrap();
            out.push(r.offset);
        }
        out
    };
    assert_eq!(got, (0..25).collect::<Vec<_>>());
    // The position covers exactly what the stream yielded.
    assert_eq!(c.position(&t0).await.unwrap(), 25);
    assert_eq!(poll_n(&c, 5, Duration::from_secs(10)).await[0].offset, 25);
    c.close(Duration::from_secs(5)).await.unwrap();
}

#[tokio::test]
async fn positions_with_an_epoch_are_validated_against_the_leader() {
    use kafka_consumer::OffsetAndMetadata;
    let broker = TestBroker::start();
    let topic = "validated";
    broker.create_topic(topic, 1).await;
    let conn = broker.connection().await;
    produce(&conn, topic, 0, 0, 5, 10, Compression::None).await;
    let t0 = tp(topic, 0);
    let at = |o: i64| OffsetAndMetadata::new(o).with_leader_epoch(Some(0));

    // Without a reset policy, a position past the end of its epoch on the leader is a
    // truncation the application must deal with.
    let cfg = broker
        .config()
        .auto_offset_reset(OffsetReset::None)
        .build()
        .unwrap();
    let c = Consumer::new(cfg).await.unwrap();
    c.assign([t0.clone()]).unwrap();
    c.seek_to(&t0, &at(30)).unwrap();
    assert_eq!(c.position(&t0).await.unwrap(), 30);
    assert_eq!(poll_n(&c, 1, Duration::from_secs(10)).await[0].offset, 30);
    c.seek_to(&t0, &at(80)).unwrap();
    let err = loop {
        match c.poll(Duration::from_millis(200)).await {
            Err(e) => break e,
            Ok(r) => assert!(r.is_empty()),
        }
    };
    assert!(
        matches!(
            err,
            ConsumerError::LogTruncation {
                offset: 80,
                end_offset: Some(50),
                ..
            }
        ),
        "{err}"
    );
    assert_eq!(c.metrics().log_truncations, 1);
    c.seek(&t0, 45).unwrap();
    let recs = poll_n(&c, 5, Duration::from_secs(10)).await;
    assert_eq!(recs.first().map(|r| r.offset), Some(45));
    c.close(Duration::from_secs(5)).await.unwrap();

    // With a reset policy the position moves to where the logs diverge.
    let c = Consumer::new(broker.config().build().unwrap())
        .await
        .unwrap();
    c.assign([t0.clone()]).unwrap();
    c.seek_to(&t0, &at(80)).unwrap();
    assert_eq!(c.position(&t0).await.unwrap(), 50);
    produce(&conn, topic, 0, 50, 1, 2, Compression::None).await;
    let recs = poll_n(&c, 2, Duration::from_secs(10)).await;
    assert_eq!(
        recs.iter().map(|r| r.offset).collect::<Vec<_>>(),
        vec![50, 51]
    );
    c.close(Duration::from_secs(5)).await.unwrap();
}

#[tokio::test]
async fn read_committed_reads_non_transactional_data() {
    let broker = TestBroker::start();
    let topic = "committed-only";
    broker.create_topic(topic, 1).await;
    let conn = broker.connection().await;
    produce(&conn, topic, 0, 0, 3, 10, Compression::Gzip).await;
    let t0 = tp(topic, 0);
    let cfg = broker
        .config()
        .isolation_level(kafka_consumer::IsolationLevel::ReadCommitted)
        .build()
        .unwrap();
    let c = Consumer::new(cfg).await.unwrap();
    assert_eq!(
        c.end_offsets(std::slice::from_ref(&t0)).await.unwrap()[&t0],
        30
    );
    c.assign([t0.clone()]).unwrap();
    let recs = poll_n(&c, 30, Duration::from_secs(10)).await;
    assert_eq!(
        recs.iter().map(|r| r.offset).collect::<Vec<_>>(),
        (0..30).collect::<Vec<_>>()
    );
    assert_eq!(c.current_lag(&t0), Some(0));
    c.close(Duration::from_secs(5)).await.unwrap();
}

#[tokio::test]
async fn reading_goes_on_after_the_broker_restarts() {
    let mut broker = TestBroker::start();
    let topic = "restarted";
    broker.create_topic(topic, 1).await;
    let conn = broker.connection().await;
    produce(&conn, topic, 0, 0, 2, 10, Compression::None).await;
    drop(conn);
    let t0 = tp(topic, 0);
    let cfg = broker
        .config()
        .reconnect_backoff(Duration::from_millis(20), Duration::from_millis(200))
        .build()
        .unwrap();
    let c = Consumer::new(cfg).await.unwrap();
    c.assign([t0.clone()]).unwrap();
    assert_eq!(poll_n(&c, 20, Duration::from_secs(10)).await.len(), 20);
    broker.restart();
    let conn = broker.connection().await;
    produce(&conn, topic, 0, 20, 1, 10, Compression::None).await;
    let recs = poll_n(&c, 10, Duration::from_secs(20)).await;
    assert_eq!(
        recs.iter().map(|r| r.offset).collect::<Vec<_>>(),
        (20..30).collect::<Vec<_>>()
    );
    c.close(Duration::from_secs(5)).await.unwrap();
}
