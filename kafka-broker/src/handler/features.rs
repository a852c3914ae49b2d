//! UpdateFeatures (KIP-584) on a single node, and the refusal a cluster's broker makes before
//! forwarding it to the controller: both need ALTER on the cluster, as Kafka's controller
//! checks (else the whole request is CLUSTER_AUTHORIZATION_FAILED). What is decided is
//! [`crate::features::decide`]; ApiVersions shows the result.

use kafka_auth::acl::AclOperation;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::{ResponseBody, UpdateFeaturesRequest};

use super::authz::Authz;
use crate::node::Broker;

/// The whole request refused without ALTER on the cluster; `None`: go on.
pub(super) fn refuse_update(authz: &Authz<'_>) -> Option<ResponseBody> {
    if authz.cluster(AclOperation::Alter) {
        return None;
    }
    Some(ResponseBody::UpdateFeatures(crate::features::refused(
        ErrorCode::CLUSTER_AUTHORIZATION_FAILED,
        "Cluster authorization failed.",
    )))
}

/// UpdateFeatures on a single node: this node is the whole cluster.
pub(super) fn update(
    broker: &Broker,
    authz: &Authz<'_>,
    r: &UpdateFeaturesRequest,
    version: i16,
) -> ResponseBody {
    if let Some(refused) = refuse_update(authz) {
        return refused;
    }
    let node = broker.config.server.node_id;
    ResponseBody::UpdateFeatures(broker.features.update(r, version, node))
}
