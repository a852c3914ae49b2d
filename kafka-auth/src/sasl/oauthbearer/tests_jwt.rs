//! JWS verification (RFC 7515 appendix A.2 and A.3) and the signed validator's claim checks
//! with ECDSA keys made here.

use std::sync::Arc;

use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use serde_json::json;

use super::*;

const PAYLOAD: &str = "eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ";
const A2_N: &str = "ofgWCuLjybRlzo0tZWJjNiuSfb4p4fAkd_wWJcyQoTbji9k0l8W26mPddxHmfHQp-Vaw-4qPCJrcS2mJPMEzP1Pt0Bm4d4QlL-yRT-SFd2lZS-pCgNMsD1W_YpRPEwOWvG6b32690r2jZ47soMZo9wGzjb_7OMg0LOL-bSf63kpaSHSXndS5z5rexMdbBYUsLA9e-KXBdQOS-UTo7WTBEMa2R2CapHg665xsmtdVMTBQY4uDZlxvb3qCo5ZwKh9kG4LT6_I5IhlJH7aGhyxXFvUK-DWNmoudF8NAco9_h9iaGNj8q2ethFkMLs91kzk2PAcDTW9gb54h4FRWyuXpoQ";
const A2_SIG: &str = "cC4hiUPoj9Eetdgtv3hF80EGrhuB__dzERat0XF9g2VtQgr9PJbu3XOiZj5RZmh7AAuHIm4Bh-0Qc_lF5YKt_O8W2Fp5jujGbds9uJdbF9CUAr7t1dnZcAcQjbKBYNX4BAynRFdiuB--f_nZLgrnbyTyWzO75vRK5h6xBArLIARNPvkSjtQBMHlb1L07Qe7K0GarZRmB_eSN9383LcOLn6_dO--xi12jzDwusC-eOkHWEsqtFZESc6BfI7noOPqvhJ1phCnvWh6IeYI2w9QOYEUipUTI8np6LbgGY9Fs98rqVt5AXLIhWkWywlVmtVrBp0igcN_IoypGlUPQGe77Rw";
const A3_X: &str = "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU";
const A3_Y: &str = "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0";
const A3_SIG: &str =
    "DtEhU3ljbEg8L38VWAfUAqOyKAM6-Xx-F4GawxaepmXFCgfTjDxw5djxLa8ISlSApmWQxfKTUJqPP3-Kg6NU1Q";

fn a2_token() -> String {
    format!("eyJhbGciOiJSUzI1NiJ9.{PAYLOAD}.{A2_SIG}")
}

fn a3_token() -> String {
    format!("eyJhbGciOiJFUzI1NiJ9.{PAYLOAD}.{A3_SIG}")
}

fn set(keys: serde_json::Value) -> JsonWebKeySet {
    JsonWebKeySet::parse(json!({ "keys": keys }).to_string().as_bytes()).unwrap()
}

fn rsa_jwk() -> serde_json::Value {
    json!({"kty": "RSA", "n": A2_N, "e": "AQAB"})
}

fn ec_jwk() -> serde_json::Value {
    json!({"kty": "EC", "crv": "P-256", "x": A3_X, "y": A3_Y})
}

fn verify(keys: &JsonWebKeySet, token: &str) -> Result<(), OAuthBearerError> {
    keys.verify(&Jwt::parse(token, false)?).map(|_| ())
}

/// Flips one bit of the signature part's decoded bytes.
fn flip_signature_bit(token: &str) -> String {
    let (input, sig) = token.rsplit_once('.').unwrap();
    let mut bytes = super::jwt::decode(sig).unwrap();
    bytes[5] ^= 0x10;
    format!("{input}.{}", encode64url(&bytes))
}

#[test]
fn rfc_7515_a2_rs256_and_a3_es256_verify() {
    let keys = set(json!([rsa_jwk(), ec_jwk()]));
    assert_eq!(keys.keys().len(), 2);
    verify(&keys, &a2_token()).unwrap();
    verify(&keys, &a3_token()).unwrap();
    let token = a2_token();
    let jwt = Jwt::parse(&token, false).unwrap();
    assert_eq!(jwt.claims()["iss"], "joe");
    assert_eq!(jwt.time_ms("exp").unwrap(), Some(1_300_819_380_000));
}

