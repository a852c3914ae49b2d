//! The producer handle: `send`, `flush`, `close`, metrics; the transactional calls are in
//! `producer/transactions.rs`.

mod transactions;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::task::{Context, Poll};
use std::time::Duration;

use kafka_net::{Cluster, PartitionInfo};
use kafka_protocol::TopicPartition;
use kafka_protocol::record::HeaderRef;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::accumulator::{Accumulator, AccumulatorConfig, Queue};
use crate::batch::AppendRecord;
use crate::config::ProducerConfig;
use crate::delivery::{Callback, Completion, DeliveryResult, Reports};
use crate::error::ProducerError;
use crate::fast_hash::FastMap;
use crate::metrics::{Counters, ProducerMetrics};
use crate::partitioner::{StickyPartitioner, StickyTopic, TopicPartitions};
use crate::pool::BufferPool;
use crate::record::{ProducerRecord, RecordMetadata};
use crate::sender::{Sender, Shutdown};
use crate::transaction::TxnManager;

/// What `send` needs of a topic: its partitions (cached per metadata version) and its
/// accumulator queues, so that a send does one map lookup.
#[derive(Debug)]
struct TopicView {
    version: u64,
    topic: Arc<str>,
    count: i32,
    available: Vec<i32>,
    queues: Vec<Queue>,
    sticky: Arc<StickyTopic>,
}

impl TopicView {
    fn partitions(&self) -> TopicPartitions<'_> {
        TopicPartitions {
            topic: &self.topic,
            count: self.count,
            available: &self.available,
        }
    }
}

struct Inner {
    cfg: ProducerConfig,
    cluster: Cluster,
    acc: Arc<Accumulator>,
    sticky: Arc<StickyPartitioner>,
    counters: Arc<Counters>,
    shutdown: watch::Sender<Shutdown>,
    sender: Mutex<Option<JoinHandle<()>>>,
    topics: RwLock<FastMap<String, Arc<TopicView>>>,
    /// The cluster's metadata version, kept current by a small task, so that a send checks
    /// its cached view with one atomic load.
    meta_version: Arc<AtomicU64>,
    /// The transaction manager, with `transactional.id`.
    txn: Option<Arc<Mutex<TxnManager>>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // Dropped without `close`: deliver what is queued in the background, then stop.
        self.acc.close();
        self.shutdown.send_if_modified(|s| {
            let changed = *s == Shutdown::Running;
            if changed {
                *s = Shutdown::Graceful;
            }
            changed
        });
    }
}

/// A Kafka producer. Cheap to clone; every clone sends through the same accumulator and
/// sender task.
#[derive(Clone)]
pub struct Producer {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Producer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Producer")
            .field("client_id", &self.inner.cfg.client_id)
            .field("accumulator", &self.inner.acc)
            .finish()
    }
}

/// The acknowledgement of one record: resolves when its batch completes.
#[derive(Debug)]
pub struct DeliveryFuture {
    rx: oneshot::Receiver<DeliveryResult>,
}

