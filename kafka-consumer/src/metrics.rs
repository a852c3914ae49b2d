//! The consumer's metrics, as a plain struct ([`crate::Consumer::metrics`] takes a snapshot).

use std::collections::BTreeMap;
use std::time::Duration;

use crate::types::TopicPartition;

/// A snapshot of the consumer's counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConsumerMetrics {
    /// Records handed to the application.
    pub records_consumed: u64,
    /// Key, value and header bytes of those records.
    pub bytes_consumed: u64,
    /// Record-set bytes received in Fetch answers.
    pub bytes_fetched: u64,
    /// The same, by the broker that answered (the partition leader, or the preferred read
    /// replica it named: KIP-392).
    pub bytes_fetched_by_node: BTreeMap<i32, u64>,
    /// Partitions whose leader moved at once on an answer's leader hint (KIP-951).
    pub leader_hints_taken: u64,
    /// Fetch requests answered (successfully or not).
    pub fetch_requests: u64,
    /// Fetch requests that failed as a whole (connection lost, timeout, broker error).
    pub fetch_errors: u64,
    /// Mean and largest time from sending a Fetch to its answer.
    pub fetch_latency_avg: Duration,
    pub fetch_latency_max: Duration,
    /// Record-set bytes fetched and not yet handed out (bounded by
    /// `fetch.buffer.max.bytes`, plus one batch at most).
    pub buffered_bytes: usize,
    /// The most `buffered_bytes` has been.
    pub buffered_bytes_max: usize,
    /// Bytes reserved for fetches in flight.
    pub reserved_bytes: usize,
    /// `fetch.buffer.max.bytes`.
    pub buffer_capacity: usize,
    /// Per partition: high watermark (last stable offset under read_committed) minus the
    /// position, for partitions with both known.
    pub lag: BTreeMap<TopicPartition, i64>,
    /// Offset commits that succeeded and failed.
    pub commits: u64,
    pub commit_failures: u64,
    /// Positions reset (no committed offset, out of range, seek to beginning/end).
    pub offset_resets: u64,
    /// Truncations detected by position validation (KIP-320).
    pub log_truncations: u64,
    /// Assignments taken from the group (one per rebalance this member took part in).
    pub rebalances: u64,
}

/// Running counters behind [`ConsumerMetrics`].
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub records_consumed: u64,
    pub bytes_consumed: u64,
    pub bytes_fetched: u64,
    pub bytes_fetched_by_node: BTreeMap<i32, u64>,
    pub leader_hints_taken: u64,
    pub fetch_requests: u64,
    pub fetch_errors: u64,
    pub fetch_latency_total: Duration,
    pub fetch_latency_max: Duration,
    pub buffered_bytes_max: usize,
    pub commits: u64,
    pub commit_failures: u64,
    pub offset_resets: u64,
    pub log_truncations: u64,
    pub rebalances: u64,
}

impl Counters {
    pub(crate) fn fetch_answered(&mut self, latency: Duration, failed: bool) {
        self.fetch_requests += 1;
        if failed {
            self.fetch_errors += 1;
        }
        self.fetch_latency_total += latency;
        self.fetch_latency_max = self.fetch_latency_max.max(latency);
    }

    pub(crate) fn latency_avg(&self) -> Duration {
        u32::try_from(self.fetch_requests)
            .ok()
            .filter(|n| *n > 0)
            .map_or(Duration::ZERO, |n| self.fetch_latency_total / n)
    }
}
