//! Client quotas enforced by the broker (issue 25), as Kafka enforces them: librdkafka's
//! producer and consumer held at their byte-rate quotas (measured at the client) with the
//! throttle time reported in librdkafka's statistics; the request-percentage quota answering
//! `throttle_time_ms` and muting the connection for that long (KIP-219); an address over its
//! `connection_creation_rate` refused; quotas surviving a restart.
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "common/in_process.rs"]
#[allow(dead_code)]
mod in_process;
#[path = "common/peers.rs"]
#[allow(dead_code)]
mod peers;

use std::time::{Duration, Instant};

use in_process::InProcessBroker;
use kafka_net::admin::{NewTopic, QuotaAlteration, QuotaEntity, QuotaFilter, QuotaOp};
use kafka_net::conn_state::ConnConfig;
use kafka_net::{Admin, ClusterConfig, Connection, ConnectionConfig};
use kafka_protocol::KStr;
use kafka_protocol::messages::{MetadataRequest, RequestBody, ResponseBody};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

async fn admin(bootstrap: &str) -> Admin {
    Admin::connect(ClusterConfig {
        bootstrap: vec![bootstrap.to_owned()],
        ..ClusterConfig::default()
    })
    .await
    .unwrap()
}

/// Sets `key` = `value` on `entity`, checking the answer.
async fn set_quota(admin: &Admin, entity: QuotaEntity, key: &str, value: f64) {
    let results = admin
        .alter_client_quotas(
            &[QuotaAlteration::new(entity, vec![QuotaOp::set(key, value)])],
            false,
        )
        .await;
    for (entity, r) in results {
        r.unwrap_or_else(|e| panic!("setting {key} on {entity}: {e}"));
    }
}

/// The number after `label` in a line of `text` starting with `prefix`.
fn figure(text: &str, prefix: &str, label: &str) -> f64 {
    let line = text
        .lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line {prefix:?} in:\n{text}"));
    let mut words = line.split_whitespace();
    words.find(|w| *w == label);
    words
        .next()
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("no {label} in {line:?}"))
}

/// librdkafka pushing as fast as it can against `producer_byte_rate` and then
/// `consumer_byte_rate` of 1 MB/s (set on its client ids): each held within 10 % of the quota
/// over 20 s after a 2 s warm-up, measured at the client, and the throttle time shows in
/// librdkafka's statistics (tests/security/quota_peers.py).
#[test]
fn librdkafka_is_held_at_its_byte_rate_quotas() {
    const RATE: f64 = 1_000_000.0;
    let broker = InProcessBroker::start(&[]);
    let bootstrap = broker.bootstrap();
    runtime().block_on(async {
        let admin = admin(&bootstrap).await;
        for r in admin
            .create_topics(&[NewTopic::new("quota-topic", 1, 1)], false)
            .await
        {
            r.unwrap();
        }
        set_quota(
            &admin,
            QuotaEntity::client_id(Some("quota-producer")),
            "producer_byte_rate",
            RATE,
        )
        .await;
        set_quota(
            &admin,
            QuotaEntity::client_id(Some("quota-consumer")),
            "consumer_byte_rate",
            RATE,
        )
        .await;
    });
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/security/quota_peers.py")
        .display()
        .to_string();
    let rate = RATE.to_string();
    let Some(text) = peers::run(
        "python3",
        &[
            &script,
            "--bootstrap",
            &bootstrap,
            "--topic",
            "quota-topic",
            "--rate",
            &rate,
        ],
    ) else {
        return;
    };
    eprintln!("{text}");
    for who in ["producer", "consumer"] {
        let ratio = figure(&text, &format!("{who} rate"), "ratio");
        assert!(
            (0.9..=1.1).contains(&ratio),
            "{who} at {ratio:.3} of its quota:\n{text}"
        );
        let throttle = figure(&text, &format!("{who} throttle"), "max");
        assert!(throttle > 0.0, "{who}: no throttle reported:\n{text}");
    }
    assert_eq!(figure(&text, "producer rate", "errors"), 0.0, "{text}");
}

