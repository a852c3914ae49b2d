//! Clusters of real `kafka-broker` processes on 127.0.0.1 (KRaft mode: `process.roles`,
//! `controller.quorum.voters`, ...), with third-party clients:
//!
//! - 3 combined nodes: every broker lists the three brokers; kcat `-L` and confluent-kafka's
//!   AdminClient see them and a controller; topics created with replication factor 3 through
//!   confluent-kafka, kafka-python and our `kafka-net` admin have 3 replicas on distinct
//!   brokers, leaders spread over them, and every broker answers the same metadata; a
//!   replication factor above the broker count is INVALID_REPLICATION_FACTOR; DescribeQuorum
//!   v0-2 through every broker names the same leader (v2 with the voters' endpoints).
//! - SIGKILL of each node in turn, the active controller first: another controller leads and
//!   a topic creation and a config change succeed within 10 s; a topic created just before
//!   the kill is still there; the killed broker is fenced and its partitions get new leaders;
//!   it restarts on its data directory and is listed again.
//! - 3 controllers + 2 brokers: the brokers follow the metadata log from the controllers; kcat
//!   lists the two brokers; killing the active controller leaves metadata operations working.
//!
//! A missing peer (kcat, a python module) skips that check with a notice, unless
//! `KAFKA_RS_REQUIRE_PEERS=1` (as CI runs it).
#![allow(clippy::unwrap_used)]

#[path = "cluster/harness.rs"]
#[allow(dead_code)]
mod harness;
#[path = "common/peers.rs"]
#[allow(dead_code)]
mod peers;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use harness::{
    Cluster, PartitionRow, Role, active_controller, admin, agreed_partitions, broker_ids,
    describe_quorum_at, metadata, partitions, segment_files, until_brokers, until_same_bytes,
};
use kafka_net::admin::{AlterConfigOp, ConfigResource, NewTopic};
use kafka_net::cluster::ClusterConfig;
use kafka_protocol::error_code::ErrorCode;

const ADMIN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cluster/admin.py");

/// Fast failure detection for the tests: heartbeats every 500 ms, fenced after 3 s.
const FAST: &[&str] = &[
    "broker.heartbeat.interval.ms=500",
    "broker.session.timeout.ms=3000",
];

/// Replicas: `rf` distinct brokers of `brokers` each; leader the first replica and in the ISR;
/// every broker leads some partition when there are enough.
fn check_placement(parts: &[PartitionRow], rf: usize, brokers: &[i32]) {
    let mut leads: BTreeMap<i32, usize> = BTreeMap::new();
    for (index, leader, replicas, isr) in parts {
        let distinct: BTreeSet<i32> = replicas.iter().copied().collect();
        assert_eq!(replicas.len(), rf, "partition {index}: {replicas:?}");
        assert_eq!(distinct.len(), rf, "partition {index}: {replicas:?}");
        assert!(distinct.iter().all(|r| brokers.contains(r)), "{replicas:?}");
        assert_eq!(Some(leader), replicas.first(), "partition {index}");
        assert!(isr.contains(leader), "partition {index}: isr {isr:?}");
        *leads.entry(*leader).or_default() += 1;
    }
    if parts.len() >= brokers.len() {
        assert_eq!(
            leads.len(),
            brokers.len(),
            "leaders are spread over every broker: {leads:?}"
        );
    }
}

fn kcat_brokers(bootstrap: &str) -> Option<(Vec<i32>, bool)> {
    let out = peers::run("kcat", &["-b", bootstrap, "-L", "-m", "10"])?;
    let mut ids: Vec<i32> = out
        .lines()
        .filter_map(|l| l.trim().strip_prefix("broker "))
        .filter_map(|rest| rest.split_whitespace().next()?.parse().ok())
        .collect();
    ids.sort_unstable();
    Some((ids, out.contains("(controller)")))
}

fn python(args: &[&str]) -> Option<serde_json::Value> {
    let mut all = vec![ADMIN];
    all.extend_from_slice(args);
    let out = peers::run("python3", &all)?;
    let line = out.lines().rev().find(|l| l.starts_with('{'))?;
    Some(serde_json::from_str(line).unwrap())
}

