//! Who sent a request and how, as the handlers see it.
//!
//! A connection keeps one [`ConnectionContext`] for its life: the peer's address, the name of
//! the listener it came in on, the client software it announced (ApiVersions v3+ carries
//! `ClientSoftwareName` and `ClientSoftwareVersion`; Kafka keeps them per connection, and so do
//! we) and the [`Principal`] it authenticated as (`User:ANONYMOUS` for every connection until
//! listeners authenticate). Each request is handled with a [`RequestContext`]: its
//! connection's context and the client id of the request's header, borrowed for the time the
//! request is handled.
//!
//! Imports only [`super::incoming`] (to read what a connection announces): the handlers and
//! the server import this file, never the reverse.

use std::borrow::Cow;
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use kafka_protocol::messages::RequestBody;

use super::incoming::Incoming;

/// An authenticated identity, as Kafka's `KafkaPrincipal`: a type and a name, written
/// `User:alice`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Principal {
    principal_type: Cow<'static, str>,
    name: Cow<'static, str>,
}

impl Principal {
    /// The principal of a connection that did not authenticate (every connection today).
    pub const ANONYMOUS: Self = Self {
        principal_type: Cow::Borrowed("User"),
        name: Cow::Borrowed("ANONYMOUS"),
    };

    /// `User:name`, the principal Kafka's authenticators build (a TLS client certificate's
    /// distinguished name, a SASL user).
    pub fn user(name: impl Into<String>) -> Self {
        Self {
            principal_type: Cow::Borrowed("User"),
            name: Cow::Owned(name.into()),
        }
    }

    /// `User` for the principals Kafka's authenticators build.
    pub fn principal_type(&self) -> &str {
        &self.principal_type
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}

impl fmt::Display for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.principal_type, self.name)
    }
}

/// The client software a connection announced in ApiVersions v3+, `unknown` for both until it
/// does (Kafka's `ClientInformation`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientSoftware {
    name: Cow<'static, str>,
    version: Cow<'static, str>,
}

impl ClientSoftware {
    pub const UNKNOWN: Self = Self {
        name: Cow::Borrowed("unknown"),
        version: Cow::Borrowed("unknown"),
    };

    /// Longest name or version kept (ours: Kafka has no bound, but a connection keeps what it
    /// announced for its life, and real clients send a few dozen bytes at most).
    pub const MAX_LEN: usize = 256;

    /// What a client announced, if both strings are valid as Kafka checks them (letters,
    /// digits, `-` and `.`, starting and ending with a letter or digit) and not longer than
    /// [`Self::MAX_LEN`]; `None` leaves what the connection knew.
    pub fn announced(name: &str, version: &str) -> Option<Self> {
        (valid(name) && valid(version)).then(|| Self {
            name: Cow::Owned(name.to_owned()),
            version: Cow::Owned(version.to_owned()),
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn version(&self) -> &str {
        &self.version
    }
}

impl fmt::Display for ClientSoftware {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.name, self.version)
    }
}

/// Kafka's pattern for a software name or version: `[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?`.
fn valid(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(first), Some(last)) => {
            b.len() <= ClientSoftware::MAX_LEN
                && first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && b.iter()
                    .all(|c| c.is_ascii_alphanumeric() || *c == b'-' || *c == b'.')
        }
        _ => false,
    }
}

/// What one connection knows about its client, for the connection's life.
#[derive(Debug, Clone)]
pub struct ConnectionContext {
    peer: Option<SocketAddr>,
    listener: Arc<str>,
    software: ClientSoftware,
    principal: Principal,
}

impl ConnectionContext {
    /// A connection from `peer` (`None` for a caller in this process) on the listener named
    /// `listener`, anonymous and with no software announced yet.
    pub fn new(peer: Option<SocketAddr>, listener: impl Into<Arc<str>>) -> Self {
        Self {
            peer,
            listener: listener.into(),
            software: ClientSoftware::UNKNOWN,
            principal: Principal::ANONYMOUS,
        }
    }

