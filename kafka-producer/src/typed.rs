//! A producer of typed records: keys and values go through [`Serializer`]s first.

use std::future::Future;
use std::sync::Arc;

use crate::delivery::DeliveryResult;
use crate::error::ProducerError;
use crate::producer::{DeliveryFuture, Producer};
use crate::record::{Header, ProducerRecord, RecordMetadata};
use crate::serializer::Serializer;

/// A record with a typed key and value, borrowed from the caller until it is serialized.
#[derive(Debug)]
pub struct TypedRecord<'a, K: ?Sized, V: ?Sized> {
    pub topic: &'a str,
    pub partition: Option<i32>,
    pub key: Option<&'a K>,
    pub value: Option<&'a V>,
    pub headers: Vec<Header>,
    pub timestamp: Option<i64>,
}

impl<'a, K: ?Sized, V: ?Sized> TypedRecord<'a, K, V> {
    /// A record with a value and nothing else set.
    pub fn new(topic: &'a str, value: &'a V) -> Self {
        Self {
            topic,
            partition: None,
            key: None,
            value: Some(value),
            headers: Vec::new(),
            timestamp: None,
        }
    }

    #[must_use]
    pub fn key(mut self, key: &'a K) -> Self {
        self.key = Some(key);
        self
    }

    #[must_use]
    pub fn partition(mut self, partition: i32) -> Self {
        self.partition = Some(partition);
        self
    }

    #[must_use]
    pub fn timestamp(mut self, timestamp_ms: i64) -> Self {
        self.timestamp = Some(timestamp_ms);
        self
    }

    #[must_use]
    pub fn header(mut self, header: Header) -> Self {
        self.headers.push(header);
        self
    }
}

/// A [`Producer`] with a key and a value serializer (Java's `KafkaProducer<K, V>`).
pub struct TypedProducer<K: ?Sized, V: ?Sized> {
    producer: Producer,
    key: Arc<dyn Serializer<K>>,
    value: Arc<dyn Serializer<V>>,
}

impl<K: ?Sized, V: ?Sized> Clone for TypedProducer<K, V> {
    fn clone(&self) -> Self {
        Self {
            producer: self.producer.clone(),
            key: self.key.clone(),
            value: self.value.clone(),
        }
    }
}

impl<K: ?Sized, V: ?Sized> std::fmt::Debug for TypedProducer<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TypedProducer")
            .field("producer", &self.producer)
            .finish_non_exhaustive()
    }
}

impl<K: ?Sized, V: ?Sized> TypedProducer<K, V> {
    pub fn new(
        producer: Producer,
        key: impl Serializer<K> + 'static,
        value: impl Serializer<V> + 'static,
    ) -> Self {
        Self {
            producer,
            key: Arc::new(key),
            value: Arc::new(value),
        }
    }

    /// The untyped producer underneath (for `flush`, `close`, `metrics`).
    pub fn producer(&self) -> &Producer {
        &self.producer
    }

    fn serialize(&self, rec: TypedRecord<'_, K, V>) -> Result<ProducerRecord, ProducerError> {
        let key = rec
            .key
            .map(|k| self.key.serialize(rec.topic, k))
            .transpose()?;
        let value = rec
            .value
            .map(|v| self.value.serialize(rec.topic, v))
            .transpose()?;
        Ok(ProducerRecord {
            topic: Arc::from(rec.topic),
            partition: rec.partition,
            key,
            value,
            headers: rec.headers,
            timestamp: rec.timestamp,
        })
    }

    /// Serializes and appends the record; see [`Producer::enqueue`].
    pub async fn enqueue(
        &self,
        rec: TypedRecord<'_, K, V>,
    ) -> Result<DeliveryFuture, ProducerError> {
        let record = self.serialize(rec)?;
        self.producer.enqueue(record).await
    }

    /// Serializes the record now, then appends it and waits for its acknowledgement; see
    /// [`Producer::send`].
    pub fn send(
        &self,
        rec: TypedRecord<'_, K, V>,
    ) -> impl Future<Output = Result<RecordMetadata, ProducerError>> + Send + 'static {
        let serialized = self.serialize(rec);
        let producer = self.producer.clone();
        async move { producer.send(serialized?).await }
    }

    /// Serializes and appends the record; `callback` runs when it completes.
    pub async fn send_with_callback(
        &self,
        rec: TypedRecord<'_, K, V>,
        callback: impl FnOnce(DeliveryResult) + Send + 'static,
    ) -> Result<(), ProducerError> {
        let record = self.serialize(rec)?;
        self.producer.send_with_callback(record, callback).await
    }
}
