//! The machine's side of answers: FindCoordinator, JoinGroup, SyncGroup, Heartbeat, commit
//! errors and metadata.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use kafka_net::MetadataSnapshot;
use kafka_protocol::error_code::ErrorCode;
use regex::Regex;

use super::{Generation, GroupMachine, Phase, Subscription, backoff};
use crate::assignor::{ConsumerAssignment, RebalanceProtocol};
use crate::error::ConsumerError;
use crate::group::leader::LeaderTask;
use crate::group::wire::{JoinResult, PROTOCOL_TYPE, SyncResult};
use crate::offsets::CommitIdentity;
use crate::types::TopicPartition;

impl GroupMachine {
    pub fn on_coordinator(&mut self, result: Result<i32, ConsumerError>, now: Instant) {
        self.find_in_flight = false;
        match result {
            Ok(node) => {
                tracing::debug!(group = %self.s.group_id, node, "coordinator found");
                self.coordinator = Some(node);
                self.find_failures = 0;
                self.find_retry_at = None;
                self.hb.last_ok = now;
                self.hb.next = now;
            }
            Err(e) => {
                tracing::debug!(group = %self.s.group_id, error = %e, "coordinator lookup failed");
                self.find_failures = self.find_failures.saturating_add(1);
                self.find_retry_at = Some(
                    now + backoff(
                        self.s.retry_backoff,
                        self.s.retry_backoff_max,
                        self.find_failures,
                    ),
                );
                if !crate::offsets::retriable(&e) {
                    self.error = Some(e);
                }
            }
        }
    }

    /// The JoinGroup answer (or why there is none).
    pub fn on_join(&mut self, result: Result<JoinResult, ConsumerError>, now: Instant) {
        if self.phase != Phase::Joining {
            return;
        }
        let j = match result {
            Ok(j) => j,
            Err(e) => {
                tracing::debug!(group = %self.s.group_id, error = %e, "JoinGroup failed");
                if matches!(e, ConsumerError::Misuse(_)) {
                    self.fail(e);
                    return;
                }
                self.coordinator_lost("JoinGroup failed", now);
                self.join_failed(now);
                return;
            }
        };
        match j.error {
            ErrorCode::NONE => self.joined(j, now),
            ErrorCode::MEMBER_ID_REQUIRED => {
                // KIP-394: come back with the id the coordinator gave.
                self.generation.member_id = j.member_id;
                self.phase = Phase::NeedJoin;
            }
            ErrorCode::UNKNOWN_MEMBER_ID | ErrorCode::ILLEGAL_GENERATION => {
                self.reset_generation(name(j.error));
            }
            ErrorCode::FENCED_INSTANCE_ID => self.fenced(),
            ErrorCode::NOT_COORDINATOR | ErrorCode::COORDINATOR_NOT_AVAILABLE => {
                self.coordinator_lost(name(j.error), now);
                self.phase = Phase::NeedJoin;
            }
            ErrorCode::REBALANCE_IN_PROGRESS | ErrorCode::COORDINATOR_LOAD_IN_PROGRESS => {
                self.join_failed(now);
            }
            code => {
                let e = ConsumerError::kafka(code, format!("JoinGroup {}", self.s.group_id));
                tracing::warn!(error = %e, "cannot join the group");
                if !code.is_retriable() {
                    self.error = Some(e);
                }
                self.join_failures = self.join_failures.max(4);
                self.join_failed(now);
            }
        }
    }

    fn joined(&mut self, j: JoinResult, now: Instant) {
        let protocol = j.protocol_name.filter(|p| !p.is_empty());
        let assignor = protocol
            .as_deref()
            .and_then(|p| self.s.assignors.iter().find(|a| a.name() == p).cloned());
        let type_ok = j
            .protocol_type
            .as_deref()
            .is_none_or(|t| t == PROTOCOL_TYPE);
        let Some(assignor) = assignor.filter(|_| type_ok) else {
            self.error = Some(ConsumerError::kafka(
                ErrorCode::INCONSISTENT_GROUP_PROTOCOL,
                format!(
                    "JoinGroup {}: the coordinator chose {:?}/{:?}, not one of ours",
                    self.s.group_id, j.protocol_type, protocol
                ),
            ));
            self.join_failed(now);
            return;
        };
        self.join_failures = 0;
        self.join_retry_at = None;
        self.leader = j.leader == j.member_id;
        tracing::info!(
            group = %self.s.group_id,
            generation = j.generation_id,
            member = %j.member_id,
            leader = self.leader,
            protocol = assignor.name(),
            "joined the group"
        );
        self.generation = Generation {
            id: j.generation_id,
            member_id: j.member_id,
            protocol: Some(assignor.name().to_owned()),
        };
        let leader = self.leader.then(|| LeaderTask {
            assignor,
            cooperative: self.s.protocol == RebalanceProtocol::Cooperative,
            members: j.members,
            skip_assignment: j.skip_assignment,
        });
        self.phase = Phase::Syncing {
            sent: false,
            leader,
        };
        self.join_reason = None;
        self.hb.last_ok = now;
        self.hb.next = now + self.s.heartbeat_interval;
    }

