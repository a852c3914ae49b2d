//! The transaction manager: state, producer id and epoch, the transaction's partitions, the
//! queue of coordinator requests and the handling of their answers (the Java client's
//! `TransactionManager` and its request handlers). Pure: `now` comes in, requests go out
//! through [`TxnManager::next_request`], answers come back through
//! [`TxnManager::handle_response`].

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use kafka_net::{ConsumerGroupMetadata, NetError};
use kafka_protocol::TopicPartition;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::ResponseBody;
use tokio::time::Instant;

use super::TxnResult;
use super::requests::{Answer, Offsets, TxnRequest};
use super::state::TransactionState;
use crate::error::ProducerError;

pub(crate) use super::requests::Outgoing;

/// The first backoff of the first AddPartitionsToTxn of a transaction refused with
/// CONCURRENT_TRANSACTIONS: the previous transaction is most likely just completing (Apache
/// Kafka answers so until the previous transaction's markers are written, a few milliseconds
/// on a healthy cluster). It doubles with each refusal, up to `retry.backoff.ms`. (The Java
/// client and librdkafka wait 20 ms each time; against Apache Kafka that wait was most of a
/// short transaction's time.)
const ADD_PARTITIONS_RETRY_BACKOFF: Duration = Duration::from_millis(5);

/// A queued request and the result it completes.
#[derive(Debug)]
struct Pending {
    request: TxnRequest,
    result: TxnResult,
    /// Not to be sent before (a retry's backoff).
    not_before: Option<Instant>,
}

/// What the sender should do about transactional requests now.
#[derive(Debug)]
pub(crate) enum Next {
    /// Send this (and no Produce until its answer is handled).
    Send(Outgoing),
    /// Nothing to send before this much time has passed.
    Wait(Duration),
    /// Nothing to send (look again when something changes).
    Idle,
}

/// What the sender should do after an answer.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Handled {
    /// Forget the cached coordinator of the request (NOT_COORDINATOR, a lost connection).
    pub(crate) relookup: bool,
}

/// The transaction manager (see the module docs).
#[derive(Debug)]
pub(crate) struct TxnManager {
    transactional_id: Arc<str>,
    timeout_ms: i32,
    retry_backoff: Duration,
    state: TransactionState,
    /// The error of AbortableError / FatalError, as calls and sends report it.
    last_error: Option<ProducerError>,
    /// The Kafka code behind `last_error`, when there is one.
    last_code: Option<ErrorCode>,
    producer: Option<(i64, i16)>,
    /// KIP-360: the coordinator takes InitProducerId v3+ with our id and epoch.
    coordinator_bumps: bool,
    /// The abort must be followed by an epoch bump (sequence state is unsure).
    epoch_bump_required: bool,
    /// A partition or offsets were added: EndTxn has something to end.
    transaction_started: bool,
    /// Written to, not yet asked for.
    new_partitions: BTreeSet<TopicPartition>,
    /// In an AddPartitionsToTxn not answered yet.
    pending_partitions: BTreeSet<TopicPartition>,
    /// CONCURRENT_TRANSACTIONS refusals of this transaction's first AddPartitionsToTxn so far.
    concurrent_refusals: u32,
    /// In the transaction: their batches may be sent. Replaced, not changed, so the sender
    /// takes it with one reference count.
    partitions: Arc<BTreeSet<TopicPartition>>,
    /// Queued requests, by priority (insertion order within one).
    queue: Vec<Pending>,
    in_flight: Option<(u64, Pending)>,
    next_token: u64,
    /// The result the current API call waits for, with the state it was started for
    /// (a call repeated after a timeout gets the same one).
    pending_result: Option<(TransactionState, TxnResult)>,
}

