//! One client connection: a reader task reads requests ahead (clients pipeline), this task
//! handles them strictly in order and writes each response before taking the next.
//!
//! On a TLS listener the handshake comes first (bounded by [`HANDSHAKE_TIMEOUT`] and
//! `connections.max.idle.ms`); a client
//! certificate's subject becomes the connection's principal. Fetch data then goes through
//! the TLS session (read from the segment files in pieces) instead of `sendfile`.

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use kafka_net::server::RequestReader;
use tokio::io::{AsyncRead, AsyncWriteExt, BufWriter, ReadHalf, WriteHalf};
use tokio::net::TcpStream;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, watch};
use tokio_rustls::server::TlsStream;

use super::sasl::{Gate, SaslGate, SaslListener};
use super::tls::{HANDSHAKE_TIMEOUT, TlsListener, subject_dn};
use crate::handler::{self, ConnectionContext, Incoming, Principal, Reply};
use crate::node::Broker;
use crate::sendfile::Chunk;

/// The listener a connection came in on: its name and, on SSL and SASL_SSL listeners, its
/// TLS configuration.
#[derive(Debug)]
pub(crate) struct On {
    pub(crate) name: Arc<str>,
    pub(crate) tls: Option<Arc<TlsListener>>,
    pub(crate) sasl: Option<Arc<SaslListener>>,
}

pub(crate) async fn serve(
    broker: Arc<Broker>,
    sock: TcpStream,
    peer: SocketAddr,
    stop: watch::Receiver<bool>,
    queued: Arc<Semaphore>,
    on: Arc<On>,
) {
    let _ = sock.set_nodelay(true);
    let mut connection = ConnectionContext::new(Some(peer), Arc::clone(&on.name));
    let sasl = on.sasl.clone().map(SaslGate::new);
    let Some(tls) = &on.tls else {
        let (rd, wr) = sock.into_split();
        let out = Out::Plain(BufWriter::with_capacity(64 * 1024, wr));
        return run(broker, rd, out, peer, stop, queued, connection, sasl).await;
    };
    // Bounded by connections.max.idle.ms too: a handshake is not a request.
    let limit = HANDSHAKE_TIMEOUT.min(std::time::Duration::from_millis(
        broker.config.server.connections_max_idle_ms,
    ));
    let stream = match tokio::time::timeout(limit, tls.acceptor().accept(sock)).await {
        Ok(Ok(stream)) => stream,
        Ok(Err(e)) => {
            tracing::debug!(%peer, listener = %on.name, error = %e, "TLS handshake failed");
            return;
        }
        Err(_) => {
            tracing::debug!(%peer, listener = %on.name, "TLS handshake not finished in time; closing");
            return;
        }
    };
    let (_, session) = stream.get_ref();
    if let Some(dn) = session
        .peer_certificates()
        .and_then(|certs| certs.first())
        .and_then(|cert| subject_dn(cert))
    {
        // On SSL listeners the certificate names the principal; on SASL_SSL, SASL does.
        if on.sasl.is_none() {
            match tls.principal_name(&dn) {
                Ok(name) => {
                    tracing::debug!(%peer, %dn, principal = %name, "TLS client certificate");
                    connection.authenticated(Principal::user(name));
                }
                Err(e) => {
                    tracing::info!(%peer, %dn, error = %e, "closing connection: no principal for the client certificate");
                    return;
                }
            }
        }
    }
    let (rd, wr) = tokio::io::split(stream);
    let out = Out::Tls(BufWriter::with_capacity(64 * 1024, wr));
    run(broker, rd, out, peer, stop, queued, connection, sasl).await;
}

/// Where responses go: the socket (file data with `sendfile`) or a TLS session.
enum Out {
    Plain(BufWriter<OwnedWriteHalf>),
    Tls(BufWriter<WriteHalf<TlsStream<TcpStream>>>),
}

impl Out {
    async fn write_chunks(&mut self, chunks: &[Bytes]) -> io::Result<()> {
        for c in chunks {
            match self {
                Out::Plain(w) => w.write_all(c).await?,
                Out::Tls(w) => w.write_all(c).await?,
            }
        }
        self.flush().await
    }

    async fn write_files(&mut self, chunks: &[Chunk]) -> io::Result<()> {
        match self {
            Out::Plain(w) => crate::sendfile::write_response(w, chunks).await?,
            Out::Tls(w) => crate::sendfile::write_copied(w, chunks).await?,
        }
        self.flush().await
    }

    async fn flush(&mut self) -> io::Result<()> {
        match self {
            Out::Plain(w) => w.flush().await,
            Out::Tls(w) => w.flush().await,
        }
    }

    async fn shutdown(&mut self) {
        let _ = match self {
            Out::Plain(w) => w.shutdown().await,
            Out::Tls(w) => w.shutdown().await,
        };
    }
}

