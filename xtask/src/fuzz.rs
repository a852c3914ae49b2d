//! `cargo xtask fuzz <target|all> [--seconds N] [--smoke] [--sanitizer S] [--replay FILE...]
//! [-- LIBFUZZER_ARGS]`
//!
//! Two modes over the same entry points (`kafka_protocol::fuzzing` and
//! `kafka_auth::sasl::fuzzing`, feature `fuzzing`):
//!
//! - Default: coverage-guided fuzzing with libFuzzer through cargo-fuzz (installed if missing).
//!   cargo-fuzz passes nightly-only flags to rustc; on a stable toolchain they are unlocked with
//!   `RUSTC_BOOTSTRAP=1`. No sanitizer by default: kafka-protocol forbids unsafe code, and the
//!   address sanitizer slows the targets about four times (`--sanitizer address` turns it on). Seeds generated from valid encodings and golden frames are written to
//!   `xtask/fuzz/corpus/<target>` first; libFuzzer adds what it finds there, and saves crashing
//!   inputs to `xtask/fuzz/artifacts/<target>`.
//! - `--smoke`: the stable mode for CI. No install, no libFuzzer: a plain binary feeds every
//!   seed and deterministic mutations of each through the entry points for at most N seconds
//!   per target (default 20).
//!
//! Both end with a summary per target and fail if any target crashed.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::Error;

const TARGETS: [&str; 6] = [
    "request_decode",
    "response_decode",
    "record_batch",
    "varint",
    "produce_view",
    "sasl",
];
const FUZZ_DIR: &str = "xtask/fuzz";
const GOLDEN_DIR: &str = "kafka-protocol/tests/data/golden";

fn usage() -> String {
    format!(
        "usage: cargo xtask fuzz <target|all> [--seconds N] [--smoke] [--sanitizer none|address]\n\
         \x20                        [--replay FILE...] [-- LIBFUZZER_ARGS...]\n\
         targets: {}\n\
         --seconds N    time per target (default 60; 20 with --smoke)\n\
         --smoke        stable mode for CI: seeds plus deterministic mutations, no libFuzzer\n\
         --sanitizer S  cargo-fuzz sanitizer (default none: the crate has no unsafe code)\n\
         --replay FILE  run saved inputs (e.g. crash artifacts) through the target and stop",
        TARGETS.join(", ")
    )
}

#[derive(Debug)]
struct Options {
    targets: Vec<&'static str>,
    seconds: Option<u64>,
    smoke: bool,
    sanitizer: String,
    replay: Vec<String>,
    libfuzzer_args: Vec<String>,
}

fn parse(args: &[String]) -> Result<Options, Error> {
    let mut o = Options {
        targets: Vec::new(),
        seconds: None,
        smoke: false,
        sanitizer: "none".to_owned(),
        replay: Vec::new(),
        libfuzzer_args: Vec::new(),
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--seconds" => {
                let v = it.next().ok_or("--seconds needs a number")?;
                o.seconds = Some(
                    v.parse()
                        .map_err(|_| format!("--seconds: bad number {v}"))?,
                );
            }
            "--smoke" => o.smoke = true,
            "--sanitizer" | "-s" => {
                o.sanitizer = it.next().ok_or("--sanitizer needs a value")?.clone();
            }
            "--replay" => o.replay.extend(it.by_ref().cloned()),
            "--" => o.libfuzzer_args.extend(it.by_ref().cloned()),
            "-h" | "--help" => return Err(usage().into()),
            "all" => o.targets.extend(TARGETS),
            name => {
                let t = TARGETS
                    .iter()
                    .find(|t| **t == name)
                    .ok_or_else(|| format!("fuzz: unknown target or option {name}\n{}", usage()))?;
                o.targets.push(t);
            }
        }
    }
    if o.targets.is_empty() {
        return Err(format!("fuzz: name a target or `all`\n{}", usage()).into());
    }
    let mut seen = Vec::new();
    o.targets.retain(|t| {
        let new = !seen.contains(t);
        seen.push(*t);
        new
    });
    Ok(o)
}

