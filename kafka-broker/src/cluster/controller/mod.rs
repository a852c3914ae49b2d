//! The active controller's decisions, as pure functions of the committed
//! [`MetadataImage`], a request and `now_ms`.
//!
//! Each operation returns an [`Outcome`]: the metadata records to commit and the response to
//! send once they are committed. The caller serializes operations: one runs against the
//! committed image, its records are committed and applied to the image, then the next runs.
//! So no operation sees another's uncommitted records, and a validate-only request, a refused
//! one or one that changes nothing returns no records (answer it at once).
//!
//! The only state of its own is volatile, as in Kafka's `BrokerHeartbeatManager`: when each
//! broker last heartbeated and which metadata offset it reported. A new active controller
//! ([`Controller::new`]) gives every registered broker a full session from the moment it
//! takes over.
//!
//! | file | what |
//! |---|---|
//! | `brokers.rs` | BrokerRegistration, BrokerHeartbeat (unfencing, controlled shutdown), session expiry ([`Controller::tick`]) |
//! | `election.rs` | partition changes: ISR shrink and leader election when brokers leave or return (Kafka's `PartitionChangeBuilder`) |
//! | `placement.rs` | replica placement: round robin over active brokers, racks spread (Kafka's striped placer) |
//! | `topics.rs` | CreateTopics, CreatePartitions, DeleteTopics |
//! | `configs.rs` | IncrementalAlterConfigs, AlterConfigs for topics and brokers |
//! | `alter_partition.rs` | AlterPartition: a leader's ISR changes |
//! | `producer_ids.rs` | AllocateProducerIds: blocks of producer ids for brokers |
//! | `acls.rs` | CreateAcls, DeleteAcls: AccessControlEntryRecord / RemoveAccessControlEntryRecord |
//! | `scram.rs` | AlterUserScramCredentials: UserScramCredentialRecord / RemoveUserScramCredentialRecord |
//! | `quotas.rs` | AlterClientQuotas: ClientQuotaRecord |
//! | `features.rs` | UpdateFeatures and the bootstrap levels: FeatureLevelRecord |

mod acls;
mod alter_partition;
mod brokers;
mod configs;
mod election;
mod features;
mod placement;
mod producer_ids;
mod quotas;
mod scram;
mod topics;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use kafka_protocol::metadata::MetadataRecord;
use kafka_protocol::{KStr, Uuid};

use super::image::MetadataImage;
use crate::config::BrokerConfig;
use crate::error::BrokerError;

pub use producer_ids::PRODUCER_ID_BLOCK_SIZE;

/// What the controller decides with.
#[derive(Debug, Clone)]
pub struct ControllerConfig {
    /// The cluster id brokers must register with (INCONSISTENT_CLUSTER_ID otherwise).
    pub cluster_id: String,
    /// `broker.session.timeout.ms` (Kafka's default 9000): a broker that has not heartbeated
    /// for this long is fenced.
    pub session_timeout_ms: i64,
    /// `default.replication.factor`, for CreateTopics with replication factor -1.
    pub default_replication_factor: i16,
    /// `num.partitions`, for CreateTopics with -1 partitions.
    pub default_num_partitions: i32,
    /// `unclean.leader.election.enable`, unless the topic or the cluster-wide broker config
    /// (resource `""`) in the image says otherwise.
    pub unclean_leader_election: bool,
    /// `delete.topic.enable`.
    pub delete_topic_enable: bool,
    /// For topic config validation (its values are the defaults topic overrides apply to);
    /// its `max.partitions` bounds the replicas placed on one broker.
    pub broker: BrokerConfig,
}

impl ControllerConfig {
    /// Kafka's `broker.session.timeout.ms` default.
    pub const DEFAULT_SESSION_TIMEOUT_MS: i64 = 9_000;

    /// The settings a broker's configuration gives, with Kafka's default session timeout.
    pub fn from_broker(broker: &BrokerConfig, cluster_id: impl Into<String>) -> Self {
        Self {
            cluster_id: cluster_id.into(),
            session_timeout_ms: Self::DEFAULT_SESSION_TIMEOUT_MS,
            default_replication_factor: broker.topics.default_replication_factor,
            default_num_partitions: broker.topics.num_partitions,
            unclean_leader_election: false,
            delete_topic_enable: broker.topics.delete_enable,
            broker: broker.clone(),
        }
    }
}

/// What an operation decided: the records to commit (as one batch), and the response to send
/// once they are committed. No records: answer at once.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome<R> {
    pub records: Vec<MetadataRecord>,
    pub response: R,
}

impl<R> Outcome<R> {
    fn new(records: Vec<MetadataRecord>, response: R) -> Self {
        Self { records, response }
    }

    /// A response with nothing to commit.
    fn answer(response: R) -> Self {
        Self::new(Vec::new(), response)
    }
}

/// What the controller keeps of a broker between requests (lost on failover).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Session {
    /// The last registration or heartbeat.
    last_contact_ms: i64,
    /// Whether the image (or the records just decided) has it fenced: fenced brokers have no
    /// session to expire.
    fenced: bool,
    /// The metadata offset its last heartbeat reported.
    metadata_offset: Option<u64>,
    /// For a broker in controlled shutdown that leads nothing any more: the image offset by
    /// which that was so. It may stop once every active broker has reported this offset.
    shutdown_offset: Option<u64>,
}

/// Where new topic ids (and ACL ids) come from.
type TopicIds = Box<dyn FnMut() -> Uuid + Send>;

/// The active controller.
pub struct Controller {
    config: ControllerConfig,
    sessions: BTreeMap<i32, Session>,
    topic_ids: TopicIds,
}

impl std::fmt::Debug for Controller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Controller")
            .field("config", &self.config)
            .field("sessions", &self.sessions)
            .finish_non_exhaustive()
    }
}

impl Controller {
    /// A new active controller: every registered broker gets a full session from `now_ms`.
    /// Topic ids are random ([`crate::topics::random_uuid`]).
    pub fn new(config: ControllerConfig, image: &MetadataImage, now_ms: i64) -> Self {
        let mut c = Self {
            config,
            sessions: BTreeMap::new(),
            topic_ids: Box::new(crate::topics::random_uuid),
        };
        c.sync_sessions(image, now_ms);
        c
    }

    /// Takes topic ids from `ids` instead of the OS's randomness (for deterministic tests). An
    /// id that is zero, reserved or taken is skipped.
    pub fn with_topic_ids(mut self, ids: impl FnMut() -> Uuid + Send + 'static) -> Self {
        self.topic_ids = Box::new(ids);
        self
    }

    pub fn config(&self) -> &ControllerConfig {
        &self.config
    }
}

/// A response's error code and message for an error (the message alone, without the code's
/// name: the response carries the code).
fn error_fields(e: &BrokerError) -> (i16, Option<KStr>) {
    let message = match e {
        BrokerError::Kafka { message, .. } => message.clone(),
        other => other.to_string(),
    };
    (e.error_code().code(), Some(KStr::from(message)))
}
