//! What a broker of a cluster answers differently from a single node: Metadata and
//! DescribeCluster come from the metadata image; the requests for the controller
//! (CreateTopics, DeleteTopics, CreatePartitions, AlterConfigs, IncrementalAlterConfigs,
//! DescribeQuorum, CreateAcls, DeleteAcls, AlterUserScramCredentials, AlterClientQuotas) are
//! authorized here (`screen.rs`, and the single node's whole-request checks), forwarded to the
//! active controller and its answer relayed, once this broker's image shows the change (so
//! the client's next Metadata, Describe or login here sees it).

use std::time::Duration;

use kafka_auth::acl::{AclOperation, ResourceType};
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::create_topics_request::{CreatableTopic, CreatableTopicConfig};
use kafka_protocol::messages::describe_cluster_response::DescribeClusterBroker;
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::{
    CreateTopicsRequest, DescribeClusterRequest, DescribeClusterResponse, FindCoordinatorRequest,
    MetadataRequest, MetadataResponse, RequestBody, ResponseBody,
};
use kafka_protocol::{KStr, Uuid};

mod screen;

use super::authorized;
use super::context::RequestContext;
use super::groups::CoordinatorNode;
use crate::cluster::ClusterLink;
use crate::cluster::image::{MetadataImage, TopicImage};
use crate::coordinator::OFFSETS_TOPIC;
use crate::node::Broker;

/// How long a forwarded request may take, retries over controllers included.
const FORWARD_TIMEOUT: Duration = Duration::from_secs(30);
/// How long the answer waits for this broker's image to show what the controller did.
const CATCH_UP: Duration = Duration::from_secs(5);

/// Answers `body` if a cluster answers it differently; `None`: the single node's handler.
/// Metadata, DescribeCluster and FindCoordinator give endpoints on the listener of `ctx`.
pub(super) async fn handle(
    broker: &Broker,
    link: &ClusterLink,
    ctx: &RequestContext<'_>,
    body: &RequestBody,
    version: i16,
) -> Option<ResponseBody> {
    let listener = ctx.listener();
    match body {
        RequestBody::Metadata(r) => {
            let authz = super::authz::Authz::new(broker, ctx);
            Some(metadata(broker, link, &authz, r, version, listener).await)
        }
        RequestBody::DescribeCluster(r) => Some(describe_cluster(link, r, listener)),
        RequestBody::FindCoordinator(r) => {
            let authz = super::authz::Authz::new(broker, ctx);
            Some(find_coordinator(broker, link, &authz, r.clone(), version, listener).await)
        }
        RequestBody::CreateTopics(_)
        | RequestBody::DeleteTopics(_)
        | RequestBody::CreatePartitions(_)
        | RequestBody::AlterConfigs(_)
        | RequestBody::IncrementalAlterConfigs(_)
        | RequestBody::DescribeQuorum(_) => {
            // Authorized here, item by item, before anything leaves the broker.
            let authz = super::authz::Authz::new(broker, ctx);
            let current = link.current();
            match screen::screen(&authz, &current.state.image, body.clone(), version) {
                screen::Screened::Answer(answer) => Some(answer),
                screen::Screened::Forward { body, refused } => {
                    let answer = forward(link, body, version).await;
                    Some(screen::merge(&authz, refused, answer, version))
                }
            }
        }
        // Security metadata: refused here as the single node refuses the whole request
        // (no authorizer, no ALTER / ALTER_CONFIGS on the cluster), else decided by the
        // controller; the Describe requests are answered from this node's copy of the image.
        RequestBody::CreateAcls(r) => {
            let authz = super::authz::Authz::new(broker, ctx);
            match super::acls::refuse_create(broker, &authz, r) {
                Some(refused) => Some(refused),
                None => Some(forward_security(broker, link, body.clone(), version).await),
            }
        }
        RequestBody::DeleteAcls(r) => {
            let authz = super::authz::Authz::new(broker, ctx);
            match super::acls::refuse_delete(broker, &authz, r) {
                Some(refused) => Some(refused),
                None => Some(forward_security(broker, link, body.clone(), version).await),
            }
        }
        RequestBody::AlterUserScramCredentials(r) => {
            let authz = super::authz::Authz::new(broker, ctx);
            match super::scram::refuse_alter(&authz, r) {
                Some(refused) => Some(refused),
                None => Some(forward_security(broker, link, body.clone(), version).await),
            }
        }
        RequestBody::AlterClientQuotas(r) => {
            let authz = super::authz::Authz::new(broker, ctx);
            match super::quotas::refuse_alter(&authz, r) {
                Some(refused) => Some(refused),
                None => Some(forward_security(broker, link, body.clone(), version).await),
            }
        }
        RequestBody::UpdateFeatures(r) => {
            let authz = super::authz::Authz::new(broker, ctx);
            if let Some(refused) = super::features::refuse_update(&authz) {
                return Some(refused);
            }
            let before = link.current().state.image.offset();
            let answer = forward(link, body.clone(), version).await;
            let changed = matches!(&answer, ResponseBody::UpdateFeatures(a) if a.error_code == 0);
            if changed && !r.validate_only {
                // The client's next ApiVersions here shows the new levels.
                let want: Vec<(String, i16)> = r
                    .feature_updates
                    .iter()
                    .map(|u| (u.feature.to_string(), u.max_version_level.max(0)))
                    .collect();
                // Every accepted update is a record (the same level too): the image moves past
                // the offset seen before forwarding.
                link.wait_for(CATCH_UP, |s| {
                    s.image.offset() > before
                        && want.iter().all(|(name, level)| {
                            let now = s.image.features().find(|(n, _)| n == name);
                            now.map_or(0, |(_, l)| l) == *level
                        })
                })
                .await;
                let image = &link.current().state.image;
                broker
                    .features
                    .follow_image(image.offset(), image.features());
            }
            Some(answer)
        }
        _ => None,
    }
}

