//! The producer's transactional API (the Java client's `initTransactions`,
//! `beginTransaction`, `sendOffsetsToTransaction`, `commitTransaction`,
//! `abortTransaction`): each call moves the transaction manager and waits, up to
//! `max.block.ms`, for what the sender task does about it.

use std::sync::{Arc, Mutex};

use kafka_net::{ConsumerGroupMetadata, OffsetAndMetadata};

use super::Producer;
use crate::error::ProducerError;
use crate::transaction::{TransactionState, TxnManager, TxnResult, lock};
use kafka_protocol::TopicPartition;

impl Producer {
    /// Gets the producer id and epoch for `transactional.id` from its transaction
    /// coordinator (fencing an older producer with the same id and aborting what it left
    /// open). Call once, before the first transaction. Waits up to `max.block.ms`; after a
    /// [`ProducerError::TransactionTimeout`] the work goes on and calling again waits for it.
    pub async fn init_transactions(&self) -> Result<(), ProducerError> {
        let txn = self.txn("init_transactions")?;
        let result = lock(txn).init_transactions()?;
        self.inner.acc.wake.notify_one();
        self.wait_txn("init_transactions", result, false).await
    }

    /// Starts a transaction (local: nothing is sent until a record or offsets are).
    pub fn begin_transaction(&self) -> Result<(), ProducerError> {
        lock(self.txn("begin_transaction")?).begin()
    }

    /// Commits `offsets` of the consumer group `group` with the current transaction: they
    /// become the group's committed offsets if and only if the transaction commits
    /// (AddOffsetsToTxn to the transaction coordinator, then TxnOffsetCommit to the group
    /// coordinator, with the member's generation so a zombie member is refused). Waits up
    /// to `max.block.ms`.
    pub async fn send_offsets_to_transaction(
        &self,
        offsets: impl IntoIterator<Item = (TopicPartition, OffsetAndMetadata)>,
        group: &ConsumerGroupMetadata,
    ) -> Result<(), ProducerError> {
        let txn = self.txn("send_offsets_to_transaction")?;
        let offsets: std::collections::BTreeMap<_, _> = offsets.into_iter().collect();
        if offsets.is_empty() {
            return Ok(());
        }
        let result = lock(txn).send_offsets(offsets, group.clone())?;
        self.inner.acc.wake.notify_one();
        self.wait_txn("send_offsets_to_transaction", result, false)
            .await
    }

    /// Sends every record of the transaction, waits for their acknowledgements, then commits
    /// (EndTxn). When a record failed the commit fails with [`ProducerError::Abortable`]:
    /// abort then. Waits up to `max.block.ms`; calling again after a timeout waits further.
    pub async fn commit_transaction(&self) -> Result<(), ProducerError> {
        let txn = self.txn("commit_transaction")?;
        let result = lock(txn).begin_commit()?;
        self.inner.acc.wake.notify_one();
        self.wait_txn("commit_transaction", result, true).await
    }

    /// Aborts the transaction: records not sent yet fail with
    /// [`ProducerError::TransactionAborted`], those in flight are waited for, then EndTxn
    /// (abort); after an error that left sequence numbers unsure the epoch is bumped too
    /// (KIP-360). The producer can then begin a new transaction. Waits up to `max.block.ms`.
    pub async fn abort_transaction(&self) -> Result<(), ProducerError> {
        let txn = self.txn("abort_transaction")?;
        let result = lock(txn).begin_abort()?;
        self.inner.acc.wake.notify_one();
        self.wait_txn("abort_transaction", result, false).await
    }

    /// The transaction state (`None` without `transactional.id`).
    pub fn transaction_state(&self) -> Option<TransactionState> {
        self.inner.txn.as_ref().map(|t| lock(t).state())
    }

    fn txn(&self, operation: &'static str) -> Result<&Arc<Mutex<TxnManager>>, ProducerError> {
        self.inner.txn.as_ref().ok_or_else(|| {
            ProducerError::Config(format!("{operation} needs transactional.id to be set"))
        })
    }

    /// Waits for `result` up to `max.block.ms` (flushing the accumulator first if `flush`).
    async fn wait_txn(
        &self,
        operation: &'static str,
        result: TxnResult,
        flush: bool,
    ) -> Result<(), ProducerError> {
        let max_block = self.inner.cfg.max_block;
        let acc = &self.inner.acc;
        let wait = async {
            if flush {
                acc.flush().await;
            }
            result.wait().await
        };
        tokio::time::timeout(max_block, wait).await.unwrap_or(Err(
            ProducerError::TransactionTimeout {
                operation,
                after: max_block,
            },
        ))
    }
}
