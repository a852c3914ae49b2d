//! The coordinator task: sends what the group machine asks for and hands the answers back.
//! It makes no decisions of its own.
//!
//! JoinGroup and SyncGroup go on a connection of their own to the coordinator, with a
//! request timeout above the rebalance timeout (the coordinator holds them until the whole
//! group has joined or the leader has synced, and a broker answers a connection's requests
//! in order: anything queued behind them would wait as long). Heartbeats and LeaveGroup go
//! on the cluster's shared connection, bounded by `request.timeout.ms`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use kafka_net::{Cluster, Connection, ConnectionConfig, CoordinatorType};
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::{ApiKey, RequestBody, ResponseBody};
use tokio::time::Instant;

use super::leader::LeaderTask;
use super::machine::Action;
use super::wire::{self, JoinParams, JoinResult, MemberParams, SyncParams, SyncResult};
use crate::driver::Shared;
use crate::error::ConsumerError;

enum Done {
    Coordinator(Result<i32, ConsumerError>),
    Join(Result<JoinResult, ConsumerError>),
    Sync {
        generation: i32,
        result: Result<SyncResult, ConsumerError>,
        counts: Option<BTreeMap<String, i32>>,
    },
    Heartbeat {
        generation: i32,
        result: Result<ErrorCode, ConsumerError>,
    },
    Leave,
    Metadata(bool),
}

/// The dedicated JoinGroup/SyncGroup connection.
#[derive(Clone)]
struct JoinConnection {
    cluster: Cluster,
    config: ConnectionConfig,
    cached: Arc<Mutex<Option<(i32, Connection)>>>,
}

impl JoinConnection {
    fn slot(&self) -> std::sync::MutexGuard<'_, Option<(i32, Connection)>> {
        self.cached
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    async fn get(&self, node: i32) -> Result<Connection, ConsumerError> {
        if let Some((n, c)) = self.slot().as_ref() {
            if *n == node && !c.is_closed() {
                return Ok(c.clone());
            }
        }
        let addr = self
            .cluster
            .metadata()
            .brokers
            .get(&node)
            .map(kafka_net::metadata::BrokerInfo::addr)
            .ok_or_else(|| {
                kafka_net::NetError::NoBrokers(format!("coordinator {node} is not in the metadata"))
            })?;
        let conn = Connection::connect(&addr, self.config.clone()).await?;
        *self.slot() = Some((node, conn.clone()));
        Ok(conn)
    }

    fn forget(&self) {
        *self.slot() = None;
    }

    async fn call(
        &self,
        node: i32,
        api: ApiKey,
        build: impl FnOnce(i16) -> Result<RequestBody, ConsumerError>,
    ) -> Result<ResponseBody, ConsumerError> {
        let result = async {
            let conn = self.get(node).await?;
            let version = conn.version_for(api)?;
            Ok(conn.request_at(build(version)?, version).await?)
        }
        .await;
        if let Err(ConsumerError::Net(_)) = &result {
            self.forget();
        }
        result
    }
}

/// One request to broker `node` on the shared connection, within `timeout`.
async fn call_shared(
    cluster: &Cluster,
    node: i32,
    api: ApiKey,
    timeout: Duration,
    build: impl FnOnce(i16) -> RequestBody,
) -> Result<ResponseBody, ConsumerError> {
    let started = Instant::now();
    tokio::time::timeout(timeout, async {
        let conn = cluster.connection(node).await?;
        let version = conn.version_for(api)?;
        Ok(conn.request_at(build(version), version).await?)
    })
    .await
    .unwrap_or_else(|_| {
        Err(ConsumerError::Timeout {
            what: format!("{api:?}"),
            after: started.elapsed(),
            last: None,
        })
    })
}

fn unexpected(api: &str, body: &ResponseBody) -> ConsumerError {
    ConsumerError::BadResponse(format!("{api} answered with {}", body.message_name()))
}

