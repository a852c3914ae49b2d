//! The transactional producer against scripted fake brokers (real sockets on 127.0.0.1):
//! the request sequence of init / commit / abort, partitions added as first written and in
//! one AddPartitionsToTxn when they come together, offsets committed in a transaction at the
//! group coordinator, and every error class: fenced (on a send, on EndTxn), abortable (a
//! failed send, then abort with an epoch bump, then a good transaction), retried
//! (CONCURRENT_TRANSACTIONS, NOT_COORDINATOR), and calls in the wrong state.
//!
//! The fake coordinator answers each api from a script of error codes (NONE once the script
//! is used up); its partitions check what a transactional producer must send: the
//! transactional attribute, the producer id and epoch of the latest InitProducerId, sequence
//! numbers from 0 per epoch, and only partitions added to the open transaction.
#![allow(clippy::unwrap_used)]

#[path = "../../kafka-net/tests/support/mod.rs"]
mod support;

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use kafka_producer::{
    ConsumerGroupMetadata, OffsetAndMetadata, Producer, ProducerConfig, ProducerError,
    ProducerRecord, TopicPartition, TransactionState,
};
use kafka_protocol::Request;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::*;
use kafka_protocol::record::RecordBatch;
use support::{Ctx, FakeCluster, Reply, Topic};

const TXN_ID: &str = "txn-1";
const GROUP: &str = "group-1";

/// What the fake coordinator and partitions know.
#[derive(Default)]
struct Coord {
    /// Error codes to answer, per api, in order; NONE when empty.
    script: HashMap<ApiKey, VecDeque<ErrorCode>>,
    /// Answer the next request of this api after this pause.
    slow: HashMap<ApiKey, Duration>,
    producer: (i64, i16),
    /// Partitions in the open transaction.
    in_txn: BTreeSet<(String, i32)>,
    /// Next sequence per partition for the current epoch.
    next_seq: BTreeMap<(String, i32), i32>,
    /// Records written per partition and how each transaction ended.
    written: Vec<(String, i32, Bytes)>,
    ended: Vec<bool>,
    /// Offsets committed by TxnOffsetCommit (pending until EndTxn).
    offsets: Vec<(String, String, i32, i64)>,
    problems: Vec<String>,
}

impl Coord {
    fn next_code(&mut self, api: ApiKey) -> ErrorCode {
        self.script
            .get_mut(&api)
            .and_then(VecDeque::pop_front)
            .unwrap_or(ErrorCode::NONE)
    }

    fn produce(&mut self, req: &ProduceRequest) -> ProduceResponse {
        let code = self.next_code(ApiKey::Produce);
        if req.transactional_id.as_deref() != Some(TXN_ID) {
            self.problems.push(format!(
                "Produce with transactional id {:?}",
                req.transactional_id
            ));
        }
        let mut responses = Vec::new();
        for t in &req.topic_data {
            let mut parts = Vec::new();
            for p in &t.partition_data {
                let key = (t.name.to_string(), p.index);
                let mut error = code;
                if code == ErrorCode::NONE {
                    error = self.append(&key, p.records.clone().unwrap());
                }
                parts.push(produce_response::PartitionProduceResponse {
                    index: p.index,
                    error_code: error.0,
                    base_offset: if error.is_ok() { 0 } else { -1 },
                    log_append_time_ms: -1,
                    ..Default::default()
                });
            }
            responses.push(produce_response::TopicProduceResponse {
                name: t.name.clone(),
                partition_responses: parts,
                ..Default::default()
            });
        }
        ProduceResponse {
            responses,
            ..Default::default()
        }
    }

