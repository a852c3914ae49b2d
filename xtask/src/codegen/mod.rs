//! `cargo xtask codegen [--specs DIR] [--new-specs DIR] [--internal DIR] [--check]`: Kafka's
//! message schemas -> Rust modules in `kafka-protocol/src/messages/` (Kafka 3.9's and 4.4's
//! schemas merged into one module per message, covering every version of both: [`merge`]),
//! and Kafka's internal record schemas -> Rust modules in `kafka-protocol/src/metadata/`
//! (KRaft metadata records) and `kafka-protocol/src/coordinator/` (`__consumer_offsets` and
//! `__transaction_state` keys and values), formatted with rustfmt. `--check` fails when the
//! committed code differs from what the schemas give.

mod emit;
mod merge;
mod records;
mod schema;

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::Error;

pub(crate) struct Options {
    /// Kafka 3.9's message schemas (the versions Kafka 4.0 removed, KIP-896).
    pub(crate) specs: PathBuf,
    /// Kafka 4.4's message schemas, merged with `specs`.
    pub(crate) new_specs: PathBuf,
    /// Kafka's internal record schemas (`metadata/`, `group-coordinator/`,
    /// `transaction-coordinator/`).
    pub(crate) internal: PathBuf,
    pub(crate) check: bool,
}

/// Where the generated modules live.
pub(crate) fn out_dir(root: &Path) -> PathBuf {
    root.join("kafka-protocol/src/messages")
}

/// One output directory: the files generated into it, and those written by hand that it
/// also holds (left alone).
struct Output {
    dir: PathBuf,
    files: BTreeMap<String, String>,
    hand_written: &'static [&'static str],
}

fn load_dir(dir: &Path) -> Result<Vec<schema::Spec>, Error> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("reading schemas in {}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    if paths.is_empty() {
        return Err(format!("no schema files in {}", dir.display()).into());
    }
    let mut specs = Vec::with_capacity(paths.len());
    for p in &paths {
        specs.push(schema::load(p)?);
    }
    specs.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(specs)
}

/// One module per schema.
fn modules<'a>(
    specs: impl IntoIterator<Item = &'a schema::Spec>,
) -> Result<BTreeMap<String, String>, Error> {
    let mut files = BTreeMap::new();
    for spec in specs {
        let text = emit::message_module(spec).map_err(|e| format!("{}: {e}", spec.name))?;
        files.insert(format!("{}.rs", emit::snake(&spec.name)), text);
    }
    Ok(files)
}

pub(crate) fn run(root: &Path, opts: &Options) -> Result<(), Error> {
    let older = load_dir(&opts.specs)?;
    let newer = load_dir(&opts.new_specs)?;
    let schemas_read = older.len() + newer.len();
    let messages = merge::merge(older, newer)?;
    let mut files = modules(&messages)?;
    files.insert("mod.rs".into(), emit::mod_rs(&messages)?);
    let mut outputs = vec![Output {
        dir: out_dir(root),
        files,
        hand_written: &[],
    }];

    let metadata = load_dir(&opts.internal.join("metadata"))?;
    // `metadata/records.rs` is the index of `metadata/records/`; `metadata/mod.rs` is ours.
    let dir = root.join("kafka-protocol/src/metadata");
    outputs.push(Output {
        dir: dir.join("records"),
        files: modules(&metadata)?,
        hand_written: &[],
    });
    outputs.push(Output {
        dir,
        files: BTreeMap::from([("records.rs".into(), records::metadata_rs(&metadata)?)]),
        hand_written: &["mod.rs"],
    });

    let group = load_dir(&opts.internal.join("group-coordinator"))?;
    let txn = load_dir(&opts.internal.join("transaction-coordinator"))?;
    let dir = root.join("kafka-protocol/src/coordinator");
    outputs.push(Output {
        dir: dir.join("records"),
        files: modules(group.iter().chain(&txn))?,
        hand_written: &[],
    });
    let index = records::coordinator_rs(&[
        ("GroupCoordinator", "__consumer_offsets", &group),
        ("TransactionCoordinator", "__transaction_state", &txn),
    ])?;
    outputs.push(Output {
        dir,
        files: BTreeMap::from([("records.rs".into(), index)]),
        hand_written: &["mod.rs"],
    });
    let schemas = schemas_read + metadata.len() + group.len() + txn.len();

    let mut stale = Vec::new();
    let mut count = 0;
    for out in &outputs {
        let dir = &out.dir;
        let shown = dir.strip_prefix(root).unwrap_or(dir).display().to_string();
        for (name, text) in &out.files {
            count += 1;
            let formatted = rustfmt(text).map_err(|e| format!("{name}: {e}"))?;
            let path = dir.join(name);
            let current = std::fs::read_to_string(&path).unwrap_or_default();
            if current != formatted {
                if opts.check {
                    stale.push(format!("{shown}/{name}"));
                } else {
                    std::fs::create_dir_all(dir)?;
                    std::fs::write(&path, formatted)?;
                }
            }
        }
        // Files that no schema produces any more.
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.ends_with(".rs")
                && !out.files.contains_key(&name)
                && !out.hand_written.contains(&name.as_str())
            {
                if opts.check {
                    stale.push(format!("{shown}/{name}"));
                } else {
                    std::fs::remove_file(entry.path())?;
                }
            }
        }
    }
    if opts.check {
        if !stale.is_empty() {
            return Err(format!(
                "generated code is stale ({}); run `cargo xtask codegen` and commit",
                stale.join(", ")
            )
            .into());
        }
        println!("codegen: {count} modules up to date ({schemas} schemas)");
    } else {
        println!("codegen: wrote {count} modules from {schemas} schemas");
    }
    Ok(())
}

fn rustfmt(text: &str) -> Result<String, Error> {
    let mut child = Command::new("rustfmt")
        .args(["--edition", "2024", "--emit", "stdout", "--quiet"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("running rustfmt: {e}"))?;
    let mut stdin = child.stdin.take().ok_or("rustfmt stdin")?;
    let input = text.to_owned();
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output()?;
    writer.join().map_err(|_| "rustfmt writer thread")??;
    if !out.status.success() {
        return Err(format!("rustfmt failed: {}", String::from_utf8_lossy(&out.stderr)).into());
    }
    Ok(String::from_utf8(out.stdout)?)
}
