//! The coordinator as the request handlers use it: the pure [`GroupManager`] behind a mutex,
//! answers that wait (JoinGroup, SyncGroup) as futures fed by oneshot channels, records
//! handed to a [`RecordSink`], and [`run_timers`] firing the timers.
//!
//! Nothing here decides anything about groups; it only moves answers, records and time.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use kafka_protocol::error_code::ErrorCode;
use tokio::sync::oneshot;

use super::MemberIdGen;
use super::config::GroupConfig;
use super::manager::GroupManager;
use super::offsets::{MemoryOffsetStore, OffsetStore};
use super::records::OffsetsRecord;
use super::types::{
    CommitRequest, FetchedOffset, GroupDescription, GroupListing, HeartbeatRequest, JoinRequest,
    JoinResponse, LeaveResponse, LeavingMember, Output, RequestId, SyncRequest, SyncResponse,
};

/// Where the records the coordinator produces go (the broker's is
/// `crate::offsets_topic::OffsetsTopicSink`, appending to `__consumer_offsets`). Called under
/// the coordinator's lock, once per operation that produced records, in the order the changes
/// happened, before that operation is answered; it should only append (an fsync only where
/// the log's durable mode asks for one). It must never call back into the coordinator.
/// An error is the code to answer the operation with (a failed offset commit is rolled back).
pub trait RecordSink: Send + Sync + std::fmt::Debug {
    fn append(&self, records: Vec<OffsetsRecord>) -> Result<(), ErrorCode>;
}

/// A [`RecordSink`] that drops everything (offsets live in memory only).
#[derive(Debug, Default, Clone, Copy)]
pub struct DiscardRecords;

impl RecordSink for DiscardRecords {
    fn append(&self, _records: Vec<OffsetsRecord>) -> Result<(), ErrorCode> {
        Ok(())
    }
}

#[derive(Debug)]
enum Waiter {
    Join(oneshot::Sender<JoinResponse>),
    Sync(oneshot::Sender<SyncResponse>),
}

#[derive(Debug)]
struct Inner {
    manager: GroupManager,
    waiters: HashMap<RequestId, Waiter>,
    next_request: u64,
    closed: bool,
}

impl Inner {
    fn next_id(&mut self) -> RequestId {
        self.next_request = self.next_request.wrapping_add(1);
        RequestId(self.next_request)
    }
}

/// Milliseconds for the manager: wall-clock at start plus monotonic time since, so that
/// deadlines never jump and commit timestamps are close to real time.
#[derive(Debug)]
enum Clock {
    System {
        start: tokio::time::Instant,
        start_ms: i64,
    },
    Manual(AtomicI64),
}

impl Clock {
    fn system() -> Self {
        let start_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
            .unwrap_or_default();
        Self::System {
            start: tokio::time::Instant::now(),
            start_ms,
        }
    }

    fn now_ms(&self) -> i64 {
        match self {
            Self::System { start, start_ms } => {
                let elapsed = i64::try_from(start.elapsed().as_millis()).unwrap_or(i64::MAX);
                start_ms.saturating_add(elapsed)
            }
            Self::Manual(ms) => ms.load(Ordering::SeqCst),
        }
    }
}

/// The group coordinator shared by every connection.
#[derive(Debug)]
pub struct GroupCoordinator {
    inner: Mutex<Inner>,
    clock: Clock,
    sink: Box<dyn RecordSink>,
    config: GroupConfig,
}

impl GroupCoordinator {
    /// A coordinator with in-memory offsets whose records are dropped.
    pub fn new(config: GroupConfig) -> Self {
        Self::with_parts(
            config,
            Box::new(MemoryOffsetStore::default()),
            Box::new(DiscardRecords),
        )
    }

    /// A coordinator over `offsets`, handing its records to `sink`.
    pub fn with_parts(
        config: GroupConfig,
        offsets: Box<dyn OffsetStore>,
        sink: Box<dyn RecordSink>,
    ) -> Self {
        Self::build(
            config,
            offsets,
            sink,
            Clock::system(),
            MemberIdGen::from_entropy(),
        )
    }

