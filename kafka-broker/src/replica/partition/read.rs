//! Reads: a fetch's whole batches within the bound its reader may see, as file slices, with
//! the aborted transactions a read_committed consumer needs, under one log lock; the offsets
//! come from what the partition published, so a read never waits for the producer-state lock.
//! Also the smaller lookups (timestamps, epochs, producers).

use bytes::Bytes;
use kafka_protocol::error_code::ErrorCode;

use super::super::producer_state::ProducerView;
use super::{Offsets, Partition};
use crate::error::BrokerError;
use crate::log::ReadInfo;

/// Which offsets a reader may see.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isolation {
    /// A follower replicating: up to the log end.
    LogEnd,
    /// A read_uncommitted consumer: up to the high watermark.
    HighWatermark,
    /// A read_committed consumer: up to the last stable offset, with the aborted
    /// transactions of what it reads.
    Committed,
}

impl Isolation {
    /// The offset a reader of this kind may not read at or past.
    pub fn bound(self, offsets: &Offsets) -> i64 {
        match self {
            Self::LogEnd => offsets.log_end,
            Self::HighWatermark => offsets.high_watermark,
            Self::Committed => offsets.last_stable,
        }
    }
}

/// What one read of a partition found.
#[derive(Debug, Clone)]
pub struct ReadRange {
    /// The partition's offsets at the read.
    pub offsets: Offsets,
    /// The batches read (none when the offset is at the bound, or `max_bytes` was 0 and
    /// something was read before); `next_offset` says where the next read starts.
    pub info: Option<ReadInfo>,
    /// For [`Isolation::Committed`]: the aborted transactions (producer id, first offset)
    /// overlapping the batches read.
    pub aborted: Option<Vec<(i64, i64)>>,
}

/// A read that failed, with the offsets the answer still carries.
#[derive(Debug)]
pub struct ReadFailed {
    pub error: BrokerError,
    pub offsets: Offsets,
}

impl Partition {
    /// Reads whole batches from `offset`, up to `max_bytes` (at least one batch when
    /// `max_bytes` is 0 and `first` is set: KIP-74's first partition with data), not past
    /// what `isolation` allows. An offset outside the log (below its start or past its end)
    /// is OFFSET_OUT_OF_RANGE. File contents are not read here: the answer holds file slices.
    pub fn read_range(
        &self,
        offset: i64,
        max_bytes: usize,
        first: bool,
        isolation: Isolation,
    ) -> Result<ReadRange, ReadFailed> {
        let offsets = self.offsets();
        if offset < offsets.log_start || offset > offsets.log_end {
            return Err(ReadFailed {
                error: BrokerError::kafka(
                    ErrorCode::OFFSET_OUT_OF_RANGE,
                    format!(
                        "offset {offset} is outside {}..={} of {}-{}",
                        offsets.log_start, offsets.log_end, self.topic, self.index
                    ),
                ),
                offsets,
            });
        }
        let upper = isolation.bound(&offsets);
        if offset >= upper || (max_bytes == 0 && !first) {
            return Ok(ReadRange {
                offsets,
                info: None,
                aborted: (isolation == Isolation::Committed).then(Vec::new),
            });
        }
        let log = self.log();
        let info = log
            .read(offset, max_bytes.max(1), upper)
            .map_err(|e| ReadFailed {
                error: e.into(),
                offsets,
            })?;
        let aborted = (isolation == Isolation::Committed).then(|| {
            if info.next_offset > offset {
                log.aborted_txns(offset, info.next_offset)
                    .into_iter()
                    .map(|a| (a.producer_id, a.first_offset))
                    .collect()
            } else {
                Vec::new()
            }
        });
        drop(log);
        Ok(ReadRange {
            offsets,
            info: Some(info),
            aborted,
        })
    }

    /// Reads whole batches from `offset` into memory, up to `max_bytes` (at least one
    /// batch), not past `upper` (the coordinators' loads and tests).
    pub fn read(&self, offset: i64, max_bytes: usize, upper: i64) -> Result<Bytes, BrokerError> {
        let info = self.log().read(offset, max_bytes, upper)?;
        Ok(info.read_bytes()?)
    }

    /// The aborted transactions overlapping `[from, upper)` (producer id, first offset).
    pub fn aborted_transactions(&self, from: i64, upper: i64) -> Vec<(i64, i64)> {
        self.log()
            .aborted_txns(from, upper)
            .into_iter()
            .map(|a| (a.producer_id, a.first_offset))
            .collect()
    }

    /// Bytes of the partition's segment files (DescribeLogDirs).
    pub fn size_in_bytes(&self) -> u64 {
        self.log().size_in_bytes()
    }

    /// The producers of the partition (DescribeProducers), expired ones left out.
    pub fn producer_views(&self) -> Vec<ProducerView> {
        self.producers().views()
    }

    /// The first offset whose timestamp is at or after `ts`, with that timestamp.
    pub fn offset_for_timestamp(&self, ts: i64) -> Result<Option<(i64, i64)>, BrokerError> {
        Ok(self.log().offset_for_timestamp(ts)?)
    }

    /// The offset and timestamp of the record with the largest timestamp.
    pub fn max_timestamp(&self) -> Result<Option<(i64, i64)>, BrokerError> {
        Ok(self.log().max_timestamp_offset()?)
    }

    /// The latest leader epoch in the log's epoch cache (-1 for none): what a follower asks
    /// its leader about before it fetches (OffsetForLeaderEpoch).
    pub fn latest_log_epoch(&self) -> i32 {
        self.log().latest_epoch().unwrap_or(-1)
    }

    /// The largest epoch <= `epoch` and the end offset of that epoch.
    pub fn end_offset_for_epoch(&self, epoch: i32) -> (i32, i64) {
        self.log().end_offset_for_epoch(epoch)
    }
}
