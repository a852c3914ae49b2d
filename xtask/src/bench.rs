//! `cargo xtask bench codec [--quick]`: runs the criterion benchmarks of `kafka-bench` (ours and
//! kafka-protocol-rs side by side), streaming criterion's progress, then prints a summary table
//! and writes it as JSON to `target/bench-codec.json`.
//!
//! `cargo xtask bench net [--quick] [--seconds N]`: runs `kafka-bench`'s `net_bench` example in
//! release (round trips per second on one loopback connection with 1, 5 and 32 requests in
//! flight, CPU time per request, peak RSS), which prints its progress, a table and JSON; the
//! JSON also goes to `target/bench-net.json`.
//!
//! `cargo xtask bench broker [--baseline PATH | --peer kafka] [--rounds N] [--quick]`: builds
//! `kafka-broker` in release, then runs `kafka-bench`'s `broker_bench` example (feature `rdkafka`, which
//! compiles the bundled librdkafka) against it: produce/consume throughput, end-to-end
//! latency, broker CPU and peak RSS, disk write speed. With `--baseline PATH` another broker
//! binary (a build of an earlier commit) runs the same cases in interleaved rounds (default 3)
//! and the summary gives per case the median throughput of each, the ratio ours/baseline and
//! the broker CPU time per record. `--peer kafka` does the same with Apache Kafka itself
//! (fetched by `kafka-peers/fetch`, one KRaft node with Kafka's own server JVM settings) as
//! the second broker. It prints progress, a table and JSON; the JSON also goes to
//! `target/bench-broker.json`. Then it runs the replication cases (`bench replication`, with
//! `--quick` when given) on three nodes of the same build.
//!
//! `cargo xtask bench broker --tls [--rounds N] [--quick]`: the same cases over plaintext and
//! over TLS (a second listener, `SSL`, with a certificate made for the run; librdkafka with
//! `security.protocol=ssl`), in interleaved rounds (default 3) on fresh brokers of the same
//! build; the summary gives per case the median records/s, MB/s and broker CPU per record of
//! each, the ratios TLS/plaintext (of the medians and round by round), and which path the TLS
//! fetches take on this kernel (`TLS fetch: copied (no kTLS)` without kernel TLS). The
//! replication cases are not run then (they have no TLS).
//!
//! `cargo xtask bench producer [--quick|--full] [--rounds N] [--json] [--only TEXT]
//! [--peer kafka]`: builds `kafka-broker` in release (`--peer kafka`: fetches Apache Kafka
//! and runs against it instead), then runs `kafka-bench`'s `producer_bench` example (feature
//! `rdkafka`): our producer and librdkafka against that broker with the same settings, each
//! phase in a child process of its own (records/s, MB/s, client CPU per record, peak RSS,
//! send-to-ack latency, the ratio ours/librdkafka), including transactional cases
//! (transactions of 100 and of 10,000 records, `transactional.id` per phase, commits/s). It
//! prints progress and a table; the JSON goes to `target/bench-producer.json`, and with
//! `--json` it is also the last line printed. `--only TEXT` runs the cases whose name
//! contains TEXT (`--only txns`: the transactional ones).
//!
//! `cargo xtask bench producer --tls` and `cargo xtask bench consumer --tls` (with the other
//! options but `--peer`): the broker also gets an `SSL` listener (a certificate made for the
//! run), and every case runs each client over plaintext and over TLS (ours with
//! `security.protocol=SSL` and a PEM truststore, librdkafka with `security.protocol=ssl` and
//! `ssl.ca.location`, everything else the same) in interleaved rounds: the table gives the
//! TLS rows next to the plaintext ones, with ours/librdkafka over TLS and TLS/plaintext per
//! client; the JSON adds a `tls` object per case.
//!
//! `cargo xtask bench consumer [--quick|--full] [--rounds N] [--json] [--only TEXT]
//! [--peer kafka]`: builds `kafka-broker` in release (`--peer kafka`: fetches Apache Kafka
//! and runs against it instead), then runs `kafka-bench`'s `consumer_bench` example (feature
//! `rdkafka`): our consumer and librdkafka reading the same pre-filled topics from that broker
//! with the same settings, each phase in a child process of its own (records/s, MB/s, client
//! CPU per record, peak RSS, the ratio ours/librdkafka), including a read_committed case (a
//! topic of committed transactions with 1 in 10 aborted, which both must read to exactly the
//! committed count). It prints progress and a table; the JSON goes to
//! `target/bench-consumer.json`, and with `--json` it is also the last line printed. `--only
//! TEXT` runs the cases whose name contains TEXT (`--only read_committed`).
//!
//! `cargo xtask bench cluster [--quick] [--rounds N] [--session-timeout-ms MS] [--json]`:
//! builds `kafka-broker` in release, then runs `kafka-bench`'s `cluster_bench` example (default
//! features; our `kafka-net` as the client) against three combined nodes of it on loopback:
//! controller failover (SIGKILL of the active controller to the first CreateTopics that
//! succeeds), broker failover (SIGKILL of a partition leader to a live leader for every
//! partition; mostly `broker.session.timeout.ms`, default 3000 here), CreateTopics of 1,000
//! partitions (to the response and to every broker's metadata), min/median/max over the rounds
//! (default 10, `--quick` 3), and each node's peak RSS. It prints progress and a table; the JSON
//! goes to `target/bench-cluster.json`, and with `--json` it is also the last line printed.
//!
//! `cargo xtask bench replication [--quick] [--rounds N] [--session-timeout-ms MS] [--json]`:
//! builds `kafka-broker` in release, then runs `kafka-bench`'s `replication_bench` example
//! (default features; our `kafka-producer` and `kafka-consumer` as the clients) against three
//! combined nodes of it on loopback: produce throughput with acks=all at replication factor 3
//! (`min.insync.replicas=2`) against 1 in interleaved rounds (records/s, MB/s, broker CPU per
//! record, the RF3/RF1 ratio of each round), end-to-end latency at 2,000 records/s (acks=all,
//! RF3; p50/p99/p99.9/max), and the time from a SIGKILL of a partition leader to an acks=all
//! record acknowledged by the new leader and to Metadata naming it (mostly
//! `broker.session.timeout.ms`, default 3000 here; min/median/max over the rounds, default 5,
//! `--quick` 3), and each node's peak RSS. It prints progress and a table; the JSON goes to
//! `target/bench-replication.json`, and with `--json` it is also the last line printed.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::Error;

