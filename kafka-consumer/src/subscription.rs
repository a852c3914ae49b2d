//! What the consumer is assigned and where it stands in each partition: the position
//! (offset of the next record to hand out, with the leader epoch it was read in), how that
//! position is being established (committed offset lookup, reset, KIP-320 validation),
//! pause flags, fetch-ahead bookkeeping and the offsets seen in fetch answers.
//!
//! Pure state: every time-dependent call takes `now`; the background driver turns the
//! lookups asked for here into requests and feeds the answers back. Group membership (next
//! to come) drives the same state through [`SubscriptionState::assign`] with the partitions
//! the group hands out.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use kafka_protocol::Uuid;

use crate::error::ConsumerError;
use crate::types::{OffsetAndMetadata, OffsetReset, TopicPartition};

/// Where a reset goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResetTarget {
    Earliest,
    Latest,
}

impl ResetTarget {
    /// The timestamp ListOffsets uses for it.
    pub fn timestamp(self) -> i64 {
        match self {
            Self::Earliest => -2,
            Self::Latest => -1,
        }
    }

    fn from_policy(p: OffsetReset) -> Option<Self> {
        match p {
            OffsetReset::Earliest => Some(Self::Earliest),
            OffsetReset::Latest => Some(Self::Latest),
            OffsetReset::None => None,
        }
    }
}

/// How far a partition's position is established.
#[derive(Debug, Clone)]
pub enum PositionState {
    /// Waiting for the group's committed offset.
    AwaitingCommitted,
    /// Waiting for a ListOffsets answer.
    AwaitingReset(ResetTarget),
    /// The leader changed (or the position came with an epoch): checking with
    /// OffsetForLeaderEpoch that the log still holds what we read (KIP-320).
    AwaitingValidation,
    /// The position is good; records are fetched.
    Fetching,
    /// The application must seek (no offset and `auto.offset.reset=none`, truncation
    /// without a reset policy, ...). Every poll reports the error.
    Failed(ConsumerError),
}

/// A position: the offset of the next record to hand out, and the leader epoch of the record
/// before it (of the committed offset, or of a seek), used to detect truncation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FetchPosition {
    pub offset: i64,
    pub offset_epoch: Option<i32>,
}

/// The partition's leader as the metadata last said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaderInfo {
    /// -1 when unknown.
    pub node: i32,
    pub epoch: Option<i32>,
    pub topic_id: Uuid,
}

impl Default for LeaderInfo {
    fn default() -> Self {
        Self {
            node: -1,
            epoch: None,
            topic_id: Uuid::ZERO,
        }
    }
}

/// One assigned partition.
#[derive(Debug, Clone)]
pub struct PartitionState {
    pub(crate) state: PositionState,
    pub(crate) position: Option<FetchPosition>,
    pub(crate) paused: bool,
    /// Changes whenever the position is set other than by handing out records (seek, reset,
    /// validation): answers to requests made before are dropped.
    pub(crate) token: u64,
    /// The next offset to fetch: the position, or the end of the data already buffered.
    pub(crate) fetch_offset: Option<i64>,
    pub(crate) fetch_in_flight: bool,
    /// A committed-offset, reset or validation request is out.
    pub(crate) lookup_in_flight: bool,
    /// No fetch or lookup before this (backoff after a failure).
    pub(crate) retry_at: Option<Instant>,
    failures: u32,
    /// Completed fetches of this partition waiting in the buffer.
    pub(crate) buffered: usize,
    pub(crate) high_watermark: Option<i64>,
    pub(crate) last_stable_offset: Option<i64>,
    pub(crate) log_start_offset: Option<i64>,
    /// The leader epoch known when the position was last validated.
    pub(crate) validated_epoch: Option<i32>,
    pub(crate) leader: LeaderInfo,
    /// A replica the leader told us to fetch from (KIP-392), until the given time.
    pub(crate) preferred_replica: Option<(i32, Instant)>,
}

