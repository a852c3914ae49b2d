//! The controller quorum: the voters of `controller.quorum.voters` agree on the metadata log
//! through TiKV's Raft (`raft` crate). Its entries are Kafka's metadata records
//! ([`entry::Payload`]); its snapshots the metadata image ([`entry::SnapshotData`]); its files
//! in `__cluster_metadata-0` of the data dir ([`store`]).
//!
//! - [`store`]: the log, hard state and snapshot on disk (fsynced), as `raft::Storage`.
//! - [`node`]: one voter without I/O: ticks, messages, proposals in; what to send and apply out.
//! - [`entry`]: the bytes of entries and snapshots.
//! - [`driver`]: the task running a voter on a 100 ms tick, and its handle.
//! - [`transport`]: Raft messages between voters over the controller listener.

pub mod driver;
pub mod entry;
pub mod node;
pub mod store;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_tcp;
pub mod transport;

pub use driver::{Applied, ProposeError, QuorumHandle, StateMachine};
pub use node::{Output, QuorumNode, QuorumStatus};

/// Raft's logger (it takes `slog`), forwarded to `tracing` under the target `raft`.
pub(crate) fn logger() -> slog::Logger {
    slog::Logger::root(TracingDrain, slog::o!())
}

struct TracingDrain;

/// Collects a record's key-value pairs as `key=value` text.
struct Pairs(String);

impl slog::Serializer for Pairs {
    fn emit_arguments(&mut self, key: slog::Key, val: &std::fmt::Arguments<'_>) -> slog::Result {
        use std::fmt::Write as _;
        let _ = write!(self.0, " {key}={val}");
        Ok(())
    }
}

impl slog::Drain for TracingDrain {
    type Ok = ();
    type Err = slog::Never;

    fn log(
        &self,
        record: &slog::Record<'_>,
        _values: &slog::OwnedKVList,
    ) -> Result<(), slog::Never> {
        let mut pairs = Pairs(String::new());
        let _ = slog::KV::serialize(&record.kv(), record, &mut pairs);
        let (msg, kv) = (record.msg(), pairs.0);
        match record.level() {
            slog::Level::Critical | slog::Level::Error => {
                tracing::error!(target: "raft", "{msg}{kv}")
            }
            slog::Level::Warning => tracing::warn!(target: "raft", "{msg}{kv}"),
            slog::Level::Info => tracing::info!(target: "raft", "{msg}{kv}"),
            slog::Level::Debug => tracing::debug!(target: "raft", "{msg}{kv}"),
            slog::Level::Trace => tracing::trace!(target: "raft", "{msg}{kv}"),
        }
        Ok(())
    }
}