    fn fenced(&mut self) {
        let e = ConsumerError::kafka(
            ErrorCode::FENCED_INSTANCE_ID,
            format!(
                "group {}: another consumer with group.instance.id {:?} took over",
                self.s.group_id,
                self.s.group_instance_id.as_deref().unwrap_or("")
            ),
        );
        self.reset_generation("fenced");
        self.fail(e);
    }

    /// The SyncGroup answer for `generation`; `leader_counts` are the partition counts the
    /// leader assigned from.
    pub fn on_sync(
        &mut self,
        generation: i32,
        result: Result<SyncResult, ConsumerError>,
        leader_counts: Option<BTreeMap<String, i32>>,
        now: Instant,
    ) {
        if !matches!(self.phase, Phase::Syncing { .. }) || self.generation.id != generation {
            return;
        }
        let r = match result {
            Ok(r) => r,
            Err(e) if assignment_error(&e) => {
                // The leader could not compute the assignment.
                tracing::warn!(group = %self.s.group_id, error = %e, "assignment failed");
                self.error = Some(e);
                self.join_failed(now);
                return;
            }
            Err(e) => {
                tracing::debug!(group = %self.s.group_id, error = %e, "SyncGroup failed");
                self.coordinator_lost("SyncGroup failed", now);
                self.phase = Phase::NeedJoin;
                return;
            }
        };
        match r.error {
            ErrorCode::NONE => {}
            ErrorCode::REBALANCE_IN_PROGRESS => {
                self.join_reason = Some("the group rebalanced during SyncGroup".into());
                self.phase = Phase::NeedJoin;
                return;
            }
            ErrorCode::UNKNOWN_MEMBER_ID | ErrorCode::ILLEGAL_GENERATION => {
                self.reset_generation(name(r.error));
                return;
            }
            ErrorCode::FENCED_INSTANCE_ID => {
                self.fenced();
                return;
            }
            ErrorCode::NOT_COORDINATOR | ErrorCode::COORDINATOR_NOT_AVAILABLE => {
                self.coordinator_lost(name(r.error), now);
                self.phase = Phase::NeedJoin;
                return;
            }
            code => {
                let e = ConsumerError::kafka(code, format!("SyncGroup {}", self.s.group_id));
                tracing::warn!(error = %e, "sync failed");
                if !code.is_retriable() {
                    self.error = Some(e);
                }
                self.join_failed(now);
                return;
            }
        }
        if let Some(p) = r.protocol_name.as_deref().filter(|p| !p.is_empty()) {
            if self.generation.protocol.as_deref() != Some(p) {
                self.error = Some(ConsumerError::kafka(
                    ErrorCode::INCONSISTENT_GROUP_PROTOCOL,
                    format!("SyncGroup answered for protocol {p}"),
                ));
                self.join_failed(now);
                return;
            }
        }
        let partitions: BTreeSet<TopicPartition> = if r.assignment.is_empty() {
            BTreeSet::new()
        } else {
            match ConsumerAssignment::decode(&r.assignment) {
                Ok((_, a)) => a.partitions.into_iter().collect(),
                Err(e) => {
                    tracing::warn!(group = %self.s.group_id, error = %e, "unreadable assignment");
                    self.error = Some(e);
                    self.join_failed(now);
                    return;
                }
            }
        };
        tracing::info!(
            group = %self.s.group_id,
            generation,
            partitions = ?partitions,
            "assignment received"
        );
        if self.leader {
            self.leader_counts = leader_counts;
        }
        self.commit_generation = self.generation.clone();
        self.phase = Phase::Assigned {
            generation,
            partitions,
        };
    }

