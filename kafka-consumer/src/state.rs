//! The consumer's state behind its lock: the subscription, the buffer of fetched data, the
//! fetches and lookups in flight, errors waiting for the application, and the counters.
//!
//! Pure: the driver asks what to send ([`ConsumerState::plan_fetches`],
//! [`ConsumerState::lookups`]), sends it, and hands the answers back with `now`; `poll`
//! drains records with [`ConsumerState::drain`].
//!
//! Where a partition is fetched from: its leader, or the preferred read replica the leader
//! named (KIP-392; the consumer sends `client.rack` as the Fetch's `RackId`) until
//! `metadata.max.age.ms` passes or that replica answers with an error or not at all, when
//! the leader is asked again. A leader that refuses a partition names the new leader
//! (KIP-951): the consumer moves there at once and hands the hint to the driver for the
//! shared metadata cache ([`ConsumerState::take_leader_hints`]).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::time::{Duration, Instant};

use kafka_net::{BrokerInfo, LeaderHint, MetadataSnapshot};
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::FetchResponse;

use crate::config::ConsumerConfig;
use crate::error::ConsumerError;
use crate::fetch::{
    CompletedFetch, FetchPlan, FetchSettings, FetchedPartition, PlannedPartition, ReadOptions,
};
use crate::metrics::{ConsumerMetrics, Counters};
use crate::offsets::{CommitIdentity, ListedOffset};
use crate::subscription::{
    FetchPosition, LeaderInfo, Lookup, ResetTarget, SubscriptionState, ValidationOutcome,
};
use crate::types::{ConsumerRecord, IsolationLevel, OffsetAndMetadata, TopicPartition};

/// Limits and settings the state needs.
#[derive(Debug, Clone)]
pub struct StateSettings {
    pub buffer_cap: usize,
    pub fetch_max_bytes: usize,
    pub max_partition_fetch_bytes: usize,
    pub read: ReadOptions,
    pub fetch: FetchSettings,
    pub retry_backoff: Duration,
    /// How long a preferred read replica is used before asking the leader again.
    pub preferred_replica_ttl: Duration,
}

impl StateSettings {
    pub fn from_config(c: &ConsumerConfig) -> Self {
        let fetch_max = usize::try_from(c.fetch_max_bytes).unwrap_or(1).max(1);
        let part_max = usize::try_from(c.max_partition_fetch_bytes)
            .unwrap_or(1)
            .max(1);
        Self {
            buffer_cap: c.fetch_buffer_max_bytes.max(1),
            fetch_max_bytes: fetch_max,
            max_partition_fetch_bytes: part_max,
            read: ReadOptions {
                isolation: c.isolation_level,
                check_crcs: c.check_crcs,
                // One batch may decompress to this much.
                max_decompressed: fetch_max.max(part_max).max(64 * 1024 * 1024),
            },
            fetch: FetchSettings {
                max_wait_ms: i32::try_from(c.fetch_max_wait.as_millis()).unwrap_or(i32::MAX),
                min_bytes: c.fetch_min_bytes,
                isolation: c.isolation_level,
                rack: c.client_rack.clone(),
            },
            retry_backoff: c.retry_backoff,
            preferred_replica_ttl: c.metadata_max_age,
        }
    }

    /// Fetches smaller than this are not sent while something is buffered or in flight
    /// (they would cost a round trip for little data).
    fn min_request(&self) -> usize {
        (self
            .buffer_cap
            .min(self.fetch_max_bytes)
            .min(self.max_partition_fetch_bytes)
            / 2)
        .max(1)
    }
}

#[derive(Debug, Default, Clone, Copy)]
struct NodeState {
    fetch_in_flight: bool,
    retry_at: Option<Instant>,
}

/// The answer to one lookup.
#[derive(Debug, Clone)]
pub enum LookupResult {
    Committed(Result<Option<OffsetAndMetadata>, ConsumerError>),
    Reset(Result<ListedOffset, ConsumerError>),
    Validated(Result<Option<(i64, i32)>, ConsumerError>),
}

