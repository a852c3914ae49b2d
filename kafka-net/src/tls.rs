//! TLS with rustls (the `ring` provider, chosen explicitly) configured from Kafka's `ssl.*`
//! keys, for clients and for the broker.
//!
//! The keys and their meaning are Kafka's:
//! - `ssl.truststore.type` (`PEM`), `ssl.truststore.location` (a PEM file of CA certificates)
//!   or `ssl.truststore.certificates` (the PEM text itself). A client with no truststore
//!   trusts the system's CA certificates, as the Java client trusts the JVM's.
//! - `ssl.keystore.type` (`PEM`), `ssl.keystore.location` (a PEM file holding the private key
//!   and the certificate chain) or `ssl.keystore.key` with `ssl.keystore.certificate.chain`
//!   (the PEM texts). `ssl.key.password` is for encrypted keys, which are refused with a clear
//!   error (rustls reads unencrypted PKCS#8, PKCS#1 and SEC1 keys).
//! - `ssl.enabled.protocols` (`TLSv1.2,TLSv1.3` by default), `ssl.cipher.suites` (IANA names,
//!   `TLS_AES_128_GCM_SHA256`, `TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384`; empty: the defaults).
//! - Clients: `ssl.endpoint.identification.algorithm` (`https`, the default, checks that the
//!   broker's certificate names the host connected to; empty turns the check off).
//! - Brokers: `ssl.client.auth` (`none`, `requested`, `required`).
//!
//! JKS and PKCS#12 stores are refused with an error that says to convert them to PEM.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};

/// A TLS configuration problem, named by the key it comes from.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{key}: {message}")]
pub struct TlsConfigError {
    /// The Kafka key at fault (`ssl.keystore.location`, ...).
    pub key: &'static str,
    pub message: String,
}

fn err(key: &'static str, message: impl Into<String>) -> TlsConfigError {
    TlsConfigError {
        key,
        message: message.into(),
    }
}

/// `ssl.client.auth` on a broker listener.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClientAuth {
    /// No client certificate is asked for (Kafka's default).
    #[default]
    None,
    /// A certificate is asked for; a client without one still connects (as `ANONYMOUS`).
    Requested,
    /// A client without a trusted certificate is refused.
    Required,
}

/// Where PEM text comes from: a file (read when the configuration is built, and again when it
/// changes) or the text itself.
#[derive(Clone, PartialEq, Eq)]
pub enum PemSource {
    File(PathBuf),
    Inline(String),
}

impl fmt::Debug for PemSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // Inline text may hold a private key: never printed.
            Self::File(p) => write!(f, "File({})", p.display()),
            Self::Inline(_) => f.write_str("Inline([hidden])"),
        }
    }
}

impl PemSource {
    fn read(&self, key: &'static str) -> Result<Vec<u8>, TlsConfigError> {
        match self {
            Self::File(p) => {
                std::fs::read(p).map_err(|e| err(key, format!("cannot read {}: {e}", p.display())))
            }
            Self::Inline(s) => Ok(s.as_bytes().to_vec()),
        }
    }

    fn file(&self) -> Option<&Path> {
        match self {
            Self::File(p) => Some(p),
            Self::Inline(_) => None,
        }
    }
}

/// The `ssl.*` settings of one side of a connection, read from Kafka's keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsSettings {
    /// The CA certificates to trust (`ssl.truststore.*`); `None`: the system's (clients) or
    /// none (a broker then cannot verify client certificates).
    pub truststore: Option<PemSource>,
    /// The private key (`ssl.keystore.location` or `ssl.keystore.key`).
    pub key: Option<PemSource>,
    /// The certificate chain (`ssl.keystore.location` or `ssl.keystore.certificate.chain`).
    pub chain: Option<PemSource>,
    /// `ssl.endpoint.identification.algorithm=https` (clients).
    pub verify_hostname: bool,
    /// `ssl.client.auth` (brokers).
    pub client_auth: ClientAuth,
    /// `ssl.enabled.protocols`: TLS 1.2 and/or 1.3.
    pub tls12: bool,
    pub tls13: bool,
    /// `ssl.cipher.suites`; empty: the provider's defaults.
    pub cipher_suites: Vec<String>,
}

