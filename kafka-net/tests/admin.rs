//! The admin client's topic, cluster and offset calls against scripted fake brokers, at every
//! version of each api: the request as decoded by the broker (fields, routing), the response
//! mapped to typed results, Kafka errors carried with their names. Configs and groups are in
//! `admin_configs_groups.rs`.
#![allow(clippy::unwrap_used)]

mod support;

use kafka_net::admin::*;
use kafka_net::{Admin, NetError};
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::*;
use kafka_protocol::{KStr, Request, Uuid};
use support::{Ctx, FakeCluster, Reply, Topic, admin, assert_kafka, kstr, versions};

#[allow(dead_code)]
fn admin_futures_are_send(a: &Admin) {
    fn send<T: Send>(_: T) {}
    send(a.create_topics(&[], false));
    send(a.delete_topics(&[]));
    send(a.create_partitions("t", 2));
    send(a.describe_cluster());
    send(a.list_offsets(&[]));
    send(a.describe_configs(&[]));
    send(a.incremental_alter_configs(&[], false));
    send(a.list_groups());
    send(a.describe_groups(&[]));
    send(a.delete_groups(&[]));
}

fn create_topics_reply(req: &Request) -> Option<Reply> {
    let RequestBody::CreateTopics(c) = &req.body else {
        return None;
    };
    let v = req.version();
    let topics = c
        .topics
        .iter()
        .map(|t| {
            let mut r = create_topics_response::CreatableTopicResult {
                name: t.name.clone(),
                ..Default::default()
            };
            if t.name == "taken" {
                r.error_code = ErrorCode::TOPIC_ALREADY_EXISTS.0;
                r.error_message = Some("Topic 'taken' already exists.".into());
                return r;
            }
            if v >= 5 {
                r.num_partitions = if t.num_partitions < 0 {
                    6
                } else {
                    t.num_partitions
                };
                r.replication_factor = t.replication_factor.max(1);
                r.configs = Some(
                    t.configs
                        .iter()
                        .map(|c| create_topics_response::CreatableTopicConfigs {
                            name: c.name.clone(),
                            value: c.value.clone(),
                            config_source: 1,
                            ..Default::default()
                        })
                        .collect(),
                );
            }
            if v >= 7 {
                r.topic_id = Uuid([7; 16]);
            }
            r
        })
        .collect();
    Some(Reply::Send(ResponseBody::CreateTopics(
        CreateTopicsResponse {
            topics,
            ..Default::default()
        },
    )))
}

#[tokio::test]
async fn create_topics_at_every_version() {
    for v in versions(ApiKey::CreateTopics) {
        let fake = FakeCluster::builder(2)
            .max_version(ApiKey::CreateTopics, v)
            .handler(|_, req| create_topics_reply(req))
            .start()
            .await;
        fake.state().controller = 2;
        let admin = admin(&fake).await;
        let topics = [
            NewTopic::new("a", 3, 1).config("cleanup.policy", "compact"),
            NewTopic::new("taken", 1, 1),
            NewTopic::new("dflt", -1, -1),
            NewTopic::new("a", 1, 1),
        ];
        let got = admin.create_topics(&topics, false).await;
        assert_eq!(got.len(), 4);

        let a = got[0].as_ref().unwrap();
        assert_eq!(a.name, "a");
        if v >= 5 {
            assert_eq!((a.partitions, a.replication_factor), (Some(3), Some(1)));
            assert_eq!(a.configs.len(), 1);
            assert_eq!(a.configs[0].name, "cleanup.policy");
            assert_eq!(a.configs[0].value.as_deref(), Some("compact"));
            assert_eq!(a.configs[0].source, ConfigSource::DynamicTopic);
        } else {
            assert_eq!((a.partitions, a.replication_factor), (None, None));
            assert!(a.configs.is_empty());
        }
        assert_eq!(a.topic_id, (v >= 7).then_some(Uuid([7; 16])));
        assert_kafka(&got[1], ErrorCode::TOPIC_ALREADY_EXISTS, "taken");
        if v >= 4 {
            let d = got[2].as_ref().unwrap();
            assert_eq!(d.partitions, (v >= 5).then_some(6));
        } else {
            assert!(
                matches!(got[2], Err(NetError::UnsupportedApi { .. })),
                "v{v}"
            );
        }
        assert!(matches!(got[3], Err(NetError::Config(_))), "duplicate name");

        let sent = fake.requests(ApiKey::CreateTopics);
        assert_eq!(sent.len(), 1, "v{v}: final errors are not retried");
        assert_eq!(
            (sent[0].node, sent[0].version()),
            (2, v),
            "to the controller"
        );
        let c = body!(sent[0].request, CreateTopics);
        let names: Vec<&str> = c.topics.iter().map(|t| t.name.as_str()).collect();
        let expected: &[&str] = if v >= 4 {
            &["a", "taken", "dflt"]
        } else {
            &["a", "taken"]
        };
        assert_eq!(names, expected);
        assert_eq!(
            (c.topics[0].num_partitions, c.topics[0].replication_factor),
            (3, 1)
        );
        assert_eq!(c.topics[0].configs[0].name, "cleanup.policy");
        assert_eq!(c.topics[0].configs[0].value.as_deref(), Some("compact"));
        if v >= 4 {
            assert_eq!(
                (c.topics[2].num_partitions, c.topics[2].replication_factor),
                (-1, -1)
            );
        }
        assert_eq!(c.timeout_ms, 30_000);
        assert!(!c.validate_only);
        fake.assert_clean();
    }
}