impl PartitionState {
    fn new(state: PositionState, token: u64) -> Self {
        Self {
            state,
            position: None,
            paused: false,
            token,
            fetch_offset: None,
            fetch_in_flight: false,
            lookup_in_flight: false,
            retry_at: None,
            failures: 0,
            buffered: 0,
            high_watermark: None,
            last_stable_offset: None,
            log_start_offset: None,
            validated_epoch: None,
            leader: LeaderInfo::default(),
            preferred_replica: None,
        }
    }

    pub fn position(&self) -> Option<FetchPosition> {
        self.position
    }

    pub fn state(&self) -> &PositionState {
        &self.state
    }

    pub fn is_paused(&self) -> bool {
        self.paused
    }

    /// Whether records of this partition may be fetched and handed out.
    pub fn is_fetching(&self) -> bool {
        matches!(self.state, PositionState::Fetching)
    }

    fn ready(&self, now: Instant) -> bool {
        self.retry_at.is_none_or(|t| now >= t)
    }

    /// The node to fetch from: a preferred replica still valid, else the leader.
    pub(crate) fn fetch_node(&self, now: Instant, known: impl Fn(i32) -> bool) -> Option<i32> {
        if let Some((node, until)) = self.preferred_replica {
            if now < until && known(node) {
                return Some(node);
            }
        }
        (self.leader.node >= 0).then_some(self.leader.node)
    }
}

/// A lookup the driver is to make for one partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lookup {
    pub tp: TopicPartition,
    pub token: u64,
    /// The leader to ask (-1 for coordinator lookups).
    pub node: i32,
    pub leader_epoch: Option<i32>,
    pub kind: LookupKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LookupKind {
    Committed,
    Reset(ResetTarget),
    /// Validate the position's epoch (offset epoch given).
    Validate {
        epoch: i32,
    },
}

/// What a validation found (KIP-320).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ValidationOutcome {
    /// The log holds our position.
    Valid,
    /// The log diverged below our position; the position moved there.
    Truncated { from: i64, to: Option<i64> },
    /// The log diverged and there is no reset policy: the partition failed.
    Failed,
}

/// Assigned partitions and their positions.
#[derive(Debug)]
pub struct SubscriptionState {
    partitions: BTreeMap<TopicPartition, PartitionState>,
    default_reset: OffsetReset,
    has_group: bool,
    next_token: u64,
    retry_backoff: Duration,
    retry_backoff_max: Duration,
}

impl SubscriptionState {
    pub fn new(
        default_reset: OffsetReset,
        has_group: bool,
        retry_backoff: Duration,
        retry_backoff_max: Duration,
    ) -> Self {
        Self {
            partitions: BTreeMap::new(),
            default_reset,
            has_group,
            next_token: 1,
            retry_backoff,
            retry_backoff_max: retry_backoff_max.max(retry_backoff),
        }
    }

    fn token(&mut self) -> u64 {
        self.next_token += 1;
        self.next_token
    }

    /// The state a partition starts in when it has no position.
    fn initial_state(&self, tp: &TopicPartition) -> PositionState {
        if self.has_group {
            return PositionState::AwaitingCommitted;
        }
        self.reset_state(tp)
    }

    fn reset_state(&self, tp: &TopicPartition) -> PositionState {
        match ResetTarget::from_policy(self.default_reset) {
            Some(t) => PositionState::AwaitingReset(t),
            None => PositionState::Failed(ConsumerError::NoOffsetForPartition(tp.clone())),
        }
    }