impl Default for TlsSettings {
    fn default() -> Self {
        Self {
            truststore: None,
            key: None,
            chain: None,
            verify_hostname: true,
            client_auth: ClientAuth::None,
            tls12: true,
            tls13: true,
            cipher_suites: Vec::new(),
        }
    }
}

/// The `ssl.*` keys [`TlsSettings::from_keys`] reads.
pub const SSL_KEYS: &[&str] = &[
    "ssl.truststore.type",
    "ssl.truststore.location",
    "ssl.truststore.certificates",
    "ssl.truststore.password",
    "ssl.keystore.type",
    "ssl.keystore.location",
    "ssl.keystore.key",
    "ssl.keystore.certificate.chain",
    "ssl.keystore.password",
    "ssl.key.password",
    "ssl.endpoint.identification.algorithm",
    "ssl.client.auth",
    "ssl.enabled.protocols",
    "ssl.protocol",
    "ssl.cipher.suites",
    "ssl.keymanager.algorithm",
    "ssl.trustmanager.algorithm",
    "ssl.secure.random.implementation",
    "ssl.engine.factory.class",
    "ssl.provider",
];

/// Whether a `ssl.*` key holds a secret (its value is never shown).
pub fn is_sensitive(key: &str) -> bool {
    matches!(
        key,
        "ssl.keystore.key"
            | "ssl.keystore.password"
            | "ssl.key.password"
            | "ssl.truststore.password"
    )
}

impl TlsSettings {
    /// Reads the settings from Kafka's keys through `get` (which returns a key's value, or
    /// `None` when it is not set): a client's properties, or a broker listener's keys with
    /// their `listener.name.NAME.` prefixed form first.
    pub fn from_keys(get: impl Fn(&str) -> Option<String>) -> Result<Self, TlsConfigError> {
        let mut s = Self::default();
        let value = |k: &str| {
            get(k)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        for (type_key, location_key) in [
            ("ssl.truststore.type", "ssl.truststore.location"),
            ("ssl.keystore.type", "ssl.keystore.location"),
        ] {
            store_type(
                type_key,
                value(type_key).as_deref(),
                value(location_key).is_some(),
            )?;
        }
        s.truststore = match (
            value("ssl.truststore.location"),
            get("ssl.truststore.certificates").filter(|v| !v.trim().is_empty()),
        ) {
            (Some(_), Some(_)) => {
                return Err(err(
                    "ssl.truststore.certificates",
                    "set either ssl.truststore.location or ssl.truststore.certificates, not both",
                ));
            }
            (Some(path), None) => Some(PemSource::File(path.into())),
            (None, Some(text)) => Some(PemSource::Inline(text)),
            (None, None) => None,
        };
        let inline_key = get("ssl.keystore.key").filter(|v| !v.trim().is_empty());
        let inline_chain = get("ssl.keystore.certificate.chain").filter(|v| !v.trim().is_empty());
        match (value("ssl.keystore.location"), inline_key, inline_chain) {
            (Some(_), Some(_), _) | (Some(_), _, Some(_)) => {
                return Err(err(
                    "ssl.keystore.location",
                    "set either ssl.keystore.location or ssl.keystore.key with \
                     ssl.keystore.certificate.chain, not both",
                ));
            }
            (Some(path), None, None) => {
                let path = PathBuf::from(path);
                s.key = Some(PemSource::File(path.clone()));
                s.chain = Some(PemSource::File(path));
            }
            (None, Some(k), Some(c)) => {
                s.key = Some(PemSource::Inline(k));
                s.chain = Some(PemSource::Inline(c));
            }
            (None, Some(_), None) => {
                return Err(err(
                    "ssl.keystore.certificate.chain",
                    "ssl.keystore.key is set without the certificate chain",
                ));
            }
            (None, None, Some(_)) => {
                return Err(err(
                    "ssl.keystore.key",
                    "ssl.keystore.certificate.chain is set without the private key",
                ));
            }
            (None, None, None) => {}
        }
        if let Some(v) = get("ssl.endpoint.identification.algorithm") {
            s.verify_hostname = match v.trim().to_ascii_lowercase().as_str() {
                "" => false,
                "https" => true,
                other => {
                    return Err(err(
                        "ssl.endpoint.identification.algorithm",
                        format!("unknown algorithm {other:?} (https, or empty to turn it off)"),
                    ));
                }
            };
        }
        if let Some(v) = value("ssl.client.auth") {
            s.client_auth = match v.to_ascii_lowercase().as_str() {
                "none" => ClientAuth::None,
                "requested" => ClientAuth::Requested,
                "required" => ClientAuth::Required,
                other => {
                    return Err(err(
                        "ssl.client.auth",
                        format!("{other:?} is not one of none, requested, required"),
                    ));
                }
            };
        }
        if let Some(v) = value("ssl.enabled.protocols") {
            s.tls12 = false;
            s.tls13 = false;
            for p in v.split(',').map(str::trim).filter(|p| !p.is_empty()) {
                match p {
                    "TLSv1.2" => s.tls12 = true,
                    "TLSv1.3" => s.tls13 = true,
                    "TLSv1" | "TLSv1.1" | "SSLv3" => {
                        tracing::warn!(
                            protocol = p,
                            "ssl.enabled.protocols: {p} is not offered (TLS 1.2 and 1.3 only)"
                        );
                    }
                    other => {
                        return Err(err(
                            "ssl.enabled.protocols",
                            format!("unknown protocol {other:?} (TLSv1.2, TLSv1.3)"),
                        ));
                    }
                }
            }
            if !s.tls12 && !s.tls13 {
                return Err(err(
                    "ssl.enabled.protocols",
                    "names neither TLSv1.2 nor TLSv1.3",
                ));
            }
        }
        if let Some(v) = value("ssl.cipher.suites") {
            s.cipher_suites = v
                .split(',')
                .map(str::trim)
                .filter(|c| !c.is_empty())
                .map(String::from)
                .collect();
        }
        Ok(s)
    }

    /// The files this configuration reads (to reload it when one changes).
    pub fn files(&self) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = [&self.truststore, &self.key, &self.chain]
            .into_iter()
            .flatten()
            .filter_map(|s| s.file().map(Path::to_path_buf))
            .collect();
        files.sort();
        files.dedup();
        files
    }

