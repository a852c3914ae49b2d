//! One transactional id: its state machine and the two-step transitions.
//!
//! A change is never applied directly. `prepare_*` checks that the target state may follow
//! the current one, marks it as pending and returns the target as a [`TxnTransit`]; the
//! transit becomes a `__transaction_state` record. Once the write is acknowledged,
//! [`TxnMetadata::complete_transition`] applies it (after checking it is the change that was
//! prepared); if the write fails, [`TxnMetadata::abort_pending`] forgets it. While a transition
//! is pending, no other may be prepared: requests meanwhile get CONCURRENT_TRANSACTIONS.

use std::collections::BTreeSet;

use crate::log::TopicPartition;

/// No producer id (`RecordBatch.NO_PRODUCER_ID`).
pub const NO_PRODUCER_ID: i64 = -1;
/// No producer epoch (`RecordBatch.NO_PRODUCER_EPOCH`).
pub const NO_PRODUCER_EPOCH: i16 = -1;

/// Whether an epoch leaves no room to fence its producer: the coordinator must always be able
/// to bump once more, so `i16::MAX - 1` is the last epoch handed to a producer.
pub fn epoch_exhausted(epoch: i16) -> bool {
    epoch >= i16::MAX - 1
}

/// Kafka's transaction states. The byte ([`TxnState::id`]) is what `__transaction_state`
/// stores and the name is what DescribeTransactions and ListTransactions show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TxnState {
    /// No transaction open (new id, or right after InitProducerId).
    Empty,
    /// Partitions have been added; the producer is writing.
    Ongoing,
    /// EndTxn(commit) is recorded; COMMIT markers are being written.
    PrepareCommit,
    /// EndTxn(abort), a fence or a timeout is recorded; ABORT markers are being written.
    PrepareAbort,
    /// Every COMMIT marker is written.
    CompleteCommit,
    /// Every ABORT marker is written.
    CompleteAbort,
    /// The id is being removed (expired); never written, a tombstone is.
    Dead,
    /// An epoch bump fencing the current producer; only ever pending, turned into
    /// PrepareAbort before anything is written.
    PrepareEpochFence,
}

impl TxnState {
    /// Every state, in id order.
    pub const ALL: [TxnState; 8] = [
        Self::Empty,
        Self::Ongoing,
        Self::PrepareCommit,
        Self::PrepareAbort,
        Self::CompleteCommit,
        Self::CompleteAbort,
        Self::Dead,
        Self::PrepareEpochFence,
    ];

    /// The state byte of `__transaction_state` values.
    pub fn id(self) -> i8 {
        match self {
            Self::Empty => 0,
            Self::Ongoing => 1,
            Self::PrepareCommit => 2,
            Self::PrepareAbort => 3,
            Self::CompleteCommit => 4,
            Self::CompleteAbort => 5,
            Self::Dead => 6,
            Self::PrepareEpochFence => 7,
        }
    }

    /// The state of a state byte; `None` for bytes Kafka does not define.
    pub fn from_id(id: i8) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.id() == id)
    }

    /// Kafka's name of the state.
    pub fn name(self) -> &'static str {
        match self {
            Self::Empty => "Empty",
            Self::Ongoing => "Ongoing",
            Self::PrepareCommit => "PrepareCommit",
            Self::PrepareAbort => "PrepareAbort",
            Self::CompleteCommit => "CompleteCommit",
            Self::CompleteAbort => "CompleteAbort",
            Self::Dead => "Dead",
            Self::PrepareEpochFence => "PrepareEpochFence",
        }
    }

    /// The state of a name (exact, as Kafka matches ListTransactions filters).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The states this one may follow.
    pub fn valid_previous(self) -> &'static [TxnState] {
        use TxnState::*;
        match self {
            Empty => &[Empty, CompleteCommit, CompleteAbort],
            Ongoing => &[Ongoing, Empty, CompleteCommit, CompleteAbort],
            PrepareCommit => &[Ongoing],
            PrepareAbort => &[Ongoing, PrepareEpochFence],
            CompleteCommit => &[PrepareCommit],
            CompleteAbort => &[PrepareAbort],
            Dead => &[Empty, CompleteAbort, CompleteCommit],
            PrepareEpochFence => &[Ongoing],
        }
    }

    /// Whether `self` may follow `from`.
    pub fn can_follow(self, from: TxnState) -> bool {
        self.valid_previous().contains(&from)
    }

    /// Whether an id in this state may expire (no transaction is open).
    pub fn expiration_allowed(self) -> bool {
        matches!(
            self,
            Self::Empty | Self::CompleteCommit | Self::CompleteAbort
        )
    }

    /// Whether a transaction is open (partitions may hold its records).
    pub fn has_open_transaction(self) -> bool {
        matches!(
            self,
            Self::Ongoing | Self::PrepareAbort | Self::PrepareCommit
        )
    }
}

