//! Time, passed in: the one clock of a broker. Every layer that needs "now" takes it from a
//! [`Clock`] handed down by the node (or as a `now_ms` argument), never from the operating
//! system itself, so tests can run any layer on a manual clock.
//!
//! Milliseconds since the Unix epoch, as Kafka's records keep them. The system clock reads the
//! wall clock once, at its creation, and adds monotonic time since (tokio's, so that tests on
//! paused time see it move with `tokio::time::advance`): deadlines never jump when the wall
//! clock is set back, and timestamps stay close to real time. A manual clock moves only when
//! told to.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

/// A cheap-to-clone handle on a time source.
#[derive(Debug, Clone)]
pub struct Clock(Arc<Source>);

#[derive(Debug)]
enum Source {
    System {
        start: tokio::time::Instant,
        start_ms: i64,
    },
    Manual(AtomicI64),
}

impl Clock {
    /// The wall clock at creation plus monotonic time since.
    pub fn system() -> Self {
        Self(Arc::new(Source::System {
            start: tokio::time::Instant::now(),
            start_ms: wall_ms(),
        }))
    }

    /// A clock at `start_ms` that moves only with [`Clock::advance`] and [`Clock::set`].
    pub fn manual(start_ms: i64) -> Self {
        Self(Arc::new(Source::Manual(AtomicI64::new(start_ms))))
    }

    /// Milliseconds since the Unix epoch.
    pub fn now_ms(&self) -> i64 {
        match &*self.0 {
            Source::System { start, start_ms } => {
                let elapsed = i64::try_from(start.elapsed().as_millis()).unwrap_or(i64::MAX);
                start_ms.saturating_add(elapsed)
            }
            Source::Manual(ms) => ms.load(Ordering::SeqCst),
        }
    }

    /// The wall clock itself (a manual clock's time): for times other parties wrote, such as
    /// a token's issue and expiry times, which must be compared with the same clock those
    /// parties read, not with [`Clock::now_ms`]'s monotonic reckoning since start, which may
    /// drift from it by the wall clock's adjustments.
    pub fn wall_ms(&self) -> i64 {
        match &*self.0 {
            Source::System { .. } => wall_ms(),
            Source::Manual(ms) => ms.load(Ordering::SeqCst),
        }
    }

    /// Whether this clock only moves when told to.
    pub fn is_manual(&self) -> bool {
        matches!(&*self.0, Source::Manual(_))
    }

    /// Moves a manual clock forward by `ms`; no effect on the system clock.
    pub fn advance(&self, ms: i64) {
        if let Source::Manual(now) = &*self.0 {
            now.fetch_add(ms, Ordering::SeqCst);
        }
    }

    /// Sets a manual clock to `ms`; no effect on the system clock.
    pub fn set(&self, ms: i64) {
        if let Source::Manual(now) = &*self.0 {
            now.store(ms, Ordering::SeqCst);
        }
    }
}

impl Default for Clock {
    fn default() -> Self {
        Self::system()
    }
}

/// The operating system's wall clock in milliseconds since the Unix epoch (0 before it).
fn wall_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::Clock;

    #[test]
    fn a_manual_clock_moves_only_when_told() {
        let c = Clock::manual(1_000);
        let same = c.clone();
        assert_eq!(c.now_ms(), 1_000);
        c.advance(250);
        assert_eq!(same.now_ms(), 1_250, "clones share the time");
        c.set(5);
        assert_eq!(c.now_ms(), 5);
        assert!(c.is_manual());
    }

    #[tokio::test(start_paused = true)]
    async fn the_system_clock_follows_monotonic_time() {
        let c = Clock::system();
        let before = c.now_ms();
        assert!(before > 1_600_000_000_000, "wall time: {before}");
        c.advance(1_000_000);
        assert!(
            c.now_ms() - before < 1_000,
            "advance does not move the system clock"
        );
        tokio::time::advance(std::time::Duration::from_secs(60)).await;
        let moved = c.now_ms() - before;
        assert!((60_000..61_000).contains(&moved), "moved {moved}");
    }
}
