//! The cluster part of the broker configuration, with Kafka's key names and rules: listeners
//! (`listeners`, `advertised.listeners`, `listener.security.protocol.map`,
//! `controller.listener.names`, `inter.broker.listener.name`), the KRaft roles
//! (`process.roles`) and the static quorum (`controller.quorum.voters`).
//!
//! The parsers of these values are here (the broker key table, `keys.rs`, calls them when a
//! key is applied), and the two parts of the configuration they fill: [`NetworkConfig`] and
//! [`QuorumConfig`]. Combinations are checked by `BrokerConfig::validate` (`validate.rs`)
//! once every key is in.

use std::collections::BTreeMap;
use std::fmt;

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

/// The security protocols Kafka knows (`listener.security.protocol.map` values): the one
/// type the clients use too.
pub use kafka_net::SecurityProtocol;

/// `host:port`, brackets around an IPv6 address.
fn host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

pub(crate) fn config_error(message: String) -> BrokerError {
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

/// The listeners of a node (`listeners`, `advertised.listeners`,
/// `listener.security.protocol.map`, `inter.broker.listener.name`,
/// `controller.listener.names`) and where it is (`broker.rack`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkConfig {
    /// The client (broker) listener's `host:port` (see [`NetworkConfig::client_listener`]),
    /// which the broker binds; kept in step with `listeners` when keys are applied.
    pub listen: String,
    /// The client listener's advertised `host:port` (its entry in `advertised.listeners`);
    /// `None` (no `advertised.listeners`): `listen`.
    pub advertised: Option<String>,
    /// `listeners`: `NAME://host:port,...` (a bare `host:port` is `PLAINTEXT`).
    pub listeners: Vec<ListenerConfig>,
    /// `advertised.listeners`; `None`: the listeners that are not controller listeners
    /// ([`NetworkConfig::effective_advertised_listeners`]).
    pub advertised_listeners: Option<Vec<ListenerConfig>>,
    /// `listener.security.protocol.map`; `None`: Kafka's default
    /// ([`NetworkConfig::effective_listener_security_protocol_map`]).
    pub listener_security_protocol_map: Option<BTreeMap<String, SecurityProtocol>>,
    /// `inter.broker.listener.name`; `None`: the first listener that is not a controller
    /// listener ([`NetworkConfig::effective_inter_broker_listener_name`]).
    pub inter_broker_listener_name: Option<String>,
    /// `controller.listener.names` (upper case; the first is the one used).
    pub controller_listener_names: Vec<String>,
    /// `broker.rack`.
    pub rack: Option<String>,
}

impl Default for NetworkConfig {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:9092".into(),
            advertised: None,
            listeners: vec![ListenerConfig {
                name: "PLAINTEXT".into(),
                host: "127.0.0.1".into(),
                port: 9092,
            }],
            advertised_listeners: None,
            listener_security_protocol_map: None,
            inter_broker_listener_name: None,
            controller_listener_names: Vec::new(),
            rack: None,
        }
    }
}

impl NetworkConfig {
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
    /// listener. `None` on a controller-only node. [`NetworkConfig::listen`] is its address.
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
    /// (each protocol name to itself) plus, on a cluster node (`clustered`: `process.roles`
    /// set), every controller listener name as PLAINTEXT unless a controller listener or a
    /// listener is named for SSL or SASL.
    pub fn effective_listener_security_protocol_map(
        &self,
        clustered: bool,
    ) -> BTreeMap<String, SecurityProtocol> {
        if let Some(map) = &self.listener_security_protocol_map {
            return map.clone();
        }
        let mut map = default_protocol_map();
        if clustered {
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

    /// Keeps [`NetworkConfig::listen`] and [`NetworkConfig::advertised`] (the client
    /// listener's addresses, which the single-node code uses) in step with the listener keys.
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

    /// The `host:port` clients should use.
    pub fn advertised_addr(&self) -> &str {
        self.advertised.as_deref().unwrap_or(&self.listen)
    }
}

/// The KRaft roles of a node (`process.roles`) and the controller quorum it belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuorumConfig {
    /// `process.roles`; `None` (not set or empty): a single-node broker, as before clusters.
    pub roles: Option<Roles>,
    /// `controller.quorum.voters`: the static controller quorum.
    pub voters: Vec<Voter>,
    /// `broker.heartbeat.interval.ms`: how often a broker heartbeats to the controller.
    pub broker_heartbeat_interval_ms: u64,
    /// `broker.session.timeout.ms`: a broker that has not heartbeated for this long is fenced.
    pub broker_session_timeout_ms: u64,
    /// `controller.quorum.election.timeout.ms`.
    pub election_timeout_ms: u64,
    /// `controller.quorum.fetch.timeout.ms`.
    pub fetch_timeout_ms: u64,
}

impl Default for QuorumConfig {
    fn default() -> Self {
        Self {
            roles: None,
            voters: Vec::new(),
            broker_heartbeat_interval_ms: 2_000,
            broker_session_timeout_ms: 9_000,
            election_timeout_ms: 1_000,
            fetch_timeout_ms: 2_000,
        }
    }
}

impl QuorumConfig {
    /// The voter entry of a node id.
    pub fn voter(&self, id: i32) -> Option<&Voter> {
        self.voters.iter().find(|v| v.id == id)
    }
}
