//! The group coordinator as its shell drives it (a [`Machine`]): the [`GroupManager`], the
//! offset commits waiting for their records' acknowledgement, and the offset-expiry
//! schedule. Pure like the manager: time comes in as `now`, records go out as appends.
//!
//! Kafka's pending offset commits: an OffsetCommit's records go out as one append of the
//! group's `__consumer_offsets` partition; until it is acknowledged the commit's new values
//! are kept aside and OffsetFetch shows the values from before. Acknowledged, they are
//! applied (unless a later commit of the same partition was applied first, or a committed
//! transaction's offset whose record came later stands) and the commit is answered; failed,
//! the commit is answered with Kafka's mapping of the error and the offsets stay what they
//! were. A TxnOffsetCommit's offsets are pending for their producer at once (with
//! `require_stable` OffsetFetch sees that), its batch goes out as the producer's
//! transactional append, and a failure undoes them. Everything else the manager records
//! (group metadata, tombstones) is appended with nobody waiting: a failure there is logged
//! and the state stays in memory. An acknowledgement that arrives after the group's
//! partition was unloaded answers its commit but changes nothing here (the new coordinator
//! replays the records).
//!
//! A ConsumerGroupHeartbeat (KIP-848) is answered once its records are acknowledged, as an
//! OffsetCommit. The consumer groups change as the request is worked out (their records are
//! replayed on them at once), so the group as it was before is kept with the pending write:
//! if the write fails, the group is put back as it was (timers armed anew) and the heartbeat
//! answered with Kafka's mapping of the error; heartbeats of the same group written after it
//! (built on the failed state) are answered with that error too and do not put anything back
//! themselves. The consumer groups' other records (session expiry, topic changes) go out with
//! nobody waiting, like classic group metadata.

use std::collections::{BTreeMap, HashMap, VecDeque};

use kafka_protocol::error_code::ErrorCode;

use super::consumer::{ConsumerGroup, HeartbeatRequest, HeartbeatResponse, TopicsImage};
use super::kip848::Refusal;
use super::manager::GroupManager;
use super::offset_store::OffsetAndMetadata;
use super::records::OffsetsRecord;
use super::types::{
    CommitRequest, JoinResponse, Output, RequestId, SyncResponse, TxnCommitRequest,
};
use crate::coordinator::{
    Append, Effect, EffectOf, KeyValue, Machine, Producer, Written, answer_for_append_error,
};

/// What a waiting group request is answered with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GroupAnswer {
    Join(JoinResponse),
    Sync(SyncResponse),
    /// An OffsetCommit's or TxnOffsetCommit's errors, one per partition.
    Commit(Vec<ErrorCode>),
    /// A ConsumerGroupHeartbeat's answer.
    ConsumerHeartbeat(Result<HeartbeatResponse, Refusal>),
}

/// What an append of the group coordinator was for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupWrite {
    /// Group metadata and tombstones: nobody waits.
    Detached,
    /// The records of pending OffsetCommit `n`.
    Commit(u64),
    /// The batch of pending TxnOffsetCommit `n`.
    TxnCommit(u64),
    /// The records of pending ConsumerGroupHeartbeat `n`.
    Heartbeat(u64),
}

/// One committed offset's key: group, topic, partition.
type OffsetKey = (String, String, i32);

#[derive(Debug)]
struct PendingCommit {
    request: RequestId,
    group: String,
    codes: Vec<ErrorCode>,
    /// The value each accepted partition gets once the records are acknowledged.
    values: Vec<(OffsetKey, Option<OffsetAndMetadata>)>,
    /// The group's partition was unloaded meanwhile: answer, change nothing.
    orphaned: bool,
}

#[derive(Debug)]
struct PendingHeartbeat {
    request: RequestId,
    group: String,
    answer: HeartbeatResponse,
    /// The consumer group before this heartbeat (`None`: it did not exist).
    before: Option<ConsumerGroup>,
    /// An earlier write of the group failed: answer this, put nothing back.
    failed: Option<ErrorCode>,
    orphaned: bool,
}

