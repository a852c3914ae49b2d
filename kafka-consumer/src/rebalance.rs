//! The consumer's group side: `subscribe`, `subscribe_pattern`, `unsubscribe`, and the steps
//! of a rebalance that run on the application's task, inside `poll` (commit and revoke
//! before the member rejoins, take the assignment after it synced, tell the listener).

use std::collections::BTreeSet;
use std::sync::Arc;

use tokio::time::Instant;

use crate::consumer::Consumer;
use crate::error::ConsumerError;
use crate::group::machine::Action;
use crate::group::{
    AppStep, ConsumerGroupMetadata, GroupShared, NoopListener, RebalanceListener, Subscription,
};
use crate::types::TopicPartition;

/// Counts a running poll for `max.poll.interval.ms` (the timer stops while polls run).
pub(crate) struct PollGuard<'a>(Option<&'a GroupShared>);

impl Drop for PollGuard<'_> {
    fn drop(&mut self) {
        if let Some(g) = self.0 {
            // The coordinator task sees the later poll deadline when it next wakes.
            g.lock().poll_ended(Instant::now().into_std());
        }
    }
}

/// What a step does to the consumer's state once its listener call is over, also when the
/// poll running it is dropped midway (the group must not wait for a step nobody finishes).
enum Finish {
    Revoke(BTreeSet<TopicPartition>),
    Assign {
        generation: i32,
        partitions: BTreeSet<TopicPartition>,
        revoked_any: bool,
        applied: bool,
    },
}

struct StepGuard<'a> {
    consumer: &'a Consumer,
    finish: Option<Finish>,
}

impl StepGuard<'_> {
    /// Puts the assignment in place (before `on_partitions_assigned`).
    fn apply(&mut self) {
        if let Some(Finish::Assign {
            partitions,
            applied,
            ..
        }) = &mut self.finish
        {
            if !*applied {
                *applied = true;
                self.consumer.take_assignment(partitions);
            }
        }
    }

    fn done(mut self) {
        self.complete();
    }

    fn complete(&mut self) {
        let Some(finish) = self.finish.take() else {
            return;
        };
        let Some(g) = self.consumer.shared.group.as_ref() else {
            return;
        };
        match finish {
            Finish::Revoke(partitions) => {
                {
                    let mut st = self.consumer.shared.lock();
                    let keep: Vec<TopicPartition> = st
                        .subs
                        .assigned()
                        .filter(|tp| !partitions.contains(*tp))
                        .cloned()
                        .collect();
                    st.assign(keep);
                }
                g.lock().partitions_revoked(&partitions);
            }
            Finish::Assign {
                generation,
                partitions,
                revoked_any,
                applied,
            } => {
                if !applied {
                    self.consumer.take_assignment(&partitions);
                }
                g.lock()
                    .assignment_applied(generation, &partitions, revoked_any);
            }
        }
        self.consumer.wake();
        g.wake.notify_one();
    }
}

impl Drop for StepGuard<'_> {
    fn drop(&mut self) {
        self.complete();
    }
}

impl Consumer {
    fn group_shared(&self, what: &'static str) -> Result<&GroupShared, ConsumerError> {
        self.shared
            .group
            .as_ref()
            .ok_or(ConsumerError::NoGroupId(what))
    }

    /// Fails when a subscription is active (`assign` and `subscribe` are exclusive).
    pub(crate) fn not_subscribed(&self, what: &str) -> Result<(), ConsumerError> {
        match &self.shared.group {
            Some(g) if g.lock().is_subscribed() => Err(ConsumerError::Misuse(format!(
                "{what} is not allowed while subscribed: call unsubscribe first"
            ))),
            _ => Ok(()),
        }
    }

