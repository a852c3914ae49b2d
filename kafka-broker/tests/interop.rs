//! Third-party clients against the broker: kcat, kafka-python and confluent-kafka (librdkafka)
//! run as subprocesses (scripts in `tests/interop/`) against a broker started in this process
//! on 127.0.0.1:0 with a temporary data directory.
//!
//! Every scenario is one or more steps (`python3 tests/interop/<client>.py <command> ...`),
//! each with a time limit. A scenario passes when every step exits 0. The scenarios listed in
//! `tests/interop/tests.allow` must pass; the others are reported as known gaps (see
//! `tests/interop/FINDINGS.md`), and one that passes without being listed is reported so it
//! can be added.
//!
//! A missing peer (kcat, a python module) skips its scenarios with a notice, unless
//! `KAFKA_RS_REQUIRE_PEERS=1` (set by `.ci/run`), where it fails the test.
//! `KAFKA_RS_INTEROP_ONLY=<substring>` runs only the scenarios whose name contains it.
//!
//! A scenario needing an api the broker does not advertise yet is reported as a gap without
//! running it (librdkafka would retry until its timeout); `KAFKA_RS_INTEROP_FORCE=1` runs it
//! anyway.
#![allow(clippy::unwrap_used)]

#[path = "common/in_process.rs"]
#[allow(dead_code)]
mod in_process;

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use in_process::InProcessBroker;
use kafka_broker::handler::SUPPORTED;
use kafka_protocol::messages::ApiKey;

/// Time limit of one step (one subprocess).
const STEP_TIMEOUT: Duration = Duration::from_secs(60);
/// What the scripts get as their own deadline for waits, below the step limit so that they
/// report what they saw instead of being killed.
const SCRIPT_TIMEOUT_SECS: u32 = 30;
/// No scenario starts after this much time; the rest are reported as not run.
const SUITE_BUDGET: Duration = Duration::from_secs(240);
/// Scenarios run side by side (each is mostly waiting on a client library or the broker).
const PARALLEL: usize = 3;
/// Partitions of every auto-created topic.
const PARTITIONS: i32 = 3;
/// Exit code of a script whose peer (kcat, a python module) is missing.
const EXIT_MISSING_PEER: i32 = 3;

const CODECS: [&str; 5] = ["none", "gzip", "snappy", "lz4", "zstd"];

fn peers_required() -> bool {
    std::env::var("KAFKA_RS_REQUIRE_PEERS").is_ok_and(|v| v == "1")
}

fn scripts_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop")
}

/// One subprocess: a client script, its command and extra arguments.
#[derive(Debug, Clone)]
struct Step {
    script: &'static str,
    command: &'static str,
    args: Vec<String>,
}

fn step(script: &'static str, command: &'static str, args: &[&str]) -> Step {
    Step {
        script,
        command,
        args: args.iter().map(|s| (*s).to_owned()).collect(),
    }
}

#[derive(Debug, Clone)]
struct Scenario {
    name: String,
    steps: Vec<Step>,
}

const KCAT: &str = "kcat_client.py";
const KP: &str = "kafka_python_client.py";
const CK: &str = "confluent_client.py";
/// kafka-python 2.3.3, loaded from `KAFKA_RS_KAFKA_PYTHON2_PATH` (see the script).
const KP2: &str = "kafka_python2_client.py";

