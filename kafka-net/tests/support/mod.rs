//! Scripted fake brokers on 127.0.0.1:0 for the cluster and admin tests.
//!
//! A [`FakeCluster`] runs N brokers sharing one [`State`] (brokers, controller, topics,
//! coordinators, a log of every request). Each broker answers ApiVersions (from the
//! advertised ranges), Metadata (from the state) and FindCoordinator (from the state) by
//! itself; the test's handler sees every request first and may answer it, stall it, close
//! the connection, or let the default answer it (by returning `None`).
#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use kafka_net::server::{RequestReader, response_chunks, write_chunks};
use kafka_net::{Admin, ClusterConfig, ConnConfig, ConnectionConfig, NetError};
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::*;
use kafka_protocol::{KStr, Request};
use tokio::net::TcpListener;

/// One partition in the fake metadata.
#[derive(Debug, Clone)]
pub struct Part {
    pub leader: i32,
    pub epoch: i32,
    pub error: i16,
}

/// One topic in the fake metadata.
#[derive(Debug, Clone)]
pub struct Topic {
    pub error: i16,
    pub parts: Vec<Part>,
}

impl Topic {
    /// A healthy topic with these partition leaders (epoch 0).
    pub fn led_by(leaders: &[i32]) -> Self {
        Self {
            error: 0,
            parts: leaders
                .iter()
                .map(|l| Part {
                    leader: *l,
                    epoch: 0,
                    error: 0,
                })
                .collect(),
        }
    }
}

/// A request as a broker received it.
#[derive(Debug, Clone)]
pub struct Logged {
    pub node: i32,
    pub request: Request,
}

impl Logged {
    pub fn api(&self) -> ApiKey {
        self.request.api_key()
    }

    pub fn version(&self) -> i16 {
        self.request.version()
    }
}

/// What the brokers know and have seen.
#[derive(Debug)]
pub struct State {
    pub cluster_id: String,
    pub controller: i32,
    /// What Metadata advertises: node id -> (host, port).
    pub brokers: BTreeMap<i32, (String, i32)>,
    pub topics: BTreeMap<String, Topic>,
    /// Group -> coordinator node; unknown groups go to the first broker.
    pub coordinators: BTreeMap<String, i32>,
    pub log: Vec<Logged>,
    /// Problems of the fake itself (a response that would not encode).
    pub errors: Vec<String>,
}

/// How a broker answers one request.
pub enum Reply {
    Send(ResponseBody),
    /// Answer after a pause (the connection answers nothing else meanwhile, as Kafka).
    After(Duration, ResponseBody),
    /// Close the connection without answering.
    Close,
}

/// What a handler sees besides the request.
pub struct Ctx {
    pub node: i32,
    pub state: Arc<Mutex<State>>,
}

impl Ctx {
    pub fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap()
    }

    /// How many requests of `api` this broker had received before this one.
    pub fn seen(&self, api: ApiKey) -> usize {
        let s = self.state();
        s.log
            .iter()
            .filter(|l| l.node == self.node && l.api() == api)
            .count()
            .saturating_sub(1)
    }
}

pub type Handler = Arc<dyn Fn(&Ctx, &Request) -> Option<Reply> + Send + Sync>;

pub struct Builder {
    brokers: usize,
    versions: BTreeMap<ApiKey, (i16, i16)>,
    missing: BTreeSet<ApiKey>,
    handler: Option<Handler>,
}

impl Builder {
    /// Advertise `api` only up to version `max`.
    pub fn max_version(mut self, api: ApiKey, max: i16) -> Self {
        self.versions.insert(api, (api.versions().min, max));
        self
    }

    /// Do not advertise `api` at all.
    pub fn without(mut self, api: ApiKey) -> Self {
        self.missing.insert(api);
        self
    }

    pub fn handler(
        mut self,
        h: impl Fn(&Ctx, &Request) -> Option<Reply> + Send + Sync + 'static,
    ) -> Self {
        self.handler = Some(Arc::new(h));
        self
    }

    /// Binds every broker, then starts them. Node ids are 1..=N; the controller is 1.
    pub async fn start(self) -> FakeCluster {
        let mut listeners = Vec::new();
        let mut brokers = BTreeMap::new();
        for i in 0..self.brokers {
            let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let port = i32::from(l.local_addr().unwrap().port());
            let node = i32::try_from(i).unwrap() + 1;
            brokers.insert(node, ("127.0.0.1".to_owned(), port));
            listeners.push((node, l));
        }
        let state = Arc::new(Mutex::new(State {
            cluster_id: "fake-cluster".into(),
            controller: 1,
            brokers,
            topics: BTreeMap::new(),
            coordinators: BTreeMap::new(),
            log: Vec::new(),
            errors: Vec::new(),
        }));
        let advertised: Vec<api_versions_response::ApiVersion> = ApiKey::ALL
            .iter()
            .filter(|k| !self.missing.contains(k))
            .map(|k| {
                let (lo, hi) = self
                    .versions
                    .get(k)
                    .copied()
                    .unwrap_or_else(|| (k.versions().min, k.versions().max));
                api_versions_response::ApiVersion {
                    api_key: *k as i16,
                    min_version: lo,
                    max_version: hi,
                    ..Default::default()
                }
            })
            .collect();
        let shared = Arc::new(Shared {
            state: state.clone(),
            advertised,
            handler: self.handler,
        });
        let mut addrs = BTreeMap::new();
        for (node, l) in listeners {
            addrs.insert(node, l.local_addr().unwrap().to_string());
            tokio::spawn(accept(node, l, shared.clone()));
        }
        FakeCluster { state, addrs }
    }
}

