//! Running third-party peers (python scripts, kcat) from a test. A peer that cannot run, or
//! a script that exits with [`EXIT_MISSING_PEER`] (its library is not installed), skips with
//! a notice, unless `KAFKA_RS_REQUIRE_PEERS=1` (as CI sets): then it fails the test.

use std::process::{Command, Output, Stdio};

/// The exit code of a script whose client library is missing.
pub(crate) const EXIT_MISSING_PEER: i32 = 3;

/// Whether a missing peer fails the test (`KAFKA_RS_REQUIRE_PEERS=1`).
pub(crate) fn peers_required() -> bool {
    std::env::var("KAFKA_RS_REQUIRE_PEERS").is_ok_and(|v| v == "1")
}

/// Runs a client and returns its output; `None` when it is missing (and that is allowed).
/// A failing client fails the test with its output.
pub(crate) fn run(program: &str, args: &[&str]) -> Option<String> {
    let out: Output = match Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
    {
        Ok(out) => out,
        Err(e) if !peers_required() => {
            eprintln!("SKIPPED: cannot run {program}: {e}");
            return None;
        }
        Err(e) => panic!("cannot run {program}: {e}"),
    };
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if out.status.code() == Some(EXIT_MISSING_PEER) {
        assert!(
            !peers_required(),
            "a required peer is missing: {}",
            stdout.trim()
        );
        eprintln!("SKIPPED: {}", stdout.trim());
        return None;
    }
    assert!(
        out.status.success(),
        "{program} {args:?} failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    Some(stdout)
}
