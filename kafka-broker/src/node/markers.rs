//! The markers that end transactions, written through the partition layer here or sent as
//! WriteTxnMarkers to the broker that leads the partition. (The coordinator's own records go
//! to `__transaction_state` through its shell and `crate::coordinator::InternalTopic`.)
//!
//! [`run`] takes the coordinator's marker queue and runs its timers: each marker request gets
//! a task that writes every partition's marker, retrying what failed until each is written,
//! its topic is gone, or the coordinator no longer waits for it (it resigned the
//! transactional id's partition).
//!
//! Lock order: nothing here holds the coordinator's lock across a partition call; reports go
//! back through [`crate::txn::TxnCoordinator`]'s methods, each taking the lock briefly.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::write_txn_markers_request::{
    WritableTxnMarker, WritableTxnMarkerTopic,
};
use kafka_protocol::messages::{RequestBody, ResponseBody, WriteTxnMarkersRequest};

use super::Broker;
use crate::coordinator::OFFSETS_TOPIC;
use crate::log::TopicPartition;
use crate::replica::delayed;
use crate::replication::Channel;
use crate::txn::{MarkerRequest, TxnResult};

/// How long a marker append waits for the in-sync replicas.
const MARKER_TIMEOUT: Duration = Duration::from_secs(10);
/// The wait before markers that failed are tried again, doubling up to the maximum.
const MARKER_BACKOFF: Duration = Duration::from_millis(50);
const MARKER_BACKOFF_MAX: Duration = Duration::from_secs(1);

/// Runs the coordinator's markers and timers until `stop` completes.
pub async fn run(broker: Arc<Broker>, stop: impl Future<Output = ()>) {
    let Some(mut work) = broker.txn.take_work() else {
        return;
    };
    let timers = {
        let b = Arc::clone(&broker);
        async move { b.txn.run_timers().await }
    };
    tokio::pin!(stop, timers);
    loop {
        tokio::select! {
            m = work.recv() => match m {
                Some(m) => {
                    tokio::spawn(write_markers(Arc::clone(&broker), m));
                }
                None => return,
            },
            () = &mut timers => return,
            () = &mut stop => return,
        }
    }
}

// ---- markers ----

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
    let listener = broker
        .config
        .network
        .effective_inter_broker_listener_name()
        .unwrap_or_else(|| "PLAINTEXT".to_owned());
    match link
        .current()
        .state
        .image
        .leader_endpoint(&tp.topic, tp.partition, &listener)
    {
        Some(leader) => Route::Broker(leader.node_id, leader.addr()),
        None => Route::Unknown,
    }
}

/// Writes the markers of one ended transaction until every partition has its marker.
async fn write_markers(broker: Arc<Broker>, m: MarkerRequest) {
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
            results.extend(send_markers(&broker, id, &addr, &m, commit, tps).await);
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
    let now = broker.now_ms();
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
        match part.write_txn_marker(
            marker.producer_id,
            marker.producer_epoch,
            marker.coordinator_epoch,
            marker.commit,
            now,
        ) {
            Ok((_, pending)) => waits.push((tp, pending)),
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
    let acked = delayed::complete_appends(pending, deadline).await;
    for (tp, r) in tps.into_iter().zip(acked) {
        let code = match r {
            Ok(()) => {
                if &*tp.topic == OFFSETS_TOPIC {
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
    broker: &Broker,
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
    let conn = match broker
        .peers
        .connection(
            id,
            addr,
            Channel::Markers,
            MARKER_TIMEOUT + Duration::from_secs(5),
        )
        .await
    {
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
            broker.peers.forget(id, Channel::Markers);
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
