//! A connection to one broker: a tokio task that moves bytes between the socket and a
//! [`ConnState`], and a cheap handle that sends requests through it.
//!
//! The task makes no protocol decisions. It takes a new request only when the in-flight window
//! has room (callers wait, they do not get an error), writes frames with vectored writes (large
//! record sets are not copied), reads and decodes responses as they come, and drives timeouts.
//! Dropping a caller's future does not disturb the connection: its request still goes out in
//! order and its response is read and dropped.
//!
//! After connecting it runs the TLS handshake when `security.protocol` asks for TLS, then the
//! ApiVersions handshake, asking [`crate::versions`] what each answer means. Over TLS the task
//! drives the rustls connection itself in the same readiness loop: plaintext frames go into
//! rustls, records come out to the socket (see [`Driver::write_some`]).

use std::collections::VecDeque;
use std::io::{IoSlice, Read, Write};
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, RequestBody, ResponseBody};
use kafka_protocol::{KStr, Response};
use tokio::io::Interest;
use tokio::net::{TcpSocket, TcpStream, lookup_host};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use tokio_util::codec::Decoder;

use crate::codec::KafkaCodec;
use crate::conn_state::{ConnConfig, ConnState, Outcome};
use crate::error::NetError;
use crate::security::ClientSecurity;
use crate::versions::{ApiVersions, Negotiation, on_answer};

/// Settings for opening a connection.
#[derive(Debug, Clone)]
pub struct ConnectionConfig {
    pub conn: ConnConfig,
    /// `socket.connection.setup.timeout.ms`.
    pub connect_timeout: Duration,
    /// `connections.max.idle.ms`: close after this long with nothing in flight.
    pub idle_timeout: Option<Duration>,
    /// `send.buffer.bytes` (`None` or -1: the OS default).
    pub send_buffer: Option<u32>,
    /// `receive.buffer.bytes`.
    pub receive_buffer: Option<u32>,
    /// Sent in ApiVersions v3+ as `client_software_name`.
    pub software_name: KStr,
    pub software_version: KStr,
    /// Negotiate versions with ApiVersions right after connecting.
    pub handshake: bool,
    /// `security.protocol` and what it needs (the TLS configuration).
    pub security: ClientSecurity,
}

impl Default for ConnectionConfig {
    fn default() -> Self {
        Self {
            conn: ConnConfig::default(),
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Some(Duration::from_secs(9 * 60)),
            send_buffer: Some(128 * 1024),
            receive_buffer: Some(64 * 1024),
            software_name: KStr::from_static("kafka-rs"),
            software_version: KStr::from_static(env!("CARGO_PKG_VERSION")),
            handshake: true,
            security: ClientSecurity::default(),
        }
    }
}

struct Command {
    body: RequestBody,
    version: i16,
    reply: oneshot::Sender<Outcome>,
}

/// A handle to a connection; clone it freely. The connection closes when every handle is
/// dropped (after finishing what is in flight), on [`Connection::close`], or on failure.
#[derive(Debug, Clone)]
pub struct Connection {
    tx: mpsc::UnboundedSender<Command>,
    addr: Arc<str>,
    versions: Option<Arc<ApiVersions>>,
    /// Requests sent through this connection and not finished (for least-loaded choices).
    load: Arc<AtomicUsize>,
    /// Why the connection task ended, once it has: what a request sent after that fails with.
    ended: Arc<OnceLock<NetError>>,
    /// Held (shared) while a request is handed to the connection task; taken whole by a SASL
    /// re-authentication (KIP-368), so that no request goes out while it runs.
    gate: Arc<tokio::sync::RwLock<()>>,
}

/// What a re-authentication task keeps of its connection: not a handle, so that the
/// connection still closes when its last handle goes.
struct WeakConnection {
    tx: mpsc::WeakUnboundedSender<Command>,
    addr: Arc<str>,
    versions: Option<Arc<ApiVersions>>,
    load: Arc<AtomicUsize>,
    ended: Arc<OnceLock<NetError>>,
    gate: Arc<tokio::sync::RwLock<()>>,
}

impl WeakConnection {
    fn upgrade(&self) -> Option<Connection> {
        Some(Connection {
            tx: self.tx.upgrade()?,
            addr: Arc::clone(&self.addr),
            versions: self.versions.clone(),
            load: Arc::clone(&self.load),
            ended: Arc::clone(&self.ended),
            gate: Arc::clone(&self.gate),
        })
    }
}