impl TxnManager {
    pub(crate) fn new(transactional_id: &str, timeout: Duration, retry_backoff: Duration) -> Self {
        Self {
            transactional_id: Arc::from(transactional_id),
            timeout_ms: i32::try_from(timeout.as_millis()).unwrap_or(i32::MAX),
            retry_backoff,
            state: TransactionState::Uninitialized,
            last_error: None,
            last_code: None,
            producer: None,
            coordinator_bumps: false,
            epoch_bump_required: false,
            transaction_started: false,
            new_partitions: BTreeSet::new(),
            pending_partitions: BTreeSet::new(),
            concurrent_refusals: 0,
            partitions: Arc::new(BTreeSet::new()),
            queue: Vec::new(),
            in_flight: None,
            next_token: 0,
            pending_result: None,
        }
    }

    pub(crate) fn state(&self) -> TransactionState {
        self.state
    }

    /// The producer id and epoch batches are written with.
    pub(crate) fn producer(&self) -> Option<(i64, i16)> {
        self.producer
    }

    /// The partitions whose batches may be sent (none once fatal).
    pub(crate) fn sendable_partitions(&self) -> Arc<BTreeSet<TopicPartition>> {
        if self.state == TransactionState::FatalError {
            Arc::new(BTreeSet::new())
        } else {
            self.partitions.clone()
        }
    }

    /// The fatal error, once in FatalError.
    pub(crate) fn fatal_error(&self) -> Option<ProducerError> {
        (self.state == TransactionState::FatalError)
            .then(|| self.last_error.clone())
            .flatten()
    }

    /// Why queued batches without a sequence number are to be failed now: the transaction is
    /// aborting or must be.
    pub(crate) fn abort_reason(&self) -> Option<String> {
        match self.state {
            TransactionState::AbortableError => Some(
                self.last_error
                    .as_ref()
                    .map_or_else(|| "abortable error".to_owned(), ToString::to_string),
            ),
            TransactionState::AbortingTransaction => Some("the transaction is aborting".into()),
            _ => None,
        }
    }

    // ---- API calls ----

    /// `init_transactions`: InitProducerId for the transactional id.
    pub(crate) fn init_transactions(&mut self) -> Result<TxnResult, ProducerError> {
        self.cached(TransactionState::Initializing, |m| {
            m.transition(TransactionState::Initializing, "init_transactions")?;
            tracing::debug!(transactional_id = %m.transactional_id, "init_transactions");
            Ok(m.enqueue(TxnRequest::InitProducerId { bump: None }))
        })
    }

    /// `begin_transaction`: local only.
    pub(crate) fn begin(&mut self) -> Result<(), ProducerError> {
        self.fail_if_error()?;
        self.transition(TransactionState::InTransaction, "begin_transaction")
    }

    /// `commit_transaction`: EndTxn(commit) once every batch is done.
    pub(crate) fn begin_commit(&mut self) -> Result<TxnResult, ProducerError> {
        self.cached(TransactionState::CommittingTransaction, |m| {
            m.fail_if_error()?;
            m.transition(
                TransactionState::CommittingTransaction,
                "commit_transaction",
            )?;
            Ok(m.begin_completing(true))
        })
    }

    /// `abort_transaction`: unsent batches fail, those in flight are waited for, EndTxn(abort).
    pub(crate) fn begin_abort(&mut self) -> Result<TxnResult, ProducerError> {
        self.cached(TransactionState::AbortingTransaction, |m| {
            if m.state != TransactionState::AbortableError {
                m.fail_if_error()?;
            }
            // The cause decides whether EndTxn can go (the move clears it).
            let cause = m.last_code;
            m.transition(TransactionState::AbortingTransaction, "abort_transaction")?;
            m.last_code = cause;
            m.new_partitions.clear();
            Ok(m.begin_completing(false))
        })
    }

    /// `send_offsets_to_transaction`: AddOffsetsToTxn, then TxnOffsetCommit.
    pub(crate) fn send_offsets(
        &mut self,
        offsets: Offsets,
        group: ConsumerGroupMetadata,
    ) -> Result<TxnResult, ProducerError> {
        self.fail_if_error()?;
        if self.state != TransactionState::InTransaction {
            return Err(self.invalid("send_offsets_to_transaction"));
        }
        tracing::debug!(group = %group.group_id, count = offsets.len(), "adding offsets to the transaction");
        Ok(self.enqueue(TxnRequest::AddOffsets { group, offsets }))
    }

