//! One client connection: a reader task reads requests ahead (clients pipeline), this task
//! handles them strictly in order and writes each response before taking the next.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use kafka_net::server::RequestReader;
use tokio::io::{AsyncWriteExt, BufWriter};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, watch};

use crate::broker::Broker;
use crate::handler::{self, Incoming, Reply};

pub(crate) async fn serve(
    broker: Arc<Broker>,
    sock: TcpStream,
    peer: SocketAddr,
    mut stop: watch::Receiver<bool>,
) {
    let _ = sock.set_nodelay(true);
    let (rd, wr) = sock.into_split();
    let (tx, mut rx) = mpsc::channel(broker.config.max_pipelined_requests);
    let max_frame = broker.config.socket_request_max_bytes;
    let reader = tokio::spawn(async move {
        let mut r = RequestReader::new(rd, max_frame);
        loop {
            let item = r
                .next_frame()
                .await
                .map(|f| f.map(|(frame, prefix)| Incoming::read(frame, prefix)));
            let end = !matches!(item, Ok(Some(_)));
            if tx.send(item).await.is_err() || end {
                break;
            }
        }
    });
    let mut wr = BufWriter::with_capacity(64 * 1024, wr);
    tracing::debug!(%peer, "connection opened");
    let mut stopping = *stop.borrow();
    loop {
        let item = if stopping {
            // Shutting down: answer what was already read, then close.
            match rx.try_recv() {
                Ok(item) => item,
                Err(_) => break,
            }
        } else {
            tokio::select! {
                item = rx.recv() => match item {
                    Some(item) => item,
                    None => break,
                },
                _ = stop.changed() => {
                    stopping = true;
                    reader.abort();
                    continue;
                }
            }
        };
        let incoming = match item {
            Ok(Some(req)) => req,
            Ok(None) => break,
            Err(e) => {
                tracing::debug!(%peer, error = %e, "closing connection: bad frame");
                break;
            }
        };
        let started = Instant::now();
        let prefix = incoming.prefix();
        let (api, version, corr) = (prefix.api_key, prefix.api_version, prefix.correlation_id);
        // Only read for the debug line below (a copy per request otherwise).
        let client_id = if tracing::enabled!(tracing::Level::DEBUG) {
            incoming.client_id()
        } else {
            None
        };
        match handler::dispatch(&broker, incoming).await {
            Reply::Chunks(chunks) => {
                let mut ok = true;
                for c in &chunks {
                    if wr.write_all(c).await.is_err() {
                        ok = false;
                        break;
                    }
                }
                if !ok || wr.flush().await.is_err() {
                    tracing::debug!(%peer, "closing connection: write failed");
                    break;
                }
            }
            Reply::Files(chunks) => {
                if let Err(e) = crate::sendfile::write_response(&mut wr, &chunks).await {
                    tracing::debug!(%peer, error = %e, "closing connection: fetch write failed");
                    break;
                }
                if wr.flush().await.is_err() {
                    tracing::debug!(%peer, "closing connection: write failed");
                    break;
                }
            }
            Reply::Nothing => {}
            Reply::Close(reason) => {
                tracing::debug!(%peer, api, version, correlation_id = corr, reason, "closing connection");
                break;
            }
        }
        tracing::debug!(
            %peer,
            api,
            version,
            correlation_id = corr,
            client_id = client_id.as_deref().unwrap_or(""),
            micros = started.elapsed().as_micros() as u64,
            "request"
        );
    }
    reader.abort();
    let _ = wr.shutdown().await;
    tracing::debug!(%peer, "connection closed");
}
