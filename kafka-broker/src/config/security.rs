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

use kafka_auth::jaas::JaasConfig;
use kafka_auth::sasl::Mechanism;
use kafka_net::tls::{self, TlsSettings};
use kafka_net::{ClientSecurity, SecurityKeys};

use super::BrokerConfig;
use super::cluster::{SecurityProtocol, config_error};
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

/// One kind of a node's own connections (Kafka's inter-broker and controller channels).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NodeLink {
    /// To the other brokers' inter-broker listener: replica fetchers, transaction markers.
    Brokers,
    /// To the controllers' first controller listener: the Raft quorum, the metadata
    /// follower, registration, heartbeats and forwarded requests.
    Controllers,
}

impl NodeLink {
    /// The key naming the link's SASL mechanism (Kafka's `sasl.mechanism.inter.broker.protocol`
    /// and `sasl.mechanism.controller.protocol`).
    pub fn mechanism_key(self) -> &'static str {
        match self {
            NodeLink::Brokers => "sasl.mechanism.inter.broker.protocol",
            NodeLink::Controllers => "sasl.mechanism.controller.protocol",
        }
    }

    fn what(self) -> &'static str {
        match self {
            NodeLink::Brokers => "inter-broker listener",
            NodeLink::Controllers => "controller listener",
        }
    }
}

/// What a node's connections of one [`NodeLink`] are made with, read from the configuration
/// without touching a file: the listener they reach, its protocol, and the client keys Kafka's
/// client channel builder derives from that listener (its `ssl.*` keys, the link's SASL
/// mechanism, the JAAS config's `username` and `password`).
#[derive(Debug, Clone)]
pub struct LinkPlan {
    /// Which link.
    pub link: NodeLink,
    /// The listener name (upper case) whose protocol and keys the link uses.
    pub listener: String,
    /// That listener's security protocol.
    pub protocol: SecurityProtocol,
    /// The SASL mechanism when the protocol uses SASL.
    pub mechanism: Option<Mechanism>,
    keys: SecurityKeys,
}

impl LinkPlan {
    /// The client keys (`security.protocol`, `ssl.*`, `sasl.mechanism`, `sasl.jaas.config`).
    pub fn keys(&self) -> &SecurityKeys {
        &self.keys
    }

    /// Reads the files (truststore, keystore) and builds what connections use.
    pub fn build(&self) -> Result<ClientSecurity, BrokerError> {
        self.keys.build().map_err(|e| {
            config_error(format!(
                "the {} {} (this node's connections to it): {e}",
                self.link.what(),
                self.listener
            ))
        })
    }
}

/// The JAAS config key of `mechanism` on `listener` (Kafka's
/// `listener.name.NAME.MECHANISM.sasl.jaas.config`).
fn jaas_key(listener: &str, mechanism: Mechanism) -> String {
    format!(
        "listener.name.{}.{}.sasl.jaas.config",
        listener.to_ascii_lowercase(),
        mechanism.name().to_ascii_lowercase()
    )
}

impl BrokerConfig {
    /// The listener a node's links of kind `link` reach: for brokers the inter-broker
    /// listener (`inter.broker.listener.name`, else the first listener that is not a
    /// controller listener), for controllers the first of `controller.listener.names`.
    pub fn link_listener(&self, link: NodeLink) -> Option<String> {
        match link {
            NodeLink::Brokers => self.network.effective_inter_broker_listener_name(),
            NodeLink::Controllers => self.network.controller_listener_names.first().cloned(),
        }
    }

