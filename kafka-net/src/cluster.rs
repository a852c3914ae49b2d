//! The cluster client: bootstrap, the metadata cache and its refreshes, one connection per
//! broker with reconnect backoff, routing (partition leader, coordinator, controller, least
//! loaded broker) and retries of retriable errors.

use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::{
    ApiKey, FindCoordinatorRequest, MetadataRequest, RequestBody, ResponseBody, metadata_request,
};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::connection::{Connection, ConnectionConfig};
use crate::error::NetError;
use crate::metadata::{BrokerInfo, LeaderHint, MetadataSnapshot, TopicInfo};

/// Settings of the cluster client, with Kafka's client key names and defaults.
#[derive(Debug, Clone)]
pub struct ClusterConfig {
    /// `bootstrap.servers`: `host:port` of some brokers.
    pub bootstrap: Vec<String>,
    /// Settings of each broker connection (`client.id`, timeouts, buffers, in-flight window).
    pub connection: ConnectionConfig,
    /// `metadata.max.age.ms`: refresh at least this often.
    pub metadata_max_age: Duration,
    /// `reconnect.backoff.ms`: first wait before reconnecting to a broker.
    pub reconnect_backoff: Duration,
    /// `reconnect.backoff.max.ms`: the wait doubles per failure up to this.
    pub reconnect_backoff_max: Duration,
    /// `retry.backoff.ms`: wait between retries of a failed request.
    pub retry_backoff: Duration,
    /// How often a retriable failure is retried by [`Cluster::retry`].
    pub retries: u32,
    /// `max.block.ms`: how long to wait for metadata.
    pub max_block: Duration,
    /// `allow.auto.create.topics`: let Metadata requests create missing topics.
    pub allow_auto_topic_creation: bool,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        Self {
            bootstrap: vec!["127.0.0.1:9092".into()],
            connection: ConnectionConfig::default(),
            metadata_max_age: Duration::from_secs(300),
            reconnect_backoff: Duration::from_millis(50),
            reconnect_backoff_max: Duration::from_secs(1),
            retry_backoff: Duration::from_millis(100),
            retries: 5,
            max_block: Duration::from_secs(60),
            allow_auto_topic_creation: true,
        }
    }
}

/// Coordinator key types of FindCoordinator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i8)]
pub enum CoordinatorType {
    Group = 0,
    Transaction = 1,
}

#[derive(Default)]
struct Slot {
    conn: Option<Connection>,
    failures: u32,
    retry_at: Option<Instant>,
}

struct Inner {
    cfg: ClusterConfig,
    meta: watch::Sender<Arc<MetadataSnapshot>>,
    slots: Mutex<HashMap<i32, Arc<tokio::sync::Mutex<Slot>>>>,
    interest: Mutex<BTreeSet<String>>,
    refresh: tokio::sync::Mutex<()>,
    coordinators: Mutex<HashMap<(CoordinatorType, String), i32>>,
    rng: Mutex<u64>,
}

/// A handle to the cluster client; clone it freely.
#[derive(Clone)]
pub struct Cluster {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let m = self.metadata();
        f.debug_struct("Cluster")
            .field("bootstrap", &self.inner.cfg.bootstrap)
            .field("brokers", &m.brokers.len())
            .field("topics", &m.topics.len())
            .finish()
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    // A panic while holding one of these locks cannot leave the data half-updated in a way
    // that matters here (each critical section is a single insert/remove), so carry on.
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Cluster {
    /// Bootstraps: fetches metadata from the first bootstrap broker that answers.
    pub async fn connect(cfg: ClusterConfig) -> Result<Self, NetError> {
        if cfg.bootstrap.is_empty() {
            return Err(NetError::Config("bootstrap.servers is empty".into()));
        }
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)
            | 1;
        let (meta, _) = watch::channel(Arc::new(MetadataSnapshot::default()));
        let cluster = Self {
            inner: Arc::new(Inner {
                cfg,
                meta,
                slots: Mutex::new(HashMap::new()),
                interest: Mutex::new(BTreeSet::new()),
                refresh: tokio::sync::Mutex::new(()),
                coordinators: Mutex::new(HashMap::new()),
                rng: Mutex::new(seed),
            }),
        };
        let mut errors = Vec::new();
        for addr in &cluster.inner.cfg.bootstrap {
            match Connection::connect(addr, cluster.inner.cfg.connection.clone()).await {
                Ok(conn) => match cluster.fetch_metadata(&conn, Some(Vec::new()), false).await {
                    Ok(_) => {
                        cluster.spawn_periodic_refresh();
                        return Ok(cluster);
                    }
                    Err(e) => errors.push(format!("{addr}: {e}")),
                },
                Err(e) => errors.push(format!("{addr}: {e}")),
            }
        }
        Err(NetError::NoBrokers(errors.join("; ")))
    }

