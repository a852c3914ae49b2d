//! The group state machine on virtual time against a scripted coordinator: every answer is
//! written by the test, every timer is an `Instant` the test moves.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use kafka_net::{MetadataSnapshot, PartitionInfo, TopicInfo};
use kafka_protocol::Uuid;
use kafka_protocol::error_code::ErrorCode;

use super::machine::{Action, AppStep, GroupMachine, GroupSettings, Subscription};
use super::wire::{JoinParams, JoinResult, JoinedMember, SyncResult};
use crate::assignor::{self, ConsumerSubscription, RebalanceProtocol};
use crate::error::ConsumerError;
use crate::group::machine::assignment_bytes;
use crate::types::TopicPartition;

const HB: Duration = Duration::from_millis(300);
const SESSION: Duration = Duration::from_millis(3000);
const POLL: Duration = Duration::from_millis(10_000);
const BACKOFF: Duration = Duration::from_millis(100);

fn settings(strategy: &str, instance: Option<&str>) -> GroupSettings {
    let assignors = vec![assignor::by_name(strategy).unwrap()];
    let protocol = assignor::common_protocol(&assignors).unwrap();
    GroupSettings {
        group_id: "g".into(),
        group_instance_id: instance.map(str::to_owned),
        session_timeout: SESSION,
        rebalance_timeout: POLL,
        heartbeat_interval: HB,
        retry_backoff: BACKOFF,
        retry_backoff_max: Duration::from_millis(1000),
        metadata_max_age: Duration::from_millis(5000),
        rack: None,
        assignors,
        protocol,
    }
}

fn tp(p: i32) -> TopicPartition {
    TopicPartition::new("t", p)
}

fn set(ps: &[i32]) -> BTreeSet<TopicPartition> {
    ps.iter().map(|p| tp(*p)).collect()
}

/// A member subscribed to `t`, with a virtual clock.
struct Member {
    m: GroupMachine,
    now: Instant,
}

impl Member {
    fn new(strategy: &str, instance: Option<&str>) -> Self {
        let now = Instant::now();
        let mut m = GroupMachine::new(settings(strategy, instance), now);
        m.subscribe(
            Subscription::Topics(["t".to_owned()].into_iter().collect()),
            None,
            now,
        );
        // The application polls all the time unless a test says otherwise.
        m.poll_started(now);
        Self { m, now }
    }

    fn advance(&mut self, d: Duration) {
        self.now += d;
    }

    fn actions(&mut self) -> Vec<Action> {
        self.m.poll_actions(self.now)
    }

    fn only(&mut self) -> Action {
        let mut a = self.actions();
        assert_eq!(a.len(), 1, "{a:?}");
        a.remove(0)
    }

    fn expect_none(&mut self) {
        let a = self.actions();
        assert!(a.is_empty(), "{a:?}");
    }

    fn find(&mut self, node: i32) {
        assert!(matches!(self.only(), Action::FindCoordinator));
        self.m.on_coordinator(Ok(node), self.now);
    }

    fn join_params(&mut self) -> (i32, JoinParams) {
        match self.only() {
            Action::Join { node, params } => (node, params),
            other => panic!("expected JoinGroup, got {other:?}"),
        }
    }

    fn join_ok(&mut self, generation: i32, member: &str, leader: bool) {
        let protocol = self.m.settings().assignors[0].name().to_owned();
        let members = if leader {
            vec![JoinedMember {
                member_id: member.into(),
                group_instance_id: None,
                metadata: ConsumerSubscription {
                    topics: vec!["t".into()],
                    ..Default::default()
                }
                .encode(3)
                .unwrap(),
            }]
        } else {
            Vec::new()
        };
        self.m.on_join(
            Ok(JoinResult {
                error: ErrorCode::NONE,
                generation_id: generation,
                member_id: member.into(),
                leader: if leader {
                    member.into()
                } else {
                    "other".into()
                },
                protocol_type: Some("consumer".into()),
                protocol_name: Some(protocol),
                skip_assignment: false,
                members,
            }),
            self.now,
        );
    }

    fn sync(&mut self) -> (i32, bool) {
        match self.only() {
            Action::Sync { params, leader, .. } => (params.generation_id, leader.is_some()),
            other => panic!("expected SyncGroup, got {other:?}"),
        }
    }

