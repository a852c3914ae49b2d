//! A sampled rate as Kafka measures quotas (its `Rate` over a `WindowedSum`): values are summed
//! into samples of one window each, the rate is the sum of the live samples divided by the time
//! they span, and a young rate is divided by at least `samples - 1` whole windows so that the
//! first burst of a new client is not measured over a few milliseconds. The throttle time is
//! Kafka's `QuotaUtils.throttleTime`: the pause after which the observed rate falls back to the
//! bound if nothing more is recorded.
//!
//! Byte rates are paced with a [`TokenBucket`] instead (ours, see there); request time and
//! connection rates keep Kafka's rate.
//!
//! Time is milliseconds passed in by the caller; no clock is read here.

use crate::config::QuotaConfig;

/// How a rate is sampled: `samples` windows of `window_ms` each (`quota.window.num`,
/// `quota.window.size.seconds`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowConfig {
    samples: u32,
    window_ms: i64,
}

impl WindowConfig {
    /// `samples` windows of `window_ms`; both are taken as at least 1.
    pub fn new(samples: u32, window_ms: i64) -> Self {
        Self {
            samples: samples.max(1),
            window_ms: window_ms.max(1),
        }
    }

    /// The windows of the client quotas (`quota.window.num` x `quota.window.size.seconds`).
    pub fn from_config(config: &QuotaConfig) -> Self {
        Self::new(config.window_num, config.window_ms())
    }

    /// The number of samples.
    pub fn samples(&self) -> u32 {
        self.samples
    }

    /// One window in milliseconds.
    pub fn window_ms(&self) -> i64 {
        self.window_ms
    }
}

/// One window's sum.
#[derive(Debug, Clone, Copy)]
struct Sample {
    value: f64,
    events: u64,
    start_ms: i64,
    last_event_ms: i64,
}

impl Sample {
    fn new(now_ms: i64) -> Self {
        Self {
            value: 0.0,
            events: 0,
            start_ms: now_ms,
            last_event_ms: now_ms,
        }
    }
}

/// A rate per second over sampled windows (Kafka's `Rate` with a `WindowedSum`). It keeps at
/// most `samples + 1` samples (the extra one overlaps the start of the measured span), so its
/// memory is bounded by the configuration.
#[derive(Debug, Clone, Default)]
pub struct SampledRate {
    samples: Vec<Sample>,
    current: usize,
}

impl SampledRate {
    /// An empty rate.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `value` at `now_ms` to the current window, starting a new one (recycling the oldest)
    /// when the current one is a whole window old. A negative value takes back one recorded
    /// before (Kafka un-records a throttled fetch or a refused connection so).
    pub fn record(&mut self, config: &WindowConfig, value: f64, now_ms: i64) {
        let mut at = self.current_index(now_ms);
        let complete = self
            .samples
            .get(at)
            .is_some_and(|s| now_ms.saturating_sub(s.start_ms) >= config.window_ms);
        if complete {
            at = self.advance(config, now_ms);
        }
        if let Some(s) = self.samples.get_mut(at) {
            s.value += value;
            s.events = s.events.saturating_add(1);
            s.last_event_ms = now_ms;
        }
    }

    /// The rate per second at `now_ms`: the live samples' sum over [`SampledRate::window_size_ms`].
    pub fn measure(&mut self, config: &WindowConfig, now_ms: i64) -> f64 {
        let span_ms = self.window_size_ms(config, now_ms);
        let sum: f64 = self.samples.iter().map(|s| s.value).sum();
        sum / (span_ms as f64 / 1_000.0)
    }

