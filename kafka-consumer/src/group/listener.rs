//! The rebalance listener: what the application is told when partitions come and go.

use std::collections::BTreeSet;
use std::future::Future;
use std::pin::Pin;

use crate::consumer::Consumer;
use crate::types::TopicPartition;

/// The future a listener method returns.
pub type ListenerFuture<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// Told about partitions taken away from this consumer and given to it by group
/// rebalances (Java's `ConsumerRebalanceListener`).
///
/// The methods run on the application's task, inside [`Consumer::poll`] (or the next item
/// of [`Consumer::stream`]), [`Consumer::unsubscribe`] and [`Consumer::close`], never on a
/// background task: a listener may await anything, including the consumer's own methods
/// (`commit_sync`, `seek`, `position`, `committed`), without holding up heartbeats or
/// fetches. The consumer is handed in, so a listener needs no reference of its own.
///
/// Order within a rebalance: partitions that go are revoked (after their positions are
/// committed when `enable.auto.commit` is on) before they leave the assignment, so the
/// listener can still commit them; partitions that come are in the assignment before
/// `on_partitions_assigned` runs, so the listener can seek them. Under the eager protocol
/// every partition is revoked before the consumer rejoins; under the cooperative protocol
/// only those that move, after the rebalance that moves them.
pub trait RebalanceListener: Send + Sync {
    /// `partitions` are no longer this consumer's (a rebalance, `unsubscribe` or `close`).
    /// Their positions are still there: committing them here is the way to hand over
    /// exactly what was processed.
    fn on_partitions_revoked<'a>(
        &'a self,
        consumer: &'a Consumer,
        partitions: &'a BTreeSet<TopicPartition>,
    ) -> ListenerFuture<'a> {
        let _ = (consumer, partitions);
        Box::pin(async {})
    }

    /// `partitions` are new to this consumer (called after every rebalance, with an empty
    /// set when nothing was added). Their positions start from the committed offsets unless
    /// the listener seeks.
    fn on_partitions_assigned<'a>(
        &'a self,
        consumer: &'a Consumer,
        partitions: &'a BTreeSet<TopicPartition>,
    ) -> ListenerFuture<'a> {
        let _ = (consumer, partitions);
        Box::pin(async {})
    }

    /// `partitions` were lost: the consumer dropped out of the group (session or poll
    /// timeout, fenced, its generation is gone), so other members may already own them and
    /// commits for them would fail. By default the same as
    /// [`Self::on_partitions_revoked`], as in the Java client.
    fn on_partitions_lost<'a>(
        &'a self,
        consumer: &'a Consumer,
        partitions: &'a BTreeSet<TopicPartition>,
    ) -> ListenerFuture<'a> {
        self.on_partitions_revoked(consumer, partitions)
    }
}

/// The listener of a subscription that names none.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoopListener;

impl RebalanceListener for NoopListener {}
