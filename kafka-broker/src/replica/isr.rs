//! The replication state of one partition as plain data: its role and leader epoch, and on a
//! leader the followers it tracks (Kafka's `Replica` state, filled from their fetches), the
//! in-sync replicas, the ISR change in flight and the high watermark they allow. No locks, no
//! clock, no I/O: every input (a fetch, a tick, the controller's answer) comes in with `now`
//! and the facts of the log it needs, and an ISR change to ask the controller for comes out as
//! a value. [`super::Partition`] keeps one behind its state lock.
//!
//! Rules (Kafka's):
//! - A fetch names the leader epoch it knows; one that is not the current epoch is fenced
//!   (FENCED_LEADER_EPOCH when older, UNKNOWN_LEADER_EPOCH when newer) before anything here
//!   moves ([`ReplicaState::follower_fetched`]).
//! - A follower is caught up when it has the leader's log end, or had it within
//!   `replica.lag.time.max.ms`; one that is not leaves the ISR ([`ReplicaState::shrink`]). A
//!   follower out of the ISR joins it once it has the high watermark and everything written
//!   since the current leader epoch started.
//! - One ISR change at a time is asked for; the high watermark counts the maximal ISR (the
//!   committed one plus the members an expansion in flight adds), so an expansion counts at
//!   once and a shrink only once the controller committed it. A refused or unanswered change
//!   stops counting and may be asked again [`ISR_CHANGE_RETRY_MS`] later.

use kafka_protocol::error_code::ErrorCode;

/// How long after a refused or unanswered ISR change the leader waits before it asks again
/// (the metadata it was refused for is usually on its way).
pub const ISR_CHANGE_RETRY_MS: i64 = 500;

/// Whether this broker leads the partition or follows another broker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Leader,
    Follower,
}

/// A replica of this partition on another broker, as the leader tracks it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Follower {
    pub replica_id: i32,
    /// The follower's log end offset, as its last fetch said; -1 until it fetched.
    pub log_end_offset: i64,
    /// The follower's log start offset, as its last fetch said; -1 until it fetched.
    pub log_start_offset: i64,
    /// Member of the ISR the controller committed.
    pub in_sync: bool,
    /// The last time the follower was known to have everything the leader had (its fetch
    /// reached the leader's log end, or the log end of its previous fetch); 0 for never.
    pub last_caught_up_ms: i64,
    /// The leader's log end at the follower's previous fetch, and when that fetch came.
    last_fetch_leader_end: i64,
    last_fetch_ms: i64,
}

impl Follower {
    fn new(replica_id: i32, in_sync: bool, now_ms: i64) -> Self {
        Self {
            replica_id,
            log_end_offset: -1,
            log_start_offset: -1,
            in_sync,
            // An in-sync follower gets a whole `replica.lag.time.max.ms` from the leadership
            // change before it can be found lagging.
            last_caught_up_ms: if in_sync { now_ms } else { 0 },
            last_fetch_leader_end: -1,
            last_fetch_ms: 0,
        }
    }

    /// Kafka's `Replica.isCaughtUp`: it has the leader's log end, or had it within `max_lag_ms`.
    fn caught_up(&self, leader_end: i64, now_ms: i64, max_lag_ms: i64) -> bool {
        self.log_end_offset == leader_end || now_ms - self.last_caught_up_ms <= max_lag_ms
    }
}

/// The leadership a leader takes from the metadata (the image's partition record).
#[derive(Debug, Clone, Copy)]
pub struct Leadership<'a> {
    pub leader_epoch: i32,
    /// The partition epoch of `isr` (it moves with every ISR change).
    pub partition_epoch: i32,
    /// This broker's id (the leader's own entry of the ISR; -1 on a single node).
    pub local_id: i32,
    /// The other replicas.
    pub followers: &'a [i32],
    /// The committed in-sync replicas (the leader's own id may be among them).
    pub isr: &'a [i32],
}

