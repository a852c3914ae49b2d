//! The transactional requests: InitProducerId, AddPartitionsToTxn (and its verification
//! form), AddOffsetsToTxn and EndTxn, with Kafka's checks and error codes in Kafka's order.
//!
//! Each request is answered through [`Output::Answer`](super::Output): at once when it is
//! refused or changes nothing, otherwise once its record is written.

use std::collections::BTreeSet;

use kafka_protocol::error_code::ErrorCode;

use super::manager::{AfterWrite, TransactionManager};
use super::state::{
    NO_PRODUCER_EPOCH, NO_PRODUCER_ID, TransitionError, TxnMetadata, TxnState, TxnTransit,
    epoch_exhausted,
};
use super::types::{
    AddOffsetsRequest, AddPartitionsRequest, AnswerKind, EndTxnRequest, InitProducerIdRequest,
    PartitionResults, ProducerIdSource, RequestId,
};
use crate::coordinator::OFFSETS_TOPIC;
use crate::log::TopicPartition;

/// A request's next step: a change to write, or an answer right away (`Err`, which may be
/// NONE when there is nothing to change).
type Step = Result<(TxnTransit, AfterWrite), ErrorCode>;

fn bug(e: TransitionError) -> ErrorCode {
    tracing::error!(error = %e, "transaction state transition refused");
    ErrorCode::UNKNOWN_SERVER_ERROR
}

impl TransactionManager {
    fn run(&mut self, request: RequestId, kind: AnswerKind, id: &str, step: Step) {
        match step {
            Ok((transit, then)) => self.emit_write(id, transit, then),
            Err(code) => self.answer(request, kind.with(code)),
        }
    }

    /// InitProducerId with a transactional id. A new id gets a producer id from `ids`; a
    /// known one an epoch bump (a new producer id once the epoch is exhausted). An open
    /// transaction of the previous producer is aborted first, with the epoch bumped to fence
    /// it, and the caller is answered CONCURRENT_TRANSACTIONS to retry (the retry bumps
    /// again). With KIP-360's producer id and epoch, a producer that is not the current one
    /// gets PRODUCER_FENCED.
    pub fn init_producer_id(
        &mut self,
        request: RequestId,
        req: &InitProducerIdRequest,
        ids: &mut dyn ProducerIdSource,
        now: i64,
    ) {
        let step = self.init_step(request, req, ids, now);
        self.run(
            request,
            AnswerKind::InitProducerId,
            &req.transactional_id,
            step,
        );
    }

    fn init_step(
        &mut self,
        request: RequestId,
        req: &InitProducerIdRequest,
        ids: &mut dyn ProducerIdSource,
        now: i64,
    ) -> Step {
        let id = req.transactional_id.as_str();
        let timeout = req.transaction_timeout_ms;
        if id.is_empty() {
            return Err(ErrorCode::INVALID_REQUEST);
        }
        if !self.config.valid_timeout(timeout) {
            return Err(ErrorCode::INVALID_TRANSACTION_TIMEOUT);
        }
        let expected = match (req.producer_id, req.producer_epoch) {
            (NO_PRODUCER_ID, NO_PRODUCER_EPOCH) => None,
            (NO_PRODUCER_ID, _) | (_, NO_PRODUCER_EPOCH) => return Err(ErrorCode::INVALID_REQUEST),
            (p, e) => Some((p, e)),
        };
        self.check_partition(id)?;
        if !self.txns.contains_key(id) {
            let pid = ids.next_producer_id()?;
            self.txns
                .insert(id.to_owned(), TxnMetadata::new(id, pid, timeout, now));
        }
        let md = self
            .txns
            .get_mut(id)
            .ok_or(ErrorCode::UNKNOWN_SERVER_ERROR)?;
        if md.pending_transition() {
            return Err(ErrorCode::CONCURRENT_TRANSACTIONS);
        }
        if let Some((pid, epoch)) = expected {
            // The metadata was just made (a producer recovering from UNKNOWN_PRODUCER_ID),
            // the producer is the current one (its epoch is checked below), or it retries a
            // rotation it never heard back from.
            let valid = md.producer_epoch == NO_PRODUCER_EPOCH
                || pid == md.producer_id
                || (pid == md.last_producer_id && epoch_exhausted(epoch));
            if !valid {
                return Err(ErrorCode::PRODUCER_FENCED);
            }
        }
        match md.state {
            TxnState::PrepareAbort | TxnState::PrepareCommit => {
                Err(ErrorCode::CONCURRENT_TRANSACTIONS)
            }
            TxnState::Empty | TxnState::CompleteAbort | TxnState::CompleteCommit => {
                let rotate =
                    md.epoch_exhausted() && expected.is_none_or(|(_, e)| e == md.producer_epoch);
                let t = if rotate {
                    let new_pid = ids.next_producer_id()?;
                    tracing::info!(
                        transactional_id = id,
                        old = md.producer_id,
                        new = new_pid,
                        "producer epoch exhausted, new producer id"
                    );
                    md.prepare_producer_id_rotation(new_pid, timeout, now, expected.is_some())
                } else {
                    let epochs = md.next_epochs(expected.map(|(_, e)| e))?;
                    md.prepare_epoch_bump(timeout, epochs, now)
                };
                Ok((
                    t.map_err(bug)?,
                    AfterWrite::Answer(request, AnswerKind::InitProducerId),
                ))
            }
            TxnState::Ongoing => {
                tracing::info!(
                    transactional_id = id,
                    epoch = md.producer_epoch,
                    "fencing the previous producer: aborting its open transaction"
                );
                let t = md.prepare_epoch_fence_abort(now).map_err(bug)?;
                Ok((
                    t,
                    AfterWrite::Prepared {
                        answer: Some((
                            request,
                            AnswerKind::InitProducerId,
                            ErrorCode::CONCURRENT_TRANSACTIONS,
                        )),
                        epoch_fence: true,
                    },
                ))
            }
            TxnState::Dead | TxnState::PrepareEpochFence => {
                tracing::error!(transactional_id = id, state = %md.state, "illegal state for InitProducerId");
                Err(ErrorCode::UNKNOWN_SERVER_ERROR)
            }
        }
    }

