//! FindCoordinator: where a group or a transactional id is coordinated. On a single node,
//! here; a broker of a cluster locates the coordinator in its metadata image
//! (`super::super::cluster`) and answers through [`find_coordinator_with`].

use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::{FindCoordinatorRequest, FindCoordinatorResponse, ResponseBody};

use super::s;
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

pub(crate) fn find_coordinator(
    node: &CoordinatorNode,
    req: FindCoordinatorRequest,
    version: i16,
) -> ResponseBody {
    find_coordinator_with(
        &|key, key_type| group_key(key, key_type).map(|()| node.clone()),
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

/// FindCoordinator with `locate` answering each key (v4+ asks for several at once).
pub(crate) fn find_coordinator_with(
    locate: Locate<'_>,
    req: FindCoordinatorRequest,
    version: i16,
) -> ResponseBody {
    let key_type = if version >= 1 {
        req.key_type
    } else {
        KEY_TYPE_GROUP
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

    use super::super::test_support::roundtrip;
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
            let ResponseBody::FindCoordinator(r) = roundtrip(&find_coordinator(&node, req, v), v)
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
                        roundtrip(&find_coordinator(&node, req, v), v)
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
}
