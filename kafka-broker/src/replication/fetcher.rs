//! One leader's fetcher: a loop of Fetch requests (v12, this broker's replica id, a long poll
//! of `replica.fetch.wait.max.ms`) for every partition followed from that leader, each first
//! checked with OffsetForLeaderEpoch after a leadership change (a divergent tail, written by an
//! old leader and never replicated, is cut before anything is fetched).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Weak};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use kafka_net::connection::{Connection, ConnectionConfig};
use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::offset_for_leader_epoch_request::{
    OffsetForLeaderPartition, OffsetForLeaderTopic,
};
use kafka_protocol::messages::{
    FetchRequest, OffsetForLeaderEpochRequest, RequestBody, ResponseBody,
};
use kafka_protocol::record::layout::{BATCH_LENGTH, LOG_OVERHEAD};
use tokio::sync::watch;

use super::peers::{Channel, PeerPool};
use super::{Followed, ReplicationConfig};
use crate::clock::Clock;
use crate::replica::{Partition, ReplicaManager};

const FETCH_VERSION: i16 = 12;
const EPOCH_VERSION: i16 = 4;

type Key = (String, i32);

/// What every fetcher of a broker works with: the partitions it appends to (gone with the
/// broker: the fetchers then end), its id, its clock, the `replica.*` settings and the
/// connections to the leaders.
#[derive(Debug, Clone)]
pub(super) struct Local {
    pub(super) replicas: Weak<ReplicaManager>,
    pub(super) node_id: i32,
    pub(super) clock: Clock,
    pub(super) settings: ReplicationConfig,
    pub(super) peers: Arc<PeerPool>,
}

