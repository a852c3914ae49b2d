//! The broker's token validators, as Kafka's callback handlers:
//!
//! - [`JwtValidator`], Kafka's `OAuthBearerValidatorCallbackHandler` with its
//!   `BrokerJwtValidator` (KIP-768): a signature by a key of a JWKS, never `alg: none`
//!   (jose4j's `DISALLOW_NONE`), no `crit` header; `exp` and `iat` required (jose4j's
//!   `setRequireExpirationTime` and `setRequireIssuedAt`, unless
//!   [`JwtValidatorConfig::require_issued_at`] is turned off); expired when the time minus
//!   the skew is on or after `exp`; not valid yet when the time plus the skew is before
//!   `nbf`; the audience, when `sasl.oauthbearer.expected.audience` is set, must hold one of
//!   its values, and a token with an audience is refused when none is configured (jose4j's
//!   default audience check); the issuer must equal `sasl.oauthbearer.expected.issuer` when
//!   set; the principal from `sasl.oauthbearer.sub.claim.name` (a non-blank string), the
//!   scopes from `sasl.oauthbearer.scope.claim.name`.
//! - [`UnsecuredValidator`], Kafka's `OAuthBearerUnsecuredValidatorCallbackHandler`
//!   (development only, Kafka's default when nothing else is configured): `alg: none` and
//!   an empty signature; the principal claim (JAAS `unsecuredValidatorPrincipalClaimName`,
//!   default `sub`) a non-blank string; `iat`, if present, not after the time plus the skew;
//!   `exp` required and the time minus the skew before it; `exp` after `iat`; every scope of
//!   `unsecuredValidatorRequiredScope` in the token (else `insufficient_scope`); the skew from
//!   `unsecuredValidatorAllowableClockSkewMs` (default 0). `nbf` is ignored, as Kafka does.
//!
//! Both are pure: the time is passed in. Imports `error.rs`, `jwt.rs` and `jwks.rs`.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use super::error::{OAuthBearerError, shown};
use super::jwks::JsonWebKeySet;
use super::jwt::Jwt;
use crate::jaas::LoginModule;
use crate::sasl::Secret;

/// A validated token: what Kafka's `OAuthBearerToken` gives the broker. `Debug` hides the
/// token itself.
#[derive(Clone, PartialEq, Eq)]
pub struct OAuthBearerToken {
    value: Secret,
    principal: String,
    scopes: BTreeSet<String>,
    lifetime_ms: i64,
    start_time_ms: Option<i64>,
}

impl fmt::Debug for OAuthBearerToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthBearerToken")
            .field("value", &self.value)
            .field("principal", &self.principal)
            .field("scopes", &self.scopes)
            .field("lifetime_ms", &self.lifetime_ms)
            .field("start_time_ms", &self.start_time_ms)
            .finish()
    }
}

impl OAuthBearerToken {
    /// A token's facts, as a validator (or the client's login) found them.
    pub fn new(
        value: &str,
        principal: String,
        scopes: BTreeSet<String>,
        lifetime_ms: i64,
        start_time_ms: Option<i64>,
    ) -> Self {
        Self {
            value: Secret::new(value.as_bytes().to_vec()),
            principal,
            scopes,
            lifetime_ms,
            start_time_ms,
        }
    }

    /// The token's compact form (a credential: never log it).
    pub fn value(&self) -> &str {
        self.value.expose_str().unwrap_or_default()
    }

    /// The principal name (the user the broker authorizes as).
    pub fn principal(&self) -> &str {
        &self.principal
    }

    /// The token's scopes.
    pub fn scopes(&self) -> &BTreeSet<String> {
        &self.scopes
    }

    /// When the token expires (`exp`), in ms since the epoch: Kafka's `lifetimeMs`, from
    /// which the broker answers `session_lifetime_ms` (KIP-368).
    pub fn lifetime_ms(&self) -> i64 {
        self.lifetime_ms
    }

    /// When the token was issued (`iat`), in ms since the epoch, if it says.
    pub fn start_time_ms(&self) -> Option<i64> {
        self.start_time_ms
    }
}

