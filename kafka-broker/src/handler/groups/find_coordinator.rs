//! FindCoordinator: where a group or a transactional id is coordinated. On a single node,
//! here; a broker of a cluster locates the coordinator in its metadata image
//! (`super::super::cluster`) and answers through [`find_coordinator_with`].
//!
//! As Kafka's `getCoordinator`, each key needs DESCRIBE on its group (else
//! GROUP_AUTHORIZATION_FAILED) or transactional id (else
//! TRANSACTIONAL_ID_AUTHORIZATION_FAILED), checked before the coordinator is looked for; v4+
//! answers each key on its own.

use kafka_auth::acl::AclOperation;
use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::{FindCoordinatorRequest, FindCoordinatorResponse, ResponseBody};

use super::{GROUP_REFUSED, Permits, TRANSACTIONAL_ID_REFUSED, s};
use crate::node::Broker;

/// Where clients find the coordinator: this broker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CoordinatorNode {
    pub(crate) node_id: i32,
    pub(crate) host: String,
    pub(crate) port: i32,
}

impl CoordinatorNode {
    pub(crate) fn of(broker: &Broker, listener: &str) -> Self {
        let (host, port) = broker.advertised_host_port_on(listener);
        Self {
            node_id: broker.config.server.node_id,
            host,
            port,
        }
    }
}

/// Key types of FindCoordinator.
pub(crate) const KEY_TYPE_GROUP: i8 = 0;
pub(crate) const KEY_TYPE_TRANSACTION: i8 = 1;

/// FindCoordinator on a single node: `node` coordinates every key `authz` may describe.
pub(crate) fn find_coordinator(
    node: &CoordinatorNode,
    authz: &dyn Permits,
    req: FindCoordinatorRequest,
    version: i16,
) -> ResponseBody {
    find_coordinator_with(
        &|key, key_type| group_key(key, key_type).map(|()| node.clone()),
        authz,
        req,
        version,
    )
}

/// Whether a FindCoordinator key is of a kind there is a coordinator for: a group's or a
/// transactional id's.
pub(crate) fn group_key(_key: &KStr, key_type: i8) -> Result<(), (ErrorCode, String)> {
    match key_type {
        KEY_TYPE_GROUP | KEY_TYPE_TRANSACTION => Ok(()),
        other => Err((
            ErrorCode::INVALID_REQUEST,
            format!("unknown coordinator key type {other}"),
        )),
    }
}

/// Where a coordinator key (`key`, of `key_type`) is coordinated, or why it is not.
pub(crate) type Locate<'a> = &'a dyn Fn(&KStr, i8) -> Result<CoordinatorNode, (ErrorCode, String)>;

/// Whether `authz` may look up the coordinator of `key`: DESCRIBE on the group or the
/// transactional id, Kafka's error otherwise. Other key types are left to `locate`.
fn may_describe(authz: &dyn Permits, key: &KStr, key_type: i8) -> Result<(), (ErrorCode, String)> {
    match key_type {
        KEY_TYPE_GROUP if !authz.group(AclOperation::Describe, key) => Err((
            ErrorCode::GROUP_AUTHORIZATION_FAILED,
            GROUP_REFUSED.to_owned(),
        )),
        KEY_TYPE_TRANSACTION if !authz.transactional_id(AclOperation::Describe, key) => Err((
            ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
            TRANSACTIONAL_ID_REFUSED.to_owned(),
        )),
        _ => Ok(()),
    }
}

