//! Kafka's internal records: every KRaft metadata record at every version, and every
//! `__consumer_offsets` / `__transaction_state` key and value, round-trip with default and
//! random values (tagged and unknown tagged fields included); golden bytes written by hand
//! from the schema text check the generator independently; malformed frames are errors.
#![allow(clippy::unwrap_used)]

use arbitrary::Unstructured;
use bytes::Bytes;
use kafka_protocol::coordinator::*;
use kafka_protocol::metadata::*;
use kafka_protocol::{DecodeError, EncodeError, KStr, Uuid};

/// Deterministic pseudo-random bytes (splitmix64), so failures reproduce.
fn random_bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut s = seed;
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        out.extend_from_slice(&z.to_le_bytes());
    }
    out.truncate(len);
    out
}

const CASES: u64 = 32;

/// decode(encode(r)) == r, encode(decode(bytes)) == bytes, and the version comes back.
fn metadata_round_trip(record: &MetadataRecord, version: i16) -> Bytes {
    let bytes = record.encode(version).unwrap();
    let (back, v) = MetadataRecord::decode(&bytes).unwrap();
    assert_eq!(v, version);
    assert_eq!(&back, record, "{} v{version}", record.name());
    assert_eq!(back.encode(version).unwrap(), bytes);
    bytes
}

#[test]
fn every_metadata_record_round_trips_at_every_version() {
    let mut checked = 0;
    for &t in MetadataRecord::TYPES {
        let range = MetadataRecord::versions_of(t).unwrap();
        for version in range.min..=range.max {
            let default = MetadataRecord::default_of(t).unwrap();
            assert_eq!(default.record_type(), t);
            let bytes = metadata_round_trip(&default, version);
            // Frame: version 1, the type, the version (all below 128 here: one byte each).
            assert_eq!(&bytes[..3], &[1, t as u8, version as u8]);
            for case in 0..CASES {
                let data = random_bytes((t as u64) << 32 | (version as u64) << 16 | case, 4096);
                let record =
                    MetadataRecord::arbitrary(t, &mut Unstructured::new(&data), version).unwrap();
                metadata_round_trip(&record, version);
                checked += 1;
            }
        }
        assert!(MetadataRecord::versions_of(t).is_some());
    }
    // 25 types, 34 versions in all (RegisterBroker 0-3; Partition, PartitionChange and
    // BrokerRegistrationChange 0-2; the others 0).
    assert_eq!(MetadataRecord::TYPES.len(), 25);
    assert_eq!(checked, 34 * CASES);
}

#[test]
fn every_coordinator_key_and_value_round_trips_at_every_version() {
    let mut checked = 0;
    for key_version in 0..=20i16 {
        for case in 0..CASES {
            let data = random_bytes(0xc0 << 32 | (key_version as u64) << 16 | case, 4096);
            let mut u = Unstructured::new(&data);
            let Ok(key) = GroupCoordinatorKey::arbitrary(&mut u, key_version) else {
                // Not a key version of any type: decoding one is an error.
                let bytes = Bytes::from(key_version.to_be_bytes().to_vec());
                assert!(matches!(
                    GroupCoordinatorKey::decode(&bytes),
                    Err(DecodeError::UnknownRecordType { .. })
                ));
                continue;
            };
            let bytes = key.encode(key_version).unwrap();
            assert_eq!(&bytes[..2], &key_version.to_be_bytes());
            assert_eq!(
                GroupCoordinatorKey::decode(&bytes).unwrap(),
                (key.clone(), key_version)
            );
            let value = GroupCoordinatorValue::arbitrary(&key, &mut u, 0).unwrap();
            let range = value.versions();
            for version in range.min..=range.max {
                let value = GroupCoordinatorValue::arbitrary(&key, &mut u, version).unwrap();
                let bytes = value.encode(version).unwrap();
                let (back, v) = GroupCoordinatorValue::decode(&key, &bytes).unwrap();
                assert_eq!((&back, v), (&value, version), "{} v{version}", value.name());
                assert_eq!(back.encode(version).unwrap(), bytes);
                checked += 1;
            }
        }
    }
    // Key versions 0-8 and 11; values: OffsetCommit 0-4 (twice: keys 0 and 1), GroupMetadata
    // 0-4, and one version of each of the seven others.
    assert_eq!(checked, (5 + 5 + 5 + 7) * CASES);

    for case in 0..CASES {
        let data = random_bytes(0x7c << 32 | case, 4096);
        let mut u = Unstructured::new(&data);
        let key = TransactionCoordinatorKey::arbitrary(&mut u, 0).unwrap();
        let bytes = key.encode(0).unwrap();
        assert_eq!(
            TransactionCoordinatorKey::decode(&bytes).unwrap(),
            (key.clone(), 0)
        );
        for version in 0..=1 {
            let value = TransactionCoordinatorValue::arbitrary(&key, &mut u, version).unwrap();
            let bytes = value.encode(version).unwrap();
            assert_eq!(
                TransactionCoordinatorValue::decode(&key, &bytes).unwrap(),
                (value, version)
            );
        }
    }
}

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn uuid(b: u8) -> Uuid {
    Uuid([b; 16])
}