/// An ISR change a leader asks the controller for (AlterPartition), made against the ISR of
/// `partition_epoch`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IsrChange {
    pub leader_epoch: i32,
    pub partition_epoch: i32,
    /// The whole new ISR, the leader first.
    pub isr: Vec<i32>,
}

#[derive(Debug, Clone)]
struct PendingIsr {
    isr: Vec<i32>,
    /// When the controller refused it or did not answer: it no longer counts, and a new
    /// change may be sent [`ISR_CHANGE_RETRY_MS`] later.
    failed_at_ms: Option<i64>,
}

/// One partition's replication state (see the module docs).
#[derive(Debug, Clone)]
pub struct ReplicaState {
    role: Role,
    leader_epoch: i32,
    /// This broker's replica id (-1 on a single node).
    local_id: i32,
    followers: Vec<Follower>,
    /// The partition epoch of the committed ISR the followers' `in_sync` flags hold.
    partition_epoch: i32,
    /// An ISR change sent to the controller and not answered yet.
    pending: Option<PendingIsr>,
    /// Where the current leader epoch started in the log: a follower joins the ISR only once
    /// it has everything from there.
    epoch_start_offset: i64,
}

impl ReplicaState {
    /// A replica that neither leads nor follows yet, at `leader_epoch` (the latest of its log).
    pub fn new(leader_epoch: i32) -> Self {
        Self {
            role: Role::Follower,
            leader_epoch,
            local_id: -1,
            followers: Vec::new(),
            partition_epoch: -1,
            pending: None,
            epoch_start_offset: 0,
        }
    }

    pub fn role(&self) -> Role {
        self.role
    }

    pub fn is_leader(&self) -> bool {
        self.role == Role::Leader
    }

    pub fn leader_epoch(&self) -> i32 {
        self.leader_epoch
    }

    /// Refuses a leadership change to an epoch older than the current one
    /// (FENCED_LEADER_EPOCH).
    pub fn check_new_epoch(&self, epoch: i32) -> Result<(), ErrorCode> {
        if epoch < self.leader_epoch {
            Err(ErrorCode::FENCED_LEADER_EPOCH)
        } else {
            Ok(())
        }
    }

    /// The fence check of every request that names the leader epoch it knows (Fetch,
    /// ListOffsets, OffsetForLeaderEpoch, ...): -1 (unknown) passes; an older epoch is
    /// FENCED_LEADER_EPOCH, a newer one UNKNOWN_LEADER_EPOCH (this broker has not heard of it
    /// yet).
    pub fn check_request_epoch(&self, current_leader_epoch: i32) -> Result<(), ErrorCode> {
        if current_leader_epoch < 0 {
            return Ok(());
        }
        match current_leader_epoch.cmp(&self.leader_epoch) {
            std::cmp::Ordering::Equal => Ok(()),
            std::cmp::Ordering::Less => Err(ErrorCode::FENCED_LEADER_EPOCH),
            std::cmp::Ordering::Greater => Err(ErrorCode::UNKNOWN_LEADER_EPOCH),
        }
    }

    /// Whether `l` is the leadership held now (same role and epoch): taking it again only
    /// updates the replica set and the ISR ([`Self::relead`]).
    pub fn holds(&self, l: &Leadership<'_>) -> bool {
        self.is_leader() && self.leader_epoch == l.leader_epoch
    }

    /// Takes a new leadership at `l`'s epoch, which started at `epoch_start_offset` in the log
    /// (its log end): the followers' fetch state is forgotten.
    pub fn take_leadership(&mut self, l: &Leadership<'_>, epoch_start_offset: i64, now_ms: i64) {
        self.role = Role::Leader;
        self.leader_epoch = l.leader_epoch;
        self.local_id = l.local_id;
        self.partition_epoch = l.partition_epoch;
        self.pending = None;
        self.epoch_start_offset = epoch_start_offset;
        self.followers = l
            .followers
            .iter()
            .map(|&id| Follower::new(id, l.isr.contains(&id), now_ms))
            .collect();
    }

