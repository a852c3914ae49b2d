//! Request dispatch: one module per api (or close family of apis). Every handler takes the
//! decoded body and version, and the request's context when it needs to know who asks or on
//! which listener; it returns the response body. This module is the one entry point,
//! [`handle`]: it builds each request's context from its connection's
//! ([`ConnectionContext`]), encodes the answer, answers what cannot be decoded, and decides
//! when a connection must close.
//!
//! Handlers translate requests into the verbs of the layers below (the partition layer
//! `crate::replica`, the group and transaction coordinators, the cluster image, the node) and
//! their answers back. They may import those layers, `context` and `incoming` (leaves of this
//! folder) and this file's `SUPPORTED` and `message`; only `crate::server` imports `handler`.

mod acls;
mod api_versions;
mod authorized;
mod authz;
mod cluster;
mod configs;
mod context;
mod delete_records;
mod describe_cluster;
mod describe_log_dirs;
mod describe_producers;
mod features;
mod fetch;
mod groups;
mod incoming;
mod init_producer_id;
mod leader_hints;
mod list_offsets;
mod metadata;
mod offset_for_leader_epoch;
mod produce;
mod quotas;
mod scram;
mod throttle;
mod topics;
mod txn;

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use kafka_net::server::response_chunks;
use kafka_protocol::DecodeError;
use kafka_protocol::frame::Request;
use kafka_protocol::messages::{ApiKey, RequestBody, ResponseBody};
use kafka_protocol::view::ProduceRequestView;

pub use context::{ClientSoftware, ConnectionContext, Principal, RequestContext, Waited};
pub use incoming::Incoming;

use crate::node::Broker;

/// What to do after a request.
#[derive(Debug)]
pub enum Reply {
    /// Write these bytes (a whole response frame, size prefix included).
    Chunks(Vec<Bytes>),
    /// Write these chunks, some of them file regions sent with `sendfile` (a fetch answer; see
    /// [`crate::sendfile`]).
    Files(Vec<crate::sendfile::Chunk>),
    /// No response (a produce with acks=0).
    Nothing,
    /// Close the connection (what Kafka does for requests it cannot parse).
    Close(String),
}

/// The apis and versions this broker implements, advertised in ApiVersions. Only what is
/// implemented for real is listed: clients derive features from this table.
pub const SUPPORTED: &[(ApiKey, i16, i16)] = &[
    // Produce min 0: librdkafka only enables compression when the minimum is 0. Produce v0-2
    // may carry magic 0/1 (up-converted), Fetch v0-3 answer magic 0/1 (see crate::convert).
    (ApiKey::Produce, 0, 11),
    (ApiKey::Fetch, 0, 17),
    (ApiKey::ListOffsets, 0, 9),
    (ApiKey::Metadata, 0, 12),
    (ApiKey::CreateTopics, 0, 7),
    (ApiKey::DeleteTopics, 0, 6),
    (ApiKey::CreatePartitions, 0, 3),
    (ApiKey::FindCoordinator, 0, 6),
    (ApiKey::JoinGroup, 0, 9),
    (ApiKey::SyncGroup, 0, 5),
    (ApiKey::Heartbeat, 0, 4),
    (ApiKey::LeaveGroup, 0, 5),
    (ApiKey::OffsetCommit, 0, 9),
    (ApiKey::OffsetFetch, 0, 9),
    (ApiKey::TxnOffsetCommit, 0, 4),
    (ApiKey::DescribeGroups, 0, 5),
    (ApiKey::ListGroups, 0, 5),
    (ApiKey::DeleteGroups, 0, 2),
    (ApiKey::OffsetDelete, 0, 0),
    (ApiKey::DeleteRecords, 0, 2),
    (ApiKey::InitProducerId, 0, 5),
    (ApiKey::AddPartitionsToTxn, 0, 5),
    (ApiKey::AddOffsetsToTxn, 0, 4),
    (ApiKey::EndTxn, 0, 4),
    (ApiKey::WriteTxnMarkers, 0, 1),
    (ApiKey::DescribeTransactions, 0, 0),
    (ApiKey::ListTransactions, 0, 1),
    (ApiKey::OffsetForLeaderEpoch, 0, 4),
    (ApiKey::DescribeConfigs, 0, 4),
    (ApiKey::AlterConfigs, 0, 2),
    (ApiKey::IncrementalAlterConfigs, 0, 1),
    (ApiKey::ApiVersions, 0, 4),
    (ApiKey::DescribeCluster, 0, 1),
    (ApiKey::DescribeProducers, 0, 0),
    (ApiKey::DescribeLogDirs, 0, 4),
    // Served on SASL listeners by the connection's SASL gate (server/sasl.rs); elsewhere
    // answered ILLEGAL_SASL_STATE.
    (ApiKey::SaslHandshake, 0, 1),
    (ApiKey::SaslAuthenticate, 0, 2),
    (ApiKey::DescribeUserScramCredentials, 0, 0),
    (ApiKey::AlterUserScramCredentials, 0, 0),
    (ApiKey::DescribeClientQuotas, 0, 1),
    (ApiKey::AlterClientQuotas, 0, 1),
    (ApiKey::UpdateFeatures, 0, 1),
    (ApiKey::DescribeAcls, 0, 3),
    (ApiKey::CreateAcls, 0, 3),
    (ApiKey::DeleteAcls, 0, 3),
    // KIP-848: listed only while group.version >= 1 is finalized (`api_versions.rs`).
    (ApiKey::ConsumerGroupHeartbeat, 0, 1),
    (ApiKey::ConsumerGroupDescribe, 0, 1),
];

