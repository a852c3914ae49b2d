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
    /// `group.consumer.heartbeat.interval.ms` (KIP-848 groups): the interval every
    /// ConsumerGroupHeartbeat answer asks for.
    pub consumer_heartbeat_interval_ms: i32,
    /// `group.consumer.min.heartbeat.interval.ms`.
    pub consumer_min_heartbeat_interval_ms: i32,
    /// `group.consumer.max.heartbeat.interval.ms`.
    pub consumer_max_heartbeat_interval_ms: i32,
    /// `group.consumer.session.timeout.ms`: a KIP-848 member not heard from for this long is
    /// removed from its group.
    pub consumer_session_timeout_ms: i32,
    /// `group.consumer.min.session.timeout.ms`.
    pub consumer_min_session_timeout_ms: i32,
    /// `group.consumer.max.session.timeout.ms`.
    pub consumer_max_session_timeout_ms: i32,
    /// `group.consumer.max.size`: members a KIP-848 group may have.
    pub consumer_max_size: i32,
    /// `group.consumer.assignors`: the server-side assignors by name (or Kafka's class
    /// names), comma-separated; the first is the default.
    pub consumer_assignors: String,
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
            consumer_heartbeat_interval_ms: 5_000,
            consumer_min_heartbeat_interval_ms: 5_000,
            consumer_max_heartbeat_interval_ms: 15_000,
            consumer_session_timeout_ms: 45_000,
            consumer_min_session_timeout_ms: 45_000,
            consumer_max_session_timeout_ms: 60_000,
            consumer_max_size: i32::MAX,
            consumer_assignors: "uniform,range".to_owned(),
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
        self.validate_consumer()
    }

    /// Kafka's checks of the `group.consumer.*` settings against each other (the assignor
    /// names are checked by the group coordinator, which knows the assignors).
    fn validate_consumer(&self) -> Result<(), String> {
        let (hb, min_hb, max_hb) = (
            self.consumer_heartbeat_interval_ms,
            self.consumer_min_heartbeat_interval_ms,
            self.consumer_max_heartbeat_interval_ms,
        );
        let (st, min_st, max_st) = (
            self.consumer_session_timeout_ms,
            self.consumer_min_session_timeout_ms,
            self.consumer_max_session_timeout_ms,
        );
        let checks = [
            (
                min_hb >= 1,
                "group.consumer.min.heartbeat.interval.ms must be at least 1",
            ),
            (
                min_st >= 1,
                "group.consumer.min.session.timeout.ms must be at least 1",
            ),
            (
                max_hb >= min_hb,
                "group.consumer.max.heartbeat.interval.ms must be greater than or equal to group.consumer.min.heartbeat.interval.ms",
            ),
            (
                hb >= min_hb,
                "group.consumer.heartbeat.interval.ms must be greater than or equal to group.consumer.min.heartbeat.interval.ms",
            ),
            (
                hb <= max_hb,
                "group.consumer.heartbeat.interval.ms must be less than or equal to group.consumer.max.heartbeat.interval.ms",
            ),
            (
                max_st >= min_st,
                "group.consumer.max.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms",
            ),
            (
                st >= min_st,
                "group.consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms",
            ),
            (
                st <= max_st,
                "group.consumer.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms",
            ),
            (
                hb < st,
                "group.consumer.heartbeat.interval.ms must be less than group.consumer.session.timeout.ms",
            ),
            (
                self.consumer_max_size >= 1,
                "group.consumer.max.size must be at least 1",
            ),
        ];
        match checks.iter().find(|(ok, _)| !ok) {
            Some((_, why)) => Err((*why).to_owned()),
            None => Ok(()),
        }
    }
}
