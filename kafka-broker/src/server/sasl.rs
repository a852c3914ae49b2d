//! SASL on SASL_PLAINTEXT and SASL_SSL listeners: the gate every request of such a
//! connection passes first (Kafka's `SaslServerAuthenticator`).
//!
//! - Before authentication only ApiVersions, SaslHandshake and SaslAuthenticate are served;
//!   any other request closes the connection.
//! - SaslHandshake names a mechanism of `sasl.enabled.mechanisms` (else
//!   UNSUPPORTED_SASL_MECHANISM with the enabled list, and the connection closes); then
//!   SaslAuthenticate carries the mechanism's messages (KIP-152). OAUTHBEARER tokens are
//!   checked by the listener's validator ([`super::oauth`]). After a v0 handshake the tokens
//!   come and go as bare size-prefixed frames instead (clients before Kafka 1.0, sarama's
//!   V0), and a failure can only close the connection.
//! - The exchange is authenticated only when the mechanism says it is done
//!   ([`kafka_auth::sasl::ServerStep::Done`]). A failure answers SASL_AUTHENTICATION_FAILED
//!   after `connection.failed.authentication.delay.ms` and closes; the log line names the
//!   peer and mechanism, never the secret.
//! - `connections.max.reauth.ms` (KIP-368): the answer's `session_lifetime_ms` is that bound,
//!   or the time left on an OAUTHBEARER token when that is shorter (0 when neither is set:
//!   re-authentication not asked for, as Kafka answers); a request
//!   after the session ended closes the connection; a SaslHandshake on an authenticated
//!   connection starts a new exchange, which must end as the same principal.
//! - Failed logins are rate-limited per client address (ours, not Kafka's:
//!   `connection.failed.authentication.max.rate.per.ip`, default 10 per second): each
//!   address has a bucket of that many failures, refilled at that rate; a failure beyond it
//!   waits for its token before its answer, so one address guessing passwords is held to the
//!   rate while every other address is unaffected.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use kafka_auth::jaas::JaasConfig;
use kafka_auth::sasl::oauthbearer::{TokenValidator, session_lifetime_ms};
use kafka_auth::sasl::{
    CredentialStore, Mechanism, SaslError, ScramCredential, ScramMechanism, Secret, ServerExchange,
    ServerStep,
};
use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::{
    ApiKey, RequestBody, ResponseBody, SaslAuthenticateResponse, SaslHandshakeResponse,
};
use tokio::time::Instant;

use crate::config::BrokerConfig;
use crate::error::BrokerError;
use crate::handler::{ConnectionContext, Incoming, Principal, Reply};
use crate::node::Broker;

/// The SASL settings of one listener, read when it starts.
pub struct SaslListener {
    name: String,
    mechanisms: Vec<Mechanism>,
    /// PLAIN's users (`user_NAME` options of the listener's PlainLoginModule JAAS config).
    plain_users: BTreeMap<String, Secret>,
    /// OAUTHBEARER's token validator, when the mechanism is enabled ([`super::oauth`]).
    oauth: Option<Arc<dyn TokenValidator>>,
    /// Its JWKS endpoint, when the keys come over HTTP(S).
    jwks_endpoint: Option<Arc<super::oauth::HttpJwks>>,
    /// `connections.max.reauth.ms`; `None`: 0, sessions do not expire.
    reauth: Option<Duration>,
    /// `connection.failed.authentication.delay.ms`.
    failure_delay: Duration,
    /// Failed logins per client address (`connection.failed.authentication.max.rate.per.ip`).
    failures: Mutex<FailureLimiter>,
}

/// Most client addresses whose failed logins are remembered.
const MAX_TRACKED_ADDRESSES: usize = 10_000;

/// A token bucket of failed logins per client address.
#[derive(Debug)]
pub(crate) struct FailureLimiter {
    /// Failures allowed per second (and the bucket's size).
    rate: f64,
    buckets: HashMap<IpAddr, (f64, Instant)>,
}

