//! Client quota and connection-rate settings (`quota.window.*`, `max.connection.creation.rate`)
//! with Kafka's defaults, and our bound on the usage state quotas keep. Their keys are in the
//! broker key table ([`super::keys`]); the quota layer (`crate::quota`) measures with them.
//!
//! Kafka measures every client quota as a rate over `quota.window.num` samples of
//! `quota.window.size.seconds` each (11 of 1 s: ten whole windows and the current one).

/// The most samples a rate keeps (ours; Kafka has no upper bound): each sample costs memory in
/// every tracked client's state.
pub const MAX_QUOTA_WINDOW_NUM: u32 = 1_000;

/// Quota measurement settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuotaConfig {
    /// `quota.window.num`: samples a client quota's rate is measured over (Kafka's default 11;
    /// at least 1, and at most [`MAX_QUOTA_WINDOW_NUM`] here).
    pub window_num: u32,
    /// `quota.window.size.seconds`: the time span of each sample (default 1). The request
    /// percentage and connection-rate throttles are capped at one window, as Kafka caps them.
    pub window_size_seconds: u32,
    /// `max.connection.creation.rate`: new connections per second the broker accepts on each
    /// listener other than the inter-broker one (KIP-612; Kafka's default `i32::MAX`, no limit).
    /// Over it, the accept loop pauses.
    pub max_connection_creation_rate: u32,
    /// `quota.sensors.max` (ours): the most clients (or addresses) whose usage one quota type
    /// tracks at once; past it the least recently active one is forgotten. Idle ones are also
    /// forgotten after an hour, as Kafka expires its quota sensors.
    pub sensors_max: usize,
}

impl Default for QuotaConfig {
    fn default() -> Self {
        Self {
            window_num: 11,
            window_size_seconds: 1,
            max_connection_creation_rate: i32::MAX as u32,
            sensors_max: 100_000,
        }
    }
}

impl QuotaConfig {
    /// One sample's time span in milliseconds.
    pub fn window_ms(&self) -> i64 {
        i64::from(self.window_size_seconds.max(1)) * 1_000
    }
}
