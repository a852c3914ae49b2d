//! A round trip through our own producer and consumer with a client's settings (security
//! keys on top of a few quick timeouts), for the TLS and SASL tests.

use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_consumer::{Consumer, ConsumerConfig};
use kafka_producer::{Producer, ProducerConfig, ProducerRecord};

/// Produces `n` records to `topic` with our producer and reads them back with our consumer,
/// both with `settings`; returns the values read (each written as `PREFIX-i`).
pub(crate) async fn round_trip_with(
    prefix: &str,
    bootstrap: &str,
    settings: &[(String, String)],
    topic: &str,
    n: usize,
) -> Result<Vec<String>, String> {
    let mut pairs = vec![
        ("bootstrap.servers".to_owned(), bootstrap.to_owned()),
        ("linger.ms".to_owned(), "0".to_owned()),
        ("max.block.ms".to_owned(), "10000".to_owned()),
        ("delivery.timeout.ms".to_owned(), "15000".to_owned()),
        ("request.timeout.ms".to_owned(), "10000".to_owned()),
    ];
    pairs.extend(settings.iter().cloned());
    let p = Producer::new(ProducerConfig::from_pairs(pairs).map_err(|e| e.to_string())?)
        .await
        .map_err(|e| format!("producer: {e}"))?;
    let mut futures = Vec::new();
    for i in 0..n {
        let r = ProducerRecord::new(topic, Bytes::from(format!("{prefix}-{i}"))).partition(0);
        futures.push(p.enqueue(r).await.map_err(|e| format!("enqueue: {e}"))?);
    }
    for f in futures {
        f.await.map_err(|e| format!("send: {e}"))?;
    }
    p.close(Duration::from_secs(5)).await;
    let mut pairs = vec![
        ("bootstrap.servers".to_owned(), bootstrap.to_owned()),
        ("auto.offset.reset".to_owned(), "earliest".to_owned()),
        ("fetch.max.wait.ms".to_owned(), "100".to_owned()),
        ("default.api.timeout.ms".to_owned(), "10000".to_owned()),
    ];
    pairs.extend(settings.iter().cloned());
    let c = Consumer::new(ConsumerConfig::from_pairs(pairs).map_err(|e| e.to_string())?)
        .await
        .map_err(|e| format!("consumer: {e}"))?;
    c.assign([kafka_consumer::TopicPartition::new(topic, 0)])
        .map_err(|e| e.to_string())?;
    let mut got = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    while got.len() < n && Instant::now() < deadline {
        for r in c
            .poll(Duration::from_millis(200))
            .await
            .map_err(|e| e.to_string())?
        {
            got.push(String::from_utf8_lossy(r.value.as_deref().unwrap_or_default()).into_owned());
        }
    }
    Ok(got)
}

/// The values [`round_trip_with`] writes.
pub(crate) fn values(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}-{i}")).collect()
}
