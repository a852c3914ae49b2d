//! The task that runs a voter: ticks every 100 ms, takes peers' messages and proposals, sends
//! what the voter produces through the [`Transport`], applies committed entries to the state
//! machine and publishes each new state on a watch channel. Proposals resolve once their entry
//! is committed and applied here (so a caller that reads the state next sees its change).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use raft::eraftpb::{Entry, Message};
use tokio::sync::{mpsc, oneshot, watch};

use super::entry::{Payload, SnapshotData};
use super::node::{QuorumNode, QuorumStatus};
use super::transport::Transport;
use crate::error::BrokerError;

/// The Raft clock.
pub const TICK: Duration = Duration::from_millis(100);
/// Entries applied after the last snapshot before a new one is taken.
const SNAPSHOT_EVERY: u64 = 1_000;

/// What the quorum's log is applied to: the metadata image (and in tests anything else).
pub trait StateMachine: Clone + Send + Sync + 'static {
    /// Applies one committed entry at `offset`. An entry that does not apply is logged and
    /// skipped by the implementation (every voter skips it alike).
    fn apply(&mut self, offset: u64, payload: Payload);
    /// The state as a snapshot.
    fn snapshot(&self, offset: u64) -> SnapshotData;
    /// The state a snapshot holds.
    fn restore(data: SnapshotData) -> Self;
}

/// The state as applied up to `offset`, with what this node knows of the quorum.
#[derive(Debug, Clone)]
pub struct Applied<S> {
    pub state: S,
    pub offset: u64,
    pub leader: Option<u64>,
    pub term: u64,
    /// True on the leader once everything committed before its election is applied (its
    /// state is the latest).
    pub leader_ready: bool,
}

/// Why a proposal did not commit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProposeError {
    #[error("this controller is not the active controller (leader: {leader:?})")]
    NotLeader { leader: Option<u64> },
    #[error("the quorum stopped")]
    Stopped,
}

/// Committed entries (or the snapshot to start from) for a broker following the log.
#[derive(Debug, Clone)]
pub enum Fetched {
    /// (index, data) of committed entries from the requested one on (data empty for entries
    /// without records).
    Entries(Vec<(u64, Bytes)>),
    /// The requested offset is compacted away: start from this snapshot.
    Snapshot(Bytes),
}

enum Cmd {
    Propose(Payload, oneshot::Sender<Result<u64, ProposeError>>),
    Status(oneshot::Sender<QuorumStatus>),
    Fetch(u64, usize, oneshot::Sender<Fetched>),
}

/// A handle on the running voter.
#[derive(Debug, Clone)]
pub struct QuorumHandle<S> {
    cmd: mpsc::Sender<Cmd>,
    state: watch::Receiver<Arc<Applied<S>>>,
    id: u64,
}

impl std::fmt::Debug for Cmd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Propose(..) => "Propose",
            Self::Status(_) => "Status",
            Self::Fetch(..) => "Fetch",
        })
    }
}

impl<S: StateMachine> QuorumHandle<S> {
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Proposes an entry; resolves with its offset once committed and applied here.
    pub async fn propose(&self, payload: Payload) -> Result<u64, ProposeError> {
        let (tx, rx) = oneshot::channel();
        self.cmd
            .send(Cmd::Propose(payload, tx))
            .await
            .map_err(|_| ProposeError::Stopped)?;
        rx.await.map_err(|_| ProposeError::Stopped)?
    }

    pub async fn status(&self) -> Option<QuorumStatus> {
        let (tx, rx) = oneshot::channel();
        self.cmd.send(Cmd::Status(tx)).await.ok()?;
        rx.await.ok()
    }

    /// Committed entries from `from` on, at most about `max_bytes`.
    pub async fn fetch(&self, from: u64, max_bytes: usize) -> Option<Fetched> {
        let (tx, rx) = oneshot::channel();
        self.cmd.send(Cmd::Fetch(from, max_bytes, tx)).await.ok()?;
        rx.await.ok()
    }

    /// The applied state, updated after every commit.
    pub fn watch(&self) -> watch::Receiver<Arc<Applied<S>>> {
        self.state.clone()
    }

