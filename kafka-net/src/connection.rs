//! A connection to one broker: a tokio task that moves bytes between the socket and a
//! [`ConnState`], and a cheap handle that sends requests through it.
//!
//! The task makes no protocol decisions. It takes a new request only when the in-flight window
//! has room (callers wait, they do not get an error), writes frames with vectored writes (large
//! record sets are not copied), reads and decodes responses as they come, and drives timeouts.
//! Dropping a caller's future does not disturb the connection: its request still goes out in
//! order and its response is read and dropped.
//!
//! After connecting it runs the ApiVersions handshake, asking [`crate::versions`] what each
//! answer means.

use std::collections::VecDeque;
use std::io::IoSlice;
use std::sync::Arc;
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
        let mut conn = Self::from_stream(stream, addr, &cfg);
        if cfg.handshake {
            let versions = negotiate(&conn, &cfg).await?;
            conn.versions = Some(Arc::new(versions));
        }
        Ok(conn)
    }

    /// Runs a connection over an already connected stream (no handshake).
    pub fn from_stream(stream: TcpStream, addr: &str, cfg: &ConnectionConfig) -> Self {
        // Unbounded: the connection task takes a command only when the in-flight window has
        // room, and every caller waits for its answer, so what waits here is bounded by the
        // callers themselves. (A bounded channel made a waiting sender depend on a permit
        // hand-off that the producer's tests saw lost under load.)
        let (tx, rx) = mpsc::unbounded_channel();
        let driver = Driver {
            stream,
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
            None => Ok(api.versions().max),
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
        self.load.fetch_add(1, Ordering::Relaxed);
        let _guard = LoadGuard(self.load.clone());
        let (reply, rx) = oneshot::channel();
        self.tx
            .send(Command {
                body,
                version,
                reply,
            })
            .map_err(|_| NetError::Closed(None))?;
        rx.await.map_err(|_| NetError::Closed(None))?
    }

    /// Queues a request at `version` and returns as soon as the connection task has it, with
    /// a future of its outcome. Requests queued one after another by one task go on the wire
    /// in that order (what a producer needs to keep batches of a partition in order while
    /// several are in flight). Never waits: the connection task takes queued requests as its
    /// in-flight window frees up.
    pub async fn enqueue(
        &self,
        body: RequestBody,
        version: i16,
    ) -> Result<impl Future<Output = Outcome> + Send + 'static, NetError> {
        self.load.fetch_add(1, Ordering::Relaxed);
        let guard = LoadGuard(self.load.clone());
        let (reply, rx) = oneshot::channel();
        self.tx
            .send(Command {
                body,
                version,
                reply,
            })
            .map_err(|_| NetError::Closed(None))?;
        Ok(async move {
            let _guard = guard;
            rx.await.map_err(|_| NetError::Closed(None))?
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

    /// Closes the connection; requests in flight fail with "closed".
    pub fn close(self) {
        drop(self);
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

struct Driver {
    stream: TcpStream,
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
            let interest = if self.write_queue.is_empty() {
                Interest::READABLE
            } else {
                Interest::READABLE | Interest::WRITABLE
            };
            let timeout = self.state.poll_timeout().map(Instant::from_std);
            let idle_deadline = self
                .idle_timeout
                .filter(|_| self.state.in_flight() == 0)
                .map(|d| last_busy + d);
            tokio::select! {
                cmd = self.rx.recv(), if self.rx_open && self.state.can_send() => match cmd {
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
                _ = sleep_until(timeout), if timeout.is_some() => {
                    self.state.handle_timeout(Instant::now().into_std());
                }
                _ = sleep_until(idle_deadline), if idle_deadline.is_some() => {
                    tracing::debug!(addr = %self.addr, "closing idle connection");
                    self.state.close(NetError::Closed(Some("idle".into())));
                }
            }
        }
        // Fail whatever callers are still queued.
        self.rx.close();
        let err = self
            .state
            .error()
            .cloned()
            .unwrap_or(NetError::Closed(None));
        while let Ok(c) = self.rx.try_recv() {
            let _ = c.reply.send(Err(NetError::Poisoned(Arc::new(err.clone()))));
        }
    }

    fn write_some(&mut self) {
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

    fn read_some(&mut self) {
        if self.read_buf.capacity() - self.read_buf.len() < 4096 {
            self.read_buf.reserve(16 * 1024);
        }
        match self.stream.try_read_buf(&mut self.read_buf) {
            Ok(0) => {
                self.state
                    .close(NetError::Closed(Some("closed by the broker".into())));
            }
            Ok(_) => loop {
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
            },
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
    let mut version = ApiKey::ApiVersions.versions().max;
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
