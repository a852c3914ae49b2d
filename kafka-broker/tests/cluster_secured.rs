//! A cluster whose own links are secured, with real broker processes: three combined KRaft
//! nodes whose every listener (clients and inter-broker on `PLAINTEXT`, which the map makes
//! SASL_SSL, and the controller listener) is SASL_SSL with PLAIN, certificates from a test CA
//! for 127.0.0.1, and Kafka's authorizer on with the brokers' user `admin` as super user.
//!
//! - Leader kills: our idempotent acks=all producer writes (over SASL_SSL) to a topic with
//!   replication factor 3 and `min.insync.replicas=2` while the leader of a partition is
//!   SIGKILLed and restarted, four times; every acknowledged record is read back at its offset
//!   by our consumer over SASL_SSL. Replication (fetchers), the Raft quorum, the metadata
//!   followers, registration and forwarding (CreateTopics through any broker) all run secured.
//! - A node whose password on the links is wrong does not join: it logs the failed logins
//!   while the two others elect, register and take acks=all writes; a plaintext client and a
//!   TLS client that does not authenticate get nothing from the controller listener.
#![allow(clippy::unwrap_used)]

#[path = "cluster/harness.rs"]
#[allow(dead_code)]
mod harness;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use harness::{Cluster, Role, admin, metadata, until_brokers, use_client_security};
use kafka_consumer::{Consumer, ConsumerConfig, TopicPartition};
use kafka_net::admin::NewTopic;
use kafka_net::{Connection, ConnectionConfig, SecurityKeys};
use kafka_peers::certs::TestCa;
use kafka_producer::{Producer, ProducerConfig, ProducerRecord};
use kafka_protocol::messages::{DescribeQuorumRequest, RequestBody, describe_quorum_request};

/// The PLAIN users of every listener, and the node's own login (`username` / `password`).
fn jaas(password: &str) -> String {
    format!(
        "org.apache.kafka.common.security.plain.PlainLoginModule required \
         username=\"admin\" password=\"{password}\" \
         user_admin=\"admin-secret\" user_alice=\"alice-secret\";"
    )
}

/// Fast failure detection (as tests/replication.rs) and the security settings of every node.
fn settings(ca: &TestCa, keystore: &str) -> Vec<String> {
    let ca_file = ca.ca_file().display().to_string();
    vec![
        "broker.heartbeat.interval.ms=250".into(),
        "broker.session.timeout.ms=2000".into(),
        "replica.lag.time.max.ms=2000".into(),
        "replica.fetch.backoff.ms=100".into(),
        "listener.security.protocol.map=PLAINTEXT:SASL_SSL,CONTROLLER:SASL_SSL".into(),
        "ssl.keystore.type=PEM".into(),
        format!("ssl.keystore.location={keystore}"),
        "ssl.truststore.type=PEM".into(),
        format!("ssl.truststore.location={ca_file}"),
        "sasl.enabled.mechanisms=PLAIN".into(),
        "sasl.mechanism.inter.broker.protocol=PLAIN".into(),
        "sasl.mechanism.controller.protocol=PLAIN".into(),
        format!(
            "listener.name.plaintext.plain.sasl.jaas.config={}",
            jaas("admin-secret")
        ),
        format!(
            "listener.name.controller.plain.sasl.jaas.config={}",
            jaas("admin-secret")
        ),
        "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer".into(),
        "super.users=User:admin".into(),
    ]
}

/// The client keys of `admin` over SASL_SSL, trusting the test CA.
fn client_keys(ca: &TestCa) -> Vec<(String, String)> {
    vec![
        ("security.protocol".into(), "SASL_SSL".into()),
        ("ssl.truststore.type".into(), "PEM".into()),
        (
            "ssl.truststore.location".into(),
            ca.ca_file().display().to_string(),
        ),
        ("sasl.mechanism".into(), "PLAIN".into()),
        ("sasl.username".into(), "admin".into()),
        ("sasl.password".into(), "admin-secret".into()),
    ]
}

