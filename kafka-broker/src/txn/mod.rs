//! The transaction coordinator (KIP-98): transactional ids, their producer ids and epochs,
//! and the two-phase end of their transactions, persisted in `__transaction_state`.
//!
//! The core is pure, like the group coordinator's: [`TransactionManager`] holds the
//! metadata ([`TxnMetadata`]) of every transactional id of the `__transaction_state`
//! partitions it owns and is driven by requests and `now` (milliseconds on the driver's
//! clock). It never sleeps, reads a clock or does I/O. Everything it wants done comes out of
//! [`TransactionManager::poll_output`] as an [`Output`]:
//!
//! - a [`TxnWrite`]: a record to append to `__transaction_state`; the change it carries is
//!   only *prepared* (the id's pending state, during which other requests get
//!   CONCURRENT_TRANSACTIONS) and takes effect when the driver reports the append with
//!   [`TransactionManager::write_done`], or is rolled back if the append failed;
//! - a [`MarkerRequest`]: COMMIT or ABORT control records for each partition of an ended
//!   transaction; reported partition by partition with
//!   [`TransactionManager::marker_written`], after which the completion record is written;
//! - an [`Answer`] to a request, at once or after its write.
//!
//! Loading a partition ([`TransactionManager::load_partition`]) replays its records (the last
//! one of an id wins); a transaction found in PrepareCommit or PrepareAbort (the coordinator
//! stopped between EndTxn and the markers) sends its markers again. Timers
//! ([`TransactionManager::handle_timeout`]) abort transactions open past their timeout, with
//! an epoch bump fencing their producer, and remove ids idle for
//! `transactional.id.expiration.ms` with a tombstone.
//!
//! Transaction version 1 semantics (Kafka before KIP-890 part 2): the epoch is bumped by
//! InitProducerId and by fencing, not by every transaction, and values are written in v0
//! (v1 is read; its TV2 fields are kept but not acted upon).
//!
//! [`TxnCoordinator`] (`coordinator.rs`) runs it in the shell every coordinator shares
//! ([`crate::coordinator::Shell`]: the clock, answers as futures, timers, appends to
//! `__transaction_state` through the internal-topic adapter); `crate::node::markers` writes the
//! markers.
//!
//! | file | what |
//! |---|---|
//! | `config.rs` | `transaction.*` settings with Kafka's defaults |
//! | `state.rs` | one id: states, legal transitions, prepare/complete/abort of a transition |
//! | `records.rs` | `__transaction_state` keys and values (v0 written, v0/v1 read), tombstones |
//! | `types.rs` | requests, answers, outputs, producer id source, error mapping by version |
//! | `ops.rs` | InitProducerId, AddPartitionsToTxn (and verify), AddOffsetsToTxn, EndTxn |
//! | `manager.rs` | ownership and loading, write and marker outcomes, timers, describe/list |
//! | `coordinator.rs` | the manager in its shell: answers as futures, markers for the driver |

mod config;
mod coordinator;
mod manager;
mod ops;
pub mod records;
mod state;
mod types;

#[cfg(test)]
mod tests;

pub use config::TxnConfig;
pub use coordinator::{TXN_LOG_WRITE_TIMEOUT, TxnCoordinator};
pub use manager::{COMPLETION_RETRY_MS, TransactionManager};
pub use records::{TRANSACTION_STATE_TOPIC, TxnLogValue, TxnRecord, TxnRecordError};
pub use state::{
    NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TransitionError, TxnMetadata, TxnState, TxnTransit,
    epoch_exhausted,
};
pub use types::*;