#[derive(Debug)]
struct PendingTxnCommit {
    request: RequestId,
    group: String,
    producer_id: i64,
    codes: Vec<ErrorCode>,
    /// What to put back if the batch is not written: (key, its pending log order, before).
    undo: Vec<(OffsetKey, u64, Option<OffsetAndMetadata>)>,
    /// Appends not reported yet.
    waiting: usize,
    /// The first failure's answer.
    failed: Option<ErrorCode>,
    orphaned: bool,
}

/// The group manager with its pending commits and timers, for the shell.
#[derive(Debug)]
pub struct GroupMachine {
    pub(super) manager: GroupManager,
    answers: VecDeque<(RequestId, GroupAnswer)>,
    appends: VecDeque<Append<GroupWrite>>,
    next_write: u64,
    commits: BTreeMap<u64, PendingCommit>,
    txn_commits: BTreeMap<u64, PendingTxnCommit>,
    heartbeats: BTreeMap<u64, PendingHeartbeat>,
    /// The pending commit whose value each offset has (a later one never goes back to an
    /// earlier one acknowledged after it).
    applied_commit: HashMap<OffsetKey, u64>,
    /// When expired offsets are next looked for (`offsets.retention.check.interval.ms`).
    next_expiry: i64,
}

impl GroupMachine {
    /// `manager`, its offset expiry first checked one interval after `now`.
    pub fn new(manager: GroupManager, now: i64) -> Self {
        let next_expiry = now.saturating_add(manager.config().offsets_retention_check_interval_ms);
        Self {
            manager,
            answers: VecDeque::new(),
            appends: VecDeque::new(),
            next_write: 0,
            commits: BTreeMap::new(),
            txn_commits: BTreeMap::new(),
            heartbeats: BTreeMap::new(),
            applied_commit: HashMap::new(),
            next_expiry,
        }
    }

    pub fn manager(&self) -> &GroupManager {
        &self.manager
    }

    fn next_write(&mut self) -> u64 {
        self.next_write = self.next_write.wrapping_add(1);
        self.next_write
    }

    fn partition_for(&self, group: &str) -> i32 {
        self.manager.config().partition_for(group)
    }

    /// OffsetCommit; answered with [`GroupAnswer::Commit`] once its records are acknowledged
    /// (at once if there is nothing to write).
    pub fn commit(&mut self, request: RequestId, req: &CommitRequest, now: i64) {
        self.commit_at(request, req, i16::MAX, now);
    }

    /// [`GroupMachine::commit`] of OffsetCommit `api_version`.
    pub fn commit_at(
        &mut self,
        request: RequestId,
        req: &CommitRequest,
        api_version: i16,
        now: i64,
    ) {
        let keys: Vec<OffsetKey> = req
            .partitions
            .iter()
            .map(|p| (req.group_id.clone(), p.topic.clone(), p.partition))
            .collect();
        let before: Vec<Option<OffsetAndMetadata>> =
            keys.iter().map(|k| self.committed(k)).collect();
        let codes = self.manager.commit_offsets_at(req, api_version, now);
        let records = self.manager.take_records();
        if records.is_empty() {
            self.answers
                .push_back((request, GroupAnswer::Commit(codes)));
            return;
        }
        // Kept aside until acknowledged; the old values show meanwhile.
        let mut values = Vec::new();
        for ((k, old), code) in keys.into_iter().zip(before).zip(&codes) {
            if code.is_ok() {
                values.push((k.clone(), self.committed(&k)));
                self.restore(&k, old);
            }
        }
        let n = self.next_write();
        self.commits.insert(
            n,
            PendingCommit {
                request,
                group: req.group_id.clone(),
                codes,
                values,
                orphaned: false,
            },
        );
        let partition = self.partition_for(&req.group_id);
        self.append(GroupWrite::Commit(n), partition, &records, None, now);
    }