impl Step {
    /// The apis the broker must implement for this step to have a chance.
    fn needs(&self) -> Vec<ApiKey> {
        let mut apis = match self.command {
            "produce" => vec![ApiKey::Produce],
            "consume" => vec![ApiKey::Fetch, ApiKey::ListOffsets],
            "lines" => vec![ApiKey::Produce, ApiKey::Fetch, ApiKey::ListOffsets],
            "offsets-for-times" | "list-offsets" | "offsets-for-past-times" => {
                vec![ApiKey::ListOffsets]
            }
            "produce-past" => vec![ApiKey::Produce, ApiKey::ListOffsets],
            "authorized-ops" => vec![
                ApiKey::Metadata,
                ApiKey::Produce,
                ApiKey::FindCoordinator,
                ApiKey::JoinGroup,
                ApiKey::SyncGroup,
                ApiKey::DescribeGroups,
            ],
            "seek-with-epoch" => vec![ApiKey::Fetch, ApiKey::OffsetForLeaderEpoch],
            "delete-records" => vec![ApiKey::DeleteRecords, ApiKey::ListOffsets, ApiKey::Fetch],
            "live-tail" | "large-records" | "too-large" | "log-append-time" => {
                vec![ApiKey::Produce, ApiKey::Fetch]
            }
            c if c.starts_with("group-") => vec![
                ApiKey::FindCoordinator,
                ApiKey::JoinGroup,
                ApiKey::SyncGroup,
                ApiKey::Heartbeat,
                ApiKey::OffsetCommit,
                ApiKey::OffsetFetch,
            ],
            _ => vec![],
        };
        // kafka-python's producer is idempotent by default; the scripts turn that off unless
        // asked, but librdkafka and kafka-python both need InitProducerId when it is on.
        if self.args.iter().any(|a| a == "--idempotent") {
            apis.push(ApiKey::InitProducerId);
        }
        apis
    }
}

fn advertised(api: ApiKey) -> bool {
    SUPPORTED.iter().any(|(k, _, _)| *k == api)
}

fn client_name(script: &str) -> &'static str {
    match script {
        KCAT => "kcat",
        KP => "kafka-python",
        KP2 => "kafka-python2",
        _ => "confluent",
    }
}

