//! Raft messages between voters, over the controller listener in our length-prefixed framing.
//!
//! Each voter keeps one outgoing connection to every other voter and sends its messages for
//! that voter there; answers come back on the other voter's own outgoing connection. A
//! connection opens with a hello frame, `KRSRAFT1` and the sender's node id (u64, big
//! endian); every later frame is one Raft message (protobuf). Kafka request frames start with
//! an api key, never with these bytes, so the listener tells the two apart by the first frame.
//! Raft tolerates lost messages: a full queue or a dead peer drops them, and reconnects back
//! off from 100 ms to 1 s.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::{SinkExt, StreamExt};
use kafka_net::ClientSecurity;
use protobuf::Message as _;
use raft::eraftpb::Message;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio_util::codec::{FramedRead, FramedWrite, LengthDelimitedCodec};

use crate::cluster::link_security;

/// The first bytes of a voter's connection.
pub const RAFT_HELLO: &[u8; 8] = b"KRSRAFT1";
pub use crate::cluster::link_security::{MAX_FRAME, codec};
/// Messages queued for one peer before new ones are dropped.
const QUEUE: usize = 4096;

/// Sends messages to the other voters.
#[derive(Debug, Clone, Default)]
pub struct Transport {
    peers: HashMap<u64, mpsc::Sender<Message>>,
}

impl Transport {
    /// Connections from voter `me` to each of `peers` (id, `host:port`), kept open by tasks
    /// (plaintext).
    pub fn connect(me: u64, peers: Vec<(u64, String)>) -> Self {
        Self::connect_secured(me, peers, ClientSecurity::default())
    }

    /// As [`Transport::connect`], each connection secured as the controller listener asks
    /// (`security`: TLS and SASL, see [`crate::cluster::link_security`]).
    pub fn connect_secured(me: u64, peers: Vec<(u64, String)>, security: ClientSecurity) -> Self {
        let security = Arc::new(security);
        let mut map = HashMap::new();
        for (id, addr) in peers {
            if id == me {
                continue;
            }
            let (tx, rx) = mpsc::channel(QUEUE);
            tokio::spawn(peer_task(me, id, addr, Arc::clone(&security), rx));
            map.insert(id, tx);
        }
        Self { peers: map }
    }

    /// A transport over channels (tests: the messages to each peer arrive on its receiver).
    pub fn channels(peers: HashMap<u64, mpsc::Sender<Message>>) -> Self {
        Self { peers }
    }

    pub fn send(&self, messages: Vec<Message>) {
        for m in messages {
            if let Some(tx) = self.peers.get(&m.to) {
                if tx.try_send(m).is_err() {
                    tracing::trace!("a Raft message was dropped: the peer's queue is full");
                }
            }
        }
    }
}

async fn peer_task(
    me: u64,
    id: u64,
    addr: String,
    security: Arc<ClientSecurity>,
    mut rx: mpsc::Receiver<Message>,
) {
    let mut backoff = Duration::from_millis(100);
    let mut last_error = String::new();
    loop {
        let mut out = match link_security::connect(&addr, &security, Duration::from_secs(2)).await {
            Ok(s) => s,
            Err(e) => {
                let text = e.to_string();
                if text != last_error {
                    if e.is_authentication() {
                        tracing::warn!(peer = id, %addr, error = %e, "cannot log in to a controller");
                    } else {
                        tracing::debug!(peer = id, %addr, error = %e, "cannot reach a controller");
                    }
                    last_error = text;
                }
                if !drain_for(&mut rx, backoff).await {
                    return;
                }
                backoff = (backoff * 2).min(Duration::from_secs(1));
                continue;
            }
        };
        backoff = Duration::from_millis(100);
        last_error.clear();
        let mut hello = BytesMut::from(&RAFT_HELLO[..]);
        hello.extend_from_slice(&me.to_be_bytes());
        if out.send(hello.freeze()).await.is_err() {
            continue;
        }
        tracing::debug!(peer = id, %addr, "connected to a controller");
        loop {
            let Some(m) = rx.recv().await else { return };
            let bytes = match m.write_to_bytes() {
                Ok(b) => Bytes::from(b),
                Err(e) => {
                    tracing::error!(error = %e, "a Raft message could not be encoded");
                    continue;
                }
            };
            if let Err(e) = out.send(bytes).await {
                tracing::debug!(peer = id, %addr, error = %e, "lost the connection to a controller");
                break;
            }
        }
    }
}

/// Waits `d`, dropping what is queued meanwhile (stale by the time a connection is up).
/// False when the sender side is gone.
async fn drain_for(rx: &mut mpsc::Receiver<Message>, d: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + d;
    loop {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some(_)) => {}
            Ok(None) => return false,
            Err(_) => return true,
        }
    }
}

/// The node id in a hello frame, if `frame` is one.
pub fn hello_sender(frame: &[u8]) -> Option<u64> {
    let rest = frame.strip_prefix(&RAFT_HELLO[..])?;
    Some(u64::from_be_bytes(rest.try_into().ok()?))
}

/// Reads a voter's messages (after its hello) into `inbox` until the connection ends. A frame
/// that is not a Raft message, or one claiming another sender, closes the connection.
pub async fn serve_stream<R: AsyncRead + Unpin>(
    mut frames: FramedRead<R, LengthDelimitedCodec>,
    sender: u64,
    inbox: mpsc::Sender<Message>,
) {
    while let Some(frame) = frames.next().await {
        let Ok(frame) = frame else { return };
        let m = match Message::parse_from_bytes(&frame) {
            Ok(m) if m.from == sender => m,
            Ok(m) => {
                tracing::warn!(
                    sender,
                    claimed = m.from,
                    "a controller connection sent a message from another node; closing it"
                );
                return;
            }
            Err(e) => {
                tracing::warn!(sender, error = %e, "a controller connection sent a frame that is not a Raft message; closing it");
                return;
            }
        };
        if inbox.send(m).await.is_err() {
            return;
        }
    }
}

/// Writes frames (for the observers' protocol, which answers on the same connection).
pub fn writer<W: AsyncWrite>(w: W) -> FramedWrite<W, LengthDelimitedCodec> {
    FramedWrite::new(w, codec())
}
