//! `cargo xtask codegen [--specs DIR] [--check]`: Kafka's message schemas -> Rust modules in
//! `kafka-protocol/src/messages/`, formatted with rustfmt. `--check` fails when the committed
//! code differs from what the schemas give.

mod emit;
mod schema;

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::Error;

pub(crate) struct Options {
    pub(crate) specs: PathBuf,
    pub(crate) check: bool,
}

/// Where the generated modules live.
pub(crate) fn out_dir(root: &Path) -> PathBuf {
    root.join("kafka-protocol/src/messages")
}

pub(crate) fn run(root: &Path, opts: &Options) -> Result<(), Error> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&opts.specs)
        .map_err(|e| format!("reading schemas in {}: {e}", opts.specs.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    if paths.is_empty() {
        return Err(format!("no schema files in {}", opts.specs.display()).into());
    }
    let mut specs = Vec::with_capacity(paths.len());
    for p in &paths {
        specs.push(schema::load(p)?);
    }
    specs.sort_by(|a, b| a.name.cmp(&b.name));

    let mut files: BTreeMap<String, String> = BTreeMap::new();
    for spec in &specs {
        let text = emit::message_module(spec).map_err(|e| format!("{}: {e}", spec.name))?;
        files.insert(format!("{}.rs", emit::snake(&spec.name)), text);
    }
    files.insert("mod.rs".into(), emit::mod_rs(&specs)?);

    let dir = out_dir(root);
    let mut stale = Vec::new();
    for (name, text) in &files {
        let formatted = rustfmt(text).map_err(|e| format!("{name}: {e}"))?;
        let path = dir.join(name);
        let current = std::fs::read_to_string(&path).unwrap_or_default();
        if current != formatted {
            if opts.check {
                stale.push(name.clone());
            } else {
                std::fs::create_dir_all(&dir)?;
                std::fs::write(&path, formatted)?;
            }
        }
    }
    // Files that no schema produces any more.
    for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".rs") && !files.contains_key(&name) {
            if opts.check {
                stale.push(name);
            } else {
                std::fs::remove_file(entry.path())?;
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
        println!(
            "codegen: {} modules up to date ({} schemas)",
            files.len(),
            specs.len()
        );
    } else {
        println!(
            "codegen: wrote {} modules from {} schemas into {}",
            files.len(),
            specs.len(),
            dir.display()
        );
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
