//! AddPartitionsToTxn, AddOffsetsToTxn, EndTxn and the markers.

use super::*;

#[test]
fn commit_writes_markers_then_completes() {
    let mut h = H::new();
    let parts = [tp("t", 0), tp("t", 1), tp("u", 4)];
    let (pid, epoch) = h.open("tx", 60_000, &parts[..2]);
    let start = h.m.transaction("tx").unwrap().start_ms;
    h.now += 50;
    // Partitions already in the transaction are answered without a write.
    let records = h.log.len();
    assert_eq!(h.add("tx", pid, epoch, &parts[..1]), ErrorCode::NONE);
    assert_eq!(h.log.len(), records);
    assert_eq!(h.add("tx", pid, epoch, &parts[2..]), ErrorCode::NONE);
    assert_eq!(h.log.len(), records + 1);
    assert_eq!(h.m.transaction("tx").unwrap().start_ms, start);
    assert_eq!(h.add_offsets("tx", pid, epoch, "g"), ErrorCode::NONE);
    let offsets = tp(
        crate::coordinator::OFFSETS_TOPIC,
        crate::group::partition_for("g", 50),
    );
    assert!(h.m.transaction("tx").unwrap().partitions.contains(&offsets));

    h.auto_markers = false;
    let end = h.end_req("tx", pid, epoch, true);
    assert_eq!(
        h.answer(end),
        Some(Answer::EndTxn(ErrorCode::NONE)),
        "answered before the markers"
    );
    let mk = h.markers.front().unwrap().clone();
    let mut all = set(&parts);
    all.insert(offsets.clone());
    assert_eq!(mk.partitions, all);
    assert_eq!(
        (
            mk.producer_id,
            mk.producer_epoch,
            mk.result,
            mk.coordinator_epoch
        ),
        (pid, epoch, TxnResult::Commit, EPOCH)
    );

    // While the markers are out: the transaction is PrepareCommit, with its partitions.
    let d = h.m.describe("tx");
    assert_eq!((d.state.as_str(), d.topics.len()), ("PrepareCommit", 3));
    assert_eq!(
        h.add("tx", pid, epoch, &parts),
        ErrorCode::CONCURRENT_TRANSACTIONS
    );
    assert_eq!(
        h.end("tx", pid, epoch, true),
        ErrorCode::CONCURRENT_TRANSACTIONS
    );
    assert_eq!(
        h.end("tx", pid, epoch, false),
        ErrorCode::CONCURRENT_TRANSACTIONS,
        "pending completion"
    );

    // Markers come back one partition at a time; the completion waits for the last.
    h.m.marker_written("tx", &parts[0]);
    h.m.marker_written("tx", &parts[0]);
    h.m.marker_written("tx", &offsets);
    h.settle();
    assert_eq!(h.m.markers_pending("tx").map(|p| p.len()), Some(2));
    assert!(h.writes.is_empty());
    h.m.marker_written("tx", &parts[1]);
    h.m.marker_written("tx", &parts[2]);
    h.markers.clear();
    h.settle();
    assert_eq!(h.m.markers_pending("tx"), None);
    assert_eq!(h.state("tx"), Some(TxnState::CompleteCommit));
    let d = h.m.describe("tx");
    assert!(d.topics.is_empty());
    assert_eq!(d.start_ms, start);

    // Retries of the end: the same end is fine, the other is not.
    assert_eq!(h.end("tx", pid, epoch, true), ErrorCode::NONE);
    assert_eq!(h.end("tx", pid, epoch, false), ErrorCode::INVALID_TXN_STATE);

    // The next transaction starts afresh, same epoch (TV1).
    h.now += 1_000;
    assert_eq!(h.add("tx", pid, epoch, &parts[..1]), ErrorCode::NONE);
    let md = h.m.transaction("tx").unwrap();
    assert_eq!(
        (md.start_ms, md.partitions.len(), md.producer_epoch),
        (h.now, 1, epoch)
    );
}

