//! The cluster part of the broker configuration, with Kafka's key names and rules: listeners
//! (`listeners`, `advertised.listeners`, `listener.security.protocol.map`,
//! `controller.listener.names`, `inter.broker.listener.name`), the KRaft roles
//! (`process.roles`) and the static quorum (`controller.quorum.voters`).
//!
//! The parsers of these values are here (the broker key table, `keys.rs`, calls them when a
//! key is applied); combinations are checked by [`BrokerConfig::validate`] once every key is
//! in.

use std::collections::BTreeMap;
use std::fmt;

use super::BrokerConfig;
use super::parse::list as entries;
use crate::error::BrokerError;

#[cfg(test)]
mod tests;

/// One entry of `listeners` or `advertised.listeners`: `NAME://host:port`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListenerConfig {
    /// The listener name, upper case (Kafka's listener names are case-insensitive).
    pub name: String,
    /// Host name or address without brackets (`::1` for `[::1]`); `0.0.0.0` when the entry
    /// gave none (all interfaces).
    pub host: String,
    pub port: u16,
}

impl ListenerConfig {
    /// `host:port`, the host in brackets when it is an IPv6 address: what `bind` and clients
    /// take.
    pub fn addr(&self) -> String {
        host_port(&self.host, self.port)
    }
}

impl fmt::Display for ListenerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}", self.name, self.addr())
    }
}

/// `process.roles`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Roles {
    pub broker: bool,
    pub controller: bool,
}

impl Roles {
    /// Broker and controller in one process (Kafka's combined mode).
    pub fn combined(&self) -> bool {
        self.broker && self.controller
    }
}

impl fmt::Display for Roles {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.broker, self.controller) {
            (true, true) => f.write_str("broker,controller"),
            (true, false) => f.write_str("broker"),
            (false, true) => f.write_str("controller"),
            (false, false) => f.write_str(""),
        }
    }
}

/// One entry of `controller.quorum.voters`: `id@host:port`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Voter {
    pub id: i32,
    /// Host name or address without brackets.
    pub host: String,
    pub port: u16,
}

impl Voter {
    /// `host:port` to connect to, IPv6 addresses in brackets.
    pub fn addr(&self) -> String {
        host_port(&self.host, self.port)
    }
}

impl fmt::Display for Voter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.id, self.addr())
    }
}

/// The security protocols Kafka knows (`listener.security.protocol.map` values). Only
/// [`SecurityProtocol::Plaintext`] is served so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SecurityProtocol {
    Plaintext,
    Ssl,
    SaslPlaintext,
    SaslSsl,
}

impl SecurityProtocol {
    pub const ALL: [SecurityProtocol; 4] = [
        SecurityProtocol::Plaintext,
        SecurityProtocol::Ssl,
        SecurityProtocol::SaslPlaintext,
        SecurityProtocol::SaslSsl,
    ];

    /// Kafka's name of the protocol (`SASL_SSL`, ...).
    pub fn name(self) -> &'static str {
        match self {
            SecurityProtocol::Plaintext => "PLAINTEXT",
            SecurityProtocol::Ssl => "SSL",
            SecurityProtocol::SaslPlaintext => "SASL_PLAINTEXT",
            SecurityProtocol::SaslSsl => "SASL_SSL",
        }
    }

    /// The protocol of a name, any case.
    pub fn from_name(name: &str) -> Option<Self> {
        let upper = name.trim().to_ascii_uppercase();
        Self::ALL.into_iter().find(|p| p.name() == upper)
    }
}

impl fmt::Display for SecurityProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `host:port`, brackets around an IPv6 address.
fn host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

fn config_error(message: String) -> BrokerError {
    BrokerError::Config(message)
}