#[tokio::test]
async fn create_topics_validate_only_needs_v1() {
    for v in [0, ApiKey::CreateTopics.versions().max] {
        let fake = FakeCluster::builder(1)
            .max_version(ApiKey::CreateTopics, v)
            .handler(|_, req| create_topics_reply(req))
            .start()
            .await;
        let admin = admin(&fake).await;
        let got = admin.create_topics(&[NewTopic::new("a", 1, 1)], true).await;
        let sent = fake.requests(ApiKey::CreateTopics);
        if v == 0 {
            assert!(matches!(got[0], Err(NetError::UnsupportedApi { .. })));
            assert!(sent.is_empty());
        } else {
            assert!(got[0].is_ok());
            assert!(body!(sent[0].request, CreateTopics).validate_only);
        }
    }
}

#[tokio::test]
async fn create_topics_follow_the_controller() {
    // The metadata names broker 1; it answers NOT_CONTROLLER and the controller becomes 2.
    let fake = FakeCluster::builder(2)
        .handler(|ctx: &Ctx, req| {
            if ctx.node == 1 && matches!(req.body, RequestBody::CreateTopics(_)) {
                ctx.state().controller = 2;
                let c = body!(req, CreateTopics);
                let topics = c
                    .topics
                    .iter()
                    .map(|t| create_topics_response::CreatableTopicResult {
                        name: t.name.clone(),
                        error_code: ErrorCode::NOT_CONTROLLER.0,
                        ..Default::default()
                    })
                    .collect();
                return Some(Reply::Send(ResponseBody::CreateTopics(
                    CreateTopicsResponse {
                        topics,
                        ..Default::default()
                    },
                )));
            }
            create_topics_reply(req)
        })
        .start()
        .await;
    let admin = admin(&fake).await;
    let got = admin
        .create_topics(&[NewTopic::new("a", 1, 1)], false)
        .await;
    assert!(got[0].is_ok(), "{:?}", got[0]);
    let nodes: Vec<i32> = fake
        .requests(ApiKey::CreateTopics)
        .iter()
        .map(|l| l.node)
        .collect();
    assert_eq!(nodes, [1, 2]);
    assert_eq!(admin.cluster().metadata().controller_id, 2);
    fake.assert_clean();
}

