//! Measuring clients against their quotas and answering throttle times: Kafka's
//! `ClientQuotaManager` (produce and fetch byte rates) and `ClientRequestQuotaManager` (request
//! time). One [`ClientQuotaManager`] per quota type keeps a sampled rate per usage key (see
//! [`UsageKey`]), bounded in number and expired after an hour idle.
//!
//! Kafka records first and then checks: the value recorded stays recorded even when the answer
//! is a throttle (a throttled fetch is taken back with [`ClientQuotaManager::unrecord`], since
//! Kafka answers it empty). Request time is throttled as Kafka does, `(rate - bound) / bound *
//! window` capped at one quota window; byte rates are paced by a bucket of one window's worth
//! ([`TokenBucket`]: the time until the bucket is back to empty, unbounded), which holds a
//! client at its quota without Kafka's ten-second bursts.

use super::entity::QuotaKey;
use super::rate::{self, SampledRate, TokenBucket, WindowConfig};
use super::sensors::{INACTIVE_SENSOR_EXPIRATION_MS, Sensors};
use super::store::{QuotaStore, ResolvedQuota, UsageKey};
use crate::config::QuotaConfig;

/// The quota types measured per client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClientQuotaType {
    /// Produce: the bytes of each Produce request (`producer_byte_rate`).
    Produce,
    /// Fetch: the bytes of each Fetch answer to a consumer (`consumer_byte_rate`).
    Fetch,
    /// Request time, in percent of one thread (`request_percentage`, KIP-124).
    Request,
}

impl ClientQuotaType {
    /// The quota key this type measures against.
    pub fn key(self) -> QuotaKey {
        match self {
            Self::Produce => QuotaKey::ProducerByteRate,
            Self::Fetch => QuotaKey::ConsumerByteRate,
            Self::Request => QuotaKey::RequestPercentage,
        }
    }
}

/// Request handling time as Kafka records it against `request_percentage`: nanoseconds times
/// 100 / 10^9, so that a rate of 100 a second is one thread busy all the time (KIP-124).
pub fn request_percentage(nanos: u64) -> f64 {
    nanos as f64 * 100.0 / 1e9
}

/// The usage of every client of one quota type.
#[derive(Debug)]
pub struct ClientQuotaManager {
    kind: ClientQuotaType,
    window: WindowConfig,
    max_throttle_ms: Option<i64>,
    sensors: Sensors<UsageKey, Usage>,
}

/// One client's use: Kafka's sampled rate (the throttle of request time, and the rate reported
/// for every type) and, for byte rates, the bucket that paces them ([`TokenBucket`]).
#[derive(Debug, Clone, Default)]
struct Usage {
    rate: SampledRate,
    bucket: TokenBucket,
}

impl ClientQuotaManager {
    /// A manager for `kind` with the windows of `config` and at most `config.sensors_max`
    /// clients tracked.
    pub fn new(kind: ClientQuotaType, config: &QuotaConfig) -> Self {
        let window = WindowConfig::from_config(config);
        Self {
            kind,
            window,
            max_throttle_ms: (kind == ClientQuotaType::Request).then_some(window.window_ms()),
            sensors: Sensors::new(config.sensors_max, INACTIVE_SENSOR_EXPIRATION_MS),
        }
    }

    /// The quota type.
    pub fn kind(&self) -> ClientQuotaType {
        self.kind
    }

    /// Resolves the quota of (`user`, `client_id`) in `store` and records `value` against it
    /// ([`ClientQuotaManager::record`]). 0 when no quota applies: nothing is tracked then.
    pub fn record_for(
        &mut self,
        store: &QuotaStore,
        user: &str,
        client_id: &str,
        value: f64,
        now_ms: i64,
    ) -> i32 {
        match store.resolve(self.kind.key(), user, client_id) {
            Some(quota) => self.record(&quota, value, now_ms),
            None => 0,
        }
    }

    /// Records `value` (bytes, or [`request_percentage`]) at `now_ms` for the quota's usage
    /// key and answers the throttle time in milliseconds: 0 when the rate stays within the
    /// bound, else Kafka's `(rate - bound) / bound * window`, capped at one window for request
    /// time and at `i32::MAX`.
    pub fn record(&mut self, quota: &ResolvedQuota, value: f64, now_ms: i64) -> i32 {
        let window = self.window;
        let kind = self.kind;
        let usage = self
            .sensors
            .use_or_insert(&quota.usage, now_ms, Usage::default);
        let ms = match kind {
            ClientQuotaType::Request => {
                rate::record_and_throttle(&mut usage.rate, &window, quota.bound, value, now_ms)
            }
            ClientQuotaType::Produce | ClientQuotaType::Fetch => {
                usage.rate.record(&window, value, now_ms);
                usage.bucket.record(&window, quota.bound, value, now_ms)
            }
        };
        let ms = self.max_throttle_ms.map_or(ms, |cap| ms.min(cap));
        i32::try_from(ms).unwrap_or(i32::MAX)
    }

    /// Records without a quota check (Kafka's `recordNoThrottle`: the time a request spent in
    /// the network layer, counted for the next request's check).
    pub fn record_no_throttle(&mut self, quota: &ResolvedQuota, value: f64, now_ms: i64) {
        let window = self.window;
        let usage = self
            .sensors
            .use_or_insert(&quota.usage, now_ms, Usage::default);
        usage.rate.record(&window, value, now_ms);
        if self.kind != ClientQuotaType::Request {
            usage.bucket.record(&window, quota.bound, value, now_ms);
        }
    }

    /// Takes back a value recorded before (Kafka un-records a throttled fetch, whose answer is
    /// empty). Nothing when the usage key is not tracked.
    pub fn unrecord(&mut self, quota: &ResolvedQuota, value: f64, now_ms: i64) {
        let window = self.window;
        if let Some(usage) = self.sensors.get_mut(&quota.usage) {
            usage.rate.record(&window, -value, now_ms);
            if self.kind != ClientQuotaType::Request {
                usage.bucket.record(&window, quota.bound, -value, now_ms);
            }
        }
    }

    /// The most a client may take in one request without being throttled for sure (Kafka's
    /// `getMaxValueInQuotaWindow`: the bound over `samples - 1` windows for request time; for
    /// byte rates the bucket's capacity, one window). The broker caps a consumer's fetch size
    /// with it. `None`: no quota applies.
    pub fn max_value_in_window(
        &self,
        store: &QuotaStore,
        user: &str,
        client_id: &str,
    ) -> Option<f64> {
        let quota = store.resolve(self.kind.key(), user, client_id)?;
        if self.kind != ClientQuotaType::Request {
            // What the bucket holds: a larger fetch would be throttled, answered empty and
            // taken back every time.
            return Some(TokenBucket::capacity(&self.window, quota.bound));
        }
        let windows = f64::from(self.window.samples().saturating_sub(1));
        Some(quota.bound * windows * self.window.window_ms() as f64 / 1_000.0)
    }

    /// The measured rate of a usage key at `now_ms`, if it is tracked (for metrics and tests).
    pub fn rate(&mut self, usage: &UsageKey, now_ms: i64) -> Option<f64> {
        let window = self.window;
        self.sensors
            .get_mut(usage)
            .map(|u| u.rate.measure(&window, now_ms))
    }

    /// Usage keys tracked.
    pub fn tracked(&self) -> usize {
        self.sensors.len()
    }
}
