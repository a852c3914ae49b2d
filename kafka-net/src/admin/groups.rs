//! Consumer groups: list (every broker), describe and delete (each group's coordinator).

use std::collections::BTreeMap;

use bytes::Bytes;
use futures::future::{BoxFuture, join_all};
use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::{
    ApiKey, DeleteGroupsRequest, DescribeGroupsRequest, ListGroupsRequest, RequestBody,
    describe_groups_response,
};

use super::{Admin, Replies, Retry, Routes, check_code, duplicate, duplicates, expect_body};
use crate::cluster::CoordinatorType;
use crate::error::NetError;

/// A group as ListGroups reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupListing {
    pub group_id: String,
    /// `consumer` for consumer groups, empty for groups used only to store offsets.
    pub protocol_type: String,
    /// `Stable`, `Empty`, ... (ListGroups v4+).
    pub state: Option<String>,
    /// The broker that coordinates it (the one that listed it).
    pub coordinator: i32,
}

/// A group as DescribeGroups reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupDescription {
    pub group_id: String,
    /// `Stable`, `PreparingRebalance`, `CompletingRebalance`, `Empty`, `Dead`.
    pub state: String,
    pub protocol_type: String,
    /// The chosen protocol (for consumer groups, the assignor).
    pub protocol: String,
    pub members: Vec<GroupMember>,
    pub coordinator: i32,
}

/// One member of a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupMember {
    pub member_id: String,
    /// Static membership id (DescribeGroups v4+).
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    /// The member's protocol metadata (for consumers, its subscription).
    pub metadata: Bytes,
    /// The member's assignment (for consumers, its partitions).
    pub assignment: Bytes,
}

/// Codes after which the group's cached coordinator is wrong.
fn moved(code: i16) -> bool {
    matches!(
        ErrorCode(code),
        ErrorCode::NOT_COORDINATOR | ErrorCode::COORDINATOR_NOT_AVAILABLE
    )
}

impl Admin {
    /// Lists the groups of every broker, sorted by id. Fails if a broker cannot be asked.
    pub async fn list_groups(&self) -> Result<Vec<GroupListing>, NetError> {
        let meta = self.cluster.fetch_topics(&[]).await?;
        let nodes: Vec<i32> = meta.brokers.keys().copied().collect();
        let replies = join_all(
            nodes
                .iter()
                .map(|node| self.cluster.retry(move || self.list_groups_on(*node))),
        )
        .await;
        let mut out = Vec::new();
        for r in replies {
            out.extend(r?);
        }
        out.sort_by(|a, b| a.group_id.cmp(&b.group_id));
        Ok(out)
    }

    async fn list_groups_on(&self, node: i32) -> Result<Vec<GroupListing>, NetError> {
        let conn = self.cluster.connection(node).await?;
        let version = conn.version_for(ApiKey::ListGroups)?;
        let body = conn
            .request_at(
                RequestBody::ListGroups(ListGroupsRequest::default()),
                version,
            )
            .await?;
        let resp = expect_body!(body, ListGroups);
        check_code(resp.error_code, None, || {
            format!("ListGroups on broker {node}")
        })?;
        Ok(resp
            .groups
            .iter()
            .map(|g| GroupListing {
                group_id: g.group_id.to_string(),
                protocol_type: g.protocol_type.to_string(),
                state: (version >= 4).then(|| g.group_state.to_string()),
                coordinator: node,
            })
            .collect())
    }

