//! The three OAUTHBEARER messages (RFC 7628 section 3), as Kafka's
//! `OAuthBearerClientInitialResponse`, `OAuthBearerSaslServer` and `OAuthBearerSaslClient`
//! write and read them:
//!
//! - the client's initial response, `n,[a=authzid],^Aauth=Bearer TOKEN^A[key=value^A]*^A`
//!   ([`ClientInitialResponse`]; `^A` is the byte 0x01). Kafka's grammar: only the GS2 header
//!   `n,` (no channel binding), an optional authorization id of ASCII without `,` and `=`
//!   other than the escapes `=2C` and `=3D`, keys of letters only, values of `%x21-7E`,
//!   space, tab, CR and LF, a key `auth` holding `<scheme> <token>` with the scheme `bearer`
//!   in any case; the other keys are SASL extensions, and `auth` cannot be one. The token is
//!   RFC 6750's `b64token` (letters, digits, `-._~+/`, then `=` padding), which holds Kafka's
//!   `[-_.a-zA-Z0-9]+` (every JWT) and the RFC 7628 examples Kafka would refuse;
//! - the server's error answer, a JSON object `{"status":"invalid_token"}` with optional
//!   `scope` and `openid-configuration` (RFC 7628 3.2.2, [`ServerErrorResponse`]), sent as
//!   a challenge after a refused token;
//! - the client's reply to it, the single byte 0x01 ([`ERROR_ACKNOWLEDGEMENT`]), after
//!   which the server ends the exchange as a failure.
//!
//! Two choices stricter or closer to the RFCs than Kafka: a key given twice is refused
//! (Kafka keeps the last), and the authorization id's `=2C` / `=3D` are decoded (RFC 5801;
//! Kafka compares the escaped text with the principal).

use std::collections::BTreeMap;
use std::fmt;

use super::error::{OAuthBearerError, shown};
use crate::sasl::Secret;

/// The byte that separates the initial response's key/value pairs (and ends it, doubled).
pub const SEPARATOR: u8 = 0x01;

/// The client's answer to the server's error challenge (RFC 7628 3.2.3): one 0x01 byte.
pub const ERROR_ACKNOWLEDGEMENT: &[u8] = &[SEPARATOR];

/// The reserved key of the initial response that carries the token.
pub const AUTH_KEY: &str = "auth";

/// The most bytes of an initial response we read: Kafka's default
/// `sasl.server.max.receive.size` (512 KiB), which its broker applies to every SASL message.
pub const MAX_INITIAL_RESPONSE: usize = 512 * 1024;

/// The client's initial response: the token, an optional authorization id, and SASL
/// extensions. `Debug` hides the token.
#[derive(Clone, PartialEq, Eq)]
pub struct ClientInitialResponse {
    token: Secret,
    authorization_id: String,
    extensions: BTreeMap<String, String>,
}

impl fmt::Debug for ClientInitialResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientInitialResponse")
            .field("token", &self.token)
            .field("authorization_id", &self.authorization_id)
            .field("extensions", &self.extensions)
            .finish()
    }
}

impl ClientInitialResponse {
    /// A response carrying `token` (the JWT's compact form), acting as `authorization_id`
    /// (`None` or empty: as the token's principal, what Kafka's clients send) with
    /// `extensions`. Refuses a token, authorization id or extension the grammar cannot carry.
    pub fn new(
        token: &str,
        authorization_id: Option<&str>,
        extensions: BTreeMap<String, String>,
    ) -> Result<Self, OAuthBearerError> {
        if !is_b64token(token) {
            return Err(OAuthBearerError::InitialResponse(
                "the token must be an RFC 6750 b64token (letters, digits, -._~+/ then = padding)",
            ));
        }
        let authorization_id = authorization_id.unwrap_or_default();
        if !authorization_id.bytes().all(|b| (0x01..=0x7F).contains(&b)) {
            return Err(OAuthBearerError::InitialResponse(
                "the authorization id must be ASCII without NUL",
            ));
        }
        validate_extensions(&extensions)?;
        Ok(Self {
            token: Secret::new(token.as_bytes().to_vec()),
            authorization_id: authorization_id.to_owned(),
            extensions,
        })
    }