    pub fn config(&self) -> &ClusterConfig {
        &self.inner.cfg
    }

    /// The current metadata snapshot.
    pub fn metadata(&self) -> Arc<MetadataSnapshot> {
        self.inner.meta.borrow().clone()
    }

    /// A receiver that sees every new metadata snapshot.
    pub fn subscribe_metadata(&self) -> watch::Receiver<Arc<MetadataSnapshot>> {
        self.inner.meta.subscribe()
    }

    /// Adds topics to those every refresh asks for.
    pub fn add_interest<I: IntoIterator<Item = String>>(&self, topics: I) {
        lock(&self.inner.interest).extend(topics);
    }

    fn spawn_periodic_refresh(&self) {
        let weak: Weak<Inner> = Arc::downgrade(&self.inner);
        let period = self.inner.cfg.metadata_max_age;
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(period).await;
                let Some(inner) = weak.upgrade() else { break };
                let cluster = Cluster { inner };
                if let Err(e) = cluster.refresh_metadata().await {
                    tracing::debug!(error = %e, "periodic metadata refresh failed");
                }
            }
        });
    }

    /// Refreshes metadata for the topics of interest (all known brokers are returned anyway).
    pub async fn refresh_metadata(&self) -> Result<Arc<MetadataSnapshot>, NetError> {
        let topics: Vec<String> = lock(&self.inner.interest).iter().cloned().collect();
        let conn = self.least_loaded().await?;
        let auto_create = self.inner.cfg.allow_auto_topic_creation;
        self.fetch_metadata(&conn, Some(topics), auto_create).await
    }

    /// Refreshes metadata for every topic of the cluster.
    pub async fn refresh_all_metadata(&self) -> Result<Arc<MetadataSnapshot>, NetError> {
        let conn = self.least_loaded().await?;
        self.fetch_metadata(&conn, None, false).await
    }

    /// Refreshes metadata for `topics` only (none: just the brokers), never creating topics.
    /// The answer is merged into the cache; the topics are not added to those of interest.
    pub async fn fetch_topics(&self, topics: &[&str]) -> Result<Arc<MetadataSnapshot>, NetError> {
        let conn = self.least_loaded().await?;
        let topics = topics.iter().map(|t| (*t).to_owned()).collect();
        self.fetch_metadata(&conn, Some(topics), false).await
    }

    /// `auto_create` is sent where the version can carry it (v4+); before v4 the broker's
    /// own setting decides.
    async fn fetch_metadata(
        &self,
        conn: &Connection,
        topics: Option<Vec<String>>,
        auto_create: bool,
    ) -> Result<Arc<MetadataSnapshot>, NetError> {
        let _one_at_a_time = self.inner.refresh.lock().await;
        let version = conn.version_for(ApiKey::Metadata)?;
        // Whether the answer lists every topic (v0 reads an empty list as "all").
        let all = topics.as_ref().is_none_or(|t| t.is_empty() && version == 0);
        let request_topics = match topics {
            // v0 cannot ask for "no topics": an empty list means all there.
            Some(t) if t.is_empty() && version == 0 => Some(Vec::new()),
            Some(t) => Some(
                t.into_iter()
                    .map(|name| metadata_request::MetadataRequestTopic {
                        name: Some(KStr::from(name)),
                        ..Default::default()
                    })
                    .collect(),
            ),
            None if version == 0 => Some(Vec::new()),
            None => None,
        };
        let req = MetadataRequest {
            topics: request_topics,
            // The field exists from v4 on; older versions must keep its default (true).
            allow_auto_topic_creation: auto_create || version < 4,
            ..Default::default()
        };
        let body = conn.request_at(RequestBody::Metadata(req), version).await?;
        let ResponseBody::Metadata(resp) = body else {
            return Err(NetError::Closed(Some(
                "Metadata answered with another api".into(),
            )));
        };
        let previous = self.metadata();
        let snap = Arc::new(MetadataSnapshot::from_response(
            &resp,
            &previous,
            all,
            Instant::now().into_std(),
        ));
        self.inner.meta.send_replace(snap.clone());
        Ok(snap)
    }

    /// Takes leader hints from a Produce or Fetch answer into the cache (KIP-951; see
    /// [`MetadataSnapshot::with_leader_hints`]). Returns, for each hint, whether the cache now
    /// has a leader for its partition at least as new as the hint (taken now, or before).
    pub fn apply_leader_hints(&self, hints: &[LeaderHint], endpoints: &[BrokerInfo]) -> Vec<bool> {
        if hints.is_empty() {
            return Vec::new();
        }
        self.inner
            .meta
            .send_if_modified(|snap| match snap.with_leader_hints(hints, endpoints) {
                Some(next) => {
                    tracing::debug!(?hints, "leaders taken from an answer's hints");
                    *snap = Arc::new(next);
                    true
                }
                None => false,
            });
        let meta = self.metadata();
        hints.iter().map(|h| meta.knows_leader(h)).collect()
    }

    /// Waits until `topic` has metadata with a leader for every partition, refreshing as
    /// needed, for at most `max.block.ms`.
    pub async fn wait_for_topic(&self, topic: &str) -> Result<TopicInfo, NetError> {
        self.add_interest([topic.to_owned()]);
        let started = Instant::now();
        let deadline = started + self.inner.cfg.max_block;
        let mut last = None;
        loop {
            if let Some(t) = self.metadata().topic(topic) {
                if t.is_ready() {
                    return Ok(t.clone());
                }
                last = Some(t.error).filter(|e| !e.is_ok());
                if matches!(
                    t.error,
                    ErrorCode::INVALID_TOPIC_EXCEPTION | ErrorCode::TOPIC_AUTHORIZATION_FAILED
                ) {
                    return Err(NetError::Kafka {
                        code: t.error,
                        context: format!("metadata for topic {topic}"),
                    });
                }
            }
            if Instant::now() >= deadline {
                return Err(NetError::MetadataTimeout {
                    topic: topic.to_owned(),
                    after: started.elapsed(),
                    last,
                });
            }
            if let Err(e) = self.refresh_metadata().await {
                tracing::debug!(error = %e, topic, "metadata refresh failed");
            }
            if !self
                .metadata()
                .topic(topic)
                .is_some_and(TopicInfo::is_ready)
            {
                tokio::time::sleep(
                    self.inner
                        .cfg
                        .retry_backoff
                        .min(deadline.saturating_duration_since(Instant::now())),
                )
                .await;
            }
        }
    }

    /// Waits for a metadata snapshot newer than `version`, for at most `timeout`.
    pub async fn wait_for_update(
        &self,
        version: u64,
        timeout: Duration,
    ) -> Option<Arc<MetadataSnapshot>> {
        let mut rx = self.subscribe_metadata();
        tokio::time::timeout(timeout, async {
            loop {
                let snap = rx.borrow_and_update().clone();
                if snap.version > version {
                    return Some(snap);
                }
                if rx.changed().await.is_err() {
                    return None;
                }
            }
        })
        .await
        .ok()
        .flatten()
    }

    fn slot(&self, node: i32) -> Arc<tokio::sync::Mutex<Slot>> {
        lock(&self.inner.slots).entry(node).or_default().clone()
    }

    fn jitter(&self, d: Duration) -> Duration {
        let mut s = lock(&self.inner.rng);
        *s ^= *s << 13;
        *s ^= *s >> 7;
        *s ^= *s << 17;
        // +/- 20%.
        let f = 0.8 + (*s % 1000) as f64 / 2500.0;
        d.mul_f64(f)
    }

    /// A connection to broker `node`, opening one if needed. After failures, waits for the
    /// reconnect backoff (exponential with jitter) before trying again.
    pub async fn connection(&self, node: i32) -> Result<Connection, NetError> {
        let addr = self
            .metadata()
            .brokers
            .get(&node)
            .map(BrokerInfo::addr)
            .ok_or_else(|| NetError::NoBrokers(format!("broker {node} is not in the metadata")))?;
        let slot = self.slot(node);
        let mut slot = slot.lock().await;
        if let Some(c) = &slot.conn {
            if !c.is_closed() {
                return Ok(c.clone());
            }
        }
        slot.conn = None;
        if let Some(at) = slot.retry_at {
            tokio::time::sleep_until(at).await;
        }
        match Connection::connect(&addr, self.inner.cfg.connection.clone()).await {
            Ok(c) => {
                slot.failures = 0;
                slot.retry_at = None;
                slot.conn = Some(c.clone());
                Ok(c)
            }
            Err(e) => {
                slot.failures = slot.failures.saturating_add(1);
                let exp = self
                    .inner
                    .cfg
                    .reconnect_backoff
                    .saturating_mul(1 << slot.failures.min(16).saturating_sub(1))
                    .min(self.inner.cfg.reconnect_backoff_max);
                slot.retry_at = Some(Instant::now() + self.jitter(exp));
                Err(e)
            }
        }
    }

    /// The connected broker with the fewest requests in flight; else the first broker that
    /// accepts a connection; else a bootstrap address.
    pub async fn least_loaded(&self) -> Result<Connection, NetError> {
        let meta = self.metadata();
        let live: Vec<Connection> = {
            let slots: Vec<_> = lock(&self.inner.slots).values().cloned().collect();
            slots
                .iter()
                .filter_map(|s| s.try_lock().ok().and_then(|s| s.conn.clone()))
                .filter(|c| !c.is_closed())
                .collect()
        };
        if let Some(c) = live.into_iter().min_by_key(Connection::load) {
            return Ok(c);
        }
        let mut errors = Vec::new();
        for node in meta.brokers.keys() {
            match self.connection(*node).await {
                Ok(c) => return Ok(c),
                Err(e) => errors.push(format!("{node}: {e}")),
            }
        }
        for addr in &self.inner.cfg.bootstrap {
            match Connection::connect(addr, self.inner.cfg.connection.clone()).await {
                Ok(c) => return Ok(c),
                Err(e) => errors.push(format!("{addr}: {e}")),
            }
        }
        Err(NetError::NoBrokers(errors.join("; ")))
    }

    /// A connection to the leader of `topic`/`partition` (refreshing metadata if unknown).
    pub async fn leader_connection(
        &self,
        topic: &str,
        partition: i32,
    ) -> Result<Connection, NetError> {
        let info = self.wait_for_topic(topic).await?;
        let p = info.partition(partition).ok_or_else(|| NetError::Kafka {
            code: ErrorCode::UNKNOWN_TOPIC_OR_PARTITION,
            context: format!("{topic}-{partition}"),
        })?;
        self.connection(p.leader).await
    }

    /// A connection to the controller (for topic administration).
    pub async fn controller_connection(&self) -> Result<Connection, NetError> {
        let id = self.metadata().controller_id;
        if id >= 0 {
            if let Ok(c) = self.connection(id).await {
                return Ok(c);
            }
        }
        self.least_loaded().await
    }

    /// The coordinator of a group or transactional id, found with FindCoordinator and cached.
    pub async fn coordinator(&self, kind: CoordinatorType, key: &str) -> Result<i32, NetError> {
        if let Some(n) = lock(&self.inner.coordinators).get(&(kind, key.to_owned())) {
            return Ok(*n);
        }
        let conn = self.least_loaded().await?;
        let version = conn.version_for(ApiKey::FindCoordinator)?;
        if kind == CoordinatorType::Transaction && version < 1 {
            return Err(NetError::UnsupportedApi {
                api: ApiKey::FindCoordinator,
                detail: Some("transaction coordinators need FindCoordinator v1+".into()),
            });
        }
        let mut req = FindCoordinatorRequest {
            key_type: kind as i8,
            ..Default::default()
        };
        if version >= 4 {
            req.coordinator_keys = vec![KStr::from(key.to_owned())];
        } else {
            req.key = KStr::from(key.to_owned());
        }
        let body = conn
            .request_at(RequestBody::FindCoordinator(req), version)
            .await?;
        let ResponseBody::FindCoordinator(resp) = body else {
            return Err(NetError::Closed(Some(
                "FindCoordinator answered with another api".into(),
            )));
        };
        let (code, node, host, port) = if version >= 4 {
            let c = resp.coordinators.first().ok_or_else(|| NetError::Kafka {
                code: ErrorCode::COORDINATOR_NOT_AVAILABLE,
                context: format!("FindCoordinator {key}: empty answer"),
            })?;
            (c.error_code, c.node_id, c.host.to_string(), c.port)
        } else {
            (
                resp.error_code,
                resp.node_id,
                resp.host.to_string(),
                resp.port,
            )
        };
        crate::connection::check(code, &format!("FindCoordinator for {key}"))?;
        // Make sure the broker is known even if metadata is older than the answer.
        if !self.metadata().brokers.contains_key(&node) {
            let mut snap = (*self.metadata()).clone();
            snap.brokers.insert(
                node,
                BrokerInfo {
                    node_id: node,
                    host,
                    port,
                    rack: None,
                },
            );
            self.inner.meta.send_replace(Arc::new(snap));
        }
        lock(&self.inner.coordinators).insert((kind, key.to_owned()), node);
        Ok(node)
    }

    /// Forgets a cached coordinator (after NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE).
    pub fn invalidate_coordinator(&self, kind: CoordinatorType, key: &str) {
        lock(&self.inner.coordinators).remove(&(kind, key.to_owned()));
    }

    /// Sends `body` to the coordinator of `key` at the negotiated version.
    pub async fn send_to_coordinator(
        &self,
        kind: CoordinatorType,
        key: &str,
        body: RequestBody,
    ) -> Result<ResponseBody, NetError> {
        let node = self.coordinator(kind, key).await?;
        let conn = self
            .connection(node)
            .await
            .inspect_err(|_| self.invalidate_coordinator(kind, key))?;
        conn.request(body)
            .await
            .inspect_err(|_| self.invalidate_coordinator(kind, key))
    }

    /// Sends `body` to the least loaded broker at the negotiated version.
    pub async fn send_any(&self, body: RequestBody) -> Result<ResponseBody, NetError> {
        self.least_loaded().await?.request(body).await
    }

    /// Runs `op` until it succeeds, fails with a non-retriable error, or `retries` run out,
    /// waiting `retry.backoff.ms` between attempts. Errors that mean stale metadata (not
    /// leader, unknown partition, fenced epochs, lost connections) refresh it first.
    pub async fn retry<T, F, Fut>(&self, mut op: F) -> Result<T, NetError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, NetError>>,
    {
        let mut attempt = 0;
        loop {
            match op().await {
                Ok(v) => return Ok(v),
                Err(e) if e.is_retriable() && attempt < self.inner.cfg.retries => {
                    attempt += 1;
                    tracing::debug!(error = %e, attempt, "retrying");
                    if stale_metadata(&e) {
                        let _ = self.refresh_metadata().await;
                    }
                    tokio::time::sleep(self.inner.cfg.retry_backoff).await;
                }
                Err(e) => return Err(e),
            }
        }
    }
}

/// Whether an error means the metadata the request was routed by is out of date.
pub fn stale_metadata(e: &NetError) -> bool {
    match e {
        NetError::Kafka { code, .. } => matches!(
            *code,
            ErrorCode::NOT_LEADER_OR_FOLLOWER
                | ErrorCode::UNKNOWN_TOPIC_OR_PARTITION
                | ErrorCode::LEADER_NOT_AVAILABLE
                | ErrorCode::FENCED_LEADER_EPOCH
                | ErrorCode::UNKNOWN_LEADER_EPOCH
                | ErrorCode::UNKNOWN_TOPIC_ID
                | ErrorCode::NOT_CONTROLLER
        ),
        NetError::Io(_)
        | NetError::Closed(_)
        | NetError::Poisoned(_)
        | NetError::Timeout { .. } => true,
        _ => false,
    }
}
