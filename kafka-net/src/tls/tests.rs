#![allow(clippy::unwrap_used)]

use std::collections::HashMap;

use super::*;

fn settings(pairs: &[(&str, &str)]) -> Result<TlsSettings, TlsConfigError> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    TlsSettings::from_keys(|k| map.get(k).cloned())
}

fn pki(dir: &std::path::Path) -> (String, String, String) {
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["localhost".to_owned()])
        .unwrap()
        .signed_by(&key, &ca_cert, &ca_key)
        .unwrap();
    let ca_file = dir.join("ca.pem");
    std::fs::write(&ca_file, ca_cert.pem()).unwrap();
    let keystore = dir.join("keystore.pem");
    std::fs::write(&keystore, format!("{}{}", key.serialize_pem(), cert.pem())).unwrap();
    (
        ca_file.display().to_string(),
        keystore.display().to_string(),
        key.serialize_pem(),
    )
}

#[test]
fn defaults_are_kafkas() {
    let s = settings(&[]).unwrap();
    assert!(s.verify_hostname && s.tls12 && s.tls13);
    assert_eq!(s.client_auth, ClientAuth::None);
    assert!(s.truststore.is_none() && s.key.is_none());
}

#[test]
fn key_errors_name_the_key() {
    let cases: &[(&[(&str, &str)], &str)] = &[
        (
            &[
                ("ssl.keystore.type", "JKS"),
                ("ssl.keystore.location", "/x.jks"),
            ],
            "ssl.keystore.type",
        ),
        (
            &[
                ("ssl.truststore.type", "PKCS12"),
                ("ssl.truststore.location", "/x.p12"),
            ],
            "ssl.truststore.type",
        ),
        (
            &[
                ("ssl.truststore.location", "/a"),
                ("ssl.truststore.certificates", "PEM"),
            ],
            "ssl.truststore.certificates",
        ),
        (
            &[("ssl.keystore.key", "PEM")],
            "ssl.keystore.certificate.chain",
        ),
        (&[("ssl.client.auth", "sometimes")], "ssl.client.auth"),
        (
            &[("ssl.enabled.protocols", "TLSv1.1")],
            "ssl.enabled.protocols",
        ),
        (
            &[("ssl.enabled.protocols", "TLSv9")],
            "ssl.enabled.protocols",
        ),
        (
            &[("ssl.endpoint.identification.algorithm", "dns")],
            "ssl.endpoint.identification.algorithm",
        ),
    ];
    for (pairs, key) in cases {
        let e = settings(pairs).unwrap_err();
        assert_eq!(e.key, *key, "{pairs:?}: {e}");
    }
    // JKS named with nothing to read is Java's default: harmless.
    assert!(settings(&[("ssl.keystore.type", "JKS")]).is_ok());
}

#[test]
fn configurations_build_from_pem_files_and_text() {
    let dir = tempfile_dir();
    let (ca, keystore, _) = pki(&dir);
    let client = settings(&[("ssl.truststore.location", &ca)]).unwrap();
    assert!(client.client_config().is_ok());
    let server = settings(&[("ssl.keystore.location", &keystore)]).unwrap();
    assert!(server.server_config().is_ok());
    assert_eq!(server.files(), vec![PathBuf::from(&keystore)]);
    let text = std::fs::read_to_string(&keystore).unwrap();
    let (key_pem, chain_pem) = text.split_at(text.find("-----BEGIN CERTIFICATE").unwrap());
    let inline = settings(&[
        ("ssl.keystore.key", key_pem),
        ("ssl.keystore.certificate.chain", chain_pem),
    ])
    .unwrap();
    assert!(inline.server_config().is_ok());
    assert!(inline.files().is_empty());
    // A server without a keystore, and client auth without a truststore, are refused.
    assert_eq!(
        settings(&[]).unwrap().server_config().unwrap_err().key,
        "ssl.keystore.location"
    );
    let e = settings(&[
        ("ssl.keystore.location", &keystore),
        ("ssl.client.auth", "required"),
    ])
    .unwrap()
    .server_config()
    .unwrap_err();
    assert_eq!(e.key, "ssl.truststore.location");
    // An encrypted key gets its own explanation.
    let enc = dir.join("enc.pem");
    std::fs::write(
        &enc,
        format!(
            "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIBvTBXBgkqhkiG9w0BBQ0wSjApBgkqhkiG9w0BBQwwHAQI\n-----END ENCRYPTED PRIVATE KEY-----\n{chain_pem}"
        ),
    )
    .unwrap();
    let e = settings(&[("ssl.keystore.location", enc.to_str().unwrap())])
        .unwrap()
        .server_config()
        .unwrap_err();
    assert!(e.message.contains("encrypted"), "{e}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn cipher_suites_by_iana_name() {
    let dir = tempfile_dir();
    let (ca, _, _) = pki(&dir);
    let ok = settings(&[
        ("ssl.truststore.location", &ca),
        (
            "ssl.cipher.suites",
            "TLS_AES_128_GCM_SHA256, TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        ),
    ])
    .unwrap();
    assert!(ok.client_config().is_ok());
    let bad = settings(&[
        ("ssl.truststore.location", &ca),
        ("ssl.cipher.suites", "TLS_RSA_WITH_RC4_128_MD5"),
    ])
    .unwrap();
    let e = bad.client_config().unwrap_err();
    assert_eq!(e.key, "ssl.cipher.suites");
    assert!(
        e.message.contains("TLS_AES_256_GCM_SHA384"),
        "lists what is supported: {e}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn server_names_from_addresses() {
    assert!(matches!(
        server_name("localhost:9092").unwrap(),
        ServerName::DnsName(_)
    ));
    assert!(matches!(
        server_name("127.0.0.1:9092").unwrap(),
        ServerName::IpAddress(_)
    ));
    assert!(matches!(
        server_name("[::1]:9092").unwrap(),
        ServerName::IpAddress(_)
    ));
    assert!(server_name("bad name:1").is_err());
}

#[test]
fn debug_hides_inline_keys() {
    let s = settings(&[
        (
            "ssl.keystore.key",
            "-----BEGIN PRIVATE KEY-----\nSECRETSTUFF\n-----END PRIVATE KEY-----",
        ),
        ("ssl.keystore.certificate.chain", "chain"),
    ])
    .unwrap();
    assert!(!format!("{s:?}").contains("SECRETSTUFF"));
}

fn tempfile_dir() -> PathBuf {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!(
        "kafka-net-tls-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