/// Everything behind the consumer's lock.
#[derive(Debug)]
pub struct ConsumerState {
    pub(crate) subs: SubscriptionState,
    settings: StateSettings,
    buffer: VecDeque<CompletedFetch>,
    buffered_bytes: usize,
    reserved_bytes: usize,
    nodes: HashMap<i32, NodeState>,
    /// Rotates the partition order of fetches, so that none is always last.
    rotation: usize,
    /// An error for the next poll (one-shot).
    pending_error: Option<ConsumerError>,
    /// Some partition needs fresher metadata.
    pub(crate) metadata_wanted: bool,
    metadata_version: u64,
    pub(crate) counters: Counters,
    /// Who commits (group membership will set the generation and member id).
    pub(crate) identity: CommitIdentity,
    /// Buffer space was freed since the driver was last told.
    space_freed: bool,
    /// What was last committed, per partition (auto-commit skips unchanged positions).
    pub(crate) last_committed: BTreeMap<TopicPartition, OffsetAndMetadata>,
    pub(crate) closed: bool,
    /// Leader hints taken from Fetch answers, with the answers' endpoints, for the driver to
    /// put into the metadata cache.
    leader_hints: Vec<LeaderHint>,
    hint_endpoints: Vec<BrokerInfo>,
}

impl ConsumerState {
    pub fn new(config: &ConsumerConfig) -> Self {
        Self::with_settings(
            SubscriptionState::new(
                config.auto_offset_reset,
                config.group_id.is_some(),
                config.retry_backoff,
                config.retry_backoff_max,
            ),
            StateSettings::from_config(config),
        )
    }

    pub fn with_settings(subs: SubscriptionState, settings: StateSettings) -> Self {
        Self {
            subs,
            settings,
            buffer: VecDeque::new(),
            buffered_bytes: 0,
            reserved_bytes: 0,
            nodes: HashMap::new(),
            rotation: 0,
            pending_error: None,
            metadata_wanted: false,
            metadata_version: 0,
            counters: Counters::default(),
            identity: CommitIdentity::default(),
            space_freed: false,
            last_committed: BTreeMap::new(),
            closed: false,
            leader_hints: Vec::new(),
            hint_endpoints: Vec::new(),
        }
    }

    /// The leader hints taken since the last call, with the endpoints the answers listed
    /// (for [`kafka_net::Cluster::apply_leader_hints`]).
    pub fn take_leader_hints(&mut self) -> (Vec<LeaderHint>, Vec<BrokerInfo>) {
        let hints = std::mem::take(&mut self.leader_hints);
        let endpoints = std::mem::take(&mut self.hint_endpoints);
        (hints, endpoints)
    }

    pub fn settings(&self) -> &StateSettings {
        &self.settings
    }

    pub fn buffered_bytes(&self) -> usize {
        self.buffered_bytes
    }

    // -----------------------------------------------------------------------------------
    // Application calls

    /// Replaces the assignment; data of removed partitions is dropped.
    pub fn assign(&mut self, partitions: impl IntoIterator<Item = TopicPartition>) {
        for tp in self.subs.assign(partitions) {
            self.drop_buffered(&tp);
            self.last_committed.remove(&tp);
        }
        self.metadata_version = 0; // Look the new partitions' leaders up.
    }

    pub fn seek(
        &mut self,
        tp: &TopicPartition,
        offset: i64,
        epoch: Option<i32>,
    ) -> Result<(), ConsumerError> {
        self.subs.seek(tp, offset, epoch)?;
        self.drop_buffered(tp);
        Ok(())
    }

    pub fn request_reset(
        &mut self,
        tp: &TopicPartition,
        target: ResetTarget,
    ) -> Result<(), ConsumerError> {
        self.subs.request_reset(tp, target)?;
        self.drop_buffered(tp);
        Ok(())
    }

    /// The error the next poll must report: a one-shot error, else a failed partition's.
    pub fn take_error(&mut self) -> Option<ConsumerError> {
        self.pending_error
            .take()
            .or_else(|| self.subs.failure().cloned())
    }

    /// Whether buffer space was freed since the last call (the driver may fetch again).
    pub fn take_space_freed(&mut self) -> bool {
        std::mem::take(&mut self.space_freed)
    }