    /// A send to `tp`: allowed only inside a transaction without an error. Registers the
    /// partition for the next AddPartitionsToTxn; true when it is new.
    pub(crate) fn check_send(&mut self, tp: &TopicPartition) -> Result<bool, ProducerError> {
        self.fail_if_error()?;
        if self.producer.is_none() || self.state != TransactionState::InTransaction {
            return Err(self.invalid("send"));
        }
        if self.partitions.contains(tp)
            || self.pending_partitions.contains(tp)
            || self.new_partitions.contains(tp)
        {
            return Ok(false);
        }
        tracing::debug!(%tp, "adding a partition to the transaction");
        self.new_partitions.insert(tp.clone());
        Ok(true)
    }

    // ---- the sender's side ----

    /// The next request to send, if any (see [`Next`]). `has_incomplete`: batches are queued
    /// or in flight (EndTxn waits for them).
    pub(crate) fn next_request(&mut self, has_incomplete: bool, now: Instant) -> Next {
        if self.in_flight.is_some() {
            return Next::Idle;
        }
        if !self.new_partitions.is_empty() {
            self.queue_add_partitions();
        }
        loop {
            let Some(first) = self.queue.first() else {
                return Next::Idle;
            };
            if matches!(first.request, TxnRequest::EndTxn { .. }) && has_incomplete {
                return Next::Idle;
            }
            if let Some(t) = first.not_before.filter(|t| *t > now) {
                return Next::Wait(t - now);
            }
            let p = self.queue.remove(0);
            if self.state.has_error() {
                // Nothing goes out in an error state; the abort has moved the state on
                // before its own requests are taken.
                tracing::trace!(request = p.request.name(), "not sent: error state");
                p.result.fail(self.current_error());
                continue;
            }
            if matches!(p.request, TxnRequest::EndTxn { .. }) && !self.transaction_started {
                tracing::debug!("no partition or offsets were added: nothing to end");
                p.result.done();
                self.complete_transaction();
                continue;
            }
            let Some(producer) = self.producer.or(match p.request {
                TxnRequest::InitProducerId { .. } => Some((-1, -1)),
                _ => None,
            }) else {
                p.result.fail(ProducerError::Fatal(format!(
                    "{} without a producer id",
                    p.request.name()
                )));
                continue;
            };
            let token = self.next_token;
            self.next_token += 1;
            let out = Outgoing {
                token,
                request: p.request.clone(),
                transactional_id: self.transactional_id.clone(),
                producer,
                timeout_ms: self.timeout_ms,
            };
            tracing::debug!(
                request = p.request.name(),
                "sending a transactional request"
            );
            self.in_flight = Some((token, p));
            return Next::Send(out);
        }
    }

    /// The answer to the request `token` (at `version`), or why there was none.
    pub(crate) fn handle_response(
        &mut self,
        token: u64,
        version: i16,
        answer: Result<ResponseBody, NetError>,
        now: Instant,
    ) -> Handled {
        let Some((t, p)) = self.in_flight.take() else {
            return Handled::default();
        };
        if t != token {
            self.in_flight = Some((t, p));
            return Handled::default();
        }
        let body = match answer {
            Ok(b) => b,
            Err(e) => return self.on_net_error(p, &e, now),
        };
        let Some(answer) = Answer::from_body(&p.request, body) else {
            let e = ProducerError::Fatal(format!("{} answered with another api", p.request.name()));
            self.fatal(&p.result, e, None);
            return Handled::default();
        };
        match answer {
            Answer::InitProducerId {
                code,
                producer_id,
                producer_epoch,
            } => self.on_init_producer_id(p, version, code, (producer_id, producer_epoch), now),
            Answer::AddPartitions(results) => self.on_add_partitions(p, &results, now),
            Answer::AddOffsets(code) => self.on_add_offsets(p, code, now),
            Answer::TxnOffsetCommit(results) => self.on_txn_offset_commit(p, &results, now),
            Answer::EndTxn(code) => self.on_end_txn(p, code, now),
        }
    }

