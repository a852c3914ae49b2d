//! TLS listeners: the rustls configuration of each SSL / SASL_SSL listener, rebuilt when its
//! keystore or truststore files change (Kafka reloads them through a dynamic
//! `ssl.keystore.*` update; here a new certificate is picked up by the next connection once
//! the file changes), and the principal of a client certificate.

use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

use kafka_auth::principal::{AttributeTypeAndValue, SslPrincipalMapper, rfc2253_name};
use kafka_net::tls::TlsSettings;
use tokio_rustls::TlsAcceptor;
use x509_parser::prelude::{FromDer, X509Certificate};

use crate::error::BrokerError;
use crate::sync::lock;

/// How often, at most, the files of a listener are looked at for changes.
const RELOAD_CHECK: Duration = Duration::from_secs(1);

/// How long a client has to finish the TLS handshake: a client that starts one and stalls is
/// closed after this, its memory and connection slot given back.
pub(crate) const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// One TLS listener's configuration, current with its files.
pub struct TlsListener {
    name: String,
    settings: TlsSettings,
    /// `ssl.principal.mapping.rules` (Kafka's default: the DN unchanged).
    mapper: SslPrincipalMapper,
    state: Mutex<Current>,
}

struct Current {
    acceptor: TlsAcceptor,
    modified: Option<SystemTime>,
    checked: Instant,
}

impl std::fmt::Debug for TlsListener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsListener")
            .field("name", &self.name)
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl TlsListener {
    /// Builds the listener's configuration; a bad keystore or truststore is an error naming the
    /// listener and the key.
    pub fn new(
        name: &str,
        settings: TlsSettings,
        mapping_rules: Option<&str>,
    ) -> Result<Self, BrokerError> {
        let mapper =
            SslPrincipalMapper::parse(mapping_rules.unwrap_or("DEFAULT")).map_err(|e| {
                BrokerError::Config(format!("listener {name}: ssl.principal.mapping.rules: {e}"))
            })?;
        let modified = settings.files_modified();
        let config = settings
            .server_config()
            .map_err(|e| BrokerError::Config(format!("listener {name}: {e}")))?;
        Ok(Self {
            name: name.to_owned(),
            settings,
            mapper,
            state: Mutex::new(Current {
                acceptor: TlsAcceptor::from(config),
                modified,
                checked: Instant::now(),
            }),
        })
    }

    /// The principal name of a client certificate's subject (`ssl.principal.mapping.rules`);
    /// a subject no rule maps is an error (Kafka refuses the connection).
    pub fn principal_name(&self, dn: &str) -> Result<String, String> {
        self.mapper.map(dn).map_err(|e| e.to_string())
    }

    /// The acceptor for a new connection: rebuilt first when a file changed since the last
    /// look (at most once a second). A file that no longer loads keeps the last good
    /// configuration, with a warning.
    pub fn acceptor(&self) -> TlsAcceptor {
        let mut cur = lock(&self.state);
        if cur.checked.elapsed() >= RELOAD_CHECK {
            cur.checked = Instant::now();
            let modified = self.settings.files_modified();
            if modified.is_some() && modified != cur.modified {
                match self.settings.server_config() {
                    Ok(config) => {
                        tracing::info!(listener = %self.name, "TLS files changed: new connections use the new certificates");
                        cur.acceptor = TlsAcceptor::from(config);
                        cur.modified = modified;
                    }
                    Err(e) => {
                        tracing::warn!(listener = %self.name, error = %e,
                            "TLS files changed but do not load; keeping the previous certificates");
                        cur.modified = modified;
                    }
                }
            }
        }
        cur.acceptor.clone()
    }
}

/// The subject of a certificate as Java's `X500Principal.getName()` writes it (RFC 2253: the
/// last RDN of the certificate first, `CN=alice,OU=eng,O=Example,C=US`), which Kafka's
/// principal builder maps with `ssl.principal.mapping.rules`. `None` when the certificate
/// does not parse.
pub fn subject_dn(der: &[u8]) -> Option<String> {
    let (_, cert) = X509Certificate::from_der(der).ok()?;
    let oids: Vec<Vec<(String, u8, &[u8])>> = cert
        .subject()
        .iter_rdn()
        .map(|rdn| {
            rdn.iter()
                .map(|attr| {
                    let value = attr.attr_value();
                    let tag = u8::try_from(value.tag().0).unwrap_or(0);
                    (attr.attr_type().to_id_string(), tag, value.data)
                })
                .collect()
        })
        .collect();
    let rdns: Vec<Vec<AttributeTypeAndValue<'_>>> = oids
        .iter()
        .map(|rdn| {
            rdn.iter()
                .map(|(oid, tag, content)| AttributeTypeAndValue {
                    oid,
                    tag: *tag,
                    content,
                })
                .collect()
        })
        .collect();
    Some(rfc2253_name(&rdns))
}
