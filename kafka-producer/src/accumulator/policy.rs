//! The accumulator's settings and the decisions made with them on one partition's queue: how
//! long its first batch waits (linger, retry backoff), when the partition is muted, and which
//! producer fields and sequence number a drained batch gets. Plain data in, `now` passed in,
//! no locks: [`super::Accumulator`] takes the locks and calls these.
//!
//! Imports the queue and the batch.

use std::time::Duration;

use kafka_protocol::record::{Compression, ProducerFields};
use tokio::time::Instant;

use super::queue::{DUPLICATE_WINDOW, PartitionQueue};
use crate::batch::ProducerBatch;

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

impl AccumulatorConfig {
    /// How long the first batch has waited and how long it should wait.
    pub(super) fn wait_times(&self, first: &ProducerBatch, now: Instant) -> (Duration, Duration) {
        if first.retry && first.retry_now {
            (
                now.saturating_duration_since(first.last_attempt),
                Duration::ZERO,
            )
        } else if first.retry {
            let exp = self
                .retry_backoff
                .saturating_mul(1u32 << first.attempts.saturating_sub(1).min(16))
                .min(self.retry_backoff_max.max(self.retry_backoff));
            (now.saturating_duration_since(first.last_attempt), exp)
        } else {
            (now.saturating_duration_since(first.created), self.linger)
        }
    }

    /// When the first batch of `q` may be sent: zero if now (it is full or has a batch behind
    /// it, its linger ran out, or sending is `urgent`: memory exhausted, a flush, closing),
    /// else the linger or retry backoff left. A retry always waits out its backoff.
    pub(super) fn send_in(
        &self,
        q: &PartitionQueue,
        first: &ProducerBatch,
        now: Instant,
        urgent: bool,
    ) -> Duration {
        let (waited, wait_for) = self.wait_times(first, now);
        let backing_off = first.retry && waited < wait_for;
        let full = q.deque.len() > 1 || first.is_full();
        let sendable = full || waited >= wait_for || urgent;
        if sendable && !backing_off {
            Duration::ZERO
        } else {
            wait_for.saturating_sub(waited)
        }
    }

    /// Whether `first` is a retry still in its backoff.
    pub(super) fn backing_off(&self, first: &ProducerBatch, now: Instant) -> bool {
        let (waited, wait_for) = self.wait_times(first, now);
        first.retry && waited < wait_for
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
    pub(super) fn muted(&self, q: &PartitionQueue) -> bool {
        if q.in_flight == 0 {
            return false;
        }
        self.guarantee_order
            || (self.idempotent
                && (q.in_flight >= DUPLICATE_WINDOW
                    || !q.producer_known
                    || q.deque.front().is_some_and(|b| b.producer.is_some())))
    }

    /// The producer fields of the first batch of `q`, about to be drained: none without a
    /// producer id; else the batch's own sequence if it already has one under this producer
    /// id and epoch (a retry), or the partition's next sequence, which moves past its records.
    pub(super) fn producer_fields(
        &self,
        q: &mut PartitionQueue,
        producer: Option<(i64, i16)>,
    ) -> ProducerFields {
        let Some((producer_id, producer_epoch)) = producer else {
            return ProducerFields::default();
        };
        let first = q.deque.front();
        let base_sequence = match first.and_then(|b| b.producer) {
            Some(f) if f.producer_id == producer_id && f.producer_epoch == producer_epoch => {
                f.base_sequence
            }
            _ => {
                let seq = q.next_sequence;
                let records = first.map_or(0, ProducerBatch::record_count);
                let count = i32::try_from(records).unwrap_or(i32::MAX);
                // Sequences wrap to 0 after i32::MAX, as Kafka's do.
                q.next_sequence = seq.wrapping_add(count) & i32::MAX;
                seq
            }
        };
        ProducerFields {
            producer_id,
            producer_epoch,
            base_sequence,
            transactional: self.transactional,
        }
    }
}
