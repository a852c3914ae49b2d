//! The broker-wide budget of memory for decompressed records: every produce validation
//! reserves what it will decompress into before it decompresses, and waits while others hold
//! the budget, so concurrent producers of compressed batches (or decompression bombs) take at
//! most the budget together, whatever the number of threads or connections.
//!
//! Reservations are taken whole (never grown while held), so two checks can never wait for
//! each other: one that needs more gives its reservation back and asks again for the larger
//! amount. Fair (first come, first served), as tokio's semaphore is.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Bytes of decompressed records the broker lets validations hold at once
/// (`produce.decompression.max.bytes`, ours); also the most one batch may decompress to.
pub const DEFAULT_BYTES: usize = 256 << 20;

#[derive(Debug, Clone)]
pub struct MemoryBudget {
    permits: Arc<Semaphore>,
    total: usize,
}

/// Bytes reserved from a [`MemoryBudget`], given back when dropped.
#[derive(Debug)]
pub struct Reservation {
    _permit: Option<OwnedSemaphorePermit>,
    bytes: usize,
}

impl Reservation {
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl MemoryBudget {
    /// A budget of `total` bytes (at most 4 GiB - 1, a semaphore's largest single grant).
    pub fn new(total: usize) -> Self {
        let total = total.clamp(1, u32::MAX as usize);
        Self {
            permits: Arc::new(Semaphore::new(total)),
            total,
        }
    }

    pub fn total(&self) -> usize {
        self.total
    }

    /// Bytes not reserved now.
    pub fn available(&self) -> usize {
        self.permits.available_permits()
    }

    /// Reserves `bytes` (at most the whole budget), waiting until they are free. Nothing to
    /// wait for when `bytes` is 0.
    pub async fn reserve(&self, bytes: usize) -> Reservation {
        let bytes = bytes.min(self.total);
        if bytes == 0 {
            return Reservation {
                _permit: None,
                bytes,
            };
        }
        // `bytes` fits in u32 (clamped to total above); the semaphore is never closed.
        let n = u32::try_from(bytes).unwrap_or(u32::MAX);
        let permit = Arc::clone(&self.permits).acquire_many_owned(n).await.ok();
        Reservation {
            _permit: permit,
            bytes,
        }
    }
}