/// A listener name as Kafka compares it: upper case. Letters, digits, `_`, `-` and `.`.
pub(super) fn listener_name(key: &str, name: &str) -> Result<String, BrokerError> {
    let name = name.trim();
    if name.is_empty() {
        return Err(config_error(format!("{key}: a listener name is empty")));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')))
    {
        return Err(config_error(format!(
            "{key}: listener name {name:?} has the character {c:?} (letters, digits, '_', '-' and '.' only)"
        )));
    }
    Ok(name.to_ascii_uppercase())
}

/// `host:port` of a listener or voter entry; the host may be `[v6]` or empty (`None`).
fn parse_host_port(
    key: &str,
    entry: &str,
    rest: &str,
    form: &str,
) -> Result<(Option<String>, u16), BrokerError> {
    let bad = |why: &str| config_error(format!("{key}: entry {entry:?}: {why} (expected {form})"));
    let (host, port) = rest.rsplit_once(':').ok_or_else(|| bad("no port"))?;
    let host = if let Some(inner) = host.strip_prefix('[') {
        let inner = inner
            .strip_suffix(']')
            .ok_or_else(|| bad("an IPv6 address opened with '[' is not closed with ']'"))?;
        if inner.is_empty() || !inner.contains(':') {
            return Err(bad("brackets are for IPv6 addresses"));
        }
        inner
    } else {
        if host.contains(':') {
            return Err(bad("an IPv6 address must be written in brackets, as [::1]"));
        }
        host
    };
    if let Some(c) = host
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | ':' | '%')))
    {
        return Err(bad(&format!("the host has the character {c:?}")));
    }
    let port: u16 = port.trim().parse().map_err(|_| {
        bad(&format!(
            "the port {port:?} is not a number from 0 to 65535"
        ))
    })?;
    Ok(((!host.is_empty()).then(|| host.to_owned()), port))
}

/// `listeners` / `advertised.listeners`: `NAME://host:port,...`; a bare `host:port` is a
/// `PLAINTEXT` listener. An empty host is all interfaces (`0.0.0.0`) in `listeners` and an
/// error in `advertised.listeners` (clients need an address).
pub(super) fn parse_listeners(
    key: &str,
    v: &str,
    advertised: bool,
) -> Result<Vec<ListenerConfig>, BrokerError> {
    let mut out = Vec::new();
    for entry in entries(v) {
        let (name, rest) = match entry.split_once("://") {
            Some((name, rest)) => (listener_name(key, name)?, rest),
            None => ("PLAINTEXT".to_owned(), entry),
        };
        let (host, port) = parse_host_port(key, entry, rest, "NAME://host:port")?;
        let host = match host {
            Some(h) => h,
            None if advertised => {
                return Err(config_error(format!(
                    "{key}: entry {entry:?} has no host; clients need an address to connect to"
                )));
            }
            None => "0.0.0.0".to_owned(),
        };
        out.push(ListenerConfig { name, host, port });
    }
    if out.is_empty() {
        return Err(config_error(format!("{key} is empty")));
    }
    Ok(out)
}

/// `process.roles`: `broker`, `controller` or both, comma separated; empty is `None` (the
/// single-node broker this was before clusters).
pub(super) fn parse_roles(key: &str, v: &str) -> Result<Option<Roles>, BrokerError> {
    let mut roles = Roles::default();
    let mut any = false;
    for role in entries(v) {
        let slot = match role {
            "broker" => &mut roles.broker,
            "controller" => &mut roles.controller,
            _ => {
                return Err(config_error(format!(
                    "{key}: unknown process role {role:?} (only 'broker' and 'controller' are allowed roles)"
                )));
            }
        };
        if *slot {
            return Err(config_error(format!(
                "{key}={v}: the role {role:?} appears twice"
            )));
        }
        *slot = true;
        any = true;
    }
    Ok(any.then_some(roles))
}

/// `controller.quorum.voters`: `id@host:port,...`; ids unique and not negative.
pub(super) fn parse_voters(key: &str, v: &str) -> Result<Vec<Voter>, BrokerError> {
    const FORM: &str = "{id}@{host}:{port}";
    let mut out: Vec<Voter> = Vec::new();
    for entry in entries(v) {
        let bad =
            |why: &str| config_error(format!("{key}: entry {entry:?}: {why} (expected {FORM})"));
        let (id, rest) = entry.split_once('@').ok_or_else(|| bad("no '@'"))?;
        let id: i32 = id
            .trim()
            .parse()
            .map_err(|_| bad(&format!("the id {id:?} is not a number")))?;
        if id < 0 {
            return Err(bad("the id is negative"));
        }
        let (host, port) = parse_host_port(key, entry, rest, FORM)?;
        let host = host.ok_or_else(|| bad("no host"))?;
        if port == 0 {
            return Err(bad("port 0 cannot be connected to"));
        }
        if let Some(other) = out.iter().find(|o| o.id == id) {
            return Err(config_error(format!(
                "{key}: voter id {id} appears twice ({other} and {entry}); each voter needs its own id"
            )));
        }
        out.push(Voter { id, host, port });
    }
    Ok(out)
}