/// The partitions a python admin script printed, in the harness's form.
fn python_partitions(v: &serde_json::Value) -> Vec<PartitionRow> {
    let ints = |v: &serde_json::Value| -> Vec<i32> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_i64().unwrap() as i32)
            .collect()
    };
    let mut out: Vec<_> = v["partitions"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, p)| {
            (
                k.parse().unwrap(),
                p["leader"].as_i64().unwrap() as i32,
                ints(&p["replicas"]),
                ints(&p["isr"]),
            )
        })
        .collect();
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_combined_nodes_are_one_cluster_to_every_client() {
    let mut c = Cluster::new(&[Role::Combined; 3], FAST);
    c.start_all();
    until_brokers(&mut c, &[1, 2, 3]).await;
    let bootstrap = c.bootstrap();

    features_through_every_broker(&c).await;

    // DescribeQuorum in every version, through every broker (forwarded to the leader).
    let mut leaders = BTreeSet::new();
    for id in [1, 2, 3] {
        for version in 0..=2 {
            let addr = c.addr(id);
            let q = c
                .eventually(
                    &format!("DescribeQuorum v{version} through node {id}"),
                    Duration::from_secs(10),
                    || {
                        let addr = addr.clone();
                        async move { describe_quorum_at(&addr, version).await }
                    },
                )
                .await;
            assert_eq!(q.error_code, 0, "v{version} via {id}: {q:?}");
            let p = &q.topics[0].partitions[0];
            assert!((1..=3).contains(&p.leader_id), "v{version} via {id}: {q:?}");
            assert_eq!(p.current_voters.len(), 3, "v{version} via {id}: {q:?}");
            assert_eq!(q.nodes.len(), if version >= 2 { 3 } else { 0 }, "{q:?}");
            leaders.insert(p.leader_id);
        }
    }
    assert_eq!(leaders.len(), 1, "one leader: {leaders:?}");

    if let Some((ids, controller)) = kcat_brokers(&bootstrap) {
        assert_eq!(ids, [1, 2, 3]);
        assert!(controller, "kcat -L names a controller");
    }
    if let Some(v) = python(&["confluent", "describe", "--bootstrap", &bootstrap]) {
        assert_eq!(v["brokers"], serde_json::json!([1, 2, 3]), "{v}");
        assert_eq!(v["metadata_brokers"], serde_json::json!([1, 2, 3]), "{v}");
        let controller = v["controller"].as_i64().unwrap() as i32;
        assert!((1..=3).contains(&controller), "{v}");
        assert_eq!(v["cluster_id"].as_str().map(str::len), Some(22), "{v}");
    }

    // Replication factor 3 through three clients; every broker agrees with what each saw.
    let brokers = [1, 2, 3];
    for (client, topic) in [
        ("confluent", "rf3-confluent"),
        ("kafka-python", "rf3-kafka-python"),
    ] {
        let Some(v) = python(&[
            client,
            "create",
            "--bootstrap",
            &bootstrap,
            "--topic",
            topic,
            "--partitions",
            "6",
            "--replication",
            "3",
        ]) else {
            continue;
        };
        let seen = python_partitions(&v);
        check_placement(&seen, 3, &brokers);
        let agreed = agreed_partitions(&mut c, topic, 6).await;
        assert_eq!(
            agreed.iter().map(|p| (p.0, &p.2)).collect::<Vec<_>>(),
            seen.iter().map(|p| (p.0, &p.2)).collect::<Vec<_>>(),
            "{client}'s replicas are what every broker answers"
        );
    }
    let ours = admin(&bootstrap).await;
    let created = ours
        .create_topics(&[NewTopic::new("rf3-ours", 6, 3)], false)
        .await;
    assert!(created[0].is_ok(), "{created:?}");
    let parts = agreed_partitions(&mut c, "rf3-ours", 6).await;
    check_placement(&parts, 3, &brokers);

    // More replicas than brokers.
    let refused = ours
        .create_topics(&[NewTopic::new("rf4", 1, 4)], false)
        .await;
    let e = format!("{:?}", refused[0].as_ref().unwrap_err());
    // A config change through one broker is what every broker describes.
    let alter = ours
        .incremental_alter_configs(
            &[(
                ConfigResource::topic("rf3-ours"),
                vec![AlterConfigOp::set("retention.ms", "7200000")],
            )],
            false,
        )
        .await;
    assert!(alter.iter().all(|r| r.1.is_ok()), "{alter:?}");
    for id in 1..=3 {
        let addr = c.addr(id);
        c.eventually(
            &format!("broker {id} describes the new retention.ms"),
            Duration::from_secs(10),
            || {
                let addr = addr.clone();
                async move {
                    (harness::topic_config(&addr, "rf3-ours", "retention.ms").await?
                        == Some("7200000".to_owned()))
                    .then_some(())
                }
            },
        )
        .await;
    }
    // Deleted cluster-wide: gone from every broker's metadata and every node's disk.
    let deleted = ours.delete_topics(&["rf3-ours"]).await;
    assert!(deleted[0].1.is_ok(), "{deleted:?}");
    let dirs: Vec<std::path::PathBuf> = c.nodes.values().map(|n| n.data_dir.clone()).collect();
    let addrs: Vec<String> = (1..=3).map(|id| c.addr(id)).collect();
    c.eventually(
        "the deleted topic is gone everywhere",
        Duration::from_secs(10),
        || {
            let dirs = dirs.clone();
            let addrs = addrs.clone();
            async move {
                for a in &addrs {
                    let m = metadata(a, None).await?;
                    if m.topics
                        .iter()
                        .any(|t| t.name.as_deref() == Some("rf3-ours"))
                    {
                        return None;
                    }
                }
                let on_disk = dirs.iter().any(|d| {
                    std::fs::read_dir(d).is_ok_and(|entries| {
                        entries
                            .flatten()
                            .any(|e| e.file_name().to_string_lossy().starts_with("rf3-ours-"))
                    })
                });
                (!on_disk).then_some(())
            }
        },
    )
    .await;
    assert!(
        e.contains("INVALID_REPLICATION_FACTOR") || e.contains("InvalidReplicationFactor"),
        "{e}"
    );
    c.assert_running();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killing_each_node_in_turn_keeps_the_cluster_working() {
    let mut c = Cluster::new(&[Role::Combined; 3], FAST);
    c.start_all();
    until_brokers(&mut c, &[1, 2, 3]).await;
    let first = active_controller(&mut c, &[1, 2, 3]).await;
    // The active controller first, then the others.
    let mut order = vec![first];
    order.extend((1..=3).filter(|&i| i != first));
    for (round, victim) in order.into_iter().enumerate() {
        let survivors: Vec<i32> = (1..=3).filter(|&i| i != victim).collect();
        let before = format!("before-kill-{round}");
        {
            let a = admin(&c.bootstrap()).await;
            let r = a
                .create_topics(&[NewTopic::new(&before, 3, 3)], false)
                .await;
            assert!(r[0].is_ok(), "round {round}: {r:?}\n{}", c.logs());
        }
        agreed_partitions(&mut c, &before, 3).await;
        // Every partition's ISR just before the kill.
        let isr_before: BTreeMap<(String, i32), Vec<i32>> = metadata(&c.addr(survivors[0]), None)
            .await
            .unwrap()
            .topics
            .iter()
            .flat_map(|t| {
                let name = t.name.as_deref().unwrap_or("").to_owned();
                t.partitions
                    .iter()
                    .map(move |p| ((name.clone(), p.partition_index), p.isr_nodes.clone()))
            })
            .collect();
        c.kill(victim);
        let started = std::time::Instant::now();
        let bootstrap: String = survivors
            .iter()
            .map(|id| c.addr(*id))
            .collect::<Vec<_>>()
            .join(",");
        // A metadata change through a surviving broker within 10 s.
        let after = format!("after-kill-{round}");
        let a = admin(&bootstrap).await;
        let r = a.create_topics(&[NewTopic::new(&after, 2, 2)], false).await;
        assert!(
            r[0].is_ok(),
            "round {round}: creation after the kill: {r:?}\n{}",
            c.logs()
        );
        let alter = a
            .incremental_alter_configs(
                &[(
                    ConfigResource::topic(&before),
                    vec![AlterConfigOp::set("retention.ms", "3600000")],
                )],
                false,
            )
            .await;
        assert!(
            alter.iter().all(|r| r.1.is_ok()),
            "round {round}: config change after the kill: {alter:?}\n{}",
            c.logs()
        );
        let took = started.elapsed();
        assert!(
            took < Duration::from_secs(10),
            "round {round}: metadata changes took {took:?}"
        );
        // The killed broker is fenced: its partitions get leaders among the survivors in
        // their ISR, and the topic created before the kill is still there. A partition whose
        // ISR was the victim alone has no leader (unclean election is off; the ISR grows back
        // only by replication).
        let addr = c.addr(survivors[0]);
        let before_t = before.clone();
        let survivors_c = survivors.clone();
        let isr_before_c = isr_before.clone();
        c.eventually(
            &format!("round {round}: partitions led by node {victim} move"),
            Duration::from_secs(15),
            || {
                let addr = addr.clone();
                let before_t = before_t.clone();
                let survivors_c = survivors_c.clone();
                let isr_before = isr_before_c.clone();
                async move {
                    let m = metadata(&addr, None).await?;
                    if broker_ids(&m) != survivors_c {
                        return None;
                    }
                    partitions(&m, &before_t)?;
                    m.topics
                        .iter()
                        .flat_map(|t| {
                            let name = t.name.as_deref().unwrap_or("").to_owned();
                            t.partitions.iter().map(move |p| (name.clone(), p))
                        })
                        .all(|(name, p)| {
                            match isr_before.get(&(name, p.partition_index)) {
                                Some(isr) if isr.iter().any(|r| survivors_c.contains(r)) => {
                                    survivors_c.contains(&p.leader_id)
                                        && isr.contains(&p.leader_id)
                                        && !p.isr_nodes.contains(&victim)
                                }
                                Some(_) => p.leader_id == -1,
                                // Created after the kill.
                                None => survivors_c.contains(&p.leader_id),
                            }
                        })
                        .then_some(())
                }
            },
        )
        .await;
        // It restarts on its data directory and rejoins.
        c.start(victim);
        until_brokers(&mut c, &[1, 2, 3]).await;
    }
    c.assert_running();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_controllers_and_two_brokers() {
    let mut c = Cluster::new(
        &[
            Role::Controller,
            Role::Controller,
            Role::Controller,
            Role::Broker,
            Role::Broker,
        ],
        FAST,
    );
    c.node(4).settings.push("broker.rack=rack-a".into());
    c.node(5).settings.push("broker.rack=rack-b".into());
    // A second broker listener on each broker: its clients are given its endpoints.
    let mut internal = BTreeMap::new();
    for id in [4, 5] {
        let (plain, other) = (c.nodes[&id].port.unwrap(), harness::free_port());
        internal.insert(id, other);
        let both = format!("PLAINTEXT://127.0.0.1:{plain},INTERNAL://127.0.0.1:{other}");
        let n = c.node(id);
        n.settings.push(format!("listeners={both}"));
        n.settings.push(format!("advertised.listeners={both}"));
        n.settings.push(
            "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,INTERNAL:PLAINTEXT"
                .into(),
        );
    }
    c.start_all();
    until_brokers(&mut c, &[4, 5]).await;
    let bootstrap = c.bootstrap();
    if let Some((ids, _)) = kcat_brokers(&bootstrap) {
        assert_eq!(ids, [4, 5]);
    }
    // The racks the brokers registered with are what Metadata reports.
    let m = metadata(&c.addr(5), Some(&[])).await.unwrap();
    let racks: Vec<(i32, Option<String>)> = m
        .brokers
        .iter()
        .map(|b| (b.node_id, b.rack.as_deref().map(str::to_owned)))
        .collect();
    assert_eq!(
        racks,
        [
            (4, Some("rack-a".to_owned())),
            (5, Some("rack-b".to_owned()))
        ]
    );
    let ports = |m: &kafka_protocol::messages::MetadataResponse| -> Vec<(i32, u16)> {
        m.brokers
            .iter()
            .map(|b| (b.node_id, b.port as u16))
            .collect()
    };
    let plain: Vec<(i32, u16)> = [4, 5]
        .iter()
        .map(|&id| (id, c.nodes[&id].port.unwrap()))
        .collect();
    assert_eq!(ports(&m), plain);
    let via_internal = metadata(&format!("127.0.0.1:{}", internal[&4]), Some(&[]))
        .await
        .unwrap();
    let expected: Vec<(i32, u16)> = internal.iter().map(|(&id, &p)| (id, p)).collect();
    assert_eq!(
        ports(&via_internal),
        expected,
        "the INTERNAL listener's endpoints"
    );
    // DescribeQuorum through a broker: the controllers vote, the brokers observe.
    let addr4 = c.addr(4);
    let (leader, voters, observers) = c
        .eventually("DescribeQuorum answers", Duration::from_secs(10), || {
            let a = addr4.clone();
            async move { harness::describe_quorum(&a).await }
        })
        .await;
    assert!((1..=3).contains(&leader), "{leader}");
    assert_eq!(voters, [1, 2, 3]);
    assert_eq!(observers, [4, 5]);
    let a = admin(&bootstrap).await;
    let r = a.create_topics(&[NewTopic::new("rf2", 4, 2)], false).await;
    assert!(r[0].is_ok(), "{r:?}\n{}", c.logs());
    let parts = agreed_partitions(&mut c, "rf2", 4).await;
    check_placement(&parts, 2, &[4, 5]);
    let refused = a.create_topics(&[NewTopic::new("rf3", 1, 3)], false).await;
    assert!(refused[0].is_err(), "{refused:?}");

    // Each controller killed in turn, the leader first: the brokers find the next.
    let mut order = vec![leader];
    order.extend((1..=3).filter(|&i| i != leader));
    for victim in order {
        c.kill(victim);
        let started = std::time::Instant::now();
        let topic = format!("after-controller-{victim}");
        let r = a.create_topics(&[NewTopic::new(&topic, 1, 2)], false).await;
        assert!(
            r[0].is_ok(),
            "after killing controller {victim}: {r:?}\n{}",
            c.logs()
        );
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{:?}",
            started.elapsed()
        );
        agreed_partitions(&mut c, &topic, 1).await;
        c.start(victim);
        // Let the restarted voter catch up before the next one goes.
        tokio::time::sleep(Duration::from_secs(2)).await;
    }
    c.assert_running();
}

fn kcat_group_read(bootstrap: &str, group: &str, topic: &str) -> Option<Vec<String>> {
    let out = peers::run(
        "kcat",
        &[
            "-b",
            bootstrap,
            "-G",
            group,
            topic,
            "-X",
            "auto.offset.reset=earliest",
            "-e",
            "-q",
        ],
    )?;
    Some(out.lines().map(str::to_owned).collect())
}

fn kcat_produce(bootstrap: &str, topic: &str, lines: &[String]) -> Option<()> {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("lines");
    std::fs::write(&file, lines.join("\n") + "\n").unwrap();
    peers::run(
        "kcat",
        &[
            "-b",
            bootstrap,
            "-P",
            "-t",
            topic,
            "-X",
            "acks=1",
            "-l",
            file.to_str().unwrap(),
        ],
    )
    .map(|_| ())
}

/// Consumer groups in a cluster: FindCoordinator answers the leader of the group's
/// `__consumer_offsets` partition (the topic is created through the controller by the first
/// FindCoordinator, replicated three times), and that broker coordinates the group: kcat's
/// group consumers on different bootstrap brokers share its committed offsets (acknowledged
/// once the offsets partition's followers have them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumer_groups_are_coordinated_by_the_offsets_partition_leader() {
    let mut c = Cluster::new(
        &[Role::Combined; 3],
        &[
            "broker.heartbeat.interval.ms=500",
            "broker.session.timeout.ms=3000",
            "offsets.topic.replication.factor=3",
            "offsets.topic.num.partitions=6",
        ],
    );
    c.start_all();
    until_brokers(&mut c, &[1, 2, 3]).await;
    let a = admin(&c.bootstrap()).await;
    let r = a
        .create_topics(&[NewTopic::new("grouped", 1, 1)], false)
        .await;
    assert!(r[0].is_ok(), "{r:?}");
    agreed_partitions(&mut c, "grouped", 1).await;
    let first: Vec<String> = (0..20).map(|i| format!("record-{i}")).collect();
    if kcat_produce(&c.addr(1), "grouped", &first).is_none() {
        return;
    }
    let read = kcat_group_read(&c.addr(2), "g-cluster", "grouped").unwrap();
    assert_eq!(read, first, "{}", c.logs());
    kcat_produce(&c.addr(1), "grouped", &["record-20".to_owned()]).unwrap();
    // Another bootstrap broker, the same coordinator: only the record after the commit.
    let read = kcat_group_read(&c.addr(3), "g-cluster", "grouped").unwrap();
    assert_eq!(read, ["record-20"], "{}", c.logs());

    // Every broker names the same coordinator: the leader of the group's partition.
    let p = kafka_broker::group::partition_for("g-cluster", 6);
    let m = metadata(&c.addr(1), Some(&["__consumer_offsets"]))
        .await
        .unwrap();
    let offsets = partitions(&m, "__consumer_offsets").unwrap();
    assert_eq!(offsets.len(), 6);
    assert!(offsets.iter().all(|p| p.2.len() == 3), "{offsets:?}");
    let leader = offsets[p as usize].1;
    for id in 1..=3 {
        let cfg = ClusterConfig {
            bootstrap: vec![c.addr(id)],
            ..Default::default()
        };
        let cluster = kafka_net::cluster::Cluster::connect(cfg).await.unwrap();
        let coordinator = cluster
            .coordinator(kafka_net::cluster::CoordinatorType::Group, "g-cluster")
            .await
            .unwrap();
        assert_eq!(coordinator, leader, "via broker {id}");
    }
    // The other brokers serve nothing of the group, and create nothing for it: a JoinGroup,
    // an OffsetCommit or a DescribeGroups sent to them is answered NOT_COORDINATOR (the
    // client looks for the coordinator again), never with a group of their own.
    for id in (1..=3).filter(|id| *id != leader) {
        let codes = group_requests_at(&c.addr(id), "g-cluster").await;
        assert_eq!(codes, [ErrorCode::NOT_COORDINATOR.0; 3], "broker {id}");
    }
    let codes = group_requests_at(&c.addr(leader), "g-cluster").await;
    assert_eq!(
        codes,
        [ErrorCode::MEMBER_ID_REQUIRED.0, 0, 0],
        "the coordinator"
    );
    c.assert_running();
}