/// What the broker's OAUTHBEARER exchange asks to check a token. Implemented by
/// [`JwtValidator`] and [`UnsecuredValidator`]; the broker may wrap one (to swap the key set
/// when its JWKS is refreshed, for instance).
pub trait TokenValidator: fmt::Debug + Send + Sync {
    /// Checks `token` (the compact form from the client's `auth=Bearer`) at `now_ms`.
    fn validate(&self, token: &str, now_ms: i64) -> Result<OAuthBearerToken, OAuthBearerError>;
}

impl<T: TokenValidator + ?Sized> TokenValidator for Arc<T> {
    fn validate(&self, token: &str, now_ms: i64) -> Result<OAuthBearerToken, OAuthBearerError> {
        (**self).validate(token, now_ms)
    }
}

/// The `sasl.oauthbearer.*` settings of the signed validator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JwtValidatorConfig {
    /// `sasl.oauthbearer.clock.skew.seconds` (default 30), in ms.
    pub clock_skew_ms: i64,
    /// `sasl.oauthbearer.expected.audience`: any one must be in the token's `aud`.
    pub expected_audiences: Vec<String>,
    /// `sasl.oauthbearer.expected.issuer`.
    pub expected_issuer: Option<String>,
    /// `sasl.oauthbearer.sub.claim.name` (default `sub`).
    pub sub_claim: String,
    /// `sasl.oauthbearer.scope.claim.name` (default `scope`).
    pub scope_claim: String,
    /// Whether `iat` is required (true: jose4j under Kafka's validator requires it).
    pub require_issued_at: bool,
}

impl Default for JwtValidatorConfig {
    fn default() -> Self {
        Self {
            clock_skew_ms: 30_000,
            expected_audiences: Vec::new(),
            expected_issuer: None,
            sub_claim: "sub".into(),
            scope_claim: "scope".into(),
            require_issued_at: true,
        }
    }
}

impl JwtValidatorConfig {
    /// `sasl.oauthbearer.clock.skew.seconds`.
    pub const CLOCK_SKEW_SECONDS: &'static str = "sasl.oauthbearer.clock.skew.seconds";
    /// `sasl.oauthbearer.expected.audience`.
    pub const EXPECTED_AUDIENCE: &'static str = "sasl.oauthbearer.expected.audience";
    /// `sasl.oauthbearer.expected.issuer`.
    pub const EXPECTED_ISSUER: &'static str = "sasl.oauthbearer.expected.issuer";
    /// `sasl.oauthbearer.sub.claim.name`.
    pub const SUB_CLAIM_NAME: &'static str = "sasl.oauthbearer.sub.claim.name";
    /// `sasl.oauthbearer.scope.claim.name`.
    pub const SCOPE_CLAIM_NAME: &'static str = "sasl.oauthbearer.scope.claim.name";

    /// Reads the settings through `get` (the listener's value of a key, with its prefixes
    /// already resolved by the caller). Audiences are a comma list, trimmed, empty items
    /// dropped (Kafka's LIST type); the skew a non-negative integer of seconds.
    pub fn from_config(get: impl Fn(&str) -> Option<String>) -> Result<Self, OAuthBearerError> {
        let mut c = Self::default();
        if let Some(v) = get(Self::CLOCK_SKEW_SECONDS) {
            let secs: i64 = v.trim().parse().map_err(|_| {
                OAuthBearerError::Config(format!("{}: not an integer", Self::CLOCK_SKEW_SECONDS))
            })?;
            if !(0..=i64::from(i32::MAX)).contains(&secs) {
                return Err(OAuthBearerError::Config(format!(
                    "{} must be a non-negative int",
                    Self::CLOCK_SKEW_SECONDS
                )));
            }
            c.clock_skew_ms = secs * 1000;
        }
        if let Some(v) = get(Self::EXPECTED_AUDIENCE) {
            c.expected_audiences = v
                .split(',')
                .map(str::trim)
                .filter(|a| !a.is_empty())
                .map(str::to_owned)
                .collect();
        }
        c.expected_issuer = get(Self::EXPECTED_ISSUER).filter(|i| !i.trim().is_empty());
        for (key, slot) in [
            (Self::SUB_CLAIM_NAME, &mut c.sub_claim),
            (Self::SCOPE_CLAIM_NAME, &mut c.scope_claim),
        ] {
            if let Some(v) = get(key) {
                let v = v.trim();
                if v.is_empty() {
                    return Err(OAuthBearerError::Config(format!("{key} must not be blank")));
                }
                *slot = v.to_owned();
            }
        }
        Ok(c)
    }
}

