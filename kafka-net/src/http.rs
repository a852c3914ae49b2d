//! The few HTTP calls SASL/OAUTHBEARER makes (a token from an identity provider's token
//! endpoint, a JWKS document from its keys endpoint): one HTTP/1.1 request per connection
//! (`Connection: close`), over TLS for `https` URLs with the caller's rustls configuration.
//! Answers with `Content-Length`, chunked encoding or ending with the connection are read, up
//! to a bound; anything else is an error naming the URL.

use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::error::NetError;

/// The largest answer read (headers and body).
pub const MAX_RESPONSE: usize = 1024 * 1024;

/// An HTTP answer: its status and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpResponse {
    pub status: u16,
    pub body: Vec<u8>,
}

/// A parsed `http://` or `https://` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    pub tls: bool,
    /// The host as written (an IPv6 address without its brackets).
    pub host: String,
    pub port: u16,
    /// The path and query, `/` at least.
    pub path: String,
}

impl Url {
    /// Reads `http://host[:port][/path]` or `https://...`.
    pub fn parse(url: &str) -> Result<Self, NetError> {
        let bad = |why: &str| NetError::Config(format!("URL {url:?}: {why}"));
        let (tls, rest) = if let Some(r) = url.strip_prefix("https://") {
            (true, r)
        } else if let Some(r) = url.strip_prefix("http://") {
            (false, r)
        } else {
            return Err(bad("not an http:// or https:// URL"));
        };
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        if authority.contains('@') {
            return Err(bad("user information in the URL is not supported"));
        }
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (host, after) = v6.split_once(']').ok_or_else(|| bad("unclosed ["))?;
            (host, after.strip_prefix(':'))
        } else {
            match authority.rsplit_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (authority, None),
            }
        };
        if host.is_empty() {
            return Err(bad("no host"));
        }
        let port = match port {
            Some(p) => p.parse().map_err(|_| bad("bad port"))?,
            None if tls => 443,
            None => 80,
        };
        Ok(Self {
            tls,
            host: host.to_owned(),
            port,
            path: path.to_owned(),
        })
    }

    fn host_header(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        match (self.tls, self.port) {
            (true, 443) | (false, 80) => host,
            _ => format!("{host}:{}", self.port),
        }
    }
}

/// Sends one request and reads its answer within `timeout`. `tls`: the configuration for an
/// `https` URL (required for one). A `body` is sent with its `Content-Length`.
pub async fn request(
    method: &str,
    url: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    tls: Option<Arc<rustls::ClientConfig>>,
    timeout: Duration,
) -> Result<HttpResponse, NetError> {
    let parsed = Url::parse(url)?;
    let failed = |why: String| NetError::Config(format!("{method} {url}: {why}"));
    let call = async {
        let sock = TcpStream::connect((parsed.host.as_str(), parsed.port))
            .await
            .map_err(|e| failed(format!("connect: {e}")))?;
        let _ = sock.set_nodelay(true);
        let mut head = format!(
            "{method} {} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nUser-Agent: kafka-rs\r\n",
            parsed.path,
            parsed.host_header()
        );
        for (name, value) in headers {
            if name.contains(['\r', '\n']) || value.contains(['\r', '\n']) {
                return Err(failed("a header with a line break".into()));
            }
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        if !body.is_empty() || method == "POST" {
            head.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        head.push_str("\r\n");
        if parsed.tls {
            let config =
                tls.ok_or_else(|| failed("an https URL needs a TLS configuration".into()))?;
            let name = rustls::pki_types::ServerName::try_from(parsed.host.clone())
                .map_err(|e| failed(format!("server name: {e}")))?;
            let stream = tokio_rustls::TlsConnector::from(config)
                .connect(name, sock)
                .await
                .map_err(|e| failed(format!("TLS: {e}")))?;
            exchange(stream, head.as_bytes(), body).await
        } else {
            exchange(sock, head.as_bytes(), body).await
        }
        .map_err(&failed)
    };
    tokio::time::timeout(timeout, call)
        .await
        .map_err(|_| failed(format!("no answer within {timeout:?}")))?
}

async fn exchange<S: AsyncRead + AsyncWrite + Unpin>(
    mut s: S,
    head: &[u8],
    body: &[u8],
) -> Result<HttpResponse, String> {
    s.write_all(head).await.map_err(|e| e.to_string())?;
    s.write_all(body).await.map_err(|e| e.to_string())?;
    s.flush().await.map_err(|e| e.to_string())?;
    let mut raw = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        let n = match s.read(&mut buf).await {
            Ok(n) => n,
            // A TLS peer closing without close_notify: what was read is the answer.
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => 0,
            Err(e) => return Err(e.to_string()),
        };
        if n == 0 {
            break;
        }
        if raw.len() + n > MAX_RESPONSE {
            return Err(format!("answer over {MAX_RESPONSE} bytes"));
        }
        raw.extend_from_slice(&buf[..n]);
        if let Some(done) = complete(&raw)? {
            return Ok(done);
        }
    }
    complete_at_end(&raw)
}

/// The answer in `raw` if it is whole (by `Content-Length` or the last chunk); `None` when
/// more is needed.
fn complete(raw: &[u8]) -> Result<Option<HttpResponse>, String> {
    let Some((status, headers, body)) = split(raw)? else {
        return Ok(None);
    };
    if chunked(&headers) {
        return Ok(dechunk(body)?.map(|body| HttpResponse { status, body }));
    }
    match content_length(&headers)? {
        Some(len) if body.len() >= len => Ok(Some(HttpResponse {
            status,
            body: body[..len].to_vec(),
        })),
        _ => Ok(None),
    }
}

/// The answer once the connection ended: whole, or the body is what came.
fn complete_at_end(raw: &[u8]) -> Result<HttpResponse, String> {
    let Some((status, headers, body)) = split(raw)? else {
        return Err("connection closed before the answer's headers".into());
    };
    if chunked(&headers) || content_length(&headers)?.is_some() {
        return complete(raw)?.ok_or_else(|| "answer cut short".to_owned());
    }
    Ok(HttpResponse {
        status,
        body: body.to_vec(),
    })
}

type Parts<'a> = (u16, Vec<(String, String)>, &'a [u8]);

