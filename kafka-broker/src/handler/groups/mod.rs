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
//!
//! They import the group coordinator, the request context, and (TxnOffsetCommit) the
//! transaction errors by version; never the broker, except FindCoordinator's address of this
//! node. On a single node this broker is the coordinator of every group.

mod find_coordinator;
mod group_admin;
mod membership;
mod offsets;
#[cfg(test)]
mod test_support;

use kafka_protocol::KStr;

pub(crate) use find_coordinator::{
    CoordinatorNode, KEY_TYPE_GROUP, KEY_TYPE_TRANSACTION, find_coordinator, find_coordinator_with,
    group_key,
};
pub(crate) use group_admin::{delete_groups, describe_groups, list_groups};
pub(crate) use membership::{heartbeat, join_group, leave_group, sync_group};
pub(crate) use offsets::{offset_commit, offset_delete, offset_fetch, txn_offset_commit};

fn s(v: impl Into<String>) -> KStr {
    KStr::from(v.into())
}

fn text(k: &KStr) -> String {
    k.as_str().to_owned()
}
