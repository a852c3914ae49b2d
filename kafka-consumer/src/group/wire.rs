//! The group membership requests (JoinGroup, SyncGroup, Heartbeat, LeaveGroup): pure
//! builders for a negotiated version, and parsers into version-free results the state
//! machine takes.

use bytes::Bytes;
use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::{
    HeartbeatRequest, JoinGroupRequest, JoinGroupResponse, LeaveGroupRequest, LeaveGroupResponse,
    SyncGroupRequest, SyncGroupResponse, join_group_request, leave_group_request,
    sync_group_request,
};

use crate::error::ConsumerError;

/// The protocol type of consumer groups.
pub const PROTOCOL_TYPE: &str = "consumer";

fn kstr(s: &str) -> KStr {
    KStr::from(s.to_owned())
}

fn text(k: &KStr) -> String {
    k.as_str().to_owned()
}

fn static_needs(api: &str, min: i16, version: i16) -> ConsumerError {
    ConsumerError::Misuse(format!(
        "group.instance.id (static membership) needs {api} v{min}+, the coordinator offers \
         v{version}"
    ))
}

/// What a JoinGroup carries (any version).
#[derive(Debug, Clone, PartialEq)]
pub struct JoinParams {
    pub group_id: String,
    /// Empty for a member that has none yet.
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub session_timeout_ms: i32,
    pub rebalance_timeout_ms: i32,
    /// Assignor name and the member's subscription (`ConsumerProtocolSubscription` bytes),
    /// in order of preference.
    pub protocols: Vec<(String, Bytes)>,
    pub reason: Option<String>,
}

/// A JoinGroup request at `version`; static membership needs v5+.
pub fn join_request(p: &JoinParams, version: i16) -> Result<JoinGroupRequest, ConsumerError> {
    if p.group_instance_id.is_some() && version < 5 {
        return Err(static_needs("JoinGroup", 5, version));
    }
    Ok(JoinGroupRequest {
        group_id: kstr(&p.group_id),
        session_timeout_ms: p.session_timeout_ms,
        rebalance_timeout_ms: p.rebalance_timeout_ms,
        member_id: kstr(&p.member_id),
        group_instance_id: p.group_instance_id.as_deref().map(kstr),
        protocol_type: kstr(PROTOCOL_TYPE),
        protocols: p
            .protocols
            .iter()
            .map(
                |(name, metadata)| join_group_request::JoinGroupRequestProtocol {
                    name: kstr(name),
                    metadata: metadata.clone(),
                    ..Default::default()
                },
            )
            .collect(),
        reason: if version >= 8 {
            p.reason.as_deref().map(kstr)
        } else {
            None
        },
        ..Default::default()
    })
}

/// One member as the leader sees it in the JoinGroup answer.
#[derive(Debug, Clone, PartialEq)]
pub struct JoinedMember {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    /// The member's subscription bytes for the chosen protocol.
    pub metadata: Bytes,
}

/// A JoinGroup answer.
#[derive(Debug, Clone, PartialEq)]
pub struct JoinResult {
    pub error: ErrorCode,
    pub generation_id: i32,
    pub member_id: String,
    pub leader: String,
    /// v7+.
    pub protocol_type: Option<String>,
    /// The chosen assignor.
    pub protocol_name: Option<String>,
    /// v9+: the leader must not compute an assignment (a static leader came back to a
    /// stable group).
    pub skip_assignment: bool,
    /// Every member, for the leader; empty for the others.
    pub members: Vec<JoinedMember>,
}

impl JoinResult {
    /// An answer carrying only an error.
    pub fn error(code: ErrorCode, member_id: &str) -> Self {
        Self {
            error: code,
            generation_id: -1,
            member_id: member_id.to_owned(),
            leader: String::new(),
            protocol_type: None,
            protocol_name: None,
            skip_assignment: false,
            members: Vec::new(),
        }
    }
}

