//! Known-answer bytes for versions Kafka 4.x added: each request or response is spelled out by
//! hand, field by field, from Kafka 4.4's schema (`kafka-protocol-specs-4.4.0`), and compared
//! with what our encoder writes; the bytes must also decode back to the same message.
//!
//! Flexible versions: strings and arrays carry their length plus one as an unsigned varint
//! (0 for null), every struct ends with its tagged fields (a count, then tag, size, value in
//! tag order).
#![allow(clippy::unwrap_used)]

use bytes::Bytes;
use kafka_protocol::messages::api_versions_response::{
    ApiVersion, FinalizedFeatureKey, SupportedFeatureKey,
};
use kafka_protocol::messages::consumer_group_heartbeat_request::TopicPartitions;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic, ReplicaState};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::{Codec, KStr, Reader, Uuid, Writer};

/// A hand-built body.
#[derive(Default)]
struct Spelled {
    b: Vec<u8>,
}

impl Spelled {
    fn raw(mut self, b: &[u8]) -> Self {
        self.b.extend_from_slice(b);
        self
    }
    fn i8(self, v: i8) -> Self {
        self.raw(&v.to_be_bytes())
    }
    fn i16(self, v: i16) -> Self {
        self.raw(&v.to_be_bytes())
    }
    fn i32(self, v: i32) -> Self {
        self.raw(&v.to_be_bytes())
    }
    fn i64(self, v: i64) -> Self {
        self.raw(&v.to_be_bytes())
    }
    /// An unsigned varint below 128 (one byte), as every length here is.
    fn small(self, v: u8) -> Self {
        assert!(v < 128);
        self.raw(&[v])
    }
    /// A compact string: length + 1, then the bytes.
    fn cstr(self, s: &str) -> Self {
        self.small(u8::try_from(s.len() + 1).unwrap())
            .raw(s.as_bytes())
    }
    /// A compact array's count: count + 1.
    fn carr(self, n: u8) -> Self {
        self.small(n + 1)
    }
    /// A null compact string, bytes or array.
    fn null(self) -> Self {
        self.small(0)
    }
    /// An empty tagged-field section.
    fn no_tags(self) -> Self {
        self.small(0)
    }
}

const TOPIC_ID: [u8; 16] = [
    0x4f, 0x1b, 0x29, 0x03, 0x8a, 0x55, 0x4c, 0x0e, 0x9d, 0x31, 0x70, 0x12, 0xab, 0xcd, 0xef, 0x01,
];

fn encode<T: Codec>(m: &T, v: i16) -> Vec<u8> {
    let mut w = Writer::new();
    m.encode(&mut w, v).unwrap();
    w.into_bytes().to_vec()
}

/// Our encoding is `want`, and `want` decodes back to `m`, every byte read.
fn known<T: Codec + PartialEq + std::fmt::Debug>(m: &T, v: i16, want: &[u8]) {
    assert_eq!(encode(m, v), want, "encoding of {m:?} at v{v}");
    let bytes = Bytes::copy_from_slice(want);
    let mut r = Reader::new(&bytes);
    let back = T::decode(&mut r, v).unwrap();
    assert_eq!(&back, m);
    assert_eq!(r.remaining(), 0);
}

