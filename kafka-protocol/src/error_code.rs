//! Kafka error codes.
