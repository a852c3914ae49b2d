//! Every advertised (api, version) is answered with a response that encodes and decodes at
//! that version, for random but schema-valid requests: no handler sets a field its version
//! cannot carry, and none panics.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use arbitrary::Unstructured;
use bytes::Bytes;
use kafka_broker::handler::{self, Reply, SUPPORTED};
use kafka_broker::{Broker, BrokerConfig};
use kafka_net::server::IncomingRequest;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::*;
use kafka_protocol::{KStr, frame};

fn noise(seed: u64) -> Vec<u8> {
    let mut s = seed | 1;
    (0..4096)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s as u8
        })
        .collect()
}

fn incoming(key: ApiKey, version: i16, body: &RequestBody, corr: i32) -> IncomingRequest {
    let header = RequestHeader {
        request_api_key: key as i16,
        request_api_version: version,
        correlation_id: corr,
        client_id: Some(KStr::from_static("handler-test")),
        ..Default::default()
    };
    let bytes = frame::encode_request(&header, body).unwrap().into_bytes();
    IncomingRequest {
        prefix: frame::peek_request(&bytes).unwrap(),
        request: frame::decode_request(&bytes),
        frame: bytes,
    }
}

fn response(reply: Reply, key: ApiKey, version: i16) -> Option<Response> {
    match reply {
        Reply::Chunks(chunks) => {
            let all: Vec<u8> = chunks.iter().flat_map(|c| c.iter().copied()).collect();
            let size = i32::from_be_bytes([all[0], all[1], all[2], all[3]]) as usize;
            assert_eq!(size, all.len() - 4);
            Some(frame::decode_response(&Bytes::copy_from_slice(&all[4..]), key, version).unwrap())
        }
        Reply::Files(chunks) => {
            let chunks = kafka_broker::sendfile::materialize(&chunks).unwrap();
            response(Reply::Chunks(chunks), key, version)
        }
        Reply::Nothing => None,
        Reply::Close(why) => panic!("{key:?} v{version}: connection closed: {why}"),
    }
}

use kafka_protocol::Response;

#[tokio::test]
async fn every_supported_version_answers_random_requests() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = BrokerConfig {
        server: kafka_broker::config::ServerConfig {
            data_dir: dir.path().to_path_buf(),
            // Random fetches ask to wait up to 30 s for data that never comes.
            fetch_max_wait_cap_ms: 10,
            ..Default::default()
        },
        ..Default::default()
    };
    let broker = Arc::new(Broker::open(cfg).unwrap());
    let local = handler::local_connection(&broker);
    let mut corr = 0;
    for &(key, lo, hi) in SUPPORTED {
        for version in lo..=hi {
            for case in 0..8u64 {
                let data = noise((key as u64) << 20 | (version as u64) << 8 | case);
                let mut u = Unstructured::new(&data);
                let body = RequestBody::arbitrary(key, &mut u, version).unwrap();
                corr += 1;
                let reply =
                    handler::handle(&broker, &local, incoming(key, version, &body, corr).into())
                        .await;
                if let Some(resp) = response(reply, key, version) {
                    assert_eq!(resp.header.correlation_id, corr);
                    assert_eq!(resp.body.api_key(), key);
                }
            }
        }
    }
}

#[tokio::test]
async fn unsupported_api_versions_version_gets_a_v0_error_answer() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = BrokerConfig {
        server: kafka_broker::config::ServerConfig {
            data_dir: dir.path().to_path_buf(),
            ..Default::default()
        },
        ..Default::default()
    };
    let broker = Arc::new(Broker::open(cfg).unwrap());
    let local = handler::local_connection(&broker);
    // ApiVersions v9: header v2 (flexible), body unknown.
    let bytes = Bytes::from_static(&[0, 18, 0, 9, 0, 0, 0, 5, 0, 1, b'c', 0, 0, 0]);
    let inc = IncomingRequest {
        prefix: frame::peek_request(&bytes).unwrap(),
        request: frame::decode_request(&bytes),
        frame: bytes,
    };
    let resp = response(
        handler::handle(&broker, &local, inc.into()).await,
        ApiKey::ApiVersions,
        0,
    )
    .unwrap();
    let ResponseBody::ApiVersions(av) = resp.body else {
        panic!()
    };
    assert_eq!(av.error_code, 35);
    assert_eq!(av.api_keys.len(), 1);
    assert_eq!(
        (av.api_keys[0].api_key, av.api_keys[0].max_version),
        (18, 4)
    );
    assert_eq!(resp.header.correlation_id, 5);
}

