//! Fetch: whole batches from the fetch offset, bounded by partition and response byte limits,
//! waiting up to `max_wait_ms` for `min_bytes` (a delayed fetch of the partition layer, woken
//! only when one of the partitions it names changes). Sessions are not kept: every
//! fetch is a full fetch and the answer's session id is 0 (KIP-227 allows that). Record data
//! is planned as file regions and sent with `sendfile` (see [`crate::sendfile`]).
//!
//! Who reads what, in a cluster (Kafka's rules):
//! - A follower replicating (a replica id) reads the leader's log up to its end; only the
//!   leader answers it.
//! - A consumer's fetch that carries client metadata (v11+) may be answered by any replica,
//!   up to that replica's high watermark (KIP-392); older consumers read from the leader
//!   only. With `replica.selector.class` set, the leader may instead answer with a preferred
//!   read replica and no records ([`crate::replica::selector`]), and the consumer goes there.
//! - Partitions refused with NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH name the current
//!   leader from v16 (KIP-951, [`super::leader_hints`]).
//!
//! Isolation (v4+): read_uncommitted reads up to the high watermark and its answers carry no
//! aborted transactions (null, as Kafka's); read_committed reads up to the last stable offset
//! and lists every aborted transaction overlapping the batches returned (from the
//! `.txnindex` files), so that the consumer drops their records. A follower replicating reads
//! up to the log end whatever the isolation. A long poll is woken when the high watermark
//! moves, which is when the last stable offset can move.
//!
//! Authorization, as Kafka's `handleFetchRequest`: a fetch naming a replica id (>= 0) needs
//! CLUSTER_ACTION on the cluster, else every partition is answered TOPIC_AUTHORIZATION_FAILED
//! and nothing is read or moved, so a client cannot act as a replica; a consumer's fetch needs
//! READ on each topic, else that topic's partitions are answered TOPIC_AUTHORIZATION_FAILED
//! (before UNKNOWN_TOPIC_OR_PARTITION; an unknown topic id stays UNKNOWN_TOPIC_ID, as ids are
//! not secret).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kafka_auth::acl::AclOperation;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::fetch_response::{
    AbortedTransaction, FetchableTopicResponse, LeaderIdAndEpoch, NodeEndpoint, PartitionData,
};
use kafka_protocol::messages::{FetchRequest, FetchResponse, ResponseBody};
use kafka_protocol::{KStr, Uuid};
use tokio::time::Instant;

use super::authz::Authz;
use super::context::RequestContext;
use super::leader_hints::LeaderHints;
use crate::cluster::active::SharedState;
use crate::config::ReplicaSelectorClass;
use crate::convert::FetchFormat;
use crate::node::Broker;
use crate::replica::delayed::{self, Watch};
use crate::replica::partition::ReadFailed;
use crate::replica::selector::{self, ReplicaView};
use crate::replica::{Isolation, Partition};
use crate::sendfile::Regions;

const READ_COMMITTED: i8 = 1;

struct Wanted {
    topic: KStr,
    topic_id: Uuid,
    partition: i32,
    offset: i64,
    max_bytes: usize,
    current_leader_epoch: i32,
    /// The fetching follower's log start offset (v5+; -1 otherwise).
    log_start_offset: i64,
    /// Not authorized: answered TOPIC_AUTHORIZATION_FAILED, never read.
    denied: bool,
}

