//! What a Raft entry of the metadata log carries, and the snapshot's payload.
//!
//! ```text
//! entry     kind u8, then
//!           0 (records):    count u32, count x (length u32, framed metadata record)
//!           1 (cluster id): the id, UTF-8 (the first entry a new quorum commits)
//! snapshot  cluster id length u16, cluster id, last applied offset u64,
//!           count u32, count x (length u32, framed metadata record)
//! ```
//!
//! A framed record is Kafka's (`MetadataRecord::encode`: frame version, type, version, the
//! record), written at the record's highest version. Records of one entry apply together.

use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::metadata::MetadataRecord;

use crate::error::BrokerError;

const RECORDS: u8 = 0;
const CLUSTER_ID: u8 = 1;

/// One entry's payload.
#[derive(Debug, Clone, PartialEq)]
pub enum Payload {
    Records(Vec<MetadataRecord>),
    ClusterId(String),
}

fn bad(what: &str) -> BrokerError {
    BrokerError::Storage(format!("metadata log: {what}"))
}

fn put_records(out: &mut BytesMut, records: &[MetadataRecord]) -> Result<(), BrokerError> {
    let count = u32::try_from(records.len()).map_err(|_| bad("too many records in one entry"))?;
    out.put_u32(count);
    for r in records {
        let framed = r
            .encode(r.versions().max)
            .map_err(|e| bad(&format!("encoding {}: {e}", r.name())))?;
        let len = u32::try_from(framed.len()).map_err(|_| bad("a record over 4 GiB"))?;
        out.put_u32(len);
        out.put_slice(&framed);
    }
    Ok(())
}

struct Cursor<'a>(&'a Bytes, usize);

impl Cursor<'_> {
    fn take(&mut self, n: usize, what: &str) -> Result<Bytes, BrokerError> {
        let end = self
            .1
            .checked_add(n)
            .filter(|&e| e <= self.0.len())
            .ok_or_else(|| bad(&format!("truncated {what}")))?;
        let out = self.0.slice(self.1..end);
        self.1 = end;
        Ok(out)
    }

    fn u32(&mut self, what: &str) -> Result<u32, BrokerError> {
        let b = self.take(4, what)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn records(&mut self) -> Result<Vec<MetadataRecord>, BrokerError> {
        let count = self.u32("record count")? as usize;
        // Each record takes at least its 4-byte length: a count is checked against what is left
        // before it sizes anything.
        if count > (self.0.len() - self.1) / 4 {
            return Err(bad("a record count larger than the entry"));
        }
        let mut out = Vec::with_capacity(count);
        for _ in 0..count {
            let len = self.u32("record length")? as usize;
            let framed = self.take(len, "record")?;
            let (record, _) =
                MetadataRecord::decode(&framed).map_err(|e| bad(&format!("a record: {e}")))?;
            out.push(record);
        }
        Ok(out)
    }
}

impl Payload {
    pub fn encode(&self) -> Result<Vec<u8>, BrokerError> {
        let mut out = BytesMut::new();
        match self {
            Self::Records(records) => {
                out.put_u8(RECORDS);
                put_records(&mut out, records)?;
            }
            Self::ClusterId(id) => {
                out.put_u8(CLUSTER_ID);
                out.put_slice(id.as_bytes());
            }
        }
        Ok(out.to_vec())
    }

    pub fn decode(data: &Bytes) -> Result<Self, BrokerError> {
        let mut c = Cursor(data, 0);
        let kind = c.take(1, "entry kind")?[0];
        let payload = match kind {
            RECORDS => Self::Records(c.records()?),
            CLUSTER_ID => {
                let rest = c.take(data.len() - 1, "cluster id")?;
                Self::ClusterId(
                    std::str::from_utf8(&rest)
                        .map_err(|_| bad("a cluster id that is not UTF-8"))?
                        .to_owned(),
                )
            }
            k => return Err(bad(&format!("unknown entry kind {k}"))),
        };
        if c.1 != data.len() {
            return Err(bad("bytes left after an entry"));
        }
        Ok(payload)
    }
}