    /// Replaces the assignment. Partitions kept keep their state; new ones start without a
    /// position. Returns the partitions removed.
    pub fn assign(
        &mut self,
        partitions: impl IntoIterator<Item = TopicPartition>,
    ) -> Vec<TopicPartition> {
        let wanted: std::collections::BTreeSet<TopicPartition> = partitions.into_iter().collect();
        let removed: Vec<TopicPartition> = self
            .partitions
            .keys()
            .filter(|tp| !wanted.contains(*tp))
            .cloned()
            .collect();
        for tp in &removed {
            self.partitions.remove(tp);
        }
        for tp in wanted {
            if !self.partitions.contains_key(&tp) {
                let state = self.initial_state(&tp);
                let token = self.token();
                self.partitions
                    .insert(tp, PartitionState::new(state, token));
            }
        }
        removed
    }

    pub fn assigned(&self) -> impl Iterator<Item = &TopicPartition> {
        self.partitions.keys()
    }

    pub fn is_assigned(&self, tp: &TopicPartition) -> bool {
        self.partitions.contains_key(tp)
    }

    pub fn get(&self, tp: &TopicPartition) -> Option<&PartitionState> {
        self.partitions.get(tp)
    }

    pub(crate) fn get_mut(&mut self, tp: &TopicPartition) -> Option<&mut PartitionState> {
        self.partitions.get_mut(tp)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&TopicPartition, &PartitionState)> {
        self.partitions.iter()
    }

    fn require(&mut self, tp: &TopicPartition) -> Result<&mut PartitionState, ConsumerError> {
        self.partitions
            .get_mut(tp)
            .ok_or_else(|| ConsumerError::NotAssigned(tp.clone()))
    }

    /// Moves the position (the application's seek, or a committed offset). With a leader
    /// epoch the position is validated first (KIP-320). Buffered data of the partition must
    /// be dropped by the caller.
    pub fn seek(
        &mut self,
        tp: &TopicPartition,
        offset: i64,
        offset_epoch: Option<i32>,
    ) -> Result<(), ConsumerError> {
        let token = self.token();
        let p = self.require(tp)?;
        set_position(p, token, offset, offset_epoch);
        Ok(())
    }

    /// Asks for the position to be looked up again (`seek_to_beginning`, `seek_to_end`).
    pub fn request_reset(
        &mut self,
        tp: &TopicPartition,
        target: ResetTarget,
    ) -> Result<(), ConsumerError> {
        let token = self.token();
        let p = self.require(tp)?;
        p.state = PositionState::AwaitingReset(target);
        p.token = token;
        p.fetch_offset = None;
        p.lookup_in_flight = false;
        p.retry_at = None;
        p.failures = 0;
        Ok(())
    }

    pub fn pause(&mut self, tp: &TopicPartition) -> Result<(), ConsumerError> {
        self.require(tp)?.paused = true;
        Ok(())
    }

    pub fn resume(&mut self, tp: &TopicPartition) -> Result<(), ConsumerError> {
        self.require(tp)?.paused = false;
        Ok(())
    }

    /// The first partition that failed (the error every poll reports).
    pub fn failure(&self) -> Option<&ConsumerError> {
        self.partitions.values().find_map(|p| match &p.state {
            PositionState::Failed(e) => Some(e),
            _ => None,
        })
    }

    /// The positions of the partitions that have a valid one (not waiting for validation):
    /// what a commit of "everything handed out so far" commits.
    pub fn consumed(&self) -> BTreeMap<TopicPartition, OffsetAndMetadata> {
        self.partitions
            .iter()
            .filter(|(_, p)| p.is_fetching())
            .filter_map(|(tp, p)| {
                p.position.map(|pos| {
                    (
                        tp.clone(),
                        OffsetAndMetadata::new(pos.offset).with_leader_epoch(pos.offset_epoch),
                    )
                })
            })
            .collect()
    }

