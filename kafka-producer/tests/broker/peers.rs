//! Third-party peers: kcat and the python scripts of `tests/peers/`, each run with a time
//! limit; a missing peer is a NOTICE, or a failure with `KAFKA_RS_REQUIRE_PEERS=1`.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Time limit of one peer process.
pub(crate) const STEP_TIMEOUT: Duration = Duration::from_secs(120);
/// The deadline the python scripts get, below the step limit so that they report.
pub(crate) const SCRIPT_TIMEOUT_SECS: u32 = 90;
/// Exit code of a script whose peer is missing.
const EXIT_MISSING_PEER: i32 = 3;
/// kcat's output: partition, offset, key and value lengths (-1: null), then the bytes.
const KCAT_FORMAT: &str = "%p %o %K %S:%k%s\\n";

fn peers_required() -> bool {
    std::env::var("KAFKA_RS_REQUIRE_PEERS").is_ok_and(|v| v == "1")
}

/// A peer is missing: a NOTICE, or a failure under `KAFKA_RS_REQUIRE_PEERS=1`.
pub(crate) fn skip(what: &str, why: &str) {
    assert!(!peers_required(), "KAFKA_RS_REQUIRE_PEERS=1 but {why}");
    eprintln!("NOTICE: skipping {what}: {why}");
}

/// The python interpreter itself (`python3` may be a slow wrapper script, e.g. pyenv's shim).
fn python() -> Result<PathBuf, String> {
    let out = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .map_err(|e| format!("cannot run python3: {e}"))?;
    let path = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if out.status.success() && !path.is_empty() {
        Ok(PathBuf::from(path))
    } else {
        Err("python3 does not run".into())
    }
}

/// kcat (or its old name, kafkacat) on the PATH.
pub(crate) fn kcat() -> Result<PathBuf, String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .flat_map(|dir| [dir.join("kcat"), dir.join("kafkacat")])
        .find(|p| p.is_file())
        .ok_or_else(|| "kcat is not installed (Debian package kcat)".into())
}

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/peers")
        .join(name)
}

/// Waits for a child up to `timeout`; kills it after that (`None`).
pub(crate) fn wait_bounded(child: &mut Child, timeout: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub(crate) fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// Runs a script of `tests/peers/`; its output, or why its peer is missing. Panics when the
/// script fails or overruns.
pub(crate) fn run_script(name: &str, args: &[String], log: &Path) -> Result<String, String> {
    let python = python()?;
    let out = File::create(log).unwrap();
    let mut child = Command::new(python)
        .arg(script(name))
        .args(args)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONUNBUFFERED", "1")
        .stdin(Stdio::null())
        .stdout(out.try_clone().unwrap())
        .stderr(out)
        .spawn()
        .map_err(|e| format!("cannot run python3: {e}"))?;
    let status = wait_bounded(&mut child, STEP_TIMEOUT);
    let output = std::fs::read_to_string(log).unwrap_or_default();
    match status.and_then(|s| s.code()) {
        Some(0) => Ok(output),
        Some(EXIT_MISSING_PEER) => Err(output
            .lines()
            .find_map(|l| l.strip_prefix("MISSING PEER: "))
            .unwrap_or("a peer is missing")
            .to_owned()),
        code => panic!(
            "{name} {} (exit {code:?}); last lines:\n{}",
            if status.is_none() {
                "was killed after the time limit"
            } else {
                "failed"
            },
            tail(&output, 30)
        ),
    }
}

/// Reads a whole topic with kcat into `out` (the dump format), checking batch CRCs. Panics
/// when kcat fails.
pub(crate) fn kcat_dump(kcat: &Path, addr: &str, topic: &str, out: &Path) {
    let log = out.with_extension("kcat.log");
    let mut child = Command::new(kcat)
        .args([
            "-b",
            addr,
            "-X",
            "broker.address.family=v4",
            "-X",
            "check.crcs=true",
        ])
        .args(["-C", "-t", topic])
        .args(["-o", "beginning", "-e", "-q", "-f", KCAT_FORMAT])
        .stdin(Stdio::null())
        .stdout(File::create(out).unwrap())
        .stderr(File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let status = wait_bounded(&mut child, STEP_TIMEOUT);
    let stderr = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        status.is_some_and(|s| s.success()),
        "kcat reading {topic}: {status:?}; stderr:\n{}",
        tail(&stderr, 30)
    );
}

/// Reads topics (name, records expected) with kafka-python into `dir/<topic>.dump`.
pub(crate) fn kafka_python_dump(
    addr: &str,
    topics: &[(String, u64)],
    codecs: &str,
    check_crcs: bool,
    dir: &Path,
) -> Result<String, String> {
    let mut args = vec![
        "--bootstrap".to_owned(),
        addr.to_owned(),
        "--out-dir".to_owned(),
        dir.display().to_string(),
        "--timeout".to_owned(),
        SCRIPT_TIMEOUT_SECS.to_string(),
        "--codecs".to_owned(),
        codecs.to_owned(),
    ];
    if !check_crcs {
        args.push("--no-check-crcs".to_owned());
    }
    for (topic, n) in topics {
        args.push("--topic".to_owned());
        args.push(format!("{topic}={n}"));
    }
    run_script("read_back.py", &args, &dir.join("read_back.log"))
}