fn produce(topic_id: Uuid) -> ProduceRequest {
    ProduceRequest {
        transactional_id: Some(KStr::from_static("tx")),
        acks: -1,
        timeout_ms: 30_000,
        topic_data: vec![TopicProduceData {
            name: KStr::from_static("t"),
            topic_id,
            partition_data: vec![PartitionProduceData {
                index: 0,
                records: Some(Bytes::from_static(b"abc")),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }
}

#[test]
fn produce_v12_names_topics_and_v13_identifies_them() {
    // TransactionalId, Acks, TimeoutMs, TopicData [Name | TopicId, PartitionData [Index,
    // Records]]: v12 has v11's layout (it only tells the broker the producer runs
    // transactions v2); v13 replaces Name with TopicId.
    let head = || Spelled::default().cstr("tx").i16(-1).i32(30_000).carr(1);
    let tail = |b: Spelled| b.carr(1).i32(0).cstr("abc").no_tags().no_tags().no_tags();
    let v12 = tail(head().cstr("t")).b;
    known(&produce(Uuid::ZERO), 12, &v12);
    let v13 = tail(head().raw(&TOPIC_ID)).b;
    let mut m = produce(Uuid(TOPIC_ID));
    m.topic_data[0].name = KStr::default();
    known(&m, 13, &v13);
    // Both fields are ignorable: a name at v13 (or an id at v12) is left out, not refused.
    assert_eq!(encode(&produce(Uuid(TOPIC_ID)), 13), v13);
    assert_eq!(encode(&produce(Uuid(TOPIC_ID)), 12), v12);
}

#[test]
fn fetch_v18_with_its_tagged_fields() {
    let m = FetchRequest {
        replica_state: ReplicaState {
            replica_id: 1,
            replica_epoch: 5,
            ..Default::default()
        },
        max_wait_ms: 500,
        min_bytes: 1,
        max_bytes: 1 << 20,
        isolation_level: 1,
        session_id: 0,
        session_epoch: -1,
        topics: vec![FetchTopic {
            topic_id: Uuid(TOPIC_ID),
            partitions: vec![FetchPartition {
                partition: 3,
                current_leader_epoch: 7,
                fetch_offset: 100,
                last_fetched_epoch: 6,
                log_start_offset: -1,
                partition_max_bytes: 65_536,
                high_watermark: 200,
                ..Default::default()
            }],
            ..Default::default()
        }],
        rack_id: KStr::from_static("r1"),
        ..Default::default()
    };
    let want = Spelled::default()
        // ClusterId (tag 0, null: not sent), ReplicaId (up to v14: absent).
        .i32(500) // MaxWaitMs
        .i32(1) // MinBytes
        .i32(1 << 20) // MaxBytes
        .i8(1) // IsolationLevel
        .i32(0) // SessionId
        .i32(-1) // SessionEpoch
        .carr(1) // Topics
        .raw(&TOPIC_ID) // TopicId (v13+)
        .carr(1) // Partitions
        .i32(3) // Partition
        .i32(7) // CurrentLeaderEpoch
        .i64(100) // FetchOffset
        .i32(6) // LastFetchedEpoch
        .i64(-1) // LogStartOffset
        .i32(65_536) // PartitionMaxBytes
        // Tagged: HighWatermark (tag 1, v18+); ReplicaDirectoryId (tag 0) is zero: not sent.
        .small(1)
        .small(1)
        .small(8)
        .i64(200)
        .no_tags() // FetchTopic
        .carr(0) // ForgottenTopicsData
        .cstr("r1") // RackId
        // Tagged: ReplicaState (tag 1): ReplicaId, ReplicaEpoch, its own empty tags.
        .small(1)
        .small(1)
        .small(13)
        .i32(1)
        .i64(5)
        .no_tags()
        .b;
    known(&m, 18, &want);
    // At v17 HighWatermark does not exist: the same bytes without that tag.
    let mut v17 = m.clone();
    v17.topics[0].partitions[0].high_watermark = i64::MAX;
    let bytes = encode(&v17, 17);
    assert_eq!(bytes.len(), want.len() - 10, "tag, size and 8 bytes fewer");
    assert_eq!(
        encode(&m, 17),
        bytes,
        "HighWatermark is ignorable before v18"
    );
}

#[test]
fn api_versions_v4_request_and_response_with_features() {
    let req = ApiVersionsRequest {
        client_software_name: KStr::from_static("kafka-rs"),
        client_software_version: KStr::from_static("1.0"),
        ..Default::default()
    };
    known(
        &req,
        4,
        &Spelled::default().cstr("kafka-rs").cstr("1.0").no_tags().b,
    );

    let name = "transaction.version";
    let resp = ApiVersionsResponse {
        error_code: 0,
        api_keys: vec![ApiVersion {
            api_key: 18,
            min_version: 0,
            max_version: 4,
            ..Default::default()
        }],
        throttle_time_ms: 0,
        supported_features: vec![SupportedFeatureKey {
            name: KStr::from_static(name),
            min_version: 0,
            max_version: 2,
            ..Default::default()
        }],
        finalized_features_epoch: 7,
        finalized_features: vec![FinalizedFeatureKey {
            name: KStr::from_static(name),
            max_version_level: 2,
            min_version_level: 2,
            ..Default::default()
        }],
        zk_migration_ready: false,
        ..Default::default()
    };
    let want = Spelled::default()
        .i16(0) // ErrorCode
        .carr(1) // ApiKeys
        .i16(18)
        .i16(0)
        .i16(4)
        .no_tags()
        .i32(0) // ThrottleTimeMs
        .small(3) // three tagged fields (ZkMigrationReady false: not sent)
        .small(0) // SupportedFeatures: Name, MinVersion, MaxVersion
        .small(26)
        .carr(1)
        .cstr(name)
        .i16(0)
        .i16(2)
        .no_tags()
        .small(1) // FinalizedFeaturesEpoch
        .small(8)
        .i64(7)
        .small(2) // FinalizedFeatures: Name, MaxVersionLevel, MinVersionLevel
        .small(26)
        .carr(1)
        .cstr(name)
        .i16(2)
        .i16(2)
        .no_tags()
        .b;
    known(&resp, 4, &want);
}

#[test]
fn consumer_group_heartbeat_v1_with_a_regex() {
    let m = ConsumerGroupHeartbeatRequest {
        group_id: KStr::from_static("g"),
        member_id: KStr::from_static("m"),
        member_epoch: 0,
        instance_id: None,
        rack_id: Some(KStr::from_static("rack")),
        rebalance_timeout_ms: 300_000,
        subscribed_topic_names: None,
        subscribed_topic_regex: Some(KStr::from_static("t.*")),
        server_assignor: Some(KStr::from_static("uniform")),
        topic_partitions: Some(vec![TopicPartitions {
            topic_id: Uuid(TOPIC_ID),
            partitions: vec![0, 1],
            ..Default::default()
        }]),
        ..Default::default()
    };
    let want = Spelled::default()
        .cstr("g") // GroupId
        .cstr("m") // MemberId
        .i32(0) // MemberEpoch
        .null() // InstanceId
        .cstr("rack") // RackId
        .i32(300_000) // RebalanceTimeoutMs
        .null() // SubscribedTopicNames
        .cstr("t.*") // SubscribedTopicRegex (v1+)
        .cstr("uniform") // ServerAssignor
        .carr(1) // TopicPartitions: TopicId, Partitions
        .raw(&TOPIC_ID)
        .carr(2)
        .i32(0)
        .i32(1)
        .no_tags()
        .no_tags()
        .b;
    known(&m, 1, &want);
    // v0 has no regex field: a regex cannot be sent there.
    assert!(m.encode(&mut Writer::new(), 0).is_err());
}

#[test]
fn end_txn_v5_returns_the_new_producer_id_and_epoch() {
    let req = EndTxnRequest {
        transactional_id: KStr::from_static("tx"),
        producer_id: 1000,
        producer_epoch: 3,
        committed: true,
        ..Default::default()
    };
    known(
        &req,
        5,
        &Spelled::default()
            .cstr("tx")
            .i64(1000)
            .i16(3)
            .raw(&[1])
            .no_tags()
            .b,
    );
    let resp = EndTxnResponse {
        throttle_time_ms: 0,
        error_code: 0,
        producer_id: 1000,
        producer_epoch: 4,
        ..Default::default()
    };
    let want = Spelled::default()
        .i32(0)
        .i16(0)
        .i64(1000)
        .i16(4)
        .no_tags()
        .b;
    known(&resp, 5, &want);
    // v4 has neither (ignorable): ThrottleTimeMs, ErrorCode and the tags only.
    assert_eq!(
        encode(&resp, 4),
        Spelled::default().i32(0).i16(0).no_tags().b
    );
}

#[test]
fn the_versions_kafka_4_removed_are_still_there() {
    // KIP-896 removed Produce v0-2, Fetch v0-3, ... from Kafka 4.0; old clients still send
    // them, and the merged codec keeps 3.9's layout for them. Produce v2: Acks, TimeoutMs,
    // TopicData [Name, PartitionData [Index, Records]] with int16/int32 lengths.
    let m = ProduceRequest {
        acks: 1,
        timeout_ms: 1000,
        topic_data: vec![TopicProduceData {
            name: KStr::from_static("t"),
            partition_data: vec![PartitionProduceData {
                index: 2,
                records: Some(Bytes::from_static(b"abc")),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let want = Spelled::default()
        .i16(1)
        .i32(1000)
        .i32(1)
        .i16(1)
        .raw(b"t")
        .i32(1)
        .i32(2)
        .i32(3)
        .raw(b"abc")
        .b;
    known(&m, 2, &want);
    for (api, lo, hi) in [
        (ApiKey::Produce, 0, 13),
        (ApiKey::Fetch, 0, 18),
        (ApiKey::ListOffsets, 0, 11),
        (ApiKey::OffsetCommit, 0, 10),
        (ApiKey::OffsetFetch, 0, 10),
        (ApiKey::TxnOffsetCommit, 0, 6),
        (ApiKey::EndTxn, 0, 5),
        (ApiKey::ApiVersions, 0, 5),
        (ApiKey::LeaderAndIsr, 0, 7),
        (ApiKey::ConsumerGroupHeartbeat, 0, 1),
    ] {
        let r = api.versions();
        assert_eq!((r.min, r.max), (lo, hi), "{api:?}");
    }
    // 4.4 marks InitProducerId v6 unstable: not among the stable versions.
    assert_eq!(ApiKey::InitProducerId.versions().max, 6);
    assert_eq!(ApiKey::InitProducerId.stable_versions().max, 5);
    assert!(ApiKey::InitProducerId.latest_version_unstable());
    assert_eq!(
        ApiKey::Produce.stable_versions(),
        ApiKey::Produce.versions()
    );
}