/// The state a snapshot holds: the cluster id, the offset it was taken at, the image as records.
#[derive(Debug, Clone, PartialEq)]
pub struct SnapshotData {
    pub cluster_id: Option<String>,
    pub offset: u64,
    pub records: Vec<MetadataRecord>,
}

impl SnapshotData {
    pub fn encode(&self) -> Result<Bytes, BrokerError> {
        let mut out = BytesMut::new();
        let id = self.cluster_id.as_deref().unwrap_or("");
        let len = u16::try_from(id.len()).map_err(|_| bad("a cluster id over 64 KiB"))?;
        out.put_u16(len);
        out.put_slice(id.as_bytes());
        out.put_u64(self.offset);
        put_records(&mut out, &self.records)?;
        Ok(out.freeze())
    }

    pub fn decode(data: &Bytes) -> Result<Self, BrokerError> {
        let mut c = Cursor(data, 0);
        let len = c.take(2, "cluster id length")?;
        let len = u16::from_be_bytes([len[0], len[1]]) as usize;
        let id = c.take(len, "cluster id")?;
        let id = std::str::from_utf8(&id).map_err(|_| bad("a cluster id that is not UTF-8"))?;
        let offset = c.take(8, "snapshot offset")?;
        let offset = u64::from_be_bytes(offset[..8].try_into().map_err(|_| bad("offset"))?);
        let records = c.records()?;
        if c.1 != data.len() {
            return Err(bad("bytes left after a snapshot"));
        }
        Ok(Self {
            cluster_id: (!id.is_empty()).then(|| id.to_owned()),
            offset,
            records,
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use kafka_protocol::metadata::{PartitionRecord, TopicRecord};

    fn records() -> Vec<MetadataRecord> {
        vec![
            MetadataRecord::Topic(TopicRecord {
                name: kafka_protocol::KStr::from("orders"),
                topic_id: kafka_protocol::Uuid([7; 16]),
                ..Default::default()
            }),
            MetadataRecord::Partition(PartitionRecord {
                partition_id: 0,
                topic_id: kafka_protocol::Uuid([7; 16]),
                replicas: vec![1, 2, 3],
                isr: vec![1, 2, 3],
                leader: 1,
                leader_epoch: 0,
                partition_epoch: 0,
                ..Default::default()
            }),
        ]
    }

    #[test]
    fn entries_and_snapshots_round_trip_and_damage_is_an_error() {
        for p in [
            Payload::Records(records()),
            Payload::Records(Vec::new()),
            Payload::ClusterId("MkU3OEVBNTcwNTJENDM2Qg".into()),
        ] {
            let bytes = Bytes::from(p.encode().unwrap());
            assert_eq!(Payload::decode(&bytes).unwrap(), p);
            for cut in 0..bytes.len() {
                if let Payload::Records(_) = p {
                    assert!(
                        Payload::decode(&bytes.slice(..cut)).is_err(),
                        "cut at {cut}"
                    );
                }
            }
        }
        let s = SnapshotData {
            cluster_id: Some("abc".into()),
            offset: 42,
            records: records(),
        };
        let bytes = s.encode().unwrap();
        assert_eq!(SnapshotData::decode(&bytes).unwrap(), s);
        for cut in 0..bytes.len() {
            assert!(
                SnapshotData::decode(&bytes.slice(..cut)).is_err(),
                "cut at {cut}"
            );
        }
        // A count far beyond the bytes is refused before anything is allocated.
        let huge = Bytes::from(vec![RECORDS, 0xff, 0xff, 0xff, 0xff]);
        assert!(Payload::decode(&huge).is_err());
        assert!(Payload::decode(&Bytes::from_static(&[9])).is_err());
    }
}
