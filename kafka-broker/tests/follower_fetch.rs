//! Follower fetching (KIP-392) and leader hints (KIP-951) on 3 combined nodes of real
//! `kafka-broker` processes, `broker.rack=rack-1/2/3`, with
//! `replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector`:
//!
//! - librdkafka (confluent-kafka, `client.rack` = a follower's rack) reads every record of a
//!   replication-factor-3 partition, and its `debug=fetch` lines and statistics show it
//!   fetched from that follower, not the leader.
//! - Our consumer with `client_rack` the same: every record, and its per-broker fetch metric
//!   shows the bytes came from the follower.
//! - Without the selector's help: a Fetch v11+ (client metadata) is answered by a follower up
//!   to its high watermark; v10 gets NOT_LEADER_OR_FOLLOWER; a fenced or unknown epoch is an
//!   error answer, not a closed connection.
//! - KIP-951: a Produce v11 to a broker that does not lead the partition is refused with
//!   NOT_LEADER_OR_FOLLOWER, the image's leader and epoch in `CurrentLeader` and the leader's
//!   address in `NodeEndpoints`, decoded by our codec and by kafka-python's; a Fetch v16 to a
//!   broker without a replica names the leader the same way.
//!
//! A missing peer (a python module) skips that check with a notice, unless
//! `KAFKA_RS_REQUIRE_PEERS=1` (as CI runs it).
#![allow(clippy::unwrap_used)]

#[path = "cluster/harness.rs"]
#[allow(dead_code)]
mod harness;
#[path = "common/peers.rs"]
#[allow(dead_code)]
mod peers;

use std::time::Duration;

use bytes::Bytes;
use harness::{Cluster, Role, admin, broker_ids, metadata};
use kafka_net::admin::NewTopic;
use kafka_net::connection::{Connection, ConnectionConfig};
use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    FetchRequest, FetchResponse, ProduceRequest, ProduceResponse, RequestBody, ResponseBody,
};
use kafka_protocol::record::RecordBatchBuilder;

const CLIENTS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/follower_fetch/clients.py"
);
const RACK_AWARE: &str =
    "replica.selector.class=org.apache.kafka.common.replica.RackAwareReplicaSelector";
const TOPIC: &str = "near";
/// Records written to partition 0 of [`TOPIC`], in batches of [`PER_BATCH`].
const RECORDS: i64 = 400;
const PER_BATCH: i64 = 40;

fn value(i: i64) -> String {
    format!("near-{i}")
}

/// Three combined nodes, node `n` in `rack-n`, the rack-aware selector on every broker.
async fn racked_cluster() -> Cluster {
    let mut c = Cluster::new(
        &[Role::Combined; 3],
        &[
            "broker.heartbeat.interval.ms=500",
            "broker.session.timeout.ms=3000",
            RACK_AWARE,
        ],
    );
    for id in 1..=3 {
        c.node(id).settings.push(format!("broker.rack=rack-{id}"));
    }
    c.start_all();
    let addrs: Vec<String> = (1..=3).map(|id| c.addr(id)).collect();
    c.eventually(
        "every broker lists the three brokers",
        Duration::from_secs(30),
        || {
            let addrs = addrs.clone();
            async move {
                for a in &addrs {
                    if broker_ids(&metadata(a, Some(&[])).await?) != [1, 2, 3] {
                        return None;
                    }
                }
                Some(())
            }
        },
    )
    .await;
    c
}

/// Partition 0 of `topic` once every broker agrees on it with a full ISR: (leader, leader
/// epoch, replicas).
async fn settled(c: &mut Cluster, topic: &str, rf: usize) -> (i32, i32, Vec<i32>) {
    let addrs: Vec<String> = (1..=3).map(|id| c.addr(id)).collect();
    let topic = topic.to_owned();
    c.eventually(
        &format!("every broker agrees on {topic}-0 with {rf} replicas in sync"),
        Duration::from_secs(20),
        || {
            let addrs = addrs.clone();
            let topic = topic.clone();
            async move {
                let mut seen = None;
                for a in &addrs {
                    let m = metadata(a, Some(&[&topic])).await?;
                    let t = m.topics.iter().find(|t| t.error_code == 0)?;
                    let p = t.partitions.iter().find(|p| p.partition_index == 0)?;
                    if p.leader_id < 0 || p.isr_nodes.len() != rf || p.replica_nodes.len() != rf {
                        return None;
                    }
                    let row = (p.leader_id, p.leader_epoch, p.replica_nodes.clone());
                    if seen.as_ref().is_some_and(|s| s != &row) {
                        return None;
                    }
                    seen = Some(row);
                }
                seen
            }
        },
    )
    .await
}

