//! Talking to the broker under test with kafka-net, and the model the crash tests check the
//! log against: every acknowledged batch (partition, base offset, record values), the values
//! the broker refused, and the next value never sent yet.
//!
//! A record's value is an 8-byte big-endian counter, unique across the whole test, followed
//! by `pad` bytes derived from it; reading a log back checks both.

use std::collections::HashSet;
use std::time::Duration;

use bytes::Bytes;
use kafka_net::{Connection, ConnectionConfig};
use kafka_protocol::KStr;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::fetch_response::PartitionData;
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    CreateTopicsRequest, FetchRequest, ListOffsetsRequest, MetadataRequest, ProduceRequest,
    RequestBody, ResponseBody,
};
use kafka_protocol::record::{RecordBatchBuilder, RecordBatches};

/// Fetch v12: the newest version that names topics (v13+ use topic ids).
const FETCH_VERSION: i16 = 12;
/// How long one request to a live broker may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);

/// SplitMix64: a small deterministic generator, so every run makes the same choices.
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// Uniform in `lo..=hi`.
    pub(crate) fn between(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    pub(crate) fn coin(&mut self) -> bool {
        self.next_u64() & 1 == 1
    }
}

pub(crate) async fn connect(addr: &str) -> Connection {
    Connection::connect(addr, ConnectionConfig::default())
        .await
        .unwrap_or_else(|e| panic!("cannot connect to the broker at {addr}: {e}"))
}

async fn request(conn: &Connection, body: RequestBody) -> ResponseBody {
    let api = body.api_key();
    tokio::time::timeout(REQUEST_TIMEOUT, conn.request(body))
        .await
        .unwrap_or_else(|_| panic!("{api:?} got no answer within {REQUEST_TIMEOUT:?}"))
        .unwrap_or_else(|e| panic!("{api:?} failed: {e}"))
}

/// Creates a topic with `partitions` partitions.
pub(crate) async fn create_topic(conn: &Connection, name: &str, partitions: i32) {
    let body = RequestBody::CreateTopics(CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: KStr::from(name.to_owned()),
            num_partitions: partitions,
            replication_factor: 1,
            ..Default::default()
        }],
        timeout_ms: 10_000,
        ..Default::default()
    });
    let ResponseBody::CreateTopics(resp) = request(conn, body).await else {
        panic!("CreateTopics answered with another body");
    };
    let t = &resp.topics[0];
    assert_eq!(
        t.error_code, 0,
        "creating {name} failed: {:?}",
        t.error_message
    );
}

/// The value of the record numbered `n`.
pub(crate) fn value(n: u64, pad: usize) -> Vec<u8> {
    let mut v = n.to_be_bytes().to_vec();
    v.extend((0..pad).map(|i| (n as u8).wrapping_add(i as u8)));
    v
}

/// One uncompressed v2 batch holding a record per value.
pub(crate) fn batch(values: &[u64], pad: usize) -> Bytes {
    let mut b = RecordBatchBuilder::new();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    for &n in values {
        b.append(now, None, Some(&value(n, pad)), &[]).unwrap();
    }
    b.build().unwrap()
}

