//! Replication settings live in the configuration ([`crate::config::ReplicationConfig`]).

pub use crate::config::ReplicationConfig;
