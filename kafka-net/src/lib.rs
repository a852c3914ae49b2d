//! Tokio transport for the Kafka protocol: framing, pipelined connections with correlation
//! checking and timeouts, version negotiation.
//!
//! Layers: [`codec`] (size-prefixed frames), [`conn_state`] (sans-IO connection state, driven
//! by time passed in), [`connection`] (the tokio task and its handle), [`versions`]
//! (ApiVersions negotiation), [`metadata`] and [`cluster`] (the cluster client: bootstrap,
//! metadata cache, per-broker connections, routing, retries), [`admin`] (topics, offsets,
//! configs, groups), [`consumer_group`] (a group member's identity and offsets, shared by the
//! consumer and the transactional producer) and [`server`] (the server side of the framing,
//! for brokers).
#![forbid(unsafe_code)]

pub mod admin;
pub mod cluster;
pub mod codec;
pub mod conn_state;
pub mod connection;
pub mod consumer_group;
pub mod error;
pub mod http;
pub mod metadata;
pub mod security;
pub mod server;
pub mod tls;
pub mod versions;

pub use admin::Admin;
pub use cluster::{Cluster, ClusterConfig, CoordinatorType};
pub use codec::KafkaCodec;
pub use conn_state::{ConnConfig, ConnState, Outcome};
pub use connection::{Connection, ConnectionConfig};
pub use consumer_group::{ConsumerGroupMetadata, OffsetAndMetadata};
pub use error::NetError;
pub use metadata::{BrokerInfo, LeaderHint, MetadataSnapshot, PartitionInfo, TopicInfo};
pub use security::{ClientSecurity, OAuthTokenProvider, SecurityKeys, SecurityProtocol};
pub use versions::ApiVersions;
