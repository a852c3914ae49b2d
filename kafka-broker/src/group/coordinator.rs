//! The coordinator as the request handlers use it: the pure [`GroupManager`] behind a mutex,
//! answers that wait (JoinGroup, SyncGroup) as futures fed by oneshot channels, records
//! handed to a [`RecordSink`], and [`run_timers`] firing the timers.
//!
//! Nothing here decides anything about groups; it only moves answers, records and time.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use kafka_protocol::error_code::ErrorCode;
use tokio::sync::oneshot;

use super::MemberIdGen;
use super::config::GroupConfig;
use super::manager::GroupManager;
use super::offsets::{MemoryOffsetStore, OffsetAndMetadata, OffsetStore};
use super::records::{LogEntry, OffsetsRecord};
use super::types::{
    CommitRequest, FetchedOffset, GroupDescription, GroupListing, HeartbeatRequest, JoinRequest,
    JoinResponse, LeaveResponse, LeavingMember, Output, RequestId, SyncRequest, SyncResponse,
    TxnBatch, TxnCommitRequest,
};

/// Where the records the coordinator produces go (the broker's is
/// `crate::offsets_topic::OffsetsTopicSink`, appending to `__consumer_offsets`). Called under
/// the coordinator's lock, once per operation that produced records, in the order the changes
/// happened, before that operation is answered; it only appends (a page-cache write) and must
/// never wait for I/O or call back into the coordinator. An error is the code to answer the
/// operation with (a failed offset commit is rolled back). `Ok(Some(wait))`: the records are
/// written but not yet acknowledged (an fsync in durable mode, later the in-sync replicas);
/// `wait` resolves when they are, and is awaited with the coordinator's lock released.
pub trait RecordSink: Send + Sync + std::fmt::Debug {
    fn append(&self, records: Vec<OffsetsRecord>) -> Result<Option<DurableWait>, ErrorCode>;

    /// [`RecordSink::append`] for one TxnOffsetCommit's records (all of one group): written as
    /// one transactional batch of the producer (its id and epoch, no sequence). The default
    /// writes them as ordinary records (sinks that keep no log).
    fn append_transactional(&self, batch: TxnBatch) -> Result<Option<DurableWait>, ErrorCode> {
        self.append(batch.records)
    }
}

/// Resolves once appended records are acknowledged; an error is the code to answer with.
pub type DurableWait =
    std::pin::Pin<Box<dyn Future<Output = Result<(), ErrorCode>> + Send + 'static>>;

/// A [`RecordSink`] that drops everything (offsets live in memory only).
#[derive(Debug, Default, Clone, Copy)]
pub struct DiscardRecords;

impl RecordSink for DiscardRecords {
    fn append(&self, _records: Vec<OffsetsRecord>) -> Result<Option<DurableWait>, ErrorCode> {
        Ok(None)
    }
}

/// The key of one committed offset.
type OffsetKey = (String, String, i32);

#[derive(Debug)]
enum Waiter {
    /// A JoinGroup of this group, waiting.
    Join(String, oneshot::Sender<JoinResponse>),
    /// A SyncGroup of this group, waiting.
    Sync(String, oneshot::Sender<SyncResponse>),
}

impl Waiter {
    fn group(&self) -> &str {
        match self {
            Self::Join(g, _) | Self::Sync(g, _) => g,
        }
    }

    /// Answers NOT_COORDINATOR (the client looks for the coordinator again).
    fn not_coordinator(self) {
        match self {
            Self::Join(_, tx) => {
                let _ = tx.send(JoinResponse::error("", ErrorCode::NOT_COORDINATOR));
            }
            Self::Sync(_, tx) => {
                let _ = tx.send(SyncResponse::error(ErrorCode::NOT_COORDINATOR));
            }
        }
    }
}