impl std::fmt::Display for TxnState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The target of a prepared transition: what the record says and what the metadata becomes
/// once the record is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnTransit {
    pub producer_id: i64,
    /// The producer id before this transition.
    pub last_producer_id: i64,
    pub producer_epoch: i16,
    pub last_producer_epoch: i16,
    pub timeout_ms: i32,
    pub state: TxnState,
    pub partitions: BTreeSet<TopicPartition>,
    /// When the transaction started (-1 when none is open).
    pub start_ms: i64,
    pub last_update_ms: i64,
}

/// A transition the state machine refuses: a bug in the caller, never the client's doing
/// (clients get error codes, checked before anything is prepared).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransitionError {
    #[error("transactional id {id}: {to} prepared while {pending} is pending")]
    AlreadyPending {
        id: String,
        pending: TxnState,
        to: TxnState,
    },
    #[error("transactional id {id}: {to} cannot follow {from}")]
    Illegal {
        id: String,
        from: TxnState,
        to: TxnState,
    },
    #[error("transactional id {id}: illegal producer id {producer_id} or epoch {epoch} for {to}")]
    IllegalIds {
        id: String,
        producer_id: i64,
        epoch: i16,
        to: TxnState,
    },
    #[error("transactional id {id}: completing a transition with none pending")]
    NothingPending { id: String },
    #[error(
        "transactional id {id}: the completed transition to {to} is not the prepared one ({why})"
    )]
    Mismatch {
        id: String,
        to: TxnState,
        why: &'static str,
    },
}

/// One transactional id: its producer id and epoch and its current transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnMetadata {
    pub transactional_id: String,
    pub producer_id: i64,
    /// The producer id before the last InitProducerId (KIP-360 retries after a rotation);
    /// not in value v0 records, so -1 after a replay of them.
    pub last_producer_id: i64,
    pub producer_epoch: i16,
    /// The epoch before the last InitProducerId that gave an expected epoch (KIP-360
    /// retries); kept in memory only.
    pub last_producer_epoch: i16,
    pub timeout_ms: i32,
    pub state: TxnState,
    /// The partitions of the open transaction.
    pub partitions: BTreeSet<TopicPartition>,
    /// When the open transaction started (its first AddPartitions); -1 when none.
    pub start_ms: i64,
    /// The last change (what expiration counts from).
    pub last_update_ms: i64,
    /// The state of the transition prepared and not yet completed or aborted.
    pub pending: Option<TxnState>,
    /// An epoch fence was prepared and its write failed: the in-memory epoch is already
    /// bumped (never handed out), so the next fence does not bump again.
    pub has_failed_epoch_fence: bool,
}

impl TxnMetadata {
    /// A new id in Empty with no epoch yet: the first InitProducerId bumps it to 0.
    pub fn new(transactional_id: &str, producer_id: i64, timeout_ms: i32, now: i64) -> Self {
        Self {
            transactional_id: transactional_id.to_owned(),
            producer_id,
            last_producer_id: NO_PRODUCER_ID,
            producer_epoch: NO_PRODUCER_EPOCH,
            last_producer_epoch: NO_PRODUCER_EPOCH,
            timeout_ms,
            state: TxnState::Empty,
            partitions: BTreeSet::new(),
            start_ms: -1,
            last_update_ms: now,
            pending: None,
            has_failed_epoch_fence: false,
        }
    }

    /// Whether this id's epoch leaves no room for another bump.
    pub fn epoch_exhausted(&self) -> bool {
        epoch_exhausted(self.producer_epoch)
    }

    /// Whether a transition is pending.
    pub fn pending_transition(&self) -> bool {
        self.pending.is_some()
    }

    /// The epochs (next, last) an InitProducerId gets with this expected epoch (KIP-360), or
    /// PRODUCER_FENCED. Without one, the epoch is bumped and the last forgotten. With one
    /// equal to the current epoch (or when there is none yet), both are bumped. With one
    /// equal to the last epoch it is a retry of a bump that succeeded: nothing changes.
    pub fn next_epochs(
        &self,
        expected: Option<i16>,
    ) -> Result<(i16, i16), kafka_protocol::error_code::ErrorCode> {
        let bumped = self.producer_epoch.saturating_add(1);
        match expected {
            None => Ok((bumped, NO_PRODUCER_EPOCH)),
            Some(e) if self.producer_epoch == NO_PRODUCER_EPOCH || e == self.producer_epoch => {
                Ok((bumped, self.producer_epoch))
            }
            Some(e) if e == self.last_producer_epoch => {
                Ok((self.producer_epoch, self.last_producer_epoch))
            }
            Some(_) => Err(kafka_protocol::error_code::ErrorCode::PRODUCER_FENCED),
        }
    }

