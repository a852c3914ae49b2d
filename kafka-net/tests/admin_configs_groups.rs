//! The admin client's config and group calls against scripted fake brokers, at every version
//! of each api (see `admin.rs` for topics, cluster and offsets).
#![allow(clippy::unwrap_used)]

mod support;

use bytes::Bytes;
use kafka_net::NetError;
use kafka_net::admin::*;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::*;
use kafka_protocol::{KStr, Request};
use support::{FakeCluster, Reply, admin, assert_kafka, kstr, versions};

/// One DescribeConfigs result entry, version-aware.
fn config(
    v: i16,
    name: &str,
    value: Option<&str>,
    source: i8,
    sensitive: bool,
) -> describe_configs_response::DescribeConfigsResourceResult {
    let mut c = describe_configs_response::DescribeConfigsResourceResult {
        name: kstr(name),
        value: value.map(kstr),
        read_only: source == 4,
        is_sensitive: sensitive,
        ..Default::default()
    };
    if v == 0 {
        c.is_default = source == 5;
    } else {
        c.config_source = source;
    }
    c
}

/// DescribeConfigs from a fixed world: topic t (two overrides, a default, a throttle
/// list), broker 1 and 3 (a hidden password each, a static setting), topic `missing`.
fn describe_configs_reply(req: &Request) -> Option<Reply> {
    let RequestBody::DescribeConfigs(d) = &req.body else {
        return None;
    };
    let v = req.version();
    let results = d
        .resources
        .iter()
        .map(|r| {
            let mut out = describe_configs_response::DescribeConfigsResult {
                resource_type: r.resource_type,
                resource_name: r.resource_name.clone(),
                ..Default::default()
            };
            match (r.resource_type, r.resource_name.as_str()) {
                (2, "t") => {
                    out.configs = vec![
                        config(v, "cleanup.policy", Some("compact"), 1, false),
                        config(v, "retention.ms", Some("604800000"), 5, false),
                        config(v, "min.insync.replicas", Some("2"), 1, false),
                        config(
                            v,
                            "leader.replication.throttled.replicas",
                            Some("1:1"),
                            1,
                            false,
                        ),
                    ];
                }
                (4, "1" | "2" | "3") => {
                    out.configs = vec![
                        config(v, "ssl.key.password", None, 2, true),
                        config(v, "log.retention.hours", Some("168"), 4, false),
                    ];
                }
                _ => {
                    out.error_code = ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.0;
                    out.error_message = Some(kstr("Topic missing does not exist"));
                }
            }
            out
        })
        .collect();
    Some(Reply::Send(ResponseBody::DescribeConfigs(
        DescribeConfigsResponse {
            results,
            ..Default::default()
        },
    )))
}

#[tokio::test]
async fn describe_configs_at_every_version() {
    for v in versions(ApiKey::DescribeConfigs) {
        let fake = FakeCluster::builder(2)
            .max_version(ApiKey::DescribeConfigs, v)
            .handler(|_, req| describe_configs_reply(req))
            .start()
            .await;
        let admin = admin(&fake).await;
        let got = admin
            .describe_configs(&[
                ConfigResource::topic("t"),
                ConfigResource::broker(2),
                ConfigResource::topic("missing"),
                ConfigResource::topic("t"),
            ])
            .await;
        let t = got[0].as_ref().unwrap();
        assert_eq!(t.resource, ConfigResource::topic("t"));
        let policy = t.get("cleanup.policy").unwrap();
        assert_eq!(policy.value.as_deref(), Some("compact"));
        assert!(!policy.is_default && !policy.read_only && !policy.is_sensitive);
        let expected = if v == 0 {
            ConfigSource::Unknown
        } else {
            ConfigSource::DynamicTopic
        };
        assert_eq!(policy.source, expected);
        let retention = t.get("retention.ms").unwrap();
        assert!(retention.is_default);
        assert_eq!(retention.source, ConfigSource::Default);
        let b = got[1].as_ref().unwrap();
        let password = b.get("ssl.key.password").unwrap();
        assert!(password.is_sensitive && password.value.is_none());
        let hours = b.get("log.retention.hours").unwrap();
        assert!(hours.read_only);
        if v >= 1 {
            assert_eq!(hours.source, ConfigSource::StaticBroker);
        }
        assert_kafka(&got[2], ErrorCode::UNKNOWN_TOPIC_OR_PARTITION, "missing");
        assert!(
            got[2]
                .as_ref()
                .unwrap_err()
                .to_string()
                .contains("does not exist")
        );
        assert!(matches!(got[3], Err(NetError::Config(_))));

        // The broker resource went to its broker; the topics in one request to any broker.
        let sent = fake.requests(ApiKey::DescribeConfigs);
        assert_eq!(sent.len(), 2, "v{v}");
        for l in &sent {
            assert_eq!(l.version(), v);
            let d = body!(l.request, DescribeConfigs);
            assert!(!d.include_synonyms && !d.include_documentation);
            let asked: Vec<(i8, &str)> = d
                .resources
                .iter()
                .map(|r| (r.resource_type, r.resource_name.as_str()))
                .collect();
            if asked[0].0 == 4 {
                assert_eq!(l.node, 2);
                assert_eq!(asked, [(4, "2")]);
            } else {
                assert_eq!(asked, [(2, "t"), (2, "missing")]);
            }
            assert!(d.resources.iter().all(|r| r.configuration_keys.is_none()));
        }
        fake.assert_clean();
    }
}

