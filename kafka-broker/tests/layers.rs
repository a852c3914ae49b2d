//! The broker's layers (see the crate docs): every `crate::` path in `src/` (tests left out)
//! points to a module of the same stratum or a lower one. A failure names the file, the
//! path and the two strata.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

/// The stratum of each top-level module of the crate, as the crate docs draw them.
const STRATA: &[(&str, u8)] = &[
    ("clock", 1),
    ("sync", 1),
    ("error", 1),
    ("config", 1),
    ("rate_limit", 1),
    ("topics", 1),
    ("meta_properties", 1),
    ("credentials", 1),
    ("acls", 1),
    ("record_file", 1),
    ("quota", 1),
    ("quotas", 1),
    ("features", 1),
    ("log", 2),
    ("replica", 3),
    ("convert", 3),
    ("coordinator", 4),
    ("group", 4),
    ("txn", 4),
    ("replication", 4),
    ("cluster", 4),
    ("node", 5),
    ("server", 6),
    ("handler", 6),
    ("sendfile", 6),
    ("run", 6),
];

fn stratum(module: &str) -> Option<u8> {
    STRATA.iter().find(|(m, _)| *m == module).map(|(_, s)| *s)
}

/// The top-level module a source file belongs to (`None` for the crate root and `main.rs`).
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (name != "lib" && name != "main").then(|| name.to_owned())
}

fn is_test_file(rel: &str) -> bool {
    rel.contains("/tests/") || rel.ends_with("tests.rs") || rel.ends_with("_tests.rs")
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a file without comments and without its `#[cfg(test)] mod` blocks (a test
/// module in braces is skipped to its closing brace; one in a file of its own is not read).
fn code(text: &str) -> String {
    let text: String = text
        .lines()
        .map(|l| match l.find("//") {
            Some(at) => &l[..at],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = String::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = &rest[at..];
        // Skip the item: to its `;` (a module in another file) or its balanced braces.
        let mut depth = 0usize;
        let mut end = after.len();
        for (i, c) in after.char_indices() {
            match c {
                ';' if depth == 0 => {
                    end = i + 1;
                    break;
                }
                '{' => depth += 1,
                '}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        end = i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// Every module named right after `crate::` in `code`, and `use crate::{a, b}` groups.
fn crate_paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let after = &rest[at + "crate::".len()..];
        if let Some(group) = after.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let name: String = item
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    out.push(name);
                }
            }
        } else {
            let name: String = after
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.push(name);
            }
        }
        rest = after;
    }
    out
}

#[test]
fn imports_point_down_the_strata() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.sort();
    let mut wrong = Vec::new();
    let mut checked = 0;
    for file in &files {
        let rel = file
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if is_test_file(&rel) {
            continue;
        }
        let Some(module) = module_of(&src, file) else {
            continue;
        };
        let from = stratum(&module)
            .unwrap_or_else(|| panic!("{rel}: module {module} has no stratum in STRATA"));
        for target in crate_paths(&code(&std::fs::read_to_string(file).unwrap())) {
            // Names re-exported at the crate root (`crate::BrokerError`, ...) are the root's.
            let Some(to) = stratum(&target) else {
                continue;
            };
            checked += 1;
            if to > from {
                wrong.push(format!(
                    "{rel} (stratum {from}) uses crate::{target} (stratum {to})"
                ));
            }
        }
    }
    assert!(
        checked > 100,
        "only {checked} crate paths found: is the scan broken?"
    );
    assert!(
        wrong.is_empty(),
        "imports pointing up:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn every_module_of_the_crate_has_a_stratum() {
    let lib =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs")).unwrap();
    for line in lib.lines() {
        let line = line.trim();
        let Some(name) = line
            .strip_prefix("pub mod ")
            .or_else(|| line.strip_prefix("mod "))
            .and_then(|r| r.strip_suffix(';'))
        else {
            continue;
        };
        assert!(stratum(name).is_some(), "module {name} has no stratum");
    }
}

#[test]
fn the_scan_sees_paths_and_groups() {
    let found = crate_paths(
        "use crate::log::X;\nuse crate::{node, replica::Y};\nlet a = crate::clock::Clock::system();",
    );
    assert_eq!(found, ["log", "node", "replica", "clock"]);
    // Comments and test modules are not code; what follows a test module is.
    let c = code(
        "use crate::log; // crate::node\n#[cfg(test)]\nmod tests { fn f() { crate::run::x(); } }\n\
         #[cfg(test)]\nmod more;\nuse crate::sync;",
    );
    assert_eq!(crate_paths(&c), ["log", "sync"]);
}
