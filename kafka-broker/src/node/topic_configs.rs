//! The node's live topic configs: [`TopicConfigs`], every topic's current `Arc<TopicConfig>`,
//! swapped whole on a change and never parsed on a request (parsing, checking, altering and
//! describing them is configuration: [`crate::config::topic`]).

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use crate::config::topic::{ProduceRules, TopicConfig};

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
