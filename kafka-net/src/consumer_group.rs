//! What a consumer group member is and what it commits, in one place for the two clients
//! that need it: the consumer hands these out, and the transactional producer sends them
//! with the offsets it commits inside a transaction (TxnOffsetCommit). Plain data, no I/O.

/// Who a consumer is in its group (Java's `ConsumerGroupMetadata`): what a transactional
/// producer sends with the offsets it commits, so the group coordinator can refuse a commit
/// from a member that is no longer in the generation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerGroupMetadata {
    pub group_id: String,
    /// The generation of the current assignment (-1 outside a generation).
    pub generation_id: i32,
    /// Empty outside a generation.
    pub member_id: String,
    pub group_instance_id: Option<String>,
}

impl ConsumerGroupMetadata {
    /// A group outside any generation (what a producer sends when it does not know the
    /// consumer's membership; the coordinator then checks nothing but the group id).
    pub fn new(group_id: impl Into<String>) -> Self {
        Self {
            group_id: group_id.into(),
            generation_id: -1,
            member_id: String::new(),
            group_instance_id: None,
        }
    }
}

/// An offset to commit or a committed one: the offset of the next record to read, the leader
/// epoch of the last record read (for truncation detection) and free-form metadata.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OffsetAndMetadata {
    pub offset: i64,
    pub leader_epoch: Option<i32>,
    pub metadata: String,
}

impl OffsetAndMetadata {
    pub fn new(offset: i64) -> Self {
        Self {
            offset,
            leader_epoch: None,
            metadata: String::new(),
        }
    }

    #[must_use]
    pub fn with_leader_epoch(mut self, epoch: Option<i32>) -> Self {
        self.leader_epoch = epoch;
        self
    }

    #[must_use]
    pub fn with_metadata(mut self, metadata: impl Into<String>) -> Self {
        self.metadata = metadata.into();
        self
    }
}
