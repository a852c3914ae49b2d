//! The leader side of the ISR, Kafka's `AlterPartitionManager`: the partition layer proposes
//! changes ([`Partition::follower_fetched`] when a follower out of the ISR caught up,
//! [`Partition::isr_shrink`] every half `replica.lag.time.max.ms` for followers that fell
//! behind) to the [`IsrSink`] this module implements; it sends them to the active controller in
//! AlterPartition requests, one request in flight with every change queued meanwhile, and
//! hands each partition the controller's answer. A partition has at most one change in flight,
//! so the queue holds at most one entry per led partition.

use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::alter_partition_request::{BrokerState, PartitionData, TopicData};
use kafka_protocol::messages::{AlterPartitionRequest, RequestBody, ResponseBody};
use tokio::sync::mpsc;

use crate::clock::Clock;
use crate::cluster::ClusterLink;
use crate::cluster::lifecycle::Standing;
use crate::replica::{IsrChange, IsrSink, Partition};

/// The AlterPartition version sent (Kafka's controllers since 3.5 take 0-3; ours too): each
/// new member with its broker epoch, so that a member that restarted since is refused.
const ALTER_PARTITION_VERSION: i16 = 3;
/// How long one AlterPartition may take, forwarding included.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);

type Proposal = (Arc<Partition>, IsrChange);

/// Where a broker of a cluster sends its leaders' ISR changes (a single node has no
/// followers, and no sink: its partition layer fails a change at once).
#[derive(Debug)]
pub struct IsrManager {
    tx: mpsc::UnboundedSender<Proposal>,
    clock: Clock,
}

impl IsrManager {
    /// Starts sending the changes proposed to it through `link`, until it is dropped.
    pub fn start(link: Arc<ClusterLink>, clock: Clock) -> Arc<Self> {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(send_changes(link, clock.clone(), rx));
        Arc::new(Self { tx, clock })
    }
}

impl IsrSink for IsrManager {
    /// Queues an ISR change for the controller.
    fn propose(&self, partition: &Arc<Partition>, change: IsrChange) {
        if self.tx.send((Arc::clone(partition), change)).is_err() {
            partition.isr_change_failed(self.clock.now_ms());
        }
    }
}

async fn send_changes(
    link: Arc<ClusterLink>,
    clock: Clock,
    mut rx: mpsc::UnboundedReceiver<Proposal>,
) {
    while let Some(first) = rx.recv().await {
        let mut batch = vec![first];
        while let Ok(more) = rx.try_recv() {
            batch.push(more);
        }
        send(&link, &clock, batch).await;
    }
}

/// One AlterPartition with every queued change; each partition gets its answer.
async fn send(link: &ClusterLink, clock: &Clock, batch: Vec<Proposal>) {
    let now = clock.now_ms();
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
        let Some(id) = image.topic(&part.topic).map(|t| t.id) else {
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
        broker_id: link.node_id,
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
