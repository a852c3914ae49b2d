//! A Kafka-compatible broker: network front, segment log on Kafka's on-disk format,
//! partition layer with replication, coordinators, KRaft-style cluster. Run it with the
//! `kafka-broker` binary or embed it with [`run`]:
//!
//! ```no_run
//! # async fn example() -> Result<(), kafka_broker::BrokerError> {
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let mut config = kafka_broker::BrokerConfig::default();
//! config.server.data_dir = "/tmp/kafka-data".into();
//! kafka_broker::run(listener, config, async { let _ = tokio::signal::ctrl_c().await; }).await
//! # }
//! ```
//!
//! # Layers
//!
//! Six strata. A module imports only from its own stratum or the ones below it, and the files
//! of one stratum import each other without a circle (`tests/layers.rs` checks both on every
//! `crate::` path; `../shared/tools/module-circles.py kafka-broker/src` prints the circles).
//!
//! ```text
//!  6 edges     run  server/ (accept loop, one task per connection)  sendfile
//!                   handler/ (one file per API, one RequestContext)
//!                      |
//!  5 node      node/ (Broker: wires the layers below, applies metadata images, its tasks;
//!                     transaction markers; the live topic configs)
//!                      |
//!  4 services  coordinator/ (one shell, one internal-topic adapter)  group/  txn/
//!              replication/ (fetchers, the ISR sender, one peer pool)
//!              cluster/ (metadata image, controller, quorum, registration)
//!                      |
//!  3 partition replica/ (ReplicaManager, Partition: append, read, follower fetched;
//!                        delayed operations; validation)  convert (old formats)
//!                      |
//!  2 log       log/ (segments, indexes, recovery, retention, compaction; files through LogIo)
//!                      |
//!  1 base      clock  sync  error  config/  rate_limit  topics  meta_properties
//!              credentials  acls  quota/  quotas  record_file
//! ```
//!
//! What each may import (besides the crates below this one):
//! 1. base: only the base; `config/` only `error`. Time is a [`clock::Clock`] passed in.
//! 2. `log/`: the base. It knows nothing of requests, partitions' roles or replication.
//! 3. `replica/`, `convert`: the log and the base. The partition layer is the only door to a
//!    partition: appends (with the acks and `min.insync.replicas` contract), reads (with the
//!    high-watermark and last-stable-offset bounds), follower fetches (epoch fence first);
//!    it hands ISR changes to the [`replica::IsrSink`] replication implements.
//! 4. services: the partition layer and below, and each other without a circle. They never
//!    name the node.
//! 5. `node/`: everything below.
//! 6. edges: everything; handlers only translate requests into the layers' verbs and back.
#![deny(unsafe_code)]

pub mod acls;
pub mod clock;
pub mod cluster;
pub mod config;
mod convert;
pub mod coordinator;
pub mod credentials;
pub mod error;
pub mod features;
pub mod group;
pub mod handler;
pub mod log;
pub mod meta_properties;
pub mod node;
pub mod quota;
pub mod quotas;
mod rate_limit;
pub mod record_file;
pub mod replica;
pub mod replication;
mod run;
pub mod sendfile;
pub mod server;
mod sync;
pub mod topics;
pub mod txn;

/// The partition type's old home; it lives in [`replica`] now.
pub use replica::partition;

pub use config::BrokerConfig;
pub use error::BrokerError;
pub use node::Broker;

pub use run::{run, run_controller};
