//! Our clients' side of OAUTHBEARER:
//!
//! - [`OAuthBearerClient`], Kafka's `OAuthBearerSaslClient`: sends the initial response; an
//!   empty server answer means authenticated; a non-empty one is the error challenge, answered
//!   with 0x01, after which the server's failure is surfaced with the challenge's status;
//! - [`UnsecuredLogin`], Kafka's `OAuthBearerUnsecuredLoginCallbackHandler` (the default of
//!   `OAuthBearerLoginModule`): an `alg: none` token made from the JAAS options
//!   `unsecuredLoginStringClaim_<name>`, `unsecuredLoginNumberClaim_<name>`,
//!   `unsecuredLoginListClaim_<name>` (the first character is the separator),
//!   `unsecuredLoginPrincipalClaimName` (default `sub`), `unsecuredLoginScopeClaimName`
//!   (default `scope`), `unsecuredLoginLifetimeSeconds` (default 3600) and the SASL
//!   extensions `unsecuredLoginExtension_<name>`; `iat` and `exp` are set from the time given
//!   and cannot be set as claims;
//! - [`inspect_login_token`], Kafka's client-side `ClientJwtValidator` (formerly
//!   `LoginAccessTokenValidator`): what a token from the token endpoint says about itself
//!   (principal, scopes, expiry: when to fetch the next), without checking its signature,
//!   which is the broker's job.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use super::error::{OAuthBearerError, shown};
use super::jwt::{self, Jwt};
use super::messages::{ClientInitialResponse, ERROR_ACKNOWLEDGEMENT, ServerErrorResponse};
use super::validator::{OAuthBearerToken, UnsecuredValidator};
use crate::jaas::LoginModule;
use crate::sasl::SaslError;

/// A client step that did not fail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OAuthBearerClientStep {
    /// Send these bytes (0x01, the answer to the error challenge); the server then fails the
    /// exchange.
    Send(Vec<u8>),
    /// Authenticated.
    Done,
}

#[derive(Debug)]
enum State {
    /// The initial response is sent; waiting for the server.
    Sent,
    /// The error challenge came and 0x01 went back.
    Refused,
    Finished,
}

/// Our clients' OAUTHBEARER state machine.
#[derive(Debug)]
pub struct OAuthBearerClient {
    initial: ClientInitialResponse,
    state: State,
    refusal: Option<ServerErrorResponse>,
}

impl OAuthBearerClient {
    /// An exchange sending `initial`.
    pub fn new(initial: ClientInitialResponse) -> Self {
        Self {
            initial,
            state: State::Sent,
            refusal: None,
        }
    }

    /// The initial response's bytes.
    pub fn initial(&self) -> Vec<u8> {
        self.initial.to_bytes()
    }

    /// The server's error challenge, once one came (its `status` says why: `invalid_token`,
    /// `insufficient_scope`). The client reports it with the failure the server sends next.
    pub fn refusal(&self) -> Option<&ServerErrorResponse> {
        self.refusal.as_ref()
    }

    /// Takes the server's answer. After `Done`, a failure or a message following the error
    /// challenge, every call is an error: [`SaslError::ServerError`] with the challenge's
    /// status right after it, [`SaslError::ExchangeFinished`] later.
    pub fn step(&mut self, message: &[u8]) -> Result<OAuthBearerClientStep, SaslError> {
        match std::mem::replace(&mut self.state, State::Finished) {
            State::Finished => Err(SaslError::ExchangeFinished),
            State::Sent if message.is_empty() => Ok(OAuthBearerClientStep::Done),
            State::Sent => {
                // Kafka's client does not parse the challenge; a non-JSON one still gets
                // its 0x01, and its status is shown as "invalid_token".
                let refusal =
                    ServerErrorResponse::parse(message).unwrap_or_else(|_| ServerErrorResponse {
                        status: "invalid_token".into(),
                        scope: None,
                        openid_configuration: None,
                    });
                self.refusal = Some(refusal);
                self.state = State::Refused;
                Ok(OAuthBearerClientStep::Send(ERROR_ACKNOWLEDGEMENT.to_vec()))
            }
            State::Refused => Err(SaslError::ServerError(self.refusal_text())),
        }
    }

    fn refusal_text(&self) -> String {
        match &self.refusal {
            Some(r) => {
                let mut s = shown(&r.status);
                if let Some(scope) = &r.scope {
                    s.push_str(&format!(" (scope {})", shown(scope)));
                }
                s
            }
            None => "invalid_token".into(),
        }
    }
}

/// Kafka's unsecured login: the JAAS options of an `OAuthBearerLoginModule` entry, ready to
/// make tokens.
#[derive(Debug, Clone, PartialEq)]
pub struct UnsecuredLogin {
    principal_claim: String,
    scope_claim: String,
    lifetime_seconds: i64,
    claims: Map<String, Value>,
    extensions: BTreeMap<String, String>,
}

const STRING_CLAIM: &str = "unsecuredLoginStringClaim_";
const NUMBER_CLAIM: &str = "unsecuredLoginNumberClaim_";
const LIST_CLAIM: &str = "unsecuredLoginListClaim_";
const EXTENSION: &str = "unsecuredLoginExtension_";

