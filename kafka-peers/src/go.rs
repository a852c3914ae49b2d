//! The Go clients (franz-go, segmentio/kafka-go, IBM/sarama, pinned in `kafka-peers/go/go.mod`)
//! behind one program, `kafka-peers-go`, built with the Go toolchain from the module cache
//! (`kafka-peers/fetch` downloads the modules; `go build` is incremental, so an edit of the
//! program rebuilds it and an unchanged one costs a moment).

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use crate::process::{Run, run};
use crate::{PeerError, crate_dir, peers_dir};

/// The built program, once per test process.
static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();

/// Builds (or finds up to date) `kafka-peers-go` and returns its path.
pub fn program() -> Result<PathBuf, PeerError> {
    let built = BUILT.get_or_init(|| build().map_err(|e| e.to_string()));
    match built {
        Ok(p) => Ok(p.clone()),
        Err(e) if e.starts_with("peer missing: ") => Err(PeerError::Missing(
            e.trim_start_matches("peer missing: ").to_owned(),
        )),
        Err(e) => Err(PeerError::Failed(e.clone())),
    }
}

fn build() -> Result<PathBuf, PeerError> {
    let src = crate_dir().join("go");
    let out = peers_dir().join("go/kafka-peers-go");
    if Command::new("go").arg("version").output().is_err() {
        return Err(PeerError::Missing("cannot run go".into()));
    }
    let mut cmd = Command::new("go");
    cmd.current_dir(&src)
        .args(["build", "-o"])
        .arg(&out)
        .arg(".")
        // Only the module cache: a missing module is a missing peer, not a download in a test.
        .env("GOFLAGS", "-mod=mod")
        .env("GOPROXY", "off");
    let result = run(cmd, None, Duration::from_secs(600))?;
    if result.success() {
        return Ok(out);
    }
    if result.stderr.contains("module lookup disabled") || result.stderr.contains("GOPROXY=off") {
        return Err(PeerError::Missing(format!(
            "the Go clients' modules are not in the module cache: {}",
            result.stderr.trim()
        )));
    }
    Err(PeerError::Failed(format!(
        "go build of kafka-peers-go failed: {}",
        result.describe()
    )))
}

/// Runs `kafka-peers-go` with `args`; a non-zero exit or a run longer than `timeout` is an
/// error carrying what it printed.
pub fn run_program(args: &[&str], timeout: Duration) -> Result<Run, PeerError> {
    let mut cmd = Command::new(program()?);
    cmd.args(args);
    let out = run(cmd, None, timeout)?;
    if out.success() {
        Ok(out)
    } else {
        Err(PeerError::Failed(format!(
            "kafka-peers-go {args:?} failed: {}",
            out.describe()
        )))
    }
}
