//! The group coordinator's settings (`group.*`, `offsets.*`, `offset.metadata.max.bytes`) with
//! Kafka's defaults. Their keys are in the broker key table ([`super::keys`]); the group layer
//! adds what it derives from them (`partition_for`, in `crate::group`).

/// Group coordinator configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupConfig {
    /// `group.min.session.timeout.ms`: smaller session timeouts get INVALID_SESSION_TIMEOUT.
    pub min_session_timeout_ms: i32,
    /// `group.max.session.timeout.ms`: larger session timeouts get INVALID_SESSION_TIMEOUT.
    pub max_session_timeout_ms: i32,
    /// `group.initial.rebalance.delay.ms`: how long a rebalance out of the Empty state waits
    /// for more members (extended while new members keep arriving, within the rebalance
    /// timeout).
    pub initial_rebalance_delay_ms: i32,
    /// `group.max.size`: members a group may have.
    pub max_size: usize,
    /// `offsets.topic.num.partitions`: partitions of `__consumer_offsets` when it is created
    /// (the coordinator is handed the count of the topic as it exists).
    pub offsets_topic_num_partitions: i32,
    /// `offsets.topic.replication.factor` (Kafka's default 3; the controller clamps it to the
    /// live brokers).
    pub offsets_topic_replication_factor: i16,
    /// `offsets.topic.segment.bytes`: `segment.bytes` of `__consumer_offsets` when it is
    /// created.
    pub offsets_topic_segment_bytes: u64,
    /// `offset.metadata.max.bytes`: longer commit metadata gets OFFSET_METADATA_TOO_LARGE.
    pub offset_metadata_max_bytes: usize,
    /// `offsets.retention.minutes` in milliseconds: how long offsets of an empty group (or of
    /// topics a stable consumer group no longer subscribes to) are kept.
    pub offsets_retention_ms: i64,
    /// `offsets.retention.check.interval.ms`: how often expired offsets are looked for.
    pub offsets_retention_check_interval_ms: i64,
    /// How long a new member's JoinGroup may wait for the rebalance before the member is
    /// dropped (Kafka's fixed 5 minutes; a live client retries).
    pub new_member_join_timeout_ms: i64,
}

impl Default for GroupConfig {
    fn default() -> Self {
        Self {
            min_session_timeout_ms: 6_000,
            max_session_timeout_ms: 1_800_000,
            initial_rebalance_delay_ms: 3_000,
            max_size: i32::MAX as usize,
            offsets_topic_num_partitions: 50,
            offsets_topic_replication_factor: 3,
            offsets_topic_segment_bytes: 100 * 1024 * 1024,
            offset_metadata_max_bytes: 4096,
            offsets_retention_ms: 7 * 24 * 60 * 60 * 1000,
            offsets_retention_check_interval_ms: 600_000,
            new_member_join_timeout_ms: 300_000,
        }
    }
}

impl GroupConfig {
    /// Checks the settings against each other.
    pub fn validate(&self) -> Result<(), String> {
        if self.offsets_topic_replication_factor < 1 {
            return Err(format!(
                "offsets.topic.replication.factor must be at least 1, got {}",
                self.offsets_topic_replication_factor
            ));
        }
        if self.min_session_timeout_ms > self.max_session_timeout_ms {
            return Err(format!(
                "group.min.session.timeout.ms ({}) is above group.max.session.timeout.ms ({})",
                self.min_session_timeout_ms, self.max_session_timeout_ms
            ));
        }
        Ok(())
    }
}