#[tokio::test]
async fn delete_topics_at_every_version() {
    for v in versions(ApiKey::DeleteTopics) {
        let fake = FakeCluster::builder(2)
            .max_version(ApiKey::DeleteTopics, v)
            .handler(|_, req| {
                let RequestBody::DeleteTopics(d) = &req.body else {
                    return None;
                };
                let names: Vec<KStr> = if req.version() >= 6 {
                    d.topics.iter().filter_map(|t| t.name.clone()).collect()
                } else {
                    d.topic_names.clone()
                };
                let responses = names
                    .into_iter()
                    .map(|n| delete_topics_response::DeletableTopicResult {
                        error_code: if n == "gone" { 3 } else { 0 },
                        name: Some(n),
                        ..Default::default()
                    })
                    .collect();
                Some(Reply::Send(ResponseBody::DeleteTopics(
                    DeleteTopicsResponse {
                        responses,
                        ..Default::default()
                    },
                )))
            })
            .start()
            .await;
        let admin = admin(&fake).await;
        let got = admin.delete_topics(&["a", "gone", "a"]).await;
        assert_eq!(got[0].0, "a");
        assert!(got[0].1.is_ok());
        assert_eq!(got[1].0, "gone");
        assert_kafka(&got[1].1, ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, "gone");
        assert!(matches!(got[2].1, Err(NetError::Config(_))));
        let sent = fake.requests(ApiKey::DeleteTopics);
        assert_eq!(sent.len(), 1, "v{v}");
        assert_eq!((sent[0].node, sent[0].version()), (1, v));
        let d = body!(sent[0].request, DeleteTopics);
        if v >= 6 {
            let names: Vec<_> = d.topics.iter().map(|t| t.name.clone().unwrap()).collect();
            assert_eq!(names, [kstr("a"), kstr("gone")]);
            assert!(d.topics.iter().all(|t| t.topic_id.is_zero()));
        } else {
            assert_eq!(d.topic_names, [kstr("a"), kstr("gone")]);
            assert!(d.topics.is_empty());
        }
        assert_eq!(d.timeout_ms, 30_000);
        fake.assert_clean();
    }
}

#[tokio::test]
async fn create_partitions_at_every_version() {
    for v in versions(ApiKey::CreatePartitions) {
        let fake = FakeCluster::builder(1)
            .max_version(ApiKey::CreatePartitions, v)
            .handler(|_, req| {
                let RequestBody::CreatePartitions(c) = &req.body else {
                    return None;
                };
                let results = c
                    .topics
                    .iter()
                    .map(|t| {
                        let small = t.name == "small";
                        create_partitions_response::CreatePartitionsTopicResult {
                            name: t.name.clone(),
                            error_code: if small {
                                ErrorCode::INVALID_PARTITIONS.0
                            } else {
                                0
                            },
                            error_message: small.then(|| "Topic already has 8 partitions.".into()),
                            ..Default::default()
                        }
                    })
                    .collect();
                Some(Reply::Send(ResponseBody::CreatePartitions(
                    CreatePartitionsResponse {
                        results,
                        ..Default::default()
                    },
                )))
            })
            .start()
            .await;
        let admin = admin(&fake).await;
        admin.create_partitions("t", 6).await.unwrap();
        let err = admin.create_partitions("small", 4).await;
        assert_kafka(&err, ErrorCode::INVALID_PARTITIONS, "small");
        assert!(err.unwrap_err().to_string().contains("already has 8"));
        let sent = fake.requests(ApiKey::CreatePartitions);
        assert_eq!(sent.len(), 2);
        assert_eq!(sent[0].version(), v);
        let c = body!(sent[0].request, CreatePartitions);
        assert_eq!((c.topics[0].name.as_str(), c.topics[0].count), ("t", 6));
        assert_eq!(c.topics[0].assignments, None);
        assert!(!c.validate_only);
        fake.assert_clean();
    }
}

