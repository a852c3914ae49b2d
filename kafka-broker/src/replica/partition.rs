//! One partition hosted here, as the partition layer sees it: its log, its idempotent-producer
//! state, its leader epoch, the replicas that follow it and its high watermark, and the
//! waiters to wake when the high watermark moves.
//!
//! Transactions: the producer state tracks each producer's open transaction (opened by its
//! first transactional batch, ended by the COMMIT or ABORT marker a coordinator writes with
//! [`Partition::write_txn_marker`]); an abort is recorded in the `.txnindex` of the segment
//! holding its marker. The last stable offset is the high watermark, or the first offset of
//! the earliest transaction still open or whose marker the high watermark has not passed,
//! whichever is lower (Kafka's rule): it only moves when the high watermark does, so the
//! waiters woken then are the ones waiting on it. Followers track the same from the batch
//! headers they copy.
//!
//! Locks, always taken in this order: producer state, then the log, then the followers. The
//! sequence check and the append happen under the first two, so they are atomic. Nothing here
//! waits for I/O other than the log's own page-cache writes: fsyncs and acknowledgements are
//! waited for by [`super::delayed`] with every lock released.

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::{Bytes, BytesMut};
use kafka_protocol::error_code::ErrorCode;
use tokio::sync::Notify;

use crate::error::BrokerError;
use crate::log::{
    AbortedTxn, AppendInfo, CleanStats, CleanerLimits, Flusher, Log, LogConfig, LogError, ReadInfo,
    SharedLog, lock_log,
};
use crate::producer_state::{
    BatchMeta, Check, CompletedTxn, Marker, ProducerStates, ProducerView, last_seq,
};
use crate::rate_limit::RateLimit;
use crate::sync::lock;

/// The facts of one validated batch that the partition needs.
#[derive(Debug, Clone, Copy)]
pub struct BatchSummary {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub records: i32,
    pub max_timestamp: i64,
    /// The batch's transactional attribute: its records belong to the producer's open
    /// transaction and stay invisible to read_committed until its marker.
    pub transactional: bool,
}

/// Result of a produce to this partition.
#[derive(Debug, Clone, Copy)]
pub struct Appended {
    pub base_offset: i64,
    pub last_offset: i64,
    /// -1 unless the topic uses LogAppendTime.
    pub log_append_time: i64,
    pub log_start_offset: i64,
    /// The batch was a retry of one already written; nothing was appended.
    pub duplicate: bool,
}

/// Offsets of a partition at one moment.
#[derive(Debug, Clone, Copy)]
pub struct Offsets {
    pub log_start: i64,
    pub log_end: i64,
    pub high_watermark: i64,
    /// Last stable offset: the high watermark, or the first offset of the earliest
    /// transaction that is open or whose marker is not below the high watermark yet.
    pub last_stable: i64,
}

/// After an append that must be durable before it is acknowledged: sync this flusher up to
/// this offset, outside every lock.
pub type SyncNeeded = Option<(Arc<Flusher>, i64)>;

/// What a leader's append still needs before it may be acknowledged: an fsync (group commit)
/// and, for acks=all, a high watermark at or past `required`. Waited for by
/// [`super::delayed::complete_append`].
#[derive(Debug)]
pub struct PendingAck {
    pub(crate) partition: Arc<Partition>,
    /// The offset after the appended batches.
    pub(crate) required: i64,
    pub(crate) sync: SyncNeeded,
    /// acks=all: the ISR must still hold this many replicas once the batch is replicated
    /// (`min.insync.replicas`; else NOT_ENOUGH_REPLICAS_AFTER_APPEND). 0: not checked.
    pub(crate) min_insync: usize,
}

impl PendingAck {
    /// Checks `min.insync.replicas` once the batch is replicated (acks=all).
    pub fn with_min_insync(mut self, min_insync: usize) -> Self {
        self.min_insync = min_insync;
        self
    }

    /// Whether nothing is left to wait for (no fsync due, the high watermark covers it).
    pub fn is_acknowledged(&self) -> bool {
        self.sync.is_none() && self.partition.high_watermark() >= self.required
    }
}

/// A replica of this partition on another broker, as the leader tracks it (Kafka's
/// `Replica` state, filled from the follower's fetches).
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

/// How long after a refused or unanswered ISR change the leader waits before it asks again
/// (the metadata it was refused for is usually on its way).
pub const ISR_CHANGE_RETRY_MS: i64 = 500;

/// Whether this broker leads the partition or follows another broker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Leader,
    Follower,
}

#[derive(Debug)]
struct Replicas {
    role: Role,
    /// This broker's replica id (-1 on a single node).
    local_id: i32,
    followers: Vec<Follower>,
    /// The partition epoch of the committed ISR the followers' `in_sync` flags hold.
    partition_epoch: i32,
    /// An ISR change sent to the controller and not answered yet: no other is sent meanwhile,
    /// and the high watermark counts its new members too (Kafka's "maximal ISR": an
    /// expansion counts at once, a shrink only once committed).
    pending: Option<PendingIsr>,
    /// Where the current leader epoch started in the log: a follower joins the ISR only once
    /// it has everything from there.
    epoch_start_offset: i64,
}

#[derive(Debug)]
struct PendingIsr {
    isr: Vec<i32>,
    /// When the controller refused it or did not answer: it no longer counts, and a new
    /// change may be sent [`ISR_CHANGE_RETRY_MS`] later.
    failed_at_ms: Option<i64>,
}

