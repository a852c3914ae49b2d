//! The transaction coordinator as the request handlers use it: the pure
//! [`TransactionManager`] in the [`Shell`] every coordinator shares, which gives it the clock,
//! turns its answers into futures, appends its records to `__transaction_state` through a
//! [`RecordLog`] (reporting each append's acknowledgement with
//! [`TransactionManager::write_done`]) and fires its timers. The markers that end
//! transactions are work for the driver (`crate::node::markers`), which writes them and reports
//! back with [`TxnCoordinator::marker_written`].
//!
//! Nothing here decides anything about transactions; it only moves answers, work and time.

use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::record::RecordBatch;
use tokio::sync::mpsc;

use super::manager::TransactionManager;
use super::records::decode_batch;
use super::types::{
    AddOffsetsRequest, AddPartitionsRequest, Answer, EndTxnRequest, InitProducerIdRequest,
    InitProducerIdResult, ListFilter, MarkerRequest, Output, PartitionResults, ProducerIdSource,
    RequestId, TxnDescription, TxnList, WriteId,
};
use super::{TxnConfig, TxnRecord};
use crate::clock::Clock;
use crate::coordinator::{Append, Effect, EffectOf, Machine, PartitionOwner, RecordLog, Shell};
use crate::log::TopicPartition;

/// How long a request waits for its answer at most. Writes and markers report their own
/// failures well before this (appends time out, markers are retried apart from the answer);
/// it only keeps a request from hanging on a coordinator that was stopped.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a `__transaction_state` append waits for the in-sync replicas (the transaction
/// log's request timeout; a failure is answered COORDINATOR_NOT_AVAILABLE and the client
/// retries).
pub const TXN_LOG_WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// The transaction manager as the shell drives it: records to append are its writes,
/// markers are work for the driver.
impl Machine for TransactionManager {
    type Answer = Answer;
    type Tag = WriteId;
    type Work = MarkerRequest;

    fn poll_output(&mut self, now: i64) -> Option<EffectOf<Self>> {
        loop {
            return Some(match TransactionManager::poll_output(self)? {
                Output::Answer { request, answer } => Effect::Answer(request, answer),
                Output::Markers(m) => Effect::Work(m),
                Output::Write(w) => match w.record.encode() {
                    Ok(record) => Effect::Append(Append {
                        tag: w.id,
                        partition: w.partition,
                        records: vec![record],
                        producer: None,
                    }),
                    Err(e) => {
                        tracing::error!(partition = w.partition, error = %e,
                            "transaction log record not encodable");
                        self.write_done(w.id, Err(ErrorCode::UNKNOWN_SERVER_ERROR), now);
                        continue;
                    }
                },
            });
        }
    }

    fn poll_timeout(&self) -> Option<i64> {
        Some(TransactionManager::poll_timeout(self))
    }

    fn handle_timeout(&mut self, now: i64) {
        TransactionManager::handle_timeout(self, now);
    }

    fn append_done(&mut self, write: WriteId, result: Result<(), ErrorCode>, now: i64) {
        if let Err(code) = result {
            tracing::warn!(error = %code, "{} write failed", super::TRANSACTION_STATE_TOPIC);
        }
        self.write_done(write, result, now);
    }
}

/// The transaction coordinator of this broker.
#[derive(Debug)]
pub struct TxnCoordinator {
    shell: Shell<TransactionManager>,
    config: TxnConfig,
}

impl TxnCoordinator {
    /// A coordinator owning no partition yet, on `clock`, whose records go to `log`.
    pub fn new(config: TxnConfig, clock: Clock, log: Arc<dyn RecordLog>) -> Self {
        let manager = TransactionManager::new(config.clone(), clock.now_ms());
        Self {
            shell: Shell::new(manager, clock, log),
            config,
        }
    }

    pub fn config(&self) -> &TxnConfig {
        &self.config
    }

    /// The driver's end of the marker queue (once).
    pub fn take_work(&self) -> Option<mpsc::UnboundedReceiver<MarkerRequest>> {
        self.shell.take_work()
    }

    /// Starts a request and waits for its answer (at most [`ANSWER_TIMEOUT`]).
    async fn ask(
        &self,
        partition: i32,
        start: impl FnOnce(&mut TransactionManager, RequestId, i64),
    ) -> Result<Answer, ErrorCode> {
        let asked = self.shell.ask(Some(partition), start);
        match tokio::time::timeout(ANSWER_TIMEOUT, asked.answer()).await {
            Ok(answer) => answer,
            Err(_) => Err(ErrorCode::REQUEST_TIMED_OUT),
        }
    }

    /// InitProducerId with a transactional id.
    pub async fn init_producer_id(
        &self,
        req: &InitProducerIdRequest,
        ids: &mut (dyn ProducerIdSource + Send),
    ) -> InitProducerIdResult {
        let partition = self.config.partition_for(&req.transactional_id);
        match self
            .ask(partition, |m, id, now| {
                m.init_producer_id(id, req, ids, now)
            })
            .await
        {
            Ok(Answer::InitProducerId(r)) => r,
            Ok(other) => InitProducerIdResult::error(other.error()),
            Err(e) => InitProducerIdResult::error(e),
        }
    }

