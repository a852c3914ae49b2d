//! `__consumer_offsets` records: exact bytes, older and newer value versions, round trips,
//! and rebuilding a coordinator by replaying what another one wrote.

use super::*;
use crate::group::records::{GroupMetadataValue, MemberMetadataValue, RecordError};

/// Big-endian field writer for hand-made records.
#[derive(Default)]
struct B(Vec<u8>);

impl B {
    fn i16(mut self, v: i16) -> Self {
        self.0.extend(v.to_be_bytes());
        self
    }
    fn i32(mut self, v: i32) -> Self {
        self.0.extend(v.to_be_bytes());
        self
    }
    fn i64(mut self, v: i64) -> Self {
        self.0.extend(v.to_be_bytes());
        self
    }
    fn str(self, s: &str) -> Self {
        let mut b = self.i16(s.len() as i16);
        b.0.extend(s.as_bytes());
        b
    }
    fn null(self) -> Self {
        self.i16(-1)
    }
    fn compact_str(mut self, s: &str) -> Self {
        self.0.push(s.len() as u8 + 1);
        self.0.extend(s.as_bytes());
        self
    }
    fn bytes(self, b: &[u8]) -> Self {
        let mut out = self.i32(b.len() as i32);
        out.0.extend(b);
        out
    }
    fn u8(mut self, v: u8) -> Self {
        self.0.push(v);
        self
    }
    fn done(self) -> Bytes {
        Bytes::from(self.0)
    }
}

fn offset(o: i64) -> OffsetAndMetadata {
    OffsetAndMetadata {
        offset: o,
        leader_epoch: 3,
        metadata: "meta".into(),
        commit_timestamp: 1_700_000_000_000,
        expire_timestamp: None,
        log_order: 0,
    }
}

#[test]
fn keys_and_values_have_kafkas_bytes() {
    let r = OffsetsRecord::offset_commit("g", "t", 5, offset(42));
    let (key, value) = r.encode().unwrap();
    assert_eq!(key, B::default().i16(1).str("g").str("t").i32(5).done());
    let expected = B::default()
        .i16(3)
        .i64(42)
        .i32(3)
        .str("meta")
        .i64(1_700_000_000_000)
        .done();
    assert_eq!(value, Some(expected));

    // With an expire timestamp Kafka writes value version 1 (no leader epoch).
    let mut with_expiry = offset(42);
    with_expiry.expire_timestamp = Some(1_700_000_600_000);
    let (_, value) = OffsetsRecord::offset_commit("g", "t", 5, with_expiry)
        .encode()
        .unwrap();
    let expected = B::default()
        .i16(1)
        .i64(42)
        .str("meta")
        .i64(1_700_000_000_000)
        .i64(1_700_000_600_000)
        .done();
    assert_eq!(value, Some(expected));

    let (key, value) = OffsetsRecord::group_tombstone("my-group").encode().unwrap();
    assert_eq!(key, B::default().i16(2).str("my-group").done());
    assert_eq!(value, None);

    let group = GroupMetadataValue {
        protocol_type: "consumer".into(),
        generation: 4,
        protocol: Some("range".into()),
        leader: Some("m1".into()),
        current_state_timestamp: 99,
        members: vec![MemberMetadataValue {
            member_id: "m1".into(),
            group_instance_id: None,
            client_id: "c".into(),
            client_host: "/h".into(),
            rebalance_timeout: 300,
            session_timeout: 100,
            subscription: Bytes::from_static(b"S"),
            assignment: Bytes::from_static(b"AA"),
        }],
    };
    let (_, value) = OffsetsRecord::group_metadata("g", group).encode().unwrap();
    let expected = B::default()
        .i16(3)
        .str("consumer")
        .i32(4)
        .str("range")
        .str("m1")
        .i64(99)
        .i32(1)
        .str("m1")
        .null()
        .str("c")
        .str("/h")
        .i32(300)
        .i32(100)
        .bytes(b"S")
        .bytes(b"AA")
        .done();
    assert_eq!(value, Some(expected));
}

fn roundtrip(r: &OffsetsRecord) -> OffsetsRecord {
    let (k, v) = r.encode().unwrap();
    OffsetsRecord::decode(&k, v.as_ref()).unwrap().unwrap()
}

