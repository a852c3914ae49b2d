//! Control records: the transaction markers (commit, abort) a transaction coordinator writes
//! into each partition of a transaction.
//!
//! A control record's key is a version (i16, 0) and a type (i16); an end-transaction marker's
//! value is a version (i16, 0) and the coordinator epoch (i32).

use bytes::Bytes;

use super::batch::{NO_SEQUENCE, RecordBatch};
use super::builder::RecordBatchBuilder;
use super::records::Record;
use crate::error::{DecodeError, EncodeError};

/// The type of a control record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ControlRecordType {
    /// The transaction was aborted (type 0).
    Abort,
    /// The transaction was committed (type 1).
    Commit,
    /// A type this code does not interpret (KRaft uses 2 and up in its metadata log).
    Unknown(i16),
}

impl ControlRecordType {
    pub fn from_code(code: i16) -> Self {
        match code {
            0 => Self::Abort,
            1 => Self::Commit,
            other => Self::Unknown(other),
        }
    }

    pub fn code(self) -> i16 {
        match self {
            Self::Abort => 0,
            Self::Commit => 1,
            Self::Unknown(code) => code,
        }
    }
}

/// The key of a control record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ControlRecord {
    pub version: i16,
    pub kind: ControlRecordType,
}

impl ControlRecord {
    /// The version this code writes.
    pub const CURRENT_VERSION: i16 = 0;

    /// Reads the control key of a record from a control batch. Newer key versions are read
    /// too (their first fields are the same), as Kafka does.
    pub fn parse(record: &Record) -> Result<Self, DecodeError> {
        let key = record.key.as_deref().ok_or(DecodeError::Invalid {
            field: "ControlRecord.key",
            reason: "control record without a key",
        })?;
        let field = "ControlRecord.key";
        let version = i16::from_be_bytes(fixed(key, 0, field)?);
        if version < 0 {
            return Err(DecodeError::Invalid {
                field,
                reason: "negative control key version",
            });
        }
        let kind = ControlRecordType::from_code(i16::from_be_bytes(fixed(key, 2, field)?));
        Ok(Self { version, kind })
    }

    /// The encoded key of a control record of `kind`, version 0.
    pub fn key_bytes(kind: ControlRecordType) -> [u8; 4] {
        let mut out = [0; 4];
        out[..2].copy_from_slice(&Self::CURRENT_VERSION.to_be_bytes());
        out[2..].copy_from_slice(&kind.code().to_be_bytes());
        out
    }
}

/// The value of a commit or abort marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EndTxnMarker {
    pub version: i16,
    pub coordinator_epoch: i32,
}

impl EndTxnMarker {
    /// Reads the marker value of a commit or abort control record.
    pub fn parse(record: &Record) -> Result<Self, DecodeError> {
        let field = "EndTxnMarker";
        let value = record.value.as_deref().ok_or(DecodeError::Invalid {
            field,
            reason: "transaction marker without a value",
        })?;
        let version = i16::from_be_bytes(fixed(value, 0, field)?);
        if version < 0 {
            return Err(DecodeError::Invalid {
                field,
                reason: "negative marker version",
            });
        }
        let coordinator_epoch = i32::from_be_bytes(fixed(value, 2, field)?);
        Ok(Self {
            version,
            coordinator_epoch,
        })
    }

    /// The encoded value, version 0.
    pub fn value_bytes(coordinator_epoch: i32) -> [u8; 6] {
        let mut out = [0; 6];
        out[..2].copy_from_slice(&0i16.to_be_bytes());
        out[2..].copy_from_slice(&coordinator_epoch.to_be_bytes());
        out
    }
}

fn fixed<const N: usize>(b: &[u8], at: usize, field: &'static str) -> Result<[u8; N], DecodeError> {
    b.get(at..at + N)
        .and_then(|s| s.try_into().ok())
        .ok_or(DecodeError::Truncated {
            field,
            need: at + N,
            have: b.len(),
        })
}