    /// Reads a client's initial response with Kafka's checks.
    pub fn parse(message: &[u8]) -> Result<Self, OAuthBearerError> {
        use OAuthBearerError::InitialResponse as Bad;
        if message.len() > MAX_INITIAL_RESPONSE {
            return Err(Bad("longer than sasl.server.max.receive.size (512 KiB)"));
        }
        if !message.is_ascii() {
            return Err(Bad("not ASCII"));
        }
        // ASCII, so every byte is a char and slicing at any index is safe.
        let s = std::str::from_utf8(message).map_err(|_| Bad("not ASCII"))?;
        let Some(rest) = s.strip_prefix("n,") else {
            return Err(if s.starts_with("y,") || s.starts_with("p=") {
                Bad("channel binding is not supported: the GS2 header must be \"n,\"")
            } else {
                Bad("the GS2 header must start with \"n,\"")
            });
        };
        let (authorization_id, rest) = match rest.strip_prefix("a=") {
            Some(after) => {
                let end = after.find(',').ok_or(Bad(
                    "the GS2 header's authorization id does not end with ','",
                ))?;
                let (raw, tail) = after.split_at(end);
                (decode_saslname(raw)?, &tail[1..])
            }
            None => (
                String::new(),
                rest.strip_prefix(',')
                    .ok_or(Bad("the GS2 header must be \"n,,\" or \"n,a=NAME,\""))?,
            ),
        };
        let mut rest = rest
            .strip_prefix('\u{1}')
            .ok_or(Bad("the GS2 header must be followed by 0x01"))?;
        let mut auth = None;
        let mut extensions = BTreeMap::new();
        loop {
            if rest == "\u{1}" {
                break;
            }
            let end = rest.find('\u{1}').ok_or(Bad(
                "truncated: the key/value pairs must end with 0x01 0x01",
            ))?;
            let (pair, tail) = rest.split_at(end);
            rest = &tail[1..];
            let (key, value) = pair
                .split_once('=')
                .ok_or(Bad("a key/value pair without '='"))?;
            if key.is_empty() || !key.bytes().all(|b| b.is_ascii_alphabetic()) {
                return Err(Bad("a key that is not letters only"));
            }
            if value.is_empty() || !value.bytes().all(is_value_byte) {
                return Err(Bad(
                    "a value that is empty or holds characters outside %x21-7E, space, tab, CR, LF",
                ));
            }
            if key == AUTH_KEY {
                if auth.replace(value).is_some() {
                    return Err(Bad("'auth' given twice"));
                }
            } else if extensions
                .insert(key.to_owned(), value.to_owned())
                .is_some()
            {
                return Err(Bad("an extension given twice"));
            }
        }
        let auth = auth.ok_or(Bad("'auth' not specified"))?;
        let token = parse_auth(auth)?;
        Ok(Self {
            token: Secret::new(token.as_bytes().to_vec()),
            authorization_id,
            extensions,
        })
    }

    /// The message's bytes: `n,[a=authzid],^Aauth=Bearer TOKEN[^Akey=value]*^A^A`, the
    /// extensions in name order.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut m = Vec::with_capacity(32 + self.token.len());
        m.extend_from_slice(b"n,");
        if !self.authorization_id.is_empty() {
            m.extend_from_slice(b"a=");
            for c in self.authorization_id.chars() {
                match c {
                    ',' => m.extend_from_slice(b"=2C"),
                    '=' => m.extend_from_slice(b"=3D"),
                    c => m.push(c as u8),
                }
            }
        }
        m.push(b',');
        m.push(SEPARATOR);
        m.extend_from_slice(b"auth=Bearer ");
        m.extend_from_slice(self.token.expose());
        for (k, v) in &self.extensions {
            m.push(SEPARATOR);
            m.extend_from_slice(k.as_bytes());
            m.push(b'=');
            m.extend_from_slice(v.as_bytes());
        }
        m.push(SEPARATOR);
        m.push(SEPARATOR);
        m
    }

    /// The token (the JWT's compact form).
    pub fn token(&self) -> &str {
        // Built from a checked ASCII string in both constructors.
        self.token.expose_str().unwrap_or_default()
    }

    /// The authorization id, decoded; empty when the client gave none.
    pub fn authorization_id(&self) -> &str {
        &self.authorization_id
    }

    /// The SASL extensions (every key but `auth`), by name.
    pub fn extensions(&self) -> &BTreeMap<String, String> {
        &self.extensions
    }
}

/// Checks SASL extensions as Kafka's `OAuthBearerClientInitialResponse.validateExtensions`:
/// names of letters only and not `auth`, values of `%x21-7E`, space, tab, CR and LF.
pub fn validate_extensions(extensions: &BTreeMap<String, String>) -> Result<(), OAuthBearerError> {
    for (name, value) in extensions {
        let bad = |reason| {
            Err(OAuthBearerError::Extension {
                name: shown(name),
                reason,
            })
        };
        if name == AUTH_KEY {
            return bad("'auth' is reserved for the token");
        }
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphabetic()) {
            return bad("a name must be letters only");
        }
        if value.is_empty() || !value.bytes().all(is_value_byte) {
            return bad("a value must be %x21-7E, space, tab, CR or LF, at least one");
        }
    }
    Ok(())
}

