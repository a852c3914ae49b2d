//! The state of one client connection, without I/O: correlation ids, the FIFO of requests in
//! flight with their deadlines, and what to send and report next.
//!
//! Inputs: [`ConnState::send`], [`ConnState::handle_frame`], [`ConnState::handle_timeout`],
//! [`ConnState::close`]. Outputs, to poll after every input: [`ConnState::poll_transmit`]
//! (frames to write, in order), [`ConnState::poll_event`] (finished requests) and
//! [`ConnState::poll_timeout`] (when to call `handle_timeout`). Time is passed in, never read.
//!
//! Kafka answers the requests of one connection in order, so a response must carry the
//! correlation id of the oldest request in flight. Anything else means the byte stream can no
//! longer be trusted: the connection is poisoned and every request in flight fails with the
//! same error.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kafka_protocol::messages::{ApiKey, RequestBody, RequestHeader};
use kafka_protocol::{KStr, Response, frame};

use crate::codec::size_prefix;
use crate::error::NetError;

/// Settings of one connection.
#[derive(Debug, Clone)]
pub struct ConnConfig {
    /// `client.id`, sent in every request header.
    pub client_id: Option<KStr>,
    /// `max.in.flight.requests.per.connection`: requests sent and not yet answered.
    pub max_in_flight: usize,
    /// `request.timeout.ms`.
    pub request_timeout: Duration,
    /// Largest response frame accepted.
    pub max_frame: usize,
}

impl Default for ConnConfig {
    fn default() -> Self {
        Self {
            client_id: Some(KStr::from_static("kafka-rs")),
            max_in_flight: 5,
            request_timeout: Duration::from_secs(30),
            max_frame: crate::codec::DEFAULT_MAX_FRAME,
        }
    }
}

/// A finished request: the answer (`None` for a request that expects none, such as a produce
/// with acks=0) or the error it failed with.
pub type Outcome = Result<Option<Response>, NetError>;

struct InFlight<T> {
    correlation_id: i32,
    api: ApiKey,
    version: i16,
    sent_at: Instant,
    deadline: Instant,
    expects_response: bool,
    user: T,
}

/// One connection's protocol state. `T` is what the caller wants back with each outcome (a
/// reply channel, an id).
pub struct ConnState<T> {
    cfg: ConnConfig,
    next_correlation_id: i32,
    /// Requests sent (or queued to be written) and not finished, oldest first.
    in_flight: VecDeque<InFlight<T>>,
    /// Encoded frames not yet handed to the transport, with their correlation ids.
    transmit: VecDeque<(i32, Vec<Bytes>)>,
    events: VecDeque<(T, Outcome)>,
    /// Set once the connection failed or was closed.
    failed: Option<Arc<NetError>>,
    /// A quota's throttle the broker asked for (KIP-219): nothing new is sent before.
    throttled_until: Option<Instant>,
}

impl<T> std::fmt::Debug for ConnState<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnState")
            .field("next_correlation_id", &self.next_correlation_id)
            .field("in_flight", &self.in_flight.len())
            .field("transmit", &self.transmit.len())
            .field("failed", &self.failed)
            .finish()
    }
}

impl<T> ConnState<T> {
    pub fn new(cfg: ConnConfig) -> Self {
        Self {
            cfg,
            next_correlation_id: 0,
            in_flight: VecDeque::new(),
            transmit: VecDeque::new(),
            events: VecDeque::new(),
            failed: None,
            throttled_until: None,
        }
    }

    /// Until when the broker asked this client to send nothing new (a quota's
    /// `throttle_time_ms`, from the response versions that are answered before the broker
    /// throttles, KIP-219), if that is still ahead of `now`.
    pub fn throttled_until(&self, now: Instant) -> Option<Instant> {
        self.throttled_until.filter(|t| *t > now)
    }

    pub fn config(&self) -> &ConnConfig {
        &self.cfg
    }

