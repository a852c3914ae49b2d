//! The transaction coordinator's settings, with Kafka's key names and defaults.

use crate::group::config::{at_least, number};

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
    /// Applies one `key=value`. `Ok(false)` for keys this config does not own.
    pub fn apply(&mut self, key: &str, value: &str) -> Result<bool, String> {
        match key.trim() {
            k @ "transaction.max.timeout.ms" => {
                self.max_timeout_ms = at_least(k, number(k, value)?, 1)?
            }
            k @ "transactional.id.expiration.ms" => {
                self.transactional_id_expiration_ms = at_least(k, number(k, value)?, 1)?
            }
            k @ "transaction.state.log.num.partitions" => {
                self.num_partitions = at_least(k, number(k, value)?, 1)?
            }
            k @ "transaction.state.log.replication.factor" => {
                self.replication_factor = at_least(k, number(k, value)?, 1)?
            }
            k @ "transaction.state.log.min.isr" => {
                self.min_isr = at_least(k, number(k, value)?, 1)?
            }
            k @ "transaction.state.log.segment.bytes" => {
                let n: u64 = number(k, value)?;
                if !(crate::log::MIN_SEGMENT_BYTES..=crate::log::MAX_SEGMENT_BYTES).contains(&n) {
                    return Err(format!(
                        "{k}={value}: must be between {} and {}",
                        crate::log::MIN_SEGMENT_BYTES,
                        crate::log::MAX_SEGMENT_BYTES
                    ));
                }
                self.segment_bytes = n;
            }
            k @ "transaction.abort.timed.out.transaction.cleanup.interval.ms" => {
                self.abort_timed_out_interval_ms = at_least(k, number(k, value)?, 1)?
            }
            k @ "transaction.remove.expired.transaction.cleanup.interval.ms" => {
                self.remove_expired_interval_ms = at_least(k, number(k, value)?, 1)?
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Checks the settings against each other (none depend on each other yet).
    pub fn validate(&self) -> Result<(), String> {
        Ok(())
    }

    /// The `__transaction_state` partition of `transactional_id`: Kafka's
    /// `Utils.abs(transactionalId.hashCode) % transaction.state.log.num.partitions`.
    pub fn partition_for(&self, transactional_id: &str) -> i32 {
        crate::coordinator::partition_for(transactional_id, self.num_partitions)
    }

    /// Whether a producer's `transaction.timeout.ms` is allowed: above 0 and at most
    /// `transaction.max.timeout.ms`.
    pub fn valid_timeout(&self, timeout_ms: i32) -> bool {
        timeout_ms > 0 && timeout_ms <= self.max_timeout_ms
    }
}
