//! The exchange API: PLAIN rules, the "Done or nothing" rule, error codes, hostile input.

use super::scram::tests::{
    CLIENT_NONCE, RFC7677_CLIENT_FINAL, RFC7677_CLIENT_FIRST, RFC7677_SERVER_FINAL,
    RFC7677_SERVER_FIRST, SERVER_NONCE, SHA512_CLIENT_FINAL, store,
};
use super::*;

fn plain(msg: &[u8], creds: &StaticCredentials) -> Result<ServerStep, SaslError> {
    ServerExchange::new(Mechanism::Plain).step(msg, creds)
}

fn done(user: &str) -> Result<ServerStep, SaslError> {
    Ok(ServerStep::Done {
        response: Vec::new(),
        authorization_id: user.into(),
    })
}

fn malformed(r: &Result<ServerStep, SaslError>) -> bool {
    matches!(r, Err(SaslError::Malformed { .. }))
}

#[test]
fn mechanism_names() {
    for m in Mechanism::ALL {
        assert_eq!(Mechanism::from_name(m.name()), Ok(m));
        assert_eq!(m.to_string(), m.name());
    }
    assert_eq!(Mechanism::Plain.name(), "PLAIN");
    assert_eq!(Mechanism::ScramSha256.name(), "SCRAM-SHA-256");
    assert_eq!(Mechanism::ScramSha512.name(), "SCRAM-SHA-512");
    assert_eq!(Mechanism::Plain.scram(), None);
    assert_eq!(Mechanism::ScramSha512.scram(), Some(ScramMechanism::Sha512));
    for other in [
        "plain",
        "oauthbearer",
        "GSSAPI",
        "SCRAM-SHA-1",
        "",
        "PLAIN ",
    ] {
        let e = Mechanism::from_name(other).unwrap_err();
        assert_eq!(e.kafka_error_code(), UNSUPPORTED_SASL_MECHANISM);
    }
    // A hostile name is shown short and printable.
    let e = Mechanism::from_name(&format!("X\n\u{7}{}", "Y".repeat(500))).unwrap_err();
    assert_eq!(
        e,
        SaslError::UnsupportedMechanism(format!("X{}", "Y".repeat(63)))
    );
}

#[test]
fn error_codes() {
    assert_eq!(SaslError::AuthenticationFailed.kafka_error_code(), 58);
    assert_eq!(SaslError::AuthorizationIdMismatch.kafka_error_code(), 58);
    assert_eq!(SaslError::DelegationTokenUnsupported.kafka_error_code(), 58);
    assert_eq!(SaslError::NonceMismatch.kafka_error_code(), 58);
    assert_eq!(
        SaslError::Malformed {
            message: "m",
            reason: "r"
        }
        .kafka_error_code(),
        58
    );
    assert_eq!(SaslError::ExchangeFinished.kafka_error_code(), 34);
    assert_eq!(SaslError::NotStarted.kafka_error_code(), 34);
    assert_eq!(
        SaslError::UnsupportedMechanism("X".into()).kafka_error_code(),
        33
    );
    assert_eq!(SaslError::Internal("x").kafka_error_code(), -1);
    assert_eq!(
        SaslError::AuthenticationFailed.to_string(),
        "authentication failed: invalid credentials"
    );
}

