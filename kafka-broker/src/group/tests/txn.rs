//! Transactional offset commits: pending offsets, commit and abort by marker, the log-order
//! rule, OffsetFetch `require_stable`, deletes and expiry with pending offsets, and replay of a
//! log with transactional batches and markers.

use super::*;

const PID: i64 = 4_000;
const OTHER_PID: i64 = 4_001;

fn txn(group: &str, pid: i64, parts: &[(&str, i32, i64)]) -> TxnCommitRequest {
    TxnCommitRequest {
        transactional_id: format!("tx-{pid}"),
        group_id: group.into(),
        producer_id: pid,
        producer_epoch: 0,
        generation_id: -1,
        member_id: String::new(),
        group_instance_id: None,
        partitions: parts
            .iter()
            .map(|(t, p, o)| CommitPartition {
                topic: (*t).into(),
                partition: *p,
                offset: *o,
                leader_epoch: 2,
                metadata: Some(format!("txn {o}")),
                commit_timestamp: None,
            })
            .collect(),
    }
}

fn plain(group: &str, parts: &[(&str, i32, i64)]) -> CommitRequest {
    CommitRequest {
        group_id: group.into(),
        generation_id: -1,
        member_id: String::new(),
        group_instance_id: None,
        retention_ms: None,
        partitions: parts
            .iter()
            .map(|(t, p, o)| CommitPartition {
                topic: (*t).into(),
                partition: *p,
                offset: *o,
                leader_epoch: -1,
                metadata: None,
                commit_timestamp: None,
            })
            .collect(),
    }
}

/// (offset, error) of one partition, as OffsetFetch answers it.
fn fetch(
    m: &GroupManager,
    group: &str,
    topic: &str,
    partition: i32,
    stable: bool,
) -> (i64, ErrorCode) {
    let asked = [(topic.to_owned(), vec![partition])];
    let f = m.fetch_offsets(group, Some(&asked), stable).remove(0);
    (f.offset, f.error)
}

fn part(m: &GroupManager, group: &str) -> i32 {
    m.config().partition_for(group)
}

/// What the coordinator wrote, in order, as replay reads it back (each transactional batch's
/// records marked with its producer).
#[derive(Default)]
struct Log(Vec<LogEntry>);

impl Log {
    fn drain(&mut self, h: &mut H) {
        self.0.extend(
            std::mem::take(&mut h.records)
                .into_iter()
                .map(LogEntry::Record),
        );
        self.0
            .extend(h.m.take_records().into_iter().map(LogEntry::Record));
        for b in h.m.take_txn_batches() {
            self.0
                .extend(b.records.into_iter().map(|record| LogEntry::Transactional {
                    producer_id: b.producer_id,
                    record,
                }));
        }
    }

    /// A marker appended (the live coordinator is told, as the lead's code tells it); how
    /// many offsets it committed.
    fn marker(&mut self, h: &mut H, partition: i32, pid: i64, commit: bool) -> usize {
        self.0.push(LogEntry::Marker {
            offsets_partition: partition,
            producer_id: pid,
            commit,
        });
        h.m.complete_transaction(partition, pid, commit)
    }

    /// The log through its bytes, as the partition would hold it.
    fn through_bytes(&self) -> Vec<LogEntry> {
        let again = |r: &OffsetsRecord| {
            let (k, v) = r.encode().unwrap();
            OffsetsRecord::decode(&k, v.as_ref()).unwrap().unwrap()
        };
        self.0
            .iter()
            .map(|e| match e {
                LogEntry::Record(r) => LogEntry::Record(again(r)),
                LogEntry::Transactional {
                    producer_id,
                    record,
                } => LogEntry::Transactional {
                    producer_id: *producer_id,
                    record: again(record),
                },
                marker => marker.clone(),
            })
            .collect()
    }
}

