//! Request dispatch: one module per api. Every handler takes the decoded body and version and
//! returns the response body; this module encodes it, answers what cannot be decoded, and
//! decides when a connection must close.

mod api_versions;
mod authorized;
mod cluster;
mod configs;
mod delete_records;
mod describe_cluster;
mod describe_producers;
mod fetch;
mod groups;
mod init_producer_id;
mod leader_hints;
mod list_offsets;
mod metadata;
mod offset_for_leader_epoch;
mod produce;
mod topics;
mod txn;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use bytes::Bytes;
use kafka_net::server::{IncomingRequest, response_chunks};
use kafka_protocol::DecodeError;
use kafka_protocol::frame::{self, RequestPrefix};
use kafka_protocol::messages::{ApiKey, RequestBody, ResponseBody};
use kafka_protocol::view::ProduceRequestView;

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

/// A request as a connection read it: Produce requests are left as frames for the borrowing
/// view (nothing allocated, the record sets copied once into the log's buffer), the others
/// decoded.
#[derive(Debug)]
pub enum Incoming {
    Decoded(IncomingRequest),
    Produce { frame: Bytes, prefix: RequestPrefix },
}

impl Incoming {
    /// Decodes `frame` unless it is a Produce request.
    pub fn read(frame: Bytes, prefix: RequestPrefix) -> Self {
        if prefix.api_key == ApiKey::Produce as i16 {
            Self::Produce { frame, prefix }
        } else {
            Self::Decoded(IncomingRequest {
                request: frame::decode_request(&frame),
                frame,
                prefix,
            })
        }
    }

    pub fn prefix(&self) -> &RequestPrefix {
        match self {
            Self::Decoded(r) => &r.prefix,
            Self::Produce { prefix, .. } => prefix,
        }
    }

    /// The client id from the request header, if it reads.
    pub fn client_id(&self) -> Option<String> {
        match self {
            Self::Decoded(r) => r
                .request
                .as_ref()
                .ok()
                .and_then(|r| r.header.client_id.as_ref().map(ToString::to_string)),
            Self::Produce { frame, .. } => ProduceRequestView::parse(frame)
                .ok()
                .and_then(|(h, _)| h.client_id().map(str::to_owned)),
        }
    }
}

/// Handles one request as a connection read it.
pub async fn dispatch(broker: &Arc<Broker>, incoming: Incoming) -> Reply {
    dispatch_from(broker, incoming, None).await
}

/// [`dispatch`] for a request that came from `peer` (recorded as a group member's host).
pub async fn dispatch_from(
    broker: &Arc<Broker>,
    incoming: Incoming,
    peer: Option<SocketAddr>,
) -> Reply {
    let listener = broker.client_listener_name();
    dispatch_on(broker, incoming, peer, &listener).await
}

/// [`dispatch_from`] for a request that came in on `listener` (the endpoints Metadata and
/// FindCoordinator give are that listener's).
pub async fn dispatch_on(
    broker: &Arc<Broker>,
    incoming: Incoming,
    peer: Option<SocketAddr>,
    listener: &str,
) -> Reply {
    match incoming {
        Incoming::Decoded(r) => handle_on(broker, r, peer, listener).await,
        Incoming::Produce { frame, .. } => produce_frame(broker, &frame, listener).await,
    }
}

/// A client's address as Kafka writes it in group metadata and DescribeGroups (Java's
/// `InetAddress.toString()` without a resolved name): `/127.0.0.1`, or for IPv6 the eight
/// groups in hex without compression, `/0:0:0:0:0:0:0:1`. Empty when not known.
pub fn client_host(peer: Option<SocketAddr>) -> String {
    match peer.map(|p| p.ip()) {
        None => String::new(),
        Some(IpAddr::V4(a)) => format!("/{a}"),
        // Java sees an IPv4 client of a dual-stack socket as an IPv4 address.
        Some(IpAddr::V6(a)) if a.to_ipv4_mapped().is_some() => a
            .to_ipv4_mapped()
            .map_or_else(String::new, |v4| format!("/{v4}")),
        Some(IpAddr::V6(a)) => {
            let groups: Vec<String> = a.segments().iter().map(|g| format!("{g:x}")).collect();
            format!("/{}", groups.join(":"))
        }
    }
}

