//! Helper for `cargo xtask fuzz`, built without libFuzzer (stable Rust, no C++ runtime).
//!
//! - `fuzz-runner seeds OUT_DIR [--golden DIR] [TARGET...]` writes seed corpora, one folder per
//!   target, for libFuzzer to start from.
//! - `fuzz-runner smoke [TARGET...|all] [--seconds N] [--rounds N] [--golden DIR]
//!   [--regressions DIR] [--artifacts DIR]` feeds every seed, then deterministic mutations of
//!   every seed (round-robin, `--rounds` per seed), through the same entry points as the fuzz
//!   targets, until the rounds are done or the time is up.
//! - `fuzz-runner replay TARGET FILE...` runs files through a target (to reproduce a crash).
//!
//! A panic in an entry point is a crash: the input is saved under the artifacts folder and
//! the run exits with status 1.

use std::collections::HashSet;
use std::fs;
use std::io::Write;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use kafka_protocol::fuzzing::Mutator;

mod targets;

use targets::{Target, seeds, seeds_from_frame};

type Error = Box<dyn std::error::Error>;

/// Crash inputs saved per target, at most.
const MAX_SAVED_CRASHES: usize = 20;
/// Seconds between progress lines.
const PROGRESS_EVERY: Duration = Duration::from_secs(2);

/// The last panic, captured by the panic hook: where it happened and its message.
static LAST_PANIC: Mutex<Option<Panic>> = Mutex::new(None);

#[derive(Debug, Clone)]
struct Panic {
    location: String,
    message: String,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("fuzz-runner: {e}");
            std::process::exit(2);
        }
    }
}

/// Runs a subcommand; `Ok(false)` when crashes were found.
fn run(args: &[String]) -> Result<bool, Error> {
    let Some((cmd, rest)) = args.split_first() else {
        return Err("usage: fuzz-runner seeds|smoke|replay ...".into());
    };
    match cmd.as_str() {
        "seeds" => write_seeds(rest).map(|()| true),
        "smoke" => smoke(rest),
        "replay" => replay(rest),
        other => Err(format!("unknown subcommand {other}").into()),
    }
}

/// Options shared by the subcommands.
#[derive(Debug, Default)]
struct Opts {
    targets: Vec<Target>,
    positional: Vec<String>,
    seconds: u64,
    rounds: u64,
    golden: Option<PathBuf>,
    regressions: Option<PathBuf>,
    artifacts: Option<PathBuf>,
}

fn parse(args: &[String], take_targets: bool) -> Result<Opts, Error> {
    let mut o = Opts {
        seconds: 20,
        rounds: 2000,
        ..Opts::default()
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match a.as_str() {
            "--seconds" => o.seconds = value(a)?.parse()?,
            "--rounds" => o.rounds = value(a)?.parse()?,
            "--golden" => o.golden = Some(value(a)?.into()),
            "--regressions" => o.regressions = Some(value(a)?.into()),
            "--artifacts" => o.artifacts = Some(value(a)?.into()),
            "all" if take_targets => o.targets.extend(Target::all()),
            name if take_targets && !name.starts_with('-') => o.targets.push(
                Target::from_name(name).ok_or_else(|| format!("unknown fuzz target {name}"))?,
            ),
            name if !name.starts_with('-') => o.positional.push(name.to_owned()),
            other => return Err(format!("unknown option {other}").into()),
        }
    }
    if take_targets && o.targets.is_empty() {
        o.targets.extend(Target::all());
    }
    Ok(o)
}