/// DescribeQuorum's versions on a broker of a cluster (forwarded to the controllers).
pub const CLUSTER_DESCRIBE_QUORUM: (i16, i16) = (0, 2);

/// The supported range of `key`.
pub fn supported(key: ApiKey) -> Option<(i16, i16)> {
    SUPPORTED
        .iter()
        .find(|(k, _, _)| *k == key)
        .map(|(_, lo, hi)| (*lo, *hi))
}

/// A connection with no peer address on the broker's client listener: the context tests and
/// callers in this process handle requests with.
pub fn local_connection(broker: &Broker) -> ConnectionContext {
    ConnectionContext::new(None, broker.client_listener_name())
}

/// A request's reply, and how long its connection reads nothing more after it.
#[derive(Debug)]
pub struct Answer {
    pub reply: Reply,
    /// A client quota's throttle (KIP-219): the answer carries it as `throttle_time_ms` and
    /// goes out first; the connection then handles nothing more of the client for this long.
    pub mute_ms: u64,
}

impl Answer {
    /// A reply without a throttle.
    fn now(reply: Reply) -> Self {
        Self { reply, mute_ms: 0 }
    }
}

/// [`answer`] without the throttle: the reply alone (callers in this process and tests).
pub async fn handle(
    broker: &Arc<Broker>,
    connection: &ConnectionContext,
    incoming: Incoming,
) -> Reply {
    answer(broker, connection, incoming).await.reply
}

