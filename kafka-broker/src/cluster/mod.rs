//! The cluster (KRaft mode, when `process.roles` is set).
//!
//! - [`quorum`]: the controller quorum on TiKV's Raft; its log holds Kafka's metadata records.
//! - [`image`]: the metadata image every node builds from that log; [`state`] adds the
//!   cluster id.
//! - [`controller`]: the active controller's decisions, pure; [`active`] runs them one at a
//!   time on the quorum's leader; [`api`] answers the controller listener's Kafka requests.
//! - [`listener`]: the controller listener (Raft streams, followers of the log, requests).
//! - [`link_security`]: TLS and SASL on the node's own links and the controller listener.
//! - [`follow`]: brokers that are not controllers follow the log from the controllers.
//! - [`forward`]: a broker's requests to the active controller; [`lifecycle`]: its
//!   registration and heartbeats; [`producer_ids`]: its producer ids, in blocks from the
//!   controller. The node layer carries each new image out on its partitions
//!   (`crate::node::publish`).

pub mod active;
pub mod api;
pub mod controller;
pub mod follow;
pub mod forward;
pub mod image;
pub mod lifecycle;
pub mod link_security;
pub mod listener;
pub mod producer_ids;
pub mod quorum;
pub mod state;

use std::sync::Arc;

use tokio::sync::watch;

use crate::clock::Clock;
use crate::config::BrokerConfig;
use crate::error::BrokerError;
use active::{ActiveController, SharedState};
use forward::ControllerClient;
use lifecycle::Standing;
use quorum::entry::SnapshotData;
use quorum::transport::Transport;
use quorum::{QuorumNode, StateMachine};
use state::MetadataState;

/// What a broker of a cluster reads the cluster through.
#[derive(Debug)]
pub struct ClusterLink {
    pub node_id: i32,
    /// The metadata as this node has applied it.
    pub state: watch::Receiver<SharedState>,
    pub client: Arc<ControllerClient>,
    /// The listener whose endpoints clients are given (the one they reach this broker on).
    pub listener_name: String,
    pub standing: watch::Receiver<Standing>,
}

impl ClusterLink {
    pub fn current(&self) -> SharedState {
        self.state.borrow().clone()
    }

    /// Waits until the applied image satisfies `f`, at most `timeout`.
    pub async fn wait_for(
        &self,
        timeout: std::time::Duration,
        mut f: impl FnMut(&MetadataState) -> bool,
    ) -> bool {
        let mut rx = self.state.clone();
        tokio::time::timeout(timeout, rx.wait_for(|s| f(&s.state)))
            .await
            .is_ok_and(|r| r.is_ok())
    }
}

/// The cluster side of a running node.
#[derive(Debug)]
pub struct Runtime {
    pub link: Option<Arc<ClusterLink>>,
    /// Set when the node must stop (it belongs to another cluster).
    pub fatal: watch::Receiver<Option<String>>,
    stop: watch::Sender<bool>,
    leave: watch::Sender<bool>,
    lifecycle: Option<tokio::task::JoinHandle<()>>,
}

impl Runtime {
    /// The broker leaves the cluster: a controlled shutdown (its leaderships move elsewhere)
    /// while the quorum still runs. Clients still being served are sent to the new leaders.
    pub async fn leave(&mut self) {
        let _ = self.leave.send(true);
        if let Some(lifecycle) = self.lifecycle.take() {
            let _ = lifecycle.await;
        }
    }

    /// Stops the quorum voter and the controller listener.
    pub fn stop(self) {
        let _ = self.stop.send(true);
    }

    /// Completes when the node must stop because it cannot be part of this cluster.
    pub async fn failed(&self) -> String {
        let mut rx = self.fatal.clone();
        let why = rx
            .wait_for(Option::is_some)
            .await
            .map(|why| why.clone().unwrap_or_default());
        match why {
            Ok(why) => why,
            Err(_) => std::future::pending().await,
        }
    }
}

/// Completes once `rx` says stop (or its sender is gone).
async fn stopped(mut rx: watch::Receiver<bool>) {
    let _ = rx.wait_for(|s| *s).await;
}