#[tokio::test]
async fn incremental_alter_configs_at_every_version() {
    for v in versions(ApiKey::IncrementalAlterConfigs) {
        let fake = FakeCluster::builder(1)
            .max_version(ApiKey::IncrementalAlterConfigs, v)
            .handler(|_, req| {
                let RequestBody::IncrementalAlterConfigs(a) = &req.body else {
                    return None;
                };
                let responses = a
                    .resources
                    .iter()
                    .map(|r| {
                        let bad = r.resource_name == "bad";
                        incremental_alter_configs_response::AlterConfigsResourceResponse {
                            error_code: if bad { ErrorCode::INVALID_CONFIG.0 } else { 0 },
                            error_message: bad.then(|| kstr("Unknown topic config name: foo")),
                            resource_type: r.resource_type,
                            resource_name: r.resource_name.clone(),
                            ..Default::default()
                        }
                    })
                    .collect();
                Some(Reply::Send(ResponseBody::IncrementalAlterConfigs(
                    IncrementalAlterConfigsResponse {
                        responses,
                        ..Default::default()
                    },
                )))
            })
            .start()
            .await;
        let admin = admin(&fake).await;
        let changes = [
            (
                ConfigResource::topic("t"),
                vec![
                    AlterConfigOp::set("retention.ms", "1000"),
                    AlterConfigOp::delete("cleanup.policy"),
                    AlterConfigOp::append("leader.replication.throttled.replicas", "2:2"),
                    AlterConfigOp::subtract("follower.replication.throttled.replicas", "1:1"),
                ],
            ),
            (
                ConfigResource::topic("bad"),
                vec![AlterConfigOp::set("foo", "bar")],
            ),
        ];
        let got = admin.incremental_alter_configs(&changes, true).await;
        assert_eq!(got[0].0, ConfigResource::topic("t"));
        assert!(got[0].1.is_ok());
        assert_kafka(&got[1].1, ErrorCode::INVALID_CONFIG, "bad");
        assert!(got[1].1.as_ref().unwrap_err().to_string().contains("foo"));

        let sent = fake.requests(ApiKey::IncrementalAlterConfigs);
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0].version(), v);
        let a = body!(sent[0].request, IncrementalAlterConfigs);
        assert!(a.validate_only);
        let ops: Vec<(&str, i8, Option<&str>)> = a.resources[0]
            .configs
            .iter()
            .map(|c| (c.name.as_str(), c.config_operation, c.value.as_deref()))
            .collect();
        assert_eq!(
            ops,
            [
                ("retention.ms", 0, Some("1000")),
                ("cleanup.policy", 1, None),
                ("leader.replication.throttled.replicas", 2, Some("2:2")),
                ("follower.replication.throttled.replicas", 3, Some("1:1")),
            ]
        );
        assert!(fake.requests(ApiKey::AlterConfigs).is_empty());
        fake.assert_clean();
    }
}

