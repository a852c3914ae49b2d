//! SCRAM known-answer vectors and message rules, below the exchange API.
//!
//! The SCRAM-SHA-512 numbers (and the SHA-256 salted password and keys, which RFC 7677 does
//! not print) come from Python's standard library, independent of the RustCrypto crates:
//!
//! ```python
//! import hashlib, hmac, base64
//! def run(h, pw, salt, it, cnonce, snonce, user="user"):
//!     salted = hashlib.pbkdf2_hmac(h, pw, salt, it)
//!     ck = hmac.new(salted, b"Client Key", h).digest()
//!     sk = hashlib.new(h, ck).digest()
//!     svk = hmac.new(salted, b"Server Key", h).digest()
//!     cf_bare = f"n={user},r={cnonce}"
//!     sf = f"r={cnonce}{snonce},s={base64.b64encode(salt).decode()},i={it}"
//!     cfwp = f"c=biws,r={cnonce}{snonce}"
//!     am = f"{cf_bare},{sf},{cfwp}".encode()
//!     cs = hmac.new(sk, am, h).digest()
//!     proof = bytes(a ^ b for a, b in zip(ck, cs))
//!     ss = hmac.new(svk, am, h).digest()
//!     print(h, salted.hex(), sk.hex(), svk.hex())
//!     print(cfwp + ",p=" + base64.b64encode(proof).decode(), "v=" + base64.b64encode(ss).decode())
//! salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
//! for h in ("sha256", "sha512"):
//!     run(h, b"pencil", salt, 4096, "rOprNGfwEbeRWgbNEkqO", "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0")
//! ```
//!
//! Its SHA-256 messages are RFC 7677's, which checks the script itself.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;

use super::client::{ScramClient, ScramClientStep};
use super::messages::{escape_saslname, unescape_saslname};
use super::server::{ScramServer, ScramServerStep};
use super::*;
use crate::sasl::{CredentialStore, SaslError, Secret, StaticCredentials};

pub(crate) const CLIENT_NONCE: &str = "rOprNGfwEbeRWgbNEkqO";
pub(crate) const SERVER_NONCE: &str = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
pub(crate) const SALT_B64: &str = "W22ZaJ0SNY7soEsUEjb6gQ==";

/// RFC 7677 section 3.
pub(crate) const RFC7677_CLIENT_FIRST: &str = "n,,n=user,r=rOprNGfwEbeRWgbNEkqO";
pub(crate) const RFC7677_SERVER_FIRST: &str =
    "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
pub(crate) const RFC7677_CLIENT_FINAL: &str = "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
pub(crate) const RFC7677_SERVER_FINAL: &str = "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=";

/// The same exchange with SHA-512 (from the Python script above).
pub(crate) const SHA512_CLIENT_FINAL: &str = "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=gMGXRcevScNtxZ6/8lQYpGtnsNAc3mGcmNomv+xnoOMw+3R2xNJdMNnzMlTN8PPC6wdp6dybEmDYXYTxwnYPJQ==";
pub(crate) const SHA512_SERVER_FINAL: &str =
    "v=ZQnYEgWQMFmmsM8aQMF0nDDCy/AgCzkwk8CmMZYcMg0vSVlKDanekLtifDSeVGT4+5ZxXnJq199RVG2rR7N7Zw==";

const SHA256_SALTED: &str = "c4a49510323ab4f952cac1fa99441939e78ea74d6be81ddf7096e87513dc615d";
const SHA256_STORED: &str = "586e5df283e6dceb5c3e791d8b8528ec191e664045ce971792e2e6b5bb13e2a6";
const SHA256_SERVER: &str = "c1f3cbc1c13a9d35a14c0990eed97629ea225863e566a4314ab99f3f00e5d9d5";
const SHA512_SALTED: &str = "f16efe1be67f1d09502ebd5ed9262fddffba5a377ab4f0b687e5ed5ba0f50686b8a4ae166476da8ab3b951d2fa9238b63998f45461bc33a464814949cec9631d";
const SHA512_STORED: &str = "e8002e6f7d3ae446119b216933644dc2a2be7869eb918b8459b5e7d7d2ec12606aceef106825cd735170a675fd3611f684affad1dce3f43a0ee43bd590e1dbbe";
const SHA512_SERVER: &str = "8d91db6230b5687874fe129bc7206e1858c3ae08e02934f57ac03b6b05a229c459d28ff46f5c9611e6c179256490215ec1ff759cb0df285db89af0f99e613aac";

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