    /// The newest modification time of [`TlsSettings::files`] (`None` when there are none or
    /// one cannot be read).
    pub fn files_modified(&self) -> Option<SystemTime> {
        let mut newest = None;
        for f in self.files() {
            let t = std::fs::metadata(&f).and_then(|m| m.modified()).ok()?;
            newest = newest.max(Some(t));
        }
        newest
    }

    fn provider(&self) -> Result<Arc<CryptoProvider>, TlsConfigError> {
        let mut provider = rustls::crypto::ring::default_provider();
        if !self.cipher_suites.is_empty() {
            let mut chosen = Vec::new();
            for name in &self.cipher_suites {
                let found = provider
                    .cipher_suites
                    .iter()
                    .find(|s| suite_name(s).as_deref() == Some(name.as_str()));
                match found {
                    Some(s) => chosen.push(*s),
                    None => {
                        let known: Vec<String> = provider
                            .cipher_suites
                            .iter()
                            .filter_map(suite_name)
                            .collect();
                        return Err(err(
                            "ssl.cipher.suites",
                            format!("{name} is not supported (supported: {})", known.join(", ")),
                        ));
                    }
                }
            }
            provider.cipher_suites = chosen;
        }
        Ok(Arc::new(provider))
    }

    fn versions(&self) -> Vec<&'static rustls::SupportedProtocolVersion> {
        let mut v = Vec::new();
        if self.tls13 {
            v.push(&rustls::version::TLS13);
        }
        if self.tls12 {
            v.push(&rustls::version::TLS12);
        }
        v
    }

    fn roots(&self, system_if_none: bool) -> Result<Option<RootCertStore>, TlsConfigError> {
        let key = "ssl.truststore.location";
        let mut roots = RootCertStore::empty();
        match &self.truststore {
            Some(src) => {
                let pem = src.read(key)?;
                let certs = read_certs(key, &pem)?;
                if certs.is_empty() {
                    return Err(err(key, "the truststore holds no certificate"));
                }
                for c in certs {
                    roots
                        .add(c)
                        .map_err(|e| err(key, format!("a CA certificate is not usable: {e}")))?;
                }
            }
            None if system_if_none => {
                let found = system_roots();
                if found.is_empty() {
                    return Err(err(
                        key,
                        "no truststore is configured and no system CA certificates were found",
                    ));
                }
                for c in found {
                    let _ = roots.add(c);
                }
            }
            None => return Ok(None),
        }
        Ok(Some(roots))
    }

    fn identity(
        &self,
    ) -> Result<Option<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)>, TlsConfigError>
    {
        let (Some(key_src), Some(chain_src)) = (&self.key, &self.chain) else {
            return Ok(None);
        };
        let key_name = if key_src.file().is_some() {
            "ssl.keystore.location"
        } else {
            "ssl.keystore.key"
        };
        let chain_name = if chain_src.file().is_some() {
            "ssl.keystore.location"
        } else {
            "ssl.keystore.certificate.chain"
        };
        let chain = read_certs(chain_name, &chain_src.read(chain_name)?)?;
        if chain.is_empty() {
            return Err(err(chain_name, "no certificate found"));
        }
        let key = load_key(key_name, &key_src.read(key_name)?)?;
        Ok(Some((chain, key)))
    }

    /// A client configuration: the truststore (or the system's CAs), the keystore when set
    /// (mutual TLS), hostname verification unless turned off.
    pub fn client_config(&self) -> Result<Arc<rustls::ClientConfig>, TlsConfigError> {
        let provider = self.provider()?;
        let roots = Arc::new(self.roots(true)?.unwrap_or_else(RootCertStore::empty));
        let builder = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
            .with_protocol_versions(&self.versions())
            .map_err(|e| err("ssl.enabled.protocols", e.to_string()))?;
        let webpki = WebPkiServerVerifier::builder_with_provider(roots, Arc::clone(&provider))
            .build()
            .map_err(|e| err("ssl.truststore.location", e.to_string()))?;
        let builder = if self.verify_hostname {
            builder.with_webpki_verifier(webpki)
        } else {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AnyHostname(webpki)))
        };
        let config = match self.identity()? {
            Some((chain, key)) => builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| err("ssl.keystore.location", e.to_string()))?,
            None => builder.with_no_client_auth(),
        };
        Ok(Arc::new(config))
    }

    /// A broker listener's configuration: the keystore is required; client certificates are
    /// asked for as `ssl.client.auth` says and verified against the truststore.
    pub fn server_config(&self) -> Result<Arc<rustls::ServerConfig>, TlsConfigError> {
        let provider = self.provider()?;
        let Some((chain, key)) = self.identity()? else {
            return Err(err(
                "ssl.keystore.location",
                "a TLS listener needs a keystore (ssl.keystore.location, or ssl.keystore.key \
                 with ssl.keystore.certificate.chain)",
            ));
        };
        let builder = rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
            .with_protocol_versions(&self.versions())
            .map_err(|e| err("ssl.enabled.protocols", e.to_string()))?;
        let builder = match self.client_auth {
            ClientAuth::None => builder.with_no_client_auth(),
            auth => {
                let Some(roots) = self.roots(false)? else {
                    return Err(err(
                        "ssl.truststore.location",
                        "ssl.client.auth asks for client certificates but no truststore is set",
                    ));
                };
                let v = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
                let v = if auth == ClientAuth::Requested {
                    v.allow_unauthenticated()
                } else {
                    v
                };
                builder.with_client_cert_verifier(
                    v.build()
                        .map_err(|e| err("ssl.truststore.location", e.to_string()))?,
                )
            }
        };
        let config = builder
            .with_single_cert(chain, key)
            .map_err(|e| err("ssl.keystore.location", e.to_string()))?;
        Ok(Arc::new(config))
    }
}