    /// InitProducerId keeping the producer id: Empty with `epochs` from
    /// [`TxnMetadata::next_epochs`].
    pub fn prepare_epoch_bump(
        &mut self,
        timeout_ms: i32,
        (epoch, last_epoch): (i16, i16),
        now: i64,
    ) -> Result<TxnTransit, TransitionError> {
        let pid = self.producer_id;
        self.prepare(
            TxnState::Empty,
            pid,
            epoch,
            last_epoch,
            timeout_ms,
            BTreeSet::new(),
            -1,
            now,
        )
    }

    /// InitProducerId once the epoch is exhausted: a new producer id at epoch 0. The old
    /// epoch is remembered when the producer gave it (so its retry is recognised).
    pub fn prepare_producer_id_rotation(
        &mut self,
        new_producer_id: i64,
        timeout_ms: i32,
        now: i64,
        record_last_epoch: bool,
    ) -> Result<TxnTransit, TransitionError> {
        if self.state.has_open_transaction() {
            return Err(self.illegal(TxnState::Empty));
        }
        let last = if record_last_epoch {
            self.producer_epoch
        } else {
            NO_PRODUCER_EPOCH
        };
        self.prepare(
            TxnState::Empty,
            new_producer_id,
            0,
            last,
            timeout_ms,
            BTreeSet::new(),
            -1,
            now,
        )
    }

    /// AddPartitionsToTxn / AddOffsetsToTxn: Ongoing with `added` joined in; a transaction
    /// starting now gets `now` as its start.
    pub fn prepare_add_partitions(
        &mut self,
        added: &BTreeSet<TopicPartition>,
        now: i64,
    ) -> Result<TxnTransit, TransitionError> {
        let start = match self.state {
            TxnState::Empty | TxnState::CompleteCommit | TxnState::CompleteAbort => now,
            _ => self.start_ms,
        };
        let partitions = self.partitions.union(added).cloned().collect();
        self.prepare(
            TxnState::Ongoing,
            self.producer_id,
            self.producer_epoch,
            self.last_producer_epoch,
            self.timeout_ms,
            partitions,
            start,
            now,
        )
    }

    /// EndTxn: PrepareCommit or PrepareAbort of the current partitions.
    pub fn prepare_abort_or_commit(
        &mut self,
        to: TxnState,
        now: i64,
    ) -> Result<TxnTransit, TransitionError> {
        if !matches!(to, TxnState::PrepareCommit | TxnState::PrepareAbort) {
            return Err(self.illegal(to));
        }
        let partitions = self.partitions.clone();
        self.prepare(
            to,
            self.producer_id,
            self.producer_epoch,
            self.last_producer_epoch,
            self.timeout_ms,
            partitions,
            self.start_ms,
            now,
        )
    }

    /// The coordinator's abort of an Ongoing transaction with an epoch bump, fencing the
    /// producer (a second InitProducerId, or the transaction's timeout): Kafka's
    /// PrepareEpochFence then, with the epoch bumped in memory (it is never handed out),
    /// PrepareAbort. Returns the PrepareAbort to write. After a failed fence the epoch is not
    /// bumped again.
    pub fn prepare_epoch_fence_abort(&mut self, now: i64) -> Result<TxnTransit, TransitionError> {
        if self.state != TxnState::Ongoing {
            return Err(self.illegal(TxnState::PrepareEpochFence));
        }
        if let Some(pending) = self.pending {
            return Err(TransitionError::AlreadyPending {
                id: self.transactional_id.clone(),
                pending,
                to: TxnState::PrepareEpochFence,
            });
        }
        if self.producer_epoch == i16::MAX {
            return Err(TransitionError::IllegalIds {
                id: self.transactional_id.clone(),
                producer_id: self.producer_id,
                epoch: self.producer_epoch,
                to: TxnState::PrepareEpochFence,
            });
        }
        if !self.has_failed_epoch_fence {
            self.producer_epoch += 1;
        }
        self.last_producer_epoch = NO_PRODUCER_EPOCH;
        self.prepare_abort_or_commit(TxnState::PrepareAbort, now)
    }

    /// After the PrepareX record: CompleteCommit or CompleteAbort, to be written once every
    /// marker is. Prepared at once (the markers go out while it is pending).
    pub fn prepare_complete(&mut self, now: i64) -> Result<TxnTransit, TransitionError> {
        let to = match self.state {
            TxnState::PrepareCommit => TxnState::CompleteCommit,
            TxnState::PrepareAbort => TxnState::CompleteAbort,
            _ => return Err(self.illegal(TxnState::CompleteCommit)),
        };
        self.has_failed_epoch_fence = false;
        self.prepare(
            to,
            self.producer_id,
            self.producer_epoch,
            self.last_producer_epoch,
            self.timeout_ms,
            BTreeSet::new(),
            self.start_ms,
            now,
        )
    }

