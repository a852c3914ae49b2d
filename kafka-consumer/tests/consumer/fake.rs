//! A scripted two-broker cluster on 127.0.0.1:0 for what one real broker cannot show: a
//! partition moving to another leader with a new epoch and a log that diverged (an unclean
//! election). Each fake broker keeps its own copy of the partition `t-0` as a list of
//! batches; the shared state says who leads at which epoch. Brokers answer ApiVersions,
//! Metadata, Fetch, ListOffsets and OffsetForLeaderEpoch, and log every request.
//!
//! With leader hints on ([`FakeCluster::start_with_hints`]) the brokers speak Fetch v16 (by
//! topic id) and refuse a fetch at a non-leader naming the leader and its endpoint (KIP-951),
//! while Metadata keeps naming the leader it named first: only the hint can move a client.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use kafka_net::server::{RequestReader, response_chunks, write_chunks};
use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::*;
use kafka_protocol::record::{RecordBatch, RecordBatchBuilder};
use tokio::net::TcpListener;

pub(crate) const TOPIC: &str = "t";

/// A request as a broker saw it.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    pub(crate) node: i32,
    pub(crate) body: RequestBody,
}

pub(crate) struct State {
    pub(crate) leader: i32,
    pub(crate) epoch: i32,
    /// Batches of `t-0` per node (index 0: node 1).
    pub(crate) logs: [Vec<Bytes>; 2],
    pub(crate) seen: Vec<Seen>,
    addrs: Vec<(i32, String, i32)>,
    /// KIP-951 mode: the (leader, epoch) Metadata keeps answering.
    hints: Option<(i32, i32)>,
}

/// The topic id of `t` in leader-hint mode.
const TOPIC_ID: kafka_protocol::Uuid = kafka_protocol::Uuid([9; 16]);