async fn connect(addr: &str) -> Connection {
    let cfg = ConnectionConfig {
        connect_timeout: Duration::from_secs(5),
        handshake: false,
        ..Default::default()
    };
    Connection::connect(addr, cfg).await.unwrap()
}

fn batch(first: i64, n: i64) -> Bytes {
    let mut b = RecordBatchBuilder::new();
    for i in first..first + n {
        b.append(i, None, Some(value(i).as_bytes()), &[]).unwrap();
    }
    b.build().unwrap()
}

fn produce_request(topic: &str, records: Bytes) -> ProduceRequest {
    ProduceRequest {
        acks: -1,
        timeout_ms: 10_000,
        topic_data: vec![TopicProduceData {
            name: KStr::from(topic.to_owned()),
            partition_data: vec![PartitionProduceData {
                index: 0,
                records: Some(records),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

async fn produce(conn: &Connection, topic: &str, records: Bytes, version: i16) -> ProduceResponse {
    let req = RequestBody::Produce(produce_request(topic, records));
    match tokio::time::timeout(Duration::from_secs(15), conn.request_at(req, version))
        .await
        .unwrap()
        .unwrap()
    {
        ResponseBody::Produce(r) => r,
        other => panic!("Produce answered with {other:?}"),
    }
}

/// A produce to the leader, retried while the leader has not taken its role yet (the
/// metadata can name it a moment before its partition layer leads).
async fn produce_to_leader(conn: &Connection, topic: &str, first: i64, n: i64) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        let r = produce(conn, topic, batch(first, n), 9).await;
        let p = &r.responses[0].partition_responses[0];
        if p.error_code == 0 {
            assert_eq!(p.base_offset, first, "{p:?}");
            return;
        }
        assert_eq!(
            ErrorCode(p.error_code),
            ErrorCode::NOT_LEADER_OR_FOLLOWER,
            "{p:?}"
        );
        assert!(tokio::time::Instant::now() < deadline, "{p:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A consumer's fetch (replica id -1) of partition 0 of `topic` at `offset`.
async fn fetch(
    conn: &Connection,
    topic: &str,
    offset: i64,
    current_leader_epoch: i32,
    version: i16,
    rack: &str,
) -> FetchResponse {
    let req = FetchRequest {
        replica_id: -1,
        rack_id: KStr::from(rack.to_owned()),
        max_wait_ms: 200,
        min_bytes: 1,
        max_bytes: 1 << 20,
        topics: vec![FetchTopic {
            topic: KStr::from(topic.to_owned()),
            topic_id: metadata_topic_id(conn, topic).await,
            partitions: vec![FetchPartition {
                partition: 0,
                fetch_offset: offset,
                current_leader_epoch,
                partition_max_bytes: 1 << 20,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let answer = tokio::time::timeout(
        Duration::from_secs(10),
        conn.request_at(RequestBody::from(req), version),
    )
    .await
    .unwrap()
    .unwrap();
    match answer {
        ResponseBody::Fetch(r) => r,
        other => panic!("Fetch answered with {other:?}"),
    }
}

async fn metadata_topic_id(conn: &Connection, topic: &str) -> kafka_protocol::Uuid {
    use kafka_protocol::messages::MetadataRequest;
    use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
    let req = MetadataRequest {
        topics: Some(vec![MetadataRequestTopic {
            name: Some(KStr::from(topic.to_owned())),
            ..Default::default()
        }]),
        ..Default::default()
    };
    match conn
        .request_at(RequestBody::Metadata(req), 12)
        .await
        .unwrap()
    {
        ResponseBody::Metadata(m) => m.topics[0].topic_id,
        other => panic!("Metadata answered with {other:?}"),
    }
}

fn python(args: &[&str]) -> Option<serde_json::Value> {
    let mut all = vec![CLIENTS];
    all.extend_from_slice(args);
    let out = peers::run("python3", &all)?;
    let line = out.lines().rev().find(|l| l.starts_with('{'))?;
    Some(serde_json::from_str(line).unwrap())
}

/// Records of a fetch answer's partition, as values.
fn values(records: &Bytes) -> Vec<String> {
    kafka_protocol::record::RecordBatches::new(records.clone())
        .flatten()
        .flat_map(|b| b.records(1 << 20).unwrap().collect::<Vec<_>>())
        .map(|r| String::from_utf8(r.unwrap().value.unwrap().to_vec()).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumers_read_from_the_follower_in_their_rack() {
    let mut c = racked_cluster().await;
    let a = admin(&c.bootstrap()).await;
    let r = a.create_topics(&[NewTopic::new(TOPIC, 1, 3)], false).await;
    assert!(r[0].is_ok(), "{r:?}");
    let (leader, _, replicas) = settled(&mut c, TOPIC, 3).await;
    let follower = *replicas.iter().find(|&&r| r != leader).unwrap();
    let other = *replicas
        .iter()
        .find(|&&r| r != leader && r != follower)
        .unwrap();
    let to_leader = connect(&c.addr(leader)).await;
    for first in (0..RECORDS).step_by(PER_BATCH as usize) {
        produce_to_leader(&to_leader, TOPIC, first, PER_BATCH).await;
    }
    let expected: Vec<String> = (0..RECORDS).map(value).collect();

    // Without a rack, or in the leader's rack, the leader answers with records; in a
    // follower's rack it names that follower and sends none.
    for rack in [String::new(), format!("rack-{leader}")] {
        let r = fetch(&to_leader, TOPIC, 0, -1, 16, &rack).await;
        let p = &r.responses[0].partitions[0];
        assert_eq!(
            (p.error_code, p.preferred_read_replica),
            (0, -1),
            "rack {rack:?}"
        );
        assert!(!values(p.records.as_ref().unwrap()).is_empty());
    }
    let r = fetch(&to_leader, TOPIC, 0, -1, 11, &format!("rack-{follower}")).await;
    let p = &r.responses[0].partitions[0];
    assert_eq!((p.error_code, p.preferred_read_replica), (0, follower));
    assert!(p.records.as_ref().is_none_or(|r| r.is_empty()));
    assert_eq!(p.high_watermark, RECORDS);
    // Past every replica's log end: no preferred replica, the leader's own answer.
    let r = fetch(
        &to_leader,
        TOPIC,
        RECORDS + 5,
        -1,
        11,
        &format!("rack-{follower}"),
    )
    .await;
    let p = &r.responses[0].partitions[0];
    assert_eq!(ErrorCode(p.error_code), ErrorCode::OFFSET_OUT_OF_RANGE);
    assert_eq!(p.preferred_read_replica, -1);

    // (a) librdkafka with client.rack = the follower's rack.
    let rack = format!("rack-{follower}");
    if let Some(out) = python(&[
        "consume",
        "--bootstrap",
        &c.bootstrap(),
        "--topic",
        TOPIC,
        "--rack",
        &rack,
        "--count",
        &RECORDS.to_string(),
    ]) {
        let got: Vec<String> = out["values"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_owned())
            .collect();
        assert_eq!(
            got, expected,
            "librdkafka reads every record once, in order"
        );
        let fetches: Vec<(i64, i64)> = out["fetches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| (f[0].as_i64().unwrap(), f[1].as_i64().unwrap()))
            .collect();
        assert!(
            fetches
                .iter()
                .any(|&(b, o)| b == i64::from(follower) && o > 0),
            "librdkafka fetched past offset 0 from the follower {follower}: {fetches:?}\n{out}"
        );
        assert!(
            fetches
                .iter()
                .filter(|&&(_, o)| o > 0)
                .all(|&(b, _)| b == i64::from(follower)),
            "no fetch past offset 0 went elsewhere: {fetches:?}"
        );
        let brokers = out["partition_brokers"].as_array().unwrap();
        eprintln!(
            "librdkafka fetches (broker, offset): {fetches:?}; partition 0 fetched from \
             {brokers:?}; {}",
            out["preferred_lines"]
        );
        assert!(
            brokers
                .iter()
                .any(|b| b.as_i64() == Some(i64::from(follower))),
            "librdkafka's statistics: partition 0 fetched from {follower}: {out}"
        );
        let migrated = format!("to {follower} (leader is {leader}): preferred replica");
        assert!(
            out["preferred_lines"]
                .as_array()
                .unwrap()
                .iter()
                .any(|l| l.as_str().is_some_and(|l| l.contains(&migrated))),
            "librdkafka says it moved to the preferred replica: {out}"
        );
        assert!(
            out["leaders"]
                .as_array()
                .unwrap()
                .iter()
                .all(|l| l.as_i64() == Some(i64::from(leader))),
            "{out}"
        );
    }

    // (b) Our consumer, client_rack = the other follower's rack.
    let consumer = kafka_consumer::Consumer::new(
        kafka_consumer::ConsumerConfig::builder()
            .bootstrap_servers([c.addr(leader)])
            .auto_offset_reset(kafka_consumer::OffsetReset::Earliest)
            .fetch_max_wait(Duration::from_millis(100))
            .client_rack(format!("rack-{other}"))
            .default_api_timeout(Duration::from_secs(20))
            .build()
            .unwrap(),
    )
    .await
    .unwrap();
    consumer
        .assign([kafka_consumer::TopicPartition::new(TOPIC, 0)])
        .unwrap();
    let mut got = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while got.len() < expected.len() && tokio::time::Instant::now() < deadline {
        for r in consumer.poll(Duration::from_millis(300)).await.unwrap() {
            got.push(String::from_utf8(r.value.unwrap().to_vec()).unwrap());
        }
    }
    assert_eq!(
        got, expected,
        "our consumer reads every record once, in order"
    );
    let m = consumer.metrics();
    let from = |id: i32| m.bytes_fetched_by_node.get(&id).copied().unwrap_or(0);
    assert!(from(other) > 0, "fetched from the follower {other}: {m:?}");
    assert_eq!(
        from(leader),
        0,
        "nothing fetched from the leader {leader}: {m:?}"
    );
    assert_eq!(from(other), m.bytes_fetched);
    consumer.close(Duration::from_secs(5)).await.unwrap();
    c.assert_running();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_name_the_leader_and_followers_serve_client_metadata_fetches() {
    let mut c = racked_cluster().await;
    let a = admin(&c.bootstrap()).await;
    let r = a
        .create_topics(
            &[NewTopic::new(TOPIC, 1, 3), NewTopic::new("pair", 1, 2)],
            false,
        )
        .await;
    assert!(r.iter().all(Result::is_ok), "{r:?}");
    let (leader, epoch, replicas) = settled(&mut c, TOPIC, 3).await;
    let follower = *replicas.iter().find(|&&r| r != leader).unwrap();
    let to_leader = connect(&c.addr(leader)).await;
    produce_to_leader(&to_leader, TOPIC, 0, PER_BATCH).await;

    // A follower serves consumers with client metadata (v11+), up to its high watermark.
    let to_follower = connect(&c.addr(follower)).await;
    let first: Vec<String> = (0..PER_BATCH).map(value).collect();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    loop {
        let r = fetch(&to_follower, TOPIC, 0, epoch, 12, "").await;
        let p = &r.responses[0].partitions[0];
        assert_eq!((p.error_code, p.preferred_read_replica), (0, -1), "{p:?}");
        assert!(p.high_watermark <= PER_BATCH);
        let got = values(p.records.as_ref().unwrap());
        if got == first {
            assert_eq!(p.high_watermark, PER_BATCH);
            break;
        }
        // Only what its high watermark covers.
        assert!(got.len() as i64 <= p.high_watermark, "{got:?} {p:?}");
        assert!(
            tokio::time::Instant::now() < deadline,
            "the follower never served {first:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Fetch v10 carries no client metadata: followers refuse it (and cannot name the leader).
    let r = fetch(&to_follower, TOPIC, 0, epoch, 10, "").await;
    let p = &r.responses[0].partitions[0];
    assert_eq!(ErrorCode(p.error_code), ErrorCode::NOT_LEADER_OR_FOLLOWER);
    // Beyond its log: out of range; an epoch it has not heard of: UNKNOWN_LEADER_EPOCH. Both
    // are answers (the connection stays usable), at v11 too, which has no CurrentLeader.
    let r = fetch(&to_follower, TOPIC, PER_BATCH + 10, epoch, 11, "").await;
    let code = ErrorCode(r.responses[0].partitions[0].error_code);
    assert_eq!(code, ErrorCode::OFFSET_OUT_OF_RANGE);
    for version in [11, 16] {
        let r = fetch(&to_follower, TOPIC, 0, epoch + 5, version, "").await;
        let p = &r.responses[0].partitions[0];
        assert_eq!(
            ErrorCode(p.error_code),
            ErrorCode::UNKNOWN_LEADER_EPOCH,
            "v{version}"
        );
    }

    // KIP-951: a produce to the follower names the leader, with its address.
    let leader_port = i32::from(c.nodes[&leader].port.unwrap());
    let r = produce(&to_follower, TOPIC, batch(PER_BATCH, 5), 11).await;
    let p = &r.responses[0].partition_responses[0];
    assert_eq!(
        ErrorCode(p.error_code),
        ErrorCode::NOT_LEADER_OR_FOLLOWER,
        "{p:?}"
    );
    assert_eq!(
        (p.current_leader.leader_id, p.current_leader.leader_epoch),
        (leader, epoch)
    );
    assert_eq!(r.node_endpoints.len(), 1, "{r:?}");
    let e = &r.node_endpoints[0];
    assert_eq!(
        (e.node_id, e.host.as_str(), e.port),
        (leader, "127.0.0.1", leader_port)
    );
    assert_eq!(e.rack.as_deref(), Some(format!("rack-{leader}").as_str()));
    // v9 has no such fields.
    let r = produce(&to_follower, TOPIC, batch(PER_BATCH, 5), 9).await;
    let p = &r.responses[0].partition_responses[0];
    assert_eq!(ErrorCode(p.error_code), ErrorCode::NOT_LEADER_OR_FOLLOWER);
    assert_eq!(p.current_leader.leader_id, -1);
    assert!(r.node_endpoints.is_empty());
    // The same answer through kafka-python's own encoder and decoder.
    if let Some(out) = python(&[
        "produce-hint",
        "--addr",
        &c.addr(follower),
        "--topic",
        TOPIC,
    ]) {
        let p = &out["partitions"][0];
        assert_eq!(
            p["error_code"],
            i64::from(ErrorCode::NOT_LEADER_OR_FOLLOWER.code()),
            "{out}"
        );
        assert_eq!(p["leader_id"], leader, "{out}");
        assert_eq!(p["leader_epoch"], epoch, "{out}");
        let e = &out["node_endpoints"];
        assert_eq!(e.as_array().unwrap().len(), 1, "{out}");
        assert_eq!(e[0]["node_id"], leader, "{out}");
        assert_eq!(e[0]["host"], "127.0.0.1", "{out}");
        assert_eq!(e[0]["port"], leader_port, "{out}");
        assert_eq!(e[0]["rack"], format!("rack-{leader}"), "{out}");
    }
    // Nothing was written by the refused produces.
    let r = fetch(&to_leader, TOPIC, 0, epoch, 16, "").await;
    assert_eq!(r.responses[0].partitions[0].high_watermark, PER_BATCH);

    // A broker without a replica of "pair": Fetch v16 and Produce name its leader.
    let (pair_leader, pair_epoch, pair_replicas) = settled(&mut c, "pair", 2).await;
    let outsider = (1..=3).find(|id| !pair_replicas.contains(id)).unwrap();
    let pair_port = i32::from(c.nodes[&pair_leader].port.unwrap());
    let to_outsider = connect(&c.addr(outsider)).await;
    let r = fetch(&to_outsider, "pair", 0, -1, 16, "").await;
    let p = &r.responses[0].partitions[0];
    assert_eq!(
        ErrorCode(p.error_code),
        ErrorCode::NOT_LEADER_OR_FOLLOWER,
        "{r:?}"
    );
    assert_eq!(
        (p.current_leader.leader_id, p.current_leader.leader_epoch),
        (pair_leader, pair_epoch)
    );
    assert_eq!(r.node_endpoints.len(), 1, "{r:?}");
    assert_eq!(
        (r.node_endpoints[0].node_id, r.node_endpoints[0].port),
        (pair_leader, pair_port)
    );
    // v15 has CurrentLeader but Kafka fills it from v16 only.
    let r = fetch(&to_outsider, "pair", 0, -1, 15, "").await;
    let p = &r.responses[0].partitions[0];
    assert_eq!(ErrorCode(p.error_code), ErrorCode::NOT_LEADER_OR_FOLLOWER);
    assert_eq!(p.current_leader.leader_id, -1);
    let r = produce(&to_outsider, "pair", batch(0, 1), 11).await;
    let p = &r.responses[0].partition_responses[0];
    assert_eq!(ErrorCode(p.error_code), ErrorCode::NOT_LEADER_OR_FOLLOWER);
    assert_eq!(p.current_leader.leader_id, pair_leader);
    assert_eq!(r.node_endpoints[0].port, pair_port);
    c.assert_running();
}
