//! Kafka error codes.
//!
//! [`ErrorCode`] is an open newtype over the `i16` carried in every Kafka
//! response: codes this crate does not know about (for example ones added by a
//! newer broker) are kept as-is and round-trip unchanged.
//!
//! The table below lists every code defined by Apache Kafka's `Errors` enum up
//! to Kafka 4.1 (codes -1 through 133). The retriable flag mirrors the Java
//! client: a code is retriable when its exception class extends
//! `RetriableException` (directly or through `InvalidMetadataException`).

use std::fmt;

/// A Kafka protocol error code.
///
/// Every code defined by Kafka has an associated constant (for example
/// [`ErrorCode::NOT_LEADER_OR_FOLLOWER`]); any other `i16` is still a valid
/// value and is reported as unknown by [`ErrorCode::name`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct ErrorCode(pub i16);

/// Generates the constants, [`ErrorCode::ALL`] and the per-code lookups from
/// one table line per code: `NAME = value, retriable, "message";`.
///
/// Lines must be sorted by value; a duplicated value shows up as an
/// unreachable-pattern warning in the generated `match`es (and in the tests).
macro_rules! error_codes {
    ($($name:ident = $value:literal, $retriable:literal, $message:literal;)+) => {
        impl ErrorCode {
            $(
                #[doc = concat!(
                    "`", stringify!($name), "` (", stringify!($value), "): ", $message, "."
                )]
                pub const $name: ErrorCode = ErrorCode($value);
            )+

            /// Every error code Kafka defines, sorted by value.
            pub const ALL: &[ErrorCode] = &[$(ErrorCode::$name),+];

            /// Kafka's name for this code (e.g. `"NOT_LEADER_OR_FOLLOWER"`), or
            /// `None` if the code is not known.
            pub const fn name(self) -> Option<&'static str> {
                match self.0 {
                    $($value => Some(stringify!($name)),)+
                    _ => None,
                }
            }

            /// Whether the Java client treats this error as retriable (its
            /// exception extends `RetriableException`). Unknown codes are not
            /// retriable.
            pub const fn is_retriable(self) -> bool {
                match self.0 {
                    $($value => $retriable,)+
                    _ => false,
                }
            }

            /// A short human-readable description of the error.
            pub const fn message(self) -> &'static str {
                match self.0 {
                    $($value => $message,)+
                    _ => "unknown error code",
                }
            }
        }
    };
}

