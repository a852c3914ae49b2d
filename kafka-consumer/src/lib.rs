//! The Kafka consumer (assign and group consumers, offsets, rebalancing).
//!
//! Not built yet: see the project README for what works today.
#![forbid(unsafe_code)]