/// A comma list of listener names (`controller.listener.names`), upper case, no repeats.
pub(super) fn parse_listener_names(key: &str, v: &str) -> Result<Vec<String>, BrokerError> {
    let mut out: Vec<String> = Vec::new();
    for name in entries(v) {
        let name = listener_name(key, name)?;
        if out.contains(&name) {
            return Err(config_error(format!(
                "{key}: the listener name {name} appears twice"
            )));
        }
        out.push(name);
    }
    Ok(out)
}

/// `listener.security.protocol.map`: `NAME:PROTOCOL,...`.
pub(super) fn parse_protocol_map(
    key: &str,
    v: &str,
) -> Result<BTreeMap<String, SecurityProtocol>, BrokerError> {
    let mut out = BTreeMap::new();
    for entry in entries(v) {
        let (name, protocol) = entry.split_once(':').ok_or_else(|| {
            config_error(format!(
                "{key}: entry {entry:?}: expected LISTENER_NAME:SECURITY_PROTOCOL"
            ))
        })?;
        let name = listener_name(key, name)?;
        let protocol = SecurityProtocol::from_name(protocol).ok_or_else(|| {
            config_error(format!(
                "{key}: entry {entry:?}: invalid security protocol {:?} (PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL)",
                protocol.trim()
            ))
        })?;
        if out.insert(name.clone(), protocol).is_some() {
            return Err(config_error(format!(
                "{key}: the listener name {name} appears twice"
            )));
        }
    }
    Ok(out)
}

/// Kafka's default `listener.security.protocol.map`: each protocol's name maps to itself.
pub fn default_protocol_map() -> BTreeMap<String, SecurityProtocol> {
    SecurityProtocol::ALL
        .into_iter()
        .map(|p| (p.name().to_owned(), p))
        .collect()
}

/// Whether `a` and `b` are IP literals of different families (two listeners may then share
/// a port, as in Kafka).
fn different_ip_families(a: &str, b: &str) -> bool {
    match (a.parse::<std::net::IpAddr>(), b.parse::<std::net::IpAddr>()) {
        (Ok(a), Ok(b)) => a.is_ipv4() != b.is_ipv4(),
        _ => false,
    }
}

fn is_wildcard(host: &str) -> bool {
    host.parse::<std::net::IpAddr>()
        .is_ok_and(|ip| ip.is_unspecified())
}

fn names(list: &[ListenerConfig]) -> String {
    let v: Vec<&str> = list.iter().map(|l| l.name.as_str()).collect();
    v.join(",")
}

fn voter_ids(voters: &[Voter]) -> String {
    let v: Vec<String> = voters.iter().map(|v| v.id.to_string()).collect();
    format!("[{}]", v.join(", "))
}

impl BrokerConfig {
    /// Whether `name` is one of `controller.listener.names`.
    pub fn is_controller_listener(&self, name: &str) -> bool {
        self.controller_listener_names.iter().any(|n| n == name)
    }

    /// The listener of a name in `listeners`.
    pub fn listener(&self, name: &str) -> Option<&ListenerConfig> {
        self.listeners.iter().find(|l| l.name == name)
    }

    /// The listener this node's broker serves clients and other brokers on: the one
    /// `inter.broker.listener.name` names, else the first listener that is not a controller
    /// listener. `None` on a controller-only node. [`BrokerConfig::listen`] is its address.
    pub fn client_listener(&self) -> Option<&ListenerConfig> {
        self.inter_broker_listener_name
            .as_deref()
            .and_then(|n| self.listener(n))
            .filter(|l| !self.is_controller_listener(&l.name))
            .or_else(|| {
                self.listeners
                    .iter()
                    .find(|l| !self.is_controller_listener(&l.name))
            })
    }