pub(crate) fn run(root: &Path, args: &[String]) -> Result<(), Error> {
    let Some((what, rest)) = args.split_first() else {
        return Err("bench: say what to measure: \
             `cargo xtask bench codec|net|broker|producer|consumer|cluster|replication [--quick]`"
            .into());
    };
    match what.as_str() {
        "codec" => codec(root, rest),
        "net" => net(root, rest),
        "broker" => broker(root, rest),
        "producer" => client(root, "producer", rest),
        "consumer" => client(root, "consumer", rest),
        "cluster" => cluster(root, "cluster", rest),
        "replication" => cluster(root, "replication", rest),
        other => Err(format!(
            "bench: unknown benchmark {other} \
             (known: codec, net, broker, producer, consumer, cluster, replication)"
        )
        .into()),
    }
}

fn target_dir(root: &Path) -> PathBuf {
    std::env::var("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| root.join("target"))
}

fn net(root: &Path, rest: &[String]) -> Result<(), Error> {
    let out = target_dir(root).join("bench-net.json");
    let out = out.to_string_lossy().into_owned();
    let mut args = vec![
        "run",
        "--release",
        "-p",
        "kafka-bench",
        "--example",
        "net_bench",
        "--",
        "--json",
        &out,
    ];
    let mut it = rest.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--quick" => args.push("--quick"),
            "--seconds" => {
                args.push("--seconds");
                args.push(it.next().ok_or("bench net: --seconds needs a value")?);
            }
            other => return Err(format!("bench net: unknown argument {other}").into()),
        }
    }
    println!("bench: building net_bench in release and running it (progress below)");
    crate::cargo(root, &args)
}