pub(crate) fn salt() -> Vec<u8> {
    BASE64.decode(SALT_B64).unwrap()
}

/// `user`/`pencil` for both mechanisms, 4096 iterations, the RFC's salt.
pub(crate) fn store() -> StaticCredentials {
    let mut s = StaticCredentials::new();
    for m in ScramMechanism::ALL {
        let c = ScramCredential::from_password(m, b"pencil", &salt(), 4096).unwrap();
        s.add_scram(m, "user", c);
    }
    s.add_plain("user", "pencil");
    s
}

/// A server that has answered `client_first` (with the RFC's server nonce).
fn server_after_first(
    m: ScramMechanism,
    client_first: &str,
    creds: &StaticCredentials,
) -> Result<(ScramServer, String), SaslError> {
    let lookup = |m, user: &str| creds.scram_credential(m, user);
    match ScramServer::new(m, Some(SERVER_NONCE.into())).step(client_first.as_bytes(), &lookup)? {
        ScramServerStep::Challenge(s, c) => Ok((s, String::from_utf8(c).unwrap())),
        ScramServerStep::Done { .. } => panic!("Done after client-first"),
    }
}

fn client_final_step(s: ScramServer, msg: &str) -> Result<(String, String), SaslError> {
    // The credential was looked up at client-first; the final step must not ask again.
    match s.step(msg.as_bytes(), &|_, _| {
        panic!("credential looked up at client-final")
    })? {
        ScramServerStep::Done {
            response,
            authorization_id,
        } => Ok((String::from_utf8(response).unwrap(), authorization_id)),
        ScramServerStep::Challenge(..) => panic!("challenge after client-final"),
    }
}

fn client(m: ScramMechanism) -> (ScramClient, String) {
    let (c, first) = ScramClient::new(
        m,
        "user",
        Secret::from("pencil"),
        CLIENT_NONCE.into(),
        MAX_ITERATIONS,
    );
    (c, String::from_utf8(first).unwrap())
}

fn client_send(c: ScramClient, msg: &str) -> Result<(ScramClient, String), SaslError> {
    match c.step(msg.as_bytes())? {
        ScramClientStep::Send(c, m) => Ok((c, String::from_utf8(m).unwrap())),
        ScramClientStep::Done => panic!("Done after server-first"),
    }
}

#[test]
fn credentials_match_python() {
    for (m, salted, stored, server) in [
        (
            ScramMechanism::Sha256,
            SHA256_SALTED,
            SHA256_STORED,
            SHA256_SERVER,
        ),
        (
            ScramMechanism::Sha512,
            SHA512_SALTED,
            SHA512_STORED,
            SHA512_SERVER,
        ),
    ] {
        let c = ScramCredential::from_password(m, b"pencil", &salt(), 4096).unwrap();
        assert_eq!(c.stored_key, hex(stored), "{m} stored key");
        assert_eq!(c.server_key, hex(server), "{m} server key");
        assert_eq!((c.salt.clone(), c.iterations), (salt(), 4096));
        // Kafka's admin path: the client sends the salted password, the controller derives
        // the same credential from it.
        let sp = salted_password(m, b"pencil", &salt(), 4096).unwrap();
        assert_eq!(sp.expose(), hex(salted).as_slice(), "{m} salted password");
        let from_salted =
            ScramCredential::from_salted_password(m, sp.expose(), &salt(), 4096).unwrap();
        assert_eq!(from_salted, c);
        // Another password or salt gives another credential.
        assert_ne!(
            ScramCredential::from_password(m, b"pencil2", &salt(), 4096).unwrap(),
            c
        );
        assert_ne!(
            ScramCredential::from_password(m, b"pencil", b"salt", 4096).unwrap(),
            c
        );
    }
}