/// Decrements the load counter when a request finishes or its caller goes away.
struct LoadGuard(Arc<AtomicUsize>);

impl Drop for LoadGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Connection {
    /// Connects to `addr` (`host:port`) and, unless disabled, negotiates api versions.
    pub async fn connect(addr: &str, cfg: ConnectionConfig) -> Result<Self, NetError> {
        let stream = tokio::time::timeout(cfg.connect_timeout, open(addr, &cfg))
            .await
            .map_err(|_| NetError::ConnectTimeout {
                addr: addr.to_owned(),
                after: cfg.connect_timeout,
            })??;
        let mut conn = match &cfg.security.tls {
            Some(config) => {
                let tls = tokio::time::timeout(
                    cfg.connect_timeout,
                    tls_handshake(stream, addr, std::sync::Arc::clone(config)),
                )
                .await
                .map_err(|_| NetError::ConnectTimeout {
                    addr: addr.to_owned(),
                    after: cfg.connect_timeout,
                })??;
                Self::spawn(tls.0, Some(Box::new(tls.1)), addr, &cfg)
            }
            None => Self::from_stream(stream, addr, &cfg),
        };
        if cfg.handshake {
            let versions = negotiate(&conn, &cfg).await?;
            conn.versions = Some(Arc::new(versions));
        }
        if let Some(login) = &cfg.security.sasl {
            if let Some(lifetime) = authenticate(&conn, login).await? {
                conn.reauthenticate_before(lifetime, login.clone());
            }
        }
        Ok(conn)
    }

    /// Runs a connection over an already connected stream (no handshake).
    pub fn from_stream(stream: TcpStream, addr: &str, cfg: &ConnectionConfig) -> Self {
        Self::spawn(stream, None, addr, cfg)
    }

    fn spawn(
        stream: TcpStream,
        tls: Option<Box<rustls::ClientConnection>>,
        addr: &str,
        cfg: &ConnectionConfig,
    ) -> Self {
        // Unbounded: the connection task takes a command only when the in-flight window has
        // room, and every caller waits for its answer, so what waits here is bounded by the
        // callers themselves. (A bounded channel made a waiting sender depend on a permit
        // hand-off that the producer's tests saw lost under load.)
        let (tx, rx) = mpsc::unbounded_channel();
        let ended = Arc::new(OnceLock::new());
        let driver = Driver {
            ended: Arc::clone(&ended),
            stream,
            tls,
            state: ConnState::new(cfg.conn.clone()),
            codec: KafkaCodec::new(cfg.conn.max_frame),
            rx,
            rx_open: true,
            read_buf: BytesMut::with_capacity(16 * 1024),
            write_queue: VecDeque::new(),
            idle_timeout: cfg.idle_timeout,
            addr: addr.to_owned(),
        };
        tokio::spawn(driver.run());
        Self {
            tx,
            addr: addr.into(),
            versions: None,
            load: Arc::new(AtomicUsize::new(0)),
            ended,
            gate: Arc::new(tokio::sync::RwLock::new(())),
        }
    }

    /// The address this connection was opened to.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// The versions negotiated with the broker (after the handshake).
    pub fn versions(&self) -> Option<&ApiVersions> {
        self.versions.as_deref()
    }

    /// The version to use for `api`: the highest both sides support.
    pub fn version_for(&self, api: ApiKey) -> Result<i16, NetError> {
        match &self.versions {
            Some(v) => v.version_for(api),
            None => Ok(crate::versions::client_max(api)),
        }
    }

    /// Requests in flight or waiting for room on this connection.
    pub fn load(&self) -> usize {
        self.load.load(Ordering::Relaxed)
    }

