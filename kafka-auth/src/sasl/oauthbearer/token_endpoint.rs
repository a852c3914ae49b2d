//! The client-credentials grant (RFC 6749 section 4.4) as Kafka's login callback handler
//! makes it against `sasl.oauthbearer.token.endpoint.url` (`ClientCredentialsRequestGenerator`,
//! formerly `HttpAccessTokenRetriever`): the request to POST and the reading of the answer.
//! The HTTP call itself is the caller's.
//!
//! The request: body `grant_type=client_credentials`, then `&scope=<scope>` when a non-blank
//! scope is configured, form-urlencoded as Java's `URLEncoder` (letters, digits and `.-*_`
//! kept, space as `+`, every other UTF-8 byte as `%XX`); headers `Accept: application/json`,
//! `Authorization: Basic base64(id:secret)` (the standard alphabet, KAFKA-14496),
//! `Cache-Control: no-cache`, `Content-Type: application/x-www-form-urlencoded`. The id and
//! secret are form-urlencoded first only when `sasl.oauthbearer.header.urlencode` is true
//! (KIP-1025; default false).
//!
//! The answer: HTTP 200 or 201 with a JSON object whose `access_token` is a non-blank string
//! (`token_type`, `expires_in` and `scope` are read when present); any other status is an
//! error carrying RFC 6749 5.2's `error` and `error_description` when the body has them.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

use super::error::{OAuthBearerError, shown};
use crate::jaas::LoginModule;
use crate::sasl::Secret;

/// The client's credentials and scope for the token endpoint.
#[derive(Clone, PartialEq, Eq)]
pub struct ClientCredentials {
    client_id: String,
    client_secret: Secret,
    scope: Option<String>,
    urlencode_header: bool,
}

impl fmt::Debug for ClientCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientCredentials")
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret)
            .field("scope", &self.scope)
            .field("urlencode_header", &self.urlencode_header)
            .finish()
    }
}

impl ClientCredentials {
    /// Credentials with `scope` (a blank scope is none) and the header form-urlencoded or not
    /// (`sasl.oauthbearer.header.urlencode`). Refuses a blank id or secret, as Kafka does.
    pub fn new(
        client_id: &str,
        client_secret: impl Into<Secret>,
        scope: Option<&str>,
        urlencode_header: bool,
    ) -> Result<Self, OAuthBearerError> {
        let client_secret = client_secret.into();
        let client_id = client_id.trim();
        if client_id.is_empty() {
            return Err(OAuthBearerError::Config(
                "the token endpoint request needs a non-blank client id (clientId)".into(),
            ));
        }
        if client_secret
            .expose_str()
            .is_none_or(|s| s.trim().is_empty())
        {
            return Err(OAuthBearerError::Config(
                "the token endpoint request needs a non-blank UTF-8 client secret (clientSecret)"
                    .into(),
            ));
        }
        Ok(Self {
            client_id: client_id.to_owned(),
            client_secret,
            scope: scope
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned),
            urlencode_header,
        })
    }

    /// From the JAAS options `clientId`, `clientSecret` and `scope` of the client's
    /// `OAuthBearerLoginModule` entry.
    pub fn from_jaas(
        module: &LoginModule,
        urlencode_header: bool,
    ) -> Result<Self, OAuthBearerError> {
        let id = module.option("clientId").unwrap_or_default();
        let secret = module.option("clientSecret").unwrap_or_default();
        Self::new(id, secret, module.option("scope"), urlencode_header)
    }

    /// The request to POST to the token endpoint.
    pub fn request(&self) -> TokenRequest {
        let mut body = String::from("grant_type=client_credentials");
        if let Some(scope) = &self.scope {
            body.push_str("&scope=");
            body.push_str(&form_urlencode(scope));
        }
        // Checked UTF-8 in `new`.
        let secret = self.client_secret.expose_str().unwrap_or_default();
        let pair = if self.urlencode_header {
            format!(
                "{}:{}",
                form_urlencode(&self.client_id),
                form_urlencode(secret)
            )
        } else {
            format!("{}:{secret}", self.client_id)
        };
        let authorization = Secret::new(format!("Basic {}", STANDARD.encode(pair.as_bytes())));
        TokenRequest {
            body,
            authorization,
        }
    }
}