pub(crate) fn run(root: &Path, args: &[String]) -> Result<(), Error> {
    let o = parse(args)?;
    let fuzz_dir = root.join(FUZZ_DIR);
    if !o.replay.is_empty() {
        let [target] = o.targets[..] else {
            return Err("fuzz --replay: name exactly one target".into());
        };
        let mut runner_args = vec!["replay".to_owned(), target.to_owned()];
        runner_args.extend(o.replay.iter().cloned());
        return runner(root, &runner_args);
    }
    if o.smoke {
        let mut runner_args = vec!["smoke".to_owned()];
        runner_args.extend(o.targets.iter().map(|t| (*t).to_owned()));
        runner_args.extend([
            "--seconds".to_owned(),
            o.seconds.unwrap_or(20).to_string(),
            "--golden".to_owned(),
            root.join(GOLDEN_DIR).display().to_string(),
            "--regressions".to_owned(),
            fuzz_dir.join("regressions").display().to_string(),
            "--artifacts".to_owned(),
            fuzz_dir.join("artifacts").display().to_string(),
        ]);
        return runner(root, &runner_args);
    }
    libfuzzer(root, &o)
}

/// Runs the stable helper binary of the fuzz crate (built without libFuzzer).
fn runner(root: &Path, args: &[String]) -> Result<(), Error> {
    let manifest = root.join(FUZZ_DIR).join("Cargo.toml");
    let manifest = manifest.display().to_string();
    // The workspace's target directory (unless CARGO_TARGET_DIR says otherwise): the runner is
    // a dev build and reuses the dependencies the workspace already built.
    let target_dir = root.join("target").display().to_string();
    let mut cargo_args = vec![
        "run",
        "--quiet",
        "--manifest-path",
        &manifest,
        "--no-default-features",
    ];
    if std::env::var_os("CARGO_TARGET_DIR").is_none() {
        cargo_args.extend(["--target-dir", &target_dir]);
    }
    cargo_args.extend(["--example", "fuzz-runner", "--"]);
    cargo_args.extend(args.iter().map(String::as_str));
    let status = Command::new(cargo_bin())
        .args(&cargo_args)
        .current_dir(root)
        .status()
        .map_err(|e| format!("running cargo: {e}"))?;
    match status.code() {
        Some(0) => Ok(()),
        // The runner's "crashes found" status.
        Some(1) => Err(format!(
            "fuzz: crashes found (inputs saved under {FUZZ_DIR}/artifacts; replay one with \
             `cargo xtask fuzz <target> --replay FILE`)"
        )
        .into()),
        _ => Err(format!("fuzz: the runner failed ({status})").into()),
    }
}

fn cargo_bin() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}

