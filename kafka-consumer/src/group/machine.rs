//! The group membership state machine (classic protocol), pure: it takes answers, metadata,
//! the application's progress and `now`, and says what to send next
//! ([`GroupMachine::poll_actions`]), what the application must do before the group can go
//! on ([`GroupMachine::app_step`]) and when to look again ([`GroupMachine::next_deadline`]).
//!
//! A member's life: find the coordinator; (re)join when needed, after the application has
//! given up what it must (eager: everything; cooperative: only partitions of topics no
//! longer subscribed; everything as "lost" when the generation is gone); JoinGroup (with the
//! member id the coordinator asks for first, KIP-394); SyncGroup (the leader's assignment
//! computed by the coordinator task); the application takes the assignment (cooperative:
//! revoking what moved, then rejoining so it can be handed over); heartbeats every
//! `heartbeat.interval.ms` from the join answer on, until the next rebalance.
//!
//! Failures: REBALANCE_IN_PROGRESS rejoins keeping the member id; UNKNOWN_MEMBER_ID and
//! ILLEGAL_GENERATION drop the generation (partitions lost) and rejoin; FENCED_INSTANCE_ID
//! is fatal; NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE, lost connections and a session
//! without a successful heartbeat forget the coordinator and find it again, keeping the
//! generation. No poll for `max.poll.interval.ms` leaves the group (LeaveGroup for dynamic
//! members) until the next poll.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_net::MetadataSnapshot;
use regex::Regex;

mod answers;

use super::leader::LeaderTask;
use super::wire::{JoinParams, MemberParams, SyncParams};
use crate::assignor::{
    self, Assignor, ConsumerAssignment, ConsumerSubscription, RebalanceProtocol,
    SUBSCRIPTION_VERSION,
};
use crate::config::ConsumerConfig;
use crate::error::ConsumerError;
use crate::offsets::CommitIdentity;
use crate::types::TopicPartition;

/// What the machine needs from the configuration.
#[derive(Debug, Clone)]
pub struct GroupSettings {
    pub group_id: String,
    pub group_instance_id: Option<String>,
    pub session_timeout: Duration,
    /// `max.poll.interval.ms`, also the rebalance timeout sent in JoinGroup.
    pub rebalance_timeout: Duration,
    pub heartbeat_interval: Duration,
    pub retry_backoff: Duration,
    pub retry_backoff_max: Duration,
    /// How often a pattern subscription looks for new topics.
    pub metadata_max_age: Duration,
    pub rack: Option<String>,
    pub assignors: Vec<Arc<dyn Assignor>>,
    pub protocol: RebalanceProtocol,
}

impl GroupSettings {
    /// From a validated configuration with a `group.id`.
    pub fn from_config(c: &ConsumerConfig) -> Result<Self, ConsumerError> {
        let group_id = c
            .group_id
            .clone()
            .ok_or(ConsumerError::NoGroupId("group membership"))?;
        let assignors: Vec<Arc<dyn Assignor>> = c
            .partition_assignment_strategy
            .iter()
            .map(|n| {
                assignor::by_name(n).ok_or_else(|| {
                    ConsumerError::InvalidConfig(format!(
                        "partition.assignment.strategy: unknown assignor {n:?}"
                    ))
                })
            })
            .collect::<Result<_, _>>()?;
        let protocol = assignor::common_protocol(&assignors).ok_or_else(|| {
            ConsumerError::InvalidConfig(
                "partition.assignment.strategy: the assignors share no rebalance protocol".into(),
            )
        })?;
        Ok(Self {
            group_id,
            group_instance_id: c.group_instance_id.clone(),
            session_timeout: c.session_timeout,
            rebalance_timeout: c.max_poll_interval,
            heartbeat_interval: c.heartbeat_interval,
            retry_backoff: c.retry_backoff,
            retry_backoff_max: c.retry_backoff_max.max(c.retry_backoff),
            metadata_max_age: c.metadata_max_age,
            rack: Some(c.client_rack.clone()).filter(|r| !r.is_empty()),
            assignors,
            protocol,
        })
    }