pub fn parse_join(resp: &JoinGroupResponse) -> JoinResult {
    JoinResult {
        error: ErrorCode(resp.error_code),
        generation_id: resp.generation_id,
        member_id: text(&resp.member_id),
        leader: text(&resp.leader),
        protocol_type: resp.protocol_type.as_ref().map(text),
        protocol_name: resp.protocol_name.as_ref().map(text),
        skip_assignment: resp.skip_assignment,
        members: resp
            .members
            .iter()
            .map(|m| JoinedMember {
                member_id: text(&m.member_id),
                group_instance_id: m.group_instance_id.as_ref().map(text),
                metadata: m.metadata.clone(),
            })
            .collect(),
    }
}

/// What a SyncGroup carries.
#[derive(Debug, Clone, PartialEq)]
pub struct SyncParams {
    pub group_id: String,
    pub generation_id: i32,
    pub member_id: String,
    pub group_instance_id: Option<String>,
    /// The chosen assignor.
    pub protocol_name: String,
}

/// A SyncGroup request at `version`; `assignments` (member id, assignment bytes) are the
/// leader's, empty for the others.
pub fn sync_request(
    p: &SyncParams,
    assignments: Vec<(String, Bytes)>,
    version: i16,
) -> Result<SyncGroupRequest, ConsumerError> {
    if p.group_instance_id.is_some() && version < 3 {
        return Err(static_needs("SyncGroup", 3, version));
    }
    Ok(SyncGroupRequest {
        group_id: kstr(&p.group_id),
        generation_id: p.generation_id,
        member_id: kstr(&p.member_id),
        group_instance_id: p.group_instance_id.as_deref().map(kstr),
        protocol_type: (version >= 5).then(|| kstr(PROTOCOL_TYPE)),
        protocol_name: (version >= 5).then(|| kstr(&p.protocol_name)),
        assignments: assignments
            .into_iter()
            .map(
                |(member_id, assignment)| sync_group_request::SyncGroupRequestAssignment {
                    member_id: KStr::from(member_id),
                    assignment,
                    ..Default::default()
                },
            )
            .collect(),
        ..Default::default()
    })
}

/// A SyncGroup answer.
#[derive(Debug, Clone, PartialEq)]
pub struct SyncResult {
    pub error: ErrorCode,
    /// v5+.
    pub protocol_name: Option<String>,
    /// The member's `ConsumerProtocolAssignment` bytes (empty: nothing assigned).
    pub assignment: Bytes,
}

impl SyncResult {
    pub fn error(code: ErrorCode) -> Self {
        Self {
            error: code,
            protocol_name: None,
            assignment: Bytes::new(),
        }
    }
}

pub fn parse_sync(resp: &SyncGroupResponse) -> SyncResult {
    SyncResult {
        error: ErrorCode(resp.error_code),
        protocol_name: resp.protocol_name.as_ref().map(text),
        assignment: resp.assignment.clone(),
    }
}

/// Who a Heartbeat or LeaveGroup is from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberParams {
    pub group_id: String,
    pub generation_id: i32,
    pub member_id: String,
    pub group_instance_id: Option<String>,
}

/// A Heartbeat at `version` (the instance id goes from v3 on).
pub fn heartbeat_request(p: &MemberParams, version: i16) -> HeartbeatRequest {
    HeartbeatRequest {
        group_id: kstr(&p.group_id),
        generation_id: p.generation_id,
        member_id: kstr(&p.member_id),
        group_instance_id: if version >= 3 {
            p.group_instance_id.as_deref().map(kstr)
        } else {
            None
        },
        ..Default::default()
    }
}