/// Handles one request of `connection` as the connection read it. The one entry point: the
/// request's context (see [`RequestContext`]) is built here, once its header is read, and
/// the client's quotas are checked here ([`throttle`]).
pub async fn answer(
    broker: &Arc<Broker>,
    connection: &ConnectionContext,
    incoming: Incoming,
) -> Answer {
    let started = Instant::now();
    let waited = Waited::default();
    let incoming = match incoming {
        Incoming::Produce { frame, .. } => {
            return produce_frame(broker, connection, &frame, started).await;
        }
        // A Produce request decoded by the caller is read again, through the view.
        Incoming::Decoded(r) if r.prefix.api_key == ApiKey::Produce as i16 => {
            return produce_frame(broker, connection, &r.frame, started).await;
        }
        Incoming::Decoded(r) => r,
        Incoming::Unframed(_) => {
            return Answer::now(Reply::Close("a frame without a request header".into()));
        }
    };
    let prefix = incoming.prefix;
    let req = match incoming.request {
        Ok(r) => r,
        Err(e) => {
            // ApiVersions must be answerable whatever its version (KIP-511).
            if prefix.api_key == ApiKey::ApiVersions as i16
                && matches!(e, DecodeError::UnsupportedVersion { .. })
            {
                return Answer::now(encode(
                    prefix.correlation_id,
                    &api_versions::unsupported(),
                    0,
                ));
            }
            return Answer::now(Reply::Close(format!("undecodable request: {e}")));
        }
    };
    let key = req.api_key();
    let version = req.version();
    let Request { header, body, .. } = req;
    let correlation_id = header.correlation_id;
    let ctx = connection
        .request(header.client_id.as_deref())
        .counting_waits(&waited);
    let range = match key {
        // A broker of a cluster forwards DescribeQuorum to the controllers.
        ApiKey::DescribeQuorum if broker.is_clustered() => Some(CLUSTER_DESCRIBE_QUORUM),
        _ => supported(key),
    };
    match range {
        Some((lo, hi)) if (lo..=hi).contains(&version) => {}
        _ if key == ApiKey::ApiVersions => {
            return Answer::now(encode(correlation_id, &api_versions::unsupported(), 0));
        }
        _ => return Answer::now(Reply::Close(format!("{key:?} v{version} is not supported"))),
    }
    if matches!(
        key,
        ApiKey::DeleteTopics | ApiKey::DeleteGroups | ApiKey::DeleteRecords | ApiKey::OffsetDelete
    ) {
        // Who deleted what: the lines the deletions themselves log follow this one.
        tracing::info!(
            api = ?key,
            client_host = ctx.client_host(),
            client_id = ctx.client_id().unwrap_or(""),
            "deletion requested by {} ({})",
            ctx.client_host(),
            ctx.client_id().unwrap_or("no client id")
        );
    }
    if let Some(link) = broker.cluster() {
        if let Some(body) = cluster::handle(broker, link, &ctx, &body, version).await {
            return Answer::now(encode(correlation_id, &body, version));
        }
    }
    // What this request's principal may do (nothing to ask when authorization is off).
    let authz = authz::Authz::new(broker, &ctx);
    let mut body = match body {
        RequestBody::Fetch(mut r) => {
            let replica = if version >= 15 {
                r.replica_state.replica_id
            } else {
                r.replica_id
            };
            // A consumer's fetch is measured against its fetch quota; a follower's is not.
            let consumer = replica < 0;
            if consumer && let Some(cap) = broker.quotas.fetch_window_bytes(throttle::client(&ctx))
            {
                // Kafka caps a fetch at what the quota allows in one window.
                let cap = i32::try_from(cap).unwrap_or(i32::MAX);
                r.max_bytes = r.max_bytes.min(cap);
                r.min_bytes = r.min_bytes.min(r.max_bytes);
            }
            let (mut body, mut regions) = fetch::handle(broker, &ctx, &authz, *r, version).await;
            let mut mute_ms = 0;
            if consumer {
                let (t, emptied) =
                    throttle::fetch(broker, &ctx, &mut body, &regions, started, &waited);
                if emptied {
                    regions = crate::sendfile::Regions::default();
                }
                mute_ms = throttle::mute_ms(t);
            }
            if regions.is_empty() {
                return Answer {
                    reply: encode(correlation_id, &body, version),
                    mute_ms,
                };
            }
            let reply = match regions.encode(correlation_id, &body, version) {
                Ok(chunks) => Reply::Files(chunks),
                // Not with the generated encoders (a test pins it); if it ever happens the
                // client reconnects and fetches again, rather than read a stand-in.
                Err(e) => Reply::Close(format!("fetch answer not sendable: {e}")),
            };
            return Answer { reply, mute_ms };
        }
        RequestBody::ListOffsets(r) => list_offsets::handle(broker, &authz, r, version),
        RequestBody::DeleteRecords(r) => delete_records::handle(broker, &authz, r),
        RequestBody::InitProducerId(r) => {
            match r.transactional_id.as_ref().filter(|t| !t.is_empty()) {
                Some(id) => {
                    let id = id.to_string();
                    txn::init_producer_id(broker, &authz, r, id, version).await
                }
                None => init_producer_id::handle(broker, &authz, r),
            }
        }
        RequestBody::AddPartitionsToTxn(r) => txn::add_partitions(broker, &authz, r, version).await,
        RequestBody::AddOffsetsToTxn(r) => txn::add_offsets(broker, &authz, r, version).await,
        RequestBody::EndTxn(r) => txn::end_txn(broker, &authz, r, version).await,
        RequestBody::WriteTxnMarkers(r) => txn::write_markers(broker, &authz, r).await,
        RequestBody::DescribeTransactions(r) => txn::describe(broker, &authz, r),
        RequestBody::ListTransactions(r) => txn::list(broker, &authz, r, version),
        RequestBody::OffsetForLeaderEpoch(r) => offset_for_leader_epoch::handle(broker, &authz, r),
        RequestBody::ApiVersions(_) => {
            api_versions::handle(version, broker.is_clustered(), &broker.features.finalized())
        }
        RequestBody::Metadata(r) => metadata::handle(broker, &ctx, &authz, r, version),
        RequestBody::CreateTopics(r) => topics::create_topics(broker, &authz, r, version),
        RequestBody::DeleteTopics(r) => topics::delete_topics(broker, &authz, r, version),
        RequestBody::CreatePartitions(r) => topics::create_partitions(broker, &authz, r),
        RequestBody::DescribeCluster(r) => describe_cluster::handle(broker, &ctx, &authz, r),
        RequestBody::DescribeProducers(r) => describe_producers::handle(broker, &authz, r),
        RequestBody::DescribeLogDirs(r) => describe_log_dirs::handle(broker, &authz, r),
        RequestBody::DescribeConfigs(r) => configs::describe(broker, &authz, r, version),
        RequestBody::AlterConfigs(r) => configs::alter(broker, &authz, r),
        RequestBody::IncrementalAlterConfigs(r) => configs::incremental_alter(broker, &authz, r),
        RequestBody::FindCoordinator(r) => {
            let keys_transactions = version >= 1 && r.key_type == groups::KEY_TYPE_TRANSACTION;
            let mut keys = std::iter::once(&r.key).chain(&r.coordinator_keys);
            let describable = |k: &kafka_protocol::KStr| {
                authz.transactional_id(kafka_auth::acl::AclOperation::Describe, k)
            };
            if keys_transactions && keys.any(describable) {
                // Created at the first authorized lookup of a transactional id (Kafka does);
                // a failure is answered by InitProducerId.
                let _ = broker.ensure_transaction_topic();
            }
            let node = groups::CoordinatorNode::of(broker, ctx.listener());
            groups::find_coordinator(&node, &authz, r, version)
        }
        RequestBody::JoinGroup(r) => {
            groups::join_group(&broker.groups, &authz, &ctx, *r, version).await
        }
        RequestBody::SyncGroup(r) => groups::sync_group(&broker.groups, &authz, *r, version).await,
        RequestBody::Heartbeat(r) => groups::heartbeat(&broker.groups, &authz, r, version),
        RequestBody::LeaveGroup(r) => groups::leave_group(&broker.groups, &authz, r, version),
        RequestBody::OffsetCommit(r) => {
            let topics = |t: &str| broker.topic(t).map(|m| m.partitions);
            groups::offset_commit(&broker.groups, &authz, &topics, *r, version).await
        }
        RequestBody::TxnOffsetCommit(r) => {
            let topics = |t: &str| broker.topic(t).map(|m| m.partitions);
            groups::txn_offset_commit(&broker.groups, &authz, &topics, *r, version).await
        }
        RequestBody::OffsetFetch(r) => groups::offset_fetch(&broker.groups, &authz, r, version),
        RequestBody::DescribeGroups(r) => {
            let image = broker.topics_image();
            groups::describe_groups(&broker.groups, &*image, &authz, r, version)
        }
        RequestBody::ConsumerGroupHeartbeat(r) => {
            let image = broker.topics_image();
            let enabled = api_versions::consumer_groups_enabled(&broker.features.finalized());
            groups::consumer_group_heartbeat(
                &broker.groups,
                &authz,
                &ctx,
                &image,
                enabled,
                *r,
                version,
            )
            .await
        }
        RequestBody::ConsumerGroupDescribe(r) => {
            let image = broker.topics_image();
            let enabled = api_versions::consumer_groups_enabled(&broker.features.finalized());
            groups::consumer_group_describe(&broker.groups, &authz, &image, enabled, r, version)
        }
        RequestBody::ListGroups(r) => groups::list_groups(&broker.groups, &authz, r, version),
        RequestBody::DeleteGroups(r) => groups::delete_groups(&broker.groups, &authz, r, version),
        RequestBody::OffsetDelete(r) => {
            let topics = |t: &str| broker.topic(t).map(|m| m.partitions);
            groups::offset_delete(&broker.groups, &authz, &topics, r, version)
        }
        RequestBody::CreateAcls(r) => acls::create(broker, &authz, r),
        RequestBody::DescribeAcls(r) => acls::describe(broker, &authz, r),
        RequestBody::DeleteAcls(r) => acls::delete(broker, &authz, r),
        RequestBody::DescribeUserScramCredentials(r) => scram::describe(broker, &authz, r),
        RequestBody::AlterUserScramCredentials(r) => scram::alter(broker, &authz, r),
        RequestBody::DescribeClientQuotas(r) => quotas::describe(broker, &authz, r),
        RequestBody::AlterClientQuotas(r) => quotas::alter(broker, &authz, r),
        RequestBody::UpdateFeatures(r) => features::update(broker, &authz, &r, version),
        // SASL requests reach the handlers only on listeners without SASL (a SASL listener's
        // gate answers them, server/sasl.rs).
        RequestBody::SaslHandshake(_) => {
            ResponseBody::SaslHandshake(kafka_protocol::messages::SaslHandshakeResponse {
                error_code: kafka_protocol::error_code::ErrorCode::ILLEGAL_SASL_STATE.0,
                mechanisms: Vec::new(),
            })
        }
        RequestBody::SaslAuthenticate(_) => {
            ResponseBody::SaslAuthenticate(kafka_protocol::messages::SaslAuthenticateResponse {
                error_code: kafka_protocol::error_code::ErrorCode::ILLEGAL_SASL_STATE.0,
                error_message: Some(kafka_protocol::KStr::from_static(
                    "SASL is not enabled on this listener",
                )),
                ..Default::default()
            })
        }
        other => {
            let why = format!("{:?} is not implemented", other.api_key());
            return Answer::now(Reply::Close(why));
        }
    };
    let t = throttle::request(broker, &ctx, key, started, &waited);
    if t > 0 {
        body.set_throttle_time_ms(t);
    }
    Answer {
        reply: encode(correlation_id, &body, version),
        mute_ms: throttle::mute_ms(t),
    }
}

