//! The transaction manager alone: requests out in Java's order, answers in, time passed in.

use std::sync::Arc;
use std::time::Duration;

use kafka_net::{ConsumerGroupMetadata, NetError, OffsetAndMetadata};
use kafka_protocol::KStr;
use kafka_protocol::TopicPartition;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::{
    AddOffsetsToTxnResponse, AddPartitionsToTxnResponse, EndTxnResponse, InitProducerIdResponse,
    RequestBody, ResponseBody, add_partitions_to_txn_response,
};
use tokio::time::Instant;

use super::requests::TxnRequest;
use super::*;

const BACKOFF: Duration = Duration::from_millis(100);

fn tp(p: i32) -> TopicPartition {
    TopicPartition {
        topic: Arc::from("t"),
        partition: p,
    }
}

fn manager() -> TxnManager {
    TxnManager::new("tx", Duration::from_secs(60), BACKOFF)
}

fn send(m: &mut TxnManager, incomplete: bool, now: Instant) -> Outgoing {
    match m.next_request(incomplete, now) {
        Next::Send(o) => o,
        other => panic!("expected a request, got {other:?}"),
    }
}

fn init_answer(code: ErrorCode, id: i64, epoch: i16) -> ResponseBody {
    ResponseBody::InitProducerId(InitProducerIdResponse {
        error_code: code.0,
        producer_id: id,
        producer_epoch: epoch,
        ..Default::default()
    })
}

fn add_answer(parts: &[(i32, ErrorCode)]) -> ResponseBody {
    ResponseBody::AddPartitionsToTxn(AddPartitionsToTxnResponse {
        results_by_topic_v3_and_below: vec![
            add_partitions_to_txn_response::AddPartitionsToTxnTopicResult {
                name: KStr::from("t"),
                results_by_partition: parts
                    .iter()
                    .map(|(p, c)| {
                        add_partitions_to_txn_response::AddPartitionsToTxnPartitionResult {
                            partition_index: *p,
                            partition_error_code: c.0,
                            ..Default::default()
                        }
                    })
                    .collect(),
                ..Default::default()
            },
        ],
        ..Default::default()
    })
}

fn end_answer(code: ErrorCode) -> ResponseBody {
    ResponseBody::EndTxn(EndTxnResponse {
        error_code: code.0,
        ..Default::default()
    })
}

/// A manager in a transaction with producer 7/0 and partitions 0 and 1 added.
fn in_transaction(now: Instant) -> TxnManager {
    let mut m = manager();
    let r = m.init_transactions().unwrap();
    let o = send(&mut m, false, now);
    m.handle_response(o.token, 4, Ok(init_answer(ErrorCode::NONE, 7, 0)), now);
    assert!(matches!(r.get(), Some(Ok(()))));
    m.begin().unwrap();
    assert!(m.check_send(&tp(0)).unwrap());
    assert!(m.check_send(&tp(1)).unwrap());
    assert!(!m.check_send(&tp(0)).unwrap(), "a partition is added once");
    let o = send(&mut m, true, now);
    assert_eq!(
        o.request,
        TxnRequest::AddPartitions {
            partitions: [tp(0), tp(1)].into()
        }
    );
    m.handle_response(
        o.token,
        3,
        Ok(add_answer(&[(0, ErrorCode::NONE), (1, ErrorCode::NONE)])),
        now,
    );
    assert_eq!(*m.sendable_partitions(), [tp(0), tp(1)].into());
    m
}

#[test]
fn transitions_follow_the_java_table() {
    use TransactionState::*;
    let all = [
        Uninitialized,
        Initializing,
        Ready,
        InTransaction,
        CommittingTransaction,
        AbortingTransaction,
        AbortableError,
        FatalError,
    ];
    let legal = [
        (Ready, Uninitialized),
        (Uninitialized, Initializing),
        (AbortingTransaction, Initializing),
        (Initializing, Ready),
        (CommittingTransaction, Ready),
        (AbortingTransaction, Ready),
        (Ready, InTransaction),
        (InTransaction, CommittingTransaction),
        (InTransaction, AbortingTransaction),
        (AbortableError, AbortingTransaction),
        (InTransaction, AbortableError),
        (CommittingTransaction, AbortableError),
        (AbortableError, AbortableError),
    ];
    for from in all {
        for to in all {
            let want = to == FatalError || legal.contains(&(from, to));
            assert_eq!(from.can_move_to(to), want, "{from:?} -> {to:?}");
        }
    }
}