    /// The plan of a node's links of kind `link` (Kafka's `ChannelBuilders.clientChannelBuilder`
    /// for the inter-broker or controller channel): the listener's protocol; over TLS its
    /// `ssl.*` keys (its truststore checks the peer, its keystore, when set, is the client
    /// certificate; hostname verification unless `ssl.endpoint.identification.algorithm` is
    /// empty); over SASL the link's mechanism (`sasl.mechanism.inter.broker.protocol` or
    /// `sasl.mechanism.controller.protocol`, required: Kafka's default GSSAPI is not offered)
    /// and the `username` / `password` of the listener's JAAS config for that mechanism
    /// (`listener.name.NAME.MECHANISM.sasl.jaas.config`, else `sasl.jaas.config`), as Kafka's
    /// login modules read them.
    pub fn link_plan(&self, link: NodeLink) -> Result<LinkPlan, BrokerError> {
        let Some(listener) = self.link_listener(link) else {
            return Err(config_error(format!(
                "no {} to connect to (listeners, controller.listener.names)",
                link.what()
            )));
        };
        let Some(protocol) = self.security_protocol(&listener) else {
            return Err(config_error(format!(
                "listener.security.protocol.map has no security protocol for the {} {listener}",
                link.what()
            )));
        };
        if link == NodeLink::Brokers {
            if let Some(v) = self.security.get("security.inter.broker.protocol") {
                if self.network.inter_broker_listener_name.is_some() {
                    return Err(config_error(
                        "only one of inter.broker.listener.name and security.inter.broker.protocol \
                         should be set"
                            .into(),
                    ));
                }
                if SecurityProtocol::from_name(v) != Some(protocol) {
                    return Err(config_error(format!(
                        "security.inter.broker.protocol={v}, but the inter-broker listener \
                         {listener} (the first listener that is not a controller listener) is \
                         {protocol}; set inter.broker.listener.name to the listener brokers \
                         use between them instead"
                    )));
                }
            }
        }
        let sec = &self.security;
        let mut keys = SecurityKeys::default();
        let key_err = |e: kafka_net::NetError| config_error(format!("listener {listener}: {e}"));
        keys.set("security.protocol", protocol.name())
            .map_err(key_err)?;
        if protocol.tls() {
            for k in tls::SSL_KEYS {
                if let Some(v) = sec.listener_value(&listener, k) {
                    keys.set(k, v).map_err(key_err)?;
                }
            }
            // Checked now, read when the link is built.
            TlsSettings::from_keys(|k| sec.listener_value(&listener, k).map(str::to_owned))
                .map_err(|e| config_error(format!("listener {listener}: {e}")))?;
        }
        let mut mechanism = None;
        if protocol.sasl() {
            let key = link.mechanism_key();
            let Some(name) = sec.get(key).map(str::trim).filter(|m| !m.is_empty()) else {
                return Err(config_error(format!(
                    "{key} must be set to PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512: the {} \
                     {listener} is {protocol}, and Kafka's default GSSAPI is not offered",
                    link.what()
                )));
            };
            let mech = Mechanism::from_name(name)
                .ok()
                .filter(|m| m.scram().is_some() || *m == Mechanism::Plain)
                .ok_or_else(|| {
                    config_error(format!(
                        "{key}={name} is not supported between nodes (PLAIN, SCRAM-SHA-256, \
                         SCRAM-SHA-512)"
                    ))
                })?;
            let jaas_name = jaas_key(&listener, mech);
            let plain_key = format!("{}.sasl.jaas.config", mech.name().to_ascii_lowercase());
            let (jaas, from) = match sec.listener_value(&listener, &plain_key) {
                Some(j) => (j, jaas_name.clone()),
                None => match sec.listener_value(&listener, "sasl.jaas.config") {
                    Some(j) => (j, "sasl.jaas.config".to_owned()),
                    None => {
                        return Err(config_error(format!(
                            "{jaas_name} is not set: this node logs in to the {} {listener} \
                             with its username and password ({key}={})",
                            link.what(),
                            mech.name()
                        )));
                    }
                },
            };
            let module =
                JaasConfig::parse_single(jaas).map_err(|e| config_error(format!("{from}: {e}")))?;
            if module.username().is_none_or(str::is_empty) || module.password().is_none() {
                return Err(config_error(format!(
                    "{from} needs the options username and password: this node logs in with \
                     them to the {} {listener} ({key}={})",
                    link.what(),
                    mech.name()
                )));
            }
            keys.set("sasl.mechanism", mech.name()).map_err(key_err)?;
            keys.set("sasl.jaas.config", jaas).map_err(key_err)?;
            mechanism = Some(mech);
        }
        Ok(LinkPlan {
            link,
            listener,
            protocol,
            mechanism,
            keys,
        })
    }

