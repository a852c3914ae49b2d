//! Project tasks: `cargo xtask <command>`.

mod bench;
mod codegen;
mod decode;
mod fuzz;

use std::path::{Path, PathBuf};

type Error = Box<dyn std::error::Error + Send + Sync>;

fn usage() -> &'static str {
    "usage: cargo xtask <command>\n\
     commands:\n  \
       codegen [--specs DIR] [--new-specs DIR] [--internal DIR] [--check]\n                                    \
     generate the protocol code from Kafka's message schemas (3.9's and 4.4's, merged)\n                                    \
     and internal record schemas\n  \
       decode [FILE|-] [--response --api-key K --api-version V] [--roundtrip]\n                                    \
     decode one frame (raw or hex, with or without size prefix) and print it\n  \
       fuzz <target|all> [--seconds N] [--smoke]  fuzz the decoders (libFuzzer; --smoke: stable, CI)\n  \
       bench codec [--quick]             criterion benchmarks, ours and kafka-protocol-rs side by side\n  \
       bench net [--quick] [--seconds N] round trips/s on one loopback connection, 1/5/32 in flight\n  \
       bench broker [--baseline PATH [--rounds N] | --tls] [--quick]\n                                         produce/consume throughput and latency of kafka-broker (librdkafka),\n                                         against another broker binary (or TLS against plaintext) in rounds;\n                                         then bench replication\n  \
       bench producer [--quick|--full] [--rounds N] [--json] [--tls]\n                                         our producer vs librdkafka against our broker\n  \
       bench consumer [--quick|--full] [--rounds N] [--json] [--tls]\n                                         our consumer vs librdkafka reading from our broker\n  \
       bench cluster [--quick] [--rounds N] [--session-timeout-ms MS] [--json]\n                                         failover and CreateTopics timings of 3 broker nodes\n  \
       bench replication [--quick] [--rounds N] [--session-timeout-ms MS] [--json]\n                                         replication: RF3 vs RF1 acks=all, latency, leader failover\n"
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
                new_specs: root.join("../shared/kafka-protocol-specs-4.4.0"),
                internal: root.join("../shared/kafka-internal-schemas"),
                check: false,
            };
            let mut it = rest.iter();
            while let Some(a) = it.next() {
                match a.as_str() {
                    "--check" => opts.check = true,
                    "--specs" => opts.specs = it.next().ok_or("--specs needs a directory")?.into(),
                    "--new-specs" => {
                        opts.new_specs = it.next().ok_or("--new-specs needs a directory")?.into()
                    }
                    "--internal" => {
                        opts.internal = it.next().ok_or("--internal needs a directory")?.into()
                    }
                    other => {
                        return Err(
                            format!("codegen: unknown argument {other}\n{}", usage()).into()
                        );
                    }
                }
            }
            codegen::run(&root, &opts)
        }
        "bench" => bench::run(&root, rest),
        "decode" => decode::run(&root, rest),
        "fuzz" => fuzz::run(&root, rest),
        "-h" | "--help" | "help" => {
            print!("{}", usage());
            Ok(())
        }
        other => Err(format!("unknown command {other}\n{}", usage()).into()),
    }
}

/// Runs `cargo` (the one that runs xtask) with `args` in the workspace root.
pub(crate) fn cargo(root: &Path, args: &[&str]) -> Result<(), Error> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = std::process::Command::new(cargo)
        .args(args)
        .current_dir(root)
        .status()
        .map_err(|e| format!("running cargo: {e}"))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("cargo {} failed ({status})", args.join(" ")).into())
    }
}