/// Fetcher number `slot` of `leader` at `addr`, fetching the partitions `partitions` names
/// until that sender is gone or the broker is.
pub(super) async fn run(
    local: Local,
    leader: i32,
    slot: usize,
    addr: String,
    mut partitions: watch::Receiver<HashMap<Key, Followed>>,
) {
    let Local {
        replicas,
        node_id,
        clock,
        settings,
        peers,
    } = local;
    let channel = Channel::Fetcher(slot);
    // `replica.fetch.backoff.ms`: the wait after a failure before the next try.
    let backoff = Duration::from_millis(settings.fetch_backoff_ms);
    let request_timeout = ConnectionConfig::default().conn.request_timeout;
    // The leader epoch each partition was last checked (truncated) for.
    let mut checked: HashMap<Key, i32> = HashMap::new();
    loop {
        let wanted = partitions.borrow_and_update().clone();
        if wanted.is_empty() {
            if partitions.changed().await.is_err() {
                return;
            }
            continue;
        }
        let Some(b) = replicas.upgrade() else { return };
        let c = match peers
            .connection(leader, &addr, channel, request_timeout)
            .await
        {
            Ok(c) => c,
            Err(e) => {
                tracing::debug!(leader, %addr, error = %e, "cannot reach the leader to fetch");
                drop(b);
                if wait_or_change(&mut partitions, backoff).await.is_err() {
                    return;
                }
                continue;
            }
        };
        // Followed partitions hosted here as followers.
        let local: BTreeMap<Key, (Arc<Partition>, i32)> = wanted
            .iter()
            .filter_map(|(k, f)| {
                let p = b.get(&k.0, k.1).filter(|p| !p.is_leader())?;
                Some((k.clone(), (p, f.leader_epoch)))
            })
            .collect();
        checked.retain(|k, _| local.contains_key(k));
        let unchecked: Vec<(&Key, &Arc<Partition>, i32)> = local
            .iter()
            .filter(|(k, (_, e))| checked.get(*k) != Some(e))
            .map(|(k, (p, e))| (k, p, *e))
            .collect();
        if !unchecked.is_empty() {
            match truncate(node_id, &clock, &c, &unchecked).await {
                Ok(done) => checked.extend(done),
                Err(e) => {
                    tracing::debug!(leader, error = %e, "OffsetForLeaderEpoch failed");
                    peers.forget(leader, channel);
                }
            }
        }
        let ready: Vec<(&Key, &Arc<Partition>, i32)> = local
            .iter()
            .filter(|(k, (_, e))| checked.get(*k) == Some(e))
            .map(|(k, (p, e))| (k, p, *e))
            .collect();
        if ready.is_empty() {
            drop(b);
            if wait_or_change(&mut partitions, backoff).await.is_err() {
                return;
            }
            continue;
        }
        let req = fetch_request(node_id, &ready, &settings);
        let node = node_id;
        drop(b);
        let answer = tokio::select! {
            a = c.request_at(RequestBody::Fetch(Box::new(req)), FETCH_VERSION) => a,
            changed = partitions.changed() => {
                if changed.is_err() {
                    return;
                }
                continue;
            }
        };
        let Some(b) = replicas.upgrade() else { return };
        match answer {
            Ok(ResponseBody::Fetch(r)) => {
                let mut retry_later = false;
                for t in r.responses {
                    for pd in t.partitions {
                        let key = (t.topic.to_string(), pd.partition_index);
                        let Some((part, _)) = local.get(&key) else {
                            continue;
                        };
                        match ErrorCode::from(pd.error_code) {
                            ErrorCode::NONE => {
                                if let Some(records) = pd.records.filter(|r| !r.is_empty()) {
                                    if let Err(e) = append(part, records, clock.now_ms()) {
                                        tracing::warn!(topic = %key.0, partition = key.1, error = %e,
                                            "the records fetched from the leader were not appended");
                                        checked.remove(&key);
                                        retry_later = true;
                                        continue;
                                    }
                                }
                                part.set_high_watermark_from_leader(pd.high_watermark);
                                if let Err(e) = part.follow_log_start(pd.log_start_offset) {
                                    tracing::warn!(topic = %key.0, partition = key.1, error = %e,
                                        "the leader's log start offset was not taken");
                                }
                            }
                            ErrorCode::OFFSET_OUT_OF_RANGE
                                if pd.log_start_offset > part.log_end_offset() =>
                            {
                                // Behind the leader's log start: what would come next is
                                // gone there, so the log starts again where the leader's does.
                                tracing::info!(topic = %key.0, partition = key.1,
                                    log_end = part.log_end_offset(), leader_log_start = pd.log_start_offset,
                                    "behind the leader's log start; starting the log again there");
                                if let Err(e) = part.restart_at(pd.log_start_offset) {
                                    tracing::warn!(topic = %key.0, partition = key.1, error = %e,
                                        "the log could not start again at the leader's log start");
                                    retry_later = true;
                                }
                            }
                            ErrorCode::OFFSET_OUT_OF_RANGE => {
                                // Ahead of the leader's log (a divergent tail): check again.
                                checked.remove(&key);
                            }
                            code => {
                                tracing::debug!(node, leader, topic = %key.0, partition = key.1,
                                    error = ?code, "the leader refused a fetch; waiting for new metadata");
                                retry_later = true;
                            }
                        }
                    }
                }
                drop(b);
                if retry_later && wait_or_change(&mut partitions, backoff).await.is_err() {
                    return;
                }
            }
            Ok(_) => {}
            Err(e) => {
                tracing::debug!(leader, %addr, error = %e, "a fetch from the leader failed");
                peers.forget(leader, channel);
                drop(b);
                if wait_or_change(&mut partitions, backoff).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// Waits `d` or until the followed partitions change; `Err` when the sender is gone.
async fn wait_or_change(
    partitions: &mut watch::Receiver<HashMap<Key, Followed>>,
    d: Duration,
) -> Result<(), ()> {
    tokio::select! {
        () = tokio::time::sleep(d) => Ok(()),
        r = partitions.changed() => r.map_err(|_| ()),
    }
}

fn fetch_request(
    me: i32,
    ready: &[(&Key, &Arc<Partition>, i32)],
    settings: &ReplicationConfig,
) -> FetchRequest {
    let mut topics: Vec<FetchTopic> = Vec::new();
    for (key, part, epoch) in ready {
        let offsets = part.offsets();
        let p = FetchPartition {
            partition: key.1,
            current_leader_epoch: *epoch,
            fetch_offset: offsets.log_end,
            last_fetched_epoch: -1,
            log_start_offset: offsets.log_start,
            partition_max_bytes: settings.fetch_max_bytes,
            ..Default::default()
        };
        match topics.iter_mut().find(|t| t.topic.as_str() == key.0) {
            Some(t) => t.partitions.push(p),
            None => topics.push(FetchTopic {
                topic: KStr::from(key.0.clone()),
                partitions: vec![p],
                ..Default::default()
            }),
        }
    }
    FetchRequest {
        replica_id: me,
        max_wait_ms: settings.fetch_wait_max_ms,
        min_bytes: settings.fetch_min_bytes,
        max_bytes: settings.fetch_response_max_bytes,
        isolation_level: 0,
        topics,
        ..Default::default()
    }
}

/// Appends the whole batches of `records` (a fetch answer may end in a partial one).
fn append(part: &Partition, records: Bytes, now_ms: i64) -> Result<(), crate::error::BrokerError> {
    let whole = whole_batches(&records);
    if whole == 0 {
        return Ok(());
    }
    part.append_as_follower(BytesMut::from(&records[..whole]), now_ms)
        .map(|_| ())
}

/// The length of the leading run of whole record batches (each: the log overhead, base
/// offset and batch length, then that many bytes).
fn whole_batches(records: &[u8]) -> usize {
    let mut at = 0usize;
    while let Some(Ok(len)) = records
        .get(at + BATCH_LENGTH.offset..at + LOG_OVERHEAD)
        .and_then(|b| <[u8; 4]>::try_from(b).ok())
        .map(|b| usize::try_from(i32::from_be_bytes(b)))
    {
        let end = at + LOG_OVERHEAD + len;
        if end > records.len() {
            break;
        }
        at = end;
    }
    at
}

/// OffsetForLeaderEpoch for `partitions`: each is cut to where the leader's log agrees with
/// its latest epoch. Returns the partitions checked, with the epoch they were checked for.
async fn truncate(
    node_id: i32,
    clock: &Clock,
    c: &Connection,
    partitions: &[(&Key, &Arc<Partition>, i32)],
) -> Result<Vec<(Key, i32)>, String> {
    let mut done = Vec::new();
    let mut topics: Vec<OffsetForLeaderTopic> = Vec::new();
    for (key, part, epoch) in partitions {
        let latest = part.latest_log_epoch();
        if latest < 0 {
            // Nothing written under any epoch: nothing can diverge.
            done.push(((*key).clone(), *epoch));
            continue;
        }
        let p = OffsetForLeaderPartition {
            partition: key.1,
            current_leader_epoch: *epoch,
            leader_epoch: latest,
            ..Default::default()
        };
        match topics.iter_mut().find(|t| t.topic.as_str() == key.0) {
            Some(t) => t.partitions.push(p),
            None => topics.push(OffsetForLeaderTopic {
                topic: KStr::from(key.0.clone()),
                partitions: vec![p],
                ..Default::default()
            }),
        }
    }
    if topics.is_empty() {
        return Ok(done);
    }
    let req = OffsetForLeaderEpochRequest {
        replica_id: node_id,
        topics,
        ..Default::default()
    };
    let answer = tokio::time::timeout(
        Duration::from_secs(10),
        c.request_at(RequestBody::OffsetForLeaderEpoch(req), EPOCH_VERSION),
    )
    .await
    .map_err(|_| "no answer in 10 s".to_owned())?
    .map_err(|e| e.to_string())?;
    let ResponseBody::OffsetForLeaderEpoch(r) = answer else {
        return Err("an answer of another kind".into());
    };
    for t in r.topics {
        for p in t.partitions {
            let key = (t.topic.to_string(), p.partition);
            let Some((_, part, epoch)) = partitions.iter().find(|(k, _, _)| **k == key) else {
                continue;
            };
            if p.error_code != 0 {
                tracing::debug!(topic = %key.0, partition = key.1, error = ?ErrorCode::from(p.error_code),
                    "the leader refused OffsetForLeaderEpoch");
                continue;
            }
            let end = part.log_end_offset();
            if p.end_offset >= 0 && p.end_offset < end {
                tracing::info!(topic = %key.0, partition = key.1, from = end, to = p.end_offset,
                    leader_epoch = p.leader_epoch, "truncating a divergent tail before fetching");
                part.truncate_to(p.end_offset, clock.now_ms())
                    .map_err(|e| e.to_string())?;
            }
            done.push((key, *epoch));
        }
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::whole_batches;

    #[test]
    fn a_partial_last_batch_is_left_for_the_next_fetch() {
        let mut bytes = Vec::new();
        for len in [20i32, 5] {
            bytes.extend_from_slice(&7i64.to_be_bytes());
            bytes.extend_from_slice(&len.to_be_bytes());
            bytes.extend(std::iter::repeat_n(0u8, len as usize));
        }
        let whole = bytes.len();
        assert_eq!(whole_batches(&bytes), whole);
        bytes.extend_from_slice(&9i64.to_be_bytes());
        bytes.extend_from_slice(&100i32.to_be_bytes());
        bytes.extend_from_slice(&[1, 2, 3]);
        assert_eq!(whole_batches(&bytes), whole);
        assert_eq!(whole_batches(&bytes[..10]), 0);
        let mut negative = 0i64.to_be_bytes().to_vec();
        negative.extend_from_slice(&(-1i32).to_be_bytes());
        assert_eq!(whole_batches(&negative), 0);
    }
}