    fn ms(d: Duration) -> i32 {
        i32::try_from(d.as_millis()).unwrap_or(i32::MAX)
    }
}

/// What the consumer subscribes to.
#[derive(Debug, Clone)]
pub enum Subscription {
    Topics(BTreeSet<String>),
    /// Every topic the (anchored) pattern matches, internal topics excluded.
    Pattern(Regex),
}

/// A generation of the group as this member knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generation {
    /// -1: none.
    pub id: i32,
    /// Empty: none.
    pub member_id: String,
    /// The chosen assignor.
    pub protocol: Option<String>,
}

impl Generation {
    pub const NONE: Generation = Generation {
        id: -1,
        member_id: String::new(),
        protocol: None,
    };
}

#[derive(Debug, Clone, PartialEq)]
enum Phase {
    /// Not subscribed (or left the group).
    Idle,
    /// Left the group after `max.poll.interval.ms` without a poll; the next poll rejoins.
    WaitingForPoll,
    /// Joins as soon as the coordinator is known and the application gave up what it must.
    NeedJoin,
    /// JoinGroup in flight.
    Joining,
    /// Between the join answer and the sync answer (`sent`: SyncGroup handed out).
    Syncing {
        sent: bool,
        leader: Option<LeaderTask>,
    },
    /// The assignment of `generation` waits for the application.
    Assigned {
        generation: i32,
        partitions: BTreeSet<TopicPartition>,
    },
    Stable,
    /// Fenced: nothing more until close.
    Fatal,
}

impl PartialEq for LeaderTask {
    fn eq(&self, other: &Self) -> bool {
        self.members == other.members && self.skip_assignment == other.skip_assignment
    }
}

/// Something to send.
#[derive(Debug, Clone)]
pub enum Action {
    /// Look the coordinator up (forgetting the cached one).
    FindCoordinator,
    Join {
        node: i32,
        params: JoinParams,
    },
    /// `leader`: compute the assignment first (needs metadata of its topics).
    Sync {
        node: i32,
        params: SyncParams,
        leader: Option<LeaderTask>,
    },
    Heartbeat {
        node: i32,
        params: MemberParams,
    },
    Leave {
        node: i32,
        params: MemberParams,
        reason: String,
    },
    /// Refresh the metadata of every topic (pattern subscriptions).
    RefreshMetadata,
}

/// What the application has to do before the group can go on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AppStep {
    /// Give up `partitions` (commit, tell the listener, drop them). `lost`: the generation
    /// is gone, so no commit and `on_partitions_lost`.
    Revoke {
        partitions: BTreeSet<TopicPartition>,
        lost: bool,
    },
    /// Take the assignment of `generation`: revoke what is owned and not in it (cooperative),
    /// then assign it.
    Assign {
        generation: i32,
        partitions: BTreeSet<TopicPartition>,
    },
}

#[derive(Debug, Clone, Copy)]
struct Heartbeat {
    in_flight: bool,
    next: Instant,
    last_ok: Instant,
}

/// The membership state machine.
#[derive(Debug)]
pub struct GroupMachine {
    s: GroupSettings,
    subscription: Option<Subscription>,
    /// The topics subscribed now (a pattern's matches).
    topics: BTreeSet<String>,
    /// The topics of the last JoinGroup.
    joined_topics: BTreeSet<String>,
    phase: Phase,
    generation: Generation,
    /// What commits are sent as: the generation of the last assignment, until it is lost.
    commit_generation: Generation,
    leader: bool,
    coordinator: Option<i32>,
    find_in_flight: bool,
    find_failures: u32,
    find_retry_at: Option<Instant>,
    join_failures: u32,
    join_retry_at: Option<Instant>,
    /// A rejoin is needed, and why.
    rejoin: Option<String>,
    /// Why the next JoinGroup is sent (KIP-800 reason).
    join_reason: Option<String>,
    /// What the application holds.
    owned: BTreeSet<TopicPartition>,
    /// `owned` belongs to a generation that is gone.
    owned_lost: bool,
    /// The last assignment received and its generation (the sticky assignors' user data).
    last_assignment: Vec<TopicPartition>,
    last_assignment_generation: i32,
    hb: Heartbeat,
    polls_active: u32,
    last_poll: Instant,
    /// The leader's partition counts of the group's topics at assignment (-1: absent).
    leader_counts: Option<BTreeMap<String, i32>>,
    metadata_in_flight: bool,
    metadata_next: Option<Instant>,
    metadata_version: u64,
    /// One-shot error for the next poll.
    error: Option<ConsumerError>,
    fatal: Option<ConsumerError>,
    /// Assignments taken by the application.
    rebalances: u64,
}

