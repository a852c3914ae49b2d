//! The token validator of a listener's OAUTHBEARER logins, chosen as Kafka chooses it:
//!
//! - `listener.name.NAME.oauthbearer.sasl.server.callback.handler.class` naming Kafka's
//!   `OAuthBearerValidatorCallbackHandler` (KIP-768): signed JWTs checked against the keys of
//!   `sasl.oauthbearer.jwks.endpoint.url` (a `file:` URL here; the file is read again when it
//!   changes, so rotated keys are picked up), with `sasl.oauthbearer.expected.audience`,
//!   `sasl.oauthbearer.expected.issuer`, `sasl.oauthbearer.clock.skew.seconds` and the claim
//!   names ([`JwtValidatorConfig`]).
//! - Otherwise (Kafka's default, for development only): unsecured `alg: none` tokens, with
//!   the `unsecuredValidator*` options of the listener's OAuthBearerLoginModule JAAS config.

use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::SystemTime;

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

/// The validator for listener `name`.
pub(crate) fn validator(
    config: &BrokerConfig,
    name: &str,
) -> Result<Arc<dyn TokenValidator>, BrokerError> {
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
        let path = file_url(url).ok_or_else(|| {
            err(format!(
                "{key}: {url:?}: only file: URLs are read here (a JWKS document on disk)"
            ))
        })?;
        let settings =
            JwtValidatorConfig::from_config(|k| sec.listener_value(name, k).map(str::to_owned))
                .map_err(|e| err(e.to_string()))?;
        let jwks = FileJwks::open(path, settings).map_err(err)?;
        return Ok(Arc::new(jwks));
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
    Ok(Arc::new(unsecured))
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
