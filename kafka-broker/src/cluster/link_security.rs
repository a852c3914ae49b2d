//! TLS and SASL on the links between the nodes of a cluster that do not go through
//! `kafka_net::Connection`: the Raft streams between voters ([`super::quorum::transport`]),
//! the metadata follower ([`super::follow`]), and the server side of the controller listener
//! ([`super::listener`]), which serves those streams and the brokers' Kafka requests.
//!
//! Both sides speak Kafka's order: TCP, then TLS when the listener's protocol is SSL or
//! SASL_SSL, then when it uses SASL a SaslHandshake v1 and SaslAuthenticate exchange
//! (KIP-152) in Kafka's request frames, and only then the link's own frames (which have the
//! same 4-byte size prefix). What the client side uses comes from one place,
//! [`BrokerConfig::link_security`] (the listener's `ssl.*` keys, the link's mechanism and the
//! JAAS config's credentials); the server side reads the controller listener's keys as the
//! broker's listeners do (`sasl.enabled.mechanisms`, PLAIN users from its JAAS config, SCRAM
//! credentials from the node's `scram-credentials.records`).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures::{SinkExt, StreamExt};
use kafka_auth::jaas::JaasConfig;
use kafka_auth::sasl::{
    ClientExchange, ClientStep, CredentialStore, Mechanism, ScramCredential, ScramMechanism,
    Secret, ServerExchange, ServerStep,
};
use kafka_net::ClientSecurity;
use kafka_net::security::SaslLogin;
use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::frame;
use kafka_protocol::messages::{
    ApiKey, RequestBody, RequestHeader, ResponseBody, ResponseHeader, SaslAuthenticateRequest,
    SaslAuthenticateResponse, SaslHandshakeRequest, SaslHandshakeResponse,
};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_util::codec::{Framed, LengthDelimitedCodec};

use crate::config::BrokerConfig;
use crate::config::security::NodeLink;
use crate::credentials::ScramCredentials;
use crate::error::BrokerError;

/// A byte stream of a link: a TCP stream, or TLS over one.
pub trait LinkIo: AsyncRead + AsyncWrite + Send + Unpin {}

impl<T: AsyncRead + AsyncWrite + Send + Unpin> LinkIo for T {}

/// A link's stream, secured as its protocol asks.
pub type LinkStream = Box<dyn LinkIo>;

/// A link's stream in 4-byte size-prefixed frames (Kafka's, and the links' own).
pub type LinkFrames = Framed<LinkStream, LengthDelimitedCodec>;

/// The largest frame on the controller listener (a snapshot of a large image travels in one
/// message).
pub const MAX_FRAME: usize = 128 << 20;

/// The framing of the controller listener's streams: a 4-byte big-endian size, then the frame.
pub fn codec() -> LengthDelimitedCodec {
    LengthDelimitedCodec::builder()
        .length_field_length(4)
        .max_frame_length(MAX_FRAME)
        .new_codec()
}

/// Why a secured link could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    /// TCP connect failed or timed out.
    #[error("cannot connect: {0}")]
    Connect(String),
    /// The TLS handshake failed (an untrusted certificate, a name that does not match, ...).
    #[error("TLS handshake failed: {0}")]
    Tls(String),
    /// The SASL exchange was refused (wrong password, mechanism not enabled).
    #[error("SASL authentication failed: {0}")]
    Authentication(String),
    /// The peer broke the protocol or went away during the exchange.
    #[error("the SASL exchange broke off: {0}")]
    Protocol(String),
}

impl LinkError {
    /// Whether the peer refused this node's credentials (worth a warning in the log: it will
    /// not fix itself).
    pub fn is_authentication(&self) -> bool {
        matches!(self, LinkError::Authentication(_))
    }
}

/// The client security of a node's links of both kinds, built once when the node starts.
#[derive(Debug, Clone, Default)]
pub struct LinkSecurity {
    /// To the other brokers' inter-broker listener.
    pub brokers: ClientSecurity,
    /// To the controllers' controller listener.
    pub controllers: ClientSecurity,
}

