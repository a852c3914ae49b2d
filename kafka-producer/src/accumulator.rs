//! The record accumulator: per-partition deques of batches that `send` appends to and the
//! sender drains.
//!
//! Appending locks only that partition's deque, tries the last open batch, and otherwise takes
//! a buffer from the pool (waiting for memory outside the lock) and opens a new batch. The
//! sender asks which brokers have something ready ([`Accumulator::ready`]) and takes at most
//! one batch per partition per request ([`Accumulator::drain`]), assigning idempotent
//! sequence numbers as batches leave. Decisions take `now`; nothing here sleeps except
//! `append` waiting for memory.

use std::collections::{BTreeSet, HashMap, VecDeque};

use crate::fast_hash::FastMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::record::{BatchWriter, Compression, ProducerFields};
use kafka_protocol::TopicPartition;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::batch::{AppendRecord, ProducerBatch, RecordEntry};
use crate::delivery::{Completion, Reports};
use crate::error::ProducerError;
use crate::pool::BufferPool;

/// The accumulator's share of the producer settings.
#[derive(Debug, Clone)]
pub(crate) struct AccumulatorConfig {
    pub(crate) batch_size: usize,
    pub(crate) linger: Duration,
    pub(crate) retry_backoff: Duration,
    pub(crate) retry_backoff_max: Duration,
    pub(crate) delivery_timeout: Duration,
    pub(crate) compression: Compression,
    pub(crate) compression_level: Option<i32>,
    pub(crate) max_request_size: usize,
    /// Idempotence: sequence numbers, and retries held back until the partition is quiet.
    pub(crate) idempotent: bool,
    /// `max.in.flight.requests.per.connection=1`: a partition with a batch in flight is muted.
    pub(crate) guarantee_order: bool,
    /// `transactional.id` set: batches carry the transactional attribute.
    pub(crate) transactional: bool,
}

/// The batches per producer and partition a broker remembers for duplicate detection
/// (Kafka's `ProducerStateEntry.NUM_BATCHES_TO_RETAIN`).
pub(crate) const DUPLICATE_WINDOW: usize = 5;

/// One partition's queue and its in-flight bookkeeping, under one lock.
#[derive(Debug, Default)]
pub(crate) struct PartitionQueue {
    pub(crate) deque: VecDeque<ProducerBatch>,
    /// Batches of this partition in flight.
    pub(crate) in_flight: usize,
    /// Next sequence number to assign (idempotence).
    pub(crate) next_sequence: i32,
    /// Records of the last batch sent: a new batch reserves room for as many completions.
    pub(crate) records_hint: usize,
    /// A batch of the current producer id and epoch was acknowledged on this partition, so
    /// the broker knows the producer here (idempotence; see [`Accumulator::muted`]).
    pub(crate) producer_known: bool,
}

