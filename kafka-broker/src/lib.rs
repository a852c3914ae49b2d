//! A Kafka-compatible broker: network front, segment log on Kafka's on-disk format,
//! coordinators. Run it with the `kafka-broker` binary or embed it with [`run`]:
//!
//! ```no_run
//! # async fn example() -> Result<(), kafka_broker::BrokerError> {
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let mut config = kafka_broker::BrokerConfig::default();
//! config.data_dir = "/tmp/kafka-data".into();
//! kafka_broker::run(listener, config, async { let _ = tokio::signal::ctrl_c().await; }).await
//! # }
//! ```
#![deny(unsafe_code)]

pub mod broker;
pub mod config;
pub mod error;
pub mod handler;
pub mod log;
pub mod producer_state;
pub mod server;
pub mod topics;

use std::future::Future;
use std::sync::Arc;

pub use broker::Broker;
pub use config::BrokerConfig;
pub use error::BrokerError;

/// Runs a broker on `listener` until `shutdown` completes. The advertised address defaults to
/// the listener's real address (so port 0 works in tests).
pub async fn run(
    listener: tokio::net::TcpListener,
    mut config: BrokerConfig,
    shutdown: impl Future<Output = ()>,
) -> Result<(), BrokerError> {
    let local = listener.local_addr()?;
    config.listen = local.to_string();
    let broker = Arc::new(Broker::open(config)?);
    tracing::info!(
        listen = %local,
        advertised = broker.config.advertised_addr(),
        data = %broker.config.data_dir.display(),
        cluster_id = %broker.cluster_id,
        "kafka-broker listening on {local}, data in {}",
        broker.config.data_dir.display()
    );
    server::serve(listener, broker, shutdown).await
}
