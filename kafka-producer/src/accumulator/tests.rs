//! The accumulator's tests: appends, readiness, draining, retries, expiry, flush.

use kafka_protocol::record::Compression;

use super::queue::DUPLICATE_WINDOW;
use super::*;
use crate::delivery::DeliveryResult;
use tokio::sync::oneshot;

fn cfg() -> AccumulatorConfig {
    AccumulatorConfig {
        batch_size: 1024,
        linger: Duration::from_millis(5),
        retry_backoff: Duration::from_millis(100),
        retry_backoff_max: Duration::from_millis(1000),
        delivery_timeout: Duration::from_secs(120),
        compression: Compression::None,
        compression_level: None,
        max_request_size: 1 << 20,
        idempotent: false,
        guarantee_order: false,
        transactional: false,
    }
}

fn acc(cfg: AccumulatorConfig) -> Accumulator {
    Accumulator::new(cfg, BufferPool::new(64 * 1024, 1024))
}

async fn put(
    a: &Accumulator,
    topic: &Arc<str>,
    partition: i32,
    value: &[u8],
) -> (Appended, oneshot::Receiver<DeliveryResult>) {
    let (tx, rx) = oneshot::channel();
    let rec = AppendRecord {
        timestamp: 1,
        key: None,
        value: Some(value),
        headers: &[],
    };
    let app = a
        .append(
            topic,
            partition,
            &rec,
            Completion::Future(tx),
            Duration::ZERO,
        )
        .await
        .unwrap();
    (app, rx)
}

fn leader(tp: &TopicPartition) -> Option<i32> {
    // Partitions 0-3 on node 1, 4-7 on node 2, 9 has no leader.
    match tp.partition {
        0..=3 => Some(1),
        4..=7 => Some(2),
        _ => None,
    }
}

fn nodes(n: &[i32]) -> BTreeSet<i32> {
    n.iter().copied().collect()
}

#[tokio::test(start_paused = true)]
async fn a_batch_waits_for_linger_unless_full() {
    let a = acc(cfg());
    let t: Arc<str> = "t".into();
    let (app, _rx) = put(&a, &t, 0, b"small").await;
    assert!(app.new_batch && !app.batch_full);
    let r = a.ready(Instant::now(), leader, |_| true, |_| true);
    assert!(r.nodes.is_empty());
    assert_eq!(r.next_check, Some(Duration::from_millis(5)));
    tokio::time::advance(Duration::from_millis(5)).await;
    let r = a.ready(Instant::now(), leader, |_| true, |_| true);
    assert_eq!(r.nodes, nodes(&[1]));
    // A full batch (a second one behind it) is ready at once, on another partition.
    // The sender is told once per batch (a new batch, or a batch turning full), not once
    // per record appended behind a full batch.
    let (mut news, mut wakes) = (0, 0);
    for _ in 0..20 {
        let (app, _rx) = put(&a, &t, 5, &[1u8; 100]).await;
        news += usize::from(app.new_batch);
        wakes += usize::from(app.new_batch || app.batch_full);
    }
    assert!(news >= 2, "{news} batches");
    assert!(
        wakes <= 2 * news,
        "{wakes} appends asked to wake the sender for {news} batches"
    );
    let r = a.ready(Instant::now(), leader, |_| true, |_| true);
    assert_eq!(r.nodes, nodes(&[1, 2]));
    // No room on node 2: not ready.
    let r = a.ready(Instant::now(), leader, |n| n != 2, |_| true);
    assert_eq!(r.nodes, nodes(&[1]));
}

#[tokio::test(start_paused = true)]
async fn unknown_leaders_are_reported() {
    let a = acc(cfg());
    let t: Arc<str> = "t".into();
    let _ = put(&a, &t, 9, b"x").await;
    let r = a.ready(Instant::now(), leader, |_| true, |_| true);
    assert!(r.nodes.is_empty());
    assert!(r.unknown_leaders.contains(&t));
}

