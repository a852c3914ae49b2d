//! The transactional producer's states (the Java client's) and which moves between them are
//! legal.

/// Where a transactional producer is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum TransactionState {
    /// No producer id yet: `init_transactions` comes first.
    Uninitialized,
    /// InitProducerId is on its way (first time, or an epoch bump after an abort).
    Initializing,
    /// Has a producer id; no transaction open.
    Ready,
    /// Between `begin_transaction` and commit or abort.
    InTransaction,
    /// Flushing the transaction's batches, then EndTxn(commit).
    CommittingTransaction,
    /// Waiting for batches in flight, then EndTxn(abort).
    AbortingTransaction,
    /// Something in the transaction failed: only an abort is allowed.
    AbortableError,
    /// Fenced or refused for good: only closing is left.
    FatalError,
}

impl TransactionState {
    /// Whether the producer may go from `self` to `target` (the Java client's table).
    pub(crate) fn can_move_to(self, target: Self) -> bool {
        use TransactionState::*;
        match target {
            Uninitialized => self == Ready,
            Initializing => matches!(self, Uninitialized | AbortingTransaction),
            Ready => matches!(
                self,
                Initializing | CommittingTransaction | AbortingTransaction
            ),
            InTransaction => self == Ready,
            CommittingTransaction => self == InTransaction,
            AbortingTransaction => matches!(self, InTransaction | AbortableError),
            AbortableError => {
                matches!(self, InTransaction | CommittingTransaction | AbortableError)
            }
            // Fatal is reachable from anywhere and left for nowhere.
            FatalError => true,
        }
    }

    pub(crate) fn has_error(self) -> bool {
        matches!(self, Self::AbortableError | Self::FatalError)
    }
}
