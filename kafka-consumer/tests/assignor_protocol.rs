#![allow(clippy::unwrap_used)]
//! The consumer protocol payloads: round trips at every version, tolerance of newer versions,
//! malformed input, and the member metadata and assignments that real clients put on the wire
//! (the golden JoinGroup and SyncGroup frames of kafka-protocol/tests/data/golden, captured
//! from kcat/librdkafka 2.0.2, confluent-kafka/librdkafka 2.16.0 and kafka-python 3.0.12).

use std::path::{Path, PathBuf};

use bytes::Bytes;
use kafka_consumer::assignor::{
    ConsumerAssignment, ConsumerSubscription, MemberSubscription, StickyAssignorUserData,
    TopicPartition,
};
use kafka_protocol::{RequestBody, frame};

fn tp(t: &str, p: i32) -> TopicPartition {
    TopicPartition::new(t, p)
}

fn full_subscription() -> ConsumerSubscription {
    ConsumerSubscription {
        topics: vec!["orders".into(), "audit".into(), "payments".into()],
        user_data: Some(Bytes::from_static(b"\x00\x01user")),
        owned_partitions: vec![tp("audit", 3), tp("orders", 0), tp("orders", 2)],
        generation_id: Some(42),
        rack_id: Some("eu-west-1a".into()),
    }
}

/// What survives a trip through `version`: fields newer than it are lost, topics come back
/// sorted.
fn projected(s: &ConsumerSubscription, version: i16) -> ConsumerSubscription {
    let mut topics = s.topics.clone();
    topics.sort();
    let mut owned = s.owned_partitions.clone();
    owned.sort();
    ConsumerSubscription {
        topics,
        user_data: s.user_data.clone(),
        owned_partitions: if version >= 1 { owned } else { Vec::new() },
        generation_id: if version >= 2 { s.generation_id } else { None },
        rack_id: if version >= 3 {
            s.rack_id.clone()
        } else {
            None
        },
    }
}

#[test]
fn subscription_round_trips_at_every_version() {
    let variants = [
        full_subscription(),
        ConsumerSubscription::default(),
        ConsumerSubscription {
            topics: vec!["t".into()],
            user_data: Some(Bytes::new()),
            ..Default::default()
        },
    ];
    for s in &variants {
        for version in 0..=3 {
            let bytes = s.encode(version).unwrap();
            assert_eq!(&bytes[..2], &version.to_be_bytes());
            let (v, back) = ConsumerSubscription::decode(&bytes).unwrap();
            assert_eq!(v, version);
            assert_eq!(back, projected(s, version), "v{version}");
            // Re-encoding what was decoded gives the same bytes.
            assert_eq!(back.encode(version).unwrap(), bytes, "v{version}");
        }
    }
}

#[test]
fn assignment_round_trips_at_every_version() {
    for a in [
        ConsumerAssignment {
            partitions: vec![tp("b", 1), tp("a", 0), tp("b", 0), tp("a", 5)],
            user_data: Some(Bytes::from_static(b"x")),
        },
        ConsumerAssignment::default(),
    ] {
        for version in 0..=3 {
            let bytes = a.encode(version).unwrap();
            let (v, back) = ConsumerAssignment::decode(&bytes).unwrap();
            assert_eq!(v, version);
            // Grouped by topic in order of first appearance.
            let mut want = Vec::new();
            for topic in ["b", "a"] {
                want.extend(a.partitions.iter().filter(|p| *p.topic == *topic).cloned());
            }
            assert_eq!(back.partitions, want);
            assert_eq!(back.user_data, a.user_data);
            assert_eq!(back.encode(version).unwrap(), bytes);
        }
    }
}

#[test]
fn newer_versions_are_read_with_the_v3_layout() {
    let s = full_subscription();
    let mut bytes = s.encode(3).unwrap().to_vec();
    bytes[..2].copy_from_slice(&9i16.to_be_bytes());
    bytes.extend_from_slice(b"fields from the future");
    let (v, back) = ConsumerSubscription::decode(&Bytes::from(bytes)).unwrap();
    assert_eq!(v, 9);
    assert_eq!(back, projected(&s, 3));

    let a = ConsumerAssignment::new(vec![tp("t", 1)]);
    let mut bytes = a.encode(3).unwrap().to_vec();
    bytes[..2].copy_from_slice(&4i16.to_be_bytes());
    bytes.extend_from_slice(&[1, 2, 3]);
    let (v, back) = ConsumerAssignment::decode(&Bytes::from(bytes)).unwrap();
    assert_eq!((v, back), (4, a));
}

#[test]
fn malformed_payloads_are_errors() {
    let sub = full_subscription().encode(3).unwrap();
    let asg = ConsumerAssignment::new(vec![tp("t", 1), tp("u", 2)])
        .encode(3)
        .unwrap();
    // Every truncation of a valid payload fails cleanly.
    for cut in 0..sub.len() {
        assert!(
            ConsumerSubscription::decode(&sub.slice(..cut)).is_err(),
            "cut {cut}"
        );
    }
    for cut in 0..asg.len() {
        assert!(
            ConsumerAssignment::decode(&asg.slice(..cut)).is_err(),
            "cut {cut}"
        );
    }
    // A negative version, and absurd counts that must not allocate.
    let negative = Bytes::from_static(b"\xff\xff\x00\x00\x00\x00\xff\xff\xff\xff");
    assert!(ConsumerSubscription::decode(&negative).is_err());
    let huge = Bytes::from_static(b"\x00\x00\x7f\xff\xff\xff");
    assert!(ConsumerSubscription::decode(&huge).is_err());
    assert!(ConsumerAssignment::decode(&huge).is_err());
    assert!(StickyAssignorUserData::decode(&huge.slice(2..)).is_err());
    // Encoding into a version that does not exist.
    assert!(full_subscription().encode(4).is_err());
    assert!(ConsumerAssignment::default().encode(-1).is_err());
}