impl Replicas {
    /// Whether a follower counts for the high watermark and the acks=all condition.
    fn in_maximal_isr(&self, f: &Follower) -> bool {
        f.in_sync
            || self
                .pending
                .as_ref()
                .is_some_and(|p| p.failed_at_ms.is_none() && p.isr.contains(&f.replica_id))
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

    fn propose(&mut self, leader_epoch: i32, isr: Vec<i32>) -> IsrChange {
        self.pending = Some(PendingIsr {
            isr: isr.clone(),
            failed_at_ms: None,
        });
        IsrChange {
            leader_epoch,
            partition_epoch: self.partition_epoch,
            isr,
        }
    }
}

pub struct Partition {
    pub topic: String,
    pub index: i32,
    log: SharedLog,
    /// Locked before the log when both are needed.
    producers: Mutex<ProducerStates>,
    leader_epoch: AtomicI32,
    /// Locked after the log.
    replicas: Mutex<Replicas>,
    /// Woken when the high watermark moves, the log start moves, the log is truncated or the
    /// leadership changes: what fetches and acks=all produces waiting on this partition watch.
    changed: Notify,
    /// Appends that failed on the disk (ENOSPC, EIO, a failed fsync), logged once per
    /// [`APPEND_FAILURE_LOG_INTERVAL`] with a count.
    append_failures: Mutex<RateLimit>,
}

/// How often a partition whose appends keep failing on the disk says so (ours): one line per
/// partition per interval, with the number of failures since the last line.
pub const APPEND_FAILURE_LOG_INTERVAL: std::time::Duration = std::time::Duration::from_secs(10);

impl std::fmt::Debug for Partition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Partition({}-{})", self.topic, self.index)
    }
}

impl Partition {
    /// A partition over an open log, neither leader nor serving until
    /// [`Self::become_leader`] or [`Self::become_follower`]. Its leader epoch is the latest one
    /// in the log's leader epoch cache (0 for a new log). Its high watermark starts at
    /// `high_watermark`, the checkpointed one (see [`super::checkpoint`]), or at the log start
    /// without one: never at the log end, which may hold what the leader never committed. A
    /// leader recomputes it from its replicas at once.
    pub fn new(
        topic: &str,
        index: i32,
        log: SharedLog,
        producers: ProducerStates,
        high_watermark: Option<i64>,
    ) -> Self {
        let epoch = {
            let mut l = lock_log(&log);
            let start = l.log_start_offset();
            l.set_high_watermark(high_watermark.unwrap_or(start));
            l.latest_epoch().unwrap_or(0).max(0)
        };
        Self {
            topic: topic.to_owned(),
            index,
            log,
            producers: Mutex::new(producers),
            leader_epoch: AtomicI32::new(epoch),
            replicas: Mutex::new(Replicas {
                role: Role::Follower,
                local_id: -1,
                followers: Vec::new(),
                partition_epoch: -1,
                pending: None,
                epoch_start_offset: 0,
            }),
            changed: Notify::new(),
            append_failures: Mutex::new(RateLimit::new(APPEND_FAILURE_LOG_INTERVAL)),
        }
    }

    /// Whether the log failed an fsync: it refuses appends until it is reopened (see
    /// [`crate::Broker::retry_offline`]).
    pub fn log_failed(&self) -> bool {
        self.log().flusher().is_poisoned()
    }

    /// The log end offset.
    pub fn log_end_offset(&self) -> i64 {
        self.log().log_end_offset()
    }

    /// Reports an append that failed on the disk, rate-limited (see the field's docs).
    fn append_failed(&self, error: &crate::log::LogError) {
        let now = std::time::Instant::now();
        if let Some(failures) = lock(&self.append_failures).hit(now) {
            tracing::warn!(
                topic = %self.topic,
                partition = self.index,
                %error,
                failures,
                "appends failing on the disk: {failures} since the last report (one report \
                 per partition every {} s)",
                APPEND_FAILURE_LOG_INTERVAL.as_secs()
            );
        }
    }