    /// Describes groups, each asked of its coordinator. One result per group, in order.
    pub async fn describe_groups(
        &self,
        groups: &[&str],
    ) -> Vec<Result<GroupDescription, NetError>> {
        let dup = &duplicates(groups.iter());
        let send = |node: i32, idx: Vec<usize>| -> BoxFuture<'_, Replies<GroupDescription>> {
            Box::pin(async move {
                let mut out = Vec::new();
                let asked = self.unique(groups, dup, idx, &mut out);
                if asked.is_empty() {
                    return Ok(out);
                }
                let req = DescribeGroupsRequest {
                    groups: asked.keys().map(|g| KStr::from((*g).to_owned())).collect(),
                    ..Default::default()
                };
                let body = self
                    .to_coordinator(node, &asked, RequestBody::DescribeGroups(req))
                    .await?;
                let resp = expect_body!(body, DescribeGroups);
                for g in resp.groups {
                    let Some(i) = asked.get(g.group_id.as_str()) else {
                        continue;
                    };
                    if moved(g.error_code) {
                        self.cluster
                            .invalidate_coordinator(CoordinatorType::Group, &g.group_id);
                    }
                    out.push((*i, described(g, node)));
                }
                Ok(out)
            })
        };
        self.fan_out(
            "DescribeGroups",
            Retry::Retriable,
            groups.len(),
            self.coordinator_route(groups),
            send,
        )
        .await
    }

    /// Deletes groups (they must be empty), each on its coordinator. One `(group, result)`
    /// per group, in order.
    pub async fn delete_groups(&self, groups: &[&str]) -> Vec<(String, Result<(), NetError>)> {
        let dup = &duplicates(groups.iter());
        let send = |node: i32, idx: Vec<usize>| -> BoxFuture<'_, Replies<()>> {
            Box::pin(async move {
                let mut out = Vec::new();
                let asked = self.unique(groups, dup, idx, &mut out);
                if asked.is_empty() {
                    return Ok(out);
                }
                let req = DeleteGroupsRequest {
                    groups_names: asked.keys().map(|g| KStr::from((*g).to_owned())).collect(),
                    ..Default::default()
                };
                let body = self
                    .to_coordinator(node, &asked, RequestBody::DeleteGroups(req))
                    .await?;
                let resp = expect_body!(body, DeleteGroups);
                for r in resp.results {
                    let Some(i) = asked.get(r.group_id.as_str()) else {
                        continue;
                    };
                    if moved(r.error_code) {
                        self.cluster
                            .invalidate_coordinator(CoordinatorType::Group, &r.group_id);
                    }
                    let res = check_code(r.error_code, None, || {
                        format!("DeleteGroups {}", r.group_id)
                    });
                    out.push((*i, res));
                }
                Ok(out)
            })
        };
        let results = self
            .fan_out(
                "DeleteGroups",
                Retry::Retriable,
                groups.len(),
                self.coordinator_route(groups),
                send,
            )
            .await;
        groups
            .iter()
            .map(|g| (*g).to_owned())
            .zip(results)
            .collect()
    }

    /// Routes each group to its coordinator (FindCoordinator, cached by the cluster client).
    fn coordinator_route<'a>(
        &'a self,
        groups: &'a [&'a str],
    ) -> impl Fn(u32, Vec<usize>) -> BoxFuture<'a, Routes> {
        move |_round, pending| {
            Box::pin(async move {
                join_all(pending.into_iter().map(|i| async move {
                    let group = groups.get(i).copied().unwrap_or_default();
                    (
                        i,
                        self.cluster
                            .coordinator(CoordinatorType::Group, group)
                            .await,
                    )
                }))
                .await
            })
        }
    }

    /// The groups of `idx` by name, failing repeated names into `out`.
    fn unique<'g, T>(
        &self,
        groups: &[&'g str],
        dup: &[bool],
        idx: Vec<usize>,
        out: &mut Vec<(usize, Result<T, NetError>)>,
    ) -> BTreeMap<&'g str, usize> {
        let mut asked = BTreeMap::new();
        for i in idx {
            if dup[i] {
                out.push((i, Err(duplicate("group", groups[i]))));
            } else {
                asked.insert(groups[i], i);
            }
        }
        asked
    }

    /// Sends a group request to the coordinator `node`; a lost connection forgets the cached
    /// coordinator of every group in it.
    async fn to_coordinator(
        &self,
        node: i32,
        groups: &BTreeMap<&str, usize>,
        body: RequestBody,
    ) -> Result<kafka_protocol::messages::ResponseBody, NetError> {
        let forget = |_: &NetError| {
            for g in groups.keys() {
                self.cluster
                    .invalidate_coordinator(CoordinatorType::Group, g);
            }
        };
        let conn = self.cluster.connection(node).await.inspect_err(forget)?;
        conn.request(body).await.inspect_err(forget)
    }
}

fn described(
    g: describe_groups_response::DescribedGroup,
    node: i32,
) -> Result<GroupDescription, NetError> {
    check_code(g.error_code, None, || {
        format!("DescribeGroups {}", g.group_id)
    })?;
    Ok(GroupDescription {
        group_id: g.group_id.to_string(),
        state: g.group_state.to_string(),
        protocol_type: g.protocol_type.to_string(),
        protocol: g.protocol_data.to_string(),
        members: g
            .members
            .into_iter()
            .map(|m| GroupMember {
                member_id: m.member_id.to_string(),
                group_instance_id: m.group_instance_id.map(|s| s.to_string()),
                client_id: m.client_id.to_string(),
                client_host: m.client_host.to_string(),
                metadata: m.member_metadata,
                assignment: m.member_assignment,
            })
            .collect(),
        coordinator: node,
    })
}