    /// The time the rate is divided by, in milliseconds (Kafka's `Rate.windowSize`): from the
    /// start of the oldest live sample to `now_ms`, but at least `samples - 1` whole windows
    /// plus the part of the current one elapsed, and at least 1 ms. Samples with no event for
    /// `samples` windows are cleared first.
    pub fn window_size_ms(&mut self, config: &WindowConfig, now_ms: i64) -> i64 {
        self.purge_obsolete(config, now_ms);
        let oldest_start = self
            .samples
            .iter()
            .map(|s| s.start_ms)
            .min()
            .unwrap_or(now_ms);
        if self.samples.is_empty() {
            self.samples.push(Sample::new(now_ms));
        }
        let mut elapsed = now_ms.saturating_sub(oldest_start);
        let full_windows = elapsed / config.window_ms;
        let min_full_windows = i64::from(config.samples) - 1;
        if full_windows < min_full_windows {
            elapsed = elapsed
                .saturating_add((min_full_windows - full_windows).saturating_mul(config.window_ms));
        }
        elapsed.max(1)
    }

    /// When an event was last recorded (`None` before the first).
    pub fn last_event_ms(&self) -> Option<i64> {
        self.samples
            .iter()
            .filter(|s| s.events > 0)
            .map(|s| s.last_event_ms)
            .max()
    }

    fn current_index(&mut self, now_ms: i64) -> usize {
        if self.samples.is_empty() {
            self.samples.push(Sample::new(now_ms));
            self.current = 0;
        }
        self.current.min(self.samples.len() - 1)
    }

    /// Moves to the next sample, a new one until `samples + 1` exist, then the oldest reset.
    fn advance(&mut self, config: &WindowConfig, now_ms: i64) -> usize {
        let max_samples = usize::try_from(config.samples)
            .unwrap_or(usize::MAX)
            .saturating_add(1);
        self.current = (self.current + 1) % max_samples;
        if self.current >= self.samples.len() {
            self.samples.push(Sample::new(now_ms));
            self.current = self.samples.len() - 1;
        } else if let Some(s) = self.samples.get_mut(self.current) {
            *s = Sample::new(now_ms);
        }
        self.current
    }

    /// Clears the samples with no event within the last `samples` windows (Kafka resets them to
    /// start at `now_ms`, which keeps them in the span as empty windows).
    fn purge_obsolete(&mut self, config: &WindowConfig, now_ms: i64) {
        let expire_age = i64::from(config.samples).saturating_mul(config.window_ms);
        for s in &mut self.samples {
            if now_ms.saturating_sub(s.last_event_ms) >= expire_age {
                *s = Sample::new(now_ms);
            }
        }
    }
}

/// Kafka's throttle time (`QuotaUtils.throttleTime`): with `rate` observed over `window_ms`
/// and the `bound`, the pause X after which `rate * W / (W + X)` is the bound:
/// `(rate - bound) / bound * W`, rounded. A bound of 0 or less (a connection rate of 0) gives
/// the largest pause, which callers cap.
pub fn throttle_time_ms(rate: f64, bound: f64, window_ms: i64) -> i64 {
    if bound <= 0.0 {
        return i64::MAX;
    }
    let ms = (rate - bound) / bound * window_ms as f64;
    // `as` saturates at the bounds of i64 and maps NaN to 0.
    ms.round().max(0.0) as i64
}

/// Records `value` and, when the rate then exceeds `bound`, answers the throttle time
/// (Kafka's sensor record with its quota check: the value stays recorded either way).
pub fn record_and_throttle(
    rate: &mut SampledRate,
    config: &WindowConfig,
    bound: f64,
    value: f64,
    now_ms: i64,
) -> i64 {
    rate.record(config, value, now_ms);
    let observed = rate.measure(config, now_ms);
    if observed <= bound {
        return 0;
    }
    let window = rate.window_size_ms(config, now_ms);
    throttle_time_ms(observed, bound, window)
}

