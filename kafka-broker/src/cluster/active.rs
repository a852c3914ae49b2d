//! The active controller: on the quorum's leader, the task that runs the controller's
//! decisions one at a time. Each operation runs against the committed image, its records are
//! proposed as one entry, and its answer goes out once that entry is committed and applied
//! here; then the next operation runs. A timer fences brokers whose session expired. On any
//! other node, and while a new leader is still applying what was committed before its
//! election, operations are refused as NOT_CONTROLLER.

use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::metadata::MetadataRecord;
use tokio::sync::{mpsc, oneshot};

use super::controller::{Controller, ControllerConfig, Outcome};
use super::image::MetadataImage;
use super::quorum::QuorumHandle;
use super::quorum::entry::Payload;
use super::state::MetadataState;
use crate::clock::Clock;
use crate::config::BrokerConfig;

/// How often the controller looks for expired broker sessions.
const TICK: Duration = Duration::from_millis(250);

/// Why an operation was not carried out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NotController {
    /// The leader this node knows of.
    pub leader: Option<u64>,
}

type Decide = Box<dyn FnOnce(&mut Controller, &MetadataImage, i64) -> Decided + Send>;

/// An operation's records and what to do once they are committed (`true`) or not (`false`).
struct Decided {
    records: Vec<MetadataRecord>,
    done: Box<dyn FnOnce(bool) + Send>,
}

/// Hands operations to the active controller task.
#[derive(Clone)]
pub struct ActiveController {
    ops: mpsc::Sender<Decide>,
    quorum: QuorumHandle<MetadataState>,
    clock: Clock,
}

impl std::fmt::Debug for ActiveController {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ActiveController").finish_non_exhaustive()
    }
}

impl ActiveController {
    /// Starts the task on a controller node.
    pub fn start(config: &BrokerConfig, quorum: QuorumHandle<MetadataState>, clock: Clock) -> Self {
        let (tx, rx) = mpsc::channel::<Decide>(1024);
        let task = Task {
            config: config.clone(),
            quorum: quorum.clone(),
            controller: None,
            clock: clock.clone(),
        };
        tokio::spawn(task.run(rx));
        Self {
            ops: tx,
            quorum,
            clock,
        }
    }

    /// The controller's clock (the node's).
    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    pub fn quorum(&self) -> &QuorumHandle<MetadataState> {
        &self.quorum
    }

    /// Runs one operation of the controller (`decide` gets the controller, the committed
    /// image and the time) and returns its response once its records are committed.
    pub async fn run<R: Send + 'static>(
        &self,
        decide: impl FnOnce(&mut Controller, &MetadataImage, i64) -> Outcome<R> + Send + 'static,
    ) -> Result<R, NotController> {
        let not = || NotController {
            leader: self.quorum.current().leader,
        };
        let current = self.quorum.current();
        if current.leader != Some(self.quorum.id()) || !current.leader_ready {
            return Err(not());
        }
        let (tx, rx) = oneshot::channel::<Option<R>>();
        let op: Decide = Box::new(move |c, image, now| {
            let Outcome { records, response } = decide(c, image, now);
            Decided {
                records,
                done: Box::new(move |committed| {
                    let _ = tx.send(committed.then_some(response));
                }),
            }
        });
        self.ops.send(op).await.map_err(|_| not())?;
        match rx.await {
            Ok(Some(r)) => Ok(r),
            _ => Err(not()),
        }
    }
}

struct Task {
    config: BrokerConfig,
    quorum: QuorumHandle<MetadataState>,
    controller: Option<Controller>,
    clock: Clock,
}

impl Task {
    async fn run(mut self, mut ops: mpsc::Receiver<Decide>) {
        let mut state = self.quorum.watch();
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                changed = state.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    self.follow_leadership().await;
                }
                op = ops.recv() => {
                    let Some(op) = op else { return };
                    self.follow_leadership().await;
                    self.run_op(op).await;
                }
                _ = tick.tick() => {
                    self.follow_leadership().await;
                    self.expire_sessions().await;
                }
            }
        }
    }

    fn ready(&self) -> bool {
        let current = self.quorum.current();
        current.leader == Some(self.quorum.id()) && current.leader_ready
    }

    /// Becomes the active controller when this node leads and has applied everything
    /// committed before; stops being it otherwise.
    async fn follow_leadership(&mut self) {
        if !self.ready() {
            if self.controller.take().is_some() {
                tracing::info!(node = self.quorum.id(), "no longer the active controller");
            }
            return;
        }
        if self.controller.is_some() {
            return;
        }
        // A new quorum is named first: the configured cluster.id, or a new random one.
        if self.quorum.current().state.cluster_id.is_none() {
            let id = self
                .config
                .server
                .cluster_id
                .clone()
                .unwrap_or_else(crate::meta_properties::random_id);
            if let Err(e) = self.quorum.propose(Payload::ClusterId(id)).await {
                tracing::warn!(error = %e, "the cluster id was not committed");
                return;
            }
        }
        // A new cluster finalizes its bootstrap feature levels once (Kafka writes them when
        // the first controller formats the log).
        let bootstrap = Controller::bootstrap_features(&self.quorum.current().state.image);
        if !bootstrap.is_empty() {
            if let Err(e) = self.quorum.propose(Payload::Records(bootstrap)).await {
                tracing::warn!(error = %e, "the bootstrap feature levels were not committed");
                return;
            }
        }
        let current = self.quorum.current();
        let Some(cluster_id) = current.state.cluster_id.clone() else {
            return;
        };
        let mut config = ControllerConfig::from_broker(&self.config, cluster_id);
        config.session_timeout_ms = self.config.quorum.broker_session_timeout_ms as i64;
        config.unclean_leader_election = self.config.log.unclean_leader_election_enable;
        self.controller = Some(Controller::new(
            config,
            &current.state.image,
            self.clock.now_ms(),
        ));
        tracing::info!(
            node = self.quorum.id(),
            term = current.term,
            offset = current.offset,
            "this node is the active controller"
        );
    }

    async fn run_op(&mut self, op: Decide) {
        let current = self.quorum.current();
        let Some(controller) = self.controller.as_mut() else {
            // Not the active controller: the caller answers NOT_CONTROLLER.
            return;
        };
        let Decided { records, done } = op(controller, &current.state.image, self.clock.now_ms());
        let committed = self.commit(records).await;
        done(committed);
    }

    async fn expire_sessions(&mut self) {
        let current = self.quorum.current();
        let Some(controller) = self.controller.as_mut() else {
            return;
        };
        let records = controller.tick(&current.state.image, self.clock.now_ms());
        if !records.is_empty() {
            self.commit(records).await;
        }
    }

    /// Commits an operation's records (nothing to do for none). A failure means this node
    /// lost the leadership: the controller's volatile state goes with it.
    async fn commit(&mut self, records: Vec<MetadataRecord>) -> bool {
        if records.is_empty() {
            return true;
        }
        match self.quorum.propose(Payload::Records(records)).await {
            Ok(_) => true,
            Err(e) => {
                tracing::info!(error = %e, "a metadata change was not committed");
                self.controller = None;
                false
            }
        }
    }
}

/// The image a node follows, shared by its tasks.
pub type SharedState = Arc<super::quorum::Applied<MetadataState>>;