#[tokio::test]
async fn end_txn_waits_for_batches_and_goes_after_add_partitions() {
    let now = Instant::now();
    let mut m = in_transaction(now);
    assert!(m.check_send(&tp(2)).unwrap());
    let commit = m.begin_commit().unwrap();
    // The new partition goes first; EndTxn waits while batches are incomplete.
    let o = send(&mut m, true, now);
    assert!(matches!(o.request, TxnRequest::AddPartitions { .. }));
    assert!(
        matches!(m.next_request(true, now), Next::Idle),
        "one request at a time"
    );
    m.handle_response(o.token, 3, Ok(add_answer(&[(2, ErrorCode::NONE)])), now);
    assert!(matches!(m.next_request(true, now), Next::Idle));
    let o = send(&mut m, false, now);
    assert_eq!(o.request, TxnRequest::EndTxn { commit: true });
    assert_eq!(o.producer, (7, 0));
    let RequestBody::EndTxn(body) = o.body(3) else {
        panic!()
    };
    assert!(body.committed);
    assert_eq!(&*body.transactional_id, "tx");
    m.handle_response(o.token, 3, Ok(end_answer(ErrorCode::NONE)), now);
    assert!(matches!(commit.get(), Some(Ok(()))));
    assert_eq!(m.state(), TransactionState::Ready);
    assert!(m.sendable_partitions().is_empty());
}

#[tokio::test]
async fn retries_back_off_and_a_stale_answer_is_ignored() {
    let now = Instant::now();
    let mut m = manager();
    let r = m.init_transactions().unwrap();
    let o = send(&mut m, false, now);
    let h = m.handle_response(
        o.token,
        4,
        Ok(init_answer(ErrorCode::CONCURRENT_TRANSACTIONS, -1, -1)),
        now,
    );
    assert!(!h.relookup);
    match m.next_request(false, now) {
        Next::Wait(d) => assert_eq!(d, BACKOFF),
        other => panic!("{other:?}"),
    }
    let o = send(&mut m, false, now + BACKOFF);
    // An answer for another token changes nothing.
    m.handle_response(o.token + 1, 4, Ok(init_answer(ErrorCode::NONE, 1, 1)), now);
    assert!(!r.is_completed());
    let h = m.handle_response(
        o.token,
        4,
        Ok(init_answer(ErrorCode::NOT_COORDINATOR, -1, -1)),
        now,
    );
    assert!(h.relookup, "NOT_COORDINATOR looks the coordinator up again");
    let o = send(&mut m, false, now + BACKOFF * 2);
    let h = m.handle_response(o.token, 4, Err(NetError::Closed(None)), now);
    assert!(h.relookup, "a lost connection too");
    let o = send(&mut m, false, now + BACKOFF * 4);
    m.handle_response(o.token, 4, Ok(init_answer(ErrorCode::NONE, 9, 2)), now);
    assert!(matches!(r.get(), Some(Ok(()))));
    assert_eq!(m.producer(), Some((9, 2)));
}

#[tokio::test]
async fn a_repeated_call_waits_for_the_same_operation() {
    let now = Instant::now();
    let mut m = manager();
    let a = m.init_transactions().unwrap();
    let b = m.init_transactions().unwrap();
    let o = send(&mut m, false, now);
    assert!(matches!(m.next_request(false, now), Next::Idle));
    m.handle_response(o.token, 4, Ok(init_answer(ErrorCode::NONE, 1, 0)), now);
    assert!(matches!(a.get(), Some(Ok(()))));
    assert!(matches!(b.get(), Some(Ok(()))));
    // Done: a third call is a second init, which is not allowed.
    assert!(matches!(
        m.init_transactions(),
        Err(ProducerError::InvalidTransactionState { .. })
    ));
}

