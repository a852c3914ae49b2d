//! KIP-848 consumer groups inside the group machine: heartbeats answered once their records
//! are acknowledged, a failed write putting the group back, the records replayed by a new
//! coordinator, one group-id space with the classic groups, and the offset checks.

use std::collections::BTreeMap;

use kafka_protocol::Uuid;

use super::*;
use crate::coordinator::{Append, Effect, Machine};
use crate::group::consumer::{HeartbeatRequest as CgHeartbeat, TopicsSnapshot};

const TOPIC_ID: Uuid = Uuid([7; 16]);

/// The machine on virtual time with a 4-partition topic `t`; appends held until reported.
struct M {
    m: GroupMachine,
    now: i64,
    next: u64,
    image: TopicsSnapshot,
    answers: BTreeMap<RequestId, GroupAnswer>,
    appends: Vec<Append<GroupWrite>>,
}

impl M {
    fn new() -> Self {
        let now = 1_000_000;
        let mut image = TopicsSnapshot::default();
        image.add("t", TOPIC_ID, 4);
        Self {
            m: GroupMachine::new(
                GroupManager::new(config(), MemberIdGen::new(1)).owning_every_partition(),
                now,
            ),
            now,
            next: 0,
            image,
            answers: BTreeMap::new(),
            appends: Vec::new(),
        }
    }

    fn drain(&mut self) {
        while let Some(effect) = self.m.poll_output(self.now) {
            match effect {
                Effect::Answer(id, a) => {
                    assert!(self.answers.insert(id, a).is_none(), "answered twice");
                }
                Effect::Append(a) => self.appends.push(a),
                Effect::Work(w) => match w {},
            }
        }
    }

    fn id(&mut self) -> RequestId {
        self.next += 1;
        RequestId(self.next)
    }

    /// A heartbeat of `member` at `epoch` in group `group`, subscribed to `t` when joining.
    fn heartbeat(&mut self, group: &str, member: &str, epoch: i32) -> RequestId {
        let mut req = CgHeartbeat::new(group, member, epoch);
        if epoch == 0 {
            req.subscribed_topic_names = Some(vec!["t".into()]);
            req.rebalance_timeout_ms = 30_000;
            req.topic_partitions = Some(Default::default());
        }
        let id = self.id();
        self.m.consumer_heartbeat(id, &req, &self.image, self.now);
        self.drain();
        id
    }

    fn report(&mut self, result: Result<(), ErrorCode>) -> Append<GroupWrite> {
        let a = self.appends.remove(0);
        self.m.append_done(a.tag, result, self.now);
        self.drain();
        a
    }

    fn hb_answer(
        &mut self,
        id: RequestId,
    ) -> Option<Result<crate::group::consumer::HeartbeatResponse, Refusal>> {
        match self.answers.remove(&id)? {
            GroupAnswer::ConsumerHeartbeat(r) => Some(r),
            other => panic!("not a heartbeat answer: {other:?}"),
        }
    }

    fn consumer_group(&self, id: &str) -> Option<crate::group::consumer::ConsumerGroup> {
        self.m.manager().consumer_groups().group(id).cloned()
    }

    /// A member joined and acknowledged: its epoch.
    fn joined(&mut self, group: &str, member: &str) -> i32 {
        let id = self.heartbeat(group, member, 0);
        self.report(Ok(()));
        self.hb_answer(id).unwrap().unwrap().member_epoch
    }
}

/// The records of an append, decoded as a loader reads them.
fn entries(a: &Append<GroupWrite>) -> Vec<LogEntry> {
    a.records
        .iter()
        .filter_map(|(k, v)| OffsetsRecord::decode(k, v.as_ref()).unwrap())
        .map(LogEntry::Record)
        .collect()
}

