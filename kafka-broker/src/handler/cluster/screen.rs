//! Authorization of the requests a broker of a cluster forwards to the active controller,
//! before they leave the broker: the same questions, codes and messages as the single node's
//! handlers (`topics.rs`, `configs.rs`), with topic names looked up in this broker's image.
//!
//! [`screen`] splits a request into the items the caller may touch (forwarded, as a request
//! of the same kind) and the refused ones (answered here, never forwarded); a request with
//! nothing left to forward is answered at once. [`merge`] puts the controller's answer and the
//! refusals back together in the request's order. As in Kafka's `ControllerApis`:
//! - CreateTopics: CREATE on the cluster, else CREATE on each topic; a created topic the caller
//!   may not DESCRIBE_CONFIGS is answered without its configs, partition count and
//!   replication factor (`topic_config_error_code` TOPIC_AUTHORIZATION_FAILED).
//! - DeleteTopics: DELETE on the cluster, else by name: no DESCRIBE is
//!   TOPIC_AUTHORIZATION_FAILED, no DELETE is TOPIC_AUTHORIZATION_FAILED for a topic that
//!   exists and UNKNOWN_TOPIC_OR_PARTITION for one that does not; by id: an id the image does
//!   not know is UNKNOWN_TOPIC_ID, no DELETE is TOPIC_AUTHORIZATION_FAILED with the name left
//!   out unless the caller may DESCRIBE it.
//! - CreatePartitions: ALTER on each topic.
//! - AlterConfigs, IncrementalAlterConfigs: ALTER_CONFIGS on each resource (the topic, the
//!   cluster for a broker, the group), each with its own code.
//! - DescribeQuorum: DESCRIBE on the cluster, else CLUSTER_AUTHORIZATION_FAILED.

use kafka_auth::acl::AclOperation;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use kafka_protocol::messages::create_topics_response::CreatableTopicResult;
use kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::{
    AlterConfigsRequest, AlterConfigsResponse, CreatePartitionsRequest, CreatePartitionsResponse,
    CreateTopicsRequest, CreateTopicsResponse, DeleteTopicsRequest, DeleteTopicsResponse,
    DescribeQuorumResponse, IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse,
    RequestBody, ResponseBody, alter_configs_response, incremental_alter_configs_response,
};
use kafka_protocol::{KStr, Uuid};

use super::super::groups::Permits;
use crate::cluster::image::MetadataImage;

/// What becomes of a request for the controller once its items are authorized.
#[derive(Debug)]
pub(crate) enum Screened {
    /// Nothing to forward: the answer (every item refused, or none asked).
    Answer(ResponseBody),
    /// Forward `body` (the allowed items); merge its answer with `refused`.
    Forward { body: RequestBody, refused: Refused },
}

/// The refused items of a request, in the request's order: `Some` for an item refused here,
/// `None` for one forwarded, with the key its answer is found by.
#[derive(Debug, Default)]
pub(crate) struct Refused {
    topics: Vec<(String, Option<CreatableTopicResult>)>,
    deletions: Vec<(DeletionKey, Option<DeletableTopicResult>)>,
    partitions: Vec<(String, Option<CreatePartitionsTopicResult>)>,
    configs: ConfigSlots,
}

/// A deletion as asked: by name, else by id.
type DeletionKey = (Option<String>, Uuid);

fn refused_topic(what: &str, topic: &str) -> (ErrorCode, String) {
    (
        ErrorCode::TOPIC_AUTHORIZATION_FAILED,
        format!("not authorized to {what} topic {topic}"),
    )
}

/// Splits `body` into what may be forwarded and what is refused (see the module docs). A
/// request of another kind is forwarded whole.
pub(crate) fn screen(
    p: &(impl Permits + ?Sized),
    image: &MetadataImage,
    body: RequestBody,
    version: i16,
) -> Screened {
    match body {
        RequestBody::CreateTopics(r) => create_topics(p, r),
        RequestBody::DeleteTopics(r) => delete_topics(p, image, r, version),
        RequestBody::CreatePartitions(r) => create_partitions(p, r),
        RequestBody::AlterConfigs(r) => alter_configs(p, r),
        RequestBody::IncrementalAlterConfigs(r) => incremental_alter_configs(p, r),
        RequestBody::DescribeQuorum(_) if !p.cluster(AclOperation::Describe) => {
            let code = ErrorCode::CLUSTER_AUTHORIZATION_FAILED;
            Screened::Answer(ResponseBody::DescribeQuorum(DescribeQuorumResponse {
                error_code: code.code(),
                error_message: Some(KStr::from_static(code.message())),
                ..Default::default()
            }))
        }
        other => Screened::Forward {
            body: other,
            refused: Refused::default(),
        },
    }
}

