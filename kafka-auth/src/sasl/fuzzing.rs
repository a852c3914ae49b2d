//! The `sasl` fuzz target's checks (feature `fuzzing`), shared by the cargo-fuzz target in
//! `xtask/fuzz` and the stable smoke runner (`cargo xtask fuzz sasl --smoke`).
//!
//! An input is split at its first `0xFF` byte (never part of a valid message, which is
//! UTF-8) into two messages. For every mechanism:
//!
//! - the server machine takes the first message and, after a challenge, the second; it may
//!   end in `Done` only for the right credentials (PLAIN: `user`/`pencil`; SCRAM: the proof
//!   is recomputed here from the password and must be the one sent), and every step after
//!   `Done` or an error is refused with ILLEGAL_SASL_STATE; its errors never hold the
//!   password;
//! - the client machine takes the first message as server-first (or PLAIN's answer) and the
//!   second as server-final, with the same "no step after the end" rule.
//!
//! OAUTHBEARER (server with Kafka's unsecured validator at [`NOW_MS`], client with a fixed
//! token): the server may end in `Done` only when the first message parses as an initial
//! response whose token the validator accepts and whose authorization id is empty or the
//! principal; a refused token gets the error challenge, and then only 0x01 is taken and it
//! fails; the client is `Done` only on an empty answer and answers anything else with 0x01.
//!
//! The whole input is also read as a `sasl.jaas.config` value: parsing never panics, `Debug`
//! hides every sensitive option, and a parsed config written back with every token quoted
//! parses to the same modules.
//!
//! Panicking is how a fuzz target reports, hence the asserts.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use super::scram::messages::encode64;
use super::*;
use crate::jaas::{self, JaasConfig, LoginModule};
use oauthbearer::{
    ClientInitialResponse as Initial, OAuthBearerToken, TokenValidator, UnsecuredValidator,
};

/// The server nonce of the fuzzed server exchanges.
pub const SERVER_NONCE: &str = "fuzzServerNonce";
/// The client nonce of the fuzzed client exchanges.
pub const CLIENT_NONCE: &str = "fuzzClientNonce";
/// The one user of the fuzzed credential store, and its password.
pub const USER: &str = "user";
/// The one user's password.
pub const PASSWORD: &str = "pencil";
const SALT: &[u8] = b"fuzz-salt";
/// The time OAUTHBEARER tokens are checked at.
pub const NOW_MS: i64 = 1_700_000_000_000;

fn store() -> &'static StaticCredentials {
    static STORE: OnceLock<StaticCredentials> = OnceLock::new();
    STORE.get_or_init(|| {
        let mut s = StaticCredentials::new();
        s.add_plain(USER, PASSWORD);
        for m in ScramMechanism::ALL {
            let c =
                ScramCredential::from_password(m, PASSWORD.as_bytes(), SALT, scram::MIN_ITERATIONS)
                    .expect("a valid iteration count");
            s.add_scram(m, USER, c);
        }
        s
    })
}

/// The entry point.
pub fn sasl(data: &[u8]) {
    let (first, second) = match data.iter().position(|&b| b == 0xFF) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    for m in Mechanism::ALL {
        server(m, first, second);
        client(m, first, second);
    }
    oauthbearer_server(first, second);
    oauthbearer_client(first, second);
    jaas_config(data);
}