    /// The listener the controller serves the quorum on: the first of
    /// `controller.listener.names` in `listeners` (Kafka uses the first one).
    pub fn controller_listener(&self) -> Option<&ListenerConfig> {
        self.controller_listener_names
            .first()
            .and_then(|n| self.listener(n))
    }

    /// `inter.broker.listener.name`, or when it is not set the first listener that is not a
    /// controller listener.
    pub fn effective_inter_broker_listener_name(&self) -> Option<String> {
        self.inter_broker_listener_name.clone().or_else(|| {
            self.listeners
                .iter()
                .find(|l| !self.is_controller_listener(&l.name))
                .map(|l| l.name.clone())
        })
    }

    /// `advertised.listeners`, or when it is not set the listeners that are not controller
    /// listeners (as Kafka does).
    pub fn effective_advertised_listeners(&self) -> Vec<ListenerConfig> {
        match &self.advertised_listeners {
            Some(list) => list.clone(),
            None => self
                .listeners
                .iter()
                .filter(|l| !self.is_controller_listener(&l.name))
                .cloned()
                .collect(),
        }
    }

    /// The advertised entry of `name`.
    pub fn advertised_listener(&self, name: &str) -> Option<ListenerConfig> {
        self.effective_advertised_listeners()
            .into_iter()
            .find(|l| l.name == name)
    }

    /// `listener.security.protocol.map` as Kafka reads it: the explicit map, else the default
    /// (each protocol name to itself) plus, with `process.roles` set, every controller
    /// listener name as PLAINTEXT unless a controller listener or a listener is named for
    /// SSL or SASL.
    pub fn effective_listener_security_protocol_map(&self) -> BTreeMap<String, SecurityProtocol> {
        if let Some(map) = &self.listener_security_protocol_map {
            return map.clone();
        }
        let mut map = default_protocol_map();
        if self.roles.is_some() {
            let secure = |name: &str| {
                SecurityProtocol::from_name(name).is_some_and(|p| p != SecurityProtocol::Plaintext)
            };
            let any_secure = self.controller_listener_names.iter().any(|n| secure(n))
                || self.listeners.iter().any(|l| secure(&l.name));
            if !any_secure {
                for name in &self.controller_listener_names {
                    map.entry(name.clone())
                        .or_insert(SecurityProtocol::Plaintext);
                }
            }
        }
        map
    }

    /// The security protocol of a listener name.
    pub fn security_protocol(&self, name: &str) -> Option<SecurityProtocol> {
        self.effective_listener_security_protocol_map()
            .get(name)
            .copied()
    }

    /// The voter entry of a node id.
    pub fn voter(&self, id: i32) -> Option<&Voter> {
        self.quorum_voters.iter().find(|v| v.id == id)
    }

    /// Keeps [`BrokerConfig::listen`] and [`BrokerConfig::advertised`] (the client listener's
    /// addresses, which the single-node code uses) in step with the listener keys.
    pub(super) fn sync_addresses(&mut self) {
        let listen = self
            .client_listener()
            .or_else(|| self.controller_listener())
            .or_else(|| self.listeners.first())
            .map(ListenerConfig::addr);
        if let Some(listen) = listen {
            self.listen = listen;
        }
        self.advertised = self.advertised_listeners.as_ref().and_then(|list| {
            let name = self.client_listener().map(|l| l.name.as_str());
            list.iter()
                .find(|l| Some(l.name.as_str()) == name)
                .or_else(|| list.first())
                .map(ListenerConfig::addr)
        });
    }

    /// Sets the client listener's address (`--listen`): `host:port` (a `NAME://` prefix is
    /// accepted and its name ignored). With no client listener (a controller-only node, or
    /// none at all) it is the whole of `listeners`.
    pub fn set_client_listener(&mut self, addr: &str) -> Result<(), BrokerError> {
        let parsed = parse_listeners("listeners", addr, false)?;
        let [new] = parsed.as_slice() else {
            return Err(config_error(format!(
                "listeners: expected one host:port, got {addr:?}"
            )));
        };
        let client = self.client_listener().map(|l| l.name.clone());
        match client.and_then(|name| self.listeners.iter_mut().find(|l| l.name == name)) {
            Some(l) => {
                l.host = new.host.clone();
                l.port = new.port;
            }
            None => self.listeners = parsed,
        }
        self.sync_addresses();
        Ok(())
    }