impl FailureLimiter {
    pub(crate) fn new(rate: f64) -> Self {
        Self {
            rate: rate.max(0.001),
            buckets: HashMap::new(),
        }
    }

    /// Records a failure from `ip` at `now`; how long its answer must wait for a token.
    pub(crate) fn failed(&mut self, ip: IpAddr, now: Instant) -> Duration {
        let rate = self.rate;
        if self.buckets.len() >= MAX_TRACKED_ADDRESSES && !self.buckets.contains_key(&ip) {
            // Forget addresses whose bucket has refilled; failing that, the oldest.
            self.buckets.retain(|_, (tokens, at)| {
                *tokens + now.saturating_duration_since(*at).as_secs_f64() * rate < rate
            });
            if self.buckets.len() >= MAX_TRACKED_ADDRESSES {
                let oldest = self
                    .buckets
                    .iter()
                    .min_by_key(|(_, (_, at))| *at)
                    .map(|(ip, _)| *ip);
                if let Some(oldest) = oldest {
                    self.buckets.remove(&oldest);
                }
            }
        }
        let (tokens, at) = self.buckets.entry(ip).or_insert((rate, now));
        let refilled =
            (*tokens + now.saturating_duration_since(*at).as_secs_f64() * rate).min(rate);
        // A negative balance is the wait: the failure takes a token not there yet.
        let left = refilled - 1.0;
        *tokens = left;
        *at = now;
        if left >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64((-left / rate).min(60.0))
        }
    }
}

impl std::fmt::Debug for SaslListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SaslListener")
            .field("name", &self.name)
            .field("mechanisms", &self.mechanisms)
            .field("plain_users", &self.plain_users.keys().collect::<Vec<_>>())
            .field("reauth", &self.reauth)
            .finish()
    }
}

impl SaslListener {
    /// Reads a listener's SASL keys (`listener.name.NAME.` forms first): the enabled
    /// mechanisms (`sasl.enabled.mechanisms`, required: Kafka's default GSSAPI is not
    /// offered), PLAIN's users from `plain.sasl.jaas.config` (or `sasl.jaas.config`), the
    /// re-authentication bound and the failed-authentication delay.
    pub fn new(config: &BrokerConfig, name: &str) -> Result<Self, BrokerError> {
        let sec = &config.security;
        let err = |m: String| BrokerError::Config(format!("listener {name}: {m}"));
        let Some(enabled) = sec.listener_value(name, "sasl.enabled.mechanisms") else {
            return Err(err(
                "sasl.enabled.mechanisms is not set (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER; \
                 Kafka's default GSSAPI is not offered)"
                    .into(),
            ));
        };
        let mut mechanisms = Vec::new();
        for m in enabled.split(',').map(str::trim).filter(|m| !m.is_empty()) {
            let mech = Mechanism::from_name(m)
                .map_err(|_| err(format!("sasl.enabled.mechanisms: {m} is not supported")))?;
            if !mechanisms.contains(&mech) {
                mechanisms.push(mech);
            }
        }
        if mechanisms.is_empty() {
            return Err(err("sasl.enabled.mechanisms is empty".into()));
        }
        let mut plain_users = BTreeMap::new();
        if mechanisms.contains(&Mechanism::Plain) {
            let jaas = sec
                .listener_value(name, "plain.sasl.jaas.config")
                .or_else(|| sec.listener_value(name, "sasl.jaas.config"))
                .ok_or_else(|| {
                    err("PLAIN is enabled but no JAAS config names its users \
                         (listener.name.NAME.plain.sasl.jaas.config with user_NAME=\"password\")"
                        .into())
                })?;
            let modules =
                JaasConfig::parse(jaas).map_err(|e| err(format!("sasl.jaas.config: {e}")))?;
            for m in &modules {
                plain_users.extend(m.plain_users());
            }
        }
        let oauth = if mechanisms.contains(&Mechanism::OAuthBearer) {
            Some(super::oauth::validator(config, name)?)
        } else {
            None
        };
        let (oauth, jwks_endpoint) = match oauth {
            Some(o) => (Some(o.validator), o.endpoint),
            None => (None, None),
        };
        let ms = |key: &str, default: u64| -> Result<u64, BrokerError> {
            match sec.listener_value(name, key) {
                None => Ok(default),
                Some(v) => v
                    .trim()
                    .parse::<i64>()
                    .map(|n| n.max(0) as u64)
                    .map_err(|_| err(format!("{key}: {v:?} is not a number of milliseconds"))),
            }
        };
        let reauth = ms("connections.max.reauth.ms", 0)?;
        let key = "connection.failed.authentication.max.rate.per.ip";
        let rate = match sec.listener_value(name, key) {
            None => 10.0,
            Some(v) => v
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|r| *r > 0.0)
                .ok_or_else(|| err(format!("{key}: {v:?} is not a positive number")))?,
        };
        Ok(Self {
            name: name.to_owned(),
            mechanisms,
            plain_users,
            oauth,
            jwks_endpoint,
            reauth: (reauth > 0).then(|| Duration::from_millis(reauth)),
            failure_delay: Duration::from_millis(ms(
                "connection.failed.authentication.delay.ms",
                100,
            )?),
            failures: Mutex::new(FailureLimiter::new(rate)),
        })
    }
}

