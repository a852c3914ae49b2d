//! JSON Web Tokens in JWS compact form (RFC 7519, RFC 7515 section 7.1): three base64url
//! parts without padding, `header.claims.signature`, the first two JSON objects. [`Jwt`]
//! splits and decodes one without judging it; the claim readers here apply the JSON types
//! RFC 7519 gives the registered claims (NumericDate seconds, possibly fractional, read as
//! milliseconds the way Kafka's tokens carry them). Imports only `error.rs`.

use std::collections::BTreeSet;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Map, Value};

use super::error::{OAuthBearerError, shown};

/// The most bytes of a token we decode (Kafka's default `sasl.server.max.receive.size`).
pub const MAX_TOKEN_LEN: usize = 512 * 1024;

/// A JWS algorithm this crate verifies (RFC 7518 section 3.1). HMAC (`HS*`) is not among
/// them: a JWKS of public keys cannot carry its keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Algorithm {
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    Rs256,
    /// RSASSA-PKCS1-v1_5 with SHA-384.
    Rs384,
    /// RSASSA-PKCS1-v1_5 with SHA-512.
    Rs512,
    /// RSASSA-PSS with SHA-256 (MGF1 with SHA-256, salt of 32 bytes).
    Ps256,
    /// RSASSA-PSS with SHA-384.
    Ps384,
    /// RSASSA-PSS with SHA-512.
    Ps512,
    /// ECDSA on P-256 with SHA-256, the signature as `r || s` (64 bytes).
    Es256,
    /// ECDSA on P-384 with SHA-384 (96 bytes).
    Es384,
}

impl Algorithm {
    /// Every algorithm verified here.
    pub const ALL: [Self; 8] = [
        Self::Rs256,
        Self::Rs384,
        Self::Rs512,
        Self::Ps256,
        Self::Ps384,
        Self::Ps512,
        Self::Es256,
        Self::Es384,
    ];

    /// The `alg` header value.
    pub fn name(self) -> &'static str {
        match self {
            Self::Rs256 => "RS256",
            Self::Rs384 => "RS384",
            Self::Rs512 => "RS512",
            Self::Ps256 => "PS256",
            Self::Ps384 => "PS384",
            Self::Ps512 => "PS512",
            Self::Es256 => "ES256",
            Self::Es384 => "ES384",
        }
    }

    /// The algorithm named `alg` (case matters, as in RFC 7518). `none` and the HMAC
    /// algorithms are refused with their own reason.
    pub fn from_name(alg: &str) -> Result<Self, OAuthBearerError> {
        if let Some(a) = Self::ALL.into_iter().find(|a| a.name() == alg) {
            return Ok(a);
        }
        let reason = if alg == "none" {
            "unsecured (alg none) tokens are refused by the signed validator"
        } else if alg.starts_with("HS") {
            "HMAC algorithms are not accepted: the key set holds public keys only"
        } else {
            "not a supported JWS algorithm (RS256/384/512, PS256/384/512, ES256/384)"
        };
        Err(OAuthBearerError::Algorithm {
            alg: shown(alg),
            reason,
        })
    }
}

/// A JWT split and decoded, not yet verified or checked.
#[derive(Debug, Clone)]
pub struct Jwt<'a> {
    header: Map<String, Value>,
    claims: Map<String, Value>,
    signing_input: &'a str,
    signature: Vec<u8>,
}

impl<'a> Jwt<'a> {
    /// Splits `token` into its three parts and decodes them. `allow_empty_signature`: the
    /// unsecured form `header.claims.` is taken (its third part empty); otherwise a signature
    /// is required. Refuses `..` anywhere (as Kafka's unsecured JWS does), another count of
    /// parts, padding or characters outside base64url, and header or claims that are not
    /// JSON objects.
    pub fn parse(token: &'a str, allow_empty_signature: bool) -> Result<Self, OAuthBearerError> {
        use OAuthBearerError::MalformedToken as Bad;
        if token.len() > MAX_TOKEN_LEN {
            return Err(Bad("longer than 512 KiB"));
        }
        if token.contains("..") {
            return Err(Bad("the compact serialization contains '..'"));
        }
        let mut parts = token.split('.');
        let (Some(h), Some(c), Some(s), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(Bad(
                "expected three dot-separated parts (header, claims, signature)",
            ));
        };
        if s.is_empty() && !allow_empty_signature {
            return Err(Bad("the signature part is empty"));
        }
        let header = json_object(
            h,
            "the header is not base64url without padding",
            "the header is not a JSON object",
        )?;
        let claims = json_object(
            c,
            "the claims are not base64url without padding",
            "the claims are not a JSON object",
        )?;
        let signature = decode(s).ok_or(Bad("the signature is not base64url without padding"))?;
        // Both '.' exist: header and claims parts are followed by one each.
        let signing_input = &token[..h.len() + 1 + c.len()];
        Ok(Self {
            header,
            claims,
            signing_input,
            signature,
        })
    }

    /// The header's `alg`; refused when absent or not a string.
    pub fn alg(&self) -> Result<&str, OAuthBearerError> {
        self.header
            .get("alg")
            .and_then(Value::as_str)
            .ok_or(OAuthBearerError::MalformedToken(
                "the header has no string 'alg'",
            ))
    }