/// Kafka's OIDC validator: signed JWTs checked against a JWKS (see the module's doc).
#[derive(Debug, Clone)]
pub struct JwtValidator {
    config: JwtValidatorConfig,
    keys: Arc<JsonWebKeySet>,
}

impl JwtValidator {
    /// A validator with these settings and keys.
    pub fn new(config: JwtValidatorConfig, keys: impl Into<Arc<JsonWebKeySet>>) -> Self {
        Self {
            config,
            keys: keys.into(),
        }
    }

    /// The same settings with another key set (after the JWKS is fetched again).
    pub fn with_keys(&self, keys: impl Into<Arc<JsonWebKeySet>>) -> Self {
        Self::new(self.config.clone(), keys)
    }

    /// The settings.
    pub fn config(&self) -> &JwtValidatorConfig {
        &self.config
    }

    /// The key set.
    pub fn keys(&self) -> &JsonWebKeySet {
        &self.keys
    }
}

impl TokenValidator for JwtValidator {
    fn validate(&self, token: &str, now_ms: i64) -> Result<OAuthBearerToken, OAuthBearerError> {
        let c = &self.config;
        let jwt = Jwt::parse(token, false)?;
        if jwt.header().contains_key("crit") {
            return Err(OAuthBearerError::CriticalHeader);
        }
        self.keys.verify(&jwt)?;
        let exp_ms = jwt
            .time_ms("exp")?
            .ok_or_else(|| OAuthBearerError::MissingClaim("exp".into()))?;
        let iat_ms = jwt.time_ms("iat")?;
        if c.require_issued_at && iat_ms.is_none() {
            return Err(OAuthBearerError::MissingClaim("iat".into()));
        }
        let skew_ms = c.clock_skew_ms;
        if now_ms.saturating_sub(skew_ms) >= exp_ms {
            return Err(OAuthBearerError::Expired {
                now_ms,
                skew_ms,
                exp_ms,
            });
        }
        if let Some(nbf_ms) = jwt.time_ms("nbf")? {
            if now_ms.saturating_add(skew_ms) < nbf_ms {
                return Err(OAuthBearerError::NotYetValid {
                    now_ms,
                    skew_ms,
                    nbf_ms,
                });
            }
        }
        let audiences = jwt.audiences()?;
        if c.expected_audiences.is_empty() {
            if !audiences.is_empty() {
                return Err(OAuthBearerError::Audience(
                    "the token names an audience but sasl.oauthbearer.expected.audience is not set",
                ));
            }
        } else if audiences.is_empty() {
            return Err(OAuthBearerError::Audience("the token has no aud claim"));
        } else if !audiences
            .iter()
            .any(|a| c.expected_audiences.iter().any(|e| e == a))
        {
            return Err(OAuthBearerError::Audience(
                "none of the token's audiences is expected",
            ));
        }
        if let Some(expected) = &c.expected_issuer {
            let iss = jwt.string("iss")?;
            if iss != Some(expected.as_str()) {
                return Err(OAuthBearerError::Issuer {
                    found: iss.map(shown),
                });
            }
        }
        let scopes = jwt.scopes(&c.scope_claim)?;
        let principal = jwt.subject(&c.sub_claim)?;
        for (name, v) in [("exp", Some(exp_ms)), ("iat", iat_ms)] {
            if v.is_some_and(|v| v < 0) {
                return Err(OAuthBearerError::InvalidClaim {
                    claim: name.into(),
                    reason: "negative",
                });
            }
        }
        Ok(OAuthBearerToken::new(
            token, principal, scopes, exp_ms, iat_ms,
        ))
    }
}

