//! JoinGroup, SyncGroup, Heartbeat, LeaveGroup: a member's life in a classic group. Each needs
//! READ on the group, else the whole request is answered GROUP_AUTHORIZATION_FAILED (Kafka's
//! `handleJoinGroupRequest` ... `handleLeaveGroupRequest`).

use kafka_auth::acl::AclOperation;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::join_group_response::JoinGroupResponseMember;
use kafka_protocol::messages::leave_group_response::MemberResponse;
use kafka_protocol::messages::{
    HeartbeatRequest, HeartbeatResponse, JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest,
    LeaveGroupResponse, ResponseBody, SyncGroupRequest, SyncGroupResponse,
};

use super::super::context::RequestContext;
use super::{Permits, s, text};
use crate::group::{self, GroupCoordinator};

/// JoinGroup; the member's client id and host are those of `ctx`.
pub(crate) async fn join_group(
    coordinator: &GroupCoordinator,
    authz: &dyn Permits,
    ctx: &RequestContext<'_>,
    req: JoinGroupRequest,
    version: i16,
) -> ResponseBody {
    if !authz.group(AclOperation::Read, &req.group_id) {
        // Kafka's error answer: no member id, generation -1.
        let refused = group::JoinResponse::error("", ErrorCode::GROUP_AUTHORIZATION_FAILED);
        return ResponseBody::JoinGroup(Box::new(join_response(refused, version)));
    }
    let request = group::JoinRequest {
        group_id: text(&req.group_id),
        member_id: text(&req.member_id),
        group_instance_id: req.group_instance_id.as_ref().map(text),
        client_id: ctx.client_id().unwrap_or("").to_owned(),
        client_host: ctx.client_host(),
        session_timeout_ms: req.session_timeout_ms,
        // v0 has no rebalance timeout: Kafka uses the session timeout.
        rebalance_timeout_ms: if version >= 1 {
            req.rebalance_timeout_ms
        } else {
            req.session_timeout_ms
        },
        protocol_type: text(&req.protocol_type),
        protocols: req
            .protocols
            .iter()
            .map(|p| group::Protocol {
                name: text(&p.name),
                metadata: p.metadata.clone(),
            })
            .collect(),
        require_known_member_id: version >= 4,
        supports_skip_assignment: version >= 9,
        reason: req.reason.as_ref().map(text),
    };
    let answer = coordinator.join(request).await;
    ResponseBody::JoinGroup(Box::new(join_response(answer, version)))
}