impl UnsecuredLogin {
    /// Reads the options (see the module's doc), with Kafka's refusals: `iat` or `exp` set
    /// as a claim, a number claim that is not a number, a lifetime that is not an integer,
    /// an invalid extension.
    pub fn from_jaas(module: &LoginModule) -> Result<Self, OAuthBearerError> {
        let cfg = |m: String| OAuthBearerError::Config(m);
        let trimmed = |k: &str| {
            module
                .option(k)
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_owned)
        };
        let lifetime_seconds = match module.option("unsecuredLoginLifetimeSeconds") {
            None => 3600,
            Some(v) => v
                .parse()
                .map_err(|_| cfg("unsecuredLoginLifetimeSeconds: not an integer".into()))?,
        };
        let mut claims = Map::new();
        let mut extensions = BTreeMap::new();
        for (key, value) in module.options() {
            let reserved = |name: &str| {
                if name == "iat" || name == "exp" {
                    Err(cfg(format!("cannot explicitly set the '{name}' claim")))
                } else {
                    Ok(name.to_owned())
                }
            };
            if let Some(name) = key.strip_prefix(STRING_CLAIM).filter(|n| !n.is_empty()) {
                claims.insert(reserved(name)?, Value::from(value));
            } else if let Some(name) = key.strip_prefix(NUMBER_CLAIM).filter(|n| !n.is_empty()) {
                let n: f64 = value
                    .trim()
                    .parse()
                    .ok()
                    .filter(|n: &f64| n.is_finite())
                    .ok_or_else(|| cfg(format!("{key}: not a number")))?;
                claims.insert(reserved(name)?, Value::from(n));
            } else if let Some(name) = key.strip_prefix(LIST_CLAIM).filter(|n| !n.is_empty()) {
                claims.insert(reserved(name)?, Value::from(list_claim(value)));
            } else if let Some(name) = key.strip_prefix(EXTENSION) {
                extensions.insert(name.to_owned(), value.to_owned());
            }
        }
        super::messages::validate_extensions(&extensions)?;
        Ok(Self {
            principal_claim: trimmed("unsecuredLoginPrincipalClaimName")
                .unwrap_or_else(|| "sub".into()),
            scope_claim: trimmed("unsecuredLoginScopeClaimName").unwrap_or_else(|| "scope".into()),
            lifetime_seconds,
            claims,
            extensions,
        })
    }

    /// The SASL extensions to send (`unsecuredLoginExtension_<name>`).
    pub fn extensions(&self) -> &BTreeMap<String, String> {
        &self.extensions
    }

    /// A token made at `now_ms`: header `{"alg":"none"}`, the claims with `iat` = now and
    /// `exp` = now + lifetime (seconds, fractional as Kafka writes them), an empty
    /// signature. Refused, as by Kafka, when the principal claim is missing or blank.
    pub fn token(&self, now_ms: i64) -> Result<OAuthBearerToken, OAuthBearerError> {
        let now_s = now_ms as f64 / 1000.0;
        let mut claims = self.claims.clone();
        claims.insert("iat".into(), Value::from(now_s));
        claims.insert(
            "exp".into(),
            Value::from(now_s + self.lifetime_seconds as f64),
        );
        let header = jwt::encode(br#"{"alg":"none"}"#);
        let body = jwt::encode(Value::Object(claims).to_string().as_bytes());
        let token = format!("{header}.{body}.");
        // Kafka builds an OAuthBearerUnsecuredJws from it: the same reading as the
        // validator's, without the time checks.
        let jwt = Jwt::parse(&token, true)?;
        let principal = jwt
            .subject(&self.principal_claim)
            .map_err(|e| OAuthBearerError::Config(format!("the unsecured login's token: {e}")))?;
        let scopes = jwt.scopes(&self.scope_claim)?;
        let exp_ms = jwt
            .time_ms("exp")?
            .ok_or_else(|| OAuthBearerError::MissingClaim("exp".into()))?;
        Ok(OAuthBearerToken::new(
            &token,
            principal,
            scopes,
            exp_ms,
            jwt.time_ms("iat")?,
        ))
    }

    /// The validator that accepts this login's tokens with the same claim names (for a
    /// development broker configured from the same JAAS entry).
    pub fn matching_validator(&self) -> UnsecuredValidator {
        UnsecuredValidator {
            principal_claim: self.principal_claim.clone(),
            scope_claim: self.scope_claim.clone(),
            ..UnsecuredValidator::default()
        }
    }
}

/// `unsecuredLoginListClaim_` values: the first character separates the rest; an empty or
/// one-character value is the empty list; a trailing separator does not add an element, as
/// Java's `String.split`.
fn list_claim(value: &str) -> Vec<String> {
    let mut chars = value.chars();
    let Some(sep) = chars.next() else {
        return Vec::new();
    };
    let rest = chars.as_str();
    if rest.is_empty() {
        return Vec::new();
    }
    let mut items: Vec<String> = rest.split(sep).map(str::to_owned).collect();
    while items.last().is_some_and(|s| s.is_empty()) {
        items.pop();
    }
    items
}

/// Reads a token from the token endpoint as Kafka's client-side validator does, without
/// checking its signature: a JWT of three parts, `exp` required (a number, not negative),
/// the principal from `sub_claim` (a non-blank string), `iat` optional, the scopes from
/// `scope_claim`. What the client learns: when the token expires (so when to fetch a new
/// one) and as whom it will authenticate.
pub fn inspect_login_token(
    token: &str,
    sub_claim: &str,
    scope_claim: &str,
) -> Result<OAuthBearerToken, OAuthBearerError> {
    let jwt = Jwt::parse(token, false)?;
    let scopes: BTreeSet<String> = jwt.scopes(scope_claim)?;
    let exp_ms = jwt
        .time_ms("exp")?
        .ok_or_else(|| OAuthBearerError::MissingClaim("exp".into()))?;
    let principal = jwt.subject(sub_claim)?;
    let iat_ms = jwt.time_ms("iat")?;
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
