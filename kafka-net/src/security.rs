//! A client's security settings with Kafka's keys: `security.protocol`, the `ssl.*` keys
//! ([`crate::tls`]) and SASL's (`sasl.mechanism` with `sasl.jaas.config` as the Java client
//! takes them, or `sasl.username` / `sasl.password` as librdkafka does). The producer, the consumer and the admin client hand every such key to
//! [`SecurityKeys::set`] and build one [`ClientSecurity`] that each connection uses.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;

use kafka_auth::jaas::JaasConfig;
use kafka_auth::sasl::{Mechanism, Secret};

use crate::error::NetError;
use crate::tls::{self, TlsSettings};

/// Kafka's security protocols (`security.protocol`, `listener.security.protocol.map`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub enum SecurityProtocol {
    #[default]
    Plaintext,
    Ssl,
    SaslPlaintext,
    SaslSsl,
}

impl SecurityProtocol {
    pub const ALL: [SecurityProtocol; 4] = [
        SecurityProtocol::Plaintext,
        SecurityProtocol::Ssl,
        SecurityProtocol::SaslPlaintext,
        SecurityProtocol::SaslSsl,
    ];

    /// Kafka's name of the protocol (`SASL_SSL`, ...).
    pub fn name(self) -> &'static str {
        match self {
            SecurityProtocol::Plaintext => "PLAINTEXT",
            SecurityProtocol::Ssl => "SSL",
            SecurityProtocol::SaslPlaintext => "SASL_PLAINTEXT",
            SecurityProtocol::SaslSsl => "SASL_SSL",
        }
    }

    /// The protocol of a name, any case.
    pub fn from_name(name: &str) -> Option<Self> {
        let upper = name.trim().to_ascii_uppercase();
        Self::ALL.into_iter().find(|p| p.name() == upper)
    }

    /// Whether the protocol runs over TLS.
    pub fn tls(self) -> bool {
        matches!(self, SecurityProtocol::Ssl | SecurityProtocol::SaslSsl)
    }

    /// Whether the protocol authenticates with SASL.
    pub fn sasl(self) -> bool {
        matches!(
            self,
            SecurityProtocol::SaslPlaintext | SecurityProtocol::SaslSsl
        )
    }
}

impl fmt::Display for SecurityProtocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a connection needs to secure itself, built once per client from its keys (two are
/// equal when built from the same keys).
#[derive(Debug, Clone, Default)]
pub struct ClientSecurity {
    pub protocol: SecurityProtocol,
    /// The TLS configuration when the protocol runs over TLS.
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// Who to authenticate as when the protocol uses SASL.
    pub sasl: Option<SaslLogin>,
    keys: SecurityKeys,
}

/// A SASL mechanism and the credentials to use with it (the password prints as `[hidden]`).
/// OAUTHBEARER logins take their tokens from `oauth` (user name and password empty).
#[derive(Debug, Clone)]
pub struct SaslLogin {
    pub mechanism: Mechanism,
    pub username: String,
    pub password: Secret,
    pub oauth: Option<Arc<dyn OAuthTokenProvider>>,
}

/// A token (a JWT's compact form) with the SASL extensions to send, or why there is none.
pub type TokenResult = Result<(String, BTreeMap<String, String>), String>;

/// Where an OAUTHBEARER login gets its token: asked at every (re-)authentication, so a
/// provider may hand out a fresh token each time.
pub trait OAuthTokenProvider: fmt::Debug + Send + Sync {
    /// A token (a JWT's compact form) and the SASL extensions to send with it.
    fn token(&self) -> BoxFuture<'_, TokenResult>;
}

/// Kafka's unsecured login (`OAuthBearerLoginModule` with `unsecuredLoginStringClaim_sub`, for
/// development): an unsigned token made at each login.
#[derive(Debug)]
struct UnsecuredTokens(kafka_auth::sasl::oauthbearer::UnsecuredLogin);

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

impl OAuthTokenProvider for UnsecuredTokens {
    fn token(&self) -> BoxFuture<'_, TokenResult> {
        let made = self
            .0
            .token(now_ms())
            .map(|t| (t.value().to_owned(), self.0.extensions().clone()))
            .map_err(|e| e.to_string());
        Box::pin(std::future::ready(made))
    }
}

