//! Memory stays bounded when the application does not poll: the fetcher stops once
//! `fetch.buffer.max.bytes` is buffered, whatever the size of the topic. Checked on the
//! consumer's own count of buffered bytes and on the process's resident memory (VmRSS).
//!
//! A test binary of its own, with one test, so that no other test shares the process while
//! resident memory is measured.
#![allow(clippy::unwrap_used)]

#[path = "consumer/support.rs"]
#[allow(dead_code)]
mod support;

use std::time::Duration;

use bytes::Bytes;
use kafka_consumer::Consumer;
use kafka_net::Connection;
use kafka_protocol::record::{Compression, RecordBatchBuilder};

use support::*;

const CAP: usize = 512 * 1024;
const RECORD: usize = 1024;
const PER_BATCH: i64 = 32;
/// The largest batch written (a batch may pass the cap once, as KIP-74 allows).
const BATCH_MAX: usize = PER_BATCH as usize * (RECORD + 32) + 61;

fn vm_rss() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
        .map_or(0, |kb| kb * 1024)
}

fn big_batch(first: i64) -> Bytes {
    let mut b = RecordBatchBuilder::new().compression(Compression::None);
    for i in first..first + PER_BATCH {
        // Not compressible on purpose: bytes fetched are bytes held.
        let mut x = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let value: Vec<u8> = (0..RECORD)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        b.append(i, Some(&i.to_be_bytes()), Some(&value), &[])
            .unwrap();
    }
    b.build().unwrap()
}

/// Writes `bytes` of records to each of the topic's 2 partitions; returns records per
/// partition.
async fn fill(conn: &Connection, topic: &str, bytes: usize) -> i64 {
    let batches = (bytes / 2 / (RECORD * PER_BATCH as usize)) as i64;
    for p in 0..2 {
        for b in 0..batches {
            produce_raw(conn, topic, p, big_batch(b * PER_BATCH)).await;
        }
    }
    batches * PER_BATCH
}

/// Lets a consumer that does not poll fetch ahead for a while; returns the highest RSS and
/// buffered bytes seen.
async fn idle(c: &Consumer) -> (usize, usize) {
    let (mut rss, mut buffered) = (0, 0);
    for _ in 0..30 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let m = c.metrics();
        assert!(
            m.buffered_bytes <= CAP + BATCH_MAX,
            "buffered {} bytes with a cap of {CAP}",
            m.buffered_bytes
        );
        buffered = buffered.max(m.buffered_bytes);
        rss = rss.max(vm_rss());
    }
    (rss, buffered)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buffered_data_is_bounded_whatever_the_topic_size() {
    let broker = TestBroker::start();
    let conn = broker.connection().await;
    broker.create_topic("small", 2).await;
    broker.create_topic("large", 2).await;
    let small_size = 4 << 20;
    let large_size = 16 << 20;
    let small_n = fill(&conn, "small", small_size).await;
    let large_n = fill(&conn, "large", large_size).await;
    let config = || {
        broker
            .config()
            .fetch_buffer_max_bytes(CAP)
            .max_poll_records(1000)
            .build()
            .unwrap()
    };
    let base = vm_rss();

    let small = Consumer::new(config()).await.unwrap();
    small.assign([tp("small", 0), tp("small", 1)]).unwrap();
    let (small_rss, small_buffered) = idle(&small).await;
    // It did fetch ahead, up to about the cap.
    assert!(
        small_buffered >= CAP / 2,
        "only {small_buffered} bytes fetched ahead"
    );
    small.close(Duration::from_secs(5)).await.unwrap();

    let large = Consumer::new(config()).await.unwrap();
    large.assign([tp("large", 0), tp("large", 1)]).unwrap();
    let (large_rss, large_buffered) = idle(&large).await;
    assert!(large_buffered >= CAP / 2);
    let grew_small = small_rss.saturating_sub(base);
    let grew_large = large_rss.saturating_sub(base);
    eprintln!(
        "RSS: base {} KiB; +{} KiB with the {} MiB topic, +{} KiB with the {} MiB topic \
         (cap {} KiB)",
        base / 1024,
        grew_small / 1024,
        small_size >> 20,
        grew_large / 1024,
        large_size >> 20,
        CAP / 1024
    );
    // Four times the data, not four times the memory: both stay far below the topic.
    assert!(
        grew_large < large_size / 4,
        "RSS grew by {grew_large} bytes"
    );
    assert!(
        grew_large < grew_small + (4 << 20),
        "{grew_small} vs {grew_large}"
    );

    // Everything is there, in order, and reading it all keeps to the cap.
    let mut next = [0i64; 2];
    let deadline = tokio::time::Instant::now() + Duration::from_secs(40);
    while next.iter().sum::<i64>() < 2 * large_n && tokio::time::Instant::now() < deadline {
        for r in large.poll(Duration::from_millis(200)).await.unwrap() {
            let p = r.partition as usize;
            assert_eq!(r.offset, next[p]);
            assert_eq!(r.key.as_deref(), Some(&r.offset.to_be_bytes()[..]));
            assert_eq!(r.value.as_ref().map(Bytes::len), Some(RECORD));
            next[p] += 1;
        }
    }
    assert_eq!(next, [large_n, large_n]);
    let m = large.metrics();
    assert!(m.buffered_bytes_max <= CAP + BATCH_MAX, "{m:?}");
    assert_eq!(m.records_consumed, 2 * large_n as u64);
    let after = vm_rss().saturating_sub(base);
    eprintln!(
        "RSS after reading the {} MiB topic: +{} KiB",
        large_size >> 20,
        after / 1024
    );
    assert!(
        after < large_size / 2,
        "RSS grew by {after} bytes reading everything"
    );
    assert!(small_n > 0);
    large.close(Duration::from_secs(5)).await.unwrap();
}
