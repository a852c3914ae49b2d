//! The quorum on a simulated network and virtual time: voters with real on-disk logs in
//! temporary directories, messages passed by the test (dropped to crash or cut off a node),
//! ticks counted. What is checked is what the cluster relies on: one leader, every committed
//! entry applied in the same order everywhere, nothing committed lost when its leader dies or
//! a voter restarts from its files, a cut-off leader's uncommitted entries never applied.
#![allow(clippy::unwrap_used)]

use std::collections::{BTreeSet, VecDeque};

use raft::eraftpb::Message;

use super::entry::{Payload, SnapshotData};
use super::node::QuorumNode;

struct Voter {
    dir: tempfile::TempDir,
    node: Option<QuorumNode>,
    /// (index, data) of every entry applied, in order.
    applied: Vec<(u64, Vec<u8>)>,
}

struct Sim {
    voters: Vec<Voter>,
    ids: Vec<u64>,
    net: VecDeque<Message>,
    /// Voters cut off from the others (messages to and from them are dropped).
    cut: BTreeSet<u64>,
}

impl Sim {
    fn new(n: u64) -> Self {
        let ids: Vec<u64> = (1..=n).collect();
        let voters = ids
            .iter()
            .map(|&id| {
                let dir = tempfile::tempdir().unwrap();
                let node = QuorumNode::open(dir.path(), id, &ids).unwrap();
                Voter {
                    dir,
                    node: Some(node),
                    applied: Vec::new(),
                }
            })
            .collect();
        Self {
            voters,
            ids,
            net: VecDeque::new(),
            cut: BTreeSet::new(),
        }
    }

    fn voter(&mut self, id: u64) -> &mut Voter {
        &mut self.voters[(id - 1) as usize]
    }

    fn node(&mut self, id: u64) -> &mut QuorumNode {
        self.voter(id).node.as_mut().unwrap()
    }

    fn advance_all(&mut self) {
        for v in &mut self.voters {
            let Some(node) = v.node.as_mut() else {
                continue;
            };
            let out = node.advance().unwrap();
            if let Some(snap) = out.snapshot {
                // The state machine restarts from the snapshot: what it says was applied.
                let data = SnapshotData::decode(&snap.data).unwrap();
                assert!(
                    v.applied.last().is_none_or(|(i, _)| *i <= data.offset),
                    "a snapshot at {} comes after everything applied here",
                    data.offset
                );
                assert_eq!(data.offset, snap.get_metadata().index);
                v.applied = vec![(data.offset, Vec::new())];
            }
            for e in out.committed {
                if let Some((last, _)) = v.applied.last() {
                    assert!(e.index > *last, "applied out of order");
                }
                v.applied.push((e.index, e.data.to_vec()));
            }
            self.net.extend(out.messages);
        }
    }

    fn deliver(&mut self) {
        while let Some(m) = self.net.pop_front() {
            if self.cut.contains(&m.to) || self.cut.contains(&m.from) {
                continue;
            }
            if let Some(node) = self.voters[(m.to - 1) as usize].node.as_mut() {
                node.step(m);
            }
            self.advance_all();
        }
    }

    /// `n` ticks of 100 ms on every live voter, delivering everything after each.
    fn run(&mut self, n: usize) {
        for _ in 0..n {
            for v in &mut self.voters {
                if let Some(node) = v.node.as_mut() {
                    node.tick();
                }
            }
            self.advance_all();
            self.deliver();
        }
    }

    fn leaders(&self) -> Vec<u64> {
        self.voters
            .iter()
            .filter_map(|v| v.node.as_ref())
            .filter(|n| n.is_leader())
            .map(QuorumNode::id)
            .collect()
    }

    fn leader(&mut self) -> u64 {
        for _ in 0..100 {
            let live: Vec<u64> = self
                .leaders()
                .into_iter()
                .filter(|l| !self.cut.contains(l))
                .collect();
            if let [l] = live[..] {
                return l;
            }
            self.run(1);
        }
        panic!(
            "no single leader after 10 s of virtual time: {:?}",
            self.leaders()
        );
    }

    fn propose(&mut self, id: u64, data: &str) -> bool {
        let payload = Payload::ClusterId(data.to_owned()).encode().unwrap();
        let ok = self.node(id).propose(Vec::new(), payload);
        self.advance_all();
        self.deliver();
        ok
    }

    fn crash(&mut self, id: u64) {
        self.voter(id).node = None;
    }

    fn restart(&mut self, id: u64) {
        let ids = self.ids.clone();
        let v = self.voter(id);
        v.node = Some(QuorumNode::open(v.dir.path(), id, &ids).unwrap());
        // The state machine is rebuilt from the log: the snapshot, then committed entries.
        let snap = v.node.as_ref().unwrap().store().snapshot_ref().clone();
        v.applied.clear();
        if !snap.data.is_empty() {
            let data = SnapshotData::decode(&snap.data).unwrap();
            v.applied.push((data.offset, Vec::new()));
        }
    }