#[test]
fn every_kind_round_trips() {
    let mut expiring = offset(7);
    expiring.leader_epoch = -1;
    expiring.expire_timestamp = Some(5);
    let group = GroupMetadataValue {
        protocol_type: "consumer".into(),
        generation: 9,
        protocol: None,
        leader: None,
        current_state_timestamp: 1,
        members: vec![MemberMetadataValue {
            member_id: "m".into(),
            group_instance_id: Some("pod".into()),
            client_id: "c".into(),
            client_host: "".into(),
            rebalance_timeout: 1,
            session_timeout: 2,
            subscription: subscription(&["t"]),
            assignment: Bytes::new(),
        }],
    };
    for r in [
        OffsetsRecord::offset_commit("g", "t", 0, offset(1)),
        OffsetsRecord::offset_commit("grüße", "日本", i32::MAX, expiring),
        OffsetsRecord::offset_tombstone("g", "t", 0),
        OffsetsRecord::group_metadata("g", group),
        OffsetsRecord::group_tombstone("g"),
    ] {
        assert_eq!(roundtrip(&r), r);
    }
}

#[test]
fn older_and_flexible_versions_decode() {
    let key = B::default().i16(0).str("g").str("t").i32(1).done();
    let v0 = B::default().i16(0).i64(10).str("m").i64(77).done();
    let r = OffsetsRecord::decode(&key, Some(&v0)).unwrap().unwrap();
    assert_eq!(
        r,
        OffsetsRecord::offset_commit(
            "g",
            "t",
            1,
            OffsetAndMetadata {
                offset: 10,
                leader_epoch: -1,
                metadata: "m".into(),
                commit_timestamp: 77,
                expire_timestamp: None,
                log_order: 0,
            }
        )
    );
    // v4: flexible, with a tagged field nobody here knows.
    let v4 = B::default()
        .i16(4)
        .i64(10)
        .i32(2)
        .compact_str("m")
        .i64(77)
        .u8(1)
        .u8(9)
        .u8(1)
        .u8(0xff)
        .done();
    let Some(RecordValue::OffsetCommit(o)) = OffsetsRecord::decode(&key, Some(&v4))
        .unwrap()
        .unwrap()
        .value
    else {
        panic!()
    };
    assert_eq!(
        (o.offset, o.leader_epoch, o.metadata.as_str()),
        (10, 2, "m")
    );

    // Group metadata v0: no rebalance timeout (the session timeout stands in), no state
    // timestamp, no instance ids.
    let gkey = B::default().i16(2).str("g").done();
    let g0 = B::default()
        .i16(0)
        .str("consumer")
        .i32(3)
        .str("range")
        .str("m")
        .i32(1)
        .str("m")
        .str("c")
        .str("/h")
        .i32(6_000)
        .bytes(b"sub")
        .bytes(b"asg")
        .done();
    let Some(RecordValue::GroupMetadata(g)) = OffsetsRecord::decode(&gkey, Some(&g0))
        .unwrap()
        .unwrap()
        .value
    else {
        panic!()
    };
    assert_eq!((g.generation, g.current_state_timestamp), (3, -1));
    assert_eq!(g.members[0].rebalance_timeout, 6_000);
    assert_eq!(g.members[0].assignment, Bytes::from_static(b"asg"));

    // Keys of group types not served here (share groups, key 11) are skipped; unknown value
    // versions and garbage are errors.
    let newer = B::default().i16(11).str("g").done();
    assert!(OffsetsRecord::decode(&newer, None).unwrap().is_none());
    let v9 = B::default().i16(9).i64(1).done();
    assert!(matches!(
        OffsetsRecord::decode(&key, Some(&v9)),
        Err(RecordError::UnknownVersion { version: 9, .. })
    ));
    let short = B::default().i16(3).i64(1).done();
    assert!(OffsetsRecord::decode(&key, Some(&short)).is_err());
    assert!(OffsetsRecord::decode(&Bytes::from_static(&[0]), None).is_err());
}

