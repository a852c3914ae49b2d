//! TLS for the benchmarks' `--tls` runs: a certificate authority and a broker certificate made
//! for the run (`kafka_peers::certs`), the settings that give the broker an `SSL` listener
//! beside its `PLAINTEXT` one, the settings each client needs to reach that listener, and
//! which path the broker's TLS fetches can take on this kernel.

use std::path::{Path, PathBuf};

use kafka_peers::certs::TestCa;

/// What goes wrong here (the same boxed error as the harness's, without importing it: the
/// harness imports this file).
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// Where the kernel lists the TCP upper-layer protocols it can attach (`tls` when kernel TLS
/// is there).
pub const ULP_FILE: &str = "/proc/sys/net/ipv4/tcp_available_ulp";

/// The files a broker's `SSL` listener serves with and its clients trust: made once per run
/// under one directory.
#[derive(Clone, Debug)]
pub struct BrokerTls {
    /// Kafka's PEM keystore: the broker's private key and its certificate chain in one file
    /// (`ssl.keystore.type=PEM`, `ssl.keystore.location`).
    pub keystore: PathBuf,
    /// The certificate authority's certificate, the clients' truststore.
    pub ca_file: PathBuf,
}

impl BrokerTls {
    /// Makes a certificate authority and a broker certificate for `localhost` and
    /// `127.0.0.1` (the name a client checks against the address it dialled) under `dir`.
    pub fn new(dir: &Path) -> Result<Self, Error> {
        let dir = dir.join("tls");
        std::fs::create_dir_all(&dir)?;
        let ca = TestCa::new(&dir, "bench");
        let server = ca.server("broker", &["localhost", "127.0.0.1"]);
        Ok(Self {
            keystore: server.keystore,
            ca_file: ca.ca_file(),
        })
    }

    /// The broker's `--set` settings for two listeners on 127.0.0.1: `PLAINTEXT` on
    /// `plain_port` (the client listener, which `--listen` also names) and `SSL` on
    /// `tls_port`, with the PEM keystore. Each listener advertises its own address, as in
    /// Kafka, so a client stays on the listener it bootstrapped from.
    pub fn broker_settings(&self, plain_port: u16, tls_port: u16) -> Vec<String> {
        vec![
            format!("listeners=PLAINTEXT://127.0.0.1:{plain_port},SSL://127.0.0.1:{tls_port}"),
            "ssl.keystore.type=PEM".to_owned(),
            format!("ssl.keystore.location={}", self.keystore.display()),
        ]
    }

    /// How a client reaches the `SSL` listener.
    pub fn security(&self) -> Security {
        Security::Ssl {
            ca_file: self.ca_file.clone(),
        }
    }
}

/// How a benchmark client talks to the broker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Security {
    /// `security.protocol=PLAINTEXT`.
    Plaintext,
    /// `security.protocol=SSL`, trusting the certificate authority in `ca_file` (PEM), the
    /// broker's name checked (`ssl.endpoint.identification.algorithm=https`, both clients'
    /// default).
    Ssl { ca_file: PathBuf },
}

impl Security {
    /// The name in progress lines, tables and JSON: `plaintext` or `tls`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Plaintext => "plaintext",
            Self::Ssl { .. } => "tls",
        }
    }

    /// Whether this is TLS.
    pub fn is_tls(&self) -> bool {
        matches!(self, Self::Ssl { .. })
    }

    /// Our clients' settings (Kafka's key names): nothing for plaintext, else
    /// `security.protocol=SSL` with a PEM truststore.
    pub fn ours_settings(&self) -> Vec<(String, String)> {
        match self {
            Self::Plaintext => Vec::new(),
            Self::Ssl { ca_file } => vec![
                ("security.protocol".into(), "SSL".into()),
                ("ssl.truststore.type".into(), "PEM".into()),
                (
                    "ssl.truststore.location".into(),
                    ca_file.display().to_string(),
                ),
            ],
        }
    }

    /// librdkafka's settings: nothing for plaintext, else `security.protocol=ssl` with
    /// `ssl.ca.location`.
    pub fn rdkafka_settings(&self) -> Vec<(String, String)> {
        match self {
            Self::Plaintext => Vec::new(),
            Self::Ssl { ca_file } => vec![
                ("security.protocol".into(), "ssl".into()),
                ("ssl.ca.location".into(), ca_file.display().to_string()),
            ],
        }
    }

    /// The Java client's settings (`kafka-producer-perf-test --producer-props`): nothing for
    /// plaintext, else `security.protocol=SSL` with a PEM truststore (KIP-651).
    pub fn java_settings(&self) -> Vec<String> {
        self.ours_settings()
            .into_iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect()
    }

    /// One command-line argument for a phase child: `plaintext` or `ssl:<CA file>`.
    pub fn to_arg(&self) -> String {
        match self {
            Self::Plaintext => "plaintext".into(),
            Self::Ssl { ca_file } => format!("ssl:{}", ca_file.display()),
        }
    }

    /// The security [`to_arg`](Self::to_arg) wrote.
    pub fn parse_arg(s: &str) -> Result<Self, Error> {
        match s.split_once(':') {
            None if s == "plaintext" => Ok(Self::Plaintext),
            Some(("ssl", ca)) if !ca.is_empty() => Ok(Self::Ssl {
                ca_file: PathBuf::from(ca),
            }),
            _ => Err(format!("security: expected plaintext or ssl:<CA file>, got {s:?}").into()),
        }
    }
}