impl LinkSecurity {
    /// Both kinds, from the configuration ([`BrokerConfig::link_security`]); a broker-only or
    /// controller-only node builds only what it uses.
    pub fn from_config(config: &BrokerConfig) -> Result<Self, BrokerError> {
        let broker = config.quorum.roles.is_some_and(|r| r.broker);
        Ok(Self {
            brokers: if broker {
                config.link_security(NodeLink::Brokers)?
            } else {
                ClientSecurity::default()
            },
            controllers: config.link_security(NodeLink::Controllers)?,
        })
    }
}

/// Opens a link to `addr` secured by `security`, in at most `timeout` (connect, TLS and SASL
/// together).
pub async fn connect(
    addr: &str,
    security: &ClientSecurity,
    timeout: Duration,
) -> Result<LinkFrames, LinkError> {
    tokio::time::timeout(timeout, connect_inner(addr, security))
        .await
        .map_err(|_| LinkError::Connect(format!("{addr}: timed out after {timeout:?}")))?
}

async fn connect_inner(addr: &str, security: &ClientSecurity) -> Result<LinkFrames, LinkError> {
    let tcp = TcpStream::connect(addr)
        .await
        .map_err(|e| LinkError::Connect(format!("{addr}: {e}")))?;
    let _ = tcp.set_nodelay(true);
    let stream: LinkStream = match &security.tls {
        Some(config) => {
            let name =
                kafka_net::tls::server_name(addr).map_err(|e| LinkError::Tls(e.to_string()))?;
            let tls = tokio_rustls::TlsConnector::from(Arc::clone(config))
                .connect(name, tcp)
                .await
                .map_err(|e| LinkError::Tls(format!("{addr}: {e}")))?;
            Box::new(tls)
        }
        None => Box::new(tcp),
    };
    let mut frames = Framed::new(stream, codec());
    if let Some(login) = &security.sasl {
        authenticate(&mut frames, login).await?;
    }
    Ok(frames)
}

/// SaslHandshake v1 then SaslAuthenticate v2 until the mechanism is done.
async fn authenticate(frames: &mut LinkFrames, login: &SaslLogin) -> Result<(), LinkError> {
    let mechanism = login.mechanism.name();
    let hs = exchange(
        frames,
        1,
        RequestBody::SaslHandshake(SaslHandshakeRequest {
            mechanism: KStr::from_static(mechanism),
        }),
        1,
    )
    .await?;
    let ResponseBody::SaslHandshake(hs) = hs else {
        return Err(LinkError::Protocol(
            "SaslHandshake answered with another api".into(),
        ));
    };
    if hs.error_code != 0 {
        let enabled: Vec<String> = hs.mechanisms.iter().map(ToString::to_string).collect();
        return Err(LinkError::Authentication(format!(
            "{} (mechanism {mechanism}; the listener enables {})",
            ErrorCode(hs.error_code),
            enabled.join(", ")
        )));
    }
    let mut client = ClientExchange::new(login.mechanism, &login.username, login.password.clone())
        .map_err(|e| LinkError::Authentication(e.to_string()))?;
    let mut message = client.initial();
    for correlation_id in 2..64 {
        let answer = exchange(
            frames,
            correlation_id,
            RequestBody::SaslAuthenticate(SaslAuthenticateRequest {
                auth_bytes: Bytes::from(std::mem::take(&mut message)),
                ..Default::default()
            }),
            2,
        )
        .await?;
        let ResponseBody::SaslAuthenticate(r) = answer else {
            return Err(LinkError::Protocol(
                "SaslAuthenticate answered with another api".into(),
            ));
        };
        if r.error_code != 0 {
            return Err(LinkError::Authentication(format!(
                "{}: {}",
                ErrorCode(r.error_code),
                r.error_message.as_deref().unwrap_or("")
            )));
        }
        match client
            .step(&r.auth_bytes)
            .map_err(|e| LinkError::Authentication(e.to_string()))?
        {
            ClientStep::Send(next) => message = next,
            ClientStep::Done => return Ok(()),
        }
    }
    Err(LinkError::Protocol("the SASL exchange does not end".into()))
}