    /// Drops the buffered data of a partition; fetching resumes from its position.
    fn drop_buffered(&mut self, tp: &TopicPartition) {
        let mut freed = 0;
        self.buffer.retain(|cf| {
            if cf.tp == *tp {
                freed += cf.size;
                false
            } else {
                true
            }
        });
        self.buffered_bytes -= freed.min(self.buffered_bytes);
        self.space_freed |= freed > 0;
        if let Some(p) = self.subs.get_mut(tp) {
            p.buffered = 0;
            p.fetch_offset = p.position.map(|pos| pos.offset);
        }
    }

    fn release(&mut self, cf: &CompletedFetch) {
        self.buffered_bytes -= cf.size.min(self.buffered_bytes);
        self.space_freed = true;
        if let Some(p) = self.subs.get_mut(&cf.tp) {
            p.buffered = p.buffered.saturating_sub(1);
        }
    }

    /// Hands out up to `max` records from the buffer (paused partitions' data stays),
    /// moving positions past what is handed out. An error met after some records were
    /// collected is kept for the next call.
    pub fn drain(
        &mut self,
        max: usize,
        out: &mut Vec<ConsumerRecord>,
    ) -> Result<(), ConsumerError> {
        let start = out.len();
        let mut i = 0;
        let mut failure = None;
        while out.len() - start < max && i < self.buffer.len() {
            let Some(cf) = self.buffer.get(i) else { break };
            let tp = cf.tp.clone();
            let usable = self
                .subs
                .get(&tp)
                .filter(|p| p.token == cf.token && p.is_fetching())
                .and_then(|p| p.position.map(|pos| (pos, p.paused)));
            let Some((pos, paused)) = usable else {
                if let Some(cf) = self.buffer.remove(i) {
                    self.release(&cf);
                }
                continue;
            };
            if paused {
                i += 1;
                continue;
            }
            let Some(cf) = self.buffer.get_mut(i) else {
                break;
            };
            if cf.next_offset > pos.offset {
                // A gap between the position and this data: fetch again from the position.
                self.drop_buffered(&tp);
                continue;
            }
            cf.next_offset = pos.offset;
            let before = out.len();
            let mut err = None;
            while out.len() - start < max {
                match cf.next_record() {
                    Some(Ok(r)) => out.push(r),
                    Some(Err(e)) => {
                        err = Some(e);
                        break;
                    }
                    None => break,
                }
            }
            let (next, epoch, done) = (cf.next_offset, cf.last_epoch, cf.is_done());
            let consumed: u64 = out[before..].iter().map(|r| r.payload_size() as u64).sum();
            self.counters.records_consumed += (out.len() - before) as u64;
            self.counters.bytes_consumed += consumed;
            if let Some(p) = self.subs.get_mut(&tp) {
                p.position = Some(FetchPosition {
                    offset: next,
                    offset_epoch: epoch.or(pos.offset_epoch),
                });
            }
            if let Some(e) = err {
                self.drop_buffered(&tp);
                failure = Some(e);
                break;
            }
            if done {
                if let Some(cf) = self.buffer.remove(i) {
                    self.release(&cf);
                }
            }
        }
        match failure {
            Some(e) if out.len() == start => Err(e),
            Some(e) => {
                self.pending_error = Some(e);
                Ok(())
            }
            None => Ok(()),
        }
    }

    // -----------------------------------------------------------------------------------
    // Driver: metadata

    /// Takes in new metadata (leaders, epochs, topic ids) if it is newer than what was seen.
    pub fn apply_metadata(&mut self, meta: &MetadataSnapshot) {
        if meta.version == self.metadata_version {
            return;
        }
        self.metadata_version = meta.version;
        let tps: Vec<TopicPartition> = self.subs.assigned().cloned().collect();
        for tp in tps {
            let info = meta.topic(&tp.topic).map(|t| {
                let p = t.partition(tp.partition);
                LeaderInfo {
                    node: p.map_or(-1, |p| p.leader),
                    epoch: p.map(|p| p.leader_epoch).filter(|e| *e >= 0),
                    topic_id: t.topic_id,
                }
            });
            // An answer from a broker behind the one whose hint moved the leader: keep the
            // newer leader.
            let older = self.subs.get(&tp).is_some_and(|p| {
                info.is_some_and(|i| {
                    i.topic_id == p.leader.topic_id
                        && matches!((i.epoch, p.leader.epoch), (Some(new), Some(old)) if new < old)
                })
            });
            if older {
                continue;
            }
            if self.subs.update_leader(&tp, info.unwrap_or_default()) {
                self.drop_buffered(&tp);
            }
        }
        self.metadata_wanted = self.subs.needs_metadata();
    }