#[test]
fn replaying_the_records_rebuilds_the_coordinator() {
    let mut h = H::new();
    let parts = topics(&[("t", 3), ("u", 2)]);
    let old = h.stable_group("g", &["a", "b"], &parts);
    let a = old[0].member_id.clone();
    h.m.commit_offsets(
        &CommitRequest {
            group_id: "g".into(),
            generation_id: 1,
            member_id: a.clone(),
            group_instance_id: None,
            retention_ms: None,
            partitions: vec![
                CommitPartition {
                    topic: "t".into(),
                    partition: 0,
                    offset: 5,
                    leader_epoch: 1,
                    metadata: Some("x".into()),
                    commit_timestamp: None,
                },
                CommitPartition {
                    topic: "u".into(),
                    partition: 1,
                    offset: 8,
                    leader_epoch: -1,
                    metadata: None,
                    commit_timestamp: None,
                },
            ],
        },
        h.now,
    );
    let simple = |group: &str, topic: &str, o: i64| CommitRequest {
        group_id: group.into(),
        generation_id: -1,
        member_id: String::new(),
        group_instance_id: None,
        retention_ms: None,
        partitions: vec![CommitPartition {
            topic: topic.into(),
            partition: 0,
            offset: o,
            leader_epoch: -1,
            metadata: None,
            commit_timestamp: None,
        }],
    };
    h.m.commit_offsets(&simple("s", "t", 1), h.now);
    h.m.commit_offsets(&simple("s", "t", 2), h.now);
    h.m.commit_offsets(&simple("s", "old", 3), h.now);
    h.m.delete_offsets("s", &[("old".to_owned(), 0)]).unwrap();
    h.m.commit_offsets(&simple("d", "t", 9), h.now);
    h.m.delete_groups(&["d".to_owned()]);
    // A group that emptied out.
    let e = h.stable_group("e", &["c"], &parts);
    h.leave("e", &e[0].member_id);
    h.records.extend(h.m.take_records());

    // Through bytes, as the log would carry them.
    let log: Vec<(Bytes, Option<Bytes>)> = h.records.iter().map(|r| r.encode().unwrap()).collect();
    let decoded = log
        .iter()
        .map(|(k, v)| OffsetsRecord::decode(k, v.as_ref()).unwrap().unwrap());
    let mut fresh = GroupManager::new(config(), MemberIdGen::new(2)).owning_every_partition();
    fresh.replay(decoded, h.now);

    for group in ["g", "s", "d", "e"] {
        assert_eq!(
            fresh.describe(group),
            h.m.describe(group),
            "describe {group}"
        );
        assert_eq!(
            fresh.fetch_offsets(group, None, false),
            h.m.fetch_offsets(group, None, false),
            "offsets of {group}"
        );
    }
    let g = fresh.group("g").unwrap();
    assert_eq!(
        (g.state(), g.generation(), g.leader()),
        (GroupState::Stable, 1, Some(a.as_str()))
    );
    assert_exact_cover(g, &parts);
    assert_eq!(fresh.group("e").unwrap().generation(), 2);
    assert!(fresh.group("d").is_none());
    assert_eq!(fresh.list(&[], &[]).len(), 3);

    // The rebuilt group works: the members carry on, and one that never comes back
    // expires after a session timeout.
    let mut fresh_h = H::with(config());
    fresh_h.m = fresh;
    fresh_h.now = h.now;
    for _ in 1..(SESSION / 1_000) {
        fresh_h.advance(1_000);
        assert_eq!(fresh_h.heartbeat("g", &a, 1), ErrorCode::NONE);
    }
    fresh_h.advance(1_000);
    assert!(fresh_h.group("g").member(&old[1].member_id).is_none());
    assert_eq!(
        fresh_h.heartbeat("g", &a, 1),
        ErrorCode::REBALANCE_IN_PROGRESS
    );
}

#[test]
fn unloading_a_partition_forgets_only_its_groups() {
    let mut h = H::new();
    let parts = topics(&[("t", 1)]);
    let partitions = h.m.config().offsets_topic_num_partitions;
    // Two groups on different partitions of __consumer_offsets.
    let first = "g0".to_owned();
    let other = (1..100)
        .map(|i| format!("g{i}"))
        .find(|g| h.m.config().partition_for(g) != h.m.config().partition_for(&first))
        .unwrap();
    assert!(partitions > 1);
    for g in [&first, &other] {
        h.stable_group(g, &["a"], &parts);
    }
    let p = h.m.config().partition_for(&first);
    assert_eq!(h.m.unload(p), 1);
    assert!(h.m.group(&first).is_none());
    assert!(h.m.group(&other).is_some());
    assert_eq!(h.m.list(&[], &[]).len(), 1);
    assert_eq!(h.m.unload(p), 0);
}
