//! A Kafka-compatible broker: network front, segment log on Kafka's on-disk format,
//! coordinators. Run it with the `kafka-broker` binary or embed it with [`run`]:
//!
//! ```no_run
//! # async fn example() -> Result<(), kafka_broker::BrokerError> {
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let mut config = kafka_broker::BrokerConfig::default();
//! config.data_dir = "/tmp/kafka-data".into();
//! kafka_broker::run(listener, config, async { let _ = tokio::signal::ctrl_c().await; }).await
//! # }
//! ```
#![deny(unsafe_code)]

pub mod broker;
pub mod cluster;
pub mod config;
mod convert;
pub mod error;
pub mod group;
pub mod handler;
pub mod log;
pub mod offsets_topic;
pub mod producer_state;
mod rate_limit;
pub mod replica;
pub mod sendfile;
pub mod server;
pub mod topic_config;
pub mod topics;

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
    config.listen = local.to_string();
    let broker = Arc::new(Broker::open(config)?);
    tracing::info!(
        listen = %local,
        advertised = broker.config.advertised_addr(),
        data = %broker.config.data_dir.display(),
        cluster_id = %broker.cluster_id,
        "kafka-broker listening on {local}, data in {}",
        broker.config.data_dir.display()
    );
    let maintenance = {
        let b = broker.clone();
        let every = std::time::Duration::from_millis(
            b.config
                .retention_check_interval_ms
                .min(b.config.flush_interval_ms.unwrap_or(u64::MAX))
                .min(b.config.producer_id_expiration_check_interval_ms)
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
        let every = std::time::Duration::from_millis(b.config.log_offline_retry_ms.max(10));
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            tick.tick().await;
            loop {
                tick.tick().await;
                let b = b.clone();
                let _ = tokio::task::spawn_blocking(move || b.retry_offline()).await;
            }
        })
    };
    // The log cleaner: a round every `log.cleaner.backoff.ms`; at shutdown the round under
    // way finishes before the logs are closed.
    let (stop_cleaner, mut cleaner_stopped) = tokio::sync::watch::channel(false);
    let cleaner = broker.config.cleaner_enable.then(|| {
        let b = broker.clone();
        let every = std::time::Duration::from_millis(b.config.cleaner_backoff_ms.max(10));
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
    let shutdown = async move {
        shutdown.await;
        let _ = stop_timers.send(());
    };
    let result = server::serve(listener, broker, shutdown).await;
    maintenance.abort();
    offline_retry.abort();
    let _ = stop_cleaner.send(true);
    if let Some(cleaner) = cleaner {
        let _ = cleaner.await;
    }
    let _ = group_timers.await;
    result
}