    /// The leadership held, again (a new ISR or replica set from the controller): each
    /// follower keeps its fetch state; the ISR is taken unless it is older than the one held
    /// (an AlterPartition answer may arrive before the metadata that records it).
    pub fn relead(&mut self, l: &Leadership<'_>, now_ms: i64) {
        self.local_id = l.local_id;
        let take_isr = l.partition_epoch >= self.partition_epoch;
        let mut followers = Vec::with_capacity(l.followers.len());
        for &id in l.followers {
            let mut f = self
                .followers
                .iter()
                .find(|f| f.replica_id == id)
                .copied()
                .unwrap_or_else(|| Follower::new(id, l.isr.contains(&id), now_ms));
            if take_isr {
                f.in_sync = l.isr.contains(&id);
            }
            followers.push(f);
        }
        self.followers = followers;
        if take_isr {
            if l.partition_epoch > self.partition_epoch {
                // The change in flight was made against an older ISR: it is committed, or
                // will be refused.
                self.pending = None;
            }
            self.partition_epoch = l.partition_epoch;
        }
    }

    /// Becomes a follower at `epoch`.
    pub fn follow(&mut self, epoch: i32) {
        self.role = Role::Follower;
        self.leader_epoch = epoch;
        self.followers.clear();
        self.pending = None;
    }

    /// Whether a follower counts for the high watermark and the acks=all condition.
    fn in_maximal_isr(&self, f: &Follower) -> bool {
        f.in_sync
            || self
                .pending
                .as_ref()
                .is_some_and(|p| p.failed_at_ms.is_none() && p.isr.contains(&f.replica_id))
    }

    /// A leader's high watermark: the smallest of what the local log vouches for (`local`) and
    /// the log ends of the followers in the maximal ISR. `None` on a follower.
    pub fn high_watermark(&self, local: i64) -> Option<i64> {
        self.is_leader().then(|| {
            self.followers
                .iter()
                .filter(|f| self.in_maximal_isr(f))
                .map(|f| f.log_end_offset)
                .fold(local, i64::min)
        })
    }

    /// Whether a new ISR change may be sent now.
    fn may_change(&mut self, now_ms: i64) -> bool {
        match &self.pending {
            None => true,
            Some(PendingIsr {
                failed_at_ms: Some(at),
                ..
            }) if now_ms - at >= ISR_CHANGE_RETRY_MS => {
                self.pending = None;
                true
            }
            Some(_) => false,
        }
    }

    /// The committed ISR with `add` and without `remove`, the leader first.
    fn isr_with(&self, add: Option<i32>, remove: &[i32]) -> Vec<i32> {
        std::iter::once(self.local_id)
            .chain(
                self.followers
                    .iter()
                    .filter(|f| f.in_sync || add == Some(f.replica_id))
                    .map(|f| f.replica_id)
                    .filter(|id| !remove.contains(id)),
            )
            .collect()
    }

    fn propose(&mut self, isr: Vec<i32>) -> IsrChange {
        self.pending = Some(PendingIsr {
            isr: isr.clone(),
            failed_at_ms: None,
        });
        IsrChange {
            leader_epoch: self.leader_epoch,
            partition_epoch: self.partition_epoch,
            isr,
        }
    }

