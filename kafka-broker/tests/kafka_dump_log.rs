//! Kafka's `kafka-dump-log` (`org.apache.kafka.tools.DumpLogSegments`, from the Kafka 4.x
//! jars) over the files our broker wrote, with the broker stopped: idempotent compressed
//! batches, transactions with commit and abort markers (and the aborted transactions in
//! `.txnindex`), and a compacted topic after our cleaner ran. What the tool prints (offsets,
//! counts, producer ids and sequences, control records, codecs, index entries) must be what
//! was written, and `--verify-index-only` / `--index-sanity-check` must find nothing wrong:
//! our on-disk format is Kafka's, checked by Kafka.
//!
//! Missing jars skip with a notice, or fail under `KAFKA_RS_REQUIRE_PEERS=1`.
#![allow(clippy::unwrap_used, clippy::panic)]

#[path = "kafka_tools/support.rs"]
mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use support::{TestBroker, Tools, files, gap, joined, txn_steps, words};

/// One batch as the tool prints it, with its records under `--deep-iteration`.
#[derive(Debug)]
struct Batch {
    fields: BTreeMap<String, String>,
    records: Vec<BTreeMap<String, String>>,
}

impl Batch {
    fn num(&self, k: &str) -> i64 {
        self.fields[k]
            .parse()
            .unwrap_or_else(|_| panic!("{k} in {self:?}"))
    }
    fn flag(&self, k: &str) -> bool {
        self.fields[k] == "true"
    }
}

/// What the tool printed about one file.
#[derive(Debug, Default)]
struct Dump {
    lines: Vec<String>,
    batches: Vec<Batch>,
}

/// Offset pairs the tool reports as non-consecutive, per file.
type Gaps = BTreeMap<PathBuf, Vec<(i64, i64)>>;

/// The tool's output cut per file (`Dumping <path>` starts each), with the non-consecutive
/// offset pairs it reports at the end, per file.
fn parse_dump(out: &str) -> (BTreeMap<PathBuf, Dump>, Gaps) {
    let mut dumps: BTreeMap<PathBuf, Dump> = BTreeMap::new();
    let mut gaps = Gaps::new();
    let mut current: Option<PathBuf> = None;
    let mut gap_file: Option<PathBuf> = None;
    for line in out.lines() {
        if let Some(p) = line.strip_prefix("Dumping ") {
            current = Some(PathBuf::from(p));
            dumps.entry(PathBuf::from(p)).or_default();
            continue;
        }
        if let Some(p) = line.strip_prefix("Non-consecutive offsets in ") {
            gap_file = Some(PathBuf::from(p));
            continue;
        }
        if let (Some(f), Some((a, b))) = (&gap_file, line.trim().split_once(" is followed by ")) {
            gaps.entry(f.clone())
                .or_default()
                .push((a.parse().unwrap(), b.parse().unwrap()));
            continue;
        }
        let Some(file) = &current else { continue };
        let dump = dumps.get_mut(file).unwrap();
        dump.lines.push(line.to_owned());
        if line.starts_with("baseOffset:") {
            dump.batches.push(Batch {
                fields: words(line),
                records: Vec::new(),
            });
        } else if line.starts_with("| offset:") {
            dump.batches
                .last_mut()
                .unwrap_or_else(|| panic!("a record before any batch: {line}"))
                .records
                .push(words(line));
        }
    }
    (dumps, gaps)
}

/// A file's base offset, from its name.
fn base_offset(path: &Path) -> i64 {
    path.file_stem()
        .unwrap()
        .to_str()
        .unwrap()
        .parse()
        .unwrap_or_else(|_| panic!("{}", path.display()))
}

fn dir_bytes(dir: &Path, ext: &str) -> u64 {
    files(dir, ext)
        .iter()
        .map(|f| std::fs::metadata(f).unwrap().len())
        .sum()
}

