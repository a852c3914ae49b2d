//! TLS listeners (`SSL://`), with certificates the test makes (rcgen): our producer and
//! consumer, kcat, kafka-python and confluent-kafka over TLS and mutual TLS; an untrusted or
//! misnamed broker certificate refused by each client; `ssl.client.auth=required` refusing
//! clients without a certificate; certificates reloaded when the keystore file changes; and
//! hostile handshakes (garbage, a stalled client) costing the broker one connection each.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/in_process.rs"]
#[allow(dead_code)]
mod in_process;
#[path = "common/peers.rs"]
#[allow(dead_code)]
mod peers;
#[path = "common/round_trip.rs"]
mod round_trip;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use in_process::InProcessBroker;
use kafka_peers::certs::{Dn, Identity, TestCa};

/// A broker whose only listener is `SSL://127.0.0.1`, with `extra` settings.
fn tls_broker(server: &Identity, extra: &[(&str, &str)]) -> InProcessBroker {
    let keystore = server.keystore.to_str().unwrap().to_owned();
    let mut settings: Vec<(&str, &str)> = vec![
        ("listeners", "SSL://127.0.0.1:9092"),
        ("ssl.keystore.type", "PEM"),
        ("ssl.keystore.location", &keystore),
    ];
    settings.extend_from_slice(extra);
    InProcessBroker::start(&settings)
}

fn ssl_settings(ca: &Path) -> Vec<(String, String)> {
    vec![
        ("security.protocol".into(), "SSL".into()),
        ("ssl.truststore.type".into(), "PEM".into()),
        ("ssl.truststore.location".into(), ca.display().to_string()),
    ]
}

fn with_identity(mut settings: Vec<(String, String)>, id: &Identity) -> Vec<(String, String)> {
    settings.push(("ssl.keystore.type".into(), "PEM".into()));
    settings.push((
        "ssl.keystore.location".into(),
        id.keystore.display().to_string(),
    ));
    settings
}

async fn round_trip(
    bootstrap: &str,
    settings: &[(String, String)],
    topic: &str,
    n: usize,
) -> Result<Vec<String>, String> {
    round_trip::round_trip_with("tls", bootstrap, settings, topic, n).await
}