#[derive(Debug)]
struct Inner {
    manager: GroupManager,
    waiters: HashMap<RequestId, Waiter>,
    next_request: u64,
    closed: bool,
    /// Kafka's pending offset commits: written to the log, not yet acknowledged, so not yet
    /// visible. Each commit has a number; a commit's values are applied when it is
    /// acknowledged, unless a later commit of the same partition was applied first.
    next_commit: u64,
    applied_commit: HashMap<OffsetKey, u64>,
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
    /// Shared with the commits waiting for their records' acknowledgement.
    inner: Arc<Mutex<Inner>>,
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
            inner: Arc::new(Mutex::new(Inner {
                manager: GroupManager::with_store(config.clone(), ids, offsets),
                waiters: HashMap::new(),
                next_request: 0,
                closed: false,
                next_commit: 0,
                applied_commit: HashMap::new(),
            })),
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
        crate::sync::lock(&self.inner)
    }

    fn pending_handle(&self) -> Weak<Mutex<Inner>> {
        Arc::downgrade(&self.inner)
    }

    /// Delivers released answers and hands over records; the sink's error if it refused them,
    /// and what to wait for before the records count as written.
    fn flush(&self, inner: &mut Inner) -> Result<Option<DurableWait>, ErrorCode> {
        while let Some(out) = inner.manager.poll_output() {
            match out {
                Output::Join { request, response } => {
                    if let Some(Waiter::Join(_, tx)) = inner.waiters.remove(&request) {
                        // The client may be gone; nothing to do then.
                        let _ = tx.send(response);
                    }
                }
                Output::Sync { request, response } => {
                    if let Some(Waiter::Sync(_, tx)) = inner.waiters.remove(&request) {
                        let _ = tx.send(response);
                    }
                }
            }
        }
        let records = inner.manager.take_records();
        if records.is_empty() {
            return Ok(None);
        }
        self.sink.append(records)
    }

    /// [`Self::flush`] for operations whose answer does not wait for the records (group
    /// metadata: the answers went out already): the acknowledgement still runs, in the
    /// background, so that durable mode fsyncs promptly.
    fn flush_detached(&self, inner: &mut Inner) {
        // Group metadata that could not be written stays in memory (the sink logged it).
        if let Ok(Some(wait)) = self.flush(inner) {
            if let Ok(rt) = tokio::runtime::Handle::try_current() {
                rt.spawn(wait);
            }
        }
    }

    /// Runs `f` on the manager at the current time, then delivers what it released.
    fn with<T>(&self, f: impl FnOnce(&mut GroupManager, i64) -> T) -> T {
        let mut inner = self.lock();
        let now = self.clock.now_ms();
        let out = f(&mut inner.manager, now);
        self.flush_detached(&mut inner);
        out
    }

    /// JoinGroup: resolves when the coordinator answers (possibly after a rebalance).
    pub fn join(&self, req: JoinRequest) -> impl Future<Output = JoinResponse> + Send + 'static {
        let (tx, rx) = oneshot::channel();
        let member_id = req.member_id.clone();
        let group_id = req.group_id.clone();
        {
            let mut inner = self.lock();
            if inner.closed {
                let _ = tx.send(JoinResponse::error(
                    member_id.clone(),
                    ErrorCode::NOT_COORDINATOR,
                ));
            } else {
                let id = inner.next_id();
                inner.waiters.insert(id, Waiter::Join(group_id, tx));
                let now = self.clock.now_ms();
                inner.manager.join(id, req, now);
                self.flush_detached(&mut inner);
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
                inner
                    .waiters
                    .insert(id, Waiter::Sync(req.group_id.clone(), tx));
                let now = self.clock.now_ms();
                inner.manager.sync(id, req, now);
                self.flush_detached(&mut inner);
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

    /// OffsetCommit. The offsets count as committed only once their records are written and
    /// acknowledged: until then they are pending (OffsetFetch shows the values before them),
    /// and the wait for the acknowledgement runs with the coordinator's lock released. If the
    /// sink refuses the records, or their acknowledgement fails, the commit is answered with
    /// that error and the offsets stay what they were.
    pub fn commit_offsets(
        &self,
        req: &CommitRequest,
    ) -> impl Future<Output = Vec<ErrorCode>> + Send + use<> {
        let mut inner = self.lock();
        let now = self.clock.now_ms();
        let keys: Vec<OffsetKey> = req
            .partitions
            .iter()
            .map(|p| (req.group_id.clone(), p.topic.clone(), p.partition))
            .collect();
        let before: Vec<Option<OffsetAndMetadata>> = keys
            .iter()
            .map(|k| inner.manager.offsets.get(&k.0, &k.1, k.2))
            .collect();
        let mut codes = inner.manager.commit_offsets(req, now);
        let flushed = self.flush(&mut inner);
        let accepted: Vec<bool> = codes.iter().map(|c| c.is_ok()).collect();
        let wait = match flushed {
            Ok(None) => {
                inner.next_commit += 1;
                let n = inner.next_commit;
                for (k, ok) in keys.iter().zip(&accepted) {
                    if *ok {
                        inner.applied_commit.insert(k.clone(), n);
                    }
                }
                None
            }
            Ok(Some(wait)) => {
                // Pending: keep the new values aside and show the old ones until the wait ends.
                inner.next_commit += 1;
                let n = inner.next_commit;
                let mut pending = Vec::new();
                for ((k, old), ok) in keys.iter().zip(&before).zip(&accepted) {
                    if *ok {
                        pending.push((k.clone(), inner.manager.offsets.get(&k.0, &k.1, k.2)));
                        restore(&mut inner.manager, k, old.clone());
                    }
                }
                Some((wait, n, pending))
            }
            Err(code) => {
                for ((k, old), c) in keys.iter().zip(before).zip(codes.iter_mut()) {
                    if c.is_ok() {
                        restore(&mut inner.manager, k, old);
                        *c = code;
                    }
                }
                None
            }
        };
        drop(inner);
        let coordinator = self.pending_handle();
        let count = codes.len();
        let waits = wait.is_some();
        let complete = async move {
            let Some((wait, n, pending)) = wait else {
                return codes;
            };
            let result = wait.await;
            let Some(inner) = coordinator.upgrade() else {
                return codes;
            };
            let mut inner = crate::sync::lock(&inner);
            match result {
                Ok(()) => {
                    for (k, value) in pending {
                        // A later commit applied first, or a committed transaction whose
                        // offset record came after this one: that value stands.
                        let newer = inner.applied_commit.get(&k).is_some_and(|&m| m > n)
                            || value.as_ref().is_some_and(|v| {
                                inner
                                    .manager
                                    .offsets
                                    .get(&k.0, &k.1, k.2)
                                    .is_some_and(|c| c.log_order > v.log_order)
                            });
                        if !newer {
                            inner.applied_commit.insert(k.clone(), n);
                            restore(&mut inner.manager, &k, value);
                        }
                    }
                }
                Err(code) => {
                    for (c, ok) in codes.iter_mut().zip(&accepted) {
                        if *ok {
                            *c = code;
                        }
                    }
                }
            }
            codes
        };
        // The completion runs to its end even if the caller stops waiting (its client went
        // away): the records are in the log, so the offsets must become visible.
        match tokio::runtime::Handle::try_current() {
            Ok(rt) if waits => {
                let task = rt.spawn(complete);
                futures::future::Either::Left(async move {
                    task.await
                        .unwrap_or_else(|_| vec![ErrorCode::NOT_COORDINATOR; count])
                })
            }
            _ => futures::future::Either::Right(complete),
        }
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

    /// Rebuilds state from `__consumer_offsets` entries (start-up, or a partition this broker
    /// now leads).
    pub fn replay<R: Into<LogEntry>>(&self, entries: impl IntoIterator<Item = R>) {
        self.with(|m, now| m.replay(entries, now));
    }

    /// TxnOffsetCommit. The offsets are pending for (group, producer) as soon as they are
    /// accepted (OffsetFetch with `require_stable` sees that), their records are handed to the
    /// sink as one transactional batch, and the answer waits for the batch's acknowledgement
    /// (with the coordinator's lock released). If the sink refuses the batch, or its
    /// acknowledgement fails, the commit is answered with that error and the pending offsets
    /// are what they were.
    pub fn txn_commit_offsets(
        &self,
        req: &TxnCommitRequest,
    ) -> impl Future<Output = Vec<ErrorCode>> + Send + use<> {
        let mut inner = self.lock();
        let now = self.clock.now_ms();
        let pid = req.producer_id;
        let keys: Vec<OffsetKey> = req
            .partitions
            .iter()
            .map(|p| (req.group_id.clone(), p.topic.clone(), p.partition))
            .collect();
        let before: Vec<Option<OffsetAndMetadata>> = keys
            .iter()
            .map(|k| {
                inner
                    .manager
                    .pending_txn_offset(&k.0, pid, &k.1, k.2)
                    .cloned()
            })
            .collect();
        let mut codes = inner.manager.txn_commit_offsets(req, now);
        // What to undo if the batch is not written: (key, its pending log order, before).
        let undo: Vec<(OffsetKey, u64, Option<OffsetAndMetadata>)> = keys
            .into_iter()
            .zip(before)
            .zip(&codes)
            .filter(|(_, c)| c.is_ok())
            .filter_map(|((k, old), _)| {
                let order = inner
                    .manager
                    .pending_txn_offset(&k.0, pid, &k.1, k.2)?
                    .log_order;
                Some((k, order, old))
            })
            .collect();
        // Nothing else is expected here, but whatever the call released goes out first.
        self.flush_detached(&mut inner);
        let batches = inner.manager.take_txn_batches();
        let mut wait = None;
        for batch in batches {
            match self.sink.append_transactional(batch) {
                Ok(None) => {}
                Ok(Some(w)) => wait = Some(w),
                Err(code) => {
                    undo_pending(&mut inner.manager, pid, &undo);
                    for c in codes.iter_mut().filter(|c| c.is_ok()) {
                        *c = code;
                    }
                }
            }
        }
        drop(inner);
        let coordinator = self.pending_handle();
        let count = codes.len();
        let waits = wait.is_some();
        let complete = async move {
            let Some(wait) = wait else {
                return codes;
            };
            if let Err(code) = wait.await {
                if let Some(inner) = coordinator.upgrade() {
                    let mut inner = crate::sync::lock(&inner);
                    undo_pending(&mut inner.manager, pid, &undo);
                }
                for c in codes.iter_mut().filter(|c| c.is_ok()) {
                    *c = code;
                }
            }
            codes
        };
        // As for plain commits: the completion runs to its end even if the client went away.
        match tokio::runtime::Handle::try_current() {
            Ok(rt) if waits => {
                let task = rt.spawn(complete);
                futures::future::Either::Left(async move {
                    task.await
                        .unwrap_or_else(|_| vec![ErrorCode::NOT_COORDINATOR; count])
                })
            }
            _ => futures::future::Either::Right(complete),
        }
    }

    /// The end of producer `producer_id`'s transaction in `__consumer_offsets` partition
    /// `offsets_partition`, called once its COMMIT or ABORT marker is appended there: the
    /// producer's pending offsets of that partition's groups become committed (where no later
    /// commit stands) or are dropped. Returns how many offsets were committed.
    pub fn complete_transaction(
        &self,
        offsets_partition: i32,
        producer_id: i64,
        commit: bool,
    ) -> usize {
        self.with(|m, _| m.complete_transaction(offsets_partition, producer_id, commit))
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
            waiter.not_coordinator();
        }
    }

    /// Stops coordinating the groups of `__consumer_offsets` partition `partition` (another
    /// broker leads it now): they are forgotten, and their waiting JoinGroups and SyncGroups
    /// answered NOT_COORDINATOR. Returns how many groups went.
    pub fn unload(&self, partition: i32) -> usize {
        let mut inner = self.lock();
        let gone = inner.manager.unload(partition);
        let config = inner.manager.config().clone();
        let ids: Vec<RequestId> = inner
            .waiters
            .iter()
            .filter(|(_, w)| config.partition_for(w.group()) == partition)
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            if let Some(w) = inner.waiters.remove(&id) {
                w.not_coordinator();
            }
        }
        gone
    }
}