/// FindCoordinator with `locate` answering each key `authz` may describe (v4+ asks for
/// several at once).
pub(crate) fn find_coordinator_with(
    locate: Locate<'_>,
    authz: &dyn Permits,
    req: FindCoordinatorRequest,
    version: i16,
) -> ResponseBody {
    let key_type = if version >= 1 {
        req.key_type
    } else {
        KEY_TYPE_GROUP
    };
    let locate = |key: &KStr, key_type: i8| {
        may_describe(authz, key, key_type)?;
        locate(key, key_type)
    };
    let response = if version >= 4 {
        FindCoordinatorResponse {
            coordinators: req
                .coordinator_keys
                .iter()
                .map(|key| match locate(key, key_type) {
                    Ok(node) => Coordinator {
                        key: key.clone(),
                        node_id: node.node_id,
                        host: s(node.host.clone()),
                        port: node.port,
                        ..Default::default()
                    },
                    Err((e, msg)) => Coordinator {
                        key: key.clone(),
                        node_id: -1,
                        host: KStr::default(),
                        port: -1,
                        error_code: e.0,
                        error_message: Some(s(msg)),
                        ..Default::default()
                    },
                })
                .collect(),
            ..Default::default()
        }
    } else {
        match locate(&req.key, key_type) {
            Ok(node) => FindCoordinatorResponse {
                node_id: node.node_id,
                host: s(node.host.clone()),
                port: node.port,
                ..Default::default()
            },
            Err((e, msg)) => FindCoordinatorResponse {
                error_code: e.0,
                error_message: (version >= 1).then(|| s(msg)),
                node_id: -1,
                host: KStr::default(),
                port: -1,
                ..Default::default()
            },
        }
    };
    ResponseBody::FindCoordinator(response)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::super::test_support::{AllowAll, Granted, roundtrip};
    use super::*;

    #[test]
    fn the_coordinator_is_this_broker() {
        let dir = tempfile::tempdir().unwrap();
        let config = crate::BrokerConfig {
            server: crate::config::ServerConfig {
                data_dir: dir.path().to_path_buf(),
                node_id: 5,
                ..Default::default()
            },
            network: crate::config::NetworkConfig {
                listen: "127.0.0.1:9093".into(),
                advertised: Some("kafka.example:29092".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        let broker = Broker::open(config).unwrap();
        let node = CoordinatorNode::of(&broker, "PLAINTEXT");
        assert_eq!(
            (node.node_id, node.host.as_str(), node.port),
            (5, "kafka.example", 29092)
        );
    }

    #[test]
    fn find_coordinator_every_version() {
        let node = CoordinatorNode {
            node_id: 3,
            host: "broker.local".into(),
            port: 19092,
        };
        for v in 0..=6 {
            let req = if v >= 4 {
                FindCoordinatorRequest {
                    key_type: 0,
                    coordinator_keys: vec![KStr::from("g1"), KStr::from("g2")],
                    ..Default::default()
                }
            } else {
                FindCoordinatorRequest {
                    key: KStr::from("g1"),
                    ..Default::default()
                }
            };
            let ResponseBody::FindCoordinator(r) =
                roundtrip(&find_coordinator(&node, &AllowAll, req, v), v)
            else {
                panic!()
            };
            if v >= 4 {
                assert_eq!(r.coordinators.len(), 2);
                for c in &r.coordinators {
                    assert_eq!((c.node_id, c.port, c.error_code), (3, 19092, 0));
                    assert_eq!(c.host, "broker.local");
                }
                assert_eq!(r.coordinators[1].key, "g2");
            } else {
                assert_eq!((r.error_code, r.node_id, r.port), (0, 3, 19092));
                assert_eq!(r.host, "broker.local");
            }
            if v >= 1 {
                // A transactional id is coordinated by the same node; an unknown key type is
                // refused.
                for (key_type, want) in [(1i8, ErrorCode::NONE), (7, ErrorCode::INVALID_REQUEST)] {
                    let req = FindCoordinatorRequest {
                        key: if v < 4 {
                            KStr::from("tx")
                        } else {
                            KStr::default()
                        },
                        key_type,
                        coordinator_keys: if v >= 4 {
                            vec![KStr::from("tx")]
                        } else {
                            vec![]
                        },
                        ..Default::default()
                    };
                    let ResponseBody::FindCoordinator(r) =
                        roundtrip(&find_coordinator(&node, &AllowAll, req, v), v)
                    else {
                        panic!()
                    };
                    let (code, node_id) = if v >= 4 {
                        (r.coordinators[0].error_code, r.coordinators[0].node_id)
                    } else {
                        (r.error_code, r.node_id)
                    };
                    assert_eq!(code, want.0, "v{v} key type {key_type}");
                    if want == ErrorCode::NONE {
                        assert_eq!(node_id, 3, "v{v}");
                    }
                }
            }
        }
    }

    /// Each key needs DESCRIBE on its group or transactional id; v4+ answers each key on its
    /// own, older versions the one key with Kafka's message.
    #[test]
    fn find_coordinator_needs_describe_per_key() {
        use kafka_auth::acl::{AclOperation as Op, ResourceType as Rt};
        let node = CoordinatorNode {
            node_id: 3,
            host: "broker.local".into(),
            port: 19092,
        };
        let authz = Granted(vec![
            (Rt::Group, "g1", Op::Describe),
            (Rt::TransactionalId, "tx1", Op::Describe),
            // READ on a group does not imply DESCRIBE in this table: refused.
            (Rt::Group, "g2", Op::Read),
        ]);
        for (key_type, keys, refused) in [
            (
                KEY_TYPE_GROUP,
                ["g1", "g2"],
                ErrorCode::GROUP_AUTHORIZATION_FAILED,
            ),
            (
                KEY_TYPE_TRANSACTION,
                ["tx1", "g1"],
                ErrorCode::TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
            ),
        ] {
            let req = FindCoordinatorRequest {
                key_type,
                coordinator_keys: keys.iter().map(|k| KStr::from(k.to_string())).collect(),
                ..Default::default()
            };
            let ResponseBody::FindCoordinator(r) =
                roundtrip(&find_coordinator(&node, &authz, req, 4), 4)
            else {
                panic!()
            };
            let got: Vec<(i16, i32, i32)> = r
                .coordinators
                .iter()
                .map(|c| (c.error_code, c.node_id, c.port))
                .collect();
            assert_eq!(got, [(0, 3, 19092), (refused.0, -1, -1)]);
            for v in 0..=3i16 {
                if v == 0 && key_type == KEY_TYPE_TRANSACTION {
                    continue;
                }
                let req = FindCoordinatorRequest {
                    key: KStr::from(keys[1]),
                    key_type,
                    ..Default::default()
                };
                let ResponseBody::FindCoordinator(r) =
                    roundtrip(&find_coordinator(&node, &authz, req, v), v)
                else {
                    panic!()
                };
                assert_eq!(
                    (r.error_code, r.node_id, r.port),
                    (refused.0, -1, -1),
                    "v{v}"
                );
                if v >= 1 {
                    let message = r.error_message.as_ref().map(ToString::to_string);
                    assert!(message.is_some_and(|m| m.ends_with("authorization failed.")));
                }
            }
        }
    }
}
