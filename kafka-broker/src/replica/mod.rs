//! The partition layer, Kafka's `ReplicaManager` and `Partition`: the only door to a
//! partition. Every append goes through here, whoever makes it (a client's Produce, the
//! coordinators' internal-topic records, transaction markers, a follower's fetched batches),
//! every read of records, every follower fetch at a leader; this layer alone decides
//! durability, the high watermark, the last stable offset and whom to wake. It imports only
//! the log layer and the base.
//!
//! - [`ReplicaManager`] ([`manager`]) hosts the partitions (their logs opened, created,
//!   retried when offline and deleted through it alone), keeps the high-watermark checkpoint,
//!   runs upkeep, and hands leaders' ISR changes to the [`IsrSink`] replication installs.
//! - [`Partition`] ([`partition`]) is one of them, with its verbs: append (the acks and
//!   `min.insync.replicas` contract inside), read (bounded by what the reader may see),
//!   follower fetched (the epoch fence first), upkeep.
//! - [`isr`] is a partition's replication state as plain data (role, leader epoch,
//!   followers, ISR, the change in flight, the high watermark they allow).
//! - [`validate`] checks a producer's records (Kafka's `LogValidator`) within the memory
//!   [`budget`]; [`producer_state`] keeps idempotent producers and open transactions;
//!   [`checkpoint`] is Kafka's `replication-offset-checkpoint`; [`selector`] picks the replica
//!   a consumer should read from (KIP-392).
//! - [`delayed`] holds the delayed operations: a produce waiting for its acks condition, a
//!   fetch waiting for data, each woken only by the partitions it names.
//!
//! A Produce, read as data flowing through here: the handler calls
//! [`Partition::append_records`] per partition, which validates the records and appends them
//! (the leadership and, for acks=all, `min.insync.replicas` checked first; nothing written if
//! either fails), handing back a [`PendingAck`]; [`delayed::complete_append`] then waits with
//! every lock released for the group-commit fsync the log asks for (durable mode,
//! `flush.messages=1`, or a due flush) and, for acks=all, for the high watermark to cover the
//! batch with `min.insync.replicas` still met, until the request's deadline. The high watermark
//! moves when the fsync ends (durable mode) or at once (otherwise), and each move wakes the
//! waiters of that partition only.

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