#[test]
fn dump_log_reads_our_segments() {
    // Small segments (several per partition, so the cleaner has something to clean and the
    // transactions span segments) except where the offset index needs room; a cleaner that
    // looks often.
    let broker = TestBroker::start(&[
        ("num.partitions", "1"),
        ("log.segment.bytes", "1024"),
        ("log.cleaner.backoff.ms", "100"),
    ]);
    let Some(tools) = Tools::find(&broker.bootstrap()) else {
        return;
    };
    let started = Instant::now();
    let b = tools.bootstrap.clone();
    let topic = |args: &[&str]| {
        let mut all = vec!["--create", "--partitions", "1", "--topic"];
        all.extend_from_slice(args);
        tools.admin("TopicCommand", &all);
    };
    topic(&["dl-idem", "--config", "segment.bytes=1048576"]);
    topic(&["dl-txn"]);
    topic(&[
        "dl-compact",
        "--config",
        "cleanup.policy=compact",
        "--config",
        "min.cleanable.dirty.ratio=0.01",
    ]);

    let n_idem = 3000;
    let (idem, txn_runs, compact_bytes) = std::thread::scope(|s| {
        // Idempotent, zstd, acks=all: 300 kB in one segment, so its offset index has entries.
        let idem = s.spawn(|| {
            let bootstrap = format!("bootstrap.servers={b}");
            let n = n_idem.to_string();
            tools
                .run(
                    "ProducerPerformance",
                    &[
                        "--topic",
                        "dl-idem",
                        "--num-records",
                        &n,
                        "--record-size",
                        "100",
                        "--throughput",
                        "-1",
                        "--command-property",
                        &bootstrap,
                        "acks=all",
                        "enable.idempotence=true",
                        "compression.type=zstd",
                    ],
                    None,
                )
                .stdout
        });
        // Two transactional producers, one after the other (so the markers' offsets follow
        // their transactions): gzip then lz4, commits and aborts.
        let txn = s.spawn(|| {
            let run = |id: &str, codec: &str, plan: &str| {
                let out = tools
                    .run("peers.tools.Txns", &[&b, "dl-txn", id, codec, plan], None)
                    .stdout;
                txn_steps(&out)
            };
            vec![
                run("dl-t1", "gzip", "c:5,a:3,c:4,a:2"),
                run("dl-t2", "lz4", "a:4,c:3"),
            ]
        });
        // Keyed records with duplicates (6 rounds of k0..k9), then a tombstone for k3; small
        // batches so that they fill several segments.
        let compact = s.spawn(|| {
            let mut lines = String::new();
            for round in 0..6 {
                for k in 0..10 {
                    lines.push_str(&format!("k{k}\tr{round}-k{k}\n"));
                }
            }
            lines.push_str("k3\tNULL\n");
            tools.run(
                "ConsoleProducer",
                &[
                    "--bootstrap-server",
                    &b,
                    "--topic",
                    "dl-compact",
                    "--reader-property",
                    "parse.key=true",
                    "--reader-property",
                    "null.marker=NULL",
                    "--batch-size",
                    "200",
                ],
                Some(&lines),
            );
            dir_bytes(&broker.data_dir().join("dl-compact-0"), "log")
        });
        (
            idem.join().unwrap(),
            txn.join().unwrap(),
            compact.join().unwrap(),
        )
    });
    assert!(idem.contains(&format!("{n_idem} records sent")), "{idem}");
    // The cleaner runs (it may have before the producer's JVM ended): our broker writes the
    // partition's cleaner checkpoint after a pass; the dump below shows what it removed.
    let compact_dir = broker.data_dir().join("dl-compact-0");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !compact_dir.join("cleaner-offset-checkpoint").exists() {
        assert!(
            Instant::now() < deadline,
            "the cleaner did not run on dl-compact-0 ({compact_bytes} bytes)"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let data = broker.stop();
    let dir = |t: &str| data.path().join("data").join(format!("{t}-0"));

    // --deep-iteration --print-data-log over every segment of the three partitions.
    let mut logs = Vec::new();
    for t in ["dl-idem", "dl-txn", "dl-compact"] {
        logs.extend(files(&dir(t), "log"));
    }
    let out = tools
        .run(
            "DumpLogSegments",
            &[
                "--files",
                &joined(&logs),
                "--deep-iteration",
                "--print-data-log",
            ],
            None,
        )
        .stdout;
    assert!(!out.contains("isvalid: false"), "{out}");
    assert!(!out.contains("invalid bytes"), "{out}");
    let (dumps, gaps) = parse_dump(&out);
    assert_eq!(
        dumps.keys().cloned().collect::<BTreeSet<_>>(),
        logs.iter().cloned().collect::<BTreeSet<_>>()
    );
    let of = |t: &str| -> Vec<(&PathBuf, &Dump)> {
        dumps
            .iter()
            .filter(|(p, _)| p.starts_with(dir(t)))
            .collect()
    };
    // Offsets run without gaps except in the compacted partition; the tool counts from -1 in
    // every file, so a file's first offset (its base offset) is always "after -1".
    for (file, pairs) in &gaps {
        let compacted = file.starts_with(dir("dl-compact"));
        for (a, b) in pairs {
            if *a == -1 {
                assert!(compacted || *b == base_offset(file), "{file:?}: {a} {b}");
            } else {
                assert!(compacted && a < b, "{file:?}: {a} is followed by {b}");
            }
        }
    }

    // dl-idem: one producer, sequences from 0 without gaps, zstd, not transactional.
    let idem_batches: Vec<&Batch> = of("dl-idem")
        .iter()
        .flat_map(|(_, d)| d.batches.iter())
        .collect();
    let pid = idem_batches[0].num("producerId");
    assert!(pid >= 0);
    let mut next = 0;
    for batch in &idem_batches {
        assert_eq!(batch.num("producerId"), pid, "{batch:?}");
        assert!(!batch.flag("isTransactional") && !batch.flag("isControl"));
        assert_eq!(batch.fields["compresscodec"], "zstd", "{batch:?}");
        assert_eq!(batch.num("baseOffset"), next, "{batch:?}");
        assert_eq!(batch.num("baseSequence"), next, "{batch:?}");
        let count = batch.num("count");
        assert_eq!(batch.num("lastOffset"), next + count - 1);
        assert_eq!(batch.num("lastSequence"), next + count - 1);
        assert_eq!(batch.records.len() as i64, count);
        for (i, r) in batch.records.iter().enumerate() {
            assert_eq!(r["offset"], (next + i as i64).to_string());
            assert_eq!(r["valueSize"], "100");
        }
        next += count;
    }
    assert_eq!(next, n_idem);

    // dl-txn: every record where its producer wrote it, a marker after each transaction.
    let mut records: BTreeMap<i64, (BTreeMap<String, String>, &Batch)> = BTreeMap::new();
    for (_, d) in of("dl-txn") {
        for batch in &d.batches {
            assert!(batch.flag("isTransactional"), "{batch:?}");
            for r in &batch.records {
                records.insert(r["offset"].parse().unwrap(), (r.clone(), batch));
            }
        }
    }
    let mut expected_aborts = BTreeSet::new();
    let mut pids = Vec::new();
    for (run, (codec, steps)) in ["gzip", "lz4"].iter().zip(&txn_runs).enumerate() {
        let mut value = 0;
        let mut seq = 0;
        let mut run_pid = None;
        for (kind, first, last) in steps {
            for offset in *first..=*last {
                let (r, batch) = &records[&offset];
                assert!(!batch.flag("isControl"));
                assert_eq!(batch.fields["compresscodec"], *codec, "{batch:?}");
                assert_eq!(r["key"], format!("k{value}"), "run {run} at {offset}");
                assert_eq!(r["payload"], format!("v{value}"), "run {run} at {offset}");
                assert_eq!(r["sequence"], seq.to_string());
                let p = batch.num("producerId");
                assert_eq!(*run_pid.get_or_insert(p), p);
                value += 1;
                seq += 1;
            }
            // The marker follows the transaction's last record.
            let (marker, batch) = &records[&(last + 1)];
            assert!(batch.flag("isControl"), "{batch:?}");
            assert_eq!(batch.fields["compresscodec"], "none");
            assert_eq!(batch.num("producerId"), run_pid.unwrap());
            let want = if kind == "a" { "ABORT" } else { "COMMIT" };
            assert_eq!(marker["endTxnMarker"], want, "marker at {}", last + 1);
            if kind == "a" {
                expected_aborts.insert((run_pid.unwrap(), *first, last + 1));
            }
        }
        pids.push(run_pid.unwrap());
    }
    assert_ne!(pids[0], pids[1]);
    let last_txn_offset = txn_runs[1].last().unwrap().2 + 1;
    assert_eq!(
        records.keys().copied().collect::<Vec<_>>(),
        (0..=last_txn_offset).collect::<Vec<_>>()
    );

    // dl-txn's .txnindex files: exactly the aborted transactions, each in the segment that
    // holds its abort marker.
    let txn_indexes = files(&dir("dl-txn"), "txnindex");
    assert!(!txn_indexes.is_empty());
    let out = tools
        .run("DumpLogSegments", &["--files", &joined(&txn_indexes)], None)
        .stdout;
    let segments: Vec<i64> = files(&dir("dl-txn"), "log")
        .iter()
        .map(|p| base_offset(p))
        .collect();
    let mut aborts = BTreeSet::new();
    let mut file = None;
    for line in out.lines() {
        if let Some(p) = line.strip_prefix("Dumping ") {
            file = Some(base_offset(Path::new(p)));
            continue;
        }
        let w = words(line);
        if !w.contains_key("firstOffset") {
            continue;
        }
        let n = |k: &str| w[k].parse::<i64>().unwrap();
        let (first, last) = (n("firstOffset"), n("lastOffset"));
        assert!(n("lastStableOffset") > last, "{line}");
        let base = file.unwrap();
        let next_base = segments.iter().find(|s| **s > base).copied();
        assert!(
            base <= last && next_base.is_none_or(|nb| last < nb),
            "{line} in the segment at {base}"
        );
        aborts.insert((n("producerId"), first, last));
    }
    assert_eq!(aborts, expected_aborts, "{out}");

    // dl-compact after cleaning: every key's last record is its last write (k3's the
    // tombstone); in the cleaned segments (all but the last) no key is twice.
    let compact = of("dl-compact");
    assert!(compact.len() >= 2, "{compact:?}");
    let mut last_of: BTreeMap<String, (i64, String, String)> = BTreeMap::new();
    let mut total = 0;
    for (i, (file, d)) in compact.iter().enumerate() {
        let mut keys = BTreeSet::new();
        for batch in &d.batches {
            assert!(!batch.flag("isTransactional"));
            for r in &batch.records {
                total += 1;
                let offset: i64 = r["offset"].parse().unwrap();
                assert!(offset >= batch.num("baseOffset") && offset <= batch.num("lastOffset"));
                let key = r["key"].clone();
                if i + 1 < compact.len() {
                    assert!(keys.insert(key.clone()), "{key} twice in cleaned {file:?}");
                }
                // A tombstone has no payload, and valueSize -1.
                let value = r.get("payload").cloned().unwrap_or_default();
                last_of.insert(key, (offset, value, r["valueSize"].clone()));
            }
        }
    }
    assert!(total < 61, "nothing was cleaned: {total} records");
    for k in 0..10 {
        let (offset, payload, size) = &last_of[&format!("k{k}")];
        if k == 3 {
            assert_eq!(*offset, 60);
            assert_eq!((payload.as_str(), size.as_str()), ("", "-1"));
        } else {
            assert_eq!(*offset, 50 + k);
            assert_eq!(*payload, format!("r5-k{k}"));
        }
    }

    // The offset and time indexes: Kafka's own checks find nothing wrong, and each entry
    // points at a batch the log dump showed.
    let mut indexes = Vec::new();
    for t in ["dl-idem", "dl-txn", "dl-compact"] {
        indexes.extend(files(&dir(t), "index"));
        indexes.extend(files(&dir(t), "timeindex"));
    }
    let list = joined(&indexes);
    let out = tools
        .run(
            "DumpLogSegments",
            &["--files", &list, "--verify-index-only"],
            None,
        )
        .stdout;
    for line in out.lines() {
        assert!(
            line.starts_with("Dumping ") || line.ends_with(" is empty."),
            "--verify-index-only: {line}\n{out}"
        );
    }
    let out = tools
        .run(
            "DumpLogSegments",
            &["--files", &list, "--index-sanity-check"],
            None,
        )
        .stdout;
    for line in out.lines() {
        assert!(
            line.starts_with("Dumping ")
                || line.ends_with(" is empty.")
                || line.ends_with(" passed sanity check."),
            "--index-sanity-check: {line}\n{out}"
        );
    }
    let out = tools
        .run("DumpLogSegments", &["--files", &list], None)
        .stdout;
    let mut file: Option<PathBuf> = None;
    let mut entries = 0;
    for line in out.lines() {
        if let Some(p) = line.strip_prefix("Dumping ") {
            file = Some(PathBuf::from(p));
            continue;
        }
        let w = words(line);
        let f = file.as_ref().unwrap();
        let log = dumps
            .get(&f.with_extension("log"))
            .unwrap_or_else(|| panic!("no log for {f:?}"));
        if let Some(position) = w.get("position") {
            let offset: i64 = w["offset"].parse().unwrap();
            let batch = log
                .batches
                .iter()
                .find(|b| b.fields["position"] == *position)
                .unwrap_or_else(|| panic!("{line}: no batch at {position} in {f:?}"));
            assert_eq!(batch.num("lastOffset"), offset, "{line}");
            entries += 1;
        } else if let Some(ts) = w.get("timestamp") {
            let offset: i64 = w["offset"].parse().unwrap();
            assert!(
                log.batches
                    .iter()
                    .any(|b| b.num("lastOffset") == offset && b.fields["CreateTime"] == *ts),
                "{line}: no batch ending at {offset} with that timestamp in {f:?}"
            );
        }
    }
    // Which batches of dl-idem's one segment Kafka indexes: the first batch after more than
    // log.index.interval.bytes (4096) since the last entry (one batch per append here).
    let mut since = 0;
    let mut want = 0;
    for batch in &idem_batches {
        if since > 4096 {
            want += 1;
            since = 0;
        }
        since += batch.num("size");
    }
    let idem_entries = out
        .split("Dumping ")
        .find(|s| s.starts_with(&dir("dl-idem").display().to_string()) && s.contains(".index\n"))
        .map_or(0, |s| s.lines().filter(|l| l.contains("position:")).count());
    assert!(want > 10, "{want}");
    assert_eq!(idem_entries, want, "dl-idem's offset index\n{out}");
    assert!(entries >= idem_entries);

    // Producer-state snapshots: Kafka's are `<offset>.snapshot` in its own schema, which
    // the tool reads; ours are another file in another format.
    let snapshots: Vec<PathBuf> = files(&dir("dl-idem"), "snapshot");
    let named = snapshots.iter().find(|p| {
        p.file_stem()
            .and_then(|s| s.to_str())
            .is_some_and(|s| s.parse::<i64>().is_ok())
    });
    gap(
        "dump-log.producer-snapshot",
        match named {
            None => Err(format!("no <offset>.snapshot file: {snapshots:?}")),
            Some(p) => {
                let out = tools
                    .run("DumpLogSegments", &["--files", p.to_str().unwrap()], None)
                    .stdout;
                if out.contains(&format!("producerId: {pid}")) {
                    Ok(())
                } else {
                    Err(out)
                }
            }
        },
    );

    eprintln!("dump_log_reads_our_segments: {:?}", started.elapsed());
}
