//! InitProducerId: new ids, epoch bumps, fencing, KIP-360 recovery, exhaustion, failures.

use super::*;

#[test]
fn a_new_id_gets_a_producer_id_at_epoch_0_and_then_bumps() {
    let mut h = H::new();
    let r = h.init("tx", 60_000);
    assert_eq!(
        (r.error, r.producer_id, r.producer_epoch),
        (ErrorCode::NONE, FIRST_PID, 0)
    );
    let r = h.init("tx", 30_000);
    assert_eq!(
        (r.error, r.producer_id, r.producer_epoch),
        (ErrorCode::NONE, FIRST_PID, 1)
    );
    assert_eq!(h.m.transaction("tx").unwrap().timeout_ms, 30_000);
    let other = h.init("other", 60_000);
    assert_eq!(
        (other.producer_id, other.producer_epoch),
        (FIRST_PID + 1, 0)
    );
    assert_eq!(
        h.logged_states("tx"),
        [Some(TxnState::Empty), Some(TxnState::Empty)]
    );
}

#[test]
fn bad_requests_are_refused() {
    let mut h = H::new();
    assert_eq!(h.init("", 60_000).error, ErrorCode::INVALID_REQUEST);
    assert_eq!(
        h.init("tx", 0).error,
        ErrorCode::INVALID_TRANSACTION_TIMEOUT
    );
    assert_eq!(
        h.init("tx", 120_001).error,
        ErrorCode::INVALID_TRANSACTION_TIMEOUT
    );
    assert_eq!(
        h.init("tx", 120_000).error,
        ErrorCode::NONE,
        "the maximum itself is fine"
    );
    assert_eq!(
        h.init_expecting("tx", 1_000, -1, 0).error,
        ErrorCode::INVALID_REQUEST
    );
    assert_eq!(
        h.init_expecting("tx", 1_000, 5, -1).error,
        ErrorCode::INVALID_REQUEST
    );
}

#[test]
fn ids_of_partitions_not_owned_or_loading_are_refused() {
    let mut h = H::new();
    let p = h.m.config().partition_for("tx");
    assert_eq!(h.m.resign(p), 0);
    assert_eq!(h.init("tx", 60_000).error, ErrorCode::NOT_COORDINATOR);
    h.m.begin_load(p);
    assert_eq!(
        h.init("tx", 60_000).error,
        ErrorCode::COORDINATOR_LOAD_IN_PROGRESS
    );
    assert_eq!(
        h.m.describe("tx").error,
        ErrorCode::COORDINATOR_LOAD_IN_PROGRESS
    );
    assert_eq!(
        h.m.list(&ListFilter::default(), h.now).error,
        ErrorCode::COORDINATOR_LOAD_IN_PROGRESS
    );
    h.m.load_partition(p, EPOCH + 1, [], h.now);
    assert_eq!(h.init("tx", 60_000).error, ErrorCode::NONE);
}

