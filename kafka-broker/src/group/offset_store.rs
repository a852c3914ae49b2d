//! Where a group coordinator keeps offsets: the committed ones ([`OffsetStore`], in memory
//! with [`MemoryOffsetStore`]) and the transactional ones still pending
//! ([`PendingTxnOffsets`]). Plain data; the rules that change them are in `offsets.rs` and
//! `txn_offsets.rs`.

use std::collections::BTreeMap;

/// A committed offset as Kafka keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetAndMetadata {
    pub offset: i64,
    /// -1 for none.
    pub leader_epoch: i32,
    pub metadata: String,
    /// Milliseconds since the epoch.
    pub commit_timestamp: i64,
    /// Set only by OffsetCommit v2-4 with an explicit retention time.
    pub expire_timestamp: Option<i64>,
    /// Where the offset's record is in the group's `__consumer_offsets` partition, relative to
    /// the group's other offset records: the manager's count of offset records appended or
    /// replayed (Kafka keeps the record's log offset). Not part of the record; a committed
    /// transaction's offset replaces a committed offset only if its record came later.
    pub log_order: u64,
}

/// Where committed offsets are kept, by group, topic and partition. The coordinator keeps
/// every offset in memory through this; persistence is the records it emits.
pub trait OffsetStore: Send + std::fmt::Debug {
    fn get(&self, group: &str, topic: &str, partition: i32) -> Option<OffsetAndMetadata>;
    fn put(&mut self, group: &str, topic: &str, partition: i32, value: OffsetAndMetadata);
    /// Whether there was an offset to remove.
    fn remove(&mut self, group: &str, topic: &str, partition: i32) -> bool;
    /// A group's offsets, sorted by topic and partition.
    fn group_offsets(&self, group: &str) -> Vec<(String, i32, OffsetAndMetadata)>;
    /// Removes a group's offsets, returning which partitions they were for.
    fn remove_group(&mut self, group: &str) -> Vec<(String, i32)>;
    /// Groups that have offsets.
    fn groups(&self) -> Vec<String>;
}

/// The in-memory [`OffsetStore`].
#[derive(Debug, Default, Clone)]
pub struct MemoryOffsetStore {
    groups: BTreeMap<String, BTreeMap<(String, i32), OffsetAndMetadata>>,
}

impl OffsetStore for MemoryOffsetStore {
    fn get(&self, group: &str, topic: &str, partition: i32) -> Option<OffsetAndMetadata> {
        self.groups
            .get(group)?
            .get(&(topic.to_owned(), partition))
            .cloned()
    }

    fn put(&mut self, group: &str, topic: &str, partition: i32, value: OffsetAndMetadata) {
        self.groups
            .entry(group.to_owned())
            .or_default()
            .insert((topic.to_owned(), partition), value);
    }

    fn remove(&mut self, group: &str, topic: &str, partition: i32) -> bool {
        let Some(offsets) = self.groups.get_mut(group) else {
            return false;
        };
        let removed = offsets.remove(&(topic.to_owned(), partition)).is_some();
        if offsets.is_empty() {
            self.groups.remove(group);
        }
        removed
    }