/// A Produce request of `connection`, read through the borrowing view.
async fn produce_frame(
    broker: &Broker,
    connection: &ConnectionContext,
    frame: &Bytes,
    started: Instant,
) -> Answer {
    let (header, request) = match ProduceRequestView::parse(frame) {
        Ok(v) => v,
        Err(e) => return Answer::now(Reply::Close(format!("undecodable request: {e}"))),
    };
    let version = request.version();
    match supported(ApiKey::Produce) {
        Some((lo, hi)) if (lo..=hi).contains(&version) => {}
        _ => {
            let why = format!("Produce v{version} is not supported");
            return Answer::now(Reply::Close(why));
        }
    }
    let waited = Waited::default();
    let ctx = connection
        .request(header.client_id())
        .counting_waits(&waited);
    let authz = authz::Authz::new(broker, &ctx);
    let answer = produce::handle(broker, &ctx, &authz, frame, &request).await;
    let acks = request.acks();
    let t = throttle::produce(broker, &ctx, frame.len(), acks, started, &waited);
    let reply = match answer {
        Some(mut body) => {
            if t > 0 {
                body.set_throttle_time_ms(t);
            }
            encode(header.correlation_id(), &body, version)
        }
        None => Reply::Nothing,
    };
    Answer {
        reply,
        mute_ms: throttle::mute_ms(t),
    }
}

pub(crate) fn encode(correlation_id: i32, body: &ResponseBody, version: i16) -> Reply {
    match response_chunks(correlation_id, body, version) {
        Ok(chunks) => Reply::Chunks(chunks),
        Err(e) => {
            // A response we built but cannot encode is a bug here, not the client's fault.
            tracing::error!(error = %e, api = ?body.api_key(), version, "cannot encode response");
            Reply::Close(format!("cannot encode response: {e}"))
        }
    }
}

/// An optional error message: `None` for success.
pub(crate) fn message(e: &crate::error::BrokerError) -> Option<kafka_protocol::KStr> {
    Some(kafka_protocol::KStr::from(e.to_string()))
}
