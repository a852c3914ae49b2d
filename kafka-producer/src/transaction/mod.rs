//! Transactions: the Java client's `TransactionManager`, as a pure state machine that the
//! producer's API calls and its sender task drive.
//!
//! | file | what |
//! |---|---|
//! | `state.rs` | [`TransactionState`] and its legal transitions |
//! | `requests.rs` | the coordinator requests (InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit, EndTxn): bodies per version, answers reduced to error codes |
//! | `manager.rs` | [`TxnManager`]: state, producer id and epoch, the partitions of the transaction, the queue of coordinator requests, the handling of every answer |
//!
//! The API calls (`init_transactions`, `begin_transaction`, `send_offsets_to_transaction`,
//! `commit_transaction`, `abort_transaction`) change the state and queue requests, then wait
//! for a [`TxnResult`]. The sender task asks [`TxnManager::next_request`] for one request at a
//! time (Java's order: InitProducerId, then AddPartitions/AddOffsets/TxnOffsetCommit, then
//! EndTxn, then an epoch bump; EndTxn only once every batch of the transaction is done),
//! sends it to the transaction (or group) coordinator, sends no Produce while it is out, and
//! hands the answer to [`TxnManager::handle_response`]. A partition is added to the transaction
//! when first written: `send` registers it, the next request out is an AddPartitionsToTxn for
//! every partition waiting, and the accumulator drains a partition's batches only once it is
//! in the transaction.
//!
//! Errors come in Java's three classes: abortable (a batch or an offset commit of the
//! transaction failed: only `abort_transaction` is allowed, after which the producer is usable
//! again, and with an epoch bump when the coordinator supports it, KIP-360), fatal, and fenced
//! (a fatal error of its own kind: another producer took over the transactional id). Every
//! call and send in an error state fails with that error. Time enters as `now`; nothing here
//! sleeps or does I/O.

mod manager;
mod requests;
mod state;
#[cfg(test)]
mod tests;

use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

use crate::error::ProducerError;

pub(crate) use manager::{Next, Outgoing, TxnManager};
pub use state::TransactionState;

/// The outcome of one transactional operation, set once by the sender's side and awaited by
/// the API call (and by a repeated call after a timeout: Java's `TransactionalRequestResult`).
#[derive(Debug, Clone, Default)]
pub(crate) struct TxnResult(Arc<ResultInner>);

#[derive(Debug, Default)]
struct ResultInner {
    value: Mutex<Option<Result<(), ProducerError>>>,
    notify: Notify,
}

impl TxnResult {
    pub(crate) fn done(&self) {
        self.set(Ok(()));
    }

    pub(crate) fn fail(&self, e: ProducerError) {
        self.set(Err(e));
    }

    /// The first outcome wins; later ones are ignored.
    fn set(&self, r: Result<(), ProducerError>) {
        {
            let mut v = lock(&self.0.value);
            if v.is_none() {
                *v = Some(r);
            }
        }
        self.0.notify.notify_waiters();
    }

    pub(crate) fn is_completed(&self) -> bool {
        lock(&self.0.value).is_some()
    }

    /// The outcome, if there is one yet.
    pub(crate) fn get(&self) -> Option<Result<(), ProducerError>> {
        lock(&self.0.value).clone()
    }

    /// Waits for the outcome.
    pub(crate) async fn wait(&self) -> Result<(), ProducerError> {
        loop {
            let notified = self.0.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Some(r) = self.get() {
                return r;
            }
            notified.await;
        }
    }
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
