//! The sender task: `ready` -> `drain` -> send -> handle answers, in a loop.
//!
//! One task per producer. It owns the in-flight requests (so that closing can fail every one
//! of them), the per-broker in-flight counts, the producer id and epoch of an idempotent
//! producer, and the metadata refreshes that unknown leaders, stale-metadata errors and
//! failed connections call for. Requests to one broker are queued on its connection by this task alone, in drain
//! order, so batches of a partition reach the broker in the order they were drained.
//!
//! A Produce v10+ answer that refuses a partition with NOT_LEADER_OR_FOLLOWER (or
//! FENCED_LEADER_EPOCH) names the current leader (KIP-951): the hint goes into the metadata
//! cache at once, and the batch is retried on the new leader without a metadata refresh and
//! without the retry backoff, as Kafka's producer does.
//!
//! A transactional producer's sender also carries its transaction manager's requests
//! (`sender/txn.rs`): one at a time, with no Produce going out while one is answered, and
//! only batches of partitions already in the transaction are drained.

mod txn;

use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use kafka_net::{BrokerInfo, Cluster, Connection, LeaderHint, MetadataSnapshot, NetError, Outcome};
use kafka_protocol::TopicPartition;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::{
    ApiKey, InitProducerIdRequest, ProduceRequest, ProduceResponse, RequestBody, ResponseBody,
    produce_request,
};
use kafka_protocol::{KStr, Response};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::accumulator::Accumulator;
use crate::batch::ProducerBatch;
use crate::config::ProducerConfig;
use crate::error::ProducerError;
use crate::metrics::Counters;
use crate::partitioner::StickyPartitioner;
use crate::transaction::TxnManager;

type BoxFut<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// How a batch ended: its base offset and log-append time, or the error.
type BatchResult = Result<(i64, Option<i64>), ProducerError>;

/// How the producer asks its sender to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shutdown {
    Running,
    /// Deliver what is queued, then stop.
    Graceful,
    /// Fail whatever is left and stop now.
    Force,
}

/// Idempotence state.
#[derive(Debug, Default)]
struct Idempotence {
    producer: Option<(i64, i16)>,
    /// The sequence state is uncertain: bump the epoch once nothing is in flight.
    bump_needed: bool,
    /// Last sequence acknowledged per partition.
    last_acked: HashMap<TopicPartition, i32>,
    /// A fatal error (fenced): every later batch fails with it.
    fatal: Option<ProducerError>,
}

/// One partition's answer in a Produce response.
struct PartitionAnswer {
    code: ErrorCode,
    base_offset: i64,
    log_append: Option<i64>,
    message: Option<String>,
    /// The answer named a new leader that the metadata cache now has (KIP-951).
    leader_moved: bool,
}

struct InFlight {
    node: i32,
    sent: Instant,
    batches: Vec<ProducerBatch>,
}

pub(crate) struct Sender {
    cfg: ProducerConfig,
    cluster: Cluster,
    acc: Arc<Accumulator>,
    counters: Arc<Counters>,
    shutdown: watch::Receiver<Shutdown>,
    conns: HashMap<i32, Connection>,
    connecting: BTreeSet<i32>,
    connects: FuturesUnordered<BoxFut<(i32, Result<Connection, NetError>)>>,
    node_in_flight: HashMap<i32, usize>,
    requests: HashMap<u64, InFlight>,
    responses: FuturesUnordered<BoxFut<(u64, Outcome)>>,
    next_request: u64,
    idem: Idempotence,
    init: Option<BoxFut<Result<(i64, i16), ProducerError>>>,
    init_backoff_until: Option<Instant>,
    refresh: Option<BoxFut<()>>,
    next_refresh: Instant,
    /// Batches answered and not yet completed: their records' callbacks run after the next
    /// requests are sent, so a response frees its in-flight slot for new data first.
    done: Vec<(ProducerBatch, BatchResult)>,
    /// Adaptive partitioning: the sticky partitioner told of queue sizes, when next, and since
    /// when each broker has had batches waiting without a request going to it.
    load: Option<PartitionLoad>,
    /// The transaction manager of a transactional producer.
    txn: Option<Arc<std::sync::Mutex<TxnManager>>>,
    /// The transactional request out, if any.
    txn_req: Option<BoxFut<txn::TxnAnswer>>,
}