    /// Requests in flight (queued, written and unanswered).
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// Whether another request fits in the window (`max.in.flight.requests.per.connection`).
    pub fn can_send(&self) -> bool {
        self.failed.is_none() && self.in_flight.len() < self.cfg.max_in_flight
    }

    /// Whether the connection failed or was closed.
    pub fn is_closed(&self) -> bool {
        self.failed.is_some()
    }

    /// The error the connection failed with, if it did.
    pub fn error(&self) -> Option<&NetError> {
        self.failed.as_deref()
    }

    /// Encodes a request and queues it. Returns its correlation id, or the caller's value back
    /// with the error if the request cannot be sent (window full, closed, encoding failed).
    #[must_use = "a refused request comes back in the Err"]
    pub fn send(
        &mut self,
        body: &RequestBody,
        version: i16,
        user: T,
        now: Instant,
    ) -> Result<i32, (T, NetError)> {
        if let Some(e) = &self.failed {
            return Err((user, NetError::Poisoned(e.clone())));
        }
        if self.in_flight.len() >= self.cfg.max_in_flight {
            return Err((
                user,
                NetError::Config("send called with the in-flight window full".into()),
            ));
        }
        let api = body.api_key();
        let correlation_id = self.next_correlation_id;
        let header = RequestHeader {
            request_api_key: api as i16,
            request_api_version: version,
            correlation_id,
            client_id: self.cfg.client_id.clone(),
            ..Default::default()
        };
        let chunks = match frame::encode_request(&header, body) {
            Ok(w) => {
                let mut chunks = w.into_chunks();
                let len = chunks.iter().map(Bytes::len).sum();
                match size_prefix(len) {
                    Ok(p) => chunks.insert(0, p),
                    Err(e) => return Err((user, e)),
                }
                chunks
            }
            Err(e) => return Err((user, NetError::Encode(e))),
        };
        self.next_correlation_id = self.next_correlation_id.wrapping_add(1).max(0);
        let expects_response = !matches!(body, RequestBody::Produce(p) if p.acks == 0);
        self.in_flight.push_back(InFlight {
            correlation_id,
            api,
            version,
            sent_at: now,
            deadline: now + self.cfg.request_timeout,
            expects_response,
            user,
        });
        self.transmit.push_back((correlation_id, chunks));
        Ok(correlation_id)
    }

    /// The next frame to write (size prefix included), in send order. A request that expects
    /// no response is finished once its frame is handed out.
    #[must_use]
    pub fn poll_transmit(&mut self) -> Option<Vec<Bytes>> {
        let (cid, chunks) = self.transmit.pop_front()?;
        if let Some(pos) = self
            .in_flight
            .iter()
            .position(|r| r.correlation_id == cid && !r.expects_response)
        {
            if let Some(r) = self.in_flight.remove(pos) {
                self.events.push_back((r.user, Ok(None)));
            }
        }
        Some(chunks)
    }

    /// A finished request and its outcome, in the order they finished.
    #[must_use]
    pub fn poll_event(&mut self) -> Option<(T, Outcome)> {
        self.events.pop_front()
    }

