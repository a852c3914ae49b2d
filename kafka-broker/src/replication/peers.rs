//! The one pool of connections to the other brokers of the cluster (their inter-broker
//! listeners): replica fetchers and transaction markers take their connections here instead of
//! each keeping its own. A connection is kept per broker and per channel, because answers on
//! one connection come back in request order: a fetcher's long poll must not hold back
//! another fetcher's answers or a marker write, so each fetcher of a leader and the markers
//! have a channel of their own. A connection found closed is made again; one whose broker now
//! listens elsewhere is replaced.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use kafka_net::ClientSecurity;
use kafka_net::connection::{Connection, ConnectionConfig};

use crate::sync::lock;

/// What a connection to a broker is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Channel {
    /// Replica fetcher number `n` of that leader (`num.replica.fetchers`).
    Fetcher(usize),
    /// WriteTxnMarkers from this broker's transaction coordinator.
    Markers,
}

/// How long connecting to a broker may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

/// Connections to the other brokers, by broker id and channel.
#[derive(Debug, Default)]
pub struct PeerPool {
    connections: Mutex<HashMap<(i32, Channel), (String, Connection)>>,
    /// How connections to the inter-broker listener are secured (its protocol, this node's
    /// TLS and SASL client settings: [`crate::config::BrokerConfig::link_security`]).
    security: ClientSecurity,
    /// The last failed login logged per broker (a wrong password does not heal: warned once,
    /// not at every retry).
    warned: Mutex<HashMap<i32, String>>,
}

impl PeerPool {
    /// A pool whose connections are secured by `security` (the default: plaintext).
    pub fn new(security: ClientSecurity) -> Self {
        Self {
            security,
            ..Self::default()
        }
    }

    /// A connection to broker `id` at `addr` for `channel`, made if there is none (or the
    /// one there is closed, or to another address). Requests on it time out after
    /// `request_timeout`.
    pub async fn connection(
        &self,
        id: i32,
        addr: &str,
        channel: Channel,
        request_timeout: Duration,
    ) -> Result<Connection, kafka_net::NetError> {
        if let Some((a, c)) = lock(&self.connections).get(&(id, channel))
            && a == addr
            && !c.is_closed()
        {
            return Ok(c.clone());
        }
        let mut cfg = ConnectionConfig {
            connect_timeout: CONNECT_TIMEOUT,
            handshake: false,
            security: self.security.clone(),
            ..Default::default()
        };
        cfg.conn.request_timeout = request_timeout;
        let c = match Connection::connect(addr, cfg).await {
            Ok(c) => c,
            Err(e) => {
                if matches!(e, kafka_net::NetError::Authentication { .. }) {
                    let text = e.to_string();
                    if lock(&self.warned).insert(id, text.clone()).as_ref() != Some(&text) {
                        tracing::warn!(broker = id, %addr, error = %text,
                            "cannot log in to a broker's inter-broker listener");
                    }
                }
                return Err(e);
            }
        };
        lock(&self.warned).remove(&id);
        lock(&self.connections).insert((id, channel), (addr.to_owned(), c.clone()));
        Ok(c)
    }

    /// Forgets the connection to broker `id` for `channel` (it failed): the next request makes
    /// a new one.
    pub fn forget(&self, id: i32, channel: Channel) {
        lock(&self.connections).remove(&(id, channel));
    }

    /// Closes every connection (shutdown).
    pub fn clear(&self) {
        lock(&self.connections).clear();
    }
}
