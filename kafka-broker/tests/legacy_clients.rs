//! Clients from before magic 2 against the real broker process: they produce magic 0/1
//! message sets (up-converted on Produce v0-2) and read magic 0/1 (down-converted on Fetch
//! v0-3), see `src/convert.rs`.
//!
//! - kafka-python pinned with `api_version=(0, 10, 1)` (Produce v2 / Fetch v3, magic 1) and
//!   `(0, 9)` (Produce v1 / Fetch v1, magic 0), every legacy codec; a current kafka-python
//!   reads what they wrote.
//! - segmentio/kafka-go 0.2.1 (Debian's `golang-github-segmentio-kafka-go-dev`: Produce v2 /
//!   Fetch v2 only), every legacy codec.
//! - Shopify/sarama 1.22.1 (Debian's `golang-github-shopify-sarama-dev`) configured for Kafka
//!   0.8.2, 0.9, 0.10.0 and 0.10.2 (Produce v0-2, Fetch v0-3).
//! - librdkafka (confluent-kafka) told the broker is Kafka 0.9.0 (`api.version.request=false`,
//!   `broker.version.fallback=0.9.0`: Produce v1 / Fetch v1, magic 0).
//! - Each of them also reads topics kcat wrote (v2 batches, every codec), which exercises the
//!   down-conversion of compressed batches; a zstd topic is refused to them with
//!   UNSUPPORTED_COMPRESSION_TYPE. The broker's debug log shows which request versions each
//!   client used, and the test checks them, so a client that silently moved to newer
//!   versions cannot pass for an old one.
//! - Raw requests: magic 1 at Produce v3 is INVALID_RECORD, zstd at Produce v2 and Fetch v4
//!   is UNSUPPORTED_COMPRESSION_TYPE, and both are served from v7 / v10.
//!
//! The Go programs (tests/legacy/kafkago, tests/legacy/sarama) are built here in GOPATH mode
//! against /usr/share/gocode. A missing peer (python3 with kafka-python and its codecs, kcat,
//! go and the Debian Go packages) skips its test with a notice, unless
//! `KAFKA_RS_REQUIRE_PEERS=1` (set by `.ci/run`, which installs them), where it fails.
#![allow(clippy::unwrap_used)]

#[path = "crash/broker.rs"]
#[allow(dead_code)]
mod broker;

use std::collections::BTreeSet;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_net::{Connection, ConnectionConfig};
use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    CreateTopicsRequest, FetchRequest, ProduceRequest, RequestBody, ResponseBody,
};
use kafka_protocol::record::{
    Compression, LegacyMessageSetBuilder, LegacyRecords, RecordBatchBuilder,
};

use broker::{Broker, Node};

/// Messages each client produces per topic.
const N: usize = 20;
/// Timestamp of produced message 0 (message i has this plus i).
const BASE_TIMESTAMP: i64 = 1_700_000_000_000;
/// Time limit of one client run.
const STEP_TIMEOUT: Duration = Duration::from_secs(90);
const REQUEST_TIMEOUT: Duration = Duration::from_secs(15);
/// The broker logs every request (api, version, client id) at debug.
const LOG_FILTER: &str = "info,kafka_broker::server::connection=debug";
const LEGACY_CODECS: [&str; 4] = ["none", "gzip", "snappy", "lz4"];
const PRODUCE: i16 = 0;
const FETCH: i16 = 1;

fn peers_required() -> bool {
    std::env::var("KAFKA_RS_REQUIRE_PEERS").is_ok_and(|v| v == "1")
}

/// Fails (peers required) or prints why the test does not run.
fn unavailable(test: &str, why: &str) {
    assert!(
        !peers_required(),
        "KAFKA_RS_REQUIRE_PEERS=1 but {test} cannot run: {why}"
    );
    eprintln!("NOTICE: skipping {test}: {why}");
}

fn tests_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/legacy")
}

/// What a client run printed.
struct Run {
    ok: bool,
    stdout: String,
    stderr: String,
}

impl Run {
    fn transcript(&self) -> String {
        format!(
            "--- stdout\n{}--- stderr\n{}",
            self.stdout,
            tail(&self.stderr, 40)
        )
    }

    /// The "offset key value timestamp" lines.
    fn records(&self) -> Vec<Rec> {
        self.stdout.lines().filter_map(Rec::parse).collect()
    }
}

fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Runs `cmd` to completion or until [`STEP_TIMEOUT`] (then kills it).
fn run(cmd: &mut Command, stdin: Option<&[u8]>) -> Run {
    let mut child = cmd
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    if let Some(input) = stdin {
        child.stdin.take().unwrap().write_all(input).unwrap();
    }
    let deadline = Instant::now() + STEP_TIMEOUT;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() >= deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    Run {
        ok: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// One message a client read.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Rec {
    offset: i64,
    key: String,
    value: String,
    timestamp: i64,
}

impl Rec {
    fn parse(line: &str) -> Option<Self> {
        let mut f = line.split('\t');
        let rec = Self {
            offset: f.next()?.parse().ok()?,
            key: f.next()?.to_owned(),
            value: f.next()?.to_owned(),
            timestamp: f.next()?.parse().ok()?,
        };
        f.next().is_none().then_some(rec)
    }
}

/// What a client that produced with `prefix` should read back: magic 1 keeps the
/// timestamps, magic 0 has none.
fn produced(prefix: &str, timestamps: bool) -> Vec<Rec> {
    (0..N)
        .map(|i| Rec {
            offset: i as i64,
            key: format!("{prefix}-key-{i}"),
            value: format!("{prefix}-value-{i}"),
            timestamp: if timestamps {
                BASE_TIMESTAMP + i as i64
            } else {
                -1
            },
        })
        .collect()
}

/// Checks records read from a topic kcat wrote (kcat stamps the current time, so only
/// whether there is a timestamp is checked).
fn check_kcat_records(who: &str, topic: &str, run: &Run, timestamps: bool) {
    assert!(run.ok, "{who} reading {topic}:\n{}", run.transcript());
    let got = run.records();
    let want: Vec<(i64, String, String)> = (0..N)
        .map(|i| (i as i64, format!("kc-key-{i}"), format!("kc-value-{i}")))
        .collect();
    let seen: Vec<(i64, String, String)> = got
        .iter()
        .map(|r| (r.offset, r.key.clone(), r.value.clone()))
        .collect();
    assert_eq!(seen, want, "{who} reading {topic}:\n{}", run.transcript());
    for r in &got {
        assert_eq!(
            r.timestamp > 0,
            timestamps,
            "{who} reading {topic}: timestamp of {r:?}"
        );
    }
}

/// Checks that a client reading `kc-zstd` was refused: it stopped before the end, with
/// `marker` (the client's words for UNSUPPORTED_COMPRESSION_TYPE) in its errors. librdkafka
/// leaves a batch uncompressed when compression does not make it smaller, so a short first
/// batch may be plain and readable: what was read must be the topic's beginning.
fn check_zstd_refused(who: &str, run: &Run, marker: Option<&str>) {
    let got = run.records();
    assert!(
        !run.ok && got.len() < N,
        "{who} reading kc-zstd:\n{}",
        run.transcript()
    );
    for (i, r) in got.iter().enumerate() {
        assert_eq!(
            (r.offset, r.key.as_str()),
            (i as i64, format!("kc-key-{i}").as_str()),
            "{who} reading kc-zstd"
        );
    }
    if let Some(marker) = marker {
        assert!(
            run.stderr.contains(marker),
            "{who} reading kc-zstd:\n{}",
            run.transcript()
        );
    }
}

/// The (api key, version) pairs of every request the client with `client_id` sent.
fn versions_used(broker: &Broker, client_id: &str) -> BTreeSet<(i16, i16)> {
    let quoted = format!("client_id=\"{client_id}\"");
    let mut out = BTreeSet::new();
    for line in broker.log().lines() {
        if !line.contains(" request ") && !line.contains(": request") {
            continue;
        }
        if !line.split_whitespace().any(|w| w == quoted) {
            continue;
        }
        let field = |name: &str| {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(name)?.parse::<i16>().ok())
        };
        if let (Some(api), Some(version)) = (field("api="), field("version=")) {
            out.insert((api, version));
        }
    }
    out
}

/// The versions of `api` the client used.
fn api_versions(used: &BTreeSet<(i16, i16)>, api: i16) -> Vec<i16> {
    used.iter()
        .filter(|(a, _)| *a == api)
        .map(|(_, v)| *v)
        .collect()
}