fn backoff(base: Duration, max: Duration, failures: u32) -> Duration {
    base.saturating_mul(1 << failures.min(16).saturating_sub(1))
        .min(max)
}

fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    }
}

impl GroupMachine {
    pub fn new(settings: GroupSettings, now: Instant) -> Self {
        Self {
            s: settings,
            subscription: None,
            topics: BTreeSet::new(),
            joined_topics: BTreeSet::new(),
            phase: Phase::Idle,
            generation: Generation::NONE,
            commit_generation: Generation::NONE,
            leader: false,
            coordinator: None,
            find_in_flight: false,
            find_failures: 0,
            find_retry_at: None,
            join_failures: 0,
            join_retry_at: None,
            rejoin: None,
            join_reason: None,
            owned: BTreeSet::new(),
            owned_lost: false,
            last_assignment: Vec::new(),
            last_assignment_generation: -1,
            hb: Heartbeat {
                in_flight: false,
                next: now,
                last_ok: now,
            },
            polls_active: 0,
            last_poll: now,
            leader_counts: None,
            metadata_in_flight: false,
            metadata_next: None,
            metadata_version: 0,
            error: None,
            fatal: None,
            rebalances: 0,
        }
    }

    pub fn settings(&self) -> &GroupSettings {
        &self.s
    }

    // -----------------------------------------------------------------------------------
    // Reads

    pub fn generation(&self) -> &Generation {
        &self.generation
    }

    pub fn is_leader(&self) -> bool {
        self.leader
    }

    pub fn coordinator(&self) -> Option<i32> {
        self.coordinator
    }

    /// The partitions the application holds.
    pub fn owned(&self) -> &BTreeSet<TopicPartition> {
        &self.owned
    }

    /// The topics subscribed now.
    pub fn topics(&self) -> &BTreeSet<String> {
        &self.topics
    }

    pub fn is_subscribed(&self) -> bool {
        self.subscription.is_some()
    }

    pub fn is_pattern(&self) -> bool {
        matches!(self.subscription, Some(Subscription::Pattern(_)))
    }

    /// Whether the member is stable (assignment taken, no rebalance pending).
    pub fn is_stable(&self) -> bool {
        self.phase == Phase::Stable && self.rejoin.is_none()
    }

    /// Assignments the application has taken.
    pub fn rebalances(&self) -> u64 {
        self.rebalances
    }

    /// Who commits: the generation of the last assignment (until it is lost).
    pub fn identity(&self) -> CommitIdentity {
        CommitIdentity {
            generation: self.commit_generation.id,
            member_id: self.commit_generation.member_id.clone(),
            group_instance_id: self.s.group_instance_id.clone(),
        }
    }

    /// The partitions whose offsets this member may commit in its commit generation: those
    /// it holds, less those a received assignment takes away.
    pub fn commit_eligible(&self) -> BTreeSet<TopicPartition> {
        match &self.phase {
            Phase::Assigned { partitions, .. } => {
                self.owned.intersection(partitions).cloned().collect()
            }
            _ => self.owned.clone(),
        }
    }

