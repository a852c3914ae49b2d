//! The group machine on virtual time, as its shell drives it: appends held by the test and
//! reported when it says, answers collected.

use std::collections::BTreeMap;

use super::*;
use crate::coordinator::{Append, Effect, Machine, Producer};

/// The machine, a clock, the answers and the appends not reported yet.
struct M {
    m: GroupMachine,
    now: i64,
    next: u64,
    answers: BTreeMap<RequestId, GroupAnswer>,
    appends: Vec<Append<GroupWrite>>,
}

impl M {
    fn new(config: GroupConfig) -> Self {
        let now = 1_000_000;
        Self {
            m: GroupMachine::new(
                GroupManager::new(config, MemberIdGen::new(1)).owning_every_partition(),
                now,
            ),
            now,
            next: 0,
            answers: BTreeMap::new(),
            appends: Vec::new(),
        }
    }

    fn drain(&mut self) {
        while let Some(effect) = self.m.poll_output(self.now) {
            match effect {
                Effect::Answer(id, a) => {
                    assert!(self.answers.insert(id, a).is_none(), "answered twice");
                }
                Effect::Append(a) => self.appends.push(a),
                Effect::Work(w) => match w {},
            }
        }
    }

    fn id(&mut self) -> RequestId {
        self.next += 1;
        RequestId(self.next)
    }

    fn commit(&mut self, group: &str, offset: i64) -> RequestId {
        let id = self.id();
        let req = CommitRequest {
            group_id: group.into(),
            generation_id: -1,
            member_id: String::new(),
            group_instance_id: None,
            retention_ms: None,
            partitions: vec![CommitPartition {
                topic: "t".into(),
                partition: 0,
                offset,
                leader_epoch: -1,
                metadata: None,
                commit_timestamp: None,
            }],
        };
        self.m.commit(id, &req, self.now);
        self.drain();
        id
    }

    /// Reports the oldest held append.
    fn report(&mut self, result: Result<(), ErrorCode>) -> Append<GroupWrite> {
        let a = self.appends.remove(0);
        self.m.append_done(a.tag, result, self.now);
        self.drain();
        a
    }

    fn answer(&mut self, id: RequestId) -> Option<Vec<ErrorCode>> {
        match self.answers.remove(&id)? {
            GroupAnswer::Commit(codes) => Some(codes),
            other => panic!("not a commit answer: {other:?}"),
        }
    }

    fn committed(&self, group: &str) -> i64 {
        let asked = [("t".to_owned(), vec![0])];
        self.m.manager().fetch_offsets(group, Some(&asked), false)[0].offset
    }
}

#[test]
fn a_commit_counts_once_acknowledged_and_a_failure_is_answered_as_kafka_does() {
    let mut h = M::new(GroupConfig::default());
    let id = h.commit("g", 5);
    assert_eq!(
        h.answer(id),
        None,
        "answered before its records were written"
    );
    assert_eq!(h.committed("g"), -1);
    let a = h.report(Ok(()));
    assert_eq!(
        (a.partition, a.records.len(), a.producer),
        (partition_for("g", 50), 1, None)
    );
    assert_eq!(h.answer(id), Some(vec![ErrorCode::NONE]));
    assert_eq!(h.committed("g"), 5);
    for (error, answer) in [
        (
            ErrorCode::NOT_ENOUGH_REPLICAS,
            ErrorCode::COORDINATOR_NOT_AVAILABLE,
        ),
        (
            ErrorCode::NOT_ENOUGH_REPLICAS_AFTER_APPEND,
            ErrorCode::COORDINATOR_NOT_AVAILABLE,
        ),
        (
            ErrorCode::REQUEST_TIMED_OUT,
            ErrorCode::COORDINATOR_NOT_AVAILABLE,
        ),
        (
            ErrorCode::NOT_LEADER_OR_FOLLOWER,
            ErrorCode::NOT_COORDINATOR,
        ),
        (ErrorCode::KAFKA_STORAGE_ERROR, ErrorCode::NOT_COORDINATOR),
        (
            ErrorCode::MESSAGE_TOO_LARGE,
            ErrorCode::INVALID_COMMIT_OFFSET_SIZE,
        ),
    ] {
        let id = h.commit("g", 9);
        h.report(Err(error));
        assert_eq!(h.answer(id), Some(vec![answer]), "{error:?}");
        assert_eq!(h.committed("g"), 5, "{error:?}: the failed commit shows");
    }
}

