//! Every transactional id of this coordinator: ownership of `__transaction_state`
//! partitions, loading them from records, the outcome of writes and markers, timers, and
//! DescribeTransactions/ListTransactions. The requests themselves are in `ops.rs`.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use kafka_protocol::error_code::ErrorCode;

use super::config::TxnConfig;
use super::records::{TxnLogValue, TxnRecord};
use super::state::{NO_PRODUCER_EPOCH, TxnMetadata, TxnState, TxnTransit};
use super::types::{
    Answer, AnswerKind, InitProducerIdResult, ListFilter, MarkerRequest, Output, RequestId,
    TxnDescription, TxnList, TxnListing, TxnResult, TxnWrite, WriteId, write_error_for_client,
};
use crate::log::TopicPartition;

/// How long after a failed completion record it is written again (Kafka retries its
/// transaction log appends from the marker sender's loop).
pub const COMPLETION_RETRY_MS: i64 = 100;

/// What happens once a write is acknowledged (or fails).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum AfterWrite {
    /// InitProducerId (Empty) or AddPartitions/AddOffsets (Ongoing): answer the request.
    Answer(RequestId, AnswerKind),
    /// A PrepareCommit/PrepareAbort: answer `answer` (request, kind, code on success) if
    /// any, then send the markers. `epoch_fence` when the coordinator bumped the epoch.
    Prepared {
        answer: Option<(RequestId, AnswerKind, ErrorCode)>,
        epoch_fence: bool,
    },
    /// CompleteCommit/CompleteAbort: the transaction is over.
    Completed,
    /// A tombstone: the id goes.
    Removed,
}

/// A write on its way.
#[derive(Debug, Clone)]
pub(super) struct InFlight {
    pub(super) transactional_id: String,
    pub(super) transit: TxnTransit,
    pub(super) then: AfterWrite,
}

/// Markers on their way, and the completion to write once they are.
#[derive(Debug, Clone)]
pub(super) struct MarkersOut {
    pub(super) remaining: BTreeSet<TopicPartition>,
    pub(super) complete: TxnTransit,
}

/// The pure transaction coordinator: every transactional id of the `__transaction_state`
/// partitions it owns, driven by requests and `now` (milliseconds on the driver's clock).
///
/// After any call, drain [`TransactionManager::poll_output`]: answers, records to write
/// (report each with [`TransactionManager::write_done`]) and markers to write (report each
/// partition with [`TransactionManager::marker_written`]). Call
/// [`TransactionManager::handle_timeout`] once [`TransactionManager::poll_timeout`] is due.
#[derive(Debug)]
pub struct TransactionManager {
    pub(super) config: TxnConfig,
    pub(super) txns: BTreeMap<String, TxnMetadata>,
    /// Owned partitions and their coordinator epochs.
    pub(super) owned: BTreeMap<i32, i32>,
    pub(super) loading: BTreeSet<i32>,
    pub(super) writes: BTreeMap<WriteId, InFlight>,
    pub(super) markers: BTreeMap<String, MarkersOut>,
    pub(super) outputs: VecDeque<Output>,
    /// Completion records whose write failed, written again at their time: (when, id, the
    /// completion).
    pub(super) completion_retries: Vec<(i64, String, TxnTransit)>,
    next_write: u64,
    next_abort_check: i64,
    next_expire_check: i64,
}

impl TransactionManager {
    /// A coordinator owning no partition yet; its timers start at `now`.
    pub fn new(config: TxnConfig, now: i64) -> Self {
        Self {
            next_abort_check: now.saturating_add(config.abort_timed_out_interval_ms),
            next_expire_check: now.saturating_add(config.remove_expired_interval_ms),
            config,
            txns: BTreeMap::new(),
            owned: BTreeMap::new(),
            loading: BTreeSet::new(),
            writes: BTreeMap::new(),
            markers: BTreeMap::new(),
            outputs: VecDeque::new(),
            completion_retries: Vec::new(),
            next_write: 0,
        }
    }

    pub fn config(&self) -> &TxnConfig {
        &self.config
    }

    /// One transactional id's metadata.
    pub fn transaction(&self, transactional_id: &str) -> Option<&TxnMetadata> {
        self.txns.get(transactional_id)
    }

    /// Every transactional id's metadata.
    pub fn transactions(&self) -> impl Iterator<Item = &TxnMetadata> {
        self.txns.values()
    }