impl Future for DeliveryFuture {
    type Output = DeliveryResult;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<DeliveryResult> {
        Pin::new(&mut self.rx).poll(cx).map(|r| {
            r.unwrap_or_else(|_| {
                Err(ProducerError::Closed(Some(
                    "the producer went away before the record completed".into(),
                )))
            })
        })
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

impl Producer {
    /// Connects to the cluster and starts the sender task.
    pub async fn new(cfg: ProducerConfig) -> Result<Self, ProducerError> {
        let cluster = Cluster::connect(cfg.cluster_config()).await?;
        Ok(Self::with_cluster(cfg, cluster))
    }

    /// A producer over an existing cluster client.
    pub fn with_cluster(cfg: ProducerConfig, cluster: Cluster) -> Self {
        let pool = BufferPool::new(cfg.buffer_memory, cfg.batch_size);
        let acc = Arc::new(
            Accumulator::new(
                AccumulatorConfig {
                    batch_size: cfg.batch_size,
                    linger: cfg.linger,
                    retry_backoff: cfg.retry_backoff,
                    retry_backoff_max: cfg.retry_backoff_max,
                    delivery_timeout: cfg.delivery_timeout,
                    compression: cfg.compression,
                    compression_level: cfg.compression_level,
                    max_request_size: cfg.max_request_size,
                    idempotent: cfg.enable_idempotence,
                    guarantee_order: cfg.max_in_flight == 1,
                    transactional: cfg.transactional_id.is_some(),
                },
                pool,
            )
            .with_reports(Reports {
                interceptors: cfg.interceptors.clone(),
                handler: cfg.delivery_handler.clone(),
            }),
        );
        let counters = Arc::new(Counters::default());
        let (shutdown, shutdown_rx) = watch::channel(Shutdown::Running);
        let sticky = Arc::new(StickyPartitioner::new(cfg.batch_size));
        let txn = cfg.transactional_id.as_deref().map(|id| {
            Arc::new(Mutex::new(TxnManager::new(
                id,
                cfg.transaction_timeout,
                cfg.retry_backoff,
            )))
        });
        let mut sender = Sender::new(
            cfg.clone(),
            cluster.clone(),
            acc.clone(),
            counters.clone(),
            shutdown_rx,
        )
        .with_partition_load(sticky.clone());
        if let Some(t) = &txn {
            sender = sender.with_transactions(t.clone());
        }
        let handle = tokio::spawn(sender.run());
        let meta_version = Arc::new(AtomicU64::new(cluster.metadata().version));
        let mut changes = cluster.subscribe_metadata();
        let version = Arc::downgrade(&meta_version);
        tokio::spawn(async move {
            while changes.changed().await.is_ok() {
                let Some(v) = version.upgrade() else { break };
                v.store(changes.borrow_and_update().version, Ordering::Release);
            }
        });
        Self {
            inner: Arc::new(Inner {
                sticky,
                cfg,
                cluster,
                acc,
                counters,
                shutdown,
                sender: Mutex::new(Some(handle)),
                topics: RwLock::new(FastMap::default()),
                meta_version,
                txn,
            }),
        }
    }

    /// The settings in use.
    pub fn config(&self) -> &ProducerConfig {
        &self.inner.cfg
    }

    /// The cluster client underneath.
    pub fn cluster(&self) -> &Cluster {
        &self.inner.cluster
    }

    /// Sends a record and waits for its acknowledgement. The record is appended when this
    /// future is first polled; to pipeline many records, use [`Producer::enqueue`] (or run
    /// several of these futures at once).
    pub fn send(
        &self,
        record: ProducerRecord,
    ) -> impl Future<Output = Result<RecordMetadata, ProducerError>> + Send + 'static {
        let this = self.clone();
        async move { this.enqueue(record).await?.await }
    }

    /// Appends a record (waiting for metadata and buffer memory up to `max.block.ms`) and
    /// returns the future of its acknowledgement. Records enqueued one after another to a
    /// partition are written in that order.
    pub async fn enqueue(&self, record: ProducerRecord) -> Result<DeliveryFuture, ProducerError> {
        let (tx, rx) = oneshot::channel();
        self.append(record, Completion::Future(tx)).await?;
        Ok(DeliveryFuture { rx })
    }

    /// Appends a record; `callback` runs with its result when its batch completes (on the
    /// sender task: keep it short). An error here means the record was not appended and the
    /// callback will not run.
    pub async fn send_with_callback(
        &self,
        record: ProducerRecord,
        callback: impl FnOnce(DeliveryResult) + Send + 'static,
    ) -> Result<(), ProducerError> {
        let cb: Callback = Box::new(callback);
        self.append(record, Completion::Callback(cb)).await
    }

    /// Appends a record; the producer's [`DeliveryHandler`](crate::DeliveryHandler) gets its
    /// result with `opaque` when its batch completes (librdkafka's delivery report with a
    /// per-message opaque). Nothing is allocated for the report. An error here means the
    /// record was not appended and the handler will not hear of it; without a handler
    /// configured ([`ProducerConfigBuilder::delivery_handler`](crate::ProducerConfigBuilder::delivery_handler))
    /// every record is refused.
    pub async fn send_with_opaque(
        &self,
        record: ProducerRecord,
        opaque: u64,
    ) -> Result<(), ProducerError> {
        if self.inner.cfg.delivery_handler.is_none() {
            return Err(ProducerError::Config(
                "send_with_opaque needs a delivery handler (ProducerConfigBuilder::delivery_handler)"
                    .into(),
            ));
        }
        self.append(record, Completion::Opaque(opaque)).await
    }

    async fn append(
        &self,
        record: ProducerRecord,
        completion: Completion,
    ) -> Result<(), ProducerError> {
        let inner = &*self.inner;
        if inner.acc.is_closed() {
            return Err(ProducerError::Closed(None));
        }
        let record = if inner.cfg.interceptors.is_empty() {
            record
        } else {
            inner.cfg.interceptors.on_send(record)
        };
        let (view, waited) = match self.cached_view(&record.topic) {
            Some(view) => (view, Duration::ZERO),
            None => self.topic_view(&record.topic).await?,
        };
        let parts = view.partitions();
        let (partition, sticky) = match record.partition {
            Some(p) if p >= 0 && p < view.count => (p, false),
            Some(p) => {
                return Err(ProducerError::UnknownPartition {
                    topic: record.topic.to_string(),
                    partition: p,
                    count: view.count,
                });
            }
            None => match inner.cfg.partitioner.partition(
                &parts,
                record.key.as_deref(),
                record.value.as_deref(),
            ) {
                Some(p) if p >= 0 && p < view.count => (p, false),
                Some(p) => {
                    return Err(ProducerError::UnknownPartition {
                        topic: record.topic.to_string(),
                        partition: p,
                        count: view.count,
                    });
                }
                None => (inner.sticky.partition_in(&view.sticky, &parts), true),
            },
        };
        if let Some(txn) = &inner.txn {
            // Sends belong to a transaction; a partition new to it is added before its
            // first batch goes out.
            let tp = TopicPartition {
                topic: view.topic.clone(),
                partition,
            };
            if crate::transaction::lock(txn).check_send(&tp)? {
                inner.acc.wake.notify_one();
            }
        }
        let timestamp = record.timestamp.unwrap_or_else(now_ms);
        let headers: Vec<HeaderRef<'_>> = record
            .headers
            .iter()
            .map(|h| (h.key.as_str(), h.value.as_deref()))
            .collect();
        let rec = AppendRecord {
            timestamp,
            key: record.key.as_deref(),
            value: record.value.as_deref(),
            headers: &headers,
        };
        let max_block = inner.cfg.max_block.saturating_sub(waited);
        let appended = match usize::try_from(partition)
            .ok()
            .and_then(|i| view.queues.get(i))
        {
            Some(q) => {
                inner
                    .acc
                    .append_to(q, &view.topic, partition, &rec, completion, max_block)
                    .await?
            }
            None => {
                inner
                    .acc
                    .append(&view.topic, partition, &rec, completion, max_block)
                    .await?
            }
        };
        if sticky {
            if appended.batch_full {
                inner.sticky.batch_full_in(&view.sticky, &parts, partition);
            } else {
                let size = record.key.as_ref().map_or(0, |k| k.len())
                    + record.value.as_ref().map_or(0, |v| v.len());
                inner
                    .sticky
                    .on_append_in(&view.sticky, &parts, partition, size, true);
            }
        }
        if appended.new_batch || appended.batch_full {
            inner.acc.wake.notify_one();
        }
        Ok(())
    }

    /// The topic's cached partition view if it is as new as the cluster's metadata.
    fn cached_view(&self, topic: &str) -> Option<Arc<TopicView>> {
        let inner = &*self.inner;
        let version = inner.meta_version.load(Ordering::Acquire);
        inner
            .topics
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(topic)
            .filter(|v| v.version >= version)
            .cloned()
    }

    /// The topic's partition view, waiting for metadata up to `max.block.ms`; also returns
    /// how long it waited.
    async fn topic_view(&self, topic: &str) -> Result<(Arc<TopicView>, Duration), ProducerError> {
        if let Some(v) = self.cached_view(topic) {
            return Ok((v, Duration::ZERO));
        }
        let inner = &*self.inner;
        let started = Instant::now();
        let meta = inner.cluster.metadata();
        let meta = match meta
            .topic(topic)
            .filter(|t| !t.partitions.is_empty() && t.error.is_ok())
        {
            Some(_) => meta,
            None => {
                let max_block = inner.cfg.max_block;
                match tokio::time::timeout(max_block, inner.cluster.wait_for_topic(topic)).await {
                    Ok(Ok(_)) => inner.cluster.metadata(),
                    Ok(Err(kafka_net::NetError::MetadataTimeout { .. })) | Err(_) => {
                        return Err(ProducerError::MetadataTimeout {
                            topic: topic.to_owned(),
                            after: max_block,
                        });
                    }
                    Ok(Err(e)) => return Err(e.into()),
                }
            }
        };
        let Some(t) = meta.topic(topic) else {
            return Err(ProducerError::MetadataTimeout {
                topic: topic.to_owned(),
                after: inner.cfg.max_block,
            });
        };
        let count = i32::try_from(t.partitions.len()).unwrap_or(i32::MAX);
        let mut available: Vec<i32> = t
            .partitions
            .iter()
            .filter(|p| p.leader >= 0)
            .map(|p| p.partition)
            .collect();
        available.sort_unstable();
        let name: Arc<str> = Arc::from(topic);
        let queues = inner
            .acc
            .queues_for(&name, usize::try_from(count).unwrap_or(0));
        let view = Arc::new(TopicView {
            version: meta.version,
            topic: name,
            count,
            available,
            queues,
            sticky: inner.sticky.topic(topic),
        });
        inner
            .topics
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(topic.to_owned(), view.clone());
        Ok((view, started.elapsed()))
    }

    /// The partitions of a topic (waiting for its metadata up to `max.block.ms`).
    pub async fn partitions_for(&self, topic: &str) -> Result<Vec<PartitionInfo>, ProducerError> {
        self.topic_view(topic).await?;
        Ok(self
            .inner
            .cluster
            .metadata()
            .topic(topic)
            .map(|t| t.partitions.clone())
            .unwrap_or_default())
    }

    /// Sends everything queued now (ignoring `linger.ms`) and waits until every record sent
    /// before this call has completed.
    pub async fn flush(&self) {
        self.inner.acc.flush().await;
    }

    /// Closes the producer: no more sends; queued records are delivered for up to `timeout`,
    /// then whatever is left fails with [`ProducerError::Closed`]. Never waits much longer
    /// than `timeout`.
    pub async fn close(&self, timeout: Duration) {
        let inner = &*self.inner;
        inner.acc.close();
        inner.shutdown.send_if_modified(|s| {
            let changed = *s == Shutdown::Running;
            if changed {
                *s = Shutdown::Graceful;
            }
            changed
        });
        let handle = inner
            .sender
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        let Some(mut handle) = handle else {
            return;
        };
        if tokio::time::timeout(timeout, &mut handle).await.is_err() {
            inner.shutdown.send_replace(Shutdown::Force);
            inner.acc.pool().close();
            // The sender fails what is left and stops at its next turn; give it a moment,
            // then stop waiting for it.
            if tokio::time::timeout(Duration::from_secs(5), &mut handle)
                .await
                .is_err()
            {
                handle.abort();
            }
        }
        inner.acc.pool().close();
    }

    /// A snapshot of the metrics.
    pub fn metrics(&self) -> ProducerMetrics {
        let pool = self.inner.acc.pool();
        ProducerMetrics::from_counters(
            &self.inner.counters,
            pool.available_memory(),
            pool.total_memory(),
            pool.waiting(),
        )
    }
}