    /// ConsumerGroupHeartbeat; answered with [`GroupAnswer::ConsumerHeartbeat`] once its
    /// records are acknowledged (at once if refused or if nothing changed).
    pub fn consumer_heartbeat(
        &mut self,
        request: RequestId,
        req: &HeartbeatRequest,
        image: &dyn TopicsImage,
        now: i64,
    ) {
        let before = self.manager.consumer_groups().group(&req.group_id).cloned();
        let result = self.manager.consumer_heartbeat(req, image, now);
        let mut records = self.manager.take_records();
        records.extend(self.manager.take_consumer_records());
        let answer = match result {
            Ok(answer) if !records.is_empty() => answer,
            other => {
                // A refusal changes nothing (records, if any, would be a bug: written
                // detached so that the log follows the state).
                let partition = self.partition_for(&req.group_id);
                self.append(GroupWrite::Detached, partition, &records, None, now);
                self.answers
                    .push_back((request, GroupAnswer::ConsumerHeartbeat(other)));
                return;
            }
        };
        let n = self.next_write();
        self.heartbeats.insert(
            n,
            PendingHeartbeat {
                request,
                group: req.group_id.clone(),
                answer,
                before,
                failed: None,
                orphaned: false,
            },
        );
        let partition = self.partition_for(&req.group_id);
        self.append(GroupWrite::Heartbeat(n), partition, &records, None, now);
    }

    /// TxnOffsetCommit; answered with [`GroupAnswer::Commit`] once its batch is acknowledged
    /// (at once if there is nothing to write).
    pub fn txn_commit(&mut self, request: RequestId, req: &TxnCommitRequest, now: i64) {
        let pid = req.producer_id;
        let keys: Vec<OffsetKey> = req
            .partitions
            .iter()
            .map(|p| (req.group_id.clone(), p.topic.clone(), p.partition))
            .collect();
        let before: Vec<Option<OffsetAndMetadata>> = keys
            .iter()
            .map(|k| {
                self.manager
                    .pending_txn_offset(&k.0, pid, &k.1, k.2)
                    .cloned()
            })
            .collect();
        let codes = self.manager.txn_commit_offsets(req, now);
        let undo: Vec<(OffsetKey, u64, Option<OffsetAndMetadata>)> = keys
            .into_iter()
            .zip(before)
            .zip(&codes)
            .filter(|(_, c)| c.is_ok())
            .filter_map(|((k, old), _)| {
                let order = self
                    .manager
                    .pending_txn_offset(&k.0, pid, &k.1, k.2)?
                    .log_order;
                Some((k, order, old))
            })
            .collect();
        let batches = self.manager.take_txn_batches();
        if batches.is_empty() {
            self.answers
                .push_back((request, GroupAnswer::Commit(codes)));
            return;
        }
        let n = self.next_write();
        self.txn_commits.insert(
            n,
            PendingTxnCommit {
                request,
                group: req.group_id.clone(),
                producer_id: pid,
                codes,
                undo,
                waiting: batches.len(),
                failed: None,
                orphaned: false,
            },
        );
        // A TxnOffsetCommit names one group: one partition, one batch.
        let partition = self.partition_for(&req.group_id);
        for b in batches {
            let producer = Producer {
                id: b.producer_id,
                epoch: b.producer_epoch,
            };
            self.append(
                GroupWrite::TxnCommit(n),
                partition,
                &b.records,
                Some(producer),
                now,
            );
        }
    }

    /// Forgets the groups of `__consumer_offsets` partition `partition` (see
    /// [`GroupManager::unload`]); their commits still waiting will be answered but change
    /// nothing. Returns how many groups went.
    pub fn unload(&mut self, partition: i32) -> usize {
        let gone = self.manager.unload(partition);
        let config = self.manager.config();
        for c in self.commits.values_mut() {
            c.orphaned |= config.partition_for(&c.group) == partition;
        }
        for c in self.txn_commits.values_mut() {
            c.orphaned |= config.partition_for(&c.group) == partition;
        }
        for h in self.heartbeats.values_mut() {
            h.orphaned |= config.partition_for(&h.group) == partition;
        }
        self.applied_commit
            .retain(|k, _| config.partition_for(&k.0) != partition);
        gone
    }