fn server(m: Mechanism, first: &[u8], second: &[u8]) {
    let creds = store();
    let mut s = ServerExchange::with_nonce(m, SERVER_NONCE);
    let outcome = match s.step(first, creds) {
        Ok(ServerStep::Challenge(challenge)) => {
            assert!(m.scram().is_some(), "{m}: a challenge");
            let r = s.step(second, creds);
            if let Ok(ServerStep::Done {
                response,
                authorization_id,
            }) = &r
            {
                check_scram_done(m, first, &challenge, second, response, authorization_id);
            }
            r
        }
        Ok(ServerStep::Done {
            response,
            authorization_id,
        }) => {
            assert_eq!(m, Mechanism::Plain, "Done at the first message");
            assert!(response.is_empty());
            let fields: Vec<&[u8]> = first.split(|&b| b == 0).collect();
            assert_eq!(fields.len(), 3, "PLAIN Done on {first:?}");
            assert_eq!(
                (fields[1], fields[2]),
                (USER.as_bytes(), PASSWORD.as_bytes())
            );
            assert_eq!(authorization_id, USER);
            Ok(ServerStep::Done {
                response,
                authorization_id,
            })
        }
        Err(e) => Err(e),
    };
    if let Err(e) = &outcome {
        for text in [e.to_string(), format!("{e:?}")] {
            assert!(
                !text.contains(PASSWORD),
                "{m}: the password in an error: {text}"
            );
        }
    }
    let after = s.step(first, creds);
    assert_eq!(
        after,
        Err(SaslError::ExchangeFinished),
        "{m}: a step after the end"
    );
    assert_eq!(
        SaslError::ExchangeFinished.kafka_error_code(),
        ILLEGAL_SASL_STATE
    );
}

/// A SCRAM server said Done: the client-final must carry the proof that the password gives
/// for this AuthMessage, and the response must be the server signature.
fn check_scram_done(
    m: Mechanism,
    first: &[u8],
    challenge: &[u8],
    second: &[u8],
    response: &[u8],
    user: &str,
) {
    let sm = m.scram().expect("SCRAM");
    assert_eq!(user, USER);
    let first = std::str::from_utf8(first).expect("UTF-8 client-first");
    let second = std::str::from_utf8(second).expect("UTF-8 client-final");
    let challenge = std::str::from_utf8(challenge).expect("UTF-8 server-first");
    // client-first-message-bare: after the gs2 header's two commas.
    let bare = first.splitn(3, ',').nth(2).expect("a gs2 header");
    let (without_proof, proof) = second.rsplit_once(",p=").expect("a proof");
    let auth = format!("{bare},{challenge},{without_proof}");
    let salted =
        salted_password(sm, PASSWORD.as_bytes(), SALT, scram::MIN_ITERATIONS).expect("salted");
    let (client_key, server_key) = sm.keys(salted.expose()).expect("keys");
    let signature = sm
        .hmac(&sm.hash(&client_key), &[auth.as_bytes()])
        .expect("hmac");
    let expected: Vec<u8> = client_key
        .iter()
        .zip(&signature)
        .map(|(a, b)| a ^ b)
        .collect();
    assert_eq!(proof, encode64(&expected), "{m}: Done with another proof");
    let v = sm.hmac(&server_key, &[auth.as_bytes()]).expect("hmac");
    assert_eq!(response, format!("v={}", encode64(&v)).as_bytes());
}

fn client(m: Mechanism, first: &[u8], second: &[u8]) {
    let mut c = ClientExchange::with_nonce(m, USER, PASSWORD, CLIENT_NONCE, scram::MIN_ITERATIONS)
        .expect("valid client credentials");
    c.initial();
    let outcome = match c.step(first) {
        Ok(ClientStep::Send(_)) => {
            assert!(m.scram().is_some(), "{m}: a second client message");
            c.step(second)
        }
        Ok(ClientStep::Done) => {
            assert!(
                m == Mechanism::Plain && first.is_empty(),
                "{m}: Done on {first:?}"
            );
            Ok(ClientStep::Done)
        }
        Err(e) => Err(e),
    };
    if outcome == Ok(ClientStep::Done) && m.scram().is_some() {
        assert!(second.starts_with(b"v="), "{m}: Done without a signature");
    }
    assert_eq!(
        c.step(second),
        Err(SaslError::ExchangeFinished),
        "{m}: a client step after the end"
    );
}