#[tokio::test]
async fn abortable_batch_error_then_abort_bumps_the_epoch() {
    let now = Instant::now();
    let mut m = in_transaction(now);
    let cause = ProducerError::Kafka {
        topic: "t".into(),
        partition: 0,
        code: ErrorCode::INVALID_RECORD,
        message: None,
    };
    m.on_batch_failed(&cause);
    assert_eq!(m.state(), TransactionState::AbortableError);
    assert!(m.abort_reason().is_some());
    assert!(m.check_send(&tp(0)).unwrap_err().is_abortable());
    assert!(m.begin_commit().unwrap_err().is_abortable());
    let abort = m.begin_abort().unwrap();
    let o = send(&mut m, false, now);
    assert_eq!(o.request, TxnRequest::EndTxn { commit: false });
    m.handle_response(o.token, 3, Ok(end_answer(ErrorCode::NONE)), now);
    assert_eq!(m.state(), TransactionState::Initializing);
    assert!(!abort.is_completed(), "the abort waits for the bump");
    let o = send(&mut m, false, now);
    assert_eq!(o.request, TxnRequest::InitProducerId { bump: Some((7, 0)) });
    let RequestBody::InitProducerId(body) = o.body(4) else {
        panic!()
    };
    assert_eq!((body.producer_id, body.producer_epoch), (7, 0));
    let RequestBody::InitProducerId(old) = o.body(2) else {
        panic!()
    };
    assert_eq!(
        (old.producer_id, old.producer_epoch),
        (-1, -1),
        "v2 cannot bump"
    );
    m.handle_response(o.token, 4, Ok(init_answer(ErrorCode::NONE, 7, 1)), now);
    assert!(matches!(abort.get(), Some(Ok(()))));
    assert_eq!(m.state(), TransactionState::Ready);
    assert_eq!(m.producer(), Some((7, 1)));
}

#[tokio::test]
async fn invalid_producer_id_mapping_skips_end_txn() {
    let now = Instant::now();
    let mut m = in_transaction(now);
    let offsets = [(tp(0), OffsetAndMetadata::new(3))].into_iter().collect();
    let r = m
        .send_offsets(offsets, ConsumerGroupMetadata::new("g"))
        .unwrap();
    let o = send(&mut m, false, now);
    m.handle_response(
        o.token,
        3,
        Ok(ResponseBody::AddOffsetsToTxn(AddOffsetsToTxnResponse {
            error_code: ErrorCode::INVALID_PRODUCER_ID_MAPPING.0,
            ..Default::default()
        })),
        now,
    );
    assert!(r.get().unwrap().unwrap_err().is_abortable());
    m.begin_abort().unwrap();
    let o = send(&mut m, false, now);
    assert_eq!(o.request, TxnRequest::InitProducerId { bump: Some((7, 0)) });
}

#[tokio::test]
async fn add_partitions_errors_by_class() {
    let now = Instant::now();
    // An unauthorized topic: abortable; the other partition is not added.
    let mut m = in_transaction(now);
    m.check_send(&tp(2)).unwrap();
    m.check_send(&tp(3)).unwrap();
    let o = send(&mut m, true, now);
    m.handle_response(
        o.token,
        3,
        Ok(add_answer(&[
            (2, ErrorCode::TOPIC_AUTHORIZATION_FAILED),
            (3, ErrorCode::OPERATION_NOT_ATTEMPTED),
        ])),
        now,
    );
    assert_eq!(m.state(), TransactionState::AbortableError);
    assert_eq!(*m.sendable_partitions(), [tp(0), tp(1)].into());
    // INVALID_TXN_STATE: fatal.
    let mut m = in_transaction(now);
    m.check_send(&tp(2)).unwrap();
    let o = send(&mut m, true, now);
    m.handle_response(
        o.token,
        3,
        Ok(add_answer(&[(2, ErrorCode::INVALID_TXN_STATE)])),
        now,
    );
    assert_eq!(m.state(), TransactionState::FatalError);
    assert!(m.fatal_error().unwrap().is_fatal());
    assert!(
        m.sendable_partitions().is_empty(),
        "nothing is sent once fatal"
    );
    // PRODUCER_FENCED: fenced.
    let mut m = in_transaction(now);
    m.check_send(&tp(2)).unwrap();
    let o = send(&mut m, true, now);
    m.handle_response(
        o.token,
        3,
        Ok(add_answer(&[(2, ErrorCode::PRODUCER_FENCED)])),
        now,
    );
    assert!(m.fatal_error().unwrap().is_fenced());
    assert!(m.begin_abort().unwrap_err().is_fenced());
}