/// A token endpoint request: the form body and the `Authorization` header (a credential:
/// `Debug` hides it). [`Self::headers`] lists every header Kafka sends.
#[derive(Clone, PartialEq, Eq)]
pub struct TokenRequest {
    /// The form-urlencoded body.
    pub body: String,
    authorization: Secret,
}

impl fmt::Debug for TokenRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenRequest")
            .field("body", &self.body)
            .field("authorization", &self.authorization)
            .finish()
    }
}

impl TokenRequest {
    /// The `Authorization` header's value, `Basic ...`.
    pub fn authorization(&self) -> &str {
        self.authorization.expose_str().unwrap_or_default()
    }

    /// The headers to send, name and value.
    pub fn headers(&self) -> [(&'static str, &str); 4] {
        [
            ("Accept", "application/json"),
            ("Authorization", self.authorization()),
            ("Cache-Control", "no-cache"),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ]
    }
}

/// A successful token endpoint answer. `Debug` hides the token.
#[derive(Clone, PartialEq, Eq)]
pub struct TokenResponse {
    /// The access token (for OAUTHBEARER, a JWT).
    pub access_token: Secret,
    /// `token_type`, if given (normally `Bearer`).
    pub token_type: Option<String>,
    /// `expires_in`, in seconds, if given (Kafka takes the expiry from the JWT's `exp`).
    pub expires_in: Option<i64>,
    /// `scope`, if given.
    pub scope: Option<String>,
}

impl fmt::Debug for TokenResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenResponse")
            .field("access_token", &self.access_token)
            .field("token_type", &self.token_type)
            .field("expires_in", &self.expires_in)
            .field("scope", &self.scope)
            .finish()
    }
}

impl TokenResponse {
    /// The access token as text.
    pub fn token(&self) -> &str {
        self.access_token.expose_str().unwrap_or_default()
    }
}

/// The most bytes of a token endpoint answer read.
pub const MAX_RESPONSE: usize = 1024 * 1024;

/// Reads the token endpoint's answer: HTTP `status` and `body`.
pub fn parse_token_response(status: u16, body: &[u8]) -> Result<TokenResponse, OAuthBearerError> {
    use OAuthBearerError::TokenResponse as Bad;
    if body.len() > MAX_RESPONSE {
        return Err(Bad("longer than 1 MiB"));
    }
    let json: Option<Value> = serde_json::from_slice(body).ok();
    if status != 200 && status != 201 {
        let field = |k: &str| {
            json.as_ref()
                .and_then(|j| j.get(k))
                .and_then(Value::as_str)
                .map(shown)
        };
        let error = field("error").unwrap_or_else(|| {
            let text = String::from_utf8_lossy(body);
            if text.trim().is_empty() {
                "(empty answer)".into()
            } else {
                shown(&text)
            }
        });
        return Err(OAuthBearerError::TokenEndpoint {
            status,
            error,
            description: field("error_description"),
        });
    }
    let json = json.ok_or(Bad("not JSON"))?;
    let obj = json.as_object().ok_or(Bad("not a JSON object"))?;
    let token = obj
        .get("access_token")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or(Bad("no access_token value"))?;
    let text = |k: &str| obj.get(k).and_then(Value::as_str).map(str::to_owned);
    let expires_in = match obj.get("expires_in") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => Some(n.as_i64().ok_or(Bad("expires_in is not an integer"))?),
        // Some servers send it as a string.
        Some(Value::String(s)) => Some(
            s.trim()
                .parse()
                .map_err(|_| Bad("expires_in is not an integer"))?,
        ),
        Some(_) => return Err(Bad("expires_in is not an integer")),
    };
    Ok(TokenResponse {
        access_token: Secret::new(token.as_bytes().to_vec()),
        token_type: text("token_type"),
        expires_in,
        scope: text("scope"),
    })
}

impl OAuthBearerError {
    /// Whether a token endpoint failure is worth retrying, as Kafka's retriever decides: HTTP
    /// 404, 429 and 5xx are; other 4xx answers and unreadable answers are not.
    pub fn is_retriable(&self) -> bool {
        match self {
            Self::TokenEndpoint { status, .. } => {
                !(400..500).contains(status) || *status == 404 || *status == 429
            }
            _ => false,
        }
    }
}

/// Form-urlencoding as Java's `URLEncoder.encode(s, UTF_8)`.
pub fn form_urlencode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'.' | b'-' | b'*' | b'_' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            b => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}
