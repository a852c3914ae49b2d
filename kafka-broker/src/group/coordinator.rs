//! The group coordinator as the request handlers use it: the [`GroupMachine`] (the pure
//! [`GroupManager`] with its pending commits and timers) in a [`Shell`], which gives it the
//! clock, turns the answers that wait (JoinGroup, SyncGroup, OffsetCommit, TxnOffsetCommit)
//! into futures, appends its records to `__consumer_offsets` through a [`RecordLog`] and
//! fires its timers. Nothing here decides anything about groups.

use std::future::Future;
use std::sync::{Arc, OnceLock};

use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::record::RecordBatch;

use super::MemberIdGen;
use super::config::GroupConfig;
use super::consumer::{
    ConsumerGroupDescription, HeartbeatRequest as ConsumerHeartbeat, HeartbeatResponse,
    TopicsImage, TopicsSnapshot,
};
use super::kip848::{ListedGroup, Refusal};
use super::machine::{GroupAnswer, GroupMachine};
use super::manager::GroupManager;
use super::records::{LogEntry, decode_batch};
use super::types::{
    CommitRequest, FetchedOffset, GroupDescription, GroupListing, HeartbeatRequest, JoinRequest,
    JoinResponse, LeaveResponse, LeavingMember, SyncRequest, SyncResponse, TxnCommitRequest,
};
use crate::clock::Clock;
use crate::coordinator::{DiscardRecords, PartitionOwner, RecordLog, Shell};

/// How long an append to `__consumer_offsets` waits for the in-sync replicas (Kafka's
/// `offsets.commit.timeout.ms` default); a commit not acknowledged by then is answered
/// COORDINATOR_NOT_AVAILABLE.
pub const OFFSETS_COMMIT_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(5_000);

/// Where the coordinator reads the broker's topics when nobody hands it an image (loading
/// a partition's consumer groups): the broker sets it once it is built.
pub type TopicsSource = Arc<dyn Fn() -> TopicsSnapshot + Send + Sync>;

/// The group coordinator shared by every connection.
pub struct GroupCoordinator {
    shell: Shell<GroupMachine>,
    config: GroupConfig,
    topics: OnceLock<TopicsSource>,
}