/// The error codes a broker answers a JoinGroup (v5: a new member, which the coordinator
/// answers MEMBER_ID_REQUIRED), a simple consumer's OffsetCommit of `grouped`-0 and a
/// DescribeGroups of `group`.
async fn group_requests_at(addr: &str, group: &str) -> [i16; 3] {
    use kafka_protocol::KStr;
    use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
    use kafka_protocol::messages::offset_commit_request::{
        OffsetCommitRequestPartition, OffsetCommitRequestTopic,
    };
    use kafka_protocol::messages::{
        DescribeGroupsRequest, JoinGroupRequest, OffsetCommitRequest, RequestBody, ResponseBody,
    };
    let join = JoinGroupRequest {
        group_id: KStr::from(group.to_owned()),
        session_timeout_ms: 10_000,
        rebalance_timeout_ms: 10_000,
        protocol_type: KStr::from("consumer"),
        protocols: vec![JoinGroupRequestProtocol {
            name: KStr::from("range"),
            ..Default::default()
        }],
        ..Default::default()
    };
    let Some(ResponseBody::JoinGroup(join)) =
        harness::request(addr, RequestBody::JoinGroup(Box::new(join)), 5).await
    else {
        panic!("no JoinGroup answer from {addr}");
    };
    let commit = OffsetCommitRequest {
        group_id: KStr::from(group.to_owned()),
        generation_id_or_member_epoch: -1,
        topics: vec![OffsetCommitRequestTopic {
            name: KStr::from("grouped"),
            partitions: vec![OffsetCommitRequestPartition {
                partition_index: 0,
                committed_offset: 21,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    };
    let Some(ResponseBody::OffsetCommit(commit)) =
        harness::request(addr, RequestBody::OffsetCommit(Box::new(commit)), 8).await
    else {
        panic!("no OffsetCommit answer from {addr}");
    };
    let describe = DescribeGroupsRequest {
        groups: vec![KStr::from(group.to_owned())],
        ..Default::default()
    };
    let Some(ResponseBody::DescribeGroups(describe)) =
        harness::request(addr, RequestBody::DescribeGroups(describe), 5).await
    else {
        panic!("no DescribeGroups answer from {addr}");
    };
    [
        join.error_code,
        commit.topics[0].partitions[0].error_code,
        describe.groups[0].error_code,
    ]
}

/// Replication between the brokers: a topic with replication factor 3 takes acks=all writes
/// (kcat), its followers fetch them from the leader with Kafka's protocol, and every replica's
/// log is the leader's byte for byte. The leader of a partition is SIGKILLed: the controller
/// moves the leadership within the ISR, acks=all writes go on, nothing acknowledged is lost,
/// and the killed broker comes back as a follower with the same bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_hold_the_leaders_bytes_and_survive_a_leader_kill() {
    let mut c = Cluster::new(&[Role::Combined; 3], FAST);
    c.start_all();
    until_brokers(&mut c, &[1, 2, 3]).await;
    let a = admin(&c.bootstrap()).await;
    let r = a
        .create_topics(&[NewTopic::new("replicated", 2, 3)], false)
        .await;
    assert!(r[0].is_ok(), "{r:?}");
    let parts = agreed_partitions(&mut c, "replicated", 2).await;
    let first: Vec<String> = (0..500).map(|i| format!("r-{i}")).collect();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("first");
    std::fs::write(&file, first.join("\n") + "\n").unwrap();
    let bootstrap = c.bootstrap();
    let produce = |bootstrap: &str, file: &std::path::Path| {
        peers::run(
            "kcat",
            &[
                "-b",
                bootstrap,
                "-P",
                "-t",
                "replicated",
                "-X",
                "acks=all",
                "-X",
                "message.timeout.ms=30000",
                "-l",
                file.to_str().unwrap(),
            ],
        )
    };
    if produce(&bootstrap, &file).is_none() {
        return;
    }
    // Every replica's log is the leader's.
    for p in 0..2 {
        until_same_bytes(&mut c, "replicated", p, &[1, 2, 3], Duration::from_secs(15)).await;
    }
    // The leader of partition 0 dies; acks=all writes go on through the others.
    let victim = parts[0].1;
    c.kill(victim);
    let survivors: Vec<String> = (1..=3)
        .filter(|&i| i != victim)
        .map(|i| c.addr(i))
        .collect();
    let second: Vec<String> = (500..800).map(|i| format!("r-{i}")).collect();
    let file2 = dir.path().join("second");
    std::fs::write(&file2, second.join("\n") + "\n").unwrap();
    produce(&survivors.join(","), &file2).unwrap();
    let mut expected: Vec<&str> = first.iter().chain(&second).map(String::as_str).collect();
    expected.sort_unstable();
    // A new leader's high watermark may lag what the old leader acknowledged until the
    // followers fetch from it again (Kafka's rule, and kcat's `-e` stops at the high
    // watermark): read again until every record shows, at most 20 s.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let out = loop {
        let out = peers::run(
            "kcat",
            &[
                "-b",
                &survivors[0],
                "-C",
                "-t",
                "replicated",
                "-o",
                "beginning",
                "-e",
                "-q",
            ],
        )
        .unwrap();
        if out.lines().count() >= expected.len() || std::time::Instant::now() > deadline {
            break out;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let mut read: Vec<&str> = out.lines().collect();
    read.sort_unstable();
    assert_eq!(
        read,
        expected,
        "every acknowledged record, once\n{}",
        c.logs()
    );
    // Back as a follower: the same bytes again.
    c.start(victim);
    until_brokers(&mut c, &[1, 2, 3]).await;
    for p in 0..2 {
        until_same_bytes(&mut c, "replicated", p, &[1, 2, 3], Duration::from_secs(20)).await;
    }
    c.assert_running();
}

/// One record produced to `topic`-0 straight to the broker at `addr` with these acks; the
/// partition's error code, and its base offset.
async fn produce_one(addr: &str, topic: &str, acks: i16, value: &str) -> (i16, i64) {
    harness::produce(addr, topic, 0, acks, &[value], Duration::from_secs(10))
        .await
        .unwrap()
}

/// The ISR of `topic`-0 as the broker at `addr` lists it, sorted.
async fn isr_of(addr: &str, topic: &str) -> Option<Vec<i32>> {
    let m = metadata(addr, Some(&[topic])).await?;
    let mut isr = partitions(&m, topic)?.first()?.3.clone();
    isr.sort_unstable();
    Some(isr)
}

/// One controller and brokers 2, 3 and 4 with a 1.5 s `replica.lag.time.max.ms` and a minute
/// of session timeout: only a leader can find a stopped (SIGSTOP) follower lagging. Started.
async fn lagging_cluster() -> Cluster {
    let mut c = Cluster::new(
        &[Role::Controller, Role::Broker, Role::Broker, Role::Broker],
        &[
            "broker.heartbeat.interval.ms=500",
            "broker.session.timeout.ms=60000",
            "replica.lag.time.max.ms=1500",
            "replica.fetch.wait.max.ms=200",
            "replica.fetch.backoff.ms=100",
        ],
    );
    c.start_all();
    until_brokers(&mut c, &[2, 3, 4]).await;
    c
}

/// Creates a one-partition topic on [`lagging_cluster`]'s brokers and waits until its leader
/// takes an acks=all write of `first` (it has applied its leadership). Returns the leader, the
/// two followers and the leader's address.
async fn lagging_topic(c: &mut Cluster, topic: NewTopic, first: &str) -> (i32, Vec<i32>, String) {
    let name = topic.name.clone();
    let r = admin(&c.bootstrap())
        .await
        .create_topics(&[topic], false)
        .await;
    assert!(r[0].is_ok(), "{r:?}");
    let leader = agreed_partitions(c, &name, 1).await[0].1;
    let followers: Vec<i32> = [2, 3, 4].into_iter().filter(|&b| b != leader).collect();
    let at = c.addr(leader);
    {
        let (at, name, first) = (at.clone(), name.clone(), first.to_owned());
        c.eventually("the leader takes writes", Duration::from_secs(10), || {
            let (at, name, first) = (at.clone(), name.clone(), first.clone());
            async move { (produce_one(&at, &name, -1, &first).await.0 == 0).then_some(()) }
        })
        .await;
    }
    (leader, followers, at)
}

/// The leader's view of its followers (Kafka's ISR rules, `replica.lag.time.max.ms` set to
/// 1.5 s): a stopped follower (SIGSTOP: it still holds its registration, so only its leader
/// can find it lagging; the session timeout is a minute) leaves the ISR and acks=all writes
/// go on with the other two of `min.insync.replicas=2`; with both followers stopped the ISR is
/// the leader alone and acks=all is NOT_ENOUGH_REPLICAS (nothing written; acks=1 still
/// works); resumed, both catch up and join the ISR again, and every replica holds the
/// leader's bytes. One controller and three brokers, so stopping brokers leaves the quorum
/// alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lagging_followers_leave_the_isr_and_come_back() {
    let mut c = lagging_cluster().await;
    let topic = NewTopic::new("isr", 1, 3).config("min.insync.replicas", "2");
    let (leader, followers, at) = lagging_topic(&mut c, topic, "all-first").await;
    let mut written = vec!["all-first".to_owned()];
    for i in 0..20 {
        let v = format!("all-{i}");
        let (code, _) = produce_one(&at, "isr", -1, &v).await;
        assert_eq!(code, 0, "acks=all with the whole ISR\n{}", c.logs());
        written.push(v);
    }

    // One follower stops. The next acks=all write waits: the stopped follower does not fetch
    // it, so the leader finds it lagging after replica.lag.time.max.ms (long before any
    // fencing) and the ISR shrinks to two, which is enough for min.insync.replicas=2. (An
    // idle partition keeps its ISR, as in Kafka: a follower that has everything is not
    // behind.)
    c.signal(followers[0], "STOP");
    let (code, _) = produce_one(&at, "isr", -1, "all-waits").await;
    assert_eq!(code, 0, "acks=all once the ISR shrank\n{}", c.logs());
    written.push("all-waits".into());
    let expected: Vec<i32> = {
        let mut e = vec![leader, followers[1]];
        e.sort_unstable();
        e
    };
    {
        let (at, expected) = (at.clone(), expected.clone());
        c.eventually("the ISR shrinks to two", Duration::from_secs(10), || {
            let at = at.clone();
            let expected = expected.clone();
            async move { (isr_of(&at, "isr").await? == expected).then_some(()) }
        })
        .await;
    }
    for i in 20..30 {
        let v = format!("all-{i}");
        let (code, _) = produce_one(&at, "isr", -1, &v).await;
        assert_eq!(
            code,
            0,
            "acks=all on 2 of 3 with min.insync.replicas=2\n{}",
            c.logs()
        );
        written.push(v);
    }

    // Both stopped: after a write the other follower lags too and the ISR is the leader
    // alone; acks=all is refused before anything is written.
    c.signal(followers[1], "STOP");
    let end_before = produce_one(&at, "isr", 1, "one-a").await;
    assert_eq!(end_before.0, 0, "acks=1 needs only the leader");
    written.push("one-a".into());
    {
        let at = at.clone();
        c.eventually(
            "the ISR shrinks to the leader",
            Duration::from_secs(20),
            || {
                let at = at.clone();
                async move { (isr_of(&at, "isr").await? == vec![leader]).then_some(()) }
            },
        )
        .await;
    }
    let (code, _) = produce_one(&at, "isr", -1, "refused").await;
    assert_eq!(
        code,
        19,
        "NOT_ENOUGH_REPLICAS with an ISR of 1 and min.insync.replicas=2\n{}",
        c.logs()
    );
    let (code, offset) = produce_one(&at, "isr", 1, "one-b").await;
    assert_eq!(
        (code, offset),
        (0, end_before.1 + 1),
        "the refused record took no offset"
    );
    written.push("one-b".into());

    // Resumed: both catch up and are back in the ISR; acks=all works again.
    c.signal(followers[0], "CONT");
    c.signal(followers[1], "CONT");
    {
        let at = at.clone();
        c.eventually(
            "the ISR grows back to three",
            Duration::from_secs(20),
            || {
                let at = at.clone();
                async move { (isr_of(&at, "isr").await? == vec![2, 3, 4]).then_some(()) }
            },
        )
        .await;
    }
    let (code, _) = produce_one(&at, "isr", -1, "all-last").await;
    assert_eq!(code, 0, "acks=all with the ISR back\n{}", c.logs());
    written.push("all-last".into());
    until_same_bytes(&mut c, "isr", 0, &[2, 3, 4], Duration::from_secs(15)).await;
    // Read back by kcat: every written record once, in order, and not the refused one.
    if let Some(out) = peers::run(
        "kcat",
        &[
            "-b",
            &c.bootstrap(),
            "-C",
            "-t",
            "isr",
            "-o",
            "beginning",
            "-e",
            "-q",
        ],
    ) {
        let read: Vec<&str> = out.lines().collect();
        assert_eq!(read, written.iter().map(String::as_str).collect::<Vec<_>>());
    }
    c.assert_running();
}

/// The whole record batches with a base offset at or past `from` in a replica's segment
/// files, in offset order (each: base offset i64, length i32, then `length` bytes).
fn batches_from(dir: &std::path::Path, topic: &str, partition: i32, from: i64) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for bytes in segment_files(dir, topic, partition).into_values() {
        let mut at = 0usize;
        while let Some(head) = bytes.get(at..at + 12) {
            let base = i64::from_be_bytes(head[..8].try_into().unwrap());
            let len = i32::from_be_bytes(head[8..12].try_into().unwrap());
            let Some(end) = usize::try_from(len).ok().map(|l| at + 12 + l) else {
                break;
            };
            let Some(batch) = bytes.get(at..end) else {
                break;
            };
            if base >= from {
                out.push(batch.to_vec());
            }
            at = end;
        }
    }
    out
}

/// A follower that was stopped while its leader trimmed the log past the follower's end
/// (DeleteRecords) starts its log again at the leader's log start, catches up and rejoins the
/// ISR; the follower that kept up trims too. Every replica then holds the same batches from
/// the new log start, and nothing below it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_behind_the_leaders_log_start_starts_again_there() {
    use kafka_protocol::KStr;
    use kafka_protocol::messages::delete_records_request::{
        DeleteRecordsPartition, DeleteRecordsTopic,
    };
    use kafka_protocol::messages::{DeleteRecordsRequest, RequestBody, ResponseBody};
    let mut c = lagging_cluster().await;
    let (_, followers, at) = lagging_topic(&mut c, NewTopic::new("trim", 1, 3), "first").await;
    for i in 0..9 {
        assert_eq!(produce_one(&at, "trim", -1, &format!("a-{i}")).await.0, 0);
    }
    c.signal(followers[0], "STOP");
    // Acknowledged once the stopped follower is out of the ISR.
    for i in 0..10 {
        assert_eq!(produce_one(&at, "trim", -1, &format!("b-{i}")).await.0, 0);
    }
    let conn = kafka_net::connection::Connection::connect(
        &at,
        kafka_net::connection::ConnectionConfig::default(),
    )
    .await
    .unwrap();
    let req = DeleteRecordsRequest {
        topics: vec![DeleteRecordsTopic {
            name: KStr::from_static("trim"),
            partitions: vec![DeleteRecordsPartition {
                partition_index: 0,
                offset: 15,
                ..Default::default()
            }],
            ..Default::default()
        }],
        timeout_ms: 5_000,
        ..Default::default()
    };
    let ResponseBody::DeleteRecords(d) = conn
        .request_at(RequestBody::DeleteRecords(req), 2)
        .await
        .unwrap()
    else {
        panic!("not a DeleteRecords answer")
    };
    let p = &d.topics[0].partitions[0];
    assert_eq!((p.error_code, p.low_watermark), (0, 15), "{d:?}");
    for i in 0..5 {
        assert_eq!(produce_one(&at, "trim", -1, &format!("c-{i}")).await.0, 0);
    }
    c.signal(followers[0], "CONT");
    {
        let at = at.clone();
        c.eventually(
            "the ISR grows back to three",
            Duration::from_secs(20),
            || {
                let at = at.clone();
                async move { (isr_of(&at, "trim").await? == vec![2, 3, 4]).then_some(()) }
            },
        )
        .await;
    }
    let dirs: Vec<std::path::PathBuf> = [2, 3, 4]
        .iter()
        .map(|id| c.nodes[id].data_dir.clone())
        .collect();
    let got = c
        .eventually(
            "every replica holds the same batches from the log start",
            Duration::from_secs(15),
            || {
                let all: Vec<_> = dirs
                    .iter()
                    .map(|d| batches_from(d, "trim", 0, 15))
                    .collect();
                let ok = all[0].len() == 10 && all.iter().all(|b| b == &all[0]);
                async move { ok.then_some(all) }
            },
        )
        .await;
    assert_eq!(got[0].len(), 10, "offsets 15..25");
    // The restarted follower holds nothing below the leader's log start.
    let lagging = &c.nodes[&followers[0]].data_dir;
    assert_eq!(
        batches_from(lagging, "trim", 0, 0),
        batches_from(lagging, "trim", 0, 15),
        "the follower started again at 15"
    );
    c.assert_running();
}

/// The finalized features of a cluster: the first active controller writes the bootstrap
/// level (metadata.version 3.9-IV0) to the metadata log, every broker's ApiVersions v4 shows
/// it (its epoch the broker's image offset), and UpdateFeatures sent to any broker is decided
/// by the controller with the registered brokers' support.
async fn features_through_every_broker(c: &Cluster) {
    use kafka_protocol::KStr;
    use kafka_protocol::messages::update_features_request::FeatureUpdateKey;
    use kafka_protocol::messages::{
        ApiVersionsRequest, RequestBody, ResponseBody, UpdateFeaturesRequest,
    };
    let finalized = |addr: String| async move {
        let Some(ResponseBody::ApiVersions(a)) = harness::request(
            &addr,
            RequestBody::ApiVersions(ApiVersionsRequest::default()),
            4,
        )
        .await
        else {
            panic!("no ApiVersions answer from {addr}");
        };
        let levels: Vec<(String, i16, i16)> = a
            .finalized_features
            .iter()
            .map(|f| (f.name.to_string(), f.min_version_level, f.max_version_level))
            .collect();
        let supported: Vec<String> = a
            .supported_features
            .iter()
            .map(|f| f.name.to_string())
            .collect();
        (levels, a.finalized_features_epoch, supported)
    };
    for id in 1..=3 {
        let (levels, epoch, supported) = finalized(c.addr(id)).await;
        // group.version 1 (KIP-848) is bootstrapped with metadata.version in a new cluster.
        assert_eq!(
            levels,
            [
                ("group.version".to_owned(), 1, 1),
                ("metadata.version".to_owned(), 21, 21)
            ],
            "broker {id}"
        );
        assert!(epoch > 0, "broker {id}: epoch {epoch}");
        assert_eq!(
            supported,
            [
                "metadata.version",
                "kraft.version",
                "transaction.version",
                "group.version"
            ]
        );
    }
    let update = |feature: &str, level: i16, upgrade_type: i8, validate_only: bool| {
        RequestBody::UpdateFeatures(UpdateFeaturesRequest {
            feature_updates: vec![FeatureUpdateKey {
                feature: KStr::from(feature.to_owned()),
                max_version_level: level,
                upgrade_type,
                ..Default::default()
            }],
            validate_only,
            ..Default::default()
        })
    };
    let ask = |body: RequestBody| async move {
        match harness::request(&c.addr(2), body, 1).await {
            Some(ResponseBody::UpdateFeatures(r)) => (
                r.error_code,
                r.error_message.map(|m| m.to_string()).unwrap_or_default(),
            ),
            other => panic!("UpdateFeatures: {other:?}"),
        }
    };
    let (code, message) = ask(update("kraft.version", 1, 1, false)).await;
    assert_eq!(code, ErrorCode::INVALID_UPDATE_VERSION.0, "{message}");
    assert!(
        message.contains("does not support this feature"),
        "{message}"
    );
    let (code, message) = ask(update("metadata.version", 20, 2, false)).await;
    assert_eq!(code, ErrorCode::INVALID_UPDATE_VERSION.0, "{message}");
    assert_eq!(ask(update("metadata.version", 21, 1, true)).await.0, 0);
    // Accepted and written: the broker answers once its image has the record, which moves
    // its epoch on.
    let (_, before, _) = finalized(c.addr(2)).await;
    assert_eq!(ask(update("group.version", 0, 2, false)).await.0, 0);
    let (levels, after, _) = finalized(c.addr(2)).await;
    assert!(after > before, "epoch {before} -> {after}");
    assert_eq!(levels, [("metadata.version".to_owned(), 21, 21)]);
}