    /// Whether a rebalance is under way that needs nothing from the application to get to
    /// a new generation (a join or sync in flight, or a join about to be sent).
    pub fn rebalancing_in_background(&self) -> bool {
        match self.phase {
            Phase::Joining | Phase::Syncing { .. } => true,
            Phase::NeedJoin => self.app_step().is_none(),
            Phase::Stable => self.rejoin.is_some(),
            _ => false,
        }
    }

    /// The error for the application: the fatal one (every time), else a one-shot one.
    pub fn take_error(&mut self) -> Option<ConsumerError> {
        self.fatal.clone().or_else(|| self.error.take())
    }

    fn is_member(&self) -> bool {
        self.generation.id >= 0 && !self.generation.member_id.is_empty()
    }

    fn in_group(&self) -> bool {
        !matches!(
            self.phase,
            Phase::Idle | Phase::WaitingForPoll | Phase::Fatal
        )
    }

    // -----------------------------------------------------------------------------------
    // The application

    /// Subscribes (replacing any earlier subscription); a change of topics while in the
    /// group rejoins.
    pub fn subscribe(
        &mut self,
        sub: Subscription,
        snapshot: Option<&MetadataSnapshot>,
        now: Instant,
    ) {
        let pattern = matches!(sub, Subscription::Pattern(_));
        self.subscription = Some(sub);
        let topics = match (&self.subscription, snapshot) {
            (Some(Subscription::Topics(t)), _) => t.clone(),
            (Some(Subscription::Pattern(re)), Some(m)) => answers::matching(re, m),
            _ => BTreeSet::new(),
        };
        self.set_topics(topics);
        if pattern {
            self.metadata_next = Some(now);
        }
        if matches!(self.phase, Phase::Idle) {
            self.phase = Phase::NeedJoin;
            self.last_poll = now;
        }
    }

    /// Drops the subscription (after the application gave everything up and left).
    pub fn unsubscribe(&mut self) {
        self.subscription = None;
        self.topics.clear();
        self.reset_generation("unsubscribed");
        self.owned_lost = false;
        if self.phase != Phase::Fatal {
            self.phase = Phase::Idle;
        }
        self.rejoin = None;
        self.metadata_next = None;
    }

    fn set_topics(&mut self, topics: BTreeSet<String>) {
        if topics == self.topics {
            return;
        }
        self.topics = topics;
        if matches!(self.phase, Phase::Stable) {
            self.request_rejoin("the subscription changed");
        }
    }

    /// Asks for a rebalance (Java's `enforceRebalance`, a cooperative revocation, ...).
    pub fn request_rejoin(&mut self, reason: &str) {
        if !self.in_group() || matches!(self.phase, Phase::NeedJoin | Phase::Joining) {
            return;
        }
        if self.rejoin.is_none() {
            tracing::debug!(group = %self.s.group_id, reason, "rejoin needed");
            self.rejoin = Some(reason.to_owned());
        }
        self.settle();
    }

    /// A poll started: the poll timer stops while it runs. Returns whether the group has
    /// something new to do (a member that left for want of polls rejoins).
    pub fn poll_started(&mut self, now: Instant) -> bool {
        self.polls_active += 1;
        self.last_poll = now;
        if self.phase == Phase::WaitingForPoll && self.subscription.is_some() {
            self.phase = Phase::NeedJoin;
            return true;
        }
        false
    }

    /// A poll ended: `max.poll.interval.ms` counts from now.
    pub fn poll_ended(&mut self, now: Instant) {
        self.polls_active = self.polls_active.saturating_sub(1);
        self.last_poll = now;
    }

