//! Consumer group apis, a file per api or close family. Each handler turns a request into
//! the group coordinator's terms ([`crate::group`]) and its answer into the response of the
//! request's version, setting only fields that version carries.
//!
//! | file | apis |
//! |---|---|
//! | `find_coordinator.rs` | FindCoordinator (for groups and transactional ids) |
//! | `membership.rs` | JoinGroup, SyncGroup, Heartbeat, LeaveGroup |
//! | `offsets.rs` | OffsetCommit, TxnOffsetCommit, OffsetFetch, OffsetDelete |
//! | `group_admin.rs` | DescribeGroups, ListGroups, DeleteGroups |
//! | `consumer_group.rs` | ConsumerGroupHeartbeat, ConsumerGroupDescribe (KIP-848) |
//!
//! They import the group coordinator, the request context, and (TxnOffsetCommit) the
//! transaction errors by version; never the broker, except FindCoordinator's address of this
//! node. On a single node this broker is the coordinator of every group.
//!
//! Authorization is Kafka's (`KafkaApis`): each handler asks the request's [`Permits`] before
//! it asks the coordinator, and answers a refusal as Kafka's `getErrorResponse` of the request
//! does (GROUP_AUTHORIZATION_FAILED for the group, TOPIC_AUTHORIZATION_FAILED per topic ahead
//! of UNKNOWN_TOPIC_OR_PARTITION, so that nobody learns which topics exist).

mod consumer_group;
mod find_coordinator;
mod group_admin;
mod membership;
mod offsets;
#[cfg(test)]
mod test_support;

use kafka_auth::acl::{AclOperation, ResourceType};
use kafka_protocol::KStr;

use super::authz::Authz;

pub(crate) use consumer_group::{consumer_group_describe, consumer_group_heartbeat};
pub(crate) use find_coordinator::{
    CoordinatorNode, KEY_TYPE_GROUP, KEY_TYPE_TRANSACTION, find_coordinator, find_coordinator_with,
    group_key,
};
pub(crate) use group_admin::{delete_groups, describe_groups, list_groups};
pub(crate) use membership::{heartbeat, join_group, leave_group, sync_group};
pub(crate) use offsets::{offset_commit, offset_delete, offset_fetch, txn_offset_commit};

/// The authorization questions of the group apis: a request's [`Authz`] answers them (and
/// allows everything when authorization is off or the caller is in this process); the unit
/// tests answer them from a list.
pub(crate) trait Permits: Sync {
    /// Whether the request may do `op` on the cluster.
    fn cluster(&self, op: AclOperation) -> bool;
    /// Whether the request may do `op` on `topic`.
    fn topic(&self, op: AclOperation, topic: &str) -> bool;
    /// Whether the request may do `op` on `group`.
    fn group(&self, op: AclOperation, group: &str) -> bool;
    /// Whether the request may do `op` on the transactional id `id`.
    fn transactional_id(&self, op: AclOperation, id: &str) -> bool;
    /// The `authorized_operations` bits of a resource (DescribeGroups v3+).
    fn operations(&self, rt: ResourceType, name: &str) -> i32;
}

impl Permits for Authz<'_> {
    fn cluster(&self, op: AclOperation) -> bool {
        Authz::cluster(self, op)
    }

    fn topic(&self, op: AclOperation, topic: &str) -> bool {
        Authz::topic(self, op, topic)
    }

    fn group(&self, op: AclOperation, group: &str) -> bool {
        Authz::group(self, op, group)
    }

    fn transactional_id(&self, op: AclOperation, id: &str) -> bool {
        Authz::transactional_id(self, op, id)
    }

    fn operations(&self, rt: ResourceType, name: &str) -> i32 {
        Authz::operations(self, rt, name)
    }
}

/// Kafka's message of GROUP_AUTHORIZATION_FAILED.
const GROUP_REFUSED: &str = "Group authorization failed.";
/// Kafka's message of TRANSACTIONAL_ID_AUTHORIZATION_FAILED.
const TRANSACTIONAL_ID_REFUSED: &str = "Transactional Id authorization failed.";

fn s(v: impl Into<String>) -> KStr {
    KStr::from(v.into())
}

fn text(k: &KStr) -> String {
    k.as_str().to_owned()
}
