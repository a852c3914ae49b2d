//! What the replication tests share: producers that keep writing while brokers die (ours in
//! this process, confluent-kafka in a python process) and remember what was acknowledged;
//! readers (kcat, kafka-python, our consumer, the segment files themselves); the check that
//! every acknowledged record is there once, where it was acknowledged, in order; who led
//! which leader epoch according to the brokers' own logs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_consumer::{Consumer, ConsumerConfig, TopicPartition};
use kafka_producer::{Producer, ProducerConfig, ProducerRecord};
use kafka_protocol::record::RecordBatches;

use crate::harness::{Cluster, metadata};
use crate::peers;

pub(crate) const CLIENTS: &str =
    concat!(env!("CARGO_MANIFEST_DIR"), "/tests/replication/clients.py");

/// A small seeded generator (xorshift64*), so that a failing run can be repeated with
/// `KAFKA_RS_TEST_SEED`.
pub(crate) struct Rng(u64);

impl Rng {
    /// From `KAFKA_RS_TEST_SEED`, else from the clock; prints the seed.
    pub(crate) fn from_env(test: &str) -> Self {
        let seed = std::env::var("KAFKA_RS_TEST_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(1, |d| d.as_nanos() as u64)
            });
        eprintln!("{test}: KAFKA_RS_TEST_SEED={seed}");
        Self(seed | 1)
    }

    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n.max(1)
    }
}

/// One partition as a broker's Metadata (v12) describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PartitionState {
    pub(crate) leader: i32,
    pub(crate) leader_epoch: i32,
    pub(crate) isr: Vec<i32>,
}

/// `topic`-`partition` as the broker at `addr` describes it.
pub(crate) async fn partition_state(
    addr: &str,
    topic: &str,
    partition: i32,
) -> Option<PartitionState> {
    let m = metadata(addr, Some(&[topic])).await?;
    let t = m
        .topics
        .iter()
        .find(|t| t.name.as_deref() == Some(topic) && t.error_code == 0)?;
    let p = t
        .partitions
        .iter()
        .find(|p| p.partition_index == partition)?;
    let mut isr = p.isr_nodes.clone();
    isr.sort_unstable();
    Some(PartitionState {
        leader: p.leader_id,
        leader_epoch: p.leader_epoch,
        isr,
    })
}

/// Waits until every running broker agrees on `topic`-`partition` and `accept` takes it.
pub(crate) async fn until_partition(
    c: &mut Cluster,
    what: &str,
    topic: &str,
    partition: i32,
    timeout: Duration,
    accept: impl Fn(&PartitionState) -> bool,
) -> PartitionState {
    let addrs = c.running_addrs();
    let accept = &accept;
    c.eventually(what, timeout, || {
        let addrs = addrs.clone();
        async move {
            let mut seen: Option<PartitionState> = None;
            for a in &addrs {
                let s = partition_state(a, topic, partition).await?;
                if seen.as_ref().is_some_and(|x| *x != s) {
                    return None;
                }
                seen = Some(s);
            }
            seen.filter(|s| accept(s))
        }
    })
    .await
}

/// Waits until every partition of `topics` (`(name, partitions)`) has all of `replicas` in
/// its ISR, as every running broker says.
pub(crate) async fn until_isr_full(
    c: &mut Cluster,
    topics: &[(&str, i32)],
    replicas: &[i32],
    timeout: Duration,
) {
    for (topic, count) in topics {
        for p in 0..*count {
            until_partition(
                c,
                &format!("{topic}-{p}: the ISR is {replicas:?} again"),
                topic,
                p,
                timeout,
                |s| s.isr == replicas,
            )
            .await;
        }
    }
}

/// A record a producer had acknowledged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Acked {
    pub(crate) partition: i32,
    pub(crate) offset: i64,
    pub(crate) value: String,
}

/// What a producer did.
#[derive(Debug, Default)]
pub(crate) struct Produced {
    pub(crate) sent: u64,
    pub(crate) acked: Vec<Acked>,
    /// (partition, value, error).
    pub(crate) failed: Vec<(i32, String, String)>,
}

