//! Consume-transform-produce, exactly once: our consumer reads `--input` (read_committed,
//! no automatic commits), each record's value goes to `--output` upper-cased under the same
//! key, and the consumed offsets are committed inside the producer's transaction
//! (`send_offsets_to_transaction`), so the output records and the input positions become
//! visible together or not at all.
//!
//! ```text
//! cargo run -p kafka-producer --example exactly_once -- \
//!     --bootstrap 127.0.0.1:9092 --input in --output out --group eos \
//!     --transactional-id eos-1 [--count N] [--idle-ms 5000] [--abort-every K]
//! ```
//!
//! Stops after `--count` records were committed, or when nothing came for `--idle-ms`.
//! `--abort-every K` aborts every K-th transaction instead of committing it (the consumer then
//! goes back to the last committed offsets and the records are processed again), to show that
//! aborted output never reaches a read_committed reader. An abortable error is handled the
//! same way; a fatal one (fenced: another instance took the transactional id) ends the run
//! with exit code 2. Prints `committed <records> <transactions>` at the end.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use bytes::Bytes;
use clap::Parser;
use kafka_consumer::{Consumer, ConsumerConfig};
use kafka_producer::{OffsetAndMetadata, Producer, ProducerConfig, ProducerRecord, TopicPartition};

#[derive(Parser, Debug)]
#[command(about = "Consume, transform and produce exactly once with a transactional producer")]
struct Args {
    #[arg(long)]
    bootstrap: String,
    #[arg(long)]
    input: String,
    #[arg(long)]
    output: String,
    #[arg(long)]
    group: String,
    #[arg(long)]
    transactional_id: String,
    /// Stop once this many records are committed.
    #[arg(long)]
    count: Option<u64>,
    /// Stop when no record came for this long.
    #[arg(long, default_value_t = 5000)]
    idle_ms: u64,
    /// Abort every K-th transaction (to show aborted output stays invisible).
    #[arg(long)]
    abort_every: Option<u64>,
}

/// What a run ends with.
enum Stop {
    Done,
    Fatal(String),
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args).await {
        Ok((Stop::Done, records, txns)) => {
            println!("committed {records} {txns}");
            ExitCode::SUCCESS
        }
        Ok((Stop::Fatal(e), records, txns)) => {
            eprintln!("fatal: {e}");
            println!("committed {records} {txns}");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: &Args) -> Result<(Stop, u64, u64), Box<dyn std::error::Error>> {
    let consumer = Consumer::new(ConsumerConfig::from_pairs([
        ("bootstrap.servers", args.bootstrap.as_str()),
        ("group.id", args.group.as_str()),
        ("enable.auto.commit", "false"),
        ("isolation.level", "read_committed"),
        ("auto.offset.reset", "earliest"),
    ])?)
    .await?;
    consumer.subscribe([args.input.clone()])?;
    let producer = Producer::new(ProducerConfig::from_pairs([
        ("bootstrap.servers", args.bootstrap.as_str()),
        ("transactional.id", args.transactional_id.as_str()),
    ])?)
    .await?;
    producer.init_transactions().await?;

    let (mut committed, mut txns, mut attempts) = (0u64, 0u64, 0u64);
    let mut last_record = Instant::now();
    let stop = loop {
        if args.count.is_some_and(|c| committed >= c) {
            break Stop::Done;
        }
        if last_record.elapsed() > Duration::from_millis(args.idle_ms) {
            break Stop::Done;
        }
        let records = consumer.poll(Duration::from_millis(200)).await?;
        if records.is_empty() {
            continue;
        }
        last_record = Instant::now();
        attempts += 1;
        let abort = args.abort_every.is_some_and(|k| k > 0 && attempts % k == 0);
        let mut next: BTreeMap<TopicPartition, OffsetAndMetadata> = BTreeMap::new();
        for r in &records {
            next.insert(
                TopicPartition {
                    topic: r.topic.clone(),
                    partition: r.partition,
                },
                OffsetAndMetadata::new(r.offset + 1).with_leader_epoch(r.leader_epoch),
            );
        }
        let result = async {
            producer.begin_transaction()?;
            let mut acks = Vec::with_capacity(records.len());
            for r in &records {
                let value = r
                    .value
                    .as_ref()
                    .map(|v| Bytes::from(v.to_ascii_uppercase()));
                let mut out = ProducerRecord::new(args.output.clone(), value.unwrap_or_default());
                if let Some(k) = &r.key {
                    out = out.key(k.clone());
                }
                acks.push(producer.enqueue(out).await?);
            }
            let group = consumer
                .group_metadata()
                .ok_or_else(|| kafka_producer::ProducerError::Config("no group".into()))?;
            producer
                .send_offsets_to_transaction(next.clone(), &group)
                .await?;
            if abort {
                return Ok(false);
            }
            producer.commit_transaction().await?;
            for a in acks {
                a.await?;
            }
            Ok::<bool, kafka_producer::ProducerError>(true)
        }
        .await;
        match result {
            Ok(true) => {
                committed += records.len() as u64;
                txns += 1;
            }
            Ok(false) => {
                producer.abort_transaction().await?;
                rewind(&consumer, &next).await?;
            }
            Err(e) if e.is_fatal() => break Stop::Fatal(e.to_string()),
            Err(e) => {
                eprintln!("aborting the transaction: {e}");
                producer.abort_transaction().await?;
                rewind(&consumer, &next).await?;
            }
        }
    };
    producer.close(Duration::from_secs(10)).await;
    consumer.close(Duration::from_secs(10)).await?;
    Ok((stop, committed, txns))
}

/// After an abort: every partition the transaction read goes back to its committed offset
/// (or its beginning), so its records are processed again.
async fn rewind(
    consumer: &Consumer,
    read: &BTreeMap<TopicPartition, OffsetAndMetadata>,
) -> Result<(), Box<dyn std::error::Error>> {
    let parts: Vec<kafka_consumer::TopicPartition> = read
        .keys()
        .map(|tp| kafka_consumer::TopicPartition::new(tp.topic.clone(), tp.partition))
        .collect();
    let committed = consumer.committed(&parts).await?;
    for tp in &parts {
        match committed.get(tp).cloned().flatten() {
            Some(om) => consumer.seek(tp, om.offset)?,
            None => consumer.seek_to_beginning(std::slice::from_ref(tp))?,
        }
    }
    Ok(())
}
