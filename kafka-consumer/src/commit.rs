//! Offset commits go through one task, in the order they were asked for (an async commit
//! never overtakes an earlier one), on the group coordinator. Synchronous commits retry
//! retriable failures until their deadline; asynchronous and automatic ones are tried once.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use kafka_net::Cluster;
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
    while let Some(job) = jobs.recv().await {
        let who = shared.lock().identity.clone();
        let result = if job.offsets.is_empty() {
            Ok(())
        } else {
            let deadline = job
                .deadline
                .unwrap_or_else(|| Instant::now() + attempt_limit);
            let once = job.deadline.is_none();
            commit(
                &cluster,
                &group,
                &who,
                &job.offsets,
                backoff,
                deadline,
                once,
            )
            .await
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
