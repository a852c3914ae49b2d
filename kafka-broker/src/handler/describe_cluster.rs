//! DescribeCluster: this node is the whole cluster and its controller.
//!
//! Kafka checks nothing to answer it (`AuthHelper.computeDescribeClusterResponse`); the
//! cluster's authorized operations, when asked, are the caller's from the ACLs, and 0 for a
//! caller without DESCRIBE on the cluster.

use kafka_auth::acl::{AclOperation, ResourceType};
use kafka_protocol::KStr;
use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::{DescribeClusterRequest, DescribeClusterResponse, ResponseBody};

use super::authorized;
use super::authz::{Authz, CLUSTER};
use super::context::RequestContext;
use crate::node::Broker;

/// DescribeCluster; this broker's endpoint is the one on the listener of `ctx`.
pub(super) fn handle(
    broker: &Broker,
    ctx: &RequestContext<'_>,
    authz: &Authz<'_>,
    req: DescribeClusterRequest,
) -> ResponseBody {
    let (host, port) = broker.advertised_host_port_on(ctx.listener());
    let cluster_authorized_operations = if !req.include_cluster_authorized_operations {
        authorized::NOT_ASKED
    } else if authz.cluster(AclOperation::Describe) {
        authz.operations(ResourceType::Cluster, CLUSTER)
    } else {
        0
    };
    ResponseBody::DescribeCluster(DescribeClusterResponse {
        cluster_id: KStr::from(broker.cluster_id.clone()),
        controller_id: broker.config.server.node_id,
        brokers: vec![DescribeClusterBroker {
            broker_id: broker.config.server.node_id,
            host: KStr::from(host),
            port,
            rack: None,
            ..Default::default()
        }],
        cluster_authorized_operations,
        ..Default::default()
    })
}
