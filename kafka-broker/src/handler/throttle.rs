//! Client quotas at the request level, as Kafka's `KafkaApis` applies them: a Produce is
//! measured by its size against `producer_byte_rate`, a consumer's Fetch by its answer's size
//! against `consumer_byte_rate`, and every request by the time it worked against
//! `request_percentage`. The answer carries the longest throttle time as `throttle_time_ms`,
//! and the connection is muted for that long after it (see [`super::Answer`]). A throttled
//! fetch is answered without records, and its bytes are taken back from the client's use.
//!
//! Exempt from the request quota, as in Kafka: the requests of other brokers (the cluster
//! actions: replica fetches, transaction markers, controller traffic), and Produce with
//! `acks=0`. The time a request spends waiting (a long poll, the replicas' acknowledgement)
//! is not work ([`Waited`]).

use std::time::Instant;

use kafka_protocol::messages::{ApiKey, FetchResponse, ResponseBody};

use super::context::{RequestContext, Waited};
use crate::node::Broker;
use crate::quotas::Client;
use crate::sendfile::Regions;

/// Whose use a request counts for.
pub(super) fn client<'a>(ctx: &RequestContext<'a>) -> Client<'a> {
    Client {
        user: ctx.principal().name(),
        client_id: ctx.client_id().unwrap_or(""),
    }
}

/// The connection's mute for a throttle time.
pub(super) fn mute_ms(throttle_ms: i32) -> u64 {
    u64::try_from(throttle_ms).unwrap_or(0)
}

/// Kafka's cluster actions: requests only brokers and controllers send, never throttled.
fn exempt(key: ApiKey) -> bool {
    matches!(
        key,
        ApiKey::LeaderAndIsr
            | ApiKey::StopReplica
            | ApiKey::UpdateMetadata
            | ApiKey::ControlledShutdown
            | ApiKey::WriteTxnMarkers
            | ApiKey::AlterPartition
            | ApiKey::BrokerRegistration
            | ApiKey::BrokerHeartbeat
            | ApiKey::Vote
            | ApiKey::BeginQuorumEpoch
            | ApiKey::EndQuorumEpoch
            | ApiKey::FetchSnapshot
            | ApiKey::Envelope
            | ApiKey::AllocateProducerIds
    )
}

/// The time a request worked, in nanoseconds: since it started, without its waits.
fn work_nanos(started: Instant, waited: &Waited) -> u64 {
    let worked = started.elapsed().saturating_sub(waited.total());
    u64::try_from(worked.as_nanos()).unwrap_or(u64::MAX)
}

/// The request quota's throttle for a request of type `key` (0 for exempt ones).
pub(super) fn request(
    broker: &Broker,
    ctx: &RequestContext<'_>,
    key: ApiKey,
    started: Instant,
    waited: &Waited,
) -> i32 {
    if exempt(key) {
        return 0;
    }
    let nanos = work_nanos(started, waited);
    broker
        .quotas
        .record_request(client(ctx), nanos, broker.now_ms())
}

/// The throttle of a Produce request of `bytes` bytes: the longer of its byte-rate and request
/// throttles (no request throttle for `acks=0`, as Kafka).
pub(super) fn produce(
    broker: &Broker,
    ctx: &RequestContext<'_>,
    bytes: usize,
    acks: i16,
    started: Instant,
    waited: &Waited,
) -> i32 {
    let who = client(ctx);
    let bandwidth = broker.quotas.record_produce(who, bytes, broker.now_ms());
    let request = if acks == 0 {
        0
    } else {
        request(broker, ctx, ApiKey::Produce, started, waited)
    };
    bandwidth.max(request)
}

/// The throttle of a consumer's Fetch answered with `body` (records inline) and `regions`
/// (records sent from files), and whether the answer was emptied. When throttled, `body` is
/// replaced by an answer without partitions carrying the throttle time (the caller drops the
/// regions) and the answer's bytes are taken back from the client's use, as Kafka does;
/// except an answer over what the quota lets through at once, which goes out throttled.
pub(super) fn fetch(
    broker: &Broker,
    ctx: &RequestContext<'_>,
    body: &mut ResponseBody,
    regions: &Regions,
    started: Instant,
    waited: &Waited,
) -> (i32, bool) {
    let ResponseBody::Fetch(response) = body else {
        return (0, false);
    };
    let inline: usize = response
        .responses
        .iter()
        .flat_map(|t| &t.partitions)
        .filter_map(|p| p.records.as_ref().map(|r| r.len()))
        .sum();
    let bytes = inline + regions.file_bytes();
    let who = client(ctx);
    let now = broker.now_ms();
    let bandwidth = broker.quotas.record_fetch(who, bytes, now);
    let request = request(broker, ctx, ApiKey::Fetch, started, waited);
    let throttle = bandwidth.max(request);
    if throttle == 0 {
        return (0, false);
    }
    // An answer larger than the quota lets through at once (one batch over it: a fetch returns
    // at least one) would be emptied and taken back every time, and the consumer would never
    // read on: it goes out with its throttle instead.
    let oversized = broker
        .quotas
        .fetch_window_bytes(who)
        .is_some_and(|most| bytes > most);
    if oversized {
        response.throttle_time_ms = throttle;
        return (throttle, false);
    }
    broker.quotas.unrecord_fetch(who, bytes, now);
    *response = FetchResponse {
        throttle_time_ms: throttle,
        error_code: response.error_code,
        ..Default::default()
    };
    (throttle, true)
}