    /// A batch of the transaction failed with `e`: fatal for fencing and authorization,
    /// otherwise the transaction must be aborted (with an epoch bump where the coordinator
    /// supports one: the partition's sequence state is unsure).
    pub(crate) fn on_batch_failed(&mut self, e: &ProducerError) {
        if self.state == TransactionState::FatalError {
            return;
        }
        let code = e.code();
        if e.is_fenced() {
            self.enter_fatal(e.clone(), code);
            return;
        }
        match code {
            Some(ErrorCode::PRODUCER_FENCED) => {
                let err = ProducerError::Fenced(e.to_string());
                self.enter_fatal(err, code);
            }
            Some(
                ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED
                | ErrorCode::CLUSTER_AUTHORIZATION_FAILED
                | ErrorCode::UNSUPPORTED_VERSION,
            ) => self.enter_fatal(ProducerError::Fatal(e.to_string()), code),
            _ => {
                if self.coordinator_bumps && self.state != TransactionState::AbortingTransaction {
                    self.epoch_bump_required = true;
                }
                self.enter_abortable(e.clone(), code);
            }
        }
    }

    /// The producer is closing: every waiting call fails.
    pub(crate) fn close(&mut self) {
        let e = ProducerError::Closed(Some("the producer closed".into()));
        for p in self.queue.drain(..) {
            p.result.fail(e.clone());
        }
        if let Some((_, p)) = self.in_flight.take() {
            p.result.fail(e.clone());
        }
        if let Some((_, r)) = &self.pending_result {
            r.fail(e);
        }
    }

    // ---- answers ----

    fn on_net_error(&mut self, p: Pending, e: &NetError, now: Instant) -> Handled {
        let name = p.request.name();
        match e.error_code() {
            // From the coordinator lookup.
            Some(ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED) => {
                self.fatal(
                    &p.result,
                    ProducerError::Fatal(format!("{name}: {e}")),
                    e.error_code(),
                );
                Handled::default()
            }
            Some(ErrorCode::GROUP_AUTHORIZATION_FAILED) => {
                self.abortable(&p.result, ProducerError::from(e.clone()), e.error_code());
                Handled::default()
            }
            Some(c) if !c.is_retriable() && c != ErrorCode::NOT_COORDINATOR => {
                self.fatal(
                    &p.result,
                    ProducerError::Fatal(format!("{name}: {e}")),
                    Some(c),
                );
                Handled::default()
            }
            _ if matches!(e, NetError::UnsupportedApi { .. }) => {
                self.fatal(
                    &p.result,
                    ProducerError::Fatal(format!("{name}: {e}")),
                    None,
                );
                Handled::default()
            }
            _ => {
                tracing::debug!(request = name, error = %e, "transactional request failed; retrying");
                self.reenqueue(p, self.retry_backoff, now);
                Handled { relookup: true }
            }
        }
    }

    fn on_init_producer_id(
        &mut self,
        p: Pending,
        version: i16,
        code: ErrorCode,
        producer: (i64, i16),
        now: Instant,
    ) -> Handled {
        match code {
            ErrorCode::NONE => {
                tracing::debug!(
                    producer_id = producer.0,
                    epoch = producer.1,
                    "transactional producer id"
                );
                self.producer = Some(producer);
                self.coordinator_bumps = version >= 3;
                if let Err(e) = self.transition(TransactionState::Ready, "InitProducerId") {
                    tracing::warn!(error = %e, "InitProducerId answered in an unexpected state");
                }
                self.last_error = None;
                self.last_code = None;
                p.result.done();
                Handled::default()
            }
            ErrorCode::NOT_COORDINATOR | ErrorCode::COORDINATOR_NOT_AVAILABLE => {
                self.reenqueue(p, self.retry_backoff, now);
                Handled { relookup: true }
            }
            ErrorCode::COORDINATOR_LOAD_IN_PROGRESS | ErrorCode::CONCURRENT_TRANSACTIONS => {
                self.reenqueue(p, self.retry_backoff, now);
                Handled::default()
            }
            ErrorCode::INVALID_PRODUCER_EPOCH | ErrorCode::PRODUCER_FENCED => {
                self.fenced(&p.result, "InitProducerId", code);
                Handled::default()
            }
            c => {
                self.fatal(&p.result, kafka_fatal("InitProducerId", c), Some(c));
                Handled::default()
            }
        }
    }

