//! Consumer groups of the KIP-848 rebalance protocol (`group.protocol=consumer`): members
//! heartbeat with ConsumerGroupHeartbeat, the coordinator computes the target assignment on
//! the broker and hands each member its partitions as the previous owners release them.
//!
//! Pure, like the classic coordinator: driven by requests, topic metadata and `now`, it
//! answers and emits the `__consumer_offsets` records Kafka writes (ConsumerGroup* keys and
//! values), and is rebuilt from them.
//!
//! | module | what |
//! |---|---|
//! | `assignor/` | server-side assignors (`uniform`, `range`) behind [`assignor::Assignor`] |

pub mod assignor;