/// The tests of this file one at a time: each has its own CA, and the harness's helpers
/// connect with one client security at a time.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A secured three-node cluster, started, every broker registered; `node3` settings apply to
/// node 3 alone.
async fn secured_cluster(dir: &std::path::Path, node3: &[String]) -> (Cluster, TestCa) {
    let ca = TestCa::new(dir, "cluster");
    let server = ca.server("node", &["127.0.0.1", "localhost"]);
    let all = settings(&ca, server.keystore.to_str().unwrap());
    let refs: Vec<&str> = all.iter().map(String::as_str).collect();
    let mut c = Cluster::new(&[Role::Combined; 3], &refs);
    c.node(3).settings = node3.to_vec();
    let mut keys = SecurityKeys::default();
    for (k, v) in client_keys(&ca) {
        keys.set(&k, &v).unwrap();
    }
    use_client_security(keys.build().unwrap());
    c.start_all();
    (c, ca)
}

/// The leader and leader epoch of `topic`-`partition` once every running broker agrees and
/// `accept` takes its leader and ISR.
async fn until_partition(
    c: &mut Cluster,
    what: &str,
    topic: &str,
    partition: i32,
    accept: impl Fn(i32, &[i32]) -> bool,
) -> (i32, i32) {
    let addrs = c.running_addrs();
    until_partition_at(c, addrs, what, topic, partition, accept).await
}

/// As [`until_partition`], as the brokers at `addrs` agree.
async fn until_partition_at(
    c: &mut Cluster,
    addrs: Vec<String>,
    what: &str,
    topic: &str,
    partition: i32,
    accept: impl Fn(i32, &[i32]) -> bool,
) -> (i32, i32) {
    let accept = &accept;
    c.eventually(what, Duration::from_secs(30), || {
        let addrs = addrs.clone();
        async move {
            let mut seen: Option<(i32, i32, Vec<i32>)> = None;
            for a in &addrs {
                let m = metadata(a, Some(&[topic])).await?;
                let t = m.topics.iter().find(|t| t.error_code == 0)?;
                let p = t
                    .partitions
                    .iter()
                    .find(|p| p.partition_index == partition)?;
                let mut isr = p.isr_nodes.clone();
                isr.sort_unstable();
                let s = (p.leader_id, p.leader_epoch, isr);
                if seen.as_ref().is_some_and(|x| *x != s) {
                    return None;
                }
                seen = Some(s);
            }
            let (leader, epoch, isr) = seen?;
            accept(leader, &isr).then_some((leader, epoch))
        }
    })
    .await
}

type Acked = Arc<Mutex<Vec<(i32, i64, String)>>>;

