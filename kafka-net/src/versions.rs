//! ApiVersions negotiation: which version of each api to use with one broker, and the
//! handshake's decision on each ApiVersions answer (pure; the connection sends the requests).
//!
//! Imports only the error type.

use std::collections::BTreeMap;

use kafka_protocol::VersionRange;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::{ApiKey, ApiVersionsResponse};

use crate::error::{NetError, check};

/// The version ranges a broker supports, and the choice per api.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApiVersions {
    broker: BTreeMap<i16, (i16, i16)>,
}

impl ApiVersions {
    /// From an ApiVersions response.
    pub fn from_response(resp: &ApiVersionsResponse) -> Self {
        Self {
            broker: resp
                .api_keys
                .iter()
                .map(|k| (k.api_key, (k.min_version, k.max_version)))
                .collect(),
        }
    }

    /// The broker's range for `api` (raw key), if it listed it.
    pub fn broker_range(&self, api: i16) -> Option<(i16, i16)> {
        self.broker.get(&api).copied()
    }

    /// Every `(api key, min, max)` the broker listed, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (i16, i16, i16)> + '_ {
        self.broker.iter().map(|(k, (lo, hi))| (*k, *lo, *hi))
    }

    /// The highest version of `api` both sides support: the broker's range, the codec's and
    /// [`client_max`].
    pub fn version_for(&self, api: ApiKey) -> Result<i16, NetError> {
        let Some((lo, hi)) = self.broker_range(api as i16) else {
            return Err(NetError::UnsupportedApi {
                api,
                detail: Some("not in the broker's ApiVersions".into()),
            });
        };
        let ours = client_versions(api);
        let v = hi.min(ours.max);
        if v < lo.max(ours.min) {
            return Err(NetError::UnsupportedApi {
                api,
                detail: Some(format!(
                    "broker supports v{lo}-{hi}, this client v{}-{}",
                    ours.min, ours.max
                )),
            });
        }
        Ok(v)
    }
}

/// The versions of `api` this crate's clients may send: the codec's lowest to [`client_max`].
pub fn client_versions(api: ApiKey) -> VersionRange {
    VersionRange {
        min: api.versions().min,
        max: client_max(api),
    }
}