    /// Takes in a leader (from the metadata). A new leader or epoch sends a position that
    /// has an epoch to validation (KIP-320). Returns whether buffered data of the partition
    /// must be dropped.
    pub fn update_leader(&mut self, tp: &TopicPartition, leader: LeaderInfo) -> bool {
        let Some(p) = self.partitions.get_mut(tp) else {
            return false;
        };
        let changed = p.leader.node != leader.node || p.leader.epoch != leader.epoch;
        let newer = match (p.leader.epoch, leader.epoch) {
            (Some(old), Some(new)) => new > old,
            (None, Some(_)) => false,
            _ => false,
        };
        if changed && p.leader.node >= 0 && p.leader.node != leader.node {
            p.preferred_replica = None;
        }
        p.leader = leader;
        if !newer {
            return false;
        }
        p.preferred_replica = None;
        let needs = p.position.is_some_and(|pos| pos.offset_epoch.is_some())
            && matches!(p.state, PositionState::Fetching)
            && p.validated_epoch != leader.epoch;
        if needs {
            p.state = PositionState::AwaitingValidation;
            p.fetch_offset = p.position.map(|pos| pos.offset);
            p.lookup_in_flight = false;
            p.retry_at = None;
            return true;
        }
        false
    }

    /// The lookups to make now (committed offsets, resets, validations), marked as sent.
    /// Partitions whose leader is unknown are left for later (see
    /// [`Self::needs_metadata`]).
    pub fn lookups(&mut self, now: Instant, validate: bool) -> Vec<Lookup> {
        let mut out = Vec::new();
        for (tp, p) in &mut self.partitions {
            if p.lookup_in_flight || !p.ready(now) {
                continue;
            }
            let kind = match &p.state {
                PositionState::AwaitingCommitted => LookupKind::Committed,
                PositionState::AwaitingReset(t) => LookupKind::Reset(*t),
                // The leader is not known yet: wait for the metadata.
                PositionState::AwaitingValidation if p.leader.node < 0 => continue,
                PositionState::AwaitingValidation => {
                    match p.position.and_then(|pos| pos.offset_epoch) {
                        Some(epoch) if validate && p.leader.epoch.is_some() => {
                            LookupKind::Validate { epoch }
                        }
                        _ => {
                            // Nothing to validate against (the cluster has no leader
                            // epochs), or the broker cannot: go on.
                            p.state = PositionState::Fetching;
                            p.validated_epoch = p.leader.epoch;
                            continue;
                        }
                    }
                }
                PositionState::Fetching | PositionState::Failed(_) => continue,
            };
            if kind != LookupKind::Committed && p.leader.node < 0 {
                continue;
            }
            p.lookup_in_flight = true;
            out.push(Lookup {
                tp: tp.clone(),
                token: p.token,
                node: if kind == LookupKind::Committed {
                    -1
                } else {
                    p.leader.node
                },
                leader_epoch: p.leader.epoch,
                kind,
            });
        }
        out
    }

    /// Whether some partition waits for a leader the metadata does not name.
    pub fn needs_metadata(&self) -> bool {
        self.partitions.values().any(|p| {
            p.leader.node < 0
                && !matches!(
                    p.state,
                    PositionState::AwaitingCommitted | PositionState::Failed(_)
                )
        })
    }

    /// The earliest backoff deadline still ahead.
    pub fn next_retry(&self, now: Instant) -> Option<Instant> {
        self.partitions
            .values()
            .filter_map(|p| p.retry_at)
            .filter(|t| *t > now)
            .min()
    }