/// Starts the cluster side of a node: on controllers the quorum voter, the active controller
/// and the controller listener; on brokers (`directory_id`: the broker's data directory id)
/// the follower of the log (when not a controller), the registration and heartbeats, and the
/// [`ClusterLink`] the node reads the cluster through.
pub async fn start(
    config: &BrokerConfig,
    clock: Clock,
    directory_id: Option<kafka_protocol::Uuid>,
) -> Result<Runtime, BrokerError> {
    let roles = config
        .quorum
        .roles
        .ok_or_else(|| BrokerError::Config("process.roles is not set".into()))?;
    let (stop_tx, stop_rx) = watch::channel(false);
    let (leave_tx, leave_rx) = watch::channel(false);
    let (fatal_tx, fatal_rx) = watch::channel(None::<String>);
    let voters: Vec<(u64, String)> = config
        .quorum
        .voters
        .iter()
        .map(|v| (v.id as u64, v.addr()))
        .collect();
    let me = config.server.node_id as u64;
    // The node's own links: how it connects to the controllers and to other brokers.
    let links = link_security::LinkSecurity::from_config(config)?;
    let mut active = None;
    let state_rx = if roles.controller {
        let listener_cfg = config.network.controller_listener().ok_or_else(|| {
            BrokerError::Config(
                "controller.listener.names: no controller listener in listeners".into(),
            )
        })?;
        let addr = listener_cfg.addr();
        let listener = tokio::net::TcpListener::bind(&addr).await.map_err(|e| {
            BrokerError::Config(format!(
                "cannot listen on the controller listener {addr}: {e}"
            ))
        })?;
        let ids: Vec<u64> = voters.iter().map(|(id, _)| *id).collect();
        let node = QuorumNode::open(&config.server.data_dir, me, &ids)?;
        let snapshot = node.store().snapshot_ref().data.clone();
        let state = if snapshot.is_empty() {
            MetadataState::default()
        } else {
            MetadataState::restore(SnapshotData::decode(&snapshot)?)
        };
        let (inbox_tx, inbox_rx) = tokio::sync::mpsc::channel(4096);
        let transport = Transport::connect_secured(me, voters.clone(), links.controllers.clone());
        let handle =
            quorum::driver::start(node, state, inbox_rx, transport, stopped(stop_rx.clone()));
        let controller = ActiveController::start(config, handle.clone(), clock.clone());
        let services = listener::Services {
            raft: Some(inbox_tx),
            follow: Some(follow::handler(handle.clone())),
            kafka: api::handler(controller.clone(), Arc::new(config.clone())),
        };
        let security =
            link_security::LinkServer::for_listener(config, &listener_cfg.name)?.map(Arc::new);
        tokio::spawn(listener::serve_secured(
            listener,
            services,
            security,
            stopped(stop_rx.clone()),
        ));
        tracing::info!(node = me, controller_listener = %addr, voters = ?voters, "controller quorum voter started");
        active = Some(controller);
        handle.watch()
    } else {
        follow::follow_secured(
            config.server.node_id,
            voters.clone(),
            MetadataState::default(),
            links.controllers.clone(),
        )
    };
    // The cluster id, once the quorum has one: recorded in meta.properties, where a different
    // one means this node belongs to another cluster.
    {
        let mut rx = state_rx.clone();
        let dir = config.server.data_dir.clone();
        let node_id = config.server.node_id;
        tokio::spawn(async move {
            let Ok(s) = rx.wait_for(|s| s.state.cluster_id.is_some()).await else {
                return;
            };
            let id = s.state.cluster_id.clone().unwrap_or_default();
            drop(s);
            if let Err(e) = crate::meta_properties::record_cluster_id(&dir, node_id, &id) {
                tracing::error!(error = %e, "this node cannot join the cluster");
                let _ = fatal_tx.send(Some(e.to_string()));
            }
        });
    }
    let (link, lifecycle) = match (roles.broker, directory_id) {
        (true, Some(directory_id)) => {
            let client = Arc::new(ControllerClient::new(
                config,
                state_rx.clone(),
                active,
                links.controllers.clone(),
            ));
            let (standing_tx, standing_rx) = watch::channel(Standing::Unregistered);
            let lifecycle = tokio::spawn(lifecycle::run(
                Arc::new(config.clone()),
                client.clone(),
                state_rx.clone(),
                directory_id,
                standing_tx,
                stopped(leave_rx),
            ));
            let listener_name = config
                .network
                .client_listener()
                .map(|l| l.name.clone())
                .unwrap_or_else(|| "PLAINTEXT".into());
            let link = Arc::new(ClusterLink {
                node_id: config.server.node_id,
                state: state_rx.clone(),
                client,
                listener_name,
                standing: standing_rx,
            });
            (Some(link), Some(lifecycle))
        }
        _ => (None, None),
    };
    Ok(Runtime {
        link,
        fatal: fatal_rx,
        stop: stop_tx,
        leave: leave_tx,
        lifecycle,
    })
}