/// The highest version of `api` that this crate's clients implement: what
/// [`ApiVersions::version_for`] negotiates at most, whatever the codec and the broker know.
///
/// The codec decodes and encodes every version of Kafka 3.9 and 4.4, but a newer version of an
/// api often means new semantics (Produce v12 signals transactions v2 and v13 names topics by
/// id, EndTxn v5 bumps the producer epoch at every end, ListOffsets v10 adds a timeout, ...),
/// which the code building the requests must implement first. So this table holds the versions the clients
/// implement: Kafka 3.9's maxima, the versions the client code was written for. Raising one is
/// work on that api, with its semantics and tests. The apis the clients never build themselves
/// (share groups, Streams groups, the 4.x controller apis) stay at the first version Kafka 4.4
/// defines. A test keeps every entry inside the codec's stable versions.
pub fn client_max(api: ApiKey) -> i16 {
    match api {
        ApiKey::Produce => 11,
        ApiKey::Fetch => 17,
        ApiKey::ListOffsets => 9,
        ApiKey::Metadata => 12,
        ApiKey::LeaderAndIsr => 7,
        ApiKey::StopReplica => 4,
        ApiKey::UpdateMetadata => 8,
        ApiKey::ControlledShutdown => 3,
        ApiKey::OffsetCommit => 9,
        ApiKey::OffsetFetch => 9,
        ApiKey::FindCoordinator => 6,
        ApiKey::JoinGroup => 9,
        ApiKey::Heartbeat => 4,
        ApiKey::LeaveGroup => 5,
        ApiKey::SyncGroup => 5,
        ApiKey::DescribeGroups => 5,
        ApiKey::ListGroups => 5,
        ApiKey::SaslHandshake => 1,
        ApiKey::ApiVersions => 4,
        ApiKey::CreateTopics => 7,
        ApiKey::DeleteTopics => 6,
        ApiKey::DeleteRecords => 2,
        ApiKey::InitProducerId => 5,
        ApiKey::OffsetForLeaderEpoch => 4,
        ApiKey::AddPartitionsToTxn => 5,
        ApiKey::AddOffsetsToTxn => 4,
        ApiKey::EndTxn => 4,
        ApiKey::WriteTxnMarkers => 1,
        ApiKey::TxnOffsetCommit => 4,
        ApiKey::DescribeAcls => 3,
        ApiKey::CreateAcls => 3,
        ApiKey::DeleteAcls => 3,
        ApiKey::DescribeConfigs => 4,
        ApiKey::AlterConfigs => 2,
        ApiKey::AlterReplicaLogDirs => 2,
        ApiKey::DescribeLogDirs => 4,
        ApiKey::SaslAuthenticate => 2,
        ApiKey::CreatePartitions => 3,
        ApiKey::CreateDelegationToken => 3,
        ApiKey::RenewDelegationToken => 2,
        ApiKey::ExpireDelegationToken => 2,
        ApiKey::DescribeDelegationToken => 3,
        ApiKey::DeleteGroups => 2,
        ApiKey::ElectLeaders => 2,
        ApiKey::IncrementalAlterConfigs => 1,
        ApiKey::AlterPartitionReassignments => 0,
        ApiKey::ListPartitionReassignments => 0,
        ApiKey::OffsetDelete => 0,
        ApiKey::DescribeClientQuotas => 1,
        ApiKey::AlterClientQuotas => 1,
        ApiKey::DescribeUserScramCredentials => 0,
        ApiKey::AlterUserScramCredentials => 0,
        ApiKey::Vote => 1,
        ApiKey::BeginQuorumEpoch => 1,
        ApiKey::EndQuorumEpoch => 1,
        ApiKey::DescribeQuorum => 2,
        ApiKey::AlterPartition => 3,
        ApiKey::UpdateFeatures => 1,
        ApiKey::Envelope => 0,
        ApiKey::FetchSnapshot => 1,
        ApiKey::DescribeCluster => 1,
        ApiKey::DescribeProducers => 0,
        ApiKey::BrokerRegistration => 4,
        ApiKey::BrokerHeartbeat => 1,
        ApiKey::UnregisterBroker => 0,
        ApiKey::DescribeTransactions => 0,
        ApiKey::ListTransactions => 1,
        ApiKey::AllocateProducerIds => 0,
        ApiKey::ConsumerGroupHeartbeat => 0,
        ApiKey::ConsumerGroupDescribe => 0,
        ApiKey::ControllerRegistration => 0,
        ApiKey::GetTelemetrySubscriptions => 0,
        ApiKey::PushTelemetry => 0,
        ApiKey::AssignReplicasToDirs => 0,
        ApiKey::ListConfigResources => 0,
        ApiKey::DescribeTopicPartitions => 0,
        ApiKey::AddRaftVoter => 0,
        ApiKey::RemoveRaftVoter => 0,
        ApiKey::UpdateRaftVoter => 0,
        ApiKey::InitializeShareGroupState => 0,
        ApiKey::ReadShareGroupState => 0,
        ApiKey::WriteShareGroupState => 0,
        ApiKey::DeleteShareGroupState => 0,
        ApiKey::ReadShareGroupStateSummary => 0,
        // Not built by our clients: the first version Kafka 4.4 defines (3.9's share group
        // v0 was never stable).
        ApiKey::ShareGroupHeartbeat => 1,
        ApiKey::ShareGroupDescribe => 1,
        ApiKey::ShareFetch => 1,
        ApiKey::ShareAcknowledge => 1,
        ApiKey::StreamsGroupHeartbeat => 0,
        ApiKey::StreamsGroupDescribe => 0,
        ApiKey::DescribeShareGroupOffsets => 0,
        ApiKey::AlterShareGroupOffsets => 0,
        ApiKey::DeleteShareGroupOffsets => 0,
        ApiKey::StreamsGroupTopologyDescriptionUpdate => 0,
        ApiKey::UnregisterController => 0,
    }
}

/// What to do with one ApiVersions answer during the handshake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Negotiation {
    /// The broker answered: these are its versions.
    Done(ApiVersions),
    /// The broker refused our ApiVersions version: ask again at this one.
    Retry(i16),
}

/// The handshake's decision on the answer to an ApiVersions request sent at `version`: if the
/// broker answered UNSUPPORTED_VERSION, ask again at the highest version it lists for
/// ApiVersions (or one less than ours); any other error ends the handshake. The connection
/// sends the requests ([`crate::connection::Connection::connect`]).
pub(crate) fn on_answer(resp: &ApiVersionsResponse, version: i16) -> Result<Negotiation, NetError> {
    let code = ErrorCode(resp.error_code);
    if code == ErrorCode::UNSUPPORTED_VERSION && version > 0 {
        let theirs = resp
            .api_keys
            .iter()
            .find(|k| k.api_key == ApiKey::ApiVersions as i16)
            .map(|k| k.max_version);
        let next = theirs.map_or(version - 1, |m| m.min(version - 1));
        return Ok(Negotiation::Retry(next.max(0)));
    }
    check(resp.error_code, "ApiVersions")?;
    Ok(Negotiation::Done(ApiVersions::from_response(resp)))
}