    /// Whether the connection task is gone (closed or failed).
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }

    /// Sends a request at `version` and waits for its outcome. Waits for room in the
    /// in-flight window first.
    pub async fn send(&self, body: RequestBody, version: i16) -> Outcome {
        let (load, rx) = {
            // Only while the request is handed over: a re-authentication waits for that, and
            // requests handed over before it are answered before it (the broker serves one
            // connection's requests in order).
            let _shared = self.gate.read().await;
            self.queue(body, version)?
        };
        self.answer(load, rx).await
    }

    /// [`Self::send`] without waiting for a re-authentication (the re-authentication's own
    /// requests).
    async fn send_ungated(&self, body: RequestBody, version: i16) -> Outcome {
        let (load, rx) = self.queue(body, version)?;
        self.answer(load, rx).await
    }

    /// Hands a request to the connection task; its answer comes on the receiver.
    fn queue(
        &self,
        body: RequestBody,
        version: i16,
    ) -> Result<(LoadGuard, oneshot::Receiver<Outcome>), NetError> {
        self.load.fetch_add(1, Ordering::Relaxed);
        let load = LoadGuard(self.load.clone());
        let (reply, rx) = oneshot::channel();
        self.tx
            .send(Command {
                body,
                version,
                reply,
            })
            .map_err(|_| self.ended_error())?;
        Ok((load, rx))
    }

    async fn answer(&self, load: LoadGuard, rx: oneshot::Receiver<Outcome>) -> Outcome {
        let _load = load;
        rx.await.map_err(|_| self.ended_error())?
    }

    /// Queues a request at `version` and returns as soon as the connection task has it, with
    /// a future of its outcome. Requests queued one after another by one task go on the wire
    /// in that order (what a producer needs to keep batches of a partition in order while
    /// several are in flight). Waits only while a SASL re-authentication has the connection:
    /// the connection task takes queued requests as its in-flight window frees up.
    pub async fn enqueue(
        &self,
        body: RequestBody,
        version: i16,
    ) -> Result<impl Future<Output = Outcome> + Send + 'static, NetError> {
        let (load, rx) = {
            let _shared = self.gate.read().await;
            self.queue(body, version)?
        };
        let ended = Arc::clone(&self.ended);
        Ok(async move {
            let _load = load;
            rx.await.map_err(|_| ended_error(&ended))?
        })
    }

    /// Sends a request at the negotiated version and returns the response body.
    pub async fn request(&self, body: RequestBody) -> Result<ResponseBody, NetError> {
        let api = body.api_key();
        let version = self.version_for(api)?;
        self.request_at(body, version).await
    }

    /// Sends a request at `version` and returns the response body.
    pub async fn request_at(
        &self,
        body: RequestBody,
        version: i16,
    ) -> Result<ResponseBody, NetError> {
        let api = body.api_key();
        match self.send(body, version).await? {
            Some(Response { body, .. }) => Ok(body),
            None => Err(NetError::UnsupportedApi {
                api,
                detail: Some("request expects no response".into()),
            }),
        }
    }

    /// Sends a request at `version` without the re-authentication gate.
    async fn request_ungated(
        &self,
        body: RequestBody,
        version: i16,
    ) -> Result<ResponseBody, NetError> {
        let api = body.api_key();
        match self.send_ungated(body, version).await? {
            Some(Response { body, .. }) => Ok(body),
            None => Err(NetError::UnsupportedApi {
                api,
                detail: Some("request expects no response".into()),
            }),
        }
    }

    fn downgrade(&self) -> WeakConnection {
        WeakConnection {
            tx: self.tx.downgrade(),
            addr: Arc::clone(&self.addr),
            versions: self.versions.clone(),
            load: Arc::clone(&self.load),
            ended: Arc::clone(&self.ended),
            gate: Arc::clone(&self.gate),
        }
    }

    /// KIP-368: re-authenticates at a random point between 85 % and 95 % of the session
    /// lifetime the broker gave (as the Java client does), with the connection to itself:
    /// new requests wait until it is done, and those already sent are answered before it (in
    /// order, as the broker serves a connection). Again for each new session. A failed
    /// re-authentication is logged; the broker closes the connection after it, and the
    /// cluster client opens a new one.
    fn reauthenticate_before(&self, lifetime: Duration, login: crate::security::SaslLogin) {
        let weak = self.downgrade();
        tokio::spawn(async move {
            let mut lifetime = lifetime;
            loop {
                let nanos = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.subsec_nanos());
                let share = 0.85 + 0.10 * (f64::from(nanos % 1000) / 1000.0);
                tokio::time::sleep(lifetime.mul_f64(share)).await;
                let Some(conn) = weak.upgrade() else { return };
                if conn.is_closed() {
                    return;
                }
                let _whole = conn.gate.write().await;
                match authenticate_with(&conn, &login, true).await {
                    Ok(Some(next)) => {
                        tracing::debug!(addr = %conn.addr, "re-authenticated (KIP-368)");
                        lifetime = next;
                    }
                    Ok(None) => return,
                    Err(e) => {
                        tracing::warn!(addr = %conn.addr, error = %e, "re-authentication failed");
                        return;
                    }
                }
            }
        });
    }

    /// The error a request gets once the connection task has ended.
    fn ended_error(&self) -> NetError {
        ended_error(&self.ended)
    }

    /// Closes the connection; requests in flight fail with "closed".
    pub fn close(self) {
        drop(self);
    }
}