error_codes! {
    UNKNOWN_SERVER_ERROR = -1, false, "unexpected server-side failure while handling the request";
    NONE = 0, false, "no error";
    OFFSET_OUT_OF_RANGE = 1, false, "requested offset lies outside the partition's available offsets";
    CORRUPT_MESSAGE = 2, true, "record failed CRC or size validation, or is otherwise malformed";
    UNKNOWN_TOPIC_OR_PARTITION = 3, true, "topic or partition is not hosted by this broker";
    INVALID_FETCH_SIZE = 4, false, "fetch size is not valid";
    LEADER_NOT_AVAILABLE = 5, true, "partition currently has no leader (election in progress)";
    NOT_LEADER_OR_FOLLOWER = 6, true, "broker is not the leader, or not a replica, for this partition";
    REQUEST_TIMED_OUT = 7, true, "request did not complete in time";
    BROKER_NOT_AVAILABLE = 8, false, "broker is not available";
    REPLICA_NOT_AVAILABLE = 9, true, "replica for the partition is not available";
    MESSAGE_TOO_LARGE = 10, false, "message exceeds the maximum size the broker accepts";
    STALE_CONTROLLER_EPOCH = 11, false, "controller epoch is outdated; the controller has moved";
    OFFSET_METADATA_TOO_LARGE = 12, false, "offset commit metadata is too long";
    NETWORK_EXCEPTION = 13, true, "connection closed before a response arrived";
    COORDINATOR_LOAD_IN_PROGRESS = 14, true, "coordinator is still loading its state";
    COORDINATOR_NOT_AVAILABLE = 15, true, "coordinator is not available";
    NOT_COORDINATOR = 16, true, "broker is not the coordinator for this group or transaction";
    INVALID_TOPIC_EXCEPTION = 17, false, "topic name is invalid or the operation is not allowed on it";
    RECORD_LIST_TOO_LARGE = 18, false, "record batch is larger than the configured segment size";
    NOT_ENOUGH_REPLICAS = 19, true, "write rejected: too few in-sync replicas";
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20, true, "write appended but reached fewer in-sync replicas than required";
    INVALID_REQUIRED_ACKS = 21, false, "acks value of the produce request is not valid";
    ILLEGAL_GENERATION = 22, false, "group generation id does not match";
    INCONSISTENT_GROUP_PROTOCOL = 23, false, "member's protocol type or protocols are incompatible with the group";
    INVALID_GROUP_ID = 24, false, "group id is not valid";
    UNKNOWN_MEMBER_ID = 25, false, "member id is not known to the coordinator";
    INVALID_SESSION_TIMEOUT = 26, false, "session timeout is outside the range the broker allows";
    REBALANCE_IN_PROGRESS = 27, false, "group is rebalancing; the member must rejoin";
    INVALID_COMMIT_OFFSET_SIZE = 28, false, "committed offset data is too large";
    TOPIC_AUTHORIZATION_FAILED = 29, false, "not authorized to access the topic";
    GROUP_AUTHORIZATION_FAILED = 30, false, "not authorized to access the group";
    CLUSTER_AUTHORIZATION_FAILED = 31, false, "not authorized for the cluster operation";
    INVALID_TIMESTAMP = 32, false, "record timestamp is outside the accepted range";
    UNSUPPORTED_SASL_MECHANISM = 33, false, "requested SASL mechanism is not enabled on the broker";
    ILLEGAL_SASL_STATE = 34, false, "request not allowed in the current SASL authentication state";
    UNSUPPORTED_VERSION = 35, false, "API version is not supported by the broker";
    TOPIC_ALREADY_EXISTS = 36, false, "a topic with this name already exists";
    INVALID_PARTITIONS = 37, false, "partition count is not valid";
    INVALID_REPLICATION_FACTOR = 38, false, "replication factor is not valid for the available brokers";
    INVALID_REPLICA_ASSIGNMENT = 39, false, "replica assignment is not valid";
    INVALID_CONFIG = 40, false, "configuration is not valid";
    NOT_CONTROLLER = 41, true, "broker is not the active controller";
    INVALID_REQUEST = 42, false, "request is malformed or not valid for this broker";
    UNSUPPORTED_FOR_MESSAGE_FORMAT = 43, false, "request needs a newer message format than the topic uses";
    POLICY_VIOLATION = 44, false, "request rejected by a configured policy";
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45, false, "producer sequence number is out of order";
    DUPLICATE_SEQUENCE_NUMBER = 46, false, "producer sequence number was already written";
    INVALID_PRODUCER_EPOCH = 47, false, "producer epoch is outdated";
    INVALID_TXN_STATE = 48, false, "operation not valid in the current transaction state";
    INVALID_PRODUCER_ID_MAPPING = 49, false, "producer id is not mapped to this transactional id";
    INVALID_TRANSACTION_TIMEOUT = 50, false, "transaction timeout exceeds the broker maximum";
    CONCURRENT_TRANSACTIONS = 51, true, "another operation on this transaction is still in progress";
    TRANSACTION_COORDINATOR_FENCED = 52, false, "transaction coordinator has been superseded";
    TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53, false, "not authorized for the transactional id";
    SECURITY_DISABLED = 54, false, "security features are not enabled";
    OPERATION_NOT_ATTEMPTED = 55, false, "operation skipped because another part of the batch failed";
    KAFKA_STORAGE_ERROR = 56, true, "disk error while accessing the log";
    LOG_DIR_NOT_FOUND = 57, false, "log directory is not configured on the broker";
    SASL_AUTHENTICATION_FAILED = 58, false, "SASL authentication failed";
    UNKNOWN_PRODUCER_ID = 59, false, "broker holds no state for this producer id";
    REASSIGNMENT_IN_PROGRESS = 60, false, "a partition reassignment is in progress";
    DELEGATION_TOKEN_AUTH_DISABLED = 61, false, "delegation tokens are disabled";
    DELEGATION_TOKEN_NOT_FOUND = 62, false, "delegation token does not exist";
    DELEGATION_TOKEN_OWNER_MISMATCH = 63, false, "principal is not the owner or a renewer of the token";
    DELEGATION_TOKEN_REQUEST_NOT_ALLOWED = 64, false, "delegation token requests are not allowed on this channel";
    DELEGATION_TOKEN_AUTHORIZATION_FAILED = 65, false, "not authorized for the delegation token";
    DELEGATION_TOKEN_EXPIRED = 66, false, "delegation token has expired";
    INVALID_PRINCIPAL_TYPE = 67, false, "principal type is not supported";
    NON_EMPTY_GROUP = 68, false, "group still has members";
    GROUP_ID_NOT_FOUND = 69, false, "group does not exist";
    FETCH_SESSION_ID_NOT_FOUND = 70, true, "fetch session does not exist";
    INVALID_FETCH_SESSION_EPOCH = 71, true, "fetch session epoch does not match";
    LISTENER_NOT_FOUND = 72, true, "leader has no listener matching the one the request arrived on";
    TOPIC_DELETION_DISABLED = 73, false, "topic deletion is disabled";
    FENCED_LEADER_EPOCH = 74, true, "leader epoch in the request is older than the broker's";
    UNKNOWN_LEADER_EPOCH = 75, true, "leader epoch in the request is newer than the broker's";
    UNSUPPORTED_COMPRESSION_TYPE = 76, false, "client cannot handle the partition's compression type";
    STALE_BROKER_EPOCH = 77, false, "broker epoch is outdated";
    OFFSET_NOT_AVAILABLE = 78, true, "offset not yet available after a leader change";
    MEMBER_ID_REQUIRED = 79, false, "member must obtain a member id before joining";
    PREFERRED_LEADER_NOT_AVAILABLE = 80, true, "preferred leader is not available";
    GROUP_MAX_SIZE_REACHED = 81, false, "group has reached its maximum size";
    FENCED_INSTANCE_ID = 82, false, "static member fenced by a newer member with the same instance id";
    ELIGIBLE_LEADERS_NOT_AVAILABLE = 83, true, "no eligible leader is available for the partition";
    ELECTION_NOT_NEEDED = 84, true, "partition already has the desired leader";
    NO_REASSIGNMENT_IN_PROGRESS = 85, false, "no partition reassignment is in progress";
    GROUP_SUBSCRIBED_TO_TOPIC = 86, false, "cannot delete offsets of a topic the group is subscribed to";
    INVALID_RECORD = 87, false, "record rejected by broker-side validation";
    UNSTABLE_OFFSET_COMMIT = 88, true, "pending transactional offsets must be resolved first";
    THROTTLING_QUOTA_EXCEEDED = 89, true, "throttling quota exceeded";
    PRODUCER_FENCED = 90, false, "fenced by a newer producer with the same transactional id";
    RESOURCE_NOT_FOUND = 91, false, "referenced resource does not exist";
    DUPLICATE_RESOURCE = 92, false, "same resource referenced more than once";
    UNACCEPTABLE_CREDENTIAL = 93, false, "credential does not meet the acceptance criteria";
    INCONSISTENT_VOTER_SET = 94, false, "sender or receiver is not one of the expected voters";
    INVALID_UPDATE_VERSION = 95, false, "update version is not valid";
    FEATURE_UPDATE_FAILED = 96, false, "finalized feature update failed";
    PRINCIPAL_DESERIALIZATION_FAILURE = 97, false, "principal of a forwarded request could not be deserialized";
    SNAPSHOT_NOT_FOUND = 98, false, "requested snapshot does not exist";
    POSITION_OUT_OF_RANGE = 99, false, "snapshot position is out of range";
    UNKNOWN_TOPIC_ID = 100, true, "topic id is not hosted by this broker";
    DUPLICATE_BROKER_REGISTRATION = 101, false, "broker id is already registered";
    BROKER_ID_NOT_REGISTERED = 102, false, "broker id is not registered";
    INCONSISTENT_TOPIC_ID = 103, true, "topic id does not match the log's topic id";
    INCONSISTENT_CLUSTER_ID = 104, false, "cluster id does not match";
    TRANSACTIONAL_ID_NOT_FOUND = 105, false, "transactional id does not exist";
    FETCH_SESSION_TOPIC_ID_ERROR = 106, true, "fetch session used topic ids inconsistently";
    INELIGIBLE_REPLICA = 107, false, "proposed ISR includes an ineligible replica";
    NEW_LEADER_ELECTED = 108, false, "partition state updated but a new leader was elected";
    OFFSET_MOVED_TO_TIERED_STORAGE = 109, false, "offset is only available in tiered storage";
    FENCED_MEMBER_EPOCH = 110, false, "member epoch fenced; the member must rejoin";
    UNRELEASED_INSTANCE_ID = 111, false, "instance id is still held by another member";
    UNSUPPORTED_ASSIGNOR = 112, false, "assignor or its version is not supported by the group";
    STALE_MEMBER_EPOCH = 113, false, "member epoch is stale";
    MISMATCHED_ENDPOINT_TYPE = 114, false, "request sent to the wrong kind of endpoint";
    UNSUPPORTED_ENDPOINT_TYPE = 115, false, "endpoint type is not supported";
    UNKNOWN_CONTROLLER_ID = 116, false, "controller id is not known";
    UNKNOWN_SUBSCRIPTION_ID = 117, false, "telemetry subscription id is unknown or outdated";
    TELEMETRY_TOO_LARGE = 118, false, "telemetry payload is too large";
    INVALID_REGISTRATION = 119, false, "broker registration is not valid";
    TRANSACTION_ABORTABLE = 120, false, "transaction hit an error and should be aborted";
    INVALID_RECORD_STATE = 121, false, "record state does not allow this acknowledgement";
    SHARE_SESSION_NOT_FOUND = 122, true, "share session does not exist";
    INVALID_SHARE_SESSION_EPOCH = 123, true, "share session epoch does not match";
    FENCED_STATE_EPOCH = 124, false, "share-group state epoch does not match";
    INVALID_VOTER_KEY = 125, false, "voter key does not match the receiving replica";
    DUPLICATE_VOTER = 126, false, "voter is already in the voter set";
    VOTER_NOT_FOUND = 127, false, "voter is not in the voter set";
    INVALID_REGULAR_EXPRESSION = 128, false, "regular expression is not valid";
    REBOOTSTRAP_REQUIRED = 129, false, "client metadata is stale; the client must rebootstrap";
    STREAMS_INVALID_TOPOLOGY = 130, false, "streams topology is not valid";
    STREAMS_INVALID_TOPOLOGY_EPOCH = 131, false, "streams topology epoch is not valid";
    STREAMS_TOPOLOGY_FENCED = 132, false, "streams topology epoch is outdated";
    SHARE_SESSION_LIMIT_REACHED = 133, true, "broker has reached its share session limit";
}