#[test]
fn plain_server_rules() {
    let creds = store();
    assert_eq!(plain(b"\0user\0pencil", &creds), done("user"));
    assert_eq!(plain(b"user\0user\0pencil", &creds), done("user"));
    assert_eq!(
        plain(b"admin\0user\0pencil", &creds),
        Err(SaslError::AuthorizationIdMismatch)
    );
    // Wrong password, unknown user: the same error (the authzid is not even looked at).
    for msg in [
        &b"\0user\0pencil2"[..],
        b"\0user\0pencl",
        b"\0user\0Pencil",
        b"\0user\0pencil ",
        b"\0nobody\0pencil",
        b"\0User\0pencil",
        b"admin\0user\0wrong",
        b"\0user\0p",
    ] {
        assert_eq!(
            plain(msg, &creds),
            Err(SaslError::AuthenticationFailed),
            "{msg:?}"
        );
    }
    // Kafka refuses an empty user name or password; RFC 4616 allows no NUL inside a field.
    for msg in [
        &b""[..],
        b"user",
        b"\0user",
        b"\0\0pencil",
        b"\0user\0",
        b"user\0pencil",
        b"\0user\0pencil\0",
        b"\0user\0pen\0cil",
        b"\0\0\0",
        b"\0us\xffer\0pencil",
    ] {
        assert!(malformed(&plain(msg, &creds)), "{msg:?}");
    }
    let long = [b"\0user\0".as_slice(), &vec![b'x'; 70_000]].concat();
    assert!(malformed(&plain(&long, &creds)));
    // Non-ASCII user names and passwords are compared as UTF-8.
    let mut intl = StaticCredentials::new();
    intl.add_plain("jörg", "pässwörd");
    assert_eq!(plain("\0jörg\0pässwörd".as_bytes(), &intl), done("jörg"));
    assert_eq!(
        plain("\0jorg\0pässwörd".as_bytes(), &intl),
        Err(SaslError::AuthenticationFailed)
    );
}

#[test]
fn plain_client() {
    let mut c = ClientExchange::new(Mechanism::Plain, "alice", "alice-secret").unwrap();
    assert_eq!(c.mechanism(), Mechanism::Plain);
    assert_eq!(c.step(b""), Err(SaslError::NotStarted));
    assert_eq!(c.initial(), b"\0alice\0alice-secret");
    assert_eq!(c.initial(), b"\0alice\0alice-secret");
    assert_eq!(c.step(b""), Ok(ClientStep::Done));
    assert_eq!(c.step(b""), Err(SaslError::ExchangeFinished));
    let mut c = ClientExchange::new(Mechanism::Plain, "alice", "alice-secret").unwrap();
    c.initial();
    assert!(matches!(c.step(b"x"), Err(SaslError::Malformed { .. })));
    assert_eq!(c.step(b""), Err(SaslError::ExchangeFinished));
    for (u, p) in [("", "p"), ("u", ""), ("u\0", "p"), ("u", "p\0")] {
        assert!(matches!(
            ClientExchange::new(Mechanism::Plain, u, p),
            Err(SaslError::InvalidClientCredentials(_))
        ));
    }
    for m in [Mechanism::ScramSha256, Mechanism::ScramSha512] {
        assert!(ClientExchange::new(m, "", "p").is_err());
        assert!(ClientExchange::new(m, "a\0", "p").is_err());
    }
    // Our client's message passes our server.
    let mut c = ClientExchange::new(Mechanism::Plain, "user", "pencil").unwrap();
    assert_eq!(plain(&c.initial(), &store()), done("user"));
}

/// Runs a whole exchange between our client and server.
fn run(
    client: &mut ClientExchange,
    server: &mut ServerExchange,
    creds: &StaticCredentials,
) -> Result<String, SaslError> {
    let mut to_server = client.initial();
    loop {
        match server.step(&to_server, creds)? {
            ServerStep::Challenge(c) => match client.step(&c)? {
                ClientStep::Send(m) => to_server = m,
                ClientStep::Done => panic!("client done before the server"),
            },
            ServerStep::Done {
                response,
                authorization_id,
            } => {
                assert_eq!(client.step(&response)?, ClientStep::Done);
                return Ok(authorization_id);
            }
        }
    }
}

#[test]
fn client_and_server_agree_with_random_nonces() {
    let creds = store();
    for m in Mechanism::ALL {
        let mut c = ClientExchange::new(m, "user", "pencil").unwrap();
        let mut s = ServerExchange::new(m);
        assert_eq!(s.mechanism(), m);
        assert_eq!(run(&mut c, &mut s, &creds), Ok("user".into()), "{m}");
        assert_eq!(s.step(b"", &creds), Err(SaslError::ExchangeFinished));
        assert_eq!(c.step(b""), Err(SaslError::ExchangeFinished));
        // Wrong password: the server refuses, and says nothing more.
        let mut c = ClientExchange::new(m, "user", "pencil2").unwrap();
        let mut s = ServerExchange::new(m);
        assert_eq!(
            run(&mut c, &mut s, &creds),
            Err(SaslError::AuthenticationFailed),
            "{m}"
        );
        assert_eq!(s.step(b"", &creds), Err(SaslError::ExchangeFinished));
    }
    // Two exchanges never use the same nonces.
    let a = ClientExchange::new(Mechanism::ScramSha256, "user", "p")
        .unwrap()
        .initial();
    let b = ClientExchange::new(Mechanism::ScramSha256, "user", "p")
        .unwrap()
        .initial();
    assert_ne!(a, b);
    assert_eq!(a.len(), "n,,n=user,r=".len() + 32);
}