    /// What the application must do now, if anything.
    pub fn app_step(&self) -> Option<AppStep> {
        if self.owned_lost && !self.owned.is_empty() {
            return Some(AppStep::Revoke {
                partitions: self.owned.clone(),
                lost: true,
            });
        }
        match &self.phase {
            Phase::Assigned {
                generation,
                partitions,
            } => Some(AppStep::Assign {
                generation: *generation,
                partitions: partitions.clone(),
            }),
            Phase::NeedJoin => {
                let partitions: BTreeSet<TopicPartition> = match self.s.protocol {
                    RebalanceProtocol::Eager => self.owned.clone(),
                    RebalanceProtocol::Cooperative => self
                        .owned
                        .iter()
                        .filter(|tp| !self.topics.contains(&*tp.topic))
                        .cloned()
                        .collect(),
                };
                (!partitions.is_empty()).then_some(AppStep::Revoke {
                    partitions,
                    lost: false,
                })
            }
            _ => None,
        }
    }

    /// The application gave up `partitions`.
    pub fn partitions_revoked(&mut self, partitions: &BTreeSet<TopicPartition>) {
        self.owned.retain(|tp| !partitions.contains(tp));
        if self.owned.is_empty() {
            self.owned_lost = false;
        }
    }

    /// The application took the assignment of `generation`; it holds `partitions` now.
    pub fn assignment_applied(
        &mut self,
        generation: i32,
        partitions: &BTreeSet<TopicPartition>,
        revoked_any: bool,
    ) {
        self.owned = partitions.clone();
        self.last_assignment = partitions.iter().cloned().collect();
        self.last_assignment_generation = generation;
        let current =
            matches!(&self.phase, Phase::Assigned { generation: g, .. } if *g == generation);
        if !current {
            // The generation went away while the application took it.
            if self.generation.id != generation {
                self.owned_lost = !self.owned.is_empty();
            }
            return;
        }
        self.rebalances += 1;
        self.phase = Phase::Stable;
        if self.s.protocol == RebalanceProtocol::Cooperative && revoked_any {
            self.request_rejoin("partitions were revoked: rejoin so they can be reassigned");
        }
        let unsubscribed = partitions
            .iter()
            .any(|tp| !self.topics.contains(&*tp.topic));
        if unsubscribed {
            self.request_rejoin("the assignment holds topics not subscribed");
        }
        if self.joined_topics != self.topics {
            self.request_rejoin("the subscription changed during the rebalance");
        }
        self.settle();
    }

    /// What to send when leaving (close, unsubscribe): `None` for static members (as in
    /// Java: the coordinator keeps them until their session times out) and non-members.
    /// The generation is dropped either way.
    pub fn leave(&mut self, reason: &str) -> Option<Action> {
        let action = self.leave_action(reason);
        self.reset_generation(reason);
        self.owned_lost = false;
        if self.phase != Phase::Fatal {
            self.phase = Phase::Idle;
        }
        action
    }

    fn leave_action(&self, reason: &str) -> Option<Action> {
        let node = self.coordinator?;
        (self.s.group_instance_id.is_none() && !self.generation.member_id.is_empty()).then(|| {
            Action::Leave {
                node,
                params: self.member_params(),
                reason: reason.to_owned(),
            }
        })
    }

    fn member_params(&self) -> MemberParams {
        MemberParams {
            group_id: self.s.group_id.clone(),
            generation_id: self.generation.id,
            member_id: self.generation.member_id.clone(),
            group_instance_id: self.s.group_instance_id.clone(),
        }
    }

    // -----------------------------------------------------------------------------------
    // Driving

    /// Moves a stable member that must rejoin to rejoining.
    fn settle(&mut self) {
        if self.phase == Phase::Stable {
            if let Some(reason) = self.rejoin.take() {
                self.join_reason = Some(reason);
                self.phase = Phase::NeedJoin;
            }
        }
    }

    fn reset_generation(&mut self, reason: &str) {
        if self.generation != Generation::NONE || self.commit_generation != Generation::NONE {
            tracing::info!(
                group = %self.s.group_id,
                generation = self.generation.id,
                member = %self.generation.member_id,
                reason,
                "dropping the group generation"
            );
        }
        self.generation = Generation::NONE;
        self.commit_generation = Generation::NONE;
        self.leader = false;
        self.leader_counts = None;
        self.rejoin = None;
        if !self.owned.is_empty() {
            self.owned_lost = true;
        }
        if matches!(
            self.phase,
            Phase::Joining | Phase::Syncing { .. } | Phase::Assigned { .. } | Phase::Stable
        ) {
            self.phase = Phase::NeedJoin;
        }
        self.join_reason = Some(reason.to_owned());
    }