/// A client over its `request_percentage` gets `throttle_time_ms` in the answer and its next
/// request is not handled before that time has passed; a client without a quota is never
/// throttled; the quota is still there after a restart.
#[test]
fn request_percentage_throttles_and_mutes_and_survives_a_restart() {
    let broker = InProcessBroker::start(&[]);
    let rt = runtime();
    rt.block_on(async {
        let admin = admin(&broker.bootstrap()).await;
        // 0.01 % of a thread: any few requests go over it.
        set_quota(
            &admin,
            QuotaEntity::client_id(Some("busy")),
            "request_percentage",
            0.01,
        )
        .await;
        let throttled = metadata_throttles(&broker.bootstrap(), "busy", 20).await;
        assert!(
            throttled.iter().any(|(t, _)| *t > 0),
            "never throttled: {throttled:?}"
        );
        // After an answer with a throttle time, the next answer waited at least that long.
        for pair in throttled.windows(2) {
            let ((t, _), (_, gap)) = (pair[0], pair[1]);
            if t > 0 {
                assert!(
                    gap >= Duration::from_millis(u64::try_from(t).unwrap()),
                    "muted {t} ms but answered after {gap:?}: {throttled:?}"
                );
            }
        }
        let free = metadata_throttles(&broker.bootstrap(), "free", 20).await;
        assert!(free.iter().all(|(t, _)| *t == 0), "{free:?}");
    });
    let dir = broker.stop();
    let broker = InProcessBroker::start_in(dir, &[]);
    rt.block_on(async {
        let admin = admin(&broker.bootstrap()).await;
        let found = admin
            .describe_client_quotas(&QuotaFilter::all())
            .await
            .unwrap();
        assert_eq!(found.len(), 1, "{found:?}");
        let throttled = metadata_throttles(&broker.bootstrap(), "busy", 20).await;
        assert!(throttled.iter().any(|(t, _)| *t > 0), "{throttled:?}");
    });
}

/// `n` Metadata requests of client id `client_id`, one at a time: each answer's
/// `throttle_time_ms` and the time since the previous answer.
async fn metadata_throttles(bootstrap: &str, client_id: &str, n: usize) -> Vec<(i32, Duration)> {
    let cfg = ConnectionConfig {
        conn: ConnConfig {
            client_id: Some(KStr::from(client_id.to_owned())),
            ..ConnConfig::default()
        },
        ..ConnectionConfig::default()
    };
    let c = Connection::connect(bootstrap, cfg).await.unwrap();
    let mut out = Vec::new();
    let mut last = Instant::now();
    for _ in 0..n {
        let body = c
            .request(RequestBody::Metadata(MetadataRequest {
                topics: None,
                ..Default::default()
            }))
            .await
            .unwrap();
        let ResponseBody::Metadata(r) = body else {
            panic!("{body:?}")
        };
        out.push((r.throttle_time_ms, last.elapsed()));
        last = Instant::now();
    }
    out
}

/// An address over its `connection_creation_rate` (1 a second, on the default `ip` entity):
/// a burst of connections is cut short, the refused ones get no answer and are closed, and a
/// client id quota does not touch connections.
#[test]
fn connection_creation_rate_refuses_a_burst() {
    let broker = InProcessBroker::start(&[]);
    runtime().block_on(async {
        let admin = admin(&broker.bootstrap()).await;
        set_quota(
            &admin,
            QuotaEntity::new([("ip".to_owned(), None)]),
            "connection_creation_rate",
            1.0,
        )
        .await;
        // Thirty at once; a refused connection is accepted by the kernel, never answered,
        // then closed.
        let attempts = (0..30).map(|_| {
            let bootstrap = broker.bootstrap();
            async move {
                let cfg = ConnectionConfig {
                    connect_timeout: Duration::from_secs(2),
                    ..ConnectionConfig::default()
                };
                let connect = Connection::connect(&bootstrap, cfg);
                matches!(
                    tokio::time::timeout(Duration::from_secs(2), connect).await,
                    Ok(Ok(_))
                )
            }
        });
        let outcomes = futures::future::join_all(attempts).await;
        let served = outcomes.iter().filter(|ok| **ok).count();
        let refused = outcomes.len() - served;
        // Kafka's rate over 11 one-second samples counts a young rate over 10 s at least:
        // about ten connections pass before the rate reaches 1 a second.
        assert!(
            (8..=14).contains(&served),
            "{served} served, {refused} refused"
        );
        assert!(refused >= 16, "{served} served, {refused} refused");
    });
}