    // -----------------------------------------------------------------------------------
    // Driver: fetches

    /// The fetches to send now, one per broker, within the buffer cap. Marks them sent.
    pub fn plan_fetches(
        &mut self,
        now: Instant,
        known_node: impl Fn(i32) -> bool,
    ) -> Vec<FetchPlan> {
        if self.closed {
            return Vec::new();
        }
        let s = &self.settings;
        let held = self.buffered_bytes + self.reserved_bytes;
        let mut budget = s.buffer_cap.saturating_sub(held);
        let min_request = s.min_request();
        if budget == 0 || (budget < min_request && held > 0) {
            return Vec::new();
        }
        let mut by_node: BTreeMap<i32, Vec<PlannedPartition>> = BTreeMap::new();
        let candidates: Vec<(TopicPartition, i32, PlannedPartition)> = self
            .subs
            .iter()
            .filter(|(_, p)| {
                p.is_fetching()
                    && !p.paused
                    && !p.fetch_in_flight
                    && p.retry_at.is_none_or(|t| now >= t)
            })
            .filter_map(|(tp, p)| {
                let node = p.fetch_node(now, &known_node)?;
                let offset = p.fetch_offset?;
                Some((
                    tp.clone(),
                    node,
                    PlannedPartition {
                        tp: tp.clone(),
                        token: p.token,
                        topic_id: p.leader.topic_id,
                        fetch_offset: offset,
                        current_leader_epoch: p.leader.epoch,
                        max_bytes: 0,
                    },
                ))
            })
            .collect();
        if candidates.is_empty() {
            return Vec::new();
        }
        let n = candidates.len();
        let shift = self.rotation % n;
        self.rotation = self.rotation.wrapping_add(1);
        for (_, node, pp) in candidates.into_iter().cycle().skip(shift).take(n) {
            let ns = self.nodes.get(&node).copied().unwrap_or_default();
            if ns.fetch_in_flight || ns.retry_at.is_some_and(|t| now < t) {
                continue;
            }
            by_node.entry(node).or_default().push(pp);
        }
        let mut plans = Vec::new();
        // The space left is shared by the brokers to fetch from (no broker takes it all
        // while the others wait), each getting at least a useful amount.
        let share = (budget / by_node.len().max(1)).max(min_request);
        for (node, mut partitions) in by_node {
            let request_max = s.fetch_max_bytes.min(share).min(budget);
            if request_max == 0 || (request_max < min_request && (held > 0 || !plans.is_empty())) {
                break;
            }
            let part_max = s.max_partition_fetch_bytes.min(request_max);
            for pp in &mut partitions {
                pp.max_bytes = i32::try_from(part_max).unwrap_or(i32::MAX);
            }
            budget -= request_max;
            plans.push(FetchPlan {
                node,
                max_bytes: i32::try_from(request_max).unwrap_or(i32::MAX),
                partitions,
            });
        }
        for plan in &plans {
            self.reserved_bytes += usize::try_from(plan.max_bytes).unwrap_or(0);
            self.nodes.entry(plan.node).or_default().fetch_in_flight = true;
            for pp in &plan.partitions {
                if let Some(p) = self.subs.get_mut(&pp.tp) {
                    p.fetch_in_flight = true;
                }
            }
        }
        plans
    }

