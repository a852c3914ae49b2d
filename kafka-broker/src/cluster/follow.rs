//! Brokers that are not controllers follow the metadata log from the controllers, as Kafka's
//! brokers fetch `__cluster_metadata` as observers of the quorum: they ask a controller for the
//! committed entries after their offset (a long poll) and apply them to their own image. A
//! controller answers from its log (what it has committed and applied), or with its snapshot
//! when the entries asked for are compacted away, and names the leader it knows, which the
//! broker asks next.
//!
//! ```text
//! hello     KRSMETA1, node id i32
//! request   from u64, max wait ms u32
//! answer    leader u64 (0: none known), term u64, kind u8, then
//!           0: count u32, count x (index u64, length u32, data)
//!           1: length u32, snapshot
//! ```

use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use futures::{SinkExt, StreamExt};
use kafka_net::ClientSecurity;
use tokio::sync::watch;

use super::link_security;
use super::listener::{FOLLOW_HELLO, FollowHandler};
use super::quorum::driver::{Applied, Fetched, QuorumHandle, StateMachine};
use super::quorum::entry::{Payload, SnapshotData};

/// How a failed login starts its error text (logged as a warning: it does not heal).
const AUTH_FAILED: &str = "authentication: ";

/// What one answer carries at most.
const MAX_ANSWER_BYTES: usize = 4 << 20;
/// How long a controller holds a request with nothing new.
const MAX_WAIT_MS: u32 = 500;

/// The controller side: answers a follower's requests from `quorum`.
pub fn handler<S: StateMachine>(quorum: QuorumHandle<S>) -> FollowHandler {
    Arc::new(move |frame: Bytes| {
        let quorum = quorum.clone();
        Box::pin(async move {
            let mut req = frame;
            if req.len() != 12 {
                return None;
            }
            let from = req.get_u64();
            let wait = Duration::from_millis(u64::from(req.get_u32().min(MAX_WAIT_MS)));
            let mut state = quorum.watch();
            let _ = tokio::time::timeout(wait, state.wait_for(|a| a.offset >= from)).await;
            let current = quorum.current();
            let fetched = quorum.fetch(from, MAX_ANSWER_BYTES).await?;
            let mut out = BytesMut::new();
            out.put_u64(current.leader.unwrap_or(0));
            out.put_u64(current.term);
            match fetched {
                Fetched::Entries(entries) => {
                    out.put_u8(0);
                    out.put_u32(entries.len() as u32);
                    for (index, data) in entries {
                        out.put_u64(index);
                        out.put_u32(data.len() as u32);
                        out.put_slice(&data);
                    }
                }
                Fetched::Snapshot(data) => {
                    out.put_u8(1);
                    out.put_u32(data.len() as u32);
                    out.put_slice(&data);
                }
            }
            Some(out.freeze())
        })
    })
}

/// One answer, read.
#[derive(Debug)]
struct Answer {
    leader: Option<u64>,
    term: u64,
    fetched: Fetched,
}

fn read_answer(mut b: Bytes) -> Option<Answer> {
    if b.len() < 17 {
        return None;
    }
    let leader = Some(b.get_u64()).filter(|&l| l != 0);
    let term = b.get_u64();
    let fetched = match b.get_u8() {
        0 => {
            if b.len() < 4 {
                return None;
            }
            let count = b.get_u32() as usize;
            if count > b.len() / 12 {
                return None;
            }
            let mut entries = Vec::with_capacity(count);
            for _ in 0..count {
                if b.len() < 12 {
                    return None;
                }
                let index = b.get_u64();
                let len = b.get_u32() as usize;
                if b.len() < len {
                    return None;
                }
                entries.push((index, b.split_to(len)));
            }
            Fetched::Entries(entries)
        }
        1 => {
            if b.len() < 4 {
                return None;
            }
            let len = b.get_u32() as usize;
            if b.len() < len {
                return None;
            }
            Fetched::Snapshot(b.split_to(len))
        }
        _ => return None,
    };
    Some(Answer {
        leader,
        term,
        fetched,
    })
}

/// The broker side: follows the log from `voters` (id, `host:port`) into a state starting
/// from `initial`, published on the returned channel, until the receiver is dropped
/// (plaintext connections).
pub fn follow<S: StateMachine>(
    node_id: i32,
    voters: Vec<(u64, String)>,
    initial: S,
) -> watch::Receiver<Arc<Applied<S>>> {
    follow_secured(node_id, voters, initial, ClientSecurity::default())
}