    fn fail(&mut self, e: ConsumerError) {
        tracing::error!(group = %self.s.group_id, error = %e, "group membership failed for good");
        self.fatal = Some(e);
        self.phase = Phase::Fatal;
    }

    /// Forgets the coordinator (it moved or is unreachable); the generation stays.
    pub fn coordinator_lost(&mut self, reason: &str, now: Instant) {
        if self.coordinator.take().is_some() {
            tracing::info!(group = %self.s.group_id, reason, "coordinator lost, looking it up again");
        }
        if matches!(self.phase, Phase::Joining | Phase::Syncing { .. }) {
            self.phase = Phase::NeedJoin;
        }
        self.hb.in_flight = false;
        self.hb.next = now;
    }

    fn join_failed(&mut self, now: Instant) {
        self.join_failures = self.join_failures.saturating_add(1);
        self.join_retry_at = Some(
            now + backoff(
                self.s.retry_backoff,
                self.s.retry_backoff_max,
                self.join_failures,
            ),
        );
        self.phase = Phase::NeedJoin;
    }

    /// What to send now; each action is marked in flight. Also applies the session and
    /// poll timers.
    pub fn poll_actions(&mut self, now: Instant) -> Vec<Action> {
        let mut out = Vec::new();
        if self.phase == Phase::Fatal {
            return out;
        }
        let joined = matches!(
            self.phase,
            Phase::NeedJoin | Phase::Syncing { .. } | Phase::Assigned { .. } | Phase::Stable
        );
        // No successful heartbeat for a session: the coordinator is probably gone.
        if joined
            && self.is_member()
            && self.coordinator.is_some()
            && now >= self.hb.last_ok + self.s.session_timeout
        {
            self.hb.last_ok = now;
            self.coordinator_lost("no successful heartbeat for session.timeout.ms", now);
        }
        // No poll for max.poll.interval.ms: leave.
        if joined
            && (self.is_member() || !self.owned.is_empty())
            && self.polls_active == 0
            && now >= self.last_poll + self.s.rebalance_timeout
        {
            tracing::warn!(
                group = %self.s.group_id,
                "no poll for max.poll.interval.ms: leaving the group until the next poll"
            );
            if let Some(a) = self.leave_action("consumer poll timeout has expired") {
                out.push(a);
            }
            self.reset_generation("consumer poll timeout has expired");
            self.phase = Phase::WaitingForPoll;
        }
        self.settle();
        let in_group = self.in_group() && self.subscription.is_some();
        if in_group
            && self.coordinator.is_none()
            && !self.find_in_flight
            && self.find_retry_at.is_none_or(|t| now >= t)
        {
            self.find_in_flight = true;
            out.push(Action::FindCoordinator);
        }
        if let Some(node) = self.coordinator.filter(|_| in_group) {
            if self.phase == Phase::NeedJoin
                && self.app_step().is_none()
                && self.join_retry_at.is_none_or(|t| now >= t)
            {
                out.push(Action::Join {
                    node,
                    params: self.join_params(),
                });
                self.joined_topics = self.topics.clone();
                self.phase = Phase::Joining;
            }
            if let Phase::Syncing { sent, leader } = &mut self.phase {
                if !*sent {
                    *sent = true;
                    out.push(Action::Sync {
                        node,
                        params: SyncParams {
                            group_id: self.s.group_id.clone(),
                            generation_id: self.generation.id,
                            member_id: self.generation.member_id.clone(),
                            group_instance_id: self.s.group_instance_id.clone(),
                            protocol_name: self.generation.protocol.clone().unwrap_or_default(),
                        },
                        leader: leader.take(),
                    });
                }
            }
            if self.wants_heartbeat() && !self.hb.in_flight && now >= self.hb.next {
                self.hb.in_flight = true;
                out.push(Action::Heartbeat {
                    node,
                    params: self.member_params(),
                });
            }
        }
        if self.is_pattern()
            && !self.metadata_in_flight
            && self.metadata_next.is_some_and(|t| now >= t)
        {
            self.metadata_in_flight = true;
            out.push(Action::RefreshMetadata);
        }
        out
    }