#[test]
fn a_second_producer_fences_the_first_and_aborts_its_transaction() {
    let mut h = H::new();
    let parts = [tp("t", 0), tp("t", 1)];
    let (pid, epoch) = h.open("tx", 60_000, &parts);

    // The new producer is told to retry while the old transaction is aborted.
    let r = h.init("tx", 60_000);
    assert_eq!(r.error, ErrorCode::CONCURRENT_TRANSACTIONS);
    assert_eq!(
        (r.producer_id, r.producer_epoch),
        (NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
    );
    let mk = h.markers_seen.last().unwrap().clone();
    assert_eq!(mk.result, TxnResult::Abort);
    assert_eq!(
        (mk.producer_id, mk.producer_epoch),
        (pid, epoch + 1),
        "abort at the bumped epoch"
    );
    assert_eq!(mk.partitions, set(&parts));
    assert_eq!(mk.coordinator_epoch, EPOCH);
    assert_eq!(h.state("tx"), Some(TxnState::CompleteAbort));

    // Its retry gets a second bump.
    let r = h.init("tx", 60_000);
    assert_eq!(
        (r.error, r.producer_id, r.producer_epoch),
        (ErrorCode::NONE, pid, epoch + 2)
    );

    // The old producer is fenced everywhere.
    assert_eq!(h.end("tx", pid, epoch, true), ErrorCode::PRODUCER_FENCED);
    assert_eq!(h.add("tx", pid, epoch, &parts), ErrorCode::PRODUCER_FENCED);
    assert_eq!(
        h.logged_states("tx"),
        [
            Some(TxnState::Empty),
            Some(TxnState::Ongoing),
            Some(TxnState::PrepareAbort),
            Some(TxnState::CompleteAbort),
            Some(TxnState::Empty),
        ]
    );
}

#[test]
fn init_while_the_markers_are_written_is_retried() {
    let mut h = H::new();
    let (pid, epoch) = h.open("tx", 60_000, &[tp("t", 0)]);
    h.auto_markers = false;
    assert_eq!(h.end("tx", pid, epoch, true), ErrorCode::NONE);
    assert_eq!(
        h.init("tx", 60_000).error,
        ErrorCode::CONCURRENT_TRANSACTIONS
    );
    h.flush();
    assert_eq!(h.init("tx", 60_000).producer_epoch, epoch + 1);
}

#[test]
fn a_pending_write_makes_other_requests_retry() {
    let mut h = H::new();
    h.auto_writes = false;
    let first = h.init_req(InitProducerIdRequest {
        transactional_id: "tx".into(),
        transaction_timeout_ms: 60_000,
        producer_id: -1,
        producer_epoch: -1,
    });
    assert_eq!(h.answer(first), None, "not answered before the write");
    assert_eq!(
        h.init("tx", 60_000).error,
        ErrorCode::CONCURRENT_TRANSACTIONS
    );
    h.flush();
    let Some(Answer::InitProducerId(r)) = h.answer(first) else {
        panic!("the first init is answered once written");
    };
    assert_eq!((r.error, r.producer_epoch), (ErrorCode::NONE, 0));
}

#[test]
fn a_failed_write_is_answered_and_rolled_back() {
    let mut h = H::new();
    h.auto_writes = false;
    let req = InitProducerIdRequest {
        transactional_id: "tx".into(),
        transaction_timeout_ms: 60_000,
        producer_id: -1,
        producer_epoch: -1,
    };
    for (append_error, client_error) in [
        (
            ErrorCode::NOT_ENOUGH_REPLICAS,
            ErrorCode::COORDINATOR_NOT_AVAILABLE,
        ),
        (
            ErrorCode::NOT_LEADER_OR_FOLLOWER,
            ErrorCode::NOT_COORDINATOR,
        ),
        (
            ErrorCode::MESSAGE_TOO_LARGE,
            ErrorCode::UNKNOWN_SERVER_ERROR,
        ),
    ] {
        let id = h.init_req(req.clone());
        h.fail_next(append_error);
        assert_eq!(h.answer(id).unwrap().error(), client_error);
        assert_eq!(h.m.transaction("tx").unwrap().pending, None);
    }
    h.auto_writes = true;
    let r = h.init("tx", 60_000);
    assert_eq!(
        (r.error, r.producer_epoch),
        (ErrorCode::NONE, 0),
        "nothing was bumped"
    );
    assert!(h.log.len() == 1);
}

#[test]
fn a_failed_fence_does_not_bump_twice() {
    let mut h = H::new();
    let (pid, epoch) = h.open("tx", 60_000, &[tp("t", 0)]);
    h.auto_writes = false;
    let id = h.init_req(InitProducerIdRequest {
        transactional_id: "tx".into(),
        transaction_timeout_ms: 60_000,
        producer_id: -1,
        producer_epoch: -1,
    });
    h.fail_next(ErrorCode::REQUEST_TIMED_OUT);
    assert_eq!(
        h.answer(id).unwrap().error(),
        ErrorCode::COORDINATOR_NOT_AVAILABLE
    );
    let md = h.m.transaction("tx").unwrap();
    assert_eq!(
        (md.state, md.producer_epoch, md.has_failed_epoch_fence),
        (TxnState::Ongoing, epoch + 1, true)
    );
    // The old producer cannot end its transaction any more (its epoch is behind).
    h.auto_writes = true;
    assert_eq!(h.end("tx", pid, epoch, true), ErrorCode::PRODUCER_FENCED);
    // The next fence reuses the bumped epoch.
    assert_eq!(
        h.init("tx", 60_000).error,
        ErrorCode::CONCURRENT_TRANSACTIONS
    );
    assert_eq!(h.markers_seen.last().unwrap().producer_epoch, epoch + 1);
    assert_eq!(h.init("tx", 60_000).producer_epoch, epoch + 2);
}

#[test]
fn kip_360_recovery() {
    let mut h = H::new();
    let r = h.init("tx", 60_000);
    let (pid, e0) = (r.producer_id, r.producer_epoch);
    // The current producer recovers: bumped, and the old epoch remembered.
    let r = h.init_expecting("tx", 60_000, pid, e0);
    assert_eq!(
        (r.error, r.producer_id, r.producer_epoch),
        (ErrorCode::NONE, pid, e0 + 1)
    );
    // Its retry (the answer was lost) gets the same epoch again.
    let r = h.init_expecting("tx", 60_000, pid, e0);
    assert_eq!((r.error, r.producer_epoch), (ErrorCode::NONE, e0 + 1));
    // A stale epoch or another producer id is fenced.
    assert_eq!(
        h.init_expecting("tx", 60_000, pid, e0 + 5).error,
        ErrorCode::PRODUCER_FENCED
    );
    assert_eq!(
        h.init_expecting("tx", 60_000, pid + 9, e0 + 1).error,
        ErrorCode::PRODUCER_FENCED
    );
    // A producer that lost its id (the id expired meanwhile) starts again at epoch 0.
    let r = h.init_expecting("fresh", 60_000, 4242, 3);
    assert_eq!((r.error, r.producer_epoch), (ErrorCode::NONE, 0));
    assert_ne!(r.producer_id, 4242);
}

/// An id whose epoch is exhausted, loaded from a record.
fn exhausted(h: &mut H, txn: &str, pid: i64) {
    let p = h.m.config().partition_for(txn);
    let value = TxnLogValue {
        producer_id: pid,
        previous_producer_id: -1,
        next_producer_id: -1,
        producer_epoch: i16::MAX - 1,
        timeout_ms: 60_000,
        state: TxnState::CompleteCommit,
        partitions: Default::default(),
        last_update_ms: h.now,
        start_ms: h.now - 10,
        client_transaction_version: 0,
    };
    h.m.load_partition(
        p,
        EPOCH,
        [TxnRecord {
            transactional_id: txn.into(),
            value: Some(value),
        }],
        h.now,
    );
}

#[test]
fn an_exhausted_epoch_gets_a_new_producer_id() {
    let mut h = H::new();
    exhausted(&mut h, "tx", 7);
    let r = h.init("tx", 60_000);
    assert_eq!(
        (r.error, r.producer_id, r.producer_epoch),
        (ErrorCode::NONE, FIRST_PID, 0)
    );
    let md = h.m.transaction("tx").unwrap();
    assert_eq!(
        (md.last_producer_id, md.last_producer_epoch),
        (7, NO_PRODUCER_EPOCH)
    );
}

#[test]
fn a_retried_rotation_is_recognised() {
    let mut h = H::new();
    exhausted(&mut h, "tx", 7);
    let r = h.init_expecting("tx", 60_000, 7, i16::MAX - 1);
    assert_eq!(
        (r.error, r.producer_id, r.producer_epoch),
        (ErrorCode::NONE, FIRST_PID, 0)
    );
    // The producer never saw the answer and asks again with its old id and epoch.
    let again = h.init_expecting("tx", 60_000, 7, i16::MAX - 1);
    assert_eq!(
        (again.error, again.producer_id, again.producer_epoch),
        (ErrorCode::NONE, FIRST_PID, 0)
    );
}

#[test]
fn a_fence_at_the_last_epoch_rotates_on_the_retry() {
    let mut h = H::new();
    let p = h.m.config().partition_for("tx");
    let value = TxnLogValue {
        producer_id: 7,
        previous_producer_id: -1,
        next_producer_id: -1,
        producer_epoch: i16::MAX - 1,
        timeout_ms: 60_000,
        state: TxnState::Ongoing,
        partitions: [("t".to_owned(), [0].into())].into(),
        last_update_ms: h.now,
        start_ms: h.now,
        client_transaction_version: 0,
    };
    h.m.load_partition(
        p,
        EPOCH,
        [TxnRecord {
            transactional_id: "tx".into(),
            value: Some(value),
        }],
        h.now,
    );
    assert_eq!(
        h.init("tx", 60_000).error,
        ErrorCode::CONCURRENT_TRANSACTIONS
    );
    assert_eq!(h.markers_seen.last().unwrap().producer_epoch, i16::MAX);
    let r = h.init("tx", 60_000);
    assert_eq!(
        (r.error, r.producer_id, r.producer_epoch),
        (ErrorCode::NONE, FIRST_PID, 0)
    );
}

struct Unavailable;

impl ProducerIdSource for Unavailable {
    fn next_producer_id(&mut self) -> Result<i64, ErrorCode> {
        Err(ErrorCode::COORDINATOR_LOAD_IN_PROGRESS)
    }
}

#[test]
fn the_producer_id_source_error_is_answered() {
    let mut h = H::new();
    let req = InitProducerIdRequest {
        transactional_id: "tx".into(),
        transaction_timeout_ms: 60_000,
        producer_id: -1,
        producer_epoch: -1,
    };
    h.m.init_producer_id(RequestId(1), &req, &mut Unavailable, h.now);
    h.settle();
    assert_eq!(
        h.answer(RequestId(1)).unwrap().error(),
        ErrorCode::COORDINATOR_LOAD_IN_PROGRESS
    );
    assert!(h.m.transaction("tx").is_none());
}

#[test]
fn old_clients_get_invalid_producer_epoch() {
    let f = ErrorCode::PRODUCER_FENCED;
    assert_eq!(
        error_for_version(TxnApi::InitProducerId, 3, f),
        ErrorCode::INVALID_PRODUCER_EPOCH
    );
    assert_eq!(error_for_version(TxnApi::InitProducerId, 4, f), f);
    for api in [
        TxnApi::AddPartitionsToTxn,
        TxnApi::AddOffsetsToTxn,
        TxnApi::EndTxn,
        TxnApi::TxnOffsetCommit,
    ] {
        assert_eq!(
            error_for_version(api, 1, f),
            ErrorCode::INVALID_PRODUCER_EPOCH
        );
        assert_eq!(error_for_version(api, 2, f), f);
        assert_eq!(error_for_version(api, 0, ErrorCode::NONE), ErrorCode::NONE);
    }
}
