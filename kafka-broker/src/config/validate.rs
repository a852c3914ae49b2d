//! The checks of key combinations, following Kafka's broker config validation: an invalid
//! configuration refuses to start, naming the key. Values are checked when each key is
//! applied (`keys.rs`); this is what only the whole configuration can tell.

use super::BrokerConfig;
use super::cluster::{ListenerConfig, Roles, Voter, config_error};
use super::security::NodeLink;
use crate::error::BrokerError;

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
    /// Checks the combination of keys, following Kafka's broker config validation: an invalid
    /// one refuses to start, naming the key. Call it once after every key is applied (the
    /// `kafka-broker` binary does; library users building a [`BrokerConfig`] call it
    /// themselves). A configuration without `process.roles` is the single-node broker this
    /// was before clusters, and every configuration that ran before still passes.
    pub fn validate(&self) -> Result<(), BrokerError> {
        self.validate_numbers()?;
        self.validate_listeners()?;
        match self.quorum.roles {
            None => self.validate_single_node()?,
            Some(roles) => self.validate_cluster(roles)?,
        }
        if self.quorum.roles.is_none_or(|r| r.broker) {
            self.validate_broker_listeners()?;
        }
        self.validate_security_protocols()
    }

    fn validate_numbers(&self) -> Result<(), BrokerError> {
        self.replication.validate().map_err(config_error)?;
        self.txn.validate().map_err(config_error)?;
        self.group.validate().map_err(config_error)?;
        if self.log.min_insync_replicas < 1 {
            return Err(config_error(format!(
                "min.insync.replicas must be at least 1, got {}",
                self.log.min_insync_replicas
            )));
        }
        if self.topics.default_replication_factor < 1 {
            return Err(config_error(format!(
                "default.replication.factor must be at least 1, got {}",
                self.topics.default_replication_factor
            )));
        }
        for (key, v) in [
            (
                "broker.heartbeat.interval.ms",
                self.quorum.broker_heartbeat_interval_ms,
            ),
            (
                "broker.session.timeout.ms",
                self.quorum.broker_session_timeout_ms,
            ),
            (
                "controller.quorum.election.timeout.ms",
                self.quorum.election_timeout_ms,
            ),
            (
                "controller.quorum.fetch.timeout.ms",
                self.quorum.fetch_timeout_ms,
            ),
        ] {
            if v == 0 {
                return Err(config_error(format!("{key} must be positive, got 0")));
            }
        }
        if self.quorum.broker_session_timeout_ms <= self.quorum.broker_heartbeat_interval_ms {
            return Err(config_error(format!(
                "broker.session.timeout.ms ({}) must be greater than broker.heartbeat.interval.ms ({}): \
                 a broker would lose its session between two heartbeats",
                self.quorum.broker_session_timeout_ms, self.quorum.broker_heartbeat_interval_ms
            )));
        }
        Ok(())
    }

    /// `listeners`: present, names unique, ports unique (except port 0, and an IPv4 and an
    /// IPv6 address on the same port).
    fn validate_listeners(&self) -> Result<(), BrokerError> {
        if self.network.listeners.is_empty() {
            return Err(config_error("listeners is empty".into()));
        }
        for (i, a) in self.network.listeners.iter().enumerate() {
            for b in &self.network.listeners[..i] {
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
            ("controller.quorum.voters", !self.quorum.voters.is_empty()),
            (
                "controller.listener.names",
                !self.network.controller_listener_names.is_empty(),
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
        let node_id = self.server.node_id;
        if node_id < 0 {
            return Err(config_error(format!(
                "node.id must be 0 or more when process.roles is set, got {node_id}"
            )));
        }
        if self.quorum.voters.is_empty() {
            return Err(config_error(
                "if using process.roles, controller.quorum.voters must contain a parseable set of voters \
                 (id@host:port,...)"
                    .into(),
            ));
        }
        if self.network.controller_listener_names.is_empty() {
            return Err(config_error(format!(
                "controller.listener.names must contain at least one value when process.roles={roles}"
            )));
        }
        let voters = voter_ids(&self.quorum.voters);
        if roles.controller {
            let Some(voter) = self.quorum.voter(node_id) else {
                return Err(config_error(format!(
                    "if process.roles contains the 'controller' role, the node id {node_id} must be \
                     included in the set of voters controller.quorum.voters={voters}"
                )));
            };
            if let Some(missing) = self
                .network
                .controller_listener_names
                .iter()
                .find(|n| self.network.listener(n).is_none())
            {
                return Err(config_error(format!(
                    "controller.listener.names must only contain values appearing in the 'listeners' \
                     configuration when running the KRaft controller role: {missing} is not in listeners={}",
                    names(&self.network.listeners)
                )));
            }
            if let Some(l) = self.network.controller_listener() {
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
                .network
                .listeners
                .iter()
                .find(|l| !self.network.is_controller_listener(&l.name))
            {
                return Err(config_error(format!(
                    "the listeners config must only contain KRaft controller listeners from \
                     controller.listener.names when process.roles=controller; {l} is not one"
                )));
            }
            if self.network.advertised_listeners.is_some() {
                return Err(config_error(
                    "the advertised.listeners config must be empty when process.roles=controller"
                        .into(),
                ));
            }
            if let Some(name) = &self.network.inter_broker_listener_name {
                if self.network.is_controller_listener(name) {
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
            if self.quorum.voter(node_id).is_some() {
                return Err(config_error(format!(
                    "if process.roles contains just the 'broker' role, the node id {node_id} must not \
                     be included in the set of voters controller.quorum.voters={voters}"
                )));
            }
            if let Some(l) = self
                .network
                .listeners
                .iter()
                .find(|l| self.network.is_controller_listener(&l.name))
            {
                return Err(config_error(format!(
                    "controller.listener.names must not contain a value appearing in the 'listeners' \
                     configuration when running KRaft with just the broker role ({l})"
                )));
            }
        }
        if let Some(l) = self
            .network
            .effective_advertised_listeners()
            .iter()
            .find(|l| self.network.is_controller_listener(&l.name))
        {
            return Err(config_error(format!(
                "the advertised.listeners config must not contain KRaft controller listeners from \
                 controller.listener.names when process.roles contains the broker role ({l}): clients \
                 do not send requests to controllers"
            )));
        }
        // Brokers tell each other (and clients) these addresses: all interfaces is none.
        if let Some(l) = self
            .network
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
        let advertised = self.network.effective_advertised_listeners();
        if advertised.is_empty() {
            return Err(config_error(format!(
                "there must be at least one advertised listener (advertised.listeners).{}",
                if self.quorum.roles.is_some() {
                    " Perhaps all listeners appear in controller.listener.names?"
                } else {
                    ""
                }
            )));
        }
        if let Some(name) = &self.network.inter_broker_listener_name {
            if self.network.listener(name).is_none() {
                return Err(config_error(format!(
                    "inter.broker.listener.name={name} must be a listener name defined in listeners; \
                     the listeners are {}",
                    names(&self.network.listeners)
                )));
            }
            if self.network.is_controller_listener(name) {
                return Err(config_error(format!(
                    "inter.broker.listener.name={name} names a controller listener \
                     (controller.listener.names); brokers talk to each other on a broker listener"
                )));
            }
        }
        let inter = self.network.effective_inter_broker_listener_name();
        if let Some(name) = &inter {
            if !advertised.iter().any(|l| &l.name == name) {
                return Err(config_error(format!(
                    "inter.broker.listener.name ({name}) must be a listener name defined in \
                     advertised.listeners; the advertised listeners are {}",
                    names(&advertised)
                )));
            }
        }
        if let Some(l) = advertised
            .iter()
            .find(|l| self.network.listener(&l.name).is_none())
        {
            return Err(config_error(format!(
                "advertised.listeners listener names must be equal to or a subset of the ones defined \
                 in listeners: {l} is not one of {}",
                names(&self.network.listeners)
            )));
        }
        if let Some(list) = &self.network.advertised_listeners {
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
    /// has a security protocol. In a cluster the node's own links (to the inter-broker
    /// listener on a broker, to the controller listener on every node) can be made: their
    /// SASL mechanism is set, supported and enabled on a listener this node serves, and the
    /// credentials it logs in with are there ([`BrokerConfig::link_plan`]).
    fn validate_security_protocols(&self) -> Result<(), BrokerError> {
        let map = self
            .network
            .effective_listener_security_protocol_map(self.quorum.roles.is_some());
        let mut used: Vec<(&str, &'static str)> = self
            .network
            .listeners
            .iter()
            .map(|l| (l.name.as_str(), "listeners"))
            .collect();
        if self.quorum.roles.is_some_and(|r| !r.controller) {
            used.extend(
                self.network
                    .controller_listener_names
                    .iter()
                    .map(|n| (n.as_str(), "controller.listener.names")),
            );
        }
        for (name, key) in used {
            if !map.contains_key(name) {
                return Err(config_error(format!(
                    "listener.security.protocol.map has no security protocol for the listener \
                     {name} ({key}); map it, e.g. {name}:PLAINTEXT"
                )));
            }
        }
        let Some(roles) = self.quorum.roles else {
            return Ok(());
        };
        let mut links = vec![(NodeLink::Controllers, roles.controller)];
        if roles.broker {
            links.push((NodeLink::Brokers, true));
        }
        for (link, served_here) in links {
            let plan = self.link_plan(link)?;
            let Some(mechanism) = plan.mechanism.filter(|_| served_here) else {
                continue;
            };
            let enabled = self
                .security
                .listener_value(&plan.listener, "sasl.enabled.mechanisms")
                .unwrap_or("");
            let on = enabled
                .split(',')
                .any(|m| m.trim().eq_ignore_ascii_case(mechanism.name()));
            if !on {
                return Err(config_error(format!(
                    "{}={} must be included in sasl.enabled.mechanisms of the listener {} \
                     (listener.name.{}.sasl.enabled.mechanisms, now {enabled:?}) when SASL is \
                     used between nodes",
                    link.mechanism_key(),
                    mechanism.name(),
                    plan.listener,
                    plan.listener.to_ascii_lowercase()
                )));
            }
        }
        Ok(())
    }
}