/// Sends one request and reads its answer.
async fn exchange(
    frames: &mut LinkFrames,
    correlation_id: i32,
    body: RequestBody,
    version: i16,
) -> Result<ResponseBody, LinkError> {
    let key = body.api_key();
    let header = RequestHeader {
        request_api_key: key as i16,
        request_api_version: version,
        correlation_id,
        client_id: Some(KStr::from_static("kafka-rs-node")),
        ..Default::default()
    };
    let bytes = frame::encode_request(&header, &body)
        .map_err(|e| LinkError::Protocol(e.to_string()))?
        .into_bytes();
    frames
        .send(Bytes::from(bytes.to_vec()))
        .await
        .map_err(|e| LinkError::Protocol(e.to_string()))?;
    let answer = frames
        .next()
        .await
        .ok_or_else(|| LinkError::Protocol("closed by the peer".into()))?
        .map_err(|e| LinkError::Protocol(e.to_string()))?
        .freeze();
    let response = frame::decode_response(&answer, key, version)
        .map_err(|e| LinkError::Protocol(e.to_string()))?;
    if response.header.correlation_id != correlation_id {
        return Err(LinkError::Protocol(format!(
            "answer to correlation id {} where {correlation_id} was expected",
            response.header.correlation_id
        )));
    }
    Ok(response.body)
}

/// How long a connection to the controller listener may take to finish TLS and SASL.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The server side of the controller listener's security: its TLS configuration and SASL
/// users, read when the listener starts.
pub struct LinkServer {
    /// The listener name.
    pub listener: String,
    tls: Option<tokio_rustls::TlsAcceptor>,
    sasl: Option<SaslUsers>,
}

impl std::fmt::Debug for LinkServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinkServer")
            .field("listener", &self.listener)
            .field("tls", &self.tls.is_some())
            .field("sasl", &self.sasl.as_ref().map(|s| &s.mechanisms))
            .finish()
    }
}

/// Who may log in on the controller listener.
struct SaslUsers {
    mechanisms: Vec<Mechanism>,
    plain: BTreeMap<String, Secret>,
    scram: Option<ScramCredentials>,
    failure_delay: Duration,
}

impl CredentialStore for SaslUsers {
    fn plain_password(&self, user: &str) -> Option<Secret> {
        self.plain.get(user).cloned()
    }

    fn scram_credential(&self, mechanism: ScramMechanism, user: &str) -> Option<ScramCredential> {
        self.scram.as_ref()?.get(mechanism, user)
    }
}

impl LinkServer {
    /// The security of listener `name` (the controller listener) from its keys:
    /// `ssl.*` for TLS (a keystore is required), `sasl.enabled.mechanisms` (required),
    /// PLAIN's users (`user_NAME` options of `listener.name.NAME.plain.sasl.jaas.config` or
    /// `sasl.jaas.config`), SCRAM credentials from the node's `scram-credentials.records`,
    /// `connection.failed.authentication.delay.ms`. `None` for a PLAINTEXT listener.
    pub fn for_listener(config: &BrokerConfig, name: &str) -> Result<Option<Self>, BrokerError> {
        let protocol = config.security_protocol(name).unwrap_or_default();
        if !protocol.tls() && !protocol.sasl() {
            return Ok(None);
        }
        let err = |m: String| BrokerError::Config(format!("listener {name}: {m}"));
        let sec = &config.security;
        let tls = if protocol.tls() {
            let settings = sec.tls_settings(name)?;
            let server = settings.server_config().map_err(|e| err(e.to_string()))?;
            Some(tokio_rustls::TlsAcceptor::from(server))
        } else {
            None
        };
        let sasl = if protocol.sasl() {
            let enabled = sec
                .listener_value(name, "sasl.enabled.mechanisms")
                .ok_or_else(|| {
                    err("sasl.enabled.mechanisms is not set (PLAIN, SCRAM-SHA-256, \
                         SCRAM-SHA-512; Kafka's default GSSAPI is not offered)"
                        .into())
                })?;
            let mut mechanisms = Vec::new();
            for m in enabled.split(',').map(str::trim).filter(|m| !m.is_empty()) {
                let mech = Mechanism::from_name(&m.to_ascii_uppercase())
                    .ok()
                    .filter(|m| *m == Mechanism::Plain || m.scram().is_some())
                    .ok_or_else(|| {
                        err(format!(
                            "sasl.enabled.mechanisms: {m} is not supported here"
                        ))
                    })?;
                if !mechanisms.contains(&mech) {
                    mechanisms.push(mech);
                }
            }
            let mut plain = BTreeMap::new();
            if mechanisms.contains(&Mechanism::Plain) {
                let jaas = sec
                    .listener_value(name, "plain.sasl.jaas.config")
                    .or_else(|| sec.listener_value(name, "sasl.jaas.config"))
                    .ok_or_else(|| {
                        err("PLAIN is enabled but no JAAS config names its users \
                             (listener.name.NAME.plain.sasl.jaas.config with user_NAME=\"password\")"
                            .into())
                    })?;
                for m in
                    JaasConfig::parse(jaas).map_err(|e| err(format!("sasl.jaas.config: {e}")))?
                {
                    plain.extend(m.plain_users());
                }
            }
            let scram = if mechanisms.iter().any(|m| m.scram().is_some()) {
                Some(ScramCredentials::open(&config.server.data_dir)?)
            } else {
                None
            };
            let delay = match sec.listener_value(name, "connection.failed.authentication.delay.ms") {
                None => 100,
                Some(v) => v.trim().parse::<u64>().map_err(|_| {
                    err(format!(
                        "connection.failed.authentication.delay.ms: {v:?} is not a number of milliseconds"
                    ))
                })?,
            };
            Some(SaslUsers {
                mechanisms,
                plain,
                scram,
                failure_delay: Duration::from_millis(delay),
            })
        } else {
            None
        };
        Ok(Some(Self {
            listener: name.to_owned(),
            tls,
            sasl,
        }))
    }