#[tokio::test]
async fn partitions_written_while_one_add_is_queued_join_it() {
    let now = Instant::now();
    let mut m = in_transaction(now);
    m.check_send(&tp(2)).unwrap();
    let o = send(&mut m, true, now);
    m.handle_response(
        o.token,
        3,
        Ok(add_answer(&[(2, ErrorCode::CONCURRENT_TRANSACTIONS)])),
        now,
    );
    // Backing off: a new partition joins the queued request.
    m.check_send(&tp(3)).unwrap();
    assert!(matches!(m.next_request(true, now), Next::Wait(_)));
    let o = send(&mut m, true, now + BACKOFF);
    assert_eq!(
        o.request,
        TxnRequest::AddPartitions {
            partitions: [tp(2), tp(3)].into()
        }
    );
    let RequestBody::AddPartitionsToTxn(body) = o.body(3) else {
        panic!()
    };
    assert_eq!(body.v3_and_below_topics[0].partitions, vec![2, 3]);
    assert_eq!(
        o.version(0, 5),
        Some(3),
        "AddPartitionsToTxn v4+ is not for clients"
    );
    assert_eq!(o.version(4, 5), None);
}

#[tokio::test]
async fn a_first_add_refused_as_concurrent_backs_off_5_10_20_ms_then_retry_backoff() {
    // A transaction with no partition yet (the one before it is still completing).
    let now = Instant::now();
    let mut m = manager();
    let r = m.init_transactions().unwrap();
    let o = send(&mut m, false, now);
    m.handle_response(o.token, 4, Ok(init_answer(ErrorCode::NONE, 7, 0)), now);
    assert!(matches!(r.get(), Some(Ok(()))));
    m.begin().unwrap();
    assert!(m.check_send(&tp(2)).unwrap());
    let mut at = now;
    for wait in [5, 10, 20, 40, 80, 100, 100] {
        let o = send(&mut m, true, at);
        m.handle_response(
            o.token,
            3,
            Ok(add_answer(&[(2, ErrorCode::CONCURRENT_TRANSACTIONS)])),
            at,
        );
        let wait = Duration::from_millis(wait);
        assert!(
            matches!(m.next_request(true, at), Next::Wait(d) if d == wait),
            "expected a wait of {wait:?}, got {:?}",
            m.next_request(true, at)
        );
        at += wait;
    }
    // Accepted at last: the partition is in the transaction.
    let o = send(&mut m, true, at);
    m.handle_response(o.token, 3, Ok(add_answer(&[(2, ErrorCode::NONE)])), at);
    assert!(m.sendable_partitions().contains(&tp(2)));
}

#[tokio::test]
async fn close_fails_what_waits() {
    let now = Instant::now();
    let mut m = in_transaction(now);
    let r = m.begin_commit().unwrap();
    m.close();
    assert!(matches!(r.get(), Some(Err(ProducerError::Closed(_)))));
    let mut m = manager();
    let r = m.init_transactions().unwrap();
    let _out = send(&mut m, false, now);
    m.close();
    assert!(matches!(r.get(), Some(Err(ProducerError::Closed(_)))));
}
