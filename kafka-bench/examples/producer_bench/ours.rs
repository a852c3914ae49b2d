//! A phase of our producer (`kafka-producer`).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_bench::cpu_time_of;
use kafka_bench::harness::{Error, cpu_since};
use kafka_producer::{
    DeliveryHandler, Producer, ProducerConfig, ProducerError, ProducerRecord, RecordMetadata,
};

use crate::phase::{ACKED, PhaseResult, PhaseSpec, delivered, due, keys, reset_counts};
use crate::{FLUSH_TIMEOUT, KEYS};

/// Our delivery reports (the opaque is when the record was sent, in ns after `epoch`).
pub(crate) struct OurReports {
    pub(crate) epoch: Instant,
}

impl DeliveryHandler for OurReports {
    fn on_delivery(&self, sent_ns: u64, result: Result<&RecordMetadata, &ProducerError>) {
        delivered(self.epoch, sent_ns, result.is_ok());
    }
}

pub(crate) async fn ours(spec: &PhaseSpec) -> Result<PhaseResult, Error> {
    let mut settings = spec.common_settings();
    settings.push(("buffer.memory", "33554432".into()));
    let epoch = Instant::now();
    let mut builder = ProducerConfig::builder();
    for (k, v) in &settings {
        builder = builder.set(k, v)?;
    }
    for (k, v) in spec.security.ours_settings() {
        builder = builder.set(&k, &v)?;
    }
    let cfg = builder
        .delivery_handler(std::sync::Arc::new(OurReports { epoch }))
        .build()?;
    let producer = Producer::new(cfg).await?;
    let txn = spec.case.txn;
    if txn > 0 {
        producer.init_transactions().await?;
    }
    producer.partitions_for(&spec.topic).await?;
    let payload = kafka_bench::records(spec.case.size);
    let keys: Vec<Bytes> = keys().into_iter().map(Bytes::from).collect();
    let topic: std::sync::Arc<str> = spec.topic.as_str().into();
    // Connect to the leader (and get a producer id) before the clock starts; a transactional
    // case commits this record in a transaction of its own.
    if txn > 0 {
        producer.begin_transaction()?;
    }
    tokio::time::timeout(
        Duration::from_secs(30),
        producer.send(ProducerRecord::new(topic.clone(), payload.clone())),
    )
    .await
    .map_err(|_| "warm-up record not acknowledged within 30 s")??;
    if txn > 0 {
        producer.commit_transaction().await?;
    }
    let base = producer.metrics();
    reset_counts();

    let started = Instant::now();
    let cpu0 = cpu_time_of("self");
    let mut sent = 0u64;
    let mut commits = 0u64;
    // Transactions: begin, `txn` records round-robin over the partitions, commit.
    while txn > 0 && sent < spec.case.records && started.elapsed() <= spec.max_phase {
        producer.begin_transaction()?;
        for j in 0..txn {
            let t = epoch.elapsed().as_nanos() as u64;
            let record = ProducerRecord::new(topic.clone(), payload.clone())
                .partition(spec.txn_partition(j));
            producer.send_with_opaque(record, t).await?;
        }
        sent += txn;
        producer.commit_transaction().await?;
        commits += 1;
    }
    while txn == 0 && sent < spec.case.records {
        if let Some(rate) = spec.case.rate {
            if sent >= due(rate, started) {
                if started.elapsed() > spec.max_phase {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
                continue;
            }
        } else if sent % 1024 == 0 && started.elapsed() > spec.max_phase {
            break;
        }
        let t = epoch.elapsed().as_nanos() as u64;
        let mut record = ProducerRecord::new(topic.clone(), payload.clone());
        if spec.case.keyed {
            record = record.key(keys[sent as usize % KEYS].clone());
        }
        producer.send_with_opaque(record, t).await?;
        sent += 1;
    }
    tokio::time::timeout(FLUSH_TIMEOUT, producer.flush())
        .await
        .map_err(|_| "flush did not complete within 60 s")?;
    let seconds = started.elapsed().as_secs_f64();
    let cpu_s = cpu_since(cpu0);
    let m = producer.metrics();
    producer.close(Duration::from_secs(10)).await;
    let requests = m.requests.saturating_sub(base.requests);
    let batches = m.batches_sent.saturating_sub(base.batches_sent);
    Ok(PhaseResult {
        sent,
        seconds,
        cpu_s,
        requests,
        records_per_batch: ACKED.load(Ordering::Relaxed) as f64 / batches.max(1) as f64,
        commits,
        ..Default::default()
    })
}