/// Undoes pending transactional offsets whose batch was not written.
fn undo_pending(
    manager: &mut GroupManager,
    producer_id: i64,
    undo: &[(OffsetKey, u64, Option<OffsetAndMetadata>)],
) {
    for ((group, topic, partition), order, old) in undo {
        manager.restore_pending(group, producer_id, topic, *partition, *order, old.clone());
    }
}

/// Puts back (or removes) one committed offset.
fn restore(
    manager: &mut GroupManager,
    (group, topic, partition): &OffsetKey,
    value: Option<OffsetAndMetadata>,
) {
    match value {
        Some(v) => manager.offsets.put(group, topic, *partition, v),
        None => {
            manager.offsets.remove(group, topic, *partition);
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
        fn append(&self, records: Vec<OffsetsRecord>) -> Result<Option<DurableWait>, ErrorCode> {
            if self.fail.load(Ordering::SeqCst) {
                return Err(ErrorCode::NOT_COORDINATOR);
            }
            crate::sync::lock(&self.taken).extend(records);
            Ok(None)
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
        assert_eq!(
            futures::executor::block_on(c.commit_offsets(&commit(&[(0, 10)]))),
            vec![ErrorCode::NONE]
        );
        assert_eq!(fetched(&c), vec![10, -1]);
        fail.store(true, Ordering::SeqCst);
        let codes = futures::executor::block_on(c.commit_offsets(&commit(&[(0, 20), (1, 5)])));
        assert_eq!(codes, vec![ErrorCode::NOT_COORDINATOR; 2]);
        // The earlier offset stays, the new partition has none: memory matches the log.
        assert_eq!(fetched(&c), vec![10, -1]);
        fail.store(false, Ordering::SeqCst);
        assert_eq!(
            futures::executor::block_on(c.commit_offsets(&commit(&[(0, 20), (1, 5)]))),
            vec![ErrorCode::NONE; 2]
        );
        assert_eq!(fetched(&c), vec![20, 5]);
        let written = crate::sync::lock(&taken).len();
        assert_eq!(
            written, 3,
            "only the successful commits' records were written"
        );
    }

    type Ack = oneshot::Sender<Result<(), ErrorCode>>;

    /// A sink whose acknowledgements the test gives, one oneshot per append.
    #[derive(Debug, Default)]
    struct HeldSink {
        acks: Arc<Mutex<Vec<Ack>>>,
    }

    impl RecordSink for HeldSink {
        fn append(&self, _records: Vec<OffsetsRecord>) -> Result<Option<DurableWait>, ErrorCode> {
            let (tx, rx) = oneshot::channel();
            crate::sync::lock(&self.acks).push(tx);
            Ok(Some(Box::pin(async move {
                rx.await.unwrap_or(Err(ErrorCode::NOT_COORDINATOR))
            })))
        }
    }

    #[tokio::test]
    async fn pending_commits_are_invisible_until_acknowledged_and_never_go_back() {
        let acks = Arc::new(Mutex::new(Vec::new()));
        let c = GroupCoordinator::with_parts(
            GroupConfig::default(),
            Box::new(MemoryOffsetStore::default()),
            Box::new(HeldSink { acks: acks.clone() }),
        );
        let take = |i: usize| crate::sync::lock(&acks).remove(i);
        // Pending: the commit waits, and the coordinator (not locked meanwhile) shows the
        // value from before.
        let first = tokio::spawn(c.commit_offsets(&commit(&[(0, 5)])));
        tokio::task::yield_now().await;
        assert!(!first.is_finished());
        assert_eq!(fetched(&c), vec![-1, -1]);
        take(0).send(Ok(())).unwrap();
        assert_eq!(first.await.unwrap(), vec![ErrorCode::NONE]);
        assert_eq!(fetched(&c), vec![5, -1]);
        // A failed acknowledgement: answered with its error, the old value stays.
        let failed = tokio::spawn(c.commit_offsets(&commit(&[(0, 9)])));
        tokio::task::yield_now().await;
        take(0).send(Err(ErrorCode::NOT_COORDINATOR)).unwrap();
        assert_eq!(failed.await.unwrap(), vec![ErrorCode::NOT_COORDINATOR]);
        assert_eq!(fetched(&c), vec![5, -1]);
        // Two commits acknowledged in the other order: the later one wins, as in the log.
        let a = tokio::spawn(c.commit_offsets(&commit(&[(0, 6), (1, 1)])));
        tokio::task::yield_now().await;
        let b = tokio::spawn(c.commit_offsets(&commit(&[(0, 7)])));
        tokio::task::yield_now().await;
        let ack_a = take(0);
        take(0).send(Ok(())).unwrap();
        assert_eq!(b.await.unwrap(), vec![ErrorCode::NONE]);
        assert_eq!(fetched(&c), vec![7, -1]);
        ack_a.send(Ok(())).unwrap();
        assert_eq!(a.await.unwrap(), vec![ErrorCode::NONE; 2]);
        assert_eq!(fetched(&c), vec![7, 1]);
    }

    /// A sink for transactional batches: refuses while `fail` is set, else holds each
    /// acknowledgement for the test to give; keeps what it was handed.
    #[derive(Debug, Default)]
    struct TxnSink {
        fail: Arc<AtomicBool>,
        batches: Arc<Mutex<Vec<TxnBatch>>>,
        acks: Arc<Mutex<Vec<Ack>>>,
    }

    impl RecordSink for TxnSink {
        fn append(&self, _records: Vec<OffsetsRecord>) -> Result<Option<DurableWait>, ErrorCode> {
            Ok(None)
        }

        fn append_transactional(&self, batch: TxnBatch) -> Result<Option<DurableWait>, ErrorCode> {
            if self.fail.load(Ordering::SeqCst) {
                return Err(ErrorCode::NOT_COORDINATOR);
            }
            crate::sync::lock(&self.batches).push(batch);
            let (tx, rx) = oneshot::channel();
            crate::sync::lock(&self.acks).push(tx);
            Ok(Some(Box::pin(async move {
                rx.await.unwrap_or(Err(ErrorCode::NOT_COORDINATOR))
            })))
        }
    }

    fn txn_commit(offset: i64) -> TxnCommitRequest {
        TxnCommitRequest {
            transactional_id: "tx".into(),
            group_id: "g".into(),
            producer_id: 7,
            producer_epoch: 3,
            generation_id: -1,
            member_id: String::new(),
            group_instance_id: None,
            partitions: commit(&[(0, offset)]).partitions,
        }
    }

    fn pending(c: &GroupCoordinator) -> Option<i64> {
        c.inspect(|m| m.pending_txn_offset("g", 7, "t", 0).map(|v| v.offset))
    }

    #[tokio::test]
    async fn a_transactional_commit_is_answered_once_written_and_undone_if_it_is_not() {
        let sink = TxnSink::default();
        let (fail, batches, acks) = (sink.fail.clone(), sink.batches.clone(), sink.acks.clone());
        let c = GroupCoordinator::with_parts(
            GroupConfig::default(),
            Box::new(MemoryOffsetStore::default()),
            Box::new(sink),
        );
        let take = || crate::sync::lock(&acks).remove(0);
        // Pending at once, answered when acknowledged; one batch of the producer.
        let first = tokio::spawn(c.txn_commit_offsets(&txn_commit(10)));
        tokio::task::yield_now().await;
        assert!(!first.is_finished());
        assert_eq!(pending(&c), Some(10));
        take().send(Ok(())).unwrap();
        assert_eq!(first.await.unwrap(), vec![ErrorCode::NONE]);
        {
            let b = crate::sync::lock(&batches);
            assert_eq!((b.len(), b[0].producer_id, b[0].producer_epoch), (1, 7, 3));
            assert_eq!(b[0].records.len(), 1);
        }
        // Acknowledgement failed: answered with its error, the earlier pending offset back.
        let second = tokio::spawn(c.txn_commit_offsets(&txn_commit(20)));
        tokio::task::yield_now().await;
        assert_eq!(pending(&c), Some(20));
        take().send(Err(ErrorCode::NOT_ENOUGH_REPLICAS)).unwrap();
        assert_eq!(second.await.unwrap(), vec![ErrorCode::NOT_ENOUGH_REPLICAS]);
        assert_eq!(pending(&c), Some(10));
        // Refused by the sink: the same.
        fail.store(true, Ordering::SeqCst);
        let refused = c.txn_commit_offsets(&txn_commit(30)).await;
        assert_eq!(refused, vec![ErrorCode::NOT_COORDINATOR]);
        assert_eq!(pending(&c), Some(10));
        // The marker commits what was written.
        let p = c.partition_for("g");
        assert_eq!(c.complete_transaction(p, 7, true), 1);
        assert_eq!(fetched(&c), vec![10, -1]);
        assert_eq!(pending(&c), None);
    }
}