/// The record encodes to `golden` at `version`, and `golden` decodes to it.
fn check_golden(record: MetadataRecord, version: i16, golden: &str) {
    let golden = Bytes::from(hex(golden));
    let bytes = record.encode(version).unwrap();
    assert_eq!(
        bytes,
        golden,
        "{} v{version}: {:02x?}",
        record.name(),
        &bytes[..]
    );
    assert_eq!(MetadataRecord::decode(&golden).unwrap(), (record, version));
}

// Golden bytes below are laid out by hand from the schema files
// (`metadata/RegisterBrokerRecord.json` etc.): flexible versions everywhere, so compact
// strings and arrays (unsigned varint length + 1), nullable compact string null = 00, and a
// tagged-field section (count, then tag, size, value, in tag order) after each struct.

fn register_broker() -> RegisterBrokerRecord {
    RegisterBrokerRecord {
        broker_id: 1,
        incarnation_id: Uuid(std::array::from_fn(|i| i as u8)),
        broker_epoch: 5,
        end_points: vec![register_broker_record::BrokerEndpoint {
            name: KStr::from_static("PLAINTEXT"),
            host: KStr::from_static("h"),
            port: 9092,
            security_protocol: 0,
            ..Default::default()
        }],
        features: vec![register_broker_record::BrokerFeature {
            name: KStr::from_static("kraft.version"),
            min_supported_version: 0,
            max_supported_version: 1,
            ..Default::default()
        }],
        rack: None,
        fenced: true,
        ..Default::default()
    }
}

const REGISTER_BROKER_FIELDS: &str = "
    00 00 00 05
    02  0a 504c41494e54455854  02 68  2384  0000  00
    02  0e 6b726166742e76657273696f6e  0000 0001  00
    00
    01";

#[test]
fn golden_register_broker_record() {
    let uuid_bytes = "000102030405060708090a0b0c0d0e0f";
    // v3: IsMigratingZkBroker (v2+) after BrokerId, InControlledShutdown (v1+) after Fenced,
    // LogDirs tagged (tag 0, v3+): size 0x11 = count byte + one uuid.
    let mut r = register_broker();
    r.log_dirs = vec![uuid(0x11)];
    check_golden(
        r.clone().into(),
        3,
        &format!(
            "01 00 03  00000001 00 {uuid_bytes} 00000000 {REGISTER_BROKER_FIELDS} 00
             01 00 11 02 {}",
            "11".repeat(16)
        ),
    );
    // v0: neither IsMigratingZkBroker nor InControlledShutdown nor LogDirs.
    check_golden(
        register_broker().into(),
        0,
        &format!("01 00 00  00000001 {uuid_bytes} 00000000 {REGISTER_BROKER_FIELDS} 00"),
    );
    // v0 has no place for LogDirs (tagged, v3+) or InControlledShutdown (v1+).
    for (field, r) in [
        ("RegisterBrokerRecord.LogDirs", r),
        (
            "RegisterBrokerRecord.InControlledShutdown",
            RegisterBrokerRecord {
                in_controlled_shutdown: true,
                ..register_broker()
            },
        ),
    ] {
        let err = MetadataRecord::from(r).encode(0).unwrap_err();
        let EncodeError::InMessage { source, .. } = err else {
            panic!("{err:?}")
        };
        assert_eq!(
            *source,
            EncodeError::FieldNotAvailable { field, version: 0 }
        );
    }
}