    fn sync_ok(&mut self, generation: i32, parts: &[i32]) {
        let ps: Vec<TopicPartition> = parts.iter().map(|p| tp(*p)).collect();
        self.m.on_sync(
            generation,
            Ok(SyncResult {
                error: ErrorCode::NONE,
                protocol_name: None,
                assignment: assignment_bytes(&ps),
            }),
            None,
            self.now,
        );
    }

    /// Takes the pending assignment as the application would.
    fn take_assignment(&mut self) -> BTreeSet<TopicPartition> {
        match self.m.app_step() {
            Some(AppStep::Assign {
                generation,
                partitions,
            }) => {
                let revoked = self.m.owned().difference(&partitions).count() > 0;
                self.m.assignment_applied(generation, &partitions, revoked);
                partitions
            }
            other => panic!("expected an assignment, got {other:?}"),
        }
    }

    /// Coordinator lookup, KIP-394 join, sync: stable in `generation` with `parts`.
    fn join_group(&mut self, generation: i32, parts: &[i32]) {
        self.find(1);
        let (node, p) = self.join_params();
        assert_eq!(node, 1);
        assert!(p.member_id.is_empty());
        self.m.on_join(
            Ok(JoinResult::error(ErrorCode::MEMBER_ID_REQUIRED, "m-1")),
            self.now,
        );
        let (_, p) = self.join_params();
        assert_eq!(p.member_id, "m-1");
        self.join_ok(generation, "m-1", true);
        let (g, leader) = self.sync();
        assert_eq!((g, leader), (generation, true));
        self.sync_ok(generation, parts);
        assert_eq!(self.take_assignment(), set(parts));
        assert!(self.m.is_stable());
    }

    fn heartbeat(&mut self) -> (i32, i32) {
        match self.only() {
            Action::Heartbeat { node, params } => (node, params.generation_id),
            other => panic!("expected a heartbeat, got {other:?}"),
        }
    }

    fn heartbeat_answer(&mut self, generation: i32, code: ErrorCode) {
        self.m.on_heartbeat(generation, Ok(code), self.now);
    }
}

fn subscription(p: &JoinParams) -> ConsumerSubscription {
    ConsumerSubscription::decode(&p.protocols[0].1).unwrap().1
}

#[test]
fn joins_with_the_member_id_the_coordinator_asks_for_then_heartbeats() {
    let mut c = Member::new("range", None);
    c.find(1);
    let (_, p) = c.join_params();
    assert_eq!(p.protocols[0].0, "range");
    assert_eq!(subscription(&p).topics, ["t"]);
    assert_eq!(
        (p.session_timeout_ms, p.rebalance_timeout_ms),
        (3000, 10_000)
    );
    // Nothing more while the join is out.
    c.expect_none();
    c.m.on_join(
        Ok(JoinResult::error(ErrorCode::MEMBER_ID_REQUIRED, "m-1")),
        c.now,
    );
    let (_, p) = c.join_params();
    assert_eq!(p.member_id, "m-1");
    c.join_ok(1, "m-1", false);
    // Commits still go out as a simple consumer until the assignment arrives.
    assert_eq!(c.m.identity().generation, -1);
    assert_eq!(c.sync(), (1, false));
    // Heartbeats start an interval after the join answer, also while syncing.
    c.expect_none();
    c.advance(HB);
    assert_eq!(c.heartbeat(), (1, 1));
    c.expect_none();
    c.heartbeat_answer(1, ErrorCode::NONE);
    c.sync_ok(1, &[0, 2]);
    assert_eq!(c.m.identity().generation, 1);
    assert_eq!(c.m.identity().member_id, "m-1");
    assert_eq!(c.take_assignment(), set(&[0, 2]));
    assert_eq!(c.m.owned(), &set(&[0, 2]));
    assert_eq!(c.m.rebalances(), 1);
    c.expect_none();
    c.advance(HB);
    assert_eq!(c.heartbeat(), (1, 1));
    // A heartbeat is out: the next thing to watch is the session (from the last answer).
    assert_eq!(c.m.next_deadline(c.now), Some(c.now - HB + SESSION));
}