    /// Sets the client listener's advertised address (`--advertised-listener`): `host:port`
    /// (a `NAME://` prefix is accepted and its name ignored).
    pub fn set_client_advertised(&mut self, addr: &str) -> Result<(), BrokerError> {
        let parsed = parse_listeners("advertised.listeners", addr, true)?;
        let [new] = parsed.as_slice() else {
            return Err(config_error(format!(
                "advertised.listeners: expected one host:port, got {addr:?}"
            )));
        };
        let name = self
            .client_listener()
            .map_or_else(|| new.name.clone(), |l| l.name.clone());
        let mut list = self.effective_advertised_listeners();
        match list.iter_mut().find(|l| l.name == name) {
            Some(l) => {
                l.host = new.host.clone();
                l.port = new.port;
            }
            None => list.push(ListenerConfig {
                name,
                host: new.host.clone(),
                port: new.port,
            }),
        }
        self.advertised_listeners = Some(list);
        self.sync_addresses();
        Ok(())
    }

    /// Checks the combination of keys, following Kafka's broker config validation: an invalid
    /// one refuses to start, naming the key. Call it once after every key is applied (the
    /// `kafka-broker` binary does; library users building a [`BrokerConfig`] call it
    /// themselves). A configuration without `process.roles` is the single-node broker this
    /// was before clusters, and every configuration that ran before still passes.
    pub fn validate(&self) -> Result<(), BrokerError> {
        self.validate_numbers()?;
        self.validate_listeners()?;
        match self.roles {
            None => self.validate_single_node()?,
            Some(roles) => self.validate_cluster(roles)?,
        }
        if self.roles.is_none_or(|r| r.broker) {
            self.validate_broker_listeners()?;
        }
        self.validate_security_protocols()
    }

    fn validate_numbers(&self) -> Result<(), BrokerError> {
        self.replication.validate().map_err(config_error)?;
        self.txn.validate().map_err(config_error)?;
        self.group.validate().map_err(config_error)?;
        if self.min_insync_replicas < 1 {
            return Err(config_error(format!(
                "min.insync.replicas must be at least 1, got {}",
                self.min_insync_replicas
            )));
        }
        if self.offsets_topic_replication_factor < 1 {
            return Err(config_error(format!(
                "offsets.topic.replication.factor must be at least 1, got {}",
                self.offsets_topic_replication_factor
            )));
        }
        if self.default_replication_factor < 1 {
            return Err(config_error(format!(
                "default.replication.factor must be at least 1, got {}",
                self.default_replication_factor
            )));
        }
        for (key, v) in [
            (
                "broker.heartbeat.interval.ms",
                self.broker_heartbeat_interval_ms,
            ),
            ("broker.session.timeout.ms", self.broker_session_timeout_ms),
            (
                "controller.quorum.election.timeout.ms",
                self.quorum_election_timeout_ms,
            ),
            (
                "controller.quorum.fetch.timeout.ms",
                self.quorum_fetch_timeout_ms,
            ),
        ] {
            if v == 0 {
                return Err(config_error(format!("{key} must be positive, got 0")));
            }
        }
        if self.broker_session_timeout_ms <= self.broker_heartbeat_interval_ms {
            return Err(config_error(format!(
                "broker.session.timeout.ms ({}) must be greater than broker.heartbeat.interval.ms ({}): \
                 a broker would lose its session between two heartbeats",
                self.broker_session_timeout_ms, self.broker_heartbeat_interval_ms
            )));
        }
        Ok(())
    }

