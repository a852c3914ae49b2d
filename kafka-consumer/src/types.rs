//! The values the consumer hands out and takes: partitions, records, offsets.

use std::sync::Arc;

use bytes::Bytes;

/// A record header: a UTF-8 key and optional bytes, both slices of the fetched data.
pub use kafka_protocol::record::RecordHeader as Header;

/// One partition of a topic, shown as `<topic>-<partition>`. Cheap to clone (the topic name
/// is shared). Defined in kafka-protocol, shared with the producer and the broker.
pub use kafka_protocol::TopicPartition;

/// Whose clock a record's timestamp is from: `NoTimestampType` (magic 0 data, timestamp -1),
/// `CreateTime` or `LogAppendTime`. Defined in kafka-protocol.
pub use kafka_protocol::record::TimestampType;

/// A record read from a partition. Key, value and header values are slices of the fetched
/// bytes (for uncompressed batches, of the Fetch response frame itself: no copy).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerRecord {
    pub topic: Arc<str>,
    pub partition: i32,
    pub offset: i64,
    /// Milliseconds since the epoch (-1 when the record has none).
    pub timestamp: i64,
    pub timestamp_type: TimestampType,
    pub key: Option<Bytes>,
    pub value: Option<Bytes>,
    pub headers: Vec<Header>,
    /// The leader epoch the record was written in (`None` for old data).
    pub leader_epoch: Option<i32>,
}

impl ConsumerRecord {
    /// The record's partition.
    pub fn topic_partition(&self) -> TopicPartition {
        TopicPartition {
            topic: self.topic.clone(),
            partition: self.partition,
        }
    }

    /// Key, value and header bytes: what the metrics count as consumed bytes.
    pub fn payload_size(&self) -> usize {
        let headers: usize = self
            .headers
            .iter()
            .map(|h| h.key.len() + h.value.as_ref().map_or(0, Bytes::len))
            .sum();
        self.key.as_ref().map_or(0, Bytes::len)
            + self.value.as_ref().map_or(0, Bytes::len)
            + headers
    }
}

/// An offset to commit or a committed one (defined in kafka-net, where the transactional
/// producer finds it too).
pub use kafka_net::OffsetAndMetadata;

/// The answer of an offsets-for-times lookup: the first offset whose timestamp is at or
/// after the one asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OffsetAndTimestamp {
    pub offset: i64,
    pub timestamp: i64,
    pub leader_epoch: Option<i32>,
}

/// `isolation.level`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum IsolationLevel {
    /// Every record, aborted transactions included, up to the high watermark.
    #[default]
    ReadUncommitted,
    /// Committed records only, up to the last stable offset.
    ReadCommitted,
}

impl IsolationLevel {
    /// The value of the `isolation_level` field of Fetch and ListOffsets.
    pub fn code(self) -> i8 {
        match self {
            Self::ReadUncommitted => 0,
            Self::ReadCommitted => 1,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::ReadUncommitted => "read_uncommitted",
            Self::ReadCommitted => "read_committed",
        }
    }
}

/// `auto.offset.reset`: where to start when there is no valid position.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum OffsetReset {
    /// The log end offset (only records written from now on).
    #[default]
    Latest,
    /// The log start offset.
    Earliest,
    /// No automatic reset: `poll` reports an error until the application seeks.
    None,
}

impl OffsetReset {
    pub fn name(self) -> &'static str {
        match self {
            Self::Latest => "latest",
            Self::Earliest => "earliest",
            Self::None => "none",
        }
    }
}