pub(crate) fn join_response(a: group::JoinResponse, version: i16) -> JoinGroupResponse {
    JoinGroupResponse {
        error_code: a.error.0,
        generation_id: a.generation_id,
        protocol_type: if version >= 7 {
            a.protocol_type.map(s)
        } else {
            None
        },
        // Not nullable before v7.
        protocol_name: if version >= 7 {
            a.protocol_name.map(s)
        } else {
            Some(s(a.protocol_name.unwrap_or_default()))
        },
        leader: s(a.leader),
        skip_assignment: version >= 9 && a.skip_assignment,
        member_id: s(a.member_id),
        members: a
            .members
            .into_iter()
            .map(|m| JoinGroupResponseMember {
                member_id: s(m.member_id),
                group_instance_id: if version >= 5 {
                    m.group_instance_id.map(s)
                } else {
                    None
                },
                metadata: m.metadata,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

pub(crate) async fn sync_group(
    coordinator: &GroupCoordinator,
    authz: &dyn Permits,
    req: SyncGroupRequest,
    version: i16,
) -> ResponseBody {
    if !authz.group(AclOperation::Read, &req.group_id) {
        return ResponseBody::SyncGroup(SyncGroupResponse {
            error_code: ErrorCode::GROUP_AUTHORIZATION_FAILED.0,
            ..Default::default()
        });
    }
    let request = group::SyncRequest {
        group_id: text(&req.group_id),
        generation_id: req.generation_id,
        member_id: text(&req.member_id),
        group_instance_id: req.group_instance_id.as_ref().map(text),
        protocol_type: req.protocol_type.as_ref().map(text),
        protocol_name: req.protocol_name.as_ref().map(text),
        assignments: req
            .assignments
            .iter()
            .map(|a| (text(&a.member_id), a.assignment.clone()))
            .collect(),
    };
    let a = coordinator.sync(request).await;
    let v5 = version >= 5;
    ResponseBody::SyncGroup(SyncGroupResponse {
        error_code: a.error.0,
        protocol_type: if v5 { a.protocol_type.map(s) } else { None },
        protocol_name: if v5 { a.protocol_name.map(s) } else { None },
        assignment: a.assignment,
        ..Default::default()
    })
}

pub(crate) fn heartbeat(
    coordinator: &GroupCoordinator,
    authz: &dyn Permits,
    req: HeartbeatRequest,
    _version: i16,
) -> ResponseBody {
    if !authz.group(AclOperation::Read, &req.group_id) {
        return ResponseBody::Heartbeat(HeartbeatResponse {
            error_code: ErrorCode::GROUP_AUTHORIZATION_FAILED.0,
            ..Default::default()
        });
    }
    let error = coordinator.heartbeat(&group::HeartbeatRequest {
        group_id: text(&req.group_id),
        generation_id: req.generation_id,
        member_id: text(&req.member_id),
        group_instance_id: req.group_instance_id.as_ref().map(text),
    });
    ResponseBody::Heartbeat(HeartbeatResponse {
        error_code: error.0,
        ..Default::default()
    })
}

pub(crate) fn leave_group(
    coordinator: &GroupCoordinator,
    authz: &dyn Permits,
    req: LeaveGroupRequest,
    version: i16,
) -> ResponseBody {
    if !authz.group(AclOperation::Read, &req.group_id) {
        // The group's error, no member answers (v3+).
        return ResponseBody::LeaveGroup(LeaveGroupResponse {
            error_code: ErrorCode::GROUP_AUTHORIZATION_FAILED.0,
            ..Default::default()
        });
    }
    let members: Vec<group::LeavingMember> = if version >= 3 {
        req.members
            .iter()
            .map(|m| group::LeavingMember {
                member_id: text(&m.member_id),
                group_instance_id: m.group_instance_id.as_ref().map(text),
            })
            .collect()
    } else {
        vec![group::LeavingMember {
            member_id: text(&req.member_id),
            group_instance_id: None,
        }]
    };
    let a = coordinator.leave(req.group_id.as_str(), &members);
    let response = if version >= 3 {
        LeaveGroupResponse {
            error_code: a.error.0,
            members: a
                .members
                .into_iter()
                .map(|(m, e)| MemberResponse {
                    member_id: s(m.member_id),
                    group_instance_id: m.group_instance_id.map(s),
                    error_code: e.0,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    } else {
        // One member: its error is the answer's.
        let member_error = a
            .members
            .iter()
            .map(|(_, e)| *e)
            .find(|e| *e != ErrorCode::NONE)
            .unwrap_or(ErrorCode::NONE);
        let error = if a.error != ErrorCode::NONE {
            a.error
        } else {
            member_error
        };
        LeaveGroupResponse {
            error_code: error.0,
            ..Default::default()
        }
    };
    ResponseBody::LeaveGroup(response)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use kafka_protocol::KStr;
    use kafka_protocol::messages::join_group_request::JoinGroupRequestProtocol;
    use kafka_protocol::messages::leave_group_request::MemberIdentity;
    use kafka_protocol::messages::sync_group_request::SyncGroupRequestAssignment;

    use super::super::test_support::{
        AllowAll, Granted, assignment, client, coordinator, drive, roundtrip, subscription,
    };
    use super::*;

    /// Join, sync, heartbeat, describe and leave with the versions a client of JoinGroup `v`
    /// would use.
    #[tokio::test]
    async fn membership_every_version() {
        for v in 0..=9i16 {
            let (sync_v, hb_v, leave_v) = (v.min(5), v.min(4), v.min(5));
            let c = coordinator();
            let group = format!("group-v{v}");
            let instance = (v >= 5).then(|| KStr::from(format!("instance-{v}")));
            let mut req = JoinGroupRequest {
                group_id: KStr::from(group.clone()),
                session_timeout_ms: 10_000,
                rebalance_timeout_ms: if v >= 1 { 20_000 } else { -1 },
                member_id: KStr::default(),
                group_instance_id: instance.clone(),
                protocol_type: KStr::from("consumer"),
                protocols: vec![JoinGroupRequestProtocol {
                    name: KStr::from("range"),
                    metadata: subscription(&["orders"]),
                    ..Default::default()
                }],
                reason: (v >= 8).then(|| KStr::from("joining")),
                ..Default::default()
            };
            let mut answer = drive(&c, join_group(&c, &AllowAll, &client(), req.clone(), v)).await;
            let ResponseBody::JoinGroup(mut r) = roundtrip(&answer, v) else {
                panic!()
            };
            if v >= 4 && instance.is_none() {
                assert_eq!(r.error_code, ErrorCode::MEMBER_ID_REQUIRED.0, "v{v}");
                assert!(r.member_id.starts_with("rdkafka-"));
                req.member_id = r.member_id.clone();
                answer = drive(&c, join_group(&c, &AllowAll, &client(), req.clone(), v)).await;
                let ResponseBody::JoinGroup(again) = roundtrip(&answer, v) else {
                    panic!()
                };
                r = again;
            }
            assert_eq!(r.error_code, 0, "v{v}");
            assert_eq!(r.generation_id, 1);
            assert_eq!(r.leader, r.member_id);
            assert_eq!(r.protocol_name.as_deref(), Some("range"));
            assert_eq!(r.members.len(), 1);
            if v >= 5 {
                assert_eq!(r.members[0].group_instance_id, instance);
            }
            if v >= 7 {
                assert_eq!(r.protocol_type.as_deref(), Some("consumer"));
            }
            let member = r.member_id.clone();

            let mine = assignment("orders", vec![0, 1, 2]);
            let sync = SyncGroupRequest {
                group_id: KStr::from(group.clone()),
                generation_id: 1,
                member_id: member.clone(),
                group_instance_id: if sync_v >= 3 { instance.clone() } else { None },
                protocol_type: (sync_v >= 5).then(|| KStr::from("consumer")),
                protocol_name: (sync_v >= 5).then(|| KStr::from("range")),
                assignments: vec![SyncGroupRequestAssignment {
                    member_id: member.clone(),
                    assignment: mine.clone(),
                    ..Default::default()
                }],
                ..Default::default()
            };
            let answer = drive(&c, sync_group(&c, &AllowAll, sync, sync_v)).await;
            let ResponseBody::SyncGroup(s) = roundtrip(&answer, sync_v) else {
                panic!()
            };
            assert_eq!(s.error_code, 0);
            assert_eq!(s.assignment, mine);
            if sync_v >= 5 {
                assert_eq!(s.protocol_name.as_deref(), Some("range"));
            }

            let hb = HeartbeatRequest {
                group_id: KStr::from(group.clone()),
                generation_id: 1,
                member_id: member.clone(),
                group_instance_id: if hb_v >= 3 { instance.clone() } else { None },
                ..Default::default()
            };
            let ResponseBody::Heartbeat(h) =
                roundtrip(&heartbeat(&c, &AllowAll, hb.clone(), hb_v), hb_v)
            else {
                panic!()
            };
            assert_eq!(h.error_code, 0);
            let stale = HeartbeatRequest {
                generation_id: 0,
                ..hb
            };
            let ResponseBody::Heartbeat(h) =
                roundtrip(&heartbeat(&c, &AllowAll, stale, hb_v), hb_v)
            else {
                panic!()
            };
            assert_eq!(h.error_code, ErrorCode::ILLEGAL_GENERATION.0);

            let leave = if leave_v >= 3 {
                LeaveGroupRequest {
                    group_id: KStr::from(group.clone()),
                    members: vec![
                        MemberIdentity {
                            member_id: member.clone(),
                            group_instance_id: instance.clone(),
                            reason: (leave_v >= 5).then(|| KStr::from("closing")),
                            ..Default::default()
                        },
                        MemberIdentity {
                            member_id: KStr::from("nobody"),
                            ..Default::default()
                        },
                    ],
                    ..Default::default()
                }
            } else {
                LeaveGroupRequest {
                    group_id: KStr::from(group.clone()),
                    member_id: member.clone(),
                    ..Default::default()
                }
            };
            let ResponseBody::LeaveGroup(l) =
                roundtrip(&leave_group(&c, &AllowAll, leave, leave_v), leave_v)
            else {
                panic!()
            };
            assert_eq!(l.error_code, 0);
            if leave_v >= 3 {
                let codes: Vec<i16> = l.members.iter().map(|m| m.error_code).collect();
                assert_eq!(codes, [0, ErrorCode::UNKNOWN_MEMBER_ID.0]);
            }
            c.advance(10);
            assert_eq!(c.describe(&group).state, crate::group::GroupState::Empty);
        }
    }

    #[tokio::test]
    async fn static_leader_restart_at_v9_skips_assignment() {
        let c = coordinator();
        let join = |member: &str| JoinGroupRequest {
            group_id: KStr::from("static"),
            session_timeout_ms: 10_000,
            rebalance_timeout_ms: 10_000,
            member_id: KStr::from(member.to_owned()),
            group_instance_id: Some(KStr::from("pod-0")),
            protocol_type: KStr::from("consumer"),
            protocols: vec![JoinGroupRequestProtocol {
                name: KStr::from("range"),
                metadata: subscription(&["orders"]),
                ..Default::default()
            }],
            ..Default::default()
        };
        let ResponseBody::JoinGroup(first) =
            drive(&c, join_group(&c, &AllowAll, &client(), join(""), 9)).await
        else {
            panic!()
        };
        let sync = SyncGroupRequest {
            group_id: KStr::from("static"),
            generation_id: first.generation_id,
            member_id: first.member_id.clone(),
            group_instance_id: Some(KStr::from("pod-0")),
            assignments: vec![SyncGroupRequestAssignment {
                member_id: first.member_id.clone(),
                assignment: assignment("orders", vec![0, 1, 2]),
                ..Default::default()
            }],
            ..Default::default()
        };
        drive(&c, sync_group(&c, &AllowAll, sync, 5)).await;
        for v in [5i16, 9] {
            let answer = drive(&c, join_group(&c, &AllowAll, &client(), join(""), v)).await;
            let ResponseBody::JoinGroup(r) = roundtrip(&answer, v) else {
                panic!()
            };
            assert_eq!(r.error_code, 0);
            assert_eq!(r.generation_id, first.generation_id, "no rebalance");
            assert_ne!(r.member_id, first.member_id);
            if v == 9 {
                assert!(r.skip_assignment);
                assert_eq!(r.leader, r.member_id);
                assert_eq!(r.members.len(), 1);
            } else {
                assert!(!r.skip_assignment);
                assert_ne!(r.leader, r.member_id);
                assert!(r.members.is_empty());
            }
        }
    }

    #[tokio::test]
    async fn join_errors_encode_at_every_version() {
        let c = coordinator();
        for v in 0..=9i16 {
            let bad_timeout = JoinGroupRequest {
                group_id: KStr::from("g"),
                session_timeout_ms: 10,
                protocol_type: KStr::from("consumer"),
                ..Default::default()
            };
            let answer = drive(&c, join_group(&c, &AllowAll, &client(), bad_timeout, v)).await;
            let ResponseBody::JoinGroup(r) = roundtrip(&answer, v) else {
                panic!()
            };
            assert_eq!(r.error_code, ErrorCode::INVALID_SESSION_TIMEOUT.0);
            assert_eq!(r.generation_id, -1);
            let unknown = JoinGroupRequest {
                group_id: KStr::from("nowhere"),
                member_id: KStr::from("m-1"),
                session_timeout_ms: 10_000,
                protocol_type: KStr::from("consumer"),
                ..Default::default()
            };
            let answer = drive(&c, join_group(&c, &AllowAll, &client(), unknown, v)).await;
            let ResponseBody::JoinGroup(r) = roundtrip(&answer, v) else {
                panic!()
            };
            assert_eq!(r.error_code, ErrorCode::UNKNOWN_MEMBER_ID.0);
            let sync = SyncGroupRequest {
                group_id: KStr::from("nowhere"),
                member_id: KStr::from("m-1"),
                ..Default::default()
            };
            let sv = v.min(5);
            let answer = drive(&c, sync_group(&c, &AllowAll, sync, sv)).await;
            let ResponseBody::SyncGroup(r) = roundtrip(&answer, sv) else {
                panic!()
            };
            assert_eq!(r.error_code, ErrorCode::UNKNOWN_MEMBER_ID.0);
        }
        // A closed coordinator sends clients looking for another one.
        c.close();
        let join = JoinGroupRequest {
            group_id: KStr::from("g"),
            session_timeout_ms: 10_000,
            protocol_type: KStr::from("consumer"),
            ..Default::default()
        };
        let ResponseBody::JoinGroup(r) = join_group(&c, &AllowAll, &client(), join, 5).await else {
            panic!()
        };
        assert_eq!(r.error_code, ErrorCode::NOT_COORDINATOR.0);
    }

    /// Without READ on the group, every membership request is refused before the coordinator
    /// sees it (the group stays unknown); READ on another group does not help.
    #[tokio::test]
    async fn membership_needs_read_on_the_group() {
        use kafka_auth::acl::{AclOperation as Op, ResourceType as Rt};
        let c = coordinator();
        let authz = Granted(vec![
            (Rt::Group, "other", Op::Read),
            (Rt::Group, "g", Op::Describe),
        ]);
        let refused = ErrorCode::GROUP_AUTHORIZATION_FAILED.0;
        for v in 0..=9i16 {
            let join = JoinGroupRequest {
                group_id: KStr::from("g"),
                session_timeout_ms: 10_000,
                protocol_type: KStr::from("consumer"),
                protocols: vec![JoinGroupRequestProtocol {
                    name: KStr::from("range"),
                    metadata: subscription(&["orders"]),
                    ..Default::default()
                }],
                ..Default::default()
            };
            let answer = join_group(&c, &authz, &client(), join, v).await;
            let ResponseBody::JoinGroup(r) = roundtrip(&answer, v) else {
                panic!()
            };
            assert_eq!((r.error_code, r.generation_id), (refused, -1), "v{v}");
            assert!(r.member_id.is_empty() && r.members.is_empty());
        }
        for v in 0..=5i16 {
            let sync = SyncGroupRequest {
                group_id: KStr::from("g"),
                member_id: KStr::from("m"),
                ..Default::default()
            };
            let ResponseBody::SyncGroup(r) = roundtrip(&sync_group(&c, &authz, sync, v).await, v)
            else {
                panic!()
            };
            assert_eq!(r.error_code, refused, "v{v}");
            assert!(r.assignment.is_empty());
            let leave = LeaveGroupRequest {
                group_id: KStr::from("g"),
                member_id: KStr::from("m"),
                members: vec![MemberIdentity {
                    member_id: KStr::from("m"),
                    ..Default::default()
                }],
                ..Default::default()
            };
            let ResponseBody::LeaveGroup(r) = roundtrip(&leave_group(&c, &authz, leave, v), v)
            else {
                panic!()
            };
            assert_eq!(r.error_code, refused, "v{v}");
            assert!(r.members.is_empty());
        }
        for v in 0..=4i16 {
            let hb = HeartbeatRequest {
                group_id: KStr::from("g"),
                member_id: KStr::from("m"),
                ..Default::default()
            };
            let ResponseBody::Heartbeat(r) = roundtrip(&heartbeat(&c, &authz, hb, v), v) else {
                panic!()
            };
            assert_eq!(r.error_code, refused, "v{v}");
        }
        assert_eq!(c.describe("g").state, crate::group::GroupState::Dead);
    }
}
