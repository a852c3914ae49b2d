//! The Kafka consumer: assigned partitions read through a background fetcher, positions,
//! offsets committed to the group coordinator, offsets of the log.
//!
//! ```no_run
//! # async fn example() -> Result<(), kafka_consumer::ConsumerError> {
//! use std::time::Duration;
//! use kafka_consumer::{Consumer, ConsumerConfig, OffsetReset, TopicPartition};
//!
//! let config = ConsumerConfig::builder()
//!     .bootstrap_servers(["127.0.0.1:9092"])
//!     .group_id("reporting")
//!     .auto_offset_reset(OffsetReset::Earliest)
//!     .build()?;
//! let consumer = Consumer::new(config).await?;
//! consumer.assign([TopicPartition::new("orders", 0)])?;
//! for record in consumer.poll(Duration::from_secs(1)).await? {
//!     println!("{} {:?}", record.offset, record.value);
//! }
//! consumer.commit_sync().await?;
//! consumer.close(Duration::from_secs(5)).await?;
//! # Ok(()) }
//! ```
//!
//! Layout: [`config`] (Java key names and defaults), [`subscription`] (assigned partitions
//! and the position state machine: committed offset, reset, KIP-320 validation), [`fetch`]
//! (planning Fetch requests and reading records out of the answers: aborted transactions,
//! control batches, CRCs, compression), [`state`] (everything behind the consumer's lock,
//! including the buffer of fetched data and its byte cap), [`offsets`] (ListOffsets,
//! OffsetForLeaderEpoch, OffsetFetch, OffsetCommit), a background driver task that only
//! sends what the state asks for, a commit task, and [`Consumer`]. All decisions are pure
//! code that takes `now`. Group membership (join, sync, heartbeats) is not there yet; it
//! will drive [`subscription::SubscriptionState`] with the partitions the group assigns.
#![forbid(unsafe_code)]

pub mod assignor;
mod commit;
pub mod config;
mod consumer;
mod driver;
pub mod error;
pub mod fetch;
pub mod metrics;
pub mod offsets;
pub mod state;
pub mod subscription;
pub mod types;

pub use commit::{CommitCallback, CommitResult};
pub use config::{ConsumerConfig, ConsumerConfigBuilder};
pub use consumer::Consumer;
pub use error::ConsumerError;
pub use metrics::ConsumerMetrics;
pub use types::{
    ConsumerRecord, Header, IsolationLevel, OffsetAndMetadata, OffsetAndTimestamp, OffsetReset,
    TimestampType, TopicPartition,
};