#[tokio::test]
async fn alter_configs_fallback_merges_into_the_current_settings() {
    for describe_v in [0, ApiKey::DescribeConfigs.versions().max] {
        for v in versions(ApiKey::AlterConfigs) {
            let fake = FakeCluster::builder(3)
                .without(ApiKey::IncrementalAlterConfigs)
                .max_version(ApiKey::AlterConfigs, v)
                .max_version(ApiKey::DescribeConfigs, describe_v)
                .handler(|_, req| {
                    if let RequestBody::AlterConfigs(a) = &req.body {
                        let responses = a
                            .resources
                            .iter()
                            .map(|r| alter_configs_response::AlterConfigsResourceResponse {
                                resource_type: r.resource_type,
                                resource_name: r.resource_name.clone(),
                                ..Default::default()
                            })
                            .collect();
                        return Some(Reply::Send(ResponseBody::AlterConfigs(
                            AlterConfigsResponse {
                                responses,
                                ..Default::default()
                            },
                        )));
                    }
                    describe_configs_reply(req)
                })
                .start()
                .await;
            let admin = admin(&fake).await;
            let changes = [
                (
                    ConfigResource::topic("t"),
                    vec![
                        AlterConfigOp::set("retention.ms", "1000"),
                        AlterConfigOp::delete("min.insync.replicas"),
                        AlterConfigOp::append("leader.replication.throttled.replicas", "2:2"),
                    ],
                ),
                // Its hidden password would be lost: refused (when the source is known).
                (
                    ConfigResource::broker(1),
                    vec![AlterConfigOp::set("log.cleaner.threads", "2")],
                ),
                // Replacing the hidden password is fine.
                (
                    ConfigResource::broker(3),
                    vec![AlterConfigOp::set("ssl.key.password", "secret")],
                ),
            ];
            let got = admin.incremental_alter_configs(&changes, false).await;
            assert!(got[0].1.is_ok(), "{:?}", got[0].1);
            if describe_v >= 1 {
                let e = got[1].1.as_ref().unwrap_err();
                assert!(matches!(e, NetError::Config(_)), "{e}");
                assert!(e.to_string().contains("ssl.key.password"), "{e}");
            } else {
                assert!(got[1].1.is_ok());
            }
            assert!(got[2].1.is_ok());

            let sent = fake.requests(ApiKey::AlterConfigs);
            let mut by_resource = std::collections::BTreeMap::new();
            for l in &sent {
                assert_eq!(l.version(), v);
                let a = body!(l.request, AlterConfigs);
                assert!(!a.validate_only);
                for r in &a.resources {
                    let configs: Vec<(String, String)> = r
                        .configs
                        .iter()
                        .map(|c| (c.name.to_string(), c.value.as_deref().unwrap().to_owned()))
                        .collect();
                    by_resource.insert(
                        (r.resource_type, r.resource_name.to_string()),
                        (l.node, configs),
                    );
                }
            }
            let (_, t) = &by_resource[&(2, "t".to_owned())];
            let s = |a: &str, b: &str| (a.to_owned(), b.to_owned());
            assert_eq!(
                *t,
                [
                    s("cleanup.policy", "compact"),
                    s("leader.replication.throttled.replicas", "1:1,2:2"),
                    s("retention.ms", "1000"),
                ],
                "describe v{describe_v} alter v{v}"
            );
            let (node, b3) = &by_resource[&(4, "3".to_owned())];
            assert_eq!(*node, 3, "a broker's configs go to that broker");
            assert_eq!(*b3, [s("ssl.key.password", "secret")]);
            assert_eq!(
                by_resource.contains_key(&(4, "1".to_owned())),
                describe_v == 0
            );
            fake.assert_clean();
        }
    }
}

fn listed(id: &str, protocol_type: &str, state: &str, v: i16) -> list_groups_response::ListedGroup {
    list_groups_response::ListedGroup {
        group_id: kstr(id),
        protocol_type: kstr(protocol_type),
        group_state: if v >= 4 { kstr(state) } else { KStr::default() },
        ..Default::default()
    }
}

