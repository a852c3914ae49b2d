//! The transaction coordinator's settings (`transaction.*`, `transactional.id.expiration.ms`)
//! with Kafka's defaults. Their keys are in the broker key table ([`super::keys`]); the
//! transaction layer adds `partition_for` (in `crate::txn`).

/// Transaction coordinator configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnConfig {
    /// `transaction.max.timeout.ms`: a producer asking for a longer `transaction.timeout.ms`
    /// (or for 0 or less) gets INVALID_TRANSACTION_TIMEOUT.
    pub max_timeout_ms: i32,
    /// `transactional.id.expiration.ms`: a transactional id with no transaction open (Empty,
    /// CompleteCommit, CompleteAbort) and no update for this long is removed with a tombstone.
    pub transactional_id_expiration_ms: i64,
    /// `transaction.state.log.num.partitions`: partitions of `__transaction_state`.
    pub num_partitions: i32,
    /// `transaction.state.log.replication.factor` (Kafka's default 3; clamped to the brokers
    /// there are when the topic is created).
    pub replication_factor: i16,
    /// `transaction.state.log.min.isr`: `min.insync.replicas` of `__transaction_state`.
    pub min_isr: i32,
    /// `transaction.state.log.segment.bytes`: `segment.bytes` of `__transaction_state`.
    pub segment_bytes: u64,
    /// `transaction.abort.timed.out.transaction.cleanup.interval.ms`: how often open
    /// transactions past their timeout are looked for (and aborted).
    pub abort_timed_out_interval_ms: i64,
    /// `transaction.remove.expired.transaction.cleanup.interval.ms`: how often expired
    /// transactional ids are looked for (and removed).
    pub remove_expired_interval_ms: i64,
}

impl Default for TxnConfig {
    fn default() -> Self {
        Self {
            max_timeout_ms: 900_000,
            transactional_id_expiration_ms: 604_800_000,
            num_partitions: 50,
            replication_factor: 3,
            min_isr: 2,
            segment_bytes: 100 * 1024 * 1024,
            abort_timed_out_interval_ms: 10_000,
            remove_expired_interval_ms: 3_600_000,
        }
    }
}

impl TxnConfig {
    /// Checks the settings against each other (none depend on each other yet).
    pub fn validate(&self) -> Result<(), String> {
        Ok(())
    }

    /// Whether a producer's `transaction.timeout.ms` is allowed: above 0 and at most
    /// `transaction.max.timeout.ms`.
    pub fn valid_timeout(&self, timeout_ms: i32) -> bool {
        timeout_ms > 0 && timeout_ms <= self.max_timeout_ms
    }
}
