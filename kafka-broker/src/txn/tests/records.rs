//! `__transaction_state` records: round trips, and bytes laid out by hand from Kafka's
//! TransactionLogKey/TransactionLogValue schemas.

use bytes::Bytes;

use super::*;
use crate::txn::records::{decode_key, encode_key};

fn ongoing() -> TxnLogValue {
    TxnLogValue {
        producer_id: 0x0102_0304_0506_0708,
        previous_producer_id: -1,
        next_producer_id: -1,
        producer_epoch: 3,
        timeout_ms: 60_000,
        state: TxnState::Ongoing,
        partitions: [("ab".to_owned(), [0, 3].into())].into(),
        last_update_ms: 1_700_000_000_123,
        start_ms: 1_700_000_000_000,
        client_transaction_version: 0,
    }
}

/// Big-endian bytes of the value fields shared by v0 and v1 up to the partitions.
fn head(out: &mut Vec<u8>, version: i16, v: &TxnLogValue) {
    out.extend(version.to_be_bytes());
    out.extend(v.producer_id.to_be_bytes());
    out.extend(v.producer_epoch.to_be_bytes());
    out.extend(v.timeout_ms.to_be_bytes());
    out.push(v.state.id() as u8);
}

#[test]
fn key_bytes_are_kafkas() {
    // Version 0, then an i16-length string.
    const EXPECTED: [u8; 7] = [0, 0, 0, 3, b'a', b'b', b'c'];
    let expected = EXPECTED;
    assert_eq!(encode_key("abc").unwrap().as_ref(), &expected);
    assert_eq!(
        decode_key(&Bytes::from_static(&EXPECTED))
            .unwrap()
            .as_deref(),
        Some("abc")
    );
    // Other key versions are not transaction records.
    assert_eq!(
        decode_key(&Bytes::from_static(&[0, 1, 0, 0])).unwrap(),
        None
    );
    assert!(decode_key(&Bytes::from_static(&[0])).is_err());
}

#[test]
fn value_v0_bytes_are_kafkas() {
    let v = ongoing();
    let mut expected = Vec::new();
    head(&mut expected, 0, &v);
    expected.extend(1i32.to_be_bytes()); // one topic
    expected.extend(2i16.to_be_bytes());
    expected.extend(b"ab");
    expected.extend(2i32.to_be_bytes()); // two partitions
    expected.extend(0i32.to_be_bytes());
    expected.extend(3i32.to_be_bytes());
    expected.extend(v.last_update_ms.to_be_bytes());
    expected.extend(v.start_ms.to_be_bytes());

    assert_eq!(v.version(), 0);
    assert_eq!(v.encode().unwrap().as_ref(), expected.as_slice());
    assert_eq!(TxnLogValue::decode(&Bytes::from(expected)).unwrap(), v);
}

#[test]
fn empty_state_writes_null_partitions() {
    let v = TxnLogValue {
        state: TxnState::Empty,
        partitions: Default::default(),
        start_ms: -1,
        ..ongoing()
    };
    let mut expected = Vec::new();
    head(&mut expected, 0, &v);
    expected.extend((-1i32).to_be_bytes()); // null array
    expected.extend(v.last_update_ms.to_be_bytes());
    expected.extend((-1i64).to_be_bytes());
    assert_eq!(v.encode().unwrap().as_ref(), expected.as_slice());
    assert_eq!(TxnLogValue::decode(&Bytes::from(expected)).unwrap(), v);
}

#[test]
fn value_v1_bytes_with_tagged_fields_are_read() {
    let v = TxnLogValue {
        previous_producer_id: 42,
        client_transaction_version: 2,
        ..ongoing()
    };
    let mut expected = Vec::new();
    head(&mut expected, 1, &v);
    expected.push(2); // compact array: 1 topic + 1
    expected.push(3); // compact string: 2 bytes + 1
    expected.extend(b"ab");
    expected.push(3); // compact array: 2 partitions + 1
    expected.extend(0i32.to_be_bytes());
    expected.extend(3i32.to_be_bytes());
    expected.push(0); // the topic's tagged fields
    expected.extend(v.last_update_ms.to_be_bytes());
    expected.extend(v.start_ms.to_be_bytes());
    expected.push(2); // two tagged fields
    expected.extend([0, 8]); // tag 0, 8 bytes: previous producer id
    expected.extend(42i64.to_be_bytes());
    expected.extend([2, 2]); // tag 2, 2 bytes: client transaction version
    expected.extend(2i16.to_be_bytes());

    assert_eq!(v.version(), 1, "a v1-only field makes the value v1");
    assert_eq!(
        TxnLogValue::decode(&Bytes::from(expected.clone())).unwrap(),
        v
    );
    assert_eq!(v.encode().unwrap().as_ref(), expected.as_slice());
}

#[test]
fn bad_values_are_errors() {
    let mut bytes = ongoing().encode().unwrap().to_vec();
    bytes[2 + 8 + 2 + 4] = 9; // the state byte
    assert!(matches!(
        TxnLogValue::decode(&Bytes::from(bytes)),
        Err(TxnRecordError::UnknownState(9))
    ));
    assert!(matches!(
        TxnLogValue::decode(&Bytes::from_static(&[0, 2, 0])),
        Err(TxnRecordError::UnknownVersion(2))
    ));
    let good = ongoing().encode().unwrap();
    assert!(TxnLogValue::decode(&good.slice(..good.len() - 1)).is_err());
}

#[test]
fn records_and_tombstones_round_trip() {
    for state in [
        TxnState::Ongoing,
        TxnState::PrepareCommit,
        TxnState::PrepareAbort,
        TxnState::CompleteCommit,
        TxnState::CompleteAbort,
    ] {
        let r = TxnRecord {
            transactional_id: "tx-1".into(),
            value: Some(TxnLogValue { state, ..ongoing() }),
        };
        let (k, v) = r.encode().unwrap();
        assert_eq!(TxnRecord::decode(&k, v.as_ref()).unwrap(), Some(r));
    }
    let t = TxnRecord::tombstone("tx-1");
    let (k, v) = t.encode().unwrap();
    assert!(v.is_none());
    assert_eq!(TxnRecord::decode(&k, None).unwrap(), Some(t));
}

#[test]
fn the_coordinator_writes_what_it_prepared() {
    let mut h = H::new();
    let (pid, epoch) = h.open("tx", 30_000, &[tp("b", 1), tp("a", 0), tp("a", 2)]);
    assert_eq!(h.end("tx", pid, epoch, true), ErrorCode::NONE);
    let records = h.records();
    let states: Vec<_> = records
        .iter()
        .map(|r| r.value.as_ref().unwrap().state)
        .collect();
    assert_eq!(
        states,
        [
            TxnState::Empty,
            TxnState::Ongoing,
            TxnState::PrepareCommit,
            TxnState::CompleteCommit
        ]
    );
    let prepare = records[2].value.as_ref().unwrap();
    assert_eq!(prepare.partitions.len(), 2);
    assert_eq!(
        prepare.topic_partitions(),
        set(&[tp("a", 0), tp("a", 2), tp("b", 1)])
    );
    assert_eq!((prepare.producer_id, prepare.producer_epoch), (pid, epoch));
    assert_eq!(prepare.timeout_ms, 30_000);
    let complete = records[3].value.as_ref().unwrap();
    assert!(complete.partitions.is_empty());
    assert_eq!(complete.start_ms, prepare.start_ms);
    // Every record went to the id's partition.
    let p = h.m.config().partition_for("tx");
    assert!(h.log.iter().all(|(part, _, _)| *part == p));
    assert_eq!(p, crate::group::partition_for("tx", 50));
}