/// The pitfall: a server that reaches its last step with a wrong proof must not authenticate,
/// and the exchange cannot be retried or continued afterwards.
#[test]
fn wrong_proof_is_never_done() {
    let creds = store();
    let wrong = RFC7677_CLIENT_FINAL.replace("p=dHzb", "p=dHzc");
    let mut s = ServerExchange::with_nonce(Mechanism::ScramSha256, SERVER_NONCE);
    let first = s.step(RFC7677_CLIENT_FIRST.as_bytes(), &creds);
    assert_eq!(
        first,
        Ok(ServerStep::Challenge(RFC7677_SERVER_FIRST.into()))
    );
    assert_eq!(
        s.step(wrong.as_bytes(), &creds),
        Err(SaslError::AuthenticationFailed)
    );
    // The right proof after a wrong one, or any message: still no.
    for msg in [RFC7677_CLIENT_FINAL, RFC7677_CLIENT_FIRST, ""] {
        assert_eq!(
            s.step(msg.as_bytes(), &creds),
            Err(SaslError::ExchangeFinished)
        );
    }
    // Replays: the right client-final on a fresh exchange has a stale nonce.
    let mut s = ServerExchange::new(Mechanism::ScramSha256);
    assert!(matches!(
        s.step(RFC7677_CLIENT_FIRST.as_bytes(), &creds),
        Ok(ServerStep::Challenge(_))
    ));
    assert_eq!(
        s.step(RFC7677_CLIENT_FINAL.as_bytes(), &creds),
        Err(SaslError::NonceMismatch)
    );
    // A client-final as the first message is malformed, not a shortcut.
    let mut s = ServerExchange::with_nonce(Mechanism::ScramSha256, SERVER_NONCE);
    assert!(matches!(
        s.step(RFC7677_CLIENT_FINAL.as_bytes(), &creds),
        Err(SaslError::Malformed { .. })
    ));
    // A second client-first in place of the client-final is malformed too.
    let mut s = ServerExchange::with_nonce(Mechanism::ScramSha256, SERVER_NONCE);
    assert!(s.step(RFC7677_CLIENT_FIRST.as_bytes(), &creds).is_ok());
    assert!(s.step(RFC7677_CLIENT_FIRST.as_bytes(), &creds).is_err());
    // After Done, nothing more.
    let mut s = ServerExchange::with_nonce(Mechanism::ScramSha256, SERVER_NONCE);
    assert!(s.step(RFC7677_CLIENT_FIRST.as_bytes(), &creds).is_ok());
    assert_eq!(
        s.step(RFC7677_CLIENT_FINAL.as_bytes(), &creds),
        Ok(ServerStep::Done {
            response: RFC7677_SERVER_FINAL.into(),
            authorization_id: "user".into()
        })
    );
    assert_eq!(
        s.step(RFC7677_CLIENT_FINAL.as_bytes(), &creds),
        Err(SaslError::ExchangeFinished)
    );
    // PLAIN: after Done or an error, nothing more.
    let mut s = ServerExchange::new(Mechanism::Plain);
    assert_eq!(s.step(b"\0user\0pencil", &creds), done("user"));
    assert_eq!(
        s.step(b"\0user\0pencil", &creds),
        Err(SaslError::ExchangeFinished)
    );
    let mut s = ServerExchange::new(Mechanism::Plain);
    assert!(s.step(b"\0user\0wrong", &creds).is_err());
    assert_eq!(
        s.step(b"\0user\0pencil", &creds),
        Err(SaslError::ExchangeFinished)
    );
}