    /// Applied data (without snapshot placeholders) of a voter, as text.
    fn applied(&self, id: u64) -> Vec<String> {
        self.voters[(id - 1) as usize]
            .applied
            .iter()
            .filter(|(_, d)| !d.is_empty())
            .map(
                |(_, d)| match Payload::decode(&bytes::Bytes::from(d.clone())).unwrap() {
                    Payload::ClusterId(s) => s,
                    Payload::Records(_) => "records".into(),
                },
            )
            .collect()
    }
}

#[test]
fn three_voters_elect_one_leader_and_apply_the_same_entries_in_order() {
    let mut sim = Sim::new(3);
    let leader = sim.leader();
    for i in 0..20 {
        assert!(sim.propose(leader, &format!("e{i}")));
    }
    let follower = (1..=3).find(|&i| i != leader).unwrap();
    assert!(
        !sim.propose(follower, "refused"),
        "only the leader takes proposals"
    );
    sim.run(5);
    let expected: Vec<String> = (0..20).map(|i| format!("e{i}")).collect();
    for id in 1..=3 {
        assert_eq!(sim.applied(id), expected, "voter {id}");
    }
    assert_eq!(sim.leaders(), [leader]);
    let status = sim.node(leader).status();
    assert_eq!(status.leader, Some(leader));
    assert_eq!(status.progress.len(), 3);
    assert!(
        status.progress.iter().all(|&(_, m)| m == status.commit),
        "{status:?}"
    );
}

#[test]
fn a_crashed_leader_is_replaced_and_loses_nothing_committed_when_it_restarts() {
    let mut sim = Sim::new(3);
    let first = sim.leader();
    for i in 0..5 {
        sim.propose(first, &format!("a{i}"));
    }
    sim.run(2);
    sim.crash(first);
    let second = sim.leader();
    assert_ne!(second, first);
    for i in 0..5 {
        assert!(sim.propose(second, &format!("b{i}")));
    }
    sim.run(3);
    sim.restart(first);
    sim.run(30);
    let expected: Vec<String> = (0..5)
        .map(|i| format!("a{i}"))
        .chain((0..5).map(|i| format!("b{i}")))
        .collect();
    for id in 1..=3 {
        assert_eq!(sim.applied(id), expected, "voter {id}");
    }
    // Every voter crashes at once and restarts from its files alone.
    for id in 1..=3 {
        sim.crash(id);
    }
    for id in 1..=3 {
        sim.restart(id);
    }
    let third = sim.leader();
    sim.run(5);
    for id in 1..=3 {
        assert_eq!(sim.applied(id), expected, "voter {id} after a full restart");
    }
    assert!(sim.propose(third, "c"));
    sim.run(3);
    assert_eq!(sim.applied(1).last().map(String::as_str), Some("c"));
}

#[test]
fn a_cut_off_leader_commits_nothing_and_its_tail_is_replaced() {
    let mut sim = Sim::new(3);
    let old = sim.leader();
    sim.propose(old, "before");
    sim.run(2);
    sim.cut.insert(old);
    // Taken by the cut-off leader, but it cannot reach a majority.
    sim.propose(old, "lost");
    let new = sim.leader();
    assert_ne!(new, old);
    assert!(sim.propose(new, "after"));
    sim.run(20);
    // check_quorum: the cut-off leader stepped down.
    assert!(!sim.node(old).is_leader());
    sim.cut.clear();
    sim.run(30);
    for id in 1..=3 {
        assert_eq!(sim.applied(id), ["before", "after"], "voter {id}");
    }
}

#[test]
fn a_voter_far_behind_catches_up_from_a_snapshot() {
    let mut sim = Sim::new(3);
    let leader = sim.leader();
    let behind = (1..=3).find(|&i| i != leader).unwrap();
    sim.crash(behind);
    for i in 0..30 {
        assert!(sim.propose(leader, &format!("e{i}")));
    }
    sim.run(2);
    // Every live voter snapshots what it applied and drops its log.
    let mut compacted_at = 0;
    for id in (1..=3).filter(|&i| i != behind) {
        let at = sim.voter(id).applied.last().unwrap().0;
        compacted_at = at;
        let data = SnapshotData {
            cluster_id: None,
            offset: at,
            records: Vec::new(),
        }
        .encode()
        .unwrap();
        sim.node(id).compact(at, data).unwrap();
        assert_eq!(
            raft::Storage::first_index(sim.node(id).store()).unwrap(),
            at + 1
        );
    }
    sim.restart(behind);
    sim.run(30);
    // The snapshot stands for the 30 entries; new entries apply after it.
    assert!(sim.applied(behind).is_empty());
    assert!(sim.propose(leader, "new"));
    sim.run(3);
    assert_eq!(sim.applied(behind), ["new"]);
    let snap = sim.node(behind).store().snapshot_ref().get_metadata().index;
    assert_eq!(snap, compacted_at);
}
