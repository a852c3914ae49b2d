//! Broker registration, heartbeats and sessions (Kafka's `ClusterControlManager` and
//! `BrokerHeartbeatManager`).
//!
//! A broker's state is fenced, unfenced or in controlled shutdown. A heartbeat moves it:
//!
//! | now | heartbeat | next |
//! |---|---|---|
//! | fenced | `want_shut_down` | shut down now |
//! | fenced | not `want_fence`, `current_metadata_offset` ≥ its registration's offset | unfenced |
//! | unfenced | `want_fence` | fenced (shut down now if `want_shut_down` too) |
//! | unfenced | `want_shut_down` | controlled shutdown if it leads a partition, else shut down now |
//! | controlled shutdown | (any) | shut down now once it leads nothing and every active broker has caught up with the image that says so |
//!
//! Records: unfencing writes `UnfenceBrokerRecord` and elects leaders for leaderless
//! partitions it can lead; fencing, and shutting down an unfenced broker, take it out of ISRs
//! and leadership and write `FenceBrokerRecord`; entering controlled shutdown writes
//! `BrokerRegistrationChangeRecord` and moves leadership and ISR membership off it. A session
//! that expires ([`Controller::tick`]) fences the broker.

use std::collections::BTreeSet;

use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::{
    BrokerHeartbeatRequest, BrokerHeartbeatResponse, BrokerRegistrationRequest,
    BrokerRegistrationResponse,
};
use kafka_protocol::metadata::register_broker_record::{BrokerEndpoint, BrokerFeature};
use kafka_protocol::metadata::{
    BrokerRegistrationChangeRecord, MetadataRecord, RegisterBrokerRecord,
};

use super::election::{elect_leaderless, remove_brokers};
use super::{Controller, Outcome, Session};
use crate::cluster::image::{BrokerImage, MetadataImage, fence_record, unfence_record};

/// A broker's state as the heartbeat state machine sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Fenced,
    Unfenced,
    ControlledShutdown,
    ShutdownNow,
}

impl Controller {
    /// BrokerRegistration.
    pub fn register_broker(
        &mut self,
        image: &MetadataImage,
        req: &BrokerRegistrationRequest,
        _version: i16,
        now_ms: i64,
    ) -> Outcome<BrokerRegistrationResponse> {
        self.sync_sessions(image, now_ms);
        let refuse = |code: ErrorCode| {
            Outcome::answer(BrokerRegistrationResponse {
                error_code: code.code(),
                broker_epoch: -1,
                ..Default::default()
            })
        };
        if req.cluster_id.as_str() != self.config.cluster_id {
            tracing::info!(
                broker = req.broker_id,
                cluster_id = %req.cluster_id,
                expected = %self.config.cluster_id,
                "registration refused: inconsistent cluster id"
            );
            return refuse(ErrorCode::INCONSISTENT_CLUSTER_ID);
        }
        if req.broker_id < 0 {
            return refuse(ErrorCode::INVALID_REQUEST);
        }
        let mut names = BTreeSet::new();
        if !req.listeners.iter().all(|l| names.insert(l.name.as_str())) {
            tracing::info!(
                broker = req.broker_id,
                "registration refused: a listener name repeats"
            );
            return refuse(ErrorCode::INVALID_REQUEST);
        }
        // Every finalized feature must be within the broker's supported range (a feature it
        // does not list, it supports at level 0 only).
        for (name, level) in image.features() {
            let supported = req.features.iter().find(|f| f.name.as_str() == name);
            let ok = supported.map_or(level == 0, |f| {
                f.min_supported_version <= level && level <= f.max_supported_version
            });
            if !ok {
                tracing::info!(
                    broker = req.broker_id,
                    feature = name,
                    level,
                    "registration refused: the broker does not support the finalized level"
                );
                return refuse(ErrorCode::UNSUPPORTED_VERSION);
            }
        }
        let existing = image.broker(req.broker_id);
        if let Some(old) = existing {
            if old.incarnation_id == req.incarnation_id {
                // The same process again (its answer was lost): same registration.
                self.touch(old.id, now_ms, None);
                return Outcome::answer(BrokerRegistrationResponse {
                    broker_epoch: old.epoch,
                    ..Default::default()
                });
            }
            if !old.fenced && self.session_alive(old.id, now_ms) {
                tracing::info!(
                    broker = req.broker_id,
                    "registration refused: another incarnation holds a live session"
                );
                return refuse(ErrorCode::DUPLICATE_BROKER_REGISTRATION);
            }
        }
        // Epochs only grow: above every registered broker's, and above the image's offset,
        // which is at least every epoch ever given (an epoch is at most the offset its record
        // was committed at), so an unregistered broker's epoch is never given again.
        let epoch = image
            .max_broker_epoch()
            .max(i64::try_from(image.offset()).unwrap_or(i64::MAX))
            .saturating_add(1);
        let mut records = Vec::new();
        if existing.is_some() {
            // The old incarnation is gone: out of ISRs and leadership.
            records = remove_brokers(&self.config, image, &BTreeSet::from([req.broker_id]));
        }
        records.push(MetadataRecord::RegisterBroker(RegisterBrokerRecord {
            broker_id: req.broker_id,
            incarnation_id: req.incarnation_id,
            broker_epoch: epoch,
            end_points: req
                .listeners
                .iter()
                .map(|l| BrokerEndpoint {
                    name: l.name.clone(),
                    host: l.host.clone(),
                    port: l.port,
                    security_protocol: l.security_protocol,
                    ..Default::default()
                })
                .collect(),
            features: req
                .features
                .iter()
                .map(|f| BrokerFeature {
                    name: f.name.clone(),
                    min_supported_version: f.min_supported_version,
                    max_supported_version: f.max_supported_version,
                    ..Default::default()
                })
                .collect(),
            rack: req.rack.clone(),
            fenced: true,
            in_controlled_shutdown: false,
            log_dirs: req.log_dirs.clone(),
            ..Default::default()
        }));
        self.sessions.insert(
            req.broker_id,
            Session {
                last_contact_ms: now_ms,
                fenced: true,
                metadata_offset: None,
                shutdown_offset: None,
            },
        );
        tracing::info!(broker = req.broker_id, epoch, "broker registered");
        Outcome::new(
            records,
            BrokerRegistrationResponse {
                broker_epoch: epoch,
                ..Default::default()
            },
        )
    }