    /// A coordinator on a clock that only moves with [`GroupCoordinator::advance`], for tests.
    pub fn with_manual_clock(config: GroupConfig, start_ms: i64, seed: u64) -> Self {
        Self::build(
            config,
            Box::new(MemoryOffsetStore::default()),
            Box::new(DiscardRecords),
            Clock::Manual(AtomicI64::new(start_ms)),
            MemberIdGen::new(seed),
        )
    }

    fn build(
        config: GroupConfig,
        offsets: Box<dyn OffsetStore>,
        sink: Box<dyn RecordSink>,
        clock: Clock,
        ids: MemberIdGen,
    ) -> Self {
        Self {
            inner: Mutex::new(Inner {
                manager: GroupManager::with_store(config.clone(), ids, offsets),
                waiters: HashMap::new(),
                next_request: 0,
                closed: false,
            }),
            clock,
            sink,
            config,
        }
    }

    pub fn config(&self) -> &GroupConfig {
        &self.config
    }

    /// The `__consumer_offsets` partition of a group.
    pub fn partition_for(&self, group_id: &str) -> i32 {
        self.config.partition_for(group_id)
    }

    /// The coordinator's clock, in milliseconds.
    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// Moves a manual clock forward (no effect on the system clock) and fires due timers.
    pub fn advance(&self, ms: i64) {
        if let Clock::Manual(now) = &self.clock {
            now.fetch_add(ms, Ordering::SeqCst);
        }
        self.tick();
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Every critical section leaves the state consistent before anything can panic.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Delivers released answers and hands over records; the sink's error if it refused them.
    fn flush(&self, inner: &mut Inner) -> Result<(), ErrorCode> {
        while let Some(out) = inner.manager.poll_output() {
            match out {
                Output::Join { request, response } => {
                    if let Some(Waiter::Join(tx)) = inner.waiters.remove(&request) {
                        // The client may be gone; nothing to do then.
                        let _ = tx.send(response);
                    }
                }
                Output::Sync { request, response } => {
                    if let Some(Waiter::Sync(tx)) = inner.waiters.remove(&request) {
                        let _ = tx.send(response);
                    }
                }
            }
        }
        let records = inner.manager.take_records();
        if records.is_empty() {
            return Ok(());
        }
        self.sink.append(records)
    }

    /// Runs `f` on the manager at the current time, then delivers what it released.
    fn with<T>(&self, f: impl FnOnce(&mut GroupManager, i64) -> T) -> T {
        let mut inner = self.lock();
        let now = self.clock.now_ms();
        let out = f(&mut inner.manager, now);
        // Group metadata that could not be written stays in memory (the sink logged it).
        let _ = self.flush(&mut inner);
        out
    }

    /// JoinGroup: resolves when the coordinator answers (possibly after a rebalance).
    pub fn join(&self, req: JoinRequest) -> impl Future<Output = JoinResponse> + Send + 'static {
        let (tx, rx) = oneshot::channel();
        let member_id = req.member_id.clone();
        {
            let mut inner = self.lock();
            if inner.closed {
                let _ = tx.send(JoinResponse::error(
                    member_id.clone(),
                    ErrorCode::NOT_COORDINATOR,
                ));
            } else {
                let id = inner.next_id();
                inner.waiters.insert(id, Waiter::Join(tx));
                let now = self.clock.now_ms();
                inner.manager.join(id, req, now);
                let _ = self.flush(&mut inner);
            }
        }
        async move {
            rx.await
                .unwrap_or_else(|_| JoinResponse::error(member_id, ErrorCode::NOT_COORDINATOR))
        }
    }

