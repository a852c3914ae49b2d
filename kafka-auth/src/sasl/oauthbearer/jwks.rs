//! JSON Web Key Sets (RFC 7517) of public keys, and JWS signature verification against them
//! with `ring` (RFC 7515 section 5.2, algorithms of RFC 7518 section 3).
//!
//! A set is `{"keys":[...]}` (what `sasl.oauthbearer.jwks.endpoint.url` serves, as a file or
//! over HTTPS). Keys this crate can use: `kty` `RSA` with `n` and `e` (2048 to 8192 bits, as
//! ring verifies them), `kty` `EC` with `crv` `P-256` or `P-384` and `x`, `y`. Like jose4j
//! under Kafka's validator, a key that cannot be used (another `kty`, a bad member) is left
//! out of the set rather than failing it; [`JsonWebKeySet::skipped`] counts them.
//!
//! A token's key is chosen as jose4j's `VerificationJwkSelector` does: the header's `kid`
//! (when given) must name a key; the key's type and curve must fit `alg`; `use`, when given,
//! must be `sig`; `alg`, when given, must be the header's. Several fitting keys are each
//! tried. Imports `error.rs` and `jwt.rs`.

use std::fmt;

use ring::signature::{self, RsaPublicKeyComponents, UnparsedPublicKey};
use serde_json::Value;

use super::error::{OAuthBearerError, shown};
use super::jwt::{self, Algorithm, Jwt};

/// An elliptic curve of an `EC` key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Curve {
    /// `P-256` (for ES256).
    P256,
    /// `P-384` (for ES384).
    P384,
}

impl Curve {
    fn coordinate_len(self) -> usize {
        match self {
            Self::P256 => 32,
            Self::P384 => 48,
        }
    }
}

/// A public key's material.
#[derive(Clone, PartialEq, Eq)]
pub enum PublicKey {
    /// An RSA key: modulus and public exponent, big-endian without leading zeros.
    Rsa {
        /// The modulus `n`.
        n: Vec<u8>,
        /// The exponent `e`.
        e: Vec<u8>,
    },
    /// An EC key: the curve and the uncompressed point `04 || x || y`.
    Ec {
        /// The curve.
        curve: Curve,
        /// The uncompressed point.
        point: Vec<u8>,
    },
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Rsa { n, .. } => write!(f, "Rsa({} bits)", n.len() * 8),
            Self::Ec { curve, .. } => write!(f, "Ec({curve:?})"),
        }
    }
}

/// One key of a set: its material and the members that restrict its use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonWebKey {
    /// `kid`, the key id a token's header names.
    pub kid: Option<String>,
    /// `use`: `sig` for signatures (`enc` keys are never used here).
    pub use_: Option<String>,
    /// `alg`: the one algorithm the key is for, if it says.
    pub alg: Option<String>,
    /// The key itself.
    pub key: PublicKey,
}

impl JsonWebKey {
    /// Reads one key (a JSON object). Refuses a key this crate cannot use.
    pub fn from_json(value: &Value) -> Result<Self, OAuthBearerError> {
        let bad = |m: &str| OAuthBearerError::KeySet(m.to_owned());
        let obj = value
            .as_object()
            .ok_or_else(|| bad("a key is not a JSON object"))?;
        let text = |k: &str| -> Result<Option<String>, OAuthBearerError> {
            match obj.get(k) {
                None => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(bad(&format!("member {k} is not a string"))),
            }
        };
        let bytes = |k: &str| -> Result<Vec<u8>, OAuthBearerError> {
            let s = text(k)?.ok_or_else(|| bad(&format!("member {k} is missing")))?;
            jwt::decode(&s).ok_or_else(|| bad(&format!("member {k} is not base64url")))
        };
        let kty = text("kty")?.ok_or_else(|| bad("a key has no kty"))?;
        let key = match kty.as_str() {
            "RSA" => {
                let n = strip_zeros(bytes("n")?);
                let e = strip_zeros(bytes("e")?);
                let bits = n.len() * 8 - n.first().map_or(8, |b| b.leading_zeros() as usize);
                if !(2048..=8192).contains(&bits) {
                    return Err(bad("an RSA modulus must have 2048 to 8192 bits"));
                }
                if e.is_empty() || e.len() > 4 {
                    return Err(bad("an RSA exponent must be 1 to 4 bytes"));
                }
                PublicKey::Rsa { n, e }
            }
            "EC" => {
                let curve = match text("crv")?.as_deref() {
                    Some("P-256") => Curve::P256,
                    Some("P-384") => Curve::P384,
                    _ => return Err(bad("an EC key's crv must be P-256 or P-384")),
                };
                let (x, y) = (bytes("x")?, bytes("y")?);
                let len = curve.coordinate_len();
                if x.len() != len || y.len() != len {
                    return Err(bad("an EC coordinate has the wrong length for its curve"));
                }
                let mut point = Vec::with_capacity(1 + 2 * len);
                point.push(4);
                point.extend_from_slice(&x);
                point.extend_from_slice(&y);
                PublicKey::Ec { curve, point }
            }
            other => {
                return Err(bad(&format!(
                    "key type {:?} is not supported (RSA, EC)",
                    shown(other)
                )));
            }
        };
        Ok(Self {
            kid: text("kid")?,
            use_: text("use")?,
            alg: text("alg")?,
            key,
        })
    }

