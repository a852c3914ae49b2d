//! Tests of the group coordinator on virtual time: a [`H`]arness around the pure
//! [`GroupManager`] that collects answers and records, and helpers for consumer-protocol
//! bytes and a range assignment.
#![allow(clippy::unwrap_used)]

mod coordinator;
mod hashing;
mod kip848;
mod machine;
mod offsets;
mod rebalance;
mod records;
mod sim;
mod static_members;
mod txn;

use std::collections::{BTreeMap, BTreeSet};

use bytes::Bytes;
use kafka_protocol::KStr;
use kafka_protocol::error_code::ErrorCode;
use kafka_protocol::frame::{decode_assignment, decode_subscription, encode_versioned};
use kafka_protocol::messages::consumer_protocol_assignment::TopicPartition;
use kafka_protocol::messages::{ConsumerProtocolAssignment, ConsumerProtocolSubscription};

use super::*;

/// Small numbers so that scenarios read easily: sessions 1-60 s, a 100 ms initial delay.
pub(super) fn config() -> GroupConfig {
    GroupConfig {
        min_session_timeout_ms: 1_000,
        max_session_timeout_ms: 60_000,
        initial_rebalance_delay_ms: 100,
        ..GroupConfig::default()
    }
}

pub(super) const SESSION: i32 = 10_000;
pub(super) const REBALANCE: i32 = 5_000;

/// The coordinator plus a virtual clock and everything it answered.
pub(super) struct H {
    pub(super) m: GroupManager,
    pub(super) now: i64,
    next: u64,
    joins: BTreeMap<RequestId, JoinResponse>,
    syncs: BTreeMap<RequestId, SyncResponse>,
    pub(super) records: Vec<OffsetsRecord>,
}

impl H {
    pub(super) fn new() -> Self {
        Self::with(config())
    }

    pub(super) fn with(config: GroupConfig) -> Self {
        Self {
            m: GroupManager::new(config, MemberIdGen::new(1)).owning_every_partition(),
            now: 1_000_000,
            next: 0,
            joins: BTreeMap::new(),
            syncs: BTreeMap::new(),
            records: Vec::new(),
        }
    }

    fn collect(&mut self) {
        while let Some(out) = self.m.poll_output() {
            match out {
                Output::Join { request, response } => {
                    assert!(
                        self.joins.insert(request, response).is_none(),
                        "answered twice"
                    );
                }
                Output::Sync { request, response } => {
                    assert!(
                        self.syncs.insert(request, response).is_none(),
                        "answered twice"
                    );
                }
            }
        }
        self.records.extend(self.m.take_records());
    }

    fn id(&mut self) -> RequestId {
        self.next += 1;
        RequestId(self.next)
    }

    pub(super) fn join(&mut self, req: JoinRequest) -> RequestId {
        let id = self.id();
        self.m.join(id, req, self.now);
        self.collect();
        id
    }

    pub(super) fn sync(&mut self, req: SyncRequest) -> RequestId {
        let id = self.id();
        self.m.sync(id, req, self.now);
        self.collect();
        id
    }

    /// The answer to a join, if it came (taken).
    pub(super) fn joined(&mut self, id: RequestId) -> Option<JoinResponse> {
        self.joins.remove(&id)
    }

    pub(super) fn synced(&mut self, id: RequestId) -> Option<SyncResponse> {
        self.syncs.remove(&id)
    }

    /// A join answer that must be there.
    pub(super) fn join_answer(&mut self, id: RequestId) -> JoinResponse {
        self.joined(id)
            .unwrap_or_else(|| panic!("join {id:?} not answered"))
    }

    /// Waits (in 10 ms steps, at most a minute) until every join in `ids` is answered.
    pub(super) fn answers(&mut self, ids: &[RequestId]) -> Vec<JoinResponse> {
        for _ in 0..6_000 {
            if ids.iter().all(|id| self.joins.contains_key(id)) {
                break;
            }
            self.advance(10);
        }
        ids.iter().map(|id| self.join_answer(*id)).collect()
    }

    pub(super) fn sync_answer(&mut self, id: RequestId) -> SyncResponse {
        self.synced(id)
            .unwrap_or_else(|| panic!("sync {id:?} not answered"))
    }