/// Forwards an ACL, SCRAM or quota change to the controller, then waits (bounded) until this
/// broker's image shows what the controller did and hands it to the node, so that the
/// client's next Describe here, or its next login or request, sees the change.
async fn forward_security(
    broker: &Broker,
    link: &ClusterLink,
    body: RequestBody,
    version: i16,
) -> ResponseBody {
    let answer = forward(link, body.clone(), version).await;
    let shown: Box<dyn Fn(&MetadataImage) -> bool + Send + Sync> = match (&body, &answer) {
        (RequestBody::CreateAcls(req), ResponseBody::CreateAcls(res)) => {
            let created: Vec<_> = req
                .creations
                .iter()
                .zip(&res.results)
                .filter(|(_, r)| r.error_code == 0)
                .map(|(c, _)| crate::acls::creation_binding(c))
                .collect();
            Box::new(move |image| created.iter().all(|b| image.acl_id(b).is_some()))
        }
        (RequestBody::DeleteAcls(_), ResponseBody::DeleteAcls(res)) => {
            let removed: Vec<_> = res
                .filter_results
                .iter()
                .filter(|f| f.error_code == 0)
                .flat_map(|f| &f.matching_acls)
                .map(|m| {
                    crate::acls::creation_binding(
                        &kafka_protocol::messages::create_acls_request::AclCreation {
                            resource_type: m.resource_type,
                            resource_name: m.resource_name.clone(),
                            resource_pattern_type: m.pattern_type,
                            principal: m.principal.clone(),
                            host: m.host.clone(),
                            operation: m.operation,
                            permission_type: m.permission_type,
                            ..Default::default()
                        },
                    )
                })
                .collect();
            Box::new(move |image| removed.iter().all(|b| image.acl_id(b).is_none()))
        }
        (
            RequestBody::AlterUserScramCredentials(req),
            ResponseBody::AlterUserScramCredentials(res),
        ) => {
            let done: Vec<String> = res
                .results
                .iter()
                .filter(|r| r.error_code == 0)
                .map(|r| r.user.to_string())
                .collect();
            let want: Vec<((kafka_auth::sasl::ScramMechanism, String), Option<i32>)> = req
                .deletions
                .iter()
                .map(|d| (d.name.to_string(), d.mechanism, None))
                .chain(
                    req.upsertions
                        .iter()
                        .map(|u| (u.name.to_string(), u.mechanism, Some(u.iterations))),
                )
                .filter(|(user, _, _)| done.contains(user))
                .filter_map(|(user, m, it)| {
                    Some((
                        (kafka_auth::sasl::ScramMechanism::from_type_id(m)?, user),
                        it,
                    ))
                })
                .collect();
            Box::new(move |image| {
                want.iter().all(|(key, iterations)| {
                    let held = image.scram_credentials().get(key);
                    match iterations {
                        None => held.is_none(),
                        Some(i) => held.is_some_and(|c| i64::from(c.iterations) == i64::from(*i)),
                    }
                })
            })
        }
        (RequestBody::AlterClientQuotas(req), ResponseBody::AlterClientQuotas(res))
            if !req.validate_only =>
        {
            let entries = crate::quotas::alter_entries(req);
            let want: Vec<(
                crate::quota::QuotaEntity,
                crate::quota::QuotaKey,
                Option<f64>,
            )> = entries
                .iter()
                .zip(&res.entries)
                .filter(|(_, r)| r.error_code == 0)
                .filter_map(|(e, _)| {
                    crate::quota::QuotaEntity::from_entries(
                        e.entity.iter().map(|(t, n)| (t.as_str(), n.as_deref())),
                    )
                    .ok()
                    .map(|entity| (entity, e))
                })
                .flat_map(|(entity, e)| {
                    e.ops.iter().filter_map(move |(k, v)| {
                        Some((entity.clone(), crate::quota::QuotaKey::parse(k)?, *v))
                    })
                })
                .collect();
            Box::new(move |image| {
                want.iter()
                    .all(|(entity, key, v)| image.quotas().value(entity, *key) == *v)
            })
        }
        _ => Box::new(|_| true),
    };
    link.wait_for(CATCH_UP, |s| shown(&s.image)).await;
    crate::node::publish::follow_security(broker, &link.current().state.image);
    answer
}