/// A token read from a file at each login (`sasl.oauthbearer.token.endpoint.url=file:...`, as
/// Kafka's clients read one): whatever renews the file renews the logins.
#[derive(Debug)]
struct FileToken(std::path::PathBuf);

impl OAuthTokenProvider for FileToken {
    fn token(&self) -> BoxFuture<'_, TokenResult> {
        let read = std::fs::read_to_string(&self.0)
            .map(|text| (text.trim().to_owned(), BTreeMap::new()))
            .map_err(|e| format!("token file {}: {e}", self.0.display()));
        Box::pin(std::future::ready(read))
    }
}

/// The client-credentials grant (RFC 6749 4.4) against `sasl.oauthbearer.token.endpoint.url`,
/// as Kafka's `OAuthBearerLoginCallbackHandler`: `clientId`, `clientSecret` and `scope` from
/// the JAAS options; the token is kept until 80 % of its life has passed (Kafka's
/// `sasl.login.refresh.window.factor` default), then a new one is asked for.
struct ClientCredentialsTokens {
    url: String,
    grant: kafka_auth::sasl::oauthbearer::ClientCredentials,
    /// For an https endpoint: the client's `ssl.*` settings (its truststore), as Kafka's.
    tls: Option<Arc<rustls::ClientConfig>>,
    timeout: std::time::Duration,
    cached: std::sync::Mutex<Option<(String, i64)>>,
}

impl fmt::Debug for ClientCredentialsTokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientCredentialsTokens")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl OAuthTokenProvider for ClientCredentialsTokens {
    fn token(&self) -> BoxFuture<'_, TokenResult> {
        Box::pin(async move {
            let now = now_ms();
            if let Ok(cached) = self.cached.lock()
                && let Some((token, refresh_at)) = cached.as_ref()
                && now < *refresh_at
            {
                return Ok((token.clone(), BTreeMap::new()));
            }
            let request = self.grant.request();
            let answer = crate::http::request(
                "POST",
                &self.url,
                &request.headers(),
                request.body.as_bytes(),
                self.tls.clone(),
                self.timeout,
            )
            .await
            .map_err(|e| e.to_string())?;
            let token =
                kafka_auth::sasl::oauthbearer::parse_token_response(answer.status, &answer.body)
                    .map_err(|e| format!("token endpoint {}: {e}", self.url))?;
            let value = token.token().to_owned();
            // The JWT's own times when it has them (Kafka reads `exp`), else `expires_in`.
            let (start, expiry) =
                match kafka_auth::sasl::oauthbearer::inspect_login_token(&value, "sub", "scope") {
                    Ok(t) => (t.start_time_ms().unwrap_or(now), t.lifetime_ms()),
                    Err(_) => (
                        now,
                        now.saturating_add(token.expires_in.unwrap_or(3600).saturating_mul(1000)),
                    ),
                };
            let refresh_at = start + (expiry - start) * 8 / 10;
            if let Ok(mut cached) = self.cached.lock() {
                *cached = Some((value.clone(), refresh_at));
            }
            Ok((value, BTreeMap::new()))
        })
    }
}

impl ClientSecurity {
    /// OAUTHBEARER with tokens from `provider`, asked at every login and re-authentication
    /// (the Java client's login callback handler, librdkafka's token refresh callback). The
    /// protocol stays what `security.protocol` said (SASL_PLAINTEXT or SASL_SSL). Two
    /// securities compare by their keys, not by their providers.
    #[must_use]
    pub fn with_oauth_token_provider(mut self, provider: Arc<dyn OAuthTokenProvider>) -> Self {
        self.sasl = Some(SaslLogin {
            mechanism: Mechanism::OAuthBearer,
            username: String::new(),
            password: Secret::new(Vec::new()),
            oauth: Some(provider),
        });
        self
    }
}

impl PartialEq for ClientSecurity {
    fn eq(&self, other: &Self) -> bool {
        self.keys == other.keys
    }
}

impl Eq for ClientSecurity {}