/// Every scenario, in a fixed order.
fn scenarios() -> Vec<Scenario> {
    let mut all = Vec::new();
    let mut add = |name: String, steps: Vec<Step>| all.push(Scenario { name, steps });

    // kcat: metadata, a file of lines produced and consumed back exactly.
    add("kcat.metadata".into(), vec![step(KCAT, "metadata", &[])]);
    for codec in CODECS {
        let name = if codec == "none" {
            "kcat.lines".to_owned()
        } else {
            format!("kcat.lines.{codec}")
        };
        add(name, vec![step(KCAT, "lines", &["--compression", codec])]);
    }

    // Each library on its own.
    for client in [KP, CK] {
        let c = client_name(client);
        add(format!("{c}.metadata"), vec![step(client, "metadata", &[])]);
        for codec in CODECS {
            add(
                format!("{c}.roundtrip.{codec}"),
                vec![
                    step(client, "produce", &["--compression", codec]),
                    step(client, "consume", &["--compression", codec]),
                ],
            );
        }
        add(
            format!("{c}.idempotent"),
            vec![
                step(client, "produce", &["--idempotent", "--compression", "lz4"]),
                step(client, "consume", &["--compression", "lz4"]),
            ],
        );
        add(
            format!("{c}.offsets-for-times"),
            vec![
                step(client, "produce", &[]),
                step(client, "offsets-for-times", &[]),
            ],
        );
        add(
            format!("{c}.delete-records"),
            vec![
                step(client, "produce", &[]),
                step(client, "delete-records", &[]),
            ],
        );
        add(
            format!("{c}.admin-topics"),
            vec![step(client, "admin-topics", &[])],
        );
        add(
            format!("{c}.admin-configs"),
            vec![step(client, "admin-configs", &[])],
        );
    }

    add(
        "kafka-python.list-offsets".into(),
        vec![step(KP, "produce", &[]), step(KP, "list-offsets", &[])],
    );
    add(
        "kafka-python.config-details".into(),
        vec![step(KP, "config-details", &[])],
    );
    // Issue 13: kafka-python 2.3.3 decodes the authorized-operations bit fields of Metadata
    // and DescribeGroups (its describe_cluster raised on INT32_MIN, which means "not asked").
    add(
        "kafka-python2.authorized-ops".into(),
        vec![step(KP2, "authorized-ops", &[])],
    );
    // Issue 13: librdkafka (linger.ms=50) writes 100 records two hours old, one second
    // apart; librdkafka's and kafka-python's offsets_for_times must both find them.
    add(
        "confluent.offsets-for-past-times".into(),
        vec![
            step(CK, "produce-past", &["--count", "100"]),
            step(KP, "offsets-for-past-times", &["--count", "100"]),
        ],
    );
    add(
        "confluent.seek-with-epoch".into(),
        vec![step(CK, "produce", &[]), step(CK, "seek-with-epoch", &[])],
    );
    add(
        "kafka-python.acks0".into(),
        vec![
            step(KP, "produce", &["--acks", "0", "--compression", "gzip"]),
            step(KP, "consume", &["--compression", "gzip"]),
        ],
    );
    // Broker behaviour seen through librdkafka.
    for (name, command) in [
        ("confluent.live-tail", "live-tail"),
        ("confluent.large-records", "large-records"),
        ("confluent.too-large", "too-large"),
        ("confluent.log-append-time", "log-append-time"),
    ] {
        add(name.into(), vec![step(CK, command, &[])]);
    }

    // Produced by one client, consumed by another.
    for (from, to) in [(KP, CK), (CK, KP)] {
        for codec in CODECS {
            add(
                format!("cross.{}-to-{}.{codec}", client_name(from), client_name(to)),
                vec![
                    step(from, "produce", &["--compression", codec]),
                    step(to, "consume", &["--compression", codec]),
                ],
            );
        }
    }
    for (from, to, codec) in [
        (KCAT, KP, "gzip"),
        (KCAT, CK, "snappy"),
        (KP, KCAT, "lz4"),
        (CK, KCAT, "zstd"),
    ] {
        add(
            format!("cross.{}-to-{}.{codec}", client_name(from), client_name(to)),
            vec![
                step(
                    from,
                    "produce",
                    &["--style", "text", "--compression", codec],
                ),
                step(to, "consume", &["--style", "text", "--compression", codec]),
            ],
        );
    }

    // Consumer groups (subscribe, rebalances, committed offsets), with short session
    // timeouts (6 s) and the broker's group.initial.rebalance.delay.ms at 0.
    // 3 members on a 6-partition topic, one leaves, the other two take over.
    for strategy in ["range", "roundrobin", "cooperative-sticky"] {
        add(
            format!("confluent.group.{strategy}"),
            vec![step(CK, "group-rebalance", &["--strategy", strategy])],
        );
    }
    // A member killed with SIGKILL is expired after its session timeout.
    add(
        "confluent.group.kill".into(),
        vec![step(CK, "group-kill", &[])],
    );
    // Two groups on one topic: each gets every record, each keeps its own offsets.
    add(
        "confluent.group.broadcast".into(),
        vec![step(CK, "group-broadcast", &[])],
    );
    add(
        "kafka-python.group.members".into(),
        vec![step(KP, "group-members", &[])],
    );
    // kcat -G consumes everything and commits; kafka-python reads the committed offsets.
    add(
        "kcat.group".into(),
        vec![
            step(KCAT, "produce", &["--style", "text"]),
            step(KCAT, "group-consume", &["--style", "text"]),
            step(KP, "group-check-end", &[]),
        ],
    );
    // Offsets (and metadata) committed by a member of one library, read by the other.
    for (from, to) in [(CK, KP), (KP, CK)] {
        add(
            format!(
                "cross.group-offsets.{}-to-{}",
                client_name(from),
                client_name(to)
            ),
            vec![
                step(from, "produce", &[]),
                step(from, "group-commit", &[]),
                step(to, "group-committed", &[]),
            ],
        );
    }
    all
}

#[derive(Debug)]
enum Outcome {
    Passed,
    Failed(String),
    MissingPeer(String),
    NotRun(String),
}

#[derive(Debug)]
struct Ran {
    name: String,
    outcome: Outcome,
    took: Duration,
}

/// A stable seed per scenario (FNV-1a of the name).
fn seed(name: &str) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in name.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h & 0x7fff_ffff
}

fn topic_for(name: &str) -> String {
    // Scenario names only use [a-z0-9.-], all legal in topic names.
    format!("it-{name}")
}

/// The python interpreter itself (`python3` may be a slow wrapper script, e.g. pyenv's shim).
fn python() -> Option<PathBuf> {
    let out = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .ok()?;
    let path = String::from_utf8(out.stdout).ok()?.trim().to_owned();
    (out.status.success() && !path.is_empty()).then(|| PathBuf::from(path))
}