    /// AddPartitionsToTxn of a client: one code for every partition.
    pub async fn add_partitions(&self, req: &AddPartitionsRequest) -> ErrorCode {
        let partition = self.config.partition_for(&req.transactional_id);
        self.ask(partition, |m, id, now| m.add_partitions(id, req, now))
            .await
            .map_or_else(|e| e, |a| a.error())
    }

    /// AddPartitionsToTxn v4+ `verify_only`: checks, changes nothing.
    pub fn verify_partitions(&self, req: &AddPartitionsRequest) -> PartitionResults {
        self.shell.inspect(|m| m.verify_partitions(req))
    }

    /// AddOffsetsToTxn.
    pub async fn add_offsets(&self, req: &AddOffsetsRequest, offsets_partitions: i32) -> ErrorCode {
        let partition = self.config.partition_for(&req.transactional_id);
        self.ask(partition, |m, id, now| {
            m.add_offsets(id, req, offsets_partitions, now)
        })
        .await
        .map_or_else(|e| e, |a| a.error())
    }

    /// EndTxn.
    pub async fn end_txn(&self, req: &EndTxnRequest) -> ErrorCode {
        let partition = self.config.partition_for(&req.transactional_id);
        self.ask(partition, |m, id, now| m.end_txn(id, req, now))
            .await
            .map_or_else(|e| e, |a| a.error())
    }

    /// DescribeTransactions of one id.
    pub fn describe(&self, transactional_id: &str) -> TxnDescription {
        self.shell.inspect(|m| m.describe(transactional_id))
    }

    /// ListTransactions.
    pub fn list(&self, filter: &ListFilter) -> TxnList {
        let now = self.shell.clock().now_ms();
        self.shell.inspect(|m| m.list(filter, now))
    }

    /// Whether `partition` of `__transaction_state` is coordinated here (loaded), with its
    /// coordinator epoch.
    pub fn owns(&self, partition: i32) -> Option<i32> {
        self.shell
            .inspect(|m| m.owned_partitions().get(&partition).copied())
    }

    // ---- the driver's reports ----

    /// A marker is written in `partition` (or will never be: the partition is gone).
    pub fn marker_written(&self, transactional_id: &str, partition: &TopicPartition) {
        self.shell
            .call(|m, _| m.marker_written(transactional_id, partition));
    }

    /// Whether the markers of `transactional_id`'s transaction are still wanted at
    /// `coordinator_epoch` (the coordinator still owns its partition at that epoch and waits
    /// for them): a driver retrying markers stops once they are not.
    pub fn markers_wanted(&self, transactional_id: &str, coordinator_epoch: i32) -> bool {
        let p = self.config.partition_for(transactional_id);
        self.shell.inspect(|m| {
            m.owned_partitions().get(&p) == Some(&coordinator_epoch)
                && m.markers_pending(transactional_id).is_some()
        })
    }

    // ---- ownership ----

    /// The partition is being loaded (its ids answer COORDINATOR_LOAD_IN_PROGRESS).
    pub fn begin_load(&self, partition: i32) {
        self.shell.call(|m, _| m.begin_load(partition));
    }

    /// Takes over `partition` at `coordinator_epoch` with its records (log order).
    pub fn load_partition(
        &self,
        partition: i32,
        coordinator_epoch: i32,
        records: impl IntoIterator<Item = TxnRecord>,
    ) {
        self.shell.call(|m, now| {
            m.load_partition(partition, coordinator_epoch, records, now);
        });
    }

    /// Gives `partition` up; returns how many ids were dropped.
    pub fn resign(&self, partition: i32) -> usize {
        self.shell.unload(partition, |m, _| m.resign(partition))
    }

    // ---- timers ----

    /// Fires the coordinator's timers (timed-out transactions, expired ids, completions to
    /// write again) as they come due; never returns.
    pub async fn run_timers(&self) {
        self.shell.run_timers(std::future::pending()).await;
    }
}

/// The transaction coordinator loads and resigns with the leadership of the
/// `__transaction_state` partitions ([`crate::coordinator::InternalTopic::lead`]); a
/// partition's leader epoch is the coordinator epoch its markers carry.
impl PartitionOwner for TxnCoordinator {
    type Entry = TxnRecord;

    fn decode(&self, partition: i32, batch: &RecordBatch, out: &mut Vec<TxnRecord>) {
        decode_batch(partition, batch, out);
    }

    fn begin_load(&self, partition: i32) {
        TxnCoordinator::begin_load(self, partition);
    }

    fn load(&self, partition: i32, epoch: i32, entries: Vec<TxnRecord>) {
        self.load_partition(partition, epoch, entries);
    }

    fn unload(&self, partition: i32) -> usize {
        self.resign(partition)
    }
}
