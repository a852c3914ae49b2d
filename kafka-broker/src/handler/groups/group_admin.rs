//! DescribeGroups, ListGroups, DeleteGroups: what an admin client sees of and does to groups.
//!
//! Authorization as Kafka's `KafkaApis`: DescribeGroups needs DESCRIBE on each group (the
//! refused ones answered GROUP_AUTHORIZATION_FAILED, ahead of the others as Kafka lists them)
//! and reports the group's authorized operations from the ACLs when asked; ListGroups lists
//! every group to a request that may DESCRIBE the cluster, else only the groups it may
//! DESCRIBE; DeleteGroups needs DELETE on each group (the refused ones answered
//! GROUP_AUTHORIZATION_FAILED after the others).

use kafka_auth::acl::{AclOperation, ResourceType};
use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
use kafka_protocol::messages::describe_groups_response::{DescribedGroup, DescribedGroupMember};
use kafka_protocol::messages::list_groups_response::ListedGroup;
use kafka_protocol::messages::{
    DeleteGroupsRequest, DeleteGroupsResponse, DescribeGroupsRequest, DescribeGroupsResponse,
    ListGroupsRequest, ListGroupsResponse, ResponseBody,
};

use super::super::authorized::NOT_ASKED;
use super::{Permits, s, text};
use crate::group::GroupCoordinator;
use crate::group::consumer::TopicsImage;

pub(crate) fn describe_groups(
    coordinator: &GroupCoordinator,
    image: &dyn TopicsImage,
    authz: &dyn Permits,
    req: DescribeGroupsRequest,
    version: i16,
) -> ResponseBody {
    let (allowed, refused): (Vec<&KStr>, Vec<&KStr>) = req
        .groups
        .iter()
        .partition(|id| authz.group(AclOperation::Describe, id));
    let failed = |id: &KStr, e: ErrorCode| DescribedGroup {
        error_code: e.0,
        group_id: id.clone(),
        group_state: KStr::default(),
        protocol_type: KStr::default(),
        protocol_data: KStr::default(),
        authorized_operations: NOT_ASKED,
        ..Default::default()
    };
    let refused = refused
        .into_iter()
        .map(|id| failed(id, ErrorCode::GROUP_AUTHORIZATION_FAILED));
    let described = allowed.into_iter().map(|id| {
        if let Err(e) = coordinator.check_group(id.as_str()) {
            // Not coordinated here (or loading): the client asks the coordinator again.
            return failed(id, e);
        }
        let d = coordinator.describe_group(id.as_str(), image);
        DescribedGroup {
            error_code: ErrorCode::NONE.0,
            group_id: id.clone(),
            group_state: match d.state_name {
                Some(name) => s(name),
                None => KStr::from_static(d.state.as_str()),
            },
            protocol_type: s(d.protocol_type),
            protocol_data: s(d.protocol_data),
            members: d
                .members
                .into_iter()
                .map(|m| DescribedGroupMember {
                    member_id: s(m.member_id),
                    group_instance_id: if version >= 4 {
                        m.group_instance_id.map(s)
                    } else {
                        None
                    },
                    client_id: s(m.client_id),
                    client_host: s(m.client_host),
                    member_metadata: m.metadata,
                    member_assignment: m.assignment,
                    ..Default::default()
                })
                .collect(),
            authorized_operations: if version >= 3 && req.include_authorized_operations {
                authz.operations(ResourceType::Group, id)
            } else {
                NOT_ASKED
            },
            ..Default::default()
        }
    });
    let groups = refused.chain(described).collect();
    ResponseBody::DescribeGroups(DescribeGroupsResponse {
        groups,
        ..Default::default()
    })
}

