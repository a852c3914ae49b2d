//! What can go wrong in assignment and in the consumer protocol's wire formats.

use kafka_protocol::{DecodeError, EncodeError};

use super::TopicPartition;

#[derive(Debug, thiserror::Error)]
pub enum AssignorError {
    /// Bytes from a peer (member metadata, an assignment, assignor user data) are malformed.
    #[error("malformed {what}: {source}")]
    Decode {
        what: &'static str,
        #[source]
        source: DecodeError,
    },
    /// A value cannot be written in the requested format or version.
    #[error("cannot encode {what}: {source}")]
    Encode {
        what: &'static str,
        #[source]
        source: EncodeError,
    },
    /// Metadata gave a topic a negative partition count.
    #[error("topic {topic} has a negative partition count ({count})")]
    InvalidPartitionCount { topic: String, count: i32 },
    /// The same member id appears twice in the group.
    #[error("member {member_id} appears more than once in the group")]
    DuplicateMember { member_id: String },
    /// Under the cooperative protocol an assignment gives partitions straight to a new owner
    /// while another member still owns them.
    #[error(
        "the cooperative protocol forbids reassigning partitions still owned by another member: {partitions:?}"
    )]
    CooperativeViolation { partitions: Vec<TopicPartition> },
    /// The assignor broke one of its own invariants (a bug, reported instead of a panic).
    #[error("{assignor} assignor bug: {detail}")]
    Internal {
        assignor: &'static str,
        detail: String,
    },
}