#[tokio::test(start_paused = true)]
async fn drain_takes_one_batch_per_partition_within_the_request_size() {
    let mut c = cfg();
    c.max_request_size = 2500;
    let a = acc(c);
    let t: Arc<str> = "t".into();
    for p in 0..4 {
        for _ in 0..25 {
            let _ = put(&a, &t, p, &[p as u8; 90]).await;
        }
    }
    assert_eq!(a.queued_batches(), 12);
    let now = Instant::now();
    let d = a.drain(now, &nodes(&[1]), leader, None, |_| true).unwrap();
    let batches = &d[&1];
    // About 1 KiB per batch: two fit in 2500 bytes; never two of one partition.
    assert_eq!(batches.len(), 2);
    assert_ne!(batches[0].0.tp, batches[1].0.tp);
    let total: usize = batches.iter().map(|(_, b)| b.len()).sum();
    assert!(total <= 2500);
    // The next drain starts elsewhere, so no partition starves.
    let d2 = a.drain(now, &nodes(&[1]), leader, None, |_| true).unwrap();
    let first: Vec<i32> = d[&1].iter().map(|(b, _)| b.tp.partition).collect();
    let second: Vec<i32> = d2[&1].iter().map(|(b, _)| b.tp.partition).collect();
    assert_ne!(first, second);
    // A single batch larger than max.request.size still goes out, alone.
    let mut c = cfg();
    c.max_request_size = 500;
    let small = acc(c);
    let _ = put(&small, &t, 0, &[0u8; 400]).await;
    let _ = put(&small, &t, 1, &[0u8; 400]).await;
    tokio::time::advance(Duration::from_millis(5)).await;
    let d = small
        .drain(Instant::now(), &nodes(&[1]), leader, None, |_| true)
        .unwrap();
    assert_eq!(d[&1].len(), 1);
}

#[tokio::test(start_paused = true)]
async fn idempotent_sequences_and_retries_keep_order() {
    let mut c = cfg();
    c.idempotent = true;
    let a = acc(c);
    let t: Arc<str> = "t".into();
    for _ in 0..30 {
        let _ = put(&a, &t, 0, &[0u8; 90]).await;
    }
    let now = Instant::now();
    // No producer id yet: nothing leaves.
    assert!(
        a.drain(now, &nodes(&[1]), leader, None, |_| true)
            .unwrap()
            .is_empty()
    );
    let pid = Some((42, 0));
    // The partition's first batch for this producer goes alone: until the broker has
    // acknowledged one, it may not know the producer and would take a later batch first.
    let mut d = a.drain(now, &nodes(&[1]), leader, pid, |_| true).unwrap();
    let (first, _) = d.remove(&1).unwrap().remove(0);
    assert_eq!(first.producer.unwrap().base_sequence, 0);
    let first_count = first.record_count() as i32;
    assert!(
        a.drain(now, &nodes(&[1]), leader, pid, |_| true)
            .unwrap()
            .is_empty()
    );
    a.in_flight_done(&first.tp);
    a.complete(first, Ok((0, None)));
    let mut sent = Vec::new();
    for _ in 0..3 {
        let mut d = a.drain(now, &nodes(&[1]), leader, pid, |_| true).unwrap();
        sent.extend(d.remove(&1).unwrap_or_default());
    }
    assert_eq!(sent.len(), 3, "known to the broker: batches pipeline");
    let seqs: Vec<i32> = sent
        .iter()
        .map(|(b, _)| b.producer.unwrap().base_sequence)
        .collect();
    let counts: Vec<i32> = sent.iter().map(|(b, _)| b.record_count() as i32).collect();
    assert_eq!(seqs[0], first_count);
    assert_eq!(seqs[1], first_count + counts[0]);
    assert_eq!(seqs[2], first_count + counts[0] + counts[1]);
    // The first and third fail; they go back in sequence order.
    let mut it = sent.into_iter();
    let (b0, _) = it.next().unwrap();
    let (b1, _) = it.next().unwrap();
    let (b2, _) = it.next().unwrap();
    a.reenqueue(b2, "x".into());
    a.reenqueue(b0, "x".into());
    a.in_flight_done(&b1.tp);
    a.in_flight_done(&b1.tp);
    // One attempt (b1) is still in flight: the retry waits for it.
    let later = now + Duration::from_secs(5);
    assert!(
        a.drain(later, &nodes(&[1]), leader, pid, |_| true)
            .unwrap()
            .is_empty()
    );
    a.in_flight_done(&b1.tp);
    let d = a.drain(later, &nodes(&[1]), leader, pid, |_| true).unwrap();
    let (r0, bytes) = &d[&1][0];
    assert_eq!(r0.producer.unwrap().base_sequence, first_count);
    let view = kafka_protocol::record::RecordBatch::from_bytes(bytes.clone()).unwrap();
    assert_eq!(view.base_sequence(), first_count);
    assert_eq!(view.producer_id(), 42);
    // After an epoch bump, queued batches are renumbered from 0 in order.
    a.reset_sequences();
    a.in_flight_done(&r0.tp);
    let d = a
        .drain(later, &nodes(&[1]), leader, Some((42, 1)), |_| true)
        .unwrap();
    let (r2, bytes) = &d[&1][0];
    assert_eq!(r2.producer.unwrap().base_sequence, 0);
    let view = kafka_protocol::record::RecordBatch::from_bytes(bytes.clone()).unwrap();
    view.verify_crc().unwrap();
    assert_eq!(view.producer_epoch(), 1);
    assert_eq!(view.base_sequence(), 0);
}

