//! The leader side of the ISR, Kafka's `AlterPartitionManager` and ISR expiration task: the
//! partition layer proposes changes ([`Partition::update_follower`] when a follower out of
//! the ISR caught up, [`Partition::isr_shrink`] every half `replica.lag.time.max.ms` for
//! followers that fell behind); this module sends them to the active controller in
//! AlterPartition requests, one request in flight with every change queued meanwhile, and
//! hands each partition the controller's answer. A partition has at most one change in flight,
//! so the queue holds at most one entry per led partition.

use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::alter_partition_request::{BrokerState, PartitionData, TopicData};
use kafka_protocol::messages::{AlterPartitionRequest, RequestBody, ResponseBody};
use tokio::sync::mpsc;

use crate::broker::{Broker, now_ms};
use crate::cluster::ClusterLink;
use crate::cluster::lifecycle::Standing;
use crate::replica::{IsrChange, Partition};

/// The AlterPartition version sent (Kafka's controllers since 3.5 take 0-3; ours too): each
/// new member with its broker epoch, so that a member that restarted since is refused.
const ALTER_PARTITION_VERSION: i16 = 3;
/// How long one AlterPartition may take, forwarding included.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

type Proposal = (Arc<Partition>, IsrChange);

/// Where a leader's ISR changes go (nowhere on a single node: there are no followers).
#[derive(Debug, Default)]
pub struct IsrManager {
    tx: OnceLock<mpsc::UnboundedSender<Proposal>>,
}

impl IsrManager {
    /// Queues an ISR change for the controller. Without a cluster it fails at once.
    pub fn submit(&self, partition: &Arc<Partition>, change: IsrChange) {
        let sent = self
            .tx
            .get()
            .is_some_and(|tx| tx.send((Arc::clone(partition), change)).is_ok());
        if !sent {
            partition.isr_change_failed(now_ms());
        }
    }

    /// Starts sending the changes of `broker` through `link`, and the periodic look for
    /// lagging followers. Both end with the broker.
    pub fn start(&self, broker: &Arc<Broker>, link: Arc<ClusterLink>) {
        let (tx, rx) = mpsc::unbounded_channel();
        if self.tx.set(tx).is_err() {
            return;
        }
        let weak = Arc::downgrade(broker);
        tokio::spawn(send_changes(weak.clone(), link, rx));
        tokio::spawn(expire_lagging(weak));
    }
}

/// Every half `replica.lag.time.max.ms`, each led partition's followers that fell behind leave
/// its ISR.
async fn expire_lagging(broker: Weak<Broker>) {
    let Some(lag) = broker
        .upgrade()
        .map(|b| b.config.replication.lag_time_max_ms)
    else {
        return;
    };
    let mut tick = tokio::time::interval(Duration::from_millis((lag as u64 / 2).max(1)));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        let Some(b) = broker.upgrade() else { return };
        let now = now_ms();
        for part in b.replicas.all() {
            if let Some(change) = part.isr_shrink(now, lag) {
                b.isr.submit(&part, change);
            }
        }
    }
}

async fn send_changes(
    broker: Weak<Broker>,
    link: Arc<ClusterLink>,
    mut rx: mpsc::UnboundedReceiver<Proposal>,
) {
    while let Some(first) = rx.recv().await {
        let mut batch = vec![first];
        while let Ok(more) = rx.try_recv() {
            batch.push(more);
        }
        let Some(b) = broker.upgrade() else { return };
        send(&b, &link, batch).await;
    }
}

/// One AlterPartition with every queued change; each partition gets its answer.
async fn send(broker: &Broker, link: &ClusterLink, batch: Vec<Proposal>) {
    let now = now_ms();
    let fail = |p: &Proposal, why: &str| {
        tracing::debug!(topic = %p.0.topic, partition = p.0.index, isr = ?p.1.isr, why, "ISR change not made");
        p.0.isr_change_failed(now);
    };
    let broker_epoch = match *link.standing.borrow() {
        Standing::Active { epoch } | Standing::Fenced { epoch } => epoch,
        Standing::Unregistered => {
            batch
                .iter()
                .for_each(|p| fail(p, "this broker is not registered"));
            return;
        }
    };
    let shared = link.current();
    let image = &shared.state.image;
    let mut topics: Vec<TopicData> = Vec::new();
    let mut sent: Vec<(kafka_protocol::Uuid, Proposal)> = Vec::with_capacity(batch.len());
    for p in batch {
        let (part, change) = &p;
        let Some(id) = broker.topic(&part.topic).map(|t| t.id) else {
            fail(&p, "the topic is not known here");
            continue;
        };
        // Kafka (KIP-841): no fenced or departing broker joins an ISR.
        let (current, _) = part.isr();
        let ineligible = change.isr.iter().any(|r| {
            !current.contains(r)
                && image
                    .broker(*r)
                    .is_none_or(|b| b.fenced || b.in_controlled_shutdown)
        });
        if ineligible {
            fail(&p, "a new member is fenced or shutting down");
            continue;
        }
        let data = PartitionData {
            partition_index: part.index,
            leader_epoch: change.leader_epoch,
            new_isr_with_epochs: change
                .isr
                .iter()
                .map(|&r| BrokerState {
                    broker_id: r,
                    broker_epoch: image.broker(r).map_or(-1, |b| b.epoch),
                    ..Default::default()
                })
                .collect(),
            leader_recovery_state: 0,
            partition_epoch: change.partition_epoch,
            ..Default::default()
        };
        match topics.iter_mut().find(|t| t.topic_id == id) {
            Some(t) => t.partitions.push(data),
            None => topics.push(TopicData {
                topic_id: id,
                partitions: vec![data],
                ..Default::default()
            }),
        }
        sent.push((id, p));
    }
    if sent.is_empty() {
        return;
    }
    let req = AlterPartitionRequest {
        broker_id: broker.config.server.node_id,
        broker_epoch,
        topics,
        ..Default::default()
    };
    let answer = link
        .client
        .send(
            RequestBody::AlterPartition(req),
            ALTER_PARTITION_VERSION,
            REQUEST_TIMEOUT,
        )
        .await;
    let r = match answer {
        Ok(ResponseBody::AlterPartition(r)) if r.error_code == 0 => r,
        Ok(ResponseBody::AlterPartition(r)) => {
            let why = format!("refused: {:?}", ErrorCode::from(r.error_code));
            sent.iter().for_each(|(_, p)| fail(p, &why));
            return;
        }
        other => {
            let why = format!("not answered: {:?}", other.err());
            sent.iter().for_each(|(_, p)| fail(p, &why));
            return;
        }
    };
    for (id, p) in &sent {
        let (part, change) = p;
        let answer = r
            .topics
            .iter()
            .filter(|t| t.topic_id == *id)
            .flat_map(|t| &t.partitions)
            .find(|a| a.partition_index == part.index);
        match answer {
            Some(a) if a.error_code == 0 => {
                tracing::info!(topic = %part.topic, partition = part.index, isr = ?a.isr,
                    partition_epoch = a.partition_epoch, "ISR changed");
                part.isr_changed(a.leader_epoch, a.partition_epoch, &a.isr);
            }
            Some(a) => fail(
                p,
                &format!(
                    "refused for {:?} (asked {:?})",
                    ErrorCode::from(a.error_code),
                    change.isr
                ),
            ),
            None => fail(p, "no answer for the partition"),
        }
    }
}
