//! The transaction coordinator as the request handlers use it: the pure
//! [`TransactionManager`] behind a mutex, answers as futures fed by oneshot channels, and
//! the work it asks for (records to append to `__transaction_state`, markers to write)
//! queued for the driver (`crate::txn_driver`), which does the I/O and reports back with
//! [`TxnCoordinator::write_done`] and [`TxnCoordinator::marker_written`].
//!
//! Nothing here decides anything about transactions; it only moves answers, work and time.
//! Time is the wall clock in milliseconds ([`crate::broker::now_ms`]), as the records keep
//! it.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use kafka_protocol::error_code::ErrorCode;
use tokio::sync::{Notify, mpsc, oneshot};

use super::manager::TransactionManager;
use super::types::{
    AddOffsetsRequest, AddPartitionsRequest, Answer, EndTxnRequest, InitProducerIdRequest,
    InitProducerIdResult, ListFilter, MarkerRequest, Output, PartitionResults, ProducerIdSource,
    RequestId, TxnDescription, TxnList, TxnWrite, WriteId,
};
use super::{TxnConfig, TxnRecord};
use crate::broker::now_ms;
use crate::log::TopicPartition;

/// How long a request waits for its answer at most. Writes and markers report their own
/// failures well before this (appends time out, markers are retried apart from the answer);
/// it only keeps a request from hanging on a coordinator that was stopped.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);

/// Work for the driver.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Work {
    /// Append this record; report with [`TxnCoordinator::write_done`].
    Write(TxnWrite),
    /// Write these markers; report each partition with [`TxnCoordinator::marker_written`].
    Markers(MarkerRequest),
}

#[derive(Debug)]
struct Inner {
    manager: TransactionManager,
    waiters: HashMap<RequestId, oneshot::Sender<Answer>>,
    next_request: u64,
}

/// The transaction coordinator of this broker.
#[derive(Debug)]
pub struct TxnCoordinator {
    inner: Mutex<Inner>,
    config: TxnConfig,
    work: mpsc::UnboundedSender<Work>,
    work_rx: Mutex<Option<mpsc::UnboundedReceiver<Work>>>,
    /// Woken when the manager's next timer may have moved.
    timers: Notify,
}

impl TxnCoordinator {
    pub fn new(config: TxnConfig) -> Self {
        let (work, rx) = mpsc::unbounded_channel();
        Self {
            inner: Mutex::new(Inner {
                manager: TransactionManager::new(config.clone(), now_ms()),
                waiters: HashMap::new(),
                next_request: 0,
            }),
            config,
            work,
            work_rx: Mutex::new(Some(rx)),
            timers: Notify::new(),
        }
    }

    pub fn config(&self) -> &TxnConfig {
        &self.config
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        crate::sync::lock(&self.inner)
    }

    /// The driver's end of the work queue (once).
    pub fn take_work(&self) -> Option<mpsc::UnboundedReceiver<Work>> {
        crate::sync::lock(&self.work_rx).take()
    }

    /// Runs `f` on the manager, then hands out what it produced.
    fn with<R>(&self, f: impl FnOnce(&mut TransactionManager) -> R) -> R {
        let mut inner = self.lock();
        let r = f(&mut inner.manager);
        self.drain(&mut inner);
        r
    }

    fn drain(&self, inner: &mut Inner) {
        while let Some(out) = inner.manager.poll_output() {
            match out {
                Output::Answer { request, answer } => {
                    if let Some(tx) = inner.waiters.remove(&request) {
                        let _ = tx.send(answer);
                    }
                }
                Output::Write(w) => {
                    let _ = self.work.send(Work::Write(w));
                }
                Output::Markers(m) => {
                    let _ = self.work.send(Work::Markers(m));
                }
            }
        }
        self.timers.notify_one();
    }