#[test]
fn eager_rebalance_revokes_everything_before_joining() {
    let mut c = Member::new("range", None);
    c.join_group(1, &[0, 1]);
    c.advance(HB);
    c.heartbeat();
    c.heartbeat_answer(1, ErrorCode::REBALANCE_IN_PROGRESS);
    assert_eq!(
        c.m.app_step(),
        Some(AppStep::Revoke {
            partitions: set(&[0, 1]),
            lost: false
        })
    );
    // No JoinGroup until the application has given the partitions up; the member keeps
    // heartbeating meanwhile (its session must not lapse).
    c.expect_none();
    c.advance(HB);
    assert_eq!(c.heartbeat(), (1, 1));
    c.heartbeat_answer(1, ErrorCode::REBALANCE_IN_PROGRESS);
    // Commits during the revocation still carry generation 1.
    assert_eq!(c.m.identity().generation, 1);
    c.m.partitions_revoked(&set(&[0, 1]));
    let (_, p) = c.join_params();
    assert_eq!(p.member_id, "m-1");
    assert_eq!(p.reason.as_deref(), Some("the group is rebalancing"));
    let s = subscription(&p);
    assert!(s.owned_partitions.is_empty());
    assert_eq!(s.generation_id, Some(1));
    c.join_ok(2, "m-1", false);
    c.sync();
    c.sync_ok(2, &[1, 2]);
    assert_eq!(c.take_assignment(), set(&[1, 2]));
    assert_eq!(c.m.identity().generation, 2);
}

#[test]
fn cooperative_keeps_partitions_revokes_what_moved_and_rejoins() {
    let mut c = Member::new("cooperative-sticky", None);
    c.join_group(1, &[0, 1, 2]);
    c.advance(HB);
    c.heartbeat();
    c.heartbeat_answer(1, ErrorCode::REBALANCE_IN_PROGRESS);
    // Nothing to revoke first: join at once, telling what is owned.
    assert_eq!(c.m.app_step(), None);
    let (_, p) = c.join_params();
    let s = subscription(&p);
    assert_eq!(s.owned_partitions, vec![tp(0), tp(1), tp(2)]);
    assert_eq!(s.generation_id, Some(1));
    // The cooperative-sticky user data is the generation.
    assert_eq!(s.user_data.as_deref(), Some(&1i32.to_be_bytes()[..]));
    c.join_ok(2, "m-1", false);
    c.sync();
    c.sync_ok(2, &[0, 1]);
    // The application revokes 2 and keeps 0 and 1, then the member rejoins so that 2 can
    // go to its new owner.
    match c.m.app_step() {
        Some(AppStep::Assign { partitions, .. }) => assert_eq!(partitions, set(&[0, 1])),
        other => panic!("{other:?}"),
    }
    c.take_assignment();
    assert_eq!(c.m.owned(), &set(&[0, 1]));
    let (_, p) = c.join_params();
    assert_eq!(subscription(&p).owned_partitions, vec![tp(0), tp(1)]);
    assert!(p.reason.unwrap().contains("revoked"));
    c.join_ok(3, "m-1", false);
    c.sync();
    c.sync_ok(3, &[0, 1]);
    c.take_assignment();
    // Nothing revoked this time: stable.
    assert!(c.m.is_stable());
    c.expect_none();
}

#[test]
fn unknown_member_or_illegal_generation_loses_the_partitions() {
    for code in [ErrorCode::UNKNOWN_MEMBER_ID, ErrorCode::ILLEGAL_GENERATION] {
        let mut c = Member::new("range", None);
        c.join_group(4, &[0, 1]);
        c.advance(HB);
        c.heartbeat();
        c.heartbeat_answer(4, code);
        assert_eq!(c.m.identity().generation, -1);
        assert_eq!(
            c.m.app_step(),
            Some(AppStep::Revoke {
                partitions: set(&[0, 1]),
                lost: true
            })
        );
        c.expect_none();
        c.m.partitions_revoked(&set(&[0, 1]));
        let (_, p) = c.join_params();
        assert!(p.member_id.is_empty(), "{code}");
        assert_eq!(subscription(&p).generation_id, None);
    }
}