/// Why a connection task ended (the failure that ended it), or plain "closed".
fn ended_error(ended: &OnceLock<NetError>) -> NetError {
    match ended.get() {
        Some(e @ NetError::Closed(_)) => e.clone(),
        Some(e) => NetError::Poisoned(Arc::new(e.clone())),
        None => NetError::Closed(None),
    }
}

async fn open(addr: &str, cfg: &ConnectionConfig) -> Result<TcpStream, NetError> {
    let mut last = None;
    for sa in lookup_host(addr).await? {
        let socket = if sa.is_ipv4() {
            TcpSocket::new_v4()?
        } else {
            TcpSocket::new_v6()?
        };
        if let Some(n) = cfg.send_buffer {
            socket.set_send_buffer_size(n)?;
        }
        if let Some(n) = cfg.receive_buffer {
            socket.set_recv_buffer_size(n)?;
        }
        match socket.connect(sa).await {
            Ok(s) => {
                s.set_nodelay(true)?;
                return Ok(s);
            }
            Err(e) => last = Some(e),
        }
    }
    Err(last
        .map(NetError::from)
        .unwrap_or_else(|| NetError::Config(format!("{addr} resolves to no address"))))
}

/// The TLS handshake over a connected socket; the rustls connection is then driven by the
/// connection task. A refused certificate or protocol is [`NetError::Tls`]: not retried.
async fn tls_handshake(
    stream: TcpStream,
    addr: &str,
    config: Arc<rustls::ClientConfig>,
) -> Result<(TcpStream, rustls::ClientConnection), NetError> {
    let name = crate::tls::server_name(addr).map_err(|e| NetError::Config(e.to_string()))?;
    let connector = tokio_rustls::TlsConnector::from(config);
    match connector.connect(name, stream).await {
        Ok(tls) => Ok(tls.into_inner()),
        Err(e) => {
            // rustls' own errors (an untrusted certificate, no common protocol) come wrapped
            // in an io::Error of kind InvalidData; a broken socket is an ordinary i/o error.
            if e.kind() == std::io::ErrorKind::InvalidData {
                Err(NetError::Tls {
                    addr: addr.to_owned(),
                    reason: e.to_string(),
                })
            } else {
                Err(e.into())
            }
        }
    }
}

/// The socket as blocking-style `Read`/`Write` for rustls: each call is one non-blocking
/// try, `WouldBlock` when the socket is not ready.
struct TryIo<'a>(&'a TcpStream);

impl Read for TryIo<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.try_read(buf)
    }
}

impl Write for TryIo<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.try_write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

struct Driver {
    /// Set to the error that ended the task when it ends.
    ended: Arc<OnceLock<NetError>>,
    stream: TcpStream,
    /// The TLS session when the connection runs over TLS.
    tls: Option<Box<rustls::ClientConnection>>,
    state: ConnState<oneshot::Sender<Outcome>>,
    codec: KafkaCodec,
    rx: mpsc::UnboundedReceiver<Command>,
    rx_open: bool,
    read_buf: BytesMut,
    write_queue: VecDeque<Bytes>,
    idle_timeout: Option<Duration>,
    addr: String,
}

/// At most this many chunks per vectored write.
const MAX_IOV: usize = 64;