/// A control batch with one commit or abort marker, as a transaction coordinator writes it:
/// transactional, no sequence, one record at offset delta 0 stamped `timestamp`. Base offset
/// and leader epoch are left for the broker to stamp.
pub fn end_txn_marker_batch(
    kind: ControlRecordType,
    producer_id: i64,
    producer_epoch: i16,
    coordinator_epoch: i32,
    timestamp: i64,
) -> Result<Bytes, EncodeError> {
    if !matches!(kind, ControlRecordType::Abort | ControlRecordType::Commit) {
        return Err(EncodeError::FieldNotAvailable {
            field: "ControlRecord.type",
            version: ControlRecord::CURRENT_VERSION,
        });
    }
    let mut b = RecordBatchBuilder::new()
        .producer(producer_id, producer_epoch, NO_SEQUENCE)
        .transactional(true)
        .control(true);
    b.append(
        timestamp,
        Some(&ControlRecord::key_bytes(kind)),
        Some(&EndTxnMarker::value_bytes(coordinator_epoch)),
        &[],
    )?;
    b.build()
}

/// The marker of a control batch holding one commit or abort record, with its coordinator
/// epoch; `None` for a batch that is not a control batch or holds another kind of record.
pub fn parse_end_txn_marker(
    batch: &RecordBatch,
) -> Result<Option<(ControlRecordType, EndTxnMarker)>, DecodeError> {
    if !batch.is_control() {
        return Ok(None);
    }
    // Control batches are never compressed in practice; a small bound suffices either way.
    let Some(record) = batch.records(1024)?.next().transpose()? else {
        return Ok(None);
    };
    let key = ControlRecord::parse(&record)?;
    match key.kind {
        ControlRecordType::Abort | ControlRecordType::Commit => {
            Ok(Some((key.kind, EndTxnMarker::parse(&record)?)))
        }
        ControlRecordType::Unknown(_) => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_and_abort_markers_round_trip() {
        for kind in [ControlRecordType::Commit, ControlRecordType::Abort] {
            let bytes = end_txn_marker_batch(kind, 42, 3, 17, 1_700_000_000_000).unwrap();
            let batch = RecordBatch::from_bytes(bytes).unwrap();
            batch.validate(1024).unwrap();
            assert!(batch.is_control() && batch.is_transactional());
            assert_eq!((batch.producer_id(), batch.producer_epoch()), (42, 3));
            assert_eq!(batch.base_sequence(), -1);
            assert_eq!(batch.records_count(), 1);
            let rec = batch.records(1024).unwrap().next().unwrap().unwrap();
            assert_eq!(rec.key.as_deref(), Some(&[0, 0, 0, kind.code() as u8][..]));
            assert_eq!(rec.value.as_deref(), Some(&[0, 0, 0, 0, 0, 17][..]));
            assert_eq!(
                ControlRecord::parse(&rec).unwrap(),
                ControlRecord { version: 0, kind }
            );
            let (k, marker) = parse_end_txn_marker(&batch).unwrap().unwrap();
            assert_eq!(k, kind);
            assert_eq!(
                marker,
                EndTxnMarker {
                    version: 0,
                    coordinator_epoch: 17
                }
            );
        }
        assert!(end_txn_marker_batch(ControlRecordType::Unknown(2), 1, 1, 1, 1).is_err());
        assert_eq!(
            ControlRecordType::from_code(5),
            ControlRecordType::Unknown(5)
        );
    }

    #[test]
    fn malformed_control_records() {
        let rec = |key: Option<&'static [u8]>, value: Option<&'static [u8]>| Record {
            attributes: 0,
            timestamp_delta: 0,
            offset_delta: 0,
            key: key.map(Bytes::from_static),
            value: value.map(Bytes::from_static),
            headers: Vec::new(),
        };
        assert!(ControlRecord::parse(&rec(None, None)).is_err());
        assert!(ControlRecord::parse(&rec(Some(&[0, 0, 0]), None)).is_err());
        assert!(ControlRecord::parse(&rec(Some(&[0xff, 0xff, 0, 1]), None)).is_err());
        // A newer key version with extra bytes is still read.
        let r = rec(Some(&[0, 1, 0, 1, 9, 9]), Some(&[0, 0, 0, 0, 0]));
        assert_eq!(
            ControlRecord::parse(&r).unwrap().kind,
            ControlRecordType::Commit
        );
        assert!(matches!(
            EndTxnMarker::parse(&r),
            Err(DecodeError::Truncated { .. })
        ));
        // A plain batch has no marker.
        let mut b = RecordBatchBuilder::new();
        b.append(1, None, Some(b"v"), &[]).unwrap();
        let batch = RecordBatch::from_bytes(b.build().unwrap()).unwrap();
        assert_eq!(parse_end_txn_marker(&batch).unwrap(), None);
    }
}