    /// Expiration: Dead, to be written as a tombstone; completed by removing the id.
    pub fn prepare_dead(&mut self) -> Result<TxnTransit, TransitionError> {
        self.prepare(
            TxnState::Dead,
            self.producer_id,
            self.producer_epoch,
            self.last_producer_epoch,
            self.timeout_ms,
            BTreeSet::new(),
            self.start_ms,
            self.last_update_ms,
        )
    }

    fn illegal(&self, to: TxnState) -> TransitionError {
        TransitionError::Illegal {
            id: self.transactional_id.clone(),
            from: self.state,
            to,
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn prepare(
        &mut self,
        to: TxnState,
        producer_id: i64,
        epoch: i16,
        last_epoch: i16,
        timeout_ms: i32,
        partitions: BTreeSet<TopicPartition>,
        start_ms: i64,
        now: i64,
    ) -> Result<TxnTransit, TransitionError> {
        if let Some(pending) = self.pending {
            return Err(TransitionError::AlreadyPending {
                id: self.transactional_id.clone(),
                pending,
                to,
            });
        }
        if producer_id < 0 || (to != TxnState::Dead && epoch < 0) {
            return Err(TransitionError::IllegalIds {
                id: self.transactional_id.clone(),
                producer_id,
                epoch,
                to,
            });
        }
        if !to.can_follow(self.state) {
            return Err(self.illegal(to));
        }
        self.pending = Some(to);
        Ok(TxnTransit {
            producer_id,
            last_producer_id: self.producer_id,
            producer_epoch: epoch,
            last_producer_epoch: last_epoch,
            timeout_ms,
            state: to,
            partitions,
            start_ms,
            last_update_ms: now,
        })
    }

    /// Forgets the pending transition (its write failed).
    pub fn abort_pending(&mut self) {
        self.pending = None;
    }

    /// Applies `t` once its record is written: it must be the pending transition and
    /// consistent with the current metadata (Kafka's checks per target state).
    pub fn complete_transition(&mut self, t: &TxnTransit) -> Result<(), TransitionError> {
        let Some(to) = self.pending else {
            return Err(TransitionError::NothingPending {
                id: self.transactional_id.clone(),
            });
        };
        let mismatch = |why| TransitionError::Mismatch {
            id: self.transactional_id.clone(),
            to: t.state,
            why,
        };
        if to != t.state {
            return Err(mismatch("another state is pending"));
        }
        let same_producer =
            t.producer_epoch == self.producer_epoch && t.producer_id == self.producer_id;
        match to {
            TxnState::Empty => {
                let bump = t.producer_epoch == self.producer_epoch.saturating_add(1)
                    || (t.producer_epoch == 0 && t.producer_id != self.producer_id);
                if (t.producer_epoch != self.producer_epoch && !bump)
                    || !t.partitions.is_empty()
                    || t.start_ms != -1
                {
                    return Err(mismatch("not an epoch bump of an empty transaction"));
                }
                self.timeout_ms = t.timeout_ms;
                self.producer_epoch = t.producer_epoch;
                self.last_producer_epoch = t.last_producer_epoch;
                self.producer_id = t.producer_id;
                self.last_producer_id = t.last_producer_id;
            }
            TxnState::Ongoing => {
                if !same_producer
                    || !self.partitions.is_subset(&t.partitions)
                    || self.timeout_ms != t.timeout_ms
                {
                    return Err(mismatch("not an addition to this transaction"));
                }
                self.start_ms = t.start_ms;
                self.partitions.extend(t.partitions.iter().cloned());
            }
            TxnState::PrepareCommit | TxnState::PrepareAbort => {
                if !same_producer
                    || self.partitions != t.partitions
                    || self.timeout_ms != t.timeout_ms
                    || self.start_ms != t.start_ms
                {
                    return Err(mismatch("not the end of this transaction"));
                }
            }
            TxnState::CompleteCommit | TxnState::CompleteAbort => {
                if !same_producer || self.timeout_ms != t.timeout_ms || t.start_ms == -1 {
                    return Err(mismatch("not the completion of this transaction"));
                }
                self.start_ms = t.start_ms;
                self.partitions.clear();
            }
            TxnState::PrepareEpochFence | TxnState::Dead => {
                return Err(mismatch("never completed (only pending, or removed)"));
            }
        }
        self.last_update_ms = t.last_update_ms;
        self.pending = None;
        self.state = to;
        Ok(())
    }
}