impl Driver {
    async fn run(mut self) {
        let mut last_busy = Instant::now();
        loop {
            while let Some(chunks) = self.state.poll_transmit() {
                self.write_queue.extend(chunks);
            }
            while let Some((reply, outcome)) = self.state.poll_event() {
                // The caller may have gone away; its response is dropped.
                let _ = reply.send(outcome);
            }
            if self.state.is_closed() {
                break;
            }
            if !self.rx_open && self.state.in_flight() == 0 && self.write_queue.is_empty() {
                self.state
                    .close(NetError::Closed(Some("all handles dropped".into())));
                continue;
            }
            if self.state.in_flight() > 0 {
                last_busy = Instant::now();
            }
            let tls_wants_write = self.tls.as_ref().is_some_and(|t| t.wants_write());
            let interest = if self.write_queue.is_empty() && !tls_wants_write {
                Interest::READABLE
            } else {
                Interest::READABLE | Interest::WRITABLE
            };
            let timeout = self.state.poll_timeout().map(Instant::from_std);
            // A quota's throttle (KIP-219): no new request before it ends.
            let throttled = self
                .state
                .throttled_until(Instant::now().into_std())
                .map(Instant::from_std);
            let idle_deadline = self
                .idle_timeout
                .filter(|_| self.state.in_flight() == 0)
                .map(|d| last_busy + d);
            tokio::select! {
                cmd = self.rx.recv(), if self.rx_open && self.state.can_send() && throttled.is_none() => match cmd {
                    Some(c) => {
                        if c.reply.is_closed() {
                            continue; // Caller gave up before it was sent.
                        }
                        if let Err((reply, e)) = self.state.send(&c.body, c.version, c.reply, Instant::now().into_std()) {
                            let _ = reply.send(Err(e));
                        }
                        last_busy = Instant::now();
                    }
                    None => self.rx_open = false,
                },
                ready = self.stream.ready(interest) => match ready {
                    Ok(r) => {
                        if r.is_writable() {
                            self.write_some();
                        }
                        if r.is_readable() {
                            self.read_some();
                        }
                    }
                    Err(e) => self.state.close(e.into()),
                },
                _ = sleep_until(throttled), if throttled.is_some() => {}
                _ = sleep_until(timeout), if timeout.is_some() => {
                    self.state.handle_timeout(Instant::now().into_std());
                }
                _ = sleep_until(idle_deadline), if idle_deadline.is_some() => {
                    tracing::debug!(addr = %self.addr, "closing idle connection");
                    self.state.close(NetError::Closed(Some("idle".into())));
                }
            }
        }
        // Fail whatever callers are still queued. The reason is set first: a caller that
        // finds the channel closed reads it.
        let err = self
            .state
            .error()
            .cloned()
            .unwrap_or(NetError::Closed(None));
        let _ = self.ended.set(err.clone());
        self.rx.close();
        while let Ok(c) = self.rx.try_recv() {
            let _ = c.reply.send(Err(NetError::Poisoned(Arc::new(err.clone()))));
        }
    }