/// Every `.bin` file under `dir`, sorted, so that seeds come in a stable order.
fn bin_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "bin") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Every file directly in `dir`, sorted.
fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// The seeds of `target`: generated ones, those from golden frames, and saved regressions,
/// without duplicates. Returns them with a count per source.
fn corpus(target: Target, o: &Opts) -> (Vec<Vec<u8>>, String) {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    let mut push = |s: Vec<u8>, out: &mut Vec<Vec<u8>>| {
        if seen.insert(s.clone()) {
            out.push(s);
        }
    };
    for s in seeds(target) {
        push(s, &mut out);
    }
    let generated = out.len();
    if let Some(dir) = &o.golden {
        for f in bin_files(dir) {
            let (Ok(bytes), Some(name)) = (fs::read(&f), f.file_name()) else {
                continue;
            };
            // A frame under a `responses/` folder is a broker's answer (its file name says
            // only the api and version).
            let mut name = name.to_string_lossy().into_owned();
            if f.components().any(|c| c.as_os_str() == "responses") {
                name.push_str("-response");
            }
            for (t, s) in seeds_from_frame(&name, &bytes) {
                if t == target {
                    push(s, &mut out);
                }
            }
        }
    }
    let golden = out.len() - generated;
    if let Some(dir) = &o.regressions {
        for f in files_in(&dir.join(target.name())) {
            if let Ok(bytes) = fs::read(&f) {
                push(bytes, &mut out);
            }
        }
    }
    let regressions = out.len() - generated - golden;
    let how =
        format!("{generated} generated, {golden} from golden frames, {regressions} regressions");
    (out, how)
}

/// FNV-1a, for file names that identify an input.
fn hash(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

fn write_seeds(args: &[String]) -> Result<(), Error> {
    let mut o = parse(args, false)?;
    let out = o
        .positional
        .first()
        .ok_or("seeds needs an output folder")?
        .clone();
    let names = std::mem::take(&mut o.positional);
    for name in names.iter().skip(1) {
        o.targets
            .push(Target::from_name(name).ok_or_else(|| format!("unknown fuzz target {name}"))?);
    }
    if o.targets.is_empty() {
        o.targets.extend(Target::all());
    }
    for &t in &o.targets {
        let dir = Path::new(&out).join(t.name());
        fs::create_dir_all(&dir)?;
        let (seeds, how) = corpus(t, &o);
        let mut bytes = 0;
        for s in &seeds {
            let path = dir.join(format!("seed-{:016x}", hash(s)));
            if !path.exists() {
                fs::write(&path, s)?;
            }
            bytes += s.len();
        }
        println!(
            "{}: {} seeds ({how}), {} KiB, in {}",
            t.name(),
            seeds.len(),
            bytes / 1024,
            dir.display()
        );
    }
    Ok(())
}

/// Installs a panic hook that records the message instead of printing it.
fn quiet_panics() {
    panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "(non-string panic)".to_owned());
        let at = info
            .location()
            .map(|l| format!("{}:{}", l.file(), l.line()))
            .unwrap_or_default();
        if let Ok(mut slot) = LAST_PANIC.lock() {
            *slot = Some(Panic {
                location: at,
                message: msg,
            });
        }
    }));
}

/// Runs one input; `Some(panic)` if it panicked.
fn exec(target: Target, data: &[u8]) -> Option<Panic> {
    match panic::catch_unwind(AssertUnwindSafe(|| target.run(data))) {
        Ok(()) => None,
        Err(_) => Some(
            LAST_PANIC
                .lock()
                .ok()
                .and_then(|mut s| s.take())
                .unwrap_or_else(|| Panic {
                    location: String::new(),
                    message: "panic".to_owned(),
                }),
        ),
    }
}

/// What one target's smoke run did.
#[derive(Debug)]
struct Summary {
    target: Target,
    seeds: usize,
    execs: u64,
    rounds_done: u64,
    crashes: u64,
    unique_crashes: usize,
    duration: Duration,
    timed_out: bool,
}

struct Crashes<'a> {
    target: Target,
    dir: Option<&'a Path>,
    seen: HashSet<String>,
    saved: usize,
    count: u64,
}

impl Crashes<'_> {
    fn record(&mut self, data: &[u8], p: &Panic) {
        self.count += 1;
        // One report per place that panicked (the message may differ with the input).
        let key = if p.location.is_empty() {
            p.message.lines().next().unwrap_or_default().to_owned()
        } else {
            p.location.clone()
        };
        if !self.seen.insert(key) {
            return;
        }
        let mut saved_as = String::new();
        if let Some(dir) = self.dir.filter(|_| self.saved < MAX_SAVED_CRASHES) {
            let dir = dir.join(self.target.name());
            let path = dir.join(format!("crash-{:016x}", hash(data)));
            if fs::create_dir_all(&dir).is_ok() && fs::write(&path, data).is_ok() {
                self.saved += 1;
                saved_as = format!("\n  input saved as {}", path.display());
            }
        }
        let shown: String = p.message.chars().take(2000).collect();
        eprintln!(
            "[{}] CRASH on a {}-byte input at {}: {shown}{saved_as}",
            self.target.name(),
            data.len(),
            p.location
        );
    }
}