/// A byte-rate pacer: a bucket of `bound` tokens a second holding at most one window's worth,
/// full at the start. A value takes its tokens; when the bucket goes below empty the throttle is
/// the time the refill takes to bring it back to empty (`-tokens / bound`).
///
/// Ours, where Kafka paces byte rates with its sampled [`SampledRate`]: Kafka's rate forgets a
/// whole window at once when it expires, so a client kept below its quota by a burst is let
/// through again in a burst of up to ten windows' worth when that window ages out; a pipelining
/// producer then alternates ten-second bursts with ten-second pauses, and any 20 s span can be
/// 20 % over or under its quota (Apache Kafka does the same: kafka-peers/tests/quota_apache.rs).
/// The bucket has the same long-run rate without the bursts.
#[derive(Debug, Clone, Copy, Default)]
pub struct TokenBucket {
    tokens: f64,
    /// When the tokens were last brought up to date; `None` before the first value.
    updated_ms: Option<i64>,
}

impl TokenBucket {
    /// An empty bucket, filled at its first use.
    pub fn new() -> Self {
        Self::default()
    }

    /// The most tokens the bucket holds: one window of `bound`.
    pub fn capacity(config: &WindowConfig, bound: f64) -> f64 {
        bound.max(0.0) * config.window_ms as f64 / 1_000.0
    }

    fn refill(&mut self, config: &WindowConfig, bound: f64, now_ms: i64) {
        let capacity = Self::capacity(config, bound);
        self.tokens = match self.updated_ms {
            None => capacity,
            Some(then) => {
                let elapsed = now_ms.saturating_sub(then).max(0) as f64 / 1_000.0;
                (self.tokens + bound.max(0.0) * elapsed).min(capacity)
            }
        };
        self.updated_ms = Some(self.updated_ms.map_or(now_ms, |then| then.max(now_ms)));
    }