/// Runs one step with a time limit; returns the exit code (None: killed on timeout) and
/// its combined output.
fn run_step(
    python: &Path,
    addr: SocketAddr,
    scenario: &str,
    s: &Step,
    out_dir: &Path,
) -> (Option<i32>, String) {
    let log_path = out_dir.join(format!(
        "{scenario}.{}.{}.log",
        client_name(s.script),
        s.command
    ));
    let log = std::fs::File::create(&log_path).unwrap();
    let mut cmd = Command::new(python);
    cmd.current_dir(scripts_dir())
        .arg(s.script)
        .arg(s.command)
        .args(["--bootstrap", &addr.to_string()])
        .args(["--topic", &topic_for(scenario)])
        .args(["--seed", &seed(scenario).to_string()])
        .args(["--partitions", &PARTITIONS.to_string()])
        .args(["--timeout", &SCRIPT_TIMEOUT_SECS.to_string()])
        .args(&s.args)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONUNBUFFERED", "1")
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return (Some(EXIT_MISSING_PEER), format!("cannot run python3: {e}")),
    };
    let deadline = Instant::now() + STEP_TIMEOUT;
    let code = loop {
        match child.try_wait().unwrap() {
            Some(status) => break Some(status.code().unwrap_or(-1)),
            None if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            None => std::thread::sleep(Duration::from_millis(25)),
        }
    };
    let output = std::fs::read_to_string(&log_path).unwrap_or_default();
    (code, output)
}

fn run_scenario(python: &Path, addr: SocketAddr, sc: &Scenario, out_dir: &Path) -> Outcome {
    let force = std::env::var("KAFKA_RS_INTEROP_FORCE").is_ok_and(|v| v == "1");
    let missing: BTreeSet<String> = sc
        .steps
        .iter()
        .flat_map(Step::needs)
        .filter(|api| !advertised(*api))
        .map(|api| format!("{api:?}"))
        .collect();
    if !missing.is_empty() && !force {
        return Outcome::Failed(format!(
            "not run: the broker does not implement {missing:?} yet\n"
        ));
    }
    let mut transcript = String::new();
    for s in &sc.steps {
        let (code, output) = run_step(python, addr, &sc.name, s, out_dir);
        let _ = writeln!(
            transcript,
            "--- {} {} {} ({})",
            client_name(s.script),
            s.command,
            s.args.join(" "),
            match code {
                Some(c) => format!("exit {c}"),
                None => format!("killed after {} s", STEP_TIMEOUT.as_secs()),
            }
        );
        transcript.push_str(&tail(&output, 40));
        match code {
            Some(0) => {}
            Some(EXIT_MISSING_PEER) => {
                let why = output
                    .lines()
                    .find_map(|l| l.strip_prefix("MISSING PEER: "))
                    .unwrap_or("a peer is missing")
                    .to_owned();
                return Outcome::MissingPeer(why);
            }
            _ => return Outcome::Failed(transcript),
        }
    }
    Outcome::Passed
}

/// A failing step's header line and its `FAIL:` line (or its last lines).
fn brief(transcript: &str) -> String {
    let Some(start) = transcript.rfind("--- ") else {
        return tail(transcript, 3);
    };
    let last = &transcript[start..];
    let mut lines = last.lines();
    let header = lines.next().unwrap_or_default();
    let rest: Vec<&str> = lines.collect();
    let mut out = format!("    {header}\n");
    match rest.iter().find(|l| l.trim_start().starts_with("FAIL:")) {
        Some(l) => {
            let _ = writeln!(out, "    {}", truncate(l.trim_start(), 300));
        }
        None => out.push_str(&tail(&rest.join("\n"), 3)),
    }
    out
}

/// The last `n` lines of `s`.
fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    let start = lines.len().saturating_sub(n);
    let mut out = String::new();
    if start > 0 {
        let _ = writeln!(out, "    [... {start} lines ...]");
    }
    for l in &lines[start..] {
        let _ = writeln!(out, "    {}", truncate(l, 400));
    }
    out
}

fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Scenario names from the allow-list file (`#` comments, blank lines ignored).
fn allow_list() -> BTreeSet<String> {
    let path = scripts_dir().join("tests.allow");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    text.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

#[test]
fn third_party_clients() {
    let Some(python) = python() else {
        assert!(
            !peers_required(),
            "KAFKA_RS_REQUIRE_PEERS=1 but python3 cannot run"
        );
        eprintln!("NOTICE: skipping the interop suite: python3 cannot run");
        return;
    };
    let all = scenarios();
    let known: BTreeSet<String> = all.iter().map(|s| s.name.clone()).collect();
    let allowed = allow_list();
    let unknown: Vec<&String> = allowed.difference(&known).collect();
    assert!(
        unknown.is_empty(),
        "tests.allow names scenarios that do not exist: {unknown:?}"
    );
    let only = std::env::var("KAFKA_RS_INTEROP_ONLY").ok();
    let selected: Vec<Scenario> = all
        .into_iter()
        .filter(|s| only.as_deref().is_none_or(|o| s.name.contains(o)))
        .collect();

    // Group scenarios: no wait for more members when a group forms (the shared broker's
    // default); every auto-created topic with PARTITIONS partitions.
    let partitions = PARTITIONS.to_string();
    let broker = InProcessBroker::start(&[("num.partitions", partitions.as_str())]);
    let out_dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let queue = Mutex::new(selected.iter());
    let results = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..PARALLEL {
            scope.spawn(|| {
                loop {
                    let Some(sc) = queue.lock().unwrap().next() else {
                        break;
                    };
                    let t = Instant::now();
                    let outcome = if started.elapsed() > SUITE_BUDGET {
                        Outcome::NotRun(format!(
                            "the suite's {} s budget was used up",
                            SUITE_BUDGET.as_secs()
                        ))
                    } else {
                        run_scenario(&python, broker.addr, sc, out_dir.path())
                    };
                    results.lock().unwrap().push(Ran {
                        name: sc.name.clone(),
                        outcome,
                        took: t.elapsed(),
                    });
                }
            });
        }
    });
    broker.stop();
    let mut results = results.into_inner().unwrap();
    results.sort_by(|a, b| a.name.cmp(&b.name));

    let mut report = String::new();
    let mut must_fix = Vec::new();
    let (mut passed, mut failed, mut skipped) = (0, 0, 0);
    for r in &results {
        let listed = allowed.contains(&r.name);
        let (label, detail) = match &r.outcome {
            Outcome::Passed => {
                passed += 1;
                let label = if listed {
                    "pass"
                } else {
                    "PASS (not in tests.allow: add it)"
                };
                (label, None)
            }
            Outcome::Failed(t) => {
                failed += 1;
                if listed {
                    must_fix.push(r.name.clone());
                    ("FAIL (allowed: must pass)", Some(t.clone()))
                } else {
                    ("known gap", Some(t.clone()))
                }
            }
            Outcome::MissingPeer(why) => {
                skipped += 1;
                if peers_required() {
                    must_fix.push(r.name.clone());
                }
                ("skipped: peer missing", Some(format!("    {why}\n")))
            }
            Outcome::NotRun(why) => {
                skipped += 1;
                if listed {
                    must_fix.push(r.name.clone());
                }
                ("not run", Some(format!("    {why}\n")))
            }
        };
        let _ = writeln!(
            report,
            "{:<48} {:>6.1} s  {label}",
            r.name,
            r.took.as_secs_f64()
        );
        // Details for what needs attention; known gaps get a short excerpt.
        if let Some(d) = detail {
            if listed || matches!(r.outcome, Outcome::MissingPeer(_)) {
                report.push_str(&tail(&d, 60));
            } else {
                report.push_str(&brief(&d));
            }
        }
    }
    let _ = writeln!(
        report,
        "interop: {passed} scenarios passed, {failed} failed, {skipped} skipped, in {:.1} s; \
         {} required by tests.allow or KAFKA_RS_REQUIRE_PEERS did not pass",
        started.elapsed().as_secs_f64(),
        must_fix.len(),
    );
    println!("{report}");
    if results
        .iter()
        .any(|r| matches!(r.outcome, Outcome::MissingPeer(_)))
        && !peers_required()
    {
        eprintln!(
            "NOTICE: some interop scenarios were skipped because a peer is missing (install \
             kcat and the python packages as .ci/run does)"
        );
    }
    assert!(
        must_fix.is_empty(),
        "interop scenarios that must pass did not: {must_fix:?}\n{report}"
    );
}