    fn append(&mut self, key: &(String, i32), records: Bytes) -> ErrorCode {
        let batch = RecordBatch::from_bytes(records).unwrap();
        if !batch.is_transactional() {
            self.problems
                .push(format!("{key:?}: batch not transactional"));
        }
        if (batch.producer_id(), batch.producer_epoch()) != self.producer {
            self.problems.push(format!(
                "{key:?}: batch of producer {}/{}, coordinator has {:?}",
                batch.producer_id(),
                batch.producer_epoch(),
                self.producer
            ));
            return ErrorCode::INVALID_PRODUCER_EPOCH;
        }
        if !self.in_txn.contains(key) {
            self.problems.push(format!(
                "{key:?}: written before it was added to the transaction"
            ));
            return ErrorCode::INVALID_TXN_STATE;
        }
        let next = self.next_seq.entry(key.clone()).or_default();
        if batch.base_sequence() != *next {
            self.problems.push(format!(
                "{key:?}: sequence {} where {} was due",
                batch.base_sequence(),
                next
            ));
            return ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER;
        }
        *next += batch.records_count();
        for r in batch.records(1 << 20).unwrap() {
            self.written
                .push((key.0.clone(), key.1, r.unwrap().value.unwrap()));
        }
        ErrorCode::NONE
    }
}

fn handle(coord: &Mutex<Coord>, req: &Request) -> Option<Reply> {
    let mut c = coord.lock().unwrap();
    let api = req.api_key();
    let body = match &req.body {
        RequestBody::Produce(p) => ResponseBody::Produce(c.produce(p)),
        RequestBody::InitProducerId(r) => {
            let code = c.next_code(api);
            if code.is_ok() {
                c.producer = if r.producer_id >= 0 {
                    if (r.producer_id, r.producer_epoch) != c.producer {
                        let held = c.producer;
                        c.problems.push(format!(
                            "bump of {}/{} while the coordinator has {held:?}",
                            r.producer_id, r.producer_epoch
                        ));
                    }
                    (c.producer.0, c.producer.1 + 1)
                } else if c.producer.0 == 0 {
                    (4000, 0)
                } else {
                    (c.producer.0, c.producer.1 + 1)
                };
                c.next_seq.clear();
                c.in_txn.clear();
            }
            ResponseBody::InitProducerId(InitProducerIdResponse {
                error_code: code.0,
                producer_id: if code.is_ok() { c.producer.0 } else { -1 },
                producer_epoch: if code.is_ok() { c.producer.1 } else { -1 },
                ..Default::default()
            })
        }
        RequestBody::AddPartitionsToTxn(r) => {
            let code = c.next_code(api);
            let mut topics = Vec::new();
            for t in &r.v3_and_below_topics {
                let mut results = Vec::new();
                for p in &t.partitions {
                    if code.is_ok() {
                        c.in_txn.insert((t.name.to_string(), *p));
                    }
                    results.push(
                        add_partitions_to_txn_response::AddPartitionsToTxnPartitionResult {
                            partition_index: *p,
                            partition_error_code: code.0,
                            ..Default::default()
                        },
                    );
                }
                topics.push(
                    add_partitions_to_txn_response::AddPartitionsToTxnTopicResult {
                        name: t.name.clone(),
                        results_by_partition: results,
                        ..Default::default()
                    },
                );
            }
            ResponseBody::AddPartitionsToTxn(AddPartitionsToTxnResponse {
                results_by_topic_v3_and_below: topics,
                ..Default::default()
            })
        }
        RequestBody::AddOffsetsToTxn(_) => ResponseBody::AddOffsetsToTxn(AddOffsetsToTxnResponse {
            error_code: c.next_code(api).0,
            ..Default::default()
        }),
        RequestBody::TxnOffsetCommit(r) => {
            let code = c.next_code(api);
            let mut topics = Vec::new();
            for t in &r.topics {
                let mut parts = Vec::new();
                for p in &t.partitions {
                    if code.is_ok() {
                        c.offsets.push((
                            r.group_id.to_string(),
                            t.name.to_string(),
                            p.partition_index,
                            p.committed_offset,
                        ));
                    }
                    parts.push(
                        txn_offset_commit_response::TxnOffsetCommitResponsePartition {
                            partition_index: p.partition_index,
                            error_code: code.0,
                            ..Default::default()
                        },
                    );
                }
                topics.push(txn_offset_commit_response::TxnOffsetCommitResponseTopic {
                    name: t.name.clone(),
                    partitions: parts,
                    ..Default::default()
                });
            }
            ResponseBody::TxnOffsetCommit(TxnOffsetCommitResponse {
                topics,
                ..Default::default()
            })
        }
        RequestBody::EndTxn(r) => {
            let code = c.next_code(api);
            if code.is_ok() {
                c.ended.push(r.committed);
                c.in_txn.clear();
            }
            ResponseBody::EndTxn(EndTxnResponse {
                error_code: code.0,
                ..Default::default()
            })
        }
        _ => return None,
    };
    Some(match c.slow.remove(&api) {
        Some(d) => Reply::After(d, body),
        None => Reply::Send(body),
    })
}