/// Whether anything is left to forward; otherwise the refusals alone answer.
fn forward_if<F>(any: bool, body: RequestBody, refused: Refused, alone: F) -> Screened
where
    F: FnOnce(Refused) -> ResponseBody,
{
    if any {
        Screened::Forward { body, refused }
    } else {
        Screened::Answer(alone(refused))
    }
}

fn create_topics(p: &(impl Permits + ?Sized), mut r: CreateTopicsRequest) -> Screened {
    let on_cluster = !r.topics.is_empty() && p.cluster(AclOperation::Create);
    let mut refused = Refused::default();
    r.topics.retain(|t| {
        let allowed = on_cluster || p.topic(AclOperation::Create, &t.name);
        let local = (!allowed).then(|| {
            let (code, message) = refused_topic("create", &t.name);
            CreatableTopicResult {
                name: t.name.clone(),
                error_code: code.code(),
                error_message: Some(KStr::from(message)),
                num_partitions: -1,
                replication_factor: -1,
                ..Default::default()
            }
        });
        refused.topics.push((t.name.to_string(), local));
        allowed
    });
    forward_if(
        !r.topics.is_empty(),
        RequestBody::CreateTopics(r),
        refused,
        |refused| {
            ResponseBody::CreateTopics(CreateTopicsResponse {
                topics: in_order(refused.topics, Vec::new(), |_, _| false),
                ..Default::default()
            })
        },
    )
}

fn delete_topics(
    p: &(impl Permits + ?Sized),
    image: &MetadataImage,
    r: DeleteTopicsRequest,
    version: i16,
) -> Screened {
    let targets: Vec<(Option<KStr>, Uuid)> = if version >= 6 {
        r.topics
            .iter()
            .map(|t| (t.name.clone(), t.topic_id))
            .collect()
    } else {
        r.topic_names
            .iter()
            .map(|n| (Some(n.clone()), Uuid::ZERO))
            .collect()
    };
    let on_cluster = !targets.is_empty() && p.cluster(AclOperation::Delete);
    let mut refused = Refused::default();
    let mut names = Vec::new();
    let mut states = Vec::new();
    for (name, id) in targets {
        let key = (name.as_ref().map(ToString::to_string), id);
        let outcome: Option<(Option<KStr>, ErrorCode, String)> = if on_cluster {
            None
        } else {
            match &name {
                Some(n) if !p.topic(AclOperation::Describe, n) => {
                    let (code, message) = refused_topic("describe", n);
                    Some((name.clone(), code, message))
                }
                Some(n) if !p.topic(AclOperation::Delete, n) => {
                    if image.topic(n).is_some() {
                        let (code, message) = refused_topic("delete", n);
                        Some((name.clone(), code, message))
                    } else {
                        let code = ErrorCode::UNKNOWN_TOPIC_OR_PARTITION;
                        Some((name.clone(), code, format!("no topic {n}")))
                    }
                }
                Some(_) => None,
                None => match image.topic_by_id(&id) {
                    None => Some((
                        None,
                        ErrorCode::UNKNOWN_TOPIC_ID,
                        "no topic with this id".to_owned(),
                    )),
                    Some(t) if !p.topic(AclOperation::Delete, &t.name) => {
                        let shown = p
                            .topic(AclOperation::Describe, &t.name)
                            .then(|| KStr::from(t.name.clone()));
                        let (code, message) = refused_topic("delete", "with this id");
                        Some((shown, code, message))
                    }
                    Some(_) => None,
                },
            }
        };
        let local = outcome.map(|(shown, code, message)| DeletableTopicResult {
            name: shown,
            topic_id: if version >= 6 { id } else { Uuid::ZERO },
            error_code: code.code(),
            error_message: Some(KStr::from(message)),
            ..Default::default()
        });
        if local.is_none() {
            if version >= 6 {
                states.push(DeleteTopicState {
                    name,
                    topic_id: id,
                    ..Default::default()
                });
            } else if let Some(n) = name {
                names.push(n);
            }
        }
        refused.deletions.push((key, local));
    }
    let any = !names.is_empty() || !states.is_empty();
    let body = RequestBody::DeleteTopics(DeleteTopicsRequest {
        topics: states,
        topic_names: names,
        ..r
    });
    forward_if(any, body, refused, |refused| {
        ResponseBody::DeleteTopics(DeleteTopicsResponse {
            responses: in_order(refused.deletions, Vec::new(), |_, _| false),
            ..Default::default()
        })
    })
}

