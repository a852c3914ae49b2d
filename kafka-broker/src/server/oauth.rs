//! The token validator of a listener's OAUTHBEARER logins, chosen as Kafka chooses it:
//!
//! - `listener.name.NAME.oauthbearer.sasl.server.callback.handler.class` naming Kafka's
//!   `OAuthBearerValidatorCallbackHandler` (KIP-768): signed JWTs checked against the keys of
//!   `sasl.oauthbearer.jwks.endpoint.url` (an `https://` or `http://` endpoint, fetched before
//!   the listener serves and refreshed as Kafka does, see [`HttpJwks`]; or a `file:` URL, read
//!   again when the file changes), with `sasl.oauthbearer.expected.audience`,
//!   `sasl.oauthbearer.expected.issuer`, `sasl.oauthbearer.clock.skew.seconds` and the claim
//!   names ([`JwtValidatorConfig`]).
//! - Otherwise (Kafka's default, for development only): unsecured `alg: none` tokens, with
//!   the `unsecuredValidator*` options of the listener's OAuthBearerLoginModule JAAS config.

use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

use kafka_auth::jaas::JaasConfig;
use kafka_auth::sasl::oauthbearer::{
    JsonWebKeySet, JwtValidator, JwtValidatorConfig, OAuthBearerError, OAuthBearerToken,
    TokenValidator, UnsecuredValidator,
};

use crate::config::BrokerConfig;
use crate::error::BrokerError;
use crate::sync::{read, write};

/// The callback handler classes that mean signed JWTs (Kafka 4's name, and Kafka 3's).
const SIGNED: [&str; 2] = [
    "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
    "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerValidatorCallbackHandler",
];

/// Kafka's default handler: unsecured tokens.
const UNSECURED: &str = "org.apache.kafka.common.security.oauthbearer.internals.unsecured.OAuthBearerUnsecuredValidatorCallbackHandler";

/// A listener's OAUTHBEARER validation: the validator, and for a JWKS endpoint over HTTP(S)
/// the key set to fetch before serving and to refresh ([`HttpJwks::run`]).
pub(crate) struct OAuth {
    pub(crate) validator: Arc<dyn TokenValidator>,
    pub(crate) endpoint: Option<Arc<HttpJwks>>,
}

/// The validator for listener `name`.
pub(crate) fn validator(config: &BrokerConfig, name: &str) -> Result<OAuth, BrokerError> {
    let sec = &config.security;
    let err = |m: String| BrokerError::Config(format!("listener {name}: {m}"));
    let handler = sec
        .listener_value(name, "oauthbearer.sasl.server.callback.handler.class")
        .map(str::trim)
        .unwrap_or(UNSECURED);
    if SIGNED.contains(&handler) {
        let key = "sasl.oauthbearer.jwks.endpoint.url";
        let url = sec
            .listener_value(name, key)
            .ok_or_else(|| err(format!("{handler} needs {key}")))?;
        let settings =
            JwtValidatorConfig::from_config(|k| sec.listener_value(name, k).map(str::to_owned))
                .map_err(|e| err(e.to_string()))?;
        if url.starts_with("http://") || url.starts_with("https://") {
            kafka_net::http::Url::parse(url).map_err(|e| err(format!("{key}: {e}")))?;
            let tls = if url.starts_with("https://") {
                let tls = sec.tls_settings(name)?;
                Some(
                    tls.client_config()
                        .map_err(|e| err(format!("{key}: {e}")))?,
                )
            } else {
                None
            };
            let ms = |k: &str, default: u64| -> Result<u64, BrokerError> {
                sec.listener_value(name, k)
                    .map_or(Ok(default), |v| v.trim().parse())
                    .map_err(|_| err(format!("{k}: not a number of milliseconds")))
            };
            let endpoint = Arc::new(HttpJwks {
                url: url.trim().to_owned(),
                tls,
                refresh: Duration::from_millis(ms(
                    "sasl.oauthbearer.jwks.endpoint.refresh.ms",
                    3_600_000,
                )?),
                backoff: Duration::from_millis(
                    ms("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", 100)?.max(100),
                ),
                current: RwLock::new(JwtValidator::new(settings, JsonWebKeySet::new(Vec::new()))),
                wanted: tokio::sync::Notify::new(),
            });
            return Ok(OAuth {
                validator: Arc::clone(&endpoint) as Arc<dyn TokenValidator>,
                endpoint: Some(endpoint),
            });
        }
        let path = file_url(url).ok_or_else(|| {
            err(format!(
                "{key}: {url:?}: a file:, http:// or https:// URL of the identity provider's JWKS"
            ))
        })?;
        let jwks = FileJwks::open(path, settings).map_err(err)?;
        return Ok(OAuth {
            validator: Arc::new(jwks),
            endpoint: None,
        });
    }
    if handler != UNSECURED {
        return Err(err(format!(
            "oauthbearer.sasl.server.callback.handler.class: {handler} is not available \
             (use {} for signed tokens)",
            SIGNED[0]
        )));
    }
    let jaas = sec
        .listener_value(name, "oauthbearer.sasl.jaas.config")
        .or_else(|| sec.listener_value(name, "sasl.jaas.config"))
        .unwrap_or("org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;");
    let module =
        JaasConfig::parse_single(jaas).map_err(|e| err(format!("sasl.jaas.config: {e}")))?;
    let unsecured = UnsecuredValidator::from_jaas(&module).map_err(|e| err(e.to_string()))?;
    tracing::warn!(
        listener = name,
        "OAUTHBEARER accepts unsecured (unsigned) tokens on this listener: for development only"
    );
    Ok(OAuth {
        validator: Arc::new(unsecured),
        endpoint: None,
    })
}