async fn forward(link: &ClusterLink, body: RequestBody, version: i16) -> ResponseBody {
    let before = link.current().offset;
    let answer = match link
        .client
        .send(body.clone(), version, FORWARD_TIMEOUT)
        .await
    {
        Ok(a) => a,
        Err(e) => {
            tracing::warn!(error = %e, "a request for the controller was not answered");
            return crate::cluster::api::refusal(&body)
                .unwrap_or_else(|| ResponseBody::DescribeQuorum(Default::default()));
        }
    };
    // Wait until the image here shows the change (best effort, bounded).
    match &answer {
        ResponseBody::CreateTopics(r) => {
            let created: Vec<String> = r
                .topics
                .iter()
                .filter(|t| t.error_code == 0)
                .map(|t| t.name.to_string())
                .collect();
            if !validate_only(&body) && !created.is_empty() {
                link.wait_for(CATCH_UP, |s| {
                    created.iter().all(|n| s.image.topic(n).is_some())
                })
                .await;
            }
        }
        ResponseBody::DeleteTopics(r) => {
            let deleted: Vec<(Option<String>, Uuid)> = r
                .responses
                .iter()
                .filter(|t| t.error_code == 0)
                .map(|t| (t.name.as_ref().map(ToString::to_string), t.topic_id))
                .collect();
            if !deleted.is_empty() {
                link.wait_for(CATCH_UP, |s| {
                    deleted.iter().all(|(name, id)| match name {
                        Some(n) => s.image.topic(n).is_none(),
                        None => s.image.topic_by_id(id).is_none(),
                    })
                })
                .await;
            }
        }
        ResponseBody::IncrementalAlterConfigs(r)
            if r.responses.iter().any(|c| c.error_code == 0) && !validate_only(&body) =>
        {
            // A config change commits an entry: wait until this broker has applied one more.
            let mut rx = link.state.clone();
            let _ = tokio::time::timeout(CATCH_UP, rx.wait_for(|s| s.offset > before)).await;
        }
        ResponseBody::AlterConfigs(r)
            if r.responses.iter().any(|c| c.error_code == 0) && !validate_only(&body) =>
        {
            let mut rx = link.state.clone();
            let _ = tokio::time::timeout(CATCH_UP, rx.wait_for(|s| s.offset > before)).await;
        }
        _ => {}
    }
    answer
}