#[test]
fn pending_offsets_are_invisible_until_the_commit_marker() {
    let mut h = H::new();
    let mut log = Log::default();
    h.m.commit_offsets(&plain("g", &[("t", 0, 5)]), h.now);
    let errors =
        h.m.txn_commit_offsets(&txn("g", PID, &[("t", 0, 10), ("t", 1, 20)]), h.now);
    assert_eq!(errors, [ErrorCode::NONE; 2]);
    log.drain(&mut h);
    // One transactional batch of the producer, after the plain commit's record.
    assert!(matches!(log.0[0], LogEntry::Record(_)));
    assert!(log.0[1..].iter().all(|e| matches!(
        e,
        LogEntry::Transactional {
            producer_id: PID,
            ..
        }
    )));
    assert_eq!(log.0.len(), 3);

    // Without require_stable: the last committed offsets; with it: UNSTABLE_OFFSET_COMMIT.
    assert_eq!(fetch(&h.m, "g", "t", 0, false), (5, ErrorCode::NONE));
    assert_eq!(fetch(&h.m, "g", "t", 1, false), (-1, ErrorCode::NONE));
    assert_eq!(
        fetch(&h.m, "g", "t", 0, true),
        (-1, ErrorCode::UNSTABLE_OFFSET_COMMIT)
    );
    assert_eq!(
        fetch(&h.m, "g", "t", 1, true),
        (-1, ErrorCode::UNSTABLE_OFFSET_COMMIT)
    );
    assert_eq!(fetch(&h.m, "g", "t", 2, true), (-1, ErrorCode::NONE));
    // All partitions (no list): the committed ones, unstable where pending.
    let all = h.m.fetch_offsets("g", None, true);
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].error, ErrorCode::UNSTABLE_OFFSET_COMMIT);
    assert_eq!(h.m.pending_txn_producers("g"), [PID]);

    // A marker in another partition, or of another producer, changes nothing.
    let p = part(&h.m, "g");
    let elsewhere = (p + 1) % h.m.config().offsets_topic_num_partitions;
    assert_eq!(h.m.complete_transaction(elsewhere, PID, true), 0);
    assert_eq!(h.m.complete_transaction(p, OTHER_PID, true), 0);
    assert!(h.m.has_pending_txn_offset("g", "t", 0));

    assert_eq!(h.m.complete_transaction(p, PID, true), 2);
    assert_eq!(fetch(&h.m, "g", "t", 0, true), (10, ErrorCode::NONE));
    assert_eq!(fetch(&h.m, "g", "t", 1, true), (20, ErrorCode::NONE));
    let f =
        h.m.fetch_offsets("g", Some(&[("t".to_owned(), vec![1])]), false);
    assert_eq!((f[0].leader_epoch, f[0].metadata.as_str()), (2, "txn 20"));
    assert!(!h.m.has_pending_txn_offsets("g"));
    // Completing again is harmless.
    assert_eq!(h.m.complete_transaction(p, PID, true), 0);
    // Nothing of the completion is written by the group coordinator (the marker is the record).
    log.drain(&mut h);
    assert_eq!(log.0.len(), 3);
}

#[test]
fn an_aborted_transaction_leaves_the_committed_offsets() {
    let mut h = H::new();
    h.m.commit_offsets(&plain("g", &[("t", 0, 5)]), h.now);
    h.m.txn_commit_offsets(&txn("g", PID, &[("t", 0, 10), ("t", 1, 20)]), h.now);
    // Another producer's transaction in the same group is its own.
    h.m.txn_commit_offsets(&txn("g", OTHER_PID, &[("t", 1, 30)]), h.now);
    let p = part(&h.m, "g");
    assert_eq!(h.m.complete_transaction(p, PID, false), 0);
    assert_eq!(fetch(&h.m, "g", "t", 0, true), (5, ErrorCode::NONE));
    // Partition 1 still has the other producer's pending offset.
    assert_eq!(
        fetch(&h.m, "g", "t", 1, true),
        (-1, ErrorCode::UNSTABLE_OFFSET_COMMIT)
    );
    assert_eq!(h.m.pending_txn_producers("g"), [OTHER_PID]);
    assert_eq!(h.m.complete_transaction(p, OTHER_PID, true), 1);
    assert_eq!(fetch(&h.m, "g", "t", 1, true), (30, ErrorCode::NONE));
}