/// The leader epoch is the partition's, the same in every api that carries one, and a client
/// that names another epoch is fenced (older) or told it is unknown here (newer).
#[tokio::test]
async fn every_api_answers_and_fences_with_the_partitions_leader_epoch() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = BrokerConfig {
        server: kafka_broker::config::ServerConfig {
            data_dir: dir.path().to_path_buf(),
            ..Default::default()
        },
        ..Default::default()
    };
    let broker = Arc::new(Broker::open(cfg).unwrap());
    let local = handler::local_connection(&broker);
    broker
        .create_topic("epochs", 1, Default::default(), false)
        .unwrap();
    let epoch = broker.leader_epoch("epochs", 0);
    assert_eq!(epoch, 0, "a new partition leads at epoch 0");
    let local = &local;
    let ask = |body: RequestBody, key: ApiKey, version: i16| {
        let broker = Arc::clone(&broker);
        async move {
            let reply =
                handler::handle(&broker, local, incoming(key, version, &body, 1).into()).await;
            response(reply, key, version).unwrap().body
        }
    };
    let fetch = |current_leader_epoch: i32| {
        RequestBody::from(FetchRequest {
            max_wait_ms: 0,
            topics: vec![fetch_request::FetchTopic {
                topic: KStr::from_static("epochs"),
                partitions: vec![fetch_request::FetchPartition {
                    partition: 0,
                    current_leader_epoch,
                    partition_max_bytes: 1 << 20,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        })
    };
    let fenced = ErrorCode::FENCED_LEADER_EPOCH.code();
    let unknown = ErrorCode::UNKNOWN_LEADER_EPOCH.code();
    // Epoch 0 has no older epoch to send but -2, which a client never sends; -1 is "none".
    for (current, want) in [(-1, 0), (epoch, 0), (epoch + 1, unknown)] {
        let ResponseBody::Fetch(r) = ask(fetch(current), ApiKey::Fetch, 12).await else {
            panic!()
        };
        let p = &r.responses[0].partitions[0];
        assert_eq!(p.error_code, want, "fetch with current epoch {current}");
        if want != 0 {
            assert_eq!(p.current_leader.leader_epoch, epoch);
            assert_eq!(p.current_leader.leader_id, broker.config.server.node_id);
        }
    }
    // Fetch v9-11 carry the epoch but have no CurrentLeader: the error alone, answered.
    for version in [9, 11] {
        let ResponseBody::Fetch(r) = ask(fetch(epoch + 1), ApiKey::Fetch, version).await else {
            panic!()
        };
        let p = &r.responses[0].partitions[0];
        assert_eq!(p.error_code, unknown, "v{version}");
        assert_eq!(p.current_leader.leader_id, -1, "v{version}");
    }
    // A new leader epoch (as the cluster layer will set): the old one is fenced everywhere.
    broker
        .partition("epochs", 0)
        .unwrap()
        .become_leader(epoch + 3, &[], &[], broker.now_ms())
        .unwrap();
    let ResponseBody::Fetch(r) = ask(fetch(epoch), ApiKey::Fetch, 12).await else {
        panic!()
    };
    assert_eq!(r.responses[0].partitions[0].error_code, fenced);
    assert_eq!(
        r.responses[0].partitions[0].current_leader.leader_epoch,
        epoch + 3
    );
    let epoch = epoch + 3;
    let list = RequestBody::from(ListOffsetsRequest {
        replica_id: -1,
        topics: vec![list_offsets_request::ListOffsetsTopic {
            name: KStr::from_static("epochs"),
            partitions: vec![list_offsets_request::ListOffsetsPartition {
                partition_index: 0,
                current_leader_epoch: epoch + 1,
                timestamp: -1,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    });
    let ResponseBody::ListOffsets(r) = ask(list, ApiKey::ListOffsets, 7).await else {
        panic!()
    };
    assert_eq!(r.topics[0].partitions[0].error_code, unknown);
    let metadata = RequestBody::from(MetadataRequest {
        topics: None,
        ..Default::default()
    });
    let ResponseBody::Metadata(r) = ask(metadata, ApiKey::Metadata, 9).await else {
        panic!()
    };
    let t = r
        .topics
        .iter()
        .find(|t| t.name.as_deref() == Some("epochs"))
        .unwrap();
    assert_eq!(t.partitions[0].leader_epoch, epoch);
    let ofle = RequestBody::from(OffsetForLeaderEpochRequest {
        topics: vec![offset_for_leader_epoch_request::OffsetForLeaderTopic {
            topic: KStr::from_static("epochs"),
            partitions: vec![offset_for_leader_epoch_request::OffsetForLeaderPartition {
                partition: 0,
                current_leader_epoch: epoch + 1,
                leader_epoch: epoch,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    });
    let ResponseBody::OffsetForLeaderEpoch(r) = ask(ofle, ApiKey::OffsetForLeaderEpoch, 4).await
    else {
        panic!()
    };
    assert_eq!(r.topics[0].partitions[0].error_code, unknown);
}

/// Without an authorizer Kafka reports every operation of the resource type when asked (bit n
/// = AclOperation code n), INT32_MIN when not: topic 3576 (READ, WRITE, CREATE, DELETE, ALTER,
/// DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS), cluster 8096 (CREATE, ALTER, DESCRIBE,
/// CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE).
#[tokio::test]
async fn authorized_operations_are_answered_when_asked() {
    const TOPIC_OPS: i32 = 3576;
    const CLUSTER_OPS: i32 = 8096;
    let dir = tempfile::tempdir().unwrap();
    let cfg = BrokerConfig {
        server: kafka_broker::config::ServerConfig {
            data_dir: dir.path().to_path_buf(),
            ..Default::default()
        },
        ..Default::default()
    };
    let broker = Arc::new(Broker::open(cfg).unwrap());
    let local = handler::local_connection(&broker);
    let mut corr = 0;
    for version in 8..=12 {
        for asked in [false, true] {
            let body = RequestBody::Metadata(MetadataRequest {
                topics: Some(vec![metadata_request::MetadataRequestTopic {
                    name: Some(KStr::from_static("ops")),
                    ..Default::default()
                }]),
                allow_auto_topic_creation: true,
                include_cluster_authorized_operations: asked && version <= 10,
                include_topic_authorized_operations: asked,
                ..Default::default()
            });
            corr += 1;
            let inc = incoming(ApiKey::Metadata, version, &body, corr);
            let resp = response(
                handler::handle(&broker, &local, inc.into()).await,
                ApiKey::Metadata,
                version,
            );
            let Some(Response {
                body: ResponseBody::Metadata(m),
                ..
            }) = resp
            else {
                panic!("Metadata v{version}: no answer")
            };
            let topic = if asked { TOPIC_OPS } else { i32::MIN };
            assert_eq!(m.topics.len(), 1);
            assert_eq!(m.topics[0].topic_authorized_operations, topic, "v{version}");
            // v11+ carry no cluster field (the decoder's default is INT32_MIN).
            let cluster = if asked && version <= 10 {
                CLUSTER_OPS
            } else {
                i32::MIN
            };
            assert_eq!(m.cluster_authorized_operations, cluster, "v{version}");
        }
    }
    for version in 0..=1 {
        for asked in [false, true] {
            let body = RequestBody::DescribeCluster(DescribeClusterRequest {
                include_cluster_authorized_operations: asked,
                endpoint_type: 1,
                ..Default::default()
            });
            corr += 1;
            let inc = incoming(ApiKey::DescribeCluster, version, &body, corr);
            let resp = response(
                handler::handle(&broker, &local, inc.into()).await,
                ApiKey::DescribeCluster,
                version,
            );
            let Some(Response {
                body: ResponseBody::DescribeCluster(d),
                ..
            }) = resp
            else {
                panic!("DescribeCluster v{version}: no answer")
            };
            let expect = if asked { CLUSTER_OPS } else { i32::MIN };
            assert_eq!(d.cluster_authorized_operations, expect, "v{version}");
        }
    }
}

/// ListOffsets by timestamp at every version from v1 (v0 answers old-style offset lists) and
/// both isolation levels, with and without the current leader epoch: the first offset whose
/// timestamp is at or after the one asked, -1 past the last record (issue 13: records two
/// hours old, one second apart, several batches).
#[tokio::test]
async fn list_offsets_by_timestamp_at_every_version() {
    use kafka_protocol::record::RecordBatchBuilder;
    const TOPIC: &str = "times";
    let dir = tempfile::tempdir().unwrap();
    let cfg = BrokerConfig {
        server: kafka_broker::config::ServerConfig {
            data_dir: dir.path().to_path_buf(),
            ..Default::default()
        },
        ..Default::default()
    };
    let broker = Arc::new(Broker::open(cfg).unwrap());
    let local = handler::local_connection(&broker);
    broker
        .create_topic(TOPIC, 1, std::collections::BTreeMap::new(), false)
        .unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let base = now - 2 * 3_600_000;
    let times: Vec<i64> = (0..30).map(|i| base + i * 1000).collect();
    let mut corr = 0;
    for chunk in times.chunks(10) {
        let mut b = RecordBatchBuilder::new();
        for &ts in chunk {
            b.append(ts, None, Some(b"v".as_slice()), &[]).unwrap();
        }
        let body = RequestBody::Produce(ProduceRequest {
            acks: -1,
            timeout_ms: 1000,
            topic_data: vec![produce_request::TopicProduceData {
                name: KStr::from_static(TOPIC),
                partition_data: vec![produce_request::PartitionProduceData {
                    index: 0,
                    records: Some(b.build().unwrap()),
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        });
        corr += 1;
        let inc = incoming(ApiKey::Produce, 9, &body, corr);
        let Some(Response {
            body: ResponseBody::Produce(p),
            ..
        }) = response(
            handler::handle(&broker, &local, inc.into()).await,
            ApiKey::Produce,
            9,
        )
        else {
            panic!("no Produce answer")
        };
        assert_eq!(p.responses[0].partition_responses[0].error_code, 0);
    }
    let epoch = broker.partition(TOPIC, 0).unwrap().leader_epoch();
    let mut queries = vec![(times[0] - 60_000, 0)];
    for (i, &ts) in times.iter().enumerate() {
        let next = if i + 1 < times.len() {
            i as i64 + 1
        } else {
            -1
        };
        queries.push((ts, i as i64));
        queries.push((ts + 1, next));
    }
    for version in 1..=9 {
        // Isolation levels exist from v2, the current leader epoch from v4.
        let isolations: &[i8] = if version >= 2 { &[0, 1] } else { &[0] };
        let epochs = if version >= 4 {
            vec![-1, epoch]
        } else {
            vec![-1]
        };
        for &isolation in isolations {
            for &current_leader_epoch in &epochs {
                let body = RequestBody::ListOffsets(ListOffsetsRequest {
                    replica_id: -1,
                    isolation_level: isolation,
                    topics: vec![list_offsets_request::ListOffsetsTopic {
                        name: KStr::from_static(TOPIC),
                        partitions: queries
                            .iter()
                            .map(|&(ts, _)| list_offsets_request::ListOffsetsPartition {
                                partition_index: 0,
                                current_leader_epoch,
                                timestamp: ts,
                                ..Default::default()
                            })
                            .collect(),
                        ..Default::default()
                    }],
                    ..Default::default()
                });
                corr += 1;
                let inc = incoming(ApiKey::ListOffsets, version, &body, corr);
                let Some(Response {
                    body: ResponseBody::ListOffsets(l),
                    ..
                }) = response(
                    handler::handle(&broker, &local, inc.into()).await,
                    ApiKey::ListOffsets,
                    version,
                )
                else {
                    panic!("ListOffsets v{version}: no answer")
                };
                let got: Vec<(i16, i64, i64)> = l.topics[0]
                    .partitions
                    .iter()
                    .map(|p| (p.error_code, p.offset, p.timestamp))
                    .collect();
                let want: Vec<(i16, i64, i64)> = queries
                    .iter()
                    .map(|&(_, off)| {
                        let ts = usize::try_from(off).map_or(-1, |i| times[i]);
                        (0, off, ts)
                    })
                    .collect();
                assert_eq!(
                    got, want,
                    "v{version} isolation {isolation} epoch {current_leader_epoch}"
                );
            }
        }
    }
}

/// Metadata by topic id as the Java client asks (AdminClient describeTopics by id): the id set
/// and the name left empty (''), not null. Kafka looks the topic up by its id; a lookup by the
/// empty name answered UNKNOWN_TOPIC_OR_PARTITION with a zero id, which the Java client
/// rejects (IllegalStateException "Use errors() when managing topic using topic name").
#[tokio::test]
async fn metadata_by_topic_id_with_an_empty_name() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = BrokerConfig {
        server: kafka_broker::config::ServerConfig {
            data_dir: dir.path().to_path_buf(),
            ..Default::default()
        },
        ..Default::default()
    };
    let broker = Arc::new(Broker::open(cfg).unwrap());
    let local = handler::local_connection(&broker);
    let ask = |topic: metadata_request::MetadataRequestTopic, corr: i32| {
        let body = RequestBody::Metadata(MetadataRequest {
            topics: Some(vec![topic]),
            allow_auto_topic_creation: true,
            ..Default::default()
        });
        let inc = incoming(ApiKey::Metadata, 12, &body, corr);
        let (broker, local) = (broker.clone(), local.clone());
        async move {
            match response(
                handler::handle(&broker, &local, inc.into()).await,
                ApiKey::Metadata,
                12,
            ) {
                Some(Response {
                    body: ResponseBody::Metadata(m),
                    ..
                }) => m,
                other => panic!("Metadata v12: {other:?}"),
            }
        }
    };
    let created = ask(
        metadata_request::MetadataRequestTopic {
            name: Some(KStr::from_static("by-id")),
            ..Default::default()
        },
        1,
    )
    .await;
    let id = created.topics[0].topic_id;
    assert_ne!(id, kafka_protocol::Uuid::ZERO);
    let by_id = ask(
        metadata_request::MetadataRequestTopic {
            topic_id: id,
            name: Some(KStr::from_static("")),
            ..Default::default()
        },
        2,
    )
    .await;
    assert_eq!(by_id.topics.len(), 1);
    assert_eq!(by_id.topics[0].error_code, 0);
    assert_eq!(by_id.topics[0].topic_id, id);
    assert_eq!(by_id.topics[0].name.as_deref(), Some("by-id"));
    assert_eq!(by_id.topics[0].partitions.len(), 1);
    let unknown_id = kafka_protocol::Uuid([7; 16]);
    let unknown = ask(
        metadata_request::MetadataRequestTopic {
            topic_id: unknown_id,
            name: Some(KStr::from_static("")),
            ..Default::default()
        },
        3,
    )
    .await;
    assert_eq!(
        unknown.topics[0].error_code,
        ErrorCode::UNKNOWN_TOPIC_ID.code()
    );
    assert_eq!(unknown.topics[0].topic_id, unknown_id);
}

/// DescribeLogDirs (kafka-log-dirs, AdminClient describeLogDirs/describeReplicaLogDirs): the
/// one log directory with every hosted partition and its size, or only those asked for.
#[tokio::test]
async fn describe_log_dirs_lists_the_hosted_partitions() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = BrokerConfig {
        server: kafka_broker::config::ServerConfig {
            data_dir: dir.path().to_path_buf(),
            ..Default::default()
        },
        ..Default::default()
    };
    let broker = Arc::new(Broker::open(cfg).unwrap());
    let local = handler::local_connection(&broker);
    let create = RequestBody::Metadata(MetadataRequest {
        topics: Some(vec![metadata_request::MetadataRequestTopic {
            name: Some(KStr::from_static("dirs")),
            ..Default::default()
        }]),
        allow_auto_topic_creation: true,
        ..Default::default()
    });
    let inc = incoming(ApiKey::Metadata, 12, &create, 1);
    handler::handle(&broker, &local, inc.into()).await;
    let mut corr = 1;
    let mut ask = async |topics: Option<Vec<describe_log_dirs_request::DescribableLogDirTopic>>| {
        corr += 1;
        let body = RequestBody::DescribeLogDirs(DescribeLogDirsRequest {
            topics,
            ..Default::default()
        });
        let inc = incoming(ApiKey::DescribeLogDirs, 4, &body, corr);
        match response(
            handler::handle(&broker, &local, inc.into()).await,
            ApiKey::DescribeLogDirs,
            4,
        ) {
            Some(Response {
                body: ResponseBody::DescribeLogDirs(r),
                ..
            }) => r,
            other => panic!("DescribeLogDirs v4: {other:?}"),
        }
    };
    let all = ask(None).await;
    assert_eq!(all.error_code, 0);
    assert_eq!(all.results.len(), 1);
    let result = &all.results[0];
    assert_eq!(result.error_code, 0);
    assert_eq!(&*result.log_dir, dir.path().display().to_string());
    let topic = result.topics.iter().find(|t| &*t.name == "dirs").unwrap();
    assert_eq!(topic.partitions.len(), 1);
    assert_eq!(topic.partitions[0].partition_index, 0);
    assert_eq!(topic.partitions[0].partition_size, 0);
    assert!(!topic.partitions[0].is_future_key);
    let some = ask(Some(vec![
        describe_log_dirs_request::DescribableLogDirTopic {
            topic: KStr::from_static("dirs"),
            partitions: vec![0, 7],
            ..Default::default()
        },
    ]))
    .await;
    let names: Vec<&str> = some.results[0].topics.iter().map(|t| &*t.name).collect();
    assert_eq!(names, ["dirs"]);
    assert_eq!(some.results[0].topics[0].partitions.len(), 1);
    let none = ask(Some(Vec::new())).await;
    assert!(none.results[0].topics.is_empty());
}
