//! A Kafka-compatible broker: network front, segment log on Kafka's on-disk format,
//! coordinators. Run it with the `kafka-broker` binary or embed it with [`run`]:
//!
//! ```no_run
//! # async fn example() -> Result<(), kafka_broker::BrokerError> {
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let mut config = kafka_broker::BrokerConfig::default();
//! config.server.data_dir = "/tmp/kafka-data".into();
//! kafka_broker::run(listener, config, async { let _ = tokio::signal::ctrl_c().await; }).await
//! # }
//! ```
#![deny(unsafe_code)]

pub mod broker;
pub mod clock;
pub mod cluster;
pub mod config;
mod convert;
pub mod error;
pub mod group;
pub mod handler;
pub mod log;
pub mod meta_properties;
pub mod offsets_topic;
pub mod producer_state;
mod rate_limit;
pub mod replica;
pub mod replication;
pub mod sendfile;
pub mod server;
mod sync;
pub mod topic_config;
pub mod topics;
pub mod txn;
pub mod txn_driver;

/// The partition type's old home; it lives in [`replica`] now.
pub use replica::partition;

use std::future::Future;
use std::sync::Arc;

pub use broker::Broker;
pub use config::BrokerConfig;
pub use error::BrokerError;

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
    // A node of a cluster: the quorum (on controllers), the registration, the image.
    let mut cluster = match broker.config.quorum.roles {
        Some(_) => Some(cluster::start(&broker.config, Some(broker.clone())).await?),
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
    let maintenance = {
        let b = broker.clone();
        let every = std::time::Duration::from_millis(
            b.config
                .log
                .retention_check_interval_ms
                .min(b.config.log.flush_interval_ms.unwrap_or(u64::MAX))
                .min(b.config.log.producer_id_expiration_check_interval_ms)
                .max(10),
        );
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            tick.tick().await;
            loop {
                tick.tick().await;
                let b = b.clone();
                // File work runs off the async threads.
                let _ = tokio::task::spawn_blocking(move || b.maintain()).await;
            }
        })
    };
    // Offline partitions are retried on their own timer: the maintenance interval can be
    // minutes.
    let offline_retry = {
        let b = broker.clone();
        let every = std::time::Duration::from_millis(b.config.log.offline_retry_ms.max(10));
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            tick.tick().await;
            loop {
                tick.tick().await;
                let b = b.clone();
                let _ = tokio::task::spawn_blocking(move || {
                    let back = b.retry_offline();
                    if b.cluster().is_some() {
                        for tp in back {
                            cluster::publish::retake(&b, &tp.topic, tp.partition);
                        }
                    }
                })
                .await;
            }
        })
    };
    // The log cleaner: a round every `log.cleaner.backoff.ms`; at shutdown the round under
    // way finishes before the logs are closed.
    let (stop_cleaner, mut cleaner_stopped) = tokio::sync::watch::channel(false);
    let cleaner = broker.config.log.cleaner_enable.then(|| {
        let b = broker.clone();
        let every = std::time::Duration::from_millis(b.config.log.cleaner_backoff_ms.max(10));
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = tokio::time::sleep(every) => {}
                    _ = cleaner_stopped.changed() => return,
                }
                let b = b.clone();
                let _ = tokio::task::spawn_blocking(move || b.clean_logs()).await;
            }
        })
    });
    // Group timers (sessions, rebalances, offset expiry) stop before the connections drain,
    // so waiting JoinGroups are answered NOT_COORDINATOR and the drain finishes.
    let (stop_timers, timers_stopped) = tokio::sync::oneshot::channel::<()>();
    let group_timers = {
        let b = broker.clone();
        tokio::spawn(async move {
            group::run_timers(&b.groups, async {
                let _ = timers_stopped.await;
            })
            .await;
        })
    };
    // The transaction coordinator's appends, markers and timers, until the same stop.
    let (stop_txn, txn_stopped) = tokio::sync::oneshot::channel::<()>();
    let txn_driver = tokio::spawn(txn_driver::run(broker.clone(), async {
        let _ = txn_stopped.await;
    }));
    let (failed_tx, failed_rx) = tokio::sync::oneshot::channel::<String>();
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
        if let Some(rt) = cluster.as_mut() {
            rt.leave().await;
        }
        let _ = stop_timers.send(());
        let _ = stop_txn.send(());
    };
    // The other broker listeners of `listeners` (the client listener is `listener`; the
    // controller listener belongs to the quorum).
    let mut listeners = vec![(listener, broker.client_listener_name())];
    for l in &broker.config.network.listeners {
        if l.name == listeners[0].1 || broker.config.network.is_controller_listener(&l.name) {
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
        listeners.push((bound, l.name.clone()));
    }
    let result = server::serve_listeners(listeners, broker, shutdown).await;
    if let Some(rt) = cluster {
        rt.stop();
    }
    maintenance.abort();
    offline_retry.abort();
    let _ = stop_cleaner.send(true);
    if let Some(cleaner) = cleaner {
        let _ = cleaner.await;
    }
    let _ = group_timers.await;
    let _ = txn_driver.await;
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
    let rt = cluster::start(&config, None).await?;
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