    fn current<'a>(
        partitions: &'a mut BTreeMap<TopicPartition, PartitionState>,
        tp: &TopicPartition,
        token: u64,
    ) -> Option<&'a mut PartitionState> {
        partitions.get_mut(tp).filter(|p| p.token == token)
    }

    /// Backs a partition off after a failed lookup or fetch.
    pub fn back_off(&mut self, tp: &TopicPartition, now: Instant) {
        let (base, max) = (self.retry_backoff, self.retry_backoff_max);
        if let Some(p) = self.partitions.get_mut(tp) {
            p.failures = p.failures.saturating_add(1);
            let exp = base
                .saturating_mul(1 << p.failures.min(16).saturating_sub(1))
                .min(max);
            p.retry_at = Some(now + exp);
        }
    }

    fn succeeded(p: &mut PartitionState) {
        p.failures = 0;
        p.retry_at = None;
    }

    /// The committed-offset lookup answered (`None`: nothing committed).
    pub fn on_committed(
        &mut self,
        tp: &TopicPartition,
        token: u64,
        result: Result<Option<OffsetAndMetadata>, ConsumerError>,
        now: Instant,
    ) {
        let reset = self.reset_state(tp);
        let new_token = self.token();
        let Some(p) = Self::current(&mut self.partitions, tp, token) else {
            return;
        };
        p.lookup_in_flight = false;
        if !matches!(p.state, PositionState::AwaitingCommitted) {
            return;
        }
        match result {
            Ok(Some(om)) if om.offset >= 0 => {
                Self::succeeded(p);
                set_position(p, new_token, om.offset, om.leader_epoch);
            }
            Ok(_) => {
                Self::succeeded(p);
                p.state = reset;
            }
            Err(e) => {
                tracing::debug!(%tp, error = %e, "committed offset lookup failed");
                self.back_off(tp, now);
            }
        }
    }

    /// The reset lookup answered with an offset (and its leader epoch, unused: a reset
    /// position is not validated).
    pub fn on_reset(
        &mut self,
        tp: &TopicPartition,
        token: u64,
        result: Result<i64, ConsumerError>,
        now: Instant,
    ) {
        let Some(p) = Self::current(&mut self.partitions, tp, token) else {
            return;
        };
        p.lookup_in_flight = false;
        if !matches!(p.state, PositionState::AwaitingReset(_)) {
            return;
        }
        match result {
            Ok(offset) if offset >= 0 => {
                Self::succeeded(p);
                p.position = Some(FetchPosition {
                    offset,
                    offset_epoch: None,
                });
                p.fetch_offset = Some(offset);
                p.validated_epoch = p.leader.epoch;
                p.state = PositionState::Fetching;
            }
            Ok(offset) => {
                let e = ConsumerError::BadResponse(format!("ListOffsets gave {offset} for {tp}"));
                tracing::debug!(%tp, error = %e, "offset reset failed");
                self.back_off(tp, now);
            }
            Err(e) => {
                tracing::debug!(%tp, error = %e, "offset reset failed");
                self.back_off(tp, now);
            }
        }
    }

    /// The validation lookup answered with the end offset of our epoch on the leader (and
    /// the epoch it belongs to); `None` when the leader does not know the epoch.
    pub fn on_validated(
        &mut self,
        tp: &TopicPartition,
        token: u64,
        result: Result<Option<(i64, i32)>, ConsumerError>,
        now: Instant,
    ) -> Option<ValidationOutcome> {
        let reset = ResetTarget::from_policy(self.default_reset);
        let p = Self::current(&mut self.partitions, tp, token)?;
        p.lookup_in_flight = false;
        if !matches!(p.state, PositionState::AwaitingValidation) {
            return None;
        }
        let pos = p.position?;
        match result {
            Err(e) => {
                tracing::debug!(%tp, error = %e, "position validation failed");
                self.back_off(tp, now);
                None
            }
            Ok(Some((end, _))) if end >= pos.offset => {
                Self::succeeded(p);
                p.validated_epoch = p.leader.epoch;
                p.state = PositionState::Fetching;
                Some(ValidationOutcome::Valid)
            }
            Ok(found) => {
                Self::succeeded(p);
                let to = found.map(|(end, _)| end);
                tracing::warn!(
                    %tp,
                    position = pos.offset,
                    epoch = ?pos.offset_epoch,
                    end = ?to,
                    "log truncation detected"
                );
                match (reset, found) {
                    (Some(_), Some((end, epoch))) => {
                        p.position = Some(FetchPosition {
                            offset: end,
                            offset_epoch: Some(epoch),
                        });
                        p.fetch_offset = Some(end);
                        p.validated_epoch = p.leader.epoch;
                        p.state = PositionState::Fetching;
                        Some(ValidationOutcome::Truncated {
                            from: pos.offset,
                            to: Some(end),
                        })
                    }
                    (Some(target), None) => {
                        p.state = PositionState::AwaitingReset(target);
                        p.fetch_offset = None;
                        Some(ValidationOutcome::Truncated {
                            from: pos.offset,
                            to: None,
                        })
                    }
                    (None, _) => {
                        p.state = PositionState::Failed(ConsumerError::LogTruncation {
                            tp: tp.clone(),
                            offset: pos.offset,
                            epoch: pos.offset_epoch,
                            end_offset: to,
                        });
                        Some(ValidationOutcome::Failed)
                    }
                }
            }
        }
    }

    /// A fetch at `fetch_offset` found it out of range. Only meaningful at the position:
    /// past it (fetched ahead), the caller drops the fetched-ahead data and fetching
    /// resumes from the position. Returns whether the position was reset or failed.
    pub fn on_out_of_range(&mut self, tp: &TopicPartition, token: u64, fetch_offset: i64) -> bool {
        let reset = self.reset_state(tp);
        let new_token = self.token();
        let Some(p) = Self::current(&mut self.partitions, tp, token) else {
            return false;
        };
        if p.position.map(|pos| pos.offset) != Some(fetch_offset) {
            p.fetch_offset = p.position.map(|pos| pos.offset);
            return false;
        }
        tracing::info!(%tp, offset = fetch_offset, "fetch offset out of range");
        p.state = match reset {
            PositionState::Failed(_) => PositionState::Failed(ConsumerError::OffsetOutOfRange {
                tp: tp.clone(),
                offset: fetch_offset,
            }),
            other => other,
        };
        p.token = new_token;
        p.fetch_offset = None;
        true
    }
}

