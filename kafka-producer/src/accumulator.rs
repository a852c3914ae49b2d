//! The record accumulator: per-partition deques of batches that `send` appends to and the
//! sender drains.
//!
//! Appending locks only that partition's deque, tries the last open batch, and otherwise takes
//! a buffer from the pool (waiting for memory outside the lock) and opens a new batch. The
//! sender asks which brokers have something ready ([`Accumulator::ready`]) and takes at most
//! one batch per partition per request ([`Accumulator::drain`]), assigning idempotent
//! sequence numbers as batches leave. Decisions take `now`; nothing here sleeps except
//! `append` waiting for memory.
//!
//! | file | what |
//! |---|---|
//! | `accumulator.rs` | [`Accumulator`]: queues, append, ready, drain, retry, complete, flush |
//! | `queue.rs` | one partition's deque: append to its last batch, where a retry goes back |
//! | `policy.rs` | [`AccumulatorConfig`] and its decisions: linger, backoff, muting, sequences |
//! | `tests.rs` | the tests |
//!
//! Imports point down: this file uses `policy.rs` and `queue.rs`, `policy.rs` uses
//! `queue.rs`, and `queue.rs` only the batch.

mod policy;
mod queue;
#[cfg(test)]
mod tests;

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::TopicPartition;
use kafka_protocol::record::BatchWriter;
use tokio::sync::Notify;
use tokio::time::Instant;

pub(crate) use policy::AccumulatorConfig;
pub(crate) use queue::Queue;
use queue::lock;

use crate::batch::{AppendRecord, ProducerBatch, RecordEntry};
use crate::delivery::{Completion, Reports};
use crate::error::ProducerError;
use crate::fast_hash::FastMap;
use crate::pool::BufferPool;

/// What [`Accumulator::ready`] found.
#[derive(Debug, Default)]
pub(crate) struct ReadyCheck {
    /// Brokers with at least one partition ready to send.
    pub(crate) nodes: BTreeSet<i32>,
    /// When to look again if nothing changes (a linger or backoff running out).
    pub(crate) next_check: Option<Duration>,
    /// Topics with batches for a partition whose leader is unknown.
    pub(crate) unknown_leaders: BTreeSet<Arc<str>>,
}

/// Outcome of an append, for waking the sender.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Appended {
    /// The batch the record went into is full, or a newer batch exists behind it.
    pub(crate) batch_full: bool,
    /// A new batch was opened for the record.
    pub(crate) new_batch: bool,
}

/// The accumulator.
pub(crate) struct Accumulator {
    cfg: AccumulatorConfig,
    pool: BufferPool,
    topics: RwLock<FastMap<Arc<str>, Vec<Queue>>>,
    /// Every queue, in creation order, for the sender's sweeps (replaced, not changed, when a
    /// queue is added, so a sweep takes it with one reference count).
    all: RwLock<Arc<Vec<(TopicPartition, Queue)>>>,
    drain_start: AtomicUsize,
    flushes: AtomicUsize,
    closed: AtomicBool,
    /// Ids of batches not completed yet (for `flush`).
    incomplete: Mutex<BTreeSet<u64>>,
    next_batch_id: AtomicU64,
    /// Woken when batches complete.
    pub(crate) completed: Notify,
    /// Woken when a batch becomes ready (the sender listens).
    pub(crate) wake: Notify,
    /// Interceptors and delivery handler, told of every record's result.
    reports: Reports,
    /// Completion lists of completed batches, for new ones (no allocation per batch).
    lists: Mutex<Vec<Vec<RecordEntry>>>,
}

/// Most spare completion lists kept, and the most entries a kept list may hold room for.
const SPARE_LISTS: usize = 256;
const SPARE_LIST_CAPACITY: usize = 4096;

impl std::fmt::Debug for Accumulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Accumulator")
            .field("partitions", &self.all.read().map(|a| a.len()).unwrap_or(0))
            .field("pool", &self.pool)
            .finish_non_exhaustive()
    }
}

