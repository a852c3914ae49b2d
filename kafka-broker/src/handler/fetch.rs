//! Fetch: whole batches from the fetch offset, bounded by partition and response byte limits,
//! waiting up to `max_wait_ms` for `min_bytes` (a delayed fetch of the partition layer, woken
//! only when one of the partitions it names changes). Sessions are not kept: every
//! fetch is a full fetch and the answer's session id is 0 (KIP-227 allows that). Record data
//! is planned as file regions and sent with `sendfile` (see [`crate::sendfile`]).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::fetch_response::{
    FetchableTopicResponse, LeaderIdAndEpoch, PartitionData,
};
use kafka_protocol::messages::{FetchRequest, FetchResponse, ResponseBody};
use kafka_protocol::{KStr, Uuid};
use tokio::time::Instant;

use crate::broker::Broker;
use crate::convert::FetchFormat;
use crate::replica::{Partition, delayed};
use crate::sendfile::Regions;

const READ_COMMITTED: i8 = 1;

struct Wanted {
    topic: KStr,
    topic_id: Uuid,
    partition: i32,
    offset: i64,
    max_bytes: usize,
    current_leader_epoch: i32,
}

/// Answers a fetch. Record sets large enough to be chained by the encoder are placeholders
/// whose file regions are in the returned [`Regions`] (sent with `sendfile`).
pub(super) async fn handle(
    broker: &Broker,
    req: FetchRequest,
    version: i16,
) -> (ResponseBody, Regions) {
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
            .min(broker.config.fetch_max_wait_cap_ms),
    );
    let min_bytes = usize::try_from(req.min_bytes).unwrap_or(0);
    // The broker's own cap (`fetch.max.bytes`) bounds every answer, whatever the request
    // asks (Fetch v0-2 name no limit at all).
    let response_max = if version >= 3 {
        usize::try_from(req.max_bytes).unwrap_or(0)
    } else {
        usize::MAX
    }
    .min(broker.config.fetch_max_bytes);
    let deadline = Instant::now() + max_wait;
    // A follower replicating (its replica id, v15+ in ReplicaState): it reads up to the log
    // end, and its fetch offset is its log end, from which the high watermark follows.
    let replica = if version >= 15 {
        req.replica_state.replica_id
    } else {
        req.replica_id
    };
    let follower = (replica >= 0 && broker.cluster().is_some()).then_some(replica);
    let hosted: Vec<Option<Arc<Partition>>> = wanted
        .iter()
        .map(|w| {
            if w.topic.is_empty() {
                None
            } else {
                broker.led_partition(&w.topic, w.partition)
            }
        })
        .collect();
    if let Some(replica) = follower {
        let now = crate::broker::now_ms();
        for (w, part) in wanted.iter().zip(&hosted) {
            if let Some(part) = part {
                if let Some(change) = part.update_follower(replica, w.offset, now) {
                    broker.isr.submit(part, change);
                }
            }
        }
    }
    let watched: Vec<Arc<Partition>> = hosted.iter().flatten().cloned().collect();
    let plan = Plan {
        follower: follower.is_some(),
        by_id,
        read_committed,
        response_max,
        format: FetchFormat::for_version(version),
    };
    let (parts, regions) = delayed::fetch_until(&watched, deadline, || {
        let mut regions = Regions::default();
        let (parts, total, any_error) = read_all(broker, &wanted, &hosted, &plan, &mut regions);
        let done = total >= min_bytes || any_error || min_bytes == 0;
        ((parts, regions), done)
    })
    .await;
    (respond(parts, by_id, version), regions)
}

/// What a fetch reads, the same for each of its attempts.
struct Plan {
    /// A follower's fetch: read up to the log end.
    follower: bool,
    by_id: bool,
    read_committed: bool,
    /// The response's byte limit.
    response_max: usize,
    format: FetchFormat,
}

fn read_all<'w>(
    broker: &Broker,
    wanted: &'w [Wanted],
    hosted: &[Option<Arc<Partition>>],
    plan: &Plan,
    regions: &mut Regions,
) -> (Vec<(&'w Wanted, PartitionData)>, usize, bool) {
    let Plan {
        follower,
        by_id,
        read_committed,
        response_max,
        ..
    } = *plan;
    let mut total = 0usize;
    let mut any_error = false;
    let mut out = Vec::with_capacity(wanted.len());
    for (w, part) in wanted.iter().zip(hosted) {
        let mut pd = PartitionData {
            partition_index: w.partition,
            high_watermark: -1,
            last_stable_offset: -1,
            log_start_offset: -1,
            preferred_read_replica: -1,
            aborted_transactions: read_committed.then(Vec::new),
            records: Some(Bytes::new()),
            ..Default::default()
        };
        let Some(part) = part else {
            pd.error_code = if by_id && w.topic.is_empty() {
                ErrorCode::UNKNOWN_TOPIC_ID.code()
            } else {
                broker
                    .partition_error(&w.topic, w.partition)
                    .error_code()
                    .code()
            };
            any_error = true;
            out.push((w, pd));
            continue;
        };
        let offsets = part.offsets();
        pd.high_watermark = offsets.high_watermark;
        pd.last_stable_offset = offsets.last_stable;
        pd.log_start_offset = offsets.log_start;
        if let Err(code) = part.check_leader_epoch(w.current_leader_epoch) {
            pd.error_code = code.code();
            // The leader as this broker knows it (a tagged field from v12; KIP-951).
            pd.current_leader = LeaderIdAndEpoch {
                leader_id: broker.config.node_id,
                leader_epoch: part.leader_epoch(),
                ..Default::default()
            };
            any_error = true;
            out.push((w, pd));
            continue;
        }
        if w.offset < offsets.log_start || w.offset > offsets.log_end {
            pd.error_code = ErrorCode::OFFSET_OUT_OF_RANGE.code();
            any_error = true;
            out.push((w, pd));
            continue;
        }
        let upper = if follower {
            offsets.log_end
        } else if read_committed {
            offsets.last_stable
        } else {
            offsets.high_watermark
        };
        // KIP-74: the first partition with data may exceed the response limit by one batch.
        let budget = response_max.saturating_sub(total).min(w.max_bytes);
        if w.offset < upper && (budget > 0 || total == 0) {
            let read = part
                .read_slices(w.offset, budget.max(1), upper)
                .and_then(|mut info| {
                    if plan.format.converts() {
                        // Fetch v0-3: down-converted, read into memory.
                        return plan.format.convert(info.read_bytes()?, w.offset, budget);
                    }
                    if plan.format == FetchFormat::NoZstd {
                        info.slices = crate::convert::zstd_free(info.slices)?;
                        info.bytes = info.slices.iter().map(|s| s.len).sum();
                    }
                    let len = info.bytes;
                    match broker.config.sendfile {
                        true => match regions.placeholder(info.slices.clone(), len) {
                            Some(b) => Ok(b),
                            None => Ok(info.read_bytes()?),
                        },
                        false => Ok(info.read_bytes()?),
                    }
                });
            match read {
                Ok(bytes) => {
                    total += bytes.len();
                    pd.records = Some(bytes);
                }
                Err(e) => {
                    pd.error_code = e.error_code().code();
                    any_error = true;
                }
            }
        }
        out.push((w, pd));
    }
    (out, total, any_error)
}

fn respond(parts: Vec<(&Wanted, PartitionData)>, by_id: bool, _version: i16) -> ResponseBody {
    let mut responses: Vec<FetchableTopicResponse> = Vec::new();
    for (w, pd) in parts {
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
    ResponseBody::Fetch(FetchResponse {
        responses,
        ..Default::default()
    })
}