impl ErrorCode {
    /// The raw wire value.
    pub const fn code(self) -> i16 {
        self.0
    }

    /// `true` for [`ErrorCode::NONE`] (code 0).
    pub const fn is_ok(self) -> bool {
        self.0 == 0
    }

    /// `true` for any code other than [`ErrorCode::NONE`].
    pub const fn is_err(self) -> bool {
        !self.is_ok()
    }

    /// `true` if this code is one Kafka defines.
    pub const fn is_known(self) -> bool {
        self.name().is_some()
    }
}

impl fmt::Debug for ErrorCode {
    /// `NOT_LEADER_OR_FOLLOWER(6)`, or `ErrorCode(9999)` for unknown codes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            Some(name) => write!(f, "{name}({})", self.0),
            None => write!(f, "ErrorCode({})", self.0),
        }
    }
}

impl fmt::Display for ErrorCode {
    /// `NOT_LEADER_OR_FOLLOWER (6): <message>`, or
    /// `ErrorCode (9999): unknown error code` for unknown codes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.name().unwrap_or("ErrorCode");
        write!(f, "{name} ({}): {}", self.0, self.message())
    }
}

impl From<i16> for ErrorCode {
    fn from(code: i16) -> Self {
        ErrorCode(code)
    }
}

impl From<ErrorCode> for i16 {
    fn from(code: ErrorCode) -> Self {
        code.0
    }
}

