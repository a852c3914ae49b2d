//! The settings of KIP-848 groups (`group.consumer.*`), with Kafka's defaults and the checks
//! Kafka makes on them at startup.

use std::sync::Arc;

use super::assignor::Assignor;

/// `group.consumer.*` settings.
#[derive(Debug, Clone)]
pub struct ConsumerGroupConfig {
    /// `group.consumer.heartbeat.interval.ms` (5 s), answered to every heartbeat.
    pub heartbeat_interval_ms: i32,
    /// `group.consumer.min.heartbeat.interval.ms` (5 s).
    pub min_heartbeat_interval_ms: i32,
    /// `group.consumer.max.heartbeat.interval.ms` (15 s).
    pub max_heartbeat_interval_ms: i32,
    /// `group.consumer.session.timeout.ms` (45 s): a member not heard from for this long is
    /// removed from its group.
    pub session_timeout_ms: i32,
    /// `group.consumer.min.session.timeout.ms` (45 s).
    pub min_session_timeout_ms: i32,
    /// `group.consumer.max.session.timeout.ms` (60 s).
    pub max_session_timeout_ms: i32,
    /// `group.consumer.max.size` (unbounded: `i32::MAX`, as Kafka).
    pub max_size: u32,
    /// `group.consumer.assignors`: the first is the default.
    pub assignors: Vec<Arc<dyn Assignor>>,
    /// `offsets.topic.num.partitions`: which `__consumer_offsets` partition holds a group
    /// (for [`unload`](super::ConsumerGroups::unload)).
    pub offsets_topic_num_partitions: i32,
    /// The most memory one compiled subscription regex may take (the `regex` crate's
    /// `size_limit`); a bigger one is INVALID_REGULAR_EXPRESSION.
    pub regex_size_limit: usize,
}

/// A setting out of its bounds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("{0}")]
    Invalid(&'static str),
}

impl ConsumerGroupConfig {
    /// Kafka's defaults, with `assignors` (the first the default).
    pub fn new(assignors: Vec<Arc<dyn Assignor>>) -> Self {
        Self {
            heartbeat_interval_ms: 5_000,
            min_heartbeat_interval_ms: 5_000,
            max_heartbeat_interval_ms: 15_000,
            session_timeout_ms: 45_000,
            min_session_timeout_ms: 45_000,
            max_session_timeout_ms: 60_000,
            max_size: i32::MAX.unsigned_abs(),
            assignors,
            offsets_topic_num_partitions: 50,
            regex_size_limit: 1 << 20,
        }
    }

    /// Kafka's checks at startup: each value within its bounds, the heartbeat interval below
    /// the session timeout, at least one assignor.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let checks = [
            (
                self.max_heartbeat_interval_ms >= self.min_heartbeat_interval_ms,
                "group.consumer.max.heartbeat.interval.ms must be >= group.consumer.min.heartbeat.interval.ms",
            ),
            (
                self.heartbeat_interval_ms >= self.min_heartbeat_interval_ms,
                "group.consumer.heartbeat.interval.ms must be >= group.consumer.min.heartbeat.interval.ms",
            ),
            (
                self.heartbeat_interval_ms <= self.max_heartbeat_interval_ms,
                "group.consumer.heartbeat.interval.ms must be <= group.consumer.max.heartbeat.interval.ms",
            ),
            (
                self.max_session_timeout_ms >= self.min_session_timeout_ms,
                "group.consumer.max.session.timeout.ms must be >= group.consumer.min.session.timeout.ms",
            ),
            (
                self.session_timeout_ms >= self.min_session_timeout_ms,
                "group.consumer.session.timeout.ms must be >= group.consumer.min.session.timeout.ms",
            ),
            (
                self.session_timeout_ms <= self.max_session_timeout_ms,
                "group.consumer.session.timeout.ms must be <= group.consumer.max.session.timeout.ms",
            ),
            (
                self.heartbeat_interval_ms < self.session_timeout_ms,
                "group.consumer.heartbeat.interval.ms must be < group.consumer.session.timeout.ms",
            ),
            (
                self.min_heartbeat_interval_ms >= 1 && self.min_session_timeout_ms >= 1,
                "group.consumer timeouts must be at least 1 ms",
            ),
            (
                self.max_size >= 1,
                "group.consumer.max.size must be at least 1",
            ),
            (
                !self.assignors.is_empty(),
                "group.consumer.assignors must name at least one assignor",
            ),
        ];
        match checks.iter().find(|(ok, _)| !ok) {
            Some((_, reason)) => Err(ConfigError::Invalid(reason)),
            None => Ok(()),
        }
    }

    /// The assignor named `name`.
    pub fn assignor(&self, name: &str) -> Option<&Arc<dyn Assignor>> {
        self.assignors.iter().find(|a| a.name() == name)
    }

    /// The default assignor (the first configured), if any.
    pub fn default_assignor(&self) -> Option<&Arc<dyn Assignor>> {
        self.assignors.first()
    }
}
