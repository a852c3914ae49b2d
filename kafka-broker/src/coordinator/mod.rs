//! What the group and transaction coordinators share: one shell that drives a pure
//! coordinator, and one adapter that keeps a coordinator's records in its internal topic.
//!
//! A coordinator's core is a pure state machine (a [`Machine`]: the group manager, the
//! transaction manager) driven by requests and `now`. The [`Shell`] puts it behind one mutex
//! and does everything else: it names the requests whose answers come later and hands the
//! answers to their waiters, reads the [`Clock`](crate::clock::Clock) it was given, fires the
//! machine's timers when its `poll_timeout` says they are due, appends the records the
//! machine asks for through a [`RecordLog`] and reports each append's acknowledgement back,
//! and answers NOT_COORDINATOR to whoever still waits when the coordinator closes or gives a
//! partition up. [`InternalTopic`] is the broker's [`RecordLog`]: appends to the partitions
//! of `__consumer_offsets` or `__transaction_state` that this broker leads, through the
//! partition layer with acks=all semantics, and the reading back of a partition when its
//! coordinator takes it over.
//!
//! | file | what |
//! |---|---|
//! | `machine.rs` | the contract of a pure coordinator: [`Machine`], its [`Effect`]s, [`Append`] |
//! | `record_log.rs` | [`RecordLog`], [`AckWait`], [`PartitionOwner`]: a coordinator's records, written and read back |
//! | `errors.rs` | the answer for a failed append (Kafka's mapping), in one place |
//! | `shell.rs` | [`Shell`]: machine, waiters, clock, timers, appends |
//! | `internal_topic.rs` | [`InternalTopic`]: an internal topic through the partition layer |
//!
//! Imports: the base layer (`clock`, `sync`, `error`), and the partition layer in
//! `internal_topic.rs` only. Never `broker`, `group` or `txn`: they build on this.

mod errors;
mod internal_topic;
mod machine;
mod record_log;
mod shell;

pub use errors::{Written, answer_for_append_error};
pub use internal_topic::{InternalTopic, read_partition};
pub use machine::{Append, Effect, EffectOf, KeyValue, Machine, Producer, RequestId};
pub use record_log::{AckWait, DiscardRecords, PartitionOwner, RecordLog, for_each_keyed_record};
pub use shell::{Asked, Shell};

/// The internal topic of committed offsets and group metadata.
pub const OFFSETS_TOPIC: &str = "__consumer_offsets";

/// The internal topic of transactional ids and their transactions.
pub const TRANSACTION_STATE_TOPIC: &str = "__transaction_state";

/// Java's `String.hashCode`: `s[0]*31^(n-1) + ... + s[n-1]` over UTF-16 code units, in
/// wrapping 32-bit arithmetic.
pub fn java_string_hash(s: &str) -> i32 {
    s.encode_utf16().fold(0i32, |h, unit| {
        h.wrapping_mul(31).wrapping_add(i32::from(unit))
    })
}

/// The partition of a coordinator's internal topic that holds `key` (a group id, a
/// transactional id): Kafka's `Utils.abs(key.hashCode()) % partitions`, where `Utils.abs`
/// maps `Integer.MIN_VALUE` to 0. A non-positive partition count gives 0.
pub fn partition_for(key: &str, partitions: i32) -> i32 {
    if partitions <= 0 {
        return 0;
    }
    let h = java_string_hash(key);
    let abs = if h == i32::MIN { 0 } else { h.abs() };
    abs % partitions
}
