//! The group coordinator's settings live in the configuration ([`crate::config::GroupConfig`]);
//! here is what the group layer derives from them.

pub use crate::config::GroupConfig;

impl GroupConfig {
    /// The `__consumer_offsets` partition of `group_id`.
    pub fn partition_for(&self, group_id: &str) -> i32 {
        super::partition_for(group_id, self.offsets_topic_num_partitions)
    }
}

impl GroupConfig {
    /// The settings of the KIP-848 groups (`group.consumer.*`); an unknown or repeated name
    /// in `group.consumer.assignors`, or a value out of its bounds, is an error naming it.
    pub fn consumer_config(&self) -> Result<super::consumer::ConsumerGroupConfig, String> {
        let names: Vec<String> = self
            .consumer_assignors
            .split(',')
            .map(str::trim)
            .filter(|n| !n.is_empty())
            .map(str::to_owned)
            .collect();
        let assignors = super::consumer::assignor::by_names(&names).map_err(|e| e.to_string())?;
        let mut c = super::consumer::ConsumerGroupConfig::new(assignors);
        c.heartbeat_interval_ms = self.consumer_heartbeat_interval_ms;
        c.min_heartbeat_interval_ms = self.consumer_min_heartbeat_interval_ms;
        c.max_heartbeat_interval_ms = self.consumer_max_heartbeat_interval_ms;
        c.session_timeout_ms = self.consumer_session_timeout_ms;
        c.min_session_timeout_ms = self.consumer_min_session_timeout_ms;
        c.max_session_timeout_ms = self.consumer_max_session_timeout_ms;
        c.max_size = self.consumer_max_size.max(1).unsigned_abs();
        c.offsets_topic_num_partitions = self.offsets_topic_num_partitions;
        c.validate().map_err(|e| e.to_string())?;
        Ok(c)
    }
}
