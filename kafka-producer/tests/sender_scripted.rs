//! The producer against scripted fake brokers that inject faults: NOT_LEADER answers,
//! connections closed before or after the append, answers later than the request timeout,
//! lost producer state, fencing, a broker that never answers. Checks what the seeds require:
//! every future resolves, per-partition order holds, and with idempotence nothing is written
//! twice. Also adaptive partitioning: with `partitioner.availability.timeout.ms`, records
//! without a key stop going to a broker that takes nothing.
//!
//! The fake brokers (shared with kafka-net's tests) answer ApiVersions and Metadata; the
//! handler here plays a partition log with Kafka's idempotence rules (sequence numbers per
//! producer id and epoch, the last five batches remembered for de-duplication).
#![allow(clippy::unwrap_used)]

#[path = "../../kafka-net/tests/support/mod.rs"]
mod support;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use kafka_producer::{
    Acks, DeliveryFuture, Producer, ProducerConfig, ProducerError, ProducerRecord,
};
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::*;
use kafka_protocol::record::RecordBatch;
use kafka_protocol::{KStr, Request};
use support::{Ctx, FakeCluster, Reply, Topic};

/// A fault for one produce request (by arrival number, from 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    /// Every partition answers NOT_LEADER_OR_FOLLOWER; nothing is appended.
    NotLeader,
    /// The connection closes before anything is appended.
    Close,
    /// The records are appended, then the connection closes (the answer is lost).
    AppendThenClose,
    /// The records are appended; the answer comes after the client's request timeout.
    Slow,
    /// Every partition answers UNKNOWN_PRODUCER_ID (the broker lost the producer's state).
    UnknownProducer,
    /// Every partition answers PRODUCER_FENCED.
    Fenced,
    /// No answer for a minute.
    Stall,
}

#[derive(Default)]
struct PartLog {
    values: Vec<Bytes>,
    producer: Option<(i64, i16)>,
    next_seq: i32,
    /// (first sequence, last sequence, base offset) of the last five batches.
    recent: VecDeque<(i32, i32, i64)>,
}

#[derive(Default)]
struct FakeLog {
    parts: BTreeMap<(String, i32), PartLog>,
    produces: usize,
    faults: HashMap<usize, Fault>,
    /// Topics whose every produce answers NOT_LEADER_OR_FOLLOWER.
    stuck: Vec<String>,
    next_producer_id: i64,
    init_requests: Vec<(i64, i16)>,
}