    /// `listeners`: present, names unique, ports unique (except port 0, and an IPv4 and an
    /// IPv6 address on the same port).
    fn validate_listeners(&self) -> Result<(), BrokerError> {
        if self.listeners.is_empty() {
            return Err(config_error("listeners is empty".into()));
        }
        for (i, a) in self.listeners.iter().enumerate() {
            for b in &self.listeners[..i] {
                if a.name == b.name {
                    return Err(config_error(format!(
                        "listeners: the listener name {} is used twice ({b} and {a}); each listener must have a different name",
                        a.name
                    )));
                }
                if a.port != 0 && a.port == b.port && !different_ip_families(&a.host, &b.host) {
                    return Err(config_error(format!(
                        "listeners: {b} and {a} use the same port; each listener must have a different port"
                    )));
                }
            }
        }
        Ok(())
    }

    /// Without `process.roles`: the cluster keys mean nothing (Kafka 4 has no ZooKeeper mode
    /// to fall back on).
    fn validate_single_node(&self) -> Result<(), BrokerError> {
        for (key, set) in [
            ("controller.quorum.voters", !self.quorum_voters.is_empty()),
            (
                "controller.listener.names",
                !self.controller_listener_names.is_empty(),
            ),
        ] {
            if set {
                return Err(config_error(format!(
                    "{key} is set but process.roles is not: a cluster node needs process.roles \
                     (broker, controller or broker,controller); there is no ZooKeeper mode, and \
                     without process.roles this is a single-node broker"
                )));
            }
        }
        Ok(())
    }

    fn validate_cluster(&self, roles: Roles) -> Result<(), BrokerError> {
        let node_id = self.node_id;
        if node_id < 0 {
            return Err(config_error(format!(
                "node.id must be 0 or more when process.roles is set, got {node_id}"
            )));
        }
        if self.quorum_voters.is_empty() {
            return Err(config_error(
                "if using process.roles, controller.quorum.voters must contain a parseable set of voters \
                 (id@host:port,...)"
                    .into(),
            ));
        }
        if self.controller_listener_names.is_empty() {
            return Err(config_error(format!(
                "controller.listener.names must contain at least one value when process.roles={roles}"
            )));
        }
        let voters = voter_ids(&self.quorum_voters);
        if roles.controller {
            let Some(voter) = self.voter(node_id) else {
                return Err(config_error(format!(
                    "if process.roles contains the 'controller' role, the node id {node_id} must be \
                     included in the set of voters controller.quorum.voters={voters}"
                )));
            };
            if let Some(missing) = self
                .controller_listener_names
                .iter()
                .find(|n| self.listener(n).is_none())
            {
                return Err(config_error(format!(
                    "controller.listener.names must only contain values appearing in the 'listeners' \
                     configuration when running the KRaft controller role: {missing} is not in listeners={}",
                    names(&self.listeners)
                )));
            }
            if let Some(l) = self.controller_listener() {
                if l.port != voter.port {
                    return Err(config_error(format!(
                        "controller.quorum.voters: this node's entry {voter} has port {}, but its \
                         controller listener {l} (listeners, the first of controller.listener.names) \
                         listens on port {}; other voters would connect to the wrong port",
                        voter.port, l.port
                    )));
                }
            }
        }
        if !roles.broker {
            // Controller only.
            if let Some(l) = self
                .listeners
                .iter()
                .find(|l| !self.is_controller_listener(&l.name))
            {
                return Err(config_error(format!(
                    "the listeners config must only contain KRaft controller listeners from \
                     controller.listener.names when process.roles=controller; {l} is not one"
                )));
            }
            if self.advertised_listeners.is_some() {
                return Err(config_error(
                    "the advertised.listeners config must be empty when process.roles=controller"
                        .into(),
                ));
            }
            if let Some(name) = &self.inter_broker_listener_name {
                if self.is_controller_listener(name) {
                    return Err(config_error(format!(
                        "controller.listener.names must not contain an explicitly set \
                         inter.broker.listener.name ({name}) when process.roles=controller"
                    )));
                }
            }
            return Ok(());
        }
        if !roles.controller {
            // Broker only.
            if self.voter(node_id).is_some() {
                return Err(config_error(format!(
                    "if process.roles contains just the 'broker' role, the node id {node_id} must not \
                     be included in the set of voters controller.quorum.voters={voters}"
                )));
            }
            if let Some(l) = self
                .listeners
                .iter()
                .find(|l| self.is_controller_listener(&l.name))
            {
                return Err(config_error(format!(
                    "controller.listener.names must not contain a value appearing in the 'listeners' \
                     configuration when running KRaft with just the broker role ({l})"
                )));
            }
        }
        if let Some(l) = self
            .effective_advertised_listeners()
            .iter()
            .find(|l| self.is_controller_listener(&l.name))
        {
            return Err(config_error(format!(
                "the advertised.listeners config must not contain KRaft controller listeners from \
                 controller.listener.names when process.roles contains the broker role ({l}): clients \
                 do not send requests to controllers"
            )));
        }
        // Brokers tell each other (and clients) these addresses: all interfaces is none.
        if let Some(l) = self
            .effective_advertised_listeners()
            .iter()
            .find(|l| is_wildcard(&l.host))
        {
            return Err(config_error(format!(
                "advertised.listeners: {l} is not an address other nodes can connect to; set \
                 advertised.listeners to this node's routable address for listener {}",
                l.name
            )));
        }
        Ok(())
    }

