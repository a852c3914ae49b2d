//! Cross-check against an implementation we did not write: every request and response we
//! encode, at every version kafka-python implements, must decode with kafka-python's protocol
//! classes to the values we encoded (tests/crosscheck/check_kafka_python.py does the decoding
//! and comparing; tests/crosscheck/FINDINGS.md lists what kafka-python itself gets wrong).
//!
//! Needs `python3` with the `kafka-python` package, and Kafka's schemas in
//! `../shared/kafka-protocol-specs` beside the workspace (or `KAFKA_PROTOCOL_SPECS`). Without
//! them the test prints a notice and passes, unless `KAFKA_RS_REQUIRE_PEERS=1` (set in CI),
//! where it fails.
#![allow(clippy::unwrap_used)]

#[path = "crosscheck/dump.rs"]
mod dump;

use std::path::{Path, PathBuf};
use std::process::Command;

/// The fewest distinct api keys, (api, version, direction) cases and single checks that must
/// pass: what runs today (Kafka 3.9.0's schemas, kafka-python 3.0.12: 52 apis, 486 cases,
/// 923 checks), so that coverage cannot shrink unnoticed. Raise them when coverage grows.
const MIN_APIS: usize = 52;
const MIN_CASES: usize = 486;
const MIN_PASSED: usize = 923;
/// Encodings dumped for kafka-python to decode (916 today).
const MIN_FILES: usize = 916;

fn peers_required() -> bool {
    std::env::var("KAFKA_RS_REQUIRE_PEERS").is_ok_and(|v| v == "1")
}

/// Fails (peers required) or prints why the check cannot run.
fn unavailable(why: &str) {
    assert!(
        !peers_required(),
        "KAFKA_RS_REQUIRE_PEERS=1 but the kafka-python cross-check cannot run: {why}"
    );
    eprintln!("NOTICE: skipping the kafka-python cross-check: {why}");
}

fn specs_dir() -> PathBuf {
    std::env::var_os("KAFKA_PROTOCOL_SPECS").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/kafka-protocol-specs"),
        PathBuf::from,
    )
}

/// Kafka 4.4's schemas, merged with [`specs_dir`]'s as the generator merges them.
fn new_specs_dir() -> PathBuf {
    std::env::var_os("KAFKA_PROTOCOL_SPECS_4").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/kafka-protocol-specs-4.4.0"),
        PathBuf::from,
    )
}

/// The number after `label` on a line of the script's summary.
fn summary_number(out: &str, label: &str) -> Option<usize> {
    out.lines().rev().find_map(|line| {
        let rest = line.strip_prefix(label)?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

#[test]
fn kafka_python_decodes_what_we_encode() {
    match Command::new("python3")
        .args(["-c", "import kafka.protocol"])
        .output()
    {
        Ok(out) if out.status.success() => {}
        Ok(out) => {
            return unavailable(&format!(
                "python3 cannot import kafka-python (`pip install kafka-python`): {}",
                String::from_utf8_lossy(&out.stderr)
                    .lines()
                    .last()
                    .unwrap_or_default()
            ));
        }
        Err(e) => return unavailable(&format!("python3 not found: {e}")),
    }
    let specs = specs_dir();
    if !specs.is_dir() {
        return unavailable(&format!("Kafka's schemas not found at {}", specs.display()));
    }
    let new_specs = new_specs_dir();
    if !new_specs.is_dir() {
        return unavailable(&format!(
            "Kafka 4.4's schemas not found at {}",
            new_specs.display()
        ));
    }

    let dir = std::env::temp_dir().join(format!("kafka-crosscheck-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let written = dump::write_all(&dir).unwrap();
    assert!(
        written.files >= MIN_FILES,
        "{written:?} (want {MIN_FILES} files)"
    );

    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/crosscheck/check_kafka_python.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(&dir)
        .arg("--specs")
        .arg(&specs)
        .arg("--new-specs")
        .arg(&new_specs)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.status.success(),
        "kafka-python cross-check failed ({}):\n{stdout}\n{stderr}",
        out.status
    );

    // "crosscheck: N passed, M failed, K skipped"
    let counts: Vec<usize> = stdout
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("crosscheck:"))
        .map(|l| {
            l.split(',')
                .filter_map(|part| part.split_whitespace().next()?.parse().ok())
                .collect()
        })
        .unwrap_or_default();
    assert!(
        counts.len() == 3 && counts[1] == 0,
        "no clean summary line:\n{stdout}\n{stderr}"
    );
    let apis = summary_number(&stdout, "apis checked:").unwrap_or(0);
    let cases = summary_number(&stdout, "cases checked:").unwrap_or(0);
    assert!(
        apis >= MIN_APIS,
        "only {apis} api keys checked (want {MIN_APIS}):\n{stdout}"
    );
    assert!(
        cases >= MIN_CASES,
        "only {cases} (api, version, direction) cases checked (want {MIN_CASES}):\n{stdout}"
    );
    assert!(
        counts[0] >= MIN_PASSED,
        "only {} checks passed (want {MIN_PASSED}):\n{stdout}",
        counts[0]
    );
}
