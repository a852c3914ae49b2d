//! Tests of the transaction coordinator on virtual time: a [`H`]arness around the pure
//! [`TransactionManager`] that plays the driver (it appends the records it is given, through
//! their bytes, to an in-memory `__transaction_state` and writes markers), unless a test
//! holds writes or markers back to look at the states in between.
#![allow(clippy::unwrap_used)]

mod config;
mod init;
mod records;
mod replay;
mod state;
mod timers;
mod txn;

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use kafka_protocol::error_code::ErrorCode;

use super::*;
use crate::log::TopicPartition;

/// The coordinator epoch the harness owns its partitions at.
pub(super) const EPOCH: i32 = 7;
/// The first producer id handed out.
pub(super) const FIRST_PID: i64 = 1000;

/// Short intervals so that scenarios read easily: timeouts checked every second, ids expire
/// after an hour of idleness, checked every minute.
pub(super) fn config() -> TxnConfig {
    TxnConfig {
        abort_timed_out_interval_ms: 1_000,
        remove_expired_interval_ms: 60_000,
        transactional_id_expiration_ms: 3_600_000,
        max_timeout_ms: 120_000,
        ..TxnConfig::default()
    }
}

pub(super) fn tp(topic: &str, partition: i32) -> TopicPartition {
    TopicPartition::new(topic, partition)
}

/// The coordinator, a virtual clock and a driver.
pub(super) struct H {
    pub(super) m: TransactionManager,
    pub(super) now: i64,
    pub(super) ids: SequentialIds,
    next: u64,
    answers: BTreeMap<RequestId, Answer>,
    /// Writes not appended yet (when `auto_writes` is off, or for a test to fail).
    pub(super) writes: VecDeque<TxnWrite>,
    /// Marker requests not written yet.
    pub(super) markers: VecDeque<MarkerRequest>,
    /// Every marker request seen.
    pub(super) markers_seen: Vec<MarkerRequest>,
    /// `__transaction_state` as appended: (partition, key bytes, value bytes).
    pub(super) log: Vec<(i32, bytes::Bytes, Option<bytes::Bytes>)>,
    pub(super) auto_writes: bool,
    pub(super) auto_markers: bool,
}

impl H {
    pub(super) fn new() -> Self {
        Self::with(config())
    }

    /// A coordinator owning every partition at [`EPOCH`].
    pub(super) fn with(config: TxnConfig) -> Self {
        let now = 1_000_000;
        let partitions = config.num_partitions;
        let mut h = Self {
            m: TransactionManager::new(config, now),
            now,
            ids: SequentialIds { next: FIRST_PID },
            next: 0,
            answers: BTreeMap::new(),
            writes: VecDeque::new(),
            markers: VecDeque::new(),
            markers_seen: Vec::new(),
            log: Vec::new(),
            auto_writes: true,
            auto_markers: true,
        };
        for p in 0..partitions {
            h.m.load_partition(p, EPOCH, [], now);
        }
        h
    }

    /// Drains the outputs and, as allowed, appends writes and writes markers until nothing
    /// is left to do (bounded).
    pub(super) fn settle(&mut self) {
        for _ in 0..10_000 {
            while let Some(out) = self.m.poll_output() {
                match out {
                    Output::Answer { request, answer } => {
                        assert!(
                            self.answers.insert(request, answer).is_none(),
                            "answered twice"
                        );
                    }
                    Output::Write(w) => self.writes.push_back(w),
                    Output::Markers(mk) => {
                        self.markers_seen.push(mk.clone());
                        self.markers.push_back(mk);
                    }
                }
            }
            if self.auto_writes && !self.writes.is_empty() {
                self.append_next();
            } else if self.auto_markers && !self.markers.is_empty() {
                self.write_next_markers();
            } else {
                return;
            }
        }
        panic!("the coordinator did not settle");
    }