fn set_position(p: &mut PartitionState, token: u64, offset: i64, offset_epoch: Option<i32>) {
    p.position = Some(FetchPosition {
        offset,
        offset_epoch,
    });
    p.token = token;
    p.fetch_offset = Some(offset);
    p.lookup_in_flight = false;
    p.retry_at = None;
    p.failures = 0;
    p.state = if offset_epoch.is_some() {
        PositionState::AwaitingValidation
    } else {
        p.validated_epoch = p.leader.epoch;
        PositionState::Fetching
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(p: i32) -> TopicPartition {
        TopicPartition::new("t", p)
    }

    fn leader(epoch: i32) -> LeaderInfo {
        LeaderInfo {
            node: 1,
            epoch: Some(epoch),
            topic_id: Uuid::ZERO,
        }
    }

    fn subs(reset: OffsetReset, group: bool) -> SubscriptionState {
        SubscriptionState::new(
            reset,
            group,
            Duration::from_millis(100),
            Duration::from_millis(1000),
        )
    }

    #[test]
    fn new_partitions_look_up_committed_then_reset() {
        let now = Instant::now();
        let mut s = subs(OffsetReset::Earliest, true);
        s.assign([tp(0), tp(1)]);
        s.update_leader(&tp(0), leader(0));
        s.update_leader(&tp(1), leader(0));
        let l = s.lookups(now, true);
        assert_eq!(l.len(), 2);
        assert!(l.iter().all(|l| l.kind == LookupKind::Committed));
        // Nothing more while they are out.
        assert!(s.lookups(now, true).is_empty());
        s.on_committed(
            &tp(0),
            l[0].token,
            Ok(Some(OffsetAndMetadata::new(42))),
            now,
        );
        s.on_committed(&tp(1), l[1].token, Ok(None), now);
        assert_eq!(s.get(&tp(0)).unwrap().position().unwrap().offset, 42);
        assert!(s.get(&tp(0)).unwrap().is_fetching());
        let l = s.lookups(now, true);
        assert_eq!(l.len(), 1);
        assert_eq!(l[0].kind, LookupKind::Reset(ResetTarget::Earliest));
        s.on_reset(&tp(1), l[0].token, Ok(7), now);
        assert_eq!(s.get(&tp(1)).unwrap().position().unwrap().offset, 7);
        assert_eq!(s.consumed().len(), 2);
    }

    #[test]
    fn no_reset_policy_fails_until_seek() {
        let now = Instant::now();
        let mut s = subs(OffsetReset::None, false);
        s.assign([tp(0)]);
        assert!(matches!(
            s.failure(),
            Some(ConsumerError::NoOffsetForPartition(_))
        ));
        assert!(s.lookups(now, true).is_empty());
        s.seek(&tp(0), 5, None).unwrap();
        assert!(s.failure().is_none());
        // Out of range at the position: failed again.
        let token = s.get(&tp(0)).unwrap().token;
        assert!(s.on_out_of_range(&tp(0), token, 5));
        assert!(matches!(
            s.failure(),
            Some(ConsumerError::OffsetOutOfRange { offset: 5, .. })
        ));
    }

    #[test]
    fn out_of_range_past_the_position_refetches_from_the_position() {
        let mut s = subs(OffsetReset::Latest, false);
        s.assign([tp(0)]);
        s.seek(&tp(0), 5, None).unwrap();
        let p = s.get_mut(&tp(0)).unwrap();
        p.fetch_offset = Some(50);
        let token = p.token;
        assert!(!s.on_out_of_range(&tp(0), token, 50));
        let p = s.get(&tp(0)).unwrap();
        assert_eq!(p.fetch_offset, Some(5));
        assert!(p.is_fetching());
        assert!(s.on_out_of_range(&tp(0), token, 5));
        assert!(matches!(
            s.get(&tp(0)).unwrap().state(),
            PositionState::AwaitingReset(ResetTarget::Latest)
        ));
    }

    #[test]
    fn stale_answers_are_dropped() {
        let now = Instant::now();
        let mut s = subs(OffsetReset::Earliest, false);
        s.assign([tp(0)]);
        s.update_leader(&tp(0), leader(0));
        let l = s.lookups(now, true);
        s.seek(&tp(0), 100, None).unwrap();
        s.on_reset(&tp(0), l[0].token, Ok(0), now);
        assert_eq!(s.get(&tp(0)).unwrap().position().unwrap().offset, 100);
    }

    #[test]
    fn failures_back_off_exponentially() {
        let now = Instant::now();
        let mut s = subs(OffsetReset::Earliest, false);
        s.assign([tp(0)]);
        s.update_leader(&tp(0), leader(0));
        let mut at = now;
        for want in [100, 200, 400, 800, 1000, 1000] {
            let l = s.lookups(at, true);
            assert_eq!(l.len(), 1, "at {want}");
            s.on_reset(&tp(0), l[0].token, Err(ConsumerError::Closed), at);
            let retry = s.get(&tp(0)).unwrap().retry_at.unwrap();
            assert_eq!(retry - at, Duration::from_millis(want));
            assert!(s.lookups(at, true).is_empty());
            assert_eq!(s.next_retry(at), Some(retry));
            at = retry;
        }
    }

    #[test]
    fn leader_change_validates_and_detects_truncation() {
        let now = Instant::now();
        let mut s = subs(OffsetReset::Earliest, false);
        s.assign([tp(0)]);
        s.update_leader(&tp(0), leader(3));
        s.seek(&tp(0), 100, None).unwrap();
        // A position without an epoch is not validated.
        assert!(!s.update_leader(&tp(0), leader(4)));
        assert!(s.get(&tp(0)).unwrap().is_fetching());
        // Records read in epoch 4 give the position an epoch.
        s.get_mut(&tp(0)).unwrap().position = Some(FetchPosition {
            offset: 100,
            offset_epoch: Some(4),
        });
        // Same epoch again: nothing to do.
        assert!(!s.update_leader(&tp(0), leader(4)));
        // A new epoch: validation, buffered data dropped.
        assert!(s.update_leader(&tp(0), leader(5)));
        assert!(matches!(
            s.get(&tp(0)).unwrap().state(),
            PositionState::AwaitingValidation
        ));
        assert!(!s.consumed().contains_key(&tp(0)));
        let l = s.lookups(now, true);
        assert_eq!(l.len(), 1);
        assert_eq!(l[0].kind, LookupKind::Validate { epoch: 4 });
        assert_eq!(l[0].leader_epoch, Some(5));
        // Epoch 4 ended at 90 on the new leader: the last 10 records are gone.
        let out = s.on_validated(&tp(0), l[0].token, Ok(Some((90, 4))), now);
        assert_eq!(
            out,
            Some(ValidationOutcome::Truncated {
                from: 100,
                to: Some(90)
            })
        );
        let p = s.get(&tp(0)).unwrap();
        assert_eq!(
            p.position(),
            Some(FetchPosition {
                offset: 90,
                offset_epoch: Some(4)
            })
        );
        assert!(p.is_fetching());
    }

    #[test]
    fn truncation_without_reset_policy_fails() {
        let now = Instant::now();
        let mut s = subs(OffsetReset::None, false);
        s.assign([tp(0)]);
        s.update_leader(&tp(0), leader(1));
        s.seek(&tp(0), 10, Some(1)).unwrap();
        let l = s.lookups(now, true);
        assert_eq!(l[0].kind, LookupKind::Validate { epoch: 1 });
        // End offset above the position: valid.
        assert_eq!(
            s.on_validated(&tp(0), l[0].token, Ok(Some((20, 1))), now),
            Some(ValidationOutcome::Valid)
        );
        s.seek(&tp(0), 30, Some(1)).unwrap();
        let l = s.lookups(now, true);
        assert_eq!(
            s.on_validated(&tp(0), l[0].token, Ok(Some((20, 1))), now),
            Some(ValidationOutcome::Failed)
        );
        assert!(matches!(
            s.failure(),
            Some(ConsumerError::LogTruncation {
                offset: 30,
                end_offset: Some(20),
                ..
            })
        ));
        // Unknown epoch on the leader, with a policy: reset.
        let mut s = subs(OffsetReset::Latest, false);
        s.assign([tp(0)]);
        s.update_leader(&tp(0), leader(1));
        s.seek(&tp(0), 30, Some(0)).unwrap();
        let l = s.lookups(now, true);
        s.on_validated(&tp(0), l[0].token, Ok(None), now);
        assert!(matches!(
            s.get(&tp(0)).unwrap().state(),
            PositionState::AwaitingReset(ResetTarget::Latest)
        ));
    }

    #[test]
    fn validation_is_skipped_when_the_broker_cannot() {
        let now = Instant::now();
        let mut s = subs(OffsetReset::None, false);
        s.assign([tp(0)]);
        s.update_leader(&tp(0), leader(1));
        s.seek(&tp(0), 10, Some(1)).unwrap();
        assert!(s.lookups(now, false).is_empty());
        assert!(s.get(&tp(0)).unwrap().is_fetching());
    }

    #[test]
    fn assign_keeps_existing_partitions() {
        let mut s = subs(OffsetReset::Earliest, false);
        s.assign([tp(0), tp(1)]);
        s.seek(&tp(0), 9, None).unwrap();
        let removed = s.assign([tp(0), tp(2)]);
        assert_eq!(removed, vec![tp(1)]);
        assert_eq!(s.get(&tp(0)).unwrap().position().unwrap().offset, 9);
        assert!(s.get(&tp(2)).unwrap().position().is_none());
        assert!(matches!(
            s.seek(&tp(1), 0, None),
            Err(ConsumerError::NotAssigned(_))
        ));
    }
}
