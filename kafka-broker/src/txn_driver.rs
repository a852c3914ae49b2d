//! The transaction coordinator's I/O: `__transaction_state` as its storage (appends of
//! its records, the read that loads a partition), and the markers that end transactions,
//! written through the partition layer here or sent as WriteTxnMarkers to the broker that
//! leads the partition.
//!
//! [`run`] takes the coordinator's work queue ([`crate::txn::Work`]): a record is appended
//! at once, in queue order (a page-cache write), and its acknowledgement (the in-sync
//! replicas, `min.insync.replicas` of the topic) waited for in a task of its own; each marker
//! request gets a task that writes every partition's marker, retrying what failed until each
//! is written, its topic is gone, or the coordinator no longer waits for it (it resigned the
//! transactional id's partition).
//!
//! Lock order: nothing here holds the coordinator's lock across a partition call; reports go
//! back through [`crate::txn::TxnCoordinator`]'s methods, each taking the lock briefly.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::BytesMut;
use kafka_net::connection::{Connection, ConnectionConfig};
use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::write_txn_markers_request::{
    WritableTxnMarker, WritableTxnMarkerTopic,
};
use kafka_protocol::messages::{RequestBody, ResponseBody, WriteTxnMarkersRequest};
use kafka_protocol::record::RecordBatchBuilder;

use crate::broker::{Broker, now_ms};
use crate::error::BrokerError;
use crate::log::TopicPartition;
use crate::offsets_topic::OFFSETS_TOPIC;
use crate::replica::{Acks, BatchSummary, Partition, PendingAck, delayed};
use crate::txn::{MarkerRequest, TRANSACTION_STATE_TOPIC, TxnRecord, TxnResult, TxnWrite, Work};

/// How long a `__transaction_state` append waits for its acknowledgement (Kafka's
/// `transaction.state.log` writes use the request timeout; a failure is answered
/// COORDINATOR_NOT_AVAILABLE or NOT_COORDINATOR and the client retries).
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a marker append waits for the in-sync replicas.
const MARKER_TIMEOUT: Duration = Duration::from_secs(10);
/// The wait before markers that failed are tried again, doubling up to the maximum.
const MARKER_BACKOFF: Duration = Duration::from_millis(50);
const MARKER_BACKOFF_MAX: Duration = Duration::from_secs(1);

/// Runs the coordinator's work and timers until `stop` completes.
pub async fn run(broker: Arc<Broker>, stop: impl Future<Output = ()>) {
    let Some(mut work) = broker.txn.take_work() else {
        return;
    };
    let peers = Arc::new(Peers::default());
    let timers = {
        let b = Arc::clone(&broker);
        async move { b.txn.run_timers().await }
    };
    tokio::pin!(stop, timers);
    loop {
        tokio::select! {
            w = work.recv() => match w {
                Some(Work::Write(w)) => write(&broker, w),
                Some(Work::Markers(m)) => {
                    tokio::spawn(write_markers(Arc::clone(&broker), Arc::clone(&peers), m));
                }
                None => return,
            },
            () = &mut timers => return,
            () = &mut stop => return,
        }
    }
}

/// Appends one record now; its acknowledgement is waited for in a task.
fn write(broker: &Arc<Broker>, w: TxnWrite) {
    match append_record(broker, w.partition, &w.record) {
        Ok(pending) => {
            let b = Arc::clone(broker);
            tokio::spawn(async move {
                let deadline = tokio::time::Instant::now() + WRITE_TIMEOUT;
                let result = delayed::complete_append(pending, Acks::All, deadline)
                    .await
                    .map_err(|e| e.error_code());
                if let Err(code) = result {
                    tracing::warn!(partition = w.partition, error = %code,
                        "{TRANSACTION_STATE_TOPIC} write not acknowledged");
                }
                b.txn.write_done(w.id, result);
            });
        }
        Err(e) => {
            tracing::warn!(partition = w.partition, error = %e,
                "cannot write to {TRANSACTION_STATE_TOPIC}");
            broker.txn.write_done(w.id, Err(e.error_code()));
        }
    }
}

