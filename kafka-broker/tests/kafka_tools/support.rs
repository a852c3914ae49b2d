//! What `tests/kafka_tools.rs` and `tests/kafka_dump_log.rs` share: our broker in this
//! process, Kafka's tools run as their main classes, and readers of the tools' output.
#![allow(dead_code, clippy::unwrap_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use kafka_peers::{Jvm, Run};

/// Time limit of one tool run.
pub(crate) const TOOL_TIMEOUT: Duration = Duration::from_secs(90);

/// Known differences from Apache Kafka (see `tests/kafka_tools/FINDINGS.md`): a check with
/// one of these names that fails is reported, not failed; one that passes is reported so
/// that it can leave the list.
pub(crate) const KNOWN_GAPS: &[&str] = &["configs.broker-alter", "dump-log.producer-snapshot"];

/// A known gap's check: `Ok` when it behaves as Apache Kafka does.
pub(crate) fn gap(name: &str, outcome: Result<(), String>) {
    assert!(KNOWN_GAPS.contains(&name), "{name} is not a known gap");
    match outcome {
        Ok(()) => eprintln!("NOTICE: known gap {name} now passes: take it off KNOWN_GAPS"),
        Err(why) => eprintln!("KNOWN GAP {name} (FINDINGS.md): {}", first_lines(&why, 3)),
    }
}

fn first_lines(s: &str, n: usize) -> String {
    s.lines().take(n).collect::<Vec<_>>().join(" | ")
}

/// Our broker in this process (the shared tests/common/in_process.rs).
pub(crate) use in_process::InProcessBroker as TestBroker;

#[path = "../common/in_process.rs"]
#[allow(dead_code)]
mod in_process;

/// Kafka's tools (and our Java programs) against one broker.
#[derive(Clone)]
pub(crate) struct Tools {
    pub(crate) jvm: Jvm,
    pub(crate) bootstrap: String,
}

impl Tools {
    /// `None` when Apache Kafka's jars are missing (and that is allowed).
    pub(crate) fn find(bootstrap: &str) -> Option<Tools> {
        let jvm = kafka_peers::require(Jvm::find().and_then(Jvm::with_programs))?;
        Some(Tools {
            jvm,
            bootstrap: bootstrap.to_owned(),
        })
    }