    /// SyncGroup: resolves when the member's assignment is known (or the sync fails).
    pub fn sync(&self, req: SyncRequest) -> impl Future<Output = SyncResponse> + Send + 'static {
        let (tx, rx) = oneshot::channel();
        {
            let mut inner = self.lock();
            if inner.closed {
                let _ = tx.send(SyncResponse::error(ErrorCode::NOT_COORDINATOR));
            } else {
                let id = inner.next_id();
                inner.waiters.insert(id, Waiter::Sync(tx));
                let now = self.clock.now_ms();
                inner.manager.sync(id, req, now);
                let _ = self.flush(&mut inner);
            }
        }
        async move {
            rx.await
                .unwrap_or_else(|_| SyncResponse::error(ErrorCode::NOT_COORDINATOR))
        }
    }

    pub fn heartbeat(&self, req: &HeartbeatRequest) -> ErrorCode {
        self.with(|m, now| m.heartbeat(req, now))
    }

    pub fn leave(&self, group_id: &str, members: &[LeavingMember]) -> LeaveResponse {
        self.with(|m, now| m.leave(group_id, members, now))
    }

    /// OffsetCommit. The offsets count as committed only once their records are written: if
    /// the sink refuses them, the commit is answered with its error and the offsets go back
    /// to what they were.
    pub fn commit_offsets(&self, req: &CommitRequest) -> Vec<ErrorCode> {
        let mut inner = self.lock();
        let now = self.clock.now_ms();
        let before: Vec<_> = req
            .partitions
            .iter()
            .map(|p| {
                inner
                    .manager
                    .offsets
                    .get(&req.group_id, &p.topic, p.partition)
            })
            .collect();
        let mut codes = inner.manager.commit_offsets(req, now);
        if let Err(code) = self.flush(&mut inner) {
            for ((p, old), c) in req.partitions.iter().zip(before).zip(codes.iter_mut()) {
                if c.is_ok() {
                    match old {
                        Some(v) => {
                            inner
                                .manager
                                .offsets
                                .put(&req.group_id, &p.topic, p.partition, v)
                        }
                        None => {
                            inner
                                .manager
                                .offsets
                                .remove(&req.group_id, &p.topic, p.partition);
                        }
                    }
                    *c = code;
                }
            }
        }
        codes
    }

    pub fn fetch_offsets(
        &self,
        group_id: &str,
        topics: Option<&[(String, Vec<i32>)]>,
        require_stable: bool,
    ) -> Vec<FetchedOffset> {
        self.with(|m, _| m.fetch_offsets(group_id, topics, require_stable))
    }

    pub fn delete_offsets(
        &self,
        group_id: &str,
        partitions: &[(String, i32)],
    ) -> Result<Vec<ErrorCode>, ErrorCode> {
        self.with(|m, _| m.delete_offsets(group_id, partitions))
    }

    pub fn describe(&self, group_id: &str) -> GroupDescription {
        self.with(|m, _| m.describe(group_id))
    }

    pub fn list(&self, states: &[&str], types: &[&str]) -> Vec<GroupListing> {
        self.with(|m, _| m.list(states, types))
    }

    pub fn delete_groups(&self, ids: &[String]) -> Vec<ErrorCode> {
        self.with(|m, _| m.delete_groups(ids))
    }

    /// Fires the timers that are due.
    pub fn tick(&self) {
        self.with(|m, now| {
            if m.poll_timeout().is_some_and(|d| d <= now) {
                m.handle_timeout(now);
            }
        });
    }

    /// Removes expired offsets (see [`GroupManager::expire_offsets`]).
    pub fn expire_offsets(&self) -> usize {
        self.with(|m, now| m.expire_offsets(now))
    }

    /// Rebuilds state from `__consumer_offsets` records (start-up).
    pub fn replay(&self, records: impl IntoIterator<Item = OffsetsRecord>) {
        self.with(|m, now| m.replay(records, now));
    }

    /// Reads the manager's state (tests, diagnostics).
    pub fn inspect<T>(&self, f: impl FnOnce(&GroupManager) -> T) -> T {
        f(&self.lock().manager)
    }

    /// Stops coordinating: waiting JoinGroups and SyncGroups, and any that arrive from now
    /// on, are answered NOT_COORDINATOR (clients look for the coordinator again).
    pub fn close(&self) {
        let mut inner = self.lock();
        inner.closed = true;
        for (_, waiter) in inner.waiters.drain() {
            match waiter {
                Waiter::Join(tx) => {
                    let _ = tx.send(JoinResponse::error("", ErrorCode::NOT_COORDINATOR));
                }
                Waiter::Sync(tx) => {
                    let _ = tx.send(SyncResponse::error(ErrorCode::NOT_COORDINATOR));
                }
            }
        }
    }
}

