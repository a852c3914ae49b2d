//! Certificates for TLS tests, made by the test itself with rcgen: a certificate authority,
//! broker certificates for `localhost` and `127.0.0.1`, and client certificates whose subject
//! names a principal. Every file is PEM, as Kafka's `ssl.keystore.type=PEM` and
//! `ssl.truststore.type=PEM`, librdkafka's `ssl.*.location` and Python's ssl module take them.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, Certificate, CertificateParams, DistinguishedName, DnType,
    ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose,
};

/// A certificate authority writing its files into one directory.
pub struct TestCa {
    dir: PathBuf,
    name: String,
    cert: Certificate,
    key: KeyPair,
}

/// One certificate and its key, in files: `key` (PKCS#8), `cert` (the certificate, then the
/// CA's), and `keystore` (key and chain in one file, Kafka's PEM keystore).
#[derive(Debug, Clone)]
pub struct Identity {
    pub key: PathBuf,
    pub cert: PathBuf,
    pub keystore: PathBuf,
    pub key_pem: String,
    pub chain_pem: String,
}

impl TestCa {
    /// A new CA named `name` (its subject `CN=name`), its certificate written to
    /// `DIR/NAME-ca.pem`.
    pub fn new(dir: &Path, name: &str) -> Self {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA parameters");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, format!("{name} test CA"));
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let key = KeyPair::generate().expect("CA key");
        let cert = params.self_signed(&key).expect("CA certificate");
        std::fs::create_dir_all(dir).expect("certificate directory");
        let ca = Self {
            dir: dir.to_path_buf(),
            name: name.to_owned(),
            cert,
            key,
        };
        std::fs::write(ca.ca_file(), ca.cert.pem()).expect("writing the CA certificate");
        ca
    }

    /// The CA certificate's file (a truststore).
    pub fn ca_file(&self) -> PathBuf {
        self.dir.join(format!("{}-ca.pem", self.name))
    }

    /// The CA certificate in PEM.
    pub fn ca_pem(&self) -> String {
        self.cert.pem()
    }

    /// A server certificate for `hosts` (DNS names or IP addresses), files `DIR/FILE.*`.
    pub fn server(&self, file: &str, hosts: &[&str]) -> Identity {
        let hosts: Vec<String> = hosts.iter().map(|h| (*h).to_owned()).collect();
        let mut params = CertificateParams::new(hosts).expect("server parameters");
        params.distinguished_name = DistinguishedName::new();
        params.distinguished_name.push(DnType::CommonName, file);
        // A broker is also a client of other brokers (and of itself on its inter-broker
        // listener): with `ssl.client.auth=required` it shows this certificate there.
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        self.issue(file, params)
    }

    /// A client certificate whose subject is `subject`, given most significant first as a
    /// certificate lists it (e.g. `[(C, "US"), (O, "Example"), (CN, "alice")]`), files
    /// `DIR/FILE.*`.
    pub fn client(&self, file: &str, subject: &[(DnType, &str)]) -> Identity {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("client parameters");
        params.distinguished_name = DistinguishedName::new();
        for (t, v) in subject {
            params.distinguished_name.push(t.clone(), *v);
        }
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        self.issue(file, params)
    }

    fn issue(&self, file: &str, params: CertificateParams) -> Identity {
        let key = KeyPair::generate().expect("key");
        let cert = params
            .signed_by(&key, &self.cert, &self.key)
            .expect("signing a certificate");
        let key_pem = key.serialize_pem();
        let chain_pem = format!("{}{}", cert.pem(), self.cert.pem());
        let id = Identity {
            key: self.dir.join(format!("{file}.key.pem")),
            cert: self.dir.join(format!("{file}.cert.pem")),
            keystore: self.dir.join(format!("{file}.keystore.pem")),
            key_pem,
            chain_pem,
        };
        std::fs::write(&id.key, &id.key_pem).expect("writing a key");
        std::fs::write(&id.cert, &id.chain_pem).expect("writing a certificate");
        std::fs::write(&id.keystore, format!("{}{}", id.key_pem, id.chain_pem))
            .expect("writing a keystore");
        id
    }
}

pub use rcgen::DnType as Dn;
