//! Reads a topic and prints `partition offset key value-length` per record (or a summary
//! with --quiet); stops after --count records or 10 s without any.
//!
//! Without --group it assigns itself every partition. With --group it subscribes: it joins
//! the consumer group (start several to share the partitions; rebalances are printed on
//! stderr), starts from the group's committed offsets and commits its positions at the end.
//!
//! ```text
//! cargo run --release -p kafka-consumer --example consume -- \
//!     --bootstrap 127.0.0.1:9092 --topic orders --group reporting --from-beginning --quiet
//! ```

use std::collections::BTreeSet;
use std::io::Write;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use kafka_consumer::{
    Consumer, ConsumerConfig, ConsumerError, ListenerFuture, OffsetReset, RebalanceListener,
    TopicPartition,
};

#[derive(Parser, Debug)]
#[command(about = "Read a topic with the kafka-rs consumer")]
struct Args {
    /// Broker addresses, host:port[,host:port...].
    #[arg(long)]
    bootstrap: String,
    #[arg(long)]
    topic: String,
    /// Consumer group to join (subscribe): share the partitions with its other members,
    /// start from its committed offsets and commit at the end.
    #[arg(long)]
    group: Option<String>,
    /// Stop after this many records.
    #[arg(long)]
    count: Option<u64>,
    /// Start at the log start when there is no committed offset (else at the end).
    #[arg(long)]
    from_beginning: bool,
    /// Print a summary instead of one line per record.
    #[arg(long)]
    quiet: bool,
    /// Extra consumer settings, key=value (Kafka's key names).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    settings: Vec<String>,
}

const IDLE: Duration = Duration::from_secs(10);

/// Prints rebalances on stderr.
struct PrintRebalances;

fn list(partitions: &BTreeSet<TopicPartition>) -> String {
    let v: Vec<String> = partitions.iter().map(ToString::to_string).collect();
    v.join(" ")
}

impl RebalanceListener for PrintRebalances {
    fn on_partitions_assigned<'a>(
        &'a self,
        consumer: &'a Consumer,
        partitions: &'a BTreeSet<TopicPartition>,
    ) -> ListenerFuture<'a> {
        Box::pin(async move {
            let generation = consumer.group_metadata().map_or(-1, |m| m.generation_id);
            eprintln!(
                "generation {generation}: assigned [{}], now reading [{}]",
                list(partitions),
                list(&consumer.assignment())
            );
        })
    }

    /// Commits what was read of the partitions going away, so their next owner goes on
    /// from there (the listener runs inside `poll` and may await the consumer).
    fn on_partitions_revoked<'a>(
        &'a self,
        consumer: &'a Consumer,
        partitions: &'a BTreeSet<TopicPartition>,
    ) -> ListenerFuture<'a> {
        Box::pin(async move {
            let offsets = consumer
                .consumed_offsets()
                .into_iter()
                .filter(|(tp, _)| partitions.contains(tp))
                .collect();
            let committed = consumer.commit_offsets_sync(offsets).await;
            eprintln!("revoked [{}] (commit: {committed:?})", list(partitions));
        })
    }

    fn on_partitions_lost<'a>(
        &'a self,
        _consumer: &'a Consumer,
        partitions: &'a BTreeSet<TopicPartition>,
    ) -> ListenerFuture<'a> {
        Box::pin(async move { eprintln!("lost [{}]", list(partitions)) })
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    match run(args).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args) -> Result<(), ConsumerError> {
    let mut b = ConsumerConfig::builder()
        .bootstrap_servers(args.bootstrap.split(','))
        .client_id("kafka-rs-consume")
        .auto_offset_reset(if args.from_beginning {
            OffsetReset::Earliest
        } else {
            OffsetReset::Latest
        });
    if let Some(g) = &args.group {
        b = b.group_id(g.clone()).enable_auto_commit(false);
    }
    for kv in &args.settings {
        let (k, v) = kv.split_once('=').ok_or_else(|| {
            ConsumerError::InvalidConfig(format!("--set {kv}: expected key=value"))
        })?;
        b = b.set(k.trim(), v.trim())?;
    }
    let consumer = Consumer::new(b.build()?).await?;
    let partitions = consumer.partitions_for(&args.topic).await?;
    if args.group.is_some() {
        consumer.subscribe_with_listener([args.topic.clone()], Arc::new(PrintRebalances))?;
    } else {
        consumer.assign(partitions.clone())?;
    }

    let started = Instant::now();
    let mut last_record = Instant::now();
    let (mut records, mut bytes) = (0u64, 0u64);
    let want = args.count.unwrap_or(u64::MAX);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    while records < want && last_record.elapsed() < IDLE {
        let batch = consumer.poll(Duration::from_millis(500)).await?;
        if !batch.is_empty() {
            last_record = Instant::now();
        }
        for r in batch {
            if records >= want {
                // Not handed on: rewind so a commit does not skip it.
                consumer.seek(&r.topic_partition(), r.offset)?;
                break;
            }
            records += 1;
            let len = r.value.as_ref().map_or(0, |v| v.len());
            bytes += len as u64;
            if !args.quiet {
                let key = r.key.as_ref().map_or_else(
                    || "-".to_owned(),
                    |k| String::from_utf8_lossy(k).into_owned(),
                );
                let _ = writeln!(out, "{} {} {} {}", r.partition, r.offset, key, len);
            }
        }
    }
    let _ = out.flush();
    drop(out);
    if args.group.is_some() {
        consumer.commit_sync().await?;
    }
    let elapsed = started.elapsed();
    if args.quiet {
        let m = consumer.metrics();
        let secs = elapsed.as_secs_f64().max(1e-9);
        println!(
            "{records} records, {bytes} value bytes from {} partitions of {} in {:.2} s \
             ({:.0} records/s); {} fetches, mean fetch latency {:?}, buffer peak {} KiB",
            partitions.len(),
            args.topic,
            secs,
            records as f64 / secs,
            m.fetch_requests,
            m.fetch_latency_avg,
            m.buffered_bytes_max / 1024
        );
        for (tp, lag) in &m.lag {
            if *lag > 0 {
                println!("  lag {tp}: {lag}");
            }
        }
    }
    consumer.close(Duration::from_secs(10)).await
}