    /// The earliest deadline of a request in flight.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.in_flight.iter().map(|r| r.deadline).min()
    }

    /// A response frame (size prefix removed) arrived.
    pub fn handle_frame(&mut self, frame: Bytes, now: Instant) {
        if self.failed.is_some() {
            return;
        }
        if frame.len() < 4 {
            self.fail(NetError::Closed(Some(format!(
                "response frame of {} bytes has no correlation id",
                frame.len()
            ))));
            return;
        }
        let got = i32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]);
        // Requests that expect no response never get one; skip them if still queued.
        let Some(front) = self.in_flight.iter().position(|r| r.expects_response) else {
            self.fail(NetError::UnexpectedResponse(got));
            return;
        };
        let expected = self.in_flight[front].correlation_id;
        if got != expected {
            self.fail(NetError::CorrelationMismatch { expected, got });
            return;
        }
        let Some(req) = self.in_flight.remove(front) else {
            return;
        };
        let decoded = frame::decode_response(&frame, req.api, req.version).or_else(|e| {
            // A broker that does not know our ApiVersions version answers with a v0 body
            // (KIP-511), which lists the versions it does support.
            if req.api == ApiKey::ApiVersions && req.version > 0 {
                frame::decode_response(&frame, req.api, 0).map_err(|_| e)
            } else {
                Err(e)
            }
        });
        match decoded {
            Ok(resp) => {
                if let Some(ms) = resp.body.throttle_time_ms().filter(|ms| *ms > 0)
                    && client_throttles(req.api, req.version)
                {
                    let until = now + std::time::Duration::from_millis(ms.unsigned_abs().into());
                    self.throttled_until =
                        Some(self.throttled_until.map_or(until, |t| t.max(until)));
                }
                self.events.push_back((req.user, Ok(Some(resp))))
            }
            Err(source) => {
                let err = NetError::Decode {
                    api: req.api,
                    version: req.version,
                    source,
                };
                self.events.push_back((req.user, Err(err.clone())));
                // A response we cannot read leaves the stream in doubt: stop using it.
                self.fail(err);
            }
        }
    }

    /// Time passed: a request past its deadline fails, and with it the connection (Kafka's
    /// client closes a connection whose request timed out, failing all in flight).
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.failed.is_some() {
            return;
        }
        if let Some(r) = self.in_flight.iter().find(|r| r.deadline <= now) {
            let err = NetError::Timeout {
                api: r.api,
                correlation_id: r.correlation_id,
                after: now.saturating_duration_since(r.sent_at),
            };
            self.fail(err);
        }
    }

    /// Closes the connection: everything in flight fails with `reason`.
    pub fn close(&mut self, reason: NetError) {
        if self.failed.is_none() {
            self.fail(reason);
        }
    }

    fn fail(&mut self, err: NetError) {
        for r in self.in_flight.drain(..) {
            self.events.push_back((r.user, Err(err.clone())));
        }
        self.transmit.clear();
        self.failed = Some(Arc::new(err));
    }
}

/// Whether a response of `api` at `version` is sent before the broker throttles its client,
/// so that the client must hold back for its `throttle_time_ms` (KIP-219). Older versions are
/// answered only once the throttle time has passed, so waiting again would double it. The
/// first such version of each api, from the comments of Kafka's response schemas ("Starting in
/// version N, on quota violation, brokers send out responses before throttling"); apis added
/// after KIP-219 are answered first at every version.
pub fn client_throttles(api: ApiKey, version: i16) -> bool {
    let first = match api {
        ApiKey::Produce => 6,
        ApiKey::Fetch => 8,
        ApiKey::Metadata => 6,
        ApiKey::OffsetCommit | ApiKey::OffsetFetch => 4,
        ApiKey::CreateTopics | ApiKey::JoinGroup | ApiKey::ListOffsets => 3,
        ApiKey::ApiVersions
        | ApiKey::DeleteTopics
        | ApiKey::DescribeConfigs
        | ApiKey::DescribeGroups
        | ApiKey::FindCoordinator
        | ApiKey::Heartbeat
        | ApiKey::LeaveGroup
        | ApiKey::ListGroups
        | ApiKey::SyncGroup => 2,
        ApiKey::AddOffsetsToTxn
        | ApiKey::AddPartitionsToTxn
        | ApiKey::AlterConfigs
        | ApiKey::AlterReplicaLogDirs
        | ApiKey::CreateAcls
        | ApiKey::CreateDelegationToken
        | ApiKey::CreatePartitions
        | ApiKey::DeleteAcls
        | ApiKey::DeleteGroups
        | ApiKey::DeleteRecords
        | ApiKey::DescribeAcls
        | ApiKey::DescribeDelegationToken
        | ApiKey::DescribeLogDirs
        | ApiKey::EndTxn
        | ApiKey::ExpireDelegationToken
        | ApiKey::InitProducerId
        | ApiKey::RenewDelegationToken
        | ApiKey::TxnOffsetCommit => 1,
        _ => 0,
    };
    version >= first
}