    /// The header's `kid`, if it is a string.
    pub fn kid(&self) -> Option<&str> {
        self.header.get("kid").and_then(Value::as_str)
    }

    /// The header's `typ`, if it is a string.
    pub fn typ(&self) -> Option<&str> {
        self.header.get("typ").and_then(Value::as_str)
    }

    /// The header, as JSON.
    pub fn header(&self) -> &Map<String, Value> {
        &self.header
    }

    /// The claims, as JSON.
    pub fn claims(&self) -> &Map<String, Value> {
        &self.claims
    }

    /// The bytes the signature covers: `header.claims`, as sent.
    pub fn signing_input(&self) -> &[u8] {
        self.signing_input.as_bytes()
    }

    /// The decoded signature (empty for an unsecured token).
    pub fn signature(&self) -> &[u8] {
        &self.signature
    }

    /// A NumericDate claim (`exp`, `iat`, `nbf`) in milliseconds, rounded as Kafka does
    /// (`Math.round(seconds * 1000)`); `None` when absent.
    pub fn time_ms(&self, name: &str) -> Result<Option<i64>, OAuthBearerError> {
        let Some(v) = self.claims.get(name) else {
            return Ok(None);
        };
        let bad = |reason| OAuthBearerError::InvalidClaim {
            claim: shown(name),
            reason,
        };
        let secs = v.as_f64().ok_or_else(|| bad("not a number"))?;
        let ms = (secs * 1000.0).round();
        // About 292 million years either way: anything beyond is not a date.
        if !ms.is_finite() || ms.abs() > 9.0e18 {
            return Err(bad("out of range"));
        }
        Ok(Some(ms as i64))
    }

    /// A string claim; `None` when absent, an error when of another type.
    pub fn string(&self, name: &str) -> Result<Option<&str>, OAuthBearerError> {
        match self.claims.get(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(OAuthBearerError::InvalidClaim {
                claim: shown(name),
                reason: "not a string",
            }),
        }
    }

    /// The subject from claim `name` (Kafka's `validateClaimSubject`): required, a string,
    /// not blank; trimmed.
    pub fn subject(&self, name: &str) -> Result<String, OAuthBearerError> {
        let s = self
            .string(name)?
            .ok_or_else(|| OAuthBearerError::MissingClaim(shown(name)))?;
        let t = s.trim();
        if t.is_empty() {
            return Err(OAuthBearerError::InvalidClaim {
                claim: shown(name),
                reason: "blank",
            });
        }
        Ok(t.to_owned())
    }

    /// The scopes from claim `name`: absent is none; a string is split at spaces (RFC 6749
    /// 3.3, as Kafka's `OAuthBearerScopeClaimUtils`); an array must hold strings. Each scope
    /// is trimmed and must not be blank or repeated (Kafka's `validateClaimScopes`).
    pub fn scopes(&self, name: &str) -> Result<BTreeSet<String>, OAuthBearerError> {
        let bad = |reason| OAuthBearerError::InvalidClaim {
            claim: shown(name),
            reason,
        };
        let raw: Vec<&str> = match self.claims.get(name) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::String(s)) if s.trim().is_empty() => Vec::new(),
            Some(Value::String(s)) => s.split(' ').filter(|p| !p.is_empty()).collect(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|i| i.as_str().ok_or_else(|| bad("an element is not a string")))
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(bad("neither a string nor an array of strings")),
        };
        let mut out = BTreeSet::new();
        for s in raw {
            let s = s.trim();
            if s.is_empty() {
                return Err(bad("a scope is blank"));
            }
            if !out.insert(s.to_owned()) {
                return Err(bad("a scope is repeated"));
            }
        }
        Ok(out)
    }

    /// The audiences (`aud`): absent is none; a string or an array of strings.
    pub fn audiences(&self) -> Result<Vec<&str>, OAuthBearerError> {
        let bad = OAuthBearerError::InvalidClaim {
            claim: "aud".to_owned(),
            reason: "neither a string nor an array of strings",
        };
        match self.claims.get("aud") {
            None => Ok(Vec::new()),
            Some(Value::String(s)) => Ok(vec![s.as_str()]),
            Some(Value::Array(items)) => items
                .iter()
                .map(|i| i.as_str().ok_or_else(|| bad.clone()))
                .collect(),
            Some(_) => Err(bad),
        }
    }
}

/// Decodes base64url without padding (RFC 7515 section 2); `None` for anything else.
pub(crate) fn decode(part: &str) -> Option<Vec<u8>> {
    URL_SAFE_NO_PAD.decode(part).ok()
}

/// Encodes as base64url without padding.
pub(crate) fn encode(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

fn json_object(
    part: &str,
    not_base64: &'static str,
    not_object: &'static str,
) -> Result<Map<String, Value>, OAuthBearerError> {
    let bytes = decode(part).ok_or(OAuthBearerError::MalformedToken(not_base64))?;
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(m)) => Ok(m),
        _ => Err(OAuthBearerError::MalformedToken(not_object)),
    }
}