#[test]
fn golden_partition_record() {
    let r = PartitionRecord {
        partition_id: 0,
        topic_id: uuid(0x22),
        replicas: vec![1, 2],
        isr: vec![1],
        removing_replicas: vec![],
        adding_replicas: vec![],
        leader: 1,
        leader_recovery_state: 1,
        leader_epoch: 3,
        partition_epoch: 4,
        directories: vec![uuid(0x33), uuid(0x44)],
        eligible_leader_replicas: Some(vec![2]),
        last_known_elr: None,
        ..Default::default()
    };
    let head = format!(
        "00000000 {} 03 00000001 00000002  02 00000001  01  01  00000001 00000003 00000004",
        "22".repeat(16)
    );
    // v2: Directories (v1+), tags 0 (LeaderRecoveryState, int8) and 1 (ELR, nullable array);
    // LastKnownElr (tag 2) is at its default, null, and not written.
    check_golden(
        r.clone().into(),
        2,
        &format!(
            "01 03 02 {head} 03 {} {}  02  00 01 01  01 05 02 00000002",
            "33".repeat(16),
            "44".repeat(16)
        ),
    );
    // v0: no Directories, no ELR; a default LeaderRecoveryState is not written either.
    let v0 = PartitionRecord {
        directories: vec![],
        eligible_leader_replicas: None,
        leader_recovery_state: 0,
        ..r
    };
    check_golden(v0.into(), 0, &format!("01 03 00 {head} 00"));
}

#[test]
fn golden_partition_change_record() {
    // Everything after TopicId is tagged; Leader's default is -2 and
    // LeaderRecoveryState's -1, so 0 is written for both.
    let r = PartitionChangeRecord {
        partition_id: 7,
        topic_id: uuid(0x55),
        isr: Some(vec![1, 2]),
        leader: 2,
        leader_recovery_state: 0,
        ..Default::default()
    };
    check_golden(
        r.clone().into(),
        0,
        &format!(
            "01 05 00 00000007 {} 03  00 09 03 00000001 00000002  01 04 00000002  05 01 00",
            "55".repeat(16)
        ),
    );
    // Defaults (no change): no tagged field at all.
    let unchanged = PartitionChangeRecord {
        partition_id: 7,
        topic_id: uuid(0x55),
        ..Default::default()
    };
    assert_eq!(unchanged.leader, -2);
    check_golden(
        unchanged.clone().into(),
        1,
        &format!("01 05 01 00000007 {} 00", "55".repeat(16)),
    );
    // v2: an empty ELR (not null) is written as tag 6, an empty compact array (01); tag 8
    // (Directories, v1+) comes after tag 6 although it is declared before it.
    let v2 = PartitionChangeRecord {
        eligible_leader_replicas: Some(vec![]),
        directories: Some(vec![uuid(0x66)]),
        ..unchanged.clone()
    };
    check_golden(
        v2.clone().into(),
        2,
        &format!(
            "01 05 02 00000007 {} 02  06 01 01  08 11 02 {}",
            "55".repeat(16),
            "66".repeat(16)
        ),
    );
    // Neither the ELR nor Directories exist in v0.
    assert!(MetadataRecord::from(v2).encode(0).is_err());
}

#[test]
fn golden_topic_record() {
    let r = TopicRecord {
        name: KStr::from_static("foo"),
        topic_id: uuid(0x77),
        ..Default::default()
    };
    check_golden(
        r.into(),
        0,
        &format!("01 02 00 04 666f6f {} 00", "77".repeat(16)),
    );
}