/// The security keys of a client's configuration as they are set, turned into a
/// [`ClientSecurity`] by [`SecurityKeys::build`].
#[derive(Clone, Default, PartialEq, Eq)]
pub struct SecurityKeys {
    protocol: SecurityProtocol,
    values: BTreeMap<String, String>,
}

impl fmt::Debug for SecurityKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown: BTreeMap<&str, &str> = self
            .values
            .iter()
            .map(|(k, v)| {
                let hidden =
                    tls::is_sensitive(k) || k == "sasl.password" || k == "sasl.jaas.config";
                let v = if hidden { "[hidden]" } else { v.as_str() };
                (k.as_str(), v)
            })
            .collect();
        f.debug_struct("SecurityKeys")
            .field("protocol", &self.protocol)
            .field("values", &shown)
            .finish()
    }
}

impl SecurityKeys {
    /// Takes `key` if it is a security key: `Ok(true)` when taken, `Ok(false)` when the key
    /// is not one, an error for a bad `security.protocol` or an unknown `ssl.` key.
    pub fn set(&mut self, key: &str, value: &str) -> Result<bool, NetError> {
        if key == "security.protocol" {
            self.protocol = SecurityProtocol::from_name(value).ok_or_else(|| {
                NetError::Config(format!(
                    "security.protocol: {value:?} is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"
                ))
            })?;
            return Ok(true);
        }
        if key.starts_with("sasl.") {
            // Every sasl.* key is taken; those read are sasl.mechanism, sasl.jaas.config,
            // sasl.username and sasl.password (the others tune logins this client does not do).
            self.values.insert(key.to_owned(), value.to_owned());
            return Ok(true);
        }
        if key.starts_with("ssl.") {
            if !tls::SSL_KEYS.contains(&key) {
                return Err(NetError::Config(format!("unknown TLS setting {key}")));
            }
            self.values.insert(key.to_owned(), value.to_owned());
            return Ok(true);
        }
        Ok(false)
    }

    /// The mechanism and credentials: `sasl.mechanism` (required: Kafka's default GSSAPI is
    /// not offered), the user name and password from `sasl.jaas.config` (PlainLoginModule or
    /// ScramLoginModule) or `sasl.username` / `sasl.password`.
    fn sasl_login(&self) -> Result<SaslLogin, NetError> {
        let cfg = NetError::Config;
        let name = self.values.get("sasl.mechanism").map(|m| m.trim()).ok_or_else(|| {
            cfg(format!(
                "security.protocol={} needs sasl.mechanism (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER)",
                self.protocol
            ))
        })?;
        let mechanism = Mechanism::from_name(&name.to_ascii_uppercase())
            .map_err(|_| cfg(format!("sasl.mechanism: {name} is not supported")))?;
        if mechanism == Mechanism::OAuthBearer {
            return self.oauth_login();
        }
        let (username, password) = match self.values.get("sasl.jaas.config") {
            Some(jaas) => {
                let module = JaasConfig::parse_single(jaas)
                    .map_err(|e| cfg(format!("sasl.jaas.config: {e}")))?;
                let user = module.username().map(str::to_owned);
                (user, module.password())
            }
            None => (
                self.values.get("sasl.username").cloned(),
                self.values
                    .get("sasl.password")
                    .map(|p| Secret::new(p.as_bytes().to_vec())),
            ),
        };
        let (Some(username), Some(password)) = (username, password) else {
            return Err(cfg(
                "SASL needs a user name and password: sasl.jaas.config with username and \
                 password, or sasl.username and sasl.password"
                    .into(),
            ));
        };
        Ok(SaslLogin {
            mechanism,
            username,
            password,
            oauth: None,
        })
    }

