//! The consumer handle.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use futures::Stream;
use kafka_net::Cluster;
use tokio::sync::{Notify, mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::commit::{self, CommitJob, CommitResult, Reply};
use crate::config::ConsumerConfig;
use crate::driver::{self, Shared};
use crate::error::ConsumerError;
use crate::group::{self, GroupMachine, GroupSettings, GroupShared};
use crate::metrics::ConsumerMetrics;
use crate::offsets;
use crate::state::ConsumerState;
use crate::subscription::{PositionState, ResetTarget};
use crate::types::{ConsumerRecord, OffsetAndMetadata, OffsetAndTimestamp, TopicPartition};

/// A Kafka consumer. Partitions are either assigned by the application with
/// [`Consumer::assign`], or by the consumer group (`group.id`) after
/// [`Consumer::subscribe`] / [`Consumer::subscribe_pattern`]; records come from
/// [`Consumer::poll`] or [`Consumer::stream`], fetched ahead in the background within
/// `fetch.buffer.max.bytes`.
///
/// Every method takes `&self`: a task may commit while another polls. Positions move only
/// when records are handed out, so committing "the current positions" commits exactly what
/// the application has received (at-least-once).
///
/// Group members heartbeat in the background, but take part in a rebalance only inside
/// `poll` (or the next item of `stream`), as the Java client does: partitions are revoked
/// (committed first with auto-commit on, then the [`crate::RebalanceListener`] is told)
/// and new ones assigned on the application's task. A member that does not poll for
/// `max.poll.interval.ms` leaves the group until its next poll.
pub struct Consumer {
    pub(crate) shared: Arc<Shared>,
    pub(crate) cluster: Cluster,
    commits: Option<mpsc::Sender<CommitJob>>,
    driver: JoinHandle<()>,
    committer: Option<JoinHandle<()>>,
    coordinator: Option<JoinHandle<()>>,
    next_auto_commit: std::sync::Mutex<Instant>,
}

impl std::fmt::Debug for Consumer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Consumer")
            .field("client_id", &self.shared.config.client_id)
            .field("group_id", &self.shared.config.group_id)
            .finish_non_exhaustive()
    }
}

impl Drop for Consumer {
    fn drop(&mut self) {
        self.shared.lock().closed = true;
        self.driver.abort();
        if let Some(c) = &self.committer {
            c.abort();
        }
        if let Some(c) = &self.coordinator {
            c.abort();
        }
        self.shared.changed.notify_waiters();
    }
}

impl Consumer {
    /// Checks the settings and bootstraps a cluster client from `bootstrap.servers`.
    pub async fn new(config: ConsumerConfig) -> Result<Self, ConsumerError> {
        config.validate()?;
        let cluster = Cluster::connect(config.cluster_config()).await?;
        Self::with_cluster(config, cluster)
    }

    /// A consumer over an existing cluster client (its settings win for connections).
    pub fn with_cluster(config: ConsumerConfig, cluster: Cluster) -> Result<Self, ConsumerError> {
        config.validate()?;
        let group = match &config.group_id {
            Some(_) => Some(GroupShared::new(GroupMachine::new(
                GroupSettings::from_config(&config)?,
                Instant::now().into_std(),
            ))),
            None => None,
        };
        let shared = Arc::new(Shared {
            state: std::sync::Mutex::new(ConsumerState::new(&config)),
            wake: Notify::new(),
            changed: Notify::new(),
            config,
            group,
        });
        let driver = tokio::spawn(driver::run(shared.clone(), cluster.clone()));
        let coordinator = shared
            .group
            .is_some()
            .then(|| tokio::spawn(group::coordinator::run(shared.clone(), cluster.clone())));
        let (commits, committer) = match shared.config.group_id.clone() {
            Some(group) => {
                let (tx, rx) = mpsc::channel(commit::QUEUE);
                let task = tokio::spawn(commit::run(shared.clone(), cluster.clone(), group, rx));
                (Some(tx), Some(task))
            }
            None => (None, None),
        };
        let first_auto_commit = Instant::now() + shared.config.auto_commit_interval;
        Ok(Self {
            shared,
            cluster,
            commits,
            driver,
            committer,
            coordinator,
            next_auto_commit: std::sync::Mutex::new(first_auto_commit),
        })
    }