/// A LeaveGroup at `version` (one member id before v3, a member list from v3).
pub fn leave_request(p: &MemberParams, reason: &str, version: i16) -> LeaveGroupRequest {
    if version <= 2 {
        LeaveGroupRequest {
            group_id: kstr(&p.group_id),
            member_id: kstr(&p.member_id),
            ..Default::default()
        }
    } else {
        LeaveGroupRequest {
            group_id: kstr(&p.group_id),
            members: vec![leave_group_request::MemberIdentity {
                member_id: kstr(&p.member_id),
                group_instance_id: p.group_instance_id.as_deref().map(kstr),
                reason: (version >= 5).then(|| kstr(reason)),
                ..Default::default()
            }],
            ..Default::default()
        }
    }
}

/// The error of a LeaveGroup answer (the group's, else the member's).
pub fn parse_leave(resp: &LeaveGroupResponse) -> ErrorCode {
    let top = ErrorCode(resp.error_code);
    if !top.is_ok() {
        return top;
    }
    resp.members
        .iter()
        .map(|m| ErrorCode(m.error_code))
        .find(|c| !c.is_ok())
        .unwrap_or(ErrorCode::NONE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::messages::RequestBody;
    use kafka_protocol::{RequestHeader, encode_request};

    fn encodes(body: RequestBody, version: i16) {
        let header = RequestHeader {
            request_api_key: body.api_key() as i16,
            request_api_version: version,
            ..Default::default()
        };
        if let Err(e) = encode_request(&header, &body) {
            panic!("{:?} v{version}: {e}", body.api_key());
        }
    }

    fn member(instance: Option<&str>) -> MemberParams {
        MemberParams {
            group_id: "g".into(),
            generation_id: 3,
            member_id: "m-1".into(),
            group_instance_id: instance.map(str::to_owned),
        }
    }

    #[test]
    fn requests_encode_at_every_version() {
        let join = JoinParams {
            group_id: "g".into(),
            member_id: String::new(),
            group_instance_id: None,
            session_timeout_ms: 10_000,
            rebalance_timeout_ms: 60_000,
            protocols: vec![("range".into(), Bytes::from_static(b"\x00\x03"))],
            reason: Some("why".into()),
        };
        for v in 0..=9 {
            encodes(RequestBody::from(join_request(&join, v).unwrap()), v);
        }
        let with_instance = JoinParams {
            group_instance_id: Some("i".into()),
            ..join
        };
        assert!(join_request(&with_instance, 4).is_err());
        encodes(
            RequestBody::from(join_request(&with_instance, 5).unwrap()),
            5,
        );
        let sync = SyncParams {
            group_id: "g".into(),
            generation_id: 1,
            member_id: "m".into(),
            group_instance_id: None,
            protocol_name: "range".into(),
        };
        for v in 0..=5 {
            let r = sync_request(&sync, vec![("m".into(), Bytes::new())], v).unwrap();
            assert_eq!(r.protocol_name.is_some(), v >= 5);
            encodes(RequestBody::from(r), v);
        }
        for v in 0..=4 {
            encodes(
                RequestBody::Heartbeat(heartbeat_request(&member(Some("i")), v)),
                v,
            );
        }
        for v in 0..=5 {
            let r = leave_request(&member(Some("i")), "closing", v);
            assert_eq!(r.members.len(), usize::from(v >= 3));
            encodes(RequestBody::LeaveGroup(r), v);
        }
    }

    #[test]
    fn leave_errors_come_from_the_group_or_the_member() {
        use kafka_protocol::messages::leave_group_response::MemberResponse;
        let mut resp = LeaveGroupResponse::default();
        assert_eq!(parse_leave(&resp), ErrorCode::NONE);
        resp.members.push(MemberResponse {
            error_code: ErrorCode::UNKNOWN_MEMBER_ID.code(),
            ..Default::default()
        });
        assert_eq!(parse_leave(&resp), ErrorCode::UNKNOWN_MEMBER_ID);
        resp.error_code = ErrorCode::NOT_COORDINATOR.code();
        assert_eq!(parse_leave(&resp), ErrorCode::NOT_COORDINATOR);
    }
}