impl SaslListener {
    /// What the listener needs before serving: an OAUTHBEARER JWKS endpoint's keys, fetched
    /// once (a failure is logged and retried in the background: until then signed tokens are
    /// refused), then refreshed for the broker's life.
    pub async fn start(&self) {
        let Some(endpoint) = &self.jwks_endpoint else {
            return;
        };
        match endpoint.fetch().await {
            Ok(n) => tracing::info!(listener = %self.name, keys = n, "JWKS fetched"),
            Err(e) => tracing::warn!(listener = %self.name, error = %e,
                "JWKS not fetched; OAUTHBEARER logins fail until it is"),
        }
        tokio::spawn(Arc::clone(endpoint).run());
    }
}

/// The credentials an exchange checks: the listener's PLAIN users and the broker's SCRAM
/// credentials.
struct Credentials<'a> {
    listener: &'a SaslListener,
    broker: &'a Broker,
}

impl CredentialStore for Credentials<'_> {
    fn plain_password(&self, user: &str) -> Option<Secret> {
        self.listener.plain_users.get(user).cloned()
    }

    fn scram_credential(&self, mechanism: ScramMechanism, user: &str) -> Option<ScramCredential> {
        self.broker.scram_credentials.get(mechanism, user)
    }
}

enum State {
    /// Waiting for SaslHandshake.
    Handshake,
    /// A mechanism's exchange under way (`previous`: the principal of a re-authentication).
    Exchange {
        exchange: Box<ServerExchange>,
        mechanism: Mechanism,
        previous: Option<Principal>,
        /// After a SaslHandshake v0: the tokens come and go as bare frames (no
        /// SaslAuthenticate), as Kafka's clients before 1.0 and sarama's V0 send them.
        raw: bool,
    },
    /// Authenticated until `expires` (never when `None`).
    Authenticated {
        principal: Principal,
        expires: Option<Instant>,
    },
}

/// What the connection does with a request after the gate.
pub(crate) enum Gate {
    /// Hand it to the handlers.
    Pass,
    /// The gate answered it.
    Reply(Reply),
    /// Answer, then close (a failed authentication, an unsupported mechanism).
    ReplyThenClose(Reply, String),
    /// Close without an answer.
    Close(String),
}

/// One connection's SASL state.
pub(crate) struct SaslGate {
    listener: Arc<SaslListener>,
    state: State,
}

impl SaslGate {
    pub(crate) fn new(listener: Arc<SaslListener>) -> Self {
        Self {
            listener,
            state: State::Handshake,
        }
    }