    pub fn config(&self) -> &ConsumerConfig {
        &self.shared.config
    }

    /// The cluster client underneath.
    pub fn cluster(&self) -> &Cluster {
        &self.cluster
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, ConsumerState> {
        self.shared.lock()
    }

    pub(crate) fn wake(&self) {
        self.shared.wake.notify_one();
    }

    fn api_deadline(&self) -> Instant {
        Instant::now() + self.shared.config.default_api_timeout
    }

    // -----------------------------------------------------------------------------------
    // Assignment

    /// Reads exactly these partitions (replacing any earlier assignment). Partitions kept
    /// keep their positions; new ones start from the committed offset (with `group.id`) or
    /// per `auto.offset.reset`. With auto-commit on, positions are committed first.
    pub fn assign(
        &self,
        partitions: impl IntoIterator<Item = TopicPartition>,
    ) -> Result<(), ConsumerError> {
        let partitions: BTreeSet<TopicPartition> = partitions.into_iter().collect();
        if let Some(tp) = partitions
            .iter()
            .find(|tp| tp.topic.is_empty() || tp.partition < 0)
        {
            return Err(ConsumerError::InvalidConfig(format!(
                "cannot assign {tp}: empty topic or negative partition"
            )));
        }
        self.not_subscribed("assign")?;
        self.auto_commit_now();
        self.cluster
            .add_interest(partitions.iter().map(|tp| tp.topic.to_string()));
        self.lock().assign(partitions);
        self.wake();
        Ok(())
    }

    /// Drops every partition (of `assign`; a subscription is ended by `unsubscribe`).
    pub fn unassign(&self) -> Result<(), ConsumerError> {
        self.not_subscribed("unassign")?;
        self.auto_commit_now();
        self.lock().assign([]);
        self.wake();
        Ok(())
    }

    /// The partitions assigned.
    pub fn assignment(&self) -> BTreeSet<TopicPartition> {
        self.lock().subs.assigned().cloned().collect()
    }

    /// The partitions of a topic, from the metadata (waits for it up to
    /// `default.api.timeout.ms`).
    pub async fn partitions_for(&self, topic: &str) -> Result<Vec<TopicPartition>, ConsumerError> {
        let info = self.cluster.wait_for_topic(topic).await?;
        let topic: Arc<str> = Arc::from(topic);
        Ok(info
            .partitions
            .iter()
            .map(|p| TopicPartition {
                topic: topic.clone(),
                partition: p.partition,
            })
            .collect())
    }

    // -----------------------------------------------------------------------------------
    // Records

    /// Waits up to `timeout` for records and returns at most `max.poll.records` of them
    /// (none when the time is up). Errors found since the last call come first: a failed
    /// partition (no offset, out of range or truncated with `auto.offset.reset=none`)
    /// fails every poll until the application seeks it.
    pub async fn poll(&self, timeout: Duration) -> Result<Vec<ConsumerRecord>, ConsumerError> {
        let deadline = Instant::now() + timeout;
        self.maybe_auto_commit();
        self.next_batch(self.shared.config.max_poll_records, Some(deadline))
            .await
    }

    /// The records one by one, as a stream that waits as long as it takes. Errors are
    /// items; the stream ends when the consumer is closed. Positions move per record
    /// handed out, so a commit inside the loop covers exactly what was received.
    pub fn stream(&self) -> impl Stream<Item = Result<ConsumerRecord, ConsumerError>> + '_ {
        futures::stream::unfold(self, |c| async move {
            c.maybe_auto_commit();
            match c.next_batch(1, None).await {
                Err(ConsumerError::Closed) => None,
                Err(e) => Some((Err(e), c)),
                Ok(mut v) => v.pop().map(|r| (Ok(r), c)),
            }
        })
    }