    /// The Heartbeat answer (an error code, or why there is none) for `generation`.
    pub fn on_heartbeat(
        &mut self,
        generation: i32,
        result: Result<ErrorCode, ConsumerError>,
        now: Instant,
    ) {
        self.hb.in_flight = false;
        self.hb.next = now + self.s.heartbeat_interval;
        if generation != self.generation.id || !self.wants_heartbeat() {
            return;
        }
        let code = match result {
            Ok(c) => c,
            Err(e) => {
                tracing::debug!(group = %self.s.group_id, error = %e, "heartbeat failed");
                self.coordinator_lost("heartbeat failed", now);
                return;
            }
        };
        match code {
            ErrorCode::NONE => self.hb.last_ok = now,
            ErrorCode::REBALANCE_IN_PROGRESS => {
                self.hb.last_ok = now;
                self.request_rejoin("the group is rebalancing");
            }
            ErrorCode::UNKNOWN_MEMBER_ID | ErrorCode::ILLEGAL_GENERATION => {
                self.reset_generation(name(code));
            }
            ErrorCode::FENCED_INSTANCE_ID => self.fenced(),
            ErrorCode::NOT_COORDINATOR | ErrorCode::COORDINATOR_NOT_AVAILABLE => {
                self.coordinator_lost(name(code), now);
            }
            code => {
                tracing::debug!(group = %self.s.group_id, %code, "heartbeat error");
                self.hb.next = now + self.s.retry_backoff;
            }
        }
    }

    /// A commit sent as `who` failed with `code`: the group may have moved on.
    pub fn on_commit_error(&mut self, who: &CommitIdentity, code: ErrorCode, now: Instant) {
        if who.generation != self.commit_generation.id || who.generation < 0 {
            return;
        }
        match code {
            ErrorCode::REBALANCE_IN_PROGRESS => {
                self.request_rejoin("a commit found the group rebalancing")
            }
            ErrorCode::UNKNOWN_MEMBER_ID | ErrorCode::ILLEGAL_GENERATION
                if who.generation == self.generation.id =>
            {
                self.reset_generation(name(code));
            }
            ErrorCode::FENCED_INSTANCE_ID => self.fenced(),
            ErrorCode::NOT_COORDINATOR | ErrorCode::COORDINATOR_NOT_AVAILABLE => {
                self.coordinator_lost(name(code), now);
            }
            _ => {}
        }
    }

    /// The pattern refresh finished.
    pub fn on_metadata_refreshed(&mut self, ok: bool, now: Instant) {
        self.metadata_in_flight = false;
        self.metadata_next = Some(
            now + if ok {
                self.s.metadata_max_age
            } else {
                self.s.retry_backoff_max
            },
        );
    }

    /// New metadata: a pattern's matches may change; the leader rejoins when partition
    /// counts of the group's topics change.
    pub fn on_metadata(&mut self, m: &MetadataSnapshot) {
        if m.version == self.metadata_version {
            return;
        }
        self.metadata_version = m.version;
        if let Some(Subscription::Pattern(re)) = &self.subscription {
            let matched = matching(re, m);
            self.set_topics(matched);
        }
        let changed = self.leader_counts.as_ref().is_some_and(|counts| {
            counts.iter().any(|(topic, n)| match m.topic(topic) {
                Some(t) if t.error.is_ok() => {
                    i32::try_from(t.partitions.len()).unwrap_or(i32::MAX) != *n
                }
                Some(t) => t.error == ErrorCode::UNKNOWN_TOPIC_OR_PARTITION && *n >= 0,
                None => false,
            })
        });
        if changed && self.phase == Phase::Stable {
            self.leader_counts = None;
            self.request_rejoin("partition counts of the group's topics changed");
        }
    }
}

/// The topics of `m` that `re` matches (internal topics left out). The consumer anchors
/// the application's pattern, so it matches whole names, as Java's `Matcher.matches`.
pub(super) fn matching(re: &Regex, m: &MetadataSnapshot) -> BTreeSet<String> {
    m.topics
        .values()
        .filter(|t| !t.is_internal && t.error.is_ok())
        .filter(|t| re.is_match(&t.name))
        .map(|t| t.name.clone())
        .collect()
}

/// Whether the leader failed to compute an assignment (rather than to reach anyone).
fn assignment_error(e: &ConsumerError) -> bool {
    matches!(
        e,
        ConsumerError::Malformed { .. }
            | ConsumerError::Encode { .. }
            | ConsumerError::InvalidPartitionCount { .. }
            | ConsumerError::DuplicateMember { .. }
            | ConsumerError::CooperativeViolation { .. }
            | ConsumerError::AssignorBug { .. }
            | ConsumerError::Misuse(_)
    )
}

fn name(code: ErrorCode) -> &'static str {
    code.name().unwrap_or("unknown error code")
}