    /// The security of a node's links of kind `link`, built ([`BrokerConfig::link_plan`],
    /// files read); plaintext on a node that is not part of a cluster (`process.roles` unset),
    /// which has no such links.
    pub fn link_security(&self, link: NodeLink) -> Result<ClientSecurity, BrokerError> {
        if self.quorum.roles.is_none() {
            return Ok(ClientSecurity::default());
        }
        self.link_plan(link)?.build()
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

#[cfg(test)]
mod link_tests {
    use kafka_auth::sasl::Mechanism;
    use kafka_net::{SecurityKeys, SecurityProtocol};

    use super::NodeLink;
    use crate::config::BrokerConfig;

    /// A combined node whose client, inter-broker and controller listeners are secured.
    const SECURED: &str = "process.roles=broker,controller\nnode.id=1\n\
        controller.quorum.voters=1@127.0.0.1:19301,2@127.0.0.1:19302,3@127.0.0.1:19303\n\
        listeners=CLIENT://127.0.0.1:19201,INTERNAL://127.0.0.1:19401,CONTROLLER://127.0.0.1:19301\n\
        advertised.listeners=CLIENT://127.0.0.1:19201,INTERNAL://127.0.0.1:19401\n\
        controller.listener.names=CONTROLLER\ninter.broker.listener.name=INTERNAL\n\
        listener.security.protocol.map=CLIENT:SASL_SSL,INTERNAL:SASL_SSL,CONTROLLER:SASL_PLAINTEXT\n\
        ssl.truststore.location=/broker-wide/ca.pem\n\
        listener.name.internal.ssl.truststore.location=/internal/ca.pem\n\
        listener.name.internal.ssl.keystore.location=/internal/node1.pem\n\
        listener.name.internal.ssl.endpoint.identification.algorithm=\n\
        sasl.mechanism.inter.broker.protocol=PLAIN\n\
        sasl.mechanism.controller.protocol=SCRAM-SHA-512\n\
        listener.name.internal.sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256\n\
        listener.name.controller.sasl.enabled.mechanisms=SCRAM-SHA-512\n\
        listener.name.client.sasl.enabled.mechanisms=PLAIN\n\
        listener.name.internal.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"admin\" password=\"admin-pw\" user_admin=\"admin-pw\";\n\
        listener.name.client.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"client-user\" password=\"x\" user_alice=\"a\";\n\
        listener.name.controller.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username=\"ctl\" password=\"ctl-pw\";\n";

    fn config(text: &str) -> BrokerConfig {
        let mut c = BrokerConfig::default();
        let unknown = c.apply_properties(text).unwrap();
        assert!(unknown.is_empty(), "unknown keys: {unknown:?}");
        c
    }

    fn with(changes: &str) -> BrokerConfig {
        let mut c = config(SECURED);
        c.apply_properties(changes).unwrap();
        c
    }

    fn refused(c: &BrokerConfig, link: NodeLink, needles: &[&str]) {
        let e = c
            .link_plan(link)
            .expect_err("the plan should fail")
            .to_string();
        for n in needles {
            assert!(e.contains(n), "expected {n:?} in: {e}");
        }
        // validate() refuses the same configuration.
        assert!(c.validate().is_err());
    }

    #[test]
    fn broker_links_take_the_inter_broker_listeners_keys() {
        let c = config(SECURED);
        c.validate().unwrap();
        let plan = c.link_plan(NodeLink::Brokers).unwrap();
        assert_eq!(plan.listener, "INTERNAL");
        assert_eq!(plan.protocol, SecurityProtocol::SaslSsl);
        assert_eq!(plan.mechanism, Some(Mechanism::Plain));
        // The listener's prefixed ssl keys win over the broker-wide ones; the client
        // listener's JAAS (another user) is not the one taken.
        let mut expected = SecurityKeys::default();
        for (k, v) in [
            ("security.protocol", "SASL_SSL"),
            ("ssl.truststore.location", "/internal/ca.pem"),
            ("ssl.keystore.location", "/internal/node1.pem"),
            ("ssl.endpoint.identification.algorithm", ""),
            ("sasl.mechanism", "PLAIN"),
            (
                "sasl.jaas.config",
                "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"admin\" password=\"admin-pw\" user_admin=\"admin-pw\";",
            ),
        ] {
            expected.set(k, v).unwrap();
        }
        assert_eq!(plan.keys(), &expected);
    }

    #[test]
    fn controller_links_take_the_first_controller_listener_and_its_mechanism() {
        let c = config(SECURED);
        let plan = c.link_plan(NodeLink::Controllers).unwrap();
        assert_eq!(plan.listener, "CONTROLLER");
        assert_eq!(plan.protocol, SecurityProtocol::SaslPlaintext);
        // No TLS, nothing to read: the credentials come out of the JAAS config.
        let built = c.link_security(NodeLink::Controllers).unwrap();
        assert!(built.tls.is_none());
        let login = built.sasl.unwrap();
        assert_eq!(login.mechanism, Mechanism::ScramSha512);
        assert_eq!(login.username, "ctl");
        assert_eq!(login.password.expose(), b"ctl-pw");
        // The plain sasl.jaas.config is the fallback when no per-mechanism one is set.
        let c = config(&SECURED.replace(
            "listener.name.controller.scram-sha-512.sasl.jaas.config",
            "listener.name.controller.sasl.jaas.config",
        ));
        let login = c
            .link_security(NodeLink::Controllers)
            .unwrap()
            .sasl
            .unwrap();
        assert_eq!(login.username, "ctl");
    }

    #[test]
    fn plaintext_links_and_single_nodes_need_nothing() {
        let c = with(
            "listener.security.protocol.map=CLIENT:SASL_SSL,INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT\n",
        );
        c.validate().unwrap();
        for link in [NodeLink::Brokers, NodeLink::Controllers] {
            let s = c.link_security(link).unwrap();
            assert_eq!(s.protocol, SecurityProtocol::Plaintext);
            assert!(s.tls.is_none() && s.sasl.is_none());
        }
        // A single node has no links, whatever its listeners.
        let single = config("listeners=SASL_SSL://127.0.0.1:9093\n");
        assert!(single.link_plan(NodeLink::Brokers).is_err());
        assert_eq!(
            single.link_security(NodeLink::Brokers).unwrap().protocol,
            SecurityProtocol::Plaintext
        );
    }

    #[test]
    fn the_mechanism_must_be_set_and_supported() {
        let c = config(&SECURED.replace("sasl.mechanism.inter.broker.protocol=PLAIN\n", ""));
        refused(
            &c,
            NodeLink::Brokers,
            &["sasl.mechanism.inter.broker.protocol", "GSSAPI", "INTERNAL"],
        );
        let c = with("sasl.mechanism.controller.protocol=GSSAPI\n");
        refused(
            &c,
            NodeLink::Controllers,
            &["sasl.mechanism.controller.protocol=GSSAPI", "not supported"],
        );
    }

    #[test]
    fn the_mechanism_must_be_enabled_on_a_listener_this_node_serves() {
        let c = with("listener.name.internal.sasl.enabled.mechanisms=SCRAM-SHA-256\n");
        // The plan itself is fine: the node connects as PLAIN ...
        assert!(c.link_plan(NodeLink::Brokers).is_ok());
        // ... but its own listener would refuse the others doing the same.
        let e = c.validate().unwrap_err().to_string();
        for n in [
            "sasl.mechanism.inter.broker.protocol=PLAIN",
            "listener.name.internal.sasl.enabled.mechanisms",
        ] {
            assert!(e.contains(n), "expected {n:?} in: {e}");
        }
        // A broker-only node connects to the controller listener without serving it.
        let broker = config(
            &SECURED
                .replace(
                    "process.roles=broker,controller\nnode.id=1",
                    "process.roles=broker\nnode.id=4",
                )
                .replace(",CONTROLLER://127.0.0.1:19301", "")
                .replace(
                    "listener.name.controller.sasl.enabled.mechanisms=SCRAM-SHA-512\n",
                    "",
                ),
        );
        broker.validate().unwrap();
        assert_eq!(
            broker.link_plan(NodeLink::Controllers).unwrap().mechanism,
            Some(Mechanism::ScramSha512)
        );
    }

    #[test]
    fn credentials_must_be_there() {
        let c = config(&SECURED.replace(
            "listener.name.internal.plain.sasl.jaas.config",
            "listener.name.internal.scram-sha-256.sasl.jaas.config",
        ));
        refused(
            &c,
            NodeLink::Brokers,
            &["listener.name.internal.plain.sasl.jaas.config is not set"],
        );
        let c = with(
            "listener.name.internal.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_admin=\"admin-pw\";\n",
        );
        refused(
            &c,
            NodeLink::Brokers,
            &[
                "listener.name.internal.plain.sasl.jaas.config",
                "username and password",
            ],
        );
        let c = with("listener.name.internal.plain.sasl.jaas.config=not a jaas config\n");
        refused(
            &c,
            NodeLink::Brokers,
            &["listener.name.internal.plain.sasl.jaas.config"],
        );
        // A secret never shows in the message.
        let e = with(
            "listener.name.internal.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required password=\"s3cret\";\n",
        )
        .link_plan(NodeLink::Brokers)
        .unwrap_err()
        .to_string();
        assert!(!e.contains("s3cret"), "{e}");
    }

    #[test]
    fn tls_keys_are_checked_and_files_read_when_built() {
        let c = with("listener.name.internal.ssl.enabled.protocols=TLSv1.0\n");
        refused(
            &c,
            NodeLink::Brokers,
            &["INTERNAL", "ssl.enabled.protocols"],
        );
        // The plan does not read files; building it does, and names the listener.
        let c = config(SECURED);
        let e = c.link_security(NodeLink::Brokers).unwrap_err().to_string();
        assert!(e.contains("inter-broker listener INTERNAL"), "{e}");
    }

    #[test]
    fn security_inter_broker_protocol_must_agree_with_the_listener() {
        let c = with("security.inter.broker.protocol=SASL_SSL\n");
        refused(
            &c,
            NodeLink::Brokers,
            &[
                "inter.broker.listener.name",
                "security.inter.broker.protocol",
                "only one",
            ],
        );
        let no_name = |protocol: &str| {
            let mut c = config(
                &SECURED
                    .replace("inter.broker.listener.name=INTERNAL\n", "")
                    .replace(
                        "advertised.listeners=CLIENT://127.0.0.1:19201,INTERNAL://127.0.0.1:19401",
                        "advertised.listeners=INTERNAL://127.0.0.1:19401,CLIENT://127.0.0.1:19201",
                    )
                    .replace(
                        "listeners=CLIENT://127.0.0.1:19201,INTERNAL://127.0.0.1:19401",
                        "listeners=INTERNAL://127.0.0.1:19401,CLIENT://127.0.0.1:19201",
                    ),
            );
            c.apply("security.inter.broker.protocol", protocol).unwrap();
            c
        };
        assert_eq!(
            no_name("SASL_SSL")
                .link_plan(NodeLink::Brokers)
                .unwrap()
                .listener,
            "INTERNAL"
        );
        refused(
            &no_name("PLAINTEXT"),
            NodeLink::Brokers,
            &[
                "security.inter.broker.protocol=PLAINTEXT",
                "INTERNAL",
                "SASL_SSL",
            ],
        );
    }
}
