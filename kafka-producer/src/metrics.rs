//! Producer metrics: counters the sender and `send` update, read as a snapshot.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Live counters (shared by the producer handle and its sender task).
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) records_sent: AtomicU64,
    pub(crate) records_errored: AtomicU64,
    pub(crate) records_retried: AtomicU64,
    pub(crate) batches_split: AtomicU64,
    pub(crate) batches_sent: AtomicU64,
    pub(crate) batch_bytes: AtomicU64,
    pub(crate) requests: AtomicU64,
    pub(crate) request_latency_us: AtomicU64,
    pub(crate) request_latency_max_us: AtomicU64,
}

impl Counters {
    pub(crate) fn add(c: &AtomicU64, n: u64) {
        c.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn request_done(&self, latency: Duration) {
        let us = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        Self::add(&self.requests, 1);
        Self::add(&self.request_latency_us, us);
        self.request_latency_max_us.fetch_max(us, Ordering::Relaxed);
    }
}

/// A snapshot of the producer's metrics (names after the Java client's where one exists).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProducerMetrics {
    /// `record-send-total`: records acknowledged (or written, with acks=0).
    pub records_sent: u64,
    /// `record-error-total`: records that failed.
    pub records_errored: u64,
    /// `record-retry-total`: records sent again after a retriable error.
    pub records_retried: u64,
    /// `batch-split-total`: batches split in two after the broker refused them as too large.
    pub batches_split: u64,
    /// Batches sent (every attempt).
    pub batches_sent: u64,
    /// `batch-size-avg`: average bytes per batch sent.
    pub batch_size_avg: f64,
    /// `records-per-request-avg` per batch: average records per batch acknowledged.
    pub records_per_batch_avg: f64,
    /// Produce requests answered.
    pub requests: u64,
    /// `request-latency-avg`.
    pub request_latency_avg: Duration,
    /// `request-latency-max`.
    pub request_latency_max: Duration,
    /// `buffer-available-bytes`.
    pub buffer_available_bytes: usize,
    /// `buffer-total-bytes`.
    pub buffer_total_bytes: usize,
    /// `waiting-threads`: sends waiting for buffer memory.
    pub waiting_for_memory: usize,
}

impl ProducerMetrics {
    pub(crate) fn from_counters(
        c: &Counters,
        available: usize,
        total: usize,
        waiting: usize,
    ) -> Self {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let batches = get(&c.batches_sent);
        let requests = get(&c.requests);
        let sent = get(&c.records_sent);
        Self {
            records_sent: sent,
            records_errored: get(&c.records_errored),
            records_retried: get(&c.records_retried),
            batches_split: get(&c.batches_split),
            batches_sent: batches,
            batch_size_avg: if batches == 0 {
                0.0
            } else {
                get(&c.batch_bytes) as f64 / batches as f64
            },
            records_per_batch_avg: if batches == 0 {
                0.0
            } else {
                sent as f64 / batches as f64
            },
            requests,
            request_latency_avg: Duration::from_micros(
                get(&c.request_latency_us)
                    .checked_div(requests)
                    .unwrap_or(0),
            ),
            request_latency_max: Duration::from_micros(get(&c.request_latency_max_us)),
            buffer_available_bytes: available,
            buffer_total_bytes: total,
            waiting_for_memory: waiting,
        }
    }
}