    pub(super) fn heartbeat(&mut self, group: &str, member: &str, generation: i32) -> ErrorCode {
        let req = HeartbeatRequest {
            group_id: group.into(),
            generation_id: generation,
            member_id: member.into(),
            group_instance_id: None,
        };
        let e = self.m.heartbeat(&req, self.now);
        self.collect();
        e
    }

    pub(super) fn leave(&mut self, group: &str, member: &str) -> LeaveResponse {
        let r = self.m.leave(
            group,
            &[LeavingMember {
                member_id: member.into(),
                group_instance_id: None,
            }],
            self.now,
        );
        self.collect();
        r
    }

    /// Moves time forward by `ms`, firing every timer at its own deadline on the way.
    pub(super) fn advance(&mut self, ms: i64) {
        let target = self.now + ms;
        let mut rounds = 0;
        while let Some(due) = self.m.poll_timeout().filter(|d| *d <= target) {
            self.now = self.now.max(due);
            self.m.handle_timeout(self.now);
            self.collect();
            rounds += 1;
            assert!(rounds < 10_000, "a timer keeps firing at {due}");
        }
        self.now = target;
    }

    pub(super) fn group(&self, id: &str) -> &Group {
        self.m.group(id).unwrap_or_else(|| panic!("no group {id}"))
    }

    /// Joins a dynamic member without the MEMBER_ID_REQUIRED step (v0-3 style).
    pub(super) fn join_new(&mut self, group: &str, client: &str, topics: &[&str]) -> RequestId {
        self.join(join_req(group, "", client, &[("range", topics)]))
    }

    /// Answers the member's join, then syncs it (with `assignments` if it is the leader).
    pub(super) fn sync_member(
        &mut self,
        group: &str,
        answer: &JoinResponse,
        assignments: Vec<(String, Bytes)>,
    ) -> RequestId {
        self.sync(SyncRequest {
            group_id: group.into(),
            generation_id: answer.generation_id,
            member_id: answer.member_id.clone(),
            group_instance_id: None,
            protocol_type: None,
            protocol_name: None,
            assignments,
        })
    }

    /// A stable group with the given clients (joined together, range-assigned over
    /// `partitions`); returns their join answers in client order.
    pub(super) fn stable_group(
        &mut self,
        group: &str,
        clients: &[&str],
        partitions: &BTreeMap<String, i32>,
    ) -> Vec<JoinResponse> {
        let topics: Vec<&str> = partitions.keys().map(String::as_str).collect();
        let ids: Vec<RequestId> = clients
            .iter()
            .map(|c| self.join_new(group, c, &topics))
            .collect();
        let answers = self.answers(&ids);
        self.sync_all(group, &answers, partitions);
        assert_eq!(self.group(group).state(), GroupState::Stable);
        answers
    }

    /// Syncs every answered member, the leader with a range assignment; checks that every
    /// member gets an answer.
    pub(super) fn sync_all(
        &mut self,
        group: &str,
        answers: &[JoinResponse],
        partitions: &BTreeMap<String, i32>,
    ) -> Vec<SyncResponse> {
        let mut ids = Vec::new();
        for a in answers.iter().filter(|a| a.leader != a.member_id) {
            ids.push(self.sync_member(group, a, Vec::new()));
        }
        let leader = answers
            .iter()
            .find(|a| a.leader == a.member_id)
            .expect("a leader among the answers");
        ids.push(self.sync_member(group, leader, range_assign(&leader.members, partitions)));
        ids.into_iter().map(|id| self.sync_answer(id)).collect()
    }
}

/// A JoinGroup with the "consumer" protocol type; `protocols` are (name, topics).
pub(super) fn join_req(
    group: &str,
    member: &str,
    client: &str,
    protocols: &[(&str, &[&str])],
) -> JoinRequest {
    JoinRequest {
        group_id: group.into(),
        member_id: member.into(),
        group_instance_id: None,
        client_id: client.into(),
        client_host: "/127.0.0.1".into(),
        session_timeout_ms: SESSION,
        rebalance_timeout_ms: REBALANCE,
        protocol_type: CONSUMER_PROTOCOL_TYPE.into(),
        protocols: protocols
            .iter()
            .map(|(name, topics)| Protocol {
                name: (*name).into(),
                metadata: subscription(topics),
            })
            .collect(),
        require_known_member_id: false,
        supports_skip_assignment: false,
        reason: None,
    }
}

