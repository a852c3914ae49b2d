//! Tests of the controller on virtual time: a [`H`]arness owns an image and a [`Controller`],
//! runs each operation against the committed image and commits its records into the image at
//! the next offset, as the quorum driver will. Every committed record is also encoded at its
//! highest version and decoded back, so whatever the controller writes is valid Kafka bytes.
#![allow(clippy::unwrap_used)]

mod alter_partition;
mod brokers;
mod configs;
mod placement;
mod producer_ids;
mod records;
mod responses;
mod security;
mod topics;

use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::messages::broker_registration_request::Listener;
use kafka_protocol::messages::create_topics_request::{
    CreatableReplicaAssignment, CreatableTopic, CreatableTopicConfig,
};
use kafka_protocol::messages::create_topics_response::CreatableTopicResult;
use kafka_protocol::messages::{
    BrokerHeartbeatRequest, BrokerHeartbeatResponse, BrokerRegistrationRequest,
    BrokerRegistrationResponse, CreateTopicsRequest,
};
use kafka_protocol::metadata::MetadataRecord;
use kafka_protocol::{KStr, Uuid};

use super::*;
use crate::cluster::image::{MetadataImage, PartitionImage};

pub(super) const CLUSTER: &str = "test-cluster-id";
pub(super) const SESSION: i64 = 9_000;
/// The first instant of every scenario.
pub(super) const T0: i64 = 1_000_000;

pub(super) fn config() -> ControllerConfig {
    ControllerConfig {
        cluster_id: CLUSTER.to_owned(),
        session_timeout_ms: SESSION,
        default_replication_factor: 1,
        default_num_partitions: 1,
        unclean_leader_election: false,
        delete_topic_enable: true,
        broker: BrokerConfig::default(),
    }
}

/// Topic id number `n` (1, 2, ...), as the harness's id source hands them out.
pub(super) fn topic_id(n: u8) -> Uuid {
    let mut b = [0u8; 16];
    b[0] = 0xa0;
    b[15] = n;
    Uuid(b)
}

/// The incarnation id of broker `id`'s `generation`th start.
pub(super) fn incarnation(id: i32, generation: u8) -> Uuid {
    let mut b = [0u8; 16];
    b[..4].copy_from_slice(&id.to_be_bytes());
    b[4] = generation;
    b[15] = 0x77;
    Uuid(b)
}

/// A registration request for broker `id` with one listener on port 9000 + id.
pub(super) fn registration(
    id: i32,
    generation: u8,
    rack: Option<&str>,
) -> BrokerRegistrationRequest {
    BrokerRegistrationRequest {
        broker_id: id,
        cluster_id: KStr::from(CLUSTER),
        incarnation_id: incarnation(id, generation),
        listeners: vec![Listener {
            name: KStr::from("PLAINTEXT"),
            host: KStr::from(format!("broker{id}.test")),
            port: u16::try_from(9000 + id).unwrap(),
            security_protocol: 0,
            ..Default::default()
        }],
        rack: rack.map(|r| KStr::from(r.to_owned())),
        ..Default::default()
    }
}

/// The controller plus the committed image and a virtual clock.
pub(super) struct H {
    pub(super) image: MetadataImage,
    pub(super) c: Controller,
    pub(super) now: i64,
    /// Every committed batch, with its offset.
    pub(super) log: Vec<(u64, Vec<MetadataRecord>)>,
}

impl H {
    pub(super) fn new() -> Self {
        Self::with(config())
    }

    pub(super) fn with(config: ControllerConfig) -> Self {
        let image = MetadataImage::new();
        let mut n = 0u8;
        let c = Controller::new(config, &image, T0).with_topic_ids(move || {
            n = n.wrapping_add(1);
            topic_id(n)
        });
        Self {
            image,
            c,
            now: T0,
            log: Vec::new(),
        }
    }

    /// Commits one batch at the next offset (checking every record's bytes) and returns the
    /// offset; an empty batch is not committed.
    pub(super) fn commit(&mut self, records: Vec<MetadataRecord>) -> u64 {
        if records.is_empty() {
            return self.image.offset();
        }
        for r in &records {
            let version = r.versions().max;
            let bytes = r.encode(version).unwrap();
            let (back, v) = MetadataRecord::decode(&bytes).unwrap();
            assert_eq!(
                (&back, v),
                (r, version),
                "{} does not survive its bytes",
                r.name()
            );
        }
        let offset = self.image.offset() + 1;
        self.image.apply_batch(offset, &records).unwrap();
        self.log.push((offset, records));
        offset
    }

    /// Runs an operation and commits its records.
    pub(super) fn run<R>(
        &mut self,
        op: impl FnOnce(&mut Controller, &MetadataImage, i64) -> Outcome<R>,
    ) -> R {
        let out = op(&mut self.c, &self.image, self.now);
        self.commit(out.records);
        out.response
    }

    /// Runs an operation and returns its outcome without committing it.
    pub(super) fn peek<R>(
        &mut self,
        op: impl FnOnce(&mut Controller, &MetadataImage, i64) -> Outcome<R>,
    ) -> Outcome<R> {
        op(&mut self.c, &self.image, self.now)
    }