    /// The next output.
    #[must_use]
    pub fn poll_output(&mut self) -> Option<Output> {
        self.outputs.pop_front()
    }

    // ---- ownership and loading ----

    /// The partition is being loaded: its ids answer COORDINATOR_LOAD_IN_PROGRESS until
    /// [`TransactionManager::load_partition`].
    pub fn begin_load(&mut self, partition: i32) {
        self.drop_partition(partition);
        self.loading.insert(partition);
    }

    /// Takes over `partition` at `coordinator_epoch` with its records in log order (the last
    /// record of an id wins, a tombstone removes it). Transactions found in PrepareCommit or
    /// PrepareAbort had their end recorded but maybe not their markers: their markers go out
    /// again (and their completion is written once they are).
    pub fn load_partition(
        &mut self,
        partition: i32,
        coordinator_epoch: i32,
        records: impl IntoIterator<Item = TxnRecord>,
        now: i64,
    ) {
        self.drop_partition(partition);
        let mut loaded: BTreeMap<String, TxnMetadata> = BTreeMap::new();
        for r in records {
            if self.config.partition_for(&r.transactional_id) != partition {
                tracing::warn!(
                    transactional_id = %r.transactional_id,
                    partition,
                    "__transaction_state record of another partition skipped"
                );
                continue;
            }
            match r.value {
                None => {
                    loaded.remove(&r.transactional_id);
                }
                Some(v) => {
                    let md = metadata_of(&r.transactional_id, &v);
                    loaded.insert(r.transactional_id, md);
                }
            }
        }
        let unfinished: Vec<String> = loaded
            .values()
            .filter(|m| matches!(m.state, TxnState::PrepareCommit | TxnState::PrepareAbort))
            .map(|m| m.transactional_id.clone())
            .collect();
        self.txns.extend(loaded);
        self.owned.insert(partition, coordinator_epoch);
        for id in unfinished {
            tracing::info!(transactional_id = %id, "resuming the markers of a transaction ended before the load");
            self.start_markers(&id, now);
        }
    }

    /// Gives `partition` up (leadership moved): its ids are forgotten, requests waiting on
    /// its writes are answered NOT_COORDINATOR. Returns how many ids were dropped.
    pub fn resign(&mut self, partition: i32) -> usize {
        self.drop_partition(partition)
    }

    /// The partitions owned, with their coordinator epochs.
    pub fn owned_partitions(&self) -> &BTreeMap<i32, i32> {
        &self.owned
    }

    fn drop_partition(&mut self, partition: i32) -> usize {
        self.owned.remove(&partition);
        self.loading.remove(&partition);
        let ids: Vec<String> = self
            .txns
            .keys()
            .filter(|id| self.config.partition_for(id) == partition)
            .cloned()
            .collect();
        let writes: Vec<WriteId> = self
            .writes
            .iter()
            .filter(|(_, w)| self.config.partition_for(&w.transactional_id) == partition)
            .map(|(id, _)| *id)
            .collect();
        for w in writes {
            if let Some(f) = self.writes.remove(&w) {
                match f.then {
                    AfterWrite::Answer(request, kind)
                    | AfterWrite::Prepared {
                        answer: Some((request, kind, _)),
                        ..
                    } => self.answer(request, kind.with(ErrorCode::NOT_COORDINATOR)),
                    _ => {}
                }
            }
        }
        for id in &ids {
            self.txns.remove(id);
            self.markers.remove(id);
        }
        let config = &self.config;
        self.completion_retries
            .retain(|(_, id, _)| config.partition_for(id) != partition);
        ids.len()
    }

    /// The `__transaction_state` partition of `transactional_id`, if this coordinator owns
    /// it and has loaded it.
    pub(super) fn check_partition(&self, transactional_id: &str) -> Result<i32, ErrorCode> {
        let p = self.config.partition_for(transactional_id);
        if self.loading.contains(&p) {
            Err(ErrorCode::COORDINATOR_LOAD_IN_PROGRESS)
        } else if !self.owned.contains_key(&p) {
            Err(ErrorCode::NOT_COORDINATOR)
        } else {
            Ok(p)
        }
    }

    // ---- outputs ----

    pub(super) fn answer(&mut self, request: RequestId, answer: Answer) {
        self.outputs.push_back(Output::Answer { request, answer });
    }

