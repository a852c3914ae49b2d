//! The Kafka producer: the Java client's architecture in async Rust.
//!
//! `send` serializes a record, picks its partition, and appends it to the record accumulator
//! (per-partition deques of batches encoded in the record-batch v2 layout, memory bounded by
//! the buffer pool). One background sender task drains ready batches per broker into
//! ProduceRequests and completes every record's future in append order.
//!
//! With `transactional.id` the producer is transactional (the Java client's transaction
//! manager, `transaction/`): `init_transactions`, then `begin_transaction`, sends, maybe
//! `send_offsets_to_transaction`, and `commit_transaction` or `abort_transaction`.
#![forbid(unsafe_code)]

mod accumulator;
mod batch;
pub mod config;
mod delivery;
pub mod error;
mod fast_hash;
pub mod interceptor;
mod metrics;
pub mod partitioner;
pub mod pool;
mod producer;
pub mod record;
mod sender;
pub mod serializer;
mod transaction;
mod typed;

pub use config::{Acks, ProducerConfig, ProducerConfigBuilder};
pub use delivery::{Callback, DeliveryHandler, DeliveryResult};
pub use error::ProducerError;
pub use kafka_net::{ConsumerGroupMetadata, OffsetAndMetadata};
pub use kafka_protocol::TopicPartition;
pub use metrics::ProducerMetrics;
pub use producer::{DeliveryFuture, Producer};
pub use record::{Header, ProducerRecord, RecordMetadata};
pub use transaction::TransactionState;
pub use typed::{TypedProducer, TypedRecord};