/// Kafka's unsecured validator (development only; see the module's doc).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsecuredValidator {
    /// `unsecuredValidatorPrincipalClaimName` (default `sub`).
    pub principal_claim: String,
    /// `unsecuredValidatorScopeClaimName` (default `scope`).
    pub scope_claim: String,
    /// `unsecuredValidatorRequiredScope`, split at spaces.
    pub required_scope: Vec<String>,
    /// `unsecuredValidatorAllowableClockSkewMs` (default 0).
    pub clock_skew_ms: i64,
}

impl Default for UnsecuredValidator {
    fn default() -> Self {
        Self {
            principal_claim: "sub".into(),
            scope_claim: "scope".into(),
            required_scope: Vec::new(),
            clock_skew_ms: 0,
        }
    }
}

impl UnsecuredValidator {
    /// Reads the `unsecuredValidator*` options of the broker's OAUTHBEARER JAAS entry
    /// (blank values keep the defaults, as Kafka's handler does).
    pub fn from_jaas(module: &LoginModule) -> Result<Self, OAuthBearerError> {
        let opt = |k: &str| {
            module
                .option(k)
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
        };
        let mut v = Self::default();
        if let Some(p) = opt("unsecuredValidatorPrincipalClaimName") {
            v.principal_claim = p;
        }
        if let Some(s) = opt("unsecuredValidatorScopeClaimName") {
            v.scope_claim = s;
        }
        if let Some(r) = opt("unsecuredValidatorRequiredScope") {
            v.required_scope = r
                .split(' ')
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect();
        }
        if let Some(s) = opt("unsecuredValidatorAllowableClockSkewMs") {
            let ms: i32 = s.parse().map_err(|_| {
                OAuthBearerError::Config(
                    "unsecuredValidatorAllowableClockSkewMs: not an integer".into(),
                )
            })?;
            if ms < 0 {
                return Err(OAuthBearerError::Config(
                    "unsecuredValidatorAllowableClockSkewMs must not be negative".into(),
                ));
            }
            v.clock_skew_ms = i64::from(ms);
        }
        Ok(v)
    }
}

impl TokenValidator for UnsecuredValidator {
    fn validate(&self, token: &str, now_ms: i64) -> Result<OAuthBearerToken, OAuthBearerError> {
        let jwt = Jwt::parse(token, true)?;
        let alg = jwt.alg()?;
        if alg != "none" {
            return Err(OAuthBearerError::Algorithm {
                alg: shown(alg),
                reason: "an unsecured JWS must have 'none' for an algorithm",
            });
        }
        if !jwt.signature().is_empty() {
            return Err(OAuthBearerError::MalformedToken(
                "an unsecured JWS must not contain a digital signature",
            ));
        }
        let scopes = jwt.scopes(&self.scope_claim)?;
        let exp_ms = jwt
            .time_ms("exp")?
            .ok_or_else(|| OAuthBearerError::MissingClaim("exp".into()))?;
        let principal = jwt.subject(&self.principal_claim)?;
        let iat_ms = jwt.time_ms("iat")?;
        let skew_ms = self.clock_skew_ms;
        if let Some(iat_ms) = iat_ms {
            if iat_ms > now_ms.saturating_add(skew_ms) {
                return Err(OAuthBearerError::IssuedInFuture {
                    now_ms,
                    skew_ms,
                    iat_ms,
                });
            }
        }
        if now_ms.saturating_sub(skew_ms) >= exp_ms {
            return Err(OAuthBearerError::Expired {
                now_ms,
                skew_ms,
                exp_ms,
            });
        }
        if iat_ms.is_some_and(|iat| exp_ms <= iat) {
            return Err(OAuthBearerError::ExpiresBeforeIssued);
        }
        if let Some(missing) = self.required_scope.iter().find(|s| !scopes.contains(*s)) {
            return Err(OAuthBearerError::InsufficientScope {
                missing: shown(missing),
                required: self.required_scope.join(" "),
            });
        }
        Ok(OAuthBearerToken::new(
            token, principal, scopes, exp_ms, iat_ms,
        ))
    }
}
