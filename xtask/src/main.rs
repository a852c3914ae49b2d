//! Project tasks: `cargo xtask <command>`.
//!
//! - `codegen [--specs DIR] [--check]`: generate `kafka-protocol/src/messages/` from Kafka's schemas.

mod codegen;

use std::path::{Path, PathBuf};

type Error = Box<dyn std::error::Error + Send + Sync>;

fn usage() -> &'static str {
    "usage: cargo xtask <command>\n\
     commands:\n  \
       codegen [--specs DIR] [--check]   generate the protocol code from Kafka's message schemas\n"
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Err(e) = run(&args) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run(args: &[String]) -> Result<(), Error> {
    let root = workspace_root();
    let Some((cmd, rest)) = args.split_first() else {
        return Err(usage().into());
    };
    match cmd.as_str() {
        "codegen" => {
            let mut opts = codegen::Options {
                specs: root.join("../shared/kafka-protocol-specs"),
                check: false,
            };
            let mut it = rest.iter();
            while let Some(a) = it.next() {
                match a.as_str() {
                    "--check" => opts.check = true,
                    "--specs" => opts.specs = it.next().ok_or("--specs needs a directory")?.into(),
                    other => {
                        return Err(format!("codegen: unknown argument {other}\n{}", usage()).into());
                    }
                }
            }
            codegen::run(&root, &opts)
        }
        "-h" | "--help" | "help" => {
            print!("{}", usage());
            Ok(())
        }
        other => Err(format!("unknown command {other}\n{}", usage()).into()),
    }
}
