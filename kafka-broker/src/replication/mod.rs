//! Replication between brokers.
//!
//! - The follower side ([`ReplicaFetchers`], `fetcher`): `num.replica.fetchers` fetcher tasks
//!   per leader broker fetch the partitions this broker follows from it with Kafka's own
//!   protocol (Fetch with this broker's replica id and the leader epoch it knows;
//!   OffsetForLeaderEpoch first, to cut a divergent tail), and append what they get through
//!   the partition layer's follower path, bytes and offsets as the leader wrote them, taking
//!   the leader's high watermark and log start.
//! - The leader side lives in the Fetch handler and the partition layer (each follower's log
//!   end and caught-up time from its fetches, the high watermark over the ISR); [`isr`]
//!   carries the ISR changes the partitions ask for to the controller.
//! - [`ReplicationConfig`]: the `replica.*` keys.

mod config;
mod fetcher;
pub mod isr;
pub mod peers;

pub use config::ReplicationConfig;
pub use isr::IsrManager;
pub use peers::{Channel, PeerPool};

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use tokio::sync::watch;

use crate::clock::Clock;
use crate::replica::ReplicaManager;
use crate::sync::lock;

/// What a follower fetches one partition with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Followed {
    /// The leader epoch the image gives.
    pub leader_epoch: i32,
}

/// The partitions this broker follows, by leader, and the fetcher tasks of each leader
/// (`num.replica.fetchers` of them, keyed by leader and number; a partition always goes to
/// the same one).
#[derive(Debug)]
pub struct ReplicaFetchers {
    by_leader: Mutex<HashMap<(i32, usize), Fetcher>>,
    stopped: std::sync::atomic::AtomicBool,
    /// What every fetcher of this broker works with.
    local: fetcher::Local,
}

#[derive(Debug)]
struct Fetcher {
    addr: String,
    partitions: watch::Sender<HashMap<(String, i32), Followed>>,
}

impl ReplicaFetchers {
    /// Fetchers of broker `node_id`, appending to the partitions of `replicas` with
    /// `settings`, their connections from `peers`.
    pub fn new(
        replicas: Weak<ReplicaManager>,
        node_id: i32,
        clock: Clock,
        settings: ReplicationConfig,
        peers: Arc<PeerPool>,
    ) -> Self {
        Self {
            by_leader: Mutex::new(HashMap::new()),
            stopped: std::sync::atomic::AtomicBool::new(false),
            local: fetcher::Local {
                replicas,
                node_id,
                clock,
                settings,
                peers,
            },
        }
    }

    /// Follows `topic`-`partition` from `leader` at `addr` (its inter-broker listener); it is
    /// fetched from nowhere else.
    pub fn follow(
        &self,
        topic: &str,
        partition: i32,
        leader: i32,
        addr: String,
        leader_epoch: i32,
    ) {
        let key = (topic.to_owned(), partition);
        let slot = (
            leader,
            fetcher_of(topic, partition, self.local.settings.num_fetchers),
        );
        let mut all = lock(&self.by_leader);
        if self.stopped.load(std::sync::atomic::Ordering::Acquire) {
            return;
        }
        for (id, f) in all.iter() {
            if *id != slot {
                f.partitions.send_if_modified(|p| p.remove(&key).is_some());
            }
        }
        let fetcher = all.entry(slot).or_insert_with(|| {
            let (tx, rx) = watch::channel(HashMap::new());
            tokio::spawn(fetcher::run(
                self.local.clone(),
                leader,
                slot.1,
                addr.clone(),
                rx,
            ));
            Fetcher {
                addr: addr.clone(),
                partitions: tx,
            }
        });
        if fetcher.addr != addr {
            tracing::info!(leader, old = %fetcher.addr, new = %addr, "the leader's address changed");
        }
        let followed = Followed { leader_epoch };
        fetcher
            .partitions
            .send_if_modified(|p| p.insert(key, followed.clone()).as_ref() != Some(&followed));
    }

    /// Stops fetching `topic`-`partition` (this broker leads it now, or is no replica).
    pub fn unfollow(&self, topic: &str, partition: i32) {
        let key = (topic.to_owned(), partition);
        for f in lock(&self.by_leader).values() {
            f.partitions.send_if_modified(|p| p.remove(&key).is_some());
        }
    }

    /// Stops every fetcher (their tasks end when they see no sender) and takes no new ones:
    /// at shutdown, before the logs close.
    pub fn stop(&self) {
        let mut all = lock(&self.by_leader);
        all.clear();
        self.stopped
            .store(true, std::sync::atomic::Ordering::Release);
    }
}

/// Kafka's `AbstractFetcherManager.getFetcherId`: which of a leader's fetchers takes a
/// partition, `abs(31 * topic.hashCode + partition) % fetchers` with Java's `String.hashCode`.
fn fetcher_of(topic: &str, partition: i32, fetchers: usize) -> usize {
    let hash = topic
        .encode_utf16()
        .fold(0i32, |h, c| h.wrapping_mul(31).wrapping_add(i32::from(c)));
    let n = 31i32.wrapping_mul(hash).wrapping_add(partition);
    // Kafka's Utils.abs: i32::MIN counts as 0.
    let abs = if n == i32::MIN { 0 } else { n.unsigned_abs() };
    abs as usize % fetchers.max(1)
}

#[cfg(test)]
mod tests {
    #[test]
    fn partitions_spread_over_the_fetchers_as_in_kafka() {
        // "t".hashCode() == 116: 31 * 116 + p.
        assert_eq!(super::fetcher_of("t", 0, 4), 3596 % 4);
        assert_eq!(super::fetcher_of("t", 3, 5), 3599 % 5);
        assert_eq!(super::fetcher_of("anything", 7, 1), 0);
        let used: std::collections::BTreeSet<usize> =
            (0..12).map(|p| super::fetcher_of("orders", p, 3)).collect();
        assert_eq!(used.len(), 3);
    }
}
