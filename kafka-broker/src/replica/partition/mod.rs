//! One partition hosted here, as the partition layer sees it: its log, its idempotent-producer
//! state, its replication state ([`super::isr::ReplicaState`]: role, leader epoch, followers,
//! ISR), the topic settings a produce is checked against, the offsets readers see, and the
//! waiters to wake when those change.
//!
//! The verbs, each taking its locks once:
//! - append ([`append`]): a producer's records (validated, then the acks/min.insync contract
//!   of [`PendingAck`]), a coordinator's batch, a transaction marker, a follower's copy of
//!   its leader's batches;
//! - read ([`read`]): whole batches within the high-watermark or last-stable-offset bound,
//!   as file slices, with the aborted transactions a read_committed consumer needs;
//! - follower fetched ([`Partition::follower_fetched`]): the fetch's leader epoch checked
//!   first, then the follower's state, the ISR proposal and the high watermark;
//! - upkeep ([`upkeep`]): truncation, retention, DeleteRecords, compaction, snapshots.
//!
//! The offsets readers see ([`Offsets`]) are published after every change, so a read never
//! takes the producer-state lock and takes the log lock only to find its file slices. The last
//! stable offset is computed when the high watermark, a marker or a truncation moves it, not
//! when it is read. Two wake-ups: [`Partition::changed`] when what consumers may read changes
//! (high watermark, last stable offset, log start, truncation, leadership), which acks=all
//! produces also wait on; [`Partition::appended`] when the log end moves, which followers'
//! long polls wait on. An append that does not move the high watermark wakes no consumer.
//!
//! Transactions: the producer state tracks each producer's open transaction (opened by its
//! first transactional batch, ended by the COMMIT or ABORT marker a coordinator writes with
//! [`Partition::write_txn_marker`]); an abort is recorded in the `.txnindex` of the segment
//! holding its marker. The last stable offset is the high watermark, or the first offset of
//! the earliest transaction still open or whose marker the high watermark has not passed,
//! whichever is lower (Kafka's rule). Followers track the same from the batch headers they
//! copy.
//!
//! Locks, always taken in this order: producer state, the log, the replication state, the
//! published offsets. The sequence check and the append happen under the first two, so they
//! are atomic. Nothing here waits for I/O other than the log's own page-cache writes: fsyncs
//! and acknowledgements are waited for by [`super::delayed`] with every lock released.

mod append;
mod producers;
mod read;
mod upkeep;

use std::sync::{Mutex, MutexGuard};

use kafka_protocol::error_code::ErrorCode;
use tokio::sync::Notify;

pub use append::{Acks, Appended, PendingAck, SyncNeeded};
pub use producers::{load_producer_state, rebuild_producer_state};
pub use read::{Isolation, ReadFailed, ReadRange};

use super::isr::{Follower, IsrChange, Leadership, ReplicaState};
use super::producer_state::ProducerStates;
use crate::config::topic::ProduceRules;
use crate::error::BrokerError;
use crate::log::{Log, LogConfig, SharedLog, lock_log};
use crate::rate_limit::RateLimit;
use crate::sync::lock;

/// Offsets of a partition at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Offsets {
    pub log_start: i64,
    pub log_end: i64,
    pub high_watermark: i64,
    /// Last stable offset: the high watermark, or the first offset of the earliest
    /// transaction that is open or whose marker is not below the high watermark yet.
    pub last_stable: i64,
}

/// What a change moved, for whom to wake.
#[derive(Debug, Clone, Copy, Default)]
struct Moved {
    /// The high watermark, last stable offset or log start.
    visible: bool,
    /// The log end.
    end: bool,
}

pub struct Partition {
    pub topic: String,
    pub index: i32,
    log: SharedLog,
    /// Locked before the log when both are needed.
    producers: Mutex<ProducerStates>,
    /// Locked after the log.
    state: Mutex<ReplicaState>,
    /// What readers see; written under the log lock after every change.
    published: Mutex<Offsets>,
    /// The topic's settings a produce is checked against (`min.insync.replicas` among them).
    rules: Mutex<ProduceRules>,
    /// Woken when what consumers may read changes (see the module docs).
    changed: Notify,
    /// Woken when the log end moves (followers' long polls).
    appended: Notify,
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
    /// [`Self::become_leader`] or [`Self::become_follower`], checking produces against
    /// `rules`. Its leader epoch is the latest one in the log's leader epoch cache (0 for a
    /// new log). Its high watermark starts at `high_watermark`, the checkpointed one (see
    /// [`super::checkpoint`]), or at the log start without one: never at the log end, which
    /// may hold what the leader never committed. A leader recomputes it from its replicas at
    /// once.
    pub fn new(
        topic: &str,
        index: i32,
        log: SharedLog,
        mut producers: ProducerStates,
        high_watermark: Option<i64>,
        rules: ProduceRules,
    ) -> Self {
        let (epoch, offsets) = {
            let mut l = lock_log(&log);
            let start = l.log_start_offset();
            l.set_high_watermark(high_watermark.unwrap_or(start));
            let offsets = offsets_of(&l, &mut producers);
            (l.latest_epoch().unwrap_or(0).max(0), offsets)
        };
        Self {
            topic: topic.to_owned(),
            index,
            log,
            producers: Mutex::new(producers),
            state: Mutex::new(ReplicaState::new(epoch)),
            published: Mutex::new(offsets),
            rules: Mutex::new(rules),
            changed: Notify::new(),
            appended: Notify::new(),
            append_failures: Mutex::new(RateLimit::new(APPEND_FAILURE_LOG_INTERVAL)),
        }
    }