struct Shared {
    state: Arc<Mutex<State>>,
    advertised: Vec<api_versions_response::ApiVersion>,
    handler: Option<Handler>,
}

/// The running fake brokers.
pub struct FakeCluster {
    pub state: Arc<Mutex<State>>,
    /// Node id -> `host:port`.
    pub addrs: BTreeMap<i32, String>,
}

impl FakeCluster {
    pub fn builder(brokers: usize) -> Builder {
        Builder {
            brokers,
            versions: BTreeMap::new(),
            missing: BTreeSet::new(),
            handler: None,
        }
    }

    pub fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap()
    }

    pub fn addr(&self, node: i32) -> String {
        self.addrs[&node].clone()
    }

    /// Every broker's address, in node order.
    pub fn bootstrap(&self) -> Vec<String> {
        self.addrs.values().cloned().collect()
    }

    pub fn add_topic(&self, name: &str, topic: Topic) {
        self.state().topics.insert(name.to_owned(), topic);
    }

    /// Requests of `api` received so far, in arrival order.
    pub fn requests(&self, api: ApiKey) -> Vec<Logged> {
        self.state()
            .log
            .iter()
            .filter(|l| l.api() == api)
            .cloned()
            .collect()
    }

    /// Fails the test if the fake itself hit a problem.
    pub fn assert_clean(&self) {
        let errors = self.state().errors.clone();
        assert!(errors.is_empty(), "fake broker problems: {errors:?}");
    }
}

/// A `host:port` nothing listens on.
pub fn dead_addr() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().to_string()
}

/// Client settings for tests: short backoffs and timeouts.
pub fn client_config(bootstrap: Vec<String>) -> ClusterConfig {
    ClusterConfig {
        bootstrap,
        connection: ConnectionConfig {
            conn: ConnConfig {
                request_timeout: Duration::from_secs(3),
                ..Default::default()
            },
            connect_timeout: Duration::from_secs(1),
            ..Default::default()
        },
        reconnect_backoff: Duration::from_millis(20),
        reconnect_backoff_max: Duration::from_millis(200),
        retry_backoff: Duration::from_millis(10),
        retries: 3,
        max_block: Duration::from_secs(3),
        ..Default::default()
    }
}

async fn accept(node: i32, listener: TcpListener, shared: Arc<Shared>) {
    while let Ok((sock, _)) = listener.accept().await {
        tokio::spawn(serve(node, sock, shared.clone()));
    }
}

async fn serve(node: i32, sock: tokio::net::TcpStream, shared: Arc<Shared>) {
    let (read, mut write) = sock.into_split();
    let mut reader = RequestReader::new(read, 1 << 20);
    while let Ok(Some(incoming)) = reader.next().await {
        let Ok(request) = incoming.request else {
            let msg = format!("broker {node}: undecodable request {:?}", incoming.prefix);
            shared.state.lock().unwrap().errors.push(msg);
            return;
        };
        shared.state.lock().unwrap().log.push(Logged {
            node,
            request: request.clone(),
        });
        let ctx = Ctx {
            node,
            state: shared.state.clone(),
        };
        let reply = shared
            .handler
            .as_ref()
            .and_then(|h| h(&ctx, &request))
            .or_else(|| default_reply(&shared, &ctx, &request));
        let body = match reply {
            Some(Reply::Send(b)) => b,
            Some(Reply::After(d, b)) => {
                tokio::time::sleep(d).await;
                b
            }
            Some(Reply::Close) => return,
            None => {
                let msg = format!("broker {node}: no answer for {:?}", request.api_key());
                shared.state.lock().unwrap().errors.push(msg);
                return;
            }
        };
        let chunks = match response_chunks(request.header.correlation_id, &body, request.version())
        {
            Ok(c) => c,
            Err(e) => {
                let msg = format!(
                    "broker {node}: {:?} v{} response does not encode: {e}",
                    request.api_key(),
                    request.version()
                );
                shared.state.lock().unwrap().errors.push(msg);
                return;
            }
        };
        if write_chunks(&mut write, &chunks).await.is_err() {
            return;
        }
    }
}

