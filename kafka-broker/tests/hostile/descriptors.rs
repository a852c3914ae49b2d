//! Descriptors bounded by `log.open.files.max`, not by partitions or segments, and a broker
//! whose `accept` fails with EMFILE (part of `hostile.rs`).

use super::*;

/// What `log.open.files.max` defaults to for the broker below (`nofile` 1,024 and the default
/// `max.connections`, 10,000): the README's formula, (1,024 - 128) / 2.
const OPEN_FILES_AT_1024: usize = 448;

/// A Produce request of one batch to each of `partitions` of `topic`, the batch of partition
/// `p` holding the one record `"<p>-<round>"`.
fn produce_each(
    topic: &'static str,
    partitions: impl Iterator<Item = i32>,
    round: usize,
) -> kafka_protocol::messages::ProduceRequest {
    use kafka_protocol::messages::*;
    use kafka_protocol::record::RecordBatchBuilder;
    let mut req = produce_request(topic, 1, bytes::Bytes::new());
    req.topic_data[0].partition_data = partitions
        .map(|p| {
            let mut b = RecordBatchBuilder::new();
            b.append(
                round as i64,
                None,
                Some(format!("{p}-{round}").as_bytes()),
                &[],
            )
            .unwrap();
            produce_request::PartitionProduceData {
                index: p,
                records: Some(b.build().unwrap()),
                ..Default::default()
            }
        })
        .collect();
    req
}