    fn wants_heartbeat(&self) -> bool {
        self.is_member()
            && matches!(
                self.phase,
                Phase::NeedJoin | Phase::Syncing { .. } | Phase::Assigned { .. } | Phase::Stable
            )
    }

    /// When to call [`Self::poll_actions`] again even if nothing happens.
    pub fn next_deadline(&self, now: Instant) -> Option<Instant> {
        let _ = now;
        if self.phase == Phase::Fatal {
            return None;
        }
        let mut at = None;
        let in_group = self.in_group() && self.subscription.is_some();
        if in_group && self.coordinator.is_none() && !self.find_in_flight {
            at = earliest(at, self.find_retry_at);
        }
        if self.phase == Phase::NeedJoin && self.coordinator.is_some() {
            at = earliest(at, self.join_retry_at);
        }
        if self.coordinator.is_some() && self.wants_heartbeat() {
            if !self.hb.in_flight {
                at = earliest(at, Some(self.hb.next));
            }
            at = earliest(at, Some(self.hb.last_ok + self.s.session_timeout));
        }
        let joined = matches!(
            self.phase,
            Phase::NeedJoin | Phase::Syncing { .. } | Phase::Assigned { .. } | Phase::Stable
        );
        if joined && (self.is_member() || !self.owned.is_empty()) && self.polls_active == 0 {
            at = earliest(at, Some(self.last_poll + self.s.rebalance_timeout));
        }
        if self.is_pattern() && !self.metadata_in_flight {
            at = earliest(at, self.metadata_next);
        }
        at
    }

    fn join_params(&self) -> JoinParams {
        let topics: Vec<String> = self.topics.iter().cloned().collect();
        let owned: Vec<TopicPartition> = self.owned.iter().cloned().collect();
        let protocols = self
            .s
            .assignors
            .iter()
            .filter_map(|a| {
                // The eager sticky assignor carries its last assignment in the user data
                // (the partitions themselves were given up before joining); the
                // cooperative one its generation.
                let user_data = if a.name() == "sticky" {
                    a.subscription_user_data(
                        &topics,
                        &self.last_assignment,
                        self.last_assignment_generation,
                    )
                } else {
                    a.subscription_user_data(&topics, &owned, self.last_assignment_generation)
                };
                let s = ConsumerSubscription {
                    topics: topics.clone(),
                    user_data,
                    owned_partitions: owned.clone(),
                    generation_id: (self.generation.id >= 0).then_some(self.generation.id),
                    rack_id: self.s.rack.clone(),
                };
                match s.encode(SUBSCRIPTION_VERSION) {
                    Ok(b) => Some((a.name().to_owned(), b)),
                    Err(e) => {
                        tracing::warn!(assignor = a.name(), error = %e, "cannot encode the subscription");
                        None
                    }
                }
            })
            .collect();
        JoinParams {
            group_id: self.s.group_id.clone(),
            member_id: self.generation.member_id.clone(),
            group_instance_id: self.s.group_instance_id.clone(),
            session_timeout_ms: GroupSettings::ms(self.s.session_timeout),
            rebalance_timeout_ms: GroupSettings::ms(self.s.rebalance_timeout),
            protocols,
            reason: self.join_reason.clone(),
        }
    }
}

/// Assignment bytes for tests and scripted coordinators.
pub fn assignment_bytes(partitions: &[TopicPartition]) -> Bytes {
    ConsumerAssignment::new(partitions.to_vec())
        .encode(assignor::ASSIGNMENT_VERSION)
        .unwrap_or_default()
}