#[test]
fn iteration_bounds() {
    for m in ScramMechanism::ALL {
        for bad in [0, 1, 4095, MAX_ITERATIONS + 1] {
            let e = ScramCredential::from_password(m, b"p", b"s", bad).unwrap_err();
            assert_eq!(
                e,
                SaslError::IterationCount {
                    iterations: bad,
                    min: 4096,
                    max: MAX_ITERATIONS
                }
            );
            assert!(salted_password(m, b"p", b"s", bad).is_err());
            assert!(ScramCredential::from_salted_password(m, &[0; 32], b"s", bad).is_err());
        }
        assert_eq!(m.min_iterations(), 4096);
        assert_eq!(m.max_alter_iterations(), 16384);
    }
}

#[test]
fn mechanism_ids_and_names() {
    assert_eq!(ScramMechanism::Sha256.name(), "SCRAM-SHA-256");
    assert_eq!(ScramMechanism::Sha512.to_string(), "SCRAM-SHA-512");
    assert_eq!(ScramMechanism::Sha256.type_id(), 1);
    assert_eq!(ScramMechanism::Sha512.type_id(), 2);
    for m in ScramMechanism::ALL {
        assert_eq!(ScramMechanism::from_type_id(m.type_id()), Some(m));
        assert_eq!(ScramMechanism::try_from(m.mechanism()), Ok(m));
        assert_eq!(m.hash(b"").len(), m.hash_len());
    }
    assert_eq!(ScramMechanism::from_type_id(0), None);
    assert_eq!(ScramMechanism::from_type_id(3), None);
    assert!(ScramMechanism::try_from(crate::sasl::Mechanism::Plain).is_err());
}

#[test]
fn credential_debug_hides_keys() {
    let c =
        ScramCredential::from_password(ScramMechanism::Sha256, b"pencil", &salt(), 4096).unwrap();
    let d = format!("{c:?}");
    assert!(
        d.contains("iterations: 4096") && d.contains("[hidden]"),
        "{d}"
    );
    for k in [&c.stored_key, &c.server_key, &c.salt] {
        let k = format!("{:?}", &k[..3]);
        assert!(!d.contains(k.trim_end_matches(']')), "{d}");
    }
}

#[test]
fn saslname_escapes() {
    assert_eq!(escape_saslname("a=b,c"), "a=3Db=2Cc");
    assert_eq!(escape_saslname("plain"), "plain");
    for name in ["a=b,c", "==,,", "=2C", "é,=", ""] {
        assert_eq!(
            unescape_saslname(&escape_saslname(name)).as_deref(),
            Some(name)
        );
    }
    assert_eq!(unescape_saslname("a=3Db=2Cc").as_deref(), Some("a=b,c"));
    assert_eq!(unescape_saslname("=3D=2C").as_deref(), Some("=,"));
    for bad in ["=", "a=", "=2", "=2c", "=3d", "=41", "a=b", "=3", "==3D"] {
        assert_eq!(unescape_saslname(bad), None, "{bad}");
    }
}

#[test]
fn rfc7677_and_sha512_through_both_machines() {
    let creds = store();
    for (m, client_final, server_final) in [
        (
            ScramMechanism::Sha256,
            RFC7677_CLIENT_FINAL,
            RFC7677_SERVER_FINAL,
        ),
        (
            ScramMechanism::Sha512,
            SHA512_CLIENT_FINAL,
            SHA512_SERVER_FINAL,
        ),
    ] {
        let (c, first) = client(m);
        assert_eq!(first, RFC7677_CLIENT_FIRST);
        let (s, server_first) = server_after_first(m, &first, &creds).unwrap();
        assert_eq!(server_first, RFC7677_SERVER_FIRST, "{m}");
        let (c, last) = client_send(c, &server_first).unwrap();
        assert_eq!(last, client_final, "{m}");
        let (response, user) = client_final_step(s, &last).unwrap();
        assert_eq!(
            (response.as_str(), user.as_str()),
            (server_final, "user"),
            "{m}"
        );
        assert!(matches!(
            c.step(response.as_bytes()),
            Ok(ScramClientStep::Done)
        ));
    }
}