    /// AddPartitionsToTxn from a client (v0-3, or a v4+ entry without `verify_only`):
    /// answered with one code for all its partitions. A `verify_only` entry belongs to
    /// [`TransactionManager::verify_partitions`] and is answered INVALID_REQUEST here.
    pub fn add_partitions(&mut self, request: RequestId, req: &AddPartitionsRequest, now: i64) {
        let step = if req.verify_only {
            Err(ErrorCode::INVALID_REQUEST)
        } else {
            self.add_step(
                request,
                AnswerKind::AddPartitions,
                &req.transactional_id,
                req.producer_id,
                req.producer_epoch,
                &req.partitions,
                now,
            )
        };
        self.run(
            request,
            AnswerKind::AddPartitions,
            &req.transactional_id,
            step,
        );
    }

    /// AddOffsetsToTxn: the `__consumer_offsets` partition of the group (out of
    /// `offsets_partitions`) joins the transaction, so that its TxnOffsetCommits get the
    /// transaction's marker.
    pub fn add_offsets(
        &mut self,
        request: RequestId,
        req: &AddOffsetsRequest,
        offsets_partitions: i32,
        now: i64,
    ) {
        let tp = TopicPartition::new(
            OFFSETS_TOPIC,
            crate::coordinator::partition_for(&req.group_id, offsets_partitions),
        );
        let partitions = BTreeSet::from([tp]);
        let step = self.add_step(
            request,
            AnswerKind::AddOffsets,
            &req.transactional_id,
            req.producer_id,
            req.producer_epoch,
            &partitions,
            now,
        );
        self.run(request, AnswerKind::AddOffsets, &req.transactional_id, step);
    }

    #[allow(clippy::too_many_arguments)]
    fn add_step(
        &mut self,
        request: RequestId,
        kind: AnswerKind,
        id: &str,
        producer_id: i64,
        producer_epoch: i16,
        partitions: &BTreeSet<TopicPartition>,
        now: i64,
    ) -> Step {
        if id.is_empty() {
            return Err(ErrorCode::INVALID_REQUEST);
        }
        self.check_partition(id)?;
        let md = self
            .txns
            .get_mut(id)
            .ok_or(ErrorCode::INVALID_PRODUCER_ID_MAPPING)?;
        if md.producer_id != producer_id {
            return Err(ErrorCode::INVALID_PRODUCER_ID_MAPPING);
        }
        if md.producer_epoch != producer_epoch {
            return Err(ErrorCode::PRODUCER_FENCED);
        }
        if md.pending_transition()
            || matches!(md.state, TxnState::PrepareCommit | TxnState::PrepareAbort)
        {
            return Err(ErrorCode::CONCURRENT_TRANSACTIONS);
        }
        if md.state == TxnState::Ongoing && partitions.is_subset(&md.partitions) {
            return Err(ErrorCode::NONE);
        }
        let t = md.prepare_add_partitions(partitions, now).map_err(bug)?;
        Ok((t, AfterWrite::Answer(request, kind)))
    }