    /// Appends the oldest held write (through its bytes) and reports it.
    pub(super) fn append_next(&mut self) {
        let w = self.writes.pop_front().expect("a write to append");
        let (key, value) = w.record.encode().unwrap();
        self.log.push((w.partition, key, value));
        self.m.write_done(w.id, Ok(()), self.now);
    }

    /// Fails the oldest held write with `error`.
    pub(super) fn fail_next(&mut self, error: ErrorCode) {
        let w = self.writes.pop_front().expect("a write to fail");
        self.m.write_done(w.id, Err(error), self.now);
        self.settle();
    }

    /// Writes every partition of the oldest marker request.
    pub(super) fn write_next_markers(&mut self) {
        let mk = self.markers.pop_front().expect("markers to write");
        for p in &mk.partitions {
            self.m.marker_written(&mk.transactional_id, p);
        }
    }

    /// Appends every held write and writes every held marker.
    pub(super) fn flush(&mut self) {
        let (w, m) = (self.auto_writes, self.auto_markers);
        self.auto_writes = true;
        self.auto_markers = true;
        self.settle();
        self.auto_writes = w;
        self.auto_markers = m;
    }

    fn id(&mut self) -> RequestId {
        self.next += 1;
        RequestId(self.next)
    }

    /// The answer of a request, if it came (taken).
    pub(super) fn answer(&mut self, id: RequestId) -> Option<Answer> {
        self.answers.remove(&id)
    }

    pub(super) fn init_req(&mut self, req: InitProducerIdRequest) -> RequestId {
        let id = self.id();
        self.m.init_producer_id(id, &req, &mut self.ids, self.now);
        self.settle();
        id
    }