#[test]
fn each_kind_of_bad_signature_fails_with_its_own_error() {
    // A flipped bit.
    let keys = set(json!([rsa_jwk(), ec_jwk()]));
    for t in [a2_token(), a3_token()] {
        assert_eq!(
            verify(&keys, &flip_signature_bit(&t)),
            Err(OAuthBearerError::InvalidSignature)
        );
    }
    // A claims byte changed.
    let tampered = a2_token().replacen("eyJpc3MiOiJqb2Ui", "eyJpc3MiOiJqb2Yi", 1);
    assert_eq!(
        verify(&keys, &tampered),
        Err(OAuthBearerError::InvalidSignature)
    );
    // An algorithm swapped in the header, against a key bound to RS256.
    let bound = set(json!([{"kty": "RSA", "n": A2_N, "e": "AQAB", "alg": "RS256", "kid": "k"}]));
    let swapped = format!(
        "{}.{PAYLOAD}.{A2_SIG}",
        encode64url(br#"{"alg":"RS512","kid":"k"}"#)
    );
    assert_eq!(
        verify(&bound, &swapped),
        Err(OAuthBearerError::KeyAlgorithmMismatch {
            alg: "RS512",
            key_alg: "RS256".into()
        })
    );
    // Swapped to PS256 against an unbound key: the signature does not verify as PSS.
    let ps = format!("{}.{PAYLOAD}.{A2_SIG}", encode64url(br#"{"alg":"PS256"}"#));
    assert_eq!(verify(&keys, &ps), Err(OAuthBearerError::InvalidSignature));
    // alg none, and HMAC.
    for alg in ["none", "HS256"] {
        let t = format!(
            "{}.{PAYLOAD}.{A2_SIG}",
            encode64url(format!(r#"{{"alg":"{alg}"}}"#).as_bytes())
        );
        assert!(
            matches!(verify(&keys, &t), Err(OAuthBearerError::Algorithm { .. })),
            "{alg}"
        );
    }
    // An unknown kid.
    let t = format!(
        "{}.{PAYLOAD}.{A2_SIG}",
        encode64url(br#"{"alg":"RS256","kid":"other"}"#)
    );
    assert_eq!(
        verify(&bound, &t),
        Err(OAuthBearerError::UnknownKeyId("other".into()))
    );
    // A key of the wrong type: the ES256 token against the RSA key only.
    let rsa_only = set(json!([rsa_jwk()]));
    assert!(matches!(
        verify(&rsa_only, &a3_token()),
        Err(OAuthBearerError::NoSuitableKey { alg: "ES256", .. })
    ));
    // A key for encryption.
    let enc = set(json!([{"kty": "RSA", "n": A2_N, "e": "AQAB", "use": "enc"}]));
    assert!(matches!(
        verify(&enc, &a2_token()),
        Err(OAuthBearerError::NoSuitableKey { .. })
    ));
}

#[test]
fn key_sets_skip_unusable_keys_and_refuse_non_sets() {
    let keys = set(json!([
        rsa_jwk(),
        {"kty": "oct", "k": "c2VjcmV0"},
        {"kty": "RSA", "n": "AQAB", "e": "AQAB"},
        {"kty": "EC", "crv": "P-521", "x": A3_X, "y": A3_Y},
        {"kty": "EC", "crv": "P-256", "x": A3_X},
        {"kty": "EC", "crv": "P-384", "x": A3_X, "y": A3_Y},
        {"kty": "RSA", "n": 5, "e": "AQAB"},
        "text"
    ]));
    assert_eq!((keys.keys().len(), keys.skipped()), (1, 7));
    for doc in [&b"{}"[..], b"[]", b"{\"keys\":{}}", b"\xff"] {
        assert!(JsonWebKeySet::parse(doc).is_err());
    }
    // A modulus with a leading zero byte is the same key.
    let mut n = super::jwt::decode(A2_N).unwrap();
    n.insert(0, 0);
    let padded = set(json!([{"kty": "RSA", "n": encode64url(&n), "e": "AQAB"}]));
    verify(&padded, &a2_token()).unwrap();
}

#[test]
fn malformed_tokens_fail_cleanly() {
    let keys = set(json!([rsa_jwk()]));
    for t in [
        "",
        "a",
        "a.b",
        "a.b.c.d",
        "..",
        &format!("eyJhbGciOiJSUzI1NiJ9.{PAYLOAD}."),
        &format!("eyJhbGciOiJSUzI1NiJ9=.{PAYLOAD}.{A2_SIG}"),
        &format!("{}.{PAYLOAD}.{A2_SIG}", encode64url(b"[]")),
        &format!("{}.{PAYLOAD}.{A2_SIG}", encode64url(br#"{"typ":"JWT"}"#)),
        &format!("{}.{PAYLOAD}.{A2_SIG}", encode64url(br#"{"alg":5}"#)),
        &format!("eyJhbGciOiJSUzI1NiJ9.{}.{A2_SIG}", encode64url(b"not json")),
    ] {
        assert!(verify(&keys, t).is_err(), "{t}");
    }
    let full = a3_token();
    for i in 0..full.len() {
        let _ = verify(&keys, &full[..i]);
    }
}

// ---- the signed validator's claims, with a key made here ----

const NOW: i64 = 1_700_000_000_000;
const S: i64 = NOW / 1000;

struct Signer {
    pair: EcdsaKeyPair,
    rng: SystemRandom,
}

impl Signer {
    fn new() -> Self {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .unwrap();
        Self { pair, rng }
    }

    fn jwk(&self, kid: &str) -> serde_json::Value {
        let point = self.pair.public_key().as_ref();
        json!({"kty": "EC", "crv": "P-256", "kid": kid, "use": "sig",
               "x": encode64url(&point[1..33]), "y": encode64url(&point[33..65])})
    }

    fn sign(&self, kid: &str, claims: serde_json::Value) -> String {
        let input = format!(
            "{}.{}",
            encode64url(
                json!({"alg": "ES256", "kid": kid, "typ": "JWT"})
                    .to_string()
                    .as_bytes()
            ),
            encode64url(claims.to_string().as_bytes())
        );
        let sig = self.pair.sign(&self.rng, input.as_bytes()).unwrap();
        format!("{input}.{}", encode64url(sig.as_ref()))
    }
}

fn validator(signer: &Signer, config: JwtValidatorConfig) -> JwtValidator {
    JwtValidator::new(config, set(json!([signer.jwk("k1")])))
}

fn expected() -> JwtValidatorConfig {
    JwtValidatorConfig {
        expected_audiences: vec!["kafka".into(), "other".into()],
        expected_issuer: Some("https://idp".into()),
        ..JwtValidatorConfig::default()
    }
}

fn claims() -> serde_json::Value {
    json!({"sub": "alice", "iss": "https://idp", "aud": "kafka", "iat": S, "exp": S + 600,
           "scope": "produce consume"})
}

fn with(mut c: serde_json::Value, key: &str, value: serde_json::Value) -> serde_json::Value {
    if value.is_null() {
        c.as_object_mut().unwrap().remove(key);
    } else {
        c[key] = value;
    }
    c
}

#[test]
fn signed_validator_accepts_a_good_token() {
    let s = Signer::new();
    let v = validator(&s, expected());
    let t = v.validate(&s.sign("k1", claims()), NOW).unwrap();
    assert_eq!(t.principal(), "alice");
    assert_eq!(t.lifetime_ms(), (S + 600) * 1000);
    assert_eq!(t.start_time_ms(), Some(S * 1000));
    assert_eq!(
        t.scopes().iter().map(String::as_str).collect::<Vec<_>>(),
        ["consume", "produce"]
    );
    // Through the server exchange: Done with the principal and the expiry.
    let mut ex = crate::sasl::ServerExchange::oauthbearer(Arc::new(v), NOW);
    let initial =
        ClientInitialResponse::new(&s.sign("k1", claims()), None, Default::default()).unwrap();
    let step = ex.step(&initial.to_bytes(), &crate::sasl::StaticCredentials::new());
    assert!(
        matches!(step, Ok(crate::sasl::ServerStep::Done { ref authorization_id, .. }) if authorization_id == "alice")
    );
    assert_eq!(ex.credential_expiry_ms(), Some((S + 600) * 1000));
}

#[test]
fn signed_validator_claim_checks() {
    let s = Signer::new();
    let v = validator(&s, expected());
    let check = |c: serde_json::Value| v.validate(&s.sign("k1", c), NOW);
    // exp: inside the 30 s skew passes; at the skew's edge fails.
    assert!(check(with(claims(), "exp", json!(S - 29))).is_ok());
    assert!(matches!(
        check(with(claims(), "exp", json!(S - 30))),
        Err(OAuthBearerError::Expired {
            skew_ms: 30_000,
            ..
        })
    ));
    assert!(matches!(
        check(with(claims(), "exp", json!(null))),
        Err(OAuthBearerError::MissingClaim(c)) if c == "exp"
    ));
    assert!(matches!(
        check(with(claims(), "iat", json!(null))),
        Err(OAuthBearerError::MissingClaim(c)) if c == "iat"
    ));
    // nbf: in the future beyond the skew fails, within it passes.
    assert!(matches!(
        check(with(claims(), "nbf", json!(S + 31))),
        Err(OAuthBearerError::NotYetValid { .. })
    ));
    assert!(check(with(claims(), "nbf", json!(S + 30))).is_ok());
    // Audience: any of the expected; array form; missing; wrong.
    assert!(check(with(claims(), "aud", json!(["x", "other"]))).is_ok());
    assert!(matches!(
        check(with(claims(), "aud", json!("kafka-x"))),
        Err(OAuthBearerError::Audience(_))
    ));
    assert!(matches!(
        check(with(claims(), "aud", json!(null))),
        Err(OAuthBearerError::Audience(_))
    ));
    // Issuer: wrong or missing.
    assert_eq!(
        check(with(claims(), "iss", json!("https://evil"))).unwrap_err(),
        OAuthBearerError::Issuer {
            found: Some("https://evil".into())
        }
    );
    assert_eq!(
        check(with(claims(), "iss", json!(null))).unwrap_err(),
        OAuthBearerError::Issuer { found: None }
    );
    // Subject: missing, blank, not a string.
    assert!(matches!(
        check(with(claims(), "sub", json!(null))),
        Err(OAuthBearerError::MissingClaim(c)) if c == "sub"
    ));
    assert!(check(with(claims(), "sub", json!("  "))).is_err());
    assert!(check(with(claims(), "sub", json!(7))).is_err());
    // Scope as an array; a repeated or blank scope; another type.
    let t = check(with(claims(), "scope", json!(["a", " b "]))).unwrap();
    assert_eq!(
        t.scopes().iter().map(String::as_str).collect::<Vec<_>>(),
        ["a", "b"]
    );
    assert!(check(with(claims(), "scope", json!("a a"))).is_err());
    assert!(check(with(claims(), "scope", json!(["a", ""]))).is_err());
    assert!(check(with(claims(), "scope", json!({"a": 1}))).is_err());
    // A critical header is refused.
    let crit = {
        let input = format!(
            "{}.{}",
            encode64url(br#"{"alg":"ES256","kid":"k1","crit":["x"],"x":1}"#),
            encode64url(claims().to_string().as_bytes())
        );
        let sig = s.pair.sign(&s.rng, input.as_bytes()).unwrap();
        format!("{input}.{}", encode64url(sig.as_ref()))
    };
    assert_eq!(
        v.validate(&crit, NOW),
        Err(OAuthBearerError::CriticalHeader)
    );
    // Another key's signature under our kid; an unknown kid.
    let other = Signer::new();
    assert_eq!(
        v.validate(&other.sign("k1", claims()), NOW),
        Err(OAuthBearerError::InvalidSignature)
    );
    assert!(matches!(
        v.validate(&s.sign("k2", claims()), NOW),
        Err(OAuthBearerError::UnknownKeyId(_))
    ));
}

#[test]
fn audience_present_without_expected_audience_is_refused_and_claim_names_are_configurable() {
    let s = Signer::new();
    let v = validator(&s, JwtValidatorConfig::default());
    assert!(matches!(
        v.validate(&s.sign("k1", claims()), NOW),
        Err(OAuthBearerError::Audience(_))
    ));
    assert!(
        v.validate(&s.sign("k1", with(claims(), "aud", json!(null))), NOW)
            .is_ok()
    );
    let get = |k: &str| {
        [
            ("sasl.oauthbearer.clock.skew.seconds", "0"),
            ("sasl.oauthbearer.expected.audience", " kafka , ,other"),
            ("sasl.oauthbearer.sub.claim.name", "client_id"),
            ("sasl.oauthbearer.scope.claim.name", "scp"),
        ]
        .iter()
        .find(|(key, _)| *key == k)
        .map(|(_, v)| v.to_string())
    };
    let config = JwtValidatorConfig::from_config(get).unwrap();
    assert_eq!(config.expected_audiences, ["kafka", "other"]);
    assert_eq!(config.clock_skew_ms, 0);
    let v = validator(&s, config);
    let c = json!({"client_id": "svc", "aud": "other", "iat": S, "exp": S + 60, "scp": ["w"]});
    let t = v.validate(&s.sign("k1", c.clone()), NOW).unwrap();
    assert_eq!(t.principal(), "svc");
    assert!(t.scopes().contains("w"));
    // No skew now: expired exactly at exp.
    assert!(v.validate(&s.sign("k1", c), NOW + 60_000).is_err());
    for bad in ["-1", "x"] {
        let get = |k: &str| (k == "sasl.oauthbearer.clock.skew.seconds").then(|| bad.to_string());
        assert!(JwtValidatorConfig::from_config(get).is_err());
    }
}

#[test]
fn errors_never_hold_the_token() {
    let s = Signer::new();
    let v = validator(&s, expected());
    let token = s.sign("k1", with(claims(), "exp", json!(S - 100)));
    let e = v.validate(&token, NOW).unwrap_err();
    let sig = token.rsplit('.').next().unwrap();
    assert!(!format!("{e} {e:?}").contains(sig));
    let t = v.validate(&s.sign("k1", claims()), NOW).unwrap();
    assert!(!format!("{t:?}").contains(s.sign("k1", claims()).split('.').next().unwrap()));
}