#[test]
fn client_exchange_sha512_and_errors_end_it() {
    let mut c =
        ClientExchange::with_nonce(Mechanism::ScramSha512, "user", "pencil", CLIENT_NONCE, 4096)
            .unwrap();
    assert_eq!(c.initial(), RFC7677_CLIENT_FIRST.as_bytes());
    assert_eq!(
        c.step(RFC7677_SERVER_FIRST.as_bytes()),
        Ok(ClientStep::Send(SHA512_CLIENT_FINAL.into()))
    );
    // A server signature for SHA-256 is wrong for SHA-512: the server is not who it claims.
    assert_eq!(
        c.step(RFC7677_SERVER_FINAL.as_bytes()),
        Err(SaslError::ServerSignatureMismatch)
    );
    assert_eq!(
        c.step(RFC7677_SERVER_FINAL.as_bytes()),
        Err(SaslError::ExchangeFinished)
    );
}

#[test]
fn errors_and_debug_never_show_secrets() {
    let creds = store();
    let mut errors = vec![
        plain(b"\0user\0hunter2-secret", &creds).unwrap_err(),
        plain(b"hunter2-secret\0user\0pencil", &creds).unwrap_err(),
        plain(b"\0hunter2-secret\0", &creds).unwrap_err(),
    ];
    let mut s = ServerExchange::with_nonce(Mechanism::ScramSha256, SERVER_NONCE);
    s.step(RFC7677_CLIENT_FIRST.as_bytes(), &creds).unwrap();
    let debug = format!("{s:?}");
    errors.push(
        s.step(b"c=biws,r=x,p=aHVudGVyMi1zZWNyZXQ=", &creds)
            .unwrap_err(),
    );
    errors.push(
        ServerExchange::new(Mechanism::ScramSha256)
            .step(b"n,,n=hunter2-secret,r=a", &creds)
            .unwrap_err(),
    );
    errors.push(
        ServerExchange::new(Mechanism::ScramSha256)
            .step(b"n,,n=hunter2-secret", &creds)
            .unwrap_err(),
    );
    let c = ClientExchange::new(Mechanism::ScramSha256, "user", "hunter2-secret").unwrap();
    let client_debug = format!("{c:?}");
    for text in errors
        .iter()
        .flat_map(|e| [e.to_string(), format!("{e:?}")])
        .chain([debug, client_debug])
    {
        for secret in ["hunter2", "aHVudGVyMi1zZWNyZXQ", "pencil", "dHzb"] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
    }
}

/// A small deterministic generator for the random-input test.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn bytes(&mut self, alphabet: &[u8]) -> Vec<u8> {
        let n = (self.next() % 80) as usize;
        (0..n)
            .map(|_| alphabet[(self.next() % alphabet.len() as u64) as usize])
            .collect()
    }
}

#[test]
fn random_messages_are_refused() {
    let creds = store();
    let mut rng = SplitMix(25);
    let all: Vec<u8> = (0..=255).collect();
    // Bytes the SCRAM grammar is made of, so that many messages get past the first checks.
    let grammar = b"nyrcpsivem=,a0z9+/\0user=2C=3D";
    for i in 0..4000 {
        let msg = rng.bytes(if i % 2 == 0 { &all } else { grammar });
        for m in Mechanism::ALL {
            let mut s = ServerExchange::with_nonce(m, SERVER_NONCE);
            match s.step(&msg, &creds) {
                // Only a well-formed SCRAM client-first gets a challenge; then a random
                // client-final must fail.
                Ok(ServerStep::Challenge(_)) => {
                    let last = rng.bytes(grammar);
                    assert!(s.step(&last, &creds).is_err());
                }
                Ok(ServerStep::Done { .. }) => panic!("{m} authenticated random bytes {msg:?}"),
                Err(_) => {}
            }
            assert_eq!(s.step(&msg, &creds).unwrap_err().kafka_error_code(), 34);
            let mut c =
                ClientExchange::with_nonce(m, "user", "pencil", CLIENT_NONCE, 4096).unwrap();
            c.initial();
            // PLAIN's client takes the empty answer; nothing else random passes.
            if !(m == Mechanism::Plain && msg.is_empty()) {
                assert!(c.step(&msg).is_err(), "{m} client took {msg:?}");
            }
        }
    }
}