    /// The TLS handshake of an accepted connection, when the listener uses TLS.
    pub async fn accept(&self, stream: TcpStream) -> Result<LinkStream, LinkError> {
        match &self.tls {
            Some(acceptor) => {
                let tls = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream))
                    .await
                    .map_err(|_| LinkError::Tls("no TLS handshake in time".into()))?
                    .map_err(|e| LinkError::Tls(e.to_string()))?;
                Ok(Box::new(tls))
            }
            None => Ok(Box::new(stream)),
        }
    }

    /// A SASL gate for one connection; `None` when the listener does not use SASL.
    pub fn gate(self: &Arc<Self>, peer: SocketAddr) -> Option<SaslGate> {
        self.sasl.as_ref()?;
        Some(SaslGate {
            server: Arc::clone(self),
            peer,
            exchange: None,
        })
    }
}

/// What the controller listener does with a frame before its connection is authenticated.
#[derive(Debug)]
pub enum GateStep {
    /// An ApiVersions request: answer it as any request.
    Forward(Bytes),
    /// Send this answer and wait for the next frame.
    Reply(Bytes),
    /// Send this answer: the connection is authenticated as the principal named.
    Authenticated(Bytes, String),
    /// Send the answer, if any, and close.
    Refuse(Option<Bytes>, String),
}

/// The SASL state of one connection to the controller listener: only ApiVersions,
/// SaslHandshake and SaslAuthenticate are served until the exchange is done.
pub struct SaslGate {
    server: Arc<LinkServer>,
    peer: SocketAddr,
    exchange: Option<ServerExchange>,
}

