//! One client connection: a reader task reads requests ahead (clients pipeline), this task
//! handles them strictly in order and writes each response before taking the next.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use kafka_net::server::RequestReader;
use tokio::io::{AsyncWriteExt, BufWriter};
use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, watch};

use crate::handler::{self, ConnectionContext, Incoming, Reply};
use crate::node::Broker;

pub(crate) async fn serve(
    broker: Arc<Broker>,
    sock: TcpStream,
    peer: SocketAddr,
    mut stop: watch::Receiver<bool>,
    queued: Arc<Semaphore>,
    listener: Arc<str>,
) {
    let _ = sock.set_nodelay(true);
    let (rd, wr) = sock.into_split();
    let (tx, mut rx) = mpsc::channel(broker.config.server.max_pipelined_requests);
    let max_frame = broker.config.server.socket_request_max_bytes;
    let budget = ReadAhead {
        connection: Arc::new(Semaphore::new(
            broker.config.server.connection_read_ahead_max_bytes,
        )),
        connection_max: broker.config.server.connection_read_ahead_max_bytes,
        broker: queued,
        broker_max: broker.config.server.queued_max_request_bytes,
    };
    // Set when the peer has shut its side down while requests wait for the read-ahead budget:
    // what is queued is dropped. A reader that ends otherwise (end of stream after the last
    // request) drops the sender without setting it, and queued requests are still handled.
    let (gone_tx, mut gone) = watch::channel(false);
    let reader = tokio::spawn(async move {
        let mut r = RequestReader::new(rd, max_frame);
        loop {
            let item = match r.next_frame().await {
                Ok(Some((frame, prefix))) => {
                    // Room for this request before the next is read: the socket is not read
                    // while the requests read ahead hold the budget.
                    let Some(held) = budget.reserve(frame.len(), r.get_ref()).await else {
                        let _ = gone_tx.send(true);
                        break;
                    };
                    Ok(Some((Incoming::read(frame, prefix), held)))
                }
                Ok(None) => Ok(None),
                Err(e) => Err(e),
            };
            let end = !matches!(item, Ok(Some(_)));
            if tx.send(item).await.is_err() || end {
                break;
            }
        }
    });
    let mut wr = BufWriter::with_capacity(64 * 1024, wr);
    // What this connection's requests are handled with: who the peer is, the listener, and
    // what the client announces (ApiVersions v3+).
    let mut connection = ConnectionContext::new(Some(peer), listener);
    tracing::debug!(%peer, "connection opened");
    let mut stopping = *stop.borrow();
    let max_idle = std::time::Duration::from_millis(broker.config.server.connections_max_idle_ms);
    let mut idle_since = tokio::time::Instant::now();
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
                Ok(()) = gone.changed() => {
                    tracing::debug!(%peer, "closing connection: the peer has gone");
                    break;
                }
                _ = stop.changed() => {
                    stopping = true;
                    reader.abort();
                    continue;
                }
                () = tokio::time::sleep_until(idle_since + max_idle) => {
                    // No whole request for connections.max.idle.ms (a partial frame does not
                    // count): the socket, its buffers and its slot are given back.
                    tracing::debug!(%peer, idle_ms = max_idle.as_millis() as u64,
                        "closing connection: idle for connections.max.idle.ms");
                    break;
                }
            }
        };
        let (incoming, _held) = match item {
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
        connection.observe(&incoming);
        let reply = tokio::select! {
            reply = handler::handle(&broker, &connection, incoming) => reply,
            // A long poll (or any wait) for a client that has gone is not finished: its
            // queued requests and their memory go now, not when the wait would have ended.
            Ok(()) = gone.changed() => {
                tracing::debug!(%peer, "closing connection: the peer has gone");
                break;
            }
        };
        match reply {
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
            client_software = %connection.software(),
            micros = started.elapsed().as_micros() as u64,
            "request"
        );
        idle_since = tokio::time::Instant::now();
    }
    reader.abort();
    let _ = wr.shutdown().await;
    tracing::debug!(%peer, "connection closed");
}

/// The read-ahead bounds of one connection: its own and the broker's, in bytes.
struct ReadAhead {
    connection: Arc<Semaphore>,
    connection_max: usize,
    broker: Arc<Semaphore>,
    broker_max: usize,
}

/// Budget held by a request read ahead, given back when it has been answered.
#[derive(Debug)]
struct Held {
    _connection: OwnedSemaphorePermit,
    _broker: OwnedSemaphorePermit,
}

impl ReadAhead {
    /// Waits until a request of `len` bytes fits in both budgets (one larger than a budget
    /// waits for all of it: it is read when nothing else is queued). `None` when the peer
    /// shut its side down meanwhile (looked at every 100 ms while waiting).
    async fn reserve(&self, len: usize, sock: &tokio::net::tcp::OwnedReadHalf) -> Option<Held> {
        let take = |max: usize| u32::try_from(len.clamp(1, max)).unwrap_or(u32::MAX);
        // The common case, without a timer: both budgets have room now.
        if let Ok(c) =
            Arc::clone(&self.connection).try_acquire_many_owned(take(self.connection_max))
        {
            if let Ok(b) = Arc::clone(&self.broker).try_acquire_many_owned(take(self.broker_max)) {
                return Some(Held {
                    _connection: c,
                    _broker: b,
                });
            }
        }
        let acquire = async {
            let c = Arc::clone(&self.connection)
                .acquire_many_owned(take(self.connection_max))
                .await
                .ok()?;
            let b = Arc::clone(&self.broker)
                .acquire_many_owned(take(self.broker_max))
                .await
                .ok()?;
            Some(Held {
                _connection: c,
                _broker: b,
            })
        };
        tokio::pin!(acquire);
        loop {
            tokio::select! {
                held = &mut acquire => return held,
                () = tokio::time::sleep(std::time::Duration::from_millis(100)) => {
                    let ready = futures::FutureExt::now_or_never(
                        sock.ready(tokio::io::Interest::READABLE),
                    );
                    if matches!(ready, Some(Ok(r)) if r.is_read_closed()) {
                        return None;
                    }
                }
            }
        }
    }
}