    /// What every broker (single node, broker-only, combined) needs of its listeners.
    fn validate_broker_listeners(&self) -> Result<(), BrokerError> {
        let advertised = self.effective_advertised_listeners();
        if advertised.is_empty() {
            return Err(config_error(format!(
                "there must be at least one advertised listener (advertised.listeners).{}",
                if self.roles.is_some() {
                    " Perhaps all listeners appear in controller.listener.names?"
                } else {
                    ""
                }
            )));
        }
        if let Some(name) = &self.inter_broker_listener_name {
            if self.listener(name).is_none() {
                return Err(config_error(format!(
                    "inter.broker.listener.name={name} must be a listener name defined in listeners; \
                     the listeners are {}",
                    names(&self.listeners)
                )));
            }
            if self.is_controller_listener(name) {
                return Err(config_error(format!(
                    "inter.broker.listener.name={name} names a controller listener \
                     (controller.listener.names); brokers talk to each other on a broker listener"
                )));
            }
        }
        let inter = self.effective_inter_broker_listener_name();
        if let Some(name) = &inter {
            if !advertised.iter().any(|l| &l.name == name) {
                return Err(config_error(format!(
                    "inter.broker.listener.name ({name}) must be a listener name defined in \
                     advertised.listeners; the advertised listeners are {}",
                    names(&advertised)
                )));
            }
        }
        if let Some(l) = advertised.iter().find(|l| self.listener(&l.name).is_none()) {
            return Err(config_error(format!(
                "advertised.listeners listener names must be equal to or a subset of the ones defined \
                 in listeners: {l} is not one of {}",
                names(&self.listeners)
            )));
        }
        if let Some(list) = &self.advertised_listeners {
            if let Some(l) = list.iter().find(|l| is_wildcard(&l.host)) {
                return Err(config_error(format!(
                    "advertised.listeners cannot use the nonroutable meta-address {} ({l}); use a \
                     routable IP address",
                    l.host
                )));
            }
        }
        Ok(())
    }

    /// Every listener, and on a broker-only node every controller listener it connects to,
    /// has a security protocol, and it is PLAINTEXT (the only one built).
    fn validate_security_protocols(&self) -> Result<(), BrokerError> {
        let map = self.effective_listener_security_protocol_map();
        let mut used: Vec<(&str, &'static str)> = self
            .listeners
            .iter()
            .map(|l| (l.name.as_str(), "listeners"))
            .collect();
        if self.roles.is_some_and(|r| !r.controller) {
            used.extend(
                self.controller_listener_names
                    .iter()
                    .map(|n| (n.as_str(), "controller.listener.names")),
            );
        }
        for (name, key) in used {
            match map.get(name) {
                None => {
                    return Err(config_error(format!(
                        "listener.security.protocol.map has no security protocol for the listener \
                         {name} ({key}); map it, e.g. {name}:PLAINTEXT"
                    )));
                }
                Some(SecurityProtocol::Plaintext) => {}
                Some(p) => {
                    return Err(config_error(format!(
                        "listener.security.protocol.map maps the listener {name} ({key}) to {p}: only \
                         PLAINTEXT is supported; TLS and SASL are not built yet"
                    )));
                }
            }
        }
        Ok(())
    }
}
