//! The buffer pool: every byte of batch memory is counted against `buffer.memory`.
//!
//! Memory is a semaphore of bytes. A batch takes its buffer's size in permits and gives them
//! back when it completes. Buffers of exactly `batch.size` are kept on a free list for reuse
//! (still holding their permits); odd-sized ones (a record larger than `batch.size`) are
//! dropped. When memory runs out, [`BufferPool::allocate`] waits, first in first out, up to
//! `max.block.ms`, then fails: a fast producer is slowed down, never grows without bound.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::BytesMut;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, TryAcquireError};

use crate::error::ProducerError;

/// Memory taken from the pool: released when dropped.
#[derive(Debug)]
pub struct Allocation {
    _permit: OwnedSemaphorePermit,
    size: usize,
}

impl Allocation {
    /// Bytes this allocation accounts for.
    pub fn size(&self) -> usize {
        self.size
    }
}

/// A buffer and the memory accounted for it.
#[derive(Debug)]
pub struct PooledBuffer {
    pub buf: BytesMut,
    pub allocation: Allocation,
}

struct Inner {
    memory: Arc<Semaphore>,
    total: usize,
    batch_size: usize,
    free: Mutex<Vec<PooledBuffer>>,
    waiting: AtomicUsize,
}

/// The pool; clone it freely.
#[derive(Clone)]
pub struct BufferPool {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for BufferPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BufferPool")
            .field("total", &self.inner.total)
            .field("available", &self.available_memory())
            .field("waiting", &self.waiting())
            .finish()
    }
}