pub(crate) struct FakeCluster {
    pub(crate) state: Arc<Mutex<State>>,
    pub(crate) bootstrap: String,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Drop for FakeCluster {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// A batch of `n` records from `base`, written in leader epoch `epoch`; values name both.
pub(crate) fn epoch_batch(base: i64, n: i64, epoch: i32) -> Bytes {
    let mut b = RecordBatchBuilder::new()
        .base_offset(base)
        .partition_leader_epoch(epoch);
    for i in base..base + n {
        b.append(i, None, Some(format!("e{epoch}-{i}").as_bytes()), &[])
            .unwrap();
    }
    b.build().unwrap()
}

impl FakeCluster {
    pub(crate) async fn start(logs: [Vec<Bytes>; 2]) -> Self {
        Self::start_mode(logs, None).await
    }

    /// Leader-hint mode (see the module docs); Metadata always says node 1 leads epoch 0.
    pub(crate) async fn start_with_hints(logs: [Vec<Bytes>; 2]) -> Self {
        Self::start_mode(logs, Some((1, 0))).await
    }

    async fn start_mode(logs: [Vec<Bytes>; 2], hints: Option<(i32, i32)>) -> Self {
        let state = Arc::new(Mutex::new(State {
            leader: 1,
            epoch: 0,
            logs,
            seen: Vec::new(),
            addrs: Vec::new(),
            hints,
        }));
        let mut tasks = Vec::new();
        let mut bootstrap = String::new();
        for node in [1, 2] {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            state
                .lock()
                .unwrap()
                .addrs
                .push((node, addr.ip().to_string(), i32::from(addr.port())));
            if node == 1 {
                bootstrap = addr.to_string();
            }
            let state = state.clone();
            tasks.push(tokio::spawn(async move {
                loop {
                    let Ok((sock, _)) = listener.accept().await else {
                        return;
                    };
                    tokio::spawn(serve(node, sock, state.clone()));
                }
            }));
        }
        Self {
            state,
            bootstrap,
            tasks,
        }
    }

    /// Moves the leadership.
    pub(crate) fn elect(&self, leader: i32, epoch: i32) {
        let mut s = self.state.lock().unwrap();
        s.leader = leader;
        s.epoch = epoch;
    }

    pub(crate) fn seen(&self) -> Vec<Seen> {
        self.state.lock().unwrap().seen.clone()
    }
}

async fn serve(node: i32, sock: tokio::net::TcpStream, state: Arc<Mutex<State>>) {
    let (read, mut write) = sock.into_split();
    let mut reader = RequestReader::new(read, 1 << 24);
    while let Ok(Some(incoming)) = reader.next().await {
        let Ok(req) = incoming.request else { return };
        let version = req.header.request_api_version;
        let (body, wait) = answer(node, &state, req.body);
        if let Some(w) = wait {
            tokio::time::sleep(w).await;
        }
        let chunks = response_chunks(req.header.correlation_id, &body, version).unwrap();
        if write_chunks(&mut write, &chunks).await.is_err() {
            return;
        }
    }
}

fn batches(log: &[Bytes]) -> Vec<RecordBatch> {
    log.iter()
        .map(|b| RecordBatch::from_bytes(b.clone()).unwrap())
        .collect()
}

fn log_end(log: &[Bytes]) -> i64 {
    batches(log).last().map_or(0, RecordBatch::next_offset)
}

fn answer(node: i32, state: &Mutex<State>, body: RequestBody) -> (ResponseBody, Option<Duration>) {
    let mut s = state.lock().unwrap();
    s.seen.push(Seen {
        node,
        body: body.clone(),
    });
    let log = s.logs[(node - 1) as usize].clone();
    match body {
        RequestBody::ApiVersions(_) => {
            let apis = [
                (ApiKey::Fetch, if s.hints.is_some() { 16 } else { 12 }),
                (ApiKey::ListOffsets, 7),
                (ApiKey::Metadata, 12),
                (ApiKey::OffsetForLeaderEpoch, 4),
                (ApiKey::ApiVersions, 3),
            ];
            let resp = ApiVersionsResponse {
                api_keys: apis
                    .iter()
                    .map(|(k, max)| api_versions_response::ApiVersion {
                        api_key: *k as i16,
                        min_version: 0,
                        max_version: *max,
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            };
            (ResponseBody::ApiVersions(resp), None)
        }
        RequestBody::Metadata(_) => {
            let (leader, epoch) = s.hints.unwrap_or((s.leader, s.epoch));
            let resp = MetadataResponse {
                brokers: s
                    .addrs
                    .iter()
                    .map(
                        |(id, host, port)| metadata_response::MetadataResponseBroker {
                            node_id: *id,
                            host: KStr::from(host.clone()),
                            port: *port,
                            ..Default::default()
                        },
                    )
                    .collect(),
                controller_id: 1,
                topics: vec![metadata_response::MetadataResponseTopic {
                    name: Some(KStr::from_static(TOPIC)),
                    topic_id: if s.hints.is_some() {
                        TOPIC_ID
                    } else {
                        kafka_protocol::Uuid::ZERO
                    },
                    partitions: vec![metadata_response::MetadataResponsePartition {
                        partition_index: 0,
                        leader_id: leader,
                        leader_epoch: epoch,
                        replica_nodes: vec![1, 2],
                        isr_nodes: vec![leader],
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
                ..Default::default()
            };
            (ResponseBody::Metadata(resp), None)
        }
        RequestBody::Fetch(req) => {
            let p = &req.topics[0].partitions[0];
            let mut pd = fetch_response::PartitionData {
                partition_index: 0,
                high_watermark: log_end(&log),
                last_stable_offset: log_end(&log),
                log_start_offset: 0,
                preferred_read_replica: -1,
                records: Some(Bytes::new()),
                ..Default::default()
            };
            let mut wait = None;
            let mut node_endpoints = Vec::new();
            if node != s.leader {
                pd.error_code = ErrorCode::NOT_LEADER_OR_FOLLOWER.code();
                if s.hints.is_some() {
                    pd.current_leader = fetch_response::LeaderIdAndEpoch {
                        leader_id: s.leader,
                        leader_epoch: s.epoch,
                        ..Default::default()
                    };
                    let (id, host, port) = s.addrs[(s.leader - 1) as usize].clone();
                    node_endpoints.push(fetch_response::NodeEndpoint {
                        node_id: id,
                        host: KStr::from(host),
                        port,
                        ..Default::default()
                    });
                }
            } else if p.current_leader_epoch >= 0 && p.current_leader_epoch < s.epoch {
                pd.error_code = ErrorCode::FENCED_LEADER_EPOCH.code();
            } else if p.fetch_offset > log_end(&log) {
                pd.error_code = ErrorCode::OFFSET_OUT_OF_RANGE.code();
            } else {
                let data: Vec<u8> = log
                    .iter()
                    .filter(|b| {
                        RecordBatch::from_bytes((*b).clone()).unwrap().next_offset()
                            > p.fetch_offset
                    })
                    .flat_map(|b| b.to_vec())
                    .collect();
                if data.is_empty() {
                    wait = Some(Duration::from_millis(
                        u64::try_from(req.max_wait_ms).unwrap_or(0).min(100),
                    ));
                }
                pd.records = Some(Bytes::from(data));
            }
            let by_id = s.hints.is_some();
            let resp = FetchResponse {
                responses: vec![fetch_response::FetchableTopicResponse {
                    topic: if by_id {
                        KStr::default()
                    } else {
                        KStr::from_static(TOPIC)
                    },
                    topic_id: if by_id {
                        TOPIC_ID
                    } else {
                        kafka_protocol::Uuid::ZERO
                    },
                    partitions: vec![pd],
                    ..Default::default()
                }],
                node_endpoints,
                ..Default::default()
            };
            (ResponseBody::Fetch(resp), wait)
        }
        RequestBody::ListOffsets(req) => {
            let p = &req.topics[0].partitions[0];
            let offset = if p.timestamp == -2 { 0 } else { log_end(&log) };
            let resp = ListOffsetsResponse {
                topics: vec![list_offsets_response::ListOffsetsTopicResponse {
                    name: KStr::from_static(TOPIC),
                    partitions: vec![list_offsets_response::ListOffsetsPartitionResponse {
                        partition_index: 0,
                        offset,
                        timestamp: -1,
                        leader_epoch: s.epoch,
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
                ..Default::default()
            };
            (ResponseBody::ListOffsets(resp), None)
        }
        RequestBody::OffsetForLeaderEpoch(req) => {
            let p = &req.topics[0].partitions[0];
            // The end of epoch e: where the first later epoch starts, else the log end;
            // reported with the largest epoch not above e.
            let all = batches(&log);
            let end = all
                .iter()
                .find(|b| b.partition_leader_epoch() > p.leader_epoch)
                .map_or_else(|| log_end(&log), RecordBatch::base_offset);
            let epoch = all
                .iter()
                .map(RecordBatch::partition_leader_epoch)
                .filter(|e| *e <= p.leader_epoch)
                .max()
                .unwrap_or(-1);
            let mut r = offset_for_leader_epoch_response::EpochEndOffset {
                partition: 0,
                leader_epoch: epoch,
                end_offset: if epoch < 0 { -1 } else { end },
                ..Default::default()
            };
            if node != s.leader {
                r.error_code = ErrorCode::NOT_LEADER_OR_FOLLOWER.code();
            } else if p.current_leader_epoch >= 0 && p.current_leader_epoch < s.epoch {
                r.error_code = ErrorCode::FENCED_LEADER_EPOCH.code();
            }
            let resp = OffsetForLeaderEpochResponse {
                topics: vec![
                    offset_for_leader_epoch_response::OffsetForLeaderTopicResult {
                        topic: KStr::from_static(TOPIC),
                        partitions: vec![r],
                        ..Default::default()
                    },
                ],
                ..Default::default()
            };
            (ResponseBody::OffsetForLeaderEpoch(resp), None)
        }
        other => panic!("the fake broker got an unexpected {:?}", other.api_key()),
    }
}