    /// OAUTHBEARER's token source: a token file (`sasl.oauthbearer.token.endpoint.url` with a
    /// `file:` URL), else Kafka's unsecured login from `sasl.jaas.config`
    /// (`unsecuredLoginStringClaim_sub`). A callback is set in code instead
    /// ([`ClientSecurity::with_oauth_token_provider`]).
    fn oauth_login(&self) -> Result<SaslLogin, NetError> {
        let cfg = NetError::Config;
        let jaas_module = || -> Result<kafka_auth::jaas::LoginModule, NetError> {
            let jaas =
                self.values.get("sasl.jaas.config").ok_or_else(|| {
                    cfg("sasl.mechanism=OAUTHBEARER needs sasl.jaas.config (OAuthBearerLoginModule)"
                    .into())
                })?;
            JaasConfig::parse_single(jaas).map_err(|e| cfg(format!("sasl.jaas.config: {e}")))
        };
        let provider: Arc<dyn OAuthTokenProvider> =
            if let Some(url) = self.values.get("sasl.oauthbearer.token.endpoint.url") {
                let url = url.trim();
                if let Some(path) = url.strip_prefix("file:") {
                    let path = path.strip_prefix("//").unwrap_or(path);
                    if !path.starts_with('/') {
                        return Err(cfg(format!(
                            "sasl.oauthbearer.token.endpoint.url: {url:?}: a file: URL needs an \
                             absolute path"
                        )));
                    }
                    Arc::new(FileToken(path.into()))
                } else {
                    crate::http::Url::parse(url)
                        .map_err(|e| cfg(format!("sasl.oauthbearer.token.endpoint.url: {e}")))?;
                    let urlencode = self
                        .values
                        .get("sasl.oauthbearer.header.urlencode")
                        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
                    let grant = kafka_auth::sasl::oauthbearer::ClientCredentials::from_jaas(
                        &jaas_module()?,
                        urlencode,
                    )
                    .map_err(|e| cfg(format!("sasl.jaas.config: {e}")))?;
                    let tls = if url.starts_with("https://") {
                        let settings = TlsSettings::from_keys(|k| self.values.get(k).cloned())
                            .map_err(|e| cfg(e.to_string()))?;
                        Some(settings.client_config().map_err(|e| cfg(e.to_string()))?)
                    } else {
                        None
                    };
                    let timeout_ms = self
                        .values
                        .get("sasl.login.read.timeout.ms")
                        .and_then(|v| v.trim().parse::<u64>().ok())
                        .unwrap_or(10_000);
                    Arc::new(ClientCredentialsTokens {
                        url: url.to_owned(),
                        grant,
                        tls,
                        timeout: std::time::Duration::from_millis(timeout_ms),
                        cached: std::sync::Mutex::new(None),
                    })
                }
            } else {
                let jaas = self.values.get("sasl.jaas.config").ok_or_else(|| {
                    cfg("sasl.mechanism=OAUTHBEARER needs sasl.jaas.config (OAuthBearerLoginModule \
                         with unsecuredLoginStringClaim_sub) or sasl.oauthbearer.token.endpoint.url"
                        .into())
                })?;
                let module = JaasConfig::parse_single(jaas)
                    .map_err(|e| cfg(format!("sasl.jaas.config: {e}")))?;
                let login = kafka_auth::sasl::oauthbearer::UnsecuredLogin::from_jaas(&module)
                    .map_err(|e| cfg(format!("sasl.jaas.config: {e}")))?;
                Arc::new(UnsecuredTokens(login))
            };
        Ok(SaslLogin {
            mechanism: Mechanism::OAuthBearer,
            username: String::new(),
            password: Secret::new(Vec::new()),
            oauth: Some(provider),
        })
    }

    /// `security.protocol`.
    pub fn protocol(&self) -> SecurityProtocol {
        self.protocol
    }

    /// Reads the files and builds what connections use; a bad setting is an error naming its
    /// key.
    pub fn build(&self) -> Result<ClientSecurity, NetError> {
        let tls = if self.protocol.tls() {
            let settings = TlsSettings::from_keys(|k| self.values.get(k).cloned())
                .map_err(|e| NetError::Config(e.to_string()))?;
            Some(
                settings
                    .client_config()
                    .map_err(|e| NetError::Config(e.to_string()))?,
            )
        } else {
            None
        };
        let sasl = if self.protocol.sasl() {
            Some(self.sasl_login()?)
        } else {
            None
        };
        Ok(ClientSecurity {
            protocol: self.protocol,
            tls,
            sasl,
            keys: self.clone(),
        })
    }
}