/// A store type key: PEM only (JKS and PKCS#12 are Java's formats).
fn store_type(
    key: &'static str,
    v: Option<&str>,
    has_location: bool,
) -> Result<(), TlsConfigError> {
    match v.map(str::to_ascii_uppercase).as_deref() {
        None | Some("PEM") => Ok(()),
        Some(t @ ("JKS" | "PKCS12")) => {
            if has_location {
                Err(err(
                    key,
                    format!(
                        "{t} stores are not read here: convert the store to PEM (for example \
                         with keytool -importkeystore to PKCS12, then openssl pkcs12 -nodes) and \
                         set {key}=PEM"
                    ),
                ))
            } else {
                // Java's default type with nothing to read: harmless.
                Ok(())
            }
        }
        Some(other) => Err(err(key, format!("unknown store type {other:?} (PEM)"))),
    }
}

fn read_certs(
    key: &'static str,
    pem: &[u8],
) -> Result<Vec<CertificateDer<'static>>, TlsConfigError> {
    CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| err(key, format!("not a PEM file of certificates: {e}")))
}

fn load_key(key: &'static str, pem: &[u8]) -> Result<PrivateKeyDer<'static>, TlsConfigError> {
    match PrivateKeyDer::from_pem_slice(pem) {
        Ok(k) => Ok(k),
        Err(_)
            if contains(pem, b"ENCRYPTED PRIVATE KEY")
                || contains(pem, b"Proc-Type: 4,ENCRYPTED") =>
        {
            Err(err(
                key,
                "the private key is encrypted (ssl.key.password); only unencrypted PEM keys are \
                 read: decrypt it (openssl pkcs8 -in KEY -out PLAIN.pem) and keep the file \
                 readable only by the broker's user",
            ))
        }
        Err(e) => Err(err(key, format!("no private key found: {e}"))),
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// A suite's IANA name, as Kafka's `ssl.cipher.suites` takes it (rustls prefixes TLS 1.3
/// suites with `TLS13_`, IANA with `TLS_`).
fn suite_name(s: &rustls::SupportedCipherSuite) -> Option<String> {
    let name = s.suite().as_str()?;
    Some(match name.strip_prefix("TLS13_") {
        Some(rest) => format!("TLS_{rest}"),
        None => name.to_owned(),
    })
}

/// The system's CA certificates (Debian: /etc/ssl/certs/ca-certificates.crt; others by the
/// usual paths, or `SSL_CERT_FILE`).
fn system_roots() -> Vec<CertificateDer<'static>> {
    let mut paths: Vec<PathBuf> = Vec::new();
    if let Some(p) = std::env::var_os("SSL_CERT_FILE") {
        paths.push(p.into());
    }
    paths.extend(
        [
            "/etc/ssl/certs/ca-certificates.crt",
            "/etc/pki/tls/certs/ca-bundle.crt",
            "/etc/ssl/cert.pem",
            "/etc/ssl/ca-bundle.pem",
        ]
        .map(PathBuf::from),
    );
    for p in paths {
        if let Ok(pem) = std::fs::read(&p) {
            let certs: Vec<_> = CertificateDer::pem_slice_iter(&pem)
                .filter_map(Result::ok)
                .collect();
            if !certs.is_empty() {
                return certs;
            }
        }
    }
    Vec::new()
}

/// `ssl.endpoint.identification.algorithm=` (empty): the chain is verified, the name is not.
#[derive(Debug)]
struct AnyHostname(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for AnyHostname {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// The server name to check a broker's certificate against: the host of `host:port` (an IP
/// address, or a DNS name).
pub fn server_name(addr: &str) -> Result<ServerName<'static>, TlsConfigError> {
    let host = match addr.rsplit_once(':') {
        Some((h, port)) if port.chars().all(|c| c.is_ascii_digit()) => h,
        _ => addr,
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(host.to_owned()).map_err(|e| {
        err(
            "bootstrap.servers",
            format!("{host:?} is not a host name: {e}"),
        )
    })
}

#[cfg(test)]
mod tests;