/// A rejoin of a known member with the same range subscription.
pub(super) fn rejoin(
    group: &str,
    answer: &JoinResponse,
    client: &str,
    topics: &[&str],
) -> JoinRequest {
    join_req(group, &answer.member_id, client, &[("range", topics)])
}

pub(super) fn subscription(topics: &[&str]) -> Bytes {
    let s = ConsumerProtocolSubscription {
        topics: topics.iter().map(|t| KStr::from((*t).to_owned())).collect(),
        ..Default::default()
    };
    encode_versioned(&s, 1).unwrap()
}

pub(super) fn assignment_bytes(parts: &BTreeMap<String, Vec<i32>>) -> Bytes {
    let a = ConsumerProtocolAssignment {
        assigned_partitions: parts
            .iter()
            .map(|(t, ps)| TopicPartition {
                topic: KStr::from(t.clone()),
                partitions: ps.clone(),
            })
            .collect(),
        ..Default::default()
    };
    encode_versioned(&a, 1).unwrap()
}

/// Decoded assignment as (topic, partition) pairs.
pub(super) fn owned(bytes: &Bytes) -> BTreeSet<(String, i32)> {
    if bytes.is_empty() {
        return BTreeSet::new();
    }
    let (_, a) = decode_assignment(bytes).unwrap();
    a.assigned_partitions
        .iter()
        .flat_map(|tp| tp.partitions.iter().map(|p| (tp.topic.to_string(), *p)))
        .collect()
}

/// What a leader does: Kafka's range assignor over each topic, members sorted by id.
pub(super) fn range_assign(
    members: &[JoinedMember],
    partitions: &BTreeMap<String, i32>,
) -> Vec<(String, Bytes)> {
    let mut per_member: BTreeMap<String, BTreeMap<String, Vec<i32>>> = members
        .iter()
        .map(|m| (m.member_id.clone(), BTreeMap::new()))
        .collect();
    for (topic, count) in partitions {
        let mut subscribers: Vec<&str> = members
            .iter()
            .filter(|m| {
                decode_subscription(&m.metadata)
                    .map(|(_, s)| s.topics.iter().any(|t| t == topic.as_str()))
                    .unwrap_or(false)
            })
            .map(|m| m.member_id.as_str())
            .collect();
        subscribers.sort_unstable();
        if subscribers.is_empty() {
            continue;
        }
        let n = subscribers.len() as i32;
        let (each, extra) = (count / n, count % n);
        let mut next = 0;
        for (i, member) in subscribers.iter().enumerate() {
            let take = each + i32::from((i as i32) < extra);
            let list: Vec<i32> = (next..next + take).collect();
            next += take;
            per_member
                .get_mut(*member)
                .unwrap()
                .insert(topic.clone(), list);
        }
    }
    per_member
        .into_iter()
        .map(|(m, parts)| (m, assignment_bytes(&parts)))
        .collect()
}

pub(super) fn topics(list: &[(&str, i32)]) -> BTreeMap<String, i32> {
    list.iter().map(|(t, n)| ((*t).to_owned(), *n)).collect()
}

/// Every partition of `partitions` is owned by exactly one member of the (stable) group.
pub(super) fn assert_exact_cover(group: &Group, partitions: &BTreeMap<String, i32>) {
    let mut seen: BTreeMap<(String, i32), String> = BTreeMap::new();
    for m in group.members() {
        for tp in owned(m.assignment()) {
            if let Some(other) = seen.insert(tp.clone(), m.id().to_owned()) {
                panic!("{tp:?} owned by both {other} and {}", m.id());
            }
        }
    }
    let expected: BTreeSet<(String, i32)> = partitions
        .iter()
        .flat_map(|(t, n)| (0..*n).map(move |p| (t.clone(), p)))
        .collect();
    let got: BTreeSet<(String, i32)> = seen.into_keys().collect();
    assert_eq!(
        got,
        expected,
        "assignment of generation {}",
        group.generation()
    );
}