impl std::fmt::Debug for GroupCoordinator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupCoordinator")
            .field("shell", &self.shell)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl GroupCoordinator {
    /// A coordinator on `clock` whose records go to `log`, with random member ids.
    pub fn new(config: GroupConfig, clock: Clock, log: Arc<dyn RecordLog>) -> Self {
        Self::with_ids(config, clock, log, MemberIdGen::from_entropy())
    }

    /// [`GroupCoordinator::new`] with member ids from `ids`.
    pub fn with_ids(
        config: GroupConfig,
        clock: Clock,
        log: Arc<dyn RecordLog>,
        ids: MemberIdGen,
    ) -> Self {
        Self::with_manager(GroupManager::new(config.clone(), ids), config, clock, log)
    }

    /// A coordinator around `manager`.
    fn with_manager(
        manager: GroupManager,
        config: GroupConfig,
        clock: Clock,
        log: Arc<dyn RecordLog>,
    ) -> Self {
        let machine = GroupMachine::new(manager, clock.now_ms());
        Self {
            shell: Shell::new(machine, clock, log),
            config,
            topics: OnceLock::new(),
        }
    }

    /// Where the broker's topics are read from when loading consumer groups (set once; a
    /// coordinator without it loads them against no topics).
    pub fn set_topics_source(&self, source: TopicsSource) {
        if self.topics.set(source).is_err() {
            tracing::warn!("group coordinator topics source set twice; the first kept");
        }
    }

    fn topics_now(&self) -> TopicsSnapshot {
        self.topics.get().map(|f| f()).unwrap_or_default()
    }

    /// ConsumerGroupHeartbeat (KIP-848) against the topics of `image`: resolves once its
    /// records are acknowledged (see [`GroupMachine`]), or at once when refused.
    pub fn consumer_heartbeat(
        &self,
        req: ConsumerHeartbeat,
        image: &dyn TopicsImage,
    ) -> impl Future<Output = Result<HeartbeatResponse, Refusal>> + Send + 'static {
        let partition = self.partition_for(&req.group_id);
        let asked = self.shell.ask(Some(partition), |m, id, now| {
            m.consumer_heartbeat(id, &req, image, now);
        });
        async move {
            match asked.answer().await {
                Ok(GroupAnswer::ConsumerHeartbeat(r)) => r,
                Ok(_) => Err(Refusal {
                    code: ErrorCode::UNKNOWN_SERVER_ERROR,
                    message: None,
                }),
                Err(code) => Err(Refusal {
                    code,
                    message: None,
                }),
            }
        }
    }

    /// ConsumerGroupDescribe of one group.
    pub fn consumer_describe(
        &self,
        group_id: &str,
        image: &dyn TopicsImage,
    ) -> Result<ConsumerGroupDescription, Refusal> {
        self.shell
            .inspect(|m| m.manager.consumer_describe(group_id, image))
    }

    /// DescribeGroups of a group of either type (a consumer group as Kafka 4 shows it).
    pub fn describe_group(&self, group_id: &str, image: &dyn TopicsImage) -> GroupDescription {
        self.shell
            .inspect(|m| m.manager.describe_group(group_id, image))
    }

    /// ListGroups of both types.
    pub fn list_groups(&self, states: &[&str], types: &[&str]) -> Vec<ListedGroup> {
        self.shell.inspect(|m| m.manager.list_groups(states, types))
    }

    /// OffsetFetch v9+ of a consumer group: the member and its epoch (see
    /// [`GroupManager::check_consumer_fetch`]).
    pub fn check_consumer_fetch(
        &self,
        group_id: &str,
        member_id: Option<&str>,
        member_epoch: i32,
    ) -> Result<(), ErrorCode> {
        self.shell.inspect(|m| {
            m.manager
                .check_consumer_fetch(group_id, member_id, member_epoch)
        })
    }

    /// Topics were created, deleted or changed their partitions: the consumer groups
    /// subscribed to them get new target assignments (their records written detached).
    pub fn on_metadata(&self, image: &dyn TopicsImage) {
        self.shell
            .call(|m, now| m.manager.consumer.on_metadata(image, now));
    }

    /// A coordinator keeping nothing, on a manual clock at `start_ms` (moved with
    /// [`GroupCoordinator::advance`]) with seeded member ids: for tests.
    /// It serves every group at once (there is no log to load).
    pub fn with_manual_clock(config: GroupConfig, start_ms: i64, seed: u64) -> Self {
        let manager =
            GroupManager::new(config.clone(), MemberIdGen::new(seed)).owning_every_partition();
        Self::with_manager(
            manager,
            config,
            Clock::manual(start_ms),
            Arc::new(DiscardRecords),
        )
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
        self.shell.clock().now_ms()
    }

    /// Moves a manual clock forward (no effect on the system clock) and fires due timers.
    pub fn advance(&self, ms: i64) {
        self.shell.advance(ms);
    }

    /// Fires the timers that are due.
    pub fn tick(&self) {
        self.shell.fire_timers();
    }

    /// JoinGroup: resolves when the coordinator answers (possibly after a rebalance).
    pub fn join(&self, req: JoinRequest) -> impl Future<Output = JoinResponse> + Send + 'static {
        let member_id = req.member_id.clone();
        let partition = self.partition_for(&req.group_id);
        let asked = self
            .shell
            .ask(Some(partition), |m, id, now| m.manager.join(id, req, now));
        async move {
            match asked.answer().await {
                Ok(GroupAnswer::Join(r)) => r,
                _ => JoinResponse::error(member_id, ErrorCode::NOT_COORDINATOR),
            }
        }
    }

    /// SyncGroup: resolves when the member's assignment is known (or the sync fails).
    pub fn sync(&self, req: SyncRequest) -> impl Future<Output = SyncResponse> + Send + 'static {
        let partition = self.partition_for(&req.group_id);
        let asked = self
            .shell
            .ask(Some(partition), |m, id, now| m.manager.sync(id, req, now));
        async move {
            match asked.answer().await {
                Ok(GroupAnswer::Sync(r)) => r,
                _ => SyncResponse::error(ErrorCode::NOT_COORDINATOR),
            }
        }
    }

    /// Whether this coordinator serves `group_id` now (see [`GroupManager::check_group`]):
    /// the requests that only read (DescribeGroups, OffsetFetch) ask first.
    pub fn check_group(&self, group_id: &str) -> Result<(), ErrorCode> {
        self.shell.inspect(|m| m.manager.check_group(group_id))
    }

    pub fn heartbeat(&self, req: &HeartbeatRequest) -> ErrorCode {
        self.shell.call(|m, now| m.manager.heartbeat(req, now))
    }

    pub fn leave(&self, group_id: &str, members: &[LeavingMember]) -> LeaveResponse {
        self.shell
            .call(|m, now| m.manager.leave(group_id, members, now))
    }

    /// OffsetCommit. The offsets count as committed only once their records are written and
    /// acknowledged: until then OffsetFetch shows the values before them, and the answer
    /// waits (with the coordinator's lock released; the wait completes even if the caller
    /// stops waiting). If the records are refused, or their acknowledgement fails, the commit
    /// is answered with Kafka's code for that and the offsets stay what they were.
    pub fn commit_offsets(
        &self,
        req: &CommitRequest,
    ) -> impl Future<Output = Vec<ErrorCode>> + Send + use<> {
        let count = req.partitions.len();
        let partition = self.partition_for(&req.group_id);
        let asked = self
            .shell
            .ask(Some(partition), |m, id, now| m.commit(id, req, now));
        commit_answer(asked.answer(), count)
    }

    /// [`GroupCoordinator::commit_offsets`] of OffsetCommit `api_version` (a consumer
    /// group's member must commit with v9 or above).
    pub fn commit_offsets_at(
        &self,
        req: &CommitRequest,
        api_version: i16,
    ) -> impl Future<Output = Vec<ErrorCode>> + Send + use<> {
        let count = req.partitions.len();
        let partition = self.partition_for(&req.group_id);
        let asked = self.shell.ask(Some(partition), |m, id, now| {
            m.commit_at(id, req, api_version, now);
        });
        commit_answer(asked.answer(), count)
    }

    /// TxnOffsetCommit. The offsets are pending for (group, producer) as soon as they are
    /// accepted (OffsetFetch with `require_stable` sees that), their records are written as
    /// one transactional batch of the producer, and the answer waits for the batch's
    /// acknowledgement. If the batch is refused, or its acknowledgement fails, the commit is
    /// answered with Kafka's code for that and the pending offsets are what they were.
    pub fn txn_commit_offsets(
        &self,
        req: &TxnCommitRequest,
    ) -> impl Future<Output = Vec<ErrorCode>> + Send + use<> {
        let count = req.partitions.len();
        let partition = self.partition_for(&req.group_id);
        let asked = self
            .shell
            .ask(Some(partition), |m, id, now| m.txn_commit(id, req, now));
        commit_answer(asked.answer(), count)
    }

    pub fn fetch_offsets(
        &self,
        group_id: &str,
        topics: Option<&[(String, Vec<i32>)]>,
        require_stable: bool,
    ) -> Vec<FetchedOffset> {
        self.shell
            .inspect(|m| m.manager.fetch_offsets(group_id, topics, require_stable))
    }

    pub fn delete_offsets(
        &self,
        group_id: &str,
        partitions: &[(String, i32)],
    ) -> Result<Vec<ErrorCode>, ErrorCode> {
        self.shell
            .call(|m, _| m.manager.delete_offsets(group_id, partitions))
    }

    pub fn describe(&self, group_id: &str) -> GroupDescription {
        self.shell.inspect(|m| m.manager.describe(group_id))
    }

    pub fn list(&self, states: &[&str], types: &[&str]) -> Vec<GroupListing> {
        self.shell.inspect(|m| m.manager.list(states, types))
    }

    pub fn delete_groups(&self, ids: &[String]) -> Vec<ErrorCode> {
        self.shell.call(|m, _| m.manager.delete_groups(ids))
    }

    /// Removes expired offsets now (see [`GroupManager::expire_offsets`]); the timers do it
    /// every `offsets.retention.check.interval.ms`.
    pub fn expire_offsets(&self) -> usize {
        self.shell.call(|m, now| m.manager.expire_offsets(now))
    }

    /// Rebuilds state from `__consumer_offsets` entries (start-up, or a partition this broker
    /// now leads).
    pub fn replay<R: Into<LogEntry>>(&self, entries: impl IntoIterator<Item = R>) {
        let image = self.topics_now();
        self.shell.call(|m, now| {
            m.manager.replay(entries, now);
            m.manager.consumer.on_loaded(None, &image, now);
        });
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
        self.shell.call(|m, _| {
            m.manager
                .complete_transaction(offsets_partition, producer_id, commit)
        })
    }

    /// Reads the manager's state (tests, diagnostics).
    pub fn inspect<T>(&self, f: impl FnOnce(&GroupManager) -> T) -> T {
        self.shell.inspect(|m| f(m.manager()))
    }

    /// Stops coordinating: waiting JoinGroups, SyncGroups and commits, and any that arrive
    /// from now on, are answered NOT_COORDINATOR (clients look for the coordinator again).
    pub fn close(&self) {
        self.shell.close();
    }

    /// Stops coordinating the groups of `__consumer_offsets` partition `partition` (another
    /// broker leads it now): they are forgotten, and their waiting requests answered
    /// NOT_COORDINATOR. Returns how many groups went.
    pub fn unload(&self, partition: i32) -> usize {
        self.shell.unload(partition, |m, _| m.unload(partition))
    }

    /// Fires the coordinator's timers (sessions, rebalances, offset expiry) as they come due
    /// until `shutdown` completes, then closes the coordinator so that nothing waits on it
    /// any more.
    pub async fn run_timers(&self, shutdown: impl Future<Output = ()>) {
        self.shell.run_timers(shutdown).await;
        self.close();
    }
}

