//! A Kafka-compatible broker: network front, segment log on Kafka's on-disk format,
//! coordinators. Run it with the `kafka-broker` binary or embed it with [`run`]:
//!
//! ```no_run
//! # async fn example() -> Result<(), kafka_broker::BrokerError> {
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let mut config = kafka_broker::BrokerConfig::default();
//! config.server.data_dir = "/tmp/kafka-data".into();
//! kafka_broker::run(listener, config, async { let _ = tokio::signal::ctrl_c().await; }).await
//! # }
//! ```
#![deny(unsafe_code)]

pub mod clock;
pub mod cluster;
pub mod config;
mod convert;
pub mod coordinator;
pub mod error;
pub mod group;
pub mod handler;
pub mod log;
pub mod meta_properties;
pub mod node;
mod rate_limit;
pub mod replica;
pub mod replication;
pub mod sendfile;
pub mod server;
mod sync;
pub mod topic_config;
pub mod topics;
pub mod txn;

/// The partition type's old home; it lives in [`replica`] now.
pub use replica::partition;

pub use config::BrokerConfig;
pub use error::BrokerError;
pub use node::Broker;

pub use node::run::{run, run_controller};