impl SaslGate {
    /// One frame of an unauthenticated connection.
    pub async fn on_frame(&mut self, frame: Bytes) -> GateStep {
        let Some(users) = self.server.sasl.as_ref() else {
            return GateStep::Refuse(None, "no SASL on this listener".into());
        };
        let request = match frame::decode_request(&frame) {
            Ok(r) => r,
            Err(e) => {
                let is_versions = frame::peek_request(&frame)
                    .is_ok_and(|p| p.api_key == ApiKey::ApiVersions as i16);
                if is_versions {
                    return GateStep::Forward(frame);
                }
                return GateStep::Refuse(
                    None,
                    format!("a frame that is not a Kafka request before SASL authentication ({e})"),
                );
            }
        };
        let version = request.version();
        let correlation_id = request.header.correlation_id;
        let reply = |body: ResponseBody| encode(correlation_id, &body, version);
        match request.body {
            RequestBody::ApiVersions(_) => GateStep::Forward(frame),
            RequestBody::SaslHandshake(r) => {
                let enabled: Vec<KStr> = users
                    .mechanisms
                    .iter()
                    .map(|m| KStr::from_static(m.name()))
                    .collect();
                let chosen = Mechanism::from_name(&r.mechanism)
                    .ok()
                    .filter(|m| users.mechanisms.contains(m));
                let (code, why) = match chosen {
                    _ if self.exchange.is_some() => (
                        ErrorCode::ILLEGAL_SASL_STATE,
                        "SaslHandshake in the middle of an exchange".to_owned(),
                    ),
                    None => (
                        ErrorCode::UNSUPPORTED_SASL_MECHANISM,
                        format!("SASL mechanism {:?} is not enabled", r.mechanism.as_str()),
                    ),
                    Some(_) if version == 0 => (
                        ErrorCode::UNSUPPORTED_VERSION,
                        "SaslHandshake v0 (raw SASL tokens) is not supported".to_owned(),
                    ),
                    Some(m) => {
                        self.exchange = Some(ServerExchange::new(m));
                        let body = ResponseBody::SaslHandshake(SaslHandshakeResponse {
                            error_code: 0,
                            mechanisms: enabled,
                        });
                        return GateStep::Reply(reply(body));
                    }
                };
                let body = ResponseBody::SaslHandshake(SaslHandshakeResponse {
                    error_code: code.0,
                    mechanisms: enabled,
                });
                GateStep::Refuse(Some(reply(body)), why)
            }
            RequestBody::SaslAuthenticate(r) => {
                let Some(exchange) = self.exchange.as_mut() else {
                    let body = failure(
                        ErrorCode::ILLEGAL_SASL_STATE,
                        "SaslAuthenticate before SaslHandshake",
                    );
                    return GateStep::Refuse(
                        Some(reply(body)),
                        "SaslAuthenticate before SaslHandshake".into(),
                    );
                };
                let mechanism = exchange.mechanism().name();
                match exchange.step(&r.auth_bytes, users) {
                    Ok(ServerStep::Challenge(bytes)) => GateStep::Reply(reply(
                        ResponseBody::SaslAuthenticate(SaslAuthenticateResponse {
                            auth_bytes: Bytes::from(bytes),
                            ..Default::default()
                        }),
                    )),
                    Ok(ServerStep::Done {
                        response,
                        authorization_id,
                    }) => {
                        tracing::debug!(peer = %self.peer, listener = %self.server.listener, mechanism,
                            principal = %authorization_id, "a node authenticated on the controller listener");
                        GateStep::Authenticated(
                            reply(ResponseBody::SaslAuthenticate(SaslAuthenticateResponse {
                                auth_bytes: Bytes::from(response),
                                ..Default::default()
                            })),
                            format!("User:{authorization_id}"),
                        )
                    }
                    Err(e) => {
                        tracing::warn!(peer = %self.peer, listener = %self.server.listener, mechanism,
                            reason = %e, "SASL authentication failed on the controller listener");
                        tokio::time::sleep(users.failure_delay).await;
                        let code = ErrorCode(e.kafka_error_code());
                        let message = match code {
                            ErrorCode::SASL_AUTHENTICATION_FAILED => format!(
                                "Authentication failed during authentication due to invalid credentials with SASL mechanism {mechanism}"
                            ),
                            _ => e.to_string(),
                        };
                        GateStep::Refuse(
                            Some(reply(failure(code, &message))),
                            format!("SASL authentication failed ({mechanism})"),
                        )
                    }
                }
            }
            other => GateStep::Refuse(
                None,
                format!(
                    "{:?} before SASL authentication (only ApiVersions, SaslHandshake and \
                     SaslAuthenticate are served)",
                    other.api_key()
                ),
            ),
        }
    }
}

fn failure(code: ErrorCode, message: &str) -> ResponseBody {
    ResponseBody::SaslAuthenticate(SaslAuthenticateResponse {
        error_code: code.0,
        error_message: Some(KStr::from(message.to_owned())),
        ..Default::default()
    })
}

fn encode(correlation_id: i32, body: &ResponseBody, version: i16) -> Bytes {
    let header = ResponseHeader {
        correlation_id,
        ..Default::default()
    };
    match frame::encode_response(&header, body, version) {
        Ok(w) => BytesMut::from(&w.into_bytes()[..]).freeze(),
        Err(e) => {
            tracing::error!(error = %e, "cannot encode a SASL answer");
            Bytes::new()
        }
    }
}