#[test]
fn stale_answers_are_ignored() {
    let mut c = Member::new("range", None);
    c.join_group(2, &[0]);
    // A heartbeat of an older generation failing says nothing about this one.
    c.advance(HB);
    c.heartbeat();
    c.m.on_heartbeat(1, Ok(ErrorCode::ILLEGAL_GENERATION), c.now);
    assert!(c.m.is_stable());
    // A sync answer when not syncing.
    c.sync_ok(2, &[5]);
    assert_eq!(c.m.app_step(), None);
    // A commit error of an older generation.
    let mut old = c.m.identity();
    old.generation = 1;
    c.m.on_commit_error(&old, ErrorCode::ILLEGAL_GENERATION, c.now);
    assert!(c.m.is_stable());
    // ... and of this one.
    let who = c.m.identity();
    c.m.on_commit_error(&who, ErrorCode::REBALANCE_IN_PROGRESS, c.now);
    assert!(!c.m.is_stable());
    assert!(matches!(
        c.m.app_step(),
        Some(AppStep::Revoke { lost: false, .. })
    ));
}

#[test]
fn sync_errors() {
    // Rebalance in progress: rejoin with the same member id.
    let mut c = Member::new("range", None);
    c.find(1);
    c.join_params();
    c.join_ok(1, "m-1", false);
    c.sync();
    c.m.on_sync(
        1,
        Ok(SyncResult::error(ErrorCode::REBALANCE_IN_PROGRESS)),
        None,
        c.now,
    );
    let (_, p) = c.join_params();
    assert_eq!(p.member_id, "m-1");
    // Unknown member: from scratch.
    c.join_ok(2, "m-1", false);
    c.sync();
    c.m.on_sync(
        2,
        Ok(SyncResult::error(ErrorCode::UNKNOWN_MEMBER_ID)),
        None,
        c.now,
    );
    let (_, p) = c.join_params();
    assert!(p.member_id.is_empty());
    // A malformed assignment is reported and the member rejoins after a backoff.
    c.join_ok(3, "m-2", false);
    c.sync();
    c.m.on_sync(
        3,
        Ok(SyncResult {
            error: ErrorCode::NONE,
            protocol_name: None,
            assignment: bytes::Bytes::from_static(b"\x00\x03\xff"),
        }),
        None,
        c.now,
    );
    assert!(matches!(
        c.m.take_error(),
        Some(ConsumerError::Malformed { .. })
    ));
    c.expect_none();
    c.advance(BACKOFF);
    c.join_params();
    // Wrong protocol in the answer.
    c.join_ok(4, "m-2", false);
    c.sync();
    c.m.on_sync(
        4,
        Ok(SyncResult {
            error: ErrorCode::NONE,
            protocol_name: Some("roundrobin".into()),
            assignment: assignment_bytes(&[tp(0)]),
        }),
        None,
        c.now,
    );
    assert_eq!(
        c.m.take_error().and_then(|e| e.error_code()),
        Some(ErrorCode::INCONSISTENT_GROUP_PROTOCOL)
    );
}

#[test]
fn join_errors_retry_with_backoff() {
    let mut c = Member::new("range", None);
    c.find(1);
    c.join_params();
    for code in [
        ErrorCode::REBALANCE_IN_PROGRESS,
        ErrorCode::COORDINATOR_LOAD_IN_PROGRESS,
    ] {
        c.m.on_join(Ok(JoinResult::error(code, "")), c.now);
        c.expect_none();
        assert!(c.m.take_error().is_none());
        let next = c.m.next_deadline(c.now).unwrap();
        assert!(next > c.now && next <= c.now + Duration::from_millis(200));
        c.now = next;
        c.join_params();
    }
    // Not retriable: reported to the application, retried slowly.
    c.m.on_join(
        Ok(JoinResult::error(ErrorCode::INVALID_SESSION_TIMEOUT, "")),
        c.now,
    );
    assert_eq!(
        c.m.take_error().and_then(|e| e.error_code()),
        Some(ErrorCode::INVALID_SESSION_TIMEOUT)
    );
    assert!(c.m.take_error().is_none());
    c.advance(Duration::from_millis(500));
    c.expect_none();
    c.advance(Duration::from_millis(500));
    c.join_params();
    // A transport failure: look the coordinator up again, then rejoin.
    c.m.on_join(Err(ConsumerError::Closed), c.now);
    c.advance(Duration::from_millis(1000));
    c.find(2);
    let (node, _) = c.join_params();
    assert_eq!(node, 2);
}

