//! The quorum's tasks over real sockets on 127.0.0.1: three voters, each with its controller
//! listener, and a broker following the log through one of them. A voter is stopped (its tasks
//! end and its listener closes); the others elect a leader and go on, and it rejoins from its
//! files.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};

use super::driver::{self, QuorumHandle, StateMachine};
use super::entry::{Payload, SnapshotData};
use super::node::QuorumNode;
use super::transport::Transport;
use crate::cluster::{follow, listener};

/// A state machine that keeps the text of every entry.
#[derive(Debug, Clone, Default, PartialEq)]
struct Texts(Vec<String>);

impl StateMachine for Texts {
    fn apply(&mut self, _offset: u64, payload: Payload) {
        if let Payload::ClusterId(s) = payload {
            self.0.push(s);
        }
    }
    fn snapshot(&self, offset: u64) -> SnapshotData {
        SnapshotData {
            cluster_id: Some(self.0.join(",")),
            offset,
            records: Vec::new(),
        }
    }
    fn restore(data: SnapshotData) -> Self {
        Self(
            data.cluster_id
                .map(|s| s.split(',').map(str::to_owned).collect())
                .unwrap_or_default(),
        )
    }
}

struct Voter {
    handle: QuorumHandle<Texts>,
    stop: oneshot::Sender<()>,
}

fn start_voter(
    dir: &std::path::Path,
    id: u64,
    listener: TcpListener,
    peers: &[(u64, String)],
) -> Voter {
    let ids: Vec<u64> = peers.iter().map(|(i, _)| *i).collect();
    let node = QuorumNode::open(dir, id, &ids).unwrap();
    let (inbox_tx, inbox_rx) = mpsc::channel(1024);
    let transport = Transport::connect(id, peers.to_vec());
    let (stop, stopped) = oneshot::channel::<()>();
    let (stop_driver, driver_stopped) = oneshot::channel::<()>();
    let handle = driver::start(node, Texts::default(), inbox_rx, transport, async {
        let _ = driver_stopped.await;
    });
    let services = listener::Services {
        raft: Some(inbox_tx),
        follow: Some(follow::handler(handle.clone())),
        kafka: Arc::new(|_| Box::pin(async { None })),
    };
    tokio::spawn(listener::serve(listener, services, async move {
        let _ = stopped.await;
        let _ = stop_driver.send(());
    }));
    Voter { handle, stop }
}

async fn leader_of(voters: &[Option<Voter>]) -> usize {
    for _ in 0..100 {
        for (i, v) in voters.iter().enumerate() {
            if let Some(v) = v {
                let a = v.handle.current();
                if a.leader == Some(v.handle.id()) && a.leader_ready {
                    return i;
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no leader within 10 s");
}

async fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    for _ in 0..100 {
        if f() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what}: not within 10 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn voters_over_loopback_fail_over_and_a_follower_sees_every_commit() {
    let dirs: Vec<tempfile::TempDir> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let mut listeners = Vec::new();
    let mut peers = Vec::new();
    for id in 1..=3u64 {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        peers.push((id, l.local_addr().unwrap().to_string()));
        listeners.push(Some(l));
    }
    let mut voters: Vec<Option<Voter>> = (0..3)
        .map(|i| {
            Some(start_voter(
                dirs[i].path(),
                i as u64 + 1,
                listeners[i].take().unwrap(),
                &peers,
            ))
        })
        .collect();
    let follower = follow::follow(9, peers.clone(), Texts::default());

    let first = leader_of(&voters).await;
    for i in 0..10 {
        let h = &voters[first].as_ref().unwrap().handle;
        let offset = h
            .propose(Payload::ClusterId(format!("a{i}")))
            .await
            .unwrap();
        // Resolved once applied here.
        assert!(h.current().offset >= offset);
        assert_eq!(h.current().state.0.last().unwrap(), &format!("a{i}"));
    }
    let other = (first + 1) % 3;
    let refused = voters[other]
        .as_ref()
        .unwrap()
        .handle
        .propose(Payload::ClusterId("x".into()))
        .await;
    assert!(
        matches!(refused, Err(super::ProposeError::NotLeader { leader: Some(l) }) if l == first as u64 + 1),
        "{refused:?}"
    );
    let expected: Vec<String> = (0..10).map(|i| format!("a{i}")).collect();
    eventually("the follower has every entry", || {
        follower.borrow().state.0 == expected
    })
    .await;

    // Stop the leader: its tasks end with its handles, its listener closes.
    let Voter { handle, stop } = voters[first].take().unwrap();
    let _ = stop.send(());
    drop(handle);
    let second = leader_of(&voters).await;
    assert_ne!(second, first);
    let h = voters[second].as_ref().unwrap().handle.clone();
    h.propose(Payload::ClusterId("b".into())).await.unwrap();
    let mut expected = expected;
    expected.push("b".into());
    eventually("the follower moves to the new leader", || {
        follower.borrow().state.0 == expected
    })
    .await;
    assert_eq!(follower.borrow().leader, Some(second as u64 + 1));

    // The stopped voter restarts from its files on its old port and catches up.
    let l = TcpListener::bind(&peers[first].1).await.unwrap();
    let v = start_voter(dirs[first].path(), first as u64 + 1, l, &peers);
    let back = v.handle.clone();
    voters[first] = Some(v);
    eventually("the restarted voter catches up", || {
        back.current().state.0 == expected
    })
    .await;
}