fn create_partitions(p: &(impl Permits + ?Sized), mut r: CreatePartitionsRequest) -> Screened {
    let mut refused = Refused::default();
    r.topics.retain(|t| {
        let allowed = p.topic(AclOperation::Alter, &t.name);
        let local = (!allowed).then(|| {
            let (code, message) = refused_topic("alter", &t.name);
            CreatePartitionsTopicResult {
                name: t.name.clone(),
                error_code: code.code(),
                error_message: Some(KStr::from(message)),
                ..Default::default()
            }
        });
        refused.partitions.push((t.name.to_string(), local));
        allowed
    });
    forward_if(
        !r.topics.is_empty(),
        RequestBody::CreatePartitions(r),
        refused,
        |refused| {
            ResponseBody::CreatePartitions(CreatePartitionsResponse {
                results: in_order(refused.partitions, Vec::new(), |_, _| false),
                ..Default::default()
            })
        },
    )
}

/// The refusal of ALTER_CONFIGS on one config resource, as `configs.rs` answers it.
fn config_refusal(
    p: &(impl Permits + ?Sized),
    resource_type: i8,
    name: &str,
) -> Option<(i16, String)> {
    super::super::configs::refused(p, AclOperation::AlterConfigs, resource_type, name)
        .map(|e| (e.error_code().code(), e.to_string()))
}

fn alter_configs(p: &(impl Permits + ?Sized), mut r: AlterConfigsRequest) -> Screened {
    let mut refused = Refused::default();
    r.resources.retain(|res| {
        let local = config_refusal(p, res.resource_type, &res.resource_name);
        let allowed = local.is_none();
        let key = (res.resource_type, res.resource_name.to_string());
        refused.configs.push((key, local));
        allowed
    });
    forward_if(
        !r.resources.is_empty(),
        RequestBody::AlterConfigs(r),
        refused,
        |refused| {
            ResponseBody::AlterConfigs(AlterConfigsResponse {
                responses: alter_config_results(refused.configs, Vec::new()),
                ..Default::default()
            })
        },
    )
}

fn incremental_alter_configs(
    p: &(impl Permits + ?Sized),
    mut r: IncrementalAlterConfigsRequest,
) -> Screened {
    let mut refused = Refused::default();
    r.resources.retain(|res| {
        let local = config_refusal(p, res.resource_type, &res.resource_name);
        let allowed = local.is_none();
        let key = (res.resource_type, res.resource_name.to_string());
        refused.configs.push((key, local));
        allowed
    });
    forward_if(
        !r.resources.is_empty(),
        RequestBody::IncrementalAlterConfigs(r),
        refused,
        |refused| {
            ResponseBody::IncrementalAlterConfigs(IncrementalAlterConfigsResponse {
                responses: incremental_config_results(refused.configs, Vec::new()),
                ..Default::default()
            })
        },
    )
}

/// Config resources by (type, name), with the refusal's code and message when refused here.
type ConfigSlots = Vec<((i8, String), Option<(i16, String)>)>;