/// Makes sure `cargo fuzz` runs, installing cargo-fuzz if it is missing.
fn ensure_cargo_fuzz(root: &Path) -> Result<(), Error> {
    let ok = Command::new(cargo_bin())
        .args(["fuzz", "--version"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        return Ok(());
    }
    eprintln!("fuzz: cargo-fuzz is not installed; installing it (a few minutes)");
    crate::cargo(root, &["install", "cargo-fuzz", "--locked"])
}

/// Whether the toolchain accepts `-Z` flags without help.
fn nightly() -> bool {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    Command::new(rustc)
        .arg("-V")
        .output()
        .is_ok_and(|out| String::from_utf8_lossy(&out.stdout).contains("nightly"))
}

/// A `cargo fuzz` command in the workspace root; on stable, with `RUSTC_BOOTSTRAP=1` so that
/// rustc takes the sanitizer and coverage flags cargo-fuzz passes.
fn cargo_fuzz(root: &Path, nightly: bool) -> Command {
    let mut cmd = Command::new(cargo_bin());
    cmd.arg("fuzz").current_dir(root);
    if !nightly {
        cmd.env("RUSTC_BOOTSTRAP", "1");
    }
    cmd
}

/// What one libFuzzer run did.
#[derive(Debug, Default)]
struct Summary {
    target: &'static str,
    execs: Option<u64>,
    execs_per_sec: Option<u64>,
    new_units: Option<u64>,
    corpus: usize,
    crashes: Vec<PathBuf>,
    duration: Duration,
    exit_ok: bool,
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    out.sort();
    out
}

fn libfuzzer(root: &Path, o: &Options) -> Result<(), Error> {
    let seconds = o.seconds.unwrap_or(60);
    ensure_cargo_fuzz(root)?;
    let nightly = nightly();
    let fuzz_dir = root.join(FUZZ_DIR);

    eprintln!("fuzz: writing seed corpora");
    let mut seed_args = vec![
        "seeds".to_owned(),
        fuzz_dir.join("corpus").display().to_string(),
        "--golden".to_owned(),
        root.join(GOLDEN_DIR).display().to_string(),
    ];
    seed_args.extend(o.targets.iter().map(|t| (*t).to_owned()));
    runner(root, &seed_args)?;

    let mut summaries = Vec::new();
    for &target in &o.targets {
        eprintln!(
            "fuzz: building {target} (cargo-fuzz, sanitizer {})",
            o.sanitizer
        );
        let status = cargo_fuzz(root, nightly)
            .args(["build", "--fuzz-dir", FUZZ_DIR, "-s", &o.sanitizer, target])
            .status()
            .map_err(|e| format!("running cargo fuzz: {e}"))?;
        if !status.success() {
            return Err(format!("cargo fuzz build {target} failed ({status})").into());
        }
        summaries.push(run_target(root, o, nightly, target, seconds)?);
    }

    println!("\nfuzz summary (libFuzzer via cargo-fuzz, {seconds} s per target)");
    println!(
        "{:<16} {:>11} {:>9} {:>8} {:>9} {:>8} {:>9}",
        "target", "execs", "execs/s", "corpus", "new", "crashes", "duration"
    );
    let show = |v: Option<u64>| v.map_or_else(|| "?".to_owned(), |v| v.to_string());
    for s in &summaries {
        println!(
            "{:<16} {:>11} {:>9} {:>8} {:>9} {:>8} {:>8.1}s",
            s.target,
            show(s.execs),
            show(s.execs_per_sec),
            s.corpus,
            show(s.new_units),
            s.crashes.len(),
            s.duration.as_secs_f64()
        );
    }
    let mut failed = false;
    for s in &summaries {
        for c in &s.crashes {
            failed = true;
            println!(
                "{}: crashing input {}\n  reproduce: cargo xtask fuzz {} --replay {}",
                s.target,
                c.display(),
                s.target,
                c.display()
            );
        }
        if !s.exit_ok && s.crashes.is_empty() {
            failed = true;
            println!("{}: libFuzzer exited with an error", s.target);
        }
    }
    if failed {
        Err("fuzz: some targets crashed".into())
    } else {
        Ok(())
    }
}

/// The number after `key` in a libFuzzer stats line such as `stat::average_exec_per_sec: 123`.
fn stat(line: &str, key: &str) -> Option<u64> {
    line.strip_prefix(key)?.trim().parse().ok()
}

fn run_target(
    root: &Path,
    o: &Options,
    nightly: bool,
    target: &'static str,
    seconds: u64,
) -> Result<Summary, Error> {
    let fuzz_dir = root.join(FUZZ_DIR);
    let corpus_dir = fuzz_dir.join("corpus").join(target);
    let artifacts_dir = fuzz_dir.join("artifacts").join(target);
    let before = files(&artifacts_dir);

    let mut start = Instant::now();
    let mut cmd = cargo_fuzz(root, nightly);
    cmd.args(["run", "--fuzz-dir", FUZZ_DIR, "-s", &o.sanitizer, target])
        .arg(&corpus_dir)
        .arg("--")
        .arg(format!("-max_total_time={seconds}"))
        .arg("-print_final_stats=1")
        .arg("-print_pcs=0")
        .args(&o.libfuzzer_args)
        .stdout(Stdio::inherit())
        .stderr(Stdio::piped());
    eprintln!("fuzz: running {target} for {seconds} s");
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("running cargo fuzz: {e}"))?;

    let mut s = Summary {
        target,
        ..Summary::default()
    };
    if let Some(stderr) = child.stderr.take() {
        // libFuzzer's own progress lines go through as they come; the final stats are kept.
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            eprintln!("{line}");
            // The clock starts when libFuzzer does, after any rebuild cargo-fuzz does first.
            if line.trim_start().starts_with("Running `") {
                start = Instant::now();
            }
            s.execs = s
                .execs
                .or_else(|| stat(&line, "stat::number_of_executed_units:"));
            s.execs_per_sec = s
                .execs_per_sec
                .or_else(|| stat(&line, "stat::average_exec_per_sec:"));
            s.new_units = s
                .new_units
                .or_else(|| stat(&line, "stat::new_units_added:"));
        }
    }
    let status = child
        .wait()
        .map_err(|e| format!("waiting for cargo fuzz: {e}"))?;
    s.duration = start.elapsed();
    s.exit_ok = status.success();
    s.corpus = files(&corpus_dir).len();
    s.crashes = files(&artifacts_dir)
        .into_iter()
        .filter(|p| !before.contains(p))
        .collect();
    Ok(s)
}