    fn group_offsets(&self, group: &str) -> Vec<(String, i32, OffsetAndMetadata)> {
        self.groups
            .get(group)
            .map(|offsets| {
                offsets
                    .iter()
                    .map(|((t, p), v)| (t.clone(), *p, v.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }

    fn remove_group(&mut self, group: &str) -> Vec<(String, i32)> {
        self.groups
            .remove(group)
            .map(|offsets| offsets.into_keys().collect())
            .unwrap_or_default()
    }

    fn groups(&self) -> Vec<String> {
        self.groups.keys().cloned().collect()
    }
}

/// The offsets of one producer's open transaction in one group, by (topic, partition).
pub type ProducerOffsets = BTreeMap<(String, i32), OffsetAndMetadata>;

/// Transactional offsets not yet committed or aborted: group -> producer id -> (topic,
/// partition) -> offset. Empty maps are never kept.
#[derive(Debug, Default, Clone)]
pub struct PendingTxnOffsets {
    groups: BTreeMap<String, BTreeMap<i64, ProducerOffsets>>,
}

impl PendingTxnOffsets {
    /// A producer's pending offset for a partition.
    pub fn get(
        &self,
        group: &str,
        producer_id: i64,
        topic: &str,
        partition: i32,
    ) -> Option<&OffsetAndMetadata> {
        self.groups
            .get(group)?
            .get(&producer_id)?
            .get(&(topic.to_owned(), partition))
    }

    /// Sets (or with `None` removes) a producer's pending offset for a partition.
    pub fn put(
        &mut self,
        group: &str,
        producer_id: i64,
        topic: &str,
        partition: i32,
        value: Option<OffsetAndMetadata>,
    ) {
        let key = (topic.to_owned(), partition);
        match value {
            Some(v) => {
                self.groups
                    .entry(group.to_owned())
                    .or_default()
                    .entry(producer_id)
                    .or_default()
                    .insert(key, v);
            }
            None => {
                let Some(by_producer) = self.groups.get_mut(group) else {
                    return;
                };
                if let Some(offsets) = by_producer.get_mut(&producer_id) {
                    offsets.remove(&key);
                    if offsets.is_empty() {
                        by_producer.remove(&producer_id);
                    }
                }
                if by_producer.is_empty() {
                    self.groups.remove(group);
                }
            }
        }
    }

    /// Whether some producer has a pending offset for the partition.
    pub fn has_partition(&self, group: &str, topic: &str, partition: i32) -> bool {
        self.groups.get(group).is_some_and(|by_producer| {
            by_producer
                .values()
                .any(|offsets| offsets.contains_key(&(topic.to_owned(), partition)))
        })
    }

    /// Whether the group has pending offsets.
    pub fn has_group(&self, group: &str) -> bool {
        self.groups.contains_key(group)
    }

    /// The groups with pending offsets.
    pub fn groups(&self) -> impl Iterator<Item = &String> {
        self.groups.keys()
    }

    /// The producers with pending offsets in the group.
    pub fn producers(&self, group: &str) -> Vec<i64> {
        self.groups
            .get(group)
            .map(|by_producer| by_producer.keys().copied().collect())
            .unwrap_or_default()
    }

    /// The groups (among those `in_scope` accepts) where `producer_id` has pending offsets.
    pub fn groups_of(&self, producer_id: i64, in_scope: impl Fn(&str) -> bool) -> Vec<String> {
        self.groups
            .iter()
            .filter(|(g, by_producer)| by_producer.contains_key(&producer_id) && in_scope(g))
            .map(|(g, _)| g.clone())
            .collect()
    }

    /// Removes and returns a producer's pending offsets in a group.
    pub fn take(&mut self, group: &str, producer_id: i64) -> ProducerOffsets {
        let Some(by_producer) = self.groups.get_mut(group) else {
            return ProducerOffsets::new();
        };
        let offsets = by_producer.remove(&producer_id).unwrap_or_default();
        if by_producer.is_empty() {
            self.groups.remove(group);
        }
        offsets
    }

    /// Drops every producer's pending offset for a partition; whether there was one.
    pub fn drop_partition(&mut self, group: &str, topic: &str, partition: i32) -> bool {
        let Some(by_producer) = self.groups.get_mut(group) else {
            return false;
        };
        let key = (topic.to_owned(), partition);
        let mut dropped = false;
        by_producer.retain(|_, offsets| {
            dropped |= offsets.remove(&key).is_some();
            !offsets.is_empty()
        });
        if by_producer.is_empty() {
            self.groups.remove(group);
        }
        dropped
    }

    /// Drops a group's pending offsets; the partitions they were for, sorted, once each.
    pub fn drop_group(&mut self, group: &str) -> Vec<(String, i32)> {
        let mut partitions: Vec<(String, i32)> = self
            .groups
            .remove(group)
            .into_iter()
            .flat_map(|by_producer| by_producer.into_values())
            .flat_map(|offsets| offsets.into_keys())
            .collect();
        partitions.sort();
        partitions.dedup();
        partitions
    }

    /// Keeps the groups `keep` accepts.
    pub fn retain_groups(&mut self, mut keep: impl FnMut(&str) -> bool) {
        self.groups.retain(|g, _| keep(g));
    }
}