pub(crate) fn list_groups(
    coordinator: &GroupCoordinator,
    authz: &dyn Permits,
    req: ListGroupsRequest,
    version: i16,
) -> ResponseBody {
    let every_group = authz.cluster(AclOperation::Describe);
    let states: Vec<&str> = if version >= 4 {
        req.states_filter.iter().map(|s| s.as_str()).collect()
    } else {
        Vec::new()
    };
    let types: Vec<&str> = if version >= 5 {
        req.types_filter.iter().map(|s| s.as_str()).collect()
    } else {
        Vec::new()
    };
    let groups = coordinator
        .list_groups(&states, &types)
        .into_iter()
        .filter(|g| every_group || authz.group(AclOperation::Describe, &g.group_id))
        .map(|g| ListedGroup {
            group_id: s(g.group_id),
            protocol_type: s(g.protocol_type),
            group_state: if version >= 4 {
                s(g.state)
            } else {
                KStr::default()
            },
            group_type: if version >= 5 {
                KStr::from_static(g.group_type)
            } else {
                KStr::default()
            },
            ..Default::default()
        })
        .collect();
    ResponseBody::ListGroups(ListGroupsResponse {
        groups,
        ..Default::default()
    })
}

pub(crate) fn delete_groups(
    coordinator: &GroupCoordinator,
    authz: &dyn Permits,
    req: DeleteGroupsRequest,
    _version: i16,
) -> ResponseBody {
    let (allowed, refused): (Vec<KStr>, Vec<KStr>) = req
        .groups_names
        .into_iter()
        .partition(|id| authz.group(AclOperation::Delete, id));
    let ids: Vec<String> = allowed.iter().map(text).collect();
    let errors = coordinator.delete_groups(&ids);
    let refused = refused
        .into_iter()
        .map(|group_id| (group_id, ErrorCode::GROUP_AUTHORIZATION_FAILED));
    let results = allowed
        .into_iter()
        .zip(errors)
        .chain(refused)
        .map(|(group_id, e)| DeletableGroupResult {
            group_id,
            error_code: e.0,
            ..Default::default()
        })
        .collect();
    ResponseBody::DeleteGroups(DeleteGroupsResponse {
        results,
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
    use kafka_protocol::messages::offset_delete_request::{
        OffsetDeleteRequestPartition, OffsetDeleteRequestTopic,
    };
    use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;
    use kafka_protocol::messages::{JoinGroupRequest, OffsetDeleteRequest, SyncGroupRequest};

    use super::super::test_support::{
        AllowAll, Granted, assignment, client, commit_request, coordinator, drive, roundtrip,
        subscription, topics,
    };
    use super::super::{join_group, offset_commit, offset_delete, sync_group};
    use super::*;

    #[tokio::test]
    async fn group_admin_every_version() {
        let c = coordinator();
        // One group with a member, one with offsets only.
        let join = JoinGroupRequest {
            group_id: KStr::from("busy"),
            session_timeout_ms: 10_000,
            rebalance_timeout_ms: 10_000,
            protocol_type: KStr::from("consumer"),
            protocols: vec![JoinGroupRequestProtocol {
                name: KStr::from("range"),
                metadata: subscription(&["orders"]),
                ..Default::default()
            }],
            ..Default::default()
        };
        let ResponseBody::JoinGroup(j) =
            drive(&c, join_group(&c, &AllowAll, &client(), join, 3)).await
        else {
            panic!()
        };
        let sync = SyncGroupRequest {
            group_id: KStr::from("busy"),
            generation_id: j.generation_id,
            member_id: j.member_id.clone(),
            assignments: vec![SyncGroupRequestAssignment {
                member_id: j.member_id.clone(),
                assignment: assignment("orders", vec![0, 1, 2]),
                ..Default::default()
            }],
            ..Default::default()
        };
        drive(&c, sync_group(&c, &AllowAll, sync, 3)).await;
        futures::executor::block_on(offset_commit(
            &c,
            &AllowAll,
            &topics,
            commit_request(2, "idle", 5),
            2,
        ));

        for v in 0..=5i16 {
            let req = DescribeGroupsRequest {
                groups: vec![KStr::from("busy"), KStr::from("idle"), KStr::from("ghost")],
                include_authorized_operations: v >= 3,
                ..Default::default()
            };
            let ResponseBody::DescribeGroups(r) = roundtrip(
                &describe_groups(
                    &c,
                    &crate::group::consumer::TopicsSnapshot::default(),
                    &AllowAll,
                    req,
                    v,
                ),
                v,
            ) else {
                panic!()
            };
            let states: Vec<&str> = r.groups.iter().map(|g| g.group_state.as_str()).collect();
            assert_eq!(states, ["Stable", "Empty", "Dead"]);
            let busy = &r.groups[0];
            assert_eq!(
                (busy.protocol_type.as_str(), busy.protocol_data.as_str()),
                ("consumer", "range")
            );
            assert_eq!(busy.members.len(), 1);
            assert_eq!(busy.members[0].client_id, "rdkafka");
            assert_eq!(busy.members[0].client_host, "/127.0.0.1");
            assert_eq!(
                busy.members[0].member_assignment,
                assignment("orders", vec![0, 1, 2])
            );
            // Without an authorizer, every operation of a group (Kafka 3.8+: READ, DELETE,
            // DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS).
            let ops = if v >= 3 { 3400 } else { i32::MIN };
            assert_eq!(busy.authorized_operations, ops);
        }

        for v in 0..=5i16 {
            let req = ListGroupsRequest {
                states_filter: if v >= 4 {
                    vec![KStr::from("stable")]
                } else {
                    vec![]
                },
                types_filter: if v >= 5 {
                    vec![KStr::from("Classic")]
                } else {
                    vec![]
                },
                ..Default::default()
            };
            let ResponseBody::ListGroups(r) = roundtrip(&list_groups(&c, &AllowAll, req, v), v)
            else {
                panic!()
            };
            let ids: Vec<&str> = r.groups.iter().map(|g| g.group_id.as_str()).collect();
            if v >= 4 {
                assert_eq!(ids, ["busy"]);
                assert_eq!(r.groups[0].group_state, "Stable");
            } else {
                assert_eq!(ids, ["busy", "idle"]);
            }
            if v >= 5 {
                assert_eq!(r.groups[0].group_type, "classic");
                let req = ListGroupsRequest {
                    types_filter: vec![KStr::from("consumer")],
                    ..Default::default()
                };
                let ResponseBody::ListGroups(r) = roundtrip(&list_groups(&c, &AllowAll, req, v), v)
                else {
                    panic!()
                };
                assert!(r.groups.is_empty());
            }
        }

        let topic = |name: &'static str| OffsetDeleteRequestTopic {
            name: KStr::from(name),
            partitions: vec![OffsetDeleteRequestPartition { partition_index: 0 }],
        };
        let req = OffsetDeleteRequest {
            group_id: KStr::from("busy"),
            topics: vec![topic("orders"), topic("payments"), topic("missing")],
        };
        let ResponseBody::OffsetDelete(r) =
            roundtrip(&offset_delete(&c, &AllowAll, &topics, req.clone(), 0), 0)
        else {
            panic!()
        };
        let codes: Vec<i16> = r
            .topics
            .iter()
            .map(|t| t.partitions[0].error_code)
            .collect();
        assert_eq!(
            codes,
            [
                ErrorCode::GROUP_SUBSCRIBED_TO_TOPIC.0,
                0,
                ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.0
            ]
        );
        let ghost = OffsetDeleteRequest {
            group_id: KStr::from("ghost"),
            ..req
        };
        let ResponseBody::OffsetDelete(r) =
            roundtrip(&offset_delete(&c, &AllowAll, &topics, ghost, 0), 0)
        else {
            panic!()
        };
        assert_eq!(r.error_code, ErrorCode::GROUP_ID_NOT_FOUND.0);
        assert!(r.topics.is_empty());

        for v in 0..=2i16 {
            let req = DeleteGroupsRequest {
                groups_names: vec![KStr::from("busy"), KStr::from("ghost")],
                ..Default::default()
            };
            let ResponseBody::DeleteGroups(r) = roundtrip(&delete_groups(&c, &AllowAll, req, v), v)
            else {
                panic!()
            };
            let codes: Vec<i16> = r.results.iter().map(|g| g.error_code).collect();
            assert_eq!(
                codes,
                [
                    ErrorCode::NON_EMPTY_GROUP.0,
                    ErrorCode::GROUP_ID_NOT_FOUND.0
                ]
            );
        }
        let req = DeleteGroupsRequest {
            groups_names: vec![KStr::from("idle")],
            ..Default::default()
        };
        let ResponseBody::DeleteGroups(r) = roundtrip(&delete_groups(&c, &AllowAll, req, 2), 2)
        else {
            panic!()
        };
        assert_eq!(r.results[0].error_code, 0);
        assert!(c.fetch_offsets("idle", None, false).is_empty());
    }

    /// DescribeGroups refuses per group (refused ones first, as Kafka lists them) and reports
    /// the operations granted; ListGroups shows every group with DESCRIBE on the cluster,
    /// else the groups it may describe; DeleteGroups and OffsetDelete need DELETE.
    #[tokio::test]
    async fn group_admin_refusals() {
        use kafka_auth::acl::{AclOperation as Op, ResourceType as Rt};
        let c = coordinator();
        for g in ["a", "b", "c"] {
            futures::executor::block_on(offset_commit(
                &c,
                &AllowAll,
                &topics,
                commit_request(2, g, 5),
                2,
            ));
        }
        let authz = Granted(vec![
            (Rt::Group, "a", Op::Describe),
            (Rt::Group, "a", Op::Read),
            (Rt::Group, "b", Op::Delete),
            (Rt::Topic, "orders", Op::Read),
        ]);
        let req = DescribeGroupsRequest {
            groups: vec![KStr::from("a"), KStr::from("b")],
            include_authorized_operations: true,
            ..Default::default()
        };
        let ResponseBody::DescribeGroups(r) = roundtrip(
            &describe_groups(
                &c,
                &crate::group::consumer::TopicsSnapshot::default(),
                &authz,
                req,
                5,
            ),
            5,
        ) else {
            panic!()
        };
        let got: Vec<(&str, i16, &str, i32)> = r
            .groups
            .iter()
            .map(|g| {
                (
                    g.group_id.as_str(),
                    g.error_code,
                    g.group_state.as_str(),
                    g.authorized_operations,
                )
            })
            .collect();
        let read_describe = (1 << Op::Read.code()) | (1 << Op::Describe.code());
        assert_eq!(
            got,
            [
                ("b", ErrorCode::GROUP_AUTHORIZATION_FAILED.0, "", i32::MIN),
                ("a", 0, "Empty", read_describe),
            ]
        );

        let listed = |authz: &Granted| {
            let ResponseBody::ListGroups(r) =
                list_groups(&c, authz, ListGroupsRequest::default(), 5)
            else {
                panic!()
            };
            let mut ids: Vec<String> = r.groups.iter().map(|g| g.group_id.to_string()).collect();
            ids.sort();
            ids
        };
        assert_eq!(listed(&authz), ["a"]);
        let admin = Granted(vec![(Rt::Cluster, "kafka-cluster", Op::Describe)]);
        assert_eq!(listed(&admin), ["a", "b", "c"]);

        // OffsetDelete: DELETE on the group first, then READ per topic ahead of existence.
        let topic = |name: &'static str| OffsetDeleteRequestTopic {
            name: KStr::from(name),
            partitions: vec![OffsetDeleteRequestPartition { partition_index: 0 }],
        };
        for (group, want) in [
            ("a", ErrorCode::GROUP_AUTHORIZATION_FAILED),
            ("b", ErrorCode::NONE),
        ] {
            let req = OffsetDeleteRequest {
                group_id: KStr::from(group),
                topics: vec![topic("orders"), topic("payments"), topic("missing")],
            };
            let ResponseBody::OffsetDelete(r) =
                roundtrip(&offset_delete(&c, &authz, &topics, req, 0), 0)
            else {
                panic!()
            };
            assert_eq!(r.error_code, want.0, "{group}");
            if want == ErrorCode::NONE {
                let codes: Vec<i16> = r
                    .topics
                    .iter()
                    .map(|t| t.partitions[0].error_code)
                    .collect();
                let refused = ErrorCode::TOPIC_AUTHORIZATION_FAILED.0;
                assert_eq!(codes, [0, refused, refused]);
            }
        }

        let req = DeleteGroupsRequest {
            groups_names: vec![KStr::from("a"), KStr::from("b")],
            ..Default::default()
        };
        let ResponseBody::DeleteGroups(r) = roundtrip(&delete_groups(&c, &authz, req, 2), 2) else {
            panic!()
        };
        let got: Vec<(&str, i16)> = r
            .results
            .iter()
            .map(|g| (g.group_id.as_str(), g.error_code))
            .collect();
        assert_eq!(
            got,
            [("b", 0), ("a", ErrorCode::GROUP_AUTHORIZATION_FAILED.0)]
        );
        assert!(c.fetch_offsets("b", None, false).is_empty());
        assert!(!c.fetch_offsets("a", None, false).is_empty());
    }
}