fn broker(root: &Path, rest: &[String]) -> Result<(), Error> {
    let target = target_dir(root);
    let (args, quick) = broker_args(&target, rest)?;
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let replication = cluster_args(&target, "replication", &quick)?;
    let replication: Vec<&str> = replication.iter().map(String::as_str).collect();
    println!("bench: building kafka-broker in release");
    crate::cargo(root, &["build", "--release", "-p", "kafka-broker"])?;
    if args.contains(&"--apache-kafka") {
        fetch_peers(root)?;
    }
    println!("bench: building broker_bench (bundled librdkafka) in release and running it");
    crate::cargo(root, &args)?;
    if args.contains(&"--tls") {
        println!("bench: --tls: the replication cases are not run (they have no TLS)");
        return Ok(());
    }
    println!("bench: building replication_bench in release and running it on three nodes");
    crate::cargo(root, &replication)
}

/// Fetches Apache Kafka's jars (and the other peers) into `target/peers` if not there yet.
fn fetch_peers(root: &Path) -> Result<(), Error> {
    println!("bench: fetching Apache Kafka (kafka-peers/fetch)");
    let status = std::process::Command::new("bash")
        .arg(root.join("kafka-peers/fetch"))
        .status()?;
    if !status.success() {
        return Err(format!("kafka-peers/fetch failed ({status})").into());
    }
    Ok(())
}

/// The `cargo` arguments that run `broker_bench` for `cargo xtask bench broker <rest>`, its
/// JSON in `bench-broker.json`, and the arguments the replication cases that follow take
/// (`--quick` when given). A `--baseline` path is made absolute (cargo runs the example from
/// the workspace root).
fn broker_args(target: &Path, rest: &[String]) -> Result<(Vec<String>, Vec<String>), Error> {
    let exe = target
        .join("release")
        .join(format!("kafka-broker{}", std::env::consts::EXE_SUFFIX));
    let out = target.join("bench-broker.json");
    let mut args: Vec<String> = [
        "run",
        "--release",
        "-p",
        "kafka-bench",
        "--features",
        "rdkafka",
        "--example",
        "broker_bench",
        "--",
        "--broker",
    ]
    .map(String::from)
    .into();
    args.push(exe.to_string_lossy().into_owned());
    args.push("--json".into());
    args.push(out.to_string_lossy().into_owned());
    let mut quick = Vec::new();
    let mut it = rest.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--quick" => {
                args.push(a.clone());
                quick.push(a.clone());
            }
            "--baseline" => {
                let v = it.next().ok_or("bench broker: --baseline needs a path")?;
                let path = std::path::absolute(v)
                    .map_err(|e| format!("bench broker: --baseline {v}: {e}"))?;
                args.push(a.clone());
                args.push(path.to_string_lossy().into_owned());
            }
            "--rounds" => {
                let v = it.next().ok_or("bench broker: --rounds needs a value")?;
                if !v.parse::<u64>().is_ok_and(|n| (1..=9).contains(&n)) {
                    return Err(format!("bench broker: --rounds takes 1 to 9, not {v}").into());
                }
                args.push(a.clone());
                args.push(v.clone());
            }
            "--peer" => {
                let v = it
                    .next()
                    .ok_or("bench broker: --peer needs a value (kafka)")?;
                if v != "kafka" {
                    return Err(format!("bench broker: --peer takes kafka, not {v}").into());
                }
                args.push("--apache-kafka".into());
            }
            "--tls" => args.push(a.clone()),
            other => return Err(format!("bench broker: unknown argument {other}").into()),
        }
    }
    let has = |flag: &str| args.iter().any(|a| a == flag);
    if has("--tls") && (has("--baseline") || has("--apache-kafka")) {
        return Err(
            "bench broker: --tls compares TLS with plaintext on our broker; \
                    not with --baseline or --peer"
                .into(),
        );
    }
    Ok((args, quick))
}

/// `bench producer` / `bench consumer`: the `<client>_bench` example of kafka-bench (ours vs
/// librdkafka) against a release broker.
fn client(root: &Path, client: &str, rest: &[String]) -> Result<(), Error> {
    let args = client_args(&target_dir(root), client, rest)?;
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    println!("bench: building kafka-broker in release");
    crate::cargo(root, &["build", "--release", "-p", "kafka-broker"])?;
    if args.contains(&"--apache-kafka") {
        fetch_peers(root)?;
    }
    println!("bench: building {client}_bench (bundled librdkafka) in release and running it");
    crate::cargo(root, &args)
}

