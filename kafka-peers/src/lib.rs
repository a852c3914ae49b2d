//! Third-party peers for the interoperability tests: Apache Kafka itself (its broker, single
//! node or a cluster, its Java clients, Kafka Streams and its tools, from the jars
//! `kafka-peers/fetch` resolves from Maven Central), small Java programs compiled against
//! those jars, and a Go program over the current Go clients (franz-go, kafka-go, sarama).
//!
//! Nothing here knows our own crates: a test takes a peer from here and points it at our
//! broker, or points our clients at the Apache Kafka broker started here.
//!
//! A peer that is not installed is [`PeerError::Missing`]; [`require`] turns that into a skip
//! with a notice, or into a failure under `KAFKA_RS_REQUIRE_PEERS=1` (as `.ci/run` sets).
//!
//! Layout of the cache (`target/peers/`, or `KAFKA_RS_PEERS_DIR`):
//! - `kafka-<version>/libs/*.jar`: Apache Kafka with its dependencies (`fetch`);
//! - `java-classes/<hash>/`: the programs of `kafka-peers/java/src`, compiled by the first
//!   test that needs them (the hash is over their sources, so an edit recompiles);
//! - `go/kafka-peers-go`: the Go program of `kafka-peers/go`, built the same way.

pub mod apache;
pub mod certs;
pub mod go;
pub mod java;
mod process;

pub use apache::{ApacheKafka, KafkaOptions};
pub use java::Jvm;
pub use process::{Run, run};

use std::path::{Path, PathBuf};

/// Why a peer could not be used.
#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    /// Not installed here (run `kafka-peers/fetch`).
    #[error("peer missing: {0}")]
    Missing(String),
    /// Installed, but it failed: the message carries what it printed.
    #[error("{0}")]
    Failed(String),
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
}

impl PeerError {
    pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> PeerError {
        let what = what.into();
        move |source| PeerError::Io { what, source }
    }
}

/// Whether a missing peer fails the test (`KAFKA_RS_REQUIRE_PEERS=1`) instead of skipping it.
pub fn peers_required() -> bool {
    std::env::var("KAFKA_RS_REQUIRE_PEERS").is_ok_and(|v| v == "1")
}

/// A peer's result for a test: the peer, or `None` (with a notice on stderr) when it is
/// missing and that is allowed. A missing peer under `KAFKA_RS_REQUIRE_PEERS=1`, and any other
/// error, fails the test.
#[allow(clippy::panic)]
pub fn require<T>(peer: Result<T, PeerError>) -> Option<T> {
    match peer {
        Ok(p) => Some(p),
        Err(PeerError::Missing(why)) if !peers_required() => {
            eprintln!("SKIPPED: {why} (run kafka-peers/fetch)");
            None
        }
        Err(e) => panic!("{e}"),
    }
}

/// This crate's folder (the Java and Go sources live under it).
pub fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Where fetched and built peers are cached.
pub fn peers_dir() -> PathBuf {
    match std::env::var_os("KAFKA_RS_PEERS_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => crate_dir().join("../target/peers"),
    }
}

/// A free TCP port on 127.0.0.1 (bound, then released: another process may take it in
/// between, which a test on loopback accepts).
pub fn free_port() -> Result<u16, PeerError> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(PeerError::io("bind"))?;
    Ok(listener
        .local_addr()
        .map_err(PeerError::io("local address"))?
        .port())
}
