//! A Kafka-compatible broker (network front, segment log, coordinators).
//!
//! Not built yet: see the project README for what works today.