/// Sends a LeaveGroup (close, unsubscribe, poll timeout).
pub(crate) async fn leave(
    cluster: &Cluster,
    node: i32,
    params: &MemberParams,
    reason: &str,
    timeout: Duration,
) -> Result<(), ConsumerError> {
    let body = call_shared(cluster, node, ApiKey::LeaveGroup, timeout, |v| {
        RequestBody::LeaveGroup(wire::leave_request(params, reason, v))
    })
    .await?;
    let ResponseBody::LeaveGroup(resp) = &body else {
        return Err(unexpected("LeaveGroup", &body));
    };
    let code = wire::parse_leave(resp);
    if code.is_ok() {
        Ok(())
    } else {
        Err(ConsumerError::kafka(
            code,
            format!("LeaveGroup {}", params.group_id),
        ))
    }
}

/// Runs until the consumer is closed (or the task is aborted).
pub(crate) async fn run(shared: Arc<Shared>, cluster: Cluster) {
    let Some(group) = shared.group.as_ref() else {
        return;
    };
    let config = &shared.config;
    let group_id = config.group_id.clone().unwrap_or_default();
    let request_timeout = config.request_timeout;
    let mut join_config = config.cluster_config().connection;
    join_config.conn.request_timeout =
        request_timeout.max(config.max_poll_interval + Duration::from_secs(5));
    let join_conn = JoinConnection {
        cluster: cluster.clone(),
        config: join_config,
        cached: Arc::new(Mutex::new(None)),
    };
    let mut meta_rx = cluster.subscribe_metadata();
    let mut inflight: FuturesUnordered<BoxFuture<'static, Done>> = FuturesUnordered::new();
    loop {
        let meta = meta_rx.borrow_and_update().clone();
        let now = Instant::now().into_std();
        let (actions, deadline, identity) = {
            let mut m = group.lock();
            m.on_metadata(&meta);
            let actions = m.poll_actions(now);
            (actions, m.next_deadline(now), m.identity())
        };
        {
            let mut st = shared.lock();
            if st.closed {
                break;
            }
            if st.identity != identity {
                st.identity = identity;
            }
        }
        for action in actions {
            inflight.push(perform(
                action,
                &cluster,
                &join_conn,
                &group_id,
                request_timeout,
            ));
        }
        tokio::select! {
            Some(done) = inflight.next(), if !inflight.is_empty() => {
                let now = Instant::now().into_std();
                let mut m = group.lock();
                match done {
                    Done::Coordinator(r) => m.on_coordinator(r, now),
                    Done::Join(r) => m.on_join(r, now),
                    Done::Sync { generation, result, counts } => {
                        m.on_sync(generation, result, counts, now);
                    }
                    Done::Heartbeat { generation, result } => {
                        m.on_heartbeat(generation, result, now);
                    }
                    Done::Leave => {}
                    Done::Metadata(ok) => m.on_metadata_refreshed(ok, now),
                }
            }
            () = group.wake.notified() => {}
            r = meta_rx.changed() => {
                if r.is_err() {
                    break;
                }
            }
            () = sleep_until(deadline) => {}
        }
        // Polls look for steps and errors again.
        shared.changed.notify_waiters();
    }
}

async fn sleep_until(at: Option<std::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(Instant::from_std(at)).await,
        None => std::future::pending().await,
    }
}

