//! DescribeClientQuotas and AlterClientQuotas (KIP-546), over the node's
//! [`crate::quotas::Quotas`], with Kafka's checks and messages ([`crate::quota`]).
//!
//! Authorization, as Kafka's: describing needs DESCRIBE_CONFIGS on the cluster, else the
//! answer's error is CLUSTER_AUTHORIZATION_FAILED with no entries; altering needs
//! ALTER_CONFIGS on the cluster, else every entry is answered CLUSTER_AUTHORIZATION_FAILED and
//! nothing changes.

use kafka_auth::acl::AclOperation;
use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::{
    AlterClientQuotasRequest, DescribeClientQuotasRequest, DescribeClientQuotasResponse,
    ResponseBody, describe_client_quotas_response as describe_resp,
};

use super::authz::Authz;
use crate::node::Broker;
use crate::quota::FilterComponent;

const CLUSTER_REFUSED: &str = "Cluster authorization failed.";

pub(super) fn describe(
    broker: &Broker,
    authz: &Authz<'_>,
    r: DescribeClientQuotasRequest,
) -> ResponseBody {
    let refused = |code: ErrorCode, message: &str| {
        ResponseBody::DescribeClientQuotas(DescribeClientQuotasResponse {
            error_code: code.0,
            error_message: Some(KStr::from(message.to_owned())),
            entries: None,
            ..Default::default()
        })
    };
    if !authz.cluster(AclOperation::DescribeConfigs) {
        return refused(ErrorCode::CLUSTER_AUTHORIZATION_FAILED, CLUSTER_REFUSED);
    }
    let components: Vec<FilterComponent> = r
        .components
        .iter()
        .map(|c| FilterComponent {
            entity_type: c.entity_type.to_string(),
            match_type: c.match_type,
            name: c.r#match.as_ref().map(ToString::to_string),
        })
        .collect();
    match broker.quotas.describe(&components, r.strict) {
        Ok(found) => ResponseBody::DescribeClientQuotas(DescribeClientQuotasResponse {
            error_code: ErrorCode::NONE.0,
            error_message: None,
            entries: Some(
                found
                    .into_iter()
                    .map(|d| describe_resp::EntryData {
                        entity: d
                            .entity
                            .entries()
                            .into_iter()
                            .map(|(t, name)| describe_resp::EntityData {
                                entity_type: KStr::from_static(t.name()),
                                entity_name: name.map(|n| KStr::from(n.to_owned())),
                                ..Default::default()
                            })
                            .collect(),
                        values: d
                            .values
                            .into_iter()
                            .map(|(key, value)| describe_resp::ValueData {
                                key: KStr::from_static(key.name()),
                                value,
                                ..Default::default()
                            })
                            .collect(),
                        ..Default::default()
                    })
                    .collect(),
            ),
            ..Default::default()
        }),
        Err(e) => refused(e.error_code(), e.message()),
    }
}

/// AlterClientQuotas refused whole: without ALTER_CONFIGS on the cluster every entry is
/// answered CLUSTER_AUTHORIZATION_FAILED. `None`: go on (here, or at the controller of a
/// cluster).
pub(super) fn refuse_alter(
    authz: &Authz<'_>,
    r: &AlterClientQuotasRequest,
) -> Option<ResponseBody> {
    if authz.cluster(AclOperation::AlterConfigs) {
        return None;
    }
    let refused = (
        ErrorCode::CLUSTER_AUTHORIZATION_FAILED,
        Some(CLUSTER_REFUSED.to_owned()),
    );
    Some(ResponseBody::AlterClientQuotas(
        crate::quotas::alter_response(r, vec![refused; r.entries.len()]),
    ))
}

pub(super) fn alter(
    broker: &Broker,
    authz: &Authz<'_>,
    r: AlterClientQuotasRequest,
) -> ResponseBody {
    if let Some(refused) = refuse_alter(authz, &r) {
        return refused;
    }
    let entries = crate::quotas::alter_entries(&r);
    let results = match broker.quotas.alter(&entries, r.validate_only) {
        Ok(results) => crate::quotas::entry_results(results),
        Err(e) => {
            tracing::error!(error = %e, "storing client quotas failed");
            let failed = (ErrorCode::UNKNOWN_SERVER_ERROR, Some(e.to_string()));
            vec![failed; entries.len()]
        }
    };
    ResponseBody::AlterClientQuotas(crate::quotas::alter_response(&r, results))
}