#[cfg(test)]
mod tests {
    use super::ErrorCode;
    use std::collections::HashSet;

    #[test]
    fn known_values() {
        assert_eq!(ErrorCode::UNKNOWN_SERVER_ERROR.0, -1);
        assert_eq!(ErrorCode::NONE.0, 0);
        assert_eq!(ErrorCode::OFFSET_OUT_OF_RANGE.0, 1);
        assert_eq!(ErrorCode::CORRUPT_MESSAGE.0, 2);
        assert_eq!(ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.0, 3);
        assert_eq!(ErrorCode::NOT_LEADER_OR_FOLLOWER.0, 6);
        assert_eq!(ErrorCode::UNSUPPORTED_VERSION.0, 35);
        assert_eq!(ErrorCode::OUT_OF_ORDER_SEQUENCE_NUMBER.0, 45);
        assert_eq!(ErrorCode::KAFKA_STORAGE_ERROR.0, 56);
        assert_eq!(ErrorCode::UNKNOWN_TOPIC_ID.0, 100);
        assert_eq!(ErrorCode::INVALID_REGULAR_EXPRESSION.0, 128);
        assert_eq!(ErrorCode::SHARE_SESSION_LIMIT_REACHED.0, 133);

        let code = ErrorCode::from(6);
        assert_eq!(code, ErrorCode::NOT_LEADER_OR_FOLLOWER);
        assert_eq!(code.name(), Some("NOT_LEADER_OR_FOLLOWER"));
        assert!(code.is_retriable());
        assert!(!code.is_ok());

        let code = ErrorCode::from(35);
        assert_eq!(code.name(), Some("UNSUPPORTED_VERSION"));
        assert!(!code.is_retriable());

        assert!(ErrorCode::FENCED_LEADER_EPOCH.is_retriable());
        assert!(!ErrorCode::PRODUCER_FENCED.is_retriable());
        assert!(!ErrorCode::UNKNOWN_SERVER_ERROR.is_retriable());
        assert!(!ErrorCode::NONE.is_retriable());
    }