/// Feeds the sticky partitioner with queue sizes (`partitioner.adaptive.partitioning.enable`)
/// and leaves out brokers that take nothing (`partitioner.availability.timeout.ms`), as the
/// Java client's accumulator does on its readiness pass; here at most every
/// [`LOAD_INTERVAL`], when the sender runs (it does whenever records come or answers arrive).
struct PartitionLoad {
    sticky: Arc<StickyPartitioner>,
    next: Instant,
    backlog_since: HashMap<i32, Instant>,
}

/// Batches queued per partition: (partition, batches).
type QueueSizes = Vec<(i32, usize)>;

/// How often the partitioner hears of queue sizes.
const LOAD_INTERVAL: Duration = Duration::from_millis(10);

impl Sender {
    pub(crate) fn new(
        cfg: ProducerConfig,
        cluster: Cluster,
        acc: Arc<Accumulator>,
        counters: Arc<Counters>,
        shutdown: watch::Receiver<Shutdown>,
    ) -> Self {
        Self {
            cfg,
            cluster,
            acc,
            counters,
            shutdown,
            conns: HashMap::new(),
            connecting: BTreeSet::new(),
            connects: FuturesUnordered::new(),
            node_in_flight: HashMap::new(),
            requests: HashMap::new(),
            responses: FuturesUnordered::new(),
            next_request: 0,
            idem: Idempotence::default(),
            init: None,
            init_backoff_until: None,
            refresh: None,
            next_refresh: Instant::now(),
            done: Vec::new(),
            load: None,
            txn: None,
            txn_req: None,
        }
    }

    /// Adaptive partitioning through `sticky` (if the configuration asks for it).
    #[must_use]
    pub(crate) fn with_partition_load(mut self, sticky: Arc<StickyPartitioner>) -> Self {
        if self.cfg.partitioner_adaptive {
            self.load = Some(PartitionLoad {
                sticky,
                next: Instant::now(),
                backlog_since: HashMap::new(),
            });
        }
        self
    }

    /// Tells the sticky partitioner the queue sizes of the partitions it may choose: those
    /// with a known leader, less those whose broker has had batches waiting without a
    /// request for longer than `partitioner.availability.timeout.ms` (when set).
    fn update_partition_load(&mut self, now: Instant, meta: &MetadataSnapshot) {
        let Some(load) = &mut self.load else { return };
        if now < load.next {
            return;
        }
        load.next = now + LOAD_INTERVAL;
        let lengths = self.acc.queue_lengths(|tp| leader_of(meta, tp));
        let mut waiting: HashMap<i32, usize> = HashMap::new();
        for &(_, _, node, len) in &lengths {
            *waiting.entry(node).or_default() += len;
        }
        for (node, queued) in waiting {
            if queued == 0 {
                load.backlog_since.remove(&node);
            } else {
                load.backlog_since.entry(node).or_insert(now);
            }
        }
        let timeout = self.cfg.partitioner_availability_timeout;
        let since = &load.backlog_since;
        let available = |node: i32| {
            timeout.is_zero()
                || since
                    .get(&node)
                    .is_none_or(|t| now.saturating_duration_since(*t) <= timeout)
        };
        // By topic (a topic that gained partitions has its new queues listed after other
        // topics'), each with every partition it may choose.
        let mut by_topic: Vec<(Arc<str>, QueueSizes)> = Vec::new();
        for (t, partition, node, len) in lengths {
            let i = match by_topic.iter().position(|(name, _)| *name == t) {
                Some(i) => i,
                None => {
                    by_topic.push((t, Vec::new()));
                    by_topic.len() - 1
                }
            };
            if available(node) {
                by_topic[i].1.push((partition, len));
            }
        }
        for (topic, sizes) in by_topic {
            load.sticky.set_queue_sizes(&topic, &sizes);
        }
    }

    fn idempotent(&self) -> bool {
        self.cfg.enable_idempotence
    }

