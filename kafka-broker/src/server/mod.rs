//! The network front: an accept loop with a connection limit, one task per connection, and
//! an orderly shutdown that finishes what is in flight.

mod connection;
mod limits;
mod oauth;
pub mod sasl;
pub mod tls;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;

use crate::error::BrokerError;
use crate::node::Broker;

/// Serves `listener` until `shutdown` completes, then stops accepting, lets every connection
/// finish the requests it has read, and closes the broker (flushing logs, writing the
/// clean-shutdown marker).
pub async fn serve(
    listener: TcpListener,
    broker: Arc<Broker>,
    shutdown: impl Future<Output = ()>,
) -> Result<(), BrokerError> {
    let name = broker.client_listener_name();
    let listener = Listener {
        socket: listener,
        name,
        tls: None,
        sasl: None,
    };
    serve_listeners(vec![listener], broker, shutdown).await
}

/// A bound listener: its socket, its name (`listeners`), its TLS configuration (SSL and
/// SASL_SSL) and its SASL settings (SASL_PLAINTEXT and SASL_SSL).
#[derive(Debug)]
pub struct Listener {
    pub socket: TcpListener,
    pub name: String,
    pub tls: Option<Arc<tls::TlsListener>>,
    pub sasl: Option<Arc<sasl::SaslListener>>,
}

/// [`serve`] on several listeners: a connection's Metadata and FindCoordinator answers give
/// the endpoints of the listener it came in on.
pub async fn serve_listeners(
    listeners: Vec<Listener>,
    broker: Arc<Broker>,
    shutdown: impl Future<Output = ()>,
) -> Result<(), BrokerError> {
    let limit = Arc::new(Semaphore::new(broker.config.server.max_connections));
    let per_ip = Arc::new(limits::PerIp::new(
        broker.config.server.max_connections_per_ip,
        &broker.config.server.max_connections_per_ip_overrides,
    ));
    let mut refused = limits::RefusalLog::new(Duration::from_secs(10));
    let mut accept_failures = limits::AcceptFailureLog::new(Duration::from_secs(10));
    let queued = Arc::new(Semaphore::new(
        broker.config.server.queued_max_request_bytes,
    ));
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut conns = JoinSet::new();
    // One accept task per listener, feeding this loop.
    let (accepted_tx, mut accepted_rx) = tokio::sync::mpsc::channel(64);
    let mut acceptors = JoinSet::new();
    for listener in listeners {
        let tx = accepted_tx.clone();
        let on = Arc::new(connection::On {
            name: listener.name.into(),
            tls: listener.tls,
            sasl: listener.sasl,
        });
        let socket = listener.socket;
        let broker = Arc::clone(&broker);
        acceptors.spawn(async move {
            loop {
                let accepted = socket.accept().await;
                let failed = accepted.is_err();
                let accepted = match accepted {
                    Ok((sock, peer)) => match admission(&broker, peer.ip(), &on.name).await {
                        None => Ok((sock, peer)),
                        Some(close_after_ms) => {
                            tracing::debug!(%peer, listener = %on.name,
                                "connection refused: over the address's connection_creation_rate");
                            tokio::spawn(async move {
                                tokio::time::sleep(Duration::from_millis(close_after_ms)).await;
                                drop(sock);
                            });
                            continue;
                        }
                    },
                    Err(e) => Err(e),
                };
                if tx.send((accepted, Arc::clone(&on))).await.is_err() {
                    return;
                }
                if failed {
                    // Out of file descriptors and similar: back off instead of spinning (the
                    // connection stays in the listen backlog for the next try).
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        });
    }
    drop(accepted_tx);
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            Some((accepted, on)) = accepted_rx.recv() => match accepted {
                Ok((sock, peer)) => {
                    let Some(ip_slot) = per_ip.acquire(peer.ip()) else {
                        refused.refused(peer, "max.connections.per.ip", per_ip.limit(peer.ip()));
                        drop(sock);
                        continue;
                    };
                    let Ok(permit) = limit.clone().try_acquire_owned() else {
                        refused.refused(peer, "max.connections", broker.config.server.max_connections);
                        drop(sock);
                        continue;
                    };
                    let b = broker.clone();
                    let stop = stop_rx.clone();
                    let queued = Arc::clone(&queued);
                    conns.spawn(async move {
                        connection::serve(b, sock, peer, stop, queued, on).await;
                        drop(permit);
                        drop(ip_slot);
                    });
                }
                Err(e) => accept_failures.failed(&e),
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
    tracing::info!("shutting down: no new connections; finishing requests in flight");
    // Replication stops first: nothing is appended to a follower's log once it closes.
    broker.fetchers.stop();
    acceptors.abort_all();
    while acceptors.join_next().await.is_some() {}
    let _ = stop_tx.send(true);
    let drained = tokio::time::timeout(Duration::from_secs(30), async {
        while conns.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!("connections still busy after 30 s; closing them");
        conns.abort_all();
    }
    broker.close()
}

/// The connection-creation rates (KIP-612): `None` when a connection from `ip` on `listener`
/// is served, else the milliseconds after which to close it unserved (over its address's
/// `connection_creation_rate`, Kafka's delayed close, so a client retrying at once is slowed).
/// Over the broker's or the listener's rate this listener's accept loop pauses first
/// (nothing else is accepted on it meanwhile), as Kafka's acceptor does.
async fn admission(broker: &Broker, ip: std::net::IpAddr, listener: &str) -> Option<u64> {
    use crate::quota::Admission;
    let mut admission = broker.quotas.admit(ip, listener, broker.now_ms());
    if let Admission::Delay(ms) = admission {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        admission = broker
            .quotas
            .admit_after_delay(ip, listener, broker.now_ms());
    }
    match admission {
        Admission::Refuse { close_after_ms } => Some(close_after_ms),
        Admission::Accept | Admission::Delay(_) => None,
    }
}
