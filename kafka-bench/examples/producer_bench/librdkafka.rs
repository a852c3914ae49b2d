//! A phase of librdkafka (the `rdkafka` crate's `ThreadedProducer`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use kafka_bench::cpu_time_of;
use kafka_bench::harness::{Error, cpu_since, extra_settings};
use rdkafka::client::ClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::producer::{
    BaseRecord, DeliveryResult, Producer as _, ProducerContext, ThreadedProducer,
};
use rdkafka::statistics::Statistics;

use crate::phase::{PhaseResult, PhaseSpec, delivered, due, keys, reset_counts};
use crate::{FLUSH_TIMEOUT, KEYS, STATS_INTERVAL};

/// librdkafka's delivery reports.
pub(crate) struct Reports {
    pub(crate) epoch: Instant,
}

/// librdkafka statistics: Produce requests sent (all brokers), and how many statistics
/// events arrived.
pub(crate) static RD_PRODUCE_REQUESTS: AtomicU64 = AtomicU64::new(0);
pub(crate) static RD_STATS_EVENTS: AtomicU64 = AtomicU64::new(0);

impl ClientContext for Reports {
    fn stats(&self, statistics: Statistics) {
        let produce: i64 = statistics
            .brokers
            .values()
            .filter_map(|b| b.req.get("Produce"))
            .sum();
        RD_PRODUCE_REQUESTS.store(u64::try_from(produce).unwrap_or(0), Ordering::Relaxed);
        RD_STATS_EVENTS.fetch_add(1, Ordering::Relaxed);
    }
}

/// The Produce request count of the next statistics event (at most `STATS_INTERVAL` and a
/// bit away; `None` if none came).
pub(crate) fn rd_next_produce_requests() -> Option<u64> {
    let seen = RD_STATS_EVENTS.load(Ordering::Relaxed);
    let deadline = Instant::now() + STATS_INTERVAL * 3;
    while Instant::now() < deadline {
        if RD_STATS_EVENTS.load(Ordering::Relaxed) > seen {
            return Some(RD_PRODUCE_REQUESTS.load(Ordering::Relaxed));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    None
}

impl ProducerContext for Reports {
    /// When the record was sent, in ns after `epoch`.
    type DeliveryOpaque = usize;

    fn delivery(&self, result: &DeliveryResult<'_>, sent_ns: usize) {
        delivered(self.epoch, sent_ns as u64, result.is_ok());
    }
}

/// Sends `record`, waiting while librdkafka's queue is full (the polling thread serves the
/// delivery reports that make room).
pub(crate) fn rd_send(
    producer: &ThreadedProducer<Reports>,
    mut record: BaseRecord<'_, [u8], [u8], usize>,
) -> Result<(), Error> {
    loop {
        match producer.send(record) {
            Ok(()) => return Ok(()),
            Err((KafkaError::MessageProduction(RDKafkaErrorCode::QueueFull), r)) => {
                record = r;
                std::thread::sleep(Duration::from_micros(500));
            }
            Err((e, _)) => return Err(e.into()),
        }
    }
}

/// Waits until every record is acknowledged and its delivery report served. (The crate's
/// `flush` polls in steps of up to 100 ms, which would count up to 100 ms too many.)
pub(crate) fn rd_flush(
    producer: &ThreadedProducer<Reports>,
    timeout: Duration,
) -> Result<(), Error> {
    // Wakes the broker threads to send what lingers; the error says only that it is not done.
    let _ = producer.flush(Duration::ZERO);
    let deadline = Instant::now() + timeout;
    while producer.in_flight_count() > 0 {
        if Instant::now() > deadline {
            return Err(format!(
                "{} records not acknowledged within {} s",
                producer.in_flight_count(),
                timeout.as_secs()
            )
            .into());
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    Ok(())
}

pub(crate) fn librdkafka(spec: &PhaseSpec) -> Result<PhaseResult, Error> {
    let epoch = Instant::now();
    let mut cfg = ClientConfig::new();
    for (k, v) in spec.common_settings() {
        cfg.set(k, v);
    }
    for (k, v) in spec.security.rdkafka_settings() {
        cfg.set(k, v);
    }
    for (k, v) in extra_settings("PRODUCER_BENCH_RDKAFKA_SET")? {
        cfg.set(k, v);
    }
    cfg.set("partitioner", "murmur2_random")
        .set("queue.buffering.max.kbytes", "32768")
        .set("queue.buffering.max.messages", "1000000")
        .set(
            "statistics.interval.ms",
            STATS_INTERVAL.as_millis().to_string(),
        );
    let producer: ThreadedProducer<Reports> = cfg.create_with_context(Reports { epoch })?;
    let txn = spec.case.txn;
    if txn > 0 {
        producer.init_transactions(Duration::from_secs(30))?;
    }
    producer
        .client()
        .fetch_metadata(Some(&spec.topic), Duration::from_secs(10))?;
    let payload = kafka_bench::records(spec.case.size);
    let keys = keys();
    // Connect to the leader (and get a producer id) before the clock starts; a transactional
    // case commits this record in a transaction of its own.
    if txn > 0 {
        producer.begin_transaction()?;
    }
    rd_send(
        &producer,
        BaseRecord::with_opaque_to(&spec.topic, 0).payload(&payload[..]),
    )?;
    rd_flush(&producer, Duration::from_secs(30))?;
    if txn > 0 {
        producer.commit_transaction(Duration::from_secs(30))?;
    }
    let requests0 = rd_next_produce_requests();
    reset_counts();

    let started = Instant::now();
    let cpu0 = cpu_time_of("self");
    let mut sent = 0u64;
    let mut commits = 0u64;
    // Transactions: begin, `txn` records round-robin over the partitions, wait for their
    // acknowledgements (as librdkafka's commit does, without the crate's 100 ms polling
    // steps), commit.
    while txn > 0 && sent < spec.case.records && started.elapsed() <= spec.max_phase {
        producer.begin_transaction()?;
        for j in 0..txn {
            let t = epoch.elapsed().as_nanos() as usize;
            let record = BaseRecord::with_opaque_to(&spec.topic, t)
                .payload(&payload[..])
                .partition(spec.txn_partition(j));
            rd_send(&producer, record)?;
        }
        sent += txn;
        rd_flush(&producer, FLUSH_TIMEOUT)?;
        producer.commit_transaction(FLUSH_TIMEOUT)?;
        commits += 1;
    }
    while txn == 0 && sent < spec.case.records {
        if let Some(rate) = spec.case.rate {
            if sent >= due(rate, started) {
                if started.elapsed() > spec.max_phase {
                    break;
                }
                std::thread::sleep(Duration::from_millis(1));
                continue;
            }
        } else if sent % 1024 == 0 && started.elapsed() > spec.max_phase {
            break;
        }
        let t = epoch.elapsed().as_nanos() as usize;
        let mut record = BaseRecord::with_opaque_to(&spec.topic, t).payload(&payload[..]);
        if spec.case.keyed {
            record = record.key(keys[sent as usize % KEYS].as_bytes());
        }
        rd_send(&producer, record)?;
        sent += 1;
    }
    rd_flush(&producer, FLUSH_TIMEOUT)?;
    let seconds = started.elapsed().as_secs_f64();
    let cpu_s = cpu_since(cpu0);
    let requests = rd_next_produce_requests()
        .zip(requests0)
        .map_or(0, |(b, a)| b.saturating_sub(a));
    Ok(PhaseResult {
        sent,
        seconds,
        cpu_s,
        requests,
        commits,
        ..Default::default()
    })
}
