//! [`TopicPartition`]: the one name of a partition that the clients and the broker share.
//!
//! A leaf: imports nothing from the crate.

use std::fmt;
use std::sync::Arc;

/// One partition of a topic. The topic name is shared (`Arc<str>`), so a clone is a reference
/// count, not a copy: the producer's batches, the consumer's fetch positions and the broker's
/// partition maps all clone it on their hot paths.
///
/// Ordered by topic, then partition; shown as Kafka shows it, `<topic>-<partition>` (also its
/// `Debug` form, so sets and maps of partitions stay readable in logs).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TopicPartition {
    pub topic: Arc<str>,
    pub partition: i32,
}

impl TopicPartition {
    pub fn new(topic: impl Into<Arc<str>>, partition: i32) -> Self {
        Self {
            topic: topic.into(),
            partition,
        }
    }
}

impl fmt::Display for TopicPartition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.topic, self.partition)
    }
}

impl fmt::Debug for TopicPartition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl<T: Into<Arc<str>>> From<(T, i32)> for TopicPartition {
    fn from((topic, partition): (T, i32)) -> Self {
        Self::new(topic, partition)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::TopicPartition;

    #[test]
    fn shown_as_topic_dash_partition_and_ordered_by_topic_then_partition() {
        let a = TopicPartition::new("my-topic", 10);
        assert_eq!(a.to_string(), "my-topic-10");
        assert_eq!(format!("{a:?}"), "my-topic-10");
        let set: BTreeSet<TopicPartition> = [("b", 0), ("a", 10), ("a", 2)]
            .into_iter()
            .map(TopicPartition::from)
            .collect();
        let order: Vec<String> = set.iter().map(ToString::to_string).collect();
        assert_eq!(order, ["a-2", "a-10", "b-0"]);
    }

    #[test]
    fn clones_share_the_topic_name() {
        let a = TopicPartition::new(String::from("t"), 0);
        let b = a.clone();
        assert!(std::sync::Arc::ptr_eq(&a.topic, &b.topic));
        assert_eq!(a, b);
    }
}