    pub(super) fn register_req(
        &mut self,
        req: &BrokerRegistrationRequest,
    ) -> BrokerRegistrationResponse {
        self.run(|c, image, now| c.register_broker(image, req, 4, now))
    }

    /// Registers broker `id` (generation 0) and returns its epoch.
    pub(super) fn register(&mut self, id: i32, rack: Option<&str>) -> i64 {
        let r = self.register_req(&registration(id, 0, rack));
        assert_eq!(r.error_code, 0, "registering {id}");
        r.broker_epoch
    }

    pub(super) fn heartbeat_req(
        &mut self,
        req: &BrokerHeartbeatRequest,
    ) -> BrokerHeartbeatResponse {
        self.run(|c, image, now| c.heartbeat(image, req, 1, now))
    }

    /// A heartbeat of broker `id` with its current epoch, caught up with the image.
    pub(super) fn heartbeat(
        &mut self,
        id: i32,
        want_fence: bool,
        want_shut_down: bool,
    ) -> BrokerHeartbeatResponse {
        let req = BrokerHeartbeatRequest {
            broker_id: id,
            broker_epoch: self.image.broker(id).unwrap().epoch,
            current_metadata_offset: i64::try_from(self.image.offset()).unwrap(),
            want_fence,
            want_shut_down,
            ..Default::default()
        };
        self.heartbeat_req(&req)
    }

    /// Registers and unfences brokers.
    pub(super) fn brokers(&mut self, ids: &[i32]) {
        for id in ids {
            self.register(*id, None);
            assert!(!self.heartbeat(*id, false, false).is_fenced);
        }
    }

    /// Registers and unfences brokers with racks.
    pub(super) fn racked(&mut self, brokers: &[(i32, &str)]) {
        for (id, rack) in brokers {
            self.register(*id, Some(rack));
            assert!(!self.heartbeat(*id, false, false).is_fenced);
        }
    }

    /// Moves the clock by `ms`, heartbeating `alive` every second on the way and running the
    /// controller's timer whenever it has a deadline due.
    pub(super) fn advance(&mut self, ms: i64, alive: &[i32]) {
        let end = self.now + ms;
        while self.now < end {
            let step = (end - self.now).min(1_000);
            self.now += step;
            for id in alive {
                if self.image.broker(*id).is_some() {
                    self.heartbeat(*id, false, false);
                }
            }
            if self.c.next_deadline().is_some_and(|d| d <= self.now) {
                let records = self.c.tick(&self.image, self.now);
                self.commit(records);
            }
        }
    }

    pub(super) fn create(
        &mut self,
        req: &CreateTopicsRequest,
        rng: u64,
    ) -> Vec<CreatableTopicResult> {
        self.run(|c, image, _| c.create_topics(image, req, 7, rng))
            .topics
    }

    /// Creates a topic with placement; panics if refused.
    pub(super) fn topic(&mut self, name: &str, partitions: i32, rf: i16) {
        let r = self.create(&create_req(name, partitions, rf), 0);
        assert_eq!(r[0].error_code, 0, "{:?}", r[0].error_message);
    }

    /// Creates a topic with explicit replicas per partition; panics if refused.
    pub(super) fn assigned(&mut self, name: &str, replicas: &[&[i32]]) {
        let r = self.create(&assigned_req(name, replicas), 0);
        assert_eq!(r[0].error_code, 0, "{:?}", r[0].error_message);
    }

    pub(super) fn partition(&self, topic: &str, index: i32) -> PartitionImage {
        self.image.topic(topic).unwrap().partitions[&index].clone()
    }

    /// The records of the last committed batch.
    pub(super) fn last_batch(&self) -> &[MetadataRecord] {
        self.log.last().map_or(&[], |(_, r)| r.as_slice())
    }
}

pub(super) fn create_req(name: &str, partitions: i32, rf: i16) -> CreateTopicsRequest {
    CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: KStr::from(name.to_owned()),
            num_partitions: partitions,
            replication_factor: rf,
            ..Default::default()
        }],
        ..Default::default()
    }
}

pub(super) fn assigned_req(name: &str, replicas: &[&[i32]]) -> CreateTopicsRequest {
    CreateTopicsRequest {
        topics: vec![CreatableTopic {
            name: KStr::from(name.to_owned()),
            num_partitions: -1,
            replication_factor: -1,
            assignments: (0..)
                .zip(replicas)
                .map(|(i, r)| CreatableReplicaAssignment {
                    partition_index: i,
                    broker_ids: r.to_vec(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }],
        ..Default::default()
    }
}

pub(super) fn with_config(
    mut req: CreateTopicsRequest,
    key: &str,
    value: &str,
) -> CreateTopicsRequest {
    req.topics[0].configs.push(CreatableTopicConfig {
        name: KStr::from(key.to_owned()),
        value: Some(KStr::from(value.to_owned())),
        ..Default::default()
    });
    req
}

pub(super) fn code(c: i16) -> ErrorCode {
    ErrorCode(c)
}

#[test]
fn the_controller_and_the_image_can_move_to_another_thread() {
    fn send<T: Send + 'static>() {}
    send::<Controller>();
    send::<MetadataImage>();
    send::<Outcome<kafka_protocol::messages::CreateTopicsResponse>>();
}