#[cfg(test)]
mod tests {
    use kafka_protocol::messages::api_versions_response::ApiVersion;

    use super::*;

    fn answer(code: ErrorCode, api_versions_max: Option<i16>) -> ApiVersionsResponse {
        let mut resp = ApiVersionsResponse {
            error_code: code.0,
            ..Default::default()
        };
        if let Some(max) = api_versions_max {
            resp.api_keys.push(ApiVersion {
                api_key: ApiKey::ApiVersions as i16,
                min_version: 0,
                max_version: max,
                ..Default::default()
            });
        }
        resp
    }

    #[test]
    fn the_client_table_stays_inside_the_codecs_stable_versions() {
        for &api in ApiKey::ALL {
            let codec = api.stable_versions();
            let max = client_max(api);
            assert!(
                codec.min <= max && max <= codec.max,
                "{api:?}: client max {max} outside the codec's stable v{}-{}",
                codec.min,
                codec.max
            );
        }
    }

    #[test]
    fn negotiation_stops_at_the_client_table_not_the_codec() {
        // A broker offering everything the codec knows: the clients still send Kafka 3.9's
        // versions (Produce 11 not 13, Fetch 17 not 18, EndTxn 4 not 5, ApiVersions 4 not 5).
        let resp = ApiVersionsResponse {
            api_keys: ApiKey::ALL
                .iter()
                .map(|&k| ApiVersion {
                    api_key: k as i16,
                    min_version: k.versions().min,
                    max_version: k.versions().max,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        };
        let v = ApiVersions::from_response(&resp);
        for (api, want) in [
            (ApiKey::Produce, 11),
            (ApiKey::Fetch, 17),
            (ApiKey::ListOffsets, 9),
            (ApiKey::EndTxn, 4),
            (ApiKey::TxnOffsetCommit, 4),
            (ApiKey::ApiVersions, 4),
            (ApiKey::InitProducerId, 5),
        ] {
            assert!(
                api.versions().max > want,
                "{api:?}: the codec should know more"
            );
            assert_eq!(v.version_for(api).unwrap(), want, "{api:?}");
        }
        // A broker below the table: the broker's maximum.
        let mut old = resp.clone();
        for k in &mut old.api_keys {
            if k.api_key == ApiKey::Produce as i16 {
                k.max_version = 8;
            }
        }
        let v = ApiVersions::from_response(&old);
        assert_eq!(v.version_for(ApiKey::Produce).unwrap(), 8);
        // A broker whose minimum is above the table: unsupported.
        for k in &mut old.api_keys {
            if k.api_key == ApiKey::Produce as i16 {
                k.min_version = 12;
                k.max_version = 13;
            }
        }
        let v = ApiVersions::from_response(&old);
        assert!(v.version_for(ApiKey::Produce).is_err());
    }

    #[test]
    fn an_unsupported_version_is_retried_at_the_brokers_highest_or_one_less() {
        let r = on_answer(&answer(ErrorCode::UNSUPPORTED_VERSION, Some(2)), 4).unwrap();
        assert_eq!(r, Negotiation::Retry(2));
        let r = on_answer(&answer(ErrorCode::UNSUPPORTED_VERSION, Some(9)), 4).unwrap();
        assert_eq!(r, Negotiation::Retry(3));
        let r = on_answer(&answer(ErrorCode::UNSUPPORTED_VERSION, None), 4).unwrap();
        assert_eq!(r, Negotiation::Retry(3));
    }

    #[test]
    fn a_good_answer_ends_the_handshake_and_other_errors_fail_it() {
        let Negotiation::Done(v) = on_answer(&answer(ErrorCode::NONE, Some(3)), 4).unwrap() else {
            panic!("expected the versions");
        };
        assert_eq!(v.broker_range(ApiKey::ApiVersions as i16), Some((0, 3)));
        assert!(on_answer(&answer(ErrorCode::UNSUPPORTED_VERSION, None), 0).is_err());
        assert!(on_answer(&answer(ErrorCode::UNKNOWN_SERVER_ERROR, None), 4).is_err());
    }
}