#[test]
fn a_commit_appended_after_the_transactional_one_wins() {
    let mut h = H::new();
    let p = part(&h.m, "g");
    // Transactional offset first, then a plain commit of the same partition: the plain one
    // is later in the log and stays when the transaction commits.
    h.m.txn_commit_offsets(&txn("g", PID, &[("t", 0, 10), ("t", 1, 11)]), h.now);
    h.m.commit_offsets(&plain("g", &[("t", 0, 50)]), h.now);
    h.m.complete_transaction(p, PID, true);
    assert_eq!(fetch(&h.m, "g", "t", 0, false).0, 50);
    assert_eq!(fetch(&h.m, "g", "t", 1, false).0, 11);
    // The other order: the transactional offset is the later one and replaces the plain one.
    h.m.commit_offsets(&plain("g", &[("t", 0, 60)]), h.now);
    h.m.txn_commit_offsets(&txn("g", PID, &[("t", 0, 70)]), h.now);
    h.m.complete_transaction(p, PID, true);
    assert_eq!(fetch(&h.m, "g", "t", 0, false).0, 70);
    // A producer's second commit of a partition in one transaction replaces its first.
    h.m.txn_commit_offsets(&txn("g", PID, &[("t", 0, 80)]), h.now);
    h.m.txn_commit_offsets(&txn("g", PID, &[("t", 0, 90)]), h.now);
    h.m.complete_transaction(p, PID, true);
    assert_eq!(fetch(&h.m, "g", "t", 0, false).0, 90);
}

#[test]
fn generation_and_member_are_checked_only_when_given() {
    let mut h = H::new();
    let parts = topics(&[("t", 2)]);
    let members = h.stable_group("g", &["a"], &parts);
    let a = members[0].member_id.clone();
    // A producer that knows nothing of the group (TxnOffsetCommit before v3): accepted even
    // though the group has members.
    assert_eq!(
        h.m.txn_commit_offsets(&txn("g", PID, &[("t", 0, 1)]), h.now),
        [ErrorCode::NONE]
    );
    let with = |generation: i32, member: &str| TxnCommitRequest {
        generation_id: generation,
        member_id: member.into(),
        ..txn("g", PID, &[("t", 0, 2)])
    };
    assert_eq!(
        h.m.txn_commit_offsets(&with(1, &a), h.now),
        [ErrorCode::NONE]
    );
    assert_eq!(
        h.m.txn_commit_offsets(&with(0, &a), h.now),
        [ErrorCode::ILLEGAL_GENERATION]
    );
    assert_eq!(
        h.m.txn_commit_offsets(&with(1, "stranger"), h.now),
        [ErrorCode::UNKNOWN_MEMBER_ID]
    );
    let fenced = TxnCommitRequest {
        group_instance_id: Some("pod-9".into()),
        ..with(1, &a)
    };
    assert_ne!(h.m.txn_commit_offsets(&fenced, h.now), [ErrorCode::NONE]);

    // A group that does not exist is created empty; unless a generation is named.
    assert_eq!(
        h.m.txn_commit_offsets(&txn("new", PID, &[("t", 0, 1)]), h.now),
        [ErrorCode::NONE]
    );
    assert_eq!(h.group("new").state(), GroupState::Empty);
    let gone = TxnCommitRequest {
        generation_id: 4,
        member_id: "m".into(),
        ..txn("gone", PID, &[("t", 0, 1)])
    };
    assert_eq!(
        h.m.txn_commit_offsets(&gone, h.now),
        [ErrorCode::ILLEGAL_GENERATION]
    );
    assert!(h.m.group("gone").is_none());
    assert_eq!(
        h.m.txn_commit_offsets(&txn("", PID, &[("t", 0, 1)]), h.now),
        [ErrorCode::INVALID_GROUP_ID]
    );
    // Oversized metadata: that partition only.
    let mut big = txn("new", PID, &[("t", 0, 1), ("t", 1, 1)]);
    big.partitions[1].metadata = Some("x".repeat(h.m.config().offset_metadata_max_bytes + 1));
    assert_eq!(
        h.m.txn_commit_offsets(&big, h.now),
        [ErrorCode::NONE, ErrorCode::OFFSET_METADATA_TOO_LARGE]
    );
    assert!(!h.m.has_pending_txn_offset("new", "t", 1));
}