    fn write_some(&mut self) {
        if self.tls.is_some() {
            self.write_some_tls();
            return;
        }
        while !self.write_queue.is_empty() {
            let slices: Vec<IoSlice<'_>> = self
                .write_queue
                .iter()
                .take(MAX_IOV)
                .map(|b| IoSlice::new(b))
                .collect();
            match self.stream.try_write_vectored(&slices) {
                Ok(0) => {
                    self.state
                        .close(NetError::Closed(Some("socket accepted no bytes".into())));
                    return;
                }
                Ok(mut n) => {
                    while n > 0 {
                        let Some(front) = self.write_queue.front_mut() else {
                            break;
                        };
                        if n >= front.len() {
                            n -= front.len();
                            self.write_queue.pop_front();
                        } else {
                            front.advance(n);
                            n = 0;
                        }
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(e) => {
                    self.state.close(e.into());
                    return;
                }
            }
        }
    }

    /// Over TLS: queued frames go into the session as plaintext (as much as its buffer takes)
    /// and its records to the socket, until the socket is full or nothing is left.
    fn write_some_tls(&mut self) {
        let Some(tls) = self.tls.as_mut() else {
            return;
        };
        loop {
            while let Some(front) = self.write_queue.front_mut() {
                match tls.writer().write(front) {
                    Ok(0) => break,
                    Ok(n) if n >= front.len() => {
                        self.write_queue.pop_front();
                    }
                    Ok(n) => front.advance(n),
                    Err(e) => {
                        self.state.close(e.into());
                        return;
                    }
                }
            }
            if !tls.wants_write() {
                return;
            }
            match tls.write_tls(&mut TryIo(&self.stream)) {
                Ok(0) => {
                    self.tls_closed(NetError::Closed(Some("socket accepted no bytes".into())));
                    return;
                }
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(e) => {
                    self.tls_closed(e.into());
                    return;
                }
            }
        }
    }

    /// Over TLS: records from the socket into the session, the plaintext out of it into the
    /// read buffer, then frames as usual.
    fn read_some_tls(&mut self) {
        let Some(tls) = self.tls.as_mut() else {
            return;
        };
        match tls.read_tls(&mut TryIo(&self.stream)) {
            Ok(0) => {
                self.tls_closed(NetError::Closed(Some("closed by the broker".into())));
                return;
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
            Err(e) => {
                self.tls_closed(e.into());
                return;
            }
        }
        if let Err(e) = tls.process_new_packets() {
            // Send the alert rustls queued, then give up on the connection.
            let _ = tls.write_tls(&mut TryIo(&self.stream));
            self.state.close(NetError::Tls {
                addr: self.addr.clone(),
                reason: e.to_string(),
            });
            return;
        }
        loop {
            let start = self.read_buf.len();
            self.read_buf.resize(start + 16 * 1024, 0);
            let got = tls.reader().read(&mut self.read_buf[start..]);
            match got {
                Ok(0) => {
                    self.read_buf.truncate(start);
                    self.state
                        .close(NetError::Closed(Some("closed by the broker".into())));
                    return;
                }
                Ok(n) => self.read_buf.truncate(start + n),
                Err(e) => {
                    self.read_buf.truncate(start);
                    if e.kind() != std::io::ErrorKind::WouldBlock {
                        self.state.close(e.into());
                        return;
                    }
                    break;
                }
            }
        }
        self.decode_frames();
    }

    /// The socket failed or ended on a TLS connection: the broker may have said why in an
    /// alert first (one refusing our certificate sends `certificate_required` or
    /// `unknown_ca`, then closes), and that is the error to report.
    fn tls_closed(&mut self, fallback: NetError) {
        if let Some(tls) = self.tls.as_mut() {
            while let Ok(n) = tls.read_tls(&mut TryIo(&self.stream)) {
                if n == 0 {
                    break;
                }
            }
            if let Err(e) = tls.process_new_packets() {
                self.state.close(NetError::Tls {
                    addr: self.addr.clone(),
                    reason: e.to_string(),
                });
                return;
            }
        }
        self.state.close(fallback);
    }

    fn decode_frames(&mut self) {
        loop {
            match self.codec.decode(&mut self.read_buf) {
                Ok(Some(frame)) => self.state.handle_frame(frame, Instant::now().into_std()),
                Ok(None) => break,
                Err(e) => {
                    self.state.close(e);
                    break;
                }
            }
            if self.state.is_closed() {
                break;
            }
        }
    }

    fn read_some(&mut self) {
        if self.tls.is_some() {
            self.read_some_tls();
            return;
        }
        if self.read_buf.capacity() - self.read_buf.len() < 4096 {
            self.read_buf.reserve(16 * 1024);
        }
        match self.stream.try_read_buf(&mut self.read_buf) {
            Ok(0) => {
                self.state
                    .close(NetError::Closed(Some("closed by the broker".into())));
            }
            Ok(_) => self.decode_frames(),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => self.state.close(e.into()),
        }
    }
}

async fn sleep_until(t: Option<Instant>) {
    match t {
        Some(t) => tokio::time::sleep_until(t).await,
        None => std::future::pending().await,
    }
}

/// Checks a top-level error code of a response (defined beside [`NetError`]).
pub use crate::error::check;

/// SaslHandshake v1 then SaslAuthenticate until the mechanism is done (KIP-152). Every failure
/// is [`NetError::Authentication`]: the broker closes the connection after it. The session
/// lifetime the broker gave, when it gave one (KIP-368).
async fn authenticate(
    conn: &Connection,
    login: &crate::security::SaslLogin,
) -> Result<Option<Duration>, NetError> {
    authenticate_with(conn, login, false).await
}

/// [`authenticate`]; `reauth`: a re-authentication, whose requests do not wait for the gate it
/// holds.
async fn authenticate_with(
    conn: &Connection,
    login: &crate::security::SaslLogin,
    reauth: bool,
) -> Result<Option<Duration>, NetError> {
    use kafka_auth::sasl::{ClientExchange, ClientStep};
    use kafka_protocol::messages::{SaslAuthenticateRequest, SaslHandshakeRequest};
    let request = |body: RequestBody, version: i16| async move {
        if reauth {
            conn.request_ungated(body, version).await
        } else {
            conn.request_at(body, version).await
        }
    };
    let failed = |reason: String| NetError::Authentication {
        addr: conn.addr().to_owned(),
        reason,
    };
    let mechanism = login.mechanism.name();
    let version = conn.version_for(ApiKey::SaslHandshake)?;
    if version < 1 {
        return Err(failed(
            "the broker offers only SaslHandshake v0 (raw tokens)".into(),
        ));
    }
    let body = request(
        RequestBody::SaslHandshake(SaslHandshakeRequest {
            mechanism: KStr::from_static(mechanism),
        }),
        version,
    )
    .await?;
    let ResponseBody::SaslHandshake(hs) = body else {
        return Err(NetError::BadResponse(
            "SaslHandshake answered with another api".into(),
        ));
    };
    if hs.error_code != 0 {
        let enabled: Vec<String> = hs.mechanisms.iter().map(ToString::to_string).collect();
        return Err(failed(format!(
            "{} (mechanism {mechanism}; the broker enables {})",
            kafka_protocol::error_code::ErrorCode(hs.error_code),
            enabled.join(", ")
        )));
    }
    let mut exchange = match &login.oauth {
        Some(provider) => {
            let (token, extensions) = provider
                .token()
                .await
                .map_err(|e| failed(format!("no OAUTHBEARER token: {e}")))?;
            let initial =
                kafka_auth::sasl::oauthbearer::ClientInitialResponse::new(&token, None, extensions)
                    .map_err(|e| failed(e.to_string()))?;
            ClientExchange::oauthbearer(initial)
        }
        None => ClientExchange::new(login.mechanism, &login.username, login.password.clone())
            .map_err(|e| failed(e.to_string()))?,
    };
    let mut message = exchange.initial();
    let version = conn.version_for(ApiKey::SaslAuthenticate)?;
    loop {
        let body = request(
            RequestBody::SaslAuthenticate(SaslAuthenticateRequest {
                auth_bytes: Bytes::from(std::mem::take(&mut message)),
                ..Default::default()
            }),
            version,
        )
        .await?;
        let ResponseBody::SaslAuthenticate(r) = body else {
            return Err(NetError::BadResponse(
                "SaslAuthenticate answered with another api".into(),
            ));
        };
        if r.error_code != 0 {
            // OAUTHBEARER: the status the broker's error challenge gave before the failure.
            let refusal = exchange
                .oauthbearer_refusal()
                .map(|r| format!(" (status {})", r.status))
                .unwrap_or_default();
            return Err(failed(format!(
                "{}: {}{refusal}",
                kafka_protocol::error_code::ErrorCode(r.error_code),
                r.error_message.as_deref().unwrap_or("")
            )));
        }
        let step =
            exchange
                .step(&r.auth_bytes)
                .map_err(|e| match exchange.oauthbearer_refusal() {
                    Some(refusal) => failed(format!("{e} (status {})", refusal.status)),
                    None => failed(e.to_string()),
                })?;
        match step {
            ClientStep::Send(next) => message = next,
            ClientStep::Done => {
                let lifetime = u64::try_from(r.session_lifetime_ms)
                    .ok()
                    .filter(|ms| *ms > 0);
                return Ok(lifetime.map(Duration::from_millis));
            }
        }
    }
}

/// An ApiVersions request with our software name and version.
fn api_versions_request(cfg: &ConnectionConfig) -> RequestBody {
    RequestBody::ApiVersions(ApiVersionsRequest {
        client_software_name: cfg.software_name.clone(),
        client_software_version: cfg.software_version.clone(),
        ..Default::default()
    })
}

/// Sends ApiVersions at our newest version, then at the version each answer asks for
/// ([`on_answer`]) until the broker tells its versions.
async fn negotiate(conn: &Connection, cfg: &ConnectionConfig) -> Result<ApiVersions, NetError> {
    let mut version = crate::versions::client_max(ApiKey::ApiVersions);
    loop {
        let body = conn.request_at(api_versions_request(cfg), version).await?;
        let ResponseBody::ApiVersions(resp) = body else {
            return Err(NetError::Closed(Some(
                "ApiVersions answered with another api".into(),
            )));
        };
        match on_answer(&resp, version)? {
            Negotiation::Done(versions) => return Ok(versions),
            Negotiation::Retry(next) => {
                tracing::debug!(
                    addr = conn.addr(),
                    from = version,
                    to = next,
                    "ApiVersions downgrade"
                );
                version = next;
            }
        }
    }
}