    /// Runs until shut down and everything is delivered or failed.
    pub(crate) async fn run(mut self) {
        loop {
            let now = Instant::now();
            let shutdown = *self.shutdown.borrow();
            if shutdown == Shutdown::Force {
                self.fail_everything(ProducerError::Closed(Some(
                    "closed before the record was delivered".into(),
                )));
                break;
            }
            if shutdown == Shutdown::Graceful
                && !self.acc.has_incomplete()
                && self.requests.is_empty()
            {
                break;
            }
            self.expire(now);
            let (txn_sendable, txn_wait) = self.drive_transaction(now);
            if let Some(e) = self.idem.fatal.clone() {
                for b in self.acc.take_all() {
                    self.fail(b, e.clone());
                }
            }
            self.maybe_init_producer_id(now);

            let meta = self.cluster.metadata();
            let max_in_flight = self.cfg.max_in_flight;
            let paused = self.idem.bump_needed
                || (self.idempotent() && self.idem.producer.is_none())
                || self.txn_req.is_some();
            let in_txn =
                |tp: &TopicPartition| txn_sendable.as_deref().is_none_or(|s| s.contains(tp));
            let ready = {
                let in_flight = &self.node_in_flight;
                self.acc.ready(
                    now,
                    |tp| leader_of(&meta, tp),
                    |node| !paused && in_flight.get(&node).copied().unwrap_or(0) < max_in_flight,
                    in_txn,
                )
            };
            self.update_partition_load(now, &meta);
            let mut wait = min_opt(ready.next_check, txn_wait);
            if !ready.unknown_leaders.is_empty() {
                self.cluster
                    .add_interest(ready.unknown_leaders.iter().map(|t| t.to_string()));
                wait = min_opt(wait, self.request_refresh(now));
            }
            let mut sendable = BTreeSet::new();
            for node in ready.nodes {
                match self.conns.get(&node) {
                    Some(c) if !c.is_closed() => {
                        sendable.insert(node);
                    }
                    _ => self.start_connect(node),
                }
            }
            if !sendable.is_empty() {
                match self.acc.drain(
                    now,
                    &sendable,
                    |tp| leader_of(&meta, tp),
                    self.idem.producer,
                    in_txn,
                ) {
                    Ok(drained) => {
                        for (node, batches) in drained {
                            self.send_request(node, batches, now).await;
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "drain failed"),
                }
            }
            if self.complete_done() {
                // Look again: completing may have been all a graceful shutdown waited for.
                continue;
            }
            wait = min_opt(wait, self.acc.next_expiry(now));

            if let Some(until) = self.init_backoff_until {
                wait = min_opt(wait, Some(until.saturating_duration_since(now)));
            }
            self.wait(wait).await;
        }
        self.complete_done();
        if let Some(t) = &self.txn {
            crate::transaction::lock(t).close();
        }
        tracing::debug!("producer sender stopped");
    }

    /// Waits for something to do: a wake-up from `send`, an answer, a connection, the
    /// producer id, a metadata change, a timer, or shutdown.
    async fn wait(&mut self, timeout: Option<Duration>) {
        let sleep = async {
            match timeout {
                Some(d) => tokio::time::sleep(d).await,
                None => std::future::pending().await,
            }
        };
        let mut meta = self.cluster.subscribe_metadata();
        meta.borrow_and_update();
        tokio::select! {
            _ = self.acc.wake.notified() => {}
            Some((id, outcome)) = self.responses.next(), if !self.responses.is_empty() => {
                self.handle_outcome(id, outcome);
                // Take every answer already there before looking at readiness again.
                while let Some(Some((id, outcome))) = futures::FutureExt::now_or_never(self.responses.next()) {
                    self.handle_outcome(id, outcome);
                }
            }
            Some((node, res)) = self.connects.next(), if !self.connects.is_empty() => {
                self.connecting.remove(&node);
                match res {
                    Ok(c) => { self.conns.insert(node, c); }
                    Err(e) => {
                        tracing::debug!(node, error = %e, "producer cannot connect");
                        // The broker may be gone and its partitions led elsewhere by now
                        // (Java's client asks for metadata on a failed connection too):
                        // without this the records wait for `metadata.max.age.ms`.
                        let _ = self.request_refresh(Instant::now());
                    }
                }
            }
            res = poll_opt(&mut self.init), if self.init.is_some() => {
                self.init = None;
                self.on_producer_id(res);
            }
            () = poll_opt(&mut self.refresh), if self.refresh.is_some() => {
                self.refresh = None;
            }
            answer = poll_opt(&mut self.txn_req), if self.txn_req.is_some() => {
                self.txn_req = None;
                self.on_txn_answer(answer);
            }
            _ = meta.changed() => {}
            _ = self.shutdown.changed() => {}
            () = sleep => {}
        }
    }

    fn start_connect(&mut self, node: i32) {
        if !self.connecting.insert(node) {
            return;
        }
        self.conns.remove(&node);
        let cluster = self.cluster.clone();
        self.connects.push(Box::pin(
            async move { (node, cluster.connection(node).await) },
        ));
    }

    /// Starts a metadata refresh unless one runs or ran within `retry.backoff.ms`; returns
    /// how long until the next may start.
    fn request_refresh(&mut self, now: Instant) -> Option<Duration> {
        if self.refresh.is_some() {
            return None;
        }
        if now < self.next_refresh {
            return Some(self.next_refresh - now);
        }
        self.next_refresh = now + self.cfg.retry_backoff;
        let cluster = self.cluster.clone();
        self.refresh = Some(Box::pin(async move {
            if let Err(e) = cluster.refresh_metadata().await {
                tracing::debug!(error = %e, "producer metadata refresh failed");
            }
        }));
        Some(self.cfg.retry_backoff)
    }

    fn maybe_init_producer_id(&mut self, now: Instant) {
        // A transactional producer's id comes from its transaction manager.
        if !self.idempotent()
            || self.txn.is_some()
            || self.init.is_some()
            || self.idem.fatal.is_some()
        {
            return;
        }
        let wanted =
            self.idem.producer.is_none() || (self.idem.bump_needed && self.requests.is_empty());
        if !wanted || self.init_backoff_until.is_some_and(|t| now < t) {
            return;
        }
        let cluster = self.cluster.clone();
        let current = self.idem.producer.filter(|_| self.idem.bump_needed);
        let transactional_id = self.cfg.transactional_id.clone();
        let timeout_ms =
            i32::try_from(self.cfg.transaction_timeout.as_millis()).unwrap_or(i32::MAX);
        self.init = Some(Box::pin(async move {
            let conn = cluster.least_loaded().await?;
            let version = conn.version_for(ApiKey::InitProducerId)?;
            let (producer_id, producer_epoch) = match current {
                // KIP-360: v3+ bumps the epoch of the producer id we hold.
                Some((id, epoch)) if version >= 3 => (id, epoch),
                _ => (-1, -1),
            };
            let req = InitProducerIdRequest {
                transactional_id: transactional_id.map(KStr::from),
                transaction_timeout_ms: timeout_ms,
                producer_id,
                producer_epoch,
                ..Default::default()
            };
            let body = conn
                .request_at(RequestBody::InitProducerId(req), version)
                .await?;
            let ResponseBody::InitProducerId(resp) = body else {
                return Err(ProducerError::Fatal(
                    "InitProducerId answered with another api".into(),
                ));
            };
            let code = ErrorCode(resp.error_code);
            if code.is_err() {
                return Err(ProducerError::Kafka {
                    topic: String::new(),
                    partition: -1,
                    code,
                    message: Some("InitProducerId".into()),
                });
            }
            Ok((resp.producer_id, resp.producer_epoch))
        }));
    }

    fn on_producer_id(&mut self, res: Result<(i64, i16), ProducerError>) {
        match res {
            Ok((id, epoch)) => {
                tracing::debug!(producer_id = id, epoch, "producer id assigned");
                if self.idem.producer.is_some() {
                    self.acc.reset_sequences();
                    self.idem.last_acked.clear();
                }
                self.idem.producer = Some((id, epoch));
                self.idem.bump_needed = false;
                self.init_backoff_until = None;
            }
            Err(e) => {
                let fatal = matches!(
                    e.code(),
                    Some(
                        ErrorCode::PRODUCER_FENCED
                            | ErrorCode::INVALID_PRODUCER_EPOCH
                            | ErrorCode::CLUSTER_AUTHORIZATION_FAILED
                            | ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED
                    )
                );
                if fatal {
                    self.idem.fatal = Some(ProducerError::Fatal(e.to_string()));
                } else {
                    tracing::debug!(error = %e, "InitProducerId failed; retrying");
                    self.init_backoff_until = Some(Instant::now() + self.cfg.retry_backoff);
                }
            }
        }
    }

    async fn send_request(
        &mut self,
        node: i32,
        batches: Vec<(ProducerBatch, bytes::Bytes)>,
        now: Instant,
    ) {
        let Some(conn) = self.conns.get(&node).cloned() else {
            for (b, _) in batches {
                self.acc.in_flight_done(&b.tp);
                self.acc
                    .reenqueue(b, format!("no connection to broker {node}"));
            }
            return;
        };
        let mut topics: Vec<produce_request::TopicProduceData> = Vec::new();
        let mut owned = Vec::with_capacity(batches.len());
        for (batch, bytes) in batches {
            Counters::add(&self.counters.batches_sent, 1);
            Counters::add(&self.counters.batch_bytes, bytes.len() as u64);
            let part = produce_request::PartitionProduceData {
                index: batch.tp.partition,
                records: Some(bytes),
                ..Default::default()
            };
            match topics.iter_mut().find(|t| *t.name == *batch.tp.topic) {
                Some(t) => t.partition_data.push(part),
                None => topics.push(produce_request::TopicProduceData {
                    name: KStr::from(batch.tp.topic.to_string()),
                    partition_data: vec![part],
                    ..Default::default()
                }),
            }
            owned.push(batch);
        }
        let req = ProduceRequest {
            transactional_id: self.cfg.transactional_id.clone().map(KStr::from),
            acks: self.cfg.acks.wire(),
            timeout_ms: i32::try_from(self.cfg.request_timeout.as_millis()).unwrap_or(i32::MAX),
            topic_data: topics,
            ..Default::default()
        };
        let version = match conn.version_for(ApiKey::Produce) {
            // Record batches v2 need Produce v3+.
            Ok(v) if v >= 3 => v,
            Ok(v) => {
                let e = ProducerError::Fatal(format!(
                    "broker {node} supports Produce only up to v{v}; v3+ is needed for record batch v2"
                ));
                for b in owned {
                    self.acc.in_flight_done(&b.tp);
                    self.fail(b, e.clone());
                }
                return;
            }
            Err(e) => {
                let e = ProducerError::from(e);
                for b in owned {
                    self.acc.in_flight_done(&b.tp);
                    self.fail(b, e.clone());
                }
                return;
            }
        };
        let id = self.next_request;
        self.next_request += 1;
        tracing::trace!(
            node,
            id,
            batches = ?owned
                .iter()
                .map(|b| (b.tp.to_string(), b.producer.map(|f| f.base_sequence), b.record_count()))
                .collect::<Vec<_>>(),
            "sending produce request"
        );
        match conn.enqueue(RequestBody::Produce(req), version).await {
            Ok(fut) => {
                if let Some(load) = &mut self.load {
                    load.backlog_since.remove(&node);
                }
                *self.node_in_flight.entry(node).or_default() += 1;
                self.requests.insert(
                    id,
                    InFlight {
                        node,
                        sent: now,
                        batches: owned,
                    },
                );
                self.responses
                    .push(Box::pin(async move { (id, fut.await) }));
            }
            Err(e) => {
                self.conns.remove(&node);
                let msg = e.to_string();
                for b in owned {
                    self.acc.in_flight_done(&b.tp);
                    self.retry_or_fail(b, ProducerError::from(e.clone()), msg.clone(), true);
                }
            }
        }
    }

    fn handle_outcome(&mut self, id: u64, outcome: Outcome) {
        let Some(req) = self.requests.remove(&id) else {
            return;
        };
        if let Some(n) = self.node_in_flight.get_mut(&req.node) {
            *n = n.saturating_sub(1);
        }
        self.counters.request_done(req.sent.elapsed());
        for b in &req.batches {
            self.acc.in_flight_done(&b.tp);
        }
        match outcome {
            Err(e) => {
                tracing::debug!(node = req.node, error = %e, "produce request failed");
                if self.conns.get(&req.node).is_some_and(Connection::is_closed) {
                    self.conns.remove(&req.node);
                }
                self.next_refresh = Instant::now();
                let _ = self.request_refresh(Instant::now());
                let retriable = e.is_retriable();
                let msg = e.to_string();
                let err = ProducerError::from(e);
                for b in req.batches {
                    self.retry_or_fail(b, err.clone(), msg.clone(), retriable);
                }
            }
            Ok(None) => {
                // acks=0: done once written.
                for b in req.batches {
                    self.succeed(b, -1, None);
                }
            }
            Ok(Some(Response { body, .. })) => {
                let ResponseBody::Produce(resp) = body else {
                    let e = ProducerError::Fatal("Produce answered with another api".into());
                    for b in req.batches {
                        self.fail(b, e.clone());
                    }
                    return;
                };
                let moved = self.take_leader_hints(&resp);
                for b in req.batches {
                    let leader_moved = moved
                        .iter()
                        .any(|(t, p)| **t == *b.tp.topic && *p == b.tp.partition);
                    let part = resp
                        .responses
                        .iter()
                        .filter(|t| *t.name == *b.tp.topic)
                        .flat_map(|t| t.partition_responses.iter())
                        .find(|p| p.index == b.tp.partition);
                    match part {
                        None => {
                            let e = ProducerError::Fatal(format!(
                                "the Produce response has no answer for {}",
                                b.tp
                            ));
                            self.fail(b, e);
                        }
                        Some(p) => {
                            let code = ErrorCode(p.error_code);
                            let message = p.error_message.as_deref().map(str::to_owned);
                            let log_append =
                                (p.log_append_time_ms >= 0).then_some(p.log_append_time_ms);
                            let answer = PartitionAnswer {
                                code,
                                base_offset: p.base_offset,
                                log_append,
                                message,
                                leader_moved,
                            };
                            self.handle_partition(b, answer);
                        }
                    }
                }
            }
        }
    }

    /// KIP-951: takes the leaders an answer names for refused partitions into the metadata
    /// cache; returns the partitions whose cached leader is now at least as new as the hint.
    fn take_leader_hints(&self, resp: &ProduceResponse) -> Vec<(String, i32)> {
        let refused = [
            ErrorCode::NOT_LEADER_OR_FOLLOWER,
            ErrorCode::FENCED_LEADER_EPOCH,
        ];
        let hints: Vec<LeaderHint> = resp
            .responses
            .iter()
            .flat_map(|t| t.partition_responses.iter().map(move |p| (t, p)))
            .filter(|(_, p)| refused.contains(&ErrorCode(p.error_code)))
            .filter(|(_, p)| p.current_leader.leader_id >= 0 && p.current_leader.leader_epoch >= 0)
            .map(|(t, p)| LeaderHint {
                topic: t.name.to_string(),
                partition: p.index,
                leader_id: p.current_leader.leader_id,
                leader_epoch: p.current_leader.leader_epoch,
            })
            .collect();
        if hints.is_empty() {
            return Vec::new();
        }
        let endpoints: Vec<BrokerInfo> = resp
            .node_endpoints
            .iter()
            .map(|e| BrokerInfo {
                node_id: e.node_id,
                host: e.host.to_string(),
                port: e.port,
                rack: e.rack.as_ref().map(ToString::to_string),
            })
            .collect();
        let known = self.cluster.apply_leader_hints(&hints, &endpoints);
        hints
            .into_iter()
            .zip(known)
            .filter(|(_, k)| *k)
            .map(|(h, _)| (h.topic, h.partition))
            .collect()
    }

    fn handle_partition(&mut self, batch: ProducerBatch, answer: PartitionAnswer) {
        let PartitionAnswer {
            code,
            base_offset,
            log_append,
            message,
            leader_moved,
        } = answer;
        tracing::trace!(tp = %batch.tp, seq = ?batch.producer.map(|f| f.base_sequence), %code, base_offset, "produce answer");
        let kafka = |b: &ProducerBatch, msg: Option<String>| ProducerError::Kafka {
            topic: b.tp.topic.to_string(),
            partition: b.tp.partition,
            code,
            message: msg,
        };
        match code {
            ErrorCode::NONE => self.succeed(batch, base_offset, log_append),
            // Already written by an earlier attempt whose answer was lost.
            ErrorCode::DUPLICATE_SEQUENCE_NUMBER => self.succeed(batch, -1, log_append),
            // Transactional: the broker lost our state, or a batch is missing before this one;
            // the transaction must be aborted (and the epoch bumped). A batch that only has
            // to wait for an earlier one's retry is retried.
            ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER | ErrorCode::UNKNOWN_PRODUCER_ID
                if self.txn.is_some() =>
            {
                let seq = batch.producer.map(|f| f.base_sequence);
                let last = self.idem.last_acked.get(&batch.tp).copied().unwrap_or(-1);
                let expected = last.wrapping_add(1) & i32::MAX;
                let e = kafka(&batch, message);
                if code == ErrorCode::UNKNOWN_PRODUCER_ID || seq == Some(expected) {
                    self.fail(batch, e);
                } else {
                    let msg = e.to_string();
                    self.retry_or_fail(batch, e, msg, true);
                }
            }
            // Transactional: fenced is fatal; an old epoch at a partition is abortable
            // (KIP-588: the coordinator tells on EndTxn whether we are fenced).
            ErrorCode::INVALID_PRODUCER_EPOCH | ErrorCode::PRODUCER_FENCED
                if self.txn.is_some() =>
            {
                let e = if code == ErrorCode::PRODUCER_FENCED {
                    ProducerError::Fenced(kafka(&batch, message).to_string())
                } else {
                    kafka(&batch, message)
                };
                self.fail(batch, e);
            }
            ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER | ErrorCode::UNKNOWN_PRODUCER_ID
                if self.idempotent() =>
            {
                let seq = batch.producer.map(|f| f.base_sequence);
                let last = self.idem.last_acked.get(&batch.tp).copied().unwrap_or(-1);
                let expected = last.wrapping_add(1) & i32::MAX;
                // An earlier batch of the partition failed and will be retried first: this
                // one only has to wait its turn. Otherwise the broker lost our sequence state.
                if code == ErrorCode::UNKNOWN_PRODUCER_ID || seq == Some(expected) {
                    tracing::debug!(tp = %batch.tp, ?code, "bumping the producer epoch");
                    self.idem.bump_needed = true;
                }
                let e = kafka(&batch, message.clone());
                let msg = e.to_string();
                self.retry_or_fail(batch, e, msg, true);
            }
            // Larger than the topic's max.message.bytes: send it in halves (nothing of it
            // was written); a single record that is too large fails.
            ErrorCode::MESSAGE_TOO_LARGE if batch.record_count() > 1 => {
                let records = batch.record_count() as u64;
                match self.acc.split_and_reenqueue(batch, Instant::now()) {
                    Ok(()) => {
                        tracing::debug!(records, "split a batch refused as too large");
                        Counters::add(&self.counters.batches_split, 1);
                        self.acc.wake.notify_one();
                    }
                    Err(batch) => {
                        let e = kafka(&batch, message);
                        self.fail(*batch, e);
                    }
                }
            }
            ErrorCode::INVALID_PRODUCER_EPOCH | ErrorCode::PRODUCER_FENCED => {
                let e = kafka(&batch, message);
                self.idem.fatal = Some(ProducerError::Fatal(e.to_string()));
                self.fail(batch, e);
            }
            // The answer named the new leader and the cache has it: straight there.
            ErrorCode::NOT_LEADER_OR_FOLLOWER | ErrorCode::FENCED_LEADER_EPOCH if leader_moved => {
                let e = kafka(&batch, message);
                let msg = e.to_string();
                tracing::debug!(tp = %batch.tp, %code, "retrying on the leader the answer named");
                self.retry_or_fail_with(batch, e, msg, true, true);
            }
            c if c.is_retriable() => {
                if matches!(
                    c,
                    ErrorCode::NOT_LEADER_OR_FOLLOWER
                        | ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
                        | ErrorCode::LEADER_NOT_AVAILABLE
                        | ErrorCode::FENCED_LEADER_EPOCH
                        | ErrorCode::UNKNOWN_LEADER_EPOCH
                        | ErrorCode::KAFKA_STORAGE_ERROR
                ) {
                    self.next_refresh = Instant::now();
                    let _ = self.request_refresh(Instant::now());
                }
                let e = kafka(&batch, message);
                let msg = e.to_string();
                self.retry_or_fail(batch, e, msg, true);
            }
            _ => {
                let e = kafka(&batch, message);
                self.fail(batch, e);
            }
        }
    }

    fn succeed(&mut self, batch: ProducerBatch, base_offset: i64, log_append: Option<i64>) {
        if let Some(f) = batch.producer.filter(|f| f.producer_id >= 0) {
            let count = i32::try_from(batch.record_count()).unwrap_or(i32::MAX);
            let last = f.base_sequence.wrapping_add(count - 1) & i32::MAX;
            self.idem.last_acked.insert(batch.tp.clone(), last);
        }
        Counters::add(&self.counters.records_sent, batch.record_count() as u64);
        self.done.push((batch, Ok((base_offset, log_append))));
    }

    fn fail(&mut self, batch: ProducerBatch, e: ProducerError) {
        self.txn_batch_failed(&e);
        Counters::add(&self.counters.records_errored, batch.record_count() as u64);
        self.done.push((batch, Err(e)));
    }

    /// Completes the answered batches (runs their records' callbacks, wakes their futures);
    /// whether there were any.
    fn complete_done(&mut self) -> bool {
        if self.done.is_empty() {
            return false;
        }
        for (batch, result) in std::mem::take(&mut self.done) {
            self.acc.complete(batch, result);
        }
        true
    }

    /// Retries a batch if attempts and the delivery timeout allow, else fails it.
    fn retry_or_fail(
        &mut self,
        batch: ProducerBatch,
        e: ProducerError,
        msg: String,
        retriable: bool,
    ) {
        self.retry_or_fail_with(batch, e, msg, retriable, false);
    }

    /// [`Self::retry_or_fail`]; `now`: the retry skips the backoff (its leader moved).
    fn retry_or_fail_with(
        &mut self,
        batch: ProducerBatch,
        e: ProducerError,
        msg: String,
        retriable: bool,
        now_retry: bool,
    ) {
        let now = Instant::now();
        let age = batch.age(now);
        let closing = *self.shutdown.borrow() == Shutdown::Force;
        if retriable
            && !closing
            && batch.attempts <= self.cfg.retries
            && age < self.cfg.delivery_timeout
        {
            Counters::add(&self.counters.records_retried, batch.record_count() as u64);
            if now_retry {
                self.acc.reenqueue_now(batch, msg);
            } else {
                self.acc.reenqueue(batch, msg);
            }
            self.acc.wake.notify_one();
            return;
        }
        if retriable && age >= self.cfg.delivery_timeout {
            let e = ProducerError::DeliveryTimeout {
                topic: batch.tp.topic.to_string(),
                partition: batch.tp.partition,
                after: age,
                reason: Some(msg),
            };
            self.after_unresolved(&batch);
            self.fail(batch, e);
            return;
        }
        self.after_unresolved(&batch);
        self.fail(batch, e);
    }

    /// A batch that may or may not have been written is given up: with idempotence the
    /// partition's sequence state is unknown, so the epoch must be bumped.
    fn after_unresolved(&mut self, batch: &ProducerBatch) {
        // (A transactional producer's transaction is aborted instead: see `fail`.)
        if self.idempotent() && batch.producer.is_some() && self.txn.is_none() {
            self.idem.bump_needed = true;
        }
    }

    /// Fails queued batches older than `delivery.timeout.ms`.
    fn expire(&mut self, now: Instant) {
        for b in self.acc.expired(now) {
            let e = ProducerError::DeliveryTimeout {
                topic: b.tp.topic.to_string(),
                partition: b.tp.partition,
                after: b.age(now),
                reason: b.last_error.clone(),
            };
            self.after_unresolved(&b);
            self.fail(b, e);
        }
    }

    fn fail_everything(&mut self, e: ProducerError) {
        let requests: Vec<InFlight> = self.requests.drain().map(|(_, r)| r).collect();
        for r in requests {
            for b in r.batches {
                self.acc.in_flight_done(&b.tp);
                self.fail(b, e.clone());
            }
        }
        for b in self.acc.take_all() {
            self.fail(b, e.clone());
        }
    }
}

/// The leader of a partition, when known and the broker is in the metadata.
fn leader_of(meta: &MetadataSnapshot, tp: &TopicPartition) -> Option<i32> {
    let t = meta.topics.get(&*tp.topic)?;
    let p = usize::try_from(tp.partition)
        .ok()
        .and_then(|i| t.partitions.get(i))
        .filter(|p| p.partition == tp.partition)
        .or_else(|| t.partition(tp.partition))?;
    (p.leader >= 0 && meta.brokers.contains_key(&p.leader)).then_some(p.leader)
}

fn min_opt(a: Option<Duration>, b: Option<Duration>) -> Option<Duration> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

async fn poll_opt<T>(f: &mut Option<BoxFut<T>>) -> T {
    match f {
        Some(f) => f.await,
        None => std::future::pending().await,
    }
}