    /// Takes `value` tokens at `now_ms` (a negative value gives them back, at most up to the
    /// capacity) and answers the throttle time in milliseconds: 0 while the bucket is not
    /// below empty.
    pub fn record(&mut self, config: &WindowConfig, bound: f64, value: f64, now_ms: i64) -> i64 {
        self.refill(config, bound, now_ms);
        self.tokens = (self.tokens - value).min(Self::capacity(config, bound));
        if self.tokens >= 0.0 {
            return 0;
        }
        if bound <= 0.0 {
            return i64::MAX;
        }
        let ms = -self.tokens / bound * 1_000.0;
        // `as` saturates and maps NaN to 0.
        ms.ceil().max(0.0) as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: i64 = 1_000;

    fn kafka_default() -> WindowConfig {
        WindowConfig::new(11, SECOND)
    }

    #[test]
    fn a_young_rate_is_divided_by_ten_whole_windows() {
        let c = kafka_default();
        let mut r = SampledRate::new();
        r.record(&c, 1_000.0, 0);
        assert_eq!(r.window_size_ms(&c, 0), 10 * SECOND);
        assert!((r.measure(&c, 0) - 100.0).abs() < 1e-9);
        // Half a window later the span is 10.5 s.
        assert_eq!(r.window_size_ms(&c, 500), 10 * SECOND + 500);
    }

    #[test]
    fn an_old_rate_spans_its_live_samples() {
        let c = kafka_default();
        let mut r = SampledRate::new();
        for s in 0..30 {
            r.record(&c, 100.0, s * SECOND);
        }
        // 12 samples are kept (11 + the overlapping one), those of 18..=29 s; at 29.5 s the
        // one of 18 s has had no event for 11 windows and is cleared, so the span runs from
        // 19 s: 10.5 s over 1,100.
        let span = r.window_size_ms(&c, 29 * SECOND + 500);
        assert_eq!(span, 10 * SECOND + 500);
        let rate = r.measure(&c, 29 * SECOND + 500);
        assert!((rate - 1_100.0 / 10.5).abs() < 1e-9, "{rate}");
        assert_eq!(r.samples.len(), 12);
    }

    #[test]
    fn idle_samples_are_purged() {
        let c = kafka_default();
        let mut r = SampledRate::new();
        r.record(&c, 5_000.0, 0);
        assert!(r.measure(&c, 10 * SECOND) > 0.0);
        // 11 windows without an event: the burst is forgotten.
        assert_eq!(r.measure(&c, 11 * SECOND), 0.0);
    }

    /// Kafka's ClientQuotaManagerTest.testQuotaViolation: 400 bytes a second for 10 s under a
    /// quota of 500, then 2,300 bytes half a window later: 6,300 / 10.5 s = 600 B/s, throttled
    /// (600 - 500) / 500 * 10.5 s = 2,100 ms.
    #[test]
    fn kafka_known_answer_2100_ms() {
        let c = kafka_default();
        let mut r = SampledRate::new();
        let mut now = 0;
        for _ in 0..10 {
            assert_eq!(record_and_throttle(&mut r, &c, 500.0, 400.0, now), 0);
            now += SECOND;
        }
        now += 500;
        assert_eq!(record_and_throttle(&mut r, &c, 500.0, 2_300.0, now), 2_100);
    }

    #[test]
    fn throttle_time_formula() {
        assert_eq!(throttle_time_ms(600.0, 500.0, 10_500), 2_100);
        assert_eq!(throttle_time_ms(500.0, 500.0, 10_000), 0);
        assert_eq!(throttle_time_ms(1.0, 0.0, 1_000), i64::MAX);
        assert_eq!(throttle_time_ms(f64::INFINITY, 1.0, 1_000), i64::MAX);
        assert_eq!(throttle_time_ms(f64::NAN, 1.0, 1_000), 0);
    }

    #[test]
    fn time_going_backwards_does_not_break_the_rate() {
        let c = kafka_default();
        let mut r = SampledRate::new();
        r.record(&c, 10.0, 5 * SECOND);
        r.record(&c, 10.0, 0);
        r.record(&c, 10.0, i64::MIN);
        r.record(&c, 10.0, i64::MAX);
        let span = r.window_size_ms(&c, 0);
        assert!(span >= 1);
        assert!(r.measure(&c, 3 * SECOND).is_finite());
        assert!(r.samples.len() <= 12);
    }

    #[test]
    fn memory_is_bounded_by_the_sample_count() {
        let c = WindowConfig::new(3, 10);
        let mut r = SampledRate::new();
        for t in 0..10_000 {
            r.record(&c, 1.0, t);
        }
        assert_eq!(r.samples.len(), 4);
    }

    #[test]
    fn the_bucket_starts_full_and_paces_at_its_bound() {
        let c = kafka_default();
        let mut b = TokenBucket::new();
        // One window's worth at once, then the next byte waits.
        assert_eq!(b.record(&c, 1_000.0, 1_000.0, 0), 0);
        assert_eq!(b.record(&c, 1_000.0, 500.0, 0), 500);
        // After the throttle the bucket is empty again: 500 more wait half a second.
        assert_eq!(b.record(&c, 1_000.0, 500.0, 500), 500);
        // Idle for ten seconds: only one window's worth has come back.
        assert_eq!(b.record(&c, 1_000.0, 1_000.0, 11_000), 0);
        assert_eq!(b.record(&c, 1_000.0, 1.0, 11_000), 1);
        // Taken back: a throttled fetch gives its bytes back, not past the capacity.
        b.record(&c, 1_000.0, -5_000.0, 11_000);
        assert_eq!(b.record(&c, 1_000.0, 1_000.0, 11_000), 0);
        assert_eq!(b.record(&c, 0.0, 1.0, 11_000), i64::MAX, "a bound of 0");
    }

    #[test]
    fn a_producer_at_twice_the_bound_is_paced_without_bursts() {
        let c = kafka_default();
        let mut b = TokenBucket::new();
        let (bound, batch) = (100_000.0, 10_000.0);
        let mut now = 0;
        let mut per_second = [0.0; 40];
        while let Some(slot) = per_second.get_mut((now / SECOND) as usize) {
            let t = b.record(&c, bound, batch, now);
            *slot += batch;
            // Twice the bound when not throttled.
            now += t.max(50);
        }
        // Every second after the first carries the bound, within one batch.
        for (i, sent) in per_second.iter().enumerate().skip(1) {
            assert!((sent - bound).abs() <= batch, "second {i}: {sent}");
        }
    }
}
