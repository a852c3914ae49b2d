//! The partition layer, Kafka's `ReplicaManager` and `Partition`: every append to a partition
//! goes through here, whoever makes it (a client's Produce, the group coordinator's records in
//! `__consumer_offsets`, later transaction markers and a follower's fetched batches), and this
//! layer alone decides durability, the high watermark and whom to wake.
//!
//! - [`ReplicaManager`] ([`manager`]) hosts the partitions (their logs opened, created,
//!   retried when offline and deleted through it alone), keeps the high-watermark checkpoint,
//!   runs upkeep, and hands leaders' ISR changes to the [`IsrSink`] replication installs.
//! - [`Partition`] is one of them: leader append (producer-state check, offsets and epoch
//!   stamped), follower append (kept as the leader wrote it), truncation, the high watermark
//!   over the in-sync replicas, the leader epoch and its fence check.
//! - [`selector`] picks the replica a consumer should read from (KIP-392).
//! - [`delayed`] holds the delayed operations: a produce waiting for its acks condition, a
//!   fetch waiting for data, each woken only by the partitions it names.
//!
//! A Produce, read as data flowing through here: the handler turns the request into one call
//! per partition, [`Partition::append_records`] validates the records ([`validate`], Kafka's
//! `LogValidator`) and appends them under the partition lock, handing back a [`PendingAck`], and [`delayed::complete_appends`]
//! waits with every lock released for the group-commit fsync the log asks for (durable mode,
//! `flush.messages=1`, or a due flush) and, for acks=all, for the high watermark to cover the
//! batch. The high watermark moves when the fsync ends (durable mode) or at once (otherwise),
//! and each move wakes the waiters of that partition only.

pub mod budget;
pub mod checkpoint;
pub mod delayed;
pub mod isr;
pub mod manager;
pub mod partition;
pub mod producer_state;
pub mod selector;
pub mod validate;

pub use budget::MemoryBudget;
pub use delayed::Acks;
pub use isr::{Follower, IsrChange, Leadership, Role};
pub use manager::{IsrSink, ReplicaManager, ReplicaSettings, Roles};
pub use partition::{Appended, Isolation, Offsets, Partition, PendingAck, ReadRange, SyncNeeded};
pub use validate::{BadRecord, BatchSummary, Refused};

#[cfg(test)]
mod tests;
#[cfg(test)]
mod txn_tests;
