//! The cluster client against scripted fake brokers on 127.0.0.1:0: bootstrap, metadata
//! refreshes and waiters, leader routing after a leader move, coordinator lookup (batched and
//! single forms) and invalidation, reconnect backoff, least-loaded choice.
#![allow(clippy::unwrap_used)]

mod support;

use std::time::{Duration, Instant};

use kafka_net::{Admin, Cluster, CoordinatorType, NetError};
use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::*;
use support::{FakeCluster, Part, Reply, Topic, client_config, dead_addr};

#[tokio::test]
async fn bootstrap_skips_a_dead_address() {
    let fake = FakeCluster::builder(3).start().await;
    let mut bootstrap = vec![dead_addr()];
    bootstrap.extend(fake.bootstrap().into_iter().skip(1));
    let cluster = Cluster::connect(client_config(bootstrap)).await.unwrap();
    let meta = cluster.metadata();
    assert_eq!(meta.brokers.len(), 3);
    assert_eq!(meta.cluster_id.as_deref(), Some("fake-cluster"));
    assert_eq!(meta.controller_id, 1);
    assert_eq!(meta.brokers[&2].addr(), fake.addr(2));

    // The handshake names the client and its software.
    let hello = &fake.requests(ApiKey::ApiVersions)[0];
    assert_eq!(
        hello.node, 2,
        "the dead address was skipped, the next one asked"
    );
    assert_eq!(hello.request.header.client_id.as_deref(), Some("kafka-rs"));
    let av = body!(hello.request, ApiVersions);
    assert_eq!(av.client_software_name, "kafka-rs");
    assert!(!av.client_software_version.is_empty());
    // Bootstrap asks for brokers only, never creating topics.
    let first = &fake.requests(ApiKey::Metadata)[0];
    let m = body!(first.request, Metadata);
    assert_eq!(m.topics.as_ref().map(Vec::len), Some(0));
    assert!(!m.allow_auto_topic_creation);
    fake.assert_clean();

    // Only dead addresses: an error naming each.
    let (a, b) = (dead_addr(), dead_addr());
    let err = Cluster::connect(client_config(vec![a.clone(), b.clone()]))
        .await
        .unwrap_err();
    assert!(matches!(err, NetError::NoBrokers(_)), "{err}");
    let text = err.to_string();
    assert!(text.contains(&a) && text.contains(&b), "{text}");
}

#[tokio::test]
async fn metadata_refreshes_on_demand_and_wakes_topic_waiters() {
    // The topic appears in steps: unknown, then without a leader, then ready.
    let fake = FakeCluster::builder(2)
        .handler(|ctx, req| {
            if let RequestBody::Metadata(m) = &req.body {
                let asks = m.topics.iter().flatten().any(|t| t.name == Some("orders".into()));
                if asks {
                    let mut s = ctx.state();
                    let n = s
                        .log
                        .iter()
                        .filter(|l| matches!(&l.request.body, RequestBody::Metadata(m) if m.topics.iter().flatten().any(|t| t.name == Some("orders".into()))))
                        .count();
                    match n {
                        1 => {}
                        2 => {
                            s.topics.insert(
                                "orders".into(),
                                Topic {
                                    error: ErrorCode::LEADER_NOT_AVAILABLE.0,
                                    parts: vec![Part { leader: -1, epoch: 0, error: 5 }],
                                },
                            );
                        }
                        _ => {
                            s.topics.insert("orders".into(), Topic::led_by(&[2, 1]));
                        }
                    }
                }
            }
            None
        })
        .start()
        .await;
    let cluster = Cluster::connect(client_config(fake.bootstrap()))
        .await
        .unwrap();
    let v0 = cluster.metadata().version;

    // Someone else waiting for any newer snapshot is woken by the refreshes below.
    let c = cluster.clone();
    let waiter = tokio::spawn(async move { c.wait_for_update(v0, Duration::from_secs(3)).await });

    let started = Instant::now();
    let topic = cluster.wait_for_topic("orders").await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(topic.partitions.len(), 2);
    assert_eq!(topic.partitions[0].leader, 2);
    let asked: Vec<_> = fake
        .requests(ApiKey::Metadata)
        .into_iter()
        .filter(|l| body!(l.request, Metadata).topics.iter().flatten().count() > 0)
        .collect();
    assert_eq!(asked.len(), 3, "unknown, no leader, ready");
    let woke = waiter.await.unwrap().unwrap();
    assert!(woke.version > v0);

    // A refresh on demand sees a change (a new broker) and bumps the version.
    fake.state().brokers.insert(7, ("127.0.0.1".into(), 1));
    let before = cluster.metadata().version;
    let snap = cluster.refresh_metadata().await.unwrap();
    assert!(snap.version > before);
    assert!(snap.brokers.contains_key(&7));
    assert!(snap.topic("orders").is_some(), "topics of interest stay");
    fake.assert_clean();
}