    /// BrokerHeartbeat: renews the session and moves the broker's state (see the module docs).
    pub fn heartbeat(
        &mut self,
        image: &MetadataImage,
        req: &BrokerHeartbeatRequest,
        _version: i16,
        now_ms: i64,
    ) -> Outcome<BrokerHeartbeatResponse> {
        self.sync_sessions(image, now_ms);
        let Some(broker) = image
            .broker(req.broker_id)
            .filter(|b| b.epoch == req.broker_epoch)
        else {
            return Outcome::answer(BrokerHeartbeatResponse {
                error_code: ErrorCode::STALE_BROKER_EPOCH.code(),
                is_fenced: true,
                ..Default::default()
            });
        };
        let reported = u64::try_from(req.current_metadata_offset).ok();
        self.touch(broker.id, now_ms, reported);
        let caught_up = reported.is_some_and(|o| o >= broker.registered_at);
        let current = if broker.fenced {
            State::Fenced
        } else if broker.in_controlled_shutdown {
            State::ControlledShutdown
        } else {
            State::Unfenced
        };
        let leads = || leads_any(image, broker.id);
        let next = match current {
            State::Fenced if req.want_shut_down => State::ShutdownNow,
            State::Fenced if !req.want_fence && caught_up => State::Unfenced,
            State::Fenced => State::Fenced,
            State::Unfenced if req.want_fence && req.want_shut_down => State::ShutdownNow,
            State::Unfenced if req.want_fence => State::Fenced,
            State::Unfenced if req.want_shut_down && leads() => State::ControlledShutdown,
            State::Unfenced if req.want_shut_down => State::ShutdownNow,
            State::Unfenced => State::Unfenced,
            State::ControlledShutdown | State::ShutdownNow => {
                if leads() || !self.others_caught_up(image, broker.id) {
                    State::ControlledShutdown
                } else {
                    State::ShutdownNow
                }
            }
        };
        let records = self.transition(image, broker, current, next);
        if let Some(s) = self.sessions.get_mut(&broker.id) {
            s.fenced = matches!(next, State::Fenced | State::ShutdownNow);
        }
        if current != next {
            tracing::info!(broker = broker.id, from = ?current, to = ?next, "broker state changes");
        }
        Outcome::new(
            records,
            BrokerHeartbeatResponse {
                is_caught_up: caught_up,
                is_fenced: matches!(next, State::Fenced | State::ShutdownNow),
                should_shut_down: next == State::ShutdownNow,
                ..Default::default()
            },
        )
    }

