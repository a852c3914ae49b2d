//! The Kafka requests a controller answers on its controller listener: brokers' registrations,
//! heartbeats and AllocateProducerIds, leaders' AlterPartition, the admin requests brokers
//! forward (CreateTopics, DeleteTopics, CreatePartitions, AlterConfigs,
//! IncrementalAlterConfigs, CreateAcls, DeleteAcls, AlterUserScramCredentials,
//! AlterClientQuotas), DescribeQuorum and ApiVersions. The decisions are the
//! controller's ([`super::controller`]); this file decodes, hands each request to the active
//! controller and encodes the answer, or NOT_CONTROLLER (naming no leader: the caller finds
//! it) when this node is not the active controller.

use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::frame;
use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{
    AllocateProducerIdsResponse, AlterConfigsResponse, AlterPartitionResponse, ApiKey,
    ApiVersionsResponse, BrokerHeartbeatResponse, BrokerRegistrationResponse,
    CreatePartitionsResponse, CreateTopicsResponse, DeleteTopicsResponse, DescribeQuorumResponse,
    IncrementalAlterConfigsResponse, RequestBody, ResponseBody, ResponseHeader,
    alter_configs_response, create_partitions_response, create_topics_response,
    delete_topics_response, describe_quorum_response, incremental_alter_configs_response,
};
use kafka_protocol::messages::{
    AlterUserScramCredentialsResponse, CreateAclsResponse, DeleteAclsResponse,
    alter_user_scram_credentials_response, create_acls_response, delete_acls_response,
};

use super::active::ActiveController;
use super::listener::KafkaHandler;
use crate::config::BrokerConfig;

/// What a controller answers on its controller listener.
pub const CONTROLLER_APIS: &[(ApiKey, i16, i16)] = &[
    (ApiKey::ApiVersions, 0, 4),
    (ApiKey::BrokerRegistration, 0, 4),
    (ApiKey::BrokerHeartbeat, 0, 1),
    (ApiKey::AlterPartition, 0, 3),
    (ApiKey::AllocateProducerIds, 0, 0),
    (ApiKey::CreateTopics, 0, 7),
    (ApiKey::DeleteTopics, 0, 6),
    (ApiKey::CreatePartitions, 0, 3),
    (ApiKey::AlterConfigs, 0, 2),
    (ApiKey::IncrementalAlterConfigs, 0, 1),
    (ApiKey::DescribeQuorum, 0, 2),
    (ApiKey::CreateAcls, 0, 3),
    (ApiKey::DeleteAcls, 0, 3),
    (ApiKey::AlterUserScramCredentials, 0, 0),
    (ApiKey::AlterClientQuotas, 0, 1),
    (ApiKey::UpdateFeatures, 0, 1),
];

/// The handler for the controller listener of a controller node.
pub fn handler(active: ActiveController, config: Arc<BrokerConfig>) -> KafkaHandler {
    Arc::new(move |frame: Bytes| {
        let active = active.clone();
        let config = config.clone();
        Box::pin(async move { answer(&active, &config, frame).await })
    })
}

/// The handler of a broker-only node's listener for controllers: nothing to answer.
pub fn refuse_all() -> KafkaHandler {
    Arc::new(|_| Box::pin(async { None }))
}

async fn answer(active: &ActiveController, config: &BrokerConfig, frame: Bytes) -> Option<Bytes> {
    let prefix = frame::peek_request(&frame).ok()?;
    let request = match frame::decode_request(&frame) {
        Ok(r) => r,
        Err(e) => {
            if prefix.api_key == ApiKey::ApiVersions as i16 {
                return encode(
                    prefix.correlation_id,
                    &api_versions(ErrorCode::UNSUPPORTED_VERSION),
                    0,
                );
            }
            tracing::debug!(error = %e, "controller listener: undecodable request; closing");
            return None;
        }
    };
    let version = request.version();
    let key = request.api_key();
    match CONTROLLER_APIS.iter().find(|(k, _, _)| *k == key) {
        Some((_, lo, hi)) if (*lo..=*hi).contains(&version) => {}
        _ if key == ApiKey::ApiVersions => {
            return encode(
                request.header.correlation_id,
                &api_versions(ErrorCode::UNSUPPORTED_VERSION),
                0,
            );
        }
        _ => {
            tracing::debug!(api = ?key, version, "controller listener: not a controller request; closing");
            return None;
        }
    }
    let correlation_id = request.header.correlation_id;
    let body = handle(active, config, request.body, version).await?;
    encode(correlation_id, &body, version)
}