/// The `cargo` arguments that run `<client>_bench` (`producer` or `consumer`) for
/// `cargo xtask bench <client> <rest>`, its JSON in `bench-<client>.json`.
fn client_args(target: &Path, client: &str, rest: &[String]) -> Result<Vec<String>, Error> {
    let exe = target
        .join("release")
        .join(format!("kafka-broker{}", std::env::consts::EXE_SUFFIX));
    let out = target.join(format!("bench-{client}.json"));
    let mut args: Vec<String> = [
        "run",
        "--release",
        "-p",
        "kafka-bench",
        "--features",
        "rdkafka",
        "--example",
    ]
    .map(String::from)
    .into();
    args.push(format!("{client}_bench"));
    args.push("--".into());
    args.push("--broker".into());
    args.push(exe.to_string_lossy().into_owned());
    args.push("--out".into());
    args.push(out.to_string_lossy().into_owned());
    let mut it = rest.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--quick" | "--full" | "--json" | "--tls" => args.push(a.clone()),
            "--rounds" | "--only" => {
                let v = it
                    .next()
                    .ok_or_else(|| format!("bench {client}: {a} needs a value"))?;
                args.push(a.clone());
                args.push(v.clone());
            }
            "--peer" => {
                let v = it
                    .next()
                    .ok_or_else(|| format!("bench {client}: --peer needs a value (kafka)"))?;
                if v != "kafka" {
                    return Err(format!("bench {client}: --peer takes kafka, not {v}").into());
                }
                args.push("--apache-kafka".into());
            }
            other => return Err(format!("bench {client}: unknown argument {other}").into()),
        }
    }
    let has = |flag: &str| rest.iter().any(|a| a == flag);
    if has("--quick") && has("--full") {
        return Err(format!("bench {client}: --quick or --full, not both").into());
    }
    if has("--tls") && has("--peer") {
        return Err(
            format!("bench {client}: --tls runs against our broker only, not --peer").into(),
        );
    }
    Ok(args)
}

/// `bench cluster` / `bench replication`: the `<name>_bench` example of kafka-bench against
/// three release brokers.
fn cluster(root: &Path, name: &str, rest: &[String]) -> Result<(), Error> {
    let args = cluster_args(&target_dir(root), name, rest)?;
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    println!("bench: building kafka-broker in release");
    crate::cargo(root, &["build", "--release", "-p", "kafka-broker"])?;
    println!("bench: building {name}_bench in release and running it (progress below)");
    crate::cargo(root, &args)
}

/// The `cargo` arguments that run `<name>_bench` (`cluster` or `replication`, which take the
/// same options) for `cargo xtask bench <name> <rest>`, its JSON in `bench-<name>.json`.
fn cluster_args(target: &Path, name: &str, rest: &[String]) -> Result<Vec<String>, Error> {
    let exe = target
        .join("release")
        .join(format!("kafka-broker{}", std::env::consts::EXE_SUFFIX));
    let out = target.join(format!("bench-{name}.json"));
    let mut args: Vec<String> = ["run", "--release", "-p", "kafka-bench", "--example"]
        .map(String::from)
        .into();
    args.push(format!("{name}_bench"));
    args.push("--".into());
    args.push("--broker".into());
    args.push(exe.to_string_lossy().into_owned());
    args.push("--out".into());
    args.push(out.to_string_lossy().into_owned());
    let mut it = rest.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--quick" | "--json" => args.push(a.clone()),
            "--rounds" | "--session-timeout-ms" => {
                let v = it
                    .next()
                    .ok_or_else(|| format!("bench {name}: {a} needs a value"))?;
                if !v.parse::<u64>().is_ok_and(|n| n > 0) {
                    return Err(
                        format!("bench {name}: {a} takes a positive number, not {v}").into(),
                    );
                }
                args.push(a.clone());
                args.push(v.clone());
            }
            other => return Err(format!("bench {name}: unknown argument {other}").into()),
        }
    }
    Ok(args)
}