#[tokio::test]
async fn list_groups_asks_every_broker_at_every_version() {
    for v in versions(ApiKey::ListGroups) {
        let fake = FakeCluster::builder(3)
            .max_version(ApiKey::ListGroups, v)
            .handler(|ctx, req| {
                let RequestBody::ListGroups(_) = &req.body else {
                    return None;
                };
                let v = req.version();
                let groups = match ctx.node {
                    1 => vec![listed("g2", "", "Empty", v)],
                    2 => vec![listed("g1", "consumer", "Stable", v)],
                    _ => vec![],
                };
                Some(Reply::Send(ResponseBody::ListGroups(ListGroupsResponse {
                    groups,
                    ..Default::default()
                })))
            })
            .start()
            .await;
        let got = admin(&fake).await.list_groups().await.unwrap();
        let expected = vec![
            GroupListing {
                group_id: "g1".into(),
                protocol_type: "consumer".into(),
                state: (v >= 4).then(|| "Stable".into()),
                coordinator: 2,
            },
            GroupListing {
                group_id: "g2".into(),
                protocol_type: String::new(),
                state: (v >= 4).then(|| "Empty".into()),
                coordinator: 1,
            },
        ];
        assert_eq!(got, expected);
        let mut nodes: Vec<i32> = fake
            .requests(ApiKey::ListGroups)
            .iter()
            .map(|l| l.node)
            .collect();
        nodes.sort_unstable();
        assert_eq!(nodes, [1, 2, 3]);
        assert!(
            fake.requests(ApiKey::ListGroups)
                .iter()
                .all(|l| l.version() == v)
        );
        fake.assert_clean();
    }
}

#[tokio::test]
async fn list_groups_retries_a_loading_coordinator_and_fails_on_a_refusal() {
    let fake = FakeCluster::builder(2)
        .handler(|ctx, req| {
            let RequestBody::ListGroups(_) = &req.body else {
                return None;
            };
            let loading = ctx.node == 2 && ctx.seen(ApiKey::ListGroups) == 0;
            Some(Reply::Send(ResponseBody::ListGroups(ListGroupsResponse {
                error_code: if loading {
                    ErrorCode::COORDINATOR_LOAD_IN_PROGRESS.0
                } else {
                    0
                },
                groups: vec![listed(&format!("g{}", ctx.node), "consumer", "Stable", 5)],
                ..Default::default()
            })))
        })
        .start()
        .await;
    let got = admin(&fake).await.list_groups().await.unwrap();
    let ids: Vec<&str> = got.iter().map(|g| g.group_id.as_str()).collect();
    assert_eq!(ids, ["g1", "g2"]);
    let on2 = fake
        .requests(ApiKey::ListGroups)
        .iter()
        .filter(|l| l.node == 2)
        .count();
    assert_eq!(on2, 2);

    let fake = FakeCluster::builder(2)
        .handler(|ctx, req| {
            matches!(req.body, RequestBody::ListGroups(_)).then(|| {
                let code = if ctx.node == 2 {
                    ErrorCode::CLUSTER_AUTHORIZATION_FAILED.0
                } else {
                    0
                };
                Reply::Send(ResponseBody::ListGroups(ListGroupsResponse {
                    error_code: code,
                    ..Default::default()
                }))
            })
        })
        .start()
        .await;
    let err = admin(&fake).await.list_groups().await;
    assert_kafka(&err, ErrorCode::CLUSTER_AUTHORIZATION_FAILED, "broker 2");
}

