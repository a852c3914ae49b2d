//! Loading `__transaction_state`: replay equivalence, the markers of an interrupted end,
//! resignation, and ListTransactions.

use super::*;

/// Ids in every state a log can leave them in.
fn scenario(h: &mut H) {
    let (p, e) = h.open("committed", 60_000, &[tp("t", 0), tp("u", 1)]);
    assert_eq!(h.end("committed", p, e, true), ErrorCode::NONE);
    let (p, e) = h.open("aborted", 60_000, &[tp("t", 1)]);
    assert_eq!(h.end("aborted", p, e, false), ErrorCode::NONE);
    h.open("ongoing", 60_000, &[tp("t", 2), tp("t", 3)]);
    h.init("empty", 30_000);
    h.init("bumped", 30_000);
    h.init("bumped", 30_000);
    h.open("fenced", 60_000, &[tp("t", 4)]);
    assert_eq!(
        h.init("fenced", 60_000).error,
        ErrorCode::CONCURRENT_TRANSACTIONS
    );
    h.now += 5_000;
    let (p, e) = h.open("again", 60_000, &[tp("t", 5)]);
    assert_eq!(h.end("again", p, e, true), ErrorCode::NONE);
    assert_eq!(h.add("again", p, e, &[tp("v", 0)]), ErrorCode::NONE);
}

#[test]
fn replay_gives_the_same_descriptions() {
    let mut h = H::new();
    scenario(&mut h);
    let before = h.describe_all();
    assert_eq!(before.len(), 7);
    let after = h.restart(EPOCH + 1).describe_all();
    assert_eq!(before, after);
    let all = ListFilter::default();
    assert_eq!(
        h.m.list(&all, h.now),
        h.restart(EPOCH + 1).m.list(&all, h.now)
    );
}

#[test]
fn the_markers_of_an_interrupted_commit_are_sent_again() {
    let mut h = H::new();
    let parts = [tp("t", 0), tp("u", 3)];
    let (pid, epoch) = h.open("tx", 60_000, &parts);
    h.auto_markers = false;
    assert_eq!(h.end("tx", pid, epoch, true), ErrorCode::NONE);
    // The broker dies here: PrepareCommit is in the log, no marker is written.
    assert_eq!(
        h.logged_states("tx").last(),
        Some(&Some(TxnState::PrepareCommit))
    );

    let mut h = h.restart(EPOCH + 1);
    assert_eq!(h.markers_seen.len(), 1);
    let mk = h.markers.front().unwrap().clone();
    assert_eq!(
        (
            mk.producer_id,
            mk.producer_epoch,
            mk.result,
            mk.coordinator_epoch
        ),
        (pid, epoch, TxnResult::Commit, EPOCH + 1)
    );
    assert_eq!(mk.partitions, set(&parts));
    assert_eq!(h.state("tx"), Some(TxnState::PrepareCommit));
    assert_eq!(
        h.end("tx", pid, epoch, true),
        ErrorCode::CONCURRENT_TRANSACTIONS
    );
    assert_eq!(
        h.init("tx", 60_000).error,
        ErrorCode::CONCURRENT_TRANSACTIONS
    );
    h.flush();
    assert_eq!(h.state("tx"), Some(TxnState::CompleteCommit));
    assert_eq!(
        h.logged_states("tx").last(),
        Some(&Some(TxnState::CompleteCommit))
    );
    assert_eq!(h.end("tx", pid, epoch, true), ErrorCode::NONE);
    // A third start finds it complete: nothing to send.
    assert!(h.restart(EPOCH + 2).markers_seen.is_empty());
}

#[test]
fn the_markers_of_an_interrupted_timeout_abort_are_sent_again() {
    let mut h = H::new();
    let (pid, epoch) = h.open("tx", 10_000, &[tp("t", 0)]);
    h.auto_markers = false;
    h.advance(11_000);
    assert_eq!(h.state("tx"), Some(TxnState::PrepareAbort));
    let mut h = h.restart(EPOCH + 1);
    let mk = h.markers.front().unwrap().clone();
    assert_eq!(
        (mk.result, mk.producer_id, mk.producer_epoch),
        (TxnResult::Abort, pid, epoch + 1)
    );
    h.flush();
    assert_eq!(h.state("tx"), Some(TxnState::CompleteAbort));
}

