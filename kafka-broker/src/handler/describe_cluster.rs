//! DescribeCluster: this node is the whole cluster and its controller.

use kafka_protocol::KStr;
use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::{DescribeClusterRequest, DescribeClusterResponse, ResponseBody};

use super::authorized;
use super::context::RequestContext;
use crate::node::Broker;

/// DescribeCluster; this broker's endpoint is the one on the listener of `ctx`.
pub(super) fn handle(
    broker: &Broker,
    ctx: &RequestContext<'_>,
    req: DescribeClusterRequest,
) -> ResponseBody {
    let (host, port) = broker.advertised_host_port_on(ctx.listener());
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
        cluster_authorized_operations: authorized::answer(
            req.include_cluster_authorized_operations,
            authorized::CLUSTER,
        ),
        ..Default::default()
    })
}