    /// Joins the group (`group.id`) with these topics: the group's assignor shares their
    /// partitions among its members, and rebalances when members come and go. Replaces an
    /// earlier subscription (a change rejoins). Not allowed while partitions are assigned
    /// with [`Consumer::assign`].
    pub fn subscribe<I, S>(&self, topics: I) -> Result<(), ConsumerError>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.subscribe_with_listener(topics, Arc::new(NoopListener))
    }

    /// [`Consumer::subscribe`], telling `listener` about partitions revoked and assigned.
    pub fn subscribe_with_listener<I, S>(
        &self,
        topics: I,
        listener: Arc<dyn RebalanceListener>,
    ) -> Result<(), ConsumerError>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let topics: BTreeSet<String> = topics.into_iter().map(Into::into).collect();
        if topics.iter().any(|t| t.trim().is_empty()) {
            return Err(ConsumerError::InvalidConfig(
                "cannot subscribe to an empty topic name".into(),
            ));
        }
        if topics.is_empty() {
            return Err(ConsumerError::Misuse(
                "subscribe needs at least one topic (unsubscribe to stop)".into(),
            ));
        }
        self.cluster.add_interest(topics.iter().cloned());
        self.start_subscription(Subscription::Topics(topics), listener)
    }

    /// Joins the group with every topic whose whole name matches `pattern` (a `regex`
    /// crate expression; internal topics left out). New topics are found by metadata
    /// refreshes every `metadata.max.age.ms`.
    pub fn subscribe_pattern(&self, pattern: &str) -> Result<(), ConsumerError> {
        self.subscribe_pattern_with_listener(pattern, Arc::new(NoopListener))
    }

    /// [`Consumer::subscribe_pattern`] with a listener.
    pub fn subscribe_pattern_with_listener(
        &self,
        pattern: &str,
        listener: Arc<dyn RebalanceListener>,
    ) -> Result<(), ConsumerError> {
        let re = regex::Regex::new(&format!("^(?:{pattern})$")).map_err(|e| {
            ConsumerError::InvalidConfig(format!("invalid topic pattern {pattern:?}: {e}"))
        })?;
        self.start_subscription(Subscription::Pattern(re), listener)
    }

    fn start_subscription(
        &self,
        sub: Subscription,
        listener: Arc<dyn RebalanceListener>,
    ) -> Result<(), ConsumerError> {
        let g = self.group_shared("subscribe")?;
        let manual = self.shared.lock().subs.assigned().next().is_some();
        if manual && !g.lock().is_subscribed() {
            return Err(ConsumerError::Misuse(
                "subscribe is not allowed while partitions are assigned: unassign first".into(),
            ));
        }
        g.set_listener(listener);
        let snapshot = self.cluster.metadata();
        g.lock()
            .subscribe(sub, Some(&snapshot), Instant::now().into_std());
        g.wake.notify_one();
        Ok(())
    }

    /// The topics subscribed to (a pattern's current matches).
    pub fn subscription(&self) -> BTreeSet<String> {
        match &self.shared.group {
            Some(g) => g.lock().topics().clone(),
            None => BTreeSet::new(),
        }
    }

    /// Leaves the group: commits (with auto-commit), tells the listener the partitions are
    /// revoked, sends LeaveGroup (dynamic members) and drops the subscription.
    pub async fn unsubscribe(&self) -> Result<(), ConsumerError> {
        let g = self.group_shared("unsubscribe")?;
        let deadline = Instant::now() + self.shared.config.default_api_timeout;
        self.leave_group(deadline, "the consumer unsubscribed", true)
            .await;
        g.lock().unsubscribe();
        self.shared.lock().assign([]);
        self.wake();
        g.wake.notify_one();
        Ok(())
    }

    /// Asks the group for a rebalance (Java's `enforceRebalance`); the member rejoins at
    /// the next poll.
    pub fn enforce_rebalance(&self, reason: &str) -> Result<(), ConsumerError> {
        let g = self.group_shared("enforce_rebalance")?;
        g.lock().request_rejoin(reason);
        g.wake.notify_one();
        Ok(())
    }

    /// Who this consumer is in its group (`None` without `group.id`).
    pub fn group_metadata(&self) -> Option<ConsumerGroupMetadata> {
        let g = self.shared.group.as_ref()?;
        let who = g.lock().identity();
        Some(ConsumerGroupMetadata {
            group_id: g.lock().settings().group_id.clone(),
            generation_id: who.generation,
            member_id: who.member_id,
            group_instance_id: who.group_instance_id,
        })
    }

    pub(crate) fn poll_guard(&self) -> PollGuard<'_> {
        let g = self.shared.group.as_ref();
        if let Some(g) = g {
            if g.lock().poll_started(Instant::now().into_std()) {
                g.wake.notify_one();
            }
        }
        PollGuard(g)
    }

    /// Whether a step waits for a poll (and no poll runs the steps now).
    pub(crate) fn group_step_pending(&self) -> bool {
        self.shared.group.as_ref().is_some_and(|g| {
            !g.steps_running() && {
                let m = g.lock();
                m.app_step().is_some()
            }
        })
    }

    /// Runs the group's pending steps, then reports a group error if there is one.
    pub(crate) async fn run_group_steps(&self) -> Result<(), ConsumerError> {
        let Some(g) = self.shared.group.as_ref() else {
            return Ok(());
        };
        // A poll inside a listener (or a second task polling) leaves the steps to the one
        // running them.
        let Some(_claim) = g.claim_steps() else {
            return Ok(());
        };
        loop {
            let step = g.lock().app_step();
            match step {
                None => break,
                Some(AppStep::Revoke { partitions, lost }) => {
                    self.revoke_step(g, partitions, lost).await;
                }
                Some(AppStep::Assign {
                    generation,
                    partitions,
                }) => self.assign_step(g, generation, partitions).await,
            }
        }
        match g.lock().take_error() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// With auto-commit, commits the positions of partitions about to be revoked (bounded
    /// by `default.api.timeout.ms` and `max.poll.interval.ms`).
    async fn commit_revoked(&self, partitions: &BTreeSet<TopicPartition>) {
        if !self.shared.config.auto_commit() {
            return;
        }
        let offsets: std::collections::BTreeMap<_, _> = self
            .consumed_offsets()
            .into_iter()
            .filter(|(tp, _)| partitions.contains(tp))
            .collect();
        if offsets.is_empty() {
            return;
        }
        let limit = self
            .shared
            .config
            .default_api_timeout
            .min(self.shared.config.max_poll_interval);
        if let Err(e) = self.commit_until(offsets, Instant::now() + limit).await {
            tracing::warn!(error = %e, "committing revoked partitions failed");
        }
    }

    async fn revoke_step(&self, g: &GroupShared, partitions: BTreeSet<TopicPartition>, lost: bool) {
        let guard = StepGuard {
            consumer: self,
            finish: Some(Finish::Revoke(partitions.clone())),
        };
        if !lost {
            self.commit_revoked(&partitions).await;
        }
        let listener = g.listener();
        if lost {
            tracing::info!(partitions = ?partitions, "partitions lost");
            listener.on_partitions_lost(self, &partitions).await;
        } else {
            tracing::debug!(partitions = ?partitions, "partitions revoked");
            listener.on_partitions_revoked(self, &partitions).await;
        }
        guard.done();
    }

    async fn assign_step(
        &self,
        g: &GroupShared,
        generation: i32,
        partitions: BTreeSet<TopicPartition>,
    ) {
        let owned = g.lock().owned().clone();
        let revoked: BTreeSet<TopicPartition> = owned.difference(&partitions).cloned().collect();
        let added: BTreeSet<TopicPartition> = partitions.difference(&owned).cloned().collect();
        let mut guard = StepGuard {
            consumer: self,
            finish: Some(Finish::Assign {
                generation,
                partitions: partitions.clone(),
                revoked_any: !revoked.is_empty(),
                applied: false,
            }),
        };
        let listener = g.listener();
        if !revoked.is_empty() {
            self.commit_revoked(&revoked).await;
            tracing::debug!(partitions = ?revoked, "partitions revoked");
            listener.on_partitions_revoked(self, &revoked).await;
        }
        guard.apply();
        tracing::debug!(generation, assigned = ?partitions, added = ?added, "assignment taken");
        listener.on_partitions_assigned(self, &added).await;
        guard.done();
    }

    /// Makes `partitions` the assignment of the fetch state.
    fn take_assignment(&self, partitions: &BTreeSet<TopicPartition>) {
        self.cluster
            .add_interest(partitions.iter().map(|tp| tp.topic.to_string()));
        let mut st = self.shared.lock();
        st.assign(partitions.iter().cloned());
        st.counters.rebalances += 1;
    }

    /// Tells the listener every partition is going (lost if the generation is gone), drops
    /// them, and sends LeaveGroup for a dynamic member, all by `deadline`.
    pub(crate) async fn leave_group(&self, deadline: Instant, reason: &str, commit: bool) {
        let Some(g) = self.shared.group.as_ref() else {
            return;
        };
        let (owned, lost) = {
            let m = g.lock();
            (m.owned().clone(), m.identity().generation < 0)
        };
        if !owned.is_empty() {
            if commit && !lost {
                let _ = tokio::time::timeout_at(deadline, self.commit_revoked(&owned)).await;
            }
            // A close from inside a listener does not call it again.
            if let Some(_claim) = g.claim_steps() {
                let listener = g.listener();
                let call = async {
                    if lost {
                        listener.on_partitions_lost(self, &owned).await;
                    } else {
                        listener.on_partitions_revoked(self, &owned).await;
                    }
                };
                if tokio::time::timeout_at(deadline, call).await.is_err() {
                    tracing::warn!("the rebalance listener did not finish before the deadline");
                }
            }
            self.shared.lock().assign([]);
            g.lock().partitions_revoked(&owned);
        }
        let action = g.lock().leave(reason);
        if let Some(Action::Leave {
            node,
            params,
            reason,
        }) = action
        {
            let left = deadline.saturating_duration_since(Instant::now());
            let limit = left.min(self.shared.config.request_timeout);
            if let Err(e) =
                crate::group::coordinator::leave(&self.cluster, node, &params, &reason, limit).await
            {
                tracing::debug!(error = %e, "LeaveGroup failed");
            }
        }
    }
}