#[test]
fn abort_is_the_same_with_abort_markers() {
    let mut h = H::new();
    let (pid, epoch) = h.open("tx", 60_000, &[tp("t", 0)]);
    h.auto_markers = false;
    assert_eq!(h.end("tx", pid, epoch, false), ErrorCode::NONE);
    assert_eq!(h.state("tx"), Some(TxnState::PrepareAbort));
    assert_eq!(
        h.end("tx", pid, epoch, true),
        ErrorCode::CONCURRENT_TRANSACTIONS
    );
    h.flush();
    assert_eq!(h.markers_seen.last().unwrap().result, TxnResult::Abort);
    assert_eq!(h.state("tx"), Some(TxnState::CompleteAbort));
    assert_eq!(h.end("tx", pid, epoch, false), ErrorCode::NONE);
    assert_eq!(h.end("tx", pid, epoch, true), ErrorCode::INVALID_TXN_STATE);
}

#[test]
fn end_in_the_wrong_state_or_of_another_producer() {
    let mut h = H::new();
    assert_eq!(
        h.end("nobody", 1, 0, true),
        ErrorCode::INVALID_PRODUCER_ID_MAPPING
    );
    assert_eq!(h.end("", 1, 0, true), ErrorCode::INVALID_REQUEST);
    let r = h.init("tx", 60_000);
    let (pid, epoch) = (r.producer_id, r.producer_epoch);
    assert_eq!(
        h.end("tx", pid, epoch, true),
        ErrorCode::INVALID_TXN_STATE,
        "nothing open"
    );
    assert_eq!(h.end("tx", pid, epoch, false), ErrorCode::INVALID_TXN_STATE);
    assert_eq!(
        h.end("tx", pid + 1, epoch, true),
        ErrorCode::INVALID_PRODUCER_ID_MAPPING
    );
    assert_eq!(
        h.end("tx", pid, epoch + 1, true),
        ErrorCode::PRODUCER_FENCED,
        "a newer epoch too"
    );
    assert_eq!(h.logged_states("tx").len(), 1, "nothing written");
}

#[test]
fn add_partitions_errors() {
    let mut h = H::new();
    assert_eq!(
        h.add("nobody", 1, 0, &[tp("t", 0)]),
        ErrorCode::INVALID_PRODUCER_ID_MAPPING
    );
    assert_eq!(h.add("", 1, 0, &[tp("t", 0)]), ErrorCode::INVALID_REQUEST);
    let r = h.init("tx", 60_000);
    assert_eq!(
        h.add("tx", r.producer_id + 1, 0, &[tp("t", 0)]),
        ErrorCode::INVALID_PRODUCER_ID_MAPPING
    );
    assert_eq!(
        h.add("tx", r.producer_id, 1, &[tp("t", 0)]),
        ErrorCode::PRODUCER_FENCED
    );
    assert_eq!(
        h.add_offsets("tx", r.producer_id, 1, "g"),
        ErrorCode::PRODUCER_FENCED
    );
    // A write under way makes the next one retry.
    h.auto_writes = false;
    let first = h.add_req("tx", r.producer_id, 0, &[tp("t", 0)]);
    assert_eq!(
        h.add("tx", r.producer_id, 0, &[tp("t", 1)]),
        ErrorCode::CONCURRENT_TRANSACTIONS
    );
    h.fail_next(ErrorCode::NOT_ENOUGH_REPLICAS_AFTER_APPEND);
    assert_eq!(
        h.answer(first),
        Some(Answer::AddPartitions(ErrorCode::COORDINATOR_NOT_AVAILABLE))
    );
    assert_eq!(h.state("tx"), Some(TxnState::Empty), "rolled back");
    // The verification form is not a client's.
    let id = RequestId(99);
    let req = AddPartitionsRequest {
        transactional_id: "tx".into(),
        producer_id: r.producer_id,
        producer_epoch: 0,
        partitions: set(&[tp("t", 0)]),
        verify_only: true,
    };
    h.m.add_partitions(id, &req, h.now);
    h.settle();
    assert_eq!(
        h.answer(id),
        Some(Answer::AddPartitions(ErrorCode::INVALID_REQUEST))
    );
}