    pub fn current(&self) -> Arc<Applied<S>> {
        self.state.borrow().clone()
    }
}

/// Starts voter `node` with `state` (restored from the node's snapshot by the caller), taking
/// peers' messages from `inbox`. Runs until `stop` completes, every handle is dropped, or the
/// disk fails (then it logs why and stops: a voter that cannot persist must not vote).
pub fn start<S: StateMachine>(
    node: QuorumNode,
    state: S,
    inbox: mpsc::Receiver<Message>,
    transport: Transport,
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> QuorumHandle<S> {
    let id = node.id();
    let offset = node.store().snapshot_ref().get_metadata().index;
    let (state_tx, state_rx) = watch::channel(Arc::new(Applied {
        state: state.clone(),
        offset,
        leader: None,
        term: node.term(),
        leader_ready: false,
    }));
    let (cmd_tx, cmd_rx) = mpsc::channel(1024);
    let driver = Driver {
        node,
        state,
        offset,
        snapshot_at: offset,
        pending: HashMap::new(),
        // Random: an entry proposed before a restart must not resolve a new proposal.
        next_proposal: u64::from_be_bytes(
            crate::topics::random_uuid().0[..8]
                .try_into()
                .unwrap_or([0; 8]),
        ),
        ready_from: None,
        published: (None, 0, false),
        transport,
        state_tx,
    };
    tokio::spawn(driver.run(cmd_rx, inbox, stop));
    QuorumHandle {
        cmd: cmd_tx,
        state: state_rx,
        id,
    }
}

struct Driver<S> {
    node: QuorumNode,
    state: S,
    offset: u64,
    snapshot_at: u64,
    /// Proposals of this node waiting for their entry, by the id in the entry's context.
    pending: HashMap<u64, oneshot::Sender<Result<u64, ProposeError>>>,
    next_proposal: u64,
    /// On a new leader: the commit index to reach before its state is the latest.
    ready_from: Option<(u64, u64)>,
    published: (Option<u64>, u64, bool),
    transport: Transport,
    state_tx: watch::Sender<Arc<Applied<S>>>,
}

impl<S: StateMachine> Driver<S> {
    async fn run(
        mut self,
        mut cmds: mpsc::Receiver<Cmd>,
        mut inbox: mpsc::Receiver<Message>,
        stop: impl std::future::Future<Output = ()>,
    ) {
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tokio::pin!(stop);
        loop {
            tokio::select! {
                () = &mut stop => return,
                _ = tick.tick() => self.node.tick(),
                m = inbox.recv() => match m {
                    Some(m) => {
                        self.node.step(m);
                        // Take whatever else arrived before writing once for all of it.
                        while let Ok(m) = inbox.try_recv() {
                            self.node.step(m);
                        }
                    }
                    None => return,
                },
                c = cmds.recv() => match c {
                    Some(c) => self.command(c),
                    None => return,
                },
            }
            if let Err(e) = self.advance() {
                tracing::error!(error = %e, "the controller quorum stops: its log cannot be written");
                for (_, w) in self.pending.drain() {
                    let _ = w.send(Err(ProposeError::Stopped));
                }
                return;
            }
        }
    }

    fn command(&mut self, c: Cmd) {
        match c {
            Cmd::Propose(payload, reply) => {
                let data = match payload.encode() {
                    Ok(d) => d,
                    Err(e) => {
                        tracing::error!(error = %e, "a metadata change could not be encoded");
                        let _ = reply.send(Err(ProposeError::Stopped));
                        return;
                    }
                };
                let id = self.next_proposal;
                self.next_proposal = self.next_proposal.wrapping_add(1);
                let mut context = self.node.id().to_be_bytes().to_vec();
                context.extend_from_slice(&id.to_be_bytes());
                if self.node.propose(context, data) {
                    self.pending.insert(id, reply);
                } else {
                    let _ = reply.send(Err(ProposeError::NotLeader {
                        leader: self.node.leader(),
                    }));
                }
            }
            Cmd::Status(reply) => {
                let _ = reply.send(self.node.status());
            }
            Cmd::Fetch(from, max_bytes, reply) => {
                let _ = reply.send(self.fetch(from, max_bytes));
            }
        }
    }

    fn fetch(&self, from: u64, max_bytes: usize) -> Fetched {
        let store = self.node.store();
        let snap = store.snapshot_ref();
        let first = snap.get_metadata().index + 1;
        if from < first && snap.get_metadata().index > 0 {
            return Fetched::Snapshot(snap.data.clone());
        }
        // Committed and applied here: what a follower of the log may take.
        let mut out = Vec::new();
        let mut size = 0;
        for e in store.entries_between(from.max(1), self.offset) {
            size += e.data.len() + 16;
            out.push((e.index, e.data.clone()));
            if size >= max_bytes {
                break;
            }
        }
        Fetched::Entries(out)
    }

    fn advance(&mut self) -> Result<(), BrokerError> {
        let was_leader = self.node.is_leader();
        let out = self.node.advance()?;
        self.transport.send(out.messages);
        let mut changed = false;
        if let Some(snap) = out.snapshot {
            match SnapshotData::decode(&snap.data) {
                Ok(data) => {
                    self.offset = snap.get_metadata().index;
                    self.snapshot_at = self.offset;
                    self.state = S::restore(data);
                    changed = true;
                }
                Err(e) => {
                    return Err(BrokerError::Storage(format!(
                        "a snapshot from the leader does not read: {e}"
                    )));
                }
            }
        }
        // Proposals resolve after the state with their entry is published.
        let mut resolved = Vec::new();
        for e in out.committed {
            let index = e.index;
            if let Some(w) = self.apply(e) {
                resolved.push((w, index));
            }
            changed = true;
        }
        let leader = self.node.leader();
        let term = self.node.term();
        if self.node.is_leader() {
            if !was_leader || self.ready_from.is_none_or(|(t, _)| t != term) {
                // Everything committed before the election is applied once the applied offset
                // reaches the leader's last index at election (its empty entry of this term).
                self.ready_from = Some((term, self.node.status().last_index));
            }
        } else {
            self.ready_from = None;
            if !self.pending.is_empty() {
                for (_, w) in self.pending.drain() {
                    let _ = w.send(Err(ProposeError::NotLeader { leader }));
                }
            }
        }
        let leader_ready = self
            .ready_from
            .is_some_and(|(t, at)| t == term && self.offset >= at);
        if changed || self.published != (leader, term, leader_ready) {
            self.published = (leader, term, leader_ready);
            self.state_tx.send_replace(Arc::new(Applied {
                state: self.state.clone(),
                offset: self.offset,
                leader,
                term,
                leader_ready,
            }));
        }
        for (w, index) in resolved {
            let _ = w.send(Ok(index));
        }
        if self.offset >= self.snapshot_at + SNAPSHOT_EVERY {
            let data = self.state.snapshot(self.offset).encode()?;
            self.node.compact(self.offset, data)?;
            self.snapshot_at = self.offset;
            tracing::debug!(
                offset = self.offset,
                "metadata log compacted into a snapshot"
            );
        }
        Ok(())
    }

    /// Applies a committed entry; returns the waiter of this node's proposal it was.
    fn apply(&mut self, e: Entry) -> Option<oneshot::Sender<Result<u64, ProposeError>>> {
        self.offset = e.index;
        if e.data.is_empty() {
            // A new leader's empty entry: nothing to apply.
            return None;
        }
        match Payload::decode(&e.data) {
            Ok(payload) => self.state.apply(e.index, payload),
            Err(err) => {
                tracing::error!(offset = e.index, error = %err, "a committed metadata entry does not read; skipped")
            }
        }
        match proposal_of(&e.context) {
            Some((node, id)) if node == self.node.id() => self.pending.remove(&id),
            _ => None,
        }
    }
}

fn proposal_of(context: &[u8]) -> Option<(u64, u64)> {
    let node = u64::from_be_bytes(context.get(..8)?.try_into().ok()?);
    let id = u64::from_be_bytes(context.get(8..16)?.try_into().ok()?);
    Some((node, id))
}
