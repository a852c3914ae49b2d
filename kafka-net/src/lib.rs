//! Tokio transport for the Kafka protocol: framing, pipelined connections, the cluster client.
//!
//! Not built yet: see the project README for what works today.