    fn producers(&self) -> MutexGuard<'_, ProducerStates> {
        lock(&self.producers)
    }

    fn log(&self) -> MutexGuard<'_, Log> {
        lock_log(&self.log)
    }

    /// What waiters on this partition watch (see the field's docs).
    pub(crate) fn changed(&self) -> &Notify {
        &self.changed
    }

    fn wake(&self) {
        self.changed.notify_waiters();
    }

    // ----- leadership -----

    /// The current leader epoch.
    pub fn leader_epoch(&self) -> i32 {
        self.leader_epoch.load(Ordering::Acquire)
    }

    /// Whether this broker leads the partition.
    pub fn is_leader(&self) -> bool {
        lock(&self.replicas).role == Role::Leader
    }

    /// Becomes leader at `epoch` with these followers (by replica id; all in sync when they are
    /// in `isr`), as a single node or a test does: partition epoch 0, no local id.
    pub fn become_leader(
        &self,
        epoch: i32,
        followers: &[i32],
        isr: &[i32],
    ) -> Result<(), BrokerError> {
        self.lead(
            &Leadership {
                leader_epoch: epoch,
                partition_epoch: 0,
                local_id: -1,
                followers,
                isr,
            },
            crate::broker::now_ms(),
        )
    }

    /// Takes the leadership the metadata gives. A new leader epoch starts at the log end in
    /// the leader epoch cache (persisted before this returns) and forgets what the followers
    /// fetched; the same epoch again (a new ISR or replica set from the controller) keeps each
    /// follower's fetch state and takes the ISR unless it is older than the one held (an
    /// AlterPartition answer may arrive before the metadata that records it). An epoch older
    /// than the current one is refused (FENCED_LEADER_EPOCH).
    pub fn lead(&self, l: &Leadership<'_>, now_ms: i64) -> Result<(), BrokerError> {
        self.check_new_epoch(l.leader_epoch)?;
        let same = self.is_leader() && self.leader_epoch() == l.leader_epoch;
        if same {
            {
                let mut r = lock(&self.replicas);
                r.local_id = l.local_id;
                let take_isr = l.partition_epoch >= r.partition_epoch;
                let mut followers = Vec::with_capacity(l.followers.len());
                for &id in l.followers {
                    let mut f = r
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
                r.followers = followers;
                if take_isr {
                    if l.partition_epoch > r.partition_epoch {
                        // The change in flight was made against an older ISR: it is
                        // committed, or will be refused.
                        r.pending = None;
                    }
                    r.partition_epoch = l.partition_epoch;
                }
            }
            self.update_high_watermark();
            self.wake();
            return Ok(());
        }
        let start = {
            let mut log = self.log();
            log.assign_epoch_at_end(l.leader_epoch)?;
            log.log_end_offset()
        };
        {
            let mut r = lock(&self.replicas);
            r.role = Role::Leader;
            r.local_id = l.local_id;
            r.partition_epoch = l.partition_epoch;
            r.pending = None;
            r.epoch_start_offset = start;
            r.followers = l
                .followers
                .iter()
                .map(|&id| Follower::new(id, l.isr.contains(&id), now_ms))
                .collect();
        }
        self.leader_epoch.store(l.leader_epoch, Ordering::Release);
        self.update_high_watermark();
        self.wake();
        Ok(())
    }

    /// Becomes a follower at `epoch`. The log is not touched: the replication layer truncates
    /// it (by OffsetForLeaderEpoch) before it fetches.
    pub fn become_follower(&self, epoch: i32) -> Result<(), BrokerError> {
        self.check_new_epoch(epoch)?;
        {
            let mut r = lock(&self.replicas);
            r.role = Role::Follower;
            r.followers.clear();
            r.pending = None;
        }
        self.leader_epoch.store(epoch, Ordering::Release);
        self.wake();
        Ok(())
    }

    fn check_new_epoch(&self, epoch: i32) -> Result<(), BrokerError> {
        let current = self.leader_epoch();
        if epoch < current {
            return Err(BrokerError::kafka(
                ErrorCode::FENCED_LEADER_EPOCH,
                format!(
                    "{}-{}: leader epoch {epoch} is older than the current epoch {current}",
                    self.topic, self.index
                ),
            ));
        }
        Ok(())
    }

    /// The fence check of every request that names the leader epoch it knows (Fetch,
    /// ListOffsets, OffsetForLeaderEpoch, ...): -1 (unknown) passes; an older epoch is
    /// FENCED_LEADER_EPOCH, a newer one UNKNOWN_LEADER_EPOCH (this broker has not heard of it
    /// yet).
    pub fn check_leader_epoch(&self, current_leader_epoch: i32) -> Result<(), ErrorCode> {
        if current_leader_epoch < 0 {
            return Ok(());
        }
        let epoch = self.leader_epoch();
        match current_leader_epoch.cmp(&epoch) {
            std::cmp::Ordering::Equal => Ok(()),
            std::cmp::Ordering::Less => Err(ErrorCode::FENCED_LEADER_EPOCH),
            std::cmp::Ordering::Greater => Err(ErrorCode::UNKNOWN_LEADER_EPOCH),
        }
    }

    fn require_leader(&self) -> Result<(), BrokerError> {
        if self.is_leader() {
            Ok(())
        } else {
            Err(BrokerError::kafka(
                ErrorCode::NOT_LEADER_OR_FOLLOWER,
                format!("{}-{} is not led by this broker", self.topic, self.index),
            ))
        }
    }

    // ----- high watermark -----

    /// The high watermark.
    pub fn high_watermark(&self) -> i64 {
        self.log().high_watermark()
    }

    /// Recomputes the high watermark of a leader: the smallest of what the local log vouches
    /// for (its log end; in durable mode the fsynced offset) and the log end offsets of the
    /// in-sync followers. It only moves forward. Wakes the waiters when it moved.
    fn update_high_watermark(&self) -> bool {
        let moved = {
            let mut log = self.log();
            let r = lock(&self.replicas);
            if r.role != Role::Leader {
                return false;
            }
            let local = if log.config().is_durable() {
                log.flusher().durable_offset().min(log.log_end_offset())
            } else {
                log.log_end_offset()
            };
            let hw = r
                .followers
                .iter()
                .filter(|f| r.in_maximal_isr(f))
                .map(|f| f.log_end_offset)
                .fold(local, i64::min);
            let moved = hw > log.high_watermark();
            if moved {
                log.set_high_watermark(hw);
            }
            moved
        };
        if moved {
            self.wake();
        }
        moved
    }

    /// The durable offset of the log moved to `durable` (an fsync finished).
    pub(crate) fn on_durable(&self, _durable: i64) {
        self.update_high_watermark();
    }

    /// A follower fetched from `fetch_offset` at `now_ms`, its log starting at
    /// `log_start_offset` (-1: it did not say); the Fetch handler calls this for each of a
    /// follower's partitions. Its log end, log start, caught-up time (Kafka's
    /// `Replica.updateFetchState`) and the high watermark follow. Returns the ISR expansion
    /// to ask the controller for when a follower out of the ISR has caught up: it has the
    /// high watermark and everything since the current leader epoch started.
    pub fn update_follower(
        &self,
        replica_id: i32,
        fetch_offset: i64,
        log_start_offset: i64,
        now_ms: i64,
    ) -> Option<IsrChange> {
        let change = {
            let log = self.log();
            let (leader_end, hw) = (log.log_end_offset(), log.high_watermark());
            let mut r = lock(&self.replicas);
            if r.role != Role::Leader {
                return None;
            }
            let start = r.epoch_start_offset;
            let f = r
                .followers
                .iter_mut()
                .find(|f| f.replica_id == replica_id)?;
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
            drop(log);
            if joins && r.may_change(now_ms) {
                let isr = r.isr_with(Some(replica_id), &[]);
                Some(r.propose(self.leader_epoch(), isr))
            } else {
                None
            }
        };
        self.update_high_watermark();
        change
    }

    /// The ISR shrink to ask the controller for (Kafka's `maybeShrinkIsr`, run every half
    /// `replica.lag.time.max.ms`): the in-sync followers that have not caught up with the
    /// leader's log end within `max_lag_ms` leave.
    pub fn isr_shrink(&self, now_ms: i64, max_lag_ms: i64) -> Option<IsrChange> {
        let leader_end = self.log_end_offset();
        let mut r = lock(&self.replicas);
        if r.role != Role::Leader {
            return None;
        }
        let lagging: Vec<i32> = r
            .followers
            .iter()
            .filter(|f| f.in_sync && !f.caught_up(leader_end, now_ms, max_lag_ms))
            .map(|f| f.replica_id)
            .collect();
        if lagging.is_empty() || !r.may_change(now_ms) {
            return None;
        }
        tracing::info!(topic = %self.topic, partition = self.index, out = ?lagging, leader_end,
            "followers fell behind for more than replica.lag.time.max.ms; shrinking the ISR");
        let isr = r.isr_with(None, &lagging);
        Some(r.propose(self.leader_epoch(), isr))
    }

    /// The controller's answer to an ISR change: the ISR it committed at `partition_epoch`
    /// (taken when it is for the current leader epoch and not older than the one held).
    pub fn isr_changed(&self, leader_epoch: i32, partition_epoch: i32, isr: &[i32]) {
        {
            let mut r = lock(&self.replicas);
            // Answered either way: the next change may be asked for.
            r.pending = None;
            if r.role != Role::Leader
                || leader_epoch != self.leader_epoch()
                || partition_epoch < r.partition_epoch
            {
                return;
            }
            for f in &mut r.followers {
                f.in_sync = isr.contains(&f.replica_id);
            }
            r.partition_epoch = partition_epoch;
            r.pending = None;
        }
        self.update_high_watermark();
        // A shrink can complete produces waiting for the follower that left.
        self.wake();
    }

    /// The controller refused the change in flight, or did not answer: it no longer counts;
    /// another may be sent after [`ISR_CHANGE_RETRY_MS`].
    pub fn isr_change_failed(&self, now_ms: i64) {
        if let Some(p) = lock(&self.replicas).pending.as_mut() {
            p.failed_at_ms = Some(now_ms);
        }
        self.wake();
    }

    /// Puts a follower in or out of the in-sync set, as if the controller had agreed (tests).
    pub fn set_in_sync(&self, replica_id: i32, in_sync: bool) {
        {
            let mut r = lock(&self.replicas);
            if let Some(f) = r.followers.iter_mut().find(|f| f.replica_id == replica_id) {
                f.in_sync = in_sync;
            }
        }
        self.update_high_watermark();
        // A shrink can complete produces waiting for the follower that left.
        self.wake();
    }

    /// The size of the committed ISR, the leader included (what `min.insync.replicas` is
    /// checked against before an acks=all append).
    pub fn in_sync_count(&self) -> usize {
        let r = lock(&self.replicas);
        1 + r.followers.iter().filter(|f| f.in_sync).count()
    }

    /// Refuses an acks=all append while the ISR is smaller than `min_insync`
    /// (NOT_ENOUGH_REPLICAS; nothing is written).
    pub fn check_min_insync(&self, min_insync: usize) -> Result<(), BrokerError> {
        let isr = self.in_sync_count();
        if isr < min_insync {
            return Err(BrokerError::kafka(
                ErrorCode::NOT_ENOUGH_REPLICAS,
                format!(
                    "{}-{}: the in-sync replicas ({isr}) are fewer than min.insync.replicas \
                     ({min_insync})",
                    self.topic, self.index
                ),
            ));
        }
        Ok(())
    }

    /// The size of the maximal ISR (the committed one and an expansion in flight): what
    /// `min.insync.replicas` is checked against once an acks=all append is replicated.
    pub fn maximal_isr_count(&self) -> usize {
        let r = lock(&self.replicas);
        1 + r.followers.iter().filter(|f| r.in_maximal_isr(f)).count()
    }

    /// The committed ISR and its partition epoch, the leader first.
    pub fn isr(&self) -> (Vec<i32>, i32) {
        let r = lock(&self.replicas);
        (r.isr_with(None, &[]), r.partition_epoch)
    }

    /// The followers the leader tracks.
    pub fn followers(&self) -> Vec<Follower> {
        lock(&self.replicas).followers.clone()
    }

    /// A follower takes the high watermark its leader sent, capped at its own log end.
    pub fn set_high_watermark_from_leader(&self, high_watermark: i64) {
        let moved = {
            let mut log = self.log();
            let hw = high_watermark.min(log.log_end_offset());
            let moved = hw != log.high_watermark();
            log.set_high_watermark(hw);
            moved
        };
        if moved {
            self.wake();
        }
    }

    // ----- appends -----

    /// A producer's record set: validated against the topic's rules ([`super::validate`]),
    /// decompressing within memory reserved from `budget` (waiting for it), then appended as
    /// [`Self::append_as_leader`] does.
    pub async fn append_records(
        self: &Arc<Self>,
        records: &Bytes,
        rules: &crate::topic_config::ProduceRules,
        now_ms: i64,
        budget: &super::MemoryBudget,
    ) -> Result<(Appended, PendingAck), super::Refused> {
        use super::validate::{self, Allowance, Failed};
        let cap = budget.total();
        let mut wanted = validate::memory_estimate(records, rules.max_message_bytes, cap);
        let batches = loop {
            let reserved = budget.reserve(wanted).await;
            let allowance = Allowance {
                granted: reserved.bytes(),
                cap,
            };
            let tp = (self.topic.as_str(), self.index);
            match validate::check(records, rules, tp, now_ms, allowance) {
                Ok(batches) => break batches,
                Err(Failed::Refused(r)) => return Err(r),
                // Given back before asking for more, so that checks never wait on each other.
                Err(Failed::NeedsMemory(n)) if n > reserved.bytes() => wanted = n,
                Err(Failed::NeedsMemory(n)) => {
                    return Err(BrokerError::kafka(
                        ErrorCode::INVALID_RECORD,
                        format!("records need {n} bytes to decompress, more than granted"),
                    )
                    .into());
                }
            }
        };
        Ok(self.append_as_leader(BytesMut::from(records.as_ref()), &batches, now_ms)?)
    }

    /// A leader's append of validated batches: idempotent batches are checked against the
    /// producer state first (a retried batch is answered with its original offsets and not
    /// written again); offsets are assigned from the log end and the batches stamped with the
    /// leader epoch. The answer waits for what [`PendingAck`] names.
    pub fn append_as_leader(
        self: &Arc<Self>,
        records: BytesMut,
        batches: &[BatchSummary],
        now_ms: i64,
    ) -> Result<(Appended, PendingAck), BrokerError> {
        self.require_leader()?;
        let mut producers = self.producers();
        // Transactions first (Kafka checks the epoch, then the transaction state, then the
        // sequence): a coordinator's own batches (no sequence) are checked here too.
        for b in batches.iter().filter(|b| b.producer_id >= 0) {
            producers
                .check_txn(b.producer_id, b.producer_epoch, b.transactional)
                .map_err(|code| {
                    BrokerError::kafka(
                        code,
                        format!(
                            "producer {} epoch {}{}",
                            b.producer_id,
                            b.producer_epoch,
                            if code == ErrorCode::INVALID_TXN_STATE {
                                ": a non-transactional batch while its transaction is open"
                            } else {
                                ""
                            }
                        ),
                    )
                })?;
        }
        // A batch with a producer id but no sequence is a coordinator's own (the group
        // coordinator's transactional offset commits): not checked for order or duplicates.
        let idempotent = batches
            .iter()
            .find(|b| b.producer_id >= 0 && b.base_sequence >= 0);
        if let Some(b) = idempotent {
            if batches.len() != 1 {
                return Err(BrokerError::kafka(
                    ErrorCode::INVALID_RECORD,
                    "an idempotent producer must send one batch per partition",
                ));
            }
            let last = last_seq(b.base_sequence, b.records);
            let check = producers
                .check(b.producer_id, b.producer_epoch, b.base_sequence, last)
                .map_err(|code| {
                    BrokerError::kafka(
                        code,
                        format!(
                            "producer {} epoch {} sequence {}",
                            b.producer_id, b.producer_epoch, b.base_sequence
                        ),
                    )
                })?;
            if let Check::Duplicate(meta) = check {
                let appended = Appended {
                    base_offset: meta.first_offset,
                    last_offset: meta.last_offset,
                    log_append_time: -1,
                    log_start_offset: self.log().log_start_offset(),
                    duplicate: true,
                };
                // The original append's acknowledgement condition applies to the retry.
                let pending = PendingAck {
                    partition: Arc::clone(self),
                    required: meta.last_offset + 1,
                    sync: None,
                    min_insync: 0,
                };
                return Ok((appended, pending));
            }
        }
        let mut log = self.log();
        let info = match log.append(records, self.leader_epoch(), now_ms) {
            Ok(info) => info,
            Err(e) => {
                drop(log);
                if e.is_io() {
                    self.append_failed(&e);
                }
                return Err(e.into());
            }
        };
        let sync = info.sync_to.map(|o| (log.flusher(), o));
        drop(log);
        // Each batch's offsets follow from the records before it (the leader assigned them
        // from the log end, one per record).
        let mut at = info.base_offset;
        for b in batches {
            if b.producer_id >= 0 && b.transactional {
                producers.begin_txn(b.producer_id, b.producer_epoch, at, now_ms);
            }
            at += i64::from(b.records.max(1));
        }
        if let Some(b) = idempotent {
            producers.record(
                b.producer_id,
                b.producer_epoch,
                BatchMeta {
                    first_seq: b.base_sequence,
                    last_seq: last_seq(b.base_sequence, b.records),
                    first_offset: info.base_offset,
                    last_offset: info.last_offset,
                    timestamp: b.max_timestamp,
                },
                now_ms,
            );
        }
        drop(producers);
        Ok(self.appended(&info, sync))
    }

    /// The answer to a leader's append, once the producer state is updated and every lock
    /// released; moves the high watermark (or wakes the followers' long polls).
    fn appended(self: &Arc<Self>, info: &AppendInfo, sync: SyncNeeded) -> (Appended, PendingAck) {
        // A leader with followers: the followers' long polls wait for new records, not for
        // the high watermark (which moves only once they have fetched them).
        if !self.update_high_watermark() && !lock(&self.replicas).followers.is_empty() {
            self.wake();
        }
        (
            Appended {
                base_offset: info.base_offset,
                last_offset: info.last_offset,
                log_append_time: info.log_append_time,
                log_start_offset: info.log_start_offset,
                duplicate: false,
            },
            PendingAck {
                partition: Arc::clone(self),
                required: info.last_offset + 1,
                sync,
                min_insync: 0,
            },
        )
    }

    /// Writes a transaction marker of producer `producer_id` (a control batch: COMMIT when
    /// `commit`, else ABORT, with `coordinator_epoch`), as the transaction coordinator does
    /// at the end of a transaction; leader only. Refused as Kafka's `ProducerAppendInfo`
    /// refuses it: an epoch older than the producer's is INVALID_PRODUCER_EPOCH, a coordinator
    /// epoch older than the producer's last marker's TRANSACTION_COORDINATOR_FENCED. A newer
    /// epoch becomes the producer's (the coordinator fences the producer with it). The
    /// producer's open transaction ends at the marker (an abort goes into the `.txnindex`); a
    /// marker without one is written all the same and completes nothing. Acknowledged as an
    /// append is ([`PendingAck`]; the coordinator waits for acks=all).
    pub fn write_txn_marker(
        self: &Arc<Self>,
        producer_id: i64,
        producer_epoch: i16,
        coordinator_epoch: i32,
        commit: bool,
        now_ms: i64,
    ) -> Result<(Appended, PendingAck), BrokerError> {
        use kafka_protocol::record::control::{ControlRecordType, end_txn_marker_batch};
        self.require_leader()?;
        let kind = if commit {
            ControlRecordType::Commit
        } else {
            ControlRecordType::Abort
        };
        let batch =
            end_txn_marker_batch(kind, producer_id, producer_epoch, coordinator_epoch, now_ms)
                .map_err(|e| BrokerError::kafka(ErrorCode::UNKNOWN_SERVER_ERROR, e.to_string()))?;
        let mut producers = self.producers();
        producers
            .check_marker(producer_id, producer_epoch, coordinator_epoch)
            .map_err(|code| {
                BrokerError::kafka(
                    code,
                    format!(
                        "marker of producer {producer_id} epoch {producer_epoch} coordinator \
                         epoch {coordinator_epoch}"
                    ),
                )
            })?;
        let mut log = self.log();
        let info = match log.append(BytesMut::from(batch.as_ref()), self.leader_epoch(), now_ms) {
            Ok(info) => info,
            Err(e) => {
                drop(log);
                if e.is_io() {
                    self.append_failed(&e);
                }
                return Err(e.into());
            }
        };
        let marker = Marker {
            epoch: producer_epoch,
            coordinator_epoch,
            offset: info.base_offset,
            commit,
            timestamp: now_ms,
        };
        let completed = producers.complete_txn(producer_id, marker, now_ms);
        let indexed = match completed {
            Some(txn) if txn.aborted => index_abort(&mut log, &producers, &txn),
            _ => Ok(()),
        };
        let sync = info.sync_to.map(|o| (log.flusher(), o));
        drop(log);
        drop(producers);
        if let Err(e) = indexed {
            // The entry is kept in memory and the file rewritten at the next flush.
            tracing::warn!(topic = %self.topic, partition = self.index, error = %e,
                "transaction index not written");
        }
        tracing::debug!(topic = %self.topic, partition = self.index, producer_id,
            producer_epoch, commit, offset = info.base_offset, ?completed, "transaction marker");
        Ok(self.appended(&info, sync))
    }

    /// A follower's append of batches fetched from its leader, kept as the leader wrote them
    /// (offsets, epochs, timestamps, producer fields). The producer state follows the batch
    /// headers. The high watermark is not moved: the leader's comes with the fetch answer
    /// ([`Self::set_high_watermark_from_leader`]).
    pub fn append_as_follower(
        &self,
        records: BytesMut,
        now_ms: i64,
    ) -> Result<AppendInfo, BrokerError> {
        let frozen = records.clone().freeze();
        let mut producers = self.producers();
        let mut log = self.log();
        let info = log.append_as_follower(records, now_ms)?;
        for txn in record_producers(&mut producers, frozen, now_ms) {
            if let Err(e) = index_abort(&mut log, &producers, &txn) {
                tracing::warn!(topic = %self.topic, partition = self.index, error = %e,
                    "transaction index not written");
            }
        }
        Ok(info)
    }

    /// Removes every batch at or past `offset` (a follower truncating to its leader's log),
    /// rebuilds the producer state from what is left and keeps the high watermark within the
    /// log.
    pub fn truncate_to(&self, offset: i64) -> Result<(), BrokerError> {
        let mut producers = self.producers();
        let mut log = self.log();
        log.truncate_to(offset)?;
        *producers = rebuild_producer_state(&log);
        drop(log);
        drop(producers);
        self.wake();
        Ok(())
    }

    /// A follower whose log ends below its leader's log start (the leader deleted what it
    /// would fetch next): the log starts again, empty, at the leader's log start (Kafka's
    /// `truncateFullyAndStartAt`).
    pub fn restart_at(&self, offset: i64) -> Result<(), BrokerError> {
        let mut producers = self.producers();
        let mut log = self.log();
        log.truncate_fully_and_start_at(offset)?;
        *producers = ProducerStates::default();
        drop(log);
        drop(producers);
        self.wake();
        Ok(())
    }

    /// A follower takes its leader's log start offset (retention or DeleteRecords there),
    /// within its own high watermark: the segments below it go here too.
    pub fn follow_log_start(&self, leader_log_start: i64) -> Result<(), BrokerError> {
        let moved = {
            let mut log = self.log();
            let target = leader_log_start.min(log.high_watermark());
            if target <= log.log_start_offset() {
                return Ok(());
            }
            log.delete_records_before(target)?;
            true
        };
        if moved {
            self.wake();
        }
        Ok(())
    }

    // ----- reads -----

    pub fn offsets(&self) -> Offsets {
        let mut producers = self.producers();
        let log = self.log();
        let hw = log.high_watermark();
        producers.on_high_watermark(hw);
        let log_start = log.log_start_offset();
        let last_stable = producers
            .first_unstable_offset()
            .map_or(hw, |first| first.min(hw))
            .max(log_start);
        Offsets {
            log_start,
            log_end: log.log_end_offset(),
            high_watermark: hw,
            last_stable,
        }
    }

    /// The aborted transactions overlapping `[from, upper)` (producer id, first offset), for
    /// a read_committed fetch that returned the batches of that range.
    pub fn aborted_transactions(&self, from: i64, upper: i64) -> Vec<(i64, i64)> {
        self.log()
            .aborted_txns(from, upper)
            .into_iter()
            .map(|a| (a.producer_id, a.first_offset))
            .collect()
    }

    /// The producers of the partition (DescribeProducers), expired ones left out.
    pub fn producer_views(&self) -> Vec<ProducerView> {
        self.producers().views()
    }

    /// Reads whole batches from `offset`, up to `max_bytes` (at least one batch), not past
    /// `upper` (the high watermark or last stable offset). File reads run outside the lock.
    pub fn read(&self, offset: i64, max_bytes: usize, upper: i64) -> Result<Bytes, BrokerError> {
        let info = self.log().read(offset, max_bytes, upper)?;
        Ok(info.read_bytes()?)
    }

    /// The file regions [`Self::read`] would read (for sending with `sendfile`).
    pub fn read_slices(
        &self,
        offset: i64,
        max_bytes: usize,
        upper: i64,
    ) -> Result<ReadInfo, BrokerError> {
        Ok(self.log().read(offset, max_bytes, upper)?)
    }

    /// The first offset whose timestamp is at or after `ts`, with that timestamp.
    pub fn offset_for_timestamp(&self, ts: i64) -> Result<Option<(i64, i64)>, BrokerError> {
        Ok(self.log().offset_for_timestamp(ts)?)
    }

    /// The offset and timestamp of the record with the largest timestamp.
    pub fn max_timestamp(&self) -> Result<Option<(i64, i64)>, BrokerError> {
        Ok(self.log().max_timestamp_offset()?)
    }

    /// The latest leader epoch in the log's epoch cache (-1 for none): what a follower asks
    /// its leader about before it fetches (OffsetForLeaderEpoch).
    pub fn latest_log_epoch(&self) -> i32 {
        self.log().latest_epoch().unwrap_or(-1)
    }

    /// The largest epoch <= `epoch` and the end offset of that epoch.
    pub fn end_offset_for_epoch(&self, epoch: i32) -> (i32, i64) {
        self.log().end_offset_for_epoch(epoch)
    }

    // ----- upkeep -----

    /// DeleteRecords on the leader: moves the log start offset to `offset` (-1: to the high
    /// watermark); beyond the high watermark is OFFSET_OUT_OF_RANGE. Returns the new low
    /// watermark.
    pub fn delete_records(&self, offset: i64) -> Result<i64, BrokerError> {
        self.require_leader()?;
        if crate::topics::is_internal(&self.topic) {
            // The group coordinator's state lives there; clients may not trim it.
            return Err(BrokerError::kafka(
                ErrorCode::INVALID_TOPIC_EXCEPTION,
                format!("Cannot delete records of internal topic {}", self.topic),
            ));
        }
        let start = {
            let mut log = self.log();
            let hw = log.high_watermark();
            let target = if offset == -1 { hw } else { offset };
            if target < 0 || target > hw {
                return Err(BrokerError::kafka(
                    ErrorCode::OFFSET_OUT_OF_RANGE,
                    format!("offset {target} is beyond the high watermark {hw}"),
                ));
            }
            log.delete_records_before(target)?;
            log.log_start_offset()
        };
        self.wake();
        Ok(start)
    }

    /// One compaction pass if the log is compacted and due (see `log::cleaner`): planned and
    /// swapped in under the log lock, run without it. `None` when there was nothing to do.
    pub fn clean(
        &self,
        limits: &CleanerLimits,
        now_ms: i64,
    ) -> Result<Option<CleanStats>, BrokerError> {
        let last_stable = self.offsets().last_stable;
        let Some(plan) = lock_log(&self.log).clean_plan_below(now_ms, last_stable) else {
            return Ok(None);
        };
        let last = self.producers().last_offsets();
        let cleaned = plan.with_producer_last_offsets(last).run(limits, now_ms)?;
        let stats = lock_log(&self.log).finish_clean(cleaned)?;
        Ok(Some(stats))
    }

    /// Writes the producer-state snapshot into the log's directory (crash-safely: see
    /// [`crate::producer_state::write_snapshot`]).
    pub fn write_producer_snapshot(&self) -> std::io::Result<()> {
        let producers = self.producers();
        let log = self.log();
        crate::producer_state::write_snapshot(log.dir(), &producers, log.log_end_offset())
    }

    /// Forgets producers idle for `expiration_ms` (`producer.id.expiration.ms`).
    pub fn expire_producers(&self, now_ms: i64, expiration_ms: i64) -> usize {
        self.producers().expire(now_ms, expiration_ms)
    }

    /// Applies a new configuration to the log.
    pub fn set_config(&self, config: LogConfig) -> Result<(), BrokerError> {
        Ok(self.log().set_config(config)?)
    }

    /// The partition directory.
    pub fn dir(&self) -> std::path::PathBuf {
        self.log().dir().to_path_buf()
    }
}