    /// The records for a state change.
    fn transition(
        &mut self,
        image: &MetadataImage,
        broker: &BrokerImage,
        current: State,
        next: State,
    ) -> Vec<MetadataRecord> {
        let leaving = BTreeSet::from([broker.id]);
        match (current, next) {
            (State::Fenced, State::Unfenced) => {
                let mut records = vec![unfence_record(broker)];
                records.extend(elect_leaderless(&self.config, image, broker.id));
                records
            }
            (State::Unfenced | State::ControlledShutdown, State::Fenced | State::ShutdownNow) => {
                let mut records = remove_brokers(&self.config, image, &leaving);
                records.push(fence_record(broker));
                records
            }
            (State::Unfenced, State::ControlledShutdown) => {
                let mut records = vec![MetadataRecord::BrokerRegistrationChange(
                    BrokerRegistrationChangeRecord {
                        broker_id: broker.id,
                        broker_epoch: broker.epoch,
                        in_controlled_shutdown: 1,
                        ..Default::default()
                    },
                )];
                records.extend(remove_brokers(&self.config, image, &leaving));
                records
            }
            // Still shutting down: anything it could not hand over before is retried.
            (State::ControlledShutdown, State::ControlledShutdown) => {
                remove_brokers(&self.config, image, &leaving)
            }
            _ => Vec::new(),
        }
    }

    /// Whether every other active broker has reported at least the offset by which `id`
    /// stopped leading (fixed at the first heartbeat that finds it leading nothing).
    fn others_caught_up(&mut self, image: &MetadataImage, id: i32) -> bool {
        let offset = image.offset();
        let Some(target) = self
            .sessions
            .get_mut(&id)
            .map(|s| *s.shutdown_offset.get_or_insert(offset))
        else {
            return false;
        };
        image
            .brokers()
            .filter(|b| b.id != id && b.is_active())
            .all(|b| {
                self.sessions
                    .get(&b.id)
                    .and_then(|s| s.metadata_offset)
                    .is_some_and(|o| o >= target)
            })
    }

    /// Timer: fences every broker whose session expired and moves leadership off it.
    pub fn tick(&mut self, image: &MetadataImage, now_ms: i64) -> Vec<MetadataRecord> {
        self.sync_sessions(image, now_ms);
        let expired: BTreeSet<i32> = image
            .brokers()
            .filter(|b| !b.fenced && !self.session_alive(b.id, now_ms))
            .map(|b| b.id)
            .collect();
        if expired.is_empty() {
            return Vec::new();
        }
        let mut records = remove_brokers(&self.config, image, &expired);
        for id in &expired {
            if let Some(b) = image.broker(*id) {
                tracing::warn!(
                    broker = b.id,
                    epoch = b.epoch,
                    "broker session expired: fencing it"
                );
                records.push(fence_record(b));
            }
            if let Some(s) = self.sessions.get_mut(id) {
                s.fenced = true;
            }
        }
        records
    }

    /// When [`Self::tick`] has work next: the earliest session expiry of an unfenced broker.
    pub fn next_deadline(&self) -> Option<i64> {
        self.sessions
            .values()
            .filter(|s| !s.fenced)
            .map(|s| {
                s.last_contact_ms
                    .saturating_add(self.config.session_timeout_ms)
            })
            .min()
    }

    /// Brings the sessions in line with the image: a broker new to this controller gets a
    /// full session from `now_ms`, an unregistered one loses its session.
    pub(super) fn sync_sessions(&mut self, image: &MetadataImage, now_ms: i64) {
        self.sessions.retain(|id, _| image.broker(*id).is_some());
        for b in image.brokers() {
            let s = self.sessions.entry(b.id).or_insert(Session {
                last_contact_ms: now_ms,
                fenced: b.fenced,
                metadata_offset: None,
                shutdown_offset: None,
            });
            s.fenced = b.fenced;
        }
    }

    fn touch(&mut self, id: i32, now_ms: i64, reported: Option<u64>) {
        if let Some(s) = self.sessions.get_mut(&id) {
            s.last_contact_ms = s.last_contact_ms.max(now_ms);
            if reported.is_some() {
                s.metadata_offset = reported;
            }
        }
    }

    /// Whether `id` has heartbeated within the session timeout.
    fn session_alive(&self, id: i32, now_ms: i64) -> bool {
        self.sessions.get(&id).is_some_and(|s| {
            now_ms
                < s.last_contact_ms
                    .saturating_add(self.config.session_timeout_ms)
        })
    }
}

/// Whether `id` leads any partition.
fn leads_any(image: &MetadataImage, id: i32) -> bool {
    image
        .topics()
        .any(|t| t.partitions.values().any(|p| p.leader == id))
}