async fn start_broker(dir: &tempfile::TempDir) -> Broker {
    Node::new(dir.path().join("data"), dir.path().join("logs"), &[])
        .log_filter(LOG_FILTER)
        .start(&[])
        .await
}

fn have_kcat() -> bool {
    Command::new("kcat")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Writes `kc-key-i:kc-value-i` for i in 0..N to partition 0 of `topic` with kcat (lingering,
/// so that they usually form one compressed batch).
fn kcat_produce(addr: &str, topic: &str, codec: &str) {
    let lines: String = (0..N)
        .map(|i| format!("kc-key-{i}:kc-value-{i}\n"))
        .collect();
    let r = run(
        Command::new("kcat").args([
            "-P",
            "-b",
            addr,
            "-t",
            topic,
            "-p",
            "0",
            "-z",
            codec,
            "-K",
            ":",
            "-X",
            "linger.ms=300",
        ]),
        Some(lines.as_bytes()),
    );
    assert!(r.ok, "kcat producing to {topic}:\n{}", r.transcript());
    // kcat may exit 0 after a failed delivery: read the topic back.
    let n = N.to_string();
    let r = run(
        Command::new("kcat").args([
            "-C",
            "-b",
            addr,
            "-t",
            topic,
            "-p",
            "0",
            "-o",
            "beginning",
            "-c",
            &n,
            "-e",
            "-q",
        ]),
        None,
    );
    assert!(
        r.ok && r.stdout.lines().count() == N,
        "kcat reading back {topic}:\n{}",
        r.transcript()
    );
}

/// One kcat topic per codec, zstd included: `kc-<codec>`.
fn kcat_topics(addr: &str) {
    for codec in LEGACY_CODECS.iter().chain(&["zstd"]) {
        kcat_produce(addr, &format!("kc-{codec}"), codec);
    }
}

// ---------------------------------------------------------------------------------------
// kafka-python

fn kafka_python(args: &[&str]) -> Run {
    run(
        Command::new("python3")
            .arg(tests_dir().join("kafka_python_legacy.py"))
            .args(args),
        None,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafka_python_with_old_api_versions() {
    const TEST: &str = "the kafka-python legacy test";
    let probe = Command::new("python3")
        .args(["-c", "import kafka, snappy, lz4, xxhash"])
        .output();
    if !probe.as_ref().is_ok_and(|o| o.status.success()) {
        let why = probe.map_or_else(
            |e| e.to_string(),
            |o| String::from_utf8_lossy(&o.stderr).into_owned(),
        );
        return unavailable(
            TEST,
            &format!("python3 with kafka-python, snappy, lz4, xxhash: {why}"),
        );
    }
    if !have_kcat() {
        return unavailable(TEST, "kcat not found");
    }
    let dir = tempfile::tempdir().unwrap();
    let broker = start_broker(&dir).await;
    let addr = broker.addr.clone();
    let n = N.to_string();
    for (api, timestamps) in [("0.10.1", true), ("0.9", false)] {
        for codec in LEGACY_CODECS {
            let topic = format!("kp-{api}-{codec}");
            let p = kafka_python(&["produce", api, &addr, &topic, &n, codec, "kp"]);
            assert!(
                p.ok,
                "kafka-python {api} producing {codec}:\n{}",
                p.transcript()
            );
            let want = produced("kp", timestamps);
            for reader in [api, "auto"] {
                let c = kafka_python(&["consume", reader, &addr, &topic, &n, "20"]);
                assert!(
                    c.ok,
                    "kafka-python {reader} reading {topic}:\n{}",
                    c.transcript()
                );
                assert_eq!(
                    c.records(),
                    want,
                    "kafka-python {reader} reading {topic}:\n{}",
                    c.transcript()
                );
            }
        }
    }
    kcat_topics(&addr);
    for (api, timestamps) in [("0.10.1", true), ("0.9", false)] {
        for codec in LEGACY_CODECS {
            let topic = format!("kc-{codec}");
            let c = kafka_python(&["consume", api, &addr, &topic, &n, "20"]);
            check_kcat_records(&format!("kafka-python {api}"), &topic, &c, timestamps);
        }
        // zstd cannot be down-converted: nothing arrives.
        let c = kafka_python(&["consume", api, &addr, "kc-zstd", &n, "4"]);
        check_zstd_refused(&format!("kafka-python {api}"), &c, None);
    }
    let v = versions_used(&broker, "kafka-python-0.10.1");
    assert_eq!(api_versions(&v, PRODUCE), [2], "{v:?}");
    assert_eq!(api_versions(&v, FETCH), [3], "{v:?}");
    let v = versions_used(&broker, "kafka-python-0.9");
    assert_eq!(api_versions(&v, PRODUCE), [1], "{v:?}");
    assert_eq!(api_versions(&v, FETCH), [1], "{v:?}");
    // The current client reads magic 2 as stored.
    let v = versions_used(&broker, "kafka-python-auto");
    assert!(api_versions(&v, FETCH).iter().all(|&f| f >= 4), "{v:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn librdkafka_told_the_broker_is_kafka_0_9() {
    const TEST: &str = "the librdkafka 0.9 fallback test";
    let probe = Command::new("python3")
        .args(["-c", "import confluent_kafka"])
        .output();
    if !probe.as_ref().is_ok_and(|o| o.status.success()) {
        return unavailable(TEST, "python3 with confluent-kafka not found");
    }
    if !have_kcat() {
        return unavailable(TEST, "kcat not found");
    }
    let dir = tempfile::tempdir().unwrap();
    let broker = start_broker(&dir).await;
    let addr = broker.addr.clone();
    let n = N.to_string();
    let script = tests_dir().join("confluent_legacy.py");
    let rd = |args: &[&str]| run(Command::new("python3").arg(&script).args(args), None);
    for codec in LEGACY_CODECS {
        let topic = format!("rk-{codec}");
        let p = rd(&["produce", &addr, &topic, &n, codec, "rk"]);
        assert!(p.ok, "librdkafka producing {codec}:\n{}", p.transcript());
        let c = rd(&["consume", &addr, &topic, &n]);
        assert!(c.ok, "librdkafka reading {topic}:\n{}", c.transcript());
        assert_eq!(c.records(), produced("rk", false), "{}", c.transcript());
    }
    // v2 batches down-converted to magic 0, lz4 as a standard frame included.
    kcat_topics(&addr);
    for codec in LEGACY_CODECS {
        let topic = format!("kc-{codec}");
        let c = rd(&["consume", &addr, &topic, &n]);
        check_kcat_records("librdkafka 0.9", &topic, &c, false);
    }
    let c = rd(&["consume", &addr, "kc-zstd", &n]);
    check_zstd_refused("librdkafka 0.9", &c, Some("UNSUPPORTED_COMPRESSION_TYPE"));
    let v = versions_used(&broker, "librdkafka-0.9.0");
    assert_eq!(api_versions(&v, PRODUCE), [1], "{v:?}");
    assert_eq!(api_versions(&v, FETCH), [1], "{v:?}");
}

// ---------------------------------------------------------------------------------------
// Go: kafka-go and sarama from Debian's packages

const GOCODE: &str = "/usr/share/gocode";

/// The built Go programs, or why they cannot be built.
fn go_programs() -> &'static Result<(PathBuf, PathBuf), String> {
    static BUILT: OnceLock<Result<(PathBuf, PathBuf), String>> = OnceLock::new();
    BUILT.get_or_init(|| {
        let go = Command::new("go").arg("version").output();
        if !go.as_ref().is_ok_and(|o| o.status.success()) {
            return Err("go not found (Debian: golang-go)".into());
        }
        for (pkg, deb) in [
            (
                "github.com/segmentio/kafka-go",
                "golang-github-segmentio-kafka-go-dev",
            ),
            (
                "github.com/Shopify/sarama",
                "golang-github-shopify-sarama-dev",
            ),
        ] {
            if !Path::new(GOCODE).join("src").join(pkg).is_dir() {
                return Err(format!("{pkg} not in {GOCODE} (Debian: {deb})"));
            }
        }
        let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("legacy-go");
        std::fs::create_dir_all(&out_dir).map_err(|e| e.to_string())?;
        let mut built = Vec::new();
        for name in ["kafkago", "sarama"] {
            let bin = out_dir.join(name);
            let r = run(
                Command::new("go")
                    .args(["build", "-o"])
                    .arg(&bin)
                    .arg(".")
                    .current_dir(tests_dir().join(name))
                    .env("GO111MODULE", "off")
                    .env(
                        "GOPATH",
                        format!("{}:{GOCODE}", out_dir.join("gopath").display()),
                    )
                    .env("GOCACHE", out_dir.join("cache"))
                    .env("GOFLAGS", ""),
                None,
            );
            if !r.ok {
                return Err(format!(
                    "go build of tests/legacy/{name} failed:\n{}",
                    r.transcript()
                ));
            }
            built.push(bin);
        }
        let sarama = built.pop().unwrap_or_default();
        let kafkago = built.pop().unwrap_or_default();
        Ok((kafkago, sarama))
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafka_go_0_2_1() {
    const TEST: &str = "the kafka-go 0.2.1 test";
    let kafkago = match go_programs() {
        Ok((k, _)) => k.clone(),
        Err(why) => return unavailable(TEST, why),
    };
    if !have_kcat() {
        return unavailable(TEST, "kcat not found");
    }
    let dir = tempfile::tempdir().unwrap();
    let broker = start_broker(&dir).await;
    let addr = broker.addr.clone();
    let n = N.to_string();
    let go = |args: &[&str]| run(Command::new(&kafkago).args(args), None);
    for codec in LEGACY_CODECS {
        let topic = format!("kg-{codec}");
        let p = go(&["produce", &addr, &topic, &n, codec, "kg"]);
        assert!(p.ok, "kafka-go producing {codec}:\n{}", p.transcript());
        let c = go(&["consume", &addr, &topic, &n]);
        assert!(c.ok, "kafka-go reading {topic}:\n{}", c.transcript());
        assert_eq!(c.records(), produced("kg", true), "{}", c.transcript());
    }
    kcat_topics(&addr);
    for codec in LEGACY_CODECS {
        let topic = format!("kc-{codec}");
        let c = go(&["consume", &addr, &topic, &n]);
        check_kcat_records("kafka-go", &topic, &c, true);
    }
    // Error 76: UNSUPPORTED_COMPRESSION_TYPE.
    let c = go(&["consume", &addr, "kc-zstd", &n]);
    check_zstd_refused("kafka-go", &c, Some("[76]"));
    let v = versions_used(&broker, "kafka-go-0.2.1");
    assert_eq!(api_versions(&v, PRODUCE), [2], "{v:?}");
    assert_eq!(api_versions(&v, FETCH), [2], "{v:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sarama_1_22_1_for_old_kafka_versions() {
    const TEST: &str = "the sarama 1.22.1 test";
    let sarama = match go_programs() {
        Ok((_, s)) => s.clone(),
        Err(why) => return unavailable(TEST, why),
    };
    if !have_kcat() {
        return unavailable(TEST, "kcat not found");
    }
    let dir = tempfile::tempdir().unwrap();
    let broker = start_broker(&dir).await;
    let addr = broker.addr.clone();
    let n = N.to_string();
    kcat_topics(&addr);
    let go = |args: &[&str]| run(Command::new(&sarama).args(args), None);
    // (version, magic 1, produce version, fetch version)
    let versions = [
        ("0.8.2", false, 0, 0),
        ("0.9", false, 0, 1),
        ("0.10.0", true, 2, 2),
        ("0.10.2", true, 2, 3),
    ];
    for (version, magic1, produce_v, fetch_v) in versions {
        // sarama refuses lz4 before 0.10 (Kafka 0.9's lz4 framing was broken).
        let codecs: &[&str] = if magic1 {
            &LEGACY_CODECS
        } else {
            &LEGACY_CODECS[..3]
        };
        for codec in codecs {
            let topic = format!("sa-{version}-{codec}");
            let p = go(&["produce", version, &addr, &topic, &n, codec, "sa"]);
            assert!(
                p.ok,
                "sarama {version} producing {codec}:\n{}",
                p.transcript()
            );
            let c = go(&["consume", version, &addr, &topic, &n]);
            assert!(
                c.ok,
                "sarama {version} reading {topic}:\n{}",
                c.transcript()
            );
            assert_eq!(c.records(), produced("sa", magic1), "{}", c.transcript());
        }
        // Reading v2 batches, lz4 included (as a standard frame even in magic 0).
        for codec in LEGACY_CODECS {
            let topic = format!("kc-{codec}");
            let c = go(&["consume", version, &addr, &topic, &n]);
            check_kcat_records(&format!("sarama {version}"), &topic, &c, magic1);
        }
        let c = go(&["consume", version, &addr, "kc-zstd", &n]);
        let marker = "does not support the compression type";
        check_zstd_refused(&format!("sarama {version}"), &c, Some(marker));
        let v = versions_used(&broker, &format!("sarama-{version}"));
        assert_eq!(api_versions(&v, PRODUCE), [produce_v], "{version}: {v:?}");
        assert_eq!(api_versions(&v, FETCH), [fetch_v], "{version}: {v:?}");
    }
}

// ---------------------------------------------------------------------------------------
// Raw requests: which versions take which formats

async fn request(conn: &Connection, body: RequestBody, version: i16) -> ResponseBody {
    let api = body.api_key();
    tokio::time::timeout(REQUEST_TIMEOUT, conn.request_at(body, version))
        .await
        .unwrap_or_else(|_| panic!("{api:?} got no answer within {REQUEST_TIMEOUT:?}"))
        .unwrap_or_else(|e| panic!("{api:?} failed: {e}"))
}

async fn create_topic(conn: &Connection, name: &str, configs: &[(&str, &str)]) {
    let body = RequestBody::CreateTopics(CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: KStr::from(name.to_owned()),
            num_partitions: 1,
            replication_factor: 1,
            configs: configs
                .iter()
                .map(|(k, v)| CreatableTopicConfig {
                    name: KStr::from((*k).to_owned()),
                    value: Some(KStr::from((*v).to_owned())),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }],
        timeout_ms: 10_000,
        ..Default::default()
    });
    let ResponseBody::CreateTopics(resp) = request(conn, body, 5).await else {
        panic!("CreateTopics answered with another body");
    };
    assert_eq!(resp.topics[0].error_code, 0, "{:?}", resp.topics[0]);
}

/// The error code of producing `records` to partition 0 of `topic` at `version`.
async fn produce(conn: &Connection, topic: &str, records: Bytes, version: i16) -> i16 {
    let body = RequestBody::Produce(ProduceRequest {
        acks: -1,
        timeout_ms: 10_000,
        topic_data: vec![TopicProduceData {
            name: KStr::from(topic.to_owned()),
            partition_data: vec![PartitionProduceData {
                index: 0,
                records: Some(records),
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    });
    let ResponseBody::Produce(resp) = request(conn, body, version).await else {
        panic!("Produce answered with another body");
    };
    resp.responses[0].partition_responses[0].error_code
}

/// The error code and records of fetching partition 0 of `topic` from offset 0 at `version`.
async fn fetch(conn: &Connection, topic: &str, version: i16) -> (i16, Bytes) {
    fetch_at(conn, topic, version, 0, 1 << 20).await
}

/// [`fetch`] from `offset`, with `max_bytes` for the partition (and the response).
async fn fetch_at(
    conn: &Connection,
    topic: &str,
    version: i16,
    offset: i64,
    max_bytes: i32,
) -> (i16, Bytes) {
    let body = RequestBody::Fetch(Box::new(FetchRequest {
        replica_id: -1,
        max_wait_ms: 0,
        max_bytes,
        topics: vec![FetchTopic {
            topic: KStr::from(topic.to_owned()),
            partitions: vec![FetchPartition {
                partition: 0,
                fetch_offset: offset,
                partition_max_bytes: max_bytes,
                current_leader_epoch: -1,
                log_start_offset: -1,
                last_fetched_epoch: -1,
                ..Default::default()
            }],
            ..Default::default()
        }],
        ..Default::default()
    }));
    let ResponseBody::Fetch(resp) = request(conn, body, version).await else {
        panic!("Fetch answered with another body");
    };
    let p = &resp.responses[0].partitions[0];
    (p.error_code, p.records.clone().unwrap_or_default())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn message_formats_by_request_version() {
    let dir = tempfile::tempdir().unwrap();
    let broker = start_broker(&dir).await;
    let conn = Connection::connect(&broker.addr, ConnectionConfig::default())
        .await
        .unwrap();
    let mut legacy = LegacyMessageSetBuilder::new(1, Compression::Gzip, 0).unwrap();
    legacy
        .append(BASE_TIMESTAMP, Some(b"k"), Some(b"v"))
        .unwrap();
    let legacy = legacy.build().unwrap();
    let zstd = {
        let mut b = RecordBatchBuilder::new().compression(Compression::Zstd);
        b.append(BASE_TIMESTAMP, Some(b"k"), Some(b"z"), &[])
            .unwrap();
        b.build().unwrap()
    };
    let code = ErrorCode;
    for t in ["fmt", "fmt-zstd"] {
        create_topic(&conn, t, &[]).await;
    }
    assert_eq!(
        code(produce(&conn, "fmt", legacy.clone(), 2).await),
        ErrorCode::NONE
    );
    for v in [3, 9, 11] {
        assert_eq!(
            code(produce(&conn, "fmt", legacy.clone(), v).await),
            ErrorCode::INVALID_RECORD,
            "magic 1 at Produce v{v}"
        );
    }
    for v in [2, 3, 6] {
        assert_eq!(
            code(produce(&conn, "fmt-zstd", zstd.clone(), v).await),
            ErrorCode::UNSUPPORTED_COMPRESSION_TYPE,
            "zstd at Produce v{v}"
        );
    }
    assert_eq!(
        code(produce(&conn, "fmt-zstd", zstd, 7).await),
        ErrorCode::NONE
    );
    // The legacy set was stored as a v2 batch and is served in each format.
    let (err, records) = fetch(&conn, "fmt", 11).await;
    assert_eq!((err, records.get(16).copied()), (0, Some(2)));
    for (v, magic) in [(0, 0), (1, 0), (2, 1), (3, 1)] {
        let (err, records) = fetch(&conn, "fmt", v).await;
        assert_eq!(
            (err, records.get(16).copied()),
            (0, Some(magic)),
            "Fetch v{v}"
        );
    }
    for v in [0, 3, 4, 9] {
        let (err, records) = fetch(&conn, "fmt-zstd", v).await;
        assert_eq!(
            code(err),
            ErrorCode::UNSUPPORTED_COMPRESSION_TYPE,
            "zstd at Fetch v{v}"
        );
        assert!(records.is_empty());
    }
    let (err, records) = fetch(&conn, "fmt-zstd", 10).await;
    assert_eq!((err, records.get(16).copied()), (0, Some(2)));
    // Down-conversion is bounded by the partition's max_bytes (whole messages), but always
    // answers the first batch, and fetching on from its end reads everything once.
    create_topic(&conn, "fmt-bound", &[]).await;
    for i in 0..30 {
        let mut set = LegacyMessageSetBuilder::new(1, Compression::None, 0).unwrap();
        for j in 0..3 {
            let value = format!("value-{}", i * 3 + j);
            set.append(BASE_TIMESTAMP, None, Some(value.as_bytes()))
                .unwrap();
        }
        let records = set.build().unwrap();
        assert_eq!(
            code(produce(&conn, "fmt-bound", records, 2).await),
            ErrorCode::NONE
        );
    }
    for (version, max) in [(0, 250), (2, 250), (3, 600), (2, 1)] {
        let mut offset = 0;
        let mut fetches = 0;
        while offset < 90 {
            let (err, records) = fetch_at(&conn, "fmt-bound", version, offset, max).await;
            assert_eq!(err, 0);
            let msgs: Vec<_> = LegacyRecords::new(records.clone(), 1 << 20)
                .map(Result::unwrap)
                .collect();
            assert!(!msgs.is_empty(), "Fetch v{version} max {max} at {offset}");
            assert!(
                records.len() <= max as usize || msgs.len() == 3,
                "Fetch v{version}: {} bytes for max_bytes {max}",
                records.len()
            );
            for m in &msgs {
                assert_eq!(m.offset, offset);
                assert_eq!(
                    m.value.as_deref(),
                    Some(format!("value-{offset}").as_bytes())
                );
                offset += 1;
            }
            fetches += 1;
        }
        assert!(
            fetches > 1,
            "Fetch v{version} max {max}: one answer held everything"
        );
    }
    // Magic 0 messages have no timestamp: a topic's timestamp window does not refuse them
    // (Kafka skips records without one), while a magic 1 message outside it is refused.
    let window = [("message.timestamp.before.max.ms", "60000")];
    create_topic(&conn, "fmt-window", &window).await;
    let mut v0 = LegacyMessageSetBuilder::new(0, Compression::None, 0).unwrap();
    v0.append(0, Some(b"k"), Some(b"v0")).unwrap();
    assert_eq!(
        code(produce(&conn, "fmt-window", v0.build().unwrap(), 0).await),
        ErrorCode::NONE
    );
    assert_eq!(
        code(produce(&conn, "fmt-window", legacy, 2).await),
        ErrorCode::INVALID_TIMESTAMP
    );
}