#[test]
fn fenced_instance_is_fatal() {
    let mut c = Member::new("range", Some("i-1"));
    c.join_group(1, &[0]);
    c.advance(HB);
    c.heartbeat();
    c.heartbeat_answer(1, ErrorCode::FENCED_INSTANCE_ID);
    for _ in 0..2 {
        let e = c.m.take_error().unwrap();
        assert_eq!(e.error_code(), Some(ErrorCode::FENCED_INSTANCE_ID));
        assert!(e.to_string().contains("i-1"), "{e}");
    }
    // The partitions are lost; nothing is sent any more.
    assert!(matches!(
        c.m.app_step(),
        Some(AppStep::Revoke { lost: true, .. })
    ));
    c.m.partitions_revoked(&set(&[0]));
    c.advance(SESSION * 2);
    c.expect_none();
    assert_eq!(c.m.next_deadline(c.now), None);
    // Fenced while joining too.
    let mut c = Member::new("range", Some("i-1"));
    c.find(1);
    let (_, p) = c.join_params();
    assert_eq!(p.group_instance_id.as_deref(), Some("i-1"));
    c.m.on_join(
        Ok(JoinResult::error(ErrorCode::FENCED_INSTANCE_ID, "")),
        c.now,
    );
    assert!(c.m.take_error().is_some());
    c.expect_none();
}