/// How often [`run_timers`] looks for due timers.
pub const TIMER_TICK: Duration = Duration::from_millis(100);

/// Fires the coordinator's timers every [`TIMER_TICK`] and expires offsets every
/// `offsets.retention.check.interval.ms`, until `shutdown` completes; then closes the
/// coordinator so that nothing waits on it any more.
pub async fn run_timers(coordinator: &GroupCoordinator, shutdown: impl Future<Output = ()>) {
    let mut tick = tokio::time::interval(TIMER_TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let check_every = coordinator.config.offsets_retention_check_interval_ms;
    let mut next_expiry = coordinator.now_ms().saturating_add(check_every);
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            _ = tick.tick() => {
                coordinator.tick();
                if coordinator.now_ms() >= next_expiry {
                    let n = coordinator.expire_offsets();
                    if n > 0 {
                        tracing::info!(expired = n, "expired committed offsets");
                    }
                    next_expiry = coordinator.now_ms().saturating_add(check_every);
                }
            }
        }
    }
    coordinator.close();
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;
    use crate::group::types::CommitPartition;

    /// A sink that refuses records while `fail` is set, and counts what it took.
    #[derive(Debug, Default)]
    struct FlakySink {
        fail: Arc<AtomicBool>,
        taken: Arc<Mutex<Vec<OffsetsRecord>>>,
    }

    impl RecordSink for FlakySink {
        fn append(&self, records: Vec<OffsetsRecord>) -> Result<(), ErrorCode> {
            if self.fail.load(Ordering::SeqCst) {
                return Err(ErrorCode::NOT_COORDINATOR);
            }
            self.taken
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .extend(records);
            Ok(())
        }
    }

    fn commit(offsets: &[(i32, i64)]) -> CommitRequest {
        CommitRequest {
            group_id: "g".into(),
            generation_id: -1,
            member_id: String::new(),
            group_instance_id: None,
            retention_ms: None,
            partitions: offsets
                .iter()
                .map(|&(partition, offset)| CommitPartition {
                    topic: "t".into(),
                    partition,
                    offset,
                    leader_epoch: -1,
                    metadata: None,
                    commit_timestamp: None,
                })
                .collect(),
        }
    }

    fn fetched(c: &GroupCoordinator) -> Vec<i64> {
        let asked = [("t".to_owned(), vec![0, 1])];
        c.fetch_offsets("g", Some(&asked), false)
            .into_iter()
            .map(|f| f.offset)
            .collect()
    }

    #[test]
    fn a_commit_whose_records_cannot_be_written_fails_and_changes_nothing() {
        let fail = Arc::new(AtomicBool::new(false));
        let taken = Arc::new(Mutex::new(Vec::new()));
        let sink = FlakySink {
            fail: fail.clone(),
            taken: taken.clone(),
        };
        let c = GroupCoordinator::with_parts(
            GroupConfig::default(),
            Box::new(MemoryOffsetStore::default()),
            Box::new(sink),
        );
        assert_eq!(c.commit_offsets(&commit(&[(0, 10)])), vec![ErrorCode::NONE]);
        assert_eq!(fetched(&c), vec![10, -1]);
        fail.store(true, Ordering::SeqCst);
        let codes = c.commit_offsets(&commit(&[(0, 20), (1, 5)]));
        assert_eq!(codes, vec![ErrorCode::NOT_COORDINATOR; 2]);
        // The earlier offset stays, the new partition has none: memory matches the log.
        assert_eq!(fetched(&c), vec![10, -1]);
        fail.store(false, Ordering::SeqCst);
        assert_eq!(
            c.commit_offsets(&commit(&[(0, 20), (1, 5)])),
            vec![ErrorCode::NONE; 2]
        );
        assert_eq!(fetched(&c), vec![20, 5]);
        let written = taken
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len();
        assert_eq!(
            written, 3,
            "only the successful commits' records were written"
        );
    }
}