    fn producers(&self) -> MutexGuard<'_, ProducerStates> {
        lock(&self.producers)
    }

    fn log(&self) -> MutexGuard<'_, Log> {
        lock_log(&self.log)
    }

    fn state(&self) -> MutexGuard<'_, ReplicaState> {
        lock(&self.state)
    }

    /// The offsets readers see now (no log or producer-state lock taken).
    pub fn offsets(&self) -> Offsets {
        *lock(&self.published)
    }

    /// The high watermark.
    pub fn high_watermark(&self) -> i64 {
        self.offsets().high_watermark
    }

    /// The log end offset.
    pub fn log_end_offset(&self) -> i64 {
        self.offsets().log_end
    }

    /// Recomputes the published offsets from the log and the producer state (both locked by
    /// the caller); says what moved.
    fn publish(&self, log: &Log, producers: &mut ProducerStates) -> Moved {
        let new = offsets_of(log, producers);
        let mut p = lock(&self.published);
        let moved = Moved {
            visible: (p.log_start, p.high_watermark, p.last_stable)
                != (new.log_start, new.high_watermark, new.last_stable),
            end: p.log_end != new.log_end,
        };
        *p = new;
        moved
    }

    /// Wakes whoever waits for what moved.
    fn wake(&self, moved: Moved) {
        if moved.visible {
            self.changed.notify_waiters();
        }
        if moved.end {
            self.appended.notify_waiters();
        }
    }

    /// Wakes every waiter (leadership changes, truncation, the partition going away).
    pub(crate) fn wake_all(&self) {
        self.changed.notify_waiters();
        self.appended.notify_waiters();
    }

    /// Woken when what consumers may read changes: the high watermark, last stable offset or
    /// log start moved, the log was truncated, the leadership changed (see the module docs).
    pub(crate) fn changed(&self) -> &Notify {
        &self.changed
    }

    /// Woken when the log end moved (and with [`Self::changed`] on truncation and
    /// leadership changes).
    pub(crate) fn appended(&self) -> &Notify {
        &self.appended
    }

    /// Whether the log failed an fsync: it refuses appends until it is reopened (see
    /// [`super::ReplicaManager::retry_offline`]).
    pub fn log_failed(&self) -> bool {
        self.log().flusher().is_poisoned()
    }

    /// The topic settings produces are checked against.
    pub fn rules(&self) -> ProduceRules {
        *lock(&self.rules)
    }

    /// Applies a topic's new settings: its log's configuration and the produce rules.
    pub fn set_config(&self, config: LogConfig, rules: ProduceRules) -> Result<(), BrokerError> {
        *lock(&self.rules) = rules;
        Ok(self.log().set_config(config)?)
    }

    /// The partition directory.
    pub fn dir(&self) -> std::path::PathBuf {
        self.log().dir().to_path_buf()
    }

    // ----- leadership -----

    /// The current leader epoch.
    pub fn leader_epoch(&self) -> i32 {
        self.state().leader_epoch()
    }

    /// Whether this broker leads the partition.
    pub fn is_leader(&self) -> bool {
        self.state().is_leader()
    }

    /// Becomes leader at `epoch` with these followers (by replica id; all in sync when they are
    /// in `isr`), as a single node or a test does: partition epoch 0, no local id.
    pub fn become_leader(
        &self,
        epoch: i32,
        followers: &[i32],
        isr: &[i32],
        now_ms: i64,
    ) -> Result<(), BrokerError> {
        self.lead(
            &Leadership {
                leader_epoch: epoch,
                partition_epoch: 0,
                local_id: -1,
                followers,
                isr,
            },
            now_ms,
        )
    }

    /// Takes the leadership the metadata gives. A new leader epoch starts at the log end in
    /// the leader epoch cache (persisted before this returns) and forgets what the followers
    /// fetched; the same epoch again (a new ISR or replica set from the controller) keeps each
    /// follower's fetch state and takes the ISR unless it is older than the one held (see
    /// [`ReplicaState::relead`]). An epoch older than the current one is refused
    /// (FENCED_LEADER_EPOCH).
    pub fn lead(&self, l: &Leadership<'_>, now_ms: i64) -> Result<(), BrokerError> {
        let mut producers = self.producers();
        let mut log = self.log();
        {
            let mut state = self.state();
            state
                .check_new_epoch(l.leader_epoch)
                .map_err(|code| self.epoch_refused(code, l.leader_epoch, &state))?;
            if state.holds(l) {
                state.relead(l, now_ms);
            } else {
                log.assign_epoch_at_end(l.leader_epoch)?;
                state.take_leadership(l, log.log_end_offset(), now_ms);
            }
        }
        self.advance_high_watermark(&mut log);
        self.publish(&log, &mut producers);
        drop(log);
        drop(producers);
        self.wake_all();
        Ok(())
    }

    /// Becomes a follower at `epoch`. The log is not touched: the replication layer truncates
    /// it (by OffsetForLeaderEpoch) before it fetches.
    pub fn become_follower(&self, epoch: i32) -> Result<(), BrokerError> {
        {
            // Taken so that no leader append is between its leadership check and its write.
            let _producers = self.producers();
            let mut state = self.state();
            state
                .check_new_epoch(epoch)
                .map_err(|code| self.epoch_refused(code, epoch, &state))?;
            state.follow(epoch);
        }
        self.wake_all();
        Ok(())
    }

    fn epoch_refused(&self, code: ErrorCode, epoch: i32, state: &ReplicaState) -> BrokerError {
        BrokerError::kafka(
            code,
            format!(
                "{}-{}: leader epoch {epoch} is older than the current epoch {}",
                self.topic,
                self.index,
                state.leader_epoch()
            ),
        )
    }

    /// The fence check of every request that names the leader epoch it knows (see
    /// [`ReplicaState::check_request_epoch`]).
    pub fn check_leader_epoch(&self, current_leader_epoch: i32) -> Result<(), ErrorCode> {
        self.state().check_request_epoch(current_leader_epoch)
    }

    fn require_leader(&self, state: &ReplicaState) -> Result<(), BrokerError> {
        if state.is_leader() {
            Ok(())
        } else {
            Err(self.not_leader())
        }
    }

    fn not_leader(&self) -> BrokerError {
        BrokerError::kafka(
            ErrorCode::NOT_LEADER_OR_FOLLOWER,
            format!("{}-{} is not led by this broker", self.topic, self.index),
        )
    }

    // ----- the high watermark and the ISR -----

    /// Moves a leader's high watermark (under the log lock the caller holds) to what its
    /// replicas allow: the smallest of what the local log vouches for (its log end; in durable
    /// mode the fsynced offset) and the log ends of the followers in the maximal ISR. It only
    /// moves forward. The caller publishes.
    fn advance_high_watermark(&self, log: &mut Log) {
        let local = if log.config().is_durable() {
            log.flusher().durable_offset().min(log.log_end_offset())
        } else {
            log.log_end_offset()
        };
        let Some(hw) = self.state().high_watermark(local) else {
            return;
        };
        if hw > log.high_watermark() {
            log.set_high_watermark(hw);
        }
    }

    /// Recomputes a leader's high watermark and publishes it, waking whoever waits for it.
    fn update_high_watermark(&self) {
        let mut producers = self.producers();
        let mut log = self.log();
        self.advance_high_watermark(&mut log);
        let moved = self.publish(&log, &mut producers);
        drop(log);
        drop(producers);
        self.wake(moved);
    }

    /// The durable offset of the log moved (an fsync finished).
    pub(crate) fn on_durable(&self) {
        self.update_high_watermark();
    }

    /// A follower replica `replica_id` fetched from `fetch_offset` at `now_ms`, naming leader
    /// epoch `fetch_epoch` (-1: none), its log starting at `log_start_offset` (-1: it did not
    /// say). The epoch is checked before anything moves: a fetch for another epoch is refused
    /// (FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH) and leaves the follower's state, the ISR
    /// and the high watermark as they were. Otherwise the follower's log end, log start and
    /// caught-up time follow and the high watermark with them. Returns the ISR expansion to
    /// ask the controller for when a follower out of the ISR has caught up (see
    /// [`ReplicaState::follower_fetched`]).
    pub fn follower_fetched(
        &self,
        replica_id: i32,
        fetch_epoch: i32,
        fetch_offset: i64,
        log_start_offset: i64,
        now_ms: i64,
    ) -> Result<Option<IsrChange>, ErrorCode> {
        let mut producers = self.producers();
        let mut log = self.log();
        let (leader_end, hw) = (log.log_end_offset(), log.high_watermark());
        let change = self.state().follower_fetched(
            replica_id,
            fetch_epoch,
            fetch_offset,
            log_start_offset,
            leader_end,
            hw,
            now_ms,
        )?;
        self.advance_high_watermark(&mut log);
        let moved = self.publish(&log, &mut producers);
        drop(log);
        drop(producers);
        self.wake(moved);
        Ok(change)
    }

    /// The ISR shrink to ask the controller for (Kafka's `maybeShrinkIsr`, run every half
    /// `replica.lag.time.max.ms`): the in-sync followers that have not caught up with the
    /// leader's log end within `max_lag_ms` leave.
    pub fn isr_shrink(&self, now_ms: i64, max_lag_ms: i64) -> Option<IsrChange> {
        let leader_end = self.log_end_offset();
        let (change, out) = self.state().shrink(leader_end, now_ms, max_lag_ms)?;
        tracing::info!(topic = %self.topic, partition = self.index, out = ?out, leader_end,
            "followers fell behind for more than replica.lag.time.max.ms; shrinking the ISR");
        Some(change)
    }

    /// The controller's answer to an ISR change: the ISR it committed at `partition_epoch`
    /// (taken when it is for the current leader epoch and not older than the one held).
    pub fn isr_changed(&self, leader_epoch: i32, partition_epoch: i32, isr: &[i32]) {
        self.state().isr_changed(leader_epoch, partition_epoch, isr);
        self.update_high_watermark();
        // A shrink can complete produces waiting for the follower that left.
        self.changed.notify_waiters();
    }

    /// The controller refused the change in flight, or did not answer: it no longer counts;
    /// another may be sent after [`super::isr::ISR_CHANGE_RETRY_MS`].
    pub fn isr_change_failed(&self, now_ms: i64) {
        self.state().isr_change_failed(now_ms);
        self.changed.notify_waiters();
    }

    /// Puts a follower in or out of the in-sync set, as if the controller had agreed (tests).
    pub fn set_in_sync(&self, replica_id: i32, in_sync: bool) {
        self.state().set_in_sync(replica_id, in_sync);
        self.update_high_watermark();
        // A shrink can complete produces waiting for the follower that left.
        self.changed.notify_waiters();
    }

    /// The size of the committed ISR, the leader included.
    pub fn in_sync_count(&self) -> usize {
        self.state().in_sync_count()
    }

    /// The size of the maximal ISR (the committed one and an expansion in flight).
    pub fn maximal_isr_count(&self) -> usize {
        self.state().maximal_isr_count()
    }

    /// The committed ISR and its partition epoch, the leader first.
    pub fn isr(&self) -> (Vec<i32>, i32) {
        self.state().isr()
    }

    /// The followers the leader tracks.
    pub fn followers(&self) -> Vec<Follower> {
        self.state().followers().to_vec()
    }

    /// Whether an acks=all append would be taken now: refused while the committed ISR is
    /// smaller than the topic's `min.insync.replicas` (NOT_ENOUGH_REPLICAS).
    pub fn check_min_insync(&self) -> Result<(), BrokerError> {
        let state = self.state();
        self.min_insync_for(&state, Acks::All).map(|_| ())
    }

    /// Refuses an acks=all append while the ISR is smaller than the topic's
    /// `min.insync.replicas` (NOT_ENOUGH_REPLICAS; nothing is written): Kafka checks it before
    /// it appends, and [`PendingAck`] again once the batch is replicated. Returns the minimum
    /// to check then (0 for acks=0/1: not checked).
    fn min_insync_for(&self, state: &ReplicaState, acks: Acks) -> Result<usize, BrokerError> {
        if acks != Acks::All {
            return Ok(0);
        }
        let min_insync = self.rules().min_insync_replicas;
        let isr = state.in_sync_count();
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
        Ok(min_insync)
    }

    /// A follower takes the high watermark its leader sent, capped at its own log end.
    pub fn set_high_watermark_from_leader(&self, high_watermark: i64) {
        let mut producers = self.producers();
        let mut log = self.log();
        let hw = high_watermark.min(log.log_end_offset());
        log.set_high_watermark(hw);
        let moved = self.publish(&log, &mut producers);
        drop(log);
        drop(producers);
        self.wake(moved);
    }
}

/// The offsets of `log` as readers see them: the last stable offset from the producer state,
/// whose transactions completed below the high watermark are settled first.
fn offsets_of(log: &Log, producers: &mut ProducerStates) -> Offsets {
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