    fn on_add_partitions(
        &mut self,
        p: Pending,
        results: &[(TopicPartition, ErrorCode)],
        now: Instant,
    ) -> Handled {
        let mut unauthorized = Vec::new();
        let mut other = Vec::new();
        for (tp, code) in results {
            match *code {
                ErrorCode::NONE => {}
                ErrorCode::COORDINATOR_NOT_AVAILABLE | ErrorCode::NOT_COORDINATOR => {
                    self.reenqueue(p, self.retry_backoff, now);
                    return Handled { relookup: true };
                }
                ErrorCode::CONCURRENT_TRANSACTIONS => {
                    let backoff = if self.partitions.is_empty() {
                        let doubled = ADD_PARTITIONS_RETRY_BACKOFF
                            .saturating_mul(1 << self.concurrent_refusals.min(16));
                        self.concurrent_refusals = self.concurrent_refusals.saturating_add(1);
                        doubled.min(self.retry_backoff)
                    } else {
                        self.retry_backoff
                    };
                    self.reenqueue(p, backoff, now);
                    return Handled::default();
                }
                ErrorCode::COORDINATOR_LOAD_IN_PROGRESS | ErrorCode::UNKNOWN_TOPIC_OR_PARTITION => {
                    self.reenqueue(p, self.retry_backoff, now);
                    return Handled::default();
                }
                ErrorCode::INVALID_PRODUCER_EPOCH | ErrorCode::PRODUCER_FENCED => {
                    self.fenced(&p.result, "AddPartitionsToTxn", *code);
                    return Handled::default();
                }
                ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED | ErrorCode::INVALID_TXN_STATE => {
                    self.fatal(
                        &p.result,
                        kafka_fatal("AddPartitionsToTxn", *code),
                        Some(*code),
                    );
                    return Handled::default();
                }
                ErrorCode::UNKNOWN_PRODUCER_ID | ErrorCode::INVALID_PRODUCER_ID_MAPPING => {
                    self.abortable_if_possible(
                        &p.result,
                        kafka_error("AddPartitionsToTxn", *code),
                        *code,
                    );
                    return Handled::default();
                }
                ErrorCode::TOPIC_AUTHORIZATION_FAILED => unauthorized.push(tp.clone()),
                // Skipped because another partition failed.
                ErrorCode::OPERATION_NOT_ATTEMPTED => {}
                c => other.push((tp.clone(), c)),
            }
        }
        // Out of pending whatever the outcome: after a failure the batches are aborted, and
        // retries of the partitions that were added must still go out.
        let TxnRequest::AddPartitions { partitions } = &p.request else {
            return Handled::default();
        };
        for tp in partitions {
            self.pending_partitions.remove(tp);
        }
        if let Some(tp) = unauthorized.first() {
            let code = ErrorCode::TOPIC_AUTHORIZATION_FAILED;
            let e = ProducerError::Kafka {
                topic: tp.topic.to_string(),
                partition: tp.partition,
                code,
                message: Some("AddPartitionsToTxn".into()),
            };
            self.abortable(&p.result, e, Some(code));
        } else if let Some((tp, code)) = other.first() {
            let e = ProducerError::Kafka {
                topic: tp.topic.to_string(),
                partition: tp.partition,
                code: *code,
                message: Some("AddPartitionsToTxn".into()),
            };
            self.abortable(&p.result, e, Some(*code));
        } else if results
            .iter()
            .any(|(_, c)| *c == ErrorCode::OPERATION_NOT_ATTEMPTED)
        {
            let e = kafka_error("AddPartitionsToTxn", ErrorCode::OPERATION_NOT_ATTEMPTED);
            self.abortable(&p.result, e, Some(ErrorCode::OPERATION_NOT_ATTEMPTED));
        } else {
            let mut added = (*self.partitions).clone();
            added.extend(partitions.iter().cloned());
            tracing::debug!(
                partitions = partitions.len(),
                "partitions added to the transaction"
            );
            self.partitions = Arc::new(added);
            self.transaction_started = true;
            p.result.done();
        }
        Handled::default()
    }