fn expected(n: usize) -> Vec<String> {
    round_trip::values("tls", n)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_clients_over_tls_and_refusals() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new(dir.path(), "good");
    let server = ca.server("broker", &["localhost", "127.0.0.1"]);
    let broker = tls_broker(&server, &[]);
    let bootstrap = broker.bootstrap();

    // A round trip over TLS, by address and by name (both are in the certificate).
    let settings = ssl_settings(&ca.ca_file());
    let got = round_trip(&bootstrap, &settings, "tls-ours", 200)
        .await
        .unwrap();
    assert_eq!(
        got,
        expected(200),
        "our consumer reads over TLS what our producer wrote"
    );
    let by_name = format!("localhost:{}", broker.addr.port());
    let got = round_trip(&by_name, &settings, "tls-ours-name", 20)
        .await
        .unwrap();
    assert_eq!(got, expected(20));

    // Plaintext against a TLS listener does not get through (and does not hang the broker).
    let plain = [("security.protocol".to_owned(), "PLAINTEXT".to_owned())];
    let started = Instant::now();
    let err = round_trip(&bootstrap, &plain, "tls-plain", 1)
        .await
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(15), "{err}");

    // An untrusted broker certificate fails fast with a TLS error, not a reconnect loop.
    let other = TestCa::new(dir.path(), "other");
    let started = Instant::now();
    let err = round_trip(
        &bootstrap,
        &ssl_settings(&other.ca_file()),
        "tls-untrusted",
        1,
    )
    .await
    .unwrap_err();
    assert!(
        err.contains("TLS") && err.to_lowercase().contains("certificate"),
        "the error says why: {err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "failed fast: {:?}",
        started.elapsed()
    );

    // The broker still serves after the failures.
    let got = round_trip(&bootstrap, &settings, "tls-after", 5)
        .await
        .unwrap();
    assert_eq!(got, expected(5));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostname_verification() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new(dir.path(), "ca");
    // A certificate that names another host only.
    let server = ca.server("broker", &["broker.invalid"]);
    let broker = tls_broker(&server, &[]);
    let settings = ssl_settings(&ca.ca_file());
    let err = round_trip(&broker.bootstrap(), &settings, "tls-misnamed", 1)
        .await
        .unwrap_err();
    assert!(err.contains("TLS") && err.contains("certificate"), "{err}");
    // `ssl.endpoint.identification.algorithm=` (empty) turns the name check off, as in Kafka;
    // the chain is still checked.
    let mut off = settings.clone();
    off.push((
        "ssl.endpoint.identification.algorithm".into(),
        String::new(),
    ));
    let got = round_trip(&broker.bootstrap(), &off, "tls-misnamed", 3)
        .await
        .unwrap();
    assert_eq!(got, expected(3));
    let other = TestCa::new(dir.path(), "other");
    let mut off_untrusted = ssl_settings(&other.ca_file());
    off_untrusted.push((
        "ssl.endpoint.identification.algorithm".into(),
        String::new(),
    ));
    assert!(
        round_trip(&broker.bootstrap(), &off_untrusted, "tls-misnamed", 1)
            .await
            .is_err()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_certificates_required() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new(dir.path(), "ca");
    let server = ca.server("broker", &["localhost", "127.0.0.1"]);
    let ca_file = ca.ca_file().display().to_string();
    let broker = tls_broker(
        &server,
        &[
            ("ssl.client.auth", "required"),
            ("ssl.truststore.type", "PEM"),
            ("ssl.truststore.location", &ca_file),
        ],
    );
    let settings = ssl_settings(&ca.ca_file());
    let err = round_trip(&broker.bootstrap(), &settings, "mtls", 1)
        .await
        .unwrap_err();
    assert!(
        err.contains("TLS") && err.contains("CertificateRequired"),
        "no certificate, no entry, and the client says why: {err}"
    );
    let alice = ca.client(
        "alice",
        &[(Dn::OrganizationName, "Example"), (Dn::CommonName, "alice")],
    );
    let got = round_trip(
        &broker.bootstrap(),
        &with_identity(settings.clone(), &alice),
        "mtls",
        10,
    )
    .await
    .unwrap();
    assert_eq!(got, expected(10));
    // A certificate from another CA is refused too.
    let other = TestCa::new(dir.path(), "other");
    let mallory = other.client("mallory", &[(Dn::CommonName, "mallory")]);
    assert!(
        round_trip(
            &broker.bootstrap(),
            &with_identity(settings, &mallory),
            "mtls",
            1
        )
        .await
        .is_err()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn certificates_reloaded_when_the_keystore_changes() {
    let dir = tempfile::tempdir().unwrap();
    let first = TestCa::new(dir.path(), "first");
    let server = first.server("broker", &["localhost", "127.0.0.1"]);
    let live = dir.path().join("live-keystore.pem");
    std::fs::copy(&server.keystore, &live).unwrap();
    let live_id = Identity {
        keystore: live.clone(),
        ..server.clone()
    };
    let broker = tls_broker(&live_id, &[]);
    let got = round_trip(
        &broker.bootstrap(),
        &ssl_settings(&first.ca_file()),
        "reload-1",
        2,
    )
    .await
    .unwrap();
    assert_eq!(got, expected(2));
    // A new certificate from another CA replaces the file (written aside, then renamed, as
    // certificate tools do).
    let second = TestCa::new(dir.path(), "second");
    let renewed = second.server("broker2", &["localhost", "127.0.0.1"]);
    std::thread::sleep(Duration::from_millis(1100));
    let tmp = dir.path().join("live-keystore.pem.tmp");
    std::fs::copy(&renewed.keystore, &tmp).unwrap();
    std::fs::rename(&tmp, &live).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    for attempt in 0.. {
        let topic = format!("reload-2-{attempt}");
        match round_trip(
            &broker.bootstrap(),
            &ssl_settings(&second.ca_file()),
            &topic,
            2,
        )
        .await
        {
            Ok(got) => {
                assert_eq!(got, expected(2));
                break;
            }
            Err(e) if Instant::now() < deadline => {
                eprintln!("not yet reloaded: {e}");
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
            Err(e) => panic!("the new certificate was not picked up: {e}"),
        }
    }
    // Clients trusting only the old CA are now refused.
    assert!(
        round_trip(
            &broker.bootstrap(),
            &ssl_settings(&first.ca_file()),
            "reload-3",
            1
        )
        .await
        .is_err()
    );
}

#[test]
fn hostile_handshakes_cost_one_connection() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new(dir.path(), "ca");
    let server = ca.server("broker", &["localhost", "127.0.0.1"]);
    // A stalled handshake is closed after connections.max.idle.ms (here 1 s; 10 s at most).
    let broker = tls_broker(&server, &[("connections.max.idle.ms", "1000")]);
    // Garbage instead of a ClientHello: the broker answers with an alert or closes.
    let mut s = TcpStream::connect(broker.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(&[0x16, 0x03, 0x01, 0xff, 0xff, 1, 2, 3, 4, 5, 6, 7, 8])
        .unwrap();
    s.write_all(&vec![0xAB; 70_000]).unwrap_or(());
    let mut buf = [0u8; 1024];
    let mut total = 0;
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => total += n,
            // Closed with our garbage unread: the kernel resets the connection.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break,
            Err(e) => panic!("the broker neither answered nor closed: {e}"),
        }
    }
    assert!(total < 1024, "at most an alert came back: {total} bytes");
    // A truncated ClientHello, then silence: closed after the bound.
    let mut s = TcpStream::connect(broker.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(8))).unwrap();
    s.write_all(&[0x16, 0x03, 0x01, 0x00, 0x80, 0x01, 0x00])
        .unwrap();
    let started = Instant::now();
    match s.read(&mut buf) {
        Ok(n) => assert!(n < 1024, "closed, maybe after an alert: {n} bytes"),
        Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "closed: {e}"),
    }
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    // The broker serves well-behaved clients meanwhile.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let got = rt
        .block_on(round_trip(
            &broker.bootstrap(),
            &ssl_settings(&ca.ca_file()),
            "hostile",
            3,
        ))
        .unwrap();
    assert_eq!(got, expected(3));
}

