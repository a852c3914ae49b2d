//! A small admin client over a [`Cluster`]: create and delete topics, add partitions, describe
//! the cluster, list offsets, describe and alter configs, list, describe and delete groups;
//! and the security calls: create, describe and delete ACLs (`acls.rs`, with `kafka-auth`'s
//! ACL types), describe and alter SCRAM credentials (`scram.rs`, the password salted on the
//! client), describe and alter client quotas (`quotas.rs`, KIP-546).
//!
//! Every call picks the version negotiated with the broker it talks to and fills in only the
//! fields that version has. Batch calls return one result per item, in the order given; an
//! item the broker refused carries [`NetError::Kafka`] with the code (its Display names it,
//! e.g. `TOPIC_ALREADY_EXISTS (36)`) and which item it was. Items that failed with a retriable
//! error (not the controller, not the leader, not the coordinator, a lost connection) are
//! routed again and retried, up to `retries` times with `retry.backoff.ms` in between.

mod acls;
mod configs;
mod groups;
mod quotas;
mod scram;
mod topics;

use std::collections::BTreeMap;
use std::time::Duration;

use futures::future::{BoxFuture, join_all};
use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;

pub use configs::{
    AlterConfigOp, ConfigEntry, ConfigResource, ConfigResourceResult, ConfigResourceType,
    ConfigSource, OpType,
};
pub use groups::{GroupDescription, GroupListing, GroupMember};
pub use quotas::{
    CLIENT_ID, IP, QuotaAlteration, QuotaEntity, QuotaEntry, QuotaFilter, QuotaFilterComponent,
    QuotaMatch, QuotaOp, USER,
};
pub use scram::{ScramAlteration, UserScramCredentials};
pub use topics::{ClusterDescription, CreatedTopic, ListedOffset, NewTopic, OffsetSpec};

use crate::cluster::{Cluster, ClusterConfig};
use crate::connection::Connection;
use crate::error::NetError;

/// Route target meaning "any broker" (the least loaded one).
const ANY: i32 = -1;

/// Which per-item failures of a batched call go round again. Failures of the whole request
/// (a lost connection, a timeout) always do when they are retriable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Retry {
    /// Only those (configs: a refused resource stays refused).
    Transport,
    /// And NOT_CONTROLLER (topic operations: TOPIC_ALREADY_EXISTS and the like are final).
    Controller,
    /// And every retriable code (offsets, groups: leaders and coordinators move).
    Retriable,
}

impl Retry {
    fn applies(self, e: &NetError) -> bool {
        match e.error_code() {
            None => e.is_retriable(),
            Some(code) => match self {
                Self::Transport => false,
                Self::Controller => code == ErrorCode::NOT_CONTROLLER,
                Self::Retriable => code.is_retriable(),
            },
        }
    }
}

/// The admin client. Cheap to clone; it shares the [`Cluster`]'s connections and metadata.
#[derive(Debug, Clone)]
pub struct Admin {
    cluster: Cluster,
    timeout: Duration,
}

/// Where each pending item goes: a broker id, or [`ANY`].
type Routes = Vec<(usize, Result<i32, NetError>)>;
/// What one broker said about the items sent to it.
type Replies<T> = Result<Vec<(usize, Result<T, NetError>)>, NetError>;

impl Admin {
    /// An admin client over an existing cluster client.
    pub fn new(cluster: Cluster) -> Self {
        Self {
            cluster,
            timeout: Duration::from_secs(30),
        }
    }

    /// Bootstraps a cluster client and wraps it.
    pub async fn connect(cfg: ClusterConfig) -> Result<Self, NetError> {
        Ok(Self::new(Cluster::connect(cfg).await?))
    }

    /// The time the broker may take for topic operations (`timeout_ms` of CreateTopics,
    /// DeleteTopics, CreatePartitions); 30 s by default.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The cluster client underneath.
    pub fn cluster(&self) -> &Cluster {
        &self.cluster
    }

    fn timeout_ms(&self) -> i32 {
        i32::try_from(self.timeout.as_millis()).unwrap_or(i32::MAX)
    }

    /// A connection to broker `node`, or to the least loaded broker for [`ANY`].
    async fn conn_for(&self, node: i32) -> Result<Connection, NetError> {
        if node == ANY {
            self.cluster.least_loaded().await
        } else {
            self.cluster.connection(node).await
        }
    }

