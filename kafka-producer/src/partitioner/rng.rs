//! A small, lock-free pseudo-random generator for partition choices (SplitMix64 over an atomic
//! counter). Not for anything that needs unpredictability.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

#[derive(Debug)]
pub(crate) struct Rng(AtomicU64);

impl Rng {
    /// Seeded from the clock and a process-wide counter, so two generators made in the same
    /// instant still differ.
    pub(crate) fn from_time() -> Self {
        static INSTANCES: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        let n = INSTANCES.fetch_add(1, Ordering::Relaxed);
        Self::with_seed(nanos ^ mix(n.wrapping_add(1).wrapping_mul(GAMMA)))
    }

    pub(crate) fn with_seed(seed: u64) -> Self {
        Self(AtomicU64::new(seed))
    }

    pub(crate) fn next_u64(&self) -> u64 {
        let state = self
            .0
            .fetch_add(GAMMA, Ordering::Relaxed)
            .wrapping_add(GAMMA);
        mix(state)
    }

    /// Uniform in `0..n` (0 when `n` is 0).
    pub(crate) fn below(&self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Uniform index into something of length `len` (0 when `len` is 0).
    pub(crate) fn index(&self, len: usize) -> usize {
        self.below(len as u64) as usize
    }
}

/// SplitMix64's output function.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn below_stays_in_range_and_covers_it() {
        let rng = Rng::with_seed(7);
        let mut seen = [0u32; 5];
        for _ in 0..5000 {
            let v = rng.index(5);
            assert!(v < 5);
            seen[v] += 1;
        }
        assert!(seen.iter().all(|&c| c > 800), "{seen:?}");
        assert_eq!(rng.below(0), 0);
        assert_eq!(rng.below(1), 0);
    }

    #[test]
    fn generators_made_together_differ() {
        let a = Rng::from_time();
        let b = Rng::from_time();
        assert_ne!(a.next_u64(), b.next_u64());
    }
}
