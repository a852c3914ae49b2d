//! A node's life: start, its background tasks, and one shutdown whose order is stated here
//! once.
//!
//! Start: the configuration is checked; the node is opened ([`Broker::open`]: the data
//! directory's identity, topics, logs recovered, the coordinators' partitions loaded); on a
//! node of a cluster the cluster runtime starts (the quorum voter on controllers, the
//! registration and heartbeats) and its link is wired in: leaders' ISR changes go to the
//! controller, producer ids come from it, and every new metadata image is carried out on the
//! partitions ([`crate::node::publish`]); then the listeners are bound.
//!
//! Background tasks ([`crate::node::tasks`]):
//! - maintenance (retention, due flushes, idle producers' expiry, the high-watermark
//!   checkpoint), every `log.retention.check.interval.ms` or sooner when a flush interval or
//!   `producer.id.expiration.check.interval.ms` asks for it;
//! - offline partitions retried every `log.offline.retry.ms`;
//! - the log cleaner, a round every `log.cleaner.backoff.ms`;
//! - in a cluster, lagging followers out of the ISR every half `replica.lag.time.max.ms`;
//! - the group coordinator's timers, and the transaction coordinator's timers and markers.
//!
//! Shutdown, in this order:
//! 1. in a cluster, the broker leaves (a controlled shutdown: its leaderships move elsewhere
//!    while the quorum still runs, and clients still served are sent to the new leaders);
//! 2. the coordinators' timers and the markers driver stop (requests still waiting are
//!    answered NOT_COORDINATOR, so connections can finish);
//! 3. the server stops accepting, stops the replica fetchers, lets every connection finish
//!    the requests it has read, and closes the node (high-watermark checkpoint, producer
//!    snapshots, logs flushed and marked clean) (see [`crate::server`]);
//! 4. the cluster runtime stops (quorum voter, controller listener);
//! 5. the periodic tasks end; the cleaner finishes the round under way first.

use std::future::Future;
use std::sync::Arc;

use tokio::sync::{oneshot, watch};

use crate::cluster;
use crate::config::BrokerConfig;
use crate::error::BrokerError;
use crate::node::Broker;
use crate::node::tasks::{Periodic, join_cluster, start_coordinators};

/// Runs a broker on `listener` until `shutdown` completes. The advertised address defaults to
/// the listener's real address (so port 0 works in tests).
pub async fn run(
    listener: tokio::net::TcpListener,
    mut config: BrokerConfig,
    shutdown: impl Future<Output = ()>,
) -> Result<(), BrokerError> {
    let local = listener.local_addr()?;
    config.network.set_client_listener(&local.to_string())?;
    config.validate()?;
    let broker = Arc::new(Broker::open(config)?);
    let mut cluster = match broker.config.quorum.roles {
        Some(_) => Some(join_cluster(&broker).await?),
        None => None,
    };
    tracing::info!(
        listen = %local,
        advertised = broker.config.network.advertised_addr(),
        data = %broker.config.server.data_dir.display(),
        cluster_id = %broker.cluster_id,
        "kafka-broker listening on {local}, data in {}",
        broker.config.server.data_dir.display()
    );
    let periodic = Periodic::start(&broker);
    let (stop_coordinators, coordinators_stopped) = watch::channel(false);
    let coordinators = start_coordinators(&broker, coordinators_stopped);
    let (failed_tx, failed_rx) = oneshot::channel::<String>();
    let shutdown = async {
        match cluster.as_ref() {
            Some(rt) => {
                tokio::select! {
                    () = shutdown => {}
                    why = rt.failed() => { let _ = failed_tx.send(why); }
                }
            }
            None => shutdown.await,
        }
        // 1. Leave the cluster; 2. stop the coordinators' timers and markers.
        if let Some(rt) = cluster.as_mut() {
            rt.leave().await;
        }
        let _ = stop_coordinators.send(true);
    };
    let listeners = bind_listeners(&broker, listener).await?;
    // 3. The server's part (see the module docs).
    let result = crate::server::serve_listeners(listeners, Arc::clone(&broker), shutdown).await;
    // 4. The cluster runtime.
    if let Some(rt) = cluster {
        rt.stop();
    }
    // 5. The periodic tasks.
    periodic.stop().await;
    for task in coordinators {
        let _ = task.await;
    }
    if let Ok(why) = failed_rx.await {
        return Err(BrokerError::Config(why));
    }
    result
}

/// Runs a node with only the controller role (`process.roles=controller`): the quorum voter,
/// the active controller when it leads, and the controller listener; no client listener.
pub async fn run_controller(
    config: BrokerConfig,
    shutdown: impl Future<Output = ()>,
) -> Result<(), BrokerError> {
    config.validate()?;
    std::fs::create_dir_all(&config.server.data_dir).map_err(|e| {
        BrokerError::Config(format!(
            "data directory {}: {e}",
            config.server.data_dir.display()
        ))
    })?;
    crate::meta_properties::open(
        &config.server.data_dir,
        config.server.node_id,
        config.server.cluster_id.as_deref(),
        config.quorum.roles.is_some(),
    )?;
    let rt = cluster::start(&config, crate::clock::Clock::system(), None).await?;
    let failed = tokio::select! {
        () = shutdown => None,
        why = rt.failed() => Some(why),
    };
    rt.stop();
    match failed {
        Some(why) => Err(BrokerError::Config(why)),
        None => Ok(()),
    }
}

/// The broker listeners: the client listener `listener` and the others of `listeners` (the
/// controller listener belongs to the quorum), each with its name and, on SSL and SASL_SSL
/// listeners, its TLS configuration.
async fn bind_listeners(
    broker: &Broker,
    listener: tokio::net::TcpListener,
) -> Result<Vec<crate::server::Listener>, BrokerError> {
    let client = broker.client_listener_name();
    let mut listeners = vec![secure(broker, listener, client.clone()).await?];
    for l in &broker.config.network.listeners {
        if l.name == client || broker.config.network.is_controller_listener(&l.name) {
            continue;
        }
        let bound = tokio::net::TcpListener::bind(l.addr()).await.map_err(|e| {
            BrokerError::Config(format!(
                "listeners: cannot listen on {} ({}): {e}",
                l.addr(),
                l.name
            ))
        })?;
        tracing::info!(listener = %l.name, addr = %l.addr(), "also listening on {}", l.addr());
        listeners.push(secure(broker, bound, l.name.clone()).await?);
    }
    Ok(listeners)
}

/// A bound listener with what its security protocol needs.
async fn secure(
    broker: &Broker,
    socket: tokio::net::TcpListener,
    name: String,
) -> Result<crate::server::Listener, BrokerError> {
    let protocol = broker.config.security_protocol(&name).unwrap_or_default();
    let tls = if protocol.tls() {
        let settings = broker.config.security.tls_settings(&name)?;
        let rules = broker
            .config
            .security
            .listener_value(&name, "ssl.principal.mapping.rules");
        let tls = crate::server::tls::TlsListener::new(&name, settings, rules)?;
        tracing::info!(listener = %name, %protocol, "TLS listener");
        Some(Arc::new(tls))
    } else {
        None
    };
    let sasl = if protocol.sasl() {
        let sasl = crate::server::sasl::SaslListener::new(&broker.config, &name)?;
        tracing::info!(listener = %name, %protocol, ?sasl, "SASL listener");
        sasl.start().await;
        Some(Arc::new(sasl))
    } else {
        None
    };
    Ok(crate::server::Listener {
        socket,
        name,
        tls,
        sasl,
    })
}