    #[test]
    fn none_is_ok_and_default() {
        assert_eq!(ErrorCode::default(), ErrorCode::NONE);
        assert!(ErrorCode::NONE.is_ok());
        assert!(!ErrorCode::NONE.is_err());
        for &code in ErrorCode::ALL {
            assert_eq!(code.is_ok(), code == ErrorCode::NONE, "{code:?}");
        }
    }

    #[test]
    fn unknown_code_is_kept() {
        let code = ErrorCode::from(9999);
        assert_eq!(code.0, 9999);
        assert_eq!(i16::from(code), 9999);
        assert_eq!(code.name(), None);
        assert!(!code.is_known());
        assert!(!code.is_retriable());
        assert!(!code.is_ok());
        assert_eq!(code.message(), "unknown error code");
        assert_eq!(format!("{code:?}"), "ErrorCode(9999)");
        assert_eq!(format!("{code}"), "ErrorCode (9999): unknown error code");
        assert_eq!(format!("{:?}", ErrorCode(-2)), "ErrorCode(-2)");
        assert_eq!(ErrorCode(134).name(), None);
    }

    #[test]
    fn formatting() {
        let code = ErrorCode::NOT_LEADER_OR_FOLLOWER;
        assert_eq!(format!("{code:?}"), "NOT_LEADER_OR_FOLLOWER(6)");
        assert_eq!(
            format!("{code}"),
            format!("NOT_LEADER_OR_FOLLOWER (6): {}", code.message())
        );
        assert_eq!(
            format!("{:?}", ErrorCode::UNKNOWN_SERVER_ERROR),
            "UNKNOWN_SERVER_ERROR(-1)"
        );
        assert_eq!(format!("{:?}", ErrorCode::NONE), "NONE(0)");
    }