    /// A follower's fetch reached the leader: from `fetch_offset`, its log starting at
    /// `log_start_offset` (-1: it did not say), naming `fetch_epoch`, when the leader's log
    /// ended at `leader_end` and its high watermark was `hw`. The epoch is checked first: a
    /// fetch for another epoch is refused (see [`Self::check_request_epoch`]) and moves
    /// nothing, as is a fetch to a replica that does not lead or from an unknown replica
    /// (NOT_LEADER_OR_FOLLOWER). Otherwise the follower's log end, log start and caught-up
    /// time follow (Kafka's `Replica.updateFetchState`), and the ISR expansion to ask for is
    /// returned when a follower out of the ISR has caught up.
    #[allow(clippy::too_many_arguments)]
    pub fn follower_fetched(
        &mut self,
        replica_id: i32,
        fetch_epoch: i32,
        fetch_offset: i64,
        log_start_offset: i64,
        leader_end: i64,
        hw: i64,
        now_ms: i64,
    ) -> Result<Option<IsrChange>, ErrorCode> {
        self.check_request_epoch(fetch_epoch)?;
        if !self.is_leader() {
            return Err(ErrorCode::NOT_LEADER_OR_FOLLOWER);
        }
        let start = self.epoch_start_offset;
        let f = self
            .followers
            .iter_mut()
            .find(|f| f.replica_id == replica_id)
            .ok_or(ErrorCode::NOT_LEADER_OR_FOLLOWER)?;
        if fetch_offset >= leader_end {
            f.last_caught_up_ms = f.last_caught_up_ms.max(now_ms);
        } else if fetch_offset >= f.last_fetch_leader_end {
            f.last_caught_up_ms = f.last_caught_up_ms.max(f.last_fetch_ms);
        }
        f.log_end_offset = fetch_offset;
        if log_start_offset >= 0 {
            f.log_start_offset = log_start_offset;
        }
        f.last_fetch_leader_end = leader_end;
        f.last_fetch_ms = now_ms;
        let joins = !f.in_sync && fetch_offset >= hw && fetch_offset >= start;
        if joins && self.may_change(now_ms) {
            let isr = self.isr_with(Some(replica_id), &[]);
            Ok(Some(self.propose(isr)))
        } else {
            Ok(None)
        }
    }

    /// The ISR shrink to ask the controller for (Kafka's `maybeShrinkIsr`, run every half
    /// `replica.lag.time.max.ms`): the in-sync followers that have not caught up with the
    /// leader's log end `leader_end` within `max_lag_ms` leave. Returns the change and who
    /// leaves.
    pub fn shrink(
        &mut self,
        leader_end: i64,
        now_ms: i64,
        max_lag_ms: i64,
    ) -> Option<(IsrChange, Vec<i32>)> {
        if !self.is_leader() {
            return None;
        }
        let lagging: Vec<i32> = self
            .followers
            .iter()
            .filter(|f| f.in_sync && !f.caught_up(leader_end, now_ms, max_lag_ms))
            .map(|f| f.replica_id)
            .collect();
        if lagging.is_empty() || !self.may_change(now_ms) {
            return None;
        }
        let isr = self.isr_with(None, &lagging);
        Some((self.propose(isr), lagging))
    }

    /// The controller's answer to an ISR change: the ISR it committed at `partition_epoch`
    /// (taken when it is for the current leader epoch and not older than the one held).
    /// Returns whether it was taken.
    pub fn isr_changed(&mut self, leader_epoch: i32, partition_epoch: i32, isr: &[i32]) -> bool {
        // Answered either way: the next change may be asked for.
        self.pending = None;
        if !self.is_leader()
            || leader_epoch != self.leader_epoch
            || partition_epoch < self.partition_epoch
        {
            return false;
        }
        for f in &mut self.followers {
            f.in_sync = isr.contains(&f.replica_id);
        }
        self.partition_epoch = partition_epoch;
        true
    }

    /// The controller refused the change in flight, or did not answer: it no longer counts;
    /// another may be sent after [`ISR_CHANGE_RETRY_MS`].
    pub fn isr_change_failed(&mut self, now_ms: i64) {
        if let Some(p) = self.pending.as_mut() {
            p.failed_at_ms = Some(now_ms);
        }
    }

    /// Puts a follower in or out of the in-sync set, as if the controller had agreed (tests).
    pub fn set_in_sync(&mut self, replica_id: i32, in_sync: bool) {
        if let Some(f) = self
            .followers
            .iter_mut()
            .find(|f| f.replica_id == replica_id)
        {
            f.in_sync = in_sync;
        }
    }

    /// The size of the committed ISR, the leader included (what `min.insync.replicas` is
    /// checked against before an acks=all append).
    pub fn in_sync_count(&self) -> usize {
        1 + self.followers.iter().filter(|f| f.in_sync).count()
    }