/// The producer state of a log rebuilt from its batch headers, from the log start to the end.
/// The log keeps no append times, and a batch's own timestamp may be the client's (CreateTime,
/// possibly far in the past), so every producer found counts as having appended now: it is
/// kept a whole `producer.id.expiration.ms` from here rather than forgotten too early.
pub fn rebuild_producer_state(log: &Log) -> ProducerStates {
    rebuild_with_aborts(log).0
}

/// [`rebuild_producer_state`], with the aborted transactions found on the way (in marker
/// order) and the high watermark's stable transactions settled.
fn rebuild_with_aborts(log: &Log) -> (ProducerStates, Vec<(CompletedTxn, i64)>) {
    let now = crate::broker::now_ms();
    let mut states = ProducerStates::default();
    let mut aborts = Vec::new();
    let mut offset = log.log_start_offset();
    let end = log.log_end_offset();
    while offset < end {
        let Ok(info) = log.read(offset, 1 << 20, end) else {
            break;
        };
        let Ok(bytes) = info.read_bytes() else { break };
        if info.next_offset <= offset {
            break;
        }
        for txn in record_producers(&mut states, bytes, now) {
            let lso = states.last_stable_after(&txn);
            aborts.push((txn, lso));
        }
        offset = info.next_offset;
    }
    states.on_high_watermark(log.high_watermark());
    (states, aborts)
}