    /// Starts a request and waits for its answer.
    async fn ask(
        &self,
        start: impl FnOnce(&mut TransactionManager, RequestId),
    ) -> Result<Answer, ErrorCode> {
        let rx = {
            let mut inner = self.lock();
            let id = RequestId(inner.next_request);
            inner.next_request += 1;
            let (tx, rx) = oneshot::channel();
            inner.waiters.insert(id, tx);
            start(&mut inner.manager, id);
            self.drain(&mut inner);
            rx
        };
        match tokio::time::timeout(ANSWER_TIMEOUT, rx).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(_)) => Err(ErrorCode::NOT_COORDINATOR),
            Err(_) => Err(ErrorCode::REQUEST_TIMED_OUT),
        }
    }

    /// InitProducerId with a transactional id.
    pub async fn init_producer_id(
        &self,
        req: &InitProducerIdRequest,
        ids: &mut (dyn ProducerIdSource + Send),
    ) -> InitProducerIdResult {
        match self
            .ask(|m, id| m.init_producer_id(id, req, ids, now_ms()))
            .await
        {
            Ok(Answer::InitProducerId(r)) => r,
            Ok(other) => InitProducerIdResult::error(other.error()),
            Err(e) => InitProducerIdResult::error(e),
        }
    }

    /// AddPartitionsToTxn of a client: one code for every partition.
    pub async fn add_partitions(&self, req: &AddPartitionsRequest) -> ErrorCode {
        self.ask(|m, id| m.add_partitions(id, req, now_ms()))
            .await
            .map_or_else(|e| e, |a| a.error())
    }

    /// AddPartitionsToTxn v4+ `verify_only`: checks, changes nothing.
    pub fn verify_partitions(&self, req: &AddPartitionsRequest) -> PartitionResults {
        self.lock().manager.verify_partitions(req)
    }

    /// AddOffsetsToTxn.
    pub async fn add_offsets(&self, req: &AddOffsetsRequest, offsets_partitions: i32) -> ErrorCode {
        self.ask(|m, id| m.add_offsets(id, req, offsets_partitions, now_ms()))
            .await
            .map_or_else(|e| e, |a| a.error())
    }

    /// EndTxn.
    pub async fn end_txn(&self, req: &EndTxnRequest) -> ErrorCode {
        self.ask(|m, id| m.end_txn(id, req, now_ms()))
            .await
            .map_or_else(|e| e, |a| a.error())
    }

    /// DescribeTransactions of one id.
    pub fn describe(&self, transactional_id: &str) -> TxnDescription {
        self.lock().manager.describe(transactional_id)
    }

    /// ListTransactions.
    pub fn list(&self, filter: &ListFilter) -> TxnList {
        self.lock().manager.list(filter, now_ms())
    }

    /// Whether `partition` of `__transaction_state` is coordinated here (loaded), with its
    /// coordinator epoch.
    pub fn owns(&self, partition: i32) -> Option<i32> {
        self.lock()
            .manager
            .owned_partitions()
            .get(&partition)
            .copied()
    }

    // ---- the driver's reports ----

    /// A write's outcome.
    pub fn write_done(&self, write: WriteId, result: Result<(), ErrorCode>) {
        self.with(|m| m.write_done(write, result, now_ms()));
    }

    /// A marker is written in `partition` (or will never be: the partition is gone).
    pub fn marker_written(&self, transactional_id: &str, partition: &TopicPartition) {
        self.with(|m| m.marker_written(transactional_id, partition));
    }

    /// Whether the markers of `transactional_id`'s transaction are still wanted at
    /// `coordinator_epoch` (the coordinator still owns its partition at that epoch and waits
    /// for them): a driver retrying markers stops once they are not.
    pub fn markers_wanted(&self, transactional_id: &str, coordinator_epoch: i32) -> bool {
        let inner = self.lock();
        let p = self.config.partition_for(transactional_id);
        inner.manager.owned_partitions().get(&p) == Some(&coordinator_epoch)
            && inner.manager.markers_pending(transactional_id).is_some()
    }

    // ---- ownership ----

    /// The partition is being loaded (its ids answer COORDINATOR_LOAD_IN_PROGRESS).
    pub fn begin_load(&self, partition: i32) {
        self.with(|m| m.begin_load(partition));
    }

    /// Takes over `partition` at `coordinator_epoch` with its records (log order).
    pub fn load_partition(
        &self,
        partition: i32,
        coordinator_epoch: i32,
        records: impl IntoIterator<Item = TxnRecord>,
    ) {
        self.with(|m| m.load_partition(partition, coordinator_epoch, records, now_ms()));
    }

    /// Gives `partition` up; returns how many ids were dropped.
    pub fn resign(&self, partition: i32) -> usize {
        self.with(|m| m.resign(partition))
    }

    // ---- timers ----

    /// Waits until the next timer is due (or may have moved), then runs what is due.
    pub async fn run_timers(&self) {
        loop {
            let due = self.lock().manager.poll_timeout();
            let wait = u64::try_from(due.saturating_sub(now_ms())).unwrap_or(0);
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(wait)) => {
                    self.with(|m| m.handle_timeout(now_ms()));
                }
                () = self.timers.notified() => {}
            }
        }
    }
}