    pub(super) fn emit_write(
        &mut self,
        transactional_id: &str,
        transit: TxnTransit,
        then: AfterWrite,
    ) {
        self.next_write += 1;
        let id = WriteId(self.next_write);
        self.outputs.push_back(Output::Write(TxnWrite {
            id,
            partition: self.config.partition_for(transactional_id),
            record: TxnRecord::from_transit(transactional_id, &transit),
        }));
        self.writes.insert(
            id,
            InFlight {
                transactional_id: transactional_id.to_owned(),
                transit,
                then,
            },
        );
    }

    /// The outcome of a write: `Ok` once the record is appended (acks=all), or the append's
    /// error. A success applies the prepared change and carries on (answer, markers); a
    /// failure forgets it and answers the error as Kafka maps it. A failed completion record
    /// (the markers are written already) goes out again.
    pub fn write_done(&mut self, write: WriteId, result: Result<(), ErrorCode>, now: i64) {
        let Some(f) = self.writes.remove(&write) else {
            return;
        };
        let id = f.transactional_id.clone();
        let Some(md) = self.txns.get_mut(&id) else {
            if let AfterWrite::Answer(request, kind)
            | AfterWrite::Prepared {
                answer: Some((request, kind, _)),
                ..
            } = f.then
            {
                self.answer(request, kind.with(ErrorCode::NOT_COORDINATOR));
            }
            return;
        };
        match result {
            Ok(()) => {
                if f.then == AfterWrite::Removed {
                    if md.pending == Some(TxnState::Dead)
                        && md.producer_epoch == f.transit.producer_epoch
                    {
                        self.txns.remove(&id);
                        tracing::info!(transactional_id = %id, "expired transactional id removed");
                    } else {
                        md.abort_pending();
                    }
                    return;
                }
                if let Err(e) = md.complete_transition(&f.transit) {
                    tracing::error!(error = %e, "transaction state transition failed");
                    md.abort_pending();
                    match f.then {
                        AfterWrite::Answer(request, kind)
                        | AfterWrite::Prepared {
                            answer: Some((request, kind, _)),
                            ..
                        } => self.answer(request, kind.with(ErrorCode::UNKNOWN_SERVER_ERROR)),
                        _ => {}
                    }
                    return;
                }
                let (producer_id, producer_epoch) = (md.producer_id, md.producer_epoch);
                match f.then {
                    AfterWrite::Answer(request, AnswerKind::InitProducerId) => {
                        tracing::info!(transactional_id = %id, producer_id, producer_epoch, "producer initialized");
                        self.answer(
                            request,
                            Answer::InitProducerId(InitProducerIdResult {
                                error: ErrorCode::NONE,
                                producer_id,
                                producer_epoch,
                            }),
                        );
                    }
                    AfterWrite::Answer(request, kind) => {
                        self.answer(request, kind.with(ErrorCode::NONE));
                    }
                    AfterWrite::Prepared { answer, .. } => {
                        if let Some((request, kind, code)) = answer {
                            self.answer(request, kind.with(code));
                        }
                        self.start_markers(&id, now);
                    }
                    AfterWrite::Completed => {
                        tracing::debug!(transactional_id = %id, state = %md.state, "transaction completed");
                    }
                    AfterWrite::Removed => {}
                }
            }
            Err(error) => {
                let client = write_error_for_client(error);
                match f.then {
                    AfterWrite::Completed => {
                        if client == ErrorCode::NOT_COORDINATOR {
                            tracing::warn!(transactional_id = %id, %error, "completion not written: no longer the coordinator");
                        } else {
                            // Not at once: a refusal is reported as soon as the write is
                            // made, and the same refusal again would never end.
                            tracing::warn!(transactional_id = %id, %error, "completion not written, writing it again shortly");
                            let at = now.saturating_add(COMPLETION_RETRY_MS);
                            self.completion_retries.push((at, id, f.transit));
                        }
                    }
                    AfterWrite::Removed => md.abort_pending(),
                    AfterWrite::Answer(request, kind) => {
                        md.abort_pending();
                        self.answer(request, kind.with(client));
                    }
                    AfterWrite::Prepared {
                        answer,
                        epoch_fence,
                    } => {
                        md.abort_pending();
                        if epoch_fence {
                            md.has_failed_epoch_fence = true;
                            tracing::warn!(transactional_id = %id, %error, epoch = md.producer_epoch,
                                "epoch fence not written; the bumped epoch was not handed out");
                        }
                        if let Some((request, kind, _)) = answer {
                            self.answer(request, kind.with(client));
                        }
                    }
                }
            }
        }
    }

