//! A topic's keys as DescribeConfigs (and CreateTopics v5+) lists them: value, source, type
//! and synonyms, the broker defaults read from the broker key table.

use super::TopicConfig;
use super::keys::{KEYS, broker_default};
use crate::config::BrokerConfig;
use crate::config::describe::{
    DescribedConfig, SOURCE_DEFAULT, SOURCE_DYNAMIC_TOPIC, SOURCE_STATIC_BROKER, Synonym,
};

impl TopicConfig {
    /// Every key with its value, source, type and synonyms, in Kafka's order of precedence:
    /// the topic override (DYNAMIC_TOPIC_CONFIG), the broker's setting when its configuration
    /// changed it (STATIC_BROKER_CONFIG), the built-in default (DEFAULT_CONFIG).
    pub fn describe(&self, cfg: &BrokerConfig) -> Vec<DescribedConfig> {
        let built_in = BrokerConfig::default();
        KEYS.iter()
            .map(|k| {
                let broker_key = k.broker_key.unwrap_or(k.name);
                let configured = broker_default(cfg, k.name);
                let default = broker_default(&built_in, k.name);
                let mut synonyms = Vec::new();
                if let Some(v) = self.overrides.get(k.name) {
                    synonyms.push(Synonym {
                        name: k.name.into(),
                        value: v.clone(),
                        source: SOURCE_DYNAMIC_TOPIC,
                    });
                }
                if configured != default {
                    synonyms.push(Synonym {
                        name: broker_key.into(),
                        value: configured,
                        source: SOURCE_STATIC_BROKER,
                    });
                }
                synonyms.push(Synonym {
                    name: broker_key.into(),
                    value: default,
                    source: SOURCE_DEFAULT,
                });
                // The first synonym is the one in force.
                let (value, source) = synonyms
                    .first()
                    .map(|s| (s.value.clone(), s.source))
                    .unwrap_or_default();
                DescribedConfig {
                    name: k.name.into(),
                    value,
                    source,
                    config_type: k.config_type,
                    sensitive: false,
                    synonyms,
                }
            })
            .collect()
    }
}