/// Answers a fetch; leader hints name endpoints on the listener of `ctx`, `authz` says what
/// the caller may read. Record sets large enough to be worth it are stand-ins whose file
/// regions are in the returned [`Regions`] (sent with `sendfile`).
pub(super) async fn handle(
    broker: &Broker,
    ctx: &RequestContext<'_>,
    authz: &Authz<'_>,
    req: FetchRequest,
    version: i16,
) -> (ResponseBody, Regions) {
    let listener = ctx.listener();
    if req.session_id != 0 {
        // We never hand out sessions, so an incremental fetch names one we do not know.
        let body = ResponseBody::Fetch(FetchResponse {
            error_code: ErrorCode::FETCH_SESSION_ID_NOT_FOUND.code(),
            ..Default::default()
        });
        return (body, Regions::default());
    }
    let by_id = version >= 13;
    let mut wanted = Vec::new();
    let mut seen: HashMap<(&[u8], i32), usize> = HashMap::new();
    for t in &req.topics {
        let name = if by_id {
            broker
                .topic_by_id(&t.topic_id)
                .map(|m| KStr::from(m.name))
                .unwrap_or_default()
        } else {
            t.topic.clone()
        };
        for p in &t.partitions {
            let w = Wanted {
                topic: name.clone(),
                topic_id: t.topic_id,
                partition: p.partition,
                offset: p.fetch_offset,
                max_bytes: usize::try_from(p.partition_max_bytes).unwrap_or(0),
                current_leader_epoch: p.current_leader_epoch,
                log_start_offset: if version >= 5 { p.log_start_offset } else { -1 },
                denied: false,
            };
            // A partition named twice is read once, as Kafka's map of the request's
            // partitions does (the last entry wins, in the first one's place): 200 copies of
            // one partition must not cost 200 reads and answers.
            let key: (&[u8], i32) = if by_id {
                (&t.topic_id.0[..], p.partition)
            } else {
                (t.topic.as_bytes(), p.partition)
            };
            match seen.get(&key) {
                Some(&i) => {
                    if let Some(slot) = wanted.get_mut(i) {
                        *slot = w;
                    }
                }
                None => {
                    seen.insert(key, wanted.len());
                    wanted.push(w);
                }
            }
        }
    }
    let read_committed = version >= 4 && req.isolation_level == READ_COMMITTED;
    let max_wait = Duration::from_millis(
        u64::try_from(req.max_wait_ms)
            .unwrap_or(0)
            .min(broker.config.server.fetch_max_wait_cap_ms),
    );
    let min_bytes = usize::try_from(req.min_bytes).unwrap_or(0);
    // The broker's own cap (`fetch.max.bytes`) bounds every answer, whatever the request
    // asks (Fetch v0-2 name no limit at all).
    let response_max = if version >= 3 {
        usize::try_from(req.max_bytes).unwrap_or(0)
    } else {
        usize::MAX
    }
    .min(broker.config.server.fetch_max_bytes);
    let deadline = Instant::now() + max_wait;
    // A follower replicating (its replica id, v15+ in ReplicaState): it reads up to the log
    // end, and its fetch offset is its log end, from which the high watermark follows.
    let replica = if version >= 15 {
        req.replica_state.replica_id
    } else {
        req.replica_id
    };
    // Kafka's `isFromFollower`: any replica id >= 0, on a single node too.
    let replica_allowed = replica >= 0 && authz.cluster(AclOperation::ClusterAction);
    let mut readable: HashMap<KStr, bool> = HashMap::new();
    for w in &mut wanted {
        w.denied = if replica >= 0 {
            !replica_allowed
        } else if w.topic.is_empty() {
            // An unknown topic id: UNKNOWN_TOPIC_ID below.
            false
        } else {
            !*readable
                .entry(w.topic.clone())
                .or_insert_with(|| authz.topic(AclOperation::Read, &w.topic))
        };
    }
    let nothing_readable = !wanted.is_empty() && wanted.iter().all(|w| w.denied);
    let follower = (replica_allowed && broker.is_clustered()).then_some(replica);
    // A consumer with client metadata (KIP-392) may read from any replica hosted here.
    let client_metadata = replica < 0 && version >= 11;
    let hosted: Vec<Option<Arc<Partition>>> = wanted
        .iter()
        .map(|w| {
            if w.topic.is_empty() || w.denied {
                None
            } else if client_metadata {
                broker.partition(&w.topic, w.partition)
            } else {
                broker.led_partition(&w.topic, w.partition)
            }
        })
        .collect();
    // A follower's fetch moves its state at the leader (its log end, the ISR, the high
    // watermark) only for the epoch the leader is at: one naming another epoch is refused for
    // that partition before anything moves.
    let fenced: Vec<Option<ErrorCode>> = match follower {
        Some(replica) => wanted
            .iter()
            .zip(&hosted)
            .map(|(w, part)| {
                let part = part.as_ref()?;
                broker
                    .replicas
                    .follower_fetched(
                        part,
                        replica,
                        w.current_leader_epoch,
                        w.offset,
                        w.log_start_offset,
                    )
                    .err()
            })
            .collect(),
        None => vec![None; wanted.len()],
    };
    let selection = match (broker.config.replication.replica_selector, broker.cluster()) {
        (Some(selector), Some(link)) if client_metadata => Some(Selection {
            selector,
            rack: req.rack_id.to_string(),
            listener: listener.to_owned(),
            state: link.current(),
        }),
        _ => None,
    };
    let watched: Vec<Arc<Partition>> = hosted.iter().flatten().cloned().collect();
    let isolation = if follower.is_some() {
        Isolation::LogEnd
    } else if read_committed {
        Isolation::Committed
    } else {
        Isolation::HighWatermark
    };
    let plan = Plan {
        isolation,
        by_id,
        read_committed,
        response_max,
        format: FetchFormat::for_version(version),
        selection,
        names_itself: !broker.is_clustered() && version >= 12,
        nothing_readable,
    };
    let watch = if follower.is_some() {
        Watch::Appended
    } else {
        Watch::Visible
    };
    // The time between the reads is a wait, not work (the request quota counts work).
    let started = Instant::now();
    let mut reading = Duration::ZERO;
    let (parts, regions) = delayed::fetch_until(&watched, watch, deadline, || {
        let read_started = Instant::now();
        let mut regions = Regions::default();
        let (parts, total, now) = read_all(broker, &wanted, &hosted, &fenced, &plan, &mut regions);
        let done = total >= min_bytes || now || min_bytes == 0 || plan.nothing_readable;
        reading += read_started.elapsed();
        ((parts, regions), done)
    })
    .await;
    ctx.waited(started.elapsed().saturating_sub(reading));
    let hints = (version >= 16).then(|| LeaderHints::new(broker, listener));
    (respond(parts, by_id, hints), regions)
}