#[tokio::test]
async fn describe_cluster_with_describe_cluster_or_metadata() {
    for v in versions(ApiKey::DescribeCluster) {
        let fake = FakeCluster::builder(3)
            .max_version(ApiKey::DescribeCluster, v)
            .handler(|ctx, req| {
                matches!(req.body, RequestBody::DescribeCluster(_)).then(|| {
                    let s = ctx.state();
                    Reply::Send(ResponseBody::DescribeCluster(DescribeClusterResponse {
                        cluster_id: "dc-id".into(),
                        controller_id: 3,
                        brokers: s
                            .brokers
                            .iter()
                            .rev()
                            .map(
                                |(id, (h, p))| describe_cluster_response::DescribeClusterBroker {
                                    broker_id: *id,
                                    host: kstr(h),
                                    port: *p,
                                    rack: Some("r1".into()),
                                    ..Default::default()
                                },
                            )
                            .collect(),
                        ..Default::default()
                    }))
                })
            })
            .start()
            .await;
        let d = admin(&fake).await.describe_cluster().await.unwrap();
        assert_eq!(d.cluster_id.as_deref(), Some("dc-id"));
        assert_eq!(d.controller_id, 3);
        let ids: Vec<i32> = d.brokers.iter().map(|b| b.node_id).collect();
        assert_eq!(ids, [1, 2, 3]);
        assert_eq!(d.brokers[1].addr(), fake.addr(2));
        assert_eq!(d.brokers[0].rack.as_deref(), Some("r1"));
        let sent = fake.requests(ApiKey::DescribeCluster);
        assert_eq!(sent[0].version(), v);
        let req = body!(sent[0].request, DescribeCluster);
        assert!(!req.include_cluster_authorized_operations);
        assert_eq!(req.endpoint_type, 1);
        fake.assert_clean();
    }

    // A broker without DescribeCluster: the answer comes from Metadata.
    let fake = FakeCluster::builder(3)
        .without(ApiKey::DescribeCluster)
        .start()
        .await;
    let d = admin(&fake).await.describe_cluster().await.unwrap();
    assert_eq!(d.cluster_id.as_deref(), Some("fake-cluster"));
    assert_eq!(d.controller_id, 1);
    assert_eq!(d.brokers.len(), 3);
    assert!(fake.requests(ApiKey::DescribeCluster).is_empty());

    // An error code comes back named.
    let fake = FakeCluster::builder(1)
        .handler(|_, req| {
            matches!(req.body, RequestBody::DescribeCluster(_)).then(|| {
                Reply::Send(ResponseBody::DescribeCluster(DescribeClusterResponse {
                    error_code: ErrorCode::CLUSTER_AUTHORIZATION_FAILED.0,
                    ..Default::default()
                }))
            })
        })
        .start()
        .await;
    let err = admin(&fake).await.describe_cluster().await;
    assert_kafka(
        &err,
        ErrorCode::CLUSTER_AUTHORIZATION_FAILED,
        "DescribeCluster",
    );
}

/// Answers ListOffsets from the fake's leaders: NOT_LEADER_OR_FOLLOWER where this broker
/// does not lead; earliest 0, latest 100 + partition, max timestamp 99 (at 5555), a
/// timestamp t gives 50 (at t).
fn list_offsets_reply(ctx: &Ctx, req: &Request) -> Option<Reply> {
    let RequestBody::ListOffsets(l) = &req.body else {
        return None;
    };
    let v = req.version();
    let s = ctx.state();
    let topics = l
        .topics
        .iter()
        .map(|t| list_offsets_response::ListOffsetsTopicResponse {
            name: t.name.clone(),
            partitions: t
                .partitions
                .iter()
                .map(|p| {
                    let part = &s.topics[t.name.as_str()].parts[p.partition_index as usize];
                    let mut r = list_offsets_response::ListOffsetsPartitionResponse {
                        partition_index: p.partition_index,
                        ..Default::default()
                    };
                    if part.leader != ctx.node {
                        r.error_code = ErrorCode::NOT_LEADER_OR_FOLLOWER.0;
                        return r;
                    }
                    let (offset, ts) = match p.timestamp {
                        -2 => (0, -1),
                        -1 => (100 + i64::from(p.partition_index), -1),
                        -3 => (99, 5555),
                        t => (50, t),
                    };
                    if v == 0 {
                        r.old_style_offsets = vec![offset];
                    } else {
                        r.offset = offset;
                        r.timestamp = ts;
                    }
                    if v >= 4 {
                        r.leader_epoch = part.epoch;
                    }
                    r
                })
                .collect(),
            ..Default::default()
        })
        .collect();
    Some(Reply::Send(ResponseBody::ListOffsets(
        ListOffsetsResponse {
            topics,
            ..Default::default()
        },
    )))
}