    /// After a PrepareX record: prepares the completion and sends the markers (or writes the
    /// completion at once for a transaction without partitions).
    fn start_markers(&mut self, transactional_id: &str, now: i64) {
        let p = self.config.partition_for(transactional_id);
        let coordinator_epoch = self.owned.get(&p).copied().unwrap_or(0);
        let Some(md) = self.txns.get_mut(transactional_id) else {
            return;
        };
        let result = if md.state == TxnState::PrepareCommit {
            TxnResult::Commit
        } else {
            TxnResult::Abort
        };
        let partitions = md.partitions.clone();
        let request = MarkerRequest {
            transactional_id: transactional_id.to_owned(),
            producer_id: md.producer_id,
            producer_epoch: md.producer_epoch,
            result,
            coordinator_epoch,
            partitions: partitions.clone(),
        };
        let complete = match md.prepare_complete(now) {
            Ok(t) => t,
            Err(e) => {
                tracing::error!(error = %e, "cannot complete a transaction");
                return;
            }
        };
        if partitions.is_empty() {
            self.emit_write(transactional_id, complete, AfterWrite::Completed);
        } else {
            self.markers.insert(
                transactional_id.to_owned(),
                MarkersOut {
                    remaining: partitions,
                    complete,
                },
            );
            self.outputs.push_back(Output::Markers(request));
        }
    }

    /// The marker of `transactional_id`'s transaction is written in `partition` (or the
    /// partition is gone). Once every partition is, the completion is written.
    pub fn marker_written(&mut self, transactional_id: &str, partition: &TopicPartition) {
        let Some(m) = self.markers.get_mut(transactional_id) else {
            return;
        };
        m.remaining.remove(partition);
        if m.remaining.is_empty()
            && let Some(m) = self.markers.remove(transactional_id)
        {
            self.emit_write(transactional_id, m.complete, AfterWrite::Completed);
        }
    }

    /// The partitions whose markers `transactional_id` still waits for.
    pub fn markers_pending(&self, transactional_id: &str) -> Option<&BTreeSet<TopicPartition>> {
        self.markers.get(transactional_id).map(|m| &m.remaining)
    }

    // ---- timers ----

    /// When [`TransactionManager::handle_timeout`] is next due.
    pub fn poll_timeout(&self) -> i64 {
        let retry = self.completion_retries.iter().map(|(at, ..)| *at).min();
        let checks = self.next_abort_check.min(self.next_expire_check);
        retry.map_or(checks, |r| r.min(checks))
    }

