//! The Kafka consumer: partitions assigned by the application or by a consumer group, read
//! through a background fetcher; positions; offsets committed to the group coordinator;
//! offsets of the log.
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
//! // The group shares the partitions of `orders` among its members.
//! consumer.subscribe(["orders"])?;
//! for record in consumer.poll(Duration::from_secs(1)).await? {
//!     println!("{} {:?}", record.offset, record.value);
//! }
//! consumer.commit_sync().await?;
//! // Commits, tells the rebalance listener, leaves the group.
//! consumer.close(Duration::from_secs(5)).await?;
//!
//! // Or pick the partitions yourself (no group membership; `group.id` only for offsets).
//! let config = ConsumerConfig::builder().bootstrap_servers(["127.0.0.1:9092"]).build()?;
//! let consumer = Consumer::new(config).await?;
//! consumer.assign([TopicPartition::new("orders", 0)])?;
//! # Ok(()) }
//! ```
//!
//! Layout: [`config`] (Java key names and defaults), [`subscription`] (assigned partitions
//! and the position state machine: committed offset, reset, KIP-320 validation), [`fetch`]
//! (planning Fetch requests and reading records out of the answers: aborted transactions,
//! control batches, CRCs, compression), [`state`] (everything behind the consumer's lock,
//! including the buffer of fetched data and its byte cap), [`offsets`] (ListOffsets,
//! OffsetForLeaderEpoch, OffsetFetch, OffsetCommit), [`group`] (group membership: the state
//! machine, the coordinator task, the rebalance listener), [`assignor`] (range, roundrobin,
//! sticky, cooperative-sticky and the consumer protocol's formats), background tasks that
//! only send what the state machines ask for (fetcher, commits, group coordinator), and
//! [`Consumer`]. All decisions are pure code that takes `now`.
#![forbid(unsafe_code)]

pub mod assignor;
mod commit;
pub mod config;
mod consumer;
mod driver;
pub mod error;
pub mod fetch;
pub mod group;
pub mod metrics;
pub mod offsets;
mod rebalance;
pub mod state;
pub mod subscription;
pub mod types;

pub use commit::{CommitCallback, CommitResult};
pub use config::{ConsumerConfig, ConsumerConfigBuilder};
pub use consumer::Consumer;
pub use error::ConsumerError;
pub use group::{ConsumerGroupMetadata, ListenerFuture, NoopListener, RebalanceListener};
pub use metrics::ConsumerMetrics;
pub use types::{
    ConsumerRecord, Header, IsolationLevel, OffsetAndMetadata, OffsetAndTimestamp, OffsetReset,
    TimestampType, TopicPartition,
};
