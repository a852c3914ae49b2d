//! Leader hints (KIP-951): a broker of a cluster that refuses a partition because it does
//! not lead it names the partition's current leader and epoch in the answer (Produce v10+
//! `CurrentLeader` for NOT_LEADER_OR_FOLLOWER; Fetch v16+ for NOT_LEADER_OR_FOLLOWER and
//! FENCED_LEADER_EPOCH), and the answer's `NodeEndpoints` lists each named leader's endpoint
//! on the listener the client came in on, so the client moves at once instead of after a
//! metadata refresh.
//!
//! Both come from this broker's metadata image, as Kafka's `getCurrentLeader` falls back to
//! its metadata cache. A leader that is fenced or has no endpoint on that listener is still
//! named (id and epoch) but gets no endpoint, as Kafka lists only live brokers' nodes. A
//! single node names nothing.

use std::collections::BTreeMap;

use crate::cluster::active::SharedState;
use crate::cluster::image::MetadataImage;
use crate::node::Broker;

/// A leader's endpoint on the client's listener.
pub(super) use crate::cluster::image::LiveEndpoint as LeaderEndpoint;

/// The partition's leader and leader epoch in `image` ((-1, -1) for a partition it does not
/// know), and the leader's endpoint on `listener` if clients can reach it there.
pub(super) fn current_leader(
    image: &MetadataImage,
    listener: &str,
    topic: &str,
    partition: i32,
) -> ((i32, i32), Option<LeaderEndpoint>) {
    let Some(p) = image
        .topic(topic)
        .and_then(|t| t.partitions.get(&partition))
    else {
        return ((-1, -1), None);
    };
    (
        (p.leader, p.leader_epoch),
        image.endpoint(p.leader, listener),
    )
}

/// The hints of one answer: leaders looked up as partitions are refused, their endpoints
/// collected once each.
pub(super) struct LeaderHints {
    /// `None` on a single node.
    state: Option<SharedState>,
    listener: String,
    endpoints: BTreeMap<i32, LeaderEndpoint>,
}

impl LeaderHints {
    pub(super) fn new(broker: &Broker, listener: &str) -> Self {
        Self {
            state: broker.cluster().map(|link| link.current()),
            listener: listener.to_owned(),
            endpoints: BTreeMap::new(),
        }
    }

    /// The leader and epoch to name for a refused partition (`None` on a single node); its
    /// endpoint is kept for [`Self::endpoints`].
    pub(super) fn leader_of(&mut self, topic: &str, partition: i32) -> Option<(i32, i32)> {
        let state = self.state.as_ref()?;
        let (leader, endpoint) =
            current_leader(&state.state.image, &self.listener, topic, partition);
        if let Some(e) = endpoint {
            self.endpoints.insert(e.node_id, e);
        }
        Some(leader)
    }

    /// The endpoints of the leaders named so far, by node id.
    pub(super) fn endpoints(self) -> impl Iterator<Item = LeaderEndpoint> {
        self.endpoints.into_values()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use kafka_protocol::metadata::register_broker_record::BrokerEndpoint;
    use kafka_protocol::metadata::{
        FenceBrokerRecord, MetadataRecord, PartitionChangeRecord, PartitionRecord,
        RegisterBrokerRecord, TopicRecord, UnfenceBrokerRecord,
    };
    use kafka_protocol::{KStr, Uuid};

    use super::*;

    fn broker(id: i32, rack: &str) -> Vec<MetadataRecord> {
        let endpoint = |name: &str, port: u16| BrokerEndpoint {
            name: KStr::from(name.to_owned()),
            host: KStr::from(format!("h{id}")),
            port,
            security_protocol: 0,
            ..Default::default()
        };
        vec![
            MetadataRecord::RegisterBroker(RegisterBrokerRecord {
                broker_id: id,
                broker_epoch: i64::from(id),
                end_points: vec![endpoint("PLAINTEXT", 9092), endpoint("EXTERNAL", 19092)],
                rack: Some(KStr::from(rack.to_owned())),
                fenced: true,
                ..Default::default()
            }),
            MetadataRecord::UnfenceBroker(UnfenceBrokerRecord {
                id,
                epoch: i64::from(id),
                ..Default::default()
            }),
        ]
    }

    fn image() -> MetadataImage {
        let topic_id = Uuid([7; 16]);
        let mut records: Vec<MetadataRecord> = (1..=3)
            .flat_map(|id| broker(id, &format!("r{id}")))
            .collect();
        records.push(MetadataRecord::Topic(TopicRecord {
            name: KStr::from_static("t"),
            topic_id,
            ..Default::default()
        }));
        records.push(MetadataRecord::Partition(PartitionRecord {
            partition_id: 0,
            topic_id,
            replicas: vec![1, 2, 3],
            isr: vec![1, 2, 3],
            leader: 1,
            leader_epoch: 0,
            ..Default::default()
        }));
        let mut m = MetadataImage::new();
        m.apply_batch(1, &records).unwrap();
        // A new leader, epoch 1.
        m.apply_batch(
            2,
            &[MetadataRecord::PartitionChange(PartitionChangeRecord {
                partition_id: 0,
                topic_id,
                leader: 2,
                ..Default::default()
            })],
        )
        .unwrap();
        m
    }

    #[test]
    fn the_images_leader_with_its_endpoint_on_the_clients_listener() {
        let m = image();
        let (leader, endpoint) = current_leader(&m, "EXTERNAL", "t", 0);
        assert_eq!(leader, (2, 1));
        assert_eq!(
            endpoint,
            Some(LeaderEndpoint {
                node_id: 2,
                host: "h2".into(),
                port: 19092,
                rack: Some("r2".into()),
            })
        );
        let (_, endpoint) = current_leader(&m, "PLAINTEXT", "t", 0);
        assert_eq!(endpoint.map(|e| e.port), Some(9092));
        // No such listener: the leader is named, without an endpoint.
        assert_eq!(current_leader(&m, "OTHER", "t", 0), ((2, 1), None));
        // Unknown partitions name nobody.
        assert_eq!(current_leader(&m, "PLAINTEXT", "t", 1), ((-1, -1), None));
        assert_eq!(current_leader(&m, "PLAINTEXT", "u", 0), ((-1, -1), None));
    }

    #[test]
    fn a_fenced_leader_is_named_without_an_endpoint() {
        let mut m = image();
        m.apply_batch(
            3,
            &[MetadataRecord::FenceBroker(FenceBrokerRecord {
                id: 2,
                epoch: 2,
                ..Default::default()
            })],
        )
        .unwrap();
        assert_eq!(current_leader(&m, "PLAINTEXT", "t", 0), ((2, 1), None));
    }
}