#[test]
fn replay_commits_and_aborts_by_marker_and_keeps_open_transactions_pending() {
    let mut h = H::new();
    let mut log = Log::default();
    let p = part(&h.m, "g");
    h.m.commit_offsets(&plain("g", &[("t", 0, 1), ("t", 1, 1), ("t", 2, 1)]), h.now);
    log.drain(&mut h);
    // Committed: partition 0 -> 10.
    h.m.txn_commit_offsets(&txn("g", PID, &[("t", 0, 10)]), h.now);
    log.drain(&mut h);
    log.marker(&mut h, p, PID, true);
    // Aborted: partition 1 stays at 1.
    h.m.txn_commit_offsets(&txn("g", PID, &[("t", 1, 20)]), h.now);
    log.drain(&mut h);
    log.marker(&mut h, p, PID, false);
    // Committed, but a plain commit came after it in the log: partition 2 stays at 99.
    h.m.txn_commit_offsets(&txn("g", OTHER_PID, &[("t", 2, 30)]), h.now);
    log.drain(&mut h);
    h.m.commit_offsets(&plain("g", &[("t", 2, 99)]), h.now);
    log.drain(&mut h);
    log.marker(&mut h, p, OTHER_PID, true);
    // Open (no marker yet): partition 3 of a group known only by this transaction.
    h.m.txn_commit_offsets(&txn("txn-only", PID, &[("t", 3, 40)]), h.now);
    log.drain(&mut h);
    // A marker of the same producer in another partition ends nothing here.
    let q = part(&h.m, "txn-only");
    let elsewhere = (q + 1) % h.m.config().offsets_topic_num_partitions;
    log.marker(&mut h, elsewhere, PID, true);

    let mut fresh = GroupManager::new(config(), MemberIdGen::new(2)).owning_every_partition();
    fresh.replay(log.through_bytes(), h.now);
    assert_eq!(fetch(&fresh, "g", "t", 0, true), (10, ErrorCode::NONE));
    assert_eq!(fetch(&fresh, "g", "t", 1, true), (1, ErrorCode::NONE));
    assert_eq!(fetch(&fresh, "g", "t", 2, true), (99, ErrorCode::NONE));
    assert!(!fresh.has_pending_txn_offsets("g"));
    assert_eq!(
        fetch(&fresh, "txn-only", "t", 3, true),
        (-1, ErrorCode::UNSTABLE_OFFSET_COMMIT)
    );
    assert_eq!(
        fresh.group("txn-only").map(Group::state),
        Some(GroupState::Empty)
    );
    // The transaction ends after the restart.
    assert_eq!(fresh.complete_transaction(q, PID, true), 1);
    assert_eq!(
        fetch(&fresh, "txn-only", "t", 3, true),
        (40, ErrorCode::NONE)
    );

    // The live coordinator agrees (it has seen the same markers).
    h.m.complete_transaction(q, PID, true);
    for (t, partition) in [("t", 0), ("t", 2), ("t", 3)] {
        for g in ["g", "txn-only"] {
            assert_eq!(
                fetch(&fresh, g, t, partition, true),
                fetch(&h.m, g, t, partition, true),
                "{g} {t}-{partition}"
            );
        }
    }
}