/// Answers one request (also used by a combined node's broker side, which reaches its own
/// controller without a socket).
pub async fn handle(
    active: &ActiveController,
    config: &BrokerConfig,
    body: RequestBody,
    version: i16,
) -> Option<ResponseBody> {
    let refused = refusal(&body);
    let answer = match body {
        RequestBody::ApiVersions(_) => {
            // With the features of this node's image, as Kafka's controllers answer.
            let mut answer = api_versions(ErrorCode::NONE);
            if let ResponseBody::ApiVersions(a) = &mut answer {
                let image = &active.quorum().current().state.image;
                let finalized = crate::features::Finalized {
                    epoch: i64::try_from(image.offset()).unwrap_or(i64::MAX),
                    levels: image.features().map(|(n, l)| (n.to_owned(), l)).collect(),
                };
                let (supported, epoch, levels) =
                    crate::features::api_versions_fields(version, &finalized);
                a.supported_features = supported;
                a.finalized_features_epoch = epoch;
                a.finalized_features = levels;
            }
            return Some(answer);
        }
        RequestBody::DescribeQuorum(_) => {
            return Some(describe_quorum(active, config, version).await);
        }
        RequestBody::BrokerRegistration(r) => active
            .run(move |c, image, now| c.register_broker(image, &r, version, now))
            .await
            .map(ResponseBody::BrokerRegistration),
        RequestBody::BrokerHeartbeat(r) => active
            .run(move |c, image, now| c.heartbeat(image, &r, version, now))
            .await
            .map(ResponseBody::BrokerHeartbeat),
        RequestBody::AlterPartition(r) => active
            .run(move |c, image, _| c.alter_partition(image, &r, version))
            .await
            .map(ResponseBody::AlterPartition),
        RequestBody::AllocateProducerIds(r) => active
            .run(move |c, image, _| c.allocate_producer_ids(image, &r))
            .await
            .map(ResponseBody::AllocateProducerIds),
        RequestBody::CreateTopics(r) => {
            let seed = u64::from_be_bytes(
                crate::topics::random_uuid().0[..8]
                    .try_into()
                    .unwrap_or([0; 8]),
            );
            active
                .run(move |c, image, _| c.create_topics(image, &r, version, seed))
                .await
                .map(ResponseBody::CreateTopics)
        }
        RequestBody::CreatePartitions(r) => {
            let seed = u64::from_be_bytes(
                crate::topics::random_uuid().0[..8]
                    .try_into()
                    .unwrap_or([0; 8]),
            );
            active
                .run(move |c, image, _| c.create_partitions(image, &r, version, seed))
                .await
                .map(ResponseBody::CreatePartitions)
        }
        RequestBody::DeleteTopics(r) => active
            .run(move |c, image, _| c.delete_topics(image, &r, version))
            .await
            .map(ResponseBody::DeleteTopics),
        RequestBody::IncrementalAlterConfigs(r) => active
            .run(move |c, image, _| c.incremental_alter_configs(image, &r, version))
            .await
            .map(ResponseBody::IncrementalAlterConfigs),
        RequestBody::AlterConfigs(r) => active
            .run(move |c, image, _| c.alter_configs(image, &r, version))
            .await
            .map(ResponseBody::AlterConfigs),
        RequestBody::CreateAcls(r) => active
            .run(move |c, image, _| c.create_acls(image, &r))
            .await
            .map(ResponseBody::CreateAcls),
        RequestBody::DeleteAcls(r) => active
            .run(move |c, image, _| c.delete_acls(image, &r))
            .await
            .map(ResponseBody::DeleteAcls),
        RequestBody::AlterUserScramCredentials(r) => active
            .run(move |c, image, _| c.alter_scram_credentials(image, &r))
            .await
            .map(ResponseBody::AlterUserScramCredentials),
        RequestBody::AlterClientQuotas(r) => active
            .run(move |c, image, _| c.alter_client_quotas(image, &r))
            .await
            .map(ResponseBody::AlterClientQuotas),
        RequestBody::UpdateFeatures(r) => active
            .run(move |c, image, _| c.update_features(image, &r, version))
            .await
            .map(ResponseBody::UpdateFeatures),
        _ => return None,
    };
    Some(
        answer
            .unwrap_or_else(|_| refused.unwrap_or_else(|| api_versions(ErrorCode::NOT_CONTROLLER))),
    )
}