/// A commit's answer: its codes, or NOT_COORDINATOR for each partition if the coordinator
/// stopped first.
async fn commit_answer(
    answer: impl Future<Output = Result<GroupAnswer, ErrorCode>>,
    count: usize,
) -> Vec<ErrorCode> {
    match answer.await {
        Ok(GroupAnswer::Commit(codes)) => codes,
        _ => vec![ErrorCode::NOT_COORDINATOR; count],
    }
}

/// [`GroupCoordinator::run_timers`].
pub async fn run_timers(coordinator: &GroupCoordinator, shutdown: impl Future<Output = ()>) {
    coordinator.run_timers(shutdown).await;
}

/// The group coordinator loads and unloads with the leadership of the `__consumer_offsets`
/// partitions ([`crate::coordinator::InternalTopic::lead`]).
impl PartitionOwner for GroupCoordinator {
    type Entry = LogEntry;

    fn decode(&self, partition: i32, batch: &RecordBatch, out: &mut Vec<LogEntry>) {
        decode_batch(partition, batch, out);
    }

    fn begin_load(&self, partition: i32) {
        self.shell.call(|m, _| m.manager.begin_load(partition));
    }

    fn load(&self, partition: i32, _epoch: i32, entries: Vec<LogEntry>) {
        let image = self.topics_now();
        self.shell.call(|m, now| {
            m.manager.replay(entries, now);
            m.manager.consumer.on_loaded(Some(partition), &image, now);
            m.manager.finish_load(partition);
        });
    }

    fn unload(&self, partition: i32) -> usize {
        GroupCoordinator::unload(self, partition)
    }
}
