//! The controller listener (`controller.listener.names`): what the other nodes of the cluster
//! reach, never the clients. Its first frame tells what a connection is:
//!
//! - a voter's Raft stream (`KRSRAFT1`, see [`super::quorum::transport`]);
//! - a broker following the metadata log (`KRSMETA1`, see [`super::follow`]);
//! - otherwise Kafka requests (BrokerRegistration, BrokerHeartbeat, AlterPartition, the admin
//!   requests brokers forward, DescribeQuorum, ApiVersions), answered in order.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use raft::eraftpb::Message;
use std::net::SocketAddr;

use bytes::BytesMut;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_util::codec::FramedRead;
use tokio_util::codec::{FramedWrite, LengthDelimitedCodec};

use super::link_security::{GateStep, HANDSHAKE_TIMEOUT, LinkServer, LinkStream, SaslGate};
use super::quorum::transport::{self, codec};

/// Answers one Kafka request frame with one response frame (`None`: no answer, close).
pub type KafkaHandler =
    Arc<dyn Fn(Bytes) -> Pin<Box<dyn Future<Output = Option<Bytes>> + Send>> + Send + Sync>;

/// The first bytes of a stream from a broker following the log (see `super::follow`).
pub const FOLLOW_HELLO: &[u8; 8] = b"KRSMETA1";

/// Answers one request of a broker following the log.
pub type FollowHandler =
    Arc<dyn Fn(Bytes) -> Pin<Box<dyn Future<Output = Option<Bytes>> + Send>> + Send + Sync>;

/// What the listener serves.
#[derive(Clone)]
pub struct Services {
    /// This node's voter inbox (controllers only).
    pub raft: Option<mpsc::Sender<Message>>,
    pub follow: Option<FollowHandler>,
    pub kafka: KafkaHandler,
}

impl std::fmt::Debug for Services {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Services")
            .field("raft", &self.raft.is_some())
            .finish_non_exhaustive()
    }
}

/// Accepts connections until `shutdown` completes (a PLAINTEXT listener).
pub async fn serve(listener: TcpListener, services: Services, shutdown: impl Future<Output = ()>) {
    serve_secured(listener, services, None, shutdown).await;
}

/// Accepts connections until `shutdown` completes; with `security`, each connection first
/// finishes the listener's TLS handshake and SASL exchange ([`LinkServer`]).
pub async fn serve_secured(
    listener: TcpListener,
    services: Services,
    security: Option<Arc<LinkServer>>,
    shutdown: impl Future<Output = ()>,
) {
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            () = &mut shutdown => return,
            a = listener.accept() => a,
        };
        match accepted {
            Ok((stream, peer)) => {
                let _ = stream.set_nodelay(true);
                let services = services.clone();
                let security = security.clone();
                tokio::spawn(async move {
                    connection(stream, peer, services, security).await;
                    tracing::trace!(%peer, "controller listener connection closed");
                });
            }
            Err(e) => {
                tracing::warn!(error = %e, "controller listener: accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        }
    }
}

async fn connection(
    stream: TcpStream,
    peer: SocketAddr,
    services: Services,
    security: Option<Arc<LinkServer>>,
) {
    let stream: LinkStream = match &security {
        Some(s) => match s.accept(stream).await {
            Ok(s) => s,
            Err(e) => {
                tracing::info!(%peer, error = %e, "controller listener: TLS handshake failed");
                return;
            }
        },
        None => Box::new(stream),
    };
    let (read, write) = tokio::io::split(stream);
    let mut frames = FramedRead::new(read, codec());
    let mut out = transport::writer(write);
    let gate = security.as_ref().and_then(|s| s.gate(peer));
    let first = match gate {
        Some(mut gate) => {
            let passed = tokio::time::timeout(
                HANDSHAKE_TIMEOUT,
                authenticate(&mut gate, &mut frames, &mut out, &services),
            )
            .await;
            match passed {
                Ok(Some(first)) => first,
                Ok(None) => return,
                Err(_) => {
                    tracing::info!(%peer, "controller listener: no SASL authentication in time; closing");
                    return;
                }
            }
        }
        None => match frames.next().await {
            Some(Ok(f)) => f,
            _ => return,
        },
    };
    if let Some(sender) = transport::hello_sender(&first) {
        match services.raft {
            Some(inbox) => transport::serve_stream(frames, sender, inbox).await,
            None => tracing::warn!(
                sender,
                "a voter's Raft stream reached a node that is not a controller"
            ),
        }
        return;
    }
    if first.starts_with(FOLLOW_HELLO) {
        let Some(follow) = services.follow else {
            return;
        };
        while let Some(Ok(frame)) = frames.next().await {
            let Some(answer) = follow(frame.freeze()).await else {
                return;
            };
            if out.send(answer).await.is_err() {
                return;
            }
        }
        return;
    }
    // Kafka requests, answered one at a time in order.
    let mut next = Some(first);
    loop {
        let frame = match next.take() {
            Some(f) => f,
            None => match frames.next().await {
                Some(Ok(f)) => f,
                _ => return,
            },
        };
        let Some(answer) = (services.kafka)(frame.freeze()).await else {
            return;
        };
        if out.send(answer).await.is_err() {
            return;
        }
    }
}

/// Runs the SASL exchange of a connection (ApiVersions answered by the Kafka handler); the
/// first frame after it, or `None` when the connection is refused or goes away.
async fn authenticate<R: AsyncRead + Unpin, W: AsyncWrite + Unpin>(
    gate: &mut SaslGate,
    frames: &mut FramedRead<R, LengthDelimitedCodec>,
    out: &mut FramedWrite<W, LengthDelimitedCodec>,
    services: &Services,
) -> Option<BytesMut> {
    loop {
        let frame = frames.next().await?.ok()?;
        match gate.on_frame(frame.freeze()).await {
            GateStep::Forward(request) => {
                let answer = (services.kafka)(request).await?;
                out.send(answer).await.ok()?;
            }
            GateStep::Reply(answer) => out.send(answer).await.ok()?,
            GateStep::Authenticated(answer, principal) => {
                out.send(answer).await.ok()?;
                tracing::trace!(%principal, "controller listener: authenticated");
                break;
            }
            GateStep::Refuse(answer, why) => {
                if let Some(answer) = answer {
                    let _ = out.send(answer).await;
                }
                tracing::debug!(reason = %why, "controller listener: connection refused");
                return None;
            }
        }
    }
    match frames.next().await {
        Some(Ok(f)) => Some(f),
        _ => None,
    }
}
