//! Sends N records and waits for every acknowledgement.
//!
//! ```text
//! cargo run --release -p kafka-producer --example produce -- \
//!     --bootstrap 127.0.0.1:9092 --topic t --count 100000 [--size 100] [--keys 16] \
//!     [--acks all|1|0] [--compression none|gzip|snappy|lz4|zstd] [--set key=value]...
//! ```
//!
//! The value of record `i` is a deterministic function of `i` (its index in decimal, then a
//! repeating pattern up to `--size` bytes); with `--keys K` its key is `i % K` in decimal.
//! Exits non-zero if any record failed.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use bytes::Bytes;
use clap::Parser;
use kafka_producer::{Producer, ProducerConfig, ProducerRecord};

#[derive(Parser, Debug)]
#[command(about = "Send N records to a topic and wait for every acknowledgement")]
struct Args {
    /// `bootstrap.servers`: host:port[,host:port...]
    #[arg(long)]
    bootstrap: String,
    #[arg(long)]
    topic: String,
    #[arg(long)]
    count: u64,
    /// Value size in bytes.
    #[arg(long, default_value_t = 100)]
    size: usize,
    /// Key records with `index % keys`.
    #[arg(long)]
    keys: Option<u64>,
    #[arg(long, default_value = "all")]
    acks: String,
    #[arg(long, default_value = "none")]
    compression: String,
    /// Any producer setting, Kafka's key names (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    set: Vec<String>,
}

/// The value of record `i`: its index, then a pattern derived from it, `size` bytes long.
fn value_for(i: u64, size: usize) -> Bytes {
    let mut v = i.to_string().into_bytes();
    v.push(b':');
    let mut x = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    while v.len() < size {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.push(b'a' + (x % 26) as u8);
    }
    v.truncate(size.max(1));
    Bytes::from(v)
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let mut pairs = vec![
        ("bootstrap.servers".to_owned(), args.bootstrap.clone()),
        ("acks".to_owned(), args.acks.clone()),
        ("compression.type".to_owned(), args.compression.clone()),
    ];
    for kv in &args.set {
        let Some((k, v)) = kv.split_once('=') else {
            eprintln!("--set expects key=value, got {kv}");
            return ExitCode::from(2);
        };
        pairs.push((k.to_owned(), v.to_owned()));
    }
    let cfg = match ProducerConfig::from_pairs(pairs) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let producer = match Producer::new(cfg).await {
        Ok(p) => p,
        Err(e) => {
            eprintln!("cannot start the producer: {e}");
            return ExitCode::FAILURE;
        }
    };
    let started = Instant::now();
    let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel();
    let mut first_error = None;
    let topic: std::sync::Arc<str> = args.topic.as_str().into();
    for i in 0..args.count {
        let mut rec = ProducerRecord::new(topic.clone(), value_for(i, args.size));
        if let Some(k) = args.keys.filter(|k| *k > 0) {
            rec = rec.key(Bytes::from((i % k).to_string()));
        }
        let tx = done_tx.clone();
        if let Err(e) = producer
            .send_with_callback(rec, move |r| {
                let _ = tx.send(r.err());
            })
            .await
        {
            first_error.get_or_insert_with(|| e.to_string());
            let _ = done_tx.send(Some(e));
        }
    }
    drop(done_tx);
    let mut acked = 0u64;
    let mut failed = 0u64;
    while let Some(r) = done_rx.recv().await {
        match r {
            None => acked += 1,
            Some(e) => {
                failed += 1;
                first_error.get_or_insert_with(|| e.to_string());
            }
        }
    }
    let elapsed = started.elapsed();
    producer.close(Duration::from_secs(30)).await;
    let m = producer.metrics();
    println!(
        "acknowledged {acked} of {} records in {:.2} s ({:.0} records/s), {failed} failed; {} requests, {:.1} records/batch",
        args.count,
        elapsed.as_secs_f64(),
        acked as f64 / elapsed.as_secs_f64().max(1e-9),
        m.requests,
        m.records_per_batch_avg
    );
    if let Some(e) = first_error {
        eprintln!("first error: {e}");
    }
    if failed > 0 || acked != args.count {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