    #[test]
    fn no_duplicate_values_or_names() {
        let mut values = HashSet::new();
        let mut names = HashSet::new();
        for &code in ErrorCode::ALL {
            assert!(values.insert(code.0), "duplicate value {}", code.0);
            let name = code.name();
            assert!(name.is_some(), "listed code {} has no name", code.0);
            assert!(names.insert(name), "duplicate name {name:?}");
        }
        assert_eq!(values.len(), ErrorCode::ALL.len());
    }

    #[test]
    fn all_is_sorted_and_complete() {
        assert!(
            ErrorCode::ALL.windows(2).all(|w| w[0].0 < w[1].0),
            "ALL is not strictly sorted by value"
        );
        // Kafka's codes are contiguous from -1 up to the highest one.
        assert_eq!(
            ErrorCode::ALL.first(),
            Some(&ErrorCode::UNKNOWN_SERVER_ERROR)
        );
        assert_eq!(
            ErrorCode::ALL.last(),
            Some(&ErrorCode::SHARE_SESSION_LIMIT_REACHED)
        );
        assert_eq!(ErrorCode::ALL.len(), 135);
        for (i, &code) in ErrorCode::ALL.iter().enumerate() {
            assert_eq!(i64::from(code.0), i64::try_from(i).unwrap() - 1);
        }
    }

    #[test]
    fn every_known_code_round_trips_and_has_text() {
        for &code in ErrorCode::ALL {
            assert!(code.is_known());
            assert_eq!(ErrorCode::from(i16::from(code)), code);
            assert_eq!(code.code(), code.0);
            let name = code.name().unwrap();
            assert!(
                name.chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'),
                "{name} is not SCREAMING_SNAKE_CASE"
            );
            assert!(!code.message().is_empty());
            assert_ne!(code.message(), "unknown error code");
            assert_eq!(format!("{code:?}"), format!("{name}({})", code.0));
        }
    }

    #[test]
    fn retriable_set_matches_java_client() {
        let expected = [
            ErrorCode::CORRUPT_MESSAGE,
            ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
            ErrorCode::LEADER_NOT_AVAILABLE,
            ErrorCode::NOT_LEADER_OR_FOLLOWER,
            ErrorCode::REQUEST_TIMED_OUT,
            ErrorCode::REPLICA_NOT_AVAILABLE,
            ErrorCode::NETWORK_EXCEPTION,
            ErrorCode::COORDINATOR_LOAD_IN_PROGRESS,
            ErrorCode::COORDINATOR_NOT_AVAILABLE,
            ErrorCode::NOT_COORDINATOR,
            ErrorCode::NOT_ENOUGH_REPLICAS,
            ErrorCode::NOT_ENOUGH_REPLICAS_AFTER_APPEND,
            ErrorCode::NOT_CONTROLLER,
            ErrorCode::CONCURRENT_TRANSACTIONS,
            ErrorCode::KAFKA_STORAGE_ERROR,
            ErrorCode::FETCH_SESSION_ID_NOT_FOUND,
            ErrorCode::INVALID_FETCH_SESSION_EPOCH,
            ErrorCode::LISTENER_NOT_FOUND,
            ErrorCode::FENCED_LEADER_EPOCH,
            ErrorCode::UNKNOWN_LEADER_EPOCH,
            ErrorCode::OFFSET_NOT_AVAILABLE,
            ErrorCode::PREFERRED_LEADER_NOT_AVAILABLE,
            ErrorCode::ELIGIBLE_LEADERS_NOT_AVAILABLE,
            ErrorCode::ELECTION_NOT_NEEDED,
            ErrorCode::UNSTABLE_OFFSET_COMMIT,
            ErrorCode::THROTTLING_QUOTA_EXCEEDED,
            ErrorCode::UNKNOWN_TOPIC_ID,
            ErrorCode::INCONSISTENT_TOPIC_ID,
            ErrorCode::FETCH_SESSION_TOPIC_ID_ERROR,
            ErrorCode::SHARE_SESSION_NOT_FOUND,
            ErrorCode::INVALID_SHARE_SESSION_EPOCH,
            ErrorCode::SHARE_SESSION_LIMIT_REACHED,
        ];
        let actual: Vec<ErrorCode> = ErrorCode::ALL
            .iter()
            .copied()
            .filter(|c| c.is_retriable())
            .collect();
        assert_eq!(actual, expected);
    }
}