    fn committed(&self, (group, topic, partition): &OffsetKey) -> Option<OffsetAndMetadata> {
        self.manager.offsets.get(group, topic, *partition)
    }

    /// Puts back (or removes) one committed offset.
    fn restore(&mut self, (group, topic, partition): &OffsetKey, value: Option<OffsetAndMetadata>) {
        match value {
            Some(v) => self.manager.offsets.put(group, topic, *partition, v),
            None => {
                self.manager.offsets.remove(group, topic, *partition);
            }
        }
    }

    /// Queues `records` as one append of `partition`; records that cannot be encoded fail a
    /// commit (and are dropped, logged, from anything else).
    fn append(
        &mut self,
        tag: GroupWrite,
        partition: i32,
        records: &[OffsetsRecord],
        producer: Option<Producer>,
        now: i64,
    ) {
        let mut encoded: Vec<KeyValue> = Vec::with_capacity(records.len());
        for r in records {
            match r.encode() {
                Ok(kv) => encoded.push(kv),
                Err(e) => {
                    tracing::error!(?r.key, error = %e, "group coordinator record not encodable");
                    if tag != GroupWrite::Detached {
                        self.append_done(tag, Err(ErrorCode::UNKNOWN_SERVER_ERROR), now);
                        return;
                    }
                }
            }
        }
        if encoded.is_empty() {
            return;
        }
        self.appends.push_back(Append {
            tag,
            partition,
            records: encoded,
            producer,
        });
    }

    /// Whatever the manager recorded outside a commit goes out with nobody waiting, one
    /// append per partition (records in their order). Whether anything was queued.
    fn queue_detached(&mut self, now: i64) -> bool {
        let mut records = self.manager.take_records();
        records.extend(self.manager.take_consumer_records());
        let stray = self.manager.take_txn_batches();
        if records.is_empty() && stray.is_empty() {
            return false;
        }
        let mut by_partition: Vec<(i32, Vec<OffsetsRecord>)> = Vec::new();
        for record in records {
            let p = self.partition_for(record.key.group());
            match by_partition.iter_mut().find(|(i, _)| *i == p) {
                Some((_, list)) => list.push(record),
                None => by_partition.push((p, vec![record])),
            }
        }
        for (p, list) in by_partition {
            self.append(GroupWrite::Detached, p, &list, None, now);
        }
        for b in stray {
            let Some(p) = b.records.first().map(|r| self.partition_for(r.key.group())) else {
                continue;
            };
            let producer = Producer {
                id: b.producer_id,
                epoch: b.producer_epoch,
            };
            self.append(GroupWrite::Detached, p, &b.records, Some(producer), now);
        }
        true
    }

    fn commit_done(&mut self, n: u64, result: Result<(), ErrorCode>) {
        let Some(mut c) = self.commits.remove(&n) else {
            return;
        };
        match result {
            Ok(()) if !c.orphaned => {
                for (k, value) in c.values {
                    // A later commit applied first, or a committed transaction whose offset
                    // record came after this one: that value stands.
                    let newer = self.applied_commit.get(&k).is_some_and(|&m| m > n)
                        || value.as_ref().is_some_and(|v| {
                            self.committed(&k)
                                .is_some_and(|now| now.log_order > v.log_order)
                        });
                    if !newer {
                        self.applied_commit.insert(k.clone(), n);
                        self.restore(&k, value);
                    }
                }
            }
            Ok(()) => {}
            Err(error) => {
                let answer = answer_for_append_error(error, Written::Offsets);
                tracing::debug!(group = %c.group, %error, %answer, "offset commit not written");
                for code in c.codes.iter_mut().filter(|code| code.is_ok()) {
                    *code = answer;
                }
            }
        }
        self.answers
            .push_back((c.request, GroupAnswer::Commit(c.codes)));
    }

