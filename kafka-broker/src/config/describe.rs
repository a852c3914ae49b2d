//! How DescribeConfigs (and CreateTopics v5+) shows configuration: Kafka's config types and
//! sources, and the broker's own keys as read from the broker key table. The topic keys'
//! listing is [`super::topic::TopicConfig::describe`]. The request handler only turns these
//! into the wire types.

use std::borrow::Cow;

use super::BrokerConfig;
use super::keys::BROKER_KEYS;
pub use super::keys::ConfigType;

/// DescribeConfigs `config_source`: a topic override.
pub const SOURCE_DYNAMIC_TOPIC: i8 = 1;
/// DescribeConfigs `config_source`: set in the broker's configuration (file or `--set`).
pub const SOURCE_STATIC_BROKER: i8 = 4;
/// DescribeConfigs `config_source`: the built-in default.
pub const SOURCE_DEFAULT: i8 = 5;

/// One value of a broker or topic setting that DescribeConfigs lists after a config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Synonym {
    pub name: Cow<'static, str>,
    pub value: String,
    pub source: i8,
}

/// One config as DescribeConfigs reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribedConfig {
    pub name: Cow<'static, str>,
    pub value: String,
    pub source: i8,
    pub config_type: ConfigType,
    /// A secret: the answer carries no value.
    pub sensitive: bool,
    pub synonyms: Vec<Synonym>,
}

/// The broker's configuration as DescribeConfigs of a broker resource lists it: every key of
/// the broker table marked as listed that has a value (a key unset without a default, as
/// `broker.rack`, is left out), in the table's order, then the security keys that are set
/// (`ssl.*`, `sasl.*`, their `listener.name.NAME.` forms, ...; secrets with no value and
/// `is_sensitive`, as Kafka answers them). The configuration is static, so each value's
/// source is the broker's configuration.
pub fn broker(cfg: &BrokerConfig) -> Vec<DescribedConfig> {
    let security = cfg.security.entries().map(|(key, value)| {
        let sensitive = value.is_none();
        let value = value.unwrap_or_default().to_owned();
        let name: Cow<'static, str> = Cow::Owned(key.to_owned());
        DescribedConfig {
            name: name.clone(),
            value: value.clone(),
            source: SOURCE_STATIC_BROKER,
            config_type: if sensitive {
                ConfigType::Password
            } else {
                ConfigType::String
            },
            sensitive,
            synonyms: vec![Synonym {
                name,
                value,
                source: SOURCE_STATIC_BROKER,
            }],
        }
    });
    let table = BROKER_KEYS.iter().filter(|k| k.listed).filter_map(|k| {
        let value = (k.get)(cfg)?;
        Some(DescribedConfig {
            name: Cow::Borrowed(k.name),
            value: value.clone(),
            source: SOURCE_STATIC_BROKER,
            config_type: k.config_type,
            sensitive: k.sensitive,
            synonyms: vec![Synonym {
                name: Cow::Borrowed(k.name),
                value,
                source: SOURCE_STATIC_BROKER,
            }],
        })
    });
    table.chain(security).collect()
}