    /// InitProducerId with `timeout_ms` and no KIP-360 id; the answer must come.
    pub(super) fn init(&mut self, txn: &str, timeout_ms: i32) -> InitProducerIdResult {
        self.init_expecting(txn, timeout_ms, NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
    }

    /// InitProducerId with the producer's current id and epoch (KIP-360).
    pub(super) fn init_expecting(
        &mut self,
        txn: &str,
        timeout_ms: i32,
        producer_id: i64,
        producer_epoch: i16,
    ) -> InitProducerIdResult {
        let id = self.init_req(InitProducerIdRequest {
            transactional_id: txn.into(),
            transaction_timeout_ms: timeout_ms,
            producer_id,
            producer_epoch,
        });
        match self.answer(id) {
            Some(Answer::InitProducerId(r)) => r,
            other => panic!("InitProducerId answered {other:?}"),
        }
    }

    pub(super) fn add_req(
        &mut self,
        txn: &str,
        pid: i64,
        epoch: i16,
        partitions: &[TopicPartition],
    ) -> RequestId {
        let id = self.id();
        let req = AddPartitionsRequest {
            transactional_id: txn.into(),
            producer_id: pid,
            producer_epoch: epoch,
            partitions: partitions.iter().cloned().collect(),
            verify_only: false,
        };
        self.m.add_partitions(id, &req, self.now);
        self.settle();
        id
    }

    /// AddPartitionsToTxn; the answer must come.
    pub(super) fn add(
        &mut self,
        txn: &str,
        pid: i64,
        epoch: i16,
        partitions: &[TopicPartition],
    ) -> ErrorCode {
        let id = self.add_req(txn, pid, epoch, partitions);
        match self.answer(id) {
            Some(Answer::AddPartitions(e)) => e,
            other => panic!("AddPartitionsToTxn answered {other:?}"),
        }
    }

    pub(super) fn add_offsets(
        &mut self,
        txn: &str,
        pid: i64,
        epoch: i16,
        group: &str,
    ) -> ErrorCode {
        let id = self.id();
        let req = AddOffsetsRequest {
            transactional_id: txn.into(),
            producer_id: pid,
            producer_epoch: epoch,
            group_id: group.into(),
        };
        self.m.add_offsets(id, &req, 50, self.now);
        self.settle();
        match self.answer(id) {
            Some(Answer::AddOffsets(e)) => e,
            other => panic!("AddOffsetsToTxn answered {other:?}"),
        }
    }

    pub(super) fn end_req(&mut self, txn: &str, pid: i64, epoch: i16, commit: bool) -> RequestId {
        let id = self.id();
        let req = EndTxnRequest {
            transactional_id: txn.into(),
            producer_id: pid,
            producer_epoch: epoch,
            commit,
        };
        self.m.end_txn(id, &req, self.now);
        self.settle();
        id
    }

    /// EndTxn; the answer must come.
    pub(super) fn end(&mut self, txn: &str, pid: i64, epoch: i16, commit: bool) -> ErrorCode {
        let id = self.end_req(txn, pid, epoch, commit);
        match self.answer(id) {
            Some(Answer::EndTxn(e)) => e,
            other => panic!("EndTxn answered {other:?}"),
        }
    }

    /// Moves the clock on and runs the timers that are due, in steps of at most a second.
    pub(super) fn advance(&mut self, ms: i64) {
        let until = self.now + ms;
        while self.now < until {
            self.now = (self.now + 1_000).min(until);
            if self.now >= self.m.poll_timeout() {
                self.m.handle_timeout(self.now);
            }
            self.settle();
        }
    }

    pub(super) fn state(&self, txn: &str) -> Option<TxnState> {
        self.m.transaction(txn).map(|m| m.state)
    }

    /// The records appended so far, decoded.
    pub(super) fn records(&self) -> Vec<TxnRecord> {
        self.log
            .iter()
            .map(|(_, k, v)| TxnRecord::decode(k, v.as_ref()).unwrap().unwrap())
            .collect()
    }

    /// The states the records of `txn` went through.
    pub(super) fn logged_states(&self, txn: &str) -> Vec<Option<TxnState>> {
        self.records()
            .into_iter()
            .filter(|r| r.transactional_id == txn)
            .map(|r| r.value.map(|v| v.state))
            .collect()
    }

    /// A fresh coordinator loading this one's log, partition by partition (a restart).
    pub(super) fn restart(&self, coordinator_epoch: i32) -> H {
        let config = self.m.config().clone();
        let mut h = H {
            m: TransactionManager::new(config.clone(), self.now),
            now: self.now,
            ids: self.ids.clone(),
            next: 1_000,
            answers: BTreeMap::new(),
            writes: VecDeque::new(),
            markers: VecDeque::new(),
            markers_seen: Vec::new(),
            log: self.log.clone(),
            auto_writes: self.auto_writes,
            auto_markers: self.auto_markers,
        };
        for p in 0..config.num_partitions {
            let records: Vec<TxnRecord> = self
                .log
                .iter()
                .filter(|(part, _, _)| *part == p)
                .map(|(_, k, v)| TxnRecord::decode(k, v.as_ref()).unwrap().unwrap())
                .collect();
            h.m.load_partition(p, coordinator_epoch, records, h.now);
        }
        h.settle();
        h
    }

    /// Every id's description, by id.
    pub(super) fn describe_all(&self) -> BTreeMap<String, TxnDescription> {
        self.m
            .transactions()
            .map(|t| {
                (
                    t.transactional_id.clone(),
                    self.m.describe(&t.transactional_id),
                )
            })
            .collect()
    }

    /// An initialized producer of `txn` with partitions `parts` in an open transaction.
    pub(super) fn open(
        &mut self,
        txn: &str,
        timeout_ms: i32,
        parts: &[TopicPartition],
    ) -> (i64, i16) {
        let r = self.init(txn, timeout_ms);
        assert_eq!(r.error, ErrorCode::NONE);
        assert_eq!(
            self.add(txn, r.producer_id, r.producer_epoch, parts),
            ErrorCode::NONE
        );
        (r.producer_id, r.producer_epoch)
    }
}

/// The partitions of a set, sorted.
pub(super) fn set(parts: &[TopicPartition]) -> BTreeSet<TopicPartition> {
    parts.iter().cloned().collect()
}