    async fn next_batch(
        &self,
        max: usize,
        deadline: Option<Instant>,
    ) -> Result<Vec<ConsumerRecord>, ConsumerError> {
        let _polling = self.poll_guard();
        loop {
            // Group steps (revoke before a rebalance, take an assignment, tell the
            // listener) run here, on the application's task.
            self.run_group_steps().await?;
            let notified = self.shared.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.group_step_pending() {
                continue;
            }
            {
                let mut st = self.lock();
                if st.closed {
                    return Err(ConsumerError::Closed);
                }
                if let Some(e) = st.take_error() {
                    return Err(e);
                }
                let mut out = Vec::new();
                let drained = st.drain(max, &mut out);
                // The driver has something new to do only when space was freed (or, with
                // nothing to hand out, maybe a lookup to make).
                let wake = st.take_space_freed() || out.is_empty();
                drop(st);
                if wake {
                    self.wake();
                }
                drained?;
                if !out.is_empty() {
                    return Ok(out);
                }
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Ok(Vec::new());
            }
            match deadline {
                Some(d) => {
                    tokio::select! {
                        () = &mut notified => {}
                        () = tokio::time::sleep_until(d) => {}
                    }
                }
                None => notified.await,
            }
        }
    }

    // -----------------------------------------------------------------------------------
    // Positions

    /// Moves the position of an assigned partition: the next record handed out is at
    /// `offset`.
    pub fn seek(&self, tp: &TopicPartition, offset: i64) -> Result<(), ConsumerError> {
        if offset < 0 {
            return Err(ConsumerError::InvalidConfig(format!(
                "cannot seek {tp} to negative offset {offset}"
            )));
        }
        self.lock().seek(tp, offset, None)?;
        self.wake();
        Ok(())
    }

    /// Moves the position to a committed-style offset; with a leader epoch, the position
    /// is validated against the leader's log before fetching (KIP-320).
    pub fn seek_to(
        &self,
        tp: &TopicPartition,
        to: &OffsetAndMetadata,
    ) -> Result<(), ConsumerError> {
        if to.offset < 0 {
            return Err(ConsumerError::InvalidConfig(format!(
                "cannot seek {tp} to negative offset {}",
                to.offset
            )));
        }
        self.lock().seek(tp, to.offset, to.leader_epoch)?;
        self.wake();
        Ok(())
    }

    fn reset(
        &self,
        partitions: &[TopicPartition],
        target: ResetTarget,
    ) -> Result<(), ConsumerError> {
        {
            let mut st = self.lock();
            let all: Vec<TopicPartition> = if partitions.is_empty() {
                st.subs.assigned().cloned().collect()
            } else {
                partitions.to_vec()
            };
            for tp in &all {
                st.request_reset(tp, target)?;
            }
        }
        self.wake();
        Ok(())
    }

    /// Moves the positions to the log start (all assigned partitions when `partitions` is
    /// empty). Looked up lazily, on the next poll or `position`.
    pub fn seek_to_beginning(&self, partitions: &[TopicPartition]) -> Result<(), ConsumerError> {
        self.reset(partitions, ResetTarget::Earliest)
    }

    /// Moves the positions to the log end (the last stable offset under read_committed).
    pub fn seek_to_end(&self, partitions: &[TopicPartition]) -> Result<(), ConsumerError> {
        self.reset(partitions, ResetTarget::Latest)
    }