fn perform(
    action: Action,
    cluster: &Cluster,
    join_conn: &JoinConnection,
    group_id: &str,
    request_timeout: Duration,
) -> BoxFuture<'static, Done> {
    let cluster = cluster.clone();
    match action {
        Action::FindCoordinator => {
            let group_id = group_id.to_owned();
            Box::pin(async move {
                cluster.invalidate_coordinator(CoordinatorType::Group, &group_id);
                let r = tokio::time::timeout(
                    request_timeout,
                    cluster.coordinator(CoordinatorType::Group, &group_id),
                )
                .await
                .unwrap_or_else(|_| {
                    Err(kafka_net::NetError::NoBrokers(
                        "FindCoordinator timed out".into(),
                    ))
                });
                Done::Coordinator(r.map_err(Into::into))
            })
        }
        Action::Join { node, params } => {
            let jc = join_conn.clone();
            Box::pin(async move { Done::Join(join(&jc, node, &params).await) })
        }
        Action::Sync {
            node,
            params,
            leader,
        } => {
            let jc = join_conn.clone();
            Box::pin(async move {
                let generation = params.generation_id;
                let (result, counts) =
                    sync(&cluster, &jc, node, &params, leader, request_timeout).await;
                Done::Sync {
                    generation,
                    result,
                    counts,
                }
            })
        }
        Action::Heartbeat { node, params } => Box::pin(async move {
            let generation = params.generation_id;
            let result = call_shared(&cluster, node, ApiKey::Heartbeat, request_timeout, |v| {
                RequestBody::Heartbeat(wire::heartbeat_request(&params, v))
            })
            .await
            .and_then(|body| match body {
                ResponseBody::Heartbeat(r) => Ok(ErrorCode(r.error_code)),
                other => Err(unexpected("Heartbeat", &other)),
            });
            Done::Heartbeat { generation, result }
        }),
        Action::Leave {
            node,
            params,
            reason,
        } => Box::pin(async move {
            if let Err(e) = leave(&cluster, node, &params, &reason, request_timeout).await {
                tracing::debug!(error = %e, "LeaveGroup failed");
            }
            Done::Leave
        }),
        Action::RefreshMetadata => Box::pin(async move {
            let ok = match cluster.refresh_all_metadata().await {
                Ok(_) => true,
                Err(e) => {
                    tracing::debug!(error = %e, "metadata refresh for the pattern failed");
                    false
                }
            };
            Done::Metadata(ok)
        }),
    }
}

async fn join(
    jc: &JoinConnection,
    node: i32,
    params: &JoinParams,
) -> Result<JoinResult, ConsumerError> {
    let body = jc
        .call(node, ApiKey::JoinGroup, |v| {
            wire::join_request(params, v).map(RequestBody::from)
        })
        .await?;
    match &body {
        ResponseBody::JoinGroup(r) => Ok(wire::parse_join(r)),
        other => Err(unexpected("JoinGroup", other)),
    }
}

/// The leader's metadata and assignment, then SyncGroup.
async fn sync(
    cluster: &Cluster,
    jc: &JoinConnection,
    node: i32,
    params: &SyncParams,
    leader: Option<LeaderTask>,
    request_timeout: Duration,
) -> (
    Result<SyncResult, ConsumerError>,
    Option<BTreeMap<String, i32>>,
) {
    let mut counts = None;
    let assignments = match leader {
        None => Vec::new(),
        Some(task) => {
            let topics: Vec<String> = task.topics().into_iter().collect();
            // The leader watches these topics' partition counts from now on.
            cluster.add_interest(topics.iter().cloned());
            let names: Vec<&str> = topics.iter().map(String::as_str).collect();
            let snapshot = if names.is_empty() {
                cluster.metadata()
            } else {
                match tokio::time::timeout(request_timeout, cluster.fetch_topics(&names)).await {
                    Ok(Ok(s)) => s,
                    Ok(Err(e)) => return (Err(e.into()), None),
                    Err(_) => {
                        return (
                            Err(ConsumerError::Timeout {
                                what: "metadata for the group's assignment".into(),
                                after: request_timeout,
                                last: None,
                            }),
                            None,
                        );
                    }
                }
            };
            let c: BTreeMap<String, i32> = topics
                .iter()
                .map(|t| {
                    let n = snapshot
                        .topic(t)
                        .filter(|i| i.error.is_ok())
                        .map_or(-1, |i| {
                            i32::try_from(i.partitions.len()).unwrap_or(i32::MAX)
                        });
                    (t.clone(), n)
                })
                .collect();
            match task.assign(&c) {
                Ok(a) => {
                    counts = Some(c);
                    a
                }
                Err(e) => return (Err(e), None),
            }
        }
    };
    let result = async {
        let body = jc
            .call(node, ApiKey::SyncGroup, |v| {
                wire::sync_request(params, assignments, v).map(RequestBody::from)
            })
            .await?;
        match &body {
            ResponseBody::SyncGroup(r) => Ok(wire::parse_sync(r)),
            other => Err(unexpected("SyncGroup", other)),
        }
    }
    .await;
    (result, counts)
}