fn split(raw: &[u8]) -> Result<Option<Parts<'_>>, String> {
    let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") else {
        return Ok(None);
    };
    let head = std::str::from_utf8(&raw[..end]).map_err(|_| "headers not UTF-8".to_owned())?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let mut parts = status_line.splitn(3, ' ');
    let version = parts.next().unwrap_or_default();
    if !version.starts_with("HTTP/1.") {
        return Err(format!("not an HTTP/1 answer: {status_line:?}"));
    }
    let status = parts
        .next()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("bad status line {status_line:?}"))?;
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Ok(Some((status, headers, &raw[end + 4..])))
}

fn chunked(headers: &[(String, String)]) -> bool {
    headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v.to_ascii_lowercase().contains("chunked"))
}

fn content_length(headers: &[(String, String)]) -> Result<Option<usize>, String> {
    match headers.iter().find(|(k, _)| k == "content-length") {
        None => Ok(None),
        Some((_, v)) => v
            .parse()
            .map(Some)
            .map_err(|_| format!("bad Content-Length {v:?}")),
    }
}

/// The body of a chunked answer, or `None` until its last chunk is in.
fn dechunk(mut data: &[u8]) -> Result<Option<Vec<u8>>, String> {
    let mut out = Vec::new();
    loop {
        let Some(eol) = data.windows(2).position(|w| w == b"\r\n") else {
            return Ok(None);
        };
        let size_text = std::str::from_utf8(&data[..eol]).map_err(|_| "bad chunk size")?;
        let size_text = size_text.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|_| format!("bad chunk size {size_text:?}"))?;
        let rest = &data[eol + 2..];
        if size == 0 {
            return Ok(Some(out));
        }
        if rest.len() < size + 2 {
            return Ok(None);
        }
        out.extend_from_slice(&rest[..size]);
        data = &rest[size + 2..];
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn urls() {
        let u = Url::parse("https://idp.test:8443/oauth2/token?x=1").unwrap();
        assert_eq!(
            (u.tls, u.host.as_str(), u.port, u.path.as_str()),
            (true, "idp.test", 8443, "/oauth2/token?x=1")
        );
        let u = Url::parse("http://[::1]/keys").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.host_header()),
            ("::1", 80, "[::1]".into())
        );
        assert_eq!(Url::parse("https://h").unwrap().path, "/");
        for bad in [
            "ftp://h/",
            "https://",
            "https://u:p@h/",
            "http://h:x/",
            "http://[::1/",
        ] {
            assert!(Url::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn bodies_by_length_by_chunks_and_by_end() {
        let by_length = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
        assert_eq!(complete(by_length).unwrap().unwrap().body, b"hello");
        assert_eq!(complete(&by_length[..by_length.len() - 1]).unwrap(), None);
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;x=y\r\n world\r\n0\r\n\r\n";
        assert_eq!(complete(chunked).unwrap().unwrap().body, b"hello world");
        for cut in 0..chunked.len() - 5 {
            assert!(complete(&chunked[..cut]).unwrap().is_none(), "cut at {cut}");
        }
        let by_end = b"HTTP/1.0 404 Not Found\r\nServer: x\r\n\r\nnope";
        let r = complete_at_end(by_end).unwrap();
        assert_eq!((r.status, r.body.as_slice()), (404, b"nope".as_slice()));
        assert!(complete_at_end(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nshort").is_err());
        assert!(complete(b"SSH-2.0\r\n\r\n").is_err());
        assert!(complete(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n").is_err());
    }

    /// A real socket: a request to a tiny server in this test, its answer in two writes.
    #[tokio::test]
    async fn a_post_over_a_socket() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut got = Vec::new();
            let mut buf = [0u8; 1024];
            while !got.ends_with(b"grant_type=client_credentials") {
                let n = s.read(&mut buf).await.unwrap();
                got.extend_from_slice(&buf[..n]);
            }
            s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n{\"a\"")
                .await
                .unwrap();
            s.write_all(b":\"b\"}\r\n").await.unwrap();
            String::from_utf8(got).unwrap()
        });
        let url = format!("http://{addr}/token");
        let r = request(
            "POST",
            &url,
            &[("Authorization", "Basic eDp5")],
            b"grant_type=client_credentials",
            None,
            Duration::from_secs(5),
        )
        .await
        .unwrap();
        assert_eq!(
            (r.status, r.body.as_slice()),
            (200, b"{\"a\":\"b\"}\r\n".as_slice())
        );
        let sent = server.await.unwrap();
        assert!(sent.starts_with("POST /token HTTP/1.1\r\n"), "{sent}");
        assert!(sent.contains("Authorization: Basic eDp5\r\n"), "{sent}");
        assert!(sent.contains("Content-Length: 29\r\n"), "{sent}");
        // Nothing listening: a clear error, not a hang.
        let closed = format!("http://{addr}/token");
        assert!(
            request("GET", &closed, &[], b"", None, Duration::from_secs(5))
                .await
                .is_err()
        );
    }
}