impl FakeLog {
    fn produce(&mut self, req: &ProduceRequest, fault: Option<Fault>) -> ProduceResponse {
        let mut responses = Vec::new();
        for t in &req.topic_data {
            let mut parts = Vec::new();
            for p in &t.partition_data {
                let (code, base) = self.append(&t.name, p, fault);
                parts.push(produce_response::PartitionProduceResponse {
                    index: p.index,
                    error_code: code.0,
                    base_offset: base,
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

    fn append(
        &mut self,
        topic: &KStr,
        p: &produce_request::PartitionProduceData,
        fault: Option<Fault>,
    ) -> (ErrorCode, i64) {
        match fault {
            Some(Fault::NotLeader) => return (ErrorCode::NOT_LEADER_OR_FOLLOWER, -1),
            Some(Fault::UnknownProducer) => return (ErrorCode::UNKNOWN_PRODUCER_ID, -1),
            Some(Fault::Fenced) => return (ErrorCode::PRODUCER_FENCED, -1),
            _ => {}
        }
        if self.stuck.iter().any(|s| **s == **topic) {
            return (ErrorCode::NOT_LEADER_OR_FOLLOWER, -1);
        }
        let batch = RecordBatch::from_bytes(p.records.clone().unwrap()).unwrap();
        batch.verify_crc().unwrap();
        let values: Vec<Bytes> = batch
            .records(1 << 24)
            .unwrap()
            .map(|r| r.unwrap().value.unwrap())
            .collect();
        let log = self.parts.entry((topic.to_string(), p.index)).or_default();
        let pid = batch.producer_id();
        if pid >= 0 {
            let who = (pid, batch.producer_epoch());
            let first = batch.base_sequence();
            let last = first + values.len() as i32 - 1;
            if log.producer != Some(who) {
                // A new producer or epoch starts at sequence 0.
                if first != 0 {
                    return (ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER, -1);
                }
                log.producer = Some(who);
                log.next_seq = 0;
                log.recent.clear();
            }
            if let Some(&(_, _, base)) = log
                .recent
                .iter()
                .find(|(f, l, _)| *f == first && *l == last)
            {
                // A retry of a batch already written: answer as the first time.
                return (ErrorCode::NONE, base);
            }
            if first != log.next_seq {
                return (ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER, -1);
            }
            log.next_seq = last + 1;
            let base = log.values.len() as i64;
            log.recent.push_back((first, last, base));
            if log.recent.len() > 5 {
                log.recent.pop_front();
            }
        }
        let base = log.values.len() as i64;
        log.values.extend(values);
        (ErrorCode::NONE, base)
    }
}

async fn fake(partitions: usize, log: Arc<Mutex<FakeLog>>) -> FakeCluster {
    // `RUST_LOG=kafka_producer=debug` shows what the sender does.
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_test_writer()
        .try_init();
    let handler_log = log.clone();
    let fake = FakeCluster::builder(2)
        .handler(move |_ctx: &Ctx, req: &Request| handle(&handler_log, req))
        .start()
        .await;
    let leaders: Vec<i32> = (0..partitions).map(|p| 1 + (p % 2) as i32).collect();
    fake.add_topic("t", Topic::led_by(&leaders));
    fake.add_topic("stuck", Topic::led_by(&[1]));
    fake
}

fn handle(log: &Mutex<FakeLog>, req: &Request) -> Option<Reply> {
    match &req.body {
        RequestBody::Produce(p) => {
            let mut log = log.lock().unwrap();
            let n = log.produces;
            log.produces += 1;
            let fault = log.faults.get(&n).copied();
            match fault {
                Some(Fault::Close) => return Some(Reply::Close),
                Some(Fault::Stall) => {
                    let resp = log.produce(p, Some(Fault::NotLeader));
                    return Some(Reply::After(
                        Duration::from_secs(60),
                        ResponseBody::Produce(resp),
                    ));
                }
                _ => {}
            }
            let resp = log.produce(p, fault);
            Some(match fault {
                Some(Fault::AppendThenClose) => Reply::Close,
                Some(Fault::Slow) => {
                    Reply::After(Duration::from_secs(2), ResponseBody::Produce(resp))
                }
                _ => Reply::Send(ResponseBody::Produce(resp)),
            })
        }
        RequestBody::InitProducerId(r) => {
            let mut log = log.lock().unwrap();
            log.init_requests.push((r.producer_id, r.producer_epoch));
            let (id, epoch) = if r.producer_id >= 0 {
                (r.producer_id, r.producer_epoch + 1)
            } else {
                log.next_producer_id += 1;
                (1000 + log.next_producer_id, 0)
            };
            Some(Reply::Send(ResponseBody::InitProducerId(
                InitProducerIdResponse {
                    producer_id: id,
                    producer_epoch: epoch,
                    ..Default::default()
                },
            )))
        }
        _ => None,
    }
}

fn config(fake: &FakeCluster, extra: &[(&str, &str)]) -> ProducerConfig {
    let mut pairs: Vec<(String, String)> = vec![
        ("bootstrap.servers".into(), fake.bootstrap().join(",")),
        ("request.timeout.ms".into(), "1000".into()),
        ("retry.backoff.ms".into(), "10".into()),
        ("retry.backoff.max.ms".into(), "50".into()),
        ("reconnect.backoff.ms".into(), "10".into()),
        ("reconnect.backoff.max.ms".into(), "50".into()),
        ("max.block.ms".into(), "3000".into()),
        ("linger.ms".into(), "2".into()),
        ("batch.size".into(), "2048".into()),
    ];
    pairs.extend(
        extra
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
    );
    ProducerConfig::from_pairs(pairs).unwrap()
}

/// Sends `count` records round robin over `partitions` partitions of "t"; returns the
/// futures with the partition and value of each.
async fn send_all(
    p: &Producer,
    count: usize,
    partitions: usize,
) -> Vec<(i32, Bytes, DeliveryFuture)> {
    let mut out = Vec::new();
    for i in 0..count {
        let part = (i % partitions) as i32;
        let value = Bytes::from(format!("record-{i:06}-{}", "x".repeat(i % 50)));
        let rec = ProducerRecord::new("t", value.clone()).partition(part);
        out.push((part, value, p.enqueue(rec).await.unwrap()));
        if i % 97 == 0 {
            tokio::task::yield_now().await;
        }
    }
    out
}

/// Waits for every future; checks each succeeded and that each partition's log holds
/// exactly what was sent to it, in order (no loss, no duplicate, no reordering).
async fn check_exactly_once(
    log: &Mutex<FakeLog>,
    sent: Vec<(i32, Bytes, DeliveryFuture)>,
    partitions: usize,
) {
    let mut expected: BTreeMap<i32, Vec<Bytes>> = BTreeMap::new();
    for (part, value, fut) in sent {
        let md = tokio::time::timeout(Duration::from_secs(60), fut)
            .await
            .expect("a delivery future never resolved")
            .unwrap_or_else(|e| panic!("record {value:?} failed: {e}"));
        assert_eq!(md.partition, part);
        let list = expected.entry(part).or_default();
        // The offset the producer reports is where the record really is.
        assert_eq!(md.offset, list.len() as i64, "offset of {value:?}");
        list.push(value);
    }
    let log = log.lock().unwrap();
    for p in 0..partitions as i32 {
        let got = &log.parts[&("t".to_owned(), p)].values;
        let want = &expected[&p];
        assert_eq!(got.len(), want.len(), "partition {p}: record count");
        assert!(
            got == want,
            "partition {p}: records differ or are out of order"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idempotent_producer_survives_faults_exactly_once_in_order() {
    let log = Arc::new(Mutex::new(FakeLog::default()));
    {
        let mut l = log.lock().unwrap();
        for (n, f) in [
            (3, Fault::NotLeader),
            (6, Fault::Close),
            (9, Fault::AppendThenClose),
            (13, Fault::Slow),
            (17, Fault::NotLeader),
            (18, Fault::AppendThenClose),
            (25, Fault::Close),
        ] {
            l.faults.insert(n, f);
        }
    }
    let fake = fake(6, log.clone()).await;
    let p = Producer::new(config(&fake, &[])).await.unwrap();
    assert!(p.config().enable_idempotence);
    let sent = send_all(&p, 3000, 6).await;
    check_exactly_once(&log, sent, 6).await;
    let m = p.metrics();
    assert!(m.records_retried > 0, "no retry happened: {m:?}");
    assert_eq!(m.records_sent, 3000);
    assert_eq!(m.records_errored, 0);
    p.close(Duration::from_secs(5)).await;
    // Every produce request carried 2 partitions at most (one batch per partition).
    for r in fake.requests(ApiKey::Produce) {
        let RequestBody::Produce(pr) = &r.request.body else {
            unreachable!()
        };
        for t in &pr.topic_data {
            let mut idx: Vec<i32> = t.partition_data.iter().map(|d| d.index).collect();
            idx.dedup();
            assert_eq!(
                idx.len(),
                t.partition_data.len(),
                "two batches of one partition"
            );
        }
    }
    fake.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_producer_state_bumps_the_epoch_and_renumbers() {
    let log = Arc::new(Mutex::new(FakeLog::default()));
    log.lock().unwrap().faults.insert(8, Fault::UnknownProducer);
    let fake = fake(4, log.clone()).await;
    let p = Producer::new(config(&fake, &[])).await.unwrap();
    let sent = send_all(&p, 2000, 4).await;
    check_exactly_once(&log, sent, 4).await;
    let inits = log.lock().unwrap().init_requests.clone();
    // The first InitProducerId asks for a new id; the second bumps the epoch of that id.
    assert_eq!(inits.len(), 2, "{inits:?}");
    assert_eq!(inits[0], (-1, -1));
    assert_eq!(inits[1], (1001, 0));
    p.close(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_in_flight_without_idempotence_keeps_order() {
    let log = Arc::new(Mutex::new(FakeLog::default()));
    {
        let mut l = log.lock().unwrap();
        for (n, f) in [
            (2, Fault::NotLeader),
            (5, Fault::Close),
            (9, Fault::NotLeader),
        ] {
            l.faults.insert(n, f);
        }
    }
    let fake = fake(3, log.clone()).await;
    let cfg = config(
        &fake,
        &[
            ("enable.idempotence", "false"),
            ("acks", "1"),
            ("max.in.flight.requests.per.connection", "1"),
        ],
    );
    assert_eq!(cfg.acks, Acks::Leader);
    let p = Producer::new(cfg).await.unwrap();
    let sent = send_all(&p, 1500, 3).await;
    check_exactly_once(&log, sent, 3).await;
    // No producer id was asked for.
    assert!(log.lock().unwrap().init_requests.is_empty());
    p.close(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn records_for_a_partition_without_a_working_leader_expire() {
    let log = Arc::new(Mutex::new(FakeLog::default()));
    log.lock().unwrap().stuck.push("stuck".into());
    let fake = fake(2, log.clone()).await;
    let cfg = config(
        &fake,
        &[("delivery.timeout.ms", "1500"), ("linger.ms", "0")],
    );
    let p = Producer::new(cfg).await.unwrap();
    let mut futs = Vec::new();
    for i in 0..10 {
        let rec = ProducerRecord::new("stuck", Bytes::from(format!("v{i}")));
        futs.push(p.enqueue(rec).await.unwrap());
    }
    for f in futs {
        let e = tokio::time::timeout(Duration::from_secs(20), f)
            .await
            .expect("an expiring record never resolved")
            .unwrap_err();
        match &e {
            ProducerError::DeliveryTimeout { reason, .. } => {
                let r = reason.as_deref().unwrap_or_default();
                assert!(r.contains("NOT_LEADER_OR_FOLLOWER"), "{e}");
            }
            other => panic!("expected a delivery timeout, got {other}"),
        }
    }
    assert_eq!(p.metrics().records_errored, 10);
    p.close(Duration::from_secs(5)).await;
}

/// A leader that cannot be reached (killed, say) sends the producer back to the metadata, so
/// records go to the partition's new leader once the cluster names one, not after
/// `metadata.max.age.ms` (5 minutes here).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_leader_makes_the_producer_look_up_the_new_one() {
    let log = Arc::new(Mutex::new(FakeLog::default()));
    let fake = fake(1, log.clone()).await;
    // Broker 3 is advertised where nothing listens, and leads "moving".
    let dead = support::dead_addr();
    let (host, port) = dead.rsplit_once(':').unwrap();
    fake.state()
        .brokers
        .insert(3, (host.to_owned(), port.parse().unwrap()));
    fake.add_topic("moving", Topic::led_by(&[3]));
    let cfg = config(
        &fake,
        &[
            ("acks", "all"),
            ("linger.ms", "0"),
            ("delivery.timeout.ms", "60000"),
            ("metadata.max.age.ms", "300000"),
        ],
    );
    let p = Producer::new(cfg).await.unwrap();
    assert_eq!(p.partitions_for("moving").await.unwrap()[0].leader, 3);
    // The cluster moves the leadership to broker 1; the producer has not looked yet.
    fake.add_topic("moving", Topic::led_by(&[1]));
    let rec = ProducerRecord::new("moving", Bytes::from_static(b"after")).partition(0);
    let md = tokio::time::timeout(Duration::from_secs(30), p.send(rec))
        .await
        .expect("the record waited for the metadata's maximum age")
        .unwrap();
    assert_eq!((md.partition, md.offset), (0, 0));
    let produces = fake.requests(ApiKey::Produce);
    assert!(!produces.is_empty() && produces.iter().all(|r| r.node == 1));
    assert_eq!(
        log.lock().unwrap().parts[&("moving".to_owned(), 0)].values,
        vec![Bytes::from_static(b"after")]
    );
    p.close(Duration::from_secs(5)).await;
    fake.assert_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn close_never_hangs_on_a_broker_that_does_not_answer() {
    let log = Arc::new(Mutex::new(FakeLog::default()));
    {
        let mut l = log.lock().unwrap();
        for n in 0..100 {
            l.faults.insert(n, Fault::Stall);
        }
    }
    let fake = fake(2, log.clone()).await;
    let cfg = config(&fake, &[("request.timeout.ms", "30000")]);
    let p = Producer::new(cfg).await.unwrap();
    let mut futs = Vec::new();
    for i in 0..50 {
        let rec = ProducerRecord::new("t", Bytes::from(format!("v{i}"))).partition(i % 2);
        futs.push(p.enqueue(rec).await.unwrap());
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = std::time::Instant::now();
    p.close(Duration::from_millis(500)).await;
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "close took {:?}",
        started.elapsed()
    );
    for f in futs {
        let r = tokio::time::timeout(Duration::from_secs(5), f)
            .await
            .expect("a record was left unresolved by close");
        assert!(matches!(r, Err(ProducerError::Closed(_))), "{r:?}");
    }
    // After close, sends fail at once.
    let e = p
        .enqueue(ProducerRecord::new("t", Bytes::from_static(b"late")))
        .await
        .unwrap_err();
    assert!(matches!(e, ProducerError::Closed(_)), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fenced_producer_fails_its_records_and_later_ones() {
    let log = Arc::new(Mutex::new(FakeLog::default()));
    log.lock().unwrap().faults.insert(0, Fault::Fenced);
    let fake = fake(1, log.clone()).await;
    let p = Producer::new(config(&fake, &[])).await.unwrap();
    let first = p
        .send(ProducerRecord::new("t", Bytes::from_static(b"a")))
        .await
        .unwrap_err();
    assert_eq!(first.code(), Some(ErrorCode::PRODUCER_FENCED), "{first}");
    let later = p
        .send(ProducerRecord::new("t", Bytes::from_static(b"b")))
        .await
        .unwrap_err();
    assert!(
        matches!(later, ProducerError::Fatal(_)),
        "a fenced producer went on sending: {later}"
    );
    p.close(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acks_zero_completes_on_write_with_unknown_offsets() {
    let log = Arc::new(Mutex::new(FakeLog::default()));
    let fake = fake(2, log.clone()).await;
    let cfg = config(&fake, &[("acks", "0"), ("enable.idempotence", "false")]);
    let p = Producer::new(cfg).await.unwrap();
    let mut futs = Vec::new();
    for i in 0..200 {
        let rec = ProducerRecord::new("t", Bytes::from(format!("v{i}"))).partition(i % 2);
        futs.push(p.enqueue(rec).await.unwrap());
    }
    for f in futs {
        assert_eq!(f.await.unwrap().offset, -1);
    }
    p.flush().await;
    p.close(Duration::from_secs(5)).await;
    // The brokers get everything anyway (they answer nothing with acks=0, so wait for them
    // to have read it).
    let mut total = 0;
    for _ in 0..100 {
        total = log
            .lock()
            .unwrap()
            .parts
            .values()
            .map(|p| p.values.len())
            .sum();
        if total == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(total, 200);
    for r in fake.requests(ApiKey::Produce) {
        let RequestBody::Produce(pr) = &r.request.body else {
            unreachable!()
        };
        assert_eq!(pr.acks, 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_topic_times_out_after_max_block() {
    let log = Arc::new(Mutex::new(FakeLog::default()));
    let fake = fake(1, log).await;
    let cfg = config(&fake, &[("max.block.ms", "300")]);
    let p = Producer::new(cfg).await.unwrap();
    let e = p
        .enqueue(ProducerRecord::new("missing", Bytes::from_static(b"x")))
        .await
        .unwrap_err();
    assert!(matches!(e, ProducerError::MetadataTimeout { .. }), "{e}");
    // An explicit partition outside the topic is refused.
    let e = p
        .enqueue(ProducerRecord::new("t", Bytes::from_static(b"x")).partition(5))
        .await
        .unwrap_err();
    assert!(matches!(e, ProducerError::UnknownPartition { .. }), "{e}");
    p.close(Duration::from_secs(5)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_records_go_through_the_serializers() {
    use kafka_producer::serializer::{LongSerializer, StringSerializer};
    use kafka_producer::{Header, TypedProducer, TypedRecord};

    let log = Arc::new(Mutex::new(FakeLog::default()));
    let fake = fake(1, log.clone()).await;
    let p = Producer::new(config(&fake, &[])).await.unwrap();
    let typed: TypedProducer<str, i64> = TypedProducer::new(p, StringSerializer, LongSerializer);
    let md = typed
        .send(
            TypedRecord::new("t", &-2i64)
                .key("user-7")
                .timestamp(1_700_000_000_123)
                .header(Header {
                    key: "h".into(),
                    value: Some(Bytes::from_static(b"x")),
                }),
        )
        .await
        .unwrap();
    assert_eq!(md.offset, 0);
    assert_eq!(md.timestamp, 1_700_000_000_123);
    assert_eq!(md.serialized_key_size, 6);
    assert_eq!(md.serialized_value_size, 8);
    let value = log.lock().unwrap().parts[&("t".to_owned(), 0)].values[0].clone();
    assert_eq!(&value[..], &(-2i64).to_be_bytes());
    let produce = fake.requests(ApiKey::Produce);
    let RequestBody::Produce(pr) = &produce[0].request.body else {
        unreachable!()
    };
    let records = pr.topic_data[0].partition_data[0].records.clone().unwrap();
    let batch = RecordBatch::from_bytes(records).unwrap();
    let r = batch.records(1 << 20).unwrap().next().unwrap().unwrap();
    assert_eq!(r.key.as_deref(), Some(&b"user-7"[..]));
    assert_eq!(&r.headers[0].key[..], "h");
    typed.producer().close(Duration::from_secs(5)).await;
}

// ---------------------------------------------------------------------------------------------
// Adaptive partitioning (KIP-794): records without a key and a slow or stalled broker
// ---------------------------------------------------------------------------------------------

/// Two brokers; "t" has 8 partitions led alternately by broker 1 and broker 2 (odd
/// partitions); broker 2 answers each Produce after `delay` (one answer at a time, as a
/// Kafka connection does), broker 1 at once.
async fn slow_second_broker(delay: Duration) -> (FakeCluster, Arc<Mutex<FakeLog>>) {
    let log = Arc::new(Mutex::new(FakeLog::default()));
    let handler_log = log.clone();
    let fake = FakeCluster::builder(2)
        .handler(move |ctx: &Ctx, req: &Request| match &req.body {
            RequestBody::Produce(p) => {
                let resp = ResponseBody::Produce(handler_log.lock().unwrap().produce(p, None));
                Some(if ctx.node == 2 {
                    Reply::After(delay, resp)
                } else {
                    Reply::Send(resp)
                })
            }
            _ => handle(&handler_log, req),
        })
        .start()
        .await;
    fake.add_topic("t", Topic::led_by(&[1, 2, 1, 2, 1, 2, 1, 2]));
    (fake, log)
}

/// Sends `count` records of 100 bytes without a key to "t", `per_tick` every 10 ms; when
/// each was sent (after the first) and its future.
async fn send_paced(
    p: &Producer,
    count: usize,
    per_tick: usize,
) -> Vec<(Duration, DeliveryFuture)> {
    let start = tokio::time::Instant::now();
    let mut out = Vec::with_capacity(count);
    let mut tick = tokio::time::interval(Duration::from_millis(10));
    for i in 0..count {
        if i % per_tick == 0 {
            tick.tick().await;
        }
        let rec = ProducerRecord::new("t", Bytes::from(vec![b'v'; 100]));
        out.push((start.elapsed(), p.enqueue(rec).await.unwrap()));
    }
    out
}

/// Broker 2 stalls (answers Produce after a minute); 1,200 records without a key go over
/// one second. Returns how many records sent after the first 400 ms went to broker 2's
/// partitions (they fail with a delivery timeout naming their partition; broker 1's
/// succeed).
async fn late_records_on_a_stalled_broker(settings: &[(&str, &str)]) -> usize {
    let (fake, _log) = slow_second_broker(Duration::from_secs(60)).await;
    let mut pairs = vec![
        ("acks", "1"),
        ("linger.ms", "5"),
        ("request.timeout.ms", "2000"),
        ("delivery.timeout.ms", "2500"),
    ];
    pairs.extend_from_slice(settings);
    let p = Producer::new(config(&fake, &pairs)).await.unwrap();
    let sent = send_paced(&p, 1200, 12).await;
    let mut late_on_stalled = 0;
    for (at, f) in sent {
        let partition = match tokio::time::timeout(Duration::from_secs(30), f)
            .await
            .expect("a record never completed")
        {
            Ok(md) => {
                assert_eq!(md.partition % 2, 0, "broker 2 acknowledged a record");
                md.partition
            }
            Err(ProducerError::DeliveryTimeout { partition, .. }) => {
                assert_eq!(partition % 2, 1, "a record to broker 1 timed out");
                partition
            }
            Err(e) => panic!("unexpected failure: {e}"),
        };
        if at >= Duration::from_millis(400) && partition % 2 == 1 {
            late_on_stalled += 1;
        }
    }
    p.close(Duration::from_secs(5)).await;
    late_on_stalled
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_that_takes_nothing_gets_no_new_records_after_the_availability_timeout() {
    // With `partitioner.availability.timeout.ms`, the sender stops offering broker 2's
    // partitions once it has had batches waiting for 100 ms without a request going out
    // (its five requests in flight never come back).
    let excluded = late_records_on_a_stalled_broker(&[
        ("partitioner.adaptive.partitioning.enable", "true"),
        ("partitioner.availability.timeout.ms", "100"),
    ])
    .await;
    // Without adaptive partitioning the sticky partitioner keeps choosing them (each choice
    // moves on after one record, as the record opens a batch behind queued ones).
    let uniform =
        late_records_on_a_stalled_broker(&[("partitioner.adaptive.partitioning.enable", "false")])
            .await;
    eprintln!(
        "records sent after 400 ms to the stalled broker: {excluded} with the availability timeout, {uniform} without adaptive partitioning"
    );
    assert!(
        uniform > 0,
        "the control sent nothing to the stalled broker"
    );
    assert_eq!(excluded, 0, "records still went to the stalled broker");
}

/// KIP-951: broker 1, which the metadata names as the leader of "moving", refuses every
/// produce with NOT_LEADER_OR_FOLLOWER and names broker 2 (epoch 1) with its address; the
/// metadata never lists broker 2 at all. Every record lands on broker 2, in order, without a
/// Metadata request after the first refusal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_naming_the_new_leader_moves_the_producer_there_at_once() {
    let log = Arc::new(Mutex::new(FakeLog::default()));
    let handler_log = log.clone();
    let addrs: Arc<Mutex<BTreeMap<i32, String>>> = Arc::default();
    let handler_addrs = addrs.clone();
    let fake = FakeCluster::builder(2)
        .handler(move |ctx: &Ctx, req: &Request| {
            let RequestBody::Produce(p) = &req.body else {
                return handle(&handler_log, req);
            };
            if ctx.node != 1 {
                return handle(&handler_log, req);
            }
            let addr = handler_addrs.lock().unwrap()[&2].clone();
            let (host, port) = addr.rsplit_once(':').unwrap();
            let responses = p
                .topic_data
                .iter()
                .map(|t| produce_response::TopicProduceResponse {
                    name: t.name.clone(),
                    partition_responses: t
                        .partition_data
                        .iter()
                        .map(|d| produce_response::PartitionProduceResponse {
                            index: d.index,
                            error_code: ErrorCode::NOT_LEADER_OR_FOLLOWER.code(),
                            base_offset: -1,
                            current_leader: produce_response::LeaderIdAndEpoch {
                                leader_id: 2,
                                leader_epoch: 1,
                                ..Default::default()
                            },
                            ..Default::default()
                        })
                        .collect(),
                    ..Default::default()
                })
                .collect();
            Some(Reply::Send(ResponseBody::Produce(ProduceResponse {
                responses,
                node_endpoints: vec![produce_response::NodeEndpoint {
                    node_id: 2,
                    host: KStr::from(host.to_owned()),
                    port: port.parse().unwrap(),
                    rack: None,
                    ..Default::default()
                }],
                ..Default::default()
            })))
        })
        .start()
        .await;
    *addrs.lock().unwrap() = fake.addrs.clone();
    fake.add_topic("moving", support::Topic::led_by(&[1]));
    fake.state().brokers.remove(&2);
    // A retry backoff longer than the delivery timeout: a retry that waited for it would
    // fail its record.
    let cfg = config(
        &fake,
        &[
            ("bootstrap.servers", &fake.addr(1)),
            ("retry.backoff.ms", "60000"),
            ("retry.backoff.max.ms", "60000"),
            ("delivery.timeout.ms", "3000"),
            ("linger.ms", "0"),
        ],
    );
    let p = Producer::new(cfg).await.unwrap();
    let mut futs = Vec::new();
    for i in 0..20 {
        let rec = ProducerRecord::new("moving", Bytes::from(format!("m{i}"))).partition(0);
        futs.push(p.enqueue(rec).await.unwrap());
    }
    for (i, f) in futs.into_iter().enumerate() {
        let md = tokio::time::timeout(Duration::from_secs(20), f)
            .await
            .expect("a record never resolved")
            .unwrap_or_else(|e| panic!("record {i} failed: {e}"));
        assert_eq!(md.offset, i as i64);
    }
    let got = log.lock().unwrap().parts[&("moving".to_owned(), 0)]
        .values
        .clone();
    let want: Vec<Bytes> = (0..20).map(|i| Bytes::from(format!("m{i}"))).collect();
    assert_eq!(got, want);
    {
        let s = fake.state();
        let first_produce = s
            .log
            .iter()
            .position(|l| l.api() == ApiKey::Produce)
            .unwrap();
        assert!(
            s.log[first_produce..]
                .iter()
                .all(|l| l.api() != ApiKey::Metadata),
            "no Metadata request after the refusal"
        );
        assert!(
            s.log
                .iter()
                .any(|l| l.api() == ApiKey::Produce && l.node == 1)
        );
        assert!(
            s.log
                .iter()
                .any(|l| l.api() == ApiKey::Produce && l.node == 2)
        );
    }
    assert_eq!(p.metrics().records_errored, 0);
    p.close(Duration::from_secs(5)).await;
    fake.assert_clean();
}