pub(crate) type Queue = Arc<Mutex<PartitionQueue>>;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

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
            match Self::try_append_last(&mut q, rec, completion) {
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
        let completion = match Self::try_append_last(&mut q, rec, completion) {
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

    /// Appends into the last batch of the deque; `Ok(true)` when this append made the batch
    /// full (an edge: later appends behind a full batch do not report it again, so the sender
    /// is woken once per batch, not once per record).
    fn try_append_last(
        q: &mut PartitionQueue,
        rec: &AppendRecord<'_>,
        completion: Completion,
    ) -> Result<bool, Completion> {
        match q.deque.back_mut() {
            Some(last) if !last.is_closed() => {
                let was_full = last.is_full();
                last.try_append(rec, completion)?;
                Ok(!was_full && last.is_full())
            }
            _ => Err(completion),
        }
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
            if out.nodes.contains(&node) || self.muted(&q) || !node_has_room(node) {
                continue;
            }
            let (waited, wait_for) = self.wait_times(first, now);
            let backing_off = first.retry && waited < wait_for;
            let full = q.deque.len() > 1 || first.is_full();
            let sendable = full || waited >= wait_for || urgent;
            if sendable && !backing_off {
                out.nodes.insert(node);
            } else {
                let left = wait_for.saturating_sub(waited);
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

    /// How long the first batch has waited and how long it should wait.
    fn wait_times(&self, first: &ProducerBatch, now: Instant) -> (Duration, Duration) {
        if first.retry && first.retry_now {
            (
                now.saturating_duration_since(first.last_attempt),
                Duration::ZERO,
            )
        } else if first.retry {
            let exp = self
                .cfg
                .retry_backoff
                .saturating_mul(1u32 << first.attempts.saturating_sub(1).min(16))
                .min(self.cfg.retry_backoff_max.max(self.cfg.retry_backoff));
            (now.saturating_duration_since(first.last_attempt), exp)
        } else {
            (
                now.saturating_duration_since(first.created),
                self.cfg.linger,
            )
        }
    }

    /// A partition sends nothing while: it has a batch in flight and order must be kept by
    /// muting (max.in.flight=1), or its next batch is a retry of an idempotent batch and
    /// earlier attempts are still in flight (retries go out in sequence order), or no batch
    /// of the current producer id has been acknowledged on it yet. The last keeps order when
    /// the first batch fails: a broker takes a producer it does not know at any sequence (as
    /// Kafka does since KIP-360), so a second batch in flight behind a refused first one
    /// would be appended before it.
    ///
    /// And, idempotent, while [`DUPLICATE_WINDOW`] batches of the partition are unanswered,
    /// whichever connections they went on: after a leader change batches may still wait at
    /// the old leader while later ones go to the new one, and a retry must stay within the
    /// batches the broker remembers, or a batch written once would be refused as out of
    /// sequence instead of answered as a duplicate.
    fn muted(&self, q: &PartitionQueue) -> bool {
        if q.in_flight == 0 {
            return false;
        }
        self.cfg.guarantee_order
            || (self.cfg.idempotent
                && (q.in_flight >= DUPLICATE_WINDOW
                    || !q.producer_known
                    || q.deque.front().is_some_and(|b| b.producer.is_some())))
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
            if self.muted(&q) {
                continue;
            }
            let Some(first) = q.deque.front() else {
                continue;
            };
            let (waited, wait_for) = self.wait_times(first, now);
            if first.retry && waited < wait_for {
                continue;
            }
            if *size > 0 && *size + first.size() > self.cfg.max_request_size {
                continue;
            }
            let fields = match producer {
                Some((producer_id, producer_epoch)) => {
                    let base_sequence = match first.producer {
                        Some(f)
                            if f.producer_id == producer_id
                                && f.producer_epoch == producer_epoch =>
                        {
                            f.base_sequence
                        }
                        _ => {
                            let seq = q.next_sequence;
                            let count = i32::try_from(first.record_count()).unwrap_or(i32::MAX);
                            // Sequences wrap to 0 after i32::MAX, as Kafka's do.
                            q.next_sequence = seq.wrapping_add(count) & i32::MAX;
                            seq
                        }
                    };
                    ProducerFields {
                        producer_id,
                        producer_epoch,
                        base_sequence,
                        transactional: self.cfg.transactional,
                    }
                }
                None => ProducerFields::default(),
            };
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
        let pos = Self::retry_position(&q, &batch);
        q.deque.insert(pos, batch);
    }

    /// Where a batch goes back into its queue: with a sequence number (idempotence), before
    /// the first batch with a later sequence or none yet; without one, at the front (it was
    /// sent before everything still queued).
    fn retry_position(q: &PartitionQueue, batch: &ProducerBatch) -> usize {
        match batch.producer.filter(|f| f.producer_id >= 0) {
            Some(f) => q
                .deque
                .iter()
                .position(|b| b.producer.is_none_or(|g| g.base_sequence > f.base_sequence))
                .unwrap_or(q.deque.len()),
            None => 0,
        }
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
        let pos = Self::retry_position(&q, &first);
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

#[cfg(test)]
mod tests {
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
}