fn codec(root: &Path, rest: &[String]) -> Result<(), Error> {
    let target = target_dir(root);
    let criterion_dir = target.join("criterion");
    let _ = std::fs::remove_dir_all(&criterion_dir);
    let mut args = vec![
        "bench",
        "-p",
        "kafka-bench",
        "--features",
        "compare",
        "--bench",
        "codec",
        "--",
    ];
    if rest.iter().any(|a| a == "--quick") {
        args.extend([
            "--warm-up-time",
            "1",
            "--measurement-time",
            "2",
            "--sample-size",
            "10",
        ]);
    }
    println!("bench: building in release and running the codec benchmarks (progress below)");
    crate::cargo(root, &args)?;

    let rows = collect(&criterion_dir)?;
    if rows.is_empty() {
        return Err(format!("no criterion results under {}", criterion_dir.display()).into());
    }
    println!("\n{:<48} {:>14} {:>14}", "benchmark", "time", "throughput");
    for r in &rows {
        let tp = r
            .bytes
            .map(|b| format!("{:.1} GB/s", b as f64 / r.mean_ns))
            .unwrap_or_default();
        println!("{:<48} {:>14} {:>14}", r.id, fmt_ns(r.mean_ns), tp);
    }
    let json: Vec<Value> = rows
        .iter()
        .map(|r| {
            serde_json::json!({
                "id": r.id, "mean_ns": r.mean_ns, "bytes": r.bytes,
                "gb_per_s": r.bytes.map(|b| b as f64 / r.mean_ns),
            })
        })
        .collect();
    let out = target.join("bench-codec.json");
    std::fs::write(&out, serde_json::to_string_pretty(&json)?)?;
    println!("\nbench: {} results, JSON in {}", rows.len(), out.display());
    Ok(())
}

struct Row {
    id: String,
    mean_ns: f64,
    bytes: Option<u64>,
}

/// Reads every `*/new/benchmark.json` + `estimates.json` under criterion's output folder.
fn collect(dir: &Path) -> Result<Vec<Row>, Error> {
    let mut rows = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d)?.flatten() {
            let p = entry.path();
            if p.is_dir() {
                if p.file_name().is_some_and(|n| n == "new") {
                    if let Some(row) = read_row(&p) {
                        rows.push(row);
                    }
                } else {
                    stack.push(p);
                }
            }
        }
    }
    rows.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(rows)
}

fn read_row(dir: &Path) -> Option<Row> {
    let bench: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("benchmark.json")).ok()?).ok()?;
    let est: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("estimates.json")).ok()?).ok()?;
    Some(Row {
        id: bench.get("full_id")?.as_str()?.to_owned(),
        mean_ns: est.get("mean")?.get("point_estimate")?.as_f64()?,
        bytes: bench
            .get("throughput")
            .and_then(|t| t.get("Bytes"))
            .and_then(Value::as_u64),
    })
}