    /// Runs the checks that are due: timed-out transactions are aborted, expired ids
    /// removed.
    pub fn handle_timeout(&mut self, now: i64) {
        let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.completion_retries)
            .into_iter()
            .partition(|(at, ..)| *at <= now);
        self.completion_retries = later;
        for (_, id, transit) in due {
            if self.txns.contains_key(&id) {
                self.emit_write(&id, transit, AfterWrite::Completed);
            }
        }
        if now >= self.next_abort_check {
            self.abort_timed_out(now);
            self.next_abort_check = now.saturating_add(self.config.abort_timed_out_interval_ms);
        }
        if now >= self.next_expire_check {
            self.expire_ids(now);
            self.next_expire_check = now.saturating_add(self.config.remove_expired_interval_ms);
        }
    }

    /// Aborts every Ongoing transaction open longer than its timeout, bumping the epoch so
    /// that its producer is fenced. Returns how many.
    pub fn abort_timed_out(&mut self, now: i64) -> usize {
        let due: Vec<String> = self
            .txns
            .values()
            .filter(|m| {
                m.state == TxnState::Ongoing
                    && m.pending.is_none()
                    && m.start_ms.saturating_add(i64::from(m.timeout_ms)) < now
                    && self.check_partition(&m.transactional_id).is_ok()
            })
            .map(|m| m.transactional_id.clone())
            .collect();
        for id in &due {
            let Some(md) = self.txns.get_mut(id) else {
                continue;
            };
            match md.prepare_epoch_fence_abort(now) {
                Ok(t) => {
                    tracing::info!(transactional_id = %id, producer_id = t.producer_id,
                        epoch = t.producer_epoch, "aborting a transaction past its timeout");
                    self.emit_write(
                        id,
                        t,
                        AfterWrite::Prepared {
                            answer: None,
                            epoch_fence: true,
                        },
                    );
                }
                Err(e) => tracing::error!(error = %e, "cannot abort a timed-out transaction"),
            }
        }
        due.len()
    }

    /// Removes (with a tombstone) every id with no open transaction and no change for
    /// `transactional.id.expiration.ms`. Returns how many tombstones went out.
    pub fn expire_ids(&mut self, now: i64) -> usize {
        let horizon = now.saturating_sub(self.config.transactional_id_expiration_ms);
        let due: Vec<String> = self
            .txns
            .values()
            .filter(|m| {
                m.state.expiration_allowed()
                    && m.pending.is_none()
                    && m.last_update_ms <= horizon
                    && self.check_partition(&m.transactional_id).is_ok()
            })
            .map(|m| m.transactional_id.clone())
            .collect();
        for id in &due {
            let Some(md) = self.txns.get_mut(id) else {
                continue;
            };
            match md.prepare_dead() {
                Ok(t) => self.emit_write(id, t, AfterWrite::Removed),
                Err(e) => tracing::error!(error = %e, "cannot expire a transactional id"),
            }
        }
        due.len()
    }

    // ---- describe and list ----

    /// DescribeTransactions of one id.
    pub fn describe(&self, transactional_id: &str) -> TxnDescription {
        if transactional_id.is_empty() {
            return TxnDescription::error(transactional_id, ErrorCode::INVALID_REQUEST);
        }
        if let Err(e) = self.check_partition(transactional_id) {
            return TxnDescription::error(transactional_id, e);
        }
        let Some(m) = self
            .txns
            .get(transactional_id)
            .filter(|m| m.state != TxnState::Dead)
        else {
            return TxnDescription::error(transactional_id, ErrorCode::TRANSACTIONAL_ID_NOT_FOUND);
        };
        let mut topics: BTreeMap<String, Vec<i32>> = BTreeMap::new();
        for tp in &m.partitions {
            topics
                .entry(tp.topic.to_string())
                .or_default()
                .push(tp.partition);
        }
        TxnDescription {
            error: ErrorCode::NONE,
            transactional_id: transactional_id.to_owned(),
            state: m.state.name().to_owned(),
            timeout_ms: m.timeout_ms,
            start_ms: m.start_ms,
            producer_id: m.producer_id,
            producer_epoch: m.producer_epoch,
            topics,
        }
    }

    /// ListTransactions: every id of the owned partitions that passes `filter` (Dead ones,
    /// on their way out, never). COORDINATOR_LOAD_IN_PROGRESS while a partition loads.
    pub fn list(&self, filter: &ListFilter, now: i64) -> TxnList {
        if !self.loading.is_empty() {
            return TxnList {
                error: ErrorCode::COORDINATOR_LOAD_IN_PROGRESS,
                ..TxnList::default()
            };
        }
        let mut states = BTreeSet::new();
        let mut unknown = Vec::new();
        for name in &filter.states {
            match TxnState::from_name(name) {
                Some(s) => {
                    states.insert(s);
                }
                None => unknown.push(name.clone()),
            }
        }
        let transactions = self
            .txns
            .values()
            .filter(|m| {
                m.state != TxnState::Dead
                    && (filter.producer_ids.is_empty()
                        || filter.producer_ids.contains(&m.producer_id))
                    && (filter.states.is_empty() || states.contains(&m.state))
                    && (filter.duration_ms < 0
                        || now.saturating_sub(m.start_ms) > filter.duration_ms)
            })
            .map(|m| TxnListing {
                transactional_id: m.transactional_id.clone(),
                producer_id: m.producer_id,
                state: m.state,
            })
            .collect();
        TxnList {
            error: ErrorCode::NONE,
            unknown_state_filters: unknown,
            transactions,
        }
    }
}

/// An id's metadata as a record leaves it (last epoch and pending state are not stored).
fn metadata_of(transactional_id: &str, v: &TxnLogValue) -> TxnMetadata {
    TxnMetadata {
        transactional_id: transactional_id.to_owned(),
        producer_id: v.producer_id,
        last_producer_id: v.previous_producer_id,
        producer_epoch: v.producer_epoch,
        last_producer_epoch: NO_PRODUCER_EPOCH,
        timeout_ms: v.timeout_ms,
        state: v.state,
        partitions: v.topic_partitions(),
        start_ms: v.start_ms,
        last_update_ms: v.last_update_ms,
        pending: None,
        has_failed_epoch_fence: false,
    }
}