impl Produced {
    /// What two producers did together.
    pub(crate) fn merge(mut self, other: Self) -> Self {
        self.sent += other.sent;
        self.acked.extend(other.acked);
        self.failed.extend(other.failed);
        self
    }

    /// Fails the test if any record failed.
    pub(crate) fn assert_none_failed(&self, name: &str, logs: impl FnOnce() -> String) {
        assert!(
            self.failed.is_empty(),
            "{name}: {} of {} records failed, e.g. {:?}\n{}",
            self.failed.len(),
            self.sent,
            &self.failed[..self.failed.len().min(5)],
            logs()
        );
    }
}

/// Our producer (idempotent, acks=all) writing to every partition of a topic from a task of
/// this runtime until stopped: one record per partition every `interval`, value
/// `<partition>:<sequence>:<tag>`.
pub(crate) struct Load {
    stop: tokio::sync::watch::Sender<bool>,
    limit: tokio::sync::watch::Sender<u64>,
    task: tokio::task::JoinHandle<Produced>,
    acked: Arc<Mutex<Produced>>,
}

impl Load {
    pub(crate) async fn start(
        bootstrap: &str,
        topic: &str,
        partitions: i32,
        interval: Duration,
        tag: &str,
    ) -> Self {
        let cfg = ProducerConfig::from_pairs([
            ("bootstrap.servers".to_owned(), bootstrap.to_owned()),
            ("acks".to_owned(), "all".to_owned()),
            ("enable.idempotence".to_owned(), "true".to_owned()),
            ("linger.ms".to_owned(), "5".to_owned()),
            ("request.timeout.ms".to_owned(), "5000".to_owned()),
            ("delivery.timeout.ms".to_owned(), "90000".to_owned()),
            ("retry.backoff.ms".to_owned(), "100".to_owned()),
            ("metadata.max.age.ms".to_owned(), "2000".to_owned()),
        ])
        .unwrap();
        let producer = Producer::new(cfg).await.unwrap();
        let (stop, mut stopped) = tokio::sync::watch::channel(false);
        let (limit, limit_rx) = tokio::sync::watch::channel(u64::MAX);
        let acked = Arc::new(Mutex::new(Produced::default()));
        let shared = Arc::clone(&acked);
        let topic: Arc<str> = topic.into();
        let tag = tag.to_owned();
        let task = tokio::spawn(async move {
            let mut seq = vec![0u64; partitions as usize];
            let mut sent = 0;
            while !*stopped.borrow_and_update() && seq[0] < *limit_rx.borrow() {
                for p in 0..partitions {
                    let value = format!("{p}:{}:{tag}", seq[p as usize]);
                    seq[p as usize] += 1;
                    let rec =
                        ProducerRecord::new(topic.clone(), Bytes::from(value.clone())).partition(p);
                    let reports = Arc::clone(&shared);
                    let v = value.clone();
                    let queued = producer
                        .send_with_callback(rec, move |r| {
                            let mut s = reports.lock().unwrap();
                            match r {
                                Ok(m) => s.acked.push(Acked {
                                    partition: m.partition,
                                    offset: m.offset,
                                    value: v,
                                }),
                                Err(e) => s.failed.push((p, v, e.to_string())),
                            }
                        })
                        .await;
                    match queued {
                        Ok(()) => sent += 1,
                        Err(e) => shared
                            .lock()
                            .unwrap()
                            .failed
                            .push((p, value, e.to_string())),
                    }
                }
                tokio::select! {
                    () = tokio::time::sleep(interval) => {}
                    _ = stopped.changed() => {}
                }
            }
            producer.close(Duration::from_secs(60)).await;
            let mut s = shared.lock().unwrap();
            Produced {
                sent,
                acked: std::mem::take(&mut s.acked),
                failed: std::mem::take(&mut s.failed),
            }
        });
        Self {
            stop,
            limit,
            task,
            acked,
        }
    }

    /// Sends no more than `n` records per partition.
    pub(crate) fn limit(self, n: u64) -> Self {
        let _ = self.limit.send(n);
        self
    }