fn fmt_ns(ns: f64) -> String {
    if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.2} µs", ns / 1e3)
    } else {
        format!("{ns:.0} ns")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn cluster_arguments_reach_the_example() {
        let target = Path::new("/t");
        let args = cluster_args(
            target,
            "cluster",
            &strings(&[
                "--quick",
                "--rounds",
                "5",
                "--json",
                "--session-timeout-ms",
                "6000",
            ]),
        )
        .unwrap_or_default();
        let exe = format!("/t/release/kafka-broker{}", std::env::consts::EXE_SUFFIX);
        assert_eq!(
            args,
            strings(&[
                "run",
                "--release",
                "-p",
                "kafka-bench",
                "--example",
                "cluster_bench",
                "--",
                "--broker",
                &exe,
                "--out",
                "/t/bench-cluster.json",
                "--quick",
                "--rounds",
                "5",
                "--json",
                "--session-timeout-ms",
                "6000",
            ])
        );
        assert_eq!(
            cluster_args(target, "cluster", &[]).map(|a| a.len()).ok(),
            Some(11)
        );
        let replication =
            cluster_args(target, "replication", &strings(&["--quick"])).unwrap_or_default();
        assert_eq!(
            replication,
            strings(&[
                "run",
                "--release",
                "-p",
                "kafka-bench",
                "--example",
                "replication_bench",
                "--",
                "--broker",
                &exe,
                "--out",
                "/t/bench-replication.json",
                "--quick",
            ])
        );
    }

    #[test]
    fn broker_arguments_reach_the_example() {
        let target = Path::new("/t");
        let exe = format!("/t/release/kafka-broker{}", std::env::consts::EXE_SUFFIX);
        let head = [
            "run",
            "--release",
            "-p",
            "kafka-bench",
            "--features",
            "rdkafka",
            "--example",
            "broker_bench",
            "--",
            "--broker",
            &exe,
            "--json",
            "/t/bench-broker.json",
        ];
        let (args, quick) = broker_args(target, &[]).unwrap_or_default();
        assert_eq!(args, strings(&head));
        assert!(quick.is_empty());
        let (args, quick) = broker_args(
            target,
            &strings(&[
                "--baseline",
                "/b/kafka-broker-old",
                "--rounds",
                "5",
                "--quick",
            ]),
        )
        .unwrap_or_default();
        let mut expected = head.to_vec();
        expected.extend([
            "--baseline",
            "/b/kafka-broker-old",
            "--rounds",
            "5",
            "--quick",
        ]);
        assert_eq!(args, strings(&expected));
        assert_eq!(quick, strings(&["--quick"]));
        // A relative baseline is made absolute.
        let (args, _) =
            broker_args(target, &strings(&["--baseline", "old/kafka-broker"])).unwrap_or_default();
        let baseline = args.last().map(Path::new);
        assert!(
            baseline.is_some_and(|p| p.is_absolute() && p.ends_with("old/kafka-broker")),
            "{args:?}"
        );
        // Apache Kafka as the other broker.
        let (args, _) = broker_args(target, &strings(&["--peer", "kafka", "--rounds", "3"]))
            .unwrap_or_default();
        let mut expected = head.to_vec();
        expected.extend(["--apache-kafka", "--rounds", "3"]);
        assert_eq!(args, strings(&expected));
        // TLS against plaintext on our broker.
        let (args, quick) =
            broker_args(target, &strings(&["--tls", "--quick"])).unwrap_or_default();
        let mut expected = head.to_vec();
        expected.extend(["--tls", "--quick"]);
        assert_eq!(args, strings(&expected));
        assert_eq!(quick, strings(&["--quick"]));
        for bad in [
            &["--baseline"][..],
            &["--rounds"],
            &["--rounds", "0"],
            &["--rounds", "many"],
            &["--full"],
            &["--peer"],
            &["--peer", "redpanda"],
            &["--tls", "--peer", "kafka"],
            &["--baseline", "/b/old", "--tls"],
        ] {
            assert!(broker_args(target, &strings(bad)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn client_arguments_reach_the_example() {
        let target = Path::new("/t");
        let exe = format!("/t/release/kafka-broker{}", std::env::consts::EXE_SUFFIX);
        let args = client_args(
            target,
            "producer",
            &strings(&["--quick", "--only", "txns", "--rounds", "2", "--json"]),
        )
        .unwrap_or_default();
        assert_eq!(
            args,
            strings(&[
                "run",
                "--release",
                "-p",
                "kafka-bench",
                "--features",
                "rdkafka",
                "--example",
                "producer_bench",
                "--",
                "--broker",
                &exe,
                "--out",
                "/t/bench-producer.json",
                "--quick",
                "--only",
                "txns",
                "--rounds",
                "2",
                "--json",
            ])
        );
        let args =
            client_args(target, "consumer", &strings(&["--tls", "--quick"])).unwrap_or_default();
        assert_eq!(
            args.get(13..).map(<[String]>::to_vec),
            Some(strings(&["--tls", "--quick"])),
            "{args:?}"
        );
        for bad in [
            &["--only"][..],
            &["--rounds"],
            &["--quick", "--full"],
            &["--session-timeout-ms", "1"],
            &["--tls", "--peer", "kafka"],
        ] {
            for client in ["producer", "consumer"] {
                assert!(
                    client_args(target, client, &strings(bad)).is_err(),
                    "{bad:?}"
                );
            }
        }
    }

    #[test]
    fn cluster_arguments_are_checked() {
        let target = Path::new("/t");
        for bad in [
            &["--rounds"][..],
            &["--rounds", "many"],
            &["--rounds", "0"],
            &["--session-timeout-ms", "-1"],
            &["--full"],
        ] {
            for name in ["cluster", "replication"] {
                assert!(
                    cluster_args(target, name, &strings(bad)).is_err(),
                    "{bad:?}"
                );
            }
        }
    }

    #[test]
    fn unknown_benchmarks_name_cluster_and_replication() {
        let e = run(Path::new("/t"), &strings(&["nope"]))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(e.contains("cluster") && e.contains("replication"), "{e}");
    }
}