async fn fake(coord: Arc<Mutex<Coord>>) -> FakeCluster {
    // `RUST_LOG=kafka_producer=debug` shows what the transaction manager does.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    let fake = FakeCluster::builder(2)
        .handler(move |_ctx: &Ctx, req: &Request| handle(&coord, req))
        .start()
        .await;
    fake.add_topic("t", Topic::led_by(&[1, 2, 1, 2]));
    // The transaction coordinator is broker 1, the group coordinator broker 2.
    fake.state().coordinators.insert(TXN_ID.into(), 1);
    fake.state().coordinators.insert(GROUP.into(), 2);
    fake
}

fn config(fake: &FakeCluster, extra: &[(&str, &str)]) -> ProducerConfig {
    let mut pairs: Vec<(String, String)> = vec![
        ("bootstrap.servers".into(), fake.bootstrap().join(",")),
        ("transactional.id".into(), TXN_ID.into()),
        ("transaction.timeout.ms".into(), "30000".into()),
        ("request.timeout.ms".into(), "2000".into()),
        ("retry.backoff.ms".into(), "10".into()),
        ("retry.backoff.max.ms".into(), "50".into()),
        ("max.block.ms".into(), "5000".into()),
        ("linger.ms".into(), "5".into()),
    ];
    pairs.extend(
        extra
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
    );
    ProducerConfig::from_pairs(pairs).unwrap()
}

fn record(partition: i32, value: &str) -> ProducerRecord {
    ProducerRecord::new("t", Bytes::from(value.to_owned())).partition(partition)
}

/// The transactional requests (everything but ApiVersions, Metadata and Produce) in order,
/// as (api, node).
fn txn_requests(fake: &FakeCluster) -> Vec<(ApiKey, i32)> {
    fake.state()
        .log
        .iter()
        .filter(|l| {
            !matches!(
                l.api(),
                ApiKey::ApiVersions | ApiKey::Metadata | ApiKey::Produce
            )
        })
        .map(|l| (l.api(), l.node))
        .collect()
}

fn problems(coord: &Mutex<Coord>, fake: &FakeCluster) {
    let p = coord.lock().unwrap().problems.clone();
    assert!(p.is_empty(), "the coordinator saw: {p:?}");
    fake.assert_clean();
}

async fn within<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(30), f)
        .await
        .expect("the test did not finish in time")
}