/// The producer state of an opened log (see [`crate::producer_state::load`]). When the log
/// asks for its `.txnindex` files to be rebuilt (recovery scanned segments, or a file was
/// damaged), the state is rebuilt from the batches whatever the snapshot, and the aborts found
/// in those segments are indexed again.
pub fn load_producer_state(log: &mut Log, now_ms: i64, expiration_ms: i64) -> ProducerStates {
    let dir = log.dir().to_path_buf();
    let end = log.log_end_offset();
    let Some(from) = log.txn_index_rebuild_from() else {
        return crate::producer_state::load(&dir, end, now_ms, expiration_ms, || {
            rebuild_producer_state(log)
        });
    };
    let (states, aborts) = rebuild_with_aborts(log);
    let mut rebuilt = 0usize;
    for (txn, lso) in aborts {
        if txn.last_offset < from {
            continue;
        }
        let entry = AbortedTxn {
            producer_id: txn.producer_id,
            first_offset: txn.first_offset,
            last_offset: txn.last_offset,
            last_stable_offset: lso,
        };
        match log.add_aborted_txn(entry) {
            Ok(()) => rebuilt += 1,
            Err(e) => tracing::warn!(dir = %dir.display(), error = %e,
                "transaction index entry not rebuilt"),
        }
    }
    match log.finish_txn_index_rebuild() {
        Ok(()) => tracing::info!(dir = %dir.display(), from, aborted = rebuilt,
            "transaction indexes rebuilt from the log"),
        Err(e) => tracing::warn!(dir = %dir.display(), error = %e,
            "transaction index rebuild not persisted; it runs again at the next open"),
    }
    crate::producer_state::load(&dir, end, now_ms, expiration_ms, || states)
}

