//! The security keys of a broker: `ssl.*`, `sasl.*`, `ssl.principal.mapping.rules`,
//! `super.users`, `allow.everyone.if.no.acl.found`, `connections.max.reauth.ms`, ... and
//! their per-listener form `listener.name.NAME.KEY` (Kafka: a listener's prefixed key wins over
//! the plain one; the SASL JAAS config is also taken per mechanism,
//! `listener.name.NAME.MECHANISM.sasl.jaas.config`).
//!
//! Values are kept as given; each listener's typed settings are read from them when the
//! listener starts ([`SecurityConfig::tls_settings`]). Secrets (passwords, keys, JAAS
//! configs) never appear in Debug output or in DescribeConfigs.

use std::collections::BTreeMap;
use std::fmt;

use kafka_net::tls::{self, TlsSettings};

use super::cluster::config_error;
use crate::error::BrokerError;

/// The security keys set on a broker, as given.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct SecurityConfig {
    values: BTreeMap<String, String>,
}

impl fmt::Debug for SecurityConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown: BTreeMap<&str, &str> = self
            .values
            .iter()
            .map(|(k, v)| {
                let v = if is_sensitive(k) {
                    "[hidden]"
                } else {
                    v.as_str()
                };
                (k.as_str(), v)
            })
            .collect();
        f.debug_struct("SecurityConfig")
            .field("values", &shown)
            .finish()
    }
}

/// Broker-wide security keys that are not `ssl.*` or `sasl.*`.
const OTHER_KEYS: &[&str] = &[
    "super.users",
    "allow.everyone.if.no.acl.found",
    "authorizer.class.name",
    "principal.builder.class",
    "connections.max.reauth.ms",
    "security.inter.broker.protocol",
    "connection.failed.authentication.delay.ms",
    // Ours: failed logins per second per client address (server/sasl.rs).
    "connection.failed.authentication.max.rate.per.ip",
];

/// The key without its `listener.name.NAME.` prefix, and the listener (upper case) when it
/// had one.
fn split_listener(key: &str) -> Option<(Option<String>, &str)> {
    match key.strip_prefix("listener.name.") {
        Some(rest) => {
            let (name, key) = rest.split_once('.')?;
            Some((Some(name.to_ascii_uppercase()), key))
        }
        None => Some((None, key)),
    }
}

/// Whether `key` (plain) is a security key this table keeps.
fn known(key: &str) -> bool {
    if key.starts_with("ssl.") {
        return tls::SSL_KEYS.contains(&key) || key == "ssl.principal.mapping.rules";
    }
    if key.starts_with("sasl.") || OTHER_KEYS.contains(&key) {
        return true;
    }
    // `MECHANISM.sasl.jaas.config`, `MECHANISM.sasl.server.callback.handler.class`, ... (per
    // listener only, but accepted plain too).
    key.split_once('.')
        .is_some_and(|(_, rest)| rest.starts_with("sasl."))
}

/// Whether a key's value is a secret.
pub fn is_sensitive(key: &str) -> bool {
    let plain = split_listener(key).map_or(key, |(_, k)| k);
    tls::is_sensitive(plain)
        || plain.ends_with("sasl.jaas.config")
        || plain.contains("password")
        || plain.ends_with("client.secret")
}

impl SecurityConfig {
    /// Whether `key` belongs to this table (plain or with a listener prefix). Keys that
    /// look like security keys but are unknown are not taken (the broker warns of them as of
    /// any unknown key).
    pub fn takes(key: &str) -> bool {
        match split_listener(key) {
            Some((_, plain)) => known(plain),
            None => false,
        }
    }

    /// Stores a key's value (the listener name of a prefixed key in upper case).
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), BrokerError> {
        let Some((listener, plain)) = split_listener(key) else {
            return Err(config_error(format!("{key}: not a security key")));
        };
        if !known(plain) {
            return Err(config_error(format!("{key}: not a security key")));
        }
        let stored = match listener {
            Some(l) => format!("listener.name.{}.{plain}", l.to_ascii_lowercase()),
            None => plain.to_owned(),
        };
        self.values.insert(stored, value.to_owned());
        Ok(())
    }

    /// A broker-wide value.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(String::as_str)
    }

    /// The value of `key` on `listener`: its `listener.name.NAME.KEY` form, else the plain key.
    pub fn listener_value(&self, listener: &str, key: &str) -> Option<&str> {
        let prefixed = format!("listener.name.{}.{key}", listener.to_ascii_lowercase());
        self.values
            .get(&prefixed)
            .or_else(|| self.values.get(key))
            .map(String::as_str)
    }

    /// Every key set, with its value hidden when it is a secret (for DescribeConfigs).
    pub fn entries(&self) -> impl Iterator<Item = (&str, Option<&str>)> {
        self.values.iter().map(|(k, v)| {
            let shown = if is_sensitive(k) {
                None
            } else {
                Some(v.as_str())
            };
            (k.as_str(), shown)
        })
    }

    /// The TLS settings of a listener, read from its keys.
    pub fn tls_settings(&self, listener: &str) -> Result<TlsSettings, BrokerError> {
        TlsSettings::from_keys(|k| self.listener_value(listener, k).map(str::to_owned))
            .map_err(|e| config_error(format!("listener {listener}: {e}")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listener_prefix_wins_and_names_are_case_insensitive() {
        let mut c = SecurityConfig::default();
        c.set("ssl.client.auth", "requested").unwrap();
        c.set("listener.name.SECURE.ssl.client.auth", "required")
            .unwrap();
        assert_eq!(
            c.listener_value("SECURE", "ssl.client.auth"),
            Some("required")
        );
        assert_eq!(
            c.listener_value("secure", "ssl.client.auth"),
            Some("required")
        );
        assert_eq!(
            c.listener_value("OTHER", "ssl.client.auth"),
            Some("requested")
        );
        assert!(SecurityConfig::takes(
            "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config"
        ));
        assert!(SecurityConfig::takes("super.users"));
        assert!(!SecurityConfig::takes("ssl.no.such.key"));
        assert!(!SecurityConfig::takes("log.dirs"));
        assert!(c.set("ssl.no.such.key", "x").is_err());
    }

    #[test]
    fn secrets_are_hidden() {
        let mut c = SecurityConfig::default();
        c.set("ssl.key.password", "hunter2").unwrap();
        c.set(
            "listener.name.sasl_ssl.plain.sasl.jaas.config",
            "org.apache.kafka.common.security.plain.PlainLoginModule required user_a=\"pw\";",
        )
        .unwrap();
        c.set("ssl.client.auth", "required").unwrap();
        let debug = format!("{c:?}");
        assert!(
            !debug.contains("hunter2") && !debug.contains("pw"),
            "{debug}"
        );
        let shown: BTreeMap<_, _> = c.entries().collect();
        assert_eq!(shown["ssl.key.password"], None);
        assert_eq!(shown["listener.name.sasl_ssl.plain.sasl.jaas.config"], None);
        assert_eq!(shown["ssl.client.auth"], Some("required"));
    }
}
