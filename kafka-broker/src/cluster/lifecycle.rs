//! A broker's life in the cluster, as Kafka's BrokerLifecycleManager: once the node knows the
//! cluster id, it registers with the active controller (BrokerRegistration: its advertised
//! listeners, rack, a new incarnation id per process), then heartbeats every
//! `broker.heartbeat.interval.ms` with the metadata offset it has applied; the controller
//! unfences it once that offset reaches its registration. A stale epoch (the controller fenced
//! it and it registered anew, or another controller lost its registration) means registering
//! again. At shutdown it asks for a controlled shutdown (its leaderships move elsewhere) and
//! waits up to a few seconds for the controller's go.

use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::broker_registration_request::{Feature, Listener};
use kafka_protocol::messages::{
    BrokerHeartbeatRequest, BrokerRegistrationRequest, RequestBody, ResponseBody,
};
use tokio::sync::watch;

use super::active::SharedState;
use super::forward::ControllerClient;
use crate::config::BrokerConfig;

/// Versions sent (our controller takes every version; Kafka's too).
const REGISTRATION_VERSION: i16 = 4;
const HEARTBEAT_VERSION: i16 = 1;

/// What the broker's registration looks like now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    Unregistered,
    Fenced { epoch: i64 },
    Active { epoch: i64 },
}

/// Runs the registration and heartbeats until `shutdown` completes, then the controlled
/// shutdown. `standing` reports where the broker stands.
pub async fn run(
    config: Arc<BrokerConfig>,
    client: Arc<ControllerClient>,
    mut state: watch::Receiver<SharedState>,
    directory_id: kafka_protocol::Uuid,
    standing: watch::Sender<Standing>,
    shutdown: impl std::future::Future<Output = ()>,
) {
    tokio::pin!(shutdown);
    let incarnation = crate::topics::random_uuid();
    let interval = Duration::from_millis(config.quorum.broker_heartbeat_interval_ms.max(50));
    let mut epoch: Option<i64> = None;
    loop {
        // The cluster id comes with the first entry of the log.
        let cluster_id = loop {
            if let Some(id) = state.borrow().state.cluster_id.clone() {
                break id;
            }
            tokio::select! {
                () = &mut shutdown => return,
                r = state.changed() => if r.is_err() { return },
            }
        };
        let Some(e) = epoch else {
            let req = registration(&config, &cluster_id, incarnation, directory_id);
            match client
                .send(
                    RequestBody::BrokerRegistration(Box::new(req)),
                    REGISTRATION_VERSION,
                    interval * 5,
                )
                .await
            {
                Ok(ResponseBody::BrokerRegistration(r)) if r.error_code == 0 => {
                    tracing::info!(
                        broker_epoch = r.broker_epoch,
                        "registered with the controller"
                    );
                    epoch = Some(r.broker_epoch);
                    standing.send_replace(Standing::Fenced {
                        epoch: r.broker_epoch,
                    });
                    continue;
                }
                Ok(ResponseBody::BrokerRegistration(r)) => {
                    let code = kafka_protocol::error_code::ErrorCode::from(r.error_code);
                    tracing::warn!(error = ?code, "the controller refused the registration");
                }
                other => tracing::debug!(answer = ?other.err(), "registration not answered"),
            }
            tokio::select! {
                () = &mut shutdown => return,
                () = tokio::time::sleep(interval) => {}
            }
            continue;
        };
        tokio::select! {
            () = &mut shutdown => {
                controlled_shutdown(&config, &client, &state, e).await;
                return;
            }
            () = tokio::time::sleep(interval) => {}
        }
        let offset = state.borrow().offset as i64;
        let req = BrokerHeartbeatRequest {
            broker_id: config.server.node_id,
            broker_epoch: e,
            current_metadata_offset: offset,
            want_fence: false,
            want_shut_down: false,
            ..Default::default()
        };
        match client
            .send(
                RequestBody::BrokerHeartbeat(req),
                HEARTBEAT_VERSION,
                interval * 2,
            )
            .await
        {
            Ok(ResponseBody::BrokerHeartbeat(r)) if r.error_code == 0 => {
                let now = if r.is_fenced {
                    Standing::Fenced { epoch: e }
                } else {
                    Standing::Active { epoch: e }
                };
                if *standing.borrow() != now {
                    tracing::info!(standing = ?now, metadata_offset = offset, "broker standing changed");
                    standing.send_replace(now);
                }
            }
            Ok(ResponseBody::BrokerHeartbeat(r))
                if r.error_code == ErrorCode::STALE_BROKER_EPOCH.code()
                    || r.error_code == ErrorCode::BROKER_ID_NOT_REGISTERED.code() =>
            {
                tracing::warn!(
                    broker_epoch = e,
                    "the controller no longer knows this registration; registering again"
                );
                epoch = None;
                standing.send_replace(Standing::Unregistered);
            }
            other => tracing::debug!(answer = ?other, "heartbeat not answered"),
        }
    }
}

fn registration(
    config: &BrokerConfig,
    cluster_id: &str,
    incarnation: kafka_protocol::Uuid,
    directory_id: kafka_protocol::Uuid,
) -> BrokerRegistrationRequest {
    let listeners = config
        .network
        .effective_advertised_listeners()
        .iter()
        .map(|l| Listener {
            name: KStr::from(l.name.clone()),
            host: KStr::from(l.host.clone()),
            port: l.port,
            // Only PLAINTEXT listeners exist for now (config validation refuses others).
            security_protocol: 0,
            ..Default::default()
        })
        .collect();
    BrokerRegistrationRequest {
        broker_id: config.server.node_id,
        cluster_id: KStr::from(cluster_id.to_owned()),
        incarnation_id: incarnation,
        listeners,
        features: crate::features::KNOWN
            .iter()
            .map(|k| Feature {
                name: KStr::from_static(k.name),
                min_supported_version: k.min,
                max_supported_version: k.max,
                ..Default::default()
            })
            .collect(),
        rack: config.network.rack.clone().map(KStr::from),
        log_dirs: vec![directory_id],
        ..Default::default()
    }
}

/// Asks the controller to move this broker's leaderships away, until it says the broker may
/// stop or 5 s pass.
async fn controlled_shutdown(
    config: &BrokerConfig,
    client: &ControllerClient,
    state: &watch::Receiver<SharedState>,
    epoch: i64,
) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while tokio::time::Instant::now() < deadline {
        let req = BrokerHeartbeatRequest {
            broker_id: config.server.node_id,
            broker_epoch: epoch,
            current_metadata_offset: state.borrow().offset as i64,
            want_fence: false,
            want_shut_down: true,
            ..Default::default()
        };
        match client
            .send(
                RequestBody::BrokerHeartbeat(req),
                HEARTBEAT_VERSION,
                Duration::from_secs(2),
            )
            .await
        {
            Ok(ResponseBody::BrokerHeartbeat(r)) if r.error_code == 0 && r.should_shut_down => {
                tracing::info!(
                    "controlled shutdown: the controller moved this broker's leaderships"
                );
                return;
            }
            Ok(ResponseBody::BrokerHeartbeat(r)) if r.error_code != 0 => return,
            _ => {}
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tracing::warn!("controlled shutdown: the controller did not answer in 5 s; stopping anyway");
}
