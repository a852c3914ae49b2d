//! Instructions the broker executes per record, counted by valgrind's callgrind: a figure that
//! does not move with the machine's load, for comparing two builds of the broker where wall
//! times on a shared machine are too noisy.
//!
//! Each broker binary (`--broker PATH`, repeatable) runs under `valgrind --tool=callgrind` on a
//! fresh data directory and gets the same request sequence, one request at a time over one
//! connection, so that the work does not depend on timing: a topic with one partition, then
//! `--batches` Produce requests (v9, one uncompressed batch of `--records` records of
//! `--bytes` bytes each, acks=1, then the same again with acks=all), then Fetch requests (v12,
//! 1 MiB each) reading everything back from offset 0. The same binary also runs with no
//! produce or fetch at all, and the difference between the two counts (start-up and shutdown
//! cancel out) divided by the records written and read is the figure.
//!
//! ```text
//! cargo run --release -p kafka-bench --example broker_instructions -- \
//!     --broker target/release/kafka-broker --broker /path/to/another/kafka-broker \
//!     [--batches 200] [--records 100] [--bytes 100] [--keep DIR]
//! ```
//!
//! `--keep DIR` keeps callgrind's output files there, for `callgrind_annotate`.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use kafka_net::connection::{Connection, ConnectionConfig};
use kafka_protocol::KStr;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    CreateTopicsRequest, FetchRequest, ProduceRequest, RequestBody, ResponseBody,
};
use kafka_protocol::record::{RecordBatchBuilder, RecordBatches};

type Error = Box<dyn std::error::Error + Send + Sync>;

const TOPIC: &str = "instructions";

struct Settings {
    brokers: Vec<PathBuf>,
    /// Where to keep callgrind's output files (for `callgrind_annotate`); removed otherwise.
    keep: Option<PathBuf>,
    batches: usize,
    records: usize,
    bytes: usize,
}