fn encode(correlation_id: i32, body: &ResponseBody, version: i16) -> Option<Bytes> {
    let header = ResponseHeader {
        correlation_id,
        ..Default::default()
    };
    match frame::encode_response(&header, body, version) {
        Ok(w) => Some(BytesMut::from(&w.into_bytes()[..]).freeze()),
        Err(e) => {
            tracing::error!(error = %e, api = ?body.api_key(), version, "cannot encode a controller response");
            None
        }
    }
}

fn api_versions(error: ErrorCode) -> ResponseBody {
    ResponseBody::ApiVersions(ApiVersionsResponse {
        error_code: error.code(),
        api_keys: CONTROLLER_APIS
            .iter()
            .filter(|(k, _, _)| error == ErrorCode::NONE || *k == ApiKey::ApiVersions)
            .map(|(k, lo, hi)| ApiVersion {
                api_key: *k as i16,
                min_version: *lo,
                max_version: *hi,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    })
}

fn not_controller_message() -> Option<KStr> {
    Some(KStr::from_static("this node is not the active controller"))
}

/// The NOT_CONTROLLER answer to a request, shaped like its response (every topic or
/// resource of the request named with the error).
pub fn refusal(body: &RequestBody) -> Option<ResponseBody> {
    let code = ErrorCode::NOT_CONTROLLER.code();
    Some(match body {
        RequestBody::BrokerRegistration(_) => {
            ResponseBody::BrokerRegistration(BrokerRegistrationResponse {
                error_code: code,
                broker_epoch: -1,
                ..Default::default()
            })
        }
        RequestBody::BrokerHeartbeat(_) => ResponseBody::BrokerHeartbeat(BrokerHeartbeatResponse {
            error_code: code,
            is_fenced: true,
            ..Default::default()
        }),
        RequestBody::AlterPartition(_) => ResponseBody::AlterPartition(AlterPartitionResponse {
            error_code: code,
            ..Default::default()
        }),
        RequestBody::AllocateProducerIds(_) => {
            ResponseBody::AllocateProducerIds(AllocateProducerIdsResponse {
                error_code: code,
                producer_id_start: -1,
                ..Default::default()
            })
        }
        RequestBody::CreateTopics(r) => ResponseBody::CreateTopics(CreateTopicsResponse {
            topics: r
                .topics
                .iter()
                .map(|t| create_topics_response::CreatableTopicResult {
                    name: t.name.clone(),
                    error_code: code,
                    error_message: not_controller_message(),
                    num_partitions: -1,
                    replication_factor: -1,
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }),
        RequestBody::DeleteTopics(r) => ResponseBody::DeleteTopics(DeleteTopicsResponse {
            responses: r
                .topic_names
                .iter()
                .map(|n| delete_topics_response::DeletableTopicResult {
                    name: Some(n.clone()),
                    error_code: code,
                    error_message: not_controller_message(),
                    ..Default::default()
                })
                .chain(
                    r.topics
                        .iter()
                        .map(|t| delete_topics_response::DeletableTopicResult {
                            name: t.name.clone(),
                            topic_id: t.topic_id,
                            error_code: code,
                            error_message: not_controller_message(),
                            ..Default::default()
                        }),
                )
                .collect(),
            ..Default::default()
        }),
        RequestBody::CreatePartitions(r) => {
            ResponseBody::CreatePartitions(CreatePartitionsResponse {
                results: r
                    .topics
                    .iter()
                    .map(
                        |t| create_partitions_response::CreatePartitionsTopicResult {
                            name: t.name.clone(),
                            error_code: code,
                            error_message: not_controller_message(),
                            ..Default::default()
                        },
                    )
                    .collect(),
                ..Default::default()
            })
        }
        RequestBody::IncrementalAlterConfigs(r) => {
            ResponseBody::IncrementalAlterConfigs(IncrementalAlterConfigsResponse {
                responses: r
                    .resources
                    .iter()
                    .map(
                        |res| incremental_alter_configs_response::AlterConfigsResourceResponse {
                            error_code: code,
                            error_message: not_controller_message(),
                            resource_type: res.resource_type,
                            resource_name: res.resource_name.clone(),
                            ..Default::default()
                        },
                    )
                    .collect(),
                ..Default::default()
            })
        }
        RequestBody::AlterConfigs(r) => ResponseBody::AlterConfigs(AlterConfigsResponse {
            responses: r
                .resources
                .iter()
                .map(|res| alter_configs_response::AlterConfigsResourceResponse {
                    error_code: code,
                    error_message: not_controller_message(),
                    resource_type: res.resource_type,
                    resource_name: res.resource_name.clone(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }),
        RequestBody::DescribeQuorum(_) => ResponseBody::DescribeQuorum(DescribeQuorumResponse {
            error_code: code,
            error_message: not_controller_message(),
            ..Default::default()
        }),
        RequestBody::CreateAcls(r) => ResponseBody::CreateAcls(CreateAclsResponse {
            results: r
                .creations
                .iter()
                .map(|_| create_acls_response::AclCreationResult {
                    error_code: code,
                    error_message: not_controller_message(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }),
        RequestBody::DeleteAcls(r) => ResponseBody::DeleteAcls(DeleteAclsResponse {
            filter_results: r
                .filters
                .iter()
                .map(|_| delete_acls_response::DeleteAclsFilterResult {
                    error_code: code,
                    error_message: not_controller_message(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }),
        RequestBody::AlterUserScramCredentials(r) => {
            let mut users: Vec<&KStr> = r
                .deletions
                .iter()
                .map(|d| &d.name)
                .chain(r.upsertions.iter().map(|u| &u.name))
                .collect();
            users.sort();
            users.dedup();
            ResponseBody::AlterUserScramCredentials(AlterUserScramCredentialsResponse {
                results: users
                    .into_iter()
                    .map(|user| {
                        alter_user_scram_credentials_response::AlterUserScramCredentialsResult {
                            user: user.clone(),
                            error_code: code,
                            error_message: not_controller_message(),
                            ..Default::default()
                        }
                    })
                    .collect(),
                ..Default::default()
            })
        }
        RequestBody::AlterClientQuotas(r) => {
            let message = not_controller_message().map(|m| m.to_string());
            let results = vec![(ErrorCode::NOT_CONTROLLER, message); r.entries.len()];
            ResponseBody::AlterClientQuotas(crate::quotas::alter_response(r, results))
        }
        RequestBody::UpdateFeatures(_) => ResponseBody::UpdateFeatures(crate::features::refused(
            ErrorCode::NOT_CONTROLLER,
            "this node is not the active controller",
        )),
        _ => return None,
    })
}

/// Whether an answer says the node asked is not the active controller (anywhere in it).
pub fn is_not_controller(body: &ResponseBody) -> bool {
    let code = ErrorCode::NOT_CONTROLLER.code();
    match body {
        ResponseBody::BrokerRegistration(r) => r.error_code == code,
        ResponseBody::BrokerHeartbeat(r) => r.error_code == code,
        ResponseBody::AlterPartition(r) => r.error_code == code,
        ResponseBody::AllocateProducerIds(r) => r.error_code == code,
        ResponseBody::CreateTopics(r) => r.topics.iter().any(|t| t.error_code == code),
        ResponseBody::DeleteTopics(r) => r.responses.iter().any(|t| t.error_code == code),
        ResponseBody::CreatePartitions(r) => r.results.iter().any(|t| t.error_code == code),
        ResponseBody::IncrementalAlterConfigs(r) => {
            r.responses.iter().any(|t| t.error_code == code)
        }
        ResponseBody::AlterConfigs(r) => r.responses.iter().any(|t| t.error_code == code),
        ResponseBody::DescribeQuorum(r) => r.error_code == code,
        ResponseBody::CreateAcls(r) => r.results.iter().any(|t| t.error_code == code),
        ResponseBody::DeleteAcls(r) => r.filter_results.iter().any(|t| t.error_code == code),
        ResponseBody::AlterUserScramCredentials(r) => {
            r.results.iter().any(|t| t.error_code == code)
        }
        ResponseBody::AlterClientQuotas(r) => r.entries.iter().any(|t| t.error_code == code),
        ResponseBody::UpdateFeatures(r) => r.error_code == code,
        _ => false,
    }
}

/// DescribeQuorum from the leader: `__cluster_metadata`-0 with the voters' progress, and
/// (v2+, which alone carries them) the voters' endpoints.
async fn describe_quorum(
    active: &ActiveController,
    config: &BrokerConfig,
    version: i16,
) -> ResponseBody {
    let quorum = active.quorum();
    let Some(status) = quorum.status().await else {
        return refusal(&RequestBody::DescribeQuorum(Default::default()))
            .unwrap_or_else(|| api_versions(ErrorCode::NOT_CONTROLLER));
    };
    if status.leader != Some(quorum.id()) {
        return refusal(&RequestBody::DescribeQuorum(Default::default()))
            .unwrap_or_else(|| api_versions(ErrorCode::NOT_CONTROLLER));
    }
    let now = active.now_ms();
    let voters = status
        .progress
        .iter()
        .map(|&(id, matched)| describe_quorum_response::ReplicaState {
            replica_id: id as i32,
            log_end_offset: if id == quorum.id() {
                status.last_index as i64
            } else {
                matched as i64
            },
            last_fetch_timestamp: if id == quorum.id() { now } else { -1 },
            last_caught_up_timestamp: if matched >= status.commit || id == quorum.id() {
                now
            } else {
                -1
            },
            ..Default::default()
        })
        .collect();
    let image = &quorum.current().state.image;
    let voter_ids: Vec<i32> = status.progress.iter().map(|&(id, _)| id as i32).collect();
    let observers = image
        .brokers()
        .filter(|b| !voter_ids.contains(&b.id))
        .map(|b| describe_quorum_response::ReplicaState {
            replica_id: b.id,
            log_end_offset: -1,
            last_fetch_timestamp: -1,
            last_caught_up_timestamp: -1,
            ..Default::default()
        })
        .collect();
    let listener = config
        .network
        .controller_listener_names
        .first()
        .cloned()
        .unwrap_or_else(|| "CONTROLLER".into());
    // Versions 0 and 1 cannot carry the endpoints (a field that is not ignorable).
    let nodes = if version >= 2 {
        config
            .quorum
            .voters
            .iter()
            .map(|v| describe_quorum_response::Node {
                node_id: v.id,
                listeners: vec![describe_quorum_response::Listener {
                    name: KStr::from(listener.clone()),
                    host: KStr::from(v.host.clone()),
                    port: v.port,
                    ..Default::default()
                }],
                ..Default::default()
            })
            .collect()
    } else {
        Vec::new()
    };
    ResponseBody::DescribeQuorum(DescribeQuorumResponse {
        topics: vec![describe_quorum_response::TopicData {
            topic_name: KStr::from_static("__cluster_metadata"),
            partitions: vec![describe_quorum_response::PartitionData {
                partition_index: 0,
                leader_id: quorum.id() as i32,
                leader_epoch: i32::try_from(status.term).unwrap_or(i32::MAX),
                high_watermark: status.commit as i64,
                current_voters: voters,
                observers,
                ..Default::default()
            }],
            ..Default::default()
        }],
        nodes,
        ..Default::default()
    })
}
