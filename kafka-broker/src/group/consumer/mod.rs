//! Consumer groups of the KIP-848 rebalance protocol (`group.protocol=consumer`): members
//! heartbeat with ConsumerGroupHeartbeat, the coordinator computes the target assignment on
//! the broker and hands each member its partitions as the previous owners release them.
//!
//! Pure, like the classic coordinator: driven by requests, topic metadata and `now`, it
//! answers and emits the `__consumer_offsets` records Kafka writes (ConsumerGroup* keys and
//! values), and is rebuilt from them.
//!
//! Every change is a record: the coordinator works a request out on the groups as they are,
//! then replays its records on them (as Kafka's coordinator runtime does), so a group rebuilt
//! from `__consumer_offsets` is the group that wrote it, and a refused request changes
//! nothing.
//!
//! | module | what |
//! |---|---|
//! | `assignor/` | server-side assignors (`uniform`, `range`) behind [`assignor::Assignor`] |
//! | `types.rs` | heartbeat request and answer, states, errors, describe/list, [`TopicsImage`] |
//! | `config.rs` | `group.consumer.*` settings ([`ConsumerGroupConfig`]) |
//! | `member.rs` | one member ([`ConsumerGroupMember`]) |
//! | `reconcile.rs` | a member's current assignment moved towards its target |
//! | `group.rs` | one group ([`ConsumerGroup`]): its state and its records' replay |
//! | `heartbeat.rs` | ConsumerGroupHeartbeat worked out, and the target assignment |
//! | `regex.rs` | regex subscriptions (RE2/J syntax, what differs) |
//! | `records.rs` | the ConsumerGroup* records, encoded as Kafka writes them |
//! | `groups.rs` | every group ([`ConsumerGroups`]): requests, timers, metadata, describe |
//!
//! Imports: `crate::group` (member ids), `crate::coordinator` (partitioning), the base
//! layer.

pub mod assignor;
mod config;
mod group;
mod groups;
mod heartbeat;
mod member;
mod reconcile;
pub mod records;
pub mod regex;
mod types;

#[cfg(test)]
mod tests;

pub use config::{ConfigError, ConsumerGroupConfig};
pub use group::ConsumerGroup;
pub use groups::ConsumerGroups;
pub use member::ConsumerGroupMember;
pub use records::{ConsumerGroupRecord, RecordError, RecordKey, RecordValue};
pub use types::*;