    /// Learns what a request announces about the connection, before it is handled: the client
    /// software of an ApiVersions v3+ request whose name and version are valid (others are
    /// answered as before and change nothing, as in Kafka).
    pub fn observe(&mut self, incoming: &Incoming) {
        let Some(request) = incoming.decoded() else {
            return;
        };
        if let RequestBody::ApiVersions(r) = &request.body
            && request.version() >= 3
            && let Some(software) =
                ClientSoftware::announced(&r.client_software_name, &r.client_software_version)
        {
            self.software = software;
        }
    }

    /// The context of one request of this connection, whose header names `client_id`.
    pub fn request<'a>(&'a self, client_id: Option<&'a str>) -> RequestContext<'a> {
        RequestContext {
            connection: self,
            client_id,
            waited: None,
        }
    }

    pub fn peer(&self) -> Option<SocketAddr> {
        self.peer
    }

    pub fn listener(&self) -> &str {
        &self.listener
    }

    pub fn software(&self) -> &ClientSoftware {
        &self.software
    }

    pub fn principal(&self) -> &Principal {
        &self.principal
    }

    /// The connection has authenticated as `principal` (its TLS client certificate, or SASL).
    pub fn authenticated(&mut self, principal: Principal) {
        self.principal = principal;
    }
}

/// One request's context: its connection's, and the client id of its header.
#[derive(Debug, Clone, Copy)]
pub struct RequestContext<'a> {
    connection: &'a ConnectionContext,
    client_id: Option<&'a str>,
    waited: Option<&'a Waited>,
}

/// The time a request spent waiting rather than working (a long poll, the wait for replicas
/// to acknowledge an append): not counted against the client's `request_percentage` quota,
/// as Kafka counts only its request threads' time.
#[derive(Debug, Default)]
pub struct Waited(AtomicU64);

impl Waited {
    /// Adds a wait.
    pub fn add(&self, d: Duration) {
        let nanos = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.0.fetch_add(nanos, Ordering::Relaxed);
    }

    /// Every wait added so far.
    pub fn total(&self) -> Duration {
        Duration::from_nanos(self.0.load(Ordering::Relaxed))
    }
}

impl<'a> RequestContext<'a> {
    /// The client's address, `None` for a caller in this process.
    pub fn peer(&self) -> Option<SocketAddr> {
        self.connection.peer
    }

    /// The listener the request came in on: the endpoints Metadata, FindCoordinator,
    /// DescribeCluster and leader hints give are that listener's.
    pub fn listener(&self) -> &'a str {
        &self.connection.listener
    }

    /// The request header's client id (`None` when null).
    pub fn client_id(&self) -> Option<&'a str> {
        self.client_id
    }

    /// The client's address as Kafka writes it in group metadata (see [`client_host`]).
    pub fn client_host(&self) -> String {
        client_host(self.connection.peer)
    }

    pub fn software(&self) -> &'a ClientSoftware {
        &self.connection.software
    }

    pub fn principal(&self) -> &'a Principal {
        &self.connection.principal
    }

    /// The same context, with its waits added to `waited`.
    pub fn counting_waits(self, waited: &'a Waited) -> Self {
        Self {
            waited: Some(waited),
            ..self
        }
    }

    /// Counts `d` as time spent waiting, not working (see [`Waited`]).
    pub fn waited(&self, d: Duration) {
        if let Some(w) = self.waited {
            w.add(d);
        }
    }
}