/// One caller waiting for memory, for as long as it lives.
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn new(count: &'a AtomicUsize) -> Self {
        count.fetch_add(1, Ordering::Relaxed);
        Self(count)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl BufferPool {
    /// A pool of `total` bytes (`buffer.memory`, at most `u32::MAX`) that reuses buffers of
    /// `batch_size` bytes.
    pub fn new(total: usize, batch_size: usize) -> Self {
        let total = total.min(u32::MAX as usize);
        Self {
            inner: Arc::new(Inner {
                memory: Arc::new(Semaphore::new(total)),
                total,
                batch_size,
                free: Mutex::new(Vec::new()),
                waiting: AtomicUsize::new(0),
            }),
        }
    }

    /// `buffer.memory`.
    pub fn total_memory(&self) -> usize {
        self.inner.total
    }

    /// Bytes neither in a batch nor on the free list.
    pub fn unallocated_memory(&self) -> usize {
        self.inner.memory.available_permits()
    }

    /// Bytes available to new batches: unallocated plus the free list.
    pub fn available_memory(&self) -> usize {
        let free: usize = lock(&self.inner.free)
            .iter()
            .map(|b| b.allocation.size)
            .sum();
        self.unallocated_memory() + free
    }

    /// Callers waiting for memory.
    pub fn waiting(&self) -> usize {
        self.inner.waiting.load(Ordering::Relaxed)
    }

    /// A buffer of at least `size` bytes, waiting up to `max_block` for memory.
    pub async fn allocate(
        &self,
        size: usize,
        max_block: Duration,
    ) -> Result<PooledBuffer, ProducerError> {
        if size > self.inner.total {
            return Err(ProducerError::RecordTooLarge {
                size,
                limit: self.inner.total,
                key: "buffer.memory",
            });
        }
        if let Some(b) = self.try_allocate(size) {
            return Ok(b);
        }
        let n = u32::try_from(size).unwrap_or(u32::MAX);
        // Counted as waiting until the wait ends or the caller drops the future.
        let waiter = Waiting::new(&self.inner.waiting);
        let acquired =
            tokio::time::timeout(max_block, self.inner.memory.clone().acquire_many_owned(n)).await;
        drop(waiter);
        match acquired {
            Ok(Ok(permit)) => Ok(self.fresh(size, permit)),
            Ok(Err(_)) => Err(ProducerError::Closed(Some("buffer pool closed".into()))),
            Err(_) => Err(ProducerError::BufferExhausted {
                size,
                after: max_block,
            }),
        }
    }

    /// A buffer right away, or `None` when the caller would have to wait.
    pub fn try_allocate(&self, size: usize) -> Option<PooledBuffer> {
        if size == self.inner.batch_size {
            if let Some(b) = lock(&self.inner.free).pop() {
                return Some(b);
            }
        }
        let n = u32::try_from(size).ok()?;
        // Waiters go first: do not overtake them.
        if self.waiting() == 0 {
            loop {
                match self.inner.memory.clone().try_acquire_many_owned(n) {
                    Ok(permit) => return Some(self.fresh(size, permit)),
                    Err(TryAcquireError::Closed) => return None,
                    Err(TryAcquireError::NoPermits) => {
                        // Give free-list memory back and try again.
                        // Dropping a pooled buffer returns its bytes to the semaphore.
                        drop(lock(&self.inner.free).pop()?);
                    }
                }
            }
        }
        None
    }

    fn fresh(&self, size: usize, permit: OwnedSemaphorePermit) -> PooledBuffer {
        PooledBuffer {
            buf: BytesMut::with_capacity(size),
            allocation: Allocation {
                _permit: permit,
                size,
            },
        }
    }

    /// Returns memory. A `batch.size` buffer that came back whole goes on the free list unless
    /// someone waits for memory (then its bytes go to them).
    pub fn release(&self, allocation: Allocation, buf: Option<BytesMut>) {
        match buf {
            Some(mut buf)
                if allocation.size == self.inner.batch_size
                    && buf.capacity() >= self.inner.batch_size
                    && self.waiting() == 0 =>
            {
                buf.clear();
                lock(&self.inner.free).push(PooledBuffer { buf, allocation });
            }
            _ => drop(allocation),
        }
    }

    /// Wakes every waiter with an error (the producer is closing).
    pub fn close(&self) {
        self.inner.memory.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn reuses_batch_buffers_and_bounds_memory() {
        let pool = BufferPool::new(64, 16);
        let a = pool.allocate(16, Duration::ZERO).await.unwrap();
        let b = pool.allocate(40, Duration::ZERO).await.unwrap();
        assert_eq!(pool.available_memory(), 8);
        let e = pool
            .allocate(16, Duration::from_millis(5))
            .await
            .unwrap_err();
        assert!(
            matches!(e, ProducerError::BufferExhausted { size: 16, .. }),
            "{e}"
        );
        let ptr = a.buf.as_ptr();
        pool.release(a.allocation, Some(a.buf));
        assert_eq!(pool.available_memory(), 24);
        assert_eq!(pool.unallocated_memory(), 8);
        let again = pool.allocate(16, Duration::ZERO).await.unwrap();
        assert_eq!(again.buf.as_ptr(), ptr, "the free buffer was not reused");
        // Odd sizes are not pooled.
        pool.release(b.allocation, Some(b.buf));
        assert_eq!(pool.unallocated_memory(), 48);
        drop(again);
        assert_eq!(pool.available_memory(), 64);
    }

    #[tokio::test(start_paused = true)]
    async fn free_list_memory_is_given_back_for_odd_sizes() {
        let pool = BufferPool::new(48, 16);
        let mut held = Vec::new();
        for _ in 0..3 {
            held.push(pool.allocate(16, Duration::ZERO).await.unwrap());
        }
        for b in held {
            pool.release(b.allocation, Some(b.buf));
        }
        assert_eq!(pool.unallocated_memory(), 0);
        let big = pool.allocate(40, Duration::ZERO).await.unwrap();
        assert_eq!(big.allocation.size(), 40);
        assert_eq!(pool.available_memory(), 8);
    }

    #[tokio::test(start_paused = true)]
    async fn waiter_is_woken_by_a_release_and_times_out_otherwise() {
        let pool = BufferPool::new(32, 16);
        let a = pool.allocate(16, Duration::ZERO).await.unwrap();
        let b = pool.allocate(16, Duration::ZERO).await.unwrap();
        let p2 = pool.clone();
        let waiter = tokio::spawn(async move { p2.allocate(16, Duration::from_secs(10)).await });
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(pool.waiting(), 1);
        // With a waiter, a released batch buffer goes to it rather than the free list.
        pool.release(a.allocation, Some(a.buf));
        let held = waiter.await.unwrap().unwrap();
        assert_eq!(pool.waiting(), 0);

        let p3 = pool.clone();
        let start = tokio::time::Instant::now();
        let e = tokio::spawn(async move { p3.allocate(16, Duration::from_secs(3)).await })
            .await
            .unwrap()
            .unwrap_err();
        assert!(matches!(e, ProducerError::BufferExhausted { .. }));
        assert_eq!(start.elapsed(), Duration::from_secs(3));
        drop((b, held));
    }

    #[tokio::test(start_paused = true)]
    async fn larger_than_total_fails_at_once() {
        let pool = BufferPool::new(32, 16);
        let e = pool.allocate(33, Duration::from_secs(5)).await.unwrap_err();
        assert!(matches!(
            e,
            ProducerError::RecordTooLarge {
                key: "buffer.memory",
                ..
            }
        ));
    }

    #[tokio::test(start_paused = true)]
    async fn close_wakes_waiters() {
        let pool = BufferPool::new(16, 16);
        let _a = pool.allocate(16, Duration::ZERO).await.unwrap();
        let p2 = pool.clone();
        let w = tokio::spawn(async move { p2.allocate(16, Duration::from_secs(60)).await });
        tokio::task::yield_now().await;
        pool.close();
        assert!(matches!(w.await.unwrap(), Err(ProducerError::Closed(_))));
    }
}