/// What a leader needs to name a preferred read replica (KIP-392).
struct Selection {
    selector: ReplicaSelectorClass,
    /// The consumer's `RackId` (empty: none).
    rack: String,
    /// The listener the consumer came in on: replicas without an endpoint there are left out.
    listener: String,
    /// The metadata image (brokers' racks and liveness).
    state: SharedState,
}

impl Selection {
    /// The replica other than this leader that the consumer fetching `part` at `offset`
    /// should read from.
    fn preferred(&self, broker: &Broker, part: &Partition, offset: i64) -> Option<i32> {
        let image = &self.state.state.image;
        let rack_of = |id: i32| image.broker(id).and_then(|b| b.rack.clone());
        let reachable = |id: i32| image.endpoint(id, &self.listener).is_some();
        let me = broker.config.server.node_id;
        let offsets = part.offsets();
        let leader = ReplicaView {
            broker_id: me,
            rack: rack_of(me).or_else(|| broker.config.network.rack.clone()),
            log_start_offset: offsets.log_start,
            log_end_offset: offsets.log_end,
            in_sync: true,
            reachable: true,
        };
        let followers: Vec<ReplicaView> = part
            .followers()
            .into_iter()
            .map(|f| ReplicaView {
                broker_id: f.replica_id,
                rack: rack_of(f.replica_id),
                log_start_offset: f.log_start_offset,
                log_end_offset: f.log_end_offset,
                in_sync: f.in_sync,
                reachable: reachable(f.replica_id),
            })
            .collect();
        selector::preferred_read_replica(self.selector, &self.rack, offset, &leader, &followers)
    }
}

