//! Tests of KIP-848 groups on virtual time, with an assignor of the tests' own (it returns
//! the assignment a test prepares, else a plain round-robin of each topic over its
//! subscribers), as Kafka's coordinator tests use a mock assignor.

mod heartbeat;
mod metadata;
mod records;
mod sim;
mod timers;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use kafka_protocol::Uuid;

use super::assignor::{Assignor, AssignorError, GroupSpec, TopicDescriber};
use super::*;
use crate::group::MemberIdGen;

/// The test topic `foo` (6 partitions).
pub(super) const FOO: Uuid = Uuid([1; 16]);
/// The test topic `bar` (3 partitions).
pub(super) const BAR: Uuid = Uuid([2; 16]);
pub(super) const GROUP: &str = "g";
pub(super) const SESSION_MS: i64 = 45_000;
pub(super) const REBALANCE_MS: i32 = 30_000;

/// An assignor returning what a test prepared (once), else a round-robin of each
/// subscribed topic's partitions over its subscribers in member id order.
#[derive(Debug)]
pub(super) struct TestAssignor {
    name: &'static str,
    prepared: Mutex<Option<Result<BTreeMap<String, TopicPartitions>, AssignorError>>>,
    /// Every spec it was given.
    pub specs: Mutex<Vec<GroupSpec>>,
}

impl TestAssignor {
    pub(super) fn new(name: &'static str) -> Arc<Self> {
        Arc::new(Self {
            name,
            prepared: Mutex::new(None),
            specs: Mutex::new(Vec::new()),
        })
    }

    /// The next computation returns `result`.
    pub(super) fn prepare(&self, result: Result<BTreeMap<String, TopicPartitions>, AssignorError>) {
        *self.prepared.lock().unwrap() = Some(result);
    }

    pub(super) fn calls(&self) -> usize {
        self.specs.lock().unwrap().len()
    }
}

impl Assignor for TestAssignor {
    fn name(&self) -> &'static str {
        self.name
    }

    fn assign(
        &self,
        group: &GroupSpec,
        topics: &dyn TopicDescriber,
    ) -> Result<BTreeMap<String, TopicPartitions>, AssignorError> {
        self.specs.lock().unwrap().push(group.clone());
        if let Some(prepared) = self.prepared.lock().unwrap().take() {
            return prepared;
        }
        let mut out: BTreeMap<String, TopicPartitions> = group
            .members
            .keys()
            .map(|id| (id.clone(), TopicPartitions::new()))
            .collect();
        let all: BTreeSet<Uuid> = group
            .members
            .values()
            .flat_map(|m| m.subscription.subscribed_topic_ids.iter().copied())
            .collect();
        for topic in all {
            let subscribers: Vec<&String> = group
                .members
                .iter()
                .filter(|(_, m)| m.subscription.subscribed_topic_ids.contains(&topic))
                .map(|(id, _)| id)
                .collect();
            let count = topics.partitions(topic).unwrap_or(0);
            for p in 0..count {
                let owner = subscribers[usize::try_from(p).unwrap() % subscribers.len()];
                out.get_mut(owner)
                    .unwrap()
                    .entry(topic)
                    .or_default()
                    .insert(p);
            }
        }
        Ok(out)
    }
}

/// Partitions from `(topic, [partitions])` pairs.
pub(super) fn tp(entries: &[(Uuid, &[i32])]) -> TopicPartitions {
    let mut out = TopicPartitions::new();
    for (t, ps) in entries {
        if !ps.is_empty() {
            out.entry(*t).or_default().extend(ps.iter().copied());
        }
    }
    out
}

/// A coordinator, the topics, the clock and every record written so far.
pub(super) struct Env {
    pub cg: ConsumerGroups,
    pub image: TopicsSnapshot,
    pub now: i64,
    pub log: Vec<ConsumerGroupRecord>,
    /// The records since the last [`Env::take`].
    pub fresh: Vec<ConsumerGroupRecord>,
    pub assignor: Arc<TestAssignor>,
}

impl Env {
    pub(super) fn new() -> Self {
        Self::with_config(|_| {})
    }

    pub(super) fn with_config(f: impl FnOnce(&mut ConsumerGroupConfig)) -> Self {
        let assignor = TestAssignor::new("mock");
        let mut config = ConsumerGroupConfig::new(vec![assignor.clone() as Arc<dyn Assignor>]);
        f(&mut config);
        config.validate().unwrap();
        let mut image = TopicsSnapshot::default();
        image.add("foo", FOO, 6);
        image.add("bar", BAR, 3);
        Self {
            cg: ConsumerGroups::new(config, MemberIdGen::new(7)),
            image,
            now: 1_000,
            log: Vec::new(),
            fresh: Vec::new(),
            assignor,
        }
    }