    fn on_add_offsets(&mut self, p: Pending, code: ErrorCode, now: Instant) -> Handled {
        match code {
            ErrorCode::NONE => {
                let TxnRequest::AddOffsets { group, offsets } = p.request else {
                    return Handled::default();
                };
                self.transaction_started = true;
                // The call completes when the offsets are committed.
                self.insert(Pending {
                    request: TxnRequest::TxnOffsetCommit { group, offsets },
                    result: p.result,
                    not_before: None,
                });
                Handled::default()
            }
            ErrorCode::COORDINATOR_NOT_AVAILABLE | ErrorCode::NOT_COORDINATOR => {
                self.reenqueue(p, self.retry_backoff, now);
                Handled { relookup: true }
            }
            ErrorCode::COORDINATOR_LOAD_IN_PROGRESS | ErrorCode::CONCURRENT_TRANSACTIONS => {
                self.reenqueue(p, self.retry_backoff, now);
                Handled::default()
            }
            ErrorCode::UNKNOWN_PRODUCER_ID | ErrorCode::INVALID_PRODUCER_ID_MAPPING => {
                self.abortable_if_possible(&p.result, kafka_error("AddOffsetsToTxn", code), code);
                Handled::default()
            }
            ErrorCode::INVALID_PRODUCER_EPOCH | ErrorCode::PRODUCER_FENCED => {
                self.fenced(&p.result, "AddOffsetsToTxn", code);
                Handled::default()
            }
            ErrorCode::GROUP_AUTHORIZATION_FAILED => {
                self.abortable(&p.result, kafka_error("AddOffsetsToTxn", code), Some(code));
                Handled::default()
            }
            c => {
                self.fatal(&p.result, kafka_fatal("AddOffsetsToTxn", c), Some(c));
                Handled::default()
            }
        }
    }

    fn on_txn_offset_commit(
        &mut self,
        mut p: Pending,
        results: &[(TopicPartition, ErrorCode)],
        now: Instant,
    ) -> Handled {
        let mut relookup = false;
        let TxnRequest::TxnOffsetCommit { offsets, .. } = &mut p.request else {
            return Handled::default();
        };
        for (tp, code) in results {
            match *code {
                ErrorCode::NONE => {
                    offsets.remove(tp);
                }
                ErrorCode::COORDINATOR_NOT_AVAILABLE
                | ErrorCode::NOT_COORDINATOR
                | ErrorCode::REQUEST_TIMED_OUT => relookup = true,
                // Retried at the same coordinator.
                ErrorCode::UNKNOWN_TOPIC_OR_PARTITION | ErrorCode::COORDINATOR_LOAD_IN_PROGRESS => {
                }
                c @ (ErrorCode::GROUP_AUTHORIZATION_FAILED
                | ErrorCode::FENCED_INSTANCE_ID
                | ErrorCode::UNKNOWN_MEMBER_ID
                | ErrorCode::ILLEGAL_GENERATION) => {
                    self.abortable(&p.result, kafka_error("TxnOffsetCommit", c), Some(c));
                    return Handled::default();
                }
                c @ (ErrorCode::INVALID_PRODUCER_EPOCH | ErrorCode::PRODUCER_FENCED) => {
                    self.fenced(&p.result, "TxnOffsetCommit", c);
                    return Handled::default();
                }
                c => {
                    self.fatal(&p.result, kafka_fatal("TxnOffsetCommit", c), Some(c));
                    return Handled::default();
                }
            }
        }
        if offsets.is_empty() {
            p.result.done();
            Handled::default()
        } else {
            self.reenqueue(p, self.retry_backoff, now);
            Handled { relookup }
        }
    }

