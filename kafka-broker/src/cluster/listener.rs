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
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_util::codec::FramedRead;

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

/// Accepts connections until `shutdown` completes.
pub async fn serve(listener: TcpListener, services: Services, shutdown: impl Future<Output = ()>) {
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
                tokio::spawn(async move {
                    connection(stream, services).await;
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

async fn connection(stream: TcpStream, services: Services) {
    let (read, write) = stream.into_split();
    let mut frames = FramedRead::new(read, codec());
    let Some(Ok(first)) = frames.next().await else {
        return;
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
    let mut out = transport::writer(write);
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
