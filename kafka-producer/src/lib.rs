//! The Kafka producer (accumulator, buffer pool, sender, idempotence, transactions).
//!
//! Not built yet: see the project README for what works today.
#![forbid(unsafe_code)]