    /// Takes in the answer to a fetch (`Err`: the request failed as a whole). Returns
    /// whether new data was buffered.
    pub fn on_fetch(
        &mut self,
        plan: &FetchPlan,
        result: Result<(FetchResponse, i16), ConsumerError>,
        latency: Duration,
        now: Instant,
    ) -> bool {
        self.reserved_bytes -= usize::try_from(plan.max_bytes)
            .unwrap_or(0)
            .min(self.reserved_bytes);
        let node = self.nodes.entry(plan.node).or_default();
        node.fetch_in_flight = false;
        for pp in &plan.partitions {
            if let Some(p) = self.subs.get_mut(&pp.tp) {
                p.fetch_in_flight = false;
            }
        }
        let mut endpoints = Vec::new();
        let matched = result.and_then(|(mut resp, version)| {
            let throttle = resp.throttle_time_ms;
            endpoints = std::mem::take(&mut resp.node_endpoints);
            plan.match_response(resp, version).map(|m| (m, throttle))
        });
        let (answers, throttle) = match matched {
            Ok(m) => m,
            Err(e) => {
                self.counters.fetch_answered(latency, true);
                tracing::debug!(node = plan.node, error = %e, "fetch failed");
                if let ConsumerError::Net(n) = &e {
                    if kafka_net::cluster::stale_metadata(n) {
                        self.metadata_wanted = true;
                    }
                } else if e.error_code().is_some() {
                    self.metadata_wanted = true;
                }
                self.nodes.entry(plan.node).or_default().retry_at =
                    Some(now + self.settings.retry_backoff);
                for pp in &plan.partitions {
                    // A preferred replica that fails is left for the leader (Kafka clears it).
                    if let Some(p) = self.subs.get_mut(&pp.tp) {
                        if p.leader.node != plan.node {
                            p.preferred_replica = None;
                        }
                    }
                    self.subs.back_off(&pp.tp, now);
                }
                return false;
            }
        };
        self.counters.fetch_answered(latency, false);
        if throttle > 0 {
            let wait = Duration::from_millis(u64::try_from(throttle).unwrap_or(0));
            self.nodes.entry(plan.node).or_default().retry_at = Some(now + wait);
        }
        let mut buffered = false;
        let hints_before = self.leader_hints.len();
        for (pp, data) in answers {
            let Some(data) = data else { continue };
            buffered |= self.on_partition(plan.node, pp, data, now);
        }
        if self.leader_hints.len() > hints_before {
            self.hint_endpoints
                .extend(endpoints.into_iter().map(|e| BrokerInfo {
                    node_id: e.node_id,
                    host: e.host.to_string(),
                    port: e.port,
                    rack: e.rack.as_ref().map(ToString::to_string),
                }));
        }
        buffered
    }