fn validate_only(body: &RequestBody) -> bool {
    match body {
        RequestBody::CreateTopics(r) => r.validate_only,
        RequestBody::CreatePartitions(r) => r.validate_only,
        RequestBody::AlterConfigs(r) => r.validate_only,
        RequestBody::IncrementalAlterConfigs(r) => r.validate_only,
        _ => false,
    }
}

fn broker_list(image: &MetadataImage, listener: &str) -> Vec<(i32, String, i32, Option<String>)> {
    image
        .brokers()
        .filter_map(|b| image.endpoint(b.id, listener))
        .map(|e| (e.node_id, e.host, i32::from(e.port), e.rack))
        .collect()
}

/// The node clients should send controller requests to: this broker, which forwards them
/// (as Kafka's brokers name a live broker, never a controller, in KRaft mode). Naming the
/// active controller instead would send clients to a node that may have just died: the
/// metadata names the old leader until the quorum elects a new one.
fn controller_for_clients(link: &ClusterLink) -> i32 {
    link.node_id
}

async fn metadata(
    broker: &Broker,
    link: &ClusterLink,
    authz: &super::authz::Authz<'_>,
    req: &MetadataRequest,
    version: i16,
    listener: &str,
) -> ResponseBody {
    let auto_create =
        broker.config.topics.auto_create && (version < 4 || req.allow_auto_topic_creation);
    // Unknown topics asked for by name are created first, when allowed.
    if auto_create {
        if let Some(list) = &req.topics {
            let missing: Vec<KStr> = {
                let s = link.current();
                list.iter()
                    .filter_map(|t| t.name.clone())
                    .filter(|n| s.state.image.topic(n).is_none())
                    .filter(|n| crate::topics::validate_topic_name(n).is_ok())
                    .collect()
            };
            // Auto-creation is a CreateTopics: CREATE on the cluster or on the topic.
            let on_cluster = !missing.is_empty() && authz.cluster(AclOperation::Create);
            let missing: Vec<KStr> = missing
                .into_iter()
                .filter(|n| on_cluster || authz.topic(AclOperation::Create, n))
                .collect();
            if !missing.is_empty() {
                auto_create_topics(link, missing).await;
            }
        }
    }
    let state = link.current();
    let image = &state.state.image;
    let brokers = broker_list(image, listener);
    // Authorization as on a single node (handler/metadata.rs): DESCRIBE to see a topic; all
    // topics: the others left out; by name: TOPIC_AUTHORIZATION_FAILED without the id,
    // whether it exists or not; by id: TOPIC_AUTHORIZATION_FAILED with the id, no name.
    let visible = |t: &TopicImage| authz.topic(AclOperation::Describe, &t.name);
    let all = || -> Vec<(MetadataResponseTopic, bool)> {
        image
            .topics()
            .filter(|t| visible(t))
            .map(|t| (describe(image, t), false))
            .collect()
    };
    let topics: Vec<(MetadataResponseTopic, bool)> = match &req.topics {
        None => all(),
        Some(t) if t.is_empty() && version == 0 => all(),
        Some(list) => list
            .iter()
            .map(|t| {
                if let Some(name) = &t.name
                    && !authz.topic(AclOperation::Describe, name)
                {
                    return (
                        super::metadata::refused(Some(name.clone()), Uuid::ZERO, false),
                        true,
                    );
                }
                let found = match &t.name {
                    Some(name) => image.topic(name),
                    None => image.topic_by_id(&t.topic_id),
                };
                match found {
                    Some(topic) if visible(topic) => (describe(image, topic), false),
                    Some(topic) => (
                        super::metadata::refused(
                            (version < 12).then(|| KStr::from_static("")),
                            topic.id,
                            false,
                        ),
                        true,
                    ),
                    None => (
                        MetadataResponseTopic {
                            error_code: if t.name.is_some() {
                                ErrorCode::UNKNOWN_TOPIC_OR_PARTITION.code()
                            } else {
                                ErrorCode::UNKNOWN_TOPIC_ID.code()
                            },
                            name: t
                                .name
                                .clone()
                                .or_else(|| (version < 12).then(|| KStr::from_static(""))),
                            topic_id: t.topic_id,
                            ..Default::default()
                        },
                        true,
                    ),
                }
            })
            .collect(),
    };
    let topic_ops = version >= 8 && req.include_topic_authorized_operations;
    let topics: Vec<MetadataResponseTopic> = topics
        .into_iter()
        .map(|(mut t, refused)| {
            t.topic_authorized_operations = if !topic_ops {
                authorized::answer(false, authorized::TOPIC)
            } else if refused {
                0
            } else {
                authz.operations(ResourceType::Topic, t.name.as_deref().unwrap_or(""))
            };
            t
        })
        .collect();
    let cluster_authorized_operations =
        if (8..=10).contains(&version) && req.include_cluster_authorized_operations {
            if authz.cluster(AclOperation::Describe) {
                authz.operations(ResourceType::Cluster, super::authz::CLUSTER)
            } else {
                0
            }
        } else {
            authorized::answer(false, authorized::CLUSTER)
        };
    ResponseBody::Metadata(MetadataResponse {
        cluster_authorized_operations,
        controller_id: controller_for_clients(link),
        brokers: brokers
            .into_iter()
            .map(|(node_id, host, port, rack)| MetadataResponseBroker {
                node_id,
                host: KStr::from(host),
                port,
                rack: rack.map(KStr::from),
                ..Default::default()
            })
            .collect(),
        cluster_id: state.state.cluster_id.clone().map(KStr::from),
        topics,
        ..Default::default()
    })
}