#[tokio::test(start_paused = true)]
async fn an_idempotent_partition_has_at_most_the_duplicate_window_in_flight() {
    let mut c = cfg();
    c.idempotent = true;
    let a = acc(c);
    let t: Arc<str> = "t".into();
    for _ in 0..120 {
        let _ = put(&a, &t, 0, &[0u8; 90]).await;
    }
    let now = Instant::now();
    let pid = Some((7, 0));
    let mut d = a.drain(now, &nodes(&[1]), leader, pid, |_| true).unwrap();
    let (first, _) = d.remove(&1).unwrap().remove(0);
    a.in_flight_done(&first.tp);
    a.complete(first, Ok((0, None)));
    // Drained on every call, as if each went on another connection (a leader change):
    // the partition stops once DUPLICATE_WINDOW batches are unanswered.
    let mut sent = Vec::new();
    for _ in 0..10 {
        let mut d = a
            .drain(now, &nodes(&[1, 2]), leader, pid, |_| true)
            .unwrap();
        sent.extend(d.remove(&1).unwrap_or_default());
    }
    assert_eq!(sent.len(), DUPLICATE_WINDOW);
    // One answered: one more may go.
    let (b, _) = sent.remove(0);
    a.in_flight_done(&b.tp);
    a.complete(b, Ok((0, None)));
    let d = a.drain(now, &nodes(&[1]), leader, pid, |_| true).unwrap();
    assert_eq!(d.get(&1).map_or(0, Vec::len), 1);
    assert!(
        a.drain(now, &nodes(&[1]), leader, pid, |_| true)
            .unwrap()
            .is_empty()
    );
}

#[tokio::test(start_paused = true)]
async fn retries_back_off_and_muting_holds_a_partition() {
    let mut c = cfg();
    c.guarantee_order = true;
    let a = acc(c);
    let t: Arc<str> = "t".into();
    let _ = put(&a, &t, 0, b"x").await;
    let _ = put(&a, &t, 1, b"y").await;
    tokio::time::advance(Duration::from_millis(5)).await;
    let mut d = a
        .drain(Instant::now(), &nodes(&[1]), leader, None, |_| true)
        .unwrap();
    let batches = d.remove(&1).unwrap();
    assert_eq!(batches.len(), 2);
    let _ = put(&a, &t, 0, b"z").await;
    tokio::time::advance(Duration::from_millis(5)).await;
    // Partition 0 has a batch in flight: muted.
    assert!(
        a.ready(Instant::now(), leader, |_| true, |_| true)
            .nodes
            .is_empty()
    );
    for (b, _) in batches {
        a.in_flight_done(&b.tp);
        if b.tp.partition == 0 {
            a.reenqueue(b, "retry".into());
        } else {
            a.complete(b, Ok((0, None)));
        }
    }
    // The retry is at the front and backs off 100 ms from its last attempt (5 ms ago).
    let r = a.ready(Instant::now(), leader, |_| true, |_| true);
    assert!(r.nodes.is_empty());
    assert_eq!(r.next_check, Some(Duration::from_millis(95)));
    tokio::time::advance(Duration::from_millis(95)).await;
    let d = a
        .drain(Instant::now(), &nodes(&[1]), leader, None, |_| true)
        .unwrap();
    assert!(d[&1][0].0.retry);
    assert_eq!(d[&1][0].0.attempts, 2);
    // A retry whose leader moved (KIP-951) does not back off; its next retry does again.
    let mut d = d;
    let (b, _) = d.remove(&1).unwrap().remove(0);
    a.in_flight_done(&b.tp);
    a.reenqueue_now(b, "leader moved".into());
    let d = a
        .drain(Instant::now(), &nodes(&[1]), leader, None, |_| true)
        .unwrap();
    let (b, _) = &d[&1][0];
    assert_eq!(b.attempts, 3);
    assert!(!b.retry_now);
}

#[tokio::test(start_paused = true)]
async fn flush_makes_everything_ready_and_waits_for_completion() {
    let a = Arc::new(acc(cfg()));
    let t: Arc<str> = "t".into();
    let (_, rx) = put(&a, &t, 0, b"x").await;
    let a2 = a.clone();
    let flusher = tokio::spawn(async move { a2.flush().await });
    tokio::task::yield_now().await;
    // Linger has not passed, yet the batch is ready.
    assert_eq!(
        a.ready(Instant::now(), leader, |_| true, |_| true).nodes,
        nodes(&[1])
    );
    assert!(!flusher.is_finished());
    let mut d = a
        .drain(Instant::now(), &nodes(&[1]), leader, None, |_| true)
        .unwrap();
    let (b, _) = d.remove(&1).unwrap().pop().unwrap();
    a.complete(b, Ok((7, None)));
    flusher.await.unwrap();
    assert_eq!(rx.await.unwrap().unwrap().offset, 7);
    assert!(!a.has_incomplete());
}