/// Records an aborted transaction in the `.txnindex` of the segment holding its marker.
fn index_abort(
    log: &mut Log,
    producers: &ProducerStates,
    txn: &CompletedTxn,
) -> Result<(), LogError> {
    log.add_aborted_txn(AbortedTxn {
        producer_id: txn.producer_id,
        first_offset: txn.first_offset,
        last_offset: txn.last_offset,
        last_stable_offset: producers.last_stable_after(txn),
    })
}

/// Records the producers' batches of a record set from the batch headers, as appended at
/// `append_ms`, as a follower or a rebuild does (nothing refused): idempotent batches,
/// transactional batches opening transactions, markers ending them. Returns the aborted
/// transactions, in marker order.
fn record_producers(
    states: &mut ProducerStates,
    records: Bytes,
    append_ms: i64,
) -> Vec<CompletedTxn> {
    use kafka_protocol::record::control::{ControlRecordType, parse_end_txn_marker};
    let mut aborted = Vec::new();
    for batch in kafka_protocol::record::RecordBatches::new(records).flatten() {
        let (pid, epoch) = (batch.producer_id(), batch.producer_epoch());
        if pid < 0 {
            continue;
        }
        if batch.is_control() {
            let Ok(Some((kind, marker))) = parse_end_txn_marker(&batch) else {
                continue;
            };
            let commit = kind == ControlRecordType::Commit;
            let marker = Marker {
                epoch,
                coordinator_epoch: marker.coordinator_epoch,
                offset: batch.base_offset(),
                commit,
                timestamp: batch.max_timestamp(),
            };
            let done = states.complete_txn(pid, marker, append_ms);
            aborted.extend(done.filter(|t| t.aborted));
            continue;
        }
        if batch.is_transactional() {
            states.begin_txn(pid, epoch, batch.base_offset(), append_ms);
        }
        if batch.base_sequence() >= 0 {
            states.record(
                pid,
                epoch,
                BatchMeta {
                    first_seq: batch.base_sequence(),
                    last_seq: batch.last_sequence(),
                    first_offset: batch.base_offset(),
                    last_offset: batch.last_offset(),
                    timestamp: batch.max_timestamp(),
                },
                append_ms,
            );
        }
    }
    aborted
}