    fn on_partition(
        &mut self,
        node: i32,
        pp: PlannedPartition,
        data: kafka_protocol::messages::fetch_response::PartitionData,
        now: Instant,
    ) -> bool {
        let ttl = self.settings.preferred_replica_ttl;
        let read = self.settings.read;
        let Some(p) = self.subs.get_mut(&pp.tp) else {
            return false;
        };
        if p.token != pp.token || p.fetch_offset != Some(pp.fetch_offset) || !p.is_fetching() {
            return false; // Stale: the position moved since.
        }
        if data.high_watermark >= 0 {
            p.high_watermark = Some(data.high_watermark);
        }
        if data.last_stable_offset >= 0 {
            p.last_stable_offset = Some(data.last_stable_offset);
        }
        if data.log_start_offset >= 0 {
            p.log_start_offset = Some(data.log_start_offset);
        }
        if data.preferred_read_replica >= 0 && data.preferred_read_replica != node {
            tracing::debug!(tp = %pp.tp, leader = node, replica = data.preferred_read_replica,
                "fetching from the preferred read replica the leader named");
            p.preferred_replica = Some((data.preferred_read_replica, now + ttl));
        }
        let from_leader = node == p.leader.node;
        let code = ErrorCode(data.error_code);
        match code {
            ErrorCode::NONE => {
                let Some(records) = data.records.filter(|r| !r.is_empty()) else {
                    return false;
                };
                let aborted = data
                    .aborted_transactions
                    .unwrap_or_default()
                    .iter()
                    .map(|a| (a.producer_id, a.first_offset))
                    .collect();
                let cf = CompletedFetch::new(
                    FetchedPartition {
                        tp: pp.tp.clone(),
                        token: pp.token,
                        fetch_offset: pp.fetch_offset,
                        records,
                        aborted,
                        last_stable_offset: Some(data.last_stable_offset),
                    },
                    read,
                    usize::try_from(pp.max_bytes).unwrap_or(0),
                );
                p.fetch_offset = cf.end_offset;
                p.buffered += 1;
                self.counters.bytes_fetched += cf.size as u64;
                *self.counters.bytes_fetched_by_node.entry(node).or_default() += cf.size as u64;
                self.buffered_bytes += cf.size;
                self.counters.buffered_bytes_max =
                    self.counters.buffered_bytes_max.max(self.buffered_bytes);
                self.buffer.push_back(cf);
                true
            }
            ErrorCode::OFFSET_OUT_OF_RANGE if !from_leader => {
                // A follower may lag: go back to the leader.
                p.preferred_replica = None;
                false
            }
            ErrorCode::OFFSET_OUT_OF_RANGE => {
                let at_position = p.position.map(|pos| pos.offset) == Some(pp.fetch_offset);
                if !at_position {
                    self.drop_buffered(&pp.tp);
                    return false;
                }
                self.subs.on_out_of_range(&pp.tp, pp.token, pp.fetch_offset);
                false
            }
            ErrorCode::NOT_LEADER_OR_FOLLOWER | ErrorCode::FENCED_LEADER_EPOCH
                if newer_leader(&p.leader, &data.current_leader) =>
            {
                // KIP-951: the answer names a newer leader; go there now.
                let hint = LeaderHint {
                    topic: pp.tp.topic.to_string(),
                    partition: pp.tp.partition,
                    leader_id: data.current_leader.leader_id,
                    leader_epoch: data.current_leader.leader_epoch,
                };
                tracing::debug!(tp = %pp.tp, %code, leader = hint.leader_id,
                    epoch = hint.leader_epoch, "the answer named the new leader");
                let leader = LeaderInfo {
                    node: hint.leader_id,
                    epoch: Some(hint.leader_epoch),
                    topic_id: p.leader.topic_id,
                };
                p.preferred_replica = None;
                self.leader_hints.push(hint);
                self.counters.leader_hints_taken += 1;
                if self.subs.update_leader(&pp.tp, leader) {
                    self.drop_buffered(&pp.tp);
                }
                false
            }
            ErrorCode::NOT_LEADER_OR_FOLLOWER
            | ErrorCode::REPLICA_NOT_AVAILABLE
            | ErrorCode::KAFKA_STORAGE_ERROR
            | ErrorCode::FENCED_LEADER_EPOCH
            | ErrorCode::UNKNOWN_LEADER_EPOCH
            | ErrorCode::OFFSET_NOT_AVAILABLE
            | ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
            | ErrorCode::UNKNOWN_TOPIC_ID
            | ErrorCode::INCONSISTENT_TOPIC_ID
            | ErrorCode::LEADER_NOT_AVAILABLE => {
                tracing::debug!(tp = %pp.tp, %code, "fetch needs fresher metadata");
                p.preferred_replica = None;
                self.metadata_wanted = true;
                self.subs.back_off(&pp.tp, now);
                false
            }
            code => {
                let e =
                    ConsumerError::kafka(code, format!("Fetch {} at {}", pp.tp, pp.fetch_offset));
                if !code.is_retriable() {
                    self.pending_error = Some(e);
                } else {
                    tracing::debug!(error = %e, "fetch failed");
                }
                self.subs.back_off(&pp.tp, now);
                false
            }
        }
    }

    // -----------------------------------------------------------------------------------
    // Driver: lookups

    /// The position lookups to make now.
    pub fn lookups(&mut self, now: Instant) -> Vec<Lookup> {
        if self.closed {
            return Vec::new();
        }
        let out = self.subs.lookups(now, true);
        if self.subs.needs_metadata() {
            self.metadata_wanted = true;
        }
        out
    }