#[test]
fn a_failed_transactional_batch_undoes_its_pending_offsets() {
    let mut h = M::new(GroupConfig::default());
    let id = h.id();
    let req = TxnCommitRequest {
        transactional_id: "tx".into(),
        group_id: "g".into(),
        producer_id: 7,
        producer_epoch: 3,
        generation_id: -1,
        member_id: String::new(),
        group_instance_id: None,
        partitions: vec![CommitPartition {
            topic: "t".into(),
            partition: 0,
            offset: 42,
            leader_epoch: -1,
            metadata: None,
            commit_timestamp: None,
        }],
    };
    h.m.txn_commit(id, &req, h.now);
    h.drain();
    let pending = |h: &M| {
        h.m.manager()
            .pending_txn_offset("g", 7, "t", 0)
            .map(|v| v.offset)
    };
    assert_eq!(pending(&h), Some(42), "pending at once");
    let a = h.report(Err(ErrorCode::NOT_LEADER_OR_FOLLOWER));
    assert_eq!(a.producer, Some(Producer { id: 7, epoch: 3 }));
    assert_eq!(h.answer(id), Some(vec![ErrorCode::NOT_COORDINATOR]));
    assert_eq!(pending(&h), None);
}

#[test]
fn group_changes_go_out_one_append_per_partition_with_nobody_waiting() {
    let mut h = M::new(GroupConfig::default());
    let (a, b) = ("group-a", "group-b");
    assert_ne!(partition_for(a, 50), partition_for(b, 50));
    for g in [a, b] {
        h.commit(g, 1);
        h.report(Ok(()));
    }
    let deleted = h.m.manager.delete_groups(&[a.to_owned(), b.to_owned()]);
    assert_eq!(deleted, vec![ErrorCode::NONE; 2]);
    h.drain();
    let appends: Vec<(GroupWrite, i32, usize)> = h
        .appends
        .iter()
        .map(|a| (a.tag, a.partition, a.records.len()))
        .collect();
    assert_eq!(
        appends,
        [
            (GroupWrite::Detached, partition_for(a, 50), 2),
            (GroupWrite::Detached, partition_for(b, 50), 2)
        ],
        "an offset tombstone and a group tombstone each"
    );
    // A failure is logged; nobody waits for it and nothing comes back.
    h.answers.clear();
    h.report(Err(ErrorCode::NOT_ENOUGH_REPLICAS));
    h.report(Ok(()));
    assert!(h.answers.is_empty() && h.appends.is_empty());
}

#[test]
fn offsets_expire_on_the_machines_own_timer() {
    let mut h = M::new(GroupConfig {
        offsets_retention_ms: 1_000,
        offsets_retention_check_interval_ms: 60_000,
        ..GroupConfig::default()
    });
    let start = h.now;
    assert_eq!(h.m.poll_timeout(), Some(start + 60_000));
    h.commit("g", 5);
    h.report(Ok(()));
    assert_eq!(
        h.m.poll_timeout(),
        Some(start + 60_000),
        "a simple group has no timers"
    );
    h.now = start + 60_000;
    h.m.handle_timeout(h.now);
    h.drain();
    assert_eq!(h.committed("g"), -1, "expired");
    let a = h.report(Ok(()));
    assert_eq!((a.tag, a.records.len()), (GroupWrite::Detached, 2));
    assert_eq!(h.m.poll_timeout(), Some(start + 120_000));
}
