//! A broker follows the metadata image: each new image is compared with the last one it
//! applied, and what changed for this node is carried out on the partition layer. Topics get
//! their local entry and typed config; partitions this node is a replica of are hosted (their
//! logs opened or created) and become leader or follower with the image's leader epoch and
//! ISR; topics the controller deleted go, logs and all. Logs of topics the image does not
//! know are left alone at start (the image may still be catching up); they go only when the
//! image is seen to delete them. The image's ACLs, SCRAM credentials and client quotas
//! replace the node's ([`follow_security`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use tokio::sync::watch;

use crate::cluster::active::SharedState;
use crate::cluster::image::{MetadataImage, PartitionImage};
use crate::cluster::lifecycle::Standing;
use crate::coordinator::OFFSETS_TOPIC;
use crate::node::Broker;
use crate::replica::Leadership;

/// ConfigRecord's resource type of topics.
pub const TOPIC_RESOURCE: i8 = 2;

/// Applies `image` (after `previous`, `None` the first time) to the broker as node `node_id`.
/// Failures (a log that cannot be opened) are logged: the partition stays offline and is
/// tried again with the next image.
pub fn apply(
    broker: &Arc<Broker>,
    node_id: i32,
    previous: Option<&MetadataImage>,
    image: &MetadataImage,
) {
    let security_changed = previous.is_none_or(|p| {
        p.acls() != image.acls()
            || p.scram_credentials() != image.scram_credentials()
            || p.quotas() != image.quotas()
    });
    if security_changed {
        follow_security(broker, image);
    }
    // ApiVersions' finalized features, at the image's offset (Kafka's epoch).
    broker
        .features
        .follow_image(image.offset(), image.features());
    let topics_changed = previous.is_none_or(|p| {
        p.topics().count() != image.topics().count()
            || image.topics().any(|t| {
                p.topic(&t.name)
                    .is_none_or(|b| b.id != t.id || b.partitions.len() != t.partitions.len())
            })
    });
    for topic in image.topics() {
        let before = previous.and_then(|p| p.topic(&topic.name));
        let configs: BTreeMap<String, String> = image
            .configs(TOPIC_RESOURCE, &topic.name)
            .cloned()
            .unwrap_or_default();
        let configs_before = previous.and_then(|p| p.configs(TOPIC_RESOURCE, &topic.name));
        let partitions = topic.partitions.len() as i32;
        let known = broker.topic(&topic.name).is_some_and(|t| t.id == topic.id);
        if !known
            || before
                .is_none_or(|b| b.id != topic.id || b.partitions.len() != topic.partitions.len())
            || configs_before != Some(&configs) && !(configs_before.is_none() && configs.is_empty())
        {
            if let Err(e) = broker.sync_topic(&topic.name, topic.id, partitions, configs) {
                tracing::error!(topic = %topic.name, error = %e, "the topic could not be recorded locally");
                continue;
            }
        }
        for (&index, part) in &topic.partitions {
            if !part.replicas.contains(&node_id) {
                continue;
            }
            let same = before
                .filter(|b| b.id == topic.id)
                .and_then(|b| b.partitions.get(&index))
                == Some(part);
            if !(same && broker.partition(&topic.name, index).is_some()) {
                take_role(broker, image, node_id, &topic.name, index, part);
            }
            // The group coordinator follows the leadership of the offsets partitions.
            if topic.name == OFFSETS_TOPIC {
                if part.leader == node_id {
                    broker.lead_offsets_partition(index);
                } else {
                    broker.follow_offsets_partition(index);
                }
            }
            // So does the transaction coordinator, of the transaction log's.
            if topic.name == crate::txn::TRANSACTION_STATE_TOPIC {
                if part.leader == node_id {
                    broker.lead_txn_partition(index);
                } else {
                    broker.follow_txn_partition(index);
                }
            }
        }
    }
    if let Some(previous) = previous {
        for gone in previous
            .topics()
            .filter(|t| image.topic_by_id(&t.id).is_none())
        {
            broker.forget_topic(&gone.name);
        }
    }
    if topics_changed {
        broker.topics_changed();
    }
}

