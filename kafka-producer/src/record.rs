//! Records as the application hands them to the producer, and what it gets back.

use std::sync::Arc;

use bytes::Bytes;

/// A record header: a key and an optional value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub key: String,
    pub value: Option<Bytes>,
}

/// A serialized record on its way to a topic. Key and value are bytes here; the typed
/// [`crate::Producer::send`] path runs the serializers first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducerRecord {
    /// Shared, so that sending many records to one topic copies no name: build them from
    /// one `Arc<str>` (a `String` or `&str` converts too).
    pub topic: Arc<str>,
    /// An explicit partition; `None` lets the partitioner choose.
    pub partition: Option<i32>,
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
    pub headers: Vec<Header>,
    /// Milliseconds since the epoch; `None` takes the time of `send`.
    pub timestamp: Option<i64>,
}

impl ProducerRecord {
    /// A record with a value and nothing else set.
    pub fn new(topic: impl Into<Arc<str>>, value: impl Into<Bytes>) -> Self {
        Self {
            topic: topic.into(),
            partition: None,
            key: None,
            value: Some(value.into()),
            headers: Vec::new(),
            timestamp: None,
        }
    }

    #[must_use]
    pub fn key(mut self, key: impl Into<Bytes>) -> Self {
        self.key = Some(key.into());
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
    pub fn header(mut self, key: impl Into<String>, value: Option<Bytes>) -> Self {
        self.headers.push(Header {
            key: key.into(),
            value,
        });
        self
    }
}

/// Where an acknowledged record landed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordMetadata {
    pub topic: Arc<str>,
    pub partition: i32,
    /// The record's offset; -1 when `acks=0` (the broker does not answer).
    pub offset: i64,
    /// The record's timestamp: the create time given or taken at send, or the broker's
    /// log-append time when the topic uses it.
    pub timestamp: i64,
    pub serialized_key_size: usize,
    pub serialized_value_size: usize,
}