    /// Collects the records the coordinator wrote (after a direct call on `cg`).
    pub(super) fn collect(&mut self) {
        let records = self.cg.take_records();
        self.log.extend(records.iter().cloned());
        self.fresh.extend(records);
        self.check_invariants();
    }

    /// The records since the last call.
    pub(super) fn take(&mut self) -> Vec<ConsumerGroupRecord> {
        std::mem::take(&mut self.fresh)
    }

    pub(super) fn hb(
        &mut self,
        req: HeartbeatRequest,
    ) -> Result<HeartbeatResponse, ConsumerGroupError> {
        let r = self.cg.heartbeat(&req, &self.image, self.now);
        self.collect();
        r
    }

    /// A join request of `member` subscribing to `topics`.
    pub(super) fn join_req(member: &str, topics: &[&str]) -> HeartbeatRequest {
        let mut req = HeartbeatRequest::new(GROUP, member, 0);
        req.rebalance_timeout_ms = REBALANCE_MS;
        req.subscribed_topic_names = Some(topics.iter().map(|s| s.to_string()).collect());
        req.topic_partitions = Some(TopicPartitions::new());
        req
    }

    pub(super) fn join(&mut self, member: &str, topics: &[&str]) -> HeartbeatResponse {
        self.hb(Self::join_req(member, topics)).unwrap()
    }

    /// A heartbeat of `member` at `epoch` owning `owned`.
    pub(super) fn beat(
        &mut self,
        member: &str,
        epoch: i32,
        owned: TopicPartitions,
    ) -> Result<HeartbeatResponse, ConsumerGroupError> {
        let mut req = HeartbeatRequest::new(GROUP, member, epoch);
        req.topic_partitions = Some(owned);
        self.hb(req)
    }

    /// Moves the clock `ms` on, firing the timers due on the way.
    pub(super) fn advance(&mut self, ms: i64) {
        let end = self.now + ms;
        while let Some(t) = self.cg.poll_timeout() {
            if t > end {
                break;
            }
            self.now = self.now.max(t);
            self.cg.handle_timeout(t);
            self.collect();
        }
        self.now = end;
    }

    /// Tells the coordinator the topics changed.
    pub(super) fn metadata(&mut self) {
        self.cg.on_metadata(&self.image, self.now);
        self.collect();
    }

    pub(super) fn group(&self) -> &ConsumerGroup {
        self.cg.group(GROUP).unwrap()
    }

    pub(super) fn member(&self, id: &str) -> &ConsumerGroupMember {
        self.group().member(id).unwrap()
    }

    /// No partition held by two members (assigned or pending revocation), and the derived
    /// partition epochs agree with the members.
    pub(super) fn check_invariants(&self) {
        for group in self.cg.groups() {
            let mut seen = BTreeMap::new();
            for m in group.members().values() {
                for (t, ps) in m.assigned.iter().chain(m.pending_revocation.iter()) {
                    for p in ps {
                        if let Some(other) = seen.insert((*t, *p), m.member_id.clone()) {
                            panic!("{t}-{p} held by {other} and {}", m.member_id);
                        }
                        assert_eq!(group.partition_epoch(*t, *p), m.member_epoch);
                    }
                }
            }
        }
    }

    /// Every record written so far, through its bytes and back, replayed on a new
    /// coordinator, gives the same groups.
    pub(super) fn check_replay(&self) {
        let mut rebuilt = ConsumerGroups::new(self.cg.config().clone(), MemberIdGen::new(1));
        for record in &self.log {
            let (key, value) = record.encode().unwrap();
            let back = ConsumerGroupRecord::decode(&key, value.as_ref())
                .unwrap()
                .unwrap();
            assert_eq!(&back, record);
            rebuilt.replay(&back);
        }
        rebuilt.on_loaded(None, &self.image, self.now);
        let a: Vec<&ConsumerGroup> = self.cg.groups().collect();
        let b: Vec<&ConsumerGroup> = rebuilt.groups().collect();
        assert_eq!(a, b);
        assert!(rebuilt.take_records().is_empty());
    }
}

/// The kinds of `records` in order, as short names.
pub(super) fn kinds(records: &[ConsumerGroupRecord]) -> Vec<String> {
    records
        .iter()
        .map(|r| {
            let k = match &r.key {
                RecordKey::GroupMetadata { .. } => "Epoch".to_owned(),
                RecordKey::PartitionMetadata { .. } => "PartitionMetadata".to_owned(),
                RecordKey::MemberMetadata { member_id, .. } => format!("Member({member_id})"),
                RecordKey::TargetAssignmentMetadata { .. } => "TargetEpoch".to_owned(),
                RecordKey::TargetAssignmentMember { member_id, .. } => {
                    format!("Target({member_id})")
                }
                RecordKey::CurrentMemberAssignment { member_id, .. } => {
                    format!("Current({member_id})")
                }
            };
            if r.value.is_none() {
                format!("-{k}")
            } else {
                k
            }
        })
        .collect()
}