    /// Runs `org.apache.kafka.tools.<main>` with `args`; fails the test unless it exits 0.
    pub(crate) fn run(&self, main: &str, args: &[&str], stdin: Option<&str>) -> Run {
        let class = class_of(main);
        self.jvm
            .run(&class, args, stdin.map(str::as_bytes), TOOL_TIMEOUT)
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// The tool with `--bootstrap-server` first.
    pub(crate) fn admin(&self, main: &str, args: &[&str]) -> String {
        let mut all = vec!["--bootstrap-server", self.bootstrap.as_str()];
        all.extend_from_slice(args);
        self.run(main, &all, None).stdout
    }

    /// Runs the tool whatever its exit code (a run past the time limit still fails).
    pub(crate) fn try_run(&self, main: &str, args: &[&str]) -> Run {
        let mut cmd = self.jvm.command(&class_of(main));
        cmd.args(args);
        kafka_peers::run(cmd, None, TOOL_TIMEOUT).unwrap_or_else(|e| panic!("{e}"))
    }
}

fn class_of(main: &str) -> String {
    if main.contains("peers.") || main.starts_with("kafka.") {
        main.to_owned()
    } else {
        format!("org.apache.kafka.tools.{main}")
    }
}

/// A table the tools print: a header line starting with `first` and the rows under it, each
/// row a map from header to value. Tab-separated tables (TransactionsCommand) are split on
/// tabs (an empty cell stays empty); others on whitespace.
pub(crate) fn table(out: &str, first: &str) -> Vec<BTreeMap<String, String>> {
    let mut headers: Option<(Vec<String>, bool)> = None;
    let mut rows = Vec::new();
    for line in out.lines() {
        if line.trim().is_empty() {
            continue;
        }
        if line.split_whitespace().next() == Some(first) {
            let tabs = line.contains('\t');
            headers = Some((split(line, tabs), tabs));
            continue;
        }
        if let Some((h, tabs)) = &headers {
            let mut cells = split(line, *tabs);
            if cells.len() < h.len().saturating_sub(1) || cells.len() > h.len() {
                continue;
            }
            // An empty last cell (a tab-separated row ending in an empty column).
            cells.resize(h.len(), String::new());
            rows.push(h.iter().cloned().zip(cells).collect::<BTreeMap<_, _>>());
        }
    }
    rows
}

fn split(line: &str, tabs: bool) -> Vec<String> {
    if tabs {
        let mut cells: Vec<String> = line.split('\t').map(|c| c.trim().to_owned()).collect();
        while cells.last().is_some_and(String::is_empty) && cells.len() > 1 {
            // A trailing tab after the last header or cell.
            cells.pop();
        }
        cells
    } else {
        line.split_whitespace().map(str::to_owned).collect()
    }
}

/// `Key: value` pairs of one tab-separated line (`Topic: t\tPartition: 0\t...`).
pub(crate) fn fields(line: &str) -> BTreeMap<String, String> {
    line.split('\t')
        .filter_map(|part| {
            let (k, v) = part.trim().split_once(':')?;
            Some((k.trim().to_owned(), v.trim().to_owned()))
        })
        .collect()
}

/// `key: value` pairs of a line where both are single words (`baseOffset: 0 lastOffset: 4
/// count: 5 ...`, as DumpLogSegments prints); `payload`, `key` and a value with spaces are
/// cut at the next space.
pub(crate) fn words(line: &str) -> BTreeMap<String, String> {
    let toks: Vec<&str> = line.trim_start_matches('|').split_whitespace().collect();
    let mut map = BTreeMap::new();
    let mut i = 0;
    while i < toks.len() {
        match toks[i].strip_suffix(':') {
            Some(k) if i + 1 < toks.len() => {
                map.insert(k.to_owned(), toks[i + 1].to_owned());
                i += 2;
            }
            _ => i += 1,
        }
    }
    map
}

/// One `STEP kind first last` line of the Txns program (peers.tools.Txns) per transaction.
pub(crate) fn txn_steps(out: &str) -> Vec<(String, i64, i64)> {
    out.lines()
        .filter_map(|l| {
            let mut it = l.strip_prefix("STEP ")?.split_whitespace();
            Some((
                it.next()?.to_owned(),
                it.next()?.parse().ok()?,
                it.next()?.parse().ok()?,
            ))
        })
        .collect()
}

/// `topic:partition:offset` lines of GetOffsetShell, per partition.
pub(crate) fn offsets(out: &str, topic: &str) -> BTreeMap<i32, i64> {
    out.lines()
        .filter_map(|l| {
            let mut parts = l.trim().rsplitn(3, ':');
            let offset = parts.next()?.parse().ok()?;
            let partition = parts.next()?.parse().ok()?;
            (parts.next()? == topic).then_some((partition, offset))
        })
        .collect()
}

/// The partition Kafka's default partitioner gives a keyed record: murmur2 of the key, made
/// positive, modulo the partition count (the Java client's `Utils.murmur2`/`toPositive`).
pub(crate) fn partition_of(key: &[u8], partitions: i32) -> i32 {
    (murmur2(key) & 0x7fff_ffff) as i32 % partitions
}

fn murmur2(data: &[u8]) -> u32 {
    const SEED: u32 = 0x9747_b28c;
    const M: u32 = 0x5bd1_e995;
    let mut h = SEED ^ data.len() as u32;
    let mut chunks = data.chunks_exact(4);
    for c in &mut chunks {
        let mut k = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        k = k.wrapping_mul(M);
        k ^= k >> 24;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }
    let rest = chunks.remainder();
    if rest.len() >= 3 {
        h ^= u32::from(rest[2]) << 16;
    }
    if rest.len() >= 2 {
        h ^= u32::from(rest[1]) << 8;
    }
    if !rest.is_empty() {
        h ^= u32::from(rest[0]);
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;
    h
}

/// The files of a partition's directory with this extension, sorted by name.
pub(crate) fn files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .collect();
    out.sort();
    out
}

/// Comma-separated paths, as `--files` takes them.
pub(crate) fn joined(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(",")
}

#[test]
fn murmur2_matches_kafka() {
    // Values of the Java client's Utils.murmur2 (its own unit test vectors).
    assert_eq!(murmur2(b"21") as i32, -973932308);
    assert_eq!(murmur2(b"foobar") as i32, -790332482);
    assert_eq!(murmur2(b"a-little-bit-long-string") as i32, -985981536);
    assert_eq!(murmur2(b"a-little-bit-longer-string") as i32, -1486304829);
    assert_eq!(
        murmur2(b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8") as i32,
        -58897971
    );
    assert_eq!(murmur2(b"abc") as i32, 479470107);
}