#[test]
fn server_refuses_a_wrong_proof() {
    let creds = store();
    let m = ScramMechanism::Sha256;
    let p = RFC7677_CLIENT_FINAL.rfind("p=").unwrap() + 2;
    let mut proof = BASE64.decode(&RFC7677_CLIENT_FINAL[p..]).unwrap();
    for i in [0, 15, 31] {
        proof[i] ^= 1;
        let msg = format!("{}{}", &RFC7677_CLIENT_FINAL[..p], BASE64.encode(&proof));
        proof[i] ^= 1;
        let (s, _) = server_after_first(m, RFC7677_CLIENT_FIRST, &creds).unwrap();
        assert_eq!(
            client_final_step(s, &msg),
            Err(SaslError::AuthenticationFailed)
        );
    }
    // The proof the client makes from another password is wrong too.
    let (c, first) = ScramClient::new(
        m,
        "user",
        Secret::from("pencil!"),
        CLIENT_NONCE.into(),
        MAX_ITERATIONS,
    );
    let (s, sf) = server_after_first(m, &String::from_utf8(first).unwrap(), &creds).unwrap();
    let (_, last) = client_send(c, &sf).unwrap();
    assert_eq!(
        client_final_step(s, &last),
        Err(SaslError::AuthenticationFailed)
    );
    // The SHA-512 proof on a SHA-256 exchange: wrong length.
    let (s, _) = server_after_first(m, RFC7677_CLIENT_FIRST, &creds).unwrap();
    assert!(matches!(
        client_final_step(s, SHA512_CLIENT_FINAL),
        Err(SaslError::Malformed { .. })
    ));
}

#[test]
fn server_client_first_rules() {
    let creds = store();
    let m = ScramMechanism::Sha256;
    let ok = |first: &str| server_after_first(m, first, &creds).map(|_| ());
    assert_eq!(ok("n,,n=user,r=abc"), Ok(()));
    // Authorization id: the user itself, escaped or not.
    assert_eq!(ok("n,a=user,n=user,r=abc"), Ok(()));
    assert_eq!(
        ok("n,a=other,n=user,r=abc"),
        Err(SaslError::AuthorizationIdMismatch)
    );
    // Unknown user: refused at once, with the words of a wrong password (as Kafka).
    assert_eq!(
        ok("n,,n=nobody,r=abc"),
        Err(SaslError::AuthenticationFailed)
    );
    assert_eq!(ok("n,,n=User,r=abc"), Err(SaslError::AuthenticationFailed));
    // Channel binding: y accepted (we offer no -PLUS mechanism), p= refused.
    assert_eq!(ok("y,,n=user,r=abc"), Ok(()));
    assert_eq!(
        ok("p=tls-unique,,n=user,r=abc"),
        Err(SaslError::ChannelBindingUnsupported)
    );
    // Extensions: Kafka's tokenauth refused, others ignored; m= refused (RFC 5802).
    assert_eq!(
        ok("n,,n=user,r=abc,tokenauth=true"),
        Err(SaslError::DelegationTokenUnsupported)
    );
    assert_eq!(
        ok("n,,n=user,r=abc,tokenauth=TRUE"),
        Err(SaslError::DelegationTokenUnsupported)
    );
    assert_eq!(ok("n,,n=user,r=abc,tokenauth=false"), Ok(()));
    assert_eq!(ok("n,,n=user,r=abc,foo=bar,x=y"), Ok(()));
    assert_eq!(
        ok("n,,m=ext,n=user,r=abc"),
        Err(SaslError::MandatoryExtension)
    );
    // Syntax.
    for bad in [
        "",
        "n",
        "n,",
        "n,,",
        "x,,n=user,r=abc",
        "n,b=user,n=user,r=abc",
        "n,a=,n=user,r=abc",
        "n,,n=,r=abc",
        "n,,r=abc,n=user",
        "n,,n=user",
        "n,,n=user,r=",
        "n,,n=user,r=a b",
        "n,,n=user,r=abc,",
        "n,,n=user,r=abc,=x",
        "n,,n=user,r=abc,k=",
        "n,,n=user,r=abc,k1=v",
        "n,,n=us=er,r=abc",
        "n,,n=us=2cer,r=abc",
        "n,,n=user,r=ab\u{e9}",
        "n,,n=u\0,r=abc",
        "n,,n=user,r=abc,k",
    ] {
        assert!(
            matches!(ok(bad), Err(SaslError::Malformed { .. })),
            "{bad:?}: {:?}",
            ok(bad)
        );
    }
    assert!(matches!(
        ScramServer::new(m, None).step(b"n,,n=user,r=\xff", &|m, u| creds.scram_credential(m, u)),
        Err(SaslError::Malformed { .. })
    ));
    // Escaped names are looked up unescaped.
    let mut odd = StaticCredentials::new();
    let cred = ScramCredential::from_password(m, b"pw", b"salt", 4096).unwrap();
    odd.add_scram(m, "a=b,c", cred);
    assert!(server_after_first(m, "n,,n=a=3Db=2Cc,r=abc", &odd).is_ok());
    assert!(server_after_first(m, "n,a=a=3Db=2Cc,n=a=3Db=2Cc,r=abc", &odd).is_ok());
    // A stored credential with too few iterations is not used.
    let mut weak = StaticCredentials::new();
    let mut c = ScramCredential::from_password(m, b"pw", b"salt", 4096).unwrap();
    c.iterations = 1000;
    weak.add_scram(m, "user", c);
    assert!(matches!(
        server_after_first(m, "n,,n=user,r=abc", &weak),
        Err(SaslError::IterationCount {
            iterations: 1000,
            ..
        })
    ));
}