#[tokio::test]
async fn list_offsets_at_every_version_grouped_by_leader() {
    for v in versions(ApiKey::ListOffsets) {
        let fake = FakeCluster::builder(2)
            .max_version(ApiKey::ListOffsets, v)
            .handler(list_offsets_reply)
            .start()
            .await;
        fake.add_topic("t", Topic::led_by(&[1, 2, 1]));
        fake.add_topic("u", Topic::led_by(&[2]));
        fake.state().topics.get_mut("t").unwrap().parts[0].epoch = 3;
        let admin = admin(&fake).await;
        let got = admin
            .list_offsets(&[
                ("t", 0, OffsetSpec::Earliest),
                ("t", 1, OffsetSpec::Latest),
                ("u", 0, OffsetSpec::Timestamp(1000)),
                ("t", 2, OffsetSpec::MaxTimestamp),
                ("t", 0, OffsetSpec::Latest),
                ("missing", 0, OffsetSpec::Latest),
            ])
            .await;
        let t0 = got[0].as_ref().unwrap();
        assert_eq!((t0.topic.as_str(), t0.partition, t0.offset), ("t", 0, 0));
        assert_eq!(t0.timestamp, None);
        assert_eq!(t0.leader_epoch, (v >= 4).then_some(3));
        assert_eq!(got[1].as_ref().unwrap().offset, 101);
        let u0 = got[2].as_ref().unwrap();
        assert_eq!(u0.offset, 50);
        assert_eq!(u0.timestamp, (v >= 1).then_some(1000));
        if v >= 7 {
            let t2 = got[3].as_ref().unwrap();
            assert_eq!((t2.offset, t2.timestamp), (99, Some(5555)));
        } else {
            assert!(
                matches!(got[3], Err(NetError::UnsupportedApi { .. })),
                "v{v}"
            );
        }
        assert!(
            matches!(got[4], Err(NetError::Config(_))),
            "duplicate partition"
        );
        assert_kafka(&got[5], ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, "missing-0");

        // One request per leader, each at the negotiated version with only its partitions.
        let sent = fake.requests(ApiKey::ListOffsets);
        assert_eq!(sent.len(), 2, "v{v}");
        for l in &sent {
            assert_eq!(l.version(), v);
            let req = body!(l.request, ListOffsets);
            assert_eq!((req.replica_id, req.isolation_level), (-1, 0));
            let asked: Vec<(String, i32, i64, i32)> = req
                .topics
                .iter()
                .flat_map(|t| {
                    t.partitions.iter().map(|p| {
                        (
                            t.name.to_string(),
                            p.partition_index,
                            p.timestamp,
                            p.current_leader_epoch,
                        )
                    })
                })
                .collect();
            // The leader epoch from the metadata goes along from v4 on.
            let e = |epoch: i32| if v >= 4 { epoch } else { -1 };
            let mut expected = match l.node {
                1 => vec![("t".to_owned(), 0, -2, e(3))],
                _ => vec![
                    ("t".to_owned(), 1, -1, e(0)),
                    ("u".to_owned(), 0, 1000, e(0)),
                ],
            };
            if l.node == 1 && v >= 7 {
                expected.push(("t".to_owned(), 2, -3, 0));
            }
            assert_eq!(asked, expected, "v{v} node {}", l.node);
        }
        fake.assert_clean();
    }
}

#[tokio::test]
async fn list_offsets_follow_a_leader_move() {
    let fake = FakeCluster::builder(2)
        .handler(|ctx, req| {
            if ctx.node == 1 && matches!(req.body, RequestBody::ListOffsets(_)) {
                let mut s = ctx.state();
                let p = &mut s.topics.get_mut("t").unwrap().parts[0];
                p.leader = 2;
                p.epoch += 1;
            }
            list_offsets_reply(ctx, req)
        })
        .start()
        .await;
    fake.add_topic("t", Topic::led_by(&[1]));
    let admin = admin(&fake).await;
    let got = admin.list_offsets(&[("t", 0, OffsetSpec::Latest)]).await;
    let o = got[0].as_ref().unwrap();
    assert_eq!((o.offset, o.leader_epoch), (100, Some(1)));
    let nodes: Vec<i32> = fake
        .requests(ApiKey::ListOffsets)
        .iter()
        .map(|l| l.node)
        .collect();
    assert_eq!(nodes, [1, 2]);
    fake.assert_clean();
}
