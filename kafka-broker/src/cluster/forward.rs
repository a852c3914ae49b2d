//! A broker's way to the active controller: requests for the controller (its own
//! registration and heartbeats; clients' CreateTopics, DeleteTopics, CreatePartitions,
//! AlterConfigs, ...) go to the controller the node's metadata names as leader, else to each
//! voter in turn, and move on when one answers NOT_CONTROLLER or cannot be reached, until a
//! deadline. On a combined node the request to its own controller is answered without a socket.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kafka_net::ClientSecurity;
use kafka_net::connection::{Connection, ConnectionConfig};
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::{RequestBody, ResponseBody};
use tokio::sync::watch;

use super::active::{ActiveController, SharedState};
use super::api;
use crate::config::BrokerConfig;
use crate::error::BrokerError;

/// The shortest and longest wait for one controller's answer.
const MIN_ATTEMPT: Duration = Duration::from_millis(200);
const MAX_ATTEMPT: Duration = Duration::from_secs(10);

/// Requests to the active controller.
pub struct ControllerClient {
    /// (id, `host:port` of its controller listener) of every voter.
    voters: Vec<(i32, String)>,
    /// The node's metadata: whom it knows as the leader.
    state: watch::Receiver<SharedState>,
    /// This node's own controller, on a combined node.
    local: Option<(ActiveController, Arc<BrokerConfig>)>,
    connections: tokio::sync::Mutex<HashMap<i32, Connection>>,
    /// How connections to the controller listener are secured
    /// ([`crate::cluster::link_security::LinkSecurity::controllers`]).
    security: ClientSecurity,
    /// The voter to try next when no leader is known.
    next: Mutex<usize>,
}

impl std::fmt::Debug for ControllerClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ControllerClient")
            .field("voters", &self.voters)
            .finish_non_exhaustive()
    }
}

impl ControllerClient {
    /// A client of the controllers `config` names; `security`: how its connections are
    /// secured (the controller listener's protocol and this node's credentials).
    pub fn new(
        config: &BrokerConfig,
        state: watch::Receiver<SharedState>,
        local: Option<ActiveController>,
        security: ClientSecurity,
    ) -> Self {
        Self {
            voters: config
                .quorum
                .voters
                .iter()
                .map(|v| (v.id, v.addr()))
                .collect(),
            state,
            local: local.map(|a| (a, Arc::new(config.clone()))),
            connections: tokio::sync::Mutex::new(HashMap::new()),
            security,
            next: Mutex::new(0),
        }
    }

    /// The leader the metadata names, if any.
    pub fn leader(&self) -> Option<i32> {
        self.state.borrow().leader.map(|l| l as i32)
    }

    fn pick(&self, tried_leader: &mut bool) -> Option<(i32, String)> {
        if !*tried_leader {
            *tried_leader = true;
            if let Some(l) = self.leader() {
                if let Some(v) = self.voters.iter().find(|(id, _)| *id == l) {
                    return Some(v.clone());
                }
            }
        }
        let mut next = crate::sync::lock(&self.next);
        let v = self.voters.get(*next % self.voters.len().max(1)).cloned();
        *next += 1;
        v
    }

    /// Sends `body` at `version` to the active controller, retrying others until `timeout`.
    /// NOT_CONTROLLER is only returned (as the request's own refusal) when no controller took
    /// it in time.
    pub async fn send(
        &self,
        body: RequestBody,
        version: i16,
        timeout: Duration,
    ) -> Result<ResponseBody, BrokerError> {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut last_error = String::from("no controller answered");
        loop {
            let mut tried_leader = false;
            for _ in 0..=self.voters.len() {
                let Some((id, addr)) = self.pick(&mut tried_leader) else {
                    break;
                };
                match self
                    .send_to(id, &addr, body.clone(), version, deadline)
                    .await
                {
                    Ok(answer) if !api::is_not_controller(&answer) => return Ok(answer),
                    Ok(_) => last_error = format!("controller {id} is not the active controller"),
                    Err(e) => last_error = format!("controller {id} at {addr}: {e}"),
                }
                if tokio::time::Instant::now() >= deadline {
                    break;
                }
            }
            if tokio::time::Instant::now() >= deadline {
                return match api::refusal(&body) {
                    Some(refusal) => Ok(refusal),
                    None => Err(BrokerError::kafka(ErrorCode::NOT_CONTROLLER, last_error)),
                };
            }
            // An election takes a second or two: wait for the metadata to name a leader.
            let mut state = self.state.clone();
            let _ = tokio::time::timeout(Duration::from_millis(200), state.changed()).await;
        }
    }

    /// One attempt at one controller, bounded by the caller's deadline (at least
    /// [`MIN_ATTEMPT`], at most [`MAX_ATTEMPT`]): a controller cut off from this broker must
    /// not hold a heartbeat past the broker's session.
    async fn send_to(
        &self,
        id: i32,
        addr: &str,
        body: RequestBody,
        version: i16,
        deadline: tokio::time::Instant,
    ) -> Result<ResponseBody, String> {
        let limit = deadline
            .saturating_duration_since(tokio::time::Instant::now())
            .clamp(MIN_ATTEMPT, MAX_ATTEMPT);
        if let Some((active, config)) = &self.local {
            if i64::from(id) == active.quorum().id() as i64 {
                return tokio::time::timeout(limit, api::handle(active, config, body, version))
                    .await
                    .map_err(|_| format!("no answer in {limit:?}"))?
                    .ok_or_else(|| "not a controller request".to_owned());
            }
        }
        let conn = {
            let mut conns = self.connections.lock().await;
            match conns.get(&id).filter(|c| !c.is_closed()) {
                Some(c) => c.clone(),
                None => {
                    let cfg = ConnectionConfig {
                        connect_timeout: limit.min(Duration::from_secs(2)),
                        handshake: false,
                        security: self.security.clone(),
                        ..Default::default()
                    };
                    let c = Connection::connect(addr, cfg).await.map_err(|e| {
                        if matches!(e, kafka_net::NetError::Authentication { .. }) {
                            tracing::warn!(controller = id, %addr, error = %e,
                                "cannot log in to a controller");
                        }
                        e.to_string()
                    })?;
                    conns.insert(id, c.clone());
                    c
                }
            }
        };
        let Ok(answer) = tokio::time::timeout(limit, conn.request_at(body, version)).await else {
            // Likely cut off: the next attempt connects anew.
            self.connections.lock().await.remove(&id);
            return Err(format!("no answer in {limit:?}"));
        };
        match answer {
            Ok(body) => Ok(body),
            Err(e) => {
                self.connections.lock().await.remove(&id);
                Err(e.to_string())
            }
        }
    }
}