/// As [`follow`], each connection secured as the controller listener asks (`security`: TLS
/// and SASL, see [`super::link_security`]).
pub fn follow_secured<S: StateMachine>(
    node_id: i32,
    voters: Vec<(u64, String)>,
    initial: S,
    security: ClientSecurity,
) -> watch::Receiver<Arc<Applied<S>>> {
    let (tx, rx) = watch::channel(Arc::new(Applied {
        state: initial,
        offset: 0,
        leader: None,
        term: 0,
        leader_ready: false,
    }));
    tokio::spawn(async move {
        let mut next = 0usize;
        let mut leader_hint: Option<u64> = None;
        loop {
            if tx.is_closed() {
                return;
            }
            let target = leader_hint
                .and_then(|l| voters.iter().find(|(id, _)| *id == l))
                .or_else(|| voters.get(next % voters.len().max(1)))
                .cloned();
            next += 1;
            let Some((id, addr)) = target else { return };
            match follow_one(node_id, &addr, &security, &tx, &mut leader_hint, id).await {
                Ok(()) => {}
                Err(e) => {
                    if e.starts_with(AUTH_FAILED) {
                        tracing::warn!(controller = id, %addr, error = %e, "following the metadata log: cannot log in to a controller");
                    } else {
                        tracing::debug!(controller = id, %addr, error = %e, "following the metadata log: switching controller");
                    }
                    leader_hint = None;
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        }
    });
    rx
}

/// Follows from one controller while it is the leader (or the leader is unknown). Returns
/// `Ok` to move to another controller it named, `Err` when the connection failed.
async fn follow_one<S: StateMachine>(
    node_id: i32,
    addr: &str,
    security: &ClientSecurity,
    tx: &watch::Sender<Arc<Applied<S>>>,
    leader_hint: &mut Option<u64>,
    asked: u64,
) -> Result<(), String> {
    let mut framed = link_security::connect(addr, security, Duration::from_secs(2))
        .await
        .map_err(|e| {
            if e.is_authentication() {
                format!("{AUTH_FAILED}{e}")
            } else {
                e.to_string()
            }
        })?;
    let mut hello = BytesMut::from(&FOLLOW_HELLO[..]);
    hello.put_i32(node_id);
    framed
        .send(hello.freeze())
        .await
        .map_err(|e| e.to_string())?;
    loop {
        let current = tx.borrow().clone();
        let mut req = BytesMut::with_capacity(12);
        req.put_u64(current.offset + 1);
        req.put_u32(MAX_WAIT_MS);
        framed.send(req.freeze()).await.map_err(|e| e.to_string())?;
        let answer = tokio::time::timeout(Duration::from_secs(5), framed.next())
            .await
            .map_err(|_| "no answer in 5 s".to_owned())?
            .ok_or("closed")?
            .map_err(|e| e.to_string())?;
        let answer = read_answer(answer.freeze()).ok_or("a malformed answer")?;
        let mut state = current.state.clone();
        let mut offset = current.offset;
        let changed = match answer.fetched {
            Fetched::Snapshot(data) => {
                let data = SnapshotData::decode(&data).map_err(|e| e.to_string())?;
                offset = data.offset;
                state = S::restore(data);
                true
            }
            Fetched::Entries(entries) => {
                let any = !entries.is_empty();
                for (index, data) in entries {
                    if index != offset + 1 {
                        return Err(format!("entry {index} where {} was expected", offset + 1));
                    }
                    offset = index;
                    if data.is_empty() {
                        continue;
                    }
                    match Payload::decode(&data) {
                        Ok(p) => state.apply(index, p),
                        Err(e) => {
                            tracing::error!(offset = index, error = %e, "a committed metadata entry does not read; skipped")
                        }
                    }
                }
                any
            }
        };
        if changed || current.leader != answer.leader || current.term != answer.term {
            tx.send_replace(Arc::new(Applied {
                state,
                offset,
                leader: answer.leader,
                term: answer.term,
                leader_ready: false,
            }));
        }
        *leader_hint = answer.leader;
        if answer.leader.is_some_and(|l| l != asked) {
            return Ok(());
        }
        if tx.is_closed() {
            return Ok(());
        }
    }
}
