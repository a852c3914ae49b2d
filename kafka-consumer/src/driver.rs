//! The background task that moves bytes for the consumer: it asks the state what to send
//! (fetches within the buffer cap, position lookups, metadata refreshes), sends it, and
//! hands each answer back to the state. It makes no decisions of its own.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use kafka_net::Cluster;
use kafka_protocol::messages::{ApiKey, FetchResponse, RequestBody, ResponseBody};
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::config::ConsumerConfig;
use crate::error::ConsumerError;
use crate::fetch::{FetchPlan, FetchSettings};
use crate::offsets;
use crate::state::{ConsumerState, LookupResult};
use crate::subscription::{Lookup, LookupKind};
use crate::types::{IsolationLevel, TopicPartition};

/// What the consumer handle and its tasks share.
pub(crate) struct Shared {
    pub(crate) state: Mutex<ConsumerState>,
    /// Wakes the driver (assignment, seek, resume, buffer space freed).
    pub(crate) wake: Notify,
    /// Wakes waiting polls and position lookups (data buffered, positions or errors set).
    pub(crate) changed: Notify,
    pub(crate) config: ConsumerConfig,
    /// Group membership (with `group.id`).
    pub(crate) group: Option<crate::group::GroupShared>,
}

impl Shared {
    pub(crate) fn lock(&self) -> MutexGuard<'_, ConsumerState> {
        // Every critical section leaves the state consistent before anything can panic.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

enum Done {
    Fetch {
        plan: FetchPlan,
        result: Result<(FetchResponse, i16), ConsumerError>,
        latency: Duration,
    },
    Lookups(Vec<(Lookup, LookupResult)>),
    Metadata(Result<(), ConsumerError>),
}

pub(crate) fn now() -> std::time::Instant {
    Instant::now().into_std()
}

/// Runs until the consumer is closed (or the task is aborted).
pub(crate) async fn run(shared: Arc<Shared>, cluster: Cluster) {
    let settings = shared.lock().settings().fetch.clone();
    let group = shared.config.group_id.clone();
    let isolation = shared.config.isolation_level;
    let backoff = shared.config.retry_backoff;
    let backoff_max = shared.config.retry_backoff_max.max(backoff);
    let mut metadata_backoff = backoff;
    let mut meta_rx = cluster.subscribe_metadata();
    let mut inflight: FuturesUnordered<BoxFuture<'static, Done>> = FuturesUnordered::new();
    let mut metadata_in_flight = false;
    let mut metadata_not_before = Instant::now();
    loop {
        let meta = meta_rx.borrow_and_update().clone();
        let t = Instant::now();
        let (plans, lookups, want_meta, deadline) = {
            let mut st = shared.lock();
            if st.closed {
                break;
            }
            st.apply_metadata(&meta);
            let lookups = st.lookups(t.into_std());
            let plans = st.plan_fetches(t.into_std(), |n| meta.brokers.contains_key(&n));
            (
                plans,
                lookups,
                st.metadata_wanted,
                st.next_deadline(t.into_std()),
            )
        };
        for plan in plans {
            inflight.push(Box::pin(fetch(cluster.clone(), settings.clone(), plan)));
        }
        for f in lookup_calls(&cluster, group.as_deref(), isolation, lookups) {
            inflight.push(f);
        }
        let mut wake_at = deadline.map(Instant::from_std);
        if !want_meta {
            metadata_backoff = backoff;
        } else if !metadata_in_flight {
            if t >= metadata_not_before {
                metadata_in_flight = true;
                // Refreshes asked for again and again (a topic that does not exist) back
                // off up to retry.backoff.max.ms.
                metadata_not_before = t + metadata_backoff;
                metadata_backoff = (metadata_backoff * 2).min(backoff_max);
                let c = cluster.clone();
                inflight.push(Box::pin(async move {
                    Done::Metadata(c.refresh_metadata().await.map(|_| ()).map_err(Into::into))
                }));
            } else {
                wake_at = Some(wake_at.map_or(metadata_not_before, |w| w.min(metadata_not_before)));
            }
        }
        tokio::select! {
            Some(done) = inflight.next(), if !inflight.is_empty() => {
                if let Done::Metadata(r) = &done {
                    metadata_in_flight = false;
                    if let Err(e) = r {
                        tracing::debug!(error = %e, "metadata refresh failed");
                    }
                }
                handle(&shared, done, &cluster);
            }
            () = shared.wake.notified() => {}
            r = meta_rx.changed() => {
                if r.is_err() {
                    break;
                }
            }
            () = sleep_until(wake_at) => {}
        }
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

fn handle(shared: &Shared, done: Done, cluster: &Cluster) {
    let t = now();
    let hints = {
        let mut st = shared.lock();
        match done {
            Done::Fetch {
                plan,
                result,
                latency,
            } => {
                st.on_fetch(&plan, result, latency, t);
            }
            Done::Lookups(results) => {
                for (lookup, r) in results {
                    st.on_lookup(&lookup, r, t);
                }
            }
            Done::Metadata(_) => {}
        }
        st.take_leader_hints()
    };
    // KIP-951: the leaders the answers named, for every user of the metadata cache (the
    // brokers they named become connectable).
    let (hints, endpoints) = hints;
    if !hints.is_empty() {
        cluster.apply_leader_hints(&hints, &endpoints);
    }
    shared.changed.notify_waiters();
}

async fn fetch(cluster: Cluster, settings: FetchSettings, plan: FetchPlan) -> Done {
    let started = Instant::now();
    let result = async {
        let conn = cluster.connection(plan.node).await?;
        let version = conn.version_for(ApiKey::Fetch)?.min(plan.max_version());
        let req = plan.request(&settings, version);
        match conn.request_at(RequestBody::from(req), version).await? {
            ResponseBody::Fetch(resp) => Ok((resp, version)),
            other => Err(ConsumerError::BadResponse(format!(
                "Fetch answered with {}",
                other.message_name()
            ))),
        }
    }
    .await;
    Done::Fetch {
        plan,
        result,
        latency: started.elapsed(),
    }
}

/// One request per kind and broker for the lookups asked for.
fn lookup_calls(
    cluster: &Cluster,
    group: Option<&str>,
    isolation: IsolationLevel,
    lookups: Vec<Lookup>,
) -> Vec<BoxFuture<'static, Done>> {
    let mut committed = Vec::new();
    let mut resets: BTreeMap<i32, Vec<Lookup>> = BTreeMap::new();
    let mut validations: BTreeMap<i32, Vec<Lookup>> = BTreeMap::new();
    for l in lookups {
        match l.kind {
            LookupKind::Committed => committed.push(l),
            LookupKind::Reset(_) => resets.entry(l.node).or_default().push(l),
            LookupKind::Validate { .. } => validations.entry(l.node).or_default().push(l),
        }
    }
    let mut out: Vec<BoxFuture<'static, Done>> = Vec::new();
    if !committed.is_empty() {
        let cluster = cluster.clone();
        let group = group.map(str::to_owned);
        out.push(Box::pin(async move {
            let tps: Vec<TopicPartition> = committed.iter().map(|l| l.tp.clone()).collect();
            let answer = match &group {
                Some(g) => {
                    offsets::fetch_committed_once(
                        &cluster,
                        g,
                        &tps,
                        isolation == IsolationLevel::ReadCommitted,
                    )
                    .await
                }
                None => Err(ConsumerError::NoGroupId("reading committed offsets")),
            };
            Done::Lookups(
                committed
                    .into_iter()
                    .map(|l| {
                        let r = match &answer {
                            Ok(map) => map.get(&l.tp).cloned().unwrap_or(Ok(None)),
                            Err(e) => Err(e.clone()),
                        };
                        (l, LookupResult::Committed(r))
                    })
                    .collect(),
            )
        }));
    }
    for (node, ls) in resets {
        let cluster = cluster.clone();
        out.push(Box::pin(async move {
            let items: Vec<_> = ls
                .iter()
                .map(|l| {
                    let ts = match l.kind {
                        LookupKind::Reset(t) => t.timestamp(),
                        _ => -1,
                    };
                    (l.tp.clone(), ts, l.leader_epoch)
                })
                .collect();
            let answer = offsets::list_offsets_on(&cluster, node, &items, isolation).await;
            Done::Lookups(
                ls.into_iter()
                    .map(|l| {
                        let r = pick(&answer, &l.tp);
                        (l, LookupResult::Reset(r))
                    })
                    .collect(),
            )
        }));
    }
    for (node, ls) in validations {
        let cluster = cluster.clone();
        out.push(Box::pin(async move {
            let items: Vec<_> = ls
                .iter()
                .map(|l| {
                    let epoch = match l.kind {
                        LookupKind::Validate { epoch } => epoch,
                        _ => -1,
                    };
                    (l.tp.clone(), l.leader_epoch, epoch)
                })
                .collect();
            let answer = offsets::offset_for_leader_epoch_on(&cluster, node, &items).await;
            Done::Lookups(
                ls.into_iter()
                    .map(|l| {
                        let r = pick(&answer, &l.tp);
                        (l, LookupResult::Validated(r))
                    })
                    .collect(),
            )
        }));
    }
    out
}

type PerPartition<T> = Result<BTreeMap<TopicPartition, Result<T, ConsumerError>>, ConsumerError>;

fn pick<T: Clone>(answer: &PerPartition<T>, tp: &TopicPartition) -> Result<T, ConsumerError> {
    match answer {
        Ok(map) => map
            .get(tp)
            .cloned()
            .unwrap_or_else(|| Err(ConsumerError::BadResponse(format!("no answer for {tp}")))),
        Err(e) => Err(e.clone()),
    }
}
