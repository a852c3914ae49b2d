//! Group membership with Kafka's classic protocol: `subscribe` and `subscribe_pattern`.
//!
//! - [`machine`]: the pure state machine (coordinator, member id, generation, protocol,
//!   assignment, rejoin, heartbeat, session and poll timers) taking `now`.
//! - [`wire`]: JoinGroup, SyncGroup, Heartbeat and LeaveGroup builders and parsers.
//! - [`leader`]: the leader's assignment (the assignors of [`crate::assignor`]).
//! - a coordinator task that only moves bytes: FindCoordinator, JoinGroup and SyncGroup on
//!   a connection of their own (they wait at the coordinator for the whole group; fetches
//!   and heartbeats must not queue behind them), heartbeats, LeaveGroup, metadata for
//!   pattern subscriptions and for the leader.
//! - [`RebalanceListener`]: run by the application's own `poll`, between the group's
//!   steps (revoke before joining, take the assignment after syncing), so it may await
//!   anything.
//!
//! Eager protocol (range, roundrobin, sticky): every partition is revoked before the member
//! rejoins. Cooperative protocol (cooperative-sticky alone): the member keeps its partitions
//! through the rebalance, revokes only those the new assignment leaves out, then rejoins so
//! that they can be handed over in the next generation (KIP-429).

pub(crate) mod coordinator;
pub mod leader;
mod listener;
pub mod machine;
pub mod wire;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

pub use listener::{ListenerFuture, NoopListener, RebalanceListener};
pub use machine::{AppStep, GroupMachine, GroupSettings, Subscription};

/// Who this consumer is in its group (Java's `ConsumerGroupMetadata`; defined in kafka-net,
/// where the transactional producer finds it too).
pub use kafka_net::ConsumerGroupMetadata;

/// What the consumer handle and the coordinator task share about the group.
pub(crate) struct GroupShared {
    machine: Mutex<GroupMachine>,
    /// Wakes the coordinator task.
    pub(crate) wake: Notify,
    listener: Mutex<Arc<dyn RebalanceListener>>,
    /// A poll is running the group's steps (and maybe awaiting the listener).
    in_steps: AtomicBool,
}

impl GroupShared {
    pub(crate) fn new(machine: GroupMachine) -> Self {
        Self {
            machine: Mutex::new(machine),
            wake: Notify::new(),
            listener: Mutex::new(Arc::new(NoopListener)),
            in_steps: AtomicBool::new(false),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, GroupMachine> {
        // Every critical section leaves the machine consistent before anything can panic.
        self.machine
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn listener(&self) -> Arc<dyn RebalanceListener> {
        self.listener
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    pub(crate) fn set_listener(&self, l: Arc<dyn RebalanceListener>) {
        *self
            .listener
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = l;
    }

    /// Claims the right to run the group's steps (one poll at a time; a poll called from
    /// inside a listener does not run them again).
    pub(crate) fn claim_steps(&self) -> Option<StepsClaim<'_>> {
        self.in_steps
            .compare_exchange(false, true, Ordering::AcqRel, Ordering::Acquire)
            .ok()
            .map(|_| StepsClaim(&self.in_steps))
    }

    pub(crate) fn steps_running(&self) -> bool {
        self.in_steps.load(Ordering::Acquire)
    }
}

/// Held while a poll runs the group's steps.
pub(crate) struct StepsClaim<'a>(&'a AtomicBool);

impl Drop for StepsClaim<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

#[cfg(test)]
mod tests;
