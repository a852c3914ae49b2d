//! IncrementalAlterConfigs on a topic's overrides: the operations as Kafka checks them, and
//! the overrides they lead to. The new values are parsed afterwards, whole, by
//! [`TopicConfig::new`].

use std::collections::BTreeMap;

use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::incremental_alter_configs_request::AlterableConfig;

use super::TopicConfig;
use super::keys::{broker_default, spec};
use crate::config::BrokerConfig;
use crate::config::keys::ConfigType;
use crate::config::parse::list;
use crate::error::BrokerError;

/// One IncrementalAlterConfigs operation on a topic's overrides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlterOp<'a> {
    Set(&'a str, &'a str),
    Delete(&'a str),
    /// Adds list items that are not there yet (list keys only).
    Append(&'a str, &'a str),
    /// Removes list items (list keys only).
    Subtract(&'a str, &'a str),
}

impl<'a> AlterOp<'a> {
    /// The operations of one IncrementalAlterConfigs resource (0 SET, 1 DELETE, 2 APPEND,
    /// 3 SUBTRACT), checked as Kafka checks them: a key named twice, or an unknown
    /// operation, is INVALID_REQUEST.
    pub fn from_request(configs: &'a [AlterableConfig]) -> Result<Vec<Self>, BrokerError> {
        no_duplicates(configs.iter().map(|e| e.name.as_str()))?;
        configs
            .iter()
            .map(|e| {
                let name = e.name.as_str();
                let value = e.value.as_ref().map_or("", |v| v.as_str());
                Ok(match e.config_operation {
                    0 => Self::Set(name, value),
                    1 => Self::Delete(name),
                    2 => Self::Append(name, value),
                    3 => Self::Subtract(name, value),
                    other => {
                        return Err(BrokerError::kafka(
                            ErrorCode::INVALID_REQUEST,
                            format!("unknown config operation {other} for {name}"),
                        ));
                    }
                })
            })
            .collect()
    }
}

/// Kafka refuses a resource that names a key twice (INVALID_REQUEST).
pub fn no_duplicates<'a>(names: impl Iterator<Item = &'a str>) -> Result<(), BrokerError> {
    let mut seen = std::collections::BTreeSet::new();
    for n in names {
        if !seen.insert(n) {
            return Err(BrokerError::kafka(
                ErrorCode::INVALID_REQUEST,
                format!("config {n} is given more than once"),
            ));
        }
    }
    Ok(())
}

impl TopicConfig {
    /// The overrides after `ops`, applied in order (APPEND and SUBTRACT start from the
    /// current value, the default if not overridden). Only the key and operation are checked
    /// here; [`TopicConfig::new`] checks the values.
    pub fn altered(
        &self,
        cfg: &BrokerConfig,
        ops: &[AlterOp<'_>],
    ) -> Result<BTreeMap<String, String>, BrokerError> {
        let mut out = self.overrides.clone();
        for op in ops {
            match *op {
                AlterOp::Set(k, v) => {
                    out.insert(k.to_owned(), v.to_owned());
                }
                AlterOp::Delete(k) => {
                    out.remove(k);
                }
                AlterOp::Append(k, v) | AlterOp::Subtract(k, v) => {
                    let what = if matches!(op, AlterOp::Append(..)) {
                        "APPEND"
                    } else {
                        "SUBTRACT"
                    };
                    match spec(k) {
                        Some(s) if s.config_type == ConfigType::List => {}
                        Some(_) => {
                            return Err(BrokerError::kafka(
                                ErrorCode::INVALID_CONFIG,
                                format!("{what} is only allowed on list configs, not on {k}"),
                            ));
                        }
                        None => {
                            return Err(BrokerError::kafka(
                                ErrorCode::INVALID_CONFIG,
                                format!("unknown topic config {k}"),
                            ));
                        }
                    }
                    let current = out
                        .get(k)
                        .cloned()
                        .unwrap_or_else(|| broker_default(cfg, k));
                    let mut items: Vec<&str> = list(&current).collect();
                    for item in list(v) {
                        if matches!(op, AlterOp::Append(..)) {
                            if !items.contains(&item) {
                                items.push(item);
                            }
                        } else {
                            items.retain(|i| *i != item);
                        }
                    }
                    let joined = items.join(",");
                    out.insert(k.to_owned(), joined);
                }
            }
        }
        Ok(out)
    }
}
