//! A lock-free latency histogram the delivery reports of both clients record into.

use std::sync::atomic::{AtomicU64, Ordering};

/// Log-linear histogram of nanoseconds: exact below 128, then 64 buckets per power of two.
pub(crate) struct Histogram {
    pub(crate) counts: [AtomicU64; BUCKETS],
}

pub(crate) const SUB_BITS: u32 = 6;
pub(crate) const BUCKETS: usize = (64 - SUB_BITS as usize + 1) << SUB_BITS;

impl Histogram {
    pub(crate) fn index(v: u64) -> usize {
        if v < 2 << SUB_BITS {
            v as usize
        } else {
            let shift = 63 - v.leading_zeros() - SUB_BITS;
            (((u64::from(shift) + 1) << SUB_BITS) + (v >> shift) - (1 << SUB_BITS)) as usize
        }
    }

    /// The middle of bucket `i`.
    pub(crate) fn value(i: usize) -> u64 {
        let i = i as u64;
        if i < 2 << SUB_BITS {
            i
        } else {
            let shift = (i >> SUB_BITS) - 1;
            let low = ((i & ((1 << SUB_BITS) - 1)) + (1 << SUB_BITS)) << shift;
            low + (1 << shift) / 2
        }
    }

    pub(crate) fn record(&self, ns: u64) {
        if let Some(c) = self.counts.get(Self::index(ns)) {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }

    pub(crate) fn reset(&self) {
        for c in &self.counts {
            c.store(0, Ordering::Relaxed);
        }
    }

    /// The `p` quantile in ms (NaN when empty).
    pub(crate) fn quantile_ms(&self, p: f64) -> f64 {
        let counts: Vec<u64> = self
            .counts
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .collect();
        let total: u64 = counts.iter().sum();
        if total == 0 {
            return f64::NAN;
        }
        let target = ((p * total as f64).ceil() as u64).clamp(1, total);
        let mut seen = 0;
        for (i, n) in counts.iter().enumerate() {
            seen += n;
            if seen >= target {
                return Self::value(i) as f64 / 1e6;
            }
        }
        f64::NAN
    }
}