/// Signed-token validation with the keys of an identity provider's JWKS endpoint, fetched
/// before the listener serves, again every `sasl.oauthbearer.jwks.endpoint.refresh.ms`, and
/// early when a token names a key id the set does not have (at most once per
/// `sasl.oauthbearer.jwks.endpoint.retry.backoff.ms`), as Kafka's refreshing key resolver.
/// A failed fetch keeps the keys it had.
pub(crate) struct HttpJwks {
    url: String,
    tls: Option<Arc<rustls::ClientConfig>>,
    refresh: Duration,
    backoff: Duration,
    current: RwLock<JwtValidator>,
    wanted: tokio::sync::Notify,
}

impl std::fmt::Debug for HttpJwks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpJwks")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl HttpJwks {
    /// Fetches the key set once; the keys are replaced only by a usable set.
    pub(crate) async fn fetch(&self) -> Result<usize, String> {
        let answer = kafka_net::http::request(
            "GET",
            &self.url,
            &[("Accept", "application/json")],
            b"",
            self.tls.clone(),
            Duration::from_secs(10),
        )
        .await
        .map_err(|e| e.to_string())?;
        if answer.status != 200 {
            return Err(format!("JWKS {}: HTTP {}", self.url, answer.status));
        }
        let keys =
            JsonWebKeySet::parse(&answer.body).map_err(|e| format!("JWKS {}: {e}", self.url))?;
        let n = keys.keys().len();
        if n == 0 {
            return Err(format!("JWKS {}: no usable key", self.url));
        }
        let mut current = write(&self.current);
        *current = current.with_keys(keys);
        Ok(n)
    }

    /// Refreshes the keys for the broker's life: on schedule, and early when asked.
    pub(crate) async fn run(self: Arc<Self>) {
        loop {
            let _ = tokio::time::timeout(self.refresh, self.wanted.notified()).await;
            match self.fetch().await {
                Ok(n) => tracing::debug!(url = %self.url, keys = n, "JWKS refreshed"),
                Err(e) => {
                    tracing::warn!(error = %e, "JWKS not refreshed; keeping the keys read before");
                }
            }
            tokio::time::sleep(self.backoff).await;
        }
    }
}

impl TokenValidator for HttpJwks {
    fn validate(&self, token: &str, now_ms: i64) -> Result<OAuthBearerToken, OAuthBearerError> {
        let result = read(&self.current).validate(token, now_ms);
        if matches!(result, Err(OAuthBearerError::UnknownKeyId { .. })) {
            // A key the provider may have added since the last fetch.
            self.wanted.notify_one();
        }
        result
    }
}

/// The path of a `file:` URL (`file:/p`, `file:///p`).
fn file_url(url: &str) -> Option<PathBuf> {
    let rest = url.trim().strip_prefix("file:")?;
    let path = rest.strip_prefix("//").unwrap_or(rest);
    path.starts_with('/').then(|| PathBuf::from(path))
}

/// Signed-token validation with the keys of a JWKS file, read again when it changes.
#[derive(Debug)]
struct FileJwks {
    path: PathBuf,
    current: RwLock<(Option<SystemTime>, JwtValidator)>,
}

impl FileJwks {
    fn open(path: PathBuf, settings: JwtValidatorConfig) -> Result<Self, String> {
        let (modified, keys) = read_jwks(&path)?;
        Ok(Self {
            current: RwLock::new((modified, JwtValidator::new(settings, keys))),
            path,
        })
    }

    /// Reads the file again if it changed since it was last read; a file that cannot be read
    /// or parsed now keeps the keys it had (and is logged).
    fn refresh(&self) {
        let modified = std::fs::metadata(&self.path)
            .and_then(|m| m.modified())
            .ok();
        if modified == read(&self.current).0 {
            return;
        }
        match read_jwks(&self.path) {
            Ok((modified, keys)) => {
                let mut current = write(&self.current);
                let next = current.1.with_keys(keys);
                *current = (modified, next);
                tracing::info!(path = %self.path.display(), "JWKS reloaded");
            }
            Err(e) => tracing::warn!(error = %e, "JWKS not reloaded; keeping the keys read before"),
        }
    }
}

fn read_jwks(path: &PathBuf) -> Result<(Option<SystemTime>, JsonWebKeySet), String> {
    let bytes = std::fs::read(path).map_err(|e| format!("JWKS {}: {e}", path.display()))?;
    let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok();
    let keys = JsonWebKeySet::parse(&bytes).map_err(|e| format!("JWKS {}: {e}", path.display()))?;
    if keys.keys().is_empty() {
        return Err(format!("JWKS {}: no usable key", path.display()));
    }
    Ok((modified, keys))
}

impl TokenValidator for FileJwks {
    fn validate(&self, token: &str, now_ms: i64) -> Result<OAuthBearerToken, OAuthBearerError> {
        self.refresh();
        read(&self.current).1.validate(token, now_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_urls() {
        assert_eq!(
            file_url("file:///etc/jwks.json"),
            Some("/etc/jwks.json".into())
        );
        assert_eq!(
            file_url("file:/etc/jwks.json"),
            Some("/etc/jwks.json".into())
        );
        assert_eq!(file_url("https://idp/keys"), None);
        assert_eq!(file_url("file:relative"), None);
    }
}