#[tokio::test]
async fn describe_groups_at_every_version_via_their_coordinators() {
    for v in versions(ApiKey::DescribeGroups) {
        let fake = FakeCluster::builder(2)
            .max_version(ApiKey::DescribeGroups, v)
            .handler(|_, req| {
                let RequestBody::DescribeGroups(d) = &req.body else {
                    return None;
                };
                let v = req.version();
                let groups = d
                    .groups
                    .iter()
                    .map(|g| {
                        if g == "bad" {
                            return describe_groups_response::DescribedGroup {
                                error_code: ErrorCode::GROUP_AUTHORIZATION_FAILED.0,
                                group_id: g.clone(),
                                ..Default::default()
                            };
                        }
                        describe_groups_response::DescribedGroup {
                            group_id: g.clone(),
                            group_state: "Stable".into(),
                            protocol_type: "consumer".into(),
                            protocol_data: "range".into(),
                            members: vec![describe_groups_response::DescribedGroupMember {
                                member_id: kstr(&format!("{g}-m1")),
                                group_instance_id: (v >= 4).then(|| "i1".into()),
                                client_id: "c1".into(),
                                client_host: "/127.0.0.1".into(),
                                member_metadata: Bytes::from_static(b"meta"),
                                member_assignment: Bytes::from_static(b"assign"),
                                ..Default::default()
                            }],
                            ..Default::default()
                        }
                    })
                    .collect();
                Some(Reply::Send(ResponseBody::DescribeGroups(
                    DescribeGroupsResponse {
                        groups,
                        ..Default::default()
                    },
                )))
            })
            .start()
            .await;
        {
            let mut s = fake.state();
            s.coordinators.insert("g1".into(), 1);
            s.coordinators.insert("g2".into(), 2);
            s.coordinators.insert("bad".into(), 2);
        }
        let admin = admin(&fake).await;
        let got = admin.describe_groups(&["g1", "g2", "bad", "g1"]).await;
        let g1 = got[0].as_ref().unwrap();
        assert_eq!(
            (g1.group_id.as_str(), g1.state.as_str(), g1.coordinator),
            ("g1", "Stable", 1)
        );
        assert_eq!(
            (g1.protocol_type.as_str(), g1.protocol.as_str()),
            ("consumer", "range")
        );
        let m = &g1.members[0];
        assert_eq!(
            (m.member_id.as_str(), m.client_id.as_str()),
            ("g1-m1", "c1")
        );
        assert_eq!(m.client_host, "/127.0.0.1");
        assert_eq!(
            (&m.metadata[..], &m.assignment[..]),
            (&b"meta"[..], &b"assign"[..])
        );
        assert_eq!(m.group_instance_id.as_deref(), (v >= 4).then_some("i1"));
        assert_eq!(got[1].as_ref().unwrap().coordinator, 2);
        assert_kafka(&got[2], ErrorCode::GROUP_AUTHORIZATION_FAILED, "bad");
        assert!(matches!(got[3], Err(NetError::Config(_))));

        let sent = fake.requests(ApiKey::DescribeGroups);
        assert_eq!(sent.len(), 2, "v{v}");
        for l in &sent {
            assert_eq!(l.version(), v);
            let d = body!(l.request, DescribeGroups);
            assert!(!d.include_authorized_operations);
            let expected: &[&str] = if l.node == 1 { &["g1"] } else { &["bad", "g2"] };
            assert_eq!(
                d.groups,
                expected.iter().map(|g| kstr(g)).collect::<Vec<_>>()
            );
        }
        fake.assert_clean();
    }
}

#[tokio::test]
async fn delete_groups_at_every_version() {
    for v in versions(ApiKey::DeleteGroups) {
        let fake = FakeCluster::builder(2)
            .max_version(ApiKey::DeleteGroups, v)
            .handler(|_, req| {
                let RequestBody::DeleteGroups(d) = &req.body else {
                    return None;
                };
                let results = d
                    .groups_names
                    .iter()
                    .map(|g| delete_groups_response::DeletableGroupResult {
                        group_id: g.clone(),
                        error_code: if g == "busy" {
                            ErrorCode::NON_EMPTY_GROUP.0
                        } else {
                            0
                        },
                        ..Default::default()
                    })
                    .collect();
                Some(Reply::Send(ResponseBody::DeleteGroups(
                    DeleteGroupsResponse {
                        results,
                        ..Default::default()
                    },
                )))
            })
            .start()
            .await;
        fake.state().coordinators.insert("busy".into(), 2);
        let admin = admin(&fake).await;
        let got = admin.delete_groups(&["g1", "busy"]).await;
        assert_eq!(got[0].0, "g1");
        assert!(got[0].1.is_ok());
        assert_eq!(got[1].0, "busy");
        assert_kafka(&got[1].1, ErrorCode::NON_EMPTY_GROUP, "busy");
        let sent = fake.requests(ApiKey::DeleteGroups);
        assert_eq!(sent.len(), 2, "one per coordinator");
        for l in &sent {
            assert_eq!(l.version(), v);
            let d = body!(l.request, DeleteGroups);
            let expected = if l.node == 1 { "g1" } else { "busy" };
            assert_eq!(d.groups_names, [kstr(expected)]);
        }
        fake.assert_clean();
    }
}
