//! Rate-limited reporting: an event that can repeat thousands of times a second (a refused
//! connection, an append failing on a full disk) is logged at most once per interval, with the
//! count of the ones not logged since, instead of once per event or not at all.

use std::time::{Duration, Instant};

/// One kind of event, reported at most once per interval. Sans-IO: the caller passes the time.
#[derive(Debug)]
pub(crate) struct RateLimit {
    every: Duration,
    last: Option<Instant>,
    unreported: u64,
}

impl RateLimit {
    pub(crate) fn new(every: Duration) -> Self {
        Self {
            every,
            last: None,
            unreported: 0,
        }
    }

    /// Counts one event at `now`. `Some(n)` when it is to be reported: `n` events (this one
    /// included) happened since the last report. `None`: suppressed, counted for the next one.
    pub(crate) fn hit(&mut self, now: Instant) -> Option<u64> {
        self.unreported += 1;
        if self
            .last
            .is_some_and(|l| now.saturating_duration_since(l) < self.every)
        {
            return None;
        }
        self.last = Some(now);
        Some(std::mem::take(&mut self.unreported))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_report_per_interval_with_the_count_of_the_suppressed() {
        let t0 = Instant::now();
        let mut r = RateLimit::new(Duration::from_secs(10));
        assert_eq!(r.hit(t0), Some(1), "the first event is reported");
        for i in 1..=500 {
            assert_eq!(r.hit(t0 + Duration::from_millis(i)), None);
        }
        assert_eq!(r.hit(t0 + Duration::from_secs(9)), None);
        assert_eq!(
            r.hit(t0 + Duration::from_secs(10)),
            Some(502),
            "the next report counts the suppressed ones and itself"
        );
        assert_eq!(r.hit(t0 + Duration::from_secs(11)), None);
        assert_eq!(r.hit(t0 + Duration::from_secs(25)), Some(2));
    }
}