/// The server asks its lookup once, at client-first, for its own mechanism and the unescaped
/// user name; the answer is what it checks the proof against.
#[test]
fn server_asks_lookup_for_its_mechanism_and_the_unescaped_name() {
    let creds = store();
    for m in ScramMechanism::ALL {
        let asked = std::cell::RefCell::new(Vec::new());
        let lookup = |mech: ScramMechanism, user: &str| {
            asked.borrow_mut().push((mech, user.to_owned()));
            creds.scram_credential(mech, "user")
        };
        let first = format!("n,,n=a=3Db=2Cc,r={CLIENT_NONCE}");
        let s = ScramServer::new(m, Some(SERVER_NONCE.into()));
        let Ok(ScramServerStep::Challenge(_, challenge)) = s.step(first.as_bytes(), &lookup) else {
            panic!("{m}: no challenge");
        };
        assert_eq!(*asked.borrow(), [(m, "a=b,c".to_owned())]);
        // The salt and iteration count sent are those of the credential the lookup gave.
        let cred = creds.scram_credential(m, "user").unwrap();
        let expected = format!(
            "r={CLIENT_NONCE}{SERVER_NONCE},s={},i={}",
            BASE64.encode(&cred.salt),
            cred.iterations
        );
        assert_eq!(String::from_utf8(challenge).unwrap(), expected);
    }
}