    /// Runs a batched call over `n` items. Each round, `route` says which broker each pending
    /// item goes to (it gets the round number, from 0); `send` sends one request per broker
    /// with its items and maps the answer to per-item results. Items failing in a way `retry`
    /// covers go round again, at most `retries` more times. Results come back in item order.
    async fn fan_out<'a, T>(
        &'a self,
        what: &'static str,
        retry: Retry,
        n: usize,
        route: impl Fn(u32, Vec<usize>) -> BoxFuture<'a, Routes>,
        send: impl Fn(i32, Vec<usize>) -> BoxFuture<'a, Replies<T>>,
    ) -> Vec<Result<T, NetError>> {
        let cfg = self.cluster.config();
        let mut out: Vec<Option<Result<T, NetError>>> = (0..n).map(|_| None).collect();
        let mut pending: Vec<usize> = (0..n).collect();
        let mut round = 0;
        while !pending.is_empty() {
            let mut again = Vec::new();
            let mut keep = |i: usize, r: Result<T, NetError>, again: &mut Vec<usize>| {
                if let Some(slot) = out.get_mut(i) {
                    if r.as_ref().is_err_and(|e| retry.applies(e)) {
                        again.push(i);
                    }
                    *slot = Some(r);
                }
            };
            let mut by_node: BTreeMap<i32, Vec<usize>> = BTreeMap::new();
            for (i, target) in route(round, std::mem::take(&mut pending)).await {
                match target {
                    Ok(node) => by_node.entry(node).or_default().push(i),
                    Err(e) => keep(i, Err(e), &mut again),
                }
            }
            let replies = join_all(by_node.into_iter().map(|(node, items)| {
                let reply = send(node, items.clone());
                async move { (items, reply.await) }
            }))
            .await;
            for (items, reply) in replies {
                match reply {
                    Ok(results) => {
                        let mut answered = vec![false; items.len()];
                        for (i, r) in results {
                            if let Some(pos) = items.iter().position(|x| *x == i) {
                                answered[pos] = true;
                                keep(i, r, &mut again);
                            }
                        }
                        for (i, _) in items.iter().zip(answered).filter(|(_, a)| !a) {
                            let e =
                                NetError::BadResponse(format!("{what}: no result for item {i}"));
                            keep(*i, Err(e), &mut again);
                        }
                    }
                    Err(e) => {
                        for i in items {
                            keep(i, Err(e.clone()), &mut again);
                        }
                    }
                }
            }
            round += 1;
            if again.is_empty() || round > cfg.retries {
                break;
            }
            tracing::debug!(what, items = again.len(), round, "retrying admin items");
            again.sort_unstable();
            again.dedup();
            pending = again;
            tokio::time::sleep(cfg.retry_backoff).await;
        }
        out.into_iter()
            .map(|r| r.unwrap_or_else(|| Err(NetError::BadResponse(format!("{what}: no result")))))
            .collect()
    }
}

/// The items of one batch that repeat an earlier item's key: Kafka refuses a request that
/// names the same topic, partition or resource twice, so such items fail on their own.
fn duplicates<K: Ord>(keys: impl Iterator<Item = K>) -> Vec<bool> {
    let mut seen = std::collections::BTreeSet::new();
    keys.map(|k| !seen.insert(k)).collect()
}

/// The error of an item [`duplicates`] found.
fn duplicate(what: &str, name: &str) -> NetError {
    NetError::Config(format!("{what} {name} is named more than once in one call"))
}

/// A per-item Kafka error code as a result, with the broker's message (if any) in the context.
fn check_code(
    code: i16,
    message: Option<&KStr>,
    context: impl FnOnce() -> String,
) -> Result<(), NetError> {
    let code = ErrorCode(code);
    if code.is_ok() {
        return Ok(());
    }
    let mut context = context();
    if let Some(m) = message.filter(|m| !m.is_empty()) {
        context.push_str(&format!(" ({m})"));
    }
    Err(NetError::Kafka { code, context })
}

/// Takes the expected variant out of a response body.
macro_rules! expect_body {
    ($body:expr, $variant:ident) => {
        match $body {
            kafka_protocol::messages::ResponseBody::$variant(r) => r,
            other => {
                return Err(crate::error::NetError::BadResponse(format!(
                    "{} answered with {}",
                    stringify!($variant),
                    other.message_name()
                )));
            }
        }
    };
}
use expect_body;