    fn on_end_txn(&mut self, p: Pending, code: ErrorCode, now: Instant) -> Handled {
        match code {
            ErrorCode::NONE => {
                tracing::debug!(state = ?self.state, "transaction ended");
                self.complete_transaction();
                p.result.done();
                Handled::default()
            }
            ErrorCode::COORDINATOR_NOT_AVAILABLE | ErrorCode::NOT_COORDINATOR => {
                self.reenqueue(p, self.retry_backoff, now);
                Handled { relookup: true }
            }
            ErrorCode::COORDINATOR_LOAD_IN_PROGRESS | ErrorCode::CONCURRENT_TRANSACTIONS => {
                self.reenqueue(p, self.retry_backoff, now);
                Handled::default()
            }
            ErrorCode::INVALID_PRODUCER_EPOCH | ErrorCode::PRODUCER_FENCED => {
                self.fenced(&p.result, "EndTxn", code);
                Handled::default()
            }
            ErrorCode::UNKNOWN_PRODUCER_ID | ErrorCode::INVALID_PRODUCER_ID_MAPPING => {
                self.abortable_if_possible(&p.result, kafka_error("EndTxn", code), code);
                Handled::default()
            }
            c => {
                self.fatal(&p.result, kafka_fatal("EndTxn", c), Some(c));
                Handled::default()
            }
        }
    }

    // ---- helpers ----

    /// Java's cached-result rule: a call repeated while its operation runs gets the same
    /// result to wait for.
    fn cached(
        &mut self,
        target: TransactionState,
        start: impl FnOnce(&mut Self) -> Result<TxnResult, ProducerError>,
    ) -> Result<TxnResult, ProducerError> {
        if let Some((t, r)) = &self.pending_result {
            if *t == target && (self.state == target || !r.is_completed()) {
                let r = r.clone();
                if r.is_completed() {
                    self.pending_result = None;
                }
                return Ok(r);
            }
        }
        let r = start(self)?;
        self.pending_result = Some((target, r.clone()));
        Ok(r)
    }

    fn begin_completing(&mut self, commit: bool) -> TxnResult {
        if !self.new_partitions.is_empty() {
            self.queue_add_partitions();
        }
        // INVALID_PRODUCER_ID_MAPPING: the coordinator would refuse EndTxn; go straight to
        // InitProducerId (which aborts what is open).
        if self.last_code != Some(ErrorCode::INVALID_PRODUCER_ID_MAPPING) {
            let r = self.enqueue(TxnRequest::EndTxn { commit });
            if !self.epoch_bump_required {
                return r;
            }
        }
        // The call waits for the bump, which follows EndTxn (or replaces it).
        tracing::debug!("the transaction's end is followed by an epoch bump");
        self.enqueue(TxnRequest::InitProducerId {
            bump: self.producer,
        })
    }

    fn complete_transaction(&mut self) {
        let target = if self.epoch_bump_required {
            TransactionState::Initializing
        } else {
            TransactionState::Ready
        };
        if let Err(e) = self.transition(target, "EndTxn") {
            tracing::warn!(error = %e, "transaction completed in an unexpected state");
        }
        self.last_error = None;
        self.last_code = None;
        self.epoch_bump_required = false;
        self.transaction_started = false;
        self.new_partitions.clear();
        self.pending_partitions.clear();
        self.concurrent_refusals = 0;
        self.partitions = Arc::new(BTreeSet::new());
    }

    fn queue_add_partitions(&mut self) {
        let new = std::mem::take(&mut self.new_partitions);
        self.pending_partitions.extend(new.iter().cloned());
        // Merge into an AddPartitionsToTxn still queued rather than queue a second one.
        for p in &mut self.queue {
            if let TxnRequest::AddPartitions { partitions } = &mut p.request {
                partitions.extend(new);
                return;
            }
        }
        self.enqueue(TxnRequest::AddPartitions { partitions: new });
    }

    fn enqueue(&mut self, request: TxnRequest) -> TxnResult {
        let result = TxnResult::default();
        self.insert(Pending {
            request,
            result: result.clone(),
            not_before: None,
        });
        result
    }