    /// AddPartitionsToTxn v4+ with `verify_only` (KIP-890 part 1): whether each partition is
    /// in the producer's open transaction, changing nothing. A partition that is not gets
    /// TRANSACTION_ABORTABLE (the producer must abort: its write came without the partition
    /// being added).
    pub fn verify_partitions(&self, req: &AddPartitionsRequest) -> PartitionResults {
        let id = req.transactional_id.as_str();
        if id.is_empty() {
            return PartitionResults::all(req, ErrorCode::INVALID_REQUEST);
        }
        if let Err(e) = self.check_partition(id) {
            return PartitionResults::all(req, e);
        }
        let Some(md) = self.txns.get(id) else {
            return PartitionResults::all(req, ErrorCode::INVALID_PRODUCER_ID_MAPPING);
        };
        if md.producer_id != req.producer_id {
            return PartitionResults::all(req, ErrorCode::INVALID_PRODUCER_ID_MAPPING);
        }
        if md.producer_epoch != req.producer_epoch {
            return PartitionResults::all(req, ErrorCode::PRODUCER_FENCED);
        }
        if matches!(md.state, TxnState::PrepareCommit | TxnState::PrepareAbort) {
            return PartitionResults::all(req, ErrorCode::CONCURRENT_TRANSACTIONS);
        }
        PartitionResults {
            transactional_id: id.to_owned(),
            partitions: req
                .partitions
                .iter()
                .map(|tp| {
                    let e = if md.partitions.contains(tp) {
                        ErrorCode::NONE
                    } else {
                        ErrorCode::TRANSACTION_ABORTABLE
                    };
                    (tp.clone(), e)
                })
                .collect(),
        }
    }

    /// EndTxn: PrepareCommit or PrepareAbort is written, the client answered, then the
    /// markers go out ([`super::Output::Markers`]) and, once they are written, the
    /// completion. A retry of an end already complete gets NONE, of one under way
    /// CONCURRENT_TRANSACTIONS; the other end, or no transaction, INVALID_TXN_STATE.
    pub fn end_txn(&mut self, request: RequestId, req: &EndTxnRequest, now: i64) {
        let step = self.end_step(request, req, now);
        self.run(request, AnswerKind::EndTxn, &req.transactional_id, step);
    }

    fn end_step(&mut self, request: RequestId, req: &EndTxnRequest, now: i64) -> Step {
        let id = req.transactional_id.as_str();
        if id.is_empty() {
            return Err(ErrorCode::INVALID_REQUEST);
        }
        self.check_partition(id)?;
        let md = self
            .txns
            .get_mut(id)
            .ok_or(ErrorCode::INVALID_PRODUCER_ID_MAPPING)?;
        if md.producer_id != req.producer_id {
            return Err(ErrorCode::INVALID_PRODUCER_ID_MAPPING);
        }
        if md.producer_epoch != req.producer_epoch {
            return Err(ErrorCode::PRODUCER_FENCED);
        }
        if md.pending_transition() {
            return Err(ErrorCode::CONCURRENT_TRANSACTIONS);
        }
        let commit = req.commit;
        let other_end = |same: bool, code: ErrorCode| {
            if same {
                code
            } else {
                tracing::debug!(transactional_id = id, state = %md.state, commit, "EndTxn in the wrong state");
                ErrorCode::INVALID_TXN_STATE
            }
        };
        match md.state {
            TxnState::Ongoing => {
                let to = if commit {
                    TxnState::PrepareCommit
                } else {
                    TxnState::PrepareAbort
                };
                let t = md.prepare_abort_or_commit(to, now).map_err(bug)?;
                Ok((
                    t,
                    AfterWrite::Prepared {
                        answer: Some((request, AnswerKind::EndTxn, ErrorCode::NONE)),
                        epoch_fence: false,
                    },
                ))
            }
            TxnState::CompleteCommit => Err(other_end(commit, ErrorCode::NONE)),
            TxnState::CompleteAbort => Err(other_end(!commit, ErrorCode::NONE)),
            TxnState::PrepareCommit => Err(other_end(commit, ErrorCode::CONCURRENT_TRANSACTIONS)),
            TxnState::PrepareAbort => Err(other_end(!commit, ErrorCode::CONCURRENT_TRANSACTIONS)),
            TxnState::Empty => Err(other_end(false, ErrorCode::NONE)),
            TxnState::Dead | TxnState::PrepareEpochFence => {
                tracing::error!(transactional_id = id, state = %md.state, "illegal state for EndTxn");
                Err(ErrorCode::UNKNOWN_SERVER_ERROR)
            }
        }
    }
}