#[path = "common/round_trip.rs"]
#[allow(dead_code)]
mod round_trip;

/// A consumer whose quota is smaller than one record batch still reads on: an answer over what
/// the quota lets through at once goes out with its throttle time (emptied and taken back, as
/// Kafka does with a throttled fetch, it would be refused again every time).
#[test]
fn a_consumer_quota_smaller_than_a_batch_still_makes_progress() {
    let broker = InProcessBroker::start(&[]);
    let bootstrap = broker.bootstrap();
    runtime().block_on(async {
        let admin = admin(&bootstrap).await;
        set_quota(
            &admin,
            QuotaEntity::client_id(Some("slow-reader")),
            "consumer_byte_rate",
            1_000.0,
        )
        .await;
        // Records of about 3 KB each, three times the quota's bucket.
        let prefix = "x".repeat(3_000);
        let settings = [("client.id".to_owned(), "slow-reader".to_owned())];
        let got = round_trip::round_trip_with(&prefix, &bootstrap, &settings, "big-records", 3)
            .await
            .unwrap();
        assert_eq!(got, round_trip::values(&prefix, 3));
    });
}

/// Our producer against `producer_byte_rate` (1 MB/s on its client id): held within 10 % of
/// the quota over 10 s after a 2 s warm-up, measured at the producer as acknowledged bytes;
/// it holds back on the answers' `throttle_time_ms` as the broker mutes it (KIP-219).
#[test]
fn our_producer_is_held_at_its_byte_rate_quota() {
    const RATE: f64 = 1_000_000.0;
    let broker = InProcessBroker::start(&[]);
    let bootstrap = broker.bootstrap();
    runtime().block_on(async {
        let admin = admin(&bootstrap).await;
        for r in admin
            .create_topics(&[NewTopic::new("ours-quota", 1, 1)], false)
            .await
        {
            r.unwrap();
        }
        set_quota(
            &admin,
            QuotaEntity::client_id(Some("ours-producer")),
            "producer_byte_rate",
            RATE,
        )
        .await;
        let config = kafka_producer::ProducerConfig::from_pairs([
            ("bootstrap.servers".to_owned(), bootstrap.clone()),
            ("client.id".to_owned(), "ours-producer".to_owned()),
            ("linger.ms".to_owned(), "5".to_owned()),
            ("buffer.memory".to_owned(), "4194304".to_owned()),
            ("max.block.ms".to_owned(), "60000".to_owned()),
        ])
        .unwrap();
        let producer = kafka_producer::Producer::new(config).await.unwrap();
        let acked = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let value = bytes::Bytes::from(vec![b'q'; 10_000]);
        let start = Instant::now();
        let (warmup, span) = (Duration::from_secs(2), Duration::from_secs(10));
        while start.elapsed() < warmup + span {
            let record = kafka_producer::ProducerRecord::new("ours-quota", value.clone());
            let delivery = producer.enqueue(record).await.unwrap();
            let acked = std::sync::Arc::clone(&acked);
            tokio::spawn(async move {
                if delivery.await.is_ok() {
                    acked.lock().unwrap().push(Instant::now());
                }
            });
        }
        let in_span = acked
            .lock()
            .unwrap()
            .iter()
            .filter(|t| {
                let at = t.duration_since(start);
                at >= warmup && at < warmup + span
            })
            .count();
        let ratio = in_span as f64 * value.len() as f64 / span.as_secs_f64() / RATE;
        eprintln!("our producer at {ratio:.3} of its quota");
        assert!((0.9..=1.1).contains(&ratio), "our producer at {ratio:.3}");
        producer.close(Duration::from_secs(1)).await;
    });
}