/// Asks the controller to create `names` with the defaults (as a Metadata request with
/// auto-creation does) and waits a little for them to appear here.
async fn auto_create_topics(link: &ClusterLink, names: Vec<KStr>) {
    let topics = names
        .into_iter()
        .map(|name| CreatableTopic {
            name,
            num_partitions: -1,
            replication_factor: -1,
            ..Default::default()
        })
        .collect();
    create_for_clients(link, topics, "auto-creation").await;
}

/// Topics this broker creates on a client's behalf (auto-creation, `__consumer_offsets`):
/// sent to the controller, refusals other than TOPIC_ALREADY_EXISTS logged, then a bounded
/// wait until this broker's image has them.
async fn create_for_clients(link: &ClusterLink, topics: Vec<CreatableTopic>, what: &str) {
    let names: Vec<String> = topics.iter().map(|t| t.name.to_string()).collect();
    let req = CreateTopicsRequest {
        topics,
        timeout_ms: 5_000,
        ..Default::default()
    };
    match link
        .client
        .send(RequestBody::CreateTopics(req), 5, Duration::from_secs(5))
        .await
    {
        Ok(ResponseBody::CreateTopics(r)) => {
            for t in &r.topics {
                if t.error_code == 0 {
                    tracing::info!(topic = %t.name, partitions = t.num_partitions,
                        replication_factor = t.replication_factor, "{what}: created");
                } else if t.error_code != ErrorCode::TOPIC_ALREADY_EXISTS.code() {
                    tracing::info!(topic = %t.name, error = ?ErrorCode::from(t.error_code),
                        message = ?t.error_message, "{what}: refused");
                }
            }
        }
        other => tracing::debug!(answer = ?other.err(), "{what}: not answered"),
    }
    link.wait_for(CATCH_UP, |s| {
        names.iter().all(|n| s.image.topic(n).is_some())
    })
    .await;
}