/// Hands the image's ACLs, SCRAM credentials and client quotas to the node, which
/// authorizes, logs users in and throttles with them (in a cluster the metadata log is their
/// only store). Each store ignores an image older than the last it took, so the publisher
/// and a forwarded request waiting for its change may both call this.
pub fn follow_security(broker: &Broker, image: &MetadataImage) {
    let offset = image.offset();
    broker.acls.follow_image(offset, image.acls());
    broker
        .scram_credentials
        .follow_image(offset, image.scram_credentials());
    broker.quotas.follow_image(offset, image.quotas());
}

/// Takes the role the current image gives a partition hosted again outside an image change
/// (an offline partition reopened).
pub fn retake(broker: &Broker, topic: &str, index: i32) {
    let Some(link) = broker.cluster() else { return };
    let shared = link.current();
    let image = &shared.state.image;
    let Some(part) = image.topic(topic).and_then(|t| t.partitions.get(&index)) else {
        return;
    };
    if part.replicas.contains(&link.node_id) {
        take_role(broker, image, link.node_id, topic, index, part);
    }
}

fn take_role(
    broker: &Broker,
    image: &MetadataImage,
    node_id: i32,
    topic: &str,
    index: i32,
    part: &PartitionImage,
) {
    let hosted = match broker.host_replica(topic, index) {
        Ok(p) => p,
        Err(e) => {
            tracing::error!(topic, partition = index, error = %e, "a replica of this node could not be hosted");
            return;
        }
    };
    let result = if part.leader == node_id {
        let followers: Vec<i32> = part
            .replicas
            .iter()
            .copied()
            .filter(|&r| r != node_id)
            .collect();
        let was = hosted.is_leader() && hosted.leader_epoch() == part.leader_epoch;
        broker.fetchers.unfollow(topic, index);
        let leadership = Leadership {
            leader_epoch: part.leader_epoch,
            partition_epoch: part.partition_epoch,
            local_id: node_id,
            followers: &followers,
            isr: &part.isr,
        };
        hosted
            .lead(&leadership, broker.now_ms())
            .map(|()| {
                if !was {
                    tracing::info!(topic, partition = index, leader_epoch = part.leader_epoch, isr = ?part.isr, "leader");
                }
            })
    } else {
        let was = !hosted.is_leader() && hosted.leader_epoch() == part.leader_epoch;
        let became = hosted.become_follower(part.leader_epoch).map(|()| {
            if !was {
                tracing::info!(
                    topic,
                    partition = index,
                    leader = part.leader,
                    leader_epoch = part.leader_epoch,
                    "follower"
                );
            }
        });
        // Fetched from the leader over its inter-broker listener; from nobody while there is
        // no leader.
        let listener = broker
            .config
            .network
            .effective_inter_broker_listener_name()
            .unwrap_or_else(|| "PLAINTEXT".to_owned());
        match image.leader_endpoint(topic, index, &listener) {
            Some(leader) if became.is_ok() => broker.fetchers.follow(
                topic,
                index,
                leader.node_id,
                leader.addr(),
                part.leader_epoch,
            ),
            _ => broker.fetchers.unfollow(topic, index),
        }
        became
    };
    if let Err(e) = result {
        tracing::warn!(topic, partition = index, error = %e, "the image's role was not taken");
    }
}

/// Applies every new image to the broker (off the async threads: it opens files), once the
/// broker has caught up with the metadata log: as Kafka's broker waits for its initial
/// catch-up, nothing is applied before the controller first unfences the broker (it does
/// so once the broker has applied its own registration). A restarted node replaying its log
/// would otherwise take leaderships of the past for a moment.
pub(crate) async fn publish_images(
    broker: Arc<Broker>,
    node_id: i32,
    mut rx: watch::Receiver<SharedState>,
    mut standing: watch::Receiver<Standing>,
) {
    if standing
        .wait_for(|s| matches!(s, Standing::Active { .. }))
        .await
        .is_err()
    {
        return;
    }
    drop(standing);
    let mut previous: Option<SharedState> = None;
    loop {
        let current = rx.borrow_and_update().clone();
        let unchanged = previous
            .as_ref()
            .is_some_and(|p| p.offset == current.offset);
        if !unchanged {
            let b = broker.clone();
            let prev = previous.clone();
            let cur = current.clone();
            let _ = tokio::task::spawn_blocking(move || {
                apply(
                    &b,
                    node_id,
                    prev.as_ref().map(|p| &p.state.image),
                    &cur.state.image,
                );
            })
            .await;
            previous = Some(current);
        }
        if rx.changed().await.is_err() {
            return;
        }
    }
}