/// A client's address as Kafka writes it in group metadata and DescribeGroups (Java's
/// `InetAddress.toString()` without a resolved name): `/127.0.0.1`, or for IPv6 the eight
/// groups in hex without compression, `/0:0:0:0:0:0:0:1`. Empty when not known.
fn client_host(peer: Option<SocketAddr>) -> String {
    match peer.map(|p| p.ip()) {
        None => String::new(),
        Some(IpAddr::V4(a)) => format!("/{a}"),
        // Java sees an IPv4 client of a dual-stack socket as an IPv4 address.
        Some(IpAddr::V6(a)) if a.to_ipv4_mapped().is_some() => a
            .to_ipv4_mapped()
            .map_or_else(String::new, |v4| format!("/{v4}")),
        Some(IpAddr::V6(a)) => {
            let groups: Vec<String> = a.segments().iter().map(|g| format!("{g:x}")).collect();
            format!("/{}", groups.join(":"))
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use bytes::Bytes;
    use kafka_protocol::KStr;
    use kafka_protocol::frame;
    use kafka_protocol::messages::{ApiKey, ApiVersionsRequest, RequestHeader};

    use super::*;

    fn api_versions(version: i16, name: &'static str, software_version: &'static str) -> Incoming {
        let header = RequestHeader {
            request_api_key: ApiKey::ApiVersions as i16,
            request_api_version: version,
            correlation_id: 1,
            client_id: Some(KStr::from_static("ctx-test")),
            ..Default::default()
        };
        let body = RequestBody::ApiVersions(ApiVersionsRequest {
            client_software_name: KStr::from_static(name),
            client_software_version: KStr::from_static(software_version),
            ..Default::default()
        });
        let bytes: Bytes = frame::encode_request(&header, &body).unwrap().into_bytes();
        let prefix = frame::peek_request(&bytes).unwrap();
        Incoming::read(bytes, prefix)
    }

    #[test]
    fn written_as_java_writes_an_address() {
        let v4 = "127.0.0.1:50000".parse().ok();
        assert_eq!(client_host(v4), "/127.0.0.1");
        let v6 = "[::1]:9092".parse().ok();
        assert_eq!(client_host(v6), "/0:0:0:0:0:0:0:1");
        let v6 = "[fe80::1:ab]:9092".parse().ok();
        assert_eq!(client_host(v6), "/fe80:0:0:0:0:0:1:ab");
        let mapped = "[::ffff:10.1.2.3]:9092".parse().ok();
        assert_eq!(client_host(mapped), "/10.1.2.3");
        assert_eq!(client_host(None), "");
    }

    #[test]
    fn a_request_carries_its_connection_and_its_client_id() {
        let peer: SocketAddr = "10.0.0.7:40000".parse().unwrap();
        let mut conn = ConnectionContext::new(Some(peer), "INTERNAL");
        assert_eq!(conn.software(), &ClientSoftware::UNKNOWN);
        assert_eq!(conn.principal().to_string(), "User:ANONYMOUS");

        conn.observe(&api_versions(3, "apache-kafka-java", "3.9.0"));
        let ctx = conn.request(Some("consumer-1"));
        assert_eq!(ctx.peer(), Some(peer));
        assert_eq!(ctx.listener(), "INTERNAL");
        assert_eq!(ctx.client_id(), Some("consumer-1"));
        assert_eq!(ctx.client_host(), "/10.0.0.7");
        assert_eq!(
            (ctx.software().name(), ctx.software().version()),
            ("apache-kafka-java", "3.9.0")
        );
        assert_eq!(ctx.software().to_string(), "apache-kafka-java/3.9.0");
        assert_eq!(ctx.principal(), &Principal::ANONYMOUS);
        assert_eq!(
            (ctx.principal().principal_type(), ctx.principal().name()),
            ("User", "ANONYMOUS")
        );
        assert_eq!(conn.request(None).client_id(), None);
    }

    #[test]
    fn only_a_valid_announcement_of_v3_or_later_is_kept() {
        let mut conn = ConnectionContext::new(None, "PLAINTEXT");
        // v2 has no software fields.
        conn.observe(&api_versions(2, "", ""));
        assert_eq!(conn.software(), &ClientSoftware::UNKNOWN);
        conn.observe(&api_versions(4, "librdkafka", "2.3.0"));
        assert_eq!(conn.software().to_string(), "librdkafka/2.3.0");
        // Invalid announcements leave what was known (Kafka answers them INVALID_REQUEST and
        // registers nothing).
        for (name, version) in [
            ("", "1.0"),
            ("kafka python", "2.0"),
            ("-dash", "1"),
            ("name", "1.0-"),
            ("name", ""),
        ] {
            conn.observe(&api_versions(3, name, version));
            assert_eq!(
                conn.software().to_string(),
                "librdkafka/2.3.0",
                "{name:?} {version:?}"
            );
        }
        let long = "a".repeat(ClientSoftware::MAX_LEN + 1);
        assert!(ClientSoftware::announced(&long, "1").is_none());
        assert!(ClientSoftware::announced(&long[1..], "1").is_some());
        assert!(ClientSoftware::announced("a", "1.2.3-rc.1").is_some());
    }
}
