//! ApiVersions: the table of what this broker implements.

use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{ApiKey, ApiVersionsResponse, ResponseBody};

use super::SUPPORTED;
use crate::features::Finalized;

/// The apis of KIP-848 consumer groups: served (and listed) only while `group.version` >= 1
/// is finalized, as Kafka filters them.
const CONSUMER_GROUP_APIS: [ApiKey; 2] = [
    ApiKey::ConsumerGroupHeartbeat,
    ApiKey::ConsumerGroupDescribe,
];

/// Whether `group.version` >= 1 is finalized: KIP-848 consumer groups are served.
pub(super) fn consumer_groups_enabled(finalized: &Finalized) -> bool {
    finalized
        .levels
        .get("group.version")
        .is_some_and(|level| *level >= 1)
}

fn table() -> Vec<ApiVersion> {
    SUPPORTED
        .iter()
        .map(|(k, lo, hi)| ApiVersion {
            api_key: *k as i16,
            min_version: *lo,
            max_version: *hi,
            ..Default::default()
        })
        .collect()
}

/// The table and the features (v3+); a broker of a cluster also takes DescribeQuorum
/// (forwarded).
pub(super) fn handle(version: i16, clustered: bool, finalized: &Finalized) -> ResponseBody {
    let mut api_keys = table();
    if !consumer_groups_enabled(finalized) {
        api_keys.retain(|k| !CONSUMER_GROUP_APIS.iter().any(|c| *c as i16 == k.api_key));
    }
    if clustered {
        let (lo, hi) = super::CLUSTER_DESCRIBE_QUORUM;
        api_keys.push(ApiVersion {
            api_key: ApiKey::DescribeQuorum as i16,
            min_version: lo,
            max_version: hi,
            ..Default::default()
        });
    }
    let (supported_features, finalized_features_epoch, finalized_features) =
        crate::features::api_versions_fields(version, finalized);
    ResponseBody::ApiVersions(ApiVersionsResponse {
        api_keys,
        supported_features,
        finalized_features_epoch,
        finalized_features,
        ..Default::default()
    })
}

/// The answer to an ApiVersions version we do not know: a v0 body with UNSUPPORTED_VERSION and
/// our ApiVersions range, so the client can retry with a version we support.
pub(super) fn unsupported() -> ResponseBody {
    ResponseBody::ApiVersions(ApiVersionsResponse {
        error_code: ErrorCode::UNSUPPORTED_VERSION.code(),
        api_keys: table()
            .into_iter()
            .filter(|k| k.api_key == ApiKey::ApiVersions as i16)
            .collect(),
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    fn listed(finalized: &Finalized) -> Vec<i16> {
        let ResponseBody::ApiVersions(r) = handle(4, false, finalized) else {
            panic!("not an ApiVersions answer");
        };
        r.api_keys.iter().map(|k| k.api_key).collect()
    }

    #[test]
    fn consumer_group_apis_are_listed_only_with_group_version_1() {
        let cg = [
            ApiKey::ConsumerGroupHeartbeat as i16,
            ApiKey::ConsumerGroupDescribe as i16,
        ];
        let mut finalized = Finalized {
            epoch: 3,
            levels: BTreeMap::from([("metadata.version".to_owned(), 21)]),
        };
        let off = listed(&finalized);
        assert!(cg.iter().all(|k| !off.contains(k)), "{off:?}");
        assert!(off.contains(&(ApiKey::JoinGroup as i16)));
        finalized.levels.insert("group.version".to_owned(), 1);
        let on = listed(&finalized);
        assert!(cg.iter().all(|k| on.contains(k)), "{on:?}");
        assert_eq!(on.len(), off.len() + 2);
        finalized.levels.insert("group.version".to_owned(), 0);
        assert_eq!(listed(&finalized), off);
    }
}
