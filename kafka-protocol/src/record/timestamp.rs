//! Whose clock a record's timestamp is from: the one `TimestampType` of the workspace (batches,
//! legacy messages, the consumer's records, the broker's `message.timestamp.type`).
//!
//! A leaf: imports nothing from the crate.

/// Whose clock a timestamp is from, as Kafka's `TimestampType`.
///
/// A v2 batch carries one attribute bit (set: log-append time), so a batch is always
/// [`CreateTime`](Self::CreateTime) or [`LogAppendTime`](Self::LogAppendTime);
/// [`NoTimestampType`](Self::NoTimestampType) is what magic 0 messages have (their timestamp
/// is -1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TimestampType {
    /// No timestamp at all (magic 0 data).
    NoTimestampType,
    /// Set by the producer.
    CreateTime,
    /// Set by the broker when it appended the batch.
    LogAppendTime,
}

impl TimestampType {
    /// Kafka's name, as in `message.timestamp.type` and Kafka's tools.
    pub fn name(self) -> &'static str {
        match self {
            Self::NoTimestampType => "NoTimestampType",
            Self::CreateTime => "CreateTime",
            Self::LogAppendTime => "LogAppendTime",
        }
    }
}

impl std::fmt::Display for TimestampType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::TimestampType;

    #[test]
    fn names_are_kafkas() {
        assert_eq!(
            TimestampType::NoTimestampType.to_string(),
            "NoTimestampType"
        );
        assert_eq!(TimestampType::CreateTime.to_string(), "CreateTime");
        assert_eq!(TimestampType::LogAppendTime.name(), "LogAppendTime");
    }
}
