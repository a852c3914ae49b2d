//! One partition's deque of batches and its in-flight bookkeeping, and what is decided on a
//! deque alone: appending into its last open batch, and where a retried batch goes back.
//!
//! Imports only the batch and its completion.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use crate::batch::{AppendRecord, ProducerBatch};
use crate::delivery::Completion;

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
    /// the broker knows the producer here (idempotence; see
    /// [`AccumulatorConfig::muted`](super::AccumulatorConfig::muted)).
    pub(crate) producer_known: bool,
}

pub(crate) type Queue = Arc<Mutex<PartitionQueue>>;

/// Locks a queue (or another of the accumulator's mutexes), ignoring poisoning: every change
/// under these locks leaves the data consistent.
pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl PartitionQueue {
    /// Appends into the last batch of the deque; `Ok(true)` when this append made the batch
    /// full (an edge: later appends behind a full batch do not report it again, so the sender
    /// is woken once per batch, not once per record).
    pub(super) fn try_append_last(
        &mut self,
        rec: &AppendRecord<'_>,
        completion: Completion,
    ) -> Result<bool, Completion> {
        match self.deque.back_mut() {
            Some(last) if !last.is_closed() => {
                let was_full = last.is_full();
                last.try_append(rec, completion)?;
                Ok(!was_full && last.is_full())
            }
            _ => Err(completion),
        }
    }

    /// Where a batch goes back into the queue: with a sequence number (idempotence), before
    /// the first batch with a later sequence or none yet; without one, at the front (it was
    /// sent before everything still queued).
    pub(super) fn retry_position(&self, batch: &ProducerBatch) -> usize {
        match batch.producer.filter(|f| f.producer_id >= 0) {
            Some(f) => self
                .deque
                .iter()
                .position(|b| b.producer.is_none_or(|g| g.base_sequence > f.base_sequence))
                .unwrap_or(self.deque.len()),
            None => 0,
        }
    }
}