#[test]
fn a_heartbeat_is_answered_once_written_and_a_new_coordinator_replays_the_group() {
    let mut m = M::new();
    let id = m.heartbeat("g", "m1", 0);
    assert!(
        m.hb_answer(id).is_none(),
        "answered before its records were acknowledged"
    );
    assert_eq!(m.appends.len(), 1);
    assert_eq!(m.appends[0].tag, GroupWrite::Heartbeat(1));
    assert_eq!(m.appends[0].partition, partition_for("g", 50));
    let a = m.report(Ok(()));
    let answer = m.hb_answer(id).unwrap().unwrap();
    assert_eq!(answer.member_epoch, 1);
    let owned: Vec<i32> = answer.assignment.unwrap()[&TOPIC_ID]
        .iter()
        .copied()
        .collect();
    assert_eq!(owned, [0, 1, 2, 3]);

    // A second member: the first is asked to give up half.
    let mut log = entries(&a);
    let id2 = m.heartbeat("g", "m2", 0);
    log.extend(entries(&m.report(Ok(()))));
    assert_eq!(m.hb_answer(id2).unwrap().unwrap().member_epoch, 2);

    // A coordinator reading these records back has the same group.
    let mut other = GroupManager::new(config(), MemberIdGen::new(9)).owning_every_partition();
    other.replay(log, m.now);
    other.consumer.on_loaded(None, &m.image, m.now);
    let replayed = other.consumer_groups().group("g").cloned();
    assert_eq!(replayed, m.consumer_group("g"));
    assert_eq!(replayed.unwrap().members().len(), 2);
    // ... and no empty classic group stands in for it.
    assert!(other.group("g").is_none());
}

#[test]
fn a_failed_write_puts_the_group_back_and_fails_the_heartbeats_built_on_it() {
    let mut m = M::new();
    assert_eq!(m.joined("g", "m1"), 1);
    let before = m.consumer_group("g");

    let second = m.heartbeat("g", "m2", 0);
    let third = m.heartbeat("g", "m3", 0);
    assert_eq!(m.appends.len(), 2);
    m.report(Err(ErrorCode::NOT_ENOUGH_REPLICAS));
    let refused = m.hb_answer(second).unwrap().unwrap_err();
    assert_eq!(refused.code, ErrorCode::COORDINATOR_NOT_AVAILABLE);
    assert_eq!(
        m.consumer_group("g"),
        before,
        "the group is what its log holds"
    );
    // The next write was built on the failed one: answered with the same error, even
    // though it was written, and it puts nothing back.
    m.report(Ok(()));
    let refused = m.hb_answer(third).unwrap().unwrap_err();
    assert_eq!(refused.code, ErrorCode::COORDINATOR_NOT_AVAILABLE);
    assert_eq!(m.consumer_group("g"), before);

    // A new group whose first write fails is gone again; a lost leadership is NOT_COORDINATOR.
    let id = m.heartbeat("fresh", "m1", 0);
    m.report(Err(ErrorCode::NOT_LEADER_OR_FOLLOWER));
    assert_eq!(
        m.hb_answer(id).unwrap().unwrap_err().code,
        ErrorCode::NOT_COORDINATOR
    );
    assert!(m.consumer_group("fresh").is_none());
    // The member joins again afterwards as if nothing had happened.
    assert_eq!(m.joined("fresh", "m1"), 1);
}

#[test]
fn classic_and_consumer_groups_share_one_id_space() {
    let mut m = M::new();
    // A classic group with a member: not a consumer group.
    let join = m.id();
    m.m.manager.join(
        join,
        join_req("classic", "", "c", &[("range", &["t"])]),
        m.now,
    );
    m.drain();
    let id = m.heartbeat("classic", "m1", 0);
    let refused = m.hb_answer(id).unwrap().unwrap_err();
    assert_eq!(refused.code, ErrorCode::GROUP_ID_NOT_FOUND);
    assert_eq!(
        refused.message.as_deref(),
        Some("Group classic is not a consumer group.")
    );
    assert!(m.consumer_group("classic").is_none());

    // A consumer group refuses the classic protocol's JoinGroup.
    m.joined("cg", "m1");
    let join = m.id();
    m.m.manager
        .join(join, join_req("cg", "", "c", &[("range", &["t"])]), m.now);
    m.drain();
    let Some(GroupAnswer::Join(r)) = m.answers.remove(&join) else {
        panic!("no join answer")
    };
    assert_eq!(r.error, ErrorCode::INCONSISTENT_GROUP_PROTOCOL);

    // An empty classic group (offsets only) becomes a consumer group, its offsets kept.
    let commit = CommitRequest {
        group_id: "simple".into(),
        generation_id: -1,
        member_id: String::new(),
        group_instance_id: None,
        retention_ms: None,
        partitions: vec![CommitPartition {
            topic: "t".into(),
            partition: 0,
            offset: 42,
            leader_epoch: -1,
            metadata: None,
            commit_timestamp: None,
        }],
    };
    let c = m.id();
    m.m.commit(c, &commit, m.now);
    m.drain();
    m.report(Ok(()));
    assert!(m.m.manager().group("simple").is_some());
    let id = m.heartbeat("simple", "m1", 0);
    let a = m.report(Ok(()));
    assert_eq!(m.hb_answer(id).unwrap().unwrap().member_epoch, 1);
    assert!(m.m.manager().group("simple").is_none());
    assert!(
        entries(&a)
            .iter()
            .any(|e| *e == LogEntry::Record(OffsetsRecord::group_tombstone("simple"))),
        "the classic group's tombstone goes with the heartbeat's records"
    );
    let fetched = m.m.manager().fetch_offsets("simple", None, false);
    assert_eq!(fetched[0].offset, 42);
}

