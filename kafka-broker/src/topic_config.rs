//! The broker's live topic configs: [`TopicConfigs`], every topic's current
//! `Arc<TopicConfig>` (swapped whole on a change, never parsed on a request), and the
//! partition logs' settings taken from a topic's config ([`TopicConfig::log_config`]).
//!
//! Parsing, checking, altering and describing topic configs is configuration
//! ([`crate::config::topic`]); this module is what the broker keeps of them at runtime, and
//! the bridge to the log layer's [`LogConfig`]. The names re-exported below are the ones the
//! rest of the crate imported from here before the configuration moved.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use crate::config::TimestampType;
pub use crate::config::describe::{
    ConfigType, DescribedConfig, SOURCE_DEFAULT, SOURCE_DYNAMIC_TOPIC, SOURCE_STATIC_BROKER,
    Synonym,
};
pub use crate::config::topic::{
    AlterOp, Compression, KEYS, KeySpec, ProduceRules, TopicConfig, no_duplicates,
    parse_broker_default, spec,
};
use crate::log::LogConfig;

impl TopicConfig {
    /// The settings of the topic's partition logs.
    pub fn log_config(&self) -> LogConfig {
        // A compacted topic without `delete` in its policy is not trimmed by time or size:
        // compaction bounds it.
        let (retention_ms, retention_bytes) = if self.delete {
            (self.retention_ms, self.retention_bytes)
        } else {
            (-1, -1)
        };
        LogConfig {
            segment_bytes: self.segment_bytes,
            segment_ms: self.segment_ms,
            index_interval_bytes: u64::from(self.index_interval_bytes),
            retention_ms,
            retention_bytes,
            flush_interval_messages: self.flush_messages,
            flush_interval_ms: self.flush_ms,
            message_timestamp_type: match self.message_timestamp_type {
                TimestampType::CreateTime => crate::log::TimestampType::CreateTime,
                TimestampType::LogAppendTime => crate::log::TimestampType::LogAppendTime,
            },
            compact: self.compact,
            delete: self.delete,
            delete_retention_ms: self.delete_retention_ms,
            min_cleanable_dirty_ratio: self.min_cleanable_dirty_ratio,
            min_compaction_lag_ms: self.min_compaction_lag_ms,
            max_compaction_lag_ms: self.max_compaction_lag_ms,
        }
    }
}

/// Every topic's current config, each swapped whole when the topic's overrides change.
#[derive(Debug)]
pub struct TopicConfigs {
    defaults: Arc<TopicConfig>,
    by_topic: RwLock<HashMap<String, Arc<TopicConfig>>>,
}

impl TopicConfigs {
    /// `defaults` applies to topics not (or not yet) registered.
    pub fn new(defaults: TopicConfig) -> Self {
        Self {
            defaults: Arc::new(defaults),
            by_topic: RwLock::new(HashMap::new()),
        }
    }

    /// A topic's config, `None` if the topic is unknown.
    pub fn get(&self, topic: &str) -> Option<Arc<TopicConfig>> {
        crate::sync::read(&self.by_topic).get(topic).cloned()
    }

    /// A topic's config, the broker's defaults if the topic is unknown.
    pub fn get_or_default(&self, topic: &str) -> Arc<TopicConfig> {
        self.get(topic)
            .unwrap_or_else(|| Arc::clone(&self.defaults))
    }

    /// A topic's produce rules (the defaults' if the topic is unknown): a read lock and a
    /// copy of three precomputed values, nothing parsed.
    pub fn produce_rules(&self, topic: &str) -> ProduceRules {
        let map = crate::sync::read(&self.by_topic);
        map.get(topic).unwrap_or(&self.defaults).produce_rules()
    }

    /// Installs (or replaces) a topic's config.
    pub fn insert(&self, topic: &str, config: Arc<TopicConfig>) {
        crate::sync::write(&self.by_topic).insert(topic.to_owned(), config);
    }

    pub fn remove(&self, topic: &str) {
        crate::sync::write(&self.by_topic).remove(topic);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::collections::BTreeMap;

    use super::*;
    use crate::config::BrokerConfig;

    fn overrides(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn every_log_setting_comes_from_the_topic_config() {
        let c = TopicConfig::new(
            &BrokerConfig::default(),
            &overrides(&[
                ("cleanup.policy", "compact, delete"),
                ("delete.retention.ms", "5"),
                ("flush.messages", "3"),
                ("flush.ms", "7"),
                ("index.interval.bytes", "100"),
                ("message.timestamp.type", "LogAppendTime"),
                ("max.compaction.lag.ms", "13"),
                ("min.cleanable.dirty.ratio", "0.25"),
                ("min.compaction.lag.ms", "14"),
                ("retention.bytes", "15"),
                ("retention.ms", "16"),
                ("segment.bytes", "4096"),
                ("segment.ms", "17"),
            ]),
        )
        .unwrap();
        let l = c.log_config();
        assert_eq!((l.segment_bytes, l.segment_ms), (4096, 17));
        assert_eq!((l.retention_ms, l.retention_bytes), (16, 15));
        assert_eq!(l.index_interval_bytes, 100);
        assert_eq!(
            (l.flush_interval_messages, l.flush_interval_ms),
            (Some(3), Some(7))
        );
        assert_eq!(
            l.message_timestamp_type,
            crate::log::TimestampType::LogAppendTime
        );
        assert!(l.compact && l.delete);
        assert_eq!(l.delete_retention_ms, 5);
        assert_eq!(l.min_cleanable_dirty_ratio, 0.25);
        assert_eq!((l.min_compaction_lag_ms, l.max_compaction_lag_ms), (14, 13));
        l.validate().unwrap();
    }

    #[test]
    fn compacted_only_logs_are_not_trimmed_by_time_or_size() {
        let mut cfg = BrokerConfig::default();
        cfg.apply("log.retention.ms", "1000").unwrap();
        cfg.apply("log.cleanup.policy", "compact").unwrap();
        let d = TopicConfig::defaults(&cfg);
        assert_eq!(
            (d.log_config().retention_ms, d.log_config().retention_bytes),
            (-1, -1)
        );
        let c = TopicConfig::new(
            &cfg,
            &overrides(&[("retention.ms", "7"), ("cleanup.policy", "delete")]),
        )
        .unwrap();
        assert_eq!(c.log_config().retention_ms, 7);
    }

    #[test]
    fn configs_are_swapped_whole() {
        let cfg = BrokerConfig::default();
        let all = TopicConfigs::new(TopicConfig::defaults(&cfg));
        assert_eq!(
            all.produce_rules("t").max_message_bytes,
            cfg.log.message_max_bytes
        );
        let c = TopicConfig::new(&cfg, &overrides(&[("max.message.bytes", "10")])).unwrap();
        all.insert("t", Arc::new(c));
        assert_eq!(all.produce_rules("t").max_message_bytes, 10);
        assert_eq!(all.get("t").unwrap().overrides().len(), 1);
        all.remove("t");
        assert!(all.get("t").is_none());
        assert_eq!(
            all.get_or_default("t").max_message_bytes,
            cfg.log.message_max_bytes
        );
    }
}
