//! TLS listeners: the rustls configuration of each SSL / SASL_SSL listener, rebuilt when its
//! keystore or truststore files change (Kafka reloads them through a dynamic
//! `ssl.keystore.*` update; here a new certificate is picked up by the next connection once
//! the file changes), and the principal of a client certificate.

use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};

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
    pub fn new(name: &str, settings: TlsSettings) -> Result<Self, BrokerError> {
        let modified = settings.files_modified();
        let config = settings
            .server_config()
            .map_err(|e| BrokerError::Config(format!("listener {name}: {e}")))?;
        Ok(Self {
            name: name.to_owned(),
            settings,
            state: Mutex::new(Current {
                acceptor: TlsAcceptor::from(config),
                modified,
                checked: Instant::now(),
            }),
        })
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
/// last RDN of the certificate first, `CN=alice,OU=eng,O=Example,C=US`), which is the name
/// Kafka's default principal builder gives a TLS client. `None` when the certificate does not
/// parse.
pub fn subject_dn(der: &[u8]) -> Option<String> {
    let (_, cert) = X509Certificate::from_der(der).ok()?;
    let mut rdns = Vec::new();
    for rdn in cert.subject().iter_rdn() {
        let mut parts = Vec::new();
        for attr in rdn.iter() {
            let oid = attr.attr_type().to_id_string();
            let value = match attr.as_str() {
                Ok(s) => rfc2253_escape(s),
                // Non-string values as Java writes them: `#` and the DER in hex.
                Err(_) => {
                    let raw = attr.attr_value();
                    let mut hex = String::from("#");
                    for b in der_of(raw) {
                        hex.push_str(&format!("{b:02X}"));
                    }
                    hex
                }
            };
            parts.push(format!("{}={value}", keyword(&oid).unwrap_or(&oid)));
        }
        rdns.push(parts.join("+"));
    }
    rdns.reverse();
    Some(rdns.join(","))
}

fn der_of(any: &x509_parser::der_parser::asn1_rs::Any<'_>) -> Vec<u8> {
    use x509_parser::der_parser::asn1_rs::ToDer;
    any.to_der_vec().unwrap_or_default()
}

/// The keywords Java's RFC 2253 form uses; other attributes are written as their OID.
fn keyword(oid: &str) -> Option<&'static str> {
    Some(match oid {
        "2.5.4.3" => "CN",
        "2.5.4.6" => "C",
        "2.5.4.7" => "L",
        "2.5.4.8" => "ST",
        "2.5.4.10" => "O",
        "2.5.4.11" => "OU",
        "2.5.4.9" => "STREET",
        "0.9.2342.19200300.100.1.25" => "DC",
        "0.9.2342.19200300.100.1.1" => "UID",
        _ => return None,
    })
}

/// RFC 2253 escaping of an attribute value: `,`, `+`, `"`, `\`, `<`, `>`, `;` with a
/// backslash, a leading `#` or space and a trailing space too.
fn rfc2253_escape(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    let last = v.chars().count().saturating_sub(1);
    for (i, c) in v.chars().enumerate() {
        let special = matches!(c, ',' | '+' | '"' | '\\' | '<' | '>' | ';')
            || (i == 0 && (c == '#' || c == ' '))
            || (i == last && c == ' ');
        if special {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_follows_rfc_2253() {
        assert_eq!(rfc2253_escape("a,b+c"), "a\\,b\\+c");
        assert_eq!(rfc2253_escape("#x "), "\\#x\\ ");
        assert_eq!(rfc2253_escape("plain"), "plain");
    }
}