#[test]
fn deletes_drop_pending_offsets_with_a_tombstone() {
    let mut h = H::new();
    let mut log = Log::default();
    let p = part(&h.m, "g");
    h.m.commit_offsets(&plain("g", &[("t", 0, 1)]), h.now);
    h.m.txn_commit_offsets(
        &txn("g", PID, &[("t", 0, 10), ("t", 1, 11), ("u", 0, 12)]),
        h.now,
    );
    log.drain(&mut h);
    // OffsetDelete of a partition with only a pending offset: a tombstone, the offset gone.
    assert_eq!(
        h.m.delete_offsets("g", &[("t".to_owned(), 1)]),
        Ok(vec![ErrorCode::NONE])
    );
    let tombstones = h.m.take_records();
    assert_eq!(tombstones, [OffsetsRecord::offset_tombstone("g", "t", 1)]);
    log.0.extend(tombstones.into_iter().map(LogEntry::Record));
    assert!(!h.m.has_pending_txn_offset("g", "t", 1));
    assert!(h.m.has_pending_txn_offset("g", "u", 0));

    // DeleteGroups of the (empty) group: tombstones for the committed offset and for the
    // partitions with only pending offsets; nothing pending is left.
    assert_eq!(h.m.delete_groups(&["g".to_owned()]), [ErrorCode::NONE]);
    let records = h.m.take_records();
    for tp in [("t", 0), ("u", 0)] {
        assert!(
            records.contains(&OffsetsRecord::offset_tombstone("g", tp.0, tp.1)),
            "tombstone for {tp:?}"
        );
    }
    assert!(records.contains(&OffsetsRecord::group_tombstone("g")));
    log.0.extend(records.into_iter().map(LogEntry::Record));
    assert!(!h.m.has_pending_txn_offsets("g"));
    // The marker that comes later commits nothing.
    assert_eq!(log.marker(&mut h, p, PID, true), 0);
    assert_eq!(fetch(&h.m, "g", "t", 0, true), (-1, ErrorCode::NONE));

    // Replayed, the tombstones drop the pending offsets as well.
    let mut fresh = GroupManager::new(config(), MemberIdGen::new(2)).owning_every_partition();
    fresh.replay(log.through_bytes(), h.now);
    assert!(fresh.group("g").is_none());
    for (t, partition) in [("t", 0), ("t", 1), ("u", 0)] {
        assert_eq!(
            fetch(&fresh, "g", t, partition, true),
            (-1, ErrorCode::NONE)
        );
    }
}

#[test]
fn expiry_waits_for_pending_transactions() {
    let mut h = H::new();
    let retention = h.m.config().offsets_retention_ms;
    let p = part(&h.m, "g");
    h.m.commit_offsets(&plain("g", &[("t", 0, 1), ("t", 1, 1)]), h.now);
    h.m.txn_commit_offsets(&txn("g", PID, &[("t", 0, 10)]), h.now);
    // A group known only by a pending transaction.
    h.m.txn_commit_offsets(&txn("only-txn", PID, &[("t", 0, 5)]), h.now);
    h.advance(retention + 1);
    // t-1 expires; t-0 has a pending transactional offset and stays, and so do both groups.
    assert_eq!(h.m.expire_offsets(h.now), 1);
    assert_eq!(fetch(&h.m, "g", "t", 0, false).0, 1);
    assert_eq!(fetch(&h.m, "g", "t", 1, false).0, -1);
    assert!(h.m.group("g").is_some());
    assert!(h.m.group("only-txn").is_some());
    // Aborted: now the offset expires and the groups go.
    h.m.complete_transaction(p, PID, false);
    let q = part(&h.m, "only-txn");
    h.m.complete_transaction(q, PID, false);
    assert_eq!(h.m.expire_offsets(h.now), 1);
    assert!(h.m.group("g").is_none());
    assert!(h.m.group("only-txn").is_none());
}

#[test]
fn unloading_a_partition_forgets_its_pending_offsets() {
    let mut h = H::new();
    h.m.txn_commit_offsets(&txn("g", PID, &[("t", 0, 10)]), h.now);
    let p = part(&h.m, "g");
    h.m.unload(p);
    assert!(!h.m.has_pending_txn_offsets("g"));
    assert_eq!(h.m.complete_transaction(p, PID, true), 0);
}