/// Our producer (idempotent, acks=all) writing to both partitions every 20 ms until `stop`.
async fn start_producer(
    bootstrap: &str,
    ca: &TestCa,
    topic: &str,
    stop: tokio::sync::watch::Receiver<bool>,
) -> (tokio::task::JoinHandle<Vec<String>>, Acked) {
    let mut pairs = vec![
        ("bootstrap.servers".to_owned(), bootstrap.to_owned()),
        ("acks".to_owned(), "all".to_owned()),
        ("enable.idempotence".to_owned(), "true".to_owned()),
        ("linger.ms".to_owned(), "5".to_owned()),
        ("request.timeout.ms".to_owned(), "5000".to_owned()),
        ("delivery.timeout.ms".to_owned(), "90000".to_owned()),
        ("retry.backoff.ms".to_owned(), "100".to_owned()),
        ("metadata.max.age.ms".to_owned(), "2000".to_owned()),
    ];
    pairs.extend(client_keys(ca));
    let producer = Producer::new(ProducerConfig::from_pairs(pairs).unwrap())
        .await
        .unwrap();
    let acked: Acked = Arc::default();
    let shared = Arc::clone(&acked);
    let topic: Arc<str> = topic.into();
    let task = tokio::spawn(async move {
        let failed = Arc::new(Mutex::new(Vec::new()));
        let mut seq = 0u64;
        while !*stop.borrow() {
            for p in 0..2 {
                let value = format!("{p}:{seq}");
                let rec =
                    ProducerRecord::new(topic.clone(), Bytes::from(value.clone())).partition(p);
                let (acked, errors) = (Arc::clone(&shared), Arc::clone(&failed));
                let queued = producer
                    .send_with_callback(rec, move |r| match r {
                        Ok(m) => acked.lock().unwrap().push((m.partition, m.offset, value)),
                        Err(e) => errors.lock().unwrap().push(format!("{value}: {e}")),
                    })
                    .await;
                if let Err(e) = queued {
                    failed.lock().unwrap().push(format!("{p}:{seq}: {e}"));
                }
            }
            seq += 1;
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        producer.close(Duration::from_secs(60)).await;
        std::mem::take(&mut *failed.lock().unwrap())
    });
    (task, acked)
}

/// Every record of `topic` (2 partitions) up to the end offsets, by partition, read by our
/// consumer over SASL_SSL.
async fn read_all(bootstrap: &str, ca: &TestCa, topic: &str) -> BTreeMap<i32, Vec<(i64, String)>> {
    let mut pairs = vec![("bootstrap.servers".to_owned(), bootstrap.to_owned())];
    pairs.extend(client_keys(ca));
    let consumer = Consumer::new(ConsumerConfig::from_pairs(pairs).unwrap())
        .await
        .unwrap();
    let tps: Vec<TopicPartition> = (0..2).map(|p| TopicPartition::new(topic, p)).collect();
    let ends = consumer.end_offsets(&tps).await.unwrap();
    consumer.assign(tps.clone()).unwrap();
    consumer.seek_to_beginning(&tps).unwrap();
    let mut read: BTreeMap<i32, Vec<(i64, String)>> = BTreeMap::new();
    let mut next: BTreeMap<i32, i64> = BTreeMap::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while ends
        .iter()
        .any(|(tp, end)| next.get(&tp.partition).copied().unwrap_or(0) < *end)
    {
        assert!(
            Instant::now() < deadline,
            "not read to {ends:?} in 60 s: {next:?}"
        );
        for r in consumer.poll(Duration::from_millis(500)).await.unwrap() {
            if r.offset < ends[&r.topic_partition()] {
                let v = r
                    .value
                    .as_ref()
                    .map(|v| String::from_utf8_lossy(v).into_owned())
                    .unwrap_or_default();
                read.entry(r.partition).or_default().push((r.offset, v));
            }
            next.insert(r.partition, r.offset + 1);
        }
    }
    consumer.close(Duration::from_secs(5)).await.unwrap();
    read
}

const ALL: [i32; 3] = [1, 2, 3];
const ROUNDS: usize = 4;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sasl_ssl_cluster_keeps_every_acknowledged_write_through_leader_kills() {
    let _one = ONE_AT_A_TIME.lock().await;
    const TOPIC: &str = "secured-kills";
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let (mut c, ca) = secured_cluster(dir.path(), &[]).await;
    until_brokers(&mut c, &ALL).await;
    // CreateTopics through node 3, forwarded to the active controller unless it is node 3.
    let a = admin(&c.addr(3)).await;
    let r = a
        .create_topics(
            &[NewTopic::new(TOPIC, 2, 3).config("min.insync.replicas", "2")],
            false,
        )
        .await;
    assert!(r[0].is_ok(), "CreateTopics: {r:?}\n{}", c.logs());
    for p in 0..2 {
        until_partition(&mut c, "the ISR is full", TOPIC, p, |l, isr| {
            l >= 0 && isr == ALL
        })
        .await;
    }
    let bootstrap = c.bootstrap();
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let (producer, acked) = start_producer(&bootstrap, &ca, TOPIC, stop_rx).await;
    let acked_now = |acked: &Acked| acked.lock().unwrap().len();
    c.eventually(
        "the first acknowledgements",
        Duration::from_secs(30),
        || {
            let n = acked_now(&acked);
            async move { (n > 0).then_some(()) }
        },
    )
    .await;
    for round in 0..ROUNDS {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let partition = (round % 2) as i32;
        let (victim, epoch) =
            until_partition(&mut c, "a leader", TOPIC, partition, |l, _| l >= 0).await;
        c.kill(victim);
        let (leader, _) = until_partition(
            &mut c,
            &format!("round {round}: a survivor of node {victim} leads"),
            TOPIC,
            partition,
            |l, _| l >= 0 && l != victim,
        )
        .await;
        let before = acked_now(&acked);
        c.eventually(
            "writes go on without the victim",
            Duration::from_secs(30),
            || {
                let n = acked_now(&acked);
                async move { (n > before).then_some(()) }
            },
        )
        .await;
        c.start(victim);
        for p in 0..2 {
            until_partition(
                &mut c,
                "the victim is back in the ISR",
                TOPIC,
                p,
                |l, isr| l >= 0 && isr == ALL,
            )
            .await;
        }
        eprintln!(
            "round {round} ({:.0?}): node {victim} (leader of {TOPIC}-{partition} at epoch {epoch}) \
             killed, node {leader} took over; restarted, ISR full; {} acknowledged",
            started.elapsed(),
            acked_now(&acked)
        );
    }
    stop_tx.send(true).unwrap();
    let failed = tokio::time::timeout(Duration::from_secs(90), producer)
        .await
        .unwrap()
        .unwrap();
    assert!(
        failed.is_empty(),
        "records failed: {failed:?}\n{}",
        c.logs()
    );
    let acked = std::mem::take(&mut *acked.lock().unwrap());
    let read = read_all(&bootstrap, &ca, TOPIC).await;
    let at: BTreeMap<(i32, i64), &str> = read
        .iter()
        .flat_map(|(p, rs)| rs.iter().map(move |(o, v)| ((*p, *o), v.as_str())))
        .collect();
    for (p, offset, value) in &acked {
        assert_eq!(
            at.get(&(*p, *offset)).copied(),
            Some(value.as_str()),
            "acknowledged {value} at {TOPIC}-{p}@{offset} is not read back there"
        );
    }
    let total: usize = read.values().map(Vec::len).sum();
    assert_eq!(
        total,
        acked.len(),
        "read {total} records, {} acknowledged",
        acked.len()
    );
    c.assert_running();
    eprintln!(
        "{ROUNDS} leader kills, {} acknowledged records read back, in {:.0?}",
        acked.len(),
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_with_a_wrong_password_does_not_join_and_plaintext_gets_nothing() {
    let _one = ONE_AT_A_TIME.lock().await;
    let dir = tempfile::tempdir().unwrap();
    let wrong = vec![
        format!(
            "listener.name.plaintext.plain.sasl.jaas.config={}",
            jaas("not-the-password")
        ),
        format!(
            "listener.name.controller.plain.sasl.jaas.config={}",
            jaas("not-the-password")
        ),
    ];
    let (mut c, _ca) = secured_cluster(dir.path(), &wrong).await;
    // Nodes 1 and 2 are a majority of the voters: they elect and register without node 3.
    let addrs = [c.addr(1), c.addr(2)];
    c.eventually(
        "brokers 1 and 2 registered",
        Duration::from_secs(30),
        || {
            let addrs = addrs.clone();
            async move {
                for a in &addrs {
                    let m = metadata(a, Some(&[])).await?;
                    let mut ids: Vec<i32> = m.brokers.iter().map(|b| b.node_id).collect();
                    ids.sort_unstable();
                    if ids != [1, 2] {
                        return None;
                    }
                }
                Some(())
            }
        },
    )
    .await;
    // Node 3 says why: its logins are refused.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let log = c.nodes[&3].log();
        if log.contains("cannot log in") && log.contains("SASL_AUTHENTICATION_FAILED") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "node 3 did not log a refused login\n{}",
            c.logs()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // The two others serve: a topic with two replicas takes acks=all writes.
    let a = admin(&c.addr(1)).await;
    let r = a.create_topics(&[NewTopic::new("two", 1, 2)], false).await;
    assert!(r[0].is_ok(), "CreateTopics: {r:?}\n{}", c.logs());
    let (leader, _) = until_partition_at(
        &mut c,
        addrs.to_vec(),
        "two-0 has a full ISR",
        "two",
        0,
        |l, isr| l >= 0 && isr == [1, 2],
    )
    .await;
    let produced = harness::produce(
        &c.addr(leader),
        "two",
        0,
        -1,
        &["a", "b"],
        Duration::from_secs(10),
    )
    .await
    .unwrap();
    assert_eq!(produced.0, 0, "acks=all produce: {produced:?}");
    // Still not registered, and the nodes that are still run.
    let m = metadata(&c.addr(1), Some(&[])).await.unwrap();
    assert!(m.brokers.iter().all(|b| b.node_id != 3), "{m:?}");
    c.assert_running();

    // The controller listener: nothing for a plaintext client ...
    let controller = format!("127.0.0.1:{}", c.nodes[&1].controller_port.unwrap());
    let plain = ConnectionConfig {
        connect_timeout: Duration::from_secs(3),
        ..Default::default()
    };
    let e = Connection::connect(&controller, plain.clone()).await;
    assert!(
        e.is_err(),
        "a plaintext client negotiated versions with the controller listener"
    );
    let describe = RequestBody::DescribeQuorum(DescribeQuorumRequest {
        topics: vec![describe_quorum_request::TopicData {
            topic_name: kafka_protocol::KStr::from_static("__cluster_metadata"),
            partitions: vec![describe_quorum_request::PartitionData::default()],
            ..Default::default()
        }],
        ..Default::default()
    });
    let no_handshake = ConnectionConfig {
        handshake: false,
        ..plain
    };
    if let Ok(conn) = Connection::connect(&controller, no_handshake.clone()).await {
        let answer =
            tokio::time::timeout(Duration::from_secs(5), conn.request_at(describe.clone(), 0))
                .await;
        assert!(
            !matches!(answer, Ok(Ok(_))),
            "a plaintext DescribeQuorum was answered: {answer:?}"
        );
    }
    // ... nor for a TLS client that does not log in (only the SASL requests are served).
    let mut tls_only = SecurityKeys::default();
    for (k, v) in client_keys(&_ca) {
        if !k.starts_with("sasl.") {
            tls_only.set(&k, &v).unwrap();
        }
    }
    tls_only.set("security.protocol", "SSL").unwrap();
    let tls = ConnectionConfig {
        security: tls_only.build().unwrap(),
        ..no_handshake
    };
    let conn = Connection::connect(&controller, tls).await.unwrap();
    let answer = tokio::time::timeout(Duration::from_secs(5), conn.request_at(describe, 0)).await;
    assert!(
        !matches!(answer, Ok(Ok(_))),
        "DescribeQuorum before SASL was answered: {answer:?}"
    );
    // A wrong password on the controller listener is refused with Kafka's error.
    let mut wrong_login = SecurityKeys::default();
    for (k, v) in client_keys(&_ca) {
        let v = if k == "sasl.password" {
            "nope".into()
        } else {
            v
        };
        wrong_login.set(&k, &v).unwrap();
    }
    let cfg = ConnectionConfig {
        handshake: false,
        security: wrong_login.build().unwrap(),
        ..Default::default()
    };
    let e = Connection::connect(&controller, cfg).await.unwrap_err();
    assert!(e.to_string().contains("SASL_AUTHENTICATION_FAILED"), "{e}");
}