#[test]
fn golden_unknown_tagged_field_is_kept() {
    // A FenceBrokerRecord (type 7: Id int32, Epoch int64) with tag 9 = [ab cd], which this
    // code does not know: decoded, kept and written back unchanged.
    let bytes = Bytes::from(hex("01 07 00 00000003 0000000000000004 01 09 02 abcd"));
    let (r, v) = MetadataRecord::decode(&bytes).unwrap();
    let MetadataRecord::FenceBroker(f) = &r else {
        panic!("{r:?}")
    };
    assert_eq!((f.id, f.epoch, v), (3, 4, 0));
    assert_eq!(f.unknown_tagged_fields.as_slice().len(), 1);
    assert_eq!(r.encode(0).unwrap(), bytes);
}

#[test]
fn malformed_metadata_frames_are_errors() {
    let topic = MetadataRecord::from(TopicRecord {
        name: KStr::from_static("foo"),
        topic_id: uuid(1),
        ..Default::default()
    });
    let good = topic.encode(0).unwrap();
    let with = |f: &dyn Fn(&mut Vec<u8>)| {
        let mut b = good.to_vec();
        f(&mut b);
        MetadataRecord::decode(&Bytes::from(b))
    };
    // Frame version 0 (KRaft preview) and 2 (unknown).
    assert!(matches!(
        with(&|b| b[0] = 0),
        Err(DecodeError::Invalid { .. })
    ));
    assert!(matches!(
        with(&|b| b[0] = 2),
        Err(DecodeError::Invalid { .. })
    ));
    // Type 99 and type 32768 (a three-byte varint).
    assert!(matches!(
        with(&|b| b[1] = 99),
        Err(DecodeError::UnknownRecordType {
            record_type: 99,
            ..
        })
    ));
    assert!(matches!(
        with(&|b| {
            b.splice(1..2, [0x80, 0x80, 0x02]);
        }),
        Err(DecodeError::Invalid { .. })
    ));
    // TopicRecord has no version 1.
    assert!(matches!(
        with(&|b| b[2] = 1),
        Err(DecodeError::UnsupportedVersion {
            api_key: 2,
            version: 1,
            ..
        })
    ));
    // Bytes after the record.
    assert!(with(&|b| b.push(0)).is_err());
    // Every truncation.
    for n in 0..good.len() {
        assert!(
            MetadataRecord::decode(&good.slice(..n)).is_err(),
            "{n} bytes"
        );
    }
    // A negative version cannot be framed.
    assert!(topic.encode(-1).is_err());
}

#[test]
fn truncated_and_garbage_input_is_an_error_not_a_panic() {
    let mut decoded = 0;
    for seed in 0..20_000u64 {
        let data = random_bytes(seed, (seed % 64) as usize);
        // Half the inputs get a valid frame header, so that the record decoders see garbage.
        let mut b = data.clone();
        if seed % 2 == 0 && b.len() > 3 {
            let types = MetadataRecord::TYPES;
            b[0] = 1;
            b[1] = types[(seed as usize / 2) % types.len()] as u8;
            b[2] = 0;
        }
        if MetadataRecord::decode(&Bytes::from(b)).is_ok() {
            decoded += 1;
        }
        let bytes = Bytes::from(data);
        if let Ok((key, _)) = GroupCoordinatorKey::decode(&bytes) {
            let _ = GroupCoordinatorValue::decode(&key, &bytes);
        }
        let _ = TransactionCoordinatorKey::decode(&bytes);
    }
    // Some garbage happens to be a valid record (NoOpRecord is 01 14 00 00), most is not.
    assert!(decoded < 20_000 / 2);

    // Every truncation of every random record of every type.
    for &t in MetadataRecord::TYPES {
        let range = MetadataRecord::versions_of(t).unwrap();
        let data = random_bytes(t as u64, 4096);
        let r = MetadataRecord::arbitrary(t, &mut Unstructured::new(&data), range.max).unwrap();
        let bytes = r.encode(range.max).unwrap();
        for n in 0..bytes.len() {
            assert!(MetadataRecord::decode(&bytes.slice(..n)).is_err());
        }
    }
}