/// A Produce of one batch per listed partition of `topic`.
pub(crate) fn produce_body(topic: &str, acks: i16, batches: Vec<(i32, Bytes)>) -> RequestBody {
    RequestBody::Produce(ProduceRequest {
        acks,
        timeout_ms: 10_000,
        topic_data: vec![TopicProduceData {
            name: KStr::from(topic.to_owned()),
            partition_data: batches
                .into_iter()
                .map(|(index, records)| PartitionProduceData {
                    index,
                    records: Some(records),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }],
        ..Default::default()
    })
}

/// `(partition, error code, base offset)` of every partition in a Produce response.
pub(crate) fn produce_results(resp: &ResponseBody) -> Vec<(i32, i16, i64)> {
    let ResponseBody::Produce(r) = resp else {
        panic!("Produce answered with another body: {resp:?}");
    };
    r.responses
        .iter()
        .flat_map(|t| t.partition_responses.iter())
        .map(|p| (p.index, p.error_code, p.base_offset))
        .collect()
}

/// Produces one batch to one partition and waits for the answer: `Ok(base offset)` or
/// `Err(error code)`.
pub(crate) async fn produce_one(
    conn: &Connection,
    topic: &str,
    acks: i16,
    partition: i32,
    values: &[u64],
    pad: usize,
) -> Result<i64, i16> {
    let body = produce_body(topic, acks, vec![(partition, batch(values, pad))]);
    let resp = request(conn, body).await;
    match produce_results(&resp).as_slice() {
        [(p, 0, base)] if *p == partition => Ok(*base),
        [(p, code, _)] if *p == partition => Err(*code),
        other => panic!("unexpected Produce answer {other:?}"),
    }
}

/// The log end offset (ListOffsets "latest").
pub(crate) async fn latest_offset(conn: &Connection, topic: &str, partition: i32) -> i64 {
    list_latest(conn, topic, partition)
        .await
        .unwrap_or_else(|code| panic!("ListOffsets {topic}-{partition} failed with error {code}"))
}

/// ListOffsets "latest": `Ok(offset)` or `Err(error code)`.
pub(crate) async fn list_latest(
    conn: &Connection,
    topic: &str,
    partition: i32,
) -> Result<i64, i16> {
    let body = RequestBody::ListOffsets(ListOffsetsRequest {
        replica_id: -1,
        topics: vec![ListOffsetsTopic {
            name: KStr::from(topic.to_owned()),
            partitions: vec![ListOffsetsPartition {
                partition_index: partition,
                current_leader_epoch: -1,
                timestamp: -1,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    });
    let ResponseBody::ListOffsets(resp) = request(conn, body).await else {
        panic!("ListOffsets answered with another body");
    };
    let p = &resp.topics[0].partitions[0];
    if p.error_code == 0 {
        Ok(p.offset)
    } else {
        Err(p.error_code)
    }
}

/// Metadata for one topic (used by `disk_full.rs`): the topic's error code and each partition's (index, error code).
#[allow(dead_code)]
pub(crate) async fn metadata_errors(conn: &Connection, topic: &str) -> (i16, Vec<(i32, i16)>) {
    let body = RequestBody::Metadata(MetadataRequest {
        topics: Some(vec![MetadataRequestTopic {
            name: Some(KStr::from(topic.to_owned())),
            ..Default::default()
        }]),
        allow_auto_topic_creation: false,
        ..Default::default()
    });
    let ResponseBody::Metadata(resp) = request(conn, body).await else {
        panic!("Metadata answered with another body");
    };
    let t = &resp.topics[0];
    let mut parts: Vec<(i32, i16)> = t
        .partitions
        .iter()
        .map(|p| (p.partition_index, p.error_code))
        .collect();
    parts.sort();
    (t.error_code, parts)
}

/// The error code of a Fetch of one partition at `offset` (0 when it is served; used by
/// `disk_full.rs`).
#[allow(dead_code)]
pub(crate) async fn fetch_error(
    conn: &Connection,
    topic: &str,
    partition: i32,
    offset: i64,
) -> i16 {
    fetch_once(conn, topic, partition, offset).await.error_code
}

async fn fetch_once(conn: &Connection, topic: &str, partition: i32, offset: i64) -> PartitionData {
    let body = RequestBody::from(FetchRequest {
        replica_id: -1,
        max_wait_ms: 0,
        min_bytes: 0,
        max_bytes: 4 << 20,
        session_epoch: -1,
        topics: vec![FetchTopic {
            topic: KStr::from(topic.to_owned()),
            partitions: vec![FetchPartition {
                partition,
                current_leader_epoch: -1,
                fetch_offset: offset,
                last_fetched_epoch: -1,
                log_start_offset: -1,
                partition_max_bytes: 1 << 20,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    });
    let resp = tokio::time::timeout(REQUEST_TIMEOUT, conn.request_at(body, FETCH_VERSION))
        .await
        .unwrap_or_else(|_| panic!("Fetch got no answer within {REQUEST_TIMEOUT:?}"))
        .unwrap_or_else(|e| panic!("Fetch failed: {e}"));
    let ResponseBody::Fetch(mut resp) = resp else {
        panic!("Fetch answered with another body");
    };
    assert_eq!(resp.error_code, 0, "Fetch failed as a whole");
    resp.responses.remove(0).partitions.remove(0)
}

/// A partition as read back from offset 0 to the high watermark.
#[derive(Debug, Default)]
pub(crate) struct Fetched {
    /// The record value counters; the index is the offset.
    pub(crate) values: Vec<u64>,
    pub(crate) batches: usize,
}

impl Fetched {
    /// The log end offset (no gaps, so the number of records).
    pub(crate) fn end(&self) -> i64 {
        self.values.len() as i64
    }
}

/// Reads a whole partition with Fetch and checks its structure: log start 0, every batch
/// starts right after the previous one (no gap, no overlap), valid CRC-32C, records at
/// consecutive offsets inside their batch, values well formed. Panics naming the offset.
pub(crate) async fn fetch_all(
    conn: &Connection,
    topic: &str,
    partition: i32,
    pad: usize,
    ctx: &str,
) -> Fetched {
    let mut out = Fetched::default();
    let mut offset = 0i64;
    loop {
        let pd = fetch_once(conn, topic, partition, offset).await;
        assert_eq!(
            pd.error_code, 0,
            "{ctx}: Fetch {topic}-{partition} at {offset} failed with error {}",
            pd.error_code
        );
        assert_eq!(pd.log_start_offset, 0, "{ctx}: log start moved");
        let hw = pd.high_watermark;
        let records = pd.records.unwrap_or_default();
        if offset >= hw {
            assert_eq!(offset, hw, "{ctx}: read past the high watermark");
            assert!(records.is_empty(), "{ctx}: data past the high watermark");
            return out;
        }
        assert!(
            !records.is_empty(),
            "{ctx}: {topic}-{partition}: no data at offset {offset} below the high watermark {hw}"
        );
        let mut batches = RecordBatches::new(records);
        for b in batches.by_ref() {
            let b = b.unwrap_or_else(|e| panic!("{ctx}: bad batch at offset {offset}: {e}"));
            assert_eq!(
                b.base_offset(),
                offset,
                "{ctx}: {topic}-{partition}: the batch after offset {} starts at {} (a gap or \
                 an overlap)",
                offset - 1,
                b.base_offset()
            );
            b.verify_crc()
                .unwrap_or_else(|e| panic!("{ctx}: batch at offset {offset}: {e}"));
            let mut n = 0i64;
            for r in b.records(1 << 24).unwrap() {
                let r = r.unwrap_or_else(|e| panic!("{ctx}: record in batch {offset}: {e}"));
                assert_eq!(
                    r.offset(&b),
                    offset + n,
                    "{ctx}: record offsets not consecutive"
                );
                let v = r.value.unwrap_or_default();
                assert!(v.len() >= 8, "{ctx}: short value at offset {}", offset + n);
                let counter = u64::from_be_bytes(v[..8].try_into().unwrap());
                assert_eq!(
                    v.as_ref(),
                    value(counter, pad).as_slice(),
                    "{ctx}: value bytes at offset {} are damaged",
                    offset + n
                );
                out.values.push(counter);
                n += 1;
            }
            assert_eq!(
                i64::from(b.records_count()),
                n,
                "{ctx}: record count of batch {offset}"
            );
            assert_eq!(b.last_offset(), offset + n - 1, "{ctx}: last offset delta");
            offset = b.next_offset();
            out.batches += 1;
        }
        assert!(
            batches.remainder().is_empty(),
            "{ctx}: Fetch at {offset} ended with {} bytes of a partial batch",
            batches.remainder().len()
        );
    }
}

/// An acknowledged batch.
#[derive(Debug, Clone)]
pub(crate) struct Ack {
    pub(crate) partition: i32,
    pub(crate) base_offset: i64,
    pub(crate) values: Vec<u64>,
}

/// What the producers were told.
#[derive(Debug, Default)]
pub(crate) struct Model {
    pub(crate) acks: Vec<Ack>,
    /// Values of batches the broker refused with an error: they must not be in the log.
    pub(crate) refused: Vec<u64>,
    /// Every value below this may have been sent; none above.
    pub(crate) next_value: u64,
}

impl Model {
    /// `n` fresh values.
    pub(crate) fn take(&mut self, n: u64) -> Vec<u64> {
        let v = (self.next_value..self.next_value + n).collect();
        self.next_value += n;
        v
    }

    pub(crate) fn acked_records(&self) -> usize {
        self.acks.iter().map(|a| a.values.len()).sum()
    }

    /// Checks the partitions read back (`logs[p]` is partition `p`) against the model:
    /// - every acknowledged record is at its acknowledged offset (nothing lost or moved);
    /// - no value appears twice in the whole topic (no duplicates);
    /// - values only of records that were sent, none of a refused batch;
    /// - within a partition values increase with the offset when `ordered` (producers send
    ///   in value order and the broker executes a connection's requests in order).
    pub(crate) fn check(&self, logs: &[Fetched], ordered: bool, ctx: &str) {
        let refused: HashSet<u64> = self.refused.iter().copied().collect();
        let mut seen = HashSet::new();
        for (p, log) in logs.iter().enumerate() {
            let mut prev: Option<u64> = None;
            for (offset, &v) in log.values.iter().enumerate() {
                assert!(
                    v < self.next_value,
                    "{ctx}: partition {p} offset {offset} holds value {v}, which was never sent"
                );
                assert!(
                    !refused.contains(&v),
                    "{ctx}: partition {p} offset {offset} holds value {v} of a refused batch"
                );
                assert!(
                    seen.insert(v),
                    "{ctx}: value {v} is in the log twice (again at partition {p} offset {offset})"
                );
                if ordered && let Some(pv) = prev {
                    assert!(
                        v > pv,
                        "{ctx}: partition {p} offset {offset}: value {v} after {pv} (out of order)"
                    );
                }
                prev = Some(v);
            }
        }
        for ack in &self.acks {
            let log = &logs[usize::try_from(ack.partition).unwrap()];
            for (i, v) in ack.values.iter().enumerate() {
                let offset = ack.base_offset + i as i64;
                match log.values.get(usize::try_from(offset).unwrap()) {
                    Some(found) if found == v => {}
                    Some(found) => panic!(
                        "{ctx}: acknowledged value {v} (batch at {}-{}) should be at offset \
                         {offset}, which holds {found}",
                        ack.partition, ack.base_offset
                    ),
                    None => panic!(
                        "{ctx}: acknowledged value {v} at partition {} offset {offset} is lost: \
                         the log ends at {}",
                        ack.partition,
                        log.end()
                    ),
                }
            }
        }
    }
}