    /// How many records were acknowledged so far.
    pub(crate) fn acked(&self) -> usize {
        self.acked.lock().unwrap().acked.len()
    }

    /// Stops sending (at once, or after the [`Self::limit`] when there is one) and waits (at
    /// most 90 s) for the outstanding acknowledgements.
    pub(crate) async fn finish(self) -> Produced {
        if *self.limit.borrow() == u64::MAX {
            let _ = self.stop.send(true);
        }
        tokio::time::timeout(Duration::from_secs(90), self.task)
            .await
            .expect("our producer did not close within 90 s")
            .unwrap()
    }
}

/// A python client running in the background, its output in a file.
pub(crate) struct Background {
    child: Option<Child>,
    out: PathBuf,
    what: String,
}

impl Background {
    /// `python3 clients.py ARGS`, output into `out`.
    pub(crate) fn python(args: &[&str], out: &Path) -> Self {
        let file = std::fs::File::create(out).unwrap();
        let child = Command::new("python3")
            .arg(CLIENTS)
            .args(args)
            .stdin(Stdio::null())
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .spawn()
            .unwrap();
        Self {
            child: Some(child),
            out: out.to_owned(),
            what: format!("clients.py {}", args.join(" ")),
        }
    }

    pub(crate) fn output(&self) -> String {
        std::fs::read_to_string(&self.out).unwrap_or_default()
    }

    /// The last lines of the output, for a failure message.
    pub(crate) fn tail(&self) -> String {
        let out = self.output();
        let lines: Vec<&str> = out.lines().collect();
        lines[lines.len().saturating_sub(60)..].join("\n")
    }