    /// Passes, answers or refuses one request of the connection.
    pub(crate) async fn check(
        &mut self,
        broker: &Broker,
        incoming: &Incoming,
        connection: &mut ConnectionContext,
    ) -> Gate {
        if matches!(self.state, State::Exchange { raw: true, .. }) {
            return self
                .raw_token(broker, incoming.frame().clone(), connection)
                .await;
        }
        let prefix = *incoming.prefix();
        let key = ApiKey::from_i16(prefix.api_key);
        if let State::Authenticated { expires, .. } = &self.state {
            if expires.is_some_and(|at| Instant::now() >= at) {
                return Gate::Close(
                    "SASL session expired (connections.max.reauth.ms) without re-authentication"
                        .into(),
                );
            }
            if key != Some(ApiKey::SaslHandshake) {
                return Gate::Pass;
            }
        }
        let Some(request) = incoming.decoded() else {
            return match key {
                Some(ApiKey::ApiVersions) => Gate::Pass,
                _ => Gate::Close("request before SASL authentication".into()),
            };
        };
        let version = request.version();
        let correlation_id = request.header.correlation_id;
        match &request.body {
            RequestBody::ApiVersions(_) => Gate::Pass,
            RequestBody::SaslHandshake(r) => self.handshake(
                &r.mechanism,
                version,
                correlation_id,
                broker.clock.wall_ms(),
            ),
            RequestBody::SaslAuthenticate(r) => {
                self.authenticate(broker, &r.auth_bytes, version, correlation_id, connection)
                    .await
            }
            _ => Gate::Close(format!(
                "{:?} before SASL authentication (only ApiVersions, SaslHandshake and SaslAuthenticate are served)",
                request.api_key()
            )),
        }
    }

    fn handshake(
        &mut self,
        mechanism: &str,
        version: i16,
        correlation_id: i32,
        now_ms: i64,
    ) -> Gate {
        let previous = match &self.state {
            State::Handshake => None,
            State::Authenticated { principal, .. } => Some(principal.clone()),
            State::Exchange { .. } => {
                return Gate::Close("SaslHandshake in the middle of an exchange".into());
            }
        };
        let enabled: Vec<KStr> = self
            .listener
            .mechanisms
            .iter()
            .map(|m| KStr::from_static(m.name()))
            .collect();
        let chosen = Mechanism::from_name(mechanism)
            .ok()
            .filter(|m| self.listener.mechanisms.contains(m));
        let Some(chosen) = chosen else {
            let body = ResponseBody::SaslHandshake(SaslHandshakeResponse {
                error_code: ErrorCode::UNSUPPORTED_SASL_MECHANISM.0,
                mechanisms: enabled,
            });
            return Gate::ReplyThenClose(
                encode(correlation_id, &body, version),
                format!("SASL mechanism {mechanism:?} is not enabled"),
            );
        };
        if version == 0 && previous.is_some() {
            // Re-authentication (KIP-368) needs SaslAuthenticate.
            return Gate::Close("SaslHandshake v0 on an authenticated connection".into());
        }
        let exchange = match (&self.listener.oauth, chosen) {
            (Some(validator), Mechanism::OAuthBearer) => {
                ServerExchange::oauthbearer(Arc::clone(validator), now_ms)
            }
            _ => ServerExchange::new(chosen),
        };
        self.state = State::Exchange {
            exchange: Box::new(exchange),
            mechanism: chosen,
            previous,
            raw: version == 0,
        };
        let body = ResponseBody::SaslHandshake(SaslHandshakeResponse {
            error_code: 0,
            mechanisms: enabled,
        });
        Gate::Reply(encode(correlation_id, &body, version))
    }