    /// The size of the maximal ISR (the committed one and an expansion in flight): what
    /// `min.insync.replicas` is checked against once an acks=all append is replicated.
    pub fn maximal_isr_count(&self) -> usize {
        1 + self
            .followers
            .iter()
            .filter(|f| self.in_maximal_isr(f))
            .count()
    }

    /// The committed ISR and its partition epoch, the leader first.
    pub fn isr(&self) -> (Vec<i32>, i32) {
        (self.isr_with(None, &[]), self.partition_epoch)
    }

    /// The followers the leader tracks.
    pub fn followers(&self) -> &[Follower] {
        &self.followers
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Node 1 leading at epoch 3 with followers 2 (in sync) and 3 (not), its epoch having
    /// started at offset 10.
    fn leader(now: i64) -> ReplicaState {
        let mut s = ReplicaState::new(0);
        let l = Leadership {
            leader_epoch: 3,
            partition_epoch: 7,
            local_id: 1,
            followers: &[2, 3],
            isr: &[1, 2],
        };
        assert!(!s.holds(&l));
        s.take_leadership(&l, 10, now);
        assert!(s.holds(&l));
        s
    }

    #[test]
    fn a_fetch_for_another_epoch_moves_nothing() {
        let mut s = leader(1_000);
        let before = s.clone();
        // Follower 3 has everything (offset 50 = the leader's end, above the high watermark)
        // but names an old epoch, then a newer one.
        assert_eq!(
            s.follower_fetched(3, 2, 50, 0, 50, 40, 2_000),
            Err(ErrorCode::FENCED_LEADER_EPOCH)
        );
        assert_eq!(
            s.follower_fetched(3, 4, 50, 0, 50, 40, 2_000),
            Err(ErrorCode::UNKNOWN_LEADER_EPOCH)
        );
        // In-sync follower 2 likewise: its log end does not move the high watermark.
        assert_eq!(
            s.follower_fetched(2, 2, 50, 0, 50, 40, 2_000),
            Err(ErrorCode::FENCED_LEADER_EPOCH)
        );
        assert_eq!(s.followers(), before.followers(), "no follower state moved");
        assert_eq!(s.isr(), before.isr());
        assert_eq!(s.high_watermark(50), before.high_watermark(50));
        assert_eq!(s.maximal_isr_count(), 2, "no expansion in flight");
        // The same fetch with the current epoch (or none) counts.
        let change = s.follower_fetched(3, 3, 50, 0, 50, 40, 2_000).unwrap();
        assert_eq!(
            change,
            Some(IsrChange {
                leader_epoch: 3,
                partition_epoch: 7,
                isr: vec![1, 2, 3]
            })
        );
        assert_eq!(s.maximal_isr_count(), 3, "an expansion counts at once");
    }

    #[test]
    fn fetches_that_reach_no_leader_or_no_follower_are_refused() {
        let mut s = ReplicaState::new(3);
        assert_eq!(
            s.follower_fetched(2, 3, 5, 0, 5, 5, 1),
            Err(ErrorCode::NOT_LEADER_OR_FOLLOWER)
        );
        let mut s = leader(0);
        assert_eq!(
            s.follower_fetched(9, -1, 5, 0, 5, 5, 1),
            Err(ErrorCode::NOT_LEADER_OR_FOLLOWER),
            "not a replica of this partition"
        );
    }

    #[test]
    fn the_high_watermark_counts_the_maximal_isr() {
        let mut s = leader(0);
        // Follower 2 (in sync) has not fetched: it holds the high watermark at -1.
        assert_eq!(s.high_watermark(20), Some(-1));
        s.follower_fetched(2, 3, 15, 0, 20, 0, 1).unwrap();
        assert_eq!(s.high_watermark(20), Some(15));
        // Follower 3 catches up past the epoch start and the high watermark: it is proposed
        // and counts at once (its log end 12 now bounds the high watermark).
        let change = s.follower_fetched(3, -1, 12, 0, 20, 12, 2).unwrap();
        assert!(change.is_some());
        assert_eq!(s.high_watermark(20), Some(12));
        // Refused: it stops counting; no new change before the retry delay.
        s.isr_change_failed(3);
        assert_eq!(s.high_watermark(20), Some(15));
        assert_eq!(s.follower_fetched(3, -1, 20, 0, 20, 15, 4).unwrap(), None);
        let again = s.follower_fetched(3, -1, 20, 0, 20, 15, 3 + ISR_CHANGE_RETRY_MS);
        assert!(again.unwrap().is_some());
        // Committed: in the ISR.
        assert!(s.isr_changed(3, 8, &[1, 2, 3]));
        assert_eq!(s.isr(), (vec![1, 2, 3], 8));
        assert_eq!(s.in_sync_count(), 3);
        // A follower's high watermark is not computed.
        s.follow(4);
        assert_eq!(s.high_watermark(20), None);
    }

    #[test]
    fn a_follower_joins_only_with_everything_of_the_current_epoch() {
        let mut s = leader(0);
        // At the high watermark (5) but before the epoch's start (10): not yet.
        assert_eq!(s.follower_fetched(3, 3, 5, 0, 30, 5, 1).unwrap(), None);
        assert_eq!(s.follower_fetched(3, 3, 9, 0, 30, 5, 2).unwrap(), None);
        assert!(s.follower_fetched(3, 3, 10, 0, 30, 5, 3).unwrap().is_some());
    }

    #[test]
    fn lagging_followers_leave_and_stale_answers_are_ignored() {
        let mut s = leader(0);
        // Follower 2 fetched at the leader's end at 100 ms; with a lag limit of 1 s it is
        // still caught up at 1,000 ms, not at 1,200 ms with the leader further on.
        s.follower_fetched(2, 3, 40, 0, 40, 0, 100).unwrap();
        assert!(s.shrink(50, 1_000, 1_000).is_none());
        let (change, out) = s.shrink(50, 1_200, 1_000).unwrap();
        assert_eq!(out, vec![2]);
        assert_eq!(change.isr, vec![1]);
        // A shrink counts only once committed: 2 still counts meanwhile.
        assert_eq!(s.maximal_isr_count(), 2);
        // One change at a time.
        assert!(s.shrink(50, 1_300, 1_000).is_none());
        // An answer for an old epoch or an older partition epoch is not taken.
        assert!(!s.isr_changed(2, 8, &[1]));
        assert!(!s.isr_changed(3, 6, &[1]));
        assert!(s.isr_changed(3, 8, &[1]));
        assert_eq!(s.in_sync_count(), 1);
        assert_eq!(s.maximal_isr_count(), 1);
    }

    #[test]
    fn the_same_leadership_again_keeps_fetch_state_and_takes_a_newer_isr() {
        let mut s = leader(0);
        s.follower_fetched(2, 3, 30, 4, 30, 0, 5).unwrap();
        let again = Leadership {
            leader_epoch: 3,
            partition_epoch: 9,
            local_id: 1,
            followers: &[2, 3],
            isr: &[1, 2, 3],
        };
        assert!(s.holds(&again));
        s.relead(&again, 6);
        let f2 = s.followers()[0];
        assert_eq!((f2.log_end_offset, f2.log_start_offset), (30, 4));
        assert_eq!(s.isr(), (vec![1, 2, 3], 9));
        // An older ISR (partition epoch 8) does not replace it.
        let older = Leadership {
            partition_epoch: 8,
            isr: &[1],
            ..again
        };
        s.relead(&older, 7);
        assert_eq!(s.isr(), (vec![1, 2, 3], 9));
        // Older leader epochs are refused; requests are fenced by epoch.
        assert_eq!(s.check_new_epoch(2), Err(ErrorCode::FENCED_LEADER_EPOCH));
        assert_eq!(s.check_new_epoch(3), Ok(()));
        assert_eq!(s.check_request_epoch(-1), Ok(()));
        assert_eq!(s.check_request_epoch(3), Ok(()));
    }
}