/// The path the broker's fetches over TLS take on this machine, from [`ULP_FILE`]: without
/// kernel TLS the record bytes are read from the log and encrypted in user space (copied), as
/// Apache Kafka always does on TLS listeners.
pub fn tls_fetch_path() -> &'static str {
    fetch_path_of(std::fs::read_to_string(ULP_FILE).ok().as_deref())
}

/// [`tls_fetch_path`] for the contents of [`ULP_FILE`] (`None`: not readable).
pub fn fetch_path_of(ulp: Option<&str>) -> &'static str {
    match ulp {
        Some(list) if list.split_whitespace().any(|u| u == "tls") => {
            "kTLS available in the kernel (the broker's log says whether it used it)"
        }
        Some(_) => "copied (no kTLS)",
        None => "copied (no kTLS: tcp_available_ulp not readable)",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn security_arguments_round_trip() {
        let ssl = Security::Ssl {
            ca_file: PathBuf::from("/tmp/x:y/ca.pem"),
        };
        for s in [Security::Plaintext, ssl.clone()] {
            assert_eq!(Security::parse_arg(&s.to_arg()).ok(), Some(s));
        }
        for bad in ["", "ssl", "ssl:", "tls:/ca.pem", "plaintext:x", "PLAINTEXT"] {
            assert!(Security::parse_arg(bad).is_err(), "{bad:?}");
        }
        assert_eq!(ssl.name(), "tls");
        assert!(ssl.is_tls() && !Security::Plaintext.is_tls());
    }

    #[test]
    fn each_client_gets_its_own_key_names() {
        let ssl = Security::Ssl {
            ca_file: PathBuf::from("/c/ca.pem"),
        };
        let pairs = |v: Vec<(String, String)>| -> Vec<String> {
            v.into_iter().map(|(k, v)| format!("{k}={v}")).collect()
        };
        assert_eq!(
            pairs(ssl.ours_settings()),
            [
                "security.protocol=SSL",
                "ssl.truststore.type=PEM",
                "ssl.truststore.location=/c/ca.pem"
            ]
        );
        assert_eq!(
            pairs(ssl.rdkafka_settings()),
            ["security.protocol=ssl", "ssl.ca.location=/c/ca.pem"]
        );
        assert_eq!(ssl.java_settings(), pairs(ssl.ours_settings()));
        assert!(Security::Plaintext.ours_settings().is_empty());
        assert!(Security::Plaintext.rdkafka_settings().is_empty());
    }

    #[test]
    fn fetch_path_follows_the_ulp_list() {
        assert_eq!(fetch_path_of(Some("mptcp\n")), "copied (no kTLS)");
        assert_eq!(fetch_path_of(Some("")), "copied (no kTLS)");
        // A name that merely contains "tls" is not kernel TLS.
        assert_eq!(fetch_path_of(Some("mptcp notls")), "copied (no kTLS)");
        assert!(fetch_path_of(Some("mptcp tls\n")).starts_with("kTLS available"));
        assert!(fetch_path_of(None).starts_with("copied"));
    }

    #[test]
    fn broker_gets_both_listeners_and_the_keystore() {
        let dir = std::env::temp_dir().join(format!("kafka-bench-tls-{}", std::process::id()));
        let tls = BrokerTls::new(&dir).unwrap_or_else(|e| panic!("{e}"));
        assert!(tls.keystore.is_file() && tls.ca_file.is_file());
        let keystore = std::fs::read_to_string(&tls.keystore).unwrap_or_default();
        assert!(keystore.contains("PRIVATE KEY") && keystore.contains("CERTIFICATE"));
        let settings = tls.broker_settings(9092, 9093);
        assert_eq!(
            settings[0],
            "listeners=PLAINTEXT://127.0.0.1:9092,SSL://127.0.0.1:9093"
        );
        assert!(settings.contains(&"ssl.keystore.type=PEM".to_owned()));
        assert!(settings.contains(&format!("ssl.keystore.location={}", tls.keystore.display())));
        assert_eq!(
            tls.security(),
            Security::Ssl {
                ca_file: tls.ca_file.clone()
            }
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
