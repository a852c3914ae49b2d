//! The transaction coordinator's settings live in the configuration
//! ([`crate::config::TxnConfig`]); here is what the transaction layer derives from them.

pub use crate::config::TxnConfig;

impl TxnConfig {
    /// The `__transaction_state` partition of `transactional_id`: Kafka's
    /// `Utils.abs(transactionalId.hashCode) % transaction.state.log.num.partitions`.
    pub fn partition_for(&self, transactional_id: &str) -> i32 {
        crate::coordinator::partition_for(transactional_id, self.num_partitions)
    }
}