#[test]
fn server_client_final_rules() {
    let creds = store();
    let m = ScramMechanism::Sha256;
    let after = |first: &str| server_after_first(m, first, &creds).unwrap().0;
    let full_nonce = format!("{CLIENT_NONCE}{SERVER_NONCE}");
    let proof = &RFC7677_CLIENT_FINAL[RFC7677_CLIENT_FINAL.rfind("p=").unwrap()..];
    // The nonce must be the combined one, exactly.
    for nonce in [
        CLIENT_NONCE.to_owned(),
        format!("{full_nonce}x"),
        full_nonce[1..].to_owned(),
    ] {
        let msg = format!("c=biws,r={nonce},{proof}");
        assert_eq!(
            client_final_step(after(RFC7677_CLIENT_FIRST), &msg),
            Err(SaslError::NonceMismatch)
        );
    }
    // c= must repeat the gs2 header.
    for (first, c) in [
        (RFC7677_CLIENT_FIRST, "eSws"),               // y,, after n,,
        ("y,,n=user,r=rOprNGfwEbeRWgbNEkqO", "biws"), // n,, after y,,
        ("n,a=user,n=user,r=rOprNGfwEbeRWgbNEkqO", "biws"),
        (RFC7677_CLIENT_FIRST, ""),
    ] {
        let msg = format!("c={c},r={full_nonce},{proof}");
        assert_eq!(
            client_final_step(after(first), &msg),
            Err(SaslError::ChannelBindingMismatch),
            "{first} {c}"
        );
    }
    // With the matching c=, the proof is checked (and fails: it was made for n,,).
    for (first, c) in [
        ("y,,n=user,r=rOprNGfwEbeRWgbNEkqO", "eSws"),
        ("n,a=user,n=user,r=rOprNGfwEbeRWgbNEkqO", "bixhPXVzZXIs"),
    ] {
        let msg = format!("c={c},r={full_nonce},{proof}");
        assert_eq!(
            client_final_step(after(first), &msg),
            Err(SaslError::AuthenticationFailed)
        );
    }
    // Extensions before p= are allowed (and enter the AuthMessage, so this proof is wrong).
    let msg = format!("c=biws,r={full_nonce},x=1,{proof}");
    assert_eq!(
        client_final_step(after(RFC7677_CLIENT_FIRST), &msg),
        Err(SaslError::AuthenticationFailed)
    );
    for bad in [
        format!("r={full_nonce},c=biws,{proof}"),
        format!("c=biws,r={full_nonce}"),
        format!("c=biws,r={full_nonce},{proof},x=1"),
        format!("c=biw,r={full_nonce},{proof}"),
        format!("c=biws,r={full_nonce},p=dHzb"),
        format!("c=biws,r={full_nonce},p="),
        format!("c=biws,r={full_nonce},p=!!!!"),
        format!("c=biws,{proof}"),
        format!("c=biws,r=,{proof}"),
        format!("c=biws,r={full_nonce},=,{proof}"),
    ] {
        let r = client_final_step(after(RFC7677_CLIENT_FIRST), &bad);
        assert!(
            matches!(r, Err(SaslError::Malformed { .. })),
            "{bad}: {r:?}"
        );
    }
}

#[test]
fn client_server_first_rules() {
    let m = ScramMechanism::Sha256;
    let send = |sf: &str| client_send(client(m).0, sf).map(|_| ());
    let rest = ",s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
    assert_eq!(send(RFC7677_SERVER_FIRST), Ok(()));
    assert_eq!(
        send(&format!("r={CLIENT_NONCE}{SERVER_NONCE}{rest},ext=1")),
        Ok(())
    );
    // The server's nonce must extend ours.
    assert_eq!(
        send(&format!("r={CLIENT_NONCE}{rest}")),
        Err(SaslError::NonceMismatch)
    );
    assert_eq!(
        send(&format!("r=xOprNGfwEbeRWgbNEkqOabc{rest}")),
        Err(SaslError::NonceMismatch)
    );
    assert_eq!(
        send(&format!("r=rOprNGfwEbeRWgbNEkq{rest}")),
        Err(SaslError::NonceMismatch)
    );
    // Iteration counts: Kafka's minimum, and our ceiling against a hostile server.
    let with_i = |i: &str| format!("r={CLIENT_NONCE}x,s=W22ZaJ0SNY7soEsUEjb6gQ==,i={i}");
    for (i, n) in [
        ("4095", 4095),
        ("0", 0),
        ("1000001", 1_000_001),
        ("4294967295", u32::MAX),
    ] {
        assert_eq!(
            send(&with_i(i)),
            Err(SaslError::IterationCount {
                iterations: n,
                min: 4096,
                max: MAX_ITERATIONS
            })
        );
    }
    let (c, _) = ScramClient::new(m, "user", Secret::from("pencil"), CLIENT_NONCE.into(), 5000);
    assert!(matches!(
        c.step(with_i("5001").as_bytes()),
        Err(SaslError::IterationCount { max: 5000, .. })
    ));
    for bad in [
        with_i("4294967296"),
        with_i("-4096"),
        with_i("+4096"),
        with_i(""),
        with_i("4096 "),
        format!("m=x,r={CLIENT_NONCE}x{rest}"),
        format!("r={CLIENT_NONCE}x,s=W22ZaJ0SNY7soEsUEjb6gQ=,i=4096"),
        format!("r={CLIENT_NONCE}x,i=4096,s=W22ZaJ0SNY7soEsUEjb6gQ=="),
        format!("r={CLIENT_NONCE}x,s=W22ZaJ0SNY7soEsUEjb6gQ=="),
        format!("r={CLIENT_NONCE}x{rest},"),
        "e=other-error".to_owned(),
    ] {
        let r = send(&bad);
        assert!(
            matches!(
                r,
                Err(SaslError::Malformed { .. } | SaslError::MandatoryExtension)
            ),
            "{bad}: {r:?}"
        );
    }
}