fn describe(image: &MetadataImage, topic: &TopicImage) -> MetadataResponseTopic {
    let alive = |id: i32| image.broker(id).is_some_and(|b| !b.fenced);
    MetadataResponseTopic {
        error_code: 0,
        name: Some(KStr::from(topic.name.clone())),
        topic_id: topic.id,
        is_internal: crate::topics::is_internal(&topic.name),
        partitions: topic
            .partitions
            .iter()
            .map(|(&index, p)| MetadataResponsePartition {
                error_code: if p.leader < 0 {
                    ErrorCode::LEADER_NOT_AVAILABLE.code()
                } else {
                    0
                },
                partition_index: index,
                leader_id: p.leader,
                leader_epoch: p.leader_epoch,
                replica_nodes: p.replicas.clone(),
                isr_nodes: p.isr.clone(),
                offline_replicas: p.replicas.iter().copied().filter(|&r| !alive(r)).collect(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    }
}

/// FindCoordinator from the image: a group's coordinator is the leader of its
/// `__consumer_offsets` partition, a transactional id's the leader of its
/// `__transaction_state` partition. The first request of a kind creates its topic through the
/// controller and is answered COORDINATOR_NOT_AVAILABLE meanwhile, as Kafka does; clients ask
/// again. `__consumer_offsets`: `offsets.topic.num.partitions`, replication factor
/// `offsets.topic.replication.factor`; `__transaction_state`:
/// `transaction.state.log.num.partitions`, `transaction.state.log.replication.factor`,
/// `min.insync.replicas` from `transaction.state.log.min.isr`. Both compacted, the replication
/// factor capped at the live brokers (and the minimum ISR at it).
async fn find_coordinator(
    broker: &Broker,
    link: &ClusterLink,
    authz: &super::authz::Authz<'_>,
    req: FindCoordinatorRequest,
    version: i16,
    listener: &str,
) -> ResponseBody {
    let key_type = if version >= 1 {
        req.key_type
    } else {
        super::groups::KEY_TYPE_GROUP
    };
    let internal = internal_topic(broker, key_type);
    if let Some(t) = &internal
        && link.current().state.image.topic(t.name).is_none()
    {
        create_internal_topic(link, t).await;
    }
    let state = link.current();
    let image = &state.state.image;
    let locate = |key: &KStr, key_type: i8| -> Result<CoordinatorNode, (ErrorCode, String)> {
        super::groups::group_key(key, key_type)?;
        let unavailable = |why: String| (ErrorCode::COORDINATOR_NOT_AVAILABLE, why);
        let Some(t) = internal_topic(broker, key_type) else {
            return Err((
                ErrorCode::INVALID_REQUEST,
                format!("unknown coordinator key type {key_type}"),
            ));
        };
        let name = t.name;
        let topic = image
            .topic(name)
            .ok_or_else(|| unavailable(format!("{name} is being created")))?;
        let p = crate::group::partition_for(key, t.partitions);
        let leader = topic
            .partitions
            .get(&p)
            .map(|part| part.leader)
            .filter(|&l| l >= 0)
            .ok_or_else(|| unavailable(format!("{name}-{p} has no leader")))?;
        let e = image.endpoint(leader, listener).ok_or_else(|| {
            unavailable(format!(
                "the leader of {name}-{p}, broker {leader}, is not live or has no {listener} \
                 listener"
            ))
        })?;
        Ok(CoordinatorNode {
            node_id: leader,
            host: e.host.clone(),
            port: i32::from(e.port),
        })
    };
    super::groups::find_coordinator_with(&locate, authz, req, version)
}

/// A coordinator's internal topic as it is created.
struct InternalTopic {
    name: &'static str,
    partitions: i32,
    replication_factor: i16,
    /// `min.insync.replicas`, when the topic sets it.
    min_isr: Option<i32>,
    segment_bytes: u64,
}

fn internal_topic(broker: &Broker, key_type: i8) -> Option<InternalTopic> {
    match key_type {
        super::groups::KEY_TYPE_GROUP => Some(InternalTopic {
            name: OFFSETS_TOPIC,
            partitions: broker.groups.config().offsets_topic_num_partitions,
            replication_factor: broker.config.group.offsets_topic_replication_factor,
            min_isr: None,
            segment_bytes: broker.config.group.offsets_topic_segment_bytes,
        }),
        super::groups::KEY_TYPE_TRANSACTION => {
            let t = broker.txn.config();
            Some(InternalTopic {
                name: crate::txn::TRANSACTION_STATE_TOPIC,
                partitions: t.num_partitions,
                replication_factor: t.replication_factor,
                min_isr: Some(t.min_isr),
                segment_bytes: t.segment_bytes,
            })
        }
        _ => None,
    }
}

async fn create_internal_topic(link: &ClusterLink, t: &InternalTopic) {
    let live = link
        .current()
        .state
        .image
        .brokers()
        .filter(|b| !b.fenced)
        .count();
    let rf = i16::try_from(live)
        .unwrap_or(i16::MAX)
        .min(t.replication_factor)
        .max(1);
    let mut configs = vec![
        ("cleanup.policy", "compact".to_owned()),
        ("segment.bytes", t.segment_bytes.to_string()),
    ];
    if let Some(min_isr) = t.min_isr {
        configs.push((
            "min.insync.replicas",
            min_isr.min(i32::from(rf)).to_string(),
        ));
    }
    let topic = CreatableTopic {
        name: KStr::from_static(t.name),
        num_partitions: t.partitions,
        replication_factor: rf,
        configs: configs
            .into_iter()
            .map(|(k, v)| CreatableTopicConfig {
                name: KStr::from_static(k),
                value: Some(KStr::from(v)),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    let why = format!("the first coordinator lookup's {}", t.name);
    create_for_clients(link, vec![topic], &why).await;
}

/// DescribeCluster v1's endpoint type of controllers.
const ENDPOINT_CONTROLLERS: i8 = 2;

fn describe_cluster(
    link: &ClusterLink,
    req: &DescribeClusterRequest,
    listener: &str,
) -> ResponseBody {
    let state = link.current();
    let image = &state.state.image;
    let brokers = broker_list(image, listener);
    if req.endpoint_type == ENDPOINT_CONTROLLERS {
        // Brokers do not answer for the controllers (Kafka: UNSUPPORTED_VERSION there).
        return ResponseBody::DescribeCluster(DescribeClusterResponse {
            error_code: ErrorCode::UNSUPPORTED_VERSION.code(),
            error_message: Some(KStr::from_static(
                "ask a controller for its endpoints; brokers describe brokers",
            )),
            endpoint_type: req.endpoint_type,
            ..Default::default()
        });
    }
    ResponseBody::DescribeCluster(DescribeClusterResponse {
        cluster_id: KStr::from(state.state.cluster_id.clone().unwrap_or_default()),
        controller_id: controller_for_clients(link),
        endpoint_type: req.endpoint_type,
        brokers: brokers
            .into_iter()
            .map(|(broker_id, host, port, rack)| DescribeClusterBroker {
                broker_id,
                host: KStr::from(host),
                port,
                rack: rack.map(KStr::from),
                ..Default::default()
            })
            .collect(),
        cluster_authorized_operations: authorized::answer(
            req.include_cluster_authorized_operations,
            authorized::CLUSTER,
        ),
        ..Default::default()
    })
}