#[test]
fn a_transaction_without_partitions_completes_without_markers() {
    let mut h = H::new();
    let (pid, epoch) = h.open("tx", 60_000, &[]);
    assert_eq!(h.state("tx"), Some(TxnState::Ongoing));
    assert_eq!(h.end("tx", pid, epoch, true), ErrorCode::NONE);
    assert!(h.markers_seen.is_empty());
    assert_eq!(h.state("tx"), Some(TxnState::CompleteCommit));
}

#[test]
fn a_failed_completion_is_written_again() {
    let mut h = H::new();
    let (pid, epoch) = h.open("tx", 60_000, &[tp("t", 0)]);
    h.auto_writes = false;
    let end = h.end_req("tx", pid, epoch, true);
    h.append_next(); // PrepareCommit
    h.settle();
    assert_eq!(h.answer(end), Some(Answer::EndTxn(ErrorCode::NONE)));
    assert_eq!(h.writes.len(), 1, "the completion, after the markers");
    h.fail_next(ErrorCode::NOT_ENOUGH_REPLICAS);
    // Not at once (a refusal comes back as soon as the write is made: writing again at once
    // would spin), but after a pause.
    assert!(h.writes.is_empty(), "written again at once");
    assert_eq!(h.m.poll_timeout(), h.now + COMPLETION_RETRY_MS);
    h.advance(COMPLETION_RETRY_MS);
    assert_eq!(h.writes.len(), 1, "written again");
    assert_eq!(h.state("tx"), Some(TxnState::PrepareCommit));
    h.append_next();
    h.settle();
    assert_eq!(h.state("tx"), Some(TxnState::CompleteCommit));
}

#[test]
fn verify_partitions_answers_per_partition() {
    let mut h = H::new();
    let (pid, epoch) = h.open("tx", 60_000, &[tp("t", 0)]);
    let mut req = AddPartitionsRequest {
        transactional_id: "tx".into(),
        producer_id: pid,
        producer_epoch: epoch,
        partitions: set(&[tp("t", 0), tp("t", 1)]),
        verify_only: true,
    };
    let r = h.m.verify_partitions(&req);
    assert_eq!(r.partitions[&tp("t", 0)], ErrorCode::NONE);
    assert_eq!(r.partitions[&tp("t", 1)], ErrorCode::TRANSACTION_ABORTABLE);
    assert_eq!(h.log.len(), 2, "nothing written");

    req.producer_epoch = epoch + 1;
    let r = h.m.verify_partitions(&req);
    assert!(
        r.partitions
            .values()
            .all(|e| *e == ErrorCode::PRODUCER_FENCED)
    );
    req.producer_epoch = epoch;
    req.producer_id = pid + 1;
    let r = h.m.verify_partitions(&req);
    assert!(
        r.partitions
            .values()
            .all(|e| *e == ErrorCode::INVALID_PRODUCER_ID_MAPPING)
    );
    req.producer_id = pid;

    h.auto_markers = false;
    assert_eq!(h.end("tx", pid, epoch, true), ErrorCode::NONE);
    let r = h.m.verify_partitions(&req);
    assert!(
        r.partitions
            .values()
            .all(|e| *e == ErrorCode::CONCURRENT_TRANSACTIONS)
    );
    req.transactional_id = "nobody".into();
    let r = h.m.verify_partitions(&req);
    assert_eq!(r.transactional_id, "nobody");
    assert!(
        r.partitions
            .values()
            .all(|e| *e == ErrorCode::INVALID_PRODUCER_ID_MAPPING)
    );
}
