//! Transaction timeouts and transactional id expiration, on virtual time.

use super::*;

#[test]
fn a_transaction_past_its_timeout_is_aborted_and_its_producer_fenced() {
    let mut h = H::new();
    let (pid, epoch) = h.open("tx", 10_000, &[tp("t", 0)]);
    assert!(h.m.poll_timeout() <= h.now + 1_000);
    h.advance(10_000);
    assert_eq!(
        h.state("tx"),
        Some(TxnState::Ongoing),
        "not before the timeout"
    );
    h.advance(1_000);
    assert_eq!(h.state("tx"), Some(TxnState::CompleteAbort));
    let mk = h.markers_seen.last().unwrap();
    assert_eq!(
        (mk.result, mk.producer_id, mk.producer_epoch),
        (TxnResult::Abort, pid, epoch + 1)
    );
    // The producer that left it open is fenced.
    assert_eq!(h.end("tx", pid, epoch, true), ErrorCode::PRODUCER_FENCED);
    assert_eq!(
        h.add("tx", pid, epoch, &[tp("t", 0)]),
        ErrorCode::PRODUCER_FENCED
    );
    // A new producer continues from the bumped epoch.
    assert_eq!(h.init("tx", 10_000).producer_epoch, epoch + 2);
}

#[test]
fn the_timeout_counts_from_the_transaction_start() {
    let mut h = H::new();
    let (pid, epoch) = h.open("tx", 10_000, &[tp("t", 0)]);
    h.advance(8_000);
    // More partitions do not move the start.
    assert_eq!(h.add("tx", pid, epoch, &[tp("t", 1)]), ErrorCode::NONE);
    h.advance(3_000);
    assert_eq!(h.state("tx"), Some(TxnState::CompleteAbort));
}

#[test]
fn a_finished_transaction_is_not_aborted() {
    let mut h = H::new();
    let (pid, epoch) = h.open("tx", 10_000, &[tp("t", 0)]);
    assert_eq!(h.end("tx", pid, epoch, true), ErrorCode::NONE);
    h.advance(30_000);
    assert_eq!(h.state("tx"), Some(TxnState::CompleteCommit));
    assert_eq!(h.m.transaction("tx").unwrap().producer_epoch, epoch);
    assert_eq!(h.markers_seen.len(), 1);
}

#[test]
fn a_transaction_ending_while_its_abort_is_written_is_told_to_retry() {
    let mut h = H::new();
    let (pid, epoch) = h.open("tx", 10_000, &[tp("t", 0)]);
    h.auto_writes = false;
    h.advance(11_000);
    assert_eq!(h.writes.len(), 1, "the PrepareAbort");
    assert_eq!(
        h.end("tx", pid, epoch, true),
        ErrorCode::PRODUCER_FENCED,
        "the epoch is bumped already"
    );
    h.flush();
    assert_eq!(h.state("tx"), Some(TxnState::CompleteAbort));
}

#[test]
fn idle_ids_expire_with_a_tombstone() {
    let mut h = H::new();
    let (pid, epoch) = h.open("open", 120_000, &[tp("t", 0)]);
    let r = h.init("idle", 60_000);
    assert_eq!(r.error, ErrorCode::NONE);
    let (cpid, cepoch) = h.open("done", 60_000, &[tp("t", 1)]);
    assert_eq!(h.end("done", cpid, cepoch, true), ErrorCode::NONE);
    h.advance(3_600_000 - 1);
    assert!(
        h.m.transaction("idle").is_some(),
        "not before the expiration"
    );
    assert_eq!(
        h.state("open"),
        Some(TxnState::CompleteAbort),
        "aborted by its timeout"
    );
    assert_eq!(h.end("open", pid, epoch, false), ErrorCode::PRODUCER_FENCED);
    h.advance(61_000);
    assert!(h.m.transaction("idle").is_none());
    assert!(h.m.transaction("done").is_none());
    assert_eq!(h.logged_states("idle").last(), Some(&None), "a tombstone");
    assert_eq!(
        h.m.describe("idle").error,
        ErrorCode::TRANSACTIONAL_ID_NOT_FOUND
    );
    // "open" was aborted by its timeout and has been idle since; it goes an hour later.
    h.advance(120_000);
    assert!(h.m.transaction("open").is_none());
    assert_eq!(
        h.end("open", pid, epoch + 1, true),
        ErrorCode::INVALID_PRODUCER_ID_MAPPING
    );
    // The id can start again with a new producer id.
    let again = h.init("idle", 60_000);
    assert_eq!(again.producer_epoch, 0);
    assert_ne!(again.producer_id, r.producer_id);
}

#[test]
fn an_open_transaction_never_expires() {
    let mut h = H::with(TxnConfig {
        transactional_id_expiration_ms: 10_000,
        ..config()
    });
    let (pid, epoch) = h.open("tx", 120_000, &[tp("t", 0)]);
    h.advance(70_000);
    assert_eq!(h.state("tx"), Some(TxnState::Ongoing));
    assert_eq!(h.end("tx", pid, epoch, true), ErrorCode::NONE);
    h.advance(70_000);
    assert!(h.m.transaction("tx").is_none(), "expired once complete");
}

#[test]
fn a_failed_tombstone_keeps_the_id() {
    let mut h = H::with(TxnConfig {
        transactional_id_expiration_ms: 10_000,
        ..config()
    });
    let r = h.init("tx", 60_000);
    h.auto_writes = false;
    h.advance(60_000);
    assert_eq!(h.writes.len(), 1);
    assert_eq!(h.m.transaction("tx").unwrap().pending, Some(TxnState::Dead));
    // A producer arriving meanwhile retries.
    assert_eq!(
        h.init("tx", 60_000).error,
        ErrorCode::CONCURRENT_TRANSACTIONS
    );
    h.fail_next(ErrorCode::NOT_ENOUGH_REPLICAS);
    let md = h.m.transaction("tx").unwrap();
    assert_eq!((md.pending, md.producer_id), (None, r.producer_id));
    // The next check tries again.
    h.auto_writes = true;
    h.advance(60_000);
    assert!(h.m.transaction("tx").is_none());
}

#[test]
fn timers_are_due_at_their_intervals() {
    let h = H::new();
    let start = h.now;
    assert_eq!(h.m.poll_timeout(), start + 1_000);
    let mut m = TransactionManager::new(TxnConfig::default(), 0);
    assert_eq!(m.poll_timeout(), 10_000);
    m.handle_timeout(10_000);
    assert_eq!(m.poll_timeout(), 20_000);
    assert!(m.poll_output().is_none());
}