/// A Produce request, read through the borrowing view; it came in on `listener`.
async fn produce_frame(broker: &Broker, frame: &Bytes, listener: &str) -> Reply {
    let (header, request) = match ProduceRequestView::parse(frame) {
        Ok(v) => v,
        Err(e) => return Reply::Close(format!("undecodable request: {e}")),
    };
    let version = request.version();
    match supported(ApiKey::Produce) {
        Some((lo, hi)) if (lo..=hi).contains(&version) => {}
        _ => return Reply::Close(format!("Produce v{version} is not supported")),
    }
    match produce::handle(broker, frame, &request, listener).await {
        Some(body) => encode(header.correlation_id(), &body, version),
        None => Reply::Nothing,
    }
}

/// Handles one decoded request (a Produce request is read again from its frame, through the
/// view: see [`Incoming`]).
pub async fn handle(broker: &Arc<Broker>, incoming: IncomingRequest) -> Reply {
    handle_from(broker, incoming, None).await
}

/// [`handle`] for a request that came from `peer`.
pub async fn handle_from(
    broker: &Arc<Broker>,
    incoming: IncomingRequest,
    peer: Option<SocketAddr>,
) -> Reply {
    let listener = broker.client_listener_name();
    handle_on(broker, incoming, peer, &listener).await
}