fn oauthbearer_server(first: &[u8], second: &[u8]) {
    let creds = store();
    let validator = UnsecuredValidator::default();
    let mut s = ServerExchange::oauthbearer(Arc::new(validator.clone()), NOW_MS);
    match s.step(first, creds) {
        Ok(ServerStep::Done {
            response,
            authorization_id,
        }) => {
            assert!(response.is_empty());
            let parsed = Initial::parse(first).expect("Done on an unparsable message");
            let token: OAuthBearerToken = validator
                .validate(parsed.token(), NOW_MS)
                .expect("Done on a token the validator refuses");
            assert_eq!(authorization_id, token.principal());
            let authzid = parsed.authorization_id();
            assert!(authzid.is_empty() || authzid == token.principal());
            assert_eq!(s.credential_expiry_ms(), Some(token.lifetime_ms()));
        }
        Ok(ServerStep::Challenge(challenge)) => {
            let parsed = Initial::parse(first).expect("a challenge on an unparsable message");
            assert!(validator.validate(parsed.token(), NOW_MS).is_err());
            assert!(challenge.starts_with(b"{\"status\":"));
            assert!(s.token_rejection().is_some());
            let r = s.step(second, creds);
            assert!(
                r.is_err(),
                "OAUTHBEARER: a step after the challenge did not fail"
            );
            assert_eq!(s.oauthbearer_session(), None);
        }
        Err(_) => assert_eq!(s.oauthbearer_session(), None),
    }
    assert_eq!(
        s.step(first, creds),
        Err(SaslError::ExchangeFinished),
        "OAUTHBEARER: a step after the end"
    );
}

fn oauthbearer_client(first: &[u8], second: &[u8]) {
    let initial = Initial::new("a.b.", None, BTreeMap::new()).expect("a valid token");
    let mut c = ClientExchange::oauthbearer(initial);
    c.initial();
    match c.step(first) {
        Ok(ClientStep::Done) => assert!(first.is_empty(), "OAUTHBEARER client Done on {first:?}"),
        Ok(ClientStep::Send(m)) => {
            assert_eq!(m, oauthbearer::ERROR_ACKNOWLEDGEMENT);
            assert!(c.oauthbearer_refusal().is_some());
            assert!(matches!(c.step(second), Err(SaslError::ServerError(_))));
        }
        Err(e) => panic!("OAUTHBEARER client refused a server message: {e}"),
    }
    assert_eq!(c.step(second), Err(SaslError::ExchangeFinished));
}