    fn insert(&mut self, p: Pending) {
        let prio = p.request.priority();
        let pos = self
            .queue
            .iter()
            .position(|q| q.request.priority() > prio)
            .unwrap_or(self.queue.len());
        self.queue.insert(pos, p);
    }

    fn reenqueue(&mut self, mut p: Pending, backoff: Duration, now: Instant) {
        p.not_before = Some(now + backoff);
        self.insert(p);
    }

    fn transition(
        &mut self,
        target: TransactionState,
        operation: &'static str,
    ) -> Result<(), ProducerError> {
        if !self.state.can_move_to(target) {
            return Err(self.invalid(operation));
        }
        tracing::debug!(from = ?self.state, to = ?target, "transaction state");
        if !matches!(
            target,
            TransactionState::AbortableError | TransactionState::FatalError
        ) {
            self.last_error = None;
            self.last_code = None;
        }
        self.state = target;
        Ok(())
    }

    fn invalid(&self, operation: &'static str) -> ProducerError {
        ProducerError::InvalidTransactionState {
            operation,
            state: self.state,
        }
    }

    /// The error a call or send gets in an error state.
    fn current_error(&self) -> ProducerError {
        match (&self.state, &self.last_error) {
            (TransactionState::AbortableError, Some(e)) => {
                ProducerError::Abortable(Box::new(e.clone()))
            }
            (_, Some(e)) => e.clone(),
            _ => ProducerError::Fatal("transaction manager in an error state".into()),
        }
    }

    fn fail_if_error(&self) -> Result<(), ProducerError> {
        if self.state.has_error() {
            return Err(self.current_error());
        }
        Ok(())
    }

    fn enter_abortable(&mut self, cause: ProducerError, code: Option<ErrorCode>) {
        if self.state == TransactionState::AbortingTransaction {
            tracing::debug!(error = %cause, "already aborting");
            return;
        }
        if !self.state.can_move_to(TransactionState::AbortableError) {
            tracing::debug!(state = ?self.state, error = %cause, "abortable error outside a transaction");
            return;
        }
        tracing::info!(error = %cause, "the transaction must be aborted");
        self.state = TransactionState::AbortableError;
        self.last_error = Some(cause);
        self.last_code = code;
    }

    fn enter_fatal(&mut self, e: ProducerError, code: Option<ErrorCode>) {
        tracing::warn!(error = %e, "transactional producer in a fatal state");
        self.state = TransactionState::FatalError;
        self.last_error = Some(e.clone());
        self.last_code = code;
        if let Some((_, r)) = &self.pending_result {
            r.fail(e);
        }
    }

    fn fatal(&mut self, result: &TxnResult, e: ProducerError, code: Option<ErrorCode>) {
        result.fail(e.clone());
        self.enter_fatal(e, code);
    }

    fn fenced(&mut self, result: &TxnResult, operation: &str, code: ErrorCode) {
        let e = ProducerError::Fenced(format!(
            "{operation} answered {code}: another producer with transactional.id {} has a newer epoch",
            self.transactional_id
        ));
        self.fatal(result, e, Some(code));
    }

    fn abortable(&mut self, result: &TxnResult, cause: ProducerError, code: Option<ErrorCode>) {
        result.fail(ProducerError::Abortable(Box::new(cause.clone())));
        self.enter_abortable(cause, code);
    }

    /// KIP-360: abortable with an epoch bump when the coordinator can bump, else fatal.
    fn abortable_if_possible(&mut self, result: &TxnResult, cause: ProducerError, code: ErrorCode) {
        if self.coordinator_bumps {
            self.epoch_bump_required = true;
            self.abortable(result, cause, Some(code));
        } else {
            self.fatal(result, ProducerError::Fatal(cause.to_string()), Some(code));
        }
    }
}

fn kafka_error(operation: &'static str, code: ErrorCode) -> ProducerError {
    ProducerError::Coordinator { operation, code }
}

fn kafka_fatal(operation: &str, code: ErrorCode) -> ProducerError {
    ProducerError::Fatal(format!("{operation} answered {code}"))
}