#[test]
fn static_members_do_not_send_leave_group() {
    let mut c = Member::new("range", Some("i-1"));
    c.join_group(1, &[0]);
    c.m.partitions_revoked(&set(&[0]));
    assert!(c.m.leave("closing").is_none());
    let mut d = Member::new("range", None);
    d.join_group(1, &[0]);
    d.m.partitions_revoked(&set(&[0]));
    match d.m.leave("closing") {
        Some(Action::Leave { node, params, .. }) => {
            assert_eq!(node, 1);
            assert_eq!(
                (params.member_id.as_str(), params.generation_id),
                ("m-1", 1)
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(d.m.identity().generation, -1);
    d.expect_none();
}

#[test]
fn coordinator_moved() {
    let mut c = Member::new("range", None);
    c.join_group(1, &[0, 1]);
    for code in [
        ErrorCode::NOT_COORDINATOR,
        ErrorCode::COORDINATOR_NOT_AVAILABLE,
    ] {
        c.advance(HB);
        c.heartbeat();
        c.heartbeat_answer(1, code);
        // The generation and the partitions stay; the coordinator is looked up again.
        assert_eq!(c.m.app_step(), None);
        assert_eq!(c.m.identity().generation, 1);
        c.find(2);
        assert_eq!(c.heartbeat(), (2, 1));
        c.heartbeat_answer(1, ErrorCode::NONE);
        c.m.coordinator_lost("test", c.now);
        c.find(1);
        c.heartbeat();
        c.heartbeat_answer(1, ErrorCode::NONE);
    }
    // A lost connection is the same.
    c.advance(HB);
    c.heartbeat();
    c.m.on_heartbeat(1, Err(ConsumerError::Closed), c.now);
    assert!(matches!(c.only(), Action::FindCoordinator));
    c.m.on_coordinator(Err(ConsumerError::Closed), c.now);
    c.expect_none();
    c.advance(BACKOFF);
    c.find(3);
    assert_eq!(c.heartbeat(), (3, 1));
    // NOT_COORDINATOR on JoinGroup: find it, then join there.
    c.heartbeat_answer(1, ErrorCode::REBALANCE_IN_PROGRESS);
    c.m.partitions_revoked(&set(&[0, 1]));
    c.join_params();
    c.m.on_join(
        Ok(JoinResult::error(ErrorCode::NOT_COORDINATOR, "m-1")),
        c.now,
    );
    c.find(4);
    let (node, p) = c.join_params();
    assert_eq!((node, p.member_id.as_str()), (4, "m-1"));
}

#[test]
fn a_session_without_heartbeat_answers_finds_the_coordinator_again() {
    let mut c = Member::new("range", None);
    c.join_group(1, &[0]);
    c.advance(HB);
    c.heartbeat();
    // No answer for a whole session.
    c.advance(SESSION);
    assert!(matches!(c.only(), Action::FindCoordinator));
    assert_eq!(c.m.owned(), &set(&[0]));
}

#[test]
fn no_poll_for_max_poll_interval_leaves_until_the_next_poll() {
    let mut c = Member::new("range", None);
    c.join_group(1, &[0, 1]);
    c.m.poll_ended(c.now);
    // Heartbeats go on while the application is busy...
    let mut t = Duration::ZERO;
    while t + HB < POLL {
        c.advance(HB);
        t += HB;
        c.heartbeat();
        c.heartbeat_answer(1, ErrorCode::NONE);
    }
    // ... until max.poll.interval.ms: leave.
    c.now += POLL - t;
    match c.only() {
        Action::Leave { params, reason, .. } => {
            assert_eq!(params.member_id, "m-1");
            assert!(reason.contains("poll timeout"));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        c.m.app_step(),
        Some(AppStep::Revoke {
            partitions: set(&[0, 1]),
            lost: true
        })
    );
    c.advance(POLL);
    c.expect_none();
    // The next poll gives the partitions up (lost) and joins again.
    c.m.poll_started(c.now);
    c.expect_none();
    c.m.partitions_revoked(&set(&[0, 1]));
    let (_, p) = c.join_params();
    assert!(p.member_id.is_empty());
}

#[test]
fn a_running_poll_does_not_time_out() {
    let mut c = Member::new("range", None);
    c.join_group(1, &[0]);
    // poll_started was called by Member::new and never ended.
    for _ in 0..100 {
        c.advance(HB);
        c.heartbeat();
        c.heartbeat_answer(1, ErrorCode::NONE);
    }
    assert!(c.m.is_stable());
}

fn snapshot(version: u64, topics: &[(&str, usize)]) -> MetadataSnapshot {
    MetadataSnapshot {
        version,
        topics: topics
            .iter()
            .map(|(name, n)| {
                (
                    (*name).to_owned(),
                    TopicInfo {
                        name: (*name).to_owned(),
                        topic_id: Uuid::ZERO,
                        is_internal: name.starts_with("__"),
                        partitions: (0..*n)
                            .map(|p| PartitionInfo {
                                partition: p as i32,
                                leader: 1,
                                leader_epoch: 0,
                                replicas: vec![1],
                                isr: vec![1],
                                offline: vec![],
                                error: ErrorCode::NONE,
                            })
                            .collect(),
                        error: ErrorCode::NONE,
                    },
                )
            })
            .collect(),
        ..Default::default()
    }
}

#[test]
fn a_pattern_follows_the_topics_of_the_cluster() {
    let now = Instant::now();
    let mut m = GroupMachine::new(settings("range", None), now);
    let re = regex::Regex::new("^(?:orders-.*)$").unwrap();
    let first = snapshot(
        1,
        &[("orders-eu", 2), ("orders", 1), ("__consumer_offsets", 50)],
    );
    m.subscribe(Subscription::Pattern(re), Some(&first), now);
    m.poll_started(now);
    assert_eq!(m.topics().iter().collect::<Vec<_>>(), ["orders-eu"]);
    let a = m.poll_actions(now);
    assert!(a.iter().any(|a| matches!(a, Action::RefreshMetadata)));
    assert!(a.iter().any(|a| matches!(a, Action::FindCoordinator)));
    m.on_metadata_refreshed(true, now);
    assert_eq!(
        m.next_deadline(now),
        Some(now + Duration::from_millis(5000))
    );
    m.on_coordinator(Ok(1), now);
    let Some(Action::Join { params, .. }) = m.poll_actions(now).pop() else {
        panic!("no join");
    };
    assert_eq!(subscription(&params).topics, ["orders-eu"]);
    m.on_join(
        Ok(JoinResult {
            error: ErrorCode::NONE,
            generation_id: 1,
            member_id: "m".into(),
            leader: "x".into(),
            protocol_type: Some("consumer".into()),
            protocol_name: Some("range".into()),
            skip_assignment: false,
            members: vec![],
        }),
        now,
    );
    m.poll_actions(now);
    m.on_sync(
        1,
        Ok(SyncResult {
            error: ErrorCode::NONE,
            protocol_name: Some("range".into()),
            assignment: assignment_bytes(&[TopicPartition::new("orders-eu", 0)]),
        }),
        None,
        now,
    );
    if let Some(AppStep::Assign {
        generation,
        partitions,
    }) = m.app_step()
    {
        m.assignment_applied(generation, &partitions, false);
    }
    assert!(m.is_stable());
    // Same topics again: nothing; a new match: rejoin with it.
    m.on_metadata(&snapshot(2, &[("orders-eu", 2), ("orders", 1)]));
    assert!(m.is_stable());
    m.on_metadata(&snapshot(3, &[("orders-eu", 2), ("orders-us", 3)]));
    assert!(!m.is_stable());
    m.partitions_revoked(&[TopicPartition::new("orders-eu", 0)].into_iter().collect());
    let Some(Action::Join { params, .. }) = m.poll_actions(now).pop() else {
        panic!("no join");
    };
    assert_eq!(subscription(&params).topics, ["orders-eu", "orders-us"]);
}

#[test]
fn the_leader_rejoins_when_partition_counts_change() {
    let mut c = Member::new("range", None);
    c.find(1);
    c.join_params();
    c.join_ok(1, "m-1", true);
    c.sync();
    c.m.on_sync(
        1,
        Ok(SyncResult {
            error: ErrorCode::NONE,
            protocol_name: None,
            assignment: assignment_bytes(&[tp(0), tp(1)]),
        }),
        Some(BTreeMap::from([("t".to_owned(), 2)])),
        c.now,
    );
    c.take_assignment();
    c.m.on_metadata(&snapshot(1, &[("t", 2)]));
    assert!(c.m.is_stable());
    c.m.on_metadata(&snapshot(2, &[("t", 4)]));
    assert!(!c.m.is_stable());
    assert!(matches!(
        c.m.app_step(),
        Some(AppStep::Revoke { lost: false, .. })
    ));
}

#[test]
fn a_leader_without_a_usable_assignment_reports_and_rejoins() {
    let mut c = Member::new("range", None);
    c.find(1);
    c.join_params();
    c.join_ok(1, "m-1", true);
    c.sync();
    c.m.on_sync(
        1,
        Err(ConsumerError::CooperativeViolation {
            partitions: vec![tp(0)],
        }),
        None,
        c.now,
    );
    assert!(matches!(
        c.m.take_error(),
        Some(ConsumerError::CooperativeViolation { .. })
    ));
    c.advance(BACKOFF);
    let (_, p) = c.join_params();
    assert_eq!(p.member_id, "m-1");
}

#[test]
fn an_assignment_taken_after_the_generation_is_gone_is_lost() {
    let mut c = Member::new("cooperative-sticky", None);
    c.find(1);
    c.join_params();
    c.join_ok(1, "m-1", false);
    c.sync();
    c.sync_ok(1, &[0, 1]);
    let Some(AppStep::Assign {
        generation,
        partitions,
    }) = c.m.app_step()
    else {
        panic!("no assignment");
    };
    // While the application takes it, a heartbeat finds the member gone.
    c.advance(HB);
    c.heartbeat();
    c.heartbeat_answer(1, ErrorCode::UNKNOWN_MEMBER_ID);
    c.m.assignment_applied(generation, &partitions, false);
    assert_eq!(
        c.m.app_step(),
        Some(AppStep::Revoke {
            partitions: set(&[0, 1]),
            lost: true
        })
    );
}

#[test]
fn sticky_user_data_carries_the_last_assignment() {
    let mut c = Member::new("sticky", None);
    c.join_group(3, &[1, 2]);
    c.advance(HB);
    c.heartbeat();
    c.heartbeat_answer(3, ErrorCode::REBALANCE_IN_PROGRESS);
    c.m.partitions_revoked(&set(&[1, 2]));
    let (_, p) = c.join_params();
    let s = subscription(&p);
    assert!(s.owned_partitions.is_empty());
    let data = assignor::StickyAssignorUserData::decode(&s.user_data.unwrap()).unwrap();
    assert_eq!(data.previous_assignment, vec![tp(1), tp(2)]);
    assert_eq!(data.generation, Some(3));
    assert_eq!(
        c.m.settings().protocol,
        RebalanceProtocol::Eager,
        "sticky is eager"
    );
}