    async fn authenticate(
        &mut self,
        broker: &Broker,
        auth_bytes: &Bytes,
        version: i16,
        correlation_id: i32,
        connection: &mut ConnectionContext,
    ) -> Gate {
        let State::Exchange {
            exchange,
            mechanism,
            previous,
            raw: false,
        } = &mut self.state
        else {
            let body = failure(
                ErrorCode::ILLEGAL_SASL_STATE,
                "SaslAuthenticate before SaslHandshake",
            );
            return Gate::ReplyThenClose(
                encode(correlation_id, &body, version),
                "SaslAuthenticate before SaslHandshake".into(),
            );
        };
        let creds = Credentials {
            listener: &self.listener,
            broker,
        };
        // Token times are the identity provider's wall clock.
        let now_ms = broker.clock.wall_ms();
        exchange.set_now_ms(now_ms);
        match exchange.step(auth_bytes, &creds) {
            Ok(ServerStep::Challenge(bytes)) => {
                let body = ResponseBody::SaslAuthenticate(SaslAuthenticateResponse {
                    auth_bytes: Bytes::from(bytes),
                    ..Default::default()
                });
                Gate::Reply(encode(correlation_id, &body, version))
            }
            Ok(ServerStep::Done {
                response,
                authorization_id,
            }) => {
                let principal = Principal::user(authorization_id);
                let mechanism = *mechanism;
                if let Some(previous) = previous.as_ref().filter(|p| **p != principal) {
                    tracing::info!(peer = ?connection.peer(), %previous, new = %principal,
                        "re-authentication as another principal refused; closing");
                    let body = failure(
                        ErrorCode::SASL_AUTHENTICATION_FAILED,
                        "Cannot change principals during re-authentication",
                    );
                    return Gate::ReplyThenClose(
                        encode(correlation_id, &body, version),
                        "re-authentication changed the principal".into(),
                    );
                }
                // Kafka's rule (KIP-368): `connections.max.reauth.ms`, or less when the
                // credential (an OAUTHBEARER token) expires sooner.
                let reauth_ms = self
                    .listener
                    .reauth
                    .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
                let lifetime_ms =
                    session_lifetime_ms(exchange.credential_expiry_ms(), reauth_ms, now_ms);
                let lifetime = u64::try_from(lifetime_ms)
                    .ok()
                    .filter(|ms| *ms > 0)
                    .map(Duration::from_millis);
                tracing::debug!(peer = ?connection.peer(), mechanism = mechanism.name(),
                    principal = %principal, "SASL authentication succeeded");
                connection.authenticated(principal.clone());
                self.state = State::Authenticated {
                    principal,
                    expires: lifetime.map(|d| Instant::now() + d),
                };
                let body = ResponseBody::SaslAuthenticate(SaslAuthenticateResponse {
                    auth_bytes: Bytes::from(response),
                    session_lifetime_ms: lifetime.map_or(0, |d| d.as_millis() as i64),
                    ..Default::default()
                });
                Gate::Reply(encode(correlation_id, &body, version))
            }
            Err(e) => {
                let mechanism = mechanism.name();
                if let Some(why) = exchange.token_rejection() {
                    // The token's fault, for the log (the client was told only the status).
                    tracing::info!(peer = ?connection.peer(), reason = %why,
                        "OAUTHBEARER token refused");
                }
                self.fail(connection, mechanism, &e).await;
                let code = ErrorCode(e.kafka_error_code());
                let message = match code {
                    ErrorCode::SASL_AUTHENTICATION_FAILED => format!(
                        "Authentication failed during authentication due to invalid credentials with SASL mechanism {mechanism}"
                    ),
                    _ => e.to_string(),
                };
                let body = failure(code, &message);
                Gate::ReplyThenClose(
                    encode(correlation_id, &body, version),
                    format!("SASL authentication failed ({mechanism})"),
                )
            }
        }
    }