    /// Whether this key's type and curve can verify `alg`.
    pub fn fits(&self, alg: Algorithm) -> bool {
        use Algorithm::*;
        matches!(
            (&self.key, alg),
            (
                PublicKey::Rsa { .. },
                Rs256 | Rs384 | Rs512 | Ps256 | Ps384 | Ps512
            ) | (
                PublicKey::Ec {
                    curve: Curve::P256,
                    ..
                },
                Es256
            ) | (
                PublicKey::Ec {
                    curve: Curve::P384,
                    ..
                },
                Es384
            )
        )
    }

    /// Whether `signature` is `alg`'s signature of `message` under this key.
    pub fn verify(&self, alg: Algorithm, message: &[u8], signature: &[u8]) -> bool {
        use Algorithm::*;
        match (&self.key, alg) {
            (PublicKey::Rsa { n, e }, _) => {
                let params: &signature::RsaParameters = match alg {
                    Rs256 => &signature::RSA_PKCS1_2048_8192_SHA256,
                    Rs384 => &signature::RSA_PKCS1_2048_8192_SHA384,
                    Rs512 => &signature::RSA_PKCS1_2048_8192_SHA512,
                    Ps256 => &signature::RSA_PSS_2048_8192_SHA256,
                    Ps384 => &signature::RSA_PSS_2048_8192_SHA384,
                    Ps512 => &signature::RSA_PSS_2048_8192_SHA512,
                    Es256 | Es384 => return false,
                };
                RsaPublicKeyComponents { n, e }
                    .verify(params, message, signature)
                    .is_ok()
            }
            (PublicKey::Ec { curve, point }, _) => {
                let params = match (curve, alg) {
                    (Curve::P256, Es256) => &signature::ECDSA_P256_SHA256_FIXED,
                    (Curve::P384, Es384) => &signature::ECDSA_P384_SHA384_FIXED,
                    _ => return false,
                };
                UnparsedPublicKey::new(params, point)
                    .verify(message, signature)
                    .is_ok()
            }
        }
    }
}

fn strip_zeros(mut v: Vec<u8>) -> Vec<u8> {
    let zeros = v.iter().take_while(|&&b| b == 0).count();
    v.drain(..zeros);
    v
}

/// A set of public keys to verify tokens with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JsonWebKeySet {
    keys: Vec<JsonWebKey>,
    skipped: usize,
}

impl JsonWebKeySet {
    /// The most bytes of a key set document we read.
    pub const MAX_DOCUMENT: usize = 1024 * 1024;

    /// A set of these keys.
    pub fn new(keys: Vec<JsonWebKey>) -> Self {
        Self { keys, skipped: 0 }
    }

    /// Reads a JWKS document: a JSON object whose `keys` is an array. Keys this crate
    /// cannot use are skipped (counted in [`Self::skipped`]).
    pub fn parse(document: &[u8]) -> Result<Self, OAuthBearerError> {
        if document.len() > Self::MAX_DOCUMENT {
            return Err(OAuthBearerError::KeySet(
                "the document is longer than 1 MiB".into(),
            ));
        }
        let value: Value = serde_json::from_slice(document)
            .map_err(|_| OAuthBearerError::KeySet("the document is not JSON".into()))?;
        let keys = value
            .get("keys")
            .and_then(Value::as_array)
            .ok_or_else(|| OAuthBearerError::KeySet("the document has no 'keys' array".into()))?;
        let mut set = Self::default();
        for k in keys {
            match JsonWebKey::from_json(k) {
                Ok(key) => set.keys.push(key),
                Err(_) => set.skipped += 1,
            }
        }
        Ok(set)
    }

    /// The usable keys.
    pub fn keys(&self) -> &[JsonWebKey] {
        &self.keys
    }

    /// How many keys of the document were left out as unusable.
    pub fn skipped(&self) -> usize {
        self.skipped
    }

    /// Verifies a token's signature: the key chosen by `kid`, type, `use` and `alg` (see the
    /// module's doc), the signature checked under each fitting key. The key that verified it.
    pub fn verify(&self, token: &Jwt<'_>) -> Result<&JsonWebKey, OAuthBearerError> {
        let alg = Algorithm::from_name(token.alg()?)?;
        let kid = token.kid();
        let named: Vec<&JsonWebKey> = match kid {
            Some(kid) => {
                let named: Vec<_> = self
                    .keys
                    .iter()
                    .filter(|k| k.kid.as_deref() == Some(kid))
                    .collect();
                if named.is_empty() {
                    return Err(OAuthBearerError::UnknownKeyId(shown(kid)));
                }
                named
            }
            None => self.keys.iter().collect(),
        };
        let no_key = |reason| OAuthBearerError::NoSuitableKey {
            alg: alg.name(),
            kid: kid.map(shown),
            reason,
        };
        let typed: Vec<_> = named.into_iter().filter(|k| k.fits(alg)).collect();
        if typed.is_empty() {
            return Err(no_key("no key of the algorithm's type and curve"));
        }
        let for_sig: Vec<_> = typed
            .into_iter()
            .filter(|k| k.use_.as_deref().is_none_or(|u| u == "sig"))
            .collect();
        let Some(first) = for_sig.first() else {
            return Err(no_key("the keys are not for signatures (use)"));
        };
        let usable: Vec<_> = for_sig
            .iter()
            .filter(|k| k.alg.as_deref().is_none_or(|a| a == alg.name()))
            .collect();
        if usable.is_empty() {
            return Err(OAuthBearerError::KeyAlgorithmMismatch {
                alg: alg.name(),
                key_alg: shown(first.alg.as_deref().unwrap_or_default()),
            });
        }
        usable
            .into_iter()
            .find(|k| k.verify(alg, token.signing_input(), token.signature()))
            .copied()
            .ok_or(OAuthBearerError::InvalidSignature)
    }
}