/// An unsecured token with `claims` (for the OAUTHBEARER seeds).
fn unsecured_token(claims: &str) -> String {
    format!(
        "{}.{}.",
        oauthbearer::encode64url(br#"{"alg":"none"}"#),
        oauthbearer::encode64url(claims.as_bytes())
    )
}

fn jaas_config(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let Ok(modules) = JaasConfig::parse(&text) else {
        return;
    };
    for module in &modules {
        let debug = format!("{module:?}");
        let sensitive = module
            .options()
            .filter(|(k, _)| jaas::is_sensitive_option(k))
            .count();
        assert!(
            debug.matches("\"[hidden]\"").count() >= sensitive,
            "{debug}"
        );
    }
    let written: String = modules.iter().map(write_module).collect();
    let again = JaasConfig::parse(&written)
        .unwrap_or_else(|e| panic!("a written-back config does not parse: {e}\n{written}"));
    assert!(
        again == modules,
        "a written-back config parses differently:\n{written}"
    );
}

/// A module with every token quoted.
fn write_module(m: &LoginModule) -> String {
    let flag = format!("{:?}", m.flag()).to_ascii_lowercase();
    let mut out = format!("{} {flag}", quote(m.class()));
    for (k, v) in m.options() {
        out.push_str(&format!(" {}={}", quote(k), quote(v)));
    }
    out.push_str(";\n");
    out
}

fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Seed inputs: valid exchanges of every mechanism (server side: client-first, 0xFF,
/// client-final; client side: server-first, 0xFF, server-final), variants near the rules,
/// and Kafka's JAAS examples.
pub fn seeds() -> Vec<Vec<u8>> {
    let join = |a: &[u8], b: &[u8]| [a, &[0xFF], b].concat();
    let mut out: Vec<Vec<u8>> = vec![
        b"\0user\0pencil".to_vec(),
        b"user\0user\0pencil".to_vec(),
        b"admin\0user\0pencil".to_vec(),
        b"\0user\0pencil2".to_vec(),
        Vec::new(),
    ];
    for m in ScramMechanism::ALL {
        let mech = m.mechanism();
        let mut c =
            ClientExchange::with_nonce(mech, USER, PASSWORD, CLIENT_NONCE, scram::MIN_ITERATIONS)
                .expect("client");
        let mut s = ServerExchange::with_nonce(mech, SERVER_NONCE);
        let cf = c.initial();
        let Ok(ServerStep::Challenge(sf)) = s.step(&cf, store()) else {
            panic!("{m}: no server-first");
        };
        let Ok(ClientStep::Send(cfin)) = c.step(&sf) else {
            panic!("{m}: no client-final");
        };
        let Ok(ServerStep::Done { response: sfin, .. }) = s.step(&cfin, store()) else {
            panic!("{m}: not done");
        };
        out.push(join(&cf, &cfin));
        out.push(join(&sf, &sfin));
        out.push(join(&sf, b"e=invalid-proof"));
        let bare = String::from_utf8_lossy(&cf).replacen("n,,", "", 1);
        for variant in [
            format!("n,a=user,{bare}"),
            format!("y,,{bare}"),
            format!("{}{bare},tokenauth=true", "n,,"),
            format!("n,,m=x,{bare}"),
            format!("p=tls-unique,,{bare}"),
            "n,,n=a=3Db=2Cc,r=x".to_owned(),
        ] {
            out.push(join(variant.as_bytes(), &cfin));
        }
    }
    let s = NOW_MS / 1000;
    let good = unsecured_token(&format!(r#"{{"sub":"user","exp":{},"iat":{s}}}"#, s + 60));
    let expired = unsecured_token(&format!(r#"{{"sub":"user","exp":{}}}"#, s - 60));
    let no_sub = unsecured_token(&format!(r#"{{"exp":{}}}"#, s + 60));
    for (token, authzid) in [
        (&good, None),
        (&good, Some("user")),
        (&good, Some("admin")),
        (&expired, None),
        (&no_sub, None),
    ] {
        let extensions = BTreeMap::from([("traceId".to_owned(), "1".to_owned())]);
        let m = Initial::new(token, authzid, extensions)
            .expect("a valid initial response")
            .to_bytes();
        out.push(join(&m, oauthbearer::ERROR_ACKNOWLEDGEMENT));
        out.push(join(&m, &m));
    }
    out.push(br#"{"status":"invalid_token"}"#.to_vec());
    out.push(join(br#"{"status":"insufficient_scope","scope":"x"}"#, b""));
    out.push(b"n,a=user@example.com,\x01host=server.example.com\x01port=143\x01auth=Bearer vF9dft4qmTc2Nvb3RlckBhbHRhdmlzdGEuY29tCg==\x01\x01".to_vec());
    for text in [
        "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"admin\" password=\"admin-secret\" user_admin=\"admin-secret\" user_alice=\"alice-secret\";",
        "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"alice\" password=\"alice-secret\";",
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required unsecuredLoginStringClaim_sub=\"alice\";",
        "// c\na.B Optional k='v\\n\\101' /* x */ j=w;\nc.D sufficient;",
    ] {
        out.push(text.as_bytes().to_vec());
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn seeds_pass_the_checks() {
        let seeds = super::seeds();
        assert!(seeds.len() > 20);
        for s in &seeds {
            super::sasl(s);
        }
    }
}