#[test]
fn member_subscription_from_metadata() {
    let bytes = full_subscription().encode(3).unwrap();
    let m = MemberSubscription::from_metadata("m-1", Some("i-1".into()), &bytes).unwrap();
    assert_eq!(m.member_id, "m-1");
    assert_eq!(m.group_instance_id.as_deref(), Some("i-1"));
    assert_eq!(m.topics, ["audit", "orders", "payments"]);
    assert_eq!(m.generation_id, Some(42));
    assert_eq!(m.rack_id.as_deref(), Some("eu-west-1a"));
    assert!(MemberSubscription::from_metadata("m", None, &bytes.slice(..5)).is_err());
}

// ---- golden frames from real clients ----

fn golden(client: &str, file: &str) -> Bytes {
    let path: PathBuf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../kafka-protocol/tests/data/golden")
        .join(client)
        .join(file);
    Bytes::from(std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
}

/// (protocol name, metadata) of a golden JoinGroup request.
fn join_protocols(client: &str, file: &str) -> Vec<(String, Bytes)> {
    let req = frame::decode_request(&golden(client, file)).unwrap();
    match req.body {
        RequestBody::JoinGroup(j) => {
            assert_eq!(j.protocol_type.as_str(), "consumer");
            j.protocols
                .iter()
                .map(|p| (p.name.as_str().to_owned(), p.metadata.clone()))
                .collect()
        }
        other => panic!("{file}: not a JoinGroup: {other:?}"),
    }
}

/// (member id, assignment) of a golden SyncGroup request.
fn sync_assignments(client: &str, file: &str) -> Vec<(String, Bytes)> {
    let req = frame::decode_request(&golden(client, file)).unwrap();
    match req.body {
        RequestBody::SyncGroup(s) => s
            .assignments
            .iter()
            .map(|a| (a.member_id.as_str().to_owned(), a.assignment.clone()))
            .collect(),
        other => panic!("{file}: not a SyncGroup: {other:?}"),
    }
}

/// The subscription each client sent; its wire version; and how to encode `want` to get the
/// client's bytes exactly.
struct GoldenJoin {
    client: &'static str,
    files: [&'static str; 2],
    version: i16,
    topic: &'static str,
    /// librdkafka 2.x writes an empty rack id where Java writes null; we read it as no rack.
    empty_rack_on_wire: bool,
}

const JOINS: [GoldenJoin; 3] = [
    GoldenJoin {
        client: "kcat",
        files: ["JoinGroup-v5.bin", "JoinGroup-v5-new-member.bin"],
        version: 1,
        topic: "golden-kcat-g",
        empty_rack_on_wire: false,
    },
    GoldenJoin {
        client: "confluent-kafka",
        files: ["JoinGroup-v5.bin", "JoinGroup-v5-new-member.bin"],
        version: 3,
        topic: "golden-ck-none",
        empty_rack_on_wire: true,
    },
    GoldenJoin {
        client: "kafka-python",
        files: ["JoinGroup-v7.bin", "JoinGroup-v7-new-member.bin"],
        version: 0,
        topic: "golden-kp-none",
        empty_rack_on_wire: false,
    },
];

#[test]
fn golden_join_group_metadata_decodes_and_re_encodes_byte_for_byte() {
    let mut checked = 0;
    for g in &JOINS {
        for file in g.files {
            let protocols = join_protocols(g.client, file);
            let names: Vec<&str> = protocols.iter().map(|(n, _)| n.as_str()).collect();
            assert_eq!(names, ["range", "roundrobin"], "{} {file}", g.client);
            for (name, metadata) in &protocols {
                let ctx = format!("{} {file} {name}", g.client);
                let (version, s) = ConsumerSubscription::decode(metadata).unwrap();
                assert_eq!(version, g.version, "{ctx}");
                // Every client sends empty (not null) user data when it has none.
                let want = ConsumerSubscription {
                    topics: vec![g.topic.to_owned()],
                    user_data: Some(Bytes::new()),
                    owned_partitions: Vec::new(),
                    generation_id: None,
                    rack_id: None,
                };
                assert_eq!(s, want, "{ctx}");
                let mut same = want.clone();
                if g.empty_rack_on_wire {
                    same.rack_id = Some(String::new());
                }
                assert_eq!(&same.encode(version).unwrap(), metadata, "{ctx}");
                let m = MemberSubscription::from_metadata("m", None, metadata).unwrap();
                assert_eq!(m.topics, [g.topic], "{ctx}");
                checked += 1;
            }
        }
    }
    assert_eq!(checked, 12);
}

#[test]
fn golden_sync_group_assignments_decode_and_re_encode_byte_for_byte() {
    for (client, file, topic) in [
        ("kcat", "SyncGroup-v3.bin", "golden-kcat-g"),
        ("confluent-kafka", "SyncGroup-v3.bin", "golden-ck-none"),
        ("kafka-python", "SyncGroup-v5.bin", "golden-kp-none"),
    ] {
        let assignments = sync_assignments(client, file);
        assert_eq!(assignments.len(), 1, "{client}");
        let (member, bytes) = &assignments[0];
        assert_eq!(member, "member-1", "{client}");
        let (version, a) = ConsumerAssignment::decode(bytes).unwrap();
        // librdkafka and kafka-python write assignment v0 with empty user data.
        assert_eq!(version, 0, "{client}");
        let want = ConsumerAssignment {
            partitions: vec![tp(topic, 0)],
            user_data: Some(Bytes::new()),
        };
        assert_eq!(a, want, "{client}");
        assert_eq!(&want.encode(0).unwrap(), bytes, "{client}");
    }
}