fn smoke_target(target: Target, o: &Opts) -> Summary {
    let start = Instant::now();
    let (corpus, how) = corpus(target, o);
    let limit = Duration::from_secs(o.seconds);
    eprintln!(
        "[{}] {} seeds ({how}); up to {} mutation rounds per seed, {} s at most",
        target.name(),
        corpus.len(),
        o.rounds,
        o.seconds
    );
    let mut crashes = Crashes {
        target,
        dir: o.artifacts.as_deref(),
        seen: HashSet::new(),
        saved: 0,
        count: 0,
    };
    let mut execs = 0u64;
    let mut last_report = Instant::now();
    let mut timed_out = false;
    let mut rounds_done = 0;

    for s in &corpus {
        if let Some(p) = exec(target, s) {
            crashes.record(s, &p);
        }
        execs += 1;
    }
    let n = corpus.len();
    'rounds: for round in 0..o.rounds {
        for (i, s) in corpus.iter().enumerate() {
            if execs & 127 == 0 {
                let now = Instant::now();
                if now - start >= limit {
                    timed_out = true;
                    break 'rounds;
                }
                if now - last_report >= PROGRESS_EVERY {
                    last_report = now;
                    let secs = (now - start).as_secs_f64();
                    eprintln!(
                        "[{}] {secs:5.1}s  execs {execs:>9}  {:>7.0}/s  round {round}/{}  crashes {}",
                        target.name(),
                        execs as f64 / secs.max(1e-9),
                        o.rounds,
                        crashes.count
                    );
                }
            }
            let other = &corpus[(i + 1 + round as usize) % n];
            let input = Mutator::mutate(s, other, round << 32 | i as u64);
            if let Some(p) = exec(target, &input) {
                crashes.record(&input, &p);
            }
            execs += 1;
        }
        rounds_done = round + 1;
    }
    Summary {
        target,
        seeds: n,
        execs,
        rounds_done,
        crashes: crashes.count,
        unique_crashes: crashes.seen.len(),
        duration: start.elapsed(),
        timed_out,
    }
}

fn smoke(args: &[String]) -> Result<bool, Error> {
    let o = parse(args, true)?;
    quiet_panics();
    let mut summaries = Vec::new();
    for &t in &o.targets {
        summaries.push(smoke_target(t, &o));
    }
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "\nfuzz smoke summary (seeds + deterministic mutations)"
    )?;
    writeln!(
        out,
        "{:<16} {:>7} {:>10} {:>9} {:>11} {:>8} {:>9}",
        "target", "seeds", "execs", "execs/s", "rounds", "crashes", "duration"
    )?;
    for s in &summaries {
        let secs = s.duration.as_secs_f64();
        writeln!(
            out,
            "{:<16} {:>7} {:>10} {:>9.0} {:>11} {:>8} {:>8.1}s{}",
            s.target.name(),
            s.seeds,
            s.execs,
            s.execs as f64 / secs.max(1e-9),
            format!("{}/{}", s.rounds_done, o.rounds),
            s.crashes,
            secs,
            if s.timed_out { "  (time limit)" } else { "" }
        )?;
    }
    let crashed: Vec<_> = summaries.iter().filter(|s| s.crashes > 0).collect();
    for s in &crashed {
        writeln!(
            out,
            "{}: {} crashing inputs, panics at {} distinct places",
            s.target.name(),
            s.crashes,
            s.unique_crashes
        )?;
    }
    Ok(crashed.is_empty())
}

fn replay(args: &[String]) -> Result<bool, Error> {
    let o = parse(args, false)?;
    let (name, files) = o
        .positional
        .split_first()
        .ok_or("replay needs a target and files")?;
    let target = Target::from_name(name).ok_or_else(|| format!("unknown fuzz target {name}"))?;
    let mut ok = true;
    for f in files {
        let data = fs::read(f).map_err(|e| format!("{f}: {e}"))?;
        // Let the panic print normally: this is for reading a crash.
        match panic::catch_unwind(|| target.run(&data)) {
            Ok(()) => println!("{f}: ok"),
            Err(_) => {
                println!("{f}: CRASH");
                ok = false;
            }
        }
    }
    Ok(ok)
}