/// RFC 6750's `b64token`: `1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="`.
fn is_b64token(token: &str) -> bool {
    let body = token.trim_end_matches('=');
    !body.is_empty()
        && body.bytes().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'+' | b'/')
        })
}

/// A character of RFC 7628's `value`: `%x21-7E`, space, tab, CR, LF.
fn is_value_byte(b: u8) -> bool {
    (0x21..=0x7E).contains(&b) || matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

/// `auth=<scheme> <token>`: Kafka's `(\w+)[ ]+TOKEN` with scheme `bearer`, the token a
/// `b64token`.
fn parse_auth(auth: &str) -> Result<&str, OAuthBearerError> {
    use OAuthBearerError::InitialResponse as Bad;
    let (scheme, token) = auth
        .split_once(' ')
        .ok_or(Bad("invalid 'auth' format: expected \"Bearer TOKEN\""))?;
    if scheme.is_empty()
        || !scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_')
    {
        return Err(Bad("invalid 'auth' format: expected \"Bearer TOKEN\""));
    }
    let token = token.trim_start_matches(' ');
    if !is_b64token(token) {
        return Err(Bad(
            "invalid 'auth' format: the token must be letters, digits, -._~+/ then = padding",
        ));
    }
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(Bad("invalid scheme in 'auth': expected Bearer"));
    }
    Ok(token)
}

/// RFC 5801's `saslname`: one or more of `%x01-7F` but `,` and `=`, or the escapes `=2C`
/// and `=3D`; decoded.
fn decode_saslname(raw: &str) -> Result<String, OAuthBearerError> {
    let bad = OAuthBearerError::InitialResponse(
        "the authorization id must be non-empty ASCII with ',' and '=' written =2C and =3D",
    );
    if raw.is_empty() {
        return Err(bad);
    }
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(c) = rest.chars().next() {
        if c == '=' {
            if let Some(tail) = rest.strip_prefix("=2C") {
                out.push(',');
                rest = tail;
            } else if let Some(tail) = rest.strip_prefix("=3D") {
                out.push('=');
                rest = tail;
            } else {
                return Err(bad);
            }
        } else if c == '\0' || !c.is_ascii() {
            return Err(bad);
        } else {
            out.push(c);
            rest = &rest[1..];
        }
    }
    Ok(out)
}

/// The server's error challenge (RFC 7628 3.2.2): what Kafka's `OAuthBearerSaslServer`
/// sends when the validator refuses the token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerErrorResponse {
    /// RFC 6750's error code: `invalid_token` or `insufficient_scope`.
    pub status: String,
    /// The scope the token needed, if that is why it was refused.
    pub scope: Option<String>,
    /// The address of the OpenID provider configuration, if the server names one.
    pub openid_configuration: Option<String>,
}

impl ServerErrorResponse {
    /// The error answer for a token refused with `error` (its status and scope; Kafka's
    /// validators set no `openid-configuration`).
    pub fn for_error(error: &OAuthBearerError) -> Self {
        Self {
            status: error.status().to_owned(),
            scope: error.scope().map(str::to_owned),
            openid_configuration: None,
        }
    }

    /// The JSON bytes, laid out as Kafka's server writes them:
    /// `{"status":"invalid_token", "scope":"...", "openid-configuration":"..."}`.
    pub fn to_bytes(&self) -> Vec<u8> {
        let q = |s: &str| serde_json::Value::from(s).to_string();
        let mut out = format!("{{\"status\":{}", q(&self.status));
        if let Some(scope) = &self.scope {
            out.push_str(&format!(", \"scope\":{}", q(scope)));
        }
        if let Some(c) = &self.openid_configuration {
            out.push_str(&format!(", \"openid-configuration\":{}", q(c)));
        }
        out.push('}');
        out.into_bytes()
    }

    /// Reads a server's error answer. A `status` string is required; the other members are
    /// optional and unknown ones ignored.
    pub fn parse(message: &[u8]) -> Result<Self, OAuthBearerError> {
        let bad = OAuthBearerError::ServerMessage;
        let value: serde_json::Value = serde_json::from_slice(message)
            .map_err(|_| bad("the server's error answer is not JSON"))?;
        let obj = value
            .as_object()
            .ok_or_else(|| bad("the server's error answer is not a JSON object"))?;
        let text = |k: &str| obj.get(k).and_then(|v| v.as_str()).map(str::to_owned);
        Ok(Self {
            status: text("status").ok_or_else(|| bad("the server's error answer has no status"))?,
            scope: text("scope"),
            openid_configuration: text("openid-configuration"),
        })
    }
}