#[test]
fn an_interrupted_completion_write_is_redone_after_a_restart() {
    let mut h = H::new();
    let (pid, epoch) = h.open("tx", 60_000, &[tp("t", 0)]);
    h.auto_writes = false;
    let _ = h.end_req("tx", pid, epoch, false);
    h.append_next();
    h.settle(); // markers written; the completion is held back and lost
    let mut h = h.restart(EPOCH + 1);
    // The markers go out again (writing a marker twice is harmless), then the completion.
    assert_eq!(h.markers_seen.len(), 1);
    h.flush();
    assert_eq!(h.state("tx"), Some(TxnState::CompleteAbort));
}

#[test]
fn tombstones_remove_ids_on_replay() {
    let mut h = H::with(TxnConfig {
        transactional_id_expiration_ms: 10_000,
        ..config()
    });
    h.init("gone", 60_000);
    h.advance(70_000);
    h.init("kept", 60_000);
    let h = h.restart(EPOCH + 1);
    assert!(h.m.transaction("gone").is_none());
    assert!(h.m.transaction("kept").is_some());
}

#[test]
fn resigning_drops_the_partition_and_answers_waiting_requests() {
    let mut h = H::new();
    h.init("tx", 60_000);
    h.auto_writes = false;
    let r = h.m.transaction("tx").unwrap().clone();
    let add = h.add_req("tx", r.producer_id, r.producer_epoch, &[tp("t", 0)]);
    let p = h.m.config().partition_for("tx");
    assert_eq!(h.m.resign(p), 1);
    h.settle();
    assert_eq!(
        h.answer(add),
        Some(Answer::AddPartitions(ErrorCode::NOT_COORDINATOR))
    );
    // The late acknowledgement of the write changes nothing.
    h.append_next();
    h.settle();
    assert!(h.m.transaction("tx").is_none());
    assert_eq!(h.m.describe("tx").error, ErrorCode::NOT_COORDINATOR);
    assert!(!h.m.owned_partitions().contains_key(&p));
}

#[test]
fn list_transactions_filters() {
    let mut h = H::new();
    scenario(&mut h);
    let names = |l: &TxnList| {
        l.transactions
            .iter()
            .map(|t| t.transactional_id.as_str().to_owned())
            .collect::<BTreeSet<_>>()
    };
    let all = h.m.list(&ListFilter::default(), h.now);
    assert_eq!((all.error, all.transactions.len()), (ErrorCode::NONE, 7));

    let f = ListFilter {
        states: vec!["Ongoing".into(), "Bogus".into()],
        ..ListFilter::default()
    };
    let l = h.m.list(&f, h.now);
    assert_eq!(names(&l), ["again", "ongoing"].map(String::from).into());
    assert_eq!(l.unknown_state_filters, ["Bogus"]);

    let only_bogus = ListFilter {
        states: vec!["Bogus".into()],
        ..ListFilter::default()
    };
    assert!(h.m.list(&only_bogus, h.now).transactions.is_empty());

    let pid = h.m.transaction("empty").unwrap().producer_id;
    let f = ListFilter {
        producer_ids: vec![pid],
        ..ListFilter::default()
    };
    assert_eq!(
        names(&h.m.list(&f, h.now)),
        ["empty"].map(String::from).into()
    );

    // Running longer than 3 s: the ongoing transaction opened before the 5 s step.
    let f = ListFilter {
        states: vec!["Ongoing".into()],
        duration_ms: 3_000,
        ..ListFilter::default()
    };
    assert_eq!(
        names(&h.m.list(&f, h.now)),
        ["ongoing"].map(String::from).into()
    );

    let d = h.m.describe("ongoing");
    assert_eq!(
        (d.error, d.state.as_str(), d.timeout_ms),
        (ErrorCode::NONE, "Ongoing", 60_000)
    );
    assert_eq!(d.topics["t"], [2, 3]);
    assert_eq!(h.m.describe("").error, ErrorCode::INVALID_REQUEST);
    assert_eq!(
        h.m.describe("unknown").error,
        ErrorCode::TRANSACTIONAL_ID_NOT_FOUND
    );
}
