//! Messages, exchanges, unsecured tokens and the token endpoint. The signed validator and
//! the JWS vectors are in `tests_jwt.rs`.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::*;
use crate::jaas::JaasConfig;
use crate::sasl::{
    ClientExchange, ClientStep, Mechanism, SaslError, ServerExchange, ServerStep, StaticCredentials,
};

const NOW: i64 = 1_700_000_000_000;

fn ext(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// An `alg: none` token with these claims.
fn unsecured(claims: &str) -> String {
    format!(
        "{}.{}.",
        encode64url(br#"{"alg":"none"}"#),
        encode64url(claims.as_bytes())
    )
}

// ---- messages ----

#[test]
fn rfc_7628_section_4_1_initial_response_parses() {
    let m = b"n,a=user@example.com,\x01host=server.example.com\x01port=143\x01auth=Bearer vF9dft4qmTc2Nvb3RlckBhbHRhdmlzdGEuY29tCg==\x01\x01";
    let r = ClientInitialResponse::parse(m).unwrap();
    assert_eq!(r.authorization_id(), "user@example.com");
    assert_eq!(r.token(), "vF9dft4qmTc2Nvb3RlckBhbHRhdmlzdGEuY29tCg==");
    assert_eq!(
        r.extensions(),
        &ext(&[("host", "server.example.com"), ("port", "143")])
    );
    // Written back: the same fields (extensions in name order, `auth` first).
    let again = ClientInitialResponse::parse(&r.to_bytes()).unwrap();
    assert_eq!(again, r);
}

#[test]
fn kafka_form_round_trips_and_is_byte_exact() {
    let r = ClientInitialResponse::new("abc.def.ghi", None, ext(&[("traceId", "123")])).unwrap();
    assert_eq!(
        r.to_bytes(),
        b"n,,\x01auth=Bearer abc.def.ghi\x01traceId=123\x01\x01".to_vec()
    );
    let r = ClientInitialResponse::new("t", None, BTreeMap::new()).unwrap();
    assert_eq!(r.to_bytes(), b"n,,\x01auth=Bearer t\x01\x01".to_vec());
    // An authorization id with ',' and '=' is escaped, and decoded when read.
    let r = ClientInitialResponse::new("t", Some("a,b=c"), BTreeMap::new()).unwrap();
    assert_eq!(
        r.to_bytes(),
        b"n,a=a=2Cb=3Dc,\x01auth=Bearer t\x01\x01".to_vec()
    );
    assert_eq!(
        ClientInitialResponse::parse(&r.to_bytes())
            .unwrap()
            .authorization_id(),
        "a,b=c"
    );
}

#[test]
fn scheme_is_case_insensitive_and_spaces_may_repeat() {
    for auth in ["Bearer t", "bearer t", "BEARER   t"] {
        let m = format!("n,,\x01auth={auth}\x01\x01");
        assert_eq!(
            ClientInitialResponse::parse(m.as_bytes()).unwrap().token(),
            "t"
        );
    }
}

#[test]
fn malformed_initial_responses_are_refused_by_rule() {
    let cases: &[(&[u8], &str)] = &[
        (b"y,,\x01auth=Bearer t\x01\x01", "channel binding"),
        (
            b"p=tls-unique,,\x01auth=Bearer t\x01\x01",
            "channel binding",
        ),
        (b"x,,\x01auth=Bearer t\x01\x01", "GS2 header"),
        (b"n,a=,\x01auth=Bearer t\x01\x01", "authorization id"),
        (b"n,a=x=41,\x01auth=Bearer t\x01\x01", "authorization id"),
        (b"n,a=x\x01auth=Bearer t\x01\x01", "authorization id"),
        (b"n,x,\x01auth=Bearer t\x01\x01", "GS2 header"),
        (b"n,,auth=Bearer t\x01\x01", "0x01"),
        (b"n,,\x01\x01", "'auth' not specified"),
        (b"n,,\x01host=h\x01\x01", "'auth' not specified"),
        (b"n,,\x01auth=Bearer t\x01", "truncated"),
        (b"n,,\x01auth=Bearer t", "truncated"),
        (b"n,,\x01auth=Basic t\x01\x01", "scheme"),
        (b"n,,\x01auth=Bearer\x01\x01", "'auth' format"),
        (b"n,,\x01auth=Bearer t!\x01\x01", "'auth' format"),
        (b"n,,\x01auth=Bearer =\x01\x01", "'auth' format"),
        (b"n,,\x01auth=Bearer t\x01ho-st=h\x01\x01", "letters only"),
        (b"n,,\x01auth=Bearer t\x01=h\x01\x01", "letters only"),
        (b"n,,\x01auth=Bearer t\x01host=\x01\x01", "value"),
        (b"n,,\x01auth=Bearer t\x01host=a\x7fb\x01\x01", "value"),
        (b"n,,\x01auth=Bearer t\x01host\x01\x01", "without '='"),
        (b"n,,\x01auth=Bearer t\x01auth=Bearer u\x01\x01", "twice"),
        (b"n,,\x01auth=Bearer t\x01a=b\x01a=c\x01\x01", "twice"),
        (b"n,,\x01auth=Bearer t\x01\x01extra", "without '='"),
        (
            "n,,\x01auth=Bearer t\x01h=\u{e9}\x01\x01".as_bytes(),
            "ASCII",
        ),
    ];
    for (m, why) in cases {
        let e = ClientInitialResponse::parse(m).unwrap_err();
        assert!(
            e.to_string().contains(why),
            "{:?}: {e} (expected {why})",
            String::from_utf8_lossy(m)
        );
    }
}

#[test]
fn every_truncation_and_random_bytes_fail_cleanly() {
    let full = b"n,a=user,\x01host=server.example.com\x01auth=Bearer abc.def.ghi\x01\x01";
    for i in 0..full.len() {
        assert!(ClientInitialResponse::parse(&full[..i]).is_err(), "{i}");
    }
    assert!(ClientInitialResponse::parse(full).is_ok());
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for _ in 0..5000 {
        let len = (x % 64) as usize;
        let mut m = b"n,,\x01".to_vec();
        for _ in 0..len {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            m.push(b"auth=Bearer x\x01\x01a,n= \xff"[(x % 20) as usize]);
        }
        if let Ok(r) = ClientInitialResponse::parse(&m) {
            // Whatever parses writes back to something that parses the same.
            assert_eq!(ClientInitialResponse::parse(&r.to_bytes()).unwrap(), r);
        }
    }
}

#[test]
fn client_side_construction_refuses_what_the_grammar_cannot_carry() {
    assert!(ClientInitialResponse::new("", None, BTreeMap::new()).is_err());
    assert!(ClientInitialResponse::new("a b", None, BTreeMap::new()).is_err());
    assert!(ClientInitialResponse::new("t", Some("é"), BTreeMap::new()).is_err());
    for (k, v) in [
        ("auth", "x"),
        ("a1", "x"),
        ("", "x"),
        ("k", ""),
        ("k", "\x01"),
    ] {
        let e = ClientInitialResponse::new("t", None, ext(&[(k, v)])).unwrap_err();
        assert!(
            matches!(e, OAuthBearerError::Extension { .. }),
            "{k}={v:?}: {e}"
        );
    }
    // Debug never shows the token.
    let r = ClientInitialResponse::new("sekrit.token.value", None, BTreeMap::new()).unwrap();
    assert!(!format!("{r:?}").contains("sekrit"));
}

#[test]
fn error_challenge_is_kafkas_json_and_reads_back() {
    let e = ServerErrorResponse {
        status: "invalid_token".into(),
        scope: None,
        openid_configuration: None,
    };
    assert_eq!(e.to_bytes(), br#"{"status":"invalid_token"}"#.to_vec());
    let e = ServerErrorResponse {
        status: "insufficient_scope".into(),
        scope: Some("a \"b\"".into()),
        openid_configuration: Some("https://example.com/.well-known/openid-configuration".into()),
    };
    assert_eq!(
        String::from_utf8(e.to_bytes()).unwrap(),
        r#"{"status":"insufficient_scope", "scope":"a \"b\"", "openid-configuration":"https://example.com/.well-known/openid-configuration"}"#
    );
    assert_eq!(ServerErrorResponse::parse(&e.to_bytes()).unwrap(), e);
    for bad in [&b"[]"[..], b"{}", b"{\"status\":1}", b"nope"] {
        assert!(ServerErrorResponse::parse(bad).is_err());
    }
}

// ---- unsecured login and validator ----

fn login(jaas_options: &str) -> UnsecuredLogin {
    let text = format!(
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required {jaas_options};"
    );
    UnsecuredLogin::from_jaas(&JaasConfig::parse_single(&text).unwrap()).unwrap()
}

fn validator(jaas_options: &str) -> UnsecuredValidator {
    let text = format!(
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required {jaas_options};"
    );
    UnsecuredValidator::from_jaas(&JaasConfig::parse_single(&text).unwrap()).unwrap()
}

#[test]
fn unsecured_login_token_is_accepted_by_the_unsecured_validator() {
    let l = login(
        r#"unsecuredLoginStringClaim_sub="alice" unsecuredLoginListClaim_scope=",KAFKA,LOGIN" unsecuredLoginNumberClaim_level="3" unsecuredLoginLifetimeSeconds="60" unsecuredLoginExtension_traceId="42""#,
    );
    assert_eq!(l.extensions(), &ext(&[("traceId", "42")]));
    let t = l.token(NOW).unwrap();
    assert_eq!(t.principal(), "alice");
    assert_eq!(t.lifetime_ms(), NOW + 60_000);
    assert_eq!(t.start_time_ms(), Some(NOW));
    let v = validator(r#"unsecuredValidatorRequiredScope="LOGIN""#);
    let got = v.validate(t.value(), NOW + 1000).unwrap();
    assert_eq!(got.principal(), "alice");
    assert_eq!(
        got.scopes().iter().map(String::as_str).collect::<Vec<_>>(),
        ["KAFKA", "LOGIN"]
    );
    assert_eq!(got.lifetime_ms(), NOW + 60_000);
    // The claims Kafka writes: alg none, iat/exp in seconds, the configured claims.
    let jwt = Jwt::parse(t.value(), true).unwrap();
    assert_eq!(jwt.alg().unwrap(), "none");
    assert_eq!(jwt.claims()["level"], serde_json::json!(3.0));
    // Expired a minute later (skew 0), and refused by the signed validator.
    assert!(matches!(
        v.validate(t.value(), NOW + 60_000),
        Err(OAuthBearerError::Expired { .. })
    ));
    let signed = JwtValidator::new(JwtValidatorConfig::default(), JsonWebKeySet::default());
    assert!(matches!(
        signed.validate(t.value(), NOW),
        Err(OAuthBearerError::MalformedToken(_))
    ));
}

#[test]
fn unsecured_login_refuses_reserved_claims_missing_principal_and_bad_options() {
    for opts in [
        r#"unsecuredLoginStringClaim_exp="1""#,
        r#"unsecuredLoginNumberClaim_iat="1""#,
        r#"unsecuredLoginStringClaim_sub="a" unsecuredLoginNumberClaim_n="x""#,
        r#"unsecuredLoginStringClaim_sub="a" unsecuredLoginLifetimeSeconds="1h""#,
        r#"unsecuredLoginStringClaim_sub="a" unsecuredLoginExtension_auth="x""#,
        r#"unsecuredLoginStringClaim_sub="a" unsecuredLoginExtension_a1="x""#,
    ] {
        let text = format!(
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required {opts};"
        );
        assert!(
            UnsecuredLogin::from_jaas(&JaasConfig::parse_single(&text).unwrap()).is_err(),
            "{opts}"
        );
    }
    // No sub: the login is configured but cannot make a token.
    assert!(matches!(
        login(r#"unsecuredLoginStringClaim_name="a""#).token(NOW),
        Err(OAuthBearerError::Config(_))
    ));
    // A custom principal claim name.
    let l =
        login(r#"unsecuredLoginPrincipalClaimName="user" unsecuredLoginStringClaim_user="bob""#);
    let t = l.token(NOW).unwrap();
    assert_eq!(t.principal(), "bob");
    assert!(matches!(
        UnsecuredValidator::default().validate(t.value(), NOW),
        Err(OAuthBearerError::MissingClaim(c)) if c == "sub"
    ));
    assert_eq!(
        l.matching_validator()
            .validate(t.value(), NOW)
            .unwrap()
            .principal(),
        "bob"
    );
}

#[test]
fn unsecured_validator_applies_kafkas_rules() {
    let v = UnsecuredValidator {
        clock_skew_ms: 1000,
        required_scope: vec!["x".into()],
        ..UnsecuredValidator::default()
    };
    let exp = (NOW / 1000) + 10;
    let ok = |claims: &str| v.validate(&unsecured(claims), NOW);
    assert!(ok(&format!(r#"{{"sub":"a","exp":{exp},"scope":"x y"}}"#)).is_ok());
    // iat after now + skew.
    assert!(matches!(
        ok(&format!(
            r#"{{"sub":"a","exp":{exp},"iat":{},"scope":"x"}}"#,
            NOW / 1000 + 2
        )),
        Err(OAuthBearerError::IssuedInFuture { .. })
    ));
    // iat within the skew.
    assert!(
        ok(&format!(
            r#"{{"sub":"a","exp":{exp},"iat":{},"scope":"x"}}"#,
            NOW as f64 / 1000.0 + 0.5
        ))
        .is_ok()
    );
    // exp not after iat.
    assert!(matches!(
        ok(&format!(
            r#"{{"sub":"a","exp":{},"iat":{},"scope":"x"}}"#,
            NOW as f64 / 1000.0 + 0.2,
            NOW as f64 / 1000.0 + 0.5
        )),
        Err(OAuthBearerError::ExpiresBeforeIssued)
    ));
    // exp: within skew passes, at now - skew fails.
    assert!(
        ok(&format!(
            r#"{{"sub":"a","exp":{},"scope":"x"}}"#,
            NOW as f64 / 1000.0 - 0.999
        ))
        .is_ok()
    );
    assert!(matches!(
        ok(&format!(
            r#"{{"sub":"a","exp":{},"scope":"x"}}"#,
            NOW / 1000 - 1
        )),
        Err(OAuthBearerError::Expired { .. })
    ));
    // Missing scope: insufficient_scope, with the required scope in the challenge.
    let e = ok(&format!(r#"{{"sub":"a","exp":{exp},"scope":["y"]}}"#)).unwrap_err();
    assert_eq!(e.status(), "insufficient_scope");
    assert_eq!(
        ServerErrorResponse::for_error(&e).to_bytes(),
        br#"{"status":"insufficient_scope", "scope":"x"}"#.to_vec()
    );
    // Types and presence.
    for (claims, want) in [
        (format!(r#"{{"exp":{exp}}}"#), "required claim missing: sub"),
        (format!(r#"{{"sub":" ","exp":{exp}}}"#), "blank"),
        (format!(r#"{{"sub":1,"exp":{exp}}}"#), "not a string"),
        (r#"{"sub":"a"}"#.to_owned(), "required claim missing: exp"),
        (r#"{"sub":"a","exp":"9"}"#.to_owned(), "not a number"),
        (format!(r#"{{"sub":"a","exp":{exp},"scope":1}}"#), "neither"),
    ] {
        let e = ok(&claims).unwrap_err();
        assert!(e.to_string().contains(want), "{claims}: {e}");
    }
    // A signed algorithm or a signature is refused.
    let signed = format!(
        "{}.{}.",
        encode64url(br#"{"alg":"RS256"}"#),
        encode64url(format!(r#"{{"sub":"a","exp":{exp}}}"#).as_bytes())
    );
    assert!(matches!(
        v.validate(&signed, NOW),
        Err(OAuthBearerError::Algorithm { .. })
    ));
    let with_sig = format!(
        "{}c2ln",
        unsecured(&format!(r#"{{"sub":"a","exp":{exp}}}"#))
    );
    assert!(matches!(
        v.validate(&with_sig, NOW),
        Err(OAuthBearerError::MalformedToken(_))
    ));
}

#[test]
fn unsecured_validator_options_are_read_as_kafka_reads_them() {
    let v = validator(
        r#"unsecuredValidatorPrincipalClaimName=" user " unsecuredValidatorScopeClaimName="roles" unsecuredValidatorRequiredScope=" a  b " unsecuredValidatorAllowableClockSkewMs="250""#,
    );
    assert_eq!(v.principal_claim, "user");
    assert_eq!(v.scope_claim, "roles");
    assert_eq!(v.required_scope, ["a", "b"]);
    assert_eq!(v.clock_skew_ms, 250);
    assert_eq!(
        validator(r#"unsecuredValidatorPrincipalClaimName="  ""#).principal_claim,
        "sub"
    );
    for bad in ["-1", "x"] {
        let text = format!(
            "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredValidatorAllowableClockSkewMs=\"{bad}\";"
        );
        assert!(UnsecuredValidator::from_jaas(&JaasConfig::parse_single(&text).unwrap()).is_err());
    }
}

// ---- exchanges ----

fn server() -> ServerExchange {
    ServerExchange::oauthbearer(Arc::new(UnsecuredValidator::default()), NOW)
}

fn good_token(sub: &str) -> String {
    unsecured(&format!(
        r#"{{"sub":"{sub}","exp":{},"iat":{}}}"#,
        NOW / 1000 + 3600,
        NOW / 1000
    ))
}

#[test]
fn exchange_is_done_only_after_a_valid_token() {
    let creds = StaticCredentials::new();
    let initial = ClientInitialResponse::new(
        &good_token("alice"),
        Some("alice"),
        ext(&[("traceId", "7")]),
    )
    .unwrap();
    let mut c = ClientExchange::oauthbearer(initial);
    assert_eq!(c.mechanism(), Mechanism::OAuthBearer);
    let mut s = server();
    let first = c.initial();
    assert_eq!(
        s.step(&first, &creds),
        Ok(ServerStep::Done {
            response: Vec::new(),
            authorization_id: "alice".into()
        })
    );
    let session = s.oauthbearer_session().unwrap();
    assert_eq!(session.extensions, ext(&[("traceId", "7")]));
    assert_eq!(s.credential_expiry_ms(), Some(NOW + 3_600_000));
    assert_eq!(c.step(b""), Ok(ClientStep::Done));
    // Steps after the end.
    assert_eq!(s.step(&first, &creds), Err(SaslError::ExchangeFinished));
    assert_eq!(c.step(b""), Err(SaslError::ExchangeFinished));
}

#[test]
fn refused_token_gets_the_error_challenge_then_fails() {
    let creds = StaticCredentials::new();
    let expired = unsecured(&format!(r#"{{"sub":"a","exp":{}}}"#, NOW / 1000 - 10));
    let mut c = ClientExchange::oauthbearer(
        ClientInitialResponse::new(&expired, None, BTreeMap::new()).unwrap(),
    );
    let mut s = server();
    let Ok(ServerStep::Challenge(challenge)) = s.step(&c.initial(), &creds) else {
        panic!("no error challenge");
    };
    assert_eq!(challenge, br#"{"status":"invalid_token"}"#.to_vec());
    assert!(matches!(
        s.token_rejection(),
        Some(OAuthBearerError::Expired { .. })
    ));
    assert_eq!(c.step(&challenge), Ok(ClientStep::Send(vec![1])));
    assert_eq!(c.oauthbearer_refusal().unwrap().status, "invalid_token");
    let e = s.step(&[1], &creds).unwrap_err();
    assert_eq!(e, SaslError::AuthenticationFailed);
    assert_eq!(
        e.kafka_error_code(),
        crate::sasl::SASL_AUTHENTICATION_FAILED
    );
    assert_eq!(s.oauthbearer_session(), None);
    assert_eq!(s.credential_expiry_ms(), None);
    assert_eq!(s.step(&[1], &creds), Err(SaslError::ExchangeFinished));
    // The client, if asked again, reports the server's status, then is finished.
    assert_eq!(
        c.step(b""),
        Err(SaslError::ServerError("invalid_token".into()))
    );
    assert_eq!(c.step(b""), Err(SaslError::ExchangeFinished));
}

#[test]
fn after_the_challenge_only_0x01_is_taken() {
    let creds = StaticCredentials::new();
    let mut s = server();
    let bad = ClientInitialResponse::new("x.y.z", None, BTreeMap::new()).unwrap();
    assert!(matches!(
        s.step(&bad.to_bytes(), &creds),
        Ok(ServerStep::Challenge(_))
    ));
    // A second initial response, even with a good token, does not authenticate.
    let good = ClientInitialResponse::new(&good_token("a"), None, BTreeMap::new()).unwrap();
    assert!(matches!(
        s.step(&good.to_bytes(), &creds),
        Err(SaslError::Malformed { .. })
    ));
    assert_eq!(s.step(&[1], &creds), Err(SaslError::ExchangeFinished));
}

#[test]
fn authorization_id_must_be_the_principal_and_malformed_messages_fail_at_once() {
    let creds = StaticCredentials::new();
    let r =
        ClientInitialResponse::new(&good_token("alice"), Some("admin"), BTreeMap::new()).unwrap();
    let mut s = server();
    assert_eq!(
        s.step(&r.to_bytes(), &creds),
        Err(SaslError::AuthorizationIdMismatch)
    );
    assert_eq!(s.oauthbearer_session(), None);
    let mut s = server();
    assert!(matches!(
        s.step(b"n,,\x01\x01", &creds),
        Err(SaslError::Malformed { .. })
    ));
    assert_eq!(s.step(b"", &creds), Err(SaslError::ExchangeFinished));
    // A 0x01 before any challenge is a malformed first message, not a success.
    let mut s = server();
    assert!(s.step(&[1], &creds).is_err());
}

#[test]
fn mechanism_names_and_exchanges_without_a_token_or_validator() {
    assert_eq!(
        Mechanism::from_name("OAUTHBEARER"),
        Ok(Mechanism::OAuthBearer)
    );
    assert!(Mechanism::from_name("oauthbearer").is_err());
    assert_eq!(Mechanism::OAuthBearer.scram(), None);
    assert!(!Mechanism::ALL.contains(&Mechanism::OAuthBearer));
    assert!(Mechanism::SUPPORTED.contains(&Mechanism::OAuthBearer));
    // No validator: every token fails, as our own error, never Done.
    let mut s = ServerExchange::new(Mechanism::OAuthBearer);
    let r = ClientInitialResponse::new(&good_token("a"), None, BTreeMap::new()).unwrap();
    let e = s
        .step(&r.to_bytes(), &StaticCredentials::new())
        .unwrap_err();
    assert!(matches!(e, SaslError::Internal(_)));
    assert!(matches!(
        ClientExchange::new(Mechanism::OAuthBearer, "u", "p"),
        Err(SaslError::InvalidClientCredentials(_))
    ));
}

#[test]
fn session_lifetime_follows_kafkas_rule() {
    assert_eq!(session_lifetime_ms(None, None, NOW), 0);
    assert_eq!(session_lifetime_ms(None, Some(0), NOW), 0);
    assert_eq!(session_lifetime_ms(None, Some(5000), NOW), 5000);
    assert_eq!(session_lifetime_ms(Some(NOW + 9000), None, NOW), 9000);
    assert_eq!(session_lifetime_ms(Some(NOW + 9000), Some(5000), NOW), 5000);
    assert_eq!(session_lifetime_ms(Some(NOW + 3000), Some(5000), NOW), 3000);
    assert_eq!(session_lifetime_ms(Some(NOW - 3000), Some(5000), NOW), 0);
}

// ---- token endpoint ----

#[test]
fn client_credentials_request_is_kafkas() {
    let c = ClientCredentials::new("my client", "s3cr:t&", Some(" read write "), false).unwrap();
    let r = c.request();
    assert_eq!(r.body, "grant_type=client_credentials&scope=read+write");
    // Standard base64 of "my client:s3cr:t&".
    assert_eq!(r.authorization(), "Basic bXkgY2xpZW50OnMzY3I6dCY=");
    assert!(!format!("{r:?} {c:?}").contains("s3cr"));
    let headers = r.headers();
    assert!(headers.contains(&("Content-Type", "application/x-www-form-urlencoded")));
    assert!(headers.contains(&("Accept", "application/json")));
    // Url-encoded header (KIP-1025): "my+client:s3cr%3At%26".
    let r = ClientCredentials::new("my client", "s3cr:t&", None, true)
        .unwrap()
        .request();
    assert_eq!(r.body, "grant_type=client_credentials");
    assert_eq!(r.authorization(), "Basic bXkrY2xpZW50OnMzY3IlM0F0JTI2");
    assert_eq!(form_urlencode("a-b_c.d*e ~é/"), "a-b_c.d*e+%7E%C3%A9%2F");
    assert!(ClientCredentials::new(" ", "s", None, false).is_err());
    assert!(ClientCredentials::new("id", " ", None, false).is_err());
    let m = JaasConfig::parse_single(
        r#"org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required clientId="id" clientSecret="pw" scope="s";"#,
    )
    .unwrap();
    assert_eq!(
        ClientCredentials::from_jaas(&m, false)
            .unwrap()
            .request()
            .body,
        "grant_type=client_credentials&scope=s"
    );
}

#[test]
fn token_endpoint_answers_are_read() {
    let ok = parse_token_response(
        200,
        br#"{"access_token":"a.b.c","token_type":"Bearer","expires_in":3600,"scope":"x"}"#,
    )
    .unwrap();
    assert_eq!(ok.token(), "a.b.c");
    assert_eq!(ok.expires_in, Some(3600));
    assert_eq!(ok.token_type.as_deref(), Some("Bearer"));
    assert!(!format!("{ok:?}").contains("a.b.c"));
    assert_eq!(
        parse_token_response(201, br#"{"access_token":"t","expires_in":"60"}"#)
            .unwrap()
            .expires_in,
        Some(60)
    );
    for body in [
        &br#"{"token_type":"Bearer"}"#[..],
        br#"{"access_token":" "}"#,
        b"[]",
        b"<html>",
    ] {
        assert!(matches!(
            parse_token_response(200, body),
            Err(OAuthBearerError::TokenResponse(_))
        ));
    }
    let e = parse_token_response(
        401,
        br#"{"error":"invalid_client","error_description":"bad secret"}"#,
    )
    .unwrap_err();
    assert_eq!(
        e,
        OAuthBearerError::TokenEndpoint {
            status: 401,
            error: "invalid_client".into(),
            description: Some("bad secret".into())
        }
    );
    assert!(!e.is_retriable());
    let e = parse_token_response(503, b"").unwrap_err();
    assert!(e.is_retriable());
    assert!(
        parse_token_response(429, b"slow down")
            .unwrap_err()
            .is_retriable()
    );
    assert!(parse_token_response(404, b"").unwrap_err().is_retriable());
}

#[test]
fn login_token_inspection_reads_expiry_and_principal_without_a_signature_check() {
    let claims = format!(r#"{{"sub":"svc","exp":{},"scope":"a b"}}"#, NOW / 1000 + 60);
    let t = format!(
        "{}.{}.{}",
        encode64url(br#"{"alg":"RS256","kid":"k"}"#),
        encode64url(claims.as_bytes()),
        encode64url(b"not a real signature")
    );
    let got = inspect_login_token(&t, "sub", "scope").unwrap();
    assert_eq!(got.principal(), "svc");
    assert_eq!(got.lifetime_ms(), NOW + 60_000);
    assert_eq!(got.scopes().len(), 2);
    assert!(matches!(
        inspect_login_token(&t, "client_id", "scope"),
        Err(OAuthBearerError::MissingClaim(_))
    ));
    assert!(inspect_login_token(&unsecured(&claims), "sub", "scope").is_err());
}
