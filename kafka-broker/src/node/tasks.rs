//! The node's background tasks: the periodic upkeep of the partition layer, the coordinators'
//! timers and markers, and the wiring of a cluster runtime's link into the node. Started and
//! stopped by [`crate::run`], which states the shutdown order once.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::Broker;
use crate::cluster;
use crate::error::BrokerError;

/// Starts the cluster side of a broker node and wires its link into the node: the link
/// itself, ISR changes to the controller, producer ids from it, and the metadata images
/// carried out on the partitions.
pub(crate) async fn join_cluster(broker: &Arc<Broker>) -> Result<cluster::Runtime, BrokerError> {
    let rt = cluster::start(
        &broker.config,
        broker.clock.clone(),
        Some(broker.directory_id),
    )
    .await?;
    if let Some(link) = rt.link.clone() {
        broker.set_cluster(Arc::clone(&link));
        broker
            .replicas
            .set_isr_sink(crate::replication::IsrManager::start(
                Arc::clone(&link),
                broker.clock.clone(),
            ));
        broker
            .producer_ids
            .start(Arc::clone(&link), broker.config.server.node_id);
        tokio::spawn(super::publish::publish_images(
            Arc::clone(broker),
            broker.config.server.node_id,
            link.state.clone(),
            link.standing.clone(),
        ));
    }
    Ok(rt)
}

/// The group coordinator's timers and the transaction coordinator's driver (timers,
/// markers), until `stopped` says stop.
pub(crate) fn start_coordinators(
    broker: &Arc<Broker>,
    stopped: watch::Receiver<bool>,
) -> Vec<JoinHandle<()>> {
    let until = |mut rx: watch::Receiver<bool>| async move {
        let _ = rx.wait_for(|s| *s).await;
    };
    let groups = {
        let b = Arc::clone(broker);
        let stop = until(stopped.clone());
        tokio::spawn(async move { crate::group::run_timers(&b.groups, stop).await })
    };
    let txn = tokio::spawn(super::markers::run(Arc::clone(broker), until(stopped)));
    vec![groups, txn]
}

/// The periodic tasks of a node (see the module docs).
pub(crate) struct Periodic {
    maintenance: JoinHandle<()>,
    offline_retry: JoinHandle<()>,
    isr_shrink: Option<JoinHandle<()>>,
    cleaner: Option<JoinHandle<()>>,
    stop_cleaner: watch::Sender<bool>,
}

impl Periodic {
    pub(crate) fn start(broker: &Arc<Broker>) -> Self {
        let config = &broker.config;
        let maintenance_every = config
            .log
            .retention_check_interval_ms
            .min(config.log.flush_interval_ms.unwrap_or(u64::MAX))
            .min(config.log.producer_id_expiration_check_interval_ms)
            .max(10);
        // File work runs off the async threads.
        let maintenance = every(broker, maintenance_every, |b| b.replicas.maintain());
        // Offline partitions are retried on their own timer: the maintenance interval can be
        // minutes.
        let offline_retry = every(broker, config.log.offline_retry_ms.max(10), |b| {
            let back = b.retry_offline();
            if b.is_clustered() {
                for tp in back {
                    super::publish::retake(b, &tp.topic, tp.partition);
                }
            }
        });
        let isr_shrink = config.quorum.roles.map(|_| {
            let lag = config.replication.lag_time_max_ms;
            every(broker, (lag as u64 / 2).max(1), move |b| {
                b.replicas.shrink_isrs(lag)
            })
        });
        // The log cleaner: a round every `log.cleaner.backoff.ms`; at shutdown the round under
        // way finishes before the logs are closed.
        let (stop_cleaner, mut cleaner_stopped) = watch::channel(false);
        let cleaner = config.log.cleaner_enable.then(|| {
            let b = Arc::clone(broker);
            let pause = Duration::from_millis(config.log.cleaner_backoff_ms.max(10));
            tokio::spawn(async move {
                loop {
                    tokio::select! {
                        () = tokio::time::sleep(pause) => {}
                        _ = cleaner_stopped.changed() => return,
                    }
                    let b = Arc::clone(&b);
                    let _ = tokio::task::spawn_blocking(move || b.replicas.clean()).await;
                }
            })
        });
        Self {
            maintenance,
            offline_retry,
            isr_shrink,
            cleaner,
            stop_cleaner,
        }
    }

    pub(crate) async fn stop(self) {
        self.maintenance.abort();
        self.offline_retry.abort();
        if let Some(t) = self.isr_shrink {
            t.abort();
        }
        let _ = self.stop_cleaner.send(true);
        if let Some(cleaner) = self.cleaner {
            let _ = cleaner.await;
        }
    }
}

/// Runs `work` on the node every `ms` milliseconds (the first time after one interval), off
/// the async threads.
fn every(
    broker: &Arc<Broker>,
    ms: u64,
    work: impl Fn(&Broker) + Send + Sync + 'static,
) -> JoinHandle<()> {
    let b = Arc::clone(broker);
    let work = Arc::new(work);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_millis(ms));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            tick.tick().await;
            let (b, work) = (Arc::clone(&b), Arc::clone(&work));
            let _ = tokio::task::spawn_blocking(move || work(&b)).await;
        }
    })
}