#[test]
fn client_server_final_rules() {
    let (c, _) = client(ScramMechanism::Sha256);
    let (c, _) = client_send(c, RFC7677_SERVER_FIRST).unwrap();
    let fin = |m: &str| c.clone().step(m.as_bytes()).map(|_| ());
    assert_eq!(fin(RFC7677_SERVER_FINAL), Ok(()));
    assert_eq!(fin(&format!("{RFC7677_SERVER_FINAL},ext=1")), Ok(()));
    // A server that does not know the credential cannot sign.
    assert_eq!(
        fin("v=7rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="),
        Err(SaslError::ServerSignatureMismatch)
    );
    assert_eq!(
        fin(SHA512_SERVER_FINAL),
        Err(SaslError::ServerSignatureMismatch)
    );
    assert_eq!(fin("v="), Err(SaslError::ServerSignatureMismatch));
    // e= carries the server's reason, cleaned.
    assert_eq!(
        fin("e=invalid-proof"),
        Err(SaslError::ServerError("invalid-proof".into()))
    );
    assert_eq!(
        fin("e=unknown-user\x7f\x01"),
        Err(SaslError::ServerError("unknown-user".into()))
    );
    for bad in [
        "",
        "v",
        "x=abc",
        "e=",
        "e=a,b",
        "e=a=b",
        "v=abc",
        "v=6rri,",
        "V=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=",
    ] {
        assert!(
            matches!(fin(bad), Err(SaslError::Malformed { .. })),
            "{bad:?}: {:?}",
            fin(bad)
        );
    }
}

/// Every proper prefix of each message of a valid exchange is refused cleanly (and the
/// client-first prefixes that are still well formed lose at the nonce check).
#[test]
fn truncations_are_clean_errors() {
    let creds = store();
    let m = ScramMechanism::Sha256;
    let well_formed_from = "n,,n=user,r=".len() + 1;
    for n in 0..RFC7677_CLIENT_FIRST.len() {
        let r = server_after_first(m, &RFC7677_CLIENT_FIRST[..n], &creds);
        match r {
            Ok((s, _)) => {
                assert!(n >= well_formed_from, "prefix {n} accepted");
                assert_eq!(
                    client_final_step(s, RFC7677_CLIENT_FINAL),
                    Err(SaslError::NonceMismatch)
                );
            }
            Err(_) => assert!(n < well_formed_from, "prefix {n} refused"),
        }
    }
    for n in 0..RFC7677_CLIENT_FINAL.len() {
        let (s, _) = server_after_first(m, RFC7677_CLIENT_FIRST, &creds).unwrap();
        assert!(
            client_final_step(s, &RFC7677_CLIENT_FINAL[..n]).is_err(),
            "client-final prefix {n}"
        );
    }
    for n in 0..RFC7677_SERVER_FIRST.len() {
        assert!(
            client_send(client(m).0, &RFC7677_SERVER_FIRST[..n]).is_err(),
            "server-first prefix {n}"
        );
    }
    let (c, _) = client_send(client(m).0, RFC7677_SERVER_FIRST).unwrap();
    for n in 0..RFC7677_SERVER_FINAL.len() {
        assert!(
            c.clone()
                .step(&RFC7677_SERVER_FINAL.as_bytes()[..n])
                .is_err(),
            "server-final prefix {n}"
        );
    }
}