fn main() -> ExitCode {
    match run(&std::env::args().skip(1).collect::<Vec<_>>()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn parse(args: &[String]) -> Result<Settings, Error> {
    let mut s = Settings {
        brokers: Vec::new(),
        keep: None,
        batches: 200,
        records: 100,
        bytes: 100,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "--broker" => s.brokers.push(PathBuf::from(value()?)),
            "--batches" => s.batches = value()?.parse()?,
            "--records" => s.records = value()?.parse()?,
            "--bytes" => s.bytes = value()?.parse()?,
            "--keep" => s.keep = Some(PathBuf::from(value()?)),
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    if s.brokers.is_empty() {
        return Err("--broker PATH is needed (once per binary to count)".into());
    }
    Ok(s)
}

fn run(args: &[String]) -> Result<(), Error> {
    let s = parse(args)?;
    let rt = tokio::runtime::Runtime::new()?;
    let per_phase = s.batches * s.records;
    println!(
        "broker instructions: {} batches of {} records of {} B, acks=1 then acks=all, then read back; under callgrind",
        s.batches, s.records, s.bytes
    );
    let mut results = Vec::new();
    for broker in &s.brokers {
        eprintln!("counting {} with no work ...", broker.display());
        let idle = count(&rt, broker, &s, false)?;
        eprintln!("counting {} with the work ...", broker.display());
        let busy = count(&rt, broker, &s, true)?;
        let records = (3 * per_phase) as f64; // written twice, read once per written record
        let per_record = busy.saturating_sub(idle) as f64 / records;
        println!(
            "{}: {} instructions idle, {} with the work: {:.0} instructions per record",
            broker.display(),
            idle,
            busy,
            per_record
        );
        results.push((broker.clone(), per_record));
    }
    if let [(_, first), rest @ ..] = results.as_slice() {
        for (b, n) in rest {
            println!("{} / first: {:.3}x", b.display(), n / first);
        }
    }
    Ok(())
}

/// Runs `broker` under callgrind, with the work or without it, and returns its instruction
/// count.
fn count(
    rt: &tokio::runtime::Runtime,
    broker: &Path,
    s: &Settings,
    work: bool,
) -> Result<u64, Error> {
    let dir = tempfile_dir()?;
    let out = dir.join("callgrind.out");
    let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let addr = format!("127.0.0.1:{port}");
    let mut child = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg(broker)
        .args(["--listen", &addr, "--data-dir"])
        .arg(dir.join("data"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    let result = rt.block_on(drive(&addr, s, work));
    stop(&mut child)?;
    result?;
    let text = std::fs::read_to_string(&out)?;
    let total = text
        .lines()
        .find_map(|l| {
            l.strip_prefix("summary: ")
                .or_else(|| l.strip_prefix("totals: "))
        })
        .and_then(|n| n.split_whitespace().next()?.parse::<u64>().ok())
        .ok_or("no instruction total in callgrind's output")?;
    if let Some(keep) = &s.keep {
        std::fs::create_dir_all(keep)?;
        let name = format!(
            "{}-{}.callgrind",
            broker
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or("broker"),
            if work { "work" } else { "idle" }
        );
        std::fs::copy(&out, keep.join(name))?;
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(total)
}

fn tempfile_dir() -> Result<PathBuf, Error> {
    let dir = std::env::temp_dir().join(format!(
        "kafka-broker-instructions-{}-{}",
        std::process::id(),
        Instant::now().elapsed().as_nanos()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

/// SIGTERM (an orderly shutdown, so callgrind writes its counts), then waits.
fn stop(child: &mut Child) -> Result<(), Error> {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait()?.is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            return Err("the broker did not stop within 120 s".into());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(())
}

async fn connect(addr: &str) -> Result<Connection, Error> {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let cfg = ConnectionConfig {
            connect_timeout: Duration::from_secs(5),
            ..Default::default()
        };
        match Connection::connect(addr, cfg).await {
            Ok(c) => return Ok(c),
            Err(e) if Instant::now() > deadline => return Err(e.into()),
            Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
        }
    }
}

/// The request sequence (nothing but the connection when `work` is false).
async fn drive(addr: &str, s: &Settings, work: bool) -> Result<(), Error> {
    let c = connect(addr).await?;
    if !work {
        return Ok(());
    }
    let create = CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: KStr::from(TOPIC),
            num_partitions: 1,
            replication_factor: 1,
            ..Default::default()
        }],
        timeout_ms: 30_000,
        ..Default::default()
    };
    c.request_at(RequestBody::CreateTopics(create), 5).await?;
    let value = vec![b'v'; s.bytes];
    for acks in [1i16, -1] {
        for _ in 0..s.batches {
            let mut b = RecordBatchBuilder::new();
            for i in 0..s.records {
                b.append(1_700_000_000_000 + i as i64, None, Some(&value), &[])?;
            }
            let req = ProduceRequest {
                acks,
                timeout_ms: 30_000,
                topic_data: vec![TopicProduceData {
                    name: KStr::from(TOPIC),
                    partition_data: vec![PartitionProduceData {
                        index: 0,
                        records: Some(b.build()?),
                        ..Default::default()
                    }],
                    ..Default::default()
                }],
                ..Default::default()
            };
            match c.request_at(RequestBody::Produce(req), 9).await? {
                ResponseBody::Produce(r)
                    if r.responses
                        .iter()
                        .flat_map(|t| &t.partition_responses)
                        .all(|p| p.error_code == 0) => {}
                other => return Err(format!("produce refused: {other:?}").into()),
            }
        }
    }
    let total = (2 * s.batches * s.records) as i64;
    let mut offset = 0i64;
    while offset < total {
        let req = FetchRequest {
            replica_id: -1,
            max_wait_ms: 0,
            min_bytes: 0,
            max_bytes: 1 << 20,
            topics: vec![FetchTopic {
                topic: KStr::from(TOPIC),
                partitions: vec![FetchPartition {
                    partition: 0,
                    fetch_offset: offset,
                    partition_max_bytes: 1 << 20,
                    ..Default::default()
                }],
                ..Default::default()
            }],
            ..Default::default()
        };
        let ResponseBody::Fetch(r) = c.request_at(RequestBody::Fetch(Box::new(req)), 12).await?
        else {
            return Err("not a fetch answer".into());
        };
        let records = r
            .responses
            .first()
            .and_then(|t| t.partitions.first())
            .and_then(|p| p.records.clone())
            .unwrap_or_default();
        let next = RecordBatches::new(records)
            .filter_map(Result::ok)
            .map(|b| b.next_offset())
            .max()
            .ok_or("a fetch returned nothing")?;
        offset = next;
    }
    Ok(())
}