#[tokio::test]
async fn waiting_for_a_topic_that_never_comes_times_out_with_the_last_error() {
    let fake = FakeCluster::builder(1).start().await;
    let mut cfg = client_config(fake.bootstrap());
    cfg.max_block = Duration::from_millis(200);
    let cluster = Cluster::connect(cfg).await.unwrap();
    let started = Instant::now();
    let err = cluster.wait_for_topic("nope").await.unwrap_err();
    let elapsed = started.elapsed();
    assert!(elapsed >= Duration::from_millis(200) && elapsed < Duration::from_secs(2));
    match err {
        NetError::MetadataTimeout { topic, last, .. } => {
            assert_eq!(topic, "nope");
            assert_eq!(last, Some(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION));
        }
        other => panic!("{other}"),
    }
}

fn list_offsets(topic: &str, partition: i32) -> RequestBody {
    RequestBody::ListOffsets(ListOffsetsRequest {
        replica_id: -1,
        topics: vec![list_offsets_request::ListOffsetsTopic {
            name: KStr::from(topic.to_owned()),
            partitions: vec![list_offsets_request::ListOffsetsPartition {
                partition_index: partition,
                timestamp: -1,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    })
}

fn offsets_reply(code: ErrorCode, offset: i64) -> Reply {
    Reply::Send(ResponseBody::ListOffsets(ListOffsetsResponse {
        topics: vec![list_offsets_response::ListOffsetsTopicResponse {
            name: "t".into(),
            partitions: vec![list_offsets_response::ListOffsetsPartitionResponse {
                partition_index: 0,
                error_code: code.0,
                offset,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }))
}

#[tokio::test]
async fn retry_follows_a_leader_move() {
    // Broker 1 leads t-0 until it is asked; it answers NOT_LEADER_OR_FOLLOWER and the
    // leadership moves to broker 2 (epoch 1).
    let fake = FakeCluster::builder(3)
        .handler(|ctx, req| {
            if !matches!(req.body, RequestBody::ListOffsets(_)) {
                return None;
            }
            let mut s = ctx.state();
            let part = &mut s.topics.get_mut("t").unwrap().parts[0];
            if part.leader != ctx.node {
                return Some(offsets_reply(ErrorCode::NOT_LEADER_OR_FOLLOWER, -1));
            }
            if ctx.node == 1 {
                part.leader = 2;
                part.epoch = 1;
                return Some(offsets_reply(ErrorCode::NOT_LEADER_OR_FOLLOWER, -1));
            }
            Some(offsets_reply(ErrorCode::NONE, 42))
        })
        .start()
        .await;
    fake.add_topic("t", Topic::led_by(&[1]));
    let cluster = Cluster::connect(client_config(fake.bootstrap()))
        .await
        .unwrap();
    let offset = cluster
        .retry(|| async {
            let conn = cluster.leader_connection("t", 0).await?;
            let body = conn.request(list_offsets("t", 0)).await?;
            let ResponseBody::ListOffsets(r) = body else {
                panic!("{body:?}")
            };
            let p = &r.topics[0].partitions[0];
            kafka_net::connection::check(p.error_code, "ListOffsets t-0")?;
            Ok(p.offset)
        })
        .await
        .unwrap();
    assert_eq!(offset, 42);
    let nodes: Vec<i32> = fake
        .requests(ApiKey::ListOffsets)
        .iter()
        .map(|l| l.node)
        .collect();
    assert_eq!(nodes, [1, 2], "first the old leader, then the new one");
    let p = cluster.metadata().topic("t").unwrap().partitions[0].clone();
    assert_eq!((p.leader, p.leader_epoch), (2, 1), "metadata was refreshed");
    fake.assert_clean();
}

#[tokio::test]
async fn retry_gives_up_on_a_non_retriable_error_and_after_the_retries() {
    let fake = FakeCluster::builder(1).start().await;
    let cluster = Cluster::connect(client_config(fake.bootstrap()))
        .await
        .unwrap();
    let mut calls = 0;
    let err = cluster
        .retry(|| {
            calls += 1;
            async {
                Err::<(), _>(NetError::Kafka {
                    code: ErrorCode::TOPIC_AUTHORIZATION_FAILED,
                    context: "x".into(),
                })
            }
        })
        .await
        .unwrap_err();
    assert_eq!(
        err.error_code(),
        Some(ErrorCode::TOPIC_AUTHORIZATION_FAILED)
    );
    assert_eq!(calls, 1);
    let mut calls = 0;
    let _ = cluster
        .retry(|| {
            calls += 1;
            async {
                Err::<(), _>(NetError::Kafka {
                    code: ErrorCode::REQUEST_TIMED_OUT,
                    context: "x".into(),
                })
            }
        })
        .await
        .unwrap_err();
    assert_eq!(calls, 4, "the first try and `retries` (3) more");
}

async fn coordinator_lookup(max_version: i16) {
    let fake = FakeCluster::builder(3)
        .max_version(ApiKey::FindCoordinator, max_version)
        .start()
        .await;
    fake.state().coordinators.insert("g1".into(), 3);
    let cluster = Cluster::connect(client_config(fake.bootstrap()))
        .await
        .unwrap();
    assert_eq!(
        cluster
            .coordinator(CoordinatorType::Group, "g1")
            .await
            .unwrap(),
        3
    );
    assert_eq!(
        cluster
            .coordinator(CoordinatorType::Group, "g1")
            .await
            .unwrap(),
        3
    );
    let asked = fake.requests(ApiKey::FindCoordinator);
    assert_eq!(asked.len(), 1, "the answer is cached");
    assert_eq!(asked[0].version(), max_version);
    let f = body!(asked[0].request, FindCoordinator);
    if max_version >= 4 {
        assert_eq!(f.coordinator_keys, [KStr::from("g1")]);
        assert!(f.key.is_empty());
    } else {
        assert_eq!(f.key, "g1");
        assert!(f.coordinator_keys.is_empty());
    }
    assert_eq!(f.key_type, 0);
    fake.assert_clean();
}

#[tokio::test]
async fn coordinator_lookup_batched_form_v4_and_up() {
    coordinator_lookup(ApiKey::FindCoordinator.versions().max).await;
    coordinator_lookup(4).await;
}

#[tokio::test]
async fn coordinator_lookup_single_form_before_v4() {
    coordinator_lookup(3).await;
    coordinator_lookup(1).await;
}

#[tokio::test]
async fn transaction_coordinators_need_find_coordinator_v1() {
    let fake = FakeCluster::builder(1)
        .max_version(ApiKey::FindCoordinator, 0)
        .start()
        .await;
    let cluster = Cluster::connect(client_config(fake.bootstrap()))
        .await
        .unwrap();
    let err = cluster
        .coordinator(CoordinatorType::Transaction, "tx")
        .await
        .unwrap_err();
    assert!(matches!(err, NetError::UnsupportedApi { .. }), "{err}");
    assert!(fake.requests(ApiKey::FindCoordinator).is_empty());
}

#[tokio::test]
async fn not_coordinator_invalidates_and_the_group_is_found_again() {
    for max_version in [3, ApiKey::FindCoordinator.versions().max] {
        // Broker 2 coordinates g1 until asked; then it says NOT_COORDINATOR and g1 moves to 3.
        let fake = FakeCluster::builder(3)
            .max_version(ApiKey::FindCoordinator, max_version)
            .handler(|ctx, req| {
                let RequestBody::DescribeGroups(d) = &req.body else {
                    return None;
                };
                let mut s = ctx.state();
                let here = s.coordinators.get("g1") == Some(&ctx.node);
                let code = if here && ctx.node == 3 {
                    ErrorCode::NONE
                } else {
                    s.coordinators.insert("g1".into(), 3);
                    ErrorCode::NOT_COORDINATOR
                };
                Some(Reply::Send(ResponseBody::DescribeGroups(
                    DescribeGroupsResponse {
                        groups: d
                            .groups
                            .iter()
                            .map(|g| describe_groups_response::DescribedGroup {
                                error_code: code.0,
                                group_id: g.clone(),
                                group_state: "Stable".into(),
                                ..Default::default()
                            })
                            .collect(),
                        ..Default::default()
                    },
                )))
            })
            .start()
            .await;
        fake.state().coordinators.insert("g1".into(), 2);
        let admin = Admin::connect(client_config(fake.bootstrap()))
            .await
            .unwrap();
        let cluster = admin.cluster();
        assert_eq!(
            cluster
                .coordinator(CoordinatorType::Group, "g1")
                .await
                .unwrap(),
            2
        );
        let got = admin.describe_groups(&["g1"]).await;
        let g = got[0].as_ref().unwrap();
        assert_eq!((g.state.as_str(), g.coordinator), ("Stable", 3));
        let nodes: Vec<i32> = fake
            .requests(ApiKey::DescribeGroups)
            .iter()
            .map(|l| l.node)
            .collect();
        assert_eq!(nodes, [2, 3]);
        assert_eq!(
            fake.requests(ApiKey::FindCoordinator).len(),
            2,
            "looked up again"
        );
        assert_eq!(
            cluster
                .coordinator(CoordinatorType::Group, "g1")
                .await
                .unwrap(),
            3
        );
        fake.assert_clean();

        // By hand: invalidation forgets the cached answer.
        cluster.invalidate_coordinator(CoordinatorType::Group, "g1");
        cluster
            .coordinator(CoordinatorType::Group, "g1")
            .await
            .unwrap();
        assert_eq!(fake.requests(ApiKey::FindCoordinator).len(), 3);
    }
}

#[tokio::test]
async fn reconnect_backoff_grows_exponentially_with_jitter_and_is_capped() {
    let fake = FakeCluster::builder(1).start().await;
    // Broker 9 is in the metadata but nothing listens at its address.
    let dead_port: i32 = dead_addr().rsplit(':').next().unwrap().parse().unwrap();
    fake.state()
        .brokers
        .insert(9, ("127.0.0.1".into(), dead_port));
    let mut cfg = client_config(fake.bootstrap());
    cfg.reconnect_backoff = Duration::from_millis(40);
    cfg.reconnect_backoff_max = Duration::from_millis(160);
    let cluster = Cluster::connect(cfg).await.unwrap();
    assert!(cluster.metadata().brokers.contains_key(&9));

    let mut waits = Vec::new();
    for _ in 0..6 {
        let started = Instant::now();
        assert!(cluster.connection(9).await.is_err());
        waits.push(started.elapsed());
    }
    let ms: Vec<u128> = waits.iter().map(Duration::as_millis).collect();
    // The first attempt does not wait; then 40, 80, 160, 160, 160 ms, each +/- 20% (the
    // uncapped waits would be 320 and 640 ms).
    assert!(ms[0] < 100, "{ms:?}");
    for (wait, nominal) in waits[1..].iter().zip([40u64, 80, 160, 160, 160]) {
        let nominal = Duration::from_millis(nominal);
        assert!(*wait >= nominal.mul_f64(0.8), "{ms:?}");
        assert!(
            *wait <= nominal.mul_f64(1.2) + Duration::from_millis(150),
            "{ms:?}"
        );
    }

    // Other brokers are not held back by one broker's backoff.
    let c = cluster.clone();
    let waiting = tokio::spawn(async move { c.connection(9).await });
    cluster.connection(1).await.unwrap();
    assert!(
        !waiting.is_finished(),
        "broker 1 waited for broker 9's backoff"
    );
    assert!(waiting.await.unwrap().is_err());
}

#[tokio::test]
async fn least_loaded_picks_the_broker_with_fewest_requests_in_flight() {
    // Broker 1 takes 400 ms to answer ListGroups.
    let fake = FakeCluster::builder(2)
        .handler(|ctx, req| {
            matches!(req.body, RequestBody::ListGroups(_)).then(|| {
                let body = ResponseBody::ListGroups(ListGroupsResponse::default());
                if ctx.node == 1 {
                    Reply::After(Duration::from_millis(400), body)
                } else {
                    Reply::Send(body)
                }
            })
        })
        .start()
        .await;
    let cluster = Cluster::connect(client_config(fake.bootstrap()))
        .await
        .unwrap();
    let c1 = cluster.connection(1).await.unwrap();
    let c2 = cluster.connection(2).await.unwrap();
    let mut busy = Vec::new();
    for _ in 0..3 {
        let c = c1.clone();
        busy.push(tokio::spawn(async move {
            c.request(RequestBody::ListGroups(ListGroupsRequest::default()))
                .await
        }));
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(c1.load(), 3);
    assert_eq!(c2.load(), 0);
    assert_eq!(cluster.least_loaded().await.unwrap().addr(), fake.addr(2));
    // Metadata refreshes go there too.
    cluster.refresh_metadata().await.unwrap();
    assert_eq!(fake.requests(ApiKey::Metadata).last().unwrap().node, 2);
    for b in busy {
        b.await.unwrap().unwrap();
    }
    assert_eq!(c1.load(), 0);
    fake.assert_clean();
}
