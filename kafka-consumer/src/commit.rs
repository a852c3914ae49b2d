//! Offset commits go through one task, in the order they were asked for (an async commit
//! never overtakes an earlier one), on the group coordinator. Synchronous commits retry
//! retriable failures until their deadline; asynchronous and automatic ones are tried once.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kafka_net::Cluster;
use kafka_protocol::error_code::ErrorCode;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use crate::driver::Shared;
use crate::error::ConsumerError;
use crate::offsets;
use crate::types::{OffsetAndMetadata, TopicPartition};

/// Offsets committed, or why not.
pub type CommitResult = Result<BTreeMap<TopicPartition, OffsetAndMetadata>, ConsumerError>;

/// What `commit_async` calls when the commit is done (on the consumer's commit task).
pub type CommitCallback = Box<dyn FnOnce(CommitResult) + Send + 'static>;

/// How many commits may wait for the coordinator.
pub(crate) const QUEUE: usize = 256;

pub(crate) enum Reply {
    Sync(oneshot::Sender<Result<(), ConsumerError>>),
    Callback(CommitCallback),
    /// Auto-commit: failures are logged (the next interval commits again).
    Auto,
}

pub(crate) struct CommitJob {
    pub(crate) offsets: BTreeMap<TopicPartition, OffsetAndMetadata>,
    /// Retry until then (sync); `None`: one attempt.
    pub(crate) deadline: Option<Instant>,
    pub(crate) reply: Reply,
}

/// Runs until every sender is gone and the queue is empty.
pub(crate) async fn run(
    shared: Arc<Shared>,
    cluster: Cluster,
    group: String,
    mut jobs: mpsc::Receiver<CommitJob>,
) {
    let backoff = shared.config.retry_backoff;
    let attempt_limit = shared.config.default_api_timeout;
    while let Some(mut job) = jobs.recv().await {
        let who = identity(&shared);
        let result = if job.offsets.is_empty() {
            Ok(())
        } else {
            let deadline = job
                .deadline
                .unwrap_or_else(|| Instant::now() + attempt_limit);
            let once = job.deadline.is_none();
            let first = commit(
                &cluster,
                &group,
                &who,
                &job.offsets,
                backoff,
                deadline,
                once,
            )
            .await;
            match first {
                Err(e) if !once && overtaken_by_rebalance(&e) && shared.group.is_some() => {
                    after_rebalance(
                        &shared,
                        &cluster,
                        &group,
                        &who,
                        &mut job.offsets,
                        deadline,
                        e,
                    )
                    .await
                }
                Err(e) => {
                    if let (Some(g), Some(code)) = (&shared.group, e.error_code()) {
                        g.lock()
                            .on_commit_error(&who, code, Instant::now().into_std());
                        g.wake.notify_one();
                    }
                    Err(e)
                }
                ok => ok,
            }
        };
        {
            let mut st = shared.lock();
            match &result {
                Ok(()) => {
                    st.counters.commits += 1;
                    for (tp, om) in &job.offsets {
                        if st.subs.is_assigned(tp) {
                            st.last_committed.insert(tp.clone(), om.clone());
                        }
                    }
                }
                Err(_) => st.counters.commit_failures += 1,
            }
        }
        match job.reply {
            Reply::Sync(tx) => {
                let _ = tx.send(result);
            }
            Reply::Callback(cb) => cb(result.map(|()| job.offsets)),
            Reply::Auto => {
                if let Err(e) = result {
                    tracing::warn!(group, error = %e, "auto-commit failed");
                }
            }
        }
    }
}

/// Who commits now: the group's generation (when in a group), else a simple consumer.
fn identity(shared: &Shared) -> offsets::CommitIdentity {
    match &shared.group {
        Some(g) => g.lock().identity(),
        None => shared.lock().identity.clone(),
    }
}

/// The group moved to a new generation while the commit was on its way.
fn overtaken_by_rebalance(e: &ConsumerError) -> bool {
    matches!(
        e.error_code(),
        Some(ErrorCode::ILLEGAL_GENERATION | ErrorCode::REBALANCE_IN_PROGRESS)
    )
}

/// A synchronous commit sent as `who` lost a race with a rebalance. If this member comes
/// out of it (before `deadline`) still holding some of the partitions, their offsets are
/// committed again with the new generation (the cooperative protocol keeps partitions
/// across rebalances); offsets of partitions it no longer holds are dropped. Otherwise the
/// first failure stands (and the group machine hears of it).
async fn after_rebalance(
    shared: &Shared,
    cluster: &Cluster,
    group: &str,
    who: &offsets::CommitIdentity,
    offsets_: &mut BTreeMap<TopicPartition, OffsetAndMetadata>,
    deadline: Instant,
    first: ConsumerError,
) -> Result<(), ConsumerError> {
    let Some(g) = &shared.group else {
        return Err(first);
    };
    let backoff = shared.config.retry_backoff;
    if let Some(code) = first.error_code() {
        g.lock()
            .on_commit_error(who, code, Instant::now().into_std());
        g.wake.notify_one();
    }
    loop {
        let (now_who, held, moving) = {
            let m = g.lock();
            (
                m.identity(),
                m.commit_eligible(),
                m.rebalancing_in_background(),
            )
        };
        if now_who.generation > who.generation {
            offsets_.retain(|tp, _| held.contains(tp));
            if offsets_.is_empty() {
                return Ok(());
            }
            tracing::debug!(
                generation = now_who.generation,
                "committing again after a rebalance"
            );
            return commit(cluster, group, &now_who, offsets_, backoff, deadline, false).await;
        }
        if !moving || now_who.generation < 0 || Instant::now() + backoff >= deadline {
            return Err(first);
        }
        tokio::time::sleep(backoff).await;
    }
}

async fn commit(
    cluster: &Cluster,
    group: &str,
    who: &offsets::CommitIdentity,
    offsets_: &BTreeMap<TopicPartition, OffsetAndMetadata>,
    backoff: Duration,
    deadline: Instant,
    once: bool,
) -> Result<(), ConsumerError> {
    if once {
        return tokio::time::timeout_at(
            deadline,
            offsets::commit_once(cluster, group, who, offsets_),
        )
        .await
        .unwrap_or_else(|_| {
            Err(ConsumerError::Timeout {
                what: "OffsetCommit".into(),
                after: Duration::ZERO,
                last: None,
            })
        });
    }
    offsets::retry_until("OffsetCommit", backoff, deadline, || {
        offsets::commit_once(cluster, group, who, offsets_)
    })
    .await
}