    fn heartbeat_done(&mut self, n: u64, result: Result<(), ErrorCode>, now: i64) {
        let Some(h) = self.heartbeats.remove(&n) else {
            return;
        };
        let answer = match (result, h.failed) {
            (_, Some(code)) => Err(Refusal {
                code,
                message: None,
            }),
            (Ok(()), None) => Ok(h.answer),
            (Err(error), None) => {
                let code = answer_for_append_error(error, Written::State);
                tracing::debug!(group = %h.group, %error, %code,
                    "consumer group heartbeat not written; the group is put back");
                if !h.orphaned {
                    self.manager.consumer.restore(&h.group, h.before, now);
                    for later in self.heartbeats.range_mut(n..).map(|(_, l)| l) {
                        if later.group == h.group {
                            later.failed.get_or_insert(code);
                        }
                    }
                }
                Err(Refusal {
                    code,
                    message: None,
                })
            }
        };
        self.answers
            .push_back((h.request, GroupAnswer::ConsumerHeartbeat(answer)));
    }

    fn txn_commit_done(&mut self, n: u64, result: Result<(), ErrorCode>) {
        let Some(c) = self.txn_commits.get_mut(&n) else {
            return;
        };
        c.waiting = c.waiting.saturating_sub(1);
        if let Err(error) = result {
            tracing::debug!(group = %c.group, producer_id = c.producer_id, %error,
                "transactional offset commit not written");
            c.failed
                .get_or_insert_with(|| answer_for_append_error(error, Written::Offsets));
        }
        if c.waiting > 0 {
            return;
        }
        let Some(mut c) = self.txn_commits.remove(&n) else {
            return;
        };
        if let Some(answer) = c.failed {
            if !c.orphaned {
                for ((group, topic, partition), order, old) in c.undo {
                    self.manager.restore_pending(
                        &group,
                        c.producer_id,
                        &topic,
                        partition,
                        order,
                        old,
                    );
                }
            }
            for code in c.codes.iter_mut().filter(|code| code.is_ok()) {
                *code = answer;
            }
        }
        self.answers
            .push_back((c.request, GroupAnswer::Commit(c.codes)));
    }
}

impl Machine for GroupMachine {
    type Answer = GroupAnswer;
    type Tag = GroupWrite;
    type Work = std::convert::Infallible;

    fn poll_output(&mut self, now: i64) -> Option<EffectOf<Self>> {
        loop {
            if let Some((request, answer)) = self.answers.pop_front() {
                return Some(Effect::Answer(request, answer));
            }
            if let Some(out) = self.manager.poll_output() {
                return Some(match out {
                    Output::Join { request, response } => {
                        Effect::Answer(request, GroupAnswer::Join(response))
                    }
                    Output::Sync { request, response } => {
                        Effect::Answer(request, GroupAnswer::Sync(response))
                    }
                });
            }
            if let Some(append) = self.appends.pop_front() {
                return Some(Effect::Append(append));
            }
            if !self.queue_detached(now) {
                return None;
            }
        }
    }

    fn poll_timeout(&self) -> Option<i64> {
        Some(
            self.manager
                .poll_timeout()
                .map_or(self.next_expiry, |t| t.min(self.next_expiry)),
        )
    }

    fn handle_timeout(&mut self, now: i64) {
        if self.manager.poll_timeout().is_some_and(|due| due <= now) {
            self.manager.handle_timeout(now);
        }
        if now >= self.next_expiry {
            let expired = self.manager.expire_offsets(now);
            if expired > 0 {
                tracing::info!(expired, "expired committed offsets");
            }
            self.next_expiry =
                now.saturating_add(self.manager.config().offsets_retention_check_interval_ms);
        }
    }

    fn append_done(&mut self, tag: GroupWrite, result: Result<(), ErrorCode>, now: i64) {
        match tag {
            GroupWrite::Detached => {
                if let Err(error) = result {
                    // Kept in memory; written again with the group's next change.
                    tracing::warn!(%error, "group coordinator records not written");
                }
            }
            GroupWrite::Commit(n) => self.commit_done(n, result),
            GroupWrite::TxnCommit(n) => self.txn_commit_done(n, result),
            GroupWrite::Heartbeat(n) => self.heartbeat_done(n, result, now),
        }
    }
}