impl Accumulator {
    pub(crate) fn new(cfg: AccumulatorConfig, pool: BufferPool) -> Self {
        Self {
            cfg,
            pool,
            topics: RwLock::new(FastMap::default()),
            all: RwLock::new(Arc::new(Vec::new())),
            drain_start: AtomicUsize::new(0),
            flushes: AtomicUsize::new(0),
            closed: AtomicBool::new(false),
            incomplete: Mutex::new(BTreeSet::new()),
            next_batch_id: AtomicU64::new(0),
            completed: Notify::new(),
            wake: Notify::new(),
            reports: Reports::default(),
            lists: Mutex::new(Vec::new()),
        }
    }

    /// Where records' results go besides their own completions.
    #[must_use]
    pub(crate) fn with_reports(mut self, reports: Reports) -> Self {
        self.reports = reports;
        self
    }

    pub(crate) fn pool(&self) -> &BufferPool {
        &self.pool
    }

    fn queue(&self, topic: &Arc<str>, partition: i32) -> Queue {
        let idx = usize::try_from(partition).unwrap_or(0);
        if let Some(q) = self
            .topics
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&**topic)
            .and_then(|v| v.get(idx))
        {
            return q.clone();
        }
        let queues = self.queues_for(topic, idx + 1);
        queues[idx].clone()
    }

    /// The queues of a topic's first `count` partitions (created as needed), for callers that
    /// keep them to append without a lookup.
    pub(crate) fn queues_for(&self, topic: &Arc<str>, count: usize) -> Vec<Queue> {
        let mut topics = self
            .topics
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let queues = topics.entry(topic.clone()).or_default();
        if queues.len() < count {
            let mut all = self
                .all
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let mut list: Vec<(TopicPartition, Queue)> = all.as_ref().clone();
            while queues.len() < count {
                let q: Queue = Arc::default();
                list.push((
                    TopicPartition {
                        topic: topic.clone(),
                        partition: queues.len() as i32,
                    },
                    q.clone(),
                ));
                queues.push(q);
            }
            *all = Arc::new(list);
        }
        queues[..count].to_vec()
    }

    fn snapshot(&self) -> Arc<Vec<(TopicPartition, Queue)>> {
        self.all
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Appends a record to `topic`/`partition`, waiting up to `max_block` for memory.
    pub(crate) async fn append(
        &self,
        topic: &Arc<str>,
        partition: i32,
        rec: &AppendRecord<'_>,
        completion: Completion,
        max_block: Duration,
    ) -> Result<Appended, ProducerError> {
        let queue = self.queue(topic, partition);
        self.append_to(&queue, topic, partition, rec, completion, max_block)
            .await
    }

    /// [`Self::append`] into a queue the caller got from [`Self::queues_for`].
    pub(crate) async fn append_to(
        &self,
        queue: &Queue,
        topic: &Arc<str>,
        partition: i32,
        rec: &AppendRecord<'_>,
        completion: Completion,
        max_block: Duration,
    ) -> Result<Appended, ProducerError> {
        if self.closed.load(Ordering::Acquire) {
            return Err(ProducerError::Closed(None));
        }
        let completion = {
            let mut q = lock(queue);
            match q.try_append_last(rec, completion) {
                Ok(full) => {
                    return Ok(Appended {
                        batch_full: full,
                        new_batch: false,
                    });
                }
                Err(c) => c,
            }
        };
        let upper = BatchWriter::estimate_size_upper_bound(rec.key, rec.value, rec.headers);
        if upper > self.cfg.max_request_size {
            return Err(ProducerError::RecordTooLarge {
                size: upper,
                limit: self.cfg.max_request_size,
                key: "max.request.size",
            });
        }
        let size = self.cfg.batch_size.max(upper);
        let buffer = match self.pool.try_allocate(size) {
            Some(b) => b,
            None => {
                // Out of memory: make sure the sender drains, then wait.
                self.wake.notify_one();
                self.pool.allocate(size, max_block).await?
            }
        };
        if self.closed.load(Ordering::Acquire) {
            self.pool.release(buffer.allocation, Some(buffer.buf));
            return Err(ProducerError::Closed(None));
        }
        let now = Instant::now();
        let mut q = lock(queue);
        // Someone may have opened a batch while we waited.
        let completion = match q.try_append_last(rec, completion) {
            Ok(full) => {
                drop(q);
                self.pool.release(buffer.allocation, Some(buffer.buf));
                return Ok(Appended {
                    batch_full: full,
                    new_batch: false,
                });
            }
            Err(c) => c,
        };
        let tp = TopicPartition {
            topic: topic.clone(),
            partition,
        };
        let hint = q
            .deque
            .back()
            .map_or(q.records_hint, ProducerBatch::record_count);
        let list = lock(&self.lists).pop().unwrap_or_default();
        let mut batch = ProducerBatch::new(
            tp,
            buffer.buf,
            buffer.allocation,
            self.cfg.compression,
            self.cfg.compression_level,
            self.cfg.batch_size,
            now,
        )
        .with_records(list, hint);
        if batch.try_append(rec, completion).is_err() {
            // Cannot happen for a first record that passed the size check; fail cleanly.
            batch.complete(
                Err(ProducerError::Serialization(
                    "record could not be encoded into a new batch".into(),
                )),
                &self.reports,
                &self.pool,
            );
            return Err(ProducerError::Serialization(
                "record could not be encoded into a new batch".into(),
            ));
        }
        let id = self.next_batch_id.fetch_add(1, Ordering::Relaxed);
        batch.id = id;
        lock(&self.incomplete).insert(id);
        // A new batch means the one before it (if any) is full; the sender wakes either way
        // (for a first batch, to start its linger timer).
        let full = batch.is_full() || !q.deque.is_empty();
        q.deque.push_back(batch);
        Ok(Appended {
            batch_full: full,
            new_batch: true,
        })
    }

    /// Which brokers can be sent to now. `leader` maps a partition to its leader's node id;
    /// `node_has_room` says whether a node can take another request; `sendable` whether the
    /// partition may send at all (a transactional producer's partition is added to its
    /// transaction first).
    pub(crate) fn ready(
        &self,
        now: Instant,
        leader: impl Fn(&TopicPartition) -> Option<i32>,
        node_has_room: impl Fn(i32) -> bool,
        sendable: impl Fn(&TopicPartition) -> bool,
    ) -> ReadyCheck {
        let mut out = ReadyCheck::default();
        let exhausted = self.pool.waiting() > 0;
        let urgent = exhausted
            || self.flushes.load(Ordering::Acquire) > 0
            || self.closed.load(Ordering::Acquire);
        for (tp, queue) in self.snapshot().iter() {
            let q = lock(queue);
            let Some(first) = q.deque.front() else {
                continue;
            };
            if !sendable(tp) {
                continue;
            }
            let Some(node) = leader(tp) else {
                out.unknown_leaders.insert(tp.topic.clone());
                continue;
            };
            if out.nodes.contains(&node) || self.cfg.muted(&q) || !node_has_room(node) {
                continue;
            }
            let left = self.cfg.send_in(&q, first, now, urgent);
            if left.is_zero() {
                out.nodes.insert(node);
            } else {
                out.next_check = Some(out.next_check.map_or(left, |c: Duration| c.min(left)));
            }
        }
        out
    }

    /// Adaptive partitioning: the batches queued per partition whose leader is known, with
    /// that leader: (topic, partition, leader, queued batches).
    pub(crate) fn queue_lengths(
        &self,
        leader: impl Fn(&TopicPartition) -> Option<i32>,
    ) -> Vec<(Arc<str>, i32, i32, usize)> {
        let all = self.snapshot();
        let mut out = Vec::with_capacity(all.len());
        for (tp, queue) in all.iter() {
            if let Some(node) = leader(tp) {
                let len = lock(queue).deque.len();
                out.push((tp.topic.clone(), tp.partition, node, len));
            }
        }
        out
    }

    /// Takes up to one batch per partition led by each of `nodes`, at most `max_request_size`
    /// bytes per node (one batch always goes, whatever its size). `producer` is the current
    /// producer id and epoch when idempotent (nothing is drained without one); `sendable` as
    /// for [`Self::ready`].
    pub(crate) fn drain(
        &self,
        now: Instant,
        nodes: &BTreeSet<i32>,
        leader: impl Fn(&TopicPartition) -> Option<i32>,
        producer: Option<(i64, i16)>,
        sendable: impl Fn(&TopicPartition) -> bool,
    ) -> Result<HashMap<i32, Vec<(ProducerBatch, Bytes)>>, ProducerError> {
        let mut out: HashMap<i32, Vec<(ProducerBatch, Bytes)>> = HashMap::new();
        let mut sizes: HashMap<i32, usize> = HashMap::new();
        if self.cfg.idempotent && producer.is_none() {
            return Ok(out);
        }
        let all = self.snapshot();
        if all.is_empty() {
            return Ok(out);
        }
        let start = self.drain_start.fetch_add(1, Ordering::Relaxed) % all.len();
        for i in 0..all.len() {
            let (tp, queue) = &all[(start + i) % all.len()];
            if !sendable(tp) {
                continue;
            }
            let Some(node) = leader(tp) else { continue };
            if !nodes.contains(&node) {
                continue;
            }
            let size = sizes.entry(node).or_default();
            let mut q = lock(queue);
            if self.cfg.muted(&q) {
                continue;
            }
            let Some(first) = q.deque.front() else {
                continue;
            };
            if self.cfg.backing_off(first, now) {
                continue;
            }
            if *size > 0 && *size + first.size() > self.cfg.max_request_size {
                continue;
            }
            let fields = self.cfg.producer_fields(&mut q, producer);
            let Some(mut batch) = q.deque.pop_front() else {
                continue;
            };
            q.records_hint = batch.record_count();
            match batch.close(fields) {
                Ok(bytes) => {
                    *size += bytes.len();
                    batch.attempts += 1;
                    batch.last_attempt = now;
                    batch.retry_now = false;
                    q.in_flight += 1;
                    out.entry(node).or_default().push((batch, bytes));
                }
                Err(e) => {
                    drop(q);
                    self.complete(batch, Err(e));
                }
            }
        }
        Ok(out)
    }

    /// A batch's request finished (either way): the partition may send again.
    pub(crate) fn in_flight_done(&self, tp: &TopicPartition) {
        let queue = self.queue(&tp.topic, tp.partition);
        let mut q = lock(&queue);
        q.in_flight = q.in_flight.saturating_sub(1);
    }

    /// Puts a batch back for a retry: at the front of its deque, before batches with higher
    /// sequence numbers, so the partition's order is kept.
    pub(crate) fn reenqueue(&self, batch: ProducerBatch, error: String) {
        self.put_back(batch, error, false);
    }

    /// [`Self::reenqueue`] without the retry backoff: the partition's leader moved since the
    /// failed attempt (KIP-951), so the retry goes to the new leader at once.
    pub(crate) fn reenqueue_now(&self, batch: ProducerBatch, error: String) {
        self.put_back(batch, error, true);
    }

    fn put_back(&self, mut batch: ProducerBatch, error: String, now: bool) {
        batch.retry = true;
        batch.retry_now = now;
        batch.last_error = Some(error);
        let queue = self.queue(&batch.tp.topic, batch.tp.partition);
        let mut q = lock(&queue);
        let pos = q.retry_position(&batch);
        q.deque.insert(pos, batch);
    }

    /// Splits a batch the broker refused as too large into two halves queued where it was
    /// (see [`ProducerBatch::split`]); gives it back when it cannot be split.
    pub(crate) fn split_and_reenqueue(
        &self,
        batch: ProducerBatch,
        now: Instant,
    ) -> Result<(), Box<ProducerBatch>> {
        let old_id = batch.id;
        let halves = batch.split(self.cfg.compression_level, now, &self.pool)?;
        lock(&self.incomplete).remove(&old_id);
        let [mut first, mut second] = halves;
        for half in [&mut first, &mut second] {
            half.id = self.next_batch_id.fetch_add(1, Ordering::Relaxed);
            lock(&self.incomplete).insert(half.id);
        }
        let queue = self.queue(&first.tp.topic, first.tp.partition);
        let mut q = lock(&queue);
        // Where the original would go back, the second half right behind the first.
        let pos = q.retry_position(&first);
        q.deque.insert(pos, second);
        q.deque.insert(pos, first);
        Ok(())
    }

    /// Forgets assigned sequence numbers after a producer id or epoch change: queued batches
    /// are renumbered from 0, in order, when they are drained next.
    pub(crate) fn reset_sequences(&self) {
        for (_, queue) in self.snapshot().iter() {
            let mut q = lock(queue);
            q.next_sequence = 0;
            q.producer_known = false;
            for b in &mut q.deque {
                b.producer = None;
            }
        }
    }

    /// Removes queued batches older than `delivery.timeout.ms` (in-flight ones expire when
    /// their request ends).
    pub(crate) fn expired(&self, now: Instant) -> Vec<ProducerBatch> {
        let mut out = Vec::new();
        for (_, queue) in self.snapshot().iter() {
            let mut q = lock(queue);
            while q
                .deque
                .front()
                .is_some_and(|b| b.age(now) >= self.cfg.delivery_timeout)
            {
                if let Some(b) = q.deque.pop_front() {
                    out.push(b);
                }
            }
        }
        out
    }

    /// Time until the oldest queued batch expires.
    pub(crate) fn next_expiry(&self, now: Instant) -> Option<Duration> {
        let mut next: Option<Duration> = None;
        for (_, queue) in self.snapshot().iter() {
            let q = lock(queue);
            if let Some(b) = q.deque.front() {
                let left = self.cfg.delivery_timeout.saturating_sub(b.age(now));
                next = Some(next.map_or(left, |n| n.min(left)));
            }
        }
        next
    }

    /// Completes a batch (every record's completion, the interceptors and the delivery
    /// handler hear of it) and wakes flushers.
    pub(crate) fn complete(
        &self,
        batch: ProducerBatch,
        result: Result<(i64, Option<i64>), ProducerError>,
    ) {
        let id = batch.id;
        if result.is_ok() && batch.producer.is_some() {
            let queue = self.queue(&batch.tp.topic, batch.tp.partition);
            lock(&queue).producer_known = true;
        }
        let list = batch.complete(result, &self.reports, &self.pool);
        if list.capacity() <= SPARE_LIST_CAPACITY {
            let mut lists = lock(&self.lists);
            if lists.len() < SPARE_LISTS {
                lists.push(list);
            }
        }
        lock(&self.incomplete).remove(&id);
        self.completed.notify_waiters();
    }

    /// Whether any batch is queued or in flight.
    pub(crate) fn has_incomplete(&self) -> bool {
        !lock(&self.incomplete).is_empty()
    }

    /// Queued batches (not in flight).
    #[cfg(test)]
    pub(crate) fn queued_batches(&self) -> usize {
        self.snapshot()
            .iter()
            .map(|(_, q)| lock(q).deque.len())
            .sum()
    }

    /// Sends everything now and waits until every batch that exists at the time of the call
    /// has completed.
    pub(crate) async fn flush(&self) {
        let upto = self.next_batch_id.load(Ordering::Acquire);
        self.flushes.fetch_add(1, Ordering::AcqRel);
        self.wake.notify_one();
        loop {
            let notified = self.completed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let pending = lock(&self.incomplete)
                .first()
                .is_some_and(|&first| first < upto);
            if !pending {
                break;
            }
            notified.await;
        }
        self.flushes.fetch_sub(1, Ordering::AcqRel);
    }

    /// Stops appends; queued batches become ready at once.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        self.wake.notify_one();
    }

    pub(crate) fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Takes the queued batches that were never sent (no sequence number yet), to fail them
    /// when their transaction aborts; retries of batches already sent stay, to be resolved.
    pub(crate) fn take_unsent(&self) -> Vec<ProducerBatch> {
        let mut out = Vec::new();
        for (_, queue) in self.snapshot().iter() {
            let mut q = lock(queue);
            if q.deque.iter().all(|b| b.producer.is_some()) {
                continue;
            }
            let (keep, unsent): (VecDeque<_>, VecDeque<_>) =
                q.deque.drain(..).partition(|b| b.producer.is_some());
            q.deque = keep;
            out.extend(unsent);
        }
        out
    }

    /// Takes every queued batch (to fail them when closing without delivering).
    pub(crate) fn take_all(&self) -> Vec<ProducerBatch> {
        let mut out = Vec::new();
        for (_, queue) in self.snapshot().iter() {
            out.extend(lock(queue).deque.drain(..));
        }
        out
    }
}
