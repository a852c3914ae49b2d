//! A fast hasher for the producer's small maps keyed by topic name (FNV-1a). Keys come from
//! the application, not from the network, so hash flooding is not a concern here.

use std::hash::{BuildHasher, Hasher};

/// Builds [`Fnv`] hashers.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct FnvBuild;

impl BuildHasher for FnvBuild {
    type Hasher = Fnv;

    fn build_hasher(&self) -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

/// 64-bit FNV-1a.
pub(crate) struct Fnv(u64);

impl Hasher for Fnv {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A `HashMap` with the FNV hasher.
pub(crate) type FastMap<K, V> = std::collections::HashMap<K, V, FnvBuild>;
