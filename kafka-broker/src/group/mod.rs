//! Consumer groups with Kafka's classic protocol: the group coordinator.
//!
//! The core is pure: [`GroupManager`] holds every group's membership state machine
//! ([`Group`]) and the committed offsets, and is driven by requests and `now` (milliseconds on
//! the driver's clock). It never sleeps, reads a clock or does I/O. Answers that have to wait
//! (a JoinGroup until the rebalance completes, a follower's SyncGroup until the leader's
//! arrives) come out later as [`Output`]s, and every change that Kafka would write to
//! `__consumer_offsets` comes out as an [`OffsetsRecord`] (a TxnOffsetCommit's as a
//! [`TxnBatch`], written as the producer's transactional batch; its offsets stay pending until
//! [`GroupManager::complete_transaction`], see `txn_offsets.rs`).
//!
//! [`GroupMachine`] adds what the records' acknowledgement decides (an offset commit counts
//! once its records are acknowledged) and the offset-expiry schedule, still pure.
//! [`GroupCoordinator`] runs it in the shell every coordinator shares
//! ([`crate::coordinator::Shell`]: the clock, waiting answers as futures, timers), appending
//! its records to `__consumer_offsets` through the internal-topic adapter before the
//! operation is answered; the broker replays that topic when this broker takes a partition
//! over ([`crate::coordinator::InternalTopic::lead`]).
//!
//! | file | what |
//! |---|---|
//! | `types.rs` | requests, answers, outputs, group states (plain data) |
//! | `offset_store.rs` | committed offsets ([`OffsetStore`]) and pending transactional ones |
//! | `records.rs` | `__consumer_offsets` keys and values, and reading a batch back |
//! | `member.rs` | one member |
//! | `state.rs` | one group: members, protocol selection, rebalance completion |
//! | `timers.rs` | a group's sessions, rebalance and sync deadlines |
//! | `persist.rs` | a group as a group metadata record, and back |
//! | `join.rs` | JoinGroup: new, known and static members |
//! | `membership.rs` | SyncGroup, Heartbeat, LeaveGroup |
//! | `manager.rs` | every group: routing, describe/list/delete, timers, unload |
//! | `offsets.rs` | OffsetCommit/OffsetFetch/OffsetDelete, offset expiry |
//! | `txn_offsets.rs` | TxnOffsetCommit: offsets pending until their transaction's marker |
//! | `replay.rs` | rebuilding groups and offsets from `__consumer_offsets` entries |
//! | `machine.rs` | [`GroupMachine`]: pending commits and timers, for the shell |
//! | `coordinator.rs` | [`GroupCoordinator`]: the machine in its shell, for the handlers |
//!
//! Imports: `crate::coordinator` (the shell, the record log's types), the base layer; never
//! the partition layer or the broker.

pub(crate) mod config;
pub mod consumer;
pub mod coordinator;
mod join;
pub mod kip848;
mod machine;
mod manager;
mod member;
mod membership;
mod offset_store;
mod offsets;
mod persist;
pub mod records;
mod replay;
mod state;
mod timers;
mod txn_offsets;
mod types;

#[cfg(test)]
mod tests;

pub use config::GroupConfig;
pub use coordinator::{GroupCoordinator, OFFSETS_COMMIT_TIMEOUT, run_timers};
pub use kip848::{CONSUMER_GROUP_TYPE, ListedGroup, Refusal};
pub use machine::{GroupAnswer, GroupMachine, GroupWrite};
pub use manager::GroupManager;
pub use member::Member;
pub use offset_store::{
    MemoryOffsetStore, OffsetAndMetadata, OffsetStore, PendingTxnOffsets, ProducerOffsets,
};
pub use records::{LogEntry, OffsetsRecord, RecordKey, RecordValue, decode_batch};
pub use state::Group;
pub use types::*;

pub use crate::coordinator::{OFFSETS_TOPIC, java_string_hash, partition_for};

/// The protocol type of Kafka consumers (their metadata is a `ConsumerProtocolSubscription`).
pub const CONSUMER_PROTOCOL_TYPE: &str = "consumer";

/// Generates the random part of member ids (`<client_id>-<uuid>`): a splitmix64 stream
/// formatted as a version-4 UUID. Seeded, so tests are reproducible.
#[derive(Debug, Clone)]
pub struct MemberIdGen {
    state: u64,
}

impl MemberIdGen {
    /// A generator starting at `seed`.
    pub fn new(seed: u64) -> Self {
        Self { state: seed }
    }

    /// A generator seeded from the process's hash randomness and the time.
    pub fn from_entropy() -> Self {
        let [a, b, c, d, e, f, g, h, ..] = crate::topics::random_uuid().0;
        Self::new(u64::from_le_bytes([a, b, c, d, e, f, g, h]))
    }

    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// The next UUID string, e.g. `0f8e2c1a-93b4-4d7e-8a1f-2b3c4d5e6f70`.
    pub fn next_uuid(&mut self) -> String {
        let hi = self.next_u64();
        let lo = self.next_u64();
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&hi.to_be_bytes());
        b[8..].copy_from_slice(&lo.to_be_bytes());
        b[6] = (b[6] & 0x0f) | 0x40;
        b[8] = (b[8] & 0x3f) | 0x80;
        kafka_protocol::Uuid(b).to_string()
    }
}
