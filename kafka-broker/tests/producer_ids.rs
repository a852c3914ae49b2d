//! Producer ids in a cluster of real `kafka-broker` processes (3 combined nodes on
//! 127.0.0.1): each broker takes blocks of ids from the active controller
//! (AllocateProducerIds), so idempotent producers get distinct ids whichever broker they ask.
//!
//! InitProducerId (no transactional id) through each broker with our `kafka-net` connection,
//! 1,100 of them through one broker (past its first block of 1,000, so the block fetched
//! ahead is used), and confluent-kafka's idempotent producers (the id librdkafka logs):
//! every id distinct. After SIGKILL and restart of a broker that is not the controller, and
//! of the active controller, new ids are still distinct from every earlier one.
//!
//! Brokers apart from 3 controllers take their blocks over the controller listener alike.
//!
//! A missing peer (confluent-kafka) skips that check with a notice, unless
//! `KAFKA_RS_REQUIRE_PEERS=1`.
#![allow(clippy::unwrap_used)]

#[path = "cluster/harness.rs"]
#[allow(dead_code)]
mod harness;
#[path = "common/peers.rs"]
#[allow(dead_code)]
mod peers;

use std::collections::BTreeSet;
use std::time::Duration;

use harness::{Cluster, Role, active_controller, admin, until_brokers};
use kafka_net::admin::NewTopic;
use kafka_net::connection::{Connection, ConnectionConfig};
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::{InitProducerIdRequest, RequestBody, ResponseBody};

const IDEMPOTENT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/producer_ids/idempotent.py"
);

/// Fast failure detection: heartbeats every 500 ms, fenced after 3 s.
const FAST: &[&str] = &[
    "broker.heartbeat.interval.ms=500",
    "broker.session.timeout.ms=3000",
];

/// One InitProducerId (v4, idempotent) on `conn`: the id, or the answer's error code.
async fn init_producer_id(conn: &Connection) -> Option<Result<i64, i16>> {
    let req = InitProducerIdRequest {
        transactional_id: None,
        transaction_timeout_ms: 60_000,
        producer_id: -1,
        producer_epoch: -1,
        ..Default::default()
    };
    let answer = tokio::time::timeout(
        Duration::from_secs(5),
        conn.request_at(RequestBody::InitProducerId(req), 4),
    )
    .await
    .ok()?
    .ok()?;
    let ResponseBody::InitProducerId(r) = answer else {
        return None;
    };
    Some(if r.error_code == 0 {
        assert_eq!(r.producer_epoch, 0, "a new producer id starts at epoch 0");
        Ok(r.producer_id)
    } else {
        Err(r.error_code)
    })
}

async fn connect(addr: &str) -> Option<Connection> {
    let cfg = ConnectionConfig {
        connect_timeout: Duration::from_secs(2),
        handshake: false,
        ..Default::default()
    };
    Connection::connect(addr, cfg).await.ok()
}

/// `count` new producer ids through broker `id`, each added to `seen`, which must not hold
/// it yet. COORDINATOR_LOAD_IN_PROGRESS (no block from the controller yet) and a broker not
/// answering yet are retried for up to 20 s; any other error fails.
async fn new_ids(c: &mut Cluster, id: i32, count: usize, seen: &mut BTreeSet<i64>) -> Vec<i64> {
    let addr = c.addr(id);
    let mut got = Vec::with_capacity(count);
    while got.len() < count {
        let a = addr.clone();
        let want = count - got.len();
        let batch: Result<Vec<i64>, i16> = c
            .eventually(
                &format!("broker {id} hands out producer ids"),
                Duration::from_secs(20),
                || {
                    let a = a.clone();
                    async move {
                        let conn = connect(&a).await?;
                        let mut ids = Vec::new();
                        while ids.len() < want {
                            match init_producer_id(&conn).await {
                                Some(Ok(pid)) => ids.push(pid),
                                Some(Err(code))
                                    if code == ErrorCode::COORDINATOR_LOAD_IN_PROGRESS.code() =>
                                {
                                    // Waiting for a block: hand back what we have.
                                    return (!ids.is_empty()).then_some(Ok(ids));
                                }
                                Some(Err(code)) => return Some(Err(code)),
                                None if ids.is_empty() => return None,
                                None => return Some(Ok(ids)),
                            }
                        }
                        Some(Ok(ids))
                    }
                },
            )
            .await;
        let batch = batch.unwrap_or_else(|code| {
            panic!(
                "broker {id}: InitProducerId answered {:?}\n{}",
                ErrorCode::from(code),
                c.logs()
            )
        });
        got.extend(batch);
    }
    for pid in &got {
        assert!(*pid >= 0, "broker {id}: producer id {pid}");
        assert!(
            seen.insert(*pid),
            "broker {id} handed out producer id {pid} again (seen: {} ids)\n{}",
            seen.len(),
            c.logs()
        );
    }
    got
}