fn append_record(
    broker: &Broker,
    index: i32,
    record: &TxnRecord,
) -> Result<PendingAck, BrokerError> {
    let partition = broker.txn_partition(index).ok_or_else(|| {
        BrokerError::kafka(
            ErrorCode::NOT_COORDINATOR,
            format!("{TRANSACTION_STATE_TOPIC}-{index} is not coordinated here"),
        )
    })?;
    let min_insync = broker
        .produce_rules(TRANSACTION_STATE_TOPIC)
        .min_insync_replicas;
    partition.check_min_insync(min_insync)?;
    let now = now_ms();
    let (key, value) = record.encode()?;
    let mut b = RecordBatchBuilder::new();
    b.append(now, Some(&key), value.as_deref(), &[])?;
    let batch: BytesMut = b.build_mut()?;
    let summary = BatchSummary {
        producer_id: -1,
        producer_epoch: -1,
        base_sequence: -1,
        records: 1,
        max_timestamp: now,
        transactional: false,
    };
    let (_, pending) = partition.append_as_leader(batch, &[summary], now)?;
    Ok(pending.with_min_insync(min_insync))
}

/// Every record of one `__transaction_state` partition, from the log start to the log end,
/// in log order. Undecodable records are skipped with a warning; a read error stops the
/// partition there.
pub fn read_partition(partition: &Partition) -> Vec<TxnRecord> {
    use crate::offsets_topic::{for_each_batch, for_each_keyed_record};
    let mut out = Vec::new();
    for_each_batch(partition, TRANSACTION_STATE_TOPIC, |batch| {
        if batch.is_control() {
            return;
        }
        for_each_keyed_record(
            partition,
            TRANSACTION_STATE_TOPIC,
            batch,
            |key, value, offset| match TxnRecord::decode(key, value) {
                Ok(Some(r)) => out.push(r),
                Ok(None) => {}
                Err(e) => tracing::warn!(partition = partition.index, offset, error = %e,
                    "undecodable {TRANSACTION_STATE_TOPIC} record skipped"),
            },
        );
    });
    out
}

// ---- markers ----

/// Connections to the other brokers, for WriteTxnMarkers.
#[derive(Debug, Default)]
struct Peers {
    by_id: Mutex<HashMap<i32, (String, Connection)>>,
}

impl Peers {
    async fn connection(&self, id: i32, addr: &str) -> Result<Connection, String> {
        {
            let all = crate::sync::lock(&self.by_id);
            if let Some((a, c)) = all.get(&id)
                && a == addr
                && !c.is_closed()
            {
                return Ok(c.clone());
            }
        }
        let mut cfg = ConnectionConfig {
            connect_timeout: Duration::from_secs(2),
            handshake: false,
            ..Default::default()
        };
        cfg.conn.request_timeout = MARKER_TIMEOUT + Duration::from_secs(5);
        let c = Connection::connect(addr, cfg)
            .await
            .map_err(|e| e.to_string())?;
        crate::sync::lock(&self.by_id).insert(id, (addr.to_owned(), c.clone()));
        Ok(c)
    }
}

/// Where a partition's marker goes.
enum Route {
    /// This broker leads it.
    Here,
    /// Broker `id` at `addr` (its inter-broker listener) leads it.
    Broker(i32, String),
    /// Its topic is gone: no marker is needed.
    Gone,
    /// No leader known right now.
    Unknown,
}

fn route(broker: &Broker, tp: &TopicPartition) -> Route {
    if broker
        .topic(&tp.topic)
        .is_none_or(|t| tp.partition >= t.partitions)
    {
        return Route::Gone;
    }
    let Some(link) = broker.cluster() else {
        return Route::Here;
    };
    if broker
        .partition(&tp.topic, tp.partition)
        .is_some_and(|p| p.is_leader())
    {
        return Route::Here;
    }
    let state = link.current();
    let image = &state.state.image;
    let Some(leader) = image
        .topic(&tp.topic)
        .and_then(|t| t.partitions.get(&tp.partition))
        .map(|p| p.leader)
        .filter(|&l| l >= 0)
    else {
        return Route::Unknown;
    };
    let listener = broker
        .config
        .network
        .effective_inter_broker_listener_name()
        .unwrap_or_else(|| "PLAINTEXT".to_owned());
    match image.broker(leader).filter(|b| !b.fenced).and_then(|b| {
        b.endpoints
            .iter()
            .find(|e| e.name == listener)
            .map(|e| format!("{}:{}", e.host, e.port))
    }) {
        Some(addr) => Route::Broker(leader, addr),
        None => Route::Unknown,
    }
}