    /// Waits until the output satisfies `done`, at most `timeout`; fails with the client's
    /// and the nodes' output.
    pub(crate) async fn until(
        &mut self,
        c: &mut Cluster,
        what: &str,
        timeout: Duration,
        done: impl Fn(&str) -> bool,
    ) {
        let deadline = Instant::now() + timeout;
        while !done(&self.output()) {
            self.assert_running();
            if Instant::now() >= deadline {
                c.assert_running();
                panic!(
                    "{what}: not within {timeout:?}\n===== {} =====\n{}\n{}",
                    self.what,
                    self.tail(),
                    c.logs()
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Fails the test when the client has exited already.
    pub(crate) fn assert_running(&mut self) {
        let status = self.child.as_mut().and_then(|c| c.try_wait().unwrap());
        assert!(
            status.is_none(),
            "{} exited ({status:?}):\n{}",
            self.what,
            self.tail()
        );
    }

    /// SIGKILL, reaped.
    pub(crate) fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Waits for a successful exit, at most `timeout`; returns the output.
    pub(crate) async fn finish(mut self, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        let mut child = self.child.take().expect("running");
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                assert!(
                    status.success(),
                    "{} failed ({status}):\n{}",
                    self.what,
                    self.tail()
                );
                return self.output();
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "{} did not end within {timeout:?}:\n{}",
                    self.what,
                    self.tail()
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Whether the python client library is there (`None`: skip what needs it).
pub(crate) fn python_client(client: &str) -> Option<()> {
    peers::run("python3", &[CLIENTS, "check", "--client", client]).map(|_| ())
}

/// What confluent-kafka's producer (`clients.py produce`) printed.
pub(crate) fn parse_produced(out: &str) -> Produced {
    let mut p = Produced::default();
    for line in out.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        match f.as_slice() {
            // librdkafka may report a record delivered without its offset (`None`, or a
            // negative one): checked by value alone.
            ["ack", part, offset, value] => p.acked.push(Acked {
                partition: part
                    .parse()
                    .unwrap_or_else(|e| panic!("{e} in the producer's line {line:?}")),
                offset: offset.parse().unwrap_or(-1).max(-1),
                value: (*value).to_owned(),
            }),
            ["fail", part, value, error] => {
                p.failed.push((
                    part.parse().unwrap(),
                    (*value).to_owned(),
                    (*error).to_owned(),
                ));
            }
            ["done", sent, _, _] => p.sent = sent.parse().unwrap(),
            _ => {}
        }
    }
    p
}

/// A topic as read back: partition -> (offset, value) in the order read.
pub(crate) type Read = BTreeMap<i32, Vec<(i64, String)>>;

fn parse_lines(out: &str) -> Read {
    let mut read = Read::new();
    for line in out.lines().filter(|l| !l.trim().is_empty()) {
        let mut f = line.splitn(3, ' ');
        let (Some(p), Some(o), Some(v)) = (f.next(), f.next(), f.next()) else {
            panic!("not `partition offset value`: {line:?}");
        };
        read.entry(p.parse().unwrap())
            .or_default()
            .push((o.parse().unwrap(), v.to_owned()));
    }
    read
}

/// kcat reads the whole topic (`None`: no kcat, and that is allowed).
pub(crate) fn read_kcat(bootstrap: &str, topic: &str) -> Option<Read> {
    let out = peers::run(
        "kcat",
        &[
            "-b",
            bootstrap,
            "-C",
            "-t",
            topic,
            "-o",
            "beginning",
            "-e",
            "-q",
            "-f",
            "%p %o %s\\n",
        ],
    )?;
    Some(parse_lines(&out))
}

/// kafka-python reads the whole topic.
pub(crate) fn read_kafka_python(bootstrap: &str, topic: &str, partitions: i32) -> Option<Read> {
    let n = partitions.to_string();
    let out = peers::run(
        "python3",
        &[
            CLIENTS,
            "read",
            "--bootstrap",
            bootstrap,
            "--topic",
            topic,
            "--partitions",
            &n,
        ],
    )?;
    Some(parse_lines(&out))
}

/// Our consumer reads the whole topic (assigned, from the log start to the end it lists
/// first), at most 60 s.
pub(crate) async fn read_ours(bootstrap: &str, topic: &str, partitions: i32) -> Read {
    let cfg = ConsumerConfig::builder()
        .bootstrap_servers(bootstrap.split(','))
        .build()
        .unwrap();
    let consumer = Consumer::new(cfg).await.unwrap();
    let tps: Vec<TopicPartition> = (0..partitions)
        .map(|p| TopicPartition::new(topic, p))
        .collect();
    let ends = consumer.end_offsets(&tps).await.unwrap();
    consumer.assign(tps.clone()).unwrap();
    consumer.seek_to_beginning(&tps).unwrap();
    let mut read = Read::new();
    let mut next: BTreeMap<i32, i64> = BTreeMap::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while ends
        .iter()
        .any(|(tp, end)| next.get(&tp.partition).copied().unwrap_or(0) < *end)
    {
        assert!(
            Instant::now() < deadline,
            "our consumer did not reach {ends:?} within 60 s (at {next:?})"
        );
        for r in consumer.poll(Duration::from_millis(500)).await.unwrap() {
            let end = ends[&r.topic_partition()];
            if r.offset < end {
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

/// The checks of one read of a topic against what its producers were acknowledged (values
/// `<partition>:<sequence>[:<producer's tag>]`): every acknowledged record is there, at the
/// offset it was acknowledged with; no value is there twice; in each partition offsets grow,
/// and each producer's sequences grow with them (its order); every value is in its own
/// partition. Returns a line for the test's output.
pub(crate) fn check_read(reader: &str, produced: &Produced, read: &Read) -> String {
    let mut at: BTreeMap<(i32, i64), &str> = BTreeMap::new();
    let mut values: BTreeSet<&str> = BTreeSet::new();
    for (p, records) in read {
        let mut last_offset = -1;
        // The last sequence of each producer (by tag).
        let mut last: BTreeMap<&str, u64> = BTreeMap::new();
        for (o, v) in records {
            assert!(values.insert(v), "{reader}: {v} read twice");
            let mut f = v.splitn(3, ':');
            let (Some(Ok(vp)), Some(Ok(seq)), tag) = (
                f.next().map(str::parse::<i32>),
                f.next().map(str::parse::<u64>),
                f.next().unwrap_or(""),
            ) else {
                panic!("{reader}: an unexpected value {v:?} at {p}-{o}");
            };
            assert_eq!(vp, *p, "{reader}: {v} read from partition {p}");
            assert!(
                *o > last_offset,
                "{reader}: partition {p}: {o} after {last_offset}"
            );
            if let Some(l) = last.get(tag) {
                assert!(
                    seq > *l,
                    "{reader}: partition {p}: {v} at {o} after sequence {l} of the same producer"
                );
            }
            last.insert(tag, seq);
            last_offset = *o;
            at.insert((*p, *o), v);
        }
    }
    let mut missing = Vec::new();
    for a in &produced.acked {
        if a.offset < 0 {
            if !at
                .iter()
                .any(|((p, _), v)| *p == a.partition && **v == a.value)
            {
                missing.push(format!(
                    "{} acknowledged (offset not reported) in {} but not read",
                    a.value, a.partition
                ));
            }
            continue;
        }
        match at.get(&(a.partition, a.offset)) {
            Some(v) if *v == a.value => {}
            other => missing.push(format!(
                "{} acknowledged at {}-{} but read {other:?}",
                a.value, a.partition, a.offset
            )),
        }
    }
    assert!(
        missing.is_empty(),
        "{reader}: {} of {} acknowledged records are not where they were acknowledged, e.g. {:?}",
        missing.len(),
        produced.acked.len(),
        &missing[..missing.len().min(5)]
    );
    format!(
        "{reader}: {} records read, all {} acknowledged ones once at their offsets, in order",
        values.len(),
        produced.acked.len()
    )
}

/// A batch of a segment file.
#[derive(Debug, Clone)]
pub(crate) struct Batch {
    pub(crate) base_offset: i64,
    pub(crate) last_offset: i64,
    pub(crate) leader_epoch: i32,
    pub(crate) values: Vec<String>,
}

/// The batches of `topic`-`partition` in a node's segment files, in offset order.
pub(crate) fn disk_batches(dir: &Path, topic: &str, partition: i32) -> Vec<Batch> {
    let mut out = Vec::new();
    for bytes in crate::harness::segment_files(dir, topic, partition).into_values() {
        for b in RecordBatches::new(Bytes::from(bytes)).flatten() {
            let values = b
                .records(1 << 24)
                .map(|rs| {
                    rs.flatten()
                        .map(|r| {
                            r.value
                                .map(|v| String::from_utf8_lossy(&v).into_owned())
                                .unwrap_or_default()
                        })
                        .collect()
                })
                .unwrap_or_default();
            out.push(Batch {
                base_offset: b.base_offset(),
                last_offset: b.last_offset(),
                leader_epoch: b.partition_leader_epoch(),
                values,
            });
        }
    }
    out.sort_by_key(|b| b.base_offset);
    out
}

/// The log end offset of `topic`-`partition` on a node's disk.
pub(crate) fn disk_log_end(dir: &Path, topic: &str, partition: i32) -> i64 {
    disk_batches(dir, topic, partition)
        .last()
        .map_or(0, |b| b.last_offset + 1)
}

/// The leader epochs of `topic`-`partition` each node says it led (its "leader" lines, over
/// every start): epoch -> nodes.
pub(crate) fn leaders_by_epoch(
    c: &Cluster,
    topic: &str,
    partition: i32,
) -> BTreeMap<i32, BTreeSet<i32>> {
    let mut out: BTreeMap<i32, BTreeSet<i32>> = BTreeMap::new();
    for n in c.nodes.values() {
        for line in n.all_logs().lines() {
            let Some(rest) = line.split(" leader ").nth(1) else {
                continue;
            };
            let field = |k: &str| {
                rest.split_whitespace()
                    .find_map(|f| f.strip_prefix(k))
                    .map(|v| v.trim_matches('"').to_owned())
            };
            if field("topic=").as_deref() == Some(topic)
                && field("partition=").as_deref() == Some(&partition.to_string())
            {
                if let Some(e) = field("leader_epoch=").and_then(|e| e.parse().ok()) {
                    out.entry(e).or_default().insert(n.id);
                }
            }
        }
    }
    out
}
