//! A recording TCP proxy for Kafka connections: every connection accepted on its port is
//! forwarded to the target broker, and both directions are cut into frames (the 4-byte size
//! prefix stripped) and kept per connection, in order.
//!
//! With `clamp` on, the proxy rewrites each ApiVersions answer so that no api goes above the
//! version our codec knows (and apis it does not know disappear): the client then picks the
//! versions it would pick against our broker, and every frame it sends decodes here; features
//! other than metadata.version and kraft.version are dropped from it too, as our broker does
//! not finalize them.
//!
//! Threads, blocking sockets: a test-only tool. Connections live until either side closes.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use kafka_protocol::frame::{self, peek_request};
use kafka_protocol::{ApiKey, Bytes, ResponseBody};

/// One proxied connection: the frames each way, in order.
#[derive(Debug, Default, Clone)]
pub(crate) struct Conn {
    pub(crate) requests: Vec<Bytes>,
    pub(crate) responses: Vec<Bytes>,
}

/// What a [`Proxy`] saw so far, connection by connection (in accept order).
pub(crate) type Seen = Arc<Mutex<Vec<Arc<Mutex<Conn>>>>>;

/// A recording proxy listening on 127.0.0.1.
pub(crate) struct Proxy {
    pub(crate) port: u16,
    target: Arc<OnceLock<SocketAddr>>,
    pub(crate) seen: Seen,
}

impl Proxy {
    /// Binds a port now; connections are accepted at once and wait for [`Proxy::forward_to`]
    /// before they are forwarded (so the port can be handed to the broker's configuration
    /// before the broker's own port is known).
    pub(crate) fn start(clamp: bool) -> std::io::Result<Proxy> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let target: Arc<OnceLock<SocketAddr>> = Arc::new(OnceLock::new());
        let seen: Seen = Arc::default();
        let (t, s) = (target.clone(), seen.clone());
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let (t, s) = (t.clone(), s.clone());
                std::thread::spawn(move || {
                    let _ = serve(client, &t, &s, clamp);
                });
            }
        });
        Ok(Proxy { port, target, seen })
    }

    /// Where connections go from now on.
    pub(crate) fn forward_to(&self, addr: SocketAddr) {
        let _ = self.target.set(addr);
    }

    /// A copy of every connection seen so far.
    pub(crate) fn connections(&self) -> Vec<Conn> {
        let all = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        all.iter()
            .map(|c| c.lock().unwrap_or_else(|e| e.into_inner()).clone())
            .collect()
    }
}

fn serve(
    client: TcpStream,
    target: &OnceLock<SocketAddr>,
    seen: &Seen,
    clamp: bool,
) -> std::io::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(300);
    let addr = loop {
        if let Some(a) = target.get() {
            break *a;
        }
        if Instant::now() > deadline {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let server = TcpStream::connect(addr)?;
    let conn = Arc::new(Mutex::new(Conn::default()));
    seen.lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(conn.clone());
    // Correlation id -> (api key, version) of requests still unanswered, for the clamp.
    let pending: Arc<Mutex<HashMap<i32, (i16, i16)>>> = Arc::default();
    let (c_read, s_write) = (client.try_clone()?, server.try_clone()?);
    let (c2s_conn, c2s_pending) = (conn.clone(), pending.clone());
    let up = std::thread::spawn(move || {
        pump(c_read, s_write, |f| {
            if let Ok(p) = peek_request(&f) {
                lock(&c2s_pending).insert(p.correlation_id, (p.api_key, p.api_version));
            }
            lock(&c2s_conn).requests.push(f.clone());
            f
        })
    });
    let _ = pump(server, client, |f| {
        lock(&conn).responses.push(f.clone());
        if !clamp || f.len() < 4 {
            return f;
        }
        let correlation = i32::from_be_bytes([f[0], f[1], f[2], f[3]]);
        match lock(&pending).remove(&correlation) {
            Some((key, version)) if key == ApiKey::ApiVersions as i16 => {
                clamp_api_versions(&f, version).unwrap_or(f)
            }
            _ => f,
        }
    });
    let _ = up.join();
    Ok(())
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Copies frames from `from` to `to`, passing each (prefix stripped) through `each`.
fn pump(
    mut from: TcpStream,
    mut to: TcpStream,
    mut each: impl FnMut(Bytes) -> Bytes,
) -> std::io::Result<()> {
    let result = (|| loop {
        let mut size = [0u8; 4];
        from.read_exact(&mut size)?;
        let len = usize::try_from(i32::from_be_bytes(size)).unwrap_or(0);
        let mut body = vec![0u8; len];
        from.read_exact(&mut body)?;
        let out = each(Bytes::from(body));
        let mut framed = Vec::with_capacity(out.len() + 4);
        framed.extend_from_slice(&u32::try_from(out.len()).unwrap_or(0).to_be_bytes());
        framed.extend_from_slice(&out);
        to.write_all(&framed)?;
    })();
    let _ = to.shutdown(Shutdown::Write);
    let _ = from.shutdown(Shutdown::Read);
    result
}

/// The ApiVersions answer with every api capped at our codec's newest version, apis our codec
/// does not know (or knows only below the broker's minimum) left out.
///
/// A request newer than our codec knows (the Java 4.4 client's first is v5, which adds request
/// fields only) is answered in the same layout as our newest version: read and written at that.
fn clamp_api_versions(frame_bytes: &Bytes, version: i16) -> Option<Bytes> {
    let version = version.min(ApiKey::ApiVersions.versions().max);
    let mut resp = frame::decode_response(frame_bytes, ApiKey::ApiVersions, version).ok()?;
    let ResponseBody::ApiVersions(body) = &mut resp.body else {
        return None;
    };
    body.api_keys.retain_mut(|a| {
        let Some(key) = ApiKey::from_i16(a.api_key) else {
            return false;
        };
        let ours = key.versions();
        a.max_version = a.max_version.min(ours.max);
        a.min_version <= a.max_version
    });
    // Features that need versions above ours (transaction.version 2 needs EndTxn v5 and
    // Produce v12, KIP-890) go too: our broker finalizes metadata.version only.
    let keep = |name: &str| matches!(name, "metadata.version" | "kraft.version");
    body.supported_features.retain(|f| keep(&f.name));
    body.finalized_features.retain(|f| keep(&f.name));
    let mut out = frame::encode_response(&resp.header, &resp.body, version)
        .ok()?
        .into_bytes()
        .to_vec();
    out.extend_from_slice(&resp.trailing);
    Some(Bytes::from(out))
}