#[tokio::test(flavor = "current_thread")]
async fn init_commit_abort_commit_in_kafkas_request_order() {
    within(async {
        let coord = Arc::new(Mutex::new(Coord::default()));
        let fake = fake(coord.clone()).await;
        let p = Producer::new(config(&fake, &[])).await.unwrap();
        assert_eq!(p.transaction_state(), Some(TransactionState::Uninitialized));
        p.init_transactions().await.unwrap();
        assert_eq!(p.transaction_state(), Some(TransactionState::Ready));
        let init = fake.requests(ApiKey::InitProducerId);
        let r = body!(init[0].request, InitProducerId);
        assert_eq!(r.transactional_id.as_deref(), Some(TXN_ID));
        assert_eq!(r.transaction_timeout_ms, 30000);
        let find = fake.requests(ApiKey::FindCoordinator);
        let f = body!(find[0].request, FindCoordinator);
        assert_eq!(
            f.key_type, 1,
            "the transaction coordinator is looked up by key type 1"
        );

        // Transaction 1: three partitions written one after another, before the sender
        // runs (one thread): one AddPartitionsToTxn names them all.
        p.partitions_for("t").await.unwrap();
        p.begin_transaction().unwrap();
        let mut futs = Vec::new();
        for (i, part) in [0, 1, 2, 0].into_iter().enumerate() {
            futs.push(p.enqueue(record(part, &format!("a{i}"))).await.unwrap());
        }
        p.commit_transaction().await.unwrap();
        for f in futs {
            f.await.unwrap();
        }
        assert_eq!(p.transaction_state(), Some(TransactionState::Ready));
        let adds = fake.requests(ApiKey::AddPartitionsToTxn);
        assert_eq!(
            adds.len(),
            1,
            "one AddPartitionsToTxn for partitions that came together"
        );
        assert!(
            adds[0].version() <= 3,
            "clients send AddPartitionsToTxn v0-3"
        );
        let a = body!(adds[0].request, AddPartitionsToTxn);
        assert_eq!(&*a.v3_and_below_transactional_id, TXN_ID);
        assert_eq!(a.v3_and_below_topics[0].partitions, vec![0, 1, 2]);

        // Transaction 2: written, delivered, aborted.
        p.begin_transaction().unwrap();
        p.send(record(3, "b0")).await.unwrap();
        p.abort_transaction().await.unwrap();
        // Transaction 3: committed.
        p.begin_transaction().unwrap();
        p.send(record(1, "c0")).await.unwrap();
        p.commit_transaction().await.unwrap();
        // An empty transaction ends locally: nothing was added, nothing to end.
        p.begin_transaction().unwrap();
        p.commit_transaction().await.unwrap();

        use ApiKey::*;
        let seq: Vec<ApiKey> = txn_requests(&fake).into_iter().map(|(a, _)| a).collect();
        assert_eq!(
            seq,
            vec![
                FindCoordinator,
                InitProducerId,
                AddPartitionsToTxn,
                EndTxn,
                AddPartitionsToTxn,
                EndTxn,
                AddPartitionsToTxn,
                EndTxn
            ]
        );
        assert!(
            txn_requests(&fake)
                .iter()
                .filter(|(a, _)| *a != FindCoordinator)
                .all(|(_, node)| *node == 1),
            "every transactional request goes to the coordinator"
        );
        // EndTxn came after every Produce of its transaction was answered.
        let log = fake.state().log.clone();
        let first_end = log.iter().position(|l| l.api() == EndTxn).unwrap();
        let produces_before = log[..first_end]
            .iter()
            .filter(|l| l.api() == Produce)
            .count();
        assert!(
            produces_before >= 2,
            "transaction 1's batches precede its EndTxn"
        );
        {
            let c = coord.lock().unwrap();
            assert_eq!(c.ended, vec![true, false, true]);
            assert_eq!(c.written.len(), 6);
        }
        problems(&coord, &fake);
        p.close(Duration::from_secs(5)).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_in_the_wrong_state_are_refused() {
    within(async {
        let coord = Arc::new(Mutex::new(Coord::default()));
        let fake = fake(coord.clone()).await;
        let p = Producer::new(config(&fake, &[])).await.unwrap();
        let state_err = |r: Result<(), ProducerError>| {
            assert!(
                matches!(r, Err(ProducerError::InvalidTransactionState { .. })),
                "{r:?}"
            );
        };
        state_err(p.begin_transaction());
        let e = p.send(record(0, "x")).await.unwrap_err();
        assert!(
            matches!(e, ProducerError::InvalidTransactionState { .. }),
            "{e}"
        );
        p.init_transactions().await.unwrap();
        // A send outside a transaction fails.
        let e = p.send(record(0, "x")).await.unwrap_err();
        assert!(
            matches!(e, ProducerError::InvalidTransactionState { .. }),
            "{e}"
        );
        state_err(p.commit_transaction().await);
        state_err(p.abort_transaction().await);
        p.begin_transaction().unwrap();
        state_err(p.begin_transaction());
        state_err(p.init_transactions().await);
        p.abort_transaction().await.unwrap();
        assert_eq!(p.transaction_state(), Some(TransactionState::Ready));

        // A producer without transactional.id has no transactional calls.
        let plain = Producer::new(
            ProducerConfig::from_pairs([(
                "bootstrap.servers".to_owned(),
                fake.bootstrap().join(","),
            )])
            .unwrap(),
        )
        .await
        .unwrap();
        assert!(matches!(
            plain.begin_transaction(),
            Err(ProducerError::Config(_))
        ));
        assert!(plain.transaction_state().is_none());
        assert!(fake.requests(ApiKey::EndTxn).is_empty());
        problems(&coord, &fake);
        p.close(Duration::from_secs(5)).await;
        plain.close(Duration::from_secs(5)).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fenced_on_send_is_fatal_and_every_later_call_says_so() {
    within(async {
        let coord = Arc::new(Mutex::new(Coord::default()));
        let fake = fake(coord.clone()).await;
        let p = Producer::new(config(&fake, &[])).await.unwrap();
        p.init_transactions().await.unwrap();
        p.begin_transaction().unwrap();
        coord
            .lock()
            .unwrap()
            .script
            .insert(ApiKey::Produce, [ErrorCode::PRODUCER_FENCED].into());
        let e = p.send(record(0, "x")).await.unwrap_err();
        assert!(e.is_fenced(), "the record fails fenced: {e}");
        assert_eq!(p.transaction_state(), Some(TransactionState::FatalError));
        let e = p.commit_transaction().await.unwrap_err();
        assert!(e.is_fenced(), "{e}");
        let e = p.abort_transaction().await.unwrap_err();
        assert!(e.is_fenced(), "{e}");
        let e = p.send(record(1, "y")).await.unwrap_err();
        assert!(e.is_fenced() && e.is_fatal(), "{e}");
        assert!(fake.requests(ApiKey::EndTxn).is_empty());
        p.close(Duration::from_secs(5)).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fenced_on_end_txn_fails_the_commit_fenced() {
    within(async {
        let coord = Arc::new(Mutex::new(Coord::default()));
        let fake = fake(coord.clone()).await;
        let p = Producer::new(config(&fake, &[])).await.unwrap();
        p.init_transactions().await.unwrap();
        p.begin_transaction().unwrap();
        p.send(record(0, "x")).await.unwrap();
        coord
            .lock()
            .unwrap()
            .script
            .insert(ApiKey::EndTxn, [ErrorCode::PRODUCER_FENCED].into());
        let e = p.commit_transaction().await.unwrap_err();
        assert!(e.is_fenced(), "{e}");
        assert_eq!(p.transaction_state(), Some(TransactionState::FatalError));
        assert!(p.begin_transaction().unwrap_err().is_fenced());
        // INVALID_PRODUCER_EPOCH from the coordinator counts as fenced too.
        let coord2 = Arc::new(Mutex::new(Coord::default()));
        let fake2 = self::fake(coord2.clone()).await;
        let p2 = Producer::new(config(&fake2, &[])).await.unwrap();
        p2.init_transactions().await.unwrap();
        p2.begin_transaction().unwrap();
        p2.send(record(0, "x")).await.unwrap();
        coord2
            .lock()
            .unwrap()
            .script
            .insert(ApiKey::EndTxn, [ErrorCode::INVALID_PRODUCER_EPOCH].into());
        assert!(p2.commit_transaction().await.unwrap_err().is_fenced());
        p.close(Duration::from_secs(5)).await;
        p2.close(Duration::from_secs(5)).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abortable_send_error_then_abort_with_epoch_bump_then_a_good_transaction() {
    within(async {
        let coord = Arc::new(Mutex::new(Coord::default()));
        let fake = fake(coord.clone()).await;
        let p = Producer::new(config(&fake, &[])).await.unwrap();
        p.init_transactions().await.unwrap();
        p.begin_transaction().unwrap();
        p.send(record(0, "ok-1")).await.unwrap();
        coord
            .lock()
            .unwrap()
            .script
            .insert(ApiKey::Produce, [ErrorCode::INVALID_RECORD].into());
        let e = p.send(record(1, "bad")).await.unwrap_err();
        assert_eq!(e.code(), Some(ErrorCode::INVALID_RECORD), "{e}");
        assert_eq!(
            p.transaction_state(),
            Some(TransactionState::AbortableError)
        );
        // Sends and the commit fail abortable; nothing goes out for them.
        let e = p.send(record(0, "after")).await.unwrap_err();
        assert!(e.is_abortable() && !e.is_fatal(), "{e}");
        let e = p.commit_transaction().await.unwrap_err();
        assert!(e.is_abortable(), "{e}");
        assert!(fake.requests(ApiKey::EndTxn).is_empty());
        p.abort_transaction().await.unwrap();
        assert_eq!(p.transaction_state(), Some(TransactionState::Ready));
        // EndTxn(abort), then InitProducerId with the id and epoch held (KIP-360).
        let inits = fake.requests(ApiKey::InitProducerId);
        assert_eq!(inits.len(), 2);
        let bump = body!(inits[1].request, InitProducerId);
        assert_eq!((bump.producer_id, bump.producer_epoch), (4000, 0));
        let log = fake.state().log.clone();
        let end = log.iter().position(|l| l.api() == ApiKey::EndTxn).unwrap();
        let init2 = log
            .iter()
            .rposition(|l| l.api() == ApiKey::InitProducerId)
            .unwrap();
        assert!(end < init2, "EndTxn before the bump");
        // A good transaction with the new epoch, sequences from 0 again.
        p.begin_transaction().unwrap();
        p.send(record(0, "ok-2")).await.unwrap();
        p.send(record(1, "ok-3")).await.unwrap();
        p.commit_transaction().await.unwrap();
        {
            let c = coord.lock().unwrap();
            assert_eq!(c.producer, (4000, 1));
            assert_eq!(c.ended, vec![false, true]);
            let values: Vec<&[u8]> = c.written.iter().map(|w| &w.2[..]).collect();
            assert_eq!(values, vec![&b"ok-1"[..], b"ok-2", b"ok-3"]);
        }
        problems(&coord, &fake);
        p.close(Duration::from_secs(5)).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_transactions_and_not_coordinator_are_retried() {
    within(async {
        let coord = Arc::new(Mutex::new(Coord::default()));
        {
            let mut c = coord.lock().unwrap();
            use ErrorCode as E;
            c.script.insert(
                ApiKey::InitProducerId,
                [
                    E::CONCURRENT_TRANSACTIONS,
                    E::COORDINATOR_LOAD_IN_PROGRESS,
                    E::NOT_COORDINATOR,
                ]
                .into(),
            );
            c.script.insert(
                ApiKey::AddPartitionsToTxn,
                [E::CONCURRENT_TRANSACTIONS, E::CONCURRENT_TRANSACTIONS].into(),
            );
            c.script.insert(
                ApiKey::EndTxn,
                [
                    E::CONCURRENT_TRANSACTIONS,
                    E::NOT_COORDINATOR,
                    E::COORDINATOR_NOT_AVAILABLE,
                ]
                .into(),
            );
        }
        let fake = fake(coord.clone()).await;
        let p = Producer::new(config(&fake, &[])).await.unwrap();
        p.init_transactions().await.unwrap();
        p.begin_transaction().unwrap();
        p.send(record(2, "x")).await.unwrap();
        p.commit_transaction().await.unwrap();
        assert_eq!(fake.requests(ApiKey::InitProducerId).len(), 4);
        assert_eq!(fake.requests(ApiKey::AddPartitionsToTxn).len(), 3);
        assert_eq!(fake.requests(ApiKey::EndTxn).len(), 4);
        // NOT_COORDINATOR / COORDINATOR_NOT_AVAILABLE looked the coordinator up again.
        assert_eq!(fake.requests(ApiKey::FindCoordinator).len(), 4);
        assert_eq!(coord.lock().unwrap().ended, vec![true]);
        problems(&coord, &fake);
        p.close(Duration::from_secs(5)).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offsets_are_committed_at_the_group_coordinator_with_the_member() {
    within(async {
        let coord = Arc::new(Mutex::new(Coord::default()));
        let fake = fake(coord.clone()).await;
        let p = Producer::new(config(&fake, &[])).await.unwrap();
        p.init_transactions().await.unwrap();
        p.begin_transaction().unwrap();
        p.send(record(0, "x")).await.unwrap();
        let group = ConsumerGroupMetadata {
            group_id: GROUP.into(),
            generation_id: 7,
            member_id: "member-a".into(),
            group_instance_id: Some("instance-a".into()),
        };
        let tp = |part| TopicPartition {
            topic: "in".into(),
            partition: part,
        };
        p.send_offsets_to_transaction(
            [
                (tp(0), OffsetAndMetadata::new(42)),
                (tp(1), OffsetAndMetadata::new(7).with_leader_epoch(Some(3))),
            ],
            &group,
        )
        .await
        .unwrap();
        p.commit_transaction().await.unwrap();
        let seq = txn_requests(&fake);
        use ApiKey::*;
        let apis: Vec<ApiKey> = seq.iter().map(|(a, _)| *a).collect();
        assert_eq!(
            apis,
            vec![
                FindCoordinator,
                InitProducerId,
                AddPartitionsToTxn,
                AddOffsetsToTxn,
                FindCoordinator,
                TxnOffsetCommit,
                EndTxn
            ]
        );
        let find = fake.requests(FindCoordinator);
        assert_eq!(body!(find[1].request, FindCoordinator).key_type, 0);
        let commit = fake.requests(TxnOffsetCommit);
        assert_eq!(
            commit[0].node, 2,
            "TxnOffsetCommit goes to the group coordinator"
        );
        assert!(commit[0].version() >= 3);
        let r = body!(commit[0].request, TxnOffsetCommit);
        assert_eq!(r.generation_id_or_member_epoch, 7);
        assert_eq!(&*r.member_id, "member-a");
        assert_eq!(r.group_instance_id.as_deref(), Some("instance-a"));
        assert_eq!(&*r.transactional_id, TXN_ID);
        assert_eq!(r.producer_id, 4000);
        let parts = &r.topics[0].partitions;
        assert_eq!(
            (parts[1].committed_offset, parts[1].committed_leader_epoch),
            (7, 3)
        );
        let add = fake.requests(AddOffsetsToTxn);
        assert_eq!(&*body!(add[0].request, AddOffsetsToTxn).group_id, GROUP);
        assert_eq!(coord.lock().unwrap().offsets.len(), 2);
        problems(&coord, &fake);
        p.close(Duration::from_secs(5)).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_offset_commit_is_abortable() {
    within(async {
        let coord = Arc::new(Mutex::new(Coord::default()));
        coord.lock().unwrap().script.insert(
            ApiKey::TxnOffsetCommit,
            [ErrorCode::ILLEGAL_GENERATION].into(),
        );
        let fake = fake(coord.clone()).await;
        let p = Producer::new(config(&fake, &[])).await.unwrap();
        p.init_transactions().await.unwrap();
        p.begin_transaction().unwrap();
        let e = p
            .send_offsets_to_transaction(
                [(
                    TopicPartition {
                        topic: "in".into(),
                        partition: 0,
                    },
                    OffsetAndMetadata::new(1),
                )],
                &ConsumerGroupMetadata::new(GROUP),
            )
            .await
            .unwrap_err();
        assert!(e.is_abortable(), "{e}");
        assert_eq!(e.code(), Some(ErrorCode::ILLEGAL_GENERATION));
        p.abort_transaction().await.unwrap();
        // AddOffsetsToTxn started the transaction at the coordinator: EndTxn(abort) ends it.
        assert_eq!(coord.lock().unwrap().ended, vec![false]);
        p.begin_transaction().unwrap();
        p.send(record(0, "after")).await.unwrap();
        p.commit_transaction().await.unwrap();
        problems(&coord, &fake);
        p.close(Duration::from_secs(5)).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abort_fails_records_not_sent_yet() {
    within(async {
        let coord = Arc::new(Mutex::new(Coord::default()));
        let fake = fake(coord.clone()).await;
        let p = Producer::new(config(&fake, &[])).await.unwrap();
        p.init_transactions().await.unwrap();
        p.begin_transaction().unwrap();
        // The partitions are not in the transaction before the (slow) answer: the records
        // wait in the accumulator when the abort comes.
        coord
            .lock()
            .unwrap()
            .slow
            .insert(ApiKey::AddPartitionsToTxn, Duration::from_millis(500));
        let mut futs = Vec::new();
        for i in 0..10 {
            futs.push(p.enqueue(record(i % 4, &format!("v{i}"))).await.unwrap());
        }
        // Abort once the AddPartitionsToTxn is out (its answer is what is slow).
        for _ in 0..400 {
            if !fake.requests(ApiKey::AddPartitionsToTxn).is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(fake.requests(ApiKey::AddPartitionsToTxn).len(), 1);
        p.abort_transaction().await.unwrap();
        for f in futs {
            let e = f.await.unwrap_err();
            assert!(matches!(e, ProducerError::TransactionAborted(_)), "{e}");
        }
        assert!(fake.requests(ApiKey::Produce).is_empty());
        assert_eq!(coord.lock().unwrap().ended, vec![false]);
        p.begin_transaction().unwrap();
        p.send(record(0, "next")).await.unwrap();
        p.commit_transaction().await.unwrap();
        problems(&coord, &fake);
        p.close(Duration::from_secs(5)).await;
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn init_times_out_after_max_block_and_a_second_call_picks_it_up() {
    within(async {
        let coord = Arc::new(Mutex::new(Coord::default()));
        coord.lock().unwrap().script.insert(
            ApiKey::InitProducerId,
            std::iter::repeat_n(ErrorCode::COORDINATOR_LOAD_IN_PROGRESS, 40).collect(),
        );
        let fake = fake(coord.clone()).await;
        let p = Producer::new(config(&fake, &[("max.block.ms", "200")]))
            .await
            .unwrap();
        let e = p.init_transactions().await.unwrap_err();
        assert!(matches!(e, ProducerError::TransactionTimeout { .. }), "{e}");
        assert_eq!(p.transaction_state(), Some(TransactionState::Initializing));
        let mut done = false;
        for _ in 0..100 {
            match p.init_transactions().await {
                Ok(()) => {
                    done = true;
                    break;
                }
                Err(ProducerError::TransactionTimeout { .. }) => {}
                Err(e) => panic!("{e}"),
            }
        }
        assert!(done);
        assert_eq!(fake.requests(ApiKey::InitProducerId).len(), 41);
        p.close(Duration::from_secs(5)).await;
    })
    .await;
}