fn default_reply(shared: &Shared, ctx: &Ctx, req: &Request) -> Option<Reply> {
    let v = req.version();
    let body = match &req.body {
        RequestBody::ApiVersions(_) => ResponseBody::ApiVersions(ApiVersionsResponse {
            api_keys: shared.advertised.clone(),
            ..Default::default()
        }),
        RequestBody::Metadata(m) => ResponseBody::Metadata(metadata(&ctx.state(), m, v)),
        RequestBody::FindCoordinator(f) => {
            ResponseBody::FindCoordinator(find_coordinator(&ctx.state(), f, v))
        }
        _ => return None,
    };
    Some(Reply::Send(body))
}

pub fn kstr(s: &str) -> KStr {
    KStr::from(s.to_owned())
}

/// Every version of `api` our clients send (the codec knows more:
/// [`kafka_net::versions::client_max`]).
pub fn versions(api: ApiKey) -> std::ops::RangeInclusive<i16> {
    let range = kafka_net::versions::client_versions(api);
    range.min..=range.max
}

/// An admin client bootstrapped from every broker of `fake`.
pub async fn admin(fake: &FakeCluster) -> Admin {
    Admin::connect(client_config(fake.bootstrap()))
        .await
        .unwrap()
}

/// Asserts a Kafka error with this code, whose text names the code and `item`.
pub fn assert_kafka<T: std::fmt::Debug>(r: &Result<T, NetError>, code: ErrorCode, item: &str) {
    let e = r.as_ref().unwrap_err();
    assert_eq!(e.error_code(), Some(code), "{e}");
    let text = e.to_string();
    assert!(text.contains(code.name().unwrap()), "{text}");
    assert!(text.contains(item), "{text}");
}

/// The Metadata answer from the state, at version `v`.
pub fn metadata(s: &State, req: &MetadataRequest, v: i16) -> MetadataResponse {
    let names: Vec<String> = match &req.topics {
        Some(t) if !(t.is_empty() && v == 0) => t
            .iter()
            .filter_map(|t| t.name.as_ref().map(ToString::to_string))
            .collect(),
        _ => s.topics.keys().cloned().collect(),
    };
    let topics = names
        .iter()
        .map(|name| {
            let Some(t) = s.topics.get(name) else {
                return metadata_response::MetadataResponseTopic {
                    error_code: 3,
                    name: Some(kstr(name)),
                    ..Default::default()
                };
            };
            metadata_response::MetadataResponseTopic {
                error_code: t.error,
                name: Some(kstr(name)),
                partitions: t
                    .parts
                    .iter()
                    .zip(0..)
                    .map(|(p, i)| metadata_response::MetadataResponsePartition {
                        error_code: p.error,
                        partition_index: i,
                        leader_id: p.leader,
                        leader_epoch: if v >= 7 { p.epoch } else { -1 },
                        replica_nodes: vec![p.leader],
                        isr_nodes: vec![p.leader],
                        ..Default::default()
                    })
                    .collect(),
                ..Default::default()
            }
        })
        .collect();
    MetadataResponse {
        brokers: s
            .brokers
            .iter()
            .map(
                |(id, (host, port))| metadata_response::MetadataResponseBroker {
                    node_id: *id,
                    host: kstr(host),
                    port: *port,
                    ..Default::default()
                },
            )
            .collect(),
        cluster_id: Some(kstr(&s.cluster_id)),
        controller_id: s.controller,
        topics,
        ..Default::default()
    }
}

/// The FindCoordinator answer from the state, in the batched (v4+) or single form.
pub fn find_coordinator(
    s: &State,
    req: &FindCoordinatorRequest,
    v: i16,
) -> FindCoordinatorResponse {
    let first = s.brokers.keys().next().copied().unwrap_or(1);
    let locate = |key: &str| {
        let node = s.coordinators.get(key).copied().unwrap_or(first);
        let (host, port) = s.brokers.get(&node).cloned().unwrap_or_default();
        (node, kstr(&host), port)
    };
    if v >= 4 {
        FindCoordinatorResponse {
            coordinators: req
                .coordinator_keys
                .iter()
                .map(|k| {
                    let (node_id, host, port) = locate(k);
                    find_coordinator_response::Coordinator {
                        key: k.clone(),
                        node_id,
                        host,
                        port,
                        ..Default::default()
                    }
                })
                .collect(),
            ..Default::default()
        }
    } else {
        let (node_id, host, port) = locate(&req.key);
        FindCoordinatorResponse {
            node_id,
            host,
            port,
            ..Default::default()
        }
    }
}

/// The body of a request, or a test failure.
#[macro_export]
macro_rules! body {
    ($req:expr, $variant:ident) => {
        match &$req.body {
            kafka_protocol::messages::RequestBody::$variant(b) => b,
            other => panic!("expected {}, got {other:?}", stringify!($variant)),
        }
    };
}