#[test]
fn offsets_of_a_consumer_group_are_checked_against_the_member_epoch() {
    let mut m = M::new();
    let epoch = m.joined("g", "m1");
    let commit = |generation_id: i32| CommitRequest {
        group_id: "g".into(),
        generation_id,
        member_id: "m1".into(),
        group_instance_id: None,
        retention_ms: None,
        partitions: vec![CommitPartition {
            topic: "t".into(),
            partition: 1,
            offset: 7,
            leader_epoch: -1,
            metadata: None,
            commit_timestamp: None,
        }],
    };
    let manager = &mut m.m.manager;
    assert_eq!(
        manager.commit_offsets_at(&commit(epoch + 1), 9, m.now),
        [ErrorCode::STALE_MEMBER_EPOCH]
    );
    assert_eq!(
        manager.commit_offsets_at(&commit(epoch), 8, m.now),
        [ErrorCode::UNSUPPORTED_VERSION]
    );
    let mut stranger = commit(epoch);
    stranger.member_id = "nobody".into();
    assert_eq!(
        manager.commit_offsets_at(&stranger, 9, m.now),
        [ErrorCode::UNKNOWN_MEMBER_ID]
    );
    assert_eq!(
        manager.commit_offsets_at(&commit(epoch), 9, m.now),
        [ErrorCode::NONE]
    );
    assert_eq!(
        manager.check_consumer_fetch("g", Some("m1"), epoch - 1),
        Err(ErrorCode::STALE_MEMBER_EPOCH)
    );
    assert_eq!(manager.check_consumer_fetch("g", Some("m1"), epoch), Ok(()));
    assert_eq!(manager.check_consumer_fetch("g", None, -1), Ok(()));
    // A classic group's fetch is not the consumer groups' to check.
    assert_eq!(manager.check_consumer_fetch("other", Some("x"), 3), Ok(()));
}

#[test]
fn list_describe_and_delete_see_consumer_groups() {
    let mut m = M::new();
    m.joined("cg", "m1");
    let join = m.id();
    m.m.manager.join(
        join,
        join_req("classic", "", "c", &[("range", &["t"])]),
        m.now,
    );
    m.drain();
    let manager = &mut m.m.manager;
    let names = |groups: Vec<ListedGroup>| -> Vec<(String, &'static str)> {
        groups
            .into_iter()
            .map(|g| (g.group_id, g.group_type))
            .collect()
    };
    assert_eq!(
        names(manager.list_groups(&[], &["Consumer"])),
        [("cg".to_owned(), "consumer")]
    );
    assert_eq!(
        names(manager.list_groups(&[], &["classic"])),
        [("classic".to_owned(), "classic")]
    );
    assert_eq!(manager.list_groups(&[], &[]).len(), 2);
    let stable = manager.list_groups(&["stable"], &["consumer"]);
    assert_eq!(stable.len(), 1, "one member owning everything is Stable");
    assert!(manager.list_groups(&["Empty"], &["consumer"]).is_empty());

    let d = manager.describe_group("cg", &m.image);
    assert_eq!(d.protocol_type, "consumer");
    assert_eq!(d.protocol_data, "uniform");
    assert_eq!(d.state_name.as_deref(), Some("Stable"));
    assert_eq!(d.members.len(), 1);
    let owned = owned(&d.members[0].assignment);
    assert_eq!(owned.len(), 4);
    assert!(owned.iter().all(|(t, _)| t == "t"));
    let described = manager.consumer_describe("classic", &m.image).unwrap_err();
    assert_eq!(described.code, ErrorCode::GROUP_ID_NOT_FOUND);

    // A group with a member is not deleted; once it left it is.
    assert_eq!(
        manager.delete_groups(&["cg".into()]),
        [ErrorCode::NON_EMPTY_GROUP]
    );
    let id = m.heartbeat("cg", "m1", -1);
    m.report(Ok(()));
    assert_eq!(m.hb_answer(id).unwrap().unwrap().member_epoch, -1);
    assert_eq!(m.m.manager.delete_groups(&["cg".into()]), [ErrorCode::NONE]);
    assert!(m.consumer_group("cg").is_none());
}
