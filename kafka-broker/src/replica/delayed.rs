//! Delayed operations, Kafka's purgatory: a produce that waits for its acknowledgement
//! condition and a fetch that waits for enough data, each watching only the partitions it
//! names, each completed or expired exactly once (it is one future that returns once).
//!
//! Every [`Partition`] has two [`Notify`](tokio::sync::Notify)s: [`Partition::changed`], woken
//! when what consumers may read changes (high watermark, last stable offset, log start,
//! truncation, leadership), and [`Partition::appended`], woken when its log end moves. Acks=all
//! produces and consumers' fetches wait on the first, followers' fetches on both. A waiter
//! registers on the partitions it names *before* it checks its condition, so a change that
//! lands between the check and the wait still wakes it; an append elsewhere in the broker
//! wakes nobody here, and an append that moves no high watermark wakes no consumer.
//!
//! Time comes from tokio's clock, so tests run these on virtual time
//! (`#[tokio::test(start_paused = true)]`).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use kafka_protocol::error_code::ErrorCode;
use tokio::time::Instant;

pub use super::partition::Acks;
use super::partition::{Partition, PendingAck};
use crate::error::BrokerError;

/// Completes an append: runs (or joins) the group-commit fsync it needs, moves the high
/// watermark with it, and for acks=all waits until the high watermark covers the append, at
/// most until `deadline` (then REQUEST_TIMED_OUT, as Kafka's delayed produce expires), and
/// checks that the in-sync replicas are still at least `min.insync.replicas`. The fsync itself
/// is not bounded by the deadline: like Kafka's flush on append it is local I/O that the
/// acknowledgement must not skip.
pub async fn complete_append(pending: PendingAck, deadline: Instant) -> Result<(), BrokerError> {
    let PendingAck {
        partition,
        required,
        sync,
        acks,
        min_insync,
    } = pending;
    if let Some((flusher, offset)) = sync {
        flusher.sync_to_async(offset).await?;
        partition.on_durable();
    }
    if acks == Acks::Leader {
        return Ok(());
    }
    loop {
        let changed = partition.changed().notified();
        tokio::pin!(changed);
        changed.as_mut().enable();
        if !partition.is_leader() {
            return Err(BrokerError::kafka(
                ErrorCode::NOT_LEADER_OR_FOLLOWER,
                format!(
                    "{}-{} lost its leadership while the produce waited",
                    partition.topic, partition.index
                ),
            ));
        }
        if partition.high_watermark() >= required {
            // Kafka's `checkEnoughReplicasReachOffset`: replicated, but by fewer replicas
            // than the topic asks for (the ISR shrank while the produce waited).
            let isr = partition.maximal_isr_count();
            if isr < min_insync {
                return Err(BrokerError::kafka(
                    ErrorCode::NOT_ENOUGH_REPLICAS_AFTER_APPEND,
                    format!(
                        "{}-{}: written, but the in-sync replicas ({isr}) are fewer than \
                         min.insync.replicas ({min_insync})",
                        partition.topic, partition.index
                    ),
                ));
            }
            return Ok(());
        }
        if tokio::time::timeout_at(deadline, changed).await.is_err() {
            return Err(BrokerError::kafka(
                ErrorCode::REQUEST_TIMED_OUT,
                format!(
                    "{}-{}: the in-sync replicas did not acknowledge offset {} in time",
                    partition.topic,
                    partition.index,
                    required - 1
                ),
            ));
        }
    }
}

/// Completes every append of one request concurrently; the results are in `pending`'s order.
pub async fn complete_appends(
    pending: Vec<PendingAck>,
    deadline: Instant,
) -> Vec<Result<(), BrokerError>> {
    futures::future::join_all(pending.into_iter().map(|p| complete_append(p, deadline))).await
}

/// What a delayed fetch waits for on each partition it names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Watch {
    /// What consumers may read (a consumer's fetch).
    Visible,
    /// That and the log end (a follower's fetch).
    Appended,
}

/// A delayed fetch: calls `attempt` (which reads the partitions and says whether the fetch is
/// satisfied) until it is satisfied or `deadline` passes, waking only when one of `watched`
/// changed in the way `watch` names. Returns the last attempt's answer. With nothing to watch (every partition named
/// is unknown here) the first answer is returned.
pub async fn fetch_until<R>(
    watched: &[Arc<Partition>],
    watch: Watch,
    deadline: Instant,
    mut attempt: impl FnMut() -> (R, bool),
) -> R {
    loop {
        // Register before reading (see the module docs).
        let mut waits: Vec<Pin<Box<tokio::sync::futures::Notified<'_>>>> = watched
            .iter()
            .map(|p| Box::pin(p.changed().notified()))
            .collect();
        if watch == Watch::Appended {
            waits.extend(watched.iter().map(|p| Box::pin(p.appended().notified())));
        }
        for w in &mut waits {
            w.as_mut().enable();
        }
        let (answer, done) = attempt();
        if done || watched.is_empty() || Instant::now() >= deadline {
            return answer;
        }
        let any = futures::future::select_all(
            waits
                .into_iter()
                .map(|w| w as Pin<Box<dyn Future<Output = ()> + Send + '_>>),
        );
        if tokio::time::timeout_at(deadline, any).await.is_err() {
            // Expired: one last read, so what arrived at the very end is not left out.
            return attempt().0;
        }
    }
}