async fn handle_on(
    broker: &Arc<Broker>,
    incoming: IncomingRequest,
    peer: Option<SocketAddr>,
    listener: &str,
) -> Reply {
    if incoming.prefix.api_key == ApiKey::Produce as i16 {
        return produce_frame(broker, &incoming.frame, listener).await;
    }
    let prefix = incoming.prefix;
    let req = match incoming.request {
        Ok(r) => r,
        Err(e) => {
            // ApiVersions must be answerable whatever its version (KIP-511).
            if prefix.api_key == ApiKey::ApiVersions as i16
                && matches!(e, DecodeError::UnsupportedVersion { .. })
            {
                return encode(prefix.correlation_id, &api_versions::unsupported(), 0);
            }
            return Reply::Close(format!("undecodable request: {e}"));
        }
    };
    let key = req.api_key();
    let version = req.version();
    let correlation_id = req.header.correlation_id;
    let range = match key {
        // A broker of a cluster forwards DescribeQuorum to the controllers.
        ApiKey::DescribeQuorum if broker.cluster().is_some() => Some(CLUSTER_DESCRIBE_QUORUM),
        _ => supported(key),
    };
    match range {
        Some((lo, hi)) if (lo..=hi).contains(&version) => {}
        _ if key == ApiKey::ApiVersions => {
            return encode(correlation_id, &api_versions::unsupported(), 0);
        }
        _ => return Reply::Close(format!("{key:?} v{version} is not supported")),
    }
    if matches!(
        key,
        ApiKey::DeleteTopics | ApiKey::DeleteGroups | ApiKey::DeleteRecords | ApiKey::OffsetDelete
    ) {
        // Who deleted what: the lines the deletions themselves log follow this one.
        tracing::info!(
            api = ?key,
            client_host = client_host(peer),
            client_id = req.header.client_id.as_deref().unwrap_or(""),
            "deletion requested by {} ({})",
            client_host(peer),
            req.header.client_id.as_deref().unwrap_or("no client id")
        );
    }
    if let Some(link) = broker.cluster() {
        if let Some(body) = cluster::handle(broker, link, &req.body, version, listener).await {
            return encode(correlation_id, &body, version);
        }
    }
    let body = match req.body {
        RequestBody::Fetch(r) => {
            let (body, regions) = fetch::handle(broker, *r, version, listener).await;
            if regions.is_empty() {
                return encode(correlation_id, &body, version);
            }
            return match regions.encode(correlation_id, &body, version) {
                Ok(chunks) => Reply::Files(chunks),
                // Not with the generated encoders (a test pins it); if it ever happens the
                // client reconnects and fetches again, rather than read a stand-in.
                Err(e) => Reply::Close(format!("fetch answer not sendable: {e}")),
            };
        }
        RequestBody::ListOffsets(r) => list_offsets::handle(broker, r, version),
        RequestBody::DeleteRecords(r) => delete_records::handle(broker, r),
        RequestBody::InitProducerId(r) => {
            match r.transactional_id.as_ref().filter(|t| !t.is_empty()) {
                Some(id) => {
                    let id = id.to_string();
                    txn::init_producer_id(broker, r, id, version).await
                }
                None => init_producer_id::handle(broker, r),
            }
        }
        RequestBody::AddPartitionsToTxn(r) => txn::add_partitions(broker, r, version).await,
        RequestBody::AddOffsetsToTxn(r) => txn::add_offsets(broker, r, version).await,
        RequestBody::EndTxn(r) => txn::end_txn(broker, r, version).await,
        RequestBody::WriteTxnMarkers(r) => txn::write_markers(broker, r).await,
        RequestBody::DescribeTransactions(r) => txn::describe(broker, r),
        RequestBody::ListTransactions(r) => txn::list(broker, r, version),
        RequestBody::OffsetForLeaderEpoch(r) => offset_for_leader_epoch::handle(broker, r),
        RequestBody::ApiVersions(_) => api_versions::handle(version, broker.cluster().is_some()),
        RequestBody::Metadata(r) => metadata::handle(broker, r, version, listener),
        RequestBody::CreateTopics(r) => topics::create_topics(broker, r, version),
        RequestBody::DeleteTopics(r) => topics::delete_topics(broker, r, version),
        RequestBody::CreatePartitions(r) => topics::create_partitions(broker, r),
        RequestBody::DescribeCluster(r) => describe_cluster::handle(broker, r, listener),
        RequestBody::DescribeProducers(r) => describe_producers::handle(broker, r),
        RequestBody::DescribeConfigs(r) => configs::describe(broker, r, version),
        RequestBody::AlterConfigs(r) => configs::alter(broker, r),
        RequestBody::IncrementalAlterConfigs(r) => configs::incremental_alter(broker, r),
        RequestBody::FindCoordinator(r) => {
            let keys_transactions = version >= 1 && r.key_type == groups::KEY_TYPE_TRANSACTION;
            if keys_transactions {
                // Created at the first lookup of a transactional id (Kafka does); a failure
                // is answered by InitProducerId.
                let _ = broker.ensure_transaction_topic();
            }
            groups::find_coordinator(&groups::CoordinatorNode::of(broker, listener), r, version)
        }
        RequestBody::JoinGroup(r) => {
            let host = client_host(peer);
            let client = groups::ClientInfo {
                client_id: req.header.client_id.as_deref().unwrap_or(""),
                client_host: &host,
            };
            groups::join_group(&broker.groups, client, *r, version).await
        }
        RequestBody::SyncGroup(r) => groups::sync_group(&broker.groups, *r, version).await,
        RequestBody::Heartbeat(r) => groups::heartbeat(&broker.groups, r, version),
        RequestBody::LeaveGroup(r) => groups::leave_group(&broker.groups, r, version),
        RequestBody::OffsetCommit(r) => {
            let topics = |t: &str| broker.topic(t).map(|m| m.partitions);
            groups::offset_commit(&broker.groups, &topics, *r, version).await
        }
        RequestBody::TxnOffsetCommit(r) => {
            let topics = |t: &str| broker.topic(t).map(|m| m.partitions);
            groups::txn_offset_commit(&broker.groups, &topics, *r, version).await
        }
        RequestBody::OffsetFetch(r) => groups::offset_fetch(&broker.groups, r, version),
        RequestBody::DescribeGroups(r) => groups::describe_groups(&broker.groups, r, version),
        RequestBody::ListGroups(r) => groups::list_groups(&broker.groups, r, version),
        RequestBody::DeleteGroups(r) => groups::delete_groups(&broker.groups, r, version),
        RequestBody::OffsetDelete(r) => {
            let topics = |t: &str| broker.topic(t).map(|m| m.partitions);
            groups::offset_delete(&broker.groups, &topics, r, version)
        }
        other => return Reply::Close(format!("{:?} is not implemented", other.api_key())),
    };
    encode(correlation_id, &body, version)
}

fn encode(correlation_id: i32, body: &ResponseBody, version: i16) -> Reply {
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

#[cfg(test)]
mod client_host_tests {
    use super::client_host;

    #[test]
    fn written_as_java_writes_an_address() {
        let v4 = "127.0.0.1:50000".parse().ok();
        assert_eq!(client_host(v4), "/127.0.0.1");
        let v6 = "[::1]:9092".parse().ok();
        assert_eq!(client_host(v6), "/0:0:0:0:0:0:0:1");
        let v6 = "[fe80::1:ab]:9092".parse().ok();
        assert_eq!(client_host(v6), "/fe80:0:0:0:0:0:1:ab");
        let mapped = "[::ffff:10.1.2.3]:9092".parse().ok();
        assert_eq!(client_host(mapped), "/10.1.2.3");
        assert_eq!(client_host(None), "");
    }
}
