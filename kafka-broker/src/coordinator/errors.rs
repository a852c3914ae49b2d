//! The answer a coordinator gives when the append of its records failed: Kafka's mapping of
//! the partition layer's error (GroupMetadataManager's for offset commits,
//! TransactionStateManager's and the group coordinator runtime's for the rest), in one place.

use kafka_protocol::error_code::ErrorCode;

/// What the failed records were.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    /// Committed offsets (OffsetCommit, TxnOffsetCommit).
    Offsets,
    /// Any other coordinator state (group metadata, transaction log records).
    State,
}

/// The code a client is answered with when the append of a coordinator's records failed with
/// `error`: replication trouble (too few in-sync replicas, before or after the append, or
/// no acknowledgement in time) and an unknown partition mean the coordinator is not
/// available for now; a lost leadership or a failed log that this broker is not the
/// coordinator (the client looks it up again); records too large are the commit's fault
/// (INVALID_COMMIT_OFFSET_SIZE) or else the server's; anything else goes back as it is (a
/// fenced producer epoch, say).
pub fn answer_for_append_error(error: ErrorCode, written: Written) -> ErrorCode {
    match error {
        ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
        | ErrorCode::NOT_ENOUGH_REPLICAS
        | ErrorCode::NOT_ENOUGH_REPLICAS_AFTER_APPEND
        | ErrorCode::REQUEST_TIMED_OUT => ErrorCode::COORDINATOR_NOT_AVAILABLE,
        ErrorCode::NOT_LEADER_OR_FOLLOWER | ErrorCode::KAFKA_STORAGE_ERROR => {
            ErrorCode::NOT_COORDINATOR
        }
        ErrorCode::MESSAGE_TOO_LARGE
        | ErrorCode::RECORD_LIST_TOO_LARGE
        | ErrorCode::INVALID_FETCH_SIZE => match written {
            Written::Offsets => ErrorCode::INVALID_COMMIT_OFFSET_SIZE,
            Written::State => ErrorCode::UNKNOWN_SERVER_ERROR,
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn append_errors_map_as_kafka_maps_them() {
        use ErrorCode as E;
        for (error, offsets, state) in [
            (
                E::NOT_ENOUGH_REPLICAS,
                E::COORDINATOR_NOT_AVAILABLE,
                E::COORDINATOR_NOT_AVAILABLE,
            ),
            (
                E::NOT_ENOUGH_REPLICAS_AFTER_APPEND,
                E::COORDINATOR_NOT_AVAILABLE,
                E::COORDINATOR_NOT_AVAILABLE,
            ),
            (
                E::REQUEST_TIMED_OUT,
                E::COORDINATOR_NOT_AVAILABLE,
                E::COORDINATOR_NOT_AVAILABLE,
            ),
            (
                E::UNKNOWN_TOPIC_OR_PARTITION,
                E::COORDINATOR_NOT_AVAILABLE,
                E::COORDINATOR_NOT_AVAILABLE,
            ),
            (
                E::NOT_LEADER_OR_FOLLOWER,
                E::NOT_COORDINATOR,
                E::NOT_COORDINATOR,
            ),
            (
                E::KAFKA_STORAGE_ERROR,
                E::NOT_COORDINATOR,
                E::NOT_COORDINATOR,
            ),
            (
                E::MESSAGE_TOO_LARGE,
                E::INVALID_COMMIT_OFFSET_SIZE,
                E::UNKNOWN_SERVER_ERROR,
            ),
            (
                E::RECORD_LIST_TOO_LARGE,
                E::INVALID_COMMIT_OFFSET_SIZE,
                E::UNKNOWN_SERVER_ERROR,
            ),
            (
                E::INVALID_FETCH_SIZE,
                E::INVALID_COMMIT_OFFSET_SIZE,
                E::UNKNOWN_SERVER_ERROR,
            ),
            (
                E::INVALID_PRODUCER_EPOCH,
                E::INVALID_PRODUCER_EPOCH,
                E::INVALID_PRODUCER_EPOCH,
            ),
        ] {
            assert_eq!(
                answer_for_append_error(error, Written::Offsets),
                offsets,
                "{error:?}"
            );
            assert_eq!(
                answer_for_append_error(error, Written::State),
                state,
                "{error:?}"
            );
        }
    }
}