/// The Python peers' script (kcat, kafka-python, confluent-kafka over TLS).
fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/security/tls_peers.py")
}

#[test]
fn python_peers_and_kcat_over_tls() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new(dir.path(), "ca");
    let server = ca.server("broker", &["localhost", "127.0.0.1"]);
    let ca_file = ca.ca_file().display().to_string();
    let broker = tls_broker(
        &server,
        &[
            ("ssl.client.auth", "requested"),
            ("ssl.truststore.type", "PEM"),
            ("ssl.truststore.location", &ca_file),
        ],
    );
    let alice = ca.client("alice", &[(Dn::CommonName, "alice")]);
    let other = TestCa::new(dir.path(), "other");
    let (bootstrap, other_ca) = (broker.bootstrap(), other.ca_file().display().to_string());
    let (cert, key) = (
        alice.cert.display().to_string(),
        alice.key.display().to_string(),
    );
    let script = script().display().to_string();
    let Some(text) = peers::run(
        "python3",
        &[
            &script,
            "--bootstrap",
            &bootstrap,
            "--ca",
            &ca_file,
            "--other-ca",
            &other_ca,
            "--cert",
            &cert,
            "--key",
            &key,
        ],
    ) else {
        return;
    };
    for check in [
        "kcat tls ok",
        "kcat mtls ok",
        "kcat untrusted refused",
        "kafka-python tls ok",
        "kafka-python mtls ok",
        "kafka-python untrusted refused",
        "confluent-kafka tls ok",
        "confluent-kafka mtls ok",
        "confluent-kafka untrusted refused",
    ] {
        assert!(text.contains(check), "missing {check:?}:\n{text}");
    }
}

/// The principal of a TLS client is its certificate's subject mapped with
/// `ssl.principal.mapping.rules` (Kafka's syntax): seen through the authorizer, which lets the
/// super user `User:alice` (from `CN=alice,O=Example`) describe ACLs and refuses `User:bob`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_certificate_names_the_principal() {
    use kafka_protocol::messages::{DescribeAclsRequest, RequestBody, ResponseBody};
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new(dir.path(), "ca");
    let server = ca.server("broker", &["localhost", "127.0.0.1"]);
    let ca_file = ca.ca_file().display().to_string();
    let broker = tls_broker(
        &server,
        &[
            ("ssl.client.auth", "required"),
            ("ssl.truststore.type", "PEM"),
            ("ssl.truststore.location", &ca_file),
            (
                "ssl.principal.mapping.rules",
                "RULE:^CN=(.*?),O=Example$/$1/L,DEFAULT",
            ),
            (
                "authorizer.class.name",
                "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            ),
            ("super.users", "User:alice"),
        ],
    );
    let describe = |id: Identity| {
        let bootstrap = broker.bootstrap();
        let settings = with_identity(ssl_settings(&ca.ca_file()), &id);
        async move {
            let mut keys = kafka_net::SecurityKeys::default();
            for (k, v) in &settings {
                keys.set(k, v).unwrap();
            }
            let cfg = kafka_net::ConnectionConfig {
                security: keys.build().unwrap(),
                ..Default::default()
            };
            let c = kafka_net::Connection::connect(&bootstrap, cfg)
                .await
                .unwrap();
            let body = c
                .request(RequestBody::DescribeAcls(DescribeAclsRequest {
                    resource_type_filter: 1,
                    resource_name_filter: None,
                    pattern_type_filter: 1,
                    principal_filter: None,
                    host_filter: None,
                    operation: 1,
                    permission_type: 1,
                    ..Default::default()
                }))
                .await
                .unwrap();
            let ResponseBody::DescribeAcls(r) = body else {
                panic!()
            };
            r.error_code
        }
    };
    let alice = ca.client(
        "alice",
        &[(Dn::OrganizationName, "Example"), (Dn::CommonName, "ALICE")],
    );
    assert_eq!(
        describe(alice).await,
        0,
        "CN=ALICE,O=Example maps to User:alice, a super user"
    );
    let bob = ca.client(
        "bob",
        &[(Dn::OrganizationName, "Example"), (Dn::CommonName, "bob")],
    );
    assert_eq!(
        describe(bob).await,
        31,
        "User:bob: CLUSTER_AUTHORIZATION_FAILED"
    );
    // A subject the first rule does not match keeps its whole DN (DEFAULT): not a super user.
    let other = ca.client(
        "other",
        &[(Dn::OrganizationName, "Other"), (Dn::CommonName, "alice")],
    );
    assert_eq!(
        describe(other).await,
        31,
        "User:CN=alice,O=Other is not alice"
    );
}
