//! The group coordinator's settings live in the configuration ([`crate::config::GroupConfig`]);
//! here is what the group layer derives from them.

pub use crate::config::GroupConfig;

impl GroupConfig {
    /// The `__consumer_offsets` partition of `group_id`.
    pub fn partition_for(&self, group_id: &str) -> i32 {
        super::partition_for(group_id, self.offsets_topic_num_partitions)
    }
}