/// Whether the peer has shut its side of the connection down, looked at while a request
/// waits for read-ahead budget.
trait ReadClosed {
    fn read_closed(&self) -> bool;
}

impl ReadClosed for OwnedReadHalf {
    fn read_closed(&self) -> bool {
        let ready = futures::FutureExt::now_or_never(self.ready(tokio::io::Interest::READABLE));
        matches!(ready, Some(Ok(r)) if r.is_read_closed())
    }
}

impl<T> ReadClosed for ReadHalf<T> {
    /// Not seen through a TLS session: the request waits for its budget, and the reader
    /// notices the end of the stream once it reads again.
    fn read_closed(&self) -> bool {
        false
    }
}

#[allow(clippy::too_many_arguments)] // one connection's parts, handed over once
async fn run<R>(
    broker: Arc<Broker>,
    rd: R,
    mut wr: Out,
    peer: SocketAddr,
    mut stop: watch::Receiver<bool>,
    queued: Arc<Semaphore>,
    mut connection: ConnectionContext,
    mut sasl: Option<SaslGate>,
) where
    R: AsyncRead + ReadClosed + Unpin + Send + Sync + 'static,
{
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
    // On a SASL listener a frame without a request header may be a raw SASL token (after a
    // SaslHandshake v0): it is handed over as it is, and the gate decides.
    let raw_tokens = sasl.is_some();
    let reader = tokio::spawn(async move {
        let mut r = RequestReader::new(rd, max_frame);
        loop {
            let item = match r.next_bytes().await {
                Ok(Some(frame)) => {
                    let incoming = match kafka_protocol::frame::peek_request(&frame) {
                        Ok(prefix) => Incoming::read(frame, prefix),
                        Err(_) if raw_tokens => Incoming::Unframed(frame),
                        Err(e) => {
                            let why = format!("request frame without a header: {e}");
                            let _ = tx.send(Err(kafka_net::NetError::Closed(Some(why)))).await;
                            break;
                        }
                    };
                    // Room for this request before the next is read: the socket is not read
                    // while the requests read ahead hold the budget.
                    let len = incoming.frame().len();
                    let Some(held) = budget.reserve(len, r.get_ref()).await else {
                        let _ = gone_tx.send(true);
                        break;
                    };
                    Ok(Some((incoming, held)))
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
        if let Some(gate) = sasl.as_mut() {
            let (reply, close) = match gate.check(&broker, &incoming, &mut connection).await {
                Gate::Pass => (None, None),
                Gate::Reply(reply) => (Some(reply), None),
                Gate::ReplyThenClose(reply, why) => (Some(reply), Some(why)),
                Gate::Close(why) => (None, Some(why)),
            };
            if let Some(Reply::Chunks(chunks)) = &reply {
                if wr.write_chunks(chunks).await.is_err() {
                    tracing::debug!(%peer, "closing connection: write failed");
                    break;
                }
            }
            if let Some(why) = close {
                tracing::debug!(%peer, api, version, correlation_id = corr, reason = %why, "closing connection");
                break;
            }
            if reply.is_some() {
                idle_since = tokio::time::Instant::now();
                continue;
            }
        }
        if matches!(incoming, Incoming::Unframed(_)) {
            tracing::debug!(%peer, "closing connection: a frame without a request header");
            break;
        }
        let answer = tokio::select! {
            answer = handler::answer(&broker, &connection, incoming) => answer,
            // A long poll (or any wait) for a client that has gone is not finished: its
            // queued requests and their memory go now, not when the wait would have ended.
            Ok(()) = gone.changed() => {
                tracing::debug!(%peer, "closing connection: the peer has gone");
                break;
            }
        };
        match answer.reply {
            Reply::Chunks(chunks) => {
                if wr.write_chunks(&chunks).await.is_err() {
                    tracing::debug!(%peer, "closing connection: write failed");
                    break;
                }
            }
            Reply::Files(chunks) => {
                if let Err(e) = wr.write_files(&chunks).await {
                    tracing::debug!(%peer, error = %e, "closing connection: fetch write failed");
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
            throttle_ms = answer.mute_ms,
            "request"
        );
        if answer.mute_ms > 0 && !stopping {
            // Over a quota: the answer carries the throttle time and went out first; the
            // client's next requests wait that long (KIP-219's muted channel).
            let muted = std::time::Duration::from_millis(answer.mute_ms);
            tokio::select! {
                () = tokio::time::sleep(muted) => {}
                Ok(()) = gone.changed() => {
                    tracing::debug!(%peer, "closing connection: the peer has gone");
                    break;
                }
                _ = stop.changed() => {
                    stopping = true;
                    reader.abort();
                }
            }
        }
        idle_since = tokio::time::Instant::now();
    }
    reader.abort();
    wr.shutdown().await;
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
    async fn reserve(&self, len: usize, sock: &impl ReadClosed) -> Option<Held> {
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
                    if sock.read_closed() {
                        return None;
                    }
                }
            }
        }
    }
}