/// Fetches every partition of `topic` in `0..partitions` from offset 0: partition -> values.
fn fetch_all(
    sock: &mut TcpStream,
    topic: &'static str,
    partitions: i32,
    corr: i32,
) -> Vec<Vec<String>> {
    use kafka_protocol::messages::*;
    let fetch = FetchRequest {
        replica_id: -1,
        max_wait_ms: 0,
        min_bytes: 1,
        max_bytes: i32::MAX,
        topics: vec![fetch_request::FetchTopic {
            topic: kafka_protocol::KStr::from_static(topic),
            partitions: (0..partitions)
                .map(|p| fetch_request::FetchPartition {
                    partition: p,
                    fetch_offset: 0,
                    partition_max_bytes: 1 << 20,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }],
        ..Default::default()
    };
    let ResponseBody::Fetch(r) = call(sock, RequestBody::from(fetch), 4, corr) else {
        panic!()
    };
    let mut out = vec![Vec::new(); partitions as usize];
    for p in &r.responses[0].partitions {
        assert_eq!(p.error_code, 0, "partition {}", p.partition_index);
        let bytes = p.records.clone().unwrap_or_default();
        for b in kafka_protocol::record::RecordBatches::new(bytes) {
            let b = b.unwrap();
            for rec in b.records(1 << 20).unwrap() {
                let v = rec.unwrap().value.unwrap();
                out[p.partition_index as usize].push(String::from_utf8(v.to_vec()).unwrap());
            }
        }
    }
    out
}

/// Watches the descriptors of the process in `pid` (0: none yet) every 10 ms; the largest
/// count seen.
fn watch_descriptors(
    pid: Arc<std::sync::atomic::AtomicU32>,
    stop: Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<usize> {
    use std::sync::atomic::Ordering;
    std::thread::spawn(move || {
        let mut peak = 0;
        while !stop.load(Ordering::Relaxed) {
            let p = pid.load(Ordering::Relaxed);
            if p != 0 {
                peak = peak.max(open_descriptors(p));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        peak
    })
}

/// 2,000 partitions under a limit of 1,024 descriptors (6,000 segment files before any roll;
/// before the file cache every one was open and the CreateTopics failed with "Too many open
/// files"): created, written, rolled, read back from old segments, recovered after a SIGKILL
/// and read again, the broker's descriptors staying under `log.open.files.max` + the reserve
/// + the test's connections all along, and new clients connect at the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn descriptors_are_bounded_by_configuration_not_by_partitions() {
    use kafka_protocol::messages::*;
    use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
    const PARTITIONS: i32 = 2_000;
    const ROLLED: i32 = 40;
    const ROUNDS: usize = 6;
    if !std::path::Path::new(broker::PRLIMIT).exists() {
        if std::env::var("KAFKA_RS_REQUIRE_PEERS").is_ok_and(|v| v == "1") {
            panic!(
                "KAFKA_RS_REQUIRE_PEERS=1 but {} is missing",
                broker::PRLIMIT
            );
        }
        eprintln!("skipped: {} is missing", broker::PRLIMIT);
        return;
    }
    let started = Instant::now();
    let dir = tempfile::tempdir().unwrap();
    let mut node = Node::new(dir.path().join("data"), dir.path().join("logs"), &[]).nofile(1024);
    let broker = node.start(&[]).await;
    assert!(
        broker
            .log()
            .contains(&format!("log_open_files_max={OPEN_FILES_AT_1024}")),
        "the broker's log does not show the default the README documents:\n{}",
        broker.log()
    );
    let pid = Arc::new(AtomicU32::new(broker.pid()));
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = watch_descriptors(Arc::clone(&pid), Arc::clone(&stop));
    let mut admin = TcpStream::connect(broker.addr.as_str()).unwrap();
    // Segments of about one batch each, so the first partitions roll at every produce.
    let create = CreateTopicsRequest {
        topics: vec![create_topics_request::CreatableTopic {
            name: kafka_protocol::KStr::from_static("many"),
            num_partitions: PARTITIONS,
            replication_factor: 1,
            configs: vec![create_topics_request::CreatableTopicConfig {
                name: kafka_protocol::KStr::from_static("segment.bytes"),
                value: Some(kafka_protocol::KStr::from_static("100")),
                ..Default::default()
            }],
            ..Default::default()
        }],
        timeout_ms: 60_000,
        ..Default::default()
    };
    let ResponseBody::CreateTopics(r) = call(&mut admin, RequestBody::from(create), 4, 1) else {
        panic!()
    };
    assert_eq!(
        r.topics[0].error_code,
        0,
        "CreateTopics of {PARTITIONS} partitions failed: {:?}; broker output:\n{}",
        r.topics[0].error_message,
        broker
            .log()
            .lines()
            .rev()
            .take(5)
            .collect::<Vec<_>>()
            .join("\n")
    );
    let produce = |sock: &mut TcpStream, parts: std::ops::Range<i32>, round: usize| {
        let req = produce_each("many", parts, round);
        let ResponseBody::Produce(r) = call(sock, RequestBody::from(req), 7, 10 + round as i32)
        else {
            panic!()
        };
        for p in &r.responses[0].partition_responses {
            assert_eq!(p.error_code, 0, "produce to partition {}", p.index);
        }
    };
    produce(&mut admin, 0..PARTITIONS, 0);
    for round in 1..ROUNDS {
        produce(&mut admin, 0..ROLLED, round);
    }
    let expect = |p: i32| -> Vec<String> {
        let rounds = if p < ROLLED { ROUNDS } else { 1 };
        (0..rounds).map(|r| format!("{p}-{r}")).collect()
    };
    let rolled = std::fs::read_dir(dir.path().join("data/many-0"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "log")
        })
        .count();
    assert_eq!(
        rolled, ROUNDS,
        "partition 0 should have one segment per batch"
    );
    let check = |got: Vec<Vec<String>>, when: &str| {
        for p in 0..PARTITIONS {
            assert_eq!(got[p as usize], expect(p), "partition {p} {when}");
        }
    };
    check(
        fetch_all(&mut admin, "many", PARTITIONS, 50),
        "before the restart",
    );
    // SIGKILL: the restart recovers every log (every segment opened and scanned).
    drop(admin);
    let mut broker = broker;
    broker.kill();
    pid.store(0, Ordering::Relaxed);
    let broker = node.start(&[]).await;
    pid.store(broker.pid(), Ordering::Relaxed);
    assert!(broker.log().contains("recovering logs"), "no recovery ran");
    let mut admin = TcpStream::connect(broker.addr.as_str()).unwrap();
    check(
        fetch_all(&mut admin, "many", PARTITIONS, 51),
        "after the restart",
    );
    // Old segments again, one partition at a time, through a cache that has moved on.
    produce(&mut admin, 0..PARTITIONS, ROUNDS);
    let mut clients: Vec<TcpStream> = (0..20)
        .map(|_| TcpStream::connect(broker.addr.as_str()).unwrap())
        .collect();
    for (i, c) in clients.iter_mut().enumerate() {
        assert_eq!(ask(c, 100 + i as i32), Some(100 + i as i32), "client {i}");
    }
    stop.store(true, Ordering::Relaxed);
    let peak = watcher.join().unwrap();
    let bound = OPEN_FILES_AT_1024 + 128 + clients.len() + 2;
    eprintln!(
        "{PARTITIONS} partitions, {} segment files: peak {peak} descriptors (bound {bound}), {:?}",
        3 * (PARTITIONS as usize + (ROUNDS - 1) * ROLLED as usize),
        started.elapsed()
    );
    assert!(
        peak <= bound,
        "the broker held {peak} descriptors, over log.open.files.max + reserve + connections \
         ({bound})"
    );
    assert!(
        !broker.log().contains("Too many open files"),
        "the broker ran out of descriptors:\n{}",
        broker.log()
    );
}

/// A broker out of descriptors for sockets (`accept` fails with EMFILE) keeps serving the
/// connections it has, logs the failures once per interval instead of once per try, and takes
/// the waiting connections as soon as descriptors are free again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accept_failing_with_emfile_keeps_the_broker_serving() {
    if !std::path::Path::new(broker::PRLIMIT).exists() {
        if std::env::var("KAFKA_RS_REQUIRE_PEERS").is_ok_and(|v| v == "1") {
            panic!(
                "KAFKA_RS_REQUIRE_PEERS=1 but {} is missing",
                broker::PRLIMIT
            );
        }
        eprintln!("skipped: {} is missing", broker::PRLIMIT);
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut node = Node::new(
        dir.path().join("data"),
        dir.path().join("logs"),
        &["log.open.files.max=64"],
    )
    .nofile(256);
    let broker = node.start(&[]).await;
    let addr: SocketAddr = broker.addr.parse().unwrap();
    let pid = broker.pid();
    let mut first = TcpStream::connect(addr).unwrap();
    assert_eq!(ask(&mut first, 1), Some(1));
    // More connections than descriptors are left: the kernel completes them (listen
    // backlog), the broker cannot accept them all.
    let mut socks: Vec<TcpStream> = Vec::new();
    let mut timeouts = 0;
    while socks.len() < 300 && timeouts < 3 {
        // A SYN dropped while the backlog is full is sent again after a second.
        match TcpStream::connect_timeout(&addr, Duration::from_secs(3)) {
            Ok(s) => socks.push(s),
            Err(_) => timeouts += 1,
        }
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while !broker.log().contains("accept failed") {
        assert!(
            Instant::now() < deadline,
            "accept never failed ({} connections, {} descriptors):\n{}",
            socks.len(),
            open_descriptors(pid),
            broker.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(open_descriptors(pid) <= 256);
    // Existing connections are served meanwhile, over a few seconds of failing accepts.
    for i in 0..20 {
        assert_eq!(ask(&mut first, 10 + i), Some(10 + i), "round {i}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let failures = broker.log().matches("accept failed").count();
    assert!(
        failures <= 2,
        "{failures} accept failure lines in 2 s: not rate-limited"
    );
    // Descriptors come back: the waiting connections are taken and answered.
    socks.truncate(100);
    let last = socks.last_mut().unwrap();
    last.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    assert_eq!(
        ask(last, 99),
        Some(99),
        "a waiting connection was not served"
    );
    let mut late = TcpStream::connect(addr).unwrap();
    late.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    assert_eq!(ask(&mut late, 7), Some(7), "a new client cannot connect");
}