    /// One raw token of a SaslHandshake v0 exchange (Kafka's framing for it: the bare token,
    /// size-prefixed, each way). The mechanism's answer goes back the same way, an empty one
    /// included (Kafka sends PLAIN's empty answer too); a failure closes the connection after
    /// the failed-authentication delay, as there is no way to tell the client.
    async fn raw_token(
        &mut self,
        broker: &Broker,
        token: Bytes,
        connection: &mut ConnectionContext,
    ) -> Gate {
        let State::Exchange {
            exchange,
            mechanism,
            ..
        } = &mut self.state
        else {
            return Gate::Close("SASL token outside an exchange".into());
        };
        let creds = Credentials {
            listener: &self.listener,
            broker,
        };
        // Token times are the identity provider's wall clock.
        let now_ms = broker.clock.wall_ms();
        exchange.set_now_ms(now_ms);
        let mechanism = *mechanism;
        let answer = match exchange.step(&token, &creds) {
            Ok(ServerStep::Challenge(bytes)) => bytes,
            Ok(ServerStep::Done {
                response,
                authorization_id,
            }) => {
                let principal = Principal::user(authorization_id);
                tracing::debug!(peer = ?connection.peer(), mechanism = mechanism.name(),
                    principal = %principal, "SASL authentication succeeded (SaslHandshake v0)");
                connection.authenticated(principal.clone());
                self.state = State::Authenticated {
                    principal,
                    expires: self.listener.reauth.map(|d| Instant::now() + d),
                };
                response
            }
            Err(e) => {
                self.fail(connection, mechanism.name(), &e).await;
                return Gate::Close(format!(
                    "SASL authentication failed ({}, SaslHandshake v0)",
                    mechanism.name()
                ));
            }
        };
        match kafka_net::codec::size_prefix(answer.len()) {
            Ok(prefix) => Gate::Reply(Reply::Chunks(vec![prefix, Bytes::from(answer)])),
            Err(e) => Gate::Close(format!("SASL answer not sendable: {e}")),
        }
    }

    /// A failed authentication: logged without the secret, answered after the delay.
    async fn fail(&mut self, connection: &ConnectionContext, mechanism: &str, e: &SaslError) {
        tracing::info!(peer = ?connection.peer(), listener = %self.listener.name, mechanism,
            reason = %e, "SASL authentication failed");
        self.state = State::Handshake;
        let wait = match connection.peer() {
            Some(peer) => {
                crate::sync::lock(&self.listener.failures).failed(peer.ip(), Instant::now())
            }
            None => Duration::ZERO,
        };
        tokio::time::sleep(self.listener.failure_delay + wait).await;
    }
}

fn failure(code: ErrorCode, message: &str) -> ResponseBody {
    ResponseBody::SaslAuthenticate(SaslAuthenticateResponse {
        error_code: code.0,
        error_message: Some(KStr::from(message.to_owned())),
        ..Default::default()
    })
}

fn encode(correlation_id: i32, body: &ResponseBody, version: i16) -> Reply {
    crate::handler::encode(correlation_id, body, version)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_beyond_the_rate_wait_for_their_token_per_address() {
        let mut l = FailureLimiter::new(10.0);
        let t0 = Instant::now();
        let a: IpAddr = [10, 0, 0, 1].into();
        let b: IpAddr = [10, 0, 0, 2].into();
        // The bucket holds 10: the first 10 failures do not wait.
        for _ in 0..10 {
            assert_eq!(l.failed(a, t0), Duration::ZERO);
        }
        // The next ones wait 0.1 s more each.
        let w1 = l.failed(a, t0);
        let w2 = l.failed(a, t0);
        assert!((w1.as_secs_f64() - 0.1).abs() < 1e-6, "{w1:?}");
        assert!((w2.as_secs_f64() - 0.2).abs() < 1e-6, "{w2:?}");
        // Another address is not affected.
        assert_eq!(l.failed(b, t0), Duration::ZERO);
        // At the rate, failures wait at most one token's time.
        let mut t = t0 + Duration::from_secs(2);
        for _ in 0..100 {
            assert!(l.failed(a, t) <= Duration::from_millis(100));
            t += Duration::from_millis(100);
        }
        // Memory is bounded.
        for i in 0..(MAX_TRACKED_ADDRESSES as u32 + 50) {
            l.failed(IpAddr::from(i.to_be_bytes()), t);
        }
        assert!(l.buckets.len() <= MAX_TRACKED_ADDRESSES);
    }
}