    /// Takes in the answer to one lookup.
    pub fn on_lookup(&mut self, lookup: &Lookup, result: LookupResult, now: Instant) {
        let tp = &lookup.tp;
        let stale = |e: &ConsumerError| match e {
            ConsumerError::Net(n) => kafka_net::cluster::stale_metadata(n),
            ConsumerError::Kafka { code, .. } => matches!(
                *code,
                ErrorCode::NOT_LEADER_OR_FOLLOWER
                    | ErrorCode::FENCED_LEADER_EPOCH
                    | ErrorCode::UNKNOWN_LEADER_EPOCH
                    | ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
                    | ErrorCode::LEADER_NOT_AVAILABLE
            ),
            _ => false,
        };
        match result {
            LookupResult::Committed(r) => {
                self.subs.on_committed(tp, lookup.token, r, now);
            }
            LookupResult::Reset(r) => {
                if let Err(e) = &r {
                    self.metadata_wanted |= stale(e);
                }
                let ok = r.is_ok();
                self.subs
                    .on_reset(tp, lookup.token, r.map(|o| o.offset), now);
                if ok && self.subs.get(tp).is_some_and(|p| p.is_fetching()) {
                    self.counters.offset_resets += 1;
                }
            }
            LookupResult::Validated(r) => {
                let r = match r {
                    // The broker cannot validate: take the position as it is.
                    Err(ConsumerError::Net(kafka_net::NetError::UnsupportedApi { .. })) => {
                        Ok(Some((i64::MAX, lookup.leader_epoch.unwrap_or(0))))
                    }
                    other => other,
                };
                if let Err(e) = &r {
                    self.metadata_wanted |= stale(e);
                }
                match self.subs.on_validated(tp, lookup.token, r, now) {
                    Some(ValidationOutcome::Truncated { .. } | ValidationOutcome::Failed) => {
                        self.counters.log_truncations += 1;
                    }
                    Some(ValidationOutcome::Valid) | None => {}
                }
            }
        }
        if self.subs.get(tp).is_some_and(|p| !p.is_fetching()) {
            self.drop_buffered(tp);
        } else if let Some(p) = self.subs.get_mut(tp) {
            if p.buffered == 0 && !p.fetch_in_flight {
                p.fetch_offset = p.position.map(|pos| pos.offset);
            }
        }
    }

    /// When the driver must look again even if nothing happens.
    pub fn next_deadline(&self, now: Instant) -> Option<Instant> {
        let nodes = self
            .nodes
            .values()
            .filter_map(|n| n.retry_at)
            .filter(|t| *t > now)
            .min();
        match (self.subs.next_retry(now), nodes) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    // -----------------------------------------------------------------------------------
    // Reads

    /// High watermark (last stable offset under read_committed) minus position.
    pub fn lag(&self, tp: &TopicPartition) -> Option<i64> {
        let p = self.subs.get(tp)?;
        let end = match self.settings.read.isolation {
            IsolationLevel::ReadCommitted => p.last_stable_offset.or(p.high_watermark),
            IsolationLevel::ReadUncommitted => p.high_watermark,
        }?;
        Some((end - p.position?.offset).max(0))
    }

    pub fn metrics(&self) -> ConsumerMetrics {
        let c = &self.counters;
        ConsumerMetrics {
            records_consumed: c.records_consumed,
            bytes_consumed: c.bytes_consumed,
            bytes_fetched: c.bytes_fetched,
            bytes_fetched_by_node: c.bytes_fetched_by_node.clone(),
            leader_hints_taken: c.leader_hints_taken,
            fetch_requests: c.fetch_requests,
            fetch_errors: c.fetch_errors,
            fetch_latency_avg: c.latency_avg(),
            fetch_latency_max: c.fetch_latency_max,
            buffered_bytes: self.buffered_bytes,
            buffered_bytes_max: c.buffered_bytes_max,
            reserved_bytes: self.reserved_bytes,
            buffer_capacity: self.settings.buffer_cap,
            lag: self
                .subs
                .assigned()
                .filter_map(|tp| self.lag(tp).map(|l| (tp.clone(), l)))
                .collect(),
            commits: c.commits,
            commit_failures: c.commit_failures,
            offset_resets: c.offset_resets,
            log_truncations: c.log_truncations,
            rebalances: c.rebalances,
        }
    }

    /// Offsets to auto-commit: positions that moved since the last commit.
    pub fn uncommitted_positions(&self) -> BTreeMap<TopicPartition, OffsetAndMetadata> {
        self.subs
            .consumed()
            .into_iter()
            .filter(|(tp, om)| {
                self.last_committed
                    .get(tp)
                    .is_none_or(|c| c.offset != om.offset)
            })
            .collect()
    }
}

/// Whether a Fetch answer's `CurrentLeader` names a leader newer than `known` (an epoch
/// after the known one, or any epoch when none is known).
fn newer_leader(
    known: &LeaderInfo,
    hint: &kafka_protocol::messages::fetch_response::LeaderIdAndEpoch,
) -> bool {
    hint.leader_id >= 0
        && hint.leader_epoch >= 0
        && known.epoch.is_none_or(|e| hint.leader_epoch > e)
}

#[cfg(test)]
mod tests;