/// confluent-kafka idempotent producers bootstrapped at each of `brokers`: the ids they were
/// given (`None`: confluent-kafka is missing).
fn confluent_pids(c: &Cluster, brokers: &[i32], topic: &str) -> Option<Vec<i64>> {
    let mut args = vec![IDEMPOTENT.to_owned()];
    for id in brokers {
        args.push("--bootstrap".to_owned());
        args.push(c.addr(*id));
    }
    args.push("--topic".to_owned());
    args.push(topic.to_owned());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = peers::run("python3", &args)?;
    let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    Some(
        v["pids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p.as_i64().unwrap())
            .collect(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn producer_ids_are_distinct_across_brokers_and_restarts() {
    let mut c = Cluster::new(&[Role::Combined; 3], FAST);
    c.start_all();
    until_brokers(&mut c, &[1, 2, 3]).await;
    let mut seen = BTreeSet::new();
    for id in 1..=3 {
        new_ids(&mut c, id, 5, &mut seen).await;
    }
    // Past the first block of one broker: the block fetched ahead at 90% takes over.
    let many = new_ids(&mut c, 1, 1_100, &mut seen).await;
    let blocks: BTreeSet<i64> = many.iter().map(|p| p / 1000).collect();
    assert!(blocks.len() >= 2, "1,100 ids from one block? {blocks:?}");

    // Third-party idempotent producers through each broker.
    let topic = "idempotent";
    {
        let a = admin(&c.bootstrap()).await;
        let r = a.create_topics(&[NewTopic::new(topic, 1, 3)], false).await;
        assert!(r[0].is_ok(), "{r:?}\n{}", c.logs());
    }
    if let Some(pids) = confluent_pids(&c, &[1, 2, 3], topic) {
        eprintln!("confluent-kafka producers were given {pids:?}");
        assert_eq!(pids.len(), 3, "{pids:?}");
        for pid in pids {
            assert!(
                seen.insert(pid),
                "librdkafka was given producer id {pid} again\n{}",
                c.logs()
            );
        }
    }

    // A broker that is not the controller, SIGKILLed and restarted.
    let controller = active_controller(&mut c, &[1, 2, 3]).await;
    let victim = (1..=3).find(|&i| i != controller).unwrap();
    c.kill(victim);
    let survivor = (1..=3).find(|&i| i != victim).unwrap();
    new_ids(&mut c, survivor, 5, &mut seen).await;
    c.start(victim);
    until_brokers(&mut c, &[1, 2, 3]).await;
    for id in 1..=3 {
        new_ids(&mut c, id, 5, &mut seen).await;
    }

    // The active controller, SIGKILLed: the survivors get ids from the new controller, and
    // the restarted node too.
    let controller = active_controller(&mut c, &[1, 2, 3]).await;
    c.kill(controller);
    let survivors: Vec<i32> = (1..=3).filter(|&i| i != controller).collect();
    let next = active_controller(&mut c, &survivors).await;
    assert_ne!(next, controller);
    for id in &survivors {
        // Enough to need a new block from the new controller.
        new_ids(&mut c, *id, 1_000, &mut seen).await;
    }
    c.start(controller);
    until_brokers(&mut c, &[1, 2, 3]).await;
    for id in 1..=3 {
        new_ids(&mut c, id, 5, &mut seen).await;
    }
    let blocks: BTreeSet<i64> = seen.iter().map(|p| p / 1000).collect();
    eprintln!(
        "{} distinct producer ids from the blocks starting at {:?}",
        seen.len(),
        blocks.iter().map(|b| b * 1000).collect::<Vec<_>>()
    );
    c.assert_running();
}

/// Brokers that are not controllers reach the controllers only over their controller
/// listeners: their blocks are distinct too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn brokers_apart_from_the_controllers_get_distinct_ids() {
    let roles = [
        Role::Controller,
        Role::Controller,
        Role::Controller,
        Role::Broker,
        Role::Broker,
    ];
    let mut c = Cluster::new(&roles, FAST);
    c.start_all();
    until_brokers(&mut c, &[4, 5]).await;
    let mut seen = BTreeSet::new();
    for id in [4, 5, 4, 5] {
        new_ids(&mut c, id, 600, &mut seen).await;
    }
    let blocks: BTreeSet<i64> = seen.iter().map(|p| p / 1000).collect();
    assert!(blocks.len() >= 4, "each broker used two blocks: {blocks:?}");
    c.assert_running();
}