fn alter_config_results(
    slots: ConfigSlots,
    forwarded: Vec<alter_configs_response::AlterConfigsResourceResponse>,
) -> Vec<alter_configs_response::AlterConfigsResourceResponse> {
    let slots = slots
        .into_iter()
        .map(|((t, name), local)| {
            let local =
                local.map(
                    |(code, message)| alter_configs_response::AlterConfigsResourceResponse {
                        error_code: code,
                        error_message: Some(KStr::from(message)),
                        resource_type: t,
                        resource_name: KStr::from(name.clone()),
                        ..Default::default()
                    },
                );
            ((t, name), local)
        })
        .collect();
    in_order(slots, forwarded, |(t, name), r| {
        r.resource_type == *t && r.resource_name.as_str() == name
    })
}

fn incremental_config_results(
    slots: ConfigSlots,
    forwarded: Vec<incremental_alter_configs_response::AlterConfigsResourceResponse>,
) -> Vec<incremental_alter_configs_response::AlterConfigsResourceResponse> {
    let slots = slots
        .into_iter()
        .map(|((t, name), local)| {
            let local = local.map(|(code, message)| {
                incremental_alter_configs_response::AlterConfigsResourceResponse {
                    error_code: code,
                    error_message: Some(KStr::from(message)),
                    resource_type: t,
                    resource_name: KStr::from(name.clone()),
                    ..Default::default()
                }
            });
            ((t, name), local)
        })
        .collect();
    in_order(slots, forwarded, |(t, name), r| {
        r.resource_type == *t && r.resource_name.as_str() == name
    })
}

/// The request's items in its order: each refused one as refused here, each forwarded one
/// as the controller answered it (found by `answers`); answers the request did not lead to
/// (none expected) follow.
fn in_order<T, K>(
    slots: Vec<(K, Option<T>)>,
    mut forwarded: Vec<T>,
    answers: impl Fn(&K, &T) -> bool,
) -> Vec<T> {
    let mut out = Vec::with_capacity(slots.len() + forwarded.len());
    for (k, local) in slots {
        match local {
            Some(t) => out.push(t),
            None => {
                if let Some(i) = forwarded.iter().position(|t| answers(&k, t)) {
                    out.push(forwarded.remove(i));
                }
            }
        }
    }
    out.extend(forwarded);
    out
}

/// The controller's `answer` to the forwarded part with the refusals put back, and (for
/// CreateTopics) the configs of topics the caller may not DESCRIBE_CONFIGS taken out.
pub(crate) fn merge(
    p: &(impl Permits + ?Sized),
    refused: Refused,
    answer: ResponseBody,
    version: i16,
) -> ResponseBody {
    match answer {
        ResponseBody::CreateTopics(mut r) => {
            for t in &mut r.topics {
                if t.error_code == 0 && !p.topic(AclOperation::DescribeConfigs, &t.name) {
                    t.topic_config_error_code = ErrorCode::TOPIC_AUTHORIZATION_FAILED.code();
                    t.num_partitions = -1;
                    t.replication_factor = -1;
                    t.configs = (version >= 5).then(Vec::new);
                }
            }
            if !refused.topics.is_empty() {
                r.topics = in_order(refused.topics, r.topics, |n, t| t.name.as_str() == n);
            }
            ResponseBody::CreateTopics(r)
        }
        ResponseBody::DeleteTopics(mut r) if !refused.deletions.is_empty() => {
            // A forwarded deletion is found by the name it was asked by, else by its id.
            r.responses = in_order(refused.deletions, r.responses, |(name, id), t| match name {
                Some(n) => t.name.as_deref() == Some(n.as_str()),
                None => t.topic_id == *id,
            });
            ResponseBody::DeleteTopics(r)
        }
        ResponseBody::CreatePartitions(mut r) if !refused.partitions.is_empty() => {
            r.results = in_order(refused.partitions, r.results, |n, t| t.name.as_str() == n);
            ResponseBody::CreatePartitions(r)
        }
        ResponseBody::AlterConfigs(mut r) if !refused.configs.is_empty() => {
            r.responses = alter_config_results(refused.configs, r.responses);
            ResponseBody::AlterConfigs(r)
        }
        ResponseBody::IncrementalAlterConfigs(mut r) if !refused.configs.is_empty() => {
            r.responses = incremental_config_results(refused.configs, r.responses);
            ResponseBody::IncrementalAlterConfigs(r)
        }
        other => other,
    }
}

#[cfg(test)]
#[path = "screen_tests.rs"]
mod tests;
