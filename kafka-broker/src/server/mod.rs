//! The network front: an accept loop with a connection limit, one task per connection, and
//! an orderly shutdown that finishes what is in flight.

mod connection;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;

use crate::broker::Broker;
use crate::error::BrokerError;

/// Serves `listener` until `shutdown` completes, then stops accepting, lets every connection
/// finish the requests it has read, and closes the broker (flushing logs, writing the
/// clean-shutdown marker).
pub async fn serve(
    listener: TcpListener,
    broker: Arc<Broker>,
    shutdown: impl Future<Output = ()>,
) -> Result<(), BrokerError> {
    let limit = Arc::new(Semaphore::new(broker.config.max_connections));
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut conns = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((sock, peer)) => {
                    let Ok(permit) = limit.clone().try_acquire_owned() else {
                        tracing::warn!(%peer, max = broker.config.max_connections, "connection limit reached; refusing");
                        drop(sock);
                        continue;
                    };
                    let b = broker.clone();
                    let stop = stop_rx.clone();
                    conns.spawn(async move {
                        connection::serve(b, sock, peer, stop).await;
                        drop(permit);
                    });
                }
                Err(e) => {
                    // Out of file descriptors and similar: back off instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
    tracing::info!("shutting down: no new connections; finishing requests in flight");
    drop(listener);
    let _ = stop_tx.send(true);
    let drained = tokio::time::timeout(Duration::from_secs(30), async {
        while conns.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!("connections still busy after 30 s; closing them");
        conns.abort_all();
    }
    broker.close()
}