/// What a fetch reads, the same for each of its attempts.
struct Plan {
    /// What the fetcher may read: a follower up to the log end, a consumer up to the high
    /// watermark or the last stable offset.
    isolation: Isolation,
    by_id: bool,
    read_committed: bool,
    /// The response's byte limit.
    response_max: usize,
    format: FetchFormat,
    /// A consumer's fetch that a leader may send to another replica.
    selection: Option<Selection>,
    /// A single node answers an epoch it fences with itself as the leader (v12+, where the
    /// field exists); a cluster names the image's leader from v16, as Kafka does.
    names_itself: bool,
    /// Every partition was refused authorization: answered at once, as Kafka does when no
    /// partition is left to read.
    nothing_readable: bool,
}

/// One read of every wanted partition: the answers, the record bytes read, and whether the
/// fetch must be answered now whatever `min_bytes` says (an error, a preferred replica).
/// `fenced` holds the partitions a follower's fetch was refused for.
fn read_all<'w>(
    broker: &Broker,
    wanted: &'w [Wanted],
    hosted: &[Option<Arc<Partition>>],
    fenced: &[Option<ErrorCode>],
    plan: &Plan,
    regions: &mut Regions,
) -> (Vec<(&'w Wanted, PartitionData)>, usize, bool) {
    let mut total = 0usize;
    let mut answer_now = false;
    let mut out = Vec::with_capacity(wanted.len());
    for ((w, part), fenced) in wanted.iter().zip(hosted).zip(fenced) {
        let mut pd = PartitionData {
            partition_index: w.partition,
            high_watermark: -1,
            last_stable_offset: -1,
            log_start_offset: -1,
            preferred_read_replica: -1,
            aborted_transactions: plan.read_committed.then(Vec::new),
            records: Some(Bytes::new()),
            ..Default::default()
        };
        if w.denied {
            pd.error_code = ErrorCode::TOPIC_AUTHORIZATION_FAILED.code();
            out.push((w, pd));
            continue;
        }
        let Some(part) = part else {
            pd.error_code = if plan.by_id && w.topic.is_empty() {
                ErrorCode::UNKNOWN_TOPIC_ID.code()
            } else {
                broker
                    .partition_error(&w.topic, w.partition)
                    .error_code()
                    .code()
            };
            answer_now = true;
            out.push((w, pd));
            continue;
        };
        set_offsets(&mut pd, &part.offsets());
        let epoch_checked = match fenced {
            Some(code) => Err(*code),
            None => part.check_leader_epoch(w.current_leader_epoch),
        };
        if let Err(code) = epoch_checked {
            pd.error_code = code.code();
            if plan.names_itself {
                pd.current_leader = LeaderIdAndEpoch {
                    leader_id: broker.config.server.node_id,
                    leader_epoch: part.leader_epoch(),
                    ..Default::default()
                };
            }
            answer_now = true;
            out.push((w, pd));
            continue;
        }
        if let Some(selection) = plan.selection.as_ref().filter(|_| part.is_leader()) {
            if let Some(replica) = selection.preferred(broker, part, w.offset) {
                // Kafka skips the read: the consumer fetches from there next.
                pd.preferred_read_replica = replica;
                answer_now = true;
                out.push((w, pd));
                continue;
            }
        }
        // KIP-74: the first partition with data may exceed the response limit by one batch.
        let budget = plan.response_max.saturating_sub(total).min(w.max_bytes);
        let range = match part.read_range(w.offset, budget, total == 0, plan.isolation) {
            Ok(range) => range,
            Err(ReadFailed { error, offsets }) => {
                set_offsets(&mut pd, &offsets);
                pd.error_code = error.error_code().code();
                answer_now = true;
                out.push((w, pd));
                continue;
            }
        };
        set_offsets(&mut pd, &range.offsets);
        if let Some(aborted) = range.aborted {
            pd.aborted_transactions = Some(
                aborted
                    .into_iter()
                    .map(|(producer_id, first_offset)| AbortedTransaction {
                        producer_id,
                        first_offset,
                        ..Default::default()
                    })
                    .collect(),
            );
        }
        let Some(mut info) = range.info else {
            out.push((w, pd));
            continue;
        };
        let read = (|| {
            if plan.format.converts() {
                // Fetch v0-3: down-converted, read into memory.
                let converted = plan.format.convert(info.read_bytes()?, w.offset, budget)?;
                let len = converted.len();
                return Ok((converted, len));
            }
            if plan.format == FetchFormat::NoZstd {
                info.slices = crate::convert::zstd_free(info.slices)?;
                info.bytes = info.slices.iter().map(|s| s.len).sum();
            }
            let len = info.bytes;
            match broker.config.server.sendfile {
                true => match regions.stand_in(info.slices.clone(), len) {
                    Some(b) => Ok((b, len)),
                    None => Ok((info.read_bytes()?, len)),
                },
                false => Ok((info.read_bytes()?, len)),
            }
        })();
        match read {
            // A record set sent from its files is a stand-in here: its true length counts.
            Ok((bytes, len)) => {
                total += len;
                pd.records = Some(bytes);
            }
            Err(e) => {
                let e: crate::error::BrokerError = e;
                pd.error_code = e.error_code().code();
                answer_now = true;
            }
        }
        out.push((w, pd));
    }
    (out, total, answer_now)
}

/// The partition's offsets as an answer carries them.
fn set_offsets(pd: &mut PartitionData, o: &crate::replica::Offsets) {
    pd.high_watermark = o.high_watermark;
    pd.last_stable_offset = o.last_stable;
    pd.log_start_offset = o.log_start;
}

/// The answer, by topic in request order. With `hints` (v16+), partitions refused for
/// leadership name the current leader, and the answer the leaders' endpoints.
fn respond(
    parts: Vec<(&Wanted, PartitionData)>,
    by_id: bool,
    mut hints: Option<LeaderHints>,
) -> ResponseBody {
    let mut responses: Vec<FetchableTopicResponse> = Vec::new();
    for (w, mut pd) in parts {
        let refused = [
            ErrorCode::NOT_LEADER_OR_FOLLOWER.code(),
            ErrorCode::FENCED_LEADER_EPOCH.code(),
        ];
        if let Some(hints) = hints.as_mut().filter(|_| refused.contains(&pd.error_code)) {
            if let Some((leader_id, leader_epoch)) = hints.leader_of(&w.topic, w.partition) {
                pd.current_leader = LeaderIdAndEpoch {
                    leader_id,
                    leader_epoch,
                    ..Default::default()
                };
            }
        }
        let same = responses.last().is_some_and(|t| {
            if by_id {
                t.topic_id == w.topic_id
            } else {
                t.topic == w.topic
            }
        });
        if !same {
            responses.push(FetchableTopicResponse {
                topic: if by_id {
                    KStr::default()
                } else {
                    w.topic.clone()
                },
                topic_id: if by_id { w.topic_id } else { Uuid::ZERO },
                partitions: Vec::new(),
                ..Default::default()
            });
        }
        if let Some(t) = responses.last_mut() {
            t.partitions.push(pd);
        }
    }
    let node_endpoints = hints
        .into_iter()
        .flat_map(LeaderHints::endpoints)
        .map(|e| NodeEndpoint {
            node_id: e.node_id,
            host: KStr::from(e.host),
            port: i32::from(e.port),
            rack: e.rack.map(KStr::from),
            ..Default::default()
        })
        .collect();
    ResponseBody::Fetch(FetchResponse {
        responses,
        node_endpoints,
        ..Default::default()
    })
}
