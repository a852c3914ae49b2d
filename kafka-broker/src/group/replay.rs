//! Rebuilding a coordinator's groups and offsets from the entries of its
//! `__consumer_offsets` partitions (at start-up, or when this broker takes a partition
//! over), on the [`GroupManager`].

use std::collections::BTreeMap;

use super::consumer::ConsumerGroupRecord;
use super::manager::GroupManager;
use super::records::{GroupMetadataValue, LogEntry, RecordKey, RecordValue};
use super::state::Group;

impl GroupManager {
    /// Rebuilds groups and offsets from `__consumer_offsets` entries, in log order (the last
    /// record of a key wins; a tombstone deletes it and the partition's pending transactional
    /// offsets). Records of transactional batches are pending for their producer until its
    /// marker in the same partition commits or aborts them; without a marker they stay
    /// pending (a later [`GroupManager::complete_transaction`] ends them). Meant for a fresh
    /// manager at start-up: groups with members come back Stable with their sessions starting
    /// at `now`, so members that are gone are removed after one session timeout.
    pub fn replay<R: Into<LogEntry>>(&mut self, entries: impl IntoIterator<Item = R>, now: i64) {
        let mut metadata: BTreeMap<String, Option<GroupMetadataValue>> = BTreeMap::new();
        for entry in entries {
            let (producer, record) = match entry.into() {
                LogEntry::Record(record) => (None, record),
                LogEntry::Transactional {
                    producer_id,
                    record,
                } => (Some(producer_id), record),
                LogEntry::Marker {
                    offsets_partition,
                    producer_id,
                    commit,
                } => {
                    self.complete_transaction(offsets_partition, producer_id, commit);
                    continue;
                }
            };
            match (record.key, record.value) {
                (
                    RecordKey::OffsetCommit {
                        group,
                        topic,
                        partition,
                    },
                    Some(RecordValue::OffsetCommit(mut v)),
                ) => {
                    v.log_order = self.next_log_order();
                    match producer {
                        None => self.offsets.put(&group, &topic, partition, v),
                        Some(pid) => self
                            .pending_txn
                            .put(&group, pid, &topic, partition, Some(v)),
                    }
                }
                (
                    RecordKey::OffsetCommit {
                        group,
                        topic,
                        partition,
                    },
                    None,
                ) => {
                    self.offsets.remove(&group, &topic, partition);
                    self.pending_txn.drop_partition(&group, &topic, partition);
                }
                (RecordKey::GroupMetadata { group }, Some(RecordValue::GroupMetadata(v))) => {
                    metadata.insert(group, Some(v));
                }
                (RecordKey::GroupMetadata { group }, None) => {
                    metadata.insert(group, None);
                }
                (RecordKey::Consumer(key), Some(RecordValue::Consumer(value))) => {
                    self.replay_consumer(ConsumerGroupRecord {
                        key,
                        value: Some(value),
                    });
                }
                (RecordKey::Consumer(key), None) => {
                    self.replay_consumer(ConsumerGroupRecord { key, value: None });
                }
                (key, Some(_)) => {
                    tracing::warn!(
                        ?key,
                        "__consumer_offsets record whose value does not match its key; skipped"
                    );
                }
            }
        }
        for (id, value) in metadata {
            match value {
                Some(v) => {
                    let group = Group::from_value(id.clone(), v, now);
                    self.groups.insert(id, group);
                }
                None => {
                    self.groups.remove(&id);
                }
            }
        }
        // Groups known only by their offsets (simple consumers, producers' transactions)
        // exist as empty groups.
        let pending: Vec<String> = self.pending_txn.groups().cloned().collect();
        for id in self.offsets.groups().into_iter().chain(pending) {
            if !self.groups.contains_key(&id) && !self.consumer.contains(&id) {
                self.groups.insert(id.clone(), Group::new(id, now));
            }
        }
    }
}
