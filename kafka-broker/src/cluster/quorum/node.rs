//! One voter of the controller quorum, without I/O of its own: TiKV's `RawNode` over the
//! on-disk log ([`DiskStore`]). The driver feeds it ticks, messages from peers and proposals,
//! and after each calls [`QuorumNode::advance`], which persists what Raft asks to persist
//! (fsynced) and hands back the messages to send and the entries now committed, in order.
//! Consensus (elections, log matching, commitment) is the library's; this file only keeps
//! Raft's order of "persist, then send, then apply".

use std::path::Path;

use raft::eraftpb::{Entry, EntryType, Message, Snapshot};
use raft::{RawNode, StateRole};

use super::store::DiskStore;
use crate::error::BrokerError;

/// Ticks without a heartbeat before a follower campaigns (randomized up to twice this), and
/// between a leader's heartbeats. With the driver's 100 ms tick: elections after 1-2 s, close
/// to Kafka's `controller.quorum.election.timeout.ms` (1 s).
pub const ELECTION_TICKS: usize = 10;
pub const HEARTBEAT_TICKS: usize = 2;

/// What one round of [`QuorumNode::advance`] produced.
#[derive(Debug, Default)]
pub struct Output {
    /// Messages to peers, each to `msg.to`.
    pub messages: Vec<Message>,
    /// A snapshot from the leader that replaces the state machine (applied before
    /// `committed`).
    pub snapshot: Option<Snapshot>,
    /// Committed entries, in log order (new leaders' empty entries included: they move the
    /// applied offset).
    pub committed: Vec<Entry>,
}

/// A voter's view of its quorum, for DescribeQuorum and the logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuorumStatus {
    pub leader: Option<u64>,
    pub term: u64,
    pub commit: u64,
    pub last_index: u64,
    /// On the leader: each voter's matched index.
    pub progress: Vec<(u64, u64)>,
}

pub struct QuorumNode {
    raw: RawNode<DiskStore>,
    voters: Vec<u64>,
}

impl std::fmt::Debug for QuorumNode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuorumNode")
            .field("id", &self.raw.raft.id)
            .field("status", &self.status())
            .finish()
    }
}

impl QuorumNode {
    /// Opens voter `id` of `voters` on its metadata log in `data_dir`. Entries up to the
    /// snapshot count as applied (the caller restores its state from the snapshot first); the
    /// committed entries after it come out of the first rounds of [`Self::advance`].
    pub fn open(data_dir: &Path, id: u64, voters: &[u64]) -> Result<Self, BrokerError> {
        let store = DiskStore::open(data_dir, voters)?;
        let config = raft::Config {
            id,
            election_tick: ELECTION_TICKS,
            heartbeat_tick: HEARTBEAT_TICKS,
            applied: store.snapshot_ref().get_metadata().index,
            max_size_per_msg: 1 << 20,
            max_inflight_msgs: 256,
            check_quorum: true,
            pre_vote: true,
            ..Default::default()
        };
        config
            .validate()
            .map_err(|e| BrokerError::Config(format!("controller quorum: {e}")))?;
        let raw = RawNode::new(&config, store, &super::logger())
            .map_err(|e| BrokerError::Storage(format!("controller quorum: {e}")))?;
        let mut voters = voters.to_vec();
        voters.sort_unstable();
        Ok(Self { raw, voters })
    }

    pub fn id(&self) -> u64 {
        self.raft_id()
    }

    fn raft_id(&self) -> u64 {
        self.raw.raft.id
    }

    pub fn voters(&self) -> &[u64] {
        &self.voters
    }

    /// One tick of the Raft clock (the driver calls it every 100 ms).
    pub fn tick(&mut self) {
        self.raw.tick();
    }

    /// A message from a peer. Messages that are not for this node or not from a voter are
    /// dropped (the controller listener serves only the quorum, but a misconfigured node may
    /// reach it).
    pub fn step(&mut self, m: Message) {
        if m.to != self.raft_id() || !self.voters.contains(&m.from) {
            tracing::debug!(
                to = m.to,
                from = m.from,
                "dropping a Raft message not for this voter"
            );
            return;
        }
        if let Err(e) = self.raw.step(m) {
            tracing::debug!(error = %e, "Raft message not taken");
        }
    }

    /// Proposes an entry; only the leader can (false elsewhere, or while a leadership
    /// transfer is under way). `context` comes back with the committed entry.
    pub fn propose(&mut self, context: Vec<u8>, data: Vec<u8>) -> bool {
        self.raw.raft.state == StateRole::Leader && self.raw.propose(context, data).is_ok()
    }

    pub fn is_leader(&self) -> bool {
        self.raw.raft.state == StateRole::Leader
    }

    /// The leader this node knows of.
    pub fn leader(&self) -> Option<u64> {
        Some(self.raw.raft.leader_id).filter(|&l| l != raft::INVALID_ID)
    }

    pub fn term(&self) -> u64 {
        self.raw.raft.term
    }

    pub fn status(&self) -> QuorumStatus {
        let r = &self.raw.raft;
        let progress = if r.state == StateRole::Leader {
            let mut p: Vec<(u64, u64)> = r.prs().iter().map(|(id, pr)| (*id, pr.matched)).collect();
            p.sort_unstable();
            p
        } else {
            Vec::new()
        };
        QuorumStatus {
            leader: self.leader(),
            term: r.term,
            commit: r.raft_log.committed,
            last_index: r.raft_log.last_index(),
            progress,
        }
    }

    /// The log as stored (for serving committed entries to brokers).
    pub fn store(&self) -> &DiskStore {
        self.raw.store()
    }

    /// Makes a snapshot at `index` (applied by the caller) and drops the entries before it.
    pub fn compact(&mut self, index: u64, data: bytes::Bytes) -> Result<(), BrokerError> {
        self.raw.mut_store().compact(index, data)
    }

    /// Persists what Raft has ready (fsynced), then returns what to send and apply. Raft's
    /// order: messages a leader may send before its own write go out first; a snapshot and the
    /// new entries and hard state are written; the messages that promise them (votes,
    /// acknowledgements) only after.
    pub fn advance(&mut self) -> Result<Output, BrokerError> {
        let mut out = Output::default();
        if !self.raw.has_ready() {
            return Ok(out);
        }
        let mut rd = self.raw.ready();
        out.messages.extend(rd.take_messages());
        if !rd.snapshot().is_empty() {
            let snapshot = rd.snapshot().clone();
            self.raw.mut_store().apply_snapshot(&snapshot)?;
            out.snapshot = Some(snapshot);
        }
        keep_data(&mut out.committed, rd.take_committed_entries());
        if !rd.entries().is_empty() {
            self.raw.mut_store().append(rd.entries())?;
        }
        if let Some(hs) = rd.hs() {
            self.raw.mut_store().set_hard_state(hs)?;
        }
        out.messages.extend(rd.take_persisted_messages());
        let mut light = self.raw.advance(rd);
        if let Some(commit) = light.commit_index() {
            self.raw.mut_store().set_commit(commit);
        }
        out.messages.extend(light.take_messages());
        keep_data(&mut out.committed, light.take_committed_entries());
        self.raw.advance_apply();
        Ok(out)
    }
}

/// Committed entries to apply; configuration changes (the voters are static) are left out.
fn keep_data(into: &mut Vec<Entry>, entries: Vec<Entry>) {
    into.extend(
        entries
            .into_iter()
            .filter(|e| e.entry_type == EntryType::EntryNormal),
    );
}