    /// The offset of the next record to be handed out for `tp`, waiting (up to
    /// `default.api.timeout.ms`) for it to be looked up or validated if needed.
    pub async fn position(&self, tp: &TopicPartition) -> Result<i64, ConsumerError> {
        let started = Instant::now();
        let deadline = self.api_deadline();
        loop {
            let notified = self.shared.changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let st = self.lock();
                if st.closed {
                    return Err(ConsumerError::Closed);
                }
                let p = st
                    .subs
                    .get(tp)
                    .ok_or_else(|| ConsumerError::NotAssigned(tp.clone()))?;
                match p.state() {
                    PositionState::Failed(e) => return Err(e.clone()),
                    PositionState::Fetching => {
                        if let Some(pos) = p.position() {
                            return Ok(pos.offset);
                        }
                    }
                    PositionState::AwaitingCommitted
                    | PositionState::AwaitingReset(_)
                    | PositionState::AwaitingValidation => {}
                }
            }
            self.wake();
            tokio::select! {
                () = &mut notified => {}
                () = tokio::time::sleep_until(deadline) => {
                    return Err(ConsumerError::Timeout {
                        what: format!("position of {tp}"),
                        after: started.elapsed(),
                        last: None,
                    });
                }
            }
        }
    }

    /// Stops handing out (and fetching) records of these partitions; buffered data stays.
    pub fn pause(&self, partitions: &[TopicPartition]) -> Result<(), ConsumerError> {
        let mut st = self.lock();
        for tp in partitions {
            st.subs.pause(tp)?;
        }
        Ok(())
    }

    /// Resumes paused partitions.
    pub fn resume(&self, partitions: &[TopicPartition]) -> Result<(), ConsumerError> {
        {
            let mut st = self.lock();
            for tp in partitions {
                st.subs.resume(tp)?;
            }
        }
        self.wake();
        self.shared.changed.notify_waiters();
        Ok(())
    }

    /// The paused partitions.
    pub fn paused(&self) -> BTreeSet<TopicPartition> {
        self.lock()
            .subs
            .iter()
            .filter(|(_, p)| p.is_paused())
            .map(|(tp, _)| tp.clone())
            .collect()
    }

    /// High watermark (last stable offset under read_committed) minus the position, as of
    /// the last fetch answer; `None` before one arrived.
    pub fn current_lag(&self, tp: &TopicPartition) -> Option<i64> {
        self.lock().lag(tp)
    }

    // -----------------------------------------------------------------------------------
    // Offsets of the log

    async fn list(
        &self,
        items: Vec<(TopicPartition, i64)>,
    ) -> Result<BTreeMap<TopicPartition, offsets::ListedOffset>, ConsumerError> {
        if items.is_empty() {
            return Ok(BTreeMap::new());
        }
        offsets::list_offsets(
            &self.cluster,
            &items,
            self.shared.config.isolation_level,
            self.shared.config.retry_backoff,
            self.api_deadline(),
        )
        .await
    }

    /// The log start offset of each partition.
    pub async fn beginning_offsets(
        &self,
        partitions: &[TopicPartition],
    ) -> Result<BTreeMap<TopicPartition, i64>, ConsumerError> {
        let items = partitions.iter().map(|tp| (tp.clone(), -2)).collect();
        Ok(self
            .list(items)
            .await?
            .into_iter()
            .map(|(tp, o)| (tp, o.offset))
            .collect())
    }

    /// The log end offset of each partition (the last stable offset under read_committed).
    pub async fn end_offsets(
        &self,
        partitions: &[TopicPartition],
    ) -> Result<BTreeMap<TopicPartition, i64>, ConsumerError> {
        let items = partitions.iter().map(|tp| (tp.clone(), -1)).collect();
        Ok(self
            .list(items)
            .await?
            .into_iter()
            .map(|(tp, o)| (tp, o.offset))
            .collect())
    }

    /// For each partition, the first offset whose timestamp is at or after the one given
    /// (ms since the epoch); `None` when no record is that recent.
    pub async fn offsets_for_times(
        &self,
        times: &BTreeMap<TopicPartition, i64>,
    ) -> Result<BTreeMap<TopicPartition, Option<OffsetAndTimestamp>>, ConsumerError> {
        if let Some((tp, ts)) = times.iter().find(|(_, ts)| **ts < 0) {
            return Err(ConsumerError::InvalidConfig(format!(
                "negative timestamp {ts} for {tp}"
            )));
        }
        let items = times.iter().map(|(tp, ts)| (tp.clone(), *ts)).collect();
        Ok(self
            .list(items)
            .await?
            .into_iter()
            .map(|(tp, o)| {
                let found = (o.offset >= 0).then(|| OffsetAndTimestamp {
                    offset: o.offset,
                    timestamp: o.timestamp.unwrap_or(-1),
                    leader_epoch: o.leader_epoch,
                });
                (tp, found)
            })
            .collect())
    }

    // -----------------------------------------------------------------------------------
    // Committed offsets

    fn group(&self, what: &'static str) -> Result<&str, ConsumerError> {
        self.shared
            .config
            .group_id
            .as_deref()
            .ok_or(ConsumerError::NoGroupId(what))
    }

    /// The group's committed offsets for these partitions (`None`: nothing committed).
    pub async fn committed(
        &self,
        partitions: &[TopicPartition],
    ) -> Result<BTreeMap<TopicPartition, Option<OffsetAndMetadata>>, ConsumerError> {
        let group = self.group("committed")?;
        if partitions.is_empty() {
            return Ok(BTreeMap::new());
        }
        let stable = self.shared.config.isolation_level == crate::IsolationLevel::ReadCommitted;
        let answer = offsets::retry_until(
            "OffsetFetch",
            self.shared.config.retry_backoff,
            self.api_deadline(),
            || async {
                let got =
                    offsets::fetch_committed_once(&self.cluster, group, partitions, stable).await?;
                // Partition-level retriable errors (UNSTABLE_OFFSET_COMMIT) retry the lot.
                if let Some(Err(e)) = got
                    .values()
                    .find(|r| r.as_ref().is_err_and(offsets::retriable))
                {
                    return Err(e.clone());
                }
                Ok(got)
            },
        )
        .await?;
        let mut out = BTreeMap::new();
        for tp in partitions {
            let r = answer.get(tp).cloned().unwrap_or(Ok(None))?;
            out.insert(tp.clone(), r);
        }
        Ok(out)
    }

    /// The positions of the assigned partitions, as offsets to commit.
    pub fn consumed_offsets(&self) -> BTreeMap<TopicPartition, OffsetAndMetadata> {
        self.lock().subs.consumed()
    }

    /// Commits the positions of every assigned partition (what was handed out), waiting
    /// for the coordinator and retrying retriable failures up to `default.api.timeout.ms`.
    pub async fn commit_sync(&self) -> Result<(), ConsumerError> {
        let offsets = self.consumed_offsets();
        self.commit_offsets_sync(offsets).await
    }

    /// Commits these offsets (each the offset of the next record to read).
    pub async fn commit_offsets_sync(
        &self,
        offsets: BTreeMap<TopicPartition, OffsetAndMetadata>,
    ) -> Result<(), ConsumerError> {
        self.commit_until(offsets, self.api_deadline()).await
    }

    pub(crate) async fn commit_until(
        &self,
        offsets: BTreeMap<TopicPartition, OffsetAndMetadata>,
        deadline: Instant,
    ) -> Result<(), ConsumerError> {
        self.group("commit")?;
        let tx = self.commits.as_ref().ok_or(ConsumerError::Closed)?;
        let (reply, rx) = oneshot::channel();
        let job = CommitJob {
            offsets,
            deadline: Some(deadline),
            reply: Reply::Sync(reply),
        };
        let started = Instant::now();
        let timed_out = || ConsumerError::Timeout {
            what: "OffsetCommit".into(),
            after: started.elapsed(),
            last: None,
        };
        tokio::time::timeout_at(deadline, tx.send(job))
            .await
            .map_err(|_| timed_out())?
            .map_err(|_| ConsumerError::Closed)?;
        // The task answers by the deadline; the margin covers a request it just sent.
        tokio::time::timeout_at(deadline + Duration::from_secs(1), rx)
            .await
            .map_err(|_| timed_out())?
            .map_err(|_| ConsumerError::Closed)?
    }

    /// Commits the positions of every assigned partition without waiting; `callback` gets
    /// the outcome. Commits are sent in the order they were asked for.
    pub fn commit_async(&self, callback: impl FnOnce(CommitResult) + Send + 'static) {
        let offsets = self.consumed_offsets();
        self.commit_offsets_async(offsets, callback);
    }

    /// Commits these offsets without waiting; `callback` gets the outcome.
    pub fn commit_offsets_async(
        &self,
        offsets: BTreeMap<TopicPartition, OffsetAndMetadata>,
        callback: impl FnOnce(CommitResult) + Send + 'static,
    ) {
        if let Err(e) = self.group("commit_async") {
            callback(Err(e));
            return;
        }
        let Some(tx) = &self.commits else {
            callback(Err(ConsumerError::Closed));
            return;
        };
        let job = CommitJob {
            offsets,
            deadline: None,
            reply: Reply::Callback(Box::new(callback)),
        };
        match tx.try_send(job) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(job)) => {
                if let Reply::Callback(cb) = job.reply {
                    cb(Err(ConsumerError::CommitQueueFull(commit::QUEUE)));
                }
            }
            Err(mpsc::error::TrySendError::Closed(job)) => {
                if let Reply::Callback(cb) = job.reply {
                    cb(Err(ConsumerError::Closed));
                }
            }
        }
    }

    /// Auto-commit: when the interval has passed, commits positions that moved.
    fn maybe_auto_commit(&self) {
        if !self.shared.config.auto_commit() {
            return;
        }
        let now = Instant::now();
        {
            let mut next = self
                .next_auto_commit
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if now < *next {
                return;
            }
            *next = now + self.shared.config.auto_commit_interval;
        }
        self.auto_commit_now();
    }

    fn auto_commit_now(&self) {
        if !self.shared.config.auto_commit() {
            return;
        }
        let offsets = self.lock().uncommitted_positions();
        if offsets.is_empty() {
            return;
        }
        if let Some(tx) = &self.commits {
            let job = CommitJob {
                offsets,
                deadline: None,
                reply: Reply::Auto,
            };
            if tx.try_send(job).is_err() {
                tracing::debug!("auto-commit skipped: commit queue full");
            }
        }
    }

    // -----------------------------------------------------------------------------------
    // Metrics and closing

    /// A snapshot of the counters.
    pub fn metrics(&self) -> ConsumerMetrics {
        self.lock().metrics()
    }

    /// Closes the consumer within `timeout`: commits the positions when auto-commit is on;
    /// a group member then tells its listener the partitions are revoked (lost, if its
    /// generation is gone) and leaves the group (LeaveGroup, except for static members,
    /// whose place the coordinator keeps for `session.timeout.ms`); queued commits finish,
    /// then the background tasks stop. Never waits longer than `timeout`, even when the
    /// brokers are gone; a failed final commit is returned (after everything is stopped).
    pub async fn close(mut self, timeout: Duration) -> Result<(), ConsumerError> {
        let deadline = Instant::now() + timeout;
        let mut result = Ok(());
        if self.shared.config.auto_commit() {
            let offsets = self.consumed_offsets();
            if !offsets.is_empty() {
                result = self.commit_until(offsets, deadline).await;
            }
        }
        // Group members tell the listener and leave (dynamic members), within the time.
        self.leave_group(deadline, "the consumer is closing", false)
            .await;
        self.lock().closed = true;
        self.shared.changed.notify_waiters();
        self.wake();
        drop(self.commits.take());
        if let Some(mut task) = self.committer.take() {
            if tokio::time::timeout_at(deadline, &mut task).await.is_err() {
                task.abort();
            }
        }
        self.driver.abort();
        if let Some(c) = self.coordinator.take() {
            c.abort();
        }
        result
    }
}