#[tokio::test(start_paused = true)]
async fn queued_batches_expire_after_the_delivery_timeout() {
    let a = acc(cfg());
    let t: Arc<str> = "t".into();
    let _ = put(&a, &t, 9, b"x").await;
    assert_eq!(
        a.next_expiry(Instant::now()),
        Some(Duration::from_secs(120))
    );
    tokio::time::advance(Duration::from_secs(119)).await;
    assert!(a.expired(Instant::now()).is_empty());
    tokio::time::advance(Duration::from_secs(1)).await;
    assert_eq!(a.expired(Instant::now()).len(), 1);
}

#[tokio::test(start_paused = true)]
async fn exhausted_memory_makes_batches_ready_and_append_wait() {
    let a = Arc::new(Accumulator::new(cfg(), BufferPool::new(2048, 1024)));
    let t: Arc<str> = "t".into();
    let _ = put(&a, &t, 0, b"x").await;
    let _ = put(&a, &t, 1, b"y").await;
    let a2 = a.clone();
    let t2 = t.clone();
    let waiter = tokio::spawn(async move {
        let (tx, _rx) = oneshot::channel();
        let rec = AppendRecord {
            timestamp: 1,
            key: None,
            value: Some(b"z"),
            headers: &[],
        };
        a2.append(&t2, 2, &rec, Completion::Future(tx), Duration::from_secs(1))
            .await
    });
    tokio::task::yield_now().await;
    // Someone waits for memory: batches are sent without waiting for linger.
    assert_eq!(
        a.ready(Instant::now(), leader, |_| true, |_| true).nodes,
        nodes(&[1])
    );
    let mut d = a
        .drain(Instant::now(), &nodes(&[1]), leader, None, |_| true)
        .unwrap();
    let (b, _) = d.remove(&1).unwrap().pop().unwrap();
    a.complete(b, Ok((0, None)));
    assert!(waiter.await.unwrap().is_ok());
}

/// Drains partition 0 batch by batch (one at a time, each answered by `answer`), and
/// returns the first byte of every record in the order the batches went out.
async fn drain_in_order(
    a: &Accumulator,
    mut answer: impl FnMut(&Accumulator, ProducerBatch) -> Option<ProducerBatch>,
) -> Vec<u8> {
    let mut sent = Vec::new();
    for _ in 0..100 {
        tokio::time::advance(Duration::from_secs(1)).await;
        let mut out = a
            .drain(Instant::now(), &nodes(&[1]), leader, None, |_| true)
            .unwrap();
        let Some(mut batches) = out.remove(&1) else {
            break;
        };
        assert_eq!(batches.len(), 1, "one partition, one batch per drain");
        let (batch, bytes) = batches.remove(0);
        a.in_flight_done(&batch.tp);
        if let Some(done) = answer(a, batch) {
            let view = kafka_protocol::record::RecordBatch::from_bytes(bytes).unwrap();
            for r in view.records(1 << 20).unwrap() {
                sent.push(r.unwrap().value.unwrap()[0]);
            }
            a.complete(done, Ok((0, None)));
        }
    }
    sent
}

#[tokio::test(start_paused = true)]
async fn split_halves_go_out_before_later_batches_without_idempotence() {
    // One in flight, no idempotence: order rests on queue order alone. The first batch is
    // refused twice (split, then its first half split again), the rest go through.
    let a = acc(AccumulatorConfig {
        guarantee_order: true,
        ..cfg()
    });
    let t: Arc<str> = "t".into();
    let mut rxs = Vec::new();
    for i in 0..40u8 {
        rxs.push(put(&a, &t, 0, &[i; 100]).await.1);
    }
    let mut refusals = 2;
    let sent = drain_in_order(&a, |a, batch| {
        if refusals > 0 && batch.record_count() > 1 {
            refusals -= 1;
            assert!(a.split_and_reenqueue(batch, Instant::now()).is_ok());
            None
        } else {
            Some(batch)
        }
    })
    .await;
    assert_eq!(refusals, 0);
    assert_eq!(sent, (0..40).collect::<Vec<u8>>(), "records out of order");
    for rx in rxs {
        assert!(rx.await.unwrap().is_ok());
    }
}