/// Writes the markers of one ended transaction until every partition has its marker.
async fn write_markers(broker: Arc<Broker>, peers: Arc<Peers>, m: MarkerRequest) {
    let commit = m.result == TxnResult::Commit;
    let mut remaining: BTreeSet<TopicPartition> = m.partitions.clone();
    let mut backoff = MARKER_BACKOFF;
    tracing::debug!(transactional_id = %m.transactional_id, producer_id = m.producer_id,
        commit, partitions = remaining.len(), "writing transaction markers");
    loop {
        if !broker
            .txn
            .markers_wanted(&m.transactional_id, m.coordinator_epoch)
        {
            tracing::info!(transactional_id = %m.transactional_id,
                "markers no longer wanted (the coordinator moved)");
            return;
        }
        let mut here = Vec::new();
        let mut remote: BTreeMap<(i32, String), Vec<TopicPartition>> = BTreeMap::new();
        for tp in &remaining {
            match route(&broker, tp) {
                Route::Here => here.push(tp.clone()),
                Route::Broker(id, addr) => remote.entry((id, addr)).or_default().push(tp.clone()),
                Route::Gone => {
                    tracing::info!(partition = %tp, "no marker for a deleted partition");
                    here.push(tp.clone());
                }
                Route::Unknown => {}
            }
        }
        let mut results: Vec<(TopicPartition, ErrorCode)> = Vec::new();
        if !here.is_empty() {
            let (gone, led): (Vec<_>, Vec<_>) = here
                .into_iter()
                .partition(|tp| matches!(route(&broker, tp), Route::Gone));
            results.extend(gone.into_iter().map(|tp| (tp, ErrorCode::NONE)));
            let marker = Marker {
                producer_id: m.producer_id,
                producer_epoch: m.producer_epoch,
                coordinator_epoch: m.coordinator_epoch,
                commit,
            };
            results.extend(write_markers_here(&broker, &marker, led).await);
        }
        for ((id, addr), tps) in remote {
            results.extend(send_markers(&peers, id, &addr, &m, commit, tps).await);
        }
        for (tp, code) in results {
            match code {
                ErrorCode::NONE => {
                    remaining.remove(&tp);
                    broker.txn.marker_written(&m.transactional_id, &tp);
                }
                // A newer coordinator or producer has taken over: these markers are not
                // ours to write any more (Kafka stops sending them).
                ErrorCode::INVALID_PRODUCER_EPOCH | ErrorCode::TRANSACTION_COORDINATOR_FENCED => {
                    tracing::warn!(partition = %tp, error = %code, transactional_id = %m.transactional_id,
                        "marker refused as stale; no more markers for this transaction");
                    return;
                }
                code => {
                    tracing::debug!(partition = %tp, error = %code, "marker not written; retrying");
                }
            }
        }
        if remaining.is_empty() {
            return;
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(MARKER_BACKOFF_MAX);
    }
}

/// One COMMIT or ABORT marker of a producer's transaction.
#[derive(Debug, Clone, Copy)]
pub struct Marker {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub coordinator_epoch: i32,
    pub commit: bool,
}

/// Writes `marker` in each of `partitions` led here and waits for the in-sync replicas; a
/// `__consumer_offsets` partition then completes the producer's transactional offset
/// commits there. Shared by the local coordinator and the WriteTxnMarkers handler.
pub async fn write_markers_here(
    broker: &Broker,
    marker: &Marker,
    partitions: Vec<TopicPartition>,
) -> Vec<(TopicPartition, ErrorCode)> {
    let now = now_ms();
    let mut results = Vec::with_capacity(partitions.len());
    let mut waits = Vec::new();
    for tp in partitions {
        let Some(part) = broker.led_partition(&tp.topic, tp.partition) else {
            let code = broker.partition_error(&tp.topic, tp.partition).error_code();
            results.push((tp, code));
            continue;
        };
        // Written with acks=all, so under `min.insync.replicas` as a produce is (Kafka's
        // markers are refused NOT_ENOUGH_REPLICAS there too, and retried).
        let min_insync = broker.produce_rules(&tp.topic).min_insync_replicas;
        if let Err(e) = part.check_min_insync(min_insync) {
            results.push((tp, e.error_code()));
            continue;
        }
        match part.write_txn_marker(
            marker.producer_id,
            marker.producer_epoch,
            marker.coordinator_epoch,
            marker.commit,
            now,
        ) {
            Ok((_, pending)) => waits.push((tp, pending.with_min_insync(min_insync))),
            Err(e) => {
                tracing::debug!(partition = %tp, error = %e, "marker refused");
                results.push((tp, e.error_code()));
            }
        }
    }
    if waits.is_empty() {
        return results;
    }
    let deadline = tokio::time::Instant::now() + MARKER_TIMEOUT;
    let (tps, pending): (Vec<_>, Vec<_>) = waits.into_iter().unzip();
    let acked = delayed::complete_appends(pending, Acks::All, deadline).await;
    for (tp, r) in tps.into_iter().zip(acked) {
        let code = match r {
            Ok(()) => {
                if tp.topic == OFFSETS_TOPIC {
                    broker.groups.complete_transaction(
                        tp.partition,
                        marker.producer_id,
                        marker.commit,
                    );
                }
                ErrorCode::NONE
            }
            Err(e) => e.error_code(),
        };
        results.push((tp, code));
    }
    results
}

/// Sends markers to broker `id` and reads its answer per partition (a failed request fails
/// every partition of it, to be retried).
async fn send_markers(
    peers: &Peers,
    id: i32,
    addr: &str,
    m: &MarkerRequest,
    commit: bool,
    partitions: Vec<TopicPartition>,
) -> Vec<(TopicPartition, ErrorCode)> {
    let mut topics: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
    for tp in &partitions {
        topics.entry(&tp.topic).or_default().push(tp.partition);
    }
    let request = WriteTxnMarkersRequest {
        markers: vec![WritableTxnMarker {
            producer_id: m.producer_id,
            producer_epoch: m.producer_epoch,
            transaction_result: commit,
            coordinator_epoch: m.coordinator_epoch,
            topics: topics
                .into_iter()
                .map(|(name, partition_indexes)| WritableTxnMarkerTopic {
                    name: KStr::from(name.to_owned()),
                    partition_indexes,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }],
        ..Default::default()
    };
    let fail = |code: ErrorCode| partitions.iter().map(|tp| (tp.clone(), code)).collect();
    let conn = match peers.connection(id, addr).await {
        Ok(c) => c,
        Err(e) => {
            tracing::debug!(broker = id, addr, error = %e, "cannot reach a partition leader for markers");
            return fail(ErrorCode::NETWORK_EXCEPTION);
        }
    };
    let answer = match conn
        .request_at(RequestBody::WriteTxnMarkers(request), 1)
        .await
    {
        Ok(ResponseBody::WriteTxnMarkers(r)) => r,
        Ok(_) => return fail(ErrorCode::UNKNOWN_SERVER_ERROR),
        Err(e) => {
            tracing::debug!(broker = id, error = %e, "WriteTxnMarkers failed");
            return fail(ErrorCode::NETWORK_EXCEPTION);
        }
    };
    let mut out: Vec<(TopicPartition, ErrorCode)> = Vec::new();
    for marker in answer.markers {
        for t in marker.topics {
            for p in t.partitions {
                out.push((
                    TopicPartition::new(t.name.as_str(), p.partition_index),
                    ErrorCode::from(p.error_code),
                ));
            }
        }
    }
    // A partition the answer left out is retried.
    for tp in partitions {
        if !out.iter().any(|(t, _)| *t == tp) {
            out.push((tp, ErrorCode::UNKNOWN_SERVER_ERROR));
        }
    }
    out
}
