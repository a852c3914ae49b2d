//! Filling a topic, in a child process of its own (this binary with `--fill ...`): our
//! producer writes the case's records (in transactions, some aborted, for read_committed) and
//! prints what the log should hold as one `FILLED` line.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use kafka_bench::harness::Error;
use kafka_producer::{Producer, ProducerConfig, ProducerRecord};

use crate::cases::codec;
use crate::phase::touch;
use crate::{ABORT_EVERY, ABORTED_MARK, FILL_CHUNK, FILL_TXN};

/// Writes `records` values of `size` bytes to `topic` with our producer and prints
/// `FILLED <acknowledged> <failed> <checksum> <seconds> <log records> <aborted>`: the
/// committed records acknowledged (all of them without transactions), those that failed, the
/// checksum of the committed values, the offsets the log should hold (committed and aborted
/// records and transaction markers) and the aborted records.
pub(crate) fn fill_main(args: &[String]) -> Result<(), Error> {
    let [
        addr,
        topic,
        size,
        partitions,
        records,
        compression,
        transactional,
    ] = args
    else {
        return Err("--fill: expected 7 arguments".into());
    };
    let spec = Fill {
        addr,
        topic,
        size: size.parse()?,
        partitions: partitions.parse()?,
        records: records.parse()?,
        compression: codec(compression)?,
        transactional: transactional.parse()?,
    };
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(fill(&spec))
}

/// What a fill child writes.
pub(crate) struct Fill<'a> {
    pub(crate) addr: &'a str,
    pub(crate) topic: &'a str,
    pub(crate) size: usize,
    pub(crate) partitions: u64,
    /// Committed records.
    pub(crate) records: u64,
    pub(crate) compression: &'a str,
    /// In transactions of `FILL_TXN` records, every `ABORT_EVERY`th aborted.
    pub(crate) transactional: bool,
}

pub(crate) async fn fill(spec: &Fill<'_>) -> Result<(), Error> {
    let txn_id = format!("{}-fill", spec.topic);
    let mut settings = vec![
        ("bootstrap.servers", spec.addr),
        ("client.id", "consumer-bench-fill"),
        ("linger.ms", "5"),
        ("batch.size", "16384"),
        ("buffer.memory", "33554432"),
        ("compression.type", spec.compression),
    ];
    if spec.transactional {
        settings.extend([
            ("acks", "all"),
            ("enable.idempotence", "true"),
            ("transactional.id", txn_id.as_str()),
        ]);
    } else {
        settings.extend([("acks", "1"), ("enable.idempotence", "false")]);
    }
    let producer = Producer::new(ProducerConfig::from_pairs(settings)?).await?;
    if spec.transactional {
        producer.init_transactions().await?;
    }
    producer.partitions_for(spec.topic).await?;
    let filler = kafka_bench::records(spec.size);
    let acked = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let aborted_acked = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut checksum = 0u64;
    // Committed records written, records written (committed or aborted), markers.
    let (mut i, mut n, mut markers) = (0u64, 0u64, 0u64);
    let per_txn = if spec.transactional {
        FILL_TXN
    } else {
        spec.records
    };
    let mut k = 0u64;
    while i < spec.records {
        let abort = spec.transactional && k % ABORT_EVERY == ABORT_EVERY - 1;
        k += 1;
        if spec.transactional {
            producer.begin_transaction()?;
        }
        let mut touched = std::collections::BTreeSet::new();
        let count = if abort {
            per_txn
        } else {
            per_txn.min(spec.records - i)
        };
        for _ in 0..count {
            let mut value = filler.to_vec();
            if let Some(b) = value.first_mut() {
                *b = if abort { ABORTED_MARK } else { (i % 251) as u8 };
            }
            if !abort {
                checksum += touch(&value);
                i += 1;
            }
            let partition = ((n / FILL_CHUNK) % spec.partitions) as i32;
            n += 1;
            touched.insert(partition);
            let (a, f) = if abort {
                (aborted_acked.clone(), failed.clone())
            } else {
                (acked.clone(), failed.clone())
            };
            producer
                .send_with_callback(
                    ProducerRecord::new(spec.topic, value).partition(partition),
                    move |r| {
                        if r.is_ok() {
                            a.fetch_add(1, Ordering::Relaxed);
                        } else {
                            f.fetch_add(1, Ordering::Relaxed);
                        }
                    },
                )
                .await?;
        }
        if spec.transactional {
            markers += touched.len() as u64;
            if abort {
                // In the log first, so a reader has aborted records to skip.
                tokio::time::timeout(Duration::from_secs(120), producer.flush())
                    .await
                    .map_err(|_| "flush did not complete within 120 s")?;
                producer.abort_transaction().await?;
            } else {
                producer.commit_transaction().await?;
            }
        }
    }
    tokio::time::timeout(Duration::from_secs(120), producer.flush())
        .await
        .map_err(|_| "flush did not complete within 120 s")?;
    let seconds = started.elapsed().as_secs_f64();
    producer.close(Duration::from_secs(10)).await;
    let aborted = aborted_acked.load(Ordering::Relaxed);
    println!(
        "FILLED {} {} {checksum} {seconds} {} {aborted}",
        acked.load(Ordering::Relaxed),
        failed.load(Ordering::Relaxed),
        i + aborted + markers,
    );
    Ok(())
}
